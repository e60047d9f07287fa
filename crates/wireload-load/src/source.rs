//! Where a load reads from, and the bytes of an opened source.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::LoadError;

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

    /// Opens the source for reading: a file is memory-mapped, bytes are shared.
    pub fn open(&self) -> Result<Input, LoadError> {
        match self {
            Source::Bytes { data, .. } => Ok(Input(Bytes::Shared(Arc::clone(data)))),
            Source::File(path) => {
                let io = |source| LoadError::Io {
                    path: path.display().to_string(),
                    source,
                };
                let file = std::fs::File::open(path).map_err(io)?;
                let meta = file.metadata().map_err(io)?;
                if meta.is_dir() {
                    return Err(io(std::io::Error::other("is a directory")));
                }
                if meta.len() == 0 {
                    return Ok(Input(Bytes::Shared(Arc::from(Vec::new()))));
                }
                // SAFETY: the map is read-only and private to this load; wireload never writes
                // the file. Another process truncating it while we read is outside what a
                // memory-mapped reader can defend against (as for every mmap-based loader).
                let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
                #[cfg(unix)]
                {
                    // Advice only: a failure changes nothing but speed.
                    let _ = map.advise(memmap2::Advice::Sequential);
                    let _ = map.advise(memmap2::Advice::WillNeed);
                }
                Ok(Input(Bytes::Mapped(map)))
            }
        }
    }
}

/// The bytes of an opened source (kept mapped or shared while this lives).
pub struct Input(Bytes);

enum Bytes {
    Mapped(memmap2::Mmap),
    Shared(Arc<[u8]>),
}

impl Input {
    /// The whole input.
    pub fn bytes(&self) -> &[u8] {
        match &self.0 {
            Bytes::Mapped(m) => m,
            Bytes::Shared(b) => b,
        }
    }
}
