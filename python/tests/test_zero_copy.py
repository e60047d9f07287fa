"""Results reach pyarrow and polars without a copy: every buffer a consumer sees is the
buffer wireload filled (same address)."""

from __future__ import annotations

import random

import polars as pl
import pyarrow as pa
import pytest

import wireload

ROWS = 150_000
SCHEMA = "i BIGINT, f DOUBLE, s VARCHAR, d DATE, m DECIMAL(12,2), b BOOLEAN, n BIGINT, g DOUBLE"


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    rng = random.Random(7)
    lines = []
    for k in range(ROWS):
        n = "" if k % 3 == 0 else str(rng.randint(-(10**12), 10**12))  # NULLs: a validity buffer
        g = "" if k % 5 == 0 else repr(rng.uniform(-1e6, 1e6))
        lines.append(
            f"{k},{rng.uniform(-1e9, 1e9)!r},text {rng.randint(0, 10**6)},"
            f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d},{rng.randint(-99999, 99999) / 100:.2f},"
            f"{rng.choice(['true', 'false'])},{n},{g}"
        )
    path = tmp_path_factory.mktemp("zero_copy") / "data.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def pyarrow_addresses(table: pa.Table) -> list:
    """Buffer addresses batch by batch, column by column, in Arrow C data order (children
    after parents: Array.buffers() lists them so), None for an absent buffer."""
    out = []
    for batch in table.to_batches():
        for column in batch.columns:
            out.extend(None if b is None else b.address for b in column.buffers())
    return out


def normalized(addresses) -> list:
    """None and 0 both mean an absent buffer."""
    return [a if a else None for a in addresses]


def test_pyarrow_sees_the_buffers_wireload_filled(csv_file):
    result = wireload.load_csv(csv_file, schema=SCHEMA, header=False, threads=2)
    assert isinstance(result, wireload.ArrowResult)
    assert hasattr(result, "__arrow_c_stream__") and hasattr(result, "__arrow_c_schema__")
    assert result.num_rows == ROWS
    addresses = normalized(result.buffer_addresses())

    table = pa.table(result)
    assert table.num_rows == ROWS
    assert table.schema.field("n").type == pa.int64()
    assert table.column("n").null_count == ROWS // 3  # k % 3 == 0
    seen = normalized(pyarrow_addresses(table))
    assert len(seen) == len(addresses)
    assert seen == addresses
    # the comparison is of real buffers: the data buffers are all there
    present = [a for a in addresses if a is not None]
    data_buffers_per_batch = 9  # one per column, two for the string column
    assert len(present) >= data_buffers_per_batch * len(table.to_batches())
    # the NULL column has validity buffers, exported as they are
    assert any(
        batch.column(6).buffers()[0] is not None for batch in table.to_batches() if batch.column(6).null_count
    )


def test_the_schema_capsule_describes_the_stream(csv_file):
    result = wireload.load_csv(csv_file, schema=SCHEMA, header=False)
    schema = pa.schema(result)  # through __arrow_c_schema__
    assert schema.names == ["i", "f", "s", "d", "m", "b", "n", "g"]
    assert schema == pa.table(result).schema


def test_the_stream_can_be_read_twice_without_copies(csv_file):
    # each __arrow_c_stream__ call exports the same buffers again
    result = wireload.load_csv(csv_file, schema=SCHEMA, header=False)
    first = normalized(pyarrow_addresses(pa.table(result)))
    second = normalized(pyarrow_addresses(pa.table(result)))
    assert first == second == normalized(result.buffer_addresses())


def test_read_csv_is_the_table_of_load_csv(csv_file):
    assert wireload.read_csv(csv_file, schema=SCHEMA, header=False).equals(
        pa.table(wireload.load_csv(csv_file, schema=SCHEMA, header=False))
    )


def test_polars_sees_the_same_primitive_buffers(csv_file):
    result = wireload.load_csv(csv_file, schema=SCHEMA, header=False, threads=2)
    table = pa.table(result)
    # pl.from_arrow imports pyarrow's buffers through the Arrow C data interface without a
    # copy, as long as it does not rechunk (rechunk=True, the default, concatenates the
    # batches into new buffers). To read a polars buffer's address back, each chunk of the
    # Series (Series.get_chunks(), one single-chunk Series per batch) is exported with
    # to_arrow(), which also shares the buffer; Series.to_arrow() on the whole Series would
    # rechunk (a copy, and in place) and is not used. Equal addresses thus show that neither
    # direction copied.
    frame = pl.from_arrow(table, rechunk=False)
    for name, arrow_type in [("i", pa.int64()), ("f", pa.float64()), ("n", pa.int64()), ("g", pa.float64())]:
        column = table.column(name)
        series = frame[name]
        chunks = series.get_chunks()
        assert len(chunks) == column.num_chunks
        for chunk_pa, chunk_pl in zip(column.chunks, chunks):
            exported = chunk_pl.to_arrow()
            assert exported.type == arrow_type
            # data buffer: the one wireload filled
            assert exported.buffers()[1].address == chunk_pa.buffers()[1].address, name
            # validity, where there are NULLs
            if chunk_pa.null_count:
                assert exported.buffers()[0].address == chunk_pa.buffers()[0].address, name
        # and the values are right
        assert series.to_list() == column.to_pylist()


def test_polars_reads_the_result_directly(csv_file):
    # polars takes the ArrowResult through __arrow_c_stream__ (no pyarrow in between)
    result = wireload.load_csv(csv_file, schema=SCHEMA, header=False)
    frame = pl.DataFrame(result)
    assert frame.height == ROWS
    assert frame["i"].to_list()[:3] == [0, 1, 2]
    assert frame.schema["d"] == pl.Date
