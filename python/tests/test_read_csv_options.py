"""read_csv's options and types, each compared with pyarrow's reading of the same file
with the same options, or with the values written."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import wireload

ALL_TYPES = (
    "a SMALLINT, b INT, c BIGINT, d REAL, e DOUBLE, f BOOLEAN, g VARCHAR, h TEXT, "
    "i DATE, j TIMESTAMP, k DECIMAL(10,3)"
)
ALL_ARROW = pa.schema(
    [
        ("a", pa.int16()),
        ("b", pa.int32()),
        ("c", pa.int64()),
        ("d", pa.float32()),
        ("e", pa.float64()),
        ("f", pa.bool_()),
        ("g", pa.string()),
        ("h", pa.string()),
        ("i", pa.date32()),
        ("j", pa.timestamp("us")),
        ("k", pa.decimal128(10, 3)),
    ]
)
ALL_TEXT = (
    "a,b,c,d,e,f,g,h,i,j,k\n"
    "-32768,2147483647,-9223372036854775808,1.5,-2.25e10,true,x,\"y, z\",2024-02-29,"
    "2024-02-29 23:59:59.123456,1234567.125\n"
    "32767,-2147483648,9223372036854775807,-0.5,0,false,\"\",,1970-01-01,1970-01-01 00:00:00,-0.001\n"
    ",,,,,,,,,,\n"
)


def pyarrow_read(path, schema: pa.Schema, **parse):
    return pacsv.read_csv(
        path,
        parse_options=pacsv.ParseOptions(newlines_in_values=True, **parse),
        convert_options=pacsv.ConvertOptions(
            column_types=schema,
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )


def test_sql_types_map_to_arrow_types(tmp_path):
    path = tmp_path / "types.csv"
    path.write_text(ALL_TEXT)
    got = wireload.read_csv(path, schema=ALL_TYPES)
    assert got.schema == ALL_ARROW
    assert got.equals(pyarrow_read(path, ALL_ARROW))
    first = got.to_pylist()[0]
    assert first["j"] == dt.datetime(2024, 2, 29, 23, 59, 59, 123456)
    assert first["k"] == Decimal("1234567.125")
    assert got.to_pylist()[2] == {name: None for name in ALL_ARROW.names}


def test_arrow_schema_and_dict_schema(tmp_path):
    path = tmp_path / "types.csv"
    path.write_text(ALL_TEXT)
    reference = wireload.read_csv(path, schema=ALL_TYPES)
    assert wireload.read_csv(path, schema=ALL_ARROW).equals(reference)
    assert wireload.read_csv(path, schema={f.name: f.type for f in ALL_ARROW}).equals(reference)
    sql_types = [part.split()[1] for part in ALL_TYPES.split(", ")]
    as_dict = dict(zip(ALL_ARROW.names, sql_types))
    as_dict["k"] = "DECIMAL(10,3)"
    assert wireload.read_csv(path, schema=as_dict).equals(reference)


def test_out_of_range_integer_is_a_data_error(tmp_path):
    path = tmp_path / "range.csv"
    path.write_text("a\n1\n32768\n")
    with pytest.raises(wireload.DataError) as info:
        wireload.read_csv(path, schema="a SMALLINT")
    assert (info.value.line, info.value.column, info.value.column_name) == (3, 1, "a")


def test_null_string(tmp_path):
    path = tmp_path / "null.csv"
    path.write_text('a,b\nNULL,"NULL"\n,x\n"",NULL\n')
    got = wireload.read_csv(path, null="NULL")
    # unquoted NULL is NULL; a quoted one and an empty field are strings
    assert got.to_pylist() == [
        {"a": None, "b": "NULL"},
        {"a": "", "b": "x"},
        {"a": "", "b": None},
    ]
    reference = pacsv.read_csv(
        path,
        convert_options=pacsv.ConvertOptions(
            column_types={"a": pa.string(), "b": pa.string()},
            null_values=["NULL"],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    assert got.equals(reference)


def test_quote_none_reads_quotes_as_text(tmp_path):
    path = tmp_path / "noquote.csv"
    path.write_text('a|b\n"x|y"\n\'q\'|"\n')
    got = wireload.read_csv(path, delimiter="|", quote=None)
    assert got.to_pylist() == [{"a": '"x', "b": 'y"'}, {"a": "'q'", "b": '"'}]
    assert got.equals(pyarrow_read(path, pa.schema([("a", pa.string()), ("b", pa.string())]),
                                   delimiter="|", quote_char=False))


def test_backslash_escape(tmp_path):
    path = tmp_path / "escape.csv"
    path.write_text('a,b\n"say \\"hi\\"",1\n"back\\\\slash",2\n')
    got = wireload.read_csv(path, escape="\\", schema="a TEXT, b INT")
    assert got.column("a").to_pylist() == ['say "hi"', "back\\slash"]
    assert got.equals(pyarrow_read(path, pa.schema([("a", pa.string()), ("b", pa.int32())]),
                                   double_quote=False, escape_char="\\"))


def test_custom_quote_and_delimiter(tmp_path):
    path = tmp_path / "custom.csv"
    path.write_text("a;b\n'x;y';'it''s'\n")
    got = wireload.read_csv(path, delimiter=";", quote="'")
    assert got.to_pylist() == [{"a": "x;y", "b": "it's"}]


def test_no_header_names_columns_by_position(tmp_path):
    path = tmp_path / "noheader.csv"
    path.write_text("1,2,3\n4,5,6\n")
    got = wireload.read_csv(path, header=False)
    assert got.column_names == ["column1", "column2", "column3"]
    assert got.schema.types == [pa.int64()] * 3
    assert got.column("column3").to_pylist() == [3, 6]
    got = wireload.read_csv(path, header=False, all_varchar=True)
    assert got.schema.types == [pa.string()] * 3
    assert got.column("column3").to_pylist() == ["3", "6"]


def test_header_is_skipped_in_every_file(tmp_path):
    paths = []
    for i in range(3):
        path = tmp_path / f"part{i}.csv"
        path.write_text(f"a,b\n{i},x{i}\n{i},y{i}\n")
        paths.append(path)
    got = wireload.read_csv(paths, schema="a INT, b TEXT")
    assert got.column("a").to_pylist() == [0, 0, 1, 1, 2, 2]
    assert got.column("b").to_pylist() == ["x0", "y0", "x1", "y1", "x2", "y2"]


def test_memory_map_gives_the_same_table(tmp_path):
    path = tmp_path / "types.csv"
    path.write_text(ALL_TEXT * 1)
    mapped = wireload.read_csv(path, schema=ALL_TYPES, memory_map=True)
    assert mapped.equals(wireload.read_csv(path, schema=ALL_TYPES, memory_map=False))
    assert mapped.equals(wireload.read_csv(path, schema=ALL_TYPES))


def test_small_blocks_give_the_same_table(tmp_path):
    # records cut across many 64 KiB blocks (the smallest the native side takes)
    path = tmp_path / "many.csv"
    header, body = ALL_TEXT.split("\n", 1)
    path.write_text(header + "\n" + body * 2000)
    mapped = wireload._native.load_csv([str(path)], schema=ALL_TYPES, memory_map=True)
    streamed = wireload._native.load_csv(
        [str(path)], schema=ALL_TYPES, memory_map=False, block_bytes=1 << 16
    )
    assert streamed.num_batches > 1
    assert wireload.read_csv(path, schema=ALL_TYPES).equals(
        pa.RecordBatchReader.from_stream(streamed).read_all()
    )
    assert pa.RecordBatchReader.from_stream(mapped).read_all().equals(
        pa.RecordBatchReader.from_stream(streamed).read_all()
    )


def test_bad_options_are_programming_errors(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(wireload.ProgrammingError):
        wireload.read_csv(path, columns=["nope"])
    with pytest.raises(wireload.ProgrammingError):
        wireload.read_csv(path, delimiter="::")
    with pytest.raises(wireload.ProgrammingError):
        wireload.read_csv(path, threads=0)
    with pytest.raises(wireload.ProgrammingError):
        wireload.read_csv([])


def test_unknown_type_in_the_schema_is_a_programming_error(tmp_path):
    # read_csv's docstring: "ProgrammingError: a bad schema or option"; PostgreSQL: type
    # "nosuchtype" does not exist, SQLSTATE 42704
    path = tmp_path / "ok.csv"
    path.write_text("a\n1\n")
    with pytest.raises(wireload.ProgrammingError) as info:
        wireload.read_csv(path, schema="a NOSUCHTYPE")
    assert info.value.sqlstate == "42704"


def test_progress_bar_changes_nothing(tmp_path):
    path = tmp_path / "types.csv"
    path.write_text(ALL_TEXT)
    assert wireload.read_csv(path, schema=ALL_TYPES, progress=True).equals(
        wireload.read_csv(path, schema=ALL_TYPES, progress=False)
    )


def test_filename_names_each_rows_file(tmp_path):
    a = tmp_path / "a.csv"
    b = tmp_path / "b.csv"
    a.write_text("id,v\n1,x\n2,y\n")
    b.write_text("id,v\n3,z\n")
    want = [str(a), str(a), str(b)]
    # with inferred columns, with a schema and with all_varchar
    for kwargs in ({}, {"schema": "id INT, v TEXT"}, {"all_varchar": True}):
        t = wireload.read_csv([a, b], filename=True, **kwargs)
        assert t.column_names == ["id", "v", "filename"], kwargs
        assert t.column("filename").to_pylist() == want, kwargs
        assert t.column("v").to_pylist() == ["x", "y", "z"], kwargs
    # chosen among the columns
    t = wireload.read_csv([a, b], filename=True, columns=["filename", "id"])
    assert t.column_names == ["filename", "id"]
    assert t.column("id").to_pylist() == [1, 2, 3]
    # a file that has such a column already
    clash = tmp_path / "clash.csv"
    clash.write_text("filename,id\nx,1\n")
    for kwargs in ({}, {"schema": "filename TEXT, id INT"}):
        with pytest.raises(wireload.ProgrammingError, match="filename"):
            wireload.read_csv(clash, filename=True, **kwargs)
