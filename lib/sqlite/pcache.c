/* SPDX-License-Identifier: MIT */
/*
 * libreclaim-sqlite: sqlite3_pcache_methods2 on a libreclaim domain.
 *
 * One cache = one lruvec (attached to the configured domain, partition 0),
 * a chained hash index of its pages by page number, and a direct-mapped
 * shadow table with as many slots as the index has buckets.  Not the
 * objcache (docs/sqlite.md says why): SQLite wants only unpinned pages on
 * the lists, rekeys pinned pages, and truncates ranges.
 *
 * The page protocol.  Under the cache's mutex a page is either pinned (off
 * the lruvec; SQLite holds it) or unpinned (on the lruvec, or on its way
 * there or off it: @on_lru says which).  The evict callback trylocks the
 * mutex and frees only a page that is hashed and unpinned; every other page
 * it answers BUSY, which is what makes the two slow paths safe: a method
 * that finds an unpinned page isolated by a reclaimer (rcl_lruvec_del()
 * says -EBUSY) first pins or unhashes it under the mutex, drops the mutex,
 * and waits in rcl_lruvec_del_wait() for the reclaimer's BUSY answer.
 *
 * Called from inside one of the library's evict or write callbacks (an
 * application that uses SQLite there), that wait is refused (-EDEADLK) and
 * the page is still the reclaimer's.  A page SQLite fetched then stays on
 * the lruvec, pinned (the callback keeps it), and its xUnpin leaves it
 * there.  A page to be freed is *doomed* instead: out of the index,
 * unpinned, on the cache's doomed list and still charged; the evict
 * callback frees it when a reclaimer reaches it, and a later method of the
 * cache (xFetch that creates, xTruncate, xShrink, xDestroy) takes off and
 * frees those the reclaimer has put back.  xDestroy, where it cannot
 * finish (a doomed page still isolated, or a detach refused inside the
 * domain's reclaim pass), leaves the cache on an orphan list, finished by
 * a later xCreate, xDestroy, creating xFetch or xShutdown made outside
 * the callbacks.  Nothing is freed while another thread holds it.
 *
 * Lock order: the cache mutex > the lruvec's locks.  The mutex is never
 * held across a charge (which may reclaim, and so run evict callbacks of
 * this very cache) or a wait.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include <reclaim/domain.h>
#include <reclaim/lruvec.h>
#include <reclaim/shrinker.h>
#include <reclaim/sqlite.h>
#include <reclaim/workingset.h>

#include "../futex_lock.h"

/* ------------------------------------------------------------------------- */
/* Types                                                                      */
/* ------------------------------------------------------------------------- */

struct rsq_cache;

/*
 * The page header, followed in the same allocation by szPage bytes of page
 * buffer and szExtra bytes of extra area.  64 bytes on LP64
 * (RCL_SQLITE_PAGE_OVERHEAD), a multiple of 16 so that the buffer is as
 * aligned as the allocation.  What a lookup reads of every page on its
 * chain (the chain link, the key, the pin flag) comes first, in 16 bytes,
 * next to what xFetch returns: each step of a chain touches one cache line
 * of a page allocation that is otherwise cold, not two.
 */
struct rsq_page {
	struct rsq_page *hnext;		/* index chain */
	unsigned key;
	uint8_t pinned;			/* SQLite holds it (not counted) */
	uint8_t hashed;			/* in the index */
	uint8_t on_lru;			/* 0, RSQ_ON or RSQ_DOOMED */
	uint8_t hot;			/* aging at the last pin: 0 new, 1 cold, 2 hot */
	sqlite3_pcache_page base;	/* pBuf, pExtra: what xFetch returns */
	struct rcl_lru_node lru;
	uint64_t shadow;		/* a refault's shadow, until first unpin */
};

_Static_assert(sizeof(void *) != 8 ||
	       sizeof(struct rsq_page) == RCL_SQLITE_PAGE_OVERHEAD,
	       "RCL_SQLITE_PAGE_OVERHEAD is the page header's size on LP64");
_Static_assert(sizeof(struct rsq_page) % 16 == 0 ||
	       sizeof(void *) != 8, "the buffer stays 16-aligned");

/*
 * @on_lru: 0 off the lruvec; RSQ_ON added to it, not yet deleted (pending,
 * listed or isolated); RSQ_DOOMED on it as well, but out of the index,
 * unpinned and on the cache's doomed list (linked through @hnext): the
 * first of the evict callback and rsq_reap() that takes it off frees it.
 */
#define RSQ_ON 1
#define RSQ_DOOMED 2

struct rsq_shadow {
	uint64_t shadow;
	uint32_t key;
	uint32_t pad;
};

struct rsq_cache {
	struct rcl_lruvec lv;
	RCL__ATOMIC(uint32_t) mu;	/* the cache lock (rsq_lock()) */
	struct rsq_page **table;
	struct rsq_shadow *shadows;	/* NULL with RCL_SQLITE_NO_SHADOWS */
	unsigned nbuckets;		/* power of two */
	unsigned shift;			/* 64 - log2(nbuckets) */
	unsigned sz_page, sz_extra;
	uint32_t charge;		/* per page */
	bool purgeable;
	unsigned share;			/* cache_size, in pages */
	unsigned npages;		/* held: pinned + unpinned (+ orphans) */
	unsigned npinned;
	bool growing;			/* a thread is doubling the tables */
	bool attached;			/* to the domain */
	struct rsq_page *doomed;	/* RSQ_DOOMED pages, through hnext */
	unsigned ndoomed;		/* not in npages */
	/*
	 * Pinned pages that an xRekey onto their number took out of the
	 * index (SQLite promises none): in npages, through hnext, freed at
	 * their xUnpin or by an xTruncate or xDestroy that covers them.
	 */
	struct rsq_page *lost;
	struct rsq_cache *onext;	/* the orphan list (g_orphan_mu) */
	uint64_t meta;			/* charged: this structure + tables */
	uint64_t hits, misses, evictions, refault_activations;
};

/*
 * The cache lock: a futex word (lib/futex_lock.h), not a pthread mutex.
 * Every xFetch and xUnpin takes it once, and glibc's mutex cost a
 * lock-unlock pair about 57 instructions more (callgrind; docs/sqlite.md).
 */
static inline void rsq_lock(struct rsq_cache *c)
{
	if (!rcl__flock_trylock(&c->mu))
		rcl__flock_lock_slow(&c->mu);
}

static inline void rsq_unlock(struct rsq_cache *c)
{
	if (rcl__flock_release(&c->mu))
		rcl__futex_wake(&c->mu, 1);
}

#define RSQ_MIN_BUCKETS 64u
/*
 * The largest page and extra area xCreate accepts: SQLite's own page size
 * bound (SQLITE_MAX_PAGE_SIZE), for both, so that a page's charge fits
 * its 32-bit weight with room to spare (no SQLite sends more).
 */
#define RSQ_MAX_PAGE 65536
/* xFetch flag 2: charges tried before SQLITE_NOMEM (rsq_page_new()). */
#define RSQ_HARD_TRIES 4

/* ------------------------------------------------------------------------- */
/* Global state                                                               */
/* ------------------------------------------------------------------------- */

static struct rcl_sqlite_config g_cfg;
static struct rcl_allocator g_allocator;	/* the caller's, copied */
static atomic_bool g_installed;

static atomic_uint_fast64_t g_caches, g_meta;
/*
 * The levels (pages, pinned, charged) are not striped: a page pinned or
 * allocated in one thread and unpinned or freed in another moves two
 * stripes, and a sum of stripes read at two moments (the reader summing
 * one before the pin, the other after the unpin) is no level there ever
 * was: below it by as many pages as moved meanwhile, as a wrap about 2^64.
 */
static atomic_uint_fast64_t g_pages, g_pinned, g_charged;

/*
 * The totals that page accesses move (a hit, a miss, an eviction, a
 * refault's activation), striped: a thread counts in its own stripe's
 * cache line, so that connections in different threads do not bounce one
 * line between their cores on every page access (K = 4 threads made three
 * locked adds per access on one shared line).  rcl_sqlite_stats() sums the
 * stripes: each only grows, so a sum read over a while is the total of one
 * moment in it.
 */
#define RSQ_NR_STRIPES 16u
struct rsq_stripe {
	_Alignas(64) atomic_uint_fast64_t hits;
	atomic_uint_fast64_t misses;
	atomic_uint_fast64_t evictions, refault_act;
};
static struct rsq_stripe g_stripes[RSQ_NR_STRIPES];
static atomic_uint g_next_stripe;

/* Destroyed caches that could not be freed yet (rsq_orphan()). */
static pthread_mutex_t g_orphan_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rsq_cache *g_orphans;
static atomic_uint g_nr_orphans;

/* rcl_sqlite_cache_stats(): the first cache this thread fetches from. */
/* initial-exec, as the library's own (lib/internal.h's RCL__TLS): xFetch
 * reads tls_probing on every call, and the general-dynamic model would make
 * that a call to __tls_get_addr(). */
#define RSQ_TLS _Thread_local __attribute__((tls_model("initial-exec")))
static RSQ_TLS bool tls_probing;
static RSQ_TLS struct rsq_cache *tls_probe;
/* This thread's stripe of g_stripes, plus one (0: not chosen yet). */
static RSQ_TLS unsigned tls_stripe;

#define CNT_ADD(c, n) atomic_fetch_add_explicit(&(c), (n), memory_order_relaxed)
#define CNT_SUB(c, n) atomic_fetch_sub_explicit(&(c), (n), memory_order_relaxed)
#define CNT_GET(c) atomic_load_explicit(&(c), memory_order_relaxed)

static struct rsq_stripe *rsq_stripe(void)
{
	unsigned i = tls_stripe;

	if (__builtin_expect(i == 0, 0)) {
		i = atomic_fetch_add_explicit(&g_next_stripe, 1,
					      memory_order_relaxed) %
			    RSQ_NR_STRIPES + 1;
		tls_stripe = i;
	}
	return &g_stripes[i - 1];
}

/* The stripes' sums into @out (hits, misses, evictions, refaults). */
static void rsq_stripes_sum(struct rcl_sqlite_stats *out)
{
	const struct rsq_stripe *st;
	unsigned i;

	out->hits = out->misses = 0;
	out->evictions = out->refault_activations = 0;
	for (i = 0; i < RSQ_NR_STRIPES; i++) {
		st = &g_stripes[i];
		out->hits += CNT_GET(st->hits);
		out->misses += CNT_GET(st->misses);
		out->evictions += CNT_GET(st->evictions);
		out->refault_activations += CNT_GET(st->refault_act);
	}
}

static void *rsq_alloc(size_t size)
{
	const struct rcl_allocator *a = g_cfg.allocator;

	return a ? a->alloc(a->ctx, size) : malloc(size);
}

static void rsq_free(void *p)
{
	const struct rcl_allocator *a = g_cfg.allocator;

	if (!p)
		return;
	if (a)
		a->free(a->ctx, p);
	else
		free(p);
}

/* ------------------------------------------------------------------------- */
/* Index and shadows (cache mutex held)                                       */
/* ------------------------------------------------------------------------- */

static unsigned rsq_hash(const struct rsq_cache *c, unsigned key)
{
	return (unsigned)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> c->shift);
}

static struct rsq_page *rsq_lookup(struct rsq_cache *c, unsigned key)
{
	struct rsq_page *p = c->table[rsq_hash(c, key)];

	while (p && p->key != key)
		p = p->hnext;
	return p;
}

static void rsq_link(struct rsq_cache *c, struct rsq_page *p)
{
	struct rsq_page **b = &c->table[rsq_hash(c, p->key)];

	p->hnext = *b;
	*b = p;
	p->hashed = 1;
}

static void rsq_unlink(struct rsq_cache *c, struct rsq_page *p)
{
	struct rsq_page **pp = &c->table[rsq_hash(c, p->key)];

	while (*pp && *pp != p)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = p->hnext;
	p->hnext = NULL;
	p->hashed = 0;
}

static uint64_t rsq_shadow_take(struct rsq_cache *c, unsigned key)
{
	struct rsq_shadow *s;
	uint64_t v;

	if (!c->shadows)
		return 0;
	s = &c->shadows[rsq_hash(c, key)];
	if (!s->shadow || s->key != key)
		return 0;
	v = s->shadow;
	s->shadow = 0;
	return v;
}

static void rsq_shadow_put(struct rsq_cache *c, unsigned key, uint64_t shadow)
{
	struct rsq_shadow *s;

	if (!c->shadows || !rcl_shadow_is_valid(shadow))
		return;
	s = &c->shadows[rsq_hash(c, key)];
	s->shadow = shadow;	/* a collision replaces the older shadow */
	s->key = key;
}

/* The bytes of the index and the shadow table at @n buckets. */
static uint64_t rsq_tables_bytes(unsigned n)
{
	uint64_t b = (uint64_t)n * sizeof(struct rsq_page *);

	if (!(g_cfg.flags & RCL_SQLITE_NO_SHADOWS))
		b += (uint64_t)n * sizeof(struct rsq_shadow);
	return b;
}

static void rsq_meta_charged(uint64_t bytes)
{
	CNT_ADD(g_charged, bytes);
	CNT_ADD(g_meta, bytes);
}

static void rsq_meta_uncharge(uint64_t bytes)
{
	rcl_domain_uncharge(g_cfg.domain, bytes);
	CNT_SUB(g_charged, bytes);
	CNT_SUB(g_meta, bytes);
}

/*
 * Double the index (and the shadow table) when it holds more pages than
 * buckets; called without the mutex.  The new tables are charged before
 * they are allocated and the old ones uncharged after they are freed, so
 * the transient (old + new) is charged too.  A failed charge (a strict
 * domain without room; @create 1 never reclaims for it) or allocation is
 * not an error: the old tables stay, with longer chains.
 */
static void rsq_grow(struct rsq_cache *c, int create)
{
	uint64_t ctx = create >= 2 ? RCL_CTX_CAPABLE : 0, nbytes, obytes;
	unsigned n, shift, i, old_n;
	struct rsq_page **nt, **ot;
	struct rsq_shadow *ns = NULL, *os;
	struct rsq_cache tmp;

	rsq_lock(c);
	if (c->growing || c->npages <= c->nbuckets ||
	    c->nbuckets >= (1u << 30)) {
		rsq_unlock(c);
		return;
	}
	c->growing = true;	/* only this thread changes the tables' size */
	old_n = c->nbuckets;
	shift = c->shift - 1;
	rsq_unlock(c);

	n = old_n * 2;
	nbytes = rsq_tables_bytes(n);
	obytes = rsq_tables_bytes(old_n);
	if (rcl_domain_charge(g_cfg.domain, nbytes, ctx, NULL) != 0)
		goto out;
	nt = rsq_alloc(n * sizeof(*nt));
	if (nt && !(g_cfg.flags & RCL_SQLITE_NO_SHADOWS)) {
		ns = rsq_alloc(n * sizeof(*ns));
		if (!ns) {
			rsq_free(nt);
			nt = NULL;
		}
	}
	if (!nt) {
		rcl_domain_uncharge(g_cfg.domain, nbytes);
		goto out;
	}
	rsq_meta_charged(nbytes);
	memset(nt, 0, n * sizeof(*nt));
	if (ns)
		memset(ns, 0, n * sizeof(*ns));
	tmp = (struct rsq_cache){ .shift = shift };

	rsq_lock(c);
	for (i = 0; i < old_n; i++) {
		struct rsq_page *p = c->table[i], *next;

		for (; p; p = next) {
			unsigned h = rsq_hash(&tmp, p->key);

			next = p->hnext;
			p->hnext = nt[h];
			nt[h] = p;
		}
		if (ns && c->shadows[i].shadow) {
			unsigned h = rsq_hash(&tmp, c->shadows[i].key);

			ns[h] = c->shadows[i];
		}
	}
	ot = c->table;
	os = c->shadows;
	c->table = nt;
	c->shadows = ns;
	c->nbuckets = n;
	c->shift = shift;
	c->meta += nbytes - obytes;
	c->growing = false;
	rsq_unlock(c);
	rsq_free(ot);
	rsq_free(os);
	rsq_meta_uncharge(obytes);
	return;
out:
	rsq_lock(c);
	c->growing = false;
	rsq_unlock(c);
}

/* ------------------------------------------------------------------------- */
/* Pages                                                                      */
/* ------------------------------------------------------------------------- */

/* Free a page that is off the lruvec and out of the index (no lock). */
static void rsq_page_free(struct rsq_cache *c, struct rsq_page *p)
{
	uint32_t charge = c->charge;

	rsq_free(p);
	rcl_domain_uncharge(g_cfg.domain, charge);
	CNT_SUB(g_charged, charge);
	CNT_SUB(g_pages, 1);
}

/*
 * Take @p off the lruvec, mutex held.  True if it is off; false if a
 * reclaimer holds it isolated: the caller has pinned or unhashed it (so the
 * evict callback answers BUSY) and calls rsq_lru_wait() without the mutex.
 */
static bool rsq_lru_off(struct rsq_cache *c, struct rsq_page *p)
{
	if (!p->on_lru)
		return true;
	if (rcl_lruvec_del(&c->lv, &p->lru) == -EBUSY)
		return false;
	p->on_lru = 0;
	return true;
}

/*
 * Wait until a reclaimer puts @p back and take it off, no lock held.
 * Return: 0 when it is off; -EDEADLK (or another error) when the library
 * refused to wait (an evict or write callback runs in this thread): the
 * node is still on the lruvec, the reclaimer's.
 */
static int rsq_lru_wait(struct rsq_cache *c, struct rsq_page *p)
{
	int err = rcl_lruvec_del_wait(&c->lv, &p->lru);

	return err == -ENOENT ? 0 : err;
}

/* Doom @p (out of the index, unpinned, not in npages), mutex held. */
static void rsq_doom(struct rsq_cache *c, struct rsq_page *p)
{
	p->on_lru = RSQ_DOOMED;
	p->hnext = c->doomed;
	c->doomed = p;
	c->ndoomed++;
}

/* Take @p off the lost list if it is there, mutex held. */
static void rsq_unlose(struct rsq_cache *c, struct rsq_page *p)
{
	struct rsq_page **pp = &c->lost;

	while (*pp && *pp != p)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = p->hnext;
		p->hnext = NULL;
	}
}

static void rsq_undoom(struct rsq_cache *c, struct rsq_page *p)
{
	struct rsq_page **pp = &c->doomed;

	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
	p->hnext = NULL;
	c->ndoomed--;
}

/*
 * Free @p, which is out of the index, unpinned and no longer in npages
 * (no lock held; while it is on the lruvec the evict callback keeps it,
 * for it is unhashed and not doomed).  Waits for a reclaimer that holds it;
 * where that wait is refused, dooms it instead.
 */
static void rsq_release(struct rsq_cache *c, struct rsq_page *p)
{
	if (p->on_lru && rsq_lru_wait(c, p) != 0) {
		rsq_lock(c);
		rsq_doom(c, p);
		rsq_unlock(c);
		return;
	}
	rsq_page_free(c, p);
}

/*
 * Free the doomed pages that are off a reclaimer's hands; with @wait, wait
 * for the others too (those whose wait is refused stay doomed).  No lock
 * held.  Return: true if none is left.
 */
static bool rsq_reap(struct rsq_cache *c, bool wait)
{
	struct rsq_page *p, **pp, *gone = NULL, *held = NULL, *next;
	bool none;

	rsq_lock(c);
	for (pp = &c->doomed; (p = *pp) != NULL;) {
		bool off = rsq_lru_off(c, p);

		if (!off && !wait) {
			pp = &p->hnext;
			continue;
		}
		*pp = p->hnext;
		c->ndoomed--;
		if (off) {
			p->hnext = gone;
			gone = p;
		} else {
			/* Not doomed now: the evict callback keeps it while
			 * this thread waits for it. */
			p->on_lru = RSQ_ON;
			p->hnext = held;
			held = p;
		}
	}
	rsq_unlock(c);
	for (p = gone; p; p = next) {
		next = p->hnext;
		rsq_page_free(c, p);
	}
	for (p = held; p; p = next) {
		next = p->hnext;
		rsq_release(c, p);
	}
	rsq_lock(c);
	none = c->ndoomed == 0;
	rsq_unlock(c);
	return none;
}

static enum rcl_evict_status rsq_evict(struct rcl_lru_node *node,
				       struct rcl_evict_control *ctl)
{
	struct rsq_page *p = rcl_container_of(node, struct rsq_page, lru);
	struct rsq_cache *c = ctl->priv;

	if (!rcl__flock_trylock(&c->mu))
		return RCL_EVICT_BUSY;
	if (p->on_lru == RSQ_DOOMED) {
		/* Discarded while a reclaimer held it: this is its end. */
		rsq_undoom(c, p);
		p->on_lru = 0;
		rsq_unlock(c);
		rsq_page_free(c, p);
		return RCL_EVICT_FREED;
	}
	if (!p->hashed || p->pinned) {
		rsq_unlock(c);
		return RCL_EVICT_BUSY;
	}
	rsq_unlink(c, p);
	p->on_lru = 0;
	rsq_shadow_put(c, p->key, ctl->shadow);
	c->npages--;
	c->evictions++;
	rsq_unlock(c);
	CNT_ADD(rsq_stripe()->evictions, 1);
	rsq_page_free(c, p);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops rsq_lru_ops = { .evict = rsq_evict };

/* Evict up to @nr of the cache's own coldest unpinned pages (no lock held).
 * Returns how many went. */
static size_t rsq_self_shrink(struct rsq_cache *c, size_t nr)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE };
	unsigned unpinned;
	int round;

	rsq_lock(c);
	unpinned = c->npages - c->npinned;
	rsq_unlock(c);
	if (!unpinned)
		return 0;
	for (round = 0; round < 3 && sc.nr_freed == 0; round++) {
		if (round == 1)
			rcl_lru_drain_local();
		if (rcl_lruvec_inactive_is_low(&c->lv, RCL_LRU_FILE) ||
		    rcl_lruvec_count(&c->lv, RCL_LRU_LIST(RCL_LRU_FILE, 0), NULL) == 0) {
			struct rcl_lru_shrink_control ac = {
				.type = RCL_LRU_FILE,
				.nr_to_scan = round ? unpinned : RCL_LRU_BATCH_ISOLATE,
			};

			rcl_lruvec_shrink_active(&c->lv, &ac);
		}
		sc.nr_to_scan = nr;
		rcl_lruvec_shrink_inactive(&c->lv, &sc);
	}
	return sc.nr_freed;
}

/* Would a charge of @amount leave the domain's headroom below low? */
static bool rsq_domain_tight(uint64_t amount)
{
	struct rcl_domain *d = g_cfg.domain;
	struct rcl_watermarks wm;
	uint64_t budget = rcl_domain_budget(d), usage = rcl_domain_usage(d);

	if (rcl_domain_watermarks(d, &wm) != 0)
		return false;
	return usage + amount + wm.low > budget;
}

/*
 * Charge and allocate a new page for @key, with no lock held.
 * @create 1: only if cheap: no reclaim of other caches (a charge that
 * cannot block, and in a soft domain one that does not overshoot); the
 * cache's own coldest pages may go.  @create 2: the charge may reclaim
 * (direct reclaim in this thread), and the cache's own pages may go too.
 */
static struct rsq_page *rsq_page_new(struct rsq_cache *c, unsigned key,
				     int create)
{
	struct rcl_domain *d = g_cfg.domain;
	uint64_t ctx = create >= 2 ? RCL_CTX_CAPABLE : 0, over = 0;
	struct rsq_page *p;
	unsigned share, npages;
	int err, tries;

	rsq_lock(c);
	share = c->share;
	npages = c->npages;
	rsq_unlock(c);

	/* Above its share, a cache makes room from its own pages first. */
	if (c->purgeable && npages >= share && rsq_domain_tight(c->charge))
		rsq_self_shrink(c, 4);

	/*
	 * On a refusal, a page of the cache's own goes and the charge is tried
	 * again: once for flag 1.  Flag 2 (try hard) tries up to
	 * RSQ_HARD_TRIES charges, each of which may reclaim: other threads'
	 * reclaims may hold the pages a charge would free, or their caches'
	 * mutexes (the evict callback only tries them), for a moment (four
	 * connections in four threads on a strict domain failed a read so).
	 * Between two, a page of its own goes, or, if none can, it yields to
	 * them.  A domain that is truly full costs a failing fetch
	 * RSQ_HARD_TRIES reclaims, against two before.  A cache that cannot
	 * be purged (a memory or temp database) stops at the first refusal,
	 * as before.
	 */
	for (tries = 0;; tries++) {
		err = rcl_domain_charge(d, c->charge, ctx, &over);
		if (err == 0 && over && create < 2) {
			rcl_domain_uncharge(d, c->charge);
			err = -ENOMEM;
		}
		if (err != -ENOMEM || !c->purgeable ||
		    tries >= (create < 2 ? 1 : RSQ_HARD_TRIES - 1))
			break;
		if (!rsq_self_shrink(c, 1)) {
			if (create < 2)
				break;
			sched_yield();
		}
	}
	if (err)
		return NULL;
	p = rsq_alloc((size_t)c->charge);
	if (!p) {
		rcl_domain_uncharge(d, c->charge);
		return NULL;
	}
	memset(p, 0, sizeof(*p));
	p->base.pBuf = (char *)p + sizeof(*p);
	p->base.pExtra = (char *)p->base.pBuf + c->sz_page;
	/* pcache.c tells a new page by a NULL first pointer of the extra area
	 * (as pcache1 leaves it); the whole area starts zeroed. */
	memset(p->base.pExtra, 0, c->sz_extra);
	p->key = key;
	CNT_ADD(g_charged, c->charge);
	CNT_ADD(g_pages, 1);
	return p;
}

/* ------------------------------------------------------------------------- */
/* The end of a cache                                                         */
/* ------------------------------------------------------------------------- */

/*
 * Free a destroyed cache (every page out of the index already), no lock
 * held.  Return: false if it cannot be done from here (called inside the
 * domain's reclaim pass, which refuses the detach, or a doomed page is
 * still isolated and the wait for it is refused): the caller keeps it.
 */
static bool rsq_finish(struct rsq_cache *c)
{
	uint64_t meta;

	if (c->attached) {
		/* No reclaim pass is inside the lruvec after this. */
		if (rcl_domain_detach(g_cfg.domain, &c->lv) == -EDEADLK)
			return false;
		c->attached = false;
	}
	if (!rsq_reap(c, true) || rcl_lruvec_destroy(&c->lv) != 0)
		return false;
	meta = c->meta;
	rsq_free(c->shadows);
	rsq_free(c->table);
	rsq_free(c);
	rsq_meta_uncharge(meta);
	return true;
}

static void rsq_orphan(struct rsq_cache *c)
{
	pthread_mutex_lock(&g_orphan_mu);
	c->onext = g_orphans;
	g_orphans = c;
	atomic_fetch_add(&g_nr_orphans, 1);
	pthread_mutex_unlock(&g_orphan_mu);
}

/* Finish the orphans that can be finished from here (no lock held). */
static void rsq_reap_orphans(void)
{
	struct rsq_cache *c, *next;

	if (atomic_load_explicit(&g_nr_orphans, memory_order_relaxed) == 0)
		return;
	/* Taken off the list, each is this thread's alone. */
	pthread_mutex_lock(&g_orphan_mu);
	c = g_orphans;
	g_orphans = NULL;
	pthread_mutex_unlock(&g_orphan_mu);
	for (; c; c = next) {
		next = c->onext;
		atomic_fetch_sub(&g_nr_orphans, 1);
		if (!rsq_finish(c))
			rsq_orphan(c);
	}
}

/* ------------------------------------------------------------------------- */
/* The methods                                                                */
/* ------------------------------------------------------------------------- */

static int rsq_init(void *arg)
{
	(void)arg;
	return SQLITE_OK;
}

static void rsq_shutdown(void *arg)
{
	(void)arg;
	rsq_reap_orphans();
}

static sqlite3_pcache *rsq_create(int sz_page, int sz_extra, int purgeable)
{
	struct rcl_lruvec_config lc = { .ops = &rsq_lru_ops };
	uint64_t meta = sizeof(struct rsq_cache) + rsq_tables_bytes(RSQ_MIN_BUCKETS);
	struct rsq_cache *c;

	if (sz_page <= 0 || sz_extra < 0 || sz_page > RSQ_MAX_PAGE ||
	    sz_extra > RSQ_MAX_PAGE)
		return NULL;
	rsq_reap_orphans();
	/* The structure and its first tables are charged before they are
	 * allocated (this may reclaim other caches' pages); a strict domain
	 * without room for them fails the open (SQLITE_NOMEM). */
	if (rcl_domain_charge(g_cfg.domain, meta, RCL_CTX_CAPABLE, NULL) != 0)
		return NULL;
	c = rsq_alloc(sizeof(*c));
	if (!c) {
		rcl_domain_uncharge(g_cfg.domain, meta);
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	c->meta = meta;
	c->nbuckets = RSQ_MIN_BUCKETS;
	c->shift = 64 - 6;
	c->sz_page = (unsigned)sz_page;
	c->sz_extra = (unsigned)sz_extra;
	c->charge = (uint32_t)rcl_sqlite_page_charge(c->sz_page, c->sz_extra);
	c->purgeable = purgeable != 0;
	c->table = rsq_alloc(c->nbuckets * sizeof(*c->table));
	if (!c->table)
		goto fail;
	memset(c->table, 0, c->nbuckets * sizeof(*c->table));
	if (!(g_cfg.flags & RCL_SQLITE_NO_SHADOWS)) {
		c->shadows = rsq_alloc(c->nbuckets * sizeof(*c->shadows));
		if (!c->shadows)
			goto fail;
		memset(c->shadows, 0, c->nbuckets * sizeof(*c->shadows));
	}
	atomic_init(&c->mu, 0);
	lc.priv = c;
	if (rcl_lruvec_init(&c->lv, &lc) != 0)
		goto fail;
	if (rcl_domain_attach(g_cfg.domain, &c->lv, 0) != 0)
		goto fail_lv;
	c->attached = true;
	CNT_ADD(g_caches, 1);
	rsq_meta_charged(meta);
	return (sqlite3_pcache *)c;

fail_lv:
	rcl_lruvec_destroy(&c->lv);
fail:
	rsq_free(c->shadows);
	rsq_free(c->table);
	rsq_free(c);
	rcl_domain_uncharge(g_cfg.domain, meta);
	return NULL;
}

static void rsq_cachesize(sqlite3_pcache *pc, int n)
{
	struct rsq_cache *c = (struct rsq_cache *)pc;

	rsq_lock(c);
	c->share = n > 0 ? (unsigned)n : 0;
	rsq_unlock(c);
}

static int rsq_pagecount(sqlite3_pcache *pc)
{
	struct rsq_cache *c = (struct rsq_cache *)pc;
	unsigned n;

	rsq_lock(c);
	n = c->npages;
	rsq_unlock(c);
	return (int)n;
}

static sqlite3_pcache_page *rsq_fetch(sqlite3_pcache *pc, unsigned key,
				      int create)
{
	struct rsq_cache *c = (struct rsq_cache *)pc;
	struct rsq_page *p, *q;
	bool reap;

	if (tls_probing && !tls_probe)
		tls_probe = c;
	rsq_lock(c);
	p = rsq_lookup(c, key);
	if (p) {
		c->hits++;
		CNT_ADD(rsq_stripe()->hits, 1);
		if (!p->pinned) {
			unsigned f = rcl_lru_node_flags(&p->lru);

			p->hot = (f & (RCL_LRU_F_ACTIVE | RCL_LRU_F_REFERENCED)) ? 2 : 1;
			p->pinned = 1;
			c->npinned++;
			CNT_ADD(g_pinned, 1);
			if (!rsq_lru_off(c, p)) {
				int err;

				rsq_unlock(c);
				err = rsq_lru_wait(c, p);
				rsq_lock(c);
				/* Refused (from a callback): it stays on the
				 * lruvec, kept there by its pin; xUnpin knows. */
				if (err == 0)
					p->on_lru = 0;
			}
		}
		rsq_unlock(c);
		return &p->base;
	}
	c->misses++;
	CNT_ADD(rsq_stripe()->misses, 1);
	reap = c->ndoomed != 0;
	rsq_unlock(c);
	if (create == 0)
		return NULL;
	/* Before a new page is charged, what discarded pages still hold. */
	if (reap)
		(void)rsq_reap(c, false);
	rsq_reap_orphans();

	p = rsq_page_new(c, key, create);
	if (!p)
		return NULL;
	rsq_lock(c);
	q = rsq_lookup(c, key);
	if (q) {
		/* Not reached while SQLite serialises the calls on one cache;
		 * kept so that a racing caller gets the page already there. */
		rsq_unlock(c);
		rsq_page_free(c, p);
		return rsq_fetch(pc, key, 0);
	}
	p->shadow = rsq_shadow_take(c, key);
	p->pinned = 1;
	rsq_link(c, p);
	c->npages++;
	c->npinned++;
	CNT_ADD(g_pinned, 1);
	rsq_unlock(c);
	rsq_grow(c, create);
	return &p->base;
}

static void rsq_unpin(sqlite3_pcache *pc, sqlite3_pcache_page *pg, int discard)
{
	struct rsq_cache *c = (struct rsq_cache *)pc;
	struct rsq_page *p = rcl_container_of(pg, struct rsq_page, base);
	unsigned outcome = 0;
	int err;

	rsq_lock(c);
	if (!p->pinned) {
		rsq_unlock(c);
		return;
	}
	p->pinned = 0;
	c->npinned--;
	CNT_SUB(g_pinned, 1);
	if (discard || !c->purgeable || !p->hashed)
		goto drop;
	if (p->on_lru) {
		/* Still on the lruvec: its xFetch, in a callback, could not
		 * take it off.  It is an unpinned page there already. */
		rsq_unlock(c);
		return;
	}
	/* Straight onto the lists (RCL_LRU_ADD_NOBATCH), not through this
	 * thread's add batch: the page SQLite unpins is mostly the one it
	 * fetches next (a b-tree's root and inner pages, on every query), and
	 * the batch would cost that fetch a search of it, the add a batch
	 * entry and its later apply, and reclaim the sight of up to a batch of
	 * unpinned pages (docs/sqlite.md). */
	if (p->shadow) {
		err = rcl_lruvec_add_refault(&c->lv, &p->lru, RCL_LRU_FILE,
					     c->charge, RCL_LRU_ADD_NOBATCH,
					     p->shadow, &outcome);
		p->shadow = 0;
		if (err == 0 && (outcome & RCL_REFAULT_ACTIVATE)) {
			c->refault_activations++;
			CNT_ADD(rsq_stripe()->refault_act, 1);
		}
	} else {
		err = rcl_lruvec_add(&c->lv, &p->lru, RCL_LRU_FILE, c->charge,
				     RCL_LRU_ADD_NOBATCH |
				     (p->hot == 2 ? RCL_LRU_ADD_ACTIVE : 0));
		if (err == 0 && p->hot == 1)
			rcl_lruvec_mark_accessed(&c->lv, &p->lru);
	}
	if (err != 0)
		goto drop;
	p->on_lru = 1;
	rsq_unlock(c);
	return;

drop:
	if (p->hashed)
		rsq_unlink(c, p);
	else if (c->lost)
		rsq_unlose(c, p);
	c->npages--;
	(void)rsq_lru_off(c, p);
	rsq_unlock(c);
	rsq_release(c, p);
}

static void rsq_rekey(sqlite3_pcache *pc, sqlite3_pcache_page *pg,
		      unsigned old_key, unsigned new_key)
{
	struct rsq_cache *c = (struct rsq_cache *)pc;
	struct rsq_page *p = rcl_container_of(pg, struct rsq_page, base);
	struct rsq_page *q;

	(void)old_key;
	rsq_lock(c);
	q = rsq_lookup(c, new_key);
	if (q == p)
		q = NULL;
	if (q) {
		rsq_unlink(c, q);
		if (q->pinned) {
			/* SQLite guarantees it is not; if it were, it is freed
			 * at its xUnpin (an unhashed page is discarded), or by
			 * an xTruncate or xDestroy that comes first. */
			q->hnext = c->lost;
			c->lost = q;
			q = NULL;
		} else {
			c->npages--;
			(void)rsq_lru_off(c, q);
		}
	}
	/*
	 * @p itself may be a lost page (pinned, out of the index): SQLite
	 * may rekey it; it leaves the lost list before it joins the index,
	 * both lists being linked through hnext.
	 */
	if (p->hashed)
		rsq_unlink(c, p);
	else
		rsq_unlose(c, p);
	p->key = new_key;
	rsq_link(c, p);
	/* A shadow of either number describes another page's history. */
	(void)rsq_shadow_take(c, new_key);
	rsq_unlock(c);
	if (q)
		rsq_release(c, q);	/* waits for a reclaimer, or dooms */
}

/*
 * Count @p, out of the index, as freed from the cache and put it on
 * *@victims (through hnext), mutex held; rsq_release() frees it later.
 */
static void rsq_take_victim(struct rsq_cache *c, struct rsq_page *p,
			    struct rsq_page **victims)
{
	if (p->pinned) {
		p->pinned = 0;
		c->npinned--;
		CNT_SUB(g_pinned, 1);
	}
	c->npages--;
	/* on_lru stays set for those a reclaimer holds */
	(void)rsq_lru_off(c, p);
	p->hnext = *victims;
	*victims = p;
}

/*
 * Take out every unpinned page (and with @pinned_too, every page whose key
 * is >= @limit instead) under the mutex, then free them without it (or
 * doom those a reclaimer holds, where the wait for it is refused).
 */
static void rsq_drop_pages(struct rsq_cache *c, unsigned limit, bool pinned_too)
{
	struct rsq_page *victims = NULL, *p, *next;
	unsigned i;

	(void)rsq_reap(c, false);
	rsq_lock(c);
	for (i = 0; i < c->nbuckets; i++) {
		struct rsq_page **pp = &c->table[i];

		while ((p = *pp) != NULL) {
			bool take = pinned_too ? p->key >= limit : !p->pinned;

			if (!take) {
				pp = &p->hnext;
				continue;
			}
			*pp = p->hnext;
			p->hashed = 0;
			rsq_take_victim(c, p, &victims);
		}
		if (pinned_too && c->shadows && c->shadows[i].shadow &&
		    c->shadows[i].key >= limit)
			c->shadows[i].shadow = 0;
	}
	if (pinned_too) {
		struct rsq_page **pp = &c->lost;

		while ((p = *pp) != NULL) {
			if (p->key < limit) {
				pp = &p->hnext;
				continue;
			}
			*pp = p->hnext;
			rsq_take_victim(c, p, &victims);
		}
	}
	rsq_unlock(c);
	for (p = victims; p; p = next) {
		next = p->hnext;
		rsq_release(c, p);
	}
}

static void rsq_truncate(sqlite3_pcache *pc, unsigned limit)
{
	rsq_drop_pages((struct rsq_cache *)pc, limit, true);
}

static void rsq_shrink(sqlite3_pcache *pc)
{
	rsq_drop_pages((struct rsq_cache *)pc, 0, false);
}

static void rsq_destroy(sqlite3_pcache *pc)
{
	struct rsq_cache *c = (struct rsq_cache *)pc;

	rsq_drop_pages(c, 0, true);
	CNT_SUB(g_caches, 1);
	if (!rsq_finish(c))
		rsq_orphan(c);
	rsq_reap_orphans();
}

static const sqlite3_pcache_methods2 rsq_methods = {
	.iVersion = 1,
	.pArg = NULL,
	.xInit = rsq_init,
	.xShutdown = rsq_shutdown,
	.xCreate = rsq_create,
	.xCachesize = rsq_cachesize,
	.xPagecount = rsq_pagecount,
	.xFetch = rsq_fetch,
	.xUnpin = rsq_unpin,
	.xRekey = rsq_rekey,
	.xTruncate = rsq_truncate,
	.xDestroy = rsq_destroy,
	.xShrink = rsq_shrink,
};

/* ------------------------------------------------------------------------- */
/* Public API                                                                 */
/* ------------------------------------------------------------------------- */

RCL_API uint64_t rcl_sqlite_page_charge(unsigned sz_page, unsigned sz_extra)
{
	return (uint64_t)RCL_SQLITE_PAGE_OVERHEAD + sz_page + sz_extra;
}

RCL_API int rcl_sqlite_install(const struct rcl_sqlite_config *cfg)
{
	bool expected = false;
	int rc;

	if (!cfg || !cfg->domain || (cfg->flags & ~RCL_SQLITE_NO_SHADOWS))
		return -EINVAL;
	if (cfg->allocator && (!cfg->allocator->alloc || !cfg->allocator->free))
		return -EINVAL;
	if (!atomic_compare_exchange_strong(&g_installed, &expected, true))
		return -EBUSY;
	g_cfg = *cfg;
	/* The header says the configuration is copied: the allocator too, so
	 * that one on the caller's stack does not dangle. */
	if (cfg->allocator) {
		g_allocator = *cfg->allocator;
		g_cfg.allocator = &g_allocator;
	}
	rc = sqlite3_config(SQLITE_CONFIG_PCACHE2, &rsq_methods);
	if (rc != SQLITE_OK) {
		memset(&g_cfg, 0, sizeof(g_cfg));
		memset(&g_allocator, 0, sizeof(g_allocator));
		atomic_store(&g_installed, false);
		return -EBUSY;
	}
	return 0;
}

RCL_API int rcl_sqlite_stats(struct rcl_sqlite_stats *out)
{
	if (!out)
		return -EINVAL;
	out->caches = CNT_GET(g_caches);
	out->pages = CNT_GET(g_pages);
	out->pinned = CNT_GET(g_pinned);
	out->charged = CNT_GET(g_charged);
	out->meta = CNT_GET(g_meta);
	rsq_stripes_sum(out);
	return 0;
}

RCL_API int rcl_sqlite_cache_stats(struct sqlite3 *db, const char *schema,
				   struct rcl_sqlite_stats *out)
{
	sqlite3_stmt *st = NULL;
	struct rsq_cache *c;
	sqlite3_mutex *m;
	char *sql;
	int rc, ret = 0;

	if (!db || !out)
		return -EINVAL;
	if (!atomic_load(&g_installed))
		return -ENOENT;
	sql = sqlite3_mprintf("SELECT 1 FROM \"%w\".sqlite_master LIMIT 1",
			      schema ? schema : "main");
	if (!sql)
		return -EIO;
	m = sqlite3_db_mutex(db);
	sqlite3_mutex_enter(m);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		ret = rc == SQLITE_ERROR ? -ENOENT : -EIO;
		goto out;
	}
	/* A first step brings the schema up to date (a reprepare inside the
	 * probed step would fetch other databases' pages first). */
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	tls_probe = NULL;
	tls_probing = true;
	rc = sqlite3_step(st);
	tls_probing = false;
	c = tls_probe;
	tls_probe = NULL;
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ret = -EIO;
		goto out;
	}
	if (!c) {
		ret = -ENOENT;
		goto out;
	}
	rsq_lock(c);
	out->caches = 1;
	out->pages = c->npages;
	out->pinned = c->npinned;
	out->charged = (uint64_t)(c->npages + c->ndoomed) * c->charge + c->meta;
	out->meta = c->meta;
	out->hits = c->hits;
	out->misses = c->misses;
	out->evictions = c->evictions;
	out->refault_activations = c->refault_activations;
	rsq_unlock(c);
out:
	sqlite3_finalize(st);
	sqlite3_mutex_leave(m);
	return ret;
}
