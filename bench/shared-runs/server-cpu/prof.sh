#!/bin/bash
# usage: prof.sh BIN OUTNAME [push args...]: perf profile of the server during one SL_A push
BIN=$1; NAME=$2; shift 2
cols="l_orderkey BIGINT NOT NULL, l_partkey INTEGER NOT NULL, l_suppkey INTEGER NOT NULL, l_linenumber INTEGER NOT NULL, l_quantity DECIMAL(15,2) NOT NULL, l_extendedprice DECIMAL(15,2) NOT NULL, l_discount DECIMAL(15,2) NOT NULL, l_tax DECIMAL(15,2) NOT NULL, l_returnflag CHAR(1) NOT NULL, l_linestatus CHAR(1) NOT NULL, l_shipdate DATE NOT NULL, l_commitdate DATE NOT NULL, l_receiptdate DATE NOT NULL, l_shipinstruct CHAR(25) NOT NULL, l_shipmode CHAR(10) NOT NULL, l_comment VARCHAR(44) NOT NULL"
env $SERVER_ENV taskset -c 1 $BIN --threads 1 serve --listen 127.0.0.1:45433 --flight-listen 127.0.0.1:45051 --trust-local > /tmp/prof-$NAME.serve.log 2>&1 &
SPID=$!
for i in $(seq 100); do grep -q "is ready" /tmp/prof-$NAME.serve.log && break; sleep 0.2; done
P="psql -X -q -h 127.0.0.1 -p 45433 -U x -d wireload"
$P -c "CREATE TABLE w ($cols) WITH (COMPRESSION = dictionary); CREATE TABLE t ($cols) WITH (COMPRESSION = dictionary)"
# warm-up push
taskset -c 0 $BIN --threads 1 push --server http://127.0.0.1:45051 --table w --mode ${MODE:-all} --delimiter '|' --bandwidth 10gbit /dev/shm/wl-sf1/lineitem.tbl "$@" > /dev/null
perf record -F 999 -g -p $SPID -o /tmp/prof-$NAME.perf.data 2>/dev/null &
PERF=$!
sleep 0.5
c0=$(awk '{print $14+$15}' /proc/$SPID/stat)
taskset -c 0 $BIN --threads 1 push --json --server http://127.0.0.1:45051 --table t --mode ${MODE:-all} --delimiter '|' --bandwidth 10gbit /dev/shm/wl-sf1/lineitem.tbl "$@" > /tmp/prof-$NAME.push.json
c1=$(awk '{print $14+$15}' /proc/$SPID/stat)
kill -INT $PERF; wait $PERF
echo "server CPU ticks during push: $((c1-c0))"
python3 -c "import json;d=json.load(open('/tmp/prof-$NAME.push.json'));print({k:d[k] for k in d if 'step' in k or 'cpu' in k or 'second' in k or 'bytes' in k})"
kill $SPID; wait $SPID 2>/dev/null
