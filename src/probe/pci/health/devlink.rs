//! `devlink -j health show` (iproute2, `devlink/devlink.c`: `pr_out_health`): the health
//! reporters of each devlink instance, `{"health": {"pci/0000:18:00.0": [{"reporter": "fw",
//! "state": "healthy", "error": 0, "recover": 0, ...}], "pci/0000:18:00.0/65535": [...]}}`. A
//! port's reporters (mlx5's `tx`, `rx`) sit under `BUS/DEVICE/PORT`. `state` is `healthy` or
//! `error`; `error` counts the errors reported, `recover` the recoveries. A u64 at its maximum
//! is printed as the string `unlimited`. Pure.

use serde::Serialize;
use serde_json::Value;

/// A reporter's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReporterState {
    Healthy,
    Error,
    Other(String),
}

/// One health reporter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reporter {
    /// The devlink handle as printed (`pci/0000:18:00.0`, `pci/0000:18:00.0/65535`).
    pub handle: String,
    /// The PCI function of a `pci/` handle.
    pub bdf: Option<String>,
    /// `fw`, `fw_fatal`, `tx`, `rx`, `vnic`, ...
    pub name: String,
    pub state: ReporterState,
    pub errors: Option<u64>,
    pub recoveries: Option<u64>,
    /// `last_dump_date` and `last_dump_time`, when a dump was taken.
    pub last_dump: Option<String>,
}

impl Reporter {
    /// Whether it says something went wrong: in error now, or errors counted.
    pub fn unhealthy(&self) -> bool {
        self.state == ReporterState::Error || self.errors.is_some_and(|e| e > 0)
    }
}

/// Reporters kept at most (a node's NICs have a handful each).
const MAX_REPORTERS: usize = 1024;

/// Parses `devlink -j health show`; `Err` names what is wrong with the text.
pub fn parse_health(text: &str) -> Result<Vec<Reporter>, crate::model::Unparsed> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(handles) = doc.get("health").and_then(Value::as_object) else {
        return Err("no \"health\" object (is it `devlink -j health show`?)".into());
    };
    let mut out = Vec::new();
    for (handle, reporters) in handles {
        let Some(list) = reporters.as_array() else { continue };
        for r in list {
            if out.len() >= MAX_REPORTERS {
                return Ok(out);
            }
            let Some(name) = r.get("reporter").and_then(Value::as_str) else { continue };
            let state = match r.get("state").and_then(Value::as_str) {
                Some("healthy") => ReporterState::Healthy,
                Some("error") => ReporterState::Error,
                Some(other) => ReporterState::Other(other.chars().take(32).collect()),
                None => ReporterState::Other(String::new()),
            };
            let last_dump = match (r.get("last_dump_date").and_then(Value::as_str), r.get("last_dump_time").and_then(Value::as_str)) {
                (Some(d), Some(t)) => Some(format!("{d} {t}")),
                _ => None,
            };
            out.push(Reporter {
                handle: handle.chars().take(128).collect(),
                bdf: pci_function(handle),
                name: name.chars().take(64).collect(),
                state,
                errors: count(r.get("error")),
                recoveries: count(r.get("recover")),
                last_dump,
            });
        }
    }
    Ok(out)
}

/// A count, or `unlimited` (u64::MAX) as iproute2 prints it.
fn count(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if s == "unlimited" => Some(u64::MAX),
        _ => None,
    }
}

/// `pci/0000:18:00.0` and `pci/0000:18:00.0/65535` → `0000:18:00.0`.
fn pci_function(handle: &str) -> Option<String> {
    let rest = handle.strip_prefix("pci/")?;
    let bdf = rest.split('/').next()?;
    crate::probe::tool::valid_bdf(bdf).then(|| bdf.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `devlink -j health show` of a ConnectX-6 Dx PF whose firmware hit a fatal error once and
    /// was recovered (iproute2 6.1, kernel 6.1: `fw`/`fw_fatal` on the device, `tx`/`rx` on the
    /// port).
    const MLX5: &str = r#"{"health":{"pci/0000:3b:00.0":[{"reporter":"fw","state":"healthy","error":0,"recover":0,"auto_dump":true},
        {"reporter":"fw_fatal","state":"healthy","error":1,"recover":1,"last_dump_date":"2026-11-28","last_dump_time":"03:14:07",
         "grace_period":60000,"auto_recover":true,"auto_dump":true}],
        "pci/0000:3b:00.0/65535":[{"reporter":"tx","state":"healthy","error":0,"recover":0,"grace_period":500,"auto_recover":true,"auto_dump":true},
        {"reporter":"rx","state":"error","error":2,"recover":1,"grace_period":500,"auto_recover":true,"auto_dump":true}]}}"#;

    #[test]
    fn mlx5_reporters() {
        let r = parse_health(MLX5).unwrap();
        assert_eq!(r.len(), 4);
        assert_eq!(r[1].name, "fw_fatal");
        assert_eq!((r[1].errors, r[1].recoveries, r[1].bdf.as_deref()), (Some(1), Some(1), Some("0000:3b:00.0")));
        assert_eq!(r[1].last_dump.as_deref(), Some("2026-11-28 03:14:07"));
        assert!(r[1].unhealthy() && !r[0].unhealthy());
        assert_eq!((r[3].handle.as_str(), r[3].bdf.as_deref(), &r[3].state), ("pci/0000:3b:00.0/65535", Some("0000:3b:00.0"), &ReporterState::Error));
    }

    #[test]
    fn other_shapes() {
        assert_eq!(parse_health(r#"{"health":{}}"#).unwrap(), vec![]);
        let unlimited =
            parse_health(r#"{"health":{"netdevsim/netdevsim10":[{"reporter":"empty","state":"healthy","error":"unlimited","recover":0}]}}"#).unwrap();
        assert_eq!((unlimited[0].errors, unlimited[0].bdf.as_deref()), (Some(u64::MAX), None));
        assert!(parse_health("devlink: command not found").is_err());
        assert!(parse_health(r#"{"dev":{}}"#).is_err());
    }
}
