#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the hand-made seeds of fuzz/corpus-objcache/ (see fuzz/README.md).

Each seed is a 4-byte header followed by 5-byte operations (opcode, 4
arguments), as LLVMFuzzerTestOneInput() in fuzz_objcache.c reads them; the
meta-* seeds put "MC" and a byte before it, the caches' meta_charge (one
nibble each, an index into fuzz_objcache.c's metas[]).  The seeds cover
every operation at least once; libFuzzer grows the rest.

usage: fuzz/gen_corpus_objcache.py [OUTDIR]
       (default: fuzz/corpus-objcache next to this file)
"""
import os
import sys

OPS = ("GET INSERT PUT DEL DEL_NODE MARK_DIRTY WRITEBACK RECLAIM CHARGE "
       "UNCHARGE FOR_EACH STATS DESTROY INVALID GET_PUT INSERT2").split()
OP = {n: i for i, n in enumerate(OPS)}

# header byte 0
SOFT, NOSHADOW0, USER0, WEAK0, NOSHADOW1, USER1, WEAK1, TWO = (
    1, 2, 4, 8, 16, 32, 64, 128)


def hdr(flags=0, budget=4, shards=0x11, misc=0):
    """budget: 16 + 4 * budget; shards: cache0 low nibble, cache1 high
    (bits 0-1 log2 shards, 2-3 log2 buckets); misc: shadow quota, lru type,
    RCL_DOMAIN_RECLAIM_WRITES (0x10), seed (0x40), cache 1 without a write
    hook (0x80)"""
    return bytes([flags, budget, shards, misc])


def meta(m0=0, m1=0):
    """The "MC" prefix: meta_charge index m0 for cache 0, m1 for cache 1
    (0: none, 1..11: 1 2 3 4 6 8 12 16 32 100 1000, 12..15: UINT32_MAX -
    16, - 8, - 1, UINT32_MAX)"""
    return b"MC" + bytes([(m0 & 15) | (m1 & 15) << 4])


def op(name, a=0, b=0, c=0, d=0):
    return bytes([OP[name], a & 255, b & 255, c & 255, d & 255])


def ins(obj, key, w=3, cache=0, tok=0, ctx=True, put=False, init=False,
        noex=False):
    """tok: 0 none, 1 this key's, 2 another key's, 3 another cache's;
    noex: no @existing (a lost race then pins nothing)"""
    return op("INSERT", obj, (key << 1) | cache,
              ((w - 1) & 15) | (0 if ctx else 0x10) | (tok << 5),
              (8 if put else 0) | (2 if init else 0) | (0x10 if noex else 0))


def get(key, cache=0, keep=True):
    return op("GET", key, cache | (0 if keep else 2))


SEEDS = {}


def seed(name, body, h=None):
    SEEDS[name] = (h if h is not None else hdr()) + body


# 1. get-or-insert, hits, puts, a put without a pin
seed("basic",
     b"".join(get(k) + ins(k, k, w=1 + k % 4, tok=1) for k in range(8)) +
     b"".join(op("PUT", k) for k in range(8)) +
     get(3, keep=False) + op("PUT", 3) + op("STATS", 1) + op("FOR_EACH"))

# 2. lost races: -EEXIST hands back the indexed object
seed("lost-race",
     ins(0, 5, put=True) + ins(1, 5) + ins(2, 5, put=True) + op("PUT", 0) +
     op("PUT", 0) + op("PUT", 1))

# 2b. lost races without @existing: nothing pinned, the winner reclaimable
seed("lost-race-no-existing",
     ins(0, 5, put=True) + ins(1, 5, noex=True) + ins(2, 5, noex=True) +
     op("PUT", 0) + op("RECLAIM", 7) + ins(3, 5, put=True, noex=True) +
     op("STATS", 1))

# 3. strict domain under pressure: inserts evict, a charge fails
seed("pressure",
     b"".join(ins(i, i % 16, w=8, put=True) for i in range(20)) +
     op("CHARGE", 31, 1) + op("CHARGE", 31, 0) + op("RECLAIM", 7) +
     op("UNCHARGE", 31) + b"".join(get(k, keep=False) for k in range(16)) +
     b"".join(op("GET_PUT", k, 0, k) for k in range(16)), hdr(budget=2))

# 4. del with and without pins, del_node, get after del
seed("del",
     ins(0, 1) + ins(1, 2, put=True) + ins(2, 3) + op("DEL", 1, 2) +
     op("DEL", 2, 2) + op("DEL", 2) + ins(3, 1, put=True) + op("PUT", 0) +
     op("DEL_NODE", 2) + op("DEL_NODE", 2) + op("PUT", 2) + op("DEL", 9))

# 5. dirty objects, writeback with failures, a write that tries to delete
seed("dirty",
     b"".join(ins(i, i, w=2) for i in range(6)) +
     b"".join(op("MARK_DIRTY", i, 2 if i % 2 else 0) for i in range(6)) +
     op("MARK_DIRTY", 20) + b"".join(op("PUT", i) for i in range(6)) +
     op("RECLAIM", 7) + op("WRITEBACK", 1, 0, 1, 0) + op("WRITEBACK", 0, 1) +
     op("RECLAIM", 7))

# 6. destroy: -EBUSY while pinned, then destroyed and recreated
seed("destroy",
     ins(0, 0) + ins(1, 1, put=True) + op("DESTROY") + op("DEL", 0) +
     op("DESTROY") + op("PUT", 0) + op("DESTROY", 1) + ins(0, 0, put=True) +
     op("MARK_DIRTY", 0))

# 7. two caches, user keys with a weak hash, tokens of another cache
seed("two-caches",
     b"".join(get(k, c) for k in range(4) for c in range(2)) +
     ins(0, 0, cache=0, tok=1) + ins(1, 0, cache=1, tok=3) +
     ins(2, 1, cache=1, tok=1, put=True) + op("PUT", 0, 1) + op("PUT", 0) +
     op("DEL_NODE", 0, 1) + op("FOR_EACH", 0, 1) + op("FOR_EACH", 2, 3) +
     op("STATS", 1, 1),
     hdr(TWO | USER0 | WEAK0 | USER1, shards=0x2f))

# 8. refaults: evict then get again (shadows), small shadow quota
seed("refault",
     b"".join(ins(i, i, w=4, put=True) for i in range(16)) +
     op("RECLAIM", 7) + op("RECLAIM", 7, 1) +
     b"".join(op("GET_PUT", k, 0, 16 + k, 3) for k in range(16)),
     hdr(budget=6, misc=1))

# 9. weights: 0, huge, normal
seed("weights",
     b"".join(op("INSERT2", i, i << 1, i, i & 1) for i in range(8)) +
     op("INSERT2", 8, 2, 6, 1))

# 10. bad input
seed("invalid", b"".join(op("INVALID", i, 0, i) for i in range(12)))

# 11. soft domain, destructors destroying the other cache from reclaim
seed("soft-two",
     b"".join(ins(i, i % 16, w=9, cache=i & 1, put=True) for i in range(24)) +
     op("RECLAIM", 7, 1) + op("CHARGE", 30, 5) + op("RECLAIM", 3, 1),
     hdr(SOFT | TWO | NOSHADOW1, budget=1, misc=0x80))

# 12. a domain with RCL_DOMAIN_RECLAIM_WRITES: dirty objects meet reclaim
seed("reclaim-writes",
     b"".join(ins(i, i, w=3) + op("MARK_DIRTY", i) + op("PUT", i)
              for i in range(6)) + op("STATS", 2) + op("RECLAIM", 7) +
     op("RECLAIM", 7), hdr(misc=0x10))

# 13. meta_charge 8 and 2 in a strict domain under pressure, two caches:
# inserts evict by the charge, a charge fails, objects go every way
seed("meta-pressure",
     b"".join(ins(i, i % 16, w=1 + i % 8, cache=i & 1, put=i % 3 != 0)
              for i in range(24)) +
     ins(30, 3, w=16) + op("INSERT2", 31, 10, 5, 8) + op("STATS", 2) +
     op("STATS", 3, 1) + op("CHARGE", 31, 1) + op("RECLAIM", 7) +
     op("DEL", 4, 2) + op("DEL_NODE", 3) + op("PUT", 3) + op("DESTROY", 0, 1) +
     b"".join(op("GET_PUT", k, k & 1, 32 + k) for k in range(16)),
     meta(6, 2) + hdr(TWO, budget=8))

# 14. meta_charge at the lru weight's limit: UINT32_MAX - 8 in a soft
# domain (weights 9..16 are -E2BIG, 8 charges exactly UINT32_MAX) and
# UINT32_MAX (only weight 0 fits); weights 0, 2^32 and 2^64 - 1
seed("meta-limit",
     b"".join(ins(i, i, w=1 + i, cache=i & 1, put=True) for i in range(16)) +
     b"".join(op("INSERT2", 16 + i, (i << 1) | (i & 1), i, 8 | (i & 1))
              for i in range(8)) +
     op("INSERT2", 24, 1, 6, 9) + op("STATS", 2) + op("STATS", 3, 1) +
     op("RECLAIM", 7) + op("INVALID", 2) + op("INVALID", 8, 0, 0, 3),
     meta(13, 15) + hdr(SOFT | TWO))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus-objcache")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), out))


if __name__ == "__main__":
    main()
