"""The DB-API 2.0 interface: connect, execute, parameters, fetch, transactions, and Arrow
data of other libraries registered as views."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import wireload

from conftest import sql_literal

TYPED = "i BIGINT, f DOUBLE, s VARCHAR, d DATE, ts TIMESTAMP, m DECIMAL(10,2), b BOOLEAN"
ROW = (
    42,
    2.5,
    "it's; a \"string\" -- not SQL",
    dt.date(2024, 2, 29),
    dt.datetime(2024, 3, 1, 12, 34, 56, 789012),
    Decimal("1234.50"),
    True,
)


def test_select_fetchone_and_description(con):
    cur = con.execute("SELECT 1 AS x, 'a' AS y, CAST(NULL AS VARCHAR) AS z")
    assert isinstance(cur, type(con.cursor()))
    assert [d[0] for d in cur.description] == ["x", "y", "z"]
    assert all(len(d) == 7 for d in cur.description)
    assert cur.rowcount == -1
    assert cur.fetchone() == (1, "a", None)
    assert cur.fetchone() is None


def test_description_is_none_without_a_result_set(con):
    cur = con.execute("CREATE TABLE t (a INT)")
    assert cur.description is None


def test_python_values_round_trip_through_qmark_parameters(con):
    con.execute(f"CREATE TABLE t ({TYPED})")
    cur = con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", ROW)
    assert cur.rowcount == 1
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", [None] * 7)
    rows = con.execute("SELECT * FROM t ORDER BY i NULLS LAST").fetchall()
    assert rows == [ROW, (None,) * 7]
    got = rows[0]
    for value, want in zip(got, ROW):
        assert type(value) is type(want), (value, want)


def test_dollar_parameters(con):
    con.execute(f"CREATE TABLE t ({TYPED})")
    con.execute("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7)", ROW)
    con.execute("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7)", (7, -1.0, "x", None, None, None, False))
    # $n may repeat and come in any order
    rows = con.execute("SELECT i, s FROM t WHERE s = $2 OR i = $1 ORDER BY i", (7, ROW[2])).fetchall()
    assert rows == [(7, "x"), (42, ROW[2])]
    assert con.execute("SELECT count(*) FROM t WHERE d = $1", (ROW[3],)).fetchone() == (1,)
    assert con.execute("SELECT count(*) FROM t WHERE ts = $1", (ROW[4],)).fetchone() == (1,)
    assert con.execute("SELECT count(*) FROM t WHERE m = $1", (ROW[5],)).fetchone() == (1,)
    assert con.execute("SELECT count(*) FROM t WHERE b = $1", (True,)).fetchone() == (1,)
    assert con.execute("SELECT count(*) FROM t WHERE f < $1", (0.0,)).fetchone() == (1,)


def test_qmark_parameters_in_a_where_clause(con):
    con.execute("CREATE TABLE t (a INT, s TEXT)")
    con.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    assert con.execute("SELECT s FROM t WHERE a >= ? AND s <> ? ORDER BY a", (2, "three")).fetchall() == [("two",)]
    # a parameter is a value, never SQL
    assert con.execute("SELECT count(*) FROM t WHERE s = ?", ("one' OR '1'='1",)).fetchone() == (0,)


def test_executemany_insert(con):
    con.execute("CREATE TABLE t (a INT, s TEXT, d DATE)")
    rows = [(i, f"row {i}", dt.date(2024, 1, 1) + dt.timedelta(days=i)) for i in range(100)]
    rows.append((100, None, None))
    cur = con.cursor()
    cur.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    assert cur.rowcount == len(rows)
    assert con.execute("SELECT * FROM t ORDER BY a").fetchall() == rows


def test_rowcount_of_copy_insert_update_delete(con, tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,s\n" + "".join(f"{i},s{i}\n" for i in range(250)))
    con.execute("CREATE TABLE t (a INT, s TEXT)")
    cur = con.execute(f"COPY t FROM {sql_literal(path)} WITH (FORMAT csv, HEADER true, DELIMITER ',')")
    assert cur.rowcount == 250
    assert con.execute("INSERT INTO t VALUES (1000, 'x'), (1001, 'y'), (1002, 'z')").rowcount == 3
    assert con.execute("UPDATE t SET s = 'big' WHERE a >= 200").rowcount == 53
    assert con.execute("DELETE FROM t WHERE a < 10").rowcount == 10
    assert con.execute("SELECT count(*) FROM t").fetchone() == (243,)
    assert con.execute("SELECT count(*) FROM t WHERE s = 'big'").fetchone() == (53,)


def test_fetchmany_fetchall_and_iteration(con):
    con.execute("CREATE TABLE t (a INT)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(10)])
    cur = con.execute("SELECT a FROM t ORDER BY a")
    assert cur.fetchmany(3) == [(0,), (1,), (2,)]
    assert cur.fetchone() == (3,)
    assert cur.fetchmany(2) == [(4,), (5,)]
    assert cur.fetchall() == [(6,), (7,), (8,), (9,)]
    assert cur.fetchall() == []
    assert cur.fetchmany(5) == []
    # default size is arraysize (1)
    cur = con.execute("SELECT a FROM t ORDER BY a")
    assert len(cur.fetchmany()) == getattr(cur, "arraysize", 1)
    assert [row for row in con.execute("SELECT a FROM t ORDER BY a")] == [(i,) for i in range(10)]


def test_script_keeps_the_last_result(con):
    cur = con.execute(
        "CREATE TABLE a (x INT); INSERT INTO a VALUES (1), (2), (3); SELECT sum(x) AS total FROM a"
    )
    assert cur.description[0][0] == "total"
    assert cur.fetchall() == [(6,)]


def test_rollback_and_commit(con):
    con.execute("CREATE TABLE t (a INT)")
    con.execute("INSERT INTO t VALUES (1)")
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES (2), (3)")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)
    con.rollback()
    assert con.execute("SELECT count(*) FROM t").fetchone() == (1,)
    con.execute("BEGIN")
    con.execute("DELETE FROM t")
    con.commit()
    assert con.execute("SELECT count(*) FROM t").fetchone() == (0,)
    # commit and rollback outside a transaction are harmless
    con.commit()
    con.rollback()


def test_arrow_and_arrow_c_stream(con):
    con.execute(f"CREATE TABLE t ({TYPED})")
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", ROW)
    table = con.execute("SELECT * FROM t").arrow()
    assert isinstance(table, pa.Table)
    assert table.schema.types == [
        pa.int64(),
        pa.float64(),
        pa.string(),
        pa.date32(),
        pa.timestamp("us"),
        pa.decimal128(10, 2),
        pa.bool_(),
    ]
    assert [tuple(r.values()) for r in table.to_pylist()] == [ROW]
    # the cursor itself is an Arrow stream
    assert pa.table(con.execute("SELECT * FROM t")).equals(table)


def test_df_has_arrow_dtypes(con):
    con.execute(f"CREATE TABLE t ({TYPED})")
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", ROW)
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", [None] * 7)
    frame = con.execute("SELECT * FROM t ORDER BY i").df()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["i", "f", "s", "d", "ts", "m", "b"]
    for column, arrow_type in zip(frame.columns, [pa.int64(), pa.float64(), pa.string(), pa.date32(),
                                                  pa.timestamp("us"), pa.decimal128(10, 2), pa.bool_()]):
        dtype = frame.dtypes[column]
        assert isinstance(dtype, pd.ArrowDtype), (column, dtype)
        assert dtype.pyarrow_dtype == arrow_type
    assert frame["i"].tolist()[0] == 42
    assert frame["i"].isna().tolist() == [False, True]
    assert frame["m"].tolist()[0] == Decimal("1234.50")


def test_register_pyarrow_polars_pandas_and_a_reader(con):
    con.execute("CREATE TABLE names (k BIGINT, name TEXT)")
    con.execute("INSERT INTO names VALUES (1, 'one'), (2, 'two'), (3, 'three')")

    arrow_table = pa.table({"k": pa.array([1, 2, 3, 3], pa.int64()), "v": [10.0, 20.0, 30.0, 0.5]})
    con.register("from_arrow", arrow_table)
    assert con.execute("SELECT sum(v) FROM from_arrow").fetchone() == (60.5,)
    rows = con.execute(
        "SELECT n.name, sum(a.v) FROM from_arrow a JOIN names n ON a.k = n.k GROUP BY n.name ORDER BY n.name"
    ).fetchall()
    assert rows == [("one", 10.0), ("three", 30.5), ("two", 20.0)]

    con.register("from_polars", pl.DataFrame({"k": [5, 6], "s": ["p", None]}))
    assert con.execute("SELECT k, s FROM from_polars ORDER BY k").fetchall() == [(5, "p"), (6, None)]

    con.register("from_pandas", pd.DataFrame({"k": [7, 8, 9], "x": [0.25, 0.5, 0.75]}))
    assert con.execute("SELECT count(*), sum(x) FROM from_pandas WHERE k > 7").fetchone() == (2, 1.25)

    reader = pa.RecordBatchReader.from_batches(
        arrow_table.schema, arrow_table.to_batches(max_chunksize=1)
    )
    con.register("from_reader", reader)
    assert con.execute("SELECT count(*) FROM from_reader").fetchone() == (4,)
    # read once, queryable again
    assert con.execute("SELECT max(k) FROM from_reader").fetchone() == (3,)

    # read-only
    with pytest.raises(wireload.Error):
        con.execute("INSERT INTO from_arrow VALUES (4, 1.0)")
    assert con.execute("SELECT count(*) FROM from_arrow").fetchone() == (4,)

    con.unregister("from_arrow")
    with pytest.raises(wireload.ProgrammingError):
        con.execute("SELECT * FROM from_arrow")
    # the others stay
    assert con.execute("SELECT count(*) FROM from_polars").fetchone() == (2,)


def test_register_a_wireload_result(con, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    con.register("loaded", wireload.load_csv(path, schema="a INT, b TEXT"))
    assert con.execute("SELECT b FROM loaded WHERE a = 2").fetchall() == [("y",)]


def test_copy_to_and_back(con, tmp_path):
    con.execute(f"CREATE TABLE t ({TYPED})")
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", ROW)
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", [None] * 7)
    con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", (1, 0.0, "", None, None, None, False))
    out = tmp_path / "out.csv"
    con.execute(f"COPY t TO {sql_literal(out)} WITH (FORMAT csv, HEADER true)")
    assert out.stat().st_size > 0
    back = wireload.read_csv(out, schema=TYPED)
    assert back.equals(con.execute("SELECT * FROM t").arrow())
    # a NULL and an empty string stay apart
    assert back.column("s").to_pylist()[1:] == [None, ""]


def test_cursor_and_connection_objects(tmp_path):
    with wireload.connect(threads=2) as con:
        cur = con.cursor()
        assert cur.execute("SELECT 2 AS two") is cur
        assert cur.fetchall() == [(2,)]
        cur.close()
        with pytest.raises(wireload.Error):
            cur.fetchall()
    other = wireload.connect()
    other.close()
    with pytest.raises(wireload.Error):
        other.execute("SELECT 1")


def test_connections_are_separate_databases():
    a, b = wireload.connect(), wireload.connect()
    try:
        a.execute("CREATE TABLE only_in_a (x INT)")
        with pytest.raises(wireload.ProgrammingError):
            b.execute("SELECT * FROM only_in_a")
    finally:
        a.close()
        b.close()


def test_type_objects_compare_with_description_types(con):
    cur = con.execute(f"CREATE TABLE t ({TYPED})")
    cur = con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", ROW)
    cur = con.execute("SELECT i, f, s, d, ts, m, b FROM t")
    types = [d[1] for d in cur.description]
    assert types[0] == wireload.NUMBER and types[1] == wireload.NUMBER
    assert types[5] == wireload.NUMBER
    assert types[2] == wireload.STRING and types[2] != wireload.NUMBER
    assert types[3] == wireload.DATETIME and types[4] == wireload.DATETIME
    assert types[6] != wireload.NUMBER and types[6] != wireload.STRING
    assert all(t != wireload.ROWID for t in types)
    assert wireload.Date(2024, 2, 29) == dt.date(2024, 2, 29)
    assert wireload.Timestamp(2024, 1, 1, 5) == dt.datetime(2024, 1, 1, 5)
    assert wireload.DateFromTicks(0) == dt.date.fromtimestamp(0)
    assert wireload.Binary(b"x") == b"x"


def test_empty_parameters_run_statements_without_placeholders(con, tmp_path):
    # DB-API callers pass () for "no parameters"; DDL and COPY cannot be prepared
    con.execute("CREATE TABLE e (a INT)", ())
    path = tmp_path / "e.csv"
    path.write_text("1\n2\n")
    assert con.execute(f"COPY e FROM {sql_literal(str(path))}", []).rowcount == 2
    assert con.execute("SELECT count(*) FROM e", ()).fetchall() == [(2,)]
