#!/usr/bin/env bash
# failover_bench.sh: how long placement stops when berthd dies, on both
# stores (docs/benchmarks.md, "High availability").
#   SQLite: berthd is SIGKILLed and started again at once on its data
#           directory (what a supervisor does); timed from the kill until a
#           service submitted after it runs.
#   etcd:   two replicas on a 3-member loopback etcd with the default
#           --leader-ttl (or $TTL); the leader is SIGKILLed; timed from the
#           kill until a service submitted through the other replica runs.
#           The kill comes at a random point of the lease (0..ttl after
#           the election), so the runs sample the range ttl x 2/3 .. 4/3.
# Each measured $RUNS times (default 5). Binaries: $BERTH_BIN or
# build/release/bin. Every process started is stopped by its pid.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BERTH_BIN:-build/release/bin}
runs=${RUNS:-5}
ttl=${TTL:-10s}
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

etcd_run() {
  local dir=$work/etcd$1
  mkdir -p "$dir"
  local cluster="" endpoints="" cports=() pports=()
  for i in 0 1 2; do
    cports[i]=$(free_port)
    pports[i]=$(free_port)
    cluster+="${cluster:+,}m$i=http://127.0.0.1:${pports[i]}"
    endpoints+="${endpoints:+,}127.0.0.1:${cports[i]}"
  done
  for i in 0 1 2; do
    etcd --name "m$i" --data-dir "$dir/m$i" \
      --listen-client-urls "http://127.0.0.1:${cports[i]}" \
      --advertise-client-urls "http://127.0.0.1:${cports[i]}" \
      --listen-peer-urls "http://127.0.0.1:${pports[i]}" \
      --initial-advertise-peer-urls "http://127.0.0.1:${pports[i]}" \
      --initial-cluster "$cluster" --initial-cluster-token "bench$1" >"$dir/m$i.log" 2>&1 &
    pids+=("$!")
  done
  local ports=() rpids=()
  for r in 0 1; do
    ports[r]=$(free_port)
    start_berthd "$dir/r$r" "${ports[r]}" --store "etcd://$endpoints" --leader-ttl "$ttl"
    rpids[r]=$started
    wait_up "${ports[r]}" "$dir/r$r/token"
  done
  local token leader=-1
  token=$(cat "$dir/r0/token")
  for _ in $(seq 3000); do
    for r in 0 1; do
      api "${ports[r]}" "$token" GET /v1/health | grep -q '"role":"leader"' && leader=$r
    done
    [ "$leader" -ge 0 ] && break
    sleep 0.02
  done
  register_node "${ports[leader]}" "$token"
  time_until_running "${ports[leader]}" "$token" warm "$(now_ms)"
  # The kill lands at a random point of the leader's lease: a kill just
  # after the election (or a keepalive) is the worst case, ttl x 4/3.
  local other=$((1 - leader)) start ttl_ms=$((${ttl%s} * 1000))
  sleep "$(awk "BEGIN { print ($RANDOM % $ttl_ms) / 1000 }")"
  start=$(now_ms)
  kill -9 "${rpids[leader]}"
  time_until_running "${ports[other]}" "$token" after "$start"
  stop_all
}

echo "failover_bench: $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), etcd --leader-ttl $ttl"
for run in $(seq "$runs"); do
  sqlite_run "$run"
  sqlite_ms=$result
  etcd_run "$run"
  echo "run $run: sqlite restart $sqlite_ms ms, etcd takeover $result ms"
done
