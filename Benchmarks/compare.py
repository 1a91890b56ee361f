#!/usr/bin/env python3
"""Turns one package-benchmark run into one markdown table of ratios.

Reads the `--format histogramSamples` export of a run (one TSV per benchmark and
metric, one line per sample), takes the median sample, divides it by the number of
operations in a sample, and prints ns/op and ratios against references measured in
the same run. See README.md; compare.sh runs the benchmarks and then this.

    compare.py RESULTS_DIR [RESULTS_DIR...]   # print the table (median over runs)
    compare.py RESULTS_DIR --check BASELINE   # ... and exit 1 on a regressed ratio
    compare.py RESULTS_DIR --update BASELINE  # ... and rewrite the baseline
"""

import argparse
import json
import os
import re
import statistics
import sys
from collections import defaultdict

# package-benchmark's `.mega`: every row runs 1M operations per sample unless its
# name says otherwise with "(N ops/sample)".
DEFAULT_OPS = 1_000_000
OPS_TAG = re.compile(r"\s*\((\d+) ops/sample\)")

SECTIONS = [
    "Write", "Read", "Queue", "Append", "Reentrant", "Store", "Confined", "Ref",
]

# The Mutex increment of the Write suite. Every other suite measures its own, named
# "Ref: Mutex.withLock (<Suite> suite)", and its rows' "× Mutex" divides by that one:
# a reference from the same process, moments apart, moves with the same load.
MUTEX = "Write: Mutex.withLock"
SUITE_MUTEX = re.compile(r"^Ref: Mutex\.withLock \((\w+) suite\)$")
ALLOC = "Write: alloc+free of a small class"

# Rows in the order the table shows them; rows not listed follow in name order.
ORDER = [
    MUTEX,
    "Write: NSLock",
    "Write: NSRecursiveLock",
    "Write: DispatchQueue.sync (serial)",
    "Write: actor method, awaited from one Task",
    ALLOC,
    "Write: alloc+free with a weak store+load",
    "Write: SingleWriter checkout+write+release",
    "Write: SingleWriter writeNext (free)",
    "Write: SingleWriter tryWrite",
    "Write: ThreadSafeSingleWriter checkout+write+release",
    "Write: ThreadSafeSingleWriter writeNext (free)",
    "Write: ThreadSafeSingleWriter tryWrite",
    "Write: ThreadSafeSingleWriter withWriter",
    "Write: ThreadSafeSingleWriter await write, one Task",
    "Write: article checkout+write+release",
    "Write: article writeNext (free)",
    "Read: Mutex.withLock { $0 }",
    "Read: SingleWriter.read",
    "Read: ThreadSafeSingleWriter.read",
    "Read: article read",
]

# The row each row is compared with in the "× ref" column (time ratio, lower is
# better), by pattern on the row name.
def reference_for(name):
    section = name.split(":", 1)[0]
    if "(reference)" in name or section == "Ref":
        return None
    if section == "Write":
        return MUTEX
    if section == "Read":
        return "Read: Mutex.withLock { $0 }"
    if section == "Queue":
        return "Queue: SingleWriter 1M writeNext queued, one release"
    if section == "Append":
        size = re.search(r"(\d+[kM]) elements", name)
        return f"Append: Mutex.withLock, {size.group(1)} elements" if size else None
    if section == "Reentrant":
        depth = re.search(r"(\d) deep", name)
        return f"Reentrant: NSRecursiveLock, {depth.group(1)} deep" if depth else None
    if section == "Store":
        # The operation follows the backing, whose name contains "read".
        operation = name.split(")", 1)[-1] if "BarrierStore(" in name else name
        if operation.strip() == "value(forKey:)" or operation.endswith("read"):
            return "Store: NSLock + Dictionary read"
        return "Store: NSLock + Dictionary write"
    if section == "Confined":
        if name.startswith("Confined: tell"):
            return "Confined: actor method, awaited (reference)"
        return "Confined: actor get, awaited from a Task (reference)"
    return None


# The goals from the design, as (label, row, reference row, limit). The ratio is
# row time / reference time. The contended goals are checked by Tools/Contended, which
# compare.sh runs after this.
GOALS = [
    ("checkout ≤ 1× one alloc+free", "Write: SingleWriter checkout+write+release", ALLOC, 1.0),
    ("writeNext (free) ≤ 1× Mutex", "Write: SingleWriter writeNext (free)", MUTEX, 1.0),
    ("thread-safe writeNext (free) ≤ 1.2× Mutex",
     "Write: ThreadSafeSingleWriter writeNext (free)", MUTEX, 1.2),
    ("read ≤ 0.5× Mutex read", "Read: SingleWriter.read", "Read: Mutex.withLock { $0 }", 0.5),
    ("thread-safe read ≤ 0.6× Mutex read", "Read: ThreadSafeSingleWriter.read",
     "Read: Mutex.withLock { $0 }", 0.6),
    ("tryWrite ≤ 0.5× Mutex", "Write: SingleWriter tryWrite", MUTEX, 0.5),
    ("thread-safe tryWrite ≤ 1.3× Mutex", "Write: ThreadSafeSingleWriter tryWrite", MUTEX, 1.3),
    ("thread-safe withWriter ≤ 1.3× Mutex", "Write: ThreadSafeSingleWriter withWriter", MUTEX, 1.3),
    ("append 1k ≤ 1× Mutex append", "Append: SingleWriter held writer, 1k elements",
     "Append: Mutex.withLock, 1k elements", 1.0),
    ("append 100k ≤ 1× Mutex append", "Append: SingleWriter held writer, 100k elements",
     "Append: Mutex.withLock, 100k elements", 1.0),
    ("append 1M ≤ 1× Mutex append", "Append: SingleWriter held writer, 1M elements",
     "Append: Mutex.withLock, 1M elements", 1.0),
]

# Rows the regression check covers: this package's own types. References and the
# article's code are context, shown but not checked. (Contended figures come from
# Tools/Contended, with their own validity checks, and are not in the baseline.)
LIBRARY = re.compile(r"SingleWriter|ReentrantMutex|BarrierStore|Confined: (tell|ask)")


# Checked for allocations only: each `ask` waits for a queue thread to wake up, so its
# time follows the scheduler more than the code.
ALLOCATIONS_ONLY = {"Confined: ask"}


def checked(name):
    return bool(LIBRARY.search(name))


SUFFIX = ".histogram.samples.tsv"
METRICS = {"wallClock": "ns", "mallocCountTotal": "mallocs"}


# Units package-benchmark writes in a samples file's header, e.g. "Malloc (total) (K)".
UNITS = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9, "K": 1e3, "M": 1e6, "G": 1e9}
UNIT = re.compile(r"\(([^()]*)\)\s*$")


def load(results_dir):
    """{row name: {"ns": [...], "mallocs": [...]}}: each sample, per operation."""
    rows = defaultdict(dict)
    for file in sorted(os.listdir(results_dir)):
        if not file.endswith(SUFFIX):
            continue
        stem = file[: -len(SUFFIX)]
        # <baseline>.<target>.<name>.<metric>; the name may contain dots.
        _baseline, target, rest = stem.split(".", 2)
        raw_name, metric = rest.rsplit(".", 1)
        if metric not in METRICS:
            continue
        # package-benchmark turns spaces and slashes into "_"; names here have no "_",
        # and their only "/" is in "ops/sample".
        name = raw_name.replace("_", " ").replace("ops sample)", "ops/sample)")
        with open(os.path.join(results_dir, file)) as handle:
            header, *lines = handle.read().split("\n")
        unit = UNIT.search(header)
        scale = UNITS.get(unit.group(1), 1) if unit else 1
        samples = [float(line) * scale for line in lines if line.strip()]
        tag = OPS_TAG.search(name)
        ops = int(tag.group(1)) if tag else DEFAULT_OPS
        rows[name][METRICS[metric]] = [value / ops for value in samples]
        rows[name]["target"] = target
    return rows


def display(name):
    return OPS_TAG.sub("", name)


def fmt(value, digits=2):
    if value is None:
        return ""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("results", nargs="+", help="one directory per run")
    parser.add_argument("--check", metavar="BASELINE")
    parser.add_argument("--update", metavar="BASELINE")
    parser.add_argument(
        "--tolerance", type=float, default=float(os.environ.get("RATIO_TOLERANCE", "0.5")),
        help="allowed growth of a checked ratio, 0.5 = +50%% (env RATIO_TOLERANCE)")
    args = parser.parse_args()

    runs = [load(directory) for directory in args.results]
    if not any(runs):
        sys.exit(f"no {SUFFIX} files in {' '.join(args.results)}")

    # Per run: the median sample of each row, and ratios within that run. Over runs:
    # the median of those, so one disturbed run cannot move the table much.
    def run_medians(rows, key):
        return {name: statistics.median(r[key]) for name, r in rows.items() if r.get(key)}

    per_run_ns = [run_medians(rows, "ns") for rows in runs]
    per_run_mallocs = [run_medians(rows, "mallocs") for rows in runs]
    all_names = set().union(*per_run_ns)
    ns = {n: statistics.median([r[n] for r in per_run_ns if n in r]) for n in all_names}
    mallocs = {
        n: statistics.median([r[n] for r in per_run_mallocs if n in r])
        for n in set().union(*per_run_mallocs)
    }

    targets = {name: rows["target"] for run in runs for name, rows in run.items()}
    suite_mutex = {MUTEX: "Write"} | {
        name: match.group(1) for name in all_names if (match := SUITE_MUTEX.match(name))
    }
    mutex_of_target = {target: name for name, target in suite_mutex.items()}

    def mutex_for(name):
        return mutex_of_target.get(targets.get(name), MUTEX)

    def ratio(name, reference):
        values = [
            run[name] / run[reference]
            for run in per_run_ns
            if name in run and reference in run and run[reference] > 0
        ]
        return statistics.median(values) if values else None

    def sort_key(name):
        section = name.split(":", 1)[0]
        section_index = SECTIONS.index(section) if section in SECTIONS else len(SECTIONS)
        order_index = ORDER.index(name) if name in ORDER else len(ORDER)
        return (section_index, order_index, name)

    names = sorted(ns, key=sort_key)
    print("| Path | ns/op (median) | × Mutex (same suite) | × 1 alloc | × ref | ref | mallocs/op |")
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: |")
    for name in names:
        reference = reference_for(name)
        per_alloc = ratio(name, ALLOC) if "checkout" in name else None
        # Write rows' reference is Mutex, already in its own column.
        to_ref = ratio(name, reference) if reference not in (None, name, mutex_for(name)) else None
        ref_label = display(reference).split(": ", 1)[1] if to_ref is not None else ""
        ns_text = fmt(ns[name])
        print(
            f"| {display(name)} | {ns_text} | {fmt(ratio(name, mutex_for(name)))} | {fmt(per_alloc)} "
            f"| {fmt(to_ref)} | {ref_label} | {fmt(mallocs.get(name), 3)} |"
        )

    print()
    print("| Goal | Measured | Met |")
    print("| --- | ---: | :---: |")
    for label, name, reference, limit in GOALS:
        value = ratio(name, reference)
        if value is None:
            print(f"| {label} | not run | |")
            continue
        print(f"| {label} | {value:.2f}× | {'yes' if value <= limit else 'no'} |")

    current = {
        name: {"ratioToMutex": round(ratio(name, mutex_for(name)), 4)}
        | ({"mallocsPerOp": round(mallocs[name], 4)} if name in mallocs else {})
        for name in names
        if checked(name) and ratio(name, mutex_for(name)) is not None
    }

    status = 0
    if args.check:
        with open(args.check) as handle:
            baseline = json.load(handle)["rows"]
        failures = []
        for name, base in sorted(baseline.items()):
            now = current.get(name)
            if now is None:
                print(f"note: {display(name)} not in this run", file=sys.stderr)
                continue
            # Below about a nanosecond (0.25× Mutex) timer and load noise dominate.
            limit = max(base["ratioToMutex"] * (1 + args.tolerance), base["ratioToMutex"] + 0.25)
            if name not in ALLOCATIONS_ONLY and now["ratioToMutex"] > limit:
                failures.append(
                    f"{display(name)}: {now['ratioToMutex']:.2f}× Mutex, baseline "
                    f"{base['ratioToMutex']:.2f}×, limit {limit:.2f}×")
            # Allocation counts barely depend on load: growth beyond rounding (or 5% for
            # the few paths through Dispatch, whose counts vary a little) is a regression.
            slack = max(0.01, 0.05 * base.get("mallocsPerOp", 0))
            if "mallocsPerOp" in base and now.get("mallocsPerOp", 0) > base["mallocsPerOp"] + slack:
                failures.append(
                    f"{display(name)}: {now['mallocsPerOp']:.3f} mallocs/op, baseline "
                    f"{base['mallocsPerOp']:.3f}")
        print()
        if failures:
            print(f"REGRESSED (tolerance +{args.tolerance:.0%} on ratios):")
            for failure in failures:
                print(f"- {failure}")
            status = 1
        else:
            print(f"Ratios within +{args.tolerance:.0%} of {os.path.basename(args.check)}; "
                  "allocation counts unchanged.")

    if args.update:
        with open(args.update, "w") as handle:
            json.dump({
                "about": "Ratios to the Mutex.withLock increment of the same suite and run, "
                         "and mallocs per operation, "
                         "from Benchmarks/compare.sh --update. compare.sh --check fails when "
                         "a ratio grows by more than the tolerance (default +50%) or an "
                         "allocation count grows.",
                "rows": current,
            }, handle, indent=2, sort_keys=True, ensure_ascii=False)
            handle.write("\n")
        print(f"\nwrote {args.update}")
    sys.exit(status)


if __name__ == "__main__":
    main()
