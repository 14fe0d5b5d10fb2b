//! `fabcheck exporter` on captured trees: scraped with plain TCP, linted by `promtool check
//! metrics`, scraped by a real Prometheus, hit with the bad-request set, and a device taken
//! out of the tree while it runs. `promtool` and `prometheus` come from Debian's `prometheus`
//! package (tests/deps.sh); without them these tests fail, saying so.

use super::alerts::contrib;
use super::fixtures_dir;
use super::health_outputs::{promtool_check, tool};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Generous bounds on waits (not timing asserts): the machine may be busy.
const START: Duration = Duration::from_secs(30);

/// A running exporter, killed when dropped.
pub(crate) struct Exporter {
    child: Child,
    addr: SocketAddr,
}

/// Where a started exporter listens: the address in the first line it says on stderr (read
/// within `limit`); the rest of its stderr is drained so it never blocks on a full pipe.
pub(crate) fn listening_address(child: &mut std::process::Child, limit: Duration) -> SocketAddr {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stderr).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines {}
    });
    let line = rx.recv_timeout(limit).expect("the exporter said where it listens");
    let addr = line.split("http://").nth(1).and_then(|s| s.split('/').next()).and_then(|a| a.parse().ok());
    addr.unwrap_or_else(|| panic!("no address in {line:?}"))
}

impl Exporter {
    fn start(root: &Path) -> Exporter {
        Exporter::start_with(root, &[])
    }

    /// An exporter of the bundle at `root`, with more flags (`--expect`), after its first read.
    pub(crate) fn start_with(root: &Path, extra: &[&str]) -> Exporter {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fabcheck"))
            .args(["exporter", "--listen", "127.0.0.1:0", "--interval", "1", "--sysfs-root"])
            .arg(root)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fabcheck exporter");
        let addr = listening_address(&mut child, START);
        let exporter = Exporter { child, addr };
        exporter.wait_for(|page| page.contains("\nfabcheck_up 1\n"), "the first read");
        exporter
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn metrics(&self) -> String {
        let (status, body) = get(self.addr, "/metrics", "");
        assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
        body
    }

    fn wait_for(&self, ok: impl Fn(&str) -> bool, what: &str) -> String {
        let started = Instant::now();
        loop {
            let page = self.metrics();
            if ok(&page) {
                return page;
            }
            assert!(started.elapsed() < START, "{what} never showed:\n{page}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP request over plain TCP: the status line and the body.
fn get(addr: SocketAddr, path: &str, headers: &str) -> (String, String) {
    raw(addr, format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n").as_bytes())
}

fn raw(addr: SocketAddr, request: &[u8]) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the exporter");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("the exporter answers and closes");
    let text = String::from_utf8(out).expect("UTF-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head in {text:?}"));
    (head.lines().next().unwrap_or("").to_string(), body.to_string())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fabcheck-exporter-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_page_passes_promtool_check_metrics_with_no_lint() {
    for fixture in ["hdr-ib-healthy", "rxe-veth", "roce-healthy-cx7", "ib-down-polling", "roce-cx7-phy-clean"] {
        let exporter = Exporter::start(&fixtures_dir().join(fixture));
        let page = exporter.metrics();
        if fixture == "roce-cx7-phy-clean" {
            // The bundle's ethtool reports: FEC, the module, per-lane optical power.
            for series in ["fabcheck_port_phy_fec_info{device=", "fabcheck_port_module_info{device=", "fabcheck_port_module_rx_power_watts{device="] {
                assert!(page.contains(series), "{fixture}: no {series}...}} series:\n{page}");
            }
            assert!(page.contains(r#"mode="RS-544""#) && page.contains(r#",lane="1"}"#), "{fixture}: FEC mode or lane label missing:\n{page}");
        }
        assert!(page.contains("fabcheck_port_active{device="), "{fixture}: no port series:\n{page}");
        assert!(page.contains("\nfabcheck_verdict_pass "), "{fixture}: no check verdict:\n{page}");
        let (ok, said) = promtool_check(&page);
        assert!(ok && said.trim().is_empty(), "{fixture}: promtool check metrics says:\n{said}");
        // OpenMetrics when asked for, as Prometheus does.
        let (status, om) = get(exporter.addr, "/metrics", "Accept: application/openmetrics-text; version=1.0.0\r\n");
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(om.ends_with("# EOF\n") && om.contains("# TYPE fabcheck_exporter_refreshes counter"), "{om}");
    }
}

#[test]
fn the_check_verdict_follows_the_tree() {
    let healthy = Exporter::start(&fixtures_dir().join("hdr-ib-healthy")).metrics();
    assert!(healthy.contains("\nfabcheck_verdict_pass 1\n"), "{healthy}");
    let down = Exporter::start(&fixtures_dir().join("ib-down-polling")).metrics();
    assert!(down.contains("\nfabcheck_verdict_pass 0\n"), "{down}");
    assert!(down.contains("fabcheck_finding{id=\"port.state\",severity=\"error\""), "{down}");
}

/// `exporter --device` is `check --device`: on a node whose second RoCE port is left out, the
/// page has that port's series nowhere, and an empty name in the list is exit 2.
#[test]
fn the_device_list_leaves_a_port_out_of_the_page() {
    let root = fixtures_dir().join("roce-mtu-mismatch");
    let page = Exporter::start_with(&root, &["--device", "mlx5_0:1"]).metrics();
    assert!(page.contains(r#"subject="mlx5_0/1""#), "{page}");
    assert!(!page.contains("mlx5_1"), "{page}");
    let out = super::fabcheck(&["exporter", "--listen", "127.0.0.1:0", "--sysfs-root", root.to_str().unwrap(), "--device", "mlx5_0,"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--device"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A free TCP port on loopback (bound and released; another process could take it in
/// between, which would fail the test loudly, not pass it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_real_prometheus_scrapes_it() {
    let exporter = Exporter::start(&fixtures_dir().join("hdr-ib-healthy"));
    let dir = scratch("prometheus");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: fabcheck\n    static_configs:\n      - targets: ['{}']\n", exporter.addr),
    )
    .unwrap();
    let web = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let _prometheus = Killed(
        Command::new(tool("prometheus"))
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );
    let query = |q: &str| -> Option<serde_json::Value> {
        let s = TcpStream::connect(web).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let mut s = s;
        s.write_all(format!("GET /api/v1/query?query={q} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes()).ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).ok()?;
        serde_json::from_str(out.split_once("\r\n\r\n")?.1).ok()
    };
    let started = Instant::now();
    let up = loop {
        if let Some(v) = query("up") {
            let results = v["data"]["result"].as_array().cloned().unwrap_or_default();
            if results.iter().any(|r| r["value"][1] == "1") {
                break results;
            }
        }
        let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
        assert!(started.elapsed() < Duration::from_secs(60), "up never became 1; prometheus said:\n{log}");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(up[0]["metric"]["job"], "fabcheck", "{up:?}");
    let series = query("fabcheck_port_active").expect("a query answer");
    let series = series["data"]["result"].as_array().cloned().unwrap_or_default();
    let mlx5_0 = series.iter().find(|s| s["metric"]["device"] == "mlx5_0").unwrap_or_else(|| panic!("no mlx5_0 series: {series:?}"));
    assert_eq!(mlx5_0["metric"]["port"], "1", "{mlx5_0}");
    assert_eq!(mlx5_0["metric"]["instance"], exporter.addr.to_string().as_str(), "{mlx5_0}");
    assert_eq!(mlx5_0["value"][1], "1", "{mlx5_0}");
    // Every query of the rules and the dashboard is PromQL this Prometheus accepts.
    let mut exprs: Vec<String> = super::alerts::rules().into_iter().map(|(_, expr)| expr).collect();
    let dashboard: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(contrib("prometheus/grafana-dashboard.json")).unwrap()).unwrap();
    for p in dashboard["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            exprs.push(t["expr"].as_str().unwrap().replace("$instance", ".*"));
        }
    }
    assert!(exprs.len() >= 20, "only {} queries found", exprs.len());
    for expr in &exprs {
        let answer = query(&encode(expr)).unwrap_or_else(|| panic!("no answer to {expr}"));
        assert_eq!(answer["status"], "success", "{expr}: {answer}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A query string's value, percent-encoded.
fn encode(text: &str) -> String {
    text.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn bad_requests_leave_it_serving_in_bounded_memory() {
    let exporter = Exporter::start(&fixtures_dir().join("hdr-ib-healthy"));
    let addr = exporter.addr;
    // POST, other methods, traversal, garbage: each refused with its status.
    assert_eq!(raw(addr, b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello").0, "HTTP/1.1 405 Method Not Allowed");
    assert_eq!(raw(addr, b"DELETE /metrics HTTP/1.1\r\n\r\n").0, "HTTP/1.1 405 Method Not Allowed");
    for path in ["/../../../../etc/passwd", "/metrics/../../etc/shadow", "/%2e%2e/%2e%2e/etc/passwd", "/admin"] {
        assert_eq!(get(addr, path, "").0, "HTTP/1.1 404 Not Found", "{path}");
    }
    assert_eq!(raw(addr, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n").0, "HTTP/1.1 400 Bad Request");
    let many: String = (0..200).map(|i| format!("X-{i}: y\r\n")).collect();
    assert_eq!(get(addr, "/metrics", &many).0, "HTTP/1.1 431 Request Header Fields Too Large");
    // A megabyte of headers: refused and the connection closed long before the megabyte is read.
    {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut request = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        request.extend(std::iter::repeat_n(b'a', 1 << 20));
        let wrote = s.write_all(&request);
        let mut out = Vec::new();
        let read = s.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out);
        // Either the 431 arrived, or the reset of a closed connection beat it: never a hang.
        assert!(text.starts_with("HTTP/1.1 431") || wrote.is_err() || read.is_err(), "{text}");
    }
    // 1,000 idle connections: held at the cap, the scraper still answered while they are open.
    fabcheck::sys::io::raise_open_files(4096);
    let idle: Vec<TcpStream> = (0..1000).map(|_| TcpStream::connect(addr).expect("connect an idle socket")).collect();
    let page = exporter.metrics();
    assert!(page.contains("fabcheck_port_active{"), "{page}");
    // A slow client, one byte at a time, is still read.
    let mut slow = TcpStream::connect(addr).unwrap();
    for b in b"GET /metrics HTTP/1.1\r\n\r\n" {
        slow.write_all(&[*b]).unwrap();
    }
    let mut out = String::new();
    slow.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    slow.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
    let rss = vm_rss_kib(exporter.pid());
    assert!(rss < 64 * 1024, "the exporter's RSS is {rss} KiB with 1,000 idle connections");
    drop(idle);
    assert!(exporter.metrics().contains("fabcheck_up 1"));
    let rss = vm_rss_kib(exporter.pid());
    assert!(rss < 64 * 1024, "the exporter's RSS is {rss} KiB after the bad requests");
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_device_that_goes_away_and_comes_back_is_reported_not_fatal() {
    let dir = scratch("unplug");
    let root = dir.join("node");
    copy_tree(&fixtures_dir().join("hdr-ib-healthy"), &root);
    let exporter = Exporter::start(&root);
    let page = exporter.metrics();
    assert!(page.contains("fabcheck_device_present{device=\"mlx5_1\"} 1"), "{page}");
    let device = root.join("class/infiniband/mlx5_1");
    let parked = dir.join("mlx5_1");
    std::fs::rename(&device, &parked).unwrap();
    let gone = exporter.wait_for(|p| p.contains("fabcheck_device_present{device=\"mlx5_1\"} 0"), "mlx5_1 gone");
    assert!(gone.contains("\nfabcheck_up 1\n") && gone.contains("\nfabcheck_devices 1\n"), "{gone}");
    assert!(!gone.contains("fabcheck_port_active{device=\"mlx5_1\""), "{gone}");
    std::fs::rename(&parked, &device).unwrap();
    let back = exporter.wait_for(|p| p.contains("fabcheck_device_present{device=\"mlx5_1\"} 1"), "mlx5_1 back");
    assert!(back.contains("fabcheck_port_active{device=\"mlx5_1\",port=\"1\""), "{back}");
    // Every device gone: the tree cannot be read, which the page says, and it keeps serving.
    std::fs::rename(root.join("class/infiniband"), dir.join("infiniband")).unwrap();
    let none = exporter.wait_for(|p| p.contains("\nfabcheck_up 0\n"), "an unreadable tree");
    assert!(none.contains("fabcheck_exporter_refresh_error{cause="), "{none}");
    std::fs::rename(dir.join("infiniband"), root.join("class/infiniband")).unwrap();
    exporter.wait_for(|p| p.contains("\nfabcheck_up 1\n"), "the tree back");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_are_exit_2_naming_the_flag() {
    let out = super::fabcheck(&["exporter", "--listen", "nowhere"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--listen 'nowhere'"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = super::fabcheck(&["exporter", "--sysfs-root", "/nonexistent"]);
    assert_eq!(out.status.code(), Some(2));
    // Global flags the exporter does not honour are refused, not served as if unsaid; the
    // refusal is on stderr only, in no format the exporter does not write.
    let root = fixtures_dir().join("rxe-veth");
    for (flags, flag) in [(["--format", "junit"], "--format"), (["--output", "page.txt"], "--output"), (["--fail-on", "warning"], "--fail-on")] {
        let mut args = vec!["exporter", "--listen", "127.0.0.1:0", "--sysfs-root", root.to_str().unwrap()];
        args.extend(flags);
        let out = super::fabcheck(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&format!("exporter does not take {flag}:")), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
    }
    let out = super::fabcheck(&["--format", "prom", "exporter", "--sysfs-root", root.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "a global flag before the command: {}", String::from_utf8_lossy(&out.stderr));
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = busy.local_addr().unwrap().to_string();
    let out = super::fabcheck(&["exporter", "--listen", &taken, "--sysfs-root", fixtures_dir().join("rxe-veth").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen on"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_metric_the_rules_use_is_one_the_exporter_writes() {
    let mut written = String::new();
    for fixture in ["hdr-ib-healthy", "rxe-veth"] {
        written.push_str(&Exporter::start(&fixtures_dir().join(fixture)).metrics());
    }
    let names: Vec<String> = fabcheck::report::prom::metrics::TABLE.iter().filter(|m| m.exporter).map(|m| m.name.to_string()).collect();
    let check = |what: &str, exprs: Vec<String>| {
        let mut used = 0;
        for expr in exprs {
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| w.starts_with("fabcheck_")) {
                used += 1;
                let known = names.iter().any(|n| n == word)
                    || fabcheck::report::prom::metrics::KNOWN.iter().any(|k| k.name == word)
                    || written.contains(&format!("# TYPE {word} "));
                assert!(known, "{what} uses {word}, which the exporter does not write");
            }
        }
        assert!(used >= 10, "only {used} metric names found in {what}");
    };
    check("the rules", super::alerts::rules().into_iter().map(|(_, expr)| expr).collect());
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(contrib("prometheus/grafana-dashboard.json")).unwrap()).expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let exprs =
        panels.iter().flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default()).map(|t| t["expr"].as_str().unwrap_or("").to_string());
    check("the Grafana dashboard", exprs.collect());
}

#[test]
fn the_systemd_unit_and_the_daemonset_run_a_command_line_fabcheck_accepts() {
    use clap::Parser;
    let unit = std::fs::read_to_string(contrib("systemd/fabcheck-exporter.service")).unwrap();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("ExecStart");
    let args: Vec<&str> = exec.split_whitespace().collect();
    assert_eq!(args[..2], ["/usr/bin/fabcheck", "exporter"]);
    fabcheck::cli::Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{exec}: {e}"));
    assert!(exec.contains("127.0.0.1:"), "the unit listens on loopback by default: {exec}");
    for hardening in ["NoNewPrivileges=yes", "ProtectSystem=strict", "DynamicUser=yes", "CapabilityBoundingSet=\n"] {
        assert!(unit.contains(hardening), "the unit lacks {hardening:?}");
    }
    let docs: Vec<serde_yaml::Value> =
        serde_yaml::Deserializer::from_str(&std::fs::read_to_string(contrib("prometheus/exporter-daemonset.yaml")).unwrap())
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
    assert_eq!(docs[0]["kind"], "DaemonSet");
    let container = &docs[0]["spec"]["template"]["spec"]["containers"][0];
    let mut argv = vec!["fabcheck".to_string()];
    argv.extend(container["args"].as_sequence().unwrap().iter().map(|a| a.as_str().unwrap().to_string()));
    fabcheck::cli::Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(container["ports"][0]["containerPort"], 9879);
}

#[test]
fn docs_ci_md_lists_every_metric_of_the_table() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md")).unwrap();
    let section = doc.split("## The exporter").nth(1).expect("docs/ci.md has a section \"The exporter\"");
    for m in fabcheck::report::prom::metrics::TABLE {
        assert!(section.contains(&format!("| `{}` | {} |", m.name, m.kind.name())), "docs/ci.md does not list {} ({})", m.name, m.kind.name());
    }
}

#[test]
fn on_a_gpu_node_each_nic_series_names_its_gpu() {
    let exporter = Exporter::start(&fixtures_dir().join("gpu-hgx-healthy"));
    let page = exporter.metrics();
    assert!(page.contains("fabcheck_port_active{device=\"mlx5_0\",port=\"1\",gpu=\"0000:1b:00.0\"} 1"), "{page}");
    assert_eq!(page.matches("fabcheck_port_active{").count(), page.matches("fabcheck_port_active{device=\"mlx5_").count());
    let (ok, said) = promtool_check(&page);
    assert!(ok && said.trim().is_empty(), "promtool check metrics says:\n{said}");
}

/// CPU seconds (user + system) the process has used, from /proc/PID/stat.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

#[test]
fn out_of_descriptors_it_waits_instead_of_spinning_and_serves_again() {
    // An open-files limit below the connection cap: accept fails with EMFILE while the
    // backlog holds connections, and the listener stays readable.
    // The paths as arguments, never spliced into the script: the checkout's may hold a space.
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -n 40 && exec \"$0\" exporter --listen 127.0.0.1:0 --interval 60 --sysfs-root \"$1\""])
        .arg(env!("CARGO_BIN_EXE_fabcheck"))
        .arg(fixtures_dir().join("rxe-veth"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // Keep reading what it logs, so its stderr never fills or closes.
    std::thread::spawn(move || for _ in stderr.lines() {});
    let exporter = Killed(child);
    let addr: SocketAddr = line.split("http://").nth(1).and_then(|s| s.split('/').next()).and_then(|a| a.parse().ok()).unwrap();
    let pid = exporter.0.id();
    let idle: Vec<TcpStream> = (0..60).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_seconds(pid) - before;
    // A spin on the readable listener would use the whole 2 s; waiting uses next to nothing.
    assert!(used < 1.0, "the exporter used {used} s of CPU in 2 s while out of descriptors");
    drop(idle);
    let (status, body) = get(addr, "/metrics", "");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
}

#[test]
fn a_hostile_tree_still_gives_a_clean_page() {
    let dir = scratch("hostile");
    let root = dir.join("node");
    copy_tree(&fixtures_dir().join("hdr-ib-healthy"), &root);
    let counters = root.join("class/infiniband/mlx5_0/ports/1/counters");
    // A FIFO (a read would wait for a writer forever), a file far beyond a sysfs page, text
    // that is not a number, names that are not metric names or clash with the table's.
    nix::unistd::mkfifo(&counters.join("fifo_errors"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    std::fs::write(counters.join("huge"), vec![b'9'; 1 << 20]).unwrap();
    std::fs::write(counters.join("words"), "not a number\n").unwrap();
    std::fs::write(counters.join("we\"ird-name\\x"), "7\n").unwrap();
    std::fs::write(counters.join("state"), "1\n").unwrap();
    std::fs::write(counters.join("overflow"), "99999999999999999999999\n").unwrap();
    let exporter = Exporter::start(&root);
    let page = exporter.metrics();
    assert!(page.contains("fabcheck_port_we_ird_name_x_total{device=\"mlx5_0\",port=\"1\",netdev=\"ib0\"} 7"), "{page}");
    for absent in ["fifo_errors", "fabcheck_port_huge", "fabcheck_port_words", "fabcheck_port_state_total", "fabcheck_port_overflow"] {
        assert!(!page.contains(absent), "{absent} should not be on the page:\n{page}");
    }
    let (ok, said) = promtool_check(&page);
    assert!(ok && said.trim().is_empty(), "promtool check metrics says:\n{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--live-dir`: a running burn-in's state file (as `pair --report-every` keeps it) is served
/// as its last interval's figures, a stale one (a run that died three intervals ago) is not,
/// and the page still passes promtool; when the file goes (the run ended) its series go.
#[test]
fn the_live_dir_serves_a_running_burn_in_and_not_a_stale_one() {
    let dir = scratch("live");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let state = |pid: u32, written: f64, gbps: f64| {
        format!(
            r#"{{"schema":"fabcheck.live.v1","pid":{pid},"every_s":1.0,"written_unix":{written},"records":[{{"schema":"fabcheck.progress.v1","t":7.0,"test":"write_bw","endpoint":"n1/mlx5_0 <-> n2/mlx5_0","direction":"a->b","size":65536,"gbps":{gbps},"lat_us":null}},{{"schema":"fabcheck.progress.v1","t":7.0,"test":"lat_under_load","direction":"a->b","size":2,"gbps":null,"lat_us":{{"p50":2.5,"p99":9.0,"max":20.0,"samples":1000}}}}]}}"#
        )
    };
    // Fresh for the test's length: its written time is pushed ahead of the clock by the bound.
    let fresh = dir.join("fabcheck-101.json");
    std::fs::write(&fresh, state(101, now + START.as_secs_f64(), 93.5)).unwrap();
    std::fs::write(dir.join("fabcheck-202.json"), state(202, now - 600.0, 11.0)).unwrap();
    let exporter = Exporter::start_with(&fixtures_dir().join("rxe-veth"), &["--live-dir", dir.to_str().unwrap()]);
    let page = exporter.wait_for(|p| p.contains("fabcheck_live_bandwidth_bytes_per_second{"), "the live figures");
    let bw: Vec<&str> = page.lines().filter(|l| l.starts_with("fabcheck_live_bandwidth_bytes_per_second{")).collect();
    assert_eq!(bw.len(), 1, "the stale run is not served: {bw:?}");
    assert!(bw[0].contains(r#"pid="101""#) && bw[0].contains(r#"test="write_bw""#) && bw[0].ends_with(" 11687500000"), "{}", bw[0]);
    let p99 = page.lines().find(|l| l.starts_with("fabcheck_live_latency_p99_seconds{")).unwrap_or_else(|| panic!("no live p99:\n{page}"));
    assert!(p99.contains(r#"test="lat_under_load""#) && p99.ends_with(" 0.000009"), "{p99}");
    assert!(!page.contains(r#"pid="202""#), "{page}");
    let (ok, said) = promtool_check(&page);
    assert!(ok && said.trim().is_empty(), "promtool check metrics says:\n{said}");
    // The run ended: its file is gone, and so are its series (within the exporter's second).
    std::fs::remove_file(&fresh).unwrap();
    exporter.wait_for(|p| !p.contains("fabcheck_live_"), "the live series gone");
    let _ = std::fs::remove_dir_all(&dir);
}
