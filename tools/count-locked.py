#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Locked instructions a program executes, counted under callgrind.

A locked instruction is one with a lock prefix, or an xchg with a memory
operand (implicitly locked).  This guest has no hardware counters, so the
count comes from callgrind's per-instruction execution counts
(--dump-instr=yes) matched against objdump's disassembly of every object.

  count-locked.py FILE [TOP]
      the total in one callgrind output file, and the TOP sites
  count-locked.py --per-op N1,N2 [--lib DIR] -- COMMAND...
      run COMMAND under callgrind twice, with every "{n}" in it replaced by
      N1 and then N2, and print (count(N2) - count(N1)) / (N2 - N1): the
      locked instructions per unit of N, setup cancelled.  --lib DIR runs it
      with LD_LIBRARY_PATH=DIR (another build of libreclaim.so).

  e.g. tools/count-locked.py --per-op 102400,204800 -- \
         build/bench/rcl-bench hotpath --threads 1 --op churn \
         --impl libreclaim --count {n}
"""

import collections, re, subprocess, sys

def parse(path):
    names = {'ob': {}, 'fn': {}, 'fl': {}}
    cur = {'ob': None, 'fn': None}
    costs = collections.defaultdict(int)   # (ob, addr) -> Ir
    fnmin = {}                              # (ob, fn) -> min addr
    npos = 1
    lasts = [0]
    skip = False
    for line in open(path):
        line = line.rstrip('\n')
        m = re.match(r'^(ob|fn|fl|fi|fe|cob|cfn|cfi|cfl)=(?:\((\d+)\))?\s*(.*)$', line)
        if m:
            k, i, name = m.groups()
            base = k[1:] if k.startswith('c') and k != 'cfl' and len(k) == 3 else k
            base = {'cob': 'ob', 'cfn': 'fn', 'cfi': 'fl', 'cfl': 'fl', 'fi': 'fl', 'fe': 'fl'}.get(k, k)
            if i is not None:
                if name:
                    names[base][i] = name
                else:
                    name = names[base].get(i, '?')
            if k in ('ob', 'fn'):
                cur[k] = name
            continue
        if line.startswith('calls='):
            skip = True
            continue
        if line.startswith('positions:'):
            npos = len(line.split()) - 1
            lasts = [0] * npos
            continue
        if line.startswith(('jump=', 'jcnd=')):
            skip = True
            continue
        toks = line.split()
        if not toks or not re.match(r'^([+-]?\d+|0x[0-9a-fA-F]+|\*)$', toks[0]):
            continue
        vals = []
        for j in range(npos):
            p = toks[j] if j < len(toks) else '*'
            if p == '*':
                v = lasts[j]
            elif p.startswith('0x'):
                v = int(p, 16)
            elif p[0] in '+-':
                v = lasts[j] + int(p)
            else:
                v = int(p)
            lasts[j] = v
            vals.append(v)
        a = vals[0]
        c = toks[npos] if len(toks) > npos else '0'
        if skip:
            skip = False
            continue
        costs[(cur['ob'], a)] += int(c)
        key = (cur['ob'], cur['fn'])
        if key not in fnmin or a < fnmin[key]:
            fnmin[key] = a
    return costs, fnmin

def symbols(obj):
    out = subprocess.run(['nm', '-D', '--defined-only', obj], capture_output=True, text=True).stdout
    out += subprocess.run(['nm', '--defined-only', obj], capture_output=True, text=True).stdout
    syms = {}
    for l in out.splitlines():
        f = l.split()
        if len(f) == 3 and f[1] in 'tTwW':
            syms[f[2]] = int(f[0], 16)
    return syms

def locked(obj):
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', obj], capture_output=True, text=True).stdout
    addrs = {}
    for l in out.splitlines():
        m = re.match(r'^\s*([0-9a-f]+):\s+(.*)$', l)
        if not m:
            continue
        ins = m.group(2)
        if ins.startswith('lock ') or (ins.startswith('xchg') and '(' in ins):
            addrs[int(m.group(1), 16)] = ins
    return addrs

def count(path, top=0):
    costs, fnmin = parse(path)
    total = 0
    per = collections.Counter()
    for ob in sorted({o for o, _ in costs if o}):
        try:
            syms = symbols(ob)
            lk = locked(ob)
        except Exception:
            continue
        biases = collections.Counter()
        for (o, fn), a in fnmin.items():
            if o == ob and fn in syms:
                biases[a - syms[fn]] += 1
        if not biases:
            continue
        bias = biases.most_common(1)[0][0]
        for (o, a), c in costs.items():
            if o == ob and (a - bias) in lk:
                total += c
                per[(ob.split('/')[-1], hex(a - bias), lk[a - bias])] += c
    return total, per.most_common(top)

def per_op(argv):
    import os, tempfile
    n1, n2 = (int(x) for x in argv[2].split(','))
    rest = argv[3:]
    env = dict(os.environ)
    if rest and rest[0] == '--lib':
        env['LD_LIBRARY_PATH'] = rest[1]
        rest = rest[2:]
    if rest and rest[0] == '--':
        rest = rest[1:]
    totals = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (n1, n2):
            out = os.path.join(tmp, 'cg.%d' % n)
            cmd = ['valgrind', '--tool=callgrind', '--dump-instr=yes',
                   '--callgrind-out-file=' + out] + [a.replace('{n}', str(n)) for a in rest]
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            totals.append(count(out)[0])
    print('%.3f' % ((totals[1] - totals[0]) / (n2 - n1)))

def main():
    if len(sys.argv) > 2 and sys.argv[1] == '--per-op':
        per_op(sys.argv)
        return
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    total, top = count(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    print('locked', total)
    for k, v in top:
        print(v, *k)

main()
