#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write fuzz/corpus-monitor/: seeds for fuzz_monitor (fuzz/README.md).

Each seed is 8 setup bytes and 20 to 199 four-byte operations, drawn from a
fixed seed so that the corpus is reproducible: python3 fuzz/gen_corpus_monitor.py
"""
import os
import random

random.seed(14)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-monitor")
os.makedirs(out, exist_ok=True)
for k in range(24):
    setup = bytes(random.randrange(256) for _ in range(8))
    ops = []
    for _ in range(random.randrange(20, 200)):
        op = random.randrange(9)
        ops.append(bytes([op] + [random.randrange(256) for _ in range(3)]))
    with open(os.path.join(out, "seed-%02d" % k), "wb") as f:
        f.write(setup + b"".join(ops))
