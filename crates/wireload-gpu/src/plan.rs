//! What the kernels need to know about a table and a dialect, and the GPU engine's
//! options.

use arrow::datatypes::SchemaRef;
use wireload_load::Dialect;
use wireload_types::{ColumnDef, SqlType, TableSchema};

use crate::error::GpuError;
use crate::layout::{ColumnDesc, KDialect, MAX_NULL, MAX_WIDTH, kind};

/// Default bytes per warp chunk (the paper's best on a V100).
pub const DEFAULT_CHUNK: usize = 1024;
/// Default partition size streamed to the device.
pub const DEFAULT_PARTITION: usize = 64 << 20;
/// Default number of streams (and host workers driving them).
pub const DEFAULT_STREAMS: usize = 3;
/// Default capacity of the per-partition fallback list.
pub const DEFAULT_FALLBACKS: usize = 1 << 16;
/// Largest partition: positions are 31-bit.
pub const MAX_PARTITION: usize = (1 << 31) - (1 << 20);

/// Which passes find the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PassMode {
    /// The fast passes for a partition without quote characters, the quoted passes
    /// otherwise: always correct.
    #[default]
    Auto,
    /// The quoted passes for every partition (to measure them).
    Quoted,
}

/// How a GPU load runs.
#[derive(Debug, Clone)]
pub struct GpuOptions {
    /// Bytes of input per warp (a multiple of 128).
    pub chunk: usize,
    /// Bytes of input per partition streamed to the device (plus the widow that
    /// completes its last record).
    pub partition: usize,
    /// Streams, each with its own buffers and host worker.
    pub streams: usize,
    /// Which passes run.
    pub mode: PassMode,
    /// Fields per partition the kernels may leave to the host before the whole partition
    /// goes to the CPU loader.
    pub fallbacks: usize,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            chunk: DEFAULT_CHUNK,
            partition: DEFAULT_PARTITION,
            streams: DEFAULT_STREAMS,
            mode: PassMode::Auto,
            fallbacks: DEFAULT_FALLBACKS,
        }
    }
}

impl GpuOptions {
    /// Checks the options.
    pub fn validate(&self) -> Result<(), GpuError> {
        if self.chunk == 0 || !self.chunk.is_multiple_of(128) || self.chunk > 1 << 20 {
            return Err(GpuError::Unsupported(format!(
                "the chunk size must be a multiple of 128 bytes up to 1 MiB, got {}",
                self.chunk
            )));
        }
        if self.partition == 0 || self.partition > MAX_PARTITION {
            return Err(GpuError::Unsupported(format!(
                "the partition size must be between 1 byte and {MAX_PARTITION}, got {}",
                self.partition
            )));
        }
        if self.streams == 0 || self.streams > 64 {
            return Err(GpuError::Unsupported(format!(
                "streams must be between 1 and 64, got {}",
                self.streams
            )));
        }
        Ok(())
    }
}

/// One column as the kernels process it.
#[derive(Debug, Clone)]
pub struct ColumnPlan {
    /// The column.
    pub def: ColumnDef,
    /// Its kind (`layout::kind`).
    pub kind: u32,
    /// Tape cell bytes (0 for strings).
    pub width: u32,
}

impl ColumnPlan {
    /// Bytes of one value as the kernels write it: as [`ColumnPlan::value_size`], except
    /// DECIMALs of up to 18 digits, which travel as 64-bit integers and are widened on the
    /// host (the device-to-host copy is the end-to-end load's limit on TPC-H).
    pub fn device_value_size(&self) -> usize {
        match self.def.ty {
            SqlType::Decimal { precision, .. } if precision <= 18 => 8,
            _ => self.value_size(),
        }
    }

    /// Bytes of one value in the output (0 for BOOLEAN, whose values are bits, and strings).
    pub fn value_size(&self) -> usize {
        match self.kind {
            kind::I16 => 2,
            kind::I32 | kind::DATE | kind::F32 => 4,
            kind::I64 | kind::TS | kind::F64 => 8,
            kind::DEC => 16,
            _ => 0,
        }
    }

    /// Whether the column goes through a tape.
    pub fn has_tape(&self) -> bool {
        self.kind != kind::STR
    }

    /// The descriptor without device addresses.
    pub fn desc(&self) -> ColumnDesc {
        let (precision, scale) = match self.def.ty {
            SqlType::Decimal { precision, scale } => (precision as u32, scale as u32),
            _ => (0, 0),
        };
        let max_chars = match self.def.ty {
            SqlType::Char(n) | SqlType::Varchar(Some(n)) => n,
            _ => 0,
        };
        ColumnDesc {
            kind: self.kind,
            width: self.width,
            nullable: self.def.nullable as u32,
            max_chars,
            precision,
            scale,
            ..ColumnDesc::default()
        }
    }
}

/// A table and a dialect prepared for the kernels.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The columns.
    pub columns: Vec<ColumnPlan>,
    /// The dialect bytes.
    pub dialect: KDialect,
    /// Columns with tapes.
    pub numeric: Vec<u32>,
    /// String columns.
    pub strings: Vec<u32>,
    /// The Arrow schema of the output.
    pub arrow_schema: SchemaRef,
}

/// Tape cell bytes for a kind: the longest text of the fast parsers, padded to words.
fn tape_width(ty: &SqlType) -> u32 {
    let w = match *ty {
        SqlType::Boolean => 8,
        SqlType::SmallInt => 8,
        SqlType::Integer => 12,
        SqlType::BigInt => 20,
        SqlType::Real => 16,
        SqlType::Double => 24,
        // sign, point and a leading zero around the digits
        SqlType::Decimal { precision, .. } => (precision as u32 + 3).max(8),
        SqlType::Date => 12,
        SqlType::Timestamp => 28,
        _ => 0,
    };
    (w.div_ceil(4) * 4).min(MAX_WIDTH as u32)
}

fn kind_of(ty: &SqlType) -> u32 {
    match ty {
        SqlType::Boolean => kind::BOOL,
        SqlType::SmallInt => kind::I16,
        SqlType::Integer => kind::I32,
        SqlType::BigInt => kind::I64,
        SqlType::Real => kind::F32,
        SqlType::Double => kind::F64,
        SqlType::Decimal { .. } => kind::DEC,
        SqlType::Date => kind::DATE,
        SqlType::Timestamp => kind::TS,
        SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text => kind::STR,
    }
}

impl Plan {
    /// Prepares `columns` read in `dialect`; fails for what the kernels do not handle.
    pub fn new(columns: &[ColumnDef], dialect: &Dialect) -> Result<Plan, GpuError> {
        dialect.validate().map_err(|e| GpuError::Unsupported(e.0))?;
        if dialect.has_distinct_escape() {
            return Err(GpuError::Unsupported(
                "an ESCAPE character other than the quote (the kernels read RFC 4180 doubled quotes)"
                    .into(),
            ));
        }
        if dialect.quote.is_none() && dialect.escape.is_some() {
            return Err(GpuError::Unsupported("an ESCAPE without a QUOTE".into()));
        }
        if dialect.delimiter == 0 || dialect.quote == Some(0) {
            return Err(GpuError::Unsupported(
                "a NUL byte as delimiter or quote".into(),
            ));
        }
        if dialect.null.len() > MAX_NULL {
            return Err(GpuError::Unsupported(format!(
                "a NULL string longer than {MAX_NULL} bytes"
            )));
        }
        if columns.is_empty() || columns.len() > u16::MAX as usize {
            return Err(GpuError::Unsupported(format!(
                "a table of {} columns (1 to {} are supported)",
                columns.len(),
                u16::MAX
            )));
        }
        let mut null = [0u8; MAX_NULL];
        null[..dialect.null.len()].copy_from_slice(&dialect.null);
        let kd = KDialect {
            delim: dialect.delimiter,
            quote: dialect.quote.unwrap_or(0),
            has_quote: dialect.quote.is_some() as u8,
            null_len: dialect.null.len() as u8,
            pad: 0,
            null,
        };
        let plans: Vec<ColumnPlan> = columns
            .iter()
            .map(|c| ColumnPlan {
                def: c.clone(),
                kind: kind_of(&c.ty),
                width: tape_width(&c.ty),
            })
            .collect();
        let numeric = (0..plans.len() as u32)
            .filter(|&c| plans[c as usize].has_tape())
            .collect();
        let strings = (0..plans.len() as u32)
            .filter(|&c| !plans[c as usize].has_tape())
            .collect();
        let arrow_schema = TableSchema {
            columns: columns.to_vec(),
        }
        .arrow_schema();
        Ok(Plan {
            columns: plans,
            dialect: kd,
            numeric,
            strings,
            arrow_schema,
        })
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.columns.len()
    }

    /// The quote byte, when quoting is on.
    pub fn quote(&self) -> Option<u8> {
        (self.dialect.has_quote != 0).then_some(self.dialect.quote)
    }

    /// The NULL string.
    #[cfg(feature = "testing")]
    pub fn null(&self) -> &[u8] {
        &self.dialect.null[..self.dialect.null_len as usize]
    }
}
