//! Where a load reads from.

use std::path::PathBuf;
use std::sync::Arc;

/// The input of a load.
#[derive(Debug, Clone)]
pub enum Source {
    /// A file, memory-mapped.
    File(PathBuf),
    /// Bytes already in memory (standard input, tests), with a name for error messages.
    Bytes {
        /// Shown in error messages in place of a file name.
        name: String,
        /// The CSV text.
        data: Arc<[u8]>,
    },
}

impl Source {
    /// The name errors use: the path or the given name.
    pub fn name(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Bytes { name, .. } => name.clone(),
        }
    }
}
