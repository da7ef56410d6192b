#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compare rcl-sim policies with the peers of the reference table.

usage: compare.py RCL_SIM TRACES_DIR POLICY[,POLICY...]
                  [--table|--markdown|--families] [--neighbours N]

Runs every policy over the 19 shared traces other than the SNIA samples at
1/5/10/25 % and prints, per policy and per peer algorithm of
reference-miss-ratios.tsv, the mean miss ratio over the cells where the
LIRS authors' program (lirs-ref) is defined (75 cells), and the worst cell
minus LRU.  With --table, also one line per trace and policy; with
--markdown, a Markdown table per trace and capacity of the first policy
against LRU, ARC, LIRS (the authors' program) and S3-FIFO, then the summary.
With --families, also the mean per trace family (ARC 8 cells, LIRS 51,
cache2k 8, corda 4, cloudPhysics 4: the 75 cells) of every policy given and
of every reference row, with the best reference row of each family and each
policy's distance from it.

With --neighbours N, each policy also runs at the 2N capacities within N
objects of every cell's (c - N .. c + N), and the script prints, per policy,
the 75-cell mean and each family's mean over those 2N + 1 capacities, then
the cells whose miss ratio varies by more than 0.005 among them: a figure
that moves that much with one object more or less is luck, not policy.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import TRACES  # noqa: E402

PCTS = (1, 5, 10, 25)

# Trace families by the reference table's trace names.
FAMILIES = (("ARC", "arc_"), ("LIRS", "lirs_"), ("cache2k", "cache2k_"),
            ("corda", "corda_"), ("cloudPhysics", "cloudPhysics"))


def family(trace):
    for name, prefix in FAMILIES:
        if trace.startswith(prefix):
            return name
    return None


def print_families(pols, got, ref, cells):
    """Per family: each policy's mean, the reference rows' best, LRU."""
    algos = sorted({a for (_t, a, _p) in ref})
    print("| family (cells) | %s | best reference row | LRU |"
          % " | ".join(pols))
    print("|---|%s---|---|" % ("---|" * len(pols)))
    for name, _prefix in FAMILIES:
        fc = [(t, p) for t, p in cells if family(t) == name]
        if not fc:
            continue
        best = min((sum(ref[(t, a, p)] for t, p in fc) / len(fc), a)
                   for a in algos if all((t, a, p) in ref for t, p in fc))
        lru = sum(ref[(t, "lru", p)] for t, p in fc) / len(fc)
        means = [sum(got[(t, pol, p)] for t, p in fc) / len(fc)
                 for pol in pols]
        print("| %s (%d) | %s | %.4f (%s) | %.4f |" % (
            name, len(fc), " | ".join("%.4f (%+.4f)" % (m, m - best[0])
                                      for m in means),
            best[0], best[1], lru))
    print()


def run_objects(rcl_sim, tdir, pols, path, fmt, caps):
    """Miss ratio per (policy, capacity in objects)."""
    out = subprocess.run(
        [rcl_sim, "--json", "--policy", ",".join(pols), "--format", fmt,
         "--capacity", ",".join(str(c) for c in caps),
         os.path.join(tdir, path)],
        check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        d = json.loads(line)
        got[(d["policy"], int(d["capacity"]))] = d["miss_ratio"]
    return got


def print_neighbours(rcl_sim, tdir, pols, objs, cells, n):
    """Each policy's means over every cell's capacities c - n .. c + n."""
    near = {}  # (trace, pol, pct) -> [miss ratio at c - n .. c + n]
    for t, (path, fmt, _req, _uniq) in TRACES.items():
        tc = [(p, objs[(t, p)]) for p in PCTS if (t, p) in objs]
        caps = sorted({c + d for _p, c in tc for d in range(-n, n + 1)
                       if c + d >= 2})
        got = run_objects(rcl_sim, tdir, pols, path, fmt, caps)
        for pol in pols:
            for p, c in tc:
                near[(t, pol, p)] = [got[(pol, c + d)]
                                     for d in range(-n, n + 1)
                                     if c + d >= 2]

    def mean(pol, cs):
        vals = [v for t, p in cs for v in near[(t, pol, p)]]
        return sum(vals) / len(vals)

    print("within %d objects of each cell's capacity (%d capacities a cell):"
          % (n, 2 * n + 1))
    print("| policy | mean (75) | %s |" % " | ".join(
        name for name, _prefix in FAMILIES))
    print("|---|---|%s" % ("---|" * len(FAMILIES)))
    for pol in pols:
        print("| %s | %.4f | %s |" % (pol, mean(pol, cells), " | ".join(
            "%.4f" % mean(pol, [(t, p) for t, p in cells
                                if family(t) == name])
            for name, _prefix in FAMILIES)))
    print()
    for pol in pols:
        wide = sorted(((max(v) - min(v), t, p, v)
                       for (t, pp, p), v in near.items() if pp == pol),
                      reverse=True)
        print("%s: cells whose miss ratio varies by more than 0.005:" % pol)
        for rng, t, p, v in wide:
            if rng > 0.005:
                print("  %-20s %3d%%  %.4f .. %.4f (at the cell %.4f)"
                      % (t, p, min(v), max(v), near[(t, pol, p)][
                          objs[(t, p)] - max(2, objs[(t, p)] - n)]))
    print()


def main():
    rcl_sim, tdir, pols = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    table = "--table" in sys.argv
    markdown = "--markdown" in sys.argv
    families = "--families" in sys.argv
    neighbours = 0
    if "--neighbours" in sys.argv:
        neighbours = int(sys.argv[sys.argv.index("--neighbours") + 1])
    ref = {}
    objs = {}  # (trace, pct) -> the cell's capacity in objects
    with open(os.path.join(tdir, "reference-miss-ratios.tsv")) as f:
        next(f)
        for line in f:
            trace, _tool, algo, pct, nobj, mr = line.rstrip("\n").split("\t")
            if algo == "lru":
                objs[(trace, int(pct))] = int(nobj)
            try:
                ref[(trace, algo, int(pct))] = float(mr)
            except ValueError:
                pass  # "n/a(<10)": lirs-ref needs at least 10 objects
    cells = [(t, p) for t in TRACES for p in PCTS if (t, "lirs-ref", p) in ref]
    # The worst cell is taken over every cell that has an LRU row (76).
    all_cells = [(t, p) for t in TRACES for p in PCTS if (t, "lru", p) in ref]
    got = {}
    for t, (path, fmt, _req, _uniq) in TRACES.items():
        out = subprocess.run(
            [rcl_sim, "--json", "--policy", ",".join(pols), "--format", fmt,
             "--capacity", ",".join("%d%%" % p for p in PCTS),
             os.path.join(tdir, path)],
            check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            d = json.loads(line)
            got[(t, d["policy"], int(d["capacity_pct"]))] = d["miss_ratio"]
        if table:
            for pol in pols:
                print("%-20s %-10s %s" % (t, pol, " ".join(
                    "%.4f" % got[(t, pol, p)] for p in PCTS)))
    if markdown:
        peers = ("lru", "arc", "lirs-ref", "s3fifo")
        print("| trace | cap | %s | %s |" % (pols[0], " | ".join(peers)))
        print("|---|---|---|%s" % ("---|" * len(peers)))
        for t in TRACES:
            for p in PCTS:
                if (t, "lru", p) not in ref:
                    continue
                print("| %s | %d%% | %.4f | %s |" % (t, p, got[(t, pols[0], p)],
                      " | ".join("%.4f" % ref[(t, a, p)] if (t, a, p) in ref
                                 else "n/a" for a in peers)))
        print()
    if families:
        print_families(pols, got, ref, cells)
    if neighbours > 0:
        print_neighbours(rcl_sim, tdir, pols, objs, cells, neighbours)
    algos = sorted({a for (_t, a, _p) in ref})
    rows = []
    for pol in pols:
        vals = [got[(t, pol, p)] for t, p in cells]
        worst, wt, wp = max((got[(t, pol, p)] - ref[(t, "lru", p)], t, p)
                            for t, p in all_cells)
        rows.append((pol, sum(vals) / len(vals), worst,
                     "%s@%d%%" % (wt, wp)))
    for a in algos:
        if all((t, a, p) in ref for t, p in cells):
            vals = [ref[(t, a, p)] for t, p in cells]
            worst, wt, wp = max((ref[(t, a, p)] - ref[(t, "lru", p)], t, p)
                                for t, p in all_cells if (t, a, p) in ref)
            rows.append(("peer " + a, sum(vals) / len(vals), worst,
                         "%s@%d%%" % (wt, wp)))
    print("mean over %d cells, worst over %d" % (len(cells), len(all_cells)))
    for name, mean, worst, where in sorted(rows, key=lambda r: r[1]):
        print("%-22s mean %.4f  worst-minus-lru %+.3f (%s)"
              % (name, mean, worst, where))


if __name__ == "__main__":
    main()
