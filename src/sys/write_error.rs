//! Why a file fabcheck was asked to write could not be written: the path at fault and what
//! was being done. Shared by the writers (`atomic`, `new_dir`) and the judgement of a target
//! path (`target`), so none of them imports another for it.

use std::io;
use std::path::{Path, PathBuf};

/// Why a file could not be written, naming the path at fault (the target, or the temporary file
/// or directory beside it) and what was being done.
#[derive(Debug)]
pub struct WriteError {
    /// The path the error is about (not always the target: a temporary file, its directory).
    pub path: PathBuf,
    /// What was being done, in words (`create a temporary file in`, `write`, ...).
    pub doing: &'static str,
    pub source: io::Error,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot {} {}: {}", self.doing, self.path.display(), self.source)
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl WriteError {
    pub(crate) fn new(path: &Path, doing: &'static str, source: io::Error) -> WriteError {
        WriteError { path: path.to_path_buf(), doing, source }
    }
}
