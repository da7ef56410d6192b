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
 * been active), bits 60-61 type, bits 44-59 lruvec id, bit 43 referenced (the
 * object was evicted with its referenced bit: hit once since it came to the
 * inactive list; adaptive lruvecs only), bits 0-42 the clock (it wraps after
 * 2^43 evictions; distances are taken modulo 2^43).  The kernel buckets its
 * clock to fit fewer bits; 43 bits need no buckets.
 *
 * Circle: lib/lruvec.c ages the clock and takes shadows here at activations
 * and evictions (rcl__workingset_age(), _shadow(), _evicted(), _target()),
 * and a refault goes back through the public rcl_lruvec_add() and
 * rcl_lruvec_note_cost() (lib/scan.c).  The kernel's mm/workingset.c is in
 * the same circle with the LRU code: reclaim calls workingset_eviction(),
 * and workingset_refault() notes the refault's cost for get_scan_count()
 * (lru_note_cost_refault()) before the folio is added back to the LRU.
 */
#include "internal.h"
#include "probes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <reclaim/scan.h>
#include <reclaim/workingset.h>

#define WS_AGE 0
#define WS_REFAULT 1
#define WS_ACTIVATE 2
#define WS_RESTORE 3

#define CLOCK_BITS 43
#define CLOCK_MASK ((1ull << CLOCK_BITS) - 1)
#define REFERENCED_BIT (1ull << CLOCK_BITS)
#define ID_SHIFT 44
#define TYPE_SHIFT (ID_SHIFT + 16)
#define WORKINGSET_BIT (1ull << 62)

__extension__ typedef unsigned __int128 u128;

static bool adaptive(const struct rcl_lruvec *lv);

uint64_t rcl__workingset_shadow(struct rcl_lruvec *lv, unsigned type,
				uint32_t f, uint64_t ahead)
{
	uint64_t age = atomic_load_explicit(&lv->__ws[WS_AGE],
					    memory_order_relaxed) +
		       ahead;

	return RCL_SHADOW_TAG | ((f & F_WORKINGSET) ? WORKINGSET_BIT : 0) |
	       ((f & F_REFERENCED) && adaptive(lv) ? REFERENCED_BIT : 0) |
	       ((uint64_t)type << TYPE_SHIFT) |
	       ((uint64_t)lv->__id << ID_SHIFT) | (age & CLOCK_MASK);
}

void rcl__workingset_age(struct rcl_lruvec *lv, uint64_t n)
{
	atomic_fetch_add_explicit(&lv->__ws[WS_AGE], n, memory_order_relaxed);
}

/*
 * The adaptive inactive target (docs/adaptive-target.md).
 *
 * Each type's target is a share of its weight, in 1/65536ths, packed 16 bits
 * a type into lv->__target; 0 means "not adapted yet": the kernel's ratio
 * rule applies.  The first refault of the type's own shadows sets it to
 * TARGET_INIT; ghost hits then move it, as ARC moves its target for T1:
 *
 *   - a refault within half the type's size of an object that was never
 *     active and was evicted unreferenced (ARC's B1 hit: a larger inactive
 *     list would have kept it) grows the share by
 *     2 x weight x max(1, b2 / b1) / size;
 *   - one of an object that had been active, or was evicted with its
 *     referenced bit (B2: ARC keeps an object hit since its insertion in T2,
 *     so a larger T2 would have kept it) shrinks it by
 *     2 x weight x max(1, b1 / b2) / size;
 *
 * where b1 and b2 estimate the ghost lists: the evictions of objects without
 * and with the workingset or referenced bit over about the last size
 * evictions (both
 * halved whenever their sum passes the type's object count), packed 32 bits
 * each into lv->__ghost[type].  The share stays within [TARGET_MIN,
 * TARGET_MAX].  The constants were chosen by measurement on the shared
 * traces; docs/adaptive-target.md has the table and its neighbours.
 */
#define TARGET_INIT 1311	/* 2 % */
#define TARGET_MIN 655		/* 1 % */
#define TARGET_MAX (65536 - 655)
#define TARGET_GAIN 2
#define GHOST_WINDOW_DIV 2	/* ghost hit: distance <= objects / 2 */

static bool adaptive(const struct rcl_lruvec *lv)
{
	return !(lv->__flags & RCL_LRUVEC_KERNEL);
}

/*
 * The tier-1 gate, after MGLRU's tiers (the kernel's mm/vmscan.c,
 * read_ctrl_pos() and positive_ctrl_err()).  Tier 0: the objects evicted
 * without their referenced bit; tier 1: those evicted with it (hit once
 * since they came to the inactive list), and those the gate protected.
 * lv->__tiers holds four 16-bit counters, e0 | e1 << 16 | r0 << 32 |
 * r1 << 48: each tier's evictions (tier 1's with its protections) and its
 * refaults within half the protected objects' distance (a refault that an
 * activation would have turned into a hit).  All four are halved whenever
 * the evictions pass TIER_WINDOW x the objects.  While tier 1 refaults at
 * more than TIER_GAIN / 2 times tier 0's rate (and at least TIER_MIN_REFAULTS
 * times), reclaim activates a referenced object at the inactive tail instead
 * of evicting it, as MGLRU moves a higher tier to a younger generation; the
 * protections count in tier 1's denominator, so a protection that does not
 * pay closes the gate again.  One word for all the lruvec's types.
 */
#define TIER_GAIN 3
#define TIER_MIN_REFAULTS 8
#define TIER_WINDOW 2

static void tiers_add(struct rcl_lruvec *lv, unsigned type, unsigned e0,
		      unsigned e1, unsigned r0, unsigned r1)
{
	uint64_t objs = rcl_lruvec_count(lv, RCL_LRU_LIST(type, 0), NULL) +
			rcl_lruvec_count(lv, RCL_LRU_LIST(type, 1), NULL);
	uint64_t lim = objs * TIER_WINDOW, old, nw;

	if (lim < 64)
		lim = 64;
	old = atomic_load_explicit(&lv->__tiers, memory_order_relaxed);
	do {
		uint64_t c[4];
		unsigned i;

		c[0] = (old & 0xffff) + e0;
		c[1] = ((old >> 16) & 0xffff) + e1;
		c[2] = ((old >> 32) & 0xffff) + r0;
		c[3] = (old >> 48) + r1;
		while (c[0] + c[1] > lim || c[0] > 0xfff0 || c[1] > 0xfff0 ||
		       c[2] > 0xfff0 || c[3] > 0xfff0)
			for (i = 0; i < 4; i++)
				c[i] /= 2;
		nw = c[0] | c[1] << 16 | c[2] << 32 | c[3] << 48;
	} while (!atomic_compare_exchange_weak_explicit(
		&lv->__tiers, &old, nw, memory_order_relaxed,
		memory_order_relaxed));
}

void rcl__workingset_tiers(struct rcl_lruvec *lv, unsigned type, unsigned e0,
			   unsigned e1)
{
	if ((e0 || e1) && adaptive(lv))
		tiers_add(lv, type, e0, e1, 0, 0);
}

bool rcl__workingset_tier1_protected(struct rcl_lruvec *lv)
{
	uint64_t w, e0, e1, r0, r1;

	if (!adaptive(lv))
		return false;
	w = atomic_load_explicit(&lv->__tiers, memory_order_relaxed);
	e0 = w & 0xffff;
	e1 = (w >> 16) & 0xffff;
	r0 = (w >> 32) & 0xffff;
	r1 = w >> 48;
	return r1 >= TIER_MIN_REFAULTS &&
	       r1 * (e0 + TIER_MIN_REFAULTS) * 2 > (r0 + 1) * e1 * TIER_GAIN;
}

unsigned rcl__workingset_target(const struct rcl_lruvec *lv, unsigned type)
{
	uint64_t t = atomic_load_explicit(&((struct rcl_lruvec *)lv)->__target,
					  memory_order_relaxed);

	return (unsigned)(t >> (16 * type)) & 0xffff;
}

void rcl__workingset_evicted(struct rcl_lruvec *lv, unsigned type,
			     uint64_t ws_seq, unsigned n)
{
	uint64_t old, nw, b1, b2, objs;
	unsigned i;

	if (!n || !adaptive(lv) || !rcl__workingset_target(lv, type))
		return;		/* no refaults seen: nothing to estimate for */
	objs = rcl_lruvec_count(lv, RCL_LRU_LIST(type, 0), NULL) +
	       rcl_lruvec_count(lv, RCL_LRU_LIST(type, 1), NULL);
	old = atomic_load_explicit(&lv->__ghost[type], memory_order_relaxed);
	do {
		b1 = old & 0xffffffffu;
		b2 = old >> 32;
		/* The evictions in their order, each as if counted alone. */
		for (i = 0; i < n; i++) {
			if ((ws_seq >> i) & 1)
				b2++;
			else
				b1++;
			if (b1 + b2 > objs || b1 + b2 >= 0xffffffffu) {
				b1 = (b1 + 1) / 2;
				b2 = (b2 + 1) / 2;
			}
		}
		nw = b1 | (b2 << 32);
	} while (!atomic_compare_exchange_weak_explicit(
		&lv->__ghost[type], &old, nw, memory_order_relaxed,
		memory_order_relaxed));
}

/* Move the share of @type after a ghost hit (see above). */
static void workingset_adapt(struct rcl_lruvec *lv, unsigned type,
			     uint32_t weight, uint64_t total, bool grow)
{
	uint64_t g = atomic_load_explicit(&lv->__ghost[type],
					  memory_order_relaxed);
	uint64_t b1 = (g & 0xffffffffu) ? (g & 0xffffffffu) : 1;
	uint64_t b2 = (g >> 32) ? (g >> 32) : 1;
	uint64_t ratio = grow ? b2 / b1 : b1 / b2, step, old, nw;
	u128 step128;
	unsigned share;

	if (!total)
		return;
	if (!ratio)
		ratio = 1;
	/*
	 * weight < 2^32, ratio < 2^32: the step may reach 2^65, and a step
	 * up to the total (a total of 2^48 or more) times 2^16 may not fit
	 * in 64 bits: 128-bit products.
	 */
	step128 = (u128)weight * TARGET_GAIN * ratio;
	step = step128 > total ? 65536 : (uint64_t)((step128 << 16) / total);
	if (!step)
		step = 1;
	old = atomic_load_explicit(&lv->__target, memory_order_relaxed);
	do {
		share = (unsigned)(old >> (16 * type)) & 0xffff;
		if (!share)
			share = TARGET_INIT;
		if (grow)
			share = share + step > TARGET_MAX ? TARGET_MAX
							  : share + (unsigned)step;
		else
			share = share < TARGET_MIN + step ? TARGET_MIN
							  : share - (unsigned)step;
		nw = (old & ~(0xffffull << (16 * type))) |
		     ((uint64_t)share << (16 * type));
	} while (!atomic_compare_exchange_weak_explicit(
		&lv->__target, &old, nw, memory_order_relaxed,
		memory_order_relaxed));
}

/* The first refault of a type's own shadows: start adapting. */
static void workingset_target_init(struct rcl_lruvec *lv, unsigned type)
{
	uint64_t old = atomic_load_explicit(&lv->__target,
					    memory_order_relaxed);

	while (!((old >> (16 * type)) & 0xffff)) {
		uint64_t nw = old | ((uint64_t)TARGET_INIT << (16 * type));

		if (atomic_compare_exchange_weak_explicit(
			    &lv->__target, &old, nw, memory_order_relaxed,
			    memory_order_relaxed))
			break;
	}
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
	bool restore = false, adapt = false, step = false, grow = false;
	int tier = -1;		/* a refault the tier gate counts: its tier */
	uint64_t adapt_total = 0;
	int err;

	if (outcome)
		*outcome = 0;
	if (!lruvec_live(lv) || !node || type >= lv->__nr_types)
		return -EINVAL;
	/* As rcl_lruvec_add(): pinned and active at once is a caller's bug. */
	if ((flags & RCL_LRU_ADD_UNEVICTABLE) && (flags & RCL_LRU_ADD_ACTIVE))
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
			uint64_t in, act, objs;

			/*
			 * A shrink pass stamps each shadow with the clock as
			 * it will be once the pass's evictions are counted, and
			 * counts them when the pass ends: a refault in between
			 * (from a later evict callback of the pass, or another
			 * thread) meets a shadow ahead of the clock, by less
			 * than a pass.  It was evicted just now: distance 0,
			 * not the 2^43 the wrap would make of it.  A pass
			 * stamps at most one isolation batch ahead; a shadow
			 * further ahead is of a destroyed lruvec whose id this
			 * one took, with a clock this one has not reached: it
			 * is taken as the oldest, not as evicted just now.
			 */
			if (distance > CLOCK_MASK / 2)
				distance = CLOCK_MASK + 1 - distance <=
							   RCL_LRU_BATCH_ISOLATE ?
						   0 :
						   CLOCK_MASK;

			objs = rcl_lruvec_count(lv, RCL_LRU_LIST(type, 0), &in) +
			       rcl_lruvec_count(lv, RCL_LRU_LIST(type, 1), &act);
			if (distance <= workingset_size(lv, type))
				out |= RCL_REFAULT_ACTIVATE;
			if (adaptive(lv) &&
			    distance <= workingset_size(lv, type) / 2)
				tier = (shadow & REFERENCED_BIT) != 0;
			if (adaptive(lv)) {
				uint64_t total = in + act;
				unsigned target = rcl__workingset_target(lv, type);

				/*
				 * An active list below its target has room:
				 * any object with a reuse history may have it.
				 * (The target starts at TARGET_INIT with the
				 * first own refault: set after the add, so
				 * that a failing call changes nothing.)
				 */
				if (!target)
					target = TARGET_INIT;
				if (act < total - rcl__share_of(total, target))
					out |= RCL_REFAULT_ACTIVATE;
				adapt = true;
				if (distance <= objs / GHOST_WINDOW_DIV) {
					step = true;
					grow = !restore &&
					       !(shadow & REFERENCED_BIT);
					adapt_total = total;
				}
			}
			if (out & RCL_REFAULT_ACTIVATE)
				flags |= RCL_LRU_ADD_ACTIVE;
			RCL_PROBE4(workingset_refault, lv->__id, type,
				   (out & RCL_REFAULT_ACTIVATE) != 0, distance);
		}
		/*
		 * A restore is an activated refault of an object that had
		 * been active (the kernel's workingset_refault() counts
		 * WORKINGSET_RESTORE and notes the cost only after its
		 * workingset_test_recent() check): one too far to activate
		 * could not have stayed with all the memory, so it says
		 * nothing about this type's working set being thrashed.
		 */
		if (restore && (out & RCL_REFAULT_ACTIVATE))
			out |= RCL_REFAULT_RESTORE;
	}
	if ((flags & RCL_LRU_ADD_UNEVICTABLE) && (flags & RCL_LRU_ADD_ACTIVE))
		flags &= ~RCL_LRU_ADD_ACTIVE;	/* pinned wins over our verdict */
	err = rcl_lruvec_add(lv, node, type, weight, flags);
	if (err)
		return err;
	if (tier >= 0)
		tiers_add(lv, type, 0, 0, !tier, tier);
	if (adapt) {
		workingset_target_init(lv, type);
		if (step)
			workingset_adapt(lv, type, weight, adapt_total, grow);
	}
	if (out & RCL_REFAULT_REFAULT)
		atomic_fetch_add_explicit(&lv->__ws[WS_REFAULT], 1,
					  memory_order_relaxed);
	if (out & RCL_REFAULT_ACTIVATE) {
		atomic_fetch_add_explicit(&lv->__ws[WS_ACTIVATE], 1,
					  memory_order_release);
		rcl__workingset_age(lv, 1);	/* an activation */
	}
	if (out & RCL_REFAULT_RESTORE) {
		atomic_fetch_add_explicit(&lv->__ws[WS_RESTORE], 1,
					  memory_order_release);
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
	/*
	 * Each refault is counted before its activation, and an activation
	 * before its restore, the later ones with release; reading them in
	 * the opposite order, with acquire, makes restore <= activate <=
	 * refault in every snapshot.
	 */
	out->restore = atomic_load_explicit(&w->__ws[WS_RESTORE],
					    memory_order_acquire);
	out->activate = atomic_load_explicit(&w->__ws[WS_ACTIVATE],
					     memory_order_acquire);
	out->refault = atomic_load_explicit(&w->__ws[WS_REFAULT],
					    memory_order_relaxed);
	out->nonresident_age = atomic_load(&w->__ws[WS_AGE]);
	return 0;
}

RCL_API unsigned rcl_lruvec_inactive_target(const struct rcl_lruvec *lv,
					    unsigned type)
{
	if (!lruvec_live(lv) || type >= lv->__nr_types)
		return 0;
	return rcl__workingset_target(lv, type);
}

/* ------------------------------------------------------------------------- */
/* Bounding the shadows: the kernel's shadow-node shrinker                    */
/* ------------------------------------------------------------------------- */

struct rcl_shadow_limit {
	struct rcl_shrinker_registry *reg;	/* its memory's allocator */
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
	/* Called as a shrinker's scan: cancellation is held off there. */
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
	/* From the registry's allocator, as the shrinker is. */
	l = rcl__shrinker_registry_alloc(reg, sizeof(*l));
	if (!l)
		return -ENOMEM;
	memset(l, 0, sizeof(*l));
	l->reg = reg;
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
		rcl__shrinker_registry_release(reg, l);
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
	rcl__shrinker_registry_release(limit->reg, limit);
	return 0;
}
