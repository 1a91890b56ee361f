#!/usr/bin/env bash
# Cross-compiles the C platform layer (Sources/SingleWriterAtomics) for every platform the
# package claims, as objects and as assembly, in three variants: plain,
# -DSINGLEWRITER_PORTABLE_WAIT and -DSINGLEWRITER_CHAOS. No Swift compiler here can build
# for Apple or Windows, but clang can build the C layer, where every platform branch lives.
#
# Fails if any file does not compile warning-free, if any Apple target reads TPIDR_EL0
# (the CPU number on XNU, not the thread), if an Apple object uses the private __ulock
# API, if an Apple priority gate (gate.c) is not os_unfair_lock, or if a
# -DSINGLEWRITER_PORTABLE_WAIT object references `syscall`.
#
# Needs zig (its clang ships the libc headers of macOS, iOS, Windows and musl); when
# `zig` is not on PATH, installs the `ziglang` wheel from PyPI into a throwaway venv.
#
#   Scripts/cross-compile-c.sh [output-directory]    # default: a temporary directory
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${1:-$work/out}
mkdir -p "$out"

if command -v zig >/dev/null 2>&1; then
  zig=(zig)
else
  echo "==> zig not found: installing the ziglang wheel into a throwaway venv"
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet ziglang
  zig=("$work/venv/bin/python3" -m ziglang)
fi
# `zig env` prints ZON in recent versions and JSON in older ones.
zig_lib=$("${zig[@]}" env | sed -n 's/.*lib_dir"\{0,1\} *[=:] *"\([^"]*\)".*/\1/p' | head -n 1)
[[ -d $zig_lib ]] || { echo "cannot find zig's lib directory" >&2; exit 1; }
echo "==> zig $("${zig[@]}" version), lib at $zig_lib"

# llvm-nm reads Mach-O and COFF; GNU nm does not, and would make the symbol checks below
# pass vacuously, so there is no fallback to it.
nm=$(command -v llvm-nm || true)
[[ -n $nm ]] || nm="$(dirname "$(command -v swiftc 2>/dev/null || echo /)")/llvm-nm"
[[ -x $nm ]] || { echo "cannot find llvm-nm (it ships with the Swift toolchain)" >&2; exit 1; }

source_dir=Sources/SingleWriterAtomics
sources=("$source_dir"/*.c)
# Every `static inline` function in the headers, emitted as if a caller used it: a
# builtin or an instruction that a target lacks fails only where it is instantiated.
printf '#include "SingleWriterAtomics.h"\n' >"$work/instantiate.c"

targets=(
  aarch64-macos x86_64-macos
  aarch64-ios aarch64-ios-simulator x86_64-ios-simulator
  aarch64-watchos aarch64-tvos
  x86_64-windows-gnu aarch64-windows-gnu
  aarch64-linux-musl
)
variants=(plain portable-wait chaos)
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

for target in "${targets[@]}"; do
  extra=()
  case $target in
    *-ios* | *-watchos* | *-tvos*) extra+=(-isystem "$zig_lib/libc/include/any-darwin-any") ;;
  esac
  for variant in "${variants[@]}"; do
    defines=()
    case $variant in
      portable-wait) defines+=(-DSINGLEWRITER_PORTABLE_WAIT) ;;
      chaos) defines+=(-DSINGLEWRITER_CHAOS) ;;
    esac
    before=$failures
    dir="$out/$target/$variant"
    mkdir -p "$dir"
    for file in "${sources[@]}" "$work/instantiate.c"; do
      name=$(basename "$file" .c)
      flags=(-target "$target" -std=gnu11 -O2 -Wall -Wextra -Werror
        -Wno-unused-command-line-argument -I "$source_dir/include"
        "${extra[@]}" "${defines[@]}")
      if [[ $name == instantiate ]]; then flags+=(-D'inline=__attribute__((used)) inline'); fi
      if ! "${zig[@]}" cc "${flags[@]}" -c "$file" -o "$dir/$name.o" 2>"$dir/$name.log" ||
        ! "${zig[@]}" cc "${flags[@]}" -S "$file" -o "$dir/$name.s" 2>>"$dir/$name.log"; then
        cat "$dir/$name.log" >&2
        fail "$target $variant $name.c does not compile"
        continue
      fi
      if [[ -s $dir/$name.log ]]; then
        cat "$dir/$name.log" >&2
        fail "$target $variant $name.c printed diagnostics"
      fi
    done
    case $target in
      *-macos* | *-ios* | *-watchos* | *-tvos*)
        if grep -iqwE 'tpidr_el0' "$dir"/*.s; then
          grep -iwnE 'tpidr_el0' "$dir"/*.s >&2
          fail "$target $variant reads TPIDR_EL0, which holds the CPU number on Apple"
        fi
        if "$nm" "$dir"/*.o 2>/dev/null | grep -q '__ulock'; then
          fail "$target $variant uses the private __ulock API"
        fi
        # The priority gate must be os_unfair_lock, the Apple lock that boosts its owner.
        # (The list is read whole first: `grep -q` may exit before nm ends, which fails the
        # pipe under pipefail.)
        gate_calls=$("$nm" -u "$dir/gate.o" 2>/dev/null || true)
        for symbol in _os_unfair_lock_trylock _os_unfair_lock_lock _os_unfair_lock_unlock; do
          if ! grep -qw -- "$symbol" <<<"$gate_calls"; then
            fail "$target $variant: the priority gate does not call $symbol"
          fi
        done
        ;;
    esac
    if [[ $variant == portable-wait ]] && "$nm" -u "$dir"/*.o 2>/dev/null | grep -qwE '_?syscall'; then
      fail "$target $variant references syscall"
    fi
    if ((failures == before)); then echo "ok  $target $variant"; fi
  done
done

if ((failures > 0)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "==> the C layer compiles for ${#targets[@]} targets x ${#variants[@]} variants"
