/* SPDX-License-Identifier: MIT */
/*
 * Workingset detection: shadows and refault distance, after the kernel's
 * mm/workingset.c.
 *
 * Each lruvec has a clock, its nonresident age, which advances by one on
 * every eviction and every activation.  An evicted object's shadow records
 * the clock at its eviction; when it refaults, the distance is how far the
 * clock has moved since.  The kernel's argument: that many evictions and
 * activations happened while the object was out, so a cache larger by that
 * many objects would have kept it; if the objects the cache protects (the
 * active lists, and the other types' inactive lists) are at least that many,
 * the object belongs to the working set and is activated at once.
 *
 * Shadow layout (64 bits): bit 63 tag, bit 62 workingset (the object had
 * been active), bits 60-61 type, bits 44-59 lruvec id, bits 0-43 the clock
 * (it wraps after 2^44 evictions; distances are taken modulo 2^44).  The
 * kernel buckets its clock to fit fewer bits; 44 bits need no buckets.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>

#include <reclaim/scan.h>
#include <reclaim/workingset.h>

#define WS_AGE 0
#define WS_REFAULT 1
#define WS_ACTIVATE 2
#define WS_RESTORE 3

#define CLOCK_BITS 44
#define CLOCK_MASK ((1ull << CLOCK_BITS) - 1)
#define ID_SHIFT CLOCK_BITS
#define TYPE_SHIFT (ID_SHIFT + 16)
#define WORKINGSET_BIT (1ull << 62)

uint64_t rcl__workingset_shadow(struct rcl_lruvec *lv, unsigned type,
				bool workingset)
{
	uint64_t age = atomic_load_explicit(&lv->__ws[WS_AGE],
					    memory_order_relaxed);

	return RCL_SHADOW_TAG | (workingset ? WORKINGSET_BIT : 0) |
	       ((uint64_t)type << TYPE_SHIFT) |
	       ((uint64_t)lv->__id << ID_SHIFT) | (age & CLOCK_MASK);
}

void rcl__workingset_age(struct rcl_lruvec *lv, uint64_t n)
{
	atomic_fetch_add_explicit(&lv->__ws[WS_AGE], n, memory_order_relaxed);
}

/* The objects a refaulting object of @type competes with. */
static uint64_t workingset_size(const struct rcl_lruvec *lv, unsigned type)
{
	uint64_t n = 0;
	unsigned t;

	for (t = 0; t < lv->__nr_types; t++) {
		n += rcl_lruvec_count(lv, RCL_LRU_LIST(t, 1), NULL);
		if (t != type)
			n += rcl_lruvec_count(lv, RCL_LRU_LIST(t, 0), NULL);
	}
	return n;
}

RCL_API int rcl_lruvec_add_refault(struct rcl_lruvec *lv,
				   struct rcl_lru_node *node, unsigned type,
				   uint32_t weight, unsigned flags,
				   uint64_t shadow, unsigned *outcome)
{
	unsigned out = 0;
	bool restore = false;
	int err;

	if (outcome)
		*outcome = 0;
	if (!lruvec_live(lv) || !node || type >= lv->__nr_types)
		return -EINVAL;
	if (rcl_shadow_is_valid(shadow)) {
		unsigned sid = (unsigned)((shadow >> ID_SHIFT) & 0xffff);
		unsigned stype = (unsigned)((shadow >> TYPE_SHIFT) & 3);

		out |= RCL_REFAULT_REFAULT;
		restore = (shadow & WORKINGSET_BIT) != 0;
		if (sid == lv->__id && stype == type) {
			uint64_t now = atomic_load_explicit(&lv->__ws[WS_AGE],
							    memory_order_relaxed);
			uint64_t distance = (now - shadow) & CLOCK_MASK;

			if (distance <= workingset_size(lv, type)) {
				out |= RCL_REFAULT_ACTIVATE;
				flags |= RCL_LRU_ADD_ACTIVE;
			}
		}
		if (restore)
			out |= RCL_REFAULT_RESTORE;
	}
	if ((flags & RCL_LRU_ADD_UNEVICTABLE) && (flags & RCL_LRU_ADD_ACTIVE))
		flags &= ~RCL_LRU_ADD_ACTIVE;	/* pinned wins */
	err = rcl_lruvec_add(lv, node, type, weight, flags);
	if (err)
		return err;
	if (out & RCL_REFAULT_REFAULT)
		atomic_fetch_add_explicit(&lv->__ws[WS_REFAULT], 1,
					  memory_order_relaxed);
	if (out & RCL_REFAULT_ACTIVATE) {
		atomic_fetch_add_explicit(&lv->__ws[WS_ACTIVATE], 1,
					  memory_order_relaxed);
		rcl__workingset_age(lv, 1);	/* an activation */
	}
	if (out & RCL_REFAULT_RESTORE) {
		atomic_fetch_add_explicit(&lv->__ws[WS_RESTORE], 1,
					  memory_order_relaxed);
		/* Its working set is being thrashed: pressure elsewhere. */
		rcl_lruvec_note_cost(lv, type, 1);
	}
	if (outcome)
		*outcome = out;
	return 0;
}

RCL_API int rcl_lruvec_workingset_stats(const struct rcl_lruvec *lv,
					struct rcl_workingset_stats *out)
{
	struct rcl_lruvec *w = (struct rcl_lruvec *)lv;

	if (!lruvec_live(lv) || !out)
		return -EINVAL;
	out->nonresident_age = atomic_load(&w->__ws[WS_AGE]);
	out->refault = atomic_load(&w->__ws[WS_REFAULT]);
	out->activate = atomic_load(&w->__ws[WS_ACTIVATE]);
	out->restore = atomic_load(&w->__ws[WS_RESTORE]);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Bounding the shadows: the kernel's shadow-node shrinker                    */
/* ------------------------------------------------------------------------- */

struct rcl_shadow_limit {
	struct rcl_shrinker *shrinker;
	atomic_llong count;
	uint64_t quota;
	const struct rcl_shadow_ops *ops;
	void *priv;
};

static unsigned long shadow_count(struct rcl_shrinker *s,
				  struct rcl_shrink_control *sc)
{
	struct rcl_shadow_limit *l = sc->priv;
	long long n = atomic_load(&l->count);

	(void)s;
	/* Only the excess over the quota is reclaimable. */
	return n > 0 && (uint64_t)n > l->quota ? (unsigned long)((uint64_t)n - l->quota)
					       : 0;
}

static unsigned long shadow_scan(struct rcl_shrinker *s,
				 struct rcl_shrink_control *sc)
{
	struct rcl_shadow_limit *l = sc->priv;

	(void)s;
	return l->ops->drop(l->priv, sc->nr_to_scan);
}

static const struct rcl_shrinker_ops shadow_shrinker_ops = {
	.count_objects = shadow_count,
	.scan_objects = shadow_scan,
};

RCL_API int rcl_shadow_limit_new(struct rcl_shrinker_registry *reg,
				 uint64_t quota, const struct rcl_shadow_ops *ops,
				 void *priv, struct rcl_shadow_limit **out)
{
	struct rcl_shrinker_config cfg = {
		.ops = &shadow_shrinker_ops,
		.name = "shadow",
		.seeks = 0,	/* cheap to drop: half of the excess a call */
	};
	struct rcl_shadow_limit *l;
	int err;

	if (!reg || !ops || !ops->drop || !out)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->quota = quota;
	l->ops = ops;
	l->priv = priv;
	cfg.priv = l;
	err = rcl_shrinker_new(reg, &cfg, &l->shrinker);
	if (!err) {
		err = rcl_shrinker_register(l->shrinker);
		if (err)
			rcl_shrinker_free(l->shrinker);
	}
	if (err) {
		free(l);
		return err;
	}
	*out = l;
	return 0;
}

RCL_API void rcl_shadow_limit_add(struct rcl_shadow_limit *limit, int64_t delta)
{
	if (limit)
		atomic_fetch_add(&limit->count, delta);
}

RCL_API uint64_t rcl_shadow_limit_count(const struct rcl_shadow_limit *limit)
{
	long long n;

	if (!limit)
		return 0;
	n = atomic_load(&((struct rcl_shadow_limit *)limit)->count);
	return n > 0 ? (uint64_t)n : 0;
}

RCL_API int rcl_shadow_limit_free(struct rcl_shadow_limit *limit)
{
	int err;

	if (!limit)
		return 0;
	err = rcl_shrinker_free(limit->shrinker);
	if (err)
		return err;
	free(limit);
	return 0;
}
