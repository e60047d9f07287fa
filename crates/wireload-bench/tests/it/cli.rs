//! End-to-end tests of the `wireload-bench` binary: `tpch` at SF 0.01, and `answers` on
//! the answer files it writes.

use std::process::{Command, Output};

use tempfile::TempDir;

/// The `wireload-bench` binary with 2 worker threads.
fn bench() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wireload-bench"));
    cmd.arg("--threads").arg("2");
    cmd
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs the command and asserts it succeeded.
fn ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "failed: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn bench_tpch_reports_json() {
    let dir = TempDir::new().unwrap();
    let answers = dir.path().join("answers");
    let out = ok(bench()
        .args(["tpch", "--sf", "0.01", "--runs", "2", "--json"])
        .arg("--work")
        .arg(dir.path())
        .arg("--answers")
        .arg(&answers));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["threads"], 2);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        let phases: Vec<&str> = run["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["phase"].as_str().unwrap())
            .collect();
        assert_eq!(phases, ["load", "queries", "unload", "reload"]);
        assert_eq!(run["phases"][0]["rows"], 86_805);
        assert_eq!(
            run["phases"][3]["rows"], 86_805,
            "reload brings every row back"
        );
        let queries = run["queries"].as_array().unwrap();
        assert_eq!(queries.len(), 22);
        assert_eq!(queries[0]["rows"], 4, "Q1 has 4 groups");
    }
    let csv = doc["csv_bytes"].as_u64().unwrap();
    let unload = doc["unload_bytes"].as_u64().unwrap();
    assert!(unload > 0 && unload < csv, "{unload} vs {csv}");
    for q in 1..=22 {
        assert!(answers.join(format!("q{q}.csv")).is_file(), "q{q}.csv");
    }
    // only the answers and nothing else is left in the work directory
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}

/// The answers `tpch --answers` writes pass the check against themselves, and a changed
/// value is found.
#[test]
fn answers_checks_answer_files() {
    let dir = TempDir::new().unwrap();
    let answers = dir.path().join("answers");
    ok(bench()
        .args(["tpch", "--sf", "0.01", "--runs", "1", "--json"])
        .arg("--work")
        .arg(dir.path())
        .arg("--answers")
        .arg(&answers));
    let changed = dir.path().join("changed");
    std::fs::create_dir(&changed).unwrap();
    for q in 1..=22 {
        let name = format!("q{q}.csv");
        let mut text = std::fs::read_to_string(answers.join(&name)).unwrap();
        if q == 6 {
            // Q6's one value, a sum of decimals, changed in its last digit
            let mut value = text.trim_end().to_string();
            let last = value.pop().and_then(|c| c.to_digit(10)).unwrap();
            text = format!("{value}{}\n", (last + 1) % 10);
        }
        std::fs::write(changed.join(&name), text).unwrap();
    }
    let out = ok(bench()
        .arg("answers")
        .arg("--expected")
        .arg(&answers)
        .arg(&answers)
        .arg(&changed));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let same = &doc[answers.display().to_string()];
    let other = &doc[changed.display().to_string()];
    for q in 1..=22 {
        let key = q.to_string();
        assert_eq!(same[&key]["ok"], true, "Q{q}: {}", same[&key]);
        assert_eq!(other[&key]["ok"], q != 6, "Q{q}: {}", other[&key]);
    }
    assert_eq!(same["1"]["rows"], 4);
}
