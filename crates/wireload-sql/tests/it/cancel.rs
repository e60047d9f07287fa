//! Cancelling statements: `statement_timeout` and the cancel flag (Ctrl-C, a client's cancel
//! request) stop queries, INSERTs and loads, and nothing of a cancelled statement remains.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::{db, query, run, srow};
use wireload_load::LoadControl;
use wireload_sql::{Database, SqlError, SqlState, StatementOutput};

/// A query that would run for many minutes, in small batches (DataFusion stops a query at
/// the next batch: an operator busy with one huge batch is not interrupted).
const ENDLESS: &str = "SELECT count(*) FROM generate_series(1, 100000000000) WHERE value % 7 = 8";

/// A database with table `t` of `rows` rows.
async fn with_rows(rows: u64) -> Database {
    let db = db(2);
    run(
        &db,
        &format!(
            "CREATE TABLE t (k BIGINT); INSERT INTO t SELECT value FROM generate_series(1, {rows})"
        ),
    )
    .await
    .unwrap();
    db
}

/// Runs `sql`, which must fail, timing it.
async fn fails_within(db: &Database, sql: &str, ctl: &LoadControl) -> (SqlError, Duration) {
    let started = Instant::now();
    match db.execute(sql, ctl).await {
        Ok(out) => panic!("{sql}: expected an error, got {out:?}"),
        Err(e) => (e, started.elapsed()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_cancels_queries() {
    let db = with_rows(100_000).await;
    run(&db, "SET statement_timeout = 100").await.unwrap();
    assert_eq!(
        query(&db, "SHOW statement_timeout").await,
        vec![srow(&["100ms"])]
    );
    let (e, took) = fails_within(&db, ENDLESS, &LoadControl::default()).await;
    assert!(matches!(e, SqlError::Timeout { .. }), "{e}");
    assert_eq!(e.sqlstate(), SqlState::QUERY_CANCELED);
    assert!(e.to_string().contains("statement timeout"), "{e}");
    assert!(took < Duration::from_secs(10), "stopped after {took:?}");
    // quick statements still run, and RESET lifts the limit
    assert_eq!(
        query(&db, "SELECT count(*) FROM t").await,
        vec![srow(&["100000"])]
    );
    run(&db, "RESET statement_timeout").await.unwrap();
    assert_eq!(
        query(&db, "SHOW statement_timeout").await,
        vec![srow(&["0"])]
    );
    run(&db, "SET statement_timeout TO '1min'").await.unwrap();
    assert_eq!(
        query(&db, "SHOW statement_timeout").await,
        vec![srow(&["60s"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_insert_or_load_changes_nothing() {
    let db = with_rows(100_000).await;
    run(&db, "CREATE TABLE u (k BIGINT PRIMARY KEY)")
        .await
        .unwrap();
    run(&db, "SET statement_timeout = '50ms'").await.unwrap();
    let (e, _) = fails_within(
        &db,
        "INSERT INTO u SELECT value FROM generate_series(1, 100000000000)",
        &LoadControl::default(),
    )
    .await;
    assert_eq!(e.sqlstate(), SqlState::QUERY_CANCELED, "{e}");
    assert_eq!(
        query(&db, "SELECT count(*) FROM u").await,
        vec![srow(&["0"])]
    );

    // a load of three million rows (23 MB) does not finish in 5 ms
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.csv");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for k in 0..3_000_000u64 {
        writeln!(file, "{k}").unwrap();
    }
    file.flush().unwrap();
    drop(file);
    let copy = format!("COPY u FROM '{}'", path.display());
    run(&db, "SET statement_timeout = 5").await.unwrap();
    let (e, _) = fails_within(&db, &copy, &LoadControl::default()).await;
    assert_eq!(e.sqlstate(), SqlState::QUERY_CANCELED, "{e}");
    assert_eq!(
        query(&db, "SELECT count(*) FROM u").await,
        vec![srow(&["0"])]
    );
    // without the limit the same load succeeds, and its keys were never half-merged
    run(&db, "SET statement_timeout = 0").await.unwrap();
    let out = run(&db, &copy).await.unwrap();
    assert!(matches!(&out[0], StatementOutput::Loaded(r) if r.rows == 3_000_000));
    assert_eq!(
        query(&db, "SELECT count(*) FROM u WHERE k = 2999999").await,
        vec![srow(&["1"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cancel_flag_stops_a_running_query() {
    let db = with_rows(100_000).await;
    let ctl = LoadControl::default();
    let cancel = Arc::clone(&ctl.cancel);
    let trigger = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.store(true, Ordering::SeqCst);
    });
    let (e, took) = fails_within(&db, ENDLESS, &ctl).await;
    trigger.await.unwrap();
    assert!(matches!(e, SqlError::Cancelled), "{e}");
    assert!(took < Duration::from_secs(10), "stopped after {took:?}");
}
