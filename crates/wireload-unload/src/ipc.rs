//! Arrow IPC files with LZ4-frame compressed buffers: parallel writer and reader.
//!
//! # The file
//!
//! The [Arrow IPC file format]: `ARROW1\0\0`, the schema message, one record-batch message
//! per piece of at most [`PIECE_ROWS`] rows, the end-of-stream marker, the footer (schema
//! and the offset and lengths of every record batch), the footer's length and `ARROW1`.
//! Every message is framed as `0xFFFFFFFF`, the metadata length, the flatbuffer metadata
//! padded to 64 bytes, then the body, each buffer padded to 64 bytes. pyarrow, Polars and
//! arrow-rs' own `FileReader` read it.
//!
//! # Writing in parallel
//!
//! arrow-ipc's `FileWriter` compresses one batch at a time on the calling thread. Here the
//! batches are cut into pieces ([`RecordBatch::slice`], no copy) so that even one huge
//! batch gives every thread work; windows of pieces are encoded (and compressed) in parallel
//! on the current rayon pool with arrow-ipc's `StreamEncoder` (uncompressed buffers are not
//! copied), while the previous window is written to the file in order. The footer is then
//! built from the block offsets with arrow-ipc's flatbuffer types (`FooterBuilder`).
//!
//! # Reading
//!
//! The file is mapped; the footer is checked and parsed, every record-batch block is checked
//! against the file and its message against its body (see `check_message`), and the blocks
//! are decoded in parallel with arrow-ipc's `FileDecoder` with full validation on. Buffers
//! that are stored uncompressed are copied out of the mapping, so the returned batches own
//! their memory.
//!
//! [Arrow IPC file format]: https://arrow.apache.org/docs/format/Columnar.html#ipc-file-format

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::buffer::Buffer;
use arrow::datatypes::{DataType, Field, SchemaRef};
use arrow::error::ArrowError;
use arrow_ipc::reader::FileDecoder;
use arrow_ipc::writer::{
    DictionaryTracker, IpcDataGenerator, IpcWriteOptions, StreamEncoder, write_message,
};
use arrow_ipc::{Block, CompressionType, MessageHeader, MetadataVersion};
use rayon::prelude::*;

use crate::files::{AtomicFile, detach_batch, io_error, map_file, no_panic};
use crate::{UnloadError, UnloadReport};

/// Rows per record batch in the file. Batches are cut into pieces of at most this many rows
/// (nearly equal ones) so that the threads share the work of one large batch. On lineitem,
/// pieces of 8K to 1M rows encode and decode at the same speed per CPU second within the
/// noise of the measurement, and 8K-row pieces make the LZ4 file 1.6% larger; 64K rows
/// (about 11 MB of lineitem) gives 16 pieces per 1M-row chunk for the threads to share,
/// keeps the window of pieces in flight at tens of MB, and readers get batches of a useful
/// size.
pub const PIECE_ROWS: usize = 64 * 1024;

/// Pieces encoded at a time per rayon thread; the window bounds the encoded data held in
/// memory (two windows: the one being written and the one being encoded).
const PIECES_PER_THREAD: usize = 4;

/// The file magic, at the start (padded to 8 bytes) and at the end.
const MAGIC: &[u8; 6] = b"ARROW1";

/// How the buffers of an Arrow IPC file are compressed (the IPC format compresses each
/// buffer on its own, with an 8-byte uncompressed-length prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IpcCompression {
    /// Buffers stored as they are in memory: the largest file, the fastest to write and
    /// read, and readable by any Arrow implementation.
    None,
    /// LZ4 frames: fast to compress and very fast to decompress; the default.
    #[default]
    Lz4Frame,
    /// Zstandard at level 1: smaller files, slower to write.
    Zstd,
}

impl IpcCompression {
    fn codec(self) -> Option<CompressionType> {
        match self {
            Self::None => None,
            Self::Lz4Frame => Some(CompressionType::LZ4_FRAME),
            Self::Zstd => Some(CompressionType::ZSTD),
        }
    }

    fn write_options(self) -> Result<IpcWriteOptions, ArrowError> {
        let options = IpcWriteOptions::default().try_with_compression(self.codec())?;
        match self {
            Self::Zstd => options.try_with_compression_level(Some(1)),
            _ => Ok(options),
        }
    }
}

/// Writes `batches` as an Arrow IPC file with LZ4-frame compressed buffers (or uncompressed,
/// or Zstandard), encoding batches in parallel on the current rayon pool and writing them in
/// order.
///
/// Every batch must have the columns of `schema` (same types; no nulls in a non-nullable
/// field). Batches larger than [`PIECE_ROWS`] rows are written as several record batches;
/// batches without rows are left out (the schema alone makes an empty table).
/// Dictionary-encoded columns are not supported.
///
/// The file appears only when complete (written under a temporary name beside it, synced,
/// renamed); a failed or cancelled write leaves nothing. `cancel` is polled between pieces;
/// once it is set the write stops with [`UnloadError::Cancelled`].
pub fn write_arrow_file(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    compression: IpcCompression,
    cancel: &AtomicBool,
) -> Result<UnloadReport, UnloadError> {
    let start = Instant::now();
    if let Some(field) = schema
        .fields()
        .iter()
        .find(|f| has_dictionary(f.data_type()))
    {
        return Err(UnloadError::Options(format!(
            "column \"{}\" is dictionary-encoded ({}); the Arrow IPC writer needs plain columns",
            field.name(),
            field.data_type()
        )));
    }
    let options = compression.write_options()?;
    let pieces = split_batches(schema, batches, PIECE_ROWS)?;
    let rows = pieces.iter().map(|p| p.num_rows() as u64).sum();

    let out = AtomicFile::create(path)?;
    let mut writer =
        IpcFileWriter::new(BufWriter::with_capacity(1 << 20, out.file()), out.target());
    let schema_len = writer.start(schema, &options)?;
    let window = (PIECES_PER_THREAD * rayon::current_num_threads()).max(2);
    let mut encoded: Vec<EncodedPiece> = Vec::new();
    for window in pieces.chunks(window) {
        check_cancel(cancel)?;
        // Write the previous window while this one is encoded.
        let (written, next) = rayon::join(
            || writer.write_batches(std::mem::take(&mut encoded)),
            || encode_pieces(window, schema, &options, schema_len, cancel),
        );
        written?;
        encoded = next?;
    }
    writer.write_batches(encoded)?;
    check_cancel(cancel)?;
    writer.finish(schema)?;
    let committed = out.commit()?;
    Ok(UnloadReport {
        rows,
        bytes: committed.len,
        elapsed: start.elapsed(),
        crc32: Some(committed.crc32),
    })
}

/// Reads a whole Arrow IPC file (mapped into memory), decoding its record batches in
/// parallel on the current rayon pool.
///
/// Returns the file's schema, its record batches in file order and what was read. The
/// batches own their memory (nothing refers to the file once this returns). A file that is
/// not an Arrow IPC file, or is truncated or damaged in a way the format can detect, gives
/// [`UnloadError::Corrupt`] naming the path and what is wrong. (The format has no checksums:
/// a damaged byte inside the values of an uncompressed buffer reads back as a different
/// value.)
pub fn read_arrow_file(
    path: &Path,
) -> Result<(SchemaRef, Vec<RecordBatch>, UnloadReport), UnloadError> {
    let start = Instant::now();
    let map = map_file(path)?;
    let corrupt = |message: String| UnloadError::Corrupt {
        path: path.to_path_buf(),
        message,
    };
    let file = IpcFile::parse(&map).map_err(corrupt)?;
    let buffer = Buffer::from(map.clone());
    let mut decoder = FileDecoder::new(file.schema.clone(), file.version);
    for (i, block) in file.dictionaries.iter().enumerate() {
        let data = file
            .block_data(&buffer, block, true)
            .map_err(|e| corrupt(format!("dictionary batch {i}: {e}")))?;
        no_panic(|| decoder.read_dictionary(block, &data))
            .and_then(|r| r.map_err(|e| e.to_string()))
            .map_err(|e| corrupt(format!("dictionary batch {i}: {e}")))?;
    }
    let count = file.batches.len();
    let batches = file
        .batches
        .par_iter()
        .enumerate()
        .map(|(i, block)| {
            let describe = |e: String| {
                corrupt(format!(
                    "record batch {} of {count} (at byte {}): {e}",
                    i + 1,
                    block.offset()
                ))
            };
            let data = file.block_data(&buffer, block, false).map_err(describe)?;
            let batch = no_panic(|| decoder.read_record_batch(block, &data))
                .and_then(|r| r.map_err(|e| e.to_string()))
                .map_err(describe)?
                .ok_or_else(|| describe("the message is not a record batch".to_string()))?;
            detach_batch(batch, &map).map_err(|e| describe(e.to_string()))
        })
        .collect::<Result<Vec<_>, UnloadError>>()?;
    let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    let report = UnloadReport {
        rows,
        bytes: map.len() as u64,
        elapsed: start.elapsed(),
        crc32: None,
    };
    Ok((file.schema, batches, report))
}

/// Whether `data_type` is or contains a dictionary.
fn has_dictionary(data_type: &DataType) -> bool {
    match data_type {
        DataType::Dictionary(_, _) => true,
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => has_dictionary(f.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| has_dictionary(f.data_type())),
        DataType::Union(fields, _) => fields.iter().any(|(_, f)| has_dictionary(f.data_type())),
        DataType::RunEndEncoded(_, values) => has_dictionary(values.data_type()),
        _ => false,
    }
}

/// Checks every batch against `schema` and cuts it into pieces of at most `max_rows` rows
/// of nearly equal size, leaving out batches without rows. The pieces carry `schema`.
pub(crate) fn split_batches(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    max_rows: usize,
) -> Result<Vec<RecordBatch>, UnloadError> {
    let mut pieces = Vec::new();
    for (i, batch) in batches.iter().enumerate() {
        // Re-labelled with the target schema, which checks column count, types and
        // nullability: a batch that does not match would make a file no reader accepts.
        let batch = RecordBatch::try_new_with_options(
            schema.clone(),
            batch.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )
        .map_err(|e| {
            UnloadError::Arrow(ArrowError::InvalidArgumentError(format!(
                "batch {i} does not match the schema: {e}"
            )))
        })?;
        let rows = batch.num_rows();
        if rows == 0 {
            continue;
        }
        let n = rows.div_ceil(max_rows);
        let size = rows.div_ceil(n);
        let mut offset = 0;
        while offset < rows {
            let len = size.min(rows - offset);
            pieces.push(batch.slice(offset, len));
            offset += len;
        }
    }
    Ok(pieces)
}

fn check_cancel(cancel: &AtomicBool) -> Result<(), UnloadError> {
    if cancel.load(Ordering::Relaxed) {
        Err(UnloadError::Cancelled)
    } else {
        Ok(())
    }
}

/// One record-batch message, framed (continuation marker, metadata length, metadata,
/// body), and the lengths of its two parts for the footer's block.
struct EncodedPiece {
    buffers: Vec<Buffer>,
    meta: usize,
    body: usize,
}

/// Encodes (and compresses) `pieces` in parallel, in order, as framed messages whose
/// uncompressed buffers are the arrays' own.
///
/// arrow-ipc's `StreamEncoder` gives each message as a list of buffers without copying the
/// uncompressed ones (`IpcDataGenerator::encode` copies every body into one new vector,
/// which halved the speed of uncompressed writes). An encoder is made per rayon job and
/// starts its stream with the schema message, which the file already has: those first
/// `schema_len` bytes are dropped.
fn encode_pieces(
    pieces: &[RecordBatch],
    schema: &SchemaRef,
    options: &IpcWriteOptions,
    schema_len: usize,
    cancel: &AtomicBool,
) -> Result<Vec<EncodedPiece>, UnloadError> {
    pieces
        .par_iter()
        .map_init(
            || None,
            |encoder: &mut Option<StreamEncoder>, piece| {
                check_cancel(cancel)?;
                let fresh = encoder.is_none();
                if fresh {
                    *encoder = Some(StreamEncoder::try_new_with_options(
                        schema,
                        options.clone(),
                    )?);
                }
                let mut buffers = encoder.as_mut().expect("set above").encode(piece)?;
                if fresh {
                    // A stream starts with the schema message, which the file has already.
                    let (mut skip, mut k) = (schema_len, 0);
                    while skip > 0 && k < buffers.len() && buffers[k].len() <= skip {
                        skip -= buffers[k].len();
                        k += 1;
                    }
                    if skip != 0 {
                        return Err(ArrowError::IpcError("unexpected stream framing".into()).into());
                    }
                    buffers.drain(..k);
                }
                let prefix = buffers.first().map(|b| b.as_slice()).unwrap_or_default();
                if prefix.len() < 8 || prefix[..4] != [0xFF; 4] {
                    return Err(ArrowError::IpcError("unexpected stream framing".into()).into());
                }
                let meta =
                    8 + i32::from_le_bytes(prefix[4..8].try_into().expect("4 bytes")) as usize;
                let total: usize = buffers.iter().map(|b| b.len()).sum();
                Ok(EncodedPiece {
                    buffers,
                    meta,
                    body: total - meta,
                })
            },
        )
        .collect()
}

/// Writes the framing of an IPC file around pre-encoded messages and remembers where each
/// record batch went, for the footer.
struct IpcFileWriter<'a, W: Write> {
    out: W,
    path: &'a Path,
    offset: u64,
    blocks: Vec<Block>,
}

impl<'a, W: Write> IpcFileWriter<'a, W> {
    fn new(out: W, path: &'a Path) -> Self {
        Self {
            out,
            path,
            offset: 0,
            blocks: Vec::new(),
        }
    }

    fn error(&self, e: ArrowError) -> UnloadError {
        match e {
            ArrowError::IoError(_, source) => UnloadError::Io {
                path: self.path.to_path_buf(),
                source,
            },
            e => UnloadError::Arrow(e),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<(), UnloadError> {
        self.out.write_all(bytes).map_err(io_error(self.path))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// The leading magic, padded to 8 bytes, and the schema message; returns the length of
    /// the schema message.
    fn start(
        &mut self,
        schema: &SchemaRef,
        options: &IpcWriteOptions,
    ) -> Result<usize, UnloadError> {
        self.write_all(b"ARROW1\0\0")?;
        let message = IpcDataGenerator::default().schema_to_bytes_with_dictionary_tracker(
            schema,
            &mut DictionaryTracker::new(true),
            options,
        );
        let (meta, body) =
            write_message(&mut self.out, message, options).map_err(|e| self.error(e))?;
        self.offset += (meta + body) as u64;
        Ok(meta + body)
    }

    /// Writes record-batch messages and records their blocks.
    fn write_batches(&mut self, encoded: Vec<EncodedPiece>) -> Result<(), UnloadError> {
        for EncodedPiece {
            buffers,
            meta,
            body,
        } in encoded
        {
            for b in &buffers {
                self.out
                    .write_all(b.as_slice())
                    .map_err(io_error(self.path))?;
            }
            let meta = i32::try_from(meta).map_err(|_| {
                UnloadError::Arrow(ArrowError::IpcError(format!(
                    "message metadata of {meta} bytes"
                )))
            })?;
            self.blocks
                .push(Block::new(self.offset as i64, meta, body as i64));
            self.offset += meta as u64 + body as u64;
        }
        Ok(())
    }

    /// The end-of-stream marker, the footer, its length and the closing magic; flushes.
    fn finish(mut self, schema: &SchemaRef) -> Result<(), UnloadError> {
        self.write_all(&[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0])?;
        let mut fbb = flatbuffers::FlatBufferBuilder::new();
        let dictionaries = fbb.create_vector::<Block>(&[]);
        let record_batches = fbb.create_vector(&self.blocks);
        let mut tracker = DictionaryTracker::new(true);
        let fb_schema = arrow_ipc::convert::IpcSchemaEncoder::new()
            .with_dictionary_tracker(&mut tracker)
            .schema_to_fb_offset(&mut fbb, schema);
        let mut footer = arrow_ipc::FooterBuilder::new(&mut fbb);
        footer.add_version(MetadataVersion::V5);
        footer.add_schema(fb_schema);
        footer.add_dictionaries(dictionaries);
        footer.add_recordBatches(record_batches);
        let root = footer.finish();
        fbb.finish(root, None);
        let footer = fbb.finished_data();
        let len = i32::try_from(footer.len()).map_err(|_| {
            UnloadError::Arrow(ArrowError::IpcError(format!(
                "footer of {} bytes",
                footer.len()
            )))
        })?;
        self.write_all(footer)?;
        self.write_all(&len.to_le_bytes())?;
        self.write_all(MAGIC)?;
        self.out.flush().map_err(io_error(self.path))
    }
}

/// The parts of an IPC file's footer that the reader needs, checked against the file.
struct IpcFile {
    schema: SchemaRef,
    version: MetadataVersion,
    dictionaries: Vec<Block>,
    batches: Vec<Block>,
    /// Where the footer starts: every block must end before it.
    footer_start: usize,
    /// Number of `Utf8View`/`BinaryView` fields, the expected length of a record batch's
    /// variadic buffer counts.
    view_fields: usize,
}

/// The decoded length of an IPC body buffer whose range was checked: its length, or for a
/// compressed buffer the declared uncompressed length (`-1`: stored uncompressed).
fn decoded_len(body: &[u8], buffer: &arrow_ipc::Buffer, compressed: bool) -> u64 {
    let (offset, len) = (buffer.offset() as usize, buffer.length() as usize);
    if !compressed || len == 0 {
        return len as u64;
    }
    match body
        .get(offset..offset + 8)
        .map(|p| i64::from_le_bytes(p.try_into().expect("8 bytes")))
    {
        Some(-1) => len as u64 - 8,
        Some(n) => n.max(0) as u64,
        None => 0,
    }
}

/// A bound on how many bytes one compressed byte can expand to, with a factor of 2 to
/// spare: an LZ4 sequence needs one more byte per 255 bytes of match (zeros compress 242:1);
/// a Zstandard block (at most 128 KiB) needs at least 4 bytes, 3 of header and 1 of
/// run-length value (4 MiB of zeros compress 28,500:1). A declared uncompressed length
/// beyond the bound is damage and must not be trusted: arrow allocates the declared length
/// before decompressing, and an allocation larger than memory aborts the process.
fn max_expansion(codec: CompressionType) -> u64 {
    match codec {
        CompressionType::LZ4_FRAME => 512,
        _ => 1 << 16,
    }
}

impl IpcFile {
    fn parse(map: &[u8]) -> Result<Self, String> {
        let len = map.len();
        if len < 8 + 10 {
            return Err(format!(
                "{len} bytes is too short for an Arrow IPC file (it has an 8-byte header and a 10-byte trailer)"
            ));
        }
        if &map[..6] != MAGIC {
            return Err("not an Arrow IPC file: it does not start with \"ARROW1\" \
                        (an Arrow IPC stream, .arrows, has no magic and is not supported)"
                .to_string());
        }
        if &map[len - 6..] != MAGIC {
            return Err(
                "the file does not end with \"ARROW1\": it is truncated or damaged".to_string(),
            );
        }
        let footer_len = i32::from_le_bytes(map[len - 10..len - 6].try_into().expect("4 bytes"));
        let footer_len = usize::try_from(footer_len)
            .ok()
            .filter(|&n| n <= len - 18)
            .ok_or_else(|| {
                format!("the footer length {footer_len} does not fit in the {len}-byte file")
            })?;
        let footer_start = len - 10 - footer_len;
        let footer = arrow_ipc::root_as_footer(&map[footer_start..len - 10])
            .map_err(|e| format!("the footer is damaged: {e}"))?;
        let fb_schema = footer.schema().ok_or("the footer has no schema")?;
        if !fb_schema.endianness().equals_to_target_endianness() {
            return Err("the file was written on a machine of the other byte order".to_string());
        }
        let schema = no_panic(|| arrow_ipc::convert::fb_to_schema(fb_schema))
            .map_err(|e| format!("the footer's schema is damaged or unsupported: {e}"))?;
        let view_fields = schema
            .flattened_fields()
            .iter()
            .filter(|f: &&&Field| {
                matches!(f.data_type(), DataType::Utf8View | DataType::BinaryView)
            })
            .count();
        let batches = footer
            .recordBatches()
            .ok_or("the footer lists no record batches")?;
        Ok(Self {
            schema: Arc::new(schema),
            version: footer.version(),
            dictionaries: footer
                .dictionaries()
                .map(|d| d.iter().copied().collect())
                .unwrap_or_default(),
            batches: batches.iter().copied().collect(),
            footer_start,
            view_fields,
        })
    }

    /// The bytes of `block` (metadata and body), after checking that they lie in the file
    /// and that the message's buffers lie in its body.
    fn block_data(&self, file: &Buffer, block: &Block, dictionary: bool) -> Result<Buffer, String> {
        let (offset, meta, body) = (block.offset(), block.metaDataLength(), block.bodyLength());
        let end = u64::try_from(offset)
            .ok()
            .zip(u64::try_from(meta).ok())
            .zip(u64::try_from(body).ok())
            .and_then(|((o, m), b)| o.checked_add(m)?.checked_add(b))
            .filter(|&end| offset >= 8 && meta >= 8 && end <= self.footer_start as u64)
            .ok_or_else(|| {
                format!(
                    "the block (offset {offset}, metadata {meta} bytes, body {body} bytes) \
                     does not lie between the header and the footer (byte {})",
                    self.footer_start
                )
            })?;
        let (offset, meta) = (offset as usize, meta as usize);
        let data = file.slice_with_length(offset, end as usize - offset);
        self.check_message(&data, meta, dictionary)?;
        Ok(data)
    }

    /// Checks that every column with nulls has a validity bitmap of at least one bit per row:
    /// arrow 59 asserts that (a panic) before it validates the array. Only the leading
    /// columns of flat types are checked; at the first nested one the walk stops, as its
    /// buffers depend on its layout.
    fn check_validity(
        &self,
        batch: &arrow_ipc::RecordBatch<'_>,
        body: &[u8],
    ) -> Result<(), String> {
        let (Some(nodes), Some(buffers)) = (batch.nodes(), batch.buffers()) else {
            return Ok(());
        };
        let compressed = batch.compression().is_some();
        let (mut node, mut buffer) = (0, 0);
        for field in self.schema.fields() {
            let data_type = field.data_type();
            let width = match data_type {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                    3
                }
                t if t.is_primitive()
                    || matches!(t, DataType::Boolean | DataType::FixedSizeBinary(_)) =>
                {
                    2
                }
                _ => return Ok(()),
            };
            if node >= nodes.len() || buffer + width > buffers.len() {
                return Ok(()); // arrow reports the missing node or buffer
            }
            let n = nodes.get(node);
            if n.null_count() > 0 {
                let rows = n.length() as u64;
                let have = decoded_len(body, buffers.get(buffer), compressed);
                if have < rows.div_ceil(8) {
                    return Err(format!(
                        "column \"{}\": a validity bitmap of {have} bytes for {rows} rows",
                        field.name()
                    ));
                }
            }
            node += 1;
            buffer += width;
        }
        Ok(())
    }

    /// Checks what arrow-ipc's decoder trusts: the metadata flatbuffer, buffer ranges within
    /// the body, declared uncompressed lengths (allocated before decompressing) and the
    /// variadic buffer counts (asserted). Arrow validates the decoded arrays itself.
    fn check_message(&self, data: &[u8], meta: usize, dictionary: bool) -> Result<(), String> {
        let (start, len) = if data[..4] == [0xFF; 4] {
            (
                8,
                i32::from_le_bytes(data[4..8].try_into().expect("4 bytes")),
            )
        } else {
            (
                4,
                i32::from_le_bytes(data[..4].try_into().expect("4 bytes")),
            )
        };
        let end = usize::try_from(len)
            .ok()
            .map(|len| start + len)
            .filter(|&end| end <= meta)
            .ok_or_else(|| {
                format!("the message metadata length {len} exceeds the block's {meta} bytes")
            })?;
        let message = arrow_ipc::root_as_message(&data[start..end])
            .map_err(|e| format!("the message metadata is damaged: {e}"))?;
        if message.version() != self.version {
            return Err(format!(
                "message version {:?} differs from the footer's {:?}",
                message.version(),
                self.version
            ));
        }
        let batch = match (message.header_type(), dictionary) {
            (MessageHeader::RecordBatch, false) => message.header_as_record_batch(),
            (MessageHeader::DictionaryBatch, true) => {
                message.header_as_dictionary_batch().and_then(|d| d.data())
            }
            (t, _) => return Err(format!("unexpected message type {t:?}")),
        }
        .ok_or("the message has no record batch header")?;
        let body = &data[meta..];
        if batch.length() < 0 {
            return Err(format!("negative row count {}", batch.length()));
        }
        for node in batch.nodes().iter().flatten() {
            if node.length() < 0 || node.null_count() < 0 || node.null_count() > node.length() {
                return Err(format!(
                    "a column claims {} rows with {} nulls",
                    node.length(),
                    node.null_count()
                ));
            }
        }
        let codec = batch.compression().map(|c| c.codec());
        for (i, b) in batch.buffers().iter().flatten().enumerate() {
            let range = usize::try_from(b.offset())
                .ok()
                .zip(usize::try_from(b.length()).ok())
                .and_then(|(o, l)| Some(o..o.checked_add(l)?))
                .filter(|r| r.end <= body.len())
                .ok_or_else(|| {
                    format!(
                        "buffer {i} (offset {}, {} bytes) lies outside the {}-byte message body",
                        b.offset(),
                        b.length(),
                        body.len()
                    )
                })?;
            let Some(codec) = codec else { continue };
            if range.is_empty() {
                continue;
            }
            let compressed = &body[range];
            let Some(prefix) = compressed.get(..8) else {
                return Err(format!(
                    "compressed buffer {i} is {} bytes, less than its length prefix",
                    compressed.len()
                ));
            };
            let declared = i64::from_le_bytes(prefix.try_into().expect("8 bytes"));
            let limit = (compressed.len() as u64 - 8).saturating_mul(max_expansion(codec)) + 64;
            if declared > 0 && declared as u64 > limit {
                return Err(format!(
                    "compressed buffer {i} claims {declared} bytes uncompressed from {} bytes, \
                     more than {codec:?} can produce",
                    compressed.len() - 8
                ));
            }
        }
        if !dictionary {
            self.check_validity(&batch, body)?;
        }
        let variadic = batch.variadicBufferCounts().map_or(0, |v| v.len());
        if !dictionary && variadic != 0 && variadic != self.view_fields {
            return Err(format!(
                "{variadic} variadic buffer counts for {} view columns",
                self.view_fields
            ));
        }
        Ok(())
    }
}
