#!/usr/bin/env bash
# Runs Tools/Contended and Tools/AsyncContended on the machine as it is ("quiet"), then
# beside one busy-looping process per core (lib.sh's, as scaling.sh), and gathers both
# tools' JSON into one file: contended writes in the tools' own shapes and as a request
# handler makes them (issue 37), each condition with its load average. See
# Benchmarks/README.md, Contended.
#
#   Benchmarks/contended.sh                          # quiet, then busy
#   Benchmarks/contended.sh --quiet-only             # or --busy-only
#   Benchmarks/contended.sh --json out.json          # the combined JSON
#   CONTENDED_ARGS="--rounds 7" ASYNC_CONTENDED_ARGS="--rounds 7" Benchmarks/contended.sh
#   Benchmarks/contended.sh --summarize out.json run1.json run2.json ...
#       # several runs' combined JSON in one: each ratio's median over runs and its spread,
#       # and the runs themselves in raw/ beside it (out of the docs' figure check's reach)
#
# Environment: CONTENDED_ARGS (default "--threads 2,4") and ASYNC_CONTENDED_ARGS, options
# for each run of the tools; BUSY_LOOPS (busy processes, default one per core); RESULTS_DIR
# to keep each run's text and JSON instead of a temporary directory; SCRATCH_PATH for a
# build directory other than Benchmarks/.build.
# Exit status: 3 if a write was lost, else 2 if a run failed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
conditions=(quiet busy)
json=""
if [[ ${1:-} == --summarize ]]; then
  shift
  [[ $# -ge 2 ]] || { echo "contended.sh: --summarize OUT RUN.json..." >&2; exit 2; }
  exec python3 - "$@" <<'EOF'
import json, pathlib, statistics, sys
out, paths = pathlib.Path(sys.argv[1]), sys.argv[2:]
runs = [json.load(open(path)) for path in paths]
conditions, series = [], {}
for index, run in enumerate(runs, 1):
    for condition, tools in run.items():
        for measure, tool in tools.items():
            if tool is None:
                continue
            conditions.append({
                "run": index, "condition": tool["condition"], "tool": tool["tool"],
                "load_before": tool["load_before"], "load_after": tool["load_after"],
                "valid": tool.get("valid_run", tool.get("exact")),
                "sanity": tool.get("sanity")})
            count = "threads" if measure == "threads" else "tasks"
            for ratio in tool["ratios"]:
                key = (condition, measure, ratio.get("shape", ""), ratio["kind"], ratio["over"],
                       ratio[count])
                series.setdefault(key, []).append(ratio)
ratios = []
for (condition, measure, shape, kind, over, n), found in sorted(series.items()):
    values = [r["throughput_ratio"] for r in found if r["throughput_ratio"] is not None]
    lows = [r["round_min"] for r in found if r["round_min"] is not None]
    highs = [r["round_max"] for r in found if r["round_max"] is not None]
    ratios.append({
        "condition": condition, "by": measure, "shape": shape, "kind": kind, "over": over,
        measure: n, "median_of_runs": round(statistics.median(values), 3) if values else None,
        "runs": values, "run_min": min(values, default=None), "run_max": max(values, default=None),
        "round_min": min(lows, default=None), "round_max": max(highs, default=None)})
json.dump({"conditions": conditions, "ratios": ratios}, open(out, "w"), indent=1, sort_keys=True)
raw = out.parent / "raw" / (out.stem + "-runs.json")
raw.parent.mkdir(exist_ok=True)
json.dump({"runs": runs}, open(raw, "w"), indent=1, sort_keys=True)
EOF
fi
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quiet-only) conditions=(quiet) ;;
    --busy-only) conditions=(busy) ;;
    --json) json="${2:?--json needs a path}"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "contended.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# shellcheck source=lib.sh
source "$here/lib.sh"
open_results

build_tool Contended
build_tool AsyncContended

status=0
# Runs tool $1 with the words of $2 and the condition $3, output to $results/$4.{txt,json};
# in the background, so that a signal runs the trap at once.
run() {
  local run_status=0
  # shellcheck disable=SC2086  # $2 is a list of words
  "$bin/$1" $2 --condition "$3" --json "$results/$4.json" >"$results/$4.txt" 2>&1 &
  tool=$!
  wait "$tool" || run_status=$?
  tool=""
  cat "$results/$4.txt"
  if [[ $run_status -ne 0 && $run_status -ne 1 ]] || [[ ! -s "$results/$4.json" ]]; then
    echo "contended.sh: $1 ($3) failed (status $run_status)" >&2
    if [[ $run_status -eq 3 ]]; then status=3; elif [[ $status -eq 0 ]]; then status=2; fi
  fi
}

combined="{"
for condition in "${conditions[@]}"; do
  label="$condition"
  if [[ $condition == busy ]]; then
    label="busy ($loops busy loops)"
    start_busy
  fi
  echo "Load before $label: $(uptime)"
  run Contended "${CONTENDED_ARGS:---threads 2,4}" "$label" "contended-$condition"
  run AsyncContended "${ASYNC_CONTENDED_ARGS:-}" "$label" "async-contended-$condition"
  stop_busy
  echo "Load after $label: $(uptime)"
  [[ $combined == "{" ]] || combined+=","
  combined+="\"$condition\": {\"threads\": $(cat "$results/contended-$condition.json" 2>/dev/null || echo null),"
  combined+=" \"tasks\": $(cat "$results/async-contended-$condition.json" 2>/dev/null || echo null)}"
done
if [[ -n $json ]]; then printf '%s}\n' "$combined" >"$json"; fi
exit "$status"
