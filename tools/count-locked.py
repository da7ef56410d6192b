#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Count the locked instructions a program executes, with callgrind.

Usage:
  tools/count-locked.py [--per N] [--objects SUBSTR] [--top K] \\
      -- CMD_SHORT... -- CMD_LONG...
  tools/count-locked.py --file OUT [--objects SUBSTR] [--top K]

With two commands, runs each under
``valgrind --tool=callgrind --dump-instr=yes`` and prints the executed
locked instructions of each run and their difference.  If the two commands
do the same work except that the second does D more operations, the
difference over D (``--per D``) is the cost of one operation, with setup and
teardown cancelled out.  For rcl-bench shrink-scale:

  tools/count-locked.py --per 1000 -- \\
      build/bench/rcl-bench shrink-scale --threads 1 --calls 1000 -- \\
      build/bench/rcl-bench shrink-scale --threads 1 --calls 2000

gives locked instructions per registry-wide shrink call; divide by 64 for
one shrinker visit.  With --file, reads one existing callgrind output.

"Locked" means an instruction with a ``lock`` prefix, or ``xchg`` with a
memory operand (implicitly locked).  Instruction addresses come from
``objdump -d`` of every object callgrind names (``ob=``); the load bias
between callgrind's addresses and objdump's is derived per object from the
functions both name (callgrind normally writes object-relative addresses,
and then the bias is 0).  --objects restricts the count to objects whose path
contains SUBSTR (e.g. libreclaim); the default counts every object.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

SYMBOL = re.compile(r"^([0-9a-f]+) <(.+)>:$")


def objdump(path):
    """{address: text} of locked instructions, {symbol: address}."""
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                             check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}, {}
    locked, syms = {}, {}
    for line in out.splitlines():
        m = SYMBOL.match(line)
        if m:
            syms[m.group(2)] = int(m.group(1), 16)
            continue
        m = re.match(r"^\s*([0-9a-f]+):\s+(.*)$", line)
        if not m:
            continue
        text = m.group(2).strip()
        mnem = text.split()
        if not mnem:
            continue
        if mnem[0] == "lock" or (mnem[0].startswith("xchg") and "(" in text):
            locked[int(m.group(1), 16)] = text
    return locked, syms


def parse_pos(tok, last):
    if tok == "*":
        return last
    if tok.startswith("+"):
        return last + int(tok[1:], 0)
    if tok.startswith("-"):
        return last - int(tok[1:], 0)
    return int(tok, 0)


def parse_callgrind(path):
    """{object: {address: self Ir}}, {object: {function: first address}}."""
    names = {}
    cost = collections.defaultdict(lambda: collections.defaultdict(int))
    first = collections.defaultdict(dict)
    ob = fn = None
    last = [0, 0]
    skip_next = False
    npos = 1
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line.startswith("positions:"):
                npos = len(line.split()[1:])
                continue
            if re.match(r"^[a-z]+:", line):
                continue	# header: version:, events:, summary:, ...
            m = re.match(r"^(\w+)=(.*)$", line)
            if m:
                key, val = m.groups()
                nm = re.match(r"^\((\d+)\)(?: (.*))?$", val)
                if nm and key in ("ob", "cob", "fl", "fi", "fe", "fn",
                                  "cfn", "cfi", "cfl"):
                    kind = "ob" if key in ("ob", "cob") else (
                        "fn" if key in ("fn", "cfn") else "fl")
                    ident = (kind, nm.group(1))
                    if nm.group(2) is not None:
                        names[ident] = nm.group(2)
                    val = names.get(ident, val)
                if key == "ob":
                    ob = val
                elif key == "fn":
                    fn = val
                elif key == "calls":
                    skip_next = True	# next cost line: inclusive call cost
                continue
            toks = line.split()
            if len(toks) < npos:
                continue
            for i in range(npos):
                last[i] = parse_pos(toks[i], last[i])
            if skip_next:
                skip_next = False
                continue
            addr = last[0]
            ir = int(toks[npos]) if len(toks) > npos else 0
            cost[ob][addr] += ir
            if fn is not None and fn not in first[ob]:
                first[ob][fn] = addr
            elif fn is not None and addr < first[ob][fn]:
                first[ob][fn] = addr
    return cost, first


def count(path, objects):
    cost, first = parse_callgrind(path)
    total = 0
    per_fn = collections.Counter()
    for ob, addrs in cost.items():
        if not ob or (objects and objects not in ob) or not os.path.exists(ob):
            continue
        locked, syms = objdump(ob)
        if not locked:
            continue
        # Bias: the most common (callgrind first address - symbol address).
        votes = collections.Counter()
        for fname, a in first[ob].items():
            if fname in syms:
                votes[a - syms[fname]] += 1
        bias = votes.most_common(1)[0][0] if votes else 0
        starts = sorted((a, n) for n, a in syms.items())
        for a, ir in addrs.items():
            text = locked.get(a - bias)
            if text is None or not ir:
                continue
            total += ir
            owner = "?"
            for sa, sn in starts:
                if sa > a - bias:
                    break
                owner = sn
            per_fn["%s: %s  [%s]" % (os.path.basename(ob), owner,
                                     text.split("#")[0].strip())] += ir
    return total, per_fn


def run(cmd):
    fd, out = tempfile.mkstemp(prefix="callgrind.", suffix=".out")
    os.close(fd)
    subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes",
                    "--callgrind-out-file=" + out] + cmd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def main():
    ap = argparse.ArgumentParser(
        description="locked instructions executed, from callgrind")
    ap.add_argument("--file", help="an existing callgrind output")
    ap.add_argument("--per", type=float, default=1.0,
                    help="divide the difference of two runs by this")
    ap.add_argument("--objects", default="",
                    help="count only objects whose path contains this")
    ap.add_argument("--top", type=int, default=12,
                    help="list this many instructions")
    ap.add_argument("cmds", nargs=argparse.REMAINDER)
    a = ap.parse_args()

    if a.file:
        total, per = count(a.file, a.objects)
        print("locked instructions: %d" % total)
        for k, v in per.most_common(a.top):
            print("  %10d  %s" % (v, k))
        return 0
    cmds = a.cmds
    if cmds and cmds[0] == "--":
        cmds = cmds[1:]
    if "--" not in cmds:
        ap.error("give two commands separated by --")
    i = cmds.index("--")
    short, long_ = cmds[:i], cmds[i + 1:]
    res = []
    for cmd in (short, long_):
        path = run(cmd)
        res.append(count(path, a.objects))
        os.unlink(path)
        print("%-60s %12d locked" % (" ".join(cmd)[-60:], res[-1][0]))
    diff = res[1][0] - res[0][0]
    print("difference: %d; per op (/ %g): %.3f" % (diff, a.per,
                                                  diff / a.per))
    d = res[1][1]
    d.subtract(res[0][1])
    for k, v in d.most_common(a.top):
        if v:
            print("  %10.3f /op  %s" % (v / a.per, k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
