//! Random CSV inputs for the GPU engine's tests: many types, NULLs, quoting (delimiters,
//! newlines and doubled quotes inside), CR/LF/CRLF line ends, empty lines, trailing
//! delimiters, shapes the kernels leave to the host, and (when asked) errors.
#![allow(dead_code)]

use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_load::{Dialect, LoadControl, LoadOptions, Source, load_into};
use wireload_storage::{Catalog, Partitioning, Table, TableDef};
use wireload_types::TableSchema;

/// A generated input.
#[derive(Debug, Clone)]
pub struct Case {
    /// the column list
    pub schema: String,
    /// how the data is written
    pub dialect: Dialect,
    /// the CSV text
    pub data: Vec<u8>,
}

/// What the generator may put in.
#[derive(Debug, Clone, Copy)]
pub struct Gen {
    /// records
    pub rows: usize,
    /// invalid values and broken records, now and then
    pub errors: bool,
    /// quoted fields
    pub quotes: bool,
    /// shapes the fast parsers leave to the host (whitespace, exponents, ...)
    pub odd: bool,
}

const TYPES: &[&str] = &[
    "BOOLEAN",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "REAL",
    "DOUBLE",
    "DECIMAL(15,2)",
    "DECIMAL(5,5)",
    "DECIMAL(38,4)",
    "DECIMAL(18,0)",
    "DATE",
    "TIMESTAMP",
    "CHAR(3)",
    "VARCHAR(8)",
    "VARCHAR",
    "TEXT",
];

fn pick<'a>(rng: &mut StdRng, v: &[&'a str]) -> &'a str {
    v[rng.random_range(0..v.len())]
}

fn digits(rng: &mut StdRng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
        .collect()
}

/// A value of `ty` as text (before quoting).
fn value(rng: &mut StdRng, ty: &str, g: Gen) -> String {
    let odd = g.odd && rng.random_ratio(1, 8);
    let bad = g.errors && rng.random_ratio(1, 400);
    if bad {
        return pick(
            rng,
            &[
                "x",
                "1.2.3",
                "--1",
                "99999999999999999999999",
                "2021-02-30",
                "tru",
                "1e",
            ],
        )
        .into();
    }
    let sign = if rng.random_ratio(1, 4) { "-" } else { "" };
    match ty {
        "BOOLEAN" => {
            if odd {
                pick(rng, &[" t", "True", "YES", "of", "oN", "1 "]).into()
            } else {
                pick(
                    rng,
                    &[
                        "t", "f", "true", "false", "1", "0", "TRUE", "no", "off", "y",
                    ],
                )
                .into()
            }
        }
        "SMALLINT" | "INTEGER" | "BIGINT" => {
            let max = match ty {
                "SMALLINT" => 4,
                "INTEGER" => 9,
                _ => 18,
            };
            if odd {
                match rng.random_range(0..5) {
                    0 => format!(" {}", rng.random_range(0..1000)),
                    1 => format!("+{}", rng.random_range(0..1000)),
                    2 => format!("000000000000000000000{}", rng.random_range(0..9)),
                    3 => match ty {
                        "SMALLINT" => "-32768".into(),
                        "INTEGER" => "-2147483648".into(),
                        _ => "-9223372036854775808".into(),
                    },
                    _ => format!("{}\t", rng.random_range(0..1000)),
                }
            } else {
                let n = rng.random_range(1..=max);
                format!("{sign}{}", digits(rng, n))
            }
        }
        "REAL" | "DOUBLE" => {
            if odd {
                pick(
                    rng,
                    &[
                        "1e3",
                        "-2.5E-3",
                        "NaN",
                        "Infinity",
                        "-inf",
                        ".5",
                        "5.",
                        " 7.25",
                        "123456789012345678901",
                    ],
                )
                .into()
            } else {
                let i = rng.random_range(1..=6);
                let f = rng.random_range(0..=6);
                if f == 0 {
                    format!("{sign}{}", digits(rng, i))
                } else {
                    format!("{sign}{}.{}", digits(rng, i), digits(rng, f))
                }
            }
        }
        t if t.starts_with("DECIMAL") => {
            let (p, s) = match t {
                "DECIMAL(15,2)" => (15, 2),
                "DECIMAL(5,5)" => (5, 5),
                "DECIMAL(38,4)" => (38, 4),
                _ => (18, 0),
            };
            if odd {
                pick(
                    rng,
                    &[
                        "1e2",
                        " 3.5",
                        ".25",
                        "0.000001",
                        "12.345678",
                        "00000000000000000000001",
                        "-0",
                    ],
                )
                .into()
            } else {
                let i = rng.random_range(if p == s { 0..=1 } else { 1..=(p - s).min(12) });
                let int = if p == s {
                    "0".to_string()
                } else {
                    digits(rng, i)
                };
                let f = rng.random_range(0..=s.min(4));
                if f == 0 {
                    format!("{sign}{int}")
                } else {
                    format!("{sign}{int}.{}", digits(rng, f))
                }
            }
        }
        "DATE" => {
            if odd {
                pick(
                    rng,
                    &[
                        "2020-1-5",
                        " 2020-01-05",
                        "0999-12-31",
                        "2020-02-29 ",
                        "19990101",
                    ],
                )
                .into()
            } else {
                format!(
                    "{:04}-{:02}-{:02}",
                    rng.random_range(1..=9999),
                    rng.random_range(1..=12),
                    rng.random_range(1..=28)
                )
            }
        }
        "TIMESTAMP" => {
            if odd {
                pick(
                    rng,
                    &[
                        "2020-01-05",
                        "2020-01-05 24:00:00",
                        "2020-01-05T10:00",
                        "2020-01-05 10:00:00.1234567",
                        "2020-01-05 23:59:60",
                    ],
                )
                .into()
            } else {
                let frac = match rng.random_range(0..3) {
                    0 => String::new(),
                    _ => {
                        let n = rng.random_range(1..=6);
                        format!(".{}", digits(rng, n))
                    }
                };
                format!(
                    "{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}{frac}",
                    rng.random_range(1..=9999),
                    rng.random_range(1..=12),
                    rng.random_range(1..=28),
                    if rng.random_ratio(1, 5) { 'T' } else { ' ' },
                    rng.random_range(0..24),
                    rng.random_range(0..60),
                    rng.random_range(0..60)
                )
            }
        }
        _ => {
            let max = match ty {
                "CHAR(3)" => 3,
                "VARCHAR(8)" => 8,
                _ => 30,
            };
            let mut n = rng.random_range(0..=max);
            let mut s = String::new();
            if odd && max < 30 {
                // over the length, with (valid) or without (invalid) trailing spaces
                n = max;
                if g.errors && rng.random_ratio(1, 4) {
                    n = max + 1;
                }
            }
            while s.chars().count() < n {
                let c = match rng.random_range(0..40) {
                    0 => 'é',
                    1 => '€',
                    2 => '𝄞',
                    3 if g.quotes => '"',
                    4 if g.quotes => ',',
                    5 if g.quotes => '\n',
                    6 => ' ',
                    _ => char::from(b'a' + rng.random_range(0..26u8)),
                };
                s.push(c);
            }
            if odd && max < 30 {
                s.push_str("   ");
            }
            s
        }
    }
}

/// Writes `text` as one field of `dialect` (quoted when it must be, sometimes otherwise).
fn field(rng: &mut StdRng, d: &Dialect, text: &str, g: Gen) -> String {
    let special = text
        .bytes()
        .any(|b| b == d.delimiter || b == b'\n' || b == b'\r' || Some(b) == d.quote)
        || text.as_bytes() == d.null.as_slice();
    match d.quote {
        Some(q) if special || (g.quotes && rng.random_ratio(1, 6)) => {
            let q = q as char;
            let mut s = String::from(q);
            for c in text.chars() {
                if c == q {
                    s.push(q);
                }
                s.push(c);
            }
            s.push(q);
            s
        }
        _ => text.to_string(),
    }
}

/// A random input of `g.rows` records for a random schema and dialect.
pub fn case(seed: u64, g: Gen) -> Case {
    let mut rng = StdRng::seed_from_u64(seed);
    let ncols = rng.random_range(1..=6);
    let mut cols = Vec::new();
    let mut types = Vec::new();
    for i in 0..ncols {
        let ty = pick(&mut rng, TYPES);
        let not_null = rng.random_ratio(1, 6);
        cols.push(format!(
            "c{i} {ty}{}",
            if not_null { " NOT NULL" } else { "" }
        ));
        types.push((ty, not_null));
    }
    let mut d = Dialect {
        delimiter: *[b',', b'|', b'\t', b';']
            .get(rng.random_range(0..4))
            .unwrap(),
        ..Dialect::default()
    };
    if !g.quotes && rng.random_ratio(1, 3) {
        d.quote = None;
        d.escape = None;
    } else if rng.random_ratio(1, 5) {
        d.quote = Some(b'\'');
        d.escape = Some(b'\'');
    }
    d.null = pick(&mut rng, &["", "", "NULL", "\\N"]).as_bytes().to_vec();
    let g = Gen {
        // without quoting, no text may hold a special character
        quotes: g.quotes && d.quote.is_some(),
        ..g
    };
    let mut out = String::new();
    for r in 0..g.rows {
        if rng.random_ratio(1, 30) {
            out.push_str(pick(&mut rng, &["\n", "\r\n"]));
        }
        let mut fields: Vec<String> = types
            .iter()
            .map(|&(ty, not_null)| {
                let null_ok = !not_null || (g.errors && rng.random_ratio(1, 200));
                if null_ok && rng.random_ratio(1, 10) {
                    String::from_utf8(d.null.clone()).unwrap()
                } else {
                    let mut text = value(&mut rng, ty, g);
                    if d.quote.is_none() {
                        text.retain(|c| c != d.delimiter as char && c != '\n' && c != '\r');
                    }
                    if text.is_empty() && d.quote.is_none() && !d.null.is_empty() {
                        text.push('a');
                    }
                    field(&mut rng, &d, &text, g)
                }
            })
            .collect();
        if g.errors && rng.random_ratio(1, 300) {
            match rng.random_range(0..4) {
                0 => fields.push("extra".into()),
                1 if fields.len() > 1 => {
                    fields.pop();
                }
                2 if d.quote.is_some() => fields[0].push(d.quote.unwrap() as char),
                _ => fields[0] = format!("x{}y", d.quote.map_or('"', |q| q as char)),
            }
        }
        out.push_str(&fields.join(&(d.delimiter as char).to_string()));
        if rng.random_ratio(1, 20) && (fields.len() > 1 || !fields[0].is_empty()) {
            out.push(d.delimiter as char);
        }
        let last = r + 1 == g.rows;
        if !last || rng.random_ratio(1, 2) {
            out.push_str(pick(&mut rng, &["\n", "\n", "\n", "\r\n", "\r"]));
        }
    }
    if g.errors && d.quote.is_some() && rng.random_ratio(1, 20) {
        out.push(d.quote.unwrap() as char);
        out.push_str("unterminated");
    }
    Case {
        schema: cols.join(", "),
        dialect: d,
        data: out.into_bytes(),
    }
}

/// A new table `t` with `schema`.
pub fn table(schema: &str) -> Arc<Table> {
    let catalog = Catalog::default();
    let def = TableDef::new(
        "t",
        TableSchema::parse(schema).unwrap(),
        Partitioning::Single,
    )
    .unwrap();
    catalog.create_table(def, false).unwrap()
}

/// The source of a case.
pub fn source(c: &Case) -> Source {
    Source::Bytes {
        name: "input.csv".into(),
        data: Arc::from(c.data.clone()),
    }
}

/// Loads a case with the CPU loader: the rows as strings, or the error's text.
pub fn cpu_load(c: &Case) -> Result<Vec<Vec<Option<String>>>, String> {
    let t = table(&c.schema);
    let opts = LoadOptions {
        dialect: c.dialect.clone(),
        ..LoadOptions::default()
    };
    load_into(&t, &source(c), &opts, &LoadControl::default()).map_err(|e| e.to_string())?;
    Ok(rows(&t))
}

/// Every row of the table as strings (NULL = None).
pub fn rows(t: &Table) -> Vec<Vec<Option<String>>> {
    let snap = t.snapshot();
    let batches: Vec<RecordBatch> = snap.chunks().cloned().collect();
    batch_rows(&batches)
}

/// The rows of batches as strings (NULL = None); floats keep their bits.
pub fn batch_rows(batches: &[RecordBatch]) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for batch in batches {
        let cols: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| match c.data_type() {
                DataType::Float32 => cast(
                    &arrow::compute::kernels::cast::cast(c, &DataType::Float32).unwrap(),
                    &DataType::Utf8,
                )
                .unwrap(),
                _ => cast(c, &DataType::Utf8).unwrap(),
            })
            .collect();
        let bits: Vec<Option<Vec<String>>> = batch
            .columns()
            .iter()
            .map(|c| match c.data_type() {
                DataType::Float64 => Some(
                    c.as_primitive::<arrow::datatypes::Float64Type>()
                        .values()
                        .iter()
                        .map(|v| format!("{:x}", v.to_bits()))
                        .collect(),
                ),
                DataType::Float32 => Some(
                    c.as_primitive::<arrow::datatypes::Float32Type>()
                        .values()
                        .iter()
                        .map(|v| format!("{:x}", v.to_bits()))
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        for r in 0..batch.num_rows() {
            out.push(
                cols.iter()
                    .zip(&bits)
                    .map(|(c, b)| {
                        (!c.is_null(r)).then(|| match b {
                            Some(b) => b[r].clone(),
                            None => c.as_string::<i32>().value(r).to_string(),
                        })
                    })
                    .collect(),
            );
        }
    }
    out
}
