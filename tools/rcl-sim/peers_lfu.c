/* SPDX-License-Identifier: MIT */
/*
 * peers_lfu.c - S3-FIFO (and, to come, LIRS and W-TinyLFU) as rcl-sim
 * policies.
 *
 * These are the peers of the reference table that keep more than recency,
 * written after their papers and, where the implementation behind the
 * table's rows (libCacheSim at aa0fc40) departs from the paper, after that
 * implementation, so that the rows can serve as a check.  Every object has
 * size 1 and capacities are in objects, as in the rest of rcl-sim.  The
 * departures are listed at each policy and in README.md.
 *
 * s3fifo (Yang et al., SOSP '23): a small FIFO S of 10 % of the capacity,
 * a main FIFO M of the rest with a 2-bit reinsertion counter, and a ghost
 * FIFO G of keys, 90 % of the capacity.  A miss whose key is in G goes to
 * M, any other miss to S.  Evicting from S moves an object accessed at
 * least twice to M and sends any other to G; evicting from M reinserts an
 * accessed object with its counter decremented.
 */
#include "peers_lfu.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

/* ------------------------------------------------------------------------- */
/* Key lists                                                                  */
/* ------------------------------------------------------------------------- */

/*
 * A doubly linked list over keys, with its own links, so that a key can be
 * on several lists at once (LIRS keeps a block on S and on Q).  The head is
 * the newest (most recently inserted or used) key, the tail the oldest.
 * Membership is tracked by the caller.
 */
struct klist {
	uint32_t *prev, *next;
	uint32_t head, tail;
	uint64_t count;
};

static int klist_init(struct klist *l, uint32_t nr_keys)
{
	size_t n = nr_keys ? nr_keys : 1;

	l->prev = malloc(n * sizeof(*l->prev));
	l->next = malloc(n * sizeof(*l->next));
	l->head = l->tail = NIL;
	l->count = 0;
	return l->prev && l->next ? 0 : -1;
}

static void klist_free(struct klist *l)
{
	free(l->prev);
	free(l->next);
	l->prev = l->next = NULL;
}

static void klist_push_head(struct klist *l, uint32_t k)
{
	l->prev[k] = NIL;
	l->next[k] = l->head;
	if (l->head != NIL)
		l->prev[l->head] = k;
	else
		l->tail = k;
	l->head = k;
	l->count++;
}

static void klist_del(struct klist *l, uint32_t k)
{
	uint32_t p = l->prev[k], n = l->next[k];

	if (p != NIL)
		l->next[p] = n;
	else
		l->head = n;
	if (n != NIL)
		l->prev[n] = p;
	else
		l->tail = p;
	l->count--;
}

static void *oom(const struct sim_policy *p, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: out of memory", p->name);
	return NULL;
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
	free(c);
}

static struct sim_cache *s3fifo_create(const struct sim_policy *p,
				       uint64_t capacity, uint32_t nr_keys,
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
	if (!c->ghost_cap)
		return;
	while (c->ghost.count + 1 > c->ghost_cap) {
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

static int s3fifo_access(struct sim_cache *sc, uint32_t key)
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
	if (c->small_cap < 1)
		return 0;
	while (c->small.count + c->main.count + 1 > c->capacity) {
		if (c->main.count > c->main_cap || !c->small.count)
			s3fifo_evict_main(c);
		else
			s3fifo_evict_small(c);
	}
	if (ghost_hit) {
		klist_push_head(&c->main, key);
		c->where[key] = S3_MAIN;
		c->ghost_admits++;
	} else if (c->small_cap > 1) {
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
