//! Settings that differ from the majority (firmware, MTU, rate...), per endpoint (pure).

use super::{Suspect, SuspectKind};
use std::collections::BTreeMap;

/// Settings that differ from the majority. `items`: per endpoint, its `(key, value)` settings
/// (e.g. `("fw_ver", "20.39.1002")`, `("active_mtu", "4096")`, `("rate_gbps", "200")`). An
/// endpoint without a key is not compared on it. When the top values tie there is no majority:
/// every endpoint on the key is reported. Ordered by endpoint, then key.
pub fn config_drift(items: &[(String, Vec<(String, String)>)]) -> Vec<Suspect> {
    // key -> value -> endpoints (indices into items) holding it.
    let mut by_key: BTreeMap<&str, BTreeMap<&str, Vec<usize>>> = BTreeMap::new();
    for (i, (_, kvs)) in items.iter().enumerate() {
        for (k, v) in kvs {
            let holders = by_key.entry(k.as_str()).or_default().entry(v.as_str()).or_default();
            if !holders.contains(&i) {
                holders.push(i);
            }
        }
    }
    let mut found: Vec<(usize, &str, String)> = Vec::new();
    for (k, values) in &by_key {
        if values.len() < 2 {
            continue;
        }
        let top = values.values().map(Vec::len).max().unwrap_or(0);
        let leaders: Vec<&str> = values.iter().filter(|(_, h)| h.len() == top).map(|(v, _)| *v).collect();
        let compared: usize = values.values().map(Vec::len).sum();
        if leaders.len() == 1 {
            let major = leaders[0];
            for (v, holders) in values.iter().filter(|(v, _)| **v != major) {
                for &i in holders {
                    let others = compared - 1;
                    let whom = if top == others {
                        if others == 1 {
                            "the other endpoint".to_string()
                        } else {
                            format!("the other {others} endpoints")
                        }
                    } else {
                        format!("{top} of the other {others} endpoints")
                    };
                    found.push((i, k, format!("{k} {v} differs from {whom} ({major})")));
                }
            }
        } else {
            let split: Vec<String> = values.iter().map(|(v, h)| format!("{v} on {}", h.len())).collect();
            for (v, holders) in values {
                for &i in holders {
                    found.push((
                        i,
                        k,
                        format!("{k} {v} here, but no majority among the {compared} endpoints ({}): make them all the same", split.join(", ")),
                    ));
                }
            }
        }
    }
    found.sort_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)));
    found.into_iter().map(|(i, _, reason)| Suspect::new(SuspectKind::Config, items[i].0.clone(), reason)).collect()
}
