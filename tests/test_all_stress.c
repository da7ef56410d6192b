/* SPDX-License-Identifier: MIT */
/*
 * Concurrency test of all modules together (suites 'slow' and
 * 'concurrency'; CI runs it under ThreadSanitizer and AddressSanitizer).
 *
 * The harness is a write-back cache of KEYS keys on a two-partition domain:
 * one lruvec per partition (keys split by bucket), objects of both LRU
 * types with variable weights, a per-key slot in the application's index
 * that holds either the object or the shadow its eviction left (passed back
 * with rcl_lruvec_add_refault() on the next miss, and bounded by an
 * rcl_shadow_limit), two "blob" caches behind shrinkers (one partition
 * aware, one that needs I/O; each with its own lock and counts), and an
 * in-memory store written by the library's flusher thread (with injected
 * write and sync failures).  Objects follow the pin protocol of lruvec.h:
 * a reference count, pins taken under the bucket lock, the evict callback
 * frees only hashed objects nobody else holds, and deletes unhash first and
 * then rcl_lruvec_del_wait().  Every callback (evict, write, shrinker count
 * and scan, shadow drop) first checks that what it was given is alive: freed
 * objects are poisoned and, except under ASan (which frees them and reports
 * any later access itself), kept in a graveyard whose poison is verified at
 * the end, so that a library write to a node it no longer owns is caught in
 * every build.
 *
 * test_all_stress_everything: workers look up, create (charging first, so
 * most misses reclaim directly in strict mode), modify and dirty, delete,
 * age (mark_accessed, rotate, deactivate, unevictable sections), make and
 * free blobs, reclaim explicitly (rcl_domain_reclaim(), the lruvec shrink
 * primitives, and the isolate / remove / putback API under the pin
 * protocol), drain, flush and balance_dirty, while a control thread changes
 * the budget, watermarks and swappiness, shrinks the registry, drains
 * lruvecs, detaches and re-attaches one of them, wakes the reclaimer,
 * writes back alongside the flusher thread and reads every statistic; the
 * background reclaimer and the flusher thread run throughout.
 *
 * test_all_stress_reclaimer_restart: the background reclaimer is stopped
 * and started 200 times while workers charge, uncharge and reclaim.
 *
 * test_all_stress_flusher_restart: the flusher thread is stopped and
 * started 200 times (with an occasional rcl_domain_writeback_all() from the
 * control thread in between) while workers dirty objects, in soft mode.
 *
 * test_all_stress_shrinker_churn: threads create, register and free
 * shrinkers (and shadow limits) in the domain's registry in a loop, each
 * over a small cache of charged items, while other threads shrink the
 * registry and reclaim the domain.  A callback that starts or is still
 * running once rcl_shrinker_free() has returned breaks shrinker.h's
 * contract and fails the test.
 *
 * All four end the same way: stop the threads, stop the reclaimer and the
 * flusher, rcl_domain_writeback_all(), then check that every object is on
 * exactly one list of its lruvec or freed, the lists and their counts agree
 * (lru_check.h), nothing is isolated, dirty or under writeback, usage equals
 * the weights charged for what is cached, every cached version is in the
 * store, the shadow count is what the index holds, the shrinkers' freed
 * counts equal what their scan callbacks returned, and that teardown leaves
 * usage 0 and every free returns 0.
 *
 * Sizing: a bounded number of operations per thread (RCL_STRESS_OPS
 * overrides the per-worker count), no wall-clock bound.
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

/* Under ASan, freed objects are really freed: ASan reports late accesses. */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifndef HAVE_ASAN
#define HAVE_ASAN 0
#endif

#define NPART 2			/* domain partitions, one lruvec each */
#define NLV NPART
#define NBUCKET 256
#define KEYS 4096
#define NCACHE 2		/* blob caches */
#define BLOB_W 64u
#define CHURN_W 32u
#define SHADOW_QUOTA (KEYS / 8)
#define FLUSH_BATCH 16
#define POISON 0x6b

#define OBJ_MAGIC 0x0b1ec7a11c0ffee5ull
#define BLOB_MAGIC 0xb10bb10bb10bb10bull
#define CACHE_MAGIC 0xcac4ecac4ecac4e5ull
#define CHURN_MAGIC 0xc4a2c4a2c4a2c4a2ull

/* A few microseconds of work, no syscall (a yield costs a time slice). */
static void pause_a_little(uint64_t *rng, unsigned max)
{
	static atomic_uint sink;
	unsigned n = (unsigned)(rng_next(rng) % max);

	while (n--)
		(void)atomic_load_explicit(&sink, memory_order_relaxed);
}

static uint64_t now_ns(void)
{
	const struct rcl_clock *c = rcl_clock_monotonic();

	return c->now(c->ctx);
}

/* ------------------------------------------------------------------------- */
/* The harness: objects, index, store, blob caches                            */
/* ------------------------------------------------------------------------- */

struct obj {
	struct rcl_lru_node lru;
	uint64_t magic;
	atomic_int refs;	/* 1 for the index, +1 per pin */
	bool hashed;		/* bucket lock */
	unsigned key;
	unsigned lvi;
	unsigned type;
	uint32_t weight;
	atomic_ullong version;	/* bumped by writers, while pinned */
	unsigned seen;		/* final check only */
	/* Not poisoned: the graveyard link. */
	struct obj *grave_next;
};

/* The index entry of one key (bucket lock). */
struct slot {
	struct obj *o;
	uint64_t shadow;	/* what an eviction left, or 0 */
	bool deleting;		/* a deleter waits in rcl_lruvec_del_wait() */
};

struct blob {
	uint64_t magic;
	struct blob *next;
};

struct blob_cache {
	uint64_t magic;
	unsigned idx;
	bool aware;		/* RCL_SHRINKER_PARTITION_AWARE */
	bool needs_io;		/* scan needs RCL_CTX_MAY_IO */
	pthread_mutex_t m;
	struct blob *head[NPART];	/* m */
	atomic_ulong nr[NPART];
	struct rcl_shrinker *s;
	atomic_bool alive;	/* cleared once rcl_shrinker_free() returned */
	atomic_ulong made, scan_freed, debug_freed, app_freed, stops;
};

/* What a test configures. */
struct hcfg {
	const char *name;
	uint64_t start_ns;		/* set by harness_setup() */
	enum rcl_charge_mode mode;
	uint64_t budget_lo, budget_hi;
	unsigned nworkers;
	unsigned ops;			/* per worker, at least */
	bool writes;			/* workers dirty objects */
	bool flusher;			/* flusher thread started at setup */
	bool flusher_cycles;		/* stopped at times: flush -ENODEV */
	bool errors;			/* inject write and sync failures */
	bool fixed_budget;		/* strict, constant: usage <= budget */
	uint64_t dirty_timeout_ns;
};

static struct {
	struct hcfg cfg;
	struct rcl_domain *dom;
	struct rcl_lruvec lvs[NLV];
	pthread_mutex_t locks[NBUCKET];
	struct slot slots[KEYS];
	atomic_ullong stored[KEYS];	/* the store: last version written */
	struct blob_cache caches[NCACHE];
	struct rcl_shadow_limit *limit;
	atomic_bool limit_alive;
	atomic_uint shadow_cursor;
	_Atomic(struct obj *) grave;
	atomic_long graves, graves_freed;
	atomic_bool inject_errors;
	atomic_bool control_done;	/* workers run at least until then */
	/* Set once rcl_domain_reclaimer_stop() / _flusher_stop() returned:
	 * no callback may run on that thread any more. */
	atomic_bool rc_stopped, fl_stopped;
	atomic_uint control_cycles;

	/* counters */
	atomic_long created, evicted, deleted, released, dup, hits, misses,
		enomem, evict_busy, evict_activate, modified, modify_enoent,
		balance_timeouts, refaults, refault_activate, refault_restore,
		shadows_stored, shadows_dropped, shadows_consumed, writes,
		write_errors, sync_errors, syncs, write_attempts, flushes,
		flush_enodev, reclaims, rotates, unevictables, drains,
		budgets, ctl_shrinks, evict_dirty, evict_unwritten, iso_freed,
		isolations, ctl_writebacks, evict_blobs, detaches;
	/* Shrinker accounting: what scan callbacks returned (debug scans
	 * excluded), and what the library reported to its callers. */
	atomic_ulong cb_freed, reported_freed;
} H;

/* Thread roles, for the callbacks' checks. */
static _Thread_local int tls_in_reclaim;
static _Thread_local bool tls_worker;	/* a worker, churner or walker */
static _Thread_local bool tls_app;	/* any thread of the test's own */
static _Thread_local uint64_t tls_rng;
static _Thread_local bool tls_debug;	/* inside rcl_shrinker_debug_scan() */

static pthread_mutex_t *lock_of(unsigned key)
{
	return &H.locks[key % NBUCKET];
}

static unsigned lv_of(unsigned key)
{
	return (key / NBUCKET) % NLV;
}

static unsigned type_of(unsigned key)
{
	return (key >> 3) & 1u;
}

static uint32_t weight_of(unsigned key)
{
	return 16 + (key * 2654435761u >> 9) % 64;
}

/*
 * A callback on one of the library's own threads (the background reclaimer;
 * the flusher for writes): that thread must still be running.
 */
static void check_bg_thread(void)
{
	if (!tls_app)
		T_CHECK(!atomic_load(&H.rc_stopped));
}

/* Strict mode commits only what fits: with a constant budget, always. */
static void check_usage(void)
{
	if (H.cfg.fixed_budget)
		T_CHECK(rcl_domain_usage(H.dom) <= H.cfg.budget_lo);
}

/*
 * Free the graveyard (or the part of it that this call detaches): first
 * check that no byte of a freed object changed since it was poisoned, i.e.
 * that the library wrote nothing to a node it no longer owned.
 */
static void grave_flush(void)
{
	struct obj *o = atomic_exchange(&H.grave, NULL), *next;
	long n = 0;

	for (; o; o = next) {
		const unsigned char *b = (const unsigned char *)o;
		size_t k;

		for (k = 0; k < offsetof(struct obj, grave_next); k++) {
			if (b[k] != POISON) {
				fprintf(stderr,
					"freed object %p written at offset %zu "
					"(0x%02x)\n",
					(void *)o, k, b[k]);
				abort();
			}
		}
		next = o->grave_next;
		free(o);
		n++;
	}
	atomic_fetch_add(&H.graves_freed, n);
}

/*
 * The object's memory is gone: poison it, and keep it in the graveyard for a
 * while (under ASan, free it: ASan reports any later access itself).
 */
static void obj_release(struct obj *o)
{
	memset(o, POISON, offsetof(struct obj, grave_next));
	atomic_fetch_add(&H.released, 1);
	if (HAVE_ASAN) {
		free(o);
		return;
	}
	o->grave_next = atomic_load(&H.grave);
	while (!atomic_compare_exchange_weak(&H.grave, &o->grave_next, o))
		;
	/* Bounded memory: check and free every 64k objects. */
	if (atomic_fetch_add(&H.graves, 1) % 65536 == 65535)
		grave_flush();
}

static void obj_check(const struct obj *o)
{
	if (o->magic != OBJ_MAGIC) {
		fprintf(stderr, "object %p is freed (magic %#llx)\n",
			(const void *)o, (unsigned long long)o->magic);
		abort();
	}
}

static void obj_put(struct obj *o)
{
	if (atomic_fetch_sub(&o->refs, 1) == 1)
		obj_release(o);
}

/* Find @key and pin it, or NULL. */
static struct obj *lookup_pin(unsigned key)
{
	struct obj *o;

	pthread_mutex_lock(lock_of(key));
	o = H.slots[key].o;
	if (o) {
		obj_check(o);
		T_CHECK(o->hashed && o->key == key);
		atomic_fetch_add(&o->refs, 1);
	}
	pthread_mutex_unlock(lock_of(key));
	return o;
}

/* After -ENOENT from an operation on a pinned object: it was deleted. */
static void check_deleted(struct obj *o)
{
	pthread_mutex_lock(lock_of(o->key));
	T_CHECK(!o->hashed);
	pthread_mutex_unlock(lock_of(o->key));
}

/*
 * The evict callback, with the pin protocol of lruvec.h.  Dirty and
 * writeback objects never reach it (flusher.h); it checks that, and that the
 * object's version reached the store, after its pin check (when nobody else
 * can touch the object): an object that fails is kept and counted, since
 * evicting it would lose data, and the test fails at the end.
 */
static void blob_make(unsigned ci, unsigned p, uint64_t ctx);
static void cache_age(unsigned key, uint64_t r);

static enum rcl_evict_status obj_evict(struct rcl_lru_node *node,
				       struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);
	struct slot *s;
	unsigned f;
	uint32_t w;
	uint64_t r;

	tls_in_reclaim++;
	obj_check(o);
	check_bg_thread();
	T_PEQ(ctl->priv, &H);
	T_PEQ(ctl->lruvec, &H.lvs[o->lvi]);
	T_EQ(ctl->weight, o->weight);
	T_EQ(ctl->type, o->type);
	T_EQ(ctl->flags & RCL_EVICT_DIRTY, 0);
	T_CHECK(ctl->priority >= 0 && ctl->priority <= RCL_DEF_PRIORITY);
	T_CHECK(rcl_shadow_is_valid(ctl->shadow));
	pthread_mutex_lock(lock_of(o->key));
	s = &H.slots[o->key];
	if (!o->hashed || atomic_load(&o->refs) != 1) {
		pthread_mutex_unlock(lock_of(o->key));
		atomic_fetch_add(&H.evict_busy, 1);
		tls_in_reclaim--;
		return RCL_EVICT_BUSY;	/* pinned, or its deleter waits */
	}
	T_PEQ(s->o, o);
	f = rcl_lru_node_flags(node);
	T_CHECK(f & RCL_LRU_F_ISOLATED);
	if (f & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK)) {
		pthread_mutex_unlock(lock_of(o->key));
		atomic_fetch_add(&H.evict_dirty, 1);
		tls_in_reclaim--;
		return RCL_EVICT_BUSY;
	}
	if (atomic_load(&o->version) != atomic_load(&H.stored[o->key])) {
		pthread_mutex_unlock(lock_of(o->key));
		atomic_fetch_add(&H.evict_unwritten, 1);
		tls_in_reclaim--;
		return RCL_EVICT_BUSY;
	}
	/* Now and then keep a referenced object, on the active list. */
	if ((ctl->flags & RCL_EVICT_REFERENCED) && o->key % 7 == 0) {
		pthread_mutex_unlock(lock_of(o->key));
		atomic_fetch_add(&H.evict_activate, 1);
		tls_in_reclaim--;
		return RCL_EVICT_ACTIVATE;
	}
	s->o = NULL;
	o->hashed = false;
	T_EQ(s->shadow, 0);
	s->shadow = ctl->shadow;
	rcl_shadow_limit_add(H.limit, 1);	/* under the lock: never < 0 */
	pthread_mutex_unlock(lock_of(o->key));
	atomic_fetch_add(&H.shadows_stored, 1);
	w = o->weight;
	obj_put(o);			/* frees it: the node is gone */
	T_EQ(rcl_domain_uncharge(H.dom, w), 0);
	atomic_fetch_add(&H.evicted, 1);
	/*
	 * What a callback may do besides: charge (a compressed copy goes to a
	 * blob cache; a charge from reclaim does not reclaim recursively), and
	 * age other objects, of this lruvec or the other.
	 */
	r = rng_next(&tls_rng);
	if (r % 8 == 0) {
		blob_make((unsigned)((r >> 8) % NCACHE),
			  (unsigned)((r >> 12) % NPART), RCL_CTX_CAPABLE);
		atomic_fetch_add(&H.evict_blobs, 1);
	} else if (r % 8 == 1) {
		cache_age((unsigned)((r >> 16) % KEYS), r >> 32);
	}
	tls_in_reclaim--;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops obj_ops = { .evict = obj_evict };

/* A miss: create @key, charging first with no lock held (it may reclaim). */
static void cache_create(unsigned key, uint64_t ctx, uint64_t r)
{
	struct slot *s = &H.slots[key];
	unsigned flags = 0, outcome = 0;
	uint64_t shadow;
	struct obj *o;
	int err;

	err = rcl_domain_charge(H.dom, weight_of(key), ctx, NULL);
	if (err) {
		T_EQ(err, -ENOMEM);
		T_EQ(H.cfg.mode, RCL_CHARGE_STRICT);
		atomic_fetch_add(&H.enomem, 1);
		return;
	}
	check_usage();
	o = malloc(sizeof(*o));
	T_CHECK(o);
	memset(o, 0, sizeof(*o));
	rcl_lru_node_init(&o->lru);
	o->magic = OBJ_MAGIC;
	o->key = key;
	o->lvi = lv_of(key);
	o->type = type_of(key);
	o->weight = weight_of(key);
	atomic_init(&o->refs, 1);
	if (r % 8 == 0)
		flags |= RCL_LRU_ADD_ACTIVE;
	if ((r >> 3) % 16 == 0)
		flags |= RCL_LRU_ADD_NOBATCH;

	pthread_mutex_lock(lock_of(key));
	/* Created (or being deleted) meanwhile. */
	if (s->o || s->deleting) {
		pthread_mutex_unlock(lock_of(key));
		obj_release(o);
		T_EQ(rcl_domain_uncharge(H.dom, weight_of(key)), 0);
		atomic_fetch_add(&H.dup, 1);
		return;
	}
	/*
	 * Read from the store, under the lock: every write of an earlier
	 * incarnation has ended (an evicted one was clean; a deleted one was
	 * waited for).
	 */
	atomic_store(&o->version, atomic_load(&H.stored[key]));
	shadow = s->shadow;
	if (shadow) {
		s->shadow = 0;
		rcl_shadow_limit_add(H.limit, -1);
		atomic_fetch_add(&H.shadows_consumed, 1);
	}
	/* Listed before it is findable: the index's reference covers both. */
	err = rcl_lruvec_add_refault(&H.lvs[o->lvi], &o->lru, o->type,
				     o->weight, flags, shadow, &outcome);
	T_EQ(err, 0);
	o->hashed = true;
	s->o = o;
	pthread_mutex_unlock(lock_of(key));
	if (shadow)
		T_CHECK(outcome & RCL_REFAULT_REFAULT);
	else
		T_EQ(outcome, 0);
	if (outcome & RCL_REFAULT_REFAULT)
		atomic_fetch_add(&H.refaults, 1);
	if (outcome & RCL_REFAULT_ACTIVATE)
		atomic_fetch_add(&H.refault_activate, 1);
	if (outcome & RCL_REFAULT_RESTORE)
		atomic_fetch_add(&H.refault_restore, 1);
	atomic_fetch_add(&H.created, 1);
}

static void cache_get(unsigned key, uint64_t ctx, uint64_t r)
{
	struct obj *o = lookup_pin(key);
	int err;

	if (!o) {
		atomic_fetch_add(&H.misses, 1);
		cache_create(key, ctx, r);
		return;
	}
	err = rcl_lruvec_mark_accessed(&H.lvs[o->lvi], &o->lru);
	if (err) {
		T_EQ(err, -ENOENT);	/* deleted after we pinned it */
		check_deleted(o);
	}
	obj_check(o);
	T_EQ(o->key, key);
	atomic_fetch_add(&H.hits, 1);
	obj_put(o);
}

/* Delete @key (its unwritten changes are dropped, as by a truncate). */
static bool cache_delete(unsigned key)
{
	struct slot *s = &H.slots[key];
	struct obj *o;
	unsigned f;
	uint32_t w;

	pthread_mutex_lock(lock_of(key));
	o = s->o;
	if (o) {
		obj_check(o);
		s->o = NULL;
		o->hashed = false;	/* we now own the index's reference */
		s->deleting = true;
	}
	pthread_mutex_unlock(lock_of(key));
	if (!o)
		return false;
	/* Waits for a reclaimer, and for a write in progress. */
	T_EQ(rcl_lruvec_del_wait(&H.lvs[o->lvi], &o->lru), 0);
	f = rcl_lru_node_flags(&o->lru);
	T_EQ(f & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED |
		  RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK),
	     0);
	w = o->weight;
	T_EQ(rcl_domain_uncharge(H.dom, w), 0);
	pthread_mutex_lock(lock_of(key));
	s->deleting = false;
	pthread_mutex_unlock(lock_of(key));
	obj_put(o);
	atomic_fetch_add(&H.deleted, 1);
	return true;
}

/* Modify @key: bump its version while pinned, mark it dirty. */
static void cache_write(unsigned key, uint64_t ctx, uint64_t r)
{
	struct obj *o = lookup_pin(key);
	int err;

	if (!o) {
		atomic_fetch_add(&H.misses, 1);
		cache_create(key, ctx, r);
		return;
	}
	atomic_fetch_add(&o->version, 1);
	err = rcl_lruvec_set_dirty(&H.lvs[o->lvi], &o->lru);
	if (err) {
		T_EQ(err, -ENOENT);
		check_deleted(o);
		atomic_fetch_add(&H.modify_enoent, 1);
	} else {
		atomic_fetch_add(&H.modified, 1);
	}
	if ((r >> 32) % 4 == 0) {
		err = rcl_lruvec_mark_accessed(&H.lvs[o->lvi], &o->lru);
		T_CHECK(err == 0 || err == -ENOENT);
	}
	obj_put(o);
	if ((r >> 36) % 2 == 0) {
		err = rcl_domain_balance_dirty(H.dom, ctx);
		T_CHECK(err == 0 || err == -ETIMEDOUT);
		if (err)
			atomic_fetch_add(&H.balance_timeouts, 1);
	}
}

/* Rotate or deactivate a pinned object. */
static void cache_age(unsigned key, uint64_t r)
{
	struct obj *o = lookup_pin(key);
	int err;

	if (!o)
		return;
	if (r % 2)
		err = rcl_lruvec_rotate(&H.lvs[o->lvi], &o->lru);
	else
		err = rcl_lruvec_deactivate(&H.lvs[o->lvi], &o->lru);
	/* -EBUSY: isolated; -EPERM: in someone's unevictable section. */
	T_CHECK(err == 0 || err == -ENOENT || err == -EBUSY || err == -EPERM);
	if (err == -ENOENT)
		check_deleted(o);
	atomic_fetch_add(&H.rotates, 1);
	obj_put(o);
}

/* An unevictable section: pin, mark unevictable, use, unmark, unpin. */
static void cache_unevictable(unsigned key, uint64_t r)
{
	struct obj *o = lookup_pin(key);
	struct rcl_lruvec *lv;
	int err;

	if (!o)
		return;
	lv = &H.lvs[o->lvi];
	err = rcl_lruvec_mark_unevictable(lv, &o->lru);
	T_CHECK(err == 0 || err == -ENOENT || err == -EBUSY);
	if (err == 0) {
		if (H.cfg.writes && r % 2) {
			atomic_fetch_add(&o->version, 1);
			err = rcl_lruvec_set_dirty(lv, &o->lru);
			T_CHECK(err == 0 || err == -ENOENT);
		}
		err = rcl_lruvec_mark_accessed(lv, &o->lru);
		T_CHECK(err == 0 || err == -ENOENT);
		err = rcl_lruvec_unmark_unevictable(lv, &o->lru);
		/* -EBUSY: another section ended first and reclaim took it. */
		T_CHECK(err == 0 || err == -ENOENT || err == -EBUSY);
		atomic_fetch_add(&H.unevictables, 1);
	}
	obj_put(o);
}

/*
 * Application-driven reclaim with the isolation API: take a few nodes from
 * a list's tail, free those that the pin protocol allows (clean, written,
 * unpinned, hashed) with rcl_lru_isolated_remove(), choose a list for the
 * others, and put them back.  Deleters of these nodes wait in
 * rcl_lruvec_del_wait() meanwhile; writers may dirty them.
 */
static void cache_isolate(uint64_t r)
{
	unsigned l = (unsigned)(r % NLV), t = (unsigned)((r >> 4) % 2);
	struct rcl_lruvec *lv = &H.lvs[l];
	struct rcl_lru_isolated iso;
	struct rcl_lru_node *node, *next;
	size_t taken;

	rcl_lru_isolated_init(&iso);
	T_EQ(rcl_lruvec_isolate(lv, RCL_LRU_LIST(t, (r >> 8) % 4 == 0),
				1 + (size_t)((r >> 12) % 32), &iso),
	     0);
	taken = iso.nr;
	for (node = rcl_lru_isolated_next(&iso, NULL); node; node = next) {
		struct obj *o = rcl_container_of(node, struct obj, lru);
		struct slot *s;
		unsigned f;

		next = rcl_lru_isolated_next(&iso, node);
		obj_check(o);
		T_EQ(o->lvi, l);
		T_EQ(o->type, t);
		f = rcl_lru_node_flags(node);
		T_CHECK(f & RCL_LRU_F_ISOLATED);
		pthread_mutex_lock(lock_of(o->key));
		s = &H.slots[o->key];
		f = rcl_lru_node_flags(node);
		if (o->hashed && atomic_load(&o->refs) == 1 &&
		    !(f & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK)) &&
		    atomic_load(&o->version) ==
			    atomic_load(&H.stored[o->key]) &&
		    (r >> 20) % 2) {
			/* Nobody can pin, dirty or start writing it now. */
			T_EQ(rcl_lru_isolated_remove(&iso, node), 0);
			T_PEQ(s->o, o);
			s->o = NULL;
			o->hashed = false;
			pthread_mutex_unlock(lock_of(o->key));
			T_EQ(rcl_domain_uncharge(H.dom, o->weight), 0);
			obj_put(o);
			atomic_fetch_add(&H.evicted, 1);
			atomic_fetch_add(&H.iso_freed, 1);
			continue;
		}
		pthread_mutex_unlock(lock_of(o->key));
		if ((r >> 24) % 3 == 0)
			T_EQ(rcl_lru_isolated_set_active(&iso, node,
							 (r >> 26) % 2),
			     0);
	}
	T_CHECK(iso.nr <= taken);
	T_EQ(rcl_lruvec_putback(lv, &iso), 0);
	T_EQ(iso.nr, 0);
	atomic_fetch_add(&H.isolations, 1);
}

/* The two reclaim primitives, called by the application directly. */
static void cache_shrink_lruvec(uint64_t r)
{
	struct rcl_lru_shrink_control sc;
	struct rcl_lruvec *lv = &H.lvs[r % NLV];

	memset(&sc, 0, sizeof(sc));
	sc.type = (unsigned)((r >> 4) % 2);
	sc.nr_to_scan = 1 + (size_t)((r >> 8) % 64);
	sc.priority = (int)((r >> 16) % (RCL_DEF_PRIORITY + 1));
	sc.context = RCL_CTX_CAPABLE;
	if ((r >> 20) % 2) {
		T_EQ(rcl_lruvec_shrink_active(lv, &sc), 0);
	} else {
		tls_in_reclaim++;
		T_EQ(rcl_lruvec_shrink_inactive(lv, &sc), 0);
		tls_in_reclaim--;
		T_CHECK(sc.nr_freed <= sc.nr_taken);
		T_CHECK(sc.nr_taken <= sc.nr_scanned);
	}
}

/* ------------------------------------------------------------------------- */
/* Blob caches: charged memory behind shrinkers                               */
/* ------------------------------------------------------------------------- */

static void cache_check(const struct blob_cache *c, struct rcl_shrinker *s)
{
	if (c->magic != CACHE_MAGIC || !atomic_load(&c->alive)) {
		fprintf(stderr, "shrinker callback on a freed cache %p\n",
			(const void *)c);
		abort();
	}
	T_PEQ(c->s, s);
}

static unsigned long blob_count(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	struct blob_cache *c = sc->priv;
	unsigned long n;

	cache_check(c, s);
	check_bg_thread();
	T_CHECK(c->aware ? sc->partition < NPART : sc->partition == 0);
	n = atomic_load(&c->nr[sc->partition]);
	return n ? n : RCL_SHRINK_EMPTY;
}

static unsigned long blob_scan(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	struct blob_cache *c = sc->priv;
	unsigned p = sc->partition;
	unsigned long n = 0;

	cache_check(c, s);
	check_bg_thread();
	T_CHECK(c->aware ? p < NPART : p == 0);
	T_CHECK(sc->nr_to_scan > 0);
	if (c->needs_io && !(sc->context & RCL_CTX_MAY_IO))
		goto stop;
	if (sc->context & RCL_CTX_MAY_BLOCK)
		pthread_mutex_lock(&c->m);
	else if (pthread_mutex_trylock(&c->m) != 0)
		goto stop;
	tls_in_reclaim++;
	while (n < sc->nr_to_scan && c->head[p]) {
		struct blob *b = c->head[p];

		T_EQ(b->magic, BLOB_MAGIC);
		c->head[p] = b->next;
		memset(b, POISON, sizeof(*b));
		free(b);
		n++;
	}
	atomic_fetch_sub(&c->nr[p], n);
	pthread_mutex_unlock(&c->m);
	sc->nr_scanned = n;
	if (n)
		T_EQ(rcl_domain_uncharge(H.dom, (uint64_t)n * BLOB_W), 0);
	if (tls_debug) {
		atomic_fetch_add(&c->debug_freed, n);
	} else {
		atomic_fetch_add(&c->scan_freed, n);
		atomic_fetch_add(&H.cb_freed, n);
	}
	tls_in_reclaim--;
	cache_check(c, s);
	return n;
stop:
	if (!tls_debug)
		atomic_fetch_add(&c->stops, 1);
	return RCL_SHRINK_STOP;
}

static const struct rcl_shrinker_ops blob_ops = {
	.count_objects = blob_count,
	.scan_objects = blob_scan,
};

static void blob_make(unsigned ci, unsigned p, uint64_t ctx)
{
	struct blob_cache *c = &H.caches[ci];
	struct blob *b;
	int err;

	if (!c->aware)
		p = 0;
	err = rcl_domain_charge(H.dom, BLOB_W, ctx, NULL);
	if (err) {
		T_EQ(err, -ENOMEM);
		atomic_fetch_add(&H.enomem, 1);
		return;
	}
	check_usage();
	b = malloc(sizeof(*b));
	T_CHECK(b);
	b->magic = BLOB_MAGIC;
	pthread_mutex_lock(&c->m);
	b->next = c->head[p];
	c->head[p] = b;
	atomic_fetch_add(&c->nr[p], 1);
	atomic_fetch_add(&c->made, 1);
	pthread_mutex_unlock(&c->m);
}

static bool blob_free_one(unsigned ci, unsigned p)
{
	struct blob_cache *c = &H.caches[ci];
	struct blob *b;

	if (!c->aware)
		p = 0;
	pthread_mutex_lock(&c->m);
	b = c->head[p];
	if (b) {
		c->head[p] = b->next;
		atomic_fetch_sub(&c->nr[p], 1);
		atomic_fetch_add(&c->app_freed, 1);
	}
	pthread_mutex_unlock(&c->m);
	if (!b)
		return false;
	T_EQ(b->magic, BLOB_MAGIC);
	memset(b, POISON, sizeof(*b));
	free(b);
	T_EQ(rcl_domain_uncharge(H.dom, BLOB_W), 0);
	return true;
}

/* ------------------------------------------------------------------------- */
/* Shadows: the drop callback of the shadow limit                             */
/* ------------------------------------------------------------------------- */

static unsigned long shadow_drop(void *priv, unsigned long nr)
{
	unsigned long dropped = 0, tries;

	T_PEQ(priv, &H);
	T_CHECK(atomic_load(&H.limit_alive));
	check_bg_thread();
	tls_in_reclaim++;
	for (tries = 0; tries < 4 * nr + 64 && dropped < nr; tries++) {
		unsigned key = atomic_fetch_add(&H.shadow_cursor, 1) % KEYS;

		pthread_mutex_lock(lock_of(key));
		if (H.slots[key].shadow) {
			T_CHECK(rcl_shadow_is_valid(H.slots[key].shadow));
			T_CHECK(!H.slots[key].o);
			H.slots[key].shadow = 0;
			rcl_shadow_limit_add(H.limit, -1);
			dropped++;
		}
		pthread_mutex_unlock(lock_of(key));
	}
	atomic_fetch_add(&H.shadows_dropped, dropped);
	if (!tls_debug)
		atomic_fetch_add(&H.cb_freed, dropped);
	tls_in_reclaim--;
	T_CHECK(atomic_load(&H.limit_alive));
	return dropped;
}

static const struct rcl_shadow_ops shadow_ops = { .drop = shadow_drop };

/* ------------------------------------------------------------------------- */
/* The store: write and sync callbacks of the flusher                         */
/* ------------------------------------------------------------------------- */

static int store_write(void *priv, struct rcl_lru_node *node)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);
	unsigned f = rcl_lru_node_flags(node);
	unsigned long long v, old;

	T_PEQ(priv, &H);
	/* Never in reclaim, never in a worker. */
	T_EQ(tls_in_reclaim, 0);
	T_CHECK(!tls_worker);
	if (!tls_app)	/* the flusher thread, not stopped yet */
		T_CHECK(!atomic_load(&H.fl_stopped));
	obj_check(o);
	/* Pinned by the writeback: alive and on its lruvec. */
	T_CHECK(f & RCL_LRU_F_WRITEBACK);
	T_CHECK(f &
		(RCL_LRU_F_PENDING | RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED));
	T_EQ(atomic_load(&node->__flags) >> 16, rcl_lruvec_id(&H.lvs[o->lvi]));
	v = atomic_load(&o->version);
	/* Transient failures (a retry succeeds). */
	if (atomic_load(&H.inject_errors) &&
	    atomic_fetch_add(&H.write_attempts, 1) % 97 == 96) {
		atomic_fetch_add(&H.write_errors, 1);
		return -EIO;
	}
	old = atomic_exchange(&H.stored[o->key], v);
	T_CHECK(v >= old);	/* in order */
	atomic_fetch_add(&H.writes, 1);
	obj_check(o);
	return 0;
}

static int store_sync(void *priv)
{
	long n = atomic_fetch_add(&H.syncs, 1);

	T_PEQ(priv, &H);
	T_EQ(tls_in_reclaim, 0);
	T_CHECK(!tls_worker);
	if (!tls_app)
		T_CHECK(!atomic_load(&H.fl_stopped));
	if (atomic_load(&H.inject_errors) && n % 211 == 210) {
		atomic_fetch_add(&H.sync_errors, 1);
		return -EIO;
	}
	return 0;
}

static const struct rcl_writeback_ops store_ops = { store_write, store_sync };

/* ------------------------------------------------------------------------- */
/* Setup, the final check, teardown                                           */
/* ------------------------------------------------------------------------- */

static void harness_setup(const struct hcfg *cfg)
{
	struct rcl_domain_config dcfg = {
		.budget = cfg->budget_lo,
		.nr_partitions = NPART,
		.mode = cfg->mode,
		.dirty_timeout_ns = cfg->dirty_timeout_ns,
	};
	struct rcl_lruvec_config lcfg = { .ops = &obj_ops, .priv = &H };
	unsigned i, l, p;

	memset(&H, 0, sizeof(H));
	H.cfg = *cfg;
	H.cfg.start_ns = now_ns();
	tls_app = true;
	atomic_store(&H.fl_stopped, !cfg->flusher);
	T_EQ(rcl_domain_new(&dcfg, &H.dom), 0);
	for (l = 0; l < NLV; l++) {
		T_EQ(rcl_lruvec_init(&H.lvs[l], &lcfg), 0);
		T_EQ(rcl_domain_attach(H.dom, &H.lvs[l], l % NPART), 0);
	}
	for (i = 0; i < NBUCKET; i++)
		T_EQ(pthread_mutex_init(&H.locks[i], NULL), 0);
	for (i = 0; i < NCACHE; i++) {
		struct blob_cache *c = &H.caches[i];
		struct rcl_shrinker_config scfg = {
			.ops = &blob_ops,
			.priv = c,
			.name = i ? "blobs-io" : "blobs-aware",
			.seeks = RCL_DEFAULT_SEEKS,
			.flags = i ? 0 : RCL_SHRINKER_PARTITION_AWARE,
		};

		c->magic = CACHE_MAGIC;
		c->idx = i;
		c->aware = i == 0;
		c->needs_io = i == 1;
		T_EQ(pthread_mutex_init(&c->m, NULL), 0);
		for (p = 0; p < NPART; p++)
			c->head[p] = NULL;
		T_EQ(rcl_shrinker_new(rcl_domain_registry(H.dom), &scfg,
				      &c->s),
		     0);
		atomic_store(&c->alive, true);
		T_EQ(rcl_shrinker_register(c->s), 0);
		T_EQ(rcl_shrinker_register(c->s), -EBUSY);
	}
	atomic_store(&H.limit_alive, true);
	T_EQ(rcl_shadow_limit_new(rcl_domain_registry(H.dom), SHADOW_QUOTA,
				  &shadow_ops, &H, &H.limit),
	     0);
	atomic_store(&H.inject_errors, cfg->errors);
	T_EQ(rcl_domain_reclaimer_start(H.dom), 0);
	if (cfg->flusher)
		T_EQ(rcl_domain_flusher_start(H.dom, &store_ops, &H,
					      FLUSH_BATCH),
		     0);
}

/* Stop the background threads and write everything back. */
static void harness_quiesce(void)
{
	uint64_t written = 0;
	unsigned l;

	T_EQ(rcl_domain_reclaimer_stop(H.dom), 0);
	atomic_store(&H.rc_stopped, true);
	T_EQ(rcl_domain_flusher_stop(H.dom), 0);
	atomic_store(&H.fl_stopped, true);
	atomic_store(&H.inject_errors, false);
	T_EQ(rcl_domain_writeback_all(H.dom, &store_ops, &H, &written), 0);
	rcl_lru_drain_local();
	for (l = 0; l < NLV; l++)
		T_EQ(rcl_lruvec_drain(&H.lvs[l]), 0);
	print_message("%s: final writeback_all wrote %llu\n", H.cfg.name,
		      (unsigned long long)written);
}

/* Visit every node of every list of @lv: each must be a live object of ours. */
static uint64_t walk_lists(unsigned l)
{
	struct rcl_lruvec *lv = &H.lvs[l];
	uint64_t n = 0;
	unsigned list;

	for (list = 0; list < RCL_LRU_NR_LISTS; list++) {
		struct rcl_lru_node *head = &lv->__lists[list].head, *node;

		for (node = head->__next; node != head; node = node->__next) {
			struct obj *o = rcl_container_of(node, struct obj, lru);
			unsigned f = rcl_lru_node_flags(node);

			obj_check(o);
			T_EQ(o->lvi, l);
			T_CHECK(o->hashed);
			T_PEQ(H.slots[o->key].o, o);
			T_EQ(rcl_lru_node_type(node), o->type);
			T_EQ(f & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK |
				  RCL_LRU_F_PENDING | RCL_LRU_F_ISOLATED),
			     0);
			T_CHECK(f & RCL_LRU_F_LISTED);
			o->seen++;
			n++;
		}
	}
	return n;
}

static void harness_check(void)
{
	uint64_t nobj[NLV] = { 0 }, weight[NLV] = { 0 }, blobs_w = 0;
	uint64_t shadows = 0, cached = 0;
	struct rcl_dirty_stats ds;
	struct rcl_vmstat v;
	unsigned i, l, p;

	/* Each list is well formed and its counts equal its contents. */
	for (l = 0; l < NLV; l++) {
		long n = lru_check_invariants(&H.lvs[l]);

		T_CHECK(n >= 0);
		T_EQ(walk_lists(l), n);
		T_EQ(rcl_lruvec_nr_isolated(&H.lvs[l]), 0);
		/* Every unevictable section ended with an unmark. */
		T_EQ(rcl_lruvec_count(&H.lvs[l], RCL_LRU_UNEVICTABLE, NULL), 0);
		T_EQ(rcl_lruvec_dirty_stats(&H.lvs[l], &ds), 0);
		T_EQ(ds.nr_dirty + ds.weight_dirty + ds.nr_writeback +
			     ds.weight_writeback,
		     0);
	}
	/* Each object of the index is on exactly one list (seen once). */
	for (i = 0; i < KEYS; i++) {
		struct slot *s = &H.slots[i];
		struct obj *o = s->o;

		T_CHECK(!s->deleting);
		if (s->shadow) {
			T_CHECK(!o);
			T_CHECK(rcl_shadow_is_valid(s->shadow));
			shadows++;
		}
		if (!o)
			continue;
		obj_check(o);
		T_EQ(o->key, i);
		T_EQ(o->seen, 1);
		T_EQ(atomic_load(&o->refs), 1);
		/* Nothing lost: the last version is in the store. */
		T_EQ(atomic_load(&o->version), atomic_load(&H.stored[i]));
		nobj[o->lvi]++;
		weight[o->lvi] += o->weight;
		cached++;
	}
	for (l = 0; l < NLV; l++) {
		uint64_t w = 0, sum = 0;
		unsigned list;
		size_t n = 0;

		for (list = 0; list < RCL_LRU_NR_LISTS; list++) {
			n += rcl_lruvec_count(&H.lvs[l], list, &w);
			sum += w;
		}
		T_EQ(n, nobj[l]);
		T_EQ(sum, weight[l]);
	}
	/* Blob caches: counts equal contents. */
	for (i = 0; i < NCACHE; i++) {
		struct blob_cache *c = &H.caches[i];
		struct rcl_shrinker_stats st;
		unsigned long total = 0;

		for (p = 0; p < NPART; p++) {
			struct blob *b;
			unsigned long n = 0;

			for (b = c->head[p]; b; b = b->next) {
				T_EQ(b->magic, BLOB_MAGIC);
				n++;
			}
			T_EQ(n, atomic_load(&c->nr[p]));
			total += n;
		}
		T_EQ(atomic_load(&c->made),
		     atomic_load(&c->scan_freed) +
			     atomic_load(&c->debug_freed) +
			     atomic_load(&c->app_freed) + total);
		blobs_w += (uint64_t)total * BLOB_W;
		/* The library's counters are what the callbacks returned. */
		T_EQ(rcl_shrinker_stats(c->s, &st), 0);
		T_EQ(st.freed, atomic_load(&c->scan_freed));
		T_EQ(st.stops, atomic_load(&c->stops));
	}
	/* Usage is the sum of what is charged, exactly. */
	T_EQ(rcl_domain_usage(H.dom), weight[0] + weight[1] + blobs_w);
	T_EQ(rcl_domain_dirty_stats(H.dom, &ds), 0);
	T_EQ(ds.nr_dirty, 0);
	T_EQ(ds.weight_dirty, 0);
	T_EQ(ds.nr_writeback, 0);
	T_EQ(ds.weight_writeback, 0);
	T_EQ(rcl_shadow_limit_count(H.limit), shadows);
	T_EQ(atomic_load(&H.shadows_stored),
	     atomic_load(&H.shadows_dropped) +
		     atomic_load(&H.shadows_consumed) + (long)shadows);
	T_EQ(atomic_load(&H.created),
	     atomic_load(&H.evicted) + atomic_load(&H.deleted) + (long)cached);
	T_EQ(atomic_load(&H.released),
	     atomic_load(&H.evicted) + atomic_load(&H.deleted) +
		     atomic_load(&H.dup));
	T_EQ(rcl_domain_vmstat(H.dom, &v), 0);
	T_EQ(v.writes_from_reclaim, 0);
	/* Shrinker accounting: freed as reported == freed by the callbacks. */
	T_EQ(atomic_load(&H.cb_freed),
	     v.slabs_freed + atomic_load(&H.reported_freed));

	print_message(
		"%s: created %ld (dup %ld), evicted %ld (busy %ld, "
		"activate %ld), deleted %ld, hits %ld, misses %ld, "
		"-ENOMEM %ld; modified %ld (deleted meanwhile %ld), "
		"balance_dirty timeouts %ld; refaults %ld (activate %ld, "
		"restore %ld), shadows %ld stored / %ld dropped / %ld "
		"consumed; rotates %ld, unevictable sections %ld, explicit "
		"reclaims %ld, isolations %ld (freed %ld), flushes %ld "
		"(-ENODEV %ld); store: %ld writes, %ld write errors, %ld "
		"syncs, %ld sync errors; cached %llu + %llu, blobs %llu "
		"weight (%ld made by evictions)\n",
		H.cfg.name, atomic_load(&H.created), atomic_load(&H.dup),
		atomic_load(&H.evicted), atomic_load(&H.evict_busy),
		atomic_load(&H.evict_activate), atomic_load(&H.deleted),
		atomic_load(&H.hits), atomic_load(&H.misses),
		atomic_load(&H.enomem), atomic_load(&H.modified),
		atomic_load(&H.modify_enoent), atomic_load(&H.balance_timeouts),
		atomic_load(&H.refaults), atomic_load(&H.refault_activate),
		atomic_load(&H.refault_restore), atomic_load(&H.shadows_stored),
		atomic_load(&H.shadows_dropped),
		atomic_load(&H.shadows_consumed),
		atomic_load(&H.rotates), atomic_load(&H.unevictables),
		atomic_load(&H.reclaims), atomic_load(&H.isolations),
		atomic_load(&H.iso_freed), atomic_load(&H.flushes),
		atomic_load(&H.flush_enodev), atomic_load(&H.writes),
		atomic_load(&H.write_errors), atomic_load(&H.syncs),
		atomic_load(&H.sync_errors), (unsigned long long)nobj[0],
		(unsigned long long)nobj[1], (unsigned long long)blobs_w,
		atomic_load(&H.evict_blobs));
	print_message(
		"%s: vmstat pgsteal %llu bg / %llu direct, allocstall %llu, "
		"pageoutrun %llu, slabs_freed %llu, nr_dirty_scanned %llu, "
		"flush_requests %llu (vmscan %llu), writes_flusher %llu, "
		"dirty_throttled %llu, writeback_throttled %llu, "
		"charge_failures %llu, overshoots %llu\n",
		H.cfg.name, (unsigned long long)v.pgsteal_kswapd,
		(unsigned long long)v.pgsteal_direct,
		(unsigned long long)v.allocstall,
		(unsigned long long)v.pageoutrun,
		(unsigned long long)v.slabs_freed,
		(unsigned long long)v.nr_dirty_scanned,
		(unsigned long long)v.flush_requests,
		(unsigned long long)v.flush_requests_vmscan,
		(unsigned long long)v.writes_flusher,
		(unsigned long long)v.dirty_throttled,
		(unsigned long long)v.writeback_throttled,
		(unsigned long long)v.charge_failures,
		(unsigned long long)v.charge_overshoots);

	/* Data lost (checked after the rest, so the counts above print). */
	if (atomic_load(&H.evict_dirty) || atomic_load(&H.evict_unwritten))
		print_message("%s: evict callback met %ld dirty objects "
			      "and %ld objects with unwritten versions\n",
			      H.cfg.name, atomic_load(&H.evict_dirty),
			      atomic_load(&H.evict_unwritten));
	T_EQ(atomic_load(&H.evict_dirty), 0);
	T_EQ(atomic_load(&H.evict_unwritten), 0);
}

/* Tear everything down through the application's own paths. */
static void harness_teardown(void)
{
	unsigned i, l, p;

	for (i = 0; i < KEYS; i++)
		cache_delete(i);
	for (i = 0; i < KEYS; i++) {
		if (H.slots[i].shadow) {
			H.slots[i].shadow = 0;
			rcl_shadow_limit_add(H.limit, -1);
		}
	}
	T_EQ(rcl_shadow_limit_count(H.limit), 0);
	for (i = 0; i < NCACHE; i++)
		for (p = 0; p < NPART; p++)
			while (blob_free_one(i, p))
				;
	T_EQ(rcl_domain_usage(H.dom), 0);
	for (i = 0; i < NCACHE; i++) {
		T_EQ(rcl_shrinker_free(H.caches[i].s), 0);
		atomic_store(&H.caches[i].alive, false);
		pthread_mutex_destroy(&H.caches[i].m);
	}
	T_EQ(rcl_shadow_limit_free(H.limit), 0);
	atomic_store(&H.limit_alive, false);
	for (l = 0; l < NLV; l++) {
		T_EQ(lru_check_invariants(&H.lvs[l]), 0);
		T_EQ(rcl_domain_detach(H.dom, &H.lvs[l]), 0);
		T_EQ(rcl_lruvec_destroy(&H.lvs[l]), 0);
	}
	T_EQ(rcl_domain_free(H.dom), 0);
	for (i = 0; i < NBUCKET; i++)
		pthread_mutex_destroy(&H.locks[i]);

	/* No library write reached a node it no longer owned. */
	grave_flush();
	if (!HAVE_ASAN)
		T_EQ(atomic_load(&H.graves_freed), atomic_load(&H.released));
	print_message("%s: %.2f s\n", H.cfg.name,
		      (double)(now_ns() - H.cfg.start_ns) / 1e9);
}

/* ------------------------------------------------------------------------- */
/* Workers                                                                    */
/* ------------------------------------------------------------------------- */

struct worker {
	pthread_t tid;
	unsigned idx;
	unsigned ops;
};

static void worker_op(uint64_t *rng)
{
	uint64_t r = rng_next(rng);
	unsigned op = (unsigned)((r >> 40) % 1000);
	/* 80 % of accesses go to 20 % of the keys. */
	unsigned key = (r % 10 < 8) ? (unsigned)((r >> 8) % (KEYS / 5))
				    : (unsigned)((r >> 8) % KEYS);
	/* A quarter of the charges may not block (no direct reclaim). */
	uint64_t ctx = (r >> 20) % 4 ? RCL_CTX_CAPABLE : RCL_CTX_MAY_IO;
	uint64_t r2 = rng_next(rng);
	int err;

	if (op < 350) {
		cache_get(key, ctx, r2);
	} else if (op < 550) {
		if (H.cfg.writes)
			cache_write(key, ctx, r2);
		else
			cache_get(key, ctx, r2);
	} else if (op < 600) {
		cache_delete(key);
	} else if (op < 650) {
		blob_make((unsigned)(r2 % NCACHE),
			  (unsigned)((r2 >> 8) % NPART), ctx);
	} else if (op < 680) {
		blob_free_one((unsigned)(r2 % NCACHE),
			      (unsigned)((r2 >> 8) % NPART));
	} else if (op < 690) {
		struct rcl_reclaim_result res;

		tls_in_reclaim++;
		T_EQ(rcl_domain_reclaim(H.dom, 1 + r2 % 64,
					(r2 >> 8) % 2 ? RCL_CTX_CAPABLE
						      : RCL_CTX_MAY_BLOCK,
					&res),
		     0);
		tls_in_reclaim--;
		T_CHECK(res.priority >= 0 && res.priority <= RCL_DEF_PRIORITY);
		atomic_fetch_add(&H.reclaims, 1);
	} else if (op < 710) {
		cache_age(key, r2);
	} else if (op < 720) {
		cache_unevictable(key, r2);
	} else if (op < 725) {
		rcl_lru_drain_local();
		atomic_fetch_add(&H.drains, 1);
	} else if (op < 730) {
		err = rcl_domain_flush(H.dom, r2 % 2 ? 0 : 32);
		if (err) {
			T_EQ(err, -ENODEV);
			T_CHECK(!H.cfg.flusher || H.cfg.flusher_cycles);
			atomic_fetch_add(&H.flush_enodev, 1);
		} else {
			atomic_fetch_add(&H.flushes, 1);
		}
	} else if (op < 735) {
		cache_isolate(r2);
	} else if (op < 740) {
		cache_shrink_lruvec(r2);
	} else if (op < 745) {
		err = rcl_domain_balance_dirty(H.dom, ctx);
		T_CHECK(err == 0 || err == -ETIMEDOUT);
		if (err)
			atomic_fetch_add(&H.balance_timeouts, 1);
	} else {
		cache_get(key, ctx, r2);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0xa11a11ull * (w->idx + 1);
	unsigned i;

	tls_worker = true;
	tls_app = true;
	/* At least @ops operations, and on until the control thread is done. */
	for (i = 0; i < w->ops || !atomic_load(&H.control_done); i++)
		worker_op(&rng);
	return NULL;
}

static void start_workers(struct worker *w, unsigned n, unsigned ops)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		w[i].idx = i;
		w[i].ops = ops;
		T_EQ(pthread_create(&w[i].tid, NULL, worker_main, &w[i]), 0);
	}
}

static void join_workers(struct worker *w, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		T_EQ(pthread_join(w[i].tid, NULL), 0);
}

/* One round of reads of every statistic (values are only sanity-checked). */
static void read_stats(uint64_t r)
{
	char buf[4096];
	struct rcl_vmstat v;
	struct rcl_dirty_stats ds;
	struct rcl_workingset_stats ws;
	struct rcl_lruvec_type_stats ts;
	struct rcl_shrinker_stats st;
	struct rcl_watermarks wm;
	unsigned long backlog;
	unsigned l = (unsigned)(r % NLV), t = (unsigned)((r >> 4) % 2);
	int len;

	len = rcl_domain_vmstat_format(H.dom, buf, sizeof(buf));
	T_CHECK(len > 0);
	T_EQ(rcl_domain_vmstat(H.dom, &v), 0);
	T_EQ(rcl_domain_dirty_stats(H.dom, &ds), 0);
	T_EQ(rcl_domain_watermarks(H.dom, &wm), 0);
	T_CHECK(wm.min < wm.low && wm.low < wm.high);
	T_EQ(rcl_lruvec_workingset_stats(&H.lvs[l], &ws), 0);
	T_CHECK(ws.activate <= ws.refault);
	T_EQ(rcl_lruvec_stats(&H.lvs[l], t, &ts), 0);
	T_EQ(rcl_lruvec_dirty_stats(&H.lvs[l], &ds), 0);
	(void)rcl_lruvec_inactive_is_low(&H.lvs[l], t);
	(void)rcl_lruvec_inactive_target(&H.lvs[l], t);
	T_CHECK(rcl_lruvec_inactive_ratio(&H.lvs[l], t) >= 1);
	(void)rcl_lruvec_count(&H.lvs[l], RCL_LRU_LIST(t, r & 1), NULL);
	(void)rcl_lruvec_nr_isolated(&H.lvs[l]);
	T_EQ(rcl_shrinker_stats(H.caches[r % NCACHE].s, &st), 0);
	T_EQ(rcl_shrinker_backlog(H.caches[0].s, (unsigned)(r % NPART),
				  &backlog),
	     0);
	(void)rcl_shadow_limit_count(H.limit);
}

/* Shrink the whole registry once, as a walker, and account for it. */
static void registry_shrink(uint64_t r)
{
	struct rcl_shrink_result res = { 0 };
	static const uint64_t ctxs[4] = { RCL_CTX_CAPABLE, RCL_CTX_MAY_BLOCK,
					  RCL_CTX_MAY_IO, 0 };
	int prio = (int)((r >> 8) % (RCL_DEF_PRIORITY + 1));

	T_EQ(rcl_shrinker_registry_shrink(rcl_domain_registry(H.dom),
					  (unsigned)(r % NPART), prio,
					  ctxs[(r >> 16) % 4], &res),
	     0);
	atomic_fetch_add(&H.reported_freed, res.freed);
	atomic_fetch_add(&H.ctl_shrinks, 1);
}

/* ------------------------------------------------------------------------- */
/* Test 1: everything at once                                                 */
/* ------------------------------------------------------------------------- */

#define T1_WORKERS 4
#define T1_CONTROL_OPS 3000

static void *control_mixed(void *arg)
{
	uint64_t rng = 0xc0c0c0ull;
	unsigned i;

	(void)arg;
	tls_app = true;
	for (i = 0; i < T1_CONTROL_OPS; i++) {
		uint64_t r = rng_next(&rng), b;
		struct rcl_watermarks wm;
		struct rcl_shrink_result res = { 0 };
		unsigned long cnt, freed = 0, scanned = 0;
		struct blob_cache *c = &H.caches[r % NCACHE];
		int err;

		switch (i % 10) {
		case 0:		/* a new budget (this thread alone sets it) */
			b = H.cfg.budget_lo +
			    (r >> 8) % (H.cfg.budget_hi - H.cfg.budget_lo);
			T_EQ(rcl_domain_set_budget(H.dom, b), 0);
			T_EQ(rcl_domain_budget(H.dom), b);
			atomic_fetch_add(&H.budgets, 1);
			break;
		case 1:		/* explicit, wider watermarks */
			b = rcl_domain_budget(H.dom);
			wm.min = b / 200;
			wm.low = b / 50;
			wm.high = b / 20;
			T_EQ(rcl_domain_set_watermarks(H.dom, &wm), 0);
			break;
		case 2:
			T_EQ(rcl_domain_wakeup(H.dom), 0);
			break;
		case 3:
			registry_shrink(r);
			break;
		case 4:
			T_EQ(rcl_lruvec_drain(&H.lvs[r % NLV]), 0);
			if (i % 50 == 4) {
				/*
				 * Detach the second lruvec and attach it
				 * again: its dirty and writeback counts move
				 * out of the domain's sums and back, while
				 * writers dirty its objects and the flusher
				 * writes them.
				 */
				T_EQ(rcl_domain_detach(H.dom, &H.lvs[1]), 0);
				pause_a_little(&rng, 4000);
				T_EQ(rcl_domain_attach(H.dom, &H.lvs[1], 1), 0);
				atomic_fetch_add(&H.detaches, 1);
			}
			break;
		case 5:
			err = rcl_domain_flush(H.dom, (r >> 8) % 2 ? 0 : 16);
			T_EQ(err, 0);
			if (i % 100 == 5) {
				/*
				 * Alongside the flusher thread: it waits for
				 * that thread's batch, which may outlast the
				 * bound of the wait on a loaded machine
				 * (-ETIMEDOUT, documented).
				 */
				err = rcl_domain_writeback_all(
					H.dom, &store_ops, &H, NULL);
				T_CHECK(err == 0 || err == -EIO ||
					err == -ETIMEDOUT);
				atomic_fetch_add(&H.ctl_writebacks, 1);
			}
			break;
		case 6:
			T_EQ(rcl_shrinker_shrink(c->s,
						 (unsigned)((r >> 8) % NPART),
						 (int)((r >> 16) % 13),
						 RCL_CTX_CAPABLE, &res),
			     0);
			atomic_fetch_add(&H.reported_freed, res.freed);
			break;
		case 7:
			read_stats(r);
			break;
		case 8:
			b = (r >> 8) % 201;
			T_EQ(rcl_domain_set_swappiness(H.dom, (unsigned)b), 0);
			break;
		default:	/* the debug entry points: no counter moves */
			T_EQ(rcl_shrinker_debug_count(c->s, 0, RCL_CTX_CAPABLE,
						      &cnt),
			     0);
			tls_debug = true;
			T_EQ(rcl_shrinker_debug_scan(c->s, 0, 1 + (r >> 8) % 8,
						     RCL_CTX_CAPABLE, &freed,
						     &scanned),
			     0);
			tls_debug = false;
			T_CHECK(freed == RCL_SHRINK_STOP || freed <= 8);
			break;
		}
		pause_a_little(&rng, 4000);
		atomic_fetch_add(&H.control_cycles, 1);
	}
	atomic_store(&H.control_done, true);
	return NULL;
}

static void test_all_stress_everything(void **state)
{
	const struct hcfg cfg = {
		.name = "everything",
		.mode = RCL_CHARGE_STRICT,
		.budget_lo = 30000,
		.budget_hi = 60000,
		.nworkers = T1_WORKERS,
		.ops = ops_per_thread(200000),
		.writes = true,
		.flusher = true,
		.errors = true,
		.dirty_timeout_ns = 5 * RCL_NSEC_PER_MSEC,
	};
	struct worker w[T1_WORKERS];
	struct rcl_vmstat v;
	pthread_t control;

	(void)state;
	harness_setup(&cfg);
	T_EQ(pthread_create(&control, NULL, control_mixed, NULL), 0);
	start_workers(w, cfg.nworkers, cfg.ops);
	join_workers(w, cfg.nworkers);
	T_EQ(pthread_join(control, NULL), 0);
	harness_quiesce();
	harness_check();

	/* Every path ran. */
	T_EQ(rcl_domain_vmstat(H.dom, &v), 0);
	T_CHECK(atomic_load(&H.evicted) > 0);
	T_CHECK(atomic_load(&H.deleted) > 0);
	T_CHECK(atomic_load(&H.modified) > 0);
	T_CHECK(atomic_load(&H.writes) > 0);
	T_CHECK(atomic_load(&H.refaults) > 0);
	T_CHECK(atomic_load(&H.cb_freed) > 0);
	/* The reclaimer ran (what it frees depends on the scheduler: with
	 * four workers reclaiming directly on two cores, often only slabs). */
	T_CHECK(v.pageoutrun > 0);
	T_CHECK(v.pgsteal_direct > 0);
	T_CHECK(atomic_load(&H.iso_freed) > 0);
	T_EQ(atomic_load(&H.detaches), T1_CONTROL_OPS / 50);
	T_CHECK(v.writes_flusher > 0);
	harness_teardown();
}

/* ------------------------------------------------------------------------- */
/* Test 2: the background threads stopped and started in a loop              */
/* ------------------------------------------------------------------------- */

#define RESTART_CYCLES 200
#define T2_WORKERS 4

static void *control_reclaimer_cycles(void *arg)
{
	uint64_t rng = 0x5ca1ab1eull;
	unsigned i;

	(void)arg;
	tls_app = true;
	for (i = 0; i < RESTART_CYCLES; i++) {
		uint64_t r = rng_next(&rng);

		T_EQ(rcl_domain_reclaimer_stop(H.dom), 0);
		atomic_store(&H.rc_stopped, true);
		/* Not running: 0. */
		T_EQ(rcl_domain_reclaimer_stop(H.dom), 0);
		pause_a_little(&rng, 20000);
		if (r % 4 == 0) {
			/* No background reclaimer: set_budget reclaims. */
			uint64_t span = H.cfg.budget_hi - H.cfg.budget_lo;
			uint64_t b = H.cfg.budget_lo + (r >> 8) % span;

			T_EQ(rcl_domain_set_budget(H.dom, b), 0);
		}
		atomic_store(&H.rc_stopped, false);
		T_EQ(rcl_domain_reclaimer_start(H.dom), 0);
		T_EQ(rcl_domain_reclaimer_start(H.dom), -EBUSY);
		if (r % 8 == 2)
			registry_shrink(r >> 4);
		if (r % 2) {
			/*
			 * Wake it and let it get the CPU (a bounded number of
			 * yields), so that the stop that follows sometimes
			 * meets a pass in progress rather than a thread that
			 * never ran.
			 */
			struct rcl_vmstat v0, v1;
			unsigned y;

			T_EQ(rcl_domain_vmstat(H.dom, &v0), 0);
			T_EQ(rcl_domain_wakeup(H.dom), 0);
			for (y = 0; y < 200; y++) {
				T_EQ(rcl_domain_vmstat(H.dom, &v1), 0);
				if (v1.pageoutrun != v0.pageoutrun)
					break;
				sched_yield();
			}
		}
		pause_a_little(&rng, 20000);
		atomic_fetch_add(&H.control_cycles, 1);
	}
	atomic_store(&H.control_done, true);
	return NULL;
}

static void test_all_stress_reclaimer_restart(void **state)
{
	const struct hcfg cfg = {
		.name = "reclaimer-restart",
		.mode = RCL_CHARGE_STRICT,
		.budget_lo = 30000,
		.budget_hi = 50000,
		.nworkers = T2_WORKERS,
		.ops = ops_per_thread(200000) / 5,
	};
	struct worker w[T2_WORKERS];
	struct rcl_vmstat v;
	pthread_t control;

	(void)state;
	harness_setup(&cfg);
	T_EQ(pthread_create(&control, NULL, control_reclaimer_cycles, NULL), 0);
	start_workers(w, cfg.nworkers, cfg.ops);
	join_workers(w, cfg.nworkers);
	T_EQ(pthread_join(control, NULL), 0);
	T_EQ(atomic_load(&H.control_cycles), RESTART_CYCLES);
	harness_quiesce();
	harness_check();
	T_EQ(rcl_domain_vmstat(H.dom, &v), 0);
	T_CHECK(atomic_load(&H.evicted) > 0);
	T_CHECK(v.pageoutrun > 0);
	harness_teardown();
}

static void *control_flusher_cycles(void *arg)
{
	uint64_t rng = 0xf1054e5ull;
	unsigned i;

	(void)arg;
	tls_app = true;
	for (i = 0; i < RESTART_CYCLES; i++) {
		uint64_t r = rng_next(&rng);
		uint64_t written = 0;
		int err;

		T_EQ(rcl_domain_flusher_stop(H.dom), 0);
		atomic_store(&H.fl_stopped, true);
		/* Not running: 0. */
		T_EQ(rcl_domain_flusher_stop(H.dom), 0);
		if (r % 4 == 0) {
			/* Writers go on: some writes may fail (-EIO). */
			err = rcl_domain_writeback_all(H.dom, &store_ops, &H,
						       &written);
			T_CHECK(err == 0 || err == -EIO);
		}
		pause_a_little(&rng, 20000);
		atomic_store(&H.fl_stopped, false);
		T_EQ(rcl_domain_flusher_start(H.dom, &store_ops, &H,
					      1 + (unsigned)((r >> 8) % 32)),
		     0);
		T_EQ(rcl_domain_flusher_start(H.dom, &store_ops, &H, 0),
		     -EBUSY);
		if (r % 8 == 1)
			T_EQ(rcl_domain_flush(H.dom, 0), 0);
		pause_a_little(&rng, 20000);
		atomic_fetch_add(&H.control_cycles, 1);
	}
	atomic_store(&H.control_done, true);
	return NULL;
}

static void test_all_stress_flusher_restart(void **state)
{
	const struct hcfg cfg = {
		.name = "flusher-restart",
		.mode = RCL_CHARGE_SOFT,
		.budget_lo = 40000,
		.budget_hi = 40001,
		.nworkers = T2_WORKERS,
		.ops = ops_per_thread(200000) / 5,
		.writes = true,
		.flusher = true,
		.flusher_cycles = true,
		.errors = true,
		.dirty_timeout_ns = 1 * RCL_NSEC_PER_MSEC,
	};
	struct worker w[T2_WORKERS];
	pthread_t control;

	(void)state;
	harness_setup(&cfg);
	T_EQ(pthread_create(&control, NULL, control_flusher_cycles, NULL), 0);
	start_workers(w, cfg.nworkers, cfg.ops);
	join_workers(w, cfg.nworkers);
	T_EQ(pthread_join(control, NULL), 0);
	T_EQ(atomic_load(&H.control_cycles), RESTART_CYCLES);
	harness_quiesce();
	harness_check();
	T_CHECK(atomic_load(&H.modified) > 0);
	T_CHECK(atomic_load(&H.writes) > 0);
	harness_teardown();
}

/* ------------------------------------------------------------------------- */
/* Test 3: shrinker churn during reclaim                                      */
/* ------------------------------------------------------------------------- */

#define CHURNERS 2
#define CHURN_CYCLES 5000	/* per churner: 10,000 in all */
#define T3_WORKERS 2
#define T3_WALKERS 2

enum { CH_NEW = 0, CH_REGISTERED = 1, CH_FREED = 2 };

/* One churned shrinker (or shadow limit) and its cache of charged items. */
struct churn {
	uint64_t magic;
	atomic_int state;
	atomic_int in_cb;
	struct rcl_shrinker *self;
	_Atomic(struct rcl_shadow_limit *) limit;
	bool aware;
	pthread_mutex_t m;
	unsigned long items[NPART];	/* m */
	atomic_ulong nr[NPART];
	atomic_ulong made, scan_freed, debug_freed;
	struct churn *grave_next;
};

static _Atomic(struct churn *) churn_grave;
static atomic_long churn_cycles, churn_deadlk, churn_calls, churn_scans;

static void churn_enter(struct churn *c, struct rcl_shrinker *s)
{
	T_EQ(c->magic, CHURN_MAGIC);
	check_bg_thread();
	atomic_fetch_add(&c->in_cb, 1);
	if (atomic_load(&c->state) != CH_REGISTERED) {
		fprintf(stderr, "churned shrinker %p: callback in state %d\n",
			(void *)c, atomic_load(&c->state));
		abort();
	}
	if (s)
		T_PEQ(c->self, s);
	atomic_fetch_add(&churn_calls, 1);
}

static void churn_exit(struct churn *c)
{
	static atomic_uint spin;
	unsigned i, n = rng_next(&tls_rng) % 16 ? 64 : 4000;

	/* Widen the window in which a free could return too early. */
	for (i = 0; i < n; i++)
		(void)atomic_load_explicit(&spin, memory_order_relaxed);
	if (atomic_load(&c->state) != CH_REGISTERED) {
		fprintf(stderr, "churned shrinker %p: free returned during a "
				"callback\n",
			(void *)c);
		abort();
	}
	atomic_fetch_sub(&c->in_cb, 1);
}

static unsigned long churn_count(struct rcl_shrinker *s,
				 struct rcl_shrink_control *sc)
{
	struct churn *c = sc->priv;
	unsigned long n;

	churn_enter(c, s);
	T_CHECK(c->aware ? sc->partition < NPART : sc->partition == 0);
	n = atomic_load(&c->nr[sc->partition]);
	churn_exit(c);
	return n ? n : RCL_SHRINK_EMPTY;
}

static unsigned long churn_scan(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	struct churn *c = sc->priv;
	unsigned p = sc->partition;
	unsigned long n;

	churn_enter(c, s);
	/* A callback may not free its own shrinker. */
	if (atomic_fetch_add(&churn_scans, 1) % 16 == 0) {
		T_EQ(rcl_shrinker_free(s), -EDEADLK);
		atomic_fetch_add(&churn_deadlk, 1);
	}
	if (sc->context & RCL_CTX_MAY_BLOCK) {
		pthread_mutex_lock(&c->m);
	} else if (pthread_mutex_trylock(&c->m) != 0) {
		churn_exit(c);
		return RCL_SHRINK_STOP;
	}
	n = c->items[p] < sc->nr_to_scan ? c->items[p] : sc->nr_to_scan;
	c->items[p] -= n;
	atomic_fetch_sub(&c->nr[p], n);
	pthread_mutex_unlock(&c->m);
	sc->nr_scanned = n;
	if (n)
		T_EQ(rcl_domain_uncharge(H.dom, (uint64_t)n * CHURN_W), 0);
	if (tls_debug) {
		atomic_fetch_add(&c->debug_freed, n);
	} else {
		atomic_fetch_add(&c->scan_freed, n);
		atomic_fetch_add(&H.cb_freed, n);
	}
	churn_exit(c);
	return n;
}

static const struct rcl_shrinker_ops churn_ops = {
	.count_objects = churn_count,
	.scan_objects = churn_scan,
};

/* The drop callback of a churned shadow limit: its "shadows" are items. */
static unsigned long churn_drop(void *priv, unsigned long nr)
{
	struct churn *c = priv;
	unsigned long n;

	churn_enter(c, NULL);
	pthread_mutex_lock(&c->m);
	n = c->items[0] < nr ? c->items[0] : nr;
	c->items[0] -= n;
	atomic_fetch_sub(&c->nr[0], n);
	pthread_mutex_unlock(&c->m);
	T_CHECK(atomic_load(&c->limit));
	rcl_shadow_limit_add(atomic_load(&c->limit), -(int64_t)n);
	if (n)
		T_EQ(rcl_domain_uncharge(H.dom, (uint64_t)n * CHURN_W), 0);
	atomic_fetch_add(&c->scan_freed, n);
	atomic_fetch_add(&H.cb_freed, n);
	churn_exit(c);
	return n;
}

static const struct rcl_shadow_ops churn_shadow_ops = { .drop = churn_drop };

static struct churn *churn_alloc(uint64_t r)
{
	struct churn *c = calloc(1, sizeof(*c));

	T_CHECK(c);
	c->magic = CHURN_MAGIC;
	c->aware = r % 2;
	T_EQ(pthread_mutex_init(&c->m, NULL), 0);
	return c;
}

/* After its shrinker is gone: no callback in flight, items freed by owner. */
static unsigned long churn_retire(struct churn *c)
{
	unsigned long rest = 0;
	unsigned p;

	atomic_store(&c->state, CH_FREED);
	if (atomic_load(&c->in_cb) != 0) {
		fprintf(stderr, "churned shrinker %p: %d callbacks still "
				"running after free returned\n",
			(void *)c, atomic_load(&c->in_cb));
		abort();
	}
	pthread_mutex_lock(&c->m);
	for (p = 0; p < NPART; p++) {
		rest += c->items[p];
		c->items[p] = 0;
		atomic_store(&c->nr[p], 0);
	}
	pthread_mutex_unlock(&c->m);
	T_EQ(atomic_load(&c->made),
	     atomic_load(&c->scan_freed) + atomic_load(&c->debug_freed) + rest);
	if (rest)
		T_EQ(rcl_domain_uncharge(H.dom, (uint64_t)rest * CHURN_W), 0);
	/* Kept until the end: a late callback reads valid memory, and fails. */
	c->grave_next = atomic_load(&churn_grave);
	while (!atomic_compare_exchange_weak(&churn_grave, &c->grave_next, c))
		;
	return rest;
}

/* Charge up to @n items into @c's partition @p; returns how many. */
static unsigned churn_fill(struct churn *c, unsigned p, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		int err = rcl_domain_charge(H.dom, CHURN_W, RCL_CTX_CAPABLE,
					    NULL);

		if (err) {
			T_EQ(err, -ENOMEM);
			break;
		}
		check_usage();
		pthread_mutex_lock(&c->m);
		c->items[p]++;
		atomic_fetch_add(&c->nr[p], 1);
		atomic_fetch_add(&c->made, 1);
		pthread_mutex_unlock(&c->m);
	}
	return i;
}

static void churn_shrinker_cycle(uint64_t *rng)
{
	uint64_t r = rng_next(rng);
	struct churn *c = churn_alloc(r);
	struct rcl_shrinker_config scfg = {
		.ops = &churn_ops,
		.priv = c,
		.name = "churn",
		/* Half are trivially cheap: scanned at any priority. */
		.seeks = (r >> 4) % 2 ? 0 : (int)(1 + (r >> 5) % 4),
		.batch = (r >> 8) % 3 ? 0 : (long)(1 + (r >> 12) % 32),
		.flags = c->aware ? RCL_SHRINKER_PARTITION_AWARE : 0,
	};
	struct rcl_shrinker *s;
	unsigned p;

	for (p = 0; p < (c->aware ? NPART : 1u); p++)
		churn_fill(c, p, 1 + (unsigned)((r >> 20) % 96));
	T_EQ(rcl_shrinker_new(rcl_domain_registry(H.dom), &scfg, &s), 0);
	c->self = s;
	if ((r >> 28) % 8 != 0) {
		struct rcl_shrink_result res = { 0 };
		unsigned long cnt, freed, scanned;

		atomic_store(&c->state, CH_REGISTERED);
		T_EQ(rcl_shrinker_register(s), 0);
		T_EQ(rcl_shrinker_register(s), -EBUSY);
		pause_a_little(rng, 20000);
		switch ((r >> 32) % 4) {
		case 0:		/* its owner shrinks it */
			T_EQ(rcl_shrinker_shrink(s,
						 (unsigned)((r >> 36) % NPART),
						 (int)((r >> 40) % 13),
						 RCL_CTX_CAPABLE, &res),
			     0);
			atomic_fetch_add(&H.reported_freed, res.freed);
			break;
		case 1:		/* debug entry points: no counter moves */
			T_EQ(rcl_shrinker_debug_count(s, 0, RCL_CTX_CAPABLE,
						      &cnt),
			     0);
			tls_debug = true;
			T_EQ(rcl_shrinker_debug_scan(s, 0, 4, RCL_CTX_CAPABLE,
						     &freed, &scanned),
			     0);
			tls_debug = false;
			break;
		case 2:		/* more items while registered */
			churn_fill(c, 0, 8);
			break;
		default:
			break;
		}
		pause_a_little(rng, 5000);
	}
	/* Unregister, wait for callbacks in flight, free. */
	T_EQ(rcl_shrinker_free(s), 0);
	churn_retire(c);
}

static void churn_limit_cycle(uint64_t *rng)
{
	uint64_t r = rng_next(rng);
	struct churn *c = churn_alloc(0);
	struct rcl_shadow_limit *lim;
	unsigned n;

	/* Its count is only the excess over the quota: nothing until filled. */
	atomic_store(&c->state, CH_REGISTERED);
	T_EQ(rcl_shadow_limit_new(rcl_domain_registry(H.dom), r % 8,
				  &churn_shadow_ops, c, &lim),
	     0);
	atomic_store(&c->limit, lim);
	n = churn_fill(c, 0, 1 + (unsigned)((r >> 8) % 32));
	rcl_shadow_limit_add(lim, (int64_t)n);
	pause_a_little(rng, 10000);
	T_EQ(rcl_shadow_limit_free(lim), 0);
	churn_retire(c);
}

static void *churner_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0xc402ull * (w->idx + 7);
	unsigned i;

	tls_worker = true;
	tls_app = true;
	tls_rng = rng;
	for (i = 0; i < w->ops; i++) {
		if (i % 8 == 7)
			churn_limit_cycle(&rng);
		else
			churn_shrinker_cycle(&rng);
		atomic_fetch_add(&churn_cycles, 1);
	}
	return NULL;
}

/* Registry-wide shrinks and domain reclaim, until the churners are done. */
static void *walker_main(void *arg)
{
	uint64_t rng = 0x3a1cull + (uintptr_t)arg;
	unsigned i;

	tls_worker = true;
	tls_app = true;
	for (i = 0; i < 1000 || !atomic_load(&H.control_done); i++) {
		uint64_t r = rng_next(&rng);

		if (r % 4 == 0) {
			struct rcl_reclaim_result res;

			tls_in_reclaim++;
			T_EQ(rcl_domain_reclaim(H.dom, 1 + (r >> 8) % 64,
						RCL_CTX_CAPABLE, &res),
			     0);
			tls_in_reclaim--;
		} else {
			registry_shrink(r >> 4);
		}
	}
	return NULL;
}

static void test_all_stress_shrinker_churn(void **state)
{
	const struct hcfg cfg = {
		.name = "shrinker-churn",
		.mode = RCL_CHARGE_STRICT,
		.budget_lo = 30000,
		.budget_hi = 30001,
		.fixed_budget = true,
		.nworkers = T3_WORKERS,
		.ops = ops_per_thread(200000) / 5,
	};
	struct worker w[T3_WORKERS], ch[CHURNERS];
	pthread_t walkers[T3_WALKERS];
	struct churn *c, *next;
	unsigned i;

	(void)state;
	atomic_store(&churn_grave, NULL);
	harness_setup(&cfg);
	for (i = 0; i < T3_WALKERS; i++)
		T_EQ(pthread_create(&walkers[i], NULL, walker_main,
				    (void *)(uintptr_t)i),
		     0);
	start_workers(w, cfg.nworkers, cfg.ops);
	for (i = 0; i < CHURNERS; i++) {
		ch[i].idx = i;
		ch[i].ops = CHURN_CYCLES;
		T_EQ(pthread_create(&ch[i].tid, NULL, churner_main, &ch[i]), 0);
	}
	join_workers(ch, CHURNERS);
	atomic_store(&H.control_done, true);
	join_workers(w, cfg.nworkers);
	for (i = 0; i < T3_WALKERS; i++)
		T_EQ(pthread_join(walkers[i], NULL), 0);
	T_EQ(atomic_load(&churn_cycles), CHURNERS * CHURN_CYCLES);
	harness_quiesce();
	harness_check();
	print_message("shrinker-churn: %ld cycles, %ld churned callbacks "
		      "(%ld scans), %ld -EDEADLK checks\n",
		      atomic_load(&churn_cycles), atomic_load(&churn_calls),
		      atomic_load(&churn_scans), atomic_load(&churn_deadlk));
	T_CHECK(atomic_load(&churn_calls) > 0);
	harness_teardown();
	for (c = atomic_load(&churn_grave); c; c = next) {
		next = c->grave_next;
		T_EQ(atomic_load(&c->in_cb), 0);
		pthread_mutex_destroy(&c->m);
		free(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_stress_everything),
		cmocka_unit_test(test_all_stress_reclaimer_restart),
		cmocka_unit_test(test_all_stress_flusher_restart),
		cmocka_unit_test(test_all_stress_shrinker_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
