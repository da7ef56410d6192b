/* SPDX-License-Identifier: MIT */
/*
 * This example shows how to unit-test an application's own shrinker with
 * cmocka: the tests call the shrinker's callbacks through
 * rcl_shrinker_debug_count() and rcl_shrinker_debug_scan() (the kernel's
 * shrinker debugfs "count" and "scan N"), and the last two run real
 * rcl_shrinker_registry_shrink() passes.
 *
 * The cache.  A decoded-record cache: rcache_get() finds a record by key, or
 * decodes it (the expensive step a cache exists to avoid) and inserts it, and
 * returns it pinned; rcache_put() unpins it.  Records are in a small hash
 * table and on an LRU list (oldest at the head), all under one pthread mutex.
 * A pinned record is in use and must not be freed.  Two atomic counters,
 * written under the mutex, say how many records there are and how many of
 * them are unused, so that the shrinker can count without the mutex.
 *
 * The shrinker follows the kernel's rules:
 *
 *  - count_objects takes no lock.  It answers RCL_SHRINK_EMPTY when the
 *    cache holds no record at all, and otherwise the number of unused
 *    records, which may be stale by the time reclaim acts on it.  When every
 *    record is pinned that number is 0, not EMPTY: nothing can be freed now,
 *    but the cache is not empty, so the library keeps its backlog.
 *  - scan_objects answers RCL_SHRINK_STOP, without touching the cache, when
 *    the reclaimer's context lacks RCL_CTX_MAY_BLOCK (freeing a record calls
 *    free(), which may wait for allocator locks) or when the cache mutex is
 *    contended (pthread_mutex_trylock() fails): the library then defers the
 *    work to a later, capable call instead of losing it.  Otherwise it
 *    examines up to nr_to_scan records from the oldest end of the LRU, frees
 *    the unused ones (after dropping the mutex), and takes the pinned ones
 *    off the LRU: they go back, as the youngest, when their last pin is
 *    dropped (the kernel dcache's "lazy LRU"), so a pinned record does not
 *    block the head of the list.  It sets sc->nr_scanned to the number of
 *    records examined and returns the number freed.
 *
 * The tests.  Each test gets a fresh cache, a fresh registry and the cache's
 * shrinker registered in it (the setup and teardown fixtures); the teardown
 * frees the shrinker and the registry.  The cache allocates its records
 * with cmocka's test_malloc() and test_free() (see record_alloc()), so
 * cmocka fails a test that leaks a record or frees one twice; as it checks
 * when the test function returns, every test ends by letting the shrinker
 * empty the cache (shrink_to_empty()).  cmocka's allocator is not
 * thread-safe, and nothing here needs a second thread: the "contended mutex"
 * case is made by the test holding the cache's mutex itself.  A count
 * callback that took that mutex would deadlock in test_count_is_lock_free()
 * (and hit the meson timeout).
 *
 * Run it directly (./build/examples/shrinker_test) or with
 * meson test --suite examples.  It exits with a non-zero status if a test
 * fails.
 */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <reclaim/reclaim.h>

/*
 * The cache allocates its records through these two.  In the application
 * they are malloc() and free(); in this test build they are cmocka's
 * checking allocator.
 */
#define record_alloc(size) test_malloc(size)
#define record_free(ptr) test_free(ptr)

#define NR_BUCKETS 64u	/* a power of two */
#define TEXT_LEN 48

/* ------------------------------------------------------------------------- */
/* The application's cache                                                    */
/* ------------------------------------------------------------------------- */

struct lru_link {
	struct lru_link *prev, *next;
};

struct record {
	struct record *hnext;	/* hash chain (dispose list once unhashed) */
	struct lru_link lru;	/* on the LRU while on_lru */
	bool on_lru;
	unsigned refs;		/* pins */
	uint64_t key;
	char text[TEXT_LEN];	/* the decoded form */
};

struct rcache {
	pthread_mutex_t lock;	/* everything below but the counters */
	struct record *buckets[NR_BUCKETS];
	struct lru_link lru;	/* sentinel: next is the oldest record */
	/* Written under the lock, read without it by the shrinker's count. */
	atomic_ulong nr_records;
	atomic_ulong nr_unused;	/* records with refs == 0 */
	struct rcl_shrinker *shrinker;
};

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The expensive step the cache saves: here, a stand-in. */
static void decode(uint64_t key, char *text)
{
	snprintf(text, TEXT_LEN, "record %" PRIu64 ": %016" PRIx64, key,
		 mix64(key));
}

static void lru_add_tail(struct rcache *c, struct record *r)
{
	r->lru.prev = c->lru.prev;
	r->lru.next = &c->lru;
	c->lru.prev->next = &r->lru;
	c->lru.prev = &r->lru;
	r->on_lru = true;
}

static void lru_del(struct record *r)
{
	r->lru.prev->next = r->lru.next;
	r->lru.next->prev = r->lru.prev;
	r->lru.prev = r->lru.next = NULL;
	r->on_lru = false;
}

static struct record **bucket_of(struct rcache *c, uint64_t key)
{
	return &c->buckets[mix64(key) & (NR_BUCKETS - 1)];
}

static struct record *find_locked(struct rcache *c, uint64_t key)
{
	struct record *r;

	for (r = *bucket_of(c, key); r; r = r->hnext)
		if (r->key == key)
			return r;
	return NULL;
}

static void unhash_locked(struct rcache *c, struct record *r)
{
	struct record **pp;

	for (pp = bucket_of(c, r->key); *pp != r; pp = &(*pp)->hnext)
		;
	*pp = r->hnext;
	r->hnext = NULL;
}

/* Pin a cached record; a lookup also makes it the youngest. */
static void pin_locked(struct rcache *c, struct record *r)
{
	if (r->refs++ == 0)
		atomic_fetch_sub(&c->nr_unused, 1);
	if (r->on_lru) {
		lru_del(r);
		lru_add_tail(c, r);
	}
}

static int rcache_init(struct rcache *c)
{
	memset(c, 0, sizeof(*c));
	c->lru.prev = c->lru.next = &c->lru;
	atomic_init(&c->nr_records, 0);
	atomic_init(&c->nr_unused, 0);
	return -pthread_mutex_init(&c->lock, NULL);
}

/* Find or decode the record of @key; returns it pinned, or NULL. */
static struct record *rcache_get(struct rcache *c, uint64_t key)
{
	struct record *r, *found;

	pthread_mutex_lock(&c->lock);
	r = find_locked(c, key);
	if (r) {
		pin_locked(c, r);
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	pthread_mutex_unlock(&c->lock);

	/* Decode without the lock; another thread may insert it meanwhile. */
	r = record_alloc(sizeof(*r));
	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->key = key;
	r->refs = 1;
	decode(key, r->text);

	pthread_mutex_lock(&c->lock);
	found = find_locked(c, key);
	if (found) {
		pin_locked(c, found);
		pthread_mutex_unlock(&c->lock);
		record_free(r);
		return found;
	}
	r->hnext = *bucket_of(c, key);
	*bucket_of(c, key) = r;
	lru_add_tail(c, r);
	atomic_fetch_add(&c->nr_records, 1);	/* pinned: not unused */
	pthread_mutex_unlock(&c->lock);
	return r;
}

static void rcache_put(struct rcache *c, struct record *r)
{
	pthread_mutex_lock(&c->lock);
	if (--r->refs == 0) {
		/* Taken off the LRU by a scan while pinned: back, youngest. */
		if (!r->on_lru)
			lru_add_tail(c, r);
		atomic_fetch_add(&c->nr_unused, 1);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Is @key cached?  Neither pins the record nor makes it younger. */
static bool rcache_contains(struct rcache *c, uint64_t key)
{
	bool found;

	pthread_mutex_lock(&c->lock);
	found = find_locked(c, key) != NULL;
	pthread_mutex_unlock(&c->lock);
	return found;
}

/*
 * Free every record; the shrinker must be freed first.  Returns how many
 * records were still pinned (a bug in the caller; they are freed anyway).
 */
static unsigned long rcache_destroy(struct rcache *c)
{
	unsigned long pinned = 0;
	unsigned i;

	for (i = 0; i < NR_BUCKETS; i++) {
		struct record *r, *next;

		for (r = c->buckets[i]; r; r = next) {
			next = r->hnext;
			if (r->refs)
				pinned++;
			record_free(r);
		}
		c->buckets[i] = NULL;
	}
	pthread_mutex_destroy(&c->lock);
	return pinned;
}

/* ------------------------------------------------------------------------- */
/* The cache's shrinker                                                       */
/* ------------------------------------------------------------------------- */

static unsigned long rcache_count(struct rcl_shrinker *s,
				  struct rcl_shrink_control *sc)
{
	struct rcache *c = sc->priv;

	(void)s;
	/* No lock: both values may be stale, which the library tolerates. */
	if (atomic_load_explicit(&c->nr_records, memory_order_relaxed) == 0)
		return RCL_SHRINK_EMPTY;
	return atomic_load_explicit(&c->nr_unused, memory_order_relaxed);
}

static unsigned long rcache_scan(struct rcl_shrinker *s,
				 struct rcl_shrink_control *sc)
{
	struct rcache *c = sc->priv;
	struct record *dispose = NULL, *r;
	struct lru_link *l, *next;
	unsigned long examined = 0, freed = 0;

	(void)s;
	if (!(sc->context & RCL_CTX_MAY_BLOCK))
		return RCL_SHRINK_STOP;		/* free() may block */
	if (pthread_mutex_trylock(&c->lock) != 0)
		return RCL_SHRINK_STOP;		/* contended: deferred */
	for (l = c->lru.next; l != &c->lru && examined < sc->nr_to_scan;
	     l = next) {
		r = rcl_container_of(l, struct record, lru);
		next = l->next;
		examined++;
		lru_del(r);
		if (r->refs)
			continue;	/* pinned: back when unpinned */
		unhash_locked(c, r);
		atomic_fetch_sub(&c->nr_unused, 1);
		atomic_fetch_sub(&c->nr_records, 1);
		r->hnext = dispose;
		dispose = r;
	}
	pthread_mutex_unlock(&c->lock);

	while (dispose) {
		r = dispose;
		dispose = r->hnext;
		record_free(r);
		freed++;
	}
	sc->nr_scanned = examined;
	return freed;
}

static const struct rcl_shrinker_ops rcache_shrinker_ops = {
	.count_objects = rcache_count,
	.scan_objects = rcache_scan,
};

/* Allocate and register the cache's shrinker in @reg. */
static int rcache_register_shrinker(struct rcache *c,
				    struct rcl_shrinker_registry *reg)
{
	const struct rcl_shrinker_config cfg = {
		.ops = &rcache_shrinker_ops,
		.priv = c,
		.name = "rcache",
		.seeks = RCL_DEFAULT_SEEKS,
	};
	struct rcl_shrinker *s;
	int err;

	err = rcl_shrinker_new(reg, &cfg, &s);
	if (err)
		return err;
	err = rcl_shrinker_register(s);
	if (err) {
		rcl_shrinker_free(s);
		return err;
	}
	c->shrinker = s;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Fixtures and helpers                                                       */
/* ------------------------------------------------------------------------- */

struct fixture {
	struct rcache cache;
	struct rcl_shrinker_registry *reg;
};

static int setup(void **state)
{
	struct fixture *f = test_calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (rcache_init(&f->cache) != 0) {
		test_free(f);
		return -1;
	}
	if (rcl_shrinker_registry_new(NULL, &f->reg) != 0) {
		rcache_destroy(&f->cache);
		test_free(f);
		return -1;
	}
	if (rcache_register_shrinker(&f->cache, f->reg) != 0) {
		rcl_shrinker_registry_free(f->reg);
		rcache_destroy(&f->cache);
		test_free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int err;

	/* The shrinker goes first: once it is freed, no callback can run. */
	err = rcl_shrinker_free(f->cache.shrinker);
	if (!err)
		err = rcl_shrinker_registry_free(f->reg);
	/* After a failed test the cache may still hold records, even pinned. */
	rcache_destroy(&f->cache);
	test_free(f);
	return err;
}

/* Insert records @first .. @first + @n - 1, unpinned, oldest first. */
static void fill(struct fixture *f, uint64_t first, uint64_t n)
{
	uint64_t k;

	for (k = first; k < first + n; k++) {
		struct record *r = rcache_get(&f->cache, k);

		assert_non_null(r);
		rcache_put(&f->cache, r);
	}
}

/* Pin the cached record of @key, which also makes it the youngest. */
static struct record *pin(struct fixture *f, uint64_t key)
{
	struct record *r;

	assert_true(rcache_contains(&f->cache, key));
	r = rcache_get(&f->cache, key);
	assert_non_null(r);
	assert_int_equal(r->key, key);
	return r;
}

/* The shrinker's count, as the kernel's debugfs "count" would show it. */
static unsigned long count(struct fixture *f, uint64_t context)
{
	unsigned long n = 0;

	assert_int_equal(rcl_shrinker_debug_count(f->cache.shrinker, 0,
						  context, &n), 0);
	return n;
}

/* "scan N": returns what scan_objects returned; *scanned its nr_scanned. */
static unsigned long scan(struct fixture *f, unsigned long nr,
			  uint64_t context, unsigned long *scanned)
{
	unsigned long freed = 0;

	assert_int_equal(rcl_shrinker_debug_scan(f->cache.shrinker, 0, nr,
						 context, &freed, scanned), 0);
	return freed;
}

/* How many of the keys @first .. @first + @n - 1 are cached. */
static unsigned long cached(struct fixture *f, uint64_t first, uint64_t n)
{
	unsigned long nr = 0;
	uint64_t k;

	for (k = first; k < first + n; k++)
		nr += rcache_contains(&f->cache, k);
	return nr;
}

/*
 * Every test ends here.  cmocka checks for leaks when the test function
 * returns, before the teardown runs, so the records a test created must be
 * gone by then.  The shrinker itself frees them, which also checks that it
 * can empty the cache once nothing is pinned.  (A test that forgets this
 * call fails with a leak report; cmocka frees the leaked records, so its
 * teardown then crashes on them, which cmocka reports as well.)
 */
static void shrink_to_empty(struct fixture *f)
{
	unsigned long scanned = 0;

	assert_int_not_equal(scan(f, ULONG_MAX, RCL_CTX_CAPABLE, &scanned),
			     RCL_SHRINK_STOP);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), RCL_SHRINK_EMPTY);
}

/* ------------------------------------------------------------------------- */
/* Tests of count_objects                                                     */
/* ------------------------------------------------------------------------- */

static void test_count_empty_then_n(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(count(f, RCL_CTX_CAPABLE), RCL_SHRINK_EMPTY);
	fill(f, 0, 7);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 7);
	/* Counting needs no capability at all. */
	assert_int_equal(count(f, 0), 7);
	/* Hits add nothing. */
	fill(f, 0, 7);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 7);
	shrink_to_empty(f);
}

static void test_count_is_lock_free(void **state)
{
	struct fixture *f = *state;

	fill(f, 0, 5);
	/* A count that took the cache mutex would deadlock here. */
	pthread_mutex_lock(&f->cache.lock);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 5);
	pthread_mutex_unlock(&f->cache.lock);
	shrink_to_empty(f);
}

/* ------------------------------------------------------------------------- */
/* Tests of scan_objects                                                      */
/* ------------------------------------------------------------------------- */

static void test_scan_frees_oldest_first(void **state)
{
	struct fixture *f = *state;
	unsigned long scanned = 0;

	fill(f, 0, 10);
	assert_int_equal(scan(f, 4, RCL_CTX_CAPABLE, &scanned), 4);
	assert_int_equal(scanned, 4);
	assert_int_equal(cached(f, 0, 4), 0);
	assert_int_equal(cached(f, 4, 6), 6);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 6);

	/* More than there is: everything, and nr_scanned says how many. */
	assert_int_equal(scan(f, 1000, RCL_CTX_CAPABLE, &scanned), 6);
	assert_int_equal(scanned, 6);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), RCL_SHRINK_EMPTY);

	/* Scanning an empty cache is harmless. */
	assert_int_equal(scan(f, 10, RCL_CTX_CAPABLE, &scanned), 0);
	assert_int_equal(scanned, 0);
	shrink_to_empty(f);
}

static void test_scan_spares_recently_used(void **state)
{
	struct fixture *f = *state;
	unsigned long scanned = 0;

	fill(f, 0, 6);
	fill(f, 0, 1);		/* a hit on the oldest: now the youngest */
	assert_int_equal(scan(f, 2, RCL_CTX_CAPABLE, &scanned), 2);
	assert_int_equal(scanned, 2);
	assert_true(rcache_contains(&f->cache, 0));
	assert_false(rcache_contains(&f->cache, 1));
	assert_false(rcache_contains(&f->cache, 2));
	assert_int_equal(cached(f, 3, 3), 3);
	shrink_to_empty(f);
}

static void test_pinned_not_counted_not_freed(void **state)
{
	struct fixture *f = *state;
	struct record *a, *b;
	unsigned long scanned = 0;
	char text[TEXT_LEN];

	fill(f, 0, 6);
	a = pin(f, 1);
	b = pin(f, 4);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 4);

	/* All six are examined; only the four unused ones are freed. */
	assert_int_equal(scan(f, 100, RCL_CTX_CAPABLE, &scanned), 4);
	assert_int_equal(scanned, 6);
	assert_int_equal(cached(f, 0, 6), 2);
	assert_true(rcache_contains(&f->cache, 1));
	assert_true(rcache_contains(&f->cache, 4));
	decode(1, text);
	assert_string_equal(a->text, text);	/* still valid: not freed */

	/* Nothing freeable, but not empty: 0, so the backlog is kept. */
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 0);
	assert_int_equal(scan(f, 100, RCL_CTX_CAPABLE, &scanned), 0);
	assert_int_equal(scanned, 0);	/* they are off the LRU now */

	/* Unpinned, they are back on the LRU, counted and freeable. */
	rcache_put(&f->cache, a);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 1);
	rcache_put(&f->cache, b);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 2);
	assert_int_equal(scan(f, 100, RCL_CTX_CAPABLE, &scanned), 2);
	assert_int_equal(scanned, 2);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), RCL_SHRINK_EMPTY);
	shrink_to_empty(f);
}

static void test_scan_counts_skipped_pinned_as_scanned(void **state)
{
	struct fixture *f = *state;
	struct record *r;
	unsigned long scanned = 0;

	/* Oldest first: 0, 1 (kept pinned: a miss returns it so), 2 .. 5. */
	fill(f, 0, 1);
	r = rcache_get(&f->cache, 1);
	assert_non_null(r);
	fill(f, 2, 4);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 5);

	/* Three examined (0, 1, 2), two freed (0, 2): nr_scanned is 3. */
	assert_int_equal(scan(f, 3, RCL_CTX_CAPABLE, &scanned), 2);
	assert_int_equal(scanned, 3);
	assert_false(rcache_contains(&f->cache, 0));
	assert_true(rcache_contains(&f->cache, 1));
	assert_false(rcache_contains(&f->cache, 2));
	assert_int_equal(cached(f, 3, 3), 3);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 3);
	rcache_put(&f->cache, r);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 4);
	shrink_to_empty(f);
}

static void test_scan_without_may_block_stops(void **state)
{
	struct fixture *f = *state;
	static const uint64_t contexts[] = {
		0, RCL_CTX_MAY_IO, RCL_CTX_USER(0) | RCL_CTX_MAY_IO,
	};
	unsigned long scanned = 0;
	size_t i;

	fill(f, 0, 8);
	for (i = 0; i < sizeof(contexts) / sizeof(contexts[0]); i++) {
		assert_int_equal(scan(f, 8, contexts[i], &scanned),
				 RCL_SHRINK_STOP);
		assert_int_equal(count(f, contexts[i]), 8);
	}
	assert_int_equal(cached(f, 0, 8), 8);
	/* MAY_BLOCK is all it needs. */
	assert_int_equal(scan(f, 8, RCL_CTX_MAY_BLOCK, &scanned), 8);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), RCL_SHRINK_EMPTY);
	shrink_to_empty(f);
}

static void test_scan_with_lock_held_stops(void **state)
{
	struct fixture *f = *state;
	unsigned long scanned = 0;

	fill(f, 0, 8);
	pthread_mutex_lock(&f->cache.lock);	/* trylock in the scan fails */
	assert_int_equal(scan(f, 8, RCL_CTX_CAPABLE, &scanned),
			 RCL_SHRINK_STOP);
	pthread_mutex_unlock(&f->cache.lock);
	assert_int_equal(cached(f, 0, 8), 8);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 8);
	assert_int_equal(scan(f, 8, RCL_CTX_CAPABLE, &scanned), 8);
	assert_int_equal(scanned, 8);
	shrink_to_empty(f);
}

/* ------------------------------------------------------------------------- */
/* Tests with real reclaim passes                                             */
/* ------------------------------------------------------------------------- */

#define NR_FILL 200u

static bool key_in(uint64_t key, const uint64_t *keys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (keys[i] == key)
			return true;
	return false;
}

/* A real reclaim pass at priority 0 (the most urgent) by a capable thread. */
static void urgent_pass(struct fixture *f)
{
	assert_int_equal(rcl_shrinker_registry_shrink(f->reg, 0, 0,
						      RCL_CTX_CAPABLE, NULL),
			 0);
}

static void test_registry_shrink_priority_0_shrinks(void **state)
{
	static const uint64_t pinned_keys[] = { 0, 1, 50, 120, NR_FILL - 1 };
	enum { NR_PINNED = sizeof(pinned_keys) / sizeof(pinned_keys[0]) };
	struct fixture *f = *state;
	struct record *pinned[NR_PINNED];
	struct rcl_shrink_result res = { 0 };
	struct rcl_shrinker_stats st;
	unsigned long before, after, round;
	bool seen_survivor = false;
	uint64_t k;
	size_t i;

	/* The pinned records keep their age: the pass meets them. */
	for (k = 0, i = 0; k < NR_FILL; k++) {
		struct record *r = rcache_get(&f->cache, k);

		assert_non_null(r);
		if (key_in(k, pinned_keys, NR_PINNED))
			pinned[i++] = r;
		else
			rcache_put(&f->cache, r);
	}
	before = cached(f, 0, NR_FILL);
	assert_int_equal(before, NR_FILL);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), NR_FILL - NR_PINNED);

	assert_int_equal(rcl_shrinker_registry_shrink(f->reg, 0, 0,
						      RCL_CTX_CAPABLE, &res),
			 0);
	after = cached(f, 0, NR_FILL);
	assert_int_equal(res.nr_shrinkers, 1);
	assert_int_equal(res.nr_stopped, 0);
	assert_true(after < before);
	/* The library's accounting agrees with the cache's. */
	assert_int_equal(res.freed, before - after);
	/* The pinned records the pass met count as scanned, not freed. */
	assert_true(res.scanned > res.freed);
	assert_int_equal(rcl_shrinker_stats(f->cache.shrinker, &st), 0);
	assert_int_equal(st.calls, 1);
	assert_int_equal(st.freed, res.freed);
	assert_int_equal(st.scanned, res.scanned);
	/* Priority 0 is urgent: at least half of what was freeable went. */
	assert_true(res.freed >= (NR_FILL - NR_PINNED) / 2);
	printf("    priority 0: freed %lu of %u unused records, "
	       "scanned %lu\n", res.freed, NR_FILL - NR_PINNED, res.scanned);

	/* Oldest first: the unpinned survivors are the youngest records. */
	for (k = 0; k < NR_FILL; k++) {
		if (key_in(k, pinned_keys, NR_PINNED)) {
			assert_true(rcache_contains(&f->cache, k));
			continue;
		}
		if (rcache_contains(&f->cache, k))
			seen_survivor = true;
		else
			assert_false(seen_survivor);
	}

	/* Repeated urgent passes leave only the pinned records... */
	for (round = 0; round < 64 && count(f, RCL_CTX_CAPABLE) != 0; round++)
		urgent_pass(f);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), 0);
	assert_int_equal(cached(f, 0, NR_FILL), NR_PINNED);

	/* ...and once they are unpinned, the cache can be emptied. */
	for (i = 0; i < NR_PINNED; i++)
		rcache_put(&f->cache, pinned[i]);
	for (round = 0; round < 64 &&
			count(f, RCL_CTX_CAPABLE) != RCL_SHRINK_EMPTY; round++)
		urgent_pass(f);
	assert_int_equal(count(f, RCL_CTX_CAPABLE), RCL_SHRINK_EMPTY);
	shrink_to_empty(f);
}

static void test_registry_shrink_stop_is_deferred(void **state)
{
	struct fixture *f = *state;
	struct rcl_shrink_result res = { 0 };
	unsigned long backlog = 0;

	fill(f, 0, NR_FILL);
	/* A reclaimer that may not block: STOP, and the work is deferred. */
	assert_int_equal(rcl_shrinker_registry_shrink(f->reg, 0, 0,
						      RCL_CTX_MAY_IO, &res), 0);
	assert_int_equal(res.nr_stopped, 1);
	assert_int_equal(res.freed, 0);
	assert_int_equal(cached(f, 0, NR_FILL), NR_FILL);
	assert_int_equal(rcl_shrinker_backlog(f->cache.shrinker, 0, &backlog),
			 0);
	assert_true(backlog > 0);

	/* The next capable call does the work. */
	memset(&res, 0, sizeof(res));
	assert_int_equal(rcl_shrinker_registry_shrink(f->reg, 0, 0,
						      RCL_CTX_CAPABLE, &res),
			 0);
	assert_int_equal(res.nr_stopped, 0);
	assert_true(res.freed > 0);
	assert_int_equal(cached(f, 0, NR_FILL), NR_FILL - res.freed);
	printf("    deferred %lu, then freed %lu\n", backlog, res.freed);
	shrink_to_empty(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_count_empty_then_n,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_is_lock_free,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_frees_oldest_first,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_spares_recently_used,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_pinned_not_counted_not_freed, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_scan_counts_skipped_pinned_as_scanned, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_scan_without_may_block_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scan_with_lock_held_stops,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_registry_shrink_priority_0_shrinks, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_registry_shrink_stop_is_deferred, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
