//! Lane speeds and link rates: what a port's width and speed carry, nominal and after encoding.

use super::{Speed, Width};

impl Speed {
    /// Per-lane figure that `ibstat` and sysfs print (signalling class, Gb/s).
    pub fn nominal_lane_gbps(self) -> Option<f64> {
        Some(match self {
            Speed::Sdr => 2.5,
            Speed::Ddr => 5.0,
            Speed::Qdr => 10.0,
            Speed::Fdr10 => 10.0,
            Speed::Fdr => 14.0,
            Speed::Edr => 25.0,
            Speed::Hdr => 50.0,
            Speed::Ndr => 100.0,
            Speed::Xdr => 200.0,
            Speed::Unknown(_) => return None,
        })
    }

    /// Per-lane data rate after line encoding, Gb/s: what a transfer can actually carry.
    ///
    /// SDR/DDR/QDR use 8b/10b (80 %); FDR10 and FDR use 64b/66b on 10.3125 and 14.0625 GBd;
    /// EDR's 25.78125 GBd with 64b/66b carries 25; HDR, NDR and XDR are quoted as data rates.
    pub fn data_lane_gbps(self) -> Option<f64> {
        Some(match self {
            Speed::Sdr => 2.0,
            Speed::Ddr => 4.0,
            Speed::Qdr => 8.0,
            Speed::Fdr10 => 10.0,
            Speed::Fdr => 14.0625 * 64.0 / 66.0,
            Speed::Edr => 25.0,
            Speed::Hdr => 50.0,
            Speed::Ndr => 100.0,
            Speed::Xdr => 200.0,
            Speed::Unknown(_) => return None,
        })
    }

    /// Order for "at least this speed" comparisons (FDR10 sits between QDR and FDR).
    pub fn rank(self) -> u32 {
        match self {
            Speed::Unknown(_) => 0,
            known => known.raw(),
        }
    }

    /// Combines `active_speed` and `active_speed_ex` as rdma-core's `ibv_devinfo` does:
    /// the extended field wins when the library filled it in.
    pub fn from_verbs(active_speed: u32, active_speed_ex: u32) -> Self {
        if active_speed_ex != 0 {
            Speed::from_raw(active_speed_ex)
        } else {
            Speed::from_raw(active_speed)
        }
    }
}

/// Link rate of a port: width times per-lane speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Data rate after encoding, Gb/s, rounded to 0.1 (4X FDR: 54.5).
    pub data_gbps: f64,
    /// The figure `ibstat` and sysfs print, Gb/s (4X FDR: 56).
    pub nominal_gbps: f64,
}

/// Rate of `width` lanes at `speed`; `None` if either is unknown.
pub fn link_rate(width: Width, speed: Speed) -> Option<Rate> {
    let lanes = f64::from(width.lanes()?);
    Some(Rate { data_gbps: round1(lanes * speed.data_lane_gbps()?), nominal_gbps: round1(lanes * speed.nominal_lane_gbps()?) })
}

/// The nominal rate (`ibstat`'s figure) of an InfiniBand data rate, where some width at some
/// speed carries exactly it (54.5 -> 56, 4X FDR); the largest where several do.
pub fn nominal_of_data(data_gbps: f64) -> Option<f64> {
    let speeds = [Speed::Sdr, Speed::Ddr, Speed::Qdr, Speed::Fdr10, Speed::Fdr, Speed::Edr, Speed::Hdr, Speed::Ndr, Speed::Xdr];
    let widths = [Width::X1, Width::X2, Width::X4, Width::X8, Width::X12];
    speeds
        .iter()
        .flat_map(|s| widths.iter().filter_map(move |w| link_rate(*w, *s)))
        .filter(|r| (r.data_gbps - round1(data_gbps)).abs() < 0.05)
        .map(|r| r.nominal_gbps)
        .reduce(f64::max)
}

fn round1(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

/// Parses sysfs `rate` ("200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (1X)").
/// Returns the nominal Gb/s, the width and the speed (speed is absent on some kernels for SDR).
pub fn parse_sysfs_rate(text: &str) -> Option<(f64, Width, Option<Speed>)> {
    let text = text.trim();
    let (number, rest) = text.split_once(' ')?;
    let nominal: f64 = number.parse().ok()?;
    let inner = rest.split_once('(')?.1.split_once(')')?.0.trim();
    let mut parts = inner.split_whitespace();
    let width_text = parts.next()?;
    let lanes: u32 = width_text.strip_suffix('X')?.parse().ok()?;
    let speed = parts.next().map(|s| Speed::from_name(s).unwrap_or(Speed::Unknown(0)));
    Some((nominal, Width::from_lanes(lanes), speed))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_SPEEDS: [(u32, &str, f64, f64); 9] = [
        (1, "SDR", 2.0, 2.5),
        (2, "DDR", 4.0, 5.0),
        (4, "QDR", 8.0, 10.0),
        (8, "FDR10", 10.0, 10.0),
        (16, "FDR", 13.636, 14.0),
        (32, "EDR", 25.0, 25.0),
        (64, "HDR", 50.0, 50.0),
        (128, "NDR", 100.0, 100.0),
        (256, "XDR", 200.0, 200.0),
    ];

    #[test]
    fn every_speed_decodes_and_round_trips() {
        for (raw, name, data, nominal) in ALL_SPEEDS {
            let speed = Speed::from_raw(raw);
            assert_eq!(speed.name(), name);
            assert_eq!(Speed::from_name(name), Some(speed));
            assert_eq!(speed.raw(), raw);
            assert!((speed.data_lane_gbps().unwrap() - data).abs() < 0.001, "{name}");
            assert_eq!(speed.nominal_lane_gbps(), Some(nominal));
        }
    }

    #[test]
    fn rate_table_matches_the_contract() {
        let cases = [
            (Width::X4, Speed::Hdr, 200.0, 200.0),
            (Width::X4, Speed::Ndr, 400.0, 400.0),
            (Width::X2, Speed::Ndr, 200.0, 200.0),
            (Width::X4, Speed::Qdr, 32.0, 40.0),
            (Width::X4, Speed::Fdr, 54.5, 56.0),
            (Width::X4, Speed::Fdr10, 40.0, 40.0),
            (Width::X4, Speed::Edr, 100.0, 100.0),
            (Width::X1, Speed::Hdr, 50.0, 50.0),
            (Width::X2, Speed::Hdr, 100.0, 100.0),
            (Width::X4, Speed::Xdr, 800.0, 800.0),
            (Width::X1, Speed::Sdr, 2.0, 2.5),
            (Width::X12, Speed::Qdr, 96.0, 120.0),
            (Width::X8, Speed::Ndr, 800.0, 800.0),
            (Width::X4, Speed::Ddr, 16.0, 20.0),
            (Width::X1, Speed::Fdr10, 10.0, 10.0),
        ];
        for (width, speed, data, nominal) in cases {
            let rate = link_rate(width, speed).unwrap();
            assert_eq!(rate.data_gbps, data, "{width} {speed}");
            assert_eq!(rate.nominal_gbps, nominal, "{width} {speed}");
        }
    }

    #[test]
    fn extended_speed_wins_when_present() {
        assert_eq!(Speed::from_verbs(0, 256), Speed::Xdr);
        assert_eq!(Speed::from_verbs(128, 0), Speed::Ndr);
        assert_eq!(Speed::from_verbs(64, 64), Speed::Hdr);
    }

    #[test]
    fn sysfs_rate_lines() {
        assert_eq!(parse_sysfs_rate("200 Gb/sec (4X HDR)\n"), Some((200.0, Width::X4, Some(Speed::Hdr))));
        assert_eq!(parse_sysfs_rate("2.5 Gb/sec (1X SDR)"), Some((2.5, Width::X1, Some(Speed::Sdr))));
        assert_eq!(parse_sysfs_rate("56 Gb/sec (4X FDR)"), Some((56.0, Width::X4, Some(Speed::Fdr))));
        assert_eq!(parse_sysfs_rate("200 Gb/sec (2X NDR)"), Some((200.0, Width::X2, Some(Speed::Ndr))));
        assert_eq!(parse_sysfs_rate("10 Gb/sec (1X FDR10)"), Some((10.0, Width::X1, Some(Speed::Fdr10))));
        assert_eq!(parse_sysfs_rate("garbage"), None);
    }
}
