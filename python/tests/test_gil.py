"""Loads and queries release the GIL: a Python thread keeps running while they work."""

from __future__ import annotations

import threading
import time

import pytest

import wireload

from conftest import BIG_SCHEMA, csv_block, load_rate_mb_per_s, sql_literal, write_copies

# a load must last at least this long for the test to mean something
MIN_SECONDS = 0.5
# while the GIL is held by a load, the counting thread cannot run at all; free, it counts
# millions a second
MIN_INCREMENTS = 1000
MAX_MB = 256
SCHEMA = BIG_SCHEMA


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """A file whose single-threaded load takes about 2 * MIN_SECONDS on this build (debug
    or release), sized from the load rate measured on a smaller one."""
    path = tmp_path_factory.mktemp("gil") / "big.csv"
    rate = load_rate_mb_per_s(path)
    megabytes = max(8, min(MAX_MB, int(rate * 2 * MIN_SECONDS) + 1))
    write_copies(path, csv_block(), megabytes)
    yield path
    path.unlink()  # hundreds of MB: not left behind in pytest's kept temporary folders


def count_during(work):
    """How far a spinning Python thread counts while `work` runs in this thread, and how
    long `work` took."""
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        time.sleep(0.05)  # the thread is running
        before = counter[0]
        start = time.perf_counter()
        work()
        elapsed = time.perf_counter() - start
        increments = counter[0] - before
    finally:
        stop.set()
        thread.join()
    return increments, elapsed


def test_read_csv_releases_the_gil(big_file):
    result = {}

    def load():
        result["table"] = wireload.read_csv(big_file, schema=SCHEMA, header=False, threads=1)

    increments, elapsed = count_during(load)
    assert result["table"].num_rows > 0
    assert elapsed >= MIN_SECONDS * 0.5, f"the load took {elapsed:.3f} s: too short to tell"
    assert increments > MIN_INCREMENTS, f"{increments} increments in {elapsed:.3f} s of load"


def test_copy_and_query_release_the_gil(big_file, con):
    con.execute(f"CREATE TABLE t ({SCHEMA})")
    increments, elapsed = count_during(
        lambda: con.execute(
            f"COPY t FROM {sql_literal(big_file)} WITH (FORMAT csv, HEADER false, THREADS 1)"
        )
    )
    assert elapsed >= MIN_SECONDS * 0.5, f"the COPY took {elapsed:.3f} s: too short to tell"
    assert increments > MIN_INCREMENTS, f"{increments} increments in {elapsed:.3f} s of COPY"

    rows = {}

    def query():
        rows["r"] = con.execute(
            "SELECT c, count(*), sum(b), max(d) FROM t GROUP BY c ORDER BY c"
        ).fetchall()

    increments, elapsed = count_during(query)
    assert len(rows["r"]) > 1000
    assert increments > MIN_INCREMENTS * min(1.0, elapsed / MIN_SECONDS), (
        f"{increments} increments in {elapsed:.3f} s of query"
    )
