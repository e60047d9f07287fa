//! The public CSV conformance suite (`shared/conformance`, beside the repository) through
//! the GPU engine: for every case the engine reads (all but the distinct-escape dialects,
//! which it refuses by name), the GPU load equals the CPU loader's, rows or error. The
//! SQL test suite checks the CPU loader against the cases' expectations.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::column;
use serde_json::Value;
use wireload_gpu::testing::{Emulator, Plan, load_into_on, load_into_reference};
use wireload_gpu::{GpuError, GpuOptions, PassMode};
use wireload_load::{Dialect, LoadControl, LoadOptions, Source, load_into};
use wireload_types::{ColumnDef, SqlType};

/// Where CI puts the suite: `shared/` is cloned beside the repository.
const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/conformance");

/// The case's dialect (the line terminator is detected by the loaders).
fn dialect_of(case: &Value) -> Dialect {
    let d = &case["dialect"];
    let byte = |key: &str| -> Option<u8> {
        d.get(key)
            .and_then(Value::as_str)
            .and_then(|s| s.as_bytes().first().copied())
    };
    let quote = byte("quote");
    Dialect {
        delimiter: byte("delimiter").unwrap_or(b','),
        quote,
        escape: match d.get("escape").and_then(Value::as_str) {
            Some(s) => s.as_bytes().first().copied(),
            None => quote,
        },
        header: d.get("header").and_then(Value::as_bool).unwrap_or(false),
        null: Vec::new(),
    }
}

/// A column list of the manifest (`a INTEGER, b VARCHAR`: names and the two types its
/// cases use).
fn columns_of(schema: &str) -> Vec<ColumnDef> {
    schema
        .split(',')
        .map(|def| {
            let (name, ty) = def
                .trim()
                .split_once(' ')
                .unwrap_or_else(|| panic!("a column name and type: {def:?}"));
            let ty = match ty.trim().to_ascii_uppercase().as_str() {
                "INTEGER" | "INT" => SqlType::Integer,
                "VARCHAR" => SqlType::Varchar(None),
                other => panic!("a type the manifest was not seen to use: {other}"),
            };
            column(name, ty)
        })
        .collect()
}

/// The case's columns: its schema, or VARCHAR columns named from the header.
fn schema_of(case: &Value, input: &Path, dialect: &Dialect) -> Vec<ColumnDef> {
    if let Some(s) = case.get("schema").and_then(Value::as_str) {
        return columns_of(s);
    }
    let names = wireload_load::header_names(&Source::File(input.to_path_buf()), dialect)
        .unwrap_or_default();
    let n = names.len().max(1);
    (1..=n)
        .map(|i| column(&format!("c{i}"), SqlType::Varchar(None)))
        .collect()
}

type Loaded = Result<Vec<Vec<Option<String>>>, String>;

fn cpu(schema: &[ColumnDef], src: &Source, d: &Dialect) -> Loaded {
    let t = common::table(schema);
    let opts = LoadOptions {
        dialect: d.clone(),
        ..LoadOptions::default()
    };
    load_into(&t, src, &opts, &LoadControl::default()).map_err(|e| e.to_string())?;
    Ok(common::rows(&t))
}

fn gpu(
    schema: &[ColumnDef],
    src: &Source,
    d: &Dialect,
    opts: &GpuOptions,
    emulated: bool,
) -> Loaded {
    let t = common::table(schema);
    let ctl = LoadControl::default();
    let r = if emulated {
        load_into_on(&Arc::new(Emulator::new(32)), &t, src, d, opts, &ctl)
    } else {
        load_into_reference(&t, src, d, opts, &ctl)
    };
    r.map_err(|e| e.to_string())?;
    Ok(common::rows(&t))
}

#[test]
fn gpu_loads_of_the_conformance_suite_equal_cpu_loads() {
    let dir = PathBuf::from(SUITE);
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("csv/manifest.json"))
            .expect("../shared/conformance beside the repository (as CI has it)"),
    )
    .unwrap();
    let (mut compared, mut refused) = (0, 0);
    for case in manifest["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let input = dir.join(case["input"].as_str().unwrap());
        let d = dialect_of(case);
        let schema = schema_of(case, &input, &d);
        if d.has_distinct_escape() {
            // backslash-style escapes: refused up front, naming the option
            let e = Plan::new(&schema, &d).unwrap_err();
            assert!(
                matches!(e, GpuError::Unsupported(_)) && e.to_string().contains("ESCAPE"),
                "{id}: {e}"
            );
            refused += 1;
            continue;
        }
        let src = Source::File(input.clone());
        let want = cpu(&schema, &src, &d);
        for (opts, emulated) in [
            (GpuOptions::default(), false),
            (
                GpuOptions {
                    partition: 7,
                    chunk: 128,
                    mode: PassMode::Quoted,
                    ..GpuOptions::default()
                },
                false,
            ),
            (
                GpuOptions {
                    partition: 64,
                    chunk: 128,
                    ..GpuOptions::default()
                },
                true,
            ),
        ] {
            assert_eq!(
                gpu(&schema, &src, &d, &opts, emulated),
                want,
                "{id} ({opts:?}, emulated {emulated})"
            );
        }
        compared += 1;
    }
    assert!(
        compared > 120 && refused >= 3,
        "{compared} compared, {refused} refused"
    );
}
