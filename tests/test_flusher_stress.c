/* SPDX-License-Identifier: MIT */
/*
 * Concurrency test of the flusher module (suites 'slow' and 'concurrency';
 * CI runs it under ThreadSanitizer and AddressSanitizer).
 *
 * test_flusher_stress_writeback_cache: a write-back cache on a small
 * budget.  Objects live in a hash index and two lruvecs (by key), follow
 * the pin protocol of lruvec.h, and carry a version.  Several writer
 * threads look objects up, pin them, bump their version, mark them dirty
 * and unpin them, then call rcl_domain_balance_dirty().  An allocator thread
 * creates objects for missing keys (charged first, so it reclaims directly
 * most of the time: the budget holds about an eighth of the keys), and now
 * and then deletes one (rcl_lruvec_del_wait(): it waits for a write in
 * progress) or asks for an explicit flush.  The background reclaimer runs,
 * and the library's flusher thread writes to a mock store that records,
 * per key, the last version written; a small fraction of writes and syncs
 * fail.
 *
 * Invariants checked as it runs: the write callback never runs in a reclaim
 * context nor in an application thread, and sees its object under writeback
 * and alive; versions reach the store in order; the evict callback never
 * sees a dirty or writeback object nor an object whose version did not
 * reach the store (both would be data lost - it keeps such objects and
 * counts them, and the test fails at the end).
 *
 * At the end: rcl_domain_writeback_all() (once while the flusher still
 * runs, once after it stopped), then every cached object's version is the
 * one in the store, the domain's and lruvecs' dirty counts are zero, usage
 * equals the weights cached, the lists pass the invariant check, nothing is
 * isolated, and the teardown through the index leaves nothing behind.
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

#define NWRITERS 3
#define NBUCKET 256
#define KEYS 4096
#define NLV 2
#define BUDGET 32768u		/* about 512 objects of 64 on average */
#define WINDOW 512		/* writers' keys: behind the allocator */
#define FLUSH_BATCH 16

/* ------------------------------------------------------------------------- */
/* The cache and its store                                                    */
/* ------------------------------------------------------------------------- */

struct obj {
	struct rcl_lru_node lru;
	struct obj *hnext;
	atomic_int refs;	/* 1 for the index, +1 per pin */
	bool hashed;		/* bucket lock */
	unsigned key;
	uint32_t weight;
	unsigned check;
	atomic_ullong version;	/* bumped by writers, while pinned */
};

struct bucket {
	pthread_mutex_t m;
	struct obj *head;
};

static struct rcl_domain *dom;
static struct rcl_lruvec lvs[NLV];
static struct bucket buckets[NBUCKET];
/* The store: the last version of each key that was written. */
static atomic_ullong stored[KEYS];
static atomic_uint alloc_cursor;
static atomic_bool inject_errors;

/* Thread roles, for the write callback's checks. */
static _Thread_local int tls_in_reclaim;
static _Thread_local bool tls_app;	/* a writer or the allocator */
static _Thread_local bool tls_main;	/* the test, in writeback_all */
static atomic_bool flusher_known;
static pthread_t flusher_tid;

static atomic_long c_created, c_evicted, c_deleted, c_evict_busy, c_enomem,
	c_modified, c_modify_enoent, c_modify_miss, c_balance_timeouts,
	c_writes, c_write_errors, c_sync_errors, c_syncs, c_flushes,
	c_deletes_waited, c_evict_dirty, c_evict_unwritten, c_evict_writeback, c_write_attempts;

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
	return 32 + (key * 2654435761u >> 7) % 64;
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

/* Find @key and pin it, or NULL. */
static struct obj *lookup(unsigned key)
{
	struct bucket *b = bucket_of(key);
	struct obj *o;

	pthread_mutex_lock(&b->m);
	for (o = b->head; o && o->key != key; o = o->hnext)
		;
	if (o)
		atomic_fetch_add(&o->refs, 1);
	pthread_mutex_unlock(&b->m);
	return o;
}

/*
 * The evict callback, with the pin protocol of lruvec.h.  flusher.h: dirty
 * and writeback objects never reach it, so it never has to write.  It
 * checks that (and that the object's version is in the store) after its pin
 * check, when nobody else can touch the object any more; an object that
 * fails is kept (BUSY) and counted: evicting it would lose data.
 */
static enum rcl_evict_status cache_evict(struct rcl_lru_node *node,
					 struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);
	struct bucket *b = bucket_of(o->key);
	unsigned f;
	uint32_t w;

	tls_in_reclaim++;
	T_PEQ(ctl->lruvec, &lvs[lv_of(o->key)]);
	T_EQ(ctl->weight, o->weight);
	T_EQ(ctl->flags & RCL_EVICT_DIRTY, 0);
	pthread_mutex_lock(&b->m);
	if (!o->hashed || atomic_load(&o->refs) != 1) {
		pthread_mutex_unlock(&b->m);
		atomic_fetch_add(&c_evict_busy, 1);
		tls_in_reclaim--;
		return RCL_EVICT_BUSY;	/* pinned, or its deleter waits */
	}
	f = rcl_lru_node_flags(node);
	if (f & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK)) {
		pthread_mutex_unlock(&b->m);
		atomic_fetch_add(&c_evict_dirty, 1);
		if (f & RCL_LRU_F_WRITEBACK)
			atomic_fetch_add(&c_evict_writeback, 1);
		tls_in_reclaim--;
		return RCL_EVICT_BUSY;
	}
	if (atomic_load(&o->version) != atomic_load(&stored[o->key])) {
		pthread_mutex_unlock(&b->m);
		atomic_fetch_add(&c_evict_unwritten, 1);
		tls_in_reclaim--;
		return RCL_EVICT_BUSY;
	}
	unhash_locked(b, o);
	pthread_mutex_unlock(&b->m);
	T_EQ(o->check, o->key * 2654435761u);
	w = o->weight;
	obj_put(o);			/* frees it: the node is gone */
	T_EQ(rcl_domain_uncharge(dom, w), 0);
	atomic_fetch_add(&c_evicted, 1);
	tls_in_reclaim--;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops cache_ops = { .evict = cache_evict };

/* Create @key if it is missing: charge first, with no lock held. */
static void cache_create(unsigned key)
{
	struct bucket *b = bucket_of(key);
	struct obj *o, *x;
	int err;

	o = lookup(key);
	if (o) {
		obj_put(o);
		return;
	}
	err = rcl_domain_charge(dom, weight_of(key), RCL_CTX_CAPABLE, NULL);
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
	/* Read from the store. */
	atomic_init(&o->version, atomic_load(&stored[key]));
	pthread_mutex_lock(&b->m);
	for (x = b->head; x && x->key != key; x = x->hnext)
		;
	T_CHECK(!x);		/* only this thread creates */
	T_EQ(rcl_lruvec_add(&lvs[lv_of(key)], &o->lru, RCL_LRU_FILE, o->weight,
			    0), 0);
	o->hashed = true;
	o->hnext = b->head;
	b->head = o;
	pthread_mutex_unlock(&b->m);
	atomic_fetch_add(&c_created, 1);
}

/* Delete @key (its unwritten changes are dropped, as by a truncate). */
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
	if (rcl_lru_node_flags(&o->lru) & RCL_LRU_F_WRITEBACK)
		atomic_fetch_add(&c_deletes_waited, 1);
	/* Waits for a reclaimer, and for a write in progress. */
	T_EQ(rcl_lruvec_del_wait(&lvs[lv_of(key)], &o->lru), 0);
	T_EQ(rcl_lru_node_flags(&o->lru) &
		     (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED |
		      RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK),
	     0);
	w = o->weight;
	obj_put(o);
	T_EQ(rcl_domain_uncharge(dom, w), 0);
	atomic_fetch_add(&c_deleted, 1);
	return true;
}

/* ------------------------------------------------------------------------- */
/* The store: write and sync callbacks of the library's flusher thread        */
/* ------------------------------------------------------------------------- */

static int store_write(void *priv, struct rcl_lru_node *node)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);
	unsigned f = rcl_lru_node_flags(node);
	unsigned long long v, old;
	unsigned i;

	(void)priv;
	/* Never in reclaim, never in an application thread. */
	T_EQ(tls_in_reclaim, 0);
	T_CHECK(!tls_app);
	if (!tls_main) {
		if (!atomic_exchange(&flusher_known, true))
			flusher_tid = pthread_self();
		else
			T_CHECK(pthread_equal(pthread_self(), flusher_tid));
	}
	/* Pinned by the writeback: alive and on its lruvec. */
	T_CHECK(f & RCL_LRU_F_WRITEBACK);
	T_CHECK(f & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED));
	T_EQ(o->check, o->key * 2654435761u);
	v = atomic_load(&o->version);
	/* Take a little time, as a write does. */
	for (i = 0; i < 64; i++)
		(void)atomic_load(&o->version);
	/* Transient failures: one attempt in 97 (a retry succeeds). */
	if (atomic_load(&inject_errors) &&
	    atomic_fetch_add(&c_write_attempts, 1) % 97 == 96) {
		atomic_fetch_add(&c_write_errors, 1);
		return -EIO;
	}
	old = atomic_exchange(&stored[o->key], v);
	T_CHECK(v >= old);	/* in order */
	atomic_fetch_add(&c_writes, 1);
	return 0;
}

static int store_sync(void *priv)
{
	long n = atomic_fetch_add(&c_syncs, 1);

	(void)priv;
	T_EQ(tls_in_reclaim, 0);
	T_CHECK(!tls_app);
	if (atomic_load(&inject_errors) && n % 211 == 210) {
		atomic_fetch_add(&c_sync_errors, 1);
		return -EIO;
	}
	return 0;
}

static const struct rcl_writeback_ops store_ops = { store_write, store_sync };

/* ------------------------------------------------------------------------- */
/* Threads                                                                    */
/* ------------------------------------------------------------------------- */

struct worker {
	pthread_t tid;
	unsigned idx;
	unsigned ops;
};

static void *writer_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0xf1f1ull + w->idx;
	unsigned i;

	tls_app = true;
	for (i = 0; i < w->ops; i++) {
		uint64_t r = rng_next(&rng);
		unsigned back = (unsigned)(r % WINDOW);
		unsigned key = (atomic_load(&alloc_cursor) + KEYS - 1 - back) %
			       KEYS;
		struct obj *o = lookup(key);
		int err;

		if (!o) {
			atomic_fetch_add(&c_modify_miss, 1);
			continue;
		}
		T_EQ(o->check, key * 2654435761u);
		atomic_fetch_add(&o->version, 1);
		err = rcl_lruvec_set_dirty(&lvs[lv_of(key)], &o->lru);
		/* -ENOENT: deleted after we pinned it. */
		T_CHECK(err == 0 || err == -ENOENT);
		if (err)
			atomic_fetch_add(&c_modify_enoent, 1);
		else
			atomic_fetch_add(&c_modified, 1);
		if ((r >> 32) % 4 == 0) {
			err = rcl_lruvec_mark_accessed(&lvs[lv_of(key)], &o->lru);
			T_CHECK(err == 0 || err == -ENOENT);
		}
		obj_put(o);
		err = rcl_domain_balance_dirty(dom, RCL_CTX_CAPABLE);
		T_CHECK(err == 0 || err == -ETIMEDOUT);
		if (err)
			atomic_fetch_add(&c_balance_timeouts, 1);
	}
	return NULL;
}

static void *allocator_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0xa110cull;
	unsigned i;

	tls_app = true;
	for (i = 0; i < w->ops; i++) {
		uint64_t r = rng_next(&rng);
		unsigned op = (unsigned)(r % 64);

		if (op == 0) {
			cache_delete((atomic_load(&alloc_cursor) + KEYS - 1 -
				      (unsigned)((r >> 8) % WINDOW)) % KEYS);
		} else if (op == 1) {
			T_EQ(rcl_domain_flush(dom, (r >> 8) % 2 ? 0 : 32), 0);
			atomic_fetch_add(&c_flushes, 1);
		} else if (op == 2) {
			struct rcl_reclaim_result res;

			tls_in_reclaim++;
			T_EQ(rcl_domain_reclaim(dom, 1 + (r >> 8) % 32,
						RCL_CTX_CAPABLE, &res), 0);
			tls_in_reclaim--;
		} else {
			unsigned key = atomic_fetch_add(&alloc_cursor, 1) % KEYS;

			cache_create(key);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The test                                                                   */
/* ------------------------------------------------------------------------- */

static void test_flusher_stress_writeback_cache(void **state)
{
	struct rcl_domain_config dcfg = { .budget = BUDGET };
	struct rcl_lruvec_config lcfg = { .ops = &cache_ops };
	struct worker wr[NWRITERS], al;
	struct rcl_dirty_stats ds;
	struct rcl_vmstat v;
	uint64_t weight[NLV] = { 0 }, nobj[NLV] = { 0 }, written = 0;
	unsigned i, l, stale_reclaim = 0;
	int err;

	(void)state;
	T_EQ(rcl_domain_new(&dcfg, &dom), 0);
	for (l = 0; l < NLV; l++) {
		T_EQ(rcl_lruvec_init(&lvs[l], &lcfg), 0);
		T_EQ(rcl_domain_attach(dom, &lvs[l], 0), 0);
	}
	for (i = 0; i < NBUCKET; i++) {
		T_EQ(pthread_mutex_init(&buckets[i].m, NULL), 0);
		buckets[i].head = NULL;
	}
	for (i = 0; i < KEYS; i++)
		atomic_store(&stored[i], 0);
	atomic_store(&inject_errors, true);
	T_EQ(rcl_domain_reclaimer_start(dom), 0);
	T_EQ(rcl_domain_flusher_start(dom, &store_ops, NULL, FLUSH_BATCH), 0);

	al.idx = 0;
	al.ops = ops_per_thread(1000000);
	T_EQ(pthread_create(&al.tid, NULL, allocator_main, &al), 0);
	for (i = 0; i < NWRITERS; i++) {
		wr[i].idx = i;
		wr[i].ops = ops_per_thread(1000000);
		T_EQ(pthread_create(&wr[i].tid, NULL, writer_main, &wr[i]), 0);
	}
	for (i = 0; i < NWRITERS; i++)
		T_EQ(pthread_join(wr[i].tid, NULL), 0);
	T_EQ(pthread_join(al.tid, NULL), 0);
	T_EQ(rcl_domain_reclaimer_stop(dom), 0);

	/* Write everything back: once while the flusher thread still runs,
	 * once after it stopped (its last request may have left objects its
	 * failed writes re-dirtied). */
	atomic_store(&inject_errors, false);
	tls_main = true;
	T_EQ(rcl_domain_writeback_all(dom, &store_ops, NULL, NULL), 0);
	T_EQ(rcl_domain_flusher_stop(dom), 0);
	T_EQ(rcl_domain_writeback_all(dom, &store_ops, NULL, &written), 0);
	tls_main = false;
	rcl_lru_drain_local();
	for (l = 0; l < NLV; l++)
		T_EQ(rcl_lruvec_drain(&lvs[l]), 0);

	/* Nothing lost: every object's last version is in the store. */
	for (i = 0; i < NBUCKET; i++) {
		struct obj *o;

		for (o = buckets[i].head; o; o = o->hnext) {
			unsigned f = rcl_lru_node_flags(&o->lru);

			T_CHECK(o->hashed);
			T_EQ(atomic_load(&o->refs), 1);
			T_EQ(f & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
				  RCL_LRU_F_ISOLATED),
			     RCL_LRU_F_LISTED);
			T_EQ(f & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK), 0);
			if (f & RCL_LRU_F_RECLAIM)
				stale_reclaim++;
			T_EQ(atomic_load(&o->version),
			     atomic_load(&stored[o->key]));
			nobj[lv_of(o->key)]++;
			weight[lv_of(o->key)] += o->weight;
		}
	}
	T_EQ(rcl_domain_dirty_stats(dom, &ds), 0);
	T_EQ(ds.nr_dirty, 0);
	T_EQ(ds.weight_dirty, 0);
	T_EQ(ds.nr_writeback, 0);
	T_EQ(ds.weight_writeback, 0);
	for (l = 0; l < NLV; l++) {
		T_EQ(rcl_lruvec_dirty_stats(&lvs[l], &ds), 0);
		T_EQ(ds.nr_dirty + ds.weight_dirty + ds.nr_writeback +
			     ds.weight_writeback,
		     0);
		T_EQ(lru_check_invariants(&lvs[l]), nobj[l]);
		T_EQ(rcl_lruvec_nr_isolated(&lvs[l]), 0);
	}
	T_EQ(rcl_domain_vmstat(dom, &v), 0);
	print_message(
		"flusher stress: created %ld, evicted %ld (busy %ld), deleted %ld "
		"(%ld waited for a write), -ENOMEM %ld; modified %ld (deleted "
		"meanwhile %ld, misses %ld), balance_dirty timeouts %ld; store: "
		"%ld writes, %ld write errors, %ld syncs, %ld sync errors; "
		"explicit flushes %ld; final writeback_all %llu; cached %llu + "
		"%llu; clean objects still flagged for reclaim %u\n",
		atomic_load(&c_created), atomic_load(&c_evicted),
		atomic_load(&c_evict_busy), atomic_load(&c_deleted),
		atomic_load(&c_deletes_waited), atomic_load(&c_enomem),
		atomic_load(&c_modified), atomic_load(&c_modify_enoent),
		atomic_load(&c_modify_miss), atomic_load(&c_balance_timeouts),
		atomic_load(&c_writes), atomic_load(&c_write_errors),
		atomic_load(&c_syncs), atomic_load(&c_sync_errors),
		atomic_load(&c_flushes), (unsigned long long)written,
		(unsigned long long)nobj[0], (unsigned long long)nobj[1],
		stale_reclaim);
	print_message(
		"vmstat: pgsteal %llu bg / %llu direct, nr_dirty_scanned %llu, "
		"nr_unqueued_dirty %llu, nr_writeback_scanned %llu, "
		"nr_immediate %llu, flush_requests %llu (vmscan %llu, coalesced "
		"%llu, delivered %llu), writeback_throttled %llu (timeouts "
		"%llu), dirty_throttled %llu (timeouts %llu), writes_flusher "
		"%llu, writes_from_reclaim %llu\n",
		(unsigned long long)v.pgsteal_kswapd,
		(unsigned long long)v.pgsteal_direct,
		(unsigned long long)v.nr_dirty_scanned,
		(unsigned long long)v.nr_unqueued_dirty,
		(unsigned long long)v.nr_writeback_scanned,
		(unsigned long long)v.nr_immediate,
		(unsigned long long)v.flush_requests,
		(unsigned long long)v.flush_requests_vmscan,
		(unsigned long long)v.flush_coalesced,
		(unsigned long long)v.flusher_wakeups,
		(unsigned long long)v.writeback_throttled,
		(unsigned long long)v.writeback_throttle_timeouts,
		(unsigned long long)v.dirty_throttled,
		(unsigned long long)v.dirty_throttle_timeouts,
		(unsigned long long)v.writes_flusher,
		(unsigned long long)v.writes_from_reclaim);

	/* The accounting is exact. */
	T_EQ(rcl_domain_usage(dom), weight[0] + weight[1]);
	T_EQ(atomic_load(&c_created),
	     atomic_load(&c_evicted) + atomic_load(&c_deleted) +
		     (long)(nobj[0] + nobj[1]));
	T_EQ(v.writes_from_reclaim, 0);
	/* Counted per batch whose sync succeeded: at most the writes. */
	T_CHECK((long)v.writes_flusher <= atomic_load(&c_writes));
	T_CHECK(v.writes_flusher > 0);
	/* Every path ran. */
	T_CHECK(atomic_load(&c_evicted) > 0);
	T_CHECK(atomic_load(&c_deleted) > 0);
	T_CHECK(atomic_load(&c_modified) > 0);
	T_CHECK(atomic_load(&c_writes) > 0);
	T_CHECK(v.flush_requests > 0);
	T_CHECK(v.nr_dirty_scanned > 0);

	/* Tear down through the index, as an application would. */
	for (i = 0; i < KEYS; i++)
		cache_delete(i);
	T_EQ(rcl_domain_usage(dom), 0);
	T_EQ(rcl_domain_dirty_stats(dom, &ds), 0);
	T_EQ(ds.nr_dirty + ds.nr_writeback, 0);
	for (l = 0; l < NLV; l++) {
		T_EQ(lru_check_invariants(&lvs[l]), 0);
		T_EQ(rcl_domain_detach(dom, &lvs[l]), 0);
		T_EQ(rcl_lruvec_destroy(&lvs[l]), 0);
	}
	err = rcl_domain_free(dom);
	T_EQ(err, 0);
	for (i = 0; i < NBUCKET; i++)
		pthread_mutex_destroy(&buckets[i].m);

	/*
	 * Data lost: dirty objects handed to the evict callback, or objects
	 * whose last version never reached the store (checked last, so that
	 * a failure here comes after every other check passed).
	 */
	{
		long dirty = atomic_load(&c_evict_dirty);
		long wb = atomic_load(&c_evict_writeback);
		long unwritten = atomic_load(&c_evict_unwritten);

		if (dirty || unwritten)
			print_message("evict callback met %ld dirty objects "
				      "(%ld of them under writeback) and %ld "
				      "objects with unwritten versions\n",
				      dirty, wb, unwritten);
		T_EQ(dirty, 0);
		T_EQ(unwritten, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flusher_stress_writeback_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
