#!/usr/bin/env python3
"""Filters tested on dictionary codes: the 22 TPC-H queries with and without them.

The scan of a dictionary column translates `col op constant`, `BETWEEN` and `IN` filters to
code ranges once per partition and drops failing rows before decoding anything
(crates/wireload-query/src/codes.rs). This compares two builds of wireload on the same
data: `--baseline`, a build without code tests (the recorded run used this commit with the
provider's two calls into `codes` removed, so that nothing else differs), and `--wireload`,
the build with them; each runs `wireload-bench tpch --runs 1` (the one beside it) on `auto`
and `dictionary` storage, and the candidate also on `plain` (the reference of issue 16's
bar). Repetitions are interleaved, each a fresh process with a buffer the size of the load
touched and freed before it; medians are quoted.

    # a baseline: provider.rs without `with_code_filters(filters)` and `codes::pushdown`
    bench/.venv/bin/python bench/codes.py --data /dev/shm/wl-sf1 \
        --baseline /tmp/wl-base/target/release/wireload --runs 5 --out bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (  # noqa: E402
    command_line,
    git_commit,
    loadavg,
    machine_info,
    touch_memory,
    wireload_version,
)
from record import record, summary  # noqa: E402
from storage import run_once  # noqa: E402

# (label, build, storage)
CONTESTANTS = [
    ("auto, without", "baseline", "auto"),
    ("auto, with", "candidate", "auto"),
    ("dictionary, without", "baseline", "dictionary"),
    ("dictionary, with", "candidate", "dictionary"),
    ("plain", "candidate", "plain"),
]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="directory of the 8 .tbl files")
    ap.add_argument("--baseline", required=True, help="a wireload binary without code tests")
    ap.add_argument("--wireload", default="target/release/wireload")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("/dev/shm/wl-storage-work"))
    ap.add_argument("--out", type=Path, help="results file (bench/RESULTS.md) whose figures for this run are replaced; the run is recorded in records/ beside it")
    args = ap.parse_args(argv)

    binaries = {"baseline": args.baseline, "candidate": args.wireload}
    csv_bytes = sum(p.stat().st_size for p in args.data.glob("*.tbl"))
    started = dt.datetime.now(dt.timezone.utc)
    before = loadavg()
    runs: dict[str, list[dict]] = {c[0]: [] for c in CONTESTANTS}
    for rep in range(1, args.runs + 1):
        for label, build, storage in CONTESTANTS:
            touch_memory(2 * csv_bytes)
            r = run_once(binaries[build], args.data, args.work, storage, args.threads)
            runs[label].append(r)
            q = next(p["seconds"] for p in r["phases"] if p["phase"] == "queries")
            print(f"rep {rep} {label:<20} queries {q:.3f} s", file=sys.stderr)
    ended = dt.datetime.now(dt.timezone.utc)

    def med(label: str, f) -> float:
        return statistics.median(f(r) for r in runs[label])

    def total(r: dict) -> float:
        return next(p["seconds"] for p in r["phases"] if p["phase"] == "queries")

    info = machine_info()
    lines = []
    add = lines.append
    add(f"## Filters tested on dictionary codes: TPC-H SF1, 22 queries ({started:%Y-%m-%d})\n")
    add(f"- Machine: {info.get('cpu')}, {info.get('cores')} CPUs"
        + (f" ({info['virt']} guest)" if "virt" in info else ""))
    add(f"- Run: {started:%Y-%m-%dT%H:%M:%S} to {ended:%H:%M:%S} UTC; load average {before} "
        f"before, {loadavg()} after")
    add(f"- Command: `{command_line(argv, __file__)}` (commit {git_commit()}; with: "
        f"{wireload_version(args.wireload)}; without: {wireload_version(args.baseline)})")
    add(f"- Data: {args.data}, {csv_bytes / 1e6:.1f} MB of CSV; {args.threads} threads; "
        f"{args.runs} interleaved repetitions of `wireload-bench tpch --runs 1 --compression S`, "
        "each a fresh process; medians. \"without\" is the build before code tests, \"with\" "
        "the build with them\n")
    labels = [c[0] for c in CONTESTANTS]
    add("| query | " + " | ".join(labels) + " |")
    add("| --- |" + " ---: |" * len(labels))

    def row(name: str, f) -> None:
        cells = []
        for i, label in enumerate(labels):
            v = med(label, f)
            cell = f"{v:.3f}"
            # "with" against "without" on the same storage; plain alone
            if i % 2 == 1 and label != "plain":
                base = med(labels[i - 1], f)
                if base:
                    cell += f" ({v / base:.2f}×)"
            cells.append(cell)
        add(f"| {name} | " + " | ".join(cells) + " |")

    first = runs[labels[0]][0]
    for i, q in enumerate(first["queries"]):
        row(f"Q{q['query']}", lambda r, i=i: r["queries"][i]["seconds"])
    row("**22 queries**", total)
    add("")
    plain = med("plain", total)
    add(f"- 22 queries against plain storage: auto with code tests "
        f"{med('auto, with', total) / plain:.2f}× plain's time, without "
        f"{med('auto, without', total) / plain:.2f}×; dictionary with "
        f"{med('dictionary, with', total) / plain:.2f}×, without "
        f"{med('dictionary, without', total) / plain:.2f}×")
    add("")
    section = "\n".join(lines)
    print(section)
    if args.out:
        brief = summary(section, rows=("**22 queries**",), also=("- 22 queries against plain",))
        path = record("codes-sf1", section, results=args.out, summary_text=brief)
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
