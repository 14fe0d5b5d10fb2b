//! Reading protocol lines with a size cap, so a hostile or broken peer cannot make us
//! buffer without bound.

use std::io::{self, BufRead};

/// Reads one line (without the newline). `Ok(None)` at end of stream. A line longer than
/// `max` is an error (the rest of the stream is not trusted after that).
pub fn read_line<R: BufRead>(reader: &mut R, max: usize) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return if buf.is_empty() { Ok(None) } else { Err(io::Error::new(io::ErrorKind::UnexpectedEof, "truncated message")) };
        }
        let (used, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => {
                buf.extend_from_slice(&available[..i]);
                (i + 1, true)
            }
            None => {
                buf.extend_from_slice(available);
                (available.len(), false)
            }
        };
        reader.consume(used);
        if buf.len() > max {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("message longer than {max} bytes")));
        }
        if done {
            return String::from_utf8(buf).map(Some).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "message is not UTF-8"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_limits() {
        let mut r = io::Cursor::new(b"one\ntwo\n".to_vec());
        assert_eq!(read_line(&mut r, 10).unwrap().as_deref(), Some("one"));
        assert_eq!(read_line(&mut r, 10).unwrap().as_deref(), Some("two"));
        assert_eq!(read_line(&mut r, 10).unwrap(), None);
        let mut long = io::Cursor::new(vec![b'x'; 100]);
        assert!(read_line(&mut long, 10).is_err());
        let mut truncated = io::Cursor::new(b"abc".to_vec());
        assert!(read_line(&mut truncated, 10).is_err());
        let mut bad = io::Cursor::new(vec![0xff, 0xfe, b'\n']);
        assert!(read_line(&mut bad, 10).is_err());
    }
}
