"""read_csv without a schema: the dialect and the column types inferred from the file."""

import gzip

import pyarrow as pa
import pytest

import wireload


def test_types_and_dialect_are_inferred(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(
        "Person|Age|Born|Score|Member\n"
        "alice|30|1994-03-01|1.5|true\n"
        "bob|41|1983-11-20|2|false\n"
        '"carol|jr"||2001-07-04||\n'
    )
    table = wireload.read_csv(path)
    assert table.schema == pa.schema(
        [
            ("Person", pa.string()),
            ("Age", pa.int64()),
            ("Born", pa.date32()),
            ("Score", pa.float64()),
            ("Member", pa.bool_()),
        ]
    )
    assert table.column("Person").to_pylist() == ["alice", "bob", "carol|jr"]
    assert table.column("Age").to_pylist() == [30, 41, None]


def test_a_value_the_sample_missed_widens_its_column(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("id,v\n1,10\n2,20\n")
    b = tmp_path / "b.csv"
    b.write_text("id,v\n3,2.5\n")
    with pytest.warns(UserWarning, match=r'column "v" re-planned from BIGINT to DOUBLE'):
        table = wireload.read_csv([a, b])
    assert table.column("v").to_pylist() == [10.0, 20.0, 2.5]


def test_gzip_files_load_as_the_plain_file(tmp_path):
    text = "a,b\n" + "".join(f"{i},x{i}\n" for i in range(5000))
    plain = tmp_path / "t.csv"
    plain.write_text(text)
    packed = tmp_path / "t.csv.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    for memory_map in (None, True, False):
        got = wireload.read_csv(packed, memory_map=memory_map)
        assert got.equals(wireload.read_csv(plain))
    assert got.num_rows == 5000


def test_an_explicit_dialect_is_kept(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("1;2\n3;4\n")
    table = wireload.read_csv(path, delimiter=";", header=False)
    assert table.column_names == ["column1", "column2"]
    assert table.column("column2").to_pylist() == [2, 4]


def test_dates_in_other_formats(tmp_path):
    import datetime as dt

    path = tmp_path / "orders.csv"
    path.write_text("id,ordered,shipped\n1,25/12/2023,12/26/2023 3:30 PM\n2,05/01/2024,1/6/2024 9:00 AM\n")
    # inferred: day first, 12-hour times
    table = wireload.read_csv(path)
    assert table.column("ordered").to_pylist() == [dt.date(2023, 12, 25), dt.date(2024, 1, 5)]
    assert table.column("shipped").to_pylist() == [
        dt.datetime(2023, 12, 26, 15, 30),
        dt.datetime(2024, 1, 6, 9, 0),
    ]
    # given, with a schema
    table = wireload.read_csv(
        path,
        schema="id INT, ordered DATE, shipped TIMESTAMP",
        date_format="%d/%m/%Y",
        timestamp_format="%m/%d/%Y %I:%M %p",
    )
    assert table.column("ordered").to_pylist() == [dt.date(2023, 12, 25), dt.date(2024, 1, 5)]
    with pytest.raises(wireload.DataError) as e:
        wireload.read_csv(path, schema="id INT, ordered DATE, shipped TEXT", date_format="%m/%d/%Y")
    assert e.value.line == 2
    with pytest.raises(wireload.ProgrammingError, match="invalid date/time format"):
        wireload.read_csv(path, date_format="%d/%m")
