//! Reading a connection's hello within one deadline counted from accept (issue #27 item 5).
//!
//! A per-read timeout let a client that dribbles one byte every few seconds hold a slot for
//! hours; here every read is given only what is left of the deadline, so a hello that is not
//! complete `limit` after accept is refused however it arrives. The clock is injected: the
//! deadline is tested with a fake channel and a fake clock, no socket, no sleeping.

use std::io::{self, BufRead, BufReader, ErrorKind, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A channel whose reads can be bounded in time (a socket; a fake in tests).
pub trait TimedRead: Read {
    fn set_read_deadline(&mut self, left: Duration) -> io::Result<()>;
}

impl TimedRead for TcpStream {
    fn set_read_deadline(&mut self, left: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(left.max(Duration::from_millis(1))))
    }
}

/// Why no hello line arrived.
#[derive(Debug)]
pub enum HelloError {
    /// The peer closed before a whole line.
    Closed,
    /// The deadline (counted from accept) passed first.
    Late,
    /// Longer than the limit, or not UTF-8.
    Invalid(String),
    Io(io::Error),
}

/// Reads the first line, giving up `limit` after `accepted` by `now()`'s clock. Bytes after
/// the line stay in `reader` for the session.
pub fn read_hello<R: TimedRead>(
    reader: &mut BufReader<R>,
    accepted: Instant,
    limit: Duration,
    max: usize,
    mut now: impl FnMut() -> Instant,
) -> Result<String, HelloError> {
    let deadline = crate::sys::time::deadline(accepted, limit);
    let mut line = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(now());
        if left.is_zero() {
            return Err(HelloError::Late);
        }
        reader.get_mut().set_read_deadline(left).map_err(HelloError::Io)?;
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return Err(HelloError::Late),
            Err(e) => return Err(HelloError::Io(e)),
        };
        if available.is_empty() {
            return Err(HelloError::Closed);
        }
        let (used, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..used]);
        reader.consume(used + usize::from(done));
        if line.len() > max {
            return Err(HelloError::Invalid(format!("message longer than {max} bytes")));
        }
        if done {
            return String::from_utf8(line).map_err(|_| HelloError::Invalid("message is not UTF-8".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Hands out one byte per read, each `gap` of fake time after the last, and records the
    /// deadline each read was given.
    struct Dribble {
        bytes: Vec<u8>,
        at: usize,
        clock: Rc<Cell<Instant>>,
        gap: Duration,
        given: Vec<Duration>,
    }

    impl Read for Dribble {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let left = *self.given.last().unwrap();
            if self.gap > left {
                // The socket's timeout fires first.
                self.clock.set(self.clock.get() + left);
                return Err(io::Error::new(ErrorKind::WouldBlock, "timed out"));
            }
            self.clock.set(self.clock.get() + self.gap);
            let Some(&b) = self.bytes.get(self.at) else { return Ok(0) };
            self.at += 1;
            buf[0] = b;
            Ok(1)
        }
    }

    impl TimedRead for Dribble {
        fn set_read_deadline(&mut self, left: Duration) -> io::Result<()> {
            self.given.push(left);
            Ok(())
        }
    }

    fn dribble(bytes: &[u8], gap: Duration) -> (BufReader<Dribble>, Rc<Cell<Instant>>) {
        let clock = Rc::new(Cell::new(Instant::now()));
        let d = Dribble { bytes: bytes.to_vec(), at: 0, clock: Rc::clone(&clock), gap, given: Vec::new() };
        (BufReader::with_capacity(1, d), clock)
    }

    #[test]
    fn one_byte_every_three_seconds_is_refused_at_the_deadline() {
        // Regression (issue #27 item 5): with a 5 s per-read timeout this client held its slot
        // for 4096 × 3 s, about 3.4 h; now it is refused 5 s after accept.
        let hello = b"{\"v\":1,\"type\":\"hello\",\"token\":null}\n".repeat(100);
        let (mut r, clock) = dribble(&hello, Duration::from_secs(3));
        let accepted = clock.get();
        let got = read_hello(&mut r, accepted, Duration::from_secs(5), 4096, || clock.get());
        assert!(matches!(got, Err(HelloError::Late)), "{got:?}");
        assert!(clock.get() - accepted <= Duration::from_secs(5), "refused at the deadline, not later");
        let given = &r.get_ref().given;
        assert_eq!(given[0], Duration::from_secs(5));
        assert_eq!(given[1], Duration::from_secs(2), "each read gets only what is left");
        assert_eq!(r.get_ref().at, 1, "one byte read before the deadline");
    }

    #[test]
    fn a_prompt_hello_is_read_and_what_follows_is_kept() {
        let (mut r, clock) = dribble(b"hello\nnext\n", Duration::from_millis(10));
        let accepted = clock.get();
        assert_eq!(read_hello(&mut r, accepted, Duration::from_secs(5), 4096, || clock.get()).unwrap(), "hello");
        let mut rest = String::new();
        r.read_line(&mut rest).unwrap();
        assert_eq!(rest, "next\n");
    }

    #[test]
    fn too_long_closed_and_not_utf8() {
        let (mut r, clock) = dribble(&[b'x'; 20], Duration::ZERO);
        assert!(matches!(read_hello(&mut r, clock.get(), Duration::from_secs(5), 10, || clock.get()), Err(HelloError::Invalid(_))));
        let (mut r, clock) = dribble(b"abc", Duration::ZERO);
        assert!(matches!(read_hello(&mut r, clock.get(), Duration::from_secs(5), 10, || clock.get()), Err(HelloError::Closed)));
        let (mut r, clock) = dribble(&[0xff, b'\n'], Duration::ZERO);
        assert!(matches!(read_hello(&mut r, clock.get(), Duration::from_secs(5), 10, || clock.get()), Err(HelloError::Invalid(_))));
    }
}
