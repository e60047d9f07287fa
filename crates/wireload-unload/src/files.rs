//! File plumbing shared by the CSV, Arrow IPC and Parquet writers and readers: a file that appears
//! only when complete, a read-only mapping of a file, and the copy that detaches decoded
//! arrays from that mapping.

use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use arrow::array::{Array, ArrayData, ArrayRef, RecordBatch};
use arrow::error::ArrowError;
use bytes::Bytes;

use crate::UnloadError;

/// Wraps an I/O error with the path it concerns.
pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> UnloadError + '_ {
    move |source| UnloadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A file written under a temporary name beside its target and renamed onto the target by
/// [`AtomicFile::commit`] after an fsync. Dropped without a commit (an error, a panic, a
/// cancellation), it removes the temporary file, so the target is either the complete new
/// file or untouched.
pub(crate) struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    file: Option<File>,
    /// CRC-32 of every byte written through [`AtomicFile::file`].
    crc: Mutex<crc32fast::Hasher>,
}

/// The writer of an [`AtomicFile`]: writes to the file and adds the bytes to its checksum.
pub(crate) struct ChecksummedFile<'a> {
    file: &'a File,
    crc: &'a Mutex<crc32fast::Hasher>,
}

impl Write for ChecksummedFile<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.crc
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// What a committed [`AtomicFile`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Committed {
    /// Length in bytes.
    pub len: u64,
    /// CRC-32 of the bytes.
    pub crc32: u32,
}

impl AtomicFile {
    /// Creates `.<name>.<pid>-<n>.tmp` in the target's directory.
    pub(crate) fn create(target: &Path) -> Result<Self, UnloadError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = target.file_name().ok_or_else(|| {
            UnloadError::Options(format!("{}: not a file name", target.display()))
        })?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".{}-{n}.tmp", std::process::id()));
        let temp = target.with_file_name(temp_name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(io_error(target))?;
        Ok(Self {
            target: target.to_path_buf(),
            temp,
            file: Some(file),
            crc: Mutex::new(crc32fast::Hasher::new()),
        })
    }

    /// A writer into the temporary file (every byte must go through one, for the checksum).
    pub(crate) fn file(&self) -> ChecksummedFile<'_> {
        ChecksummedFile {
            file: self.file.as_ref().expect("the file is open until commit"),
            crc: &self.crc,
        }
    }

    /// The target path, for error messages.
    pub(crate) fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes the file to disk, renames it onto the target and syncs the directory.
    /// Returns the file's length and checksum.
    pub(crate) fn commit(mut self) -> Result<Committed, UnloadError> {
        let file = self.file.take().expect("commit is called once");
        let result = (|| {
            file.sync_all()?;
            let len = file.metadata()?.len();
            drop(file);
            std::fs::rename(&self.temp, &self.target)?;
            Ok(len)
        })();
        let len = match result {
            Ok(len) => len,
            Err(source) => {
                let _ = std::fs::remove_file(&self.temp);
                return Err(UnloadError::Io {
                    path: self.target.clone(),
                    source,
                });
            }
        };
        // The rename is durable once the directory is synced; a directory that cannot be
        // opened or synced (some file systems refuse) does not make the write fail.
        #[cfg(unix)]
        if let Some(dir) = self.target.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(dir) = File::open(dir) {
                let _ = dir.sync_all();
            }
        }
        let crc32 = self
            .crc
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .finalize();
        Ok(Committed { len, crc32 })
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Maps `path` read-only. An empty file gives empty bytes (an empty mapping is an error on
/// some systems).
pub(crate) fn map_file(path: &Path) -> Result<Bytes, UnloadError> {
    let file = File::open(path).map_err(io_error(path))?;
    let len = file.metadata().map_err(io_error(path))?.len();
    if len == 0 {
        return Ok(Bytes::new());
    }
    // SAFETY: a mapping is sound as long as nothing truncates or rewrites the file while it is
    // mapped; that is assumed, not enforced (no file lock). The readers keep the window short:
    // the mapping lives only for the duration of one read call, every array that still points
    // into it is copied out (`detach_batch`) before the call returns, and our own writers
    // never modify a file in place (they write a temporary file and rename it), so rewriting
    // a file with wireload while another thread reads it replaces the inode instead of
    // changing the mapped pages. Other programs that truncate the file during a read could
    // make the read fault (SIGBUS); they cannot corrupt memory that outlives the call.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_error(path))?;
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::WillNeed);
    Ok(Bytes::from_owner(map))
}

/// Whether any buffer of `data` (or of its children) lies inside `range` of addresses.
fn points_into(data: &ArrayData, range: &Range<usize>) -> bool {
    let inside = |ptr: *const u8| range.contains(&(ptr as usize));
    data.buffers().iter().any(|b| inside(b.as_ptr()))
        || data.nulls().is_some_and(|n| inside(n.buffer().as_ptr()))
        || data.child_data().iter().any(|c| points_into(c, range))
}

/// Returns `batch` with every column that still references the mapped bytes `map` copied
/// into memory of its own, so the batch outlives the mapping. Columns decoded into new
/// buffers (decompressed ones, usually) are kept as they are.
pub(crate) fn detach_batch(batch: RecordBatch, map: &[u8]) -> Result<RecordBatch, ArrowError> {
    let start = map.as_ptr() as usize;
    let range = start..start + map.len();
    if !batch
        .columns()
        .iter()
        .any(|c| points_into(&c.to_data(), &range))
    {
        return Ok(batch);
    }
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|column| {
            if points_into(&column.to_data(), &range) {
                wireload_storage::own_buffers(column)
            } else {
                Ok(column.clone())
            }
        })
        .collect::<Result<_, ArrowError>>()?;
    RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
}

thread_local! {
    /// Set while `no_panic` runs on this thread: the panic hook stays quiet.
    static EXPECTING_PANICS: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, turning a panic into an error message: arrow and parquet 59 still panic on some
/// malformed inputs that the readers' own checks do not catch (a schema with an unknown type,
/// a validity bitmap shorter than its column, a negative column chunk offset), and a damaged
/// file must give an error, not end the process.
///
/// The first call wraps the process's panic hook so that panics inside `f` are not printed
/// (the message becomes part of the error); panics anywhere else go to the previous hook as
/// before.
pub(crate) fn no_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !EXPECTING_PANICS.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = EXPECTING_PANICS.with(|e| e.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    EXPECTING_PANICS.with(|e| e.set(was));
    result.map_err(|payload| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        format!("the decoder failed on malformed data ({text})")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_reports_the_checksum_of_the_bytes_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.bin");
        let out = AtomicFile::create(&target).unwrap();
        let mut w = std::io::BufWriter::with_capacity(7, out.file());
        for i in 0..1000u32 {
            w.write_all(&i.to_le_bytes()[..(i % 4) as usize + 1])
                .unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let committed = out.commit().unwrap();
        let on_disk = std::fs::read(&target).unwrap();
        assert_eq!(committed.len, on_disk.len() as u64);
        assert_eq!(committed.crc32, crc32fast::hash(&on_disk));
        assert_ne!(committed.crc32, crc32fast::hash(&on_disk[1..]));
    }
}
