#!/usr/bin/env bash
# Checks that every ratio README.md and the DocC catalogs (Sources/*/*.docc/*.md) quote
# ("0.24×", "2.6–2.8x") is in a results file under Benchmarks/ that the same section
# names (a path such as `Benchmarks/README.md` or Benchmarks/Results/transactions.json,
# between one heading and the next). A figure counts as there when some ratio in that
# file, rounded to the quoted precision, equals it: in Markdown, a number written as a
# ratio or in a table column whose header says ratio ("× Mutex", "a / b"); in JSON, the
# value of a key that says so ("persistedOverUnpersisted", "readsRatio"). A time or a
# count that happens to match is not enough. A section that quotes a ratio and
# names no results file fails too. Code blocks are skipped. Before the docs, the check
# runs on a planted figure and on text that is not a ratio, so that it cannot pass by
# matching nothing. Writes nothing.
#
#   Scripts/check-figures.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python3 - "$root" <<'EOF'
import json, pathlib, re, sys
root = pathlib.Path(sys.argv[1])

# A ratio: a number, or a range of two, right before × or a directly attached x (so not
# a hex literal, "2x2", "3 x 4" or an identifier).
number = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
ratio = re.compile(rf"(?<![\w.,]){number}(?:\s*[–-]\s*{number})?(?:\s?×|x)(?!\w)")
named = re.compile(r"Benchmarks/[\w./-]+\.(?:md|json)")
numbers_in = {}

def ratios_in_json(value, key=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from ratios_in_json(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from ratios_in_json(v, key)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and re.search(r"Over|[Rr]atio", key):
        yield float(value)

def numbers(path: str) -> list[float]:
    if path not in numbers_in:
        text = (root / path).read_text()
        if path.endswith(".json"):
            numbers_in[path] = list(ratios_in_json(json.loads(text)))
        else:
            numbers_in[path] = list(ratios_in_markdown(text))
    return numbers_in[path]

def ratios_in_markdown(text: str):
    """The ratios of a Markdown results file: every number written as one ("1.19×"), and
    every number in a table column whose header says it holds ratios ("× Mutex",
    "ratio", "persisted / unpersisted")."""
    for match in ratio.finditer(text):
        yield from (float(v.replace(",", "")) for v in match.groups() if v)
    columns = []
    for line in text.splitlines():
        if not line.startswith("|"):
            columns = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
            continue
        if not columns:
            columns = [bool(re.search(r"×|\bratio|\s/\s|\bx\b", c, re.I)) for c in cells]
            continue
        for is_ratio, cell in zip(columns, cells):
            if is_ratio:
                yield from (float(t.replace(",", "")) for t in re.findall(r"\d[\d,]*(?:\.\d+)?", cell))

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

# Only ratios count: a time in the same table, a count in the same JSON, do not.
table = "| Path | ns/op | × Mutex |\n| --- | ---: | ---: |\n| a | 9.83 | 1.22 |\n\nAt 2.5× here, 7 ms there.\n"
assert sorted(ratios_in_markdown(table)) == [1.22, 2.5], sorted(ratios_in_markdown(table))
results = {"p50Ns": 5, "persistedOverUnpersisted": 0.7, "rows": [{"readsRatio": 2, "writes": 9}]}
assert list(ratios_in_json(results)) == [0.7, 2.0], list(ratios_in_json(results))

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
