#!/usr/bin/env bash
# Checks the GitHub Actions workflows (.github/workflows), the only place the Swift
# sources build for Apple, so that they are at least well-formed here:
# - actionlint, when it is on PATH;
# - otherwise, since this machine reaches neither GitHub nor the Go module proxy that
#   actionlint comes from: the workflow schema that check-jsonschema vendors (a PyPI
#   wheel, installed into a throwaway venv), and shellcheck on every `run:` script
#   (Debian's shellcheck, installed with apt-get when absent and allowed).
# Writes nothing into the repository.
#
#   Scripts/lint-workflows.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
workflows=("$root"/.github/workflows/*.yml)

if command -v actionlint >/dev/null 2>&1; then
  actionlint "${workflows[@]}"
  echo "workflows: actionlint found nothing"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "==> actionlint not found: the vendored workflow schema and shellcheck instead"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet check-jsonschema pyyaml
"$work/venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows "${workflows[@]}"

if ! command -v shellcheck >/dev/null 2>&1; then
  # A fresh machine has no package lists yet: fetch them once, then install.
  { apt-get install -y -qq shellcheck >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq shellcheck >/dev/null 2>&1; }; } || {
    echo "shellcheck is missing and could not be installed" >&2
    exit 1
  }
fi
# Each `run:` block as a bash script; `${{ … }}` expressions become a plain word.
"$work/venv/bin/python3" - "$work" "${workflows[@]}" <<'PY'
import pathlib, re, sys, yaml
work, files = pathlib.Path(sys.argv[1]), sys.argv[2:]
count = 0
for path in files:
    for job_name, job in yaml.safe_load(pathlib.Path(path).read_text())["jobs"].items():
        for index, step in enumerate(job.get("steps", [])):
            if "run" not in step:
                continue
            script = re.sub(r"\$\{\{[^}]*\}\}", "EXPRESSION", step["run"])
            name = f"{pathlib.Path(path).stem}-{job_name}-{index}.sh"
            (work / name).write_text("#!/usr/bin/env bash\nset -e\n" + script)
            count += 1
print(f"workflows: {count} run scripts")
PY
shellcheck --shell=bash "$work"/*.sh
echo "workflows: the schema and shellcheck found nothing"
