//! rdma_cm's per-port default ToS (drivers/infiniband/core/cma_configfs.c): after `mkdir
//! /sys/kernel/config/rdma_cm/DEV`, `DEV/ports/N/default_roce_tos` reads `"%u\n"` (0 until set)
//! and is what rdma_cm gives a connection whose application sets no ToS of its own. The DSCP is
//! the ToS >> 2 (its two low bits are ECN): 106 is DSCP 26 with ECT(0), NCCL's usual
//! `NCCL_IB_TC`.

/// Where the attribute is, relative to the sysfs root (live: `/sys`, configfs mounted at
/// `/sys/kernel/config`) or to a bundle (`config/...`, what `fabcheck bundle` saves).
pub fn path(live: bool, device: &str, port: u32) -> String {
    let base = if live { "kernel/config" } else { "config" };
    format!("{base}/rdma_cm/{device}/ports/{port}/default_roce_tos")
}

/// The ToS byte, `None` when the text is not one.
pub fn parse_tos(text: &str) -> Option<u8> {
    let t = text.trim();
    // kstrtou8(buf, 0, ...) takes 0x and 0 prefixes when written; it always prints decimal.
    t.parse::<u8>().ok().or_else(|| t.strip_prefix("0x").and_then(|h| u8::from_str_radix(h, 16).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_kernel_prints() {
        assert_eq!(parse_tos("106\n"), Some(106));
        assert_eq!(parse_tos("0\n"), Some(0));
        assert_eq!(parse_tos("0x6a"), Some(106));
        assert_eq!(parse_tos("256\n"), None);
        assert_eq!(parse_tos(""), None);
        assert_eq!(path(true, "mlx5_0", 1), "kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos");
        assert_eq!(path(false, "mlx5_0", 1), "config/rdma_cm/mlx5_0/ports/1/default_roce_tos");
    }
}
