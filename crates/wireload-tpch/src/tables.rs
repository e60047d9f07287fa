//! The 8 TPC-H tables: their DDL, and their data generated with `tpchgen` as `.tbl`
//! files, in parallel.
//!
//! Big tables are cut into parts (tpchgen's `part`/`part_count`) that worker threads
//! generate into memory; each table's parts are appended to its file in order, so the
//! files equal a serial generation.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

/// The DDL of the 8 tables, with their primary keys.
pub const SCHEMA_SQL: &str = include_str!("../sql/schema.sql");

/// The definitions of the 8 tables, with or without their primary keys.
pub fn schema(keys: bool) -> anyhow::Result<Vec<wireload_storage::TableDef>> {
    let mut defs = Vec::new();
    for parsed in wireload_sql::parse_script(SCHEMA_SQL)? {
        let wireload_sql::Statement::CreateTable(create) = parsed.statement else {
            anyhow::bail!("schema.sql, line {}: not a CREATE TABLE", parsed.line);
        };
        let def = create.def;
        defs.push(if keys {
            def
        } else {
            wireload_storage::TableDef::new(def.name, def.schema, def.partitioning)?
        });
    }
    Ok(defs)
}

/// Bytes of generated text per part (a part is generated in memory before it is written).
const PART_BYTES: f64 = 16e6;

/// A TPC-H table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpchTable {
    /// REGION
    Region,
    /// NATION
    Nation,
    /// SUPPLIER
    Supplier,
    /// CUSTOMER
    Customer,
    /// PART
    Part,
    /// PARTSUPP
    PartSupp,
    /// ORDERS
    Orders,
    /// LINEITEM
    LineItem,
}

/// All tables, smallest first (the order they load in).
pub const TABLES: [TpchTable; 8] = [
    TpchTable::Region,
    TpchTable::Nation,
    TpchTable::Supplier,
    TpchTable::Customer,
    TpchTable::Part,
    TpchTable::PartSupp,
    TpchTable::Orders,
    TpchTable::LineItem,
];

impl TpchTable {
    /// The SQL table name.
    pub fn name(self) -> &'static str {
        match self {
            TpchTable::Region => "region",
            TpchTable::Nation => "nation",
            TpchTable::Supplier => "supplier",
            TpchTable::Customer => "customer",
            TpchTable::Part => "part",
            TpchTable::PartSupp => "partsupp",
            TpchTable::Orders => "orders",
            TpchTable::LineItem => "lineitem",
        }
    }

    /// The file name, `<name>.tbl`.
    pub fn file_name(self) -> String {
        format!("{}.tbl", self.name())
    }

    /// About how many bytes the table's file has at scale factor 1.
    fn bytes_at_sf1(self) -> f64 {
        match self {
            TpchTable::Region => 389.0,
            TpchTable::Nation => 2_224.0,
            TpchTable::Supplier => 1_409_184.0,
            TpchTable::Customer => 24_346_144.0,
            TpchTable::Part => 24_135_125.0,
            TpchTable::PartSupp => 118_984_616.0,
            TpchTable::Orders => 171_952_161.0,
            TpchTable::LineItem => 759_863_287.0,
        }
    }

    /// About how many bytes the table's file has at `sf`.
    pub fn estimated_bytes(self, sf: f64) -> u64 {
        match self {
            TpchTable::Region | TpchTable::Nation => self.bytes_at_sf1() as u64,
            _ => (self.bytes_at_sf1() * sf) as u64,
        }
    }

    /// How many parts the table is generated in at `sf`.
    fn part_count(self, sf: f64) -> i32 {
        match self {
            // their generators ignore part numbers
            TpchTable::Region | TpchTable::Nation => 1,
            _ => (self.estimated_bytes(sf) as f64 / PART_BYTES)
                .ceil()
                .clamp(1.0, 100_000.0) as i32,
        }
    }

    /// Appends part `part` (1-based) of `part_count` as `.tbl` lines to `out`; returns its row count.
    fn generate_part(self, sf: f64, part: i32, part_count: i32, out: &mut Vec<u8>) -> u64 {
        match self {
            TpchTable::Region => write_rows(RegionGenerator::new(sf, part, part_count).iter(), out),
            TpchTable::Nation => write_rows(NationGenerator::new(sf, part, part_count).iter(), out),
            TpchTable::Supplier => {
                write_rows(SupplierGenerator::new(sf, part, part_count).iter(), out)
            }
            TpchTable::Customer => {
                write_rows(CustomerGenerator::new(sf, part, part_count).iter(), out)
            }
            TpchTable::Part => write_rows(PartGenerator::new(sf, part, part_count).iter(), out),
            TpchTable::PartSupp => {
                write_rows(PartSuppGenerator::new(sf, part, part_count).iter(), out)
            }
            TpchTable::Orders => write_rows(OrderGenerator::new(sf, part, part_count).iter(), out),
            TpchTable::LineItem => {
                write_rows(LineItemGenerator::new(sf, part, part_count).iter(), out)
            }
        }
    }
}

fn write_rows<R: Display>(rows: impl Iterator<Item = R>, out: &mut Vec<u8>) -> u64 {
    let mut n = 0;
    for row in rows {
        // writing into a Vec cannot fail
        let _ = writeln!(out, "{row}");
        n += 1;
    }
    n
}

/// What generation wrote for one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedTable {
    /// The table.
    pub table: TpchTable,
    /// Its file.
    pub path: PathBuf,
    /// Rows written.
    pub rows: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// A table's file while its parts arrive: parts are written in order, early ones wait.
struct TableSink {
    file: File,
    next_part: i32,
    waiting: BTreeMap<i32, (Vec<u8>, u64)>,
    rows: u64,
    bytes: u64,
}

impl TableSink {
    fn accept(&mut self, part: i32, text: Vec<u8>, rows: u64) -> io::Result<()> {
        self.waiting.insert(part, (text, rows));
        while let Some((text, rows)) = self.waiting.remove(&self.next_part) {
            self.file.write_all(&text)?;
            self.rows += rows;
            self.bytes += text.len() as u64;
            self.next_part += 1;
        }
        Ok(())
    }
}

/// Estimated total bytes of all 8 files at `sf`.
pub fn estimated_total_bytes(sf: f64) -> u64 {
    TABLES.iter().map(|t| t.estimated_bytes(sf)).sum()
}

/// Generates the 8 tables at scale factor `sf` as `<dir>/<table>.tbl` with `threads`
/// workers; adds generated bytes to `progress` as it goes. Returns the tables in [`TABLES`] order.
pub fn generate(
    sf: f64,
    dir: &Path,
    threads: usize,
    progress: &AtomicU64,
) -> io::Result<Vec<GeneratedTable>> {
    if !(sf > 0.0 && sf.is_finite()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("scale factor must be positive, got {sf}"),
        ));
    }
    std::fs::create_dir_all(dir)?;
    let mut sinks = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        let file = File::create(dir.join(table.file_name()))?;
        sinks.push(Mutex::new(TableSink {
            file,
            next_part: 1,
            waiting: BTreeMap::new(),
            rows: 0,
            bytes: 0,
        }));
    }
    // biggest tables first so the long jobs start early; parts in order per table
    let mut jobs: Vec<(usize, i32, i32)> = Vec::new();
    for (index, table) in TABLES.iter().enumerate().rev() {
        let count = table.part_count(sf);
        jobs.extend((1..=count).map(|part| (index, part, count)));
    }
    let next_job = AtomicUsize::new(0);
    let first_error: Mutex<Option<io::Error>> = Mutex::new(None);
    let workers = threads.clamp(1, jobs.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next_job.fetch_add(1, Ordering::Relaxed);
                    let Some(&(index, part, count)) = jobs.get(i) else {
                        break;
                    };
                    if first_error
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .is_some()
                    {
                        break;
                    }
                    let table = TABLES[index];
                    let mut text = Vec::with_capacity(
                        (table.estimated_bytes(sf) / count as u64) as usize + 4096,
                    );
                    let rows = table.generate_part(sf, part, count, &mut text);
                    progress.fetch_add(text.len() as u64, Ordering::Relaxed);
                    let mut sink = sinks[index].lock().unwrap_or_else(|e| e.into_inner());
                    if let Err(e) = sink.accept(part, text, rows) {
                        first_error
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert(e);
                        break;
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    TABLES
        .iter()
        .zip(sinks)
        .map(|(&table, sink)| {
            let sink = sink.into_inner().unwrap_or_else(|e| e.into_inner());
            Ok(GeneratedTable {
                table,
                path: dir.join(table.file_name()),
                rows: sink.rows,
                bytes: sink.bytes,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_concatenate_to_the_whole_table() {
        for table in [
            TpchTable::LineItem,
            TpchTable::PartSupp,
            TpchTable::Orders,
            TpchTable::Customer,
        ] {
            let mut whole = Vec::new();
            let whole_rows = table.generate_part(0.01, 1, 1, &mut whole);
            let mut parts = Vec::new();
            let mut part_rows = 0;
            for part in 1..=3 {
                part_rows += table.generate_part(0.01, part, 3, &mut parts);
            }
            assert_eq!(whole_rows, part_rows, "{table:?}");
            assert!(whole == parts, "{table:?} parts differ from the whole");
        }
    }

    #[test]
    fn generates_eight_files_with_tpch_row_counts() {
        let dir = tempfile::tempdir().unwrap();
        let progress = AtomicU64::new(0);
        let tables = generate(0.01, dir.path(), 3, &progress).unwrap();
        let rows: Vec<(&str, u64)> = tables.iter().map(|t| (t.table.name(), t.rows)).collect();
        assert_eq!(
            rows,
            [
                ("region", 5),
                ("nation", 25),
                ("supplier", 100),
                ("customer", 1500),
                ("part", 2000),
                ("partsupp", 8000),
                ("orders", 15000),
                ("lineitem", 60175),
            ]
        );
        let total: u64 = tables.iter().map(|t| t.bytes).sum();
        assert_eq!(progress.load(Ordering::Relaxed), total);
        for t in &tables {
            let text = std::fs::read_to_string(&t.path).unwrap();
            assert_eq!(text.len() as u64, t.bytes);
            assert_eq!(text.lines().count() as u64, t.rows);
            assert!(text.lines().all(|l| l.ends_with('|')));
        }
    }

    #[test]
    fn schema_without_keys_drops_only_the_keys() {
        let with = schema(true).unwrap();
        let without = schema(false).unwrap();
        assert_eq!(with.len(), 8);
        assert!(with.iter().all(|d| d.primary_key().is_some()));
        assert!(without.iter().all(|d| d.indexes.is_empty()));
        for (a, b) in with.iter().zip(&without) {
            assert_eq!((&a.name, &a.schema), (&b.name, &b.schema));
        }
        let names: Vec<&str> = with.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "region", "nation", "supplier", "customer", "part", "partsupp", "orders",
                "lineitem"
            ]
        );
    }

    #[test]
    fn rejects_bad_scale_factors() {
        let dir = tempfile::tempdir().unwrap();
        assert!(generate(0.0, dir.path(), 1, &AtomicU64::new(0)).is_err());
        assert!(generate(f64::NAN, dir.path(), 1, &AtomicU64::new(0)).is_err());
    }
}
