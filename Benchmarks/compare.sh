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
#   Benchmarks/compare.sh --scaling-only   # only scaling.sh: Tools/Scaling, quiet and busy
#   Benchmarks/compare.sh --skip-scaling   # no Scaling report
#   Benchmarks/compare.sh --server-only    # only server-bench.sh (needs wrk)
#   Benchmarks/compare.sh --skip-server    # no server table
#
# After the suites, it builds and runs Tools/Contended, which prints the contended table,
# its validity and its goals (2, 4 and 8 threads; see README.md, Contended), then
# Tools/Transactions: long transactions while others read, and a token refresh, with the
# goals of issue 24 (see README.md, Transactions); with --update it also rewrites
# Results/transactions.json and the chart drawn from it, Results/where-it-wins.svg. The table
# and the chart come from Tools/Report, built like the other tools. Then scaling.sh: a token
# refresh and small writes from 8, 64 and 256 tasks, quiet and beside one busy loop per core,
# with the goals of issue 30 (see README.md, Scaling); and last server-bench.sh, the
# Hummingbird server under wrk at 64 and 256 connections (see README.md, Server), if wrk is
# installed.
# `--target` with a suite skips the tools; `--target Contended`, `--target Transactions`,
# `--target Scaling` or `--target Server` runs only that one.
#
# Environment: RATIO_TOLERANCE (default 0.5, i.e. +50%) for --check;
# RESULTS_DIR to keep the raw samples instead of a temporary directory;
# CONTENDED_ARGS for Tools/Contended (e.g. "--rounds 9" or "--strict", which fails the
# run unless it is valid and every contended goal passes); ASYNC_CONTENDED_ARGS for
# Tools/AsyncContended (e.g. "--rounds 9 --ops 200000"); TRANSACTIONS_ARGS for
# Tools/Transactions (e.g. "--rounds 9 --readers 1"); SCALING_ARGS for Tools/Scaling
# (e.g. "--rounds 9"; see scaling.sh); ROUNDS, DURATION and CONNECTIONS for server-bench.sh;
# SCRATCH_PATH for a build directory other than Benchmarks/.build.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
mode=()
passthrough=()
runs=1
suites=yes
contended=yes
transactions=yes
scaling=yes
server=yes
while [[ $# -gt 0 ]]; do
  case "$1" in
    --check) mode=(--check "$here/ratios-baseline.json") ;;
    --update) mode=(--update "$here/ratios-baseline.json") ;;
    --runs) runs="$2"; shift ;;
    --contended-only) suites=no; transactions=no; scaling=no; server=no ;;
    --skip-contended) contended=no ;;
    --transactions-only) suites=no; contended=no; scaling=no; server=no ;;
    --skip-transactions) transactions=no ;;
    --scaling-only) suites=no; contended=no; transactions=no; server=no ;;
    --skip-scaling) scaling=no ;;
    --server-only) suites=no; contended=no; transactions=no; scaling=no ;;
    --skip-server) server=no ;;
    --target)
      case "${2:-}" in
        Contended) suites=no; transactions=no; scaling=no; server=no ;;
        Transactions) suites=no; contended=no; scaling=no; server=no ;;
        Scaling) suites=no; contended=no; transactions=no; server=no ;;
        Server) suites=no; contended=no; transactions=no; scaling=no ;;
        *) contended=no; transactions=no; scaling=no; server=no; passthrough+=("$1" "${2:-}") ;;
      esac
      shift ;;
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

# shellcheck source=lib.sh
source "$here/lib.sh"

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

# Scaling: many tasks on the default pool, quiet and beside a busy loop per core, which
# scaling.sh starts and stops itself; it prints one report of both conditions.
if [[ $scaling == yes ]]; then
  echo
  # It keeps its JSON in RESULTS_DIR when that is set, as scaling-quiet.json and
  # scaling-busy.json.
  "$here/scaling.sh" || status=$?
fi

# The Hummingbird server under wrk, at 64 and 256 connections; only where wrk is installed.
if [[ $server == yes ]]; then
  echo
  if command -v wrk >/dev/null; then
    CONNECTIONS="${CONNECTIONS:-64 256}" "$here/server-bench.sh" || status=$?
  else
    echo "Server: skipped, wrk is not installed (apt-get install wrk); see README.md, Server."
  fi
fi
exit "$status"
