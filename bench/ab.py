#!/usr/bin/env python3
"""Two wireload binaries loading the same TPC-H tables, side by side: before and after a
change (a code change, a build profile), with the machine's drift shared by both.

    bench/.venv/bin/python bench/ab.py --before OLD/wireload --after target/release/wireload \
        --tables all --runs 7 --out bench/RESULTS.md

Each repetition runs every table with `before`, then with `after` (the order alternates
between repetitions); every load is `wireload --threads N -f script.sql` (CREATE TABLE and
COPY ... WITH (FORMAT csv, DELIMITER '|')), timed by the seconds wireload prints, with
memory of 1.5x the file touched and freed right before it (see bench/README.md). Reported:
per table and for the sum, the median seconds and MB/s of each binary and after/before.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # noqa: E402


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="the binary before the change")
    p.add_argument("--after", required=True, help="the binary after the change")
    p.add_argument("--before-name", default="before")
    p.add_argument("--after-name", default="after")
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--data-dir", default=None, help="where <table>.tbl live [/dev/shm/wireload-tpch-sfN]")
    p.add_argument("--wireload", default=None, help="generator for missing files [--after]")
    p.add_argument("--tables", choices=["lineitem", "all"], default="lineitem")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--title", default="Loader before and after")
    p.add_argument("--out", default=None, help="results file (bench/RESULTS.md) whose figures for this run are replaced; the run is recorded in records/ beside it")
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args(argv)
    if args.data_dir is None:
        args.data_dir = f"/dev/shm/wireload-tpch-sf{load.fmt_sf(args.sf)}"
    if args.wireload is None:
        args.wireload = args.after
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    names = load.ALL_TABLES if args.tables == "all" else ["lineitem"]
    load.ensure_data(args, names)
    tables = []
    for name in names:
        path = Path(args.data_dir) / f"{name}.tbl"
        tables.append({"name": name, "path": str(path), "bytes": path.stat().st_size})
    contestants = [(args.before_name, args.before), (args.after_name, args.after)]
    seconds: dict[str, dict[str, list[float]]] = {c: {t["name"]: [] for t in tables} for c, _ in contestants}
    started = dt.datetime.now()
    with tempfile.TemporaryDirectory(prefix="wireload-ab-") as work:
        for rep in range(args.runs):
            order = contestants if rep % 2 == 0 else contestants[::-1]
            for name, binary in order:
                for r in load.run_wireload(binary, args.threads, tables, work, args.timeout):
                    seconds[name][r["table"]].append(r["seconds"])
            print(f"repetition {rep + 1}/{args.runs} done", file=sys.stderr)
    section = report(args, argv, tables, contestants, seconds, started)
    print(section)
    if args.out:
        key = f"ab {args.before_name} {args.after_name} {args.tables} sf={load.fmt_sf(args.sf)}"
        print(f"wrote {load.record(key, section, results=args.out)}", file=sys.stderr)
    return 0


def report(args, argv, tables, contestants, seconds, started) -> str:
    info = load.machine_info()
    (b, _), (a, _) = contestants
    lines = [
        f"## {args.title} ({started.date()})",
        "",
        f"- Command: `bench/ab.py {' '.join(argv)}` (commit {load.git_commit()}), {started.isoformat(timespec='seconds')}",
        f"- Machine: {info.get('cpu')}, {info.get('cores')} cores, {info.get('memory')}, kernel {info.get('kernel')}",
        f"- {b}: `{contestants[0][1]}` ({load.wireload_version(contestants[0][1])}); "
        f"{a}: `{contestants[1][1]}` ({load.wireload_version(contestants[1][1])})",
        f"- TPC-H SF{load.fmt_sf(args.sf)}, {args.threads} threads, {args.runs} interleaved repetitions, medians",
        "",
        f"| table | MB | {b} s | {b} MB/s | {a} s | {a} MB/s | {a} / {b} speed |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    totals = {b: [0.0] * args.runs, a: [0.0] * args.runs}
    for t in tables:
        mb = t["bytes"] / 1e6
        med = {c: statistics.median(seconds[c][t["name"]]) for c in (b, a)}
        for c in (b, a):
            for i, s in enumerate(seconds[c][t["name"]]):
                totals[c][i] += s
        rate = {c: mb / med[c] if med[c] > 0 else float("nan") for c in (b, a)}
        ratio = med[b] / med[a] if med[a] > 0 else float("nan")
        lines.append(
            f"| {t['name']} | {mb:.1f} | {med[b]:.3f} | {rate[b]:.0f} | {med[a]:.3f} | {rate[a]:.0f} | {ratio:.2f}x |"
        )
    if len(tables) > 1:
        mb = sum(t["bytes"] for t in tables) / 1e6
        med = {c: statistics.median(totals[c]) for c in (b, a)}
        lines.append(
            f"| **all** | {mb:.1f} | {med[b]:.3f} | {mb / med[b]:.0f} | {med[a]:.3f} | {mb / med[a]:.0f} | "
            f"{med[b] / med[a]:.2f}x |"
        )
    lines.append("")
    lines.append("<details><summary>every repetition (seconds)</summary>")
    lines.append("")
    for c in (b, a):
        for t in tables:
            xs = ", ".join(f"{x:.4f}" for x in seconds[c][t["name"]])
            lines.append(f"- {c} {t['name']}: {xs}")
    lines.append("")
    lines.append("</details>")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
