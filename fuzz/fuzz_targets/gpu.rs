//! The GPU engine on arbitrary input: the CUDA kernels (run on the CPU emulator) produce
//! what the plain-Rust reference of the passes produces, byte for byte, and a load through
//! the engine (with the reference passes) gives the CPU loader's rows or its error.
//!
//! The first byte picks a schema, the dialect and the chunk size; the rest is the CSV.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use wireload_gpu::testing::check::{column, compare_on, not_null};
use wireload_gpu::testing::{Emulator, load_into_reference};
use wireload_gpu::{GpuOptions, PassMode};
use wireload_load::{Dialect, LoadControl, LoadOptions, Source, load_into};
use wireload_storage::{Partitioning, Table, TableDef};
use wireload_types::SqlType::{
    BigInt, Boolean, Date, Decimal, Double, Integer, Text, Timestamp, Varchar,
};
use wireload_types::{ColumnDef, TableSchema};

/// The four schemas the first byte picks from.
fn schemas() -> [Vec<ColumnDef>; 4] {
    [
        vec![column("a", Integer), column("b", Text)],
        vec![
            column(
                "a",
                Decimal {
                    precision: 15,
                    scale: 2,
                },
            ),
            column("b", Date),
            column("c", Varchar(Some(3))),
        ],
        vec![
            not_null("a", BigInt),
            column("b", Double),
            column("c", Timestamp),
            column("d", Boolean),
        ],
        vec![column("a", Text)],
    ]
}

fn emulator() -> &'static Arc<Emulator> {
    static DEV: OnceLock<Arc<Emulator>> = OnceLock::new();
    DEV.get_or_init(|| Arc::new(Emulator::new(32)))
}

fn table(columns: &[ColumnDef]) -> Table {
    let schema = TableSchema {
        columns: columns.to_vec(),
    };
    Table::new(TableDef::new("t", schema, Partitioning::Single).unwrap())
}

/// The table's rows, cast to strings (NULL = None).
fn rows(t: &Table) -> Vec<Vec<Option<String>>> {
    use arrow::array::{Array, AsArray};
    let mut out = Vec::new();
    for b in t.snapshot().live_chunks().unwrap() {
        let cols: Vec<_> = b
            .columns()
            .iter()
            .map(|c| arrow::compute::cast(c, &arrow::datatypes::DataType::Utf8).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            out.push(
                cols.iter()
                    .map(|c| (!c.is_null(r)).then(|| c.as_string::<i32>().value(r).to_string()))
                    .collect(),
            );
        }
    }
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&cfg, data)) = input.split_first() else {
        return;
    };
    let schema = &schemas()[(cfg & 3) as usize];
    let mut d = Dialect::default();
    if cfg & 4 != 0 {
        d.delimiter = b'|';
    }
    if cfg & 8 != 0 {
        d.quote = Some(b'\'');
        d.escape = Some(b'\'');
    }
    if cfg & 16 != 0 {
        d.null = b"NULL".to_vec();
    }
    let opts = GpuOptions {
        chunk: if cfg & 32 != 0 { 128 } else { 256 },
        mode: if cfg & 64 != 0 {
            PassMode::Quoted
        } else {
            PassMode::Auto
        },
        partition: if cfg & 128 != 0 { 16 } else { 1 << 20 },
        fallbacks: 8,
        streams: 2,
    };
    if let Some(diff) = compare_on(emulator(), schema, &d, data, &opts).unwrap() {
        panic!("kernels and reference differ: {diff}");
    }
    let src = Source::Bytes {
        name: "fuzz.csv".into(),
        data: Arc::from(data.to_vec()),
    };
    let cpu = table(schema);
    let want = load_into(
        &cpu,
        &src,
        &LoadOptions {
            dialect: d.clone(),
            ..LoadOptions::default()
        },
        &LoadControl::default(),
    )
    .map(|_| rows(&cpu))
    .map_err(|e| e.to_string());
    let gpu = table(schema);
    let got = load_into_reference(&gpu, &src, &d, &opts, &LoadControl::default())
        .map(|_| rows(&gpu))
        .map_err(|e| e.to_string());
    assert_eq!(got, want);
});
