#!/usr/bin/env bash
# Runs Tools/Scaling twice: on the machine as it is ("quiet"), then beside one busy-looping
# process per core, which this script starts and always stops (on exit, error or ^C); then
# prints one report of both: uses/s and latency as ratios to an actor, issue 30's goals,
# validity and the wait histograms. See Benchmarks/README.md, Scaling.
#
#   Benchmarks/scaling.sh                      # quiet, then busy: 5 rounds of 300 ms per row
#   Benchmarks/scaling.sh --quiet-only         # or --busy-only
#   Benchmarks/scaling.sh --strict             # exit 1 unless valid and every goal passes
#   SCALING_ARGS="--rounds 9 --tasks 64,256" Benchmarks/scaling.sh
#
# Environment: SCALING_ARGS (options for each run of the tool: `Scaling --help`);
# BUSY_LOOPS (busy processes, default one per core: `nproc`); RESULTS_DIR to keep each
# run's JSON and output (scaling-quiet.json, scaling-busy.json, ...) instead of a temporary
# directory; SCRATCH_PATH for a build directory other than Benchmarks/.build.
# Exit status: that of the report (3 if a write was lost or ran with an old token), else 2
# if a run failed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
conditions=(quiet busy)
strict=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quiet-only) conditions=(quiet) ;;
    --busy-only) conditions=(busy) ;;
    --strict) strict=(--strict) ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "scaling.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# shellcheck source=lib.sh
source "$here/lib.sh"
open_results

build_tool Scaling
scaling="$bin/Scaling"

files=()
status=0
for condition in "${conditions[@]}"; do
  label="$condition"
  if [[ $condition == busy ]]; then
    label="busy ($loops busy loops)"
    start_busy
  fi
  echo "Load before $label: $(uptime)"
  run_status=0
  # In the background, so that a signal runs the trap at once, not after the run.
  # shellcheck disable=SC2086  # SCALING_ARGS is a list of words
  "$scaling" --condition "$label" --json "$results/scaling-$condition.json" ${SCALING_ARGS:-} \
    >"$results/scaling-$condition.txt" 2>&1 &
  tool=$!
  wait "$tool" || run_status=$?
  tool=""
  stop_busy
  if [[ $run_status -ne 0 || ! -s "$results/scaling-$condition.json" ]]; then
    cat "$results/scaling-$condition.txt" >&2
    echo "scaling.sh: the $condition run failed (status $run_status)" >&2
    if [[ $run_status -eq 3 ]]; then status=3; else status=2; fi
  fi
  if [[ -s "$results/scaling-$condition.json" ]]; then files+=("$results/scaling-$condition.json"); fi
done
echo "Load after: $(uptime)"
echo
[[ ${#files[@]} -gt 0 ]] || exit 2
report_status=0
"$scaling" report ${strict[@]+"${strict[@]}"} "${files[@]}" || report_status=$?
if [[ $report_status -ne 0 ]]; then exit "$report_status"; fi
exit "$status"
