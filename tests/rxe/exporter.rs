//! `fabcheck exporter` live against rxe0: a device deleted while it runs (`rdma link delete`,
//! which the exporter must never block: it holds no verbs context between reads) shows as
//! gone, then back once re-created. rxe0 is re-created even when the test fails.

use super::{bin, require_rxe, sh, DEVICE, NETDEV};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Re-creates rxe0 on the way out, whatever happened.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        if !std::path::Path::new(&format!("/sys/class/infiniband/{DEVICE}")).exists() {
            let _ = sh(&format!("rdma link add {DEVICE} type rxe netdev {NETDEV}"));
        }
    }
}

fn scrape(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to the exporter");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
    out
}

fn wait_for(addr: SocketAddr, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let started = Instant::now();
    loop {
        let page = scrape(addr);
        if ok(&page) {
            return page;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{what} never showed:\n{page}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn a_device_deleted_while_the_exporter_runs_is_gone_then_back() {
    let _serial = require_rxe();
    let _restore = Restore;
    let mut child = Command::new(bin())
        .args(["exporter", "--listen", "127.0.0.1:0", "--interval", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the exporter");
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let _exporter = Running(child);
    let addr: SocketAddr =
        line.split("http://").nth(1).and_then(|s| s.split('/').next()).and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("{line}"));
    let present = format!("fabcheck_device_present{{device=\"{DEVICE}\"}} 1");
    let gone = format!("fabcheck_device_present{{device=\"{DEVICE}\"}} 0");
    let page = wait_for(addr, "rxe0 present", |p| p.contains(&present));
    assert!(page.contains(&format!("fabcheck_port_active{{device=\"{DEVICE}\",port=\"1\",netdev=\"{NETDEV}\"}} 1")), "{page}");
    // The exporter must not hold the device: the delete succeeds while it keeps reading.
    let out = sh(&format!("rdma link delete {DEVICE}"));
    assert!(out.status.success(), "rdma link delete {DEVICE}: {}", String::from_utf8_lossy(&out.stderr));
    let page = wait_for(addr, "rxe0 gone", |p| p.contains(&gone));
    assert!(page.contains("\nfabcheck_up 1\n") && page.contains("fabcheck_finding{id=\"devices.count\""), "{page}");
    let out = sh(&format!("rdma link add {DEVICE} type rxe netdev {NETDEV}"));
    assert!(out.status.success(), "rdma link add: {}", String::from_utf8_lossy(&out.stderr));
    wait_for(addr, "rxe0 back", |p| p.contains(&present) && p.contains(&format!("fabcheck_port_active{{device=\"{DEVICE}\"")));
}
