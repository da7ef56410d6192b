/* SPDX-License-Identifier: MIT */
/*
 * This example shows how an application puts its caches under one memory
 * budget with libreclaim, using every part of the library together: a memory
 * domain with its background reclaimer, an object cache on an lruvec that
 * remembers what it evicted (workingset shadows), a second cache behind a
 * shrinker, and write-back of dirty objects by the library's flusher thread.
 *
 * The application.  A key-value service keeps rows (objects of 256 bytes to
 * 4 KiB plus a header, derived from the key) in an object cache, over a
 * backing store that is an array of per-key versions in memory.  Clients
 * read and update rows; one operation in five is a "stat" that needs only
 * the row's decoded metadata, which a second, smaller cache keeps.
 *
 * The workload is built in, deterministic per thread (splitmix64 seeded by
 * --seed and the thread number), and made so that remembering evictions pays:
 *
 *  - the hot set: HOT_KEYS rows (about 80 % of the default budget), 80 % of
 *    whose accesses go to a fifth of them;
 *  - the report job: every SCAN_PERIOD operations a thread spends SCAN_LEN
 *    operations walking the loop range (LOOP_KEYS rows, about three times
 *    the default budget) in key order, going on where its last walk stopped,
 *    each thread from its own place in the range;
 *  - of all operations, 15 % are writes (read-modify-write of a row), 20 %
 *    stats, the rest reads; a write or a read that misses loads the row from
 *    the store.
 *
 * An LRU cache loses here twice: each walk pushes the colder part of the hot
 * set out, and the loop itself never hits, since every row of it is evicted
 * before the walk comes back.  The lruvec's two lists keep the hot set on
 * the active list, out of the walks' way, and the shadows let refaults of
 * the loop take the active list's spare room (docs/adaptive-target.md), so a
 * stable part of the loop hits as well.  To show it, the program replays the
 * same request sequences through an exact LRU with the same byte budget and
 * prints both hit ratios.
 *
 * The pieces.
 *
 * (1) The budget.  One memory domain (<reclaim/domain.h>), in strict mode:
 *     everything the caches allocate is charged to it before it exists and
 *     uncharged when it is freed, and a strict domain commits a charge only
 *     if it fits, so the usage never exceeds the budget, not even for an
 *     instant - the property a service under a cgroup limit needs, and the
 *     one this program checks.  The price: a charge that cannot be brought
 *     under budget (all that is left is pinned, dirty or being reclaimed by
 *     another thread) fails; that read is then served from the store without
 *     caching, and that write goes straight to the store.  A soft domain
 *     would admit the charge and report the overshoot instead.  The domain's
 *     background reclaimer (rcl_domain_reclaimer_start()) keeps the headroom
 *     between its watermarks; a charge below the min watermark reclaims in
 *     the charging thread.
 *
 * (2) The object cache: a hash table of entries (one mutex per bucket), one
 *     lruvec, objects with a reference count.  An entry's slot holds either
 *     a pointer to the cached object or the shadow its eviction left
 *     (rcl_shadow_is_valid() tells them apart, as the kernel's page-cache
 *     xarray holds a page or a value entry).  Lookups, eviction and the
 *     teardown follow the pin (try-get) protocol of <reclaim/lruvec.h>, as in
 *     handcache.c.  The evict callback stores ctl->shadow in the slot in place
 *     of the object; a miss on a key whose slot holds a shadow inserts the
 *     object again with rcl_lruvec_add_refault(), which decides from the
 *     refault distance whether it goes straight to the active list.  Shadow
 *     entries take memory (they are charged), so they are bounded by
 *     rcl_shadow_limit_new(): a shrinker that, above a quota of twice the
 *     objects that fit in the budget, asks the drop callback to free the
 *     oldest ones, as the kernel's shadow-node shrinker does.
 *
 * (3) The metadata cache: decoded records (expensive to make, small) in a
 *     hash table with one LRU list under one mutex, charged to the same
 *     domain and registered in the domain's shrinker registry, so every
 *     reclaim pass presses on it too, after the lruvec, in proportion to its
 *     size and its seeks.  Its count callback reads an atomic counter; its
 *     scan callback gives referenced records a second trip, frees the rest
 *     oldest first, and answers RCL_SHRINK_STOP when the lock is contended.
 *
 * (4) Write-back.  A write changes the row under its content lock and marks
 *     it dirty (rcl_lruvec_set_dirty()); rcl_domain_balance_dirty() wakes the
 *     flusher above 10 % of the budget dirty and holds writers above 20 %.
 *     The library's flusher thread (rcl_domain_flusher_start()) writes dirty
 *     rows with the write callback, which copies the row's version into the
 *     store.  Reclaim never writes: it moves dirty rows out of its way and
 *     asks the flusher; the evict callback checks that it is never handed a
 *     dirty row.  At the end, the flusher thread is stopped, then
 *     rcl_domain_writeback_all() writes what is still dirty, and every
 *     key's latest version must be in the store.
 *
 * The self-checks (exit status 1 if one fails): every access checks the
 * row's payload under the pin (a row freed or reused under a pin, or a torn
 * write, would not match); a row loaded from the store holds the latest
 * version written (no write was lost while it was out); after the final
 * write-back the store holds every key's latest version; the domain's usage,
 * sampled every 10 ms and read after every charge, never exceeded the
 * budget; the library's counters agree with the callbacks'; and after the
 * teardown nothing is charged any more.
 *
 * Usage: appcache [--ops N] [--threads T] [--budget BYTES[K|M|G]] [--seed S]
 *                 [--quiet]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <reclaim/reclaim.h>

/* ------------------------------------------------------------------------- */
/* The workload                                                              */
/* ------------------------------------------------------------------------- */

/* Keys 0..HOT_KEYS-1 are the hot set; the loop range follows. */
#define HOT_KEYS	3072u
#define LOOP_KEYS	12288u
#define NR_KEYS		(HOT_KEYS + LOOP_KEYS)
/* 80 % of the hot-set accesses go to its first fifth. */
#define HOT_HOT_KEYS	(HOT_KEYS / 5)
#define HOT_HOT_PERCENT	80u
/* A thread walks the loop for SCAN_LEN of every SCAN_PERIOD operations. */
#define SCAN_PERIOD	4096u
#define SCAN_LEN	1024u
#define WRITE_PERCENT	15u
#define STAT_PERCENT	20u

/* Row payloads, in bytes; multiples of 8. */
#define MIN_PAYLOAD	256u
#define MAX_PAYLOAD	4096u

/* Decoded metadata: a record of META_WORDS words, each DECODE_ROUNDS mixes. */
#define META_WORDS	8u
#define DECODE_ROUNDS	32u

#define NR_BUCKETS	8192u	/* object index; a power of two */
#define NR_META_BUCKETS	4096u	/* metadata index; a power of two */

#define DEFAULT_OPS	600000ul
#define DEFAULT_THREADS	2u
#define DEFAULT_BUDGET	(8ull << 20)
#define DEFAULT_SEED	1ull
#define MAX_OPS		100000000ul
#define MAX_THREADS	64u
#define MIN_BUDGET	(256ull << 10)
#define MAX_BUDGET	(64ull << 30)

/* The sampler: every SAMPLE_MS; a progress line every PROGRESS_MS. */
#define SAMPLE_MS	10u
#define PROGRESS_MS	1000u
#define MAX_SAMPLES	4096u	/* then pairs merge and the period doubles */
#define CHART_ROWS	16u
#define CHART_COLS	60u

#define OBJ_MAGIC	0x524f5753u	/* "ROWS" */
#define OBJ_POISON	0xdeadbeefu

enum op_kind { OP_READ, OP_WRITE, OP_STAT };

struct op {
	enum op_kind kind;
	bool scan;		/* part of a walk of the loop range */
	uint32_t key;
};

/* One thread's request stream; the LRU replay makes the same streams. */
struct gen {
	uint64_t rng;
	uint64_t n;		/* operations generated */
	uint64_t phase;		/* where this thread's period starts */
	uint32_t first, len;	/* this thread's slice of the loop range */
	uint32_t pos;		/* next key of the walk, in the slice */
};

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

static void gen_init(struct gen *g, uint64_t seed, unsigned thread,
		     unsigned nr_threads)
{
	uint32_t end = (uint32_t)((uint64_t)LOOP_KEYS * (thread + 1) /
				  nr_threads);

	g->rng = seed ^ mix64(thread + 1);
	g->n = 0;
	/* The threads' walks start at different points of the period. */
	g->phase = (uint64_t)SCAN_PERIOD * thread / nr_threads;
	/* A parallel scan: each thread walks its own slice of the range. */
	g->first = (uint32_t)((uint64_t)LOOP_KEYS * thread / nr_threads);
	g->len = end - g->first;
	g->pos = 0;
}

static struct op gen_next(struct gen *g)
{
	uint64_t r = splitmix64(&g->rng);
	unsigned pct = (unsigned)(r % 100);
	struct op op;

	op.kind = pct < WRITE_PERCENT ? OP_WRITE :
		  pct < WRITE_PERCENT + STAT_PERCENT ? OP_STAT : OP_READ;
	op.scan = (g->n + g->phase) % SCAN_PERIOD < SCAN_LEN;
	if (op.scan && g->len) {
		op.key = HOT_KEYS + g->first + g->pos;
		g->pos = (g->pos + 1) % g->len;
	} else if (op.scan) {
		/* More threads than keys in the range: nothing to walk. */
		op.scan = false;
		op.key = (uint32_t)((r >> 32) % HOT_HOT_KEYS);
	} else if ((r >> 16) % 100 < HOT_HOT_PERCENT) {
		op.key = (uint32_t)((r >> 32) % HOT_HOT_KEYS);
	} else {
		op.key = HOT_HOT_KEYS +
			 (uint32_t)((r >> 32) % (HOT_KEYS - HOT_HOT_KEYS));
	}
	g->n++;
	return op;
}

static uint32_t payload_size(uint64_t key)
{
	const uint32_t steps = (MAX_PAYLOAD - MIN_PAYLOAD) / 8 + 1;

	return MIN_PAYLOAD + (uint32_t)(mix64(key ^ 0x5a5a5a5aull) % steps) * 8;
}

/* Word @i of the payload of row @key at @version. */
static uint64_t payload_word(uint64_t key, uint64_t version, uint32_t i)
{
	return mix64((key << 20) ^ i) + version * 0x9e3779b97f4a7c15ull;
}

/* ------------------------------------------------------------------------- */
/* Types                                                                     */
/* ------------------------------------------------------------------------- */

struct entry;

/* A cached row. */
struct obj {
	struct rcl_lru_node lru;	/* on the cache's lruvec */
	struct entry *entry;		/* its index entry, while hashed */
	uint64_t key;
	atomic_uint refs;		/* index reference + one per pin */
	bool hashed;			/* bucket lock */
	uint32_t magic;
	uint32_t size;			/* payload bytes */
	pthread_mutex_t lock;		/* content lock: version, payload */
	uint64_t version;
	uint64_t payload[];		/* size / 8 words */
};

/* A doubly linked list node, for the shadow FIFO. */
struct link {
	struct link *next, *prev;
};

/*
 * One key of the index.  @slot is a struct obj pointer, or a shadow: a value
 * with bit 63 set, which no user-space pointer has.  An entry lives while it
 * holds either; its memory is charged to the domain.
 */
struct entry {
	struct entry *hnext;		/* bucket chain; bucket lock */
	uint64_t key;
	uint64_t slot;			/* bucket lock */
	struct link shadow;		/* on the shadow FIFO; shadow lock */
};

struct bucket {
	pthread_mutex_t lock;
	struct entry *head;
};

/* A decoded metadata record. */
struct meta {
	struct meta *hnext;		/* metadata hash chain */
	struct link lru;		/* metadata LRU list, head = newest */
	uint64_t key;
	bool referenced;		/* used since the shrinker last saw it */
	uint64_t word[META_WORDS];
	uint64_t check;			/* xor of the words and the key */
};

struct metacache {
	pthread_mutex_t lock;		/* everything below but the atomics */
	struct meta **hash;
	struct link lru;
	struct rcl_shrinker *shrinker;
	atomic_ulong nr;		/* records: the count callback's answer */
	_Atomic uint64_t freed;		/* by the scan callback */
	_Atomic uint64_t rotated;	/* referenced: given a second trip */
	_Atomic uint64_t stopped;	/* RCL_SHRINK_STOP answers */
};

struct sample {
	uint64_t t_ns;
	uint64_t usage;
	uint64_t obj_bytes, meta_bytes, index_bytes;
};

struct cache {
	struct bucket *buckets;
	struct rcl_lruvec lru;
	struct rcl_domain *dom;
	struct rcl_shadow_limit *shadows;
	struct metacache meta;
	uint64_t budget;
	uint64_t shadow_quota;

	/* The shadow FIFO: the oldest shadow first.  Lock order: bucket, shadow. */
	pthread_mutex_t shadow_lock;
	struct link shadow_fifo;

	/* The backing store and the model of what it must hold. */
	_Atomic uint64_t *store;	/* version per key, as written */
	_Atomic uint64_t *latest;	/* version per key, as last changed */

	/* Bytes charged, by kind (for the chart; the domain has the total). */
	_Atomic uint64_t obj_bytes, meta_bytes, index_bytes;
	_Atomic uint64_t peak;		/* usage read after each charge */

	/* Counted by the callbacks and the paths around them. */
	_Atomic uint64_t evicted;	/* FREED answers */
	_Atomic uint64_t evict_busy;	/* pinned */
	_Atomic uint64_t evict_redirtied;	/* dirtied after isolation */
	_Atomic uint64_t evict_dirty_flag;	/* RCL_EVICT_DIRTY (must be 0) */
	_Atomic uint64_t shadows_stored;
	_Atomic uint64_t shadows_refaulted;	/* passed back */
	_Atomic uint64_t refault_activated;	/* ... and added active */
	_Atomic uint64_t shadows_dropped;	/* by the limit's drop callback */
	_Atomic uint64_t shadow_drop_busy;	/* bucket lock contended */
	_Atomic uint64_t writes;		/* write callback calls */
	_Atomic uint64_t write_regress;	/* a write older than the store */
	_Atomic uint64_t bad_payloads;
	_Atomic uint64_t lost_writes;	/* store behind the model on a load */
	_Atomic uint64_t lib_errors;	/* unexpected library return values */
};

struct worker {
	pthread_t thread;
	struct cache *cache;
	unsigned id;
	struct gen gen;
	unsigned long nr_ops;
	/* read by the sampler while the thread runs */
	atomic_ulong done, accesses, hits;
	/* results, read by main() after the join */
	unsigned long hot, hot_hits, scan, scan_hits;
	unsigned long reads, writes, stats;
	unsigned long uncached_reads, write_around, raced, refaults;
	unsigned long meta_hits, meta_misses, meta_uncached;
	unsigned long dirty_timeouts;
};

struct sampler {
	pthread_t thread;
	struct cache *cache;
	struct worker *workers;
	unsigned nr_workers;
	unsigned long total_ops;
	bool progress, tty;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;			/* lock */
	uint64_t start_ns;
	/* written by the sampler thread, read by main() after the join */
	struct sample *samples;
	unsigned nr_samples;
	unsigned period_ms;
	uint64_t max_usage;
	unsigned long nr_taken;
};

/* ------------------------------------------------------------------------- */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void link_init(struct link *l)
{
	l->next = l->prev = l;
}

static bool link_empty(const struct link *l)
{
	return l->next == l;
}

/* Insert @n after @head (at the head: newest). */
static void link_add(struct link *head, struct link *n)
{
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}

/* Insert @n before @head (at the tail). */
static void link_add_tail(struct link *head, struct link *n)
{
	link_add(head->prev, n);
}

static void link_del(struct link *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	link_init(n);
}

static void lib_error(struct cache *c, const char *what, int err)
{
	fprintf(stderr, "appcache: %s returned %d (%s)\n", what, err,
		strerror(-err));
	atomic_fetch_add(&c->lib_errors, 1);
}

/* What a row costs: its header and its payload.  The LRU replay uses it too. */
static uint32_t obj_bytes(uint64_t key)
{
	return (uint32_t)sizeof(struct obj) + payload_size(key);
}

/*
 * Charge the domain: may reclaim here (direct reclaim), so the caller must
 * hold none of the locks the callbacks take.  Records the usage seen just
 * after, so that the peak check does not depend on the sampler's timing.
 */
static bool charge(struct cache *c, uint64_t bytes)
{
	uint64_t usage, peak;
	int err = rcl_domain_charge(c->dom, bytes, RCL_CTX_CAPABLE, NULL);

	if (err == -ENOMEM)
		return false;
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

static void uncharge(struct cache *c, _Atomic uint64_t *kind, uint64_t bytes)
{
	atomic_fetch_sub(kind, bytes);
	rcl_domain_uncharge(c->dom, bytes);
}

/* ------------------------------------------------------------------------- */
/* Rows                                                                      */
/* ------------------------------------------------------------------------- */

/* Content lock held. */
static void obj_fill(struct obj *o)
{
	uint32_t i;

	for (i = 0; i < o->size / 8; i++)
		o->payload[i] = payload_word(o->key, o->version, i);
}

/* Content lock held: does the row hold what its key and version say? */
static bool obj_verify(const struct obj *o, uint64_t key)
{
	uint32_t i;

	if (o->magic != OBJ_MAGIC || o->key != key ||
	    o->size != payload_size(key))
		return false;
	for (i = 0; i < o->size / 8; i++)
		if (o->payload[i] != payload_word(key, o->version, i))
			return false;
	return true;
}

/* A new row, not charged, not filled, pinned once (by the caller). */
static struct obj *obj_alloc(uint64_t key)
{
	uint32_t size = payload_size(key);
	struct obj *o = malloc(sizeof(*o) + size);

	if (!o)
		return NULL;
	rcl_lru_node_init(&o->lru);
	o->entry = NULL;
	o->key = key;
	atomic_init(&o->refs, 1);
	o->hashed = false;
	o->magic = OBJ_MAGIC;
	o->size = size;
	o->version = 0;
	pthread_mutex_init(&o->lock, NULL);
	return o;
}

static void obj_release(struct obj *o)
{
	o->magic = OBJ_POISON;
	pthread_mutex_destroy(&o->lock);
	free(o);
}

/* Free a charged row: it is off the lruvec and unhashed. */
static void obj_free(struct cache *c, struct obj *o)
{
	uint32_t bytes = obj_bytes(o->key);

	obj_release(o);
	uncharge(c, &c->obj_bytes, bytes);
}

static void obj_put(struct cache *c, struct obj *o)
{
	if (atomic_fetch_sub(&o->refs, 1) == 1)
		obj_free(c, o);
}

/* ------------------------------------------------------------------------- */
/* The index                                                                 */
/* ------------------------------------------------------------------------- */

static bool slot_is_obj(uint64_t slot)
{
	return slot && !rcl_shadow_is_valid(slot);
}

static struct obj *slot_obj(uint64_t slot)
{
	return (struct obj *)(uintptr_t)slot;
}

static struct bucket *bucket_of(struct cache *c, uint64_t key)
{
	return &c->buckets[mix64(key) & (NR_BUCKETS - 1)];
}

static struct entry *find_locked(struct bucket *b, uint64_t key)
{
	struct entry *e;

	for (e = b->head; e; e = e->hnext)
		if (e->key == key)
			return e;
	return NULL;
}

static void unhash_entry_locked(struct bucket *b, struct entry *e)
{
	struct entry **pp;

	for (pp = &b->head; *pp != e; pp = &(*pp)->hnext)
		;
	*pp = e->hnext;
}

/* Bucket lock held: the slot's shadow goes; the caller refills the slot. */
static uint64_t take_shadow_locked(struct cache *c, struct entry *e)
{
	uint64_t shadow = e->slot;

	pthread_mutex_lock(&c->shadow_lock);
	link_del(&e->shadow);
	pthread_mutex_unlock(&c->shadow_lock);
	rcl_shadow_limit_add(c->shadows, -1);
	e->slot = 0;
	return shadow;
}

/* Lookup: find and pin under the bucket lock. */
static struct obj *cache_lookup(struct cache *c, uint64_t key)
{
	struct bucket *b = bucket_of(c, key);
	struct entry *e;
	struct obj *o = NULL;

	pthread_mutex_lock(&b->lock);
	e = find_locked(b, key);
	if (e && slot_is_obj(e->slot)) {
		o = slot_obj(e->slot);
		atomic_fetch_add(&o->refs, 1);
	}
	pthread_mutex_unlock(&b->lock);
	return o;
}

/* ------------------------------------------------------------------------- */
/* Reclaim of rows: the evict callback                                       */
/* ------------------------------------------------------------------------- */

/*
 * Called by reclaim for each isolated row, with no library lock held.  The
 * row cannot be freed under us: only this callback frees hashed rows, and
 * the teardown runs after reclaim has stopped.
 */
static enum rcl_evict_status cache_evict(struct rcl_lru_node *node,
					 struct rcl_evict_control *ctl)
{
	struct cache *c = ctl->priv;
	struct obj *o = rcl_container_of(node, struct obj, lru);
	struct bucket *b = bucket_of(c, o->key);
	struct entry *e;

	if (ctl->flags & RCL_EVICT_DIRTY)	/* only with RECLAIM_WRITES */
		atomic_fetch_add(&c->evict_dirty_flag, 1);
	pthread_mutex_lock(&b->lock);
	if (!o->hashed || atomic_load(&o->refs) != 1) {
		/* Pinned by a reader or a writer: put it back. */
		pthread_mutex_unlock(&b->lock);
		atomic_fetch_add(&c->evict_busy, 1);
		return RCL_EVICT_BUSY;
	}
	/*
	 * Nobody can pin it without the bucket lock.  A writer that dirtied
	 * it after reclaim isolated it did so before unpinning it: the flags
	 * read now are final.  It stays until the flusher has written it.
	 */
	if (rcl_lru_node_flags(node) & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK)) {
		pthread_mutex_unlock(&b->lock);
		atomic_fetch_add(&c->evict_redirtied, 1);
		return RCL_EVICT_BUSY;
	}
	e = o->entry;
	o->hashed = false;
	o->entry = NULL;
	if (rcl_shadow_is_valid(ctl->shadow)) {
		/* The shadow takes the row's place; the entry stays charged. */
		e->slot = ctl->shadow;
		pthread_mutex_lock(&c->shadow_lock);
		link_add_tail(&c->shadow_fifo, &e->shadow);
		pthread_mutex_unlock(&c->shadow_lock);
		rcl_shadow_limit_add(c->shadows, 1);
		atomic_fetch_add(&c->shadows_stored, 1);
		e = NULL;
	} else {
		unhash_entry_locked(b, e);
	}
	pthread_mutex_unlock(&b->lock);

	if (e) {
		free(e);
		uncharge(c, &c->index_bytes, sizeof(*e));
	}
	atomic_fetch_add(&c->evicted, 1);
	obj_free(c, o);		/* the library does not touch the node again */
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops cache_ops = {
	.evict = cache_evict,
};

/*
 * The shadow limit's drop callback, called from reclaim (the "shadow"
 * shrinker) with no library lock held: free up to @nr of the oldest shadow
 * entries.  The lock order is bucket, then shadow; holding the shadow lock,
 * a bucket lock can only be tried, as the kernel's shadow_lru_isolate()
 * tries the mapping's lock.  A contended entry is skipped (rotated), not
 * waited for.
 */
static unsigned long shadow_drop(void *priv, unsigned long nr)
{
	struct cache *c = priv;
	unsigned long dropped = 0, tried;

	pthread_mutex_lock(&c->shadow_lock);
	for (tried = 0; tried < nr && !link_empty(&c->shadow_fifo); tried++) {
		struct entry *e = rcl_container_of(c->shadow_fifo.next,
						   struct entry, shadow);
		struct bucket *b = bucket_of(c, e->key);

		if (pthread_mutex_trylock(&b->lock) != 0) {
			link_del(&e->shadow);
			link_add_tail(&c->shadow_fifo, &e->shadow);
			atomic_fetch_add(&c->shadow_drop_busy, 1);
			continue;
		}
		/* On the FIFO, so its slot holds a shadow (both locks held). */
		link_del(&e->shadow);
		unhash_entry_locked(b, e);
		pthread_mutex_unlock(&b->lock);
		free(e);
		dropped++;
	}
	pthread_mutex_unlock(&c->shadow_lock);
	if (dropped) {
		rcl_shadow_limit_add(c->shadows, -(int64_t)dropped);
		uncharge(c, &c->index_bytes, dropped * sizeof(struct entry));
		atomic_fetch_add(&c->shadows_dropped, dropped);
	}
	return dropped;
}

static const struct rcl_shadow_ops shadow_ops = {
	.drop = shadow_drop,
};

/* ------------------------------------------------------------------------- */
/* Write-back: the flusher's callback                                        */
/* ------------------------------------------------------------------------- */

/*
 * Runs on the flusher thread (or in rcl_domain_writeback_all()), never in
 * reclaim.  The row is under writeback: it can be neither evicted nor
 * deleted, so it needs no pin.  A writer may change it meanwhile (it is then
 * dirty again and written again): read the version under the content lock.
 */
static int write_row(void *priv, struct rcl_lru_node *node)
{
	struct cache *c = priv;
	struct obj *o = rcl_container_of(node, struct obj, lru);
	uint64_t v, old;

	pthread_mutex_lock(&o->lock);
	v = o->version;
	pthread_mutex_unlock(&o->lock);
	old = atomic_exchange(&c->store[o->key], v);
	if (v < old)
		atomic_fetch_add(&c->write_regress, 1);
	atomic_fetch_add(&c->writes, 1);
	return 0;
}

static const struct rcl_writeback_ops wb_ops = {
	.write = write_row,
};

/* ------------------------------------------------------------------------- */
/* The object cache                                                          */
/* ------------------------------------------------------------------------- */

/*
 * Miss: charge (the domain may reclaim, so no lock is held), then, under the
 * bucket lock, load the row from the store and insert it - again with its
 * shadow if its eviction left one - unless another thread was quicker.
 * Returns the row pinned; NULL if the charge failed (strict mode: the
 * budget is full of pinned, dirty or isolated rows) or on an error.
 */
static struct obj *cache_fill(struct cache *c, struct worker *w, uint64_t key,
			      bool write)
{
	struct bucket *b = bucket_of(c, key);
	struct entry *e, *ne;
	struct obj *o;
	uint64_t shadow = 0, v;
	unsigned outcome;
	bool need_entry;
	int err;

again:
	pthread_mutex_lock(&b->lock);
	e = find_locked(b, key);
	need_entry = !e;
	pthread_mutex_unlock(&b->lock);

	if (!charge(c, obj_bytes(key) + (need_entry ? sizeof(*ne) : 0)))
		return NULL;
	atomic_fetch_add(&c->obj_bytes, obj_bytes(key));
	ne = NULL;
	if (need_entry) {
		atomic_fetch_add(&c->index_bytes, sizeof(*ne));
		ne = malloc(sizeof(*ne));
	}
	o = obj_alloc(key);
	if (!o || (need_entry && !ne)) {
		if (o)
			obj_release(o);
		free(ne);
		uncharge(c, &c->obj_bytes, obj_bytes(key));
		if (need_entry)
			uncharge(c, &c->index_bytes, sizeof(*ne));
		return NULL;
	}

	pthread_mutex_lock(&b->lock);
	e = find_locked(b, key);
	if (e && slot_is_obj(e->slot)) {
		struct obj *old = slot_obj(e->slot);

		atomic_fetch_add(&old->refs, 1);
		pthread_mutex_unlock(&b->lock);
		obj_free(c, o);
		if (ne) {
			free(ne);
			uncharge(c, &c->index_bytes, sizeof(*ne));
		}
		w->raced++;
		return old;
	}
	if (!e && !ne) {
		/* The shadow was dropped meanwhile: start again with an entry. */
		pthread_mutex_unlock(&b->lock);
		obj_free(c, o);
		goto again;
	}
	if (e && ne) {
		/* Another row came and went meanwhile and left its shadow. */
		free(ne);
		uncharge(c, &c->index_bytes, sizeof(*ne));
		ne = NULL;
	}
	if (e && e->slot)
		shadow = take_shadow_locked(c, e);

	/*
	 * Load under the bucket lock: no copy of the row is cached, so no
	 * write can be in flight and the store must hold the latest version.
	 */
	v = atomic_load(&c->store[key]);
	if (v != atomic_load(&c->latest[key]))
		atomic_fetch_add(&c->lost_writes, 1);
	o->version = v;
	obj_fill(o);

	/*
	 * On the lruvec before it is in the index, so that whoever finds it
	 * in the index finds it on the lruvec too; the add takes only library
	 * locks, never held while cache_evict() runs.  A row about to be
	 * written goes straight to the list (no per-thread batch): the
	 * flusher looks for dirty rows on the lists.
	 */
	err = rcl_lruvec_add_refault(&c->lru, &o->lru, RCL_LRU_FILE,
				     obj_bytes(key),
				     write ? RCL_LRU_ADD_NOBATCH : 0, shadow,
				     &outcome);
	if (err) {
		/* Put the shadow back; the entry stays. */
		if (e && shadow) {
			e->slot = shadow;
			pthread_mutex_lock(&c->shadow_lock);
			link_add(&c->shadow_fifo, &e->shadow);
			pthread_mutex_unlock(&c->shadow_lock);
			rcl_shadow_limit_add(c->shadows, 1);
		}
		pthread_mutex_unlock(&b->lock);
		lib_error(c, "rcl_lruvec_add_refault()", err);
		obj_free(c, o);
		if (ne) {
			free(ne);
			uncharge(c, &c->index_bytes, sizeof(*ne));
		}
		return NULL;
	}
	if (!e) {
		e = ne;
		e->key = key;
		link_init(&e->shadow);
		e->hnext = b->head;
		b->head = e;
	}
	e->slot = (uint64_t)(uintptr_t)o;
	o->entry = e;
	o->hashed = true;
	atomic_fetch_add(&o->refs, 1);	/* the index reference */
	pthread_mutex_unlock(&b->lock);

	if (shadow) {
		w->refaults++;
		atomic_fetch_add(&c->shadows_refaulted, 1);
		if (outcome & RCL_REFAULT_ACTIVATE)
			atomic_fetch_add(&c->refault_activated, 1);
	}
	return o;
}

/*
 * A write that could not be cached (the charge failed) goes to the store,
 * under the bucket lock, unless a copy got cached meanwhile (then false: the
 * caller tries again through the cache).
 */
static bool write_around(struct cache *c, uint64_t key)
{
	struct bucket *b = bucket_of(c, key);
	struct entry *e;
	uint64_t v;

	pthread_mutex_lock(&b->lock);
	e = find_locked(b, key);
	if (e && slot_is_obj(e->slot)) {
		pthread_mutex_unlock(&b->lock);
		return false;
	}
	v = atomic_load(&c->latest[key]);
	if (atomic_load(&c->store[key]) != v)
		atomic_fetch_add(&c->lost_writes, 1);
	atomic_store(&c->latest[key], v + 1);
	atomic_store(&c->store[key], v + 1);
	pthread_mutex_unlock(&b->lock);
	return true;
}

/* One read or write of a row. */
static void cache_access(struct cache *c, struct worker *w,
			 const struct op *op)
{
	bool write = op->kind == OP_WRITE, hit;
	struct obj *o;
	uint64_t v;
	int err;

	o = cache_lookup(c, op->key);
	hit = o != NULL;
	while (!o) {
		o = cache_fill(c, w, op->key, write);
		if (o)
			break;
		if (!write) {
			w->uncached_reads++;	/* served from the store */
			break;
		}
		if (write_around(c, op->key)) {
			w->write_around++;
			break;
		}
	}

	if (op->scan) {
		w->scan++;
		w->scan_hits += hit;
	} else {
		w->hot++;
		w->hot_hits += hit;
	}
	atomic_fetch_add_explicit(&w->accesses, 1, memory_order_relaxed);
	if (hit)
		atomic_fetch_add_explicit(&w->hits, 1, memory_order_relaxed);
	if (!o)
		return;

	err = rcl_lruvec_mark_accessed(&c->lru, &o->lru);
	if (err)
		lib_error(c, "rcl_lruvec_mark_accessed()", err);

	pthread_mutex_lock(&o->lock);
	if (!obj_verify(o, op->key) ||
	    o->version != atomic_load(&c->latest[op->key])) {
		if (atomic_fetch_add(&c->bad_payloads, 1) == 0)
			fprintf(stderr, "appcache: key %" PRIu32 ": the row "
				"does not hold its payload or its latest "
				"version\n", op->key);
	}
	if (write) {
		v = o->version + 1;
		o->version = v;
		atomic_store(&c->latest[op->key], v);
		obj_fill(o);
		/* After the change: a write-back that starts now sees it. */
		err = rcl_lruvec_set_dirty(&c->lru, &o->lru);
		if (err)
			lib_error(c, "rcl_lruvec_set_dirty()", err);
	}
	pthread_mutex_unlock(&o->lock);
	obj_put(c, o);

	if (write) {
		/* Throttled while the domain is over its hard dirty limit. */
		err = rcl_domain_balance_dirty(c->dom, RCL_CTX_CAPABLE);
		if (err == -ETIMEDOUT)
			w->dirty_timeouts++;
		else if (err)
			lib_error(c, "rcl_domain_balance_dirty()", err);
	}
}

/* ------------------------------------------------------------------------- */
/* The metadata cache and its shrinker                                       */
/* ------------------------------------------------------------------------- */

static struct meta **meta_slot(struct metacache *m, uint64_t key)
{
	return &m->hash[mix64(key ^ 0x6d657461ull) & (NR_META_BUCKETS - 1)];
}

/* The expensive part: what a record is made of. */
static void meta_decode(uint64_t key, uint64_t word[META_WORDS])
{
	unsigned i, r;

	for (i = 0; i < META_WORDS; i++) {
		uint64_t z = key * META_WORDS + i;

		for (r = 0; r < DECODE_ROUNDS; r++)
			z = mix64(z);
		word[i] = z;
	}
}

static uint64_t meta_check(uint64_t key, const uint64_t word[META_WORDS])
{
	uint64_t x = key;
	unsigned i;

	for (i = 0; i < META_WORDS; i++)
		x ^= word[i];
	return x;
}

/* Metadata lock held. */
static void meta_unhash_locked(struct metacache *m, struct meta *r)
{
	struct meta **pp;

	for (pp = meta_slot(m, r->key); *pp != r; pp = &(*pp)->hnext)
		;
	*pp = r->hnext;
	link_del(&r->lru);
}

/*
 * A stat: the record of @key, decoded again on a miss.  The record is
 * copied out under the lock, so it needs no pin.
 */
static void meta_stat(struct cache *c, struct worker *w, uint64_t key)
{
	struct metacache *m = &c->meta;
	uint64_t word[META_WORDS], check = 0;
	struct meta *r;
	bool found = false;

	pthread_mutex_lock(&m->lock);
	for (r = *meta_slot(m, key); r; r = r->hnext) {
		if (r->key == key) {
			r->referenced = true;
			memcpy(word, r->word, sizeof(word));
			check = r->check;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (found) {
		w->meta_hits++;
		if (check != meta_check(key, word) &&
		    atomic_fetch_add(&c->bad_payloads, 1) == 0)
			fprintf(stderr, "appcache: key %" PRIu64 ": the metadata "
				"record is corrupt\n", key);
		return;
	}

	w->meta_misses++;
	meta_decode(key, word);
	/* Charged with no lock held: the charge may run our scan callback. */
	if (!charge(c, sizeof(*r))) {
		w->meta_uncached++;
		return;
	}
	atomic_fetch_add(&c->meta_bytes, sizeof(*r));
	r = malloc(sizeof(*r));
	if (!r) {
		uncharge(c, &c->meta_bytes, sizeof(*r));
		return;
	}
	r->key = key;
	r->referenced = false;
	memcpy(r->word, word, sizeof(word));
	r->check = meta_check(key, word);

	pthread_mutex_lock(&m->lock);
	{
		struct meta *old;

		for (old = *meta_slot(m, key); old; old = old->hnext)
			if (old->key == key)
				break;
		if (old) {
			/* Another thread decoded it meanwhile. */
			pthread_mutex_unlock(&m->lock);
			free(r);
			uncharge(c, &c->meta_bytes, sizeof(*r));
			return;
		}
	}
	r->hnext = *meta_slot(m, key);
	*meta_slot(m, key) = r;
	link_add(&m->lru, &r->lru);
	atomic_fetch_add(&m->nr, 1);
	pthread_mutex_unlock(&m->lock);
}

/* No lock: a stale count is fine, a blocked reclaimer is not. */
static unsigned long meta_count(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	struct cache *c = sc->priv;
	unsigned long n = atomic_load(&c->meta.nr);

	(void)s;
	return n ? n : RCL_SHRINK_EMPTY;
}

/*
 * Examine up to nr_to_scan records from the oldest: a record used since the
 * last scan gets a second trip (the kernel's LRU_ROTATE), the others are
 * freed.  A reclaimer that may not block, or finds the lock taken, defers
 * its work to the next capable call.
 */
static unsigned long meta_scan(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	struct cache *c = sc->priv;
	struct metacache *m = &c->meta;
	unsigned long freed = 0, scanned = 0, rotated = 0;
	struct link dispose;

	(void)s;
	if (!(sc->context & RCL_CTX_MAY_BLOCK) ||
	    pthread_mutex_trylock(&m->lock) != 0) {
		atomic_fetch_add(&m->stopped, 1);
		return RCL_SHRINK_STOP;
	}
	link_init(&dispose);
	while (scanned < sc->nr_to_scan && !link_empty(&m->lru)) {
		struct meta *r = rcl_container_of(m->lru.prev, struct meta,
						  lru);

		scanned++;
		if (r->referenced) {
			r->referenced = false;
			link_del(&r->lru);
			link_add(&m->lru, &r->lru);
			rotated++;
			continue;
		}
		meta_unhash_locked(m, r);
		link_add(&dispose, &r->lru);
		freed++;
	}
	atomic_fetch_sub(&m->nr, freed);
	pthread_mutex_unlock(&m->lock);

	/* Freed and uncharged outside the lock. */
	while (!link_empty(&dispose)) {
		struct meta *r = rcl_container_of(dispose.next, struct meta,
						  lru);

		link_del(&r->lru);
		free(r);
	}
	if (freed)
		uncharge(c, &c->meta_bytes, freed * sizeof(struct meta));
	atomic_fetch_add(&m->freed, freed);
	atomic_fetch_add(&m->rotated, rotated);
	sc->nr_scanned = scanned;
	return freed;
}

static const struct rcl_shrinker_ops meta_shrinker_ops = {
	.count_objects = meta_count,
	.scan_objects = meta_scan,
};

/* ------------------------------------------------------------------------- */
/* Workers                                                                   */
/* ------------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long i;

	for (i = 0; i < w->nr_ops; i++) {
		struct op op = gen_next(&w->gen);

		switch (op.kind) {
		case OP_READ:
			w->reads++;
			cache_access(w->cache, w, &op);
			break;
		case OP_WRITE:
			w->writes++;
			cache_access(w->cache, w, &op);
			break;
		case OP_STAT:
			w->stats++;
			meta_stat(w->cache, w, op.key);
			break;
		}
		atomic_store_explicit(&w->done, i + 1, memory_order_relaxed);
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The sampler: memory over time, and the progress line                      */
/* ------------------------------------------------------------------------- */

static void sampler_take(struct sampler *s)
{
	struct cache *c = s->cache;
	struct sample *x;
	uint64_t usage = rcl_domain_usage(c->dom);
	unsigned i;

	if (usage > s->max_usage)
		s->max_usage = usage;
	s->nr_taken++;
	if (s->nr_samples == MAX_SAMPLES) {
		/* Keep the larger of each pair; sample half as often. */
		for (i = 0; i < MAX_SAMPLES / 2; i++) {
			struct sample *a = &s->samples[2 * i];
			struct sample *b2 = &s->samples[2 * i + 1];

			s->samples[i] = a->usage >= b2->usage ? *a : *b2;
		}
		s->nr_samples = MAX_SAMPLES / 2;
		s->period_ms *= 2;
	}
	x = &s->samples[s->nr_samples++];
	x->t_ns = now_ns() - s->start_ns;
	x->usage = usage;
	x->obj_bytes = atomic_load(&c->obj_bytes);
	x->meta_bytes = atomic_load(&c->meta_bytes);
	x->index_bytes = atomic_load(&c->index_bytes);
}

static void sampler_progress(struct sampler *s, bool last)
{
	unsigned long done = 0, acc = 0, hits = 0;
	double t = (double)(now_ns() - s->start_ns) / 1e9;
	char line[160];
	unsigned i;

	for (i = 0; i < s->nr_workers; i++) {
		struct worker *w = &s->workers[i];

		done += atomic_load_explicit(&w->done, memory_order_relaxed);
		acc += atomic_load_explicit(&w->accesses, memory_order_relaxed);
		hits += atomic_load_explicit(&w->hits, memory_order_relaxed);
	}
	snprintf(line, sizeof(line),
		 "appcache: %5.1f s  %lu/%lu ops (%3.0f%%)  hit ratio %5.1f%%  "
		 "usage %.2f/%.2f MiB", t, done, s->total_ops,
		 s->total_ops ? 100.0 * (double)done / (double)s->total_ops : 0,
		 acc ? 100.0 * (double)hits / (double)acc : 0.0,
		 (double)rcl_domain_usage(s->cache->dom) / (1 << 20),
		 (double)s->cache->budget / (1 << 20));
	if (s->tty)
		fprintf(stderr, "\r%s\033[K%s", line, last ? "\n" : "");
	else
		fprintf(stderr, "%s\n", line);
	fflush(stderr);
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	uint64_t next_progress = (uint64_t)PROGRESS_MS * 1000000ull;
	struct timespec ts;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		uint64_t deadline;

		pthread_mutex_unlock(&s->lock);
		sampler_take(s);
		if (s->progress && now_ns() - s->start_ns >= next_progress) {
			sampler_progress(s, false);
			next_progress += (uint64_t)PROGRESS_MS * 1000000ull;
		}
		pthread_mutex_lock(&s->lock);
		deadline = now_ns() + (uint64_t)s->period_ms * 1000000ull;
		ts.tv_sec = (time_t)(deadline / 1000000000ull);
		ts.tv_nsec = (long)(deadline % 1000000000ull);
		while (!s->stop &&
		       pthread_cond_timedwait(&s->cond, &s->lock, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&s->lock);
	sampler_take(s);	/* the state at the end of the run */
	if (s->progress && s->tty)
		sampler_progress(s, true);
	return NULL;
}

static int sampler_start(struct sampler *s)
{
	pthread_condattr_t attr;
	int err;

	s->samples = calloc(MAX_SAMPLES, sizeof(*s->samples));
	if (!s->samples)
		return ENOMEM;
	s->period_ms = SAMPLE_MS;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &attr);
	pthread_condattr_destroy(&attr);
	s->start_ns = now_ns();
	err = pthread_create(&s->thread, NULL, sampler_main, s);
	if (err) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		free(s->samples);
		s->samples = NULL;
	}
	return err;
}

static void sampler_stop(struct sampler *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
}

/* ------------------------------------------------------------------------- */
/* The exact LRU, replaying the same requests                                */
/* ------------------------------------------------------------------------- */

struct lru_result {
	unsigned long hot, hot_hits, scan, scan_hits;
};

/*
 * An exact LRU over keys with the rows' byte sizes: a hit moves the key to
 * the head; a miss inserts it at the head and evicts from the tail until
 * the bytes fit the budget.  Requests come from the same generators as the
 * workers', interleaved round-robin (one operation of thread 0, one of
 * thread 1, ...); stats do not touch the object cache and are skipped.
 */
static int lru_replay(uint64_t seed, unsigned nr_threads, unsigned long ops,
		      uint64_t budget, struct lru_result *res)
{
	int32_t *next = malloc(NR_KEYS * sizeof(*next));
	int32_t *prev = malloc(NR_KEYS * sizeof(*prev));
	bool *in = calloc(NR_KEYS, sizeof(*in));
	struct gen *g = calloc(nr_threads, sizeof(*g));
	int32_t head = -1, tail = -1;
	uint64_t used = 0;
	unsigned long i;
	unsigned t;

	memset(res, 0, sizeof(*res));
	if (!next || !prev || !in || !g) {
		free(next);
		free(prev);
		free(in);
		free(g);
		return -ENOMEM;
	}
	for (t = 0; t < nr_threads; t++)
		gen_init(&g[t], seed, t, nr_threads);
	for (i = 0; i < ops; i++) {
		for (t = 0; t < nr_threads; t++) {
			struct op op = gen_next(&g[t]);
			int32_t k = (int32_t)op.key;
			bool hit = in[k];

			if (op.kind == OP_STAT)
				continue;
			if (op.scan) {
				res->scan++;
				res->scan_hits += hit;
			} else {
				res->hot++;
				res->hot_hits += hit;
			}
			if (hit) {
				if (head == k)
					continue;
				/* Unlink; it is not the head. */
				next[prev[k]] = next[k];
				if (next[k] >= 0)
					prev[next[k]] = prev[k];
				else
					tail = prev[k];
			} else {
				used += obj_bytes(op.key);
				in[k] = true;
				while (used > budget) {
					int32_t v = tail;

					tail = prev[v];
					if (tail >= 0)
						next[tail] = -1;
					else
						head = -1;
					in[v] = false;
					used -= obj_bytes((uint64_t)v);
				}
			}
			prev[k] = -1;
			next[k] = head;
			if (head >= 0)
				prev[head] = k;
			head = k;
			if (tail < 0)
				tail = k;
		}
	}
	free(next);
	free(prev);
	free(in);
	free(g);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Setup and teardown                                                        */
/* ------------------------------------------------------------------------- */

static int cache_init(struct cache *c, uint64_t budget)
{
	struct rcl_lruvec_config cfg = {
		.ops = &cache_ops,
		.priv = c,
	};
	struct rcl_domain_config dcfg = {
		.budget = budget,
		.mode = RCL_CHARGE_STRICT,
		/* Defaults: flush at 10 % of the budget dirty, throttle at 20 %. */
	};
	struct rcl_shrinker_config scfg = {
		.ops = &meta_shrinker_ops,
		.priv = c,
		.name = "metadata",
		/* Re-decoding a record costs about as much as a re-read. */
		.seeks = RCL_DEFAULT_SEEKS,
	};
	unsigned i;
	int err;

	memset(c, 0, sizeof(*c));
	c->budget = budget;
	/* Twice the rows that fit: enough to see a loop as large again. */
	c->shadow_quota = 2 * budget /
			  (sizeof(struct obj) + (MIN_PAYLOAD + MAX_PAYLOAD) / 2);
	c->buckets = calloc(NR_BUCKETS, sizeof(*c->buckets));
	c->meta.hash = calloc(NR_META_BUCKETS, sizeof(*c->meta.hash));
	c->store = calloc(NR_KEYS, sizeof(*c->store));
	c->latest = calloc(NR_KEYS, sizeof(*c->latest));
	if (!c->buckets || !c->meta.hash || !c->store || !c->latest) {
		err = -ENOMEM;
		goto fail_mem;
	}
	for (i = 0; i < NR_BUCKETS; i++)
		pthread_mutex_init(&c->buckets[i].lock, NULL);
	pthread_mutex_init(&c->shadow_lock, NULL);
	link_init(&c->shadow_fifo);
	pthread_mutex_init(&c->meta.lock, NULL);
	link_init(&c->meta.lru);

	err = rcl_lruvec_init(&c->lru, &cfg);
	if (err)
		goto fail_locks;
	err = rcl_domain_new(&dcfg, &c->dom);
	if (err)
		goto fail_lru;
	err = rcl_domain_attach(c->dom, &c->lru, 0);
	if (err)
		goto fail_dom;
	err = rcl_shadow_limit_new(rcl_domain_registry(c->dom), c->shadow_quota,
				   &shadow_ops, c, &c->shadows);
	if (err)
		goto fail_attach;
	err = rcl_shrinker_new(rcl_domain_registry(c->dom), &scfg,
			       &c->meta.shrinker);
	if (err)
		goto fail_limit;
	err = rcl_shrinker_register(c->meta.shrinker);
	if (!err)
		err = rcl_domain_flusher_start(c->dom, &wb_ops, c, 64);
	if (!err)
		err = rcl_domain_reclaimer_start(c->dom);
	if (!err)
		return 0;

	rcl_domain_flusher_stop(c->dom);
	rcl_shrinker_free(c->meta.shrinker);
fail_limit:
	rcl_shadow_limit_free(c->shadows);
fail_attach:
	rcl_domain_detach(c->dom, &c->lru);
fail_dom:
	rcl_domain_free(c->dom);
fail_lru:
	rcl_lruvec_destroy(&c->lru);
fail_locks:
	for (i = 0; i < NR_BUCKETS; i++)
		pthread_mutex_destroy(&c->buckets[i].lock);
	pthread_mutex_destroy(&c->shadow_lock);
	pthread_mutex_destroy(&c->meta.lock);
fail_mem:
	free(c->buckets);
	free(c->meta.hash);
	free((void *)c->store);
	free((void *)c->latest);
	return err;
}

struct clear_result {
	unsigned long rows, shadows, records;
	unsigned long bad;	/* cached rows not at their latest version */
};

/*
 * Drop everything, single-threaded: the workers have exited and the
 * reclaimer and the flusher are stopped, so nothing else touches the caches.
 * Rows still use the pin protocol's delete: unhash, rcl_lruvec_del_wait(),
 * drop the index reference.
 */
static void cache_clear(struct cache *c, struct clear_result *res)
{
	unsigned i;
	int err;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < NR_BUCKETS; i++) {
		struct bucket *b = &c->buckets[i];

		for (;;) {
			struct entry *e;
			struct obj *o = NULL;

			pthread_mutex_lock(&b->lock);
			e = b->head;
			if (!e) {
				pthread_mutex_unlock(&b->lock);
				break;
			}
			b->head = e->hnext;
			if (slot_is_obj(e->slot)) {
				o = slot_obj(e->slot);
				o->hashed = false;
				o->entry = NULL;
			} else {
				pthread_mutex_lock(&c->shadow_lock);
				link_del(&e->shadow);
				pthread_mutex_unlock(&c->shadow_lock);
				rcl_shadow_limit_add(c->shadows, -1);
				res->shadows++;
			}
			pthread_mutex_unlock(&b->lock);
			free(e);
			uncharge(c, &c->index_bytes, sizeof(*e));
			if (!o)
				continue;
			if (o->version != atomic_load(&c->latest[o->key]))
				res->bad++;
			err = rcl_lruvec_del_wait(&c->lru, &o->lru);
			if (err) {
				/* Still known to the library: leak it. */
				lib_error(c, "rcl_lruvec_del_wait()", err);
				continue;
			}
			obj_put(c, o);
			res->rows++;
		}
	}

	pthread_mutex_lock(&c->meta.lock);
	while (!link_empty(&c->meta.lru)) {
		struct meta *r = rcl_container_of(c->meta.lru.next,
						  struct meta, lru);

		meta_unhash_locked(&c->meta, r);
		free(r);
		atomic_fetch_sub(&c->meta.nr, 1);
		uncharge(c, &c->meta_bytes, sizeof(*r));
		res->records++;
	}
	pthread_mutex_unlock(&c->meta.lock);
}

/* Returns the first failure; the cache is gone only if 0. */
static int cache_destroy(struct cache *c)
{
	unsigned i;
	int err = rcl_domain_reclaimer_stop(c->dom);

	if (!err)
		err = rcl_domain_flusher_stop(c->dom);
	if (!err)
		err = rcl_shrinker_free(c->meta.shrinker);
	if (!err)
		err = rcl_shadow_limit_free(c->shadows);
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
	pthread_mutex_destroy(&c->shadow_lock);
	pthread_mutex_destroy(&c->meta.lock);
	free(c->buckets);
	free(c->meta.hash);
	free((void *)c->store);
	free((void *)c->latest);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The report                                                                */
/* ------------------------------------------------------------------------- */

static double pct(unsigned long part, unsigned long whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static double mib(uint64_t bytes)
{
	return (double)bytes / (1 << 20);
}

/* The bytes of the rows @first..@first+@n-1. */
static uint64_t range_bytes(uint32_t first, uint32_t n)
{
	uint64_t sum = 0;
	uint32_t k;

	for (k = first; k < first + n; k++)
		sum += obj_bytes(k);
	return sum;
}

/* A bar of @cols columns for @x of @scale, drawn with @ch; returns columns. */
static unsigned bar(char *out, unsigned at, uint64_t x, uint64_t scale,
		    unsigned cols, char ch)
{
	unsigned n = scale ? (unsigned)((x * cols + scale / 2) / scale) : 0;
	unsigned i;

	if (at + n > cols)
		n = cols - at;
	for (i = 0; i < n; i++)
		out[at + i] = ch;
	return at + n;
}

/*
 * One row per slice of the run: the sample with the highest usage in it,
 * drawn as rows (#), metadata (m) and index entries (i), scaled so that the
 * budget is CHART_COLS columns; the '|' after the bar is the budget.
 */
static void print_chart(const struct sampler *s, uint64_t budget)
{
	uint64_t end = s->nr_samples ? s->samples[s->nr_samples - 1].t_ns : 0;
	unsigned rows = s->nr_samples < CHART_ROWS ? s->nr_samples : CHART_ROWS;
	unsigned r, i = 0;

	printf("memory: domain usage against the budget over time (%u "
	       "samples, every %u ms or more; each row is the fullest sample\n"
	       "        of its slice; %u columns = the budget; # rows, m "
	       "metadata, i index entries and shadows)\n",
	       (unsigned)s->nr_taken, SAMPLE_MS, CHART_COLS);
	for (r = 0; r < rows; r++) {
		uint64_t lim = end * (r + 1) / rows;
		const struct sample *best = NULL;
		char line[CHART_COLS + 1];
		unsigned at;

		for (; i < s->nr_samples &&
		       (s->samples[i].t_ns <= lim || r == rows - 1); i++)
			if (!best || s->samples[i].usage > best->usage)
				best = &s->samples[i];
		if (!best)
			continue;
		memset(line, ' ', CHART_COLS);
		line[CHART_COLS] = '\0';
		at = bar(line, 0, best->obj_bytes, budget, CHART_COLS, '#');
		at = bar(line, at, best->meta_bytes, budget, CHART_COLS, 'm');
		bar(line, at, best->index_bytes, budget, CHART_COLS, 'i');
		printf("  %6.2f s %7.2f MiB %5.1f%% [%s|\n",
		       (double)best->t_ns / 1e9, mib(best->usage),
		       pct(best->usage, budget), line);
	}
}

/* The domain's counters, /proc/vmstat style, two to a line. */
static void print_vmstat(struct rcl_domain *d)
{
	int len = rcl_domain_vmstat_format(d, NULL, 0);
	char *buf, *line, *save = NULL;
	unsigned n = 0;

	if (len < 0)
		return;
	buf = malloc((size_t)len + 1);
	if (!buf)
		return;
	rcl_domain_vmstat_format(d, buf, (size_t)len + 1);
	printf("vmstat: the domain's counters (rcl_domain_vmstat_format())\n");
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		printf("%s%-28s %12s", n % 2 ? "   " : "  ", line, sp + 1);
		if (n++ % 2)
			printf("\n");
	}
	if (n % 2)
		printf("\n");
	free(buf);
}

/* ------------------------------------------------------------------------- */
/* Command line                                                              */
/* ------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: appcache [OPTION]...\n"
		"Run an application-style cache under a memory budget with\n"
		"libreclaim: a row cache with workingset shadows, a metadata\n"
		"cache behind a shrinker, dirty rows written back by the\n"
		"library's flusher, all in one strict memory domain with a\n"
		"background reclaimer.  Compare its hit ratio with an exact\n"
		"LRU of the same budget; print memory over time and the\n"
		"counters; check that nothing was lost or leaked.\n"
		"\n"
		"  -n, --ops N         operations per thread, 1..%lu (default %lu)\n"
		"  -t, --threads T     worker threads, 1..%u (default %u)\n"
		"  -b, --budget BYTES  memory budget, with an optional K, M or G\n"
		"                      suffix, 256K..64G (default 8M)\n"
		"  -s, --seed S        workload seed (default %llu)\n"
		"  -q, --quiet         no progress line\n"
		"  -h, --help          show this help\n"
		"\n"
		"Exit status: 0 if every self-check passed, 1 if one failed,\n"
		"2 for a usage error.\n",
		MAX_OPS, DEFAULT_OPS, MAX_THREADS, DEFAULT_THREADS,
		(unsigned long long)DEFAULT_SEED);
}

/* A non-negative decimal number, with an optional K/M/G suffix (@suffix). */
static bool parse_u64(const char *s, bool suffix, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
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

static int check(bool ok, const char *what)
{
	printf("  [%s] %s\n", ok ? " ok " : "FAIL", what);
	if (!ok)
		fprintf(stderr, "appcache: FAILED: %s\n", what);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ops", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "budget", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ops = DEFAULT_OPS, threads = DEFAULT_THREADS;
	uint64_t budget = DEFAULT_BUDGET, seed = DEFAULT_SEED;
	bool quiet = false;
	struct worker *workers = NULL, tot;
	struct sampler smp;
	struct cache *c;
	struct lru_result lru;
	struct clear_result cl;
	struct rcl_vmstat vm;
	struct rcl_workingset_stats ws;
	struct rcl_lruvec_type_stats st;
	struct rcl_shrinker_stats ms;
	struct rcl_dirty_stats ds;
	struct rcl_watermarks wm;
	uint64_t t0, t_run, t_lru, written_at_exit = 0, lost_keys = 0;
	uint64_t keys_written = 0, left, in_w, act_w, shadows_left;
	unsigned long acc, hits, lru_acc, lru_hits;
	unsigned long cached_rows;
	size_t in_nr, act_nr;
	unsigned i, started;
	int opt, err, failed = 0;

	while ((opt = getopt_long(argc, argv, "n:t:b:s:qh", longopts,
				  NULL)) != -1) {
		const char *why = NULL;

		switch (opt) {
		case 'n':
			if (!parse_u64(optarg, false, &ops))
				why = "not a number";
			else if (ops < 1 || ops > MAX_OPS)
				why = "out of range 1..100000000";
			break;
		case 't':
			if (!parse_u64(optarg, false, &threads))
				why = "not a number";
			else if (threads < 1 || threads > MAX_THREADS)
				why = "out of range 1..64";
			break;
		case 'b':
			if (!parse_u64(optarg, true, &budget))
				why = "not a size (BYTES with an optional K, M "
				      "or G suffix)";
			else if (budget < MIN_BUDGET || budget > MAX_BUDGET)
				why = "out of range 256K..64G";
			break;
		case 's':
			if (!parse_u64(optarg, false, &seed))
				why = "not a number";
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			fprintf(stderr, "Try 'appcache --help'.\n");
			return 2;
		}
		if (why) {
			const struct option *lo = longopts;

			while (lo->val != opt)
				lo++;
			fprintf(stderr, "appcache: --%s '%s': %s\n", lo->name,
				optarg, why);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "appcache: unexpected argument '%s'\n"
			"Try 'appcache --help'.\n", argv[optind]);
		return 2;
	}

	c = malloc(sizeof(*c));
	workers = calloc(threads, sizeof(*workers));
	if (!c || !workers) {
		fprintf(stderr, "appcache: out of memory\n");
		free(c);
		free(workers);
		return EXIT_FAILURE;
	}
	err = cache_init(c, budget);
	if (err) {
		fprintf(stderr, "appcache: cannot create the cache: %s\n",
			strerror(-err));
		free(c);
		free(workers);
		return EXIT_FAILURE;
	}
	rcl_domain_watermarks(c->dom, &wm);
	printf("appcache: %" PRIu64 " threads x %" PRIu64 " operations, seed "
	       "%" PRIu64 "; budget %" PRIu64 " bytes (%.2f MiB), strict\n",
	       threads, ops, seed, budget, mib(budget));
	printf("  rows: %u hot (%.1f MiB, 80%% of their accesses on a fifth "
	       "of them), %u in the loop range (%.1f MiB)\n", HOT_KEYS,
	       mib(range_bytes(0, HOT_KEYS)), LOOP_KEYS,
	       mib(range_bytes(HOT_KEYS, LOOP_KEYS)));
	printf("  each thread walks the loop for %u of every %u operations; "
	       "%u%% writes, %u%% stats, the rest reads\n", SCAN_LEN,
	       SCAN_PERIOD, WRITE_PERCENT, STAT_PERCENT);
	printf("  watermarks (headroom): min %" PRIu64 ", low %" PRIu64
	       ", high %" PRIu64 "; shadow quota %" PRIu64 "\n", wm.min, wm.low,
	       wm.high, c->shadow_quota);

	memset(&smp, 0, sizeof(smp));
	smp.cache = c;
	smp.workers = workers;
	smp.nr_workers = (unsigned)threads;
	smp.total_ops = (unsigned long)(threads * ops);
	smp.progress = !quiet;
	smp.tty = isatty(STDERR_FILENO);
	t0 = now_ns();
	err = sampler_start(&smp);
	if (err) {
		fprintf(stderr, "appcache: cannot start the sampler: %s\n",
			strerror(err));
		failed = 1;
	}
	started = 0;
	for (i = 0; i < threads && !failed; i++) {
		struct worker *w = &workers[i];

		w->cache = c;
		w->id = i;
		gen_init(&w->gen, seed, i, (unsigned)threads);
		w->nr_ops = (unsigned long)ops;
		err = pthread_create(&w->thread, NULL, worker_main, w);
		if (err) {
			fprintf(stderr, "appcache: pthread_create: %s\n",
				strerror(err));
			failed = 1;
			break;
		}
		started++;
	}
	memset(&tot, 0, sizeof(tot));
	for (i = 0; i < started; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->thread, NULL);
		tot.hot += w->hot;
		tot.hot_hits += w->hot_hits;
		tot.scan += w->scan;
		tot.scan_hits += w->scan_hits;
		tot.reads += w->reads;
		tot.writes += w->writes;
		tot.stats += w->stats;
		tot.uncached_reads += w->uncached_reads;
		tot.write_around += w->write_around;
		tot.raced += w->raced;
		tot.refaults += w->refaults;
		tot.meta_hits += w->meta_hits;
		tot.meta_misses += w->meta_misses;
		tot.meta_uncached += w->meta_uncached;
		tot.dirty_timeouts += w->dirty_timeouts;
	}
	t_run = now_ns() - t0;
	if (smp.samples)
		sampler_stop(&smp);

	/*
	 * Shutdown: nothing reclaims any more; stop the flusher (it finishes
	 * its batch), then write every dirty row in this thread.  In that
	 * order: a row the flusher is writing while rcl_domain_writeback_all()
	 * runs is skipped by it, and comes back dirty if it was dirtied during
	 * its write.  The store must then hold every key's latest version.
	 */
	err = rcl_domain_reclaimer_stop(c->dom);
	if (err)
		lib_error(c, "rcl_domain_reclaimer_stop()", err);
	err = rcl_domain_flusher_stop(c->dom);
	if (err)
		lib_error(c, "rcl_domain_flusher_stop()", err);
	err = rcl_domain_writeback_all(c->dom, &wb_ops, c, &written_at_exit);
	if (err)
		lib_error(c, "rcl_domain_writeback_all()", err);
	for (i = 0; i < NR_KEYS; i++) {
		uint64_t v = atomic_load(&c->latest[i]);

		keys_written += v != 0;
		lost_keys += atomic_load(&c->store[i]) != v;
	}

	/* The LRU replay, after the run so that it does not steal its CPU. */
	t0 = now_ns();
	err = lru_replay(seed, (unsigned)threads, (unsigned long)ops, budget,
			 &lru);
	t_lru = now_ns() - t0;
	if (err) {
		fprintf(stderr, "appcache: the LRU replay failed: %s\n",
			strerror(-err));
		failed = 1;
	}

	rcl_lruvec_drain(&c->lru);
	rcl_domain_vmstat(c->dom, &vm);
	rcl_domain_dirty_stats(c->dom, &ds);
	rcl_lruvec_workingset_stats(&c->lru, &ws);
	rcl_lruvec_stats(&c->lru, RCL_LRU_FILE, &st);
	rcl_shrinker_stats(c->meta.shrinker, &ms);
	in_nr = rcl_lruvec_count(&c->lru, RCL_LRU_LIST(RCL_LRU_FILE, 0), &in_w);
	act_nr = rcl_lruvec_count(&c->lru, RCL_LRU_LIST(RCL_LRU_FILE, 1),
				  &act_w);
	cached_rows = 0;
	for (i = 0; i < NR_BUCKETS; i++) {
		const struct entry *e;

		for (e = c->buckets[i].head; e; e = e->hnext)
			cached_rows += slot_is_obj(e->slot);
	}
	shadows_left = rcl_shadow_limit_count(c->shadows);

	acc = tot.hot + tot.scan;
	hits = tot.hot_hits + tot.scan_hits;
	lru_acc = lru.hot + lru.scan;
	lru_hits = lru.hot_hits + lru.scan_hits;
	printf("\nrun: %.2f s, %lu operations (%lu reads, %lu writes, %lu "
	       "stats), %.2f M ops/s\n", (double)t_run / 1e9,
	       tot.reads + tot.writes + tot.stats, tot.reads, tot.writes,
	       tot.stats, (double)(tot.reads + tot.writes + tot.stats) /
			  ((double)t_run / 1e9) / 1e6);

	printf("\nhit ratio of the row cache (reads and writes; stats use the "
	       "metadata cache):\n");
	printf("  %-12s %10s %12s %12s\n", "", "accesses", "appcache",
	       "exact LRU");
	printf("  %-12s %10lu %11.1f%% %11.1f%%\n", "all", acc, pct(hits, acc),
	       pct(lru_hits, lru_acc));
	printf("  %-12s %10lu %11.1f%% %11.1f%%\n", "hot set", tot.hot,
	       pct(tot.hot_hits, tot.hot), pct(lru.hot_hits, lru.hot));
	printf("  %-12s %10lu %11.1f%% %11.1f%%\n", "loop walks", tot.scan,
	       pct(tot.scan_hits, tot.scan), pct(lru.scan_hits, lru.scan));
	printf("  The LRU: an exact LRU of rows with the same sizes and the "
	       "whole budget (%" PRIu64 " bytes)\n"
	       "  for rows alone (no metadata, index or shadows), replaying the "
	       "same per-thread request\n"
	       "  sequences interleaved round-robin (one operation of each "
	       "thread in turn), single-threaded,\n"
	       "  computed after the run in %.2f s.  The cache's own "
	       "interleaving is the threads' real one.\n",
	       budget, (double)t_lru / 1e9);
	if (tot.uncached_reads || tot.write_around || tot.raced)
		printf("  misses not cached (the budget was full of pinned, "
		       "dirty or isolated rows): %lu reads,\n  %lu writes "
		       "(written around to the store); misses that raced "
		       "with another thread's load: %lu\n",
		       tot.uncached_reads, tot.write_around, tot.raced);

	printf("\n");
	if (smp.samples)
		print_chart(&smp, budget);
	printf("  max usage: %" PRIu64 " bytes sampled, %" PRIu64 " read after "
	       "a charge; budget %" PRIu64 " (%.2f%% used at most)\n",
	       smp.max_usage, atomic_load(&c->peak), budget,
	       pct(atomic_load(&c->peak) > smp.max_usage ? atomic_load(&c->peak)
							   : smp.max_usage,
		   budget));

	printf("\n");
	print_vmstat(c->dom);

	printf("\nworkingset (rcl_lruvec_workingset_stats()): refault %" PRIu64
	       ", activate %" PRIu64 ", restore %" PRIu64 ", nonresident_age %"
	       PRIu64 "\n", ws.refault, ws.activate, ws.restore,
	       ws.nonresident_age);
	printf("  inactive target %.1f%% of the weight; rows: inactive %zu "
	       "(%.2f MiB), active %zu (%.2f MiB)\n",
	       (double)rcl_lruvec_inactive_target(&c->lru, RCL_LRU_FILE) * 100 /
		       65536, in_nr, mib(in_w), act_nr, mib(act_w));
	printf("  shadows: %" PRIu64 " stored, %" PRIu64 " passed back (%"
	       PRIu64 " activated), %" PRIu64 " dropped by the limit (quota %"
	       PRIu64 "), %" PRIu64 " left\n",
	       atomic_load(&c->shadows_stored),
	       atomic_load(&c->shadows_refaulted),
	       atomic_load(&c->refault_activated),
	       atomic_load(&c->shadows_dropped), c->shadow_quota, shadows_left);
	printf("  lruvec: scanned %" PRIu64 ", freed %" PRIu64 ", rotated %"
	       PRIu64 ", activated %" PRIu64 ", deactivated %" PRIu64
	       "; evict callback kept %" PRIu64 " pinned, %" PRIu64
	       " re-dirtied\n", st.scanned, st.freed, st.rotated, st.activated,
	       st.deactivated, atomic_load(&c->evict_busy),
	       atomic_load(&c->evict_redirtied));

	printf("\nshrinkers: \"metadata\" (seeks %d): calls %" PRIu64
	       ", scanned %" PRIu64 ", freed %" PRIu64 ", stops %" PRIu64
	       "; second trips %" PRIu64 "\n", RCL_DEFAULT_SEEKS, ms.calls,
	       ms.scanned, ms.freed, ms.stops,
	       atomic_load(&c->meta.rotated));
	printf("  metadata cache: %lu hits, %lu misses (%.1f%% hits), %lu not "
	       "cached; %lu records now\n", tot.meta_hits, tot.meta_misses,
	       pct(tot.meta_hits, tot.meta_hits + tot.meta_misses),
	       tot.meta_uncached, atomic_load(&c->meta.nr));
	printf("  \"shadow\" (rcl_shadow_limit_new(), seeks 0): dropped %"
	       PRIu64 " shadows, skipped %" PRIu64 " on a busy bucket\n",
	       atomic_load(&c->shadows_dropped),
	       atomic_load(&c->shadow_drop_busy));

	printf("\nflusher: %" PRIu64 " rows written (writes_flusher: %" PRIu64
	       " by the thread, %" PRIu64 " by rcl_domain_writeback_all() at "
	       "exit), %" PRIu64 " wakeups\n", atomic_load(&c->writes),
	       vm.writes_flusher - written_at_exit, written_at_exit,
	       vm.flusher_wakeups);
	printf("  flush requests %" PRIu64 " (%" PRIu64 " from reclaim, %"
	       PRIu64 " coalesced); writers throttled %" PRIu64 " times (%"
	       PRIu64 " timeouts); writes_from_reclaim %" PRIu64 "\n",
	       vm.flush_requests, vm.flush_requests_vmscan, vm.flush_coalesced,
	       vm.dirty_throttled, vm.dirty_throttle_timeouts,
	       vm.writes_from_reclaim);
	printf("  nothing lost? %lu writes to %" PRIu64 " keys; keys whose "
	       "latest version is not in the store: %" PRIu64 "; loads that "
	       "found an old version: %" PRIu64 "\n", tot.writes, keys_written,
	       lost_keys, atomic_load(&c->lost_writes));

	printf("\nchecks:\n");
	failed |= check(atomic_load(&c->bad_payloads) == 0,
			"every access found the row's payload at its latest "
			"version, under the pin");
	failed |= check(lost_keys == 0 && atomic_load(&c->lost_writes) == 0 &&
				atomic_load(&c->write_regress) == 0,
			"nothing lost: the store holds every key's latest "
			"version, and every load found it");
	failed |= check(ds.nr_dirty == 0 && ds.nr_writeback == 0,
			"nothing dirty or under writeback after the final "
			"write-back");
	failed |= check(smp.max_usage <= budget &&
				atomic_load(&c->peak) <= budget,
			"the usage never exceeded the budget (strict domain)");
	failed |= check(atomic_load(&c->evict_dirty_flag) == 0 &&
				vm.writes_from_reclaim == 0,
			"reclaim never wrote and never evicted a dirty row");
	failed |= check(vm.writes_flusher == atomic_load(&c->writes),
			"writes_flusher equals the write callback's count");
	failed |= check(atomic_load(&c->evicted) ==
					vm.pgsteal_kswapd + vm.pgsteal_direct &&
				st.freed == atomic_load(&c->evicted),
			"pgsteal equals the evict callback's count");
	failed |= check(ws.refault == atomic_load(&c->shadows_refaulted) &&
				ws.activate ==
					atomic_load(&c->refault_activated),
			"the workingset counters match the shadows passed "
			"back");
	failed |= check(ms.freed == atomic_load(&c->meta.freed),
			"the metadata shrinker's stats match its callback");
	failed |= check(vm.slabs_freed == ms.freed +
					atomic_load(&c->shadows_dropped),
			"slabs_freed equals what the two shrinkers freed");
	failed |= check(in_nr + act_nr == cached_rows &&
				in_w + act_w == atomic_load(&c->obj_bytes) &&
				rcl_lruvec_nr_isolated(&c->lru) == 0,
			"the lists hold exactly the cached rows");
	failed |= check(atomic_load(&c->lib_errors) == 0,
			"no library call failed unexpectedly");

	cache_clear(c, &cl);
	left = rcl_domain_usage(c->dom);
	failed |= check(cl.bad == 0, "every cached row was at its latest "
				     "version at the end");
	failed |= check(cl.rows == cached_rows && cl.shadows == shadows_left &&
				rcl_shadow_limit_count(c->shadows) == 0,
			"the teardown found every row and every shadow");
	failed |= check(left == 0, "nothing charged after the teardown "
				   "(domain usage 0)");
	err = cache_destroy(c);
	failed |= check(err == 0, "the domain, the shrinkers and the lruvec "
				  "were freed");
	printf("teardown: %lu rows, %lu shadows, %lu metadata records freed; "
	       "usage %" PRIu64 "\n", cl.rows, cl.shadows, cl.records, left);
	free(smp.samples);
	free(workers);
	if (!err)
		free(c);

	printf("%s\n", failed ? "FAILED" : "OK");
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
