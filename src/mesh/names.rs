//! How every artefact names an endpoint: the host its agent said in its hello and the device,
//! then the address as given where that differs (`n07/mlx5_3 (tcp://10.0.3.7:18515/mlx5_3)`).
//! The terminal, the heat map, JUnit, the oneline drain reason and the prom labels all say the
//! same; the JSON keeps the endpoint as given, with the host beside it in `hosts`.

use super::doc::MeshDoc;
use std::collections::BTreeMap;

/// How the human view names an endpoint: the host its agent reported and the device
/// (`n07/mlx5_3`), then the address as given where that differs (`fake02
/// (tcp://10.0.3.7:18515)`), so two agents on one host stay apart. Without a reported host, the
/// endpoint as given.
pub fn display_name(endpoint: &str, host: Option<&str>) -> String {
    let Some(host) = host.filter(|h| !h.is_empty()) else { return endpoint.to_string() };
    // `localhost/rxe0#2`: the repeat's number stays on the name.
    let (given, nth) = match endpoint.rsplit_once('#') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => (base, format!("#{n}")),
        _ => (endpoint, String::new()),
    };
    let device = crate::control::endpoint::parse(given).ok().and_then(|spec| {
        spec.device.map(|d| match spec.port {
            Some(p) => format!("{d}:{p}"),
            None => d,
        })
    });
    let name = match device {
        Some(d) => format!("{host}/{d}{nth}"),
        None => format!("{host}{nth}"),
    };
    if name == endpoint {
        name
    } else {
        format!("{name} ({endpoint})")
    }
}

/// The endpoints' names, and a suspect's subject in them (`A<->B` for a link).
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    endpoints: &'a [String],
    hosts: &'a BTreeMap<String, String>,
}

impl<'a> Names<'a> {
    pub fn new(endpoints: &'a [String], hosts: &'a BTreeMap<String, String>) -> Names<'a> {
        Names { endpoints, hosts }
    }

    pub fn of_doc(doc: &'a MeshDoc) -> Names<'a> {
        Names::new(&doc.endpoints, &doc.hosts)
    }

    /// How many endpoints.
    pub fn len(&self) -> usize {
        self.endpoints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.endpoints.is_empty()
    }

    /// An endpoint as given, by its name.
    pub fn of(&self, endpoint: &str) -> String {
        display_name(endpoint, self.hosts.get(endpoint).map(String::as_str))
    }

    /// The endpoint at index `i`, by its name.
    pub fn at(&self, i: usize) -> String {
        self.endpoints.get(i).map_or_else(String::new, |e| self.of(e))
    }

    /// A suspect's subject (an endpoint, `A<->B`, a switch, `cluster`) with its endpoints named.
    pub fn subject(&self, subject: &str) -> String {
        match subject.split_once("<->") {
            Some((a, b)) if self.endpoints.iter().any(|e| e == a) => format!("{} <-> {}", self.of(a), self.of(b)),
            _ if self.endpoints.iter().any(|e| e == subject) => self.of(subject),
            _ => subject.to_string(),
        }
    }
}
