//! The collective controller (plan, step model, figures, judge, blame) over N simulated
//! members, for `benches/collective.sh`: what the controller costs per member. Prints, as its
//! last line, `members= rails= op= verdict= cpu_s= peak_rss_mb= cpu_us_per_member= rss_kb_per_member=`
//! (CPU from getrusage, peak RSS from /proc/self/status VmHWM).
//!
//! `cargo build --release --example collective_sim && target/release/examples/collective_sim N [RAILS] [OP]`

use fabcheck::collective::judge::Criteria;
use fabcheck::collective::op::Op;
use fabcheck::collective::run::{run, Config};
use fabcheck::collective::stepmodel::{Faults, StepModel};
use fabcheck::collective::Member;
use fabcheck::port::LinkLayer;
use std::time::Duration;

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok());
    kb.map_or(f64::NAN, |k| k / 1024.0)
}

fn cpu_s() -> f64 {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF);
    usage.map_or(f64::NAN, |u| {
        let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
        t(u.user_time()) + t(u.system_time())
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let rails: u16 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let op = args.get(2).map_or(Ok(Op::AllReduce), |a| Op::parse(a)).unwrap_or_else(|e| {
        eprintln!("collective_sim: {e}");
        std::process::exit(2);
    });
    let hosts = n.div_ceil(usize::from(rails.max(1)));
    let members: Vec<Member> = (0..hosts)
        .flat_map(|h| {
            (0..rails).map(move |r| Member {
                host: format!("n{h:05}"),
                device: format!("mlx5_{r}"),
                port: 1,
                rail: (rails > 1).then_some(r),
                capacity_gbps: Some(400.0),
                link_layer: LinkLayer::InfiniBand,
                mtu: Some(4096),
            })
        })
        .take(n)
        .collect();
    let config = Config {
        op,
        size: 1 << 30,
        iters: 1,
        criteria: Criteria::default(),
        bisect: false,
        topology: None,
        deadline: Duration::from_secs(3600),
        paths: 1,
    };
    let before = cpu_s();
    let mut model = StepModel::new(members.clone(), vec![None; members.len()], Faults::default());
    let doc = match run(&members, &mut model, &config) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("collective_sim: {e:?}");
            std::process::exit(2);
        }
    };
    let cpu = cpu_s() - before;
    let rss = peak_rss_mb();
    println!(
        "members={} rails={rails} op={op} verdict={:?} cpu_s={cpu:.2} peak_rss_mb={rss:.1} cpu_us_per_member={:.1} rss_kb_per_member={:.1}",
        members.len(),
        doc.verdict,
        cpu * 1e6 / members.len() as f64,
        rss * 1024.0 / members.len() as f64
    );
}
