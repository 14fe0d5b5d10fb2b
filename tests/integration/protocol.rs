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

/// The agent's output as JSON lines, each checked to be an object with protocol version 1.
fn replies(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"));
            assert_eq!(v["v"], 1, "{l}");
            v
        })
        .collect()
}

/// Exactly one reply, an `error` whose cause starts with `cause`, with a remedy.
fn assert_refused(input: &[u8], cause: &str) {
    let (out, code) = agent_exchange(input);
    let got = replies(&out);
    let shown = String::from_utf8_lossy(&input[..input.len().min(80)]).into_owned();
    assert_eq!(got.len(), 1, "{shown:?} -> {out}");
    assert_eq!(got[0]["type"], "error", "{shown:?} -> {out}");
    let text = got[0]["cause"].as_str().unwrap_or_default();
    assert!(text.starts_with(&format!("agent refused a message: {cause}")), "{shown:?}: cause {text:?}, want {cause:?}");
    assert!(got[0]["remedy"].as_str().is_some_and(|r| !r.is_empty()), "{out}");
    assert!(code.is_some(), "{shown:?}: the agent was killed by a signal");
}

#[test]
fn malformed_messages_are_refused() {
    assert_refused(b"this is not json\n", "malformed message: expected ident");
    assert_refused(b"{\"v\":99,\"type\":\"hello\",\"token\":null}\n", "peer speaks protocol version 99, this fabcheck speaks 1");
    assert_refused(b"{\"v\":1,\"type\":\"format_disk\"}\n", "malformed message: unknown variant `format_disk`");
    assert_refused(b"{\"v\":1,\"type\":\"prepare\",\"target\":{},\"spec\":{\"size\":\"big\"}}\n", "malformed message: invalid type: string \"big\"");
    assert_refused(b"\xff\xfe\n", "message is not UTF-8");
}

#[test]
fn oversized_and_truncated_messages_end_the_session() {
    let mut huge = vec![b'x'; (1 << 20) + 10];
    huge.push(b'\n');
    assert_refused(&huge, "message longer than 1048576 bytes");
    // Cut off mid-line, then end of stream: nothing to answer, and the agent could not finish
    // its session: exit 2 (its stderr says why, see hardening::an_agent_given_a_truncated_message_says_why).
    let (out, code) = agent_exchange(b"{\"v\":1,\"type\":\"hel");
    assert_eq!(out, "", "a truncated message gets no reply");
    assert_eq!(code, Some(2));
}

#[test]
fn hello_and_bye() {
    let (out, code) = agent_exchange(b"{\"v\":1,\"type\":\"hello\",\"token\":null}\n{\"v\":1,\"type\":\"bye\"}\n");
    let got = replies(&out);
    assert_eq!(got.len(), 2, "{out}");
    assert_eq!(got[0]["type"], "hello", "{out}");
    assert!(got[0]["agent"].as_str().is_some_and(|a| a.starts_with("fabcheck")), "{out}");
    assert!(got[0]["host"].as_str().is_some_and(|h| !h.is_empty()), "{out}");
    assert_eq!(got[1], serde_json::json!({"v": 1, "type": "bye"}), "{out}");
    assert_eq!(code, Some(0));
}

#[test]
fn an_invalid_test_spec_is_refused_by_the_agent() {
    let prepare = br#"{"v":1,"type":"prepare","target":{"device":null,"port":null,"gid_index":null},"spec":{"test":"write_bw","role":"active","size":0,"iters":10,"warmup":0,"duration_ms":null,"qps":1,"tx_depth":128,"cq_mod":16,"post_list":4,"stall_timeout_ms":1000}}"#;
    let mut input = b"{\"v\":1,\"type\":\"hello\",\"token\":null}\n".to_vec();
    input.extend_from_slice(prepare);
    input.extend_from_slice(b"\n{\"v\":1,\"type\":\"bye\"}\n");
    let (out, _) = agent_exchange(&input);
    let got = replies(&out);
    let kinds: Vec<&str> = got.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["hello", "error", "bye"], "{out}");
    assert!(got[1]["cause"].as_str().unwrap().contains("size must be at least 1 byte"), "{out}");
}
