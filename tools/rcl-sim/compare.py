#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Compare rcl-sim policies with the peers of the reference table.

usage: compare.py RCL_SIM TRACES_DIR POLICY[,POLICY...] [--table]

Runs every policy over the 19 shared traces other than the SNIA samples at
1/5/10/25 % and prints, per policy and per peer algorithm of
reference-miss-ratios.tsv, the mean miss ratio over the cells where the
LIRS authors' program (lirs-ref) is defined (75 cells), and the worst cell
minus LRU.  With --table, also one line per trace and policy.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle import TRACES  # noqa: E402

PCTS = (1, 5, 10, 25)


def main():
    rcl_sim, tdir, pols = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    table = "--table" in sys.argv
    ref = {}
    with open(os.path.join(tdir, "reference-miss-ratios.tsv")) as f:
        next(f)
        for line in f:
            trace, _tool, algo, pct, _objs, mr = line.rstrip("\n").split("\t")
            try:
                ref[(trace, algo, int(pct))] = float(mr)
            except ValueError:
                pass  # "n/a(<10)": lirs-ref needs at least 10 objects
    cells = [(t, p) for t in TRACES for p in PCTS if (t, "lirs-ref", p) in ref]
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
    algos = sorted({a for (_t, a, _p) in ref})
    rows = []
    for pol in pols:
        vals = [got[(t, pol, p)] for t, p in cells]
        worst = max(got[(t, pol, p)] - ref[(t, "lru", p)] for t, p in cells)
        rows.append((pol, sum(vals) / len(vals), worst))
    for a in algos:
        if all((t, a, p) in ref for t, p in cells):
            vals = [ref[(t, a, p)] for t, p in cells]
            worst = max(ref[(t, a, p)] - ref[(t, "lru", p)] for t, p in cells)
            rows.append(("peer " + a, sum(vals) / len(vals), worst))
    print("%d cells" % len(cells))
    for name, mean, worst in sorted(rows, key=lambda r: r[1]):
        print("%-22s mean %.4f  worst-minus-lru %+.3f" % (name, mean, worst))


if __name__ == "__main__":
    main()
