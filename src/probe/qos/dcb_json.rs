//! iproute2's `dcb -j` answers (dcb/dcb_pfc.c, dcb_ets.c, dcb_apptrust.c, dcb_app.c,
//! dcb_buffer.c; one plain JSON object per `show`, `new_json_obj_plain`), as a bundle's
//! `dcb/IF.json` holds them: one object with the `pfc`, `ets`, `apptrust`, `app` and `buffer`
//! answers as members, each `null` or absent where the command failed.
//!
//! * `pfc`: `{"pfc_cap":8,"macsec_bypass":false,"delay":7,"prio_pfc":[false,...]}` (booleans
//!   since dcb's first release, 5.11: `print_on_off` is a JSON boolean; `"on"`/`"off"` and 0/1
//!   read too).
//! * `ets`: `tc_bw`, `tc_tsa` (`"strict"`, `"cbs"`, `"ets"`, `"vendor"`, `"???"`), `prio_tc`.
//! * `apptrust` (iproute2 6.2 and later, and only where the driver implements it; mlx5 does
//!   not): `{"order":["dscp","pcp"]}`, most trusted first.
//! * `app`: `dscp_prio` as `[[DSCP,PRIO],...]`; iproute2 6.5 and later print a third element,
//!   `" "` (`dcb_app_print_filtered` prints the plain-text separator with `PRINT_ANY`), so
//!   entries are `[26,3," "]`; `default_prio` as `[P]`. mlx5 keeps all 64 DSCP entries while it
//!   trusts DSCP and none while it trusts PCP (`mlx5e_dcbnl_dscp_app`), which is how
//!   `mlnx_qos` itself tells the trust state when the driver has no `qos/trust` file.
//! * `buffer`: `prio_buffer`, `buffer_size` (bytes: `print_size` prints a number in JSON),
//!   `total_size`.

use super::{Dscp, PortQos, Priority, TcSched, Trust, Tsa};
use serde_json::Value;

/// The answers a bundle's `dcb/IF.json` (or the live commands) gave; `None` when the text is
/// not a JSON object.
pub fn parse_bundle(text: &str) -> Option<PortQos> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    let object = value.as_object()?;
    let member = |name: &str| object.get(name).filter(|v| v.is_object());
    Some(from_answers(member("pfc"), member("ets"), member("apptrust"), member("app"), member("buffer")))
}

/// One `dcb -j OBJECT show dev IF` answer's text, as an object (`None`: empty, not JSON).
pub fn answer(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text.trim()).ok().filter(Value::is_object)
}

/// The set-up from each answer that was given.
pub fn from_answers(pfc: Option<&Value>, ets: Option<&Value>, apptrust: Option<&Value>, app: Option<&Value>, buffer: Option<&Value>) -> PortQos {
    let mut q = PortQos::default();
    if let Some(pfc) = pfc {
        q.pfc = array8(&pfc["prio_pfc"], on_off);
    }
    if let Some(ets) = ets {
        q.prio2tc = array8(&ets["prio_tc"], |v| small(v, 8));
        let bw = array8(&ets["tc_bw"], |v| small(v, 101));
        let tsa = array8(&ets["tc_tsa"], |v| Some(v.as_str().and_then(Tsa::parse)));
        if let Some(tsa) = tsa {
            let mut tcs = [None; 8];
            for (tc, slot) in tcs.iter_mut().enumerate() {
                *slot = tsa[tc].map(|tsa| TcSched { tsa, bw: bw.map(|b| b[tc]) });
            }
            q.tcs = Some(tcs);
        }
    }
    let mut dscp_entries = 0;
    if let Some(app) = app {
        let mut table: Vec<Option<Priority>> = vec![None; 64];
        for entry in app["dscp_prio"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let numbers: Vec<u8> = entry.as_array().map(Vec::as_slice).unwrap_or(&[]).iter().filter_map(|v| v.as_u64()?.try_into().ok()).collect();
            if let [d, p, ..] = numbers[..] {
                if let (Some(d), Some(p)) = (Dscp::new(d), Priority::new(p)) {
                    table[d.index()] = Some(p);
                    dscp_entries += 1;
                }
            }
        }
        if dscp_entries > 0 {
            q.dscp2prio = Some(table);
        }
        q.default_prio = app["default_prio"].as_array().and_then(|a| a.first()).and_then(|v| small(v, 8)).and_then(Priority::new);
        q.roce_app = roce_entry(&app["dgram_port_prio"], ROCE_V2_UDP_PORT).or_else(|| roce_entry(&app["ethtype_prio"], ROCE_V1_ETHERTYPE));
    }
    q.trust = match apptrust.map(|t| &t["order"]) {
        // The first of the two selectors in the order is the one trusted first.
        Some(Value::Array(order)) => order.iter().filter_map(Value::as_str).find_map(|s| match s {
            "dscp" => Some(Trust::Dscp),
            "pcp" => Some(Trust::Pcp),
            _ => None,
        }),
        // No apptrust (older iproute2, or a driver without it): mlx5's rule, which mlnx_qos
        // applies too: DSCP entries in the APP table mean the port trusts DSCP.
        _ => app.map(|_| if dscp_entries > 0 { Trust::Dscp } else { Trust::Pcp }),
    };
    if let Some(buffer) = buffer {
        q.prio2buffer = array8(&buffer["prio_buffer"], |v| small(v, 8));
        q.buffer_size = array8(&buffer["buffer_size"], |v| v.as_u64().and_then(|n| u32::try_from(n).ok()));
    }
    q
}

/// RoCE v2's UDP destination port (IANA; the kernel's `ROCE_V2_UDP_DPORT`).
const ROCE_V2_UDP_PORT: u64 = 4791;
/// RoCE v1's ethertype (`ETH_P_IBOE`).
const ROCE_V1_ETHERTYPE: u64 = 0x8915;

/// The priority of `protocol`'s entry in one of the APP table's lists (`[[PID,PRIO],...]`; dcb
/// prints a port in decimal, an ethertype as a `0x` string or a number, and from 6.5 a third
/// `" "` element).
fn roce_entry(list: &Value, protocol: u64) -> Option<Priority> {
    list.as_array()?.iter().find_map(|entry| {
        let entry = entry.as_array()?;
        let pid = match entry.first()? {
            Value::String(s) => u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()?,
            other => other.as_u64()?,
        };
        (pid == protocol).then(|| small(entry.get(1)?, 8).and_then(Priority::new)).flatten()
    })
}

/// Eight values, each read by `item`; `None` unless there are eight and each reads.
fn array8<T: Copy + Default>(value: &Value, item: impl Fn(&Value) -> Option<T>) -> Option<[T; 8]> {
    let values = value.as_array()?;
    if values.len() != 8 {
        return None;
    }
    let mut out = [T::default(); 8];
    for (slot, v) in out.iter_mut().zip(values) {
        *slot = item(v)?;
    }
    Some(out)
}

fn small(v: &Value, below: u64) -> Option<u8> {
    v.as_u64().filter(|&n| n < below).and_then(|n| u8::try_from(n).ok())
}

fn on_off(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s == "on" => Some(true),
        Value::String(s) if s == "off" => Some(false),
        Value::Number(n) => n.as_u64().filter(|&n| n <= 1).map(|n| n == 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dscp_table(entry: impl Fn(u8, u8) -> String) -> String {
        (0..64u8).map(|d| entry(d, d >> 3)).collect::<Vec<_>>().join(",")
    }

    /// iproute2 5.15 on a 5.15 kernel: no apptrust member, two-element APP entries.
    #[test]
    fn iproute2_5_on_kernel_5() {
        let text = format!(
            "{{\"pfc\":{{\"pfc_cap\":8,\"macsec_bypass\":false,\"delay\":7,\"prio_pfc\":[false,false,false,true,false,false,false,false]}},\
             \"ets\":{{\"willing\":false,\"ets_cap\":8,\"cbs\":false,\"tc_bw\":[100,100,100,100,100,100,100,100],\"pg_bw\":[0,0,0,0,0,0,0,0],\
             \"tc_tsa\":[\"vendor\",\"vendor\",\"vendor\",\"vendor\",\"vendor\",\"vendor\",\"vendor\",\"vendor\"],\"prio_tc\":[1,0,2,3,4,5,6,7],\
             \"reco_tc_bw\":[0,0,0,0,0,0,0,0],\"reco_tc_tsa\":[\"strict\",\"strict\",\"strict\",\"strict\",\"strict\",\"strict\",\"strict\",\"strict\"],\"reco_prio_tc\":[0,0,0,0,0,0,0,0]}},\
             \"app\":{{\"dscp_prio\":[{}]}},\
             \"buffer\":{{\"prio_buffer\":[0,0,0,1,0,0,0,0],\"buffer_size\":[130944,130944,0,0,0,0,0,0],\"total_size\":1048448}}}}",
            dscp_table(|d, p| format!("[{d},{p}]"))
        );
        let q = parse_bundle(&text).unwrap();
        assert_eq!(q.trust, Some(Trust::Dscp), "64 DSCP entries on mlx5: trust dscp");
        assert_eq!(q.dscp_priority(Dscp::new(26).unwrap()), Priority::new(3));
        assert_eq!(q.pfc_priorities(), Some(vec![Priority::new(3).unwrap()]));
        assert_eq!(q.prio2tc, Some([1, 0, 2, 3, 4, 5, 6, 7]));
        assert_eq!(q.class_of(Priority::new(3).unwrap()).and_then(|c| c.1), Some(TcSched { tsa: Tsa::Vendor, bw: Some(100) }));
        assert_eq!(q.buffer_lossless(Priority::new(3).unwrap()), Some(true));
    }

    /// iproute2 6.5+ on a 6.x kernel: APP entries carry a third `" "` element; an apptrust
    /// answer, where the driver has one, decides the trust state.
    #[test]
    fn iproute2_6_5_entries_and_apptrust() {
        let text = format!(
            "{{\"pfc\":{{\"pfc_cap\":8,\"macsec_bypass\":false,\"delay\":0,\"prio_pfc\":[false,false,false,false,true,false,false,false]}},\
             \"apptrust\":{{\"order\":[\"pcp\",\"dscp\"]}},\"app\":{{\"default_prio\":[0],\"dscp_prio\":[{}]}},\"ets\":null,\"buffer\":null}}",
            dscp_table(|d, p| format!("[{d},{p},\" \"]"))
        );
        let q = parse_bundle(&text).unwrap();
        assert_eq!(q.dscp_priority(Dscp::new(46).unwrap()), Priority::new(5));
        assert_eq!(q.trust, Some(Trust::Pcp), "apptrust's order, not the table's presence");
        assert_eq!(q.default_prio, Priority::new(0));
        assert_eq!((q.prio2tc, q.tcs, q.prio2buffer), (None, None, None), "null answers stay unknown");
    }

    /// Broadcom's bnxt_setupcc.sh (its default, dcb): PFC on the RoCE priority, RoCE v2's UDP
    /// port on it in the APP table, and its DSCP and the CNPs' (`dscp-prio 26:3 48:7`). RoCE v1's
    /// ethertype reads too, as a `0x` string or a number.
    #[test]
    fn roce_app_entries_by_udp_port_and_ethertype() {
        let text = "{\"pfc\":{\"prio_pfc\":[false,false,false,true,false,false,false,false]},\"apptrust\":null,\"ets\":null,\"buffer\":null,\
                    \"app\":{\"dgram_port_prio\":[[4791,3]],\"dscp_prio\":[[26,3],[48,7]]}}";
        let q = parse_bundle(text).unwrap();
        assert_eq!(q.roce_app, Priority::new(3));
        assert_eq!(q.trust, Some(Trust::Dscp), "DSCP entries: mlx5's rule for the trust state");
        for v1 in ["\"0x8915\"", "35093"] {
            let text = format!("{{\"app\":{{\"ethtype_prio\":[[{v1},5]],\"dgram_port_prio\":[[4792,2]]}}}}");
            assert_eq!(parse_bundle(&text).unwrap().roce_app, Priority::new(5), "{v1}");
        }
        assert_eq!(parse_bundle("{\"app\":{\"dgram_port_prio\":[[4792,2]]}}").unwrap().roce_app, None, "another port");
    }

    #[test]
    fn a_pcp_port_has_no_dscp_entries_and_on_off_words_read() {
        let q = parse_bundle("{\"pfc\":{\"prio_pfc\":[\"off\",\"off\",\"off\",\"on\",\"off\",\"off\",\"off\",\"off\"]},\"app\":{}}").unwrap();
        assert_eq!(q.trust, Some(Trust::Pcp));
        assert_eq!(q.dscp2prio, None);
        assert_eq!(q.pfc_priorities(), Some(vec![Priority::new(3).unwrap()]));
        let no_app = parse_bundle("{\"pfc\":{\"prio_pfc\":[0,0,0,1,0,0,0,0]}}").unwrap();
        assert_eq!(no_app.trust, None, "without the APP answer the trust state is unknown");
        assert_eq!(no_app.pfc_priorities(), Some(vec![Priority::new(3).unwrap()]));
    }

    #[test]
    fn hostile_shapes_read_as_unknown() {
        assert_eq!(parse_bundle(""), None);
        assert_eq!(parse_bundle("[1,2]"), None);
        assert_eq!(parse_bundle("\n"), None, "what `dcb -j` prints when the device has no DCB");
        let q = parse_bundle("{\"pfc\":{\"prio_pfc\":[true,true]},\"ets\":{\"prio_tc\":[9,9,9,9,9,9,9,9],\"tc_tsa\":\"ets\"},\"app\":{\"dscp_prio\":[[99,3],[26,12],\"x\",[26]]},\"buffer\":{\"prio_buffer\":[0,0,0,0,0,0,0,0],\"buffer_size\":[-1,0,0,0,0,0,0,0]}}").unwrap();
        assert_eq!((q.pfc, q.prio2tc, q.tcs, q.dscp2prio, q.buffer_size), (None, None, None, None, None));
        assert_eq!(q.prio2buffer, Some([0; 8]));
        assert_eq!(answer("{\"order\":[]}").map(|v| v["order"].is_array()), Some(true));
        assert_eq!(answer("Object \"apptrust\" is unknown"), None);
    }
}
