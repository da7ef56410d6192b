#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the hand-made seeds of fuzz/corpus/ (see fuzz/README.md).

Each seed is a 6-byte header followed by 5-byte operations (opcode, 4
arguments), as LLVMFuzzerTestOneInput() in fuzz_ops.c reads them; the
tree-* seeds start with the tree-mode magic and header byte.  The seeds
cover every operation at least once; libFuzzer grows the rest.

usage: fuzz/gen_corpus.py [OUTDIR]   (default: fuzz/corpus next to this file)
"""
import os
import sys

OPS = ("ADD ADD_REFAULT DEL ACCESS MOVE SET_DIRTY WB_START WB_END ISOLATE "
       "PUTBACK ISO_EDIT SHRINK_INACTIVE SHRINK_ACTIVE DRAIN SET_MODE ATTACH "
       "DETACH CHARGE UNCHARGE TUNE RECLAIM FLUSH BALANCE WRITEBACK_ALL "
       "SHR_NEW SHR_REGISTER SHR_FREE SHR_GROW SHR_SHRINK SHR_DEBUG INVALID "
       "QUERY").split()
OP = {n: i for i, n in enumerate(OPS)}

# header bits (fuzz/README.md): domain cfg, domain budget x2, lruvec cfg,
# registry cfg
SOFT, TWO_PARTS, WRITES, NONPROP, FLUSHER = 0x01, 0x02, 0x20, 0x40, 0x80


def hdr(d0=FLUSHER, b0=8, d1=FLUSHER | SOFT, b1=16, lv=0, reg=1):
    return bytes([d0, b0, d1, b1, lv, reg])


def op(name, a=0, b=0, c=0, d=0):
    return bytes([OP[name], a & 255, b & 255, c & 255, d & 255])


def add(obj, lv, w=3, type_=0, flags=0, charge_ctx=True, mode=0):
    """flags: 1 active, 2 unevictable, 4 nobatch; mode: evict answer/action"""
    return op("ADD", obj, (type_ << 2) | lv, (w - 1) | (0x10 if charge_ctx else 0),
              flags | (mode << 4))


SEEDS = {}


def seed(name, body, h=None):
    SEEDS[name] = (h if h is not None else hdr()) + body


# 1. lists: add (batched and not), access, rotate/deactivate/unevictable, del
seed("lists-basic",
     b"".join(add(i, i % 3, w=1 + i % 5, flags=(4 if i % 2 else 0)) for i in range(12)) +
     op("ACCESS", 1, 1, 1) + op("ACCESS", 2, 2, 0) + op("ACCESS", 4, 1) +
     op("MOVE", 3, 0, 0) + op("MOVE", 3, 0, 1) + op("MOVE", 6, 0, 2) +
     op("MOVE", 6, 0, 0) + op("MOVE", 6, 0, 3) + op("DRAIN", 0, 0) +
     op("DRAIN", 0, 1) + op("DEL", 0, 0) + op("DEL", 1, 1, 1) +
     op("DEL", 0, 0) + op("DEL", 5, 0))

# 2. an lruvec shrunk directly: FREED, BUSY and ACTIVATE answers
seed("shrink-inactive",
     b"".join(add(i, 0, w=2, flags=4, mode=i % 3) for i in range(20)) +
     op("SHRINK_INACTIVE", 0, 0, 12, 12) + op("SHRINK_ACTIVE", 0, 0, 30) +
     op("SHRINK_INACTIVE", 0, 0, 40, 0x80) + op("SHRINK_INACTIVE", 3, 0, 4) +
     op("SHRINK_INACTIVE", 0, 9, 4) + op("SHRINK_ACTIVE", 0, 9, 4))

# 3. a domain: attach, charged adds over budget, direct reclaim
seed("domain-reclaim",
     op("ATTACH", 0, 0, 0) + op("ATTACH", 0, 1, 0) +
     b"".join(add(i, i % 2, w=4, mode=0) for i in range(16)) +
     op("RECLAIM", 0, 10, 1) + op("CHARGE", 0, 20, 1) + op("UNCHARGE", 0, 10) +
     op("DETACH", 0, 1) + op("DETACH", 0, 1) + op("ATTACH", 1, 1, 0),
     hdr(b0=10))

# 4. dirty and writeback by hand, the flush trigger and flush_done
seed("dirty-writeback",
     op("ATTACH", 0, 0, 0) +
     b"".join(add(i, 0, w=2, flags=4) for i in range(10)) +
     b"".join(op("SET_DIRTY", i, 0, 2) for i in range(8)) +
     op("WB_START", 0, 0) + op("WB_START", 1, 0) + op("WB_START", 0, 0) +
     op("WB_END", 0, 0, 0) + op("WB_END", 1, 0, 1) + op("WB_END", 0, 0) +
     op("SHRINK_INACTIVE", 0, 0, 20, 12) + op("FLUSH", 0, 0) +
     op("FLUSH", 0, 1, 0) + op("FLUSH", 0, 0) + op("FLUSH", 0, 2) +
     op("RECLAIM", 0, 10, 1) + op("BALANCE", 0, 1) + op("DEL", 2, 0) +
     op("WB_START", 3, 0) + op("DEL", 3, 0) + op("SET_DIRTY", 3, 0) +
     op("WB_END", 3, 0))

# 5. writeback_all with failing writes and syncs
seed("writeback-all",
     op("ATTACH", 1, 0, 0) +
     b"".join(add(i, 0, w=1, flags=4) for i in range(12)) +
     b"".join(op("SET_DIRTY", i, 0) for i in range(12)) +
     op("WRITEBACK_ALL", 1, 0, 1, 2) + op("WRITEBACK_ALL", 1, 0, 0, 0) +
     op("WRITEBACK_ALL", 0, 3, 3, 3))

# 6. isolate, edit the set, putback; errors for another lruvec's set
seed("isolate-putback",
     b"".join(add(i, i % 2, w=1, flags=4 | (i % 2)) for i in range(14)) +
     op("ISOLATE", 0, 0, 5) + op("ISOLATE", 1, 1, 4) + op("ISOLATE", 0, 8, 1) +
     op("ISO_EDIT", 0, 1, 1) + op("ISO_EDIT", 0, 2, 3) + op("ISO_EDIT", 0, 0, 0) +
     op("ISOLATE", 0, 0, 2, 1) + op("PUTBACK", 0, 1) + op("DEL", 2, 0) +
     op("ACCESS", 4, 0) + op("MOVE", 4, 0, 0) + op("SET_DIRTY", 4, 0) +
     op("WB_START", 4, 0) + op("ISO_EDIT", 0, 0, 4) + op("PUTBACK", 0) +
     op("PUTBACK", 1) + op("ISO_EDIT", 2, 5))

# 7. shrinkers in all three registries
seed("shrinkers",
     op("SHR_NEW", 0, 0, 2, 0x80 | 0x04) + op("SHR_NEW", 1, 2, 0x0a, 0x80 | 0x40) +
     op("SHR_NEW", 2, 0x41, 0, 0x01) + op("SHR_NEW", 3, 0x82, 1, 0x82) +
     op("SHR_REGISTER", 2) + op("SHR_REGISTER", 2) + op("SHR_NEW", 0) +
     op("SHR_GROW", 0, 11, 1) + op("SHR_GROW", 1, 9, 0x21) +
     op("SHR_GROW", 2, 5) + op("SHR_GROW", 3, 7) +
     op("SHR_SHRINK", 0, 0, 12, 3) + op("SHR_SHRINK", 1, 0, 0, 3) +
     op("SHR_SHRINK", 4 * 2 + 3, 1, 0, 0x83) + op("SHR_SHRINK", 0, 0, 0, 0x80) +
     op("SHR_SHRINK", 1, 0, 13) + op("SHR_DEBUG", 0, 0, 1) +
     op("SHR_DEBUG", 0, 0, 10, 1) + op("SHR_DEBUG", 3, 3, 2) +
     op("QUERY", 0, 5, 0) + op("SHR_FREE", 1, 1) + op("SHR_FREE", 3, 1) +
     op("SHR_FREE", 1) + op("RECLAIM", 0, 40, 1),
     hdr(d0=FLUSHER | TWO_PARTS, b0=20, reg=0x07))

# 8. shadows: evict, then add again with the shadow
seed("refault",
     op("ATTACH", 0, 0, 0) +
     b"".join(add(i, 0, w=1, flags=4) for i in range(16)) +
     b"".join(op("ACCESS", i, 0, 1) for i in range(8, 12)) +
     op("SHRINK_ACTIVE", 0, 0, 4) +
     op("SHRINK_INACTIVE", 0, 0, 12, 12) +
     b"".join(op("ADD_REFAULT", i, 0, 0x10, 4) for i in range(12)) +
     b"".join(op("ADD_REFAULT", i, 1, 0x10, 4) for i in range(12, 16)) +
     op("QUERY", 0, 0), hdr(b0=60))

# 9. what evict callbacks may call back into
seed("callback-actions",
     op("ATTACH", 0, 0, 0) +
     b"".join(add(i, 0, w=1, flags=4, mode=(i % 8) << 2) for i in range(16)) +
     op("SET_MODE", 5, 0x15) + op("SET_MODE", 6, 0x19) +
     op("SHRINK_INACTIVE", 0, 0, 16, 5) + op("RECLAIM", 0, 16, 1) +
     op("SET_MODE", 7, 0x1c))

# 10. budget, watermarks, swappiness, the clock
seed("domain-tune",
     op("ATTACH", 0, 0, 0) + b"".join(add(i, 0, w=8) for i in range(10)) +
     op("TUNE", 0, 0, 5) + op("TUNE", 0, 0, 0) + op("TUNE", 0, 1, 2, 0x47) +
     op("TUNE", 0, 5) + op("TUNE", 0, 2, 150) + op("TUNE", 0, 2, 250) +
     op("TUNE", 0, 3, 200) + op("TUNE", 0, 0, 200) + op("QUERY", 0, 1, 0, 40) +
     op("QUERY", 0, 2) + op("QUERY", 0, 3, 12, 100) + op("QUERY", 0, 3, 13) +
     op("QUERY", 0, 4, 1, 3) + op("QUERY", 0, 4, 4))

# 11. soft mode over budget, and 64-bit overflow
seed("soft-overshoot",
     op("ATTACH", 1, 2, 0) + b"".join(add(i, 2, w=16, charge_ctx=False)
                                      for i in range(20)) +
     op("CHARGE", 1, 60, 0) + op("CHARGE", 1, 0, 2) + op("CHARGE", 0, 1, 2) +
     op("RECLAIM", 1, 50, 1) + op("UNCHARGE", 1, 60), hdr(b1=4))

# 12. reclaim writes dirty objects itself (the pre-2017 baseline)
seed("reclaim-writes",
     op("ATTACH", 0, 0, 0) + b"".join(add(i, 0, w=2, flags=4) for i in range(12)) +
     b"".join(op("SET_DIRTY", i, 0) for i in range(6)) +
     op("RECLAIM", 0, 12, 1) + op("SHRINK_INACTIVE", 1, 0x10, 12),
     hdr(d0=FLUSHER | WRITES, b0=6))

# 13. every invalid-argument check
seed("invalid-args",
     b"".join(add(i, 0, w=1) for i in range(4)) + op("ATTACH", 0, 0, 0) +
     b"".join(op("INVALID", k, k, k % 4, k) for k in range(24)))

# 14. four types, kernel parity flags, one-type lruvecs, wrong types
seed("types",
     b"".join(add(i, 2, w=1, type_=i % 4, flags=4) for i in range(12)) +
     add(20, 0, type_=3) + add(21, 0, flags=8) + op("ADD", 22, 0, 0x20 | 0x01, 0) +
     op("SHRINK_INACTIVE", 2, 3, 8) + op("SHRINK_ACTIVE", 2, 2, 8) +
     op("ISOLATE", 2, 7, 3) + op("ISOLATE", 0, 2, 3) + op("QUERY", 2, 0),
     hdr(lv=0x41 | 0x08 | 0x80))

# 15. unevictable objects are never isolated or evicted
seed("unevictable",
     b"".join(add(i, 0, w=1, flags=2 | (4 if i % 2 else 0)) for i in range(8)) +
     op("SHRINK_INACTIVE", 0, 0, 20) + op("ISOLATE", 0, 0, 20) +
     op("MOVE", 0, 0, 3) + op("MOVE", 1, 0, 3) + op("SHRINK_INACTIVE", 0, 0, 20))

# 16. the teardown path with everything in flight
seed("teardown-busy",
     op("ATTACH", 0, 0, 0) + op("ATTACH", 1, 1, 0) +
     b"".join(add(i, i % 2, w=1, flags=4) for i in range(10)) +
     op("SET_DIRTY", 0, 0) + op("WB_START", 0, 0) + op("ISOLATE", 1, 0, 3) +
     op("SHR_NEW", 0, 0, 2, 0x80) + op("SHR_GROW", 0, 3) + op("CHARGE", 0, 3))

# 17. the scan controller over one lruvec, outside any domain
seed("scan-lruvec",
     b"".join(add(i, 1, w=2, type_=i % 2, flags=4 | (i % 3 == 0), mode=i % 2)
              for i in range(24)) +
     op("QUERY", 1, 6, 20, 12) + op("QUERY", 1, 6, 0xd0, 0x80) +
     op("QUERY", 1, 6, 5, 13) + op("QUERY", 1, 3, 6, 60))

# 18. bounded shadows: a shadow-limit shrinker in domain 0's registry
seed("shadow-limit",
     op("ATTACH", 0, 0, 0) + b"".join(add(i, 0, w=1, flags=4) for i in range(20)) +
     op("SHRINK_INACTIVE", 0, 0, 20, 12) + op("RECLAIM", 0, 8, 1) +
     op("SHR_SHRINK", 0, 0, 0, 0x83) +
     b"".join(op("ADD_REFAULT", i, 0, 0x10, 4) for i in range(6)),
     hdr(b0=40, reg=0x30))


# The same scripts with evict_batch (fuzz/README.md): the first operation's
# opcode byte carries the callback form of lruvec v in bit 5 + v.
def batched(name, form=0xe0):
    data = bytearray(SEEDS[name])
    data[6] |= form
    SEEDS[name + "-batched"] = bytes(data)


for _name in ("shrink-inactive", "callback-actions", "dirty-writeback",
              "reclaim-writes", "domain-reclaim", "scan-lruvec", "refault"):
    batched(_name)
batched("lists-basic", 0xa0)	# lruvec 1 per object, 0 and 2 per batch


# Tree mode (fuzz/README.md): TREE_MAGIC, a tree header byte (bit d: root
# d has RCL_DOMAIN_RECURSIVE_PROT; bits 5-7: the evict callback forms),
# then the usual header and operations, where an opcode byte with bit 5
# set is a tree operation.
TREE_MAGIC = bytes([0xd1, 0x7e, 0x5e, 0x17])
TOPS = "NEW CHARGE UNCHARGE SET_LIMITS SET_BUDGET FREE RECLAIM INVALID".split()
TOP = {n: i for i, n in enumerate(TOPS)}
NDOM = 2


def top(name, a=0, b=0, c=0, d=0):
    return bytes([0x20 | TOP[name], a & 255, b & 255, c & 255, d & 255])


def kid(slot, parent, budget=None, soft=False, high=None, pmin=0, plow=0,
        bad=0):
    """A child in slot (node NDOM + slot) under tree node parent; budget in
    units of 4 (None: no limit), high in units of 8 (1..16), pmin in units
    of 4 (0..7), plow in units of 8 (0..7)."""
    a1 = parent | (((high - 1) << 4) if high else 0)
    a2 = 0x80 if budget is None else (budget // 4 - 1)
    a3 = (1 if soft else 0) | (2 if high else 0) | (pmin << 2) | (plow << 5)
    return top("NEW", slot | (bad << 3), a1, a2, a3)


def tree_seed(name, body, h=None, th=0):
    SEEDS["tree-" + name] = TREE_MAGIC + bytes([th]) + \
        (h if h is not None else hdr()) + body


# 19. a tree under domain 0: children and a grandchild, charges through
# them, limits, budgets, refusals, frees leaves first
tree_seed("basic",
          op("ATTACH", 0, 0, 0) +
          b"".join(add(i, 0, w=4, mode=0) for i in range(10)) +
          kid(0, 0, budget=120, high=4, pmin=2, plow=3) +
          kid(1, NDOM + 0, budget=60) + kid(2, 0, pmin=1, plow=1) +
          kid(0, 0) +                                     # a used slot
          top("CHARGE", 0, 30, 1) + top("CHARGE", 1, 50, 1) +
          top("CHARGE", 1, 20, 1) + top("CHARGE", 2, 40, 0) +
          top("SET_LIMITS", NDOM + 0, 10, 20, 10) +
          top("SET_LIMITS", 0, 100, 0x80, 0x80) +
          top("SET_LIMITS", 0, 0, 4, 0) +                 # root: protection
          top("SET_BUDGET", 1, 10, 0) + top("SET_BUDGET", 1, 0, 0) +
          top("UNCHARGE", 1, 60) + top("RECLAIM", 0, 10, 1) +
          b"".join(top("INVALID", g, NDOM + g % 3, g, g) for g in range(6)) +
          top("FREE", 0) + top("FREE", 1) + top("FREE", 0) +
          op("CHARGE", 0, 40, 1) + top("FREE", 2),
          hdr(b0=40))

# 20. a chain as deep as RCL_DOMAIN_MAX_DEPTH under domain 1, and one more
tree_seed("deep",
          kid(0, 1, budget=400) +
          b"".join(kid(i, NDOM + i - 1) for i in range(1, 8)) +
          top("CHARGE", 6, 33, 1) + top("SET_LIMITS", NDOM + 6, 4, 8, 8) +
          top("SET_LIMITS", NDOM + 3, 0, 30, 20) +
          top("CHARGE", 6, 10, 1) + top("FREE", 3) + top("FREE", 6) +
          top("INVALID", 1, NDOM + 5, NDOM + 2) +
          top("INVALID", 1, NDOM + 2, NDOM + 5),
          hdr(b1=120))

# 21. RCL_DOMAIN_RECURSIVE_PROT on domain 0: protected siblings and their
# children, protection relative to every ancestor
tree_seed("recursive",
          kid(0, 0, pmin=7, plow=7) + kid(1, 0, pmin=1) + kid(2, NDOM + 0, pmin=3, plow=5) +
          kid(3, NDOM + 0, plow=2) + kid(4, NDOM + 1) +
          top("CHARGE", 2, 40, 1) + top("CHARGE", 3, 63, 1) +
          top("CHARGE", 0, 9, 1) + top("CHARGE", 1, 30, 1) +
          top("CHARGE", 4, 20, 1) + top("SET_LIMITS", NDOM + 1, 0, 50, 40) +
          top("UNCHARGE", 3, 40) + top("SET_LIMITS", NDOM + 2, 0, 0x80, 0x80),
          hdr(b0=100), th=0x01)

# 22. soft children, a strict child above a lowered budget, a full root
tree_seed("soft-full",
          kid(0, 0, budget=40, soft=True) + kid(1, 0, budget=80) +
          top("CHARGE", 0, 60, 1) + top("CHARGE", 0, 60, 1) +
          top("CHARGE", 1, 63, 1) + top("SET_BUDGET", 1, 5, 1) +
          top("CHARGE", 1, 1, 1) + top("UNCHARGE", 1, 50) +
          top("CHARGE", 1, 1, 1) + top("CHARGE", 0, 63, 0) +
          op("CHARGE", 0, 63, 1) + top("CHARGE", 1, 30, 1) +
          top("SET_LIMITS", NDOM + 0, 8, 0, 0),
          hdr(d0=FLUSHER, b0=30))

# 23. reclaim of the root's lruvecs from a child's charge, with evict
# callbacks that try what a pass refuses (mode bit 5), in its tree and in
# the other
tree_seed("callbacks",
          op("ATTACH", 0, 0, 0) + op("ATTACH", 0, 1, 0) +
          kid(0, 0, pmin=2, plow=2) + kid(1, NDOM + 0) + kid(2, 1) +
          b"".join(add(i, i % 2, w=6, mode=0) for i in range(12)) +
          b"".join(op("SET_MODE", i, 0x20 | (i % 2)) for i in range(12)) +
          top("CHARGE", 1, 63, 1) + top("CHARGE", 0, 63, 1) +
          op("RECLAIM", 0, 6, 1) + top("SET_LIMITS", 0, 10, 0x80, 0x80) +
          top("SET_BUDGET", 0, 3, 0) + op("TUNE", 0, 0, 10),
          hdr(b0=30), th=0xa0)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {out}")


if __name__ == "__main__":
    main()
