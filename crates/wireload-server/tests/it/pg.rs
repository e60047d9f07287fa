//! The PostgreSQL front end driven by real clients: psql (Debian's postgresql-client) and
//! Python's psycopg 3, against a server started by the test.

use crate::common::{PASSWORD, TestServer, USER, failed, ok, self_signed};

/// A table with a column of every wireload type, and three rows (one of NULLs).
const TYPES: &str = "
    CREATE TABLE every (
        id INTEGER PRIMARY KEY, b BOOLEAN, s SMALLINT, big BIGINT, r REAL, d DOUBLE PRECISION,
        amount DECIMAL(15, 2), day DATE, at TIMESTAMP, code CHAR(3), name VARCHAR(20), note TEXT);
    INSERT INTO every VALUES
        (1, true, -7, 9007199254740993, 1.5, 0.1, 12345.67, DATE '2024-02-29',
         TIMESTAMP '2024-02-29 13:14:15.25', 'abc', 'Zoë', 'line one'),
        (2, false, 32767, -1, -0.25, 1e20, -0.05, DATE '1970-01-01',
         TIMESTAMP '1999-12-31 23:59:59', 'x', '', 'quote \" and , comma'),
        (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);";

#[test]
fn psql_reads_every_type_as_text() {
    let server = TestServer::start();
    server.sql(TYPES);
    let out = ok(&server.psql(&[
        "-A",
        "-t",
        "-F",
        "|",
        "-c",
        "SELECT * FROM every ORDER BY id",
    ]));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "1|t|-7|9007199254740993|1.5|0.1|12345.67|2024-02-29|2024-02-29 13:14:15.25|abc|Zoë|line one",
            "2|f|32767|-1|-0.25|1e+20|-0.05|1970-01-01|1999-12-31 23:59:59|x||quote \" and , comma",
            "3|||||||||||",
        ]
    );
}

#[test]
fn psycopg_reads_every_type_in_text_and_binary() {
    let server = TestServer::start();
    server.sql(TYPES);
    let script = r#"
import psycopg, datetime, decimal
with psycopg.connect(CONNINFO) as conn:
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        cur.execute("SELECT * FROM every ORDER BY id")
        rows = cur.fetchall()
        assert rows[0] == (1, True, -7, 9007199254740993, 1.5, 0.1, decimal.Decimal("12345.67"),
            datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 13, 14, 15, 250000),
            "abc", "Zoë", "line one"), (binary, rows[0])
        assert rows[1][5] == 1e20 and rows[1][6] == decimal.Decimal("-0.05"), rows[1]
        assert rows[1][10] == "" and rows[1][11] == 'quote " and , comma', rows[1]
        assert rows[2] == (3,) + (None,) * 11, rows[2]
        types = [d.type_code for d in cur.description]
        # int4 bool int2 int8 float4 float8 numeric date timestamp text text text
        assert types == [23, 16, 21, 20, 700, 701, 1700, 1082, 1114, 25, 25, 25], types
print("ok")
"#;
    assert_eq!(ok(&server.python(script)).trim(), "ok");
}

#[test]
fn psycopg_prepared_statements_take_text_and_binary_parameters() {
    let server = TestServer::start();
    server.sql(TYPES);
    let script = r#"
import psycopg, datetime, decimal
with psycopg.connect(CONNINFO, autocommit=True) as conn:
    cur = conn.cursor()
    for i in range(3):  # psycopg prepares on the server after a few runs
        cur.execute("SELECT name FROM every WHERE id = %s", (1,), prepare=True)
        assert cur.fetchall() == [("Zoë",)]
    cur.execute("SELECT id FROM every WHERE amount > %b AND day >= %b ORDER BY id",
                (decimal.Decimal("-1.00"), datetime.date(1970, 1, 1)))
    assert cur.fetchall() == [(1,), (2,)], "binary parameters"
    cur.execute("SELECT id FROM every WHERE at = %s", (datetime.datetime(1999, 12, 31, 23, 59, 59),))
    assert cur.fetchall() == [(2,)]
    cur.execute("UPDATE every SET note = %s WHERE id = %s", ("changed", 3))
    assert cur.rowcount == 1
    cur.execute("INSERT INTO every (id, name) VALUES (%s, %s)", (4, "four"))
    assert cur.rowcount == 1
    cur.execute("SELECT note FROM every WHERE id = 3")
    assert cur.fetchone() == ("changed",)
    # a write's RETURNING columns are described before it runs
    cur.execute("INSERT INTO every (id, name) VALUES (%s, %s) RETURNING id, upper(name) AS up",
                (5, "five"))
    assert [d.name for d in cur.description] == ["id", "up"], cur.description
    assert cur.fetchall() == [(5, "FIVE")]
    cur.execute("DELETE FROM every WHERE id = %s RETURNING name", (5,), prepare=True)
    assert cur.fetchall() == [("five",)]
print("ok")
"#;
    assert_eq!(ok(&server.python(script)).trim(), "ok");
    assert_eq!(server.rows("SELECT count(*) FROM every"), ["4"]);
}

#[test]
fn psycopg_transactions_commit_and_roll_back() {
    let server = TestServer::start();
    server.sql("CREATE TABLE acct (id INT PRIMARY KEY, balance BIGINT); INSERT INTO acct VALUES (1, 100), (2, 0);");
    let script = r#"
import psycopg
with psycopg.connect(CONNINFO) as conn:
    with conn.transaction():
        conn.execute("UPDATE acct SET balance = balance - 30 WHERE id = 1")
        conn.execute("UPDATE acct SET balance = balance + 30 WHERE id = 2")
    try:
        with conn.transaction():
            conn.execute("UPDATE acct SET balance = balance - 1000 WHERE id = 1")
            raise RuntimeError("abort")
    except RuntimeError:
        pass
    try:
        conn.execute("SELECT * FROM missing")
    except psycopg.errors.UndefinedTable as e:
        assert e.sqlstate == "42P01"
    else:
        raise AssertionError("no error")
    conn.rollback()
    print(conn.execute("SELECT balance FROM acct ORDER BY id").fetchall())
"#;
    assert_eq!(ok(&server.python(script)).trim(), "[(70,), (30,)]");
}

#[test]
fn an_error_after_rows_were_sent_fails_the_statement_and_its_transaction() {
    let server = TestServer::start();
    server.sql("CREATE TABLE acct (id INT, balance BIGINT); INSERT INTO acct VALUES (1, 100);");
    // rows stream as they are computed: the division fails in a batch after the first
    let script = r#"
import psycopg
with psycopg.connect(CONNINFO) as conn:
    conn.execute("UPDATE acct SET balance = 0")
    try:
        conn.execute("SELECT 1 / (value - 50000) FROM generate_series(1, 100000)").fetchall()
    except psycopg.Error as e:
        print("failed", e.sqlstate)
    else:
        raise AssertionError("no error")
    try:
        conn.execute("SELECT 1")
    except psycopg.errors.InFailedSqlTransaction as e:
        print("then", e.sqlstate)
    conn.rollback()
    # the same mid-stream failure in a prepared statement of the extended protocol
    conn.autocommit = True
    try:
        conn.execute("SELECT 1 / (value - %s) FROM generate_series(1, 100000)", (50000,), prepare=True).fetchall()
    except psycopg.Error as e:
        print("prepared", e.sqlstate)
    print(conn.execute("SELECT balance FROM acct").fetchall())
"#;
    let out = ok(&server.python(script));
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["failed 22012", "then 25P02", "prepared 22012", "[(100,)]"],
        "{out}"
    );
}

/// A CSV of `rows` rows whose text fields hold quoted newlines and commas.
fn multiline_csv(rows: usize) -> String {
    let mut s = String::new();
    for i in 0..rows {
        s.push_str(&format!(
            "{i},\"line {i}\nsecond, line\",{}.{:02}\n",
            i * 3,
            i % 100
        ));
    }
    s
}

#[test]
fn psql_copies_a_multi_megabyte_file_in_and_out() {
    let server = TestServer::start();
    server.sql("CREATE TABLE notes (id BIGINT, body TEXT, amount DECIMAL(12, 2))");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    let csv = multiline_csv(120_000);
    assert!(csv.len() > 3 << 20);
    std::fs::write(&input, &csv).unwrap();
    let out = ok(&server.psql(&[
        "-c",
        &format!("\\copy notes FROM '{}' WITH (FORMAT csv)", input.display()),
    ]));
    assert_eq!(out.trim(), "COPY 120000");
    let lengths: u64 = (0..120_000u64)
        .map(|i| format!("line {i}\nsecond, line").len() as u64)
        .sum();
    assert_eq!(
        server.rows("SELECT count(*), sum(id), sum(length(body)) FROM notes"),
        [format!("120000|{}|{lengths}", (0..120_000u64).sum::<u64>())]
    );
    // out again, through COPY TO STDOUT, byte for byte
    let output = dir.path().join("out.csv");
    let out = ok(&server.psql(&[
        "-c",
        &format!(
            "\\copy (SELECT * FROM notes ORDER BY id) TO '{}' WITH (FORMAT csv)",
            output.display()
        ),
    ]));
    assert_eq!(out.trim(), "COPY 120000");
    assert_eq!(std::fs::read_to_string(&output).unwrap(), csv);
}

#[test]
fn a_bad_row_fails_the_copy_with_its_position_and_loads_nothing() {
    let server = TestServer::start();
    server.sql("CREATE TABLE nums (id INT, v INT); INSERT INTO nums VALUES (0, 0);");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.csv");
    let mut csv = String::new();
    for i in 1..=50_000 {
        csv.push_str(&format!("{i},{i}\n"));
    }
    csv.push_str("50001,twelve\n");
    std::fs::write(&input, &csv).unwrap();
    let err = failed(&server.psql(&[
        "-c",
        &format!("\\copy nums FROM '{}' WITH (FORMAT csv)", input.display()),
    ]));
    assert!(err.contains("line 50001"), "{err}");
    assert!(err.contains("column 2 (v)"), "{err}");
    assert!(err.contains("twelve"), "{err}");
    assert!(
        err.contains("DETAIL:") && err.contains("byte offset:"),
        "{err}"
    );
    assert_eq!(server.rows("SELECT count(*) FROM nums"), ["1"]);
}

#[test]
fn copy_fail_and_disconnect_leave_the_table_unchanged() {
    let server = TestServer::start();
    server.sql("CREATE TABLE t (id INT, s TEXT); INSERT INTO t VALUES (1, 'kept');");
    let script = r#"
import psycopg
with psycopg.connect(CONNINFO, autocommit=True) as conn:
    cur = conn.cursor()
    try:
        with cur.copy("COPY t FROM STDIN WITH (FORMAT csv)") as copy:
            for i in range(100000):
                copy.write(f"{i},row {i}\n")
            raise RuntimeError("client gives up")
    except RuntimeError:
        pass
    except psycopg.errors.QueryCanceled:
        pass
    print(conn.execute("SELECT count(*) FROM t").fetchone()[0])
"#;
    assert_eq!(ok(&server.python(script)).trim(), "1");
    // the client dies in the middle of the data
    let script = r#"
import psycopg, os
conn = psycopg.connect(CONNINFO, autocommit=True)
cur = conn.cursor()
with cur.copy("COPY t FROM STDIN WITH (FORMAT csv)") as copy:
    for i in range(200000):
        copy.write(f"{i},row {i}\n")
    os._exit(0)
"#;
    let _ = server.python(script);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(server.rows("SELECT count(*) FROM t"), ["1"]);
    // and a complete copy from psycopg works
    let script = r#"
import psycopg
with psycopg.connect(CONNINFO, autocommit=True) as conn:
    cur = conn.cursor()
    with cur.copy("COPY t FROM STDIN WITH (FORMAT csv)") as copy:
        block = "".join(f"{i},row {i}\n" for i in range(1000))
        for _ in range(10):
            copy.write(block)
    print(cur.rowcount)
"#;
    assert_eq!(ok(&server.python(script)).trim(), "10000");
    assert_eq!(server.rows("SELECT count(*) FROM t"), ["10001"]);
}

#[test]
fn wrong_and_missing_passwords_are_refused() {
    let server = TestServer::start();
    let err = failed(&server.psql_as(USER, Some("wrong"), "disable", &["-c", "SELECT 1"]));
    assert!(
        err.contains("FATAL:  password authentication failed for user \"alice\""),
        "{err}"
    );
    // an unknown user reads the same
    let err = failed(&server.psql_as("mallory", Some(PASSWORD), "disable", &["-c", "SELECT 1"]));
    assert!(
        err.contains("FATAL:  password authentication failed for user \"mallory\""),
        "{err}"
    );
    let err = failed(&server.psql_as(USER, None, "disable", &["-w", "-c", "SELECT 1"]));
    assert!(err.contains("password"), "{err}");
    assert_eq!(
        ok(&server.psql(&["-A", "-t", "-c", "SELECT 41 + 1"])).trim(),
        "42"
    );
}

#[test]
fn trust_local_needs_no_password() {
    let server = TestServer::with(|s| {
        s.trust_local = true;
        s.users = std::sync::Arc::new(wireload_server::Users::new());
    });
    assert_eq!(
        ok(&server.psql_as(
            "anyone",
            None,
            "disable",
            &["-A", "-t", "-c", "SELECT 'in'"]
        ))
        .trim(),
        "in"
    );
}

#[test]
fn tls_connections_work_and_report_ssl() {
    let dir = tempfile::tempdir().unwrap();
    let tls = self_signed(dir.path());
    let server = TestServer::with(|s| s.tls = Some(tls.clone()));
    let out = ok(&server.psql_as(USER, Some(PASSWORD), "require", &["-c", "\\conninfo"]));
    assert!(out.contains("SSL connection"), "{out}");
    let out = ok(&server.psql_as(
        USER,
        Some(PASSWORD),
        "require",
        &["-A", "-t", "-c", "SELECT 7"],
    ));
    assert_eq!(out.trim(), "7");
}

#[test]
fn a_cancel_request_stops_a_running_copy_and_loads_nothing() {
    let server = TestServer::start();
    server.sql("CREATE TABLE big (id BIGINT, s TEXT)");
    let script = r#"
import psycopg, threading, time
with psycopg.connect(CONNINFO, autocommit=True) as conn:
    cur = conn.cursor()
    def cancel():
        time.sleep(0.5)
        conn.cancel()
    threading.Thread(target=cancel).start()
    try:
        with cur.copy("COPY big FROM STDIN WITH (FORMAT csv)") as copy:
            block = "".join(f"{i},row {i}\n" for i in range(10000))
            end = time.time() + 3
            while time.time() < end:
                copy.write(block)
        print("finished")
    except psycopg.errors.QueryCanceled as e:
        print("cancelled")
"#;
    assert_eq!(ok(&server.python(script)).trim(), "cancelled");
    assert_eq!(server.rows("SELECT count(*) FROM big"), ["0"]);
}

#[test]
fn settings_drivers_send_are_kept() {
    let server = TestServer::start();
    let out = ok(&server.psql(&[
        "-A",
        "-t",
        "-c",
        "SET extra_float_digits = 3",
        "-c",
        "SET application_name = 'loader'",
        "-c",
        "SHOW application_name",
        "-c",
        "SHOW server_version",
        "-c",
        "SET statement_timeout = '5s'",
        "-c",
        "SHOW statement_timeout",
    ]));
    let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    assert!(lines.contains(&"loader"), "{out}");
    assert!(
        lines.iter().any(|l| l.starts_with("15.0 (wireload")),
        "{out}"
    );
    assert!(lines.contains(&"5s"), "{out}");
}

#[test]
fn psql_describes_tables_and_indexes() {
    let server = TestServer::start();
    server.sql(
        "CREATE TABLE orders (o_orderkey BIGINT PRIMARY KEY, o_status CHAR(1) NOT NULL,
            o_total DECIMAL(15, 2), o_date DATE, o_comment VARCHAR(79));
         CREATE INDEX orders_date ON orders (o_date);
         CREATE TABLE nation (n_key INTEGER, n_name TEXT);",
    );
    let out = ok(&server.psql(&["-c", "\\dt"]));
    assert!(out.contains("orders") && out.contains("nation"), "{out}");
    assert!(out.contains("table"), "{out}");
    let out = ok(&server.psql(&["-c", "\\d orders"]));
    for want in [
        "o_orderkey",
        "bigint",
        "character(1)",
        "numeric(15,2)",
        "date",
        "character varying(79)",
        "not null",
        "orders_date",
    ] {
        assert!(out.contains(want), "{want} missing in:\n{out}");
    }
    let out = ok(&server.psql(&["-c", "\\di"]));
    assert!(out.contains("orders_date"), "{out}");
    let out = ok(&server.psql(&["-c", "\\l"]));
    assert!(out.contains("wireload"), "{out}");
}

#[test]
fn drivers_learn_who_and_where_they_are() {
    let server = TestServer::start();
    let out = ok(&server.psql(&[
        "-A",
        "-t",
        "-c",
        "SELECT current_user, current_database(), current_schema(), pg_backend_pid() > 0",
        "-c",
        "SELECT version()",
    ]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "alice|wireload|public|t", "{out}");
    assert!(lines[1].starts_with("PostgreSQL 15.0 (wireload"), "{out}");
}

#[test]
fn a_message_over_the_limit_closes_only_its_connection() {
    let server = TestServer::with(|s| s.limits.max_message_bytes = 64 << 10);
    server.sql(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR); INSERT INTO t VALUES (1, 'one');",
    );
    let script = r#"
import psycopg
with psycopg.connect(CONNINFO, autocommit=True) as other:
    try:
        with psycopg.connect(CONNINFO, autocommit=True) as conn:
            conn.execute("SELECT '" + "x" * 100000 + "'")
        raise SystemExit("a 100 kB query was accepted")
    except psycopg.errors.ProgramLimitExceeded as e:
        assert "over this server's limit of 65536 bytes (max_message_bytes)" in str(e), str(e)
    # a COPY block over the limit ends the connection and loads nothing
    try:
        with psycopg.connect(CONNINFO, autocommit=True) as conn:
            with conn.cursor().copy("COPY t FROM STDIN (FORMAT csv)") as copy:
                copy.write(b"2,two\n")
                copy.write(b"3," + b"y" * 200000 + b"\n")
        raise SystemExit("a 200 kB CopyData was accepted")
    except psycopg.OperationalError as e:
        pass
    # the other session goes on
    assert other.execute("SELECT count(*), max(v) FROM t").fetchone() == (1, "one")
print("ok")
"#;
    assert_eq!(ok(&server.python(script)).trim(), "ok");
    assert_eq!(server.rows("SELECT id, v FROM t"), ["1|one"]);
}
