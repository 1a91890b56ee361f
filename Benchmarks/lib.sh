# shellcheck shell=bash
# Shared by compare.sh, scaling.sh and contended.sh, which source it after setting $here
# (this directory) and optionally SCRATCH_PATH and BUSY_LOOPS; $results (where logs go) is
# set by the script, or by open_results.

# --scratch-path, when SCRATCH_PATH asks for a build directory other than Benchmarks/.build.
scratch=()
if [[ -n "${SCRATCH_PATH:-}" ]]; then scratch=(--scratch-path "$SCRATCH_PATH"); fi

# Builds Tools/$1 in release (its log in the results directory) and sets $bin to the
# directory of the executables; stops the script if the build fails.
# shellcheck disable=SC2154  # $here and $results are set by the script that sources this
build_tool() {
  local build=(swift build -c release --package-path "$here" ${scratch[@]+"${scratch[@]}"} --product "$1")
  if ! "${build[@]}" >"$results/$1-build.log" 2>&1; then
    cat "$results/$1-build.log" >&2
    echo "${0##*/}: building Tools/$1 failed" >&2
    exit 2
  fi
  # shellcheck disable=SC2034  # read by the script that sources this
  bin="$("${build[@]}" --show-bin-path)"
}

# The busy condition: one busy-looping process per core (BUSY_LOOPS to change it), started
# by start_busy and stopped by stop_busy, which a script also calls from its exit trap.
busy=()
loops="${BUSY_LOOPS:-$(nproc)}"
busy_since=$SECONDS
start_busy() {
  busy_since=$SECONDS
  # Each loop is a shell builtin loop, no child; `timeout` ends it even if the script is
  # killed with SIGKILL and cannot run its trap.
  for _ in $(seq 1 "$loops"); do
    timeout 1800 sh -c 'while :; do :; done' &
    busy+=($!)
  done
  sleep 1
}
# CPU time, in clock ticks, of the loop that `timeout` (pid $1) runs; 0 where there is no
# /proc (not Linux).
loop_ticks() {
  local child
  child=$(cat "/proc/$1/task/$1/children" 2>/dev/null || true)
  if [[ -z $child ]]; then echo 0; return; fi
  awk '{ print $14 + $15 }' "/proc/${child%% *}/stat" 2>/dev/null || echo 0
}
# Stops the busy loops and says how much CPU they got: each should get about a core while
# the benchmark's threads sleep, and share one with them while they run.
stop_busy() {
  [[ ${#busy[@]} -gt 0 ]] || return 0
  local pid ticks=0
  for pid in "${busy[@]}"; do ticks=$((ticks + $(loop_ticks "$pid"))); done
  for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${busy[@]}"; do wait "$pid" 2>/dev/null || true; done
  busy=()
  awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v s="$((SECONDS - busy_since))" -v n="$loops" \
    'BEGIN { printf "Busy loops stopped after %d s; the %d of them used %.1f s of CPU.\n", s, n, t / hz }'
}

# For a script that runs one tool at a time in the background ($tool) and may start the
# busy loops: sets $results ($RESULTS_DIR, kept, or a temporary directory, removed at exit)
# and the traps that stop the tool and the loops however the script ends.
open_results() {
  if [[ -n "${RESULTS_DIR:-}" ]]; then
    results="$RESULTS_DIR"
    mkdir -p "$results"
  else
    results="$(mktemp -d)"
  fi
  tool=""
  trap close_results EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
# shellcheck disable=SC2317  # run by the trap that open_results sets
close_results() {
  if [[ -n $tool ]]; then kill "$tool" 2>/dev/null || true; wait "$tool" 2>/dev/null || true; fi
  stop_busy
  if [[ -z "${RESULTS_DIR:-}" ]]; then rm -rf "$results"; fi
}
