/* SPDX-License-Identifier: MIT */
/*
 * policies.c - the policies of rcl-sim (see policies.h).
 *
 * lru, fifo: exact baselines implemented here, with libCacheSim's semantics
 * (a miss inserts the object, first evicting the oldest - least recently
 * used, or first inserted - until it fits: in object mode every object has
 * size 1; in byte mode each is charged its size, and one larger than the
 * capacity is not inserted).  The lru rows of the shared traces' reference
 * table are the correctness oracle of the whole simulator (decoding,
 * capacities, counting).
 *
 * default, kernel: a cache built on the library, as an application would
 * build one: one lruvec with the default types, every object of type
 * RCL_LRU_FILE and of weight 1 (object mode) or its size in bytes (byte
 * mode: the library's weights), an index from key to object;
 * rcl_lruvec_mark_accessed() on a hit; on a miss, rcl_lruvec_add() and, when
 * the cache's weight is over its capacity, reclaim:
 * rcl_lruvec_shrink_active() when rcl_lruvec_inactive_is_low(), then
 * rcl_lruvec_shrink_inactive(), until the cache is within its capacity.  The
 * evict callback takes the object out of the index and answers FREED.
 */
#include "policies.h"
#include "klist.h"
#include "peers.h"
#include "peers_lfu.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reclaim/reclaim.h>
#include <reclaim/scan.h>


/* ------------------------------------------------------------------------- */
/* lru and fifo: a doubly linked list over the keys                           */
/* ------------------------------------------------------------------------- */

struct list_config {
	bool move_on_hit;	/* lru: true; fifo: false */
	bool drop_all;		/* lru:drop-all: a miss that does not fit
				   empties the cache and is not kept */
};

struct list_cache {
	struct sim_cache base;
	const struct list_config *cfg;
	uint64_t capacity;
	uint64_t used;		/* objects, or bytes in byte mode */
	uint64_t evicted;
	uint64_t drops;		/* lru:drop-all: times emptied */
	struct klist lru;	/* most recent (or newest) .. oldest */
	uint8_t *in;		/* 1 if the key is cached */
	uint32_t *size;		/* byte mode: each cached key's charge */
};

static void list_destroy(struct sim_cache *c)
{
	struct list_cache *l = (struct list_cache *)c;

	if (!l)
		return;
	klist_free(&l->lru);
	free(l->in);
	free(l->size);
	free(l);
}

static struct sim_cache *list_create(const struct sim_policy *p,
				     uint64_t capacity, uint32_t nr_keys,
				     const uint64_t *keys, bool bytes,
				     char *err, size_t errlen)
{
	struct list_cache *l = calloc(1, sizeof(*l));
	size_t n = nr_keys ? nr_keys : 1;

	int r = -1;

	if (l) {
		r = klist_init(&l->lru, nr_keys);
		l->in = calloc(n, 1);
		if (bytes)
			l->size = malloc(n * sizeof(*l->size));
	}
	if (!l || r || !l->in || (bytes && !l->size)) {
		list_destroy(l ? &l->base : NULL);
		snprintf(err, errlen, "%s: out of memory", p->name);
		return NULL;
	}
	l->base.policy = p;
	l->cfg = p->config;
	l->capacity = capacity;
	return &l->base;
}

static int list_access(struct sim_cache *c, uint32_t key, uint32_t size)
{
	struct list_cache *l = (struct list_cache *)c;

	if (l->in[key]) {
		if (l->cfg->move_on_hit)
			klist_move_head(&l->lru, key);
		return 1;
	}
	if (size > l->capacity)
		return 0;	/* too large: not inserted */
	if (l->cfg->drop_all && l->used + size > l->capacity) {
		/* Drop everything, as a trim-all handler does (drops). */
		while (l->lru.tail != NIL) {
			uint32_t victim = l->lru.tail;

			klist_del(&l->lru, victim);
			l->in[victim] = 0;
			l->evicted++;
		}
		l->used = 0;
		l->drops++;
		return 0;
	}
	while (l->used + size > l->capacity) {
		uint32_t victim = l->lru.tail;

		klist_del(&l->lru, victim);
		l->in[victim] = 0;
		l->used -= l->size ? l->size[victim] : 1;
		l->evicted++;
	}
	klist_push_head(&l->lru, key);
	l->in[key] = 1;
	if (l->size)
		l->size[key] = size;
	l->used += size;
	return 0;
}

static size_t list_counters(struct sim_cache *c, struct sim_counter *out,
			    size_t max)
{
	struct list_cache *l = (struct list_cache *)c;

	if (max < 1)
		return 0;
	out[0].name = "evicted";
	out[0].value = l->evicted;
	if (!l->cfg->drop_all || max < 2)
		return 1;
	out[1].name = "drops";
	out[1].value = l->drops;
	return 2;
}

static const struct list_config lru_config = { .move_on_hit = true };
static const struct list_config fifo_config = { .move_on_hit = false };
static const struct list_config drop_all_config = { .move_on_hit = true,
						    .drop_all = true };

static const struct sim_policy policy_lru = {
	.name = "lru",
	.help = "exact LRU, implemented in the tool (the oracle baseline)",
	.create = list_create,
	.access = list_access,
	.counters = list_counters,
	.destroy = list_destroy,
	.config = &lru_config,
};

/*
 * lru:drop-all: the exact LRU, emptied by a miss that does not fit, which
 * is then not kept: a cache whose pressure handler drops everything each
 * time it fills (rcl-bench pressure's trim-all under sustained pressure, at
 * its best).  tools/drop-cycle.py compares it with lru.
 */
static const struct sim_policy policy_drop_all = {
	.name = "lru:drop-all",
	.help = "exact LRU emptied each time it is full (a trim-all "
		"pressure handler; tools/drop-cycle.py)",
	.create = list_create,
	.access = list_access,
	.counters = list_counters,
	.destroy = list_destroy,
	.config = &drop_all_config,
};

static const struct sim_policy policy_fifo = {
	.name = "fifo",
	.help = "exact FIFO, implemented in the tool",
	.create = list_create,
	.access = list_access,
	.counters = list_counters,
	.destroy = list_destroy,
	.config = &fifo_config,
};

/* ------------------------------------------------------------------------- */
/* default, kernel: a cache on an rcl_lruvec                                  */
/* ------------------------------------------------------------------------- */

/*
 * Variant parameters of the lruvec-based policies.
 * @active_scan: objects scanned on the active list per reclaim round when
 *	its inactive list is low; 0 = as many as the round must free
 * @inactive_scan: objects scanned on the inactive list per reclaim round;
 *	0 = as many as the round must free (so the cache never drops below
 *	its capacity)
 */
struct lv_config {
	size_t active_scan;
	size_t inactive_scan;
	bool workingset;	/* keep shadows, add refaults with them */
	unsigned lruvec_flags;	/* &rcl_lruvec_config.flags */
	bool scan_controller;	/* reclaim with rcl_scan_lruvec() (lv_scan()) */
	bool age_until_deactivated; /* lv_reclaim(): see there */
};

/* lv_reclaim(): active objects a round scans at most to deactivate one. */
#define AGE_MAX 8

struct lv_obj {
	struct rcl_lru_node lru;
	bool cached;
	uint32_t weight;	/* its weight while cached: 1, or its size */
	uint64_t shadow;	/* the shadow of its last eviction, or 0 */
};

struct lv_cache {
	struct sim_cache base;
	const struct lv_config *cfg;
	struct rcl_lruvec lv;
	bool lv_live;
	bool bytes;		/* byte mode: weights are sizes */
	uint64_t capacity;	/* in weight: objects, or bytes */
	uint64_t count;		/* cached objects */
	uint64_t used;		/* their weight */
	uint32_t nr_keys;
	struct lv_obj *objs;	/* one per key: the index is objs[key] */
};

/* The evict callback: take the object out of the index. */
static enum rcl_evict_status lv_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	struct lv_obj *o = rcl_container_of(n, struct lv_obj, lru);
	struct lv_cache *c = ctl->priv;

	o->cached = false;
	o->shadow = ctl->shadow;	/* the index slot keeps the shadow */
	c->count--;
	c->used -= o->weight;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops lv_ops = { .evict = lv_evict };

static void lv_destroy(struct sim_cache *sc)
{
	struct lv_cache *c = (struct lv_cache *)sc;

	if (!c)
		return;
	if (c->lv_live) {
		uint32_t k;

		for (k = 0; k < c->nr_keys; k++) {
			if (c->objs[k].cached)
				rcl_lruvec_del(&c->lv, &c->objs[k].lru);
		}
		if (rcl_lruvec_destroy(&c->lv))
			fprintf(stderr, "rcl-sim: %s: rcl_lruvec_destroy "
				"failed\n", sc->policy->name);
	}
	free(c->objs);
	free(c);
}

static struct sim_cache *lv_create(const struct sim_policy *p,
				   uint64_t capacity, uint32_t nr_keys,
				   const uint64_t *keys, bool bytes,
				   char *err, size_t errlen)
{
	struct lv_cache *c = calloc(1, sizeof(*c));
	struct rcl_lruvec_config cfg;
	int r;

	if (!c || !(c->objs = calloc(nr_keys ? nr_keys : 1,
				     sizeof(*c->objs)))) {
		free(c);
		snprintf(err, errlen, "%s: out of memory", p->name);
		return NULL;
	}
	c->base.policy = p;
	c->cfg = p->config;
	c->capacity = capacity;
	c->bytes = bytes;
	c->nr_keys = nr_keys;

	memset(&cfg, 0, sizeof(cfg));
	cfg.ops = &lv_ops;
	cfg.priv = c;
	cfg.flags = c->cfg->lruvec_flags;
	/*
	 * Object mode: weight 1 per object, so the weight is in objects: any
	 * weight_per_gib far above the capacities keeps the inactive ratio at
	 * 1 (inactive kept at least as large as active), the kernel's rule
	 * below 1 GiB.  Byte mode: the weight is in bytes, which is what
	 * weight_per_gib 0 means.
	 */
	r = rcl_lruvec_init(&c->lv, &cfg);
	if (r) {
		snprintf(err, errlen, "%s: rcl_lruvec_init: %s", p->name,
			 strerror(-r));
		lv_destroy(&c->base);
		return NULL;
	}
	c->lv_live = true;
	return &c->base;
}

/*
 * Bring the cache back within its capacity the way a memory domain's reclaim
 * does: the library's scan controller (<reclaim/scan.h>) at priority 12,
 * then at each lower priority while the cache is still over its capacity
 * (vmscan's priority loop), each pass asked for the objects over the
 * capacity (object mode) or one object (byte mode).  A pass takes whole
 * chunks, so the cache may end below its capacity, as a domain's does after
 * a reclaim to its low watermark.
 */
static int lv_scan(struct lv_cache *c)
{
	unsigned idle = 0;	/* rounds in a row that freed nothing */

	while (c->used > c->capacity) {
		uint64_t before = c->count;
		int prio;

		for (prio = RCL_DEF_PRIORITY;
		     prio >= 0 && c->used > c->capacity; prio--) {
			struct rcl_scan_control sc;
			int r;

			memset(&sc, 0, sizeof(sc));
			sc.nr_to_reclaim = c->bytes ? 1 : c->used - c->capacity;
			sc.priority = prio;
			sc.swappiness = RCL_SWAPPINESS_DEFAULT;
			r = rcl_scan_lruvec(&c->lv, &sc);
			if (r) {
				snprintf(c->base.err, sizeof(c->base.err),
					 "%s: rcl_scan_lruvec: %s",
					 c->base.policy->name, strerror(-r));
				return -1;
			}
		}
		/*
		 * A round that frees something takes an object out, so the
		 * rounds are bounded by the objects; a pass at priority 0
		 * scans every list whole and clears the referenced bits it
		 * meets, so a few rounds in a row that free nothing mean the
		 * library misbehaves.
		 */
		if (c->count < before)
			idle = 0;
		else if (++idle > 4) {
			snprintf(c->base.err, sizeof(c->base.err),
				 "%s: the scan controller freed nothing in %u "
				 "rounds (%llu cached, capacity %llu)",
				 c->base.policy->name, idle,
				 (unsigned long long)c->count,
				 (unsigned long long)c->capacity);
			return -1;
		}
	}
	return 0;
}

/* Bring the cache back within its capacity. */
static int lv_reclaim(struct lv_cache *c)
{
	/*
	 * Each round frees an object or moves at least one (an inactive
	 * object with a queued activation is activated; an active one is
	 * deactivated or loses its referenced bit), so a bound of a few
	 * rounds per cached object is never reached unless the library
	 * misbehaves.
	 */
	uint64_t limit = 4 * c->count + 64, rounds = 0;

	if (c->cfg->scan_controller)
		return lv_scan(c);
	while (c->used > c->capacity) {
		/*
		 * Object mode: the objects over the capacity (always 1: one
		 * miss adds one object to a cache within its capacity).  Byte
		 * mode: one object per round, so that reclaim stops at the
		 * first object whose departure brings the cache within its
		 * capacity, as libCacheSim's eviction loop does (scanning
		 * the bytes over the capacity would take that many objects).
		 */
		size_t excess = c->bytes ? 1 :
				(size_t)(c->used - c->capacity);
		struct rcl_lru_shrink_control sc;
		int r;

		if (++rounds > limit) {
			snprintf(c->base.err, sizeof(c->base.err),
				 "%s: reclaim made no progress in %llu "
				 "rounds (%llu cached, capacity %llu)",
				 c->base.policy->name,
				 (unsigned long long)limit,
				 (unsigned long long)c->count,
				 (unsigned long long)c->capacity);
			return -1;
		}
		memset(&sc, 0, sizeof(sc));
		sc.type = RCL_LRU_FILE;
		r = 0;
		if (rcl_lruvec_inactive_is_low(&c->lv, RCL_LRU_FILE)) {
			sc.nr_to_scan = c->cfg->active_scan ?
						c->cfg->active_scan : excess;
			r = rcl_lruvec_shrink_active(&c->lv, &sc);
			/*
			 * default: age until as many objects as the round
			 * must free were deactivated (a referenced object's
			 * rotation moves none to the inactive list), scanning
			 * at most AGE_MAX objects in all, while the inactive
			 * list is still low.  Otherwise, while rotations outrun the
			 * round, the inactive list starves and every new
			 * object is evicted at once (orm-busy:
			 * docs/adaptive-target.md).  The kernel policy keeps
			 * the loop it had.
			 */
			if (c->cfg->age_until_deactivated)
				while (!r && sc.nr_deactivated < excess &&
				       sc.nr_scanned < AGE_MAX &&
				       rcl_lruvec_inactive_is_low(&c->lv,
								  RCL_LRU_FILE)) {
					sc.nr_to_scan = 1;
					r = rcl_lruvec_shrink_active(&c->lv,
								     &sc);
				}
		}
		if (!r) {
			sc.nr_to_scan = c->cfg->inactive_scan ?
						c->cfg->inactive_scan : excess;
			r = rcl_lruvec_shrink_inactive(&c->lv, &sc);
		}
		if (r) {
			snprintf(c->base.err, sizeof(c->base.err),
				 "%s: lruvec shrink failed: %s",
				 c->base.policy->name, strerror(-r));
			return -1;
		}
	}
	return 0;
}

static int lv_access(struct sim_cache *sc, uint32_t key, uint32_t size)
{
	struct lv_cache *c = (struct lv_cache *)sc;
	struct lv_obj *o = &c->objs[key];
	int r;

	if (o->cached) {
		r = rcl_lruvec_mark_accessed(&c->lv, &o->lru);
		if (r) {
			snprintf(sc->err, sizeof(sc->err),
				 "%s: rcl_lruvec_mark_accessed: %s",
				 sc->policy->name, strerror(-r));
			return -1;
		}
		return 1;
	}
	if (size > c->capacity)
		return 0;	/* too large: not inserted */
	rcl_lru_node_init(&o->lru);
	if (c->cfg->workingset)
		r = rcl_lruvec_add_refault(&c->lv, &o->lru, RCL_LRU_FILE,
					   size, RCL_LRU_ADD_NOBATCH,
					   o->shadow, NULL);
	else
		r = rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE, size,
				   RCL_LRU_ADD_NOBATCH);
	if (r) {
		snprintf(sc->err, sizeof(sc->err), "%s: rcl_lruvec_add: %s",
			 sc->policy->name, strerror(-r));
		return -1;
	}
	o->cached = true;
	o->weight = size;
	c->count++;
	c->used += size;
	if (c->used > c->capacity && lv_reclaim(c))
		return -1;
	return 0;
}

static size_t lv_counters(struct sim_cache *sc, struct sim_counter *out,
			  size_t max)
{
	struct lv_cache *c = (struct lv_cache *)sc;
	struct rcl_lruvec_type_stats st;
	const struct sim_counter all[] = {
		{ "scanned", 0 },	  { "freed", 0 },
		{ "weight_freed", 0 },	  { "rotated", 0 },
		{ "activated", 0 },	  { "deactivated", 0 },
		{ "refill_scanned", 0 },  { "active_rotated", 0 },
		{ "nr_inactive", 0 },	  { "nr_active", 0 },
		{ "workingset_refault", 0 }, { "workingset_activate", 0 },
		{ "workingset_restore", 0 },
	};
	struct rcl_workingset_stats ws;
	size_t n = sizeof(all) / sizeof(all[0]), i;

	if (max < n)
		return 0;
	/* Apply the activations still queued in this thread's batch. */
	rcl_lruvec_drain(&c->lv);
	memset(&st, 0, sizeof(st));
	rcl_lruvec_stats(&c->lv, RCL_LRU_FILE, &st);
	for (i = 0; i < n; i++)
		out[i] = all[i];
	out[0].value = st.scanned;
	out[1].value = st.freed;
	out[2].value = st.weight_freed;
	out[3].value = st.rotated;
	out[4].value = st.activated;
	out[5].value = st.deactivated;
	out[6].value = st.refill_scanned;
	out[7].value = st.active_rotated;
	out[8].value = rcl_lruvec_count(&c->lv, RCL_LRU_LIST(RCL_LRU_FILE, 0),
					NULL);
	out[9].value = rcl_lruvec_count(&c->lv, RCL_LRU_LIST(RCL_LRU_FILE, 1),
					NULL);
	memset(&ws, 0, sizeof(ws));
	rcl_lruvec_workingset_stats(&c->lv, &ws);
	out[10].value = ws.refault;
	out[11].value = ws.activate;
	out[12].value = ws.restore;
	return n;
}

/*
 * default: the library's shipped configuration, with shadows: the two lists
 * and the adaptive inactive target (docs/adaptive-target.md).  kernel: kernel
 * parity (RCL_LRUVEC_KERNEL: the kernel's inactive ratio, activation by
 * refault distance only).  twolist: the two lists without shadows.
 */
static const struct lv_config default_config = { 0, 0, true, 0, false, true };
static const struct lv_config kernel_config = { 0, 0, true, RCL_LRUVEC_KERNEL,
						false, false };
static const struct lv_config twolist_config = { 0, 0, false,
						 RCL_LRUVEC_KERNEL, false, false };
/*
 * default:scan, kernel:scan: the same lruvecs reclaimed by the library's
 * scan controller, as a memory domain's caches are (lv_scan()).
 */
static const struct lv_config default_scan_config = { 0, 0, true, 0, true,
						      false };
static const struct lv_config kernel_scan_config = { 0, 0, true,
						     RCL_LRUVEC_KERNEL, true,
						     false };

static const struct sim_policy policy_default = {
	.name = "default",
	.help = "the library's shipped configuration: an lruvec with "
		"workingset and the adaptive inactive target",
	.create = lv_create,
	.access = lv_access,
	.counters = lv_counters,
	.destroy = lv_destroy,
	.config = &default_config,
};

static const struct sim_policy policy_kernel = {
	.name = "kernel",
	.help = "kernel parity: an lruvec with the kernel's rules (two lists "
		"and workingset refault activation)",
	.create = lv_create,
	.access = lv_access,
	.counters = lv_counters,
	.destroy = lv_destroy,
	.config = &kernel_config,
};

static const struct sim_policy policy_twolist = {
	.name = "twolist",
	.help = "the lruvec's two lists without workingset (no shadows)",
	.create = lv_create,
	.access = lv_access,
	.counters = lv_counters,
	.destroy = lv_destroy,
	.config = &twolist_config,
};

static const struct sim_policy policy_default_scan = {
	.name = "default:scan",
	.help = "default reclaimed by the library's scan controller, as a "
		"memory domain's caches are",
	.create = lv_create,
	.access = lv_access,
	.counters = lv_counters,
	.destroy = lv_destroy,
	.config = &default_scan_config,
};

static const struct sim_policy policy_kernel_scan = {
	.name = "kernel:scan",
	.help = "kernel reclaimed by the library's scan controller",
	.create = lv_create,
	.access = lv_access,
	.counters = lv_counters,
	.destroy = lv_destroy,
	.config = &kernel_scan_config,
};

/* ------------------------------------------------------------------------- */
/* The table                                                                  */
/* ------------------------------------------------------------------------- */

const struct sim_policy *const sim_policies[] = {
	&policy_lru,
	&policy_fifo,
	&policy_drop_all,
	&policy_default,
	&policy_kernel,
	&policy_twolist,
	&policy_default_scan,
	&policy_kernel_scan,
	/* peers (peers.c) */
	&sim_policy_clock,
	&sim_policy_sieve,
	&sim_policy_arc,
	&sim_policy_2q,
	&sim_policy_slru,
	&sim_policy_slru2,
	/* peers that keep more than recency (peers_lfu.c) */
	&sim_policy_s3fifo,
	&sim_policy_lirs,
	&sim_policy_wtinylfu,
	NULL,
};
