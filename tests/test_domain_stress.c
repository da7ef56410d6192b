/* SPDX-License-Identifier: MIT */
/*
 * Concurrency test of memory domains (suites 'slow' and 'concurrency'; CI
 * runs it under ThreadSanitizer and AddressSanitizer).
 *
 * test_domain_stress_cache: a real multi-threaded cache on a domain with a
 * background reclaimer.  Four workers look keys up in a hash index and
 * create missing objects (malloc'd, charged to the domain before they are
 * inserted, with variable weights), delete some, and allocate "blobs" that
 * live in a shrinker's cache (charged too).  Objects are shared, so they
 * follow the pin protocol of lruvec.h: the evict callback frees an object
 * only if it is hashed and nobody holds a pin, and uncharges it.  Objects
 * go to one of two lruvecs by key.  A fifth thread keeps detaching and
 * re-attaching the second lruvec, stopping and restarting the background
 * reclaimer, changing the budget and the watermarks, and waking the
 * reclaimer.  Half the workers' charges may block, so they also reclaim
 * directly; the other half may not and rely on the background reclaimer;
 * now and then a worker calls rcl_domain_reclaim().
 *
 * Afterwards: usage equals the weights of the objects still cached plus the
 * blobs, exactly; every list passes the invariant check and nothing is
 * isolated; no evict callback of the second lruvec ran while it was
 * detached; teardown through the index brings usage to zero and
 * rcl_domain_free() returns 0.  Any access to a freed object is a
 * use-after-free for ASan and a race for TSan.
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

#include "lru_check.h"
#include "test_util.h"

/* cmocka's allocator is not thread-safe: use libc's in threads. */
#undef malloc
#undef calloc
#undef free

#define NWORKERS 4
#define NBUCKET 256
#define KEYS 8192
#define NLV 2
#define BLOB_W 500u
#define BUDGET_A 250000u
#define BUDGET_B 450000u
#define MIN_CYCLES 5000

/* ------------------------------------------------------------------------- */
/* The cache                                                                  */
/* ------------------------------------------------------------------------- */

struct obj {
	struct rcl_lru_node lru;
	struct obj *hnext;
	atomic_int refs;	/* 1 for the index, +1 per pin */
	bool hashed;		/* bucket lock */
	unsigned key;
	uint32_t weight;
	unsigned check;
};

struct bucket {
	pthread_mutex_t m;
	struct obj *head;
};

static struct rcl_domain *dom;
static struct rcl_lruvec lvs[NLV];
static struct bucket buckets[NBUCKET];
static atomic_bool lv1_attached;
static atomic_bool stop_control;
static struct rcl_shrinker *blob_shrinker;
static atomic_ulong blobs;

static atomic_long c_created, c_evicted, c_deleted, c_hits, c_enomem,
	c_dup, c_blobs_made, c_blobs_freed, c_reclaims, c_detaches, c_restarts,
	c_budgets, c_evict_busy, c_cycles;

static struct bucket *bucket_of(unsigned key)
{
	return &buckets[key % NBUCKET];
}

static unsigned lv_of(unsigned key)
{
	return (key / NBUCKET) % NLV;
}

static uint32_t weight_of(unsigned key)
{
	return 64 + (key * 2654435761u >> 7) % 256;
}

static void obj_put(struct obj *o)
{
	if (atomic_fetch_sub(&o->refs, 1) == 1) {
		memset(o, 0x6b, sizeof(*o));	/* poison */
		free(o);
	}
}

static void unhash_locked(struct bucket *b, struct obj *o)
{
	struct obj **pp;

	for (pp = &b->head; *pp != o; pp = &(*pp)->hnext)
		T_CHECK(*pp);
	*pp = o->hnext;
	o->hashed = false;
}

static enum rcl_evict_status cache_evict(struct rcl_lru_node *node,
					 struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);
	struct bucket *b = bucket_of(o->key);
	uint32_t w;

	T_PEQ(ctl->lruvec, &lvs[lv_of(o->key)]);
	T_EQ(ctl->weight, o->weight);
	T_CHECK(ctl->priority >= 0 && ctl->priority <= RCL_DEF_PRIORITY);
	/* Detach waits for passes inside the lruvec: none after it returned. */
	if (ctl->lruvec == &lvs[1])
		T_CHECK(atomic_load(&lv1_attached));
	pthread_mutex_lock(&b->m);
	if (!o->hashed || atomic_load(&o->refs) != 1) {
		pthread_mutex_unlock(&b->m);
		atomic_fetch_add(&c_evict_busy, 1);
		return RCL_EVICT_BUSY;	/* pinned, or its deleter waits */
	}
	unhash_locked(b, o);
	pthread_mutex_unlock(&b->m);
	T_EQ(o->check, o->key * 2654435761u);
	w = o->weight;
	obj_put(o);			/* frees it: the node is gone */
	T_EQ(rcl_domain_uncharge(dom, w), 0);
	atomic_fetch_add(&c_evicted, 1);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops cache_ops = { .evict = cache_evict };

/* Half the charges come from contexts that may not block (no direct
 * reclaim: they rely on the background reclaimer). */
static void cache_get(unsigned key, uint64_t ctx)
{
	struct bucket *b = bucket_of(key);
	struct obj *o, *x;
	int err;

	pthread_mutex_lock(&b->m);
	for (o = b->head; o && o->key != key; o = o->hnext)
		;
	if (o)
		atomic_fetch_add(&o->refs, 1);
	pthread_mutex_unlock(&b->m);
	if (o) {
		/* -ENOENT: a deleter took it off the lruvec after we pinned it. */
		err = rcl_lruvec_mark_accessed(&lvs[lv_of(key)], &o->lru);
		T_CHECK(err == 0 || err == -ENOENT);
		T_EQ(o->check, key * 2654435761u);
		atomic_fetch_add(&c_hits, 1);
		obj_put(o);
		return;
	}
	/* Miss: charge first, with no lock held (it may reclaim). */
	err = rcl_domain_charge(dom, weight_of(key), ctx, NULL);
	if (err) {
		T_EQ(err, -ENOMEM);
		atomic_fetch_add(&c_enomem, 1);
		return;
	}
	o = malloc(sizeof(*o));
	T_CHECK(o);
	rcl_lru_node_init(&o->lru);
	o->key = key;
	o->weight = weight_of(key);
	o->check = key * 2654435761u;
	o->hnext = NULL;
	atomic_init(&o->refs, 1);
	pthread_mutex_lock(&b->m);
	for (x = b->head; x && x->key != key; x = x->hnext)
		;
	if (x) {			/* someone else created it meanwhile */
		pthread_mutex_unlock(&b->m);
		free(o);
		T_EQ(rcl_domain_uncharge(dom, weight_of(key)), 0);
		atomic_fetch_add(&c_dup, 1);
		return;
	}
	/* Listed before it is findable: the index's reference covers both. */
	T_EQ(rcl_lruvec_add(&lvs[lv_of(key)], &o->lru, RCL_LRU_FILE, o->weight,
			    0), 0);
	o->hashed = true;
	o->hnext = b->head;
	b->head = o;
	pthread_mutex_unlock(&b->m);
	atomic_fetch_add(&c_created, 1);
}

static bool cache_delete(unsigned key)
{
	struct bucket *b = bucket_of(key);
	struct obj *o;
	uint32_t w;

	pthread_mutex_lock(&b->m);
	for (o = b->head; o && o->key != key; o = o->hnext)
		;
	if (o)
		unhash_locked(b, o);	/* we now own the index's reference */
	pthread_mutex_unlock(&b->m);
	if (!o)
		return false;
	T_EQ(rcl_lruvec_del_wait(&lvs[lv_of(key)], &o->lru), 0);
	w = o->weight;
	obj_put(o);
	T_EQ(rcl_domain_uncharge(dom, w), 0);
	atomic_fetch_add(&c_deleted, 1);
	return true;
}

/* ------------------------------------------------------------------------- */
/* Blobs: charged memory outside the lruvecs, behind a shrinker               */
/* ------------------------------------------------------------------------- */

static unsigned long blob_count(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	unsigned long n = atomic_load(&blobs);

	(void)s;
	(void)sc;
	return n ? n : RCL_SHRINK_EMPTY;
}

static unsigned long blob_scan(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	unsigned long have = atomic_load(&blobs), n;

	(void)s;
	do {
		n = have < sc->nr_to_scan ? have : sc->nr_to_scan;
	} while (!atomic_compare_exchange_weak(&blobs, &have, have - n));
	if (n)
		T_EQ(rcl_domain_uncharge(dom, (uint64_t)n * BLOB_W), 0);
	atomic_fetch_add(&c_blobs_freed, (long)n);
	return n;
}

static const struct rcl_shrinker_ops blob_ops = {
	.count_objects = blob_count,
	.scan_objects = blob_scan,
};

static void blob_make(void)
{
	int err = rcl_domain_charge(dom, BLOB_W, RCL_CTX_CAPABLE, NULL);

	if (err) {
		T_EQ(err, -ENOMEM);
		atomic_fetch_add(&c_enomem, 1);
		return;
	}
	atomic_fetch_add(&blobs, 1);
	atomic_fetch_add(&c_blobs_made, 1);
}

/* ------------------------------------------------------------------------- */
/* Threads                                                                    */
/* ------------------------------------------------------------------------- */

struct worker {
	pthread_t tid;
	unsigned idx;
	unsigned ops;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0xd0d0ull + w->idx;
	unsigned i;

	/* At least @ops operations, and on until the control thread has had
	 * MIN_CYCLES turns, whatever the scheduler does. */
	for (i = 0; i < w->ops || atomic_load(&c_cycles) < MIN_CYCLES; i++) {
		uint64_t r = rng_next(&rng);
		unsigned op = (unsigned)((r >> 40) % 1000);
		/* 80 % of accesses go to 20 % of the keys. */
		unsigned key = (r % 10 < 8) ? (unsigned)((r >> 8) % (KEYS / 5))
					    : (unsigned)((r >> 8) % KEYS);

		if (op < 20) {
			blob_make();
		} else if (op < 50) {
			cache_delete(key);
		} else if (op < 51) {
			struct rcl_reclaim_result res;

			T_EQ(rcl_domain_reclaim(dom, 1 + r % 64, RCL_CTX_CAPABLE,
						&res), 0);
			atomic_fetch_add(&c_reclaims, 1);
		} else {
			cache_get(key, (r >> 20) & 1 ? RCL_CTX_CAPABLE
						     : RCL_CTX_MAY_IO);
		}
	}
	return NULL;
}

/* Let the workers run for a moment (a few microseconds, no syscall: a
 * sched_yield() here would cost the control thread a whole time slice). */
static void pause_a_little(uint64_t *rng)
{
	unsigned n = (unsigned)(rng_next(rng) % 2000);

	while (n--)
		(void)atomic_load(&stop_control);
}

static void *control_main(void *arg)
{
	uint64_t rng = 0xc0c0ull;
	unsigned i;

	(void)arg;
	for (i = 0; !atomic_load(&stop_control); i++) {
		uint64_t b;
		struct rcl_watermarks wm;

		switch (i % 5) {
		case 0:		/* detach and re-attach the second lruvec */
			T_EQ(rcl_domain_detach(dom, &lvs[1]), 0);
			atomic_store(&lv1_attached, false);
			pause_a_little(&rng);
			atomic_store(&lv1_attached, true);
			T_EQ(rcl_domain_attach(dom, &lvs[1], 0), 0);
			atomic_fetch_add(&c_detaches, 1);
			break;
		case 1:		/* stop and restart the background reclaimer */
			T_EQ(rcl_domain_reclaimer_stop(dom), 0);
			pause_a_little(&rng);
			T_EQ(rcl_domain_reclaimer_start(dom), 0);
			atomic_fetch_add(&c_restarts, 1);
			break;
		case 2:		/* a new budget (this thread alone sets it) */
			b = BUDGET_A + rng_next(&rng) % (BUDGET_B - BUDGET_A);
			T_EQ(rcl_domain_set_budget(dom, b), 0);
			T_EQ(rcl_domain_budget(dom), b);
			atomic_fetch_add(&c_budgets, 1);
			break;
		case 3:		/* explicit watermarks, wider than the default */
			b = rcl_domain_budget(dom);
			wm.min = b / 200;
			wm.low = b / 50;
			wm.high = b / 20;
			T_EQ(rcl_domain_set_watermarks(dom, &wm), 0);
			break;
		default:
			T_EQ(rcl_domain_wakeup(dom), 0);
			break;
		}
		pause_a_little(&rng);
		atomic_fetch_add(&c_cycles, 1);
	}
	/* Leave the second lruvec attached. */
	T_CHECK(atomic_load(&lv1_attached));
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The test                                                                   */
/* ------------------------------------------------------------------------- */

static void test_domain_stress_cache(void **state)
{
	struct rcl_domain_config dcfg = { .budget = BUDGET_A };
	struct rcl_lruvec_config lcfg = { .ops = &cache_ops };
	struct rcl_shrinker_config scfg = {
		.ops = &blob_ops,
		.name = "blobs",
		.seeks = RCL_DEFAULT_SEEKS,
	};
	struct worker w[NWORKERS];
	struct rcl_vmstat v;
	pthread_t control;
	uint64_t weight[NLV] = { 0 }, nobj[NLV] = { 0 };
	unsigned i, l;

	(void)state;
	T_EQ(rcl_domain_new(&dcfg, &dom), 0);
	for (l = 0; l < NLV; l++) {
		T_EQ(rcl_lruvec_init(&lvs[l], &lcfg), 0);
		T_EQ(rcl_domain_attach(dom, &lvs[l], 0), 0);
	}
	atomic_store(&lv1_attached, true);
	for (i = 0; i < NBUCKET; i++) {
		T_EQ(pthread_mutex_init(&buckets[i].m, NULL), 0);
		buckets[i].head = NULL;
	}
	T_EQ(rcl_shrinker_new(rcl_domain_registry(dom), &scfg, &blob_shrinker),
	     0);
	T_EQ(rcl_shrinker_register(blob_shrinker), 0);
	T_EQ(rcl_domain_reclaimer_start(dom), 0);

	T_EQ(pthread_create(&control, NULL, control_main, NULL), 0);
	for (i = 0; i < NWORKERS; i++) {
		w[i].idx = i;
		w[i].ops = ops_per_thread(500000);
		T_EQ(pthread_create(&w[i].tid, NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < NWORKERS; i++)
		T_EQ(pthread_join(w[i].tid, NULL), 0);
	atomic_store(&stop_control, true);
	T_EQ(pthread_join(control, NULL), 0);
	T_EQ(rcl_domain_reclaimer_stop(dom), 0);

	/* Quiescent.  Every batch entry reaches its list. */
	rcl_lru_drain_local();
	for (l = 0; l < NLV; l++)
		T_EQ(rcl_lruvec_drain(&lvs[l]), 0);

	for (i = 0; i < NBUCKET; i++) {
		struct obj *o;

		for (o = buckets[i].head; o; o = o->hnext) {
			unsigned f = rcl_lru_node_flags(&o->lru);

			T_CHECK(o->hashed);
			T_EQ(atomic_load(&o->refs), 1);
			T_EQ(f & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
				  RCL_LRU_F_ISOLATED),
			     RCL_LRU_F_LISTED);
			/* The private flag word holds the lruvec's id in bits
			 * 16-31 (lib/internal.h, as lru_check.h reads it). */
			T_EQ(atomic_load(&o->lru.__flags) >> 16,
			     rcl_lruvec_id(&lvs[lv_of(o->key)]));
			nobj[lv_of(o->key)]++;
			weight[lv_of(o->key)] += o->weight;
		}
	}
	for (l = 0; l < NLV; l++) {
		T_EQ(lru_check_invariants(&lvs[l]), nobj[l]);
		T_EQ(rcl_lruvec_nr_isolated(&lvs[l]), 0);
	}
	T_EQ(rcl_domain_vmstat(dom, &v), 0);
	print_message("domain stress: created %ld, evicted %ld (busy %ld), "
		      "deleted %ld, hits %ld, duplicates %ld, -ENOMEM %ld, "
		      "blobs %ld made / %ld freed, explicit reclaims %ld; "
		      "control: %ld detaches, %ld restarts, %ld budgets; "
		      "pgsteal %llu bg / %llu direct, allocstall %llu, "
		      "pageoutrun %llu; cached %llu + %llu objects, usage %llu\n",
		      atomic_load(&c_created), atomic_load(&c_evicted),
		      atomic_load(&c_evict_busy), atomic_load(&c_deleted),
		      atomic_load(&c_hits), atomic_load(&c_dup),
		      atomic_load(&c_enomem), atomic_load(&c_blobs_made),
		      atomic_load(&c_blobs_freed), atomic_load(&c_reclaims),
		      atomic_load(&c_detaches), atomic_load(&c_restarts),
		      atomic_load(&c_budgets),
		      (unsigned long long)v.pgsteal_kswapd,
		      (unsigned long long)v.pgsteal_direct,
		      (unsigned long long)v.allocstall,
		      (unsigned long long)v.pageoutrun,
		      (unsigned long long)nobj[0], (unsigned long long)nobj[1],
		      (unsigned long long)rcl_domain_usage(dom));

	/* The accounting is exact. */
	T_EQ(rcl_domain_usage(dom),
	     weight[0] + weight[1] + (uint64_t)atomic_load(&blobs) * BLOB_W);
	T_EQ(atomic_load(&c_created),
	     atomic_load(&c_evicted) + atomic_load(&c_deleted) +
		     (long)(nobj[0] + nobj[1]));
	T_EQ(atomic_load(&c_blobs_made),
	     atomic_load(&c_blobs_freed) + (long)atomic_load(&blobs));
	/* Every path ran. */
	T_CHECK(atomic_load(&c_evicted) > 0);
	T_CHECK(atomic_load(&c_deleted) > 0);
	T_CHECK(atomic_load(&c_blobs_freed) > 0);
	T_CHECK(v.pgsteal_kswapd > 0);
	T_CHECK(v.pageoutrun > 0);
	T_CHECK(atomic_load(&c_detaches) > 0);
	T_CHECK(atomic_load(&c_restarts) > 0);

	/* Tear down through the index, as an application would. */
	for (i = 0; i < KEYS; i++)
		cache_delete(i);
	T_EQ(rcl_domain_uncharge(dom, (uint64_t)atomic_exchange(&blobs, 0) *
					      BLOB_W), 0);
	T_EQ(rcl_domain_usage(dom), 0);
	T_EQ(rcl_shrinker_free(blob_shrinker), 0);
	for (l = 0; l < NLV; l++) {
		T_EQ(lru_check_invariants(&lvs[l]), 0);
		T_EQ(rcl_domain_detach(dom, &lvs[l]), 0);
		T_EQ(rcl_lruvec_destroy(&lvs[l]), 0);
	}
	T_EQ(rcl_domain_free(dom), 0);
	for (i = 0; i < NBUCKET; i++)
		pthread_mutex_destroy(&buckets[i].m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domain_stress_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
