#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Byte budgets of rcl-sim: capacities in bytes, objects charged their size.

usage: test_bytes.py RCL_SIM                 (hermetic: generated traces)
       test_bytes.py RCL_SIM --traces DIR    (../shared/traces/adapt_size)

Hermetic checks (suite 'unit'):
  * byte mode with every size 1 makes the decisions of object mode, for
    every policy (every JSON field equal but capacity_unit and seconds), in
    the adapt_size and csv formats;
  * --capacity parsing: 64MiB, 1.5GiB, 2KB, 4096B, N%, N%b, and bad values
    (a message, exit status 2);
  * an object larger than the capacity is a miss and is not inserted (and
    evicts nothing), for every policy;
  * a hand-computed LRU case in bytes.
With --traces (suite 'traces'): the same equality on adapt_size with its
sizes set to 1 at 1, 5, 10 and 25 %, and invariants of byte mode on the
real sizes (there are no libCacheSim byte-mode figures to compare with).

Exit status: 0 pass, 1 fail, 77 skipped (no ../shared/traces).
"""
import json
import lzma
import os
import random
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what)


def run(sim, args, expect_rc=0):
    p = subprocess.run([sim, "-q"] + args, capture_output=True, text=True)
    if p.returncode != expect_rc:
        check(False, "%s: exit %d, expected %d; stderr: %s" %
              (" ".join(args), p.returncode, expect_rc, p.stderr.strip()))
    return p


def run_json(sim, args):
    p = run(sim, ["--json"] + args)
    return [json.loads(line) for line in p.stdout.splitlines()]


def strip_mode(rows):
    """The fields that must not depend on the mode."""
    out = []
    for r in rows:
        r = dict(r)
        for k in ("capacity_unit", "seconds"):
            r.pop(k, None)
        out.append(r)
    return out


def write_adapt_size(path, reqs):
    with open(path, "w") as f:
        for t, (key, size) in enumerate(reqs):
            f.write("%d %d %d\n" % (t, key, size))


def gen_requests(n, keys, seed):
    """A skewed key stream (some reuse at every distance)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.6:
            k = int(keys * rng.random() ** 3)
        else:
            k = rng.randrange(keys)
        out.append(k)
    return out


def sizes_one_equal(sim, path, fmt_args, pairs, what):
    """Object capacity a and byte capacity b give the same rows."""
    for a, b in pairs:
        obj = run_json(sim, fmt_args + ["--policy", "all", "-c", a, path])
        byt = run_json(sim, fmt_args + ["--policy", "all", "-c", b, path])
        check(len(obj) == len(byt) and len(obj) > 0,
              "%s: %s and %s give as many rows" % (what, a, b))
        for o, y in zip(strip_mode(obj), strip_mode(byt)):
            check(o == y, "%s: %s, %s = %s with every size 1:\n  %s\n  %s"
                  % (what, o.get("policy"), a, b, o, y))
        for r in byt:
            check(r.get("capacity_unit") == "bytes",
                  "%s: %s is in bytes" % (what, b))


def hermetic(sim):
    tmp = tempfile.mkdtemp(prefix="rcl-sim-bytes-")
    keys = gen_requests(6000, 700, 1)
    nkeys = len(set(keys))

    # 1. byte mode with every size 1 is object mode, every policy
    ones = os.path.join(tmp, "ones.trace")
    write_adapt_size(ones, [(k, 1) for k in keys])
    # Capacities up to the unique keys: above them, wtinylfu's sketch is
    # sized by the unique keys in byte mode (README.md, wtinylfu).
    pairs = [("2", "2B"), ("3", "3B"), ("20", "20B"), ("100", "100B"),
             ("250", "250B"), ("5%", "5%b"), ("25%", "25%b"),
             ("%d" % nkeys, "%dB" % nkeys)]
    sizes_one_equal(sim, ones, ["-f", "adapt_size"], pairs, "adapt_size")
    csv = os.path.join(tmp, "ones.csv")
    with open(csv, "w") as f:
        f.write("key,size\n")
        for k in keys:
            f.write("%d,1\n" % k)
    sizes_one_equal(sim, csv, ["-f", "csv", "--csv-header", "--csv-key-col",
                               "1", "--csv-size-col", "2"],
                    [("150", "150B"), ("10%", "10%b")], "csv")

    # 2. capacity parsing
    rng = random.Random(2)
    sized = [(k, rng.randrange(1, 5000)) for k in keys]
    sized_path = os.path.join(tmp, "sized.trace")
    write_adapt_size(sized_path, sized)
    first = {}
    for k, s in sized:
        first.setdefault(k, s)
    unique_bytes = sum(first.values())
    request_bytes = sum(s for _, s in sized)
    want = {
        "64MiB": 64 << 20,
        "1.5GiB": 3 << 29,
        "2KB": 2000,
        "4096B": 4096,
        "0.5KiB": 512,
        "1TiB": 1 << 40,
        "10%b": int(unique_bytes * 10 / 100 + 0.5),
        "2.5%b": int(unique_bytes * 2.5 / 100 + 0.5),
        "10%": int(nkeys * 10 / 100 + 0.5),
        "300": 300,
    }
    rows = run_json(sim, ["-f", "adapt_size", "--policy", "lru", "-c",
                          ",".join(want), sized_path])
    check(len(rows) == len(want), "parsing: one row per capacity")
    for (spec, cap), r in zip(want.items(), rows):
        check(r["capacity"] == cap, "parsing: %s is %d, got %d" %
              (spec, cap, r["capacity"]))
        unit = "objects" if spec[-1] in "0123456789%" else "bytes"
        check(r["capacity_unit"] == unit, "parsing: %s is in %s" %
              (spec, unit))
        check(r["request_bytes"] == request_bytes and
              r["unique_bytes"] == unique_bytes,
              "parsing: request and unique bytes")
    for bad in ["0", "-5", "5%%", "abc", "1.5", "0B", "0.4B", "%b", "5 MiB",
                "1.2.3MiB", "5mib", "5%B", "1e3B", "MiB", "5,", ",5", ""]:
        p = run(sim, ["-f", "adapt_size", "-c", bad, sized_path],
                expect_rc=2)
        check("capacity" in p.stderr and p.stdout == "",
              "parsing: %r is refused with a message (%s)" %
              (bad, p.stderr.strip()))
    keys_path = os.path.join(tmp, "plain.keys")
    with open(keys_path, "w") as f:
        f.write("".join("%d\n" % k for k in keys))
    for b in ["64MiB", "5%b"]:
        p = run(sim, ["-c", b, keys_path], expect_rc=2)
        check("need a trace with sizes" in p.stderr,
              "a byte capacity on a trace without sizes is refused (%s)" %
              p.stderr.strip())

    # 3. an object larger than the capacity: a miss, not inserted, and it
    # evicts nothing.  Key 2 (size 100) never fits in 50 bytes.
    big = os.path.join(tmp, "big.trace")
    write_adapt_size(big, [(1, 10), (1, 10), (2, 100), (1, 10), (2, 100),
                           (2, 100), (1, 10)])
    for r in run_json(sim, ["-f", "adapt_size", "--policy", "all", "-c",
                            "50B", big]):
        check(r["too_large"] == 3,
              "%s: 3 requests too large, got %d" % (r["policy"],
                                                    r["too_large"]))
        check(r["miss_bytes"] >= 300,
              "%s: every request of the large object misses" % r["policy"])
    # The policies that admit a 10-byte object into 50 bytes keep key 1
    # across the large requests: 1 miss of 4 for key 1.
    for r in run_json(sim, ["-f", "adapt_size", "--policy",
                            "lru,fifo,default,kernel,twolist,clock,sieve,"
                            "arc,slru:n-seg=2", "-c", "50B", big]):
        check(r["misses"] == 4 and r["miss_bytes"] == 310,
              "%s: key 1 survives the large requests (misses %d, bytes %d)"
              % (r["policy"], r["misses"], r["miss_bytes"]))

    # 4. a hand-computed LRU case, capacity 100 bytes:
    # A60 B30 A C50 B A B D10 C A
    # A miss [A]60; B miss [B A]90; A hit [A B]; C miss, evicts B then A
    # [C]50; B miss [B C]80; A miss, evicts C [A B]90; B hit [B A];
    # D miss [D B A]100; C miss, evicts A [C D B]90; A miss, evicts B, D, C
    # [A]60.  8 misses of 10, 350 bytes of 440, 7 evictions.
    hand = os.path.join(tmp, "hand.trace")
    A, B, C, D = 1, 2, 3, 4
    write_adapt_size(hand, [(A, 60), (B, 30), (A, 60), (C, 50), (B, 30),
                            (A, 60), (B, 30), (D, 10), (C, 50), (A, 60)])
    (r,) = run_json(sim, ["-f", "adapt_size", "--policy", "lru", "-c",
                          "100B", hand])
    check(r["misses"] == 8 and r["hits"] == 2, "lru by hand: 8 misses")
    check(r["miss_bytes"] == 350 and r["request_bytes"] == 440,
          "lru by hand: 350 of 440 bytes missed, got %d of %d" %
          (r["miss_bytes"], r["request_bytes"]))
    check(abs(r["byte_miss_ratio"] - 350 / 440) < 1e-12,
          "lru by hand: byte miss ratio")
    check(r["counters"]["evicted"] == 7,
          "lru by hand: 7 evictions, got %d" % r["counters"]["evicted"])


def traces(sim, tdir):
    path = os.path.join(tdir, "adapt_size", "request.trace.xz")
    if not os.path.exists(path):
        print("skipped: %s is missing" % path)
        return 77
    reqs = []
    with lzma.open(path, "rt") as f:
        for line in f:
            t, key, size = line.split()
            reqs.append((int(key), int(size)))
    tmp = tempfile.mkdtemp(prefix="rcl-sim-bytes-")
    ones = os.path.join(tmp, "adapt_size-ones.trace")
    write_adapt_size(ones, [(k, 1) for k, _ in reqs])
    sizes_one_equal(sim, ones, ["-f", "adapt_size"],
                    [(p + "%", p + "%b") for p in ("1", "5", "10", "25")],
                    "adapt_size, sizes 1")

    # Invariants on the real sizes.
    first = {}
    for k, s in reqs:
        first.setdefault(k, s)
    unique_bytes, request_bytes = sum(first.values()), sum(s for _, s in reqs)
    caps = ["1%b", "5%b", "10%b", "25%b", "100%b", "1MiB"]
    rows = run_json(sim, ["-f", "adapt_size", "--policy", "all", "-c",
                          ",".join(caps), path])
    check(len(rows) > 0, "adapt_size: rows")
    for r in rows:
        what = "adapt_size %s at %d bytes" % (r["policy"], r["capacity"])
        check(r["request_bytes"] == request_bytes and
              r["unique_bytes"] == unique_bytes, what + ": byte totals")
        check(r["misses"] >= len(first), what + ": compulsory misses")
        check(r["miss_bytes"] >= unique_bytes, what + ": compulsory bytes")
        check(0 <= r["byte_miss_ratio"] <= 1, what + ": byte miss ratio")
        larger = sum(1 for _, s in reqs if s > r["capacity"])
        check(r["too_large"] == larger,
              what + ": %d requests larger than the capacity, counted %d"
              % (larger, r["too_large"]))
        if r.get("capacity_pct") == 100 and r["policy"] in ("lru", "fifo",
                                                         "clock", "sieve"):
            check(r["misses"] == len(first) and
                  r["miss_bytes"] == unique_bytes,
                  what + ": only compulsory misses when everything fits")
    return 0


def main():
    if len(sys.argv) == 2:
        rc = hermetic(sys.argv[1])
    elif len(sys.argv) == 4 and sys.argv[2] == "--traces":
        tdir = os.environ.get("RCL_TRACES_DIR", sys.argv[3])
        rc = traces(sys.argv[1], tdir)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if rc == 77:
        return 77
    if FAILURES:
        print("%d checks failed" % len(FAILURES))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
