#!/usr/bin/env python3
"""Builds against each other on issue 18's zstd bar: `zstd -dc FILE` and a load of FILE by
each wireload binary, interleaved (the binaries' order alternates by round), a buffer of
twice the decoded input's size touched and freed before every timed run (`--touch`; see
`bench/compressed.py`).

    python3 bench/compressed_ab.py --runs 7 OLD_BINARY NEW_BINARY ...

The load is `COPY lineitem FROM FILE` into the typed lineitem table at 2 threads (the
loader's own figure, as `bench/compressed.py` takes it); the ratio is zstd -dc's time over
the load's (>= 0.8 meets the bar).
"""

import argparse
import os
import re
import statistics
import subprocess
import tempfile
import time

from compressed import LINEITEM, touch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--file", default="/dev/shm/wl-gz/lineitem.tbl.zst")
    ap.add_argument("--size", type=int, default=759_863_287, help="decoded bytes (to touch)")
    ap.add_argument("--touch", type=float, default=2.0,
                    help="the buffer touched before every timed run, in decoded sizes")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(f"CREATE TABLE lineitem ({LINEITEM});\n"
                f"COPY lineitem FROM '{args.file}' WITH (FORMAT csv, DELIMITER '|');\n")
        script = f.name
    loads = {b: [] for b in args.binaries}
    dec = []
    try:
        for r in range(args.runs):
            touch(int(args.size * args.touch))
            t0 = time.perf_counter()
            subprocess.run(["zstd", "-q", "-dc", args.file], stdout=subprocess.DEVNULL, check=True)
            dec.append(time.perf_counter() - t0)
            for b in args.binaries if r % 2 == 0 else args.binaries[::-1]:
                touch(int(args.size * args.touch))
                out = subprocess.run([b, "--threads", str(args.threads), "-f", script],
                                     capture_output=True, text=True, check=True).stderr
                loads[b].append(float(re.search(r"MB in ([\d.]+) s", out).group(1)))
    finally:
        os.unlink(script)
    d = statistics.median(dec)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} touch {args.touch} x decoded; zstd -dc median {d:.3f} "
          f"({', '.join(f'{x:.2f}' for x in dec)})")
    for b in args.binaries:
        m = statistics.median(loads[b])
        print(f"{b}: load median {m:.3f}, ratio {d / m:.3f} "
              f"({', '.join(f'{x:.2f}' for x in loads[b])})")


if __name__ == "__main__":
    main()
