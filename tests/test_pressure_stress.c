/* SPDX-License-Identifier: MIT */
/*
 * Concurrency test of the pressure monitor (<reclaim/pressure.h>), suite
 * 'concurrency' (CI runs it under ThreadSanitizer and AddressSanitizer).
 *
 * The library thread runs (rcl_pressure_start()) on the real clock with a
 * 1 ms interval and window, over a fake cgroup v2 directory whose files a
 * fourth thread keeps rewriting (atomically, by rename: working set 50 to
 * 99 % of the limit, the limit moving, memory.events counters rising), so
 * every interval reads them, changes levels, acts and moves the container
 * budget (RCL_PRESSURE_FOLLOW_CGROUP).  Two workers each notify their own
 * manual source at random levels while they use an object cache on the
 * domain (get-or-insert, put, del: the cache charges and uncharges) and
 * charge and uncharge raw amounts; the monitor's actions reclaim from that
 * cache in whichever thread acts.  The fourth thread also reads the stats,
 * the sources, the memory sample and the deadline, adds manual sources,
 * checks that rcl_pressure_fd() is -EBUSY while the thread runs, and now
 * and then stops and restarts the thread.  A bounded run (300 ms of wall
 * time), then stop and free.
 *
 * Afterwards: the counters add up (the monitor's actions and empty actions
 * are the sums of its sources'; trims equal the trim hook's calls), the
 * budget lies between the floor and base, no reading failed, and the
 * domain's usage is exactly the cache's weight plus the raw charges held,
 * then 0.  Threads record into atomics; the main thread asserts.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define UNIT_TESTING 1
#include <cmocka.h>
/* cmocka's allocator is not thread-safe: libc's in every thread. */
#undef malloc
#undef calloc
#undef free

#include <reclaim/reclaim.h>

#include "test_util.h"

#define RUN_NS (300 * RCL_NSEC_PER_MSEC)
#define BUDGET (1u << 20)
#define NR_KEYS 2048
#define BLOB 1000u
#define MB 1000000ull

/* ------------------------------------------------------------------------- */
/* The object cache                                                           */
/* ------------------------------------------------------------------------- */

struct sobj {
	struct rcl_objcache_node node;
	uint32_t key;
	uint32_t size;
};

static atomic_long live;
static atomic_ulong lib_errors, trims, notifies, inserts, blobs_charged;

static void lib_error(int line, int err)
{
	fprintf(stderr, "test_pressure_stress.c:%d: unexpected %d\n", line, err);
	atomic_fetch_add(&lib_errors, 1);
}

#define LIB_ERROR(err) lib_error(__LINE__, (err))

static void s_destructor(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	atomic_fetch_sub(&live, 1);
	free(rcl_container_of(n, struct sobj, node));
}

static const struct rcl_objcache_ops s_ops = { .destructor = s_destructor };

static void count_trim(void *priv)
{
	T_PEQ(priv, &trims);
	atomic_fetch_add(&trims, 1);
}

/* ------------------------------------------------------------------------- */
/* Shared state                                                               */
/* ------------------------------------------------------------------------- */

static struct rcl_pressure *mon;
static struct rcl_domain *dom;
static struct rcl_objcache *cache;
static char cgdir[128];
static atomic_bool stop_all;

static uint64_t mono_now(void)
{
	return rcl_clock_monotonic()->now(NULL);
}

static uint64_t next(uint64_t *s)
{
	return rng_next(s);
}

/* ------------------------------------------------------------------------- */
/* Files                                                                      */
/* ------------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3))) static void put_file(const char *name,
							   const char *fmt, ...)
{
	char tmp[PATH_MAX], path[PATH_MAX], buf[2048];
	va_list ap;
	int n, fd;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	T_CHECK(n > 0 && (size_t)n < sizeof(buf));
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", cgdir, name);
	snprintf(path, sizeof(path), "%s/%s", cgdir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	T_CHECK(fd >= 0);
	T_EQ(write(fd, buf, (size_t)n), n);
	T_EQ(close(fd), 0);
	T_EQ(rename(tmp, path), 0);
}

/* A v2 cgroup: working set @ws of @limit, 10 MB inactive, the events. */
static void cg_write(uint64_t ws, uint64_t limit, uint64_t ev_high,
		     uint64_t ev_max)
{
	unsigned long long in = 10 * MB;

	put_file("memory.stat", "anon %llu\nfile %llu\ninactive_file %llu\n"
		 "active_file 0\n", (unsigned long long)ws, in, in);
	put_file("memory.current", "%llu\n", (unsigned long long)ws + in);
	put_file("memory.max", "%llu\n", (unsigned long long)limit);
	put_file("memory.high", "max\n");
	put_file("memory.events", "low 0\nhigh %llu\nmax %llu\noom 0\n"
		 "oom_kill 0\n", (unsigned long long)ev_high,
		 (unsigned long long)ev_max);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* ------------------------------------------------------------------------- */
/* Workers: a manual source each, the cache, raw charges                      */
/* ------------------------------------------------------------------------- */

struct worker {
	pthread_t t;
	int src;
	uint64_t rng;
	uint64_t blob;		/* raw charge held */
};

static void get_insert_put(struct worker *w, uint32_t key)
{
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n;
	struct sobj *o;
	int err;

	n = rcl_objcache_get(cache, &key, sizeof(key), &miss);
	if (!n) {
		o = calloc(1, sizeof(*o));
		T_CHECK(o);
		o->key = key;
		o->size = 64 + (uint32_t)(next(&w->rng) % 512);
		atomic_fetch_add(&live, 1);
		err = rcl_objcache_insert(cache, &o->node, &o->key,
					  sizeof(o->key), o->size,
					  RCL_CTX_CAPABLE, &miss, &n);
		if (err) {
			atomic_fetch_sub(&live, 1);
			free(o);
			if (err != -EEXIST && err != -ENOMEM)
				LIB_ERROR(err);
		} else {
			atomic_fetch_add(&inserts, 1);
			n = &o->node;
		}
	}
	if (n && (err = rcl_objcache_put(cache, n)))
		LIB_ERROR(err);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load(&stop_all)) {
		uint64_t r = next(&w->rng);
		uint32_t key = (uint32_t)((r >> 16) % NR_KEYS);
		unsigned op = (unsigned)(r % 100);
		int err;

		if (op < 15) {
			enum rcl_pressure_level l =
				(enum rcl_pressure_level)((r >> 8) % 4);

			err = rcl_pressure_notify(mon, w->src, l);
			if (err)
				LIB_ERROR(err);
			atomic_fetch_add(&notifies, 1);
		} else if (op < 25) {
			if (w->blob) {
				T_EQ(rcl_domain_uncharge(dom, w->blob), 0);
				w->blob = 0;
			} else {
				err = rcl_domain_charge(dom, BLOB, RCL_CTX_CAPABLE,
							NULL);
				if (!err) {
					w->blob = BLOB;
					atomic_fetch_add(&blobs_charged, 1);
				} else if (err != -ENOMEM) {
					LIB_ERROR(err);
				}
			}
		} else if (op < 32) {
			err = rcl_objcache_del(cache, &key, sizeof(key));
			if (err && err != -ENOENT)
				LIB_ERROR(err);
		} else {
			get_insert_put(w, key);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The fourth thread: files, readers, sources, stop and start                 */
/* ------------------------------------------------------------------------- */

static atomic_ulong restarts, reads, added;

static void *control_main(void *arg)
{
	uint64_t rng = 99, ev_high = 0, ev_max = 0, i;

	(void)arg;
	for (i = 0; !atomic_load(&stop_all); i++) {
		uint64_t r = next(&rng);
		uint64_t limit = (100 + r % 100) * MB;
		uint64_t ws = limit / 100 * (50 + (r >> 8) % 50);
		struct rcl_pressure_stats st;
		struct rcl_pressure_source_info si;
		struct rcl_memory_sample ms;
		unsigned j;
		int err;

		if ((r >> 16) % 8 == 0)
			ev_high++;
		if ((r >> 16) % 16 == 1)
			ev_max++;
		cg_write(ws, limit, ev_high, ev_max);

		T_EQ(rcl_pressure_stats(mon, &st), 0);
		T_CHECK(st.nr_sources >= 3);
		for (j = 0; j < st.nr_sources; j++)
			T_EQ(rcl_pressure_source_info(mon, (int)j, &si), 0);
		T_EQ(rcl_pressure_memory(mon, &ms), 0);
		T_CHECK(ms.rss_bytes > 0);
		(void)rcl_pressure_next_deadline(mon);
		atomic_fetch_add(&reads, 1);

		if (i % 4 == 1 && st.nr_sources < RCL_PRESSURE_MAX_SOURCES) {
			err = rcl_pressure_add_manual(mon);
			if (err < 0)
				LIB_ERROR(err);
			else
				atomic_fetch_add(&added, 1);
		}
		if (i % 8 == 5) {
			err = rcl_pressure_fd(mon);
			if (err != -EBUSY)
				LIB_ERROR(err);
			T_EQ(rcl_pressure_stop(mon), 0);
			T_CHECK(rcl_pressure_fd(mon) >= 0);
			T_EQ(rcl_pressure_start(mon), 0);
			atomic_fetch_add(&restarts, 1);
		}
		{
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The test                                                                   */
/* ------------------------------------------------------------------------- */

static int sum_weight(struct rcl_objcache_node *n, void *arg)
{
	uint64_t *sum = arg;

	*sum += rcl_container_of(n, struct sobj, node)->size;
	return 0;
}

static void test_pressure_stress_thread_notify_charge_read(void **state)
{
	struct rcl_domain_config dc = { .budget = BUDGET };
	struct rcl_objcache_config cc = { .ops = &s_ops, .nr_shards = 4,
					  .seed = 7 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure_stats st;
	struct worker w[2];
	pthread_t control;
	uint64_t t_end, actions = 0, empty = 0, weight = 0, blobs = 0, lo;
	const char *base = getenv("TMPDIR");
	unsigned i;
	int cg;

	(void)state;
	if (!base || base[0] != '/' || strlen(base) > 40)
		base = "/tmp";
	snprintf(cgdir, sizeof(cgdir), "%s/rcl-pstress-XXXXXX", base);
	assert_non_null(mkdtemp(cgdir));
	cg_write(50 * MB, 100 * MB, 0, 0);

	assert_int_equal(rcl_domain_new(&dc, &dom), 0);
	assert_int_equal(rcl_objcache_new(dom, &cc, &cache), 0);
	pc.domain = dom;
	pc.flags = RCL_PRESSURE_FOLLOW_CGROUP;
	pc.window_ns = RCL_NSEC_PER_MSEC;
	pc.backoff_max_ns = 4 * RCL_NSEC_PER_MSEC;
	pc.interval_ns = RCL_NSEC_PER_MSEC;
	pc.trim = count_trim;
	pc.trim_priv = &trims;
	pc.trim_min_bytes = 1;
	pc.trim_interval_ns = RCL_NSEC_PER_MSEC;
	assert_int_equal(rcl_pressure_new(&pc, &mon), 0);
	cg = rcl_pressure_add_cgroup(mon, cgdir, 0);
	assert_int_equal(cg, 0);
	for (i = 0; i < 2; i++) {
		w[i].src = rcl_pressure_add_manual(mon);
		assert_int_equal(w[i].src, 1 + (int)i);
		w[i].rng = 1000 + i;
		w[i].blob = 0;
	}
	assert_int_equal(rcl_pressure_start(mon), 0);

	atomic_store(&stop_all, false);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i].t, NULL, worker_main, &w[i]), 0);
	assert_int_equal(pthread_create(&control, NULL, control_main, NULL), 0);
	t_end = mono_now() + RUN_NS;
	while (mono_now() < t_end) {
		struct timespec ts = { 0, 5000000 };

		nanosleep(&ts, NULL);
	}
	atomic_store(&stop_all, true);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_join(w[i].t, NULL), 0);
	assert_int_equal(pthread_join(control, NULL), 0);
	assert_int_equal(rcl_pressure_stop(mon), 0);

	assert_int_equal(atomic_load(&lib_errors), 0);
	assert_int_equal(rcl_pressure_stats(mon, &st), 0);
	for (i = 0; i < st.nr_sources; i++) {
		struct rcl_pressure_source_info si;

		assert_int_equal(rcl_pressure_source_info(mon, (int)i, &si), 0);
		actions += si.actions;
		empty += si.empty_actions;
		assert_true(si.empty_actions <= si.actions);
		assert_true(si.wait_ns >= pc.window_ns);
		assert_true(si.wait_ns <= pc.backoff_max_ns);
	}
	assert_int_equal(st.nr_sources, 3 + atomic_load(&added));
	assert_int_equal(st.actions, actions);
	assert_int_equal(st.empty_actions, empty);
	assert_int_equal(st.trims, atomic_load(&trims));
	assert_true(st.trims <= st.actions);
	assert_int_equal(st.base_budget, BUDGET);
	/* The floor is the pressure budget's; the container binds below it. */
	lo = st.container_budget ? st.container_budget : 1;
	if (lo > BUDGET / 64)
		lo = BUDGET / 64;
	assert_true(st.budget >= lo && st.budget <= BUDGET);
	assert_int_equal(rcl_domain_budget(dom), st.budget);
	assert_int_equal(st.read_errors, 0);
	assert_true(st.dispatches > 0);
	assert_true(atomic_load(&reads) > 0);
	print_message("pressure stress: %llu actions (%llu empty), %llu trims, "
		      "%llu dispatches, %lu notifies, %lu inserts, %lu raw "
		      "charges, %lu restarts, %lu reads, budget %llu\n",
		      (unsigned long long)st.actions,
		      (unsigned long long)st.empty_actions,
		      (unsigned long long)st.trims,
		      (unsigned long long)st.dispatches, atomic_load(&notifies),
		      atomic_load(&inserts), atomic_load(&blobs_charged),
		      atomic_load(&restarts), atomic_load(&reads),
		      (unsigned long long)st.budget);
	assert_int_equal(rcl_pressure_free(mon), 0);

	/* The domain's usage is exactly what is held. */
	assert_int_equal(rcl_objcache_for_each(cache, sum_weight, &weight), 0);
	for (i = 0; i < 2; i++)
		blobs += w[i].blob;
	assert_int_equal(rcl_domain_usage(dom), weight + blobs);
	for (i = 0; i < 2; i++)
		assert_int_equal(rcl_domain_uncharge(dom, w[i].blob), 0);
	assert_int_equal(rcl_objcache_destroy(cache), 0);
	assert_int_equal(atomic_load(&live), 0);
	assert_int_equal(rcl_domain_usage(dom), 0);
	assert_int_equal(rcl_domain_free(dom), 0);
	assert_int_equal(nftw(cgdir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/*
 * Dispatch while sources are added: rcl_pressure_add_manual() takes only
 * the state lock, so whatever dispatch reads of the source table must be
 * read under it.  One thread dispatches in a loop (nothing is due: each
 * call is a short walk of the sources) while this one fills monitor after
 * monitor with manual sources, for 200 ms of wall time.
 */
static atomic_bool stop_dispatch;
static struct rcl_pressure *_Atomic disp_mon;
static atomic_ulong dispatched;

static void *dispatch_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_dispatch)) {
		/* Taken while dispatching: the main thread cannot free it. */
		struct rcl_pressure *p = atomic_exchange(&disp_mon, NULL);

		if (!p)
			continue;
		T_CHECK(rcl_pressure_dispatch(p) >= 0);
		atomic_fetch_add(&dispatched, 1);
		atomic_store(&disp_mon, p);	/* handed back */
	}
	return NULL;
}

static void test_pressure_stress_dispatch_while_adding(void **state)
{
	struct rcl_domain_config dc = { .budget = BUDGET };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_domain *d;
	pthread_t t;
	uint64_t t_end;
	unsigned long monitors = 0;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	pc.interval_ns = 3600 * RCL_NSEC_PER_SEC;
	atomic_store(&stop_dispatch, false);
	atomic_store(&disp_mon, NULL);
	assert_int_equal(pthread_create(&t, NULL, dispatch_main, NULL), 0);
	t_end = mono_now() + 200 * RCL_NSEC_PER_MSEC;
	while (mono_now() < t_end) {
		struct rcl_pressure *p;
		unsigned i;

		assert_int_equal(rcl_pressure_new(&pc, &p), 0);
		atomic_store(&disp_mon, p);
		for (i = 0; i < RCL_PRESSURE_MAX_SOURCES; i++)
			assert_int_equal(rcl_pressure_add_manual(p), (int)i);
		assert_int_equal(rcl_pressure_add_manual(p), -ENOSPC);
		/* Take it back from the dispatching thread, then free it. */
		while (atomic_exchange(&disp_mon, NULL) != p)
			;
		assert_int_equal(rcl_pressure_free(p), 0);
		monitors++;
	}
	atomic_store(&stop_dispatch, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("dispatch while adding: %lu monitors, %lu dispatches\n",
		      monitors, atomic_load(&dispatched));
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * Two threads stop the library thread at once (every function but free is
 * thread-safe): each stop returns 0 once the thread is gone, and exactly
 * one of them joins it.  Start, two concurrent stops, again, for 300 ms of
 * wall time; each round is waited for with a bound, so that a stop that
 * never returns fails the test instead of hanging it.
 */
static struct rcl_pressure *_Atomic stop_mon;
static atomic_int stop_go, stop_bad;
static atomic_uint stop_done;

static void *stopper_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_go))
		sched_yield();
	if (rcl_pressure_stop(atomic_load(&stop_mon)))
		atomic_fetch_add(&stop_bad, 1);
	atomic_fetch_add(&stop_done, 1);
	return NULL;
}

static void test_pressure_stress_concurrent_stops(void **state)
{
	struct rcl_domain_config dc = { .budget = BUDGET };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure *p;
	struct rcl_domain *d;
	uint64_t t_end;
	unsigned long rounds = 0;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	pc.interval_ns = RCL_NSEC_PER_MSEC;
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	atomic_store(&stop_mon, p);
	atomic_store(&stop_bad, 0);
	t_end = mono_now() + RUN_NS;
	while (mono_now() < t_end) {
		pthread_t a, b;
		unsigned long spins;

		atomic_store(&stop_go, 0);
		atomic_store(&stop_done, 0);
		assert_int_equal(rcl_pressure_start(p), 0);
		assert_int_equal(pthread_create(&a, NULL, stopper_main, NULL), 0);
		assert_int_equal(pthread_create(&b, NULL, stopper_main, NULL), 0);
		atomic_store(&stop_go, 1);
		for (spins = 0; atomic_load(&stop_done) < 2 && spins < 10000; spins++) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
		if (atomic_load(&stop_done) < 2)
			fail_msg("round %lu: a concurrent rcl_pressure_stop() did "
				 "not return", rounds);
		assert_int_equal(pthread_join(a, NULL), 0);
		assert_int_equal(pthread_join(b, NULL), 0);
		/* Stopped: the descriptor is the caller's again. */
		assert_true(rcl_pressure_fd(p) >= 0);
		rounds++;
	}
	assert_int_equal(atomic_load(&stop_bad), 0);
	print_message("concurrent stops: %lu rounds\n", rounds);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pressure_stress_thread_notify_charge_read),
		cmocka_unit_test(test_pressure_stress_dispatch_while_adding),
		cmocka_unit_test(test_pressure_stress_concurrent_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
