//! `fabcheck fabric`: flags -> a plain configuration -> discovery -> judgment -> report.

use crate::error::{Failure, Outcome};
use crate::fabric::discover::{self, Probe};
use crate::fabric::{judge, report, topology, FabricExpect};
use clap::Args;
use fabcheck_verbs::mad::{MadError, INSTALL_HINT};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct FabricArgs {
    /// The umad device (CA) to send MADs from (`ibstat -l` lists them); default: the first with an ACTIVE port.
    #[arg(long, value_name = "NAME")]
    pub ca: Option<String>,
    /// Its port (default: the first ACTIVE one; port 0 on a switch).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8))]
    pub port: Option<u8>,
    /// The expected cabling, in ibnetdiscover format: missing, extra and miswired cables are named.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// sm_standby=N, nodes=N, switches=N, width=4X, speed=HDR, or an error-counter threshold (symbol_error=10, ...).
    #[arg(long = "expect", value_name = "KEY=VALUE")]
    pub expect: Vec<String>,
    /// One JSON document on stdout (schema fabcheck.fabric.v1).
    #[arg(long)]
    pub json: bool,
    /// Milliseconds each MAD waits for its answer.
    #[arg(long, default_value_t = 500, value_name = "MS", value_parser = clap::value_parser!(u32).range(10..=60_000))]
    pub timeout_ms: u32,
    /// Retries of an unanswered MAD.
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=20))]
    pub retries: u32,
    /// Clear every port's PortCounters after reading them (never done unless asked).
    #[arg(long)]
    pub reset_counters: bool,
    /// Seconds the whole run may take; past it fabcheck gives up (exit 2) instead of hanging.
    #[arg(long, default_value_t = 600, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub deadline: u64,
}

/// The run configuration: plain data, no clap.
#[derive(Debug, Clone)]
pub struct FabricConfig {
    pub probe: Probe,
    pub topology: Option<PathBuf>,
    pub expect: FabricExpect,
    pub json: bool,
    pub deadline: std::time::Duration,
}

impl FabricArgs {
    pub fn config(&self) -> Result<FabricConfig, Failure> {
        let mut expect = FabricExpect::default();
        for kv in &self.expect {
            expect.set(kv).map_err(|e| Failure::usage(format!("--expect {kv}: {e}")))?;
        }
        if let Some(ca) = &self.ca {
            if !crate::cli::valid_device_name(ca) {
                return Err(Failure::usage(format!("--ca '{ca}' is not a device name (as `ibstat -l` lists them)")));
            }
        }
        Ok(FabricConfig {
            probe: Probe {
                ca: self.ca.clone(),
                port: self.port,
                timeout_ms: self.timeout_ms,
                retries: self.retries,
                reset_counters: self.reset_counters,
            },
            topology: self.topology.clone(),
            expect,
            json: self.json,
            deadline: std::time::Duration::from_secs(self.deadline),
        })
    }
}

pub fn run(args: &FabricArgs) -> Result<Outcome, Failure> {
    let config = args.config()?;
    let started = std::time::Instant::now();
    // Bad input fails before any MAD is sent.
    let expected = match &config.topology {
        Some(path) => Some(topology::load(path).map_err(|e| Failure::new(e.to_string(), e.remedy()))?),
        None => None,
    };
    let fabric = with_deadline(&config.probe, config.deadline)?;
    let judgement = judge(&fabric, expected.as_ref(), &config.expect);
    if config.json {
        let doc = report::document(&fabric, &judgement, started.elapsed().as_millis() as u64);
        crate::report::print_json(&doc);
    } else {
        print!("{}", report::human(&fabric, &judgement));
    }
    Ok(match report::verdict(&judgement) {
        crate::diagnose::Verdict::Pass => Outcome::Pass,
        crate::diagnose::Verdict::Fail => Outcome::Fail,
    })
}

/// Runs discovery on a worker thread: the MAD libraries bound each query, but a stuck
/// umad device (or simulator) must still not hang the run. On the deadline the process
/// exits (exit 2) and takes the stuck thread with it.
fn with_deadline(probe: &Probe, deadline: std::time::Duration) -> Result<crate::fabric::Fabric, Failure> {
    let (tx, rx) = std::sync::mpsc::channel();
    let probe = probe.clone();
    std::thread::Builder::new()
        .name("mad".into())
        .spawn(move || {
            let _ = tx.send(discover::discover(&probe));
        })
        .map_err(|e| Failure::new(format!("cannot start the MAD thread: {e}"), "retry; check the process limits (ulimit -u)"))?;
    match rx.recv_timeout(deadline) {
        Ok(result) => result.map_err(mad_failure),
        Err(_) => Err(Failure::new(
            format!("the fabric did not finish answering within {} s (--deadline)", deadline.as_secs()),
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
