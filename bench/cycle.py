#!/usr/bin/env python3
"""The TPC-H load-work-unload cycle: wireload against DuckDB and Hyper, side by side.

The cycle (the issue's bar): load the 8 TPC-H tables from `.tbl` files, run the 22
TPC-H queries, unload the database to the engine's compressed binary format; then,
after dropping the tables, reload them from that binary unload (timed separately, not
part of the cycle). Contestants:

- wireload: `wireload-bench --threads N tpch --data DIR --runs 1 --json --work W` (the
  benchmark binary beside `--wireload`)
  (Arrow IPC files with LZ4, `EXPORT DATABASE` / `IMPORT DATABASE`);
- DuckDB: in-memory database, COPY FROM, the 22 queries, `EXPORT DATABASE ... (FORMAT
  parquet)`, `IMPORT DATABASE`;
- Hyper API: a `.hyper` file on /dev/shm, COPY FROM, the 22 queries, `COPY (SELECT ...)
  TO 'f.parquet' WITH (FORMAT parquet)` per table, reload with `INSERT ... SELECT FROM
  external('f.parquet')`;
- Polars, pyarrow and chDB: the load alone (the 8 tables into memory).

Every query answer of wireload, DuckDB and Hyper (first repetition) is checked against
DuckDB's answers computed once by bench/tpch_answers.py, by `wireload-bench answers` (the
answer check of crates/wireload-tpch, at its strict tolerance). Repetitions are interleaved,
each in a fresh process; medians are recorded with bench/record.py
(a record in bench/records/, its figures in bench/RESULTS.md).

    bench/.venv/bin/python bench/cycle.py                    # SF1, 2 threads, 3 runs

Peer workers are this script run with `--worker NAME` by bench/.venv/bin/python.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

# bench/load.py: the schema, the load peers and machine info
import load as loadbench
from record import record  # noqa: E402
from load import (
    ALL_TABLES,
    DUMMY_COLUMN,
    TOUCH_FACTOR,
    TPCH_SCHEMA,
    ContestantFailed,
    create_table_sql,
    sql_string,
    tail,
    touch_memory,
)

QUERY_DIR = REPO / "crates" / "wireload-tpch" / "sql"
QUERIES = list(range(1, 23))

CYCLE = ["wireload", "duckdb", "hyper"]
LOAD_ONLY = ["polars", "pyarrow", "chdb"]
CONTESTANTS = [*CYCLE, *LOAD_ONLY]
MODULES = {
    "duckdb": "duckdb",
    "hyper": "tableauhyperapi",
    "polars": "polars",
    "pyarrow": "pyarrow",
    "chdb": "chdb",
}

# The bars of the issue (TPC-H SF1, 2 threads).
BAR_RELOAD_SPEEDUP = 3.0
BAR_UNLOAD_SHARE = 0.60


def query_text(n: int) -> str:
    return (QUERY_DIR / f"q{n}.sql").read_text()


# --------------------------------------------------------------------------
# Answers: writing (workers) and checking (driver, through wireload-bench)
# --------------------------------------------------------------------------


def cell_text(value: object) -> str:
    """A result value as answer-file text (as bench/tpch_answers.py writes it)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if hasattr(value, "to_date"):  # tableauhyperapi.Date
        return value.to_date().isoformat()
    if hasattr(value, "to_datetime"):  # tableauhyperapi.Timestamp
        return value.to_datetime().isoformat(sep=" ")
    return str(value)


def write_answer(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for row in rows:
            w.writerow([cell_text(v) for v in row])


def check_answers(
    args: argparse.Namespace, answers_root: Path, names: list[str]
) -> tuple[dict[str, dict[int, dict]], str | None]:
    """The answers in answers_root/NAME checked against answers_root/reference by
    `wireload-bench answers`: per contestant and query {ok, rows, expected_rows, approx,
    diffs (at most 3)}, or an error text."""
    if not names:
        return {}, None
    bench = str(Path(args.wireload).with_name("wireload-bench"))
    cmd = [bench, "answers", "--expected", str(answers_root / "reference")]
    cmd += [str(answers_root / c) for c in names]
    try:
        proc = subprocess.run(
            cmd, check=False, capture_output=True, text=True, timeout=args.timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, f"`{shlex.join(cmd)}` failed: {exc}"
    if proc.returncode != 0:
        return {}, f"`{shlex.join(cmd)}` exited {proc.returncode}: {tail(proc.stderr)}"
    doc = json.loads(proc.stdout)
    checks = {
        c: {
            int(n): {
                "ok": v["ok"],
                "rows": v["rows"],
                "expected_rows": v["expected_rows"],
                "approx": v["approximate"],
                "diffs": v["differences"][:3],
            }
            for n, v in doc[str(answers_root / c)].items()
        }
        for c in names
    }
    return checks, None


# --------------------------------------------------------------------------
# Workers (run inside a fresh process)
# --------------------------------------------------------------------------


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def parquet_codec(path: Path) -> str:
    """The compression codec of a Parquet file's first column chunk (read with pyarrow)."""
    try:
        import pyarrow.parquet as pq

        md = pq.ParquetFile(str(path)).metadata
        return md.row_group(0).column(0).compression if md.num_row_groups else "n/a"
    except Exception as exc:  # noqa: BLE001 -- informational only
        return f"unknown ({type(exc).__name__})"


class CycleWorker:
    """One engine running the whole cycle in a worker process."""

    name = ""

    def __init__(self, threads: int, work: Path):
        self.threads = threads
        self.work = work

    def version(self) -> str:
        raise NotImplementedError

    def create(self) -> None:
        """Untimed: CREATE TABLE for the 8 tables."""
        raise NotImplementedError

    def load(self, table: str, path: str) -> None:
        raise NotImplementedError

    def count(self, table: str) -> int:
        raise NotImplementedError

    def query(self, sql: str) -> object:
        """Runs a query and materializes its result (timed)."""
        raise NotImplementedError

    def result_rows(self, result: object) -> tuple[list[str], list[list[object]]]:
        """Untimed: header and rows of a query result as Python values."""
        raise NotImplementedError

    def unload(self, export: Path) -> None:
        raise NotImplementedError

    def drop(self) -> None:
        """Untimed: drop the 8 tables (and re-create them where the reload needs it)."""
        raise NotImplementedError

    def reload(self, export: Path) -> None:
        raise NotImplementedError

    def unload_format(self, export: Path) -> str:
        raise NotImplementedError

    def close(self) -> None:
        pass


class DuckDBCycle(CycleWorker):
    name = "duckdb"

    def __init__(self, threads: int, work: Path):
        super().__init__(threads, work)
        import duckdb

        self.duckdb = duckdb
        self.con = duckdb.connect(":memory:")
        self.run(f"SET threads={threads}")

    def run(self, sql: str) -> None:
        # DuckDB 2 refuses the next statement while a result is unfetched
        self.con.execute(sql).fetchall()

    def version(self) -> str:
        return self.duckdb.__version__

    def create(self) -> None:
        for t in ALL_TABLES:
            self.run(create_table_sql(t))

    def load(self, table: str, path: str) -> None:
        self.run(f"COPY {table} FROM {sql_string(path)} (FORMAT csv, DELIMITER '|', HEADER false)")

    def count(self, table: str) -> int:
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]

    def query(self, sql: str) -> object:
        # the result materialized as an Arrow table, as wireload keeps its result batches
        return self.con.sql(sql).to_arrow_table()

    def result_rows(self, result: object) -> tuple[list[str], list[list[object]]]:
        names = list(result.column_names)
        return names, [[r[n] for n in names] for r in result.to_pylist()]

    def unload(self, export: Path) -> None:
        self.run(f"EXPORT DATABASE {sql_string(str(export))} (FORMAT parquet)")

    def drop(self) -> None:
        for t in ALL_TABLES:
            self.run(f"DROP TABLE {t}")

    def reload(self, export: Path) -> None:
        self.run(f"IMPORT DATABASE {sql_string(str(export))}")

    def unload_format(self, export: Path) -> str:
        return f"Parquet ({parquet_codec(export / 'lineitem.parquet')})"

    def close(self) -> None:
        self.con.close()


class HyperCycle(CycleWorker):
    name = "hyper"

    def __init__(self, threads: int, work: Path):
        super().__init__(threads, work)
        import tableauhyperapi as th

        self.th = th
        params = {
            "soft_concurrent_query_thread_limit": str(threads),
            "hard_concurrent_query_thread_limit": str(threads),
            "log_config": "",
        }
        self.process = th.HyperProcess(
            telemetry=th.Telemetry.DO_NOT_SEND_USAGE_DATA_TO_TABLEAU, parameters=params
        )
        self.db = work / "tpch.hyper"
        self.con = th.Connection(
            endpoint=self.process.endpoint,
            database=str(self.db),
            create_mode=th.CreateMode.CREATE_AND_REPLACE,
        )

    def version(self) -> str:
        return self.th.__version__

    def create(self) -> None:
        # a 17th dummy column: Hyper rejects the trailing '|' of .tbl lines otherwise
        for t in ALL_TABLES:
            self.con.execute_command(create_table_sql(t, dummy=True))

    def load(self, table: str, path: str) -> None:
        self.con.execute_command(
            f"COPY {table} FROM {sql_string(path)} WITH (FORMAT csv, DELIMITER '|')"
        )

    def count(self, table: str) -> int:
        return self.con.execute_scalar_query(f"SELECT COUNT(*) FROM {table}")

    def query(self, sql: str) -> object:
        # Hyper API for Python fetches rows as Python values (no Arrow result)
        with self.con.execute_query(sql) as result:
            names = [c.name.unescaped for c in result.schema.columns]
            rows = [list(r) for r in result]
        return names, rows

    def result_rows(self, result: object) -> tuple[list[str], list[list[object]]]:
        return result

    def _columns(self, table: str, *, for_parquet: bool) -> str:
        cols = []
        for name, typ in TPCH_SCHEMA[table]:
            # Hyper cannot write CHAR(n) to Parquet ("cannot be used in a Parquet file")
            if for_parquet and typ.startswith("CHAR"):
                cols.append(f"{name}::text AS {name}")
            else:
                cols.append(name)
        return ", ".join(cols)

    def unload(self, export: Path) -> None:
        export.mkdir(parents=True, exist_ok=True)
        for t in ALL_TABLES:
            target = sql_string(str(export / f"{t}.parquet"))
            self.con.execute_command(
                f"COPY (SELECT {self._columns(t, for_parquet=True)} FROM {t}) "
                f"TO {target} WITH (FORMAT parquet)"
            )

    def drop(self) -> None:
        for t in ALL_TABLES:
            self.con.execute_command(f"DROP TABLE {t}")
        self.create()

    def reload(self, export: Path) -> None:
        # COPY t FROM 'f.parquet' rejects the Parquet text columns for CHAR(n) columns;
        # INSERT ... SELECT FROM external() casts them
        for t in ALL_TABLES:
            cols = self._columns(t, for_parquet=False)
            self.con.execute_command(
                f"INSERT INTO {t} ({cols}) SELECT {cols} "
                f"FROM external({sql_string(str(export / f'{t}.parquet'))})"
            )

    def unload_format(self, export: Path) -> str:
        return f"Parquet ({parquet_codec(export / 'lineitem.parquet')})"

    def close(self) -> None:
        self.con.close()
        self.process.close()


CYCLE_WORKERS = {"duckdb": DuckDBCycle, "hyper": HyperCycle}


LOAD_PEERS = {"polars": loadbench.PolarsPeer, "pyarrow": loadbench.PyArrowPeer, "chdb": loadbench.ChdbPeer}


def timed_load(load_one, tables: list[dict]) -> dict:
    """Loads the tables one after another; the phase's and each table's seconds."""
    per = []
    touch_memory(int(sum(t["bytes"] for t in tables) * TOUCH_FACTOR))
    start = time.perf_counter()
    for t in tables:
        t0 = time.perf_counter()
        load_one(t)
        per.append({"table": t["name"], "seconds": time.perf_counter() - t0})
    return {"seconds": time.perf_counter() - start, "tables": per}


def cycle_worker(name: str, job: dict) -> dict:
    work = Path(job["work"])
    work.mkdir(parents=True, exist_ok=True)
    eng = CYCLE_WORKERS[name](job["threads"], work)
    out: dict = {"contestant": name, "version": eng.version()}
    eng.create()
    load = timed_load(lambda t: eng.load(t["name"], t["path"]), job["tables"])
    for t in load["tables"]:
        t["rows"] = int(eng.count(t["table"]))
    out["load"] = load
    # the 22 queries
    results = []
    start = time.perf_counter()
    for n in QUERIES:
        sql = query_text(n)
        t0 = time.perf_counter()
        res = eng.query(sql)
        results.append((n, time.perf_counter() - t0, res))
    phase = time.perf_counter() - start
    answers = Path(job["answers"]) if job.get("answers") else None
    if answers:
        answers.mkdir(parents=True, exist_ok=True)
    queries = []
    for n, seconds, res in results:
        header, rows = eng.result_rows(res)
        queries.append({"query": n, "seconds": seconds, "rows": len(rows)})
        if answers:
            write_answer(answers / f"q{n}.csv", header, rows)
    del results
    out["queries"] = {"seconds": phase, "queries": queries}
    # unload
    export = work / "export"
    start = time.perf_counter()
    eng.unload(export)
    seconds = time.perf_counter() - start
    out["unload"] = {
        "seconds": seconds,
        "bytes": dir_bytes(export),
        "format": eng.unload_format(export),
    }
    # reload after dropping the tables
    eng.drop()
    start = time.perf_counter()
    eng.reload(export)
    seconds = time.perf_counter() - start
    counts = {t: int(eng.count(t)) for t in ALL_TABLES}
    out["reload"] = {"seconds": seconds, "rows": counts}
    eng.close()
    shutil.rmtree(work, ignore_errors=True)
    return out


def load_worker(name: str, job: dict) -> dict:
    peer = LOAD_PEERS[name](job["threads"])
    out: dict = {"contestant": name, "version": peer.version()}
    for t in job["tables"]:
        peer.prepare(t["name"])
    handles: dict[str, object] = {}

    def one(t: dict) -> None:
        handles[t["name"]] = peer.load(t["name"], t["path"])

    load = timed_load(one, job["tables"])
    for t in load["tables"]:
        t["rows"] = int(peer.count(t["table"], handles[t["table"]]))
    out["load"] = load
    peer.close()
    return out


def worker_main(name: str) -> int:
    job = json.load(sys.stdin)
    try:
        out = cycle_worker(name, job) if name in CYCLE_WORKERS else load_worker(name, job)
    except Exception as exc:  # noqa: BLE001 -- reported to the driver, which marks it failed
        out = {"contestant": name, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out))
    return 0


def peer_version_main(name: str) -> int:
    module = __import__(MODULES[name])
    version = module.__version__
    if name == "chdb":
        version += f" (ClickHouse {module.engine_version})"
    print(version)
    return 0


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def run_worker(name: str, job: dict, cwd: Path, timeout: float) -> dict:
    env = dict(os.environ)
    env["POLARS_MAX_THREADS"] = str(job["threads"])
    start = time.perf_counter()
    proc = subprocess.run(
        [loadbench.worker_python(), str(Path(__file__).resolve()), "--worker", name],
        input=json.dumps(job),
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,  # where Hyper may leave its log
    )
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise ContestantFailed(
            f"worker exited {proc.returncode}: {tail(proc.stderr or proc.stdout)}"
        )
    result = json.loads(lines[-1])
    if "error" in result:
        raise ContestantFailed(result["error"])
    result["wall"] = wall
    return result


def run_wireload(
    args: argparse.Namespace, specs: list[dict], work: Path, answers: Path | None
) -> dict:
    """One repetition of wireload: `wireload-bench tpch --runs 1 --json` in a fresh process."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = [
        loadbench.bench_binary(args.wireload), "--threads", str(args.threads), "tpch",
        "--data", str(args.data_dir), "--runs", "1", "--json", "--work", str(work),
    ]  # fmt: skip
    if answers is not None:
        cmd += ["--answers", str(answers)]
    touch_memory(int(sum(s["bytes"] for s in specs) * TOUCH_FACTOR))
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - start
    shutil.rmtree(work, ignore_errors=True)
    if proc.returncode != 0:
        raise ContestantFailed(f"`{shlex.join(cmd)}` exited {proc.returncode}: {tail(proc.stderr)}")
    try:
        doc = json.loads(proc.stdout)
        run = doc["runs"][0]
        phases = {p["phase"]: p for p in run["phases"]}
    except (ValueError, KeyError, IndexError) as exc:
        raise ContestantFailed(f"unreadable JSON from `{shlex.join(cmd)}`: {exc}") from exc
    if doc.get("threads") != args.threads:
        raise ContestantFailed(
            f"wireload ran with {doc.get('threads')} threads, asked for {args.threads}"
        )
    return {
        "contestant": "wireload",
        "load": {
            "seconds": phases["load"]["seconds"],
            "tables": [
                {"table": t["table"], "seconds": t["seconds"], "rows": t["rows"]}
                for t in run["tables"]
            ],
        },
        "queries": {
            "seconds": phases["queries"]["seconds"],
            "queries": [
                {"query": q["query"], "seconds": q["seconds"], "rows": q["rows"]}
                for q in run["queries"]
            ],
        },
        "unload": {
            "seconds": phases["unload"]["seconds"],
            "bytes": phases["unload"]["bytes"],
            "format": "Arrow IPC (LZ4)",
        },
        "reload": {"seconds": phases["reload"]["seconds"], "rows": phases["reload"]["rows"]},
        "cycle_seconds": run["cycle_seconds"],
        "wall": wall,
        "cmd": shlex.join(cmd),
    }


def check_rows(result: dict, expected: dict[str, int]) -> None:
    for t in result["load"]["tables"]:
        if t["rows"] != expected[t["table"]]:
            raise ContestantFailed(
                f"{t['table']}: loaded {t['rows']} rows, expected {expected[t['table']]}"
            )
    reload = result.get("reload")
    if reload is not None:
        rows = reload["rows"]
        total = sum(expected.values())
        got = sum(rows.values()) if isinstance(rows, dict) else rows
        if got != total:
            raise ContestantFailed(f"reloaded {got} rows, expected {total}")


def reference_answers(args: argparse.Namespace, out: Path) -> str | None:
    """DuckDB's answers via bench/tpch_answers.py; returns an error text or None."""
    cmd = [
        loadbench.worker_python(), str(HERE / "tpch_answers.py"), "--data", str(args.data_dir),
        "--queries", str(QUERY_DIR), "--out", str(out), "--threads", str(args.threads),
    ]  # fmt: skip
    print(f"reference answers: {shlex.join(cmd)}", file=sys.stderr)
    try:
        proc = subprocess.run(
            cmd, check=False, capture_output=True, text=True, timeout=args.timeout
        )
    except subprocess.TimeoutExpired:
        return "tpch_answers.py timed out"
    if proc.returncode != 0:
        return f"tpch_answers.py exited {proc.returncode}: {tail(proc.stderr)}"
    missing = [n for n in QUERIES if not (out / f"q{n}.csv").is_file()]
    return f"tpch_answers.py wrote no q{missing[0]}.csv" if missing else None


def driver_main(args: argparse.Namespace, argv: list[str]) -> int:
    wall_start = time.monotonic()
    if "wireload" in args.contestants:
        args.wireload = os.path.abspath(args.wireload)
    loadbench.ensure_data(args, ALL_TABLES)
    data = Path(args.data_dir).resolve()
    args.data_dir = str(data)
    fstype = loadbench.filesystem_type(data)
    if fstype not in ("tmpfs", "ramfs"):
        print(
            f"warning: {data} is on {fstype}, not tmpfs: files may fall out of page cache",
            file=sys.stderr,
        )
    if "wireload" in args.contestants and not os.access(args.wireload, os.X_OK):
        sys.exit(f"wireload binary {args.wireload!r} not found (or pass --only without wireload)")
    specs = []
    for t in ALL_TABLES:
        path = data / f"{t}.tbl"
        specs.append(
            {
                "name": t,
                "path": str(path),
                "bytes": path.stat().st_size,
                "rows": loadbench.count_rows(path),
            }
        )
    expected = {s["name"]: s["rows"] for s in specs}
    csv_bytes = sum(s["bytes"] for s in specs)

    versions: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for c in list(args.contestants):
        if c == "wireload":
            versions[c] = loadbench.wireload_version(args.wireload)
            continue
        out = subprocess.run(
            [loadbench.worker_python(), str(Path(__file__).resolve()), "--peer-version", c],
            check=False, capture_output=True, text=True,
        )  # fmt: skip
        if out.returncode != 0:
            skipped[c] = f"not importable from {loadbench.worker_python()}: {tail(out.stderr, 200)}"
            args.contestants.remove(c)
            print(f"leaving out {c}: {skipped[c]}", file=sys.stderr)
        else:
            versions[c] = out.stdout.strip() or "unknown"

    work_root = Path(args.work_dir)
    work_root.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="wireload-cycle-", dir=work_root))
    answers_root = Path(args.answers_dir) if args.answers_dir else workdir / "answers"
    answer_error = reference_answers(args, answers_root / "reference")

    started = dt.datetime.now(dt.UTC)
    load_before = loadbench.loadavg()
    cpu_before = loadbench.cpu_snapshot()
    timed_wall_before = time.monotonic()
    results: dict[str, list[dict]] = {c: [] for c in args.contestants}
    failures: dict[str, str] = {}
    print(
        f"8 tables, {csv_bytes / 1e6:.1f} MB in {data}; contestants: {', '.join(args.contestants)}; "
        f"{args.runs} runs, {args.threads} threads",
        file=sys.stderr,
    )
    try:
        for rep in range(args.runs):
            active = [c for c in args.contestants if c not in failures]
            k = rep % len(active) if active else 0
            for c in active[k:] + active[:k]:
                answers = answers_root / c if rep == 0 and c in CYCLE else None
                rep_work = workdir / f"{c}-{rep + 1}"
                try:
                    if c == "wireload":
                        res = run_wireload(args, specs, rep_work, answers)
                    else:
                        job = {
                            "threads": args.threads,
                            "tables": specs,
                            "work": str(rep_work),
                            "answers": str(answers) if answers else None,
                        }
                        res = run_worker(c, job, workdir, args.timeout)
                    check_rows(res, expected)
                    results[c].append(res)
                    msg = f"load {res['load']['seconds']:7.3f} s"
                    if c in CYCLE:
                        msg += (
                            f", queries {res['queries']['seconds']:7.3f} s, unload "
                            f"{res['unload']['seconds']:7.3f} s, reload {res['reload']['seconds']:7.3f} s"
                        )
                    print(f"rep {rep + 1}/{args.runs} {c:9s} {msg}", file=sys.stderr)
                except (ContestantFailed, subprocess.TimeoutExpired, OSError) as exc:
                    failures[c] = str(exc)
                    print(f"rep {rep + 1}/{args.runs} {c}: FAILED: {exc}", file=sys.stderr)
        finished = dt.datetime.now(dt.UTC)
        load_after = loadbench.loadavg()
        cpu_after = loadbench.cpu_snapshot()
        timed_wall = time.monotonic() - timed_wall_before
        others = (cpu_after[0] - cpu_before[0]) - (cpu_after[1] - cpu_before[1])
        other_share = max(0.0, others / (timed_wall * (os.cpu_count() or 1)))
        if other_share > 0.1:
            print(
                f"warning: other processes used {other_share:.0%} of the CPUs during the run; "
                "the timings are disturbed",
                file=sys.stderr,
            )

        # answer check
        checks: dict[str, dict[int, dict]] = {}
        reference_rows = {}
        if answer_error is None:
            checked = [c for c in CYCLE if c in args.contestants and results.get(c)]
            checks, answer_error = check_answers(args, answers_root, checked)
            for per in checks.values():
                for n, v in per.items():
                    reference_rows[n] = v["expected_rows"]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)  # holds the answers unless --answers-dir

    run = {
        "sf": args.sf,
        "threads": args.threads,
        "runs": args.runs,
        "tables": specs,
        "csv_bytes": csv_bytes,
        "contestants": args.contestants,
        "skipped": skipped,
        "results": results,
        "failures": failures,
        "answer_error": answer_error,
        "answer_checks": {c: {str(n): v for n, v in per.items()} for c, per in checks.items()},
        "reference_rows": {str(n): v for n, v in reference_rows.items()},
        "versions": versions,
        "machine": loadbench.machine_info(),
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "timed_wall_seconds": timed_wall,
        "total_wall_seconds": time.monotonic() - wall_start,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "other_cpu_share": other_share,
        "command": command_line(argv),
        "commit": loadbench.git_commit(),
        "data_dir": str(data),
        "data_fs": fstype,
        "work_dir": str(work_root),
        "python": platform.python_version(),
    }
    section = render_section(run)
    path = record(section_key(args), section, results=args.out)
    print(f"wrote {path} and its figures to {args.out}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(run, indent=1) + "\n")
    print(section)
    diff = answer_error is not None or any(
        not v["ok"] for per in checks.values() for v in per.values()
    )
    return 1 if failures or diff else 0


def command_line(argv: list[str]) -> str:
    def short(path: str) -> str:
        """Relative to the working directory when below it, else absolute."""
        try:
            rel = os.path.relpath(path)
        except ValueError:
            return path
        return path if rel.startswith("..") else rel

    return shlex.join([short(sys.executable), short(os.path.abspath(__file__)), *argv])


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def section_key(args: argparse.Namespace) -> str:
    return f"cycle sf={loadbench.fmt_sf(args.sf)} threads={args.threads}"


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def fmt_s(x: float | None) -> str:
    if x is None:
        return "–"
    if x <= 0:
        return "< 0.001"
    return f"{x:.3f}" if x >= 0.1 else f"{x:.4f}"


def fmt_ratio(x: float | None, ref: float | None) -> str:
    if x is None or ref is None or ref <= 0:
        return ""
    return f"{x / ref:.2f}×"


def phase_values(res: list[dict]) -> dict[str, list[float]]:
    """Per phase, one value per repetition."""
    return {
        "load": [r["load"]["seconds"] for r in res],
        "queries": [r["queries"]["seconds"] for r in res],
        "unload": [r["unload"]["seconds"] for r in res],
        "cycle": [
            r["load"]["seconds"] + r["queries"]["seconds"] + r["unload"]["seconds"] for r in res
        ],
        "reload": [r["reload"]["seconds"] for r in res],
        "bytes": [r["unload"]["bytes"] for r in res],
    }


def render_section(run: dict) -> str:
    m = run["machine"]
    threads = run["threads"]
    csv_bytes = run["csv_bytes"]
    results = run["results"]
    failures = run["failures"]
    sf = loadbench.fmt_sf(run["sf"])
    cyc = [c for c in CYCLE if c in run["contestants"]]
    ok_cyc = [c for c in cyc if results.get(c) and c not in failures]
    L: list[str] = []
    L.append(
        f"## TPC-H SF{sf} cycle: load, 22 queries, unload ({threads} threads, {run['started'][:10]})"
    )
    L.append("")
    L.append(
        f"- Machine: {m['cpu']}, {m['cores']} CPUs"
        + (f" ({m['virt']} guest)" if "virt" in m else "")
        + f", {m['memory']} RAM, Linux {m['kernel']}"
    )
    L.append(
        f"- Run: {run['started']} to {run['finished']} (UTC), {run['total_wall_seconds']:.0f} s in all "
        f"(reference answers included); load average {run['loadavg_before']} before, "
        f"{run['loadavg_after']} after"
    )
    L.append(
        f"- CPU time used by other processes during the timed repetitions: "
        f"{run['other_cpu_share']:.0%} of {m['cores']} CPUs"
        + (" (disturbed: other work shared the CPUs)" if run["other_cpu_share"] > 0.1 else "")
    )
    L.append(f"- Command: `{run['command']}` (commit {run['commit']})")
    vers = ", ".join(f"{c} {run['versions'][c]}" for c in CONTESTANTS if c in run["versions"])
    L.append(f"- Versions: {vers}; Python {run['python']}")
    for c, why in run["skipped"].items():
        L.append(f"- Left out: {c} ({why})")
    L.append(
        f"- Data: {run['data_dir']} ({run['data_fs']}), 8 tables, {csv_bytes / 1e6:.1f} MB of CSV, "
        f"{sum(s['rows'] for s in run['tables'])} rows"
    )
    L.append(
        f"- {threads} threads for every contestant, {run['runs']} interleaved repetition(s), each in a "
        "fresh process; medians over the repetitions; ratios are a contestant's median over wireload's"
    )
    L.append("")

    # ---- the cycle
    pv = {c: phase_values(results[c]) for c in ok_cyc}
    ref = pv.get("wireload")
    L.append("### The cycle (median seconds; ratio to wireload)")
    L.append("")
    head = "| phase |" + "".join(f" {c} |" for c in cyc)
    L.append(head)
    L.append("| --- |" + " ---: |" * len(cyc))
    rows = [
        ("load CSV, 8 tables", "load"),
        ("22 queries", "queries"),
        ("unload (binary)", "unload"),
        ("**cycle = load + queries + unload**", "cycle"),
        ("reload from the unload", "reload"),
    ]
    for label, key in rows:
        cells = []
        for c in cyc:
            if c not in pv:
                cells.append("failed")
                continue
            x = med(pv[c][key])
            r = fmt_ratio(x, med(ref[key])) if ref and c != "wireload" else ""
            cell = fmt_s(x) + (f" ({r})" if r else "")
            cells.append(f"**{cell}**" if key == "cycle" else cell)
        L.append(f"| {label} |" + "".join(f" {x} |" for x in cells))
    cells = []
    for c in cyc:
        if c not in pv:
            cells.append("")
            continue
        b = med(pv[c]["bytes"])
        cells.append(f"{b / 1e6:.1f} MB ({100 * b / csv_bytes:.0f}%)")
    L.append("| unloaded bytes (% of CSV) |" + "".join(f" {x} |" for x in cells))
    cells = []
    for c in cyc:
        if c not in pv:
            cells.append("")
            continue
        lo, re_ = med(pv[c]["load"]), med(pv[c]["reload"])
        cells.append(f"{lo / re_:.2f}×" if re_ else "n/a")
    L.append(
        "| reload speedup over the CSV load (load s / reload s) |"
        + "".join(f" {x} |" for x in cells)
    )
    cells = [results[c][0]["unload"]["format"] if c in pv else "" for c in cyc]
    L.append("| unload format |" + "".join(f" {x} |" for x in cells))
    L.append("")

    # ---- bars
    L.append("### The bars (stated for TPC-H SF1 on 2 threads)")
    L.append("")
    if run["sf"] != 1 or threads != 2:
        L.append(
            f"This run is SF{sf} on {threads} threads, not the bars' setting; shown for information."
        )
        L.append("")
    if ref:
        wc = med(ref["cycle"])
        for peer in ("duckdb", "hyper"):
            if peer in pv:
                pc = med(pv[peer]["cycle"])
                met = "met" if wc < pc else "not met"
                L.append(
                    f"- Cycle faster than {peer}'s: **{met}** — wireload {fmt_s(wc)} s, {peer} {fmt_s(pc)} s "
                    f"({pc / wc:.2f}× wireload's)"
                )
            else:
                L.append(
                    f"- Cycle faster than {peer}'s: not measured ({peer} failed or was not run)"
                )
        lo, re_ = med(ref["load"]), med(ref["reload"])
        sp = lo / re_ if re_ else float("inf")
        L.append(
            f"- Binary reload ≥ {BAR_RELOAD_SPEEDUP:g}× faster than the CSV load: "
            f"**{'met' if sp >= BAR_RELOAD_SPEEDUP else 'not met'}** — load {fmt_s(lo)} s, reload "
            f"{fmt_s(re_)} s, {sp:.2f}×"
        )
        b = med(ref["bytes"])
        share = b / csv_bytes
        L.append(
            f"- LZ4 Arrow unload ≤ {BAR_UNLOAD_SHARE:.0%} of the CSV size: "
            f"**{'met' if share <= BAR_UNLOAD_SHARE else 'not met'}** — {b / 1e6:.1f} MB of "
            f"{csv_bytes / 1e6:.1f} MB, {share:.1%}"
        )
    else:
        L.append("- wireload did not complete a repetition: no bar can be judged.")
    L.append("")

    # ---- per query
    if ok_cyc:
        L.append("### Per query (median seconds; ratio to wireload)")
        L.append("")
        L.append("| query | rows |" + "".join(f" {c} |" for c in ok_cyc))
        L.append("| --- | ---: |" + " ---: |" * len(ok_cyc))
        for i, n in enumerate(QUERIES):
            per = {
                c: med([r["queries"]["queries"][i]["seconds"] for r in results[c]]) for c in ok_cyc
            }
            rows_n = run["reference_rows"].get(
                str(n), results[ok_cyc[0]][0]["queries"]["queries"][i]["rows"]
            )
            cells = []
            for c in ok_cyc:
                r = (
                    fmt_ratio(per[c], per.get("wireload"))
                    if c != "wireload" and "wireload" in per
                    else ""
                )
                cells.append(fmt_s(per[c]) + (f" ({r})" if r else ""))
            L.append(f"| Q{n} | {rows_n} |" + "".join(f" {x} |" for x in cells))
        L.append("")

    # ---- load alone
    loaders = [c for c in CONTESTANTS if c in run["contestants"]]
    L.append(f"### Load alone: the 8 tables, {csv_bytes / 1e6:.1f} MB")
    L.append("")
    L.append("| contestant | seconds (median) | min–max | MB/s | time / wireload's |")
    L.append("| --- | ---: | ---: | ---: | ---: |")
    loads = {
        c: [r["load"]["seconds"] for r in results[c]]
        for c in loaders
        if results.get(c) and c not in failures
    }
    wl = med(loads.get("wireload", []))
    for c in sorted(loaders, key=lambda c: med(loads[c]) if c in loads else float("inf")):
        if c not in loads:
            L.append(f"| {c} | failed | | | |")
            continue
        x = med(loads[c])
        where = " (in the cycle)" if c in CYCLE else ""
        L.append(
            f"| {c}{where} | {fmt_s(x)} | {fmt_s(min(loads[c]))}–{fmt_s(max(loads[c]))} | "
            f"{csv_bytes / 1e6 / x:.1f} | {fmt_ratio(x, wl) or 'n/a'} |"
        )
    L.append("")

    # ---- answers
    L.append("### Answer check against DuckDB's answers (bench/tpch_answers.py)")
    L.append("")
    if run["answer_error"]:
        L.append(
            f"The answers could not be checked: {run['answer_error']} — check FAILED."
        )
    else:
        checks = run["answer_checks"]
        L.append(
            "First repetition's results, checked by `wireload-bench answers` (the answer check of "
            "crates/wireload-tpch, strict tolerance): same row count and column names; text equal "
            "after trimming trailing spaces; numbers equal as decimals, floats within 1e-9 relative, "
            "ratios and averages within 1e-6 relative or absolute; rows tied on all ORDER BY keys "
            "matched in any order."
        )
        L.append("")
        L.append("| contestant | result | queries OK | values within tolerance (not equal) |")
        L.append("| --- | --- | ---: | ---: |")
        for c, per in checks.items():
            ok = [n for n, v in per.items() if v["ok"]]
            bad = [n for n, v in per.items() if not v["ok"]]
            approx = sum(v["approx"] for v in per.values())
            verdict = "OK" if not bad else "DIFF in " + ", ".join(f"Q{n}" for n in bad)
            L.append(f"| {c} | {verdict} | {len(ok)}/{len(per)} | {approx} |")
        L.append("")
        L.append("| query |" + "".join(f" {c} |" for c in checks))
        L.append("| --- |" + " --- |" * len(checks))
        for n in QUERIES:
            cells = []
            for c in checks:
                v = checks[c][str(n)]
                cells.append(
                    ("OK" if v["ok"] else "DIFF") + (f" ({v['approx']} ≈)" if v["approx"] else "")
                )
            L.append(f"| Q{n} |" + "".join(f" {x} |" for x in cells))
        L.append("")
        diffs = [
            f"- {c} Q{n}: " + "; ".join(d.replace("|", "\\|") for d in v["diffs"])
            for c, per in checks.items()
            for n, v in per.items()
            if not v["ok"]
        ]
        if diffs:
            L.append("Differences (at most 3 per query):")
            L.append("")
            L.extend(diffs)
            L.append("")

    if failures:
        L.append("Failures (the contestant was dropped from later repetitions):")
        L.append("")
        for c, why in failures.items():
            L.append(f"- {c}: {why.replace(chr(10), ' ')}")
        L.append("")

    # ---- method
    L.append("How each contestant runs (see bench/README.md):")
    L.append("")
    desc = {
        "wireload": f"`wireload-bench --threads {threads} tpch --data DIR --runs 1 --json --work {run['work_dir']}/...`, "
        "one process per repetition; the phase seconds are the ones it reports (CREATE TABLE outside the "
        "timed load; results kept as Arrow batches; `EXPORT DATABASE` to Arrow IPC with LZ4; tables dropped, "
        "then `IMPORT DATABASE` timed)",
        "duckdb": f"in-memory connection, `SET threads={threads}`, CREATE TABLE (TPC-H DDL), "
        "`COPY t FROM 'f.tbl' (FORMAT csv, DELIMITER '|', HEADER false)`; each query as "
        "`con.sql(q).to_arrow_table()` (query texts unchanged); `EXPORT DATABASE 'dir' (FORMAT parquet)`; "
        "tables dropped, then `IMPORT DATABASE 'dir'` timed",
        "hyper": f"HyperProcess (telemetry off, soft/hard query thread limits {threads}), a `.hyper` file "
        f"under {run['work_dir']}, CREATE TABLE with a 17th dummy column for the trailing `|`, "
        "`COPY t FROM 'f.tbl' WITH (FORMAT csv, DELIMITER '|')`; queries unchanged, rows fetched as Python "
        "values (Hyper API has no Arrow result); unload per table "
        "`COPY (SELECT ... ) TO 'dir/t.parquet' WITH (FORMAT parquet)` with CHAR(n) columns cast to text "
        "(Hyper cannot write CHAR(n) to Parquet); tables dropped and re-created, then "
        "`INSERT INTO t SELECT ... FROM external('dir/t.parquet')` timed",
        "polars": "load only: `POLARS_MAX_THREADS`, `pl.read_csv(schema=...)` as in bench/load.py",
        "pyarrow": "load only: `pa.set_cpu_count`/`set_io_thread_count`, `pyarrow.csv.read_csv` with "
        "`column_types` as in bench/load.py",
        "chdb": f"load only, as in bench/load.py: a chDB session, `SET max_threads={threads}`, "
        f"`max_insert_threads={threads}`, `max_parsing_threads={threads}`, "
        "Memory tables (INTEGER→Int32, BIGINT→Int64, DECIMAL→Decimal, DATE→Date, CHAR/VARCHAR→String), "
        "`INSERT INTO t SELECT ... FROM file('f.tbl', 'CSV', 'columns..., dummy') "
        "SETTINGS format_csv_delimiter = '|', input_format_csv_trim_whitespaces = 0`",
    }
    for c in CONTESTANTS:
        if c in run["contestants"]:
            L.append(f"- {c}: {desc[c]}")
    L.append("")
    L.append(
        f"Before each repetition the contestant's process (the driver, for wireload) touched and freed a "
        f"{TOUCH_FACTOR}× CSV-size buffer; the timed load is the 8 COPYs one after another "
        "(region, nation, supplier, customer, part, partsupp, orders, lineitem). The reload is not part of "
        "the cycle. Compare contestants within one section, not across sections."
    )
    L.append("")

    # ---- raw
    L.append("<details><summary>Raw seconds per repetition</summary>")
    L.append("")
    for c in run["contestants"]:
        for r_i, r in enumerate(results.get(c, [])):
            parts = [f"load {r['load']['seconds']:.4g}"]
            if c in CYCLE:
                parts += [
                    f"queries {r['queries']['seconds']:.4g}",
                    f"unload {r['unload']['seconds']:.4g} ({r['unload']['bytes']} bytes)",
                    f"reload {r['reload']['seconds']:.4g}",
                ]
            if "wall" in r:
                parts.append(f"process wall time {r['wall']:.4g} (start to exit, not compared)")
            per_table = ", ".join(f"{t['table']} {t['seconds']:.4g}" for t in r["load"]["tables"])
            L.append(
                f"- {c} rep {r_i + 1}: " + ", ".join(parts) + f" (load per table: {per_table})"
            )
    L.append("")
    L.append("</details>")
    return "\n".join(L) + "\n"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sf", type=float, default=1, help="TPC-H scale factor (default 1)")
    p.add_argument(
        "--data-dir", help="directory of <table>.tbl (default /dev/shm/wireload-tpch-sfN)"
    )
    p.add_argument(
        "--wireload",
        default="target/release/wireload",
        help="wireload binary (generates missing data; wireload-bench beside it runs the cycle "
        "and checks the answers)",
    )
    p.add_argument("--runs", type=int, default=3, help="repetitions per contestant (default 3)")
    p.add_argument("--threads", type=int, default=2, help="threads per contestant (default 2)")
    p.add_argument(
        "--only", help=f"comma-separated contestants (default all: {','.join(CONTESTANTS)})"
    )
    p.add_argument(
        "--out", default="bench/RESULTS.md", help="results file (bench/RESULTS.md) whose figures for this run are replaced; the run is recorded in records/ beside it"
    )
    p.add_argument("--json", help="also write the raw measurements as JSON here")
    p.add_argument(
        "--work-dir", default="/dev/shm", help="where unloads and databases go (default /dev/shm)"
    )
    p.add_argument("--answers-dir", help="keep the answer files (reference and contestants') here")
    p.add_argument("--timeout", type=float, default=900, help="seconds per contestant run")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--peer-version", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    loadbench.check_common_args(p, args, CONTESTANTS)
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args.worker)
    if args.peer_version:
        return peer_version_main(args.peer_version)
    return driver_main(args, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
