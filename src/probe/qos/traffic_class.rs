//! MLNX_OFED's per-port ToS override, `/sys/class/infiniband/DEV/tc/PORT/traffic_class`
//! (mlnx-ofa_kernel `drivers/infiniband/hw/mlx5/main_ext.c`, `traffic_class_show`): it prints
//! `"Global tclass=%d\n"` while an override is set (`tcd->val >= 0`), then any per-rule lines,
//! and nothing at all while none is set. While set, the driver gives every QP modified on the
//! port that ToS (`qp.c`), whatever the application asked for: it is what NVIDIA's RoCE guide
//! sets (`echo 106 > .../traffic_class`) and what NCCL's and perftest's traffic then carries.

/// Where the attribute is, relative to the sysfs root (live `/sys`) or to a bundle (the same
/// path under `class/`).
pub fn path(device: &str, port: u32) -> String {
    format!("class/infiniband/{device}/tc/{port}/traffic_class")
}

/// What the attribute says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Override {
    /// `Global tclass=N`: every QP of the port carries ToS N.
    Global(u8),
    /// The file is there and says no global override (empty, or per-rule lines only).
    None,
}

/// Parses the attribute's text; `None` when a `Global tclass=` line holds no ToS byte.
pub fn parse(text: &str) -> Option<Override> {
    let Some(line) = text.lines().map(str::trim).find(|l| l.starts_with("Global tclass=")) else { return Some(Override::None) };
    let value = line.trim_start_matches("Global tclass=").trim();
    value.parse::<u8>().ok().map(Override::Global)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_traffic_class_show_prints() {
        assert_eq!(parse("Global tclass=106\n"), Some(Override::Global(106)));
        assert_eq!(parse("Global tclass=162\n"), Some(Override::Global(162)));
        assert_eq!(parse(""), Some(Override::None), "no override: the show prints nothing");
        assert_eq!(parse("Global tclass=300\n"), None);
        assert_eq!(path("mlx5_0", 1), "class/infiniband/mlx5_0/tc/1/traffic_class");
    }
}
