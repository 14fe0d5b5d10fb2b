//! Where and how a command's result goes: the format (`--format`, or `--json`) and the file
//! (`--output`, written atomically so node_exporter's textfile collector never reads half a
//! file). Set once by `main` before the command runs.

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Human,
    Json,
    Oneline,
    Prom,
    Junit,
}

#[derive(Debug, Clone, Default)]
struct Settings {
    format: Format,
    output: Option<PathBuf>,
    fail_on_warning: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
static SAW_WARNING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that the result holds a warning (for `--fail-on warning`).
pub fn note_warning(seen: bool) {
    if seen {
        SAW_WARNING.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether any result of this run held a warning.
pub fn saw_warning() -> bool {
    SAW_WARNING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Sets the format, the output file and whether warnings fail the run, for this process (the
/// first call wins).
pub fn configure(format: Format, output: Option<PathBuf>, fail_on_warning: bool) {
    let _ = SETTINGS.set(Settings { format, output, fail_on_warning });
}

/// `--fail-on warning`: a warning fails the run (its document's verdict too).
pub fn fail_on_warning() -> bool {
    SETTINGS.get().is_some_and(|s| s.fail_on_warning)
}

pub fn format() -> Format {
    SETTINGS.get().map(|s| s.format).unwrap_or_default()
}

/// Whether a machine format was asked for: commands then build their document, not the human view.
pub fn machine() -> bool {
    format() != Format::Human
}

/// Adds `host`, `fabcheck_version` and `time` (RFC 3339, UTC) to a JSON document.
pub fn stamp(doc: &mut serde_json::Value) {
    if let Some(map) = doc.as_object_mut() {
        map.insert("host".into(), crate::sys::os::hostname().into());
        map.insert("fabcheck_version".into(), env!("CARGO_PKG_VERSION").into());
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        map.insert("time".into(), rfc3339(now).into());
    }
}

/// Unix seconds as RFC 3339 UTC (`2026-11-30T14:05:00Z`): civil-from-days (Howard Hinnant's
/// algorithm), so no date crate is needed for one timestamp.
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Writes `text` to stdout, or to the `--output` file through a temporary file in the same
/// directory and a rename (atomic for readers).
pub fn emit(text: &str) {
    let Some(path) = SETTINGS.get().and_then(|s| s.output.clone()) else {
        print!("{text}");
        let _ = std::io::stdout().flush();
        return;
    };
    if let Err(e) = write_atomically(&path, text.as_bytes()) {
        eprintln!("fabcheck: cannot write {}: {e}", path.display());
        std::process::exit(2);
    }
}

/// Writes a side file (`--html`, `--csv`, `--svg`) as `--output` is written: through a temporary
/// file in the same directory and a rename, so a reader never sees half of it.
pub fn write_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically(path, bytes)
}

fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "fabcheck".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = result.and_then(|_| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_050_500), "2026-11-30T14:55:00Z");
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir = std::env::temp_dir().join(format!("fabcheck-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fabcheck.prom");
        write_atomically(&path, b"one\n").unwrap();
        write_atomically(&path, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
        assert!(write_atomically(&dir.join("missing/x"), b"x").is_err());
    }
}
