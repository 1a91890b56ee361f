# shellcheck shell=bash
# Shared by compare.sh and scaling.sh, which source it after setting $here (this
# directory), $results (where logs go) and optionally SCRATCH_PATH.

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
