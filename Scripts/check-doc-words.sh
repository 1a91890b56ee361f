#!/usr/bin/env bash
# Checks that the user docs, README.md and the DocC catalogs (Sources/*/*.docc/*.md),
# hold at most 8,000 words together, counted as `wc -w` counts them: what a user must read
# stays what a user needs. Maintainers' material belongs in Docs/ (see CONTRIBUTING.md).
# Writes nothing.
#
#   Scripts/check-doc-words.sh   # prints each file's count and the total
set -euo pipefail
cd "$(dirname "$0")/.."
limit=8000
wc -w README.md Sources/*/*.docc/*.md
total=$(cat README.md Sources/*/*.docc/*.md | wc -w)
if ((total > limit)); then
  echo "check-doc-words: README.md and the DocC catalogs hold $total words, over $limit;" \
    "cut, or move maintainers' material to Docs/" >&2
  exit 1
fi
echo "check-doc-words: $total words of user docs (at most $limit)"
