"""A TPC-H lineitem-like file (SF 0.01: 60,000 rows, '|'-delimited with a trailing '|')
loaded by wireload and by pyarrow with the same explicit schema: the same table.

No TPC-H generator is available to the Python tests (the project's binary may not be
built, and neither tpchgen nor DuckDB is installed), so a small deterministic generator
writes a file of lineitem's shape: keys, decimals, flags, dates, and comments with commas,
quotes (quoted and doubled), delimiters and newlines inside quotes, non-ASCII text, NULLs
(an unquoted empty field) and empty strings (a quoted empty field).
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pytest

import wireload

ROWS = 60_000

COLUMNS = [
    ("l_orderkey", pa.int64(), "BIGINT"),
    ("l_partkey", pa.int64(), "BIGINT"),
    ("l_suppkey", pa.int64(), "BIGINT"),
    ("l_linenumber", pa.int32(), "INT"),
    ("l_quantity", pa.decimal128(15, 2), "DECIMAL(15,2)"),
    ("l_extendedprice", pa.decimal128(15, 2), "DECIMAL(15,2)"),
    ("l_discount", pa.decimal128(15, 2), "DECIMAL(15,2)"),
    ("l_tax", pa.decimal128(15, 2), "DECIMAL(15,2)"),
    ("l_returnflag", pa.string(), "VARCHAR"),
    ("l_linestatus", pa.string(), "VARCHAR"),
    ("l_shipdate", pa.date32(), "DATE"),
    ("l_commitdate", pa.date32(), "DATE"),
    ("l_receiptdate", pa.date32(), "DATE"),
    ("l_shipinstruct", pa.string(), "VARCHAR"),
    ("l_shipmode", pa.string(), "VARCHAR"),
    ("l_comment", pa.string(), "VARCHAR"),
]
NAMES = [name for name, _, _ in COLUMNS]
SCHEMA = pa.schema([(name, arrow) for name, arrow, _ in COLUMNS])
SQL_SCHEMA = ", ".join(f"{name} {sql}" for name, _, sql in COLUMNS)

WORDS = (
    "furiously regular deposits sleep carefully final requests haggle blithely ironic "
    "accounts nag quickly special packages wake slyly express theodolites cajole bold "
    "pinto beans use even foxes boost pending instructions détente naïve 日本"
).split()
INSTRUCT = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
EPOCH = dt.date(1992, 1, 1)


def _money(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def _comment(rng: random.Random) -> str:
    """A comment field as written in the file (quoted where it must be)."""
    kind = rng.random()
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 7)))
    if kind < 0.70:
        return text.replace('"', "")  # plain, unquoted (may hold commas below)
    if kind < 0.80:
        return text + ", " + rng.choice(WORDS)  # a comma, unquoted: not this file's delimiter
    if kind < 0.88:
        inner = f'say "{rng.choice(WORDS)}", then {text}'
        return '"' + inner.replace('"', '""') + '"'  # quotes inside: quoted, doubled
    if kind < 0.92:
        return f'"{text} | {rng.choice(WORDS)}"'  # the delimiter inside quotes
    if kind < 0.94:
        return f'"{text}\n{rng.choice(WORDS)}"'  # a newline inside quotes
    if kind < 0.97:
        return ""  # unquoted empty: NULL
    return '""'  # quoted empty: an empty string


def _decimal_text(rng: random.Random, cents: int) -> str:
    """Decimal spellings a loader must all read: 2 digits, 1 digit, none."""
    text = _money(cents)
    r = rng.random()
    if r < 0.05 and text.endswith("0"):
        return text[:-1]  # 12.5
    if r < 0.10 and text.endswith(".00"):
        return text[:-3]  # 12
    return text


def generate_lineitem(rows: int = ROWS, seed: int = 20261125) -> bytes:
    rng = random.Random(seed)
    lines = []
    orderkey = 0
    while len(lines) < rows:
        orderkey += rng.randint(1, 8)
        for linenumber in range(1, rng.randint(1, 7) + 1):
            if len(lines) == rows:
                break
            quantity = rng.randint(1, 50)
            price = quantity * rng.randint(90_000, 210_000)  # cents
            ship = EPOCH + dt.timedelta(days=rng.randint(0, 2500))
            commit = ship + dt.timedelta(days=rng.randint(-60, 60))
            receipt = ship + dt.timedelta(days=rng.randint(1, 30))
            fields = [
                str(orderkey),
                str(rng.randint(1, 2_000_000_000_000)),  # beyond int32
                str(rng.randint(1, 10_000)),
                str(linenumber),
                _decimal_text(rng, quantity * 100),
                _decimal_text(rng, price),
                _decimal_text(rng, rng.randint(0, 10)),
                _decimal_text(rng, rng.randint(-8, 8)),
                rng.choice("RAN"),
                rng.choice("OF"),
                ship.isoformat(),
                commit.isoformat(),
                receipt.isoformat(),
                rng.choice(INSTRUCT),
                rng.choice(MODES),
                _comment(rng),
            ]
            lines.append("|".join(fields) + "|")
    # a leap day and the year's edges, in the last rows
    lines[-1] = lines[-1].replace(lines[-1].split("|")[10], "1996-02-29", 1)
    lines[-2] = lines[-2].replace(lines[-2].split("|")[11], "1999-12-31", 1)
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory):
    path = tmp_path_factory.mktemp("tpch") / "lineitem.tbl"
    path.write_bytes(generate_lineitem())
    return path


@pytest.fixture(scope="module")
def reference(lineitem):
    """pyarrow's reading: a 17th column name for the empty field after the trailing '|',
    left out with include_columns."""
    return pacsv.read_csv(
        lineitem,
        read_options=pacsv.ReadOptions(column_names=NAMES + ["trailing"]),
        parse_options=pacsv.ParseOptions(delimiter="|", newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=SCHEMA,
            include_columns=NAMES,
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )


def test_reference_is_what_was_generated(reference):
    assert reference.num_rows == ROWS
    assert reference.schema == SCHEMA
    comments = reference.column("l_comment")
    # the generator's special fields are all there
    assert comments.null_count > 0
    assert pc.sum(pc.equal(comments, "")).as_py() > 0
    assert pc.any(pc.match_substring(comments, '"')).as_py()
    assert pc.any(pc.match_substring(comments, "\n")).as_py()
    assert pc.any(pc.match_substring(comments, "|")).as_py()
    assert dt.date(1996, 2, 29) in reference.column("l_shipdate").to_pylist()
    assert Decimal("-0.08") in reference.column("l_tax").to_pylist()


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_same_table_as_pyarrow(lineitem, reference, threads):
    got = wireload.read_csv(lineitem, schema=SCHEMA, delimiter="|", header=False, threads=threads)
    assert got.schema == SCHEMA
    assert got.num_rows == ROWS
    assert got.equals(reference)


def test_schema_spellings_give_the_same_table(lineitem, reference):
    by_sql = wireload.read_csv(lineitem, schema=SQL_SCHEMA, delimiter="|", header=False)
    by_dict_arrow = wireload.read_csv(
        lineitem, schema={n: t for n, t, _ in COLUMNS}, delimiter="|", header=False
    )
    by_dict_sql = wireload.read_csv(
        lineitem, schema={n: s for n, _, s in COLUMNS}, delimiter="|", header=False
    )
    for table in (by_sql, by_dict_arrow, by_dict_sql):
        assert table.schema == SCHEMA
        assert table.equals(reference)


def test_several_files_load_as_one_table_in_order(lineitem, reference, tmp_path):
    lines = lineitem.read_bytes().split(b"|\n")
    # split between records (no record has "|\n" inside: a quoted newline never follows a '|')
    assert lines[-1] == b""
    records = [line + b"|\n" for line in lines[:-1]]
    assert len(records) == ROWS
    cuts = [0, 7, 25_000, ROWS]
    paths = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        path = tmp_path / f"part{i}.tbl"
        path.write_bytes(b"".join(records[a:b]))
        paths.append(path)
    got = wireload.read_csv([str(paths[0]), paths[1], paths[2]], schema=SCHEMA, delimiter="|", header=False)
    assert got.equals(reference)


def test_columns_keeps_the_named_columns_in_order(lineitem, reference):
    got = wireload.read_csv(
        lineitem,
        schema=SCHEMA,
        delimiter="|",
        header=False,
        columns=["l_comment", "l_orderkey", "l_shipdate"],
    )
    assert got.column_names == ["l_comment", "l_orderkey", "l_shipdate"]
    assert got.equals(reference.select(["l_comment", "l_orderkey", "l_shipdate"]))
