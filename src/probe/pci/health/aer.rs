//! The kernel's AER counters of one PCI function: `aer_dev_correctable`, `aer_dev_nonfatal`
//! and `aer_dev_fatal` in its sysfs folder (Linux 4.19+, `drivers/pci/pcie/aer.c`,
//! `aer_stats_dev_attr`). Each file is one `NAME COUNT` line per error type the kernel names
//! (and `dev_cor_errs_bit[N] COUNT` for a set bit it has no name for), then `TOTAL_ERR_COR`,
//! `TOTAL_ERR_NONFATAL` or `TOTAL_ERR_FATAL`: the ERR_* messages the function sent.
//!
//! The rows differ between kernels, so none is assumed: 4.19 to 5.x print long names with
//! spaces (`Bad TLP 0`, `Completion Timeout 0`, 17 uncorrectable rows ending at `TLP Prefix
//! Blocked Error`), later kernels short ones (`BadTLP 0`, `CmpltTO 0`; 5.15 ends at
//! `PoisonTLPBlocked`, 6.x at `TLPXlatBlocked`). A row is the text before the last word, the
//! count the last word. Pure.

use serde::Serialize;

/// The three files, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AerSeverity {
    Fatal,
    #[serde(rename = "nonfatal")]
    NonFatal,
    Correctable,
}

impl AerSeverity {
    pub const ALL: [AerSeverity; 3] = [AerSeverity::Correctable, AerSeverity::NonFatal, AerSeverity::Fatal];

    /// The sysfs attribute.
    pub fn file(self) -> &'static str {
        match self {
            AerSeverity::Correctable => "aer_dev_correctable",
            AerSeverity::NonFatal => "aer_dev_nonfatal",
            AerSeverity::Fatal => "aer_dev_fatal",
        }
    }

    /// As the exporter's `severity` label and messages say it.
    pub fn name(self) -> &'static str {
        match self {
            AerSeverity::Correctable => "correctable",
            AerSeverity::NonFatal => "nonfatal",
            AerSeverity::Fatal => "fatal",
        }
    }

    /// The file's last line, as the kernel names it.
    pub fn total_row(self) -> &'static str {
        match self {
            AerSeverity::Correctable => "TOTAL_ERR_COR",
            AerSeverity::NonFatal => "TOTAL_ERR_NONFATAL",
            AerSeverity::Fatal => "TOTAL_ERR_FATAL",
        }
    }
}

/// One `aer_dev_*` file as the kernel printed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AerFile {
    /// Every row in the kernel's order, named as printed (`BadTLP`, `Bad TLP`,
    /// `dev_cor_errs_bit[9]`), with its count.
    pub rows: Vec<(String, u64)>,
    /// `TOTAL_ERR_*`: the ERR_* messages sent. One message may carry several rows' errors, so
    /// it may differ from the rows' sum.
    pub total: Option<u64>,
    /// Lines that are not `NAME COUNT` (at most a few kept): said, never guessed at.
    pub malformed: Vec<String>,
}

/// Rows read at most (6.x prints 32 uncorrectable ones); a longer file is not the kernel's.
const MAX_ROWS: usize = 64;
/// Rows the kernel can print: one per bit of the AER status register
/// (`AER_MAX_TYPEOF_UNCOR_ERRS` is 32, `AER_MAX_TYPEOF_COR_ERRS` 16).
const KERNEL_ROWS: usize = 32;
/// Malformed lines kept for messages.
const MAX_MALFORMED: usize = 3;

impl AerFile {
    /// The errors counted: the total where the kernel printed it, else the rows summed.
    pub fn count(&self) -> u64 {
        self.total.unwrap_or_else(|| self.rows.iter().fold(0u64, |sum, (_, n)| sum.saturating_add(*n)))
    }

    /// The rows that counted something, largest first (ties in the kernel's order).
    pub fn nonzero(&self) -> Vec<(&str, u64)> {
        let mut rows: Vec<(&str, u64)> = self.rows.iter().filter(|(_, n)| *n > 0).map(|(r, n)| (r.as_str(), *n)).collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1));
        rows
    }

    /// The count of one row, if the file has it.
    pub fn row(&self, name: &str) -> Option<u64> {
        self.rows.iter().find(|(r, _)| r == name).map(|(_, n)| *n)
    }
}

/// Why `text` is not an `aer_dev_*` file as the kernel writes it, or `None` when it is.
///
/// `drivers/pci/pcie/aer.c`, `aer_stats_dev_attr`: each row is `"%s %llu\n"` (or
/// `"%s_bit[%d] %llu\n"`), then one `"TOTAL_%s %llu\n"`. So a count is decimal digits that fit
/// a `u64` (never signed, fractional, hexadecimal or an exponent), there are at most 32 rows,
/// and there is exactly one total, the file's last line, named for its severity. A file that is
/// not this was not written by the kernel, and its counts are not counts: the caller says so
/// (`pcie.aer` `skip`, naming the file), never judges it clean. No line of the file is quoted,
/// only its number.
pub fn fault(severity: AerSeverity, text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.is_empty() {
        return Some("it is empty (the kernel always writes a TOTAL_ERR_* line)".into());
    }
    if lines.len() > KERNEL_ROWS + 1 {
        return Some(format!("it has {} lines; the kernel writes at most {} rows and a total", lines.len(), KERNEL_ROWS));
    }
    let mut totals = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some((name, count)) = line.rsplit_once(' ') else {
            return Some(format!("line {} is not NAME COUNT", i + 1));
        };
        let name = name.trim_end();
        if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
            return Some(format!("line {} has no row name the kernel would print", i + 1));
        }
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) || count.parse::<u64>().is_err() {
            return Some(format!("the count on line {} is not a decimal count the kernel prints (digits only, at most 18446744073709551615)", i + 1));
        }
        if name.starts_with("TOTAL_") {
            totals += 1;
            if name != severity.total_row() {
                return Some(format!("line {} is a total other than {}", i + 1, severity.total_row()));
            }
            if i + 1 != lines.len() {
                return Some(format!("its {} is not its last line", severity.total_row()));
            }
        }
    }
    match totals {
        0 => Some(format!("it has no {} line", severity.total_row())),
        1 => None,
        n => Some(format!("it has {n} total lines; the kernel writes one")),
    }
}

/// Parses one `aer_dev_*` file (leniently: see [`fault`] for whether it is the kernel's).
pub fn parse(text: &str) -> AerFile {
    let mut file = AerFile::default();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if file.rows.len() >= MAX_ROWS {
            break;
        }
        let parsed = line.rsplit_once(char::is_whitespace).and_then(|(name, count)| Some((name.trim(), count.parse::<u64>().ok()?)));
        match parsed {
            Some((name, count)) if name.starts_with("TOTAL_ERR_") => file.total = Some(count),
            Some((name, count)) if !name.is_empty() && name.len() <= 64 => file.rows.push((name.to_string(), count)),
            _ => {
                if file.malformed.len() < MAX_MALFORMED {
                    file.malformed.push(line.chars().take(80).collect());
                }
            }
        }
    }
    file
}

/// What a row means, for messages: the short names of 5.x+ kernels and the long ones of 4.19
/// and 5.x both (PCI Express Base Specification 6.0, 7.8.4.2 and 7.8.4.5). `None` for a row
/// this table does not know.
pub fn meaning(row: &str) -> Option<&'static str> {
    Some(match row {
        "RxErr" | "Receiver Error" => "receiver errors: symbols the physical layer could not decode (signal integrity)",
        "BadTLP" | "Bad TLP" => "bad TLPs: packets that failed the link CRC and were replayed (signal integrity)",
        "BadDLLP" | "Bad DLLP" => "bad DLLPs: link-layer packets that failed their CRC (signal integrity)",
        "Rollover" | "RELAY_NUM Rollover" => "replay number rollovers: a packet replayed four times over (a very noisy link)",
        "Timeout" | "Replay Timer Timeout" => "replay timer timeouts: acknowledgements lost on the link",
        "NonFatalErr" | "Advisory Non-Fatal" => "advisory non-fatal errors (an uncorrectable error handled as correctable)",
        "CorrIntErr" | "Corrected Internal Error" => "corrected internal errors of the device",
        "HeaderOF" | "Header Log Overflow" => "header log overflows",
        "DLP" | "Data Link Protocol" => "data link protocol errors",
        "SDES" | "Surprise Down Error" => "surprise link downs: the link dropped",
        "TLP" | "Poisoned TLP" => "poisoned TLPs: data marked corrupt in flight",
        "FCP" | "Flow Control Protocol" => "flow control protocol errors",
        "CmpltTO" | "Completion Timeout" => "completion timeouts: requests the other end never answered",
        "CmpltAbrt" | "Completer Abort" => "completer aborts",
        "UnxCmplt" | "Unexpected Completion" => "unexpected completions",
        "RxOF" | "Receiver Overflow" => "receiver overflows",
        "MalfTLP" | "Malformed TLP" => "malformed TLPs",
        "ECRC" => "end-to-end CRC errors",
        "UnsupReq" | "Unsupported Request" => "unsupported requests",
        "ACSViol" | "ACS Violation" => "ACS violations",
        "UncorrIntErr" | "Uncorrectable Internal Error" => "uncorrectable internal errors of the device",
        _ => return None,
    })
}

/// Rows that point at the link itself (signal integrity), rather than at what crossed it.
pub fn is_link_row(row: &str) -> bool {
    matches!(
        row,
        "RxErr"
            | "Receiver Error"
            | "BadTLP"
            | "Bad TLP"
            | "BadDLLP"
            | "Bad DLLP"
            | "Rollover"
            | "RELAY_NUM Rollover"
            | "Timeout"
            | "Replay Timer Timeout"
            | "SDES"
            | "Surprise Down Error"
            | "DLP"
            | "Data Link Protocol"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux 6.x `aer_dev_correctable` of a ConnectX-6 Dx behind a marginal riser.
    const COR_6X: &str =
        "RxErr 12\nBadTLP 183211\nBadDLLP 4021\nRollover 0\nTimeout 37\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 187281\n";
    /// Linux 5.15 `aer_dev_nonfatal` (its 18 named rows end at PoisonTLPBlocked).
    const NONFATAL_515: &str = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 3\nCmpltAbrt 0\nUnxCmplt 0\nRxOF 0\nMalfTLP 0\nECRC 0\n\
        UnsupReq 0\nACSViol 0\nUncorrIntErr 0\nBlockedTLP 0\nAtomicOpBlocked 0\nTLPBlockedErr 0\nPoisonTLPBlocked 0\nTOTAL_ERR_NONFATAL 3\n";
    /// Linux 4.19 `aer_dev_fatal` (the ABI document's sample: long names with spaces).
    const FATAL_419: &str = "Undefined 0\nData Link Protocol 0\nSurprise Down Error 1\nPoisoned TLP 0\nFlow Control Protocol 0\n\
        Completion Timeout 0\nCompleter Abort 0\nUnexpected Completion 0\nReceiver Overflow 0\nMalformed TLP 0\nECRC 0\n\
        Unsupported Request 0\nACS Violation 0\nUncorrectable Internal Error 0\nMC Blocked TLP 0\nAtomicOp Egress Blocked 0\n\
        TLP Prefix Blocked Error 0\nTOTAL_ERR_FATAL 1\n";

    #[test]
    fn a_six_x_correctable_file() {
        let f = parse(COR_6X);
        assert_eq!(f.rows.len(), 8);
        assert_eq!(f.total, Some(187_281));
        assert_eq!(f.count(), 187_281);
        assert_eq!(f.nonzero(), vec![("BadTLP", 183_211), ("BadDLLP", 4021), ("Timeout", 37), ("RxErr", 12)]);
        assert!(f.malformed.is_empty());
        assert!(meaning("BadTLP").unwrap().contains("CRC"));
    }

    #[test]
    fn other_kernels_rows() {
        let n = parse(NONFATAL_515);
        assert_eq!((n.rows.len(), n.row("CmpltTO"), n.count()), (18, Some(3), 3));
        let f = parse(FATAL_419);
        assert_eq!(f.row("Surprise Down Error"), Some(1));
        assert_eq!(f.nonzero(), vec![("Surprise Down Error", 1)]);
        assert!(is_link_row("Surprise Down Error") && meaning("Completion Timeout").is_some());
        // A bit the kernel has no name for is printed by number, when it counted.
        let unnamed = parse("RxErr 0\ndev_cor_errs_bit[9] 4\nTOTAL_ERR_COR 4\n");
        assert_eq!(unnamed.nonzero(), vec![("dev_cor_errs_bit[9]", 4)]);
    }

    #[test]
    fn damaged_files_are_said_not_guessed() {
        let f = parse("RxErr 1\nBadTLP lots\n\nTOTAL_ERR_COR\n");
        assert_eq!(f.rows, vec![("RxErr".to_string(), 1)]);
        assert_eq!(f.total, None, "a total without a count is not a total");
        assert_eq!(f.count(), 1, "without a total, the rows summed");
        assert_eq!(f.malformed, vec!["BadTLP lots".to_string(), "TOTAL_ERR_COR".to_string()]);
        assert_eq!(parse(""), AerFile::default());
        let huge = "x 1\n".repeat(1000);
        assert_eq!(parse(&huge).rows.len(), MAX_ROWS);
    }

    #[test]
    fn the_kernels_files_have_no_fault() {
        assert_eq!(fault(AerSeverity::Correctable, COR_6X), None);
        assert_eq!(fault(AerSeverity::NonFatal, NONFATAL_515), None);
        assert_eq!(fault(AerSeverity::Fatal, FATAL_419), None);
        assert_eq!(fault(AerSeverity::Correctable, "RxErr 0\ndev_cor_errs_bit[9] 4\nTOTAL_ERR_COR 18446744073709551615\n"), None);
    }

    /// Every count the kernel's `%llu` cannot print, and every shape it does not write: a fault
    /// naming the line, never a file judged clean (issue #58).
    #[test]
    fn counts_the_kernel_cannot_print_are_faults() {
        let cor = AerSeverity::Correctable;
        for count in ["18446744073709551616", "1e30", "-1", "0.5", "0x10", "lots", "+3", "１", ""] {
            let text = format!("RxErr {count}\nTOTAL_ERR_COR 0\n");
            let why = fault(cor, &text).unwrap_or_else(|| panic!("{count:?} passed"));
            assert!(why.contains("line 1"), "{count:?}: {why}");
        }
        let rows65 = format!("{}TOTAL_ERR_COR 0\n", "RxErr 0\n".repeat(65));
        assert!(fault(cor, &rows65).unwrap().contains("66 lines"));
        assert!(fault(cor, "RxErr 0\nTOTAL_ERR_COR 0\nTOTAL_ERR_COR 0\n").unwrap().contains("not its last line"));
        assert!(fault(cor, "RxErr 0\n").unwrap().contains("no TOTAL_ERR_COR"));
        assert!(fault(cor, "RxErr 0\nTOTAL_ERR_FATAL 0\n").unwrap().contains("other than TOTAL_ERR_COR"));
        assert!(fault(cor, "").is_some());
        assert!(fault(cor, "RxErr\u{1b}[2J 0\nTOTAL_ERR_COR 0\n").is_some());
    }
}
