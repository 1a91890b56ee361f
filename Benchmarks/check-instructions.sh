#!/usr/bin/env bash
# Counts the instructions each path of Tools/Profile executes per operation, under
# valgrind's callgrind, and compares them with the budgets in instructions-baseline.json:
# a regression check that load on a shared machine cannot move. See Benchmarks/README.md,
# "Instruction budgets".
#
#   Benchmarks/check-instructions.sh              # build Profile, count, check
#   Benchmarks/check-instructions.sh --update     # ... and rewrite the budgets
#   Benchmarks/check-instructions.sh --skip-build # count the Profile already built
#   Benchmarks/check-instructions.sh tsHeldWrite mutex  # only these paths (no --update)
#
# Fails (exit 1) when a path's count exceeds its budget by more than INSTRUCTION_TOLERANCE
# (default 0.10, i.e. +10%), or when a path has no budget. Per operation: (total of the
# path - total of `none`) / OPS, OPS (default 100000) operations. Without valgrind it says
# so and exits 0. SCRATCH_PATH as for compare.sh. Writes only to a temporary directory and,
# with --update, instructions-baseline.json.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
baseline="$here/instructions-baseline.json"
tolerance="${INSTRUCTION_TOLERANCE:-0.10}"
ops="${OPS:-100000}"
update=0
build=1
only=()
for argument in "$@"; do
  case "$argument" in
    --update) update=1 ;;
    --skip-build) build=0 ;;
    -h | --help)
      sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "${0##*/}: unknown option $argument" >&2
      exit 2
      ;;
    *) only+=("$argument") ;;
  esac
done
if ((update)) && ((${#only[@]})); then
  echo "${0##*/}: --update rewrites every budget; name no paths" >&2
  exit 2
fi
if ! command -v valgrind >/dev/null; then
  echo "${0##*/}: valgrind is not installed; instruction budgets not checked"
  exit 0
fi

scratch=()
if [[ -n "${SCRATCH_PATH:-}" ]]; then scratch=(--scratch-path "$SCRATCH_PATH"); fi
swift_build=(swift build -c release --package-path "$here" ${scratch[@]+"${scratch[@]}"} --product Profile)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ((build)); then
  if ! "${swift_build[@]}" >"$work/build.log" 2>&1; then
    cat "$work/build.log" >&2
    echo "${0##*/}: building Tools/Profile failed" >&2
    exit 2
  fi
fi
profile="$("${swift_build[@]}" --show-bin-path)/Profile"
if [[ ! -x "$profile" ]]; then
  echo "${0##*/}: no $profile; build it, or drop --skip-build" >&2
  exit 2
fi
# valgrind 3.19 cannot read the DWARF 5 that swiftc writes: a copy without debug info
# (the symbol table stays).
cp "$profile" "$work/Profile"
if command -v strip >/dev/null; then strip --strip-debug "$work/Profile"; fi

# The budgets: one `"path": count,` per line, as --update writes them.
budget_of() {
  [[ -f "$baseline" ]] || return 0
  sed -n "s/^    \"$1\": *\([0-9.]*\),\{0,1\}$/\1/p" "$baseline"
}
# Every path Profile has, but the contended ones: two threads' interleaving, not the code,
# decides their counts.
read -r -a known <<<"$({ "$work/Profile" 2>/dev/null || true; } | sed -n 's/^usage: Profile <\([^>]*\)>.*/\1/p' |
  tr '|' '\n' | grep -v -e '^none$' -e 'Contended$' | tr '\n' ' ')"
if ((${#only[@]})); then
  for path in "${only[@]}"; do
    if [[ " ${known[*]} " != *" $path "* ]]; then
      echo "${0##*/}: Profile has no path $path (it has: ${known[*]})" >&2
      exit 2
    fi
  done
  paths=("${only[@]}")
elif ((update)); then
  paths=("${known[@]}")
elif [[ ! -f "$baseline" ]]; then
  echo "${0##*/}: no ${baseline#"$here/"}; write it with --update" >&2
  exit 2
else
  read -r -a paths <<<"$(sed -n 's/^    "\([A-Za-z]*\)": *[0-9.]*,\{0,1\}$/\1/p' "$baseline" | tr '\n' ' ')"
fi

total() {
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$1" "$work/Profile" "$1" "$ops" \
    >/dev/null 2>"$work/valgrind.$1" || {
    cat "$work/valgrind.$1" >&2
    echo "${0##*/}: callgrind failed on $1" >&2
    exit 2
  }
  sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$work/cg.$1" | head -1
}

percent="$(awk -v t="$tolerance" 'BEGIN { printf "%g", t * 100 }')"
none="$(total none)"
failed=0
printf '| Path | instructions/op | budget | × budget |\n| --- | ---: | ---: | ---: |\n'
counts=()
for path in "${paths[@]}"; do
  count="$(awk -v t="$(total "$path")" -v b="$none" -v n="$ops" 'BEGIN { printf "%.1f", (t - b) / n }')"
  counts+=("$path=$count")
  budget="$(budget_of "$path")"
  if [[ -z "$budget" ]]; then
    printf '| %s | %s | none |  |\n' "$path" "$count"
    ((update)) || failed=1
    continue
  fi
  verdict="$(awk -v c="$count" -v b="$budget" -v t="$tolerance" \
    'BEGIN { r = b > 0 ? c / b : 0; printf "%.2f%s", r, (c > b * (1 + t) ? " over" : "") }')"
  printf '| %s | %s | %s | %s |\n' "$path" "$count" "$budget" "$verdict"
  [[ "$verdict" == *over ]] && failed=1
done

if ((update)); then
  {
    printf '{\n'
    printf '  "about": "Instructions per operation of each Tools/Profile path under callgrind, minus the none path, from Benchmarks/check-instructions.sh --update. check-instructions.sh fails when a path exceeds its budget by more than 10%%.",\n'
    printf '  "operations": %s,\n' "$ops"
    printf '  "paths": {\n'
    last=$((${#counts[@]} - 1))
    for i in "${!counts[@]}"; do
      separator=","
      ((i == last)) && separator=""
      printf '    "%s": %s%s\n' "${counts[$i]%%=*}" "${counts[$i]#*=}" "$separator"
    done
    printf '  }\n}\n'
  } >"$baseline"
  echo "${0##*/}: wrote ${baseline#"$here/"}"
  exit 0
fi
if ((failed)); then
  echo "${0##*/}: a path exceeds its instruction budget by more than $percent%, or has none" >&2
  exit 1
fi
echo "${0##*/}: every path within its budget (+$percent%)"
