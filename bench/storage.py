#!/usr/bin/env python3
"""Dictionary storage against plain storage: TPC-H SF1 into plain, dictionary and auto tables.

For each storage (`wireload-bench tpch --compression plain|dictionary|auto`): the load of
the 8 tables (and of lineitem alone), memory per table after the load (from the tables'
versions, as `wireload_tables` reports it: column arrays, dictionaries once per partition,
indexes), how each lineitem column was stored, and the 22 queries' times. Repetitions are
interleaved (rep 1 of every storage, then rep 2, ...), each in a fresh process, with a
buffer the size of the load touched and freed before each; medians are quoted.

The issue's bars: `auto` holds lineitem in <= 60% of plain's memory (column data; the
primary-key index is the same in both and reported apart), loads lineitem at >= 60% of
plain's throughput, and runs the 22 queries no slower in total than plain.

    bench/.venv/bin/python bench/widegen.py --rows 200000 --out /dev/shm/wl-wide
    bench/.venv/bin/python bench/storage.py --data /dev/shm/wl-sf1 --wide /dev/shm/wl-wide \
        --runs 3 --out bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (  # noqa: E402
    bench_binary,
    command_line,
    git_commit,
    loadavg,
    machine_info,
    touch_memory,
    wireload_version,
)
from record import record  # noqa: E402

STORAGES = ["plain", "dictionary", "auto"]


def run_once(binary: str, data: Path, work: Path, storage: str, threads: int) -> dict:
    """One `wireload-bench tpch` run on `storage` with the `wireload-bench` beside the
    wireload binary `binary`, as its JSON document."""
    cmd = [
        bench_binary(binary), "--threads", str(threads), "tpch", "--data", str(data),
        "--runs", "1", "--json", "--work", str(work), "--compression", storage,
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["runs"][0]


LOADED = re.compile(r"loaded (\d+) rows into \S+, ([0-9.]+) MB in ([0-9.]+) s \(.*merge ([0-9.]+) s")


def run_wide(binary: str, wide: Path, storage: str, threads: int) -> dict:
    """Loads the wide table on `storage` with `wireload sql`: seconds, merge seconds, bytes."""
    columns = (wide / "wide.columns").read_text().strip()
    cmd = [
        binary, "--threads", str(threads), "sql", "--table", f"wide={wide / 'wide.csv'}",
        "--schema", columns, "--compression", storage, "--format", "csv",
        "SELECT bytes - index_bytes AS data, (SELECT count(*) FROM wireload_columns "
        "WHERE storage = 'dictionary') AS dictionary_columns FROM wireload_tables",
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    m = LOADED.search(out.stderr)
    if not m:
        raise SystemExit(f"no load report in: {out.stderr[-500:]}")
    data, dictionary_columns = out.stdout.strip().splitlines()[1].split(",")
    return {"seconds": float(m.group(3)), "merge_seconds": float(m.group(4)),
            "csv_mb": float(m.group(2)), "rows": int(m.group(1)), "bytes": int(data),
            "dictionary_columns": int(dictionary_columns)}


def mb(n: float) -> str:
    return f"{n / 1e6:.1f}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="directory of the 8 .tbl files")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--wireload", default="target/release/wireload")
    ap.add_argument("--work", type=Path, default=Path("/dev/shm/wl-storage-work"))
    ap.add_argument("--out", type=Path, help="results file (bench/RESULTS.md) whose figures for this run are replaced; the run is recorded in records/ beside it")
    ap.add_argument("--raw", type=Path, help="also write every run's figures as JSON here")
    ap.add_argument("--wide", type=Path, help="also load the wide table of bench/widegen.py in DIR")
    args = ap.parse_args(argv)

    csv_bytes = sum(p.stat().st_size for p in args.data.glob("*.tbl"))
    started = dt.datetime.now(dt.timezone.utc)
    before = loadavg()
    runs: dict[str, list[dict]] = {s: [] for s in STORAGES}
    wide: dict[str, list[dict]] = {s: [] for s in STORAGES}
    for rep in range(1, args.runs + 1):
        for storage in STORAGES:
            if args.wide:
                touch_memory(2 * (args.wide / "wide.csv").stat().st_size)
                wide[storage].append(run_wide(args.wireload, args.wide, storage, args.threads))
            touch_memory(2 * csv_bytes)
            r = run_once(args.wireload, args.data, args.work, storage, args.threads)
            runs[storage].append(r)
            phases = {p["phase"]: p["seconds"] for p in r["phases"]}
            print(
                f"rep {rep} {storage:<10} load {phases['load']:.3f} s, "
                f"queries {phases['queries']:.3f} s",
                file=sys.stderr,
            )
    ended = dt.datetime.now(dt.timezone.utc)
    if args.raw:
        args.raw.write_text(json.dumps({"runs": runs, "wide": wide}))

    def med(storage: str, f) -> float:
        return statistics.median(f(r) for r in runs[storage])

    def phase(name: str):
        return lambda r: next(p["seconds"] for p in r["phases"] if p["phase"] == name)

    def table_load(table: str):
        return lambda r: next(t["seconds"] for t in r["tables"] if t["table"] == table)

    def table_bytes(table: str, index: bool = False):
        def f(r):
            m = next(m for m in r["memory"] if m["table"] == table)
            return m["index_bytes"] if index else m["bytes"] - m["index_bytes"]

        return f

    first = runs["plain"][0]
    tables = [m["table"] for m in first["memory"]]
    lineitem_csv = next(t["bytes"] for t in first["tables"] if t["table"] == "lineitem")
    info = machine_info()
    lines = []
    add = lines.append
    add(f"## Dictionary storage: TPC-H SF1 into plain, dictionary and auto tables ({started:%Y-%m-%d})\n")
    add(f"- Machine: {info.get('cpu')}, {info.get('cores')} CPUs"
        + (f" ({info['virt']} guest)" if "virt" in info else ""))
    add(f"- Run: {started:%Y-%m-%dT%H:%M:%S} to {ended:%H:%M:%S} UTC; load average {before} before, {loadavg()} after")
    add(f"- Command: `{command_line(argv, __file__)}` (commit {git_commit()}; {wireload_version(args.wireload)})")
    add(f"- Data: {args.data}, 8 tables, {mb(csv_bytes)} MB of CSV; {args.threads} threads; "
        f"primary keys declared; {args.runs} interleaved repetitions, each a fresh process; medians")
    add("- Each repetition is `wireload-bench tpch --runs 1 --compression S`: load, 22 queries, "
        "unload, reload; memory is read right after the load. The merge step of a load "
        "(after the chunks are parsed and deserialized) places the chunks, merges the "
        "primary-key index and, for dictionary columns, sorts the fragment dictionaries, "
        "merges them per partition and encodes the codes: its time against the whole load's "
        "is the cost split (parse and deserialize = load - merge step)\n")
    add("### Load and queries (median seconds; ratio to plain)\n")
    add("| | " + " | ".join(STORAGES) + " |")
    add("| --- |" + " ---: |" * len(STORAGES))

    def row(name: str, f, fmt=lambda v: f"{v:.3f}", ratio=True):
        base = med("plain", f)
        cells = []
        for s in STORAGES:
            v = med(s, f)
            cells.append(fmt(v) + (f" ({v / base:.2f}×)" if ratio and s != "plain" and base else ""))
        add(f"| {name} | " + " | ".join(cells) + " |")

    row("load, 8 tables (s)", phase("load"))
    row("load, lineitem (s)", table_load("lineitem"))
    row("  of which the merge step (s)", lambda r: next(
        t["merge_seconds"] for t in r["tables"] if t["table"] == "lineitem"))
    row("lineitem throughput (MB/s)", lambda r: lineitem_csv / 1e6 / table_load("lineitem")(r),
        fmt=lambda v: f"{v:.0f}")
    row("22 queries (s)", phase("queries"))
    row("unload (s)", phase("unload"))
    row("reload (s)", phase("reload"))
    add("")
    add("### Memory after the load (MB: column arrays and dictionaries; ratio to plain)\n")
    add("| table | " + " | ".join(STORAGES) + " | index (all) |")
    add("| --- |" + " ---: |" * (len(STORAGES) + 1))
    for t in tables:
        base = med("plain", table_bytes(t))
        cells = []
        for s in STORAGES:
            v = med(s, table_bytes(t))
            cells.append(mb(v) + (f" ({v / base:.2f}×)" if s != "plain" and base else ""))
        add(f"| {t} | " + " | ".join(cells) + f" | {mb(med('plain', table_bytes(t, True)))} |")
    total = lambda r: sum(m["bytes"] - m["index_bytes"] for m in r["memory"])  # noqa: E731
    base = med("plain", total)
    add("| **all 8** | " + " | ".join(
        mb(med(s, total)) + (f" ({med(s, total) / base:.2f}×)" if s != "plain" else "")
        for s in STORAGES) + " | |")
    add("")
    add("### lineitem columns: storage and MB (first repetition)\n")
    add("| column | " + " | ".join(STORAGES) + " |")
    add("| --- |" + " ---: |" * len(STORAGES))
    cols = [c for c in first["storage"] if c["table"] == "lineitem"]
    for c in cols:
        cells = []
        for s in STORAGES:
            x = next(y for y in runs[s][0]["storage"]
                     if y["table"] == "lineitem" and y["column"] == c["column"])
            cells.append(f"{mb(x['bytes'])} {x['storage']}")
        add(f"| {c['column']} | " + " | ".join(cells) + " |")
    add("")
    add("### Per query (median seconds; ratio to plain)\n")
    add("| query | " + " | ".join(STORAGES) + " |")
    add("| --- |" + " ---: |" * len(STORAGES))
    for i, q in enumerate(first["queries"]):
        row(f"Q{q['query']}", lambda r, i=i: r["queries"][i]["seconds"])
    add("")
    if args.wide:
        w0 = wide["plain"][0]
        ncols = len((args.wide / "wide.columns").read_text().split(","))
        add(f"### The wide table: {w0['rows']} rows, {ncols} columns, {w0['csv_mb']:.1f} MB "
            "(bench/widegen.py; median of the repetitions; ratio to plain)\n")
        add("| | " + " | ".join(STORAGES) + " |")
        add("| --- |" + " ---: |" * len(STORAGES))

        def wrow(name, f, fmt):
            base = statistics.median(f(r) for r in wide["plain"])
            cells = []
            for s in STORAGES:
                v = statistics.median(f(r) for r in wide[s])
                cells.append(fmt(v) + (f" ({v / base:.2f}×)" if s != "plain" and base else ""))
            add(f"| {name} | " + " | ".join(cells) + " |")

        wrow("load (s)", lambda r: r["seconds"], lambda v: f"{v:.3f}")
        wrow("  of which the merge step (s)", lambda r: r["merge_seconds"], lambda v: f"{v:.3f}")
        wrow("throughput (MB/s)", lambda r: r["csv_mb"] / r["seconds"], lambda v: f"{v:.0f}")
        wrow("memory (MB)", lambda r: r["bytes"], mb)
        wrow("dictionary columns", lambda r: r["dictionary_columns"], lambda v: f"{v:.0f}")
        add("")
    li = lambda s: med(s, table_bytes("lineitem"))  # noqa: E731
    tp = lambda s: med(s, lambda r: 1 / table_load("lineitem")(r))  # noqa: E731
    qs = lambda s: med(s, phase("queries"))  # noqa: E731
    verdict = lambda ok: "**met**" if ok else "**not met**"  # noqa: E731
    add("### The bars (auto against plain)\n")
    add(f"- lineitem memory <= 60% of plain: {verdict(li('auto') <= 0.6 * li('plain'))} — "
        f"{mb(li('auto'))} MB of {mb(li('plain'))} MB, {li('auto') / li('plain'):.0%}")
    add(f"- lineitem load throughput >= 60% of plain: {verdict(tp('auto') >= 0.6 * tp('plain'))} — "
        f"{tp('auto') / tp('plain'):.0%}")
    add(f"- 22 queries no slower in total: {verdict(qs('auto') <= qs('plain'))} — "
        f"{qs('auto'):.3f} s against {qs('plain'):.3f} s ({qs('auto') / qs('plain'):.2f}×)\n")
    section = "\n".join(lines)
    print(section)
    if args.out:
        print(f"wrote {record('storage-sf1', section, results=args.out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
