#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The built library carries every USDT probe of lib/probes.h.

usage: check_usdt.py on|off LIBRARY

Lists the stapsdt notes with `readelf -n` and checks that each probe of the
provider 'libreclaim' is there.  Exits 77 (skipped) when the Meson feature
'usdt' is off or readelf is missing.
"""
import re
import shutil
import subprocess
import sys

PROBES = [
    "mm_shrink_slab_start",
    "mm_shrink_slab_end",
    "mm_vmscan_lru_shrink_inactive",
    "mm_vmscan_kswapd_wake",
    "mm_vmscan_kswapd_sleep",
    "mm_vmscan_direct_reclaim_begin",
    "mm_vmscan_direct_reclaim_end",
    "writeback_queue",
    "workingset_refault",
]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("on", "off"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "off":
        print("the usdt feature is off: nothing to check")
        return 77
    readelf = shutil.which("readelf")
    if not readelf:
        print("readelf not found")
        return 77
    out = subprocess.run([readelf, "-n", sys.argv[2]], check=True,
                         capture_output=True, text=True).stdout
    # Each note: "Provider: libreclaim" then "Name: <probe>".
    found = set(re.findall(r"Provider: libreclaim\s+Name: (\w+)", out))
    missing = [p for p in PROBES if p not in found]
    extra = sorted(found - set(PROBES))
    for p in PROBES:
        print("%-32s %s" % (p, "present" if p in found else "MISSING"))
    if extra:
        print("probes not in the list: %s" % ", ".join(extra))
    if missing or extra:
        return 1
    print("%d probes, provider libreclaim" % len(PROBES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
