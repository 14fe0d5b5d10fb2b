//! Host pages for registered regions: an anonymous mapping of their own (zeroed, page
//! aligned, in a mapping no other allocation shares), and their NUMA placement.
//!
//! A region registered for a NIC asks the kernel for pages on the NIC's node (`mbind`,
//! MPOL_PREFERRED), so its memory is local even where the thread that registers it could not
//! be pinned near the NIC. Pages are placed when first touched, and `ibv_reg_mr` touches them
//! all (it pins them), so the policy is set between the mapping and the registration. The
//! mapping being the region's alone, the policy leaves with it (a policy set on heap pages
//! would stay with whatever the allocator put there next). Best effort: a kernel or sandbox
//! that refuses `mbind` leaves the placement to first touch.

/// A page-aligned, zeroed anonymous mapping of `len` bytes (a multiple of the page size),
/// or None when the kernel refuses it (out of memory, a mapping limit).
pub(crate) fn map(len: usize) -> Option<*mut u8> {
    // SAFETY: a fresh private anonymous mapping: no file, no address asked for, so it touches
    // no memory the program has; the result is checked against MAP_FAILED.
    let addr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    (addr != libc::MAP_FAILED && !addr.is_null()).then_some(addr.cast())
}

/// Unmaps what [`map`] returned.
///
/// # Safety
/// `addr` and `len` are a mapping [`map`] returned, not used after this (no registration or
/// reference points into it any more).
pub(crate) unsafe fn unmap(addr: *mut u8, len: usize) {
    // SAFETY: the caller's contract: the whole mapping, and nothing uses it after.
    let rc = unsafe { libc::munmap(addr.cast(), len) };
    if rc != 0 {
        tracing::warn!(len, "munmap of a region's pages failed; they stay mapped");
    }
}

/// The policy: prefer the node, fall back to another when it is full (never fail the test).
const MPOL_PREFERRED: libc::c_int = 1;
/// Nodes a mask can name (the kernel's MAX_NUMNODES is at most 1024).
const MASK_WORDS: usize = 16;
const MASK_BITS: usize = MASK_WORDS * 64;

/// The nodemask naming `node` alone; None past the mask.
pub(crate) fn node_mask(node: u32) -> Option<[libc::c_ulong; MASK_WORDS]> {
    let node = usize::try_from(node).ok().filter(|&n| n < MASK_BITS - 1)?;
    let mut mask = [0; MASK_WORDS];
    mask[node / 64] = 1 << (node % 64);
    Some(mask)
}

/// Asks for the pages of `[buf, buf + len)` on `node`: a mapping from [`map`], whose pages
/// are not touched yet (the ones already touched keep their place).
/// Returns the errno when the kernel refuses.
pub(crate) fn prefer_node(buf: *mut u8, len: usize, node: u32) -> Result<(), i32> {
    let mask = node_mask(node).ok_or(libc::EINVAL)?;
    // SAFETY: mbind changes only the memory policy of the range, which the caller owns (a
    // mapping of `len` bytes from `map`); `mask` lives across the call and holds
    // MASK_BITS bits, and maxnode says no more (the kernel reads maxnode - 1 bits).
    let rc = unsafe { libc::syscall(libc::SYS_mbind, buf, len, MPOL_PREFERRED, mask.as_ptr(), MASK_BITS, 0u32) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_name_one_node() {
        assert_eq!(node_mask(0).unwrap()[0], 1);
        assert_eq!(node_mask(65).unwrap()[1], 2);
        assert_eq!(node_mask(7).unwrap().iter().map(|w| w.count_ones()).sum::<u32>(), 1);
        assert_eq!(node_mask(5000), None);
    }

    /// On this host's node 0 (every Linux machine has one): the kernel reports the policy back.
    #[test]
    fn a_mapping_prefers_the_node_it_was_given() {
        let len = 1 << 20;
        let buf = map(len).expect("a 1 MiB mapping");
        // SAFETY: the mapping is 1 MiB, readable and writable.
        assert!(unsafe { std::slice::from_raw_parts(buf, len) }.iter().all(|&b| b == 0), "zeroed");
        let placed = prefer_node(buf, len, 0);
        let (mut mode, mut mask) = (-1, [0 as libc::c_ulong; MASK_WORDS]);
        // SAFETY: get_mempolicy writes one int and MASK_BITS bits of mask; MPOL_F_ADDR (2)
        // asks for the policy of the page at `buf`, which this test owns.
        let rc = unsafe { libc::syscall(libc::SYS_get_mempolicy, &mut mode as *mut libc::c_int, mask.as_mut_ptr(), MASK_BITS, buf, 2) };
        // SAFETY: the mapping from `map` above, not used after.
        unsafe { unmap(buf, len) };
        // A sandbox that forbids mbind (a container's seccomp profile) says so with EPERM:
        // then the region keeps first-touch placement, and this test says what it saw.
        match placed {
            Ok(()) => {
                assert_eq!(rc, 0);
                assert_eq!((mode, mask[0]), (MPOL_PREFERRED, 1), "the policy the kernel holds for the mapping");
            }
            Err(errno) => assert!(errno == libc::EPERM || errno == libc::ENOSYS, "mbind refused with errno {errno}"),
        }
    }
}
