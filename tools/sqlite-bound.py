#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Replay the page streams of `rcl-bench sqlite` through simulated caches.

Usage:
  tools/sqlite-bound.py DIR [--pages N[,N...]] [--check TOL]
  tools/sqlite-bound.py --bench RCL_BENCH [--short] [--check TOL] [...]

DIR is what `rcl-bench sqlite --page-log DIR` wrote: pages-I.bin, the page
number of every xFetch of connection I (native-endian uint32, each query
ended by 0xffffffff), and meta.json (the warm-up length, split's cache size
in pages as SQLite computed it, and the measured misses of the three
configurations).  With --bench, the benchmark is run first (with --page-log
into a temporary directory, and --short if given); its exit status 77
(no traces) is passed on.

The streams are interleaved one query of each connection in turn (the
threads of the benchmark interleave by timing), and misses are counted over
the timed queries only, as SQLITE_DBSTATUS_CACHE_MISS is.  Printed:

- split replayed: an exact LRU of split's pages per database.  It checks the
  replay against split's measured misses; --check TOL fails (exit 1) when
  they differ by more than TOL (relative, e.g. 0.02).
- one exact LRU shared by the databases, at split's total pages;
- the best static division of a total among per-database LRUs, chosen
  knowing every database's miss curve (what no online policy is promised
  to beat), for split's total and each --pages total;
- Belady's MIN over the interleaved streams at the same totals (the
  clairvoyant bound);
- the issue's target, 20 % below split's measured misses.
"""
import argparse
import array
import heapq
import json
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict

MARK = 0xFFFFFFFF


def load(d):
    with open(os.path.join(d, 'meta.json')) as f:
        meta = json.load(f)
    streams = []
    for i in range(meta['databases']):
        a = array.array('I')  # native order: written on this machine
        with open(os.path.join(d, 'pages-%d.bin' % i), 'rb') as f:
            a.frombytes(f.read())
        qs, cur = [], []
        for v in a:
            if v == MARK:
                qs.append(cur)
                cur = []
            else:
                cur.append(v)
        if cur:
            sys.exit('sqlite-bound: %s/pages-%d.bin: a query without its '
                     'end mark (truncated log)' % (d, i))
        streams.append(qs)
    return meta, streams


def accesses(streams, warmup):
    """(db, page, timed) in the interleaved order."""
    nq = max(len(s) for s in streams)
    for q in range(nq):
        for db, s in enumerate(streams):
            if q < len(s):
                timed = q >= warmup
                for pg in s[q]:
                    yield db, pg, timed


def lru_split(streams, warmup, sizes):
    lrus = [OrderedDict() for _ in streams]
    miss = [0] * len(streams)
    for db, pg, timed in accesses(streams, warmup):
        lru = lrus[db]
        if pg in lru:
            lru.move_to_end(pg)
            continue
        if timed:
            miss[db] += 1
        lru[pg] = None
        if len(lru) > sizes[db]:
            lru.popitem(last=False)
    return miss


def lru_shared(streams, warmup, total):
    lru = OrderedDict()
    miss = 0
    for db, pg, timed in accesses(streams, warmup):
        k = (db, pg)
        if k in lru:
            lru.move_to_end(k)
            continue
        miss += timed
        lru[k] = None
        if len(lru) > total:
            lru.popitem(last=False)
    return miss


def miss_curve(stream, warmup, maxc):
    """m[c]: timed misses of an exact LRU of c pages, c = 0 .. maxc."""
    acc, tim = [], []
    for q, pages in enumerate(stream):
        for pg in pages:
            acc.append(pg)
            tim.append(q >= warmup)
    n = len(acc)
    bit = [0] * (n + 1)
    last = {}
    hist = [0] * (maxc + 2)
    for t, pg in enumerate(acc):
        p = last.get(pg)
        if p is None:
            d = maxc + 1
        else:
            # distinct pages touched after p: live marks in (p, t)
            s, i = 0, t
            while i > 0:
                s += bit[i]
                i -= i & -i
            i = p + 1
            while i > 0:
                s -= bit[i]
                i -= i & -i
            d = min(s + 1, maxc + 1)
            i = p + 1
            while i <= n:
                bit[i] -= 1
                i += i & -i
        i = t + 1
        while i <= n:
            bit[i] += 1
            i += i & -i
        last[pg] = t
        if tim[t]:
            hist[d] += 1
    total = sum(hist)
    m, hits = [0] * (maxc + 1), 0
    for c in range(maxc + 1):
        if c:
            hits += hist[c]
        m[c] = total - hits
    return m


def best_static(curves, total, step):
    """The division of @total pages (in @step) with the fewest misses."""
    f = {0: (0, ())}
    for cv in curves:
        g = {}
        for used, (v, alloc) in f.items():
            for s in range(0, min(total - used, len(cv) - 1) + 1, step):
                u, nv = used + s, v + cv[s]
                if u not in g or g[u][0] > nv:
                    g[u] = (nv, alloc + (s,))
        f = g
    return min(f.values())


def belady(streams, warmup, total):
    seq = list(accesses(streams, warmup))
    nxt = [0] * len(seq)
    seen = {}
    for t in range(len(seq) - 1, -1, -1):
        k = (seq[t][0], seq[t][1])
        nxt[t] = seen.get(k, len(seq) + t)
        seen[k] = t
    cache = {}
    heap = []
    miss = 0
    for t, (db, pg, timed) in enumerate(seq):
        k = (db, pg)
        if k not in cache:
            miss += timed
            if len(cache) >= total:
                while True:
                    nu, kk = heapq.heappop(heap)
                    if cache.get(kk) == -nu:
                        del cache[kk]
                        break
        cache[k] = nxt[t]
        heapq.heappush(heap, (-nxt[t], k))
    return miss


def pct(a, b):
    return '%+.1f %%' % (100.0 * (a / b - 1)) if b else 'n/a'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('dir', nargs='?')
    ap.add_argument('--bench', help='run this rcl-bench first')
    ap.add_argument('--short', action='store_true',
                    help='with --bench: rcl-bench sqlite --short')
    ap.add_argument('--pages', default='',
                    help='more totals (pages) for the best static division '
                    'and MIN, e.g. 3772 (what the plug-in held)')
    ap.add_argument('--step', type=int, default=4,
                    help='granularity of the static division (pages)')
    ap.add_argument('--no-belady', action='store_true')
    ap.add_argument('--check', type=float, default=None, metavar='TOL')
    a = ap.parse_args()
    if bool(a.dir) == bool(a.bench):
        ap.error('give DIR or --bench')

    tmp = None
    d = a.dir
    if a.bench:
        tmp = tempfile.TemporaryDirectory(prefix='sqlite-bound-')
        d = tmp.name
        cmd = [a.bench, 'sqlite', '--json', '--page-log', d]
        if a.short:
            cmd.append('--short')
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
        if r.returncode == 77:
            print('sqlite-bound: rcl-bench sqlite skipped (no traces)')
            return 77
        if r.returncode != 0:
            print('sqlite-bound: %s failed (%d)' % (' '.join(cmd),
                                                    r.returncode))
            return 1

    meta, streams = load(d)
    k, w, sp = meta['databases'], meta['warmup'], int(meta['split_pages'])
    measured = meta.get('split_cache_misses')
    totals = [k * sp] + [int(x) for x in a.pages.split(',') if x]
    names = meta.get('traces', ['db%d' % i for i in range(k)])
    fetches = sum(len(p) for s in streams for p in s)
    print('%d databases, %d + %d queries each, %d fetches; split: %d pages '
          'per database' % (k, w, meta['queries'], fetches, sp))

    ms = lru_split(streams, w, [sp] * k)
    print('split replayed (exact LRU, %d pages each): %d misses (%s); '
          'measured %s' % (sp, sum(ms), ' / '.join(map(str, ms)),
                           measured))
    ok = True
    if measured:
        dev = abs(sum(ms) / measured - 1)
        print('  replay against measured: %s' % pct(sum(ms), measured))
        if a.check is not None and dev > a.check:
            print('sqlite-bound: the replay is off by %.3f, more than %.3f'
                  % (dev, a.check))
            ok = False
    ref = measured or sum(ms)
    m = lru_shared(streams, w, k * sp)
    print('one exact LRU shared, %d pages: %d misses (%s against split)'
          % (k * sp, m, pct(m, ref)))
    curves = [miss_curve(s, w, max(totals)) for s in streams]
    for t in totals:
        v, alloc = best_static(curves, t, a.step)
        print('best static division of %d pages (%s): %d misses (%s)'
              % (t, ' / '.join('%s %d' % (names[i], alloc[i])
                              for i in range(k)), v, pct(v, ref)))
        if not a.no_belady:
            b = belady(streams, w, t)
            print("Belady's MIN, %d pages shared: %d misses (%s)"
                  % (t, b, pct(b, ref)))
    for key in ('soft_limit_cache_misses', 'libreclaim_cache_misses'):
        if key in meta:
            print('measured %s: %d (%s)' % (key.replace('_cache_misses', ''),
                                             meta[key], pct(meta[key], ref)))
    print('the target (20 %% below split): %d misses' % int(ref * 0.8))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
