//! DELETE and key-changing UPDATE mark rows in per-chunk deletion vectors: published
//! chunks stay as they are, scans and unloads skip the deleted rows, and every index loses
//! exactly their entries (no rebuild), so a freed key can be taken again.

use std::collections::HashSet;

use crate::common::{lit, query, run, srow};
use wireload_sql::{Database, StatementOutput};

/// Runs `sql` and returns its tag (`DELETE 3`).
async fn change(db: &Database, sql: &str) -> String {
    let out = run(db, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    match out.last() {
        Some(StatementOutput::Changed(c)) => c.tag(),
        other => panic!("{sql}: expected a row change, got {other:?}"),
    }
}

/// Every index of `table` holds exactly one entry per live row, under that row's key.
fn assert_indexes_exact(db: &Database, table: &str) {
    let t = db.catalog().table(table).expect("the table exists");
    let v = t.snapshot();
    assert!(!v.indexes.is_empty(), "{table} has indexes to check");
    for ix in &v.indexes {
        let name = &ix.def.name;
        let mut entries = Vec::new();
        ix.index.entries(&mut entries);
        assert_eq!(
            entries.len(),
            v.num_rows(),
            "{name}: one entry per live row"
        );
        assert_eq!(ix.index.len(), v.num_rows(), "{name}: len");
        let encoder = ix.def.encoder(&t.def().schema).unwrap();
        let mut seen = HashSet::new();
        for e in entries {
            let at = ix.index.row_id(e);
            assert!(seen.insert(at), "{name}: two entries for row {at:?}");
            let part = &v.partitions[at.partition as usize];
            assert!(
                part.deletions(at.chunk as usize)
                    .is_none_or(|d| !d.is_deleted(at.row as usize)),
                "{name}: an entry of deleted row {at:?}"
            );
            let chunk = &part.chunks[at.chunk as usize];
            let columns: Vec<_> = ix
                .def
                .columns
                .iter()
                .map(|&c| chunk.column(c).slice(at.row as usize, 1))
                .collect();
            let key = encoder.encode(&columns).unwrap();
            assert_eq!(key.get(0), ix.index.key(e), "{name}: the key of row {at:?}");
        }
    }
}

/// A table of ids 1..=`n` in two chunks, with a secondary ART index on `v` and a unique
/// hash index on `s`.
async fn table(n: i64) -> Database {
    let db = crate::common::db(2);
    run(
        &db,
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT, s VARCHAR, UNIQUE (s) USING HASH); \
         CREATE INDEX t_v ON t (v)",
    )
    .await
    .unwrap();
    let half = n / 2;
    for (lo, hi) in [(1, half), (half + 1, n)] {
        change(
            &db,
            &format!(
                "INSERT INTO t SELECT value, value % 7, 's' || value FROM generate_series({lo}, {hi})"
            ),
        )
        .await;
    }
    db
}

/// `count(*)` and `sum(id)` of `t`.
async fn count_sum(db: &Database) -> (String, String) {
    let r = query(db, "SELECT count(*), CAST(sum(id) AS BIGINT) FROM t").await;
    (r[0][0].clone().unwrap(), r[0][1].clone().unwrap())
}

#[tokio::test]
async fn delete_marks_rows_and_keeps_the_chunks() {
    let db = table(1000).await;
    let t = db.catalog().table("t").unwrap();
    let chunks = t.snapshot().chunk_counts();
    assert_eq!(
        change(&db, "DELETE FROM t WHERE id % 3 = 0").await,
        "DELETE 333"
    );
    let v = t.snapshot();
    assert_eq!(v.chunk_counts(), chunks, "no chunk replaced, none added");
    assert_eq!(v.deleted_rows(), 333);
    assert_eq!(v.num_rows(), 667);
    let sum: i64 = (1..=1000).filter(|i| i % 3 != 0).sum();
    assert_eq!(count_sum(&db).await, ("667".into(), sum.to_string()));
    assert_indexes_exact(&db, "t");
    // lookups through each index skip the deleted rows
    assert!(
        query(&db, "SELECT * FROM t WHERE id = 300")
            .await
            .is_empty()
    );
    assert!(
        query(&db, "SELECT * FROM t WHERE s = 's300'")
            .await
            .is_empty()
    );
    assert_eq!(
        query(&db, "SELECT count(*) FROM t WHERE v = 3").await,
        vec![srow(&[&(1..=1000)
            .filter(|i| i % 3 != 0 && i % 7 == 3)
            .count()
            .to_string()])]
    );
    // deleting again touches only live rows
    assert_eq!(
        change(&db, "DELETE FROM t WHERE id % 3 = 0").await,
        "DELETE 0"
    );
    assert_eq!(
        change(&db, "DELETE FROM t WHERE id <= 10").await,
        "DELETE 7"
    );
    assert_eq!(t.snapshot().deleted_rows(), 340);
    assert_indexes_exact(&db, "t");
    // the freed keys (primary and unique) can be taken again
    change(&db, "INSERT INTO t VALUES (300, 1, 's300'), (3, 2, 's3')").await;
    assert_eq!(
        query(&db, "SELECT v, s FROM t WHERE id = 300").await,
        vec![srow(&["1", "s300"])]
    );
    assert_indexes_exact(&db, "t");
    assert_eq!(count_sum(&db).await.0, "662");
}

#[tokio::test]
async fn key_changing_update_deletes_and_appends() {
    let db = table(500).await;
    let t = db.catalog().table("t").unwrap();
    let chunks: usize = t.snapshot().chunk_counts().iter().sum();
    // every key moves onto the next one's old value: only a statement-wide check allows it
    assert_eq!(change(&db, "UPDATE t SET id = id + 1").await, "UPDATE 500");
    let v = t.snapshot();
    assert_eq!(v.deleted_rows(), 500, "the old versions are marked");
    assert!(
        v.chunk_counts().iter().sum::<usize>() > chunks,
        "new rows in new chunks"
    );
    let sum: i64 = (2..=501).sum();
    assert_eq!(count_sum(&db).await, ("500".into(), sum.to_string()));
    assert_indexes_exact(&db, "t");
    assert!(query(&db, "SELECT * FROM t WHERE id = 1").await.is_empty());
    assert_eq!(
        query(&db, "SELECT s FROM t WHERE id = 501").await,
        vec![srow(&["s500"])]
    );
    // a unique column changed onto a live value fails and changes nothing
    let before = t.snapshot();
    let msg = crate::common::fail(&db, "UPDATE t SET s = 's7' WHERE id = 2").await;
    assert!(msg.contains("duplicate") || msg.contains("unique"), "{msg}");
    assert_eq!(t.snapshot().number, before.number);
    assert_indexes_exact(&db, "t");
    // moving a unique value onto a deleted row's value is fine
    change(&db, "DELETE FROM t WHERE id = 8").await;
    change(&db, "UPDATE t SET s = 's7' WHERE id = 2").await;
    assert_indexes_exact(&db, "t");
}

#[tokio::test]
async fn update_in_place_keeps_the_deletions() {
    let db = crate::common::db(2);
    run(
        &db,
        "CREATE TABLE u (id BIGINT PRIMARY KEY, w BIGINT); \
         INSERT INTO u SELECT value, value AS w FROM generate_series(1, 100)",
    )
    .await
    .unwrap();
    let u = db.catalog().table("u").unwrap();
    change(&db, "DELETE FROM u WHERE id > 90").await;
    let chunks = u.snapshot().chunk_counts();
    // no indexed column changes: the rows stay where they are
    assert_eq!(change(&db, "UPDATE u SET w = -id").await, "UPDATE 90");
    assert_eq!(
        query(&db, "SELECT count(*), CAST(min(w) AS BIGINT) FROM u").await,
        vec![srow(&["90", "-90"])]
    );
    assert_eq!(u.snapshot().chunk_counts(), chunks);
    assert_eq!(u.snapshot().deleted_rows(), 10);
    assert_indexes_exact(&db, "u");
    // an indexed column that is not the key: the rows move (deleted and appended)
    let db = table(100).await;
    change(&db, "DELETE FROM t WHERE id > 90").await;
    assert_eq!(change(&db, "UPDATE t SET v = -id").await, "UPDATE 90");
    assert_eq!(
        db.catalog().table("t").unwrap().snapshot().deleted_rows(),
        100
    );
    assert_eq!(
        query(&db, "SELECT id FROM t WHERE v = -42").await,
        vec![srow(&["42"])]
    );
    assert_indexes_exact(&db, "t");
}

#[tokio::test]
async fn deleted_rows_are_not_evaluated_again() {
    let db = crate::common::db(2);
    run(
        &db,
        "CREATE TABLE z (id INT PRIMARY KEY, x INT); \
         INSERT INTO z VALUES (1, 0), (2, 5), (3, 1)",
    )
    .await
    .unwrap();
    change(&db, "DELETE FROM z WHERE x = 0").await;
    // 10 / x would divide by zero on the deleted row
    assert_eq!(
        change(&db, "DELETE FROM z WHERE 10 / x > 5").await,
        "DELETE 1"
    );
    assert_eq!(change(&db, "UPDATE z SET x = 10 / x").await, "UPDATE 1");
    assert_eq!(
        query(&db, "SELECT id, x FROM z").await,
        vec![srow(&["2", "2"])]
    );
    assert_indexes_exact(&db, "z");
}

#[tokio::test]
async fn create_index_and_loads_over_deleted_rows() {
    let db = table(200).await;
    run(
        &db,
        "CREATE TABLE d (id INT PRIMARY KEY, tag TEXT); \
              INSERT INTO d VALUES (1, 'a'), (2, 'a'), (3, 'b')",
    )
    .await
    .unwrap();
    // the deleted row's tag equals a live one: a unique index over live rows is fine
    change(&db, "DELETE FROM d WHERE id = 2").await;
    run(&db, "CREATE UNIQUE INDEX d_tag ON d (tag)")
        .await
        .unwrap();
    assert_indexes_exact(&db, "d");
    assert_eq!(
        query(&db, "SELECT id FROM d WHERE tag = 'a'").await,
        vec![srow(&["1"])]
    );
    // a load into a table with deletions merges into the indexes as they are
    change(&db, "DELETE FROM t WHERE id BETWEEN 50 AND 149").await;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("more.csv");
    let text: String = (50..150)
        .chain(201..301)
        .map(|i| format!("{i},{},x{i}\n", i % 7))
        .collect();
    std::fs::write(&csv, text).unwrap();
    run(
        &db,
        &format!(
            "COPY t FROM {} WITH (FORMAT csv)",
            lit(csv.to_str().unwrap())
        ),
    )
    .await
    .unwrap();
    assert_eq!(count_sum(&db).await.0, "300");
    assert_indexes_exact(&db, "t");
    // a load of a key that is live fails and changes nothing
    std::fs::write(&csv, "1,1,fresh\n").unwrap();
    let copy = format!(
        "COPY t FROM {} WITH (FORMAT csv)",
        lit(csv.to_str().unwrap())
    );
    let msg = crate::common::fail(&db, &copy).await;
    assert!(msg.contains("duplicate"), "{msg}");
    assert_eq!(count_sum(&db).await.0, "300");
}

#[tokio::test]
async fn unloads_and_transactions_see_live_rows() {
    let db = table(100).await;
    change(&db, "DELETE FROM t WHERE id % 2 = 0").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.csv");
    run(&db, &format!("COPY t TO {}", lit(out.to_str().unwrap())))
        .await
        .unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 50, "{text}");
    assert!(text.lines().all(|l| {
        let id: i64 = l.split(',').next().unwrap().parse().unwrap();
        id % 2 == 1
    }));
    // EXPORT writes the live rows; IMPORT gets them (and the indexes) back
    let export = dir.path().join("export");
    run(
        &db,
        &format!("EXPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await
    .unwrap();
    let copy = crate::common::db(2);
    run(
        &copy,
        &format!("IMPORT DATABASE {}", lit(export.to_str().unwrap())),
    )
    .await
    .unwrap();
    assert_eq!(count_sum(&copy).await, count_sum(&db).await);
    assert_indexes_exact(&copy, "t");
    // a transaction's delete stays its own until COMMIT, and ROLLBACK drops it
    run(&db, "BEGIN; DELETE FROM t WHERE id < 50")
        .await
        .unwrap();
    assert_eq!(count_sum(&db).await.0, "25");
    run(&db, "ROLLBACK").await.unwrap();
    assert_eq!(count_sum(&db).await.0, "50");
    assert_indexes_exact(&db, "t");
}

/// Waits until `table` holds no deleted rows and no compaction is under way.
async fn wait_compacted(db: &Database, table: &str) {
    let t = db.catalog().table(table).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while t.snapshot().deleted_rows() > 0 || t.is_compacting() {
        assert!(
            std::time::Instant::now() < deadline,
            "no compaction of {table} within a minute"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn heavy_deletes_are_compacted_in_the_background() {
    let db = table(8000).await;
    let t = db.catalog().table("t").unwrap();
    assert_eq!(
        change(&db, "DELETE FROM t WHERE id % 4 <> 0").await,
        "DELETE 6000"
    );
    wait_compacted(&db, "t").await;
    let v = t.snapshot();
    let held: usize = v
        .partitions
        .iter()
        .flat_map(|p| &p.chunks)
        .map(|c| c.num_rows())
        .sum();
    assert_eq!(held, 2000, "the chunks hold live rows only");
    let ids: Vec<String> = query(&db, "SELECT id FROM t")
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap())
        .collect();
    let want: Vec<String> = (1..=2000).map(|i| (4 * i).to_string()).collect();
    assert_eq!(ids, want, "the rows keep their order");
    assert_indexes_exact(&db, "t");
    assert!(query(&db, "SELECT * FROM t WHERE id = 5").await.is_empty());
    assert_eq!(
        query(&db, "SELECT s FROM t WHERE id = 8").await,
        vec![srow(&["s8"])]
    );
    // the freed keys are free
    change(&db, "INSERT INTO t VALUES (5, 5, 's5')").await;
    assert_indexes_exact(&db, "t");
}

#[tokio::test]
async fn a_compaction_is_no_write_for_transactions() {
    let db = table(4000).await;
    db.set_auto_compaction(false);
    let t = db.catalog().table("t").unwrap();
    change(&db, "DELETE FROM t WHERE id > 1000").await;
    assert!(wireload_publish::worth_compacting(&t.snapshot()));
    let before = t.snapshot();
    // a transaction begun before the compaction writes the table ...
    let other = db.new_session();
    run(
        &other,
        "BEGIN; UPDATE t SET v = 99 WHERE id = 4; DELETE FROM t WHERE id = 5",
    )
    .await
    .unwrap();
    assert!(wireload_publish::compact(&t).unwrap());
    let after = t.snapshot();
    assert_eq!(after.deleted_rows(), 0);
    assert_eq!(after.content, before.content, "no write");
    assert!(after.number > before.number);
    assert!(
        !wireload_publish::compact(&t).unwrap(),
        "nothing left to drop"
    );
    // ... and commits over it
    run(&other, "COMMIT").await.unwrap();
    assert_eq!(
        query(&db, "SELECT v FROM t WHERE id = 4").await,
        vec![srow(&["99"])]
    );
    assert_eq!(count_sum(&db).await.0, "999");
    assert_indexes_exact(&db, "t");
    // a write of the same row in between is a conflict
    run(&other, "BEGIN; UPDATE t SET v = 1 WHERE id = 6")
        .await
        .unwrap();
    change(&db, "UPDATE t SET v = 2 WHERE id = 6").await;
    let e = run(&other, "COMMIT").await.unwrap_err();
    assert_eq!(e.sqlstate().0, "40001", "{e}");
}

/// Runs `sql` in `session` until it does not fail with a serialization failure.
async fn until_committed(session: &Database, sql: &str) {
    loop {
        match run(session, sql).await {
            Ok(_) => return,
            Err(e) if e.sqlstate().0 == "40001" => {
                assert!(
                    !session.in_transaction(),
                    "{sql}: the failed COMMIT ended it"
                );
            }
            Err(e) => panic!("{sql}: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_moves_keep_the_total_through_replays_and_compactions() {
    // bal is indexed: every UPDATE of it deletes the row and appends its new version, so
    // the COMMITs replay deletions and appends on versions other sessions changed, and
    // the deleted rows pile up until background compactions run among the transactions
    const ACCOUNTS: u64 = 2000;
    let main = std::sync::Arc::new(crate::common::db(2));
    run(
        &main,
        &format!(
            "CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL); \
             CREATE INDEX acct_bal ON acct (bal); \
             INSERT INTO acct SELECT value, 100 FROM generate_series(1, {ACCOUNTS})"
        ),
    )
    .await
    .unwrap();
    // the moves share 20 hot accounts: many commits find their rows written meanwhile
    let pair = |worker: u64, i: u64| {
        let from = (worker * 7 + i) % 20 + 1;
        (from, from % 20 + 1)
    };
    let mut tasks = Vec::new();
    for worker in 0..4u64 {
        let session = main.new_session();
        tasks.push(tokio::spawn(async move {
            for i in 0..150u64 {
                let (from, to) = pair(worker, i);
                until_committed(
                    &session,
                    &format!(
                        "BEGIN; UPDATE acct SET bal = bal - 5 WHERE id = {from}; \
                         UPDATE acct SET bal = bal + 5 WHERE id = {to}; COMMIT"
                    ),
                )
                .await;
            }
        }));
    }
    // beside them, upserts that rewrite rows without changing them (each moves its row)
    let session = main.new_session();
    tasks.push(tokio::spawn(async move {
        for i in 0..150u64 {
            let id = (i * 7) % 40 + 1;
            until_committed(
                &session,
                &format!(
                    "INSERT INTO acct VALUES ({id}, 0) \
                     ON CONFLICT (id) DO UPDATE SET bal = acct.bal"
                ),
            )
            .await;
        }
    }));
    for t in tasks {
        t.await.unwrap();
    }
    let acct = main.catalog().table("acct").unwrap();
    while acct.is_compacting() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // 1,350 rows were deleted in all; compactions (when they won their race) dropped some
    eprintln!("deleted rows left: {}", acct.snapshot().deleted_rows());
    let mut want = vec![100i64; ACCOUNTS as usize + 1];
    for worker in 0..4u64 {
        for i in 0..150u64 {
            let (from, to) = pair(worker, i);
            want[from as usize] -= 5;
            want[to as usize] += 5;
        }
    }
    let want: Vec<_> = (1..=ACCOUNTS as usize)
        .map(|id| srow(&[&id.to_string(), &want[id].to_string()]))
        .collect();
    assert_eq!(
        query(&main, "SELECT id, bal FROM acct ORDER BY id").await,
        want,
        "every committed move counts once"
    );
    assert_indexes_exact(&main, "acct");
}
