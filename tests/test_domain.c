/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of memory domains (domain.h): the watermark formula, the charge
 * path's transitions (nothing / wake the background reclaimer / direct
 * reclaim / -ENOMEM or overshoot), the bound on reclaim when nothing can be
 * reclaimed, the background reclaimer's hopeless state (it never spins),
 * budget resizing, attach and detach (errors, re-entry from callbacks, the
 * wait for passes), proportional scanning across lruvecs, shrinkers in
 * reclaim passes, the counters and their text form, and the lifecycle.
 *
 * Deterministic: every domain with a background reclaimer runs on a fake
 * clock, and the tests synchronise with the reclaimer thread by polling its
 * counters and the fake clock's waiters (wait_idle()), never by sleeping.
 * The caches are real: objects embed a node, are charged when inserted, and
 * the evict callback uncharges them and answers FREED (or BUSY when a test
 * makes them unreclaimable).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "lru_check.h"
#include "test_util.h"

/* The weight of one cached object. */
#define W 100u
/* Bound on polling loops (sched_yield() each): far beyond any real wait. */
#define SPIN_MAX 20000000ul

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------- */

static struct rcl_vmstat vmstat(const struct rcl_domain *d)
{
	struct rcl_vmstat v;

	assert_int_equal(rcl_domain_vmstat(d, &v), 0);
	return v;
}

static struct rcl_watermarks wmarks(const struct rcl_domain *d)
{
	struct rcl_watermarks wm;

	assert_int_equal(rcl_domain_watermarks(d, &wm), 0);
	return wm;
}

static uint64_t headroom(const struct rcl_domain *d)
{
	uint64_t b = rcl_domain_budget(d), u = rcl_domain_usage(d);

	return b > u ? b - u : 0;
}

static struct rcl_fake_clock *fclock_new(void)
{
	struct rcl_fake_clock *fc = NULL;

	assert_int_equal(rcl_fake_clock_new(0, &fc), 0);
	assert_non_null(fc);
	return fc;
}

static struct rcl_domain *dom_new_cfg(struct rcl_domain_config *cfg)
{
	struct rcl_domain *d = NULL;

	assert_int_equal(rcl_domain_new(cfg, &d), 0);
	assert_non_null(d);
	return d;
}

static struct rcl_domain *dom_new(uint64_t budget, enum rcl_charge_mode mode,
				  struct rcl_fake_clock *fc)
{
	struct rcl_domain_config cfg = {
		.budget = budget,
		.mode = mode,
		.clock = fc ? rcl_fake_clock_clock(fc) : NULL,
	};

	return dom_new_cfg(&cfg);
}

/*
 * Wait until the background reclaimer sleeps with no wakeup pending: it is
 * the clock's only waiter and has run once per counted wakeup.  The counters
 * are read before the waiters: a run counted in that read started after the
 * wait it left, so a waiter seen afterwards is a new wait.
 */
static void wait_idle(struct rcl_domain *d, struct rcl_fake_clock *fc)
{
	unsigned long i;

	for (i = 0; i < SPIN_MAX; i++) {
		struct rcl_vmstat v = vmstat(d);

		if (v.pageoutrun == v.kswapd_wakeups &&
		    rcl_fake_clock_waiters(fc) == 1)
			return;
		sched_yield();
	}
	fail_msg("the background reclaimer did not go idle");
}

/* ------------------------------------------------------------------------- */
/* A test cache                                                               */
/* ------------------------------------------------------------------------- */

struct tcache;

struct tobj {
	struct rcl_lru_node lru;
	struct tcache *c;
	uint32_t weight;
	atomic_bool cached;
};

enum evict_mode { EV_FREE, EV_BUSY, EV_ACTIVATE };

typedef void (*evict_hook_fn)(struct tcache *c, struct tobj *o,
			      struct rcl_evict_control *ctl);

struct tcache {
	struct rcl_lruvec lv;
	struct rcl_domain *d;
	struct tobj *objs;
	unsigned n;		/* capacity */
	unsigned next;		/* objects inserted so far (test thread) */
	atomic_int mode;
	atomic_ulong calls, evicted, busy;
	_Atomic(evict_hook_fn) hook;
};

static enum rcl_evict_status tc_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct tobj *o = rcl_container_of(node, struct tobj, lru);
	struct tcache *c = ctl->priv;
	evict_hook_fn hook = atomic_load(&c->hook);

	T_PEQ(o->c, c);
	T_PEQ(ctl->lruvec, &c->lv);
	T_EQ(ctl->weight, o->weight);
	T_CHECK(atomic_load(&o->cached));
	T_CHECK(ctl->priority >= 0 && ctl->priority <= RCL_DEF_PRIORITY);
	atomic_fetch_add(&c->calls, 1);
	if (hook)
		hook(c, o, ctl);
	if (atomic_load(&c->mode) == EV_BUSY) {
		atomic_fetch_add(&c->busy, 1);
		return RCL_EVICT_BUSY;
	}
	if (atomic_load(&c->mode) == EV_ACTIVATE)
		return RCL_EVICT_ACTIVATE;
	atomic_store(&o->cached, false);
	T_EQ(rcl_domain_uncharge(c->d, ctl->weight), 0);
	atomic_fetch_add(&c->evicted, 1);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops tc_ops = { .evict = tc_evict };

/* A cache of @n objects of weight @w, attached to @d's @partition if @d. */
static void tc_init(struct tcache *c, struct rcl_domain *d, unsigned n,
		    uint32_t w, unsigned partition)
{
	struct rcl_lruvec_config cfg = { .ops = &tc_ops, .priv = c };
	unsigned i;

	memset(c, 0, sizeof(*c));
	c->d = d;
	c->n = n;
	c->objs = calloc(n ? n : 1, sizeof(*c->objs));
	assert_non_null(c->objs);
	for (i = 0; i < n; i++) {
		c->objs[i].c = c;
		c->objs[i].weight = w;
	}
	assert_int_equal(rcl_lruvec_init(&c->lv, &cfg), 0);
	if (d)
		assert_int_equal(rcl_domain_attach(d, &c->lv, partition), 0);
}

/* Charge the next object, then insert it (unbatched: counts are exact). */
static int tc_insert(struct tcache *c, uint64_t ctx, unsigned flags)
{
	struct tobj *o;
	int err;

	assert_true(c->next < c->n);
	o = &c->objs[c->next];
	err = rcl_domain_charge(c->d, o->weight, ctx, NULL);
	if (err)
		return err;
	rcl_lru_node_init(&o->lru);
	atomic_store(&o->cached, true);
	assert_int_equal(rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE, o->weight,
					flags | RCL_LRU_ADD_NOBATCH),
			 0);
	c->next++;
	return 0;
}

static void tc_fill(struct tcache *c, unsigned upto, uint64_t ctx,
		    unsigned flags)
{
	while (c->next < upto)
		assert_int_equal(tc_insert(c, ctx, flags), 0);
}

static unsigned tc_cached(struct tcache *c)
{
	unsigned i, n = 0;

	for (i = 0; i < c->next; i++)
		n += atomic_load(&c->objs[i].cached);
	return n;
}

static uint64_t tc_cached_weight(struct tcache *c)
{
	uint64_t w = 0;
	unsigned i;

	for (i = 0; i < c->next; i++)
		if (atomic_load(&c->objs[i].cached))
			w += c->objs[i].weight;
	return w;
}

static uint64_t tc_scanned(struct tcache *c)
{
	struct rcl_lruvec_type_stats st;

	assert_int_equal(rcl_lruvec_stats(&c->lv, RCL_LRU_FILE, &st), 0);
	return st.scanned;
}

/* Lists consistent with the objects still cached; nothing isolated. */
static void tc_check(struct tcache *c)
{
	assert_int_equal(lru_check_invariants(&c->lv), tc_cached(c));
	assert_int_equal(rcl_lruvec_nr_isolated(&c->lv), 0);
}

/* Delete and uncharge what is left, detach (if attached) and destroy. */
static void tc_destroy(struct tcache *c, bool attached)
{
	unsigned i;

	tc_check(c);
	for (i = 0; i < c->next; i++) {
		struct tobj *o = &c->objs[i];

		if (!atomic_load(&o->cached))
			continue;
		assert_int_equal(rcl_lruvec_del(&c->lv, &o->lru), 0);
		atomic_store(&o->cached, false);
		if (c->d)
			assert_int_equal(rcl_domain_uncharge(c->d, o->weight), 0);
	}
	if (attached)
		assert_int_equal(rcl_domain_detach(c->d, &c->lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&c->lv), 0);
	free(c->objs);
	c->objs = NULL;
}

static void dom_free(struct rcl_domain *d, struct rcl_fake_clock *fc)
{
	assert_int_equal(rcl_domain_free(d), 0);
	if (fc) {
		assert_int_equal(rcl_fake_clock_waiters(fc), 0);
		rcl_fake_clock_free(fc);
	}
}

/* ------------------------------------------------------------------------- */
/* 1. Watermarks                                                              */
/* ------------------------------------------------------------------------- */

/* The formula of domain.h, in the test's own arithmetic. */
static void doc_watermarks(uint64_t budget, unsigned scale,
			   struct rcl_watermarks *wm)
{
	uint64_t min = budget / 1024;
	uint64_t frac = budget * scale / 10000;	/* < 2^64 in these tests */
	uint64_t gap = min / 4 > frac ? min / 4 : frac;

	wm->min = min;
	wm->low = min + gap;
	wm->high = min + 2 * gap;
}

static void assert_wm(const struct rcl_domain *d, uint64_t min, uint64_t low,
		      uint64_t high)
{
	struct rcl_watermarks wm = wmarks(d);

	assert_int_equal(wm.min, min);
	assert_int_equal(wm.low, low);
	assert_int_equal(wm.high, high);
}

static void test_domain_watermarks_default_formula(void **state)
{
	struct rcl_domain_config cfg = { 0 };
	struct rcl_domain *d;

	(void)state;
	/*
	 * 64 MiB: min = 67108864 / 1024 = 65536; gap = max(65536 / 4 = 16384,
	 * 67108864 * 100 / 10000 = 671088) = 671088; low = 736624;
	 * high = 65536 + 1342176 = 1407712.
	 */
	d = dom_new(64ull << 20, RCL_CHARGE_STRICT, NULL);
	assert_wm(d, 65536, 736624, 1407712);
	assert_int_equal(rcl_domain_free(d), 0);

	/*
	 * 100000 (the budget of most tests below): min = 97; gap = max(24,
	 * 1000) = 1000; low = 1097; high = 2097.
	 */
	d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	assert_wm(d, 97, 1097, 2097);
	assert_int_equal(rcl_domain_free(d), 0);

	/*
	 * A tiny budget, 1000: min = 1000 / 1024 = 0; gap = max(0, 10) = 10;
	 * low = 10; high = 20.
	 */
	d = dom_new(1000, RCL_CHARGE_STRICT, NULL);
	assert_wm(d, 0, 10, 20);
	assert_int_equal(rcl_domain_free(d), 0);

	/*
	 * Scale factor 1 makes min / 4 the larger term.  1 GiB: min = 1048576;
	 * gap = max(262144, 1073741824 / 10000 = 107374) = 262144;
	 * low = 1310720; high = 1572864.
	 */
	cfg.budget = 1ull << 30;
	cfg.watermark_scale_factor = 1;
	d = dom_new_cfg(&cfg);
	assert_wm(d, 1048576, 1310720, 1572864);
	assert_int_equal(rcl_domain_free(d), 0);

	/*
	 * Scale factor 250 (2.5 %), budget 1000000: min = 976; gap =
	 * max(244, 25000) = 25000; low = 25976; high = 50976.
	 */
	cfg.budget = 1000000;
	cfg.watermark_scale_factor = 250;
	d = dom_new_cfg(&cfg);
	assert_wm(d, 976, 25976, 50976);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * Budgets near 2^64 with large scale factors: min + 2 x gap used to wrap
 * around 64 bits and skip the fallback, leaving min > low or low > high.
 * Every level stays ordered and within the budget, for a root and for a
 * child without a limit (budget 0: no limit, UINT64_MAX).
 */
static void test_domain_watermarks_huge_budgets(void **state)
{
	static const uint64_t budgets[] = {
		UINT64_MAX, UINT64_MAX / 4 * 3, 1ull << 63, 1ull << 60,
		UINT64_MAX / 10000 + 1,
	};
	static const unsigned scales[] = { 1, 10, 1000, 3000, 5000, 6000,
					   9999, 10000 };
	size_t b, s;

	(void)state;
	for (b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
		for (s = 0; s < sizeof(scales) / sizeof(scales[0]); s++) {
			struct rcl_domain_config cfg = {
				.budget = budgets[b],
				.watermark_scale_factor = scales[s],
			};
			struct rcl_domain *d = dom_new_cfg(&cfg), *c;
			struct rcl_domain_config cc = {
				.parent = d,
				.watermark_scale_factor = scales[s],
			};
			struct rcl_watermarks wm = wmarks(d);

			if (!(wm.min < wm.low && wm.low < wm.high &&
			      wm.high <= budgets[b]))
				fail_msg("budget %llu scale %u: unordered %llu/%llu/%llu",
					 (unsigned long long)budgets[b], scales[s],
					 (unsigned long long)wm.min,
					 (unsigned long long)wm.low,
					 (unsigned long long)wm.high);
			assert_int_equal(rcl_domain_new(&cc, &c), 0);
			wm = wmarks(c);
			if (!(wm.min < wm.low && wm.low < wm.high))
				fail_msg("child, scale %u: unordered %llu/%llu/%llu",
					 scales[s], (unsigned long long)wm.min,
					 (unsigned long long)wm.low,
					 (unsigned long long)wm.high);
			assert_int_equal(rcl_domain_free(c), 0);
			assert_int_equal(rcl_domain_free(d), 0);
		}
	}
}

/*
 * A sweep: wherever the documented formula gives ordered watermarks (min <
 * low < high <= budget) the domain has exactly those; and the domain's
 * watermarks are always ordered, as rcl_domain_set_watermarks() requires of
 * any watermarks (for budgets of at least 2: three distinct levels need it).
 */
static void test_domain_watermarks_sweep(void **state)
{
	static const unsigned scales[] = { 1, 10, 100, 1000, 3000 };
	uint64_t b;
	size_t s;

	(void)state;
	for (s = 0; s < sizeof(scales) / sizeof(scales[0]); s++) {
		for (b = 2; b < (1ull << 40); b = b < 4096 ? b + 1 : b * 3 + 7) {
			struct rcl_domain_config cfg = {
				.budget = b,
				.watermark_scale_factor = scales[s],
			};
			struct rcl_domain *d = dom_new_cfg(&cfg);
			struct rcl_watermarks doc, wm = wmarks(d);

			doc_watermarks(b, scales[s], &doc);
			if (doc.min < doc.low && doc.low < doc.high &&
			    doc.high <= b) {
				if (wm.min != doc.min || wm.low != doc.low ||
				    wm.high != doc.high)
					fail_msg("budget %llu scale %u: %llu/%llu/%llu, "
						 "documented %llu/%llu/%llu",
						 (unsigned long long)b, scales[s],
						 (unsigned long long)wm.min,
						 (unsigned long long)wm.low,
						 (unsigned long long)wm.high,
						 (unsigned long long)doc.min,
						 (unsigned long long)doc.low,
						 (unsigned long long)doc.high);
			}
			if (!(wm.min < wm.low && wm.low < wm.high &&
			      wm.high <= b))
				fail_msg("budget %llu scale %u: unordered %llu/%llu/%llu",
					 (unsigned long long)b, scales[s],
					 (unsigned long long)wm.min,
					 (unsigned long long)wm.low,
					 (unsigned long long)wm.high);
			assert_int_equal(rcl_domain_free(d), 0);
		}
	}
}

static void test_domain_set_budget_recomputes_watermarks(void **state)
{
	struct rcl_domain_config cfg = { .budget = 64ull << 20 };
	struct rcl_watermarks wm = { 10, 20, 30 };
	struct rcl_domain *d = dom_new_cfg(&cfg);

	(void)state;
	assert_int_equal(rcl_domain_set_budget(d, 100000), 0);
	assert_int_equal(rcl_domain_budget(d), 100000);
	assert_wm(d, 97, 1097, 2097);		/* as computed above */
	assert_int_equal(rcl_domain_set_budget(d, 1000), 0);
	assert_wm(d, 0, 10, 20);
	/* Explicit watermarks hold until the next set_budget(). */
	assert_int_equal(rcl_domain_set_watermarks(d, &wm), 0);
	assert_wm(d, 10, 20, 30);
	assert_int_equal(rcl_domain_set_budget(d, 1000), 0);
	assert_wm(d, 0, 10, 20);
	assert_int_equal(rcl_domain_set_budget(d, 0), -EINVAL);
	assert_int_equal(rcl_domain_set_budget(NULL, 1000), -EINVAL);
	assert_int_equal(rcl_domain_budget(d), 1000);
	assert_int_equal(rcl_domain_free(d), 0);

	/* The configured scale factor is kept: 2 GiB at scale 1: min =
	 * 2097152, gap = max(524288, 214748) = 524288, low = 2621440, high =
	 * 3145728. */
	cfg.budget = 1ull << 30;
	cfg.watermark_scale_factor = 1;
	d = dom_new_cfg(&cfg);
	assert_int_equal(rcl_domain_set_budget(d, 2ull << 30), 0);
	assert_wm(d, 2097152, 2621440, 3145728);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_domain_set_watermarks_validates_and_applies(void **state)
{
	static const struct rcl_watermarks bad[] = {
		{ 10, 10, 30 },		/* min == low */
		{ 20, 10, 30 },		/* min > low */
		{ 10, 30, 30 },		/* low == high */
		{ 10, 40, 30 },		/* low > high */
		{ 10, 20, 100001 },	/* high > budget */
		{ 0, 0, 0 },
	};
	struct rcl_watermarks wm = { 50000, 60000, 100000 }; /* high == budget */
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rcl_domain_set_watermarks(d, &bad[i]), -EINVAL);
	assert_wm(d, 97, 1097, 2097);		/* unchanged */
	assert_int_equal(rcl_domain_set_watermarks(NULL, &wm), -EINVAL);
	assert_int_equal(rcl_domain_set_watermarks(d, NULL), -EINVAL);

	/* With the default min (97) a charge to 60000 is far from min. */
	assert_int_equal(rcl_domain_charge(d, 60000, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(vmstat(d).allocstall, 0);
	assert_int_equal(rcl_domain_set_watermarks(d, &wm), 0);
	assert_wm(d, 50000, 60000, 100000);
	/* Now the same charge leaves headroom (30000) below min: the caller
	 * reclaims (nothing is attached, so it frees nothing: two sweeps). */
	assert_int_equal(rcl_domain_charge(d, 10000, RCL_CTX_CAPABLE, NULL), 0);
	assert_true(vmstat(d).allocstall >= 1 && vmstat(d).allocstall <= 2);
	assert_int_equal(rcl_domain_usage(d), 70000);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* 2. The charge path with a real cache                                       */
/* ------------------------------------------------------------------------- */

/*
 * Budget 100000, watermarks 97 / 1097 / 2097, objects of 100: 989 objects
 * leave 1100 of headroom (above low), the 990th leaves 1000 (below low,
 * above min); 999 leave 100 (above min), the 1000th leaves 0 (below min).
 */
static void test_domain_charge_above_low_then_below_low(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, fc);
	struct rcl_watermarks wm = wmarks(d);
	struct tcache c;
	struct rcl_vmstat v;
	unsigned evicted;

	(void)state;
	tc_init(&c, d, 1200, W, 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);

	/* (a) Headroom stays above low: nothing happens. */
	tc_fill(&c, 989, RCL_CTX_CAPABLE, 0);
	assert_int_equal(headroom(d), 1100);
	assert_true(headroom(d) >= wm.low);
	v = vmstat(d);
	assert_int_equal(v.kswapd_wakeups, 0);
	assert_int_equal(v.pageoutrun, 0);
	assert_int_equal(v.allocstall, 0);
	assert_int_equal(v.pgscan_kswapd + v.pgscan_direct, 0);
	assert_int_equal(atomic_load(&c.calls), 0);

	/* (b) The 990th object leaves 1000 < low: one wakeup... */
	assert_int_equal(tc_insert(&c, RCL_CTX_CAPABLE, 0), 0);
	assert_int_equal(vmstat(d).kswapd_wakeups, 1);
	/* ...and the reclaimer works until headroom >= high, then sleeps. */
	wait_idle(d, fc);
	v = vmstat(d);
	evicted = (unsigned)atomic_load(&c.evicted);
	assert_int_equal(v.kswapd_wakeups, 1);
	assert_int_equal(v.pageoutrun, 1);
	assert_int_equal(v.kswapd_failures, 0);
	assert_int_equal(v.kswapd_hopeless, 0);
	assert_int_equal(v.allocstall, 0);
	assert_int_equal(v.pgsteal_direct, 0);
	assert_int_equal(v.pgsteal_kswapd, evicted);
	assert_true(v.pgscan_kswapd >= v.pgsteal_kswapd);
	assert_true(headroom(d) >= wm.high);
	/*
	 * Not much more: a pass starts only below high, and frees at most its
	 * goal plus one chunk per list (scan.h); a goal is at most 32 objects
	 * here (max(deficit / 100, 32), the deficit being below high = 2097).
	 */
	assert_true(headroom(d) < wm.high + 2 * RCL_SCAN_CHUNK * W);
	assert_int_equal(rcl_domain_usage(d), tc_cached_weight(&c));
	assert_int_equal(tc_cached(&c), 990 - evicted);
	tc_check(&c);

	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_usage(d), 0);
	dom_free(d, fc);
}

static void test_domain_charge_below_min_reclaims_directly(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct rcl_watermarks wm = wmarks(d);
	struct tcache c;
	struct rcl_vmstat v;

	(void)state;
	tc_init(&c, d, 1200, W, 0);
	tc_fill(&c, 999, RCL_CTX_CAPABLE, 0);
	assert_int_equal(headroom(d), 100);
	assert_int_equal(vmstat(d).allocstall, 0);

	/* (c) No background reclaimer: the 1000th charge (headroom 0 < min)
	 * reclaims in the caller, and is then admitted. */
	assert_int_equal(tc_insert(&c, RCL_CTX_CAPABLE, 0), 0);
	v = vmstat(d);
	assert_int_equal(v.allocstall, 1);
	assert_true(v.pgsteal_direct > 0);
	assert_int_equal(v.pgsteal_direct, atomic_load(&c.evicted));
	assert_true(v.pgscan_direct >= v.pgsteal_direct);
	assert_int_equal(v.pgscan_kswapd, 0);
	assert_int_equal(v.kswapd_wakeups, 0);	/* none is running */
	assert_int_equal(v.charge_failures, 0);
	assert_true(headroom(d) >= wm.min);
	assert_true(atomic_load(&c.evicted) < 100);	/* not the whole cache */
	assert_int_equal(rcl_domain_usage(d), tc_cached_weight(&c));
	tc_check(&c);

	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * A soft charge whose sum with the usage would wrap 64 bits fails with
 * -EOVERFLOW before anything is reclaimed (domain.h): it used to reclaim
 * toward a deficit of 2^64 - 1, evicting the whole cache, and then either
 * fail or, with the cache gone, admit a charge of almost 2^64.
 */
static void test_domain_soft_overflow_reclaims_nothing(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_SOFT, NULL);
	struct tcache c;

	(void)state;
	tc_init(&c, d, 100, W, 0);
	tc_fill(&c, 100, RCL_CTX_CAPABLE, 0);
	assert_int_equal(rcl_domain_charge(d, UINT64_MAX - rcl_domain_usage(d) + 1,
					   RCL_CTX_CAPABLE, NULL),
			 -EOVERFLOW);
	assert_int_equal(atomic_load(&c.evicted), 0);
	assert_int_equal(vmstat(d).allocstall, 0);
	assert_int_equal(tc_cached(&c), 100);
	assert_int_equal(rcl_domain_usage(d), tc_cached_weight(&c));
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_domain_charge_without_may_block_does_not_reclaim(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct tcache c;
	struct rcl_vmstat v;

	(void)state;
	tc_init(&c, d, 1200, W, 0);
	tc_fill(&c, 999, RCL_CTX_CAPABLE, 0);
	/* (d) Headroom 0 < min, but the context may not block. */
	assert_int_equal(tc_insert(&c, RCL_CTX_MAY_IO | RCL_CTX_USER(0), 0), 0);
	assert_int_equal(headroom(d), 0);
	v = vmstat(d);
	assert_int_equal(v.allocstall, 0);
	assert_int_equal(v.pgscan_direct, 0);
	assert_int_equal(atomic_load(&c.calls), 0);
	/* Over budget: refused (strict), still without reclaim. */
	assert_int_equal(tc_insert(&c, 0, 0), -ENOMEM);
	v = vmstat(d);
	assert_int_equal(v.allocstall, 0);
	assert_int_equal(v.charge_failures, 1);
	assert_int_equal(rcl_domain_usage(d), 100000);
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * (e) A charge much larger than one object.  990 objects of 100 are cached
 * (usage 99000) and all reclaimable; a charge of 80000 would leave usage at
 * 179000.  The caller may block, so it reclaims: evicting 791 of the 990
 * objects brings headroom back to min (97), so the charge must be admitted
 * with headroom >= min (domain.h: -ENOMEM only "if the charge would leave
 * usage above the budget even after reclaim"; up to 16 sweeps from priority
 * 12 to 0, each of which can free the whole cache).
 */
static void test_domain_charge_far_over_budget_reclaims_enough(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct rcl_watermarks wm = wmarks(d);
	struct tcache c;
	struct rcl_vmstat v;
	uint64_t room, usage, cached;
	int err;

	(void)state;
	tc_init(&c, d, 1200, W, 0);
	tc_fill(&c, 990, RCL_CTX_CAPABLE, 0);
	err = rcl_domain_charge(d, 80000, RCL_CTX_CAPABLE, NULL);
	v = vmstat(d);
	room = headroom(d);
	usage = rcl_domain_usage(d);
	cached = tc_cached_weight(&c);
	print_message("charge of 80000 over 99000: %d, evicted %lu, allocstall "
		      "%llu, usage %llu\n", err, atomic_load(&c.evicted),
		      (unsigned long long)v.allocstall,
		      (unsigned long long)usage);
	/* Clean up first, so that a failure leaks nothing. */
	if (err == 0)
		assert_int_equal(rcl_domain_uncharge(d, 80000), 0);
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);

	assert_true(v.allocstall >= 1);
	assert_int_equal(err, 0);
	assert_true(room >= wm.min);
	assert_int_equal(usage, cached + 80000);
}

/* ------------------------------------------------------------------------- */
/* 3. Strict and soft mode, nothing reclaimable                               */
/* ------------------------------------------------------------------------- */

static void strict_or_soft(enum rcl_charge_mode mode)
{
	struct rcl_domain *d = dom_new(100000, mode, NULL);
	struct tcache c;
	struct rcl_vmstat v;
	uint64_t over = 12345;

	/* 500 objects that are always busy, plus 49000 charged elsewhere. */
	tc_init(&c, d, 500, W, 0);
	atomic_store(&c.mode, EV_BUSY);
	tc_fill(&c, 500, RCL_CTX_CAPABLE, 0);
	assert_int_equal(rcl_domain_charge(d, 49000, RCL_CTX_CAPABLE, &over), 0);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_usage(d), 99000);

	if (mode == RCL_CHARGE_STRICT) {
		over = 12345;
		assert_int_equal(rcl_domain_charge(d, 2000, RCL_CTX_CAPABLE, &over),
				 -ENOMEM);
		assert_int_equal(over, 0);
		assert_int_equal(rcl_domain_usage(d), 99000);	/* nothing charged */
		v = vmstat(d);
		assert_int_equal(v.charge_failures, 1);
		assert_int_equal(v.charge_overshoots, 0);
		assert_true(atomic_load(&c.busy) > 0);		/* it tried */
		assert_int_equal(atomic_load(&c.evicted), 0);
	} else {
		assert_int_equal(rcl_domain_charge(d, 2000, RCL_CTX_CAPABLE, &over),
				 0);
		assert_int_equal(over, 1000);			/* 101000 - 100000 */
		assert_int_equal(rcl_domain_usage(d), 101000);
		assert_int_equal(rcl_domain_charge(d, 500, 0, &over), 0);
		assert_int_equal(over, 1500);
		assert_int_equal(rcl_domain_charge(d, 1, 0, NULL), 0);
		v = vmstat(d);
		assert_int_equal(v.charge_failures, 0);
		assert_int_equal(v.charge_overshoots, 3);
		assert_true(atomic_load(&c.busy) > 0);
		/* Back under budget: no overshoot. */
		assert_int_equal(rcl_domain_uncharge(d, 2501), 0);
		over = 12345;
		assert_int_equal(rcl_domain_charge(d, 100, 0, &over), 0);
		assert_int_equal(over, 0);
		assert_int_equal(vmstat(d).charge_overshoots, 3);
		assert_int_equal(rcl_domain_uncharge(d, 100), 0);
	}
	assert_int_equal(rcl_domain_uncharge(d, 49000), 0);
	assert_int_equal(rcl_domain_usage(d), 50000);
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_domain_strict_refuses(void **state)
{
	(void)state;
	strict_or_soft(RCL_CHARGE_STRICT);
}

static void test_domain_soft_reports_overshoot(void **state)
{
	(void)state;
	strict_or_soft(RCL_CHARGE_SOFT);
}

/*
 * A charge so large that usage + amount does not fit in 64 bits is still a
 * charge far above the budget: strict mode refuses it and charges nothing.
 */
static void test_domain_strict_refuses_huge_charge(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	uint64_t usage, usage2, failures;
	int err, err2;

	(void)state;
	assert_int_equal(rcl_domain_charge(d, 1000, 0, NULL), 0);
	err = rcl_domain_charge(d, UINT64_MAX - 500, RCL_CTX_CAPABLE, NULL);
	usage = rcl_domain_usage(d);
	failures = vmstat(d).charge_failures;
	print_message("charge of 2^64 - 501 over 1000: %d, usage %llu\n", err,
		      (unsigned long long)usage);
	err2 = rcl_domain_charge(d, UINT64_MAX, 0, NULL);
	usage2 = rcl_domain_usage(d);
	assert_int_equal(rcl_domain_free(d), 0);

	assert_int_equal(err, -ENOMEM);
	assert_int_equal(usage, 1000);
	assert_int_equal(failures, 1);
	assert_int_equal(err2, -ENOMEM);
	assert_int_equal(usage2, 1000);
}

/* ------------------------------------------------------------------------- */
/* 4. Nothing reclaimable: the charge path is bounded                         */
/* ------------------------------------------------------------------------- */

/*
 * domain.h: direct reclaim is "up to 16 sweeps from priority 12 to 0; when
 * one frees nothing, the pending adds of every thread are drained to the
 * lists, and it stops at the next sweep that frees nothing while no other
 * reclaimer holds objects isolated".  With nothing reclaimable (and no other
 * reclaimer) that is at most 2 sweeps per charge.
 */
#define MAX_SWEEPS_NOTHING_FREED 2
#define MAX_SWEEPS 16

static void bounded_charges(struct rcl_domain *d, unsigned n, uint64_t amount,
			    uint64_t max_sweeps)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		uint64_t before = vmstat(d).allocstall, usage = rcl_domain_usage(d);
		uint64_t stalls;

		assert_int_equal(rcl_domain_charge(d, amount, RCL_CTX_CAPABLE, NULL),
				 -ENOMEM);
		stalls = vmstat(d).allocstall - before;
		assert_true(stalls >= 1 && stalls <= max_sweeps);
		assert_true(rcl_domain_usage(d) <= usage);
	}
}

static void test_domain_nothing_reclaimable_is_bounded(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct tcache busy, unev, none;
	struct rcl_vmstat v;

	(void)state;
	/* (i) Every object answers BUSY. */
	tc_init(&busy, d, 990, W, 0);
	atomic_store(&busy.mode, EV_BUSY);
	tc_fill(&busy, 990, RCL_CTX_CAPABLE, 0);
	bounded_charges(d, 10, 2000, MAX_SWEEPS_NOTHING_FREED);
	v = vmstat(d);
	assert_true(v.pgscan_direct > 0);
	assert_int_equal(v.pgsteal_direct, 0);
	assert_int_equal(v.charge_failures, 10);
	assert_int_equal(rcl_domain_usage(d), 99000);
	tc_destroy(&busy, true);

	/* (ii) Every object is unevictable: never even scanned. */
	tc_init(&unev, d, 990, W, 0);
	tc_fill(&unev, 990, RCL_CTX_CAPABLE, RCL_LRU_ADD_UNEVICTABLE);
	bounded_charges(d, 10, 2000, MAX_SWEEPS_NOTHING_FREED);
	v = vmstat(d);
	assert_int_equal(atomic_load(&unev.calls), 0);
	assert_int_equal(v.charge_failures, 20);
	assert_int_equal(rcl_domain_usage(d), 99000);
	tc_destroy(&unev, true);

	/* (iii) Nothing attached at all. */
	assert_int_equal(rcl_domain_charge(d, 99000, 0, NULL), 0);
	bounded_charges(d, 10, 2000, MAX_SWEEPS_NOTHING_FREED);
	assert_int_equal(rcl_domain_uncharge(d, 99000), 0);

	/* (iv) A charge larger than the whole budget can never fit: refused
	 * at once, without evicting anything for it, and nothing is charged. */
	tc_init(&none, d, 990, W, 0);
	tc_fill(&none, 990, RCL_CTX_CAPABLE, 0);
	v = vmstat(d);
	assert_int_equal(rcl_domain_charge(d, 200000, RCL_CTX_CAPABLE, NULL),
			 -ENOMEM);
	assert_int_equal(vmstat(d).allocstall, v.allocstall);
	assert_int_equal(vmstat(d).pgsteal_direct, v.pgsteal_direct);
	assert_int_equal(rcl_domain_usage(d), tc_cached_weight(&none));
	assert_int_equal(vmstat(d).charge_failures, 31);
	tc_destroy(&none, true);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* 5. The background reclaimer never spins                                    */
/* ------------------------------------------------------------------------- */

/*
 * A domain of budget 100000 whose 900 cached objects (90000) are all busy;
 * headroom 10000, above low.  The reclaimer is started and idle.
 */
struct hopeless_env {
	struct rcl_fake_clock *fc;
	struct rcl_domain *d;
	struct tcache c;
};

static void hopeless_setup(struct hopeless_env *e)
{
	e->fc = fclock_new();
	e->d = dom_new(100000, RCL_CHARGE_STRICT, e->fc);
	tc_init(&e->c, e->d, 1000, W, 0);
	atomic_store(&e->c.mode, EV_BUSY);
	tc_fill(&e->c, 900, RCL_CTX_CAPABLE, 0);
	assert_int_equal(rcl_domain_reclaimer_start(e->d), 0);
	wait_idle(e->d, e->fc);
}

static void hopeless_teardown(struct hopeless_env *e)
{
	assert_int_equal(rcl_domain_reclaimer_stop(e->d), 0);
	atomic_store(&e->c.mode, EV_FREE);
	tc_destroy(&e->c, true);
	assert_int_equal(rcl_domain_usage(e->d), 0);
	dom_free(e->d, e->fc);
}

/* One charge that leaves headroom 1000 (below low 1097, above min 97),
 * held until the reclaimer is idle again; 100 ms of fake time pass. */
static void pressure_once(struct hopeless_env *e)
{
	uint64_t amount = rcl_domain_budget(e->d) - rcl_domain_usage(e->d) - 1000;

	assert_int_equal(rcl_domain_charge(e->d, amount, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(headroom(e->d), 1000);
	wait_idle(e->d, e->fc);
	assert_int_equal(rcl_domain_uncharge(e->d, amount), 0);
	rcl_fake_clock_advance(e->fc, 100 * RCL_NSEC_PER_MSEC);
}

static void test_domain_reclaimer_never_spins(void **state)
{
	struct hopeless_env e;
	struct rcl_vmstat v;
	unsigned i;

	(void)state;
	hopeless_setup(&e);
	/* 1000 charges below low over 100 s of fake time. */
	for (i = 0; i < 1000; i++)
		pressure_once(&e);
	v = vmstat(e.d);
	print_message("after 100 s: pageoutrun %llu, wakeups %llu, failures %llu, "
		      "hopeless %llu, pgscan %llu\n",
		      (unsigned long long)v.pageoutrun,
		      (unsigned long long)v.kswapd_wakeups,
		      (unsigned long long)v.kswapd_failures,
		      (unsigned long long)v.kswapd_hopeless,
		      (unsigned long long)v.pgscan_kswapd);
	assert_int_equal(v.pageoutrun, RCL_MAX_RECLAIM_RETRIES);
	assert_int_equal(v.kswapd_wakeups, RCL_MAX_RECLAIM_RETRIES);
	assert_int_equal(v.kswapd_failures, RCL_MAX_RECLAIM_RETRIES);
	assert_int_equal(v.kswapd_hopeless, 1);
	assert_true(v.pgscan_kswapd > 0);	/* each pass did try */
	assert_int_equal(v.pgsteal_kswapd, 0);
	assert_int_equal(v.allocstall, 0);

	/* Hopeless: a charge below low wakes nothing. */
	assert_int_equal(rcl_domain_charge(e.d, 9000, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(vmstat(e.d).kswapd_wakeups, RCL_MAX_RECLAIM_RETRIES);
	/* rcl_domain_wakeup() revives it: exactly one more run. */
	assert_int_equal(rcl_domain_wakeup(e.d), 0);
	wait_idle(e.d, e.fc);
	v = vmstat(e.d);
	assert_int_equal(v.pageoutrun, RCL_MAX_RECLAIM_RETRIES + 1);
	assert_int_equal(v.kswapd_wakeups, RCL_MAX_RECLAIM_RETRIES + 1);
	assert_int_equal(v.kswapd_failures, RCL_MAX_RECLAIM_RETRIES + 1);
	assert_int_equal(v.kswapd_hopeless, 1);
	assert_int_equal(rcl_domain_uncharge(e.d, 9000), 0);
	/* Revived: charges below low wake it again. */
	pressure_once(&e);
	assert_int_equal(vmstat(e.d).pageoutrun, RCL_MAX_RECLAIM_RETRIES + 2);
	tc_check(&e.c);
	hopeless_teardown(&e);
}

/*
 * A strict charge that is refused wakes the background reclaimer, as the
 * kernel's allocator slow path wakes kswapd (wake_all_kswapds()) before it
 * fails an allocation that may not block: a caller whose charges are all
 * refused waits for no other charge to wake it.  Only while the headroom is
 * below high (the reclaimer reclaims towards high, whatever the charge's
 * size), one wakeup per refusal at most, and none while hopeless.
 */
static void test_domain_refused_charge_wakes_reclaimer(void **state)
{
	struct hopeless_env e;
	struct rcl_watermarks wm;
	struct rcl_vmstat v;
	uint64_t amount, w, f;
	unsigned i;

	(void)state;
	hopeless_setup(&e);
	wm = wmarks(e.d);
	/* A run that frees nothing (all busy) leaves headroom 1000 < low
	 * and the reclaimer asleep. */
	amount = headroom(e.d) - 1000;
	assert_int_equal(rcl_domain_charge(e.d, amount, 0, NULL), 0);
	wait_idle(e.d, e.fc);
	v = vmstat(e.d);
	assert_int_equal(v.kswapd_wakeups, 1);
	assert_int_equal(v.kswapd_failures, 1);
	assert_int_equal(headroom(e.d), 1000);

	/* (a) Reclaimable now: a non-blocking charge of 1001 is refused, and
	 * wakes the reclaimer, once; it brings the headroom back to high. */
	atomic_store(&e.c.mode, EV_FREE);
	assert_int_equal(rcl_domain_charge(e.d, 1001, 0, NULL), -ENOMEM);
	v = vmstat(e.d);
	assert_int_equal(v.charge_failures, 1);
	assert_int_equal(v.allocstall, 0);
	assert_int_equal(v.kswapd_wakeups, 2);
	wait_idle(e.d, e.fc);
	assert_int_equal(vmstat(e.d).kswapd_wakeups, 2);
	assert_true(headroom(e.d) >= wm.high);
	assert_int_equal(rcl_domain_charge(e.d, 1001, 0, NULL), 0);
	assert_int_equal(rcl_domain_uncharge(e.d, 1001), 0);
	wait_idle(e.d, e.fc);

	/* (b) Headroom 1500, between low and high: a charge of 1600 that may
	 * not block is refused and wakes it too; then it fits. */
	w = headroom(e.d) - 1500;
	assert_int_equal(rcl_domain_charge(e.d, w, 0, NULL), 0);
	amount += w;
	w = vmstat(e.d).kswapd_wakeups;		/* 1500 is above low */
	assert_int_equal(rcl_domain_charge(e.d, 1600, 0, NULL), -ENOMEM);
	assert_int_equal(vmstat(e.d).kswapd_wakeups, w + 1);
	wait_idle(e.d, e.fc);
	assert_true(headroom(e.d) >= wm.high);
	assert_int_equal(rcl_domain_charge(e.d, 1600, 0, NULL), 0);
	assert_int_equal(rcl_domain_uncharge(e.d, 1600), 0);
	wait_idle(e.d, e.fc);

	/* (c) Headroom at or above high: the reclaimer would have nothing to
	 * do, so a refusal wakes nothing. */
	assert_true(headroom(e.d) >= wm.high);
	w = vmstat(e.d).kswapd_wakeups;
	f = vmstat(e.d).charge_failures;
	assert_int_equal(rcl_domain_charge(e.d, headroom(e.d) + 1, 0, NULL),
			 -ENOMEM);
	wait_idle(e.d, e.fc);
	v = vmstat(e.d);
	assert_int_equal(v.kswapd_wakeups, w);
	assert_int_equal(v.charge_failures, f + 1);

	/* (d) Nothing reclaimable, headroom 1000: refusals, blocking or not,
	 * wake it once each until it is hopeless, then never. */
	atomic_store(&e.c.mode, EV_BUSY);
	w = headroom(e.d) - 1000;
	assert_int_equal(rcl_domain_charge(e.d, w, 0, NULL), 0);
	amount += w;
	wait_idle(e.d, e.fc);
	v = vmstat(e.d);
	w = v.kswapd_wakeups;
	f = v.kswapd_failures;
	for (i = 0; i < 4 * RCL_MAX_RECLAIM_RETRIES; i++) {
		uint64_t before = vmstat(e.d).kswapd_wakeups;

		assert_int_equal(rcl_domain_charge(e.d, 1001,
						   i % 2 ? RCL_CTX_CAPABLE : 0,
						   NULL),
				 -ENOMEM);
		assert_true(vmstat(e.d).kswapd_wakeups <= before + 1);
		wait_idle(e.d, e.fc);
	}
	v = vmstat(e.d);
	assert_int_equal(v.kswapd_hopeless, 1);
	/* The charge to 1000 above woke the first of the 16 failed runs. */
	assert_int_equal(v.kswapd_wakeups - w, RCL_MAX_RECLAIM_RETRIES - 1);
	assert_int_equal(v.kswapd_failures - f, RCL_MAX_RECLAIM_RETRIES - 1);

	assert_int_equal(rcl_domain_uncharge(e.d, amount), 0);
	tc_check(&e.c);
	hopeless_teardown(&e);
}

static void make_hopeless(struct hopeless_env *e)
{
	uint64_t h0 = vmstat(e->d).kswapd_hopeless;
	unsigned i;

	for (i = 0; i < RCL_MAX_RECLAIM_RETRIES; i++)
		pressure_once(e);
	assert_int_equal(vmstat(e->d).kswapd_hopeless, h0 + 1);
	/* Ignored now. */
	i = (unsigned)vmstat(e->d).kswapd_wakeups;
	pressure_once(e);
	assert_int_equal(vmstat(e->d).kswapd_wakeups, i);
}

/* Something changed: the next charge below low wakes the reclaimer. */
static void assert_revived(struct hopeless_env *e)
{
	uint64_t w = vmstat(e->d).kswapd_wakeups;

	pressure_once(e);
	assert_int_equal(vmstat(e->d).kswapd_wakeups, w + 1);
}

static void test_domain_hopeless_is_revived_by_changes(void **state)
{
	struct hopeless_env e;
	struct rcl_watermarks wm;
	struct tcache other;
	uint64_t w;

	(void)state;
	hopeless_setup(&e);

	/* An attach. */
	make_hopeless(&e);
	tc_init(&other, e.d, 1, W, 0);
	assert_revived(&e);

	/* A watermark change (it wakes the reclaimer itself if headroom is
	 * below the new low). */
	make_hopeless(&e);
	wm = wmarks(e.d);
	w = vmstat(e.d).kswapd_wakeups;
	assert_int_equal(rcl_domain_set_watermarks(e.d, &wm), 0);
	wait_idle(e.d, e.fc);
	assert_int_equal(vmstat(e.d).kswapd_wakeups, w);	/* above low */
	assert_revived(&e);

	/* A budget change. */
	make_hopeless(&e);
	assert_int_equal(rcl_domain_set_budget(e.d, 100000), 0);
	wait_idle(e.d, e.fc);
	assert_revived(&e);

	/*
	 * An attach to a child: the tree's reclaimer is the root's, and an
	 * attach revived only the child's own (unread) state, so the root
	 * slept on while new evictable memory arrived below it.
	 */
	{
		struct rcl_domain_config cc = { .parent = e.d };
		struct rcl_domain *child;
		struct tcache below;

		assert_int_equal(rcl_domain_new(&cc, &child), 0);
		make_hopeless(&e);
		tc_init(&below, child, 1, W, 0);
		assert_revived(&e);
		tc_destroy(&below, true);
		assert_int_equal(rcl_domain_free(child), 0);
	}

	/* Progress by a direct reclaimer. */
	make_hopeless(&e);
	atomic_store(&e.c.mode, EV_FREE);
	assert_int_equal(rcl_domain_reclaim(e.d, 1, RCL_CTX_CAPABLE, NULL), 0);
	assert_true(atomic_load(&e.c.evicted) > 0);
	atomic_store(&e.c.mode, EV_BUSY);
	assert_revived(&e);

	/* A change of limits, and one of swappiness: either may make memory
	 * evictable (a child's protection removed), and neither revived. */
	{
		struct rcl_domain_limits lim = { 0 };

		make_hopeless(&e);
		assert_int_equal(rcl_domain_set_limits(e.d, &lim), 0);
		assert_revived(&e);
		make_hopeless(&e);
		assert_int_equal(rcl_domain_set_swappiness(e.d, 60), 0);
		assert_revived(&e);
	}

	/*
	 * Progress by the reclaimer itself, in a run that a wakeup posted
	 * while hopeless started (a restart posts one): it reset the failures
	 * but left the domain hopeless, deaf to charges.
	 */
	{
		uint64_t ev, amount;

		make_hopeless(&e);
		assert_int_equal(rcl_domain_reclaimer_stop(e.d), 0);
		atomic_store(&e.c.mode, EV_FREE);
		ev = atomic_load(&e.c.evicted);
		/* Below low with no reclaimer running: nothing is woken. */
		amount = rcl_domain_budget(e.d) - rcl_domain_usage(e.d) - 1000;
		assert_int_equal(rcl_domain_charge(e.d, amount, RCL_CTX_CAPABLE,
						   NULL), 0);
		assert_int_equal(rcl_domain_reclaimer_start(e.d), 0);
		wait_idle(e.d, e.fc);
		assert_true(atomic_load(&e.c.evicted) > ev);
		assert_int_equal(rcl_domain_uncharge(e.d, amount), 0);
		atomic_store(&e.c.mode, EV_BUSY);
		assert_revived(&e);
	}

	assert_int_equal(rcl_domain_reclaimer_stop(e.d), 0);
	tc_destroy(&other, true);
	hopeless_teardown(&e);
}

/* ------------------------------------------------------------------------- */
/* 6. Budget resize                                                           */
/* ------------------------------------------------------------------------- */

/*
 * Without a background reclaimer, a budget just below usage: 900 objects
 * (90000), budget 89950.  Watermarks: min = 87, gap = max(21, 899) = 899,
 * low = 986, high = 1885.  The caller reclaims towards high.
 */
static void test_domain_set_budget_reclaims_in_caller(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct tcache c;
	struct rcl_vmstat v;

	(void)state;
	tc_init(&c, d, 900, W, 0);
	tc_fill(&c, 900, RCL_CTX_CAPABLE, 0);
	assert_int_equal(rcl_domain_set_budget(d, 89950), 0);
	assert_wm(d, 87, 986, 1885);
	v = vmstat(d);
	assert_int_equal(v.allocstall, 1);
	assert_true(v.pgsteal_direct > 0);
	assert_int_equal(v.kswapd_wakeups, 0);
	assert_true(headroom(d) >= 1885);
	assert_int_equal(rcl_domain_usage(d), tc_cached_weight(&c));
	tc_check(&c);

	/* Growing the budget reclaims nothing. */
	assert_int_equal(rcl_domain_set_budget(d, 200000), 0);
	assert_int_equal(vmstat(d).allocstall, 1);
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * Halving the budget below usage: 900 reclaimable objects (90000), budget
 * 50000 (min 48, gap 500, low 548, high 1048).  "The caller reclaims towards
 * high (bounded)": a direct reclaim goes from priority 12 down to 0 and can
 * free the whole cache, so afterwards headroom must be >= high (usage <=
 * 48952, at least 411 objects evicted).
 */
static void test_domain_set_budget_halved_reaches_high(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct tcache c;
	uint64_t usage, room, stalls;

	(void)state;
	tc_init(&c, d, 900, W, 0);
	tc_fill(&c, 900, RCL_CTX_CAPABLE, 0);
	assert_int_equal(rcl_domain_set_budget(d, 50000), 0);
	assert_wm(d, 48, 548, 1048);
	usage = rcl_domain_usage(d);
	room = headroom(d);
	stalls = vmstat(d).allocstall;
	print_message("budget 90000 -> 50000: usage %llu, evicted %lu, "
		      "allocstall %llu\n", (unsigned long long)usage,
		      atomic_load(&c.evicted), (unsigned long long)stalls);
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);

	assert_true(stalls >= 1);
	assert_true(usage <= 50000);
	assert_true(room >= 1048);
}

static void test_domain_set_budget_wakes_reclaimer(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, fc);
	struct tcache c;
	struct rcl_vmstat v;

	(void)state;
	tc_init(&c, d, 900, W, 0);
	tc_fill(&c, 900, RCL_CTX_CAPABLE, 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);
	/* 80000: min 78, gap max(19, 800) = 800, low 878, high 1678. */
	assert_int_equal(rcl_domain_set_budget(d, 80000), 0);
	assert_wm(d, 78, 878, 1678);
	v = vmstat(d);
	assert_int_equal(v.kswapd_wakeups, 1);
	assert_int_equal(v.allocstall, 0);	/* the caller did not reclaim */
	wait_idle(d, fc);
	v = vmstat(d);
	assert_int_equal(v.pageoutrun, 1);
	assert_true(v.pgsteal_kswapd > 0);
	assert_int_equal(v.pgsteal_direct, 0);
	assert_true(headroom(d) >= 1678);
	assert_int_equal(rcl_domain_usage(d), tc_cached_weight(&c));
	tc_check(&c);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	tc_destroy(&c, true);
	dom_free(d, fc);
}

/* ------------------------------------------------------------------------- */
/* 7. Attach and detach                                                       */
/* ------------------------------------------------------------------------- */

static void test_domain_attach_detach_errors(void **state)
{
	static const struct rcl_lruvec_ops no_evict = { .evict = NULL };
	struct rcl_domain_config cfg = { .budget = 100000, .max_lruvecs = 2 };
	struct rcl_domain *d = dom_new_cfg(&cfg);
	struct rcl_lruvec_config nocfg = { .ops = &no_evict };
	struct rcl_lruvec plain, noev;
	struct tcache a, b, c;

	(void)state;
	tc_init(&a, NULL, 1, W, 0);
	tc_init(&b, NULL, 1, W, 0);
	tc_init(&c, NULL, 1, W, 0);
	assert_int_equal(rcl_lruvec_init(&plain, NULL), 0);
	assert_int_equal(rcl_lruvec_init(&noev, &nocfg), 0);

	assert_int_equal(rcl_domain_attach(NULL, &a.lv, 0), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, NULL, 0), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &plain, 0), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &noev, 0), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &a.lv, 1), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &a.lv, 0), 0);
	assert_int_equal(rcl_domain_attach(d, &a.lv, 0), -EBUSY);
	assert_int_equal(rcl_domain_attach(d, &b.lv, 0), 0);
	assert_int_equal(rcl_domain_attach(d, &c.lv, 0), -ENOSPC);
	assert_int_equal(rcl_domain_attach(d, &a.lv, 0), -EBUSY);

	assert_int_equal(rcl_domain_detach(NULL, &a.lv), -EINVAL);
	assert_int_equal(rcl_domain_detach(d, NULL), -EINVAL);
	assert_int_equal(rcl_domain_detach(d, &c.lv), -ENOENT);
	assert_int_equal(rcl_domain_detach(d, &plain), -ENOENT);
	assert_int_equal(rcl_domain_detach(d, &a.lv), 0);
	assert_int_equal(rcl_domain_detach(d, &a.lv), -ENOENT);
	/* The freed slot is reused. */
	assert_int_equal(rcl_domain_attach(d, &c.lv, 0), 0);
	assert_int_equal(rcl_domain_attach(d, &a.lv, 0), -ENOSPC);
	assert_int_equal(rcl_domain_free(d), -EBUSY);
	assert_int_equal(rcl_domain_detach(d, &b.lv), 0);
	assert_int_equal(rcl_domain_detach(d, &c.lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);

	/* Partitions are checked against the domain's number. */
	cfg.max_lruvecs = 0;
	cfg.nr_partitions = 3;
	d = dom_new_cfg(&cfg);
	assert_int_equal(rcl_domain_attach(d, &a.lv, 3), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &a.lv, 2), 0);
	assert_int_equal(rcl_domain_attach(d, &a.lv, 1), -EBUSY);
	assert_int_equal(rcl_domain_detach(d, &a.lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);

	tc_destroy(&a, false);
	tc_destroy(&b, false);
	tc_destroy(&c, false);
	assert_int_equal(rcl_lruvec_destroy(&plain), 0);
	assert_int_equal(rcl_lruvec_destroy(&noev), 0);
}

/* Re-entry from inside an evict callback of a domain reclaim pass. */
static struct tcache *re_other;
static atomic_int re_done, re_detach_self, re_detach_other, re_attach_other,
	re_reclaim, re_charge, re_stop;
static atomic_ullong re_stalls_before, re_stalls_after;

static void reentry_hook(struct tcache *c, struct tobj *o,
			 struct rcl_evict_control *ctl)
{
	struct rcl_vmstat v;

	(void)o;
	if (atomic_exchange(&re_done, 1))
		return;
	atomic_store(&re_detach_self, rcl_domain_detach(c->d, ctl->lruvec));
	atomic_store(&re_reclaim,
		     rcl_domain_reclaim(c->d, 1, RCL_CTX_CAPABLE, NULL));
	/* Headroom is below min: a charge would reclaim, but not here. */
	T_EQ(rcl_domain_vmstat(c->d, &v), 0);
	atomic_store(&re_stalls_before, v.allocstall);
	atomic_store(&re_charge, rcl_domain_charge(c->d, 40, RCL_CTX_CAPABLE,
						   NULL));
	T_EQ(rcl_domain_vmstat(c->d, &v), 0);
	atomic_store(&re_stalls_after, v.allocstall);
	if (atomic_load(&re_charge) == 0)
		T_EQ(rcl_domain_uncharge(c->d, 40), 0);
	/*
	 * No detach at all from a callback of this domain's reclaim: two
	 * callbacks detaching each other's lruvec would wait for each other.
	 */
	atomic_store(&re_detach_other, rcl_domain_detach(c->d, &re_other->lv));
	atomic_store(&re_attach_other,
		     rcl_domain_attach(c->d, &re_other->lv, 0));
	/* Not the reclaimer's thread: stopping (nothing) is fine. */
	atomic_store(&re_stop, rcl_domain_reclaimer_stop(c->d));
}

static void test_domain_reentry_from_evict_callback(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct tcache c, other;
	struct rcl_reclaim_result res;
	struct rcl_vmstat v;

	(void)state;
	tc_init(&c, d, 50, W, 0);
	tc_init(&other, d, 1, W, 0);
	re_other = &other;
	tc_fill(&c, 50, RCL_CTX_CAPABLE, 0);
	/* Usage 99950: headroom 50, below min (97); no reclaim for this. */
	assert_int_equal(rcl_domain_charge(d, 94950, 0, NULL), 0);
	assert_int_equal(vmstat(d).allocstall, 0);
	atomic_store(&c.hook, reentry_hook);

	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, &res), 0);
	assert_int_equal(atomic_load(&re_done), 1);
	assert_int_equal(atomic_load(&re_detach_self), -EDEADLK);
	assert_int_equal(atomic_load(&re_reclaim), -EDEADLK);
	assert_int_equal(atomic_load(&re_charge), 0);
	assert_int_equal(atomic_load(&re_stalls_after),
			 atomic_load(&re_stalls_before));
	assert_int_equal(atomic_load(&re_detach_other), -EDEADLK);
	assert_int_equal(atomic_load(&re_attach_other), -EBUSY);	/* still there */
	assert_int_equal(atomic_load(&re_stop), 0);
	v = vmstat(d);
	assert_int_equal(v.allocstall, 1);		/* rcl_domain_reclaim's */
	assert_true(res.nr_reclaimed >= 1);
	assert_int_equal(res.nr_reclaimed, atomic_load(&c.evicted));
	assert_int_equal(res.weight_reclaimed, res.nr_reclaimed * W);
	/* Still attached: detach works now. */
	atomic_store(&c.hook, NULL);
	assert_int_equal(rcl_domain_uncharge(d, 94950), 0);
	tc_destroy(&c, true);
	tc_destroy(&other, true);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The same from a shrinker's scan callback, which a pass calls after its
 * lruvecs: rcl_domain_reclaim() returns -EDEADLK "from within a reclaim pass
 * of @d", and "a charge from a callback of a reclaim pass does not reclaim
 * recursively".  (A depth guard keeps a failing library from recursing
 * without end.)
 */
struct sh_model {
	struct rcl_shrinker *s;
	struct rcl_domain *d;
	atomic_ulong objects;	/* the count answer */
	int id;
	atomic_int depth;
	atomic_int reclaim_ret, charge_ret, stop_ret;
	atomic_ullong stalls_before, stalls_after;
	atomic_int reentered;
	bool reenter;		/* do the re-entry checks */
	bool stop_reclaimer;	/* call rcl_domain_reclaimer_stop() */
	uint64_t weight;	/* if set, scans free objects of this weight
				 * for real: fewer left, uncharged */
};

/* A log of callbacks: (kind, id, partition, priority), consecutive
 * duplicates collapsed. */
struct logent {
	char kind;		/* 'E' evict, 'S' shrinker scan */
	int id;
	unsigned partition;
	int prio;
};

#define LOGMAX 4096
static struct logent evlog[LOGMAX];
static atomic_uint nlog;
static atomic_ullong log_ctx_bad;
static uint64_t log_ctx;

static void log_event(char kind, int id, unsigned partition, int prio,
		      uint64_t ctx)
{
	unsigned n = atomic_load(&nlog);
	struct logent e;

	/* Zero the padding too: entries are compared with memcmp(). */
	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.id = id;
	e.partition = partition;
	e.prio = prio;

	if (ctx != log_ctx)
		atomic_fetch_add(&log_ctx_bad, 1);
	if (n && memcmp(&evlog[n - 1], &e, sizeof(e)) == 0)
		return;
	T_CHECK(n < LOGMAX);
	evlog[n] = e;
	atomic_store(&nlog, n + 1);
}

static void log_reset(uint64_t ctx)
{
	memset(evlog, 0, sizeof(evlog));
	atomic_store(&nlog, 0);
	atomic_store(&log_ctx_bad, 0);
	log_ctx = ctx;
}

static unsigned long sh_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	struct sh_model *m = sc->priv;

	T_PEQ(s, m->s);
	return atomic_load(&m->objects);
}

static unsigned long sh_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	struct sh_model *m = sc->priv;

	T_PEQ(s, m->s);
	log_event('S', m->id, sc->partition, sc->priority, sc->context);
	if (m->reenter && atomic_fetch_add(&m->depth, 1) == 0 &&
	    !atomic_exchange(&m->reentered, 1)) {
		struct rcl_vmstat v;

		atomic_store(&m->reclaim_ret,
			     rcl_domain_reclaim(m->d, 1, RCL_CTX_CAPABLE, NULL));
		T_EQ(rcl_domain_vmstat(m->d, &v), 0);
		atomic_store(&m->stalls_before, v.allocstall);
		atomic_store(&m->charge_ret,
			     rcl_domain_charge(m->d, 40, RCL_CTX_CAPABLE, NULL));
		T_EQ(rcl_domain_vmstat(m->d, &v), 0);
		atomic_store(&m->stalls_after, v.allocstall);
		if (atomic_load(&m->charge_ret) == 0)
			T_EQ(rcl_domain_uncharge(m->d, 40), 0);
	}
	if (m->reenter)
		atomic_fetch_sub(&m->depth, 1);
	if (m->stop_reclaimer && !atomic_exchange(&m->reentered, 1))
		atomic_store(&m->stop_ret, rcl_domain_reclaimer_stop(m->d));
	if (m->weight) {
		unsigned long have = atomic_load(&m->objects), n;

		do {
			n = have < sc->nr_to_scan ? have : sc->nr_to_scan;
		} while (!atomic_compare_exchange_weak(&m->objects, &have,
						       have - n));
		T_EQ(rcl_domain_uncharge(m->d, n * m->weight), 0);
		return n;
	}
	return sc->nr_to_scan;	/* "freed"; the model keeps its size */
}

static const struct rcl_shrinker_ops sh_ops = {
	.count_objects = sh_count,
	.scan_objects = sh_scan,
};

/* seeks 0: scanned at half its size per call at any priority. */
static void sh_new(struct sh_model *m, struct rcl_domain *d, int id,
		   unsigned long objects, unsigned flags)
{
	struct rcl_shrinker_config cfg = {
		.ops = &sh_ops,
		.priv = m,
		.name = "test",
		.seeks = 0,
		.flags = flags,
	};

	memset(m, 0, sizeof(*m));
	m->d = d;
	m->id = id;
	atomic_store(&m->objects, objects);
	assert_int_equal(rcl_shrinker_new(rcl_domain_registry(d), &cfg, &m->s), 0);
	assert_int_equal(rcl_shrinker_register(m->s), 0);
}

static void test_domain_reentry_from_shrinker_callback(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct sh_model m;

	(void)state;
	sh_new(&m, d, 1, 1000, 0);
	m.reenter = true;
	log_reset(RCL_CTX_CAPABLE);
	/* Headroom 50, below min (97). */
	assert_int_equal(rcl_domain_charge(d, 99950, 0, NULL), 0);
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, NULL), 0);
	print_message("from a shrinker callback: reclaim %d, charge %d, "
		      "allocstall %llu -> %llu\n",
		      atomic_load(&m.reclaim_ret), atomic_load(&m.charge_ret),
		      (unsigned long long)atomic_load(&m.stalls_before),
		      (unsigned long long)atomic_load(&m.stalls_after));
	assert_int_equal(rcl_shrinker_free(m.s), 0);
	assert_int_equal(rcl_domain_uncharge(d, 99950), 0);
	assert_int_equal(rcl_domain_free(d), 0);

	assert_int_equal(atomic_load(&m.reentered), 1);
	assert_int_equal(atomic_load(&m.charge_ret), 0);
	assert_int_equal(atomic_load(&m.stalls_after),
			 atomic_load(&m.stalls_before));
	assert_int_equal(atomic_load(&m.reclaim_ret), -EDEADLK);
}

/*
 * Detach waits for a pass inside the lruvec.  Thread R reclaims; its evict
 * callback waits until thread D is blocked in rcl_domain_detach() (D is then
 * the fake clock's only waiter: detach sleeps through the domain's clock),
 * then returns.  D's detach must return only after that.
 */
struct dw_ctx {
	struct rcl_domain *d;
	struct rcl_fake_clock *fc;
	struct tcache *c;
	atomic_int inside, leaving, detach_ret, hook_ok;
};

static struct dw_ctx *dw;

static void dw_hook(struct tcache *c, struct tobj *o,
		    struct rcl_evict_control *ctl)
{
	unsigned long i;

	(void)c;
	(void)o;
	(void)ctl;
	if (atomic_exchange(&dw->inside, 1))
		return;
	for (i = 0; i < SPIN_MAX && rcl_fake_clock_waiters(dw->fc) != 1; i++)
		sched_yield();
	atomic_store(&dw->hook_ok, i < SPIN_MAX);
	atomic_store(&dw->leaving, 1);
}

static void *dw_reclaimer(void *arg)
{
	(void)arg;
	T_EQ(rcl_domain_reclaim(dw->d, 1, RCL_CTX_CAPABLE, NULL), 0);
	return NULL;
}

static void *dw_detacher(void *arg)
{
	(void)arg;
	atomic_store(&dw->detach_ret, rcl_domain_detach(dw->d, &dw->c->lv));
	/* The pass had left the callback before detach returned. */
	T_EQ(atomic_load(&dw->leaving), 1);
	return NULL;
}

static void test_domain_detach_waits_for_pass(void **state)
{
	struct dw_ctx ctx = { 0 };
	struct tcache c;
	pthread_t r, t;
	unsigned long i;
	unsigned long calls;

	(void)state;
	ctx.fc = fclock_new();
	ctx.d = dom_new(100000, RCL_CHARGE_STRICT, ctx.fc);
	ctx.c = &c;
	dw = &ctx;
	tc_init(&c, ctx.d, 50, W, 0);
	tc_fill(&c, 50, RCL_CTX_CAPABLE, 0);
	atomic_store(&c.hook, dw_hook);

	assert_int_equal(pthread_create(&r, NULL, dw_reclaimer, NULL), 0);
	for (i = 0; i < SPIN_MAX && !atomic_load(&ctx.inside); i++)
		sched_yield();
	assert_true(i < SPIN_MAX);
	assert_int_equal(pthread_create(&t, NULL, dw_detacher, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_int_equal(atomic_load(&ctx.hook_ok), 1);
	assert_int_equal(atomic_load(&ctx.detach_ret), 0);
	assert_int_equal(rcl_fake_clock_waiters(ctx.fc), 0);

	/* Detached: the domain no longer reclaims from it. */
	atomic_store(&c.hook, NULL);
	calls = atomic_load(&c.calls);
	assert_int_equal(rcl_domain_reclaim(ctx.d, 100, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(atomic_load(&c.calls), calls);
	tc_destroy(&c, false);
	assert_int_equal(rcl_domain_usage(ctx.d), 0);
	dom_free(ctx.d, ctx.fc);
}

/* ------------------------------------------------------------------------- */
/* 8. Several lruvecs of one partition: scanned in proportion to size         */
/* ------------------------------------------------------------------------- */

/*
 * Direct reclaim at priority 12 scans every lruvec's whole target (scan.h:
 * "full scan at DEF_PRIORITY"): with 24576 and 8192 objects the targets are
 * 24576 >> 12 = 6 and 8192 >> 12 = 2 (one type: fraction = denominator), so
 * exactly 6 : 2, and the goal (1) is met in that first pass.
 */
static void test_domain_proportional_full_scan_at_def_priority(void **state)
{
	struct rcl_domain *d = dom_new(10000000, RCL_CHARGE_STRICT, NULL);
	struct rcl_reclaim_result res;
	struct tcache a, b;
	struct rcl_vmstat v;

	(void)state;
	tc_init(&a, d, 24576, W, 0);
	tc_init(&b, d, 8192, W, 0);
	tc_fill(&a, 24576, 0, 0);
	tc_fill(&b, 8192, 0, 0);
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, &res), 0);
	assert_int_equal(res.priority, 12);
	assert_int_equal(tc_scanned(&a), 6);
	assert_int_equal(tc_scanned(&b), 2);
	assert_int_equal(res.nr_scanned, 8);
	assert_int_equal(res.nr_reclaimed, 8);
	assert_int_equal(res.nr_to_reclaim, 1);
	v = vmstat(d);
	assert_int_equal(v.pgscan_direct, 8);
	assert_int_equal(v.pgsteal_direct, 8);
	tc_destroy(&a, true);
	tc_destroy(&b, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * Nothing reclaimable: the goal is never met, so every pass of priorities 12
 * .. 0 scans every lruvec's whole target, size >> priority (BUSY objects go
 * back to the list, so sizes do not change).
 */
static void test_domain_proportional_every_priority(void **state)
{
	struct rcl_domain *d = dom_new(10000000, RCL_CHARGE_STRICT, NULL);
	struct rcl_reclaim_result res;
	struct tcache a, b;
	uint64_t ea = 0, eb = 0;
	int p;

	(void)state;
	tc_init(&a, d, 3000, W, 0);
	tc_init(&b, d, 1000, W, 0);
	atomic_store(&a.mode, EV_BUSY);
	atomic_store(&b.mode, EV_BUSY);
	tc_fill(&a, 3000, 0, 0);
	tc_fill(&b, 1000, 0, 0);
	for (p = RCL_DEF_PRIORITY; p >= 0; p--) {
		ea += 3000u >> p;
		eb += 1000u >> p;
	}
	/* 5993 and 1994: 3.005 : 1 */
	assert_int_equal(ea, 5993);
	assert_int_equal(eb, 1994);
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, &res), 0);
	assert_int_equal(res.priority, 0);
	assert_int_equal(res.nr_reclaimed, 0);
	assert_int_equal(tc_scanned(&a), ea);
	assert_int_equal(tc_scanned(&b), eb);
	assert_int_equal(vmstat(d).pgscan_direct, ea + eb);
	atomic_store(&a.mode, EV_FREE);
	atomic_store(&b.mode, EV_FREE);
	tc_destroy(&a, true);
	tc_destroy(&b, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * A cache with two lruvecs of 3N and N objects under sustained pressure: the
 * budget holds 4N objects and 4N more are inserted, three into the first
 * lruvec for each one into the second (so their sizes stay 3 : 1), charged
 * on insert, reclaimed by direct reclaim (@bg false) or by the background
 * reclaimer (@bg true; the test waits for it after each insert).
 *
 * Tolerance.  scan.h's chunk rule keeps the completed fractions of the
 * lists a pass scans equal to within one chunk per round: a 3 : 1 pair of
 * targets is scanned in chunks of 32 and ceil(32 / 3) = 11 (32 : 11 = 2.91),
 * and flooring the targets (size >> priority) moves each by less than one
 * object.  The last round of a pass may scan up to one chunk per list beyond
 * the goal.  Over thousands of scanned objects these amount to a few
 * percent; the test allows 3 : 1 within 1/6 (2.5 .. 3.5).
 */
static void sustained(unsigned n, bool bg, double *ratio)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new((uint64_t)4 * n * W, RCL_CHARGE_STRICT, fc);
	struct tcache a, b;
	uint64_t sa, sb;
	unsigned k;

	tc_init(&a, d, 6 * n, W, 0);
	tc_init(&b, d, 2 * n, W, 0);
	if (bg) {
		assert_int_equal(rcl_domain_reclaimer_start(d), 0);
		wait_idle(d, fc);
	}
	for (k = 0; k < 8 * n; k++) {
		/* The background case must not reclaim directly. */
		assert_int_equal(tc_insert(k % 4 == 3 ? &b : &a,
					   bg ? 0 : RCL_CTX_CAPABLE, 0),
				 0);
		if (bg)
			wait_idle(d, fc);
	}
	sa = tc_scanned(&a);
	sb = tc_scanned(&b);
	*ratio = (double)sa / (double)(sb ? sb : 1);
	print_message("%s, %u + %u objects: scanned %llu : %llu = %.3f "
		      "(sizes now %u : %u, allocstall %llu, pageoutrun %llu)\n",
		      bg ? "background" : "direct", 3 * n, n,
		      (unsigned long long)sa, (unsigned long long)sb, *ratio,
		      tc_cached(&a), tc_cached(&b),
		      (unsigned long long)vmstat(d).allocstall,
		      (unsigned long long)vmstat(d).pageoutrun);
	assert_true(sa + sb >= 4 * n);		/* it did reclaim */
	assert_int_equal(rcl_domain_usage(d),
			 tc_cached_weight(&a) + tc_cached_weight(&b));
	if (bg) {
		assert_int_equal(vmstat(d).allocstall, 0);
		assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	}
	tc_destroy(&a, true);
	tc_destroy(&b, true);
	dom_free(d, fc);
}

static void check_ratio(double r)
{
	if (r < 2.5 || r > 3.5)
		fail_msg("scanned ratio %.3f, expected 3 within 1/6", r);
}

static void test_domain_proportional_sustained_small(void **state)
{
	double direct, background;

	(void)state;
	sustained(500, false, &direct);
	sustained(500, true, &background);
	check_ratio(direct);
	check_ratio(background);
}

static void test_domain_proportional_sustained_large(void **state)
{
	double direct, background;

	(void)state;
	sustained(8000, false, &direct);
	sustained(8000, true, &background);
	check_ratio(direct);
	check_ratio(background);
}

/* ------------------------------------------------------------------------- */
/* 9. Shrinkers in reclaim passes                                             */
/* ------------------------------------------------------------------------- */

static void log_hook(struct tcache *c, struct tobj *o,
		     struct rcl_evict_control *ctl)
{
	(void)o;
	log_event('E', c == re_other ? 2 : 1, 0, ctl->priority, ctl->context);
}

static void print_log(void)
{
	unsigned i, n = atomic_load(&nlog);

	for (i = 0; i < n; i++)
		print_message("%c%d/%u@%d ", evlog[i].kind, evlog[i].id,
			      evlog[i].partition, evlog[i].prio);
	print_message("\n");
}

/*
 * A direct reclaim over 4096 busy objects and one shrinker: every priority
 * 12 .. 0 scans the lruvec (4096 >> 12 = 1 at the gentlest) and then the
 * shrinker at the same priority, with the caller's context.
 */
static void test_domain_shrinkers_after_lru_direct(void **state)
{
	const uint64_t ctx = RCL_CTX_CAPABLE | RCL_CTX_USER(3);
	struct rcl_domain *d = dom_new(10000000, RCL_CHARGE_STRICT, NULL);
	struct rcl_reclaim_result res;
	struct sh_model m;
	struct tcache c;
	struct rcl_shrinker_stats st;
	struct rcl_vmstat v;
	unsigned i;
	int p;

	(void)state;
	tc_init(&c, d, 4096, W, 0);
	atomic_store(&c.mode, EV_BUSY);
	tc_fill(&c, 4096, 0, 0);
	sh_new(&m, d, 7, 1000, 0);
	re_other = NULL;
	atomic_store(&c.hook, log_hook);
	log_reset(ctx);
	assert_int_equal(rcl_domain_reclaim(d, 1, ctx, &res), 0);
	print_log();
	assert_int_equal(atomic_load(&log_ctx_bad), 0);
	assert_int_equal(atomic_load(&nlog), 2 * (RCL_DEF_PRIORITY + 1));
	for (i = 0, p = RCL_DEF_PRIORITY; p >= 0; p--) {
		assert_int_equal(evlog[i].kind, 'E');
		assert_int_equal(evlog[i].prio, p);
		i++;
		assert_int_equal(evlog[i].kind, 'S');
		assert_int_equal(evlog[i].id, 7);
		assert_int_equal(evlog[i].prio, p);
		i++;
	}
	/* The shrinker's work is counted in the domain's counters. */
	assert_int_equal(rcl_shrinker_stats(m.s, &st), 0);
	v = vmstat(d);
	assert_true(st.freed > 0);
	assert_int_equal(v.slabs_scanned, st.scanned);
	assert_int_equal(v.slabs_freed, st.freed);
	assert_int_equal(res.slab_freed, st.freed);
	assert_int_equal(res.nr_reclaimed, 0);

	atomic_store(&c.hook, NULL);
	assert_int_equal(rcl_shrinker_free(m.s), 0);
	atomic_store(&c.mode, EV_FREE);
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The background reclaimer: its passes run with RCL_CTX_CAPABLE, priority
 * never goes up within a run, and each pass scans the lruvec before the
 * shrinker, at the same priority.  The shrinker's cache is real (2000
 * objects of 200, charged): its frees make room, so that the run ends.
 */
static void test_domain_shrinkers_after_lru_background(void **state)
{
	const uint64_t budget = 10000000, lru = 4096 * W, slab = 2000 * 200;
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new(budget, RCL_CHARGE_STRICT, fc);
	struct sh_model m;
	struct tcache c;
	uint64_t raw;
	unsigned i, n;

	(void)state;
	tc_init(&c, d, 4096, W, 0);
	atomic_store(&c.mode, EV_BUSY);
	tc_fill(&c, 4096, 0, 0);
	sh_new(&m, d, 7, 2000, 0);
	m.weight = 200;
	assert_int_equal(rcl_domain_charge(d, slab, 0, NULL), 0);
	re_other = NULL;
	atomic_store(&c.hook, log_hook);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);
	log_reset(RCL_CTX_CAPABLE);
	/* Headroom 1000 < low (min 9765, low 109765, high 209765): a run. */
	raw = budget - lru - slab - 1000;
	assert_int_equal(rcl_domain_charge(d, raw, 0, NULL), 0);
	assert_int_equal(vmstat(d).kswapd_wakeups, 1);
	wait_idle(d, fc);
	print_log();
	n = atomic_load(&nlog);
	assert_true(n >= 2);
	assert_int_equal(atomic_load(&log_ctx_bad), 0);
	assert_int_equal(evlog[0].kind, 'E');
	assert_int_equal(evlog[0].prio, RCL_DEF_PRIORITY);
	for (i = 0; i < n; i++) {
		assert_int_equal(evlog[i].kind, i % 2 ? 'S' : 'E');
		if (i)
			assert_true(evlog[i].prio <= evlog[i - 1].prio);
		if (i % 2)
			assert_int_equal(evlog[i].prio, evlog[i - 1].prio);
	}
	assert_int_equal(evlog[n - 1].kind, 'S');
	assert_true(headroom(d) >= wmarks(d).high);
	assert_int_equal(rcl_domain_usage(d),
			 lru + raw + atomic_load(&m.objects) * 200);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	atomic_store(&c.hook, NULL);
	assert_int_equal(rcl_domain_uncharge(d, raw + atomic_load(&m.objects) * 200),
			 0);
	assert_int_equal(rcl_shrinker_free(m.s), 0);
	atomic_store(&c.mode, EV_FREE);
	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_usage(d), 0);
	dom_free(d, fc);
}

/*
 * Two partitions, an lruvec in each, a partition-aware shrinker (id 1) and
 * one that is not (id 2).  Each pass: partition 0's lruvec, then the
 * shrinkers for partition 0 (the aware one sees partition 0, the other
 * partition 0); then partition 1's lruvec, then the shrinkers for partition
 * 1 (the aware one sees 1, the other 0 again).
 */
static int seg_has(unsigned from, unsigned to, char kind, int id,
		   unsigned part, int prio)
{
	unsigned i;
	int n = 0;

	for (i = from; i < to; i++)
		if (evlog[i].kind == kind && evlog[i].id == id &&
		    evlog[i].partition == part && evlog[i].prio == prio)
			n++;
	return n;
}

static void test_domain_shrinkers_partition_aware(void **state)
{
	struct rcl_domain_config cfg = { .budget = 10000000, .nr_partitions = 2 };
	struct rcl_domain *d = dom_new_cfg(&cfg);
	struct sh_model aware, global;
	struct tcache a, b;
	unsigned i = 0;
	int p;

	(void)state;
	tc_init(&a, d, 4096, W, 0);
	tc_init(&b, d, 4096, W, 1);
	atomic_store(&a.mode, EV_BUSY);
	atomic_store(&b.mode, EV_BUSY);
	tc_fill(&a, 4096, 0, 0);
	tc_fill(&b, 4096, 0, 0);
	sh_new(&aware, d, 1, 1000, RCL_SHRINKER_PARTITION_AWARE);
	sh_new(&global, d, 2, 1000, 0);
	re_other = &b;
	atomic_store(&a.hook, log_hook);
	atomic_store(&b.hook, log_hook);
	log_reset(RCL_CTX_CAPABLE);
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, NULL), 0);
	print_log();
	assert_int_equal(atomic_load(&log_ctx_bad), 0);
	assert_int_equal(atomic_load(&nlog), 6 * (RCL_DEF_PRIORITY + 1));
	for (p = RCL_DEF_PRIORITY; p >= 0; p--, i += 6) {
		/* E(a) {S(1, 0), S(2, 0)} E(b) {S(1, 1), S(2, 0)} */
		assert_int_equal(seg_has(i, i + 1, 'E', 1, 0, p), 1);
		assert_int_equal(seg_has(i + 1, i + 3, 'S', 1, 0, p), 1);
		assert_int_equal(seg_has(i + 1, i + 3, 'S', 2, 0, p), 1);
		assert_int_equal(seg_has(i + 3, i + 4, 'E', 2, 0, p), 1);
		assert_int_equal(seg_has(i + 4, i + 6, 'S', 1, 1, p), 1);
		assert_int_equal(seg_has(i + 4, i + 6, 'S', 2, 0, p), 1);
	}
	atomic_store(&a.hook, NULL);
	atomic_store(&b.hook, NULL);
	assert_int_equal(rcl_shrinker_free(aware.s), 0);
	assert_int_equal(rcl_shrinker_free(global.s), 0);
	atomic_store(&a.mode, EV_FREE);
	atomic_store(&b.mode, EV_FREE);
	tc_destroy(&a, true);
	tc_destroy(&b, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* 10. rcl_domain_vmstat_format()                                             */
/* ------------------------------------------------------------------------- */

static const char *const counter_names[] = {
	"pgscan_kswapd",  "pgscan_direct",  "pgsteal_kswapd",
	"pgsteal_direct", "pgrefill",	    "pgactivate",
	"pgdeactivate",	  "pgrotated",	    "slabs_scanned",
	"slabs_freed",	  "allocstall",	    "pageoutrun",
	"kswapd_wakeups", "kswapd_failures", "kswapd_hopeless",
	"charge_failures", "charge_overshoots",
	"nr_dirty_scanned", "nr_unqueued_dirty", "nr_writeback_scanned",
	"nr_immediate", "flush_requests", "flush_requests_vmscan",
	"flush_coalesced", "flusher_wakeups", "writeback_throttled",
	"writeback_throttle_timeouts", "dirty_throttled",
	"dirty_throttle_timeouts", "writes_from_reclaim", "writes_flusher",
};

#define NR_COUNTERS (sizeof(counter_names) / sizeof(counter_names[0]))

static void counter_values(const struct rcl_vmstat *v, uint64_t *out)
{
	const uint64_t vals[NR_COUNTERS] = {
		v->pgscan_kswapd,  v->pgscan_direct,   v->pgsteal_kswapd,
		v->pgsteal_direct, v->pgrefill,	       v->pgactivate,
		v->pgdeactivate,   v->pgrotated,       v->slabs_scanned,
		v->slabs_freed,	   v->allocstall,      v->pageoutrun,
		v->kswapd_wakeups, v->kswapd_failures, v->kswapd_hopeless,
		v->charge_failures, v->charge_overshoots,
		v->nr_dirty_scanned, v->nr_unqueued_dirty,
		v->nr_writeback_scanned, v->nr_immediate, v->flush_requests,
		v->flush_requests_vmscan, v->flush_coalesced, v->flusher_wakeups,
		v->writeback_throttled, v->writeback_throttle_timeouts,
		v->dirty_throttled, v->dirty_throttle_timeouts,
		v->writes_from_reclaim, v->writes_flusher,
	};

	memcpy(out, vals, sizeof(vals));
}

static void test_domain_vmstat_format(void **state)
{
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, NULL);
	struct rcl_watermarks wm = wmarks(d);
	uint64_t vals[NR_COUNTERS];
	int seen[NR_COUNTERS] = { 0 };
	char full[4096], buf[4200], *line, *save = NULL;
	struct rcl_vmstat v;
	struct tcache c;
	int len, nlines = 0, i;
	size_t sizes[] = { 1, 2, 10, 100, 0, 0, 0, 0 };
	size_t s;

	(void)state;
	/* Some activity, so that values differ. */
	tc_init(&c, d, 1000, W, 0);
	tc_fill(&c, 1000, RCL_CTX_CAPABLE, 0);	/* a direct reclaim */
	assert_int_equal(rcl_domain_charge(d, 1000000, RCL_CTX_CAPABLE, NULL),
			 -ENOMEM);
	v = vmstat(d);
	assert_true(v.allocstall > 0 && v.pgsteal_direct > 0 &&
		    v.charge_failures == 1);
	counter_values(&v, vals);

	len = rcl_domain_vmstat_format(d, NULL, 0);
	assert_true(len > 0 && (size_t)len < sizeof(full));
	assert_int_equal(rcl_domain_vmstat_format(d, full, sizeof(full)), len);
	assert_int_equal(strlen(full), (size_t)len);
	assert_int_equal(full[len - 1], '\n');

	/* Every counter once, with its value; then usage, budget, the
	 * watermarks. */
	memcpy(buf, full, (size_t)len + 1);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), nlines++) {
		char name[64];
		unsigned long long val;
		int used = 0;

		assert_int_equal(sscanf(line, "%63s %llu%n", name, &val, &used), 2);
		assert_int_equal((size_t)used, strlen(line));
		if ((size_t)nlines < NR_COUNTERS) {
			for (i = 0; i < (int)NR_COUNTERS; i++)
				if (strcmp(name, counter_names[i]) == 0)
					break;
			assert_true(i < (int)NR_COUNTERS);
			assert_int_equal(seen[i], 0);
			seen[i] = 1;
			assert_int_equal(val, vals[i]);
		} else if ((size_t)nlines == NR_COUNTERS) {
			assert_string_equal(name, "usage");
			assert_int_equal(val, rcl_domain_usage(d));
		} else if ((size_t)nlines == NR_COUNTERS + 1) {
			assert_string_equal(name, "budget");
			assert_int_equal(val, 100000);
		} else {
			static const char *const key[] = { "min", "low", "high" };
			const uint64_t wv[] = { wm.min, wm.low, wm.high };
			size_t k = (size_t)nlines - NR_COUNTERS - 2;

			assert_true(k < 3);
			assert_non_null(strstr(name, key[k]));
			assert_int_equal(val, wv[k]);
		}
	}
	assert_int_equal(nlines, NR_COUNTERS + 5);
	for (i = 0; i < (int)NR_COUNTERS; i++)
		assert_int_equal(seen[i], 1);

	/* Truncation as snprintf(): size - 1 bytes and a NUL; the return is
	 * the full length; nothing past @size is written. */
	sizes[4] = (size_t)len - 1;
	sizes[5] = (size_t)len;
	sizes[6] = (size_t)len + 1;
	sizes[7] = (size_t)len + 100;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s], k = n - 1 < (size_t)len ? n - 1 : (size_t)len;

		memset(buf, 'X', sizeof(buf));
		assert_int_equal(rcl_domain_vmstat_format(d, buf, n), len);
		assert_memory_equal(buf, full, k);
		assert_int_equal(buf[k], '\0');
		for (i = (int)n; i < (int)sizeof(buf); i++)
			if (buf[i] != 'X')
				fail_msg("size %zu: byte %d written", n, i);
	}
	/* Size 0 writes nothing, even with a buffer. */
	memset(buf, 'X', sizeof(buf));
	assert_int_equal(rcl_domain_vmstat_format(d, buf, 0), len);
	assert_int_equal(buf[0], 'X');
	assert_int_equal(rcl_domain_vmstat_format(d, NULL, 5), -EINVAL);
	assert_int_equal(rcl_domain_vmstat_format(NULL, buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(rcl_domain_vmstat_format(NULL, NULL, 0), -EINVAL);

	tc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The domain's scan counters are what its passes did to its lruvecs: with
 * two caches, one answering ACTIVATE (so that its active list grows and
 * gets aged: refill, deactivation) and one answering BUSY (rotations), and
 * a third that frees, each vmstat counter equals the sum of the lruvecs'
 * own statistics.
 */
static void test_domain_vmstat_matches_lruvec_stats(void **state)
{
	struct rcl_domain *d = dom_new(10000000, RCL_CHARGE_STRICT, NULL);
	struct tcache c[3];
	struct rcl_lruvec_type_stats st, sum = { 0 };
	struct rcl_vmstat v;
	int i, r;

	(void)state;
	for (i = 0; i < 3; i++) {
		tc_init(&c[i], d, 600, W, 0);
		tc_fill(&c[i], 600, 0, 0);
	}
	atomic_store(&c[0].mode, EV_ACTIVATE);
	atomic_store(&c[1].mode, EV_BUSY);
	for (r = 0; r < 4; r++)
		assert_int_equal(rcl_domain_reclaim(d, 200, RCL_CTX_CAPABLE, NULL),
				 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(rcl_lruvec_stats(&c[i].lv, RCL_LRU_FILE, &st), 0);
		sum.scanned += st.scanned;
		sum.freed += st.freed;
		sum.rotated += st.rotated;
		sum.activated += st.activated;
		sum.deactivated += st.deactivated;
		sum.refill_scanned += st.refill_scanned;
	}
	v = vmstat(d);
	print_message("scanned %llu freed %llu rotated %llu activated %llu "
		      "deactivated %llu refill %llu\n",
		      (unsigned long long)sum.scanned,
		      (unsigned long long)sum.freed,
		      (unsigned long long)sum.rotated,
		      (unsigned long long)sum.activated,
		      (unsigned long long)sum.deactivated,
		      (unsigned long long)sum.refill_scanned);
	assert_true(sum.freed > 0 && sum.rotated > 0 && sum.activated > 0 &&
		    sum.deactivated > 0 && sum.refill_scanned > 0);
	assert_int_equal(v.pgscan_direct, sum.scanned);
	assert_int_equal(v.pgsteal_direct, sum.freed);
	assert_int_equal(v.pgrotated, sum.rotated);
	assert_int_equal(v.pgactivate, sum.activated);
	assert_int_equal(v.pgdeactivate, sum.deactivated);
	assert_int_equal(v.pgrefill, sum.refill_scanned);
	assert_int_equal(v.pgscan_kswapd + v.pgsteal_kswapd, 0);
	assert_int_equal(v.allocstall, 4);
	assert_int_equal(sum.freed, atomic_load(&c[2].evicted));
	assert_int_equal(sum.rotated, atomic_load(&c[1].busy));
	for (i = 0; i < 3; i++) {
		atomic_store(&c[i].mode, EV_FREE);
		tc_destroy(&c[i], true);
	}
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* 11. Lifecycle                                                              */
/* ------------------------------------------------------------------------- */

static void test_domain_free(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, fc);
	struct sh_model m;
	struct tcache c;

	(void)state;
	assert_int_equal(rcl_domain_free(NULL), 0);

	/* An attached lruvec: -EBUSY, the domain still works. */
	tc_init(&c, d, 10, W, 0);
	tc_fill(&c, 10, RCL_CTX_CAPABLE, 0);
	assert_int_equal(rcl_domain_free(d), -EBUSY);
	assert_int_equal(rcl_domain_usage(d), 1000);
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, NULL), 0);
	assert_true(atomic_load(&c.evicted) >= 1);
	tc_destroy(&c, true);

	/* A shrinker left in the registry: -EBUSY. */
	sh_new(&m, d, 1, 10, 0);
	assert_int_equal(rcl_domain_free(d), -EBUSY);
	assert_non_null(rcl_domain_registry(d));
	assert_int_equal(rcl_shrinker_free(m.s), 0);

	/* A running reclaimer is stopped. */
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	rcl_fake_clock_free(fc);
}

/*
 * A failing call has no effect (common.h): rcl_domain_free() refused with
 * -EBUSY because a shrinker remains must leave the running reclaimer
 * running.
 */
static void test_domain_free_busy_keeps_reclaimer(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, fc);
	struct sh_model m;
	unsigned waiters;
	int start;

	(void)state;
	sh_new(&m, d, 1, 10, 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);
	assert_int_equal(rcl_domain_free(d), -EBUSY);
	/* Still running: asleep on the clock, and a second start is -EBUSY. */
	waiters = rcl_fake_clock_waiters(fc);
	start = rcl_domain_reclaimer_start(d);
	assert_int_equal(rcl_shrinker_free(m.s), 0);
	dom_free(d, fc);

	assert_int_equal(waiters, 1);
	assert_int_equal(start, -EBUSY);
}

static size_t fa_allocs, fa_frees, fa_fail_at;

static void *fa_alloc(void *ctx, size_t size)
{
	(void)ctx;
	if (++fa_allocs == fa_fail_at)
		return NULL;
	return malloc(size);
}

static void fa_free(void *ctx, void *p)
{
	(void)ctx;
	fa_frees++;
	free(p);
}

static void test_domain_new_errors(void **state)
{
	static const struct rcl_allocator fa = { fa_alloc, fa_free, NULL };
	static const struct rcl_allocator half = { fa_alloc, NULL, NULL };
	struct rcl_domain *const sentinel = (struct rcl_domain *)&fa;
	struct rcl_domain_config cfg = { .budget = 1000 };
	struct rcl_domain *d = sentinel;
	size_t k;

	(void)state;
	assert_int_equal(rcl_domain_new(NULL, &d), -EINVAL);
	assert_int_equal(rcl_domain_new(&cfg, NULL), -EINVAL);
	cfg.budget = 0;
	assert_int_equal(rcl_domain_new(&cfg, &d), -EINVAL);
	cfg.budget = 1000;
	cfg.nr_partitions = RCL_SHRINKER_MAX_PARTITIONS + 1;
	assert_int_equal(rcl_domain_new(&cfg, &d), -EINVAL);
	cfg.nr_partitions = 0;
	cfg.mode = (enum rcl_charge_mode)2;
	assert_int_equal(rcl_domain_new(&cfg, &d), -EINVAL);
	cfg.mode = RCL_CHARGE_SOFT;
	cfg.shrink_policy = (enum rcl_shrink_policy)3;
	assert_int_equal(rcl_domain_new(&cfg, &d), -EINVAL);
	cfg.shrink_policy = RCL_SHRINK_POLICY_KERNEL_2014;
	cfg.allocator = &half;
	assert_int_equal(rcl_domain_new(&cfg, &d), -EINVAL);
	assert_ptr_equal(d, sentinel);		/* written only on success */

	/* The largest number of partitions is fine. */
	cfg.allocator = NULL;
	cfg.nr_partitions = RCL_SHRINKER_MAX_PARTITIONS;
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_ptr_not_equal(d, sentinel);
	assert_int_equal(rcl_shrinker_registry_policy(rcl_domain_registry(d)),
			 RCL_SHRINK_POLICY_KERNEL_2014);
	assert_int_equal(rcl_domain_free(d), 0);

	/* -ENOMEM at every allocation, without leaks; then success. */
	cfg.nr_partitions = 4;
	cfg.allocator = &fa;
	for (k = 1;; k++) {
		int err;

		fa_allocs = fa_frees = 0;
		fa_fail_at = k;
		d = sentinel;
		err = rcl_domain_new(&cfg, &d);
		if (err == 0) {
			assert_true(k > 1);
			assert_ptr_not_equal(d, sentinel);
			assert_int_equal(rcl_domain_free(d), 0);
			assert_int_equal(fa_allocs, fa_frees);
			break;
		}
		assert_int_equal(err, -ENOMEM);
		assert_ptr_equal(d, sentinel);
		assert_int_equal(fa_allocs, fa_frees + 1);	/* the failed one */
		assert_true(k < 100);
	}
}

/* ------------------------------------------------------------------------- */
/* 12. Background reclaimer start and stop                                    */
/* ------------------------------------------------------------------------- */

static void test_domain_reclaimer_start_stop(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, fc);
	struct tcache c;

	(void)state;
	assert_int_equal(rcl_domain_reclaimer_start(NULL), -EINVAL);
	assert_int_equal(rcl_domain_reclaimer_stop(NULL), -EINVAL);
	assert_int_equal(rcl_domain_wakeup(NULL), -EINVAL);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);	/* not running */
	/* Not running: wakeups go nowhere and are not counted. */
	assert_int_equal(rcl_domain_wakeup(d), 0);
	assert_int_equal(vmstat(d).kswapd_wakeups, 0);

	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), -EBUSY);
	wait_idle(d, fc);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);

	/* It can be started again, and works. */
	tc_init(&c, d, 1000, W, 0);
	tc_fill(&c, 900, RCL_CTX_CAPABLE, 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);
	tc_fill(&c, 990, RCL_CTX_CAPABLE, 0);
	assert_int_equal(vmstat(d).kswapd_wakeups, 1);
	wait_idle(d, fc);
	assert_true(headroom(d) >= wmarks(d).high);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	tc_destroy(&c, true);
	dom_free(d, fc);
}

static atomic_int own_stop, own_detach, own_hook_ran;

static void own_hook(struct tcache *c, struct tobj *o,
		     struct rcl_evict_control *ctl)
{
	(void)o;
	if (atomic_exchange(&own_hook_ran, 1))
		return;
	atomic_store(&own_stop, rcl_domain_reclaimer_stop(c->d));
	atomic_store(&own_detach, rcl_domain_detach(c->d, ctl->lruvec));
}

static void test_domain_reclaimer_stop_from_own_callback(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, fc);
	struct sh_model m;
	struct tcache c;
	uint64_t raw;

	(void)state;
	tc_init(&c, d, 1000, W, 0);
	tc_fill(&c, 900, RCL_CTX_CAPABLE, 0);
	atomic_store(&c.hook, own_hook);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);
	tc_fill(&c, 990, RCL_CTX_CAPABLE, 0);	/* below low */
	wait_idle(d, fc);
	assert_int_equal(atomic_load(&own_hook_ran), 1);
	assert_int_equal(atomic_load(&own_stop), -EDEADLK);
	assert_int_equal(atomic_load(&own_detach), -EDEADLK);
	/* Still running. */
	assert_int_equal(rcl_domain_reclaimer_start(d), -EBUSY);
	assert_true(headroom(d) >= wmarks(d).high);

	/* The same from a shrinker callback on the reclaimer's thread. */
	atomic_store(&c.hook, NULL);
	sh_new(&m, d, 1, 1000, 0);
	m.stop_reclaimer = true;
	raw = headroom(d) - 1000;		/* below low, above min */
	assert_int_equal(rcl_domain_charge(d, raw, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(vmstat(d).kswapd_wakeups, 2);
	wait_idle(d, fc);
	assert_int_equal(rcl_domain_uncharge(d, raw), 0);
	assert_int_equal(atomic_load(&m.reentered), 1);
	assert_int_equal(atomic_load(&m.stop_ret), -EDEADLK);
	assert_int_equal(rcl_domain_reclaimer_start(d), -EBUSY);

	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	assert_int_equal(rcl_shrinker_free(m.s), 0);
	tc_destroy(&c, true);
	dom_free(d, fc);
}

/*
 * Two threads stop the running reclaimer at once, while its evict callback
 * is held: one joins the thread, the other waits for it (it is then the
 * fake clock's only waiter: the reclaimer itself is inside its callback),
 * and both return 0 with the callback no longer running.  Joining the
 * thread twice is undefined; glibc's second join never returned.  A start
 * while the stop is under way is -EBUSY.
 */
static atomic_int dbl_active, dbl_hold, dbl_held;

static void dbl_hook(struct tcache *c, struct tobj *o,
		     struct rcl_evict_control *ctl)
{
	(void)c;
	(void)o;
	(void)ctl;
	atomic_fetch_add(&dbl_active, 1);
	if (!atomic_exchange(&dbl_held, 1))
		while (atomic_load(&dbl_hold))
			sched_yield();
	atomic_fetch_sub(&dbl_active, 1);
}

struct dbl_stop {
	struct rcl_domain *d;
	atomic_int ret, done;
};

static void *dbl_stop_main(void *arg)
{
	struct dbl_stop *s = arg;

	atomic_store(&s->ret, rcl_domain_reclaimer_stop(s->d));
	atomic_store(&s->done, 1);
	return NULL;
}

static void spin_until(atomic_int *v, int want, const char *what)
{
	unsigned long i;

	for (i = 0; i < SPIN_MAX && atomic_load(v) != want; i++)
		sched_yield();
	if (atomic_load(v) != want)
		fail_msg("timed out waiting for %s", what);
}

static void test_domain_reclaimer_concurrent_stop(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_new(100000, RCL_CHARGE_STRICT, fc);
	struct dbl_stop s[2];
	pthread_t t[2];
	struct tcache c;
	unsigned long k;
	unsigned i;

	(void)state;
	atomic_store(&dbl_active, 0);
	atomic_store(&dbl_held, 0);
	atomic_store(&dbl_hold, 1);
	tc_init(&c, d, 1000, W, 0);
	tc_fill(&c, 900, RCL_CTX_CAPABLE, 0);
	atomic_store(&c.hook, dbl_hook);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);
	tc_fill(&c, 990, RCL_CTX_CAPABLE, 0);	/* below low: it runs */
	spin_until(&dbl_active, 1, "the held evict callback");

	for (i = 0; i < 2; i++) {
		s[i].d = d;
		atomic_store(&s[i].ret, 1);
		atomic_store(&s[i].done, 0);
		assert_int_equal(pthread_create(&t[i], NULL, dbl_stop_main,
						&s[i]), 0);
	}
	/* One stopper joins, the other waits for it on the clock. */
	for (k = 0; k < SPIN_MAX && rcl_fake_clock_waiters(fc) != 1; k++)
		sched_yield();
	assert_int_equal(rcl_fake_clock_waiters(fc), 1);
	assert_int_equal(atomic_load(&s[0].done) + atomic_load(&s[1].done), 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), -EBUSY);

	atomic_store(&dbl_hold, 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(atomic_load(&s[i].ret), 0);
	}
	assert_int_equal(atomic_load(&dbl_active), 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);	/* not running */
	/* It can be started again. */
	atomic_store(&c.hook, NULL);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	wait_idle(d, fc);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	tc_destroy(&c, true);
	dom_free(d, fc);
}

/* ------------------------------------------------------------------------- */
/* Small functions and NULL arguments                                         */
/* ------------------------------------------------------------------------- */

static void test_domain_null_and_small_functions(void **state)
{
	struct rcl_domain *d = dom_new(1000, RCL_CHARGE_STRICT, NULL);
	struct rcl_watermarks wm;
	struct rcl_vmstat v;
	uint64_t over = 5;

	(void)state;
	assert_int_equal(rcl_domain_charge(NULL, 1, 0, &over), -EINVAL);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_uncharge(NULL, 1), -EINVAL);
	assert_int_equal(rcl_domain_usage(NULL), 0);
	assert_int_equal(rcl_domain_budget(NULL), 0);
	assert_null(rcl_domain_registry(NULL));
	assert_non_null(rcl_domain_registry(d));
	assert_int_equal(rcl_domain_watermarks(NULL, &wm), -EINVAL);
	assert_int_equal(rcl_domain_watermarks(d, NULL), -EINVAL);
	assert_int_equal(rcl_domain_vmstat(NULL, &v), -EINVAL);
	assert_int_equal(rcl_domain_vmstat(d, NULL), -EINVAL);
	assert_int_equal(rcl_domain_reclaim(NULL, 1, 0, NULL), -EINVAL);
	assert_int_equal(rcl_domain_reclaim(d, 0, 0, NULL), -EINVAL);
	assert_int_equal(rcl_domain_set_swappiness(NULL, 10), -EINVAL);
	assert_int_equal(rcl_domain_set_swappiness(d, 201), -EINVAL);
	assert_int_equal(rcl_domain_set_swappiness(d, 0), 0);
	assert_int_equal(rcl_domain_set_swappiness(d, 200), 0);
	assert_int_equal(rcl_domain_budget(d), 1000);

	/* Uncharging more than is charged clamps usage to 0. */
	assert_int_equal(rcl_domain_charge(d, 300, 0, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 300);
	assert_int_equal(rcl_domain_uncharge(d, 500), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_uncharge(d, 1), 0);
	assert_int_equal(rcl_domain_usage(d), 0);

	/* A charge of exactly the budget is admitted in strict mode. */
	assert_int_equal(rcl_domain_charge(d, 1000, 0, &over), 0);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_charge(d, 1, 0, NULL), -ENOMEM);
	assert_int_equal(rcl_domain_usage(d), 1000);
	assert_int_equal(rcl_domain_uncharge(d, 1000), 0);

	/* An empty domain: direct reclaim runs 13 passes and returns. */
	{
		struct rcl_reclaim_result res;

		memset(&res, 0xff, sizeof(res));
		assert_int_equal(rcl_domain_reclaim(d, 5, 0, &res), 0);
		assert_int_equal(res.nr_to_reclaim, 5);
		assert_int_equal(res.nr_reclaimed, 0);
		assert_int_equal(res.nr_scanned, 0);
		assert_int_equal(res.slab_freed, 0);
		assert_int_equal(res.priority, 0);
	}
	v = vmstat(d);
	assert_int_equal(v.allocstall, 1);
	assert_int_equal(v.charge_failures, 1);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* 13. What shrinkers free counts toward a pass's goal                        */
/* ------------------------------------------------------------------------- */

/*
 * A real slab-like cache behind a shrinker: @objects of @weight each,
 * charged to the domain.  A scan frees min(nr_to_scan, left) of them and
 * uncharges them (or, with @report, leaves them charged - someone else will
 * uncharge them later - and reports their weight in sc->weight_freed).
 */
struct slabc {
	struct rcl_shrinker *s;
	struct rcl_domain *d;
	atomic_ulong objects;
	uint64_t weight;
	bool report;
	atomic_ulong scans, freed;
	atomic_ullong unreported;	/* weight freed but still charged */
};

static unsigned long slabc_count(struct rcl_shrinker *s,
				 struct rcl_shrink_control *sc)
{
	struct slabc *c = sc->priv;
	unsigned long n = atomic_load(&c->objects);

	T_PEQ(s, c->s);
	return n ? n : RCL_SHRINK_EMPTY;
}

static unsigned long slabc_scan(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	struct slabc *c = sc->priv;
	unsigned long have = atomic_load(&c->objects), n;

	T_PEQ(s, c->s);
	T_EQ(sc->weight_freed, 0);
	do {
		n = have < sc->nr_to_scan ? have : sc->nr_to_scan;
	} while (!atomic_compare_exchange_weak(&c->objects, &have, have - n));
	atomic_fetch_add(&c->scans, 1);
	atomic_fetch_add(&c->freed, n);
	if (c->report) {
		sc->weight_freed = n * c->weight;
		atomic_fetch_add(&c->unreported, n * c->weight);
	} else {
		T_EQ(rcl_domain_uncharge(c->d, n * c->weight), 0);
	}
	sc->nr_scanned = n;
	return n;
}

static const struct rcl_shrinker_ops slabc_ops = {
	.count_objects = slabc_count,
	.scan_objects = slabc_scan,
};

/* Charge @n objects of @weight (without reclaim), then register. */
static void slabc_new(struct slabc *c, struct rcl_domain *d, unsigned long n,
		      uint64_t weight, bool report)
{
	struct rcl_shrinker_config cfg = {
		.ops = &slabc_ops,
		.priv = c,
		.name = "slabc",
		.seeks = RCL_DEFAULT_SEEKS,
	};
	unsigned long i;

	memset(c, 0, sizeof(*c));
	c->d = d;
	c->weight = weight;
	c->report = report;
	for (i = 0; i < n; i++)
		assert_int_equal(rcl_domain_charge(d, weight, 0, NULL), 0);
	atomic_store(&c->objects, n);
	assert_int_equal(rcl_shrinker_new(rcl_domain_registry(d), &cfg, &c->s), 0);
	assert_int_equal(rcl_shrinker_register(c->s), 0);
}

static void slabc_free(struct slabc *c)
{
	assert_int_equal(rcl_shrinker_free(c->s), 0);
	assert_int_equal(rcl_domain_uncharge(c->d, atomic_load(&c->objects) *
							   c->weight +
						   atomic_load(&c->unreported)),
			 0);
}

/*
 * The user-cache issue's first scenario: a 1 MiB domain whose memory is all
 * behind one shrinker (264-byte objects, default watermarks).  The cache is
 * filled to just above min; two charges that cross min reclaim directly,
 * aiming at min + the charge: two objects' worth.  Before the fix the first
 * of them emptied the cache to 1 object (slabs_freed 3,968); now a pass
 * stops at its goal, and beyond it frees at most one batch (128).
 */
static void test_domain_goal_counts_shrinker_frees_in_charge(void **state)
{
	const uint64_t ow = 264;
	struct rcl_domain *d = dom_new(1u << 20, RCL_CHARGE_STRICT, NULL);
	struct rcl_watermarks wm = wmarks(d);
	unsigned long n = (rcl_domain_budget(d) - wm.min) / ow, left;
	struct rcl_vmstat v;
	struct slabc c;
	int i;

	(void)state;
	slabc_new(&c, d, n, ow, false);
	assert_true(headroom(d) >= wm.min);
	assert_true(headroom(d) < wm.min + ow);
	for (i = 0; i < 2; i++) {
		assert_int_equal(rcl_domain_charge(d, ow, RCL_CTX_CAPABLE, NULL),
				 0);
		assert_true(headroom(d) >= wm.min);
	}
	left = atomic_load(&c.objects);
	v = vmstat(d);
	print_message("1 MiB of %u-byte objects behind a shrinker: %lu cached,"
		      " 2 charges across min: %lu left (%.1f%%), slabs_freed "
		      "%llu, allocstall %llu\n", (unsigned)ow, n, left,
		      100.0 * left / n, (unsigned long long)v.slabs_freed,
		      (unsigned long long)v.allocstall);
	assert_true(v.allocstall >= 1);
	assert_int_equal(v.slabs_freed, n - left);
	/* At least 96 % kept: at most one batch beyond the goal. */
	assert_true(left * 100 >= n * 96);
	assert_true(n - left <= RCL_SHRINK_BATCH);
	assert_true(n - left >= 2);
	/* Exactly what was freed is uncharged: nothing lost. */
	assert_int_equal(rcl_domain_usage(d), (left + 2) * ow);

	slabc_free(&c);
	assert_int_equal(rcl_domain_uncharge(d, 2 * ow), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * A charge that a level above refuses is undone at the levels below it.  The
 * undo is not an uncharge: a shrinker of the child whose scan tries to
 * charge the child (and is refused by the full root) has freed nothing, and
 * the child's pass must not count the undone charge as its progress.
 */
struct refused {
	struct rcl_shrinker *s;
	struct rcl_domain *d;
	atomic_ulong scans;
	atomic_int last;
};

static unsigned long refused_count(struct rcl_shrinker *s,
				   struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 1000;
}

static unsigned long refused_scan(struct rcl_shrinker *s,
				  struct rcl_shrink_control *sc)
{
	struct refused *c = sc->priv;

	(void)s;
	atomic_fetch_add(&c->scans, 1);
	atomic_store(&c->last, rcl_domain_charge(c->d, 100, 0, NULL));
	sc->nr_scanned = sc->nr_to_scan;
	return 0;
}

static const struct rcl_shrinker_ops refused_ops = {
	.count_objects = refused_count,
	.scan_objects = refused_scan,
};

static void test_domain_refused_charge_is_no_progress(void **state)
{
	struct rcl_domain *r = dom_new(1000, RCL_CHARGE_STRICT, NULL), *p;
	struct rcl_domain_config cfg = { .parent = r };
	struct rcl_shrinker_config scfg = {
		.ops = &refused_ops,
		.name = "refused",
		.seeks = RCL_DEFAULT_SEEKS,
	};
	struct rcl_reclaim_result res;
	struct refused c = { 0 };

	(void)state;
	p = dom_new_cfg(&cfg);
	c.d = p;
	scfg.priv = &c;
	assert_int_equal(rcl_domain_charge(p, 1000, 0, NULL), 0);
	assert_int_equal(rcl_shrinker_new(rcl_domain_registry(p), &scfg, &c.s),
			 0);
	assert_int_equal(rcl_shrinker_register(c.s), 0);
	assert_int_equal(rcl_domain_reclaim(p, 100, RCL_CTX_CAPABLE, &res), 0);
	print_message("refused charges in a scan: %lu scans, slab_freed %llu, "
		      "slab_reclaimed %llu\n", atomic_load(&c.scans),
		      (unsigned long long)res.slab_freed,
		      (unsigned long long)res.slab_reclaimed);
	assert_true(atomic_load(&c.scans) >= 1);
	assert_int_equal(atomic_load(&c.last), -ENOMEM);
	assert_int_equal(res.slab_freed, 0);
	assert_int_equal(res.slab_reclaimed, 0);
	assert_int_equal(res.nr_reclaimed, 0);
	assert_int_equal(rcl_domain_usage(p), 1000);
	assert_int_equal(rcl_domain_usage(r), 1000);
	assert_int_equal(rcl_shrinker_free(c.s), 0);
	assert_int_equal(rcl_domain_uncharge(p, 1000), 0);
	assert_int_equal(rcl_domain_free(p), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * The second: rcl_domain_reclaim() with a goal of 1 object on a 1,000-object
 * shrinker cache (no lruvec: 1 unit of weight per object) used to free all
 * 1,000.  Now one batch, and the result says why it stopped.
 */
static void test_domain_goal_counts_shrinker_frees_explicit(void **state)
{
	struct rcl_domain *d = dom_new(10000000, RCL_CHARGE_STRICT, NULL);
	struct rcl_reclaim_result res;
	struct slabc c;
	unsigned long freed;

	(void)state;
	slabc_new(&c, d, 1000, 1, false);
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, &res), 0);
	freed = 1000 - atomic_load(&c.objects);
	print_message("goal 1 on 1000 shrinker objects: freed %lu (result: "
		      "slab_freed %llu, slab_weight %llu, slab_reclaimed %llu, "
		      "priority %d)\n", freed,
		      (unsigned long long)res.slab_freed,
		      (unsigned long long)res.slab_weight,
		      (unsigned long long)res.slab_reclaimed, res.priority);
	assert_true(freed >= 1);
	assert_true(freed <= RCL_SHRINK_BATCH);
	assert_int_equal(res.nr_to_reclaim, 1);
	assert_int_equal(res.nr_reclaimed, 0);
	assert_int_equal(res.slab_freed, freed);
	assert_int_equal(res.slab_weight, freed);
	assert_int_equal(res.slab_reclaimed, freed);
	/* It stopped in the pass that met the goal. */
	assert_int_equal(atomic_load(&c.scans), 1);
	assert_int_equal(rcl_domain_usage(d), 1000 - freed);

	/* A larger goal: met in whole batches, never one more than needed. */
	assert_int_equal(rcl_domain_reclaim(d, 300, RCL_CTX_CAPABLE, &res), 0);
	assert_true(res.slab_reclaimed >= 300);
	assert_true(res.slab_reclaimed < 300 + RCL_SHRINK_BATCH);
	assert_int_equal(res.slab_reclaimed, res.slab_freed);

	slabc_free(&c);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The third: a goal of 32 with an lruvec whose objects are all dirty (no
 * flusher: nothing cleans them) used to free 2,000 of 2,000 shrinker
 * objects.  The LRU's objects set the average weight (100); the shrinker's
 * are 100 too, so each counts as one object.
 */
static void test_domain_goal_counts_shrinker_frees_dirty_lru(void **state)
{
	struct rcl_domain *d = dom_new(10000000, RCL_CHARGE_STRICT, NULL);
	struct rcl_reclaim_result res;
	struct slabc c;
	struct tcache t;
	unsigned long freed;
	unsigned i;

	(void)state;
	tc_init(&t, d, 1000, W, 0);
	tc_fill(&t, 1000, 0, 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(rcl_lruvec_set_dirty(&t.lv, &t.objs[i].lru), 0);
	slabc_new(&c, d, 2000, W, false);
	assert_int_equal(rcl_domain_reclaim(d, 32, RCL_CTX_CAPABLE, &res), 0);
	freed = 2000 - atomic_load(&c.objects);
	print_message("goal 32, 1000 dirty LRU objects, 2000 shrinker objects: "
		      "LRU freed %llu, shrinker freed %lu (slab_reclaimed %llu)\n",
		      (unsigned long long)res.nr_reclaimed, freed,
		      (unsigned long long)res.slab_reclaimed);
	assert_int_equal(res.nr_reclaimed, 0);
	assert_int_equal(tc_cached(&t), 1000);
	assert_true(freed >= 32);
	assert_true(freed <= RCL_SHRINK_BATCH);
	assert_int_equal(res.slab_reclaimed, freed);
	assert_int_equal(res.slab_weight, freed * W);

	slabc_free(&c);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(rcl_lruvec_writeback_start(&t.lv,
							    &t.objs[i].lru), 0);
		assert_int_equal(rcl_lruvec_writeback_end(&t.lv, &t.objs[i].lru,
							  0), 0);
	}
	tc_destroy(&t, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The same with every LRU object pinned (the evict callback keeps them all),
 * and with a shrinker that frees memory to be uncharged later and reports
 * its weight instead: the report counts, and the goal stops the pass.
 */
static void test_domain_goal_counts_reported_weight_pinned_lru(void **state)
{
	struct rcl_domain *d = dom_new(10000000, RCL_CHARGE_STRICT, NULL);
	struct rcl_reclaim_result res;
	struct slabc c;
	struct tcache t;
	unsigned long freed;

	(void)state;
	tc_init(&t, d, 1000, W, 0);
	atomic_store(&t.mode, EV_BUSY);
	tc_fill(&t, 1000, 0, 0);
	slabc_new(&c, d, 2000, W, true);
	assert_int_equal(rcl_domain_reclaim(d, 32, RCL_CTX_CAPABLE, &res), 0);
	freed = 2000 - atomic_load(&c.objects);
	assert_int_equal(res.nr_reclaimed, 0);
	assert_true(atomic_load(&t.busy) > 0);
	assert_true(freed >= 32);
	assert_true(freed <= RCL_SHRINK_BATCH);
	assert_int_equal(res.slab_weight, freed * W);
	assert_int_equal(res.slab_reclaimed, freed);
	/* Reported, not uncharged: the usage is the caller's to lower. */
	assert_int_equal(rcl_domain_usage(d), (1000 + 2000) * (uint64_t)W);

	slabc_free(&c);
	atomic_store(&t.mode, EV_FREE);
	tc_destroy(&t, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * A shrinker of objects that are not charged to the domain (it reports
 * nothing) cannot meet the goal: it is shrunk as before, priority by
 * priority, since freeing it does not help the budget.  And when the LRU
 * meets the goal, the shrinker still gets the priority's full pressure.
 */
static void test_domain_goal_uncharged_shrinker_and_lru_met(void **state)
{
	struct rcl_domain *d = dom_new(10000000, RCL_CHARGE_STRICT, NULL);
	struct rcl_reclaim_result res;
	struct sh_model m;
	struct tcache t;
	struct rcl_shrinker_stats st;

	(void)state;
	sh_new(&m, d, 1, 1000, 0);	/* seeks 0: half its size per call */
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, &res), 0);
	assert_int_equal(res.priority, 0);
	assert_int_equal(res.slab_weight, 0);
	assert_int_equal(res.slab_reclaimed, 0);
	assert_int_equal(rcl_shrinker_stats(m.s, &st), 0);
	assert_int_equal(st.calls, RCL_DEF_PRIORITY + 1);

	/* An lruvec that meets the goal at priority 12: 500 scanned. */
	tc_init(&t, d, 4096, W, 0);
	tc_fill(&t, 4096, 0, 0);
	memset(&res, 0, sizeof(res));
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, &res), 0);
	assert_int_equal(res.priority, RCL_DEF_PRIORITY);
	assert_true(res.nr_reclaimed >= 1);
	/* seeks 0: freeable / 2 = 500 scanned, in batches: not cut short. */
	assert_int_equal(res.slab_freed, 500);

	assert_int_equal(rcl_shrinker_free(m.s), 0);
	tc_destroy(&t, true);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * A reclaim pass run from a callback of another pass: D1's pass calls lvA's
 * evict callback, which reclaims D2 (another domain: allowed); lvB's evict
 * callback, inside that, reclaims D1 and charges D1.  Both are still inside
 * D1's pass: the reclaim is refused (-EDEADLK), and the charge does not
 * reclaim, so nothing of lvA is evicted from inside lvA's own callback.
 * Before the fix only the innermost pass was seen: the reclaim returned 0
 * and evicted lvA's objects recursively.
 */
#define NEST_N 64
struct nest_dom {
	struct rcl_domain *d1, *d2;
	struct rcl_lruvec a, b;
	struct rcl_lru_node na[NEST_N], nb[NEST_N];
	int depth, inner_calls, reclaim_ret, charge_ret;
	unsigned evicted_a_inside;
};

static struct nest_dom nest_dom;

static enum rcl_evict_status nest_dom_evict_a(struct rcl_lru_node *n,
					      struct rcl_evict_control *ctl)
{
	struct rcl_reclaim_result r;

	(void)n;
	(void)ctl;
	if (nest_dom.depth)
		nest_dom.evicted_a_inside++;
	if (!nest_dom.depth++)
		rcl_domain_reclaim(nest_dom.d2, 1, RCL_CTX_CAPABLE, &r);
	nest_dom.depth--;
	rcl_domain_uncharge(nest_dom.d1, 1);
	return RCL_EVICT_FREED;
}

static enum rcl_evict_status nest_dom_evict_b(struct rcl_lru_node *n,
					      struct rcl_evict_control *ctl)
{
	struct rcl_reclaim_result r;

	(void)n;
	(void)ctl;
	if (!nest_dom.inner_calls++) {
		nest_dom.reclaim_ret = rcl_domain_reclaim(nest_dom.d1, 8,
							  RCL_CTX_CAPABLE, &r);
		/* Over D1's budget: without reclaim it cannot fit. */
		nest_dom.charge_ret = rcl_domain_charge(nest_dom.d1, 2000,
							RCL_CTX_CAPABLE, NULL);
		if (nest_dom.charge_ret == 0)
			rcl_domain_uncharge(nest_dom.d1, 2000);
	}
	rcl_domain_uncharge(nest_dom.d2, 1);
	return RCL_EVICT_FREED;
}

static void test_domain_reclaim_from_nested_pass_refused(void **state)
{
	static const struct rcl_lruvec_ops oa = { .evict = nest_dom_evict_a };
	static const struct rcl_lruvec_ops ob = { .evict = nest_dom_evict_b };
	struct rcl_lruvec_config ca = { .ops = &oa }, cb = { .ops = &ob };
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_reclaim_result r;
	int i;

	(void)state;
	memset(&nest_dom, 0, sizeof(nest_dom));
	nest_dom.reclaim_ret = nest_dom.charge_ret = 12345;
	assert_int_equal(rcl_domain_new(&dc, &nest_dom.d1), 0);
	assert_int_equal(rcl_domain_new(&dc, &nest_dom.d2), 0);
	assert_int_equal(rcl_lruvec_init(&nest_dom.a, &ca), 0);
	assert_int_equal(rcl_lruvec_init(&nest_dom.b, &cb), 0);
	assert_int_equal(rcl_domain_attach(nest_dom.d1, &nest_dom.a, 0), 0);
	assert_int_equal(rcl_domain_attach(nest_dom.d2, &nest_dom.b, 0), 0);
	for (i = 0; i < NEST_N; i++) {
		assert_int_equal(rcl_lruvec_add(&nest_dom.a, &nest_dom.na[i],
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_add(&nest_dom.b, &nest_dom.nb[i],
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_domain_charge(nest_dom.d1, 1, 0, NULL), 0);
		assert_int_equal(rcl_domain_charge(nest_dom.d2, 1, 0, NULL), 0);
	}
	assert_int_equal(rcl_domain_reclaim(nest_dom.d1, 1, RCL_CTX_CAPABLE,
					    &r), 0);
	assert_int_equal(nest_dom.inner_calls, 1);
	assert_int_equal(nest_dom.reclaim_ret, -EDEADLK);
	assert_int_equal(nest_dom.charge_ret, -ENOMEM);
	assert_int_equal(nest_dom.evicted_a_inside, 0);

	/* Outside any pass the same reclaim of D1 works. */
	assert_int_equal(rcl_domain_reclaim(nest_dom.d1, 4, RCL_CTX_CAPABLE,
					    &r), 0);
	assert_true(r.nr_reclaimed > 0);
	for (i = 0; i < NEST_N; i++) {
		rcl_lruvec_del(&nest_dom.a, &nest_dom.na[i]);
		rcl_lruvec_del(&nest_dom.b, &nest_dom.nb[i]);
	}
	assert_int_equal(rcl_domain_detach(nest_dom.d1, &nest_dom.a), 0);
	assert_int_equal(rcl_domain_detach(nest_dom.d2, &nest_dom.b), 0);
	assert_int_equal(rcl_lruvec_destroy(&nest_dom.a), 0);
	assert_int_equal(rcl_lruvec_destroy(&nest_dom.b), 0);
	rcl_domain_uncharge(nest_dom.d1, rcl_domain_usage(nest_dom.d1));
	rcl_domain_uncharge(nest_dom.d2, rcl_domain_usage(nest_dom.d2));
	assert_int_equal(rcl_domain_free(nest_dom.d1), 0);
	assert_int_equal(rcl_domain_free(nest_dom.d2), 0);
}

/*
 * fork() with the background reclaimer and the flusher thread running: the
 * child has neither thread.  rcl_domain_free() in the child joined the
 * parent's reclaimer (which is not there) and then waited for ever in
 * pthread_cond_destroy() for the parent's thread that had been waiting on
 * the condition (a review's reproducer).  Now the child forgets both
 * threads, can start a reclaimer of its own, and frees the domain; the
 * parent's threads run on.  The child ends itself by alarm(), a failure,
 * if a call hangs.
 */
/* TSan refuses to start threads in the child of a multithreaded fork. */
#if defined(__SANITIZE_THREAD__)
#define FORK_CHILD_THREADS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FORK_CHILD_THREADS 0
#endif
#endif
#ifndef FORK_CHILD_THREADS
#define FORK_CHILD_THREADS 1
#endif

static int fork_write(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	return 0;
}

static void test_domain_fork_child_has_no_threads(void **state)
{
	static const struct rcl_writeback_ops wops = { .write = fork_write };
	struct rcl_domain_config cfg = { .budget = 1u << 20 };
	struct rcl_domain *d;
	int st = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, NULL, 0), 0);
	/* Both threads wait on their conditions (an explicit drain point:
	 * a wakeup makes the reclaimer run and go back to sleep). */
	assert_int_equal(rcl_domain_wakeup(d), 0);
	usleep(50000);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int ok;

		alarm(20);
		ok = rcl_domain_charge(d, 1000, RCL_CTX_CAPABLE, NULL) == 0 &&
		     rcl_domain_uncharge(d, 1000) == 0;
		if (ok && FORK_CHILD_THREADS)
			ok = rcl_domain_reclaimer_start(d) == 0 && /* its own */
			     rcl_domain_wakeup(d) == 0 &&
			     rcl_domain_reclaimer_stop(d) == 0 &&
			     rcl_domain_reclaimer_start(d) == 0;
		ok = ok && rcl_domain_free(d) == 0;		/* both stop */
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ASSERT_CHILD_EXITED_OK(st);
	/* The parent's threads are still there, and stop. */
	assert_int_equal(rcl_domain_wakeup(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * fork() while the parent's background reclaimer is inside an evict
 * callback: the pass's slot pin has no thread in the child to put it, and
 * rcl_domain_detach() there waited for it for ever (found by review: the
 * child's alarm ended it).  The child's fork handler gives the pins back.
 */
static struct rcl_domain *forkpin_d;
static atomic_int forkpin_in_cb, forkpin_release;

static enum rcl_evict_status forkpin_evict(struct rcl_lru_node *n,
					   struct rcl_evict_control *ctl)
{
	unsigned long spins;

	(void)n;
	(void)ctl;
	if (!atomic_exchange(&forkpin_in_cb, 1)) {
		/* The first callback waits (bounded) for the parent's fork. */
		for (spins = 0; !atomic_load(&forkpin_release) && spins < 20000;
		     spins++)
			usleep(1000);
	}
	rcl_domain_uncharge(forkpin_d, 1);
	return RCL_EVICT_FREED;
}

static void test_domain_fork_child_detaches_during_parent_pass(void **state)
{
	static const struct rcl_lruvec_ops ops = { .evict = forkpin_evict };
	struct rcl_lruvec_config lc = { .ops = &ops };
	struct rcl_domain_config cfg = { .budget = 256 };
	static struct rcl_lru_node nodes[256];
	static struct rcl_lruvec forkpin_lv;
	struct rcl_lruvec *lv = &forkpin_lv;
	unsigned long spins;
	int st = 0, i;
	pid_t pid;

	(void)state;
	memset(lv, 0, sizeof(*lv));
	atomic_store(&forkpin_in_cb, 0);
	atomic_store(&forkpin_release, 0);
	assert_int_equal(rcl_domain_new(&cfg, &forkpin_d), 0);
	assert_int_equal(rcl_lruvec_init(lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(forkpin_d, lv, 0), 0);
	assert_int_equal(rcl_domain_reclaimer_start(forkpin_d), 0);
	for (i = 0; i < 256; i++) {
		rcl_lru_node_init(&nodes[i]);
		assert_int_equal(rcl_lruvec_add(lv, &nodes[i], RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH),
				 0);
		assert_int_equal(rcl_domain_charge(forkpin_d, 1, 0, NULL), 0);
	}
	assert_int_equal(rcl_domain_wakeup(forkpin_d), 0);
	for (spins = 0; !atomic_load(&forkpin_in_cb) && spins < 20000; spins++)
		usleep(1000);
	assert_true(atomic_load(&forkpin_in_cb));
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(20);
		_exit(rcl_domain_detach(forkpin_d, lv) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&forkpin_release, 1);
	ASSERT_CHILD_EXITED_OK(st);
	/* The parent's pass ends; its detach waits for it as before. */
	assert_int_equal(rcl_domain_reclaimer_stop(forkpin_d), 0);
	assert_int_equal(rcl_domain_detach(forkpin_d, lv), 0);
	for (i = 0; i < 256; i++)
		(void)rcl_lruvec_del(lv, &nodes[i]);
	assert_int_equal(rcl_lruvec_destroy(lv), 0);
	assert_int_equal(rcl_domain_free(forkpin_d), 0);
}

/*
 * The same pin, seen from a child forked inside a callback of another
 * domain's pass.  The handler used to give back no pin at all when the
 * forking thread was in a pass (some pins were its own), so the child's
 * detach of the first domain waited for ever for the parent's reclaimer (a
 * review's reproducer).  Now it gives back every pin and takes again only
 * the forking thread's own: in the child, once its copy of the pass ends,
 * both detaches return (the other domain's, and its own domain's, whose
 * pin its pass put).
 */
static struct rcl_domain *forkx_d;
static atomic_int forkx_forked;
static pid_t forkx_pid = -1;

static enum rcl_evict_status forkx_evict(struct rcl_lru_node *n,
					 struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	if (!atomic_exchange(&forkx_forked, 1)) {
		fflush(NULL);
		forkx_pid = fork();	/* from inside a pass of forkx_d */
		if (forkx_pid == 0)
			alarm(20);
	}
	rcl_domain_uncharge(forkx_d, 1);
	return RCL_EVICT_FREED;
}

static void test_domain_fork_from_a_callback_gives_back_other_pins(void **state)
{
	static const struct rcl_lruvec_ops yops = { .evict = forkpin_evict };
	static const struct rcl_lruvec_ops xops = { .evict = forkx_evict };
	struct rcl_lruvec_config ylc = { .ops = &yops }, xlc = { .ops = &xops };
	struct rcl_domain_config cfg = { .budget = 256 };
	static struct rcl_lru_node ynodes[256], xnodes[64];
	static struct rcl_lruvec ylv, xlv;
	struct rcl_reclaim_result res;
	unsigned long spins;
	int st = 0, i;

	(void)state;
	memset(&ylv, 0, sizeof(ylv));
	memset(&xlv, 0, sizeof(xlv));
	atomic_store(&forkpin_in_cb, 0);
	atomic_store(&forkpin_release, 0);
	atomic_store(&forkx_forked, 0);
	forkx_pid = -1;
	/* Y: its reclaimer waits in an evict callback, the slot pinned. */
	assert_int_equal(rcl_domain_new(&cfg, &forkpin_d), 0);
	assert_int_equal(rcl_lruvec_init(&ylv, &ylc), 0);
	assert_int_equal(rcl_domain_attach(forkpin_d, &ylv, 0), 0);
	assert_int_equal(rcl_domain_reclaimer_start(forkpin_d), 0);
	/* X: this thread's pass forks from its first evict callback. */
	assert_int_equal(rcl_domain_new(&cfg, &forkx_d), 0);
	assert_int_equal(rcl_lruvec_init(&xlv, &xlc), 0);
	assert_int_equal(rcl_domain_attach(forkx_d, &xlv, 0), 0);
	for (i = 0; i < 256; i++) {
		rcl_lru_node_init(&ynodes[i]);
		assert_int_equal(rcl_lruvec_add(&ylv, &ynodes[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_domain_charge(forkpin_d, 1, 0, NULL), 0);
	}
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&xnodes[i]);
		assert_int_equal(rcl_lruvec_add(&xlv, &xnodes[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_domain_charge(forkx_d, 1, 0, NULL), 0);
	}
	/* At Y's budget: its reclaimer runs and waits in the callback. */
	assert_int_equal(rcl_domain_wakeup(forkpin_d), 0);
	for (spins = 0; !atomic_load(&forkpin_in_cb) && spins < 20000; spins++)
		usleep(1000);
	assert_true(atomic_load(&forkpin_in_cb));
	assert_int_equal(rcl_domain_reclaim(forkx_d, 8, RCL_CTX_CAPABLE, &res), 0);
	if (forkx_pid == 0)	/* the child, out of its copy of the pass */
		_exit(rcl_domain_detach(forkpin_d, &ylv) == 0 &&
			      rcl_domain_detach(forkx_d, &xlv) == 0
		      ? 0 : 1);
	assert_true(forkx_pid > 0);
	assert_int_equal(waitpid(forkx_pid, &st, 0), forkx_pid);
	atomic_store(&forkpin_release, 1);
	ASSERT_CHILD_EXITED_OK(st);
	/* The parent's detaches wait for its passes as before. */
	assert_int_equal(rcl_domain_reclaimer_stop(forkpin_d), 0);
	assert_int_equal(rcl_domain_detach(forkpin_d, &ylv), 0);
	assert_int_equal(rcl_domain_detach(forkx_d, &xlv), 0);
	for (i = 0; i < 256; i++)
		(void)rcl_lruvec_del(&ylv, &ynodes[i]);
	for (i = 0; i < 64; i++)
		(void)rcl_lruvec_del(&xlv, &xnodes[i]);
	assert_int_equal(rcl_lruvec_destroy(&ylv), 0);
	assert_int_equal(rcl_lruvec_destroy(&xlv), 0);
	assert_int_equal(rcl_domain_free(forkpin_d), 0);
	assert_int_equal(rcl_domain_free(forkx_d), 0);
}

/*
 * The pass holds the slot's pin also while it asks the flusher to write
 * (its wakeup callback runs in the pass's thread, after the scan): a child
 * forked from that callback must keep the pin, or the pass's put in the
 * child wraps the count and the child's detach waits for ever (a review's
 * reproducer: the pin frame covered only the scan).
 */
static struct rcl_domain *forkw_d;
static atomic_int forkw_armed, forkw_forked;
static pid_t forkw_pid = -1;

static void forkw_wakeup(void *priv, const struct rcl_flush_request *req)
{
	(void)priv;
	(void)req;
	if (!atomic_load(&forkw_armed) || atomic_exchange(&forkw_forked, 1))
		return;
	fflush(NULL);
	forkw_pid = fork();	/* from the flusher's wakeup, inside a pass */
	if (forkw_pid == 0)
		alarm(20);
}

static enum rcl_evict_status forkw_evict(struct rcl_lru_node *n,
					 struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	rcl_domain_uncharge(forkw_d, 1);
	return RCL_EVICT_FREED;
}

static void test_domain_fork_from_a_pass_flush_wakeup_keeps_its_pin(void **state)
{
	static const struct rcl_lruvec_ops ops = { .evict = forkw_evict };
	static const struct rcl_flusher_ops fops = { .wakeup = forkw_wakeup };
	struct rcl_lruvec_config lc = { .ops = &ops };
	struct rcl_domain_config cfg = { .budget = 256, .flusher = &fops,
					 .dirty_background_ratio = 100,
					 .dirty_ratio = 100 };
	static struct rcl_lru_node nodes[64];
	static struct rcl_lruvec lv;
	struct rcl_reclaim_result res;
	int st = 0, i;

	(void)state;
	memset(&lv, 0, sizeof(lv));
	atomic_store(&forkw_armed, 0);
	atomic_store(&forkw_forked, 0);
	forkw_pid = -1;
	assert_int_equal(rcl_domain_new(&cfg, &forkw_d), 0);
	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(forkw_d, &lv, 0), 0);
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&nodes[i]);
		assert_int_equal(rcl_lruvec_add(&lv, &nodes[i], RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_domain_charge(forkw_d, 1, 0, NULL), 0);
		assert_int_equal(rcl_lruvec_set_dirty(&lv, &nodes[i]), 0);
	}
	/* Every object dirty: the pass asks the flusher, which forks. */
	atomic_store(&forkw_armed, 1);
	(void)rcl_domain_reclaim(forkw_d, 8, RCL_CTX_CAPABLE, &res);
	if (forkw_pid == 0)	/* the child, out of its copy of the pass */
		_exit(rcl_domain_detach(forkw_d, &lv) == 0 ? 0 : 1);
	assert_true(forkw_pid > 0);
	assert_int_equal(waitpid(forkw_pid, &st, 0), forkw_pid);
	ASSERT_CHILD_EXITED_OK(st);
	assert_int_equal(rcl_domain_detach(forkw_d, &lv), 0);
	for (i = 0; i < 64; i++)
		(void)rcl_lruvec_del(&lv, &nodes[i]);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_domain_free(forkw_d), 0);
}

/*
 * A thread cancelled while an evict callback of its direct reclaim runs
 * left the pass's slot pin and tree lock held, and rcl_domain_detach()
 * waited for ever.  Reclaim holds cancellation off until it returns: the
 * request acts at the thread's next cancellation point, after the pass.
 * The detach runs in a helper thread, waited for with a bound.
 */
static struct {
	struct rcl_domain *d;
	struct rcl_lruvec lv;
	atomic_int in_cb, cancelled, detach_ret, detached;
} dcn;

static enum rcl_evict_status dcn_evict(struct rcl_lru_node *n,
				       struct rcl_evict_control *ctl)
{
	unsigned long spins;

	(void)n;
	(void)ctl;
	atomic_store(&dcn.in_cb, 1);
	for (spins = 0; !atomic_load(&dcn.cancelled) && spins < 20000; spins++)
		usleep(1000);
	pthread_testcancel();	/* a cancellation point in the callback */
	rcl_domain_uncharge(dcn.d, 1);
	return RCL_EVICT_FREED;
}

static __attribute__((noinline)) void dcn_reclaim(void)
{
	struct rcl_reclaim_result res;

	(void)rcl_domain_reclaim(dcn.d, 8, RCL_CTX_CAPABLE, &res);
}

/* No locals in the frame the cancellation unwinds (see test_lruvec.c). */
static void *dcn_reclaim_main(void *arg)
{
	(void)arg;
	dcn_reclaim();
	pthread_testcancel();	/* the thread's own: it ends here */
	return NULL;
}

static void *dcn_detach_main(void *arg)
{
	(void)arg;
	atomic_store(&dcn.detach_ret, rcl_domain_detach(dcn.d, &dcn.lv));
	atomic_store(&dcn.detached, 1);
	return NULL;
}

static void test_domain_cancel_in_reclaim_callback_leaves_no_pin(void **state)
{
	static const struct rcl_lruvec_ops ops = { .evict = dcn_evict };
	struct rcl_lruvec_config lc = { .ops = &ops };
	struct rcl_domain_config cfg = { .budget = 256 };
	static struct rcl_lru_node nodes[64];
	unsigned long spins;
	void *ret = NULL;
	pthread_t t, td;
	int i;

	(void)state;
	memset(&dcn.lv, 0, sizeof(dcn.lv));
	atomic_store(&dcn.in_cb, 0);
	atomic_store(&dcn.cancelled, 0);
	atomic_store(&dcn.detached, 0);
	atomic_store(&dcn.detach_ret, 1);
	assert_int_equal(rcl_domain_new(&cfg, &dcn.d), 0);
	assert_int_equal(rcl_lruvec_init(&dcn.lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(dcn.d, &dcn.lv, 0), 0);
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&nodes[i]);
		assert_int_equal(rcl_lruvec_add(&dcn.lv, &nodes[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_domain_charge(dcn.d, 1, 0, NULL), 0);
	}
	assert_int_equal(pthread_create(&t, NULL, dcn_reclaim_main, NULL), 0);
	for (spins = 0; !atomic_load(&dcn.in_cb) && spins < 20000; spins++)
		usleep(1000);
	assert_true(atomic_load(&dcn.in_cb));
	assert_int_equal(pthread_cancel(t), 0);
	atomic_store(&dcn.cancelled, 1);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_true(ret == PTHREAD_CANCELED);
	assert_int_equal(pthread_create(&td, NULL, dcn_detach_main, NULL), 0);
	for (spins = 0; !atomic_load(&dcn.detached) && spins < 10000; spins++)
		usleep(1000);
	if (!atomic_load(&dcn.detached))
		fail_msg("rcl_domain_detach() waited for the cancelled pass");
	assert_int_equal(pthread_join(td, NULL), 0);
	assert_int_equal(atomic_load(&dcn.detach_ret), 0);
	for (i = 0; i < 64; i++)
		(void)rcl_lruvec_del(&dcn.lv, &nodes[i]);
	assert_int_equal(rcl_lruvec_destroy(&dcn.lv), 0);
	assert_int_equal(rcl_domain_free(dcn.d), 0);
}

/*
 * rcl_domain_reclaimer_stop()'s join is not a cancellation point either:
 * a stopper cancelled there (the reclaimer inside an evict callback) left
 * the stop and running flags set, so every later start said -EBUSY and
 * every later stop waited for ever (a review's reproducer).  Now the
 * request waits until the stop returns.
 */
static atomic_int rcs_in_cb, rcs_release;

static enum rcl_evict_status rcs_evict(struct rcl_lru_node *n,
				       struct rcl_evict_control *ctl)
{
	unsigned long spins;

	(void)n;
	(void)ctl;
	atomic_store(&rcs_in_cb, 1);
	for (spins = 0; !atomic_load(&rcs_release) && spins < 20000; spins++)
		usleep(1000);
	rcl_domain_uncharge(dcn.d, 1);
	return RCL_EVICT_FREED;
}

static void *rcs_stopper(void *arg)
{
	(void)arg;
	(void)rcl_domain_reclaimer_stop(dcn.d);
	pthread_testcancel();	/* the thread's own: it ends here */
	return NULL;
}

static void test_domain_reclaimer_stop_is_not_a_cancellation_point(void **state)
{
	static const struct rcl_lruvec_ops ops = { .evict = rcs_evict };
	struct rcl_lruvec_config lc = { .ops = &ops };
	struct rcl_domain_config cfg = { .budget = 256 };
	static struct rcl_lru_node nodes[256];
	struct timespec ms200 = { 0, 200000000 };
	unsigned long spins;
	void *ret = NULL;
	pthread_t t;
	int i;

	(void)state;
	memset(&dcn.lv, 0, sizeof(dcn.lv));
	atomic_store(&rcs_in_cb, 0);
	atomic_store(&rcs_release, 0);
	assert_int_equal(rcl_domain_new(&cfg, &dcn.d), 0);
	assert_int_equal(rcl_lruvec_init(&dcn.lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(dcn.d, &dcn.lv, 0), 0);
	assert_int_equal(rcl_domain_reclaimer_start(dcn.d), 0);
	for (i = 0; i < 256; i++) {
		rcl_lru_node_init(&nodes[i]);
		assert_int_equal(rcl_lruvec_add(&dcn.lv, &nodes[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_domain_charge(dcn.d, 1, 0, NULL), 0);
	}
	assert_int_equal(rcl_domain_wakeup(dcn.d), 0);
	for (spins = 0; !atomic_load(&rcs_in_cb) && spins < 20000; spins++)
		usleep(1000);
	assert_true(atomic_load(&rcs_in_cb));
	assert_int_equal(pthread_create(&t, NULL, rcs_stopper, NULL), 0);
	nanosleep(&ms200, NULL);	/* likely in the join by now */
	assert_int_equal(pthread_cancel(t), 0);
	atomic_store(&rcs_release, 1);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_true(ret == PTHREAD_CANCELED);
	/* The stop was whole: a new reclaimer starts, and stops. */
	assert_int_equal(rcl_domain_reclaimer_start(dcn.d), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(dcn.d), 0);
	assert_int_equal(rcl_domain_detach(dcn.d, &dcn.lv), 0);
	for (i = 0; i < 256; i++)
		(void)rcl_lruvec_del(&dcn.lv, &nodes[i]);
	assert_int_equal(rcl_lruvec_destroy(&dcn.lv), 0);
	assert_int_equal(rcl_domain_free(dcn.d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domain_watermarks_default_formula),
		cmocka_unit_test(test_domain_watermarks_sweep),
		cmocka_unit_test(test_domain_watermarks_huge_budgets),
		cmocka_unit_test(test_domain_set_budget_recomputes_watermarks),
		cmocka_unit_test(test_domain_set_watermarks_validates_and_applies),
		cmocka_unit_test(test_domain_charge_above_low_then_below_low),
		cmocka_unit_test(test_domain_charge_below_min_reclaims_directly),
		cmocka_unit_test(test_domain_soft_overflow_reclaims_nothing),
		cmocka_unit_test(test_domain_charge_without_may_block_does_not_reclaim),
		cmocka_unit_test(test_domain_charge_far_over_budget_reclaims_enough),
		cmocka_unit_test(test_domain_strict_refuses),
		cmocka_unit_test(test_domain_soft_reports_overshoot),
		cmocka_unit_test(test_domain_strict_refuses_huge_charge),
		cmocka_unit_test(test_domain_nothing_reclaimable_is_bounded),
		cmocka_unit_test(test_domain_reclaimer_never_spins),
		cmocka_unit_test(test_domain_refused_charge_wakes_reclaimer),
		cmocka_unit_test(test_domain_hopeless_is_revived_by_changes),
		cmocka_unit_test(test_domain_set_budget_reclaims_in_caller),
		cmocka_unit_test(test_domain_set_budget_halved_reaches_high),
		cmocka_unit_test(test_domain_set_budget_wakes_reclaimer),
		cmocka_unit_test(test_domain_attach_detach_errors),
		cmocka_unit_test(test_domain_reentry_from_evict_callback),
		cmocka_unit_test(test_domain_reentry_from_shrinker_callback),
		cmocka_unit_test(test_domain_detach_waits_for_pass),
		cmocka_unit_test(test_domain_proportional_full_scan_at_def_priority),
		cmocka_unit_test(test_domain_proportional_every_priority),
		cmocka_unit_test(test_domain_proportional_sustained_small),
		cmocka_unit_test(test_domain_proportional_sustained_large),
		cmocka_unit_test(test_domain_shrinkers_after_lru_direct),
		cmocka_unit_test(test_domain_shrinkers_after_lru_background),
		cmocka_unit_test(test_domain_shrinkers_partition_aware),
		cmocka_unit_test(test_domain_vmstat_format),
		cmocka_unit_test(test_domain_vmstat_matches_lruvec_stats),
		cmocka_unit_test(test_domain_free),
		cmocka_unit_test(test_domain_free_busy_keeps_reclaimer),
		cmocka_unit_test(test_domain_new_errors),
		cmocka_unit_test(test_domain_reclaimer_start_stop),
		cmocka_unit_test(test_domain_reclaimer_stop_from_own_callback),
		cmocka_unit_test(test_domain_reclaimer_concurrent_stop),
		cmocka_unit_test(test_domain_null_and_small_functions),
		cmocka_unit_test(test_domain_goal_counts_shrinker_frees_in_charge),
		cmocka_unit_test(test_domain_goal_counts_shrinker_frees_explicit),
		cmocka_unit_test(test_domain_refused_charge_is_no_progress),
		cmocka_unit_test(test_domain_goal_counts_shrinker_frees_dirty_lru),
		cmocka_unit_test(test_domain_goal_counts_reported_weight_pinned_lru),
		cmocka_unit_test(test_domain_goal_uncharged_shrinker_and_lru_met),
		cmocka_unit_test(test_domain_reclaim_from_nested_pass_refused),
		cmocka_unit_test(test_domain_fork_child_has_no_threads),
		cmocka_unit_test(test_domain_fork_child_detaches_during_parent_pass),
		cmocka_unit_test(test_domain_fork_from_a_callback_gives_back_other_pins),
		cmocka_unit_test(test_domain_fork_from_a_pass_flush_wakeup_keeps_its_pin),
		cmocka_unit_test(test_domain_cancel_in_reclaim_callback_leaves_no_pin),
		cmocka_unit_test(test_domain_reclaimer_stop_is_not_a_cancellation_point),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
