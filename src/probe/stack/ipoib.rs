//! An InfiniBand port's IPoIB interface (`ib0`, `ibp23s0`): up, addressed, and in the mode the
//! site runs (`/sys/class/net/IF/mode`: `datagram` or `connected`). `pair --cm` on InfiniBand
//! resolves its peer through it, and many NCCL/MPI bootstraps open their first socket on it.
//! Parsers are pure.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IpoibMode {
    Datagram,
    Connected,
}

impl IpoibMode {
    pub fn parse(text: &str) -> Option<IpoibMode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "datagram" => Some(IpoibMode::Datagram),
            "connected" => Some(IpoibMode::Connected),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IpoibMode::Datagram => "datagram",
            IpoibMode::Connected => "connected",
        }
    }
}

/// What was read of one port's IPoIB interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpoibState {
    /// The port it belongs to (`mlx5_0/1`).
    pub port: String,
    /// Empty when the port has no IPoIB interface.
    pub netdev: String,
    /// `operstate` is `up` (and the carrier, where known, is on).
    pub up: bool,
    pub operstate: String,
    pub mode: Option<IpoibMode>,
    /// Addresses other than IPv6 link-local; `None` when they could not be read (a bundle
    /// without `tools/ip-addr.txt`).
    pub addresses: Option<Vec<String>>,
}

/// The routable addresses of `netdev` in `ip -o addr show` output
/// (`4: ib0    inet 10.12.0.5/16 brd 10.12.255.255 scope global ib0\` ...).
pub fn addresses_in_ip_output(text: &str, netdev: &str) -> Vec<String> {
    text.lines()
        .take(65536)
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let _index = words.next()?;
            let name = words.next()?.trim_end_matches(':');
            let name = name.split('@').next().unwrap_or(name);
            if name != netdev {
                return None;
            }
            let family = words.next()?;
            let address = words.next()?;
            let routable = match family {
                "inet" => true,
                "inet6" => !address.to_ascii_lowercase().starts_with("fe80:"),
                _ => false,
            };
            routable.then(|| address.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP_O_ADDR: &str = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n\
1: lo    inet6 ::1/128 scope host \\       valid_lft forever preferred_lft forever\n\
4: ib0    inet 10.12.0.5/16 brd 10.12.255.255 scope global ib0\\       valid_lft forever preferred_lft forever\n\
4: ib0    inet6 fe80::ba3f:d203:a1:2b3c/64 scope link \\       valid_lft forever preferred_lft forever\n\
5: ib1    inet6 fe80::ba3f:d203:a1:2b3d/64 scope link \\       valid_lft forever preferred_lft forever\n";

    #[test]
    fn routable_addresses_only() {
        assert_eq!(addresses_in_ip_output(IP_O_ADDR, "ib0"), vec!["10.12.0.5/16".to_string()]);
        assert!(addresses_in_ip_output(IP_O_ADDR, "ib1").is_empty());
        assert!(addresses_in_ip_output(IP_O_ADDR, "ib2").is_empty());
        assert!(addresses_in_ip_output("garbage\n\n:\n", "ib0").is_empty());
    }

    #[test]
    fn modes() {
        assert_eq!(IpoibMode::parse("datagram\n"), Some(IpoibMode::Datagram));
        assert_eq!(IpoibMode::parse("connected"), Some(IpoibMode::Connected));
        assert_eq!(IpoibMode::parse("fast"), None);
    }
}
