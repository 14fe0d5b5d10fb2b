//! The InfiniBand link partner in a bundle: `tools/peer_portinfo/DEV-PORT.txt`, the text of
//! `smpquery -D portinfo 0,PORT PEERPORT` run on the node (PortInfo of the port one
//! directed-route hop out). Pure parsing; absent or unreadable fields give no partner.

use super::partner::{LinkPartner, PartnerUnknown};
use crate::port::{Speed, Width};

/// The widest width and fastest speed the peer both supports and enables.
pub fn parse_smpquery_portinfo(text: &str) -> LinkPartner {
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.lines().take(512) {
        let Some((key, value)) = line.split_once(':') else { continue };
        fields.push((key.trim().to_string(), value.trim_start_matches('.').trim().to_string()));
    }
    let get = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    let widths = |key: &str| -> Vec<Width> { get(key).map(|v| v.split(" or ").filter_map(width_of).collect()).unwrap_or_default() };
    let speeds = |keys: &[&str]| -> Vec<Speed> {
        keys.iter().filter_map(|k| get(k)).flat_map(|v| v.split(" or ").filter_map(speed_of).collect::<Vec<_>>()).collect()
    };
    let (w_sup, w_en) = (widths("LinkWidthSupported"), widths("LinkWidthEnabled"));
    let s_sup = speeds(&["LinkSpeedSupported", "LinkSpeedExtSupported", "LinkSpeedExt2Supported"]);
    let s_en = speeds(&["LinkSpeedEnabled", "LinkSpeedExtEnabled", "LinkSpeedExt2Enabled"]);
    // "Enabled" missing or empty means what the port supports.
    let both_w: Vec<Width> =
        if w_en.is_empty() { w_sup.clone() } else { w_en.iter().copied().filter(|w| w_sup.is_empty() || w_sup.contains(w)).collect() };
    let both_s: Vec<Speed> =
        if s_en.is_empty() { s_sup.clone() } else { s_en.iter().copied().filter(|s| s_sup.is_empty() || s_sup.contains(s)).collect() };
    let width = both_w.into_iter().max_by_key(|w| w.lanes().unwrap_or(0));
    let speed = both_s.into_iter().max_by_key(|s| s.rank());
    match (width, speed) {
        (Some(width), Some(speed)) => LinkPartner::Enabled { width, speed },
        _ => LinkPartner::Unknown { why: PartnerUnknown::NoPeerPortInfo },
    }
}

fn width_of(text: &str) -> Option<Width> {
    Some(match text.trim() {
        "1X" => Width::X1,
        "2X" => Width::X2,
        "4X" => Width::X4,
        "8X" => Width::X8,
        "12X" => Width::X12,
        _ => return None,
    })
}

/// smpquery's lane signalling rates: 2.5 SDR ... 53.125 HDR, 106.25 NDR, 212.5 XDR.
fn speed_of(text: &str) -> Option<Speed> {
    let gbps: f64 = text.trim().strip_suffix("Gbps")?.trim().parse().ok()?;
    let table = [
        (2.5, Speed::Sdr),
        (5.0, Speed::Ddr),
        (10.0, Speed::Qdr),
        (14.0625, Speed::Fdr),
        (25.78125, Speed::Edr),
        (53.125, Speed::Hdr),
        (106.25, Speed::Ndr),
        (212.5, Speed::Xdr),
    ];
    table.iter().find(|(g, _)| (g - gbps).abs() < 0.01).map(|(_, s)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Quantum-2 switch port split 2X (NDR200), as `smpquery -D portinfo 0,1 13` prints it.
    pub const SPLIT_2X: &str = "# Port info: DR path slid 65535; dlid 65535; 0,1 port 13\nMkey:............................0x0000000000000000\nLid:.............................0x0000\nLinkWidthEnabled:................1X or 2X\nLinkWidthSupported:..............1X or 2X or 4X\nLinkWidthActive:.................2X\nLinkSpeedSupported:..............2.5 Gbps or 5.0 Gbps or 10.0 Gbps\nLinkState:.......................Active\nPhysLinkState:...................LinkUp\nLinkSpeedActive:.................10.0 Gbps\nLinkSpeedEnabled:................2.5 Gbps or 5.0 Gbps or 10.0 Gbps\nLinkSpeedExtActive:..............106.25 Gbps\nLinkSpeedExtSupported:...........14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps\nLinkSpeedExtEnabled:.............14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps\n";

    #[test]
    fn a_split_switch_port_enables_2x_ndr() {
        assert_eq!(parse_smpquery_portinfo(SPLIT_2X), LinkPartner::Enabled { width: Width::X2, speed: Speed::Ndr });
        let hdr_only = SPLIT_2X.replace(
            "LinkSpeedExtEnabled:.............14.0625 Gbps or 25.78125 Gbps or 53.125 Gbps or 106.25 Gbps",
            "LinkSpeedExtEnabled:.............53.125 Gbps",
        );
        let full = hdr_only.replace("LinkWidthEnabled:................1X or 2X", "LinkWidthEnabled:................1X or 2X or 4X");
        assert_eq!(parse_smpquery_portinfo(&full), LinkPartner::Enabled { width: Width::X4, speed: Speed::Hdr });
    }

    #[test]
    fn nothing_readable_is_no_partner() {
        assert_eq!(
            parse_smpquery_portinfo("ibwarn: [1234] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0,1)\n"),
            LinkPartner::Unknown { why: PartnerUnknown::NoPeerPortInfo }
        );
    }
}
