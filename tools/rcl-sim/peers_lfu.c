/* SPDX-License-Identifier: MIT */
/*
 * peers_lfu.c - S3-FIFO, LIRS and W-TinyLFU as rcl-sim policies.
 *
 * These are the peers of the reference table that keep more than recency,
 * written after their papers and, where the implementation behind the
 * table's rows (libCacheSim at aa0fc40) departs from the paper, after that
 * implementation, so that the rows can serve as a check.  In object mode
 * every object has size 1 and capacities are in objects, as in the table;
 * byte mode is below.  The departures are listed at each policy and in
 * README.md.
 *
 * s3fifo (Yang et al., SOSP '23): a small FIFO S of 10 % of the capacity,
 * a main FIFO M of the rest with a 2-bit reinsertion counter, and a ghost
 * FIFO G of keys, 90 % of the capacity.  A miss whose key is in G goes to
 * M, any other miss to S.  Evicting from S moves an object accessed at
 * least twice to M and sends any other to G; evicting from M reinserts an
 * accessed object with its counter decremented.
 *
 * lirs (Jiang and Zhang, SIGMETRICS '02): the recency stack S holds LIR
 * blocks and recently seen HIR blocks, resident or not; the list Q holds
 * the resident HIR blocks, 1 % of the capacity.  A block re-referenced
 * while still on S (its reuse distance shorter than the recency of the
 * oldest LIR block, at S's bottom) becomes LIR, and that oldest one moves
 * to Q.
 *
 * wtinylfu (Einziger et al., ACM ToS '17): every miss enters a 1 % LRU
 * window; the window's LRU victim enters the main cache, a segmented LRU
 * (probation 20 %, protected 80 %), only if a frequency sketch counts it
 * more often than the main cache's own victim.
 *
 * Byte mode: each list counts the bytes of its keys beside their number,
 * and every share and comparison that object mode makes in objects is made
 * in bytes, as libCacheSim does without --ignore-obj-size (in object mode
 * the two are the same).  A key's size is set when it enters the policy
 * from nowhere and kept while it is on any list (ghosts and LIRS's
 * non-resident blocks included).
 */
#include "klist.h"
#include "peers_lfu.h"
#include "xxh64.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void *oom(const struct sim_policy *p, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: out of memory", p->name);
	return NULL;
}

/* Byte mode: a size per key, shared by @nr lists; NULL in object mode. */
static int sizes_init(uint32_t **size, bool bytes, uint32_t nr_keys,
		      struct klist *lists[], size_t nr)
{
	size_t i;

	*size = NULL;
	if (!bytes)
		return 0;
	*size = malloc((nr_keys ? nr_keys : 1) * sizeof(**size));
	if (!*size)
		return -1;
	for (i = 0; i < nr; i++)
		lists[i]->size = *size;
	return 0;
}

/* The size of @k: 1 in object mode. */
static inline uint64_t key_size(const uint32_t *size, uint32_t k)
{
	return size ? size[k] : 1;
}

static inline void set_size(uint32_t *size, uint32_t k, uint32_t v)
{
	if (size)
		size[k] = v;
}

/* ------------------------------------------------------------------------- */
/* s3fifo                                                                     */
/* ------------------------------------------------------------------------- */

/*
 * Departures from the paper, after libCacheSim's S3FIFO.c:
 * - the small queue has floor(0.10 x capacity) objects and the main queue
 *   the rest; the ghost floor(0.90 x capacity) keys (both truncated);
 * - an object is admitted to S only if it is smaller than S, so with S of
 *   0 or 1 object (capacities below 20) nothing but a ghost hit is ever
 *   cached, and G is fed only by S: every request misses;
 * - evicting from S goes on until one object leaves for G, moving every
 *   object seen twice to M on the way (M may overshoot its share; the next
 *   eviction then takes from M);
 * - an object moved from S to M starts in M with a counter of 0;
 * - M is evicted from when it holds more than its share or S is empty.
 * Byte mode (libCacheSim's): the shares are in bytes; an object larger than
 * S is not cached; a new object enters S only if it is smaller than S; a
 * key leaving S enters G only if its size is at most G's, G dropping its
 * oldest keys until it fits.
 */
struct s3fifo_config {
	double small_ratio;	/* S, as a share of the capacity */
	double ghost_ratio;	/* G, as a share of the capacity */
	unsigned move_threshold; /* accesses in S that earn a move to M */
	unsigned freq_max;	/* the counter's ceiling (2 bits: 3) */
};

enum { S3_NONE, S3_SMALL, S3_MAIN };

struct s3fifo_cache {
	struct sim_cache base;
	const struct s3fifo_config *cfg;
	uint64_t capacity, small_cap, main_cap, ghost_cap;
	struct klist small, main, ghost;
	uint8_t *where;		/* S3_NONE, S3_SMALL or S3_MAIN */
	uint8_t *freq;
	uint8_t *ghosted;	/* 1 if the key is in G */
	uint32_t *size;		/* byte mode: each key's size */
	uint64_t moved, reinserted, ghost_admits, small_evicted, main_evicted;
};

static void s3fifo_destroy(struct sim_cache *sc)
{
	struct s3fifo_cache *c = (struct s3fifo_cache *)sc;

	if (!c)
		return;
	klist_free(&c->small);
	klist_free(&c->main);
	klist_free(&c->ghost);
	free(c->where);
	free(c->freq);
	free(c->ghosted);
	free(c->size);
	free(c);
}

static struct sim_cache *s3fifo_create(const struct sim_policy *p,
				       uint64_t capacity, uint32_t nr_keys,
				       const uint64_t *keys, bool bytes,
				       char *err, size_t errlen)
{
	struct s3fifo_cache *c = calloc(1, sizeof(*c));
	size_t n = nr_keys ? nr_keys : 1;
	int r = 0;

	if (!c)
		return oom(p, err, errlen);
	r |= klist_init(&c->small, nr_keys);
	r |= klist_init(&c->main, nr_keys);
	r |= klist_init(&c->ghost, nr_keys);
	{
		struct klist *l[] = { &c->small, &c->main, &c->ghost };

		r |= sizes_init(&c->size, bytes, nr_keys, l, 3);
	}
	c->where = calloc(n, 1);
	c->freq = calloc(n, 1);
	c->ghosted = calloc(n, 1);
	if (r || !c->where || !c->freq || !c->ghosted) {
		s3fifo_destroy(&c->base);
		return oom(p, err, errlen);
	}
	c->base.policy = p;
	c->cfg = p->config;
	c->capacity = capacity;
	/* libCacheSim truncates both shares (S3FIFO_init). */
	c->small_cap = (uint64_t)((double)capacity * c->cfg->small_ratio);
	c->main_cap = capacity - c->small_cap;
	c->ghost_cap = (uint64_t)((double)capacity * c->cfg->ghost_ratio);
	return &c->base;
}

static void s3fifo_ghost_add(struct s3fifo_cache *c, uint32_t k)
{
	uint64_t sz = key_size(c->size, k);

	if (sz > c->ghost_cap)
		return;
	while (c->ghost.bytes + sz > c->ghost_cap) {
		uint32_t old = c->ghost.tail;

		klist_del(&c->ghost, old);
		c->ghosted[old] = 0;
	}
	klist_push_head(&c->ghost, k);
	c->ghosted[k] = 1;
}

/* Evict from S until one object has left for G (or S is empty). */
static void s3fifo_evict_small(struct s3fifo_cache *c)
{
	while (c->small.count) {
		uint32_t k = c->small.tail;

		klist_del(&c->small, k);
		if (c->freq[k] >= c->cfg->move_threshold) {
			klist_push_head(&c->main, k);
			c->where[k] = S3_MAIN;
			c->freq[k] = 0;
			c->moved++;
			continue;
		}
		c->where[k] = S3_NONE;
		s3fifo_ghost_add(c, k);
		c->small_evicted++;
		return;
	}
}

/* Evict from M: a second chance for every object accessed since. */
static void s3fifo_evict_main(struct s3fifo_cache *c)
{
	while (c->main.count) {
		uint32_t k = c->main.tail;

		klist_del(&c->main, k);
		if (c->freq[k] >= 1) {
			klist_push_head(&c->main, k);
			c->freq[k]--;
			c->reinserted++;
			continue;
		}
		c->where[k] = S3_NONE;
		c->main_evicted++;
		return;
	}
}

static int s3fifo_access(struct sim_cache *sc, uint32_t key, uint32_t size)
{
	struct s3fifo_cache *c = (struct s3fifo_cache *)sc;
	bool ghost_hit = false;

	if (c->where[key] != S3_NONE) {
		if (c->freq[key] < c->cfg->freq_max)
			c->freq[key]++;
		return 1;
	}
	if (c->ghosted[key]) {
		klist_del(&c->ghost, key);
		c->ghosted[key] = 0;
		ghost_hit = true;
	}
	/* Only an object no larger than S can be cached at all. */
	if (size > c->small_cap || size > c->capacity)
		return 0;
	set_size(c->size, key, size);
	while (c->small.bytes + c->main.bytes + size > c->capacity) {
		if (c->main.bytes > c->main_cap || !c->small.count)
			s3fifo_evict_main(c);
		else
			s3fifo_evict_small(c);
	}
	if (ghost_hit) {
		klist_push_head(&c->main, key);
		c->where[key] = S3_MAIN;
		c->ghost_admits++;
	} else if (size < c->small_cap) {
		/* An object as large as S is not admitted to it. */
		klist_push_head(&c->small, key);
		c->where[key] = S3_SMALL;
	}
	c->freq[key] = 0;
	return 0;
}

static size_t s3fifo_counters(struct sim_cache *sc, struct sim_counter *out,
			      size_t max)
{
	struct s3fifo_cache *c = (struct s3fifo_cache *)sc;
	const struct sim_counter all[] = {
		{ "small_capacity", c->small_cap },
		{ "ghost_capacity", c->ghost_cap },
		{ "moved_to_main", c->moved },
		{ "main_reinserted", c->reinserted },
		{ "ghost_admitted", c->ghost_admits },
		{ "small_evicted", c->small_evicted },
		{ "main_evicted", c->main_evicted },
		{ "nr_small", c->small.count },
		{ "nr_main", c->main.count },
	};
	size_t n = sizeof(all) / sizeof(all[0]);

	if (max < n)
		return 0;
	memcpy(out, all, sizeof(all));
	return n;
}

static const struct s3fifo_config s3fifo_config = {
	.small_ratio = 0.10,
	.ghost_ratio = 0.90,
	.move_threshold = 2,
	.freq_max = 3,
};

const struct sim_policy sim_policy_s3fifo = {
	.name = "s3fifo",
	.help = "S3-FIFO: small FIFO 10 %, main FIFO with a 2-bit clock, "
		"ghost 90 % (libCacheSim's)",
	.create = s3fifo_create,
	.access = s3fifo_access,
	.counters = s3fifo_counters,
	.destroy = s3fifo_destroy,
	.config = &s3fifo_config,
};

/* ------------------------------------------------------------------------- */
/* lirs                                                                       */
/* ------------------------------------------------------------------------- */

/*
 * After libCacheSim's LIRS.c, which keeps the paper's structure (stack S,
 * list Q of resident HIR blocks, stack pruning) with these departures:
 * - Q has max(1, floor(0.01 x capacity)) objects (the authors' program:
 *   at least 2), the LIR set the rest;
 * - S is bounded: after each request, while S holds more than twice the
 *   capacity, the non-resident HIR block that became non-resident first
 *   leaves S (the paper's S is unbounded; the authors' program bounds it
 *   far above any trace);
 * - a hit on a resident HIR block that is not in S (only in Q) first
 *   demotes LIR blocks from the bottom of S to Q while the LIR set is full,
 *   as for a block that becomes LIR, and then puts the block on S as HIR
 *   (the paper leaves the LIR set alone).  When Q holds a single object,
 *   that demotion pushes the accessed block itself out of Q: it stays on S
 *   as a resident HIR block counted in neither set (it is still a hit, and
 *   becomes LIR on its next hit);
 * - the counts of LIR and HIR blocks are what the decisions read, so the
 *   block that leaves (a demoted LIR block, a Q victim) is chosen by them
 *   and by position, as in that code.
 * Each block's S entry and Q entry carry their own flags, as in that code's
 * two LRU lists.
 * Byte mode (libCacheSim's): the LIR set, Q, the cache and S's bound (twice
 * the capacity) are in bytes; a new block larger than the LIR set or Q is
 * not cached; a demoted LIR block larger than Q leaves the cache instead of
 * entering Q; a non-resident block of S comes back with the size it had.
 */
struct lirs_config {
	double hir_ratio;	/* Q, as a share of the capacity */
	uint64_t hir_min;	/* Q's least size */
	uint64_t stack_factor;	/* S holds at most this x capacity entries */
};

struct lirs_cache {
	struct sim_cache base;
	const struct lirs_config *cfg;
	uint64_t capacity, lir_limit, hir_limit;
	uint64_t lir_count, hir_count, occupied;
	struct klist s, q, nh;	/* nh: non-resident blocks of S, by age */
	uint8_t *flags;
	uint32_t *size;		/* byte mode: each key's size */
	uint64_t demoted, hir_evicted, pruned, trimmed, orphaned;
	uint64_t bottom_pruned;	/* see lirs_evict_lir() */
};

/* flags[] bits */
#define LIRS_IN_S	0x01
#define LIRS_S_LIR	0x02	/* the S entry is LIR */
#define LIRS_S_RES	0x04	/* the S entry is resident */
#define LIRS_IN_Q	0x08	/* on Q: always resident, never LIR */
#define LIRS_IN_NH	0x10

static void lirs_destroy(struct sim_cache *sc)
{
	struct lirs_cache *c = (struct lirs_cache *)sc;

	if (!c)
		return;
	klist_free(&c->s);
	klist_free(&c->q);
	klist_free(&c->nh);
	free(c->flags);
	free(c->size);
	free(c);
}

static struct sim_cache *lirs_create(const struct sim_policy *p,
				     uint64_t capacity, uint32_t nr_keys,
				     const uint64_t *keys, bool bytes,
				     char *err, size_t errlen)
{
	struct lirs_cache *c = calloc(1, sizeof(*c));
	int r = 0;

	if (!c)
		return oom(p, err, errlen);
	r |= klist_init(&c->s, nr_keys);
	r |= klist_init(&c->q, nr_keys);
	r |= klist_init(&c->nh, nr_keys);
	{
		struct klist *l[] = { &c->s, &c->q, &c->nh };

		r |= sizes_init(&c->size, bytes, nr_keys, l, 3);
	}
	c->flags = calloc(nr_keys ? nr_keys : 1, 1);
	if (r || !c->flags) {
		lirs_destroy(&c->base);
		return oom(p, err, errlen);
	}
	c->base.policy = p;
	c->cfg = p->config;
	c->capacity = capacity;
	c->hir_limit = (uint64_t)(c->cfg->hir_ratio * (double)capacity);
	if (c->hir_limit < c->cfg->hir_min)
		c->hir_limit = c->cfg->hir_min;
	c->lir_limit = capacity > c->hir_limit ? capacity - c->hir_limit : 0;
	return &c->base;
}

static int lirs_fail(struct lirs_cache *c, const char *what)
{
	snprintf(c->base.err, sizeof(c->base.err),
		 "%s: %s (LIR %llu/%llu, HIR %llu/%llu, S %llu)",
		 c->base.policy->name, what,
		 (unsigned long long)c->lir_count,
		 (unsigned long long)c->lir_limit,
		 (unsigned long long)c->hir_count,
		 (unsigned long long)c->hir_limit,
		 (unsigned long long)c->s.count);
	return -1;
}

static void lirs_s_del(struct lirs_cache *c, uint32_t k)
{
	klist_del(&c->s, k);
	c->flags[k] &= ~(LIRS_IN_S | LIRS_S_LIR | LIRS_S_RES);
}

static void lirs_nh_del(struct lirs_cache *c, uint32_t k)
{
	if (c->flags[k] & LIRS_IN_NH) {
		klist_del(&c->nh, k);
		c->flags[k] &= ~LIRS_IN_NH;
	}
}

/* Drop the HIR blocks at the bottom of S, down to its oldest LIR block. */
static void lirs_prune(struct lirs_cache *c)
{
	while (c->s.tail != c->s.head) {
		uint32_t k = c->s.tail;

		if (c->flags[k] & LIRS_S_LIR)
			break;
		if (!(c->flags[k] & LIRS_S_RES))
			lirs_nh_del(c, k);
		lirs_s_del(c, k);
		c->pruned++;
	}
}

/* Evict the resident HIR block at the front of Q. */
static int lirs_evict_hir(struct lirs_cache *c)
{
	uint32_t k = c->q.tail;

	if (k == NIL)
		return lirs_fail(c, "Q is empty where a HIR block must go");
	klist_del(&c->q, k);
	c->flags[k] &= ~LIRS_IN_Q;
	c->hir_count -= key_size(c->size, k);
	c->occupied -= key_size(c->size, k);
	if (c->flags[k] & LIRS_IN_S) {
		if (c->flags[k] & LIRS_IN_NH)
			return lirs_fail(c, "a block already non-resident");
		c->flags[k] &= ~LIRS_S_RES;
		klist_push_head(&c->nh, k);
		c->flags[k] |= LIRS_IN_NH;
	}
	c->hir_evicted++;
	return 0;
}

/* Demote the block at the bottom of S to the end of Q, then prune. */
static int lirs_evict_lir(struct lirs_cache *c)
{
	uint32_t k = c->s.tail;

	/*
	 * S's bottom is a LIR block after every pruning; it is not only when
	 * the whole LIR set was demoted and a new LIR block went on S's top
	 * (a LIR set of 1 or 2 blocks).  libCacheSim would demote that HIR
	 * block as if it were LIR, leaving its counts wrong; prune first.
	 */
	if (k != NIL && !(c->flags[k] & LIRS_S_LIR)) {
		lirs_prune(c);
		k = c->s.tail;
		c->bottom_pruned++;
	}
	if (k == NIL)
		return lirs_fail(c, "S is empty where a LIR block must go");
	if ((c->flags[k] & (LIRS_S_LIR | LIRS_IN_Q)) != LIRS_S_LIR)
		return lirs_fail(c, "the bottom of S is not a LIR block");
	lirs_s_del(c, k);
	c->lir_count -= key_size(c->size, k);
	if (key_size(c->size, k) > c->hir_limit) {
		/* byte mode: larger than Q, it leaves the cache */
		c->occupied -= key_size(c->size, k);
		c->hir_evicted++;
		lirs_prune(c);
		return 0;
	}
	while (c->hir_count + key_size(c->size, k) > c->hir_limit) {
		if (lirs_evict_hir(c))
			return -1;
	}
	klist_push_head(&c->q, k);
	c->flags[k] |= LIRS_IN_Q;
	c->hir_count += key_size(c->size, k);
	c->demoted++;
	lirs_prune(c);
	return 0;
}

/* Make room in the LIR set for a block of @size. */
static int lirs_make_lir_room(struct lirs_cache *c, uint64_t size)
{
	while (c->lir_count + size > c->lir_limit) {
		if (lirs_evict_lir(c))
			return -1;
	}
	return 0;
}

static void lirs_trim_stack(struct lirs_cache *c)
{
	while (c->s.bytes > c->cfg->stack_factor * c->capacity &&
	       c->nh.tail != NIL) {
		uint32_t k = c->nh.tail;

		lirs_nh_del(c, k);
		if (c->flags[k] & LIRS_IN_S)
			lirs_s_del(c, k);
		c->trimmed++;
	}
}

/* The lookup: 1 hit, 0 miss, -1 error. */
static int lirs_lookup(struct lirs_cache *c, uint32_t key)
{
	uint8_t f = c->flags[key];
	uint64_t sz = key_size(c->size, key);

	if (f & LIRS_IN_S)
		klist_move_head(&c->s, key);
	if (f & LIRS_IN_Q)
		klist_move_head(&c->q, key);
	if (f & LIRS_IN_S) {
		if (f & LIRS_S_LIR) {
			lirs_prune(c);
			return 1;
		}
		if (!(f & LIRS_S_RES))
			return 0;
		/* A resident HIR block in S becomes LIR. */
		if (f & LIRS_IN_Q) {
			klist_del(&c->q, key);
			c->flags[key] &= ~LIRS_IN_Q;
			c->hir_count -= sz;
			c->occupied -= sz;
		}
		if (lirs_make_lir_room(c, sz))
			return -1;
		c->flags[key] |= LIRS_S_LIR;
		c->lir_count += sz;
		c->occupied += sz;
		return 1;
	}
	if (f & LIRS_IN_Q) {
		/* A resident HIR block only in Q: back on S, still HIR. */
		if (lirs_make_lir_room(c, sz))
			return -1;
		if (!(c->flags[key] & LIRS_IN_Q))
			c->orphaned++;	/* the demotion pushed it out of Q */
		klist_push_head(&c->s, key);
		c->flags[key] |= LIRS_IN_S | LIRS_S_RES;
		return 1;
	}
	return 0;
}

static int lirs_access(struct sim_cache *sc, uint32_t key, uint32_t size)
{
	struct lirs_cache *c = (struct lirs_cache *)sc;
	uint64_t sz;
	bool in_s;
	int r;

	r = lirs_lookup(c, key);
	if (r)
		goto out;
	/* A miss: a non-resident HIR block of S, or a block new to S and Q. */
	in_s = c->flags[key] & LIRS_IN_S;
	/* A block still on S keeps its size; a new one takes the request's. */
	sz = in_s ? key_size(c->size, key) : size;
	if (sz > c->capacity) {
		goto out;	/* too large: not inserted */
	} else if (in_s) {
		if (lirs_make_lir_room(c, sz))
			return -1;
		lirs_nh_del(c, key);
	} else if (sz > c->lir_limit || sz > c->hir_limit) {
		goto out;	/* libCacheSim caches nothing then */
	} else if (c->lir_count + sz > c->lir_limit &&
		   c->hir_count + sz > c->hir_limit) {
		while (c->hir_count + sz > c->hir_limit) {
			if (lirs_evict_hir(c))
				return -1;
		}
	}
	if (!in_s)
		set_size(c->size, key, size);
	while (c->occupied + sz > c->capacity) {
		uint64_t before = c->occupied + c->hir_count + c->lir_count;

		if (in_s) {
			while (c->hir_count >= c->hir_limit) {
				if (lirs_evict_hir(c))
					return -1;
			}
			if (lirs_evict_lir(c))
				return -1;
		} else if (c->lir_count + sz > c->lir_limit &&
			   c->hir_count + sz > c->hir_limit) {
			if (lirs_evict_hir(c))
				return -1;
		}
		if (!in_s && before == c->occupied + c->hir_count +
					       c->lir_count)
			return lirs_fail(c, "full, and nothing to evict");
	}
	if (in_s) {
		/* A non-resident HIR block of S comes back as LIR. */
		c->flags[key] |= LIRS_S_LIR | LIRS_S_RES;
		c->lir_count += sz;
	} else if (c->lir_count + sz <= c->lir_limit) {
		/* Until the LIR set is full, every new block is LIR. */
		klist_push_head(&c->s, key);
		c->flags[key] |= LIRS_IN_S | LIRS_S_LIR | LIRS_S_RES;
		c->lir_count += sz;
	} else {
		klist_push_head(&c->s, key);
		klist_push_head(&c->q, key);
		c->flags[key] |= LIRS_IN_S | LIRS_S_RES | LIRS_IN_Q;
		c->hir_count += sz;
	}
	c->occupied += sz;
	r = 0;
out:
	lirs_trim_stack(c);
	return r;
}

static size_t lirs_counters(struct sim_cache *sc, struct sim_counter *out,
			    size_t max)
{
	struct lirs_cache *c = (struct lirs_cache *)sc;
	const struct sim_counter all[] = {
		{ "hir_capacity", c->hir_limit },
		{ "demoted", c->demoted },
		{ "hir_evicted", c->hir_evicted },
		{ "pruned", c->pruned },
		{ "stack_trimmed", c->trimmed },
		{ "hir_orphaned", c->orphaned },
		{ "bottom_pruned", c->bottom_pruned },
		{ "nr_lir", c->lir_count },
		{ "nr_hir", c->hir_count },
		{ "nr_stack", c->s.count },
		{ "nr_nonresident", c->nh.count },
	};
	size_t n = sizeof(all) / sizeof(all[0]);

	if (max < n)
		return 0;
	memcpy(out, all, sizeof(all));
	return n;
}

static const struct lirs_config lirs_config = {
	.hir_ratio = 0.01,
	.hir_min = 1,
	.stack_factor = 2,
};

const struct sim_policy sim_policy_lirs = {
	.name = "lirs",
	.help = "LIRS: resident HIR share 1 % (at least 1), stack bounded at "
		"2x the capacity (libCacheSim's)",
	.create = lirs_create,
	.access = lirs_access,
	.counters = lirs_counters,
	.destroy = lirs_destroy,
	.config = &lirs_config,
};

/* ------------------------------------------------------------------------- */
/* wtinylfu                                                                   */
/* ------------------------------------------------------------------------- */

/*
 * After libCacheSim's WTinyLFU.c with main-cache=SLRU (its SLRU.c with
 * segments 1:4) and its counting Bloom filter (minimalIncrementCBF.c).
 * Departures from the paper:
 * - the window has floor(0.01 x capacity) objects, the main cache the rest,
 *   and the segments floor(1/5) and floor(4/5) of the main cache; with an
 *   empty window (capacities below 100) nothing is cached;
 * - the sketch is one array of ceil(b x main) 32-bit counters, b =
 *   -ln(0.001) / ln(2)^2, with ceil(b ln 2) = 10 indexes per key by double
 *   hashing; an add increments all of them (not only the smallest, as a
 *   minimal-increment filter would), the estimate is their minimum; no
 *   doorkeeper (the paper: small counters and a doorkeeper);
 * - the sketch counts a miss (its insertion into the window), a hit in the
 *   main cache (not a hit in the window), and every window victim once
 *   each time it is considered; it is halved after every 32 x main hits in
 *   the main cache (the paper: every access counts, halved after a sample
 *   of W accesses);
 * - the window grows past its share until the cache is full: a miss
 *   evicts only when window and main together are full, and the eviction
 *   first moves window victims into the main cache while it has room;
 * - a window victim replaces the main cache's victim (probation's LRU, or
 *   protected's when probation is empty) only if its estimate is strictly
 *   larger; the main cache inserts into the lowest segment with room
 *   (protected too, while the cache fills); a hit in probation moves the
 *   object to protected, whose overflow goes back to probation's head, and
 *   probation's overflow leaves the cache;
 * - an admission does not end the eviction: the next window victim meets
 *   the next main victim, until one is rejected (it leaves the cache) or
 *   the window is empty (the main victim leaves), so an eviction after k
 *   admissions frees k + 1 objects and the window then refills.  That is
 *   libCacheSim's WTinyLFU_evict() in the version behind the table (its
 *   loop ends only on a rejection; the rows match exactly only so); a
 *   later version also ends it on an admission.
 * The sketch hashes keys as libCacheSim's does: XXH64 of the trace's
 * original key (the obj_id, not rcl-sim's renumbered id) under two seeds,
 * whose low 32 bits are the double hashing's two terms, so it counts the
 * same collisions as the table's runs.
 * Byte mode (libCacheSim's): the window, the main cache and its segments
 * are in bytes; an object larger than the window or than probation is not
 * cached; the halving period is 32 x the main cache's bytes of main-cache
 * hits.  One departure: libCacheSim sizes the sketch for as many entries as
 * the main cache has bytes (14 counters a byte: gigabytes at the shared
 * traces' larger capacities); rcl-sim sizes it for min(main bytes, the
 * trace's unique keys) entries, which the main cache never exceeds, so the
 * sketch keeps the error rate it was sized for.
 */
/* ln 2 and its square, to the digits libCacheSim sizes its sketch with. */
#define SKETCH_LN2	0.693147180559945
#define SKETCH_LN2_SQ	0.480453013918201

struct wtlfu_config {
	double window_ratio;	/* the window, as a share of the capacity */
	unsigned seg_probation;	/* segment weights of the main SLRU */
	unsigned seg_protected;
	double sketch_error;	/* the counting Bloom filter's error rate */
	uint64_t sketch_seed[2]; /* XXH64 seeds of its two base hashes */
	uint64_t reset_factor;	/* halve after this x main hits in main */
};

enum { WT_NONE, WT_WINDOW, WT_PROBATION, WT_PROTECTED };

struct wtlfu_cache {
	struct sim_cache base;
	const struct wtlfu_config *cfg;
	uint64_t capacity, window_cap, main_cap;
	uint64_t seg_max[2];
	struct klist window, seg[2];	/* seg[0] probation, seg[1] protected */
	uint8_t *where;
	uint32_t *size;		/* byte mode: each key's size */
	const uint64_t *keys;	/* each id's original key, which it hashes */
	/* the sketch */
	uint32_t *counters;
	uint32_t nr_counters;
	unsigned nr_hashes;
	uint64_t main_hits, reset_period;
	/* counted */
	uint64_t admitted, rejected, moved, resets, main_evicted;
};

static void wtlfu_destroy(struct sim_cache *sc)
{
	struct wtlfu_cache *c = (struct wtlfu_cache *)sc;

	if (!c)
		return;
	klist_free(&c->window);
	klist_free(&c->seg[0]);
	klist_free(&c->seg[1]);
	free(c->where);
	free(c->size);
	free(c->counters);
	free(c);
}

static struct sim_cache *wtlfu_create(const struct sim_policy *p,
				      uint64_t capacity, uint32_t nr_keys,
				      const uint64_t *keys, bool bytes,
				      char *err, size_t errlen)
{
	struct wtlfu_cache *c = calloc(1, sizeof(*c));
	const struct wtlfu_config *cfg = p->config;
	double bpe, nc;
	unsigned sum = cfg->seg_probation + cfg->seg_protected;
	int r = 0;

	if (!c)
		return oom(p, err, errlen);
	if (!keys) {
		free(c);
		snprintf(err, errlen, "%s: needs the trace's original keys",
			 p->name);
		return NULL;
	}
	r |= klist_init(&c->window, nr_keys);
	r |= klist_init(&c->seg[0], nr_keys);
	r |= klist_init(&c->seg[1], nr_keys);
	c->where = calloc(nr_keys ? nr_keys : 1, 1);
	{
		struct klist *l[] = { &c->window, &c->seg[0], &c->seg[1] };

		r |= sizes_init(&c->size, bytes, nr_keys, l, 3);
	}
	if (r || !c->where) {
		wtlfu_destroy(&c->base);
		return oom(p, err, errlen);
	}
	c->base.policy = p;
	c->cfg = cfg;
	c->keys = keys;
	c->capacity = capacity;
	c->window_cap = (uint64_t)((double)capacity * cfg->window_ratio);
	c->main_cap = capacity - c->window_cap;
	c->seg_max[0] = (uint64_t)((double)cfg->seg_probation / sum *
				   (double)c->main_cap);
	c->seg_max[1] = (uint64_t)((double)cfg->seg_protected / sum *
				   (double)c->main_cap);

	/*
	 * Sized for main_cap entries at the error rate: b counters per entry
	 * and b ln 2 hashes, b = -ln(error) / ln(2)^2.
	 */
	bpe = -log(cfg->sketch_error) / SKETCH_LN2_SQ;
	c->nr_hashes = (unsigned)ceil(SKETCH_LN2 * bpe);
	nc = ceil(bpe * (double)(bytes && c->main_cap > nr_keys ? nr_keys :
							      c->main_cap));
	c->nr_counters = nc > INT_MAX ? INT_MAX : (uint32_t)nc;
	if (c->nr_counters < c->nr_hashes)
		c->nr_counters = 2 * c->nr_hashes;
	c->counters = calloc(c->nr_counters, sizeof(*c->counters));
	if (!c->counters) {
		wtlfu_destroy(&c->base);
		return oom(p, err, errlen);
	}
	c->reset_period = cfg->reset_factor * c->main_cap;
	return &c->base;
}

/*
 * The sketch's estimate for @key; with @add, count it once first.  Its
 * indexes are libCacheSim's: XXH64 of the original key's 8 bytes (a
 * little-endian obj_id in memory) under each of two seeds, each cut to its
 * low 32 bits, give a and b; index i is (a + i b) mod the number of
 * counters, in 32-bit unsigned arithmetic.
 */
static uint32_t wtlfu_sketch(struct wtlfu_cache *c, uint32_t key, bool add)
{
	uint64_t orig = c->keys[key];
	uint32_t a = (uint32_t)sim_xxh64_u64(orig, c->cfg->sketch_seed[0]);
	uint32_t b = (uint32_t)sim_xxh64_u64(orig, c->cfg->sketch_seed[1]);
	uint32_t min = UINT32_MAX;
	unsigned i;

	for (i = 0; i < c->nr_hashes; i++) {
		uint32_t x = (a + i * b) % c->nr_counters;

		if (c->counters[x] < min)
			min = c->counters[x];
	}
	if (add) {
		for (i = 0; i < c->nr_hashes; i++)
			c->counters[(a + i * b) % c->nr_counters]++;
		min++;
	}
	return min;
}

static void wtlfu_halve(struct wtlfu_cache *c)
{
	uint32_t i;

	for (i = 0; i < c->nr_counters; i++)
		c->counters[i] >>= 1;
	c->resets++;
}

/* The main cache's occupancy: objects, or bytes in byte mode. */
static uint64_t wtlfu_main_count(const struct wtlfu_cache *c)
{
	return c->seg[0].bytes + c->seg[1].bytes;
}

/* The main cache's victim: the LRU end of its lowest non-empty segment. */
static uint32_t wtlfu_main_victim(const struct wtlfu_cache *c)
{
	return c->seg[0].count ? c->seg[0].tail : c->seg[1].tail;
}

static void wtlfu_main_evict(struct wtlfu_cache *c)
{
	uint32_t k = wtlfu_main_victim(c);
	int s = c->where[k] - WT_PROBATION;

	klist_del(&c->seg[s], k);
	c->where[k] = WT_NONE;
	c->main_evicted++;
}

/* Move the LRU object of segment @s down one segment (out, from 0). */
static void wtlfu_cool(struct wtlfu_cache *c, int s)
{
	uint32_t k;

	if (s == 0) {
		wtlfu_main_evict(c);
		return;
	}
	k = c->seg[s].tail;
	klist_del(&c->seg[s], k);
	klist_push_head(&c->seg[s - 1], k);
	c->where[k] = WT_PROBATION + s - 1;
	while (c->seg[s - 1].bytes > c->seg_max[s - 1])
		wtlfu_cool(c, s - 1);
}

static void wtlfu_main_insert(struct wtlfu_cache *c, uint32_t k)
{
	uint64_t sz = key_size(c->size, k);
	int s;

	for (s = 0; s < 2; s++) {
		if (c->seg[s].bytes + sz <= c->seg_max[s])
			break;
	}
	if (s == 2) {
		while (wtlfu_main_count(c) + sz > c->main_cap)
			wtlfu_main_evict(c);
		s = 0;
	}
	klist_push_head(&c->seg[s], k);
	c->where[k] = WT_PROBATION + s;
}

static void wtlfu_main_hit(struct wtlfu_cache *c, uint32_t k)
{
	if (c->where[k] == WT_PROTECTED) {
		klist_move_head(&c->seg[1], k);
	} else {
		klist_del(&c->seg[0], k);
		klist_push_head(&c->seg[1], k);
		c->where[k] = WT_PROTECTED;
		while (c->seg[1].bytes > c->seg_max[1])
			wtlfu_cool(c, 1);
	}
	wtlfu_sketch(c, k, true);
	if (++c->main_hits >= c->reset_period) {
		c->main_hits = 0;
		wtlfu_halve(c);
	}
}

/*
 * Make room for one object: window victims meet the main cache's victim
 * until one is rejected or the window is empty (an admission goes on).
 */
static void wtlfu_evict(struct wtlfu_cache *c)
{
	for (;;) {
		uint32_t v;

		if (!c->window.count) {
			wtlfu_main_evict(c);
			return;
		}
		v = c->window.tail;
		klist_del(&c->window, v);
		c->where[v] = WT_NONE;
		if (wtlfu_main_count(c) + key_size(c->size, v) <= c->main_cap) {
			wtlfu_main_insert(c, v);
			wtlfu_sketch(c, v, true);
			c->moved++;
			continue;
		}
		if (wtlfu_sketch(c, v, false) >
		    wtlfu_sketch(c, wtlfu_main_victim(c), false)) {
			wtlfu_main_evict(c);
			wtlfu_main_insert(c, v);
			c->admitted++;
			wtlfu_sketch(c, v, true);
			continue;
		}
		c->rejected++;
		wtlfu_sketch(c, v, true);
		return;
	}
}

static int wtlfu_access(struct sim_cache *sc, uint32_t key, uint32_t size)
{
	struct wtlfu_cache *c = (struct wtlfu_cache *)sc;

	switch (c->where[key]) {
	case WT_WINDOW:
		klist_move_head(&c->window, key);
		return 1;
	case WT_PROBATION:
	case WT_PROTECTED:
		wtlfu_main_hit(c, key);
		return 1;
	}
	/* An object larger than the window or probation is not cached. */
	if (size > c->window_cap || size > c->seg_max[0] ||
	    size > c->main_cap || size > c->capacity)
		return 0;
	set_size(c->size, key, size);
	while (c->window.bytes + wtlfu_main_count(c) + size > c->capacity)
		wtlfu_evict(c);
	klist_push_head(&c->window, key);
	c->where[key] = WT_WINDOW;
	wtlfu_sketch(c, key, true);
	return 0;
}

static size_t wtlfu_counters(struct sim_cache *sc, struct sim_counter *out,
			     size_t max)
{
	struct wtlfu_cache *c = (struct wtlfu_cache *)sc;
	const struct sim_counter all[] = {
		{ "window_capacity", c->window_cap },
		{ "sketch_counters", c->nr_counters },
		{ "sketch_hashes", c->nr_hashes },
		{ "moved_to_main", c->moved },
		{ "admitted", c->admitted },
		{ "rejected", c->rejected },
		{ "main_evicted", c->main_evicted },
		{ "sketch_halved", c->resets },
		{ "nr_window", c->window.count },
		{ "nr_probation", c->seg[0].count },
		{ "nr_protected", c->seg[1].count },
	};
	size_t n = sizeof(all) / sizeof(all[0]);

	if (max < n)
		return 0;
	memcpy(out, all, sizeof(all));
	return n;
}

static const struct wtlfu_config wtlfu_config = {
	.window_ratio = 0.01,
	.seg_probation = 1,
	.seg_protected = 4,
	.sketch_error = 0.001,
	/* libCacheSim's HASH_SEED0 and HASH_SEED1 (dataStructure/hash) */
	.sketch_seed = { 0x12345678, 0x12344321 },
	.reset_factor = 32,
};

const struct sim_policy sim_policy_wtinylfu = {
	.name = "wtinylfu",
	.help = "W-TinyLFU: 1 % LRU window, main SLRU 20/80 %, counting "
		"sketch admission (libCacheSim's)",
	.create = wtlfu_create,
	.access = wtlfu_access,
	.counters = wtlfu_counters,
	.destroy = wtlfu_destroy,
	.config = &wtlfu_config,
};
