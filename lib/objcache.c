/* SPDX-License-Identifier: MIT */
/*
 * objcache: the object cache that owns its index, pins and charging.
 *
 * Built only on the public API of the other modules (lruvec.h, domain.h,
 * flusher.h, workingset.h); internal.h gives the allocation seam and
 * RCL_ASSERT.
 *
 * The index is a chained hash table per shard, under one mutex per shard;
 * the shard is chosen by the top bits of the 64-bit hash, the bucket (and
 * the shadow slot) by the low bits.  Chaining rather than open addressing:
 * a node can then be unlinked by pointer from the evict callback, and a
 * table grows by rehashing links without moving any object.  Each shard
 * owns an lruvec, so reclaim, the per-thread add batches and the
 * mark_accessed hot path scale with the shards as the index does.
 *
 * The reference word of a node: bit 31 HASHED (in the index), bits 0-30
 * the references, one of them the index's while HASHED (and the deleter's,
 * after a del cleared HASHED, until it has taken the node off its lruvec).
 * A get adds a pin under the shard lock; a put takes one away with a CAS
 * that refuses to touch the index's reference; the evict callback, under
 * the shard lock, takes HASHED|1 to 0 in one CAS, so no pin can appear
 * after it decided (a pin needs the lock) and none was there before.
 *
 * Statistics live in the shards and change under the shard lock that the
 * operation holds anyway: a hit writes no shared cache line outside its
 * shard.  The one cache-wide counter, of deleted objects still pinned
 * (zombies), changes only on del and on the last put of such an object.
 */
#include <reclaim/objcache.h>

#include <errno.h>
#include <string.h>

#include <reclaim/workingset.h>

#include "internal.h"
#include "refusal.h"

_Static_assert(sizeof(void *) != 8 || sizeof(struct rcl_objcache_node) == 72,
	       "struct rcl_objcache_node is 72 bytes on LP64 (objcache.h)");

#define OC_MAGIC 0x4f424a43u		/* "OBJC" */
#define OC_HASHED (1u << 31)
#define OC_COUNT (OC_HASHED - 1)
#define OC_MAX_TABLE (1u << 30)		/* buckets per shard, growth limit */
#define OC_LOCK_SPINS 64		/* pauses spent on a lock before sleeping */
#define OC_TRY_SPINS 128		/* pauses the evict callback's trylock spends */

/* ------------------------------------------------------------------------- */
/* Types                                                                      */
/* ------------------------------------------------------------------------- */

struct oc_shadow {
	uint64_t hash;
	uint64_t shadow;	/* 0: empty */
};

struct oc_shard_stats {
	uint64_t hits, misses, refault_misses, inserts, refault_activations;
	uint64_t lost_races, charge_failures, evictions, deletes;
	uint64_t objects, weight, shadows_dropped;
};

struct oc_shard {
	pthread_mutex_t lock;
	struct rcl_objcache_node **buckets;	/* mask + 1 heads */
	size_t mask;
	struct oc_shadow *shadows;		/* smask + 1 slots, or NULL */
	size_t smask;
	size_t hand;				/* clock hand of the drop */
	uint64_t nr_shadows;
	_Atomic uint64_t ins_seq;		/* inserts so far (shard lock) */
	struct rcl_objcache_node *reap;		/* evicted, destructor pending */
	unsigned nr_reap;
	struct oc_shard_stats st;
	struct rcl_objcache *cache;
	bool lock_live, lv_live, attached;
	struct rcl_lruvec lv;
} __attribute__((aligned(64)));

struct rcl_objcache {
	uint32_t magic;
	bool user_keys;
	bool destroy_in_reclaim;	/* RCL_OBJCACHE_DESTROY_IN_RECLAIM */
	unsigned type;
	unsigned nr_shards;
	unsigned shard_bits;
	unsigned partition;
	uint32_t meta;				/* meta_charge, <= UINT32_MAX */
	struct rcl_domain *d;
	struct rcl_objcache_ops ops;
	void *priv;
	uint64_t seed;
	struct rcl_allocator alloc;
	struct rcl_shadow_limit *limit;
	void *shards_mem;			/* unaligned block */
	struct oc_shard *shards;
	_Atomic unsigned drop_next;
	_Atomic int64_t zombies;		/* deleted, still pinned */
};

/* ------------------------------------------------------------------------- */
/* Allocation and locking                                                     */
/* ------------------------------------------------------------------------- */

static void *oc_zalloc(struct rcl_objcache *c, size_t size)
{
	void *p = rcl__alloc(&c->alloc, size);

	if (p)
		memset(p, 0, size);
	return p;
}

static void oc_free(struct rcl_objcache *c, void *p)
{
	if (p)
		c->alloc.free(c->alloc.ctx, p);
}

static void oc_lock(struct oc_shard *sh)
{
	rcl__mutex_lock_spin(&sh->lock, OC_LOCK_SPINS);
}

/* A bounded trylock, for callbacks of reclaim (see oc_evict()). */
static bool oc_trylock(struct oc_shard *sh)
{
	return rcl__mutex_trylock_spin(&sh->lock, OC_TRY_SPINS);
}

static void oc_unlock(struct oc_shard *sh)
{
	pthread_mutex_unlock(&sh->lock);
}

/* ------------------------------------------------------------------------- */
/* Hashing                                                                    */
/* ------------------------------------------------------------------------- */

#define OC_P0 0xa0761d6478bd642full
#define OC_P1 0xe7037ed1a0b428dbull
#define OC_P2 0x8ebc6af09c88c6e3ull
#define OC_P3 0x589965cc75374cc3ull

__extension__ typedef unsigned __int128 oc_u128;

/* The 64x64 -> 128 multiply, folded: wyhash's mixing step. */
static inline uint64_t oc_mum(uint64_t a, uint64_t b)
{
	oc_u128 r = (oc_u128)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t oc_rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint64_t oc_rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * A seeded hash of a byte string in the manner of wyhash: 16 bytes per
 * multiply, the tail read as two overlapping words, the length mixed in.
 * Not wyhash itself (the constants and the folding are simplified), and not
 * a keyed PRF: with a secret seed it resists casual flooding, no more.
 */
static uint64_t oc_hash_bytes(const void *key, size_t len, uint64_t seed)
{
	const uint8_t *p = key;
	uint64_t a, b, s = seed ^ OC_P0;
	size_t n = len;

	while (n > 16) {
		s = oc_mum(oc_rd64(p) ^ OC_P1, oc_rd64(p + 8) ^ s);
		p += 16;
		n -= 16;
	}
	if (n >= 8) {
		a = oc_rd64(p);
		b = oc_rd64(p + n - 8);
	} else if (n >= 4) {
		a = oc_rd32(p);
		b = oc_rd32(p + n - 4);
	} else if (n > 0) {
		a = ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) |
		    p[n - 1];
		b = 0;
	} else {
		a = b = 0;
	}
	return oc_mum(OC_P1 ^ (uint64_t)len, oc_mum(a ^ OC_P2, b ^ s ^ OC_P3));
}

/* The finaliser of MurmurHash3, over an application's hash. */
static inline uint64_t oc_fmix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static inline uint64_t oc_hash(const struct rcl_objcache *c, const void *key,
			       size_t len)
{
	if (c->user_keys)
		return oc_fmix(c->ops.hash(key, len, c->priv) ^ c->seed);
	return oc_hash_bytes(key, len, c->seed);
}

static inline struct oc_shard *oc_shard_of(struct rcl_objcache *c, uint64_t h)
{
	return &c->shards[c->shard_bits ? h >> (64 - c->shard_bits) : 0];
}

static inline bool oc_key_eq(const struct rcl_objcache *c,
			     const struct rcl_objcache_node *n, const void *key,
			     size_t len)
{
	const unsigned char *a = n->__key, *b = key;

	if (c->user_keys)
		return c->ops.eq(n, key, len, c->priv);
	if (n->__keylen != len)
		return false;
	/* Short keys (integers, ids) inline: a call through the PLT costs
	 * more than the compare. */
	if (len <= 16) {
		size_t i;

		for (i = 0; i < len; i++)
			if (a[i] != b[i])
				return false;
		return true;
	}
	return memcmp(a, b, len) == 0;
}

/* ------------------------------------------------------------------------- */
/* The index of a shard (shard lock held)                                     */
/* ------------------------------------------------------------------------- */

static struct rcl_objcache_node *oc_find_locked(struct rcl_objcache *c,
						struct oc_shard *sh, uint64_t h,
						const void *key, size_t len)
{
	struct rcl_objcache_node *n;

	for (n = sh->buckets[h & sh->mask]; n; n = n->__hnext)
		if (n->__hash == h && oc_key_eq(c, n, key, len))
			return n;
	return NULL;
}

static void oc_link_locked(struct oc_shard *sh, struct rcl_objcache_node *n)
{
	struct rcl_objcache_node **pp = &sh->buckets[n->__hash & sh->mask];

	n->__hnext = *pp;
	*pp = n;
	sh->st.objects++;
	sh->st.weight += n->__weight;
}

/* Linked at the tail: behind an object of the same key inserted since. */
static void oc_link_tail_locked(struct oc_shard *sh, struct rcl_objcache_node *n)
{
	struct rcl_objcache_node **pp = &sh->buckets[n->__hash & sh->mask];

	while (*pp)
		pp = &(*pp)->__hnext;
	n->__hnext = NULL;
	*pp = n;
	sh->st.objects++;
	sh->st.weight += n->__weight;
}

static void oc_unlink_locked(struct oc_shard *sh, struct rcl_objcache_node *n)
{
	struct rcl_objcache_node **pp = &sh->buckets[n->__hash & sh->mask];

	while (*pp != n) {
		RCL_ASSERT(*pp != NULL);
		pp = &(*pp)->__hnext;
	}
	*pp = n->__hnext;
	n->__hnext = NULL;
	sh->st.objects--;
	sh->st.weight -= n->__weight;
}

/*
 * Double the table once a shard holds as many objects as buckets, and bring
 * the shadow table to as many slots as buckets.  A failed allocation is
 * harmless: chains grow longer (or shadows collide more) until a later
 * insert succeeds in growing it.  The shadows catch up on their own: after a
 * failed shadow allocation the next insert tries again, whether or not the
 * buckets grow then (they may be at OC_MAX_TABLE already).
 */
static void oc_maybe_grow_locked(struct rcl_objcache *c, struct oc_shard *sh)
{
	size_t nb = sh->mask + 1, i;
	struct rcl_objcache_node **nbk;

	if (sh->st.objects >= nb && nb < OC_MAX_TABLE) {
		nbk = oc_zalloc(c, 2 * nb * sizeof(*nbk));
		if (!nbk)
			return;
		for (i = 0; i < nb; i++) {
			struct rcl_objcache_node *n = sh->buckets[i], *next;

			for (; n; n = next) {
				struct rcl_objcache_node **pp =
					&nbk[n->__hash & (2 * nb - 1)];

				next = n->__hnext;
				n->__hnext = *pp;
				*pp = n;
			}
		}
		oc_free(c, sh->buckets);
		sh->buckets = nbk;
		sh->mask = 2 * nb - 1;
	}

	if (sh->shadows && sh->smask < sh->mask) {
		size_t ns = sh->smask + 1, to = sh->mask + 1;
		struct oc_shadow *nsh = oc_zalloc(c, to * sizeof(*nsh));

		if (!nsh)
			return;
		/*
		 * Both sizes are powers of two and @to is a multiple of @ns:
		 * slot i's entry (hash = i mod ns) goes to hash mod @to, and
		 * two slots never meet.
		 */
		for (i = 0; i < ns; i++)
			if (sh->shadows[i].shadow)
				nsh[sh->shadows[i].hash & (to - 1)] =
					sh->shadows[i];
		oc_free(c, sh->shadows);
		sh->shadows = nsh;
		sh->smask = to - 1;
		sh->hand &= sh->smask;
	}
}

/* ------------------------------------------------------------------------- */
/* The end of an object                                                       */
/* ------------------------------------------------------------------------- */

/*
 * The last reference is gone and the node is off its lruvec (or answered
 * FREED): make it idle, run the destructor with no lock held, uncharge.
 */
/* Make @n idle and run the destructor (no lock held). */
static void oc_destroy(struct rcl_objcache *c, struct rcl_objcache_node *n)
{
	n->__cache = NULL;
	n->__hnext = NULL;
	rcl_lru_node_init(&n->__lru);
	atomic_store_explicit(&n->__refs, 0, memory_order_relaxed);
	if (c->ops.destructor) {
		/* Before the uncharge: held off (internal.h). */
		int cs = rcl__cancel_off();

		c->ops.destructor(n, c->priv);
		rcl__cancel_restore(cs);
	}
}

static void oc_finalize(struct rcl_objcache *c, struct rcl_objcache_node *n)
{
	uint32_t w = n->__weight;

	oc_destroy(c, n);
	rcl_domain_uncharge(c->d, w);
}

/* Run the destructors of the evicted objects taken off a shard's list. */
static void oc_reap(struct rcl_objcache *c, struct rcl_objcache_node *n)
{
	while (n) {
		struct rcl_objcache_node *next = n->__hnext;

		oc_destroy(c, n);	/* uncharged when it was evicted */
		n = next;
	}
}

/* Keep the shadow of an evicted key (shard lock held); true if a new slot. */
static bool oc_store_shadow_locked(struct oc_shard *sh, uint64_t h,
				   uint64_t shadow)
{
	struct oc_shadow *s;
	bool added;

	if (!sh->shadows || !rcl_shadow_is_valid(shadow))
		return false;
	s = &sh->shadows[h & sh->smask];
	added = s->shadow == 0;
	s->hash = h;
	s->shadow = shadow;
	if (added)
		sh->nr_shadows++;
	return added;
}

/*
 * Take the shadow of hash @h out of the table (shard lock held): the shadow,
 * or 0 if the slot holds none of @h.  The caller gives back its count in the
 * shadow limit once the lock is dropped.
 */
static uint64_t oc_take_shadow_locked(struct oc_shard *sh, uint64_t h)
{
	struct oc_shadow *s;
	uint64_t shadow;

	if (!sh->shadows)
		return 0;
	s = &sh->shadows[h & sh->smask];
	if (!s->shadow || s->hash != h)
		return 0;
	shadow = s->shadow;
	*s = (struct oc_shadow){ 0, 0 };
	sh->nr_shadows--;
	return shadow;
}

/*
 * Reclaim's question for one object.  The shard lock is only tried: a
 * thread holding it may itself be reclaiming (an application callback that
 * charges the domain), so waiting could deadlock; a busy shard is BUSY, and
 * the object is met again later.
 */
static enum rcl_evict_status oc_evict(struct rcl_lru_node *lru,
				      struct rcl_evict_control *ctl)
{
	struct oc_shard *sh = ctl->priv;
	struct rcl_objcache *c = sh->cache;
	struct rcl_objcache_node *n =
		rcl_container_of(lru, struct rcl_objcache_node, __lru);
	uint32_t want = OC_HASHED | 1, w;
	bool added, reap;

	/*
	 * Only a domain with RCL_DOMAIN_RECLAIM_WRITES (the baseline in which
	 * reclaim writes) hands over dirty objects.  A cache's objects are
	 * written by its write hook, through the flusher, never by reclaim:
	 * keep them, so that nothing dirty is freed unwritten.
	 */
	if (ctl->flags & RCL_EVICT_DIRTY)
		return RCL_EVICT_BUSY;
	if (!oc_trylock(sh))
		return RCL_EVICT_BUSY;
	/* Pinned, or being deleted: keep it (a deleter waits for us). */
	if (!atomic_compare_exchange_strong_explicit(&n->__refs, &want, 0,
						     memory_order_acq_rel,
						     memory_order_relaxed)) {
		oc_unlock(sh);
		return RCL_EVICT_BUSY;
	}
	oc_unlink_locked(sh, n);
	sh->st.evictions++;
	added = oc_store_shadow_locked(sh, n->__hash, ctl->shadow);
	/* Destroyed by the shard's next insert (objcache.h), or here. */
	reap = !c->destroy_in_reclaim && sh->nr_reap < RCL_OBJCACHE_REAP_MAX;
	w = n->__weight;	/* once on the list, an insert may destroy it */
	if (reap) {
		n->__hnext = sh->reap;
		sh->reap = n;
		sh->nr_reap++;
	}
	oc_unlock(sh);
	if (added)
		rcl_shadow_limit_add(c->limit, 1);
	/* Neither the library nor this callback touches the node again. */
	if (reap)
		rcl_domain_uncharge(c->d, w);
	else
		oc_finalize(c, n);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops oc_lru_ops = { .evict = oc_evict };

/* The shadow limit's reclaim: clear slots by a clock hand, shard by shard. */
static unsigned long oc_shadow_drop(void *priv, unsigned long nr)
{
	struct rcl_objcache *c = priv;
	unsigned long dropped = 0;
	unsigned start = atomic_fetch_add(&c->drop_next, 1), i;

	for (i = 0; i < c->nr_shards && dropped < nr; i++) {
		struct oc_shard *sh = &c->shards[(start + i) & (c->nr_shards - 1)];
		size_t scanned;

		if (!oc_trylock(sh))	/* as oc_evict() */
			continue;
		for (scanned = 0; scanned <= sh->smask && dropped < nr &&
				  sh->nr_shadows; scanned++) {
			struct oc_shadow *s = &sh->shadows[sh->hand];

			sh->hand = (sh->hand + 1) & sh->smask;
			if (s->shadow) {
				s->shadow = 0;
				s->hash = 0;
				sh->nr_shadows--;
				sh->st.shadows_dropped++;
				dropped++;
			}
		}
		oc_unlock(sh);
	}
	if (dropped)
		rcl_shadow_limit_add(c->limit, -(int64_t)dropped);
	return dropped;
}

static const struct rcl_shadow_ops oc_shadow_ops = { .drop = oc_shadow_drop };

/* ------------------------------------------------------------------------- */
/* Creation and destruction                                                   */
/* ------------------------------------------------------------------------- */

static void oc_teardown(struct rcl_objcache *c)
{
	unsigned i;

	if (c->limit)
		rcl_shadow_limit_free(c->limit);
	if (c->shards) {
		for (i = 0; i < c->nr_shards; i++) {
			struct oc_shard *sh = &c->shards[i];

			if (sh->attached)
				rcl_domain_detach(c->d, &sh->lv);
			if (sh->lv_live)
				rcl_lruvec_destroy(&sh->lv);
			if (sh->lock_live)
				pthread_mutex_destroy(&sh->lock);
			oc_free(c, sh->buckets);
			oc_free(c, sh->shadows);
		}
	}
	oc_free(c, c->shards_mem);
	c->magic = 0;
	oc_free(c, c);
}

static size_t oc_pow2(size_t v)
{
	size_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

void rcl_objcache_node_init(struct rcl_objcache_node *node)
{
	if (node)
		memset(node, 0, sizeof(*node));
}

int rcl_objcache_new(struct rcl_domain *d, const struct rcl_objcache_config *cfg,
		     struct rcl_objcache **out)
{
	const struct rcl_allocator *a;
	struct rcl_objcache *c;
	unsigned nr_shards, i;
	size_t nb;
	uint64_t quota;
	int err;

	if (!d || !cfg || !out)
		return -EINVAL;
	nr_shards = cfg->nr_shards ? cfg->nr_shards : RCL_OBJCACHE_SHARDS_DEFAULT;
	if (nr_shards > RCL_OBJCACHE_MAX_SHARDS || (nr_shards & (nr_shards - 1)))
		return -EINVAL;
	if (cfg->nr_buckets > RCL_OBJCACHE_MAX_BUCKETS)
		return -EINVAL;
	if (cfg->lru_type > RCL_LRU_ANON || (cfg->flags & ~(RCL_OBJCACHE_NO_SHADOWS | RCL_OBJCACHE_DESTROY_IN_RECLAIM)))
		return -EINVAL;
	if (cfg->ops && !cfg->ops->hash != !cfg->ops->eq)
		return -EINVAL;
	/* Above UINT32_MAX no insert could fit the lru weight. */
	if (cfg->meta_charge > UINT32_MAX)
		return -EINVAL;
	a = cfg->allocator ? cfg->allocator : &rcl__std_allocator;
	if (!a->alloc || !a->free)
		return -EINVAL;
	/*
	 * Not from a callback of a reclaim pass (of any domain), an evict,
	 * shrinker or write callback: a failure half-way could not detach
	 * the shards it attached or free its shadow limit there
	 * (rcl_domain_detach() and rcl_shrinker_free() refuse), and they
	 * would stay registered after their memory is freed.
	 */
	if (rcl__in_holding_callback() || rcl__shrinker_in_callback())
		return RCL__REFUSE(-EDEADLK, "called from a reclaim, evict, shrinker or write callback: a failure could not undo what it attached");
	quota = cfg->shadow_quota ? cfg->shadow_quota
				  : RCL_OBJCACHE_SHADOW_QUOTA_DEFAULT;
	if (quota > UINT64_MAX / nr_shards)
		quota = UINT64_MAX / nr_shards;
	nb = oc_pow2(cfg->nr_buckets ? cfg->nr_buckets
				     : RCL_OBJCACHE_BUCKETS_DEFAULT);

	c = rcl__alloc(a, sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->alloc = *a;
	c->d = d;
	if (cfg->ops)
		c->ops = *cfg->ops;
	c->user_keys = c->ops.hash != NULL;
	c->destroy_in_reclaim = (cfg->flags & RCL_OBJCACHE_DESTROY_IN_RECLAIM) != 0;
	c->priv = cfg->priv;
	c->seed = cfg->seed;
	c->type = cfg->lru_type;
	c->nr_shards = nr_shards;
	c->partition = cfg->partition;
	c->meta = (uint32_t)cfg->meta_charge;
	while ((1u << c->shard_bits) < nr_shards)
		c->shard_bits++;
	atomic_init(&c->drop_next, 0);
	atomic_init(&c->zombies, 0);

	c->shards_mem = oc_zalloc(c, nr_shards * sizeof(struct oc_shard) + 63);
	if (!c->shards_mem) {
		err = -ENOMEM;
		goto fail;
	}
	c->shards = (struct oc_shard *)(((uintptr_t)c->shards_mem + 63) &
					~(uintptr_t)63);
	for (i = 0; i < nr_shards; i++) {
		struct oc_shard *sh = &c->shards[i];
		struct rcl_lruvec_config lc = {
			.ops = &oc_lru_ops,
			.priv = sh,
			.weight_per_gib = cfg->weight_per_gib,
		};

		sh->cache = c;
		err = -pthread_mutex_init(&sh->lock, NULL);
		if (err)
			goto fail;
		sh->lock_live = true;
		sh->buckets = oc_zalloc(c, nb * sizeof(*sh->buckets));
		if (!sh->buckets) {
			err = -ENOMEM;
			goto fail;
		}
		sh->mask = nb - 1;
		if (!(cfg->flags & RCL_OBJCACHE_NO_SHADOWS)) {
			sh->shadows = oc_zalloc(c, nb * sizeof(*sh->shadows));
			if (!sh->shadows) {
				err = -ENOMEM;
				goto fail;
			}
			sh->smask = nb - 1;
		}
		err = rcl_lruvec_init(&sh->lv, &lc);
		if (err)
			goto fail;
		sh->lv_live = true;
		err = rcl_domain_attach(d, &sh->lv, cfg->partition);
		if (err)
			goto fail;
		sh->attached = true;
	}
	if (!(cfg->flags & RCL_OBJCACHE_NO_SHADOWS)) {
		err = rcl_shadow_limit_new(rcl_domain_registry(d),
					   quota * nr_shards, &oc_shadow_ops, c,
					   &c->limit);
		if (err)
			goto fail;
	}
	c->magic = OC_MAGIC;
	*out = c;
	return 0;
fail:
	oc_teardown(c);
	return err;
}

int rcl_objcache_destroy(struct rcl_objcache *c)
{
	unsigned i;
	size_t b;
	int err;

	if (!c)
		return 0;
	if (c->magic != OC_MAGIC)
		return -EINVAL;
	/* Pinned objects, in the index or deleted: -EBUSY, nothing done. */
	if (atomic_load(&c->zombies) != 0)
		return RCL__REFUSE(-EBUSY, "deleted objects are still pinned (rcl_objcache_put() them first)");
	for (i = 0; i < c->nr_shards; i++) {
		struct oc_shard *sh = &c->shards[i];
		bool busy = false;

		oc_lock(sh);
		for (b = 0; b <= sh->mask && !busy; b++) {
			struct rcl_objcache_node *n;

			for (n = sh->buckets[b]; n; n = n->__hnext)
				if (atomic_load(&n->__refs) != (OC_HASHED | 1))
					busy = true;
		}
		oc_unlock(sh);
		if (busy)
			return RCL__REFUSE(-EBUSY, "objects in the index are pinned (rcl_objcache_put() them first)");
	}
	/*
	 * The last refusal is decided here too, before anything changes.
	 * From a callback of a reclaim pass (of any domain), an evict,
	 * shrinker or write callback, rcl_domain_detach() may refuse (a pass
	 * inside the lruvec) and so may rcl_shadow_limit_free() (the limit's
	 * shrinker running in another thread): found out half-way, the shards
	 * already detached could only be attached again, and a slot taken
	 * meanwhile left one detached, its objects charged and out of every
	 * reclaim's reach.  Outside those callbacks neither refuses: both wait.
	 */
	if (rcl__in_holding_callback() || rcl__shrinker_in_callback())
		return RCL__REFUSE(-EDEADLK, "called from a reclaim, evict, shrinker or write callback, where detaching its shards or freeing its shadow limit may be refused half-way");
	/*
	 * No reclaim pass may meet the objects from here on.  Neither step
	 * fails now: the detach waits for the passes inside each lruvec, the
	 * free for the limit's shrinker (-ENOENT: the application detached
	 * the lruvec itself, which objcache.h forbids; detached either way).
	 */
	for (i = 0; i < c->nr_shards; i++) {
		if (!c->shards[i].attached)
			continue;
		err = rcl_domain_detach(c->d, &c->shards[i].lv);
		RCL_ASSERT(err == 0 || err == -ENOENT);
		c->shards[i].attached = false;
	}
	if (c->limit) {
		err = rcl_shadow_limit_free(c->limit);
		RCL_ASSERT(err == 0);
		c->limit = NULL;
	}
	for (i = 0; i < c->nr_shards; i++) {
		struct oc_shard *sh = &c->shards[i];
		struct rcl_objcache_node *reap;

		/* The evicted objects still waiting for their destructor. */
		oc_lock(sh);
		reap = sh->reap;
		sh->reap = NULL;
		sh->nr_reap = 0;
		oc_unlock(sh);
		oc_reap(c, reap);
		/*
		 * The cursor @b stays where the last object was found: the
		 * buckets before it are empty and stay so (destroy is
		 * exclusive and the lruvecs are detached: nothing inserts,
		 * and no table grows).  Rescanning from bucket 0 for each
		 * object made this quadratic.
		 */
		for (b = 0;;) {
			struct rcl_objcache_node *n = NULL;

			oc_lock(sh);
			while (b <= sh->mask && !(n = sh->buckets[b]))
				b++;
			if (n) {
				oc_unlink_locked(sh, n);
				atomic_store(&n->__refs, 0);
			}
			oc_unlock(sh);
			if (!n)
				break;
			/* Waits for a write of the flusher in progress. */
			err = rcl_lruvec_del_wait(&sh->lv, &n->__lru);
			RCL_ASSERT(err == 0 || err == -ENOENT);
			oc_finalize(c, n);
		}
	}
	oc_teardown(c);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Operations                                                                 */
/* ------------------------------------------------------------------------- */

/*
 * Pin an object found in the index (shard lock held).  Every pin is taken
 * under the shard lock and the lock-free puts only lower the count, so the
 * check cannot be overtaken: the count never carries into OC_HASHED.  An
 * object with OC_COUNT references (the index's and 2^31 - 2 pins: a pin
 * leak) takes no more.
 */
static bool oc_pin_locked(struct rcl_objcache_node *n)
{
	uint32_t w = atomic_load_explicit(&n->__refs, memory_order_relaxed);

	if (unlikely((w & OC_COUNT) == OC_COUNT))
		return false;
	atomic_fetch_add_explicit(&n->__refs, 1, memory_order_relaxed);
	return true;
}

struct rcl_objcache_node *rcl_objcache_get(struct rcl_objcache *c,
					   const void *key, size_t len,
					   struct rcl_objcache_miss *miss)
{
	struct rcl_objcache_node *n;
	struct oc_shard *sh;
	bool took = false;
	uint64_t h;

	if (unlikely(!c || (!key && len))) {
		if (miss)
			memset(miss, 0, sizeof(*miss));
		return NULL;
	}
	h = oc_hash(c, key, len);
	sh = oc_shard_of(c, h);
	oc_lock(sh);
	n = oc_find_locked(c, sh, h, key, len);
	if (unlikely(n != NULL && !oc_pin_locked(n))) {
		/* Pinned 2^31 - 2 times already: refused, as bad input. */
		oc_unlock(sh);
		if (miss)
			memset(miss, 0, sizeof(*miss));
		return NULL;
	}
	if (likely(n != NULL)) {
		sh->st.hits++;
		oc_unlock(sh);
		/* Pinned: it cannot go.  -ENOENT: a del took it off already. */
		rcl_lruvec_mark_accessed(&sh->lv, &n->__lru);
		return n;
	}
	sh->st.misses++;
	if (miss) {
		miss->__hash = h;
		miss->__cache = c;
		miss->__seq = atomic_load_explicit(&sh->ins_seq,
						   memory_order_relaxed);
		miss->__shadow = oc_take_shadow_locked(sh, h);
		took = miss->__shadow != 0;
		miss->refault = took;
		if (took)
			sh->st.refault_misses++;
	}
	oc_unlock(sh);
	if (took)
		rcl_shadow_limit_add(c->limit, -1);
	return NULL;
}

/*
 * An insert's look for its key (shard lock held): the object already
 * cached, counted as a lost race, and pinned unless it holds as many pins
 * as its word can count (*@pinned says which); or NULL.
 */
static struct rcl_objcache_node *oc_find_winner_locked(struct rcl_objcache *c,
						       struct oc_shard *sh,
						       uint64_t h, const void *key,
						       size_t len, bool *pinned)
{
	struct rcl_objcache_node *e = oc_find_locked(c, sh, h, key, len);

	if (e) {
		*pinned = oc_pin_locked(e);
		sh->st.lost_races++;
	}
	return e;
}

int rcl_objcache_insert(struct rcl_objcache *c, struct rcl_objcache_node *node,
			const void *key, size_t len, uint64_t weight,
			uint64_t context, const struct rcl_objcache_miss *miss,
			struct rcl_objcache_node **existing)
{
	struct rcl_objcache_node *e, *reap;
	struct oc_shard *sh;
	unsigned outcome = 0;
	uint64_t h, shadow = 0, charge;
	bool pinned = false;
	int err;

	if (existing)
		*existing = NULL;
	if (!c || !node || (!key && len) || len > UINT32_MAX)
		return -EINVAL;
	/*
	 * The charge is the payload plus the cache's per-object overhead, and
	 * it is the lru weight: it must fit 32 bits.  Compared without
	 * computing the sum, so a weight near UINT64_MAX cannot wrap it.
	 */
	if (weight > UINT32_MAX - c->meta)
		return -E2BIG;
	charge = weight + c->meta;
	if (!charge)
		return -EINVAL;
	/* A token that rcl_objcache_get() cleared is no token. */
	if (miss && !miss->__cache)
		miss = NULL;
	if (miss && miss->__cache != c)
		return -EINVAL;
	if (atomic_load_explicit(&node->__refs, memory_order_relaxed) ||
	    node->__cache ||
	    (rcl_lru_node_flags(&node->__lru) &
	     (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED)))
		return RCL__REFUSE(-EBUSY, "the node is not idle (in a cache already, or not zero-filled)");
	h = oc_hash(c, key, len);
	if (miss && miss->__hash == h)
		shadow = miss->__shadow;
	sh = oc_shard_of(c, h);

	/*
	 * Present already: no charge, no reclaim for nothing.  The look is
	 * skipped after a get of this key missed (its token) if nothing was
	 * inserted into the shard since: the key is still absent.  (A
	 * concurrent insert that this load does not see yet is the race the
	 * look after the charge catches, as it always was.)
	 */
	if (!miss || miss->__hash != h ||
	    atomic_load_explicit(&sh->ins_seq, memory_order_acquire) !=
		    miss->__seq) {
		oc_lock(sh);
		e = oc_find_winner_locked(c, sh, h, key, len, &pinned);
		oc_unlock(sh);
		if (e)
			goto lost;
	}

	/* The charge may reclaim in this thread: no lock held. */
	err = rcl_domain_charge(c->d, charge, context, NULL);
	if (err) {
		if (err == -EBUSY || err == -EDEADLK)
			return RCL__REFUSE(err, "the domain refused the charge (rcl_domain_charge())");
		if (err == -ENOMEM) {
			oc_lock(sh);
			/*
			 * A key inserted by another thread since the look
			 * before the charge is still the documented lost race,
			 * not a failed charge.
			 */
			e = oc_find_winner_locked(c, sh, h, key, len, &pinned);
			if (!e)
				sh->st.charge_failures++;
			oc_unlock(sh);
			if (e)
				goto lost;
		}
		return err;
	}

	oc_lock(sh);
	e = oc_find_winner_locked(c, sh, h, key, len, &pinned);
	if (e) {
		oc_unlock(sh);
		rcl_domain_uncharge(c->d, charge);
		goto lost;
	}
	oc_maybe_grow_locked(c, sh);
	node->__key = key;
	node->__keylen = (uint32_t)len;
	node->__hash = h;
	node->__weight = (uint32_t)charge;
	/*
	 * On the lruvec before it is in the index, both under the shard lock:
	 * whoever finds it in the index finds it on the lruvec, and the evict
	 * callback (which needs the lock) sees it hashed.  The add takes only
	 * library locks, never held while a callback runs.
	 */
	err = rcl_lruvec_add_refault(&sh->lv, &node->__lru, c->type,
				     (uint32_t)charge, 0, shadow, &outcome);
	if (err) {
		oc_unlock(sh);
		rcl_domain_uncharge(c->d, charge);
		if (err == -EBUSY || err == -EDEADLK)
			return RCL__REFUSE(err, "the lruvec refused the node (rcl_lruvec_add_refault())");
		return err;
	}
	node->__cache = c;
	atomic_store_explicit(&node->__refs, OC_HASHED | 2, memory_order_relaxed);
	oc_link_locked(sh, node);
	sh->st.inserts++;
	atomic_store_explicit(&sh->ins_seq,
			      atomic_load_explicit(&sh->ins_seq,
						   memory_order_relaxed) + 1,
			      memory_order_release);
	if (outcome & RCL_REFAULT_ACTIVATE)
		sh->st.refault_activations++;
	reap = sh->reap;
	sh->reap = NULL;
	sh->nr_reap = 0;
	oc_unlock(sh);
	oc_reap(c, reap);
	return 0;
lost:
	if (!pinned)
		return existing ? RCL__REFUSE(-EOVERFLOW, "the object already cached holds 2^31 - 2 pins (a pin leak)")
				: -EEXIST;
	rcl_lruvec_mark_accessed(&sh->lv, &e->__lru);
	if (existing)
		*existing = e;
	else
		rcl_objcache_put(c, e);	/* nobody to hand the pin to */
	return -EEXIST;
}

int rcl_objcache_put(struct rcl_objcache *c, struct rcl_objcache_node *node)
{
	uint32_t w, n;

	if (!c || !node || node->__cache != c)
		return -EINVAL;
	w = atomic_load_explicit(&node->__refs, memory_order_relaxed);
	do {
		n = w & OC_COUNT;
		if ((w & OC_HASHED) ? n <= 1 : n == 0)
			return -EINVAL;	/* put without a pin */
	} while (!atomic_compare_exchange_weak_explicit(&node->__refs, &w, w - 1,
							memory_order_acq_rel,
							memory_order_relaxed));
	if (!(w & OC_HASHED) && n == 1) {
		/* The last pin of a deleted object. */
		atomic_fetch_sub(&c->zombies, 1);
		oc_finalize(c, node);
	}
	return 0;
}

/*
 * Delete @n, which is hashed in @sh; called with the shard lock held,
 * returns with it released.  @func: the public function, for a refusal.
 */
static int oc_del_locked(struct rcl_objcache *c, struct oc_shard *sh,
			 struct rcl_objcache_node *n, const char *func)
{
	bool stale;
	uint32_t old;
	int err;

	/*
	 * From an evict or write callback rcl_lruvec_del_wait() refuses a
	 * held node: find that out before unhashing, or an insert of the key
	 * meanwhile would put it in the index twice.
	 */
	if (rcl__tls_evict_frames || rcl__tls_writing) {
		err = rcl_lruvec_del(&sh->lv, &n->__lru);
		if (err == -EBUSY) {
			oc_unlock(sh);
			return rcl__refuse(func, -EDEADLK, "called from an evict or write callback while the object is isolated or under writeback: it would wait for itself");
		}
	}
	/*
	 * No shadow stays for a deleted key (objcache.h): one left from an
	 * eviction before the key was inserted again would make its next
	 * miss a refault.
	 */
	stale = oc_take_shadow_locked(sh, n->__hash) != 0;
	/* The deleter takes over the index's reference. */
	atomic_fetch_and_explicit(&n->__refs, ~OC_HASHED, memory_order_acq_rel);
	oc_unlink_locked(sh, n);
	sh->st.deletes++;
	oc_unlock(sh);
	if (stale)
		rcl_shadow_limit_add(c->limit, -1);

	/*
	 * Off the lruvec, waiting for a reclaimer that holds it (its evict
	 * callback sees it unhashed and keeps it) or for its write.
	 */
	err = rcl_lruvec_del_wait(&sh->lv, &n->__lru);
	if (err && err != -ENOENT) {
		/* From a callback: put it back, as it was. */
		oc_lock(sh);
		oc_link_tail_locked(sh, n);
		atomic_fetch_or_explicit(&n->__refs, OC_HASHED,
					 memory_order_acq_rel);
		sh->st.deletes--;
		oc_unlock(sh);
		if (err == -EDEADLK || err == -EBUSY)
			return rcl__refuse(func, err, "called from an evict or write callback while the object is isolated or under writeback: it would wait for itself");
		return err;
	}
	atomic_fetch_add(&c->zombies, 1);
	old = atomic_fetch_sub_explicit(&n->__refs, 1, memory_order_acq_rel);
	RCL_ASSERT((old & OC_COUNT) >= 1 && !(old & OC_HASHED));
	if ((old & OC_COUNT) == 1) {
		atomic_fetch_sub(&c->zombies, 1);
		oc_finalize(c, n);
	}
	return 0;
}

int rcl_objcache_del(struct rcl_objcache *c, const void *key, size_t len)
{
	struct rcl_objcache_node *n;
	struct oc_shard *sh;
	uint64_t h;

	if (!c || (!key && len))
		return -EINVAL;
	h = oc_hash(c, key, len);
	sh = oc_shard_of(c, h);
	oc_lock(sh);
	n = oc_find_locked(c, sh, h, key, len);
	if (!n) {
		oc_unlock(sh);
		return -ENOENT;
	}
	return oc_del_locked(c, sh, n, "rcl_objcache_del");
}

int rcl_objcache_del_node(struct rcl_objcache *c, struct rcl_objcache_node *node)
{
	struct oc_shard *sh;

	if (!c || !node || node->__cache != c)
		return -EINVAL;
	sh = oc_shard_of(c, node->__hash);
	oc_lock(sh);
	if (!(atomic_load(&node->__refs) & OC_HASHED)) {
		oc_unlock(sh);
		return -ENOENT;
	}
	return oc_del_locked(c, sh, node, "rcl_objcache_del_node");
}

int rcl_objcache_mark_dirty(struct rcl_objcache *c, struct rcl_objcache_node *node)
{
	uint32_t w;
	int err;

	if (!c || !node || node->__cache != c)
		return -EINVAL;
	w = atomic_load(&node->__refs);
	if ((w & OC_HASHED) ? (w & OC_COUNT) < 2 : (w & OC_COUNT) == 0)
		return -EINVAL;		/* not pinned */
	if (!(w & OC_HASHED))
		return -ENOENT;		/* deleted, still pinned */
	err = rcl_lruvec_set_dirty(&oc_shard_of(c, node->__hash)->lv,
				   &node->__lru);
	if (err == -EDEADLK || err == -EBUSY)
		return RCL__REFUSE(err, "from an evict callback, the object is in a reclaimer's hands: it would wait for it (rcl_lruvec_set_dirty())");
	return err;
}

const void *rcl_objcache_node_key(const struct rcl_objcache_node *node,
				  size_t *len)
{
	if (!node || !node->__cache) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = node->__keylen;
	return node->__key;
}

int rcl_objcache_for_each(struct rcl_objcache *c,
			  int (*fn)(struct rcl_objcache_node *node, void *arg),
			  void *arg)
{
	unsigned i;
	size_t b;

	if (!c || !fn)
		return -EINVAL;
	for (i = 0; i < c->nr_shards; i++) {
		struct oc_shard *sh = &c->shards[i];

		oc_lock(sh);
		for (b = 0; b <= sh->mask; b++) {
			struct rcl_objcache_node *n, *next;

			for (n = sh->buckets[b]; n; n = next) {
				int ret;

				next = n->__hnext;
				ret = fn(n, arg);
				if (ret) {
					oc_unlock(sh);
					return ret;
				}
			}
		}
		oc_unlock(sh);
	}
	return 0;
}

int rcl_objcache_stats(struct rcl_objcache *c, struct rcl_objcache_stats *out)
{
	unsigned i;

	if (!c || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	for (i = 0; i < c->nr_shards; i++) {
		struct oc_shard *sh = &c->shards[i];

		oc_lock(sh);
		out->hits += sh->st.hits;
		out->misses += sh->st.misses;
		out->refault_misses += sh->st.refault_misses;
		out->inserts += sh->st.inserts;
		out->refault_activations += sh->st.refault_activations;
		out->lost_races += sh->st.lost_races;
		out->charge_failures += sh->st.charge_failures;
		out->evictions += sh->st.evictions;
		out->deletes += sh->st.deletes;
		out->objects += sh->st.objects;
		out->weight += sh->st.weight;
		out->shadows += sh->nr_shadows;
		out->shadows_dropped += sh->st.shadows_dropped;
		out->reap_pending += sh->nr_reap;
		oc_unlock(sh);
	}
	return 0;
}

unsigned rcl_objcache_nr_shards(const struct rcl_objcache *c)
{
	return c ? c->nr_shards : 0;
}

struct rcl_lruvec *rcl_objcache_lruvec(struct rcl_objcache *c, unsigned shard)
{
	if (!c || shard >= c->nr_shards)
		return NULL;
	return &c->shards[shard].lv;
}

/* ------------------------------------------------------------------------- */
/* Write-back                                                                 */
/* ------------------------------------------------------------------------- */

/* The node is under writeback: pinned against eviction and deletion. */
static int oc_write(void *priv, struct rcl_lru_node *lru)
{
	struct rcl_objcache_node *n =
		rcl_container_of(lru, struct rcl_objcache_node, __lru);
	struct rcl_objcache *c = n->__cache;

	(void)priv;
	if (!c || c->magic != OC_MAGIC)
		return -EINVAL;
	if (!c->ops.write)
		return 0;
	return c->ops.write(n, c->priv);
}

static const struct rcl_writeback_ops oc_wb_ops = { .write = oc_write };

const struct rcl_writeback_ops *rcl_objcache_writeback_ops(void)
{
	return &oc_wb_ops;
}

int rcl_objcache_flusher_start(struct rcl_domain *d, unsigned batch)
{
	return rcl_domain_flusher_start(d, &oc_wb_ops, NULL, batch);
}
