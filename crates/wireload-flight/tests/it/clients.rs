//! The Flight SQL server driven by real clients: ADBC's Flight SQL driver and pyarrow's
//! Flight client (from `wireload_clients::python()`), each test against a server of its
//! own on a port of its own.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use wireload_flight::{FlightError, FlightSettings, serve};
use wireload_load::LoadControl;
use wireload_server::{Limits, TlsFiles, Users};
use wireload_sql::{Database, DbConfig, FileGate, StatementOutput};

const USER: &str = "flyer";
const PASSWORD: &str = "s3cret:pass";

/// A server running on its own runtime; stopped (and checked to stop cleanly) on `stop`.
struct Server {
    rt: Runtime,
    db: Arc<Database>,
    port: u16,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), FlightError>>>,
}

struct Options {
    users: bool,
    /// The directory clients may read and write files in.
    files: Option<std::path::PathBuf>,
    trust_local: bool,
    tls: Option<TlsFiles>,
    limits: Limits,
    bind: &'static str,
    /// The server's memory budget (`--memory-limit`).
    memory_limit: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            users: true,
            files: None,
            trust_local: false,
            tls: None,
            limits: Limits::default(),
            bind: "127.0.0.1:0",
            memory_limit: None,
        }
    }
}

fn settings(options: &Options) -> FlightSettings {
    let mut users = Users::new();
    if options.users {
        users.add(USER, PASSWORD);
    }
    FlightSettings {
        users: Arc::new(users),
        trust_local: options.trust_local,
        tls: options.tls.clone(),
        limits: options.limits.clone(),
        files: Arc::new(match &options.files {
            Some(dir) => {
                FileGate::new(std::slice::from_ref(dir), std::slice::from_ref(dir)).unwrap()
            }
            None => FileGate::default(),
        }),
    }
}

impl Server {
    fn start(setup: &str, options: Options) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let db = Arc::new(Database::new(DbConfig {
            threads: Some(2),
            memory_limit: options.memory_limit,
            ..Default::default()
        }));
        if !setup.is_empty() {
            rt.block_on(db.execute(setup, &LoadControl::default()))
                .expect("setup SQL");
        }
        let listener = rt
            .block_on(tokio::net::TcpListener::bind(options.bind))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = oneshot::channel::<()>();
        let task = rt.spawn(serve(
            Arc::clone(&db),
            listener,
            settings(&options),
            async {
                let _ = rx.await;
            },
        ));
        Server {
            rt,
            db,
            port,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// The rows of a query run straight on the database (not through Flight).
    fn count(&self, table: &str) -> i64 {
        let out = self
            .rt
            .block_on(self.db.execute(
                &format!("SELECT count(*) AS n FROM {table}"),
                &LoadControl::default(),
            ))
            .unwrap();
        match &out[0] {
            StatementOutput::Rows { batches, .. } => batches[0]
                .column(0)
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .unwrap()
                .value(0),
            other => panic!("{other:?}"),
        }
    }

    /// Runs `script` with `PORT`, `WL_USER` and `WL_PASSWORD` set (and `extra`); panics
    /// with its output unless it succeeds and prints `OK` last.
    fn python(&self, script: &str, extra: &[(&str, &str)]) -> String {
        let (ok, stdout, stderr) = run_python(self.port, script, extra);
        assert!(
            ok && stdout.trim_end().ends_with("OK"),
            "the client script failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
        stdout
    }

    fn stop(mut self) {
        let _ = self.shutdown.take().unwrap().send(());
        let task = self.task.take().unwrap();
        let result = self
            .rt
            .block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(30), task).await
            })
            .expect("the server stops within 30 s of its shutdown signal")
            .expect("the server task did not panic");
        assert!(result.is_ok(), "serve returned {result:?}");
    }
}

fn run_python(port: u16, script: &str, extra: &[(&str, &str)]) -> (bool, String, String) {
    let mut cmd = Command::new(wireload_clients::python());
    cmd.arg("-c")
        .arg(format!("{PRELUDE}\n{script}"))
        .env("PORT", port.to_string())
        .env("WL_USER", USER)
        .env("WL_PASSWORD", PASSWORD);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("python runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Helpers every script gets: connecting with ADBC, and Flight SQL commands encoded by
/// hand for pyarrow's plain Flight client (which has no Flight SQL of its own).
const PRELUDE: &str = r#"
import os, sys, decimal, datetime, warnings
import pyarrow as pa
import pyarrow.flight as fl
import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager

PORT = int(os.environ["PORT"])
USER = os.environ["WL_USER"]
PASSWORD = os.environ["WL_PASSWORD"]
URI = f"grpc://127.0.0.1:{PORT}"

def connect(uri=URI, user=USER, password=PASSWORD, **extra):
    kwargs = dict(extra)
    if user is not None:
        kwargs["username"] = user
        kwargs["password"] = password
    return flight_sql.connect(uri, db_kwargs=kwargs, autocommit=True)

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def field(num, data):
    return varint((num << 3) | 2) + varint(len(data)) + data

def command(name, body=b""):
    url = ("type.googleapis.com/arrow.flight.protocol.sql." + name).encode()
    return field(1, url) + field(2, body)

def statement_query(sql):
    return fl.FlightDescriptor.for_command(command("CommandStatementQuery", field(1, sql.encode())))

def fetch(client, descriptor, options):
    info = client.get_flight_info(descriptor, options)
    return client.do_get(info.endpoints[0].ticket, options).read_all()

def expect_error(kind, fragment, fn):
    try:
        fn()
    except kind as e:
        assert fragment.lower() in str(e).lower(), f"{fragment!r} not in {e!r}"
        return e
    raise AssertionError(f"expected {kind} containing {fragment!r}")
"#;

const ITEMS: &str = "
CREATE TABLE items (id INT PRIMARY KEY, qty BIGINT, price DECIMAL(10,2), day DATE, \
  name TEXT, score DOUBLE PRECISION, ok BOOLEAN, small SMALLINT);
INSERT INTO items VALUES
  (1, 10, 12.34, '2024-02-29', 'héllo', 1.5, true, 7),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, -5, -0.01, '1999-12-31', 'a,\"b\"', -2.25, false, -3);
";

#[test]
fn adbc_query_returns_every_type_exactly() {
    let server = Server::start(ITEMS, Options::default());
    server.python(
        r#"
conn = connect()
cur = conn.cursor()
cur.execute("SELECT id, qty, price, day, name, score, ok, small FROM items ORDER BY id")
t = cur.fetch_arrow_table()
s = t.schema
assert s.field("id").type == pa.int32(), s
assert s.field("qty").type == pa.int64(), s
assert s.field("price").type == pa.decimal128(10, 2), s
assert s.field("day").type == pa.date32(), s
assert s.field("name").type in (pa.string(), pa.large_string(), pa.string_view()), s
assert s.field("score").type == pa.float64(), s
assert s.field("ok").type == pa.bool_(), s
assert s.field("small").type == pa.int16(), s
got = t.to_pydict()
assert got == {
    "id": [1, 2, 3],
    "qty": [10, None, -5],
    "price": [decimal.Decimal("12.34"), None, decimal.Decimal("-0.01")],
    "day": [datetime.date(2024, 2, 29), None, datetime.date(1999, 12, 31)],
    "name": ["héllo", None, 'a,"b"'],
    "score": [1.5, None, -2.25],
    "ok": [True, None, False],
    "small": [7, None, -3],
}, got

# an expression, and an empty result keeps its schema
cur.execute("SELECT sum(qty) AS total, count(*) AS n FROM items")
assert cur.fetchall() == [(5, 3)]
cur.execute("SELECT id FROM items WHERE id > 100")
t = cur.fetch_arrow_table()
assert t.num_rows == 0 and t.schema.names == ["id"], t

# DDL and DML through the same call
cur.execute("CREATE TABLE extra (k INT, v TEXT)")
cur.execute("INSERT INTO extra VALUES (1, 'a'), (2, 'b')")
cur.execute("SELECT v FROM extra ORDER BY k")
assert cur.fetchall() == [("a",), ("b",)]

# user errors come back with their message; the connection stays usable
expect_error(adbc_driver_manager.Error, "NOT_FOUND",
             lambda: cur.execute("SELECT * FROM missing"))
expect_error(adbc_driver_manager.Error, "'wireload.public.missing' not found",
             lambda: cur.execute("SELECT * FROM missing"))
expect_error(adbc_driver_manager.Error, "syntax error", lambda: cur.execute("SELEC 1"))
cur.execute("SELECT count(*) FROM items")
assert cur.fetchone() == (3,)
# a transaction left open in one request is refused and rolled back
expect_error(adbc_driver_manager.Error, "rolled back",
             lambda: cur.execute("BEGIN; INSERT INTO extra VALUES (3, 'c')"))
cur.execute("SELECT count(*) FROM extra")
assert cur.fetchone() == (2,)
# within one request it commits
cur.execute("BEGIN; INSERT INTO extra VALUES (3, 'c'); COMMIT")
cur.execute("SELECT count(*) FROM extra")
assert cur.fetchone() == (3,)
conn.close()
print("OK")
"#,
        &[],
    );
    assert_eq!(server.count("extra"), 3);
    server.stop();
}

#[test]
fn adbc_ingest_appends_atomically() {
    let server = Server::start(
        "CREATE TABLE t (id INT PRIMARY KEY, name TEXT NOT NULL, amount DECIMAL(10,2));",
        Options::default(),
    );
    server.python(
        r#"
conn = connect()
cur = conn.cursor()
D = decimal.Decimal
good = pa.table({
    "id": pa.array([10, 11, 12], pa.int32()),
    "name": pa.array(["x", "y", "z"]),
    "amount": pa.array([D("1.50"), D("2.00"), None], pa.decimal128(10, 2)),
})
assert cur.adbc_ingest("t", good, mode="append") == 3

# more rows, other Arrow types (int64, large_string) and the columns in another order
more = pa.table({
    "name": pa.array(["w"], pa.large_string()),
    "amount": pa.array([D("7.25")], pa.decimal128(12, 2)),
    "id": pa.array([13], pa.int64()),
})
assert cur.adbc_ingest("t", more, mode="append") == 1

def contents():
    cur.execute("SELECT id, name, amount FROM t ORDER BY id")
    return cur.fetchall()

expected = [(10, "x", D("1.50")), (11, "y", D("2.00")), (12, "z", None), (13, "w", D("7.25"))]
assert contents() == expected, contents()

# NOT NULL violated in one row: nothing appended
bad_null = pa.table({
    "id": pa.array([20, 21], pa.int32()),
    "name": pa.array(["ok", None]),
    "amount": pa.array([None, None], pa.decimal128(10, 2)),
})
expect_error(adbc_driver_manager.Error, "name", lambda: cur.adbc_ingest("t", bad_null, mode="append"))
assert contents() == expected, contents()

# a primary key that exists already, in the second batch of the stream: nothing appended
b1 = pa.record_batch({"id": pa.array([30, 31], pa.int32()), "name": pa.array(["a", "b"]),
                      "amount": pa.array([None, None], pa.decimal128(10, 2))})
b2 = pa.record_batch({"id": pa.array([32, 10], pa.int32()), "name": pa.array(["c", "d"]),
                      "amount": pa.array([None, None], pa.decimal128(10, 2))})
dup = pa.Table.from_batches([b1, b2])
expect_error(adbc_driver_manager.Error, "", lambda: cur.adbc_ingest("t", dup, mode="append"))
assert contents() == expected, contents()

# a key twice within the ingest
twice = pa.table({"id": pa.array([40, 40], pa.int32()), "name": pa.array(["a", "b"]),
                  "amount": pa.array([None, None], pa.decimal128(10, 2))})
expect_error(adbc_driver_manager.Error, "", lambda: cur.adbc_ingest("t", twice, mode="append"))
assert contents() == expected, contents()

# a missing table is not created by append
expect_error(adbc_driver_manager.Error, "does not exist",
             lambda: cur.adbc_ingest("nope", good, mode="append"))
# create: a new table from the Arrow schema
fresh = pa.table({"k": pa.array([1, 2], pa.int64()), "s": pa.array(["p", None]),
                  "f": pa.array([0.5, 1.5]), "d": pa.array([datetime.date(2020, 1, 2), None])})
assert cur.adbc_ingest("fresh", fresh, mode="create") == 2
cur.execute("SELECT k, s, f, d FROM fresh ORDER BY k")
assert cur.fetchall() == [(1, "p", 0.5, datetime.date(2020, 1, 2)), (2, None, 1.5, None)]
# create on an existing table fails; create_append appends
expect_error(adbc_driver_manager.Error, "already exists",
             lambda: cur.adbc_ingest("fresh", fresh, mode="create"))
assert cur.adbc_ingest("fresh", fresh, mode="create_append") == 2
cur.execute("SELECT count(*) FROM fresh")
assert cur.fetchone() == (4,)
# a type no column holds: nothing is left behind
nested = pa.table({"l": pa.array([[1, 2]], pa.list_(pa.int32()))})
expect_error(adbc_driver_manager.Error, "create the table first",
             lambda: cur.adbc_ingest("nested", nested, mode="create"))
conn.close()
print("OK")
"#,
        &[],
    );
    assert_eq!(server.count("t"), 4);
    assert_eq!(server.count("fresh"), 4);
    assert!(server.db.catalog().table("nested").is_none());
    server.stop();
}

#[test]
fn pyarrow_flight_authenticates_and_refuses_strangers() {
    let server = Server::start(ITEMS, Options::default());
    server.python(
        r#"
client = fl.FlightClient(URI)
header = client.authenticate_basic_token(USER, PASSWORD)
assert header[0].lower() == b"authorization" and header[1].startswith(b"Bearer "), header
token = header[1][len(b"Bearer "):]
assert len(token) == 64 and all(c in b"0123456789abcdef" for c in token), token
opts = fl.FlightCallOptions(headers=[header])

t = fetch(client, statement_query("SELECT id, name FROM items WHERE id <> 2 ORDER BY id"), opts)
assert t.to_pydict() == {"id": [1, 3], "name": ["héllo", 'a,"b"']}, t.to_pydict()

# a ticket is fetched once
info = client.get_flight_info(statement_query("SELECT 1 AS one"), opts)
assert info.total_records == 1
assert client.do_get(info.endpoints[0].ticket, opts).read_all().to_pydict() == {"one": [1]}
expect_error((fl.FlightError, KeyError), "unknown ticket",
             lambda: client.do_get(info.endpoints[0].ticket, opts).read_all())

# Basic credentials on every call work too
basic = fl.FlightCallOptions(headers=[(b"authorization",
    b"Basic " + __import__("base64").b64encode(f"{USER}:{PASSWORD}".encode()))])
assert fetch(client, statement_query("SELECT 2 AS two"), basic).to_pydict() == {"two": [2]}

# GetSqlInfo: the server's name (info 0) and version (1)
sql_info = fl.FlightDescriptor.for_command(command("CommandGetSqlInfo", field(1, varint(0) + varint(1))))
rows = fetch(client, sql_info, opts).to_pylist()
values = {r["info_name"]: r["value"] for r in rows}
assert values[0] == "wireload", rows
assert isinstance(values[1], str) and values[1], rows

# wrong password, unknown user, no credentials, a forged token
expect_error(fl.FlightUnauthenticatedError, "wrong user name or password",
             lambda: fl.FlightClient(URI).authenticate_basic_token(USER, "wrong"))
expect_error(fl.FlightUnauthenticatedError, "wrong user name or password",
             lambda: fl.FlightClient(URI).authenticate_basic_token("nobody", PASSWORD))
stranger = fl.FlightClient(URI)
expect_error(fl.FlightUnauthenticatedError, "credentials required",
             lambda: stranger.get_flight_info(statement_query("SELECT * FROM items")))
expect_error(fl.FlightUnauthenticatedError, "credentials required",
             lambda: stranger.do_get(info.endpoints[0].ticket).read_all())
forged = fl.FlightCallOptions(headers=[(b"authorization", b"Bearer " + b"0" * 64)])
expect_error(fl.FlightUnauthenticatedError, "unknown or expired bearer token",
             lambda: stranger.get_flight_info(statement_query("SELECT * FROM items"), forged))
wrong_basic = fl.FlightCallOptions(headers=[(b"authorization",
    b"Basic " + __import__("base64").b64encode(f"{USER}:nope".encode()))])
expect_error(fl.FlightUnauthenticatedError, "wrong user name or password",
             lambda: stranger.get_flight_info(statement_query("SELECT 1"), wrong_basic))

# hostile messages fail their own request only
expect_error(pa.ArrowException, "", lambda: client.get_flight_info(
    fl.FlightDescriptor.for_command(b"\xff\xfe not protobuf \x00"), opts))
expect_error(pa.ArrowException, "", lambda: client.get_flight_info(
    fl.FlightDescriptor.for_command(command("NoSuchCommand", b"\x01\x02")), opts))
expect_error(pa.ArrowException, "", lambda: client.do_get(fl.Ticket(b"\x00garbage"), opts).read_all())
expect_error(pa.ArrowException, "", lambda: client.get_flight_info(statement_query("SELECT 1 +"), opts))
# an ingest of rows that do not fit the table
ingest = fl.FlightDescriptor.for_command(command("CommandStatementIngest", field(2, b"items")))
writer, reader = client.do_put(ingest, pa.schema([("id", pa.int32())]), opts)
writer.write_batch(pa.record_batch({"id": pa.array([1], pa.int32())}))
expect_error(pa.ArrowException, "", writer.close)
# the server still answers, the data is intact
t = fetch(client, statement_query("SELECT count(*) AS n FROM items"), opts)
assert t.to_pydict() == {"n": [3]}, t
print("OK")
"#,
        &[],
    );
    assert_eq!(server.count("items"), 3);
    server.stop();
}

#[test]
fn adbc_prepared_statements_bind_parameters() {
    let server = Server::start(
        &format!("{ITEMS}\nCREATE TABLE kv (k INT PRIMARY KEY, v TEXT);"),
        Options::default(),
    );
    server.python(
        r#"
conn = connect()
cur = conn.cursor()
cur.execute("SELECT id, name, price FROM items WHERE id = ?", parameters=(3,))
assert cur.fetchall() == [(3, 'a,"b"', decimal.Decimal("-0.01"))]
cur.execute("SELECT id, name FROM items WHERE id = ?", parameters=(1,))
assert cur.fetchall() == [(1, "héllo")]
cur.execute("SELECT id FROM items WHERE id = ?", parameters=(99,))
assert cur.fetchall() == []
# $n placeholders and a text parameter
cur.execute("SELECT id FROM items WHERE name = $1", parameters=("héllo",))
assert cur.fetchall() == [(1,)]

# writes: many rows of parameters in one go, all or nothing
cur.executemany("INSERT INTO kv VALUES (?, ?)", [(1, "one"), (2, "two"), (3, None)])
cur.execute("SELECT k, v FROM kv ORDER BY k")
assert cur.fetchall() == [(1, "one"), (2, "two"), (3, None)]
expect_error(adbc_driver_manager.Error, "",
             lambda: cur.executemany("INSERT INTO kv VALUES (?, ?)", [(4, "four"), (1, "dup")]))
cur.execute("SELECT count(*) FROM kv")
assert cur.fetchone() == (3,)
cur.execute("UPDATE kv SET v = ? WHERE k = ?", parameters=("TWO", 2))
cur.execute("SELECT v FROM kv WHERE k = 2")
assert cur.fetchall() == [("TWO",)]
# a bad parameter count is refused
expect_error(adbc_driver_manager.Error, "parameter",
             lambda: cur.execute("SELECT id FROM items WHERE id = ?", parameters=(1, 2)))
conn.close()
print("OK")
"#,
        &[],
    );
    assert_eq!(server.count("kv"), 3);
    server.stop();
}

#[test]
fn adbc_catalog_commands() {
    let server = Server::start(
        &format!("{ITEMS}\nCREATE VIEW cheap AS SELECT id FROM items WHERE price < 1;"),
        Options::default(),
    );
    server.python(
        r#"
conn = connect()
schema = conn.adbc_get_table_schema("items")
assert schema.names == ["id", "qty", "price", "day", "name", "score", "ok", "small"], schema
assert schema.field("price").type == pa.decimal128(10, 2), schema
assert schema.field("day").type == pa.date32(), schema
expect_error(adbc_driver_manager.Error, "", lambda: conn.adbc_get_table_schema("missing"))

objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
catalogs = {c["catalog_name"]: c for c in objects}
assert list(catalogs) == ["wireload"], objects
schemas = {s["db_schema_name"]: s for s in catalogs["wireload"]["catalog_db_schemas"]}
assert list(schemas) == ["public"], schemas
tables = {t["table_name"]: t for t in schemas["public"]["db_schema_tables"]}
assert tables["items"]["table_type"] == "TABLE", tables
assert tables["cheap"]["table_type"] == "VIEW", tables
assert [c["column_name"] for c in tables["items"]["table_columns"]][:3] == ["id", "qty", "price"]

only = conn.adbc_get_objects(depth="tables", table_name_filter="it%").read_all().to_pylist()
names = [t["table_name"] for c in only for s in c["catalog_db_schemas"] for t in s["db_schema_tables"]]
assert names == ["items"], names
types = conn.adbc_get_table_types()
assert set(types) == {"TABLE", "VIEW"}, types
info = conn.adbc_get_info()
assert info["vendor_name"] == "wireload", info
# what one request creates, the catalog commands of the next one see
cur = conn.cursor()
cur.execute("CREATE TABLE later (x INT NOT NULL)")
cur.execute("CREATE VIEW later_view AS SELECT x FROM later")
objects = conn.adbc_get_objects(depth="tables").read_all().to_pylist()
kinds = {t["table_name"]: t["table_type"] for c in objects for s in c["catalog_db_schemas"]
         for t in s["db_schema_tables"]}
assert kinds == {"items": "TABLE", "cheap": "VIEW", "later": "TABLE", "later_view": "VIEW"}, kinds
later = conn.adbc_get_table_schema("later")
assert later.names == ["x"] and later.field("x").type == pa.int32() and not later.field("x").nullable, later
cur.close()
conn.close()
print("OK")
"#,
        &[],
    );
    server.stop();
}

/// A non-loopback address of this machine, when it has one.
fn outside_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    // no packet is sent: connecting a UDP socket only picks the route and source address
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn trust_local_admits_loopback_clients_only() {
    // no users and no --trust-local: refused at start
    let rt = Runtime::new().unwrap();
    let refused = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let db = Arc::new(Database::new(DbConfig {
            threads: Some(1),
            ..Default::default()
        }));
        let options = Options {
            users: false,
            ..Options::default()
        };
        serve(db, listener, settings(&options), async {}).await
    });
    assert!(matches!(refused, Err(FlightError::NoUsers)), "{refused:?}");

    let server = Server::start(
        ITEMS,
        Options {
            users: false,
            trust_local: true,
            bind: "0.0.0.0:0",
            ..Options::default()
        },
    );
    let outside = outside_address().map(|ip| ip.to_string());
    let stdout = server.python(
        r#"
conn = connect(user=None)
cur = conn.cursor()
cur.execute("SELECT count(*) FROM items")
assert cur.fetchone() == (3,)
assert cur.adbc_ingest("items", pa.table({"id": pa.array([9], pa.int32())}).append_column(
    "qty", pa.array([None], pa.int64())).append_column(
    "price", pa.array([None], pa.decimal128(10, 2))).append_column(
    "day", pa.array([None], pa.date32())).append_column(
    "name", pa.array([None], pa.string())).append_column(
    "score", pa.array([None], pa.float64())).append_column(
    "ok", pa.array([None], pa.bool_())).append_column(
    "small", pa.array([None], pa.int16())), mode="append") == 1
conn.close()
# pyarrow without any credentials
client = fl.FlightClient(URI)
assert fetch(client, statement_query("SELECT count(*) AS n FROM items"), None).to_pydict() == {"n": [4]}
# wrong credentials are still wrong
expect_error(fl.FlightUnauthenticatedError, "wrong user name or password",
             lambda: fl.FlightClient(URI).authenticate_basic_token("x", "y"))
outside = os.environ.get("OUTSIDE")
if outside:
    far = fl.FlightClient(f"grpc://{outside}:{PORT}")
    expect_error(fl.FlightUnauthenticatedError, "credentials required",
                 lambda: far.get_flight_info(statement_query("SELECT 1")))
    print("refused the non-loopback client at", outside)
else:
    print("no non-loopback address: the refusal of a remote client is not checked")
print("OK")
"#,
        &[("OUTSIDE", outside.as_deref().unwrap_or_default())],
    );
    if let Some(ip) = &outside {
        assert!(
            stdout.contains(&format!("refused the non-loopback client at {ip}")),
            "{stdout}"
        );
    } else {
        eprintln!("no non-loopback address: the refusal of a remote client is not checked");
    }
    assert_eq!(server.count("items"), 4);
    server.stop();
}

fn self_signed(dir: &Path) -> TlsFiles {
    let (cert, key) = wireload_clients::self_signed(dir);
    TlsFiles { cert, key }
}

#[test]
fn tls_with_certificate_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = self_signed(dir.path());

    // a key that is not a key: refused at start
    let bad = dir.path().join("bad.pem");
    std::fs::write(
        &bad,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let rt = Runtime::new().unwrap();
    let refused = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let db = Arc::new(Database::new(DbConfig {
            threads: Some(1),
            ..Default::default()
        }));
        let options = Options {
            tls: Some(TlsFiles {
                cert: files.cert.clone(),
                key: bad.clone(),
            }),
            ..Options::default()
        };
        serve(db, listener, settings(&options), async {}).await
    });
    assert!(matches!(refused, Err(FlightError::Tls(_))), "{refused:?}");
    let missing = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let db = Arc::new(Database::new(DbConfig {
            threads: Some(1),
            ..Default::default()
        }));
        let options = Options {
            tls: Some(TlsFiles {
                cert: dir.path().join("none.pem"),
                key: files.key.clone(),
            }),
            ..Options::default()
        };
        serve(db, listener, settings(&options), async {}).await
    });
    assert!(
        matches!(missing, Err(FlightError::TlsFile { .. })),
        "{missing:?}"
    );

    let server = Server::start(
        ITEMS,
        Options {
            tls: Some(files.clone()),
            ..Options::default()
        },
    );
    server.python(
        r#"
pem = open(os.environ["CERT"]).read()
conn = connect(f"grpc+tls://127.0.0.1:{PORT}", **{"adbc.flight.sql.client_option.tls_root_certs": pem})
cur = conn.cursor()
cur.execute("SELECT name FROM items WHERE id = 1")
assert cur.fetchall() == [("héllo",)]
conn.close()
# pyarrow over TLS, trusting the certificate
client = fl.FlightClient(f"grpc+tls://127.0.0.1:{PORT}", tls_root_certs=pem.encode())
opts = fl.FlightCallOptions(headers=[client.authenticate_basic_token(USER, PASSWORD)])
assert fetch(client, statement_query("SELECT count(*) AS n FROM items"), opts).to_pydict() == {"n": [3]}
# without TLS, or without trusting the certificate: no connection
def plain():
    conn = connect()
    conn.cursor().execute("SELECT 1")
expect_error(adbc_driver_manager.Error, "", plain)
def untrusted():
    conn = connect(f"grpc+tls://127.0.0.1:{PORT}")
    conn.cursor().execute("SELECT 1")
expect_error(adbc_driver_manager.Error, "", untrusted)
print("OK")
"#,
        &[("CERT", files.cert.to_str().unwrap())],
    );
    server.stop();
}

#[test]
fn messages_over_the_limit_fail_alone() {
    let server = Server::start(
        "CREATE TABLE big (id INT, s TEXT);",
        Options {
            limits: Limits {
                max_message_bytes: 64 * 1024,
                ..Limits::default()
            },
            ..Options::default()
        },
    );
    server.python(
        r#"
conn = connect()
cur = conn.cursor()
huge = pa.table({"id": pa.array(range(1000), pa.int32()), "s": pa.array(["x" * 1000] * 1000)})
expect_error(adbc_driver_manager.Error, "", lambda: cur.adbc_ingest("big", huge, mode="append"))
small = pa.table({"id": pa.array([1, 2], pa.int32()), "s": pa.array(["a", "b"])})
assert cur.adbc_ingest("big", small, mode="append") == 2
cur.execute("SELECT count(*) FROM big")
assert cur.fetchone() == (2,)
# results are not limited by it: a large answer streams in pieces
cur.execute("SELECT repeat('y', 1000) AS s FROM big CROSS JOIN (SELECT * FROM generate_series(1, 500)) g")
assert cur.fetch_arrow_table().num_rows == 1000
print("OK")
"#,
        &[],
    );
    assert_eq!(server.count("big"), 2);
    server.stop();
}

#[test]
fn results_waiting_to_be_fetched_count_in_the_memory_budget() {
    let server = Server::start(
        "",
        Options {
            memory_limit: Some(16 << 20),
            ..Options::default()
        },
    );
    server.python(
        r#"
conn = connect()
cur = conn.cursor()
# a result is kept from GetFlightInfo to DoGet: 40 MB of it do not fit a 16 MiB budget
expect_error(adbc_driver_manager.Error, "memory budget",
    lambda: cur.execute("SELECT repeat('y', 200) AS s FROM generate_series(1, 200000)"))
cur.execute("SELECT count(*) FROM generate_series(1, 200000)")
assert cur.fetchone() == (200000,)
# fetched results give their memory back
for _ in range(5):
    cur.execute("SELECT repeat('y', 200) AS s FROM generate_series(1, 20000)")
    assert cur.fetch_arrow_table().num_rows == 20000
print("OK")
"#,
        &[],
    );
    server.stop();
}

#[test]
fn connections_over_the_limit_are_refused() {
    let server = Server::start(
        ITEMS,
        Options {
            limits: Limits {
                max_connections: 1,
                ..Limits::default()
            },
            ..Options::default()
        },
    );
    const ATTEMPT: &str = r#"
client = fl.FlightClient(URI)
opts = fl.FlightCallOptions(timeout=10)
try:
    header = client.authenticate_basic_token(USER, PASSWORD, opts)
    opts = fl.FlightCallOptions(timeout=10, headers=[header])
    n = fetch(client, statement_query("SELECT count(*) AS n FROM items"), opts).to_pydict()["n"]
    print("connected", n)
except fl.FlightError as e:
    print("refused", type(e).__name__)
print("OK")
"#;
    // one connection holds the only slot: the client is turned away
    let holder = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let stdout = server.python(ATTEMPT, &[]);
    assert!(stdout.contains("refused"), "{stdout}");
    // once it closes, the slot is free again
    drop(holder);
    let mut stdout = String::new();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        stdout = server.python(ATTEMPT, &[]);
        if stdout.contains("connected") {
            break;
        }
    }
    assert!(stdout.contains("connected [3]"), "{stdout}");
    server.stop();
}

/// A role reaches over Flight SQL only what it was granted: tables by privilege, server
/// files by the built-in roles and beneath the allowed directory; the flyer superuser
/// reaches files beneath it only.
#[test]
fn roles_and_the_file_gate_hold_over_flight_sql() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.csv"), "1\n2\n").unwrap();
    let server = Server::start(
        "CREATE TABLE secret (id INT); INSERT INTO secret VALUES (1); \
         CREATE TABLE open (id INT); INSERT INTO open VALUES (7); \
         CREATE USER reader PASSWORD 'rpw'; GRANT SELECT ON open TO reader;",
        Options {
            files: Some(dir.path().to_path_buf()),
            ..Options::default()
        },
    );
    let inside = dir.path().join("in.csv").display().to_string();
    let out = dir.path().join("out.csv").display().to_string();
    let script = r#"
INSIDE, OUT = os.environ["INSIDE"], os.environ["OUT"]
reader = connect(user="reader", password="rpw")
cur = reader.cursor()
cur.execute("SELECT id FROM open")
assert cur.fetchall() == [(7,)]
for sql in ["SELECT * FROM secret", "SELECT * FROM open JOIN secret ON true",
            "EXPLAIN ANALYZE SELECT * FROM secret", "INSERT INTO secret VALUES (9)",
            "DELETE FROM secret", "CREATE TABLE mine (a INT)", "CREATE ROLE eve",
            "GRANT pg_read_server_files TO reader", f"SELECT * FROM '{INSIDE}'",
            f"COPY open TO '{OUT}'", "SELECT * FROM '/etc/passwd'"]:
    expect_error(Exception, "permission denied", lambda: cur.execute(sql))
expect_error(Exception, "permission denied", lambda: cur.adbc_ingest("secret", pa.table({"id": pa.array([5], pa.int32())}), mode="append"))
admin = connect()
a = admin.cursor()
a.execute(f"SELECT count(*) FROM '{INSIDE}'")
assert a.fetchall() == [(2,)]
expect_error(Exception, "permission denied", lambda: a.execute("SELECT * FROM '/etc/passwd'"))
a.execute("GRANT pg_read_server_files TO reader")
cur.execute(f"SELECT count(*) FROM '{INSIDE}'")
assert cur.fetchall() == [(2,)]
expect_error(Exception, "permission denied", lambda: cur.execute(f"COPY open TO '{OUT}'"))
expect_error(Exception, "unauthenticated", lambda: connect(user="reader", password="nope").cursor().execute("SELECT 1"))
print("OK")
"#;
    server.python(script, &[("INSIDE", &inside), ("OUT", &out)]);
    assert_eq!(server.count("secret"), 1);
    assert!(!dir.path().join("out.csv").exists());
    server.stop();
}
