/* SPDX-License-Identifier: MIT */
/*
 * This example shows how a cache hears memory pressure from outside the
 * process with a pressure monitor (<reclaim/pressure.h>), and what its
 * memory looks like from the kernel's side: logical usage (the bytes
 * charged to the domain), resident memory (RSS) and the cgroup's working
 * set, side by side over time.
 *
 * The cache.  An object cache (<reclaim/objcache.h>) of 16 KiB objects,
 * malloc'd and filled, in a strict 32 MiB domain.  The workload, in the
 * main thread: every 5 ms, 64 get-or-insert requests, 80 % of them on a
 * fifth of a key space that would fill the budget twice; a miss allocates
 * the object and inserts it (the charge reclaims when the budget is full).
 *
 * The monitor, with the library's thread (rcl_pressure_start()):
 *
 *  - a cgroup source, if this process has a memory cgroup (it usually
 *    does: v2 with the memory controller, or v1's memory hierarchy), with
 *    RCL_PRESSURE_FOLLOW_CGROUP: under a cgroup limit, the budget keeps
 *    the cgroup's working set at 90 % of the limit;
 *  - a PSI source on /proc/pressure/memory, where PSI exists;
 *  - a manual source, always: the application's own events.  Halfway
 *    through the program says SEVERE twice (as a service would on a
 *    signal from its orchestrator, or GLib's or Android's levels through
 *    rcl_pressure_level_from_glib() and _from_android()), then NONE.
 *
 * Each SEVERE lowers the budget to 3/4 of the usage; the reclaim runs in
 * the notifying thread, before rcl_pressure_notify() returns (also when
 * the domain's background reclaimer runs: the monitor reclaims to the
 * budget it applies itself, so that it knows what it freed).  The objects
 * are destroyed in the reclaiming thread (the objcache flag
 * RCL_OBJCACHE_DESTROY_IN_RECLAIM), and the monitor's default trim hook
 * (malloc_trim(0) on glibc) runs one timer interval (100 ms here) after
 * the frees, from the monitor's thread: RSS follows the logical usage down.
 * (The trim waits an interval because, by default, each shard's next
 * insert destroys its evicted objects, after the eviction.)  After NONE
 * the budget grows back by grow_pct of the base per grow interval, once a
 * whole grow interval has passed without an action: no oscillation.

 * The program runs 2.5 s and prints a row every 100 ms: time, logical
 * usage, budget, RSS, the cgroup's working set ("-" without a cgroup
 * source), the monitor's level and what happened.  Its self-checks: each
 * SEVERE lowered the budget to at most 3/4 of the usage before it and
 * freed something; the budget grew back after NONE; every hit's payload
 * matches its key; after the teardown nothing is charged.
 *
 * Introduces usage of: rcl_pressure_new(), rcl_pressure_add_cgroup(),
 * rcl_pressure_add_psi(), rcl_pressure_add_manual(), rcl_pressure_start(),
 * rcl_pressure_notify(), rcl_pressure_memory(), rcl_pressure_stats(),
 * rcl_pressure_source_info(), rcl_pressure_source_mode_name(),
 * rcl_pressure_level_name(), rcl_pressure_stop(), rcl_pressure_free(),
 * RCL_PRESSURE_FOLLOW_CGROUP, RCL_OBJCACHE_DESTROY_IN_RECLAIM.
 *
 * usage: pressure [--no-cgroup] [--help]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <reclaim/reclaim.h>

#define MIB		(1ull << 20)
#define BUDGET		(32 * MIB)		/* bytes */
#define OBJ_SIZE	(16u << 10)		/* bytes, the weight of an object */
#define NKEYS		(2 * BUDGET / OBJ_SIZE)	/* twice what fits */
#define TICK_MS		5			/* a batch of requests */
#define BATCH		64			/* requests per tick */
#define ROW_MS		100			/* a row of the table */
#define GROW_PCT	10			/* of the base, per grow interval */
#define RUN_MS		2500
/* The application's events: (time, level). */
static const struct {
	unsigned ms;
	enum rcl_pressure_level level;
} events[] = {
	{ 1000, RCL_PRESSURE_SEVERE },
	{ 1300, RCL_PRESSURE_SEVERE },
	{ 1600, RCL_PRESSURE_NONE },
};

struct obj {
	struct rcl_objcache_node node;
	uint64_t key;
	unsigned char data[];
};

#define PAYLOAD (OBJ_SIZE - sizeof(struct obj))

static void obj_free(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	free(rcl_container_of(n, struct obj, node));
}

static const struct rcl_objcache_ops obj_ops = { .destructor = obj_free };

static uint64_t t0;
static unsigned failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("check failed: " __VA_ARGS__);                 \
			printf("\n");                                         \
			failures++;                                           \
		}                                                             \
	} while (0)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 - t0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* splitmix64 */
static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* One get-or-insert. */
static void request(struct rcl_objcache *cache, uint64_t key)
{
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n;
	struct obj *o;
	int err;

	n = rcl_objcache_get(cache, &key, sizeof(key), &miss);
	if (n) {
		o = rcl_container_of(n, struct obj, node);
		CHECK(o->key == key && o->data[0] == (unsigned char)key &&
			      o->data[PAYLOAD - 1] == (unsigned char)key,
		      "the payload of key %" PRIu64 " is not its own", key);
		rcl_objcache_put(cache, n);
		return;
	}
	o = malloc(OBJ_SIZE);
	if (!o)
		return;
	memset(&o->node, 0, sizeof(o->node));
	o->key = key;
	memset(o->data, (unsigned char)key, PAYLOAD);
	err = rcl_objcache_insert(cache, &o->node, &o->key, sizeof(o->key),
				  OBJ_SIZE, RCL_CTX_CAPABLE, &miss, &n);
	if (err) {
		free(o);	/* -ENOMEM: no room made (strict); not here */
		if (n)
			rcl_objcache_put(cache, n);
		return;
	}
	rcl_objcache_put(cache, &o->node);
}

/* printf() a table line without its trailing blanks, and a newline. */
__attribute__((format(printf, 1, 2))) static void line(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = strlen(buf);
	while (n && buf[n - 1] == ' ')
		buf[--n] = '\0';
	printf("%s\n", buf);
}

static void row(struct rcl_pressure *p, bool cgroup, const char *what)
{
	struct rcl_memory_sample m;
	struct rcl_pressure_stats st;
	char ws[16];

	rcl_pressure_memory(p, &m);
	rcl_pressure_stats(p, &st);
	if (cgroup)
		snprintf(ws, sizeof(ws), "%8.1f", (double)m.cgroup_working_set_bytes / MIB);
	else
		snprintf(ws, sizeof(ws), "%8s", "-");
	line("%5.1f %9.1f %8.1f %8.1f %s  %-9s %s", (double)m.time_ns / 1e9 -
	     (double)t0 / 1e3, (double)m.charged_bytes / MIB,
	     (double)m.budget_bytes / MIB, (double)m.rss_bytes / MIB, ws,
	     rcl_pressure_level_name(st.level), what);
}

static void print_source(struct rcl_pressure *p, int idx, const char *what)
{
	struct rcl_pressure_source_info info;

	if (rcl_pressure_source_info(p, idx, &info))
		return;
	printf("  %-7s %s", what, rcl_pressure_source_mode_name(info.mode));
	if (info.fallback_errno)
		printf(" (trigger refused: %s)", strerror(info.fallback_errno));
	if (info.path[0])
		printf(", %s", info.path);
	printf("\n");
}

int main(int argc, char **argv)
{
	struct rcl_domain_config dcfg = { .budget = BUDGET };
	struct rcl_objcache_config ccfg = {
		.ops = &obj_ops,
		.flags = RCL_OBJCACHE_DESTROY_IN_RECLAIM,
	};
	struct rcl_pressure_config pcfg = { 0 };
	struct rcl_pressure_stats st;
	struct rcl_objcache *cache;
	struct rcl_pressure *p;
	struct rcl_domain *d;
	uint64_t seed = 1, next_row = 0, before_none = 0, last_event = 0;
	unsigned next_event = 0, i;
	int manual, cg, psi, err;
	struct timespec ts;

	bool with_cgroup = true;

	if (argc > 1 && !strcmp(argv[1], "--no-cgroup")) {
		with_cgroup = false;
		argc--;
		argv++;
	}
	if (argc > 1) {
		printf("usage: pressure [--no-cgroup]\n"
		       "  a cache under a pressure monitor for %.1f s: a table of\n"
		       "  logical usage, budget, RSS and the cgroup's working set\n"
		       "  --no-cgroup  no cgroup source (the test suite's run: it\n"
		       "               registers nothing in a cgroup it did not create)\n",
		       RUN_MS / 1e3);
		return strcmp(argv[1], "--help") ? 2 : 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;

	err = rcl_domain_new(&dcfg, &d);
	if (!err)
		err = rcl_objcache_new(d, &ccfg, &cache);
	if (err) {
		fprintf(stderr, "pressure: creating the cache: %s\n", strerror(-err));
		return 1;
	}
	pcfg.domain = d;
	pcfg.flags = RCL_PRESSURE_FOLLOW_CGROUP;
	pcfg.interval_ns = ROW_MS * 1000000ull;	/* cgroup and PSI reads */
	pcfg.window_ns = 200 * 1000000ull;	/* one action per 200 ms a source */
	pcfg.grow_pct = GROW_PCT;			/* back to base in 10 steps ... */
	pcfg.grow_interval_ns = pcfg.interval_ns;	/* ... of 100 ms */
	/* A trim may follow every action: with the default (1 s) the second
	   SEVERE's would be skipped and RSS would stay where it was. */
	pcfg.trim_interval_ns = pcfg.window_ns;
	err = rcl_pressure_new(&pcfg, &p);
	if (err) {
		fprintf(stderr, "pressure: rcl_pressure_new: %s\n", strerror(-err));
		return 1;
	}
	printf("pressure: a cache of %u KiB objects in a %llu MiB domain, and its monitor:\n",
	       OBJ_SIZE >> 10, (unsigned long long)(BUDGET / MIB));
	cg = with_cgroup ? rcl_pressure_add_cgroup(p, NULL, 0) : -ENOENT;
	if (cg >= 0)
		print_source(p, cg, "cgroup");
	else
		printf("  cgroup  none (%s)\n", strerror(-cg));
	psi = rcl_pressure_add_psi(p, NULL);
	if (psi >= 0)
		print_source(p, psi, "psi");
	else
		printf("  psi     none (%s)\n", strerror(-psi));
	manual = rcl_pressure_add_manual(p);
	print_source(p, manual, "manual");
	err = rcl_pressure_start(p);
	if (manual < 0 || err) {
		fprintf(stderr, "pressure: the manual source or the thread: %s\n",
			strerror(manual < 0 ? -manual : -err));
		return 1;
	}

	printf("\n");
	line("%5s %9s %8s %8s %8s  %-9s", "t(s)", "usage", "budget", "rss",
	     "cg_ws", "level");
	line("%5s %9s %8s %8s %8s", "", "MiB", "MiB", "MiB", "MiB");
	while (now_ms() < RUN_MS) {
		for (i = 0; i < BATCH; i++) {
			uint64_t x = rng(&seed);

			request(cache, x % 5 < 4 ? (x >> 8) % (NKEYS / 5) :
						   (x >> 8) % NKEYS);
		}
		/* Each event at its time, and at least 300 ms after the one
		   before (a slow run, under valgrind, keeps them apart). */
		if (next_event < sizeof(events) / sizeof(events[0]) &&
		    now_ms() >= events[next_event].ms &&
		    (!next_event || now_ms() >= last_event + 300)) {
			enum rcl_pressure_level l = events[next_event].level;
			uint64_t usage = rcl_domain_usage(d);
			uint64_t t_notify = now_ms(), budget, grown;
			char what[64];

			err = rcl_pressure_notify(p, manual, l);
			CHECK(!err, "rcl_pressure_notify: %d", err);
			budget = rcl_domain_budget(d);
			/* A run stalled here (valgrind on a loaded machine) may
			   see the monitor's grow steps that followed the action:
			   grow_pct of the base per whole grow interval. */
			grown = (now_ms() - t_notify) / ROW_MS *
				((uint64_t)BUDGET * GROW_PCT / 100);
			snprintf(what, sizeof(what), "<- notify %s",
				 rcl_pressure_level_name(l));
			row(p, cg >= 0, what);
			if (l == RCL_PRESSURE_SEVERE) {
				/* Acted at once (the window has passed): 3/4. */
				/* The monitor's rounding: usage * 6 / 8, and a
				   grow step of base * grow_pct / 100. */
				CHECK(budget <= usage * 6 / 8 + 1 + grown,
				      "SEVERE left a budget of %" PRIu64 " over 3/4 of %" PRIu64,
				      budget, usage);
				CHECK(rcl_domain_usage(d) < usage,
				      "SEVERE freed nothing");
			} else {
				before_none = rcl_domain_budget(d);
			}
			next_event++;
			last_event = now_ms();
		}
		if (now_ms() >= next_row) {
			row(p, cg >= 0, "");
			next_row += ROW_MS;
		}
		sleep_ms(TICK_MS);
	}
	CHECK(before_none && rcl_domain_budget(d) > before_none,
	      "the budget did not grow back after NONE (%" PRIu64 " -> %" PRIu64 ")",
	      before_none, rcl_domain_budget(d));

	rcl_pressure_stats(p, &st);
	printf("\nmonitor: %" PRIu64 " actions (%" PRIu64 " freed nothing), %.1f MiB freed, %"
	       PRIu64 " trims, %" PRIu64 " wakeups, %" PRIu64 " read errors\n",
	       st.actions, st.empty_actions, (double)st.freed_bytes / MIB,
	       st.trims, st.dispatches, st.read_errors);
	CHECK(st.actions >= 2, "the two SEVEREs made %" PRIu64 " actions", st.actions);
	for (i = 0; i < 3; i++) {
		static const char *const names[] = { "cgroup", "psi", "manual" };
		int idx = i == 0 ? cg : i == 1 ? psi : manual;
		struct rcl_pressure_source_info info;

		if (idx >= 0 && !rcl_pressure_source_info(p, idx, &info))
			printf("  %-7s %" PRIu64 " events, %" PRIu64 " actions, last level %s\n",
			       names[i], info.events, info.actions,
			       rcl_pressure_level_name(info.level));
	}

	/* Teardown: the monitor first (it holds the domain), then the cache. */
	err = rcl_pressure_stop(p);
	if (!err)
		err = rcl_pressure_free(p);
	if (!err)
		err = rcl_objcache_destroy(cache);
	CHECK(!err, "teardown: %d", err);
	CHECK(rcl_domain_usage(d) == 0, "%" PRIu64 " bytes still charged",
	      rcl_domain_usage(d));
	err = rcl_domain_free(d);
	CHECK(!err, "rcl_domain_free: %d", err);
	printf("%s\n", failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
