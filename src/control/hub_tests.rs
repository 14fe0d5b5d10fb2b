//! The hub against a fake agent on a socket.

use super::*;
use std::io::{BufRead, BufReader, Write};

fn options(token: Option<String>) -> LaunchOptions {
    LaunchOptions {
        remote_fabcheck: "fabcheck".into(),
        token,
        connect_timeout: Duration::from_secs(5),
        launcher: Launcher::Ssh,
        k8s_selector: String::new(),
    }
}

#[test]
fn a_reopened_serve_link_says_hello_first_and_its_reply_is_not_a_conversations() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let token = "0123456789abcdef0123".to_string();
    let fake = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut lines = BufReader::new(stream.try_clone().unwrap()).lines();
        let first: Request = protocol::decode(&lines.next().unwrap().unwrap()).unwrap();
        let second: Request = protocol::decode(&lines.next().unwrap().unwrap()).unwrap();
        let mut w = stream;
        w.write_all(
            protocol::encode(&Reply::Hello { agent: "fake".into(), host: "n1".into(), rails: false, collective: false, member_paths: false })
                .as_bytes(),
        )
        .unwrap();
        w.write_all(protocol::encode(&Reply::Finished).as_bytes()).unwrap();
        (first, second)
    });
    let mut hub = Hub::new(options(Some(token.clone())));
    let id = hub.add(&HostSpec::Tcp { host: "127.0.0.1".into(), port }, "tcp://127.0.0.1");
    hub.send(id, &Request::Finish);
    let mut events = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    while events.is_empty() && Instant::now() < until {
        hub.wait(Duration::from_millis(50), &mut events);
    }
    let (first, second) = fake.join().unwrap();
    assert_eq!(first, Request::Hello { token: Some(token) });
    assert_eq!(second, Request::Finish);
    // The fake hangs up after its replies; the conversation's reply is the first event.
    assert!(matches!(events.first(), Some(HubEvent::Reply(_, r)) if **r == Reply::Finished), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, HubEvent::Reply(_, r) if matches!(**r, Reply::Hello { .. }))), "{events:?}");
}

#[test]
fn sending_only_queues_the_agent_is_reached_at_the_next_wait_and_a_discard_before_it_reaches_nobody() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut hub = Hub::new(options(None));
    let id = hub.add(&HostSpec::Tcp { host: "127.0.0.1".into(), port }, "tcp://127.0.0.1");
    hub.send(id, &Request::Finish);
    assert!(listener.accept().is_err(), "send connected: it should only queue");
    hub.discard(id);
    let mut events = Vec::new();
    hub.wait(Duration::from_millis(20), &mut events);
    assert!(events.is_empty(), "{events:?}");
    assert!(listener.accept().is_err(), "a link discarded before the wait was reached");

    hub.send(id, &Request::Finish);
    let until = Instant::now() + Duration::from_secs(20);
    let stream = loop {
        hub.wait(Duration::from_millis(20), &mut events);
        if let Ok((stream, _)) = listener.accept() {
            break stream;
        }
        assert!(Instant::now() < until, "the wait never reached the agent");
    };
    stream.set_nonblocking(false).unwrap();
    let mut lines = BufReader::new(stream).lines();
    let hello: Request = protocol::decode(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(hello, Request::Hello { token: None }, "the hello goes ahead of the queued request");
    // Both lines were queued before the connection opened, and are written together.
    let queued: Request = protocol::decode(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(queued, Request::Finish);
}
