//! The agent over stdio refuses malformed, wrong-version and oversized messages with an
//! error line and exits, instead of hanging or crashing.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn agent_exchange(input: &[u8]) -> (String, Option<i32>) {
    let mut child =
        Command::new(env!("CARGO_BIN_EXE_fabcheck")).arg("agent").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("agent did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    (out, status)
}

#[test]
fn malformed_messages_are_refused() {
    for bad in [
        &b"this is not json\n"[..],
        b"{\"v\":99,\"type\":\"hello\",\"token\":null}\n",
        b"{\"v\":1,\"type\":\"format_disk\"}\n",
        b"{\"v\":1,\"type\":\"prepare\",\"target\":{},\"spec\":{\"size\":\"big\"}}\n",
        b"\xff\xfe\n",
    ] {
        let (out, code) = agent_exchange(bad);
        assert!(out.contains("\"type\":\"error\""), "{:?} -> {out}", String::from_utf8_lossy(bad));
        assert!(code.is_some());
    }
    let (out, _) = agent_exchange(b"{\"v\":99,\"type\":\"hello\",\"token\":null}\n");
    assert!(out.contains("version"), "{out}");
}

#[test]
fn oversized_and_truncated_messages_end_the_session() {
    let mut huge = vec![b'x'; (1 << 20) + 10];
    huge.push(b'\n');
    let (out, code) = agent_exchange(&huge);
    assert!(out.is_empty() || out.contains("error"), "{out}");
    assert!(code.is_some());
    let (_, code) = agent_exchange(b"{\"v\":1,\"type\":\"hel");
    assert!(code.is_some());
}

#[test]
fn hello_and_bye() {
    let (out, code) = agent_exchange(b"{\"v\":1,\"type\":\"hello\",\"token\":null}\n{\"v\":1,\"type\":\"bye\"}\n");
    assert!(out.contains("\"type\":\"hello\"") && out.contains("\"type\":\"bye\""), "{out}");
    assert_eq!(code, Some(0));
}

#[test]
fn an_invalid_test_spec_is_refused_by_the_agent() {
    let prepare = br#"{"v":1,"type":"prepare","target":{"device":null,"port":null,"gid_index":null},"spec":{"test":"write_bw","role":"active","size":0,"iters":10,"warmup":0,"duration_ms":null,"qps":1,"tx_depth":128,"cq_mod":16,"post_list":4,"stall_timeout_ms":1000}}"#;
    let mut input = b"{\"v\":1,\"type\":\"hello\",\"token\":null}\n".to_vec();
    input.extend_from_slice(prepare);
    input.extend_from_slice(b"\n{\"v\":1,\"type\":\"bye\"}\n");
    let (out, _) = agent_exchange(&input);
    assert!(out.contains("size must be at least 1 byte"), "{out}");
}
