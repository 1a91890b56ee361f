#!/usr/bin/env bash
# Checks README.md as a newcomer meets it:
# - every Swift block but the Install one compiles as written, in Swift 6 mode, with no
#   warning, twice: as a file of a library module of its own, and as the `main.swift` of
#   an executable (what `swift package init --type executable` gives a newcomer), each in a
#   scratch package that depends on this checkout;
# - the Install block's dependency resolves with the README's own requirement, against a
#   git copy of the committed checkout (so run it on committed work, as CI does).
# Writes nothing into the repository: the scratch packages live in a temporary directory.
#
#   Scripts/check-readme.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Split the README's swift blocks into files: the one with `.package(url:` is the Install
# block, every other one a snippet.
python3 - "$root/README.md" "$work" <<'EOF'
import pathlib, re, sys
readme, work = pathlib.Path(sys.argv[1]).read_text(), pathlib.Path(sys.argv[2])
blocks = re.findall(r"^```swift\n(.*?)^```", readme, re.S | re.M)
snippets = [b for b in blocks if ".package(url:" not in b]
installs = [b for b in blocks if ".package(url:" in b]
if len(installs) != 1 or not snippets:
    sys.exit(f"README.md: expected one Install block and some snippets, found {len(installs)} and {len(snippets)}")
requirement = re.search(r'\.package\(url:\s*"([^"]+)",\s*(.+?)\)\s*$', installs[0], re.M)
if not requirement:
    sys.exit("README.md: the Install block's .package(url:) line has no requirement")
(work / "requirement").write_text(requirement.group(2))
# `package:` must be what SwiftPM calls the dependency: the URL's last path component.
identity = requirement.group(1).rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
named = re.findall(r'\.product\(name:\s*"SingleWriter",\s*package:\s*"([^"]+)"\)', installs[0])
if named != [identity]:
    sys.exit(f"README.md: the Install block names package {named}, not {identity!r}, the last component of its URL")
# Its platforms are the package's own.
manifest = (pathlib.Path(sys.argv[1]).parent / "Package.swift").read_text()
platforms = [re.search(r"^\s*platforms:\s*(\[.*?\])", text, re.M) for text in (installs[0], manifest)]
if not platforms[0] or platforms[0].group(1) != platforms[1].group(1):
    sys.exit("README.md: the Install block's platforms: differ from Package.swift's")
for index, snippet in enumerate(snippets, 1):
    for kind, file in (("Snippet", "Snippet.swift"), ("SnippetMain", "main.swift")):
        folder = work / "readme" / f"{kind}{index}"
        folder.mkdir(parents=True)
        (folder / file).write_text(snippet)
dependency = ('[.product(name: "SingleWriter", package: "SingleWriter"), '
              '.product(name: "SingleWriterCompanions", package: "SingleWriter"), '
              '.product(name: "SingleWriterPersistence", package: "SingleWriter")]')
targets = ",\n".join(
    f'    .target(name: "Snippet{i}", dependencies: {dependency}, path: "Snippet{i}"),\n'
    f'    .executableTarget(name: "SnippetMain{i}", dependencies: {dependency}, path: "SnippetMain{i}")'
    for i in range(1, len(snippets) + 1))
(work / "readme" / "Package.swift").write_text(f"""// swift-tools-version:6.0
import PackageDescription
let package = Package(
  name: "ReadmeSnippets",
  platforms: [.macOS(.v15), .iOS(.v18)],
  dependencies: [.package(name: "SingleWriter", path: "{sys.argv[1].rsplit('/', 1)[0]}")],
  targets: [
{targets}
  ],
  swiftLanguageModes: [.v6]
)
""")
print(f"README.md: {len(snippets)} snippets, each as a library file and as main.swift")
EOF

echo "compiling the README's snippets"
if ! swift build --package-path "$work/readme" >"$work/snippets.log" 2>&1; then
  cat "$work/snippets.log" >&2
  echo "check-readme: a README snippet does not compile" >&2
  exit 1
fi
if grep -E '(warning|error):' "$work/snippets.log" | grep -v 'Package.resolved'; then
  echo "check-readme: a README snippet compiles with warnings" >&2
  exit 1
fi

# The Install block: a bare git copy of the committed checkout stands in for the hosted
# repository, with `main` at this commit, and the README's requirement must resolve in it,
# and its product load, under the README's name and under a fork's, whose `package:` is
# named by the README's rule (the URL's last component).
requirement="$(cat "$work/requirement")"
for fork in SingleWriter single-writer-fork; do
  git clone --quiet --bare "$root" "$work/$fork.git"
  git -C "$work/$fork.git" branch --force main "$(git -C "$root" rev-parse HEAD)"
  mkdir -p "$work/install-$fork/Sources/App"
  cat >"$work/install-$fork/Package.swift" <<EOF
// swift-tools-version:6.0
import PackageDescription
let package = Package(
  name: "App",
  dependencies: [.package(url: "file://$work/$fork.git", $requirement)],
  targets: [
    .target(name: "App", dependencies: [.product(name: "SingleWriter", package: "$fork")])
  ]
)
EOF
  echo 'import SingleWriter' >"$work/install-$fork/Sources/App/App.swift"
  echo "loading the README's dependency from $fork.git: $requirement"
  if ! swift package --package-path "$work/install-$fork" describe >"$work/install.log" 2>&1; then
    cat "$work/install.log" >&2
    echo "check-readme: the Install section's dependency does not load from $fork.git" >&2
    exit 1
  fi
done
echo "README.md: every snippet compiles, and the Install dependency loads whatever the URL's name"
