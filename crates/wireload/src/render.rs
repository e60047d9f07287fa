//! Rendering query results as aligned tables, CSV or JSON rows.

use std::io::{self, Write};

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::datatypes::{DataType, Float16Type, Float32Type, Float64Type, SchemaRef};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use comfy_table::{CellAlignment, ContentArrangement, Table, presets};

/// How timestamps are written (SQL style, fraction only when present).
const TIMESTAMP_FORMAT: &str = "%Y-%m-%d %H:%M:%S%.f";

fn options(null: &str) -> FormatOptions<'_> {
    FormatOptions::new()
        .with_null(null)
        .with_timestamp_format(Some(TIMESTAMP_FORMAT))
}

/// The column as a plain (not dictionary-encoded) array.
fn plain(column: &ArrayRef) -> io::Result<ArrayRef> {
    match column.data_type() {
        DataType::Dictionary(_, value) => {
            arrow::compute::cast(column, value).map_err(io::Error::other)
        }
        _ => Ok(column.clone()),
    }
}

fn plain_columns(batch: &RecordBatch) -> io::Result<Vec<ArrayRef>> {
    batch.columns().iter().map(plain).collect()
}

fn formatters<'a>(
    columns: &'a [ArrayRef],
    opts: &FormatOptions<'a>,
) -> io::Result<Vec<ArrayFormatter<'a>>> {
    columns
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), opts).map_err(io::Error::other))
        .collect()
}

/// True for types shown right-aligned and written as JSON numbers.
fn is_numeric(ty: &DataType) -> bool {
    match ty {
        DataType::Dictionary(_, value) => is_numeric(value),
        t => t.is_numeric(),
    }
}

/// Total rows of `batches`.
pub fn row_count(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

/// An aligned table with a header, numbers right-aligned and NULL shown as `NULL`.
/// With `max_rows`, only that many rows are drawn.
pub fn table(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    max_rows: Option<usize>,
) -> io::Result<String> {
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    table.set_header(schema.fields().iter().map(|f| f.name().as_str()));
    let opts = options("NULL");
    let limit = max_rows.unwrap_or(usize::MAX);
    let mut shown = 0usize;
    'batches: for batch in batches {
        let columns = plain_columns(batch)?;
        let formatters = formatters(&columns, &opts)?;
        for row in 0..batch.num_rows() {
            if shown == limit {
                break 'batches;
            }
            let cells: Vec<String> = formatters
                .iter()
                .map(|f| f.value(row).to_string())
                .collect();
            table.add_row(cells);
            shown += 1;
        }
    }
    for (i, field) in schema.fields().iter().enumerate() {
        if is_numeric(field.data_type())
            && let Some(column) = table.column_mut(i)
        {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    Ok(table.to_string())
}

/// An aligned table of ready-made text cells (the cycle report's, shared).
pub use wireload_tpch::cycle::text_table;

/// The footer under a table: `(N rows)`, noting when only the first rows are drawn.
pub fn rows_footer(total: usize, shown_limit: Option<usize>) -> String {
    let noun = if total == 1 { "row" } else { "rows" };
    match shown_limit {
        Some(limit) if total > limit => format!("({total} {noun}, first {limit} shown)"),
        _ => format!("({total} {noun})"),
    }
}

/// Writes a CSV field, quoting it only when it holds the delimiter, a quote, CR or LF
/// (RFC 4180); an empty string is written `""` so it differs from NULL.
fn write_csv_field(out: &mut impl Write, field: &str) -> io::Result<()> {
    let needs_quotes = field.is_empty()
        || field
            .bytes()
            .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'));
    if !needs_quotes {
        return out.write_all(field.as_bytes());
    }
    out.write_all(b"\"")?;
    for (i, part) in field.split('"').enumerate() {
        if i > 0 {
            out.write_all(b"\"\"")?;
        }
        out.write_all(part.as_bytes())?;
    }
    out.write_all(b"\"")
}

/// CSV: a header line, then one RFC 4180 record per row; NULL is an empty field.
pub fn csv(schema: &SchemaRef, batches: &[RecordBatch], out: &mut impl Write) -> io::Result<()> {
    for (i, field) in schema.fields().iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_csv_field(out, field.name())?;
    }
    out.write_all(b"\n")?;
    let opts = options("");
    let mut cell = String::new();
    for batch in batches {
        let columns = plain_columns(batch)?;
        let formatters = formatters(&columns, &opts)?;
        for row in 0..batch.num_rows() {
            for (i, (column, formatter)) in columns.iter().zip(&formatters).enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                if column.is_null(row) {
                    continue;
                }
                cell.clear();
                formatter
                    .value(row)
                    .write(&mut cell)
                    .map_err(io::Error::other)?;
                write_csv_field(out, &cell)?;
            }
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Writes a float as a JSON number; NaN and infinities (not representable) as `null`.
fn write_json_float(out: &mut impl Write, value: f64, as_f32: Option<f32>) -> io::Result<()> {
    if !value.is_finite() {
        return out.write_all(b"null");
    }
    match as_f32 {
        // f32's own shortest form (0.1f32 prints 0.1, not 0.10000000149011612)
        Some(v) => write!(out, "{v}"),
        None => write!(out, "{value}"),
    }
}

/// JSON: one array per row, values in table order; NULL is `null`, integers, floats and
/// decimals are JSON numbers (decimals exact), booleans are `true`/`false`, everything
/// else (dates, timestamps, strings...) is a JSON string.
pub fn json(batches: &[RecordBatch], out: &mut impl Write) -> io::Result<()> {
    let opts = options("null");
    let mut cell = String::new();
    for batch in batches {
        let columns = plain_columns(batch)?;
        let formatters = formatters(&columns, &opts)?;
        for row in 0..batch.num_rows() {
            out.write_all(b"[")?;
            for (i, (column, formatter)) in columns.iter().zip(&formatters).enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                if column.is_null(row) {
                    out.write_all(b"null")?;
                    continue;
                }
                match column.data_type() {
                    DataType::Boolean => {
                        let b: &BooleanArray = column.as_boolean();
                        out.write_all(if b.value(row) { b"true" } else { b"false" })?;
                    }
                    DataType::Float16 => {
                        let v = column.as_primitive::<Float16Type>().value(row).to_f32();
                        write_json_float(out, f64::from(v), Some(v))?;
                    }
                    DataType::Float32 => {
                        let v = column.as_primitive::<Float32Type>().value(row);
                        write_json_float(out, f64::from(v), Some(v))?;
                    }
                    DataType::Float64 => {
                        write_json_float(
                            out,
                            column.as_primitive::<Float64Type>().value(row),
                            None,
                        )?;
                    }
                    ty if ty.is_integer()
                        || matches!(ty, DataType::Decimal128(..) | DataType::Decimal256(..)) =>
                    {
                        // integers and decimals print as exact plain digits
                        formatter
                            .value(row)
                            .write(&mut WriteAdapter(out))
                            .map_err(io::Error::other)?;
                    }
                    _ => {
                        cell.clear();
                        formatter
                            .value(row)
                            .write(&mut cell)
                            .map_err(io::Error::other)?;
                        serde_json::to_writer(&mut *out, cell.as_str())
                            .map_err(io::Error::other)?;
                    }
                }
            }
            out.write_all(b"]\n")?;
        }
    }
    Ok(())
}

/// Lets an `io::Write` receive `fmt::Write` output.
struct WriteAdapter<'a, W: Write>(&'a mut W);

impl<W: Write> std::fmt::Write for WriteAdapter<'_, W> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write_all(s.as_bytes()).map_err(|_| std::fmt::Error)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        Date32Array, Decimal128Array, DictionaryArray, Float32Array, Float64Array, Int32Array,
        Int64Array, StringArray, TimestampMicrosecondArray,
    };
    use arrow::datatypes::{Field, Int32Type, Schema};

    use super::*;

    fn batch(columns: Vec<(&str, ArrayRef)>) -> (SchemaRef, Vec<RecordBatch>) {
        let fields: Vec<Field> = columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let b = RecordBatch::try_new(
            schema.clone(),
            columns.into_iter().map(|(_, a)| a).collect(),
        )
        .unwrap();
        (schema, vec![b])
    }

    fn sample() -> (SchemaRef, Vec<RecordBatch>) {
        batch(vec![
            (
                "id",
                Arc::new(Int64Array::from(vec![Some(1), None, Some(-30)])) as ArrayRef,
            ),
            (
                "price",
                Arc::new(
                    Decimal128Array::from(vec![Some(12345), Some(-5), None])
                        .with_precision_and_scale(15, 2)
                        .unwrap(),
                ),
            ),
            (
                "d",
                Arc::new(Date32Array::from(vec![Some(10471), None, Some(0)])),
            ),
            (
                "s",
                Arc::new(StringArray::from(vec![
                    Some("plain"),
                    Some("a,b \"q\"\nline"),
                    Some(""),
                ])),
            ),
            (
                "f",
                Arc::new(Float64Array::from(vec![
                    Some(0.1),
                    Some(f64::NAN),
                    Some(2.5e-7),
                ])),
            ),
        ])
    }

    #[test]
    fn json_rows_typed_values() {
        let (_, batches) = sample();
        let mut out = Vec::new();
        json(&batches, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"[1,123.45,"1998-09-02","plain",0.1]"#);
        assert_eq!(lines[1], r#"[null,-0.05,null,"a,b \"q\"\nline",null]"#);
        assert_eq!(lines[2], r#"[-30,null,"1970-01-01","",0.00000025]"#);
        for line in lines {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v.is_array());
        }
    }

    #[test]
    fn json_decimals_are_exact() {
        let (_, batches) = batch(vec![(
            "x",
            Arc::new(
                Decimal128Array::from(vec![Some(12345678901234567890123456789012345678i128)])
                    .with_precision_and_scale(38, 10)
                    .unwrap(),
            ) as ArrayRef,
        )]);
        let mut out = Vec::new();
        json(&batches, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[1234567890123456789012345678.9012345678]\n"
        );
    }

    #[test]
    fn json_floats_booleans_timestamps() {
        let (_, batches) = batch(vec![
            ("r", Arc::new(Float32Array::from(vec![0.1f32])) as ArrayRef),
            ("b", Arc::new(BooleanArray::from(vec![true]))),
            (
                "t",
                Arc::new(TimestampMicrosecondArray::from(vec![1_500_000])),
            ),
        ]);
        let mut out = Vec::new();
        json(&batches, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[0.1,true,\"1970-01-01 00:00:01.500\"]\n"
        );
    }

    #[test]
    fn csv_quotes_only_when_needed_and_nulls_are_empty() {
        let (schema, batches) = sample();
        let mut out = Vec::new();
        csv(&schema, &batches, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "id,price,d,s,f\n\
             1,123.45,1998-09-02,plain,0.1\n\
             ,-0.05,,\"a,b \"\"q\"\"\nline\",NaN\n\
             -30,,1970-01-01,\"\",2.5e-7\n"
        );
        // what we write reads back as the same fields
        let mut reader = ::csv::ReaderBuilder::new().from_reader(text.as_bytes());
        let rows: Vec<Vec<String>> = reader
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(rows[1][3], "a,b \"q\"\nline");
    }

    #[test]
    fn table_aligns_numbers_and_shows_null() {
        let (schema, batches) = sample();
        let text = table(&schema, &batches, None).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].contains("id") && lines[1].contains("price"),
            "{text}"
        );
        // numbers right-aligned: "1" sits at the right edge of the id column as "-30" does
        let row1 = lines[3];
        let row3 = lines.iter().find(|l| l.contains("-30")).unwrap();
        assert_eq!(row1.find("1 ┆"), row3.find("30 ┆").map(|p| p + 1), "{text}");
        assert!(lines[4].contains("NULL"), "{text}");
        assert!(text.contains("123.45") && text.contains("1998-09-02"));
    }

    #[test]
    fn table_limits_rows() {
        let (schema, batches) = sample();
        let text = table(&schema, &batches, Some(1)).unwrap();
        assert!(text.contains("plain") && !text.contains("-30"), "{text}");
        assert_eq!(rows_footer(3, Some(1)), "(3 rows, first 1 shown)");
        assert_eq!(rows_footer(1, None), "(1 row)");
    }

    #[test]
    fn dictionary_columns_render_as_values() {
        let dict: DictionaryArray<Int32Type> =
            vec![Some("x"), None, Some("x")].into_iter().collect();
        let (schema, batches) = batch(vec![
            ("k", Arc::new(dict) as ArrayRef),
            ("n", Arc::new(Int32Array::from(vec![1, 2, 3]))),
        ]);
        let mut out = Vec::new();
        json(&batches, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[\"x\",1]\n[null,2]\n[\"x\",3]\n"
        );
        let mut out = Vec::new();
        csv(&schema, &batches, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "k,n\nx,1\n,2\nx,3\n");
    }
}
