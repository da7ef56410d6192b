/* SPDX-License-Identifier: MIT */
/*
 * The bad-input audit (issue 7, point 4): for every public function, what it
 * does with NULL arguments, out-of-range values, the wrong object and double
 * operations.  Each test asserts the behaviour its header documents; the
 * table in docs/bad-input-audit.md names, for every function and case, the
 * test that covers it.
 *
 * Conventions.  The library's error rule (common.h) is that cheaply
 * detectable misuse returns a negative errno and changes nothing, so most
 * tests check both the code and that the object is unchanged afterwards.
 * Genuine use-after-free (a second rcl_shrinker_free(), say) is the caller's
 * contract and is not exercised.  A test that found a bug carries the
 * comment "BUG: see docs/bad-input-audit.md": it records the result, cleans
 * up, and only then asserts the documented behaviour, so that a failure
 * leaks nothing.
 *
 * Callbacks that run on library threads (the background reclaimer, the
 * flusher thread) record into atomics; the test thread polls them.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
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

#include <reclaim/reclaim.h>

#include "lru_check.h"

/* ------------------------------------------------------------------------- */
/* Fixtures                                                                   */
/* ------------------------------------------------------------------------- */

#define NOBATCH RCL_LRU_ADD_NOBATCH
#define W 10u

struct obj {
	struct rcl_lru_node lru;
	uint64_t shadow;
};

/*
 * The evict callback of every lruvec here.  Without a hook it answers BUSY,
 * so objects (which live on the test's stack) are never forgotten.
 */
typedef enum rcl_evict_status (*evict_hook_fn)(struct rcl_lru_node *node,
					       struct rcl_evict_control *ctl);
static evict_hook_fn evict_hook;

static enum rcl_evict_status evict_cb(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	return evict_hook ? evict_hook(node, ctl) : RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops ops = { .evict = evict_cb };
static const struct rcl_lruvec_ops no_evict_ops = { .evict = NULL };

static void lv_init_n(struct rcl_lruvec *lv, unsigned nr_types)
{
	struct rcl_lruvec_config cfg = { .ops = &ops, .nr_types = nr_types };

	assert_int_equal(rcl_lruvec_init(lv, &cfg), 0);
}

static void lv_init(struct rcl_lruvec *lv)
{
	lv_init_n(lv, 0);
}

/* Take every node off @lv (waiting out nothing: no reclaimer runs) and destroy it. */
static void lv_fini(struct rcl_lruvec *lv, struct obj *o, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int err = rcl_lruvec_del(lv, &o[i].lru);

		assert_true(err == 0 || err == -ENOENT);
	}
	assert_int_equal(rcl_lruvec_destroy(lv), 0);
}

static void add_nobatch(struct rcl_lruvec *lv, struct obj *o, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		assert_int_equal(rcl_lruvec_add(lv, &o[i].lru, RCL_LRU_FILE, W,
						 NOBATCH),
				 0);
}

static uint64_t list_nr(const struct rcl_lruvec *lv, unsigned list)
{
	return rcl_lruvec_count(lv, list, NULL);
}

/* Every list's size and weight, to check that a failing call changed nothing. */
struct lv_snap {
	size_t nr[RCL_LRU_NR_LISTS];
	uint64_t w[RCL_LRU_NR_LISTS];
	size_t isolated;
};

static struct lv_snap snap(const struct rcl_lruvec *lv)
{
	struct lv_snap s;
	unsigned l;

	memset(&s, 0, sizeof(s));
	for (l = 0; l < RCL_LRU_NR_LISTS; l++)
		s.nr[l] = rcl_lruvec_count(lv, l, &s.w[l]);
	s.isolated = rcl_lruvec_nr_isolated(lv);
	return s;
}

static void assert_snap_equal(const struct lv_snap *a, const struct lv_snap *b)
{
	assert_memory_equal(a, b, sizeof(*a));
}

/* Half allocators: each has one of the two callbacks. */
static void *std_alloc_for_p(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static void std_free_for_p(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

/* A domain in strict mode with no flusher, the given budget. */
static struct rcl_domain *domain_new(uint64_t budget)
{
	struct rcl_domain_config cfg = { .budget = budget };
	struct rcl_domain *d = NULL;

	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	return d;
}

/* Poll (with a yield) until @flag is set; bounded at ~20 s. */
static bool wait_flag(atomic_int *flag)
{
	struct timespec ts = { 0, 1000000 };
	unsigned i;

	for (i = 0; i < 20000; i++) {
		if (atomic_load(flag))
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* ------------------------------------------------------------------------- */
/* Shrinker callbacks                                                         */
/* ------------------------------------------------------------------------- */

static unsigned long count_ten(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 10;
}

static unsigned long scan_none(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 0;
}

static const struct rcl_shrinker_ops shr_ops = { count_ten, scan_none };

static struct rcl_shrinker *shrinker_new(struct rcl_shrinker_registry *reg,
					 unsigned flags)
{
	struct rcl_shrinker_config cfg = { .ops = &shr_ops, .name = "t",
					   .seeks = RCL_DEFAULT_SEEKS,
					   .flags = flags };
	struct rcl_shrinker *s = NULL;

	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	return s;
}

/* ========================================================================= */
/* version.h                                                                  */
/* ========================================================================= */

static void test_badinput_version(void **state)
{
	(void)state;
	/* No arguments: nothing can be bad.  Both are total functions. */
	assert_non_null(rcl_version());
	assert_string_equal(rcl_version(), RCL_VERSION_STRING);
	assert_int_equal(rcl_version_number(), RCL_VERSION_NUMBER);
}

/* ========================================================================= */
/* refusal.h                                                                  */
/* ========================================================================= */

static void test_badinput_refusal(void **state)
{
	const struct rcl_refusal_log no_fn = { NULL, NULL };

	(void)state;
	/* A hook without a function is refused (and nothing installed). */
	assert_int_equal(rcl_set_refusal_log(&no_fn), -EINVAL);
	/* NULL removes the hook: also when none is installed, twice. */
	assert_int_equal(rcl_set_refusal_log(NULL), 0);
	assert_int_equal(rcl_set_refusal_log(NULL), 0);
	/* Clearing twice, reading with nothing recorded: total functions. */
	rcl_clear_refusal();
	rcl_clear_refusal();
	assert_null(rcl_last_refusal());
	/* A refusal with a bad hook attempt in between is still recorded. */
	assert_int_equal(rcl_shrinker_register(NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_destroy(NULL), 0);
	assert_null(rcl_last_refusal());
}

/* ========================================================================= */
/* clock.h                                                                    */
/* ========================================================================= */

static void test_badinput_clock(void **state)
{
	const struct rcl_clock *c = rcl_clock_monotonic();
	struct rcl_fake_clock *fc = (struct rcl_fake_clock *)&fc;
	uint64_t a, b;

	(void)state;
	assert_non_null(c);
	assert_ptr_equal(c, rcl_clock_monotonic());
	a = c->now(c->ctx);
	b = c->now(c->ctx);
	assert_true(b >= a);

	/* rcl_fake_clock_new(): NULL @out; *out untouched on failure. */
	assert_int_equal(rcl_fake_clock_new(0, NULL), -EINVAL);

	/* NULL everywhere else. */
	rcl_fake_clock_free(NULL);			/* no-op */
	assert_null(rcl_fake_clock_clock(NULL));
	rcl_fake_clock_advance(NULL, 100);		/* no-op */
	assert_int_equal(rcl_fake_clock_waiters(NULL), 0);

	/* Out of range: any start; advancing past 2^64 saturates below FOREVER. */
	assert_int_equal(rcl_fake_clock_new(UINT64_MAX - 10, &fc), 0);
	c = rcl_fake_clock_clock(fc);
	assert_non_null(c);
	assert_int_equal(c->now(c->ctx), UINT64_MAX - 10);
	rcl_fake_clock_advance(fc, 0);
	assert_int_equal(c->now(c->ctx), UINT64_MAX - 10);
	rcl_fake_clock_advance(fc, UINT64_MAX);
	assert_true(c->now(c->ctx) == UINT64_MAX - 1);
	assert_true(c->now(c->ctx) < RCL_CLOCK_FOREVER);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	rcl_fake_clock_free(fc);

	/*
	 * A sum that lands exactly on 2^64 - 1 (FOREVER) without wrapping
	 * saturates too: it used to be stored, and every wait without a
	 * deadline then timed out at once.
	 */
	assert_int_equal(rcl_fake_clock_new(0, &fc), 0);
	c = rcl_fake_clock_clock(fc);
	rcl_fake_clock_advance(fc, UINT64_MAX);
	assert_true(c->now(c->ctx) == UINT64_MAX - 1);
	rcl_fake_clock_free(fc);
	assert_int_equal(rcl_fake_clock_new(UINT64_MAX - 1, &fc), 0);
	c = rcl_fake_clock_clock(fc);
	rcl_fake_clock_advance(fc, 1);
	assert_true(c->now(c->ctx) == UINT64_MAX - 1);
	rcl_fake_clock_free(fc);
}

struct fc_wait_arg {
	const struct rcl_clock *c;
	pthread_mutex_t m;
	pthread_cond_t cv;
	atomic_int rc;
	atomic_int done;
};

static void *fc_wait_thread(void *p)
{
	struct fc_wait_arg *a = p;
	int rc;

	pthread_mutex_lock(&a->m);
	rc = a->c->wait(a->c->ctx, &a->cv, &a->m, RCL_CLOCK_FOREVER);
	pthread_mutex_unlock(&a->m);
	atomic_store(&a->rc, rc);
	atomic_store(&a->done, 1);
	return NULL;
}

/*
 * rcl_fake_clock_waiters() counts the waiters advance() has not yet woken:
 * a test that advances past a deadline and then waits for the count to say
 * that a thread sleeps again must not see the woken one still counted (it
 * was, until it ran: 1,910 of 2,000 rounds in a review's run).
 */
struct fc_deadline_arg {
	const struct rcl_clock *c;
	pthread_mutex_t m;
	pthread_cond_t cv;
	atomic_int done;
};

static void *fc_deadline_thread(void *p)
{
	struct fc_deadline_arg *a = p;

	pthread_mutex_lock(&a->m);
	while (a->c->wait(a->c->ctx, &a->cv, &a->m, 100) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&a->m);
	atomic_store(&a->done, 1);
	return NULL;
}

static void test_badinput_fake_clock_waiters_after_advance(void **state)
{
	struct rcl_fake_clock *fc = NULL;
	struct fc_deadline_arg a;
	unsigned round;

	(void)state;
	for (round = 0; round < 50; round++) {
		pthread_t t;

		assert_int_equal(rcl_fake_clock_new(0, &fc), 0);
		a.c = rcl_fake_clock_clock(fc);
		pthread_mutex_init(&a.m, NULL);
		pthread_cond_init(&a.cv, NULL);
		atomic_store(&a.done, 0);
		assert_int_equal(pthread_create(&t, NULL, fc_deadline_thread, &a),
				 0);
		while (rcl_fake_clock_waiters(fc) != 1)
			sched_yield();
		rcl_fake_clock_advance(fc, 100);
		assert_int_equal(rcl_fake_clock_waiters(fc), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(atomic_load(&a.done), 1);
		pthread_cond_destroy(&a.cv);
		pthread_mutex_destroy(&a.m);
		rcl_fake_clock_free(fc);
	}
}

static void test_badinput_fake_clock_start_forever(void **state)
{
	struct rcl_fake_clock *fc = NULL;
	struct fc_wait_arg a;
	pthread_t t;
	unsigned i;
	bool waited = false;
	int rc_new;

	(void)state;
	/*
	 * BUG: see docs/bad-input-audit.md.  RCL_CLOCK_FOREVER is "a deadline
	 * that never comes", and rcl_fake_clock_advance() saturates at
	 * UINT64_MAX - 1 to keep it so; but rcl_fake_clock_new(UINT64_MAX)
	 * starts the clock at FOREVER, and every wait without a deadline then
	 * times out at once (a reclaimer or flusher thread on it spins).  The
	 * test accepts a refusal (-EINVAL) or a clamped start.
	 */
	rc_new = rcl_fake_clock_new(UINT64_MAX, &fc);
	if (rc_new == 0) {
		a.c = rcl_fake_clock_clock(fc);
		pthread_mutex_init(&a.m, NULL);
		pthread_cond_init(&a.cv, NULL);
		atomic_store(&a.rc, -1);
		atomic_store(&a.done, 0);
		assert_int_equal(pthread_create(&t, NULL, fc_wait_thread, &a), 0);
		for (i = 0; i < 20000 && !atomic_load(&a.done); i++) {
			struct timespec ts = { 0, 1000000 };

			if (rcl_fake_clock_waiters(fc) > 0) {
				waited = true;
				break;
			}
			nanosleep(&ts, NULL);
		}
		pthread_mutex_lock(&a.m);
		pthread_cond_broadcast(&a.cv);
		pthread_mutex_unlock(&a.m);
		/* A spurious wake-up is allowed: signal until it returns. */
		while (!atomic_load(&a.done)) {
			pthread_mutex_lock(&a.m);
			pthread_cond_broadcast(&a.cv);
			pthread_mutex_unlock(&a.m);
			sched_yield();
		}
		pthread_join(t, NULL);
		pthread_cond_destroy(&a.cv);
		pthread_mutex_destroy(&a.m);
		rcl_fake_clock_free(fc);
	}
	assert_true(rc_new == -EINVAL || (rc_new == 0 && waited));
}

/* ========================================================================= */
/* lruvec.h: nodes, init, destroy, id                                         */
/* ========================================================================= */

static void test_badinput_node_helpers(void **state)
{
	struct rcl_lru_node n = RCL_LRU_NODE_INIT;

	(void)state;
	rcl_lru_node_init(NULL);			/* ignored */
	assert_int_equal(rcl_lru_node_flags(NULL), 0);
	assert_int_equal(rcl_lru_node_type(NULL), 0);
	/* An idle node: no state bit, type 0. */
	assert_int_equal(rcl_lru_node_flags(&n) &
				 (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
				  RCL_LRU_F_ISOLATED),
			 0);
	assert_int_equal(rcl_lru_node_type(&n), 0);
	/* Initialising an idle node twice is harmless. */
	rcl_lru_node_init(&n);
	rcl_lru_node_init(&n);
	assert_int_equal(rcl_lru_node_flags(&n), 0);
}

static void test_badinput_lruvec_init(void **state)
{
	struct rcl_lruvec lv;
	struct rcl_lruvec_config cfg = { .ops = &ops };
	unsigned id1, id2;

	(void)state;
	/* NULL lruvec; NULL config selects the defaults. */
	assert_int_equal(rcl_lruvec_init(NULL, &cfg), -EINVAL);
	assert_int_equal(rcl_lruvec_init(NULL, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_init(&lv, NULL), 0);
	assert_int_equal(rcl_lruvec_nr_types(&lv), 2);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);

	/* Out of range: nr_types > RCL_LRU_MAX_TYPES, unknown flag bits. */
	cfg.nr_types = RCL_LRU_MAX_TYPES + 1;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), -EINVAL);
	cfg.nr_types = UINT32_MAX;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), -EINVAL);
	cfg.nr_types = 0;
	cfg.flags = 1u << 1;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), -EINVAL);
	cfg.flags = ~0u;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), -EINVAL);
	cfg.flags = RCL_LRUVEC_KERNEL;
	/* The largest type count and cost 0 (= 1) are accepted. */
	cfg.nr_types = RCL_LRU_MAX_TYPES;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	assert_int_equal(rcl_lruvec_nr_types(&lv), RCL_LRU_MAX_TYPES);
	assert_int_equal(rcl_lruvec_type_cost(&lv, RCL_LRU_MAX_TYPES - 1), 1);
	assert_string_equal(rcl_lruvec_type_name(&lv, 3), "type3");

	/*
	 * Double init of a live lruvec: not detected (the header: "its previous
	 * content is ignored").  It succeeds with a new id; the old id stays
	 * allocated for the life of the process.
	 */
	id1 = rcl_lruvec_id(&lv);
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	id2 = rcl_lruvec_id(&lv);
	assert_int_not_equal(id1, 0);
	assert_int_not_equal(id2, 0);
	assert_int_not_equal(id1, id2);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

static void test_badinput_lruvec_init_id_limit(void **state)
{
	struct rcl_lruvec *v;
	unsigned i, n;
	int err = 0;

	(void)state;
	v = calloc(RCL_LRUVEC_MAX_IDS + 1, sizeof(*v));
	assert_non_null(v);
	for (n = 0; n <= RCL_LRUVEC_MAX_IDS; n++) {
		err = rcl_lruvec_init(&v[n], NULL);
		if (err)
			break;
	}
	for (i = 0; i < n; i++)
		rcl_lruvec_destroy(&v[i]);
	free(v);
	/* At most RCL_LRUVEC_MAX_IDS live (a few may be held elsewhere). */
	assert_int_equal(err, -ENOSPC);
	assert_true(n <= RCL_LRUVEC_MAX_IDS);
	assert_true(n >= RCL_LRUVEC_MAX_IDS - 16);
	/* Ids are reusable once freed. */
	{
		struct rcl_lruvec lv;

		assert_int_equal(rcl_lruvec_init(&lv, NULL), 0);
		assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	}
}

static struct rcl_lruvec *destroy_self_lv;
static atomic_int destroy_self_rc;

static enum rcl_evict_status evict_destroy_self(struct rcl_lru_node *node,
						struct rcl_evict_control *ctl)
{
	(void)node;
	atomic_store(&destroy_self_rc, rcl_lruvec_destroy(ctl->lruvec));
	return RCL_EVICT_BUSY;
}

static void test_badinput_lruvec_destroy(void **state)
{
	struct rcl_lruvec lv, zero;
	struct obj o[2];
	struct rcl_lru_isolated iso;
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE, .nr_to_scan = 1 };

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	/* NULL, never initialised (zero-filled), twice: no-ops returning 0. */
	assert_int_equal(rcl_lruvec_destroy(NULL), 0);
	assert_int_equal(rcl_lruvec_destroy(&zero), 0);
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_lruvec_id(&lv), 0);

	/* Not empty: listed, pending, isolated -> -EBUSY, lruvec intact. */
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, W, NOBATCH), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), -EBUSY);
	assert_int_not_equal(rcl_lruvec_id(&lv), 0);
	assert_int_equal(rcl_lruvec_del(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &o[1].lru, 0, W, 0), 0); /* pending */
	assert_int_equal(rcl_lruvec_destroy(&lv), -EBUSY);
	/* ... the pending node has been drained to its list. */
	assert_true(rcl_lru_node_flags(&o[1].lru) & RCL_LRU_F_LISTED);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&lv, RCL_LRU_LIST(0, 0), 1, &iso), 0);
	assert_int_equal(iso.nr, 1);
	assert_int_equal(rcl_lruvec_destroy(&lv), -EBUSY);
	assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);

	/* From its own evict callback: -EDEADLK. */
	evict_hook = evict_destroy_self;
	destroy_self_lv = &lv;
	atomic_store(&destroy_self_rc, 1);
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	evict_hook = NULL;
	assert_int_equal(atomic_load(&destroy_self_rc), -EDEADLK);
	assert_int_not_equal(rcl_lruvec_id(&lv), 0);
	lv_fini(&lv, o, 2);
}

static void test_badinput_lruvec_id(void **state)
{
	struct rcl_lruvec lv, zero;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	assert_int_equal(rcl_lruvec_id(NULL), 0);
	assert_int_equal(rcl_lruvec_id(&zero), 0);
	lv_init(&lv);
	assert_in_range(rcl_lruvec_id(&lv), 1, RCL_LRUVEC_MAX_IDS);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_lruvec_id(&lv), 0);		/* destroyed */
}

/* ========================================================================= */
/* lruvec.h: add, del, del_wait, mark_accessed                                */
/* ========================================================================= */

static void test_badinput_lruvec_add(void **state)
{
	struct rcl_lruvec lv, lv2, zero;
	struct obj o[4];
	struct rcl_lru_isolated iso;
	struct lv_snap s0, s1;
	static const unsigned bad_flags[] = {
		1u << 3, 1u << 31, ~0u,
		RCL_LRU_ADD_ACTIVE | RCL_LRU_ADD_UNEVICTABLE,
		RCL_LRU_ADD_ACTIVE | RCL_LRU_ADD_UNEVICTABLE | NOBATCH,
	};
	static const unsigned bad_types[] = { 2, 3, RCL_LRU_MAX_TYPES, 1000,
					      UINT32_MAX };
	size_t i;

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	lv_init(&lv2);
	s0 = snap(&lv);

	/* NULL, uninitialised or destroyed lruvec, NULL node. */
	assert_int_equal(rcl_lruvec_add(NULL, &o[0].lru, 0, W, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_add(&lv, NULL, 0, W, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_add(&zero, &o[0].lru, 0, W, 0), -EINVAL);

	/* Out of range: type >= nr_types, unknown or conflicting flags. */
	for (i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++)
		assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, bad_types[i], W,
						NOBATCH),
				 -EINVAL);
	for (i = 0; i < sizeof(bad_flags) / sizeof(bad_flags[0]); i++)
		assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, W,
						bad_flags[i]),
				 -EINVAL);
	s1 = snap(&lv);
	assert_snap_equal(&s0, &s1);
	assert_int_equal(rcl_lru_node_flags(&o[0].lru), 0);

	/* Weight: 0 and UINT32_MAX are fine and counted exactly. */
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, 0, NOBATCH), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &o[1].lru, 0, UINT32_MAX, NOBATCH), 0);
	{
		uint64_t w;

		assert_int_equal(rcl_lruvec_count(&lv, RCL_LRU_LIST(0, 0), &w), 2);
		assert_int_equal(w, UINT32_MAX);
	}

	/* Double add, same lruvec (listed, pending) and another one: -EBUSY. */
	s0 = snap(&lv);
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, W, NOBATCH), -EBUSY);
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, W, 0), -EBUSY);
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 1, W, RCL_LRU_ADD_ACTIVE),
			 -EBUSY);
	assert_int_equal(rcl_lruvec_add(&lv2, &o[0].lru, 0, W, NOBATCH), -EBUSY);
	assert_int_equal(rcl_lruvec_add(&lv2, &o[0].lru, 0, W, 0), -EBUSY);
	s1 = snap(&lv);
	assert_snap_equal(&s0, &s1);
	assert_int_equal(list_nr(&lv2, RCL_LRU_LIST(0, 0)), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &o[2].lru, 0, W, 0), 0); /* pending */
	assert_true(rcl_lru_node_flags(&o[2].lru) & RCL_LRU_F_PENDING);
	assert_int_equal(rcl_lruvec_add(&lv, &o[2].lru, 0, W, 0), -EBUSY);
	assert_int_equal(rcl_lruvec_add(&lv2, &o[2].lru, 0, W, NOBATCH), -EBUSY);
	assert_true(rcl_lru_node_flags(&o[2].lru) & RCL_LRU_F_PENDING);
	/* Isolated: -EBUSY too. */
	rcl_lru_drain_local();
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&lv, RCL_LRU_LIST(0, 0), 1, &iso), 0);
	assert_int_equal(iso.nr, 1);
	assert_int_equal(rcl_lruvec_add(&lv, rcl_lru_isolated_next(&iso, NULL), 0,
					W, NOBATCH),
			 -EBUSY);
	assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);
	assert_true(lru_check_invariants(&lv) >= 0);

	/* Destroyed lruvec. */
	assert_int_equal(rcl_lruvec_destroy(&lv2), 0);
	assert_int_equal(rcl_lruvec_add(&lv2, &o[3].lru, 0, W, 0), -EINVAL);
	lv_fini(&lv, o, 4);
}

static void test_badinput_lruvec_add_type_limit(void **state)
{
	struct rcl_lruvec lv;
	struct obj o[2];

	(void)state;
	memset(o, 0, sizeof(o));
	lv_init_n(&lv, 1);
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 1, W, NOBATCH), -EINVAL);
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, W, NOBATCH), 0);
	lv_fini(&lv, o, 1);
	lv_init_n(&lv, RCL_LRU_MAX_TYPES);
	assert_int_equal(rcl_lruvec_add(&lv, &o[1].lru, RCL_LRU_MAX_TYPES - 1, W,
					NOBATCH),
			 0);
	assert_int_equal(rcl_lru_node_type(&o[1].lru), RCL_LRU_MAX_TYPES - 1);
	lv_fini(&lv, o, 2);
}

static void test_badinput_lruvec_del(void **state)
{
	struct rcl_lruvec lv, lv2, zero;
	struct obj o[3];
	struct rcl_lru_isolated iso;
	struct rcl_lru_node *n;
	struct lv_snap s0, s1;
	int (*const del[2])(struct rcl_lruvec *, struct rcl_lru_node *) = {
		rcl_lruvec_del, rcl_lruvec_del_wait,
	};
	unsigned k;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	for (k = 0; k < 2; k++) {
		memset(o, 0, sizeof(o));
		lv_init(&lv);
		lv_init(&lv2);
		add_nobatch(&lv, o, 2);
		assert_int_equal(rcl_lruvec_add(&lv2, &o[2].lru, 0, W, NOBATCH), 0);
		s0 = snap(&lv);

		/* NULL, uninitialised lruvec. */
		assert_int_equal(del[k](NULL, &o[0].lru), -EINVAL);
		assert_int_equal(del[k](&lv, NULL), -EINVAL);
		assert_int_equal(del[k](&zero, &o[0].lru), -EINVAL);
		/* Wrong object: a node of another lruvec, either way round. */
		assert_int_equal(del[k](&lv, &o[2].lru), -ENOENT);
		assert_int_equal(del[k](&lv2, &o[0].lru), -ENOENT);
		s1 = snap(&lv);
		assert_snap_equal(&s0, &s1);
		assert_true(rcl_lru_node_flags(&o[2].lru) & RCL_LRU_F_LISTED);

		/* Double del: -ENOENT the second time, also on a pending node. */
		assert_int_equal(del[k](&lv, &o[0].lru), 0);
		assert_int_equal(del[k](&lv, &o[0].lru), -ENOENT);
		assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, W, 0), 0);
		assert_int_equal(del[k](&lv, &o[0].lru), 0);
		assert_int_equal(del[k](&lv, &o[0].lru), -ENOENT);
		/* A node never added. */
		{
			struct rcl_lru_node idle = RCL_LRU_NODE_INIT;

			assert_int_equal(del[k](&lv, &idle), -ENOENT);
		}

		/* Isolated: del -EBUSY, nothing changes. */
		if (k == 0) {
			rcl_lru_isolated_init(&iso);
			assert_int_equal(rcl_lruvec_isolate(&lv, RCL_LRU_LIST(0, 0),
							    1, &iso),
					 0);
			n = rcl_lru_isolated_next(&iso, NULL);
			assert_ptr_equal(n, &o[1].lru);
			assert_int_equal(rcl_lruvec_del(&lv, n), -EBUSY);
			assert_true(rcl_lru_node_flags(n) & RCL_LRU_F_ISOLATED);
			assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);
		}
		lv_fini(&lv, o, 3);
		assert_int_equal(rcl_lruvec_del(&lv2, &o[2].lru), 0);
		assert_int_equal(rcl_lruvec_destroy(&lv2), 0);
		/* Destroyed lruvec. */
		assert_int_equal(del[k](&lv2, &o[2].lru), -EINVAL);
	}
}

static atomic_int del_wait_self_rc, del_self_rc;

static enum rcl_evict_status evict_del_wait_self(struct rcl_lru_node *node,
						 struct rcl_evict_control *ctl)
{
	atomic_store(&del_self_rc, rcl_lruvec_del(ctl->lruvec, node));
	atomic_store(&del_wait_self_rc, rcl_lruvec_del_wait(ctl->lruvec, node));
	return RCL_EVICT_BUSY;
}

static void test_badinput_lruvec_del_wait_from_evict(void **state)
{
	struct rcl_lruvec lv;
	struct obj o[1];
	struct rcl_lru_shrink_control sc = { .type = 0, .nr_to_scan = 1 };

	(void)state;
	memset(o, 0, sizeof(o));
	lv_init(&lv);
	add_nobatch(&lv, o, 1);
	evict_hook = evict_del_wait_self;
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	evict_hook = NULL;
	/* The node being evicted: del -EBUSY, del_wait -EDEADLK. */
	assert_int_equal(atomic_load(&del_self_rc), -EBUSY);
	assert_int_equal(atomic_load(&del_wait_self_rc), -EDEADLK);
	assert_true(rcl_lru_node_flags(&o[0].lru) & RCL_LRU_F_LISTED);
	lv_fini(&lv, o, 1);
}

static void test_badinput_lruvec_mark_accessed(void **state)
{
	struct rcl_lruvec lv, lv2, zero;
	struct obj o[3];
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;
	struct lv_snap s0, s1;

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	lv_init(&lv2);
	add_nobatch(&lv, o, 1);
	assert_int_equal(rcl_lruvec_add(&lv2, &o[1].lru, 0, W,
					NOBATCH | RCL_LRU_ADD_ACTIVE),
			 0);
	/* Make o[1] active and referenced: the hot path. */
	assert_int_equal(rcl_lruvec_mark_accessed(&lv2, &o[1].lru), 0);

	assert_int_equal(rcl_lruvec_mark_accessed(NULL, &o[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_mark_accessed(&zero, &o[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &idle), -ENOENT);
	/* Wrong lruvec, also for a node on the hot path (active, referenced). */
	s0 = snap(&lv);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &o[1].lru), -ENOENT);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv2, &o[0].lru), -ENOENT);
	assert_int_equal(rcl_lru_node_flags(&o[0].lru) & RCL_LRU_F_REFERENCED, 0);
	s1 = snap(&lv);
	assert_snap_equal(&s0, &s1);
	/* Repeated: referenced, then activated, then idempotent. */
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &o[0].lru), 0);
	rcl_lru_drain_local();
	assert_true(rcl_lru_node_flags(&o[0].lru) & RCL_LRU_F_ACTIVE);
	/* A deleted node. */
	assert_int_equal(rcl_lruvec_del(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &o[0].lru), -ENOENT);
	lv_fini(&lv, o, 1);
	assert_int_equal(rcl_lruvec_del(&lv2, &o[1].lru), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv2), 0);
	/* Destroyed lruvec. */
	assert_int_equal(rcl_lruvec_mark_accessed(&lv2, &o[1].lru), -EINVAL);
}

/* ========================================================================= */
/* lruvec.h: rotate, deactivate, (un)mark_unevictable                         */
/* ========================================================================= */

typedef int (*move_fn)(struct rcl_lruvec *, struct rcl_lru_node *);

static const struct {
	const char *name;
	move_fn fn;
	int on_unevictable;	/* result for an unevictable node */
} moves[] = {
	{ "rotate", rcl_lruvec_rotate, -EPERM },
	{ "deactivate", rcl_lruvec_deactivate, -EPERM },
	{ "mark_unevictable", rcl_lruvec_mark_unevictable, 0 },
	{ "unmark_unevictable", rcl_lruvec_unmark_unevictable, 0 },
};

static void test_badinput_lruvec_moves(void **state)
{
	struct rcl_lruvec lv, lv2, zero;
	struct obj o[3];
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;
	struct rcl_lru_isolated iso;
	struct lv_snap s0, s1;
	size_t i;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	for (i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
		move_fn fn = moves[i].fn;

		memset(o, 0, sizeof(o));
		lv_init(&lv);
		lv_init(&lv2);
		add_nobatch(&lv, o, 1);
		assert_int_equal(rcl_lruvec_add(&lv, &o[1].lru, 0, W,
						NOBATCH | RCL_LRU_ADD_UNEVICTABLE),
				 0);
		assert_int_equal(rcl_lruvec_add(&lv2, &o[2].lru, 0, W, NOBATCH), 0);
		s0 = snap(&lv);

		assert_int_equal(fn(NULL, &o[0].lru), -EINVAL);
		assert_int_equal(fn(&lv, NULL), -EINVAL);
		assert_int_equal(fn(&zero, &o[0].lru), -EINVAL);
		assert_int_equal(fn(&lv, &idle), -ENOENT);
		assert_int_equal(fn(&lv, &o[2].lru), -ENOENT);	/* other lruvec */
		assert_int_equal(fn(&lv2, &o[0].lru), -ENOENT);
		/* Unevictable node. */
		assert_int_equal(fn(&lv, &o[1].lru), moves[i].on_unevictable);
		if (moves[i].on_unevictable) {
			s1 = snap(&lv);
			assert_snap_equal(&s0, &s1);
		}
		/* Isolated node: -EBUSY. */
		rcl_lru_isolated_init(&iso);
		assert_int_equal(rcl_lruvec_isolate(&lv, RCL_LRU_LIST(0, 0), 1, &iso),
				 0);
		assert_int_equal(iso.nr, 1);
		assert_int_equal(fn(&lv, &o[0].lru), -EBUSY);
		assert_true(rcl_lru_node_flags(&o[0].lru) & RCL_LRU_F_ISOLATED);
		assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);
		/* Double operation: idempotent, 0 both times. */
		assert_int_equal(fn(&lv, &o[0].lru), 0);
		assert_int_equal(fn(&lv, &o[0].lru), 0);
		/* A pending node is drained to its list first. */
		assert_int_equal(rcl_lruvec_del(&lv, &o[0].lru), 0);
		assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, W, 0), 0);
		assert_int_equal(fn(&lv, &o[0].lru), 0);
		assert_true(rcl_lru_node_flags(&o[0].lru) & RCL_LRU_F_LISTED);
		assert_true(lru_check_invariants(&lv) >= 0);
		lv_fini(&lv, o, 2);
		assert_int_equal(fn(&lv, &o[0].lru), -EINVAL);	/* destroyed */
		lv_fini(&lv2, o + 2, 1);
	}
	/* Idempotence is visible in the lists. */
	memset(o, 0, sizeof(o));
	lv_init(&lv);
	add_nobatch(&lv, o, 1);
	assert_int_equal(rcl_lruvec_mark_unevictable(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_unevictable(&lv, &o[0].lru), 0);
	assert_int_equal(list_nr(&lv, RCL_LRU_UNEVICTABLE), 1);
	assert_int_equal(rcl_lruvec_unmark_unevictable(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_unmark_unevictable(&lv, &o[0].lru), 0);
	assert_int_equal(list_nr(&lv, RCL_LRU_UNEVICTABLE), 0);
	assert_int_equal(list_nr(&lv, RCL_LRU_LIST(0, 0)), 1);
	lv_fini(&lv, o, 1);
}

/* ========================================================================= */
/* lruvec.h: read-only queries                                                */
/* ========================================================================= */

static void test_badinput_lruvec_queries(void **state)
{
	struct rcl_lruvec lv, zero;
	struct rcl_lruvec_type_stats st;
	uint64_t w = 77;
	static const unsigned bad_types[] = { 2, RCL_LRU_MAX_TYPES, UINT32_MAX };
	size_t i;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);

	/* rcl_lruvec_count(): NULL, uninitialised, out-of-range list -> 0, *w = 0. */
	assert_int_equal(rcl_lruvec_count(NULL, 0, &w), 0);
	assert_int_equal(w, 0);
	w = 77;
	assert_int_equal(rcl_lruvec_count(&zero, 0, &w), 0);
	assert_int_equal(w, 0);
	w = 77;
	assert_int_equal(rcl_lruvec_count(&lv, RCL_LRU_NR_LISTS, &w), 0);
	assert_int_equal(w, 0);
	w = 77;
	assert_int_equal(rcl_lruvec_count(&lv, UINT32_MAX, &w), 0);
	assert_int_equal(w, 0);
	assert_int_equal(rcl_lruvec_count(&lv, 0, NULL), 0);
	/* A list index of a type the lruvec does not have: an empty list. */
	w = 77;
	assert_int_equal(rcl_lruvec_count(&lv, RCL_LRU_LIST(3, 1), &w), 0);
	assert_int_equal(w, 0);

	assert_int_equal(rcl_lruvec_nr_isolated(NULL), 0);
	assert_int_equal(rcl_lruvec_nr_isolated(&zero), 0);
	assert_int_equal(rcl_lruvec_nr_types(NULL), 0);
	assert_int_equal(rcl_lruvec_nr_types(&zero), 0);

	assert_null(rcl_lruvec_type_name(NULL, 0));
	assert_null(rcl_lruvec_type_name(&zero, 0));
	assert_int_equal(rcl_lruvec_type_cost(NULL, 0), 0);
	assert_int_equal(rcl_lruvec_type_cost(&zero, 0), 0);
	assert_int_equal(rcl_lruvec_stats(NULL, 0, &st), -EINVAL);
	assert_int_equal(rcl_lruvec_stats(&zero, 0, &st), -EINVAL);
	assert_int_equal(rcl_lruvec_stats(&lv, 0, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_inactive_ratio(NULL, 0), 0);
	assert_int_equal(rcl_lruvec_inactive_ratio(&zero, 0), 0);
	assert_false(rcl_lruvec_inactive_is_low(NULL, 0));
	assert_false(rcl_lruvec_inactive_is_low(&zero, 0));
	for (i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		unsigned t = bad_types[i];

		assert_null(rcl_lruvec_type_name(&lv, t));
		assert_int_equal(rcl_lruvec_type_cost(&lv, t), 0);
		assert_int_equal(rcl_lruvec_stats(&lv, t, &st), -EINVAL);
		assert_int_equal(rcl_lruvec_inactive_ratio(&lv, t), 0);
		assert_false(rcl_lruvec_inactive_is_low(&lv, t));
	}
	/* In range: the documented values. */
	assert_string_equal(rcl_lruvec_type_name(&lv, 0), "file");
	assert_int_equal(rcl_lruvec_type_cost(&lv, 1), 2);
	assert_int_equal(rcl_lruvec_stats(&lv, 1, &st), 0);
	assert_int_equal(rcl_lruvec_inactive_ratio(&lv, 0), 1);
	assert_false(rcl_lruvec_inactive_is_low(&lv, 0));
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	/* Destroyed: as uninitialised. */
	assert_int_equal(rcl_lruvec_nr_types(&lv), 0);
	assert_null(rcl_lruvec_type_name(&lv, 0));
	assert_int_equal(rcl_lruvec_stats(&lv, 0, &st), -EINVAL);
}

/* ========================================================================= */
/* lruvec.h: isolation                                                        */
/* ========================================================================= */

static void test_badinput_lruvec_isolate(void **state)
{
	struct rcl_lruvec lv, lv2, zero;
	struct obj o[4];
	struct rcl_lru_isolated iso, iso2, raw;
	static const unsigned bad_lists[] = {
		RCL_LRU_LIST(2, 0), RCL_LRU_LIST(3, 1), RCL_LRU_UNEVICTABLE,
		RCL_LRU_NR_LISTS, UINT32_MAX,
	};
	struct lv_snap s0, s1;
	size_t i;

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	memset(&raw, 0, sizeof(raw));
	lv_init(&lv);
	lv_init(&lv2);
	add_nobatch(&lv, o, 2);
	add_nobatch(&lv2, o + 2, 2);
	rcl_lru_isolated_init(&iso);
	rcl_lru_isolated_init(NULL);			/* ignored */
	s0 = snap(&lv);

	assert_int_equal(rcl_lruvec_isolate(NULL, 0, 1, &iso), -EINVAL);
	assert_int_equal(rcl_lruvec_isolate(&zero, 0, 1, &iso), -EINVAL);
	assert_int_equal(rcl_lruvec_isolate(&lv, 0, 1, NULL), -EINVAL);
	/* A set never initialised (zero-filled). */
	assert_int_equal(rcl_lruvec_isolate(&lv, 0, 1, &raw), -EINVAL);
	for (i = 0; i < sizeof(bad_lists) / sizeof(bad_lists[0]); i++)
		assert_int_equal(rcl_lruvec_isolate(&lv, bad_lists[i], 1, &iso),
				 -EINVAL);
	/* nr_to_scan 0: nothing taken. */
	assert_int_equal(rcl_lruvec_isolate(&lv, 0, 0, &iso), 0);
	assert_int_equal(iso.nr, 0);
	assert_int_equal(iso.nr_scanned, 0);
	s1 = snap(&lv);
	assert_snap_equal(&s0, &s1);

	/* Wrong object: a set holding nodes of another lruvec. */
	rcl_lru_isolated_init(&iso2);
	assert_int_equal(rcl_lruvec_isolate(&lv2, 0, 1, &iso2), 0);
	assert_int_equal(rcl_lruvec_isolate(&lv, 0, 1, &iso2), -EINVAL);
	assert_int_equal(iso2.nr, 1);
	/* ... and putting them back to the wrong lruvec. */
	assert_int_equal(rcl_lruvec_putback(&lv, &iso2), -EINVAL);
	assert_int_equal(iso2.nr, 1);
	assert_int_equal(rcl_lruvec_nr_isolated(&lv2), 1);
	assert_int_equal(rcl_lruvec_putback(&lv2, &iso2), 0);

	/* Huge nr_to_scan: takes what there is. */
	assert_int_equal(rcl_lruvec_isolate(&lv, 0, SIZE_MAX, &iso), 0);
	assert_int_equal(iso.nr, 2);
	assert_int_equal(iso.nr_scanned, 2);
	/* Isolating again from an empty list appends nothing. */
	assert_int_equal(rcl_lruvec_isolate(&lv, 0, 5, &iso), 0);
	assert_int_equal(iso.nr, 2);

	/* putback: NULL, uninitialised lruvec or set. */
	assert_int_equal(rcl_lruvec_putback(NULL, &iso), -EINVAL);
	assert_int_equal(rcl_lruvec_putback(&lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_putback(&zero, &iso), -EINVAL);
	assert_int_equal(rcl_lruvec_putback(&lv, &raw), -EINVAL);
	assert_int_equal(iso.nr, 2);
	/* Double putback: the second finds an empty set, 0. */
	assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);
	assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);
	/* An empty set may be put back to any lruvec. */
	assert_int_equal(rcl_lruvec_putback(&lv2, &iso), 0);
	assert_int_equal(iso.nr, 0);
	s1 = snap(&lv);
	assert_snap_equal(&s0, &s1);
	assert_true(lru_check_invariants(&lv) >= 0);
	lv_fini(&lv, o, 2);
	lv_fini(&lv2, o + 2, 2);
}

static void test_badinput_lru_isolated_ops(void **state)
{
	struct rcl_lruvec lv, lv2;
	struct obj o[4];
	struct rcl_lru_isolated iso, iso2, raw, empty;
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT, *n;

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&raw, 0, sizeof(raw));
	lv_init(&lv);
	lv_init(&lv2);
	add_nobatch(&lv, o, 3);
	add_nobatch(&lv2, o + 3, 1);
	rcl_lru_isolated_init(&iso);
	rcl_lru_isolated_init(&iso2);
	rcl_lru_isolated_init(&empty);
	assert_int_equal(rcl_lruvec_isolate(&lv, 0, 2, &iso), 0);
	assert_int_equal(rcl_lruvec_isolate(&lv2, 0, 1, &iso2), 0);

	/* rcl_lru_isolated_next(): NULL or uninitialised set, empty set. */
	assert_null(rcl_lru_isolated_next(NULL, NULL));
	assert_null(rcl_lru_isolated_next(&raw, NULL));
	assert_null(rcl_lru_isolated_next(&empty, NULL));
	n = rcl_lru_isolated_next(&iso, NULL);
	assert_ptr_equal(n, &o[0].lru);
	assert_ptr_equal(rcl_lru_isolated_next(&iso, n), &o[1].lru);
	assert_null(rcl_lru_isolated_next(&iso, &o[1].lru));

	/* set_active(): NULL, a node that is not isolated, of another set/lruvec. */
	assert_int_equal(rcl_lru_isolated_set_active(NULL, n, true), -EINVAL);
	assert_int_equal(rcl_lru_isolated_set_active(&iso, NULL, true), -EINVAL);
	assert_int_equal(rcl_lru_isolated_set_active(&raw, n, true), -EINVAL);
	assert_int_equal(rcl_lru_isolated_set_active(&empty, n, true), -EINVAL);
	assert_int_equal(rcl_lru_isolated_set_active(&iso, &idle, true), -EINVAL);
	assert_int_equal(rcl_lru_isolated_set_active(&iso, &o[2].lru, true),
			 -EINVAL);				/* listed */
	assert_int_equal(rcl_lru_isolated_set_active(&iso, &o[3].lru, true),
			 -EINVAL);				/* of lv2 */
	/* Double: idempotent. */
	assert_int_equal(rcl_lru_isolated_set_active(&iso, n, true), 0);
	assert_int_equal(rcl_lru_isolated_set_active(&iso, n, true), 0);
	assert_true(rcl_lru_node_flags(n) & RCL_LRU_F_ACTIVE);
	assert_int_equal(rcl_lru_isolated_set_active(&iso, n, false), 0);
	assert_int_equal(rcl_lru_isolated_set_active(&iso, n, false), 0);
	assert_false(rcl_lru_node_flags(n) & RCL_LRU_F_ACTIVE);

	/* remove(): NULL, not isolated, of another lruvec, twice. */
	assert_int_equal(rcl_lru_isolated_remove(NULL, n), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(&iso, NULL), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(&raw, n), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(&empty, n), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &idle), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &o[2].lru), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &o[3].lru), -EINVAL);
	assert_int_equal(iso.nr, 2);
	assert_int_equal(iso2.nr, 1);
	assert_int_equal(rcl_lru_isolated_remove(&iso, n), 0);
	assert_int_equal(rcl_lru_isolated_remove(&iso, n), -EINVAL);
	assert_int_equal(iso.nr, 1);
	assert_int_equal(rcl_lru_node_flags(n) &
				 (RCL_LRU_F_ISOLATED | RCL_LRU_F_LISTED),
			 0);
	assert_int_equal(rcl_lruvec_nr_isolated(&lv), 1);

	assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);
	assert_int_equal(rcl_lruvec_putback(&lv2, &iso2), 0);
	assert_true(lru_check_invariants(&lv) >= 0);
	lv_fini(&lv, o, 3);
	lv_fini(&lv2, o + 3, 1);
}

/* ========================================================================= */
/* lruvec.h: shrink_inactive, shrink_active, drains                           */
/* ========================================================================= */

static enum rcl_evict_status evict_forget(struct rcl_lru_node *node,
					  struct rcl_evict_control *ctl)
{
	(void)node;
	(void)ctl;
	return RCL_EVICT_FREED;
}

static void test_badinput_lruvec_shrink(void **state)
{
	struct rcl_lruvec lv, noev, zero;
	struct rcl_lruvec_config cfg = { .ops = &no_evict_ops };
	struct obj o[3];
	struct rcl_lru_shrink_control sc;
	struct lv_snap s0, s1;
	static const unsigned bad_types[] = { 2, RCL_LRU_MAX_TYPES, UINT32_MAX };
	size_t i;

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_init(&noev, &cfg), 0);
	add_nobatch(&lv, o, 2);
	assert_int_equal(rcl_lruvec_add(&lv, &o[2].lru, 0, W,
					NOBATCH | RCL_LRU_ADD_ACTIVE),
			 0);
	s0 = snap(&lv);
	memset(&sc, 0, sizeof(sc));
	sc.nr_to_scan = 1;

	assert_int_equal(rcl_lruvec_shrink_inactive(NULL, &sc), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_inactive(&zero, &sc), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_active(NULL, &sc), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_active(&lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_active(&zero, &sc), -EINVAL);
	/* No evict callback (ops NULL, or evict NULL). */
	assert_int_equal(rcl_lruvec_shrink_inactive(&noev, &sc), -EINVAL);
	{
		struct rcl_lruvec noops;

		assert_int_equal(rcl_lruvec_init(&noops, NULL), 0);
		assert_int_equal(rcl_lruvec_shrink_inactive(&noops, &sc), -EINVAL);
		/* shrink_active needs no callback. */
		assert_int_equal(rcl_lruvec_shrink_active(&noops, &sc), 0);
		assert_int_equal(rcl_lruvec_destroy(&noops), 0);
	}
	for (i = 0; i < sizeof(bad_types) / sizeof(bad_types[0]); i++) {
		sc.type = bad_types[i];
		assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), -EINVAL);
		assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), -EINVAL);
	}
	sc.type = 0;
	/* Outputs untouched by the failures. */
	assert_int_equal(sc.nr_scanned, 0);
	assert_int_equal(sc.nr_taken, 0);
	s1 = snap(&lv);
	assert_snap_equal(&s0, &s1);

	/* nr_to_scan 0: no-op. */
	sc.nr_to_scan = 0;
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), 0);
	assert_int_equal(sc.nr_scanned, 0);
	s1 = snap(&lv);
	assert_snap_equal(&s0, &s1);
	/*
	 * nr_to_scan is the only bound: BUSY answers put the objects back at
	 * the head, and the scan meets them again (10 scans of 2 objects).
	 */
	sc.nr_to_scan = 10;
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	assert_int_equal(sc.nr_scanned, 10);
	assert_int_equal(sc.nr_rotated, 10);
	memset(&sc, 0, sizeof(sc));
	sc.nr_to_scan = SIZE_MAX;
	assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), 0);
	assert_int_equal(sc.nr_scanned, 1);
	/* Unknown sc->flags bits are ignored (not rejected). */
	memset(&sc, 0, sizeof(sc));
	sc.nr_to_scan = 1;
	sc.flags = 1u << 7;
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	assert_int_equal(sc.nr_scanned, 1);
	/* priority out of range is informational only: passed through. */
	memset(&sc, 0, sizeof(sc));
	sc.nr_to_scan = 1;
	sc.priority = -5;
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	assert_true(lru_check_invariants(&lv) >= 0);
	/* Huge nr_to_scan: stops when the list is empty (FREED answers). */
	memset(&sc, 0, sizeof(sc));
	sc.nr_to_scan = SIZE_MAX;
	evict_hook = evict_forget;
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	evict_hook = NULL;
	assert_int_equal(sc.nr_freed, 3);
	assert_int_equal(list_nr(&lv, RCL_LRU_LIST(0, 0)), 0);
	for (i = 0; i < 3; i++)
		rcl_lru_node_init(&o[i].lru);	/* FREED: ours again */
	lv_fini(&lv, o, 3);
	assert_int_equal(rcl_lruvec_destroy(&noev), 0);
	/* Destroyed. */
	memset(&sc, 0, sizeof(sc));
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), -EINVAL);
}

static void test_badinput_lruvec_drain(void **state)
{
	struct rcl_lruvec lv, zero;
	struct obj o[1];

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	/* rcl_lru_drain_local(): no argument; an empty batch, twice. */
	rcl_lru_drain_local();
	rcl_lru_drain_local();
	assert_int_equal(rcl_lruvec_drain(NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_drain(&zero), -EINVAL);
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, W, 0), 0);
	assert_int_equal(rcl_lruvec_drain(&lv), 0);
	assert_int_equal(rcl_lruvec_drain(&lv), 0);	/* double: no-op */
	assert_int_equal(list_nr(&lv, 0), 1);
	rcl_lru_drain_local();
	assert_int_equal(list_nr(&lv, 0), 1);
	lv_fini(&lv, o, 1);
	assert_int_equal(rcl_lruvec_drain(&lv), -EINVAL);	/* destroyed */
}

/* ========================================================================= */
/* scan.h                                                                     */
/* ========================================================================= */

static void test_badinput_scan_targets(void **state)
{
	struct rcl_lruvec lv, zero;
	uint64_t t[RCL_LRU_NR_LISTS];
	static const struct {
		int priority;
		unsigned swappiness;
		int ret;
	} cases[] = {
		{ -1, 100, -EINVAL }, { 13, 100, -EINVAL },
		{ INT32_MIN, 100, -EINVAL }, { INT32_MAX, 100, -EINVAL },
		{ 12, 201, -EINVAL }, { 12, UINT32_MAX, -EINVAL },
		{ 0, 0, 0 }, { 12, 200, 0 }, { 0, 200, 0 }, { 12, 0, 0 },
	};
	size_t i;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	assert_int_equal(rcl_scan_targets(NULL, 12, 100, t), -EINVAL);
	assert_int_equal(rcl_scan_targets(&zero, 12, 100, t), -EINVAL);
	assert_int_equal(rcl_scan_targets(&lv, 12, 100, NULL), -EINVAL);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(rcl_scan_targets(&lv, cases[i].priority,
						  cases[i].swappiness, t),
				 cases[i].ret);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_scan_targets(&lv, 12, 100, t), -EINVAL);
}

static void test_badinput_scan_lruvec(void **state)
{
	struct rcl_lruvec lv, noops, zero;
	struct obj o[2];
	struct rcl_scan_control sc;
	struct lv_snap s0, s1;
	static const struct {
		int priority;
		unsigned swappiness;
	} bad[] = { { -1, 100 }, { 13, 100 }, { 0, 201 }, { 12, UINT32_MAX } };
	size_t i;

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_init(&noops, NULL), 0);
	add_nobatch(&lv, o, 2);
	s0 = snap(&lv);
	memset(&sc, 0, sizeof(sc));
	sc.priority = 0;
	sc.swappiness = 100;
	sc.nr_to_reclaim = 1;

	assert_int_equal(rcl_scan_lruvec(NULL, &sc), -EINVAL);
	assert_int_equal(rcl_scan_lruvec(&lv, NULL), -EINVAL);
	assert_int_equal(rcl_scan_lruvec(&zero, &sc), -EINVAL);
	assert_int_equal(rcl_scan_lruvec(&noops, &sc), -EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sc.priority = bad[i].priority;
		sc.swappiness = bad[i].swappiness;
		assert_int_equal(rcl_scan_lruvec(&lv, &sc), -EINVAL);
	}
	assert_int_equal(sc.nr_scanned, 0);
	s1 = snap(&lv);
	assert_snap_equal(&s0, &s1);
	/* nr_to_reclaim 0, unknown flag bits: accepted (flags are not checked). */
	memset(&sc, 0, sizeof(sc));
	sc.priority = 0;
	sc.swappiness = 100;
	sc.flags = 1u << 9;
	assert_int_equal(rcl_scan_lruvec(&lv, &sc), 0);
	assert_true(lru_check_invariants(&lv) >= 0);
	lv_fini(&lv, o, 2);
	assert_int_equal(rcl_lruvec_destroy(&noops), 0);
}

static void test_badinput_note_cost(void **state)
{
	struct rcl_lruvec lv, zero;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_note_cost(NULL, 0, 1), -EINVAL);
	assert_int_equal(rcl_lruvec_note_cost(&zero, 0, 1), -EINVAL);
	assert_int_equal(rcl_lruvec_note_cost(&lv, 2, 1), -EINVAL);
	assert_int_equal(rcl_lruvec_note_cost(&lv, UINT32_MAX, 1), -EINVAL);
	assert_int_equal(rcl_lruvec_cost(NULL, 0), 0);
	assert_int_equal(rcl_lruvec_cost(&zero, 0), 0);
	assert_int_equal(rcl_lruvec_cost(&lv, 2), 0);
	assert_int_equal(rcl_lruvec_cost(&lv, 0), 0);
	/* Zero refaults: no change. */
	assert_int_equal(rcl_lruvec_note_cost(&lv, 0, 0), 0);
	assert_int_equal(rcl_lruvec_cost(&lv, 0), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_lruvec_note_cost(&lv, 0, 1), -EINVAL);
}

static void test_badinput_note_cost_overflow(void **state)
{
	struct rcl_lruvec lv;
	uint64_t c_one, c_huge;

	(void)state;
	/*
	 * BUG: see docs/bad-input-audit.md.  "Each counts RCL_REFAULT_COST
	 * rotations": 2^59 refaults times 32 wraps to 0, and the call adds
	 * nothing at all.  1 refault on an empty lruvec leaves a cost > 0
	 * (after the decay halving); 2^59 should leave at least as much.
	 */
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_note_cost(&lv, 0, 1), 0);
	c_one = rcl_lruvec_cost(&lv, 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_note_cost(&lv, 0, 1ull << 59), 0);
	c_huge = rcl_lruvec_cost(&lv, 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_true(c_one > 0);
	assert_true(c_huge >= c_one);
}

/* ========================================================================= */
/* shrinker.h                                                                 */
/* ========================================================================= */

static void test_badinput_shrinker_registry(void **state)
{
	struct rcl_shrinker_registry_config cfg = { 0 };
	struct rcl_allocator half = { .alloc = NULL, .free = NULL };
	struct rcl_shrinker_registry *reg = (void *)&cfg, *r2;
	struct rcl_shrink_result res = { 0 };
	struct rcl_shrinker *s;

	(void)state;
	/* registry_new: NULL @out; out-of-range partitions and policy. */
	assert_int_equal(rcl_shrinker_registry_new(NULL, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_registry_new(&cfg, NULL), -EINVAL);
	cfg.nr_partitions = RCL_SHRINKER_MAX_PARTITIONS + 1;
	assert_int_equal(rcl_shrinker_registry_new(&cfg, &reg), -EINVAL);
	cfg.nr_partitions = UINT32_MAX;
	assert_int_equal(rcl_shrinker_registry_new(&cfg, &reg), -EINVAL);
	cfg.nr_partitions = 0;
	cfg.policy = (enum rcl_shrink_policy)3;
	assert_int_equal(rcl_shrinker_registry_new(&cfg, &reg), -EINVAL);
	cfg.policy = (enum rcl_shrink_policy)-1;
	assert_int_equal(rcl_shrinker_registry_new(&cfg, &reg), -EINVAL);
	cfg.policy = RCL_SHRINK_POLICY_DEFAULT;
	/* An allocator without both callbacks. */
	cfg.allocator = &half;
	assert_int_equal(rcl_shrinker_registry_new(&cfg, &reg), -EINVAL);
	cfg.allocator = NULL;
	assert_ptr_equal(reg, (void *)&cfg);	/* written only on success */
	cfg.nr_partitions = RCL_SHRINKER_MAX_PARTITIONS;
	assert_int_equal(rcl_shrinker_registry_new(&cfg, &reg), 0);
	assert_int_equal(rcl_shrinker_registry_new(NULL, &r2), 0);

	/* registry_free: NULL no-op; -EBUSY with a shrinker (registered or not). */
	assert_int_equal(rcl_shrinker_registry_free(NULL), 0);
	s = shrinker_new(reg, RCL_SHRINKER_PARTITION_AWARE);
	assert_int_equal(rcl_shrinker_registry_free(reg), -EBUSY);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), -EBUSY);

	/* registry_policy, policy_name. */
	assert_int_equal(rcl_shrinker_registry_policy(NULL),
			 RCL_SHRINK_POLICY_DEFAULT);
	assert_null(rcl_shrink_policy_name((enum rcl_shrink_policy)3));
	assert_null(rcl_shrink_policy_name((enum rcl_shrink_policy)-1));
	assert_string_equal(rcl_shrink_policy_name(RCL_SHRINK_POLICY_KERNEL_2014),
			    "kernel-2014");

	/* registry_shrink: NULL, partition and priority out of range. */
	assert_int_equal(rcl_shrinker_registry_shrink(NULL, 0, 12, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, RCL_SHRINKER_MAX_PARTITIONS,
						      12, 0, &res),
			 -EINVAL);
	assert_int_equal(rcl_shrinker_registry_shrink(r2, 1, 12, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, -1, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 13, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, INT32_MIN, 0, &res),
			 -EINVAL);
	assert_int_equal(res.nr_shrinkers, 0);
	/* NULL @res, any context bits, the extreme priorities. */
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 1023, 0, ~0ull, NULL), 0);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 12, 0, &res), 0);
	assert_int_equal(res.nr_shrinkers, 1);

	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	assert_int_equal(rcl_shrinker_registry_free(r2), 0);
}

static void test_badinput_shrinker_new(void **state)
{
	struct rcl_shrinker_registry *reg;
	static const struct rcl_shrinker_ops no_count = { NULL, scan_none };
	static const struct rcl_shrinker_ops no_scan = { count_ten, NULL };
	struct rcl_shrinker_config ok = { .ops = &shr_ops };
	struct rcl_shrinker_config bad[7];
	struct rcl_shrinker *s = (void *)&ok, *s2;
	size_t i;
	char longname[100];

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
	for (i = 0; i < 7; i++)
		bad[i] = ok;
	bad[0].ops = NULL;
	bad[1].ops = &no_count;
	bad[2].ops = &no_scan;
	bad[3].seeks = -1;
	bad[4].batch = -1;
	bad[5].flags = 1u << 1;
	bad[6].flags = ~0u;
	assert_int_equal(rcl_shrinker_new(NULL, &ok, &s), -EINVAL);
	assert_int_equal(rcl_shrinker_new(reg, NULL, &s), -EINVAL);
	assert_int_equal(rcl_shrinker_new(reg, &ok, NULL), -EINVAL);
	for (i = 0; i < 7; i++)
		assert_int_equal(rcl_shrinker_new(reg, &bad[i], &s), -EINVAL);
	assert_ptr_equal(s, (void *)&ok);
	/* Extreme but valid: seeks/batch huge, NULL name, long name. */
	ok.seeks = INT32_MAX;
	ok.batch = LONG_MAX;
	assert_int_equal(rcl_shrinker_new(reg, &ok, &s), 0);
	assert_string_equal(rcl_shrinker_name(s), "shrinker");
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ok.name = longname;
	assert_int_equal(rcl_shrinker_new(reg, &ok, &s2), 0);
	assert_int_equal(strlen(rcl_shrinker_name(s2)), RCL_SHRINKER_NAME_LEN - 1);
	assert_null(rcl_shrinker_name(NULL));
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_free(s2), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static void test_badinput_shrinker_new_limit(void **state)
{
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker **v;
	struct rcl_shrinker_config cfg = { .ops = &shr_ops };
	unsigned n, i;
	int err = 0;

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
	v = calloc(RCL_SHRINKER_MAX + 1, sizeof(*v));
	assert_non_null(v);
	for (n = 0; n <= RCL_SHRINKER_MAX; n++) {
		err = rcl_shrinker_new(reg, &cfg, &v[n]);
		if (err)
			break;
	}
	for (i = 0; i < n; i++)
		rcl_shrinker_free(v[i]);
	free(v);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	assert_int_equal(err, -ENOSPC);
	assert_int_equal(n, RCL_SHRINKER_MAX);
}

static atomic_int shr_free_self_rc;

static unsigned long scan_free_self(struct rcl_shrinker *s,
				    struct rcl_shrink_control *sc)
{
	(void)sc;
	atomic_store(&shr_free_self_rc, rcl_shrinker_free(s));
	return 0;
}

static const struct rcl_shrinker_ops free_self_ops = { count_ten, scan_free_self };

static void test_badinput_shrinker_lifecycle(void **state)
{
	struct rcl_shrinker_registry *reg, *reg2;
	struct rcl_shrinker_registry_config rc = { .nr_partitions = 2 };
	struct rcl_shrinker_config cfg = { .ops = &free_self_ops };
	struct rcl_shrinker *s, *t;
	unsigned long freed = 0;

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
	assert_int_equal(rcl_shrinker_registry_new(NULL, &reg2), 0);
	s = shrinker_new(reg, 0);
	/* register: NULL, twice. */
	assert_int_equal(rcl_shrinker_register(NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(rcl_shrinker_register(s), -EBUSY);
	/* free: NULL is a no-op; an unregistered shrinker is freed too. */
	assert_int_equal(rcl_shrinker_free(NULL), 0);
	t = shrinker_new(reg2, 0);
	assert_int_equal(rcl_shrinker_free(t), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg2), 0);
	/* From its own callback: -EDEADLK, nothing done. */
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &t), 0);
	assert_int_equal(rcl_shrinker_register(t), 0);
	atomic_store(&shr_free_self_rc, 1);
	assert_int_equal(rcl_shrinker_debug_scan(t, 0, 1, 0, &freed, NULL), 0);
	assert_int_equal(atomic_load(&shr_free_self_rc), -EDEADLK);
	assert_string_equal(rcl_shrinker_name(t), "shrinker");	/* still alive */
	assert_int_equal(rcl_shrinker_free(t), 0);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static void test_badinput_shrinker_calls(void **state)
{
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker_registry_config rc = { .nr_partitions = 2 };
	struct rcl_shrinker *s, *pa, *unreg;
	struct rcl_shrink_result res = { 0 };
	struct rcl_shrinker_stats st;
	unsigned long v = 77, freed = 77, scanned = 77;

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
	s = shrinker_new(reg, 0);
	pa = shrinker_new(reg, RCL_SHRINKER_PARTITION_AWARE);
	unreg = shrinker_new(reg, 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(rcl_shrinker_register(pa), 0);

	/* rcl_shrinker_shrink(). */
	assert_int_equal(rcl_shrinker_shrink(NULL, 0, 12, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_shrink(s, 2, 12, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_shrink(s, 0, -1, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_shrink(s, 0, 13, 0, &res), -EINVAL);
	assert_int_equal(rcl_shrinker_shrink(unreg, 0, 12, 0, &res), -ENOENT);
	/* Range checks come before the registration check. */
	assert_int_equal(rcl_shrinker_shrink(unreg, 0, 13, 0, &res), -EINVAL);
	assert_int_equal(res.nr_shrinkers, 0);
	assert_int_equal(rcl_shrinker_shrink(s, 1, 0, 0, NULL), 0);

	/* stats. */
	assert_int_equal(rcl_shrinker_stats(NULL, &st), -EINVAL);
	assert_int_equal(rcl_shrinker_stats(s, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_stats(unreg, &st), 0);
	assert_int_equal(st.calls, 0);

	/* backlog: NULL, partition out of range (per shrinker kind). */
	assert_int_equal(rcl_shrinker_backlog(NULL, 0, &v), -EINVAL);
	assert_int_equal(rcl_shrinker_backlog(s, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_backlog(s, 1, &v), -EINVAL);
	assert_int_equal(rcl_shrinker_backlog(pa, 2, &v), -EINVAL);
	assert_int_equal(v, 77);
	assert_int_equal(rcl_shrinker_backlog(pa, 1, &v), 0);
	assert_int_equal(rcl_shrinker_backlog(unreg, 0, &v), 0);

	/* debug_count. */
	v = 77;
	assert_int_equal(rcl_shrinker_debug_count(NULL, 0, 0, &v), -EINVAL);
	assert_int_equal(rcl_shrinker_debug_count(s, 0, 0, NULL), -EINVAL);
	assert_int_equal(rcl_shrinker_debug_count(s, 2, 0, &v), -EINVAL);
	assert_int_equal(rcl_shrinker_debug_count(unreg, 0, 0, &v), -ENOENT);
	assert_int_equal(v, 77);
	assert_int_equal(rcl_shrinker_debug_count(s, 1, ~0ull, &v), 0);
	assert_int_equal(v, 10);

	/* debug_scan. */
	assert_int_equal(rcl_shrinker_debug_scan(NULL, 0, 1, 0, &freed, &scanned),
			 -EINVAL);
	assert_int_equal(rcl_shrinker_debug_scan(s, 0, 1, 0, NULL, &scanned),
			 -EINVAL);
	assert_int_equal(rcl_shrinker_debug_scan(s, 2, 1, 0, &freed, &scanned),
			 -EINVAL);
	assert_int_equal(rcl_shrinker_debug_scan(unreg, 0, 1, 0, &freed, &scanned),
			 -ENOENT);
	assert_int_equal(freed, 77);
	assert_int_equal(scanned, 77);
	assert_int_equal(rcl_shrinker_debug_scan(s, 0, ULONG_MAX, 0, &freed, NULL),
			 0);
	assert_int_equal(freed, 0);

	/* After free, the registry walk no longer sees it. */
	assert_int_equal(rcl_shrinker_free(unreg), 0);
	assert_int_equal(rcl_shrinker_free(pa), 0);
	assert_int_equal(rcl_shrinker_free(s), 0);
	memset(&res, 0, sizeof(res));
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 0, 0, &res), 0);
	assert_int_equal(res.nr_shrinkers, 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* ========================================================================= */
/* workingset.h                                                               */
/* ========================================================================= */

static uint64_t captured_shadow;

static enum rcl_evict_status evict_capture(struct rcl_lru_node *node,
					   struct rcl_evict_control *ctl)
{
	(void)node;
	captured_shadow = ctl->shadow;
	return RCL_EVICT_FREED;
}

/* The shadow of evicting one object of type @type from @lv. */
static uint64_t evict_one(struct rcl_lruvec *lv, unsigned type)
{
	struct obj x;
	struct rcl_lru_shrink_control sc = { .type = type, .nr_to_scan = 1 };

	memset(&x, 0, sizeof(x));
	assert_int_equal(rcl_lruvec_add(lv, &x.lru, type, W, NOBATCH), 0);
	evict_hook = evict_capture;
	captured_shadow = 0;
	assert_int_equal(rcl_lruvec_shrink_inactive(lv, &sc), 0);
	evict_hook = NULL;
	assert_int_equal(sc.nr_freed, 1);
	assert_true(rcl_shadow_is_valid(captured_shadow));
	return captured_shadow;
}

static void test_badinput_add_refault(void **state)
{
	struct rcl_lruvec lv, lv2, zero;
	struct rcl_lruvec_config kcfg = { .ops = &ops, .flags = RCL_LRUVEC_KERNEL };
	struct obj o[6];
	uint64_t sh, sh2, sh_anon;
	unsigned out;

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	assert_int_equal(rcl_lruvec_init(&lv, &kcfg), 0);
	lv_init(&lv2);
	sh = evict_one(&lv, 0);
	sh_anon = evict_one(&lv, 1);
	sh2 = evict_one(&lv2, 0);

	/* As rcl_lruvec_add(): NULL, uninitialised, out of range; *outcome = 0. */
	out = 77;
	assert_int_equal(rcl_lruvec_add_refault(NULL, &o[0].lru, 0, W, 0, sh, &out),
			 -EINVAL);
	assert_int_equal(out, 0);
	assert_int_equal(rcl_lruvec_add_refault(&lv, NULL, 0, W, 0, sh, &out),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_add_refault(&zero, &o[0].lru, 0, W, 0, sh, &out),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[0].lru, 2, W, 0, sh, &out),
			 -EINVAL);
	out = 77;
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[0].lru, 0, W, 1u << 5, sh,
						&out),
			 -EINVAL);
	assert_int_equal(out, 0);
	{
		struct rcl_workingset_stats ws;

		assert_int_equal(rcl_lruvec_workingset_stats(&lv, &ws), 0);
		assert_int_equal(ws.refault, 0);	/* failures count nothing */
	}

	/* Shadows: 0 and untagged values are plain adds. */
	out = 77;
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[0].lru, 0, W, NOBATCH, 0,
						&out),
			 0);
	assert_int_equal(out, 0);
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[1].lru, 0, W, NOBATCH,
						sh & ~RCL_SHADOW_TAG, &out),
			 0);
	assert_int_equal(out, 0);
	/* Wrong object: a shadow of another lruvec or type: refault, no activation. */
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[2].lru, 0, W, NOBATCH, sh2,
						&out),
			 0);
	assert_int_equal(out & (RCL_REFAULT_REFAULT | RCL_REFAULT_ACTIVATE),
			 RCL_REFAULT_REFAULT);
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[3].lru, 0, W, NOBATCH,
						sh_anon, &out),
			 0);
	assert_int_equal(out & (RCL_REFAULT_REFAULT | RCL_REFAULT_ACTIVATE),
			 RCL_REFAULT_REFAULT);
	/* Its own shadow, NULL @outcome. */
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[4].lru, 0, W, NOBATCH, sh,
						NULL),
			 0);
	/* Double add: -EBUSY, outcome 0. */
	out = 77;
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[4].lru, 0, W, NOBATCH, sh,
						&out),
			 -EBUSY);
	assert_int_equal(out, 0);
	assert_int_equal(rcl_lruvec_add_refault(&lv2, &o[4].lru, 0, W, NOBATCH, sh2,
						&out),
			 -EBUSY);
	/* A shadow reused (double refault of the same shadow) is accepted. */
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[5].lru, 0, W, NOBATCH, sh,
						&out),
			 0);
	assert_true(out & RCL_REFAULT_REFAULT);
	lv_fini(&lv, o, 6);
	lv_fini(&lv2, o, 0);
	assert_int_equal(rcl_lruvec_add_refault(&lv, &o[0].lru, 0, W, 0, sh, &out),
			 -EINVAL);	/* destroyed */
}

static void test_badinput_add_refault_failure_has_no_effect(void **state)
{
	struct rcl_lruvec lv;
	struct obj o[1];
	uint64_t sh;
	unsigned before, after_busy, after_inval;
	int rc_busy, rc_inval;

	(void)state;
	/*
	 * BUG: see docs/bad-input-audit.md.  common.h: "a failing call has no
	 * effect".  add_refault() with a valid shadow of its own lruvec starts
	 * (and may move) the adaptive inactive target before rcl_lruvec_add()
	 * refuses the node, so a refused double add changes
	 * rcl_lruvec_inactive_target().
	 */
	memset(o, 0, sizeof(o));
	lv_init(&lv);			/* adaptive (no RCL_LRUVEC_KERNEL) */
	sh = evict_one(&lv, 0);
	add_nobatch(&lv, o, 1);
	before = rcl_lruvec_inactive_target(&lv, 0);
	rc_busy = rcl_lruvec_add_refault(&lv, &o[0].lru, 0, W, NOBATCH, sh, NULL);
	after_busy = rcl_lruvec_inactive_target(&lv, 0);
	assert_int_equal(rcl_lruvec_del(&lv, &o[0].lru), 0);
	rc_inval = rcl_lruvec_add_refault(&lv, &o[0].lru, 0, W, 1u << 6, sh, NULL);
	after_inval = rcl_lruvec_inactive_target(&lv, 0);
	lv_fini(&lv, o, 1);

	assert_int_equal(before, 0);
	assert_int_equal(rc_busy, -EBUSY);
	assert_int_equal(rc_inval, -EINVAL);
	assert_int_equal(after_busy, before);
	assert_int_equal(after_inval, before);
}

static void test_badinput_add_refault_flags_as_add(void **state)
{
	struct rcl_lruvec lv;
	struct obj o[2];
	int rc_add, rc_refault;

	(void)state;
	/*
	 * BUG: see docs/bad-input-audit.md.  "@flags: as rcl_lruvec_add()",
	 * "Return: as rcl_lruvec_add()": rcl_lruvec_add() refuses ACTIVE |
	 * UNEVICTABLE with -EINVAL, add_refault() accepts it (unevictable).
	 */
	memset(o, 0, sizeof(o));
	lv_init(&lv);
	rc_add = rcl_lruvec_add(&lv, &o[0].lru, 0, W,
				NOBATCH | RCL_LRU_ADD_ACTIVE |
					RCL_LRU_ADD_UNEVICTABLE);
	rc_refault = rcl_lruvec_add_refault(&lv, &o[1].lru, 0, W,
					    NOBATCH | RCL_LRU_ADD_ACTIVE |
						    RCL_LRU_ADD_UNEVICTABLE,
					    0, NULL);
	lv_fini(&lv, o, 2);
	assert_int_equal(rc_add, -EINVAL);
	assert_int_equal(rc_refault, rc_add);
}

static void test_badinput_workingset_queries(void **state)
{
	struct rcl_lruvec lv, zero;
	struct rcl_workingset_stats ws;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_workingset_stats(NULL, &ws), -EINVAL);
	assert_int_equal(rcl_lruvec_workingset_stats(&zero, &ws), -EINVAL);
	assert_int_equal(rcl_lruvec_workingset_stats(&lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_inactive_target(NULL, 0), 0);
	assert_int_equal(rcl_lruvec_inactive_target(&zero, 0), 0);
	assert_int_equal(rcl_lruvec_inactive_target(&lv, 2), 0);
	assert_int_equal(rcl_lruvec_inactive_target(&lv, UINT32_MAX), 0);
	assert_int_equal(rcl_lruvec_inactive_target(&lv, 0), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_lruvec_workingset_stats(&lv, &ws), -EINVAL);
}

static unsigned long drop_none(void *priv, unsigned long nr)
{
	(void)priv;
	(void)nr;
	return 0;
}

static struct rcl_shadow_limit *free_self_limit;
static atomic_int limit_free_self_rc;

static unsigned long drop_free_self(void *priv, unsigned long nr)
{
	(void)priv;
	(void)nr;
	atomic_store(&limit_free_self_rc, rcl_shadow_limit_free(free_self_limit));
	return 0;
}

static void test_badinput_shadow_limit(void **state)
{
	struct rcl_shrinker_registry *reg;
	static const struct rcl_shadow_ops sops = { drop_none };
	static const struct rcl_shadow_ops no_drop = { NULL };
	static const struct rcl_shadow_ops self_ops = { drop_free_self };
	struct rcl_shadow_limit *l = (void *)&reg, *l2;
	struct rcl_shrink_result res = { 0 };

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
	assert_int_equal(rcl_shadow_limit_new(NULL, 0, &sops, NULL, &l), -EINVAL);
	assert_int_equal(rcl_shadow_limit_new(reg, 0, NULL, NULL, &l), -EINVAL);
	assert_int_equal(rcl_shadow_limit_new(reg, 0, &no_drop, NULL, &l), -EINVAL);
	assert_int_equal(rcl_shadow_limit_new(reg, 0, &sops, NULL, NULL), -EINVAL);
	assert_ptr_equal(l, (void *)&reg);
	assert_int_equal(rcl_shadow_limit_new(reg, UINT64_MAX, &sops, NULL, &l), 0);

	/* add/count: NULL; below zero clamps to 0; extremes do not trap. */
	rcl_shadow_limit_add(NULL, 5);			/* no-op */
	assert_int_equal(rcl_shadow_limit_count(NULL), 0);
	rcl_shadow_limit_add(l, -3);
	assert_int_equal(rcl_shadow_limit_count(l), 0);
	rcl_shadow_limit_add(l, 3);
	assert_int_equal(rcl_shadow_limit_count(l), 0);
	rcl_shadow_limit_add(l, INT64_MAX);
	assert_int_equal(rcl_shadow_limit_count(l), INT64_MAX);
	/* A quota of UINT64_MAX: never anything to reclaim. */
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 0, 0, &res), 0);
	assert_int_equal(res.freed, 0);
	rcl_shadow_limit_add(l, INT64_MIN);
	assert_int_equal(rcl_shadow_limit_count(l), 0);
	/* The registry cannot be freed under it. */
	assert_int_equal(rcl_shrinker_registry_free(reg), -EBUSY);

	/* free: NULL; from its own drop callback -EDEADLK. */
	assert_int_equal(rcl_shadow_limit_free(NULL), 0);
	assert_int_equal(rcl_shadow_limit_new(reg, 0, &self_ops, NULL, &l2), 0);
	free_self_limit = l2;
	rcl_shadow_limit_add(l2, 100);
	atomic_store(&limit_free_self_rc, 1);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 0, 0, NULL), 0);
	assert_int_equal(atomic_load(&limit_free_self_rc), -EDEADLK);
	assert_int_equal(rcl_shadow_limit_count(l2), 100);	/* still alive */
	assert_int_equal(rcl_shadow_limit_free(l2), 0);
	assert_int_equal(rcl_shadow_limit_free(l), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

/* ========================================================================= */
/* domain.h                                                                   */
/* ========================================================================= */

/* An allocator that refuses anything above 1 MiB (and counts live blocks). */
static atomic_int small_live;

static void *small_alloc(void *ctx, size_t size)
{
	(void)ctx;
	if (size > (1u << 20))
		return NULL;
	atomic_fetch_add(&small_live, 1);
	return malloc(size);
}

static void small_free(void *ctx, void *p)
{
	(void)ctx;
	atomic_fetch_sub(&small_live, 1);
	free(p);
}

static const struct rcl_allocator small_allocator = { small_alloc, small_free,
						      NULL };

static const struct rcl_flusher_ops fops_none = { NULL };

static void test_badinput_domain_new(void **state)
{
	static const struct rcl_allocator half = { small_alloc, NULL, NULL };
	struct rcl_domain_config ok = { .budget = 1000 };
	struct rcl_domain_config bad[15];
	struct rcl_domain *d = (void *)&ok;
	size_t i, nbad = 0;

	(void)state;
	assert_int_equal(rcl_domain_new(NULL, &d), -EINVAL);
	assert_int_equal(rcl_domain_new(&ok, NULL), -EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		bad[i] = ok;
	bad[nbad++].budget = 0;
	bad[nbad++].nr_partitions = RCL_SHRINKER_MAX_PARTITIONS + 1;
	bad[nbad++].mode = (enum rcl_charge_mode)2;
	bad[nbad++].shrink_policy = (enum rcl_shrink_policy)3;
	bad[nbad++].flags = 1u << 3;	/* 1u << 2 is RCL_DOMAIN_RECURSIVE_PROT */
	bad[nbad++].swappiness = RCL_SWAPPINESS_MAX + 1;
	bad[nbad++].watermark_scale_factor = 10001;
	bad[nbad++].allocator = &half;
	/* Not in the header's list (docs/bad-input-audit.md): */
	bad[nbad++].dirty_background_ratio = 101;
	bad[nbad++].dirty_ratio = 101;
	bad[nbad++].flush_policy = (enum rcl_flush_policy)2;
	bad[nbad++].flusher = &fops_none;
	for (i = 0; i < nbad; i++)
		assert_int_equal(rcl_domain_new(&bad[i], &d), -EINVAL);
	assert_ptr_equal(d, (void *)&ok);

	/* Limits that are accepted. */
	ok.budget = UINT64_MAX;
	ok.nr_partitions = RCL_SHRINKER_MAX_PARTITIONS;
	ok.swappiness = RCL_SWAPPINESS_MAX;
	ok.watermark_scale_factor = 10000;
	ok.dirty_background_ratio = 100;
	ok.dirty_ratio = 100;
	assert_int_equal(rcl_domain_new(&ok, &d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	/* A budget of 1: watermarks cannot be ordered, but it works. */
	ok.budget = 1;
	assert_int_equal(rcl_domain_new(&ok, &d), 0);
	assert_int_equal(rcl_domain_free(d), 0);

	/*
	 * max_lruvecs: above RCL_LRUVEC_MAX_IDS is -EINVAL (no more lruvecs
	 * can exist); at it, an allocator that refuses the size gives -ENOMEM.
	 */
	ok.budget = 1000;
	ok.max_lruvecs = UINT32_MAX;
	assert_int_equal(rcl_domain_new(&ok, &d), -EINVAL);
	ok.max_lruvecs = RCL_LRUVEC_MAX_IDS + 1;
	assert_int_equal(rcl_domain_new(&ok, &d), -EINVAL);
	ok.max_lruvecs = RCL_LRUVEC_MAX_IDS;
	ok.allocator = &small_allocator;
	assert_int_equal(rcl_domain_new(&ok, &d), -ENOMEM);
	assert_int_equal(atomic_load(&small_live), 0);
	ok.max_lruvecs = 0;
	assert_int_equal(rcl_domain_new(&ok, &d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(atomic_load(&small_live), 0);
	/* free(NULL) */
	assert_int_equal(rcl_domain_free(NULL), 0);
}

static void test_badinput_domain_free_busy(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_lruvec lv;
	struct rcl_shrinker *s;

	(void)state;
	lv_init(&lv);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	assert_int_equal(rcl_domain_free(d), -EBUSY);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	s = shrinker_new(rcl_domain_registry(d), 0);
	assert_int_equal(rcl_domain_free(d), -EBUSY);
	assert_int_equal(rcl_shrinker_free(s), 0);
	/* Running threads are stopped by free. */
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

static void test_badinput_domain_attach(void **state)
{
	struct rcl_domain *d = domain_new(1000), *d2 = domain_new(1000);
	struct rcl_domain *d1p;
	struct rcl_domain_config c1 = { .budget = 1000, .max_lruvecs = 1 };
	struct rcl_lruvec lv, lv2, noev, zero;
	struct rcl_lruvec_config ncfg = { .ops = &no_evict_ops };

	(void)state;
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	lv_init(&lv2);
	assert_int_equal(rcl_lruvec_init(&noev, &ncfg), 0);

	assert_int_equal(rcl_domain_attach(NULL, &lv, 0), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, NULL, 0), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &zero, 0), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &noev, 0), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &lv, 1), -EINVAL);
	assert_int_equal(rcl_domain_attach(d, &lv, UINT32_MAX), -EINVAL);
	/* Double attach to the same domain. */
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), -EBUSY);
	/* max_lruvecs reached. */
	assert_int_equal(rcl_domain_new(&c1, &d1p), 0);
	assert_int_equal(rcl_domain_attach(d1p, &lv2, 0), 0);
	assert_int_equal(rcl_domain_attach(d1p, &noev, 0), -EINVAL);
	{
		struct rcl_lruvec lv3;

		lv_init(&lv3);
		assert_int_equal(rcl_domain_attach(d1p, &lv3, 0), -ENOSPC);
		assert_int_equal(rcl_lruvec_destroy(&lv3), 0);
	}
	assert_int_equal(rcl_domain_detach(d1p, &lv2), 0);
	assert_int_equal(rcl_domain_free(d1p), 0);

	/* detach: NULL, not attached, twice, attached elsewhere. */
	assert_int_equal(rcl_domain_detach(NULL, &lv), -EINVAL);
	assert_int_equal(rcl_domain_detach(d, NULL), -EINVAL);
	assert_int_equal(rcl_domain_detach(d, &lv2), -ENOENT);
	assert_int_equal(rcl_domain_detach(d2, &lv), -ENOENT);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_detach(d, &lv), -ENOENT);
	assert_int_equal(rcl_domain_detach(d, &zero), -ENOENT);

	/* registry(NULL). */
	assert_null(rcl_domain_registry(NULL));
	assert_non_null(rcl_domain_registry(d));

	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_domain_free(d2), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv2), 0);
	assert_int_equal(rcl_lruvec_destroy(&noev), 0);
}

static void test_badinput_domain_attach_two_domains(void **state)
{
	struct rcl_domain *d1 = domain_new(1000), *d2 = domain_new(1000);
	struct rcl_lruvec lv;
	int rc;

	(void)state;
	/*
	 * BUG: see docs/bad-input-audit.md.  "-EBUSY if @lv is attached
	 * already": only the domain's own slots are checked, so an lruvec
	 * attached to d1 attaches to d2 as well and its dirty accounting is
	 * moved to d2 (lv->__domain is overwritten).
	 */
	lv_init(&lv);
	assert_int_equal(rcl_domain_attach(d1, &lv, 0), 0);
	rc = rcl_domain_attach(d2, &lv, 0);
	assert_int_equal(rcl_domain_detach(d1, &lv), 0);
	if (rc == 0)
		assert_int_equal(rcl_domain_detach(d2, &lv), 0);
	assert_int_equal(rcl_domain_free(d1), 0);
	assert_int_equal(rcl_domain_free(d2), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rc, -EBUSY);
}

static void test_badinput_lruvec_destroy_attached(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_lruvec lv;
	int rc;

	(void)state;
	/*
	 * BUG: see docs/bad-input-audit.md.  Destroying an empty lruvec that is
	 * still attached succeeds: the domain keeps a pointer to it (and
	 * rcl_domain_free() returns -EBUSY for ever, and rcl_domain_detach()
	 * then locks its destroyed mutex).  Cheaply detectable, so by the rule
	 * of common.h it should be refused (-EBUSY).
	 */
	lv_init(&lv);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	rc = rcl_lruvec_destroy(&lv);
	if (rc == 0)
		lv_init(&lv);	/* a live lruvec at the same address, to detach */
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rc, -EBUSY);
}

/*
 * Charge stocks: rcl_domain_drain_stocks(NULL); any charge_stock is
 * accepted (capped at budget / 64); with a stock, an uncharge of more than
 * was charged is clamped when the stock goes back, and strict usage still
 * never exceeds the budget.
 */
static void test_badinput_domain_charge_stock(void **state)
{
	struct rcl_domain_config cfg = {
		.budget = 1u << 20,
		.charge_stock = UINT64_MAX,
	};
	struct rcl_domain *d;

	(void)state;
	assert_int_equal(rcl_domain_drain_stocks(NULL), -EINVAL);
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_int_equal(rcl_domain_charge(d, 100, RCL_CTX_CAPABLE, NULL), 0);
	/* 100 + a stock of 16384 (1 MiB / 64) */
	assert_int_equal(rcl_domain_usage(d), 100 + 16384);
	/*
	 * Over-uncharge: the stock overflows, keeps half (8192) and gives the
	 * rest back (16384 + 1000 - 8192): usage reads lower than the
	 * stock holds, until the stock goes back and the clamp applies.
	 */
	assert_int_equal(rcl_domain_uncharge(d, 1000), 0);
	assert_int_equal(rcl_domain_usage(d), 100 + 16384 - (16384 + 1000 - 8192));
	assert_int_equal(rcl_domain_uncharge(d, UINT64_MAX), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_drain_stocks(d), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	/* Strict: the whole budget in one charge, stocks or not. */
	assert_int_equal(rcl_domain_charge(d, 1u << 20, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 1u << 20);
	assert_int_equal(rcl_domain_charge(d, 1, RCL_CTX_CAPABLE, NULL), -ENOMEM);
	assert_int_equal(rcl_domain_uncharge(d, 1u << 20), 0);
	assert_int_equal(rcl_domain_drain_stocks(d), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_badinput_domain_charge(void **state)
{
	struct rcl_domain *d = domain_new(1000), *soft, *huge;
	struct rcl_domain_config sc = { .budget = 1000, .mode = RCL_CHARGE_SOFT };
	struct rcl_domain_config hc = { .budget = UINT64_MAX };
	uint64_t over = 77;

	(void)state;
	/* NULL: -EINVAL, *overshoot = 0. */
	assert_int_equal(rcl_domain_charge(NULL, 1, 0, &over), -EINVAL);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_uncharge(NULL, 1), -EINVAL);
	assert_int_equal(rcl_domain_usage(NULL), 0);
	assert_int_equal(rcl_domain_budget(NULL), 0);

	/* Strict: larger than the budget -> -ENOMEM, nothing charged. */
	assert_int_equal(rcl_domain_charge(d, 1001, RCL_CTX_CAPABLE, &over), -ENOMEM);
	assert_int_equal(rcl_domain_charge(d, UINT64_MAX, 0, NULL), -ENOMEM);
	assert_int_equal(rcl_domain_usage(d), 0);
	/* Zero is a valid charge; NULL @overshoot is fine. */
	assert_int_equal(rcl_domain_charge(d, 0, 0, NULL), 0);
	assert_int_equal(rcl_domain_charge(d, 1000, 0, &over), 0);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_charge(d, 1, 0, NULL), -ENOMEM);
	/* Uncharge more than charged: clamps to 0. */
	assert_int_equal(rcl_domain_uncharge(d, 5000), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_uncharge(d, UINT64_MAX), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_uncharge(d, 0), 0);

	/* Soft: admitted with overshoot; -EOVERFLOW on wrap, nothing charged. */
	assert_int_equal(rcl_domain_new(&sc, &soft), 0);
	assert_int_equal(rcl_domain_charge(soft, UINT64_MAX - 10, 0, &over), 0);
	assert_int_equal(over, UINT64_MAX - 10 - 1000);
	assert_int_equal(rcl_domain_charge(soft, 11, 0, &over), -EOVERFLOW);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_usage(soft), UINT64_MAX - 10);
	assert_int_equal(rcl_domain_charge(soft, 10, 0, NULL), 0);
	assert_int_equal(rcl_domain_usage(soft), UINT64_MAX);
	assert_int_equal(rcl_domain_uncharge(soft, UINT64_MAX), 0);
	assert_int_equal(rcl_domain_usage(soft), 0);
	/* Strict with a budget of 2^64 - 1: the wrap is -EOVERFLOW too. */
	assert_int_equal(rcl_domain_new(&hc, &huge), 0);
	assert_int_equal(rcl_domain_charge(huge, UINT64_MAX, 0, NULL), 0);
	assert_int_equal(rcl_domain_charge(huge, 1, 0, NULL), -EOVERFLOW);
	assert_int_equal(rcl_domain_usage(huge), UINT64_MAX);

	assert_int_equal(rcl_domain_free(huge), 0);
	assert_int_equal(rcl_domain_free(soft), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_badinput_domain_budget_watermarks(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_watermarks wm, cur, before;
	static const struct rcl_watermarks bad[] = {
		{ 10, 10, 20 }, { 10, 20, 20 }, { 20, 10, 30 },
		{ 10, 20, 1001 }, { 0, 0, 0 }, { UINT64_MAX - 2, UINT64_MAX - 1,
						 UINT64_MAX },
	};
	size_t i;

	(void)state;
	assert_int_equal(rcl_domain_set_budget(NULL, 10), -EINVAL);
	assert_int_equal(rcl_domain_set_budget(d, 0), -EINVAL);
	assert_int_equal(rcl_domain_budget(d), 1000);
	assert_int_equal(rcl_domain_watermarks(NULL, &wm), -EINVAL);
	assert_int_equal(rcl_domain_watermarks(d, NULL), -EINVAL);
	assert_int_equal(rcl_domain_watermarks(d, &before), 0);

	assert_int_equal(rcl_domain_set_watermarks(NULL, &bad[0]), -EINVAL);
	assert_int_equal(rcl_domain_set_watermarks(d, NULL), -EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rcl_domain_set_watermarks(d, &bad[i]), -EINVAL);
	assert_int_equal(rcl_domain_watermarks(d, &cur), 0);
	assert_memory_equal(&cur, &before, sizeof(cur));
	/* The extremes that are accepted. */
	wm.min = 0;
	wm.low = 1;
	wm.high = 1000;
	assert_int_equal(rcl_domain_set_watermarks(d, &wm), 0);
	assert_int_equal(rcl_domain_set_budget(d, UINT64_MAX), 0);
	assert_int_equal(rcl_domain_budget(d), UINT64_MAX);
	assert_int_equal(rcl_domain_set_budget(d, 1), 0);
	assert_int_equal(rcl_domain_watermarks(d, &cur), 0);
	assert_true(cur.high <= 1);

	assert_int_equal(rcl_domain_set_swappiness(NULL, 100), -EINVAL);
	assert_int_equal(rcl_domain_set_swappiness(d, RCL_SWAPPINESS_MAX + 1),
			 -EINVAL);
	assert_int_equal(rcl_domain_set_swappiness(d, UINT32_MAX), -EINVAL);
	assert_int_equal(rcl_domain_set_swappiness(d, 0), 0);
	assert_int_equal(rcl_domain_set_swappiness(d, RCL_SWAPPINESS_MAX), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static struct rcl_domain *cb_domain;
static atomic_int cb_reclaim_rc, cb_detach_rc, cb_charge_rc, cb_done;

static enum rcl_evict_status evict_reenter_domain(struct rcl_lru_node *node,
						  struct rcl_evict_control *ctl)
{
	(void)node;
	if (!atomic_load(&cb_done)) {
		atomic_store(&cb_reclaim_rc, rcl_domain_reclaim(cb_domain, 1, 0, NULL));
		atomic_store(&cb_detach_rc, rcl_domain_detach(cb_domain, ctl->lruvec));
		atomic_store(&cb_charge_rc,
			     rcl_domain_charge(cb_domain, 1, RCL_CTX_CAPABLE, NULL));
		atomic_store(&cb_done, 1);
	}
	return RCL_EVICT_BUSY;
}

static void test_badinput_domain_reclaim(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_lruvec lv;
	struct obj o[2];
	struct rcl_reclaim_result res;

	(void)state;
	memset(o, 0, sizeof(o));
	assert_int_equal(rcl_domain_reclaim(NULL, 1, 0, &res), -EINVAL);
	assert_int_equal(rcl_domain_reclaim(d, 0, 0, &res), -EINVAL);
	/* Nothing attached, a huge goal, NULL @res: 0. */
	assert_int_equal(rcl_domain_reclaim(d, UINT64_MAX, ~0ull, NULL), 0);
	assert_int_equal(rcl_domain_reclaim(d, UINT64_MAX, 0, &res), 0);
	assert_int_equal(res.nr_reclaimed, 0);

	/* From an evict callback run by this domain: -EDEADLK. */
	lv_init(&lv);
	add_nobatch(&lv, o, 2);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	cb_domain = d;
	atomic_store(&cb_done, 0);
	evict_hook = evict_reenter_domain;
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_CAPABLE, &res), 0);
	evict_hook = NULL;
	assert_int_equal(atomic_load(&cb_done), 1);
	assert_int_equal(atomic_load(&cb_reclaim_rc), -EDEADLK);
	assert_int_equal(atomic_load(&cb_detach_rc), -EDEADLK);
	/* A charge from the callback works but does not reclaim recursively. */
	assert_int_equal(atomic_load(&cb_charge_rc), 0);
	assert_int_equal(rcl_domain_usage(d), 1);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	lv_fini(&lv, o, 2);
}

static atomic_int thr_stop_rc, thr_free_rc, thr_done;

static enum rcl_evict_status evict_on_reclaimer(struct rcl_lru_node *node,
						struct rcl_evict_control *ctl)
{
	(void)node;
	(void)ctl;
	if (!atomic_load(&thr_done)) {
		atomic_store(&thr_stop_rc, rcl_domain_reclaimer_stop(cb_domain));
		atomic_store(&thr_free_rc, rcl_domain_free(cb_domain));
		atomic_store(&thr_done, 1);
	}
	return RCL_EVICT_BUSY;
}

static void test_badinput_domain_reclaimer(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_lruvec lv;
	struct obj o[4];
	bool seen;

	(void)state;
	memset(o, 0, sizeof(o));
	assert_int_equal(rcl_domain_reclaimer_start(NULL), -EINVAL);
	assert_int_equal(rcl_domain_reclaimer_stop(NULL), -EINVAL);
	assert_int_equal(rcl_domain_wakeup(NULL), -EINVAL);
	/* Stop when not running, twice; wakeup with no reclaimer. */
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	assert_int_equal(rcl_domain_wakeup(d), 0);
	/* Double start. */
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), -EBUSY);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	/* Restart after stop. */
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);

	/* From the reclaimer's own callback: stop and free are -EDEADLK. */
	lv_init(&lv);
	add_nobatch(&lv, o, 4);
	cb_domain = d;
	atomic_store(&thr_done, 0);
	evict_hook = evict_on_reclaimer;
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	assert_int_equal(rcl_domain_charge(d, 999, 0, NULL), 0); /* below low */
	seen = wait_flag(&thr_done);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	evict_hook = NULL;
	assert_true(seen);
	assert_int_equal(atomic_load(&thr_stop_rc), -EDEADLK);
	assert_int_equal(atomic_load(&thr_free_rc), -EDEADLK);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	lv_fini(&lv, o, 4);
}

static void test_badinput_domain_vmstat(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_vmstat vm;
	char buf[16];
	int len;

	(void)state;
	assert_int_equal(rcl_domain_vmstat(NULL, &vm), -EINVAL);
	assert_int_equal(rcl_domain_vmstat(d, NULL), -EINVAL);
	assert_int_equal(rcl_domain_vmstat_format(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(rcl_domain_vmstat_format(d, NULL, 1), -EINVAL);
	/* NULL buffer of size 0: the length only. */
	len = rcl_domain_vmstat_format(d, NULL, 0);
	assert_true(len > 0);
	/* Size 1: an empty string; truncated to size - 1 otherwise. */
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(rcl_domain_vmstat_format(d, buf, 1), len);
	assert_int_equal(buf[0], '\0');
	assert_int_equal(buf[1], 'x');
	assert_int_equal(rcl_domain_vmstat_format(d, buf, sizeof(buf)), len);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	/* A non-NULL buffer with size 0 is not written. */
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(rcl_domain_vmstat_format(d, buf, 0), len);
	assert_int_equal(buf[0], 'x');
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* domain.h: trees of domains                                                 */
/* ------------------------------------------------------------------------- */

/* A child of @parent with the given budget (0: no limit of its own). */
static struct rcl_domain *child_new(struct rcl_domain *parent, uint64_t budget)
{
	struct rcl_domain_config cfg = { .budget = budget, .parent = parent };
	struct rcl_domain *d = NULL;

	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	return d;
}

/* What a refused call must leave alone in one domain of a tree. */
struct tree_snap {
	uint64_t usage, budget;
	struct rcl_domain_limits lim;
	struct rcl_domain_events own, sub;
	struct rcl_domain *parent;
};

static struct tree_snap tree_snap(const struct rcl_domain *d)
{
	struct tree_snap s;

	memset(&s, 0, sizeof(s));
	s.usage = rcl_domain_usage(d);
	s.budget = rcl_domain_budget(d);
	assert_int_equal(rcl_domain_limits(d, &s.lim), 0);
	assert_int_equal(rcl_domain_events(d, false, &s.own), 0);
	assert_int_equal(rcl_domain_events(d, true, &s.sub), 0);
	s.parent = rcl_domain_parent(d);
	return s;
}

static void assert_tree_snap(const struct rcl_domain *d,
			     const struct tree_snap *before)
{
	struct tree_snap now = tree_snap(d);

	assert_memory_equal(&now, before, sizeof(now));
}

/*
 * rcl_domain_new() with a parent: every refusal the header gives (depth,
 * charge_stock or RCL_DOMAIN_RECURSIVE_PROT on a child, a partition count
 * or a clock other than the parent's, protection on a root) is -EINVAL,
 * leaves *out alone and adds no child: the parent is unchanged and can
 * still be freed.
 */
static void test_badinput_domain_tree_new(void **state)
{
	struct rcl_domain_config root2 = { .budget = 1000, .nr_partitions = 2 };
	struct rcl_domain_config rcfg = { .budget = 1000 };
	struct rcl_domain_config c;
	struct rcl_domain *root, *r2, *rf, *chain[RCL_DOMAIN_MAX_DEPTH];
	struct rcl_domain *d = (void *)&c, *ok;
	struct rcl_fake_clock *fc;
	struct tree_snap before;
	unsigned i;

	(void)state;
	/* Protection on a root, at creation. */
	rcfg.protect_low = 1;
	assert_int_equal(rcl_domain_new(&rcfg, &d), -EINVAL);
	rcfg.protect_low = 0;
	rcfg.protect_min = 1;
	assert_int_equal(rcl_domain_new(&rcfg, &d), -EINVAL);
	rcfg.protect_min = 0;
	assert_ptr_equal(d, (void *)&c);
	rcfg.flags = RCL_DOMAIN_RECURSIVE_PROT;		/* on a root: fine */
	assert_int_equal(rcl_domain_new(&rcfg, &root), 0);
	assert_null(rcl_domain_parent(root));
	before = tree_snap(root);

	memset(&c, 0, sizeof(c));
	c.budget = 100;
	c.parent = root;
	c.charge_stock = 64;
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.charge_stock = 0;
	c.flags = RCL_DOMAIN_RECURSIVE_PROT;
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.flags = 1u << 3;				/* unknown, as for a root */
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.flags = 0;
	c.nr_partitions = 2;				/* the root has 1 */
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.nr_partitions = RCL_SHRINKER_MAX_PARTITIONS + 1;
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.nr_partitions = 0;
	assert_int_equal(rcl_fake_clock_new(1, &fc), 0);
	c.clock = rcl_fake_clock_clock(fc);		/* the root's is monotonic */
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.clock = NULL;
	/* The checks every domain gets still apply to a child. */
	c.swappiness = RCL_SWAPPINESS_MAX + 1;
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.swappiness = 0;
	c.mode = (enum rcl_charge_mode)2;
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.mode = RCL_CHARGE_STRICT;
	assert_ptr_equal(d, (void *)&c);
	assert_tree_snap(root, &before);

	/* Accepted: budget 0 (no limit), protection, the root's own clock. */
	c.budget = 0;
	c.clock = rcl_clock_monotonic();
	c.protect_low = 50;
	c.protect_min = 60;		/* no order is required */
	c.limit_high = UINT64_MAX;
	assert_int_equal(rcl_domain_new(&c, &ok), 0);
	assert_int_equal(rcl_domain_budget(ok), UINT64_MAX);
	assert_ptr_equal(rcl_domain_parent(ok), root);
	assert_int_equal(rcl_domain_free(ok), 0);
	/* No child is left behind by the refusals: the root frees. */
	assert_int_equal(rcl_domain_free(root), 0);

	/* A partition count equal to the parent's (2) is accepted. */
	assert_int_equal(rcl_domain_new(&root2, &r2), 0);
	memset(&c, 0, sizeof(c));
	c.budget = 100;
	c.parent = r2;
	c.nr_partitions = 1;
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.nr_partitions = 3;
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.nr_partitions = 2;
	assert_int_equal(rcl_domain_new(&c, &ok), 0);
	assert_int_equal(rcl_domain_free(ok), 0);
	assert_int_equal(rcl_domain_free(r2), 0);

	/* A parent on a fake clock: the same clock is accepted, another not. */
	rcfg.flags = 0;
	rcfg.clock = rcl_fake_clock_clock(fc);
	assert_int_equal(rcl_domain_new(&rcfg, &rf), 0);
	memset(&c, 0, sizeof(c));
	c.budget = 100;
	c.parent = rf;
	c.clock = rcl_clock_monotonic();
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	c.clock = rcl_fake_clock_clock(fc);
	assert_int_equal(rcl_domain_new(&c, &ok), 0);
	assert_int_equal(rcl_domain_free(ok), 0);
	assert_int_equal(rcl_domain_free(rf), 0);
	rcl_fake_clock_free(fc);

	/* Depth: RCL_DOMAIN_MAX_DEPTH levels (a root is 1), not one more. */
	chain[0] = domain_new(1000);
	for (i = 1; i < RCL_DOMAIN_MAX_DEPTH; i++)
		chain[i] = child_new(chain[i - 1], 0);
	before = tree_snap(chain[RCL_DOMAIN_MAX_DEPTH - 1]);
	memset(&c, 0, sizeof(c));
	c.budget = 10;
	c.parent = chain[RCL_DOMAIN_MAX_DEPTH - 1];
	d = (void *)&c;
	assert_int_equal(rcl_domain_new(&c, &d), -EINVAL);
	assert_ptr_equal(d, (void *)&c);
	assert_tree_snap(chain[RCL_DOMAIN_MAX_DEPTH - 1], &before);
	/* The deepest level works: a charge reaches the root. */
	assert_int_equal(rcl_domain_charge(chain[RCL_DOMAIN_MAX_DEPTH - 1], 7,
					   RCL_CTX_CAPABLE, NULL), 0);
	for (i = 0; i < RCL_DOMAIN_MAX_DEPTH; i++)
		assert_int_equal(rcl_domain_usage(chain[i]), 7);
	assert_int_equal(rcl_domain_uncharge(chain[RCL_DOMAIN_MAX_DEPTH - 1], 7), 0);
	for (i = RCL_DOMAIN_MAX_DEPTH; i-- > 0;) {
		assert_int_equal(rcl_domain_usage(chain[i]), 0);
		assert_int_equal(rcl_domain_free(chain[i]), 0);
	}
}

/*
 * rcl_domain_free() of a domain with children: -EBUSY, nothing freed, the
 * tree works on; leaves first, then their parents.
 */
static void test_badinput_domain_tree_free_busy(void **state)
{
	struct rcl_domain *root = domain_new(1000);
	struct rcl_domain *mid = child_new(root, 500);
	struct rcl_domain *leaf = child_new(mid, 0);
	struct tree_snap sr, sm;

	(void)state;
	assert_int_equal(rcl_domain_charge(leaf, 10, RCL_CTX_CAPABLE, NULL), 0);
	sr = tree_snap(root);
	sm = tree_snap(mid);
	assert_int_equal(rcl_domain_free(root), -EBUSY);
	assert_int_equal(rcl_domain_free(mid), -EBUSY);
	assert_tree_snap(root, &sr);
	assert_tree_snap(mid, &sm);
	assert_ptr_equal(rcl_domain_parent(leaf), mid);
	assert_ptr_equal(rcl_domain_parent(mid), root);
	/* Still one tree: a charge through the leaf reaches the root. */
	assert_int_equal(rcl_domain_charge(leaf, 5, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_usage(mid), 15);
	assert_int_equal(rcl_domain_usage(root), 15);
	assert_int_equal(rcl_domain_uncharge(leaf, 15), 0);
	assert_int_equal(rcl_domain_usage(root), 0);
	assert_int_equal(rcl_domain_free(leaf), 0);
	assert_int_equal(rcl_domain_free(root), -EBUSY);	/* mid remains */
	/*
	 * A child freed while it holds charges: what it holds leaves its
	 * ancestors too (F18, now in the header), so each stays the sum of
	 * what is charged through it.
	 */
	assert_int_equal(rcl_domain_charge(mid, 30, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(root, 5, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_usage(root), 35);
	assert_int_equal(rcl_domain_free(mid), 0);
	assert_int_equal(rcl_domain_usage(root), 5);
	assert_int_equal(rcl_domain_uncharge(root, 5), 0);
	assert_int_equal(rcl_domain_free(root), 0);
}

/*
 * What only a root has: the background reclaimer and the watermarks.
 * rcl_domain_reclaimer_start() and rcl_domain_set_watermarks() on a child
 * are -EINVAL and change nothing; the root's still work.
 */
static void test_badinput_domain_tree_child_has_no_reclaimer(void **state)
{
	struct rcl_domain *root = domain_new(1000);
	struct rcl_domain *child = child_new(root, 1000);
	struct rcl_watermarks wm = { 1, 2, 3 }, w0, w1;
	struct rcl_vmstat v0, v1;
	int rc0, rc1;

	(void)state;
	assert_int_equal(rcl_domain_vmstat(child, &v0), 0);
	assert_int_equal(rcl_domain_reclaimer_start(child), -EINVAL);
	assert_int_equal(rcl_domain_reclaimer_stop(child), 0);	/* not running */
	assert_int_equal(rcl_domain_vmstat(child, &v1), 0);
	assert_memory_equal(&v0, &v1, sizeof(v0));

	memset(&w0, 0xa5, sizeof(w0));
	memset(&w1, 0xa5, sizeof(w1));
	rc0 = rcl_domain_watermarks(child, &w0);
	assert_int_equal(rcl_domain_set_watermarks(child, &wm), -EINVAL);
	assert_int_equal(rcl_domain_set_watermarks(child, NULL), -EINVAL);
	rc1 = rcl_domain_watermarks(child, &w1);
	assert_int_equal(rc0, rc1);
	assert_memory_equal(&w0, &w1, sizeof(w0));

	/* A child's budget: 0 is still -EINVAL after creation. */
	assert_int_equal(rcl_domain_set_budget(child, 0), -EINVAL);
	assert_int_equal(rcl_domain_budget(child), 1000);

	assert_int_equal(rcl_domain_set_watermarks(root, &wm), 0);
	assert_int_equal(rcl_domain_reclaimer_start(root), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(root), 0);
	assert_int_equal(rcl_domain_free(child), 0);
	assert_int_equal(rcl_domain_free(root), 0);
}

/*
 * rcl_domain_set_limits() / rcl_domain_limits(): NULL, protection on a
 * root (-EINVAL, unchanged); a root's limit_high alone is accepted; any
 * values on a child, with no order between them; limit_high 0 reads back
 * as UINT64_MAX; a limit_high below a usage that nothing can reclaim
 * counts a high event and keeps the usage.
 */
static void test_badinput_domain_set_limits(void **state)
{
	struct rcl_domain *root = domain_new(1000);
	struct rcl_domain *child = child_new(root, 0);
	struct rcl_domain_limits lim, got, before;
	struct rcl_domain_events e0, e1;
	struct tree_snap sr;

	(void)state;
	memset(&lim, 0, sizeof(lim));
	assert_int_equal(rcl_domain_set_limits(NULL, &lim), -EINVAL);
	assert_int_equal(rcl_domain_set_limits(child, NULL), -EINVAL);
	memset(&got, 0xa5, sizeof(got));
	assert_int_equal(rcl_domain_limits(NULL, &got), -EINVAL);
	assert_int_equal(got.limit_high, 0xa5a5a5a5a5a5a5a5ull);
	assert_int_equal(rcl_domain_limits(child, NULL), -EINVAL);

	/* Defaults: no limit_high, no protection, root and child alike. */
	assert_int_equal(rcl_domain_limits(root, &got), 0);
	assert_int_equal(got.limit_high, UINT64_MAX);
	assert_int_equal(got.protect_low, 0);
	assert_int_equal(got.protect_min, 0);
	assert_int_equal(rcl_domain_limits(child, &got), 0);
	assert_int_equal(got.limit_high, UINT64_MAX);
	assert_int_equal(got.protect_low + got.protect_min, 0);

	/* Protection on a root: -EINVAL, nothing changed. */
	sr = tree_snap(root);
	lim.limit_high = 500;
	lim.protect_low = 1;
	assert_int_equal(rcl_domain_set_limits(root, &lim), -EINVAL);
	lim.protect_low = 0;
	lim.protect_min = UINT64_MAX;
	assert_int_equal(rcl_domain_set_limits(root, &lim), -EINVAL);
	assert_tree_snap(root, &sr);
	/* A root's limit_high alone is not protection. */
	lim.protect_min = 0;
	assert_int_equal(rcl_domain_set_limits(root, &lim), 0);
	assert_int_equal(rcl_domain_limits(root, &got), 0);
	assert_int_equal(got.limit_high, 500);
	lim.limit_high = 0;
	assert_int_equal(rcl_domain_set_limits(root, &lim), 0);
	assert_int_equal(rcl_domain_limits(root, &got), 0);
	assert_int_equal(got.limit_high, UINT64_MAX);

	/* A child: extremes, protect_min above protect_low, above the budget. */
	lim.limit_high = UINT64_MAX;
	lim.protect_low = 10;
	lim.protect_min = UINT64_MAX;
	assert_int_equal(rcl_domain_set_limits(child, &lim), 0);
	assert_int_equal(rcl_domain_limits(child, &got), 0);
	assert_memory_equal(&got, &lim, sizeof(got));
	lim.limit_high = 1;
	lim.protect_min = 0;
	assert_int_equal(rcl_domain_set_limits(child, &lim), 0);
	assert_int_equal(rcl_domain_limits(child, &got), 0);
	assert_memory_equal(&got, &lim, sizeof(got));

	/*
	 * limit_high below a usage nothing can reclaim (the child has no
	 * lruvec): 0, the usage stays, one high event is counted.
	 */
	lim.limit_high = 0;
	assert_int_equal(rcl_domain_set_limits(child, &lim), 0);
	assert_int_equal(rcl_domain_charge(child, 100, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_events(child, false, &e0), 0);
	lim.limit_high = 40;
	assert_int_equal(rcl_domain_set_limits(child, &lim), 0);
	assert_int_equal(rcl_domain_usage(child), 100);
	assert_int_equal(rcl_domain_usage(root), 100);
	assert_int_equal(rcl_domain_events(child, false, &e1), 0);
	assert_int_equal(e1.high, e0.high + 1);
	assert_int_equal(e1.max, e0.max);
	assert_int_equal(e1.oom, e0.oom);
	assert_int_equal(rcl_domain_limits(child, &before), 0);
	assert_int_equal(before.limit_high, 40);

	assert_int_equal(rcl_domain_uncharge(child, 100), 0);
	assert_int_equal(rcl_domain_free(child), 0);
	assert_int_equal(rcl_domain_free(root), 0);
}

/* set_limits from a callback of a reclaim pass of the tree: -EDEADLK. */
static struct rcl_domain *sl_target[3];
static struct rcl_domain_limits sl_lim, sl_root_lim;
static atomic_int sl_rc[3], sl_done, sl_free_rc, sl_new_rc;
static atomic_int sl_ofree_rc, sl_onew_rc;
static struct rcl_domain *sl_leaf, *sl_new_out, *sl_other_leaf;

static enum rcl_evict_status evict_set_limits(struct rcl_lru_node *node,
					      struct rcl_evict_control *ctl)
{
	(void)node;
	(void)ctl;
	if (!atomic_load(&sl_done)) {
		/* sl_target[1] is a root: no protection for it. */
		for (unsigned i = 0; i < 3; i++)
			atomic_store(&sl_rc[i],
				     rcl_domain_set_limits(sl_target[i],
							   i == 1 ? &sl_root_lim
								  : &sl_lim));
		/* Free and new in the tree refuse too (F19, now in the header). */
		{
			struct rcl_domain_config cfg = { .budget = 10,
							 .parent = sl_target[0] };

			atomic_store(&sl_free_rc, rcl_domain_free(sl_leaf));
			atomic_store(&sl_new_rc, rcl_domain_new(&cfg, &sl_new_out));
			/* A child of another tree: refused from any pass. */
			cfg.parent = sl_target[2];
			atomic_store(&sl_onew_rc, rcl_domain_new(&cfg, &sl_new_out));
			atomic_store(&sl_ofree_rc, rcl_domain_free(sl_other_leaf));
		}
		atomic_store(&sl_done, 1);
	}
	return RCL_EVICT_BUSY;
}

static void test_badinput_domain_set_limits_from_reclaim(void **state)
{
	struct rcl_domain *root = domain_new(1000);
	struct rcl_domain *child = child_new(root, 0);
	struct rcl_domain *other = domain_new(1000);
	struct rcl_domain *other_child = child_new(other, 0);
	struct rcl_domain *leaf = child_new(root, 0);
	struct rcl_domain *other_leaf = child_new(other, 0);
	struct rcl_domain_limits lc, lr, got;
	struct rcl_lruvec lv;
	struct obj o[4];
	unsigned pass;

	(void)state;
	sl_leaf = leaf;
	sl_other_leaf = other_leaf;
	memset(o, 0, sizeof(o));
	lc = (struct rcl_domain_limits){ .limit_high = 900, .protect_low = 5,
					 .protect_min = 3 };
	assert_int_equal(rcl_domain_set_limits(child, &lc), 0);
	lr = (struct rcl_domain_limits){ .limit_high = 950 };
	assert_int_equal(rcl_domain_set_limits(root, &lr), 0);
	lv_init(&lv);
	add_nobatch(&lv, o, 4);
	assert_int_equal(rcl_domain_attach(child, &lv, 0), 0);
	/* Charged above its protection, so that the root's pass visits it. */
	assert_int_equal(rcl_domain_charge(child, 4 * W, RCL_CTX_CAPABLE, NULL), 0);

	/*
	 * From an evict callback: once of the root's reclaim (which walks the
	 * child's lruvec), once of the child's own.  Both domains of the tree
	 * refuse; a domain of another tree is not in that pass.
	 */
	for (pass = 0; pass < 2; pass++) {
		sl_target[0] = child;
		sl_target[1] = root;
		sl_target[2] = other_child;
		sl_lim = (struct rcl_domain_limits){ .limit_high = 10 + pass,
						     .protect_low = 1 };
		sl_root_lim = (struct rcl_domain_limits){ .limit_high = 20 + pass };
		atomic_store(&sl_done, 0);
		sl_new_out = NULL;
		evict_hook = evict_set_limits;
		assert_int_equal(rcl_domain_reclaim(pass ? child : root, 1,
						    RCL_CTX_CAPABLE, NULL), 0);
		evict_hook = NULL;
		assert_int_equal(atomic_load(&sl_done), 1);
		assert_int_equal(atomic_load(&sl_rc[0]), -EDEADLK);
		assert_int_equal(atomic_load(&sl_rc[1]), -EDEADLK);
		assert_int_equal(atomic_load(&sl_rc[2]), 0);
		assert_int_equal(atomic_load(&sl_free_rc), -EDEADLK);
		assert_int_equal(atomic_load(&sl_new_rc), -EDEADLK);
		assert_int_equal(atomic_load(&sl_ofree_rc), -EDEADLK);
		assert_int_equal(atomic_load(&sl_onew_rc), -EDEADLK);
		assert_null(sl_new_out);
		assert_ptr_equal(rcl_domain_parent(leaf), root);
		assert_ptr_equal(rcl_domain_parent(other_leaf), other);
		/* Nothing changed in the tree; the other tree took its values. */
		assert_int_equal(rcl_domain_limits(child, &got), 0);
		assert_memory_equal(&got, &lc, sizeof(got));
		assert_int_equal(rcl_domain_limits(root, &got), 0);
		assert_memory_equal(&got, &lr, sizeof(got));
		assert_int_equal(rcl_domain_limits(other_child, &got), 0);
		assert_memory_equal(&got, &sl_lim, sizeof(got));
	}
	/* Outside a pass, the same call works. */
	assert_int_equal(rcl_domain_set_limits(child, &sl_lim), 0);
	assert_int_equal(rcl_domain_limits(child, &got), 0);
	assert_memory_equal(&got, &sl_lim, sizeof(got));

	assert_int_equal(rcl_domain_detach(child, &lv), 0);
	assert_int_equal(rcl_domain_uncharge(child, 4 * W), 0);
	lv_fini(&lv, o, 4);
	assert_int_equal(rcl_domain_free(other_leaf), 0);
	assert_int_equal(rcl_domain_free(other_child), 0);
	assert_int_equal(rcl_domain_free(other), 0);
	assert_int_equal(rcl_domain_free(leaf), 0);
	assert_int_equal(rcl_domain_free(child), 0);
	assert_int_equal(rcl_domain_free(root), 0);
}

/*
 * rcl_domain_effective_protection(): NULL domains, a target that is not
 * the domain nor one of its ancestors (a sibling, a descendant, another
 * tree): -EINVAL, outputs untouched; NULL outputs are allowed; the domain
 * itself as target: 0 and 0.  rcl_domain_parent(NULL) is NULL.
 */
static void test_badinput_domain_effective_protection(void **state)
{
	struct rcl_domain *root = domain_new(1000);
	struct rcl_domain *a = child_new(root, 0), *b = child_new(root, 0);
	struct rcl_domain *a1 = child_new(a, 0);
	struct rcl_domain *other = domain_new(1000);
	struct rcl_domain_limits lim = { .protect_low = 300, .protect_min = 200 };
	uint64_t emin = 77, elow = 77, bmin, blow;

	(void)state;
	assert_int_equal(rcl_domain_set_limits(a, &lim), 0);
	assert_int_equal(rcl_domain_set_limits(a1, &lim), 0);
	assert_int_equal(rcl_domain_charge(a1, 100, RCL_CTX_CAPABLE, NULL), 0);

	assert_int_equal(rcl_domain_effective_protection(NULL, a, &emin, &elow),
			 -EINVAL);
	assert_int_equal(rcl_domain_effective_protection(root, NULL, &emin, &elow),
			 -EINVAL);
	assert_int_equal(rcl_domain_effective_protection(b, a, &emin, &elow),
			 -EINVAL);				/* a sibling */
	assert_int_equal(rcl_domain_effective_protection(a1, a, &emin, &elow),
			 -EINVAL);				/* a descendant */
	assert_int_equal(rcl_domain_effective_protection(a1, root, &emin, &elow),
			 -EINVAL);
	assert_int_equal(rcl_domain_effective_protection(other, a1, &emin, &elow),
			 -EINVAL);				/* another tree */
	assert_int_equal(rcl_domain_effective_protection(b, a1, &emin, &elow),
			 -EINVAL);				/* an uncle */
	assert_int_equal(emin, 77);
	assert_int_equal(elow, 77);

	/* NULL outputs. */
	assert_int_equal(rcl_domain_effective_protection(root, a1, NULL, NULL), 0);
	assert_int_equal(rcl_domain_effective_protection(root, a1, &emin, NULL), 0);
	assert_int_equal(rcl_domain_effective_protection(root, a1, NULL, &elow), 0);
	/* Self: nothing protects a level from its own pressure. */
	assert_int_equal(rcl_domain_effective_protection(a, a, &emin, &elow), 0);
	assert_int_equal(emin, 0);
	assert_int_equal(elow, 0);
	assert_int_equal(rcl_domain_effective_protection(root, root, &emin, &elow), 0);
	assert_int_equal(emin, 0);
	assert_int_equal(elow, 0);
	/* A child of the target gets its setting (even above its usage). */
	assert_int_equal(rcl_domain_effective_protection(root, a, &emin, &elow), 0);
	assert_int_equal(emin, 200);
	assert_int_equal(elow, 300);
	assert_int_equal(rcl_domain_effective_protection(a, a1, &emin, &elow), 0);
	assert_int_equal(emin, 200);
	assert_int_equal(elow, 300);
	/*
	 * BUG: see docs/bad-input-audit.md (F20, fixed in 0b36d1b).  Also a
	 * child that has no usage gets its setting; prot_visit() gave 0 and 0
	 * to any domain whose usage was 0.  Recorded here, asserted after the
	 * clean-up.
	 */
	assert_int_equal(rcl_domain_set_limits(b, &lim), 0);
	assert_int_equal(rcl_domain_usage(b), 0);
	bmin = blow = 77;
	assert_int_equal(rcl_domain_effective_protection(root, b, &bmin, &blow), 0);
	/*
	 * Deeper: min(usage, setting), not scaled down, since a1 (the only
	 * child of a) claims 100, less than a's effective 200 and 300.
	 */
	assert_int_equal(rcl_domain_effective_protection(root, a1, &emin, &elow), 0);
	assert_int_equal(emin, 100);
	assert_int_equal(elow, 100);

	assert_null(rcl_domain_parent(NULL));
	assert_int_equal(rcl_domain_uncharge(a1, 100), 0);
	assert_int_equal(rcl_domain_free(a1), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(b), 0);
	assert_int_equal(rcl_domain_free(root), 0);
	assert_int_equal(rcl_domain_free(other), 0);
	assert_int_equal(bmin, 200);
	assert_int_equal(blow, 300);
}

/* rcl_domain_events(), rcl_domain_vmstat_subtree(): NULL, outputs untouched. */
static void test_badinput_domain_events_subtree(void **state)
{
	struct rcl_domain *root = domain_new(1000);
	struct rcl_domain *child = child_new(root, 100);
	struct rcl_domain_events ev, mark;
	struct rcl_vmstat vm, vmark, own;

	(void)state;
	memset(&ev, 0xa5, sizeof(ev));
	mark = ev;
	assert_int_equal(rcl_domain_events(NULL, false, &ev), -EINVAL);
	assert_int_equal(rcl_domain_events(NULL, true, &ev), -EINVAL);
	assert_memory_equal(&ev, &mark, sizeof(ev));
	assert_int_equal(rcl_domain_events(child, false, NULL), -EINVAL);
	assert_int_equal(rcl_domain_events(child, true, NULL), -EINVAL);
	memset(&vm, 0xa5, sizeof(vm));
	vmark = vm;
	assert_int_equal(rcl_domain_vmstat_subtree(NULL, &vm), -EINVAL);
	assert_memory_equal(&vm, &vmark, sizeof(vm));
	assert_int_equal(rcl_domain_vmstat_subtree(root, NULL), -EINVAL);

	/* New domains: no events; a leaf's subtree is itself. */
	assert_int_equal(rcl_domain_events(child, true, &ev), 0);
	assert_int_equal(ev.low + ev.high + ev.max + ev.oom, 0);
	assert_int_equal(rcl_domain_vmstat_subtree(child, &vm), 0);
	assert_int_equal(rcl_domain_vmstat(child, &own), 0);
	assert_memory_equal(&vm, &own, sizeof(vm));

	/*
	 * The subtree sums keep a freed descendant's events and counters
	 * (F23): the child's refused charge (an oom event, a charge failure)
	 * and its high event stay in the root's after the child is freed.
	 */
	{
		struct rcl_domain_limits lim = { .limit_high = 10 };
		struct rcl_domain_events before, after;
		struct rcl_vmstat vb, va;

		assert_int_equal(rcl_domain_set_limits(child, &lim), 0);
		assert_int_equal(rcl_domain_charge(child, 101, RCL_CTX_CAPABLE, NULL),
				 -ENOMEM);
		assert_int_equal(rcl_domain_charge(child, 20, RCL_CTX_CAPABLE, NULL), 0);
		assert_int_equal(rcl_domain_events(child, false, &ev), 0);
		assert_true(ev.oom >= 1 && ev.high >= 1);
		assert_int_equal(rcl_domain_events(root, true, &before), 0);
		assert_int_equal(rcl_domain_vmstat_subtree(root, &vb), 0);
		assert_true(vb.charge_failures >= 1);
		assert_int_equal(rcl_domain_uncharge(child, 20), 0);
		assert_int_equal(rcl_domain_free(child), 0);
		assert_int_equal(rcl_domain_events(root, true, &after), 0);
		assert_memory_equal(&after, &before, sizeof(after));
		assert_int_equal(rcl_domain_vmstat_subtree(root, &va), 0);
		assert_int_equal(va.charge_failures, vb.charge_failures);
		assert_int_equal(va.charge_overshoots, vb.charge_overshoots);
	}
	assert_int_equal(rcl_domain_free(root), 0);
}

/*
 * Charging through a child: a refused charge (-ENOMEM at the child's
 * budget or at a full ancestor's, -EOVERFLOW in soft mode) leaves nothing
 * charged at any level, and *@overshoot is 0.
 */
static void test_badinput_domain_tree_charge(void **state)
{
	struct rcl_domain_config sc = { .budget = 1000, .mode = RCL_CHARGE_SOFT };
	struct rcl_domain *root = domain_new(1000);
	struct rcl_domain *child = child_new(root, 100);
	struct rcl_domain *open = child_new(root, 0);
	struct rcl_domain *soft, *soft_child;
	uint64_t over = 77;

	(void)state;
	/* Above the child's own budget. */
	assert_int_equal(rcl_domain_charge(child, 101, RCL_CTX_CAPABLE, &over),
			 -ENOMEM);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_usage(child), 0);
	assert_int_equal(rcl_domain_usage(root), 0);
	assert_int_equal(rcl_domain_charge(child, 100, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(child, 1, RCL_CTX_CAPABLE, NULL), -ENOMEM);
	assert_int_equal(rcl_domain_usage(child), 100);
	assert_int_equal(rcl_domain_usage(root), 100);
	/* A full ancestor: the unlimited child is refused too. */
	assert_int_equal(rcl_domain_charge(open, 900, RCL_CTX_CAPABLE, NULL), 0);
	over = 77;
	assert_int_equal(rcl_domain_charge(open, 1, RCL_CTX_CAPABLE, &over), -ENOMEM);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_usage(open), 900);
	assert_int_equal(rcl_domain_usage(child), 100);
	assert_int_equal(rcl_domain_usage(root), 1000);

	assert_int_equal(rcl_domain_uncharge(child, 100), 0);
	assert_int_equal(rcl_domain_uncharge(open, 900), 0);
	assert_int_equal(rcl_domain_usage(root), 0);

	/* Soft: -EOVERFLOW when a level would wrap, nothing charged. */
	assert_int_equal(rcl_domain_new(&sc, &soft), 0);
	sc.parent = soft;
	sc.budget = 0;
	assert_int_equal(rcl_domain_new(&sc, &soft_child), 0);
	assert_int_equal(rcl_domain_charge(soft_child, UINT64_MAX - 10, 0, NULL), 0);
	over = 77;
	assert_int_equal(rcl_domain_charge(soft_child, 11, 0, &over), -EOVERFLOW);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_usage(soft_child), UINT64_MAX - 10);
	assert_int_equal(rcl_domain_usage(soft), UINT64_MAX - 10);
	assert_int_equal(rcl_domain_uncharge(soft_child, UINT64_MAX - 10), 0);
	assert_int_equal(rcl_domain_usage(soft), 0);

	assert_int_equal(rcl_domain_free(soft_child), 0);
	assert_int_equal(rcl_domain_free(soft), 0);
	assert_int_equal(rcl_domain_free(open), 0);
	assert_int_equal(rcl_domain_free(child), 0);
	assert_int_equal(rcl_domain_free(root), 0);
}

/*
 * Uncharging more through a child than the child holds.  The child clamps
 * at 0, as a root does; its ancestors must stay their subtree's total
 * (domain.h: "usage of a domain is its subtree's total (every charge went
 * through it)"), so they lose only what the child held.
 */
static void test_badinput_domain_tree_uncharge_more_than_charged(void **state)
{
	struct rcl_domain *root = domain_new(1000);
	struct rcl_domain *mid = child_new(root, 0);
	struct rcl_domain *child = child_new(mid, 0);
	struct rcl_domain *sib = child_new(root, 0);
	uint64_t u_mid, u_root, u_root2;

	(void)state;
	assert_int_equal(rcl_domain_charge(child, 100, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(mid, 50, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(sib, 600, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_usage(root), 750);
	/*
	 * BUG: see docs/bad-input-audit.md (F17, fixed in 0b36d1b).  Each
	 * level clamped on its own (rcl_domain_uncharge() took the full amount
	 * from every level): mid read 0 and the root 500, below the 650 that
	 * sib (600) and mid's own charge (50) still hold.
	 */
	assert_int_equal(rcl_domain_uncharge(child, 250), 0);
	assert_int_equal(rcl_domain_usage(child), 0);
	u_mid = rcl_domain_usage(mid);
	u_root = rcl_domain_usage(root);
	/*
	 * Then the strict root admits what its usage shows room for: what the
	 * tree holds (sib's usage and mid's 50) goes above its budget.
	 */
	u_root2 = 0;
	if (u_root < 1000 &&
	    rcl_domain_charge(sib, 1000 - u_root, RCL_CTX_CAPABLE, NULL) == 0)
		u_root2 = rcl_domain_usage(sib) + 50;
	assert_int_equal(rcl_domain_uncharge(sib, UINT64_MAX), 0);
	assert_int_equal(rcl_domain_uncharge(mid, UINT64_MAX), 0);
	assert_int_equal(rcl_domain_free(child), 0);
	assert_int_equal(rcl_domain_free(mid), 0);
	assert_int_equal(rcl_domain_free(sib), 0);
	assert_int_equal(rcl_domain_free(root), 0);
	assert_int_equal(u_mid, 50);
	assert_int_equal(u_root, 650);
	assert_true(u_root2 <= 1000);
}

/* ========================================================================= */
/* flusher.h                                                                  */
/* ========================================================================= */

static void test_badinput_lruvec_dirty(void **state)
{
	struct rcl_lruvec lv, lv2, zero;
	struct obj o[3];
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;
	struct rcl_dirty_stats ds;
	struct rcl_lru_isolated iso;

	(void)state;
	memset(o, 0, sizeof(o));
	memset(&zero, 0, sizeof(zero));
	lv_init(&lv);
	lv_init(&lv2);
	add_nobatch(&lv, o, 2);
	add_nobatch(&lv2, o + 2, 1);

	/* set_dirty. */
	assert_int_equal(rcl_lruvec_set_dirty(NULL, &o[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_set_dirty(&zero, &o[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &idle), -ENOENT);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[2].lru), -ENOENT);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[0].lru), 0);	/* idempotent */
	assert_int_equal(rcl_lruvec_dirty_stats(&lv, &ds), 0);
	assert_int_equal(ds.nr_dirty, 1);
	assert_int_equal(ds.weight_dirty, W);

	/* writeback_start. */
	assert_int_equal(rcl_lruvec_writeback_start(NULL, &o[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_start(&lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_start(&zero, &o[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_start(&lv, &o[1].lru), -EINVAL);	/* clean */
	assert_int_equal(rcl_lruvec_writeback_start(&lv, &idle), -ENOENT);
	assert_int_equal(rcl_lruvec_writeback_start(&lv2, &o[0].lru), -ENOENT);
	/* writeback_end without start. */
	assert_int_equal(rcl_lruvec_writeback_end(&lv, &o[0].lru, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(&lv, &o[1].lru, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_dirty_stats(&lv, &ds), 0);
	assert_int_equal(ds.nr_dirty, 1);
	assert_int_equal(ds.nr_writeback, 0);
	/* Double start. */
	assert_int_equal(rcl_lruvec_writeback_start(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_writeback_start(&lv, &o[0].lru), -EBUSY);
	/* Pinned: del -EBUSY; isolated-set removal -EBUSY. */
	assert_int_equal(rcl_lruvec_del(&lv, &o[0].lru), -EBUSY);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&lv, RCL_LRU_LIST(0, 0), 2, &iso), 0);
	assert_int_equal(iso.nr, 2);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &o[0].lru), -EBUSY);
	assert_int_equal(iso.nr, 2);
	assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);

	/* writeback_end: NULL, wrong lruvec, idle node. */
	assert_int_equal(rcl_lruvec_writeback_end(NULL, &o[0].lru, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(&lv, NULL, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(&zero, &o[0].lru, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(&lv2, &o[0].lru, 0), -ENOENT);
	assert_int_equal(rcl_lruvec_writeback_end(&lv, &idle, 0), -ENOENT);
	/* An error (any non-zero value) makes it dirty again. */
	assert_int_equal(rcl_lruvec_writeback_end(&lv, &o[0].lru, INT32_MIN), 0);
	assert_int_equal(rcl_lruvec_dirty_stats(&lv, &ds), 0);
	assert_int_equal(ds.nr_dirty, 1);
	assert_int_equal(ds.nr_writeback, 0);
	/* Double end. */
	assert_int_equal(rcl_lruvec_writeback_start(&lv, &o[0].lru), 0);
	assert_int_equal(rcl_lruvec_writeback_end(&lv, &o[0].lru, 0), 0);
	assert_int_equal(rcl_lruvec_writeback_end(&lv, &o[0].lru, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_dirty_stats(&lv, &ds), 0);
	assert_int_equal(ds.nr_dirty, 0);
	assert_int_equal(ds.nr_writeback, 0);

	/* dirty_stats. */
	assert_int_equal(rcl_lruvec_dirty_stats(NULL, &ds), -EINVAL);
	assert_int_equal(rcl_lruvec_dirty_stats(&zero, &ds), -EINVAL);
	assert_int_equal(rcl_lruvec_dirty_stats(&lv, NULL), -EINVAL);
	lv_fini(&lv, o, 2);
	lv_fini(&lv2, o + 2, 1);
	/* Destroyed. */
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_start(&lv, &o[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(&lv, &o[0].lru, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_dirty_stats(&lv, &ds), -EINVAL);
}

static atomic_int set_dirty_self_rc, wb_start_self_rc;

static enum rcl_evict_status evict_dirty_self(struct rcl_lru_node *node,
					      struct rcl_evict_control *ctl)
{
	atomic_store(&set_dirty_self_rc, rcl_lruvec_set_dirty(ctl->lruvec, node));
	atomic_store(&wb_start_self_rc,
		     rcl_lruvec_writeback_start(ctl->lruvec, node));
	return RCL_EVICT_BUSY;
}

static void test_badinput_set_dirty_from_evict(void **state)
{
	struct rcl_lruvec lv;
	struct obj o[1];
	struct rcl_lru_shrink_control sc = { .type = 0, .nr_to_scan = 1 };
	struct rcl_dirty_stats ds;

	(void)state;
	memset(o, 0, sizeof(o));
	lv_init(&lv);
	add_nobatch(&lv, o, 1);
	evict_hook = evict_dirty_self;
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	evict_hook = NULL;
	/* The node in the callback's hands: -EDEADLK; it is clean: -EINVAL. */
	assert_int_equal(atomic_load(&set_dirty_self_rc), -EDEADLK);
	assert_int_equal(atomic_load(&wb_start_self_rc), -EBUSY);
	assert_int_equal(rcl_lruvec_dirty_stats(&lv, &ds), 0);
	assert_int_equal(ds.nr_dirty, 0);
	lv_fini(&lv, o, 1);
}

static struct rcl_flush_request last_req;
static atomic_int nr_wakeups;

static void wakeup_record(void *priv, const struct rcl_flush_request *req)
{
	(void)priv;
	last_req = *req;
	atomic_fetch_add(&nr_wakeups, 1);
}

static const struct rcl_flusher_ops fops_record = { wakeup_record };

static void test_badinput_domain_flush(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1000, .flusher = &fops_record };
	struct rcl_domain *d, *nof = domain_new(1000);
	struct rcl_flush_request stale, req;
	struct rcl_dirty_stats ds;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	atomic_store(&nr_wakeups, 0);

	assert_int_equal(rcl_domain_flush(NULL, 0), -EINVAL);
	assert_int_equal(rcl_domain_flush(nof, 0), -ENODEV);
	assert_int_equal(rcl_domain_flush_done(NULL, &last_req), -EINVAL);
	assert_int_equal(rcl_domain_flush_done(d, NULL), -EINVAL);
	/* Nothing in flight. */
	memset(&stale, 0, sizeof(stale));
	assert_int_equal(rcl_domain_flush_done(d, &stale), -ENOENT);
	assert_int_equal(rcl_domain_flush_done(nof, &stale), -ENOENT);

	assert_int_equal(rcl_domain_flush(d, UINT64_MAX), 0);
	assert_int_equal(atomic_load(&nr_wakeups), 1);
	req = last_req;
	assert_int_equal(req.nr_to_write, UINT64_MAX);
	/* A stale request (another seq): -ENOENT, the request stays in flight. */
	stale = req;
	stale.seq = req.seq + 1;
	assert_int_equal(rcl_domain_flush_done(d, &stale), -ENOENT);
	stale.seq = req.seq - 1;
	assert_int_equal(rcl_domain_flush_done(d, &stale), -ENOENT);
	/* A second request while one is in flight is pending, not delivered. */
	assert_int_equal(rcl_domain_flush(d, 5), 0);
	assert_int_equal(atomic_load(&nr_wakeups), 1);
	assert_int_equal(rcl_domain_flush_done(d, &req), 0);
	assert_int_equal(atomic_load(&nr_wakeups), 2);
	/* Double done of the same request. */
	assert_int_equal(rcl_domain_flush_done(d, &req), -ENOENT);
	req = last_req;
	assert_int_equal(rcl_domain_flush_done(d, &req), 0);
	assert_int_equal(rcl_domain_flush_done(d, &req), -ENOENT);

	/* balance_dirty, dirty_stats. */
	assert_int_equal(rcl_domain_balance_dirty(NULL, RCL_CTX_CAPABLE), -EINVAL);
	assert_int_equal(rcl_domain_balance_dirty(d, RCL_CTX_CAPABLE), 0);
	assert_int_equal(rcl_domain_balance_dirty(d, ~0ull), 0);
	assert_int_equal(rcl_domain_dirty_stats(NULL, &ds), -EINVAL);
	assert_int_equal(rcl_domain_dirty_stats(d, NULL), -EINVAL);
	assert_int_equal(rcl_domain_dirty_stats(d, &ds), 0);
	assert_int_equal(ds.nr_dirty, 0);

	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_domain_free(nof), 0);
}

static struct rcl_lruvec *wb_lv;
static struct rcl_domain *wb_domain;
static atomic_int wb_free_rc, wb_del_wait_rc, wb_start_rc, wb_stop_rc, wb_done;

static int write_reenter(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	if (!atomic_load(&wb_done)) {
		atomic_store(&wb_free_rc, rcl_domain_free(wb_domain));
		atomic_store(&wb_del_wait_rc, rcl_lruvec_del_wait(wb_lv, node));
		atomic_store(&wb_start_rc, rcl_lruvec_writeback_start(wb_lv, node));
		atomic_store(&wb_stop_rc, rcl_domain_flusher_stop(wb_domain));
		atomic_store(&wb_done, 1);
	}
	return 0;
}

static int write_ok(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	return 0;
}

static void test_badinput_domain_writeback(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	static const struct rcl_writeback_ops no_write = { NULL, NULL };
	static const struct rcl_writeback_ops okops = { write_ok, NULL };
	static const struct rcl_writeback_ops reops = { write_reenter, NULL };
	struct rcl_lruvec lv;
	struct obj o[1];
	uint64_t written = 77;

	(void)state;
	memset(o, 0, sizeof(o));
	/* flusher_start / _stop. */
	assert_int_equal(rcl_domain_flusher_start(NULL, &okops, NULL, 0), -EINVAL);
	assert_int_equal(rcl_domain_flusher_start(d, NULL, NULL, 0), -EINVAL);
	assert_int_equal(rcl_domain_flusher_start(d, &no_write, NULL, 0), -EINVAL);
	assert_int_equal(rcl_domain_flusher_stop(NULL), -EINVAL);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);	/* not running */
	assert_int_equal(rcl_domain_flusher_start(d, &okops, NULL, UINT32_MAX),
			 -EINVAL);
	assert_int_equal(rcl_domain_flusher_start(d, &okops, NULL,
						  RCL_WRITEBACK_MAX_BATCH), 0);
	assert_int_equal(rcl_domain_flusher_start(d, &okops, NULL, 1), -EBUSY);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);	/* double stop */

	/* writeback_all: NULL arguments; *written = 0 on failure. */
	assert_int_equal(rcl_domain_writeback_all(NULL, &okops, NULL, &written),
			 -EINVAL);
	assert_int_equal(written, 0);
	written = 77;
	assert_int_equal(rcl_domain_writeback_all(d, NULL, NULL, &written), -EINVAL);
	assert_int_equal(written, 0);
	assert_int_equal(rcl_domain_writeback_all(d, &no_write, NULL, NULL), -EINVAL);
	/* Nothing dirty. */
	written = 77;
	assert_int_equal(rcl_domain_writeback_all(d, &okops, NULL, &written), 0);
	assert_int_equal(written, 0);

	/* From a write callback: free -EDEADLK, del_wait on its node -EDEADLK. */
	lv_init(&lv);
	add_nobatch(&lv, o, 1);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[0].lru), 0);
	wb_lv = &lv;
	wb_domain = d;
	atomic_store(&wb_done, 0);
	assert_int_equal(rcl_domain_writeback_all(d, &reops, NULL, &written), 0);
	assert_int_equal(written, 1);
	assert_int_equal(atomic_load(&wb_done), 1);
	assert_int_equal(atomic_load(&wb_free_rc), -EDEADLK);
	assert_int_equal(atomic_load(&wb_del_wait_rc), -EDEADLK);
	assert_int_equal(atomic_load(&wb_start_rc), -EBUSY);
	assert_int_equal(atomic_load(&wb_stop_rc), 0);	/* no flusher thread */

	/* On the flusher thread: flusher_stop and free -EDEADLK. */
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[0].lru), 0);
	atomic_store(&wb_done, 0);
	assert_int_equal(rcl_domain_flusher_start(d, &reops, NULL, 0), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	assert_true(wait_flag(&wb_done));
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	assert_int_equal(atomic_load(&wb_stop_rc), -EDEADLK);
	assert_int_equal(atomic_load(&wb_free_rc), -EDEADLK);
	assert_int_equal(atomic_load(&wb_del_wait_rc), -EDEADLK);

	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	lv_fini(&lv, o, 1);
}

static atomic_int nr_writes;

static int write_count(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	atomic_fetch_add(&nr_writes, 1);
	return 0;
}

/* Poll up to about @ms milliseconds for *@v to reach @want. */
static bool wait_count(atomic_int *v, int want, unsigned ms)
{
	struct timespec ts = { 0, 1000000 };
	unsigned i;

	for (i = 0; i < ms; i++) {
		if (atomic_load(v) >= want)
			return true;
		nanosleep(&ts, NULL);
	}
	return atomic_load(v) >= want;
}

static void test_badinput_flusher_batch_huge(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1000,
					 .allocator = &small_allocator };
	static const struct rcl_writeback_ops wops = { write_count, NULL };
	struct rcl_domain *d;
	struct rcl_lruvec lv;
	struct obj o[1];
	int rc_default, rc_huge;
	bool wrote_default, wrote_huge = false;

	(void)state;
	/*
	 * BUG: see docs/bad-input-audit.md.  @batch has no upper bound: the
	 * thread allocates batch * 24 bytes per request (96 GiB for
	 * UINT32_MAX); when that fails the request silently writes nothing
	 * (write_batches() returns -ENOMEM to a caller that ignores it).
	 * Either flusher_start() should refuse the value (-EINVAL) or clamp
	 * it; the test accepts both.
	 */
	memset(o, 0, sizeof(o));
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	lv_init(&lv);
	add_nobatch(&lv, o, 1);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);

	/* Control: the default batch writes the object. */
	atomic_store(&nr_writes, 0);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[0].lru), 0);
	rc_default = rcl_domain_flusher_start(d, &wops, NULL, 0);
	if (rc_default == 0)
		assert_int_equal(rcl_domain_flush(d, 0), 0);
	wrote_default = wait_count(&nr_writes, 1, 20000);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);

	atomic_store(&nr_writes, 0);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[0].lru), 0);
	rc_huge = rcl_domain_flusher_start(d, &wops, NULL, UINT32_MAX);
	if (rc_huge == 0) {
		assert_int_equal(rcl_domain_flush(d, 0), 0);
		wrote_huge = wait_count(&nr_writes, 1, 2000);
	}
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	lv_fini(&lv, o, 1);
	assert_int_equal(atomic_load(&small_live), 0);

	assert_int_equal(rc_default, 0);
	assert_true(wrote_default);
	assert_true(rc_huge == -EINVAL || (rc_huge == 0 && wrote_huge));
}

struct balance_arg {
	struct rcl_domain *d;
	atomic_int rc;
	atomic_int done;
};

static void *balance_thread(void *p)
{
	struct balance_arg *a = p;

	atomic_store(&a->rc, rcl_domain_balance_dirty(a->d, RCL_CTX_MAY_BLOCK));
	atomic_store(&a->done, 1);
	return NULL;
}

static void test_badinput_dirty_timeout_huge(void **state)
{
	struct rcl_fake_clock *fc;
	struct rcl_domain_config cfg = { .budget = 1000, .dirty_ratio = 1,
					 .dirty_background_ratio = 1,
					 .dirty_timeout_ns = UINT64_MAX };
	struct rcl_domain *d;
	struct rcl_lruvec lv;
	struct obj o[1];
	struct balance_arg a;
	pthread_t t;
	unsigned i;
	bool waited = false;
	int rc;

	(void)state;
	/*
	 * BUG: see docs/bad-input-audit.md.  dirty_timeout_ns is added to the
	 * clock without saturation: with UINT64_MAX (or any value that wraps)
	 * the deadline lies in the past and rcl_domain_balance_dirty() returns
	 * -ETIMEDOUT at once instead of waiting.  Documented: "waits ... until
	 * the dirty and writeback weight is below it, or the domain's dirty
	 * timeout passes".
	 */
	memset(o, 0, sizeof(o));
	assert_int_equal(rcl_fake_clock_new(1000, &fc), 0);
	cfg.clock = rcl_fake_clock_clock(fc);
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	lv_init(&lv);
	assert_int_equal(rcl_lruvec_add(&lv, &o[0].lru, 0, 100, NOBATCH), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	assert_int_equal(rcl_lruvec_set_dirty(&lv, &o[0].lru), 0); /* 100 >= 1 % */

	a.d = d;
	atomic_store(&a.rc, 1);
	atomic_store(&a.done, 0);
	assert_int_equal(pthread_create(&t, NULL, balance_thread, &a), 0);
	for (i = 0; i < 20000 && !atomic_load(&a.done); i++) {
		struct timespec ts = { 0, 1000000 };

		if (rcl_fake_clock_waiters(fc) > 0) {
			waited = true;
			break;
		}
		nanosleep(&ts, NULL);
	}
	/* Deleting the dirty object ends the wait. */
	assert_int_equal(rcl_lruvec_del(&lv, &o[0].lru), 0);
	pthread_join(t, NULL);
	rc = atomic_load(&a.rc);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	rcl_fake_clock_free(fc);

	assert_true(waited);
	assert_int_equal(rc, 0);
}

/* ------------------------------------------------------------------------- */

/* ========================================================================= */
/* objcache.h                                                                 */
/* ========================================================================= */

struct bobj {
	struct rcl_objcache_node node;
	char key[4];
};

static uint64_t b_hash(const void *key, size_t len, void *priv)
{
	(void)key;
	(void)priv;
	return len;
}

static bool b_eq(const struct rcl_objcache_node *n, const void *key,
		 size_t len, void *priv)
{
	(void)n;
	(void)key;
	(void)len;
	(void)priv;
	return false;
}

static const struct rcl_objcache_ops b_hash_only = { .hash = b_hash };
static const struct rcl_objcache_ops b_eq_only = { .eq = b_eq };
static const struct rcl_allocator b_half_alloc = { NULL, NULL, NULL };

static void test_badinput_objcache_new_destroy(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000, .nr_partitions = 2 };
	struct rcl_objcache_config cc = { 0 };
	struct rcl_objcache *c = (void *)&dc, *c2;
	struct rcl_domain *d;
	struct rcl_objcache_node n = RCL_OBJCACHE_NODE_INIT;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	assert_int_equal(rcl_objcache_new(NULL, &cc, &c), -EINVAL);
	assert_int_equal(rcl_objcache_new(d, NULL, &c), -EINVAL);
	assert_int_equal(rcl_objcache_new(d, &cc, NULL), -EINVAL);
	cc.nr_shards = 3;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.nr_shards = RCL_OBJCACHE_MAX_SHARDS * 2;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.nr_shards = 0;
	cc.nr_buckets = RCL_OBJCACHE_MAX_BUCKETS + 1;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.nr_buckets = 0;
	cc.lru_type = 2;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.lru_type = 0;
	cc.flags = 1u << 7;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.flags = 0;
	cc.ops = &b_hash_only;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.ops = &b_eq_only;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.ops = NULL;
	cc.allocator = &b_half_alloc;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.allocator = NULL;
	cc.meta_charge = (uint64_t)UINT32_MAX + 1;	/* no object would fit */
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.meta_charge = UINT64_MAX;
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	cc.meta_charge = 0;
	cc.partition = 2;		/* the domain has 0 and 1 */
	assert_int_equal(rcl_objcache_new(d, &cc, &c), -EINVAL);
	assert_ptr_equal(c, (void *)&dc);	/* *out untouched */
	/* Nothing was left attached by the failures. */
	assert_int_equal(rcl_domain_free(d), 0);	/* nothing left attached */
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	cc.partition = 1;
	cc.nr_shards = 1;
	cc.nr_buckets = 3;		/* rounded up */
	assert_int_equal(rcl_objcache_new(d, &cc, &c2), 0);
	assert_int_equal(rcl_objcache_insert(c2, &n, "k", 1, 5, 0, NULL, NULL), 0);
	assert_int_equal(rcl_objcache_destroy(c2), -EBUSY);	/* pinned */
	assert_int_equal(rcl_domain_free(d), -EBUSY);	/* lruvec attached */
	assert_int_equal(rcl_objcache_put(c2, &n), 0);
	assert_int_equal(rcl_objcache_destroy(c2), 0);
	assert_int_equal(rcl_objcache_destroy(NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_badinput_objcache_operations(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_objcache_config cc = { .nr_shards = 2 };
	struct rcl_objcache *c, *c2;
	struct rcl_domain *d;
	struct rcl_objcache_miss miss;
	struct rcl_objcache_stats st;
	struct rcl_objcache_node *ex = (void *)&dc;
	struct bobj a, b, idle;
	size_t len = 9;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&idle, 0, sizeof(idle));
	strcpy(a.key, "a");
	strcpy(b.key, "b");
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	assert_int_equal(rcl_objcache_new(d, &cc, &c), 0);
	assert_int_equal(rcl_objcache_new(d, &cc, &c2), 0);

	/* node_init / node_key */
	rcl_objcache_node_init(NULL);
	assert_null(rcl_objcache_node_key(NULL, &len));
	assert_int_equal(len, 0);
	assert_null(rcl_objcache_node_key(&idle.node, NULL));

	/* get: NULL cache, NULL key with a length; the token is cleared */
	memset(&miss, 0xff, sizeof(miss));
	assert_null(rcl_objcache_get(NULL, "a", 1, &miss));
	assert_false(miss.refault);
	assert_null(rcl_objcache_get(c, NULL, 1, NULL));
	assert_null(rcl_objcache_get(c, NULL, 0, NULL));	/* empty key */

	/* insert: NULLs, ranges, another cache's token, a non-idle node */
	assert_int_equal(rcl_objcache_insert(NULL, &a.node, "a", 1, 1, 0, NULL, &ex), -EINVAL);
	assert_null(ex);
	assert_int_equal(rcl_objcache_insert(c, NULL, "a", 1, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_insert(c, &a.node, NULL, 1, 1, 0, NULL, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_insert(c, &a.node, a.key, (size_t)UINT32_MAX + 1, 1,
					     0, NULL, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_insert(c, &a.node, a.key, 1, 0, 0, NULL, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_insert(c, &a.node, a.key, 1, (uint64_t)UINT32_MAX + 1,
					     0, NULL, NULL), -E2BIG);
	assert_null(rcl_objcache_get(c2, "a", 1, &miss));
	assert_int_equal(rcl_objcache_insert(c, &a.node, a.key, 1, 1, 0, &miss, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_insert(c, &a.node, a.key, 1, 2000, 0, NULL, NULL), -ENOMEM);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_objcache_insert(c, &a.node, a.key, 1, 10, 0, NULL, NULL), 0);
	assert_int_equal(rcl_objcache_insert(c, &a.node, a.key, 1, 10, 0, NULL, NULL), -EBUSY);
	assert_int_equal(rcl_objcache_insert(c2, &a.node, a.key, 1, 10, 0, NULL, NULL), -EBUSY);
	assert_int_equal(rcl_domain_usage(d), 10);

	/*
	 * insert with a meta_charge: -E2BIG once weight + meta_charge passes
	 * UINT32_MAX (the weight alone fits), also where the sum would wrap
	 * 64 bits; a weight of 0 is charged the overhead.  Nothing charged
	 * by the failures.
	 */
	{
		struct rcl_objcache_config mc = { .nr_shards = 1,
						  .meta_charge = 100 };
		struct rcl_objcache *c3;

		assert_int_equal(rcl_objcache_new(d, &mc, &c3), 0);
		assert_int_equal(rcl_objcache_insert(c3, &b.node, b.key, 1,
						     (uint64_t)UINT32_MAX - 99, 0,
						     NULL, NULL), -E2BIG);
		assert_int_equal(rcl_objcache_insert(c3, &b.node, b.key, 1,
						     UINT32_MAX, 0, NULL, NULL),
				 -E2BIG);
		assert_int_equal(rcl_objcache_insert(c3, &b.node, b.key, 1,
						     UINT64_MAX - 99, 0, NULL,
						     NULL), -E2BIG);
		assert_int_equal(rcl_domain_usage(d), 10);
		assert_int_equal(rcl_objcache_insert(c3, &b.node, b.key, 1, 0, 0,
						     NULL, NULL), 0);
		assert_int_equal(rcl_domain_usage(d), 110);
		assert_int_equal(rcl_objcache_put(c3, &b.node), 0);
		assert_int_equal(rcl_objcache_destroy(c3), 0);
		assert_int_equal(rcl_domain_usage(d), 10);
	}

	/* put: NULLs, another cache, without a pin */
	assert_int_equal(rcl_objcache_put(NULL, &a.node), -EINVAL);
	assert_int_equal(rcl_objcache_put(c, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_put(c2, &a.node), -EINVAL);
	assert_int_equal(rcl_objcache_put(c, &idle.node), -EINVAL);
	assert_int_equal(rcl_objcache_put(c, &a.node), 0);
	assert_int_equal(rcl_objcache_put(c, &a.node), -EINVAL);

	/* mark_dirty: NULLs, another cache, not pinned */
	assert_int_equal(rcl_objcache_mark_dirty(NULL, &a.node), -EINVAL);
	assert_int_equal(rcl_objcache_mark_dirty(c, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_mark_dirty(c2, &a.node), -EINVAL);
	assert_int_equal(rcl_objcache_mark_dirty(c, &a.node), -EINVAL);

	/* del / del_node: NULLs, missing keys, another cache, twice */
	assert_int_equal(rcl_objcache_del(NULL, "a", 1), -EINVAL);
	assert_int_equal(rcl_objcache_del(c, NULL, 1), -EINVAL);
	assert_int_equal(rcl_objcache_del(c, "zz", 2), -ENOENT);
	assert_int_equal(rcl_objcache_del(c2, "a", 1), -ENOENT);
	assert_int_equal(rcl_objcache_del_node(NULL, &a.node), -EINVAL);
	assert_int_equal(rcl_objcache_del_node(c, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_del_node(c2, &a.node), -EINVAL);
	assert_int_equal(rcl_objcache_del_node(c, &idle.node), -EINVAL);
	assert_int_equal(rcl_objcache_del(c, "a", 1), 0);
	assert_int_equal(rcl_objcache_del(c, "a", 1), -ENOENT);
	assert_int_equal(rcl_domain_usage(d), 0);
	/* No destructor: the node is idle again and may be reused. */
	assert_int_equal(rcl_objcache_insert(c, &a.node, a.key, 1, 10, 0, NULL, NULL), 0);
	assert_int_equal(rcl_objcache_del_node(c, &a.node), 0);
	assert_int_equal(rcl_objcache_put(c, &a.node), 0);
	assert_int_equal(rcl_objcache_put(c, &a.node), -EINVAL);

	/* for_each / stats / nr_shards / lruvec / flusher */
	assert_int_equal(rcl_objcache_for_each(NULL, NULL, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_for_each(c, NULL, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_stats(NULL, &st), -EINVAL);
	assert_int_equal(rcl_objcache_stats(c, NULL), -EINVAL);
	assert_int_equal(rcl_objcache_stats(c, &st), 0);
	assert_int_equal(st.objects, 0);
	assert_int_equal(rcl_objcache_nr_shards(NULL), 0);
	assert_null(rcl_objcache_lruvec(NULL, 0));
	assert_null(rcl_objcache_lruvec(c, 2));
	assert_non_null(rcl_objcache_lruvec(c, 1));
	assert_int_equal(rcl_objcache_flusher_start(NULL, 0), -EINVAL);
	assert_int_equal(rcl_objcache_flusher_start(d, RCL_WRITEBACK_MAX_BATCH + 1), -EINVAL);

	assert_int_equal(rcl_objcache_destroy(c2), 0);
	assert_int_equal(rcl_objcache_destroy(c), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ========================================================================= */
/* pressure.h                                                                 */
/* ========================================================================= */

/*
 * The sources' files live in a mkdtemp() directory: a PSI file (a regular
 * file, polled), a cgroup v2 directory, a FIFO.  Every failing call is
 * checked to add nothing (nr_sources) and to act on nothing.
 */
struct pdir {
	char dir[128];
	char psi[256], cg[256], fifo[256], plain[256];
};

__attribute__((format(printf, 3, 4))) static void
pfile(const char *dir, const char *name, const char *fmt, ...)
{
	char path[512], buf[1024];
	va_list ap;
	FILE *f;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, (size_t)n, f), (size_t)n);
	assert_int_equal(fclose(f), 0);
}

static void pdir_init(struct pdir *d)
{
	snprintf(d->dir, sizeof(d->dir), "/tmp/rcl-badinput-XXXXXX");
	assert_non_null(mkdtemp(d->dir));
	snprintf(d->psi, sizeof(d->psi), "%s/psi", d->dir);
	pfile(d->dir, "psi", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	snprintf(d->plain, sizeof(d->plain), "%s/plain", d->dir);
	pfile(d->dir, "plain", "garbage\n");
	snprintf(d->cg, sizeof(d->cg), "%s/cg", d->dir);
	assert_int_equal(mkdir(d->cg, 0755), 0);
	pfile(d->cg, "memory.current", "1000\n");
	pfile(d->cg, "memory.max", "max\n");
	pfile(d->cg, "memory.high", "max\n");
	pfile(d->cg, "memory.stat", "anon 1000\ninactive_file 0\n");
	pfile(d->cg, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
	snprintf(d->fifo, sizeof(d->fifo), "%s/fifo", d->dir);
	assert_int_equal(mkfifo(d->fifo, 0600), 0);
}

static int prm(const char *path, const struct stat *st, int flag,
	       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void pdir_fini(struct pdir *d)
{
	assert_int_equal(nftw(d->dir, prm, 8, FTW_DEPTH | FTW_PHYS), 0);
}

static unsigned p_nr_sources(struct rcl_pressure *p)
{
	struct rcl_pressure_stats st;

	assert_int_equal(rcl_pressure_stats(p, &st), 0);
	return st.nr_sources;
}

static struct rcl_pressure *p_new(struct rcl_domain *d)
{
	struct rcl_pressure_config cfg = { .domain = d };
	struct rcl_pressure *p = NULL;

	assert_int_equal(rcl_pressure_new(&cfg, &p), 0);
	return p;
}

static const struct rcl_allocator p_alloc_only = { std_alloc_for_p, NULL, NULL };
static const struct rcl_allocator p_free_only = { NULL, std_free_for_p, NULL };

static void test_badinput_pressure_new_free(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_pressure_config cfg = { .domain = d };
	struct rcl_pressure *p = (void *)&cfg, *q;

	(void)state;
	assert_int_equal(rcl_pressure_new(NULL, &p), -EINVAL);
	assert_int_equal(rcl_pressure_new(&cfg, NULL), -EINVAL);
	cfg.domain = NULL;
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.domain = d;
	cfg.flags = 1u << 2;
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.flags = 1u << 31;
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.flags = RCL_PRESSURE_FOLLOW_CGROUP | RCL_PRESSURE_NO_TRIM;
	cfg.grow_pct = 101;
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.grow_pct = 0;
	cfg.cgroup_pct = 101;
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.cgroup_pct = UINT32_MAX;
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.cgroup_pct = 0;
	cfg.min_budget = 1001;			/* above the domain's budget */
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.base_budget = 500;
	cfg.min_budget = 501;			/* above the base given */
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.base_budget = cfg.min_budget = 0;
	cfg.allocator = &p_alloc_only;
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	cfg.allocator = &p_free_only;
	assert_int_equal(rcl_pressure_new(&cfg, &p), -EINVAL);
	assert_ptr_equal(p, (void *)&cfg);	/* *out untouched */
	/* Nothing holds the domain after the failures. */
	assert_int_equal(rcl_domain_free(d), 0);

	/* The edges that are allowed: 100 %, min == base, huge times. */
	d = domain_new(1000);
	cfg = (struct rcl_pressure_config){ .domain = d, .grow_pct = 100,
					    .cgroup_pct = 100,
					    .min_budget = 1000,
					    .window_ns = UINT64_MAX,
					    .backoff_max_ns = UINT64_MAX,
					    .interval_ns = UINT64_MAX,
					    .trim_interval_ns = UINT64_MAX,
					    .bytes_per_unit = UINT64_MAX };
	assert_int_equal(rcl_pressure_new(&cfg, &q), 0);
	assert_int_equal(rcl_domain_free(d), -EBUSY);	/* held */
	assert_int_equal(rcl_pressure_free(q), 0);
	assert_int_equal(rcl_pressure_free(NULL), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_badinput_pressure_add_sources(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_pressure *p = p_new(d), *full = p_new(d);
	struct pdir pd;
	char big[2000];
	unsigned i;

	(void)state;
	pdir_init(&pd);
	unsetenv("MEMORY_PRESSURE_WATCH");
	unsetenv("MEMORY_PRESSURE_WRITE");

	/* add_psi */
	assert_int_equal(rcl_pressure_add_psi(NULL, pd.psi), -EINVAL);
	assert_int_equal(rcl_pressure_add_psi(p, "/nonexistent-rcl/psi"), -ENOENT);
	assert_int_equal(rcl_pressure_add_psi(p, pd.plain), -EBADMSG);
	assert_int_equal(rcl_pressure_add_psi(p, pd.dir), -EISDIR);
	if (geteuid() != 0) {
		assert_int_equal(chmod(pd.psi, 0), 0);
		assert_int_equal(rcl_pressure_add_psi(p, pd.psi), -EACCES);
		assert_int_equal(chmod(pd.psi, 0644), 0);
	}
	/* add_cgroup */
	assert_int_equal(rcl_pressure_add_cgroup(NULL, pd.cg, 0), -EINVAL);
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.cg, 3), -EINVAL);
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.cg, UINT32_MAX), -EINVAL);
	assert_int_equal(rcl_pressure_add_cgroup(p, "/nonexistent-rcl/cg", 0), -ENOENT);
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.dir, 0), -ENOENT);	/* no files */
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.cg, 1), -ENOENT);	/* not v1 */
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.plain, 0), -ENOTDIR);
	pfile(pd.cg, "memory.max", "12 13\n");
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.cg, 0), -EBADMSG);
	pfile(pd.cg, "memory.max", "99999999999999999999\n");
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.cg, 0), -ERANGE);
	pfile(pd.cg, "memory.max", "max\n");
	/* add_systemd */
	assert_int_equal(rcl_pressure_add_systemd(NULL, pd.fifo, NULL), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(p, "fifo", NULL), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(p, "", NULL), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(p, pd.fifo, "!!"), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(p, pd.fifo, "QQ="), -EINVAL);
	memset(big, 'A', 1368);			/* 1026 bytes of zeros */
	big[1368] = '\0';
	assert_int_equal(rcl_pressure_add_systemd(p, pd.fifo, big), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(p, NULL, NULL), -ENOENT);
	assert_int_equal(rcl_pressure_add_systemd(p, "/nonexistent-rcl/w", NULL), -ENOENT);
	assert_int_equal(rcl_pressure_add_systemd(p, pd.dir, NULL), -EBADF);
	assert_int_equal(rcl_pressure_add_systemd(p, pd.plain, NULL), -EBADMSG);
	/* add_manual */
	assert_int_equal(rcl_pressure_add_manual(NULL), -EINVAL);
	assert_int_equal(p_nr_sources(p), 0);

	/* The good ones, then a second cgroup source. */
	assert_int_equal(rcl_pressure_add_psi(p, pd.psi), 0);
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.cg, 0), 1);
	assert_int_equal(rcl_pressure_add_cgroup(p, pd.cg, 2), -EEXIST);
	assert_int_equal(rcl_pressure_add_systemd(p, pd.fifo, "c29tZQ=="), 2);
	assert_int_equal(rcl_pressure_add_systemd(p, "/dev/null", NULL), 3);
	assert_int_equal(rcl_pressure_add_manual(p), 4);
	assert_int_equal(p_nr_sources(p), 5);

	/* RCL_PRESSURE_MAX_SOURCES: every add is -ENOSPC, nothing opened. */
	for (i = 0; i < RCL_PRESSURE_MAX_SOURCES; i++)
		assert_int_equal(rcl_pressure_add_manual(full), (int)i);
	assert_int_equal(rcl_pressure_add_manual(full), -ENOSPC);
	assert_int_equal(rcl_pressure_add_psi(full, pd.psi), -ENOSPC);
	assert_int_equal(rcl_pressure_add_cgroup(full, pd.cg, 0), -ENOSPC);
	assert_int_equal(rcl_pressure_add_systemd(full, pd.fifo, NULL), -ENOSPC);
	assert_int_equal(rcl_pressure_add_systemd(full, "/dev/null", NULL), -ENOSPC);
	assert_int_equal(p_nr_sources(full), RCL_PRESSURE_MAX_SOURCES);

	assert_int_equal(rcl_pressure_free(full), 0);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	pdir_fini(&pd);
}

static void test_badinput_pressure_notify(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_pressure *p = p_new(d);
	struct rcl_pressure_stats st;
	struct rcl_pressure_source_info si;
	int m, off;

	(void)state;
	m = rcl_pressure_add_manual(p);
	off = rcl_pressure_add_systemd(p, "/dev/null", NULL);
	assert_int_equal(rcl_pressure_notify(NULL, m, RCL_PRESSURE_SEVERE), -EINVAL);
	assert_int_equal(rcl_pressure_notify(p, m, (enum rcl_pressure_level)4), -EINVAL);
	assert_int_equal(rcl_pressure_notify(p, m, (enum rcl_pressure_level)-1), -EINVAL);
	assert_int_equal(rcl_pressure_notify(p, m, (enum rcl_pressure_level)INT_MAX),
			 -EINVAL);
	assert_int_equal(rcl_pressure_notify(p, -1, RCL_PRESSURE_SEVERE), -EINVAL);
	assert_int_equal(rcl_pressure_notify(p, 2, RCL_PRESSURE_SEVERE), -EINVAL);
	assert_int_equal(rcl_pressure_notify(p, INT_MAX, RCL_PRESSURE_SEVERE), -EINVAL);
	assert_int_equal(rcl_pressure_notify(p, off, RCL_PRESSURE_SEVERE), -EINVAL);
	/* Nothing happened. */
	assert_int_equal(rcl_pressure_stats(p, &st), 0);
	assert_int_equal(st.actions, 0);
	assert_int_equal(st.budget, 1000);
	assert_int_equal(rcl_pressure_source_info(p, m, &si), 0);
	assert_int_equal(si.events, 0);
	assert_int_equal(rcl_domain_budget(d), 1000);
	/* Every level is accepted, NONE too. */
	assert_int_equal(rcl_pressure_notify(p, m, RCL_PRESSURE_NONE), 0);
	assert_int_equal(rcl_pressure_notify(p, m, RCL_PRESSURE_CRITICAL), 0);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_badinput_pressure_levels_names(void **state)
{
	(void)state;
	/* Every int is a level: the ranges cover them. */
	assert_int_equal(rcl_pressure_level_from_glib(INT_MIN), RCL_PRESSURE_NONE);
	assert_int_equal(rcl_pressure_level_from_glib(INT_MAX), RCL_PRESSURE_CRITICAL);
	assert_int_equal(rcl_pressure_level_from_android(INT_MIN), RCL_PRESSURE_NONE);
	assert_int_equal(rcl_pressure_level_from_android(INT_MAX), RCL_PRESSURE_CRITICAL);
	assert_string_equal(rcl_pressure_level_name((enum rcl_pressure_level)4), "unknown");
	assert_string_equal(rcl_pressure_level_name((enum rcl_pressure_level)-1), "unknown");
	assert_string_equal(rcl_pressure_level_name((enum rcl_pressure_level)INT_MAX),
			    "unknown");
	assert_string_equal(rcl_pressure_source_mode_name((enum rcl_psource_mode)(RCL_PSOURCE_OFF + 1)),
			    "unknown");
	assert_string_equal(rcl_pressure_source_mode_name((enum rcl_psource_mode)-1),
			    "unknown");
}

static void test_badinput_pressure_thread(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_pressure *p = p_new(d);
	int fd;

	(void)state;
	assert_int_equal(rcl_pressure_start(NULL), -EINVAL);
	assert_int_equal(rcl_pressure_stop(NULL), -EINVAL);
	assert_int_equal(rcl_pressure_fd(NULL), -EINVAL);
	assert_int_equal(rcl_pressure_stop(p), 0);		/* not running */
	fd = rcl_pressure_fd(p);
	assert_true(fd >= 0);
	assert_int_equal(rcl_pressure_start(p), 0);
	assert_int_equal(rcl_pressure_start(p), -EBUSY);
	assert_int_equal(rcl_pressure_fd(p), -EBUSY);
	assert_int_equal(rcl_pressure_stop(p), 0);
	assert_int_equal(rcl_pressure_stop(p), 0);		/* twice */
	assert_int_equal(rcl_pressure_fd(p), fd);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * Values at the top of their range: an interval of UINT64_MAX means "no
 * timer" (the next tick saturates at RCL_CLOCK_FOREVER; it must not wrap
 * into the past, where every dispatch would tick and the timerfd fire at
 * once), and bytes_per_unit of 2^63 saturates the freed bytes (1 unit x
 * 2^63 x an even number wraps to 0, which would also hide the frees from
 * the trim).
 */
static atomic_int p_trims;

static void p_count_trim(void *priv)
{
	(void)priv;
	atomic_fetch_add(&p_trims, 1);
}

static enum rcl_evict_status p_uncharge_evict(struct rcl_lru_node *node,
					      struct rcl_evict_control *ctl)
{
	(void)node;
	rcl_domain_uncharge(ctl->priv, ctl->weight);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops p_free_ops = { .evict = p_uncharge_evict };

static void test_badinput_pressure_huge_values(void **state)
{
	struct rcl_domain *d = domain_new(100000);
	struct rcl_lruvec_config lc = { .ops = &p_free_ops };
	struct rcl_pressure_config cfg = { .domain = d };
	struct rcl_fake_clock *fc;
	struct rcl_pressure *p;
	struct rcl_pressure_stats st;
	struct rcl_lruvec lv;
	struct rcl_lru_node *nodes;
	struct pollfd pfd = { .events = POLLIN };
	uint64_t t0 = 1000 * RCL_NSEC_PER_SEC;
	unsigned i;
	int src;

	(void)state;
	assert_int_equal(rcl_fake_clock_new(t0, &fc), 0);
	nodes = calloc(900, sizeof(*nodes));
	assert_non_null(nodes);
	lc.priv = d;
	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	for (i = 0; i < 900; i++) {
		assert_int_equal(rcl_domain_charge(d, 100, RCL_CTX_CAPABLE, NULL), 0);
		assert_int_equal(rcl_lruvec_add(&lv, &nodes[i], RCL_LRU_FILE, 100,
						NOBATCH), 0);
	}
	cfg.clock = rcl_fake_clock_clock(fc);
	cfg.interval_ns = UINT64_MAX;
	cfg.bytes_per_unit = 1ull << 63;
	cfg.trim = p_count_trim;
	cfg.trim_min_bytes = 1;
	atomic_store(&p_trims, 0);
	assert_int_equal(rcl_pressure_new(&cfg, &p), 0);
	src = rcl_pressure_add_manual(p);
	assert_int_equal(rcl_pressure_next_deadline(p), RCL_CLOCK_FOREVER);
	rcl_fake_clock_advance(fc, 3600 * RCL_NSEC_PER_SEC);
	assert_int_equal(rcl_pressure_dispatch(p), 0);
	assert_int_equal(rcl_pressure_next_deadline(p), RCL_CLOCK_FOREVER);
	pfd.fd = rcl_pressure_fd(p);
	assert_int_equal(poll(&pfd, 1, 0), 0);		/* no timer due */

	assert_int_equal(rcl_pressure_notify(p, src, RCL_PRESSURE_MODERATE), 0);
	assert_int_equal(rcl_pressure_stats(p, &st), 0);
	assert_int_equal(st.actions, 1);
	assert_true(rcl_domain_usage(d) < 90000);
	assert_int_equal(st.freed_bytes, UINT64_MAX);	/* saturated */
	/* A trim is due one interval after the frees: with this one, never. */
	assert_int_equal(rcl_pressure_next_deadline(p), RCL_CLOCK_FOREVER);
	rcl_fake_clock_advance(fc, 3600 * RCL_NSEC_PER_SEC);
	assert_int_equal(rcl_pressure_dispatch(p), 0);
	assert_int_equal(rcl_pressure_stats(p, &st), 0);
	assert_int_equal(st.trims, 0);
	assert_int_equal(atomic_load(&p_trims), 0);

	assert_int_equal(rcl_pressure_free(p), 0);
	for (i = 0; i < 900; i++)
		if (rcl_lruvec_del(&lv, &nodes[i]) == 0)
			rcl_domain_uncharge(d, 100);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	free(nodes);
	assert_int_equal(rcl_domain_free(d), 0);
	rcl_fake_clock_free(fc);
}

static void test_badinput_pressure_queries(void **state)
{
	struct rcl_domain *d = domain_new(1000);
	struct rcl_pressure *p = p_new(d);
	struct rcl_pressure_stats st;
	struct rcl_pressure_source_info si;
	struct rcl_memory_sample ms;

	(void)state;
	assert_int_equal(rcl_pressure_dispatch(NULL), -EINVAL);
	assert_int_equal(rcl_pressure_next_deadline(NULL), RCL_CLOCK_FOREVER);
	assert_int_equal(rcl_pressure_stats(NULL, &st), -EINVAL);
	assert_int_equal(rcl_pressure_stats(p, NULL), -EINVAL);
	assert_int_equal(rcl_pressure_source_info(NULL, 0, &si), -EINVAL);
	assert_int_equal(rcl_pressure_source_info(p, 0, NULL), -EINVAL);
	assert_int_equal(rcl_pressure_source_info(p, 0, &si), -ENOENT);	/* none yet */
	assert_int_equal(rcl_pressure_add_manual(p), 0);
	assert_int_equal(rcl_pressure_source_info(p, 0, &si), 0);
	assert_int_equal(rcl_pressure_source_info(p, -1, &si), -ENOENT);
	assert_int_equal(rcl_pressure_source_info(p, 1, &si), -ENOENT);
	assert_int_equal(rcl_pressure_source_info(p, INT_MAX, &si), -ENOENT);
	assert_int_equal(rcl_pressure_source_info(p, INT_MIN, &si), -ENOENT);
	assert_int_equal(rcl_pressure_memory(NULL, &ms), -EINVAL);
	assert_int_equal(rcl_pressure_memory(p, NULL), -EINVAL);
	assert_int_equal(rcl_pressure_memory(p, &ms), 0);
	assert_int_equal(ms.cgroup_limit_bytes, 0);		/* no cgroup */
	assert_int_equal(rcl_pressure_dispatch(p), 0);
	assert_true(rcl_pressure_next_deadline(p) != RCL_CLOCK_FOREVER);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_badinput_version),
		cmocka_unit_test(test_badinput_refusal),
		cmocka_unit_test(test_badinput_clock),
		cmocka_unit_test(test_badinput_fake_clock_waiters_after_advance),
		cmocka_unit_test(test_badinput_fake_clock_start_forever),
		cmocka_unit_test(test_badinput_node_helpers),
		cmocka_unit_test(test_badinput_lruvec_init),
		cmocka_unit_test(test_badinput_lruvec_init_id_limit),
		cmocka_unit_test(test_badinput_lruvec_destroy),
		cmocka_unit_test(test_badinput_lruvec_id),
		cmocka_unit_test(test_badinput_lruvec_add),
		cmocka_unit_test(test_badinput_lruvec_add_type_limit),
		cmocka_unit_test(test_badinput_lruvec_del),
		cmocka_unit_test(test_badinput_lruvec_del_wait_from_evict),
		cmocka_unit_test(test_badinput_lruvec_mark_accessed),
		cmocka_unit_test(test_badinput_lruvec_moves),
		cmocka_unit_test(test_badinput_lruvec_queries),
		cmocka_unit_test(test_badinput_lruvec_isolate),
		cmocka_unit_test(test_badinput_lru_isolated_ops),
		cmocka_unit_test(test_badinput_lruvec_shrink),
		cmocka_unit_test(test_badinput_lruvec_drain),
		cmocka_unit_test(test_badinput_scan_targets),
		cmocka_unit_test(test_badinput_scan_lruvec),
		cmocka_unit_test(test_badinput_note_cost),
		cmocka_unit_test(test_badinput_note_cost_overflow),
		cmocka_unit_test(test_badinput_shrinker_registry),
		cmocka_unit_test(test_badinput_shrinker_new),
		cmocka_unit_test(test_badinput_shrinker_new_limit),
		cmocka_unit_test(test_badinput_shrinker_lifecycle),
		cmocka_unit_test(test_badinput_shrinker_calls),
		cmocka_unit_test(test_badinput_add_refault),
		cmocka_unit_test(test_badinput_add_refault_failure_has_no_effect),
		cmocka_unit_test(test_badinput_add_refault_flags_as_add),
		cmocka_unit_test(test_badinput_workingset_queries),
		cmocka_unit_test(test_badinput_shadow_limit),
		cmocka_unit_test(test_badinput_domain_new),
		cmocka_unit_test(test_badinput_domain_free_busy),
		cmocka_unit_test(test_badinput_domain_attach),
		cmocka_unit_test(test_badinput_domain_attach_two_domains),
		cmocka_unit_test(test_badinput_lruvec_destroy_attached),
		cmocka_unit_test(test_badinput_domain_charge),
		cmocka_unit_test(test_badinput_domain_charge_stock),
		cmocka_unit_test(test_badinput_domain_budget_watermarks),
		cmocka_unit_test(test_badinput_domain_reclaim),
		cmocka_unit_test(test_badinput_domain_reclaimer),
		cmocka_unit_test(test_badinput_domain_vmstat),
		cmocka_unit_test(test_badinput_domain_tree_new),
		cmocka_unit_test(test_badinput_domain_tree_free_busy),
		cmocka_unit_test(test_badinput_domain_tree_child_has_no_reclaimer),
		cmocka_unit_test(test_badinput_domain_set_limits),
		cmocka_unit_test(test_badinput_domain_set_limits_from_reclaim),
		cmocka_unit_test(test_badinput_domain_effective_protection),
		cmocka_unit_test(test_badinput_domain_events_subtree),
		cmocka_unit_test(test_badinput_domain_tree_charge),
		cmocka_unit_test(test_badinput_domain_tree_uncharge_more_than_charged),
		cmocka_unit_test(test_badinput_lruvec_dirty),
		cmocka_unit_test(test_badinput_set_dirty_from_evict),
		cmocka_unit_test(test_badinput_domain_flush),
		cmocka_unit_test(test_badinput_domain_writeback),
		cmocka_unit_test(test_badinput_flusher_batch_huge),
		cmocka_unit_test(test_badinput_dirty_timeout_huge),
		cmocka_unit_test(test_badinput_objcache_new_destroy),
		cmocka_unit_test(test_badinput_objcache_operations),
		cmocka_unit_test(test_badinput_pressure_new_free),
		cmocka_unit_test(test_badinput_pressure_add_sources),
		cmocka_unit_test(test_badinput_pressure_notify),
		cmocka_unit_test(test_badinput_pressure_levels_names),
		cmocka_unit_test(test_badinput_pressure_thread),
		cmocka_unit_test(test_badinput_pressure_huge_values),
		cmocka_unit_test(test_badinput_pressure_queries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
