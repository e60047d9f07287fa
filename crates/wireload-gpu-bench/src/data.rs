//! The bench's data sets, generated in memory in parallel: TPC-H lineitem (tpchgen, as
//! `.tbl` text), a numeric-heavy taxi-like file (the shape of the paper's NYC Yellow Taxi
//! 2019 data), and the paper's int_444 (three fields of four random digits).
//!
//! The synthetic files are made of blocks of records, each block from its own fixed seed,
//! so a smaller file is a prefix of a larger one.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use tpchgen::generators::LineItemGenerator;
use wireload_gpu::testing::check::{column, columns_text, not_null};
use wireload_load::Dialect;
use wireload_types::ColumnDef;
use wireload_types::SqlType::{
    BigInt, Char, Date, Decimal, Double, Integer, SmallInt, Timestamp, Varchar,
};

/// TPC-H lineitem as the bench loads it (the TPC-H DDL without the key).
fn lineitem_columns() -> Vec<ColumnDef> {
    let money = Decimal {
        precision: 15,
        scale: 2,
    };
    [
        ("l_orderkey", BigInt),
        ("l_partkey", Integer),
        ("l_suppkey", Integer),
        ("l_linenumber", Integer),
        ("l_quantity", money),
        ("l_extendedprice", money),
        ("l_discount", money),
        ("l_tax", money),
        ("l_returnflag", Char(1)),
        ("l_linestatus", Char(1)),
        ("l_shipdate", Date),
        ("l_commitdate", Date),
        ("l_receiptdate", Date),
        ("l_shipinstruct", Char(25)),
        ("l_shipmode", Char(10)),
        ("l_comment", Varchar(Some(44))),
    ]
    .into_iter()
    .map(|(name, ty)| not_null(name, ty))
    .collect()
}

/// The taxi-like file: the 18 columns of NYC Yellow Taxi 2019 (9 DOUBLE, 5 INTEGER, a
/// SMALLINT rate code, 2 TIMESTAMP, a CHAR(1) flag).
fn taxi_columns() -> Vec<ColumnDef> {
    [
        ("vendorid", Integer),
        ("tpep_pickup_datetime", Timestamp),
        ("tpep_dropoff_datetime", Timestamp),
        ("passenger_count", Integer),
        ("trip_distance", Double),
        ("ratecodeid", SmallInt),
        ("store_and_fwd_flag", Char(1)),
        ("pulocationid", Integer),
        ("dolocationid", Integer),
        ("payment_type", Integer),
        ("fare_amount", Double),
        ("extra", Double),
        ("mta_tax", Double),
        ("tip_amount", Double),
        ("tolls_amount", Double),
        ("improvement_surcharge", Double),
        ("total_amount", Double),
        ("congestion_surcharge", Double),
    ]
    .into_iter()
    .map(|(name, ty)| column(name, ty))
    .collect()
}

/// int_444: three fields of four random digits.
fn int444_columns() -> Vec<ColumnDef> {
    ["a", "b", "c"]
        .into_iter()
        .map(|name| not_null(name, Integer))
        .collect()
}

/// Bytes of lineitem at scale factor 1 (tpchgen's `.tbl`).
const LINEITEM_SF1_BYTES: f64 = 759_863_287.0;

/// Which data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// TPC-H lineitem
    Lineitem,
    /// the taxi-like file
    Taxi,
    /// int_444
    Int444,
}

impl Kind {
    /// The three, in the order the sections show them.
    pub const ALL: [Kind; 3] = [Kind::Lineitem, Kind::Taxi, Kind::Int444];

    /// Short name (JSON keys).
    pub fn key(self) -> &'static str {
        match self {
            Kind::Lineitem => "lineitem",
            Kind::Taxi => "taxi",
            Kind::Int444 => "int_444",
        }
    }

    /// The columns.
    pub fn columns(self) -> Vec<ColumnDef> {
        match self {
            Kind::Lineitem => lineitem_columns(),
            Kind::Taxi => taxi_columns(),
            Kind::Int444 => int444_columns(),
        }
    }

    /// The column list as SQL text (for the reports).
    pub fn schema(self) -> String {
        columns_text(&self.columns())
    }

    /// How the file is written.
    pub fn dialect(self) -> Dialect {
        match self {
            // COPY ... WITH (FORMAT csv, DELIMITER '|'): quoting stays on
            Kind::Lineitem => Dialect {
                delimiter: b'|',
                ..Dialect::default()
            },
            Kind::Taxi | Kind::Int444 => Dialect::default(),
        }
    }
}

/// A generated file.
#[derive(Debug)]
pub struct Dataset {
    /// Which.
    pub kind: Kind,
    /// For the tables: "lineitem SF1", "taxi", "int_444".
    pub label: String,
    /// The columns.
    pub columns: Vec<ColumnDef>,
    /// The CSV text (whole records).
    pub data: Arc<[u8]>,
    /// Records in `data`.
    pub rows: u64,
    /// Seconds the generation took.
    pub gen_seconds: f64,
}

impl Dataset {
    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.kind.dialect()
    }
}

/// Length of the longest prefix of whole records of `data` within `limit` bytes (the first
/// record when even it is longer).
pub fn prefix_len(data: &[u8], limit: usize) -> usize {
    if limit >= data.len() {
        return data.len();
    }
    match memchr::memrchr(b'\n', &data[..limit]) {
        Some(i) => i + 1,
        None => memchr::memchr(b'\n', data).map_or(data.len(), |i| i + 1),
    }
}

/// `data` cut into consecutive pieces of whole records of at most `max` bytes each.
pub fn split_records(data: &[u8], max: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let n = prefix_len(&data[at..], max);
        out.push(at..at + n);
        at += n;
    }
    out
}

/// SplitMix64: a small, fast generator; one per block of records.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, block: u64) -> Self {
        let mut r = Rng(seed ^ block.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n small: the bias is negligible).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }

    /// True with probability `p` percent.
    fn pct(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}

/// Appends `v` in decimal.
fn push_u(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends `v` (< 100) as two digits.
fn push_2(out: &mut Vec<u8>, v: u64) {
    out.push(b'0' + (v / 10) as u8);
    out.push(b'0' + (v % 10) as u8);
}

/// Appends an amount of cents as the taxi files write it: `7`, `12.5`, `9.75`.
fn push_cents(out: &mut Vec<u8>, c: u64) {
    push_u(out, c / 100);
    let f = c % 100;
    if f != 0 {
        out.push(b'.');
        out.push(b'0' + (f / 10) as u8);
        if !f.is_multiple_of(10) {
            out.push(b'0' + (f % 10) as u8);
        }
    }
}

/// Appends `2019-MM-DD hh:mm:ss` for day `day` (0..84) of the first quarter and second
/// `sec` of that day.
fn push_ts(out: &mut Vec<u8>, day: u64, sec: u64) {
    out.extend_from_slice(b"2019-");
    push_2(out, 1 + day / 28);
    out.push(b'-');
    push_2(out, 1 + day % 28);
    out.push(b' ');
    push_2(out, sec / 3600);
    out.push(b':');
    push_2(out, sec / 60 % 60);
    out.push(b':');
    push_2(out, sec % 60);
}

/// Records per block of the synthetic files.
const BLOCK: u64 = 1 << 16;

/// One block of taxi-like records.
fn taxi_block(seed: u64, block: u64) -> Vec<u8> {
    let mut r = Rng::new(seed, block);
    let mut out = Vec::with_capacity(BLOCK as usize * 96);
    for _ in 0..BLOCK {
        let vendor = if r.pct(60) { 2 } else { 1 };
        let day = r.below(84);
        let pickup = r.below(86_400 - 3_601);
        let dropoff = pickup + 60 + r.below(3_540);
        let passengers = if r.pct(70) { 1 } else { 1 + r.below(6) };
        let long = !r.pct(90);
        let distance = r.below(if long { 3_000 } else { 800 }); // hundredths of a mile
        let rate = if r.pct(97) { 1 } else { 1 + r.below(6) };
        let flag = if r.pct(99) { b'N' } else { b'Y' };
        let pu = 1 + r.below(265);
        let dof = 1 + r.below(265);
        let payment = if r.pct(70) { 1 } else { 1 + r.below(4) };
        let fare = 250 + distance * 2 + r.below(4) * 50; // cents
        let extra = [0, 50, 100, 150][r.below(4) as usize];
        let mta = if r.pct(98) { 50 } else { 0 };
        let tip = if payment == 1 {
            r.below(fare / 3 + 1)
        } else {
            0
        };
        let tolls = if r.pct(5) { 576 } else { 0 };
        let improvement = 30;
        let congestion = match r.below(10) {
            0..=5 => None, // empty: NULL (as in the January 2019 file)
            6..=8 => Some(250),
            _ => Some(0),
        };
        let total = fare + extra + mta + tip + tolls + improvement + congestion.unwrap_or(0);
        push_u(&mut out, vendor);
        out.push(b',');
        push_ts(&mut out, day, pickup);
        out.push(b',');
        push_ts(&mut out, day, dropoff);
        out.push(b',');
        push_u(&mut out, passengers);
        out.push(b',');
        push_u(&mut out, distance / 100);
        out.push(b'.');
        push_2(&mut out, distance % 100);
        out.push(b',');
        push_u(&mut out, rate);
        out.push(b',');
        out.push(flag);
        out.push(b',');
        push_u(&mut out, pu);
        out.push(b',');
        push_u(&mut out, dof);
        out.push(b',');
        push_u(&mut out, payment);
        for c in [fare, extra, mta, tip, tolls, improvement, total] {
            out.push(b',');
            push_cents(&mut out, c);
        }
        out.push(b',');
        if let Some(c) = congestion {
            push_cents(&mut out, c);
        }
        out.push(b'\n');
    }
    out
}

/// Fills `out` (a whole number of 15-byte records) with int_444 records, block `first`
/// onwards.
fn int444_fill(seed: u64, first: u64, out: &mut [u8]) {
    for (i, block) in out.chunks_mut(15 * BLOCK as usize).enumerate() {
        let mut r = Rng::new(seed, first + i as u64);
        for rec in block.chunks_exact_mut(15) {
            let v = r.next();
            let f = [v % 10_000, (v >> 16) % 10_000, (v >> 40) % 10_000];
            for (k, x) in f.into_iter().enumerate() {
                let o = k * 5;
                rec[o] = b'0' + (x / 1000) as u8;
                rec[o + 1] = b'0' + (x / 100 % 10) as u8;
                rec[o + 2] = b'0' + (x / 10 % 10) as u8;
                rec[o + 3] = b'0' + (x % 10) as u8;
                rec[o + 4] = if k == 2 { b'\n' } else { b',' };
            }
        }
    }
}

/// A shared buffer of `len` bytes to fill (zeroed).
fn zeroed(len: usize) -> Arc<[u8]> {
    std::iter::repeat_n(0u8, len).collect()
}

/// The pieces concatenated, cut to their first `limit` bytes of whole records, in one
/// shared buffer (the copies run in parallel).
fn concat(pieces: &[Vec<u8>], limit: usize) -> Arc<[u8]> {
    // how much of each piece is kept
    let mut keep = Vec::with_capacity(pieces.len());
    let mut left = limit;
    for p in pieces {
        if left >= p.len() {
            keep.push(p.len());
            left -= p.len();
        } else {
            let n = match memchr::memrchr(b'\n', &p[..left]) {
                Some(i) => i + 1,
                None => 0,
            };
            keep.push(n);
            break;
        }
    }
    let total: usize = keep.iter().sum();
    let mut buf = zeroed(total);
    let dst = Arc::get_mut(&mut buf).expect("just made");
    let mut slots = Vec::with_capacity(keep.len());
    let mut rest = dst;
    for &n in &keep {
        let (a, b) = std::mem::take(&mut rest).split_at_mut(n);
        slots.push(a);
        rest = b;
    }
    slots
        .into_par_iter()
        .zip(pieces.par_iter())
        .for_each(|(d, p)| d.copy_from_slice(&p[..d.len()]));
    buf
}

/// TPC-H lineitem at scale factor `sf`, generated in parts of about 16 MB in parallel.
pub fn lineitem(sf: f64) -> (Arc<[u8]>, u64) {
    let est = LINEITEM_SF1_BYTES * sf;
    let parts = ((est / 16e6).ceil() as i32).clamp(1, 100_000);
    let pieces: Vec<(Vec<u8>, u64)> = (1..=parts)
        .into_par_iter()
        .map(|part| {
            let mut out = Vec::with_capacity((est / parts as f64) as usize + 4096);
            let mut n = 0;
            for row in LineItemGenerator::new(sf, part, parts).iter() {
                // writing into a Vec cannot fail
                let _ = writeln!(out, "{row}");
                n += 1;
            }
            (out, n)
        })
        .collect();
    let rows = pieces.iter().map(|p| p.1).sum();
    let pieces: Vec<Vec<u8>> = pieces.into_iter().map(|p| p.0).collect();
    (concat(&pieces, usize::MAX), rows)
}

/// About `size` bytes of taxi-like records (whole records, at most `size` bytes).
pub fn taxi(seed: u64, size: usize) -> (Arc<[u8]>, u64) {
    let first = taxi_block(seed, 0);
    let blocks = (size as f64 / first.len() as f64 * 1.01).ceil() as u64 + 1;
    let mut pieces: Vec<Vec<u8>> = (1..blocks)
        .into_par_iter()
        .map(|b| taxi_block(seed, b))
        .collect();
    pieces.insert(0, first);
    let data = concat(&pieces, size);
    let rows = count_rows(&data);
    (data, rows)
}

/// `size / 15` int_444 records (15 bytes each).
pub fn int444(seed: u64, size: usize) -> (Arc<[u8]>, u64) {
    let rows = (size / 15).max(1);
    let mut buf = zeroed(rows * 15);
    let dst = Arc::get_mut(&mut buf).expect("just made");
    dst.par_chunks_mut(15 * BLOCK as usize * 16)
        .enumerate()
        .for_each(|(i, c)| int444_fill(seed, i as u64 * 16, c));
    (buf, rows as u64)
}

/// Record delimiters in `data`, counted in parallel.
pub fn count_rows(data: &[u8]) -> u64 {
    data.par_chunks(1 << 24)
        .map(|c| bytecount::count(c, b'\n') as u64)
        .sum()
}

/// The data sets generated so far: lineitem per scale factor, the synthetic files at the
/// largest size asked for (smaller sizes are prefixes).
#[derive(Debug)]
pub struct Data {
    seed: u64,
    lineitem: BTreeMap<u64, Arc<Dataset>>,
    synthetic: BTreeMap<Kind, Arc<Dataset>>,
}

/// Scale factor as a map key (millionths).
fn sf_key(sf: f64) -> u64 {
    (sf * 1e6).round() as u64
}

/// "SF1", "SF0.01", ...
pub fn sf_label(sf: f64) -> String {
    format!("SF{}", (sf * 1e6).round() / 1e6)
}

impl Data {
    /// Nothing generated yet.
    pub fn new(seed: u64) -> Self {
        Data {
            seed,
            lineitem: BTreeMap::new(),
            synthetic: BTreeMap::new(),
        }
    }

    /// Lineitem at `sf`.
    pub fn lineitem(&mut self, sf: f64) -> Arc<Dataset> {
        if let Some(d) = self.lineitem.get(&sf_key(sf)) {
            return Arc::clone(d);
        }
        let t = Instant::now();
        let (data, rows) = lineitem(sf);
        let d = Arc::new(Dataset {
            kind: Kind::Lineitem,
            label: format!("lineitem {}", sf_label(sf)),
            columns: Kind::Lineitem.columns(),
            data,
            rows,
            gen_seconds: t.elapsed().as_secs_f64(),
        });
        note(&d);
        self.lineitem.insert(sf_key(sf), Arc::clone(&d));
        d
    }

    /// Lineitem of at least `bytes` bytes: the smallest generated so far that is large
    /// enough, else a new one at the smallest scale factor (in hundredths) that is.
    pub fn lineitem_at_least(&mut self, bytes: usize) -> Arc<Dataset> {
        if let Some(d) = self
            .lineitem
            .values()
            .filter(|d| d.data.len() >= bytes)
            .min_by_key(|d| d.data.len())
        {
            return Arc::clone(d);
        }
        let mut sf = (bytes as f64 / LINEITEM_SF1_BYTES * 1.01 * 100.0).ceil() / 100.0;
        loop {
            let d = self.lineitem(sf);
            if d.data.len() >= bytes {
                return d;
            }
            sf = (sf * 105.0).ceil() / 100.0;
        }
    }

    /// A synthetic file of at least `size` bytes (or of its whole records within `size`
    /// bytes when generated for this call); use [`prefix_len`] for `size` exactly.
    pub fn synthetic(&mut self, kind: Kind, size: usize) -> Arc<Dataset> {
        if let Some(d) = self.synthetic.get(&kind)
            && d.data.len() + 200 >= size
        {
            return Arc::clone(d);
        }
        let t = Instant::now();
        let (data, rows) = match kind {
            Kind::Taxi => taxi(self.seed, size),
            Kind::Int444 => int444(self.seed, size),
            Kind::Lineitem => unreachable!("lineitem comes from tpchgen"),
        };
        let d = Arc::new(Dataset {
            kind,
            label: kind.key().to_string(),
            columns: kind.columns(),
            data,
            rows,
            gen_seconds: t.elapsed().as_secs_f64(),
        });
        note(&d);
        self.synthetic.insert(kind, Arc::clone(&d));
        d
    }

    /// The file of `kind` the throughput sections use: lineitem at `sf`, the synthetic
    /// ones at `size` bytes (a prefix when a larger one was generated).
    pub fn standard(&mut self, kind: Kind, sf: f64, size: usize) -> (Arc<Dataset>, usize) {
        match kind {
            Kind::Lineitem => {
                let d = self.lineitem(sf);
                let n = d.data.len();
                (d, n)
            }
            _ => {
                let d = self.synthetic(kind, size);
                let n = prefix_len(&d.data, size);
                (d, n)
            }
        }
    }
}

fn note(d: &Dataset) {
    eprintln!(
        "[data] generated {}: {} MB, {} records in {:.2} s",
        d.label,
        crate::report::fmt_mb(d.data.len()),
        d.rows,
        d.gen_seconds
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_column_lists_read_as_the_reports_name_them() {
        assert_eq!(
            Kind::Lineitem.schema(),
            "l_orderkey BIGINT NOT NULL, l_partkey INTEGER NOT NULL, \
             l_suppkey INTEGER NOT NULL, l_linenumber INTEGER NOT NULL, \
             l_quantity DECIMAL(15,2) NOT NULL, l_extendedprice DECIMAL(15,2) NOT NULL, \
             l_discount DECIMAL(15,2) NOT NULL, l_tax DECIMAL(15,2) NOT NULL, \
             l_returnflag CHAR(1) NOT NULL, l_linestatus CHAR(1) NOT NULL, \
             l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, l_receiptdate DATE NOT NULL, \
             l_shipinstruct CHAR(25) NOT NULL, l_shipmode CHAR(10) NOT NULL, \
             l_comment VARCHAR(44) NOT NULL"
        );
        assert_eq!(
            Kind::Taxi.schema(),
            "vendorid INTEGER, tpep_pickup_datetime TIMESTAMP, \
             tpep_dropoff_datetime TIMESTAMP, passenger_count INTEGER, trip_distance DOUBLE, \
             ratecodeid SMALLINT, store_and_fwd_flag CHAR(1), pulocationid INTEGER, \
             dolocationid INTEGER, payment_type INTEGER, fare_amount DOUBLE, extra DOUBLE, \
             mta_tax DOUBLE, tip_amount DOUBLE, tolls_amount DOUBLE, improvement_surcharge DOUBLE, \
             total_amount DOUBLE, congestion_surcharge DOUBLE"
        );
        assert_eq!(
            Kind::Int444.schema(),
            "a INTEGER NOT NULL, b INTEGER NOT NULL, c INTEGER NOT NULL"
        );
    }

    #[test]
    fn synthetic_prefixes_and_splits() {
        let (a, ra) = int444(7, 15 * 1000);
        assert_eq!((a.len(), ra), (15_000, 1000));
        let (b, _) = int444(7, 15 * 200_000);
        assert_eq!(&b[..a.len()], &a[..]);
        let (t, rows) = taxi(7, 300_000);
        assert!(t.len() <= 300_000 && t.len() > 290_000);
        assert_eq!(*t.last().unwrap(), b'\n');
        assert_eq!(rows, count_rows(&t));
        let parts = split_records(&t, 10_000);
        assert!(
            parts
                .iter()
                .all(|p| p.len() <= 10_000 && t[p.end - 1] == b'\n')
        );
        assert_eq!(parts.last().unwrap().end, t.len());
        let (l, lr) = lineitem(0.001);
        assert_eq!(lr, count_rows(&l));
    }
}
