//! A network interface's link state as `ip link` and `ethtool` show it
//! (`/sys/class/net/IF`): the netdev of a RoCE port, its IPoIB interface, a bond's leg.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetdevState {
    pub name: String,
    /// `up`, `down`, `unknown`, ... as `/sys/class/net/X/operstate` says.
    pub operstate: Option<String>,
    pub carrier: Option<bool>,
    pub mtu: Option<u32>,
    /// Mb/s; `None` when the link is down or the driver does not say.
    pub speed_mbps: Option<u32>,
    pub duplex: Option<String>,
    /// PFC: priorities with priority flow control on (from `qos`), when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc_priorities: Option<Vec<u8>>,
    /// ECN for RoCE (mlx5 `ecn/roce_np` and `ecn/roce_rp`): priorities where it is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_priorities: Option<Vec<u8>>,
}
