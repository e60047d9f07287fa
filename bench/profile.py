#!/usr/bin/env python3
"""Where a wireload load spends its cycles, in the form of the Instant Loading paper's
profile: `perf record` (cpu-clock sampling) of `wireload` loading one TPC-H table, samples
grouped by the stage their function belongs to, and a record (bench/record.py).

    cargo build --profile profiling -p wireload   # the release build with line tables
    bench/.venv/bin/python bench/profile.py --wireload target/profiling/wireload

It is a measurement, not a test. Needs `perf` (sampling with the cpu-clock event works
without hardware counters). Scan backends: `WIRELOAD_SIMD` is passed on to wireload, and
`--simd a,b` profiles several backends one after another.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # noqa: E402  (the load benchmark's DDL and machine facts; load.record writes the record)

# Stage of a sampled function, by the first pattern its symbol matches (order matters).
# The builder keeps one out-of-line loop per kind of value (append_integers, append_dates,
# ...), each with its parser and the column's field iteration inlined: those samples count
# as deserializing that kind.
STAGES: list[tuple[str, re.Pattern[str]]] = [
    (
        "finding delimiters (structural scan, chunk quote context)",
        re.compile(
            r"wireload_csv::(scan|reference|context|block)|scan_(avx512|avx2|sse42)"
            r"|bytecount|first_record_start"
        ),
    ),
    (
        "deserializing numerics (integers, decimals, floats)",
        re.compile(
            r"append_(integers|decimals|floats)|parse_(i16|i32|i64|decimal|f32|f64|integer|float)"
            r"|wireload_types::swar"
        ),
    ),
    (
        "deserializing dates and timestamps",
        re.compile(r"append_(dates|timestamps)|parse_(date|timestamp)|days_from"),
    ),
    (
        "strings (copy into the value buffer, UTF-8 check, length)",
        re.compile(r"append_strings|append_bytes|simdutf8|memmove|memcpy|bounded|text::<"),
    ),
    (
        "column loop (field iteration, NULL test, value push)",
        re.compile(r"wireload_load::task|ColumnBuilder|append_fixed|ColumnFields|Enumerate|Map<"),
    ),
    (
        "indexes (keys, ART, hash)",
        re.compile(r"wireload_index|wireload_load::indexing"),
    ),
    (
        "merging partition buffers",
        re.compile(r"wireload_load::merge|concat|wireload_storage"),
    ),
    (
        "memory: page faults, zeroing, allocation (kernel, malloc)",
        re.compile(
            r"\[k\]|malloc|free|_int_|realloc|alloc::raw_vec|clear_page|page_fault|mmap"
        ),
    ),
]
OTHER = "other (startup, SQL, threads, unattributed)"

REPORT_LINE = re.compile(r"^\s*([0-9.]+)%\s+(.*)$")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--wireload", default="target/release/wireload")
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--table", default="lineitem")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--frequency", type=int, default=1999, help="samples per second and CPU")
    p.add_argument("--simd", default="", help="comma-separated WIRELOAD_SIMD values [the default]")
    p.add_argument("--out", default="bench/RESULTS.md")
    return p.parse_args(argv)


def profile_once(args: argparse.Namespace, path: Path, simd: str, workdir: str) -> tuple[dict, float]:
    """Records one load; returns the % of samples per stage and the load seconds."""
    script = Path(workdir) / "load.sql"
    script.write_text(
        load.create_table_sql(args.table)
        + ";\n"
        + f"COPY {args.table} FROM {load.sql_string(str(path))} WITH (FORMAT csv, DELIMITER '|');\n"
    )
    data = Path(workdir) / f"perf-{simd or 'default'}.data"
    env = dict(os.environ)
    if simd:
        env["WIRELOAD_SIMD"] = simd
    load.touch_memory(int(path.stat().st_size * load.TOUCH_FACTOR))
    cmd = [
        "perf", "record", "-F", str(args.frequency), "-o", str(data), "--",
        args.wireload, "--threads", str(args.threads), "-f", str(script),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed: {proc.stderr[-2000:]}")
    m = load.LOADED_RE.search(proc.stderr)
    seconds = float(m.group(3)) * load.UNIT_SECONDS[m.group(4)] if m else float("nan")
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "symbol"],
        capture_output=True, text=True, check=True,
    ).stdout
    shares: dict[str, float] = {name: 0.0 for name, _ in STAGES}
    shares[OTHER] = 0.0
    for line in report.splitlines():
        m = REPORT_LINE.match(line)
        if not m:
            continue
        pct, symbol = float(m.group(1)), m.group(2)
        stage = next((name for name, rx in STAGES if rx.search(symbol)), OTHER)
        shares[stage] += pct
    return shares, seconds


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    data_dir = Path(args.data_dir or f"/dev/shm/wireload-tpch-sf{load.fmt_sf(args.sf)}")
    path = data_dir / f"{args.table}.tbl"
    if not path.exists():
        raise SystemExit(f"{path} is missing: generate it with `wireload gen tpch --sf {args.sf} --out {data_dir}`")
    backends = [s for s in args.simd.split(",") if s] or [""]
    started = dt.datetime.now(dt.timezone.utc)
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for simd in backends:
            results.append((simd or "default (best of this CPU)", *profile_once(args, path, simd, workdir)))
    info = load.machine_info()
    mb = path.stat().st_size / 1e6
    lines = [
        f"## Load profile: where the cycles go, {args.table} SF{load.fmt_sf(args.sf)} ({started.date()})",
        "",
        f"- Machine: {info.get('cpu', '?')}, {info.get('cores', '?')} CPUs, {info.get('memory', '?')}",
        f"- Command: `{' '.join(['bench/profile.py', *argv])}` (commit {load.git_commit()}), {started.isoformat(timespec='seconds')}",
        f"- `perf record -F {args.frequency}` (cpu-clock) of `wireload --threads {args.threads}` loading"
        f" {path} ({mb:.1f} MB); samples grouped by the stage of their function (leaf symbol);"
        " one run per backend, so a few percent either way is noise",
        "",
        "| stage | " + " | ".join(f"% of samples, {name}" for name, _, _ in results) + " |",
        "| --- | " + " | ".join("---:" for _ in results) + " |",
    ]
    for stage in [name for name, _ in STAGES] + [OTHER]:
        lines.append(f"| {stage} | " + " | ".join(f"{s[stage]:.1f}" for _, s, _ in results) + " |")
    lines.append(
        "| load seconds (this run, under perf) | "
        + " | ".join(f"{sec:.3f}" for _, _, sec in results)
        + " |"
    )
    lines.append("")
    key = f"profile {args.table} sf={load.fmt_sf(args.sf)}"
    print(f"wrote {load.record(key, chr(10).join(lines) + chr(10), results=args.out)}", file=sys.stderr)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
