//! A pair, mesh or collective document as `compare` needs it: its schema and stamp, and its figures keyed
//! by endpoints, test, direction and size, in little memory (issue #46 item 5).
//!
//! 0.3 parsed each document into a `serde_json::Value` tree and keyed every figure by four
//! `String`s: a 230 MB mesh document took 8.8 GB and 36 s. Here a document is read from a
//! stream by typed serde: the top-level fields compare does not use are skipped unread
//! (`IgnoredAny`), a mesh's pair records are taken one at a time (each a small tree, dropped at
//! once), and what is kept of each figure is a fixed-size entry whose names are interned (each
//! endpoint, test and direction stored once). A pair document's results are read the same way,
//! one at a time into entries (issue #58: kept as a `Value` tree, two 120 MB pair documents took
//! 2.5 GB, now 0.8 GB); only its sides are kept whole, since whether its ports are matched by
//! GUID depends on both documents.

use super::Figure;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

pub use super::figures::{Entry, Figures, Names};

/// What a result holds: test, direction, size and its figures; `None` when it failed or does
/// not say what it is.
fn figures_of(r: &Value) -> Option<(&str, &str, u64, impl Iterator<Item = (Figure, f64)>)> {
    if r.get("error").is_some_and(|e| !e.is_null()) {
        return None;
    }
    let (test, direction, size) = (r["test"].as_str()?, r["direction"].as_str()?, r["size"].as_u64()?);
    let figures = [
        (Figure::Bandwidth, r["bw_gbps"].as_f64()),
        (Figure::MessageRate, r["msg_rate_mpps"].as_f64()),
        (Figure::LatencyP50, r["lat_us"]["p50"].as_f64()),
    ];
    Some((test, direction, size, figures.into_iter().filter_map(|(f, v)| v.filter(|v| v.is_finite()).map(|v| (f, v)))))
}

fn swapped(direction: &str) -> &str {
    match direction {
        "a->b" => "b->a",
        "b->a" => "a->b",
        other => other,
    }
}

/// The schema and stamp of a document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    pub schema: Option<String>,
    pub host: Option<String>,
    pub time: Option<String>,
}

/// A document as compare reads it.
#[derive(Debug, Default)]
pub struct Doc {
    pub meta: Meta,
    /// A pair document's sides and results (`Null` where absent).
    pair: PairParts,
    /// A mesh document's figures.
    mesh: Figures,
    /// A collective document's figures.
    collective: Figures,
}

#[derive(Debug, Default)]
struct PairParts {
    a: Value,
    b: Value,
    results: Results,
    rails: Rails,
}

/// The top level as read: what compare uses, every other field skipped unread.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Top {
    #[serde(deserialize_with = "text")]
    schema: Option<String>,
    #[serde(deserialize_with = "text")]
    host: Option<String>,
    #[serde(deserialize_with = "text")]
    time: Option<String>,
    a: Value,
    b: Value,
    results: Results,
    rails: Rails,
    hosts: Value,
    endpoints: Value,
    pairs: Records,
    // A collective document's parts (0.5): small beside a mesh's pair records.
    op: Value,
    size: Value,
    members: Value,
    rings: Value,
    total: Value,
}

/// A string, or `None` for any other value (as `Value::as_str` reads it).
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// A mesh's pair records, taken one at a time: the ends as given and as reported, and each
/// figure against its record.
#[derive(Default)]
struct Records {
    names: Names,
    ends: Vec<Ends>,
    figures: Vec<(u32, Entry)>,
}

/// A record's ends: the endpoints as given, and the hosts their agents reported, if the record
/// says (`u32::MAX`: it does not).
#[derive(Clone, Copy)]
struct Ends {
    a: u32,
    b: u32,
    a_host: u32,
    b_host: u32,
}

const NONE: u32 = u32::MAX;

/// What a list in a document is read into one element at a time, each a small tree dropped at
/// once; anything but a list where the list should be reads as none (as 0.3 read it).
trait Each: Default {
    fn add(&mut self, element: Value);
}

/// Deserializes an [`Each`] from a list, streaming.
fn each<'de, T: Each, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    struct Visit<T>(std::marker::PhantomData<T>);
    impl<'de, T: Each> Visitor<'de> for Visit<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
            let mut out = T::default();
            while let Some(element) = seq.next_element::<Value>()? {
                out.add(element);
            }
            Ok(out)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(T::default())
        }
        fn visit_str<E>(self, _: &str) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_bool<E>(self, _: bool) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<T, E> {
            Ok(T::default())
        }
        fn visit_unit<E>(self) -> Result<T, E> {
            Ok(T::default())
        }
    }
    d.deserialize_any(Visit(std::marker::PhantomData))
}

impl<'de> Deserialize<'de> for Records {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Records, D::Error> {
        each(d)
    }
}

impl Each for Records {
    fn add(&mut self, record: Value) {
        Records::add(self, &record);
    }
}

/// A pair document's results, read one at a time as they stream by (issue #58: kept as one
/// `Value` tree, two 120 MB pair documents took 2.5 GB): each figure with its test and
/// direction as written (interned), its ends named later, by GUID or by host, which depends on
/// both documents.
#[derive(Debug, Default)]
struct Results {
    names: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
    /// Entries whose `a` and `b` are unset (0).
    figures: Vec<Entry>,
}

impl Results {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.index.insert(name.into(), id);
        id
    }

    /// These figures between ends `a` and `b` (as named in `out`), into `out`.
    fn add_to(&self, out: &mut Figures, a: u32, b: u32) {
        // One order for the two ends, so a run with the ends swapped still matches.
        let swap = out.names.get(a) > out.names.get(b);
        let (first, second) = if swap { (b, a) } else { (a, b) };
        for e in &self.figures {
            let direction = &*self.names[e.direction as usize];
            let direction = if swap { swapped(direction) } else { direction };
            let (test, direction) = (out.names.id(&self.names[e.test as usize]), out.names.id(direction));
            out.entries.push(Entry { a: first, b: second, test, direction, ..*e });
        }
    }
}

impl<'de> Deserialize<'de> for Results {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Results, D::Error> {
        each(d)
    }
}

impl Each for Results {
    fn add(&mut self, r: Value) {
        let Some((test, direction, size, figures)) = figures_of(&r) else { return };
        let (test, direction) = (self.id(test), self.id(direction));
        for (figure, value) in figures {
            self.figures.push(Entry { a: 0, b: 0, test, direction, size, figure, value });
        }
    }
}

/// `pair --rails`: each rail's sides and results, one rail at a time.
#[derive(Debug, Default)]
struct Rails(Vec<(Value, Value, Results)>);

impl<'de> Deserialize<'de> for Rails {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rails, D::Error> {
        each(d)
    }
}

impl Each for Rails {
    fn add(&mut self, mut rail: Value) {
        // `get_mut`: a rail that is not an object (outside input) has no sides and no results.
        let mut take = |key: &str| rail.get_mut(key).map(Value::take).unwrap_or_default();
        let results = Results::deserialize(take("results")).unwrap_or_default();
        self.0.push((take("a"), take("b"), results));
    }
}

impl Records {
    /// One record: its ends as given, and its figures against them, as the record has them
    /// (named and ordered once the document's host map is known).
    fn add(&mut self, record: &Value) {
        let mut side = |key: &str| self.names.id(record[key].as_str().unwrap_or("?"));
        let (a, b) = (side("a"), side("b"));
        let mut host = |key: &str| record.get(key).and_then(Value::as_str).map_or(NONE, |h| self.names.id(h));
        let ends = Ends { a, b, a_host: host("a_host"), b_host: host("b_host") };
        let index = self.ends.len() as u32;
        self.ends.push(ends);
        for r in record["results"].as_array().into_iter().flatten() {
            let Some((test, direction, size, figures)) = figures_of(r) else { continue };
            let (test, direction) = (self.names.id(test), self.names.id(direction));
            for (figure, value) in figures {
                self.figures.push((index, Entry { a, b, test, direction, size, figure, value }));
            }
        }
    }

    /// The figures keyed by the ends as [`mesh_endpoint`] names them, in one order.
    fn into_figures(self, hosts: &BTreeMap<String, String>) -> Figures {
        let Records { names, ends, figures } = self;
        let mut out = Figures { names: Names::default(), entries: Vec::with_capacity(figures.len()) };
        let mut named: HashMap<(u32, u32), u32> = HashMap::new();
        let mut name = |out: &mut Figures, given: u32, host: u32| {
            *named.entry((given, host)).or_insert_with(|| {
                let reported = (host != NONE).then(|| names.get(host).to_string()).or_else(|| hosts.get(names.get(given)).cloned());
                out.names.id(&mesh_endpoint(names.get(given), reported))
            })
        };
        for (record, e) in figures {
            let ends = ends[record as usize];
            let (a, b) = (name(&mut out, ends.a, ends.a_host), name(&mut out, ends.b, ends.b_host));
            let direction = names.get(e.direction);
            let (first, second, direction) = if out.names.get(a) <= out.names.get(b) { (a, b, direction) } else { (b, a, swapped(direction)) };
            let (test, direction) = (out.names.id(names.get(e.test)), out.names.id(direction));
            out.entries.push(Entry { a: first, b: second, test, direction, ..e });
        }
        out.finish()
    }
}

/// A mesh record's end as host/device: the agent's reported host with the device of the
/// endpoint as given; else the endpoint as given.
fn mesh_endpoint(given: &str, reported: Option<String>) -> String {
    let Some(host) = reported else { return given.to_string() };
    match crate::control::endpoint::parse(given).ok().and_then(|e| e.device.map(|d| (d, e.port))) {
        Some((device, Some(port))) => format!("{host}/{device}:{port}"),
        Some((device, None)) => format!("{host}/{device}"),
        None => host,
    }
}

/// The host each mesh endpoint's agent reported, where the document says: a top-level
/// `hosts` map (endpoint -> host) or `endpoints` written as `{"endpoint","host"}` objects.
fn mesh_hosts(hosts: &Value, endpoints: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(map) = hosts.as_object() {
        for (endpoint, host) in map {
            if let Some(h) = host.as_str() {
                out.insert(endpoint.clone(), h.to_string());
            }
        }
    }
    for e in endpoints.as_array().into_iter().flatten() {
        let name = e.get("endpoint").or_else(|| e.get("name")).and_then(Value::as_str);
        if let (Some(name), Some(host)) = (name, e.get("host").and_then(Value::as_str)) {
            out.insert(name.to_string(), host.to_string());
        }
    }
    out
}

/// An outside string, one line.
fn one_line(text: String) -> String {
    crate::sanitise::one_line(&text).into_owned()
}

impl Doc {
    /// Reads a document from `reader` (buffered by the caller or not: it is read in large
    /// pieces).
    pub fn read(reader: impl std::io::Read) -> serde_json::Result<Doc> {
        let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 16, reader));
        let top = Top::deserialize(&mut de)?;
        de.end()?;
        Ok(Doc::from_top(top))
    }

    /// A document already in memory (this run's own, for `--baseline`): read the same way.
    pub fn from_value(value: &Value) -> Doc {
        Top::deserialize(value).map(Doc::from_top).unwrap_or_default()
    }

    fn from_top(top: Top) -> Doc {
        let hosts = mesh_hosts(&top.hosts, &top.endpoints);
        Doc {
            meta: Meta { schema: top.schema, host: top.host.map(one_line), time: top.time.map(one_line) },
            pair: PairParts { a: top.a, b: top.b, results: top.results, rails: top.rails },
            collective: super::collective::figures(&super::collective::Parts {
                op: &top.op,
                size: &top.size,
                members: &top.members,
                rings: &top.rings,
                total: &top.total,
            }),
            mesh: top.pairs.into_figures(&hosts),
        }
    }

    /// Whether every side of this pair document names its port GUID.
    pub fn has_guids(&self) -> bool {
        [&self.pair.a, &self.pair.b].iter().all(|s| guid(s).is_some())
    }

    /// A mesh document's figures.
    pub fn mesh_figures(&self) -> &Figures {
        &self.mesh
    }

    /// A collective document's figures.
    pub fn collective_figures(&self) -> &Figures {
        &self.collective
    }

    /// A pair document's figures, its ports named by GUID or by host and device.
    pub fn pair_figures(&self, use_guid: bool) -> Figures {
        let mut out = Figures::default();
        let add = |out: &mut Figures, a: &Value, b: &Value, results: &Results| {
            let (a, b) = (out.names.id(&side_name(a, use_guid)), out.names.id(&side_name(b, use_guid)));
            results.add_to(out, a, b);
        };
        add(&mut out, &self.pair.a, &self.pair.b, &self.pair.results);
        // With --rails, each rail's results are under `rails`.
        for (a, b, results) in &self.pair.rails.0 {
            add(&mut out, a, b, results);
        }
        out.finish()
    }
}

fn guid(side: &Value) -> Option<&str> {
    ["port_guid", "guid"].iter().find_map(|k| side.get(*k)?.as_str()).filter(|g| !g.is_empty())
}

/// A pair document's side as an endpoint name: `guid:G`, else `host/device:port`.
fn side_name(side: &Value, use_guid: bool) -> String {
    if use_guid {
        if let Some(g) = guid(side) {
            return format!("guid:{g}");
        }
    }
    let host = side["host"].as_str().unwrap_or("?");
    let device = side["device"].as_str().unwrap_or("?");
    match side["port"].as_u64() {
        Some(p) => format!("{host}/{device}:{p}"),
        None => format!("{host}/{device}"),
    }
}
