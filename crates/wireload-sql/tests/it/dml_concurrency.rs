//! Writes beside readers and other writers: every statement is atomic, readers see whole
//! versions only, and concurrent writes to one table never lose an update (the later one
//! starts again, never overwrites), loads into the same table included.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::common::{db, query, run, srow};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wireload_load::LoadControl;
use wireload_sql::{Database, SqlState};

const ACCOUNTS: u64 = 20;
const BALANCE: u64 = 1000;
/// Accounts each load into the accounts table adds (with no money).
const LOADED: u64 = 50;
/// Loads into the accounts table.
const LOADS: u64 = 20;

/// Runs `sql` until it does not fail with a serialization failure; returns how many times
/// it did.
async fn until_done(db: &Database, sql: &str) -> u64 {
    let mut retries = 0;
    loop {
        match db.execute(sql, &LoadControl::default()).await {
            Ok(_) => return retries,
            Err(e) if e.sqlstate() == SqlState::SERIALIZATION_FAILURE => retries += 1,
            Err(e) => panic!("{sql}: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transfers_keep_the_total_while_loads_and_readers_run() {
    let db = Arc::new(db(2));
    run(
        &db,
        &format!(
            "CREATE TABLE acct (id INT PRIMARY KEY, bal BIGINT NOT NULL); \
             INSERT INTO acct SELECT value, {BALANCE} FROM generate_series(1, {ACCOUNTS}); \
             CREATE TABLE log (n BIGINT, note TEXT)"
        ),
    )
    .await
    .unwrap();
    let total = (ACCOUNTS * BALANCE).to_string();
    let done = Arc::new(AtomicBool::new(false));
    let retries = Arc::new(AtomicU64::new(0));

    // readers: every snapshot holds the whole money, every account once, and whole loads
    // only (each brings LOADED new empty accounts)
    let mut readers = Vec::new();
    for _ in 0..2 {
        let (db, done, total) = (Arc::clone(&db), Arc::clone(&done), total.clone());
        readers.push(tokio::spawn(async move {
            let mut seen = 0u64;
            while !done.load(Ordering::SeqCst) || seen == 0 {
                assert_eq!(
                    query(
                        &db,
                        &format!(
                            "SELECT sum(bal), count(*) - count(DISTINCT id), \
                             (count(*) - {ACCOUNTS}) % {LOADED} FROM acct"
                        )
                    )
                    .await,
                    vec![srow(&[&total, "0", "0"])]
                );
                seen += 1;
                tokio::task::yield_now().await;
            }
            seen
        }));
    }
    // a writer appending to another table all along
    let appender = {
        let (db, done) = (Arc::clone(&db), Arc::clone(&done));
        tokio::spawn(async move {
            let mut n = 0u64;
            while !done.load(Ordering::SeqCst) {
                run(&db, &format!("INSERT INTO log VALUES ({n}, 'tick')"))
                    .await
                    .unwrap();
                n += 1;
            }
            n
        })
    };
    // a loader adding empty accounts to the same table while the movers run
    let dir = tempfile::tempdir().unwrap();
    let loader = {
        let db = Arc::clone(&db);
        let dir = dir.path().to_path_buf();
        tokio::spawn(async move {
            for loads in 0..LOADS {
                let path = dir.join(format!("new{loads}.csv"));
                let first = 1_000_000 + loads * LOADED;
                let csv: String = (first..first + LOADED)
                    .map(|id| format!("{id},0\n"))
                    .collect();
                std::fs::write(&path, csv).unwrap();
                run(
                    &db,
                    &format!("COPY acct FROM '{}' WITH (FORMAT csv)", path.display()),
                )
                .await
                .unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
    };
    // four movers, each a single statement moving money between two accounts
    let mut movers = Vec::new();
    for seed in 0..4u64 {
        let (db, retries) = (Arc::clone(&db), Arc::clone(&retries));
        movers.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed);
            for _ in 0..40 {
                let from = rng.random_range(1..=ACCOUNTS);
                let to = (from % ACCOUNTS) + 1;
                let amount = rng.random_range(1..50);
                let sql = format!(
                    "UPDATE acct SET bal = bal + CASE WHEN id = {from} THEN -{amount} ELSE {amount} END \
                     WHERE id IN ({from}, {to})"
                );
                retries.fetch_add(until_done(&db, &sql).await, Ordering::SeqCst);
            }
        }));
    }
    // four more, each a transaction of two prepared key-access updates in a session of
    // its own (first committer wins: a conflicting COMMIT fails and the transfer is redone)
    for seed in 4..8u64 {
        let (db, retries) = (Arc::clone(&db), Arc::clone(&retries));
        movers.push(tokio::spawn(async move {
            let session = db.new_session();
            run(
                &session,
                "PREPARE mv(INT, BIGINT) AS UPDATE acct SET bal = bal + $2 WHERE id = $1",
            )
            .await
            .unwrap();
            let mut rng = StdRng::seed_from_u64(seed);
            for _ in 0..40 {
                let from = rng.random_range(1..=ACCOUNTS);
                let to = (from % ACCOUNTS) + 1;
                let amount = rng.random_range(1..50);
                let sql = format!(
                    "BEGIN; EXECUTE mv({from}, -{amount}); EXECUTE mv({to}, {amount}); COMMIT"
                );
                retries.fetch_add(until_done(&session, &sql).await, Ordering::SeqCst);
                assert!(!session.in_transaction());
            }
            assert!(
                session.key_accesses() >= 80,
                "the transfers are key accesses"
            );
        }));
    }
    for m in movers {
        m.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let ticks = appender.await.unwrap();
    loader.await.unwrap();
    for r in readers {
        assert!(r.await.unwrap() > 0);
    }
    assert_eq!(
        query(&db, "SELECT sum(bal), count(*) FROM acct").await,
        vec![srow(&[&total, &(ACCOUNTS + LOADS * LOADED).to_string()])]
    );
    run(&db, &format!("DELETE FROM acct WHERE id > {ACCOUNTS}"))
        .await
        .unwrap();
    assert_eq!(
        query(&db, "SELECT count(*), count(DISTINCT n) FROM log").await,
        vec![srow(&[&ticks.to_string(), &ticks.to_string()])],
        "no insert lost"
    );
    // a deposit per account, concurrently: all of them count (none overwrites another)
    let mut depositors = Vec::new();
    for id in 1..=ACCOUNTS {
        let db = Arc::clone(&db);
        depositors.push(tokio::spawn(async move {
            until_done(
                &db,
                &format!("UPDATE acct SET bal = bal + 1 WHERE id = {id}"),
            )
            .await
        }));
    }
    for d in depositors {
        d.await.unwrap();
    }
    assert_eq!(
        query(&db, "SELECT sum(bal) FROM acct").await,
        vec![srow(&[&(ACCOUNTS * BALANCE + ACCOUNTS).to_string()])]
    );
    // and 50 more each, as prepared key-access updates from 4 sessions at once
    let mut depositors = Vec::new();
    for s in 0..4u64 {
        let db = Arc::clone(&db);
        depositors.push(tokio::spawn(async move {
            let session = db.new_session();
            let deposit = session
                .prepare("UPDATE acct SET bal = bal + 1 WHERE id = $1")
                .await
                .unwrap();
            assert!(deposit.is_key_access());
            for i in 0..50 * ACCOUNTS / 4 {
                let id = ((s * 7 + i) % ACCOUNTS + 1) as i32;
                session
                    .execute_prepared(
                        &deposit,
                        &[wireload_sql::ScalarValue::Int32(Some(id))],
                        &LoadControl::default(),
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for d in depositors {
        d.await.unwrap();
    }
    assert_eq!(
        query(&db, "SELECT sum(bal) FROM acct").await,
        vec![srow(&[&(ACCOUNTS * BALANCE + 51 * ACCOUNTS).to_string()])]
    );
}
