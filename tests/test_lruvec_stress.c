/* SPDX-License-Identifier: MIT */
/*
 * Concurrency tests of the lruvec (suites 'slow' and 'concurrency'; CI runs
 * them under ThreadSanitizer and AddressSanitizer).
 *
 * test_lruvec_stress_all_operations: several threads add, access, delete
 * (with and without waiting), move, isolate, put back and shrink at once, on
 * two lruvecs, over a shared pool of objects; afterwards every object must be
 * on exactly one list or idle, and every list's counts must equal its
 * contents.
 *
 * The _batched variants run the same with &rcl_lruvec_ops.evict_batch: in
 * all_operations_batched one lruvec judges per object and the other per
 * batch, at once; in object_lifetime_batched the batch callback frees the
 * objects it evicts, so a library read of an item answered FREED is a
 * use-after-free.
 *
 * test_lruvec_stress_object_lifetime: objects are malloc'd and freed for
 * real, by deleters (after rcl_lruvec_del_wait() returns) and by a reclaimer's
 * evict callback, following the pin protocol documented in lruvec.h.  Any
 * access by the library to a node after the application freed it is a
 * use-after-free for ASan and a race for TSan.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "lru_check.h"
#include "test_util.h"

/* cmocka's allocator is not thread-safe: use libc's in threads. */
#undef malloc
#undef calloc
#undef free

#define NTHREADS 4

/* ------------------------------------------------------------------------- */
/* All operations over a shared pool                                          */
/* ------------------------------------------------------------------------- */

#define POOL 2048
#define NLV 2

enum pstate { P_FREE, P_IN, P_DELETING };

struct pobj {
	pthread_mutex_t m;
	enum pstate state;
	int lv;
	struct rcl_lru_node lru;
};

static struct pobj pool[POOL];
static struct rcl_lruvec plv[NLV];

/* Counters that show the test did exercise each path. */
static atomic_ulong c_freed, c_busy_del, c_waited_del, c_removed, c_activate;

static enum rcl_evict_status pool_evict(struct rcl_lru_node *node,
					struct rcl_evict_control *ctl)
{
	struct pobj *o = rcl_container_of(node, struct pobj, lru);
	uint64_t r = (uintptr_t)o ^ (uint64_t)ctl->priority ^ atomic_load(&c_freed);
	enum rcl_evict_status st;

	pthread_mutex_lock(&o->m);
	T_NE(o->state, P_FREE);
	T_PEQ(ctl->lruvec, &plv[o->lv]);
	if (o->state == P_DELETING) {
		st = RCL_EVICT_BUSY;	/* the deleter owns it */
	} else {
		switch (rng_next(&r) % 4) {
		case 0:
			/* Freed: the library will not touch the node again. */
			rcl_lru_node_init(node);
			o->state = P_FREE;
			atomic_fetch_add(&c_freed, 1);
			st = RCL_EVICT_FREED;
			break;
		case 1:
			atomic_fetch_add(&c_activate, 1);
			st = RCL_EVICT_ACTIVATE;
			break;
		default:
			st = RCL_EVICT_BUSY;
			break;
		}
	}
	pthread_mutex_unlock(&o->m);
	return st;
}

static const struct rcl_lruvec_ops pool_ops = { .evict = pool_evict };

/* The same judgement, a batch at a time (lruvec.h: evict_batch). */
static void pool_evict_batch(struct rcl_lruvec *lv, void *priv,
			     struct rcl_evict_item *items, size_t nr)
{
	(void)priv;
	T_CHECK(nr >= 1 && nr <= RCL_LRU_BATCH_ISOLATE);
	for (size_t i = 0; i < nr; i++) {
		T_PEQ(items[i].ctl.lruvec, lv);
		T_EQ(items[i].status, RCL_EVICT_BUSY);
		items[i].status = pool_evict(items[i].node, &items[i].ctl);
	}
}

static const struct rcl_lruvec_ops pool_batch_ops = {
	.evict_batch = pool_evict_batch,
};

static void pool_isolate_some(uint64_t *rng)
{
	struct rcl_lru_isolated iso;
	struct rcl_lru_node *n, *next;
	int l = (int)(rng_next(rng) % NLV);
	unsigned list = RCL_LRU_LIST(rng_next(rng) % 2, rng_next(rng) % 2);

	rcl_lru_isolated_init(&iso);
	T_EQ(rcl_lruvec_isolate(&plv[l], list,
					    1 + rng_next(rng) % 40, &iso), 0);
	for (n = rcl_lru_isolated_next(&iso, NULL); n; n = next) {
		struct pobj *o = rcl_container_of(n, struct pobj, lru);

		next = rcl_lru_isolated_next(&iso, n);
		pthread_mutex_lock(&o->m);
		T_NE(o->state, P_FREE);
		if (o->state == P_IN && rng_next(rng) % 3 == 0) {
			T_EQ(rcl_lru_isolated_remove(&iso, n), 0);
			o->state = P_FREE;
			atomic_fetch_add(&c_removed, 1);
		} else {
			T_EQ(rcl_lru_isolated_set_active(
						 &iso, n, rng_next(rng) & 1), 0);
		}
		pthread_mutex_unlock(&o->m);
	}
	T_EQ(rcl_lruvec_putback(&plv[l], &iso), 0);
}

static void pool_op(uint64_t *rng)
{
	struct pobj *o = &pool[rng_next(rng) % POOL];
	unsigned op = (unsigned)(rng_next(rng) % 100);
	int err;

	if (op < 30) {				/* add */
		pthread_mutex_lock(&o->m);
		if (o->state == P_FREE) {
			unsigned fl = 0;
			uint64_t r = rng_next(rng);

			if (r & 1)
				fl |= RCL_LRU_ADD_ACTIVE;
			if (r & 2)
				fl |= RCL_LRU_ADD_NOBATCH;
			o->lv = (int)((r >> 8) % NLV);
			T_EQ(rcl_lruvec_add(&plv[o->lv], &o->lru,
							(r >> 4) & 1,
							(uint32_t)(r >> 32) % 1000,
							fl), 0);
			o->state = P_IN;
		}
		pthread_mutex_unlock(&o->m);
	} else if (op < 60) {			/* access */
		pthread_mutex_lock(&o->m);
		if (o->state == P_IN)
			T_EQ(rcl_lruvec_mark_accessed(&plv[o->lv],
								  &o->lru), 0);
		pthread_mutex_unlock(&o->m);
	} else if (op < 68) {			/* delete, not waiting */
		pthread_mutex_lock(&o->m);
		if (o->state == P_IN) {
			err = rcl_lruvec_del(&plv[o->lv], &o->lru);
			if (err == 0) {
				o->state = P_FREE;
			} else {
				T_EQ(err, -EBUSY);
				atomic_fetch_add(&c_busy_del, 1);
			}
		}
		pthread_mutex_unlock(&o->m);
	} else if (op < 74) {			/* delete, waiting */
		int l;

		pthread_mutex_lock(&o->m);
		if (o->state != P_IN) {
			pthread_mutex_unlock(&o->m);
			return;
		}
		o->state = P_DELETING;
		l = o->lv;
		pthread_mutex_unlock(&o->m);
		if (rcl_lru_node_flags(&o->lru) & RCL_LRU_F_ISOLATED)
			atomic_fetch_add(&c_waited_del, 1);
		T_EQ(rcl_lruvec_del_wait(&plv[l], &o->lru), 0);
		pthread_mutex_lock(&o->m);
		o->state = P_FREE;
		pthread_mutex_unlock(&o->m);
	} else if (op < 80) {			/* single-node moves */
		pthread_mutex_lock(&o->m);
		if (o->state == P_IN) {
			struct rcl_lruvec *lv = &plv[o->lv];

			switch (op % 4) {
			case 0:
				err = rcl_lruvec_rotate(lv, &o->lru);
				break;
			case 1:
				err = rcl_lruvec_deactivate(lv, &o->lru);
				break;
			case 2:
				err = rcl_lruvec_mark_unevictable(lv, &o->lru);
				break;
			default:
				err = rcl_lruvec_unmark_unevictable(lv, &o->lru);
				break;
			}
			T_CHECK(err == 0 || err == -EBUSY || err == -EPERM);
		}
		pthread_mutex_unlock(&o->m);
	} else if (op < 86) {			/* shrink inactive */
		struct rcl_lru_shrink_control sc = {
			.type = (unsigned)(rng_next(rng) % 2),
			.nr_to_scan = 1 + rng_next(rng) % 32,
			.priority = (int)(rng_next(rng) % 13),
		};

		T_EQ(rcl_lruvec_shrink_inactive(
					 &plv[rng_next(rng) % NLV], &sc), 0);
		T_CHECK(sc.nr_scanned <= sc.nr_to_scan);
		T_EQ(sc.nr_taken, sc.nr_freed + sc.nr_rotated +
						      sc.nr_activated -
						      (sc.nr_scanned - sc.nr_taken));
	} else if (op < 93) {			/* shrink active */
		struct rcl_lru_shrink_control sc = {
			.type = (unsigned)(rng_next(rng) % 2),
			.nr_to_scan = 1 + rng_next(rng) % 64,
		};

		T_EQ(rcl_lruvec_shrink_active(
					 &plv[rng_next(rng) % NLV], &sc), 0);
		T_EQ(sc.nr_scanned, sc.nr_rotated + sc.nr_deactivated);
	} else if (op < 97) {
		pool_isolate_some(rng);
	} else if (op < 99) {
		rcl_lru_drain_local();
	} else {
		T_EQ(rcl_lruvec_drain(&plv[rng_next(rng) % NLV]), 0);
	}
}

struct worker {
	pthread_t tid;
	unsigned idx;
	unsigned ops;
};

static void *pool_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0x1234567ull + w->idx;
	unsigned i;

	for (i = 0; i < w->ops; i++)
		pool_op(&rng);
	return NULL;
}

static void run_all_operations(const struct rcl_lruvec_ops *ops[NLV],
			       unsigned dflt_ops)
{
	struct worker w[NTHREADS];
	unsigned i, in[NLV] = { 0 };
	int l;

	atomic_store(&c_freed, 0);
	atomic_store(&c_busy_del, 0);
	atomic_store(&c_waited_del, 0);
	atomic_store(&c_removed, 0);
	atomic_store(&c_activate, 0);
	for (l = 0; l < NLV; l++) {
		struct rcl_lruvec_config cfg = { .ops = ops[l] };

		T_EQ(rcl_lruvec_init(&plv[l], &cfg), 0);
	}
	for (i = 0; i < POOL; i++) {
		pthread_mutex_init(&pool[i].m, NULL);
		pool[i].state = P_FREE;
		rcl_lru_node_init(&pool[i].lru);
	}
	for (i = 0; i < NTHREADS; i++) {
		w[i].idx = i;
		w[i].ops = ops_per_thread(dflt_ops);
		T_EQ(pthread_create(&w[i].tid, NULL, pool_worker,
						&w[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		T_EQ(pthread_join(w[i].tid, NULL), 0);

	/* Every batch entry reaches its list (the workers have exited). */
	rcl_lru_drain_local();
	for (l = 0; l < NLV; l++)
		T_EQ(rcl_lruvec_drain(&plv[l]), 0);

	for (i = 0; i < POOL; i++) {
		unsigned f = rcl_lru_node_flags(&pool[i].lru);

		if (pool[i].state == P_FREE) {
			T_EQ(f & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
					      RCL_LRU_F_ISOLATED), 0);
		} else {
			T_EQ(pool[i].state, P_IN);
			T_EQ(f & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
					      RCL_LRU_F_ISOLATED),
					 RCL_LRU_F_LISTED);
			T_EQ(lru_check_on_list(
						 &plv[pool[i].lv],
						 lru_check_expected_list(atomic_load(
							 &pool[i].lru.__flags)),
						 &pool[i].lru), 1);
			in[pool[i].lv]++;
		}
	}
	for (l = 0; l < NLV; l++) {
		T_EQ(lru_check_invariants(&plv[l]), in[l]);
		T_EQ(rcl_lruvec_nr_isolated(&plv[l]), 0);
	}
	print_message("stress: freed %lu, busy deletes %lu, waited deletes %lu, "
		      "removed %lu, activate answers %lu, listed at end %u+%u\n",
		      atomic_load(&c_freed), atomic_load(&c_busy_del),
		      atomic_load(&c_waited_del), atomic_load(&c_removed),
		      atomic_load(&c_activate), in[0], in[1]);
	T_CHECK(atomic_load(&c_freed) > 0);
	T_CHECK(atomic_load(&c_removed) > 0);
	T_CHECK(atomic_load(&c_activate) > 0);

	for (i = 0; i < POOL; i++) {
		if (pool[i].state == P_IN)
			T_EQ(rcl_lruvec_del(&plv[pool[i].lv],
							&pool[i].lru), 0);
		pthread_mutex_destroy(&pool[i].m);
	}
	for (l = 0; l < NLV; l++)
		T_EQ(rcl_lruvec_destroy(&plv[l]), 0);
}

static void test_lruvec_stress_all_operations(void **state)
{
	const struct rcl_lruvec_ops *ops[NLV] = { &pool_ops, &pool_ops };

	(void)state;
	run_all_operations(ops, 500000);
}

/* One lruvec per object, the other per batch, shrunk at the same time. */
static void test_lruvec_stress_all_operations_batched(void **state)
{
	const struct rcl_lruvec_ops *ops[NLV] = { &pool_ops, &pool_batch_ops };

	(void)state;
	run_all_operations(ops, 250000);
}

/* ------------------------------------------------------------------------- */
/* Object lifetime with real malloc/free                                      */
/* ------------------------------------------------------------------------- */

#define NBUCKET 256
#define KEYS 4096
#define LT_BUDGET 1500	/* objects */

struct lobj {
	struct rcl_lru_node lru;
	struct lobj *hnext;
	atomic_int refs;	/* 1 for the index, +1 per pin */
	bool hashed;
	unsigned key;
	unsigned check;
};

struct bucket {
	pthread_mutex_t m;
	struct lobj *head;
};

static struct bucket buckets[NBUCKET];
static struct rcl_lruvec llv;
static atomic_long l_usage, l_created, l_evicted, l_deleted, l_hits;
static atomic_bool l_stop;

static struct bucket *bucket_of(unsigned key)
{
	return &buckets[key % NBUCKET];
}

static void lobj_put(struct lobj *o)
{
	if (atomic_fetch_sub(&o->refs, 1) == 1) {
		memset(o, 0x6b, sizeof(*o));	/* poison */
		free(o);
	}
}

static void unhash_locked(struct bucket *b, struct lobj *o)
{
	struct lobj **pp;

	for (pp = &b->head; *pp != o; pp = &(*pp)->hnext)
		;
	*pp = o->hnext;
	o->hashed = false;
}

static enum rcl_evict_status lt_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct lobj *o = rcl_container_of(node, struct lobj, lru);
	struct bucket *b = bucket_of(o->key);

	(void)ctl;
	pthread_mutex_lock(&b->m);
	if (!o->hashed || atomic_load(&o->refs) != 1) {
		pthread_mutex_unlock(&b->m);
		return RCL_EVICT_BUSY;	/* pinned, or its deleter waits */
	}
	unhash_locked(b, o);
	pthread_mutex_unlock(&b->m);
	atomic_fetch_sub(&l_usage, 1);
	atomic_fetch_add(&l_evicted, 1);
	lobj_put(o);			/* frees it: the node is gone */
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops lt_ops = { .evict = lt_evict };

/* Frees every object it answers FREED for before it returns. */
static void lt_evict_batch(struct rcl_lruvec *lv, void *priv,
			   struct rcl_evict_item *items, size_t nr)
{
	(void)lv;
	(void)priv;
	for (size_t i = 0; i < nr; i++) {
		T_EQ(items[i].status, RCL_EVICT_BUSY);
		items[i].status = lt_evict(items[i].node, &items[i].ctl);
	}
}

static const struct rcl_lruvec_ops lt_batch_ops = {
	.evict_batch = lt_evict_batch,
};

static void lt_get(unsigned key)
{
	struct bucket *b = bucket_of(key);
	struct lobj *o;

	pthread_mutex_lock(&b->m);
	for (o = b->head; o && o->key != key; o = o->hnext)
		;
	if (o)
		atomic_fetch_add(&o->refs, 1);
	pthread_mutex_unlock(&b->m);
	if (o) {
		/* -ENOENT: a deleter took it off the lruvec after we pinned it. */
		int err = rcl_lruvec_mark_accessed(&llv, &o->lru);

		T_CHECK(err == 0 || err == -ENOENT);
		T_EQ(o->check, key * 2654435761u);
		atomic_fetch_add(&l_hits, 1);
		lobj_put(o);
		return;
	}
	o = malloc(sizeof(*o));
	T_CHECK(o);
	rcl_lru_node_init(&o->lru);
	o->key = key;
	o->check = key * 2654435761u;
	atomic_init(&o->refs, 1);
	pthread_mutex_lock(&b->m);
	{
		struct lobj *x;

		for (x = b->head; x && x->key != key; x = x->hnext)
			;
		if (x) {		/* someone else created it meanwhile */
			pthread_mutex_unlock(&b->m);
			free(o);
			return;
		}
	}
	/* Listed before it is findable: the index's reference covers both. */
	T_EQ(rcl_lruvec_add(&llv, &o->lru, RCL_LRU_FILE, 1, 0), 0);
	o->hashed = true;
	o->hnext = b->head;
	b->head = o;
	pthread_mutex_unlock(&b->m);
	atomic_fetch_add(&l_usage, 1);
	atomic_fetch_add(&l_created, 1);
}

static void lt_delete(unsigned key)
{
	struct bucket *b = bucket_of(key);
	struct lobj *o;

	pthread_mutex_lock(&b->m);
	for (o = b->head; o && o->key != key; o = o->hnext)
		;
	if (o)
		unhash_locked(b, o);	/* we now own the index's reference */
	pthread_mutex_unlock(&b->m);
	if (!o)
		return;
	T_EQ(rcl_lruvec_del_wait(&llv, &o->lru), 0);
	atomic_fetch_sub(&l_usage, 1);
	atomic_fetch_add(&l_deleted, 1);
	lobj_put(o);
}

static void *lt_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0xfeedull + w->idx;
	unsigned i;

	for (i = 0; i < w->ops; i++) {
		uint64_t r = rng_next(&rng);
		/* 80 % of accesses go to 20 % of the keys. */
		unsigned key = (r % 10 < 8) ? (unsigned)((r >> 8) % (KEYS / 5))
					    : (unsigned)((r >> 8) % KEYS);

		if ((r >> 40) % 50 == 0)
			lt_delete(key);
		else
			lt_get(key);
	}
	return NULL;
}

static void *lt_reclaimer(void *arg)
{
	(void)arg;
	while (!atomic_load(&l_stop)) {
		struct rcl_lru_shrink_control sc = {
			.type = RCL_LRU_FILE, .nr_to_scan = 32,
		};

		if (atomic_load(&l_usage) <= LT_BUDGET) {
			sched_yield();
			continue;
		}
		if (rcl_lruvec_inactive_is_low(&llv, RCL_LRU_FILE))
			T_EQ(rcl_lruvec_shrink_active(&llv, &sc), 0);
		T_EQ(rcl_lruvec_shrink_inactive(&llv, &sc), 0);
		if (!sc.nr_scanned)
			T_EQ(rcl_lruvec_drain(&llv), 0);
	}
	return NULL;
}

static void run_object_lifetime(const struct rcl_lruvec_ops *ops,
				unsigned dflt_ops)
{
	struct rcl_lruvec_config cfg = { .ops = ops };
	struct worker w[NTHREADS - 1];
	pthread_t rec;
	unsigned i;

	atomic_store(&l_usage, 0);
	atomic_store(&l_created, 0);
	atomic_store(&l_evicted, 0);
	atomic_store(&l_deleted, 0);
	atomic_store(&l_hits, 0);
	atomic_store(&l_stop, false);
	T_EQ(rcl_lruvec_init(&llv, &cfg), 0);
	for (i = 0; i < NBUCKET; i++) {
		pthread_mutex_init(&buckets[i].m, NULL);
		buckets[i].head = NULL;
	}
	T_EQ(pthread_create(&rec, NULL, lt_reclaimer, NULL), 0);
	for (i = 0; i < NTHREADS - 1; i++) {
		w[i].idx = i;
		w[i].ops = ops_per_thread(dflt_ops);
		T_EQ(pthread_create(&w[i].tid, NULL, lt_worker,
						&w[i]), 0);
	}
	for (i = 0; i < NTHREADS - 1; i++)
		T_EQ(pthread_join(w[i].tid, NULL), 0);
	atomic_store(&l_stop, true);
	T_EQ(pthread_join(rec, NULL), 0);

	print_message("lifetime: created %ld, evicted %ld, deleted %ld, hits %ld, "
		      "resident %ld\n",
		      atomic_load(&l_created), atomic_load(&l_evicted),
		      atomic_load(&l_deleted), atomic_load(&l_hits),
		      atomic_load(&l_usage));
	T_CHECK(atomic_load(&l_evicted) > 0);
	T_CHECK(atomic_load(&l_deleted) > 0);
	T_EQ(atomic_load(&l_created),
			 atomic_load(&l_evicted) + atomic_load(&l_deleted) +
				 atomic_load(&l_usage));

	/* Tear down through the index, as an application would. */
	for (i = 0; i < KEYS; i++)
		lt_delete(i);
	T_EQ(atomic_load(&l_usage), 0);
	T_EQ(lru_check_invariants(&llv), 0);
	T_EQ(rcl_lruvec_destroy(&llv), 0);
	for (i = 0; i < NBUCKET; i++)
		pthread_mutex_destroy(&buckets[i].m);
}

static void test_lruvec_stress_object_lifetime(void **state)
{
	(void)state;
	run_object_lifetime(&lt_ops, 500000);
}

static void test_lruvec_stress_object_lifetime_batched(void **state)
{
	(void)state;
	run_object_lifetime(&lt_batch_ops, 250000);
}

/* ------------------------------------------------------------------------- */
/* Isolation racing a second touch                                           */
/* ------------------------------------------------------------------------- */

/*
 * Each round: a node is inactive and referenced.  Thread B touches it again
 * (queueing its activation in B's batch) while the main thread shrinks the
 * inactive list by one.  Either isolation sees the queued activation and
 * activates the node, or it isolates the node first and B's touch only sets
 * the referenced bit; never both.  If both happened, the evict callback would
 * free a node that B's batch still refers to (found by a helper reviewing
 * the first example; the race is caught here as a QUEUED bit seen by the
 * callback, and as a use-after-free under ASan/TSan).
 */
#define RACE_ROUNDS 20000

struct robj {
	struct rcl_lru_node lru;
	int payload;
};

static struct rcl_lruvec rlv;
static struct robj *rcur;
static pthread_barrier_t rbar;
static atomic_int rb_done;
static atomic_long r_queued_at_evict, r_freed;

static enum rcl_evict_status race_evict(struct rcl_lru_node *n,
					struct rcl_evict_control *ctl)
{
	struct robj *o = rcl_container_of(n, struct robj, lru);

	(void)ctl;
	while (!atomic_load(&rb_done))	/* B has let go of the object */
		sched_yield();
	/* The private flag word: bit 7 is QUEUED (lib/internal.h). */
	if (atomic_load(&o->lru.__flags) & (1u << 7))
		atomic_fetch_add(&r_queued_at_evict, 1);
	free(o);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops race_ops = { .evict = race_evict };

static void *race_b(void *arg)
{
	unsigned i, rounds = *(unsigned *)arg;

	for (i = 0; i < rounds; i++) {
		pthread_barrier_wait(&rbar);		/* round starts */
		rcl_lruvec_mark_accessed(&rlv, &rcur->lru);	/* 2nd touch */
		atomic_store(&rb_done, 1);
		pthread_barrier_wait(&rbar);		/* A has shrunk */
		rcl_lru_drain_local();	/* would apply a dangling entry */
		pthread_barrier_wait(&rbar);		/* round ends */
	}
	return NULL;
}

static void test_lruvec_stress_isolate_races_second_touch(void **state)
{
	struct rcl_lruvec_config cfg = { .ops = &race_ops };
	unsigned i, rounds = ops_per_thread(RACE_ROUNDS);
	pthread_t b;

	(void)state;
	T_EQ(rcl_lruvec_init(&rlv, &cfg), 0);
	T_EQ(pthread_barrier_init(&rbar, NULL, 2), 0);
	T_EQ(pthread_create(&b, NULL, race_b, &rounds), 0);
	for (i = 0; i < rounds; i++) {
		struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
						     .nr_to_scan = 1 };

		rcur = calloc(1, sizeof(*rcur));
		T_CHECK(rcur);
		T_EQ(rcl_lruvec_add(&rlv, &rcur->lru, RCL_LRU_FILE, 1,
				    RCL_LRU_ADD_NOBATCH), 0);
		T_EQ(rcl_lruvec_mark_accessed(&rlv, &rcur->lru), 0);
		atomic_store(&rb_done, 0);
		pthread_barrier_wait(&rbar);
		T_EQ(rcl_lruvec_shrink_inactive(&rlv, &sc), 0);
		if (sc.nr_freed)
			atomic_fetch_add(&r_freed, 1);
		pthread_barrier_wait(&rbar);
		pthread_barrier_wait(&rbar);
		if (!sc.nr_freed) {		/* activated instead: still ours */
			T_EQ(rcl_lruvec_del(&rlv, &rcur->lru), 0);
			free(rcur);
		}
	}
	T_EQ(pthread_join(b, NULL), 0);
	print_message("isolate race: %u rounds, %ld evicted, %ld with a queued "
		      "activation\n", rounds, atomic_load(&r_freed),
		      atomic_load(&r_queued_at_evict));
	T_EQ(atomic_load(&r_queued_at_evict), 0);
	T_EQ(lru_check_invariants(&rlv), 0);
	T_EQ(rcl_lruvec_destroy(&rlv), 0);
	pthread_barrier_destroy(&rbar);
}

/* ------------------------------------------------------------------------- */
/* del_wait racing isolated_remove (a lost wake-up found in review)          */
/* ------------------------------------------------------------------------- */

/*
 * The waiter reads ISOLATED under the lruvec lock and then sleeps;
 * rcl_lru_isolated_remove() used to make the node idle and read the waiter
 * count without the lock, and could miss a waiter that was about to sleep,
 * which then slept forever (the meson timeout catches that).  Now the node
 * goes idle, and waiters are woken, under the lock.
 */
#define WAKEUP_ROUNDS 20000

static struct rcl_lruvec wlv;
static struct rcl_lru_node wnode;
static atomic_int wgo;
static int wresult;

static void *wakeup_waiter(void *arg)
{
	(void)arg;
	while (!atomic_load(&wgo))
		;
	wresult = rcl_lruvec_del_wait(&wlv, &wnode);
	return NULL;
}

static void test_lruvec_stress_del_wait_vs_remove(void **state)
{
	unsigned i, rounds = ops_per_thread(WAKEUP_ROUNDS);
	uint64_t rng = 99;

	(void)state;
	T_EQ(rcl_lruvec_init(&wlv, NULL), 0);
	for (i = 0; i < rounds; i++) {
		struct rcl_lru_isolated iso;
		pthread_t t;
		unsigned spins;

		rcl_lru_node_init(&wnode);
		T_EQ(rcl_lruvec_add(&wlv, &wnode, RCL_LRU_FILE, 1,
				    RCL_LRU_ADD_NOBATCH), 0);
		rcl_lru_isolated_init(&iso);
		T_EQ(rcl_lruvec_isolate(&wlv, RCL_LRU_LIST(RCL_LRU_FILE, 0), 1,
					&iso), 0);
		atomic_store(&wgo, 0);
		wresult = 1;
		T_EQ(pthread_create(&t, NULL, wakeup_waiter, NULL), 0);
		atomic_store(&wgo, 1);
		for (spins = (unsigned)(rng_next(&rng) % 2000); spins; spins--)
			__asm__ __volatile__("" ::: "memory");
		T_EQ(rcl_lru_isolated_remove(&iso, &wnode), 0);
		T_EQ(pthread_join(t, NULL), 0);	/* hangs on a lost wake-up */
		T_EQ(wresult, -ENOENT);
	}
	print_message("del_wait vs remove: %u rounds\n", rounds);
	T_EQ(rcl_lruvec_destroy(&wlv), 0);
}

/*
 * A batch drain against a second touch that re-arms a stale activation
 * entry.  Thread B touches N twice (an activation entry in B's batch); A
 * isolates N, which activates it early and leaves B's entry stale, puts it
 * back, deactivates it and touches it once; then, while B drains its batch,
 * A touches N a second time, which re-arms the stale entry (sets WANT_ACT by
 * CAS).  The drain used to clear the entry blindly after reading it as
 * stale, losing that second touch: N inactive and unreferenced (7 of
 * 200,000 rounds in a review's run).  Now the clear is a CAS that sees the
 * re-arm, and every round ends with N active or referenced.
 */
static struct rcl_lruvec rearm_lv;
static struct rcl_lru_node rearm_node;
static atomic_long rearm_phase;

static void rearm_wait(long p)
{
	while (atomic_load(&rearm_phase) < p)
		sched_yield();
}

static void *rearm_b(void *arg)
{
	long i, n = (long)arg;

	for (i = 0; i < n; i++) {
		rearm_wait(4 * i + 1);
		rcl_lruvec_mark_accessed(&rearm_lv, &rearm_node);
		rcl_lruvec_mark_accessed(&rearm_lv, &rearm_node);
		atomic_fetch_add(&rearm_phase, 1);	/* 4i + 2 */
		rearm_wait(4 * i + 3);
		rcl_lru_drain_local();
		atomic_fetch_add(&rearm_phase, 1);	/* 4i + 4 */
	}
	return NULL;
}

static void test_lruvec_stress_drain_keeps_rearmed_touch(void **state)
{
	long i, n = ops_per_thread(20000), lost = 0;
	pthread_t t;

	(void)state;
	atomic_store(&rearm_phase, 0);
	T_EQ(rcl_lruvec_init(&rearm_lv, NULL), 0);
	T_EQ(pthread_create(&t, NULL, rearm_b, (void *)n), 0);
	for (i = 0; i < n; i++) {
		struct rcl_lru_isolated iso;
		unsigned f;

		rcl_lru_node_init(&rearm_node);
		T_EQ(rcl_lruvec_add(&rearm_lv, &rearm_node, RCL_LRU_FILE, 1,
				    RCL_LRU_ADD_NOBATCH),
		     0);
		atomic_fetch_add(&rearm_phase, 1);	/* 4i + 1 */
		rearm_wait(4 * i + 2);
		rcl_lru_isolated_init(&iso);
		T_EQ(rcl_lruvec_isolate(&rearm_lv, RCL_LRU_LIST(RCL_LRU_FILE, 0),
					1, &iso),
		     0);
		T_EQ(rcl_lruvec_putback(&rearm_lv, &iso), 0);
		T_EQ(rcl_lruvec_deactivate(&rearm_lv, &rearm_node), 0);
		T_EQ(rcl_lruvec_mark_accessed(&rearm_lv, &rearm_node), 0);
		atomic_fetch_add(&rearm_phase, 1);	/* 4i + 3: B drains */
		T_EQ(rcl_lruvec_mark_accessed(&rearm_lv, &rearm_node), 0);
		rearm_wait(4 * i + 4);
		rcl_lru_drain_local();
		f = rcl_lru_node_flags(&rearm_node);
		if (!(f & (RCL_LRU_F_ACTIVE | RCL_LRU_F_REFERENCED)))
			lost++;
		T_EQ(rcl_lruvec_del(&rearm_lv, &rearm_node), 0);
	}
	T_EQ(pthread_join(t, NULL), 0);
	print_message("re-armed touches: %ld rounds, %ld lost\n", n, lost);
	T_EQ(lost, 0);
	T_EQ(rcl_lruvec_destroy(&rearm_lv), 0);
}

/*
 * fork() while other threads take the library's global locks (the batch
 * registry's, each thread's batch lock, the lruvec id map's: lruvec init,
 * first adds, destroy): the child, which has only the forking thread, must
 * be able to use a fresh lruvec of its own.  Without fork handlers for those
 * locks the child hung on its first add (a review's reproducer hung on the
 * first fork).  Each child has an alarm: a hang kills it, and the test fails.
 */
#define FK_NODES 64

static atomic_bool fk_stop;

static void *fk_churn(void *arg)
{
	struct rcl_lruvec lv;
	struct rcl_lru_node *n = calloc(FK_NODES, sizeof(*n));
	unsigned i;

	(void)arg;
	if (!n)
		return NULL;
	while (!atomic_load(&fk_stop)) {
		if (rcl_lruvec_init(&lv, NULL))
			break;
		for (i = 0; i < FK_NODES; i++) {
			rcl_lru_node_init(&n[i]);
			rcl_lruvec_add(&lv, &n[i], RCL_LRU_FILE, 1, 0);
		}
		rcl_lruvec_drain(&lv);
		for (i = 0; i < FK_NODES; i++)
			rcl_lruvec_del(&lv, &n[i]);
		rcl_lruvec_destroy(&lv);
	}
	free(n);
	return NULL;
}

static void test_lruvec_stress_fork_child_uses_a_fresh_lruvec(void **state)
{
	unsigned i, forks = ops_per_thread(20000) / 400 + 10;
	pthread_t t[3];

	(void)state;
	atomic_store(&fk_stop, false);
	for (i = 0; i < 3; i++)
		T_EQ(pthread_create(&t[i], NULL, fk_churn, NULL), 0);
	for (i = 0; i < forks; i++) {
		pid_t p = fork();
		int st;

		T_CHECK(p >= 0);
		if (p == 0) {
			struct rcl_lruvec lv;
			struct rcl_lru_node n;

			alarm(10);
			if (rcl_lruvec_init(&lv, NULL))
				_exit(2);
			rcl_lru_node_init(&n);
			if (rcl_lruvec_add(&lv, &n, RCL_LRU_FILE, 1, 0) ||
			    rcl_lruvec_del(&lv, &n) || rcl_lruvec_destroy(&lv))
				_exit(3);
			_exit(0);
		}
		T_EQ(waitpid(p, &st, 0), p);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("fork %u: the child %s %d", i,
				 WIFEXITED(st) ? "exited" : "was killed by signal",
				 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	atomic_store(&fk_stop, true);
	for (i = 0; i < 3; i++)
		T_EQ(pthread_join(t[i], NULL), 0);
	print_message("fork while churning: %u children, none hung\n", forks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lruvec_stress_all_operations),
		cmocka_unit_test(test_lruvec_stress_all_operations_batched),
		cmocka_unit_test(test_lruvec_stress_object_lifetime),
		cmocka_unit_test(test_lruvec_stress_object_lifetime_batched),
		cmocka_unit_test(test_lruvec_stress_isolate_races_second_touch),
		cmocka_unit_test(test_lruvec_stress_del_wait_vs_remove),
		cmocka_unit_test(test_lruvec_stress_drain_keeps_rearmed_touch),
		cmocka_unit_test(test_lruvec_stress_fork_child_uses_a_fresh_lruvec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
