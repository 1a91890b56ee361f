#!/usr/bin/env bash
# Runs every benchmark suite once and prints one markdown table: ns/op and ratios
# against references measured in the same run. See Benchmarks/README.md.
#
#   Benchmarks/compare.sh                  # the table
#   Benchmarks/compare.sh --check          # ... exit 1 if a ratio regressed
#   Benchmarks/compare.sh --update         # ... and rewrite ratios-baseline.json
#   Benchmarks/compare.sh --runs 3         # three runs, median of each figure
#   Benchmarks/compare.sh --target Write   # extra arguments go to `benchmark`
#
# Environment: RATIO_TOLERANCE (default 0.5, i.e. +50%) for --check;
# RESULTS_DIR to keep the raw samples instead of a temporary directory.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
mode=()
passthrough=()
runs=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --check) mode=(--check "$here/ratios-baseline.json") ;;
    --update) mode=(--update "$here/ratios-baseline.json") ;;
    --runs) runs="$2"; shift ;;
    *) passthrough+=("$1") ;;
  esac
  shift
done

if [[ -n "${RESULTS_DIR:-}" ]]; then
  results="$RESULTS_DIR"
  rm -rf "$results"/run-*
else
  results="$(mktemp -d)"
  trap 'rm -rf "$results"' EXIT
fi

# The plugin builds in release and runs each suite in its own process. The sandbox
# would stop it writing the samples outside the package.
directories=()
for run in $(seq 1 "$runs"); do
  directory="$results/run-$run"
  mkdir -p "$directory"
  if ! swift package --package-path "$here" --disable-sandbox benchmark \
    --format histogramSamples --time-units nanoseconds --no-progress \
    --path "$directory" ${passthrough[@]+"${passthrough[@]}"} >"$directory/benchmark.log" 2>&1; then
    cat "$directory/benchmark.log" >&2
    echo "compare.sh: the benchmark run failed" >&2
    exit 2
  fi
  directories+=("$directory")
done

python3 "$here/compare.py" "${directories[@]}" ${mode[@]+"${mode[@]}"}
