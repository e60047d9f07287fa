"""Expected answers of the TPC-H queries, computed with DuckDB.

Creates the 8 tables with wireload's DDL (crates/wireload-tpch/sql/schema.sql, found
beside the queries), reads the `.tbl` files that `wireload gen tpch` wrote, runs every
`qN.sql` of the query directory and writes each result as `qN.csv` into the output
directory: a header row of the column names, then one row per result row, values as
DuckDB returns them (decimals as exact decimal text, doubles in Python's shortest
round-trip form, dates as YYYY-MM-DD, NULL as an empty field).

    bench/.venv/bin/python bench/tpch_answers.py --data DIR --queries crates/wireload-tpch/sql --out DIR2

crates/wireload/tests/tpch-answers-sf0.01/ was made this way from
`wireload gen tpch --sf 0.01 --out DIR`.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import re
import sys
import time
from pathlib import Path

import duckdb

TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]

# Name of the extra column that takes the empty field after the trailing '|' of a .tbl line.
TRAILING = "tbl_trailing_field"


def sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def query_files(directory: Path) -> list[tuple[int, Path]]:
    """The qN.sql files of `directory`, by N."""
    found = []
    for path in directory.glob("q*.sql"):
        m = re.fullmatch(r"q(\d+)\.sql", path.name)
        if m:
            found.append((int(m.group(1)), path))
    return sorted(found)


def text(value: object) -> str:
    """A result value as answer-file text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)


def load(con: duckdb.DuckDBPyConnection, schema_sql: str, data: Path) -> None:
    con.execute(schema_sql)
    for table in TABLES:
        path = data / f"{table}.tbl"
        cols = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = ? ORDER BY ordinal_position",
            [table],
        ).fetchall()
        columns = ", ".join(f"{sql_string(name)}: {sql_string(typ)}" for name, typ in cols)
        names = ", ".join(name for name, _ in cols)
        con.execute(
            f"INSERT INTO {table} SELECT {names} FROM read_csv({sql_string(str(path))}, "
            f"delim='|', header=false, quote='\"', "
            f"columns={{{columns}, {sql_string(TRAILING)}: 'VARCHAR'}})"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="directory of the 8 .tbl files")
    ap.add_argument("--queries", required=True, type=Path, help="directory of qN.sql (and schema.sql)")
    ap.add_argument("--out", required=True, type=Path, help="directory to write qN.csv into")
    ap.add_argument("--schema", type=Path, help="DDL to run (default: QUERIES/schema.sql)")
    ap.add_argument("--threads", type=int, help="DuckDB threads (default: DuckDB's)")
    args = ap.parse_args()

    schema = args.schema or args.queries / "schema.sql"
    queries = query_files(args.queries)
    if not queries:
        print(f"no qN.sql files in {args.queries}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)

    con = duckdb.connect(":memory:")
    if args.threads:
        con.execute(f"SET threads={args.threads}")
    t0 = time.perf_counter()
    load(con, schema.read_text(), args.data)
    print(f"loaded {args.data} in {time.perf_counter() - t0:.2f} s", file=sys.stderr)

    for number, path in queries:
        t0 = time.perf_counter()
        cursor = con.execute(path.read_text())
        header = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
        with open(args.out / f"q{number}.csv", "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            for row in rows:
                w.writerow([text(v) for v in row])
        print(
            f"q{number}: {len(rows)} rows in {time.perf_counter() - t0:.3f} s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
