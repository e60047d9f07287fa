//! The structs the kernels read and write, mirrored from `kernels/layout.h` (which says
//! what each field means). They are `#[repr(C)]` plain data with explicit padding:
//! `bytemuck`'s derives check at compile time that they have no implicit padding, so they
//! may be copied to and from the device as bytes. The emulator reports the C sizes and
//! offsets, and a test compares them with these.

use bytemuck::{Pod, Zeroable};

/// A FieldsIndex entry's bit that marks a record delimiter.
pub const RECORD_BIT: u32 = 0x8000_0000;
/// A FieldsIndex entry for a delimiter inside quotes.
pub const INVALID: u32 = u32::MAX;
/// "No error" in [`Status`].
pub const NONE: u64 = u64::MAX;
/// Span flag: the field is NULL.
pub const SPAN_NULL: u32 = 0x8000_0000;
/// Span flag: the field holds doubled quotes to unescape.
pub const SPAN_ESCAPED: u32 = 0x4000_0000;
/// The length bits of a span.
pub const SPAN_LEN: u32 = 0x3FFF_FFFF;
/// First byte of a tape cell holding NULL.
pub const CELL_NULL: u8 = 0xFE;
/// First byte of a tape cell whose field is in the fallback list.
pub const CELL_RANGE: u8 = 0xFF;
/// Largest tape cell, and the text a fallback entry carries.
pub const MAX_WIDTH: usize = 48;
/// Longest NULL string the kernels handle.
pub const MAX_NULL: usize = 64;
/// Most threads per block.
pub const MAX_BLOCK: u32 = 256;

/// Column kinds.
pub mod kind {
    /// BOOLEAN
    pub const BOOL: u32 = 1;
    /// SMALLINT
    pub const I16: u32 = 2;
    /// INTEGER
    pub const I32: u32 = 3;
    /// BIGINT
    pub const I64: u32 = 4;
    /// REAL
    pub const F32: u32 = 5;
    /// DOUBLE
    pub const F64: u32 = 6;
    /// DECIMAL
    pub const DEC: u32 = 7;
    /// DATE
    pub const DATE: u32 = 8;
    /// TIMESTAMP
    pub const TS: u32 = 9;
    /// CHAR, VARCHAR, TEXT
    pub const STR: u32 = 10;
}

/// Fallback kinds.
pub mod fallback {
    /// The text is in the entry.
    pub const TEXT: u8 = 1;
    /// The field's bytes are `start..end` of the partition.
    pub const RANGE: u8 = 2;
    /// A string longer than its declared length; the value is in the string output.
    pub const STRING: u8 = 3;
}

/// Delimiters and quotes of a chunk, or before it after the scan.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ChunkCount {
    /// delimiters ending a field
    pub fields: u32,
    /// record delimiters
    pub records: u32,
    /// field delimiters after the last record delimiter (after the scan: the column)
    pub tail: u32,
    /// quote characters
    pub quotes: u32,
    /// 1 + position of the last delimiter (after the scan: where the field starts)
    pub last: u32,
}

impl ChunkCount {
    /// `self` followed by `b`.
    pub fn combine(self, b: ChunkCount) -> ChunkCount {
        ChunkCount {
            fields: self.fields.wrapping_add(b.fields),
            records: self.records.wrapping_add(b.records),
            tail: if b.records > 0 {
                b.tail
            } else {
                self.tail.wrapping_add(b.tail)
            },
            quotes: self.quotes.wrapping_add(b.quotes),
            last: self.last.max(b.last),
        }
    }
}

/// Where a string field's text is, its unescaped length and flags.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct Span {
    /// first byte of the text in the partition
    pub start: u32,
    /// length with [`SPAN_NULL`] / [`SPAN_ESCAPED`] flags
    pub len: u32,
}

/// A field left to the host.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct Fallback {
    /// row in the partition
    pub row: u32,
    /// column
    pub col: u16,
    /// [`fallback`] kind
    pub kind: u8,
    /// bytes of `text` (TEXT)
    pub len: u8,
    /// first byte of the field, quotes included (RANGE)
    pub start: u32,
    /// end of the field (RANGE)
    pub end: u32,
    /// the text (TEXT)
    pub text: [u8; MAX_WIDTH],
}

impl Default for Fallback {
    fn default() -> Self {
        Fallback::zeroed()
    }
}

/// Errors and counters of a partition's passes.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct Status {
    /// the first field with an error: `row << 16 | column` ([`NONE`]: none)
    pub error_at: u64,
    /// first misplaced quote ([`NONE`]: none)
    pub error_pos: u64,
    /// fallback entries wanted
    pub fallbacks: u32,
    /// padding
    pub pad: u32,
}

impl Status {
    /// The first field the kernels flagged: (row, column), or None.
    pub fn first_error(&self) -> Option<(u64, usize)> {
        (self.error_at != NONE).then_some((self.error_at >> 16, (self.error_at & 0xffff) as usize))
    }
}

impl Default for Status {
    fn default() -> Self {
        Status {
            error_at: NONE,
            error_pos: NONE,
            fallbacks: 0,
            pad: 0,
        }
    }
}

/// A column as the kernels see it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ColumnDesc {
    /// [`kind`]
    pub kind: u32,
    /// tape cell bytes
    pub width: u32,
    /// 0: NOT NULL
    pub nullable: u32,
    /// declared length of CHAR/VARCHAR (0: none)
    pub max_chars: u32,
    /// DECIMAL precision
    pub precision: u32,
    /// DECIMAL scale
    pub scale: u32,
    /// padding
    pub pad0: u32,
    /// padding
    pub pad1: u32,
    /// device address of the tape
    pub tape: u64,
    /// device address of the values
    pub values: u64,
    /// device address of the validity bits
    pub validity: u64,
    /// device address of the spans
    pub spans: u64,
    /// device address of the offsets
    pub offsets: u64,
}

/// Dialect bytes for the kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct KDialect {
    /// field delimiter
    pub delim: u8,
    /// quote (when `has_quote`)
    pub quote: u8,
    /// quoting is on
    pub has_quote: u8,
    /// bytes of `null`
    pub null_len: u8,
    /// padding
    pub pad: u32,
    /// the NULL string
    pub null: [u8; MAX_NULL],
}

/// `wl_count`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct CountArgs {
    pub input: u64,
    pub counts: u64,
    pub n: u32,
    pub chunk: u32,
    pub nchunks: u32,
    pub pad: u32,
    pub d: KDialect,
}

/// `wl_scan_partial` / `wl_scan_finish`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct ScanArgs {
    pub input: u64,
    pub out: u64,
    pub partials: u64,
    pub total: u64,
    pub n: u32,
    pub tile: u32,
}

/// `wl_index_fast`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct IndexFastArgs {
    pub input: u64,
    pub prefix: u64,
    pub cols: u64,
    pub status: u64,
    pub fallbacks: u64,
    pub n: u32,
    pub chunk: u32,
    pub nchunks: u32,
    pub ncols: u32,
    pub rows: u32,
    pub fallback_cap: u32,
    pub d: KDialect,
}

/// `wl_index_quoted`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct IndexQuotedArgs {
    pub input: u64,
    pub prefix: u64,
    pub index: u64,
    pub status: u64,
    pub n: u32,
    pub chunk: u32,
    pub nchunks: u32,
    pub pad: u32,
    pub d: KDialect,
}

/// `wl_compact_count`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct CompactCountArgs {
    pub index: u64,
    pub counts: u64,
    pub entries: u32,
    pub tile: u32,
}

/// `wl_compact_scatter`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct CompactScatterArgs {
    pub index: u64,
    pub prefix: u64,
    pub out: u64,
    pub row_end: u64,
    pub entries: u32,
    pub tile: u32,
}

/// `wl_fields_quoted`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct FieldsQuotedArgs {
    pub input: u64,
    pub index: u64,
    pub row_end: u64,
    pub cols: u64,
    pub status: u64,
    pub fallbacks: u64,
    pub rows: u32,
    pub ncols: u32,
    pub entries: u32,
    pub fallback_cap: u32,
    pub d: KDialect,
}

/// `wl_deserialize`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct DeserializeArgs {
    pub cols: u64,
    pub col_ids: u64,
    pub status: u64,
    pub fallbacks: u64,
    pub rows: u32,
    pub fallback_cap: u32,
}

/// `wl_string_lengths` / `wl_string_gather`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct StringArgs {
    pub input: u64,
    pub cols: u64,
    pub col_ids: u64,
    pub status: u64,
    pub fallbacks: u64,
    pub rows: u32,
    pub fallback_cap: u32,
    pub n: u32,
    pub pad: u32,
    pub d: KDialect,
}

/// `wl_offsets_partial` / `wl_offsets_finish`'s argument.
#[repr(C)]
#[derive(Debug, Clone, Copy, Pod, Zeroable)]
#[allow(missing_docs)]
pub struct OffsetsArgs {
    pub cols: u64,
    pub col_ids: u64,
    pub partials: u64,
    pub rows: u32,
    pub tile: u32,
    pub tiles: u32,
    pub pad: u32,
}

/// The kernels, numbered as in `layout.h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Kernel {
    Count = 0,
    ScanPartial = 1,
    ScanFinish = 2,
    IndexFast = 3,
    IndexQuoted = 4,
    CompactCount = 5,
    CompactScatter = 6,
    FieldsQuoted = 7,
    Deserialize = 8,
    StringLengths = 9,
    OffsetsPartial = 10,
    OffsetsFinish = 11,
    StringGather = 12,
}

impl Kernel {
    /// Every kernel, in number order.
    pub const ALL: [Kernel; 13] = [
        Kernel::Count,
        Kernel::ScanPartial,
        Kernel::ScanFinish,
        Kernel::IndexFast,
        Kernel::IndexQuoted,
        Kernel::CompactCount,
        Kernel::CompactScatter,
        Kernel::FieldsQuoted,
        Kernel::Deserialize,
        Kernel::StringLengths,
        Kernel::OffsetsPartial,
        Kernel::OffsetsFinish,
        Kernel::StringGather,
    ];

    /// The `extern "C"` name in `csv.cu`.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Count => "wl_count",
            Kernel::ScanPartial => "wl_scan_partial",
            Kernel::ScanFinish => "wl_scan_finish",
            Kernel::IndexFast => "wl_index_fast",
            Kernel::IndexQuoted => "wl_index_quoted",
            Kernel::CompactCount => "wl_compact_count",
            Kernel::CompactScatter => "wl_compact_scatter",
            Kernel::FieldsQuoted => "wl_fields_quoted",
            Kernel::Deserialize => "wl_deserialize",
            Kernel::StringLengths => "wl_string_lengths",
            Kernel::OffsetsPartial => "wl_offsets_partial",
            Kernel::OffsetsFinish => "wl_offsets_finish",
            Kernel::StringGather => "wl_string_gather",
        }
    }
}

/// The kernels' CUDA C++ source, layout header first, as NVRTC compiles it.
#[cfg(feature = "cuda")]
pub fn kernel_source() -> String {
    // `#line` makes NVRTC's messages name the real file and line
    let mut s = String::from("#line 1 \"layout.h\"\n");
    s.push_str(include_str!("../kernels/layout.h"));
    s.push_str("\n#line 1 \"csv.cu\"\n");
    s.push_str(include_str!("../kernels/csv.cu"));
    s
}

/// The sizes and offsets `wl_emu_layout` reports, in its order, computed on this side.
#[cfg(feature = "testing")]
pub fn rust_layout() -> Vec<u32> {
    use std::mem::{offset_of, size_of};
    [
        size_of::<ChunkCount>(),
        size_of::<Span>(),
        size_of::<Fallback>(),
        offset_of!(Fallback, start),
        offset_of!(Fallback, text),
        size_of::<Status>(),
        size_of::<ColumnDesc>(),
        offset_of!(ColumnDesc, tape),
        offset_of!(ColumnDesc, offsets),
        size_of::<KDialect>(),
        offset_of!(KDialect, null),
        size_of::<CountArgs>(),
        offset_of!(CountArgs, d),
        size_of::<ScanArgs>(),
        size_of::<IndexFastArgs>(),
        offset_of!(IndexFastArgs, d),
        size_of::<IndexQuotedArgs>(),
        offset_of!(IndexQuotedArgs, d),
        size_of::<CompactCountArgs>(),
        size_of::<CompactScatterArgs>(),
        size_of::<FieldsQuotedArgs>(),
        offset_of!(FieldsQuotedArgs, d),
        size_of::<DeserializeArgs>(),
        size_of::<StringArgs>(),
        offset_of!(StringArgs, d),
        size_of::<OffsetsArgs>(),
    ]
    .into_iter()
    .map(|v| v as u32)
    .collect()
}
