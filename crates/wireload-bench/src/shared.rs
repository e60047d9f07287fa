//! `wireload-bench shared`: one cell of the Shared Loading evaluation end to end. It starts
//! `wireload serve` pinned to one CPU, and per mode (interleaved over the runs) creates the
//! target table anew and runs `wireload push` pinned to another CPU, as separate processes;
//! with `--queries` a second lineitem table answers the paper's Q1 and Q2 in batches of 10
//! meanwhile. Per mode: throughput over the file's bytes, bytes on the socket, the client's
//! CPU (getrusage) and the server's (its process's CPU over the load, /proc; and its own
//! accounting of the load's steps), and the queries' p99.9 latencies; medians of the runs.
//! With `--queries` each round first runs the queries alone for a few seconds: their
//! latencies with nothing loading, the floor of every mode's (`queries_alone`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use wireload_push::protocol::Mode;

use crate::cli::SharedArgs;

const USER: &str = "bench";
const PASSWORD: &str = "shared loading";
const Q1: &str = "SELECT sum(l_extendedprice) FROM lineitem_q";
const Q2: &str =
    "SELECT count(*) FROM lineitem_q WHERE l_shipdate BETWEEN '1994-01-01' AND '1995-01-01'";

/// The server process, killed when dropped.
struct Server {
    child: Child,
    pg: u16,
    flight: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One run of one mode.
#[derive(Debug, Clone, Default)]
struct Run {
    seconds: f64,
    throughput_mb_s: f64,
    bytes_sent: f64,
    client_cpu_s: f64,
    server_cpu_s: f64,
    server_load_cpu_s: f64,
    server_beside_queries_cpu_s: f64,
    /// Q1's and Q2's latencies beside the load (`--queries`)
    q1: Tail,
    q2: Tail,
    encoded: f64,
    /// the share of the file's bytes sent as text (`auto`)
    text: f64,
    /// CPU seconds per step, as the push reports them
    client_steps: BTreeMap<String, f64>,
    server_steps: BTreeMap<String, f64>,
}

/// What a query's latencies were over a load (or alone), in ms.
#[derive(Debug, Clone, Copy, Default)]
struct Tail {
    p50_ms: Option<f64>,
    p999_ms: Option<f64>,
    /// the slowest: seconds from the origin to the start of its batch, and its latency
    slowest: Option<(f64, f64)>,
}

impl Tail {
    /// The tail of `latencies` (batch start in seconds, latency in ms); quantiles by
    /// nearest rank.
    fn of(latencies: &[(f64, f64)]) -> Tail {
        let mut ms: Vec<f64> = latencies.iter().map(|l| l.1).collect();
        ms.sort_by(f64::total_cmp);
        let quantile = |q: f64| {
            let k = ((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len().max(1));
            ms.get(k - 1).copied()
        };
        Tail {
            p50_ms: quantile(0.5),
            p999_ms: quantile(0.999),
            slowest: latencies.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)),
        }
    }
}

/// The `wireload` binary beside this one, as `cargo build --release -p wireload -p
/// wireload-bench` puts them.
fn wireload_binary() -> Result<PathBuf> {
    let me = std::env::current_exe().context("finding the wireload-bench binary")?;
    let exe = me.with_file_name(format!("wireload{}", std::env::consts::EXE_SUFFIX));
    if !exe.is_file() {
        bail!(
            "{} does not exist: build it with `cargo build --release -p wireload`",
            exe.display()
        );
    }
    Ok(exe)
}

/// Runs the cell and prints it.
pub fn run(args: &SharedArgs) -> Result<()> {
    let exe = wireload_binary()?;
    let (file, columns, delimiter) = data(args, &exe)?;
    let file_bytes = std::fs::metadata(&file)?.len();
    let server = start_server(&exe, args.server_cpu, args.load_nice)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    if args.queries {
        sql(
            &rt,
            &server,
            &format!(
                "CREATE TABLE lineitem_q ({}) WITH (COMPRESSION = dictionary); \
                 COPY lineitem_q FROM '{}' WITH (FORMAT csv, DELIMITER '|')",
                lineitem_columns()?,
                lineitem_for_queries(args, &exe, &file)?.display()
            ),
        )?;
    }
    let mut modes: Vec<(Mode, bool)> = args.modes.iter().map(|&m| (m, false)).collect();
    if args.lz4 {
        modes.extend(
            args.modes
                .iter()
                .filter(|m| **m != Mode::Pipe)
                .map(|&m| (m, true)),
        );
    }
    // one load before the timed ones, not counted: a fresh server's first load paid for
    // its memory (the host's first touch, the allocator's growth) with up to 1.8x the CPU of
    // the loads after it, in whichever mode ran first
    if let Some(&(mode, _)) = modes.first() {
        let name = "t_warmup";
        sql(
            &rt,
            &server,
            &format!("CREATE TABLE {name} ({columns}) WITH (COMPRESSION = dictionary)"),
        )?;
        touch(file_bytes as usize);
        let warm = SharedArgs {
            queries: false,
            ..args.clone()
        };
        let r = one_load(
            &rt, &warm, &exe, &server, &file, name, delimiter, mode, false,
        )?;
        eprintln!(
            "warm-up ({}, not counted): {:.1} MB/s, server CPU {:.2} s",
            mode.paper_name(),
            r.throughput_mb_s,
            r.server_cpu_s
        );
        sql(&rt, &server, &format!("DROP TABLE {name}"))?;
    }
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); modes.len()];
    // the queries' latencies with no load beside them, once a round: the floor any mode's
    // p99.9 under the load is compared with
    let mut alone: Vec<(Tail, Tail)> = Vec::new();
    for _ in 0..args.runs.max(1) {
        if args.queries {
            let (q1, q2) = queries_alone(&rt, &server)?;
            let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
            eprintln!(
                "queries alone for {QUERIES_ALONE_SECONDS} s: Q1 p99.9 {} ms, Q2 p99.9 {} ms \
                 (p50 {} and {} ms)",
                ms(q1.p999_ms),
                ms(q2.p999_ms),
                ms(q1.p50_ms),
                ms(q2.p50_ms)
            );
            alone.push((q1, q2));
        }
        for (k, &(mode, lz4)) in modes.iter().enumerate() {
            let name = format!("t_{}", mode.name());
            sql(
                &rt,
                &server,
                &format!(
                    "DROP TABLE IF EXISTS {name}; \
                     CREATE TABLE {name} ({columns}) WITH (COMPRESSION = dictionary)"
                ),
            )?;
            touch(file_bytes as usize);
            let r = one_load(&rt, args, &exe, &server, &file, &name, delimiter, mode, lz4)?;
            eprintln!(
                "{}{}: {:.1} MB/s, {:.0} MB sent, client CPU {:.2} s, server CPU {:.2} s",
                mode.paper_name(),
                if lz4 { "+lz4" } else { "" },
                r.throughput_mb_s,
                r.bytes_sent / 1e6,
                r.client_cpu_s,
                r.server_cpu_s
            );
            eprintln!(
                "  client steps {}; server steps {}",
                show_steps(&r.client_steps),
                show_steps(&r.server_steps)
            );
            for (q, tail) in [("Q1", r.q1), ("Q2", r.q2)] {
                if let (Some((at, ms)), Some(p50)) = (tail.slowest, tail.p50_ms) {
                    eprintln!(
                        "  slowest {q}: {ms:.0} ms, its batch started {at:.2} s into the \
                         {:.2} s push (p50 {p50:.0} ms)",
                        r.seconds
                    );
                }
            }
            runs[k].push(r);
            sql(&rt, &server, &format!("DROP TABLE {name}"))?;
        }
    }
    let mut out = serde_json::Map::new();
    for ((mode, lz4), rs) in modes.iter().zip(&runs) {
        let med = |f: &dyn Fn(&Run) -> Option<f64>| median(rs.iter().filter_map(f).collect());
        let key = format!("{}{}", mode.name(), if *lz4 { "+lz4" } else { "" });
        out.insert(
            key,
            serde_json::json!({
                "throughput_mb_s": med(&|r| Some(r.throughput_mb_s)),
                "seconds": med(&|r| Some(r.seconds)),
                "bytes_sent": med(&|r| Some(r.bytes_sent)),
                "bytes_sent_of_file": med(&|r| Some(r.bytes_sent / file_bytes as f64)),
                "server_cpu_s": med(&|r| Some(r.server_cpu_s)),
                "server_load_cpu_s": med(&|r| Some(r.server_load_cpu_s)),
                "server_beside_queries_cpu_s": med(&|r| Some(r.server_beside_queries_cpu_s)),
                "client_cpu_s": med(&|r| Some(r.client_cpu_s)),
                "encoded_column_share": med(&|r| Some(r.encoded)),
                "text_share": med(&|r| Some(r.text)),
                "q1_p999_ms": med(&|r| r.q1.p999_ms),
                "q2_p999_ms": med(&|r| r.q2.p999_ms),
                "q1_p50_ms": med(&|r| r.q1.p50_ms),
                "q2_p50_ms": med(&|r| r.q2.p50_ms),
                "client_steps": median_steps(rs, |r| &r.client_steps),
                "server_steps": median_steps(rs, |r| &r.server_steps),
            }),
        );
    }
    let doc = serde_json::json!({
        "table": args.table,
        "file": file.display().to_string(),
        "file_bytes": file_bytes,
        "bandwidth": args.bandwidth.to_string(),
        "queries": args.queries,
        "runs": args.runs.max(1),
        "cpus": { "server": args.server_cpu, "client": args.client_cpu },
        "load_nice": args.load_nice,
        "text_share": args.text_share,
        "fragments": args.fragments,
        "queries_alone": args.queries.then(|| serde_json::json!({
            "seconds": QUERIES_ALONE_SECONDS,
            "q1_p999_ms": median(alone.iter().filter_map(|a| a.0.p999_ms).collect()),
            "q2_p999_ms": median(alone.iter().filter_map(|a| a.1.p999_ms).collect()),
            "q1_p50_ms": median(alone.iter().filter_map(|a| a.0.p50_ms).collect()),
            "q2_p50_ms": median(alone.iter().filter_map(|a| a.1.p50_ms).collect()),
        })),
        "modes": out,
    });
    if args.json {
        println!("{doc}");
    } else {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(())
}

/// The file to load, its table's columns and its delimiter (generated when missing).
fn data(args: &SharedArgs, exe: &Path) -> Result<(PathBuf, String, char)> {
    match args.table.as_str() {
        "lineitem" => {
            let dir = args
                .data
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("/dev/shm/wireload-tpch-sf{}", args.sf)));
            let file = dir.join("lineitem.tbl");
            if !file.is_file() {
                let status = Command::new(exe)
                    .args(["gen", "tpch", "--sf", &args.sf.to_string(), "--out"])
                    .arg(&dir)
                    .status()?;
                if !status.success() {
                    bail!("wireload gen tpch failed");
                }
            }
            Ok((file, lineitem_columns()?, '|'))
        }
        "wide" => {
            let dir = args
                .data
                .clone()
                .unwrap_or_else(|| PathBuf::from("/dev/shm/wireload-wide"));
            let (file, cols) = (dir.join("wide.csv"), dir.join("wide.columns"));
            if !file.is_file() || !cols.is_file() {
                // 1.25M rows: 2.0 GB, the size the issue asks of the wide table
                let status = Command::new("python3")
                    .args(["bench/widegen.py", "--rows", "1250000", "--out"])
                    .arg(&dir)
                    .status()
                    .context("running bench/widegen.py (from the repository root)")?;
                if !status.success() {
                    bail!("bench/widegen.py failed");
                }
            }
            let columns = std::fs::read_to_string(&cols)?.trim().to_string();
            Ok((file, columns, ','))
        }
        other => bail!("unknown table {other:?}: lineitem or wide"),
    }
}

/// lineitem's column list, from the TPC-H schema (`sql/tpch/schema.sql`).
fn lineitem_columns() -> Result<String> {
    let defs = wireload_tpch::tables::schema(false)?;
    let def = defs
        .iter()
        .find(|d| d.name == "lineitem")
        .context("the TPC-H schema has no lineitem")?;
    Ok(def
        .schema
        .columns
        .iter()
        .map(|c| {
            let not_null = if c.nullable { "" } else { " NOT NULL" };
            format!("{} {}{not_null}", c.name, c.ty)
        })
        .collect::<Vec<_>>()
        .join(", "))
}

/// The lineitem file the queries' table is loaded from.
fn lineitem_for_queries(args: &SharedArgs, exe: &Path, file: &Path) -> Result<PathBuf> {
    if args.table == "lineitem" {
        return Ok(file.to_path_buf());
    }
    let lineitem = SharedArgs {
        table: "lineitem".into(),
        data: None,
        sf: args.sf,
        bandwidth: args.bandwidth,
        queries: false,
        modes: Vec::new(),
        lz4: false,
        text_share: None,
        fragments: None,
        runs: 1,
        server_cpu: args.server_cpu,
        client_cpu: args.client_cpu,
        load_nice: None,
        json: false,
    };
    Ok(data(&lineitem, exe)?.0)
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `wireload serve` on `cpu` (its load threads at nice `load_nice`), ready.
fn start_server(exe: &Path, cpu: usize, load_nice: Option<i32>) -> Result<Server> {
    let (pg, flight) = (free_port()?, free_port()?);
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", &cpu.to_string()])
        .arg(exe)
        .args(["--threads", "1", "serve", "--listen"])
        .arg(format!("127.0.0.1:{pg}"))
        .arg("--flight-listen")
        .arg(format!("127.0.0.1:{flight}"));
    if let Some(nice) = load_nice {
        cmd.arg("--load-nice").arg(nice.to_string());
    }
    let mut child = cmd
        .env("WIRELOAD_USER", USER)
        .env("WIRELOAD_PASSWORD", PASSWORD)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting wireload serve under taskset")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", flight)).is_err()
        || std::net::TcpStream::connect(("127.0.0.1", pg)).is_err()
    {
        if Instant::now() > deadline || child.try_wait()?.is_some() {
            bail!("the server did not start");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Server { child, pg, flight })
}

/// A PostgreSQL connection to the server.
async fn connect(server_pg: u16) -> Result<tokio_postgres::Client> {
    let (client, conn) = tokio_postgres::Config::new()
        .host("127.0.0.1")
        .port(server_pg)
        .user(USER)
        .password(PASSWORD)
        .dbname("wireload")
        .connect(tokio_postgres::NoTls)
        .await
        .context("connecting to the server")?;
    tokio::spawn(conn);
    Ok(client)
}

/// Runs SQL statements on the server.
fn sql(rt: &tokio::runtime::Runtime, server: &Server, text: &str) -> Result<()> {
    rt.block_on(async {
        let client = connect(server.pg).await?;
        client
            .batch_execute(text)
            .await
            .with_context(|| format!("running {text}"))
    })
}

/// CPU seconds of process `pid` so far.
fn process_cpu(pid: u32) -> f64 {
    wireload_push::account::stat_cpu_seconds(Path::new(&format!("/proc/{pid}/stat")))
}

/// CPU seconds so far of the threads of process `pid`'s main runtime (`tokio-rt-worker`:
/// the PostgreSQL sessions and the queries they run; not the load pools, nor the Flight
/// runtime's `wireload-flight` threads). The process's CPU less this is its loading's, for
/// every mode alike; PIPE's COPY data is read from the socket on this runtime, so that
/// (small) part of PIPE's loading counts as the queries'.
fn query_runtime_cpu(pid: u32) -> f64 {
    wireload_push::account::named_threads_cpu_seconds(Some(pid), "tokio-rt-worker")
}

/// Touches and frees `bytes` of memory (memory idle for seconds is returned to the host
/// and slow on first touch: every contestant gets the same warm start).
fn touch(bytes: usize) {
    let mut v = vec![0u8; bytes];
    for i in (0..v.len()).step_by(4096) {
        v[i] = 1;
    }
    std::hint::black_box(&v);
}

/// `steps` as `name 1.23 s, ...`.
fn show_steps(steps: &BTreeMap<String, f64>) -> String {
    let shown: Vec<String> = steps.iter().map(|(k, v)| format!("{k} {v:.2} s")).collect();
    shown.join(", ")
}

/// The median of each step's CPU seconds over `runs` (a step missing from a run counts 0).
fn median_steps(
    runs: &[Run],
    steps: impl Fn(&Run) -> &BTreeMap<String, f64>,
) -> serde_json::Map<String, serde_json::Value> {
    let names: BTreeSet<&String> = runs.iter().flat_map(|r| steps(r).keys()).collect();
    names
        .into_iter()
        .map(|name| {
            let each = runs
                .iter()
                .map(|r| steps(r).get(name).copied().unwrap_or(0.0))
                .collect();
            (name.clone(), serde_json::json!(median(each)))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// One load of `file` into `table` in `mode`, with the query load when asked.
#[allow(clippy::too_many_arguments)]
fn one_load(
    rt: &tokio::runtime::Runtime,
    args: &SharedArgs,
    exe: &Path,
    server: &Server,
    file: &Path,
    table: &str,
    delimiter: char,
    mode: Mode,
    lz4: bool,
) -> Result<Run> {
    let stop = Arc::new(AtomicBool::new(false));
    let origin = Instant::now();
    let queries = args.queries.then(|| {
        let stop = Arc::clone(&stop);
        let pg = server.pg;
        rt.spawn(async move { query_load(pg, stop, origin).await })
    });
    let (cpu0, queries_cpu0) = (
        process_cpu(server.child.id()),
        query_runtime_cpu(server.child.id()),
    );
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", &args.client_cpu.to_string()])
        .arg(exe)
        .args(["--threads", "1", "push", "--json", "--server"])
        .arg(format!("http://127.0.0.1:{}", server.flight))
        .arg("--pg")
        .arg(format!("127.0.0.1:{}", server.pg))
        .args(["--table", table, "--mode", mode.name(), "--delimiter"])
        .arg(delimiter.to_string())
        .arg("--bandwidth")
        .arg(args.bandwidth.to_string())
        .arg(file)
        .env("WIRELOAD_USER", USER)
        .env("WIRELOAD_PASSWORD", PASSWORD);
    if lz4 {
        cmd.arg("--lz4");
    }
    if let (Mode::Auto, Some(share)) = (mode, args.text_share) {
        cmd.arg("--text-share").arg(share.to_string());
    }
    if let Some(n) = args.fragments {
        cmd.arg("--fragments").arg(n.to_string());
    }
    let out = cmd.output().context("running wireload push")?;
    let server_cpu_s = process_cpu(server.child.id()) - cpu0;
    let queries_cpu_s = query_runtime_cpu(server.child.id()) - queries_cpu0;
    stop.store(true, Relaxed);
    let latencies = match queries {
        Some(q) => Some(rt.block_on(q)??),
        None => None,
    };
    if !out.status.success() {
        bail!(
            "wireload push --mode {} failed: {}",
            mode.name(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("push's JSON: {}", String::from_utf8_lossy(&out.stdout)))?;
    let num = |k: &str| report[k].as_f64().unwrap_or(0.0);
    let (q1, q2) = latencies.unwrap_or_default();
    Ok(Run {
        seconds: num("seconds"),
        throughput_mb_s: num("throughput_mb_s"),
        bytes_sent: num("bytes_sent"),
        client_cpu_s: num("client_cpu_s"),
        server_cpu_s,
        server_load_cpu_s: num("server_cpu_s"),
        server_beside_queries_cpu_s: server_cpu_s - queries_cpu_s,
        q1: Tail::of(&q1),
        q2: Tail::of(&q2),
        encoded: num("encoded_fragment_columns") / num("encodable_fragment_columns").max(1.0),
        text: num("text_bytes") / num("file_bytes").max(1.0),
        client_steps: steps_of(&report["client_steps"]),
        server_steps: steps_of(&report["server_steps"]),
    })
}

/// A push report's steps object as name -> CPU seconds.
fn steps_of(v: &serde_json::Value) -> BTreeMap<String, f64> {
    v.as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Seconds the query load runs alone, with no load beside it, in each round of a cell.
const QUERIES_ALONE_SECONDS: u64 = 8;

/// The latencies of Q1 and Q2 run alone for [`QUERIES_ALONE_SECONDS`].
fn queries_alone(rt: &tokio::runtime::Runtime, server: &Server) -> Result<(Tail, Tail)> {
    let stop = Arc::new(AtomicBool::new(false));
    let (pg, flag) = (server.pg, Arc::clone(&stop));
    let queries = rt.spawn(async move { query_load(pg, flag, Instant::now()).await });
    std::thread::sleep(Duration::from_secs(QUERIES_ALONE_SECONDS));
    stop.store(true, Relaxed);
    let (q1, q2) = rt.block_on(queries)??;
    Ok((Tail::of(&q1), Tail::of(&q2)))
}

/// A query's latencies: when its batch started (seconds from an origin) and ms.
type Latencies = Vec<(f64, f64)>;

/// Q1 and Q2 in batches of 10 (alternating) until `stop`; when each batch started (seconds
/// after `origin`) and each query's latency in ms.
async fn query_load(
    pg: u16,
    stop: Arc<AtomicBool>,
    origin: Instant,
) -> Result<(Latencies, Latencies)> {
    let mut clients = Vec::new();
    for _ in 0..10 {
        clients.push(Arc::new(connect(pg).await?));
    }
    let (mut q1, mut q2) = (Vec::new(), Vec::new());
    let mut batch = 0usize;
    while !stop.load(Relaxed) {
        let q = if batch.is_multiple_of(2) { Q1 } else { Q2 };
        let start = origin.elapsed().as_secs_f64();
        // the batch at once, then wait for all of it
        let runs: Vec<_> = clients
            .iter()
            .map(|c| {
                let c = Arc::clone(c);
                tokio::spawn(async move {
                    let t0 = Instant::now();
                    c.simple_query(q).await?;
                    Ok::<_, tokio_postgres::Error>(t0.elapsed().as_secs_f64() * 1000.0)
                })
            })
            .collect();
        for r in runs {
            let t = (start, r.await??);
            if batch.is_multiple_of(2) {
                q1.push(t);
            } else {
                q2.push(t);
            }
        }
        batch += 1;
    }
    Ok((q1, q2))
}
