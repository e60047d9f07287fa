//! Sniffs a CSV file and prints the SQL to create and load it, and how long sniffing took.
//!
//! `cargo run -p wireload-sniff --example sniff -- FILE [SAMPLE_BYTES]`

use std::time::Instant;

use wireload_sniff::{SniffOptions, sniff};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: sniff FILE [SAMPLE_BYTES]");
        std::process::exit(2);
    };
    let opts = SniffOptions {
        sample_bytes: args
            .next()
            .map(|s| s.parse().expect("SAMPLE_BYTES: a byte count")),
        ..SniffOptions::default()
    };
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let start = Instant::now();
    match sniff(&data, &opts) {
        Ok(s) => {
            let took = start.elapsed();
            println!("{};", s.create_table_sql("t"));
            println!("{};", s.copy_sql("t", &path));
            println!(
                "-- {} bytes, {} rows sampled, line ending {:?}, BOM {}, sniffed in {:.1} ms",
                data.len(),
                s.rows_sampled,
                s.line_ending,
                s.bom,
                took.as_secs_f64() * 1e3
            );
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    }
}
