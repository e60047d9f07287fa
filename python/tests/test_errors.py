"""The DB-API 2.0 exception classes, and the exact position a DataError names."""

from __future__ import annotations

import pytest

import wireload

from conftest import sql_literal

SCHEMA = "id INT, name VARCHAR, d DATE"
HEADER = "id,name,d\n"


def test_exception_hierarchy():
    assert issubclass(wireload.Warning, Exception)
    assert issubclass(wireload.Error, Exception)
    assert not issubclass(wireload.Warning, wireload.Error)
    assert issubclass(wireload.InterfaceError, wireload.Error)
    assert issubclass(wireload.DatabaseError, wireload.Error)
    assert not issubclass(wireload.InterfaceError, wireload.DatabaseError)
    for name in [
        "DataError",
        "OperationalError",
        "IntegrityError",
        "InternalError",
        "ProgrammingError",
        "NotSupportedError",
    ]:
        cls = getattr(wireload, name)
        assert issubclass(cls, wireload.DatabaseError), name
        assert cls is not wireload.DatabaseError
    # the classes are distinct
    names = ["Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
             "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError"]
    assert len({getattr(wireload, n) for n in names}) == len(names)


def test_module_globals():
    assert wireload.apilevel == "2.0"
    assert wireload.threadsafety == 1
    assert wireload.paramstyle == "qmark"


def rows_text(n: int) -> list[str]:
    return [f"{i},name {i},2024-01-{(i % 28) + 1:02d}\n" for i in range(1, n + 1)]


def load_error(path, **options) -> wireload.DataError:
    """The error of a load of `path`, the same whether the file is mapped or read in blocks
    (small files are mapped by default, large ones streamed: both must say the same)."""
    errors = []
    for memory_map in (True, False):
        with pytest.raises(wireload.DataError) as info:
            wireload.read_csv(path, schema=SCHEMA, memory_map=memory_map, **options)
        errors.append(info.value)
    mapped, streamed = errors
    for attribute in ("file", "line", "column", "column_name", "byte_offset", "sqlstate"):
        assert getattr(mapped, attribute) == getattr(streamed, attribute), attribute
    assert str(mapped) == str(streamed)
    return mapped


def check_position(err, path, line, column, column_name, byte_offset):
    message = str(err)
    assert err.file == str(path), message
    assert err.line == line, message
    assert err.column == column, message
    assert err.column_name == column_name, message
    assert err.byte_offset == byte_offset, message
    assert isinstance(err.sqlstate, str) and err.sqlstate.startswith("22"), err.sqlstate
    # the message says it all too
    assert path.name in message
    assert f"line {line}" in message
    assert f"column {column}" in message


def test_bad_value_in_the_first_data_row(tmp_path):
    lines = [HEADER, "1,alpha,2024-02-30\n"] + rows_text(20)[1:]
    path = tmp_path / "first.csv"
    path.write_text("".join(lines))
    err = load_error(path)
    check_position(err, path, 2, 3, "d", len(HEADER) + len("1,alpha,"))
    assert "2024-02-30" in str(err)


def test_bad_value_in_the_last_row(tmp_path):
    rows = rows_text(50)
    rows[-1] = "x50,name 50,2024-01-01"  # no newline at the end of the file
    path = tmp_path / "last.csv"
    text = HEADER + "".join(rows)
    path.write_text(text)
    err = load_error(path)
    check_position(err, path, 51, 1, "id", text.index("x50"))
    assert "x50" in str(err)


def test_bad_value_after_a_quoted_multiline_field(tmp_path):
    rows = rows_text(30)
    # record 3 spans physical lines 4-6 (with the header as line 1)
    rows[2] = '3,"three\nlines, ""quoted""\nlong",2024-03-03\n'
    # record 10 has a bad date: 12 physical lines come before it (the header, 9 records,
    # 2 more lines of record 3), so it is on line 13
    rows[9] = "10,name 10,2024-13-01\n"
    text = HEADER + "".join(rows)
    path = tmp_path / "multiline.csv"
    path.write_text(text)
    err = load_error(path)
    check_position(err, path, 13, 3, "d", text.index("2024-13-01"))


def test_bad_value_on_the_second_line_of_a_multiline_record(tmp_path):
    # the position is the bad field's physical line, not the record's first line
    rows = rows_text(5)
    rows[1] = '2,"two\nlines",2024-02-31\n'  # record 2: lines 3-4; the date is on line 4
    text = HEADER + "".join(rows)
    path = tmp_path / "same_record.csv"
    path.write_text(text)
    err = load_error(path)
    check_position(err, path, 4, 3, "d", text.index("2024-02-31"))


def test_multibyte_text_before_the_bad_field_counts_in_bytes(tmp_path):
    text = HEADER + "1,héllo wörld 日本,2024-00-10\n"
    path = tmp_path / "utf8.csv"
    path.write_bytes(text.encode())
    err = load_error(path)
    check_position(err, path, 2, 3, "d", text.encode().index(b"2024-00-10"))


def test_unclosed_quote_is_reported_where_it_opened(tmp_path):
    text = HEADER + "1,a,2024-01-01\n" + '2,"never closed,2024-01-02\n3,c,2024-01-03\n'
    path = tmp_path / "unclosed.csv"
    path.write_text(text)
    err = load_error(path)
    check_position(err, path, 3, 2, "name", text.index('"never'))


def test_wrong_field_count_names_the_line(tmp_path):
    text = HEADER + "1,a,2024-01-01\n2,b\n"
    path = tmp_path / "short.csv"
    path.write_text(text)
    err = load_error(path)
    assert err.file == str(path)
    assert err.line == 3
    assert "line 3" in str(err)


def test_error_in_the_second_of_two_files_names_that_file(tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("".join(rows_text(10)))
    text = "".join(rows_text(4)) + "5,e,not a date\n"
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(wireload.DataError) as info:
        wireload.read_csv([good, bad], schema=SCHEMA, header=False)
    check_position(info.value, bad, 5, 3, "d", text.index("not a date"))


def test_copy_raises_the_same_data_error(tmp_path, con):
    text = HEADER + "".join(rows_text(3)) + "4,d,2024-04-31\n"
    path = tmp_path / "copy.csv"
    path.write_text(text)
    con.execute(f"CREATE TABLE t ({SCHEMA})")
    with pytest.raises(wireload.DataError) as info:
        con.execute(f"COPY t FROM {sql_literal(path)} WITH (FORMAT csv, HEADER true)")
    check_position(info.value, path, 5, 3, "d", text.index("2024-04-31"))
    # the load left the table as it was
    assert con.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_data_error_is_a_database_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,name,d\nnope,a,2024-01-01\n")
    with pytest.raises(wireload.DatabaseError):
        wireload.read_csv(path, schema=SCHEMA)
    with pytest.raises(wireload.Error):
        wireload.read_csv(path, schema=SCHEMA)


def test_syntax_error_is_a_programming_error(con):
    with pytest.raises(wireload.ProgrammingError) as info:
        con.execute("SELEC 1")
    assert info.value.sqlstate.startswith("42")


def test_unknown_table_is_a_programming_error(con):
    with pytest.raises(wireload.ProgrammingError) as info:
        con.execute("SELECT * FROM no_such_table")
    assert "no_such_table" in str(info.value)
    assert info.value.sqlstate.startswith("42")


def test_unknown_column_is_a_programming_error(con):
    con.execute("CREATE TABLE t (a INT)")
    with pytest.raises(wireload.ProgrammingError):
        con.execute("SELECT b FROM t")


def test_duplicate_key_is_an_integrity_error(con):
    con.execute("CREATE TABLE k (id INT PRIMARY KEY, v TEXT)")
    con.execute("INSERT INTO k VALUES (1, 'a')")
    with pytest.raises(wireload.IntegrityError) as info:
        con.execute("INSERT INTO k VALUES (1, 'b')")
    assert info.value.sqlstate == "23505"
    assert con.execute("SELECT v FROM k").fetchall() == [("a",)]


@pytest.mark.parametrize("mode", ["skip", "null"])
def test_unknown_on_error_policies_are_refused(tmp_path, mode):
    path = tmp_path / "ok.csv"
    path.write_text("id,name,d\n1,a,2024-01-01\n")
    with pytest.raises(wireload.ProgrammingError, match="stop or ignore"):
        wireload.read_csv(path, schema=SCHEMA, on_error=mode)
    with pytest.raises(wireload.ProgrammingError, match="stop or ignore"):
        wireload.load_csv(path, schema=SCHEMA, on_error=mode)
    # "stop" is the default and works
    assert wireload.read_csv(path, schema=SCHEMA, on_error="stop").num_rows == 1


def test_on_error_ignore_loads_the_good_rows_and_warns(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,name,d\n1,a,2024-01-01\nx,b,2024-01-02\n3,c,2024-13-01\n4,d,2024-01-04\n")
    with pytest.raises(wireload.DataError):
        wireload.read_csv(path, schema=SCHEMA)
    with pytest.warns(UserWarning, match=r"2 rows were rejected; the first: .*bad.csv: line 3, column 1 \(id\), byte 25"):
        table = wireload.read_csv(path, schema=SCHEMA, on_error="ignore")
    assert table.column("id").to_pylist() == [1, 4]


def test_missing_file_is_an_error_not_a_crash(tmp_path):
    with pytest.raises((wireload.Error, OSError)):
        wireload.read_csv(tmp_path / "does_not_exist.csv")
