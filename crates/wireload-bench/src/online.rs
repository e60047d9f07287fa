//! `wireload-bench online`: the Instant Loading paper's Figure 14 on this machine. One
//! thread runs keyed transactions (a point lookup and an update by primary key, both
//! prepared) against an accounts table while TPC-H `lineitem` (with its primary key) loads
//! into another table; the transaction rate before and during the load, the load's time and
//! its merge step. Then the Shared Loading paper's Q1 and Q2 on the loaded `lineitem`, alone
//! and beside a second load: their latency percentiles.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use serde_json::{Value, json};
use wireload_load::{Dialect, LoadControl, LoadOptions, LoadReport, Schedule, Source};
use wireload_sql::{Database, DbConfig, PreparedStatement, ScalarValue, SqlError, StatementOutput};

use wireload_tpch::tables;

use crate::cli::OnlineArgs;
use crate::lookup::splitmix;

/// Width of the timeline's buckets.
const BUCKET: Duration = Duration::from_millis(100);

/// Runs `sql` in `db` on a runtime of the calling thread.
fn run(rt: &tokio::runtime::Runtime, db: &Database, sql: &str) -> Result<Vec<StatementOutput>> {
    rt.block_on(db.execute(sql, &LoadControl::default()))
        .with_context(|| format!("`{sql}` failed"))
}

/// A single-threaded runtime for one session's statements.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")
}

/// What a transaction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mix {
    /// the prepared lookup, through the API
    Lookup,
    /// the prepared lookup, as SQL text `EXECUTE get(k)`
    LookupSql,
    /// the prepared update, through the API
    Update,
    /// lookup and update on the same key, through the API
    Both,
}

impl Mix {
    fn name(self) -> &'static str {
        match self {
            Mix::Lookup => "lookup",
            Mix::LookupSql => "lookup_sql_text",
            Mix::Update => "update",
            Mix::Both => "lookup+update",
        }
    }
}

/// A session's prepared statements.
struct Prepared {
    /// `SELECT bal, note FROM acct WHERE id = $1`
    get: PreparedStatement,
    /// `UPDATE acct SET bal = bal + 1 WHERE id = $1`
    upd: PreparedStatement,
}

/// Rows of a statement's output.
fn rows_of(out: &StatementOutput) -> usize {
    match out {
        StatementOutput::Rows { batches, .. } => batches.iter().map(|b| b.num_rows()).sum(),
        _ => 0,
    }
}

/// One transaction on a random account; fails when the lookup finds no single row.
fn transaction(
    rt: &tokio::runtime::Runtime,
    db: &Database,
    prepared: &Prepared,
    mix: Mix,
    key: u64,
) -> Result<()> {
    let ctl = LoadControl::default();
    let param = [ScalarValue::Int64(Some(key as i64))];
    let rows = match mix {
        Mix::Update => 1,
        Mix::LookupSql => run(rt, db, &format!("EXECUTE get({key})"))?
            .last()
            .map_or(0, rows_of),
        Mix::Lookup | Mix::Both => rows_of(
            &rt.block_on(db.execute_prepared(&prepared.get, &param, &ctl))
                .with_context(|| format!("the lookup of account {key} failed"))?,
        ),
    };
    if rows != 1 {
        bail!("account {key}: the lookup returned {rows} rows");
    }
    if matches!(mix, Mix::Update | Mix::Both) {
        rt.block_on(db.execute_prepared(&prepared.upd, &param, &ctl))
            .with_context(|| format!("the update of account {key} failed"))?;
    }
    Ok(())
}

/// Transactions of `mix` in a new session of `db` until `stop`; returns when each one
/// ended, as time since `origin`.
fn workload(
    db: &Database,
    accounts: u64,
    mix: Mix,
    origin: Instant,
    stop: &AtomicBool,
) -> Result<Vec<Duration>> {
    let rt = runtime()?;
    let db = db.new_session();
    let db = &db;
    let get = "SELECT bal, note FROM acct WHERE id = $1";
    let upd = "UPDATE acct SET bal = bal + 1 WHERE id = $1";
    run(&rt, db, &format!("PREPARE get(BIGINT) AS {get}"))?;
    let prepared = Prepared {
        get: rt.block_on(db.prepare(get))?,
        upd: rt.block_on(db.prepare(upd))?,
    };
    if !prepared.get.is_key_access() {
        bail!("the lookup `{get}` does not run as a key access");
    }
    let mut seed = 7u64;
    let mut done = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let key = splitmix(&mut seed) % accounts + 1;
        transaction(&rt, db, &prepared, mix, key)?;
        done.push(origin.elapsed());
    }
    Ok(done)
}

/// Transactions per second of `done` between `from` and `to`.
fn rate(done: &[Duration], from: Duration, to: Duration) -> f64 {
    let n = done.iter().filter(|&&t| t >= from && t < to).count();
    n as f64 / (to - from).as_secs_f64().max(1e-9)
}

/// Touches and frees `bytes` of memory, so the load's first touch of fresh pages is not
/// slower than the idle phase's (memory idle for seconds goes back to the host here).
fn touch(bytes: usize) {
    let mut v = vec![0u8; bytes];
    for i in (0..v.len()).step_by(4096) {
        v[i] = 1;
    }
    std::hint::black_box(&v);
}

/// Creates (again) an empty table `name` with lineitem's columns and primary key (its
/// indexes renamed after `name`: index names are unique in a database).
fn create_lineitem(db: &Database, name: &str) -> Result<()> {
    let mut def = tables::schema(true)?
        .into_iter()
        .find(|d| d.name == "lineitem")
        .context("the TPC-H schema has no lineitem table")?;
    if name != def.name {
        for ix in &mut def.indexes {
            ix.name = ix.name.replacen(&def.name, name, 1);
        }
        def.name = name.to_string();
    }
    db.catalog().drop_table(name, true)?;
    db.create_table(def, false)?;
    Ok(())
}

/// Loads `file` (lineitem, `|`-separated) into `table` on `threads` threads with merge
/// steps on `schedule`, in a new session of `db`; the outcome, and when the load began and
/// ended since `origin`.
fn load_lineitem(
    db: &Database,
    table: &str,
    file: &Path,
    (threads, schedule): (usize, Schedule),
    origin: Instant,
) -> Result<(Result<LoadReport, SqlError>, Duration, Duration)> {
    let loader = db.new_session();
    let options = LoadOptions {
        dialect: Dialect {
            delimiter: b'|',
            ..Dialect::default()
        },
        threads: Some(threads),
        schedule,
        ..LoadOptions::default()
    };
    let rt = runtime()?;
    let from = origin.elapsed();
    let report = rt.block_on(loader.load(
        table,
        Source::File(file.to_path_buf()),
        options,
        &LoadControl::default(),
    ));
    Ok((report, from, origin.elapsed()))
}

/// One run: the workload alone for `idle`, then beside a load of `file` on `threads`
/// threads merged on `schedule`, then alone again for a second.
/// Returns the run's figures and how many transactions it ran.
fn run_beside_load(
    db: &Database,
    args: &OnlineArgs,
    file: &Path,
    (threads, schedule): (usize, Schedule),
) -> Result<(Value, usize)> {
    create_lineitem(db, "lineitem")?;
    let bytes = std::fs::metadata(file)
        .with_context(|| format!("cannot read {}", file.display()))?
        .len();
    let stop = Arc::new(AtomicBool::new(false));
    let origin = Instant::now();
    let (report, load_from, load_to, done) = thread::scope(|s| -> Result<_> {
        let worker = {
            let stop = Arc::clone(&stop);
            let accounts = args.accounts;
            s.spawn(move || workload(db, accounts, Mix::Both, origin, &stop))
        };
        thread::sleep(Duration::from_secs_f64(args.idle_seconds));
        touch(bytes as usize);
        let (report, load_from, load_to) =
            load_lineitem(db, "lineitem", file, (threads, schedule), origin)?;
        thread::sleep(Duration::from_secs(1));
        stop.store(true, Ordering::Relaxed);
        let done = worker
            .join()
            .map_err(|_| anyhow::anyhow!("the workload thread panicked"))??;
        let report: LoadReport = report?;
        Ok((report, load_from, load_to, done))
    })?;
    let end = done.last().copied().unwrap_or(load_to);
    let tps_idle = rate(&done, Duration::ZERO, load_from);
    let tps_during = rate(&done, load_from, load_to);
    let buckets = (end.as_nanos() / BUCKET.as_nanos()) as usize + 1;
    let mut timeline = vec![0u64; buckets];
    for t in &done {
        timeline[(t.as_nanos() / BUCKET.as_nanos()) as usize] += 1;
    }
    let per_s = 1.0 / BUCKET.as_secs_f64();
    let figures = json!({
        "load_threads": threads,
        "schedule": schedule_name(schedule),
        "merge_steps": report.merge_steps,
        "tps_idle": tps_idle,
        "tps_during_load": tps_during,
        "during_over_idle": tps_during / tps_idle.max(1e-9),
        "load_s": report.seconds,
        "merge_tx_ms": report.merge_seconds * 1e3,
        "rows": report.rows,
        "bytes": report.bytes,
        "load_start_s": load_from.as_secs_f64(),
        "load_end_s": load_to.as_secs_f64(),
        "bucket_s": BUCKET.as_secs_f64(),
        "tps_timeline": timeline.iter().map(|&n| n as f64 * per_s).collect::<Vec<_>>(),
    });
    Ok((figures, done.len()))
}

/// The Shared Loading paper's queries: Q1 scans one column, Q2 filters on a date range.
const QUERIES: [(&str, &str); 2] = [
    ("q1", "SELECT sum(l_extendedprice) FROM lineitem"),
    (
        "q2",
        "SELECT count(*) FROM lineitem WHERE l_shipdate BETWEEN DATE '1994-01-01' AND DATE '1995-01-01'",
    ),
];

/// Latency percentiles of `samples` (seconds): count, p50, p99 and p99.9 in ms (nearest
/// rank: with fewer than 1,000 samples p99.9 is the largest).
fn percentiles(samples: &mut [f64]) -> Value {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if samples.is_empty() {
            return Value::Null;
        }
        let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        json!(samples[rank - 1] * 1e3)
    };
    json!({"n": samples.len(), "p50_ms": at(0.5), "p99_ms": at(0.99), "p999_ms": at(0.999)})
}

/// Q1 and Q2 in turn on the loaded `lineitem`, alone and while the same file loads into
/// another table on one thread; their latencies in each phase.
fn query_latency(db: &Database, args: &OnlineArgs, file: &Path) -> Result<Value> {
    create_lineitem(db, "lineitem_more")?;
    let bytes = std::fs::metadata(file)?.len();
    let stop = AtomicBool::new(false);
    let origin = Instant::now();
    let (samples, load_from, load_to) = thread::scope(|s| -> Result<_> {
        let worker = s.spawn(|| -> Result<Vec<(usize, Duration, f64)>> {
            let rt = runtime()?;
            let session = db.new_session();
            let mut samples = Vec::new();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let q = i % QUERIES.len();
                let started = origin.elapsed();
                let t = Instant::now();
                run(&rt, &session, QUERIES[q].1)?;
                samples.push((q, started, t.elapsed().as_secs_f64()));
                i += 1;
            }
            Ok(samples)
        });
        thread::sleep(Duration::from_secs_f64(args.idle_seconds));
        touch(bytes as usize);
        let (report, load_from, load_to) =
            load_lineitem(db, "lineitem_more", file, (1, Schedule::Deferred), origin)?;
        stop.store(true, Ordering::Relaxed);
        let samples = worker
            .join()
            .map_err(|_| anyhow::anyhow!("the query thread panicked"))??;
        report?;
        Ok((samples, load_from, load_to))
    })?;
    db.catalog().drop_table("lineitem_more", true)?;
    let mut out = serde_json::Map::new();
    for (q, (name, sql)) in QUERIES.iter().enumerate() {
        // a query counts as during the load when it started in it
        let (mut idle, mut during): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
        for &(k, started, secs) in &samples {
            if k != q {
                continue;
            }
            if started < load_from {
                idle.push(secs);
            } else if started < load_to {
                during.push(secs);
            }
        }
        out.insert(
            name.to_string(),
            json!({"sql": sql, "idle": percentiles(&mut idle), "during_load": percentiles(&mut during)}),
        );
    }
    out.insert("load_threads".into(), json!(1));
    out.insert("load_s".into(), json!((load_to - load_from).as_secs_f64()));
    Ok(Value::Object(out))
}

/// The schedule's name as COPY's SCHEDULE option spells it.
fn schedule_name(schedule: Schedule) -> &'static str {
    match schedule {
        Schedule::Deferred => "deferred",
        Schedule::Interleaved => "interleaved",
    }
}

/// Runs `wireload-bench online`.
pub fn online(args: &OnlineArgs, threads: Option<usize>) -> Result<()> {
    let file = args.data.join("lineitem.tbl");
    if !file.exists() {
        bail!(
            "{} does not exist (write it with `wireload gen tpch --out {}`)",
            file.display(),
            args.data.display()
        );
    }
    if args.accounts == 0 {
        bail!("--accounts must be at least 1");
    }
    let db = Database::new(DbConfig {
        threads,
        ..Default::default()
    });
    let rt = runtime()?;
    run(
        &rt,
        &db,
        &format!(
            "CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT NOT NULL, note VARCHAR(20)); \
             INSERT INTO acct SELECT value, 1000, 'account' FROM generate_series(1, {})",
            args.accounts
        ),
    )?;
    // each transaction kind alone, idle: what the rates below are made of
    let mut alone = serde_json::Map::new();
    let mut updates = 0usize;
    for mix in [Mix::Lookup, Mix::LookupSql, Mix::Update] {
        let stop = AtomicBool::new(false);
        let origin = Instant::now();
        let done = thread::scope(|s| {
            let worker = s.spawn(|| workload(&db, args.accounts, mix, origin, &stop));
            thread::sleep(Duration::from_secs_f64(args.idle_seconds));
            stop.store(true, Ordering::Relaxed);
            worker.join()
        })
        .map_err(|_| anyhow::anyhow!("the workload thread panicked"))??;
        let end = done.last().copied().unwrap_or_default();
        updates += if mix == Mix::Update { done.len() } else { 0 };
        alone.insert(
            format!("{}_tps_idle", mix.name()),
            json!(rate(&done, Duration::ZERO, end)),
        );
    }
    // a load on each thread count first, not measured: the first load on a pool's threads
    // pays for memory that later loads on them get back from the allocator (0.5 s of 2.2 s
    // here), which would favour whichever schedule runs second
    for &t in &args.load_threads {
        create_lineitem(&db, "lineitem")?;
        load_lineitem(
            &db,
            "lineitem",
            &file,
            (t, Schedule::Deferred),
            Instant::now(),
        )?
        .0?;
    }
    let mut runs = Vec::new();
    for &schedule in &args.schedules {
        for &t in &args.load_threads {
            let (run, done) = run_beside_load(&db, args, &file, (t, schedule))?;
            updates += done;
            runs.push(run);
        }
    }
    let queries = query_latency(&db, args, &file)?;
    // every update landed: each added one to one balance
    let out = run(&rt, &db, "SELECT CAST(sum(bal) AS BIGINT) FROM acct")?;
    let sum = match out.last() {
        Some(StatementOutput::Rows { batches, .. }) => batches.first().and_then(|b| {
            b.column(0)
                .as_primitive_opt::<Int64Type>()
                .map(|a| a.value(0))
        }),
        _ => None,
    };
    let expected = args.accounts as i64 * 1000 + updates as i64;
    if sum != Some(expected) {
        bail!("the balances sum to {sum:?} after {updates} updates, expected {expected}");
    }
    if runs.is_empty() {
        bail!("no runs: give --load-threads and --schedules");
    }
    // the figures of record are the deferred schedule's (its merge transaction is the short one)
    let first = runs
        .iter()
        .find(|r| r["schedule"] == "deferred")
        .unwrap_or(&runs[0]);
    let doc = json!({
        "benchmark": "online-loading",
        "accounts": args.accounts,
        "transaction": Mix::Both.name(),
        "file": file.display().to_string(),
        "tps_idle": first["tps_idle"],
        "tps_during_load": first["tps_during_load"],
        "merge_tx_ms": first["merge_tx_ms"],
        "load_s": first["load_s"],
        "alone": alone,
        "runs": runs,
        "queries": queries,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "accounts: {}; idle, one kind at a time: lookup {:.0} tps (as SQL text {:.0} \
             tps), update {:.0} tps",
            args.accounts,
            doc["alone"]["lookup_tps_idle"].as_f64().unwrap_or(0.0),
            doc["alone"]["lookup_sql_text_tps_idle"]
                .as_f64()
                .unwrap_or(0.0),
            doc["alone"]["update_tps_idle"].as_f64().unwrap_or(0.0)
        );
        for (name, _) in QUERIES {
            let q = &doc["queries"][name];
            println!(
                "{name} while a 1-thread load runs beside it: p50 {:.1} ms, p99.9 {:.1} ms ({} runs); \
                 idle: p50 {:.1} ms, p99.9 {:.1} ms ({} runs)",
                q["during_load"]["p50_ms"].as_f64().unwrap_or(0.0),
                q["during_load"]["p999_ms"].as_f64().unwrap_or(0.0),
                q["during_load"]["n"],
                q["idle"]["p50_ms"].as_f64().unwrap_or(0.0),
                q["idle"]["p999_ms"].as_f64().unwrap_or(0.0),
                q["idle"]["n"]
            );
        }
        for r in &runs {
            println!(
                "load on {} thread(s), schedule {}: {} rows in {:.2} s, merge transaction \
                 {:.1} ms in {} step(s); lookup+update: {:.0} tps idle, {:.0} tps during the \
                 load ({:.0}%)",
                r["load_threads"],
                r["schedule"].as_str().unwrap_or("?"),
                r["rows"],
                r["load_s"].as_f64().unwrap_or(0.0),
                r["merge_tx_ms"].as_f64().unwrap_or(0.0),
                r["merge_steps"],
                r["tps_idle"].as_f64().unwrap_or(0.0),
                r["tps_during_load"].as_f64().unwrap_or(0.0),
                r["during_over_idle"].as_f64().unwrap_or(0.0) * 100.0
            );
        }
    }
    Ok(())
}
