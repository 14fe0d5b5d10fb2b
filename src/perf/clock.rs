//! The latency loops' clock. perftest reads the TSC (`get_cycles`): one instruction. fabcheck
//! does the same where the counter ticks at a constant rate: the CPU says so (`constant_tsc`),
//! or it is a virtual CPU (`hypervisor`: qemu and KVM derive the guest's counter from the
//! host's, which is constant on every host that runs them, though the guest is not told so
//! without `invtsc`); elsewhere it reads the monotonic clock. The loop's thread is pinned (see
//! `sys::cpu`), so it reads one CPU's counter. `clock_gettime` is a vDSO read on most hosts, but a
//! system call where the kernel's clock source is not the TSC: under qemu TCG (HPET) each read
//! costs 2.2 us, about 2.5% of a Soft-RoCE round trip, inside every timed interval.
//!
//! Ticks become nanoseconds after the loop: the tick rate is calibrated against the monotonic
//! clock over the loop itself (its first and last instant), so no start-up calibration can be
//! off, and a sample is one subtraction inside the loop.
//!
//! `FABCHECK_LOOP_CLOCK=tsc|monotonic` (in the agent's environment) overrides the choice, to
//! compare the two.

use fabcheck_verbs::tsc;
use std::sync::OnceLock;
use std::time::Instant;

/// Which counter a loop reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Tsc,
    Monotonic,
}

/// How much of `/proc/cpuinfo` is read for the first CPU's flags.
const CPUINFO_PREFIX: u64 = 64 << 10;

/// This host's choice, decided once per process.
pub fn source() -> Source {
    static CHOICE: OnceLock<Source> = OnceLock::new();
    *CHOICE.get_or_init(|| {
        // The first CPU's `flags` line is within the first few KiB; the file grows with the CPUs.
        let head = crate::sys::fs::read_prefix(std::path::Path::new("/proc/cpuinfo"), CPUINFO_PREFIX).ok().flatten().unwrap_or_default();
        let flags = String::from_utf8_lossy(&head);
        choose(tsc::AVAILABLE, cpu_flags(&flags), std::env::var("FABCHECK_LOOP_CLOCK").ok().as_deref())
    })
}

/// The `flags` line of the first CPU in `/proc/cpuinfo`.
fn cpu_flags(cpuinfo: &str) -> Vec<&str> {
    cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags").and_then(|r| r.trim_start().strip_prefix(':')))
        .map(|r| r.split_whitespace().collect())
        .unwrap_or_default()
}

/// Pure: the TSC when the build can read it and its rate is constant (or when asked).
fn choose(available: bool, flags: Vec<&str>, asked: Option<&str>) -> Source {
    let has = |f: &str| flags.contains(&f);
    match asked {
        Some("monotonic") => Source::Monotonic,
        Some("tsc") if available => Source::Tsc,
        _ if available && has("tsc") && (has("constant_tsc") || has("hypervisor")) => Source::Tsc,
        _ => Source::Monotonic,
    }
}

/// A running loop's clock: `ticks()` inside the loop, `ns_per_tick()` after it.
pub struct LoopClock {
    source: Source,
    started: Instant,
    started_ticks: u64,
}

impl LoopClock {
    pub fn start() -> LoopClock {
        let source = source();
        let started = Instant::now();
        let mut clock = LoopClock { source, started, started_ticks: 0 };
        clock.started_ticks = clock.ticks();
        clock
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// The loop's start, for elapsed times and deadlines.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Now, in ticks: TSC cycles, or nanoseconds since the start.
    #[inline(always)]
    pub fn ticks(&self) -> u64 {
        match self.source {
            Source::Tsc => tsc::cycles(),
            Source::Monotonic => self.started.elapsed().as_nanos() as u64,
        }
    }

    /// Nanoseconds per tick over the loop so far (one clock read; call after the loop).
    pub fn ns_per_tick(&self) -> f64 {
        match self.source {
            Source::Monotonic => 1.0,
            Source::Tsc => {
                let ns = self.started.elapsed().as_nanos() as f64;
                let ticks = tsc::cycles().wrapping_sub(self.started_ticks) as f64;
                if ticks > 0.0 && ns > 0.0 {
                    ns / ticks
                } else {
                    1.0
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_first_cpus_flags_are_within_the_prefix_read() {
        let head = crate::sys::fs::read_prefix(std::path::Path::new("/proc/cpuinfo"), CPUINFO_PREFIX).unwrap().unwrap();
        let text = String::from_utf8_lossy(&head);
        assert!(cpu_flags(&text).contains(&"tsc"), "x86-64 CPUs have the tsc flag");
    }

    #[test]
    fn choice() {
        let both = vec!["fpu", "tsc", "constant_tsc", "nonstop_tsc"];
        assert_eq!(choose(true, both.clone(), None), Source::Tsc);
        assert_eq!(choose(true, vec!["tsc", "hypervisor"], None), Source::Tsc, "a guest: the host's counter");
        assert_eq!(choose(true, vec!["tsc"], None), Source::Monotonic, "an old CPU whose counter follows its frequency");
        assert_eq!(choose(false, both.clone(), None), Source::Monotonic, "no counter in this build");
        assert_eq!(choose(true, both, Some("monotonic")), Source::Monotonic);
        assert_eq!(choose(true, vec![], Some("tsc")), Source::Tsc);
        assert_eq!(choose(false, vec![], Some("tsc")), Source::Monotonic);
        assert_eq!(cpu_flags("processor\t: 0\nflags\t\t: fpu tsc constant_tsc\nbugs\t: x\n"), vec!["fpu", "tsc", "constant_tsc"]);
    }

    #[test]
    fn calibrated_ticks_measure_time() {
        let clock = LoopClock::start();
        let t0 = clock.ticks();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let t1 = clock.ticks();
        let ns = (t1 - t0) as f64 * clock.ns_per_tick();
        // Only that the conversion yields nanoseconds (a sleep lasts at least what it asks).
        assert!(ns.is_finite() && ns >= 19e6, "{ns} ns for a 20 ms sleep ({:?})", clock.source());
    }
}
