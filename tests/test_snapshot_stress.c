/* SPDX-License-Identifier: MIT */
/*
 * Consistency of the lock-free statistics while other threads change them
 * (suites 'slow' and 'concurrency'; CI runs it under ThreadSanitizer).
 *
 * test_snapshot_watermarks: one thread keeps resizing the budget between a
 * large and a small value and setting explicit watermarks; another reads
 * rcl_domain_watermarks() as fast as it can.  Every snapshot must be a set
 * that was current at one instant: min < low < high, and all three from the
 * same update (high never below a low taken from a larger budget).  Reading
 * the three values one by one fails this within a few thousand updates.
 *
 * test_snapshot_workingset: one thread keeps evicting and re-adding objects
 * with their shadows (most refaults activate); another reads
 * rcl_lruvec_workingset_stats().  Every snapshot must have restore <=
 * activate <= refault (a restore is an activated refault): the invariant the
 * all-modules stress test checks, which failed once in CI when the counters
 * were read in the order they are incremented.
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

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "test_util.h"

/* cmocka's allocator is not thread-safe: use libc's in threads. */
#undef malloc
#undef calloc
#undef free

#define BIG_BUDGET (1ull << 30)
#define SMALL_BUDGET 4096ull

static atomic_bool done, reader_up;

struct wm_reader {
	struct rcl_domain *d;
	uint64_t big_floor;	/* the lowest min of the large sets */
	unsigned long reads, torn;
};

static void *wm_reader_main(void *arg)
{
	struct wm_reader *r = arg;
	struct rcl_watermarks wm;

	atomic_store(&reader_up, true);
	while (!atomic_load(&done)) {
		T_EQ(rcl_domain_watermarks(r->d, &wm), 0);
		r->reads++;
		/*
		 * Every set the writer installs has min < low < high, and
		 * lies either wholly at or below the small budget or wholly
		 * at or above big_floor: a mix of two sets breaks the order
		 * or straddles the gap between them.
		 */
		if (!(wm.min < wm.low && wm.low < wm.high) ||
		    !(wm.high <= SMALL_BUDGET || wm.min >= r->big_floor))
			r->torn++;
	}
	return NULL;
}

static void test_snapshot_watermarks(void **state)
{
	struct rcl_domain_config cfg = { .budget = BIG_BUDGET };
	struct rcl_watermarks wm, big;
	struct rcl_domain *d;
	struct wm_reader r = { 0 };
	unsigned i, n = ops_per_thread(200000);
	pthread_t tid;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_int_equal(rcl_domain_watermarks(d, &big), 0);
	assert_true(big.min > SMALL_BUDGET);
	r.d = d;
	r.big_floor = big.min < BIG_BUDGET / 2 ? big.min : BIG_BUDGET / 2;
	atomic_store(&done, false);
	atomic_store(&reader_up, false);
	assert_int_equal(pthread_create(&tid, NULL, wm_reader_main, &r), 0);
	while (!atomic_load(&reader_up))
		sched_yield();
	for (i = 0; i < n; i++) {
		switch (i % 3) {
		case 0:
			T_EQ(rcl_domain_set_budget(d, SMALL_BUDGET), 0);
			break;
		case 1:
			T_EQ(rcl_domain_set_budget(d, BIG_BUDGET), 0);
			break;
		default:
			wm.min = BIG_BUDGET / 2 + i;
			wm.low = wm.min + 1 + i % 7;
			wm.high = wm.low + 1 + i % 5;
			T_EQ(rcl_domain_set_watermarks(d, &wm), 0);
			break;
		}
	}
	atomic_store(&done, true);
	assert_int_equal(pthread_join(tid, NULL), 0);
	printf("watermarks: %u updates, %lu reads, %lu torn\n", n, r.reads,
	       r.torn);
	assert_true(r.reads > 0);
	assert_int_equal(r.torn, 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

#define NOBJ 64

struct obj {
	struct rcl_lru_node lru;
	bool cached;
	uint64_t shadow;
};

static struct obj objs[NOBJ];

static enum rcl_evict_status evict(struct rcl_lru_node *node,
				   struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);

	o->cached = false;
	o->shadow = ctl->shadow;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops ops = { .evict = evict };

struct ws_reader {
	struct rcl_lruvec *lv;
	unsigned long reads, bad;
	uint64_t last_refault;
};

static void *ws_reader_main(void *arg)
{
	struct ws_reader *r = arg;
	struct rcl_workingset_stats ws;

	atomic_store(&reader_up, true);
	while (!atomic_load(&done)) {
		T_EQ(rcl_lruvec_workingset_stats(r->lv, &ws), 0);
		r->reads++;
		if (ws.activate > ws.refault || ws.restore > ws.activate ||
		    ws.refault < r->last_refault)
			r->bad++;
		r->last_refault = ws.refault;
	}
	return NULL;
}

static void test_snapshot_workingset(void **state)
{
	struct rcl_lruvec_config cfg = { .ops = &ops };
	struct rcl_lruvec lv;
	struct rcl_workingset_stats ws;
	struct ws_reader r = { 0 };
	unsigned i, round, rounds = ops_per_thread(200000) / NOBJ;
	pthread_t tid;

	(void)state;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	memset(objs, 0, sizeof(objs));
	r.lv = &lv;
	atomic_store(&done, false);
	atomic_store(&reader_up, false);
	assert_int_equal(pthread_create(&tid, NULL, ws_reader_main, &r), 0);
	while (!atomic_load(&reader_up))
		sched_yield();
	for (round = 0; round < rounds; round++) {
		struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
						     .nr_to_scan = 4 * NOBJ };

		for (i = 0; i < NOBJ; i++) {
			rcl_lru_node_init(&objs[i].lru);
			T_EQ(rcl_lruvec_add_refault(&lv, &objs[i].lru,
						    RCL_LRU_FILE, 1,
						    RCL_LRU_ADD_NOBATCH,
						    objs[i].shadow, NULL),
			     0);
			objs[i].cached = true;
		}
		/* Everything out again: active to inactive, then evicted. */
		T_EQ(rcl_lruvec_shrink_active(&lv, &sc), 0);
		T_EQ(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
		for (i = 0; i < NOBJ; i++)
			T_CHECK(!objs[i].cached);
	}
	atomic_store(&done, true);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(rcl_lruvec_workingset_stats(&lv, &ws), 0);
	printf("workingset: %u rounds, refault %llu activate %llu restore "
	       "%llu, %lu reads, %lu inconsistent\n",
	       rounds, (unsigned long long)ws.refault,
	       (unsigned long long)ws.activate, (unsigned long long)ws.restore,
	       r.reads, r.bad);
	/* The scenario exercises the invariant: most refaults activate. */
	assert_true(ws.activate > ws.refault / 2);
	assert_true(r.reads > 0);
	assert_int_equal(r.bad, 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_watermarks),
		cmocka_unit_test(test_snapshot_workingset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
