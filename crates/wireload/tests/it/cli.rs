//! End-to-end tests of the `wireload` binary on temporary files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

use crate::common::wireload;

fn file(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn table_arg(name: &str, path: &Path) -> String {
    format!("{name}={}", path.display())
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the command and asserts it succeeded.
fn ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "failed: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(&out),
        stderr(&out)
    );
    out
}

const PEOPLE: &str = "1,alice,2024-01-02\n2,,2024-02-29\n3,\"smith, \"\"jr\"\"\",1999-12-31\n";
const PEOPLE_SCHEMA: &str = "id INT, name VARCHAR, d DATE";

#[test]
fn sql_json_with_schema() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "people.csv", PEOPLE);
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--schema",
            PEOPLE_SCHEMA,
        ])
        .args(["--format", "json", "SELECT * FROM t ORDER BY id"]));
    assert_eq!(
        stdout(&out),
        "[1,\"alice\",\"2024-01-02\"]\n[2,null,\"2024-02-29\"]\n[3,\"smith, \\\"jr\\\"\",\"1999-12-31\"]\n"
    );
    // the load summary goes to stderr
    assert!(
        stderr(&out).contains("loaded 3 rows into t"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sql_json_numbers_and_decimals() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "n.csv", "1,12.50,0.25,true\n-2,-0.05,,false\n");
    let out = ok(wireload()
        .args(["sql", "--table", &table_arg("n", &data)])
        .args([
            "--schema",
            "a BIGINT, p DECIMAL(10,2), f DOUBLE, b BOOLEAN",
            "--format",
            "json",
        ])
        .arg("SELECT a, p, f, b FROM n ORDER BY a"));
    assert_eq!(stdout(&out), "[-2,-0.05,null,false]\n[1,12.50,0.25,true]\n");
}

#[test]
fn sql_csv_output() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "people.csv", PEOPLE);
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--schema",
            PEOPLE_SCHEMA,
            "--format",
            "csv",
        ])
        .arg("SELECT id, name, d FROM t ORDER BY id"));
    assert_eq!(
        stdout(&out),
        "id,name,d\n1,alice,2024-01-02\n2,,2024-02-29\n3,\"smith, \"\"jr\"\"\",1999-12-31\n"
    );
}

#[test]
fn sql_table_output_and_last_result_only() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "people.csv", PEOPLE);
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--schema",
            PEOPLE_SCHEMA,
        ])
        .arg("SELECT 'first' AS x; SELECT id, name FROM t ORDER BY id"));
    let text = stdout(&out);
    assert!(!text.contains("first"), "{text}");
    assert!(
        text.contains("alice") && text.contains("NULL") && text.contains("(3 rows)"),
        "{text}"
    );
}

#[test]
fn sql_several_tables_with_one_schema_each() {
    let dir = TempDir::new().unwrap();
    let a = file(&dir, "a.csv", "1,x\n2,y\n");
    let b = file(&dir, "b.csv", "2,2024-05-06\n");
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("a", &a),
            "--table",
            &table_arg("b", &b),
        ])
        .args([
            "--schema",
            "k INT, v VARCHAR",
            "--schema",
            "k INT, d DATE",
            "--format",
            "csv",
        ])
        .arg("SELECT a.v, b.d FROM a JOIN b ON a.k = b.k"));
    assert_eq!(stdout(&out), "v,d\ny,2024-05-06\n");
}

#[test]
fn all_varchar_names_from_header() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "h.csv", "id,First Name,when\n007,Bond,1962\n");
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--all-varchar",
            "--header",
            "--format",
            "csv",
        ])
        .arg("SELECT * FROM t"));
    // VARCHAR keeps the leading zeros; names come from the header
    assert_eq!(stdout(&out), "id,First Name,when\n007,Bond,1962\n");
}

#[test]
fn all_varchar_without_header_names_columns() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "nh.csv", "a,b,c\nd,e,f\n");
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--all-varchar",
            "--format",
            "json",
        ])
        .arg("SELECT column3, column1 FROM t ORDER BY column1"));
    assert_eq!(stdout(&out), "[\"c\",\"a\"]\n[\"f\",\"d\"]\n");
}

#[test]
fn dialect_flags() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "d.psv", "name|note\n'a|b'|NA\n'it''s'|x\n");
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--all-varchar",
            "--header",
        ])
        .args([
            "--delimiter",
            "|",
            "--quote",
            "'",
            "--null",
            "NA",
            "--mode",
            "fast",
            "--format",
            "json",
        ])
        .arg("SELECT name, note FROM t ORDER BY name"));
    assert_eq!(stdout(&out), "[\"a|b\",null]\n[\"it's\",\"x\"]\n");

    let data = file(&dir, "e.tsv", "\"a\\\"b\"\tc\n");
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--schema",
            "x VARCHAR, y VARCHAR",
        ])
        .args([
            "--delimiter",
            "\\t",
            "--escape",
            "\\",
            "--format",
            "csv",
            "SELECT x, y FROM t",
        ]));
    assert_eq!(stdout(&out), "x,y\n\"a\"\"b\",c\n");

    let data = file(&dir, "n.csv", "p,q\n");
    let out = ok(wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--all-varchar",
            "--no-header",
            "--escape",
            "",
        ])
        .args(["--format", "csv", "SELECT * FROM t"]));
    assert_eq!(stdout(&out), "column1,column2\np,q\n");
}

#[test]
fn bad_value_fails_naming_file_line_and_column() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "bad.csv", "1,a\n2,b\nthree,c\n");
    let out = wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--schema",
            "id INT, name VARCHAR",
        ])
        .arg("SELECT count(*) FROM t")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("bad.csv"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("column 1"), "{err}");
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
}

/// Quoted fields holding the delimiter, doubled quotes and newlines (LF and CRLF), NULLs
/// in every column, a DECIMAL, a DATE and a VARCHAR.
const MIXED: &str = "1,\"a, b\",12.50,2024-01-02\n\
2,,-0.05,\n\
3,\"line one\nline \"\"two\"\"\",,1999-12-31\n\
4,\"x\r\ny,z\",1000.00,2000-02-29\n\
,plain,0.01,1970-01-01\n";
const MIXED_SCHEMA: &str = "id INT, name VARCHAR, price DECIMAL(10,2), d DATE";
const MIXED_JSON: &str = "[null,\"plain\",0.01,\"1970-01-01\"]\n\
[1,\"a, b\",12.50,\"2024-01-02\"]\n\
[2,null,-0.05,null]\n\
[3,\"line one\\nline \\\"two\\\"\",null,\"1999-12-31\"]\n\
[4,\"x\\r\\ny,z\",1000.00,\"2000-02-29\"]\n";
const MIXED_QUERY: &str = "SELECT id, name, price, d FROM t ORDER BY id NULLS FIRST";

/// `wireload sql --engine <engine>` over `data` with `schema`, JSON output; `emulate` runs
/// the GPU kernels on the CPU emulator. The environment variable is never inherited.
fn engine_run(engine: &str, emulate: bool, data: &Path, schema: &str, sql: &str) -> Output {
    let mut cmd = wireload();
    cmd.env_remove("WIRELOAD_GPU");
    if emulate {
        cmd.env("WIRELOAD_GPU", "emulate");
    }
    cmd.args(["sql", "--engine", engine, "--table", &table_arg("t", data)])
        .args(["--schema", schema, "--format", "json", sql])
        .output()
        .unwrap()
}

#[test]
fn engine_gpu_without_a_gpu_fails_and_loads_nothing() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "mixed.csv", MIXED);
    let out = engine_run("gpu", false, &data, MIXED_SCHEMA, MIXED_QUERY);
    if out.status.success() {
        // this machine has a GPU: it must load what the CPU loader loads
        assert_eq!(stdout(&out), MIXED_JSON, "{}", stderr(&out));
        assert!(
            stderr(&out).contains("loaded 5 rows into t"),
            "{}",
            stderr(&out)
        );
        return;
    }
    let err = stderr(&out);
    assert!(
        err.contains("ENGINE gpu needs an NVIDIA GPU with its CUDA driver and NVRTC: "),
        "{err}"
    );
    assert!(err.contains("table \"t\" is unchanged"), "{err}");
    assert!(!err.contains("loaded"), "{err}");
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
}

#[test]
fn engine_gpu_emulated_gives_the_cpu_result() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "mixed.csv", MIXED);
    let cpu = engine_run("cpu", false, &data, MIXED_SCHEMA, MIXED_QUERY);
    assert!(cpu.status.success(), "{}", stderr(&cpu));
    assert_eq!(stdout(&cpu), MIXED_JSON);
    let gpu = engine_run("gpu", true, &data, MIXED_SCHEMA, MIXED_QUERY);
    assert!(gpu.status.success(), "{}", stderr(&gpu));
    assert_eq!(stdout(&gpu), stdout(&cpu));
    assert!(
        stderr(&gpu).contains("loaded 5 rows into t"),
        "{}",
        stderr(&gpu)
    );
    // COPY in the statements, THREADS included, and a header line
    let headed = file(&dir, "headed.csv", &format!("id,name,price,d\n{MIXED}"));
    let gpu = engine_run(
        "cpu",
        true,
        &data,
        MIXED_SCHEMA,
        &format!(
            "COPY t FROM '{}' WITH (FORMAT csv, HEADER, ENGINE gpu, THREADS 1); \
             SELECT count(*), count(name), sum(price), min(d) FROM t",
            headed.display()
        ),
    );
    assert!(gpu.status.success(), "{}", stderr(&gpu));
    assert_eq!(stdout(&gpu), "[10,8,2024.92,\"1970-01-01\"]\n");
}

#[test]
fn engine_gpu_emulated_reports_bad_values_as_the_cpu_loader_does() {
    let dir = TempDir::new().unwrap();
    let data = file(
        &dir,
        "bad.csv",
        "1,\"a,\nb\",1.00,2024-01-01\n2,c,2.00,2024-01-02\n3,d,3.00,2024-02-30\n",
    );
    let cpu = engine_run("cpu", false, &data, MIXED_SCHEMA, "SELECT count(*) FROM t");
    let gpu = engine_run("gpu", true, &data, MIXED_SCHEMA, "SELECT count(*) FROM t");
    assert!(!cpu.status.success() && !gpu.status.success());
    let err = stderr(&cpu);
    assert!(
        err.contains("bad.csv: line 4, column 4 (d), byte 54"),
        "{err}"
    );
    assert!(err.contains("2024-02-30"), "{err}");
    assert!(err.contains("table \"t\" is unchanged"), "{err}");
    assert_eq!(stderr(&gpu), err);
    assert!(stdout(&gpu).is_empty(), "{}", stdout(&gpu));
}

#[test]
fn engine_gpu_rejects_mode() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "x.csv", "1\n");
    let out = wireload()
        .env("WIRELOAD_GPU", "emulate")
        .args(["sql", "--engine", "gpu", "--mode", "fast"])
        .args(["--table", &table_arg("t", &data), "--schema", "a INT"])
        .arg("SELECT 1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "--mode applies to --engine cpu: --engine gpu always reads RFC 4180 quoting, \
             newlines in quotes included"
        ),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
}

#[test]
fn without_a_schema_the_columns_are_inferred() {
    let dir = TempDir::new().unwrap();
    let data = file(
        &dir,
        "People-2024.csv",
        "Person;Age;Born\nalice;30;1994-03-01\nbob;41;1983-11-20\n",
    );
    // --table without --schema, and a file before the SQL (a table named after it)
    for args in [
        vec![
            "sql".to_string(),
            "--table".into(),
            table_arg("people_2024", &data),
            "--format".into(),
            "csv".into(),
            "SELECT person, age + 1, arrow_typeof(born) FROM people_2024 ORDER BY age".into(),
        ],
        vec![
            "sql".to_string(),
            data.display().to_string(),
            "--format".into(),
            "csv".into(),
            "SELECT person, age + 1, arrow_typeof(born) FROM people_2024 ORDER BY age".into(),
        ],
    ] {
        let out = wireload().args(&args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            stdout(&out),
            // the header's spelling is kept for display
            "Person,people_2024.Age + Int64(1),arrow_typeof(people_2024.Born)\n\
             alice,31,Date32\nbob,42,Date32\n"
        );
    }
    // the statements it would use
    let out = wireload().arg("sniff").arg(&data).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("CREATE TABLE people_2024 (\"Person\" TEXT, \"Age\" BIGINT, \"Born\" DATE);\nCOPY people_2024 FROM "),
        "{text}"
    );
    assert!(
        text.contains("DELIMITER ';'") && text.contains("HEADER true"),
        "{text}"
    );
}

#[test]
fn copy_from_stdin_reads_the_lines_after_it_in_a_script() {
    let dir = TempDir::new().unwrap();
    let script = file(
        &dir,
        "s.sql",
        "CREATE TABLE t (id INT, name TEXT);\nCOPY t FROM STDIN (FORMAT csv);\n1,a\n2,\"b;\"\n\\.\nSELECT count(*) AS n, max(name) AS m FROM t;\n",
    );
    let out = wireload().arg("-f").arg(&script).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("b;"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("loaded 2 rows into t"),
        "{}",
        stderr(&out)
    );
    // an error in the data names the script and the data's line
    let bad = file(
        &dir,
        "bad.sql",
        "CREATE TABLE t (id INT);\nCOPY t FROM STDIN;\n1\nx\n\\.\n",
    );
    let out = wireload().arg("-f").arg(&bad).output().unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("(COPY data from line 3): line 2"),
        "{}",
        stderr(&out)
    );
}

const SCRIPT: &str = "\
CREATE TABLE t (id INT, name VARCHAR);
COPY t FROM '{DATA}' WITH (FORMAT csv);
SELECT name FROM t ORDER BY id;
SELECT * FROM no_such_table;
SELECT 'never printed' AS x;
";

fn script(dir: &TempDir) -> String {
    let data = file(dir, "s.csv", "1,first\n2,second\n");
    SCRIPT.replace("{DATA}", &data.display().to_string())
}

fn assert_stopped_at_error(out: &Output, source: &str) {
    assert!(!out.status.success());
    let text = stdout(out);
    assert!(text.contains("first") && text.contains("second"), "{text}");
    assert!(!text.contains("never printed"), "{text}");
    let err = stderr(out);
    assert!(err.contains("loaded 2 rows into t"), "{err}");
    assert!(
        err.contains(&format!("{source}, line 4")) && err.contains("no_such_table"),
        "{err}"
    );
}

#[test]
fn script_file_stops_at_first_error() {
    let dir = TempDir::new().unwrap();
    let path = file(&dir, "s.sql", &script(&dir));
    let out = wireload().arg("-f").arg(&path).output().unwrap();
    assert_stopped_at_error(&out, &path.display().to_string());
}

#[test]
fn script_on_stdin() {
    let dir = TempDir::new().unwrap();
    let mut child = wireload()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script(&dir).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_stopped_at_error(&out, "<stdin>");
}

/// Semicolons inside dollar quotes and `E''` strings do not end a statement, in scripts and
/// in `wireload sql` (the library's front end splits them).
#[test]
fn dollar_quotes_and_escape_strings_in_scripts() {
    let dir = TempDir::new().unwrap();
    let path = file(
        &dir,
        "d.sql",
        "SELECT $$a;b$$ AS x;\nSELECT $tag$c;d$tag$ AS y; SELECT E'e\\';f' AS z;\n",
    );
    let out = wireload().arg("-f").arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for v in ["a;b", "c;d", "e';f"] {
        assert!(text.contains(v), "{v}: {text}");
    }
    let data = file(&dir, "x.csv", "1\n");
    let out = wireload()
        .args([
            "sql",
            "--table",
            &table_arg("t", &data),
            "--schema",
            "a INT",
        ])
        .args(["--format", "csv", "SELECT $$p;q$$ AS s FROM t"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "s\np;q\n");
}

/// A script is parsed whole before it runs: a syntax error anywhere runs nothing and names
/// the line.
#[test]
fn script_with_a_syntax_error_runs_nothing() {
    let dir = TempDir::new().unwrap();
    let data = file(&dir, "s.csv", "1,first\n");
    let path = file(
        &dir,
        "s.sql",
        &format!(
            "CREATE TABLE t (id INT, name VARCHAR);\nCOPY t FROM '{}';\nSELEC name FROM t;\n",
            data.display()
        ),
    );
    let out = wireload().arg("-f").arg(&path).output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("syntax error") && err.contains("Line: 3"),
        "{err}"
    );
    assert!(!err.contains("loaded"), "nothing ran: {err}");
}

/// Standard input is streamed into a table: `--table t=-`, and `COPY ... FROM '/dev/stdin'`
/// in a script (a pipe is streamed, never mapped).
#[test]
fn loads_stream_standard_input() {
    let dir = TempDir::new().unwrap();
    let text: String = (0..100_000).map(|i| format!("{i},\"n\n{i}\"\n")).collect();
    let mut child = wireload()
        .args([
            "sql",
            "--table",
            "t=-",
            "--schema",
            "a INT, s TEXT",
            "--format",
            "csv",
        ])
        .arg("SELECT count(*) AS n, sum(a) AS s, min(s) AS m FROM t")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feed = text.clone();
    let writer = std::thread::spawn(move || stdin.write_all(feed.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "n,s,m\n100000,4999950000,\"n\n0\"\n");
    assert!(
        stderr(&out).contains("loaded 100000 rows into t"),
        "{}",
        stderr(&out)
    );

    let path = file(
        &dir,
        "load.sql",
        "CREATE TABLE t (a INT, s TEXT);\nCOPY t FROM '/dev/stdin';\nSELECT count(*) FROM t;\n",
    );
    let mut child = wireload()
        .arg("-f")
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("100000"), "{}", stdout(&out));
}

#[test]
fn gen_tpch_writes_eight_tables() {
    let dir = TempDir::new().unwrap();
    ok(wireload()
        .args(["gen", "tpch", "--sf", "0.01", "--out"])
        .arg(dir.path()));
    let expected = [
        ("region", 5),
        ("nation", 25),
        ("supplier", 100),
        ("customer", 1500),
        ("part", 2000),
        ("partsupp", 8000),
        ("orders", 15000),
        ("lineitem", 60175),
    ];
    for (table, rows) in expected {
        let text = std::fs::read_to_string(dir.path().join(format!("{table}.tbl"))).unwrap();
        assert_eq!(text.lines().count(), rows, "{table}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 8);
}

#[test]
fn demo_runs_the_cycle() {
    let out = ok(wireload().args(["demo", "--sf", "0.01"]));
    let text = stdout(&out);
    for table in [
        "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
        "total",
    ] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(table)),
            "no load line for {table}:\n{text}"
        );
    }
    assert!(text.contains("60,175"), "{text}");
    // Q1's 4 groups: (returnflag, linestatus)
    let groups: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .split(['│', '┆'])
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            match cells.as_slice() {
                [flag, status, _, ..] if flag.len() == 1 && status.len() == 1 => {
                    Some((flag.to_string(), status.to_string()))
                }
                _ => None,
            }
        })
        .collect();
    let expected: Vec<(String, String)> = [("A", "F"), ("N", "F"), ("N", "O"), ("R", "F")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(groups, expected, "{text}");
    for q in 1..=22 {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("Q{q} "))),
            "no line for Q{q}:\n{text}"
        );
    }
    for phase in [
        "load CSV",
        "22 queries",
        "unload (Arrow, LZ4)",
        "reload (Arrow, LZ4)",
    ] {
        assert!(text.contains(phase), "no phase {phase}:\n{text}");
    }
}
