//! Online loading: a load runs beside the table's other writers and readers and holds the
//! writer lock only for its merge. The loads read pipes the tests feed, so the other
//! session's statements run while a load is certainly in progress.

use std::io::{PipeWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{db, fail, query, run, srow};
use wireload_load::{Dialect, LoadControl, LoadOptions, LoadReport, Schedule, Source};
use wireload_sql::{Database, SqlError, StatementOutput};

/// A named pipe in `dir`.
fn fifo(dir: &Path) -> PathBuf {
    let path = dir.join("rows.csv");
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
    path
}

/// `sql` in session `db`, failing the test when it takes longer than a few seconds (it would
/// wait for the load's end if the load held the writer lock all along).
async fn promptly(db: &Arc<Database>, sql: &str) -> Vec<StatementOutput> {
    let (db2, text) = (Arc::clone(db), sql.to_string());
    let task = tokio::spawn(async move { run(&db2, &text).await });
    match tokio::time::timeout(Duration::from_secs(20), task).await {
        Ok(done) => done
            .expect("statement task")
            .unwrap_or_else(|e| panic!("{sql}: {e}")),
        Err(_) => panic!("`{sql}` waited for the running load"),
    }
}

/// Rows `from..to` as CSV lines.
fn lines(from: u32, to: u32) -> String {
    (from..to).map(|i| format!("{i},r{i}\n")).collect()
}

/// Rows written before the other session acts: many blocks of the pipe, so the load has
/// begun appending by then.
const EARLY: u32 = 150_000;

/// Writes `text` into the pipe and gives the load a moment to take it in.
async fn feed(writer: &mut PipeWriter, text: &str) {
    writer.write_all(text.as_bytes()).unwrap();
    writer.flush().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// Waits for a load, failing the test when it does not end in a few seconds.
async fn finished(load: Load) -> Result<LoadReport, SqlError> {
    match tokio::time::timeout(Duration::from_secs(60), load).await {
        Ok(done) => done.expect("load task"),
        Err(_) => panic!("the load did not finish"),
    }
}

type Load = tokio::task::JoinHandle<Result<LoadReport, SqlError>>;

/// Starts loading into `t` in session `loader` from a pipe read in small blocks (so the load
/// begins after its first few kilobytes), merging on `schedule`; returns the load and the
/// pipe's writing end.
fn start_load(loader: &Arc<Database>, schedule: Schedule) -> (Load, PipeWriter) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    let source = Source::reader_in_blocks("pipe", reader, 64 << 10);
    let options = LoadOptions {
        dialect: Dialect {
            header: false,
            ..Dialect::default()
        },
        schedule,
        ..LoadOptions::default()
    };
    let l = Arc::clone(loader);
    let load =
        tokio::spawn(async move { l.load("t", source, options, &LoadControl::default()).await });
    (load, writer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_and_reads_go_on_while_a_load_runs_deferred() {
    writes_and_reads_go_on_while_a_load_runs(Schedule::Deferred).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_and_reads_go_on_while_a_load_runs_interleaved() {
    writes_and_reads_go_on_while_a_load_runs(Schedule::Interleaved).await;
}

async fn writes_and_reads_go_on_while_a_load_runs(schedule: Schedule) {
    let a = Arc::new(db(2));
    run(
        &a,
        "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); INSERT INTO t VALUES (0, 'zero')",
    )
    .await
    .unwrap();
    let b = Arc::new(a.new_session());

    let (load, mut writer) = start_load(&a, schedule);
    feed(&mut writer, &lines(1, EARLY)).await;
    // the load is reading: another session inserts, updates and reads the same table
    promptly(&b, "INSERT INTO t VALUES (1000000, 'from b')").await;
    promptly(&b, "UPDATE t SET v = 'ZERO' WHERE id = 0").await;
    assert_eq!(
        query(&b, "SELECT count(*), min(v) FROM t").await,
        vec![srow(&["2", "ZERO"])],
        "the unfinished load shows nothing"
    );
    writer.write_all(lines(EARLY, 200_000).as_bytes()).unwrap();
    drop(writer);
    let report = finished(load).await.unwrap();
    assert_eq!(report.rows, 199_999);
    assert!(
        report.merge_seconds > 0.0 && report.merge_seconds <= report.seconds,
        "{report:?}"
    );
    assert!(report.to_string().contains("merge"), "{report}");
    // interleaved, the rows that came before the pause were merged before the rest came
    match schedule {
        Schedule::Deferred => assert_eq!(report.merge_steps, 1, "{report:?}"),
        Schedule::Interleaved => assert!(report.merge_steps >= 2, "{report:?}"),
    }
    // both writes are there, the index knows every row of both
    assert_eq!(
        query(&b, "SELECT count(*), count(DISTINCT id) FROM t").await,
        vec![srow(&["200001", "200001"])]
    );
    for (id, v) in [(0, "ZERO"), (177_777, "r177777"), (1_000_000, "from b")] {
        assert_eq!(
            query(&a, &format!("SELECT v FROM t WHERE id = {id}")).await,
            vec![srow(&[v])]
        );
    }
    let e = fail(&a, "INSERT INTO t VALUES (199999, 'again')").await;
    assert!(e.contains("duplicate"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_another_session_added_during_the_load_fails_the_load_deferred() {
    a_key_another_session_added_during_the_load_fails_the_load(Schedule::Deferred).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_another_session_added_during_the_load_fails_the_load_interleaved() {
    a_key_another_session_added_during_the_load_fails_the_load(Schedule::Interleaved).await;
}

async fn a_key_another_session_added_during_the_load_fails_the_load(schedule: Schedule) {
    let a = Arc::new(db(2));
    run(&a, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        .await
        .unwrap();
    let b = Arc::new(a.new_session());

    let (load, mut writer) = start_load(&a, schedule);
    feed(&mut writer, &lines(1, EARLY)).await;
    // b takes a key the load is about to bring: b commits first, so the load fails
    promptly(&b, "INSERT INTO t VALUES (170000, 'b was first')").await;
    writer.write_all(lines(EARLY, 200_000).as_bytes()).unwrap();
    drop(writer);
    let e = finished(load).await.unwrap_err();
    assert!(
        e.to_string().contains("duplicate") && e.to_string().contains("170000"),
        "{e}"
    );
    // nothing of the load remains; b's row does
    assert_eq!(
        query(&a, "SELECT count(*), min(v) FROM t").await,
        vec![srow(&["1", "b was first"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_loads_into_one_table_both_land_deferred() {
    two_loads_into_one_table_both_land(Schedule::Deferred).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_loads_into_one_table_both_land_interleaved() {
    two_loads_into_one_table_both_land(Schedule::Interleaved).await;
}

async fn two_loads_into_one_table_both_land(schedule: Schedule) {
    let a = Arc::new(db(2));
    run(&a, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)")
        .await
        .unwrap();
    let b = Arc::new(a.new_session());

    let (load_a, mut wa) = start_load(&a, schedule);
    let (load_b, mut wb) = start_load(&b, schedule);
    feed(&mut wa, &lines(0, EARLY)).await;
    // (written from a thread of its own: a load that waited would stop reading)
    std::thread::spawn(move || wb.write_all(lines(EARLY, 2 * EARLY).as_bytes()).unwrap());
    // the second load finishes while the first still reads
    let Ok(done) = tokio::time::timeout(Duration::from_secs(20), load_b).await else {
        drop(wa);
        panic!("the second load waited for the first");
    };
    done.unwrap().unwrap();
    assert_eq!(
        query(&a, "SELECT count(*) FROM t").await,
        vec![srow(&[&EARLY.to_string()])]
    );
    drop(wa);
    finished(load_a).await.unwrap();
    let all = (2 * EARLY).to_string();
    assert_eq!(
        query(
            &a,
            "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM t"
        )
        .await,
        vec![srow(&[&all, &all, "0", &(2 * EARLY - 1).to_string()])]
    );
    assert_eq!(
        query(&a, "SELECT v FROM t WHERE id = 123").await,
        vec![srow(&["r123"])]
    );
    assert_eq!(
        query(&a, "SELECT v FROM t WHERE id = 154321").await,
        vec![srow(&["r154321"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_copy_waiting_for_its_input_keeps_no_load_thread() {
    // one load thread: a COPY blocked on a slow pipe must not hold it from other statements
    let dir = tempfile::tempdir().unwrap();
    let path = fifo(dir.path());
    let a = Arc::new(db(1));
    run(
        &a,
        "CREATE TABLE t (id INT, v TEXT); CREATE TABLE u (n INT)",
    )
    .await
    .unwrap();
    let b = Arc::new(a.new_session());
    let sql = format!(
        "COPY t FROM '{}' WITH (FORMAT csv)",
        path.display().to_string().replace('\'', "''")
    );
    let copy = {
        let a = Arc::clone(&a);
        tokio::spawn(async move { run(&a, &sql).await })
    };
    let p = path.clone();
    let mut writer = tokio::task::spawn_blocking(move || {
        std::fs::OpenOptions::new()
            .write(true)
            .open(p)
            .expect("open the pipe")
    })
    .await
    .unwrap();
    writer.write_all(lines(0, 1000).as_bytes()).unwrap();
    writer.flush().unwrap();
    promptly(
        &b,
        "INSERT INTO u SELECT value FROM generate_series(1, 100)",
    )
    .await;
    promptly(&b, "INSERT INTO t VALUES (-1, 'b')").await;
    assert_eq!(
        query(&b, "SELECT count(*) FROM u").await,
        vec![srow(&["100"])]
    );
    drop(writer);
    let out = match tokio::time::timeout(Duration::from_secs(60), copy).await {
        Ok(done) => done.unwrap().unwrap(),
        Err(_) => panic!("the COPY did not finish"),
    };
    assert!(
        matches!(out.last(), Some(StatementOutput::Loaded(r)) if r.rows == 1000),
        "{out:?}"
    );
    assert_eq!(
        query(&a, "SELECT count(*) FROM t").await,
        vec![srow(&["1001"])]
    );
}
