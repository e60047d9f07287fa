//! Where a load reads from: a file (memory-mapped, the fast path), bytes already in memory,
//! or any reader (standard input, a socket, a decompressor), read as a stream of blocks so
//! the input is never held whole. A gzip or zstd file (known by its first bytes) is
//! decoded as it is read and streamed; an input in another encoding than UTF-8 is
//! transcoded as it is read (after decompression) and streamed.

use std::io::{Read, Seek};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use crate::compressed::{BoxedReader, Codec, Counting, Mapped, Sniffing, read_head};
use crate::encoding::{Encoding, EncodingError, transcoding};
use crate::parallel_decode::{self, ParallelReader, Part};
use wireload_publish::LoadError;

/// The input of a load.
#[derive(Clone)]
pub enum Source {
    /// A file, memory-mapped.
    File(PathBuf),
    /// A file opened already (by a gate that checked where it lies), read as a
    /// [`Source::File`] is.
    Opened {
        /// The path as the user wrote it, shown in error messages.
        name: String,
        /// The open file; each [`Source::open`] reads it through a duplicate of it.
        file: Arc<std::fs::File>,
    },
    /// Bytes already in memory (tests, small inputs), with a name for error messages.
    Bytes {
        /// Shown in error messages in place of a file name.
        name: String,
        /// The CSV text.
        data: Arc<[u8]>,
    },
    /// A stream (standard input, a socket, a decompressor), read once in blocks.
    Reader {
        /// Shown in error messages in place of a file name.
        name: String,
        /// The reader; taken by the first [`Source::open`].
        reader: Arc<Mutex<Option<BoxedReader>>>,
        /// Its length in bytes, when known (progress bars).
        size: Option<u64>,
        /// Bytes read per block.
        block: usize,
    },
    /// Blocks filled elsewhere (a connection's COPY data by a [`Filler`]), handed over in
    /// order.
    Fed {
        /// Shown in error messages in place of a file name.
        name: String,
        /// The blocks; taken by the first [`Source::open`].
        feed: Arc<Mutex<Option<Box<dyn Feed>>>>,
        /// Where used blocks go back to be filled again.
        recycler: Recycler,
    },
}

/// What hands a [`Source::Fed`] its blocks.
pub trait Feed: Send {
    /// The next block; None at the end of the input. An error fails the load.
    fn next_block(&mut self) -> std::io::Result<Option<Block>>;
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(p) => f.debug_tuple("File").field(p).finish(),
            Source::Opened { name, .. } => f
                .debug_struct("Opened")
                .field("name", name)
                .finish_non_exhaustive(),
            Source::Bytes { name, data } => f
                .debug_struct("Bytes")
                .field("name", name)
                .field("len", &data.len())
                .finish(),
            Source::Reader {
                name, size, block, ..
            } => f
                .debug_struct("Reader")
                .field("name", name)
                .field("size", size)
                .field("block", block)
                .finish_non_exhaustive(),
            Source::Fed { name, .. } => f
                .debug_struct("Fed")
                .field("name", name)
                .finish_non_exhaustive(),
        }
    }
}

impl Source {
    /// A source that streams `reader` (read once, in blocks of [`BLOCK_BYTES`]), named
    /// `name` in errors.
    pub fn reader(name: impl Into<String>, reader: impl Read + Send + 'static) -> Self {
        Self::reader_in_blocks(name, reader, BLOCK_BYTES)
    }

    /// A source that streams `reader` in blocks of `block` bytes (at least one).
    pub fn reader_in_blocks(
        name: impl Into<String>,
        reader: impl Read + Send + 'static,
        block: usize,
    ) -> Self {
        Source::Reader {
            name: name.into(),
            reader: Arc::new(Mutex::new(Some(Box::new(reader)))),
            size: None,
            block: block.max(1),
        }
    }

    /// A source that streams `reader`, decoded when its first bytes are a gzip or zstd
    /// magic (standard input given `gzip -c f.csv`), else read as it is; named `name` in
    /// errors. Progress counts the decoded CSV bytes (the compressed size of a stream is
    /// unknown).
    pub fn decompressing(name: impl Into<String>, reader: impl Read + Send + 'static) -> Self {
        Self::decompressing_in_blocks(name, reader, BLOCK_BYTES)
    }

    /// [`Source::decompressing`] in blocks of `block` decoded bytes (at least one).
    pub fn decompressing_in_blocks(
        name: impl Into<String>,
        reader: impl Read + Send + 'static,
        block: usize,
    ) -> Self {
        Self::reader_in_blocks(name, Sniffing::new(Box::new(reader)), block)
    }

    /// A source of the blocks `feed` hands over, named `name` in errors; used blocks go
    /// back through `recycler` (from [`Filler::new`]).
    pub fn fed(name: impl Into<String>, feed: impl Feed + 'static, recycler: Recycler) -> Self {
        Source::Fed {
            name: name.into(),
            feed: Arc::new(Mutex::new(Some(Box::new(feed)))),
            recycler,
        }
    }

    /// The name errors use: the path or the given name.
    pub fn name(&self) -> String {
        match self {
            Source::File(p) => p.display().to_string(),
            Source::Opened { name, .. }
            | Source::Bytes { name, .. }
            | Source::Reader { name, .. }
            | Source::Fed { name, .. } => name.clone(),
        }
    }

    /// The bytes the source holds, when known without reading it: a file's size on disk
    /// (compressed or not), the length of bytes, a reader's given size.
    pub fn size(&self) -> Option<u64> {
        match self {
            Source::File(p) => std::fs::metadata(p)
                .ok()
                .filter(std::fs::Metadata::is_file)
                .map(|m| m.len()),
            Source::Opened { file, .. } => file
                .metadata()
                .ok()
                .filter(std::fs::Metadata::is_file)
                .map(|m| m.len()),
            Source::Bytes { data, .. } => Some(data.len() as u64),
            Source::Reader { size, .. } => *size,
            Source::Fed { .. } => None,
        }
    }

    /// Opens the source: a file is memory-mapped (a gzip or zstd file is decoded as it is
    /// streamed), bytes are shared, a reader is streamed.
    pub fn open(&self) -> Result<Input, LoadError> {
        self.open_counting(&Arc::new(AtomicU64::new(0)))
    }

    /// [`Source::open`], a compressed file adding the compressed bytes its decoder consumes
    /// to `consumed` as it reads them (a load's progress).
    pub fn open_counting(&self, consumed: &Arc<AtomicU64>) -> Result<Input, LoadError> {
        self.open_encoded(Encoding::Utf8, consumed)
    }

    /// [`Source::open_counting`] of a source in `encoding`: anything but UTF-8 is
    /// transcoded to UTF-8 as it is read (after decompression) and so always streamed; the
    /// bytes of the source the transcoder consumes are added to `consumed` (the stream's
    /// [`Blocks::decoded`] is true and its [`Blocks::compressed_size`] the source's size,
    /// when known). A UTF-16 byte order mark is dropped; invalid input fails the read
    /// with [`LoadError::Encoding`].
    pub fn open_encoded(
        &self,
        encoding: Encoding,
        consumed: &Arc<AtomicU64>,
    ) -> Result<Input, LoadError> {
        let transcoded = |reader: BoxedReader, size: Option<u64>, block: usize| {
            self.transcoded(reader, encoding, consumed, size, block)
        };
        let utf8 = encoding == Encoding::Utf8;
        match self {
            Source::Bytes { data, .. } if utf8 => Ok(Input::Whole(Whole::Shared(Arc::clone(data)))),
            Source::Bytes { data, .. } => {
                let size = data.len() as u64;
                let reader = Box::new(std::io::Cursor::new(Arc::clone(data)));
                Ok(Input::Stream(transcoded(
                    reader,
                    Some(size),
                    block_for(size),
                )))
            }
            Source::File(path) => {
                let file = std::fs::File::open(path).map_err(|source| LoadError::Io {
                    path: path.display().to_string(),
                    source,
                })?;
                self.open_file(file, encoding, consumed)
            }
            Source::Opened { name, file } => {
                let file = file.try_clone().map_err(|source| LoadError::Io {
                    path: name.clone(),
                    source,
                })?;
                self.open_file(file, encoding, consumed)
            }
            Source::Reader {
                name,
                reader,
                size,
                block,
            } => {
                let reader = take_once(reader, name)?;
                Ok(Input::Stream(if utf8 {
                    Blocks::new(name.clone(), reader, *size, *block)
                } else {
                    transcoded(reader, *size, *block)
                }))
            }
            Source::Fed {
                name,
                feed,
                recycler,
            } => {
                let feed = take_once(feed, name)?;
                if !utf8 {
                    let reader = Box::new(FeedReader {
                        feed,
                        block: None,
                        recycler: recycler.clone(),
                    });
                    return Ok(Input::Stream(transcoded(reader, None, BLOCK_BYTES)));
                }
                Ok(Input::Stream(Blocks {
                    name: name.clone(),
                    size: None,
                    block: BLOCK_BYTES,
                    feed,
                    recycle: recycler.clone(),
                    done: false,
                    compressed: None,
                    decoded: false,
                }))
            }
        }
    }

    /// A stream of `reader` (the source's bytes, decompressed) transcoded from `encoding`,
    /// the bytes it consumes counted in `consumed`.
    fn transcoded(
        &self,
        reader: BoxedReader,
        encoding: Encoding,
        consumed: &Arc<AtomicU64>,
        size: Option<u64>,
        block: usize,
    ) -> Blocks {
        let counted = Counting::new(reader, Arc::clone(consumed));
        let blocks = Blocks::new(
            self.name(),
            transcoding(encoding, Box::new(counted)),
            None,
            block,
        );
        Blocks {
            compressed: size,
            decoded: true,
            ..blocks
        }
    }

    /// Reads the open `file` of this source (a [`Source::File`] or [`Source::Opened`]):
    /// mapped when it is a plain UTF-8 file, streamed (decoded, transcoded) otherwise.
    fn open_file(
        &self,
        file: std::fs::File,
        encoding: Encoding,
        consumed: &Arc<AtomicU64>,
    ) -> Result<Input, LoadError> {
        let io = |source| LoadError::Io {
            path: self.name(),
            source,
        };
        let utf8 = encoding == Encoding::Utf8;
        let transcoded = |reader: BoxedReader, size: Option<u64>, block: usize| {
            self.transcoded(reader, encoding, consumed, size, block)
        };
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(io(std::io::Error::other("is a directory")));
        }
        if !meta.is_file() {
            // a pipe or a device: stream it (decoded when compressed)
            let reader = Box::new(Sniffing::new(Box::new(file)));
            return Ok(Input::Stream(if utf8 {
                Blocks::new(self.name(), reader, None, BLOCK_BYTES)
            } else {
                transcoded(reader, None, BLOCK_BYTES)
            }));
        }
        if meta.len() == 0 {
            return Ok(Input::Whole(Whole::Shared(Arc::from(Vec::new()))));
        }
        let mut file = file;
        if let Some(codec) = Codec::sniff(&read_head(&mut file).map_err(io)?) {
            file.rewind().map_err(io)?;
            // a small file's blocks need not be large (CSV decodes to some
            // times its compressed size)
            let block = usize::try_from(meta.len().saturating_mul(8))
                .unwrap_or(BLOCK_BYTES)
                .clamp(1 << 20, BLOCK_BYTES);
            // several frames or members: decoded on threads of their own
            let parallel = parallel_decode::open(&file, codec, consumed, HEADROOM);
            let decoder: BoxedReader = match parallel.map_err(io)? {
                // zstd runs grow to a block's size: their buffers become blocks as
                // they are (gzip regions stay small, and are gathered into blocks)
                Some(parallel) if utf8 && codec == Codec::Zstd => {
                    return Ok(Input::Stream(Blocks {
                        compressed: Some(meta.len()),
                        decoded: true,
                        ..Blocks::handed_over(self.name(), parallel, block)
                    }));
                }
                Some(parallel) => Box::new(parallel),
                // SAFETY: as for a plain file's map below: read-only, private to
                // this load, never written by wireload.
                None => match unsafe { memmap2::Mmap::map(&file) } {
                    // decoded in place: the compressed bytes are not copied
                    Ok(map) => {
                        #[cfg(unix)]
                        {
                            // Advice only: a failure changes nothing but speed.
                            let _ = map.advise(memmap2::Advice::Sequential);
                        }
                        codec
                            .decoder_buffered(Mapped::new(map, Arc::clone(consumed)))
                            .map_err(io)?
                    }
                    Err(_) => codec
                        .decoder(Counting::new(file, Arc::clone(consumed)))
                        .map_err(io)?,
                },
            };
            let blocks = Blocks::new(self.name(), transcoding(encoding, decoder), None, block);
            return Ok(Input::Stream(Blocks {
                compressed: Some(meta.len()),
                decoded: true,
                ..blocks
            }));
        }
        if !utf8 {
            file.rewind().map_err(io)?;
            let block = block_for(meta.len());
            return Ok(Input::Stream(transcoded(
                Box::new(file),
                Some(meta.len()),
                block,
            )));
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
        Ok(Input::Whole(Whole::Mapped(map)))
    }
}

/// Blocks for a transcoded input of `size` bytes: some times its size (UTF-8 takes up to
/// twice the bytes of Latin-1), within 1 MiB and [`BLOCK_BYTES`].
fn block_for(size: u64) -> usize {
    usize::try_from(size.saturating_mul(2))
        .unwrap_or(BLOCK_BYTES)
        .clamp(1 << 20, BLOCK_BYTES)
}

/// The blocks of a [`Feed`] read as a stream of bytes (to transcode them); read blocks go
/// back through the recycler.
struct FeedReader {
    feed: Box<dyn Feed>,
    block: Option<Block>,
    recycler: Recycler,
}

impl Read for FeedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if let Some(block) = &mut self.block {
                let n = buf.len().min(block.bytes().len());
                if n > 0 || buf.is_empty() {
                    buf[..n].copy_from_slice(&block.bytes()[..n]);
                    block.advance(n);
                    return Ok(n);
                }
                if let Some(used) = self.block.take() {
                    self.recycler.recycle(used);
                }
            }
            match self.feed.next_block()? {
                Some(block) => self.block = Some(block),
                None => return Ok(0),
            }
        }
    }
}

/// What a stream source holds, taken by its first reader: a stream is read once.
fn take_once<T>(slot: &Mutex<Option<T>>, name: &str) -> Result<T, LoadError> {
    slot.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or_else(|| LoadError::Io {
            path: name.to_string(),
            source: std::io::Error::other("the stream was read already"),
        })
}

/// An opened source: all of it in memory (mapped or shared), or a stream of blocks.
pub enum Input {
    /// The whole input, addressable at once (the fast path).
    Whole(Whole),
    /// Blocks read one after another.
    Stream(Blocks),
}

impl Input {
    /// The whole input, when it is addressable at once.
    pub fn whole(&self) -> Option<&[u8]> {
        match self {
            Input::Whole(w) => Some(w.bytes()),
            Input::Stream(_) => None,
        }
    }

    /// Reads everything into memory (for callers that need the input whole, such as the
    /// header of a stream).
    pub fn into_bytes(self) -> Result<Arc<[u8]>, LoadError> {
        match self {
            Input::Whole(Whole::Shared(b)) => Ok(b),
            Input::Whole(w) => Ok(Arc::from(w.bytes())),
            Input::Stream(mut blocks) => {
                let mut all = Vec::new();
                while let Some(block) = blocks.next_block()? {
                    all.extend_from_slice(block.bytes());
                }
                Ok(Arc::from(all))
            }
        }
    }
}

/// Bytes held whole.
pub enum Whole {
    /// A memory-mapped file.
    Mapped(memmap2::Mmap),
    /// Shared bytes.
    Shared(Arc<[u8]>),
}

impl Whole {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Whole::Mapped(m) => m,
            Whole::Shared(b) => b,
        }
    }

    /// Hands the memory pages that lie wholly inside `range` back to the kernel when the
    /// bytes are a mapped file (bytes in memory stay as they are): a load calls it for
    /// each chunk it has parsed, so the pages of the file it holds are those of the chunks
    /// in work, not the whole file's. The bytes stay readable: a later read (a line counted
    /// for an error message) faults them in from the file again.
    pub(crate) fn release(&self, range: std::ops::Range<usize>) {
        let Whole::Mapped(map) = self else {
            return;
        };
        // SAFETY: sysconf reads a constant of the system; it has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let base = map.as_ptr() as usize;
        // the whole pages inside the range (the map starts on a page)
        let from = (base + range.start).next_multiple_of(page) - base;
        let to = ((base + range.end.min(map.len())) / page * page).saturating_sub(base);
        if to > from {
            // SAFETY: the map is a private read-only mapping of a file that wireload never
            // writes: dropping its pages loses nothing, and any later read (by this thread
            // or another) faults in the same bytes from the file. `from..to` lies inside
            // the map. A failure changes nothing but memory use.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
            };
        }
    }
}

/// Bytes read per block of a stream.
pub const BLOCK_BYTES: usize = 16 << 20;

/// Bytes of a stream's first block; each next one is twice as large, up to the stream's
/// block size.
const FIRST_BLOCK: usize = 1 << 20;

/// Room kept in front of each block's bytes for the unparsed end of the previous window
/// (usually part of one record), so a window is a block without copying it.
const HEADROOM: usize = 64 << 10;

/// Buffers of parsed windows waiting to be read into again (so a stream reuses a few
/// buffers instead of touching fresh memory for every block).
const RECYCLED: usize = 3;

/// A block of a stream, with room in front of its bytes.
#[derive(Debug, Default)]
pub struct Block {
    buf: Vec<u8>,
    start: usize,
}

impl Block {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Puts `front` before the bytes: in the room kept for it when it fits.
    pub fn prepend(&mut self, front: &[u8]) {
        if front.len() <= self.start {
            self.start -= front.len();
            self.buf[self.start..self.start + front.len()].copy_from_slice(front);
        } else {
            let mut buf = Vec::with_capacity(front.len() + self.bytes().len());
            buf.extend_from_slice(front);
            buf.extend_from_slice(self.bytes());
            *self = Block { buf, start: 0 };
        }
    }

    /// Appends `more` after the bytes.
    pub fn extend(&mut self, more: &[u8]) {
        self.buf.extend_from_slice(more);
    }

    /// Drops the first `n` bytes.
    pub fn advance(&mut self, n: usize) {
        self.start += n.min(self.bytes().len());
    }
}

/// Hands blocks that are no longer needed back to a stream's reader, to read into again.
#[derive(Clone)]
pub struct Recycler(SyncSender<Vec<u8>>);

impl Recycler {
    /// Gives `block`'s buffer back (dropped when enough are waiting already).
    pub fn recycle(&self, block: Block) {
        if block.buf.capacity() > 0 {
            let _ = self.0.try_send(block.buf);
        }
    }
}

/// Gathers bytes written in pieces of any size (a connection's COPY data) into blocks with
/// room in front, filling buffers the load gives back through the [`Recycler`] paired with
/// it, so a long stream touches no fresh memory.
pub struct Filler {
    block: Block,
    size: usize,
    recycled: Receiver<Vec<u8>>,
}

impl Filler {
    /// A filler of blocks of `size` bytes (at least one), and the recycler the load hands
    /// its used blocks back with.
    pub fn new(size: usize) -> (Filler, Recycler) {
        let (recycle, recycled) = sync_channel(RECYCLED);
        let filler = Filler {
            block: Block::default(),
            size: size.max(1),
            recycled,
        };
        (filler, Recycler(recycle))
    }

    /// Appends `data`, calling `full` with each block it fills, in order.
    pub fn write(&mut self, mut data: &[u8], mut full: impl FnMut(Block)) {
        while !data.is_empty() {
            if self.block.buf.capacity() == 0 {
                let mut buf = self.recycled.try_recv().unwrap_or_default();
                buf.clear();
                buf.reserve(HEADROOM + self.size);
                buf.resize(HEADROOM, 0);
                self.block = Block {
                    buf,
                    start: HEADROOM,
                };
            }
            let n = (self.size - self.block.bytes().len()).min(data.len());
            self.block.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.block.bytes().len() == self.size {
                full(std::mem::take(&mut self.block));
            }
        }
    }

    /// The last block, when it holds anything.
    pub fn finish(&mut self) -> Option<Block> {
        let last = std::mem::take(&mut self.block);
        (!last.bytes().is_empty()).then_some(last)
    }
}

/// A stream's blocks, one at a time: read from a reader by a thread of its own (one block
/// ahead of the load), or handed over by a [`Feed`].
pub struct Blocks {
    name: String,
    size: Option<u64>,
    block: usize,
    feed: Box<dyn Feed>,
    recycle: Recycler,
    done: bool,
    /// the size of the source this stream decodes, when known
    compressed: Option<u64>,
    /// the stream decodes its source (decompresses or transcodes it), counting the
    /// source's bytes as progress
    decoded: bool,
}

/// A block of `buf` (its room kept in front) filled by `read` up to `len` bytes in all, or
/// until `read` gives 0; empty at once at the end.
fn fill(
    mut buf: Vec<u8>,
    len: usize,
    mut read: impl FnMut(&mut [u8]) -> std::io::Result<usize>,
) -> std::io::Result<Block> {
    // a recycled buffer is full length already (unless it was a smaller one): little to zero
    buf.resize(len, 0);
    let mut filled = HEADROOM;
    while filled < len {
        match read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(filled);
    Ok(Block {
        buf,
        start: HEADROOM,
    })
}

/// Sends `item` to the load; false when the thread is done: the stream ended (an empty
/// block), failed, or the load stopped listening.
fn send(tx: &SyncSender<std::io::Result<Block>>, item: std::io::Result<Block>) -> bool {
    let end = item.as_ref().map_or(true, |b| b.bytes().is_empty());
    tx.send(item).is_ok() && !end
}

/// The blocks a reader thread sends.
struct ReadAhead(Receiver<std::io::Result<Block>>);

impl Feed for ReadAhead {
    fn next_block(&mut self) -> std::io::Result<Option<Block>> {
        match self.0.recv() {
            Ok(Ok(block)) if block.bytes().is_empty() => Ok(None),
            Ok(block) => block.map(Some),
            // the thread is gone without an end: it could not start
            Err(_) => Err(std::io::Error::other("the reading thread stopped")),
        }
    }
}

impl Blocks {
    fn new(name: String, mut reader: BoxedReader, size: Option<u64>, block: usize) -> Self {
        Blocks::reading(name, size, block, move |tx, recycled| {
            // the first blocks are small, so the parse starts before a whole block is read
            // (or decompressed)
            let mut size = block.min(FIRST_BLOCK);
            loop {
                // a recycled buffer is full length already (unless it held one of the
                // first, smaller blocks): nothing to zero
                let buf = recycled.try_recv().unwrap_or_default();
                let item = fill(buf, HEADROOM + size, |b| reader.read(b));
                size = (size * 2).min(block);
                if !send(&tx, item) {
                    return;
                }
            }
        })
    }

    /// The blocks of `reader`'s decoded jobs as the threads decoded them (a job's buffer is
    /// a block, with room in front), and blocks read from what it decodes itself.
    fn handed_over(name: String, mut reader: ParallelReader, block: usize) -> Self {
        Blocks::reading(name, None, block, move |tx, recycled| {
            let mut size = block.min(FIRST_BLOCK);
            loop {
                while let Ok(buf) = recycled.try_recv() {
                    reader.give(buf);
                }
                let item = match reader.next_part() {
                    Ok(Part::Decoded(buf)) => Ok(Block {
                        buf,
                        start: HEADROOM,
                    }),
                    Ok(Part::Stream) => {
                        let buf = reader.spare_buffer();
                        let item = fill(buf, HEADROOM + size, |b| reader.read_part(b));
                        size = (size * 2).min(block);
                        match item {
                            // the end of what the reader decoded itself: what next?
                            Ok(b) if b.bytes().is_empty() => {
                                reader.give(b.buf);
                                continue;
                            }
                            item => item,
                        }
                    }
                    Ok(Part::End) => Ok(Block::default()),
                    Err(e) => Err(e),
                };
                if !send(&tx, item) {
                    return;
                }
            }
        })
    }

    /// The blocks a reading thread of its own sends: `read` runs there with the channel
    /// to send them through (one block in it, one being read: the thread stays a block
    /// ahead) and the one the load gives its used buffers back through.
    fn reading(
        name: String,
        size: Option<u64>,
        block: usize,
        read: impl FnOnce(SyncSender<std::io::Result<Block>>, Receiver<Vec<u8>>) + Send + 'static,
    ) -> Self {
        let (tx, blocks) = sync_channel(1);
        let (recycle, recycled) = sync_channel::<Vec<u8>>(RECYCLED);
        let spawned = std::thread::Builder::new()
            .name("wireload-read".into())
            .spawn(move || read(tx, recycled));
        let blocks = match spawned {
            Ok(_) => blocks,
            Err(e) => {
                let (tx, rx) = sync_channel(1);
                let _ = tx.send(Err(e));
                rx
            }
        };
        Blocks {
            name,
            size,
            block,
            feed: Box::new(ReadAhead(blocks)),
            recycle: Recycler(recycle),
            done: false,
            compressed: None,
            decoded: false,
        }
    }

    /// Hands a block that is no longer needed back to be filled again.
    pub fn recycle(&self, block: Block) {
        self.recycle.recycle(block);
    }

    /// A handle that recycles blocks after the stream has moved elsewhere.
    pub fn recycler(&self) -> Recycler {
        self.recycle.clone()
    }

    /// The stream's length, when known.
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// The size of the compressed (or not UTF-8) source the stream decodes, when it
    /// decodes one and the size is known (its progress is the source's bytes consumed,
    /// counted by [`Source::open_encoded`]).
    pub fn compressed_size(&self) -> Option<u64> {
        self.compressed
    }

    /// True when the stream decodes its source (decompresses or transcodes it): its
    /// progress is the source's bytes, counted as they are consumed (not the bytes of the
    /// blocks).
    pub fn decoded(&self) -> bool {
        self.decoded
    }

    /// Bytes per block, at most (a read stream's first blocks are smaller).
    pub fn block(&self) -> usize {
        self.block
    }

    /// The next block; None at the end of the stream.
    pub fn next_block(&mut self) -> Result<Option<Block>, LoadError> {
        if self.done {
            return Ok(None);
        }
        match self.feed.next_block() {
            Ok(Some(block)) => Ok(Some(block)),
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(source) => {
                self.done = true;
                let bad = source
                    .get_ref()
                    .and_then(|e| e.downcast_ref::<EncodingError>());
                Err(match bad {
                    Some(e) => LoadError::Encoding {
                        file: self.name.clone(),
                        byte: e.byte,
                        encoding: e.encoding,
                        problem: e.problem.clone(),
                    },
                    None => LoadError::Io {
                        path: self.name.clone(),
                        source,
                    },
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(front_room: usize, bytes: &[u8]) -> Block {
        let mut buf = vec![0; front_room];
        buf.extend_from_slice(bytes);
        Block {
            buf,
            start: front_room,
        }
    }

    #[test]
    fn a_front_that_fits_goes_into_the_room_and_a_larger_one_moves_the_bytes() {
        let mut b = block(4, b"cd");
        b.prepend(b"ab");
        assert_eq!((b.bytes(), b.start), (&b"abcd"[..], 2));
        b.prepend(b"0123");
        assert_eq!((b.bytes(), b.start), (&b"0123abcd"[..], 0));
        b.extend(b"ef");
        b.advance(3);
        assert_eq!(b.bytes(), b"3abcdef");
        b.advance(100);
        assert!(b.bytes().is_empty());
    }

    #[test]
    fn released_pages_of_a_mapped_file_read_the_same_bytes_again() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.csv");
        std::fs::write(&path, &data).unwrap();
        let Input::Whole(whole) = Source::File(path).open().unwrap() else {
            panic!("a file is mapped")
        };
        for range in [
            0..1,
            5..70_000,
            70_000..300_000,
            0..300_000,
            299_999..300_000,
        ] {
            whole.release(range);
            assert_eq!(whole.bytes(), &data[..]);
        }
        // bytes in memory are never released
        let shared = Whole::Shared(Arc::from(data.clone()));
        shared.release(0..300_000);
        assert_eq!(shared.bytes(), &data[..]);
    }

    #[test]
    fn blocks_read_everything_in_order_while_recycled() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let Input::Stream(mut blocks) =
            Source::reader_in_blocks("x", std::io::Cursor::new(data.clone()), 7_000)
                .open()
                .unwrap()
        else {
            panic!("a reader streams")
        };
        let mut all = Vec::new();
        while let Some(b) = blocks.next_block().unwrap() {
            assert!(b.bytes().len() <= 7_000);
            all.extend_from_slice(b.bytes());
            blocks.recycle(b);
        }
        assert_eq!(all, data);
    }

    #[test]
    fn a_read_stream_starts_with_small_blocks_that_double_up_to_its_block_size() {
        let data: Vec<u8> = (0..20u32 << 20).map(|i| (i % 251) as u8).collect();
        let Input::Stream(mut blocks) =
            Source::reader_in_blocks("x", std::io::Cursor::new(data.clone()), 8 << 20)
                .open()
                .unwrap()
        else {
            panic!("a reader streams")
        };
        let (mut all, mut sizes) = (Vec::new(), Vec::new());
        while let Some(b) = blocks.next_block().unwrap() {
            sizes.push(b.bytes().len() >> 20);
            all.extend_from_slice(b.bytes());
            blocks.recycle(b);
        }
        assert_eq!(sizes, [1, 2, 4, 8, 5]);
        assert_eq!(all, data);
    }
}
