//! Loads of many files (a list or a glob) are one load: the table gets exactly the rows of
//! the files concatenated (file order, then input order), each file with its own header and
//! BOM, plain or compressed, whatever the threads and chunk sizes; a bad value in any file
//! fails the load naming that file and its line, and the table stays as it was.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_load::{
    Dialect, LoadControl, LoadError, LoadOptions, ScanMode, Schedule, Source, expand_paths,
    load_files, load_into,
};
use wireload_storage::{Catalog, IndexDef, IndexKind, Partitioning, Table, TableDef};

/// `rows` records of `id INT, s TEXT, n INT` numbered from `first`, some with quoted
/// newlines.
fn records(rng: &mut StdRng, first: usize, rows: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in first..first + rows {
        out.extend_from_slice(i.to_string().as_bytes());
        out.push(b',');
        match rng.random_range(0..4) {
            0 => out.extend_from_slice(b"\"multi\nline, \"\"quoted\"\"\""),
            1 => {}
            _ => out.extend_from_slice(format!("w{}", rng.random_range(0..1000)).as_bytes()),
        }
        out.push(b',');
        out.extend_from_slice(rng.random_range(-50..50).to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

const HEADER: &[u8] = b"id,s,n\n";

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn table(keyed: bool) -> Arc<Table> {
    let mut def = TableDef::new(
        "t",
        wireload_types::sql::parse_columns("id INT, s TEXT, n INT").unwrap(),
        Partitioning::Single,
    )
    .unwrap();
    if keyed {
        def = def
            .with_indexes(vec![IndexDef {
                name: "t_pkey".into(),
                columns: vec![0],
                unique: true,
                primary: false,
                kind: IndexKind::Art,
            }])
            .unwrap();
    }
    Catalog::default().create_table(def, false).unwrap()
}

fn opts(threads: usize, chunk: usize) -> LoadOptions {
    LoadOptions {
        dialect: Dialect {
            header: true,
            ..Dialect::default()
        },
        mode: ScanMode::Safe,
        chunk_size: Some(chunk),
        threads: Some(threads),
        ..LoadOptions::default()
    }
}

fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

fn files(paths: &[PathBuf]) -> Vec<Source> {
    paths.iter().cloned().map(Source::File).collect()
}

/// Writes `parts` files of the rows of `all` (a header, then records), each with its own
/// header; every third gzip-compressed, the second with a BOM. Returns their paths.
fn split(dir: &Path, rng: &mut StdRng, parts: usize, rows: usize) -> (Vec<PathBuf>, Vec<u8>) {
    let mut all = HEADER.to_vec();
    let mut paths = Vec::new();
    let mut first = 0;
    for p in 0..parts {
        let n = rng.random_range(0..=rows);
        let recs = records(rng, first, n);
        first += n;
        all.extend_from_slice(&recs);
        let mut file = if p == 1 {
            b"\xEF\xBB\xBF".to_vec()
        } else {
            Vec::new()
        };
        file.extend_from_slice(HEADER);
        file.extend_from_slice(&recs);
        paths.push(if p % 3 == 2 {
            write(dir, &format!("part-{p:03}.csv.gz"), &gzip(&file))
        } else {
            write(dir, &format!("part-{p:03}.csv"), &file)
        });
    }
    (paths, all)
}

/// The rows of a load of `data` held whole.
fn whole_rows(data: &[u8], keyed: bool, o: &LoadOptions) -> common::Rows {
    let t = table(keyed);
    let src = Source::Bytes {
        name: "all.csv".into(),
        data: Arc::from(data.to_vec()),
    };
    load_into(&t, &src, o, &LoadControl::default()).unwrap();
    common::rows(&t)
}

#[test]
fn a_list_of_files_loads_the_rows_of_their_concatenation() {
    let mut rng = StdRng::seed_from_u64(11);
    for case in 0..12 {
        let dir = tempfile::tempdir().unwrap();
        let parts = [2, 3, 7, 20][case % 4];
        let (paths, all) = split(dir.path(), &mut rng, parts, 400);
        let keyed = case % 2 == 1;
        let threads = [1, 3][case / 2 % 2];
        let chunk = [7, 300, 1 << 20][case % 3];
        let mut o = opts(threads, chunk);
        if case >= 6 {
            o.schedule = Schedule::Interleaved;
        }
        let want = whole_rows(&all, keyed, &opts(1, 1 << 20));
        let t = table(keyed);
        let ctl = LoadControl::default();
        let report = load_files(&t, &files(&paths), &o, &ctl).unwrap();
        let what = format!("case {case}: {parts} files, {threads} threads, chunk {chunk}");
        assert_eq!(common::rows(&t), want, "{what}");
        assert_eq!(report.rows, want.len() as u64, "{what}");
        let sizes: u64 = paths
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert_eq!(ctl.bytes_total.load(Relaxed), sizes, "{what}");
        if chunk == 1 << 20 {
            // one chunk per file: the chunk tasks count each record once (with more chunks
            // they count the records across chunk ends twice)
            assert_eq!(ctl.bytes_done.load(Relaxed), sizes, "{what}");
        }
    }
}

#[test]
fn a_glob_loads_its_files_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(12);
    let (paths, all) = split(dir.path(), &mut rng, 12, 50);
    // not matched: another name, a hidden file, a directory
    write(dir.path(), "other.csv", b"id,s,n\n99999,x,1\n");
    write(dir.path(), ".part-hidden.csv", b"id,s,n\n99998,x,1\n");
    std::fs::create_dir(dir.path().join("part-dir.csv")).unwrap();
    let pattern = format!("{}/part-*.csv*", dir.path().display());
    let found = expand_paths(&pattern).unwrap();
    assert_eq!(found, paths);
    for threads in [1, 3] {
        let t = table(false);
        load_files(
            &t,
            &files(&found),
            &opts(threads, 64),
            &LoadControl::default(),
        )
        .unwrap();
        assert_eq!(common::rows(&t), whole_rows(&all, false, &opts(1, 64)));
    }
}

#[test]
fn expand_paths_sorts_and_names_a_pattern_without_matches() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["b.csv", "a10.csv", "a2.csv", "c.txt"] {
        write(dir.path(), name, b"x\n");
    }
    let d = dir.path().display();
    assert_eq!(
        expand_paths(&format!("{d}/*.csv")).unwrap(),
        ["a10.csv", "a2.csv", "b.csv"].map(|n| dir.path().join(n))
    );
    assert_eq!(
        expand_paths(&format!("{d}/a?.csv")).unwrap(),
        [dir.path().join("a2.csv")]
    );
    assert_eq!(
        expand_paths(&format!("{d}/[bc].*")).unwrap(),
        ["b.csv", "c.txt"].map(|n| dir.path().join(n))
    );
    let none = format!("{d}/*.parquet");
    assert_eq!(
        expand_paths(&none).unwrap_err().to_string(),
        format!("cannot read {none}: no file matches the pattern")
    );
    // no glob characters: the path itself, even when missing
    let missing = format!("{d}/missing.csv");
    assert_eq!(expand_paths(&missing).unwrap(), [PathBuf::from(&missing)]);
}

#[test]
fn a_bad_value_in_the_second_file_names_it_and_leaves_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(false);
    let o = opts(3, 16);
    common::load(&t, b"id,s,n\n1,kept,2\n", &o).unwrap();
    let before = common::rows(&t);
    let good = write(dir.path(), "a.csv", b"id,s,n\n1,a,1\n2,b,2\n");
    let third = write(dir.path(), "c.csv.gz", &gzip(b"id,s,n\n7,c,7\n"));
    let bad = b"id,s,n\n3,c,3\n4,\"two\nlines\",4\n5,d,five\n6,e,6\n";
    for (name, data) in [("b.csv", bad.to_vec()), ("b.csv.gz", gzip(bad))] {
        let second = write(dir.path(), name, &data);
        let sources = files(&[good.clone(), second.clone(), third.clone()]);
        let err = load_files(&t, &sources, &o, &LoadControl::default()).unwrap_err();
        let LoadError::Value { pos, text, .. } = &err else {
            panic!("not a value error: {err}")
        };
        assert_eq!(pos.file, second.display().to_string(), "{err}");
        assert_eq!(
            (pos.line, pos.column, text.as_str()),
            (5, 3, "five"),
            "{err}"
        );
        assert_eq!(common::rows(&t), before, "{name}");
    }
    // a broken file after the bad one does not hide it
    let second = write(dir.path(), "b.csv", bad);
    let truncated = write(dir.path(), "d.csv.gz", &gzip(b"id,s,n\n8,x,8\n")[..10]);
    let sources = files(&[good, second.clone(), truncated]);
    let err = load_files(&t, &sources, &o, &LoadControl::default()).unwrap_err();
    assert_eq!(
        err.position().map(|p| (p.file.clone(), p.line)),
        Some((second.display().to_string(), 5)),
        "{err}"
    );
    assert_eq!(common::rows(&t), before);
}

#[test]
fn a_key_error_in_one_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.csv", b"id,s,n\n1,a,1\n2,b,2\n");
    let b = write(dir.path(), "b.csv", b"id,s,n\n3,c,3\n,d,4\n");
    let t = table(true);
    let err = load_files(
        &t,
        &files(&[a, b.clone()]),
        &opts(2, 1 << 20),
        &LoadControl::default(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        format!(
            "null value in column \"id\" violates unique constraint \"t_pkey\" at {}: line 3, byte 13",
            b.display()
        )
    );
    assert!(common::rows(&t).is_empty());
}

#[test]
fn many_small_files_load_in_parallel_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(13);
    let (paths, all) = split(dir.path(), &mut rng, 300, 8);
    let t = table(false);
    let t0 = Instant::now();
    load_files(
        &t,
        &files(&paths),
        &opts(3, 1 << 20),
        &LoadControl::default(),
    )
    .unwrap();
    let took = t0.elapsed();
    assert_eq!(common::rows(&t), whole_rows(&all, false, &opts(1, 1 << 20)));
    eprintln!("300 small files (100 gzip) loaded in {took:?}");
    assert!(took.as_secs() < 20, "300 small files took {took:?}");
}

#[test]
fn an_empty_list_is_an_error_and_a_missing_file_is_named() {
    let t = table(false);
    let o = opts(1, 64);
    let err = load_files(&t, &[], &o, &LoadControl::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid load options: no input files to load"
    );
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.csv", b"id,s,n\n1,a,1\n");
    let missing = dir.path().join("missing.csv");
    let err = load_files(
        &t,
        &files(&[a, missing.clone()]),
        &o,
        &LoadControl::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!("cannot read {}: ", missing.display())),
        "{err}"
    );
    assert!(common::rows(&t).is_empty());
}

#[test]
fn a_cancelled_load_of_files_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(14);
    let (paths, _) = split(dir.path(), &mut rng, 6, 100);
    let t = table(false);
    let ctl = LoadControl::default();
    ctl.cancel.store(true, Relaxed);
    let err = load_files(&t, &files(&paths), &opts(2, 64), &ctl).unwrap_err();
    assert!(matches!(err, LoadError::Cancelled), "{err}");
    assert!(common::rows(&t).is_empty());
}
