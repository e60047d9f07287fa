//! BEGIN / COMMIT / ROLLBACK: snapshot isolation between sessions, reading one's own writes,
//! all-or-nothing commits over several tables, first committer wins, failed transactions.

mod common;

use std::sync::Arc;

use common::{db, fail, query, run, srow};
use wireload_load::LoadControl;
use wireload_sql::{Database, SqlError, SqlState, StatementOutput};

async fn tag(db: &Database, sql: &str) -> String {
    match run(db, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .pop()
    {
        Some(StatementOutput::Done(t)) => t,
        Some(StatementOutput::Changed(c)) => c.tag(),
        other => panic!("{sql}: {other:?}"),
    }
}

async fn count(db: &Database, table: &str) -> String {
    query(db, &format!("SELECT count(*) FROM {table}")).await[0][0]
        .clone()
        .unwrap()
}

async fn two_sessions() -> (Database, Database) {
    let a = db(2);
    run(
        &a,
        "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); CREATE TABLE u (n INT); \
         INSERT INTO t VALUES (1, 'one'), (2, 'two')",
    )
    .await
    .unwrap();
    let b = a.new_session();
    (a, b)
}

#[tokio::test]
async fn a_transaction_sees_its_snapshot_and_its_own_writes() {
    let (a, b) = two_sessions().await;
    assert_eq!(tag(&a, "BEGIN").await, "BEGIN");
    assert!(a.in_transaction() && !b.in_transaction());
    run(&a, "INSERT INTO t VALUES (3, 'three'); UPDATE t SET v = 'uno' WHERE id = 1; INSERT INTO u VALUES (7)")
        .await
        .unwrap();
    // a sees its writes, through scans and the index
    assert_eq!(count(&a, "t").await, "3");
    assert_eq!(
        query(&a, "SELECT v FROM t WHERE id = 1").await,
        vec![srow(&["uno"])]
    );
    // b sees none of them, and b's own write is invisible to a
    assert_eq!(count(&b, "t").await, "2");
    assert_eq!(
        query(&b, "SELECT v FROM t WHERE id = 1").await,
        vec![srow(&["one"])]
    );
    run(&b, "INSERT INTO u VALUES (100)").await.unwrap();
    assert_eq!(query(&a, "SELECT n FROM u").await, vec![srow(&["7"])]);
    // b changes the row a updated: a's commit fails as a whole, u included
    run(&b, "UPDATE t SET v = 'eins' WHERE id = 1")
        .await
        .unwrap();
    let e = match run(&a, "COMMIT").await {
        Err(e) => e,
        Ok(out) => panic!("{out:?}"),
    };
    assert_eq!(e.sqlstate(), SqlState::SERIALIZATION_FAILURE, "{e}");
    assert!(!a.in_transaction());
    assert_eq!(count(&a, "t").await, "2");
    assert_eq!(query(&a, "SELECT n FROM u").await, vec![srow(&["100"])]);
    assert_eq!(
        query(&a, "SELECT v FROM t WHERE id = 1").await,
        vec![srow(&["eins"])]
    );

    // without a conflict every table is published at once
    run(
        &a,
        "BEGIN; INSERT INTO t VALUES (3, 'three'); DELETE FROM u",
    )
    .await
    .unwrap();
    assert_eq!(count(&b, "t").await, "2");
    assert_eq!(tag(&a, "COMMIT").await, "COMMIT");
    assert_eq!(count(&b, "t").await, "3");
    assert_eq!(count(&b, "u").await, "0");
}

/// Every row of t, by id.
async fn all_of_t(db: &Database) -> Vec<common::Row> {
    query(db, "SELECT id, v FROM t ORDER BY id").await
}

#[tokio::test]
async fn writes_to_other_rows_commit_over_each_other() {
    let (a, b) = two_sessions().await;
    run(
        &a,
        "INSERT INTO t SELECT value, 'n' || value FROM generate_series(3, 20)",
    )
    .await
    .unwrap();
    run(
        &a,
        "BEGIN; UPDATE t SET v = 'a1' WHERE id = 1; DELETE FROM t WHERE id = 3; \
         INSERT INTO t VALUES (100, 'a'); UPDATE t SET id = 50 WHERE id = 5; \
         INSERT INTO u VALUES (1)",
    )
    .await
    .unwrap();
    // b writes other rows of both tables meanwhile
    run(
        &b,
        "UPDATE t SET v = 'b2' WHERE id = 2; DELETE FROM t WHERE id = 4; \
         INSERT INTO t VALUES (200, 'b'); INSERT INTO u VALUES (2)",
    )
    .await
    .unwrap();
    assert_eq!(tag(&a, "COMMIT").await, "COMMIT");
    let mut want = vec![srow(&["1", "a1"]), srow(&["2", "b2"])];
    want.extend((6..=20).map(|i| srow(&[&i.to_string(), &format!("n{i}")])));
    want.push(srow(&["50", "n5"]));
    want.push(srow(&["100", "a"]));
    want.push(srow(&["200", "b"]));
    assert_eq!(all_of_t(&b).await, want);
    assert_eq!(
        query(&b, "SELECT n FROM u ORDER BY n").await,
        vec![srow(&["1"]), srow(&["2"])]
    );
    // the primary key's index agrees, key by key
    for id in [1, 2, 3, 4, 5, 6, 20, 50, 100, 200] {
        let found = query(&b, &format!("SELECT v FROM t WHERE id = {id}")).await;
        let expected: Vec<_> = want
            .iter()
            .filter(|r| r[0].as_deref() == Some(&id.to_string()))
            .map(|r| vec![r[1].clone()])
            .collect();
        assert_eq!(found, expected, "id {id}");
    }
    // the same row (or key) written by both: the later committer fails, whole
    for (mine, theirs) in [
        (
            "UPDATE t SET v = 'x' WHERE id = 6",
            "UPDATE t SET v = 'y' WHERE id = 6",
        ),
        (
            "DELETE FROM t WHERE id = 7",
            "UPDATE t SET v = 'y' WHERE id = 7",
        ),
        (
            "UPDATE t SET v = 'x' WHERE id = 8",
            "DELETE FROM t WHERE id = 8",
        ),
        ("DELETE FROM t WHERE id = 9", "DELETE FROM t WHERE id = 9"),
        (
            "INSERT INTO t VALUES (300, 'x')",
            "INSERT INTO t VALUES (300, 'y')",
        ),
        (
            "UPDATE t SET id = 400 WHERE id = 10",
            "INSERT INTO t VALUES (400, 'y')",
        ),
    ] {
        run(&a, &format!("BEGIN; INSERT INTO u VALUES (9); {mine}"))
            .await
            .unwrap();
        run(&b, theirs).await.unwrap();
        let before = (all_of_t(&b).await, count(&b, "u").await);
        let e = run(&a, "COMMIT").await.unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::SERIALIZATION_FAILURE, "{mine}: {e}");
        assert_eq!((all_of_t(&b).await, count(&b, "u").await), before, "{mine}");
    }
}

#[tokio::test]
async fn rollback_and_failed_transactions_leave_nothing() {
    let (a, b) = two_sessions().await;
    run(
        &a,
        "START TRANSACTION; INSERT INTO t VALUES (5, 'five'); TRUNCATE u",
    )
    .await
    .unwrap();
    assert_eq!(tag(&a, "ROLLBACK").await, "ROLLBACK");
    assert_eq!(count(&a, "t").await, "2");
    assert_eq!(count(&b, "t").await, "2");

    // a failing statement fails the transaction: the rest is refused, COMMIT rolls back
    run(&a, "BEGIN; INSERT INTO t VALUES (6, 'six')")
        .await
        .unwrap();
    assert_eq!(
        match run(&a, "INSERT INTO t VALUES (1, 'dup')").await {
            Err(e) => e.sqlstate(),
            Ok(out) => panic!("{out:?}"),
        },
        SqlState::UNIQUE_VIOLATION
    );
    let e = match run(&a, "SELECT 1").await {
        Err(e) => e,
        Ok(out) => panic!("{out:?}"),
    };
    assert!(matches!(e, SqlError::InFailedTransaction), "{e}");
    assert_eq!(e.sqlstate(), SqlState::IN_FAILED_SQL_TRANSACTION);
    assert_eq!(tag(&a, "COMMIT").await, "ROLLBACK");
    assert!(query(&a, "SELECT * FROM t WHERE id = 6").await.is_empty());

    // statements that change the catalog are refused inside a transaction
    run(&a, "BEGIN").await.unwrap();
    assert!(
        fail(&a, "CREATE TABLE w (x INT)")
            .await
            .contains("inside a transaction")
    );
    run(&a, "ROLLBACK").await.unwrap();
    assert!(fail(&a, "SELECT * FROM w").await.contains("w"));
    // COMMIT and ROLLBACK outside a transaction do nothing (PostgreSQL warns)
    assert_eq!(tag(&a, "COMMIT").await, "COMMIT");
    assert_eq!(tag(&a, "ROLLBACK").await, "ROLLBACK");
    assert!(
        fail(&a, "SAVEPOINT s")
            .await
            .contains("only be used in transaction blocks")
    );
}

/// Error of `sql`, which must fail.
async fn state_of(db: &Database, sql: &str) -> SqlState {
    match run(db, sql).await {
        Ok(out) => panic!("{sql}: expected an error, got {out:?}"),
        Err(e) => e.sqlstate(),
    }
}

#[tokio::test]
async fn savepoints_roll_back_part_of_a_transaction() {
    let db = db(2);
    run(
        &db,
        "CREATE TABLE s (id INT PRIMARY KEY, v INT); INSERT INTO s VALUES (1, 10), (2, 20)",
    )
    .await
    .unwrap();
    let rows = |v: &[(&str, &str)]| v.iter().map(|(a, b)| srow(&[a, b])).collect::<Vec<_>>();
    let all = "SELECT id, v FROM s ORDER BY id";
    run(
        &db,
        "BEGIN; UPDATE s SET v = 11 WHERE id = 1; SAVEPOINT a; INSERT INTO s VALUES (3, 30); \
         SAVEPOINT b; DELETE FROM s WHERE id = 2",
    )
    .await
    .unwrap();
    assert_eq!(query(&db, all).await, rows(&[("1", "11"), ("3", "30")]));
    assert_eq!(tag(&db, "ROLLBACK TO SAVEPOINT b").await, "ROLLBACK");
    assert_eq!(
        query(&db, all).await,
        rows(&[("1", "11"), ("2", "20"), ("3", "30")])
    );
    assert_eq!(tag(&db, "ROLLBACK TO a").await, "ROLLBACK");
    assert_eq!(query(&db, all).await, rows(&[("1", "11"), ("2", "20")]));
    // the index went back too: key 3 is free again
    assert!(query(&db, "SELECT v FROM s WHERE id = 3").await.is_empty());
    run(&db, "INSERT INTO s VALUES (3, 33)").await.unwrap();
    // a failed statement, then ROLLBACK TO: the transaction goes on
    assert_eq!(
        state_of(&db, "INSERT INTO s VALUES (1, 0)").await,
        SqlState::UNIQUE_VIOLATION
    );
    assert_eq!(
        state_of(&db, "SELECT 1").await,
        SqlState::IN_FAILED_SQL_TRANSACTION
    );
    assert_eq!(
        state_of(&db, "SAVEPOINT c").await,
        SqlState::IN_FAILED_SQL_TRANSACTION
    );
    assert_eq!(tag(&db, "ROLLBACK TO a").await, "ROLLBACK");
    assert_eq!(query(&db, all).await, rows(&[("1", "11"), ("2", "20")]));
    // RELEASE forgets the savepoint (and the ones after it), keeping the writes
    run(&db, "SAVEPOINT c; UPDATE s SET v = 22 WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(tag(&db, "RELEASE SAVEPOINT a").await, "RELEASE");
    assert_eq!(
        state_of(&db, "ROLLBACK TO c").await,
        SqlState::INVALID_SAVEPOINT_SPECIFICATION
    );
    // that error failed the transaction; COMMIT rolls it back
    assert_eq!(tag(&db, "COMMIT").await, "ROLLBACK");
    assert_eq!(query(&db, all).await, rows(&[("1", "10"), ("2", "20")]));
    // what stays before a savepoint rolled back to is committed
    run(
        &db,
        "BEGIN; UPDATE s SET v = 12 WHERE id = 1; SAVEPOINT x; UPDATE s SET v = 0; \
         INSERT INTO s VALUES (4, 40); ROLLBACK TO x; COMMIT",
    )
    .await
    .unwrap();
    assert_eq!(query(&db, all).await, rows(&[("1", "12"), ("2", "20")]));
    assert_eq!(
        state_of(&db, "ROLLBACK TO x").await,
        SqlState::NO_ACTIVE_SQL_TRANSACTION
    );
}

#[tokio::test]
async fn copy_inside_a_transaction_is_part_of_it() {
    let (a, b) = two_sessions().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.csv");
    std::fs::write(&path, "10,ten\n11,eleven\n").unwrap();
    run(&a, "BEGIN").await.unwrap();
    run(&a, &format!("COPY t FROM '{}'", path.display()))
        .await
        .unwrap();
    assert_eq!(count(&a, "t").await, "4");
    assert_eq!(count(&b, "t").await, "2");
    run(&a, "COMMIT").await.unwrap();
    assert_eq!(
        query(&b, "SELECT v FROM t WHERE id = 11").await,
        vec![srow(&["eleven"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_transfers_in_transactions_keep_the_total() {
    let main = Arc::new(db(2));
    run(
        &main,
        "CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL); \
         INSERT INTO acct SELECT value, 100 FROM generate_series(1, 10)",
    )
    .await
    .unwrap();
    let mut tasks = Vec::new();
    for worker in 0..4u64 {
        let session = main.new_session();
        tasks.push(tokio::spawn(async move {
            let mut committed = 0;
            for i in 0..25u64 {
                let from = (worker * 7 + i) % 10 + 1;
                let to = (from % 10) + 1;
                let ctl = LoadControl::default();
                loop {
                    // two statements, one transaction: the total never shows a half transfer
                    let sql = format!(
                        "BEGIN; UPDATE acct SET bal = bal - 5 WHERE id = {from}; \
                         UPDATE acct SET bal = bal + 5 WHERE id = {to}; COMMIT"
                    );
                    match session.execute(&sql, &ctl).await {
                        Ok(_) => break,
                        Err(e) if e.sqlstate() == SqlState::SERIALIZATION_FAILURE => {
                            assert!(!session.in_transaction());
                        }
                        Err(e) => panic!("{sql}: {e}"),
                    }
                }
                committed += 1;
                let total = query(&session, "SELECT sum(bal) FROM acct").await;
                assert_eq!(total, vec![srow(&["1000"])]);
            }
            committed
        }));
    }
    let mut committed = 0;
    for t in tasks {
        committed += t.await.unwrap();
    }
    assert_eq!(committed, 100);
    // every committed transfer counts: no commit overwrote another's
    let mut want = [100i64; 11];
    for worker in 0..4u64 {
        for i in 0..25u64 {
            let from = ((worker * 7 + i) % 10 + 1) as usize;
            want[from] -= 5;
            want[from % 10 + 1] += 5;
        }
    }
    let want: Vec<_> = (1..=10)
        .map(|id| srow(&[&id.to_string(), &want[id].to_string()]))
        .collect();
    assert_eq!(
        query(&main, "SELECT id, bal FROM acct ORDER BY id").await,
        want
    );
}
