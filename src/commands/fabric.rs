//! `fabcheck fabric`: flags -> a plain configuration -> discovery -> judgment -> report.

use crate::cli::FabricArgs;
use crate::error::{Failure, Outcome, Stop};
use crate::fabric::design::{plan, rails, topology};
use crate::fabric::discovery::discover::{self, Probe};
use crate::fabric::{report, FabricExpect};
use fabcheck_verbs::mad::{MadError, INSTALL_HINT};
use std::path::PathBuf;

/// The run configuration: plain data, no clap.
#[derive(Debug, Clone)]
pub struct FabricConfig {
    pub probe: Probe,
    pub topology: Option<PathBuf>,
    pub expect: FabricExpect,
    pub json: bool,
    pub deadline: std::time::Duration,
    /// `--soak`: the window between two reads of every counter.
    pub soak: Option<std::time::Duration>,
    /// Fabric design (#32): the cabling plan (instead of `topology`), and the rails to judge.
    pub plan: Option<PathBuf>,
    pub rails: Option<Rails>,
    /// `--seed`: the sample of host pairs for `fabric.route` (None: from the clock).
    pub seed: Option<u64>,
}

/// `--rails`: where each NIC's rail comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Rails {
    Descriptions,
    Map(PathBuf),
}

/// `fabric`'s flags as a validated run.
pub fn configure(args: &FabricArgs) -> Result<FabricConfig, Failure> {
    let mut expect = FabricExpect::default();
    for kv in &args.expect {
        expect.set(kv).map_err(|e| Failure::usage(format!("--expect {kv}: {e}")))?;
    }
    if let Some(ca) = &args.ca {
        if !crate::model::valid_device_name(ca) {
            return Err(Failure::usage(format!("--ca '{ca}' is not a device name (as `ibstat -l` lists them)")));
        }
    }
    if let (Some(plan), Some(topology)) = (&args.plan, &args.topology) {
        return Err(Failure::new(
            format!("--plan {} and --topology {} both give the expected cabling", plan.display(), topology.display()),
            "give one: --plan for a cabling plan (CSV), --topology for an ibnetdiscover file of a known-good fabric",
        ));
    }
    let rails = match (&args.rail_map, args.rails) {
        (Some(map), _) => Some(Rails::Map(map.clone())),
        (None, true) => Some(Rails::Descriptions),
        (None, false) => None,
    };
    let deadline = std::time::Duration::from_secs(args.deadline);
    let soak = match args.soak.as_deref() {
        None => None,
        Some(text) => {
            let window = crate::cli::values::window(text)
                .ok_or_else(|| Failure::usage(format!("--soak {text}: not a duration; write it as 10s, 5m, 1h or 1h30m")))?;
            if window >= deadline {
                return Err(Failure::usage(format!(
                    "--soak {text} does not fit in --deadline {} s: the window and both reads of the fabric count within it",
                    deadline.as_secs()
                )));
            }
            Some(window)
        }
    };
    Ok(FabricConfig {
        probe: Probe {
            ca: args.ca.clone(),
            port: args.port,
            timeout_ms: args.timeout_ms,
            retries: args.retries,
            reset_counters: args.reset_counters,
            tables_until: None,
            sample_ticks: false,
        },
        topology: args.topology.clone(),
        expect,
        // A machine `--format` wants the document too: `run` adds it.
        json: args.json,
        deadline,
        soak,
        plan: args.plan.clone(),
        rails,
        seed: args.seed,
    })
}

pub fn run(args: &FabricArgs, out: &crate::report::Output) -> Result<Outcome, Stop> {
    let mut config = configure(args)?;
    config.json |= out.machine();
    let started = std::time::Instant::now();
    // --deadline covers the whole run: reading the topology file, then discovery.
    let deadline = crate::sys::time::deadline(started, config.deadline);
    // Bad input fails before any MAD is sent.
    let expected = match &config.topology {
        Some(path) => Some(topology::load_until(path, Some(deadline)).map_err(|e| Failure::new(e.to_string(), e.remedy()))?),
        None => match &config.plan {
            Some(path) => Some(plan::load_until(path, Some(deadline)).map_err(|e| Failure::new(e.to_string(), plan::remedy(&e)))?),
            None => None,
        },
    };
    let capture = match &args.ibdiagnet {
        Some(dir) => Some(crate::fabric::ibdiagnet::load(dir).map_err(|e| Failure::new(e.to_string(), crate::fabric::ibdiagnet::REMEDY))?),
        None => None,
    };
    let rail_map = match &config.rails {
        Some(Rails::Map(path)) => Some(rails::load_map(path, Some(deadline)).map_err(|e| Failure::new(e.to_string(), rails::remedy(&e)))?),
        _ => None,
    };
    // The forwarding and partition tables get at most half of what --deadline leaves after a
    // soak window: the rest is for the second read and the report.
    let mut probe = config.probe.clone();
    probe.tables_until = Some(std::time::Instant::now() + config.deadline.saturating_sub(config.soak.unwrap_or_default()) / 2);
    let (mut fabric, tables) = with_deadline(&probe, deadline.saturating_duration_since(std::time::Instant::now()))?;
    let window = match config.soak {
        Some(window) => Some(soak(&config, &mut fabric, window, started)?),
        None => None,
    };
    let asked = crate::fabric::rulebook::Asked {
        expected: expected.as_ref(),
        expect: &config.expect,
        rails: config.rails.as_ref().map(|_| rail_map.as_ref()),
        capture: capture.as_ref(),
        window: window.as_ref(),
        seed: config.seed.unwrap_or_else(crate::fabric::routes::route::fresh_seed),
    };
    let (judgement, routes) = crate::fabric::rulebook::judge(&fabric, &tables, &asked);
    let view =
        report::FabricReport { fabric: &fabric, judgement: &judgement, elapsed_ms: started.elapsed().as_millis() as u64, routes: routes.as_ref() };
    let outcome = out.deliver(&view, config.json)?;
    if let Some(w) = window.as_ref().filter(|w| w.interrupted) {
        return Err(Failure::new(
            format!("the soak window was interrupted after {:.0} s", w.seconds),
            "the report judges what the shortened window saw; let the window run to its end for a full judgement",
        )
        .into());
    }
    Ok(outcome)
}

/// The soak window: wait (SIGINT ends it early), read the fabric again within what is left of
/// --deadline, and leave in `fabric` the second read with the counters' rise over the window.
fn soak(
    config: &FabricConfig,
    fabric: &mut crate::fabric::Fabric,
    window: std::time::Duration,
    started: std::time::Instant,
) -> Result<crate::fabric::counters::soak::FabricWindow, Failure> {
    let opened = std::time::Instant::now();
    // On a terminal, the window's time gone and left and what has risen so far (issue #57):
    // the port counters are read again every READ_EVERY (one MAD per port, no discovery).
    let flags = crate::cli::ProgressFlags { progress: false, no_progress: false, quiet: false };
    let mut progress = super::progress::sink(&flags);
    let read = || discover::reread_counters(fabric, &config.probe).ok();
    let interrupted = wait_window(fabric, window, read, progress.as_mut(), (SAY_EVERY, READ_EVERY));
    let left = config.deadline.saturating_sub(started.elapsed());
    // The second read also asks the nodes that waited for their PortXmitWait unit.
    let probe = Probe { sample_ticks: true, ..config.probe.clone() };
    let (mut end, end_tables) = with_deadline(&probe, left.max(std::time::Duration::from_secs(1)))?;
    let seconds = opened.elapsed().as_secs_f64();
    let mut w = crate::fabric::counters::soak::window(fabric, &mut end, seconds, interrupted);
    w.sample_ticks = end_tables.sample_ticks;
    *fabric = end;
    Ok(w)
}

/// How often a soak window says its progress, and reads the port counters for it.
const SAY_EVERY: std::time::Duration = std::time::Duration::from_secs(1);
const READ_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Waits out the soak window (SIGINT ends it early: true), saying its progress at the pace
/// given `(say, read)`: every `say` the time gone and left, with what has risen since `start`
/// as of the last `read` that answered.
fn wait_window(
    start: &crate::fabric::Fabric,
    window: std::time::Duration,
    mut read: impl FnMut() -> Option<crate::fabric::Fabric>,
    progress: &mut dyn crate::progress::Progress,
    (say_every, read_every): (std::time::Duration, std::time::Duration),
) -> bool {
    use std::time::Duration;
    crate::sys::os::catch_termination();
    let opened = std::time::Instant::now();
    let (mut said, mut read_at) = (Duration::ZERO, Duration::ZERO);
    let mut risen: Option<Vec<String>> = None;
    let mut interrupted = false;
    while opened.elapsed() < window {
        if crate::sys::os::interrupted() {
            interrupted = true;
            break;
        }
        let elapsed = opened.elapsed();
        // Not in the window's last half-pace: the end read comes then anyway.
        if elapsed >= read_at + read_every && window.saturating_sub(elapsed) > read_every / 2 {
            read_at = elapsed;
            if let Some(now) = read() {
                risen = Some(crate::fabric::counters::soak::risen(start, &now));
            }
        }
        if elapsed >= said + say_every {
            said = elapsed;
            progress.event(&crate::progress::Event::Soak { elapsed, window, risen: risen.as_deref() });
        }
        std::thread::sleep(Duration::from_millis(100).min(window.saturating_sub(opened.elapsed())));
    }
    progress.done();
    interrupted
}

/// Runs discovery on a worker thread: the MAD libraries bound each query, but a stuck
/// umad device (or simulator) must still not hang the run. On the deadline the process
/// exits (exit 2) and takes the stuck thread with it.
fn with_deadline(probe: &Probe, deadline: std::time::Duration) -> Result<(crate::fabric::Fabric, crate::fabric::discovery::model::Tables), Failure> {
    let (tx, rx) = std::sync::mpsc::channel();
    let probe = probe.clone();
    std::thread::Builder::new()
        .name("mad".into())
        .spawn(move || {
            let _ = tx.send(discover::discover_with_tables(&probe));
        })
        .map_err(|e| Failure::new(format!("cannot start the MAD thread: {e}"), "retry; check the process limits (ulimit -u)"))?;
    match rx.recv_timeout(deadline) {
        Ok(result) => result.map_err(mad_failure),
        Err(_) => Err(Failure::new(
            format!("the fabric did not finish answering within --deadline ({} s were left for discovery)", deadline.as_secs()),
            "check the local port (`ibstat`) and the SM; on a very large or lossy fabric raise --deadline or lower --timeout-ms",
        )),
    }
}

fn mad_failure(err: MadError) -> Failure {
    let remedy = match &err {
        MadError::Missing { .. } => format!("`fabric` needs rdma-core's MAD libraries: {INSTALL_HINT}"),
        MadError::NoUmadDevice => "run on an InfiniBand node with the ib_umad module loaded (`modprobe ib_umad`); under the ibsim simulator, \
                                   run with LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
            .into(),
        MadError::NoSuchCa { .. } => "give --ca one of the devices listed (`ibstat -l`), or leave it out".into(),
        MadError::NoSuchPort { .. } => "give --port one of the ports listed, or leave it out".into(),
        MadError::OpenPort { .. } => "check permissions on /dev/infiniband/umad* (root, or the rdma group) and that ib_umad is loaded".into(),
        MadError::PortDown { .. } => "plug in or reseat this port's cable (`ibstat` shows its state), or pick a linked port with --ca/--port".into(),
        MadError::Discover { .. } => "check that the port is linked and the fabric answers (`ibstat`, `ibnetdiscover`), and that you may use \
                                      /dev/infiniband/umad* (root, or the rdma group)"
            .into(),
        _ => "retry with a longer --timeout-ms".into(),
    };
    Failure::new(err.to_string(), remedy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::discovery::model::{LocalView, Node, Port};
    use crate::mad::attributes::{Counters, Guid, NodeType};

    fn fabric(symbol: u64) -> crate::fabric::Fabric {
        let info = crate::mad::decode::port_info(&[0u8; 64], &[0u8; 64]);
        let counters = Counters { symbol_error: symbol, xmit_wait: symbol, ..Counters::default() };
        let port = Port { number: 7, guid: Guid(2), lid: 3, info, remote: None, counters: Some(counters) };
        let node = Node { guid: Guid(1), node_type: NodeType::Switch, description: "leaf1".into(), num_ports: 8, ports: vec![port] };
        crate::fabric::Fabric {
            local: LocalView { ca: "mlx5_0".into(), port: 1, lid: 1, sm_lid: 1, state: crate::port::PortState::Active },
            nodes: vec![node],
            master: None,
            others: vec![],
            gaps: vec![],
            counters_read: true,
        }
    }

    /// Issue #57: `fabric --soak` was a silent window. It says its time and what has risen so
    /// far (the pace injected: every turn says and reads; the reads counted, not timed).
    #[test]
    fn a_soak_window_says_what_has_risen_so_far() {
        let start = fabric(100);
        let mut reads = 0;
        let read = || {
            reads += 1;
            Some(fabric(112))
        };
        let mut said: Vec<String> = Vec::new();
        let window = std::time::Duration::from_millis(400);
        let interrupted = wait_window(&start, window, read, &mut said, (std::time::Duration::ZERO, std::time::Duration::ZERO));
        assert!(!interrupted);
        assert!(reads >= 1 && !said.is_empty(), "{reads} reads, said {said:?}");
        assert!(said[0].starts_with("soak window ") && said[0].ends_with("; risen so far: leaf1 port 7 SymbolErrorCounter +12"), "{said:?}");
        // A read that does not answer leaves the line without a judgement of the counters.
        let mut said: Vec<String> = Vec::new();
        wait_window(&start, window, || None, &mut said, (std::time::Duration::ZERO, std::time::Duration::ZERO));
        assert!(said[0].ends_with("; counters are judged at its end"), "{said:?}");
    }
}
