#!/usr/bin/env bash
# Loads Tools/Server with wrk over each of its four stores and prints req/s and latency
# as ratios to Mutex (and req/s to the actor), at each connection count. Loopback only;
# every round is bounded in time, the rounds interleave the stores in a rotated order, and
# the server is always killed.
#
#   Benchmarks/server-bench.sh                 # 3 rounds of 5 s per store, 64 and 256 connections
#   ROUNDS=5 DURATION=10 CONNECTIONS=32 Benchmarks/server-bench.sh
#   SERVER_ARGS="--entry-work-ns 2000" Benchmarks/server-bench.sh
#
# Environment: ROUNDS (3), DURATION in s (5), CONNECTIONS ("64 256", one run of every
# round per count), PORT (18080),
# SERVER_ARGS (extra arguments for the server), SCRATCH_PATH (a build directory other
# than Benchmarks/.build). Needs wrk (`apt-get install wrk`) and curl.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
rounds="${ROUNDS:-3}"
duration="${DURATION:-5}"
read -r -a connection_counts <<<"${CONNECTIONS:-64 256}"
port="${PORT:-18080}"
stores=(mutex nio actor singlewriter)
scratch=()
if [[ -n "${SCRATCH_PATH:-}" ]]; then scratch=(--scratch-path "$SCRATCH_PATH"); fi

for tool in wrk curl; do
  command -v "$tool" >/dev/null || { echo "server-bench.sh: needs $tool (apt-get install $tool)" >&2; exit 2; }
done

build=(swift build -c release --package-path "$here" ${scratch[@]+"${scratch[@]}"} --product Server)
"${build[@]}" >/dev/null 2>&1 || { "${build[@]}" >&2; exit 2; }
server="$("${build[@]}" --show-bin-path 2>/dev/null)/Server"

results="$(mktemp -d)"
pid=""
# SIGTERM starts Hummingbird's graceful shutdown; a server still up 5 s later is killed.
stop_server() {
  [[ -n "$pid" ]] || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
}
cleanup() {
  stop_server
  rm -rf "$results"
}
trap cleanup EXIT

# wrk prints latencies as 123.45us, 1.23ms or 1.23s: microseconds.
to_us() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n
  }'
}

echo "Load before: $(uptime)"
for connections in "${connection_counts[@]}"; do
  for round in $(seq 1 "$rounds"); do
    shift_by=$(( (round - 1) % ${#stores[@]} ))
    order=("${stores[@]:$shift_by}" "${stores[@]:0:$shift_by}")
    for store in "${order[@]}"; do
      # shellcheck disable=SC2086  # SERVER_ARGS is a list of words
      "$server" --store "$store" --port "$port" ${SERVER_ARGS:-} >"$results/server-$store.log" 2>&1 &
      pid=$!
      for _ in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
        sleep 0.05
      done
      curl -sf "http://127.0.0.1:$port/item/7" >/dev/null || { cat "$results/server-$store.log" >&2; exit 2; }
      # One wrk thread: the server's two event loops and its background tasks need the cores.
      timeout $((duration + 10)) wrk -t1 -c"$connections" -d"${duration}s" --latency \
        "http://127.0.0.1:$port/item/7" >"$results/wrk.txt"
      stats=$(curl -sf "http://127.0.0.1:$port/stats" || echo "lookups 0 p99 0 p99.9 0 max 0 slow 0")
      stop_server
      rps=$(awk '/^Requests\/sec:/ {print $2}' "$results/wrk.txt")
      p50=$(to_us "$(awk '$1 == "50%" {print $2}' "$results/wrk.txt")")
      p99=$(to_us "$(awk '$1 == "99%" {print $2}' "$results/wrk.txt")")
      errors=$(awk '/Non-2xx|Socket errors/ {print}' "$results/wrk.txt" | tr '\n' ' ')
      # The server's own figure: how long requests waited for the shared state, in ns.
      lookup_p999=$(awk '{print $6}' <<<"$stats")
      lookup_max=$(awk '{print $8}' <<<"$stats")
      # Lookups over 100 µs per second of load.
      slow=$(awk -v d="$duration" '{print $10 / d}' <<<"$stats")
      echo "$connections $store $rps $p50 $p99 $lookup_p999 $lookup_max $slow" >>"$results/samples"
      echo "$connections connections, round $round: $store ${rps} req/s, p50 ${p50} µs, p99 ${p99} µs; state lookup p99.9 ${lookup_p999} ns, max ${lookup_max} ns, ${slow} over 100 µs per s ${errors}"
    done
  done
done
echo "Load after: $(uptime)"

# Medians over the rounds, and ratios to Mutex (and the actor) from those medians, at each
# connection count.
python3 - "$results/samples" "$rounds" "$duration" <<'EOF'
import statistics, sys
samples, rounds, duration = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for line in open(samples):
    fields = line.split()
    rows.setdefault((int(fields[0]), fields[1]), []).append(tuple(float(v) for v in fields[2:]))
counts = sorted({connections for connections, _ in rows})
median = lambda values: statistics.median(values)
names = {"mutex": "`Mutex`", "nio": "`NIOLockedValueBox`", "actor": "actor",
         "singlewriter": "`ThreadSafeSingleWriter`"}
def figures(connections, store):
    return [median([s[i] for s in rows[(connections, store)]]) for i in range(6)]
def time_text(ns):
    return f"{ns:.0f} ns" if ns < 1e3 else f"{ns / 1e3:.1f} µs" if ns < 1e6 else f"{ns / 1e6:.2f} ms"
ratio = lambda value, base: f"{value / base:.3g}x" if base else ""
print()
print(f"{rounds} rounds of {duration} s per store, interleaved; wrk -t1 at "
      f"{' and '.join(str(c) for c in counts)} connections; medians.")
print()
print("| connections | Store | req/s | req/s × actor | p50 | p99 | state lookup p99.9 "
      "| state lookup max | lookups over 100 µs, per s |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for connections in counts:
    ref = figures(connections, "mutex") if (connections, "mutex") in rows else None
    actor = figures(connections, "actor")[0] if (connections, "actor") in rows else 0
    for store in ["mutex", "nio", "actor", "singlewriter"]:
        if (connections, store) not in rows:
            continue
        rps, p50, p99, lookup_p999, lookup_max, slow = figures(connections, store)
        base = ref or [0] * 6
        print(f"| {connections} | {names[store]} | {ratio(rps, base[0])} ({rps:,.0f}) "
              f"| {ratio(rps, actor)} | {ratio(p50, base[1])} ({p50:,.0f} µs) "
              f"| {ratio(p99, base[2])} ({p99 / 1000:,.1f} ms) "
              f"| {ratio(lookup_p999, base[3])} ({time_text(lookup_p999)}) "
              f"| {ratio(lookup_max, base[4])} ({time_text(lookup_max)}) | {slow:,.1f} |")
print()
print("Ratios to `Mutex` at the same connection count (req/s also to the actor); req/s, p50 "
      "and p99 from wrk; state lookup: the time each request spent getting the shared state, "
      "measured in the server (GET /stats); the count is the server's too.")
EOF
