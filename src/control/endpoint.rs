//! Endpoint specs as the contract writes them: `HOST[/DEVICE[:PORT]]`, where HOST is
//! `localhost`, `[user@]host` (ssh) or `tcp://host:port` (a running `fabcheck serve`).
//! Pure parsing; anything that could reach a shell or an ssh option is refused here.

use crate::model::Unparsed;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSpec {
    /// An agent started as a local child process.
    Local,
    /// An agent started over ssh, speaking over ssh's stdio.
    Ssh { user: Option<String>, host: String },
    /// A `fabcheck serve` already listening.
    Tcp { host: String, port: u16 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSpec {
    pub host: HostSpec,
    pub device: Option<String>,
    pub port: Option<u32>,
}

impl fmt::Display for HostSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostSpec::Local => write!(f, "localhost"),
            HostSpec::Ssh { user: Some(u), host } => write!(f, "{u}@{host}"),
            HostSpec::Ssh { user: None, host } => write!(f, "{host}"),
            HostSpec::Tcp { host, port } if host.contains(':') => write!(f, "tcp://[{host}]:{port}"),
            HostSpec::Tcp { host, port } => write!(f, "tcp://{host}:{port}"),
        }
    }
}

impl fmt::Display for EndpointSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.host)?;
        if let Some(d) = &self.device {
            write!(f, "/{d}")?;
            if let Some(p) = self.port {
                write!(f, ":{p}")?;
            }
        }
        Ok(())
    }
}

/// Parses an endpoint, refusing anything that is not plainly a host, device and port.
pub fn parse(text: &str) -> Result<EndpointSpec, Unparsed> {
    parse_with_tcp_port(text, None)
}

/// As [`parse`], with the port of a `tcp://HOST` endpoint that names none (perftest's -p).
pub fn parse_with_tcp_port(text: &str, tcp_port: Option<u16>) -> Result<EndpointSpec, Unparsed> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty endpoint".into());
    }
    let (host_part, device_part) = if let Some(rest) = text.strip_prefix("tcp://") {
        match rest.find('/') {
            Some(i) => (&text[..6 + i], Some(&rest[i + 1..])),
            None => (text, None),
        }
    } else {
        match text.split_once('/') {
            Some((h, d)) => (h, Some(d)),
            None => (text, None),
        }
    };
    let host = parse_host(host_part, tcp_port)?;
    let (device, port) = match device_part {
        None => (None, None),
        Some(d) => {
            let (name, port) = crate::model::parse_device_port(d).map_err(|e| format!("endpoint '{text}': {e}"))?;
            (Some(name), port)
        }
    };
    Ok(EndpointSpec { host, device, port })
}

fn parse_host(text: &str, default_port: Option<u16>) -> Result<HostSpec, Unparsed> {
    if let Some(rest) = text.strip_prefix("tcp://") {
        let default = default_port.map(|p| p.to_string());
        let (host, port) = match (rest.strip_prefix('['), default.as_deref()) {
            (Some(v6), default) => match (v6.split_once("]:"), v6.strip_suffix(']'), default) {
                (Some((h, p)), _, _) => (h, p),
                (None, Some(h), Some(p)) => (h, p),
                _ => return Err(format!("'{text}': write IPv6 as tcp://[addr]:port").into()),
            },
            // A bare IPv6 address has colons of its own: it needs brackets.
            (None, Some(p)) if !rest.contains(':') => (rest, p),
            (None, _) => {
                rest.rsplit_once(':').ok_or_else(|| format!("'{text}': tcp endpoints need a port, as in tcp://node07:18515 (or give -p PORT)"))?
            }
        };
        let port: u16 = port.parse().map_err(|_| format!("'{text}': '{port}' is not a port number"))?;
        if port == 0 {
            return Err(format!("'{text}': port 0 is not a port").into());
        }
        if !valid_hostname(host) && host.parse::<std::net::IpAddr>().is_err() {
            return Err(format!("'{text}': '{host}' is not a host name or address").into());
        }
        return Ok(HostSpec::Tcp { host: host.to_string(), port });
    }
    if text == "localhost" {
        return Ok(HostSpec::Local);
    }
    let (user, host) = match text.split_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, text),
    };
    if let Some(u) = user {
        if u.is_empty() || u.starts_with('-') || !u.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
            return Err(format!("'{text}': '{u}' is not a user name").into());
        }
    }
    if !valid_hostname(host) {
        return Err(format!("'{text}' is not a host name (letters, digits, '.', '-', '_'; no spaces or shell characters)").into());
    }
    Ok(HostSpec::Ssh { user: user.map(str::to_string), host: host.to_string() })
}

/// Host names and IPv4 addresses; never starting with '-' (it would read as an ssh option).
fn valid_hostname(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && !host.starts_with('-')
        && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse("localhost").unwrap(), EndpointSpec { host: HostSpec::Local, device: None, port: None });
        let e = parse("node07/mlx5_3:1").unwrap();
        assert_eq!(e.host, HostSpec::Ssh { user: None, host: "node07".into() });
        assert_eq!((e.device.as_deref(), e.port), (Some("mlx5_3"), Some(1)));
        let e = parse("alice@node07/mlx5_0").unwrap();
        assert_eq!(e.host, HostSpec::Ssh { user: Some("alice".into()), host: "node07".into() });
        let e = parse("tcp://10.0.0.5:18515/rxe0:1").unwrap();
        assert_eq!(e.host, HostSpec::Tcp { host: "10.0.0.5".into(), port: 18515 });
        assert_eq!(e.to_string(), "tcp://10.0.0.5:18515/rxe0:1");
        let e = parse("tcp://[::1]:9000").unwrap();
        assert_eq!(e.host, HostSpec::Tcp { host: "::1".into(), port: 9000 });
        assert_eq!(parse("localhost/rxe0").unwrap().device.as_deref(), Some("rxe0"));
    }

    #[test]
    fn refuses_shell_and_option_injection() {
        for bad in [
            "node;rm -rf /",
            "$(reboot)",
            "-oProxyCommand=evil",
            "node`id`",
            "a b",
            "tcp://host",
            "tcp://host:0",
            "tcp://host:x",
            "node/mlx5_0:x",
            "node/mlx5;0",
            "-l@node",
            "",
            "tcp://[::1:9000",
            "no|de",
        ] {
            assert!(parse(bad).is_err(), "{bad} accepted");
        }
    }
}
