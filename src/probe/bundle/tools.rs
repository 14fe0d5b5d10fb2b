//! The tools a live capture runs: the outputs `check` reads of the driver stack, the QoS set-up
//! and the physical layer (docs/contract.md, 0.3 and 0.4), saved at the bundle paths their
//! readers take. Each is a fixed program with its arguments as argv (never a shell), run by
//! `sys::child::run_bounded` within its own time limit (and the capture's deadline), its output
//! capped; the manifest says for each what became of it (saved, truncated, not installed,
//! timed out, failed, empty). Names from the tree (netdevs, devices, BDFs) are checked before
//! they become arguments or paths.

use super::capture::Capture;
use super::ToolRun;
use crate::probe::tree::valid_netdev_name;
use crate::sys::write_error::WriteError;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A firmware query or link read takes seconds per adapter.
const FIRMWARE_LIMIT: Duration = Duration::from_secs(60);

/// What one run gave.
enum Ran {
    Output { bytes: Vec<u8>, truncated: bool },
    Missing(String),
}

use crate::probe::tool::valid_bdf;

fn valid_device(text: &str) -> bool {
    crate::model::valid_device_name(text)
}

impl Capture {
    /// Runs `program args` within `limit` and the capture's deadline.
    fn run_tool(&mut self, program: &str, args: &[&str], limit: Duration) -> Ran {
        let cap = self.manifest.limits.report_bytes;
        let cap_usize = usize::try_from(cap).unwrap_or(usize::MAX);
        match crate::sys::child::run_bounded(program, args, limit, cap_usize.saturating_add(1)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ran::Missing(format!("{program} is not installed")),
            Err(e) => Ran::Missing(format!("{program} could not be run: {e}")),
            Ok(f) if f.timed_out || f.status.is_none() => Ran::Missing(format!("{program} did not finish in {} s and was killed", limit.as_secs())),
            Ok(f) if !f.status.is_some_and(|s| s.success()) => {
                let err = String::from_utf8_lossy(&f.stderr);
                let first: String = err.lines().next().unwrap_or("").trim().chars().take(200).collect();
                Ran::Missing(if first.is_empty() { format!("{program} failed") } else { format!("{program} failed: {first}") })
            }
            Ok(f) if f.stdout.is_empty() => Ran::Missing(format!("{program} printed nothing")),
            Ok(mut f) => {
                let truncated = f.stdout.len() > cap_usize;
                f.stdout.truncate(cap_usize);
                Ran::Output { bytes: f.stdout, truncated }
            }
        }
    }

    fn record(&mut self, command: String, file: &Path, saved: bool, why: Option<String>) {
        self.manifest.tools.push(ToolRun { command, file: file.display().to_string(), saved, why });
    }

    /// Runs one tool into `file`; returns its output when saved.
    fn save(&mut self, file: &Path, program: &str, args: &[&str], limit: Duration) -> Result<Option<Vec<u8>>, WriteError> {
        let command = std::iter::once(program).chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
        if self.stopped() {
            self.record(command, file, false, Some("not run: the capture had stopped".into()));
            return Ok(None);
        }
        match self.run_tool(program, args, limit) {
            Ran::Output { bytes, truncated } => {
                let why = truncated.then(|| format!("truncated at {} bytes", bytes.len()));
                self.put(file, &bytes)?;
                self.record(command, file, true, why);
                Ok(Some(bytes))
            }
            Ran::Missing(why) => {
                self.record(command, file, false, Some(why));
                Ok(None)
            }
        }
    }

    /// The netdevs of the RDMA devices (`class/infiniband/*/device/net/*`, and the `parent` a
    /// software device such as rxe names), and the other legs of a bond one of them is in,
    /// checked as names.
    fn rdma_netdevs(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for dev in self.names(Path::new("class/infiniband")) {
            let dir = Path::new("class/infiniband").join(&dev);
            let parent = self.src.read_text(&dir.join("parent"), 64).ok().map(|p| p.trim().to_string());
            let mut names = self.names(&dir.join("device/net"));
            names.extend(parent);
            for nd in names {
                if valid_netdev_name(&nd) && !out.contains(&nd) {
                    out.push(nd);
                }
            }
        }
        // A bond with a leg among them (mlx5 RoCE LAG: the RDMA device's function is one leg):
        // every leg, as the port is judged by its legs' links and QoS.
        for (_, legs) in crate::probe::bond::masters(&self.src) {
            if legs.iter().any(|l| out.contains(l)) {
                for leg in legs {
                    if !out.contains(&leg) {
                        out.push(leg);
                    }
                }
            }
        }
        out
    }

    /// The Mellanox adapters' PCI functions (vendor 0x15b3), by BDF.
    fn mellanox_bdfs(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for dev in self.names(Path::new("class/infiniband")) {
            let link = Path::new("class/infiniband").join(&dev).join("device");
            let vendor = self.src.read_text(&link.join("vendor"), 64).unwrap_or_default();
            if vendor.trim() != "0x15b3" {
                continue;
            }
            let bdf = self.src.resolve(&link).ok().and_then(|r| r.file_name().and_then(|n| n.to_str()).map(str::to_string));
            if let Some(bdf) = bdf.filter(|b| valid_bdf(b)) {
                if !out.contains(&bdf) {
                    out.push(bdf);
                }
            }
        }
        out
    }

    fn netdev_tools(&mut self, nd: &str, limit: Duration) -> Result<(), WriteError> {
        let e = |suffix: &str| PathBuf::from("ethtool").join(format!("{nd}{suffix}"));
        // No `--`: ethtool takes none (ethtool.c `main`: the first word is an option or a
        // device; after an option, the next word is the device). `nd` never begins with `-`.
        self.save(&e(".txt"), "ethtool", &[nd], limit)?;
        self.save(&e(".stats.txt"), "ethtool", &["-S", nd], limit)?;
        if self.save(&e(".fec.txt"), "ethtool", &["-I", "--show-fec", nd], limit)?.is_none() {
            self.manifest.tools.pop();
            self.save(&e(".fec.txt"), "ethtool", &["--show-fec", nd], limit)?;
        }
        self.save(&e(".module.txt"), "ethtool", &["-m", nd], limit)?;
        // Global pause (IEEE 802.3x), for roce.qos: `ethtool -a` (netlink/pause.c's text).
        self.save(&e(".pause.txt"), "ethtool", &["-a", nd], limit)?;
        self.module_hex(nd, &e(".module.hex.txt"), limit)?;
        // dcb/IF.json: the five `dcb -j OBJECT show dev IF` answers as members of one object.
        let mut members = Vec::new();
        let mut answered = false;
        for object in ["pfc", "ets", "apptrust", "app", "buffer"] {
            let answer = match self.run_tool("dcb", &["-j", object, "show", "dev", nd], limit) {
                Ran::Output { bytes, truncated: false } if bytes.first() == Some(&b'{') => {
                    answered = true;
                    String::from_utf8_lossy(&bytes).trim().to_string()
                }
                _ => "null".to_string(),
            };
            members.push(format!("\"{object}\":{answer}"));
        }
        let dcb = PathBuf::from("dcb").join(format!("{nd}.json"));
        if answered {
            self.put(&dcb, format!("{{{}}}\n", members.join(",")).as_bytes())?;
        }
        self.record(
            format!("dcb -j pfc|ets|apptrust|app|buffer show dev {nd}"),
            &dcb,
            answered,
            (!answered).then(|| "dcb gave no answer (not installed, or no DCB on the netdev)".into()),
        );
        self.save(&PathBuf::from("tools/mlnx_qos").join(format!("{nd}.txt")), "mlnx_qos", &["-i", nd], limit)?;
        Ok(())
    }

    /// `ethtool -m IF hex on`, then its upper page 00h, and page 11h for CMIS modules, each after
    /// the one before (as capture-sysfs.sh wrote them).
    fn module_hex(&mut self, nd: &str, file: &Path, limit: Duration) -> Result<(), WriteError> {
        let command = format!("ethtool -m {nd} hex on (offset 128 length 128; page 0x11 for CMIS)");
        let mut bytes = match self.run_tool("ethtool", &["-m", nd, "hex", "on"], limit) {
            Ran::Output { bytes, .. } => bytes,
            Ran::Missing(why) => {
                self.record(command, file, false, Some(why));
                return Ok(());
            }
        };
        let id = String::from_utf8_lossy(&bytes)
            .lines()
            .find_map(|l| l.strip_prefix("0x0000:").and_then(|r| r.split_whitespace().next().map(str::to_ascii_lowercase)));
        if let Ran::Output { bytes: more, .. } = self.run_tool("ethtool", &["-m", nd, "hex", "on", "offset", "128", "length", "128"], limit) {
            bytes.extend_from_slice(&more);
        }
        if matches!(id.as_deref(), Some("18" | "19" | "1e")) {
            if let Ran::Output { bytes: more, .. } =
                self.run_tool("ethtool", &["-m", nd, "hex", "on", "page", "0x11", "offset", "128", "length", "128"], limit)
            {
                bytes.extend_from_slice(b"# page 0x11\n");
                bytes.extend_from_slice(&more);
            }
        }
        self.put(file, &bytes)?;
        self.record(command, file, true, None);
        Ok(())
    }

    /// The first of `programs` that is installed (on PATH).
    fn first_installed(programs: &[&'static str]) -> Option<&'static str> {
        let path = std::env::var_os("PATH")?;
        programs.iter().copied().find(|p| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
    }

    fn systemd_units(&mut self, limit: Duration) -> Result<(), WriteError> {
        if !Path::new("/run/systemd/system").is_dir() {
            return Ok(());
        }
        let mut units: Vec<String> = ["openibd", "rdma-ndd", "rdma", "opensm", "opensmd"].iter().map(|s| s.to_string()).collect();
        // Debian runs one OpenSM per port as an instance of opensm@.service.
        if let Ran::Output { bytes, .. } = self.run_tool("systemctl", &["list-units", "--all", "--plain", "--no-legend", "--full", "opensm@*"], limit)
        {
            let text = String::from_utf8_lossy(&bytes);
            let instances = text.split_whitespace().filter_map(|w| w.strip_suffix(".service")).filter(|u| {
                u.strip_prefix("opensm@").is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_alphanumeric() || b":_.-".contains(&b)))
            });
            units.extend(instances.take(16).map(str::to_string));
        }
        for u in units {
            let file = PathBuf::from("tools/systemctl").join(format!("{u}.txt"));
            self.save(&file, "systemctl", &["show", &u, "-p", "LoadState,ActiveState,SubState,UnitFileState"], limit)?;
        }
        Ok(())
    }

    /// The InfiniBand link partner (link.trained): PortInfo one directed-route hop out of each IB
    /// port, at the port the cable enters (NodeInfo's LocalPort).
    fn peer_portinfo(&mut self, limit: Duration) -> Result<(), WriteError> {
        for dev in self.names(Path::new("class/infiniband")).into_iter().filter(|d| valid_device(d)) {
            let ports = Path::new("class/infiniband").join(&dev).join("ports");
            for port in self.names(&ports).into_iter().filter(|p| p.parse::<u8>().is_ok()) {
                let ll = self.src.read_text(&ports.join(&port).join("link_layer"), 64).unwrap_or_default();
                if ll.trim() != "InfiniBand" {
                    continue;
                }
                let hop = format!("0,{port}");
                let Ran::Output { bytes, .. } = self.run_tool("smpquery", &["-C", &dev, "-P", &port, "-D", "nodeinfo", &hop], limit) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&bytes);
                let peer = text.lines().find_map(|l| l.strip_prefix("LocalPort:").map(|r| r.trim_start_matches('.').trim().to_string()));
                let Some(peer) = peer.filter(|p| p.parse::<u8>().is_ok()) else { continue };
                let file = PathBuf::from("tools/peer_portinfo").join(format!("{dev}-{port}.txt"));
                self.save(&file, "smpquery", &["-C", &dev, "-P", &port, "-D", "portinfo", &hop, &peer], limit)?;
            }
        }
        Ok(())
    }
}

/// Every tool of a live capture.
pub(super) fn run_all(c: &mut Capture, limit: Duration) -> Result<(), WriteError> {
    c.area("tools");
    c.save(Path::new("ibstat.txt"), "ibstat", &[], limit)?;
    c.save(Path::new("ibv_devinfo.txt"), "ibv_devinfo", &["-v"], limit)?;
    // A netdev that looks like an option (`-s`) is never put on a tool's command line: ethtool
    // has no `--` (the word after its option is the device, whatever it looks like).
    for nd in c.rdma_netdevs().into_iter().filter(|nd| crate::probe::tree::valid_tool_netdev(nd)) {
        c.netdev_tools(&nd, limit)?;
    }
    let fw = Capture::first_installed(&["mlxconfig", "mstconfig"]);
    let link = Capture::first_installed(&["mlxlink", "mstlink"]);
    if fw.is_some() || link.is_some() {
        for bdf in c.mellanox_bdfs() {
            if let Some(fw) = fw {
                c.save(&PathBuf::from("tools/mlxconfig").join(format!("{bdf}.txt")), fw, &["-d", &bdf, "-e", "query"], FIRMWARE_LIMIT)?;
            }
            if let Some(link) = link {
                c.save(&PathBuf::from("tools/mlxlink").join(format!("{bdf}.json")), link, &["-d", &bdf, "-c", "--json"], FIRMWARE_LIMIT)?;
            }
        }
    }
    c.save(Path::new("tools/ofed_info.txt"), "ofed_info", &["-s"], limit)?;
    for m in ["mlx5_core", "ib_core"] {
        c.save(&PathBuf::from("tools/modinfo").join(format!("{m}.txt")), "modinfo", &[m], limit)?;
    }
    c.systemd_units(limit)?;
    c.save(Path::new("tools/devlink-health.json"), "devlink", &["-j", "health", "show"], limit)?;
    c.save(Path::new("tools/ip-addr.txt"), "ip", &["-o", "addr", "show"], limit)?;
    c.save(Path::new("tools/uname-r.txt"), "uname", &["-r"], limit)?;
    // The kernel log with wall-clock times (`check --since`'s link.flap), capped at the report
    // cap as every tool's output; journalctl -k where dmesg is restricted.
    let dmesg = Path::new("tools/dmesg.txt");
    if c.save(dmesg, "dmesg", &["--time-format=iso", "--kernel"], limit)?.is_none() {
        c.save(dmesg, "journalctl", &["-k", "-o", "short-iso", "--no-pager", "--since", "-7d"], limit)?;
    }
    c.peer_portinfo(limit)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// mlx5 RoCE LAG: `mlx5_bond_0`'s PCI function names one leg (`device/net`); the tools
    /// run on both legs of its bond, as the port is judged by its legs.
    #[test]
    fn the_tools_run_on_every_leg_of_a_bond() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roce-cx7-lag-bond");
        let out = std::env::temp_dir().join(format!("fabcheck-bundle-legs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let limits =
            super::super::Limits { sysfs_file_bytes: 1 << 16, report_bytes: 1 << 20, total_bytes: 1 << 28, total_files: 100_000, deadline_s: 60 };
        let plan = super::super::capture::Plan { out: out.clone(), from_root: Some(fixture), limits, tool_limit: std::time::Duration::from_secs(1) };
        let mut capture = super::super::capture::begin(&plan).expect("the fixture is a tree");
        assert_eq!(capture.rdma_netdevs(), ["ens1f0np0", "ens1f1np1"]);
        drop(capture);
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn bdfs_are_checked_before_they_become_arguments() {
        assert!(super::valid_bdf("0000:3b:00.1"));
        for bad in ["0000:3b:00.8", "-d:3b:00.0000", "0000:3B:00.0", "../../x", "0000:3b:00.0 "] {
            assert!(!super::valid_bdf(bad), "{bad}");
        }
    }
}
