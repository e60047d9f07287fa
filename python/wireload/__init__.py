"""wireload: CSV into Arrow at the speed of the wire, and SQL over it, in-process.

>>> import wireload
>>> table = wireload.read_csv("lineitem.csv", schema="id BIGINT, price DECIMAL(15,2)")
>>> con = wireload.connect()
>>> con.execute("CREATE TABLE t (id INT, name TEXT)")
>>> con.execute("COPY t FROM 'data.csv' WITH (FORMAT csv, HEADER true)")
>>> con.execute("SELECT count(*) FROM t").fetchall()

`read_csv` returns a `pyarrow.Table` whose buffers are the ones wireload's loader wrote (no
copy); `connect()` opens an in-memory database with a DB-API 2.0 interface. Loads and queries
release the GIL, Ctrl-C cancels them (a cancelled load leaves every table as it was), and
errors are DB-API exceptions; a bad CSV value raises `DataError` with `file`, `line`,
`column`, `column_name` and `byte_offset` attributes.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import os as _os
import sys as _sys
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence, Union

import pyarrow as _pa

from . import _native
from ._native import (
    ArrowResult,
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import polars

__all__ = [
    "BINARY",
    "Binary",
    "DATETIME",
    "Date",
    "DateFromTicks",
    "NUMBER",
    "ROWID",
    "STRING",
    "Time",
    "TimeFromTicks",
    "Timestamp",
    "TimestampFromTicks",
    "ArrowResult",
    "Connection",
    "Cursor",
    "DataError",
    "DatabaseError",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Warning",
    "apilevel",
    "connect",
    "load_csv",
    "paramstyle",
    "read_csv",
    "threadsafety",
]

__version__: str = _native.__version__

#: DB-API 2.0 level.
apilevel = "2.0"
#: Threads may share the module, not connections.
threadsafety = 1
#: Placeholders are question marks (`WHERE id = ?`); `$1`, `$2`... work too.
paramstyle = "qmark"

# DB-API 2.0 constructors of parameter values.
Date = _dt.date
Time = _dt.time
Timestamp = _dt.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> _dt.date:  # noqa: N802 (DB-API's name)
    """The local date of a Unix time."""
    return _dt.date.fromtimestamp(ticks)


def TimeFromTicks(ticks: float) -> _dt.time:  # noqa: N802
    """The local time of day of a Unix time."""
    return _dt.datetime.fromtimestamp(ticks).time()


def TimestampFromTicks(ticks: float) -> _dt.datetime:  # noqa: N802
    """The local date and time of a Unix time."""
    return _dt.datetime.fromtimestamp(ticks)


class _TypeObject:
    """A DB-API 2.0 type object: equal to the Arrow types of `cursor.description` it covers."""

    def __init__(self, name: str, test: Any) -> None:
        self._name = name
        self._test = test

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _pa.DataType) and bool(self._test(other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._name)

    def __repr__(self) -> str:
        return f"wireload.{self._name}"


_t = _pa.types
#: Text columns.
STRING = _TypeObject(
    "STRING", lambda t: _t.is_string(t) or _t.is_large_string(t) or _t.is_string_view(t)
)
#: Binary columns.
BINARY = _TypeObject(
    "BINARY", lambda t: _t.is_binary(t) or _t.is_large_binary(t) or _t.is_binary_view(t)
)
#: Numeric columns (integers, floats, decimals).
NUMBER = _TypeObject(
    "NUMBER", lambda t: _t.is_integer(t) or _t.is_floating(t) or _t.is_decimal(t)
)
#: Date, time and timestamp columns.
DATETIME = _TypeObject(
    "DATETIME", lambda t: _t.is_date(t) or _t.is_timestamp(t) or _t.is_time(t)
)
#: Row ids (wireload has none).
ROWID = _TypeObject("ROWID", lambda t: False)

PathLike = Union[str, "_os.PathLike[str]"]
Schema = Union[None, str, _pa.Schema, Mapping[str, Union[str, _pa.DataType]]]


def _interactive() -> bool:
    """True when a progress bar on stderr would be seen by a person."""
    try:
        return _sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _paths(path_or_paths: PathLike | Sequence[PathLike]) -> list[str]:
    if isinstance(path_or_paths, (str, bytes)) or hasattr(path_or_paths, "__fspath__"):
        return [_os.fsdecode(_os.fspath(path_or_paths))]
    paths = [_os.fsdecode(_os.fspath(p)) for p in path_or_paths]
    if not paths:
        raise ProgrammingError("read_csv needs at least one path")
    return paths


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_type(t: _pa.DataType) -> str:
    """The SQL type wireload stores an Arrow type as."""
    pt = _pa.types
    if pt.is_boolean(t):
        return "BOOLEAN"
    if pt.is_int8(t) or pt.is_int16(t) or pt.is_uint8(t):
        return "SMALLINT"
    if pt.is_int32(t) or pt.is_uint16(t):
        return "INTEGER"
    if pt.is_int64(t) or pt.is_uint32(t):
        return "BIGINT"
    if pt.is_uint64(t):
        return "DECIMAL(20,0)"
    if pt.is_float16(t) or pt.is_float32(t):
        return "REAL"
    if pt.is_float64(t):
        return "DOUBLE PRECISION"
    if pt.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pt.is_date(t):
        return "DATE"
    if pt.is_timestamp(t) and t.tz is None:
        return "TIMESTAMP"
    if pt.is_string(t) or pt.is_large_string(t) or pt.is_string_view(t):
        return "TEXT"
    raise NotSupportedError(f"wireload has no column type for Arrow type {t}")


def _schema_sql(schema: Schema) -> Optional[str]:
    """A schema argument as a SQL column list ("a INT, b TEXT"), None for none."""
    if schema is None or isinstance(schema, str):
        return schema
    if isinstance(schema, _pa.Schema):
        items = [(f.name, f.type, f.nullable) for f in schema]
    elif isinstance(schema, Mapping):
        items = [(name, ty, True) for name, ty in schema.items()]
    else:
        raise ProgrammingError(
            "schema must be a SQL column list, a pyarrow.Schema or a dict of name to type, "
            f"not {type(schema).__name__}"
        )
    columns = []
    for name, ty, nullable in items:
        sql = ty if isinstance(ty, str) else _sql_type(ty)
        columns.append(f"{_quote_ident(name)} {sql}{'' if nullable else ' NOT NULL'}")
    return ", ".join(columns)


def load_csv(
    path_or_paths: PathLike | Sequence[PathLike],
    schema: Schema = None,
    delimiter: Optional[str] = None,
    quote: Optional[str] = '"',
    escape: Optional[str] = None,
    header: Optional[bool] = None,
    null: str = "",
    threads: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
    on_error: str = "stop",
    progress: Optional[bool] = None,
    memory_map: Optional[bool] = None,
    all_varchar: bool = False,
    date_format: Optional[str] = None,
    timestamp_format: Optional[str] = None,
    filename: bool = False,
) -> ArrowResult:
    """Loads CSV files as `read_csv` does and returns wireload's own record batches (an
    `ArrowResult`, readable by any Arrow library through `__arrow_c_stream__`)."""
    return _native.load_csv(
        _paths(path_or_paths),
        schema=_schema_sql(schema),
        delimiter=delimiter,
        quote=quote,
        escape=escape,
        header=header,
        null=null,
        threads=threads,
        columns=None if columns is None else list(columns),
        on_error=on_error,
        progress=_interactive() if progress is None else progress,
        memory_map=memory_map,
        all_varchar=all_varchar,
        date_format=date_format,
        timestamp_format=timestamp_format,
        filename=filename,
    )


def read_csv(
    path_or_paths: PathLike | Sequence[PathLike],
    schema: Schema = None,
    delimiter: Optional[str] = None,
    quote: Optional[str] = '"',
    escape: Optional[str] = None,
    header: Optional[bool] = None,
    null: str = "",
    threads: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
    on_error: str = "stop",
    progress: Optional[bool] = None,
    memory_map: Optional[bool] = None,
    all_varchar: bool = False,
    date_format: Optional[str] = None,
    timestamp_format: Optional[str] = None,
    filename: bool = False,
) -> _pa.Table:
    """Loads CSV files with wireload's parallel loader into a `pyarrow.Table`.

    The table's buffers are the ones the loader wrote: nothing is copied on the way.
    Gzip and zstd files are decompressed as they load (found by their magic bytes).

    Args:
        path_or_paths: a file, or a list of files loaded one after the other into one table.
        schema: the columns: a SQL column list (``"id BIGINT, name TEXT, day DATE"``), a
            `pyarrow.Schema`, or a dict of name to SQL type or Arrow type. None: the
            columns are named after the header (``column1``... without one) and their types
            inferred from samples spread over the whole of the first file; a value the
            samples did not show widens its column (BIGINT to DOUBLE to TEXT...) and the
            load runs again, with a `UserWarning` saying so.
        delimiter: the field delimiter (one ASCII character); None: detected (``,``
            with a schema).
        quote: the quote character; None reads no quoting.
        escape: the escape character inside quotes; None: a quote is doubled (RFC 4180).
        header: the first line of each file names the columns and is not data; None:
            detected (a header with a schema).
        null: an unquoted field equal to this is NULL (a quoted one is text).
        threads: load threads; None: every core.
        columns: the columns to return, in this order (all are parsed).
        on_error: ``"stop"``: the first bad row fails the load and returns nothing;
            ``"ignore"``: bad rows are skipped and every good row is loaded, with a
            `UserWarning` giving their count and the first one's position and error.
        progress: draw a progress bar on stderr; None: when stderr is a terminal.
        memory_map: True or None (the default): map the files into memory, handing each
            part's pages back once it is parsed, so the load's peak memory is about the
            table's; False: read them in blocks (slower: every byte is copied once).
        all_varchar: without a schema, every column is text, named after the header, and
            the dialect is not detected (the arguments' defaults: ``,``, a header).
        date_format: how DATE values are written when not ISO, strftime-style
            (``"%d/%m/%Y"``; ``%Y %y %m %d %b %B``); ISO dates are read too. None: ISO, or
            detected without a schema.
        timestamp_format: the same for TIMESTAMP values (``"%m/%d/%Y %I:%M %p"``; also
            ``%H %I %M %S %f %p``).
        filename: add a last column ``filename`` (text) holding the file each row comes
            from (useful with several files).

    Raises:
        DataError: a bad value or record, with its ``file``, ``line``, ``column``,
            ``column_name`` and ``byte_offset``.
        OperationalError: a file that cannot be read.
        ProgrammingError: a bad schema or option.
        KeyboardInterrupt: Ctrl-C during the load.
    """
    return _table(
        load_csv(
            path_or_paths,
            schema=schema,
            delimiter=delimiter,
            quote=quote,
            escape=escape,
            header=header,
            null=null,
            threads=threads,
            columns=columns,
            on_error=on_error,
            progress=progress,
            memory_map=memory_map,
            all_varchar=all_varchar,
            date_format=date_format,
            timestamp_format=timestamp_format,
            filename=filename,
        )
    )


def _table(result: ArrowResult) -> _pa.Table:
    """A wireload result as a pyarrow.Table over the same buffers (`pa.table()` would work
    too, but it first imports pandas to look whether the result is a DataFrame: 0.2 s)."""
    return _pa.RecordBatchReader.from_stream(result).read_all()


_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)


def _tag(value: Any) -> tuple[str, Any]:
    """A parameter as (kind, value) for the native side."""
    if value is None:
        return ("null", None)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ("bytes", bytes(value))
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = value - _EPOCH
        return ("timestamp", (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds)
    if isinstance(value, _dt.date):
        return ("date", (value - _EPOCH_DATE).days)
    if isinstance(value, _decimal.Decimal):
        if not value.is_finite():
            raise ProgrammingError(f"parameter {value} is not a finite decimal")
        return ("decimal", str(value))
    raise ProgrammingError(f"unsupported parameter type {type(value).__name__}: {value!r}")


def _tags(parameters: Optional[Sequence[Any]]) -> Optional[list[tuple[str, Any]]]:
    if parameters is None:
        return None
    if isinstance(parameters, Mapping):
        raise ProgrammingError("paramstyle is qmark: give the parameters as a sequence")
    if isinstance(parameters, (str, bytes)):
        raise ProgrammingError("the parameters are a sequence of values, not one string")
    tags = [_tag(v) for v in parameters]
    # no parameters is a statement without placeholders (DDL and COPY cannot be prepared)
    return tags or None


class Cursor:
    """A DB-API 2.0 cursor: runs statements and holds the last one's result."""

    #: Rows `fetchmany()` returns by default.
    arraysize: int = 1

    def __init__(self, connection: "Connection") -> None:
        self.connection = connection
        self._table: Optional[_pa.Table] = None
        self._rows: Optional[list[tuple[Any, ...]]] = None
        self._pos = 0
        self._closed = False
        #: Rows the last COPY loaded or INSERT/UPDATE/DELETE changed; -1 otherwise.
        self.rowcount: int = -1
        #: The last statement's message (``CREATE TABLE``, ``INSERT 0 3``, a load report...).
        self.statusmessage: Optional[str] = None
        #: Name and type of each result column (DB-API 7-tuples); None without rows.
        self.description: Optional[list[tuple[Any, ...]]] = None

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("the cursor is closed")

    def execute(self, operation: str, parameters: Optional[Sequence[Any]] = None) -> "Cursor":
        """Runs a statement (or, without parameters, a script of several; the cursor holds
        the last one's result). Placeholders are ``?`` (or ``$1``, ``$2``...)."""
        self._check()
        kind, rowcount, message, rows = self.connection._db().execute(
            operation, _tags(parameters), _interactive()
        )
        self._table = None if rows is None else _table(rows)
        self._rows = None
        self._pos = 0
        self.rowcount = rowcount
        self.statusmessage = message or None
        if self._table is None:
            self.description = None
        else:
            self.description = [
                (f.name, f.type, None, None, None, None, f.nullable) for f in self._table.schema
            ]
        return self

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[Any]]) -> "Cursor":
        """Runs a statement once for each parameter sequence; rowcount is the total."""
        total = 0
        for parameters in seq_of_parameters:
            self.execute(operation, parameters)
            total += max(self.rowcount, 0)
        self.rowcount = total
        return self

    def _result(self) -> _pa.Table:
        self._check()
        if self._table is None:
            raise ProgrammingError("the last statement returned no rows")
        return self._table

    def _materialize(self) -> list[tuple[Any, ...]]:
        if self._rows is None:
            table = self._result()
            columns = [c.to_pylist() for c in table.columns]
            self._rows = list(zip(*columns)) if columns else [() for _ in range(table.num_rows)]
        return self._rows

    def fetchone(self) -> Optional[tuple[Any, ...]]:
        """The next row, or None after the last."""
        rows = self._materialize()
        if self._pos >= len(rows):
            return None
        self._pos += 1
        return rows[self._pos - 1]

    def fetchmany(self, size: Optional[int] = None) -> list[tuple[Any, ...]]:
        """The next `size` rows (`arraysize` by default)."""
        rows = self._materialize()
        n = self.arraysize if size is None else size
        out = rows[self._pos : self._pos + n]
        self._pos += len(out)
        return out

    def fetchall(self) -> list[tuple[Any, ...]]:
        """The remaining rows, as tuples of Python values."""
        rows = self._materialize()
        out = rows[self._pos :]
        self._pos = len(rows)
        return out

    def arrow(self) -> _pa.Table:
        """The result as a `pyarrow.Table` (wireload's buffers, not a copy)."""
        return self._result()

    def df(self) -> "pandas.DataFrame":
        """The result as a pandas DataFrame of Arrow-backed columns (`pandas.ArrowDtype`)."""
        import pandas as pd

        return self._result().to_pandas(types_mapper=pd.ArrowDtype)

    def pl(self) -> "polars.DataFrame":
        """The result as a polars DataFrame."""
        import polars as pl

        return pl.from_arrow(self._result())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The result as an Arrow C stream (the Arrow PyCapsule interface)."""
        return self._result().__arrow_c_stream__(requested_schema)

    def setinputsizes(self, sizes: Any) -> None:
        """Does nothing (DB-API 2.0)."""

    def setoutputsize(self, size: Any, column: Any = None) -> None:
        """Does nothing (DB-API 2.0)."""

    def close(self) -> None:
        """Drops the result; later calls raise InterfaceError."""
        self._closed = True
        self._table = None
        self._rows = None

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while True:
            row = self.fetchone()
            if row is None:
                return
            yield row

    def __enter__(self) -> "Cursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Connection:
    """An in-memory wireload database (DB-API 2.0 connection).

    Statements run in autocommit mode unless a ``BEGIN`` opened a transaction, which
    `commit()` and `rollback()` end.
    """

    def __init__(self, threads: Optional[int] = None) -> None:
        self._native = _native.Database(threads)

    def _db(self) -> "_native.Database":
        if self._native.closed:
            raise InterfaceError("the connection is closed")
        return self._native

    def cursor(self) -> Cursor:
        """A new cursor."""
        self._db()
        return Cursor(self)

    def execute(self, operation: str, parameters: Optional[Sequence[Any]] = None) -> Cursor:
        """Runs a statement (or a script) on a new cursor and returns the cursor."""
        return self.cursor().execute(operation, parameters)

    def executemany(self, operation: str, seq_of_parameters: Sequence[Sequence[Any]]) -> Cursor:
        """Runs a statement once for each parameter sequence on a new cursor."""
        return self.cursor().executemany(operation, seq_of_parameters)

    def register(self, name: str, data: Any) -> "Connection":
        """Makes `data` queryable by SQL as the read-only view `name`, without copying it:
        anything with ``__arrow_c_stream__`` (a pyarrow Table or RecordBatchReader, a polars
        DataFrame...) or a pandas DataFrame."""
        if not hasattr(data, "__arrow_c_stream__"):
            try:
                import pandas as pd
            except ImportError:  # pragma: no cover
                pd = None
            if pd is not None and isinstance(data, pd.DataFrame):
                data = _pa.Table.from_pandas(data, preserve_index=False)
        self._db().register(name, data)
        return self

    def unregister(self, name: str) -> "Connection":
        """Removes a view made by `register`."""
        self._db().unregister(name)
        return self

    def tables(self) -> list[str]:
        """The names of the tables (not the registered views)."""
        return self._db().tables()

    def commit(self) -> None:
        """Commits the open transaction, if any."""
        if self._db().in_transaction:
            self.execute("COMMIT")

    def rollback(self) -> None:
        """Rolls the open transaction back, if any."""
        if self._db().in_transaction:
            self.execute("ROLLBACK")

    def close(self) -> None:
        """Drops every table and closes the connection."""
        self._native.close()

    @property
    def closed(self) -> bool:
        """True once closed."""
        return self._native.closed

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self._native.closed and self._native.in_transaction:
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        self.close()


def connect(database: str = ":memory:", threads: Optional[int] = None) -> Connection:
    """Opens a new in-memory database (`threads` for loads and queries; None: every core).

    wireload keeps its tables in memory only: `database` must be ``":memory:"`` (use
    ``EXPORT DATABASE`` / ``IMPORT DATABASE`` to keep them). To reach a wireload server, use
    a PostgreSQL client (psycopg): the server speaks PostgreSQL's protocol.
    """
    if database != ":memory:":
        raise NotSupportedError(
            f"wireload is in-memory: connect() takes ':memory:', not {database!r}; "
            "use EXPORT DATABASE / IMPORT DATABASE to keep tables"
        )
    return Connection(threads=threads)
