#!/usr/bin/env python3
"""Do transparent huge pages help the load? Loads lineitem with wireload as is and with
glibc's THP tunables (`glibc.malloc.hugetlb=1`: malloc madvises its heaps with
MADV_HUGEPAGE; `glibc.malloc.mmap_threshold=32 MiB`: partition buffers come from those
heaps instead of their own 4 KiB-page mappings), interleaved, and records
the run (bench/record.py). A measurement, not a test.

    bench/.venv/bin/python bench/hugepages.py --wireload target/rel/release/wireload
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load  # noqa: E402

TUNABLES = "glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--wireload", default="target/release/wireload")
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default="bench/RESULTS.md")
    args = p.parse_args(argv)
    path = Path(f"/dev/shm/wireload-tpch-sf{load.fmt_sf(args.sf)}/lineitem.tbl")
    table = {"name": "lineitem", "path": str(path), "bytes": path.stat().st_size}
    mb = table["bytes"] / 1e6
    started = dt.datetime.now(dt.timezone.utc)
    before = load.loadavg()
    seconds: dict[str, list[float]] = {"4 KiB pages (default)": [], "THP tunables": []}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(args.runs):
            for name in seconds:
                if name == "THP tunables":
                    os.environ["GLIBC_TUNABLES"] = TUNABLES
                else:
                    os.environ.pop("GLIBC_TUNABLES", None)
                s = load.run_wireload(args.wireload, args.threads, [table], workdir, 600)[0]["seconds"]
                seconds[name].append(s)
        os.environ.pop("GLIBC_TUNABLES", None)
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
        thp = f.read().strip()
    info = load.machine_info()
    lines = [
        f"## Huge pages for partition buffers? lineitem SF{load.fmt_sf(args.sf)} ({started.date()})",
        "",
        f"- Machine: {info.get('cpu', '?')}, {info.get('cores', '?')} CPUs, {info.get('memory', '?')};"
        f" THP `{thp}`; load average {before} before, {load.loadavg()} after",
        f"- Command: `bench/hugepages.py {' '.join(argv)}` (commit {load.git_commit()}), {started.isoformat(timespec='seconds')}",
        f"- `wireload --threads {args.threads}` loading {path} ({mb:.1f} MB), {args.runs} interleaved repetitions;"
        f" THP tunables: `GLIBC_TUNABLES={TUNABLES}`",
        "",
        "| allocation | MB/s median | MB/s min–max |",
        "| --- | ---: | ---: |",
    ]
    for name, xs in seconds.items():
        rates = [mb / s for s in xs]
        lines.append(f"| {name} | {statistics.median(rates):.0f} | {min(rates):.0f}–{max(rates):.0f} |")
    lines.append("")
    path = load.record(f"hugepages sf={load.fmt_sf(args.sf)}", "\n".join(lines) + "\n", results=args.out)
    print(f"wrote {path}", file=sys.stderr)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
