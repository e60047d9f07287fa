#!/usr/bin/env python3
"""A wide table like the Shared Loading paper's "warehouse" data: ~150 columns, mostly
low-cardinality strings (status codes, country and product names, flags), a few keys,
amounts and dates. Writes `wide.csv` (no header) and `wide.columns` (the column list for
`wireload sql --schema` or a CREATE TABLE) into a directory.

    bench/.venv/bin/python bench/widegen.py --rows 200000 --out /dev/shm/wl-wide

Deterministic (a fixed seed); cardinalities per column are drawn from 2 to 5,000, a few
columns are unique (keys, free text), so `auto` storage has both kinds to decide.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

STRING_COLUMNS = 120
INT_COLUMNS = 15
DECIMAL_COLUMNS = 8
DATE_COLUMNS = 5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)

    words = ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL",
             "INDIA", "JULIETT", "KILO", "LIMA", "MIKE", "NOVEMBER", "OSCAR", "PAPA"]
    columns: list[tuple[str, str, list[str] | None]] = [("id", "BIGINT", None)]
    for i in range(STRING_COLUMNS):
        card = rng.choice([2, 3, 5, 8, 12, 20, 50, 100, 250, 1000, 5000])
        values = [f"{rng.choice(words)}_{i}_{k}" for k in range(card)]
        columns.append((f"s{i:03}", "VARCHAR(40)", values))
    for i in range(INT_COLUMNS):
        card = rng.choice([10, 100, 1000, 100_000])
        columns.append((f"n{i:02}", "INTEGER", [str(rng.randrange(-10**6, 10**6)) for _ in range(card)]))
    for i in range(DECIMAL_COLUMNS):
        card = rng.choice([20, 500, 50_000])
        columns.append((f"amount{i}", "DECIMAL(12,2)",
                        [f"{rng.randrange(0, 10**8) / 100:.2f}" for _ in range(card)]))
    for i in range(DATE_COLUMNS):
        columns.append((f"day{i}", "DATE",
                        [f"20{rng.randrange(10, 26)}-{rng.randrange(1, 13):02}-{rng.randrange(1, 29):02}"
                         for _ in range(rng.choice([30, 365, 3000]))]))
    columns.append(("note", "TEXT", None))
    (args.out / "wide.columns").write_text(
        ", ".join(f"{name} {ty}" for name, ty, _ in columns) + "\n")

    # skewed picks (a few values common, as in real codes), NULLs in 2% of string cells
    with open(args.out / "wide.csv", "w") as f:
        for r in range(args.rows):
            cells = []
            for name, _, values in columns:
                if values is None:
                    cells.append(str(r) if name == "id" else f"note {r * 7919 % 1000003} {r}")
                elif values[0][0].isalpha() and rng.random() < 0.02:
                    cells.append("")
                else:
                    cells.append(values[min(int(rng.paretovariate(1.2)) - 1, len(values) - 1)])
            f.write(",".join(cells) + "\n")
    print(f"{args.rows} rows, {len(columns)} columns: {args.out / 'wide.csv'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
