#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rcl-sim's correctness oracle.

usage: oracle.py RCL_SIM TRACES_DIR [--policy P[,P...]] [--tolerance P=T[,P=T...]]
                 [--snia] [--jobs=N]

Runs `rcl-sim --policy P,... --json` over every shared trace (other than the
SNIA samples, unless --snia) at every percentage of the reference table
TRACES_DIR/reference-miss-ratios.tsv, and checks every row of each policy
(default: lru): the capacity in objects, the miss ratio against the row's
within the policy's tolerance (absolute, on the miss ratio rounded to the
table's 4 decimals), and the request and unique-key counts of
TRACES_DIR/README.md.  A policy's rows are those whose `algo` is its name,
case-insensitively (rcl-sim `wtinylfu` is the table's `wtinyLFU`), or the
name ALGO below gives it.  Tolerances: lru and fifo 0 (exact at 4
decimals), any other policy 0.005; --tolerance P=T sets
policy P's (the last "=" separates the name: slru:n-seg=2=0).  Prints each
row out of tolerance and, per policy, the rows exact at 4 decimals, the rows
within tolerance and the worst difference.  Exit status: 0 every row within
tolerance, 1 a row out of tolerance or a failure, 2 bad usage, 77 (skipped)
when TRACES_DIR (or the environment variable RCL_TRACES_DIR, which takes
precedence) does not exist.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import time

# Reference trace name -> (file under TRACES_DIR, --format, requests, unique).
# The counts are those of the README's "Files" table.
TRACES = {
    "arc_OLTP": ("arc/OLTP.lis.zst", "arc", 914145, 186880),
    "arc_P2": ("arc/P2.lis.zst", "arc", 12729495, 913347),
    "lirs_2_pools": ("lirs/2_pools.trace.gz", "lirs", 100000, 9939),
    "lirs_cpp": ("lirs/cpp.trace.gz", "lirs", 9047, 1223),
    "lirs_cs": ("lirs/cs.trace.gz", "lirs", 6781, 1409),
    "lirs_gli": ("lirs/gli.trace.gz", "lirs", 6015, 2529),
    "lirs_ps": ("lirs/ps.trace.gz", "lirs", 10448, 3083),
    "lirs_sprite": ("lirs/sprite.trace.gz", "lirs", 133996, 7075),
    "lirs_multi1": ("lirs/multi1.trace.gz", "lirs", 15858, 2606),
    "lirs_multi2": ("lirs/multi2.trace.gz", "lirs", 26311, 5684),
    "lirs_multi3": ("lirs/multi3.trace.gz", "lirs", 30241, 7454),
    "lirs_loop": ("lirs/loop.trace.gz", "lirs", 505500, 1011),
    "lirs_scan": ("lirs/scan.trace.gz", "lirs", 50025, 2001),
    "lirs_zigzag": ("lirs/zigzag.trace.gz", "lirs", 52001, 2001),
    "lirs_backf": ("lirs/backf.trace.gz", "lirs", 9000, 751),
    "cache2k_orm-busy": ("cache2k/orm-busy.trace.xz", "u32be", 5000000, 76349),
    "cache2k_web07": ("cache2k/web07.trace.xz", "u32be", 76118, 20484),
    "corda_vaultservice": ("corda/trace_vaultservice.gz", "u64be", 135702, 90468),
    "cloudPhysicsIO": ("libcachesim/cloudPhysicsIO.vscsi", "vscsi", 113872, 48974),
}

# The SNIA format samples: optional (--snia).
SNIA = {
    "tencent_block_sample": ("snia/cloud_storage-sample.bz2", "tencent-block", 1263194, 1097350),
    "tencent_photo_sample": ("snia/cloud_photos-sample.bz2", "tencent-photo", 10000, 9694),
    "msr_cambridge_sample": ("snia/msr-cambridge1-sample.csv", "msr", 11931, 11457),
}


# rcl-sim policy -> the table's algo, where the name alone (without regard to
# case) does not give it.
ALGO = {}

# Tolerances on the miss ratio (absolute); any other policy: DEFAULT_TOLERANCE.
TOLERANCE = {"lru": 0.0, "fifo": 0.0}
DEFAULT_TOLERANCE = 0.005

# The reference rows are libCacheSim's, apart from the LIRS authors' programs
# (algo lirs-ref, clockpro-ref), which no rcl-sim policy claims by name.
EPS = 1e-9


def read_reference(path):
    """{algo (lower case): {trace: {pct: (cache_objects, miss_ratio_text)}}}."""
    ref = {}
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(header):
                continue
            algo = fields[col["algo"]].lower()
            ref.setdefault(algo, {}).setdefault(fields[col["trace"]], {})[
                fields[col["pct"]]] = (int(fields[col["cache_objects"]]),
                                       fields[col["miss_ratio"]])
    return ref


def algo_of(policy):
    return ALGO.get(policy.lower(), policy).lower()


def check_trace(rcl_sim, traces_dir, name, spec, policies, rows, tolerance):
    """Run one trace with every policy.

    @rows: {policy: {pct: (objects, ratio)}} of this trace.  Returns (list of
    problems, {policy: [(pct, difference, exact, within)]}, seconds).
    """
    rel, fmt, requests, unique = spec
    pcts = sorted({p for r in rows.values() for p in r}, key=float)
    cmd = [rcl_sim, "--policy", ",".join(policies), "--format", fmt, "--json",
           "--quiet", "--jobs", "1",
           "--capacity", ",".join(p + "%" for p in pcts),
           os.path.join(traces_dir, rel)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        return ["%s: rcl-sim failed (exit %d): %s" % (name, proc.returncode,
                                                     proc.stderr.strip())], {}, seconds
    problems = []
    results = {}
    for line in proc.stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            problems.append("%s: not a JSON line on standard output: %r" % (name, line))
            continue
        results[(obj["policy"].lower(), "%g" % obj["capacity_pct"])] = obj
    cells = {}
    counted = False
    for pol in policies:
        cells[pol] = []
        for pct in sorted(rows[pol], key=float):
            objects, ratio = rows[pol][pct]
            obj = results.get((pol.lower(), "%g" % float(pct)))
            if obj is None:
                problems.append("%s %s%% %s: no result" % (name, pct, pol))
                continue
            ok = True
            if not counted and (obj["requests"] != requests or obj["unique"] != unique):
                problems.append("%s: %d requests, %d unique keys; the README says %d, %d"
                                % (name, obj["requests"], obj["unique"], requests, unique))
            counted = True
            if obj["capacity"] != objects:
                problems.append("%s %s%% %s: capacity %d objects, reference %d"
                                % (name, pct, pol, obj["capacity"], objects))
                ok = False
            got = "%.4f" % obj["miss_ratio"]
            diff = abs(float(got) - float(ratio))
            exact = got == ratio
            within = ok and diff <= tolerance[pol] + EPS
            if not within:
                problems.append("%s %s%%: %s miss ratio %s (%.6f), reference %s, "
                                "difference %.4f, tolerance %g"
                                % (name, pct, pol, got, obj["miss_ratio"], ratio,
                                   diff, tolerance[pol]))
            cells[pol].append((pct, diff, ok and exact, within))
    return problems, cells, seconds


def parse_args(argv):
    """(rcl_sim, traces_dir, policies, tolerance, snia, jobs) or None."""
    pos = []
    policies = ["lru"]
    overrides = {}
    snia = False
    jobs = os.cpu_count() or 1
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--policy", "--tolerance", "--jobs"):
            if i + 1 >= len(argv):
                return None
            a, v = a, argv[i + 1]
            i += 1
        elif "=" in a and a.split("=", 1)[0] in ("--policy", "--tolerance", "--jobs"):
            a, v = a.split("=", 1)
        else:
            v = None
        if a == "--policy":
            policies = [p for p in v.split(",") if p]
        elif a == "--tolerance":
            for item in v.split(","):
                if "=" not in item:
                    return None
                pol, tol = item.rsplit("=", 1)
                overrides[pol.lower()] = float(tol)
        elif a == "--jobs":
            jobs = int(v)
        elif a == "--snia":
            snia = True
        elif a.startswith("--"):
            return None
        else:
            pos.append(a)
        i += 1
    if len(pos) != 2 or not policies or jobs < 1:
        return None
    tolerance = {}
    for p in policies:
        tolerance[p] = overrides.get(p.lower(),
                                     TOLERANCE.get(p.lower(), DEFAULT_TOLERANCE))
    return pos[0], pos[1], policies, tolerance, snia, jobs


def main(argv):
    try:
        args = parse_args(argv)
    except ValueError:
        args = None
    if args is None:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    rcl_sim, traces_dir, policies, tolerance, snia, jobs = args
    traces_dir = os.environ.get("RCL_TRACES_DIR") or traces_dir
    table = os.path.join(traces_dir, "reference-miss-ratios.tsv")
    if not os.path.isfile(table):
        print("skipped: no shared traces at %s (no %s)" % (traces_dir, table))
        return 77

    ref = read_reference(table)
    specs = dict(TRACES)
    if snia:
        specs.update(SNIA)
    problems = []
    known = set(TRACES) | set(SNIA)
    unknown = sorted({t for a in ref.values() for t in a} - known)
    for name in unknown:
        problems.append("%s: a trace of the reference table that the oracle "
                        "does not know" % name)
    for pol in policies:
        if algo_of(pol) not in ref:
            problems.append("%s: no rows (algo %s) in the reference table"
                            % (pol, algo_of(pol)))
            continue
        for name in sorted(set(TRACES) - set(ref[algo_of(pol)])):
            problems.append("%s: no %s rows in the reference table" % (name, pol))
    # {trace: {policy: rows}}, the traces that have rows of some policy
    work = {}
    for name in specs:
        rows = {p: ref[algo_of(p)][name] for p in policies
                if algo_of(p) in ref and name in ref[algo_of(p)]}
        if rows:
            work[name] = rows
    names = sorted(work, key=lambda n: -specs[n][2])  # largest traces first
    total = {p: sum(len(work[n].get(p, {})) for n in names) for p in policies}

    t0 = time.monotonic()
    cells = {p: [] for p in policies}  # (trace, pct, difference, exact, within)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(check_trace, rcl_sim, traces_dir, n, specs[n],
                               [p for p in policies if p in work[n]], work[n],
                               tolerance): n
                   for n in names}
        for fut in concurrent.futures.as_completed(futures):
            name = futures[fut]
            p, c, seconds = fut.result()
            problems.extend(p)
            nrows = sum(len(r) for r in work[name].values())
            good = 0
            for pol, lst in c.items():
                for pct, diff, exact, within in lst:
                    cells[pol].append((name, pct, diff, exact, within))
                    good += within
            print("%-22s %d/%d rows within tolerance  (%.2f s)"
                  % (name, good, nrows, seconds))
            sys.stdout.flush()
    elapsed = time.monotonic() - t0

    for p in sorted(problems):
        print("MISMATCH " + p)
    ok = not problems
    print("%-14s %7s %7s %9s %8s  %s" % ("policy", "exact", "within", "tolerance",
                                        "worst", "where"))
    for pol in policies:
        lst = cells[pol]
        exact = sum(1 for c in lst if c[3])
        within = sum(1 for c in lst if c[4])
        worst = max(lst, key=lambda c: c[2]) if lst else None
        print("%-14s %3d/%-3d %3d/%-3d %9g %8.4f  %s"
              % (pol, exact, total[pol], within, total[pol], tolerance[pol],
                 worst[2] if worst else 0.0,
                 "%s@%s%%" % (worst[0], worst[1]) if worst and worst[2] > 0 else "-"))
        ok = ok and within == total[pol]
    print("oracle: %s: %d reference rows on %d traces in %.1f s%s: %s"
          % (",".join(policies), sum(total.values()), len(names), elapsed,
             "" if snia else " (SNIA samples not checked)",
             "all within tolerance" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
