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
requirement = re.search(r'\.package\(url:\s*"[^"]+",\s*(.+?)\)\s*$', installs[0], re.M)
if not requirement:
    sys.exit("README.md: the Install block's .package(url:) line has no requirement")
(work / "requirement").write_text(requirement.group(1))
for index, snippet in enumerate(snippets, 1):
    for kind, file in (("Snippet", "Snippet.swift"), ("SnippetMain", "main.swift")):
        folder = work / "readme" / f"{kind}{index}"
        folder.mkdir(parents=True)
        (folder / file).write_text(snippet)
dependency = ('[.product(name: "SingleWriter", package: "SingleWriter"), '
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
# repository, with `main` at this commit, and the README's requirement must resolve in it.
requirement="$(cat "$work/requirement")"
git clone --quiet --bare "$root" "$work/SingleWriter.git"
git -C "$work/SingleWriter.git" branch --force main "$(git -C "$root" rev-parse HEAD)"
mkdir -p "$work/install"
cat >"$work/install/Package.swift" <<EOF
// swift-tools-version:6.0
import PackageDescription
let package = Package(
  name: "App",
  dependencies: [.package(url: "file://$work/SingleWriter.git", $requirement)],
  targets: [
    .target(name: "App", dependencies: [.product(name: "SingleWriter", package: "SingleWriter")])
  ]
)
EOF
mkdir -p "$work/install/Sources/App"
echo 'import SingleWriter' >"$work/install/Sources/App/App.swift"
echo "resolving the README's requirement: $requirement"
if ! swift package --package-path "$work/install" resolve >"$work/install.log" 2>&1; then
  cat "$work/install.log" >&2
  echo "check-readme: the Install section's requirement does not resolve" >&2
  exit 1
fi
echo "README.md: every snippet compiles, and the Install requirement resolves"
