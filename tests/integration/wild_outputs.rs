//! Outputs captured on real nodes (public sources, `tests/fixtures/wild/SOURCES.md`) read by the
//! library's parsers in-process, with the values a careful reader takes from each output.

use fabcheck::port::{Speed, Width};
use fabcheck::probe::pci::health::aer::{self, AerSeverity};
use fabcheck::probe::pci::health::devlink;
use fabcheck::probe::phy::ethtool_stats::parse_ethtool_stats;
use fabcheck::probe::phy::fec::{parse_show_fec, FecMode, FecReport};
use fabcheck::probe::phy::module::{parse_module_text, Direction, Figure, FlagLevel, Media, ModuleFlag, DARK_DBM};
use fabcheck::probe::phy::partner::{ethernet_partner, parse_ethtool_modes, LinkPartner, PartnerUnknown};
use fabcheck::probe::phy::peer_portinfo::parse_smpquery_portinfo;
use fabcheck::probe::qos::{counters, mlnx_qos, Dscp, Priority, TcSched, Trust, Tsa};
use fabcheck::probe::stack::ofed::{parse_modinfo, ModuleOrigin};
use fabcheck::probe::{firmware, kernel_log};
use std::path::PathBuf;

fn wild(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wild").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 0.02)
}

/// Every file of a folder of real samples (`tests/fixtures/wild*`) has its row in the folder's
/// SOURCES.md (`| `file` | source | what it is |`).
pub(crate) fn assert_every_sample_has_its_source(folder: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(folder);
    let sources = std::fs::read_to_string(dir.join("SOURCES.md")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "SOURCES.md" {
            assert!(sources.contains(&format!("| `{name}` |")), "{folder}/{name} has no line in SOURCES.md");
        }
    }
}

#[test]
fn every_sample_has_its_source() {
    assert_every_sample_has_its_source("wild");
}

#[test]
fn mlnx_qos_ofed_4_2_trust_dscp_pfc_on_3() {
    let q = mlnx_qos::parse(&wild("mlnx_qos-ofed42-eth4.txt")).expect("a report");
    assert_eq!(q.trust, Some(Trust::Dscp));
    assert_eq!(q.pfc_priorities(), Some(vec![Priority::new(3).unwrap()]));
    assert_eq!(q.dscp_priority(Dscp::new(26).unwrap()), Priority::new(3));
    assert_eq!(q.dscp_priority(Dscp::new(0).unwrap()), Priority::new(0));
    assert_eq!(q.dscp_priority(Dscp::new(63).unwrap()), Priority::new(7));
    assert_eq!(q.prio2tc, Some([1, 0, 2, 3, 4, 5, 6, 7]));
    assert_eq!(q.class_of(Priority::new(3).unwrap()), Some((3, Some(TcSched { tsa: Tsa::Vendor, bw: None }))));
    assert_eq!((q.buffer_size, q.prio2buffer), (None, None), "this version prints no buffer rows");
}

#[test]
fn ethtool_connectx4_at_100g_on_a_dac() {
    let m = parse_ethtool_modes(&wild("ethtool-cx4-100g-dac.txt"));
    assert_eq!(m.supported.len(), 16);
    assert_eq!(m.advertised, m.supported);
    assert_eq!(m.supported.iter().max(), Some(&100_000));
    assert!(m.supported.contains(&56_000) && m.supported.contains(&25_000));
    assert_eq!(m.autoneg, Some(true));
    assert_eq!(m.lanes, Some(4), "100000baseKR4/SR4/CR4/LR4_ER4: four lanes");
    assert_eq!(m.partner, None);
    assert_eq!(ethernet_partner(&m), LinkPartner::Unknown { why: PartnerUnknown::NoLine });
}

#[test]
fn ethtool_a_1g_link_partner_list() {
    let m = parse_ethtool_modes(&wild("ethtool-tg3-1g-partner.txt"));
    assert_eq!(m.supported, vec![10, 10, 100, 100, 1000, 1000]);
    assert_eq!(m.partner, Some(vec![1000]));
    assert_eq!(m.lanes, Some(1));
    assert_eq!(ethernet_partner(&m), LinkPartner::Common { gbps: 1.0 });
}

#[test]
fn ethtool_spectrum_port_with_autoneg_off() {
    let m = parse_ethtool_modes(&wild("ethtool-spectrum-swp1-autoneg-off.txt"));
    assert_eq!(m.supported, vec![1000, 10_000]);
    assert_eq!(m.advertised, vec![1000]);
    assert_eq!(m.autoneg, Some(false));
    assert_eq!(m.lanes, Some(1), "10000baseT: one lane");
    assert_eq!(ethernet_partner(&m), LinkPartner::Unknown { why: PartnerUnknown::AutonegOff });
}

#[test]
fn ethtool_s_of_a_spectrum_port_has_no_mlx5_counters() {
    let text = wild("ethtool-S-spectrum-swp1.txt");
    assert!(parse_ethtool_stats(&text).is_empty(), "no physical-layer counter is printed: unknown, not zero");
    let c = counters::parse(&text);
    assert!(c.as_ref().is_none_or(|c| !c.has_bytes() && c.rx_discards_phy.is_none() && c.rx_global_pause.is_none()), "{c:?}");
}

#[test]
fn ethtool_m_sfp_1000base_sx_on_a_spectrum_switch() {
    let m = parse_module_text(&wild("ethtool-m-sfp-1000sx-spectrum.txt")).expect("a module");
    assert_eq!(m.kind.as_deref(), Some("SFP"));
    assert_eq!((m.vendor.as_deref(), m.part.as_deref()), (Some("JDSU"), Some("PLRXPL-VI-S24-22")));
    assert_eq!(m.temperature_c, Some(41.70));
    assert!(close(m.tx_bias_ma.as_ref().and_then(|v| v[0]), 21.348), "{:?}", m.tx_bias_ma);
    assert!(close(m.tx_power_dbm.as_ref().and_then(|v| v[0]), -4.97), "{:?}", m.tx_power_dbm);
    assert!(close(m.rx_power_dbm.as_ref().and_then(|v| v[0]), -4.96), "{:?}", m.rx_power_dbm);
    assert_eq!(m.rx_power_dbm.as_ref().map(Vec::len), Some(1), "one channel");
    assert!(m.flags.is_empty(), "every flag is Off: {:?}", m.flags);
}

#[test]
fn ethtool_m_sfp_plus_10g_sr() {
    let m = parse_module_text(&wild("ethtool-m-sfp-10g-sr.txt")).expect("a module");
    assert_eq!(m.kind.as_deref(), Some("SFP"));
    assert_eq!((m.vendor.as_deref(), m.part.as_deref(), m.serial.as_deref()), (Some("BOYANG"), Some("SFP-10G-SR"), Some("H31908070001")));
    assert_eq!(m.media, None, "SFF-8472 prints no transmitter technology");
    assert_eq!(m.temperature_c, Some(42.59));
    assert!(close(m.tx_bias_ma.as_ref().and_then(|v| v[0]), 6.986), "{:?}", m.tx_bias_ma);
    assert!(close(m.tx_power_dbm.as_ref().and_then(|v| v[0]), -3.30), "{:?}", m.tx_power_dbm);
    assert!(close(m.rx_power_dbm.as_ref().and_then(|v| v[0]), -13.57), "{:?}", m.rx_power_dbm);
    assert!(m.flags.is_empty(), "{:?}", m.flags);
    assert_ne!(m.media, Some(Media::Copper));
}

#[test]
fn aer_files_of_a_4_19_kernel() {
    let cor = wild("aer-4.19-dev-correctable.txt");
    assert_eq!(aer::fault(AerSeverity::Correctable, &cor), None, "the kernel's own file");
    let f = aer::parse(&cor);
    assert_eq!(f.total, Some(2));
    assert_eq!(f.row("Receiver Error"), Some(2));
    assert_eq!(f.row("RELAY_NUM Rollover"), Some(0));
    assert_eq!(f.rows.len(), 8);
    assert_eq!(f.nonzero(), vec![("Receiver Error", 2)]);
    assert!(f.malformed.is_empty());
    for (severity, name) in [(AerSeverity::Fatal, "aer-4.19-dev-fatal.txt"), (AerSeverity::NonFatal, "aer-4.19-dev-nonfatal.txt")] {
        let text = wild(name);
        assert_eq!(aer::fault(severity, &text), None, "{name}");
        let f = aer::parse(&text);
        assert_eq!((f.total, f.rows.len(), f.count()), (Some(0), 17, 0), "{name}");
        assert_eq!(f.row("TLP Prefix Blocked Error"), Some(0), "{name}");
    }
}

#[test]
fn modinfo_of_an_inbox_driver() {
    let m = parse_modinfo(&wild("modinfo-ice-ubuntu-5.15.txt")).expect("modinfo");
    assert_eq!(m.filename.as_deref(), Some("/lib/modules/5.15.0-102-generic/kernel/drivers/net/ethernet/intel/ice/ice.ko"));
    assert_eq!(m.origin(), ModuleOrigin::Inbox);
    assert_eq!(m.tree_release(), Some("5.15.0-102-generic"));
    assert_eq!(m.built_for.as_deref(), Some("5.15.0-102-generic"));
    assert_eq!(m.srcversion.as_deref(), Some("E7701886AAC16AD41A71F0E"));
    assert_eq!(m.version, None, "an inbox module without a version line");
}

#[test]
fn show_fec_with_totals_and_no_lanes() {
    let r = parse_show_fec(&wild("fec-fbnic-rs-stats.txt"));
    assert_eq!(r.active, Some(FecMode::Rs));
    assert_eq!((r.corrected_blocks, r.uncorrectable_blocks), (Some(0), Some(0)));
    assert!(r.lane_corrected.is_empty(), "{r:?}");
}

#[test]
fn show_fec_with_the_6_18_histogram() {
    let r = parse_show_fec(&wild("fec-eni8np1-histogram.txt"));
    assert_eq!(r.active, Some(FecMode::Off), "Active FEC encoding: None");
    assert_eq!((r.corrected_blocks, r.uncorrectable_blocks), (Some(123), Some(4)));
    assert!(r.lane_corrected.is_empty(), "the per-lane figures are the histogram's, not corrected blocks': {r:?}");
    assert_eq!(parse_show_fec(&wild("fec-eni8np1-histogram.json")), FecReport::default(), "JSON is not read as text");
}

#[test]
fn devlink_health_text_is_not_the_json_the_bundle_keeps() {
    assert!(devlink::parse_health(&wild("devlink-health-pds_core-fw.txt")).is_err());
}

#[test]
fn journalctl_default_stamps_carry_no_year() {
    let log = kernel_log::parse(&wild("journalctl-cubecos-mlx5-link-up.txt"));
    assert!(log.events.is_empty(), "{:?}", log.events);
    assert_eq!((log.untimed, log.last), (7, None), "every line counted as untimed, none placed");
}

#[test]
fn portinfo_of_a_disabled_qdr_switch_port() {
    let p = parse_smpquery_portinfo(&wild("ibportstate-exadata-qdr-switch-port.txt"));
    assert_eq!(p, LinkPartner::Enabled { width: Width::X4, speed: Speed::Qdr });
}

#[test]
fn mlxconfig_query_with_next_boot_only() {
    let q = firmware::parse_query(&wild("mlxconfig-q-cx7-next-boot-only.txt")).expect("a table");
    assert_eq!(q.len(), 17);
    let p = &q["MEMIC_ATOMIC"];
    assert_eq!((p.default.as_ref(), p.current.as_ref()), (None, None));
    assert_eq!(p.next_boot.as_ref().map(|v| v.label()), Some("MEMIC_ATOMIC_ENABLE"));
    assert_eq!(q["ROCE_NEXT_PROTOCOL"].next_boot.as_ref().map(|v| v.label()), Some("254"));
    assert_eq!(q["MODULE_SPLIT_M0"].next_boot.as_ref().map(|v| v.label()), Some("Array[0..15]"));
    assert!(q.values().all(|p| !p.pending()), "no Current column: nothing is known to wait");
}

#[test]
fn mlxconfig_set_confirmation_is_not_a_query() {
    assert_eq!(firmware::parse_query(&wild("mlxconfig-set-cx6-next-boot-new.txt")), None);
}

fn dbm(values: &Option<Vec<Option<f64>>>) -> Vec<f64> {
    values.as_ref().expect("a per-lane list").iter().map(|v| v.expect("a reading on every lane")).collect()
}

fn all_close(got: &[f64], want: &[f64]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g - w).abs() < 0.02)
}

#[test]
fn cmis_qsfp_dd_400g_xdr4_reads_four_lit_lanes_four_dark_and_its_temperature_warning() {
    let m = parse_module_text(&wild("ethtool-m-qsfp-dd-400g-xdr4-cmis4.txt")).expect("a module");
    assert_eq!(m.kind.as_deref(), Some("QSFP-DD"));
    assert_eq!((m.vendor.as_deref(), m.part.as_deref(), m.serial.as_deref()), (Some("Arista Networks"), Some("QDD-400G-XDR4"), Some("XKT242211481")));
    assert_eq!(m.media, Some(Media::Optical), "1310 nm EML");
    assert_eq!(m.temperature_c, Some(70.49));
    assert!(all_close(&dbm(&m.tx_bias_ma), &[83.806, 81.878, 72.9, 110.1, 0.0, 0.0, 0.0, 0.0]), "{:?}", m.tx_bias_ma);
    let dark = DARK_DBM;
    assert!(all_close(&dbm(&m.tx_power_dbm), &[2.03, 2.17, 2.13, 1.58, dark, dark, dark, dark]), "{:?}", m.tx_power_dbm);
    assert!(all_close(&dbm(&m.rx_power_dbm), &[3.52, 2.70, 2.65, 2.60, dark, dark, dark, dark]), "{:?}", m.rx_power_dbm);
    // The one flag that is On; the thresholds (`... high warning threshold : 70.00 degrees C`)
    // and the `None` loss-of-signal lines are not flags.
    assert_eq!(m.flags, vec![ModuleFlag { figure: Figure::Temperature, level: FlagLevel::Warning, direction: Some(Direction::High), lane: None }]);
}

#[test]
fn cmis_module_reporting_two_banks_keeps_the_eight_lanes_of_a_qsfp_dd() {
    // ethtool prints 16 channels for a module that reports two banks (the source: "the module I
    // have reports two banks and therefore 16 lanes"); on this one bank 1 repeats bank 0.
    let m = parse_module_text(&wild("ethtool-m-qsfp-dd-two-banks-spectrum.txt")).expect("a module");
    assert_eq!(m.kind.as_deref(), Some("QSFP-DD"));
    assert!(all_close(&dbm(&m.tx_power_dbm), &[1.21, 1.03, 1.09, 1.14, 1.08, 1.11, 1.02, 1.27]), "{:?}", m.tx_power_dbm);
    assert!(all_close(&dbm(&m.rx_power_dbm), &[0.55, 0.65, 0.62, 0.67, 0.70, 0.70, 0.49, 0.66]), "{:?}", m.rx_power_dbm);
    assert_eq!(m.tx_bias_ma, None, "the source elides the bias lines");
    assert_eq!((m.vendor, m.temperature_c), (None, None), "elided too: not readable, not zero");
    assert!(m.flags.is_empty());
}

#[test]
fn sff8636_qsfp28_sr4_reads_four_lanes_of_bias_and_power() {
    let m = parse_module_text(&wild("ethtool-m-qsfp28-sr4-mellanox-cumulus.txt")).expect("a module");
    assert_eq!(m.kind.as_deref(), Some("QSFP28"));
    assert_eq!((m.vendor.as_deref(), m.part.as_deref(), m.serial.as_deref()), (Some("Mellanox"), Some("MMA1B00-C100D"), Some("MT1708FT01255")));
    assert_eq!(m.media, Some(Media::Optical));
    assert_eq!(m.temperature_c, Some(30.56));
    assert!(all_close(&dbm(&m.tx_bias_ma), &[6.75; 4]), "{:?}", m.tx_bias_ma);
    assert!(all_close(&dbm(&m.tx_power_dbm), &[1.44, 1.20, 1.26, 1.27]), "{:?}", m.tx_power_dbm);
    assert!(all_close(&dbm(&m.rx_power_dbm), &[-0.12, -0.09, 0.55, 0.55]), "`Rcvr signal avg optical power(Channel N)`: {:?}", m.rx_power_dbm);
    assert!(m.flags.is_empty(), "every flag is Off: {:?}", m.flags);
}

#[test]
fn a_100g_cr4_dac_with_a_qsfp_plus_identifier_is_copper_without_readings() {
    let m = parse_module_text(&wild("ethtool-m-qsfp-100g-cr4-dac.txt")).expect("a module");
    assert_eq!(m.kind.as_deref(), Some("QSFP+"), "identifier 0x0d, whatever the cable carries");
    assert_eq!((m.vendor.as_deref(), m.part.as_deref(), m.serial.as_deref()), (Some("Mellanox"), Some("MCP1600-E00A"), Some("MT1526VS05742")));
    assert_eq!(m.media, Some(Media::Copper), "Copper cable unequalized");
    assert_eq!(m.temperature_c, None, "0.00 degrees C is a cable without a monitor");
    assert_eq!((m.rx_power_dbm, m.tx_power_dbm, m.tx_bias_ma), (None, None, None));
    assert!(m.flags.is_empty());
}

#[test]
fn ethtool_s_of_a_connectx4_lx_on_ubuntu_18_04_counts_zero_not_unknown() {
    let text = wild("ethtool-S-mlx5-cx4lx-ubuntu18.txt");
    let c = parse_ethtool_stats(&text);
    assert_eq!((c.corrected_bits, c.symbol_errors, c.link_down_events), (Some(0), Some(0), Some(0)));
    assert_eq!(c.received_bits, None, "mlx5 prints no rx_bits_phy in this version");
    assert!(c.lane_errors.is_empty(), "no rx_err_lane_N_phy lines: {:?}", c.lane_errors);
    assert_eq!((c.fec_corrected_blocks, c.fec_uncorrectable_blocks), (None, None));
    let q = counters::parse(&text).expect("priority counters");
    assert_eq!((q.rx_bytes[0], q.tx_bytes[0]), (Some(2_202_570_777_997), Some(2_662_454_044_895)));
    assert_eq!((q.rx_bytes[3], q.tx_bytes[7]), (Some(0), Some(0)));
    assert!(q.has_bytes());
    assert!(q.rx_pause.iter().chain(&q.tx_pause).chain(&q.rx_pause_duration_us).all(Option::is_none), "no PFC: no per-priority pause lines");
    assert_eq!(q.rx_buf_discard, [None; 8]);
    assert_eq!((q.rx_discards_phy, q.rx_global_pause, q.tx_global_pause), (Some(0), Some(0), Some(0)));
    assert_eq!((q.pause_storm_warning_events, q.pause_storm_error_events), (None, None), "this driver prints no pause-storm counters");
}

#[test]
fn ethtool_lanes_line_is_the_lane_count_even_without_mode_lists() {
    // `ethtool swp1 | grep -A 3 'Speed: '` on a Spectrum port forced to 100G over two lanes.
    let m = parse_ethtool_modes(&wild("ethtool-spectrum-100g-lanes-2-excerpt.txt"));
    assert_eq!(m.lanes, Some(2), "ethtool says `Lanes: 2`");
    assert_eq!(m.autoneg, Some(false));
    assert!(m.supported.is_empty() && m.advertised.is_empty());
}

#[test]
fn ethtool_spectrum2_port_at_100g_on_four_lanes_of_a_200g_port() {
    let m = parse_ethtool_modes(&wild("ethtool-spectrum2-100g-lanes-4.txt"));
    assert_eq!(m.supported.iter().max(), Some(&200_000));
    assert!([100_000, 50_000, 40_000, 25_000].iter().all(|s| m.supported.contains(s)), "{:?}", m.supported);
    assert_eq!(m.advertised.iter().max(), Some(&200_000));
    assert_eq!(m.autoneg, Some(true));
    assert_eq!(m.lanes, Some(4), "`Lanes: 4`, and 100000baseKR4 leads the 100G modes");
    assert_eq!(ethernet_partner(&m), LinkPartner::Unknown { why: PartnerUnknown::NoLine });
}
