#!/usr/bin/env bash
# Builds the DocC documentation for the SingleWriter and SingleWriterPersistence modules,
# with warnings as errors, as CI does. Needs only the Swift toolchain (docc ships with it).
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
swift build --scratch-path "$scratch" --target SingleWriterPersistence \
  -Xswiftc -emit-symbol-graph \
  -Xswiftc -emit-symbol-graph-dir -Xswiftc "$symbols" \
  -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public

args=(--output-path "$scratch/SingleWriter.doccarchive")
if [[ " $* " == *" --output-path "* ]]; then args=(); fi
"$docc" convert Sources/SingleWriter/SingleWriter.docc \
  --additional-symbol-graph-dir "$symbols" \
  --fallback-display-name SingleWriter \
  --fallback-bundle-identifier SingleWriter \
  --warnings-as-errors \
  "${args[@]}" "$@"

# SingleWriterPersistence: its own archive, from its own symbol graph only (the build
# above wrote both modules' graphs into one folder).
persistence_symbols="$scratch/persistence-symbol-graphs"
rm -rf "$persistence_symbols"
mkdir -p "$persistence_symbols"
cp "$symbols"/SingleWriterPersistence*.symbols.json "$persistence_symbols"/
"$docc" convert Sources/SingleWriterPersistence/SingleWriterPersistence.docc \
  --additional-symbol-graph-dir "$persistence_symbols" \
  --fallback-display-name SingleWriterPersistence \
  --fallback-bundle-identifier SingleWriterPersistence \
  --warnings-as-errors \
  --output-path "$scratch/SingleWriterPersistence.doccarchive"
