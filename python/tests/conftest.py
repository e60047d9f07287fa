"""Shared helpers of the wireload Python test suite.

The suite imports the built package (``import wireload``): run it with the extension on
``PYTHONPATH``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

# the repository root (python/tests/ -> python/ -> root)
REPO_ROOT = Path(__file__).resolve().parents[2]
# the public CSV conformance suites, cloned beside the repository as CI has them
CONFORMANCE_DIR = REPO_ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    manifest = CONFORMANCE_DIR / "csv" / "manifest.json"
    if not manifest.is_file():
        # not a skip: the suite is part of the test set, as it is for the Rust tests
        pytest.fail(
            f"the CSV conformance suite is missing: {manifest} does not exist; "
            "clone shared/ beside the repository"
        )
    return CONFORMANCE_DIR


@pytest.fixture
def con():
    """A fresh in-memory database, closed after the test."""
    import wireload

    connection = wireload.connect()
    try:
        yield connection
    finally:
        connection.close()


def sql_literal(text: str | os.PathLike) -> str:
    """`text` as a SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def child_env() -> dict:
    """The environment for a child Python that must import the same wireload package."""
    import wireload

    package_parent = str(Path(wireload.__file__).resolve().parent.parent)
    env = dict(os.environ)
    rest = env.get("PYTHONPATH")
    env["PYTHONPATH"] = package_parent + (os.pathsep + rest if rest else "")
    return env


# A wide-enough CSV for long loads: BIGINT, DOUBLE, VARCHAR, DATE, no header.
BIG_SCHEMA = "a BIGINT, b DOUBLE, c VARCHAR, d DATE"


@functools.lru_cache(maxsize=None)
def csv_block(megabytes: float = 1.0, seed: int = 3) -> bytes:
    """About `megabytes` of CSV records of BIG_SCHEMA."""
    import random

    rng = random.Random(seed)
    lines = []
    size = 0
    k = 0
    while size < megabytes * 1_000_000:
        line = (
            f"{k},{rng.uniform(-1e6, 1e6):.6f},some text {rng.randint(0, 99999)},"
            f"20{rng.randint(10, 29)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}\n"
        )
        lines.append(line)
        size += len(line)
        k += 1
    return "".join(lines).encode()


def write_copies(path, block: bytes, copies: int) -> None:
    with open(path, "wb") as f:
        for _ in range(copies):
            f.write(block)


def load_rate_mb_per_s(path, megabytes: int = 16) -> float:
    """This build's single-threaded load rate of BIG_SCHEMA files (MB/s), measured on a
    file of `megabytes` written at `path` (the best of three loads: the first one also
    pays for warming up)."""
    import time

    import wireload

    write_copies(path, csv_block(), megabytes)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        wireload.read_csv(path, schema=BIG_SCHEMA, header=False, threads=1)
        best = min(best, time.perf_counter() - start)
    return megabytes / max(best, 1e-3)
