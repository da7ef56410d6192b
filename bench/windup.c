/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench windup: a shrinker backlog deferred by calls that cannot scan,
 * then worked off by capable calls, under each of the three damping
 * policies; and whether gentle calls ever scan a small cache.
 * Deterministic (no timing): the output is the same on every run.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <reclaim/reclaim.h>

#include "commands.h"
#include "harness.h"

/* ------------------------------------------------------------------------- */
/* windup: a backlog deferred while reclaim could not work, then worked off   */
/* ------------------------------------------------------------------------- */

/*
 * The scenario of the 2014 thread that gave the kernel its windup clamp.  A
 * big cache that nobody refills receives K calls from a reclaimer that
 * cannot do the work (its context lacks RCL_CTX_MAY_BLOCK, so the scan
 * callback answers RCL_SHRINK_STOP and each call's pressure is deferred),
 * then capable calls until the backlog is below one batch.  The question is
 * how much of the cache one capable call throws away, and how many calls
 * the backlog takes to go.  A separate small cache, re-filled as fast as it
 * is scanned, shows the other side of the damping: whether gentle pressure
 * on a small cache ever scans it at all.
 *
 * Hand check of the first capable call of each policy, from the formulas of
 * enum rcl_shrink_policy in <reclaim/shrinker.h> (F = 100000, seeks 2,
 * batch 128, priority 6; the program's output must match):
 *
 * kernel-modern: delta = ((100000 >> 6) * 4) / 2 = (1562 * 4) / 2 = 3124.
 *   Each deferring call adds delta to the backlog, capped at 2F = 200000
 *   (reached at the 65th of the 1000 calls).  First capable call: total =
 *   min((200000 >> 6) + 3124, 2F) = 3125 + 3124 = 6249, scanned in whole
 *   batches (the 105 left are below a batch and below freeable): 48 x 128 =
 *   6144 freed = 6.144% of F; backlog' = min(200000 + 3124 - 6144, 2F) =
 *   196980.  Every later call frees about (2f >> 6) + f / 32 = f / 16 of
 *   the f objects left, with the backlog at its 2f cap, until f / 16 is
 *   below a batch (f below about 2048): from then on nothing is scanned and
 *   the backlog (about 2f) never gets below 128: not drained, -1.
 * kernel-2014: the same delta, 3124 < F / 4, so every target is clamped to
 *   F / 2: the backlog winds up to 50000 (after 17 calls) and stays there.
 *   First capable call: total = min(50000 + 3124, F / 2) = 50000, 390 whole
 *   batches = 49920 freed = 49.92% of F; backlog' = 50000 - 49920 = 80 <
 *   128: drained in 1 call, leaving 50080 objects.
 * rcl-default: delta = ((F << 16 >> 6) * 4 / 2) >> 16 = 3125 exactly; the
 *   backlog winds up to its cap F / 2 = 50000 (after 16 calls).  First
 *   capable call: drain = min(50000, max(50000 >> 6, F / 8 = 12500)) =
 *   12500; total = 12500 + 3125 = 15625 (not above F / 2), 122 batches =
 *   15616 freed = 15.616% of F; backlog' = 50000 + 3125 - 15616 = 37509.
 *   The next calls (f = 84384, 71200, 60192, 50848, 42912: drain f / 8,
 *   then the last 4369; delta f / 32) free 13184, 11008, 9344, 7936 and
 *   5632, leaving backlogs of 26962, 18179, 10716, 4369 and 78 < 128:
 *   drained in 6 calls, leaving 37280 objects.
 *
 * Small cache (1000 objects, re-created, priority 12, 1000 calls): the
 * kernel's delta is ((1000 >> 12) * 4) / 2 = 0, so both kernel policies
 * scan nothing.  rcl-default keeps ((1000 << 16) >> 12) * 4 / 2 = 32000
 * sixty-five-thousandths of an object a call and scans a cache below 8
 * batches in batches of 1000 / 8 = 125: one batch every 125 * 65536 /
 * 32000 = 256 calls, 3 batches in 1000 calls = 375 objects.
 */
#define WU_CACHE 100000ul	/* F: the big cache, never refilled */
#define WU_STOP_CALLS 1000u	/* K: calls that cannot scan */
#define WU_MAX_CAPABLE 10000u	/* capable calls before giving up */
#define WU_PRIORITY 6
#define WU_SEEKS 2
#define WU_BATCH 128l
/* Drained: a backlog below one batch. */
#define WU_DRAINED ((unsigned long)WU_BATCH)
#define WU_SMALL 1000ul		/* the small cache, re-created */
#define WU_SMALL_CALLS 1000u
#define WU_SMALL_PRIORITY 12
/* The capability mask of the calls that cannot do the work: none. */
#define WU_CTX_INCAPABLE 0ull

static const enum rcl_shrink_policy wu_policies[] = {
	RCL_SHRINK_POLICY_KERNEL_MODERN,
	RCL_SHRINK_POLICY_KERNEL_2014,
	RCL_SHRINK_POLICY_DEFAULT,
};
#define WU_NR_POLICIES (sizeof(wu_policies) / sizeof(wu_policies[0]))

/* The model cache.  The callbacks keep their own tally, to check the library's. */
struct wu_cache {
	unsigned long nr;	/* objects in the cache */
	bool recreate;		/* freed objects come straight back */
	unsigned long freed;	/* scan's answers, summed */
	unsigned long scanned;
	unsigned long stops;
};

struct wu_result {
	const char *policy;
	unsigned long backlog_wound;	/* after the K deferring calls */
	double first_call_freed_pct;
	double max_call_freed_pct;
	long calls_to_drain;		/* -1: not drained */
	unsigned long cache_left;
	unsigned long small_scanned;
};

static unsigned long wu_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	const struct wu_cache *c = sc->priv;

	(void)s;
	return c->nr ? c->nr : RCL_SHRINK_EMPTY;
}

static unsigned long wu_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	struct wu_cache *c = sc->priv;
	unsigned long n;

	(void)s;
	if (!(sc->context & RCL_CTX_MAY_BLOCK)) {
		c->stops++;
		return RCL_SHRINK_STOP;	/* deferred, not lost */
	}
	n = sc->nr_to_scan < c->nr ? sc->nr_to_scan : c->nr;
	if (!c->recreate)
		c->nr -= n;
	sc->nr_scanned = n;
	c->freed += n;
	c->scanned += n;
	return n;
}

static const struct rcl_shrinker_ops wu_ops = {
	.count_objects = wu_count,
	.scan_objects = wu_scan,
};

/* A registry with @policy holding one registered shrinker over @c. */
static int wu_setup(enum rcl_shrink_policy policy, struct wu_cache *c,
		    const char *name, struct rcl_shrinker_registry **reg,
		    struct rcl_shrinker **s)
{
	struct rcl_shrinker_registry_config rcfg = { .policy = policy };
	struct rcl_shrinker_config cfg = {
		.ops = &wu_ops,
		.priv = c,
		.name = name,
		.seeks = WU_SEEKS,
		.batch = WU_BATCH,
	};
	int ret;

	ret = rcl_shrinker_registry_new(&rcfg, reg);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_registry_new: %s\n",
			strerror(-ret));
		return -1;
	}
	ret = rcl_shrinker_new(*reg, &cfg, s);
	if (!ret) {
		ret = rcl_shrinker_register(*s);
		if (ret)
			rcl_shrinker_free(*s);
	}
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_new/register: %s\n",
			strerror(-ret));
		rcl_shrinker_registry_free(*reg);
		return -1;
	}
	return 0;
}

static int wu_teardown(struct rcl_shrinker_registry *reg,
		       struct rcl_shrinker *s)
{
	int ret = rcl_shrinker_free(s);

	if (!ret)
		ret = rcl_shrinker_registry_free(reg);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_free/registry_free: %s\n",
			strerror(-ret));
		return -1;
	}
	return 0;
}

/* One registry-wide call; checks that it visited the one shrinker. */
static int wu_call(struct rcl_shrinker_registry *reg, int priority,
		   uint64_t context, struct rcl_shrink_result *res)
{
	int ret;

	memset(res, 0, sizeof(*res));
	ret = rcl_shrinker_registry_shrink(reg, 0, priority, context, res);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_registry_shrink: %s\n",
			strerror(-ret));
		return -1;
	}
	if (res->nr_shrinkers != 1) {
		fprintf(stderr, "rcl-bench: windup: a call visited %lu shrinkers, expected 1\n",
			res->nr_shrinkers);
		return -1;
	}
	return 0;
}

/* The library's figures against the callbacks' own tally. */
static int wu_check(const char *policy, const char *what,
		    const struct wu_cache *c, unsigned long lib_freed,
		    unsigned long lib_scanned, unsigned long lib_stops)
{
	if (c->freed == lib_freed && c->scanned == lib_scanned &&
	    c->stops == lib_stops)
		return 0;
	fprintf(stderr, "rcl-bench: windup %s, %s: the library reports %lu freed, %lu scanned, %lu stops; the callbacks saw %lu, %lu, %lu\n",
		policy, what, lib_freed, lib_scanned, lib_stops, c->freed,
		c->scanned, c->stops);
	return -1;
}

/* The scenario under one policy.  Returns 0 or -1. */
static int wu_run(enum rcl_shrink_policy policy, struct wu_result *out)
{
	struct wu_cache big = { .nr = WU_CACHE };
	struct wu_cache small = { .nr = WU_SMALL, .recreate = true };
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker *s;
	struct rcl_shrink_result res;
	unsigned long freed = 0, scanned = 0, stops = 0, bl = 0, f;
	unsigned i;
	int ret;

	out->policy = rcl_shrink_policy_name(policy);
	out->first_call_freed_pct = 0.0;
	out->max_call_freed_pct = 0.0;
	out->calls_to_drain = -1;

	/* The big cache: K calls that defer, then capable calls. */
	if (wu_setup(policy, &big, "windup-big", &reg, &s))
		return -1;
	for (i = 0; i < WU_STOP_CALLS; i++) {
		if (wu_call(reg, WU_PRIORITY, WU_CTX_INCAPABLE, &res))
			goto fail;
		if (res.freed || res.scanned) {
			fprintf(stderr, "rcl-bench: windup %s: a call that cannot scan freed %lu\n",
				out->policy, res.freed);
			goto fail;
		}
		stops += res.nr_stopped;
	}
	ret = rcl_shrinker_backlog(s, 0, &out->backlog_wound);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_backlog: %s\n",
			strerror(-ret));
		goto fail;
	}
	for (i = 0; i < WU_MAX_CAPABLE; i++) {
		double pct;

		if (wu_call(reg, WU_PRIORITY, RCL_CTX_CAPABLE, &res))
			goto fail;
		freed += res.freed;
		scanned += res.scanned;
		stops += res.nr_stopped;
		pct = 100.0 * (double)res.freed / (double)WU_CACHE;
		if (i == 0)
			out->first_call_freed_pct = pct;
		if (pct > out->max_call_freed_pct)
			out->max_call_freed_pct = pct;
		ret = rcl_shrinker_backlog(s, 0, &bl);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_shrinker_backlog: %s\n",
				strerror(-ret));
			goto fail;
		}
		if (bl < WU_DRAINED) {
			out->calls_to_drain = (long)i + 1;
			break;
		}
	}
	out->cache_left = big.nr;
	if (wu_check(out->policy, "big cache", &big, freed, scanned, stops))
		goto fail;
	if (big.nr != WU_CACHE - freed) {
		fprintf(stderr, "rcl-bench: windup %s: %lu objects left after %lu freed of %lu\n",
			out->policy, big.nr, freed, WU_CACHE);
		goto fail;
	}
	if (wu_teardown(reg, s))
		return -1;

	/* The small cache: gentle capable calls, objects re-created. */
	if (wu_setup(policy, &small, "windup-small", &reg, &s))
		return -1;
	freed = scanned = stops = 0;
	for (i = 0; i < WU_SMALL_CALLS; i++) {
		if (wu_call(reg, WU_SMALL_PRIORITY, RCL_CTX_CAPABLE, &res))
			goto fail;
		freed += res.freed;
		scanned += res.scanned;
		stops += res.nr_stopped;
	}
	out->small_scanned = scanned;
	if (wu_check(out->policy, "small cache", &small, freed, scanned,
		     stops))
		goto fail;
	f = small.nr;
	if (f != WU_SMALL) {
		fprintf(stderr, "rcl-bench: windup %s: the small cache holds %lu objects\n",
			out->policy, f);
		goto fail;
	}
	return wu_teardown(reg, s);

fail:
	wu_teardown(reg, s);
	return -1;
}

int cmd_windup(int argc, char **argv)
{
	struct wu_result res[WU_NR_POLICIES];
	bool json = false;
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_END,
	};
	size_t p;
	int ret;

	ret = bench_parse_opts(argc, argv, opts);
	if (ret != BENCH_CONTINUE)
		return ret;

	for (p = 0; p < WU_NR_POLICIES; p++)
		if (wu_run(wu_policies[p], &res[p]))
			return 1;

	if (json) {
		for (p = 0; p < WU_NR_POLICIES; p++) {
			bench_json_begin("windup");
			bench_json_str("policy", res[p].policy);
			bench_json_dbl("max_call_freed_pct", 3,
				       res[p].max_call_freed_pct);
			bench_json_int("capable_calls_to_drain",
				       res[p].calls_to_drain);
			bench_json_uint("small_cache_scanned",
					res[p].small_scanned);
			bench_json_end();
		}
		return 0;
	}

	printf("rcl-bench windup: libreclaim %s\n"
	       "big cache: %lu objects (seeks %d, batch %ld, not refilled); %u calls at\n"
	       "priority %d that cannot scan, then capable calls at priority %d until the\n"
	       "backlog is below %lu (at most %u calls).  Small cache: %lu objects\n"
	       "(re-created), %u capable calls at priority %d.\n\n",
	       rcl_version(), WU_CACHE, WU_SEEKS, WU_BATCH, WU_STOP_CALLS,
	       WU_PRIORITY, WU_PRIORITY, WU_DRAINED, WU_MAX_CAPABLE, WU_SMALL,
	       WU_SMALL_CALLS, WU_SMALL_PRIORITY);
	printf("%-14s %9s %11s %10s %11s %11s %12s\n", "policy", "backlog",
	       "first call", "max call", "calls to", "cache left", "small cache");
	printf("%-14s %9s %11s %10s %11s %11s %12s\n", "", "wound up",
	       "freed %", "freed %", "drain", "at the end", "scanned");
	for (p = 0; p < WU_NR_POLICIES; p++) {
		char drain[32];

		if (res[p].calls_to_drain < 0)
			snprintf(drain, sizeof(drain), "-1 (>%u)",
				 WU_MAX_CAPABLE);
		else
			snprintf(drain, sizeof(drain), "%ld",
				 res[p].calls_to_drain);
		printf("%-14s %9lu %11.3f %10.3f %11s %11lu %12lu\n",
		       res[p].policy, res[p].backlog_wound,
		       res[p].first_call_freed_pct, res[p].max_call_freed_pct,
		       drain, res[p].cache_left, res[p].small_scanned);
	}
	printf("\n"
	       "backlog wound up: rcl_shrinker_backlog() after the calls that cannot\n"
	       "scan; freed %%: objects one call freed, in %% of the original %lu;\n"
	       "calls to drain: capable calls until the backlog is below one batch\n"
	       "(-1: not within %u); cache left: objects left after the last capable\n"
	       "call; small cache scanned: objects scanned in %u calls.\n",
	       WU_CACHE, WU_MAX_CAPABLE, WU_SMALL_CALLS);
	return 0;
}

