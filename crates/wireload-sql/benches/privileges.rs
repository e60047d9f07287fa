//! What the privilege checks cost on the paths they guard most often: a point query by
//! primary key (prepared, run on the key's index; and as text, planned each time) and a
//! `COPY ... FROM STDIN`. Each is run in a local session (no check: the process's user) and
//! in the session of a role granted what it needs (every check made), rounds interleaved
//! in alternating order, the median of each printed with the ratio role / local.
//!
//! Run: `cargo bench -p wireload-sql --bench privileges`. `PRIV_BENCH_ROUNDS` sets the
//! rounds (7), `PRIV_BENCH_POINTS` the prepared executions per round (200,000).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use wireload_load::{LoadControl, Source};
use wireload_sql::{
    Actor, CopyFrom, Database, DbConfig, ScalarValue, Statement, StatementOutput, parse_script,
};

/// Rows of the table the point queries read.
const ROWS: i64 = 100_000;
/// Rows each COPY FROM STDIN loads.
const COPY_ROWS: i64 = 1_000_000;
/// Text point queries per round (each is planned).
const TEXT_POINTS: i64 = 2_000;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn csv(rows: i64) -> Arc<[u8]> {
    let mut out = String::new();
    for i in 0..rows {
        out.push_str(&format!("{i},{}\n", i * 7 % 1000));
    }
    Arc::from(out.into_bytes())
}

/// `COPY table FROM STDIN WITH (FORMAT csv)`, parsed.
fn copy_from_stdin(table: &str) -> CopyFrom {
    let sql = format!("COPY {table} FROM STDIN WITH (FORMAT csv)");
    match parse_script(&sql).unwrap().remove(0).statement {
        Statement::CopyFrom(copy) => *copy,
        other => panic!("{other:?}"),
    }
}

fn main() {
    let rounds = env_or("PRIV_BENCH_ROUNDS", 7);
    let points = env_or("PRIV_BENCH_POINTS", 200_000) as i64;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let db = Database::new(DbConfig {
        threads: Some(2),
        ..Default::default()
    });
    let ctl = LoadControl::default();
    rt.block_on(async {
        db.execute(
            "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT); \
             CREATE TABLE copied (id BIGINT, balance BIGINT); \
             CREATE USER bench PASSWORD 'x'; \
             GRANT SELECT ON accounts TO bench; GRANT INSERT, TRUNCATE ON copied TO bench;",
            &ctl,
        )
        .await
        .unwrap();
        let source = Source::Bytes {
            name: "accounts".into(),
            data: csv(ROWS),
        };
        db.copy_from_client(copy_from_stdin("accounts"), source, &ctl)
            .await
            .unwrap();
    });
    let local = db.new_session();
    let role = db.client_session(Arc::default());
    role.set_actor(Actor::Role("bench".into()));
    let sessions = [("local", &local), ("role", &role)];

    let mut prepared_secs = [Vec::new(), Vec::new()];
    let mut text_secs = [Vec::new(), Vec::new()];
    let mut copy_secs = [Vec::new(), Vec::new()];
    let copy_data = csv(COPY_ROWS);
    rt.block_on(async {
        let statements = [
            local
                .prepare("SELECT balance FROM accounts WHERE id = $1")
                .await
                .unwrap(),
            role.prepare("SELECT balance FROM accounts WHERE id = $1")
                .await
                .unwrap(),
        ];
        assert!(statements.iter().all(|s| s.is_key_access()));
        for round in 0..rounds {
            // the order alternates (ABBA), so what the first of a round pays both pay
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                let session = sessions[k].1;
                let start = Instant::now();
                for i in 0..points {
                    let id = ScalarValue::Int64(Some(i * 7919 % ROWS));
                    let out = session
                        .execute_prepared(&statements[k], &[id], &ctl)
                        .await
                        .unwrap();
                    black_box(out);
                }
                prepared_secs[k].push(start.elapsed().as_secs_f64() / points as f64);
                let start = Instant::now();
                for i in 0..TEXT_POINTS {
                    let sql = format!(
                        "SELECT balance FROM accounts WHERE id = {}",
                        i * 7919 % ROWS
                    );
                    let out = session.execute(&sql, &ctl).await.unwrap();
                    assert!(matches!(&out[0], StatementOutput::Rows { .. }));
                }
                text_secs[k].push(start.elapsed().as_secs_f64() / TEXT_POINTS as f64);
                session.execute("TRUNCATE copied", &ctl).await.unwrap();
                let copy = copy_from_stdin("copied");
                let source = Source::Bytes {
                    name: "STDIN".into(),
                    data: Arc::clone(&copy_data),
                };
                let start = Instant::now();
                let report = session.copy_from_client(copy, source, &ctl).await.unwrap();
                copy_secs[k].push(start.elapsed().as_secs_f64());
                assert_eq!(report.rows, COPY_ROWS as u64);
            }
        }
    });
    println!(
        "privilege checks: {rounds} rounds interleaved (ABBA), medians; local session (no check) vs role (checked)"
    );
    for (what, secs, unit, scale) in [
        ("prepared point SELECT by key", &prepared_secs, "us", 1e6),
        ("text point SELECT (planned)", &text_secs, "us", 1e6),
        ("COPY FROM STDIN 1M rows", &copy_secs, "ms", 1e3),
    ] {
        let (l, r) = (median(secs[0].clone()), median(secs[1].clone()));
        println!(
            "{what:32} local {:>9.3} {unit}  role {:>9.3} {unit}  role/local {:.4}",
            l * scale,
            r * scale,
            r / l
        );
    }
}
