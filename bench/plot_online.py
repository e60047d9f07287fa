"""Plots `wireload-bench online --json` output: transactions per second over time, one panel
per load (1 and 2 loading threads), the load's span shaded (the Instant Loading paper's
Figure 14 on this machine).

    wireload-bench online --data DIR --json > online.json
    bench/.venv/bin/python bench/plot_online.py online.json bench/online-tps.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot_online.py BENCH.json OUT.png")
    doc = json.load(open(sys.argv[1]))
    runs = doc["runs"]
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 2.6 * len(runs)), sharex=True, squeeze=False)
    for ax, run in zip(axes[:, 0], runs):
        step = run["bucket_s"]
        tps = run["tps_timeline"][:-1]  # the last bucket is partial
        times = [i * step for i in range(len(tps))]
        ax.step(times, [v / 1000 for v in tps], where="post", color="tab:blue", linewidth=1)
        ax.axvspan(run["load_start_s"], run["load_end_s"], color="tab:orange", alpha=0.2,
                   label=f"load: {run['rows']:,} rows in {run['load_s']:.2f} s, "
                         f"merge {run['merge_tx_ms']:.1f} ms")
        ax.set_ylabel("k transactions/s")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{doc['transaction']} by primary key, one thread; load on "
                     f"{run['load_threads']} thread(s), schedule {run['schedule']}: "
                     f"{run['during_over_idle'] * 100:.0f}% of idle during the load",
                     fontsize=9)
        ax.legend(loc="lower left", fontsize=8)
    axes[-1, 0].set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


main()
