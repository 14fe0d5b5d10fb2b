//! The adapter's firmware configuration, as `mlxconfig -d BDF -e query` (NVIDIA MFT) or
//! mstflint's `mstconfig -d BDF -e query` prints it: a Default / Current / Next Boot table.
//!
//! Why it matters: a port's type (`LINK_TYPE_Pn`), SR-IOV and ATS live in non-volatile
//! firmware settings that take effect only after a cold reboot or `mlxfwreset`. A node whose
//! Next Boot differs from Current has been configured and not yet power-cycled, and advice
//! to "set it" would be wrong. Parsing is pure (`&str` in, typed values out); running the
//! tool lives in `fw_query`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The parameters `devices` reports: those that decide whether an RDMA/GPU node works.
/// `LINK_TYPE_P1`, `LINK_TYPE_P2`, ... are matched by prefix.
pub const REPORTED: [&str; 6] = ["SRIOV_EN", "NUM_OF_VFS", "ATS_ENABLED", "PCI_WR_ORDERING", "ADVANCED_PCI_SETTINGS", "MAX_ACC_OUT_READ"];

/// One value of the table: mlxconfig prints `ETH(2)`, mstconfig `ETH`; both read as label
/// `ETH`, and the number, when printed, is kept to compare values that are spelt differently.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub struct FwValue {
    label: String,
    code: Option<i64>,
}

impl FwValue {
    /// Reads one cell: `ETH(2)`, `True(1)`, `0`, `per_mkey(0)`, `ETH`.
    pub fn parse(cell: &str) -> FwValue {
        let cell = cell.trim();
        if let Some(open) = cell.rfind('(') {
            if let Some(inner) = cell[open + 1..].strip_suffix(')') {
                if let Ok(code) = inner.parse::<i64>() {
                    return FwValue { label: cell[..open].to_string(), code: Some(code) };
                }
            }
        }
        FwValue { label: cell.to_string(), code: cell.parse::<i64>().ok() }
    }

    /// The name without the number (`ETH`), or the number itself.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The port type this value names, when it is one (`IB(1)`, `ETH`, `VPI(3)`).
    pub fn link_type(&self) -> Option<LinkType> {
        match self.label.to_ascii_uppercase().as_str() {
            "IB" => Some(LinkType::Ib),
            "ETH" => Some(LinkType::Eth),
            "VPI" => Some(LinkType::Vpi),
            "" => match self.code {
                Some(1) => Some(LinkType::Ib),
                Some(2) => Some(LinkType::Eth),
                Some(3) => Some(LinkType::Vpi),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Two values are the same setting when their numbers agree (both printed), else when their
/// labels do, ignoring case (`True` and `TRUE`).
impl PartialEq for FwValue {
    fn eq(&self, other: &FwValue) -> bool {
        match (self.code, other.code) {
            (Some(a), Some(b)) => a == b,
            _ => self.label.eq_ignore_ascii_case(&other.label),
        }
    }
}

impl From<String> for FwValue {
    fn from(text: String) -> FwValue {
        FwValue::parse(&text)
    }
}

impl From<FwValue> for String {
    fn from(value: FwValue) -> String {
        value.label
    }
}

impl std::fmt::Display for FwValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label)
    }
}

/// A port type in firmware (`LINK_TYPE_Pn`): what the port runs after the next cold boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    Ib,
    Eth,
    /// Auto-sense (ConnectX-3 and older VPI cards).
    Vpi,
}

impl LinkType {
    /// The number `mlxconfig set LINK_TYPE_Pn=` takes.
    pub fn code(self) -> u8 {
        match self {
            LinkType::Ib => 1,
            LinkType::Eth => 2,
            LinkType::Vpi => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LinkType::Ib => "IB",
            LinkType::Eth => "ETH",
            LinkType::Vpi => "VPI",
        }
    }
}

/// One parameter's three values; a column the tool did not print is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FwParam {
    pub current: Option<FwValue>,
    pub next_boot: Option<FwValue>,
    pub default: Option<FwValue>,
}

impl FwParam {
    /// Whether a change waits for the next cold boot: Next Boot differs from Current. A `*`
    /// row alone is not that: it also marks a value set on purpose away from the default.
    pub fn pending(&self) -> bool {
        matches!((&self.current, &self.next_boot), (Some(c), Some(n)) if c != n)
    }
}

/// The parameters of one adapter, by name.
pub type FwConfig = BTreeMap<String, FwParam>;

/// Which column a header word names.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    Default,
    Current,
    NextBoot,
}

/// The whole table of one query, every parameter; `None` when the text holds no table (the
/// tool failed: not root, no such device, an MST service not started).
pub fn parse_query(text: &str) -> Option<FwConfig> {
    let mut lines = text.lines();
    let header = lines.by_ref().find(|l| l.trim_start().starts_with("Configurations:"))?;
    let columns = header_columns(header.trim_start().trim_start_matches("Configurations:"));
    if columns.is_empty() {
        return None;
    }
    let mut params = FwConfig::new();
    for line in lines {
        let row = line.trim();
        // The footnote ("The '*' shows parameters ...") and any message after the table.
        if row.is_empty() || row.starts_with("The '*'") || row.starts_with("-E-") || row.starts_with("-W-") {
            continue;
        }
        // mstflint's `printSingleParam` (mlxconfig/mlxcfg_ui.cpp) opens each row with the diff
        // mark (`*` or a space) and the read-only mark (`RO` or two spaces) before the name: a
        // parameter the host may not change is still a parameter (`*RO     LINK_TYPE_P1 ...`).
        let row = row.strip_prefix('*').unwrap_or(row).trim_start();
        let row = row.strip_prefix("RO").filter(|r| r.starts_with(char::is_whitespace)).unwrap_or(row).trim_start();
        let cells: Vec<&str> = row.split_whitespace().collect();
        let Some((name, values)) = cells.split_first() else { continue };
        if values.len() != columns.len() || !valid_param_name(name) || params.len() >= 4096 {
            continue;
        }
        let mut param = FwParam { current: None, next_boot: None, default: None };
        for (column, cell) in columns.iter().zip(values) {
            let value = Some(FwValue::parse(cell));
            match column {
                Column::Default => param.default = value,
                Column::Current => param.current = value,
                Column::NextBoot => param.next_boot = value,
            }
        }
        params.insert(name.to_string(), param);
    }
    (!params.is_empty()).then_some(params)
}

/// The columns a header names, in order (`Default Current Next Boot`, or fewer).
fn header_columns(header: &str) -> Vec<Column> {
    let words: Vec<&str> = header.split_whitespace().collect();
    let mut columns = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match words[i].to_ascii_lowercase().as_str() {
            "default" => columns.push(Column::Default),
            "current" => columns.push(Column::Current),
            "next" if words.get(i + 1).is_some_and(|w| w.eq_ignore_ascii_case("boot")) => {
                columns.push(Column::NextBoot);
                i += 1;
            }
            _ => return Vec::new(),
        }
        i += 1;
    }
    columns
}

fn valid_param_name(name: &str) -> bool {
    name.len() <= 64 && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '[' || c == ']' || c == '.')
}

/// What `devices` keeps of a query: the parameters that matter for RDMA/GPU nodes, and any
/// other parameter whose change is pending (a pending change matters by being one).
pub fn reported(all: &FwConfig) -> FwConfig {
    all.iter()
        .filter(|(name, param)| name.starts_with("LINK_TYPE_P") || REPORTED.contains(&name.as_str()) || param.pending())
        .map(|(name, param)| (name.clone(), param.clone()))
        .collect()
}

/// The `LINK_TYPE_Pn` parameter behind a port: a dual-port card with one PCI function per
/// port (ConnectX-4 and later) has port 1 on each function, so the function number picks the
/// physical port; a card with both ports on one function (ConnectX-3) numbers them itself.
pub fn link_type_param(pci_address: Option<&str>, ports_on_device: usize, port: u32) -> String {
    let physical = if ports_on_device > 1 {
        port
    } else {
        pci_address.and_then(|a| a.rsplit('.').next()).and_then(|f| f.parse::<u32>().ok()).filter(|f| *f < 8).map_or(port, |f| f + 1)
    };
    format!("LINK_TYPE_P{physical}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MLXCONFIG_4_X: &str = "\nDevice #1:\n----------\n\nDevice type:        ConnectX7\nName:               MCX755106AS-HEA_Ax\n\
Description:        NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112\n\
Device:             0000:17:00.0\n\n\
Configurations:                                          Default             Current             Next Boot\n\
*        LINK_TYPE_P1                                    IB(1)               IB(1)               ETH(2)\n\
         LINK_TYPE_P2                                    IB(1)               IB(1)               IB(1)\n\
*        SRIOV_EN                                        False(0)            True(1)             True(1)\n\
         NUM_OF_VFS                                      0                   0                   0\n\
         ATS_ENABLED                                     False(0)            False(0)            False(0)\n\
         ADVANCED_PCI_SETTINGS                           False(0)            False(0)            False(0)\n\
         PCI_WR_ORDERING                                 per_mkey(0)         per_mkey(0)         per_mkey(0)\n\
         MAX_ACC_OUT_READ                                0                   0                   0\n\
         CQE_COMPRESSION                                 BALANCED(0)         BALANCED(0)         BALANCED(0)\n\
The '*' shows parameters with next value different from default/current value.\n";

    const MSTCONFIG_4_2X: &str = "\nDevice #1:\n----------\n\nDevice type:    ConnectX6\nName:           MCX653106A-HDA_Ax\n\
Description:    ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; dual-port QSFP56\nDevice:         0000:3b:00.0\n\n\
Configurations:                              Default         Current         Next Boot\n\
*       LINK_TYPE_P1                        IB              ETH             ETH\n\
        LINK_TYPE_P2                        IB              IB              IB\n\
*       NUM_OF_VFS                          0               8               16\n\
        SRIOV_EN                            False           True            True\n\
The '*' shows parameters with next value different from default/current value.\n";

    /// mstconfig without `-e` support: one column.
    const MSTCONFIG_NEXT_ONLY: &str = "Device #1:\n----------\n\nDevice type:    ConnectX5\nDevice:         0000:5e:00.0\n\n\
Configurations:                              Next Boot\n         LINK_TYPE_P1                        ETH(2)\n         SRIOV_EN                            False(0)\n";

    #[test]
    fn mlxconfig_table_with_numbers() {
        let all = parse_query(MLXCONFIG_4_X).unwrap();
        assert_eq!(all.len(), 9);
        let p1 = &all["LINK_TYPE_P1"];
        assert_eq!(p1.current.as_ref().unwrap().link_type(), Some(LinkType::Ib));
        assert_eq!(p1.next_boot.as_ref().unwrap().link_type(), Some(LinkType::Eth));
        assert_eq!(p1.default.as_ref().unwrap().label(), "IB");
        assert!(p1.pending());
        // `*` because it differs from the default, not pending: set on purpose.
        assert!(!all["SRIOV_EN"].pending());
        assert!(!all["LINK_TYPE_P2"].pending());
        assert_eq!(all["PCI_WR_ORDERING"].current.as_ref().unwrap().label(), "per_mkey");
        let kept = reported(&all);
        assert!(!kept.contains_key("CQE_COMPRESSION"), "{kept:?}");
        assert_eq!(kept.len(), 8);
    }

    #[test]
    fn mstconfig_table_without_numbers() {
        let all = parse_query(MSTCONFIG_4_2X).unwrap();
        assert_eq!(all["LINK_TYPE_P1"].current.as_ref().unwrap().link_type(), Some(LinkType::Eth));
        assert!(!all["LINK_TYPE_P1"].pending());
        assert!(all["NUM_OF_VFS"].pending());
        assert_eq!(all["NUM_OF_VFS"].next_boot.as_ref().unwrap().label(), "16");
        assert!(!all["SRIOV_EN"].pending());
    }

    #[test]
    fn one_column_table_has_no_current_and_nothing_pending() {
        let all = parse_query(MSTCONFIG_NEXT_ONLY).unwrap();
        let p1 = &all["LINK_TYPE_P1"];
        assert_eq!((p1.current.is_none(), p1.default.is_none()), (true, true));
        assert_eq!(p1.next_boot.as_ref().unwrap().link_type(), Some(LinkType::Eth));
        assert!(!p1.pending());
    }

    /// A read-only parameter (a host that may not change it: a DPU's host, a locked card) is
    /// printed `RO` before its name, after the diff mark (mstflint `printSingleParam`).
    #[test]
    fn a_read_only_row_is_read() {
        let text = "Configurations:                                          Default             Current             Next Boot\n\
*RO     LINK_TYPE_P1                                    IB(1)               IB(1)               ETH(2)\n\
 RO     LINK_TYPE_P2                                    ETH(2)              ETH(2)              ETH(2)\n\
        ROCE_CONTROL                                    ROCE_ENABLE(2)      ROCE_ENABLE(2)      ROCE_ENABLE(2)\n\
\nThe 'RO' shows parameters which are for read only and cannot be changed\n";
        let all = parse_query(text).unwrap();
        assert_eq!(all.len(), 3, "{all:?}");
        assert!(all["LINK_TYPE_P1"].pending());
        assert_eq!(all["LINK_TYPE_P2"].current.as_ref().unwrap().link_type(), Some(LinkType::Eth));
        assert_eq!(all["ROCE_CONTROL"].next_boot.as_ref().unwrap().label(), "ROCE_ENABLE");
    }

    #[test]
    fn values_spelt_differently_compare_by_number() {
        assert_eq!(FwValue::parse("ETH(2)"), FwValue::parse("ETH"));
        assert_eq!(FwValue::parse("True(1)"), FwValue::parse("TRUE"));
        assert_ne!(FwValue::parse("IB(1)"), FwValue::parse("ETH(2)"));
        assert_ne!(FwValue::parse("0"), FwValue::parse("8"));
        assert_eq!(FwValue::parse("(2)").link_type(), Some(LinkType::Eth));
    }

    #[test]
    fn no_table_is_none() {
        for text in [
            "",
            "-E- Failed to open the device\n",
            "Device #1:\n----------\nDevice:  0000:17:00.0\n\nConfigurations:   Default Current Next Boot\n",
            "Configurations: Frobs\n  LINK_TYPE_P1 IB(1)\n",
        ] {
            assert_eq!(parse_query(text), None, "{text:?}");
        }
    }

    #[test]
    fn hostile_rows_are_skipped() {
        let text = "Configurations:   Default Current Next Boot\n  lower_case a b c\n  TOO_FEW IB(1) ETH(2)\n  OK_ROW 1 1 2\n";
        let all = parse_query(text).unwrap();
        assert_eq!(all.keys().collect::<Vec<_>>(), vec!["OK_ROW"]);
    }

    #[test]
    fn the_link_type_parameter_of_a_port() {
        assert_eq!(link_type_param(Some("0000:17:00.0"), 1, 1), "LINK_TYPE_P1");
        assert_eq!(link_type_param(Some("0000:17:00.1"), 1, 1), "LINK_TYPE_P2");
        assert_eq!(link_type_param(Some("0000:04:00.0"), 2, 2), "LINK_TYPE_P2");
        assert_eq!(link_type_param(None, 1, 1), "LINK_TYPE_P1");
    }

    #[test]
    fn json_is_the_label() {
        let p = &parse_query(MLXCONFIG_4_X).unwrap()["LINK_TYPE_P1"];
        let json = serde_json::to_value(p).unwrap();
        assert_eq!(json, serde_json::json!({"current": "IB", "next_boot": "ETH", "default": "IB"}));
    }
}
