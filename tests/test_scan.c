/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the scan controller: scan targets against hand-computed
 * cases (bias, costs, floor share, SCAN_EQUAL, empty types), proportions at
 * an early stop, the over-reclaim bound, the full scan of direct reclaim at
 * priority 12, the pre-2014 mode for contrast, and the cost model's decay.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "lru_check.h"

struct item {
	unsigned type;
	struct rcl_lru_node lru;
};

struct cache {
	struct rcl_lruvec lv;
	struct item *items;
	size_t n;
	bool busy;			/* evict answers BUSY */
	uint64_t evicted[RCL_LRU_MAX_TYPES];
	uint64_t evict_calls[RCL_LRU_MAX_TYPES];
};

static enum rcl_evict_status cache_evict(struct rcl_lru_node *node,
					 struct rcl_evict_control *ctl)
{
	struct cache *c = ctl->priv;
	struct item *it = rcl_container_of(node, struct item, lru);

	c->evict_calls[it->type]++;
	if (c->busy)
		return RCL_EVICT_BUSY;
	c->evicted[it->type]++;
	rcl_lru_node_init(node);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops cache_ops = { .evict = cache_evict };

/*
 * A cache with @in[t] inactive and @act[t] active objects of each default
 * type (file = 0, anon = 1), weight 1.
 */
static struct cache *cache_new(const size_t in[2], const size_t act[2])
{
	struct cache *c = calloc(1, sizeof(*c));
	struct rcl_lruvec_config cfg = { .ops = &cache_ops };
	size_t i = 0, k;
	unsigned t;

	assert_non_null(c);
	cfg.priv = c;
	c->n = in[0] + in[1] + act[0] + act[1];
	c->items = calloc(c->n ? c->n : 1, sizeof(*c->items));
	assert_non_null(c->items);
	assert_int_equal(rcl_lruvec_init(&c->lv, &cfg), 0);
	for (t = 0; t < 2; t++) {
		for (k = 0; k < in[t]; k++, i++) {
			c->items[i].type = t;
			assert_int_equal(rcl_lruvec_add(&c->lv, &c->items[i].lru, t,
							1, RCL_LRU_ADD_NOBATCH), 0);
		}
		for (k = 0; k < act[t]; k++, i++) {
			c->items[i].type = t;
			assert_int_equal(rcl_lruvec_add(&c->lv, &c->items[i].lru, t,
							1, RCL_LRU_ADD_NOBATCH |
							RCL_LRU_ADD_ACTIVE), 0);
		}
	}
	return c;
}

static void cache_free(struct cache *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		rcl_lruvec_del(&c->lv, &c->items[i].lru);
	assert_int_equal(rcl_lruvec_destroy(&c->lv), 0);
	free(c->items);
	free(c);
}

#define FI RCL_LRU_LIST(RCL_LRU_FILE, 0)
#define FA RCL_LRU_LIST(RCL_LRU_FILE, 1)
#define AI RCL_LRU_LIST(RCL_LRU_ANON, 0)
#define AA RCL_LRU_LIST(RCL_LRU_ANON, 1)

/* ------------------------------------------------------------------------- */
/* Scan targets                                                               */
/* ------------------------------------------------------------------------- */

static void test_scan_targets_default_bias(void **state)
{
	static const size_t in[2] = { 3000, 1200 }, act[2] = { 1500, 600 };
	struct cache *c = cache_new(in, act);
	uint64_t t[RCL_LRU_NR_LISTS];

	(void)state;
	/*
	 * swappiness 100: file (cost 1) weighs 200 - 100 = 100, anon (cost
	 * 2) weighs 100 * 1 / 2 = 50; no costs yet, so the fractions are the
	 * weights: 100 and 50 of 150.  Priority 2: file inactive 3000 >> 2 =
	 * 750 * 100 / 150 = 500; file active 375 -> 250; anon inactive 300 *
	 * 50 / 150 = 100; anon active 150 -> 50.
	 */
	assert_int_equal(rcl_scan_targets(&c->lv, 2, 100, t), 0);
	assert_int_equal(t[FI], 500);
	assert_int_equal(t[FA], 250);
	assert_int_equal(t[AI], 100);
	assert_int_equal(t[AA], 50);
	assert_int_equal(t[RCL_LRU_UNEVICTABLE], 0);
	assert_int_equal(t[RCL_LRU_LIST(2, 0)], 0);

	/* swappiness 200: file weighs 0 and gets the floor share, 1/20 of
	 * the denominator: den0 = 0 + 100 = 100, floor 5, den 105.  File
	 * inactive 750 * 5 / 105 = 35; anon inactive 300 * 100 / 105 = 285. */
	assert_int_equal(rcl_scan_targets(&c->lv, 2, 200, t), 0);
	assert_int_equal(t[FI], 35);
	assert_int_equal(t[AI], 285);

	/* swappiness 0: anon weighs 0: den0 = 200, floor 10, den 210.  File
	 * inactive 750 * 200 / 210 = 714; anon inactive 300 * 10 / 210 = 14. */
	assert_int_equal(rcl_scan_targets(&c->lv, 2, 0, t), 0);
	assert_int_equal(t[FI], 714);
	assert_int_equal(t[AI], 14);

	/* Priority 0: every list whole (SCAN_EQUAL applies no fraction). */
	assert_int_equal(rcl_scan_targets(&c->lv, 0, 100, t), 0);
	assert_int_equal(t[FI], 3000);
	assert_int_equal(t[FA], 1500);
	assert_int_equal(t[AI], 1200);
	assert_int_equal(t[AA], 600);
	/* ... whatever the bias. */
	assert_int_equal(rcl_scan_targets(&c->lv, 0, 0, t), 0);
	assert_int_equal(t[FI], 3000);
	assert_int_equal(t[AI], 1200);
	cache_free(c);
}

static void test_scan_targets_follow_costs(void **state)
{
	static const size_t in[2] = { 3000, 1200 }, act[2] = { 1500, 600 };
	struct cache *c = cache_new(in, act);
	uint64_t t[RCL_LRU_NR_LISTS];

	(void)state;
	/* Ten anon refaults: anon cost 320 (below a quarter of 6300). */
	assert_int_equal(rcl_lruvec_note_cost(&c->lv, RCL_LRU_ANON, 10), 0);
	assert_int_equal(rcl_lruvec_cost(&c->lv, RCL_LRU_ANON), 320);
	assert_int_equal(rcl_lruvec_cost(&c->lv, RCL_LRU_FILE), 0);
	/*
	 * total 320; primed: file 320, anon 640; sum 960.  fraction file =
	 * 100 * 961 / 321 = 299, anon = 50 * 961 / 641 = 74; den 373.
	 * Priority 2: file inactive 750 * 299 / 373 = 601, active 375 -> 300;
	 * anon inactive 300 * 74 / 373 = 59, active 150 -> 29.  Anon's
	 * share fell from 1/3 to 1/5: its objects were being refaulted.
	 */
	assert_int_equal(rcl_scan_targets(&c->lv, 2, 100, t), 0);
	assert_int_equal(t[FI], 601);
	assert_int_equal(t[FA], 300);
	assert_int_equal(t[AI], 59);
	assert_int_equal(t[AA], 29);
	cache_free(c);
}

static void test_scan_cost_decays(void **state)
{
	static const size_t in[2] = { 400, 400 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);

	(void)state;
	/* A quarter of 800 is 200: 6 refaults (192) stay, 7 (224) halve. */
	assert_int_equal(rcl_lruvec_note_cost(&c->lv, RCL_LRU_ANON, 6), 0);
	assert_int_equal(rcl_lruvec_cost(&c->lv, RCL_LRU_ANON), 192);
	assert_int_equal(rcl_lruvec_note_cost(&c->lv, RCL_LRU_FILE, 1), 0);
	/* 192 + 32 = 224 > 200: both halved. */
	assert_int_equal(rcl_lruvec_cost(&c->lv, RCL_LRU_ANON), 96);
	assert_int_equal(rcl_lruvec_cost(&c->lv, RCL_LRU_FILE), 16);
	assert_int_equal(rcl_lruvec_note_cost(&c->lv, 2, 1), -EINVAL);
	assert_int_equal(rcl_lruvec_note_cost(NULL, 0, 1), -EINVAL);
	assert_int_equal(rcl_lruvec_cost(NULL, 0), 0);
	cache_free(c);
}

static void test_scan_targets_empty_type_gets_nothing(void **state)
{
	static const size_t in[2] = { 3000, 0 }, act[2] = { 1500, 0 };
	struct cache *c = cache_new(in, act);
	uint64_t t[RCL_LRU_NR_LISTS];

	(void)state;
	/* Anon is empty: left out of the denominator, file gets it all. */
	assert_int_equal(rcl_scan_targets(&c->lv, 2, 100, t), 0);
	assert_int_equal(t[FI], 750);
	assert_int_equal(t[FA], 375);
	assert_int_equal(t[AI], 0);
	assert_int_equal(t[AA], 0);
	/* Priority 12 on small lists: nothing at all (size >> 12 = 0). */
	assert_int_equal(rcl_scan_targets(&c->lv, 12, 100, t), 0);
	assert_int_equal(t[FI], 0);
	cache_free(c);
}

static void test_scan_targets_bad_input(void **state)
{
	static const size_t in[2] = { 1, 1 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	uint64_t t[RCL_LRU_NR_LISTS];
	struct rcl_scan_control sc = { .nr_to_reclaim = 1, .priority = 13 };
	struct rcl_lruvec noops;

	(void)state;
	assert_int_equal(rcl_scan_targets(NULL, 2, 100, t), -EINVAL);
	assert_int_equal(rcl_scan_targets(&c->lv, 2, 100, NULL), -EINVAL);
	assert_int_equal(rcl_scan_targets(&c->lv, -1, 100, t), -EINVAL);
	assert_int_equal(rcl_scan_targets(&c->lv, 13, 100, t), -EINVAL);
	assert_int_equal(rcl_scan_targets(&c->lv, 2, 201, t), -EINVAL);
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), -EINVAL);
	assert_int_equal(rcl_scan_lruvec(&c->lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_init(&noops, NULL), 0);
	sc.priority = 2;
	assert_int_equal(rcl_scan_lruvec(&noops, &sc), -EINVAL);
	assert_int_equal(rcl_lruvec_destroy(&noops), 0);
	cache_free(c);
}

/* ------------------------------------------------------------------------- */
/* Scanning                                                                   */
/* ------------------------------------------------------------------------- */

/* Proportions at an early stop: every list at the same completed fraction. */
static void test_scan_proportions_preserved_at_early_stop(void **state)
{
	static const size_t in[2] = { 3000, 600 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_scan_control sc = {
		.nr_to_reclaim = 100, .priority = 0, .swappiness = 100,
	};

	(void)state;
	/*
	 * Priority 0: every list whole, targets file 3000, anon 600.  File
	 * does 32 a round (the largest), anon up to ceil(32 * round * 600 /
	 * 3000) = ceil(6.4 * round): 7, 13, 20.  After 3 rounds 96 + 20 =
	 * 116 >= 100 and the pass stops.  File did 96 / 3000 = 3.2 %, anon
	 * 20 / 600 = 3.3 %: the same fraction, rounded up.
	 */
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_int_equal(c->evicted[RCL_LRU_FILE], 96);
	assert_int_equal(c->evicted[RCL_LRU_ANON], 20);
	assert_int_equal(sc.nr_reclaimed, 116);
	assert_int_equal(sc.nr_rounds, 3);
	assert_int_equal(sc.last_round_lists, 2);
	/* anon done vs what file's fraction asks of anon: within a chunk */
	assert_true(labs((long)c->evicted[RCL_LRU_ANON] * 1500 -
			 (long)c->evicted[RCL_LRU_FILE] * 300) <= 7 * 1500);
	cache_free(c);
}

/*
 * The completed fractions stay equal at every round also for a list far
 * smaller than the largest.  File 100000 and anon 2000 inactive objects at
 * priority 2: targets 16666 and 166.  A chunk of ceil(32 * 166 / 16666) = 1
 * a round scanned anon at three times file's fraction (31 rounds: file 992,
 * 6.0 %, anon 31, 18.7 %); with anon kept at file's fraction rounded up, it
 * does ceil(992 * 166 / 16666) = 10 (6.0 %).
 */
static void test_scan_proportions_preserved_for_a_small_list(void **state)
{
	static const size_t in[2] = { 100000, 2000 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_scan_control sc = {
		.nr_to_reclaim = 1000, .priority = 2, .swappiness = 100,
	};
	uint64_t t[RCL_LRU_NR_LISTS];

	(void)state;
	assert_int_equal(rcl_scan_targets(&c->lv, 2, 100, t), 0);
	assert_int_equal(t[FI], 16666);
	assert_int_equal(t[AI], 166);
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_int_equal(sc.nr_rounds, 31);
	assert_int_equal(c->evicted[RCL_LRU_FILE], 992);
	assert_int_equal(c->evicted[RCL_LRU_ANON], 10);
	/* anon's fraction is file's, rounded up to the next object */
	assert_true(c->evicted[RCL_LRU_ANON] * t[FI] >=
		    c->evicted[RCL_LRU_FILE] * t[AI]);
	assert_true((c->evicted[RCL_LRU_ANON] - 1) * t[FI] <
		    c->evicted[RCL_LRU_FILE] * t[AI]);
	cache_free(c);
}

/*
 * What the kernel did from 3.11 to 3.15: equal chunks, then at the goal the
 * rescale, and on.
 */
static void test_scan_nonproportional_mode_for_contrast(void **state)
{
	static const size_t in[2] = { 3000, 600 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_scan_control sc = {
		.nr_to_reclaim = 100, .priority = 0, .swappiness = 100,
		.flags = RCL_SCAN_NONPROPORTIONAL,
	};

	(void)state;
	/*
	 * 32 of each per round: 64, then 128 >= 100 after two rounds.  Anon
	 * has lost 64 / 300 = 21 %, file 64 / 1500 = 4 %.  The rescale stops
	 * anon (236 left of 300: percentage 236 * 100 / 301 = 78) and brings
	 * file to the same 22 %: 1500 * 22 / 100 = 330.  The pass frees 394
	 * for a goal of 100.
	 */
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_int_equal(c->evicted[RCL_LRU_FILE], 330);
	assert_int_equal(c->evicted[RCL_LRU_ANON], 64);
	cache_free(c);
}

/*
 * The over-reclaim the 2014 seed patch fixed: when the type with the least
 * work left has none left, the 3.11 rescale keeps 100 % of the others.
 */
static void test_scan_nonproportional_over_reclaims_when_a_type_runs_out(void **state)
{
	static const size_t in[2] = { 3000, 40 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_scan_control sc = {
		.nr_to_reclaim = 100, .priority = 0, .swappiness = 100,
		.flags = RCL_SCAN_NONPROPORTIONAL,
	};

	(void)state;
	/*
	 * Targets at priority 0: every list whole, file 3000, anon 40.
	 * Rounds: 32 + 32, then 32 + 8 (anon done): 104 >= 100.  Anon has 0
	 * left: percentage 0, and file is rescaled to all of its 3000.
	 */
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_int_equal(c->evicted[RCL_LRU_FILE], 3000);
	assert_int_equal(c->evicted[RCL_LRU_ANON], 40);
	cache_free(c);

	/* Proportional: file 32 a round, anon up to ceil(32 * round * 40 /
	 * 3000): 1, 1, 2, 2; four rounds to pass 100: 128 + 2. */
	c = cache_new(in, act);
	sc.flags = 0;
	sc.nr_reclaimed = 0;
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_int_equal(c->evicted[RCL_LRU_FILE], 128);
	assert_int_equal(c->evicted[RCL_LRU_ANON], 2);
	assert_int_equal(sc.nr_reclaimed, 130);
	cache_free(c);
}

/*
 * Lists smaller than the number of types: at priority 0 each is scanned
 * whole.  An equal share of 1/2 of a one-object list was none, so a cache of
 * one object of each type could never be reclaimed (a strict charge failed
 * with every object clean and evictable).
 */
static void test_scan_priority_0_reaches_one_object_lists(void **state)
{
	static const size_t in[2] = { 1, 1 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_scan_control sc = {
		.nr_to_reclaim = 2, .priority = 0, .swappiness = 100,
	};
	uint64_t t[RCL_LRU_NR_LISTS];

	(void)state;
	assert_int_equal(rcl_scan_targets(&c->lv, 0, 100, t), 0);
	assert_int_equal(t[FI], 1);
	assert_int_equal(t[AI], 1);
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_int_equal(c->evicted[RCL_LRU_FILE], 1);
	assert_int_equal(c->evicted[RCL_LRU_ANON], 1);
	assert_int_equal(sc.nr_reclaimed, 2);
	cache_free(c);
}

/*
 * The writeback throttle of a domain's pass is one wait per pass over a
 * partition (the kernel's reclaim_throttle() in shrink_node()), not one per
 * lruvec: four lruvecs whose objects are all under a writeback that never
 * ends used to make one rcl_domain_reclaim() wait 4 times at each priority
 * that scans, 100 ms each (each wait ends by its timeout: nothing
 * completes).  On a fake clock that the test advances while the reclaiming
 * thread waits, the waits are counted: one per priority that scans.
 */
#define WBT_LV 4
#define WBT_N 64

struct wbt {
	struct rcl_domain *d;
	struct rcl_lruvec lv[WBT_LV];
	struct rcl_lru_node nodes[WBT_LV][WBT_N];
	struct rcl_reclaim_result res;
	atomic_bool done;
};

static enum rcl_evict_status wbt_evict(struct rcl_lru_node *n,
				       struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	return RCL_EVICT_BUSY;	/* never called: all under writeback */
}

static const struct rcl_lruvec_ops wbt_ops = { .evict = wbt_evict };

static void *wbt_reclaim(void *arg)
{
	struct wbt *w = arg;

	rcl_domain_reclaim(w->d, 32, RCL_CTX_CAPABLE, &w->res);
	atomic_store(&w->done, true);
	return NULL;
}

/*
 * @tree: the four lruvecs in four children of the root instead of in the
 * root.  The throttle was once per domain of the sweep, so the same reclaim
 * of the root waited 4 x 7 times; it is once per partition pass over the
 * whole subtree, as shrink_node() throttles after shrink_node_memcgs().
 */
static void wbt_run(bool tree)
{
	struct wbt *w = calloc(1, sizeof(*w));
	struct rcl_domain *child[WBT_LV] = { NULL };
	struct rcl_fake_clock *fc = NULL;
	struct rcl_lruvec_config lc = { .ops = &wbt_ops };
	struct rcl_domain_config dc = { .budget = 1u << 20 };
	uint64_t throttled = 0, timeouts = 0;
	struct rcl_vmstat v;
	unsigned i, k;
	pthread_t t;

	assert_non_null(w);
	assert_int_equal(rcl_fake_clock_new(0, &fc), 0);
	dc.clock = rcl_fake_clock_clock(fc);
	assert_int_equal(rcl_domain_new(&dc, &w->d), 0);
	for (i = 0; i < WBT_LV; i++) {
		struct rcl_domain_config cc = { .parent = w->d };

		if (tree)
			assert_int_equal(rcl_domain_new(&cc, &child[i]), 0);
		assert_int_equal(rcl_lruvec_init(&w->lv[i], &lc), 0);
		assert_int_equal(rcl_domain_attach(tree ? child[i] : w->d,
						   &w->lv[i], 0), 0);
		for (k = 0; k < WBT_N; k++) {
			struct rcl_lru_node *n = &w->nodes[i][k];

			rcl_lru_node_init(n);
			/* A child with no usage is not scanned (memcg's rule). */
			assert_int_equal(rcl_domain_charge(tree ? child[i] : w->d,
							   1, 0, NULL), 0);
			assert_int_equal(rcl_lruvec_add(&w->lv[i], n,
							RCL_LRU_FILE, 1,
							RCL_LRU_ADD_NOBATCH),
					 0);
			assert_int_equal(rcl_lruvec_set_dirty(&w->lv[i], n), 0);
			assert_int_equal(rcl_lruvec_writeback_start(&w->lv[i], n),
					 0);
		}
	}
	assert_int_equal(pthread_create(&t, NULL, wbt_reclaim, w), 0);
	/*
	 * Each wait ends at its 100 ms deadline: advance the clock while the
	 * thread waits (an advance it has not yet seen only moves time on).
	 */
	for (k = 0; !atomic_load(&w->done) && k < 10000000; k++) {
		if (rcl_fake_clock_waiters(fc))
			rcl_fake_clock_advance(fc, 100 * RCL_NSEC_PER_MSEC);
		sched_yield();
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w->res.nr_reclaimed, 0);
	assert_int_equal(w->res.priority, 0);
	/*
	 * Priorities 6 to 0 scan (64 >> 7 = 0 below): one wait each, not one
	 * per lruvec or per domain (28), summed over the tree.
	 */
	for (i = 0; i <= WBT_LV; i++) {
		struct rcl_domain *d = i < WBT_LV ? child[i] : w->d;

		if (!d)
			continue;
		assert_int_equal(rcl_domain_vmstat(d, &v), 0);
		throttled += v.writeback_throttled;
		timeouts += v.writeback_throttle_timeouts;
	}
	assert_int_equal(throttled, 7);
	assert_int_equal(timeouts, 7);
	for (i = 0; i < WBT_LV; i++) {
		for (k = 0; k < WBT_N; k++)
			assert_int_equal(rcl_lruvec_writeback_end(
						 &w->lv[i], &w->nodes[i][k], 0),
					 0);
		assert_int_equal(rcl_domain_detach(tree ? child[i] : w->d,
						   &w->lv[i]), 0);
		for (k = 0; k < WBT_N; k++)
			assert_int_equal(rcl_lruvec_del(&w->lv[i],
							&w->nodes[i][k]),
					 0);
		assert_int_equal(rcl_lruvec_destroy(&w->lv[i]), 0);
		assert_int_equal(rcl_domain_uncharge(tree ? child[i] : w->d,
						     WBT_N), 0);
		if (tree)
			assert_int_equal(rcl_domain_free(child[i]), 0);
	}
	assert_int_equal(rcl_domain_free(w->d), 0);
	rcl_fake_clock_free(fc);
	free(w);
}

static void test_scan_writeback_throttle_once_per_pass(void **state)
{
	(void)state;
	wbt_run(false);
	wbt_run(true);
}

/* A type with no work: the others carry the pass, which still stops. */
static void test_scan_stops_with_an_empty_type(void **state)
{
	static const size_t in[2] = { 3000, 0 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_scan_control sc = {
		.nr_to_reclaim = 64, .priority = 0, .swappiness = 100,
	};

	(void)state;
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_int_equal(c->evicted[RCL_LRU_FILE], 64);
	assert_int_equal(c->evict_calls[RCL_LRU_ANON], 0);
	assert_int_equal(sc.nr_rounds, 2);
	cache_free(c);
}

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/*
 * No over-reclaim: below priority 12 a pass frees at most nr_to_reclaim +
 * 32 per list scanned in its last round, over many random shapes.
 */
static void test_scan_no_over_reclaim(void **state)
{
	uint64_t seed = 42;
	int i;

	(void)state;
	for (i = 0; i < 60; i++) {
		size_t in[2] = { rnd(&seed) % 5000, rnd(&seed) % 5000 };
		size_t act[2] = { rnd(&seed) % 3000, rnd(&seed) % 3000 };
		struct cache *c = cache_new(in, act);
		struct rcl_scan_control sc = {
			.nr_to_reclaim = 1 + rnd(&seed) % 400,
			.priority = (int)(rnd(&seed) % 12),
			.swappiness = (unsigned)(rnd(&seed) % 201),
		};

		if (i % 3 == 0)
			sc.flags = RCL_SCAN_DIRECT;	/* below 12: same bound */
		assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
		assert_true(sc.nr_reclaimed <=
			    sc.nr_to_reclaim +
				    (uint64_t)RCL_SCAN_CHUNK * sc.last_round_lists);
		assert_int_equal(sc.nr_reclaimed, c->evicted[0] + c->evicted[1]);
		assert_true(lru_check_invariants(&c->lv) >= 0);
		cache_free(c);
	}
}

/* Direct reclaim at priority 12 scans its whole target (the seed patch). */
static void test_scan_full_scan_at_priority_12_for_direct(void **state)
{
	static const size_t in[2] = { 262144, 0 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_scan_control bg = {
		.nr_to_reclaim = 1, .priority = 12, .swappiness = 100,
	};
	struct rcl_scan_control direct = bg;

	(void)state;
	/* Target 262144 >> 12 = 64: the background stops after one chunk. */
	assert_int_equal(rcl_scan_lruvec(&c->lv, &bg), 0);
	assert_int_equal(bg.nr_reclaimed, 32);
	/* Direct at priority 12 does its whole target, (262144 - 32) >> 12
	 * = 63, although 1 was enough. */
	direct.flags = RCL_SCAN_DIRECT;
	assert_int_equal(rcl_scan_lruvec(&c->lv, &direct), 0);
	assert_int_equal(direct.nr_reclaimed, 63);
	/* Below 12, direct reclaim stops at the goal too. */
	direct.priority = 11;
	direct.nr_reclaimed = 0;
	assert_int_equal(rcl_scan_lruvec(&c->lv, &direct), 0);
	assert_int_equal(direct.nr_reclaimed, 32);
	cache_free(c);
}

/* Rotations feed the cost: a busy type loses share to the other. */
static void test_scan_rotations_shift_pressure(void **state)
{
	static const size_t in[2] = { 4000, 4000 }, act[2] = { 0, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_lru_shrink_control lsc = { .type = RCL_LRU_ANON,
					      .nr_to_scan = 100 };
	uint64_t before[RCL_LRU_NR_LISTS], after[RCL_LRU_NR_LISTS];

	(void)state;
	assert_int_equal(rcl_scan_targets(&c->lv, 4, 100, before), 0);
	c->busy = true;	/* anon objects cannot go: rotations */
	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &lsc), 0);
	assert_int_equal(lsc.nr_rotated, 100);
	assert_int_equal(rcl_lruvec_cost(&c->lv, RCL_LRU_ANON), 100);
	assert_int_equal(rcl_scan_targets(&c->lv, 4, 100, after), 0);
	assert_true(after[AI] < before[AI]);
	assert_true(after[FI] > before[FI]);
	c->busy = false;
	cache_free(c);
}

/* Active lists are aged only when their inactive list is low. */
static void test_scan_deactivates_only_when_inactive_is_low(void **state)
{
	static const size_t in[2] = { 2000, 0 }, act[2] = { 1000, 0 };
	static const size_t in2[2] = { 500, 0 }, act2[2] = { 2000, 0 };
	struct cache *c = cache_new(in, act);
	struct rcl_scan_control sc = {
		.nr_to_reclaim = 100, .priority = 0, .swappiness = 100,
	};

	(void)state;
	/* 2000 inactive >= 1000 active, and still 1872 when the 100 are
	 * freed (4 rounds of 32): not low, nothing deactivated. */
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_int_equal(sc.nr_deactivated, 0);
	cache_free(c);

	c = cache_new(in2, act2);
	memset(&sc, 0, sizeof(sc));
	sc.nr_to_reclaim = 1000000;
	sc.priority = 0;
	sc.swappiness = 100;
	/* 500 inactive < 2000 active: low, the active list is aged. */
	assert_int_equal(rcl_scan_lruvec(&c->lv, &sc), 0);
	assert_true(sc.nr_deactivated > 0);
	assert_true(sc.nr_refill >= sc.nr_deactivated);
	cache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_targets_default_bias),
		cmocka_unit_test(test_scan_targets_follow_costs),
		cmocka_unit_test(test_scan_cost_decays),
		cmocka_unit_test(test_scan_targets_empty_type_gets_nothing),
		cmocka_unit_test(test_scan_targets_bad_input),
		cmocka_unit_test(test_scan_proportions_preserved_at_early_stop),
		cmocka_unit_test(test_scan_proportions_preserved_for_a_small_list),
		cmocka_unit_test(test_scan_nonproportional_mode_for_contrast),
		cmocka_unit_test(test_scan_nonproportional_over_reclaims_when_a_type_runs_out),
		cmocka_unit_test(test_scan_priority_0_reaches_one_object_lists),
		cmocka_unit_test(test_scan_writeback_throttle_once_per_pass),
		cmocka_unit_test(test_scan_stops_with_an_empty_type),
		cmocka_unit_test(test_scan_no_over_reclaim),
		cmocka_unit_test(test_scan_full_scan_at_priority_12_for_direct),
		cmocka_unit_test(test_scan_rotations_shift_pressure),
		cmocka_unit_test(test_scan_deactivates_only_when_inactive_is_low),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
