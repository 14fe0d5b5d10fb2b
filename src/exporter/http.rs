//! The exporter's HTTP, as pure functions: the bounded request reader and the answers. It
//! speaks just enough HTTP/1.x for a scraper: `GET /metrics` (and `HEAD`), `GET /` with a
//! link, one request per connection (`Connection: close`). Everything else is refused with
//! the status that says why, and every connection has a size and a time limit: the clock is
//! the caller's, so the limits are tested without waiting.

use super::page::Exposition;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a connection may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The request line and headers together; beyond it: 431 and the connection closed.
    pub max_request_bytes: usize,
    /// Header lines; beyond it: 431.
    pub max_headers: usize,
    /// From accept to the end of the headers (a slow client is closed: 408).
    pub request_time: Duration,
    /// From accept to the last byte of the answer (a client that does not read is dropped).
    pub connection_time: Duration,
    /// From the answer being ready to its last byte: a client that asks and does not read is
    /// dropped (issue #46 item 3: 64 of them held every connection for `connection_time`).
    pub write_time: Duration,
    /// Connections held at once; a new one beyond it evicts the one stuck longest (see
    /// [`Conn::stuck_since`]), so idle sockets and clients that never read cannot starve the
    /// scraper.
    pub max_connections: usize,
    /// Connections held at once from one address; a new one beyond it evicts that address's
    /// connection stuck longest.
    pub max_per_address: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_bytes: 8 << 10,
            max_headers: 64,
            request_time: Duration::from_secs(5),
            connection_time: Duration::from_secs(15),
            write_time: Duration::from_secs(10),
            max_connections: 64,
            max_per_address: 8,
        }
    }
}

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Metrics(Exposition),
    Index,
}

/// An HTTP status the exporter answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    HeadersTooLarge,
}

impl Status {
    pub fn line(self) -> &'static str {
        match self {
            Status::Ok => "200 OK",
            Status::BadRequest => "400 Bad Request",
            Status::NotFound => "404 Not Found",
            Status::MethodNotAllowed => "405 Method Not Allowed",
            Status::RequestTimeout => "408 Request Timeout",
            Status::HeadersTooLarge => "431 Request Header Fields Too Large",
        }
    }
}

/// The reader's verdict on the bytes received so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole request yet, and nothing wrong so far.
    Incomplete,
    Request {
        route: Route,
        head_only: bool,
    },
    Refused(Status),
}

/// Reads one request from the bytes received so far.
pub fn parse(buf: &[u8], limits: &Limits) -> Parsed {
    let Some(end) = head_end(buf) else {
        let lines = buf.iter().filter(|b| **b == b'\n').count();
        if buf.len() > limits.max_request_bytes || lines > limits.max_headers + 1 {
            return Parsed::Refused(Status::HeadersTooLarge);
        }
        return Parsed::Incomplete;
    };
    if end > limits.max_request_bytes {
        return Parsed::Refused(Status::HeadersTooLarge);
    }
    let Ok(head) = std::str::from_utf8(&buf[..end]) else { return Parsed::Refused(Status::BadRequest) };
    let mut lines = head.lines().map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines.next().unwrap_or("");
    let headers: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    if headers.len() > limits.max_headers {
        return Parsed::Refused(Status::HeadersTooLarge);
    }
    let parts: Vec<&str> = request_line.split(' ').collect();
    let [method, target, version] = parts[..] else { return Parsed::Refused(Status::BadRequest) };
    if !version.starts_with("HTTP/1.") || headers.iter().any(|h| !h.contains(':') || h.starts_with([' ', '\t'])) {
        return Parsed::Refused(Status::BadRequest);
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Parsed::Refused(Status::MethodNotAllowed),
    };
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    let route = match path {
        "/metrics" => Route::Metrics(exposition(&headers)),
        "/" => Route::Index,
        _ => return Parsed::Refused(Status::NotFound),
    };
    Parsed::Request { route, head_only }
}

/// Where the headers end (the index just past the blank line), if they have.
fn head_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// OpenMetrics when the scraper's `Accept` names it (Prometheus asks for it first), else the
/// text format.
fn exposition(headers: &[&str]) -> Exposition {
    let asks = headers
        .iter()
        .filter_map(|h| h.split_once(':'))
        .any(|(name, value)| name.trim().eq_ignore_ascii_case("accept") && value.to_ascii_lowercase().contains("application/openmetrics-text"));
    if asks {
        Exposition::OpenMetrics
    } else {
        Exposition::Text
    }
}

/// The finished pages a scrape is answered from (both formats, written by each read).
#[derive(Debug, Clone)]
pub struct Pages {
    pub text: Arc<str>,
    pub openmetrics: Arc<str>,
}

/// An answer on its way out: the head, then a body shared with the page snapshot.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: Status,
    pub head: Vec<u8>,
    pub body: Arc<str>,
}

impl Response {
    /// Bytes in all, head and body.
    pub fn total_len(&self) -> usize {
        self.head.len() + self.body.len()
    }

    /// The bytes from `offset` on, head first.
    pub fn chunk(&self, offset: usize) -> &[u8] {
        if offset < self.head.len() {
            &self.head[offset..]
        } else {
            &self.body.as_bytes()[(offset - self.head.len()).min(self.body.len())..]
        }
    }
}

const INDEX: &str = "<!DOCTYPE html>\n<html><head><title>fabcheck exporter</title></head>\n<body><h1>fabcheck exporter</h1>\n<p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

/// The answer to what the reader found.
pub fn respond(parsed: Parsed, pages: &Pages) -> Response {
    match parsed {
        Parsed::Request { route: Route::Metrics(format), head_only } => {
            let body = match format {
                Exposition::Text => Arc::clone(&pages.text),
                Exposition::OpenMetrics => Arc::clone(&pages.openmetrics),
            };
            answer(Status::Ok, format.content_type(), body, head_only)
        }
        Parsed::Request { route: Route::Index, head_only } => answer(Status::Ok, "text/html; charset=utf-8", Arc::from(INDEX), head_only),
        Parsed::Refused(status) => refuse(status),
        Parsed::Incomplete => refuse(Status::BadRequest),
    }
}

/// A refusal, its reason in the body.
pub fn refuse(status: Status) -> Response {
    answer(status, "text/plain; charset=utf-8", Arc::from(refusal(status)), false)
}

fn answer(status: Status, content_type: &str, body: Arc<str>, head_only: bool) -> Response {
    let allow = if status == Status::MethodNotAllowed { "Allow: GET, HEAD\r\n" } else { "" };
    let head =
        format!("HTTP/1.1 {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n", status.line(), body.len());
    Response { status, head: head.into_bytes(), body: if head_only { Arc::from("") } else { body } }
}

fn refusal(status: Status) -> String {
    let why = match status {
        Status::NotFound => "fabcheck exporter serves /metrics only",
        Status::MethodNotAllowed => "fabcheck exporter answers GET and HEAD only",
        Status::HeadersTooLarge => "request headers too large or too many",
        Status::RequestTimeout => "the request did not arrive in time",
        Status::BadRequest | Status::Ok => "not an HTTP/1.x request",
    };
    format!("{} {why}\n", status.line())
}

/// An answer on its way: the bytes sent so far, when it was ready, when bytes last went out.
#[derive(Debug)]
struct Sending {
    response: Response,
    sent: usize,
    ready: Instant,
    progress: Instant,
}

/// One connection's state: bytes in until a request (or a refusal), then the answer out.
#[derive(Debug)]
pub struct Conn {
    opened: Instant,
    received: Vec<u8>,
    answer: Option<Sending>,
}

/// What the connection wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Read,
    Write,
    Close,
}

impl Conn {
    pub fn new(now: Instant) -> Self {
        Conn { opened: now, received: Vec::new(), answer: None }
    }

    pub fn opened(&self) -> Instant {
        self.opened
    }

    /// Since when it has been waiting on its client: from accept while its request is not in,
    /// from the last bytes that went out once it is answered. A scraper is served the moment
    /// its request is in, so the connection stuck longest is never a scraper's.
    pub fn stuck_since(&self) -> Instant {
        self.answer.as_ref().map_or(self.opened, |a| a.progress)
    }

    /// Whether a whole request (or a refusal) is in, so it is no longer an idle socket.
    pub fn answered(&self) -> bool {
        self.answer.is_some()
    }

    /// Takes bytes the client sent at `now`; `pages` is asked for only once a request is
    /// complete.
    pub fn receive(&mut self, bytes: &[u8], limits: &Limits, now: Instant, pages: impl FnOnce() -> Pages) {
        if self.answer.is_some() {
            return;
        }
        let room = (limits.max_request_bytes + 1).saturating_sub(self.received.len());
        self.received.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let parsed = parse(&self.received, limits);
        if parsed != Parsed::Incomplete {
            self.received = Vec::new();
            self.answer = Some(Sending { response: respond(parsed, &pages()), sent: 0, ready: now, progress: now });
        }
    }

    /// The client closed its side: a partial request gets no answer.
    pub fn end_of_input(&mut self) -> Want {
        if self.answer.is_some() {
            Want::Write
        } else {
            Want::Close
        }
    }

    /// The bytes still to send.
    pub fn pending(&self) -> &[u8] {
        match &self.answer {
            Some(a) => a.response.chunk(a.sent),
            None => &[],
        }
    }

    /// Records `n` bytes sent at `now`.
    pub fn sent(&mut self, n: usize, now: Instant) {
        if let Some(a) = &mut self.answer {
            a.sent += n;
            if n > 0 {
                a.progress = now;
            }
        }
    }

    /// The status of the answer, once there is one.
    pub fn status(&self) -> Option<Status> {
        self.answer.as_ref().map(|a| a.response.status)
    }

    /// What to do with the connection at `now`: a client whose request is not in within
    /// `request_time` is answered 408, one that has not taken its answer within `write_time`
    /// of it being ready, or within `connection_time` of accept, is dropped.
    pub fn tick(&mut self, now: Instant, limits: &Limits) -> Want {
        let age = now.saturating_duration_since(self.opened);
        if self.answer.is_none() && age > limits.request_time {
            self.received = Vec::new();
            self.answer = Some(Sending { response: refuse(Status::RequestTimeout), sent: 0, ready: now, progress: now });
        }
        match &self.answer {
            Some(a) if a.sent >= a.response.total_len() => Want::Close,
            Some(_) if age > limits.connection_time => Want::Close,
            Some(a) if now.saturating_duration_since(a.ready) > limits.write_time => Want::Close,
            Some(_) => Want::Write,
            None => Want::Read,
        }
    }
}

/// Which held connection a new one from `from` replaces, given each held one's address and
/// [`Conn::stuck_since`]: none while there is room; at the per-address cap the one of that
/// address stuck longest; at the overall cap the one stuck longest of all. A connection is
/// always taken: what is evicted is what waited longest on its client, never a scrape being
/// served.
pub fn make_room(held: &[(std::net::IpAddr, Instant)], from: std::net::IpAddr, limits: &Limits) -> Option<usize> {
    let longest = |same_address: bool| {
        held.iter().enumerate().filter(|(_, (ip, _))| !same_address || *ip == from).min_by_key(|(_, (_, since))| *since).map(|(i, _)| i)
    };
    if held.iter().filter(|(ip, _)| *ip == from).count() >= limits.max_per_address {
        return longest(true);
    }
    if held.len() >= limits.max_connections {
        return longest(false);
    }
    None
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
