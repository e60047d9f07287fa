#!/bin/bash
# The storage of lineitem pushed with SL_A by build $1: each column's entries and bytes.
b=$1
export WIRELOAD_USER=u WIRELOAD_PASSWORD=p PGPASSWORD=p
/tmp/runs/wireload-$b --threads 1 serve --listen 127.0.0.1:55432 --flight-listen 127.0.0.1:55051 > /tmp/runs/mem-serve-$b.log 2>&1 &
srv=$!
sleep 2
COLS="l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, l_linenumber INT, l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), l_returnflag VARCHAR(1), l_linestatus VARCHAR(1), l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, l_shipinstruct VARCHAR(25), l_shipmode VARCHAR(10), l_comment VARCHAR(44)"
psql -h 127.0.0.1 -p 55432 -U u -d wireload -c "CREATE TABLE lineitem ($COLS) WITH (COMPRESSION = dictionary)" >/dev/null
grep VmRSS /proc/$srv/status; /tmp/runs/wireload-$b push /dev/shm/wl-sf1/lineitem.tbl --delimiter '|' --table lineitem --mode all --server http://127.0.0.1:55051 2>&1 | tail -1
psql -h 127.0.0.1 -p 55432 -U u -d wireload -A -F ' ' -c "SELECT column_name, dictionary_entries, bytes FROM wireload_columns WHERE table_name = 'lineitem'" 
psql -h 127.0.0.1 -p 55432 -U u -d wireload -A -F ' ' -c "SELECT table_name, bytes FROM wireload_tables WHERE table_name = 'lineitem'"
grep VmRSS /proc/$srv/status; kill $srv; wait $srv 2>/dev/null
