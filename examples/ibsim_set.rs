//! Test helper for the ibsim tier: breaks a table the SM set up, with one directed-route Set
//! SMP (no diagnostic tool sets forwarding tables). fabcheck itself never sends a Set.
//!
//! - `ibsim_set lft NODE LID PORT`: the switch described NODE forwards LID out of PORT
//!   (255: no route);
//! - `ibsim_set pkey NODE PORT INDEX VALUE`: entry INDEX (block 0) of the P_KeyTable of NODE's
//!   port PORT (a switch port, or the CA port discovery reached) becomes VALUE (hex or decimal).
//!
//! - `ibsim_set mft NODE MLID PORTS`: the switch's MFT entry for MLID lists PORTS (comma
//!   separated, ports 0..15; `-` for none);
//! - `ibsim_set vlarb NODE PORT VL WEIGHT`: every entry for VL in the low-priority
//!   VLArbitrationTable (block 1) of NODE's port PORT (0 on a CA) gets WEIGHT.
//!
//! Prints `NODE LID N: port OLD -> NEW` / `NODE port P pkey[I]: OLD -> NEW` as the node
//! answered. Run under `LD_PRELOAD=libumad2sim.so` with the simulator's `IBSIM_SOCKNAME`;
//! `tests/ibsim/route.rs` builds it (`cargo build --example ibsim_set`).

use fabcheck_verbs::mad::{self, DiscoverConfig, DrPath, MadPort, QosTable, SmpTable};
use std::process::ExitCode;

fn number(text: &str) -> Result<u32, String> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("'{text}' is not a number"))
}

fn run(args: &[String]) -> Result<String, String> {
    let local = mad::find_local_port(None, None).map_err(|e| e.to_string())?;
    let nodes = mad::discover(&local, DiscoverConfig { timeout_ms: 500, retries: 2, max_smps: 2, mellanox_ext_port_info: false })
        .map_err(|e| e.to_string())?;
    let find = |name: &str| nodes.iter().find(|n| n.description == name).ok_or_else(|| format!("no node described '{name}'"));
    let port = MadPort::open(&local, 500, 2).map_err(|e| e.to_string())?;
    match args {
        [kind, name, lid, out] if kind == "lft" => {
            let node = find(name)?;
            let (lid, out) = (number(lid)?, u8::try_from(number(out)?).map_err(|_| "PORT is 0..255")?);
            let path = DrPath::new(&node.dr_path).ok_or("the route to it is too long")?;
            let table = SmpTable::LinearForwarding { block: u16::try_from(lid / 64).map_err(|_| "LID out of range")? };
            let mut block = port.table_block(&path, table).map_err(|e| e.to_string())?;
            let old = block[(lid % 64) as usize];
            block[(lid % 64) as usize] = out;
            let answer = port.set_table_block(&path, table, &block).map_err(|e| e.to_string())?;
            Ok(format!("{name} LID {lid}: port {old} -> {}", answer[(lid % 64) as usize]))
        }
        [kind, name, at, index, value] if kind == "pkey" => {
            let node = find(name)?;
            let at = u8::try_from(number(at)?).map_err(|_| "PORT is 0..255")?;
            let index = usize::try_from(number(index)?).ok().filter(|&i| i < 32).ok_or("INDEX is 0..31 (block 0)")?;
            let value = u16::try_from(number(value)?).map_err(|_| "VALUE is 16 bits")?;
            let table_port = if node.switch_info.is_some() { at } else { 0 };
            let path = DrPath::new(&node.dr_path).ok_or("the route to it is too long")?;
            let table = SmpTable::PKey { port: table_port, block: 0 };
            let mut block = port.table_block(&path, table).map_err(|e| e.to_string())?;
            let old = u16::from_be_bytes([block[2 * index], block[2 * index + 1]]);
            block[2 * index..2 * index + 2].copy_from_slice(&value.to_be_bytes());
            let answer = port.set_table_block(&path, table, &block).map_err(|e| e.to_string())?;
            Ok(format!("{name} port {at} pkey[{index}]: {old:#06x} -> {:#06x}", u16::from_be_bytes([answer[2 * index], answer[2 * index + 1]])))
        }
        [kind, name, mlid, ports] if kind == "mft" => {
            let node = find(name)?;
            let mlid = number(mlid)?.checked_sub(0xc000).filter(|m| *m < 0x4000).ok_or("MLID is 0xc000..0xffff")?;
            let mut mask = 0u16;
            for p in ports.split(',').filter(|p| *p != "-") {
                mask |= 1 << number(p)?.min(15);
            }
            let path = DrPath::new(&node.dr_path).ok_or("the route to it is too long")?;
            let table = QosTable::MulticastForwarding { block: (mlid / 32) as u16, position: 0 };
            let mut block = port.qos_block(&path, table).map_err(|e| e.to_string())?;
            let at = 2 * (mlid % 32) as usize;
            let old = u16::from_be_bytes([block[at], block[at + 1]]);
            block[at..at + 2].copy_from_slice(&mask.to_be_bytes());
            let answer = port.set_qos_block(&path, table, &block).map_err(|e| e.to_string())?;
            Ok(format!("{name} MLID {:#06x}: mask {old:#06x} -> {:#06x}", mlid + 0xc000, u16::from_be_bytes([answer[at], answer[at + 1]])))
        }
        [kind, name, at, vl, weight] if kind == "vlarb" => {
            let node = find(name)?;
            let at = u8::try_from(number(at)?).map_err(|_| "PORT is 0..255")?;
            let (vl, weight) = (number(vl)? as u8 & 0xf, u8::try_from(number(weight)?).map_err(|_| "WEIGHT is 0..255")?);
            let path = DrPath::new(&node.dr_path).ok_or("the route to it is too long")?;
            let table = QosTable::VlArbitration { block: 1, port: if node.switch_info.is_some() { at } else { 0 } };
            let mut block = port.qos_block(&path, table).map_err(|e| e.to_string())?;
            let mut changed = 0;
            for entry in block.chunks_exact_mut(2).filter(|e| e[0] & 0xf == vl) {
                entry[1] = weight;
                changed += 1;
            }
            let answer = port.set_qos_block(&path, table, &block).map_err(|e| e.to_string())?;
            let now: Vec<u8> = answer.chunks_exact(2).filter(|e| e[0] & 0xf == vl).map(|e| e[1]).collect();
            Ok(format!("{name} port {at} VL {vl}: {changed} low-priority entries, weights now {now:?}"))
        }
        _ => Err("usage: ibsim_set lft NODE LID PORT | pkey NODE PORT INDEX VALUE | mft NODE MLID PORTS | vlarb NODE PORT VL WEIGHT".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ibsim_set: {e}");
            ExitCode::from(2)
        }
    }
}
