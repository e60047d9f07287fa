//! Rows come back in insertion order: a query without ORDER BY over one table returns the
//! file's rows in file order (chunk order across loads), with parallel scans, whatever the
//! chunk size and the thread count, every time, also while other threads keep the CPUs busy;
//! LIMIT gives the first rows; COPY TO, EXPORT/IMPORT keep the order.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::{Row, db, lit, query, run};
use wireload_sql::Database;

/// Rows `i, s, q` of a file: `s` a word, `q` a quoted field that sometimes holds the
/// delimiter or a newline (so chunk boundaries fall inside quotes too).
fn rows(n: usize) -> Vec<[String; 3]> {
    (0..n)
        .map(|i| {
            let q = match i % 7 {
                0 => "a,b".to_string(),
                1 => "line\nbreak".to_string(),
                2 => String::new(),
                _ => format!("q{}", i * 31 % 1000),
            };
            [i.to_string(), format!("w{}", (i * 7919) % 100_003), q]
        })
        .collect()
}

fn csv(rows: &[[String; 3]]) -> String {
    let mut out = String::new();
    for [i, s, q] in rows {
        out.push_str(&format!("{i},{s},\"{q}\"\n"));
    }
    out
}

fn expected(rows: &[[String; 3]]) -> Vec<Row> {
    rows.iter()
        .map(|r| r.iter().map(|v| Some(v.clone())).collect())
        .collect()
}

/// Asserts that the file at `path` holds `want`, naming the first differing line.
fn same_file(path: &Path, want: &str, what: &str) {
    let got = std::fs::read_to_string(path).unwrap();
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{what}: {} wrote {} lines, {} expected; first difference at line {}",
            path.display(),
            got.lines().count(),
            want.lines().count(),
            line + 1
        );
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    lit(path.to_str().unwrap())
}

async fn create(db: &Database, table: &str) {
    run(db, &format!("CREATE TABLE {table} (i INT, s TEXT, q TEXT)"))
        .await
        .unwrap();
}

/// Every query of the check, with the rows it must return (in order).
fn queries(table: &str, want: &[Row]) -> Vec<(String, Vec<Row>)> {
    let n = want.len();
    let every_third: Vec<Row> = want
        .iter()
        .filter(|r| r[0].as_deref().unwrap().parse::<usize>().unwrap() % 3 == 0)
        .map(|r| vec![r[0].clone(), r[2].clone()])
        .collect();
    let twice: Vec<Row> = want
        .iter()
        .chain(want)
        .map(|r| vec![r[0].clone()])
        .collect();
    vec![
        (format!("SELECT * FROM {table}"), want.to_vec()),
        (
            format!("SELECT i, q FROM {table} WHERE i % 3 = 0"),
            every_third,
        ),
        (
            format!("SELECT * FROM {table} LIMIT 1000"),
            want[..n.min(1000)].to_vec(),
        ),
        (
            format!("SELECT * FROM {table} LIMIT 25 OFFSET {}", n / 2),
            want[n / 2..(n / 2 + 25).min(n)].to_vec(),
        ),
        (
            format!("SELECT i FROM {table} UNION ALL SELECT i FROM {table}"),
            twice,
        ),
    ]
}

/// Runs every query `times` times and compares the rows, in order.
async fn check(db: &Database, table: &str, want: &[Row], times: usize, what: &str) {
    for (sql, rows) in queries(table, want) {
        for round in 0..times {
            let got = query(db, &sql).await;
            if got != rows {
                let first = got.iter().zip(&rows).position(|(a, b)| a != b);
                panic!(
                    "{what}: {sql} (round {round}): {} rows, {} expected; first difference at row {first:?}",
                    got.len(),
                    rows.len()
                );
            }
        }
    }
}

/// Keeps one core busy until dropped.
struct Busy {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut x = 1u64;
            while !s.load(Ordering::Relaxed) {
                for _ in 0..10_000 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                std::hint::black_box(x);
            }
        });
        Busy {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_50000_row_file_comes_back_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let data = rows(50_000);
    let file = write(dir.path(), "big.csv", &csv(&data));
    let want = expected(&data);
    for threads in 1..=4 {
        let db = db(threads);
        for (table, chunk) in [("t_4k", "4096"), ("t_64k", "65536"), ("t_default", "")] {
            create(&db, table).await;
            let with = if chunk.is_empty() {
                String::new()
            } else {
                format!(" WITH (CHUNK_SIZE {chunk})")
            };
            run(&db, &format!("COPY {table} FROM {file}{with}"))
                .await
                .unwrap();
            check(&db, table, &want, 5, &format!("{threads} threads, {table}")).await;
        }
        let _busy = Busy::start();
        check(&db, "t_4k", &want, 5, &format!("{threads} threads, busy")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_chunks_and_several_loads_keep_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let data = rows(3_000);
    let (first, second) = data.split_at(1_234);
    let f1 = write(dir.path(), "a.csv", &csv(first));
    let f2 = write(dir.path(), "b.csv", &csv(second));
    let want = expected(&data);
    for threads in [1, 2, 3, 4] {
        let db = db(threads);
        for chunk in [3, 7, 64, 1000] {
            let table = format!("t_{chunk}");
            create(&db, &table).await;
            // two loads: the second's rows follow the first's
            for f in [&f1, &f2] {
                run(
                    &db,
                    &format!("COPY {table} FROM {f} WITH (CHUNK_SIZE {chunk})"),
                )
                .await
                .unwrap();
            }
            check(
                &db,
                &table,
                &want,
                10,
                &format!("{threads} threads, chunk {chunk}"),
            )
            .await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_to_and_export_keep_the_order() {
    let dir = tempfile::tempdir().unwrap();
    // no quotes: the CSV written back is the input, byte for byte
    let text: String = (0..20_000)
        .map(|i| format!("{i},w{}\n", i * 7 % 1013))
        .collect();
    let file = write(dir.path(), "in.csv", &text);
    let db = db(3);
    run(
        &db,
        &format!("CREATE TABLE t (i INT, s TEXT); COPY t FROM {file} WITH (CHUNK_SIZE 4096)"),
    )
    .await
    .unwrap();
    for round in 0..5 {
        let out = dir.path().join(format!("out{round}.csv"));
        run(&db, &format!("COPY t TO {}", lit(out.to_str().unwrap())))
            .await
            .unwrap();
        same_file(&out, &text, "COPY t TO");
        let out = dir.path().join(format!("q{round}.csv"));
        run(
            &db,
            &format!("COPY (SELECT * FROM t) TO {}", lit(out.to_str().unwrap())),
        )
        .await
        .unwrap();
        same_file(&out, &text, "COPY (query) TO");
    }
    let export = dir.path().join("export");
    let export = lit(export.to_str().unwrap());
    run(&db, &format!("EXPORT DATABASE {export}"))
        .await
        .unwrap();
    let db2 = crate::common::db(2);
    run(&db2, &format!("IMPORT DATABASE {export}"))
        .await
        .unwrap();
    let want: Vec<Row> = text
        .lines()
        .map(|l| l.split(',').map(|v| Some(v.to_string())).collect())
        .collect();
    for _ in 0..5 {
        assert!(query(&db2, "SELECT * FROM t").await == want, "after IMPORT");
    }
    let out = dir.path().join("reloaded.csv");
    run(&db2, &format!("COPY t TO {}", lit(out.to_str().unwrap())))
        .await
        .unwrap();
    same_file(&out, &text, "COPY t TO after IMPORT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_returns_the_first_rows_and_stops_early() {
    let dir = tempfile::tempdir().unwrap();
    let data = rows(40_000);
    let file = write(dir.path(), "f.csv", &csv(&data));
    let db = db(4);
    create(&db, "t").await;
    run(&db, &format!("COPY t FROM {file} WITH (CHUNK_SIZE 8192)"))
        .await
        .unwrap();
    let want = expected(&data);
    for n in [1, 5, 100, 8193] {
        assert!(
            query(&db, &format!("SELECT * FROM t LIMIT {n}")).await == want[..n],
            "LIMIT {n}"
        );
    }
    let plan = query(&db, "EXPLAIN SELECT * FROM t LIMIT 10").await;
    let text: String = plan.iter().flatten().flatten().cloned().collect();
    assert!(
        text.contains("OrderedCoalesceExec: fetch=10") || text.contains("limit=10"),
        "{text}"
    );
}

/// Keeping the order costs aggregations and joins nothing: their plans stay parallel and
/// hold no ordered merge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregations_and_joins_keep_their_parallelism() {
    let dir = tempfile::tempdir().unwrap();
    let data = rows(20_000);
    let file = write(dir.path(), "f.csv", &csv(&data));
    let db = db(4);
    create(&db, "t").await;
    run(&db, &format!("COPY t FROM {file} WITH (CHUNK_SIZE 8192)"))
        .await
        .unwrap();
    for sql in [
        "SELECT s, count(*) FROM t GROUP BY s",
        "SELECT a.i, b.q FROM t a JOIN t b ON a.i = b.i WHERE a.i % 7 = 0",
    ] {
        let plan = query(&db, &format!("EXPLAIN {sql}")).await;
        let text: String = plan
            .iter()
            .flatten()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!text.contains("OrderedCoalesceExec"), "{sql}:\n{text}");
        assert!(
            text.contains("partitions=4"),
            "a parallel scan: {sql}:\n{text}"
        );
    }
}
