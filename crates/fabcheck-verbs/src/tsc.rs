//! The CPU's time-stamp counter, which perftest times its latency loops with (`get_cycles`):
//! one instruction, where `clock_gettime` may be a system call (a guest whose clock source is
//! the HPET: 2.2 us under qemu TCG). Not verbs, but here because every line of fabcheck's
//! `unsafe` is in this crate. Ticks are not nanoseconds: callers calibrate against the
//! monotonic clock over the interval they time, and use this only where the rate is constant
//! (`constant_tsc` and `nonstop_tsc`).

/// Whether this build can read the counter (x86-64).
pub const AVAILABLE: bool = cfg!(target_arch = "x86_64");

/// The counter (`rdtsc`), or 0 where there is none ([`AVAILABLE`] is false).
#[inline(always)]
pub fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc reads a register; every x86-64 CPU has it and it touches no memory.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_forward() {
        if super::AVAILABLE {
            let a = super::cycles();
            std::thread::sleep(std::time::Duration::from_millis(2));
            assert!(super::cycles() > a);
        }
    }
}
