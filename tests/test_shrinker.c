/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the shrinker registry: the arithmetic of each policy against
 * hand-computed vectors, STOP deferral and its drain, EMPTY versus 0, batch
 * handling, windup and small-cache behaviour, per-partition backlogs,
 * lifecycle errors, the trace hook, the debug entry points and allocation
 * failures, and where deferred work lives between calls of different
 * threads (a calling thread's sub-batch remainder, the shared backlog, the
 * remainders of threads that exited, or that a fork() child does not
 * have).  The shrinkers are models whose callbacks follow a script.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <time.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "test_util.h"

/* ------------------------------------------------------------------------- */
/* A model cache behind a shrinker                                            */
/* ------------------------------------------------------------------------- */

struct model {
	unsigned long objects;	/* count answer (0 and EMPTY allowed) */
	bool shrink_objects;	/* scan frees objects (not re-created) */
	bool stop;		/* scan answers STOP */
	unsigned long report_scanned; /* if set, nr_scanned reported */
	uint64_t need;		/* capability bits needed to scan */
	/* observed */
	unsigned long counts, scans, scanned_total, freed_total;
	unsigned long last_nr_to_scan, last_partition;
	unsigned long max_nr_to_scan;
	int last_priority;
	struct rcl_shrinker *self;
	int free_result;	/* rcl_shrinker_free() from a callback */
	bool free_self_in_scan;
};

static unsigned long model_count(struct rcl_shrinker *s,
				 struct rcl_shrink_control *sc)
{
	struct model *m = sc->priv;

	assert_ptr_equal(s, m->self);
	m->counts++;
	m->last_partition = sc->partition;
	return m->objects;
}

static unsigned long model_scan(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	struct model *m = sc->priv;
	unsigned long n;

	assert_ptr_equal(s, m->self);
	assert_int_equal(sc->nr_scanned, sc->nr_to_scan);
	m->last_nr_to_scan = sc->nr_to_scan;
	m->last_priority = sc->priority;
	m->last_partition = sc->partition;
	if (sc->nr_to_scan > m->max_nr_to_scan)
		m->max_nr_to_scan = sc->nr_to_scan;
	if (m->free_self_in_scan)
		m->free_result = rcl_shrinker_free(s);
	if (m->stop || (sc->context & m->need) != m->need)
		return RCL_SHRINK_STOP;
	m->scans++;
	n = sc->nr_to_scan;
	if (m->report_scanned)
		sc->nr_scanned = m->report_scanned;
	if (m->shrink_objects) {
		if (n > m->objects)
			n = m->objects;
		m->objects -= n;
	}
	m->scanned_total += sc->nr_scanned;
	m->freed_total += n;
	return n;
}

static const struct rcl_shrinker_ops model_ops = {
	.count_objects = model_count,
	.scan_objects = model_scan,
};

static struct rcl_shrinker_registry *new_registry(enum rcl_shrink_policy p,
						  unsigned parts)
{
	struct rcl_shrinker_registry_config cfg = {
		.nr_partitions = parts,
		.policy = p,
	};
	struct rcl_shrinker_registry *reg = NULL;

	assert_int_equal(rcl_shrinker_registry_new(&cfg, &reg), 0);
	assert_non_null(reg);
	return reg;
}

static struct rcl_shrinker *new_shrinker(struct rcl_shrinker_registry *reg,
					 struct model *m, int seeks, long batch,
					 unsigned flags)
{
	struct rcl_shrinker_config cfg = {
		.ops = &model_ops,
		.priv = m,
		.name = "model",
		.seeks = seeks,
		.batch = batch,
		.flags = flags,
	};
	struct rcl_shrinker *s = NULL;

	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	m->self = s;
	return s;
}

static unsigned long backlog(struct rcl_shrinker *s, unsigned part)
{
	unsigned long b = 99;

	assert_int_equal(rcl_shrinker_backlog(s, part, &b), 0);
	return b;
}

/* Preset a backlog by deferring: STOP calls until it reaches @want. */
static void shrink(struct rcl_shrinker *s, int prio, uint64_t ctx,
		   struct rcl_shrink_result *res)
{
	assert_int_equal(rcl_shrinker_shrink(s, 0, prio, ctx, res), 0);
}

/* ------------------------------------------------------------------------- */
/* kernel-modern: hand-computed vectors                                       */
/* ------------------------------------------------------------------------- */

struct vec {
	unsigned long freeable;
	int prio, seeks;
	unsigned long backlog_before;	/* built with STOP calls; see below */
	unsigned long scans, scanned, backlog_after;
};

static void run_modern_vector(const struct vec *v)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 1);
	struct model m = { .objects = v->freeable };
	struct rcl_shrinker *s = new_shrinker(reg, &m, v->seeks, 0, 0);
	struct rcl_shrink_result res = { 0 };

	shrink(s, v->prio, RCL_CTX_CAPABLE, &res);
	assert_int_equal(m.counts, 1);
	assert_int_equal(m.scans, v->scans);
	assert_int_equal(res.scanned, v->scanned);
	assert_int_equal(res.freed, v->scanned);
	assert_int_equal(res.nr_shrinkers, 1);
	assert_int_equal(backlog(s, 0), v->backlog_after);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static void test_shrinker_modern_vectors(void **state)
{
	/*
	 * delta = ((F >> p) * 4) / seeks (F / 2 for seeks 0);
	 * total = min((backlog >> p) + delta, 2F); whole batches of 128, a
	 * remainder only while total >= F; backlog' = min(backlog + delta -
	 * scanned, 2F).
	 */
	static const struct vec v[] = {
		/* 1000 >> 12 = 0: a small cache gets no pressure at all. */
		{ 1000, 12, 2, 0, 0, 0, 0 },
		/* delta = 1562 * 2 = 3124: 24 batches (3072), 52 carried. */
		{ 100000, 6, 2, 0, 24, 3072, 52 },
		/* delta = 600 = total = 2F: 4 batches, 88 < F left. */
		{ 300, 0, 2, 0, 4, 512, 88 },
		/* delta = 200 = 2F: one batch, 72 < F left. */
		{ 100, 0, 2, 0, 1, 128, 72 },
		/* seeks 0: delta = F/2 = 50 < batch and < F: carried. */
		{ 100, 0, 0, 0, 0, 0, 50 },
		/* seeks 0 at priority 12: 500: 3 batches, 116 carried. */
		{ 1000, 12, 0, 0, 3, 384, 116 },
		/* delta = 2500 * 4 / 4 = 2500: 19 batches, 68 carried. */
		{ 10000, 2, 4, 0, 19, 2432, 68 },
		/* total = 2F = 100 >= F = 50: a sub-batch of 100, all of it. */
		{ 50, 0, 2, 0, 1, 100, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		run_modern_vector(&v[i]);
}

/* STOP defers the whole target; later capable calls do it. */
static void test_shrinker_modern_stop_defers_then_drains(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 1);
	struct model m = { .objects = 100000, .need = RCL_CTX_MAY_IO };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	struct rcl_shrink_result res = { 0 };
	struct rcl_shrinker_stats st;

	(void)state;
	/* A context without I/O: STOP; delta 3124 deferred. */
	shrink(s, 6, RCL_CTX_MAY_BLOCK, &res);
	assert_int_equal(res.nr_stopped, 1);
	assert_int_equal(res.scanned, 0);
	assert_int_equal(backlog(s, 0), 3124);
	shrink(s, 6, RCL_CTX_MAY_BLOCK, &res);
	assert_int_equal(backlog(s, 0), 6248);

	/* Capable: total = (6248 >> 6) + 3124 = 97 + 3124 = 3221 -> 25
	 * batches (3200); backlog' = 6248 + 3124 - 3200 = 6172. */
	memset(&res, 0, sizeof(res));
	shrink(s, 6, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.scanned, 3200);
	assert_int_equal(m.scans, 25);
	assert_int_equal(backlog(s, 0), 6172);
	/* Priority 0: delta = 200000, total = min(6172 + 200000, 2F) =
	 * 200000: 1562 batches (199936), the 64 left are < F; backlog' =
	 * 6172 + 200000 - 199936 = 6236. */
	shrink(s, 0, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.scanned, 3200 + 199936);
	assert_int_equal(backlog(s, 0), 6236);

	assert_int_equal(rcl_shrinker_stats(s, &st), 0);
	assert_int_equal(st.calls, 4);
	assert_int_equal(st.stops, 2);
	assert_int_equal(st.scanned, 203136);
	assert_int_equal(st.freed, 203136);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* A scan that reports fewer objects scanned keeps being called. */
static void test_shrinker_nr_scanned_is_honoured(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 1);
	struct model m = { .objects = 1000, .report_scanned = 64 };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	struct rcl_shrink_result res = { 0 };

	(void)state;
	/* total 2000, 64 per call, while total >= 128: 30 calls, 80 left. */
	shrink(s, 0, RCL_CTX_CAPABLE, &res);
	assert_int_equal(m.scans, 30);
	assert_int_equal(res.scanned, 1920);
	assert_int_equal(backlog(s, 0), 80);

	/* Reporting more than asked counts as what was asked: total =
	 * min(80 + 2000, 2000) in 15 batches of 128 (1920). */
	m.report_scanned = 1000000;
	m.scans = 0;
	memset(&res, 0, sizeof(res));
	shrink(s, 0, RCL_CTX_CAPABLE, &res);
	assert_int_equal(m.scans, 15);
	assert_int_equal(res.scanned, 1920);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static unsigned long zero_scan(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	struct model *m = sc->priv;

	(void)s;
	m->scans++;
	sc->nr_scanned = 0;
	return 0;
}

static const struct rcl_shrinker_ops zero_ops = {
	.count_objects = model_count,
	.scan_objects = zero_scan,
};

static void test_shrinker_no_progress_does_not_spin(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 1);
	struct model m = { .objects = 1000 };
	struct rcl_shrinker_config cfg = { .ops = &zero_ops, .priv = &m,
					   .seeks = 2 };
	struct rcl_shrinker *s;
	struct rcl_shrink_result res = { 0 };

	(void)state;
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	m.self = s;
	shrink(s, 0, RCL_CTX_CAPABLE, &res);
	assert_int_equal(m.scans, 1);
	/* Nothing scanned: the whole target is carried (capped at 2F). */
	assert_int_equal(backlog(s, 0), 2000);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static void test_shrinker_batch_sizes(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 1);
	struct model m = { .objects = 10000 };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 1000, 0);
	struct rcl_shrink_result res = { 0 };

	(void)state;
	/* delta = (10000 >> 2) * 2 = 5000: five calls of exactly 1000. */
	shrink(s, 2, RCL_CTX_CAPABLE, &res);
	assert_int_equal(m.scans, 5);
	assert_int_equal(m.max_nr_to_scan, 1000);
	assert_int_equal(m.last_nr_to_scan, 1000);
	assert_int_equal(res.scanned, 5000);
	assert_int_equal(rcl_shrinker_free(s), 0);

	/* batch 0 means 128. */
	memset(&m, 0, sizeof(m));
	m.objects = 10000;
	s = new_shrinker(reg, &m, 2, 0, 0);
	shrink(s, 2, RCL_CTX_CAPABLE, &res);
	assert_int_equal(m.max_nr_to_scan, 128);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* EMPTY and 0 both skip the cache; EMPTY also drops its backlog. */
static void test_shrinker_empty_is_not_zero(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 1);
	struct model m = { .objects = 100000, .stop = true };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	struct rcl_shrink_result res = { 0 };
	struct rcl_shrinker_stats st;
	unsigned long c;

	(void)state;
	shrink(s, 6, RCL_CTX_CAPABLE, &res);
	assert_int_equal(backlog(s, 0), 3124);

	m.objects = 0;		/* "cannot tell now": keep the backlog */
	shrink(s, 6, RCL_CTX_CAPABLE, &res);
	assert_int_equal(backlog(s, 0), 3124);
	assert_int_equal(rcl_shrinker_debug_count(s, 0, 0, &c), 0);
	assert_int_equal(c, 0);

	m.objects = RCL_SHRINK_EMPTY;	/* empty: nothing to defer work on */
	shrink(s, 6, RCL_CTX_CAPABLE, &res);
	assert_int_equal(backlog(s, 0), 0);
	assert_int_equal(rcl_shrinker_debug_count(s, 0, 0, &c), 0);
	assert_int_equal(c, RCL_SHRINK_EMPTY);

	assert_int_equal(res.nr_shrinkers, 3);
	assert_int_equal(rcl_shrinker_stats(s, &st), 0);
	assert_int_equal(st.calls, 1);	/* only the call that got past counting */
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* ------------------------------------------------------------------------- */
/* kernel-2014                                                                */
/* ------------------------------------------------------------------------- */

static void test_shrinker_2014_clamps_and_puts_back(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_2014, 1);
	struct model m = { .objects = 100000, .stop = true };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	struct rcl_shrink_result res = { 0 };
	int i;

	(void)state;
	/* STOP: the clamped target (<= F/2 while delta < F/4) is put back. */
	for (i = 0; i < 100; i++)
		shrink(s, 6, RCL_CTX_CAPABLE, &res);
	assert_int_equal(backlog(s, 0), 50000);
	/* One capable call: min(50000 + 3124, F/2) in whole batches:
	 * 390 * 128 = 49920, the rest (80) put back.  Half the cache. */
	m.stop = false;
	memset(&res, 0, sizeof(res));
	shrink(s, 6, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.scanned, 49920);
	assert_int_equal(backlog(s, 0), 80);
	/* 100 objects at priority 0 (delta 200 >= F/4, so no clamp; total =
	 * min(280, 200) = 200) -> one batch; the 72 left are below F, so no
	 * sub-batch call. */
	m.objects = 100;
	memset(&res, 0, sizeof(res));
	shrink(s, 0, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.scanned, 128);
	assert_int_equal(backlog(s, 0), 72);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/*
 * v3.14+ (Davydov, "mm: vmscan: shrink all slab objects if tight on memory",
 * 0b1fb40a3b12, so in v3.16): a cache smaller than its batch is scanned,
 * with nr_to_scan = min(batch, total), once total >= freeable; the 2014
 * clamp makes that possible only while delta >= freeable / 4.
 */
static void test_shrinker_2014_sub_batch_when_tight(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_2014, 1);
	struct model m = { .objects = 60 };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 128, 0);
	int i;

	(void)state;
	/* Priority 2: delta = (60 >> 2) * 4 / 2 = 30 >= 15, total 30 < 60. */
	shrink(s, 2, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(m.scans, 0);
	assert_int_equal(backlog(s, 0), 30);
	/* Again: total = 30 + 30 = 60 >= freeable: one call of 60. */
	shrink(s, 2, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(m.scans, 1);
	assert_int_equal(m.last_nr_to_scan, 60);
	assert_int_equal(m.scanned_total, 60);
	assert_int_equal(backlog(s, 0), 0);
	/* Priority 1: delta = 30 * 4 / 2 = 60 = freeable: one call of 60. */
	shrink(s, 1, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(m.scans, 2);
	assert_int_equal(m.last_nr_to_scan, 60);
	assert_int_equal(backlog(s, 0), 0);
	/*
	 * Priority 3: delta = (60 >> 3) * 4 / 2 = 14 < 15, so total is
	 * clamped to 30 < freeable: never scanned, the backlog stays 30.
	 */
	for (i = 0; i < 10; i++)
		shrink(s, 3, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(m.scans, 2);
	assert_int_equal(backlog(s, 0), 30);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* ------------------------------------------------------------------------- */
/* rcl-default                                                                */
/* ------------------------------------------------------------------------- */

/* Priority-12 pressure on a 1000-object cache, under each policy. */
static unsigned long small_cache_scanned(enum rcl_shrink_policy p)
{
	struct rcl_shrinker_registry *reg = new_registry(p, 1);
	struct model m = { .objects = 1000 };	/* re-created: stays 1000 */
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	struct rcl_shrink_result res = { 0 };
	int i;

	for (i = 0; i < 1000; i++)
		shrink(s, 12, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.scanned, m.scanned_total);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	return res.scanned;
}

static void test_shrinker_small_cache_is_not_starved(void **state)
{
	(void)state;
	/* The kernel rounds (1000 >> 12) * 4 / 2 to 0, every call. */
	assert_int_equal(small_cache_scanned(RCL_SHRINK_POLICY_KERNEL_MODERN), 0);
	assert_int_equal(small_cache_scanned(RCL_SHRINK_POLICY_KERNEL_2014), 0);
	/*
	 * rcl-default: 1000 * 2^16 >> 12 * 2 = 32000/65536 = 0.488 objects a
	 * call accumulate; batches of 1000/8 = 125 go every 256 calls (256 *
	 * 32000 = 125 * 65536 exactly): calls 256, 512, 768 -> 375 objects,
	 * i.e. the 488 asked for less what is still accumulating.
	 */
	assert_int_equal(small_cache_scanned(RCL_SHRINK_POLICY_DEFAULT), 375);
}

struct windup {
	unsigned long first_capable_freed;
	unsigned long max_call_freed;
	int calls_to_drain;
};

/*
 * The seed scenario: a cache of @f objects (not re-created) gets @k STOP
 * calls at priority @p, then capable calls at @p until its backlog is below
 * one batch (or @limit calls).
 */
static struct windup run_windup(enum rcl_shrink_policy pol, unsigned long f,
				int seeks, int p, int k, int limit)
{
	struct rcl_shrinker_registry *reg = new_registry(pol, 1);
	struct model m = { .objects = f, .shrink_objects = true, .stop = true };
	struct rcl_shrinker *s = new_shrinker(reg, &m, seeks, 0, 0);
	struct windup w = { 0, 0, -1 };
	int i;

	for (i = 0; i < k; i++)
		shrink(s, p, RCL_CTX_CAPABLE, NULL);
	m.stop = false;
	for (i = 1; i <= limit; i++) {
		struct rcl_shrink_result res = { 0 };

		shrink(s, p, RCL_CTX_CAPABLE, &res);
		if (i == 1)
			w.first_capable_freed = res.freed;
		if (res.freed > w.max_call_freed)
			w.max_call_freed = res.freed;
		if (backlog(s, 0) < RCL_SHRINK_BATCH) {
			w.calls_to_drain = i;
			break;
		}
	}
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	return w;
}

static void test_shrinker_windup_first_capable_call(void **state)
{
	struct windup w;

	(void)state;
	/* F = 100000, seeks 2, 1000 STOP calls at priority 6. */
	w = run_windup(RCL_SHRINK_POLICY_KERNEL_2014, 100000, 2, 6, 1000, 10000);
	assert_int_equal(w.first_capable_freed, 49920);	/* half the cache */
	assert_int_equal(w.calls_to_drain, 1);
	w = run_windup(RCL_SHRINK_POLICY_KERNEL_MODERN, 100000, 2, 6, 1000, 10000);
	/* (200000 >> 6) + 3124 = 6249 -> 48 batches. */
	assert_int_equal(w.first_capable_freed, 6144);
	w = run_windup(RCL_SHRINK_POLICY_DEFAULT, 100000, 2, 6, 1000, 10000);
	/* max(100000 >> 6, 100000 / 8) + 3125 = 15625 -> 122 batches. */
	assert_int_equal(w.first_capable_freed, 15616);
	assert_int_equal(w.calls_to_drain, 6);
}

/*
 * The damping rule, over a grid: after any number of deferring calls, one
 * capable call never frees more than half of a cache whose own pressure is
 * below a quarter of it; and the backlog is gone within a bounded number of
 * capable calls.  kernel-modern breaks the first rule where seeks is large
 * and the priority low: it is not the default for that reason.
 */
static void test_shrinker_default_damping_grid(void **state)
{
	static const int seeks[] = { 1, 2, 4, 8, 32 };
	static const int ks[] = { 1, 10, 1000 };
	const unsigned long f = 100000;
	bool modern_violates = false;
	size_t a, b;
	int p;

	(void)state;
	for (a = 0; a < sizeof(seeks) / sizeof(seeks[0]); a++) {
		for (p = 0; p <= RCL_DEF_PRIORITY; p++) {
			unsigned long delta = ((f >> p) * 4) / (unsigned)seeks[a];

			if (delta >= f / 4)
				continue;	/* the rule is about small deltas */
			for (b = 0; b < sizeof(ks) / sizeof(ks[0]); b++) {
				struct windup w = run_windup(
					RCL_SHRINK_POLICY_DEFAULT, f, seeks[a],
					p, ks[b], 100);

				assert_true(w.first_capable_freed <= f / 2);
				assert_true(w.max_call_freed <= f / 2);
				assert_true(w.calls_to_drain > 0);
				/*
				 * The cache is not refilled, so the backlog's
				 * cap (half the cache) shrinks with it: the
				 * worst cell (seeks 1, priority 5, whose own
				 * pressure eats 1/8 a call) takes 23 calls.
				 */
				assert_true(w.calls_to_drain <= 32);
				w = run_windup(RCL_SHRINK_POLICY_KERNEL_MODERN, f,
					       seeks[a], p, ks[b], 1);
				if (w.first_capable_freed > f / 2)
					modern_violates = true;
			}
		}
	}
	assert_true(modern_violates);
}

/*
 * The damping bound holds when the cache shrank by itself while its work was
 * deferred: a backlog capped at half of 1,000,000 objects, met by a cache of
 * 1,000, freed all 1,000 at priority 3 (bound freeable / 8 + delta = 375).
 */
static void test_shrinker_default_backlog_of_a_shrunk_cache(void **state)
{
	int p;

	(void)state;
	for (p = 3; p <= RCL_DEF_PRIORITY; p++) {
		struct rcl_shrinker_registry *reg =
			new_registry(RCL_SHRINK_POLICY_DEFAULT, 1);
		struct model m = { .objects = 1000000, .stop = true,
				   .shrink_objects = true };
		struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
		/* delta in the policy's fixed point: (1000 * 4 / 2) >> p. */
		unsigned long delta = 2000ul >> p, b;
		int i;

		for (i = 0; i < 10; i++)
			shrink(s, 0, RCL_CTX_CAPABLE, NULL);
		b = backlog(s, 0);
		assert_int_equal(b, 500000);
		m.objects = 1000;
		m.stop = false;
		shrink(s, p, RCL_CTX_CAPABLE, NULL);
		if (p == 3)
			print_message("backlog %lu met by 1000 objects: priority "
				      "3 freed %lu (bound %lu)\n", b,
				      m.freed_total, 125 + delta);
		assert_true(m.freed_total <= 125 + delta);
		/* ... and what is put back is capped by the cache it met. */
		assert_true(backlog(s, 0) <= 500);
		assert_int_equal(rcl_shrinker_free(s), 0);
		assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	}
}

/* A deferred backlog is not lost: it is all done, by capable calls. */
static void test_shrinker_default_backlog_is_not_lost(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_DEFAULT, 1);
	struct model m = { .objects = 1000000, .stop = true };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	struct rcl_shrink_result res = { 0 };
	int i;

	(void)state;
	/* Ten STOP calls at priority 4: 10 * (1000000 >> 4) * 2 = 1250000,
	 * capped at F / 2. */
	for (i = 0; i < 10; i++)
		shrink(s, 4, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(backlog(s, 0), 500000);
	/* Capable calls at priority 12 (delta 488 each) work it off at
	 * F/8 a call: at most 9 calls (4 and a bit), each at most F/8 +
	 * delta. */
	m.stop = false;
	for (i = 0; i < 9 && backlog(s, 0) >= 128; i++) {
		memset(&res, 0, sizeof(res));
		shrink(s, 12, RCL_CTX_CAPABLE, &res);
		assert_true(res.scanned <= 1000000 / 8 + 489);
	}
	assert_true(backlog(s, 0) < 128);
	assert_true(m.scanned_total >= 500000);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static void test_shrinker_default_tiny_cache_in_eighths(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_DEFAULT, 1);
	struct model m = { .objects = 40 };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 0, 0, 0);
	struct rcl_shrink_result res = { 0 };

	(void)state;
	/* seeks 0: delta = 20, eighth = 5: four calls of 5 objects. */
	shrink(s, 12, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.scanned, 20);
	assert_int_equal(m.scans, 4);
	assert_int_equal(m.max_nr_to_scan, 5);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* ------------------------------------------------------------------------- */
/* Partitions                                                                 */
/* ------------------------------------------------------------------------- */

static void test_shrinker_partition_backlogs(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 4);
	struct model aware = { .objects = 100000, .stop = true };
	struct model plain = { .objects = 100000, .stop = true };
	struct rcl_shrinker *sa = new_shrinker(reg, &aware, 2, 0,
					       RCL_SHRINKER_PARTITION_AWARE);
	struct rcl_shrinker *sp = new_shrinker(reg, &plain, 2, 0, 0);
	struct rcl_shrink_result res = { 0 };
	unsigned long b;

	(void)state;
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 2, 6, RCL_CTX_CAPABLE,
						      &res), 0);
	assert_int_equal(res.nr_shrinkers, 2);
	assert_int_equal(res.nr_stopped, 2);
	assert_int_equal(aware.last_partition, 2);
	assert_int_equal(plain.last_partition, 0);
	assert_int_equal(backlog(sa, 2), 3124);
	assert_int_equal(backlog(sa, 0), 0);
	assert_int_equal(backlog(sa, 1), 0);
	assert_int_equal(backlog(sa, 3), 0);
	/* The plain shrinker has one backlog, fed from every partition. */
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 3, 6, RCL_CTX_CAPABLE,
						      &res), 0);
	assert_int_equal(backlog(sp, 0), 6248);
	assert_int_equal(backlog(sa, 3), 3124);
	assert_int_equal(rcl_shrinker_backlog(sp, 1, &b), -EINVAL);
	assert_int_equal(rcl_shrinker_backlog(sa, 4, &b), -EINVAL);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 4, 6, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_free(sa), 0);
	assert_int_equal(rcl_shrinker_free(sp), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* ------------------------------------------------------------------------- */
/* Registry walk, lifecycle, errors                                           */
/* ------------------------------------------------------------------------- */

static void test_shrinker_registry_walk_visits_registered_only(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 1);
	struct model m[3] = { { .objects = 100000 }, { .objects = 100000 },
			      { .objects = 100000 } };
	struct rcl_shrinker_config cfg = { .ops = &model_ops, .priv = &m[2],
					   .seeks = 2 };
	struct rcl_shrinker *s0 = new_shrinker(reg, &m[0], 2, 0, 0);
	struct rcl_shrinker *s1 = new_shrinker(reg, &m[1], 2, 0, 0);
	struct rcl_shrinker *s2;
	struct rcl_shrink_result res = { 0 };

	(void)state;
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s2), 0);	/* not registered */
	m[2].self = s2;
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 6, RCL_CTX_CAPABLE,
						      &res), 0);
	assert_int_equal(res.nr_shrinkers, 2);
	assert_int_equal(res.scanned, 2 * 3072);
	assert_int_equal(m[2].counts, 0);
	assert_int_equal(rcl_shrinker_shrink(s2, 0, 6, 0, &res), -ENOENT);
	/* A freed slot is reused; the walk still sees every shrinker once. */
	assert_int_equal(rcl_shrinker_free(s0), 0);
	assert_int_equal(rcl_shrinker_register(s2), 0);
	assert_int_equal(rcl_shrinker_register(s2), -EBUSY);
	memset(&res, 0, sizeof(res));
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 6, RCL_CTX_CAPABLE,
						      &res), 0);
	assert_int_equal(res.nr_shrinkers, 2);
	assert_int_equal(m[0].counts, 1);
	assert_int_equal(m[2].counts, 1);
	/* The registry cannot go while shrinkers remain. */
	assert_int_equal(rcl_shrinker_registry_free(reg), -EBUSY);
	assert_int_equal(rcl_shrinker_free(s1), 0);
	assert_int_equal(rcl_shrinker_free(s2), 0);
	assert_int_equal(rcl_shrinker_free(NULL), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	assert_int_equal(rcl_shrinker_registry_free(NULL), 0);
}

static void test_shrinker_bad_input(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_DEFAULT, 2);
	struct rcl_shrinker_registry_config rc = { .nr_partitions = 2000 };
	struct rcl_shrinker_registry *r2 = NULL;
	static const struct rcl_shrinker_ops half = { .count_objects = model_count };
	struct rcl_shrinker_config cfg = { .ops = &model_ops };
	struct rcl_shrinker *s = NULL;
	struct rcl_shrinker_stats st;
	unsigned long v;
	struct model m = { .objects = 10 };

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(NULL, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_registry_new(&rc, &r2), -EINVAL);
	rc.nr_partitions = 1;
	rc.policy = (enum rcl_shrink_policy)7;
	assert_int_equal(rcl_shrinker_registry_new(&rc, &r2), -EINVAL);
	assert_null(r2);
	assert_null(rcl_shrink_policy_name((enum rcl_shrink_policy)7));
	assert_string_equal(rcl_shrink_policy_name(RCL_SHRINK_POLICY_DEFAULT),
			    "rcl-default");
	assert_int_equal(rcl_shrinker_registry_policy(reg),
			 RCL_SHRINK_POLICY_DEFAULT);

	assert_int_equal(rcl_shrinker_new(NULL, &cfg, &s), -EINVAL);
	assert_int_equal(rcl_shrinker_new(reg, NULL, &s), -EINVAL);
	assert_int_equal(rcl_shrinker_new(reg, &cfg, NULL), -EINVAL);
	cfg.ops = &half;
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), -EINVAL);
	cfg.ops = &model_ops;
	cfg.seeks = -1;
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), -EINVAL);
	cfg.seeks = 2;
	cfg.batch = -5;
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), -EINVAL);
	cfg.batch = 0;
	cfg.flags = 1u << 5;
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), -EINVAL);
	assert_null(s);
	cfg.flags = 0;
	cfg.priv = &m;
	cfg.name = "a-name-that-is-longer-than-thirty-one-bytes";
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	m.self = s;
	assert_int_equal(strlen(rcl_shrinker_name(s)), RCL_SHRINKER_NAME_LEN - 1);
	assert_null(rcl_shrinker_name(NULL));

	assert_int_equal(rcl_shrinker_register(NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_shrink(NULL, 0, 6, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(rcl_shrinker_shrink(s, 2, 6, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_shrink(s, 0, 13, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_shrink(s, 0, -1, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_shrink(s, 1, 12, 0, NULL), 0);
	assert_int_equal(rcl_shrinker_registry_shrink(NULL, 0, 6, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 13, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_stats(NULL, &st), -EINVAL);
	assert_int_equal(rcl_shrinker_stats(s, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_backlog(NULL, 0, &v), -EINVAL);
	assert_int_equal(rcl_shrinker_backlog(s, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_debug_count(NULL, 0, 0, &v), -EINVAL);
	assert_int_equal(rcl_shrinker_debug_count(s, 2, 0, &v), -EINVAL);
	assert_int_equal(rcl_shrinker_debug_scan(s, 0, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static void test_shrinker_free_from_own_callback_is_edeadlk(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_KERNEL_MODERN, 1);
	struct model m = { .objects = 100000, .free_self_in_scan = true,
			   .free_result = 1 };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);

	(void)state;
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 6, RCL_CTX_CAPABLE,
						      NULL), 0);
	assert_int_equal(m.free_result, -EDEADLK);
	m.free_self_in_scan = false;
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* ------------------------------------------------------------------------- */
/* Trace hook and debug entry points                                          */
/* ------------------------------------------------------------------------- */

static struct rcl_shrink_trace trace_log[4];
static int trace_n;

static void trace_cb(void *arg, const struct rcl_shrink_trace *ev)
{
	assert_ptr_equal(arg, trace_log);
	if (trace_n < 4)
		trace_log[trace_n] = *ev;
	trace_n++;
}

static void test_shrinker_trace_hook(void **state)
{
	struct rcl_shrinker_registry_config rc = {
		.policy = RCL_SHRINK_POLICY_KERNEL_MODERN,
		.trace = trace_cb,
		.trace_arg = trace_log,
	};
	struct rcl_shrinker_registry *reg;
	struct model m = { .objects = 100000 };
	struct rcl_shrinker *s;

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
	s = new_shrinker(reg, &m, 2, 0, 0);
	trace_n = 0;
	shrink(s, 6, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(trace_n, 2);
	assert_int_equal(trace_log[0].phase, RCL_SHRINK_TRACE_START);
	assert_ptr_equal(trace_log[0].shrinker, s);
	assert_string_equal(trace_log[0].name, "model");
	assert_int_equal(trace_log[0].priority, 6);
	assert_int_equal(trace_log[0].backlog, 0);
	assert_int_equal(trace_log[0].freeable, 100000);
	assert_int_equal(trace_log[0].delta, 3124);
	assert_int_equal(trace_log[0].total_scan, 3124);
	assert_int_equal(trace_log[1].phase, RCL_SHRINK_TRACE_END);
	assert_int_equal(trace_log[1].freed, 3072);
	assert_int_equal(trace_log[1].scanned, 3072);
	assert_int_equal(trace_log[1].new_backlog, 52);
	/* No event for a call that stops at counting. */
	m.objects = RCL_SHRINK_EMPTY;
	shrink(s, 6, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(trace_n, 2);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/*
 * The trace hook is one of the shrinker's callbacks: freeing the traced
 * shrinker from it is refused with -EDEADLK at either phase (it used to wait
 * for its own call for ever), and the shrinker stays usable.
 */
static struct rcl_shrinker *trace_free_target;
static int trace_free_ret[2] = { 1, 1 };

static void trace_free_cb(void *arg, const struct rcl_shrink_trace *ev)
{
	(void)arg;
	if (ev->shrinker == trace_free_target)
		trace_free_ret[ev->phase == RCL_SHRINK_TRACE_END] =
			rcl_shrinker_free(trace_free_target);
}

static void test_shrinker_free_from_trace_refused(void **state)
{
	struct rcl_shrinker_registry_config rc = {
		.policy = RCL_SHRINK_POLICY_KERNEL_MODERN,
		.trace = trace_free_cb,
	};
	struct rcl_shrinker_registry *reg;
	struct model m = { .objects = 100000 };
	struct rcl_shrinker *s;

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
	s = new_shrinker(reg, &m, 2, 0, 0);
	trace_free_target = s;
	shrink(s, 6, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(trace_free_ret[0], -EDEADLK);
	assert_int_equal(trace_free_ret[1], -EDEADLK);
	assert_true(m.scanned_total > 0);
	/* Still registered and working; freed normally outside the hook. */
	trace_free_ret[0] = trace_free_ret[1] = 1;
	shrink(s, 6, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(trace_free_ret[1], -EDEADLK);
	trace_free_target = NULL;
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static void test_shrinker_debug_entry_points(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_DEFAULT, 1);
	struct model m = { .objects = 500, .shrink_objects = true };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	struct rcl_shrinker_stats st;
	unsigned long c, freed, scanned;

	(void)state;
	assert_int_equal(rcl_shrinker_debug_count(s, 0, RCL_CTX_CAPABLE, &c), 0);
	assert_int_equal(c, 500);
	/* Not limited to a batch, no backlog, no counters. */
	assert_int_equal(rcl_shrinker_debug_scan(s, 0, 300, RCL_CTX_CAPABLE,
						 &freed, &scanned), 0);
	assert_int_equal(freed, 300);
	assert_int_equal(scanned, 300);
	assert_int_equal(m.objects, 200);
	assert_int_equal(backlog(s, 0), 0);
	assert_int_equal(rcl_shrinker_stats(s, &st), 0);
	assert_int_equal(st.calls + st.scanned + st.freed + st.stops, 0);
	/* STOP comes back as it is. */
	m.need = RCL_CTX_MAY_IO;
	assert_int_equal(rcl_shrinker_debug_scan(s, 0, 10, 0, &freed, NULL), 0);
	assert_int_equal(freed, RCL_SHRINK_STOP);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* ------------------------------------------------------------------------- */
/* Allocation failures                                                        */
/* ------------------------------------------------------------------------- */

struct failing {
	int fail_at;	/* fail the Nth allocation (1-based); 0: never */
	int n;
	int live;
};

static void *failing_alloc(void *ctx, size_t size)
{
	struct failing *f = ctx;

	if (++f->n == f->fail_at)
		return NULL;
	f->live++;
	return test_malloc(size);
}

static void failing_free(void *ctx, void *p)
{
	struct failing *f = ctx;

	f->live--;
	test_free(p);
}

static void test_shrinker_allocation_failures(void **state)
{
	struct failing f = { 0 };
	struct rcl_allocator a = { failing_alloc, failing_free, &f };
	struct rcl_shrinker_registry_config rc = { .allocator = &a };
	struct rcl_shrinker_config cfg = { .ops = &model_ops, .seeks = 2 };
	struct rcl_shrinker_registry *reg = NULL;
	struct rcl_shrinker *s = NULL;
	int at;

	(void)state;
	/* Every allocation of the sequence new registry, new shrinker,
	 * register (the slot chunk) fails once in turn. */
	for (at = 1; at <= 3; at++) {
		int err;

		f = (struct failing){ .fail_at = at };
		reg = NULL;
		s = NULL;
		err = rcl_shrinker_registry_new(&rc, &reg);
		if (at == 1) {
			assert_int_equal(err, -ENOMEM);
			assert_null(reg);
			assert_int_equal(f.live, 0);
			continue;
		}
		assert_int_equal(err, 0);
		err = rcl_shrinker_new(reg, &cfg, &s);
		if (at == 2) {
			assert_int_equal(err, -ENOMEM);
			assert_null(s);
			assert_int_equal(rcl_shrinker_registry_free(reg), 0);
			assert_int_equal(f.live, 0);
			continue;
		}
		assert_int_equal(err, 0);
		assert_int_equal(rcl_shrinker_register(s), -ENOMEM);
		/* Still usable: the next attempt succeeds. */
		assert_int_equal(rcl_shrinker_register(s), 0);
		assert_int_equal(rcl_shrinker_free(s), 0);
		assert_int_equal(rcl_shrinker_registry_free(reg), 0);
		assert_int_equal(f.live, 0);
	}
	rc.allocator = &(struct rcl_allocator){ NULL, failing_free, &f };
	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), -EINVAL);
}

/*
 * Two callbacks freeing each other's shrinkers would wait for each other for
 * ever: from a callback of another shrinker, rcl_shrinker_free() of a
 * shrinker whose callbacks are in flight returns -EDEADLK and changes
 * nothing.  Thread B sits in S2's count callback; the main thread, in S1's
 * count callback, tries to free S2.
 */
static atomic_int mf_in_s2, mf_release, mf_ret;
static struct rcl_shrinker *mf_s2;

static unsigned long mf_count_s2(struct rcl_shrinker *sh,
				 struct rcl_shrink_control *sc)
{
	(void)sh;
	(void)sc;
	atomic_store(&mf_in_s2, 1);
	while (!atomic_load(&mf_release))
		sched_yield();
	return 0;
}

static unsigned long mf_count_s1(struct rcl_shrinker *sh,
				 struct rcl_shrink_control *sc)
{
	(void)sh;
	(void)sc;
	atomic_store(&mf_ret, rcl_shrinker_free(mf_s2));
	return 0;
}

static unsigned long mf_scan(struct rcl_shrinker *sh,
			     struct rcl_shrink_control *sc)
{
	(void)sh;
	(void)sc;
	return 0;
}

static void *mf_thread(void *arg)
{
	(void)arg;
	rcl_shrinker_shrink(mf_s2, 0, 0, RCL_CTX_CAPABLE, NULL);
	return NULL;
}

static void test_shrinker_free_from_callback_does_not_wait(void **state)
{
	static const struct rcl_shrinker_ops ops1 = { mf_count_s1, mf_scan };
	static const struct rcl_shrinker_ops ops2 = { mf_count_s2, mf_scan };
	struct rcl_shrinker_config c1 = { .ops = &ops1, .name = "s1", .seeks = 2 };
	struct rcl_shrinker_config c2 = { .ops = &ops2, .name = "s2", .seeks = 2 };
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker *s1;
	pthread_t t;

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
	assert_int_equal(rcl_shrinker_new(reg, &c1, &s1), 0);
	assert_int_equal(rcl_shrinker_new(reg, &c2, &mf_s2), 0);
	assert_int_equal(rcl_shrinker_register(s1), 0);
	assert_int_equal(rcl_shrinker_register(mf_s2), 0);
	atomic_store(&mf_in_s2, 0);
	atomic_store(&mf_release, 0);
	atomic_store(&mf_ret, 1);
	assert_int_equal(pthread_create(&t, NULL, mf_thread, NULL), 0);
	while (!atomic_load(&mf_in_s2))
		sched_yield();
	assert_int_equal(rcl_shrinker_shrink(s1, 0, 0, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(atomic_load(&mf_ret), -EDEADLK);
	atomic_store(&mf_release, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* Nothing changed: S2 is still registered, and can be shrunk. */
	atomic_store(&mf_in_s2, 0);
	assert_int_equal(rcl_shrinker_shrink(mf_s2, 0, 0, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(atomic_load(&mf_in_s2), 1);
	/* From S1's callback with S2 idle, the free goes through. */
	atomic_store(&mf_ret, 1);
	assert_int_equal(rcl_shrinker_shrink(s1, 0, 0, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(atomic_load(&mf_ret), 0);
	assert_int_equal(rcl_shrinker_free(s1), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/*
 * Nor from an evict callback inside a domain's pass: a callback of the
 * shrinker in flight in another thread could be waiting for what the pass
 * holds (a scan that detaches the lruvec the pass pins: each thread then
 * waited for the other for ever).  Refused with -EDEADLK, nothing done.
 */
static sem_t xd_in_scan, xd_release;
static atomic_int xd_waited, xd_scans, xd_free_ret = 99;
static struct rcl_shrinker *xd_s;

static unsigned long xd_count(struct rcl_shrinker *sh,
			      struct rcl_shrink_control *sc)
{
	(void)sh;
	(void)sc;
	return 1000;
}

static unsigned long xd_scan(struct rcl_shrinker *sh,
			     struct rcl_shrink_control *sc)
{
	struct timespec ts;

	(void)sh;
	if (atomic_fetch_add(&xd_scans, 1))
		return sc->nr_to_scan;	/* only the first call waits */
	sem_post(&xd_in_scan);
	/* Bounded, so that a free that waits fails the test, not hangs it
	 * (the 10 s is no assertion: -EDEADLK is). */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	while (sem_timedwait(&xd_release, &ts) != 0) {
		if (errno == ETIMEDOUT) {
			atomic_store(&xd_waited, 1);
			break;
		}
	}
	return sc->nr_to_scan;
}

static const struct rcl_shrinker_ops xd_ops = {
	.count_objects = xd_count,
	.scan_objects = xd_scan,
};

static enum rcl_evict_status xd_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	if (atomic_load(&xd_free_ret) == 99)
		atomic_store(&xd_free_ret, rcl_shrinker_free(xd_s));
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops xd_lops = { .evict = xd_evict };

static void *xd_thread(void *arg)
{
	(void)arg;
	(void)rcl_shrinker_shrink(xd_s, 0, 0, RCL_CTX_CAPABLE, NULL);
	return NULL;
}

static void test_shrinker_free_from_evict_callback_does_not_wait(void **state)
{
	struct rcl_domain_config dc = { .budget = 1u << 30 };
	struct rcl_lruvec_config lc = { .ops = &xd_lops };
	struct rcl_shrinker_config sc = {
		.ops = &xd_ops, .name = "xd", .seeks = RCL_DEFAULT_SEEKS,
	};
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_DEFAULT, 1);
	static struct rcl_lru_node nodes[64];
	struct rcl_domain *d = NULL;
	struct rcl_lruvec lv;
	pthread_t t;
	unsigned i;

	(void)state;
	assert_int_equal(sem_init(&xd_in_scan, 0, 0), 0);
	assert_int_equal(sem_init(&xd_release, 0, 0), 0);
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&nodes[i]);
		assert_int_equal(rcl_lruvec_add(&lv, &nodes[i], RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH),
				 0);
	}
	assert_int_equal(rcl_shrinker_new(reg, &sc, &xd_s), 0);
	assert_int_equal(rcl_shrinker_register(xd_s), 0);
	assert_int_equal(pthread_create(&t, NULL, xd_thread, NULL), 0);
	assert_int_equal(sem_wait(&xd_in_scan), 0);	/* its scan in flight */
	(void)rcl_domain_reclaim(d, 8, RCL_CTX_CAPABLE, NULL);
	sem_post(&xd_release);
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("free from an evict callback in a pass, the shrinker's "
		      "scan in flight: %d (waited for it: %d)\n",
		      atomic_load(&xd_free_ret), atomic_load(&xd_waited));
	/* A free that waited returned 0 once the scan's bound ran out. */
	assert_int_equal(atomic_load(&xd_free_ret), -EDEADLK);
	/* Nothing done: still registered and callable, then freed. */
	assert_int_equal(rcl_shrinker_shrink(xd_s, 0, 12, 0, NULL), 0);
	assert_int_equal(rcl_shrinker_free(xd_s), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(rcl_lruvec_del(&lv, &nodes[i]), 0);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	rcl_lruvec_destroy(&lv);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	sem_destroy(&xd_in_scan);
	sem_destroy(&xd_release);
}

/*
 * fork(): the pins that other threads' walks held are nobody's in the
 * child.  A child forked while another thread was inside S's scan freed S
 * ... by waiting for ever (a review's reproducer); one forked from inside
 * S's own scan keeps its own pin, which its walk gives back on return.
 * Each child ends itself by alarm(), a failure, if a call hangs.
 */
static sem_t fk_in_scan, fk_release;
static atomic_int fk_mode;		/* 1: block in scan; 2: fork in scan */
static pid_t fk_child, fk_parent;

static unsigned long fk_count(struct rcl_shrinker *sh,
			      struct rcl_shrink_control *sc)
{
	(void)sh;
	(void)sc;
	return 1000;
}

static unsigned long fk_scan(struct rcl_shrinker *sh,
			     struct rcl_shrink_control *sc)
{
	int mode = atomic_exchange(&fk_mode, 0);

	(void)sh;
	if (mode == 1) {
		sem_post(&fk_in_scan);
		while (sem_wait(&fk_release) != 0)
			;
	} else if (mode == 2) {
		fk_child = fork();
		if (fk_child == 0) {
			alarm(10);
			/* Its own callback, in the child too. */
			T_EQ(rcl_shrinker_free(sh), -EDEADLK);
		}
	}
	return sc->nr_to_scan;
}

static const struct rcl_shrinker_ops fk_ops = {
	.count_objects = fk_count,
	.scan_objects = fk_scan,
};

/* A thread that makes one capable shrink of the shrinker @arg. */
static void *shrink_thread(void *arg)
{
	(void)rcl_shrinker_shrink(arg, 0, 0, RCL_CTX_CAPABLE, NULL);
	return NULL;
}

/*
 * The fork tests' start: a new registered shrinker of @cfg in @reg, and a
 * thread @t inside its scan, held there until fk_release is posted.
 */
static struct rcl_shrinker *fk_start_in_scan(struct rcl_shrinker_registry *reg,
					     const struct rcl_shrinker_config *cfg,
					     pthread_t *t)
{
	struct rcl_shrinker *s;

	assert_int_equal(sem_init(&fk_in_scan, 0, 0), 0);
	assert_int_equal(sem_init(&fk_release, 0, 0), 0);
	assert_int_equal(rcl_shrinker_new(reg, cfg, &s), 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	atomic_store(&fk_mode, 1);
	assert_int_equal(pthread_create(t, NULL, shrink_thread, s), 0);
	assert_int_equal(sem_wait(&fk_in_scan), 0);
	return s;
}

static void test_shrinker_fork_child_frees_without_parent_pins(void **state)
{
	struct rcl_shrinker_config sc = { .ops = &fk_ops, .name = "fk" };
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_DEFAULT, 1);
	struct rcl_shrinker *s;
	pthread_t t;
	pid_t pid;
	int st;

	(void)state;
	fk_parent = getpid();
	/* Another thread inside S's scan at the fork. */
	s = fk_start_in_scan(reg, &sc, &t);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(10);
		T_EQ(rcl_shrinker_free(s), 0);
		T_EQ(rcl_shrinker_registry_free(reg), 0);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ASSERT_CHILD_EXITED_OK(st);
	sem_post(&fk_release);
	assert_int_equal(pthread_join(t, NULL), 0);

	/* This thread forks from inside S's scan. */
	atomic_store(&fk_mode, 2);
	assert_int_equal(rcl_shrinker_shrink(s, 0, 0, RCL_CTX_CAPABLE, NULL),
			 0);
	if (getpid() != fk_parent) {
		/* The child, back from the callback: its pin was given back. */
		T_EQ(rcl_shrinker_free(s), 0);
		T_EQ(rcl_shrinker_registry_free(reg), 0);
		_exit(0);
	}
	assert_true(fk_child > 0);
	assert_int_equal(waitpid(fk_child, &st, 0), fk_child);
	ASSERT_CHILD_EXITED_OK(st);

	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	sem_destroy(&fk_in_scan);
	sem_destroy(&fk_release);
}

/*
 * fork() while a thread waits in rcl_shrinker_free() for another thread's
 * scan: the registry's condition still counted the parent's waiter in the
 * child, and glibc's pthread_cond_destroy() in the child's
 * rcl_shrinker_registry_free() waited for it for ever (a review's
 * reproducer).  The test knows the freer waits once S is out of the walks
 * (its count is no longer called) and another registration, which takes
 * the registry lock that the wait releases, has returned.
 */
static atomic_ulong fk_counts;

static unsigned long fk_count_n(struct rcl_shrinker *sh,
				struct rcl_shrink_control *sc)
{
	atomic_fetch_add(&fk_counts, 1);
	return fk_count(sh, sc);
}

static const struct rcl_shrinker_ops fk_ops_n = {
	.count_objects = fk_count_n,
	.scan_objects = fk_scan,
};

static void *free_thread(void *arg)
{
	T_EQ(rcl_shrinker_free(arg), 0);
	return NULL;
}

static void test_shrinker_fork_while_a_free_waits(void **state)
{
	struct rcl_shrinker_config sc = { .ops = &fk_ops_n, .name = "fk" };
	struct rcl_shrinker_config tc = { .ops = &fk_ops, .name = "other" };
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_DEFAULT, 1);
	struct rcl_shrinker *s, *other;
	pthread_t t, f;
	unsigned long c0;
	unsigned i;
	pid_t pid;
	int st;

	(void)state;
	s = fk_start_in_scan(reg, &sc, &t);
	assert_int_equal(pthread_create(&f, NULL, free_thread, s), 0);
	/* Until a walk no longer counts S: the freer took it out. */
	for (i = 0; i < 1000000; i++) {
		c0 = atomic_load(&fk_counts);
		(void)rcl_shrinker_registry_shrink(reg, 0, 0, 0, NULL);
		if (atomic_load(&fk_counts) == c0)
			break;
		sched_yield();
	}
	assert_int_equal(atomic_load(&fk_counts), c0);
	/* Takes the registry lock: the freer is in its wait. */
	assert_int_equal(rcl_shrinker_new(reg, &tc, &other), 0);
	assert_int_equal(rcl_shrinker_register(other), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(10);
		/* S: the parent's freer is not here; its walker neither. */
		T_EQ(rcl_shrinker_free(s), 0);
		T_EQ(rcl_shrinker_free(other), 0);
		T_EQ(rcl_shrinker_registry_free(reg), 0);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ASSERT_CHILD_EXITED_OK(st);
	sem_post(&fk_release);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pthread_join(f, NULL), 0);
	assert_int_equal(rcl_shrinker_free(other), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	sem_destroy(&fk_in_scan);
	sem_destroy(&fk_release);
}

/*
 * The registry's allocator is the application's, and may reclaim when
 * memory is short, through this very registry: called with the registry
 * lock held (a new slot chunk), its walk took the lock again while a free
 * waited, and the thread waited for itself.  Run in a child that ends
 * itself by alarm(), a failure, if a call hangs.
 */
static struct rcl_shrinker_registry *ra_reg;
static atomic_int ra_armed, ra_walked;
static sem_t ra_in_scan, ra_release;
static atomic_int ra_first;

static void *ra_alloc(void *ctx, size_t size)
{
	(void)ctx;
	if (atomic_exchange(&ra_armed, 0)) {
		T_EQ(rcl_shrinker_registry_shrink(ra_reg, 0, RCL_DEF_PRIORITY,
						  RCL_CTX_CAPABLE, NULL),
		     0);
		atomic_store(&ra_walked, 1);
	}
	return malloc(size);
}

static void ra_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static unsigned long ra_count(struct rcl_shrinker *sh,
			      struct rcl_shrink_control *sc)
{
	(void)sh;
	(void)sc;
	return 1000;
}

static unsigned long ra_scan(struct rcl_shrinker *sh,
			     struct rcl_shrink_control *sc)
{
	(void)sh;
	if (!atomic_exchange(&ra_first, 1)) {
		sem_post(&ra_in_scan);
		while (sem_wait(&ra_release) != 0)
			;
	}
	return sc->nr_to_scan;
}

static const struct rcl_shrinker_ops ra_ops = {
	.count_objects = ra_count,
	.scan_objects = ra_scan,
};


static void *ra_free_thread(void *arg)
{
	T_EQ(rcl_shrinker_free(arg), 0);
	return NULL;
}

static void ra_child(void)
{
	struct rcl_allocator a = { ra_alloc, ra_free, NULL };
	struct rcl_shrinker_registry_config rc = { .allocator = &a };
	struct rcl_shrinker_config cfg = { .ops = &ra_ops, .name = "ra" };
	struct rcl_shrinker *s, *fill[64];
	pthread_t t2, t3;
	unsigned i, n;

	alarm(20);
	T_EQ(sem_init(&ra_in_scan, 0, 0), 0);
	T_EQ(sem_init(&ra_release, 0, 0), 0);
	T_EQ(rcl_shrinker_registry_new(&rc, &ra_reg), 0);
	T_EQ(rcl_shrinker_new(ra_reg, &cfg, &s), 0);
	T_EQ(rcl_shrinker_register(s), 0);		/* slot 0 */
	for (i = 0; i < 64; i++)
		T_EQ(rcl_shrinker_new(ra_reg, &cfg, &fill[i]), 0);
	for (i = 0; i < 63; i++)			/* slots 1..63 */
		T_EQ(rcl_shrinker_register(fill[i]), 0);
	/* A scan of s in flight, and a free of s waiting for it. */
	T_EQ(pthread_create(&t2, NULL, shrink_thread, s), 0);
	while (sem_wait(&ra_in_scan) != 0)
		;
	T_EQ(pthread_create(&t3, NULL, ra_free_thread, s), 0);
	for (n = 0; n < 100000000u; n++) {
		unsigned long c;

		if (rcl_shrinker_debug_count(s, 0, 0, &c) == -ENOENT)
			break;
		sched_yield();
	}
	T_CHECK(n < 100000000u);
	/* Slot 64 needs a new chunk: the allocator walks the registry. */
	atomic_store(&ra_armed, 1);
	T_EQ(rcl_shrinker_register(fill[63]), 0);
	T_EQ(atomic_load(&ra_walked), 1);
	sem_post(&ra_release);
	T_EQ(pthread_join(t2, NULL), 0);
	T_EQ(pthread_join(t3, NULL), 0);
	for (i = 0; i < 64; i++)
		T_EQ(rcl_shrinker_free(fill[i]), 0);
	T_EQ(rcl_shrinker_registry_free(ra_reg), 0);
	_exit(0);
}

static void test_shrinker_register_allocator_may_walk(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		ra_child();
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ASSERT_CHILD_EXITED_OK(st);
}

/* ------------------------------------------------------------------------- */
/* Where deferred work lives: the caller's stripe, the shared backlog         */
/* ------------------------------------------------------------------------- */

/*
 * The default policy at priority 6 on a cache of 10000 (seeks 2): each call's
 * own pressure is exactly 312.5 objects, so a first call scans 2 batches of
 * 128 and leaves 56.5 objects, less than a batch.
 */
#define SB_F 10000ul
#define SB_PRIO 6

struct sb_trace {
	unsigned n;
	unsigned long claimed[8];	/* START: the backlog claimed */
};

static void sb_trace_cb(void *arg, const struct rcl_shrink_trace *ev)
{
	struct sb_trace *t = arg;

	if (ev->phase == RCL_SHRINK_TRACE_START && t->n < 8)
		t->claimed[t->n++] = ev->backlog;
}

/* Callbacks safe from any number of threads: count 10000, scan all asked. */
static unsigned long sb_atomic_count(struct rcl_shrinker *s,
				     struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return SB_F;
}

static unsigned long sb_atomic_scan(struct rcl_shrinker *s,
				    struct rcl_shrink_control *sc)
{
	(void)s;
	return sc->nr_to_scan;
}

static const struct rcl_shrinker_ops sb_atomic_ops = {
	.count_objects = sb_atomic_count,
	.scan_objects = sb_atomic_scan,
};

struct sb_call {
	struct rcl_shrinker *s;
	int prio;
	uint64_t ctx;
};

/* One shrink call from a thread of its own, which then exits. */
static void *sb_thread(void *arg)
{
	const struct sb_call *c = arg;

	assert_int_equal(rcl_shrinker_shrink(c->s, 0, c->prio, c->ctx, NULL), 0);
	return NULL;
}

static void sb_call_in_thread(struct rcl_shrinker *s, int prio, uint64_t ctx)
{
	struct sb_call c = { s, prio, ctx };
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, sb_thread, &c), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static struct rcl_shrinker_registry *sb_registry(struct sb_trace *t)
{
	struct rcl_shrinker_registry_config rc = {
		.policy = RCL_SHRINK_POLICY_DEFAULT,
		.trace = sb_trace_cb,
		.trace_arg = t,
	};
	struct rcl_shrinker_registry *reg = NULL;

	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
	return reg;
}

/*
 * A sub-batch remainder stays with the thread that left it: another
 * thread's call does not claim it, rcl_shrinker_backlog() still reports it,
 * and once that thread has exited the next call takes it over.
 */
static void test_shrinker_remainder_stays_with_its_thread(void **state)
{
	struct sb_trace t = { 0 };
	struct rcl_shrinker_registry *reg = sb_registry(&t);
	struct model m = { .objects = SB_F };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	struct rcl_shrink_result res = { 0 };

	(void)state;
	/* This thread: 312.5 -> scans 256, keeps 56.5. */
	shrink(s, SB_PRIO, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.scanned, 256);
	assert_int_equal(backlog(s, 0), 56);
	/*
	 * Another thread claims nothing of it (the kernel's shared word would
	 * have given it the 56.5): it scans 256 of its own 312.5 and keeps
	 * 56.5, then exits.  The reader sees both remainders: 113.
	 */
	sb_call_in_thread(s, SB_PRIO, RCL_CTX_CAPABLE);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.claimed[0], 0);
	assert_int_equal(t.claimed[1], 0);
	assert_int_equal(m.scanned_total, 512);
	assert_int_equal(backlog(s, 0), 113);
	/* This thread again: its own 56.5 and the exited thread's 56.5. */
	res = (struct rcl_shrink_result){ 0 };
	shrink(s, SB_PRIO, RCL_CTX_CAPABLE, &res);
	assert_int_equal(t.claimed[2], 113);
	/* 113 + 312.5 = 425.5: 3 batches, 41.5 kept. */
	assert_int_equal(res.scanned, 384);
	assert_int_equal(backlog(s, 0), 41);
	/* Nothing was lost or done twice: 3 * 312.5 = 896 + 41.5. */
	assert_int_equal(m.scanned_total, 896);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/*
 * A shrink from an application's key destructor that runs after the
 * library's stripe destructor uses the shared stripe: a stripe owned then
 * stays owned when the rounds end, and its remainder is never taken over.
 */
static struct rcl_shrinker *late_s;
static pthread_key_t late_key;
static int late_calls;

static void late_destructor(void *arg)
{
	(void)arg;
	T_EQ(rcl_shrinker_shrink(late_s, 0, SB_PRIO, RCL_CTX_CAPABLE, NULL), 0);
	/* Ask for another round each time: glibc runs at most 4. */
	if (++late_calls < 4)
		T_EQ(pthread_setspecific(late_key, (void *)1), 0);
}

static void *late_main(void *arg)
{
	(void)arg;
	T_EQ(rcl_shrinker_shrink(late_s, 0, SB_PRIO, RCL_CTX_CAPABLE, NULL), 0);
	T_EQ(pthread_setspecific(late_key, (void *)1), 0);
	return NULL;
}


static void test_shrinker_shrink_from_a_later_key_destructor(void **state)
{
	struct sb_trace t = { 0 };
	struct rcl_shrinker_registry *reg = sb_registry(&t);
	struct model m = { .objects = SB_F };
	unsigned long before, claimed;
	pthread_t th;

	(void)state;
	if (!LATE_DESTRUCTORS) {
		assert_int_equal(rcl_shrinker_registry_free(reg), 0);
		skip();
	}
	late_s = new_shrinker(reg, &m, 2, 0, 0);
	/* The library's stripe key exists before the application's. */
	shrink(late_s, SB_PRIO, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
	late_calls = 0;
	assert_int_equal(pthread_create(&th, NULL, late_main, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	before = backlog(late_s, 0);
	/* Every remainder is this thread's or an exited thread's: all claimed. */
	shrink(late_s, SB_PRIO, RCL_CTX_CAPABLE, NULL);
	claimed = t.claimed[t.n - 1];
	print_message("%d destructor shrinks; backlog %lu, the next call "
		      "claimed %lu\n", late_calls, before, claimed);
	assert_true(late_calls >= 1);
	assert_true(claimed + 1 >= before && claimed <= before + 1);
	assert_int_equal(pthread_key_delete(late_key), 0);
	assert_int_equal(rcl_shrinker_free(late_s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/*
 * Work a context refused is real backlog: it goes to the shared word, where
 * any later capable call, from any thread, claims it.
 */
static void test_shrinker_refused_work_is_shared(void **state)
{
	struct sb_trace t = { 0 };
	struct rcl_shrinker_registry *reg = sb_registry(&t);
	struct model m = { .objects = SB_F };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);

	(void)state;
	m.need = RCL_CTX_MAY_IO;
	shrink(s, SB_PRIO, RCL_CTX_MAY_BLOCK, NULL);	/* refused: 312.5 */
	assert_int_equal(m.scanned_total, 0);
	assert_int_equal(backlog(s, 0), 312);
	/* A capable call in another thread claims all of it. */
	sb_call_in_thread(s, SB_PRIO, RCL_CTX_CAPABLE);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.claimed[1], 312);
	/* 312.5 + 312.5 = 625: 4 batches, 113 kept (on that thread's stripe). */
	assert_int_equal(m.scanned_total, 512);
	assert_int_equal(backlog(s, 0), 113);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* An empty count drops every thread's remainder, not only the caller's. */
static void test_shrinker_empty_drops_every_remainder(void **state)
{
	struct sb_trace t = { 0 };
	struct rcl_shrinker_registry *reg = sb_registry(&t);
	struct model m = { .objects = SB_F };
	struct rcl_shrinker *s = new_shrinker(reg, &m, 2, 0, 0);
	unsigned long b;

	(void)state;
	shrink(s, SB_PRIO, RCL_CTX_CAPABLE, NULL);	/* keeps 56.5 */
	sb_call_in_thread(s, SB_PRIO, RCL_CTX_CAPABLE);	/* keeps 56.5, exits */
	/* Refused: its 56.5, the exited thread's and 312.5, shared. */
	m.stop = true;
	shrink(s, SB_PRIO, RCL_CTX_CAPABLE, NULL);
	m.stop = false;
	assert_int_equal(t.claimed[2], 113);
	assert_int_equal(backlog(s, 0), 425);
	/* Another thread: 425.5 + 312.5 = 738, 5 batches, keeps 98. */
	sb_call_in_thread(s, SB_PRIO, RCL_CTX_CAPABLE);
	assert_int_equal(t.claimed[3], 425);
	assert_int_equal(backlog(s, 0), 98);
	m.objects = 0;		/* "cannot tell now": kept */
	shrink(s, SB_PRIO, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(backlog(s, 0), 98);
	m.objects = RCL_SHRINK_EMPTY;
	shrink(s, SB_PRIO, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(rcl_shrinker_backlog(s, 0, &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/*
 * fork() while another thread holds a remainder on its stripe: that thread
 * is not in the child, so its key destructor never gives the stripe up
 * there.  Its remainder was still counted by rcl_shrinker_backlog() but no
 * call in the child ever claimed it (a review's finding); the child's
 * handler orphans the stripe, so the child's next call takes it over, as
 * after an exit.
 */
static sem_t fh_held, fh_release;

static void *fh_hold_thread(void *arg)
{
	/* 312.5 -> scans 256, keeps 56.5 on this thread's stripe. */
	T_EQ(rcl_shrinker_shrink(arg, 0, SB_PRIO, RCL_CTX_CAPABLE, NULL), 0);
	sem_post(&fh_held);
	while (sem_wait(&fh_release) != 0)
		;
	return NULL;
}

static void test_shrinker_fork_child_claims_other_threads_remainders(void **state)
{
	struct sb_trace t = { 0 };
	struct rcl_shrinker_registry *reg = sb_registry(&t);
	struct rcl_shrinker_config cfg = { .ops = &sb_atomic_ops, .seeks = 2 };
	struct rcl_shrinker *s;
	unsigned long b;
	pthread_t h;
	pid_t pid;
	int st;

	(void)state;
	assert_int_equal(sem_init(&fh_held, 0, 0), 0);
	assert_int_equal(sem_init(&fh_release, 0, 0), 0);
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(pthread_create(&h, NULL, fh_hold_thread, s), 0);
	assert_int_equal(sem_wait(&fh_held), 0);
	assert_int_equal(backlog(s, 0), 56);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rcl_shrink_result res = { 0 };

		alarm(10);
		/* 56.5 taken over + 312.5 = 369: 2 batches, 113 kept. */
		T_EQ(rcl_shrinker_shrink(s, 0, SB_PRIO, RCL_CTX_CAPABLE, &res), 0);
		T_EQ(t.n, 2);
		T_EQ(t.claimed[1], 56);
		T_EQ(res.scanned, 256);
		T_EQ(rcl_shrinker_backlog(s, 0, &b), 0);
		T_EQ(b, 113);
		/* Its own 113 + 312.5 = 425.5: 3 batches, 41.5 kept. */
		res = (struct rcl_shrink_result){ 0 };
		T_EQ(rcl_shrinker_shrink(s, 0, SB_PRIO, RCL_CTX_CAPABLE, &res), 0);
		T_EQ(t.claimed[2], 113);
		T_EQ(res.scanned, 384);
		T_EQ(rcl_shrinker_backlog(s, 0, &b), 0);
		T_EQ(b, 41);
		T_EQ(rcl_shrinker_free(s), 0);
		T_EQ(rcl_shrinker_registry_free(reg), 0);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ASSERT_CHILD_EXITED_OK(st);
	/* The parent: the thread lives, its remainder stays its own. */
	shrink(s, SB_PRIO, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(t.claimed[1], 0);
	sem_post(&fh_release);
	assert_int_equal(pthread_join(h, NULL), 0);
	/* It exited: this thread's 56.5 and its 56.5. */
	shrink(s, SB_PRIO, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(t.claimed[2], 113);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	sem_destroy(&fh_held);
	sem_destroy(&fh_release);
}

/*
 * A partition-aware shrinker keeps a remainder per partition on each
 * stripe: a call at one partition does not claim another's.
 */
static void test_shrinker_remainder_per_partition(void **state)
{
	struct sb_trace t = { 0 };
	struct rcl_shrinker_registry_config rc = {
		.nr_partitions = 3,
		.trace = sb_trace_cb,
		.trace_arg = &t,
	};
	struct rcl_shrinker_registry *reg;
	struct model m = { .objects = SB_F };
	struct rcl_shrinker *s;

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
	s = new_shrinker(reg, &m, 2, 0, RCL_SHRINKER_PARTITION_AWARE);
	assert_int_equal(rcl_shrinker_shrink(s, 1, SB_PRIO, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(backlog(s, 0), 0);
	assert_int_equal(backlog(s, 1), 56);
	assert_int_equal(rcl_shrinker_shrink(s, 2, SB_PRIO, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(t.claimed[1], 0);
	assert_int_equal(backlog(s, 2), 56);
	assert_int_equal(rcl_shrinker_shrink(s, 1, SB_PRIO, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(t.claimed[2], 56);
	/* 56.5 + 312.5 = 369: 2 batches, 113 kept; partition 2 untouched. */
	assert_int_equal(backlog(s, 1), 113);
	assert_int_equal(backlog(s, 2), 56);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/*
 * More reclaiming threads than stripes: the threads beyond them share
 * stripes, and exits orphan and hand stripes on.  However the work was
 * split, scanned + backlog is the sum of every call's own pressure, and
 * freeing the shrinker with remainders on stripes leaks nothing (ASan).
 */
#define SB_THREADS 12
#define SB_CALLS 50

static pthread_barrier_t sb_all_alive;

static void *sb_many(void *arg)
{
	struct rcl_shrinker *s = arg;
	unsigned i;

	for (i = 0; i < SB_CALLS; i++) {
		assert_int_equal(rcl_shrinker_shrink(s, 0, SB_PRIO,
						     RCL_CTX_CAPABLE, NULL), 0);
		/* All alive at once: 4 of them (or more) share a stripe. */
		if (i == 0)
			pthread_barrier_wait(&sb_all_alive);
	}
	return NULL;
}

static void test_shrinker_more_threads_than_stripes(void **state)
{
	struct rcl_shrinker_registry *reg =
		new_registry(RCL_SHRINK_POLICY_DEFAULT, 1);
	struct rcl_shrinker_config cfg = {
		.ops = &sb_atomic_ops,
		.seeks = 2,
	};
	struct rcl_shrinker *s;
	struct rcl_shrinker_stats st;
	pthread_t th[SB_THREADS];
	unsigned i, round;
	unsigned long bl;

	(void)state;
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(pthread_barrier_init(&sb_all_alive, NULL, SB_THREADS), 0);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < SB_THREADS; i++)
			assert_int_equal(pthread_create(&th[i], NULL, sb_many, s), 0);
		for (i = 0; i < SB_THREADS; i++)
			assert_int_equal(pthread_join(th[i], NULL), 0);
	}
	pthread_barrier_destroy(&sb_all_alive);
	assert_int_equal(rcl_shrinker_stats(s, &st), 0);
	assert_int_equal(st.calls, 2 * SB_THREADS * SB_CALLS);
	assert_int_equal(rcl_shrinker_backlog(s, 0, &bl), 0);
	/* 312.5 per call; the backlog is rounded down to whole objects. */
	assert_true(st.scanned + bl <= st.calls * 625 / 2);
	assert_true(st.scanned + bl + 1 >= st.calls * 625 / 2);
	/* The exited threads' remainders are taken over by this thread. */
	shrink(s, 12, RCL_CTX_CAPABLE, NULL);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shrinker_modern_vectors),
		cmocka_unit_test(test_shrinker_free_from_callback_does_not_wait),
		cmocka_unit_test(test_shrinker_free_from_evict_callback_does_not_wait),
		cmocka_unit_test(test_shrinker_fork_child_frees_without_parent_pins),
		cmocka_unit_test(test_shrinker_fork_while_a_free_waits),
		cmocka_unit_test(test_shrinker_fork_child_claims_other_threads_remainders),
		cmocka_unit_test(test_shrinker_register_allocator_may_walk),
		cmocka_unit_test(test_shrinker_modern_stop_defers_then_drains),
		cmocka_unit_test(test_shrinker_nr_scanned_is_honoured),
		cmocka_unit_test(test_shrinker_no_progress_does_not_spin),
		cmocka_unit_test(test_shrinker_batch_sizes),
		cmocka_unit_test(test_shrinker_empty_is_not_zero),
		cmocka_unit_test(test_shrinker_2014_clamps_and_puts_back),
		cmocka_unit_test(test_shrinker_2014_sub_batch_when_tight),
		cmocka_unit_test(test_shrinker_small_cache_is_not_starved),
		cmocka_unit_test(test_shrinker_windup_first_capable_call),
		cmocka_unit_test(test_shrinker_default_damping_grid),
		cmocka_unit_test(test_shrinker_default_backlog_is_not_lost),
		cmocka_unit_test(test_shrinker_default_backlog_of_a_shrunk_cache),
		cmocka_unit_test(test_shrinker_default_tiny_cache_in_eighths),
		cmocka_unit_test(test_shrinker_partition_backlogs),
		cmocka_unit_test(test_shrinker_registry_walk_visits_registered_only),
		cmocka_unit_test(test_shrinker_bad_input),
		cmocka_unit_test(test_shrinker_free_from_own_callback_is_edeadlk),
		cmocka_unit_test(test_shrinker_trace_hook),
		cmocka_unit_test(test_shrinker_free_from_trace_refused),
		cmocka_unit_test(test_shrinker_debug_entry_points),
		cmocka_unit_test(test_shrinker_allocation_failures),
		cmocka_unit_test(test_shrinker_remainder_stays_with_its_thread),
		cmocka_unit_test(test_shrinker_refused_work_is_shared),
		cmocka_unit_test(test_shrinker_shrink_from_a_later_key_destructor),
		cmocka_unit_test(test_shrinker_empty_drops_every_remainder),
		cmocka_unit_test(test_shrinker_remainder_per_partition),
		cmocka_unit_test(test_shrinker_more_threads_than_stripes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
