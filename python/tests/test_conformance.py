"""The public CSV conformance suite (``../shared/conformance``) through ``wireload.read_csv``.

Every case of the manifest runs:

* a case that expects rows is loaded with ``wireload.read_csv`` (the case's dialect, its
  schema, or none: every column text) and compared, table against table (names, types,
  values and NULLs), with ``pyarrow.csv.read_csv`` run with the same dialect and the same
  NULL rules (PostgreSQL COPY: an unquoted empty field is NULL, a quoted ``""`` is an
  empty string). pyarrow's result is first checked against the case's own expectation,
  so the reference is known to be right. Where pyarrow cannot serve as the reference
  (``PYARROW_DIFFERS``), the case's ``expected_rows`` are the reference instead;
* a case with a query other than ``SELECT * FROM t`` runs through SQL: ``CREATE TABLE``,
  ``COPY t FROM``, the query;
* a case that expects an error must raise ``wireload.DataError`` naming the expected line
  (and column, when the case names one);
* the few cases whose expectation contradicts a documented choice of wireload
  (``DOCUMENTED_CHOICES``, the same ones the Rust conformance test lists) assert what that
  documented choice gives.

No case is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import wireload

from conftest import CONFORMANCE_DIR, sql_literal

# Cases whose expectation contradicts one of wireload's documented choices (docs/loading.md, "Loading
# semantics"): what each asserts instead.
#   "pyarrow": the table equals pyarrow's, which makes the same choice;
#   "no_rows": the load succeeds with no rows;
#   ("error", line): the load raises DataError at that line.
DOCUMENTED_CHOICES = {
    "csv-test-data/all-empty": (
        "empty lines are skipped, not records (the case counts two records of one empty field)",
        "no_rows",
    ),
    "csv-test-data/empty-one-column": (
        "empty lines are skipped, not records (pyarrow skips them too)",
        "pyarrow",
    ),
    "duckdb/many_empty_lines": (
        "empty lines are skipped, not records of one NULL field (pyarrow skips them too)",
        "pyarrow",
    ),
    "csv-test-data/bad-header-no-header": (
        "an empty file with a header loads no rows, as in PostgreSQL and DuckDB "
        "(the suite tags the case ambiguous)",
        "no_rows",
    ),
    "cpython/excel_quoted_nl": (
        "every record must have as many fields as the first: the second record "
        "(line 4, after a record spanning lines 1-3) has 4 fields, not 5",
        ("error", 4),
    ),
}

# Cases where pyarrow's reader is not a usable reference; wireload is compared with the
# case's expected_rows instead. The test checks that pyarrow really differs, so that this
# list cannot hide a case pyarrow could check.
PYARROW_DIFFERS = {
    "cpython/excel_blankline": "pyarrow refuses an empty file ('Empty CSV file'); the case expects no rows",
    "rust-csv/empty": "pyarrow refuses an empty file ('Empty CSV file'); the case expects no rows",
}

# SQL types of the case schemas, as pyarrow types
SQL_TO_ARROW = {
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "INTEGER": pa.int32(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
}


def _cases():
    manifest = CONFORMANCE_DIR / "csv" / "manifest.json"
    if not manifest.is_file():
        # fails in the test (conformance_dir fixture), not silently at collection
        return [pytest.param(None, id="manifest-missing")]
    cases = json.loads(manifest.read_text())["cases"]
    return [pytest.param(case, id=case["id"]) for case in cases]


CASES = _cases()


def test_manifest_is_the_full_suite(conformance_dir):
    cases = json.loads((conformance_dir / "csv" / "manifest.json").read_text())["cases"]
    assert len(cases) > 100
    ids = {c["id"] for c in cases}
    # the lists above name real cases (a renamed case would otherwise be checked the default way)
    assert set(DOCUMENTED_CHOICES) <= ids
    assert set(PYARROW_DIFFERS) <= ids


def case_schema(case):
    """The case's schema as (name, pyarrow type) pairs, or None."""
    text = case.get("schema")
    if not text:
        return None
    out = []
    for part in text.split(","):
        name, sql_type = part.split()
        out.append((name, SQL_TO_ARROW[sql_type.upper()]))
    return out


def wireload_options(dialect) -> dict:
    quote = dialect.get("quote") or None
    escape = dialect.get("escape") or None
    return {
        "delimiter": dialect.get("delimiter", ","),
        "quote": quote,
        # escape == quote is RFC 4180 doubling, which escape=None means
        "escape": None if escape == quote else escape,
        "header": bool(dialect.get("header", False)),
    }


def pyarrow_reference(case, path: Path) -> pa.Table:
    """pyarrow's reading of the case with the same dialect and NULL rules."""
    dialect = case["dialect"]
    quote = dialect.get("quote") or None
    escape = dialect.get("escape") or None
    header = bool(dialect.get("header", False))
    data = path.read_bytes()
    # pyarrow (26) cannot infer the column count of a file whose only record has no line
    # terminator ("Empty CSV file or block"); a terminator added at the end changes no record
    if data and not data.endswith((b"\n", b"\r")):
        data += b"\n"
    parse = pacsv.ParseOptions(
        delimiter=dialect.get("delimiter", ","),
        quote_char=quote if quote else False,
        double_quote=quote is not None and escape == quote,
        escape_char=escape if escape and escape != quote else False,
        newlines_in_values=True,
    )

    def read(read_options, column_types):
        return pacsv.read_csv(
            pa.py_buffer(data),
            read_options=read_options,
            parse_options=parse,
            convert_options=pacsv.ConvertOptions(
                column_types=column_types,
                null_values=[""],
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
            ),
        )

    schema = case_schema(case)
    if schema is not None:
        names = [n for n, _ in schema]
        return read(
            pacsv.ReadOptions(column_names=names, skip_rows=1 if header else 0),
            dict(schema),
        )
    # no schema: every column text, named from the header or column1..N
    if header:
        names = read(pacsv.ReadOptions(), None).column_names
        return read(pacsv.ReadOptions(), {n: pa.string() for n in names})
    auto = pacsv.ReadOptions(autogenerate_column_names=True)
    generated = read(auto, None).column_names
    table = read(auto, {n: pa.string() for n in generated})
    return table.rename_columns([f"column{i + 1}" for i in range(len(generated))])


def expected_rows(case, conformance_dir: Path):
    if "expected_rows" in case:
        return case["expected_rows"]
    return json.loads((conformance_dir / case["expected_rows_file"]).read_text())


def as_text_rows(rows):
    """Rows of Python values as the manifest writes them: strings, None for NULL."""
    return [[None if v is None else str(v) for v in row] for row in rows]


def table_rows(table: pa.Table):
    return as_text_rows(tuple(r.values()) for r in table.to_pylist())


def normalize(rows, null_distinguished: bool):
    if null_distinguished:
        return rows
    return [["" if v is None else v for v in row] for row in rows]


def check_rows(got, want, case):
    nd = bool(case.get("null_distinguished", False))
    got, want = normalize(got, nd), normalize(want, nd)
    assert len(got) == len(want), f"{len(got)} rows, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"row {i} differs"


def run_through_sql(case, path: Path):
    """CREATE TABLE t, COPY t FROM the input, then the case's query; the query's rows."""
    dialect = case["dialect"]
    options = wireload_options(dialect)
    if case.get("schema"):
        columns = case["schema"]
    else:
        # text columns named from the header, lowercased as unquoted SQL identifiers are
        # (PostgreSQL), so that the query can name a header column `Person` unquoted (as the
        # Rust conformance test does)
        names = wireload.read_csv(path, **options).column_names
        columns = ", ".join('"' + n.lower().replace('"', '""') + '" VARCHAR' for n in names)
    quote = dialect.get("quote") or ""
    escape = dialect.get("escape") or ""
    with wireload.connect() as con:
        con.execute(f"CREATE TABLE t ({columns})")
        con.execute(
            f"COPY t FROM {sql_literal(path)} WITH (FORMAT csv, "
            f"DELIMITER {sql_literal(dialect.get('delimiter', ','))}, QUOTE {sql_literal(quote)}, "
            f"ESCAPE {sql_literal(escape)}, HEADER {'true' if options['header'] else 'false'})"
        )
        return as_text_rows(con.execute(case["query"]).fetchall())


@pytest.mark.parametrize("case", CASES)
def test_case(case, conformance_dir):
    assert case is not None
    path = conformance_dir / case["input"]
    options = wireload_options(case["dialect"])
    schema = case.get("schema")
    case_id = case["id"]
    if schema is None:
        # the suite's cases without a schema read text in the case's dialect (type and
        # dialect inference are tested in test_inference.py)
        options["all_varchar"] = True

    choice = DOCUMENTED_CHOICES.get(case_id, (None, None))[1]
    if (case.get("expect_error") and choice is None) or isinstance(choice, tuple):
        with pytest.raises(wireload.DataError) as info:
            wireload.read_csv(path, schema=schema, **options)
        err = info.value
        line = choice[1] if isinstance(choice, tuple) else case.get("error_line")
        message = str(err)
        assert message
        if line is not None:
            assert err.line == line, message
            assert f"line {line}" in message
            assert Path(err.file).name == path.name, message
            assert isinstance(err.column, int) and err.column >= 1, message
            assert isinstance(err.byte_offset, int) and 0 <= err.byte_offset <= path.stat().st_size
        if case.get("error_column"):
            assert err.column_name == case["error_column"], message
        assert isinstance(err.sqlstate, str) and len(err.sqlstate) == 5
        return

    if case.get("query") and case["query"].strip().upper() != "SELECT * FROM T":
        check_rows(run_through_sql(case, path), expected_rows(case, conformance_dir), case)
        return

    got = wireload.read_csv(path, schema=schema, **options)
    assert isinstance(got, pa.Table)

    if choice == "no_rows":
        assert got.num_rows == 0
        return
    if choice == "pyarrow":
        reference = pyarrow_reference(case, path)
        assert got.schema == reference.schema
        assert got.equals(reference)
        return

    want = expected_rows(case, conformance_dir)
    if "expected_row_count" in case:
        assert got.num_rows == case["expected_row_count"]

    if case_id in PYARROW_DIFFERS:
        try:
            reference_rows = table_rows(pyarrow_reference(case, path))
        except pa.ArrowInvalid:
            reference_rows = None
        assert reference_rows != want, "pyarrow agrees with the case: drop it from PYARROW_DIFFERS"
        check_rows(table_rows(got), want, case)
        return

    reference = pyarrow_reference(case, path)
    # the reference reads what the case expects
    check_rows(table_rows(reference), want, case)
    # and wireload reads exactly what the reference reads: names, types, values, NULLs
    assert got.schema == reference.schema
    if not got.equals(reference):
        check_rows(table_rows(got), table_rows(reference), {"null_distinguished": True})
        pytest.fail("tables differ")  # e.g. in a way to_pylist does not show


def test_bom_header_names_through_read_csv(conformance_dir):
    # the BOM is not part of the first column's name
    table = wireload.read_csv(conformance_dir / "csv/duckdb/people.csv")
    assert table.column_names == ["Person", "Region"]


def test_empty_file_with_a_schema_has_no_rows(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    table = wireload.read_csv(path, schema="a INT, b TEXT", header=False)
    assert table.num_rows == 0
    assert table.schema == pa.schema([("a", pa.int32()), ("b", pa.string())])


def test_empty_file_with_a_header_has_no_rows(tmp_path):
    # as in PostgreSQL and DuckDB: no header, no rows, no error
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    table = wireload.read_csv(path, schema="a INT, b TEXT", header=True)
    assert table.num_rows == 0
    assert table.column_names == ["a", "b"]


