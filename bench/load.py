#!/usr/bin/env python3
"""Time loading TPC-H .tbl files into wireload and its peers, side by side.

Contestants: wireload (2 threads and 1 thread), DuckDB, Polars, pyarrow,
Hyper API and chDB. Every peer loads into its own in-memory storage with an explicit
schema; wireload runs `wireload --threads N -f script.sql`. Repetitions are
interleaved (rep 1: all contestants, rep 2: all contestants, ...), medians are
quoted, and the run is recorded (bench/record.py) from its own measurements.

Run it with the venv that bench/setup.sh creates:

    bench/.venv/bin/python bench/load.py --tables all

Each peer measurement runs in a fresh worker process (this script with
`--worker NAME`) so imports and engine start-up stay outside the timed region
and no contestant inherits another's heap.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import mmap
import os
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import record, summary  # noqa: E402

# --------------------------------------------------------------------------
# TPC-H schema (the DDL of the TPC-H specification; orderkeys as BIGINT)
# --------------------------------------------------------------------------

TPCH_SCHEMA: dict[str, list[tuple[str, str]]] = {
    "nation": [
        ("n_nationkey", "INTEGER"),
        ("n_name", "CHAR(25)"),
        ("n_regionkey", "INTEGER"),
        ("n_comment", "VARCHAR(152)"),
    ],
    "region": [
        ("r_regionkey", "INTEGER"),
        ("r_name", "CHAR(25)"),
        ("r_comment", "VARCHAR(152)"),
    ],
    "part": [
        ("p_partkey", "INTEGER"),
        ("p_name", "VARCHAR(55)"),
        ("p_mfgr", "CHAR(25)"),
        ("p_brand", "CHAR(10)"),
        ("p_type", "VARCHAR(25)"),
        ("p_size", "INTEGER"),
        ("p_container", "CHAR(10)"),
        ("p_retailprice", "DECIMAL(15,2)"),
        ("p_comment", "VARCHAR(23)"),
    ],
    "supplier": [
        ("s_suppkey", "INTEGER"),
        ("s_name", "CHAR(25)"),
        ("s_address", "VARCHAR(40)"),
        ("s_nationkey", "INTEGER"),
        ("s_phone", "CHAR(15)"),
        ("s_acctbal", "DECIMAL(15,2)"),
        ("s_comment", "VARCHAR(101)"),
    ],
    "partsupp": [
        ("ps_partkey", "INTEGER"),
        ("ps_suppkey", "INTEGER"),
        ("ps_availqty", "INTEGER"),
        ("ps_supplycost", "DECIMAL(15,2)"),
        ("ps_comment", "VARCHAR(199)"),
    ],
    "customer": [
        ("c_custkey", "INTEGER"),
        ("c_name", "VARCHAR(25)"),
        ("c_address", "VARCHAR(40)"),
        ("c_nationkey", "INTEGER"),
        ("c_phone", "CHAR(15)"),
        ("c_acctbal", "DECIMAL(15,2)"),
        ("c_mktsegment", "CHAR(10)"),
        ("c_comment", "VARCHAR(117)"),
    ],
    "orders": [
        ("o_orderkey", "BIGINT"),
        ("o_custkey", "INTEGER"),
        ("o_orderstatus", "CHAR(1)"),
        ("o_totalprice", "DECIMAL(15,2)"),
        ("o_orderdate", "DATE"),
        ("o_orderpriority", "CHAR(15)"),
        ("o_clerk", "CHAR(15)"),
        ("o_shippriority", "INTEGER"),
        ("o_comment", "VARCHAR(79)"),
    ],
    "lineitem": [
        ("l_orderkey", "BIGINT"),
        ("l_partkey", "INTEGER"),
        ("l_suppkey", "INTEGER"),
        ("l_linenumber", "INTEGER"),
        ("l_quantity", "DECIMAL(15,2)"),
        ("l_extendedprice", "DECIMAL(15,2)"),
        ("l_discount", "DECIMAL(15,2)"),
        ("l_tax", "DECIMAL(15,2)"),
        ("l_returnflag", "CHAR(1)"),
        ("l_linestatus", "CHAR(1)"),
        ("l_shipdate", "DATE"),
        ("l_commitdate", "DATE"),
        ("l_receiptdate", "DATE"),
        ("l_shipinstruct", "CHAR(25)"),
        ("l_shipmode", "CHAR(10)"),
        ("l_comment", "VARCHAR(44)"),
    ],
}

# Load order for `--tables all`: small tables first, lineitem last.
ALL_TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]

# Name of the extra column given to peers that cannot ignore the trailing '|'.
DUMMY_COLUMN = "trailing_dummy"

PEERS = ["duckdb", "polars", "pyarrow", "hyper", "chdb"]
CONTESTANTS = ["wireload", "wireload-1t", *PEERS]

# Buffer touched (written, then freed) right before every timed load, as a
# multiple of the CSV bytes of that load: memory the host took back while idle
# is made resident again for every contestant alike.
TOUCH_FACTOR = 1.5


def create_table_sql(table: str, *, temporary: bool = False, dummy: bool = False) -> str:
    """The CREATE TABLE statement of a TPC-H table."""
    cols = [f"{name} {typ}" for name, typ in TPCH_SCHEMA[table]]
    if dummy:
        cols.append(f"{DUMMY_COLUMN} VARCHAR(1)")
    temp = "TEMPORARY " if temporary else ""
    return f"CREATE {temp}TABLE {table} ({', '.join(cols)})"


def sql_string(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def touch_memory(nbytes: int) -> None:
    """Write every page of a fresh anonymous mapping of nbytes, then unmap it."""
    if nbytes <= 0:
        return
    block = 16 << 20
    zeros = bytes(block)
    buf = mmap.mmap(-1, nbytes)
    try:
        left = nbytes
        while left >= block:
            buf.write(zeros)
            left -= block
        if left:
            buf.write(zeros[:left])
    finally:
        buf.close()


# --------------------------------------------------------------------------
# Peers (run inside a worker process)
# --------------------------------------------------------------------------


class Peer:
    """One peer engine in a worker process: set up once, then load tables."""

    def __init__(self, threads: int):
        self.threads = threads

    def version(self) -> str:
        raise NotImplementedError

    def prepare(self, table: str) -> None:
        """Untimed work before a table's load (CREATE TABLE)."""

    def load(self, table: str, path: str) -> object:
        """The timed load; returns a handle for count()."""
        raise NotImplementedError

    def count(self, table: str, handle: object) -> int:
        raise NotImplementedError

    def close(self) -> None:
        pass


class DuckDBPeer(Peer):
    """DuckDB in-memory database; CREATE TABLE + COPY FROM."""

    def __init__(self, threads: int):
        super().__init__(threads)
        import duckdb

        self.duckdb = duckdb
        self.con = duckdb.connect(":memory:")
        self.con.execute(f"SET threads={threads}")

    def version(self) -> str:
        return self.duckdb.__version__

    def prepare(self, table: str) -> None:
        self.con.execute(create_table_sql(table))

    def load(self, table: str, path: str) -> object:
        self.con.execute(
            f"COPY {table} FROM {sql_string(path)} (FORMAT csv, DELIMITER '|', HEADER false)"
        )
        return None

    def count(self, table: str, handle: object) -> int:
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    def close(self) -> None:
        self.con.close()


def _decimal_args(typ: str) -> tuple[int, int]:
    p, s = typ[typ.index("(") + 1 : -1].split(",")
    return int(p), int(s)


class PolarsPeer(Peer):
    """Polars DataFrame; pl.read_csv with an explicit schema."""

    def __init__(self, threads: int):
        super().__init__(threads)
        os.environ["POLARS_MAX_THREADS"] = str(threads)
        import polars as pl

        self.pl = pl
        self.frames: dict[str, object] = {}

    def version(self) -> str:
        return self.pl.__version__

    def _dtype(self, typ: str):
        pl = self.pl
        if typ == "INTEGER":
            return pl.Int32
        if typ == "BIGINT":
            return pl.Int64
        if typ == "DATE":
            return pl.Date
        if typ.startswith("DECIMAL"):
            return pl.Decimal(*_decimal_args(typ))
        return pl.String

    def load(self, table: str, path: str) -> object:
        pl = self.pl
        schema = {name: self._dtype(typ) for name, typ in TPCH_SCHEMA[table]}
        schema[DUMMY_COLUMN] = pl.String
        df = pl.read_csv(
            path,
            separator="|",
            has_header=False,
            schema=schema,
            columns=list(range(len(TPCH_SCHEMA[table]))),
        )
        self.frames[table] = df
        return df

    def count(self, table: str, handle: object) -> int:
        return handle.height


class PyArrowPeer(Peer):
    """pyarrow Table; pyarrow.csv.read_csv with column_types."""

    def __init__(self, threads: int):
        super().__init__(threads)
        import pyarrow as pa
        import pyarrow.csv as pacsv

        pa.set_cpu_count(threads)
        pa.set_io_thread_count(threads)
        self.pa = pa
        self.pacsv = pacsv
        self.tables: dict[str, object] = {}

    def version(self) -> str:
        return self.pa.__version__

    def _dtype(self, typ: str):
        pa = self.pa
        if typ == "INTEGER":
            return pa.int32()
        if typ == "BIGINT":
            return pa.int64()
        if typ == "DATE":
            return pa.date32()
        if typ.startswith("DECIMAL"):
            return pa.decimal128(*_decimal_args(typ))
        return pa.string()

    def load(self, table: str, path: str) -> object:
        names = [name for name, _ in TPCH_SCHEMA[table]]
        t = self.pacsv.read_csv(
            path,
            read_options=self.pacsv.ReadOptions(
                column_names=[*names, DUMMY_COLUMN], use_threads=True
            ),
            parse_options=self.pacsv.ParseOptions(delimiter="|"),
            convert_options=self.pacsv.ConvertOptions(
                column_types={name: self._dtype(typ) for name, typ in TPCH_SCHEMA[table]},
                include_columns=names,
            ),
        )
        self.tables[table] = t
        return t

    def count(self, table: str, handle: object) -> int:
        return handle.num_rows


class HyperPeer(Peer):
    """Hyper API: temporary tables (in memory) + COPY FROM."""

    def __init__(self, threads: int):
        super().__init__(threads)
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
        self.con = th.Connection(endpoint=self.process.endpoint)

    def version(self) -> str:
        return self.th.__version__

    def prepare(self, table: str) -> None:
        self.con.execute_command(create_table_sql(table, temporary=True, dummy=True))

    def load(self, table: str, path: str) -> object:
        self.con.execute_command(
            f"COPY {table} FROM {sql_string(path)} WITH (FORMAT csv, DELIMITER '|')"
        )
        return None

    def count(self, table: str, handle: object) -> int:
        return self.con.execute_scalar_query(f"SELECT COUNT(*) FROM {table}")

    def close(self) -> None:
        self.con.close()
        self.process.close()


# ClickHouse settings chDB gets the thread count in: query pipeline threads, INSERT
# write streams, and parallel CSV parsing (each defaults to the number of CPUs).
CHDB_THREAD_SETTINGS = ["max_threads", "max_insert_threads", "max_parsing_threads"]


def chdb_version(chdb: object) -> str:
    """chDB's version with the ClickHouse engine version it embeds."""
    return f"{chdb.__version__} (ClickHouse {chdb.engine_version})"


class ChdbPeer(Peer):
    """chDB (ClickHouse in-process): Memory tables, INSERT ... SELECT FROM file()."""

    def __init__(self, threads: int):
        super().__init__(threads)
        import chdb
        from chdb import session

        self.chdb = chdb
        self.session = session.Session()  # in memory (no path)
        for setting in CHDB_THREAD_SETTINGS:
            self.session.query(f"SET {setting}={threads}")

    def version(self) -> str:
        return chdb_version(self.chdb)

    @staticmethod
    def _type(typ: str) -> str:
        if typ == "INTEGER":
            return "Int32"
        if typ == "BIGINT":
            return "Int64"
        if typ == "DATE":
            return "Date"
        if typ.startswith("DECIMAL"):
            return "Decimal({}, {})".format(*_decimal_args(typ))
        return "String"

    def _columns(self, table: str) -> str:
        return ", ".join(f"{name} {self._type(typ)}" for name, typ in TPCH_SCHEMA[table])

    def prepare(self, table: str) -> None:
        self.session.query(f"CREATE TABLE {table} ({self._columns(table)}) ENGINE = Memory")

    def load(self, table: str, path: str) -> object:
        # a dummy last column takes the empty field after the trailing '|'; spaces at the
        # ends of unquoted fields are kept, as the other contestants keep them
        structure = f"{self._columns(table)}, {DUMMY_COLUMN} Nullable(String)"
        names = ", ".join(name for name, _ in TPCH_SCHEMA[table])
        self.session.query(
            f"INSERT INTO {table} SELECT {names} FROM file({sql_string(path)}, 'CSV', "
            f"{sql_string(structure)}) SETTINGS format_csv_delimiter = '|', "
            "input_format_csv_trim_whitespaces = 0"
        )
        return None

    def count(self, table: str, handle: object) -> int:
        return int(self.session.query(f"SELECT count() FROM {table}", "CSV").bytes().strip())

    def close(self) -> None:
        self.session.close()


PEER_CLASSES = {
    "duckdb": DuckDBPeer,
    "polars": PolarsPeer,
    "pyarrow": PyArrowPeer,
    "hyper": HyperPeer,
    "chdb": ChdbPeer,
}


def worker_main(name: str) -> int:
    """Worker process: read a job from stdin, load its tables, print JSON."""
    job = json.load(sys.stdin)
    threads = job["threads"]
    out: dict[str, object] = {"contestant": name, "loads": []}
    try:
        peer = PEER_CLASSES[name](threads)
        out["version"] = peer.version()
        for t in job["tables"]:
            peer.prepare(t["name"])
            touch_memory(int(t["bytes"] * TOUCH_FACTOR))
            start = time.perf_counter()
            handle = peer.load(t["name"], t["path"])
            seconds = time.perf_counter() - start
            rows = int(peer.count(t["name"], handle))
            out["loads"].append({"table": t["name"], "seconds": seconds, "rows": rows})
        peer.close()
    except Exception as exc:  # noqa: BLE001 -- reported to the driver, which marks it failed
        out["error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))
    return 0


def peer_version_main(name: str) -> int:
    """Worker process: print the peer's version only."""
    mod = {
        "duckdb": "duckdb",
        "polars": "polars",
        "pyarrow": "pyarrow",
        "hyper": "tableauhyperapi",
        "chdb": "chdb",
    }
    module = __import__(mod[name])
    print(chdb_version(module) if name == "chdb" else module.__version__)
    return 0


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

LOADED_RE = re.compile(
    r"loaded\s+(\d+)\s+rows(?:\s+into\s+(\S+?))?,.*?\bin\s+([0-9.]+)\s*(µs|us|ms|s)\b"
)
UNIT_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}


class ContestantFailed(Exception):
    """A contestant's run failed or produced a wrong row count."""


def worker_python() -> str:
    """The venv's interpreter (bench/.venv) when present, else this one."""
    venv = Path(__file__).resolve().parent / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_peer(
    name: str, tables: list[dict], threads: int, workdir: str, timeout: float
) -> list[dict]:
    """One repetition of a peer: a fresh worker process loads all tables."""
    job = json.dumps({"threads": threads, "tables": tables})
    env = dict(os.environ)
    env["POLARS_MAX_THREADS"] = str(threads)
    proc = subprocess.run(
        [worker_python(), os.path.abspath(__file__), "--worker", name],
        input=job,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=workdir,  # where Hyper may leave its log
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise ContestantFailed(
            f"worker exited {proc.returncode}: {tail(proc.stderr or proc.stdout)}"
        )
    result = json.loads(lines[-1])
    if "error" in result:
        raise ContestantFailed(result["error"])
    return result["loads"]


def tail(text: str, n: int = 400) -> str:
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def run_wireload(
    binary: str, threads: int, tables: list[dict], workdir: str, timeout: float
) -> list[dict]:
    """One repetition of wireload: one process per table (CREATE + COPY)."""
    loads = []
    for t in tables:
        script = Path(workdir) / f"load-{t['name']}.sql"
        script.write_text(
            create_table_sql(t["name"])
            + ";\n"
            + f"COPY {t['name']} FROM {sql_string(t['path'])} WITH (FORMAT csv, DELIMITER '|');\n"
        )
        cmd = [binary, "--threads", str(threads), "-f", str(script)]
        touch_memory(int(t["bytes"] * TOUCH_FACTOR))
        start = time.perf_counter()
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise ContestantFailed(
                f"`{shlex.join(cmd)}` exited {proc.returncode}: {tail(proc.stderr)}"
            )
        matches = [m for m in LOADED_RE.finditer(proc.stderr)]
        if len(matches) != 1:
            raise ContestantFailed(
                f"expected one 'loaded N rows ... in S s' line on stderr, got {len(matches)}: "
                f"{tail(proc.stderr)}"
            )
        m = matches[0]
        seconds = float(m.group(3)) * UNIT_SECONDS[m.group(4)]
        named = m.group(2)
        if named is not None and named.replace('"', "").split(".")[-1] != t["name"]:
            raise ContestantFailed(f"summary names table {named!r}, expected {t['name']!r}")
        loads.append(
            {"table": t["name"], "seconds": seconds, "rows": int(m.group(1)), "wall": wall}
        )
    return loads


def count_rows(path: Path) -> int:
    """Records in a .tbl file (one per newline); also pulls it into page cache."""
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(64 << 20):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (0 if last == b"\n" else 1)


def filesystem_type(path: Path) -> str:
    """File system type of the mount that holds path (from /proc/mounts)."""
    best, fstype = "", "unknown"
    target = str(path.resolve())
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                mnt = parts[1]
                if (target == mnt or target.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(
                    best
                ):
                    best, fstype = mnt, parts[2]
    except OSError:
        pass
    return fstype


def ensure_data(args: argparse.Namespace, tables: list[str]) -> None:
    """Generate the TPC-H files with `wireload gen tpch` if any is missing."""
    data = Path(args.data_dir)
    missing = [t for t in tables if not (data / f"{t}.tbl").is_file()]
    if not missing:
        return
    binary = args.wireload
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        sys.exit(
            f"{data} lacks {', '.join(m + '.tbl' for m in missing)} and the wireload binary "
            f"{binary!r} is not there to generate it (`wireload gen tpch`); build it with "
            "`cargo build --release -p wireload` or pass --wireload / --data-dir"
        )
    data.mkdir(parents=True, exist_ok=True)
    cmd = [binary, "gen", "tpch", "--sf", fmt_sf(args.sf), "--out", str(data)]
    print(f"generating: {shlex.join(cmd)}", file=sys.stderr)
    subprocess.run(cmd, check=True)
    still = [t for t in tables if not (data / f"{t}.tbl").is_file()]
    if still:
        sys.exit(f"`{shlex.join(cmd)}` did not produce {', '.join(s + '.tbl' for s in still)}")


def fmt_sf(sf: float) -> str:
    return str(int(sf)) if float(sf).is_integer() else str(sf)


def machine_info() -> dict[str, str]:
    info = {"cpu": platform.processor() or platform.machine(), "cores": str(os.cpu_count())}
    try:
        out = subprocess.run(["lscpu"], check=False, capture_output=True, text=True).stdout
        fields = {
            k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in out.splitlines())
        }
        info["cpu"] = fields.get("Model name", info["cpu"])
        info["cores"] = fields.get("CPU(s)", info["cores"])
        if "Hypervisor vendor" in fields:
            info["virt"] = fields["Hypervisor vendor"]
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            kb = int(next(ln for ln in f if ln.startswith("MemTotal")).split()[1])
        info["memory"] = f"{kb / (1 << 20):.1f} GiB"
    except (OSError, StopIteration):
        info["memory"] = "unknown"
    info["kernel"] = platform.release()
    return info


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def cpu_snapshot() -> tuple[float, float]:
    """(busy CPU seconds of the whole machine, CPU seconds of this process and its children)."""
    busy = 0.0
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        # user nice system idle iowait irq softirq steal ...
        busy = (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / os.sysconf(
            "SC_CLK_TCK"
        )
    except (OSError, ValueError, IndexError):
        pass
    own = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        own += ru.ru_utime + ru.ru_stime
    return busy, own


def wireload_version(binary: str) -> str:
    try:
        out = subprocess.run(
            [binary, "--version"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
        text = (out.stdout or out.stderr).strip().splitlines()
        if out.returncode != 0 or not text:
            return "unknown"
        return text[0].removeprefix("wireload").strip() or text[0]
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def bench_binary(wireload: str) -> str:
    """The `wireload-bench` binary beside the `wireload` binary `wireload` (cargo builds
    both into one directory); exits naming the build command when it is missing."""
    bench = str(Path(wireload).with_name("wireload-bench"))
    if not (os.path.isfile(bench) and os.access(bench, os.X_OK)):
        sys.exit(
            f"{bench!r} not found beside {wireload!r}: build both with "
            "`cargo build --release -p wireload -p wireload-bench`"
        )
    return bench


def git_commit() -> str:
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
        )
        rev = out.stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
            check=False,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return rev + (", with uncommitted changes" if dirty else "") if rev else "unknown"
    except OSError:
        return "unknown"


def check_common_args(
    p: argparse.ArgumentParser, args: argparse.Namespace, contestants: list[str]
) -> None:
    """Checks and completes the options bench scripts share: --wireload (relative paths also
    work from outside the repository root), --data-dir, --runs, --threads and --only
    (sets args.contestants)."""
    if not os.path.isabs(args.wireload) and not os.path.exists(args.wireload):
        repo_root = Path(__file__).resolve().parent.parent
        if (repo_root / args.wireload).exists():
            args.wireload = str(repo_root / args.wireload)
    if args.data_dir is None:
        args.data_dir = f"/dev/shm/wireload-tpch-sf{fmt_sf(args.sf)}"
    if args.runs < 1:
        p.error("--runs must be at least 1")
    if args.threads < 1:
        p.error("--threads must be at least 1")
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        bad = [n for n in names if n not in contestants]
        if bad:
            p.error(f"unknown contestant(s) {', '.join(bad)}; choose from {', '.join(contestants)}")
        args.contestants = [c for c in contestants if c in names]
    else:
        args.contestants = list(contestants)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sf", type=float, default=1, help="TPC-H scale factor (default 1)")
    p.add_argument(
        "--data-dir", help="directory of <table>.tbl (default /dev/shm/wireload-tpch-sfN)"
    )
    p.add_argument("--wireload", default="target/release/wireload", help="wireload binary")
    p.add_argument("--runs", type=int, default=5, help="repetitions per contestant (default 5)")
    p.add_argument("--threads", type=int, default=2, help="threads per contestant (default 2)")
    p.add_argument("--tables", choices=["lineitem", "all"], default="lineitem")
    p.add_argument(
        "--only",
        help=f"comma-separated contestants (default all: {','.join(CONTESTANTS)})",
    )
    p.add_argument(
        "--out", default="bench/RESULTS.md", help="results file (bench/RESULTS.md) whose figures for this run are replaced; the run is recorded in records/ beside it"
    )
    p.add_argument("--json", help="also write the raw measurements as JSON here")
    p.add_argument("--timeout", type=float, default=900, help="seconds per contestant run")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--peer-version", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    check_common_args(p, args, CONTESTANTS)
    if args.threads == 1 and "wireload-1t" in args.contestants:
        args.contestants.remove("wireload-1t")
    return args


def driver_main(args: argparse.Namespace, argv: list[str]) -> int:
    tables = ALL_TABLES if args.tables == "all" else ["lineitem"]
    wants_wireload = any(c.startswith("wireload") for c in args.contestants)
    if wants_wireload:
        args.wireload = os.path.abspath(args.wireload)
    ensure_data(args, tables)
    data = Path(args.data_dir).resolve()
    fstype = filesystem_type(data)
    if fstype not in ("tmpfs", "ramfs"):
        print(
            f"warning: {data} is on {fstype}, not tmpfs: files may fall out of page cache",
            file=sys.stderr,
        )
    if wants_wireload and not os.access(args.wireload, os.X_OK):
        sys.exit(f"wireload binary {args.wireload!r} not found (or pass --only without wireload)")

    specs = []
    for t in tables:
        path = data / f"{t}.tbl"
        specs.append(
            {"name": t, "path": str(path), "bytes": path.stat().st_size, "rows": count_rows(path)}
        )
    expected = {s["name"]: s["rows"] for s in specs}

    versions: dict[str, str] = {}
    for c in args.contestants:
        if c in PEERS:
            out = subprocess.run(
                [worker_python(), os.path.abspath(__file__), "--peer-version", c],
                check=False,
                capture_output=True,
                text=True,
            )
            versions[c] = out.stdout.strip() or "unknown"
    if wants_wireload:
        versions["wireload"] = wireload_version(args.wireload)

    started = dt.datetime.now(dt.timezone.utc)
    load_before = loadavg()
    cpu_before = cpu_snapshot()
    wall_before = time.monotonic()
    # measurements[contestant][table] -> list of seconds, one per successful rep
    measurements: dict[str, dict[str, list[float]]] = {
        c: {t: [] for t in tables} for c in args.contestants
    }
    walls: dict[str, dict[str, list[float]]] = {
        c: {t: [] for t in tables} for c in args.contestants
    }
    failures: dict[str, str] = {}
    total_bytes = sum(s["bytes"] for s in specs)
    print(
        f"{len(tables)} table(s), {total_bytes / 1e6:.1f} MB in {data}; contestants: "
        f"{', '.join(args.contestants)}; {args.runs} runs, {args.threads} threads",
        file=sys.stderr,
    )
    with tempfile.TemporaryDirectory(prefix="wireload-bench-") as workdir:
        for rep in range(args.runs):
            active = [c for c in args.contestants if c not in failures]
            # rotate the order each repetition so no contestant always goes first
            k = rep % len(active) if active else 0
            order = active[k:] + active[:k]
            for c in order:
                try:
                    if c == "wireload":
                        loads = run_wireload(
                            args.wireload, args.threads, specs, workdir, args.timeout
                        )
                    elif c == "wireload-1t":
                        loads = run_wireload(args.wireload, 1, specs, workdir, args.timeout)
                    else:
                        loads = run_peer(c, specs, args.threads, workdir, args.timeout)
                    for ld in loads:
                        if ld["rows"] != expected[ld["table"]]:
                            raise ContestantFailed(
                                f"{ld['table']}: loaded {ld['rows']} rows, expected {expected[ld['table']]}"
                            )
                    for ld in loads:
                        measurements[c][ld["table"]].append(ld["seconds"])
                        if "wall" in ld:
                            walls[c][ld["table"]].append(ld["wall"])
                    total = sum(ld["seconds"] for ld in loads)
                    print(
                        f"rep {rep + 1}/{args.runs} {c:12s} {total:8.3f} s  "
                        f"{fmt_rate(total_bytes, total):>8s} MB/s",
                        file=sys.stderr,
                    )
                except (ContestantFailed, subprocess.TimeoutExpired, OSError) as exc:
                    failures[c] = str(exc)
                    print(f"rep {rep + 1}/{args.runs} {c}: FAILED: {exc}", file=sys.stderr)
    finished = dt.datetime.now(dt.timezone.utc)
    load_after = loadavg()
    cpu_after = cpu_snapshot()
    wall = time.monotonic() - wall_before
    others = (cpu_after[0] - cpu_before[0]) - (cpu_after[1] - cpu_before[1])
    other_share = max(0.0, others / (wall * (os.cpu_count() or 1)))
    if other_share > 0.1:
        print(
            f"warning: other processes used {other_share:.0%} of the CPUs during the run; "
            "the timings are disturbed",
            file=sys.stderr,
        )

    run = {
        "sf": args.sf,
        "tables": specs,
        "threads": args.threads,
        "runs": args.runs,
        "contestants": args.contestants,
        "measurements": measurements,
        "wireload_wall": {c: walls[c] for c in walls if c.startswith("wireload")},
        "failures": failures,
        "versions": versions,
        "machine": machine_info(),
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "other_cpu_share": other_share,
        "command": command_line(argv),
        "commit": git_commit(),
        "data_dir": str(data),
        "data_fs": fstype,
        "python": platform.python_version(),
    }
    section = render_section(run)
    under = "all 8 tables" if args.tables == "all" else None
    path = record(section_key(args), section, results=args.out, summary_text=summary(section, under))
    print(f"wrote {path} and its figures to {args.out}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(run, indent=1) + "\n")
    print(section)
    return 1 if failures else 0


def command_line(argv: list[str], script: str = __file__) -> str:
    """The command that ran `script` with `argv`, paths relative to the current directory."""
    exe = sys.executable
    try:
        exe = os.path.relpath(exe)
    except ValueError:
        pass
    script = os.path.relpath(os.path.abspath(script))
    return shlex.join([exe, script, *argv])


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def section_key(args: argparse.Namespace) -> str:
    return f"load sf={fmt_sf(args.sf)} tables={args.tables}"


def fmt_seconds(seconds: float) -> str:
    """Seconds for the report; 0 means below the 1 ms resolution of wireload's summary."""
    if seconds <= 0:
        return "< 0.001"
    return f"{seconds:.3f}" if seconds >= 0.1 else f"{seconds:.5f}"


def fmt_rate(nbytes: int, seconds: float) -> str:
    """MB/s (10^6 bytes per second), or n/a when the time is below resolution."""
    return f"{nbytes / 1e6 / seconds:.1f}" if seconds > 0 else "n/a"


def render_section(run: dict) -> str:
    specs = run["tables"]
    tables = [s["name"] for s in specs]
    nbytes = {s["name"]: s["bytes"] for s in specs}
    meas = run["measurements"]
    contestants = run["contestants"]
    failures = run["failures"]
    m = run["machine"]
    lines: list[str] = []
    scope = "lineitem" if tables == ["lineitem"] else "all 8 tables"
    lines.append(f"## TPC-H SF{fmt_sf(run['sf'])} load, {scope} ({run['started'][:10]})")
    lines.append("")
    lines.append(
        f"- Machine: {m['cpu']}, {m['cores']} CPUs"
        + (f" ({m['virt']} guest)" if "virt" in m else "")
        + f", {m['memory']} RAM, Linux {m['kernel']}"
    )
    lines.append(
        f"- Run: {run['started']} to {run['finished']} (UTC); load average "
        f"{run['loadavg_before']} before, {run['loadavg_after']} after"
    )
    lines.append(
        f"- CPU time used by other processes during the run: {run['other_cpu_share']:.0%} of "
        f"{m['cores']} CPUs"
        + (" (disturbed: other work shared the CPUs)" if run["other_cpu_share"] > 0.1 else "")
    )
    lines.append(f"- Command: `{run['command']}` (commit {run['commit']})")
    vers = ", ".join(
        f"{c} {run['versions'][c]}" for c in ["wireload", *PEERS] if c in run["versions"]
    )
    lines.append(f"- Versions: {vers}; Python {run['python']}")
    lines.append(
        f"- Data: {run['data_dir']} ({run['data_fs']}); "
        + ", ".join(f"{s['name']} {s['bytes'] / 1e6:.1f} MB / {s['rows']} rows" for s in specs)
    )
    lines.append(
        f"- {run['threads']} threads, {run['runs']} interleaved repetitions; MB/s = CSV bytes / "
        "load seconds (1 MB = 10^6 bytes); median (min–max) over repetitions"
    )
    lines.append("")

    def med(c: str, t: str) -> float | None:
        xs = meas.get(c, {}).get(t, [])
        return statistics.median(xs) if xs else None

    def totals(c: str) -> list[float]:
        per = [meas.get(c, {}).get(t, []) for t in tables]
        n = min((len(x) for x in per), default=0)
        return [sum(x[i] for x in per) for i in range(n)]

    reference = "wireload" if "wireload" in contestants and "wireload" not in failures else None
    groups = [(t, nbytes[t], {c: meas[c][t] for c in contestants}) for t in tables]
    if len(tables) > 1:
        groups.append(
            (
                "all 8 tables (sum of loads)",
                sum(nbytes.values()),
                {c: totals(c) for c in contestants},
            )
        )
    for title, size, per in groups:
        lines.append(f"### {title}: {size / 1e6:.1f} MB")
        lines.append("")
        medians = {c: statistics.median(xs) for c, xs in per.items() if xs}
        if reference in medians:
            ref_name = reference
        elif medians:
            ref_name = min(medians, key=lambda c: medians[c])
        else:
            ref_name = None
        ref_head = "wireload's" if ref_name == reference else f"fastest's ({ref_name})"
        lines.append(
            f"| contestant | seconds (median) | MB/s median | MB/s min–max | time / {ref_head} |"
        )
        lines.append("| --- | ---: | ---: | ---: | ---: |")
        ordered = sorted(contestants, key=lambda c: medians.get(c, float("inf")))
        for c in ordered:
            xs = per.get(c, [])
            if c not in medians:
                lines.append(f"| {c} | failed | | | |")
                continue
            s = medians[c]
            ref_s = medians[ref_name]
            ratio = f"{s / ref_s:.2f}×" if s > 0 and ref_s > 0 else "n/a"
            lines.append(
                f"| {c} | {fmt_seconds(s)} | {fmt_rate(size, s)} | "
                f"{fmt_rate(size, max(xs))}–{fmt_rate(size, min(xs))} | {ratio} |"
            )
        lines.append("")

    if "wireload" in contestants and "wireload-1t" in contestants:
        two = totals("wireload")
        one = totals("wireload-1t")
        if two and one and statistics.median(two) > 0:
            sp = statistics.median(one) / statistics.median(two)
            per_table = ", ".join(
                f"{t} {med('wireload-1t', t) / med('wireload', t):.2f}×"
                for t in tables
                if med("wireload", t) and med("wireload-1t", t)
            )
            lines.append(
                f"wireload speedup, {run['threads']} threads over 1 thread (median 1-thread time / "
                f"median {run['threads']}-thread time): **{sp:.2f}×**"
                + (f" ({per_table})" if len(tables) > 1 and per_table else "")
                + "; the bar is ≥ 1.8× at 2 threads."
            )
            lines.append("")

    if failures:
        lines.append("Failures (the contestant was dropped from later repetitions):")
        lines.append("")
        for c, why in failures.items():
            lines.append(f"- {c}: {why.replace(chr(10), ' ')}")
        lines.append("")

    lines.append("How each contestant loads (timed region only; see bench/README.md):")
    lines.append("")
    desc = {
        "wireload": f"`wireload --threads {run['threads']} -f script.sql`, one process per table "
        "(CREATE TABLE; COPY ... WITH (FORMAT csv, DELIMITER '|')); seconds are the load time "
        "wireload prints on stderr",
        "wireload-1t": "the same with `--threads 1`",
        "duckdb": "in-memory connection, `SET threads`, CREATE TABLE (TPC-H DDL), "
        "`COPY t FROM 'f' (FORMAT csv, DELIMITER '|', HEADER false)`",
        "polars": "`POLARS_MAX_THREADS` set before import; `pl.read_csv(schema=...)` with a 17th "
        "dummy String column for the trailing `|`, projected away with `columns=`",
        "pyarrow": "`pa.set_cpu_count`; `pyarrow.csv.read_csv` with `column_types`, a 17th dummy "
        "column name for the trailing `|`, dropped with `include_columns`",
        "hyper": "HyperProcess (telemetry off, query thread limits set to the thread count), "
        "CREATE TEMPORARY TABLE with a 17th dummy column for the trailing `|`, "
        "`COPY t FROM 'f' WITH (FORMAT csv, DELIMITER '|')`",
        "chdb": "in-memory chDB session, `SET "
        + ", ".join(f"{name}={run['threads']}" for name in CHDB_THREAD_SETTINGS)
        + "`, CREATE TABLE ... ENGINE = Memory (Int32/Int64/Decimal(15,2)/Date/String), "
        "`INSERT INTO t SELECT cols FROM file('f', 'CSV', 'cols..., dummy Nullable(String)') "
        "SETTINGS format_csv_delimiter = '|', input_format_csv_trim_whitespaces = 0` "
        "(the dummy column takes the trailing `|`)",
    }
    for c in contestants:
        lines.append(f"- {c}: {desc[c]}")
    lines.append("")
    lines.append(
        f"Before every timed load each contestant touched and freed a {TOUCH_FACTOR}× CSV-size "
        "buffer (peers in their own process, wireload in the driver right before launching it). "
        "Memory bandwidth on this machine drifts between runs and other processes share its "
        "CPUs (see the load average): compare contestants within one section, not across sections."
    )
    lines.append("")
    lines.append("<details><summary>Raw seconds per repetition</summary>")
    lines.append("")
    for c in contestants:
        for t in tables:
            xs = meas[c][t]
            if xs:
                lines.append(f"- {c} {t}: " + ", ".join(f"{x:.6g}" for x in xs))
    for c, per in run.get("wireload_wall", {}).items():
        for t, xs in per.items():
            if xs:
                lines.append(
                    f"- {c} {t} process wall time (start to exit, not compared): "
                    + ", ".join(f"{x:.6g}" for x in xs)
                )
    lines.append("")
    lines.append("</details>")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args.worker)
    if args.peer_version:
        return peer_version_main(args.peer_version)
    return driver_main(args, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
