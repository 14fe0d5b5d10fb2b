//! What a check or finding is about, typed: the node, a device, a port, a PCI function, a pair
//! of ends, a rail. Written as 0.3's strings (`node`, `mlx5_0`, `mlx5_0/1`, `0000:17:00.0`,
//! `a <-> b`, `rail 3 (nodeA mlx5_3 <-> nodeB mlx5_3)`); a document's string is read back into
//! the same variant ([`Subject::parse`]), so a subject made in code and one read from a
//! document compare equal, and logic asks for a port's device without splitting text.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subject {
    /// The node as a whole (the driver stack, the device count).
    Node,
    /// An RDMA device (`mlx5_0`).
    Device(String),
    /// One port of a device (`mlx5_0/1`).
    Port { device: String, port: u32 },
    /// A PCI function by its address (`0000:17:00.0`): a NIC's, a GPU's or a bridge's.
    Function(String),
    /// Two ends (`n1/mlx5_0 <-> n2/mlx5_0`, `sw1/1 <-> n1/1`).
    Pair { a: String, b: String },
    /// One rail of a `--rails` run: its number and each end's host and device.
    Rail { rail: usize, a: RailEnd, b: RailEnd },
    /// Anything else (a switch, a leaf, `fabric`, `routes`), as written.
    Text(String),
}

/// One end of a rail: the host and the device there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RailEnd {
    pub host: String,
    pub device: String,
}

/// What kind of thing a mesh's suspect is (a `mesh.suspect` finding's kind): a node, a link, the
/// cluster's settings, a leaf switch, a leaf's uplinks, one rail of a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuspectKind {
    Node,
    Link,
    Config,
    /// A leaf switch: its endpoints are bad with everyone, inside the leaf too.
    Switch,
    /// A leaf's uplinks (to the spines): its endpoints are bad with every other leaf, fine
    /// with each other.
    Uplink,
    /// `mesh --rails`: one NIC of a host (`HOST/DEV`) bad while the host's other rails are
    /// fine: that NIC, its cable or its leaf port (every rail bad is the `node`).
    Rail,
}

impl SuspectKind {
    /// The kind as the document writes it.
    pub fn name(self) -> &'static str {
        match self {
            SuspectKind::Node => "node",
            SuspectKind::Link => "link",
            SuspectKind::Config => "config",
            SuspectKind::Switch => "switch",
            SuspectKind::Uplink => "uplink",
            SuspectKind::Rail => "rail",
        }
    }
}

impl Subject {
    pub fn device(name: impl Into<String>) -> Subject {
        Subject::Device(name.into())
    }

    pub fn port(device: impl Into<String>, port: u32) -> Subject {
        Subject::Port { device: device.into(), port }
    }

    pub fn pair(a: impl Into<String>, b: impl Into<String>) -> Subject {
        Subject::Pair { a: a.into(), b: b.into() }
    }

    pub fn rail(rail: usize, a: (&str, &str), b: (&str, &str)) -> Subject {
        let end = |(host, device): (&str, &str)| RailEnd { host: host.into(), device: device.into() };
        Subject::Rail { rail, a: end(a), b: end(b) }
    }

    /// The device a device's or a port's subject names.
    pub fn device_name(&self) -> Option<&str> {
        match self {
            Subject::Device(d) | Subject::Port { device: d, .. } => Some(d),
            _ => None,
        }
    }

    /// A subject as a document writes it, in the variant code would make of it.
    pub fn parse(text: &str) -> Subject {
        if text == "node" {
            return Subject::Node;
        }
        if let Some(rail) = parse_rail(text) {
            return rail;
        }
        if let Some((a, b)) = text.split_once(" <-> ") {
            if !a.is_empty() && !b.is_empty() && !b.contains(" <-> ") {
                return Subject::pair(a, b);
            }
        }
        if is_pci_address(text) {
            return Subject::Function(text.into());
        }
        if let Some((device, port)) = text.rsplit_once('/') {
            if let Ok(port) = port.parse::<u32>() {
                if is_device_name(device) && port.to_string() == port_text(text) {
                    return Subject::port(device, port);
                }
            }
        }
        if is_device_name(text) {
            return Subject::Device(text.into());
        }
        Subject::Text(text.into())
    }
}

/// The digits after the last `/`, as written (a port written `01` is no port number).
fn port_text(text: &str) -> &str {
    text.rsplit_once('/').map_or("", |(_, p)| p)
}

/// A device name as the kernel gives one (`mlx5_0`, `rxe0`, `bnxt_re1`): letters, digits and
/// `_`, starting with a letter.
fn is_device_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic()) && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') && text.len() <= 64
}

/// `DDDD:BB:DD.F` in hex.
fn is_pci_address(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && b.iter().enumerate().all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

/// `rail K (HOST DEV <-> HOST DEV)`.
fn parse_rail(text: &str) -> Option<Subject> {
    let rest = text.strip_prefix("rail ")?;
    let (number, rest) = rest.split_once(" (")?;
    let inner = rest.strip_suffix(')')?;
    let (a, b) = inner.split_once(" <-> ")?;
    let (ah, ad) = a.split_once(' ')?;
    let (bh, bd) = b.split_once(' ')?;
    let rail = number.parse::<usize>().ok().filter(|n| n.to_string() == number)?;
    let subject = Subject::rail(rail, (ah, ad), (bh, bd));
    // Only where writing it again gives the same text (no spaces inside a host or device).
    subject.writes_as(text).then_some(subject)
}

impl Subject {
    /// Whether this subject is written as `text`, without writing it into a new string.
    pub fn writes_as(&self, text: &str) -> bool {
        /// Compares what is written against the rest of a text, chunk by chunk.
        struct Against<'a>(&'a str);
        impl fmt::Write for Against<'_> {
            fn write_str(&mut self, chunk: &str) -> fmt::Result {
                self.0 = self.0.strip_prefix(chunk).ok_or(fmt::Error)?;
                Ok(())
            }
        }
        let mut rest = Against(text);
        fmt::write(&mut rest, format_args!("{self}")).is_ok() && rest.0.is_empty()
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Subject::Node => "node".to_string(),
            Subject::Device(d) | Subject::Function(d) | Subject::Text(d) => return f.pad(d),
            Subject::Port { device, port } => format!("{device}/{port}"),
            Subject::Pair { a, b } => format!("{a} <-> {b}"),
            Subject::Rail { rail, a, b } => format!("rail {rail} ({} {} <-> {} {})", a.host, a.device, b.host, b.device),
        };
        f.pad(&text)
    }
}

impl From<&str> for Subject {
    fn from(text: &str) -> Subject {
        Subject::parse(text)
    }
}

impl From<String> for Subject {
    fn from(text: String) -> Subject {
        Subject::parse(&text)
    }
}

impl From<&String> for Subject {
    fn from(text: &String) -> Subject {
        Subject::parse(text)
    }
}

impl From<&Subject> for Subject {
    fn from(subject: &Subject) -> Subject {
        subject.clone()
    }
}

impl Serialize for Subject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Subject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Subject, D::Error> {
        Ok(Subject::parse(&String::deserialize(d)?))
    }
}

/// Tests name subjects as the documents write them.
impl PartialEq<&str> for Subject {
    fn eq(&self, other: &&str) -> bool {
        self.writes_as(other)
    }
}

impl PartialEq<str> for Subject {
    fn eq(&self, other: &str) -> bool {
        self.writes_as(other)
    }
}

#[cfg(test)]
mod tests {
    use super::Subject;

    #[test]
    fn each_shape_reads_back_as_the_variant_code_makes() {
        let cases = [
            ("node", Subject::Node),
            ("mlx5_0", Subject::device("mlx5_0")),
            ("mlx5_0/1", Subject::port("mlx5_0", 1)),
            ("0000:17:00.0", Subject::Function("0000:17:00.0".into())),
            ("n1/mlx5_0 <-> n2/mlx5_0", Subject::pair("n1/mlx5_0", "n2/mlx5_0")),
            ("rail 3 (nodeA mlx5_3 <-> nodeB mlx5_3)", Subject::rail(3, ("nodeA", "mlx5_3"), ("nodeB", "mlx5_3"))),
            ("tcp://127.0.0.1:4000", Subject::Text("tcp://127.0.0.1:4000".into())),
            ("leaf1[2]", Subject::Text("leaf1[2]".into())),
            ("mlx5_0/01", Subject::Text("mlx5_0/01".into())),
            ("n3/mlx5_0", Subject::Text("n3/mlx5_0".into())),
        ];
        for (text, subject) in cases {
            assert_eq!(Subject::parse(text), subject, "{text}");
            assert_eq!(subject.to_string(), text);
            let json = serde_json::to_string(&subject).unwrap();
            assert_eq!(serde_json::from_str::<Subject>(&json).unwrap(), subject);
        }
        assert_eq!(Subject::port("mlx5_0", 1).device_name(), Some("mlx5_0"));
        assert!(Subject::port("mlx5_0", 1).writes_as("mlx5_0/1") && !Subject::port("mlx5_0", 1).writes_as("mlx5_0/10"));
        assert!(!Subject::port("mlx5_0", 1).writes_as("mlx5_0/"));
        assert_eq!(format!("{:<10}|", Subject::port("mlx5_0", 1)), "mlx5_0/1  |");
    }

    #[test]
    fn hostile_text_is_kept_as_text() {
        for text in ["", "rail x (a b <-> c d)", "rail 1 (a b c <-> d e)", "a <-> b <-> c", "mlx5_0\n/1", "\u{1b}[2J"] {
            let s = Subject::parse(text);
            assert_eq!(s.to_string(), text, "{text:?} written back as it was");
        }
    }
}
