#!/usr/bin/env python3
"""Read TPC-H lineitem from Python: wireload.read_csv against its peers, side by side.

Contestants, each returning an in-memory table of the same column types (int64/int32,
decimal128(15,2), date32, string):

- wireload: `wireload.read_csv(path, schema="...", delimiter="|", header=False,
  threads=N)` (a pyarrow.Table);
- pyarrow:  `pyarrow.csv.read_csv` with `column_types`;
- polars:   `polars.read_csv` with `schema=` (a polars DataFrame);
- duckdb:   `con.read_csv(..., columns=...).arrow()` (a pyarrow.Table; when `.arrow()`
  gives a RecordBatchReader, `.read_all()` is part of the timed call).

Every repetition of every contestant runs in a fresh Python process (this script with
`--child NAME`), so the peak memory (RSS) measured is that contestant's own. The child
imports the library and sets its threads, touches and frees a buffer of 1.5x the CSV
size, records its RSS (the baseline), resets the kernel's RSS high-water mark
(`echo 5 > /proc/self/clear_refs`), times the one read call, then reads the high-water
mark (VmHWM) from /proc/self/status: the peak RSS of the timed region. Where resetting
VmHWM does not work, a thread samples the RSS every 5 ms instead. Repetitions are
interleaved (repetition 1 runs every contestant, then repetition 2, ...; the order rotates
by one each repetition), medians are quoted, and with `--out` the run is recorded
(bench/record.py: a record in records/ beside the results file, its figures in that file).

    bench/.venv/bin/pip install ./python      # the wireload package (release build)
    bench/.venv/bin/python bench/python_read.py --out bench/RESULTS.md

It is a benchmark, not a test; the exit status is 1 when a contestant failed (an error,
a wrong row count, other column types, or values that differ from the others').
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (  # noqa: E402  (stdlib-only helpers shared by the bench scripts)
    TOUCH_FACTOR,
    command_line,
    count_rows,
    cpu_snapshot,
    filesystem_type,
    fmt_rate,
    git_commit,
    loadavg,
    machine_info,
    tail,
    touch_memory,
    worker_python,
)
from record import record  # noqa: E402

SECTION_KEY = "python-read"
DEFAULT_DATA = "/dev/shm/wl-sf1/lineitem.tbl"
CONTESTANTS = ["wireload", "pyarrow", "polars", "duckdb"]
PEERS = ["pyarrow", "polars", "duckdb"]
SPEED_BAR = 2.0  # wireload >= 2x faster than the fastest peer
SAMPLE_PERIOD = 0.005  # seconds between RSS samples when VmHWM cannot be reset

# lineitem as the issue states it (TPC-H; partkey and suppkey as BIGINT).
LINEITEM: list[tuple[str, str]] = [
    ("l_orderkey", "BIGINT"),
    ("l_partkey", "BIGINT"),
    ("l_suppkey", "BIGINT"),
    ("l_linenumber", "INT"),
    ("l_quantity", "DECIMAL(15,2)"),
    ("l_extendedprice", "DECIMAL(15,2)"),
    ("l_discount", "DECIMAL(15,2)"),
    ("l_tax", "DECIMAL(15,2)"),
    ("l_returnflag", "VARCHAR(1)"),
    ("l_linestatus", "VARCHAR(1)"),
    ("l_shipdate", "DATE"),
    ("l_commitdate", "DATE"),
    ("l_receiptdate", "DATE"),
    ("l_shipinstruct", "VARCHAR(25)"),
    ("l_shipmode", "VARCHAR(10)"),
    ("l_comment", "VARCHAR(44)"),
]
NAMES = [n for n, _ in LINEITEM]
SCHEMA_SQL = ", ".join(f"{n} {t}" for n, t in LINEITEM)
# Peers that cannot ignore the trailing '|' get a 17th column, projected away.
DUMMY_COLUMN = "trailing_dummy"


def kind(sql_type: str) -> str:
    """int64, int32, decimal, date or string: the type every contestant must produce."""
    if sql_type == "BIGINT":
        return "int64"
    if sql_type == "INT":
        return "int32"
    if sql_type.startswith("DECIMAL"):
        return "decimal"
    if sql_type == "DATE":
        return "date"
    return "string"


# --------------------------------------------------------------------------
# Child process: one contestant, one timed read
# --------------------------------------------------------------------------


def proc_status() -> dict[str, int]:
    """VmHWM, VmRSS, RssAnon, RssFile, RssShmem of this process, in bytes."""
    want = {"VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"}
    out: dict[str, int] = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in want:
                out[key] = int(value.split()[0]) * 1024  # kB
    return out


def reset_hwm() -> bool:
    """Reset VmHWM to the current RSS; True when the kernel did (checked, not assumed)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    st = proc_status()
    # Right after the reset the mark is the current RSS (a few pages of slack for the read).
    return "VmHWM" in st and st["VmHWM"] <= st["VmRSS"] + (1 << 20)


class RssSampler(threading.Thread):
    """Highest RSS seen, read from /proc/self/statm every SAMPLE_PERIOD seconds."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = 0
        self.samples = 0
        self.done = threading.Event()

    def sample(self) -> None:
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * self.page
        self.peak = max(self.peak, rss)
        self.samples += 1

    def run(self) -> None:
        while not self.done.wait(SAMPLE_PERIOD):
            self.sample()

    def stop(self) -> int:
        self.done.set()
        self.join()
        self.sample()  # the RSS at the end of the load
        return self.peak


def setup_wireload(path: str, threads: int):
    import pyarrow  # noqa: F401  (read_csv returns a pyarrow.Table: not imported in the timed call)
    import wireload

    version = getattr(wireload, "__version__", None)
    if version is None:
        from importlib import metadata

        version = metadata.version("wireload")

    def read():
        return wireload.read_csv(
            path, schema=SCHEMA_SQL, delimiter="|", header=False, threads=threads
        )

    return read, str(version)


def setup_pyarrow(path: str, threads: int):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    pa.set_cpu_count(threads)
    pa.set_io_thread_count(threads)
    arrow = {
        "int64": pa.int64(),
        "int32": pa.int32(),
        "decimal": pa.decimal128(15, 2),
        "date": pa.date32(),
        "string": pa.string(),
    }
    read_options = pacsv.ReadOptions(column_names=[*NAMES, DUMMY_COLUMN], use_threads=True)
    parse_options = pacsv.ParseOptions(delimiter="|")
    convert_options = pacsv.ConvertOptions(
        column_types={n: arrow[kind(t)] for n, t in LINEITEM}, include_columns=NAMES
    )

    def read():
        return pacsv.read_csv(
            path,
            read_options=read_options,
            parse_options=parse_options,
            convert_options=convert_options,
        )

    return read, pa.__version__


def setup_polars(path: str, threads: int):
    os.environ["POLARS_MAX_THREADS"] = str(threads)  # before the import (the driver sets it too)
    import polars as pl

    dtype = {
        "int64": pl.Int64,
        "int32": pl.Int32,
        "decimal": pl.Decimal(15, 2),
        "date": pl.Date,
        "string": pl.String,
    }
    schema = {n: dtype[kind(t)] for n, t in LINEITEM}
    schema[DUMMY_COLUMN] = pl.String
    columns = list(range(len(LINEITEM)))

    def read():
        return pl.read_csv(path, separator="|", has_header=False, schema=schema, columns=columns)

    return read, pl.__version__


def setup_duckdb(path: str, threads: int):
    import duckdb
    import pyarrow as pa  # .arrow() builds pyarrow objects: not imported in the timed call

    con = duckdb.connect(":memory:")
    con.execute(f"SET threads={threads}")
    sql_type = {
        "int64": "BIGINT",
        "int32": "INTEGER",
        "decimal": "DECIMAL(15,2)",
        "date": "DATE",
        "string": "VARCHAR",
    }
    columns = {n: sql_type[kind(t)] for n, t in LINEITEM}
    columns[DUMMY_COLUMN] = "VARCHAR"

    def read():
        rel = con.read_csv(path, delimiter="|", header=False, columns=columns).select(*NAMES)
        result = rel.arrow()
        if not isinstance(result, pa.Table):  # DuckDB >= 1.4: a RecordBatchReader
            result = result.read_all()
        return result

    return read, duckdb.__version__


SETUP = {
    "wireload": setup_wireload,
    "pyarrow": setup_pyarrow,
    "polars": setup_polars,
    "duckdb": setup_duckdb,
}


def describe_types(result) -> list[str]:
    """The result's column types as the library names them."""
    if hasattr(result, "schema") and hasattr(result.schema, "types"):  # pyarrow.Table
        return [str(t) for t in result.schema.types]
    return [str(t) for t in result.dtypes]  # polars.DataFrame


def type_problems(result) -> list[str]:
    """Columns whose name or type is not the expected one (any string flavour is a string)."""
    problems = []
    if hasattr(result, "schema") and hasattr(result.schema, "types"):
        import pyarrow as pa
        import pyarrow.types as pat

        def ok(k: str, t) -> bool:
            if k == "int64":
                return t == pa.int64()
            if k == "int32":
                return t == pa.int32()
            if k == "decimal":
                return t == pa.decimal128(15, 2)
            if k == "date":
                return t == pa.date32()
            return pat.is_string(t) or pat.is_large_string(t) or pat.is_string_view(t)

        names, types = list(result.schema.names), list(result.schema.types)
    else:
        import polars as pl

        def ok(k: str, t) -> bool:
            if k == "int64":
                return t == pl.Int64
            if k == "int32":
                return t == pl.Int32
            if k == "decimal":
                return t == pl.Decimal(15, 2)
            if k == "date":
                return t == pl.Date
            return t == pl.String

        names, types = list(result.columns), list(result.dtypes)
    if names != NAMES:
        problems.append(f"columns {names}, expected {NAMES}")
        return problems
    for (n, sql), t in zip(LINEITEM, types):
        if not ok(kind(sql), t):
            problems.append(f"{n}: {t} (expected {kind(sql)})")
    return problems


def checksums(result) -> dict[str, str]:
    """Per column: the sum (numbers), min..max (dates), total characters (strings).
    Computed after the timed region, compared across contestants by the driver."""
    out: dict[str, str] = {}
    if hasattr(result, "schema") and hasattr(result.schema, "types"):
        import pyarrow.compute as pc

        for n, sql in LINEITEM:
            col = result.column(n)
            k = kind(sql)
            if k == "date":
                mm = pc.min_max(col).as_py()
                v = f"{mm['min']}..{mm['max']}"
            elif k == "string":
                v = pc.sum(pc.utf8_length(col)).as_py()
            else:
                v = pc.sum(col).as_py()
            out[n] = f"{v:.2f}" if isinstance(v, Decimal) else str(v)
    else:
        import polars as pl

        for n, sql in LINEITEM:
            k = kind(sql)
            col = pl.col(n)
            if k == "date":
                lo, hi = result.select(col.min(), col.max().alias("hi")).row(0)
                v = f"{lo}..{hi}"
            elif k == "string":
                v = result.select(col.str.len_chars().sum()).item()
            else:
                v = result.select(col.sum()).item()
            out[n] = f"{v:.2f}" if isinstance(v, Decimal) else str(v)
    return out


def child_main(name: str) -> int:
    """Child process: read a job from stdin, time one read, print one JSON line."""
    job = json.load(sys.stdin)
    out: dict[str, object] = {"contestant": name}
    try:
        t0 = time.perf_counter()
        read, version = SETUP[name](job["path"], job["threads"])
        out["version"] = version
        out["setup_seconds"] = time.perf_counter() - t0
        touch_memory(int(job["bytes"] * TOUCH_FACTOR))
        gc.collect()
        before_reset = proc_status()
        hwm_ok = reset_hwm()
        baseline = proc_status()
        out["hwm_before_reset"] = before_reset.get("VmHWM")
        out["hwm_reset_works"] = hwm_ok
        sampler = RssSampler() if (job["sample"] or not hwm_ok) else None
        if sampler is not None:
            sampler.sample()
            sampler.start()
        start = time.perf_counter()
        result = read()
        seconds = time.perf_counter() - start
        sampled = sampler.stop() if sampler is not None else None
        after = proc_status()
        out["seconds"] = seconds
        out["baseline_rss"] = baseline["VmRSS"]
        out["peak_rss_hwm"] = after["VmHWM"] if hwm_ok else None
        out["peak_rss_sampled"] = sampled
        out["samples"] = sampler.samples if sampler is not None else 0
        out["peak_rss"] = after["VmHWM"] if hwm_ok else sampled
        out["rss_after"] = {k: after[k] for k in ("VmRSS", "RssAnon", "RssFile", "RssShmem")}
        out["rows"] = int(result.num_rows if hasattr(result, "num_rows") else result.height)
        out["result_type"] = f"{type(result).__module__}.{type(result).__qualname__}"
        out["types"] = describe_types(result)
        out["type_problems"] = type_problems(result)
        out["checksums"] = checksums(result) if not out["type_problems"] else {}
    except Exception as exc:  # noqa: BLE001 -- reported to the driver, which marks it failed
        out["error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out), flush=True)
    return 0


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


class Failed(Exception):
    """A contestant's repetition failed."""


def busy_builds() -> list[str]:
    """cargo/rustc processes running on this machine (by process name, not command line)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm in ("cargo", "rustc") or comm.startswith("rustc"):
            found.append(f"{comm} (pid {pid})")
    return found


def run_child(name: str, args: argparse.Namespace, nbytes: int) -> dict:
    """One repetition of one contestant in a fresh process."""
    job = json.dumps(
        {"path": args.data, "threads": args.threads, "bytes": nbytes, "sample": args.rss_sampler}
    )
    env = dict(os.environ)
    env["POLARS_MAX_THREADS"] = str(args.threads)
    proc = subprocess.run(
        [args.python, os.path.abspath(__file__), "--child", name],
        input=job,
        check=False,
        capture_output=True,
        text=True,
        timeout=args.timeout,
        env=env,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise Failed(f"child exited {proc.returncode}: {tail(proc.stderr or proc.stdout)}")
    result = json.loads(lines[-1])
    if "error" in result:
        raise Failed(result["error"])
    return result


def versions_of(contestants: list[str], python: str) -> dict[str, str]:
    code = (
        "import json, importlib, importlib.metadata as m\n"
        "out = {}\n"
        "for name in %r:\n"
        "    try:\n"
        "        mod = importlib.import_module(name)\n"
        "        out[name] = str(getattr(mod, '__version__', None) or m.version(name))\n"
        "    except Exception as exc:\n"
        "        out[name] = 'not importable: %%s' %% type(exc).__name__\n"
        "print(json.dumps(out))\n" % (contestants,)
    )
    proc = subprocess.run(
        [python, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {c: "unknown" for c in contestants}


def mib(nbytes: float | None) -> str:
    return "n/a" if nbytes is None else f"{nbytes / (1 << 20):.0f}"


def mib1(nbytes: float) -> str:
    return f"{nbytes / (1 << 20):.1f}"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data", default=DEFAULT_DATA, help=f"lineitem.tbl (default {DEFAULT_DATA})")
    p.add_argument("--runs", type=int, default=5, help="repetitions (default 5)")
    p.add_argument("--threads", type=int, default=2, help="threads per contestant (default 2)")
    p.add_argument(
        "--skip",
        action="append",
        default=[],
        help="contestant(s) to leave out, comma-separated or repeated (e.g. --skip wireload)",
    )
    p.add_argument("--out", help="results file (bench/RESULTS.md) whose figures for this run are replaced; the run is recorded in records/ beside it")
    p.add_argument("--json", help="also write all raw results as JSON here")
    p.add_argument("--timeout", type=float, default=600, help="seconds per child (default 600)")
    p.add_argument(
        "--python",
        default=worker_python(),
        help="interpreter of the children (default bench/.venv/bin/python)",
    )
    p.add_argument(
        "--rss-sampler",
        action="store_true",
        help="also sample RSS every 5 ms in the timed region (always done when VmHWM "
        "cannot be reset)",
    )
    p.add_argument(
        "--allow-busy",
        action="store_true",
        help="run even while cargo/rustc processes are running (the section says so)",
    )
    p.add_argument("--child", choices=CONTESTANTS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return args
    skip = {s.strip() for group in args.skip for s in group.split(",") if s.strip()}
    bad = skip - set(CONTESTANTS)
    if bad:
        p.error(f"unknown contestant(s) {', '.join(sorted(bad))}; choose from {CONTESTANTS}")
    args.contestants = [c for c in CONTESTANTS if c not in skip]
    if not args.contestants:
        p.error("nothing left to run")
    if args.runs < 1:
        p.error("--runs must be at least 1")
    if args.threads < 1:
        p.error("--threads must be at least 1")
    args.data = os.path.abspath(args.data)
    return args


def driver_main(args: argparse.Namespace, argv: list[str]) -> int:
    data = Path(args.data)
    if not data.is_file():
        sys.exit(
            f"{data} not found; generate it with `target/release/wireload gen tpch --sf 1 "
            f"--out {data.parent}` or pass --data"
        )
    busy = busy_builds()
    if busy:
        msg = f"cargo/rustc running: {', '.join(busy)}"
        if not args.allow_busy:
            sys.exit(f"{msg}; wait for the build to finish (or pass --allow-busy)")
        print(f"warning: {msg}", file=sys.stderr)
    fstype = filesystem_type(data)
    if fstype not in ("tmpfs", "ramfs"):
        print(f"warning: {data} is on {fstype}, not tmpfs", file=sys.stderr)
    nbytes = data.stat().st_size
    expected = count_rows(data)  # also pulls the file into page cache
    versions = versions_of(args.contestants, args.python)
    versions["python"] = subprocess.run(
        [args.python, "-c", "import platform; print(platform.python_version())"],
        check=False,
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(
        f"{data}: {nbytes / 1e6:.1f} MB, {expected} rows; contestants "
        f"{', '.join(args.contestants)}; {args.runs} runs, {args.threads} threads",
        file=sys.stderr,
    )

    started = dt.datetime.now(dt.timezone.utc)
    load_before = loadavg()
    cpu_before = cpu_snapshot()
    wall_before = time.monotonic()
    reps: dict[str, list[dict]] = {c: [] for c in args.contestants}
    failures: dict[str, str] = {}
    orders: list[list[str]] = []
    for rep in range(args.runs):
        active = [c for c in args.contestants if c not in failures]
        k = rep % len(active) if active else 0
        order = active[k:] + active[:k]
        orders.append(order)
        for c in order:
            try:
                r = run_child(c, args, nbytes)
                if r["rows"] != expected:
                    raise Failed(f"read {r['rows']} rows, expected {expected}")
                if r["type_problems"]:
                    raise Failed("column types differ: " + "; ".join(r["type_problems"]))
                r["rep"] = rep + 1
                reps[c].append(r)
                print(
                    f"rep {rep + 1}/{args.runs} {c:9s} {r['seconds']:8.3f} s "
                    f"{fmt_rate(nbytes, r['seconds']):>8s} MB/s  peak {mib(r['peak_rss']):>6s} MiB "
                    f"(baseline {mib(r['baseline_rss'])}, "
                    f"+{mib(r['peak_rss'] - r['baseline_rss'])})",
                    file=sys.stderr,
                )
            except (Failed, subprocess.TimeoutExpired, OSError, KeyError, ValueError) as exc:
                failures[c] = str(exc)
                print(f"rep {rep + 1}/{args.runs} {c}: FAILED: {exc}", file=sys.stderr)
    finished = dt.datetime.now(dt.timezone.utc)
    load_after = loadavg()
    cpu_after = cpu_snapshot()
    wall = time.monotonic() - wall_before
    others = (cpu_after[0] - cpu_before[0]) - (cpu_after[1] - cpu_before[1])
    other_share = max(0.0, others / (wall * (os.cpu_count() or 1))) if wall > 0 else 0.0
    if other_share > 0.1:
        print(
            f"warning: other processes used {other_share:.0%} of the CPUs during the run",
            file=sys.stderr,
        )

    # Values: every contestant's checksums must agree with every other's.
    mismatches = compare_checksums(reps)
    for c, why in mismatches.items():
        failures.setdefault(c, why)
    busy_after = busy_builds()

    run = {
        "data": str(data),
        "data_fs": fstype,
        "bytes": nbytes,
        "rows": expected,
        "threads": args.threads,
        "runs": args.runs,
        "contestants": args.contestants,
        "orders": orders,
        "reps": reps,
        "failures": failures,
        "versions": versions,
        "machine": machine_info(),
        "started": started.isoformat(timespec="seconds"),
        "finished": finished.isoformat(timespec="seconds"),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "other_cpu_share": other_share,
        "builds_running": sorted(set(busy) | set(busy_after)),
        "command": command_line(argv, __file__),
        "commit": git_commit(),
        "schema": SCHEMA_SQL,
        "touch_factor": TOUCH_FACTOR,
    }
    summary = summarize(run)
    run["summary"] = summary
    section = render_section(run)
    print(render_table(run))
    print()
    print(verdict(run))
    if args.out:
        path = record(SECTION_KEY, section, results=args.out)
        print(f"wrote {path} and its figures to {args.out}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(run, indent=1) + "\n")
        print(f"wrote raw results to {args.json}", file=sys.stderr)
    return 1 if failures else 0


def compare_checksums(reps: dict[str, list[dict]]) -> dict[str, str]:
    """Contestants whose values differ from the majority's (per column), with the columns."""
    sums = {c: rs[0]["checksums"] for c, rs in reps.items() if rs}
    for c, rs in reps.items():
        for r in rs[1:]:
            if r["checksums"] != sums[c]:
                return {c: f"checksums differ between repetitions: {r['checksums']}"}
    if len(sums) < 2:
        return {}
    bad: dict[str, list[str]] = {}
    for n in NAMES:
        values = [s[n] for s in sums.values()]
        majority = max(set(values), key=values.count)
        for c, s in sums.items():
            if s[n] != majority:
                bad.setdefault(c, []).append(f"{n} {s[n]} (others {majority})")
    return {c: "values differ from the others': " + "; ".join(v) for c, v in bad.items()}


def summarize(run: dict) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for c, rs in run["reps"].items():
        if not rs:
            continue
        secs = [r["seconds"] for r in rs]
        peaks = [r["peak_rss"] for r in rs]
        bases = [r["baseline_rss"] for r in rs]
        added = [r["peak_rss"] - r["baseline_rss"] for r in rs]
        out[c] = {
            "seconds": statistics.median(secs),
            "seconds_min": min(secs),
            "seconds_max": max(secs),
            "peak_rss": statistics.median(peaks),
            "baseline_rss": statistics.median(bases),
            "added_rss": statistics.median(added),
            "n": len(rs),
        }
    return out


def reference(run: dict) -> str | None:
    s = run["summary"]
    if "wireload" in s and "wireload" not in run["failures"]:
        return "wireload"
    ok = [c for c in s if c not in run["failures"]]
    return min(ok, key=lambda c: s[c]["seconds"]) if ok else None


def render_table(run: dict) -> str:
    s = run["summary"]
    ref = reference(run)
    head = "wireload's" if ref == "wireload" else f"fastest's ({ref})"
    lines = [
        f"| contestant | seconds (median) | MB/s | time / {head} | peak RSS MiB (median) "
        "| baseline RSS MiB (median) | added by the load MiB (median) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in sorted(run["contestants"], key=lambda c: s[c]["seconds"] if c in s else 1e99):
        if c not in s:
            lines.append(f"| {c} | failed | | | | | |")
            continue
        m = s[c]
        ratio = f"{m['seconds'] / s[ref]['seconds']:.2f}×" if ref else "n/a"
        mark = " (failed)" if c in run["failures"] else ""
        lines.append(
            f"| {c}{mark} | {m['seconds']:.3f} | {fmt_rate(run['bytes'], m['seconds'])} | {ratio} "
            f"| {mib(m['peak_rss'])} | {mib(m['baseline_rss'])} | {mib(m['added_rss'])} |"
        )
    return "\n".join(lines)


def verdict(run: dict) -> str:
    """The issue's bar, in words, from the medians."""
    s, failures = run["summary"], run["failures"]
    missing = [c for c in CONTESTANTS if c not in s or c in failures]
    if missing:
        return (
            f"Bar not evaluated: {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not in this run or failed."
        )
    wl = s["wireload"]
    fastest = min(PEERS, key=lambda c: s[c]["seconds"])
    speedup = s[fastest]["seconds"] / wl["seconds"]
    speed_ok = speedup >= SPEED_BAR
    higher = [c for c in PEERS if not wl["peak_rss"] < s[c]["peak_rss"]]
    mem_ok = not higher
    added_lower = [c for c in PEERS if wl["added_rss"] < s[c]["added_rss"]]
    speed_text = (
        f"the fastest peer, {fastest}, takes {s[fastest]['seconds']:.3f} s (median), "
        f"{speedup:.2f}× wireload's {wl['seconds']:.3f} s: "
        + ("**met**" if speed_ok else "**not met**")
        + f" (the bar is ≥ {SPEED_BAR:g}×)."
    )
    mem_text = (
        f"wireload's median peak RSS {mib1(wl['peak_rss'])} MiB against "
        + ", ".join(f"{c} {mib1(s[c]['peak_rss'])} MiB" for c in PEERS)
        + ": "
        + (
            "**met** (lower than each)."
            if mem_ok
            else f"**not met** (not lower than {', '.join(higher)})."
        )
    )
    added_text = (
        f"For information, memory added by the load (peak minus baseline): wireload "
        f"{mib(wl['added_rss'])} MiB, "
        + ", ".join(f"{c} {mib(s[c]['added_rss'])} MiB" for c in PEERS)
        + f" (lower than {len(added_lower)} of 3)."
    )
    overall = "**Bar met.**" if speed_ok and mem_ok else "**Bar not met.**"
    return f"{overall} Speed: {speed_text} Memory: {mem_text} {added_text}"


def render_section(run: dict) -> str:
    m = run["machine"]
    s = run["summary"]
    v = run["versions"]
    lines = [
        f"## Python read_csv: TPC-H lineitem ({run['started'][:10]})",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} CPUs"
        + (f" ({m['virt']})" if m.get("virt") else "")
        + f", {m['memory']} RAM, Linux {m['kernel']}",
        f"- Run: {run['started']} to {run['finished']} (UTC); load average "
        f"{run['loadavg_before']} before, {run['loadavg_after']} after; CPU time of other "
        f"processes during the run: {run['other_cpu_share']:.0%} of {m['cores']} CPUs"
        + (" (disturbed)" if run["other_cpu_share"] > 0.1 else "")
        + (
            f"; cargo/rustc were running: {', '.join(run['builds_running'])}"
            if run["builds_running"]
            else ""
        ),
        f"- Command: `{run['command']}` (commit {run['commit']})",
        "- Versions: "
        + ", ".join(f"{c} {v[c]}" for c in run["contestants"] if c in v)
        + f"; Python {v.get('python', 'unknown')}",
        f"- Data: {run['data']} ({run['data_fs']}), {run['bytes'] / 1e6:.1f} MB, "
        f"{run['rows']} rows",
        f"- {run['threads']} threads, {run['runs']} interleaved repetitions (order rotating), "
        "medians; MB/s = CSV bytes / seconds (1 MB = 10^6 bytes); MiB = 2^20 bytes",
        "",
        render_table(run),
        "",
        verdict(run),
        "",
    ]
    if run["failures"]:
        lines += ["Failures (a failed contestant was dropped from later repetitions):", ""]
        lines += [f"- {c}: {why.replace(chr(10), ' ')}" for c, why in run["failures"].items()]
        lines.append("")
    hwm = all(r["hwm_reset_works"] for rs in run["reps"].values() for r in rs)
    lines += [
        "How it was measured (see bench/README.md):",
        "",
        "- Every repetition of every contestant is a fresh Python process. Outside the timed "
        "region it imports the library (pyarrow too for wireload and duckdb, whose results "
        "are pyarrow Tables), sets the threads, prepares the options, then writes and frees a "
        f"{run['touch_factor']}× CSV-size buffer.",
        "- Timed: the one read call, with the schema `" + run["schema"] + "` as each library "
        "spells it (int64, int32, decimal128(15,2), date32, string):",
        f"  - wireload: `wireload.read_csv(path, schema=..., delimiter='|', header=False, "
        f"threads={run['threads']})`;",
        "  - pyarrow: `pa.set_cpu_count`, `pa.set_io_thread_count`; `pyarrow.csv.read_csv` "
        "with `column_types`, a 17th dummy column name for the trailing `|`, left out with "
        "`include_columns`;",
        "  - polars: `POLARS_MAX_THREADS` before import; `pl.read_csv(schema=...)` with a 17th "
        "dummy String column, projected away with `columns=`; the result is a polars DataFrame;",
        "  - duckdb: in-memory connection, `SET threads`; `con.read_csv(path, delimiter='|', "
        "header=False, columns={...17 columns}).select(<16 columns>).arrow()`, plus "
        "`.read_all()` when `.arrow()` gives a RecordBatchReader (DuckDB ≥ 1.4).",
        "- Peak RSS: "
        + (
            "the kernel's high-water mark VmHWM (/proc/self/status), reset to the current RSS "
            "by writing 5 to /proc/self/clear_refs right before the read (checked in every "
            "child) and read right after it, with the result still alive: the true peak of "
            "the read, including the interpreter and the imported libraries."
            if hwm
            else "VmHWM could not be reset in some children; there the RSS sampled every 5 ms "
            "by a thread is used (see the raw figures)."
        )
        + " Baseline: VmRSS right before the read. Added by the load: peak minus baseline. "
        "RSS counts file pages a library maps (RssFile/RssShmem; the CSV is on tmpfs), "
        "shown after the read in the raw figures.",
        "- Checked after the timed region: the row count, the column types, and per column "
        "the sum (numbers), min..max (dates) and total characters (strings), equal across "
        "contestants.",
        "",
        "<details><summary>Raw figures per repetition</summary>",
        "",
        "Orders: " + "; ".join(f"{i + 1}: {', '.join(o)}" for i, o in enumerate(run["orders"])),
        "",
        "| contestant | rep | seconds | peak RSS MiB | baseline MiB | added MiB | after: "
        "RSS / anon / file / shmem MiB | VmHWM reset | sampled peak MiB (samples) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for c in run["contestants"]:
        for r in run["reps"][c]:
            a = r["rss_after"]
            sampled = (
                f"{mib(r['peak_rss_sampled'])} ({r['samples']})"
                if r["peak_rss_sampled"] is not None
                else ""
            )
            lines.append(
                f"| {c} | {r['rep']} | {r['seconds']:.4f} | {mib(r['peak_rss'])} | "
                f"{mib(r['baseline_rss'])} | {mib(r['peak_rss'] - r['baseline_rss'])} | "
                f"{mib(a['VmRSS'])} / {mib(a['RssAnon'])} / {mib(a['RssFile'])} / "
                f"{mib(a['RssShmem'])} | {'yes' if r['hwm_reset_works'] else 'no'} | {sampled} |"
            )
    lines.append("")
    for c in run["contestants"]:
        if run["reps"][c]:
            r = run["reps"][c][0]
            lines.append(f"- {c} result: `{r['result_type']}`, types {', '.join(r['types'])}")
    lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.child:
        return child_main(args.child)
    return driver_main(args, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
