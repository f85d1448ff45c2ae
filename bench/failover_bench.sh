#!/usr/bin/env bash
# failover_bench.sh: how long placement stops when berthd dies, on both
# stores, and whether etcd's own leader dying deposes berthd's
# (docs/benchmarks.md, "Failover at the default --leader-ttl").
#   SQLite: berthd is SIGKILLed and started again at once on its data
#           directory (what a supervisor does); timed from the kill until a
#           service submitted after it runs.
#   etcd:   two replicas on a 3-member loopback etcd with berthd's default
#           --leader-ttl (or $TTL, e.g. TTL=10s); the leader is SIGKILLed
#           at a random point of its lease; timed from the kill until a
#           service submitted through the other replica runs.
# Each measured $RUNS times (default 5). Then etcd's raft leader is
# SIGKILLed $ETCD_KILLS times (default 20; 0 skips) under one berthd
# leader, each time started again: whether berthd's leader is deposed (it
# should never be; the script stops at the first), and how long a service
# submitted meanwhile waits.
# Binaries: $BERTH_BIN or build/release/bin. Every process started is
# stopped by its pid.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BERTH_BIN:-build/release/bin}
runs=${RUNS:-5}
ttl=${TTL:-3s}  # berthd's default --leader-ttl
[[ $ttl =~ ^[0-9]+s$ ]] || { echo "failover_bench: TTL must be whole seconds (say 5s)" >&2; exit 2; }
ttl_ms=$((${ttl%s} * 1000))
work=$(mktemp -d)
pids=()
cleanup() {
  stop_all
  rm -rf "$work"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_berthd DIR PORT [ARGS...]: starts berthd; its pid in $started.
start_berthd() {
  local dir=$1 port=$2
  shift 2
  # Plain HTTP: what is timed is the takeover, and curl then needs no CA.
  "$bin/berthd" --data-dir "$dir" --port "$port" --insecure-http "$@" >>"$dir.log" 2>&1 &
  started=$!
  pids+=("$started")
}

# api PORT TOKEN METHOD PATH [BODY]
api() {
  curl -s -m 5 -X "$3" -H "Authorization: Bearer $2" -H 'Content-Type: application/json' \
    ${5:+-d "$5"} "http://127.0.0.1:$1$4" || true
}

wait_up() {  # PORT TOKEN_FILE: until berthd answers
  for _ in $(seq 1500); do
    [ -s "$2" ] && api "$1" "$(cat "$2")" GET /v1/health | grep -q '"status"' && return 0
    sleep 0.02
  done
  echo "berthd on $1 did not start" >&2
  return 1
}

# time_until_running PORT TOKEN SERVICE START_MS: submits SERVICE (retrying
# while berthd is away) and sets $result to the ms from START_MS until it
# runs.
time_until_running() {
  local port=$1 token=$2 service=$3 start=$4
  result=never
  for _ in $(seq 3000); do
    api "$port" "$token" POST /v1/services \
      "{\"id\":\"$service\",\"replicas\":1,\"task\":{\"resources\":{\"cpu\":\"100m\"}}}" >/dev/null
    if api "$port" "$token" GET "/v1/tasks?service=$service&state=running" | grep -q '"running"'; then
      result=$(($(now_ms) - start))
      return 0
    fi
    sleep 0.02
  done
}

stop_all() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}

register_node() {  # PORT TOKEN
  api "$1" "$2" POST /v1/nodes '{"id":"n1","resources":{"cpu":8}}' >/dev/null
}

sqlite_run() {
  local dir=$work/sqlite$1 port
  port=$(free_port)
  mkdir -p "$dir"
  start_berthd "$dir/data" "$port"
  local pid=$started
  wait_up "$port" "$dir/data/token"
  local token
  token=$(cat "$dir/data/token")
  register_node "$port" "$token"
  time_until_running "$port" "$token" warm "$(now_ms)"
  local start
  start=$(now_ms)
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  start_berthd "$dir/data" "$port"
  time_until_running "$port" "$token" after "$start"
  stop_all
}

# start_etcd DIR NAME: a 3-member etcd on loopback with etcd's default
# timing; sets $endpoints and the member arrays used by etcd_member.
start_etcd() {
  etcd_dir=$1 etcd_name=$2 etcd_cluster="" endpoints="" etcd_cports=() etcd_pports=() etcd_pids=()
  for i in 0 1 2; do
    etcd_cports[i]=$(free_port)
    etcd_pports[i]=$(free_port)
    etcd_cluster+="${etcd_cluster:+,}m$i=http://127.0.0.1:${etcd_pports[i]}"
    endpoints+="${endpoints:+,}127.0.0.1:${etcd_cports[i]}"
  done
  for i in 0 1 2; do etcd_member "$i" new; done
}

etcd_member() {  # I STATE ("new" or "existing"): starts member I
  local i=$1
  etcd --name "m$i" --data-dir "$etcd_dir/m$i" \
    --listen-client-urls "http://127.0.0.1:${etcd_cports[i]}" \
    --advertise-client-urls "http://127.0.0.1:${etcd_cports[i]}" \
    --listen-peer-urls "http://127.0.0.1:${etcd_pports[i]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${etcd_pports[i]}" \
    --initial-cluster "$etcd_cluster" --initial-cluster-state "$2" \
    --initial-cluster-token "$etcd_name" >>"$etcd_dir/m$i.log" 2>&1 &
  etcd_pids[i]=$!
  pids+=("$!")
}

etcd_leader() {  # prints the index of etcd's raft leader (nothing if none)
  ETCDCTL_API=3 etcdctl --endpoints="$endpoints" --command-timeout=2s endpoint status -w json \
    2>/dev/null | python3 -c '
import json, sys
ports = sys.argv[1:]
for e in json.load(sys.stdin):
    if e["Status"]["header"]["member_id"] == e["Status"].get("leader"):
        print(ports.index(e["Endpoint"].rsplit(":", 1)[1]))' "${etcd_cports[@]}" || true
}

# start_replicas DIR: two berthd replicas on $endpoints; sets $ports,
# $rpids, $token and $leader (the one that leads).
start_replicas() {
  ports=() rpids=() leader=-1
  for r in 0 1; do
    ports[r]=$(free_port)
    start_berthd "$1/r$r" "${ports[r]}" --store "etcd://$endpoints" ${TTL:+--leader-ttl "$TTL"}
    rpids[r]=$started
    wait_up "${ports[r]}" "$1/r$r/token"
  done
  token=$(cat "$1/r0/token")
  for _ in $(seq 3000); do
    for r in 0 1; do
      api "${ports[r]}" "$token" GET /v1/health | grep -q '"role":"leader"' && leader=$r
    done
    [ "$leader" -ge 0 ] && return 0
    sleep 0.02
  done
  echo "no replica leads" >&2
  return 1
}

epoch_of() {  # PORT: the leader's epoch as that replica's /v1/health says (0: none)
  local epoch=0
  for _ in $(seq 50); do  # a failed read is not a change of leader
    epoch=$(api "$1" "$token" GET /v1/health | python3 -c '
import json, sys
print((json.load(sys.stdin).get("leader") or {}).get("epoch", 0))' 2>/dev/null || echo 0)
    [ "$epoch" != 0 ] && break
    sleep 0.02
  done
  echo "$epoch"
}

etcd_run() {
  local dir=$work/etcd$1
  mkdir -p "$dir"
  start_etcd "$dir" "bench$1"
  start_replicas "$dir"
  register_node "${ports[leader]}" "$token"
  time_until_running "${ports[leader]}" "$token" warm "$(now_ms)"
  # The kill lands at a random point of the leader's lease.
  local other=$((1 - leader)) start
  sleep "$(awk "BEGIN { print ($RANDOM % $ttl_ms) / 1000 }")"
  start=$(now_ms)
  kill -9 "${rpids[leader]}"
  time_until_running "${ports[other]}" "$token" after "$start"
  stop_all
}

# etcd's own leader SIGKILLed $ETCD_KILLS times under one berthd leader:
# whether it is deposed, and how long placement waits for etcd.
etcd_leader_kills() {
  local dir=$work/etcd-kills
  mkdir -p "$dir"
  start_etcd "$dir" kills
  start_replicas "$dir"
  register_node "${ports[leader]}" "$token"
  time_until_running "${ports[leader]}" "$token" warm "$(now_ms)"
  local epoch deposed=0 member start killed
  epoch=$(epoch_of "${ports[leader]}")
  for k in $(seq "$ETCD_KILLS"); do
    member=$(etcd_leader)
    [ -n "$member" ] || { echo "etcd has no leader" >&2; return 1; }
    sleep "$(awk "BEGIN { print ($RANDOM % 1000) / 1000 }")"
    start=$(now_ms)
    killed=${etcd_pids[member]}
    kill -9 "$killed"
    wait "$killed" 2>/dev/null || true
    local alive=()  # the killed pid is not signalled again at the end
    for pid in "${pids[@]}"; do [ "$pid" = "$killed" ] || alive+=("$pid"); done
    pids=("${alive[@]}")
    time_until_running "${ports[leader]}" "$token" "k$k" "$start"
    etcd_member "$member" existing
    local now_epoch
    now_epoch=$(epoch_of "${ports[leader]}")
    echo "kill $k: etcd leader m$member, a new service ran after $result ms"
    if ! kill -0 "${rpids[leader]}" 2>/dev/null || [ "$now_epoch" != "$epoch" ]; then
      deposed=1
      echo "kill $k: the berthd leader was deposed (epoch $epoch -> $now_epoch); stopping"
      break
    fi
    # Every member healthy again before the next kill, or it could take quorum.
    for _ in $(seq 500); do
      ETCDCTL_API=3 etcdctl --endpoints="$endpoints" --command-timeout=1s endpoint health \
        >/dev/null 2>&1 && break
      sleep 0.02
    done
  done
  local metrics closest proofs
  metrics=$(api "${ports[leader]}" "$token" GET /metrics)
  closest=$(awk '/^berth_leader_lease_unconfirmed_max_seconds /{printf "%d", $2 * 1000}' <<<"$metrics")
  proofs=$(awk '/^berth_leader_lease_proofs_total /{print $2}' <<<"$metrics")
  echo "etcd leader kills: $k, berthd leader deposed: $([ "$deposed" = 1 ] && echo yes || echo no), longest without a confirmed keepalive ${closest:-?} ms, lease proven by etcd's raft ${proofs:-?} times"
  stop_all
}

echo "failover_bench: $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), etcd --leader-ttl ${TTL:-default}"
for run in $(seq "$runs"); do
  sqlite_run "$run"
  sqlite_ms=$result
  etcd_run "$run"
  echo "run $run: sqlite restart $sqlite_ms ms, etcd takeover $result ms"
done
if [ "${ETCD_KILLS:=20}" -gt 0 ]; then
  command -v etcdctl >/dev/null || { echo "failover_bench: no etcdctl (scripts/setup installs it)" >&2; exit 1; }
  etcd_leader_kills
fi
