#!/usr/bin/env python3
"""Where a load's CPU time goes, per storage: the Shared Loading paper's Figure 4 on wireload.

Loads one CSV file (TPC-H lineitem by default) into a plain, an `auto` and a `dictionary`
table under `perf record` (cpu-clock samples at 999 Hz with DWARF call stacks: no hardware
counters are needed, so it works in VMs), then gives every sample to the first load step
found on its stack, walking from the caller's end:

- parse and deserialize: `wireload_csv`, `wireload_load::parse`, chunking;
- sort step: the fragment dictionaries (`dictionary::encode_fragment`, or `source` in the
  merge, with their hash tables and sorts);
- dictionary merge and re-encode: the rest of `wireload_storage::dictionary` (the k-way
  merge, old-to-new code maps, re-encoding existing and incoming codes);
- publish: the rest of the append/publish stage (`wireload_load::publish`, `append`,
  `dictionaries` bookkeeping, index merges, the version swap);
- other: process start, catalog, the query that follows the load.

Needs a wireload binary with symbols (the release profile strips them):
`cargo build --profile profiling -p wireload` builds `target/profiling/wireload`.

    bench/.venv/bin/python bench/costsplit.py --wireload target/profiling/wireload \
        --data /dev/shm/wl-sf1 --out bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import (  # noqa: E402
    TPCH_SCHEMA,
    command_line,
    git_commit,
    loadavg,
    machine_info,
)
from record import record  # noqa: E402

STORAGES = ["plain", "auto", "dictionary"]
STEPS = ["parse and deserialize", "sort step", "dictionary merge and re-encode", "publish",
         "other"]
FREQUENCY = 999

# the loader benchmark's TPC-H lineitem definition
LINEITEM = ", ".join(f"{name} {typ}" for name, typ in TPCH_SCHEMA["lineitem"])

SORT = re.compile(r"dictionary::(source|encode_fragment|encode_keys|encode_dense|encode_hashed|"
                  r"encode_strings|assign_ids|sort_distinct|radix_sort|KeyTable|StrTable|"
                  r"hash_bytes|.*as wireload_storage::dictionary::Kind>::encode)")
DICTIONARY = re.compile(r"wireload_storage::dictionary::")
PARSE = re.compile(r"wireload_csv::|wireload_types::builder|wireload_load::parse|wireload_load::task|"
                   r"wireload_load::partition|chunk_start_states|wireload_load::source")
PUBLISH = re.compile(r"wireload_load::(publish|append|dictionaries|merge|indexing|compact)|"
                     r"wireload_index::|wireload_storage::")
LOADED = re.compile(r"loaded (\d+) rows into \S+, ([0-9.]+) MB in ([0-9.]+) s")


def step_of(frames: list[str]) -> str:
    """The step a sample's stack (leaf first) belongs to."""
    if any(SORT.search(f) for f in frames):
        return "sort step"
    if any(DICTIONARY.search(f) for f in frames):
        return "dictionary merge and re-encode"
    if any(PARSE.search(f) for f in frames):
        return "parse and deserialize"
    if any(PUBLISH.search(f) for f in frames):
        return "publish"
    return "other"


def profile(binary: str, data: Path, storage: str, threads: int, work: Path) -> tuple[Counter, float]:
    """Samples per step of one load into a `storage` table, and the load's seconds."""
    out = work / f"costsplit-{storage}.data"
    cmd = [
        "perf", "record", "-q", "-F", str(FREQUENCY), "--call-graph", "dwarf,32768",
        "-o", str(out), "--", binary, "--threads", str(threads), "sql",
        "--table", f"lineitem={data / 'lineitem.tbl'}", "--schema", LINEITEM,
        "--delimiter", "|", "--compression", storage, "SELECT count(*) FROM lineitem",
    ]
    run = subprocess.run(cmd, check=True, capture_output=True, text=True)
    m = LOADED.search(run.stderr)
    if not m:
        raise SystemExit(f"no load report in: {run.stderr[-500:]}")
    script = subprocess.run(
        ["perf", "script", "--no-inline", "-i", str(out), "-F", "ip,sym"],
        check=True, capture_output=True, text=True,
    ).stdout
    counts: Counter = Counter()
    for sample in script.split("\n\n"):
        frames = [line.strip() for line in sample.splitlines() if line.strip()]
        if frames:
            counts[step_of(frames)] += 1
    out.unlink()
    return counts, float(m.group(3))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wireload", default="target/profiling/wireload",
                    help="a wireload binary with symbols")
    ap.add_argument("--data", type=Path, required=True, help="directory with lineitem.tbl")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("/dev/shm"))
    ap.add_argument("--out", type=Path, help="results file (bench/RESULTS.md) whose figures for this run are replaced; the run is recorded in records/ beside it")
    args = ap.parse_args(argv)

    started = dt.datetime.now(dt.timezone.utc)
    before = loadavg()
    results = {}
    for storage in STORAGES:
        results[storage] = profile(args.wireload, args.data, storage, args.threads, args.work)
        counts, seconds = results[storage]
        print(f"{storage}: {seconds:.3f} s, {dict(counts)}", file=sys.stderr)
    info = machine_info()
    size = (args.data / "lineitem.tbl").stat().st_size
    lines = []
    add = lines.append
    add(f"## Cost split of a load, per storage: TPC-H SF1 lineitem ({started:%Y-%m-%d})\n")
    add(f"- Machine: {info.get('cpu')}, {info.get('cores')} CPUs"
        + (f" ({info['virt']} guest)" if "virt" in info else ""))
    add(f"- Run: {started:%Y-%m-%dT%H:%M:%S} UTC; load average {before} before, {loadavg()} after")
    add(f"- Command: `{command_line(argv, __file__)}` (commit {git_commit()})")
    add(f"- Data: {args.data / 'lineitem.tbl'}, {size / 1e6:.1f} MB, no keys; {args.threads} "
        f"threads; one load per storage under `perf record -F {FREQUENCY}` (cpu-clock samples "
        "with DWARF stacks, each sample given to the load step on its stack; see the "
        "script). CPU seconds are samples / frequency, summed over the threads; the load's "
        "wall seconds are its own report (under the profiler)\n")
    add("| step (CPU s, share) | " + " | ".join(STORAGES) + " |")
    add("| --- |" + " ---: |" * len(STORAGES))
    for step in STEPS:
        cells = []
        for s in STORAGES:
            counts, _ = results[s]
            total = sum(counts.values())
            cells.append(f"{counts[step] / FREQUENCY:.2f} ({100 * counts[step] / total:.0f}%)")
        add(f"| {step} | " + " | ".join(cells) + " |")
    add("| **all samples** | " + " | ".join(
        f"{sum(results[s][0].values()) / FREQUENCY:.2f}" for s in STORAGES) + " |")
    add("| load, wall (s) | " + " | ".join(f"{results[s][1]:.3f}" for s in STORAGES) + " |")
    add("")
    section = "\n".join(lines) + "\n"
    print(section)
    if args.out:
        print(f"wrote {record('costsplit-sf1', section, results=args.out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
