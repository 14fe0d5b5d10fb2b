//! `fabcheck exporter` against clients that ask for the page and never read it (issue #46
//! item 3): they are dropped, and scrapes go on being answered. Generous bounds on waits only.
//!
//! The exporter runs in a network namespace of its own whose TCP send buffers are 4 KiB, so
//! that its page is larger than what the kernel takes for a client at once, as a real node's
//! page is on a real network (on the host's loopback the buffers grow to megabytes, and a
//! client that never reads would not matter). The test's sockets are made in that namespace
//! by threads that joined it (`setns`).

use super::fixtures_dir;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// An exporter in a fresh network namespace with small send buffers, killed when dropped.
struct Isolated {
    child: Child,
    addr: SocketAddr,
}

impl Isolated {
    fn start(root: &Path) -> Isolated {
        let script = r#"ip link set lo up && sysctl -qw net.ipv4.tcp_wmem="4096 4096 4096" && exec "$0" "$@""#;
        let mut child = Command::new("unshare")
            .args(["-n", "--", "sh", "-c", script, env!("CARGO_BIN_EXE_fabcheck")])
            .args(["exporter", "--listen", "127.0.0.1:0", "--interval", "1", "--sysfs-root"])
            .arg(root)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the exporter in a network namespace (unshare, util-linux)");
        let addr = super::exporter::listening_address(&mut child, Duration::from_secs(30));
        Isolated { addr, child }
    }

    /// Runs `f` on a thread that joined the exporter's network namespace.
    fn inside<T: Send + 'static>(&self, f: impl FnOnce(SocketAddr) -> T + Send + 'static) -> std::thread::JoinHandle<T> {
        let ns = std::fs::File::open(format!("/proc/{}/ns/net", self.child.id())).expect("the exporter's network namespace");
        let addr = self.addr;
        std::thread::spawn(move || {
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET).expect("join the exporter's network namespace");
            f(addr)
        })
    }
}

impl Drop for Isolated {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A node with 40 adapters: a page (80 KB) several times what the kernel takes for a client.
fn large_node() -> PathBuf {
    let root = std::env::temp_dir().join(format!("fabcheck-exporter-{}-large-node", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let copy = |from: &Path, to: &Path| assert!(Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap().success());
    copy(&fixtures_dir().join("hdr-ib-healthy"), &root);
    let ib = root.join("class/infiniband");
    for k in 2..40 {
        copy(&ib.join("mlx5_0"), &ib.join(format!("mlx5_{k}")));
    }
    root
}

/// A client that asks for the page with a receive buffer of a few bytes and never reads.
fn stalled_client(addr: SocketAddr) -> Option<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    socket.set_recv_buffer_size(1024).ok()?;
    socket.connect(&addr.into()).ok()?;
    let mut stream: TcpStream = socket.into();
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").ok()?;
    Some(stream)
}

/// One scrape: the page, when a whole 200 answer arrived within `limit`.
fn scrape(addr: SocketAddr, limit: Duration) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, limit).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").ok()?;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8(out).ok()?;
    (text.starts_with("HTTP/1.1 200 OK") && text.ends_with("\n")).then_some(text)
}

#[test]
fn clients_that_never_read_do_not_hold_off_the_scrapes() {
    // Regression (issue #46 item 3): 64 clients that asked for the page and never read it held
    // every connection, and 0 of 10 scrapes were answered for 15 s at a time.
    fabcheck::sys::io::raise_open_files(8192);
    let root = large_node();
    let exporter = Isolated::start(&root);
    let first = exporter.inside(|addr| {
        let started = Instant::now();
        // The first read of the node done: the page is the node's, 80 KB, not the short one
        // served before it.
        while !scrape(addr, Duration::from_secs(10)).is_some_and(|page| page.contains("\nfabcheck_up 1\n") && page.len() > 64 << 10) {
            assert!(started.elapsed() < Duration::from_secs(60), "the exporter never served the node's page");
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    first.join().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (first_round, started) = mpsc::channel();
    let attacker = {
        let stop = Arc::clone(&stop);
        exporter.inside(move |addr| {
            let mut opened = 0usize;
            let mut held: std::collections::VecDeque<(Instant, TcpStream)> = Default::default();
            while !stop.load(Ordering::SeqCst) {
                // 64 more every half second, each kept (unread) for 20 s: more than the exporter
                // held one for, so every connection it lets go is taken again at once.
                let now = Instant::now();
                while held.front().is_some_and(|(t, _)| now.duration_since(*t) > Duration::from_secs(20)) {
                    held.pop_front();
                }
                let fresh: Vec<TcpStream> = (0..64).filter_map(|_| stalled_client(addr)).collect();
                opened += fresh.len();
                held.extend(fresh.into_iter().map(|s| (now, s)));
                let _ = first_round.send(());
                std::thread::sleep(Duration::from_millis(500));
            }
            opened
        })
    };
    started.recv().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let scrapes = exporter.inside(|addr| {
        let started = Instant::now();
        let answered = (0..10).filter(|_| scrape(addr, Duration::from_secs(10)).is_some()).count();
        (answered, started.elapsed())
    });
    let (answered, took) = scrapes.join().unwrap();
    stop.store(true, Ordering::SeqCst);
    let opened = attacker.join().unwrap();
    assert_eq!(answered, 10, "scrapes answered while {opened} clients that never read came and went (in {took:?})");
    let _ = std::fs::remove_dir_all(&root);
}
