//! `ethtool -m` as the ethtool versions of Debian 11 (5.9), Debian 12 (6.1), RHEL 8 (5.13) and
//! RHEL 9 (6.2) print it, and the same modules' bytes.

use super::*;
use crate::probe::phy::module_hex::{decode, merge, parse_hex_dump};

const SFF8636_ETHTOOL_5: &str = include_str!("../../../../tests/fixtures/roce-cx6dx-fec-lane/ethtool/ens2np0.module.txt");
const SFF8636_HEX: &str = include_str!("../../../../tests/fixtures/roce-cx6dx-fec-lane/ethtool/ens2np0.module.hex.txt");
const CMIS_DARK_LANE: &str = include_str!("../../../../tests/fixtures/roce-cx7-dark-lane/ethtool/ens2np0.module.txt");
const CMIS_DARK_LANE_HEX: &str = include_str!("../../../../tests/fixtures/roce-cx7-dark-lane/ethtool/ens2np0.module.hex.txt");
const DAC_ETHTOOL_6: &str = include_str!("../../../../tests/fixtures/roce-cx6dx-dac/ethtool/ens2np0.module.txt");
const DAC_HEX: &str = include_str!("../../../../tests/fixtures/roce-cx6dx-dac/ethtool/ens2np0.module.hex.txt");

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 0.02)
}

#[test]
fn sff8636_text_of_ethtool_5_without_a_space_before_channel() {
    let m = parse_module_text(SFF8636_ETHTOOL_5).unwrap();
    assert_eq!((m.kind.as_deref(), m.vendor.as_deref(), m.part.as_deref()), (Some("QSFP28"), Some("Mellanox"), Some("MMA1B00-C100D")));
    assert_eq!(m.serial.as_deref(), Some("MT2114FT01234"));
    assert_eq!(m.media, Some(Media::Optical));
    assert_eq!(m.temperature_c, Some(38.5));
    let rx = m.rx_power_dbm.clone().unwrap();
    assert_eq!(rx.len(), 4, "`Rcvr signal avg optical power(Channel N)` read: {rx:?}");
    assert!(close(rx[1], -2.84), "{rx:?}");
    assert_eq!(m.tx_power_dbm.as_ref().map(Vec::len), Some(4));
    assert!(close(m.tx_bias_ma.as_ref().unwrap()[0], 7.1));
    assert!(m.flags.is_empty(), "every flag is Off and thresholds are not flags: {:?}", m.flags);
}

#[test]
fn the_newer_spelling_and_the_older_read_alike() {
    // ethtool 6: `Rx power (Channel 1)`; 5.x: `Rcvr signal avg optical power(Channel 1)`;
    // OMA modules: `Receiver signal OMA(Channel 1)`.
    let old = parse_module_text(SFF8636_ETHTOOL_5).unwrap();
    for spelling in ["Rx power (Channel", "Receiver signal OMA(Channel", "Rcvr signal avg optical power (Channel"] {
        let text = SFF8636_ETHTOOL_5.replace("Rcvr signal avg optical power(Channel", spelling);
        assert_eq!(parse_module_text(&text).unwrap().rx_power_dbm, old.rx_power_dbm, "{spelling}");
    }
}

#[test]
fn sff8636_bytes_give_what_the_text_gives() {
    let pages = parse_hex_dump(SFF8636_HEX);
    let bytes = decode(&pages).unwrap();
    let text = parse_module_text(SFF8636_ETHTOOL_5).unwrap();
    assert_eq!(
        (bytes.kind.clone(), bytes.vendor.clone(), bytes.part.clone(), bytes.serial.clone()),
        (text.kind.clone(), text.vendor.clone(), text.part.clone(), text.serial.clone())
    );
    assert_eq!(bytes.media, Some(Media::Optical));
    assert_eq!(bytes.temperature_c, Some(38.5));
    for (b, t) in bytes.rx_power_dbm.unwrap().iter().zip(text.rx_power_dbm.unwrap()) {
        assert!(close(*b, t.unwrap()), "{b:?} vs {t:?}");
    }
    assert!(bytes.flags.is_empty());
}

#[test]
fn cmis_dark_lane_with_its_alarm_in_text_and_bytes() {
    let text = parse_module_text(CMIS_DARK_LANE).unwrap();
    assert_eq!(text.kind.as_deref(), Some("OSFP"));
    let rx = text.rx_power_dbm.clone().unwrap();
    assert_eq!(rx.len(), 8);
    assert_eq!(rx[2], Some(DARK_DBM), "0 mW / -inf dBm is no light");
    assert!(
        text.flags.contains(&ModuleFlag { figure: Figure::RxPower, level: FlagLevel::Alarm, direction: Some(Direction::Low), lane: Some(3) }),
        "{:?}",
        text.flags
    );
    let bytes = decode(&parse_hex_dump(CMIS_DARK_LANE_HEX)).unwrap();
    assert_eq!((bytes.vendor.as_deref(), bytes.part.as_deref()), (Some("NVIDIA"), Some("MMA4Z00-NS400")));
    assert_eq!(bytes.temperature_c, Some(44.0));
    assert_eq!(bytes.rx_power_dbm.as_ref().unwrap()[2], Some(DARK_DBM));
    assert!(close(bytes.rx_power_dbm.as_ref().unwrap()[0], -0.86));
    let lane3: Vec<Figure> = bytes.flags.iter().filter(|f| f.lane == Some(3)).map(|f| f.figure).collect();
    assert_eq!(lane3, vec![Figure::RxPower, Figure::RxLos], "{:?}", bytes.flags);
    // Merged, the bytes win and the text fills nothing they lack.
    let merged = merge(Some(bytes.clone()), Some(text)).unwrap();
    assert_eq!(merged.rx_power_dbm, bytes.rx_power_dbm);
}

#[test]
fn a_copper_dac_has_no_optics_and_no_temperature() {
    let text = parse_module_text(DAC_ETHTOOL_6).unwrap();
    assert_eq!(text.media, Some(Media::Copper));
    assert_eq!((text.temperature_c, text.rx_power_dbm.clone(), text.tx_power_dbm.clone()), (None, None, None));
    let bytes = decode(&parse_hex_dump(DAC_HEX)).unwrap();
    assert_eq!(bytes.media, Some(Media::Copper));
    assert_eq!((bytes.temperature_c, bytes.rx_power_dbm), (None, None), "zero monitors are not readings");
    assert_eq!(bytes.part.as_deref(), Some("MCP1600-C002E30N"));
}

#[test]
fn fields_in_another_order_or_missing_are_not_readable_not_alarms() {
    let shuffled: String = SFF8636_ETHTOOL_5.lines().rev().map(|l| format!("{l}\n")).collect();
    assert_eq!(parse_module_text(&shuffled).unwrap().rx_power_dbm, parse_module_text(SFF8636_ETHTOOL_5).unwrap().rx_power_dbm);
    let partial = "\tIdentifier : 0x11 (QSFP28)\n\tRx power (Channel 2) : N/A\n\tLaser rx power low alarm   (Chan 2) : Off\n";
    let m = parse_module_text(partial).unwrap();
    assert_eq!((m.rx_power_dbm, m.flags.len(), m.vendor), (None, 0, None));
    assert_eq!(parse_module_text("Cannot get module EEPROM information: Operation not supported\n"), None);
    assert_eq!(decode(&parse_hex_dump("garbage\n0xzz: 11 22\n")), None);
}

#[test]
fn temperature_flags_on_a_module_level() {
    let text = SFF8636_ETHTOOL_5.replace("Module temperature high warning           : Off", "Module temperature high warning           : On");
    let m = parse_module_text(&text).unwrap();
    assert_eq!(m.flags, vec![ModuleFlag { figure: Figure::Temperature, level: FlagLevel::Warning, direction: Some(Direction::High), lane: None }]);
}

#[test]
fn a_per_lane_loss_of_signal_list_names_its_lanes() {
    // ethtool 6.4+ prints the LOS state as a per-lane list, lane 1 first, or `None`.
    let text = format!(
        "{SFF8636_ETHTOOL_5}\tRx loss of signal                         : [ No, No, Yes, No ]\n\tTx loss of signal                         : None\n"
    );
    let m = parse_module_text(&text).unwrap();
    assert_eq!(m.flags, vec![ModuleFlag { figure: Figure::RxLos, level: FlagLevel::Alarm, direction: None, lane: Some(3) }]);
    let quiet = format!("{SFF8636_ETHTOOL_5}\tRx loss of signal                         : None\n");
    assert!(parse_module_text(&quiet).unwrap().flags.is_empty());
    let lock = format!("{SFF8636_ETHTOOL_5}\tRx loss of lock                           : [ Yes, No, No, No ]\n");
    assert!(parse_module_text(&lock).unwrap().flags.is_empty(), "loss of lock is not loss of signal");
    let junk = format!("{SFF8636_ETHTOOL_5}\tRx loss of signal : [ Yes\n");
    assert!(parse_module_text(&junk).unwrap().flags.is_empty(), "an unclosed list is not readable");
}

/// SFF-8472 (an SFP on a 10/25G port) prints one channel's monitors with no `(Channel N)`
/// (`ethtool -m` of an SFP+ 10G-SR, tests/fixtures/wild/ethtool-m-sfp-10g-sr.txt): lane 1.
#[test]
fn sff8472_monitors_without_a_channel_are_lane_1() {
    let text = "\tIdentifier                                : 0x03 (SFP)\n\tVendor name                               : BOYANG\n\tLaser bias current                        : 6.986 mA\n\tLaser output power                        : 0.4678 mW / -3.30 dBm\n\tReceiver signal average optical power     : 0.0440 mW / -13.57 dBm\n\tModule temperature                        : 42.59 degrees C / 108.65 degrees F\n\tLaser bias current high alarm             : Off\n\tLaser bias current high alarm threshold   : 17.000 mA\n\tLaser rx power low warning threshold      : 0.0398 mW / -14.00 dBm\n";
    let m = parse_module_text(text).unwrap();
    assert_eq!(m.kind.as_deref(), Some("SFP"));
    assert!(close(m.tx_bias_ma.as_ref().unwrap()[0], 6.986), "{:?}", m.tx_bias_ma);
    assert!(close(m.tx_power_dbm.as_ref().unwrap()[0], -3.30), "{:?}", m.tx_power_dbm);
    assert!(close(m.rx_power_dbm.as_ref().unwrap()[0], -13.57), "{:?}", m.rx_power_dbm);
    assert_eq!(m.rx_power_dbm.as_ref().map(Vec::len), Some(1), "thresholds are not readings");
    assert!(m.flags.is_empty());
    let qsfp = text.replace("0x03 (SFP)", "0x11 (QSFP28)");
    assert_eq!(parse_module_text(&qsfp).unwrap().rx_power_dbm, None, "a multi-lane module's lane-less line names no lane");
}
