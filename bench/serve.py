#!/usr/bin/env python3
"""COPY over the wire: `wireload serve` against a real PostgreSQL 15, side by side.

Loads TPC-H lineitem four ways into each server over loopback, in one run:

- local:  `COPY lineitem FROM '/path/lineitem.tbl'` (the server reads the file itself);
- psql:   `psql -c "COPY lineitem FROM STDIN ..." < lineitem.tbl`;
- psycopg: `cursor.copy("COPY lineitem FROM STDIN ...")`, writing 1 MiB blocks;
- adbc:   the file read into an Arrow table first (not timed), then `adbc_ingest` of it
          (wireload through Arrow Flight SQL, PostgreSQL through ADBC's PostgreSQL driver).

Then query latency: a point query by key (both servers with an index on the key), TPC-H
Q1, and a large result (every column of about a million rows), through psycopg (both
servers) and through ADBC Flight SQL (wireload).

Repetitions are interleaved (rep 1 of every contestant, then rep 2, ...), medians quoted.
PostgreSQL runs from Debian's packages (`/usr/lib/postgresql/15/bin`) as user postgres, its
data directory on /dev/shm, with fsync, synchronous_commit and full_page_writes off; its
table has a 17th column for the trailing `|` of the .tbl lines.

    bench/.venv/bin/python bench/serve.py --data /dev/shm/wl-sf1 --runs 3 --out bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (  # noqa: E402
    DUMMY_COLUMN,
    TPCH_SCHEMA,
    command_line,
    git_commit,
    loadavg,
    machine_info,
    touch_memory,
    wireload_version,
)
from record import record  # noqa: E402

USER = "bench"
PASSWORD = "bench-password"
TABLE = "lineitem"
Q1 = """SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
 sum(l_extendedprice) AS sum_base_price,
 sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
 sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
 avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
 count(*) AS count_order
FROM lineitem WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"""
POINT = "SELECT * FROM lineitem WHERE l_orderkey = 4000000 AND l_linenumber = 1"
# a large result: about a million rows of every column
SCAN = "SELECT * FROM lineitem WHERE l_orderkey <= 1000000"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddl(dummy: bool) -> str:
    cols = [f"{n} {t}" for n, t in TPCH_SCHEMA[TABLE]]
    if dummy:
        cols.append(f"{DUMMY_COLUMN} TEXT")
    return f"CREATE TABLE {TABLE} ({', '.join(cols)})"


class Server:
    """A server under test: its name, psql connection string and ADBC URI."""

    def __init__(self, name: str, port: int, dummy: bool):
        self.name = name
        self.port = port
        self.dummy = dummy
        self.conninfo = f"host=127.0.0.1 port={port} user={USER} password={PASSWORD} dbname=postgres sslmode=disable"

    def psql(self, *args: str, stdin=None) -> float:
        start = time.perf_counter()
        subprocess.run(
            ["psql", self.conninfo, "-X", "-q", "-v", "ON_ERROR_STOP=1", *args],
            stdin=stdin,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return time.perf_counter() - start

    def reset(self) -> None:
        self.psql("-c", f"DROP TABLE IF EXISTS {TABLE}", "-c", ddl(self.dummy))


def start_wireload(binary: str, threads: int) -> tuple[subprocess.Popen, Server, int]:
    port, flight = free_port(), free_port()
    env = dict(os.environ, WIRELOAD_USER=USER, WIRELOAD_PASSWORD=PASSWORD, RUST_LOG="warn")
    proc = subprocess.Popen(
        [binary, "--threads", str(threads), "serve", "--listen", f"127.0.0.1:{port}",
         "--flight-listen", f"127.0.0.1:{flight}"],
        env=env,
    )
    server = Server("wireload", port, dummy=False)
    wait_ready(server)
    return proc, server, flight


def start_postgres(pg_bin: Path) -> tuple[Path, Server]:
    port = free_port()
    data = Path(tempfile.mkdtemp(prefix="wl-pg-", dir="/dev/shm"))
    shutil.chown(data, "postgres", "postgres")
    pwfile = data / "pw"
    pwfile.write_text(PASSWORD)
    shutil.chown(pwfile, "postgres", "postgres")
    as_pg = ["runuser", "-u", "postgres", "--"]
    subprocess.run(
        [*as_pg, str(pg_bin / "initdb"), "-D", str(data / "db"), "-U", USER,
         f"--pwfile={pwfile}", "--auth=scram-sha-256", "-E", "UTF8"],
        check=True, stdout=subprocess.DEVNULL,
    )
    opts = (f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=2GB "
            "-c max_wal_size=16GB -c wal_level=minimal -c max_wal_senders=0")
    subprocess.run(
        [*as_pg, str(pg_bin / "pg_ctl"), "-D", str(data / "db"), "-o", opts,
         "-l", str(data / "log"), "-w", "start"],
        check=True, stdout=subprocess.DEVNULL,
    )
    server = Server("PostgreSQL 15", port, dummy=True)
    wait_ready(server)
    return data, server


def wait_ready(server: Server) -> None:
    for _ in range(200):
        if subprocess.run(["psql", server.conninfo, "-X", "-c", "SELECT 1"],
                          capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise SystemExit(f"{server.name} did not come up")


def busy_seconds() -> float:
    """CPU seconds all CPUs of this machine have spent busy since boot (/proc/stat)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def children_seconds() -> float:
    """CPU seconds of this process's finished children (the clients)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def copy_options() -> str:
    return "WITH (FORMAT csv, DELIMITER '|')"


def worker(argv: list[str]) -> None:
    """Timed client work in a fresh process: prints seconds (or a JSON result)."""
    kind, conninfo = argv[0], argv[1]
    if kind == "psycopg":
        import psycopg
        path = argv[2]
        with psycopg.connect(conninfo, autocommit=True) as conn:
            cur = conn.cursor()
            start = time.perf_counter()
            with open(path, "rb") as f, cur.copy(f"COPY {TABLE} FROM STDIN {copy_options()}") as copy:
                while block := f.read(1 << 20):
                    copy.write(block)
            print(time.perf_counter() - start)
    elif kind in ("adbc-flight", "adbc-pg"):
        import pyarrow as pa
        import pyarrow.csv as pacsv
        path, dummy = argv[2], argv[3] == "1"
        types = {"INTEGER": pa.int32(), "BIGINT": pa.int64(), "DATE": pa.date32()}
        names = [n for n, _ in TPCH_SCHEMA[TABLE]]
        fields = []
        for n, t in TPCH_SCHEMA[TABLE]:
            if t.startswith("DECIMAL"):
                fields.append((n, pa.decimal128(15, 2)))
            else:
                fields.append((n, types.get(t, pa.string())))
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names + ["_x"]),
            parse_options=pacsv.ParseOptions(delimiter="|"),
            convert_options=pacsv.ConvertOptions(column_types=dict(fields), include_columns=names),
        )
        if dummy:
            table = table.append_column(DUMMY_COLUMN, pa.nulls(table.num_rows, pa.string()))
        if kind == "adbc-flight":
            import adbc_driver_flightsql.dbapi as flight
            conn = flight.connect(conninfo, db_kwargs={"username": USER, "password": PASSWORD})
        else:
            import adbc_driver_postgresql.dbapi as pg
            conn = pg.connect(conninfo)
        cur = conn.cursor()
        start = time.perf_counter()
        cur.adbc_ingest(TABLE, table, mode="append")
        conn.commit()
        print(time.perf_counter() - start)
        conn.close()
    elif kind == "query-psycopg":
        import psycopg
        sql, n = argv[2], int(argv[3])
        with psycopg.connect(conninfo, autocommit=True) as conn:
            times = []
            for _ in range(n):
                start = time.perf_counter()
                rows = conn.execute(sql).fetchall()
                times.append(time.perf_counter() - start)
            print(json.dumps({"median": statistics.median(times), "rows": len(rows)}))
    elif kind == "query-flight":
        import adbc_driver_flightsql.dbapi as flight
        sql, n = argv[2], int(argv[3])
        conn = flight.connect(conninfo, db_kwargs={"username": USER, "password": PASSWORD})
        cur = conn.cursor()
        times = []
        for _ in range(n):
            start = time.perf_counter()
            cur.execute(sql)
            t = cur.fetch_arrow_table()
            times.append(time.perf_counter() - start)
        print(json.dumps({"median": statistics.median(times), "rows": t.num_rows}))
        conn.close()
    else:
        raise SystemExit(f"unknown worker {kind}")


def run_worker(*args: str) -> str:
    out = subprocess.run([sys.executable, __file__, "--worker", *args],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="/dev/shm/wl-sf1")
    p.add_argument("--wireload", default="target/release/wireload")
    p.add_argument("--pg-bin", default="/usr/lib/postgresql/15/bin")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", default=None)
    p.add_argument("--out", default=None, help="results file (bench/RESULTS.md) whose figures for this run are replaced; the run is recorded in records/ beside it")
    p.add_argument("--worker", nargs=argparse.REMAINDER)
    args = p.parse_args()
    if args.worker:
        worker(args.worker)
        return
    path = str(Path(args.data) / f"{TABLE}.tbl")
    size = os.path.getsize(path)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_before = loadavg()
    wl_proc, wl, flight_port = start_wireload(args.wireload, args.threads)
    pg_dir, pg = start_postgres(Path(args.pg_bin))
    results: dict[str, list[float]] = {}
    # CPU seconds per load: (the machine's busy time less the client's, the client's)
    cpu: dict[str, list[tuple[float, float]]] = {}
    try:
        methods = ["local", "psql", "psycopg", "adbc"]
        for rep in range(args.runs):
            for server in (wl, pg):
                for m in methods:
                    server.reset()
                    touch_memory(2 * size)
                    busy, clients = busy_seconds(), children_seconds()
                    if m == "local":
                        t = server.psql("-c", f"COPY {TABLE} FROM '{path}' {copy_options()}")
                    elif m == "psql":
                        with open(path, "rb") as f:
                            t = server.psql("-c", f"COPY {TABLE} FROM STDIN {copy_options()}", stdin=f)
                    elif m == "psycopg":
                        t = float(run_worker("psycopg", server.conninfo, path))
                    else:
                        if server is wl:
                            t = float(run_worker("adbc-flight", f"grpc://127.0.0.1:{flight_port}", path, "0"))
                        else:
                            uri = f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{server.port}/postgres"
                            t = float(run_worker("adbc-pg", uri, path, "1"))
                    clients = children_seconds() - clients
                    busy = busy_seconds() - busy
                    results.setdefault(f"{server.name}|{m}", []).append(t)
                    cpu.setdefault(f"{server.name}|{m}", []).append((busy - clients, clients))
                    print(f"rep {rep + 1} {server.name:14} {m:8} {t:7.2f} s  {size / 1e6 / t:7.1f} MB/s"
                          f"  cpu: server {busy - clients:5.2f} s, client {clients:5.2f} s", flush=True)
        # queries on the last load (ADBC's), with an index on the key for the point query
        wl.psql("-c", f"CREATE INDEX lineitem_key ON {TABLE} (l_orderkey, l_linenumber)")
        pg.psql("-c", f"CREATE INDEX lineitem_key ON {TABLE} (l_orderkey, l_linenumber)", "-c", f"ANALYZE {TABLE}")
        queries = {}
        for name, sql, n in (("point", POINT, 50), ("Q1", Q1, 5), ("scan", SCAN, 3)):
            for server in (wl, pg):
                r = json.loads(run_worker("query-psycopg", server.conninfo, sql, str(n)))
                queries[f"{server.name}|psycopg|{name}"] = r
            r = json.loads(run_worker("query-flight", f"grpc://127.0.0.1:{flight_port}", sql, str(n)))
            queries[f"wireload|flight|{name}"] = r
    finally:
        wl_proc.terminate()
        wl_proc.wait(timeout=30)
        subprocess.run(["runuser", "-u", "postgres", "--", str(Path(args.pg_bin) / "pg_ctl"),
                        "-D", str(pg_dir / "db"), "-m", "fast", "stop"], stdout=subprocess.DEVNULL)
        shutil.rmtree(pg_dir, ignore_errors=True)

    import adbc_driver_flightsql
    import psycopg
    import pyarrow

    m = machine_info()
    pg_version = subprocess.run([str(Path(args.pg_bin) / "postgres"), "--version"],
                                capture_output=True, text=True).stdout.strip()
    lines = [
        f"## COPY over the wire: wireload serve vs PostgreSQL 15, lineitem SF1 ({time.strftime('%Y-%m-%d')})",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} CPUs ({m.get('virt', 'bare metal')} guest), "
        f"{m['memory']} RAM, Linux {m['kernel']}",
        f"- Run: {started} to {time.strftime('%Y-%m-%dT%H:%M:%S%z')}; load average {load_before} before, "
        f"{loadavg()} after",
        f"- Command: `{command_line(sys.argv[1:], __file__)}` (commit {git_commit()})",
        f"- Versions: wireload {wireload_version(args.wireload)}, {pg_version}, psql from Debian's "
        f"postgresql-client, psycopg {psycopg.__version__}, adbc_driver_flightsql "
        f"{adbc_driver_flightsql.__version__}, pyarrow {pyarrow.__version__}",
        f"- Data: {path} ({size / 1e6:.1f} MB, tmpfs); clients and servers on this machine over "
        f"loopback; wireload --threads {args.threads}; PostgreSQL with fsync, "
        "synchronous_commit and full_page_writes off, data on tmpfs",
        f"- {args.runs} interleaved repetitions, medians (all runs in parentheses); MB/s = file "
        "bytes / seconds; ADBC's time excludes reading the CSV into Arrow",
        "- CPU s (median): the server's = the machine's busy CPU time during the load less the "
        "client processes' (user + system, so the kernel's loopback work is split between "
        "them); client and server share this machine's CPUs; ADBC's client CPU includes reading "
        "the CSV into Arrow",
        "",
        "| method | wireload s | wireload MB/s | CPU s server + client | PostgreSQL 15 s | "
        "PostgreSQL MB/s | CPU s server + client | PostgreSQL / wireload |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    med = {k: statistics.median(v) for k, v in results.items()}
    runs = {k: ", ".join(f"{x:.2f}" for x in v) for k, v in results.items()}
    cpus = {k: (statistics.median(s for s, _ in v), statistics.median(c for _, c in v))
            for k, v in cpu.items()}
    for m_ in methods:
        w, g = med[f"wireload|{m_}"], med[f"PostgreSQL 15|{m_}"]
        (ws, wc), (gs, gc) = cpus[f"wireload|{m_}"], cpus[f"PostgreSQL 15|{m_}"]
        lines.append(f"| {m_} | {w:.2f} ({runs[f'wireload|{m_}']}) | {size / 1e6 / w:.0f} | "
                     f"{ws:.2f} + {wc:.2f} | {g:.2f} ({runs[f'PostgreSQL 15|{m_}']}) | "
                     f"{size / 1e6 / g:.0f} | {gs:.2f} + {gc:.2f} | {g / w:.1f}x |")
    best = min(("psql", "psycopg"), key=lambda m_: med[f"wireload|{m_}"])
    best_wire = med[f"wireload|{best}"]
    lines += [
        "",
        f"COPY FROM STDIN (the faster of psql and psycopg: {best}) reaches "
        f"{med['wireload|local'] / best_wire:.0%} of wireload's local COPY throughput and is "
        f"{med[f'PostgreSQL 15|{best}'] / best_wire:.1f}x PostgreSQL's {best} COPY, "
        f"{med['PostgreSQL 15|local'] / best_wire:.1f}x PostgreSQL's local COPY. "
        f"Its server side used {cpus[f'wireload|{best}'][0]:.2f} CPU s against "
        f"{cpus['wireload|local'][0]:.2f} for the local load, and its client "
        f"{cpus[f'wireload|{best}'][1]:.2f} CPU s on the same {os.cpu_count()} CPUs.",
        "",
        "Query latency after the loads (median ms over the repetitions of one client session):",
        "",
        "| query | wireload psycopg ms | wireload Flight SQL (ADBC) ms | PostgreSQL psycopg ms | rows |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in ("point", "Q1", "scan"):
        a = queries[f"wireload|psycopg|{name}"]
        b = queries[f"wireload|flight|{name}"]
        c = queries[f"PostgreSQL 15|psycopg|{name}"]
        lines.append(f"| {name} | {a['median'] * 1e3:.2f} | {b['median'] * 1e3:.2f} | "
                     f"{c['median'] * 1e3:.2f} | {a['rows']} |")
    lines += ["", "point: `" + POINT + "` (50 runs, an index on the key in both); Q1: TPC-H Q1 "
              "(5 runs); scan: `" + SCAN + "` (3 runs).", ""]
    report = "\n".join(lines)
    print()
    print(report)
    if args.out:
        print(f"wrote {record('serve sf=1', report, results=args.out)}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"loads": results, "queries": queries}, indent=1))


if __name__ == "__main__":
    main()
