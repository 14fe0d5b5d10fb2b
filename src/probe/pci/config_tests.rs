//! Tests of `gpu::config` (PCI configuration space parsing), kept beside it.

use super::build::config;
use super::*;

const GEN5_X16: Link = Link { speed: 5, width: 16 };
const GEN4_X8: Link = Link { speed: 4, width: 8 };
const ACS_ALL: u16 = 0x5f;

#[test]
fn downstream_port_with_acs_redirect() {
    let bytes =
        config(0x1000, 0xc030, 0x060400, true, 0x6, GEN5_X16, GEN5_X16, Some((ACS_ALL, acs_bits::SV | acs_bits::RR | acs_bits::CR | acs_bits::UF)));
    let space = parse(&bytes).unwrap();
    assert_eq!(space.vendor, 0x1000);
    assert_eq!(space.class, 0x060400);
    assert_eq!(space.header_type, 1);
    let pcie = space.pcie.unwrap();
    assert_eq!(pcie.offset, 0x60);
    assert_eq!(pcie.port_type, PortType::SwitchDownstream);
    assert_eq!(pcie.link_cap, Some(GEN5_X16));
    assert_eq!(pcie.link_status.unwrap().gts(), Some(32.0));
    let acs = space.acs.unwrap();
    assert_eq!(acs.offset, 0x148);
    assert_eq!(acs.redirecting(), acs_bits::RR | acs_bits::CR);
    assert_eq!(acs.describe_control(), "SV RR CR UF");
    assert!(space.extended_read && space.capabilities_read && space.defects.is_empty());
}

#[test]
fn gpu_endpoint_without_acs() {
    let bytes = config(0x10de, 0x2330, 0x030200, false, 0x0, GEN5_X16, GEN4_X8, None);
    let space = parse(&bytes).unwrap();
    assert_eq!(space.pcie.unwrap().port_type, PortType::Endpoint);
    assert_eq!(space.pcie.unwrap().link_status, Some(GEN4_X8));
    assert_eq!(space.acs, None);
    assert!(space.extended_read);
}

#[test]
fn acs_disabled_is_not_redirecting() {
    let bytes = config(0x1000, 0xc030, 0x060400, true, 0x6, GEN5_X16, GEN5_X16, Some((ACS_ALL, 0)));
    let acs = parse(&bytes).unwrap().acs.unwrap();
    assert_eq!(acs.redirecting(), 0);
    assert_eq!(acs.describe_control(), "none");
    let egress = config(0x1000, 0xc030, 0x060400, true, 0x6, GEN5_X16, GEN5_X16, Some((ACS_ALL, acs_bits::EC)));
    assert_eq!(parse(&egress).unwrap().acs.unwrap().redirecting(), acs_bits::EC);
}

#[test]
fn unprivileged_64_bytes_is_known_to_be_partial() {
    let bytes = config(0x10de, 0x2330, 0x030200, false, 0x0, GEN5_X16, GEN5_X16, None);
    let space = parse(&bytes[..HEADER_LEN]).unwrap();
    assert_eq!(space.vendor, 0x10de);
    assert_eq!(space.pcie, None);
    assert!(!space.capabilities_read && !space.extended_read);
    assert!(space.defects.is_empty(), "a short read by a non-root user is not a defect");
}

/// Device Control's MPS field (bits 7:5 at +8 of the PCIe capability) as bytes; reserved
/// codes and a capability out of reach are unknown, not 128.
#[test]
fn max_payload_from_device_control() {
    let gen5 = Link { speed: 5, width: 16 };
    let mut bytes = build::config(0x15b3, 0x1021, 0x020700, false, 0x0, gen5, gen5, None);
    assert_eq!(max_payload(&bytes), Some(128), "code 0");
    for (code, want) in [(1u16, Some(256)), (2, Some(512)), (5, Some(4096)), (6, None), (7, None)] {
        bytes[0x60 + 8..0x60 + 10].copy_from_slice(&(code << 5).to_le_bytes());
        assert_eq!(max_payload(&bytes), want, "code {code}");
    }
    assert_eq!(max_payload(&bytes[..HEADER_LEN]), None, "the capability is past an unprivileged read");
}

#[test]
fn legacy_256_bytes_has_pcie_but_no_acs_verdict() {
    let bytes = config(0x1000, 0xc030, 0x060400, true, 0x6, GEN5_X16, GEN5_X16, Some((ACS_ALL, acs_bits::RR)));
    let space = parse(&bytes[..LEGACY_LEN]).unwrap();
    assert!(space.pcie.is_some());
    assert!(!space.extended_read);
    assert_eq!(space.acs, None);
}

#[test]
fn conventional_pci_function_has_no_extended_space() {
    let mut bytes = config(0x8086, 0x244e, 0x060401, true, 0x0, GEN5_X16, GEN5_X16, None);
    bytes[0x41] = 0x00; // PM only: no PCIe capability
    let space = parse(&bytes).unwrap();
    assert_eq!(space.pcie, None);
    assert!(space.extended_read && space.acs.is_none() && space.defects.is_empty());
    let status_without_list = {
        let mut b = bytes.clone();
        b[6] = 0;
        parse(&b).unwrap()
    };
    assert!(status_without_list.extended_read && status_without_list.pcie.is_none());
}

#[test]
fn truncated_header_and_all_ones_fail() {
    assert_eq!(parse(&[0u8; 10]), Err(Defect::Truncated { len: 10 }));
    assert_eq!(parse(&[]), Err(Defect::Truncated { len: 0 }));
    assert_eq!(parse(&[0xffu8; 4096]), Err(Defect::AllOnes));
}

#[test]
fn looping_capability_list_is_named() {
    let mut bytes = config(0x10de, 0x2330, 0x030200, false, 0x0, GEN5_X16, GEN5_X16, None);
    bytes[0x61] = 0x40; // PCIe -> PM -> PCIe ...
    let space = parse(&bytes).unwrap();
    assert_eq!(space.defects, vec![Defect::Loop { at: 0x40 }]);
    assert!(space.pcie.is_some(), "what was read before the loop is kept");
    let mut self_loop = bytes.clone();
    self_loop[0x41] = 0x40;
    assert_eq!(parse(&self_loop).unwrap().defects, vec![Defect::Loop { at: 0x40 }]);
}

#[test]
fn pointer_into_the_header_or_past_the_end_is_named() {
    let mut bytes = config(0x10de, 0x2330, 0x030200, false, 0x0, GEN5_X16, GEN5_X16, None);
    bytes[0x34] = 0x10;
    assert_eq!(parse(&bytes).unwrap().defects, vec![Defect::PointerOutOfRange { at: 0x34, pointer: 0x10 }]);
    let mut past = config(0x10de, 0x2330, 0x030200, false, 0x0, GEN5_X16, GEN5_X16, None);
    past[0x41] = 0xff; // 0xfc: an entry needs 2 bytes, fits; then its next pointer is 0 -> fine
    past[0xfc] = 0x05;
    past[0xfd] = 0x00;
    assert!(parse(&past).unwrap().defects.is_empty());
}

#[test]
fn looping_or_wild_extended_list_is_named() {
    let mut bytes = config(0x1000, 0xc030, 0x060400, true, 0x6, GEN5_X16, GEN5_X16, Some((ACS_ALL, 0)));
    // ACS at 0x148 -> back to 0x100.
    bytes[0x148..0x14c].copy_from_slice(&(0x000du32 | (1 << 16) | (0x100 << 20)).to_le_bytes());
    let space = parse(&bytes).unwrap();
    assert_eq!(space.defects, vec![Defect::Loop { at: 0x100 }]);
    assert!(space.acs.is_some());
    // AER pointing below 0x100.
    let mut wild = config(0x1000, 0xc030, 0x060400, true, 0x6, GEN5_X16, GEN5_X16, None);
    wild[0x100..0x104].copy_from_slice(&(0x0001u32 | (2 << 16) | (0x0c0 << 20)).to_le_bytes());
    assert_eq!(parse(&wild).unwrap().defects, vec![Defect::PointerOutOfRange { at: 0x100, pointer: 0xc0 }]);
}

#[test]
fn acs_cut_at_the_end_of_a_capture() {
    let mut bytes = config(0x1000, 0xc030, 0x060400, true, 0x6, GEN5_X16, GEN5_X16, None);
    bytes[0x100..0x104].copy_from_slice(&(0x0001u32 | (2 << 16) | (0xffc << 20)).to_le_bytes());
    bytes[0xffc..0x1000].copy_from_slice(&(0x000du32 | (1 << 16)).to_le_bytes());
    assert_eq!(parse(&bytes).unwrap().defects, vec![Defect::CapabilityCut { id: 0x000d, offset: 0xffc }]);
}

#[test]
fn port_types_and_speeds() {
    assert_eq!(PortType::from_raw(4), PortType::RootPort);
    assert_eq!(PortType::from_raw(5).name(), "Upstream Port");
    assert_eq!(PortType::from_raw(0xc), PortType::Other(0xc));
    assert_eq!(speed_gts(4), Some(16.0));
    assert_eq!(speed_gts(0), None);
}

#[test]
fn arbitrary_bytes_never_panic() {
    // A cheap deterministic fuzz: every byte pattern of a xorshift stream, truncated anywhere.
    let mut x: u32 = 0x1234_5678;
    for round in 0..400 {
        let len = [0, 63, 64, 100, 256, 300, 4096][round % 7];
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let _ = parse(&bytes);
    }
}
