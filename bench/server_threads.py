#!/usr/bin/env python3
"""Samples which threads of a running `wireload serve` are runnable, and reports the share of
the CPU the query threads can expect from that.

    # beside a `wireload-bench shared ... --queries` run: samples until the server exits
    python3 bench/server_threads.py sample --out threads.json
    # per half second: the average runnable threads of each name
    python3 bench/server_threads.py timeline threads.json
    # over spans of the samples (seconds from the first): the query threads' expected share
    python3 bench/server_threads.py share threads.json --span 27.5 35.0 SL_A --span 35 47 PIPE

Every 10 ms the sampler reads /proc/PID/task/*/stat and counts the threads in state R by
name (trailing digits and dashes dropped: `wireload-merge-3` counts as `wireload-merge`).
The share assumes the kernel's fair scheduler gives every runnable thread of equal nice the
same slice of a one-CPU server: while the query thread is runnable beside L runnable load
threads, it gets 1 / (1 + L). `share` prints that share's mean over a span and its worst
mean over any window of `--window` seconds (a batch of queries lasts about that long), the
window that sets the batches' p99.9.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import time


def find(pattern, wait_s=60.0):
    """The pid of the first process whose command line matches `pattern` (pgrep -f)."""
    deadline = time.time() + wait_s
    while time.time() < deadline:
        out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
        pids = [p for p in out.split() if int(p) != os.getpid()]
        if pids:
            return int(pids[0])
        time.sleep(0.1)
    raise SystemExit(f"no process matches {pattern!r}")


def runnable(pid):
    """Runnable threads of `pid` by name; None once the process is gone."""
    counts = collections.Counter()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if stat[stat.rindex(")") + 2] == "R":
            counts[name.rstrip("0123456789-")] += 1
    return counts


def sample(args):
    pid = args.pid or find(args.match)
    samples, t0 = [], time.time()
    while True:
        counts = runnable(pid)
        if counts is None:
            break
        samples.append((round(time.time() - t0, 3), dict(counts)))
        time.sleep(args.every)
    with open(args.out, "w") as f:
        json.dump(samples, f)
    print(f"{len(samples)} samples of pid {pid} in {args.out}")


def timeline(args):
    with open(args.samples) as f:
        samples = json.load(f)
    sums, n = collections.defaultdict(collections.Counter), collections.Counter()
    for t, counts in samples:
        k = int(t / args.step)
        n[k] += 1
        sums[k].update(counts)
    for k in sorted(n):
        row = {name: round(v / n[k], 2) for name, v in sorted(sums[k].items())}
        print(f"{k * args.step:7.1f} {row}")


def share(args):
    with open(args.samples) as f:
        samples = json.load(f)
    for lo, hi, label in args.span:
        lo, hi = float(lo), float(hi)
        shares = []
        for t, counts in samples:
            if lo <= t < hi and counts.get(args.query_threads):
                load = sum(v for name, v in counts.items() if name != args.query_threads)
                shares.append((t, 1 / (1 + load)))
        if not shares:
            print(f"{label}: no sample with a runnable query thread")
            continue
        windows = []
        for t, _ in shares:
            if shares[-1][0] - t < args.window:
                break
            windows.append((statistics.mean(s for u, s in shares if t <= u < t + args.window), t))
        mean = statistics.mean(s for _, s in shares)
        line = f"{label}: {len(shares)} samples, mean share {mean:.2f}"
        if windows:
            worst, at = min(windows)
            line += f", worst {args.window} s window {worst:.2f} at {at - lo:.1f} s into the span"
        print(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="sample a server's threads until it exits")
    s.add_argument("--pid", type=int, help="the server's pid (default: found by --match)")
    s.add_argument("--match", default="wireload.* serve", help="pgrep -f pattern")
    s.add_argument("--every", type=float, default=0.01, help="seconds between samples")
    s.add_argument("--out", required=True)
    s.set_defaults(run=sample)
    t = sub.add_parser("timeline", help="average runnable threads per name and step")
    t.add_argument("samples")
    t.add_argument("--step", type=float, default=0.5, help="seconds per line")
    t.set_defaults(run=timeline)
    h = sub.add_parser("share", help="the query threads' expected CPU share over spans")
    h.add_argument("samples")
    h.add_argument("--span", nargs=3, action="append", required=True,
                   metavar=("FROM", "TO", "LABEL"), help="seconds from the first sample")
    h.add_argument("--window", type=float, default=0.7, help="seconds of the worst window")
    h.add_argument("--query-threads", default="tokio-rt-worker",
                   help="the name of the threads that run the queries")
    h.set_defaults(run=share)
    args = ap.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
