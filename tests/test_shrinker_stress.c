/* SPDX-License-Identifier: MIT */
/*
 * Concurrency test of the shrinker registry (suites 'slow' and
 * 'concurrency'; CI runs it under ThreadSanitizer and AddressSanitizer).
 *
 * Eight threads create, register and free shrinkers in a loop (10,000
 * cycles in all) while two threads shrink the whole registry, at random
 * partitions and priorities, as fast as they can.  Each shrinker's callbacks
 * check a record that its owner marks the moment rcl_shrinker_free()
 * returns: a callback that finds the mark ran after free returned, which the
 * API forbids.  Under ASan, any access by a walker to a freed shrinker is a
 * use-after-free.
 *
 * A second test runs waves of 12 short-lived reclaiming threads (more than
 * the library's 8 stripes, so some share one, and each wave's exits orphan
 * the stripes the next wave takes over) against 8 shrinkers, with scans
 * that sometimes refuse, while a reader sums backlogs and statistics: at
 * the end no deferred work is lost or done twice.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "test_util.h"

#undef malloc
#undef calloc
#undef free

#define CHURNERS 8
#define SHRINKERS 2
#define CYCLES_PER_CHURNER 1250	/* 10,000 in all */

struct record {
	atomic_int freed;	/* set once rcl_shrinker_free() returned */
	atomic_ulong calls;
	struct rcl_shrinker *self;
	unsigned seed;
};

static struct rcl_shrinker_registry *reg;
static atomic_int churners_left;
static atomic_ulong late_calls, total_calls, deadlk_seen;

static unsigned long rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) & 0xffff;
}

static void check_record(struct record *r)
{
	if (atomic_load(&r->freed))
		atomic_fetch_add(&late_calls, 1);
	atomic_fetch_add(&r->calls, 1);
	atomic_fetch_add(&total_calls, 1);
}

static unsigned long st_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	struct record *r = sc->priv;

	T_CHECK(s == r->self);
	check_record(r);
	return 1000 + (unsigned long)sc->partition;
}

static unsigned long st_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	struct record *r = sc->priv;
	unsigned seed = (unsigned)(uintptr_t)sc ^ r->seed;
	unsigned long x = rnd(&seed);

	T_CHECK(s == r->self);
	check_record(r);
	if (x % 64 == 0) {
		/* Freeing oneself from one's own callback is refused. */
		T_CHECK(rcl_shrinker_free(s) == -EDEADLK);
		atomic_fetch_add(&deadlk_seen, 1);
	}
	if (x % 16 == 1)
		sched_yield();	/* widen the window for a concurrent free */
	if (x % 8 == 2)
		return RCL_SHRINK_STOP;
	return sc->nr_to_scan;
}

static const struct rcl_shrinker_ops st_ops = {
	.count_objects = st_count,
	.scan_objects = st_scan,
};

struct churner {
	pthread_t tid;
	unsigned idx;
	struct record rec[CYCLES_PER_CHURNER];
};

static void *churn_main(void *arg)
{
	struct churner *c = arg;
	unsigned seed = 77u + c->idx;
	unsigned i;

	for (i = 0; i < CYCLES_PER_CHURNER; i++) {
		struct record *r = &c->rec[i];
		struct rcl_shrinker_config cfg = {
			.ops = &st_ops,
			.priv = r,
			.name = "stress",
			.seeks = (int)(rnd(&seed) % 4),
			.batch = (long)(rnd(&seed) % 3) * 64,
			.flags = (rnd(&seed) & 1) ? RCL_SHRINKER_PARTITION_AWARE : 0,
		};
		struct rcl_shrinker *s;
		unsigned spin;

		r->seed = seed;
		T_CHECK(rcl_shrinker_new(reg, &cfg, &s) == 0);
		r->self = s;
		T_CHECK(rcl_shrinker_register(s) == 0);
		for (spin = rnd(&seed) % 4; spin; spin--) {
			if (rnd(&seed) & 1)
				T_CHECK(rcl_shrinker_shrink(s, 1, 6, RCL_CTX_CAPABLE,
							    NULL) == 0);
			sched_yield();
		}
		T_CHECK(rcl_shrinker_free(s) == 0);
		atomic_store(&r->freed, 1);
	}
	atomic_fetch_sub(&churners_left, 1);
	return NULL;
}

static void *shrink_main(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	unsigned long walks = 0;

	while (atomic_load(&churners_left) > 0) {
		struct rcl_shrink_result res = { 0 };

		T_CHECK(rcl_shrinker_registry_shrink(reg, rnd(&seed) % 2,
						     (int)(rnd(&seed) % 13),
						     RCL_CTX_CAPABLE, &res) == 0);
		walks++;
	}
	return (void *)walks;
}

static void test_shrinker_stress_register_free_while_shrinking(void **state)
{
	struct rcl_shrinker_registry_config rc = { .nr_partitions = 2 };
	struct churner *c = calloc(CHURNERS, sizeof(*c));
	pthread_t sh[SHRINKERS];
	unsigned long walks = 0;
	unsigned i;

	(void)state;
	T_CHECK(c);
	T_CHECK(rcl_shrinker_registry_new(&rc, &reg) == 0);
	atomic_store(&churners_left, CHURNERS);
	for (i = 0; i < SHRINKERS; i++)
		T_CHECK(pthread_create(&sh[i], NULL, shrink_main,
				       (void *)(uintptr_t)(i + 1)) == 0);
	for (i = 0; i < CHURNERS; i++) {
		c[i].idx = i;
		T_CHECK(pthread_create(&c[i].tid, NULL, churn_main, &c[i]) == 0);
	}
	for (i = 0; i < CHURNERS; i++)
		T_CHECK(pthread_join(c[i].tid, NULL) == 0);
	for (i = 0; i < SHRINKERS; i++) {
		void *w;

		T_CHECK(pthread_join(sh[i], &w) == 0);
		walks += (unsigned long)(uintptr_t)w;
	}
	print_message("shrinker stress: %u cycles, %lu walks, %lu callbacks, "
		      "%lu -EDEADLK checks, %lu callbacks after free\n",
		      CHURNERS * CYCLES_PER_CHURNER, walks,
		      atomic_load(&total_calls), atomic_load(&deadlk_seen),
		      atomic_load(&late_calls));
	assert_int_equal(atomic_load(&late_calls), 0);
	assert_true(atomic_load(&total_calls) > 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	free(c);
}

/* ------------------------------------------------------------------------- */
/* Remainders on stripes across thread lifetimes                              */
/* ------------------------------------------------------------------------- */

#define RM_SHRINKERS 8
#define RM_THREADS 12
#define RM_WAVES 3
#define RM_CALLS 150
#define RM_F 10000ul

static struct rcl_shrinker *rm_s[RM_SHRINKERS];
static atomic_int rm_running;

static unsigned long rm_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return RM_F;
}

static unsigned long rm_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	static atomic_uint n;

	(void)s;
	/* One call in 8 refuses: its work goes to the shared backlog. */
	if (atomic_fetch_add_explicit(&n, 1, memory_order_relaxed) % 8 == 3)
		return RCL_SHRINK_STOP;
	return sc->nr_to_scan;
}

static const struct rcl_shrinker_ops rm_ops = {
	.count_objects = rm_count,
	.scan_objects = rm_scan,
};

static pthread_barrier_t rm_all_alive;

static void *rm_shrink_main(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg, i;

	for (i = 0; i < RM_CALLS; i++) {
		T_CHECK(rcl_shrinker_registry_shrink(reg, rnd(&seed) % 2, 6,
						     RCL_CTX_CAPABLE, NULL) == 0);
		/* All alive at once, so that some share a stripe. */
		if (i == 0)
			pthread_barrier_wait(&rm_all_alive);
	}
	return NULL;
}

static void *rm_read_main(void *arg)
{
	unsigned long sink = 0;

	(void)arg;
	while (atomic_load(&rm_running)) {
		for (unsigned i = 0; i < RM_SHRINKERS; i++) {
			struct rcl_shrinker_stats st;
			unsigned long b;

			T_CHECK(rcl_shrinker_stats(rm_s[i], &st) == 0);
			T_CHECK(rcl_shrinker_backlog(rm_s[i], 0, &b) == 0);
			/* F/2 cap, plus less than a batch per stripe */
			T_CHECK(b <= RM_F / 2 + 8 * RCL_SHRINK_BATCH);
			sink += b + st.calls;
		}
		sched_yield();
	}
	return (void *)sink;
}

static void test_shrinker_stress_remainders_across_threads(void **state)
{
	struct rcl_shrinker_registry_config rc = { .nr_partitions = 2 };
	pthread_t th[RM_THREADS], rd;
	unsigned i, w;

	(void)state;
	T_CHECK(rcl_shrinker_registry_new(&rc, &reg) == 0);
	for (i = 0; i < RM_SHRINKERS; i++) {
		struct rcl_shrinker_config cfg = {
			.ops = &rm_ops,
			.name = "remainder",
			.seeks = 2,
			.flags = (i & 1) ? RCL_SHRINKER_PARTITION_AWARE : 0,
		};

		T_CHECK(rcl_shrinker_new(reg, &cfg, &rm_s[i]) == 0);
		T_CHECK(rcl_shrinker_register(rm_s[i]) == 0);
	}
	T_CHECK(pthread_barrier_init(&rm_all_alive, NULL, RM_THREADS) == 0);
	atomic_store(&rm_running, 1);
	T_CHECK(pthread_create(&rd, NULL, rm_read_main, NULL) == 0);
	for (w = 0; w < RM_WAVES; w++) {
		for (i = 0; i < RM_THREADS; i++)
			T_CHECK(pthread_create(&th[i], NULL, rm_shrink_main,
					       (void *)(uintptr_t)(w * 100 + i + 1)) == 0);
		for (i = 0; i < RM_THREADS; i++)
			T_CHECK(pthread_join(th[i], NULL) == 0);
	}
	atomic_store(&rm_running, 0);
	T_CHECK(pthread_join(rd, NULL) == 0);
	pthread_barrier_destroy(&rm_all_alive);

	/*
	 * Every call past counting adds exactly 312.5 objects of pressure at
	 * priority 6 (and the cap is never reached): scanned + backlog is
	 * calls * 312.5, less the backlogs' rounding down to whole objects.
	 */
	for (i = 0; i < RM_SHRINKERS; i++) {
		struct rcl_shrinker_stats st;
		unsigned long b, sum = 0;
		unsigned p, np = (i & 1) ? 2 : 1;
		double want, have;

		T_CHECK(rcl_shrinker_stats(rm_s[i], &st) == 0);
		for (p = 0; p < np; p++) {
			T_CHECK(rcl_shrinker_backlog(rm_s[i], p, &b) == 0);
			sum += b;
		}
		want = (double)st.calls * 312.5;
		have = (double)st.scanned + (double)sum;
		if (have > want || want - have >= (double)np)
			fail_msg("shrinker %u: %llu calls, %llu scanned, backlog %lu: %.1f, expected %.1f",
				 i, (unsigned long long)st.calls,
				 (unsigned long long)st.scanned, sum, have, want);
		T_CHECK(st.calls == (unsigned long long)RM_WAVES * RM_THREADS *
					    RM_CALLS);
		T_CHECK(st.stops > 0);
		T_CHECK(rcl_shrinker_free(rm_s[i]) == 0);
	}
	T_CHECK(rcl_shrinker_registry_free(reg) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shrinker_stress_register_free_while_shrinking),
		cmocka_unit_test(test_shrinker_stress_remainders_across_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
