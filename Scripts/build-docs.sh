#!/usr/bin/env bash
# Builds the DocC documentation for the SingleWriter, SingleWriterCompanions and
# SingleWriterPersistence modules, with warnings as errors, as CI does. Needs only the Swift toolchain (docc ships with it).
#
#   Scripts/build-docs.sh                    # archives in .build-docs/<Module>.doccarchive
#   Scripts/build-docs.sh --output-path DIR  # SingleWriter's; other arguments go to
#                                            # `docc convert`
set -euo pipefail
cd "$(dirname "$0")/.."

# Every Swift block in the articles must appear verbatim in the examples (Examples/*.swift,
# with their `///` lines left out), which `swift build` compiles: that is what keeps the
# articles' code compiling. SwiftUI blocks are the exception: no toolchain here has SwiftUI.
examples="$(cat Examples/*.swift | grep -v '^ *///')"
for article in Sources/SingleWriter/SingleWriter.docc/*.md \
  Sources/SingleWriterCompanions/SingleWriterCompanions.docc/*.md \
  Sources/SingleWriterPersistence/SingleWriterPersistence.docc/*.md; do
  [[ "$(basename "$article")" == SingleWriter*.md ]] && continue
  block="" inside=0
  while IFS= read -r line; do
    if ((inside)); then
      if [[ "$line" == '```' ]]; then
        if [[ "$block" != '#if canImport(SwiftUI)'* && "$examples" != *"$block"* ]]; then
          printf '%s: a swift block is not in the examples:\n%s\n' \
            "$article" "$block" >&2
          exit 1
        fi
        inside=0 block=""
      elif [[ ! "$line" =~ ^\ */// ]]; then
        block+="${block:+$'\n'}$line"
      fi
    elif [[ "$line" == '```swift' ]]; then
      inside=1
    fi
  done <"$article"
done

scratch="${DOCS_SCRATCH_PATH:-.build-docs}"
symbols="$scratch/symbol-graphs"
docc="${DOCC:-$(command -v docc || xcrun --find docc)}"

# The compiler writes a module's symbol graph when it emits the module, so an up-to-date
# build leaves the last graph in place, which is then still right. Without one, start over.
if [[ ! -f "$symbols/SingleWriter.symbols.json" ]]; then rm -rf "$scratch"; fi
mkdir -p "$symbols"
for target in SingleWriterPersistence SingleWriterCompanions; do
  swift build --scratch-path "$scratch" --target "$target" \
    -Xswiftc -emit-symbol-graph \
    -Xswiftc -emit-symbol-graph-dir -Xswiftc "$symbols" \
    -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public
done

args=(--output-path "$scratch/SingleWriter.doccarchive")
if [[ " $* " == *" --output-path "* ]]; then args=(); fi
# Each module's archive is made from that module's symbol graphs only (the builds above
# wrote every module's graphs into one folder).
core_symbols="$scratch/SingleWriter-symbol-graphs"
rm -rf "$core_symbols"
mkdir -p "$core_symbols"
cp "$symbols"/SingleWriter.symbols.json "$core_symbols"/
cp "$symbols"/SingleWriter@*.symbols.json "$core_symbols"/ 2>/dev/null || true
"$docc" convert Sources/SingleWriter/SingleWriter.docc \
  --additional-symbol-graph-dir "$core_symbols" \
  --fallback-display-name SingleWriter \
  --fallback-bundle-identifier SingleWriter \
  --warnings-as-errors \
  "${args[@]}" "$@"

# SingleWriterPersistence and SingleWriterCompanions: an archive each.
for module in SingleWriterPersistence SingleWriterCompanions; do
  module_symbols="$scratch/$module-symbol-graphs"
  rm -rf "$module_symbols"
  mkdir -p "$module_symbols"
  cp "$symbols/$module".symbols.json "$module_symbols"/
  cp "$symbols/$module"@*.symbols.json "$module_symbols"/ 2>/dev/null || true
  "$docc" convert "Sources/$module/$module.docc" \
    --additional-symbol-graph-dir "$module_symbols" \
    --fallback-display-name "$module" \
    --fallback-bundle-identifier "$module" \
    --warnings-as-errors \
    --output-path "$scratch/$module.doccarchive"
done
