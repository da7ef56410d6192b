#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a cache that drops everything under pressure can lose, at most.

usage: drop-cycle.py TRACES_DIR [PCT,...]

rcl-bench pressure's target asks the library's hit ratio to be 1.5x that of
trim-all, a cache that empties itself on every pressure event.  Under
sustained pressure trim-all refills from empty to the room it has, is
emptied again, and so on; the library's cache stays at that room.  This
replays real key streams from ../shared/traces through an exact LRU of C
objects two ways: kept at C (steady), and emptied each time it reaches C
(drop-cycle, trim-all in the pressure regime at its best: it is emptied
only when full).  The ratio steady / drop-cycle bounds what keeping the
cache warm gains over trim-all for an LRU-ordered cache; a cache that is
emptied before it is full refills less and gains more, but trim-all is
emptied only when the working set reaches the limit, which is when it is
full again.  Zipf keys (rcl-bench pressure's default workload: alpha 0.99,
keys 3x the cache) are replayed too.
"""
import bisect
import collections
import itertools
import os
import random
import struct
import subprocess
import sys


def arc(tdir, name):
    out = subprocess.run(["zstd", "-dc", os.path.join(tdir, "arc", name)],
                         check=True, capture_output=True, text=True).stdout
    keys = []
    for line in out.splitlines():
        f = line.split()
        if f:
            start, n = int(f[0]), int(f[1])
            keys.extend(range(start, start + n))
    return keys


def cache2k(tdir, name):
    raw = subprocess.run(["xz", "-dc", os.path.join(tdir, "cache2k", name)],
                         check=True, capture_output=True).stdout
    return list(struct.unpack(">%dI" % (len(raw) // 4), raw))


def corda(tdir):
    raw = subprocess.run(["gzip", "-dc", os.path.join(
        tdir, "corda", "trace_vaultservice.gz")], check=True,
        capture_output=True).stdout
    return list(struct.unpack(">%dQ" % (len(raw) // 8), raw))


def vscsi(tdir):
    with open(os.path.join(tdir, "libcachesim", "cloudPhysicsIO.vscsi"),
              "rb") as f:
        raw = f.read()
    return [struct.unpack_from("<Q", raw, i + 16)[0]
            for i in range(0, len(raw) - 31, 32)]


def zipf(n, alpha, count, seed=1):
    cum = list(itertools.accumulate(1.0 / (i + 1) ** alpha for i in range(n)))
    rng = random.Random(seed)
    return [bisect.bisect(cum, rng.random() * cum[-1]) for _ in range(count)]


def hit_ratio(keys, cap, drop):
    lru = collections.OrderedDict()
    hits = 0
    for k in keys:
        if k in lru:
            lru.move_to_end(k)
            hits += 1
            continue
        lru[k] = True
        if len(lru) > cap:
            if drop:
                lru.clear()
            else:
                lru.popitem(last=False)
    return hits / len(keys)


def main():
    tdir = sys.argv[1]
    pcts = [int(p) for p in (sys.argv[2] if len(sys.argv) > 2
                             else "5,10,25").split(",")]
    streams = [
        ("Zipf 0.99, 80,000 keys", lambda: zipf(80000, 0.99,
                                                               1500000)),
        ("arc/OLTP", lambda: arc(tdir, "OLTP.lis.zst")),
        ("cache2k/orm-busy", lambda: cache2k(tdir, "orm-busy.trace.xz")),
        ("cache2k/web07", lambda: cache2k(tdir, "web07.trace.xz")),
        ("corda/vaultservice", lambda: corda(tdir)),
        ("libcachesim/cloudPhysicsIO", lambda: vscsi(tdir)),
    ]
    print("| keys | cache (% of unique keys) | steady | drop-cycle | ratio |")
    print("|---|---|---|---|---|")
    for name, load in streams:
        keys = load()
        unique = len(set(keys))
        for pct in pcts:
            cap = max(2, unique * pct // 100)
            s, d = hit_ratio(keys, cap, False), hit_ratio(keys, cap, True)
            print("| %s | %d %% (%d) | %.4f | %.4f | %.2f |"
                  % (name, pct, cap, s, d, s / d if d else float("inf")))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
