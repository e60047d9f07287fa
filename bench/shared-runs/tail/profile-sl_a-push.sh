#!/bin/bash
# perf profile of the server during one SL_A push of lineitem (no queries), server on CPU 1
set -e
cd /work/main
COLS=$(python3 -c "
import re
s=open('bench/compressed.py').read()
m=re.search(r'LINEITEM = \((.*?)\)\n', s, re.S)
print(''.join(re.findall(r'\"(.*?)\"', m.group(1))))")
echo "CREATE TABLE t ($COLS) WITH (COMPRESSION = dictionary);" > /dev/shm/prof_init.sql
export WIRELOAD_USER=u WIRELOAD_PASSWORD=p
taskset -c 1 target/profiling/wireload --threads 1 serve --listen 127.0.0.1:15432 --flight-listen 127.0.0.1:15051 --init /dev/shm/prof_init.sql 2>/dev/shm/prof_serve.log &
SP=$!
for i in $(seq 100); do grep -q "ready" /dev/shm/prof_serve.log && break; sleep 0.2; done
# warm-up push into a scratch table? keep simple: one push profiled
perf record -F 1999 -g -p $SP -o /dev/shm/perf.merge 2>/dev/null &
PP=$!
sleep 0.5
taskset -c 0 target/release/wireload --threads 1 push --server http://127.0.0.1:15051 --table t --mode all --delimiter '|' --bandwidth 10gbit /dev/shm/wl-sf1/lineitem.tbl --json > /dev/shm/prof_push.json
kill -INT $PP; wait $PP || true
kill $SP; wait $SP || true
python3 -c "import json; d=json.load(open('/dev/shm/prof_push.json')); print(d.get('throughput_mb_s'), d.get('server_steps'))"
