#!/usr/bin/env bash
# Runs every benchmark suite once and prints one markdown table: ns/op and ratios
# against references measured in the same run. See Benchmarks/README.md.
#
#   Benchmarks/compare.sh                  # the table
#   Benchmarks/compare.sh --check          # ... exit 1 if a ratio regressed
#   Benchmarks/compare.sh --update         # ... and rewrite ratios-baseline.json
#   Benchmarks/compare.sh --runs 3         # three runs, median of each figure
#   Benchmarks/compare.sh --target Write   # extra arguments go to `benchmark`
#   Benchmarks/compare.sh --contended-only # only the Contended table (Tools/Contended)
#   Benchmarks/compare.sh --skip-contended # no Contended table
#   Benchmarks/compare.sh --transactions-only # only Tools/Transactions
#   Benchmarks/compare.sh --skip-transactions # no Transactions tables
#
# After the suites, it builds and runs Tools/Contended, which prints the contended table,
# its validity and its goals (2, 4 and 8 threads; see README.md, Contended), then
# Tools/Transactions: long transactions while others read, and a token refresh, with the
# goals of issue 24 (see README.md, Transactions); with --update it also rewrites
# Results/transactions.json and the chart drawn from it, Results/where-it-wins.svg. The table
# and the chart come from Tools/Report, built like the other tools.
# `--target` with a suite skips both tools; `--target Contended` or `--target
# Transactions` runs only that one.
#
# Environment: RATIO_TOLERANCE (default 0.5, i.e. +50%) for --check;
# RESULTS_DIR to keep the raw samples instead of a temporary directory;
# CONTENDED_ARGS for Tools/Contended (e.g. "--rounds 9" or "--strict", which fails the
# run unless it is valid and every contended goal passes); ASYNC_CONTENDED_ARGS for
# Tools/AsyncContended (e.g. "--rounds 9 --ops 200000"); TRANSACTIONS_ARGS for
# Tools/Transactions (e.g. "--rounds 9 --readers 1"); SCRATCH_PATH for a build
# directory other than Benchmarks/.build.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
mode=()
passthrough=()
runs=1
suites=yes
contended=yes
transactions=yes
while [[ $# -gt 0 ]]; do
  case "$1" in
    --check) mode=(--check "$here/ratios-baseline.json") ;;
    --update) mode=(--update "$here/ratios-baseline.json") ;;
    --runs) runs="$2"; shift ;;
    --contended-only) suites=no; transactions=no ;;
    --skip-contended) contended=no ;;
    --transactions-only) suites=no; contended=no ;;
    --skip-transactions) transactions=no ;;
    --target)
      case "${2:-}" in
        Contended) suites=no; transactions=no ;;
        Transactions) suites=no; contended=no ;;
        *) contended=no; transactions=no; passthrough+=("$1" "${2:-}") ;;
      esac
      shift ;;
    *) passthrough+=("$1") ;;
  esac
  shift
done
scratch=()
if [[ -n "${SCRATCH_PATH:-}" ]]; then scratch=(--scratch-path "$SCRATCH_PATH"); fi

if [[ -n "${RESULTS_DIR:-}" ]]; then
  results="$RESULTS_DIR"
  rm -rf "$results"/run-*
else
  results="$(mktemp -d)"
  trap 'rm -rf "$results"' EXIT
fi

# Builds Tools/$1 in release (its log in the results directory) and sets $bin to the
# directory of the executables; stops the script if the build fails.
build_tool() {
  local build=(swift build -c release --package-path "$here" ${scratch[@]+"${scratch[@]}"} --product "$1")
  if ! "${build[@]}" >"$results/$1-build.log" 2>&1; then
    cat "$results/$1-build.log" >&2
    echo "compare.sh: building Tools/$1 failed" >&2
    exit 2
  fi
  bin="$("${build[@]}" --show-bin-path)"
}

# The plugin builds in release and runs each suite in its own process. The sandbox
# would stop it writing the samples outside the package.
directories=()
status=0
if [[ $suites == yes ]]; then
  for run in $(seq 1 "$runs"); do
    directory="$results/run-$run"
    mkdir -p "$directory"
    if ! swift package --package-path "$here" ${scratch[@]+"${scratch[@]}"} --disable-sandbox benchmark \
      --format histogramSamples --time-units nanoseconds --no-progress \
      --path "$directory" ${passthrough[@]+"${passthrough[@]}"} >"$directory/benchmark.log" 2>&1; then
      cat "$directory/benchmark.log" >&2
      echo "compare.sh: the benchmark run failed" >&2
      exit 2
    fi
    directories+=("$directory")
  done

  build_tool Report
  "$bin/Report" table "${directories[@]}" ${mode[@]+"${mode[@]}"} || status=$?
fi

# Contended: a plain release executable, since package-benchmark's samples cannot say
# whether the threads overlapped. It prints its own table, validity and goals.
if [[ $contended == yes ]]; then
  build_tool Contended
  echo
  echo "Load before Contended: $(uptime)"
  # shellcheck disable=SC2086  # CONTENDED_ARGS is a list of words
  "$bin/Contended" ${CONTENDED_ARGS:-} || status=$?

  # The same, from tasks on the cooperative pool: `await write` against Mutex and an actor.
  build_tool AsyncContended
  echo
  # shellcheck disable=SC2086  # ASYNC_CONTENDED_ARGS is a list of words
  "$bin/AsyncContended" ${ASYNC_CONTENDED_ARGS:-} || status=$?
fi

# Transactions: also a plain release executable; it proves that the readers ran during
# the transactions, which a package-benchmark sample cannot show.
if [[ $transactions == yes ]]; then
  build_tool Transactions
  echo
  echo "Load before Transactions: $(uptime)"
  # shellcheck disable=SC2086  # TRANSACTIONS_ARGS is a list of words
  "$bin/Transactions" --json "$results/transactions.json" ${TRANSACTIONS_ARGS:-} || status=$?
  if [[ ${mode[0]:-} == --update && -f "$results/transactions.json" ]]; then
    mkdir -p "$here/Results"
    cp "$results/transactions.json" "$here/Results/transactions.json"
    build_tool Report
    "$bin/Report" chart "$here/Results/transactions.json" "$here/Results/where-it-wins.svg"
  fi
fi
exit "$status"
