#!/usr/bin/env bash
# Create bench/.venv with the peers pinned in bench/requirements.txt, and install
# PostgreSQL 15 (server and psql, Debian's packages) for bench/serve.py when missing.
# Idempotent: re-running with unchanged requirements does nothing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
req="$here/requirements.txt"
python="${PYTHON:-python3}"

"$python" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"bench needs Python >= 3.10, found {sys.version.split()[0]}")
PY

if [ ! -x /usr/lib/postgresql/15/bin/postgres ] || ! command -v psql >/dev/null; then
    echo "installing PostgreSQL 15 (Debian's postgresql-15, postgresql-client-15)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 postgresql-client-15 >/dev/null
fi

if [ ! -x "$venv/bin/python" ]; then
    echo "creating $venv" >&2
    "$python" -m venv "$venv"
fi

stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$venv is up to date with $req" >&2
else
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -r "$req"
    echo "$want" > "$stamp"
fi

"$venv/bin/python" - <<'PY'
import duckdb, polars, pyarrow, tableauhyperapi, chdb, matplotlib, psycopg, adbc_driver_flightsql, adbc_driver_postgresql
print(f"duckdb {duckdb.__version__}, polars {polars.__version__}, "
      f"pyarrow {pyarrow.__version__}, tableauhyperapi {tableauhyperapi.__version__}, "
      f"chdb {chdb.__version__}, matplotlib {matplotlib.__version__}")
PY
