#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a cache that drops everything under pressure can lose, at most.

usage: drop-cycle.py RCL_SIM TRACES_DIR [PCT,...]

rcl-bench pressure's target asks the library's hit ratio to be 1.5x that of
trim-all, a cache that empties itself on every pressure event.  Under
sustained pressure trim-all refills from empty to the room it has, is
emptied again, and so on; the library's cache stays at that room.  This
replays real key streams from ../shared/traces through rcl-sim's exact LRU
of C objects two ways: kept at C (`lru`: steady), and emptied each time it
is full (`lru:drop-all`: trim-all in the pressure regime at its best, since
it is emptied only when full).  The ratio steady / drop-cycle bounds what
keeping the cache warm gains over trim-all for an LRU-ordered cache; a
cache emptied before it is full refills less and gains more, but trim-all
is emptied only when the working set reaches the limit, which is when it is
full again.  Zipf keys (rcl-bench pressure's default workload: alpha 0.99)
are replayed too, from standard input.
"""
import bisect
import itertools
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "rcl-sim"))
from oracle import TRACES  # noqa: E402

STREAMS = (("arc/OLTP", "arc_OLTP"), ("cache2k/orm-busy", "cache2k_orm-busy"),
           ("cache2k/web07", "cache2k_web07"),
           ("corda/vaultservice", "corda_vaultservice"),
           ("libcachesim/cloudPhysicsIO", "cloudPhysicsIO"))


def zipf(n, alpha, count, seed=1):
    cum = list(itertools.accumulate(1.0 / (i + 1) ** alpha for i in range(n)))
    rng = random.Random(seed)
    return [bisect.bisect(cum, rng.random() * cum[-1]) for _ in range(count)]


def hit_ratios(rcl_sim, fmt, path, caps, stdin=None):
    """{(policy, capacity): hit ratio} of lru and lru:drop-all."""
    out = subprocess.run(
        [rcl_sim, "-q", "--json", "--policy", "lru,lru:drop-all", "--format",
         fmt, "--capacity", ",".join(str(c) for c in caps), path],
        input=stdin, check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        d = json.loads(line)
        got[(d["policy"], d["capacity"])] = d["hits"] / d["requests"]
    return got


def main():
    rcl_sim, tdir = sys.argv[1], sys.argv[2]
    pcts = [int(p) for p in (sys.argv[3] if len(sys.argv) > 3
                             else "5,10,25").split(",")]
    keys = zipf(80000, 0.99, 1500000)
    rows = [("Zipf 0.99, 80,000 keys", "keys", "-", len(set(keys)),
             "".join("%d\n" % k for k in keys))]
    for name, trace in STREAMS:
        path, fmt, _requests, unique = TRACES[trace]
        rows.append((name, fmt, os.path.join(tdir, path), unique, None))
    print("| keys | cache (% of unique keys) | steady | drop-cycle | ratio |")
    print("|---|---|---|---|---|")
    for name, fmt, path, unique, stdin in rows:
        caps = [max(2, unique * p // 100) for p in pcts]
        got = hit_ratios(rcl_sim, fmt, path, caps, stdin)
        for pct, cap in zip(pcts, caps):
            s, d = got[("lru", cap)], got[("lru:drop-all", cap)]
            print("| %s | %d %% (%d) | %.4f | %.4f | %.2f |"
                  % (name, pct, cap, s, d, s / d if d else float("inf")))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
