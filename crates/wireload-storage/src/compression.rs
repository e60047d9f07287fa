//! How a table stores each column: the `COMPRESSION` it was declared with, the form a
//! version settled on, and the conversions between stored, scanned and plain batches.
//!
//! A dictionary column is stored per chunk as an Arrow dictionary array with codes of the
//! narrowest width for its dictionary run's dictionary (`UInt8`, `UInt16` or `UInt32`); scans
//! hand text to queries as `Dictionary(UInt32, Utf8)` (a plan's types do not depend on how
//! many entries a dictionary has) and other types decoded; results leave the database plain.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{Array, ArrayData, ArrayRef, AsArray, MutableArrayData, make_array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use wireload_types::SqlType;

/// The `COMPRESSION` a column was declared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Values as they are (Arrow arrays of the column's type).
    #[default]
    Plain,
    /// An order-preserving dictionary per partition and narrow codes.
    Dictionary,
    /// Decided from the data of the first load that brings rows.
    Auto,
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::Plain => "plain",
            Compression::Dictionary => "dictionary",
            Compression::Auto => "auto",
        })
    }
}

impl FromStr for Compression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "plain" | "none" => Ok(Compression::Plain),
            "dictionary" => Ok(Compression::Dictionary),
            "auto" => Ok(Compression::Auto),
            _ => Err(format!(
                "unknown COMPRESSION \"{s}\": expected dictionary, plain or auto"
            )),
        }
    }
}

/// How a table version stores a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredAs {
    /// Plain Arrow arrays.
    Plain,
    /// Dictionary arrays over the partition's order-preserving dictionary.
    Dictionary,
    /// `COMPRESSION auto` before any row arrived: plain until a load decides.
    Undecided,
}

impl StoredAs {
    /// The form a new table stores for a column declared `compression`.
    pub fn of(compression: Compression) -> Self {
        match compression {
            Compression::Plain => StoredAs::Plain,
            Compression::Dictionary => StoredAs::Dictionary,
            Compression::Auto => StoredAs::Undecided,
        }
    }

    /// The form a new table stores for a column of type `ty` declared
    /// `compression`: REAL, DOUBLE and BOOLEAN columns are always plain (a float's -0.0
    /// and 0.0 are two entries but one group in SQL; a boolean is one bit).
    pub fn of_column(ty: &SqlType, compression: Compression) -> Self {
        if dictionary_type(ty) {
            StoredAs::of(compression)
        } else {
            StoredAs::Plain
        }
    }

    /// The name views and `\d` show.
    pub fn name(self) -> &'static str {
        match self {
            StoredAs::Plain => "plain",
            StoredAs::Dictionary => "dictionary",
            StoredAs::Undecided => "auto (undecided)",
        }
    }
}

/// True for the types that can be dictionary-encoded: all but REAL, DOUBLE and BOOLEAN.
pub fn dictionary_type(ty: &SqlType) -> bool {
    !matches!(ty, SqlType::Real | SqlType::Double | SqlType::Boolean)
}

/// The type a scan hands a column of type `value` stored as `stored`: text stored in
/// dictionaries as `Dictionary(UInt32, Utf8)`, everything else as its value type (scans
/// decode numbers, dates and timestamps from their dictionaries after filtering on codes:
/// DataFusion plans arithmetic and date functions on plain types only).
pub fn scan_type(value: &DataType, stored: StoredAs) -> DataType {
    match (stored, value) {
        (StoredAs::Dictionary, DataType::Utf8) => {
            DataType::Dictionary(Box::new(DataType::UInt32), Box::new(value.clone()))
        }
        _ => value.clone(),
    }
}

/// `schema` with every dictionary field turned into its value type.
pub fn plain_schema(schema: &Schema) -> SchemaRef {
    if !schema.fields().iter().any(|f| is_dictionary(f.data_type())) {
        return Arc::new(schema.clone());
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Dictionary(_, value) => f.as_ref().clone().with_data_type(*value.clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// `batch` with its dictionary columns decoded (itself when it has none).
pub fn plain_batch(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let schema = batch.schema();
    if !schema.fields().iter().any(|f| is_dictionary(f.data_type())) {
        return Ok(batch.clone());
    }
    conform(batch, &plain_schema(&schema))
}

/// `batch` with every column cast to the type `schema` gives it (dictionary codes widened,
/// dictionaries decoded); columns already of that type are kept as they are.
pub fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
    // a plain table's chunks: nothing to build per batch
    if batch.schema_ref().fields() == schema.fields() {
        return Ok(batch.clone());
    }
    let same = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .all(|(c, f)| c.data_type() == f.data_type());
    if same && batch.schema().fields().len() == schema.fields().len() {
        return RecordBatch::try_new_with_options(
            Arc::clone(schema),
            batch.columns().to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        );
    }
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| conform_array(c, f.data_type()))
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
}

/// `array` as type `to` (itself when it has that type already).
pub fn conform_array(array: &ArrayRef, to: &DataType) -> Result<ArrayRef, ArrowError> {
    if array.data_type() == to {
        Ok(Arc::clone(array))
    } else {
        cast(array, to)
    }
}

/// True for an Arrow dictionary type.
pub fn is_dictionary(ty: &DataType) -> bool {
    matches!(ty, DataType::Dictionary(_, _))
}

/// The dictionary a dictionary array is coded against, as data whose `ptr_eq` tells two
/// chunks of one dictionary run (the same buffers); None for any other array.
pub fn coded_against(column: &dyn Array) -> Option<ArrayData> {
    Some(column.as_any_dictionary_opt()?.values().to_data())
}

/// `batch` with the columns in `replaced` (index, new array) swapped in; the schema follows
/// the new arrays' types.
pub fn replace_columns(
    batch: &RecordBatch,
    replaced: impl IntoIterator<Item = (usize, ArrayRef)>,
) -> Result<RecordBatch, ArrowError> {
    let mut columns = batch.columns().to_vec();
    for (i, a) in replaced {
        columns[i] = a;
    }
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect();
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
}

/// `array` copied into buffers of its own: what storage keeps of a column that arrived as a
/// slice of a larger buffer (a frame or a file mapping), so that neither the rest of that
/// buffer is kept nor [`column_bytes`] counts it for every column.
pub fn own_buffers(array: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    let data = array.to_data();
    let mut copy = MutableArrayData::new(vec![&data], false, data.len());
    copy.try_extend(0, 0, data.len())?;
    Ok(make_array(copy.freeze()))
}

/// Bytes in memory of one stored column of a chunk: its buffers, without a dictionary's
/// values (a partition's dictionary is counted once, apart).
pub fn column_bytes(array: &ArrayRef) -> usize {
    let data = array.to_data();
    let own: usize = data.buffers().iter().map(|b| b.capacity()).sum::<usize>()
        + data.nulls().map_or(0, |n| n.buffer().capacity());
    match array.data_type() {
        DataType::Dictionary(_, _) => own,
        _ => {
            own + data
                .child_data()
                .iter()
                .map(|c| c.get_slice_memory_size().unwrap_or(0))
                .sum::<usize>()
        }
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, DictionaryArray, Int32Array, StringArray, UInt8Array};
    use arrow::datatypes::UInt8Type;

    use super::*;

    #[test]
    fn own_buffers_keep_a_slices_values_and_not_the_buffer_around_it() {
        let ints: ArrayRef = Arc::new(Int32Array::from_iter_values(0..10_000));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..10_000).map(|i| format!("name {i}")),
        ));
        for array in [ints, names] {
            let slice = array.slice(100, 10);
            let own = own_buffers(&slice).unwrap();
            assert_eq!(own.as_ref(), slice.as_ref());
            // the slice counts its whole buffer; its own copy its ten values
            assert!(column_bytes(&slice) >= 40_000, "{}", column_bytes(&slice));
            assert!(column_bytes(&own) < 1_000, "{}", column_bytes(&own));
        }
    }

    #[test]
    fn conform_widens_codes_and_decodes() {
        let values: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let keys = UInt8Array::from(vec![Some(1), None, Some(0)]);
        let dict: ArrayRef = Arc::new(DictionaryArray::<UInt8Type>::try_new(keys, values).unwrap());
        let stored = Arc::new(Schema::new(vec![Field::new(
            "s",
            dict.data_type().clone(),
            true,
        )]));
        let batch = RecordBatch::try_new(stored, vec![dict]).unwrap();
        let wide = Arc::new(Schema::new(vec![Field::new(
            "s",
            scan_type(&DataType::Utf8, StoredAs::Dictionary),
            true,
        )]));
        let scanned = conform(&batch, &wide).unwrap();
        assert_eq!(scanned.schema(), wide);
        let plain = plain_batch(&scanned).unwrap();
        let s = plain
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![Some("b"), None, Some("a")]
        );
        assert_eq!(plain.schema().field(0).data_type(), &DataType::Utf8);
    }

    #[test]
    fn compression_names_parse() {
        assert_eq!("Dictionary".parse(), Ok(Compression::Dictionary));
        assert_eq!("auto".parse(), Ok(Compression::Auto));
        assert!("zstd".parse::<Compression>().is_err());
        let plain: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
        assert!(column_bytes(&plain) >= 12);
    }
}
