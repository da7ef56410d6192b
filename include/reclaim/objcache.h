/* SPDX-License-Identifier: MIT */
/**
 * DOC: objcache - a ready object cache: index, pins, charging, shadows
 *
 * The other modules leave the cache's index to the application: every cache
 * on an lruvec writes the same plumbing (a hash table, the pin protocol of
 * lruvec.h, charge-then-insert with its lost race, uncharging in three
 * places).  An objcache is that plumbing, once: a sharded hash index whose
 * shards each own one lruvec attached to a memory domain, with the pin
 * protocol, the charging and the workingset shadows done by the library.
 *
 * Ownership model.  The application owns its objects and embeds a
 * &struct rcl_objcache_node in each (72 bytes on LP64: the lru node, the
 * index link, the key pointer and length, the hash, the cache, the charge
 * and a reference word).  The library never allocates per cached object:
 * it allocates the cache, its shards and their hash tables, and a table
 * grows (one allocation per doubling, under the shard lock) when a shard
 * holds more objects than buckets.  A failed growth is not an error: the
 * insert goes on with the old table (longer chains) and the next insert
 * tries again.  The key bytes stay the application's: the node keeps a
 * pointer to the key given at insert, which must live in the object (or at
 * least as long as it is cached).
 *
 * Keys.  Either the built-in byte-string keys (no &rcl_objcache_ops.hash
 * and .eq: a seeded 64-bit hash of the bytes, written for this library in
 * the style of wyhash, and memcmp()) or the application's hash and
 * equality callbacks (both or neither).  The seed is in the configuration,
 * so a test's shard and bucket placement is deterministic; a server facing
 * untrusted keys should pass a random one.  An application hash is mixed
 * once more (a 64-bit finaliser), so a weak hash (the key itself) is fine.
 *
 * One value for weight and charge.  rcl_objcache_insert() takes the
 * object's weight (its payload, in the domain's unit) once and adds the
 * cache's per-object overhead, &rcl_objcache_config.meta_charge (0 unless
 * configured); that sum is the object's charge: what is charged to the
 * domain, and the object's lru weight, so reclaim counts what it frees in
 * the unit it was charged in.  The cache uncharges exactly the charge,
 * exactly once, when the object finally goes (evicted, deleted, or at
 * destroy): after the destructor has run, except for an eviction,
 * uncharged when it is evicted and destroyed a little later (see "The end
 * of an evicted object").  A charge that does not fit the lru weight
 * (weight + meta_charge above UINT32_MAX, compared without computing the
 * sum, so a weight near UINT64_MAX is -E2BIG too, never a wrapped charge)
 * is refused with -E2BIG, a charge of 0 (a weight of 0 with a meta_charge
 * of 0) with -EINVAL.  With a meta_charge, a weight of 0 (an empty value)
 * is valid: the object is charged its overhead alone.
 *
 * The per-object overhead (meta_charge).  A cached object takes more
 * memory than its payload: its header (this node and the application's
 * fields), the allocator's slack and bookkeeping, and its share of the
 * cache's index.  A budget that counts payloads only is overrun by that
 * much (3 % for 4 KiB payloads, twice the payload for 64-byte ones), so
 * pass the payload as the weight and the rest, measured once, as
 * meta_charge.  Per object, in bytes (convert to the domain's unit):
 *
 * - the header: sizeof(your object) minus the part of it the weight
 *   counts (72 bytes of it are this node);
 * - the allocator: malloc_usable_size(p) minus the size asked for (the
 *   slack: glibc rounds a chunk to 16 bytes, so 0..15; average it over
 *   the sizes you allocate), plus its header: glibc's chunk header is 16
 *   bytes, but its first 8 (prev_size) lie in the previous chunk's tail
 *   while that one is in use, so a chunk is malloc_usable_size() + 8
 *   bytes (the address stride of consecutive allocations shows it);
 * - the index: a shard's bucket array is 8 bytes per bucket (a pointer)
 *   and its shadow table 16 bytes per slot, one slot per bucket (none with
 *   RCL_OBJCACHE_NO_SHADOWS).  Both double at the insert that finds the
 *   shard holding as many objects as buckets, so the load stays in
 *   (1/2, 1] and the share is 24 / load bytes: 24..48, about 33 averaged
 *   over a doubling (8..16, about 11, without shadows).  Tables never
 *   shrink, so after many deletes the share of each object left is
 *   larger.  The initial tables (nr_shards x nr_buckets x 24 bytes), the
 *   shards and the cache are a fixed cost, not in any charge.
 *
 * Measured (glibc 2.36, x86-64, by a short program linking the library,
 * with a counting &struct rcl_allocator for the tables): the object of
 * examples/objcache.c, { struct rcl_objcache_node node; uint64_t key;
 * uint32_t size; uint64_t payload[]; }, with a 4096-byte payload is one
 * malloc of 88 + 4096 = 4184 bytes: header 88; malloc_usable_size() 4184
 * (slack 0) and an address stride of 4192 (+8); tables of 31.5 bytes per
 * object at 100,000 objects in 16 shards (25.2 to 39.3 between 1,024 and
 * 1,000,000 objects).  So meta_charge = 88 + 0 + 8 + 32 = 128, and each
 * object is charged 4224 for its weight of 4096.
 *
 * References.  An object in the index holds one reference for the index; a
 * pin is one more.  rcl_objcache_get() and rcl_objcache_insert() return the
 * object pinned (get-or-insert, use, put is the pattern), and
 * rcl_objcache_put() drops a pin.  Reclaim evicts only objects that no one
 * pins, that are in the index, and that are clean (the library keeps dirty
 * and writeback objects away from reclaim, flusher.h).  The destructor runs
 * when the last reference goes, with no library lock held: for an
 * eviction, in the shard's next insert (or in the reclaim thread's evict
 * callback: see below), in the thread that drops the last
 * pin of a deleted object, in rcl_objcache_del(), or in
 * rcl_objcache_destroy().
 *
 * The end of an evicted object.  Reclaim usually runs in another thread
 * (the background reclaimer), and an allocator such as glibc's pays dearly
 * for memory freed in one thread and allocated again in another (both take
 * the arena lock: rcl-bench objcache, bench/README.md).  So by default the
 * evict callback takes the object out of the index and off the lruvec,
 * uncharges it at once (reclaim sees its progress), and leaves its
 * destructor to the next rcl_objcache_insert() into the same shard, which
 * runs it in the inserting thread after its own insert, with no lock held:
 * the memory goes back where the next miss allocates.  At most
 * RCL_OBJCACHE_REAP_MAX evicted objects wait per shard (beyond that the
 * evict callback runs the destructor itself), so the memory held beyond
 * the domain's charge is bounded by nr_shards x RCL_OBJCACHE_REAP_MAX
 * objects; rcl_objcache_destroy() runs the rest.  Nothing can reach a
 * waiting object: it is in no index and on no list.  With
 * RCL_OBJCACHE_DESTROY_IN_RECLAIM the destructor runs in the evict
 * callback, in the reclaiming thread, and the uncharge follows it.
 *
 * The documented answers:
 *
 * - lost insert race: the key is present (before or after the charge):
 *   -EEXIST, the charge is undone, and the object already cached is handed
 *   back, pinned, in *@existing; the new object is untouched (free it).
 * - failed charge (a strict domain that cannot make room): -ENOMEM, and
 *   nothing changed (not even the miss token).
 * - del of a pinned object: unhashed at once (a get misses, an insert of
 *   the same key succeeds); the destructor runs at the last put.
 * - destroy with pinned objects (in the index, or deleted and still
 *   pinned): -EBUSY, nothing changed.
 * - put without a pin: -EINVAL, nothing changed, as long as the object is
 *   in the index (its reference word then says that only the index holds
 *   it).  A put on an object that has already gone is a use after free the
 *   library cannot detect.
 *
 * Shadows.  When reclaim evicts an object, the shard keeps its shadow
 * (workingset.h) in a direct-mapped table keyed by the hash (16-byte
 * entries, as many as the shard has buckets, grown with it; a collision
 * replaces the older shadow).  A get that misses takes the shadow of its
 * key, if any, into the miss token (&struct rcl_objcache_miss), and the
 * insert after it passes the shadow back (rcl_lruvec_add_refault()), so an
 * object that refaults within the active list's reach is inserted active.
 * The shadows count on a shadow limit (rcl_shadow_limit_new(), in the
 * domain's registry): the domain's reclaim drops those above the quota,
 * oldest slot first by a clock hand.
 *
 * Dirty objects and write-back.  rcl_objcache_mark_dirty() marks a pinned
 * object dirty; the write hook (&rcl_objcache_ops.write) writes one object.
 * Several caches may share one domain: rcl_objcache_flusher_start() starts
 * the domain's flusher thread with rcl_objcache_writeback_ops(), whose write
 * callback finds each node's cache from the node and calls that cache's
 * hook.  Every dirty object of such a domain must then be an objcache's.
 * Reclaim never writes a cache's objects: in a domain with
 * RCL_DOMAIN_RECLAIM_WRITES (the baseline in which reclaim hands dirty
 * objects to the evict callback to write), the cache keeps them (BUSY)
 * until its write hook has written them.
 *
 * Usage:
 *
 * .. code-block:: c
 *
 *	struct obj { struct rcl_objcache_node node; char key[32]; size_t klen; char data[]; };
 *	static void obj_free(struct rcl_objcache_node *n, void *priv) {
 *		free(rcl_container_of(n, struct obj, node));
 *	}
 *	static const struct rcl_objcache_ops ops = { .destructor = obj_free };
 *	struct rcl_objcache_config cfg = { .ops = &ops };
 *	rcl_objcache_new(domain, &cfg, &cache);
 *
 *	struct rcl_objcache_miss miss;
 *	struct rcl_objcache_node *n = rcl_objcache_get(cache, key, klen, &miss);
 *	if (!n) {
 *		struct obj *o = make_obj(key, klen);		// calloc'd: node zeroed
 *		int err = rcl_objcache_insert(cache, &o->node, o->key, klen, size,
 *					      RCL_CTX_CAPABLE, &miss, &n);
 *		if (err)
 *			free(o);	// -EEXIST: n is the winner, pinned; -ENOMEM: n is NULL
 *		else
 *			n = &o->node;
 *	}
 *	if (n) { use(n); rcl_objcache_put(cache, n); }
 *	...
 *	rcl_objcache_destroy(cache);	// -EBUSY while objects are pinned
 *
 * Synchronization.  Every function is thread-safe unless the table says
 * otherwise.  "shard" is the mutex of the shard the key hashes to; a shard
 * lock is never held while the library calls the application, except
 * around the for-each callback, the hash/eq callbacks, and the @allocator's
 * calls that grow a shard's tables (so an allocator must not take a lock
 * that a thread may hold around a call of this cache).
 *
 * =================================  ==========================================
 * function                           locks taken
 * =================================  ==========================================
 * rcl_objcache_new / _destroy        none / every shard in turn; not
 *                                    concurrently with any other call on the
 *                                    cache; destroy waits for reclaim passes
 *                                    (rcl_domain_detach())
 * rcl_objcache_get                   shard (hit: no allocation, no shared
 *                                    counter outside the shard); then
 *                                    rcl_lruvec_mark_accessed(), lock-free
 * rcl_objcache_insert                may reclaim (no lock held); then shard,
 *                                    lruvec batch; allocation only when the
 *                                    table grows
 * rcl_objcache_put                   none (one CAS); destructor on the last
 *                                    pin of a deleted object
 * rcl_objcache_del / _del_node       shard, then rcl_lruvec_del_wait() with
 *                                    no lock held (may wait for a reclaimer
 *                                    or a write)
 * rcl_objcache_mark_dirty            lruvec (rcl_lruvec_set_dirty())
 * rcl_objcache_for_each              each shard in turn, held around @fn
 * rcl_objcache_stats                 each shard in turn
 * the evict callback (reclaim)       shard by trylock: a busy shard, a
 *                                    pinned or unhashed object is BUSY
 * the write callback (flusher)       none
 * =================================  ==========================================
 *
 * Lock order: shard > the lruvec's locks.  The evict callback only
 * trylocks a shard, so reclaim from any thread (a charge in insert, the
 * background reclaimer) never waits for a shard.
 */
#ifndef RECLAIM_OBJCACHE_H
#define RECLAIM_OBJCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reclaim/common.h>
#include <reclaim/domain.h>
#include <reclaim/flusher.h>
#include <reclaim/lruvec.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcl_objcache;

/**
 * struct rcl_objcache_node - the per-object node, embedded in the object
 *
 * 72 bytes on LP64; its layout is frozen per SONAME.  A node filled with
 * zero bytes (calloc, RCL_OBJCACHE_NODE_INIT, rcl_objcache_node_init()) is
 * idle and may be inserted; after the destructor has run it may be
 * initialised and inserted again.  All members are private.
 */
struct rcl_objcache_node {
	/* These are for internal use */
	struct rcl_lru_node __lru;
	struct rcl_objcache_node *__hnext;
	const void *__key;
	uint64_t __hash;
	struct rcl_objcache *__cache;
	uint32_t __keylen;
	uint32_t __weight;
	RCL__ATOMIC(uint32_t) __refs;
	uint32_t __pad;
};

/** Static initialiser for an idle node. */
#define RCL_OBJCACHE_NODE_INIT { RCL_LRU_NODE_INIT, NULL, NULL, 0, NULL, 0, 0, 0, 0 }

/** The default number of shards (a power of two). */
#define RCL_OBJCACHE_SHARDS_DEFAULT 16u
/** The largest number of shards. */
#define RCL_OBJCACHE_MAX_SHARDS 1024u
/** The default initial number of buckets per shard. */
#define RCL_OBJCACHE_BUCKETS_DEFAULT 64u
/** The largest initial number of buckets per shard. */
#define RCL_OBJCACHE_MAX_BUCKETS (1u << 24)
/** The default shadow quota per shard (see &rcl_objcache_config). */
#define RCL_OBJCACHE_SHADOW_QUOTA_DEFAULT 1024u

/** Config flag: keep no shadows (no refault detection, no shadow limit). */
#define RCL_OBJCACHE_NO_SHADOWS (1u << 0)
/**
 * Flag: run an evicted object's destructor in the reclaiming thread, from
 * the evict callback (and uncharge after it), rather than in the shard's
 * next insert (see "The end of an evicted object").
 */
#define RCL_OBJCACHE_DESTROY_IN_RECLAIM (1u << 1)
/** Evicted objects a shard keeps for its next insert to destroy. */
#define RCL_OBJCACHE_REAP_MAX 32u

/**
 * struct rcl_objcache_ops - the application's callbacks, all optional
 * @hash: hash the key bytes (@len of them at @key).  With @eq, or neither
 *	(the built-in byte-string keys).  Called with or without the shard
 *	lock; it must not call into the cache.
 * @eq: true if @node's key equals @key/@len.  Called under the shard lock
 *	for each node of the bucket whose hash matches; must not call into the
 *	cache.  The node's own key is what rcl_objcache_node_key() returns.
 * @destructor: the object has left the cache for good; free it (or reuse
 *	it: the node is idle again).  Runs once per inserted object, with no
 *	library lock held, in the thread that dropped the last reference: a
 *	reclaimer's evict callback (with its rules, lruvec.h: it must not
 *	reclaim, must not wait for a thread that may be inside
 *	rcl_objcache_mark_dirty() or rcl_objcache_del() of this cache), the
 *	last rcl_objcache_put(), rcl_objcache_del() or rcl_objcache_destroy().
 *	It must not call into the same cache.  The cache uncharges the
 *	object's charge (weight + meta_charge) after it returns.  NULL:
 *	nothing is done (the objects
 *	are the application's to free, e.g. a static pool).
 * @write: write one dirty object (it is under writeback: pinned against
 *	eviction and deletion, clean; protect its content from concurrent
 *	writers with the application's own lock).  Returns 0, or a negative
 *	errno (the object becomes dirty again).  Runs on the domain's flusher
 *	thread or in rcl_domain_writeback_all(), with no library lock held,
 *	under the rules of &struct rcl_writeback_ops.  NULL: dirty objects of
 *	this cache are taken as written.
 */
struct rcl_objcache_ops {
	uint64_t (*hash)(const void *key, size_t len, void *priv);
	bool (*eq)(const struct rcl_objcache_node *node, const void *key,
		   size_t len, void *priv);
	void (*destructor)(struct rcl_objcache_node *node, void *priv);
	int (*write)(struct rcl_objcache_node *node, void *priv);
};

/**
 * struct rcl_objcache_config - creation parameters
 * @ops: the callbacks; NULL = built-in keys, no destructor, no write hook
 * @priv: passed to every callback
 * @seed: seed of the built-in hash (also mixed into an application hash)
 * @nr_shards: shards, a power of two up to RCL_OBJCACHE_MAX_SHARDS; 0 =
 *	RCL_OBJCACHE_SHARDS_DEFAULT.  Each has its own lock, table and lruvec.
 * @nr_buckets: initial buckets per shard, rounded up to a power of two, up
 *	to RCL_OBJCACHE_MAX_BUCKETS; 0 = RCL_OBJCACHE_BUCKETS_DEFAULT
 * @partition: the domain partition the shards' lruvecs attach to
 * @lru_type: RCL_LRU_FILE (default, 0) or RCL_LRU_ANON: the LRU type of
 *	the objects (the lruvecs have the default two types)
 * @weight_per_gib: as &rcl_lruvec_config.weight_per_gib (0: bytes)
 * @shadow_quota: shadows per shard kept before the domain's reclaim may drop
 *	the excess; 0 = RCL_OBJCACHE_SHADOW_QUOTA_DEFAULT
 * @flags: RCL_OBJCACHE_NO_SHADOWS, RCL_OBJCACHE_DESTROY_IN_RECLAIM, or 0;
 *	other bits are -EINVAL
 * @allocator: where the cache, its shards and tables come from; NULL =
 *	malloc (the domain's allocator is not reachable through its API)
 * @meta_charge: the per-object overhead, in the domain's unit, added to
 *	every insert's weight: the charge and lru weight of an object are
 *	weight + @meta_charge (see "The per-object overhead" above for what
 *	to count and how to measure it).  0 = none (the weight alone).  At
 *	most UINT32_MAX (-EINVAL above: no object could fit the lru weight).
 *
 * The library reads this structure, so it grows only at its end, and until
 * the first stable release (version 1.0, soname 1) a program built against
 * an older header must be rebuilt when it does (@meta_charge was added in
 * 0.1.0's development).
 */
struct rcl_objcache_config {
	const struct rcl_objcache_ops *ops;
	void *priv;
	uint64_t seed;
	unsigned nr_shards;
	unsigned nr_buckets;
	unsigned partition;
	unsigned lru_type;
	uint64_t weight_per_gib;
	uint64_t shadow_quota;
	unsigned flags;
	const struct rcl_allocator *allocator;
	uint64_t meta_charge;
};

/**
 * struct rcl_objcache_miss - what a missing get tells the insert after it
 * @refault: the key had a shadow: it was evicted before, not long ago
 *
 * Filled by rcl_objcache_get() when it misses, read by rcl_objcache_insert().
 * The shadow moves from the cache's table into the token (a second miss of
 * the same key finds none), so pass the token of the get that missed.  A
 * token that is never passed to an insert is simply dropped (nothing to
 * free).  A failed insert leaves it as it was, for a retry.
 *
 * A token holds no copy of its key: an insert matches it by the key's
 * 64-bit hash alone.  A token filled for key A and passed to the insert of
 * a key B with the same hash is taken as B's: B gets A's shadow (it may be
 * inserted active, as A's refault would be), and the look for B before the
 * charge may be skipped.  The look under the shard lock after the charge
 * still finds a B already cached (-EEXIST, the charge undone, though the
 * charge may have reclaimed), so the index never holds a key twice.  With
 * the built-in hash (seeded, 64 bits) such a pair of keys is a 2^-64
 * accident; with an application hash it happens as often as that hash
 * collides.  Pass each insert the token of the get of the same key.
 */
struct rcl_objcache_miss {
	bool refault;
	/* These are for internal use */
	uint64_t __shadow;
	uint64_t __hash;
	const struct rcl_objcache *__cache;
	uint64_t __seq;
};

/**
 * struct rcl_objcache_stats - a cache's counters, summed over its shards
 * @hits: gets that found the key
 * @misses: gets that did not
 * @refault_misses: of the misses, those that found the key's shadow
 * @inserts: objects inserted
 * @refault_activations: of the inserts, those a refault put on the active
 *	list
 * @lost_races: inserts answered -EEXIST
 * @charge_failures: inserts answered -ENOMEM by the domain
 * @evictions: objects evicted by reclaim
 * @deletes: objects deleted (rcl_objcache_del(), _del_node())
 * @objects: objects in the index now
 * @weight: their charge: the sum of their weights plus @objects x
 *	&rcl_objcache_config.meta_charge, which is the domain charge the cache
 *	holds for them and their lru weight (with a meta_charge of 0, the sum
 *	of their weights); their payload is @weight - @objects x meta_charge
 * @shadows: shadows kept now
 * @shadows_dropped: shadows dropped by the shadow limit's reclaim
 * @reap_pending: evicted objects (uncharged, out of the index) whose
 *	destructor waits for their shard's next insert
 */
struct rcl_objcache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t refault_misses;
	uint64_t inserts;
	uint64_t refault_activations;
	uint64_t lost_races;
	uint64_t charge_failures;
	uint64_t evictions;
	uint64_t deletes;
	uint64_t objects;
	uint64_t weight;
	uint64_t shadows;
	uint64_t shadows_dropped;
	uint64_t reap_pending;
};

/**
 * rcl_objcache_node_init() - make @node an idle node
 * @node: the node; NULL is ignored
 *
 * Equivalent to zero-filling it.  Never on a node that is in a cache.
 *
 * Context: the caller owns @node.
 */
RCL_API void rcl_objcache_node_init(struct rcl_objcache_node *node);

/**
 * rcl_objcache_new() - create a cache in a domain.  Pair with
 * rcl_objcache_destroy().
 * @d: the domain whose budget the objects are charged to
 * @cfg: the configuration
 * @out: receives the cache (written only on success)
 *
 * Allocates the cache, its shards and their tables; initialises one lruvec
 * per shard and attaches it to @d (partition @cfg->partition); unless
 * RCL_OBJCACHE_NO_SHADOWS, creates a shadow limit in @d's registry with a
 * quota of @cfg->shadow_quota per shard.  Several caches may share @d.
 *
 * Context: any thread, but not from a callback of a reclaim pass of any
 * domain, nor an evict, shrinker or write callback: a failure half-way
 * there could not undo what it attached (the shards, the shadow limit).
 * Return: 0; -EINVAL for NULL arguments, @nr_shards not a power of two or
 * above RCL_OBJCACHE_MAX_SHARDS, @nr_buckets above the maximum, an
 * @lru_type other than 0 and 1, an unknown flag, only one of
 * @ops->hash and @ops->eq, an allocator without both callbacks, a
 * @meta_charge above UINT32_MAX, or a partition out of range for @d;
 * -ENOMEM; -ENOSPC if the domain (or the process) has no room for
 * @nr_shards more lruvecs; -EDEADLK (nothing done) from those callbacks;
 * as rcl_lruvec_init(), rcl_domain_attach() and
 * rcl_shadow_limit_new().  Nothing is left behind on failure.
 */
RCL_API int rcl_objcache_new(struct rcl_domain *d,
			     const struct rcl_objcache_config *cfg,
			     struct rcl_objcache **out);

/**
 * rcl_objcache_destroy() - delete every object and free the cache
 * @cache: the cache; NULL is a no-op
 *
 * Fails with -EBUSY, changing nothing, while any object is pinned (in the
 * index, or deleted and not yet put).  Otherwise detaches the lruvecs from
 * the domain (waiting for reclaim passes over them), frees the shadow
 * limit, takes every object out (waiting for a write of the flusher in
 * progress), runs the destructor and uncharges each (dirty objects are
 * dropped unwritten: write them back first with rcl_domain_writeback_all()
 * and rcl_objcache_writeback_ops() if they matter), and frees the cache.
 *
 * Context: any thread, not concurrently with any other call on @cache;
 * may sleep.  Not from a callback of a reclaim pass of any domain, nor an
 * evict, shrinker or write callback, however it is reached (also a
 * shrinker of a registry, or an lruvec, that the application shrinks
 * itself): there it returns -EDEADLK with nothing done, decided before
 * anything changes, whether or not a detach or the free of the shadow
 * limit would have been refused at that moment (the detach waits for passes
 * inside the lruvecs, rcl_shrinker_free() for the limit's shrinker running
 * in another thread, and neither waits from those callbacks).  From the
 * cache's hash, eq, destructor or for-each callbacks it is undefined (the
 * caller's contract).
 * Return: 0; -EBUSY (pinned objects, checked first); -EDEADLK (from a
 * callback); -EINVAL for a pointer that is not a live cache (detected when
 * its memory still holds one).
 */
RCL_API int rcl_objcache_destroy(struct rcl_objcache *cache);

/**
 * rcl_objcache_get() - look a key up; pin and age the object if found
 * @cache: the cache
 * @key: the key bytes
 * @len: their length (0 is a valid, empty key)
 * @miss: if not NULL, filled on a miss (see &struct rcl_objcache_miss);
 *	left alone on a hit
 *
 * A hit pins the object under its shard's lock and marks it accessed
 * (rcl_lruvec_mark_accessed(): the second touch of an inactive object
 * activates it).  No allocation either way.
 *
 * Context: any thread, not from the cache's hash/eq or for-each callbacks.
 * Return: the object's node, pinned (pair with rcl_objcache_put()); NULL on
 * a miss, and for a NULL @cache, a NULL @key with @len > 0, or an object
 * that holds 2^31 - 2 pins already (a pin leak: its reference word counts
 * no more; the object stays cached and unchanged); in those three cases
 * @miss, if given, is cleared.
 */
RCL_API struct rcl_objcache_node *rcl_objcache_get(struct rcl_objcache *cache,
						   const void *key, size_t len,
						   struct rcl_objcache_miss *miss);

/**
 * rcl_objcache_insert() - charge an object and insert it, pinned
 * @cache: the cache
 * @node: the object's idle node
 * @key: the key bytes, which must stay valid and unchanged while the object
 *	is cached (point into the object)
 * @len: their length, up to UINT32_MAX
 * @weight: the object's size (its payload, if the cache has a
 *	meta_charge): weight + meta_charge is charged to the domain and is
 *	its lru weight, and must be 1..UINT32_MAX
 * @context: the capability mask for the charge (RCL_CTX_MAY_BLOCK lets it
 *	reclaim in this thread, and RCL_CTX_CAPABLE is the usual value)
 * @miss: the token of the get that missed, or NULL (no refault check); a
 *	token that the get cleared (zero-filled), and one of this cache filled
 *	for a key of another hash, are taken as no token (one of another key with the same hash is taken as this key's:
 *	&struct rcl_objcache_miss)
 * @existing: if not NULL, receives the cached object on -EEXIST (pinned),
 *	NULL otherwise; if NULL, a lost race pins nothing (the insert drops the
 *	pin it took to age the cached object)
 *
 * Order: a check for the key (present: -EEXIST, nothing charged); the
 * charge of @weight + meta_charge (which may reclaim, with no lock held:
 * the evict callbacks may run here); under the shard lock, the check
 * again (a lost race: -EEXIST, the charge undone), then the lruvec add
 * (rcl_lruvec_add_refault() with the token's shadow, so a close refault is
 * added active) and the index link.
 * The object is returned pinned: put it when done.
 *
 * Context: any thread, not from the cache's callbacks; may reclaim and
 * sleep if @context allows.
 * Return: 0 (@node is in the cache, pinned); -EEXIST (lost race, see
 * @existing); -ENOMEM if the domain refused the charge (nothing changed);
 * -EINVAL for NULL @cache or @node, a NULL @key with @len > 0, @len above
 * UINT32_MAX, a charge of 0 (@weight 0 and meta_charge 0), or a token of
 * another cache; -E2BIG for @weight + meta_charge above UINT32_MAX (it does
 * not fit the lru weight; for any @weight up to UINT64_MAX: the sum is
 * never wrapped); -EBUSY if @node is not idle (in a cache, or not
 * zero-filled); -EOVERFLOW for a lost race whose cached object holds 2^31 -
 * 2 pins already (a pin leak; *@existing stays NULL, nothing is pinned),
 * and as rcl_domain_charge() (if the domain's usage would wrap).  Nothing
 * changes on failure.
 */
RCL_API int rcl_objcache_insert(struct rcl_objcache *cache,
				struct rcl_objcache_node *node, const void *key,
				size_t len, uint64_t weight, uint64_t context,
				const struct rcl_objcache_miss *miss,
				struct rcl_objcache_node **existing);

/**
 * rcl_objcache_put() - drop a pin
 * @cache: the cache
 * @node: a node pinned by get, insert or -EEXIST
 *
 * The last put of a deleted object runs the destructor (in this thread) and
 * uncharges it.
 *
 * Context: any thread, lock-free; not from the cache's hash/eq or for-each
 * callbacks when it may be the last (the destructor would run there).
 * Return: 0; -EINVAL for NULL, a node of another cache, or a node in the
 * index that is not pinned (put without get: nothing changes).
 */
RCL_API int rcl_objcache_put(struct rcl_objcache *cache,
			     struct rcl_objcache_node *node);

/**
 * rcl_objcache_del() - delete a key
 * @cache: the cache
 * @key: the key bytes
 * @len: their length
 *
 * Unhashes the object now (a get misses it, an insert of the key succeeds),
 * takes it off its lruvec (waiting for a reclaimer that holds it isolated,
 * or for the end of its write), and drops the index's reference: if no one
 * pins it, the destructor runs here and the charge is uncharged; otherwise
 * at its last put.  A dirty object is dropped unwritten.  No shadow is
 * kept for a deleted key.
 *
 * Context: any thread, not from the cache's callbacks; may sleep.
 * Return: 0; -ENOENT if the key is not cached; -EINVAL for NULL @cache or a
 * NULL @key with @len > 0; -EDEADLK from an evict or write callback when
 * the object is isolated or under writeback (nothing changes: it stays
 * cached).
 */
RCL_API int rcl_objcache_del(struct rcl_objcache *cache, const void *key,
			     size_t len);

/**
 * rcl_objcache_del_node() - delete a pinned object
 * @cache: the cache
 * @node: the node, pinned by the caller (who still puts it afterwards)
 *
 * rcl_objcache_del() of this very object (not of whatever object has its
 * key now).  Idempotent: a second call returns -ENOENT.
 *
 * Context: as rcl_objcache_del().
 * Return: 0; -ENOENT if @node is no longer in the index; -EINVAL for NULL
 * or a node of another cache (or never inserted); -EDEADLK as
 * rcl_objcache_del().
 */
RCL_API int rcl_objcache_del_node(struct rcl_objcache *cache,
				  struct rcl_objcache_node *node);

/**
 * rcl_objcache_mark_dirty() - the application modified a pinned object
 * @cache: the cache
 * @node: the node, pinned by the caller
 *
 * rcl_lruvec_set_dirty() on the object: reclaim no longer evicts it until
 * the write hook has written it (flusher thread: rcl_objcache_flusher_start(),
 * or rcl_domain_writeback_all() with rcl_objcache_writeback_ops()).
 * Idempotent.  It may wait for a reclaimer that is judging the object (one
 * batch).  The caller may follow it with rcl_domain_balance_dirty().
 *
 * Context: any thread, not from the cache's callbacks; may sleep briefly.
 * Return: 0; -EINVAL for NULL, a node of another cache, or a node that is
 * not pinned; -ENOENT if it was deleted; as rcl_lruvec_set_dirty().
 */
RCL_API int rcl_objcache_mark_dirty(struct rcl_objcache *cache,
				    struct rcl_objcache_node *node);

/**
 * rcl_objcache_node_key() - the key an object was inserted with
 * @node: the node (pinned, or in a callback)
 * @len: if not NULL, receives the key's length
 *
 * Context: lock-free.
 * Return: the key pointer given to rcl_objcache_insert(); NULL for NULL (and
 * *@len = 0) or an idle node.
 */
RCL_API const void *rcl_objcache_node_key(const struct rcl_objcache_node *node,
					  size_t *len);

/**
 * rcl_objcache_for_each() - call @fn for every object in the index
 * @cache: the cache
 * @fn: called with each node and @arg; a non-zero return stops the walk
 *	and is returned
 * @arg: passed to @fn
 *
 * Shard by shard, under the shard's lock: the objects of the shard being
 * walked can be neither evicted nor deleted meanwhile, but other shards
 * change.  @fn must not call any function of the same cache (it would
 * wait for the shard lock it holds) and must not sleep for long (reclaim
 * skips the shard meanwhile).  To keep an object beyond @fn, there is no
 * pin here: remember its key and get it afterwards.
 *
 * Context: any thread, not from the cache's callbacks.
 * Return: 0 after the whole walk; @fn's first non-zero answer; -EINVAL for
 * NULL @cache or @fn.
 */
RCL_API int rcl_objcache_for_each(struct rcl_objcache *cache,
				  int (*fn)(struct rcl_objcache_node *node,
					    void *arg),
				  void *arg);

/**
 * rcl_objcache_stats() - a snapshot of the cache's counters
 * @cache: the cache
 * @out: receives them
 *
 * Each shard's counters are read under its lock, so each shard is
 * consistent in itself; the sum may mix moments.
 *
 * Context: any thread, not from the cache's callbacks.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_objcache_stats(struct rcl_objcache *cache,
			       struct rcl_objcache_stats *out);

/**
 * rcl_objcache_nr_shards() - the number of shards
 * @cache: the cache
 *
 * Context: lock-free.
 * Return: the number; 0 for NULL.
 */
RCL_API unsigned rcl_objcache_nr_shards(const struct rcl_objcache *cache);

/**
 * rcl_objcache_lruvec() - the lruvec of one shard, for statistics
 * @cache: the cache
 * @shard: 0..rcl_objcache_nr_shards() - 1
 *
 * For the read-only lruvec functions (rcl_lruvec_count(), _stats(),
 * _workingset_stats(), _dirty_stats()) and rcl_lruvec_drain().  Do not add,
 * delete or move nodes on it: the cache owns them.
 *
 * Context: lock-free.
 * Return: the lruvec; NULL for NULL or a shard out of range.
 */
RCL_API struct rcl_lruvec *rcl_objcache_lruvec(struct rcl_objcache *cache,
					       unsigned shard);

/**
 * rcl_objcache_writeback_ops() - write callbacks for domains of objcaches
 *
 * Their write callback maps each node to its cache (through the node) and
 * calls that cache's &rcl_objcache_ops.write; there is no sync callback.
 * For rcl_domain_flusher_start() and rcl_domain_writeback_all() (pass NULL
 * as their @priv), on a domain whose dirty objects all belong to objcaches
 * (any number of them).  A function rather than an exported object, so
 * that the table is never copied into the application.
 *
 * Context: lock-free.
 * Return: a static table.
 */
RCL_API const struct rcl_writeback_ops *rcl_objcache_writeback_ops(void);

/**
 * rcl_objcache_flusher_start() - run the domain's flusher for its objcaches
 * @d: the domain
 * @batch: objects per batch; 0 = 64
 *
 * rcl_domain_flusher_start(@d, rcl_objcache_writeback_ops(), NULL, @batch).
 * Stop it with rcl_domain_flusher_stop().
 *
 * Context: as rcl_domain_flusher_start().
 * Return: as rcl_domain_flusher_start().
 */
RCL_API int rcl_objcache_flusher_start(struct rcl_domain *d, unsigned batch);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_OBJCACHE_H */
