#!/usr/bin/env bash
# Checks that every ratio README.md and the DocC catalog quote ("0.24×", "2.6–2.8x") is in
# the results under Benchmarks/: Benchmarks/README.md's tables, ratios-baseline.json and
# Results/*.json. A figure counts as there when some number in them, rounded to the quoted
# precision, equals it. Writes nothing.
#
#   Scripts/check-figures.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python3 - "$root" <<'EOF'
import pathlib, re, sys
root = pathlib.Path(sys.argv[1])
results = [root / "Benchmarks/README.md", root / "Benchmarks/ratios-baseline.json"]
results += sorted((root / "Benchmarks/Results").glob("*.json"))
numbers = set()
for path in results:
    for token in re.findall(r"\d[\d,]*(?:\.\d+)?", path.read_text()):
        numbers.add(token.replace(",", ""))
values = [float(n) for n in numbers]

def backed(quoted: str) -> bool:
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    target = float(quoted)
    return any(round(v, decimals) == target for v in values)

# A ratio: a number, or a range of two, right before × or x (not a hex literal).
number = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
ratio = re.compile(rf"(?<![\w.,]){number}(?:\s*[–-]\s*{number})?\s?[×x](?![\w])")
docs = [root / "README.md"] + sorted((root / "Sources/SingleWriter/SingleWriter.docc").glob("*.md"))
missing = []
for path in docs:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        for match in ratio.finditer(line):
            for quoted in filter(None, match.groups()):
                quoted = quoted.replace(",", "")
                if not backed(quoted):
                    missing.append(f"{path.relative_to(root)}:{number}: {quoted}× is in no result under Benchmarks/")
if missing:
    print("\n".join(missing), file=sys.stderr)
    sys.exit(f"check-figures: {len(missing)} quoted figures are in no results file")
print(f"check-figures: every ratio in README.md and the DocC catalog is in Benchmarks/")
EOF
