"""Runs a JSON list of SQL statements in DuckDB (in memory) and prints, for each, a JSON line:
{"ok": bool, "error": str, "count": int|null, "returning": [[...]]|null, "table": [[...]]}.

`table` is the result of the snapshot query (argv[2]) after the statement; values are text
(NULL as null), so the Rust side compares them with wireload's without type conversions.
A statement with RETURNING reports its rows; one without, its affected-row count.
"""
import json
import sys

import duckdb


def text(v):
    return None if v is None else str(v)


def main():
    statements = json.load(open(sys.argv[1]))
    snapshot = sys.argv[2]
    con = duckdb.connect()
    for sql in statements:
        out = {"ok": True, "error": "", "count": None, "returning": None}
        try:
            rows = con.execute(sql).fetchall()
            if "RETURNING" in sql.upper():
                out["returning"] = [[text(v) for v in r] for r in rows]
            elif rows and len(rows[0]) == 1 and isinstance(rows[0][0], int):
                out["count"] = rows[0][0]
        except duckdb.Error as e:
            out["ok"] = False
            out["error"] = str(e).splitlines()[0]
        try:
            out["table"] = [[text(v) for v in r] for r in con.execute(snapshot).fetchall()]
        except duckdb.Error:
            out["table"] = None
        print(json.dumps(out), flush=True)


main()
