#!/usr/bin/env python3
"""The scan backends side by side (issue: vectorized parsing): for each backend that this
CPU runs (WIRELOAD_SIMD=scalar|sse42|avx2|avx512), the lineitem load in MB/s at 1 and 2
threads (wireload binary, interleaved repetitions, medians), the structural scan alone
(the `scan` cargo bench: GB/s and the ratio to a memchr newline count), and instructions
and branch misses per KB of CSV counted by cachegrind's branch simulator (this machine has
no hardware counters; valgrind cannot run AVX-512 code, so that backend is not counted).
Records the run with bench/record.py.

    bench/.venv/bin/python bench/simd.py --wireload target/rel/release/wireload \\
        --scan-bench "$(ls target/.../deps/scan-*)"

It measures, it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # noqa: E402

BACKENDS = ["scalar", "sse42", "avx2", "avx512"]
SCAN_LINE = re.compile(r"^(memchr newline count|scan (\w+))\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)")
CG_LINE = re.compile(r"==\d+== (I\s+refs|Mispredicts|Branches):\s+([0-9,]+)")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--wireload", default="target/release/wireload")
    p.add_argument("--scan-bench", required=True, help="the built `scan` bench binary of wireload-csv")
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--count-mb", type=float, default=20.0, help="MB of lineitem counted under cachegrind")
    p.add_argument("--out", default="bench/RESULTS.md")
    return p.parse_args(argv)


def available() -> list[str]:
    """Backends this CPU runs (from /proc/cpuinfo flags, as wireload decides)."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    have = {
        "scalar": True,
        "sse42": {"sse4_2", "pclmulqdq", "popcnt"} <= flags,
        "avx2": {"avx2", "pclmulqdq", "popcnt"} <= flags,
        "avx512": {"avx512f", "avx512bw", "pclmulqdq", "popcnt"} <= flags,
    }
    return [b for b in BACKENDS if have[b]]


def load_seconds(binary: str, path: Path, threads: int, backend: str, workdir: str) -> float:
    """One timed load of lineitem with a backend; the load time wireload prints."""
    table = {"name": "lineitem", "path": str(path), "bytes": path.stat().st_size}
    env_before = os.environ.get("WIRELOAD_SIMD")
    os.environ["WIRELOAD_SIMD"] = backend
    try:
        loads = load.run_wireload(binary, threads, [table], workdir, timeout=600)
    finally:
        if env_before is None:
            os.environ.pop("WIRELOAD_SIMD", None)
        else:
            os.environ["WIRELOAD_SIMD"] = env_before
    return loads[0]["seconds"]


def cachegrind(cmd: list[str], env: dict[str, str]) -> tuple[int, int]:
    """Instructions and simulated branch mispredictions of a command under cachegrind."""
    with tempfile.NamedTemporaryFile(suffix=".cg") as out:
        proc = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--branch-sim=yes",
             f"--cachegrind-out-file={out.name}", *cmd],
            capture_output=True, text=True, env=env, check=False,
        )
    if proc.returncode != 0:
        raise SystemExit(f"valgrind {' '.join(cmd)} failed: {proc.stderr[-1500:]}")
    found = {m.group(1).split()[0]: int(m.group(2).replace(",", "")) for m in CG_LINE.finditer(proc.stderr)}
    return found["I"], found["Mispredicts"]


def count_load(binary: str, path: Path, backend: str, workdir: str) -> tuple[int, int]:
    """Instructions and branch misses of loading `path` (1 thread) minus a one-row load."""
    one_row = Path(workdir) / "one-row.tbl"
    with open(path, "rb") as f:
        one_row.write_bytes(f.readline())
    env = dict(os.environ, WIRELOAD_SIMD=backend)
    results = []
    for p in (path, one_row):
        script = Path(workdir) / "count.sql"
        script.write_text(
            load.create_table_sql("lineitem") + ";\n"
            + f"COPY lineitem FROM {load.sql_string(str(p))} WITH (FORMAT csv, DELIMITER '|');\n"
        )
        results.append(cachegrind([binary, "--threads", "1", "-f", str(script)], env))
    return results[0][0] - results[1][0], results[0][1] - results[1][1]


def count_scan(scan_bench: str, path: Path, backend: str) -> tuple[int, int]:
    """Instructions and branch misses of one 1-thread scan of `path` (bench with 1 round)."""
    base_env = dict(os.environ, WIRELOAD_SIMD=backend, WIRELOAD_BENCH_CSV=str(path), WIRELOAD_BENCH_ROUNDS="1")
    # The bench scans at 1 and 2 threads and counts newlines: subtract an empty input's run
    # and halve (each thread count scans the bytes once).
    full = cachegrind([scan_bench], base_env)
    empty_path = Path(tempfile.gettempdir()) / "wireload-empty.tbl"
    empty_path.write_bytes(b"")
    empty = cachegrind([scan_bench], dict(base_env, WIRELOAD_BENCH_CSV=str(empty_path)))
    return (full[0] - empty[0]) // 2, (full[1] - empty[1]) // 2


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    data_dir = Path(args.data_dir or f"/dev/shm/wireload-tpch-sf{load.fmt_sf(args.sf)}")
    path = data_dir / "lineitem.tbl"
    if not path.exists():
        raise SystemExit(f"{path} is missing: `wireload gen tpch --sf {args.sf} --out {data_dir}`")
    backends = available()
    started = dt.datetime.now(dt.timezone.utc)
    avg_before = load.loadavg()
    mb = path.stat().st_size / 1e6
    seconds: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for rep in range(args.runs):
            for backend in backends:
                for threads in (1, 2):
                    s = load_seconds(args.wireload, path, threads, backend, workdir)
                    seconds.setdefault((backend, threads), []).append(s)
                    print(f"rep {rep + 1}: {backend} {threads} thread(s): {mb / s:.0f} MB/s", flush=True)
        scan_out = subprocess.run(
            [args.scan_bench], capture_output=True, text=True, check=True,
            env=dict(os.environ, WIRELOAD_BENCH_CSV=str(path)),
        ).stdout
        prefix = Path(workdir) / "prefix.tbl"
        with open(path, "rb") as f:
            head = f.read(int(args.count_mb * 1e6))
        prefix.write_bytes(head[: head.rfind(b"\n") + 1])
        kb = prefix.stat().st_size / 1024
        counted = {}
        for backend in [b for b in backends if b != "avx512"]:
            counted[backend] = (count_load(args.wireload, prefix, backend, workdir), count_scan(args.scan_bench, prefix, backend))
            print(f"counted {backend}", flush=True)
    avg_after = load.loadavg()
    scan: dict[tuple[str, int], tuple[float, float]] = {}
    for line in scan_out.splitlines():
        m = SCAN_LINE.match(line)
        if m:
            scan[(m.group(2) or "memchr", int(m.group(3)))] = (float(m.group(4)), float(m.group(5)))

    info = load.machine_info()
    lines = [
        f"## Scan backends: lineitem SF{load.fmt_sf(args.sf)} per backend ({started.date()})",
        "",
        f"- Machine: {info.get('cpu', '?')}, {info.get('cores', '?')} CPUs, {info.get('memory', '?')}; load average {avg_before} before, {avg_after} after",
        f"- Command: `bench/simd.py {' '.join(argv)}` (commit {load.git_commit()}), {started.isoformat(timespec='seconds')}",
        f"- Load: `wireload --threads N -f script.sql` (CREATE TABLE + COPY) of {path} ({mb:.1f} MB), `WIRELOAD_SIMD` set per run;"
        f" {args.runs} interleaved repetitions, median MB/s (min–max)",
        "- Scan alone: the `scan` cargo bench of wireload-csv (all records and fields, quote-aware, safe mode), median of 7, GB/s,"
        " and its ratio to a memchr newline count over the same bytes in the same process",
        f"- Counts: cachegrind (`--branch-sim=yes`, a simulated predictor, not this CPU's) over the first {kb / 1024:.1f} MB"
        " of the file, 1 thread, per KB of CSV; the load counts subtract a one-row load (startup),"
        " the scan counts subtract an empty input. valgrind cannot execute AVX-512, so that"
        " backend has no counts; its loop is the AVX2 one with 64-byte compares, so its branch"
        " behaviour should match AVX2's (not measured)",
        "",
        "| backend | load MB/s, 1 thread | load MB/s, 2 threads | scan GB/s, 1 thread | scan GB/s, 2 threads | scan / memchr count (1 thread) | load: instructions / KB | load: branch misses / KB | scan: instructions / KB | scan: branch misses / KB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for backend in backends:
        cells = [backend]
        for threads in (1, 2):
            xs = [mb / s for s in seconds[(backend, threads)]]
            cells.append(f"{statistics.median(xs):.0f} ({min(xs):.0f}–{max(xs):.0f})")
        for threads in (1, 2):
            gbs = scan.get((backend, threads))
            cells.append(f"{gbs[0]:.2f}" if gbs else "–")
        gbs = scan.get((backend, 1))
        cells.append(f"{gbs[1]:.2f}" if gbs else "–")
        if backend in counted:
            (li, lb), (si, sb) = counted[backend]
            cells += [f"{li / kb:,.0f}", f"{lb / kb:.1f}", f"{si / kb:,.0f}", f"{sb / kb:.1f}"]
        else:
            cells += ["–"] * 4
        lines.append("| " + " | ".join(cells) + " |")
    memchr1, memchr2 = scan.get(("memchr", 1)), scan.get(("memchr", 2))
    if memchr1 and memchr2:
        lines.append("")
        lines.append(f"memchr newline count over the same bytes: {memchr1[0]:.2f} GB/s (1 thread), {memchr2[0]:.2f} GB/s (2 threads).")
    lines.append("")
    lines.append("<details><summary>Raw load seconds</summary>")
    lines.append("")
    for (backend, threads), xs in seconds.items():
        lines.append(f"- {backend}, {threads} thread(s): " + ", ".join(f"{x:.3f}" for x in xs))
    lines.append("")
    lines.append("</details>")
    lines.append("")
    path = load.record(f"simd sf={load.fmt_sf(args.sf)}", "\n".join(lines) + "\n", results=args.out)
    print(f"wrote {path}", file=sys.stderr)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
