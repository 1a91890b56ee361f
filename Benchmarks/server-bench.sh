#!/usr/bin/env bash
# Loads Tools/Server with wrk over each of its four stores and prints req/s and latency
# as ratios to Mutex. Loopback only; every round is bounded in time, the rounds
# interleave the stores in a rotated order, and the server is always killed.
#
#   Benchmarks/server-bench.sh                 # 3 rounds of 5 s per store
#   ROUNDS=5 DURATION=10 Benchmarks/server-bench.sh
#   SERVER_ARGS="--entry-work-ns 2000" Benchmarks/server-bench.sh
#
# Environment: ROUNDS (3), DURATION in s (5), CONNECTIONS (32), PORT (18080),
# SERVER_ARGS (extra arguments for the server), SCRATCH_PATH (a build directory other
# than Benchmarks/.build). Needs wrk (`apt-get install wrk`) and curl.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
rounds="${ROUNDS:-3}"
duration="${DURATION:-5}"
connections="${CONNECTIONS:-32}"
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
cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
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
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=""
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$results/wrk.txt")
    p50=$(to_us "$(awk '$1 == "50%" {print $2}' "$results/wrk.txt")")
    p99=$(to_us "$(awk '$1 == "99%" {print $2}' "$results/wrk.txt")")
    errors=$(awk '/Non-2xx|Socket errors/ {print}' "$results/wrk.txt" | tr '\n' ' ')
    echo "$store $rps $p50 $p99" >>"$results/samples"
    echo "round $round: $store ${rps} req/s, p50 ${p50} µs, p99 ${p99} µs ${errors}"
  done
done
echo "Load after: $(uptime)"

# Medians over the rounds, and ratios to Mutex from those medians.
python3 - "$results/samples" "$rounds" "$duration" "$connections" <<'EOF'
import statistics, sys
samples, rounds, duration, connections = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = {}
for line in open(samples):
    store, rps, p50, p99 = line.split()
    rows.setdefault(store, []).append((float(rps), float(p50), float(p99)))
median = lambda values: statistics.median(values)
names = {"mutex": "`Mutex`", "nio": "`NIOLockedValueBox`", "actor": "actor",
         "singlewriter": "`ThreadSafeSingleWriter`"}
ref = rows["mutex"]
ref_rps, ref_p50, ref_p99 = (median([s[i] for s in ref]) for i in range(3))
print()
print(f"{rounds} rounds of {duration} s per store, interleaved; wrk -t1 -c{connections}; medians.")
print()
print("| Store | req/s | p50 | p99 | req/s | p50 | p99 |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for store in ["mutex", "nio", "actor", "singlewriter"]:
    if store not in rows:
        continue
    rps, p50, p99 = (median([s[i] for s in rows[store]]) for i in range(3))
    print(f"| {names[store]} | {rps / ref_rps:.2f}x | {p50 / ref_p50:.2f}x | {p99 / ref_p99:.2f}x "
          f"| {rps:,.0f} | {p50:,.0f} µs | {p99:,.0f} µs |")
EOF
