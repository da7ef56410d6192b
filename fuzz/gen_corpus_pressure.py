#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seeds of fuzz/corpus-pressure/ (see fuzz/README.md).

Each seed is 3 header bytes (parser, option a, option b) and then the file
content, as LLVMFuzzerTestOneInput() in fuzz_pressure.c reads them.  The
contents are the kernel's real formats: the files of the machine the
target was written on (cgroup v1 with a v2 "unified" mount, kernel 6.18),
and v2 files as a v2 kernel writes them; libFuzzer mutates from there.

usage: fuzz/gen_corpus_pressure.py [OUTDIR]
       (default: fuzz/corpus-pressure next to this file)
"""
import base64
import os
import sys

PARSERS = ("PSI TRIGGER CG_U64 KEYED PROC_CGROUP MOUNTINFO CGROUP_DIR STATM "
           "BASE64").split()
P = {n: i for i, n in enumerate(PARSERS)}

BIG = 0x80  # an output size of 4096

PSI_MEMORY = (b"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
              b"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
PSI_CPU = (b"some avg10=0.54 avg60=0.37 avg300=13.41 total=3807059824\n"
           b"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
PSI_IO = (b"some avg10=0.04 avg60=0.60 avg300=0.31 total=70215732\n"
          b"full avg10=0.03 avg60=0.49 avg300=0.24 total=28884527\n")

PROC_CGROUP = (b"9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n"
               b"5:devices:/\n"
               b"4:memory:/process_api/7517bf9661cf9ceae3c87c7f7bebbe77\n"
               b"3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n")

MOUNTINFO = b"""\
22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334192k,nr_inodes=3083548,mode=755
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683584k
26 24 0:24 / /dev/pts rw,relatime - devpts devpts rw,mode=600,ptmxmode=000
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
28 27 0:25 / /mnt/sandboxing/model_tools_env/v1/python ro,nosuid,nodev,relatime - tmpfs model_tools_unavailable ro,size=4k,mode=755
29 26 0:26 / /dev/pts rw,relatime - devpts devpts rw,mode=600,ptmxmode=000
30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683584k
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""

MOUNTINFO_V2_HOST = b"""\
24 29 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
29 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
30 24 0:6 / /sys/kernel/security rw,nosuid,nodev,noexec,relatime shared:8 master:1 propagate_from:1 - securityfs securityfs rw
34 24 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
"""

MOUNTINFO_CONTAINER = (
    b"1234 1200 0:29 /docker/abc /sys/fs/cgroup/memory "
    b"ro,nosuid,nodev,noexec,relatime master:15 - cgroup cgroup "
    b"rw,cpu,memory\n"
    b"1235 1200 0:30 /a\\040b /mnt/my\\040cg\\134x rw - cgroup2  rw\n")

V1_MEMORY_STAT = b"""\
cache 9801728
rss 3960832
rss_huge 0
shmem 9580544
mapped_file 8110080
dirty 53248
writeback 0
workingset_refault_anon 0
workingset_refault_file 1461
swap 0
swapcached 0
pgpgin 39794
pgpgout 36434
pgfault 63625
pgmajfault 0
inactive_anon 0
active_anon 1531904
inactive_file 0
active_file 221184
unevictable 12009472
hierarchical_memory_limit 9223372036854771712
hierarchical_memsw_limit 9223372036854771712
total_cache 54484992
total_rss 7823360
total_rss_huge 0
total_shmem 9580544
total_mapped_file 11481088
total_dirty 618496
total_writeback 0
total_workingset_refault_anon 0
total_workingset_refault_file 808182
total_swap 0
total_swapcached 0
total_pgpgin 128992263
total_pgpgout 128977988
total_pgfault 134798356
total_pgmajfault 11852
total_inactive_anon 3641344
total_active_anon 1556480
total_inactive_file 22929408
total_active_file 21975040
total_unevictable 12009472
"""

V2_MEMORY_STAT = (b"anon 1069056\nfile 10547200\nkernel 1462272\n"
                  b"kernel_stack 32768\npagetables 118784\nshmem 0\n"
                  b"file_mapped 7659520\nfile_dirty 0\ninactive_anon 1060864\n"
                  b"active_anon 8192\ninactive_file 2912256\n"
                  b"active_file 7634944\nunevictable 0\n"
                  b"slab_reclaimable 1013216\npgfault 8764\n")

V2_MEMORY_EVENTS = b"low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n"

# keys[] in fuzz_pressure.c
KEY = {"anon": 0, "inactive_file": 2, "total_inactive_file": 3,
       "oom_kill": 8, "hierarchical_memory_limit": 14}

SYSTEMD = b"some 200000 2000000\0"

SEEDS = {}


def seed(name, parser, content, a=0, b=0):
    SEEDS[name] = bytes([P[parser], a, b]) + content


seed("psi-memory", "PSI", PSI_MEMORY)
seed("psi-cpu", "PSI", PSI_CPU)
seed("psi-io", "PSI", PSI_IO)
seed("psi-some-only", "PSI",
     b"some avg10=1.00 avg60=2.50 avg300=100.00 total=42\n")

seed("trigger-systemd", "TRIGGER", SYSTEMD)
seed("trigger-newline", "TRIGGER", b"full 150000 1000000\n")
# Read as the kernel's sscanf() reads it: text after the window, runs of
# whitespace, and a number beyond the kernel's u32 (refused).
seed("trigger-trailing-text", "TRIGGER", b"some 200000 2000000 # 10 %\n\0")
seed("trigger-whitespace", "TRIGGER", b"full\t150000  \xa01000000\r\n")
seed("trigger-u32-wrap", "TRIGGER", b"some 101 4294967397\0")

seed("cg-current", "CG_U64", b"123\n")
seed("cg-max", "CG_U64", b"max\n")
seed("cg-v1-limit", "CG_U64", b"9223372036854771712\n")
seed("cg-v1-usage", "CG_U64", b"62193664\n")

seed("keyed-v1-stat", "KEYED", V1_MEMORY_STAT, KEY["total_inactive_file"])
seed("keyed-v1-limit", "KEYED", V1_MEMORY_STAT,
     KEY["hierarchical_memory_limit"])
seed("keyed-v2-stat", "KEYED", V2_MEMORY_STAT, KEY["inactive_file"])
seed("keyed-v2-anon", "KEYED", V2_MEMORY_STAT, BIG | 4)   # key "anon"
seed("keyed-v2-events", "KEYED", V2_MEMORY_EVENTS, KEY["oom_kill"])

seed("cgroup-real", "PROC_CGROUP", PROC_CGROUP, BIG, BIG)
seed("cgroup-small", "PROC_CGROUP", PROC_CGROUP, 2, 44)
seed("cgroup-v2", "PROC_CGROUP",
     b"0::/user.slice/user-1000.slice/session-2.scope\n", BIG, BIG | 2)

seed("mountinfo-v1", "MOUNTINFO", MOUNTINFO, BIG, BIG | 1)
seed("mountinfo-v2", "MOUNTINFO", MOUNTINFO, BIG, BIG | 2)
seed("mountinfo-host", "MOUNTINFO", MOUNTINFO_V2_HOST, 15, 8 | 2)
seed("mountinfo-container", "MOUNTINFO", MOUNTINFO_CONTAINER, BIG, BIG | 1)
seed("mountinfo-escapes", "MOUNTINFO", MOUNTINFO_CONTAINER, BIG, BIG | 2)

seed("dir-root", "CGROUP_DIR",
     b"/sys/fs/cgroup/memory\0/\0"
     b"/process_api/7517bf9661cf9ceae3c87c7f7bebbe77", BIG)
seed("dir-deep-root", "CGROUP_DIR",
     b"/sys/fs/cgroup/memory\0/docker/abc\0/docker/abc/sub", BIG)
seed("dir-outside", "CGROUP_DIR", b"/m\0/docker/abc\0/../x", BIG)
seed("dir-slash", "CGROUP_DIR", b"/\0/\0/a/b", 4)

seed("statm", "STATM", b"765 415 387 5 0 123 0\n")

seed("b64-systemd", "BASE64", base64.b64encode(SYSTEMD), BIG)
seed("b64-unpadded", "BASE64", base64.b64encode(SYSTEMD).rstrip(b"="), 20)
seed("b64-newline", "BASE64", base64.b64encode(b"foobar") + b"\n", 6)
seed("b64-short", "BASE64", base64.b64encode(b"fooba"), 4)


def main():
    assert base64.b64encode(SYSTEMD) == b"c29tZSAyMDAwMDAgMjAwMDAwMAA="
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus-pressure")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), out))


if __name__ == "__main__":
    main()
