#!/usr/bin/env python3
"""Plots of `wireload-bench shared` cells: throughput, bytes sent and CPU seconds (client and
server) per mode, one group of bars per cell.

    bench/.venv/bin/python bench/plot_shared.py CELL.json... --out bench/shared

writes `<out>-throughput.png`, `<out>-bytes.png` and `<out>-cpu.png`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAMES = {"all": "SL_A", "size": "SL_S", "none": "SL_N", "auto": "auto", "pipe": "PIPE", "seq": "SEQ"}


def label(mode: str) -> str:
    base, _, lz4 = mode.partition("+")
    return NAMES.get(base, base) + ("+LZ4" if lz4 else "")


def cell_name(doc: dict) -> str:
    return f"{doc['table']} {doc['bandwidth']}" + (" +queries" if doc["queries"] else "")


def bars(docs: list[dict], value, ylabel: str, out: Path) -> None:
    modes = []
    for d in docs:
        for m in d["modes"]:
            if m not in modes:
                modes.append(m)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(docs) * len(modes) / 4), 4))
    width = 0.8 / len(modes)
    for i, m in enumerate(modes):
        xs, ys = [], []
        for k, d in enumerate(docs):
            if m in d["modes"]:
                xs.append(k + i * width)
                ys.append(value(d, d["modes"][m]))
        ax.bar(xs, ys, width, label=label(m))
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(docs))])
    ax.set_xticklabels([cell_name(d) for d in docs])
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="small", ncol=4)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cells", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    docs = [json.loads(p.read_text()) for p in args.cells]
    out = str(args.out)
    bars(docs, lambda d, m: m["throughput_mb_s"], "throughput (MB of CSV per s)", Path(out + "-throughput.png"))
    bars(docs, lambda d, m: 100 * m["bytes_sent_of_file"], "bytes sent (% of the file)", Path(out + "-bytes.png"))
    bars(
        docs,
        lambda d, m: 1e9 * m["server_cpu_s"] / d["file_bytes"],
        "server CPU s per GB loaded (its process)",
        Path(out + "-cpu.png"),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
