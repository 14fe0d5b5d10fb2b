//! What the operator says the node should be: `--expect KEY=VALUE` and profile files.

use crate::port::{LinkLayer, Mtu, PortState, Speed, Width};
use crate::probe::stack::ipoib::IpoibMode;
use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Expectations {
    /// Gb/s, compared with the nominal rate `ibstat` prints (200 for 4X HDR).
    pub rate: Option<f64>,
    pub width: Option<Width>,
    pub speed: Option<Speed>,
    pub link_layer: Option<LinkLayer>,
    pub mtu: Option<u32>,
    pub fw: Option<String>,
    pub devices: Option<usize>,
    pub state: Option<PortState>,
    /// The IPoIB mode the site runs (`ipoib_mode=connected|datagram`).
    pub ipoib_mode: Option<IpoibMode>,
    /// Where the subnet manager runs (`sm=local|remote`): `local` makes this node's `opensm`
    /// unit part of the stack.
    pub sm: Option<SmPlace>,
    /// The DSCP RoCE traffic is sent with (`roce_dscp=N`, 0-63; `NCCL_IB_TC` >> 2): what
    /// `roce.qos` maps to the RoCE priority, before rdma_cm's default ToS.
    pub roce_dscp: Option<crate::probe::qos::Dscp>,
    /// `ecn=on`: ECN/DCQCN off on the RoCE priority is an error, not a warning.
    pub ecn: Option<bool>,
    /// `ibgda=on`: the node is meant for GPU-initiated RDMA; `gpu.ibgda` short of it is an error.
    pub ibgda: Option<bool>,
    /// `flaps=N`: link downs a port may have in `check --since`'s window (default 0).
    pub flaps: Option<u32>,
}

/// Where the subnet manager is expected to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SmPlace {
    /// On this node: its `opensm` unit must run and start at boot.
    Local,
    /// On a switch or another node.
    Remote,
}

/// Every `--expect` key [`Expectations::set`] takes, with an example value: the one table
/// `check --help`, shell completion and docs/checks.md are derived from (tested against `set`).
pub const KEYS: &[(&str, &str)] = &[
    ("rate", "200"),
    ("width", "4X"),
    ("speed", "HDR"),
    ("link_layer", "infiniband"),
    ("mtu", "4096"),
    ("fw", "20.39.1002"),
    ("devices", "8"),
    ("state", "ACTIVE"),
    ("ipoib_mode", "connected"),
    ("sm", "remote"),
    ("roce_dscp", "26"),
    ("ecn", "on"),
    ("ibgda", "on"),
    ("flaps", "0"),
];

/// The keys, comma-separated (`rate, width, ...`).
pub fn key_list() -> String {
    KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
}

/// `--expect`'s help: every key of [`KEYS`].
pub fn help() -> String {
    format!("What the node should be, KEY=VALUE (repeatable): {}.", KEYS.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "))
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExpectError {
    #[error("'{0}' is not KEY=VALUE")]
    NotKeyValue(String),
    #[error("unknown expectation key '{0}' (known: {})", key_list())]
    UnknownKey(String),
    #[error("bad value for {key}: '{value}' ({why})")]
    BadValue { key: String, value: String, why: &'static str },
    #[error("{path}:{line}: {error}")]
    InProfile { path: String, line: usize, error: Box<ExpectError> },
    #[error("cannot read profile {path}: {error}")]
    Unreadable { path: String, error: String },
    /// An error about a profile's line, said without its text (issue #58: fabcheck may be
    /// granted through sudo, and `--profile /etc/shadow` quoted root's entry).
    #[error("{0}; the line is not shown")]
    Unquoted(String),
}

impl ExpectError {
    /// The same error without any text of the line it came from: a key is named only when it
    /// is one fabcheck knows.
    fn unquoted(self) -> ExpectError {
        ExpectError::Unquoted(match self {
            ExpectError::NotKeyValue(_) => "the line is not KEY = VALUE".into(),
            ExpectError::UnknownKey(_) => format!("unknown expectation key (known: {})", key_list()),
            ExpectError::BadValue { key, why, .. } if KEYS.iter().any(|(k, _)| *k == key.as_str()) => format!("bad value for {key} ({why})"),
            ExpectError::BadValue { why, .. } => format!("bad value ({why})"),
            other => return other,
        })
    }
}

impl Expectations {
    /// Applies one `KEY=VALUE`; later settings override earlier ones.
    pub fn set(&mut self, text: &str) -> Result<(), ExpectError> {
        let (key, value) = text.split_once('=').ok_or_else(|| ExpectError::NotKeyValue(text.to_string()))?;
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        let bad = |why| ExpectError::BadValue { key: key.clone(), value: value.to_string(), why };
        if value.is_empty() {
            return Err(bad("empty"));
        }
        match key.as_str() {
            "rate" => {
                let v: f64 = value.trim_end_matches("Gb/s").trim_end_matches('G').trim().parse().map_err(|_| bad("a number of Gb/s, e.g. 200"))?;
                if !(v.is_finite() && v > 0.0 && v <= 10_000.0) {
                    return Err(bad("between 0 and 10000 Gb/s"));
                }
                self.rate = Some(v);
            }
            "width" => {
                let w = Width::from_name(&value.to_ascii_uppercase()).filter(|w| !matches!(w, Width::Unknown(_)));
                self.width = Some(w.ok_or_else(|| bad("one of 1X 2X 4X 8X 12X"))?);
            }
            "speed" => {
                let s = Speed::from_name(value).filter(|s| !matches!(s, Speed::Unknown(_)));
                self.speed = Some(s.ok_or_else(|| bad("one of SDR DDR QDR FDR10 FDR EDR HDR NDR XDR"))?);
            }
            "link_layer" => {
                self.link_layer = Some(match value.to_ascii_lowercase().as_str() {
                    "infiniband" | "ib" => LinkLayer::InfiniBand,
                    "ethernet" | "eth" | "roce" => LinkLayer::Ethernet,
                    _ => return Err(bad("infiniband or ethernet")),
                });
            }
            "mtu" => {
                let v: u32 = value.parse().map_err(|_| bad("one of 256 512 1024 2048 4096"))?;
                if Mtu::from_bytes(v).is_none() {
                    return Err(bad("one of 256 512 1024 2048 4096"));
                }
                self.mtu = Some(v);
            }
            "fw" => {
                if value.len() > 64 || !value.chars().all(|c| c.is_ascii_graphic()) {
                    return Err(bad("a firmware version such as 20.39.1002"));
                }
                self.fw = Some(value.to_string());
            }
            "devices" => {
                let v: usize = value.parse().map_err(|_| bad("a whole number"))?;
                if v > 4096 {
                    return Err(bad("at most 4096"));
                }
                self.devices = Some(v);
            }
            "state" => {
                let s = PortState::from_name(value).filter(|s| !matches!(s, PortState::Unknown(_)));
                self.state = Some(s.ok_or_else(|| bad("one of DOWN INIT ARMED ACTIVE ACTIVE_DEFER"))?);
            }
            "ipoib_mode" => {
                self.ipoib_mode = Some(IpoibMode::parse(value).ok_or_else(|| bad("connected or datagram"))?);
            }
            "sm" => {
                self.sm = Some(match value.to_ascii_lowercase().as_str() {
                    "local" => SmPlace::Local,
                    "remote" => SmPlace::Remote,
                    _ => return Err(bad("local or remote")),
                });
            }
            "roce_dscp" => {
                let v: u8 = value.parse().map_err(|_| bad("a DSCP, 0-63 (NCCL_IB_TC / --tclass >> 2: 106 is 26)"))?;
                self.roce_dscp = Some(crate::probe::qos::Dscp::new(v).ok_or_else(|| bad("a DSCP, 0-63 (NCCL_IB_TC / --tclass >> 2: 106 is 26)"))?);
            }
            "ecn" => {
                self.ecn = Some(match value.to_ascii_lowercase().as_str() {
                    "on" | "1" | "yes" | "true" => true,
                    "off" | "0" | "no" | "false" => false,
                    _ => return Err(bad("on or off")),
                });
            }
            "flaps" => self.flaps = Some(value.parse().map_err(|_| bad("a count of link downs, e.g. 0"))?),
            "ibgda" => {
                self.ibgda = Some(match value.to_ascii_lowercase().as_str() {
                    "on" | "1" | "yes" | "true" => true,
                    "off" | "0" | "no" | "false" => false,
                    _ => return Err(bad("on or off")),
                });
            }
            other => return Err(ExpectError::UnknownKey(other.to_string())),
        }
        Ok(())
    }

    /// Reads a profile: one `key = value` per line (`#` starts a comment), or a JSON object
    /// of the same keys.
    pub fn apply_profile(&mut self, path: &str, text: &str) -> Result<(), ExpectError> {
        if text.len() > 64 * 1024 {
            return Err(ExpectError::Unreadable { path: path.into(), error: "larger than 64 KiB".into() });
        }
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') {
            let value: serde_json::Value =
                serde_json::from_str(trimmed).map_err(|e| ExpectError::Unreadable { path: path.into(), error: e.to_string() })?;
            let object = value.as_object().ok_or_else(|| ExpectError::Unreadable { path: path.into(), error: "not a JSON object".into() })?;
            for (key, value) in object {
                let value = match value {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Number(n) => n.to_string(),
                    _ => {
                        return Err(ExpectError::InProfile {
                            path: path.into(),
                            line: 1,
                            error: Box::new(
                                ExpectError::BadValue { key: key.clone(), value: value.to_string(), why: "a string or number" }.unquoted(),
                            ),
                        })
                    }
                };
                self.set(&format!("{key}={value}")).map_err(|error| ExpectError::InProfile {
                    path: path.into(),
                    line: 1,
                    error: Box::new(error.unquoted()),
                })?;
            }
            return Ok(());
        }
        for (number, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let line = line.replacen(':', "=", usize::from(!line.contains('=')));
            self.set(&line).map_err(|error| ExpectError::InProfile { path: path.into(), line: number + 1, error: Box::new(error.unquoted()) })?;
        }
        Ok(())
    }
}

/// The one judge of `--expect rate=N`, for `check`'s `link.rate` and `pair`'s capacity alike:
/// on InfiniBand the expectation is the nominal rate `ibstat` prints (56 for 4X FDR, whose data
/// rate is 54.5), worked out from the data rate where only that is known; on Ethernet the
/// netdev's speed. Returns the figure judged when it is below `want`.
pub fn rate_below(want: f64, ib: bool, data_gbps: Option<f64>, nominal_gbps: Option<f64>) -> Option<f64> {
    rate_judged(ib, data_gbps, nominal_gbps).filter(|j| *j + 0.01 < want)
}

/// An expectation a port misses: the one judgment of `--expect rate|link_layer|mtu`, worded by
/// `check` (`link.rate`, `port.link_layer`, `port.mtu`/`roce.mtu`) and `pair` (`pair.capacity`,
/// `pair.mtu`) alike.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Miss {
    /// The rate judged (nominal on InfiniBand, see [`rate_below`]) is below the expected one.
    Rate { got: f64, want: f64 },
    /// The port runs another link layer.
    LinkLayer { got: LinkLayer, want: LinkLayer },
    /// The active MTU is below the expected one.
    Mtu { got: u32, want: u32 },
}

impl Expectations {
    /// `--expect rate=N` of a port at `data_gbps` (`nominal_gbps` where sysfs says it).
    pub fn rate_miss(&self, ib: bool, data_gbps: Option<f64>, nominal_gbps: Option<f64>) -> Option<Miss> {
        let want = self.rate?;
        rate_below(want, ib, data_gbps, nominal_gbps).map(|got| Miss::Rate { got, want })
    }

    /// `--expect link_layer=...` of a port running `got`.
    pub fn link_layer_miss(&self, got: LinkLayer) -> Option<Miss> {
        self.link_layer.filter(|want| *want != got).map(|want| Miss::LinkLayer { got, want })
    }

    /// `--expect mtu=N` of a port whose active MTU is `got`.
    pub fn mtu_miss(&self, got: u32) -> Option<Miss> {
        self.mtu.filter(|want| got < *want).map(|want| Miss::Mtu { got, want })
    }
}

/// The figure `--expect rate=N` is compared with (see [`rate_below`]).
pub fn rate_judged(ib: bool, data_gbps: Option<f64>, nominal_gbps: Option<f64>) -> Option<f64> {
    if ib {
        nominal_gbps.or_else(|| data_gbps.and_then(crate::port::nominal_of_data)).or(data_gbps)
    } else {
        data_gbps.or(nominal_gbps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_key() {
        let mut e = Expectations::default();
        for kv in ["rate=200", "width=4x", "speed=HDR", "link_layer=infiniband", "mtu=4096", "fw=20.39.1002", "devices=8", "state=ACTIVE"] {
            e.set(kv).unwrap();
        }
        assert_eq!(e.rate, Some(200.0));
        assert_eq!(e.width, Some(Width::X4));
        assert_eq!(e.speed, Some(Speed::Hdr));
        assert_eq!(e.link_layer, Some(LinkLayer::InfiniBand));
        assert_eq!(e.mtu, Some(4096));
        assert_eq!(e.fw.as_deref(), Some("20.39.1002"));
        assert_eq!(e.devices, Some(8));
        assert_eq!(e.state, Some(PortState::Active));
        e.set("ipoib_mode=Connected").unwrap();
        e.set("sm=local").unwrap();
        assert_eq!((e.ipoib_mode, e.sm), (Some(IpoibMode::Connected), Some(SmPlace::Local)));
        e.set("roce_dscp=26").unwrap();
        e.set("ecn=on").unwrap();
        assert_eq!((e.roce_dscp.map(|d| d.get()), e.ecn), (Some(26), Some(true)));
    }

    #[test]
    fn rejects_malformed() {
        let mut e = Expectations::default();
        assert!(matches!(e.set("rate"), Err(ExpectError::NotKeyValue(_))));
        assert!(matches!(e.set("colour=blue"), Err(ExpectError::UnknownKey(_))));
        for bad in [
            "rate=fast",
            "rate=-1",
            "rate=NaN",
            "width=3X",
            "speed=ZDR",
            "mtu=1500",
            "link_layer=fddi",
            "devices=x",
            "state=UP",
            "fw=",
            "mtu=",
            "ipoib_mode=fast",
            "sm=here",
            "roce_dscp=64",
            "roce_dscp=-1",
            "roce_dscp=af31",
            "ecn=maybe",
        ] {
            assert!(matches!(e.set(bad), Err(ExpectError::BadValue { .. })), "{bad}");
        }
    }

    #[test]
    fn profiles() {
        let mut e = Expectations::default();
        e.apply_profile("p", "# HDR nodes\nrate = 200\nlink_layer: infiniband # trailing\n\n").unwrap();
        assert_eq!(e.rate, Some(200.0));
        assert_eq!(e.link_layer, Some(LinkLayer::InfiniBand));
        let mut j = Expectations::default();
        j.apply_profile("p.json", r#"{"rate": 400, "speed": "NDR"}"#).unwrap();
        assert_eq!(j.rate, Some(400.0));
        assert_eq!(j.speed, Some(Speed::Ndr));
        let err = Expectations::default().apply_profile("p", "rate=200\nbogus=1\n").unwrap_err();
        assert!(err.to_string().starts_with("p:2:"), "{err}");
        // No text of the file is quoted, only known keys named (issue #58).
        for secret in ["root:$6$s3cret:19000:0", "mtu = s3cret", "s3cret", "{\"s3cret\": 1}", "{\"mtu\": \"s3cret\"}", "= s3cret"] {
            let err = Expectations::default().apply_profile("p", secret).unwrap_err().to_string();
            assert!(!err.contains("s3cret") && err.contains("not shown"), "{err}");
        }
        assert!(Expectations::default().apply_profile("p", "{\"rate\": [1]}").is_err());
        assert!(Expectations::default().apply_profile("p", "{not json").is_err());
    }

    #[test]
    fn one_judge_of_the_rate_in_check_and_pair() {
        // 4X FDR: nominal 56, data 54.5. check knows both; pair knows the data rate only.
        assert_eq!(rate_below(56.0, true, Some(54.5), Some(56.0)), None);
        assert_eq!(rate_below(56.0, true, Some(54.5), None), None, "pair's side: 54.5 is 4X FDR, 56 nominal");
        assert_eq!(rate_below(100.0, true, Some(54.5), None), Some(56.0));
        assert_eq!(rate_below(400.0, false, Some(200.0), None), Some(200.0));
        assert_eq!(rate_below(200.0, false, Some(200.0), Some(200.0)), None);
    }

    #[test]
    fn one_miss_per_expectation_for_check_and_pair_alike() {
        let mut e = Expectations::default();
        assert_eq!((e.rate_miss(true, Some(54.5), None), e.link_layer_miss(LinkLayer::Ethernet), e.mtu_miss(1024)), (None, None, None));
        for kv in ["rate=100", "link_layer=infiniband", "mtu=4096"] {
            e.set(kv).unwrap();
        }
        // Pair's end knows the data rate only; check's port the nominal too: one answer.
        assert_eq!(e.rate_miss(true, Some(54.5), None), Some(Miss::Rate { got: 56.0, want: 100.0 }));
        assert_eq!(e.rate_miss(true, Some(54.5), Some(56.0)), e.rate_miss(true, Some(54.5), None));
        assert_eq!(e.rate_miss(true, Some(96.97), Some(100.0)), None);
        assert_eq!(e.link_layer_miss(LinkLayer::Ethernet), Some(Miss::LinkLayer { got: LinkLayer::Ethernet, want: LinkLayer::InfiniBand }));
        assert_eq!(e.link_layer_miss(LinkLayer::InfiniBand), None);
        assert_eq!(e.mtu_miss(1024), Some(Miss::Mtu { got: 1024, want: 4096 }));
        assert_eq!(e.mtu_miss(4096), None);
    }
}
