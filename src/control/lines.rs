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

/// Splits a byte stream that arrives in pieces (non-blocking reads) into lines, with the
/// same cap as [`read_line`]. Pure: the reactor pushes what it read and pops whole lines.
#[derive(Debug, Default)]
pub struct LineBuffer {
    buf: Vec<u8>,
}

impl LineBuffer {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole line (without its newline). `Err` for a line over `max` bytes, or one
    /// that is not UTF-8: the rest of the stream is not trusted after that.
    pub fn pop(&mut self, max: usize) -> io::Result<Option<String>> {
        match self.buf.iter().position(|&b| b == b'\n') {
            Some(i) if i > max => Err(io::Error::new(io::ErrorKind::InvalidData, format!("message longer than {max} bytes"))),
            Some(i) => {
                let rest = self.buf.split_off(i + 1);
                let mut line = std::mem::replace(&mut self.buf, rest);
                line.truncate(i);
                String::from_utf8(line).map(Some).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "message is not UTF-8"))
            }
            None if self.buf.len() > max => Err(io::Error::new(io::ErrorKind::InvalidData, format!("message longer than {max} bytes"))),
            None => Ok(None),
        }
    }

    /// Bytes of a line not yet ended (at end of stream: a truncated message).
    pub fn pending(&self) -> usize {
        self.buf.len()
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

    #[test]
    fn buffer_reassembles_lines_from_pieces() {
        let mut b = LineBuffer::default();
        b.push(b"on");
        assert_eq!(b.pop(10).unwrap(), None);
        b.push(b"e\ntwo\nthr");
        assert_eq!(b.pop(10).unwrap().as_deref(), Some("one"));
        assert_eq!(b.pop(10).unwrap().as_deref(), Some("two"));
        assert_eq!(b.pop(10).unwrap(), None);
        assert_eq!(b.pending(), 3);
        b.push(&[b'x'; 20]);
        assert!(b.pop(10).is_err());
        let mut bad = LineBuffer::default();
        bad.push(&[0xff, b'\n']);
        assert!(bad.pop(10).is_err());
    }

    #[test]
    fn buffer_agrees_with_read_line_on_any_split() {
        let stream = b"alpha\n\nbeta gamma\n\xc3\xa9t\xc3\xa9\nlast";
        for cut in 0..stream.len() {
            let mut b = LineBuffer::default();
            let mut got = Vec::new();
            for piece in [&stream[..cut], &stream[cut..]] {
                b.push(piece);
                while let Some(line) = b.pop(64).unwrap() {
                    got.push(line);
                }
            }
            assert_eq!(got, ["alpha", "", "beta gamma", "été"], "cut at {cut}");
            assert_eq!(b.pending(), 4);
        }
    }
}
