//! `wireload push` as a user runs it, against `wireload serve` started by the test: every
//! mode loads lineitem (TPC-H SF 0.01) and a wide table exactly as a local COPY loads them
//! (the same rows in the same order, the same dictionaries), errors are found on the client
//! and name the place, a push into a table changes nothing when it fails, two clients
//! pushing at once give the union, a push over TLS trusts only the certificate it is
//! given, a payload arrow's IPC decoder panics on is refused and logged as one warning, and
//! a push of many small partitions ends (a regression), and a client's large partitions are
//! kept as dictionary runs of their own.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USER: &str = "pat";
const PASSWORD: &str = "push it";

/// The server, killed when dropped.
struct Served {
    child: Child,
    pg: u16,
    flight: u16,
    /// psql's sslmode for the server
    sslmode: &'static str,
    /// what it has written to stderr so far
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `wireload serve` with user pat and `init`, waits until it is ready.
fn serve(init: &Path) -> Served {
    serve_with::<&str>(init, &[])
}

/// Starts `wireload serve` with user pat, `init` and `extra` flags, waits until it is
/// ready.
fn serve_with<S: AsRef<OsStr>>(init: &Path, extra: &[S]) -> Served {
    let tls = extra.iter().any(|a| a.as_ref() == "--tls-cert");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wireload"))
        .args(["--threads", "2", "serve", "--listen"])
        .arg("127.0.0.1:0")
        .arg("--flight-listen")
        .arg("127.0.0.1:0")
        .arg("--init")
        .arg(init)
        .args(extra)
        .env("WIRELOAD_USER", USER)
        .env("WIRELOAD_PASSWORD", PASSWORD)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut log = Vec::new();
    while Instant::now() < deadline {
        match lines.next() {
            Some(Ok(line)) => {
                let ready = line.contains("wireload serve is ready");
                log.push(line);
                if ready {
                    // it listens on port 0 and names the ports it got
                    let port = |key| {
                        wireload_clients::logged_port(log.last().unwrap(), key)
                            .unwrap_or_else(|| panic!("no {key} port in {log:?}"))
                    };
                    let (pg, flight) = (port("postgres"), port("flight"));
                    let log = Arc::new(Mutex::new(log));
                    let kept = Arc::clone(&log);
                    std::thread::spawn(move || {
                        for line in lines.map_while(Result::ok) {
                            kept.lock().unwrap().push(line);
                        }
                    });
                    let sslmode = if tls { "require" } else { "disable" };
                    return Served {
                        child,
                        pg,
                        flight,
                        sslmode,
                        log,
                    };
                }
            }
            _ => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the server did not get ready:\n{}", log.join("\n"));
}

/// `wireload push` with `args`.
fn push(server: &Served, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wireload"))
        .args(["--threads", "2", "push", "--server"])
        .arg(format!("http://127.0.0.1:{}", server.flight))
        .arg("--pg")
        .arg(format!("127.0.0.1:{}", server.pg))
        .args(args)
        .env("WIRELOAD_USER", USER)
        .env("WIRELOAD_PASSWORD", PASSWORD)
        .output()
        .unwrap()
}

/// psql's unaligned output of `sql`.
fn psql(server: &Served, sql: &str) -> String {
    let out = Command::new(wireload_clients::psql())
        .arg(format!(
            "host=127.0.0.1 port={} user={USER} dbname=wireload sslmode={}",
            server.pg, server.sslmode
        ))
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .env("PGPASSWORD", PASSWORD)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "push failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const LINEITEM: &str = "l_orderkey BIGINT NOT NULL, l_partkey INTEGER NOT NULL, \
    l_suppkey INTEGER NOT NULL, l_linenumber INTEGER NOT NULL, \
    l_quantity DECIMAL(15,2) NOT NULL, l_extendedprice DECIMAL(15,2) NOT NULL, \
    l_discount DECIMAL(15,2) NOT NULL, l_tax DECIMAL(15,2) NOT NULL, \
    l_returnflag CHAR(1) NOT NULL, l_linestatus CHAR(1) NOT NULL, l_shipdate DATE NOT NULL, \
    l_commitdate DATE NOT NULL, l_receiptdate DATE NOT NULL, \
    l_shipinstruct CHAR(25) NOT NULL, l_shipmode CHAR(10) NOT NULL, \
    l_comment VARCHAR(44) NOT NULL";

/// A wide table's columns and `rows` rows of it: repeating codes and names, unique ids,
/// NULLs, quoted text with the delimiter.
fn wide(rows: usize) -> (String, String) {
    let mut cols = vec!["id BIGINT NOT NULL".to_string()];
    for i in 0..12 {
        cols.push(format!("code{i} VARCHAR(20)"));
        cols.push(format!("n{i} INTEGER"));
        cols.push(format!("d{i} DATE"));
    }
    cols.push("note TEXT".into());
    let mut text = String::new();
    for r in 0..rows {
        text.push_str(&r.to_string());
        for i in 0..12 {
            let k = (r * (i + 3)) % (7 + i * 40);
            if (r + i) % 13 == 0 {
                text.push_str(",,,");
            } else {
                text.push_str(&format!(
                    ",c{i}-{k},{},2024-{:02}-{:02}",
                    (r % (5 + i * 1000)) as i64 - 50,
                    1 + k % 12,
                    1 + k % 28
                ));
            }
        }
        text.push_str(&format!(",\"note {r}, with a comma\"\n"));
    }
    (cols.join(", "), text)
}

/// TPC-H SF 0.01 generated into `dir`; its lineitem file.
fn tpch_lineitem(dir: &Path) -> std::path::PathBuf {
    let generated = Command::new(env!("CARGO_BIN_EXE_wireload"))
        .args(["gen", "tpch", "--sf", "0.01", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    dir.join("lineitem.tbl")
}

#[test]
fn every_mode_loads_what_a_local_copy_loads() {
    let dir = tempfile::tempdir().unwrap();
    let lineitem = tpch_lineitem(dir.path());
    let (wide_cols, wide_text) = wide(30_000);
    let wide_csv = dir.path().join("wide.csv");
    std::fs::write(&wide_csv, &wide_text).unwrap();
    // "text" and "half": auto sending every window or every other one as text
    let modes = ["all", "size", "none", "auto", "seq", "pipe", "text", "half"];
    let mut init = String::new();
    for (name, cols, file, delim) in [
        ("li", LINEITEM.to_string(), &lineitem, "|"),
        ("wide", wide_cols.clone(), &wide_csv, ","),
    ] {
        init.push_str(&format!(
            "CREATE TABLE {name}_ref ({cols}) WITH (COMPRESSION = dictionary);\n\
             COPY {name}_ref FROM '{}' WITH (FORMAT csv, DELIMITER '{delim}');\n",
            file.display()
        ));
        for m in modes.iter().chain(&["lz4"]) {
            init.push_str(&format!(
                "CREATE TABLE {name}_{m} ({cols}) WITH (COMPRESSION = dictionary);\n"
            ));
        }
    }
    let init_file = dir.path().join("init.sql");
    std::fs::write(&init_file, init).unwrap();
    let server = serve(&init_file);
    for (name, file, delim) in [("li", &lineitem, "|"), ("wide", &wide_csv, ",")] {
        let expected = psql(&server, &format!("SELECT * FROM {name}_ref"));
        let columns = |t: &str| {
            psql(
                &server,
                &format!(
                    "SELECT column_name, storage, dictionary_entries FROM wireload_columns \
                     WHERE table_name = '{t}'"
                ),
            )
        };
        let expected_columns = columns(&format!("{name}_ref"));
        for m in modes.iter().chain(&["lz4"]) {
            let table = format!("{name}_{m}");
            let mode = match *m {
                "lz4" => "size",
                "text" | "half" => "auto",
                m => m,
            };
            // small fragments and partitions: several of each
            let mut args = vec![
                "--table",
                &table,
                "--mode",
                mode,
                "--delimiter",
                delim,
                "--chunk-mib",
                "1",
                "--fragments",
                "2",
                "--json",
            ];
            if *m == "lz4" {
                args.push("--lz4");
            }
            match *m {
                "text" => args.extend(["--text-share", "1", "--lz4"]),
                "half" => args.extend(["--text-share", "0.5"]),
                _ => {}
            }
            args.push(file.to_str().unwrap());
            let report: serde_json::Value =
                serde_json::from_str(&ok(&push(&server, &args))).unwrap();
            let rows = psql(&server, &format!("SELECT count(*) FROM {table}"));
            assert_eq!(
                report["rows"].as_u64().unwrap().to_string(),
                rows.trim(),
                "{table}: {report}"
            );
            assert!(
                psql(&server, &format!("SELECT * FROM {table}")) == expected,
                "{table} differs from a local load"
            );
            assert_eq!(columns(&table), expected_columns, "{table}'s storage");
            if ["all", "size", "none", "auto", "text", "half"].contains(m) {
                assert!(report["bytes_sent"].as_u64().unwrap() > 0, "{report}");
                assert!(report["server_cpu_s"].as_f64().unwrap() > 0.0, "{report}");
            }
            // the windows sent as text: all of them, or about every other one
            let windows = report["text_fragments"].as_u64().unwrap();
            match *m {
                "text" => {
                    assert!(windows >= 2, "{report}");
                    assert_eq!(
                        report["text_bytes"].as_u64(),
                        report["file_bytes"].as_u64(),
                        "{report}"
                    );
                }
                "half" => assert!(windows >= 1, "{report}"),
                "auto" => {}
                _ => assert_eq!(windows, 0, "{report}"),
            }
            if *m == "all" {
                assert_eq!(
                    report["encoded_fragment_columns"], report["encodable_fragment_columns"],
                    "{report}"
                );
            }
            if *m == "none" {
                assert_eq!(report["encoded_fragment_columns"], 0, "{report}");
            }
            if *m != "pipe" {
                // the server's accounting of the load, as SQL sees it
                let load = psql(
                    &server,
                    &format!(
                        "SELECT rows, cpu_seconds > 0, steps LIKE '%merge%' \
                         FROM wireload_loads WHERE table_name = '{table}'"
                    ),
                );
                let rows = report["rows"].as_u64().unwrap();
                let steps_named = if *m == "seq" { "f" } else { "t" };
                assert_eq!(load.trim(), format!("{rows}|t|{steps_named}"), "{table}");
            }
        }
    }
}

/// A table stored plain, pushed to, holds its columns in buffers of their own: as many
/// bytes as the local COPY's table (a column kept as a slice of the fragment's frame held,
/// and was counted with, every column of the fragment).
#[test]
fn a_plain_table_pushed_to_holds_what_a_copy_holds() {
    let dir = tempfile::tempdir().unwrap();
    let lineitem = tpch_lineitem(dir.path());
    let mut init = String::new();
    for t in ["copied", "all", "none"] {
        init.push_str(&format!("CREATE TABLE {t} ({LINEITEM});\n"));
    }
    init.push_str(&format!(
        "COPY copied FROM '{}' WITH (FORMAT csv, DELIMITER '|');\n",
        lineitem.display()
    ));
    let init_file = dir.path().join("init.sql");
    std::fs::write(&init_file, init).unwrap();
    let server = serve(&init_file);
    let file = lineitem.to_str().unwrap();
    for mode in ["all", "none"] {
        let args = ["--table", mode, "--mode", mode, "--delimiter", "|", file];
        ok(&push(&server, &args));
    }
    let bytes = |t: &str| -> u64 {
        psql(
            &server,
            &format!("SELECT sum(bytes) FROM wireload_columns WHERE table_name = '{t}'"),
        )
        .trim()
        .parse()
        .unwrap()
    };
    let copied = bytes("copied");
    for t in ["all", "none"] {
        let count = |t: &str| psql(&server, &format!("SELECT count(*) FROM {t}"));
        assert_eq!(count(t), count("copied"));
        assert_eq!(
            psql(
                &server,
                &format!("SELECT * FROM {t} EXCEPT ALL SELECT * FROM copied")
            ),
            ""
        );
        let pushed = bytes(t);
        // capacities differ with how buffers grew; a frame's buffer per column is 16x
        assert!(
            pushed as f64 <= copied as f64 * 1.25,
            "{t}: {pushed} bytes, the copy {copied}"
        );
    }
}

#[test]
fn bad_input_is_named_on_the_client_and_loads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.csv");
    let bad = dir.path().join("bad.csv");
    let mut text = String::new();
    for i in 0..5000 {
        text.push_str(&format!("{i},name{}\n", i % 17));
    }
    std::fs::write(&good, &text).unwrap();
    text.push_str("5000,x\n5001,y\nnot a number,z\n");
    std::fs::write(&bad, &text).unwrap();
    let init = dir.path().join("init.sql");
    std::fs::write(
        &init,
        "CREATE TABLE t (id INT NOT NULL, name TEXT) WITH (COMPRESSION = dictionary);\n\
         CREATE TABLE k (id INT PRIMARY KEY, name TEXT COMPRESSION dictionary);\n",
    )
    .unwrap();
    let server = serve(&init);
    // "text": auto sending every window as text, the server finding the bad value
    for mode in ["all", "size", "none", "seq", "pipe", "text"] {
        let mut args = vec!["--table", "t"];
        match mode {
            "text" => args.extend(["--mode", "auto", "--text-share", "1"]),
            m => args.extend(["--mode", m]),
        }
        args.extend([good.to_str().unwrap(), bad.to_str().unwrap()]);
        let out = push(&server, &args);
        assert!(!out.status.success(), "{mode}: a bad file loaded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("line 5003"), "{mode}: {err}");
        if mode != "pipe" {
            assert!(err.contains("bad.csv"), "{mode}: {err}");
        }
        assert!(err.contains("not a number"), "{mode}: {err}");
        assert_eq!(
            psql(&server, "SELECT count(*) FROM t").trim(),
            "0",
            "{mode}"
        );
    }
    // a duplicate key across the two files: refused by the server, nothing loaded
    let out = push(
        &server,
        &[
            "--table",
            "k",
            "--mode",
            "all",
            good.to_str().unwrap(),
            good.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("duplicate"), "{err}");
    assert_eq!(psql(&server, "SELECT count(*) FROM k").trim(), "0");
    // unknown table, wrong password
    let out = push(&server, &["--table", "nope", good.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    let out = push(
        &server,
        &[
            "--table",
            "t",
            "--password",
            "wrong",
            good.to_str().unwrap(),
        ],
    );
    assert!(!out.status.success());
    assert_eq!(psql(&server, "SELECT count(*) FROM t").trim(), "0");
}

#[test]
fn text_fragments_of_files_with_a_header_load_alike_and_name_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    // records of two lines each (a quoted line break): windows are cut between records
    let records = |from: usize, n: usize| {
        (from..from + n)
            .map(|i| format!("{i},\"name {}\nline two\",{i}.5\n", i % 97))
            .collect::<String>()
    };
    let header = "id,name,x\n";
    let (a, b, bad) = (
        dir.path().join("a.csv"),
        dir.path().join("b.csv"),
        dir.path().join("bad.csv"),
    );
    std::fs::write(&a, format!("{header}{}", records(0, 150_000))).unwrap();
    let b_text = format!("{header}{}", records(150_000, 150_000));
    std::fs::write(&b, &b_text).unwrap();
    // the bad record is the file's last: after the header's line and two per record
    std::fs::write(&bad, format!("{b_text}oops,\"x\",1\n")).unwrap();
    let (bad_line, bad_byte) = (1 + 2 * 150_000 + 1, b_text.len());
    let cols = "id INT NOT NULL, name TEXT, x DOUBLE";
    let init = dir.path().join("init.sql");
    std::fs::write(
        &init,
        format!(
            "CREATE TABLE r ({cols}) WITH (COMPRESSION = dictionary);\n\
             COPY r FROM '{}' WITH (FORMAT csv, HEADER true);\n\
             COPY r FROM '{}' WITH (FORMAT csv, HEADER true);\n\
             CREATE TABLE t ({cols}) WITH (COMPRESSION = dictionary);\n",
            a.display(),
            b.display()
        ),
    )
    .unwrap();
    let server = serve(&init);
    let args = |second: &Path| {
        vec![
            "--table".to_string(),
            "t".into(),
            "--mode".into(),
            "auto".into(),
            "--text-share".into(),
            "1".into(),
            "--header".into(),
            "--chunk-mib".into(),
            "1".into(),
            "--json".into(),
            a.display().to_string(),
            second.display().to_string(),
        ]
    };
    let bad_args = args(&bad);
    let out = push(
        &server,
        &bad_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(!out.status.success(), "a bad file loaded");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.csv")
            && err.contains(&format!("line {bad_line}"))
            && err.contains(&format!("byte {bad_byte}"))
            && err.contains("oops"),
        "{err}"
    );
    assert_eq!(psql(&server, "SELECT count(*) FROM t").trim(), "0");
    let good_args = args(&b);
    let report: serde_json::Value = serde_json::from_str(&ok(&push(
        &server,
        &good_args.iter().map(String::as_str).collect::<Vec<_>>(),
    )))
    .unwrap();
    assert!(report["text_fragments"].as_u64().unwrap() >= 4, "{report}");
    assert_eq!(report["rows"], 300_000, "{report}");
    assert!(
        psql(&server, "SELECT * FROM t") == psql(&server, "SELECT * FROM r"),
        "the text push differs from local loads"
    );
}

#[test]
fn two_clients_at_once_give_the_union_and_a_killed_one_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let rows = |from: usize| {
        (from..from + 200_000)
            .map(|i| format!("{i},v{}\n", i % 1000))
            .collect::<String>()
    };
    std::fs::write(&a, rows(0)).unwrap();
    std::fs::write(&b, rows(200_000)).unwrap();
    let init = dir.path().join("init.sql");
    std::fs::write(
        &init,
        "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT) WITH (COMPRESSION = dictionary);\n",
    )
    .unwrap();
    let server = serve(&init);
    let spawn = |file: &Path, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_wireload"))
            .args(["--threads", "1", "push", "--server"])
            .arg(format!("http://127.0.0.1:{}", server.flight))
            .args([
                "--table",
                "t",
                "--mode",
                "size",
                "--chunk-mib",
                "1",
                "--fragments",
                "2",
            ])
            .args(extra)
            .arg(file)
            .env("WIRELOAD_USER", USER)
            .env("WIRELOAD_PASSWORD", PASSWORD)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (ca, cb) = (spawn(&a, &[]), spawn(&b, &[]));
    for c in [ca, cb] {
        ok(&c.wait_with_output().unwrap());
    }
    assert_eq!(
        psql(
            &server,
            "SELECT count(*), count(DISTINCT id), sum(id) FROM t"
        )
        .trim(),
        format!("400000|400000|{}", (0..400_000u64).sum::<u64>())
    );
    // a client killed while it sends (slowed to 8 Mbit/s): the table stays as it was
    let mut slow = spawn(&a, &["--bandwidth", "8mbit"]);
    std::thread::sleep(Duration::from_millis(1500));
    slow.kill().unwrap();
    let _ = slow.wait();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(psql(&server, "SELECT count(*) FROM t").trim(), "400000");
}

/// A server with tables `pushed` and `copied` of lineitem (TPC-H SF 0.01, `copies` times in
/// one file), `copied` loaded from the file by a local COPY; the file, and the directory
/// that holds it.
fn lineitem_copies(copies: usize) -> (tempfile::TempDir, std::path::PathBuf, Served) {
    let dir = tempfile::tempdir().unwrap();
    let once = std::fs::read(tpch_lineitem(dir.path())).unwrap();
    let file = dir.path().join(format!("lineitem{copies}.tbl"));
    std::fs::write(&file, once.repeat(copies)).unwrap();
    let init = dir.path().join("init.sql");
    std::fs::write(
        &init,
        format!(
            "CREATE TABLE pushed ({LINEITEM}) WITH (COMPRESSION = dictionary);\n\
             CREATE TABLE copied ({LINEITEM}) WITH (COMPRESSION = dictionary);\n\
             COPY copied FROM '{}' WITH (FORMAT csv, DELIMITER '|');\n",
            file.display()
        ),
    )
    .unwrap();
    let server = serve(&init);
    (dir, file, server)
}

/// Regression (a push that hung): a streamed file's windows often end in a chunk that holds
/// no record start, and the client's parse stage hands it over as an empty piece. The
/// compress stage counted such a piece as sent only when it was not the one that filled its
/// partition, so the parse's bound on pieces in flight drifted by one per such piece until
/// the parse waited for room that never came: lineitem SF1 with `--fragments 2` hung after
/// 4.5 million rows; with one-fragment partitions and one partition in flight, two such
/// pieces were enough.
#[test]
fn a_push_counts_empty_chunks_against_its_bound_and_does_not_hang() {
    // three copies of lineitem: about 22 MB, a few dozen 1 MiB chunks and several windows
    let (_dir, file, server) = lineitem_copies(3);
    let mut child = Command::new(env!("CARGO_BIN_EXE_wireload"))
        .args(["--threads", "2", "push", "--server"])
        .arg(format!("http://127.0.0.1:{}", server.flight))
        .args(["--table", "pushed", "--mode", "all", "--delimiter", "|"])
        .args([
            "--chunk-mib",
            "1",
            "--fragments",
            "1",
            "--partitions-in-flight",
            "1",
        ])
        .arg(&file)
        .env("WIRELOAD_USER", USER)
        .env("WIRELOAD_PASSWORD", PASSWORD)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the push did not end within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    ok(&child.wait_with_output().unwrap());
    let sums = |t: &str| {
        psql(
            &server,
            &format!("SELECT count(*), sum(l_orderkey), sum(l_extendedprice) FROM {t}"),
        )
    };
    assert_eq!(sums("pushed"), sums("copied"));
    assert_eq!(
        psql(&server, "SELECT count(*) FROM copied").trim(),
        std::fs::read(&file)
            .unwrap()
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            .to_string()
    );
}

/// A client's partitions of more than 2^16 rows are kept as dictionary runs of their own
/// (the server merges no dictionaries): the table reads back as a local COPY of the file
/// does, with one run per partition (`l_returnflag`'s 3 values repeated in each).
#[test]
fn large_pushed_partitions_become_runs_and_load_what_a_copy_loads() {
    // five copies of lineitem: 300,000 rows, about 36 MB
    let (_dir, file, server) = lineitem_copies(5);
    // 1 MiB fragments, 12 a partition: about 100,000 rows each
    ok(&push(
        &server,
        &[
            "--table",
            "pushed",
            "--mode",
            "all",
            "--delimiter",
            "|",
            "--chunk-mib",
            "1",
            "--fragments",
            "12",
            file.to_str().unwrap(),
        ],
    ));
    assert!(
        psql(&server, "SELECT * FROM pushed") == psql(&server, "SELECT * FROM copied"),
        "the pushed table differs from a local load"
    );
    let entries = |t: &str| -> u64 {
        psql(
            &server,
            &format!(
                "SELECT dictionary_entries FROM wireload_columns \
                 WHERE table_name = '{t}' AND column_name = 'l_returnflag'"
            ),
        )
        .trim()
        .parse()
        .unwrap()
    };
    assert_eq!(entries("copied"), 3);
    let runs = entries("pushed") / 3;
    assert!((2..=4).contains(&runs), "{runs} runs");
    // a filter on codes reads every run
    assert_eq!(
        psql(
            &server,
            "SELECT count(*) FROM pushed WHERE l_returnflag = 'R'"
        ),
        psql(
            &server,
            "SELECT count(*) FROM copied WHERE l_returnflag = 'R'"
        )
    );
}

#[test]
fn a_push_over_tls_trusts_the_certificate_it_is_given_only() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = wireload_clients::self_signed_end_entity(dir.path());
    // a certificate of somebody else: a client that trusts only it does not trust the server
    let other_dir = dir.path().join("other");
    std::fs::create_dir(&other_dir).unwrap();
    let (other, _) = wireload_clients::self_signed_end_entity(&other_dir);
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let rows = |from: usize| {
        let mut text = String::from("id,v\n");
        for i in from..from + 10_000 {
            text.push_str(&format!("{i},v{}\n", i % 100));
        }
        text
    };
    std::fs::write(&a, rows(0)).unwrap();
    std::fs::write(&b, rows(10_000)).unwrap();
    let init = dir.path().join("init.sql");
    std::fs::write(
        &init,
        "CREATE TABLE t (id BIGINT NOT NULL, v TEXT) WITH (COMPRESSION = dictionary);\n",
    )
    .unwrap();
    let server = serve_with(
        &init,
        &[
            OsStr::new("--tls-cert"),
            cert.as_os_str(),
            OsStr::new("--tls-key"),
            key.as_os_str(),
        ],
    );
    let push_tls = |trusted: &Path, mode: &str| {
        Command::new(env!("CARGO_BIN_EXE_wireload"))
            .args(["--threads", "2", "push", "--server"])
            .arg(format!("https://127.0.0.1:{}", server.flight))
            .args(["--table", "t", "--mode", mode, "--header"])
            .args([&a, &b])
            .env("SSL_CERT_FILE", trusted)
            .env("WIRELOAD_USER", USER)
            .env("WIRELOAD_PASSWORD", PASSWORD)
            .output()
            .unwrap()
    };
    let mut total = 0;
    for mode in ["all", "none", "seq"] {
        let out = ok(&push_tls(&cert, mode));
        assert!(out.contains("pushed 20000 rows"), "{mode}: {out}");
        total += 20_000;
        assert_eq!(
            psql(&server, "SELECT count(*), count(DISTINCT id) FROM t").trim(),
            format!("{total}|20000"),
            "{mode}"
        );
    }
    // a client that does not trust the server's certificate is refused before it sends
    let out = push_tls(&other, "all");
    assert!(!out.status.success(), "an untrusted server was pushed to");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("certificate"), "{err}");
    assert_eq!(
        psql(&server, "SELECT count(*) FROM t").trim(),
        total.to_string()
    );
}

/// A fragment payload of table t (`id INT NOT NULL, name TEXT`) that arrow's IPC decoder
/// panics on: one bit of a valid payload flipped (a validity buffer too short for its
/// array), found by trying every flip.
fn payload_arrow_panics_on() -> Vec<u8> {
    use wireload_push::protocol::{decode_batch, encode_batch};
    let batch = arrow::record_batch::RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(arrow::array::Int32Array::from(vec![1, 2, 3])) as arrow::array::ArrayRef,
        ),
        (
            "name",
            Arc::new(arrow::array::StringArray::from(vec![
                Some("x"),
                None,
                Some("zzz"),
            ])),
        ),
    ])
    .unwrap();
    let valid = encode_batch(&batch, false).unwrap();
    for at in 0..valid.len() {
        for bit in 0..8 {
            let mut forged = valid.clone();
            forged[at] ^= 1 << bit;
            if let Err(e) = decode_batch(&forged.clone().into())
                && e.to_string().contains("buffer not large enough")
            {
                return forged;
            }
        }
    }
    panic!("no flip of the payload makes arrow's decoder panic")
}

/// Sends a push into t in mode all: one fragment frame of `payload` and the end frame; the
/// server's error, if any.
fn push_fragment(server: &Served, payload: Vec<u8>) -> Result<(), String> {
    use arrow_flight::flight_service_client::FlightServiceClient;
    use arrow_flight::{FlightData, FlightDescriptor};
    use base64::Engine;
    use futures::StreamExt;
    use prost::Message;
    use wireload_push::protocol::{Frame, Hello, Mode, PUSH_TYPE_URL, to_json};
    let hello = Hello {
        table: "t".into(),
        mode: Mode::All,
        file: "forged.csv".into(),
        files: Vec::new(),
        dialect: None,
    };
    let any = arrow_flight::sql::Any {
        type_url: PUSH_TYPE_URL.into(),
        value: to_json(&hello).into(),
    };
    let frames = [
        (
            Frame::Fragment {
                partition: 0,
                fragment: 0,
                rows: 3,
                encoded: Vec::new(),
            },
            payload,
        ),
        (
            Frame::End {
                fragments: 1,
                rows: 3,
                bytes: 10,
            },
            Vec::new(),
        ),
    ];
    let mut data = vec![FlightData {
        flight_descriptor: Some(FlightDescriptor::new_cmd(any.encode_to_vec())),
        ..FlightData::default()
    }];
    data.extend(frames.into_iter().map(|(header, body)| FlightData {
        app_metadata: to_json(&header).into(),
        data_body: body.into(),
        ..FlightData::default()
    }));
    let url = format!("http://127.0.0.1:{}", server.flight);
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let channel = tonic::transport::Endpoint::from_shared(url)
            .unwrap()
            .connect()
            .await
            .map_err(|e| e.to_string())?;
        let mut request = tonic::Request::new(futures::stream::iter(data));
        request
            .metadata_mut()
            .insert("authorization", basic.parse().unwrap());
        let mut replies = FlightServiceClient::new(channel)
            .do_put(request)
            .await
            .map_err(|s| s.message().to_string())?
            .into_inner();
        while let Some(reply) = replies.next().await {
            reply.map_err(|s| s.message().to_string())?;
        }
        Ok(())
    })
}

#[test]
fn a_payload_arrow_panics_on_is_refused_and_logged_as_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("init.sql");
    std::fs::write(&init, "CREATE TABLE t (id INT NOT NULL, name TEXT);\n").unwrap();
    let server = serve(&init);
    let e = push_fragment(&server, payload_arrow_panics_on()).unwrap_err();
    assert!(e.contains("malformed IPC payload"), "{e}");
    assert_eq!(psql(&server, "SELECT count(*) FROM t").trim(), "0");
    // the server's log: one warning naming the refusal, not a crash report
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = server.log.lock().unwrap().join("\n");
        if log.contains("refused malformed Arrow IPC input") {
            assert!(!log.contains("panicked at"), "{log}");
            assert!(!log.contains("RUST_BACKTRACE"), "{log}");
            break;
        }
        assert!(Instant::now() < deadline, "no warning in the log:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
