use super::*;

fn pages() -> Pages {
    Pages { text: Arc::from("fabcheck_up 1\n"), openmetrics: Arc::from("fabcheck_up 1\n# EOF\n") }
}

/// Everything the connection has to send, as a socket taking it all would get it.
fn take_all(conn: &mut Conn) -> Vec<u8> {
    let mut out = Vec::new();
    while !conn.pending().is_empty() {
        let piece = conn.pending().to_vec();
        out.extend_from_slice(&piece);
        conn.sent(piece.len(), conn.opened());
    }
    out
}

fn answer_of(request: &[u8]) -> (Status, String) {
    let limits = Limits::default();
    let mut conn = Conn::new(Instant::now());
    conn.receive(request, &limits, conn.opened(), pages);
    let status = conn.status().expect("an answer");
    (status, String::from_utf8_lossy(&take_all(&mut conn)).into_owned())
}

#[test]
fn get_metrics_is_the_text_page() {
    let (status, out) = answer_of(b"GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: curl\r\n\r\n");
    assert_eq!(status, Status::Ok);
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), "{out}");
    assert!(out.contains("Content-Length: 14\r\n") && out.contains("Connection: close\r\n"), "{out}");
    assert!(out.ends_with("\r\n\r\nfabcheck_up 1\n"), "{out}");
}

#[test]
fn a_query_string_and_bare_newlines_are_fine() {
    assert_eq!(answer_of(b"GET /metrics?x=1 HTTP/1.0\n\n").0, Status::Ok);
}

#[test]
fn openmetrics_when_the_scraper_asks() {
    let (_, out) = answer_of(b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n");
    assert!(out.contains("Content-Type: application/openmetrics-text; version=1.0.0"), "{out}");
    assert!(out.ends_with("# EOF\n"), "{out}");
}

#[test]
fn head_gets_no_body() {
    let (status, out) = answer_of(b"HEAD /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(status, Status::Ok);
    assert!(out.ends_with("\r\n\r\n") && out.contains("Content-Length: 14"), "{out}");
}

#[test]
fn the_index_links_to_metrics() {
    let (status, out) = answer_of(b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(status, Status::Ok);
    assert!(out.contains("<a href=\"/metrics\">"), "{out}");
}

#[test]
fn post_and_other_methods_are_405_with_allow() {
    for method in ["POST", "PUT", "DELETE", "OPTIONS", "CONNECT", "get"] {
        let (status, out) = answer_of(format!("{method} /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc").as_bytes());
        assert_eq!(status, Status::MethodNotAllowed, "{method}");
        assert!(out.contains("Allow: GET, HEAD\r\n"), "{out}");
    }
}

#[test]
fn any_other_path_is_404() {
    for target in ["/../../etc/passwd", "/metrics/../../etc/shadow", "/%2e%2e/etc/passwd", "/metricsx", "//metrics", "http://evil/metrics", "*"] {
        assert_eq!(answer_of(format!("GET {target} HTTP/1.1\r\n\r\n").as_bytes()).0, Status::NotFound, "{target}");
    }
}

#[test]
fn garbage_is_400() {
    for request in [
        &b"GET /metrics\r\n\r\n"[..],
        b"GET /metrics SPDY/3\r\n\r\n",
        b"GET  /metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n",
        b"\xff\xfe\r\n\r\n",
    ] {
        assert_eq!(answer_of(request).0, Status::BadRequest, "{}", String::from_utf8_lossy(request));
    }
}

#[test]
fn an_oversized_request_is_431_before_it_ends() {
    let limits = Limits::default();
    let mut conn = Conn::new(Instant::now());
    conn.receive(b"GET /metrics HTTP/1.1\r\nX-Big: ", &limits, conn.opened(), pages);
    assert_eq!(conn.status(), None);
    // A megabyte of one header, in 4 KiB reads: refused as soon as the cap is passed, and
    // nothing beyond the cap is kept.
    let chunk = vec![b'a'; 4096];
    let mut reads = 0;
    while conn.status().is_none() {
        conn.receive(&chunk, &limits, conn.opened(), pages);
        reads += 1;
        assert!(reads <= 256);
    }
    assert_eq!(conn.status(), Some(Status::HeadersTooLarge));
    assert!(reads <= limits.max_request_bytes / chunk.len() + 1, "{reads} reads");
    assert!(conn.received.is_empty());
    // Further bytes are ignored; once the answer is out the connection closes.
    conn.receive(&chunk, &limits, conn.opened(), pages);
    take_all(&mut conn);
    assert_eq!(conn.tick(conn.opened(), &limits), Want::Close);
}

#[test]
fn too_many_headers_are_431() {
    let limits = Limits::default();
    let mut request = String::from("GET /metrics HTTP/1.1\r\n");
    for i in 0..=limits.max_headers {
        request.push_str(&format!("X-{i}: y\r\n"));
    }
    // Refused before the blank line arrives...
    let mut conn = Conn::new(Instant::now());
    conn.receive(request.as_bytes(), &limits, conn.opened(), pages);
    assert_eq!(conn.status(), Some(Status::HeadersTooLarge));
    // ...and with it; exactly the limit is fine.
    request.push_str("\r\n");
    assert_eq!(answer_of(request.as_bytes()).0, Status::HeadersTooLarge);
    let mut ok = String::from("GET /metrics HTTP/1.1\r\n");
    for i in 0..limits.max_headers {
        ok.push_str(&format!("X-{i}: y\r\n"));
    }
    ok.push_str("\r\n");
    assert_eq!(answer_of(ok.as_bytes()).0, Status::Ok);
}

#[test]
fn a_request_in_pieces_is_read_when_whole() {
    let limits = Limits::default();
    let mut conn = Conn::new(Instant::now());
    let mut asked = 0;
    for piece in [&b"GE"[..], b"T /metr", b"ics HTTP/1.1\r", b"\nHost: a\r\n", b"\r\n"] {
        conn.receive(piece, &limits, conn.opened(), || {
            asked += 1;
            pages()
        });
    }
    assert_eq!((conn.status(), asked), (Some(Status::Ok), 1));
}

#[test]
fn a_slow_client_is_answered_408_then_dropped() {
    let limits = Limits::default();
    let t0 = Instant::now();
    let mut conn = Conn::new(t0);
    conn.receive(b"GET /metrics HTTP/1.1\r\n", &limits, conn.opened(), pages);
    assert_eq!(conn.tick(t0 + limits.request_time, &limits), Want::Read);
    assert_eq!(conn.tick(t0 + limits.request_time + Duration::from_millis(1), &limits), Want::Write);
    assert_eq!(conn.status(), Some(Status::RequestTimeout));
    // A client that does not take its answer is dropped at the connection limit.
    assert_eq!(conn.tick(t0 + limits.connection_time, &limits), Want::Write);
    assert_eq!(conn.tick(t0 + limits.connection_time + Duration::from_millis(1), &limits), Want::Close);
}

#[test]
fn an_answer_is_sent_in_pieces_and_then_closed() {
    let limits = Limits::default();
    let t0 = Instant::now();
    let mut conn = Conn::new(t0);
    conn.receive(b"GET /metrics HTTP/1.1\r\n\r\n", &limits, conn.opened(), pages);
    let whole = {
        let mut copy = Conn::new(t0);
        copy.receive(b"GET /metrics HTTP/1.1\r\n\r\n", &limits, copy.opened(), pages);
        take_all(&mut copy)
    };
    assert!(whole.ends_with(b"fabcheck_up 1\n"));
    let mut got = Vec::new();
    while conn.tick(t0, &limits) == Want::Write {
        let piece = conn.pending()[..conn.pending().len().min(7)].to_vec();
        got.extend_from_slice(&piece);
        conn.sent(piece.len(), conn.opened());
    }
    assert_eq!(got, whole);
    assert_eq!(conn.tick(t0, &limits), Want::Close);
}

#[test]
fn a_client_that_hangs_up_early_gets_nothing() {
    let limits = Limits::default();
    let mut conn = Conn::new(Instant::now());
    conn.receive(b"GET /met", &limits, conn.opened(), pages);
    assert_eq!(conn.end_of_input(), Want::Close);
}

#[test]
fn a_client_that_asks_and_never_reads_is_dropped_at_the_write_time() {
    // Issue #46 item 3: 64 such clients held every connection for the whole connection time.
    let limits = Limits::default();
    let t0 = Instant::now();
    let mut conn = Conn::new(t0);
    conn.receive(b"GET /metrics HTTP/1.1\r\n\r\n", &limits, t0, pages);
    conn.sent(3, t0 + Duration::from_millis(10));
    assert_eq!(conn.stuck_since(), t0 + Duration::from_millis(10), "the last bytes that went out");
    assert_eq!(conn.tick(t0 + limits.write_time, &limits), Want::Write);
    assert_eq!(conn.tick(t0 + limits.write_time + Duration::from_millis(1), &limits), Want::Close);
    assert!(limits.write_time < limits.connection_time);
    // Before its request is in, a connection is stuck since it was accepted.
    let idle = Conn::new(t0);
    assert_eq!(idle.stuck_since(), t0);
}

#[test]
fn room_is_made_from_the_connection_stuck_longest_of_the_address_then_of_all() {
    let limits = Limits { max_connections: 4, max_per_address: 2, ..Limits::default() };
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let (a, b, c): (std::net::IpAddr, std::net::IpAddr, std::net::IpAddr) =
        ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap(), "127.0.0.1".parse().unwrap());
    assert_eq!(make_room(&[(a, at(5))], a, &limits), None, "room");
    // Address a is at its cap: its own connection stuck longest goes, not b's older one.
    assert_eq!(make_room(&[(b, at(1)), (a, at(9)), (a, at(5))], a, &limits), Some(2));
    // Everyone is at the overall cap: the one stuck longest of all goes.
    assert_eq!(make_room(&[(a, at(9)), (b, at(3)), (a, at(5)), (b, at(7))], c, &limits), Some(1));
}
