//! Device names and `NAME[:PORT]` as users write them (`--device`, endpoints).

use super::Unparsed;

/// Splits `NAME[:PORT]`.
pub fn parse_device_port(text: &str) -> Result<(String, Option<u32>), Unparsed> {
    let (name, port) = match text.rsplit_once(':') {
        Some((name, port)) => {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("'{text}': port must be a number, as in mlx5_0:1").into());
            }
            let port = match port.parse::<u32>() {
                Ok(p @ 1..=255) => p,
                _ => return Err(format!("'{text}': port {port} is out of range (1..255)").into()),
            };
            (name, Some(port))
        }
        None => (text, None),
    };
    if !valid_device_name(name) {
        return Err(format!("'{name}' is not a device name (letters, digits, '_' and '-', as `fabcheck devices` lists them)").into());
    }
    Ok((name.to_string(), port))
}

/// Device names as the kernel makes them: short, no path or shell characters.
pub fn valid_device_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_port() {
        assert_eq!(parse_device_port("mlx5_0:1").unwrap(), ("mlx5_0".into(), Some(1)));
        assert_eq!(parse_device_port("rxe0").unwrap(), ("rxe0".into(), None));
        assert!(parse_device_port("mlx5_0:x").is_err());
        assert!(parse_device_port("mlx5_0:0").unwrap_err().contains("out of range"));
        assert!(parse_device_port("mlx5_0:99999999999").unwrap_err().contains("out of range (1..255)"));
        assert!(parse_device_port("mlx5_0:256").unwrap_err().contains("out of range"));
        assert!(parse_device_port("mlx5_0:-1").unwrap_err().contains("must be a number"));
        assert!(parse_device_port("a;rm -rf /").is_err());
        assert!(parse_device_port("").is_err());
    }
}
