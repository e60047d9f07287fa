//! Loads one CSV file into a fresh table and prints rows, seconds and MB/s of each run.
//!
//! `cargo run --release -p wireload-load --example load_file -- FILE "SCHEMA" [DELIM] [THREADS] [RUNS] [CHUNK_BYTES] [MODE]`

use std::sync::Arc;

use wireload_load::{Dialect, LoadControl, LoadOptions, ScanMode, Source, load_into};
use wireload_storage::{Catalog, Partitioning, TableDef};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let schema = wireload_types::sql::parse_columns(&args[2]).expect("schema");
    let delimiter = args.get(3).map(|d| d.as_bytes()[0]).unwrap_or(b',');
    let threads = args.get(4).map(|t| t.parse().unwrap()).unwrap_or(2);
    let runs = args.get(5).map(|t| t.parse().unwrap()).unwrap_or(3);
    let chunk_size = args.get(6).and_then(|t| t.parse().ok());
    let mode: ScanMode = args.get(7).map(|m| m.parse().unwrap()).unwrap_or_default();
    let opts = LoadOptions {
        dialect: Dialect {
            delimiter,
            ..Dialect::default()
        },
        mode,
        chunk_size,
        threads: Some(threads),
        ..LoadOptions::default()
    };
    for _ in 0..runs {
        let catalog = Catalog::default();
        let def = TableDef::new("t", schema.clone(), Partitioning::Single).unwrap();
        let t = catalog.create_table(def, false).unwrap();
        let report = load_into(
            &t,
            &Source::File(path.into()),
            &opts,
            &LoadControl::default(),
        )
        .unwrap();
        println!("{report} chunks={}", report.chunks);
        drop(Arc::clone(&t));
    }
}
