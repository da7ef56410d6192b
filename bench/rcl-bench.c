/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench - benchmarks of libreclaim.
 *
 * usage: rcl-bench <command> [options]
 *
 * main() only dispatches to a sub-command of the table `commands` below.
 * Each sub-command is a file of its own (bench/hotpath.c, ...) that parses
 * its own options with the harness (bench/harness.h).  Exit status: 0
 * success, 1 the benchmark failed (a library call returned an error, a
 * state check failed, out of memory), 2 bad usage.
 *
 * hotpath: the cost of the LRU operations a cache performs on every request,
 * for libreclaim and for the baseline users write by hand ("mutex-lru": a
 * doubly linked move-to-front list behind one pthread mutex).
 *
 * windup: a shrinker backlog deferred by calls that cannot scan, then worked
 * off by capable calls, under each of the three damping policies; and whether
 * gentle calls ever scan a small cache.  Deterministic (no timing).
 *
 * shrink-scale: throughput of rcl_shrinker_registry_shrink() on one registry
 * of 64 shrinkers, called by T threads at once.
 *
 * stream: two threads stream through a data set 4x a memory domain's budget
 * while re-reading a hot set, charging every miss; direct reclaim only,
 * with the background reclaimer, and with the pre-2014 (nonproportional)
 * scan.  The user-space analogue of vm-scalability.
 *
 * writeback: a write-back cache of the blocks of a real file, simoop-like:
 * writers dirty blocks, a reader reads, an allocator charges new memory;
 * reclaim writes dirty blocks itself (the pre-2017 kernel), or the
 * library's flusher thread writes them (all, or proportional requests).
 *
 * objcache: get-or-insert through the library's object cache against a hash
 * map and LRU list behind one mutex, with the same byte budget (Zipf keys).
 * pressure: a cache and a memory hog in a child cgroup, the hog ramping
 * up; a fixed budget, drop-everything on pressure events, and the
 * library's pressure monitor: OOM kills, relief, hit ratio, CPU.
 * sqlite (built with SQLite and libarchive): K SQLite databases, one
 * connection per thread, lookups keyed by real traces; SQLite's page cache
 * split per connection, under a soft heap limit, and the libreclaim
 * page-cache plug-in under one domain, at the same memory.
 * tenants (built with libarchive): four caches keyed by real traces on one
 * budget: flat domains of a quarter each, one flat domain, and a tree of
 * domains with one child per tenant, one of them protected (protect_low).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "harness.h"

struct command {
	const char *name;
	/* argv[0] is the command's name. */
	int (*run)(int argc, char **argv);
	/* Its part of the usage text: the synopsis, then what it does. */
	const char *usage;
};

static const struct command commands[] = {
	{ "hotpath", cmd_hotpath,
		"  hotpath [--threads N] [--json] [--short]\n"
		"      Cost of the per-request LRU operations (hit-active,\n"
		"      hit-inactive, add-del, churn) in libreclaim and in a\n"
		"      mutex-protected move-to-front list (mutex-lru), for 1..N\n"
		"      threads sharing one cache.\n"
		"      --threads N  measure 1..N threads (default 2, at most 256)\n"
		"      --json       only JSON on standard output, one object a line\n"
		"      --short      a tiny run (for CI: checks that it works)\n" },
	{ "windup", cmd_windup,
		"  windup [--json]\n"
		"      A shrinker backlog deferred by 1000 calls that cannot scan,\n"
		"      then worked off by capable calls, under each damping policy\n"
		"      (kernel-modern, kernel-2014, rcl-default); and how much a\n"
		"      small cache is scanned at priority 12.  Deterministic.\n"
		"      --json       only JSON on standard output, one object a line\n" },
	{ "shrink-scale", cmd_shrink_scale,
		"  shrink-scale [--threads N] [--json] [--short] [--calls C]\n"
		"      Throughput of rcl_shrinker_registry_shrink() on one registry\n"
		"      of 64 shrinkers, for 1..N threads calling it at once.\n"
		"      --threads N  measure 1..N threads (default 2, at most 256)\n"
		"      --calls C    untimed: N threads make exactly C calls each, once\n"
		"                   (fixed work, for instruction counts)\n"
		"      --json       only JSON on standard output, one object a line\n"
		"      --short      a tiny run (for CI: checks that it works)\n" },
	{ "stream", cmd_stream,
		"  stream [--json] [--short] [--watermark-scale-factor N]\n"
		"      Two threads stream through a data set 4x a memory domain's\n"
		"      budget while re-reading a hot set of 20 % of it, charging\n"
		"      every miss; with direct reclaim only (direct), with the\n"
		"      background reclaimer (background), and with the pre-2014\n"
		"      scan (nonproportional).\n"
		"      --json       only JSON on standard output, one object a line\n"
		"      --short      a tiny run (for CI: checks that it works)\n"
		"      --watermark-scale-factor N  the domain's watermark gap in\n"
		"                   1/10000 of the budget (default: the library's, 100)\n" },
	{ "writeback", cmd_writeback,
		"  writeback [--json] [--short] [--watermark-scale-factor N]\n"
		"            [--dirty-background-ratio N] [--dirty-ratio N]\n"
		"            [--reclaim-sync batch|object] [--rounds N]\n"
		"      A write-back cache of the blocks of a temporary file: writers\n"
		"      dirty blocks, a reader reads, an allocator charges new memory;\n"
		"      reclaim writes dirty blocks itself (reclaim-writes), or the\n"
		"      library's flusher thread writes them (flusher-all,\n"
		"      flusher-proportional).  Write and allocation latencies.\n"
		"      --json       only JSON on standard output, one object a line\n"
		"      --short      a tiny run (for CI: checks that it works)\n"
		"      --watermark-scale-factor N  as for stream\n"
		"      --dirty-background-ratio N, --dirty-ratio N  the domain's\n"
		"                   dirty thresholds in % of the budget (default 50\n"
		"                   and 70, so that dirty blocks reach the LRU tail;\n"
		"                   the library's own defaults are 10 and 20)\n"
		"      --reclaim-sync batch|object  reclaim-writes: one fdatasync()\n"
		"                   per scan batch that wrote (default, as the\n"
		"                   flusher's per batch) or per object (as the\n"
		"                   kernel's reclaim wrote single pages)\n"
		"      --rounds N   rounds of the three modes, interleaved and\n"
		"                   pooled (1-20; default 3, --short 1)\n" },
	{ "objcache", cmd_objcache,
		"  objcache [--threads N] [--keys N] [--alpha A] [--budget-pct P]\n"
		"           [--run-ms N] [--json] [--short]\n"
		"      Get-or-insert through libreclaim's object cache (a strict\n"
		"      domain with its background reclaimer) and through a hash map\n"
		"      and LRU list behind one mutex (mutex-lru), with the same byte\n"
		"      budget: Zipf keys, values of 64 to 1024 bytes; ops/s and hit\n"
		"      ratio, for 1, 2, 4, ... threads sharing one cache.\n"
		"      --threads N  rows for 1, 2, 4, ... up to N threads (default 4)\n"
		"      --keys N     the key set (default 1000000; --short 20000)\n"
		"      --alpha A    the Zipf exponent (default 0.99)\n"
		"      --budget-pct P  the budget in % of all keys' bytes (default 10)\n"
		"      --run-ms N   the timed window of a run (default 1000; --short 5)\n"
		"      --json       only JSON on standard output, one object a line\n"
		"      --short      a tiny run (for CI: checks that it works)\n" },
	{ "pressure", cmd_pressure,
		"  pressure [--mode all|fixed|trim-all|library] [--limit-mib N]\n"
		"           [--step-ms N] [--final-ms N] [--miss-us N] [--alpha A]\n"
		"           [--interval-ms N] [--cgroup-pct P] [--grow-pct P]\n"
		"           [--trace] [--json] [--short]\n"
		"      A cache (an object cache filling 75 % of L) and a memory hog\n"
		"      ramping up to half of L in 8 steps, in a child cgroup of\n"
		"      limit L with swap off for it; then a final phase in which\n"
		"      the cache is empty and the hog stays just over the pressure\n"
		"      line.  Modes: a fixed budget (fixed), drop everything on\n"
		"      every pressure event (trim-all), the pressure monitor\n"
		"      following the cgroup (library).  OOM kills, time to relief,\n"
		"      hit ratio, reclaim CPU time, peak working set.  Needs root\n"
		"      (a child cgroup); exits 77 where it cannot create one.\n"
		"      --mode M     one mode only (default all)\n"
		"      --limit-mib N  L in MiB (default 256; --short 128)\n"
		"      --step-ms N  the time between the hog's steps (default 1000;\n"
		"                   --short 500)\n"
		"      --final-ms N the final phase (default 5000; --short 2000)\n"
		"      --miss-us N  the backend fetch of a miss, spun (default 20)\n"
		"      --alpha A    the Zipf exponent of the keys (default 0.99)\n"
		"      --interval-ms N, --cgroup-pct P, --grow-pct P  library: the\n"
		"                   monitor's interval_ns, cgroup_pct and grow_pct\n"
		"                   (default 100 ms, 75 %, 1 %)\n"
		"      --trace      a line every 100 ms on standard error\n"
		"      --json       only JSON on standard output, one object a line\n"
		"      --short      a smaller, faster run (for CI: about 20 s)\n" },
#ifdef RCL_BENCH_HAVE_TRACES
	{ "tenants", cmd_tenants,
		"  tenants [--traces DIR] [--threads] [--knee-eps E] [--json]\n"
		"          [--short]\n"
		"      Four caches of 4 KiB objects keyed by four real traces\n"
		"      (OLTP, orm-busy, vaultservice, multi2) on one budget of\n"
		"      25 % of their unique keys: a flat domain of a quarter each\n"
		"      (static), one flat domain (shared), a parent domain with a\n"
		"      child per tenant, orm-busy's protected by protect_low = its\n"
		"      working set (tree).  Round-robin in one thread: hit ratios\n"
		"      and usage per tenant, deterministic.  Exits 77 without the\n"
		"      traces.\n"
		"      --traces DIR the traces (default: RCL_TRACES_DIR, or\n"
		"                   ../shared/traces beside the source tree)\n"
		"      --threads    then a thread per tenant: requests/s\n"
		"      --knee-eps E the working set is the smallest size from\n"
		"                   which on doubling the cache lowers the LRU\n"
		"                   miss ratio by less than E (default 0.01)\n"
		"      --json       only JSON on standard output, one object a line\n"
		"      --short      a prefix of each trace (for CI: checks that it\n"
		"                   works)\n" },
#endif
#ifdef RCL_BENCH_HAVE_SQLITE
	{ "sqlite", cmd_sqlite,
		"  sqlite [--databases K] [--budget M] [--queries N] [--dir DIR]\n"
		"         [--page-size N] [--reclaimer] [--page-log DIR]\n"
		"         [--json] [--short]\n"
		"      K SQLite databases (4x M together), one connection per\n"
		"      thread, point and short range lookups keyed by real traces\n"
		"      (../shared/traces; exits 77 without them): SQLite's cache\n"
		"      split M / K (split), under sqlite3_soft_heap_limit64()\n"
		"      (soft-limit), and the libreclaim plug-in in one domain of\n"
		"      budget M (libreclaim); each in a child process.\n"
		"      --databases K  1 to 4 (default 4; 1 uses the first trace)\n"
		"      --budget M   the page-cache memory, e.g. 16M (the default)\n"
		"      --queries N  timed queries per connection (default 100000,\n"
		"                   after N / 10 warm-up queries)\n"
		"      --dir DIR    where the databases are built (default $TMPDIR)\n"
		"      --page-size N  the databases' page size (default 4096)\n"
		"      --reclaimer  libreclaim: start the domain's background\n"
		"                   reclaimer (default: direct reclaim only)\n"		"      --page-log DIR  also record every page each connection\n"
		"                   fetches (SQLite's cache, one more child) in\n"
		"                   DIR, for tools/sqlite-bound.py\n"
		"      --json       only JSON on standard output, one object a line\n"
		"      --short      a tiny run (for CI: checks that it works)\n" },
#endif
};

#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

void bench_usage(FILE *f)
{
	size_t i;

	fputs("usage: rcl-bench <command> [options]\n"
	      "       rcl-bench --help\n"
	      "\n"
	      "commands:\n",
	      f);
	for (i = 0; i < NR_COMMANDS; i++)
		fputs(commands[i].usage, f);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		bench_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		bench_usage(stdout);
		return 0;
	}
	for (i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "rcl-bench: unknown command '%s'\n", argv[1]);
	bench_usage(stderr);
	return 2;
}
