/* SPDX-License-Identifier: MIT */
/*
 * This example shows how to build a size-bounded object cache by hand, on one
 * lruvec, for caches that own their index (objcache.c shows the same cache on
 * <reclaim/objcache.h>, which does all of this for you): a hash table finds
 * objects by key, the lruvec ages them with the kernel's
 * two-touch rule, and a thread that pushes the cache over its byte budget
 * reclaims from the inactive tail until the cache fits again.
 *
 * The cache.  Objects have a key, a reference count and a payload whose size
 * (64..2048 bytes, derived from the key) is the object's weight.  The hash
 * table has one mutex per bucket.  Every cached object holds one reference
 * for the table (the "index reference"); a lookup takes one more (a pin)
 * under the bucket lock and drops it when done.  This is the pin (try-get)
 * protocol of the "Object lifetime" section of <reclaim/lruvec.h>:
 *
 *  - lookup: find and pin under the bucket lock, then
 *    rcl_lruvec_mark_accessed() and use the object, then unpin;
 *  - evict callback: under the bucket lock, an object that is unhashed or
 *    pinned is BUSY; otherwise it is unhashed, uncharged and freed (FREED);
 *  - delete: unhash under the bucket lock (the deleter now owns the index
 *    reference), rcl_lruvec_del_wait(), then drop that reference.
 *
 * The budget.  A memory domain (<reclaim/domain.h>) holds the byte budget;
 * each object's payload is charged to it from its allocation to its free.
 * The lruvec is attached to the domain, and the domain's background
 * reclaimer (started with rcl_domain_reclaimer_start()) keeps the free
 * headroom between its low and high watermarks, scanning the lruvec with the
 * proportional scan controller.  A charge that would leave less headroom
 * than the min watermark reclaims in the charging thread (direct reclaim).
 * The domain is in strict mode: a charge it cannot bring under budget (all
 * that is left is pinned, in flight, or being reclaimed by another thread)
 * fails, and that miss is then not cached.  So the usage never exceeds the
 * budget, whatever the timing.
 *
 * The workload is deterministic per thread (splitmix64 seeded by --seed and
 * the thread number): each operation is a get-or-create of a key, 80% of them
 * on the 20% "hot" keys, or, once in 64 operations, an explicit delete.  The
 * interleaving of the threads is not deterministic, so the counts vary a
 * little from run to run.  Every lookup checks the payload against the key,
 * which catches an object that was freed or reused under a pin.
 *
 * Usage: handcache [--ops N] [--threads T] [--budget BYTES[K|M|G]] [--seed S]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reclaim/reclaim.h>

/* The key space: HOT_PERCENT of the operations go to the first HOT_KEYS. */
#define NR_KEYS		10000u
#define HOT_KEYS	(NR_KEYS / 5)
#define HOT_PERCENT	80u
/* One operation in DELETE_EVERY is an explicit delete. */
#define DELETE_EVERY	64u

/* Payload sizes, in bytes; multiples of 8. */
#define MIN_PAYLOAD	64u
#define MAX_PAYLOAD	2048u

#define NR_BUCKETS	4096u	/* a power of two */


#define DEFAULT_OPS	200000ul
#define DEFAULT_THREADS	2u
#define DEFAULT_BUDGET	(2ull << 20)
#define DEFAULT_SEED	1ull
#define MAX_THREADS	64u
#define MIN_BUDGET	(64ull << 10)

#define OBJ_MAGIC	0x4f424a43u	/* "OBJC" */
#define OBJ_POISON	0xdeadbeefu

struct obj {
	struct rcl_lru_node lru;	/* on the cache's lruvec */
	struct obj *hnext;		/* hash chain; bucket lock */
	uint64_t key;
	atomic_uint refs;		/* index reference + one per pin */
	bool hashed;			/* bucket lock */
	uint32_t magic;
	uint32_t size;			/* payload bytes: the LRU weight */
	uint64_t payload[];		/* size / 8 words, derived from key */
};

struct bucket {
	pthread_mutex_t lock;
	struct obj *head;
};

struct cache {
	struct bucket *buckets;
	struct rcl_lruvec lru;
	struct rcl_domain *dom;		/* the budget and the reclaimers */
	uint64_t budget;
	_Atomic uint64_t peak;
	_Atomic uint64_t uncached;	/* misses served without caching */
	_Atomic uint64_t nr_evicted;	/* FREED answers of cache_evict() */
	_Atomic uint64_t bytes_evicted;
	_Atomic uint64_t bad_payloads;
	_Atomic uint64_t lib_errors;	/* unexpected library return values */
};

struct worker {
	pthread_t thread;
	struct cache *cache;
	unsigned id;
	uint64_t rng;
	unsigned long nr_ops;
	/* results, read by main() after the join */
	unsigned long lookups, hits, misses, raced;
	unsigned long deletes, deleted;
};

/* ------------------------------------------------------------------------- */
/* Deterministic pseudo-random numbers and payloads                          */
/* ------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return mix64(*state);
}

static uint64_t pick_key(uint64_t *rng)
{
	uint64_t r = splitmix64(rng);

	if (r % 100 < HOT_PERCENT)
		return (r >> 32) % HOT_KEYS;
	return HOT_KEYS + (r >> 32) % (NR_KEYS - HOT_KEYS);
}

static uint32_t payload_size(uint64_t key)
{
	const uint32_t steps = (MAX_PAYLOAD - MIN_PAYLOAD) / 8 + 1;

	return MIN_PAYLOAD + (uint32_t)(mix64(key ^ 0x5a5a5a5aull) % steps) * 8;
}

static uint64_t payload_word(uint64_t key, uint32_t i)
{
	return mix64(key * 0x100000001b3ull + i);
}

/* ------------------------------------------------------------------------- */
/* Objects and the byte budget                                               */
/* ------------------------------------------------------------------------- */

static void lib_error(struct cache *c, const char *what, int err)
{
	fprintf(stderr, "handcache: %s returned %d (%s)\n", what, err,
		strerror(-err));
	atomic_fetch_add(&c->lib_errors, 1);
}

/*
 * Charge the domain.  Below the low watermark this wakes the background
 * reclaimer; below min it reclaims here, before the object is inserted
 * (no bucket lock is held, so the evict callback can take one).
 */
static bool cache_charge(struct cache *c, uint32_t bytes)
{
	uint64_t usage, peak;
	int err = rcl_domain_charge(c->dom, bytes, RCL_CTX_CAPABLE, NULL);

	if (err == -ENOMEM) {
		atomic_fetch_add(&c->uncached, 1);
		return false;
	}
	if (err) {
		lib_error(c, "rcl_domain_charge()", err);
		return false;
	}
	usage = rcl_domain_usage(c->dom);
	peak = atomic_load(&c->peak);
	while (usage > peak &&
	       !atomic_compare_exchange_weak(&c->peak, &peak, usage))
		;
	return true;
}

static void cache_uncharge(struct cache *c, uint32_t bytes)
{
	rcl_domain_uncharge(c->dom, bytes);
}

/* A new, charged, unhashed object, pinned once (by the caller). */
static struct obj *obj_new(struct cache *c, uint64_t key)
{
	uint32_t size = payload_size(key), i;
	struct obj *o = malloc(sizeof(*o) + size);

	if (!o)
		return NULL;
	rcl_lru_node_init(&o->lru);
	o->hnext = NULL;
	o->key = key;
	atomic_init(&o->refs, 1);
	o->hashed = false;
	o->magic = OBJ_MAGIC;
	o->size = size;
	for (i = 0; i < size / 8; i++)
		o->payload[i] = payload_word(key, i);
	if (!cache_charge(c, size)) {
		free(o);	/* not charged: this miss is not cached */
		return NULL;
	}
	return o;
}

static void obj_free(struct cache *c, struct obj *o)
{
	cache_uncharge(c, o->size);
	o->magic = OBJ_POISON;
	free(o);
}

/* Drop a reference; the last one frees (the object is off the lruvec). */
static void obj_put(struct cache *c, struct obj *o)
{
	if (atomic_fetch_sub(&o->refs, 1) == 1)
		obj_free(c, o);
}

/* Does the pinned object still hold what its key says? */
static bool obj_verify(const struct obj *o, uint64_t key)
{
	uint32_t i;

	if (o->magic != OBJ_MAGIC || o->key != key ||
	    o->size != payload_size(key))
		return false;
	for (i = 0; i < o->size / 8; i++)
		if (o->payload[i] != payload_word(key, i))
			return false;
	return true;
}

/* ------------------------------------------------------------------------- */
/* The hash table                                                            */
/* ------------------------------------------------------------------------- */

static struct bucket *bucket_of(struct cache *c, uint64_t key)
{
	return &c->buckets[mix64(key) & (NR_BUCKETS - 1)];
}

static struct obj *find_locked(struct bucket *b, uint64_t key)
{
	struct obj *o;

	for (o = b->head; o; o = o->hnext)
		if (o->key == key)
			return o;
	return NULL;
}

static void hash_locked(struct bucket *b, struct obj *o)
{
	o->hnext = b->head;
	b->head = o;
	o->hashed = true;
}

static void unhash_locked(struct bucket *b, struct obj *o)
{
	struct obj **pp;

	for (pp = &b->head; *pp != o; pp = &(*pp)->hnext)
		;
	*pp = o->hnext;
	o->hnext = NULL;
	o->hashed = false;
}

/* Lookup: find and pin under the bucket lock. */
static struct obj *cache_lookup(struct cache *c, uint64_t key)
{
	struct bucket *b = bucket_of(c, key);
	struct obj *o;

	pthread_mutex_lock(&b->lock);
	o = find_locked(b, key);
	if (o)
		atomic_fetch_add(&o->refs, 1);
	pthread_mutex_unlock(&b->lock);
	return o;
}

/* ------------------------------------------------------------------------- */
/* Reclaim                                                                   */
/* ------------------------------------------------------------------------- */

/*
 * Called by rcl_lruvec_shrink_inactive() for each isolated node, with no
 * library lock held.  The node cannot be freed under us: a deleter waits in
 * rcl_lruvec_del_wait() until we answer, and only we free hashed objects.
 */
static enum rcl_evict_status cache_evict(struct rcl_lru_node *node,
					 struct rcl_evict_control *ctl)
{
	struct cache *c = ctl->priv;
	struct obj *o = rcl_container_of(node, struct obj, lru);
	struct bucket *b = bucket_of(c, o->key);

	pthread_mutex_lock(&b->lock);
	if (!o->hashed || atomic_load(&o->refs) != 1) {
		/* Pinned by a lookup, or being deleted: put it back. */
		pthread_mutex_unlock(&b->lock);
		return RCL_EVICT_BUSY;
	}
	/* Only the index holds it, and nobody can pin it without the lock. */
	unhash_locked(b, o);
	pthread_mutex_unlock(&b->lock);

	atomic_fetch_add(&c->nr_evicted, 1);
	atomic_fetch_add(&c->bytes_evicted, ctl->weight);
	obj_free(c, o);		/* the library does not touch the node again */
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops cache_ops = {
	.evict = cache_evict,
};

/* ------------------------------------------------------------------------- */
/* Cache operations                                                          */
/* ------------------------------------------------------------------------- */

/*
 * Miss: create the object, charge it (the domain reclaims if needed), then
 * insert it - unless another thread was quicker, in which case its object is
 * used.  Returns the object pinned, or NULL.
 */
static struct obj *cache_create(struct cache *c, struct worker *w,
				uint64_t key)
{
	struct bucket *b = bucket_of(c, key);
	struct obj *o = obj_new(c, key), *old;
	int err;

	if (!o)
		return NULL;

	pthread_mutex_lock(&b->lock);
	old = find_locked(b, key);
	if (old) {
		atomic_fetch_add(&old->refs, 1);
		pthread_mutex_unlock(&b->lock);
		obj_free(c, o);
		w->raced++;
		return old;
	}
	/*
	 * On the lruvec before it is in the table, so that whoever finds it
	 * in the table finds it on the lruvec too.  rcl_lruvec_add() takes
	 * only library locks, which are never held while cache_evict() runs:
	 * calling it under the bucket lock is fine.
	 */
	err = rcl_lruvec_add(&c->lru, &o->lru, RCL_LRU_FILE, o->size, 0);
	if (err) {
		pthread_mutex_unlock(&b->lock);
		lib_error(c, "rcl_lruvec_add()", err);
		obj_free(c, o);
		return NULL;
	}
	atomic_fetch_add(&o->refs, 1);	/* the index reference */
	hash_locked(b, o);
	pthread_mutex_unlock(&b->lock);
	return o;
}

static void cache_get(struct cache *c, struct worker *w, uint64_t key)
{
	struct obj *o;
	int err;

	w->lookups++;
	o = cache_lookup(c, key);
	if (o) {
		w->hits++;
	} else {
		w->misses++;
		o = cache_create(c, w, key);
		if (!o)
			return;
	}
	/* -ENOENT: a concurrent delete took it off the lruvec already. */
	err = rcl_lruvec_mark_accessed(&c->lru, &o->lru);
	if (err && err != -ENOENT)
		lib_error(c, "rcl_lruvec_mark_accessed()", err);
	if (!obj_verify(o, key)) {
		if (atomic_fetch_add(&c->bad_payloads, 1) == 0)
			fprintf(stderr, "handcache: key %" PRIu64
				": payload does not match the key\n", key);
	}
	obj_put(c, o);
}

/* Unhash, take off the lruvec, drop the index reference. */
static bool cache_delete_obj(struct cache *c, struct bucket *b, struct obj *o)
{
	int err;

	unhash_locked(b, o);
	pthread_mutex_unlock(&b->lock);
	/* Waits if a reclaimer has it isolated: it will answer BUSY. */
	err = rcl_lruvec_del_wait(&c->lru, &o->lru);
	if (err) {
		/* The node may still be known to the library: leak it. */
		lib_error(c, "rcl_lruvec_del_wait()", err);
		return false;
	}
	obj_put(c, o);
	return true;
}

static bool cache_delete(struct cache *c, uint64_t key)
{
	struct bucket *b = bucket_of(c, key);
	struct obj *o;

	pthread_mutex_lock(&b->lock);
	o = find_locked(b, key);
	if (!o) {
		pthread_mutex_unlock(&b->lock);
		return false;
	}
	return cache_delete_obj(c, b, o);	/* unlocks */
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long i;

	for (i = 0; i < w->nr_ops; i++) {
		uint64_t key = pick_key(&w->rng);

		if (splitmix64(&w->rng) % DELETE_EVERY == 0) {
			w->deletes++;
			if (cache_delete(w->cache, key))
				w->deleted++;
		} else {
			cache_get(w->cache, w, key);
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Setup and teardown                                                        */
/* ------------------------------------------------------------------------- */

static int cache_init(struct cache *c, uint64_t budget, bool background)
{
	struct rcl_lruvec_config cfg = {
		.ops = &cache_ops,
		.priv = c,
	};
	struct rcl_domain_config dcfg = {
		.budget = budget,
		.mode = RCL_CHARGE_STRICT,
	};
	unsigned i;
	int err;

	memset(c, 0, sizeof(*c));
	c->budget = budget;
	c->buckets = calloc(NR_BUCKETS, sizeof(*c->buckets));
	if (!c->buckets)
		return -ENOMEM;
	for (i = 0; i < NR_BUCKETS; i++)
		pthread_mutex_init(&c->buckets[i].lock, NULL);
	err = rcl_lruvec_init(&c->lru, &cfg);
	if (err)
		goto fail_buckets;
	err = rcl_domain_new(&dcfg, &c->dom);
	if (err)
		goto fail_lru;
	err = rcl_domain_attach(c->dom, &c->lru, 0);
	if (!err && background)
		err = rcl_domain_reclaimer_start(c->dom);
	if (!err)
		return 0;
	rcl_domain_detach(c->dom, &c->lru);
	rcl_domain_free(c->dom);
fail_lru:
	rcl_lruvec_destroy(&c->lru);
fail_buckets:
	for (i = 0; i < NR_BUCKETS; i++)
		pthread_mutex_destroy(&c->buckets[i].lock);
	free(c->buckets);
	return err;
}

/* Delete every object; returns how many. */
static unsigned long cache_clear(struct cache *c)
{
	unsigned long n = 0;
	unsigned i;

	for (i = 0; i < NR_BUCKETS; i++) {
		struct bucket *b = &c->buckets[i];

		for (;;) {
			pthread_mutex_lock(&b->lock);
			if (!b->head) {
				pthread_mutex_unlock(&b->lock);
				break;
			}
			if (!cache_delete_obj(c, b, b->head))	/* unlocks */
				return n;
			n++;
		}
	}
	return n;
}

static unsigned long cache_count(struct cache *c)
{
	unsigned long n = 0;
	unsigned i;

	for (i = 0; i < NR_BUCKETS; i++) {
		struct obj *o;

		pthread_mutex_lock(&c->buckets[i].lock);
		for (o = c->buckets[i].head; o; o = o->hnext)
			n++;
		pthread_mutex_unlock(&c->buckets[i].lock);
	}
	return n;
}

/* Returns the first failure; the cache is gone only if 0. */
static int cache_destroy(struct cache *c)
{
	unsigned i;
	int err = rcl_domain_reclaimer_stop(c->dom);

	if (!err)
		err = rcl_domain_detach(c->dom, &c->lru);
	if (!err)
		err = rcl_domain_free(c->dom);
	if (!err)
		err = rcl_lruvec_destroy(&c->lru);
	if (err)
		return err;
	for (i = 0; i < NR_BUCKETS; i++)
		pthread_mutex_destroy(&c->buckets[i].lock);
	free(c->buckets);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Command line and report                                                   */
/* ------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: handcache [OPTION]...\n"
		"Run a skewed get-or-create workload on an object cache with a\n"
		"byte budget, built on a libreclaim lruvec; print a summary and\n"
		"check it.\n"
		"\n"
		"  -n, --ops N         operations per thread (default %lu)\n"
		"  -t, --threads T     worker threads, 1..%u (default %u)\n"
		"  -b, --budget BYTES  byte budget, K/M/G suffix (default %llu)\n"
		"  -s, --seed S        workload seed (default %llu)\n"
		"  -D, --no-background  no background reclaimer: direct reclaim only\n"
		"  -h, --help          show this help\n"
		"\n"
		"Exit status: 0 if every self-check passed, 1 otherwise.\n",
		DEFAULT_OPS, MAX_THREADS, DEFAULT_THREADS,
		(unsigned long long)DEFAULT_BUDGET,
		(unsigned long long)DEFAULT_SEED);
}

/* A non-negative number with an optional K/M/G suffix (if @suffix). */
static bool parse_u64(const char *s, bool suffix, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return false;
	if (suffix && *end) {
		switch (*end++) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: return false;
		}
	}
	if (*end || (v << shift) >> shift != v)
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

static void print_bytes(const char *prefix, uint64_t bytes)
{
	printf("%s%" PRIu64 " bytes (%.1f MiB)", prefix, bytes,
	       (double)bytes / (1 << 20));
}

static int check(bool ok, const char *what)
{
	if (!ok)
		fprintf(stderr, "handcache: FAILED: %s\n", what);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ops", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "budget", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "no-background", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ops = DEFAULT_OPS, threads = DEFAULT_THREADS;
	uint64_t budget = DEFAULT_BUDGET, seed = DEFAULT_SEED;
	unsigned long lookups = 0, hits = 0, misses = 0, raced = 0;
	unsigned long deletes = 0, deleted = 0, cached, cleared;
	struct rcl_lruvec_type_stats st;
	struct rcl_vmstat vm;
	uint64_t in_w, act_w, scans, left;
	bool background = true;
	size_t in_nr, act_nr;
	struct worker *workers;
	struct cache cache;
	unsigned i;
	int opt, err, failed = 0;

	while ((opt = getopt_long(argc, argv, "n:t:b:s:Dh", longopts,
				  NULL)) != -1) {
		bool ok = true;

		switch (opt) {
		case 'n':
			ok = parse_u64(optarg, false, &ops) && ops >= 1 &&
			     ops <= 1000000000;
			break;
		case 't':
			ok = parse_u64(optarg, false, &threads) &&
			     threads >= 1 && threads <= MAX_THREADS;
			break;
		case 'b':
			ok = parse_u64(optarg, true, &budget) &&
			     budget >= MIN_BUDGET;
			break;
		case 's':
			ok = parse_u64(optarg, false, &seed);
			break;
		case 'D':
			background = false;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return EXIT_FAILURE;
		}
		if (!ok) {
			const struct option *lo = longopts;

			while (lo->val != opt)
				lo++;
			fprintf(stderr, "handcache: bad value for --%s: '%s'%s\n",
				lo->name, optarg,
				opt == 'b' ? " (at least 64K)" : "");
			return EXIT_FAILURE;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return EXIT_FAILURE;
	}

	err = cache_init(&cache, budget, background);
	if (err) {
		fprintf(stderr, "handcache: cannot create the cache: %s\n",
			strerror(-err));
		return EXIT_FAILURE;
	}
	workers = calloc(threads, sizeof(*workers));
	if (!workers) {
		fprintf(stderr, "handcache: out of memory\n");
		cache_destroy(&cache);
		return EXIT_FAILURE;
	}
	printf("handcache: %" PRIu64 " threads x %" PRIu64 " ops on %u keys "
	       "(%u%% on %u%% of them), budget %" PRIu64 " bytes, seed %" PRIu64
	       "\n", threads, ops, NR_KEYS, HOT_PERCENT,
	       HOT_KEYS * 100 / NR_KEYS, budget, seed);

	for (i = 0; i < threads; i++) {
		struct worker *w = &workers[i];

		w->cache = &cache;
		w->id = i;
		w->rng = seed ^ mix64(i + 1);
		w->nr_ops = ops;
		err = pthread_create(&w->thread, NULL, worker_main, w);
		if (err) {
			fprintf(stderr, "handcache: pthread_create: %s\n",
				strerror(err));
			/* Not the main thread's job to run the rest. */
			threads = i;
			failed = 1;
			break;
		}
	}
	for (i = 0; i < threads; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->thread, NULL);
		printf("  thread %u: %lu lookups (%lu hits, %lu misses), "
		       "%lu deletes\n", w->id, w->lookups, w->hits, w->misses,
		       w->deletes);
		lookups += w->lookups;
		hits += w->hits;
		misses += w->misses;
		raced += w->raced;
		deletes += w->deletes;
		deleted += w->deleted;
	}

	/*
	 * Every worker has exited, but the background reclaimer may still be
	 * in a pass that the workers' last charges woke: between its evict
	 * calls and the end of the pass, the lists, the library's counters
	 * and the index disagree by that pass's objects.  Stop it before
	 * counting (rcl_domain_reclaimer_stop() joins it; cache_destroy()'s
	 * call is then a no-op).
	 */
	err = rcl_domain_reclaimer_stop(cache.dom);
	if (err)
		lib_error(&cache, "rcl_domain_reclaimer_stop()", err);
	/* Every thread has exited: their add batches reached the lists. */
	rcl_lruvec_drain(&cache.lru);
	in_nr = rcl_lruvec_count(&cache.lru, RCL_LRU_LIST(RCL_LRU_FILE, 0),
				 &in_w);
	act_nr = rcl_lruvec_count(&cache.lru, RCL_LRU_LIST(RCL_LRU_FILE, 1),
				  &act_w);
	rcl_lruvec_stats(&cache.lru, RCL_LRU_FILE, &st);
	rcl_domain_vmstat(cache.dom, &vm);
	scans = vm.pgscan_kswapd + vm.pgscan_direct;
	cached = cache_count(&cache);

	printf("lookups:  %lu, hits %lu, misses %lu, hit ratio %.1f%%\n",
	       lookups, hits, misses,
	       lookups ? 100.0 * (double)hits / (double)lookups : 0.0);
	printf("deletes:  %lu, of which %lu found the key cached\n",
	       deletes, deleted);
	printf("reclaim:  scanned %" PRIu64 ", freed %" PRIu64
	       ", rotated %" PRIu64 ", activated %" PRIu64
	       ", deactivated %" PRIu64 "\n", st.scanned, st.freed,
	       st.rotated, st.activated, st.deactivated);
	printf("domain:   %s reclaimer; pgscan %" PRIu64 " background + %" PRIu64
	       " direct (%.1f%% background), pgsteal %" PRIu64 " + %" PRIu64
	       ", allocstall %" PRIu64 ", wakeups %" PRIu64 "\n",
	       background ? "background" : "no background", vm.pgscan_kswapd,
	       vm.pgscan_direct,
	       scans ? 100.0 * (double)vm.pgscan_kswapd / (double)scans : 0.0,
	       vm.pgsteal_kswapd, vm.pgsteal_direct, vm.allocstall,
	       vm.kswapd_wakeups);
	print_bytes("usage:    peak ", atomic_load(&cache.peak));
	printf(", budget %" PRIu64 " (strict)\n", budget);
	printf("lists:    inactive %zu objects (%" PRIu64 " bytes), "
	       "active %zu objects (%" PRIu64 " bytes)\n",
	       in_nr, in_w, act_nr, act_w);

	failed |= check(hits + misses == lookups, "hits + misses != lookups");
	failed |= check(atomic_load(&cache.bad_payloads) == 0,
			"payload mismatch (use after free or corruption)");
	failed |= check(atomic_load(&cache.peak) <= budget,
			"usage exceeded the budget of a strict domain");
	failed |= check(atomic_load(&cache.lib_errors) == 0,
			"a library call failed unexpectedly");
	failed |= check(st.freed == atomic_load(&cache.nr_evicted) &&
			st.weight_freed == atomic_load(&cache.bytes_evicted),
			"library eviction counts differ from the callback's");
	failed |= check(in_nr + act_nr == cached &&
			in_w + act_w == rcl_domain_usage(cache.dom) &&
			rcl_lruvec_nr_isolated(&cache.lru) == 0,
			"the lists do not hold exactly the cached objects");
	if (atomic_load(&cache.uncached))
		printf("note:     %" PRIu64 " misses not cached: the budget "
		       "was full of pinned or in-flight objects\n",
		       atomic_load(&cache.uncached));
	if (raced)
		printf("note:     %lu misses raced with another thread's "
		       "insert\n", raced);

	cleared = cache_clear(&cache);
	left = rcl_domain_usage(cache.dom);
	err = cache_destroy(&cache);
	printf("teardown: %lu objects deleted, usage %" PRIu64
	       ", domain and lruvec destroyed: %d\n", cleared, left, err);
	failed |= check(cleared == cached,
			"teardown did not delete every object");
	failed |= check(left == 0, "usage is not 0 after teardown");
	failed |= check(err == 0, "the domain or the lruvec could not go");
	free(workers);

	printf("%s\n", failed ? "FAILED" : "OK");
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
