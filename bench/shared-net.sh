#!/usr/bin/env bash
# Runs a server and a client over a shaped network link of their own: two network
# namespaces (wlnet-srv-PID, wlnet-cli-PID) joined by a veth pair, 10.199.0.1/24 on the
# server's side and 10.199.0.2/24 on the client's, each end's egress shaped with tc tbf
# (and, with --delay, delayed with netem). The machine's loopback and real interfaces are
# never touched; everything is removed on exit.
#
#   bench/shared-net.sh --bandwidth 1gbit [--delay 0.1ms] [--latency 10ms] [--wait-port N] \
#       -- SERVER_CMD... --- CLIENT_CMD...
#
# SERVER_CMD runs in the background in the server's namespace, CLIENT_CMD in the foreground
# in the client's, once the server accepts connections on 10.199.0.1:N (--wait-port; up to
# 30 s). Both see WIRELOAD_NET_SERVER=10.199.0.1 and WIRELOAD_NET_CLIENT=10.199.0.2. The
# script exits with the client's status. Must be run as root.
#
#   --bandwidth R  the rate each way, as tc writes rates: 100mbit, 1gbit, 10gbit, 2.5gbit,
#                  or a bare number of bits per second
#   --delay D      a one-way delay added on each side (round trip: 2 D); needs sch_netem
#   --latency L    the longest a packet may wait in tbf's queue (default 10ms)
#   --wait-port N  wait until the server accepts TCP connections on port N
#
# Example (a link of 100 Mbit/s):
#   bench/shared-net.sh --bandwidth 100mbit --wait-port 8000 \
#       -- python3 -m http.server 8000 --bind 10.199.0.1 \
#       --- curl -s -o /dev/null -w '%{speed_download}\n' http://10.199.0.1:8000/f
set -euo pipefail

readonly SERVER_IP=10.199.0.1
readonly CLIENT_IP=10.199.0.2
readonly WAIT_SECONDS=30

me=$(basename "$0")
die() {
    echo "$me: $*" >&2
    exit 2
}
usage() {
    sed -n '8,9p' "$0" | sed 's/^#   //' >&2
    exit 2
}

bandwidth=""
delay=""
latency="10ms"
wait_port=""
while (($# > 0)); do
    case "$1" in
    --bandwidth) (($# >= 2)) || usage; bandwidth=$2; shift 2 ;;
    --delay) (($# >= 2)) || usage; delay=$2; shift 2 ;;
    --latency) (($# >= 2)) || usage; latency=$2; shift 2 ;;
    --wait-port) (($# >= 2)) || usage; wait_port=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) die "unknown option $1 (the commands follow --)" ;;
    esac
done
server_cmd=()
while (($# > 0)) && [[ $1 != "---" ]]; do
    server_cmd+=("$1")
    shift
done
(($# > 0)) || die "no --- between the server's command and the client's"
shift
client_cmd=("$@")
((${#server_cmd[@]} > 0)) || die "no server command (after --)"
((${#client_cmd[@]} > 0)) || die "no client command (after ---)"
[[ -n $bandwidth ]] || die "--bandwidth is required (e.g. 1gbit)"
if [[ -n $wait_port ]] && ! [[ $wait_port =~ ^[0-9]+$ && $wait_port -ge 1 && $wait_port -le 65535 ]]; then
    die "--wait-port must be a TCP port (1-65535), not $wait_port"
fi
((EUID == 0)) || die "must be run as root (it creates network namespaces and shapes them with tc)"
for tool in ip tc timeout; do
    command -v "$tool" >/dev/null || die "needs $tool (iproute2, coreutils)"
done

# the rate in bits per second, and as tc writes it (a bare number is bytes/s to tc)
rate=$(tr '[:upper:]' '[:lower:]' <<<"$bandwidth")
[[ $rate =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit)?$ ]] ||
    die "invalid --bandwidth $bandwidth (write e.g. 100mbit, 1gbit, 2.5gbit or bits per second)"
[[ -n ${BASH_REMATCH[3]} ]] || rate="${rate}bit"
rate_bits=$(awk -v n="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]:-bit}" 'BEGIN {
    m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9; m["tbit"] = 1e12
    printf "%.0f", n * m[u] }')
((rate_bits >= 8000)) || die "--bandwidth $bandwidth is below 8kbit"
# 4 ms at the rate (the timer ticks at 250 Hz at worst), at least 32 KiB
burst=$((rate_bits / 8 / 250))
((burst >= 32768)) || burst=32768

srv_ns="wlnet-srv-$$"
cli_ns="wlnet-cli-$$"
server_pid=""
created=0

# the processes left in namespace $1 (only ever ones this script started there)
kill_namespace() {
    local ns=$1 pids i
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n $pids ]] || return 0
    # shellcheck disable=SC2086
    kill $pids 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [[ -n $pids ]] || return 0
        sleep 0.1
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
}

cleanup() {
    set +e
    trap - EXIT INT TERM HUP
    if [[ -n $server_pid ]]; then
        kill "$server_pid" 2>/dev/null
    fi
    if ((created)); then
        kill_namespace "$cli_ns"
        kill_namespace "$srv_ns"
        # deleting a namespace deletes the veth end in it, and so the pair
        ip netns del "$cli_ns" 2>/dev/null
        ip netns del "$srv_ns" 2>/dev/null
    fi
    if [[ -n $server_pid ]]; then
        wait "$server_pid" 2>/dev/null
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

ip netns add "$srv_ns"
created=1
ip netns add "$cli_ns"
# the pair is made inside the namespaces, never in the machine's own
ip link add name wl0 netns "$srv_ns" type veth peer name wl0 netns "$cli_ns"
ip -n "$srv_ns" addr add "$SERVER_IP/24" dev wl0
ip -n "$cli_ns" addr add "$CLIENT_IP/24" dev wl0
for ns in "$srv_ns" "$cli_ns"; do
    ip -n "$ns" link set lo up
    ip -n "$ns" link set wl0 up
    if [[ -n $delay ]]; then
        if ! ip netns exec "$ns" tc qdisc add dev wl0 root handle 1: netem delay "$delay" limit 100000; then
            die "cannot add netem (delay $delay): this kernel may lack sch_netem; run without --delay"
        fi
        ip netns exec "$ns" tc qdisc add dev wl0 parent 1:1 handle 10: \
            tbf rate "$rate" burst "$burst" latency "$latency"
    else
        ip netns exec "$ns" tc qdisc add dev wl0 root tbf rate "$rate" burst "$burst" latency "$latency"
    fi
done
echo "$me: $srv_ns ($SERVER_IP) <-> $cli_ns ($CLIENT_IP): tbf rate $rate burst ${burst}b latency $latency${delay:+, netem delay $delay each way}" >&2

export WIRELOAD_NET_SERVER=$SERVER_IP
export WIRELOAD_NET_CLIENT=$CLIENT_IP

ip netns exec "$srv_ns" "${server_cmd[@]}" </dev/null &
server_pid=$!

if [[ -n $wait_port ]]; then
    deadline=$((SECONDS + WAIT_SECONDS))
    until ip netns exec "$cli_ns" timeout 2 bash -c "exec 3<>/dev/tcp/$SERVER_IP/$wait_port" 2>/dev/null; do
        kill -0 "$server_pid" 2>/dev/null || die "the server exited before it accepted connections on port $wait_port"
        ((SECONDS < deadline)) || die "the server did not accept connections on $SERVER_IP:$wait_port within ${WAIT_SECONDS}s"
        sleep 0.1
    done
fi

# in the background (its stdin kept) and waited for, so that a signal ends it at once
ip netns exec "$cli_ns" "${client_cmd[@]}" <&0 &
client_pid=$!
status=0
wait "$client_pid" || status=$?
echo "$me: client exited with status $status" >&2
exit "$status"
