//! MLNX_OFED mlx5's `class/net/IF/ecn/` tree (mlnx-ofa_kernel drivers/net/ethernet/mellanox/
//! mlx5/core/en_sysfs.c builds it, en_ecn.c answers it; the upstream kernel has no such tree):
//! `roce_np/enable/P` and `roce_rp/enable/P` for P in 0..7 (`"%d\n"`, 1 on; an empty read when
//! the firmware query fails), `roce_np/cnp_802p_prio` and `roce_np/cnp_dscp` (`"%d\n"`: how the
//! notification point marks the CNPs it sends). Pure: the reader hands in each file's text.

use super::{Dscp, Priority};

/// The eight `enable/P` files of one side, `None` unless all eight read as 0 or 1.
pub fn enables(texts: &[Option<String>; 8]) -> Option<[bool; 8]> {
    let mut out = [false; 8];
    for (slot, text) in out.iter_mut().zip(texts) {
        *slot = match text.as_deref().map(str::trim) {
            Some("1") => true,
            Some("0") => false,
            _ => return None,
        };
    }
    Some(out)
}

pub fn cnp_priority(text: &str) -> Option<Priority> {
    text.trim().parse::<u8>().ok().and_then(Priority::new)
}

pub fn cnp_dscp(text: &str) -> Option<Dscp> {
    text.trim().parse::<u8>().ok().and_then(Dscp::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enables_need_all_eight() {
        let on3: [Option<String>; 8] = std::array::from_fn(|p| Some(if p == 3 { "1\n" } else { "0\n" }.to_string()));
        assert_eq!(enables(&on3), Some([false, false, false, true, false, false, false, false]));
        let mut empty = on3.clone();
        empty[5] = Some(String::new());
        assert_eq!(enables(&empty), None, "an empty read is a failed firmware query, not off");
        let mut missing = on3;
        missing[0] = None;
        assert_eq!(enables(&missing), None);
        assert_eq!(cnp_priority("6\n"), Priority::new(6));
        assert_eq!(cnp_dscp("48\n"), Dscp::new(48));
        assert_eq!(cnp_dscp("-1\n"), None);
    }
}
