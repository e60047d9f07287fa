//! `wireload serve` as a user starts it: one line with the user in the environment, an init
//! script that creates and loads a table, psql and ADBC clients, and SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server, started with `args`, stopped (SIGKILL) when dropped if still running.
struct Served(Child);

/// The port `key` (postgres or flight) of the server that wrote `log`: it listens on port
/// 0 and its ready line, the last, names the port it got.
fn port(log: &[String], key: &str) -> u16 {
    let line = log.last().expect("a ready line");
    wireload_clients::logged_port(line, key).unwrap_or_else(|| panic!("no {key} port in {line}"))
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `wireload serve` and waits until it says it is ready; returns it and its log.
fn serve(args: &[&str], env: &[(&str, &str)]) -> (Served, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wireload"))
        .arg("--threads")
        .arg("2")
        .arg("serve")
        .args(args)
        .env_remove("WIRELOAD_USER")
        .env_remove("WIRELOAD_PASSWORD")
        .envs(env.iter().copied())
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut log = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match lines.next() {
            Some(Ok(line)) => {
                let ready = line.contains("wireload serve is ready");
                log.push(line);
                if ready {
                    // keep draining stderr so the server never blocks on it
                    std::thread::spawn(move || for _ in lines.by_ref() {});
                    return (Served(child), log);
                }
            }
            _ => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the server did not get ready:\n{}", log.join("\n"));
}

/// `wireload serve` on ports of its own for user ops/pw, with `extra` flags and an init
/// script (in `dir`) that creates `table` (`name (columns)`) and loads `csv` into it; returns
/// it, its PostgreSQL and Flight ports, and its log.
fn serve_loaded(
    dir: &std::path::Path,
    table: &str,
    csv: &str,
    extra: &[&str],
) -> (Served, (u16, u16), Vec<String>) {
    let file = dir.join("data.csv");
    std::fs::write(&file, csv).unwrap();
    let init = dir.join("init.sql");
    let name = table.split_whitespace().next().unwrap();
    std::fs::write(
        &init,
        format!(
            "CREATE TABLE {table};\nCOPY {name} FROM '{}';\n",
            file.display()
        ),
    )
    .unwrap();
    let mut args = vec![
        "--listen",
        "127.0.0.1:0",
        "--flight-listen",
        "127.0.0.1:0",
        "--init",
        init.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (served, log) = serve(
        &args,
        &[("WIRELOAD_USER", "ops"), ("WIRELOAD_PASSWORD", "pw")],
    );
    let ports = (port(&log, "postgres"), port(&log, "flight"));
    (served, ports, log)
}

fn psql(port: u16, user: &str, password: &str, sql: &str) -> std::process::Output {
    Command::new(wireload_clients::psql())
        .arg(format!(
            "host=127.0.0.1 port={port} user={user} dbname=wireload sslmode=disable"
        ))
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .env("PGPASSWORD", password)
        .output()
        .unwrap()
}

#[test]
fn serve_starts_from_the_environment_runs_init_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (mut served, (port, flight), log) = serve_loaded(
        dir.path(),
        "cities (id INT PRIMARY KEY, name TEXT)",
        "1,Lyon\n2,Zürich\n3,Kyoto\n",
        &[],
    );
    assert!(
        log.iter().any(|l| l.contains("init: loaded 3 rows")),
        "{log:?}"
    );
    let out = psql(port, "ops", "pw", "SELECT name FROM cities ORDER BY id");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Lyon\nZürich\nKyoto\n"
    );
    let out = psql(port, "ops", "wrong", "SELECT 1");
    assert!(!out.status.success());
    // Arrow Flight SQL on its port, same user
    let script = format!(
        "import adbc_driver_flightsql.dbapi as f\n\
         c = f.connect('grpc://127.0.0.1:{flight}', db_kwargs={{'username': 'ops', 'password': 'pw'}})\n\
         cur = c.cursor(); cur.execute('SELECT count(*) AS n FROM cities')\n\
         print(cur.fetch_arrow_table().column('n')[0].as_py())\n"
    );
    let out = Command::new(wireload_clients::python())
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "3");
    // SIGTERM: a clean exit
    let pid = served.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = served.0.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn serve_refuses_to_start_without_users_or_trust() {
    let out = Command::new(env!("CARGO_BIN_EXE_wireload"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-flight"])
        .env_remove("WIRELOAD_USER")
        .env_remove("WIRELOAD_PASSWORD")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no users") && err.contains("--trust-local"),
        "{err}"
    );
}

#[test]
fn serve_takes_a_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        "listen = \"127.0.0.1:0\"\n[limits]\nmax_connections = 1\n[[users]]\nname = \"cfg\"\npassword = \"secret\"\n",
    )
    .unwrap();
    let (_served, log) = serve(&["--config", config.to_str().unwrap(), "--no-flight"], &[]);
    let port = port(&log, "postgres");
    let out = psql(port, "cfg", "secret", "SELECT 'configured'");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "configured");
    // while one connection is open (psql waiting for input), a second is over the limit
    let mut first = Command::new(wireload_clients::psql())
        .arg(format!(
            "host=127.0.0.1 port={port} user=cfg dbname=wireload sslmode=disable"
        ))
        .args(["-X", "-q"])
        .env("PGPASSWORD", "secret")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let out = psql(port, "cfg", "secret", "SELECT 1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("too many clients"),
        "{err}"
    );
    drop(first.stdin.take());
    let _ = first.wait();
    std::thread::sleep(Duration::from_millis(300));
    let out = psql(port, "cfg", "secret", "SELECT 2");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The nice value of each thread of process `pid`, by thread name.
fn thread_nices(pid: u32) -> Vec<(String, i64)> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| {
            let name = std::fs::read_to_string(t.path().join("comm")).ok()?;
            let stat = std::fs::read_to_string(t.path().join("stat")).ok()?;
            // after the command's ")": state is field 3, nice field 19
            let rest = stat.rsplit_once(')')?.1;
            let nice = rest.split_whitespace().nth(16)?.parse().ok()?;
            Some((name.trim().to_string(), nice))
        })
        .collect()
}

#[test]
fn load_nice_lowers_the_load_threads_and_not_the_query_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (served, (port, _), _) = serve_loaded(
        dir.path(),
        "t (id INT, name TEXT)",
        "1,a\n2,b\n",
        &["--load-nice", "7"],
    );
    let out = psql(port, "ops", "pw", "INSERT INTO t VALUES (3, 'c')");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let nices = thread_nices(served.0.id());
    let of = |prefix: &str| -> Vec<i64> {
        nices
            .iter()
            .filter(|(n, _)| n.starts_with(prefix))
            .map(|&(_, v)| v)
            .collect()
    };
    // the init script's COPY ran on the load pool (`--threads 2`), pushes on Flight's runtime
    let (loads, flights, queries) = (
        of("wireload-2t-"),
        of("wireload-flight"),
        of("tokio-rt-worker"),
    );
    assert!(
        !loads.is_empty() && !flights.is_empty() && !queries.is_empty(),
        "{nices:?}"
    );
    assert!(loads.iter().chain(&flights).all(|&n| n == 7), "{nices:?}");
    assert!(queries.iter().all(|&n| n == 0), "{nices:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_wireload"))
        .args(["serve", "--load-nice", "20"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--load-nice"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
