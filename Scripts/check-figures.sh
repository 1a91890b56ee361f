#!/usr/bin/env bash
# Checks that every ratio README.md and the DocC catalogs (Sources/*/*.docc/*.md) quote
# ("0.24×", "2.6–2.8x") is in a results file under Benchmarks/ that the same section
# names (a path such as `Benchmarks/README.md` or Benchmarks/Results/transactions.json,
# between one heading and the next). A figure counts as there when some number in that
# file, rounded to the quoted precision, equals it. A section that quotes a ratio and
# names no results file fails too. Code blocks are skipped. Before the docs, the check
# runs on a planted figure and on text that is not a ratio, so that it cannot pass by
# matching nothing. Writes nothing.
#
#   Scripts/check-figures.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python3 - "$root" <<'EOF'
import pathlib, re, sys
root = pathlib.Path(sys.argv[1])

# A ratio: a number, or a range of two, right before × or a directly attached x (so not
# a hex literal, "2x2", "3 x 4" or an identifier).
number = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
ratio = re.compile(rf"(?<![\w.,]){number}(?:\s*[–-]\s*{number})?(?:\s?×|x)(?!\w)")
named = re.compile(r"Benchmarks/[\w./-]+\.(?:md|json)")
numbers_in = {}

def numbers(path: str) -> list[float]:
    if path not in numbers_in:
        tokens = re.findall(r"\d[\d,]*(?:\.\d+)?", (root / path).read_text())
        numbers_in[path] = [float(t.replace(",", "")) for t in tokens]
    return numbers_in[path]

def backed(quoted: str, files: list[str]) -> bool:
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    target = float(quoted)
    return any(round(v, decimals) == target for f in files for v in numbers(f))

def check(name: str, text: str) -> list[str]:
    """The problems of one document: figures in no results file its section names."""
    problems, sections, fenced = [], [[]], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("#"):
            sections.append([])
        sections[-1].append((number, line))
    for section in sections:
        files = sorted({f for _, line in section for f in named.findall(line)})
        for f in files:
            if not (root / f).is_file():
                problems.append(f"{name}: names {f}, which does not exist")
        files = [f for f in files if (root / f).is_file()]
        for number, line in section:
            for match in ratio.finditer(line):
                for quoted in filter(None, match.groups()):
                    quoted = quoted.replace(",", "")
                    if not files:
                        problems.append(f"{name}:{number}: {quoted}× is quoted in a section that names no results file under Benchmarks/")
                    elif not backed(quoted, files):
                        problems.append(f"{name}:{number}: {quoted}× is in none of {', '.join(files)}")
    return problems

# The check itself: a planted figure fails, a real one passes, and text that is not a
# ratio is no figure.
planted = "## Planted\n\nFrom Benchmarks/README.md: 0.24× and 123.457× a mutex.\n"
assert check("planted", planted) == ["planted:3: 123.457× is in none of Benchmarks/README.md"], check("planted", planted)
assert check("unnamed", "## A\n\n0.24× a mutex.\n") != []
not_ratios = "## B\n\n0x1F, a 2x2 grid, 3 x 4, `$0.x`, x86, 10 ms, v1.2\n\n```swift\nlet r = 9.99×\n```\n"
assert check("not ratios", not_ratios) == [], check("not ratios", not_ratios)

docs = [root / "README.md"] + sorted(root.glob("Sources/*/*.docc/*.md"))
missing = [p for path in docs for p in check(str(path.relative_to(root)), path.read_text())]
if missing:
    print("\n".join(missing), file=sys.stderr)
    sys.exit(f"check-figures: {len(missing)} quoted figures are in no results file their section names")
print(f"check-figures: every ratio in README.md and the DocC catalogs ({len(docs) - 1} articles) is in the results its section names")
EOF
