//! BEGIN / COMMIT / ROLLBACK: snapshot isolation between sessions, reading one's own writes,
//! all-or-nothing commits over several tables, first committer wins, failed transactions.

use std::sync::Arc;

use crate::common::{db, query, run, srow};
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

/// Error of `sql`, which must fail.
async fn state_of(db: &Database, sql: &str) -> SqlState {
    match run(db, sql).await {
        Ok(out) => panic!("{sql}: expected an error, got {out:?}"),
        Err(e) => e.sqlstate(),
    }
}

/// What SQL cannot see: the session's transaction flag and the error's variant (the
/// statements and their results are in slt/transactions.slt).
#[tokio::test]
async fn in_transaction_follows_begin_commit_and_failures() {
    let (a, b) = two_sessions().await;
    assert_eq!(tag(&a, "BEGIN").await, "BEGIN");
    assert!(a.in_transaction() && !b.in_transaction());
    run(&a, "UPDATE t SET v = 'uno' WHERE id = 1")
        .await
        .unwrap();
    run(&b, "UPDATE t SET v = 'eins' WHERE id = 1")
        .await
        .unwrap();
    let e = run(&a, "COMMIT").await.unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::SERIALIZATION_FAILURE, "{e}");
    assert!(!a.in_transaction());
    run(&a, "BEGIN; INSERT INTO t VALUES (6, 'six')")
        .await
        .unwrap();
    assert_eq!(
        state_of(&a, "INSERT INTO t VALUES (1, 'dup')").await,
        SqlState::UNIQUE_VIOLATION
    );
    let e = run(&a, "SELECT 1").await.unwrap_err();
    assert!(matches!(e, SqlError::InFailedTransaction), "{e}");
    assert_eq!(tag(&a, "COMMIT").await, "ROLLBACK");
    assert!(!a.in_transaction());
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
