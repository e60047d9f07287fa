"""Ctrl-C (SIGINT) during a load: KeyboardInterrupt, promptly, and the table as it was."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import BIG_SCHEMA, child_env, csv_block, load_rate_mb_per_s, write_copies

SMALL_ROWS = 1234
# SIGINT this long after the child says it starts the load
DELAY = 0.3
# the exception must come within this long after the signal
PROMPT = 2.0
# the uninterrupted load (on one thread, as the child loads) should take about this long, so
# that it is surely still running at DELAY
LOAD_SECONDS = 2.0
MAX_MB = 512

if sys.platform == "win32":  # pragma: no cover
    pytest.skip("POSIX signals", allow_module_level=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sigint")
    small = folder / "small.csv"
    block = csv_block()
    lines = block.splitlines(keepends=True)[:SMALL_ROWS]
    small.write_bytes(b"".join(lines))
    big = folder / "big.csv"
    rate = load_rate_mb_per_s(big)
    write_copies(big, block, max(16, min(MAX_MB, int(rate * LOAD_SECONDS) + 1)))
    yield small, big
    big.unlink()  # hundreds of MB: not left behind in pytest's kept temporary folders


CHILD_COPY = textwrap.dedent(
    """
    import sys, wireload
    small, big, schema = sys.argv[1], sys.argv[2], sys.argv[3]
    lit = lambda p: "'" + p.replace("'", "''") + "'"
    con = wireload.connect(threads=1)
    con.execute(f"CREATE TABLE t ({schema})")
    con.execute(f"COPY t FROM {lit(small)} WITH (FORMAT csv, HEADER false)")
    print("COUNT", con.execute("SELECT count(*) FROM t").fetchone()[0], flush=True)
    print("READY", flush=True)
    try:
        con.execute(f"COPY t FROM {lit(big)} WITH (FORMAT csv, HEADER false, THREADS 1)")
        print("COMPLETED", flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
    print("COUNT", con.execute("SELECT count(*) FROM t").fetchone()[0], flush=True)
    # the table still takes loads
    con.execute(f"COPY t FROM {lit(small)} WITH (FORMAT csv, HEADER false)")
    print("COUNT", con.execute("SELECT count(*) FROM t").fetchone()[0], flush=True)
    print("DONE", flush=True)
    """
)

CHILD_READ_CSV = textwrap.dedent(
    """
    import sys, wireload
    small, big, schema = sys.argv[1], sys.argv[2], sys.argv[3]
    assert wireload.read_csv(small, schema=schema, header=False).num_rows > 0
    print("READY", flush=True)
    try:
        wireload.read_csv(big, schema=schema, header=False, threads=1)
        print("COMPLETED", flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
    # the module still works
    print("COUNT", wireload.read_csv(small, schema=schema, header=False).num_rows, flush=True)
    print("DONE", flush=True)
    """
)


def run_and_interrupt(script: str, small, big, stderr_path):
    """Runs `script`, sends SIGINT DELAY seconds after it prints READY; its output lines and
    the seconds from the signal to the line after it (INTERRUPTED or COMPLETED)."""
    # stdout is read line by line only (communicate() would bypass what readline buffered);
    # stderr goes to a file, so that a full pipe cannot block the child
    with open(stderr_path, "w+") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(small), str(big), BIG_SCHEMA],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=child_env(),
        )
        try:
            lines = []
            while True:
                line = proc.stdout.readline()
                if not line:
                    proc.wait(timeout=60)
                    errors.seek(0)
                    pytest.fail(f"the child stopped before READY: {lines} {errors.read()}")
                lines.append(line.strip())
                if line.strip() == "READY":
                    break
            time.sleep(DELAY)
            proc.send_signal(signal.SIGINT)
            sent = time.monotonic()
            lines.append(proc.stdout.readline().strip())
            answered = time.monotonic() - sent
            lines.extend(line.strip() for line in proc.stdout)
            returncode = proc.wait(timeout=120)
            errors.seek(0)
            assert returncode == 0, f"the child failed ({returncode}): {lines} {errors.read()}"
            return lines, answered
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_interrupted_copy_leaves_the_table_as_it_was(files, tmp_path):
    small, big = files
    lines, answered = run_and_interrupt(CHILD_COPY, small, big, tmp_path / "stderr.txt")
    assert "COMPLETED" not in lines, "the load finished within the delay: the file is too small"
    assert lines == [
        f"COUNT {SMALL_ROWS}",
        "READY",
        "INTERRUPTED",
        f"COUNT {SMALL_ROWS}",
        f"COUNT {2 * SMALL_ROWS}",
        "DONE",
    ]
    assert answered < PROMPT, f"KeyboardInterrupt came {answered:.2f} s after SIGINT"


def test_interrupted_read_csv_raises_keyboard_interrupt_promptly(files, tmp_path):
    small, big = files
    lines, answered = run_and_interrupt(CHILD_READ_CSV, small, big, tmp_path / "stderr.txt")
    assert "COMPLETED" not in lines, "the load finished within the delay: the file is too small"
    assert lines == ["READY", "INTERRUPTED", f"COUNT {SMALL_ROWS}", "DONE"]
    assert answered < PROMPT, f"KeyboardInterrupt came {answered:.2f} s after SIGINT"
