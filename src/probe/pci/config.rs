//! PCI configuration space, parsed from the bytes of a sysfs `config` file. Pure: no I/O.
//!
//! Only what GPUDirect RDMA's preconditions need: the PCI Express capability (which kind of
//! port a bridge is, what its link can do and what it trained at) and the ACS extended
//! capability (whether a port redirects peer-to-peer requests up to the root complex).
//! Offsets and bit positions are those of the PCI Express Base Specification (7.5.3 PCI
//! Express Capability Structure, 7.7.8 ACS Extended Capability), as `lspci -vv` decodes them.
//!
//! A config file is untrusted input: a capture may be truncated, a pointer may lead outside the
//! bytes read or back onto itself. Every such defect becomes a [`Defect`] naming the offset,
//! never a panic and never a capability invented from garbage.

use serde::Serialize;

/// Size of the type 0/1 header; what an unprivileged reader of `config` gets.
pub const HEADER_LEN: usize = 64;
/// Size of the conventional (PCI-compatible) configuration space.
pub const LEGACY_LEN: usize = 256;
/// Size of the PCI Express extended configuration space.
pub const EXTENDED_LEN: usize = 4096;

/// Capability ID of the PCI Express capability.
pub const CAP_ID_PCIE: u8 = 0x10;
/// Extended capability ID of Access Control Services.
pub const EXT_CAP_ID_ACS: u16 = 0x000D;

/// ACS capability/control bits (the same positions in both registers).
pub mod acs_bits {
    /// Source Validation.
    pub const SV: u16 = 1 << 0;
    /// Translation Blocking.
    pub const TB: u16 = 1 << 1;
    /// P2P Request Redirect.
    pub const RR: u16 = 1 << 2;
    /// P2P Completion Redirect.
    pub const CR: u16 = 1 << 3;
    /// Upstream Forwarding.
    pub const UF: u16 = 1 << 4;
    /// P2P Egress Control.
    pub const EC: u16 = 1 << 5;
    /// Direct Translated P2P.
    pub const DT: u16 = 1 << 6;
    /// The controls that send peer-to-peer traffic up to the root complex (or drop it).
    pub const REDIRECTING: u16 = RR | CR | EC;
}

/// Device/Port Type of the PCI Express Capabilities register (bits 7:4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PortType {
    Endpoint,
    LegacyEndpoint,
    RootPort,
    SwitchUpstream,
    SwitchDownstream,
    PcieToPciBridge,
    PciToPcieBridge,
    RcIntegratedEndpoint,
    RcEventCollector,
    Other(u8),
}

impl PortType {
    pub fn from_raw(raw: u8) -> Self {
        match raw {
            0x0 => PortType::Endpoint,
            0x1 => PortType::LegacyEndpoint,
            0x4 => PortType::RootPort,
            0x5 => PortType::SwitchUpstream,
            0x6 => PortType::SwitchDownstream,
            0x7 => PortType::PcieToPciBridge,
            0x8 => PortType::PciToPcieBridge,
            0x9 => PortType::RcIntegratedEndpoint,
            0xa => PortType::RcEventCollector,
            other => PortType::Other(other),
        }
    }

    /// The words `lspci -vv` uses.
    pub fn name(self) -> &'static str {
        match self {
            PortType::Endpoint => "Endpoint",
            PortType::LegacyEndpoint => "Legacy Endpoint",
            PortType::RootPort => "Root Port",
            PortType::SwitchUpstream => "Upstream Port",
            PortType::SwitchDownstream => "Downstream Port",
            PortType::PcieToPciBridge => "PCI-Express to PCI/PCI-X Bridge",
            PortType::PciToPcieBridge => "PCI/PCI-X to PCI-Express Bridge",
            PortType::RcIntegratedEndpoint => "Root Complex Integrated Endpoint",
            PortType::RcEventCollector => "Root Complex Event Collector",
            PortType::Other(_) => "unknown port type",
        }
    }
}

/// A link's speed and width, as encoded in Link Capabilities / Link Status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Link {
    /// Speed code: 1 = 2.5 GT/s ... 6 = 64 GT/s.
    pub speed: u8,
    pub width: u8,
}

impl Link {
    /// GT/s of a speed code, `None` for reserved codes.
    pub fn gts(self) -> Option<f64> {
        speed_gts(self.speed)
    }
}

/// GT/s of a Link Speed code (PCIe Base Spec, Supported Link Speeds Vector positions).
pub fn speed_gts(code: u8) -> Option<f64> {
    match code {
        1 => Some(2.5),
        2 => Some(5.0),
        3 => Some(8.0),
        4 => Some(16.0),
        5 => Some(32.0),
        6 => Some(64.0),
        _ => None,
    }
}

/// The PCI Express capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PcieCap {
    pub offset: u8,
    pub port_type: PortType,
    /// Link Capabilities: what the port supports. `None` when the bytes are not there.
    pub link_cap: Option<Link>,
    /// Link Status: what the link trained at.
    pub link_status: Option<Link>,
    /// Device Control's Max_Payload_Size, bytes (128 ..= 4096): the largest TLP payload the
    /// function sends, which sets how much of the link is payload. `None` when not read or
    /// reserved.
    pub max_payload: Option<u16>,
    /// Link Control 2's Target Link Speed (capability + 0x30, bits 3:0; PCIe Base spec 7.5.3.19):
    /// on a downstream port, the fastest speed the link may train to, which firmware lowers
    /// to cap a slot on purpose. `None` when the bytes are not there or the field is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_speed: Option<u8>,
}

/// The ACS extended capability: what the port can do and what is enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Acs {
    pub offset: u16,
    pub capability: u16,
    pub control: u16,
}

impl Acs {
    /// Enabled controls that redirect or block peer-to-peer traffic (RR, CR, EC).
    pub fn redirecting(&self) -> u16 {
        self.control & acs_bits::REDIRECTING
    }

    /// `lspci`-style listing of enabled controls: "SrcValid+ ReqRedir+ CmpltRedir+".
    pub fn describe_control(&self) -> String {
        describe(self.control)
    }
}

/// Names of the set bits: "SV RR CR UF".
pub fn describe(bits: u16) -> String {
    let names = [
        (acs_bits::SV, "SV"),
        (acs_bits::TB, "TB"),
        (acs_bits::RR, "RR"),
        (acs_bits::CR, "CR"),
        (acs_bits::UF, "UF"),
        (acs_bits::EC, "EC"),
        (acs_bits::DT, "DT"),
    ];
    let set: Vec<&str> = names.iter().filter(|(b, _)| bits & b != 0).map(|(_, n)| *n).collect();
    if set.is_empty() {
        "none".into()
    } else {
        set.join(" ")
    }
}

/// Something wrong with the bytes, named so a person can find it with `xxd`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Defect {
    /// Fewer bytes than the 64-byte header.
    Truncated { len: usize },
    /// Vendor ID 0xffff: the read returned all ones (device gone, or a failed read captured).
    AllOnes,
    /// A capability pointer outside the bytes available or below the header.
    PointerOutOfRange { at: usize, pointer: usize },
    /// The capability list visits an offset twice.
    Loop { at: usize },
    /// A capability structure that extends past the bytes read.
    CapabilityCut { id: u16, offset: usize },
}

impl std::fmt::Display for Defect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Defect::Truncated { len } => write!(f, "only {len} bytes, shorter than the {HEADER_LEN}-byte header"),
            Defect::AllOnes => write!(f, "vendor ID reads 0xffff (all ones): the device did not answer"),
            Defect::PointerOutOfRange { at, pointer } => {
                write!(f, "capability pointer at {at:#x} points to {pointer:#x}, outside the bytes available")
            }
            Defect::Loop { at } => write!(f, "capability list loops back to {at:#x}"),
            Defect::CapabilityCut { id, offset } => write!(f, "capability {id:#06x} at {offset:#x} is cut short"),
        }
    }
}

/// What a config file says, as far as its bytes go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigSpace {
    /// Bytes available (64 unprivileged, 256 or 4096 as root).
    pub len: usize,
    pub vendor: u16,
    pub device: u16,
    /// Class code (base, sub, prog-if) as `class` in sysfs: 0x030200.
    pub class: u32,
    /// Header type without the multi-function bit: 0 endpoint, 1 bridge.
    pub header_type: u8,
    pub pcie: Option<PcieCap>,
    pub acs: Option<Acs>,
    /// Whether the extended capability list was in the bytes, or the function has none (a
    /// conventional PCI function); ACS can only be judged then.
    pub extended_read: bool,
    /// Whether the standard capability list was entirely within the bytes read.
    pub capabilities_read: bool,
    pub defects: Vec<Defect>,
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([*bytes.get(at)?, *bytes.get(at + 1)?, *bytes.get(at + 2)?, *bytes.get(at + 3)?]))
}

/// Parses config-space bytes. Fails only when not even the header is there or it reads all
/// ones; later defects are recorded in `defects` and what came before them is kept.
pub fn parse(bytes: &[u8]) -> Result<ConfigSpace, Defect> {
    if bytes.len() < HEADER_LEN {
        return Err(Defect::Truncated { len: bytes.len() });
    }
    let bytes = &bytes[..bytes.len().min(EXTENDED_LEN)];
    let vendor = u16_at(bytes, 0x00).unwrap_or(0xffff);
    if vendor == 0xffff {
        return Err(Defect::AllOnes);
    }
    let mut space = ConfigSpace {
        len: bytes.len(),
        vendor,
        device: u16_at(bytes, 0x02).unwrap_or(0),
        class: u32_at(bytes, 0x08).unwrap_or(0) >> 8,
        header_type: bytes[0x0e] & 0x7f,
        pcie: None,
        acs: None,
        extended_read: false,
        capabilities_read: true,
        defects: Vec::new(),
    };
    let status = u16_at(bytes, 0x06).unwrap_or(0);
    if status & 0x10 != 0 {
        walk_capabilities(bytes, &mut space);
    }
    if space.pcie.is_some() {
        if bytes.len() >= LEGACY_LEN + 4 {
            space.extended_read = true;
            walk_extended(bytes, &mut space);
        }
    } else if space.capabilities_read && space.defects.is_empty() {
        // A conventional PCI function has no extended space, hence no ACS: nothing is unknown.
        space.extended_read = true;
    }
    Ok(space)
}

/// The standard list: pointer at 0x34, entries of (ID, next) in the first 256 bytes.
fn walk_capabilities(bytes: &[u8], space: &mut ConfigSpace) {
    let limit = bytes.len().min(LEGACY_LEN);
    let mut seen = [false; LEGACY_LEN];
    let mut at = 0x34usize;
    let mut pointer = usize::from(bytes[0x34] & 0xfc);
    while pointer != 0 {
        if pointer < HEADER_LEN || pointer + 2 > LEGACY_LEN {
            space.defects.push(Defect::PointerOutOfRange { at, pointer });
            return;
        }
        if pointer + 2 > limit {
            // Legitimately past the bytes an unprivileged read returns: not a defect, just unknown.
            space.capabilities_read = false;
            return;
        }
        if seen[pointer] {
            space.defects.push(Defect::Loop { at: pointer });
            return;
        }
        seen[pointer] = true;
        let id = bytes[pointer];
        if id == CAP_ID_PCIE && space.pcie.is_none() {
            space.pcie = Some(parse_pcie(bytes, pointer, space));
        }
        at = pointer + 1;
        pointer = usize::from(bytes[pointer + 1] & 0xfc);
    }
}

fn parse_pcie(bytes: &[u8], offset: usize, space: &mut ConfigSpace) -> PcieCap {
    let caps = u16_at(bytes, offset + 2);
    let link_cap = u32_at(bytes, offset + 0x0c).map(|v| Link { speed: (v & 0xf) as u8, width: ((v >> 4) & 0x3f) as u8 });
    let link_status = u16_at(bytes, offset + 0x12).map(|v| Link { speed: (v & 0xf) as u8, width: ((v >> 4) & 0x3f) as u8 });
    if link_status.is_none() {
        if bytes.len() >= LEGACY_LEN {
            space.defects.push(Defect::CapabilityCut { id: u16::from(CAP_ID_PCIE), offset });
        } else {
            space.capabilities_read = false;
        }
    }
    PcieCap {
        offset: offset as u8,
        port_type: caps.map_or(PortType::Other(0xff), |c| PortType::from_raw(((c >> 4) & 0xf) as u8)),
        link_cap,
        link_status,
        max_payload: u16_at(bytes, offset + 0x08).and_then(|control| max_payload_bytes((control >> 5) & 0x7)),
        target_speed: u16_at(bytes, offset + 0x30).map(|v| (v & 0xf) as u8).filter(|s| *s > 0),
    }
}

/// Bytes of a Max_Payload_Size code (Device Control bits 7:5, Device Capabilities bits 2:0):
/// 128 << code; 6 and 7 are reserved.
fn max_payload_bytes(code: u16) -> Option<u16> {
    (code <= 5).then(|| 128 << code)
}

/// The Max_Payload_Size a function's config bytes set, when its PCI Express capability is in
/// them (an unprivileged read of `config` stops at 64 bytes, before it).
pub fn max_payload(bytes: &[u8]) -> Option<u16> {
    parse(bytes).ok()?.pcie?.max_payload
}

/// The Link Control 2 Target Link Speed (GT/s) a port's config bytes hold, when its PCI
/// Express capability is in them (an unprivileged read stops at 64 bytes; a bundle keeps 256).
pub fn target_speed(bytes: &[u8]) -> Option<f64> {
    speed_gts(parse(bytes).ok()?.pcie?.target_speed?)
}

/// The extended list: 32-bit headers (ID 15:0, version 19:16, next 31:20) from 0x100.
fn walk_extended(bytes: &[u8], space: &mut ConfigSpace) {
    let limit = bytes.len();
    let mut seen = vec![false; EXTENDED_LEN / 4];
    let mut at = 0usize;
    let mut offset = LEGACY_LEN;
    loop {
        if offset < LEGACY_LEN || offset + 4 > EXTENDED_LEN {
            space.defects.push(Defect::PointerOutOfRange { at, pointer: offset });
            return;
        }
        if offset + 4 > limit {
            // A capture shorter than 4 KiB that stops before the list ends: unknown, not wrong.
            space.extended_read = false;
            return;
        }
        if seen[offset / 4] {
            space.defects.push(Defect::Loop { at: offset });
            return;
        }
        seen[offset / 4] = true;
        let Some(header) = u32_at(bytes, offset) else { return };
        // 0 at 0x100 means "no extended capabilities"; all ones means the read failed.
        if header == 0 || header == 0xffff_ffff {
            return;
        }
        let id = (header & 0xffff) as u16;
        if id == EXT_CAP_ID_ACS && space.acs.is_none() {
            match (u16_at(bytes, offset + 4), u16_at(bytes, offset + 6)) {
                (Some(capability), Some(control)) => space.acs = Some(Acs { offset: offset as u16, capability, control }),
                _ => space.defects.push(Defect::CapabilityCut { id, offset }),
            }
        }
        let next = ((header >> 20) & 0xffc) as usize;
        if next == 0 {
            return;
        }
        at = offset;
        offset = next;
    }
}

/// Builders of config-space bytes, for tests here and in `probe::pci` / `gpu::topology`.
#[cfg(test)]
pub(crate) mod build {
    use super::*;

    /// A 4 KiB config space: vendor/device/class, header type, a PCIe capability at 0x40 of
    /// `port_type` (raw) with the given link capability and status, and ACS at 0x148 when
    /// `acs` is `Some((capability, control))`.
    #[allow(clippy::too_many_arguments)]
    pub fn config(vendor: u16, device: u16, class: u32, bridge: bool, port_type: u8, cap: Link, sta: Link, acs: Option<(u16, u16)>) -> Vec<u8> {
        let mut b = vec![0u8; EXTENDED_LEN];
        b[0..2].copy_from_slice(&vendor.to_le_bytes());
        b[2..4].copy_from_slice(&device.to_le_bytes());
        b[6..8].copy_from_slice(&0x0010u16.to_le_bytes());
        b[8..12].copy_from_slice(&(class << 8).to_le_bytes());
        b[0x0e] = u8::from(bridge);
        b[0x34] = 0x40;
        // Power management at 0x40 -> PCIe at 0x60.
        b[0x40] = 0x01;
        b[0x41] = 0x60;
        b[0x60] = CAP_ID_PCIE;
        b[0x61] = 0x00;
        b[0x62..0x64].copy_from_slice(&((u16::from(port_type) << 4) | 0x2).to_le_bytes());
        let lnkcap = u32::from(cap.speed) | (u32::from(cap.width) << 4);
        b[0x6c..0x70].copy_from_slice(&lnkcap.to_le_bytes());
        let lnksta = u16::from(sta.speed) | (u16::from(sta.width) << 4);
        b[0x72..0x74].copy_from_slice(&lnksta.to_le_bytes());
        // AER at 0x100 -> ACS at 0x148 (or end).
        let next: u32 = if acs.is_some() { 0x148 } else { 0 };
        b[0x100..0x104].copy_from_slice(&(0x0001 | (2 << 16) | (next << 20)).to_le_bytes());
        if let Some((capability, control)) = acs {
            b[0x148..0x14c].copy_from_slice(&(0x000du32 | (1 << 16)).to_le_bytes());
            b[0x14c..0x14e].copy_from_slice(&capability.to_le_bytes());
            b[0x14e..0x150].copy_from_slice(&control.to_le_bytes());
        }
        b
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
