//! Checking a device against the reference: a generator of adversarial CSV (many types,
//! NULLs, quoting with delimiters, newlines and doubled quotes inside, CR/LF/CRLF, empty
//! lines, trailing delimiters, shapes the kernels leave to the host, and errors when asked)
//! and a byte-for-byte comparison of a device's passes with [`crate::reference`]. The
//! tests use them with the emulator, and the GPU bench's `verify` with the GPU.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_load::Dialect;
use wireload_types::{ColumnDef, SqlType};

use crate::device::Device;
use crate::error::GpuError;
use crate::passes::Workspace;
use crate::plan::{GpuOptions, PassMode, Plan};
use crate::reference;

/// A column named `name` of type `ty` that may hold NULL.
pub fn column(name: &str, ty: SqlType) -> ColumnDef {
    ColumnDef {
        name: name.to_string(),
        ty,
        nullable: true,
    }
}

/// A column named `name` of type `ty`, NOT NULL.
pub fn not_null(name: &str, ty: SqlType) -> ColumnDef {
    ColumnDef {
        nullable: false,
        ..column(name, ty)
    }
}

/// The column list as SQL text (`a INTEGER NOT NULL, b TEXT`), for messages and reports.
pub fn columns_text(columns: &[ColumnDef]) -> String {
    columns
        .iter()
        .map(|c| {
            let null = if c.nullable { "" } else { " NOT NULL" };
            format!("{} {}{null}", c.name, c.ty)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A generated input.
#[derive(Debug, Clone)]
pub struct Case {
    /// the columns
    pub columns: Vec<ColumnDef>,
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

const TYPES: &[SqlType] = &[
    SqlType::Boolean,
    SqlType::SmallInt,
    SqlType::Integer,
    SqlType::BigInt,
    SqlType::Real,
    SqlType::Double,
    SqlType::Decimal {
        precision: 15,
        scale: 2,
    },
    SqlType::Decimal {
        precision: 5,
        scale: 5,
    },
    SqlType::Decimal {
        precision: 38,
        scale: 4,
    },
    SqlType::Decimal {
        precision: 18,
        scale: 0,
    },
    SqlType::Date,
    SqlType::Timestamp,
    SqlType::Char(3),
    SqlType::Varchar(Some(8)),
    SqlType::Varchar(None),
    SqlType::Text,
];

fn pick<T: Copy>(rng: &mut StdRng, v: &[T]) -> T {
    v[rng.random_range(0..v.len())]
}

fn digits(rng: &mut StdRng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
        .collect()
}

/// A value of `ty` as text (before quoting).
fn value(rng: &mut StdRng, ty: SqlType, g: Gen) -> String {
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
        SqlType::Boolean => {
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
        SqlType::SmallInt | SqlType::Integer | SqlType::BigInt => {
            let max = match ty {
                SqlType::SmallInt => 4,
                SqlType::Integer => 9,
                _ => 18,
            };
            if odd {
                match rng.random_range(0..5) {
                    0 => format!(" {}", rng.random_range(0..1000)),
                    1 => format!("+{}", rng.random_range(0..1000)),
                    2 => format!("000000000000000000000{}", rng.random_range(0..9)),
                    3 => match ty {
                        SqlType::SmallInt => "-32768".into(),
                        SqlType::Integer => "-2147483648".into(),
                        _ => "-9223372036854775808".into(),
                    },
                    _ => format!("{}\t", rng.random_range(0..1000)),
                }
            } else {
                let n = rng.random_range(1..=max);
                format!("{sign}{}", digits(rng, n))
            }
        }
        SqlType::Real | SqlType::Double => {
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
        SqlType::Decimal { precision, scale } => {
            let (p, s) = (precision as usize, scale as usize);
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
        SqlType::Date => {
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
        SqlType::Timestamp => {
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
        SqlType::Char(_) | SqlType::Varchar(_) | SqlType::Text => {
            let max = match ty {
                SqlType::Char(n) | SqlType::Varchar(Some(n)) => n as usize,
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
    let mut columns = Vec::new();
    let mut types = Vec::new();
    for i in 0..ncols {
        let ty = pick(&mut rng, TYPES);
        let not_null = rng.random_ratio(1, 6);
        columns.push(ColumnDef {
            name: format!("c{i}"),
            ty,
            nullable: !not_null,
        });
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
    if let Some(q) = d.quote.filter(|_| g.errors && rng.random_ratio(1, 20)) {
        out.push(q as char);
        out.push_str("unterminated");
    }
    Case {
        columns,
        dialect: d,
        data: out.into_bytes(),
    }
}

/// Runs the passes over `data` on `dev` and with the reference (a record delimiter is
/// added when the last record has none); the first difference, if any.
pub fn compare_on<D: Device>(
    dev: &Arc<D>,
    columns: &[ColumnDef],
    dialect: &Dialect,
    data: &[u8],
    opts: &GpuOptions,
) -> Result<Option<String>, GpuError> {
    let plan = Arc::new(Plan::new(columns, dialect)?);
    let mut input = data.to_vec();
    if !matches!(input.last(), Some(b'\n' | b'\r')) {
        input.push(b'\n');
    }
    let mut ws = Workspace::new(Arc::clone(dev), Arc::clone(&plan), opts)?;
    ws.load_input(&input)?;
    let got = ws.run(true)?;
    let want = reference::run(&input, &plan, opts, true);
    Ok(got.diff(&want))
}

/// What [`check_device`] found.
#[derive(Debug, Default, Clone)]
pub struct CheckReport {
    /// inputs compared
    pub inputs: usize,
    /// inputs whose passes ran in quoted mode
    pub quoted: usize,
    /// differences: the input's seed and configuration, and what differed
    pub failures: Vec<String>,
}

/// Compares `dev` with the reference on `seeds` random inputs, at several chunk sizes
/// and in both modes.
pub fn check_device<D: Device>(
    dev: &Arc<D>,
    seeds: std::ops::Range<u64>,
    rows: usize,
) -> Result<CheckReport, GpuError> {
    let mut report = CheckReport::default();
    let configs = [
        (128, PassMode::Auto),
        (256, PassMode::Quoted),
        (1024, PassMode::Auto),
        (512, PassMode::Quoted),
    ];
    for seed in seeds {
        let g = Gen {
            rows: 1 + (seed as usize * 7) % rows.max(1),
            errors: seed % 4 == 3,
            quotes: seed % 3 != 0,
            odd: seed % 2 == 0,
        };
        let c = case(seed, g);
        let (chunk, mode) = configs[seed as usize % configs.len()];
        let opts = GpuOptions {
            chunk,
            mode,
            fallbacks: if seed % 5 == 0 { 4 } else { 1 << 12 },
            ..GpuOptions::default()
        };
        report.inputs += 1;
        if let Some(d) = compare_on(dev, &c.columns, &c.dialect, &c.data, &opts)? {
            report.failures.push(format!(
                "seed {seed} (chunk {chunk}, {mode:?}, schema {}): {d}",
                columns_text(&c.columns)
            ));
        }
        let plan = Plan::new(&c.columns, &c.dialect)?;
        report.quoted += reference::run(&c.data, &plan, &opts, false).quoted as usize;
    }
    Ok(report)
}
