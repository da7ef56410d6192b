#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rcl-sim's correctness oracle.

usage: oracle.py RCL_SIM TRACES_DIR [--snia] [--jobs N]

Runs `rcl-sim --policy lru --json` over every shared trace (other than the
SNIA samples, unless --snia) at every percentage of the reference table
TRACES_DIR/reference-miss-ratios.tsv, and checks that the capacity in objects
and the miss ratio at 4 decimals equal every `lru` row of the table, and that
the request and unique-key counts equal those of TRACES_DIR/README.md.
Prints each mismatch.  Exit status: 0 all rows match, 1 a mismatch or a
failure, 77 (skipped) when TRACES_DIR (or the environment variable
RCL_TRACES_DIR, which takes precedence) does not exist.
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


def read_reference(path):
    """{trace: {pct: (cache_objects, miss_ratio_text)}} of the lru rows."""
    ref = {}
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(header) or fields[col["algo"]] != "lru":
                continue
            ref.setdefault(fields[col["trace"]], {})[fields[col["pct"]]] = (
                int(fields[col["cache_objects"]]), fields[col["miss_ratio"]])
    return ref


def check_trace(rcl_sim, traces_dir, name, spec, rows):
    """Run one trace; returns (list of problems, rows matched, seconds)."""
    rel, fmt, requests, unique = spec
    pcts = sorted(rows, key=float)
    cmd = [rcl_sim, "--policy", "lru", "--format", fmt, "--json", "--quiet",
           "--jobs", "1", "--capacity", ",".join(p + "%" for p in pcts),
           os.path.join(traces_dir, rel)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        return ["%s: rcl-sim failed (exit %d): %s" % (name, proc.returncode,
                                                     proc.stderr.strip())], 0, seconds
    problems = []
    results = {}
    for line in proc.stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            problems.append("%s: not a JSON line on standard output: %r" % (name, line))
            continue
        results["%g" % obj["capacity_pct"]] = obj
    matched = 0
    for pct in pcts:
        objects, ratio = rows[pct]
        obj = results.get("%g" % float(pct))
        if obj is None:
            problems.append("%s %s%%: no result" % (name, pct))
            continue
        ok = True
        if obj["requests"] != requests or obj["unique"] != unique:
            problems.append("%s: %d requests, %d unique keys; the README says %d, %d"
                            % (name, obj["requests"], obj["unique"], requests, unique))
            ok = False
        if obj["capacity"] != objects:
            problems.append("%s %s%%: capacity %d objects, reference %d"
                            % (name, pct, obj["capacity"], objects))
            ok = False
        got = "%.4f" % obj["miss_ratio"]
        if got != ratio:
            problems.append("%s %s%%: lru miss ratio %s (%.6f), reference %s"
                            % (name, pct, got, obj["miss_ratio"], ratio))
            ok = False
        matched += ok
    return problems, matched, seconds


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    snia = "--snia" in argv
    jobs = os.cpu_count() or 1
    for a in argv[1:]:
        if a.startswith("--jobs="):
            jobs = int(a.split("=", 1)[1])
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    rcl_sim, traces_dir = args
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
    unknown = sorted(set(ref) - set(TRACES) - set(SNIA))
    for name in unknown:
        problems.append("%s: a trace of the reference table that the oracle "
                        "does not know" % name)
    missing = sorted(set(TRACES) - set(ref))
    for name in missing:
        problems.append("%s: no lru rows in the reference table" % name)
    names = [n for n in specs if n in ref]
    total = sum(len(ref[n]) for n in names)

    t0 = time.monotonic()
    matched = 0
    # The largest traces first, so that the pool finishes early.
    names.sort(key=lambda n: -specs[n][2])
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(check_trace, rcl_sim, traces_dir, n, specs[n], ref[n]): n
                   for n in names}
        for fut in concurrent.futures.as_completed(futures):
            name = futures[fut]
            p, m, seconds = fut.result()
            problems.extend(p)
            matched += m
            print("%-22s %d/%d rows match  (%.2f s)" % (name, m, len(ref[name]), seconds))
            sys.stdout.flush()
    elapsed = time.monotonic() - t0

    for p in sorted(problems):
        print("MISMATCH " + p)
    print("lru oracle: %d/%d reference rows match on %d traces in %.1f s%s"
          % (matched, total, len(names), elapsed,
             "" if snia else " (SNIA samples not checked)"))
    return 0 if not problems and matched == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
