/* SPDX-License-Identifier: MIT */
/*
 * The proportional scan controller: the kernel's get_scan_count() and
 * shrink_lruvec(), generalised from two LRU types (anon, file) to up to
 * RCL_LRU_MAX_TYPES, with proportional chunks instead of the kernel's equal
 * 32-object chunks plus rescale (see scan.h for why).
 *
 * The caller is lib/vmscan.c's pass over a partition (shrink_node()).  This
 * file calls lib/lruvec.c (the list sizes, shrink_inactive/_active,
 * rcl__lruvec_add_cost()), which never calls back.  The circle scan ->
 * lruvec -> workingset -> scan closes through rcl_lruvec_note_cost(), which
 * lib/workingset.c calls on a refault: the kernel's, where get_scan_count()
 * reads the costs that workingset_refault() notes with
 * lru_note_cost_refault(), and reclaim (__remove_mapping()) calls
 * workingset_eviction().
 */
#include "internal.h"

#include <errno.h>
#include <string.h>

#include <reclaim/scan.h>

__extension__ typedef unsigned __int128 u128;

/* ------------------------------------------------------------------------- */
/* Costs                                                                      */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_lruvec_note_cost(struct rcl_lruvec *lv, unsigned type,
				 uint64_t nr_refaults)
{
	if (!lruvec_live(lv) || type >= lv->__nr_types)
		return -EINVAL;
	/*
	 * Saturate: the product must not wrap, and a cost of 2^60 already
	 * outweighs any list (add_cost() halves the costs once they exceed
	 * a quarter of the lists' size, so the sum stays below 2^62).
	 */
	if (nr_refaults > (UINT64_C(1) << 60) / RCL_REFAULT_COST)
		nr_refaults = (UINT64_C(1) << 60) / RCL_REFAULT_COST;
	rcl__lruvec_add_cost(lv, type, nr_refaults * RCL_REFAULT_COST);
	return 0;
}

RCL_API uint64_t rcl_lruvec_cost(const struct rcl_lruvec *lv, unsigned type)
{
	if (!lruvec_live(lv) || type >= lv->__nr_types)
		return 0;
	return atomic_load_explicit(&((struct rcl_lruvec *)lv)->__cost[type],
				    memory_order_relaxed);
}

/* ------------------------------------------------------------------------- */
/* get_scan_count                                                             */
/* ------------------------------------------------------------------------- */

/* Bias weights from swappiness and the types' configured costs. */
static void bias_weights(const struct rcl_lruvec *lv, unsigned swappiness,
			 uint64_t w[RCL_LRU_MAX_TYPES])
{
	uint32_t mincost = UINT32_MAX;
	bool mixed = false;
	unsigned t;

	for (t = 0; t < lv->__nr_types; t++)
		if (lv->__types[t].cost < mincost)
			mincost = lv->__types[t].cost;
	for (t = 0; t < lv->__nr_types; t++)
		if (lv->__types[t].cost != mincost)
			mixed = true;
	for (t = 0; t < lv->__nr_types; t++) {
		if (!mixed)
			w[t] = RCL_SWAPPINESS_DEFAULT;	/* no bias to apply */
		else if (lv->__types[t].cost == mincost)
			w[t] = RCL_SWAPPINESS_MAX - swappiness;
		else
			w[t] = (uint64_t)swappiness * mincost /
			       lv->__types[t].cost;
	}
}

/*
 * apply_proportional_protection(): a list of a domain with protection @prot
 * and usage @usage is scanned as if it held size - size * prot / (usage + 1)
 * objects, at least RCL_SCAN_CHUNK (so that reclaim keeps moving without
 * lowering the priority further); unchanged without protection.
 */
uint64_t rcl__protected_size(uint64_t size, uint64_t prot, uint64_t usage)
{
	uint64_t cg, s;

	if (!prot)
		return size;
	cg = RCL_MAX(usage, prot);
	s = size - (uint64_t)((u128)size * prot / ((u128)cg + 1));
	return RCL_MAX(s, (uint64_t)RCL_SCAN_CHUNK);
}

static int scan_targets(const struct rcl_lruvec *lv, int priority,
			unsigned swappiness, uint64_t prot, uint64_t usage,
			uint64_t targets[RCL_LRU_NR_LISTS])
{
	uint64_t size[RCL_LRU_NR_LISTS] = { 0 };
	uint64_t w[RCL_LRU_MAX_TYPES], fp[RCL_LRU_MAX_TYPES] = { 0 };
	uint64_t cost[RCL_LRU_MAX_TYPES], total_cost = 0, primed_sum = 0;
	uint64_t den = 0, floor_share;
	bool nonempty[RCL_LRU_MAX_TYPES] = { false };
	unsigned t, l, n;

	if (!lruvec_live(lv) || !targets || priority < 0 || priority > 12 ||
	    swappiness > RCL_SWAPPINESS_MAX)
		return -EINVAL;
	n = lv->__nr_types;
	memset(targets, 0, RCL_LRU_NR_LISTS * sizeof(targets[0]));
	for (l = 0; l < 2 * n; l++) {
		size[l] = rcl_lruvec_count(lv, l, NULL);
		if (size[l])
			nonempty[l / 2] = true;
	}

	if (priority == 0) {
		/*
		 * Close to the end: every list whole (SCAN_EQUAL: the kernel
		 * applies no fraction), so that no list is left unscanned -
		 * a share of 1/N of a list of fewer than N objects is none.
		 */
		for (l = 0; l < 2 * n; l++)
			targets[l] = rcl__protected_size(size[l], prot, usage);
		return 0;
	} else {
		bias_weights(lv, swappiness, w);
		for (t = 0; t < n; t++) {
			cost[t] = rcl_lruvec_cost(lv, t);
			total_cost += cost[t];
		}
		/*
		 * Prime each cost with the total, so that a type with no cost
		 * still gets pressure (the kernel's "at least a third").
		 */
		for (t = 0; t < n; t++)
			primed_sum += total_cost + cost[t];
		for (t = 0; t < n; t++)
			if (nonempty[t])
				fp[t] = (uint64_t)((u128)w[t] * (primed_sum + 1) /
						   (total_cost + cost[t] + 1));
		for (t = 0; t < n; t++)
			den += fp[t];
		/* The floor share: 1/20 of the denominator for a live type. */
		floor_share = den / 20 ? den / 20 : 1;
		for (t = 0; t < n; t++)
			if (nonempty[t] && fp[t] < floor_share)
				fp[t] = floor_share;
	}
	den = 0;
	for (t = 0; t < n; t++)
		den += fp[t];
	if (!den)
		return 0;	/* every list is empty */
	for (l = 0; l < 2 * n; l++)
		targets[l] = (uint64_t)((u128)(rcl__protected_size(size[l], prot,
								   usage) >>
					       priority) *
					fp[l / 2] / den);
	return 0;
}

RCL_API int rcl_scan_targets(const struct rcl_lruvec *lv, int priority,
			     unsigned swappiness,
			     uint64_t targets[RCL_LRU_NR_LISTS])
{
	return scan_targets(lv, priority, swappiness, 0, 0, targets);
}

/* ------------------------------------------------------------------------- */
/* shrink_lruvec                                                              */
/* ------------------------------------------------------------------------- */

/*
 * The 3.11 rescale, generalised to N types: returns the work left.
 * percentage = what the type with the least work left has still to do, of
 * its target; the others keep 100 - percentage of their targets, less what
 * they have scanned.
 */
static uint64_t rescale_3_11(const struct rcl_lruvec *lv,
			     const uint64_t *targets, uint64_t *nr)
{
	uint64_t rem[RCL_LRU_MAX_TYPES], tgt[RCL_LRU_MAX_TYPES], left = 0;
	unsigned t, m = RCL_LRU_MAX_TYPES, n = lv->__nr_types, pct, a;

	for (t = 0; t < n; t++) {
		rem[t] = nr[2 * t] + nr[2 * t + 1];
		tgt[t] = targets[2 * t] + targets[2 * t + 1];
		if (tgt[t] && (m == RCL_LRU_MAX_TYPES || rem[t] < rem[m]))
			m = t;
	}
	if (m == RCL_LRU_MAX_TYPES)
		return 0;
	pct = (unsigned)(rem[m] * 100 / (tgt[m] + 1));
	nr[2 * m] = nr[2 * m + 1] = 0;
	for (t = 0; t < n; t++) {
		if (t == m)
			continue;
		for (a = 0; a < 2; a++) {
			unsigned l = 2 * t + a;
			uint64_t done = targets[l] - nr[l];

			nr[l] = targets[l] * (100 - pct) / 100;
			nr[l] -= RCL_MIN(nr[l], done);
			left += nr[l];
		}
	}
	return left;
}

RCL_API int rcl_scan_lruvec(struct rcl_lruvec *lv, struct rcl_scan_control *sc)
{
	return rcl__scan_lruvec_protected(lv, sc, 0, 0);
}

int rcl__scan_lruvec_protected(struct rcl_lruvec *lv,
			       struct rcl_scan_control *sc, uint64_t prot,
			       uint64_t usage)
{
	uint64_t targets[RCL_LRU_NR_LISTS], nr[RCL_LRU_NR_LISTS];
	uint64_t maxt = 0, left = 0, reclaimed = 0, round = 0;
	bool proportional, full, adjusted = false;
	unsigned l, n;
	int err;

	if (!lruvec_live(lv) || !sc || !lruvec_can_evict(lv))
		return -EINVAL;
	err = scan_targets(lv, sc->priority, sc->swappiness, prot, usage,
			   targets);
	if (err)
		return err;
	n = 2 * lv->__nr_types;
	proportional = !(sc->flags & RCL_SCAN_NONPROPORTIONAL);
	for (l = 0; l < n; l++) {
		nr[l] = targets[l];
		left += nr[l];
		if (targets[l] > maxt)
			maxt = targets[l];
	}
	/*
	 * The seed patch: direct reclaim at DEF_PRIORITY scans it all (not
	 * before it: the pre-2014 mode stops at the goal there too).
	 */
	full = (sc->flags & RCL_SCAN_DIRECT) && sc->priority == 12 &&
	       proportional;

	/*
	 * Each round takes at least one object of some list (32 of the
	 * largest target's, while it has any): bounded.
	 */
	while (left) {
		unsigned lists = 0;

		round++;

		for (l = 0; l < n; l++) {
			struct rcl_lru_shrink_control lsc = { 0 };
			uint64_t chunk;

			if (!nr[l])
				continue;
			if (proportional) {
				/*
				 * Up to ceil(32 * round * target / largest
				 * target) done: the largest list's fraction,
				 * rounded up.  A chunk of ceil(32 * target /
				 * largest target) every round ran ahead by up
				 * to one object a round (a list of 1/100 of
				 * the largest did 1 where 0.32 was its share).
				 * At most 32; none in some rounds.
				 */
				uint64_t done = targets[l] - nr[l];
				uint64_t want = (uint64_t)RCL_MIN(
					((u128)RCL_SCAN_CHUNK * round *
						 targets[l] +
					 maxt - 1) /
						maxt,
					(u128)targets[l]);

				if (want <= done)
					continue;
				chunk = want - done;
			} else {
				chunk = RCL_SCAN_CHUNK;
			}
			chunk = RCL_MIN(RCL_MAX(chunk, 1), nr[l]);
			nr[l] -= chunk;
			left -= chunk;
			lists++;

			lsc.type = l / 2;
			lsc.nr_to_scan = chunk;
			lsc.priority = sc->priority;
			lsc.context = sc->context;
			if (!(l & 1)) {
				if (sc->flags & RCL_SCAN_WRITE_DIRTY)
					lsc.flags = RCL_LRU_SHRINK_WRITE_DIRTY;
				rcl_lruvec_shrink_inactive(lv, &lsc);
				sc->nr_taken += lsc.nr_taken;
				sc->nr_dirty += lsc.nr_dirty;
				sc->nr_unqueued_dirty += lsc.nr_unqueued_dirty;
				sc->nr_writeback += lsc.nr_writeback;
				sc->nr_immediate += lsc.nr_immediate;
				/* One batch (a chunk is at most one isolation). */
				if (lsc.nr_taken &&
				    lsc.nr_unqueued_dirty == lsc.nr_taken)
					sc->nr_dirty_batches++;
				if (lsc.nr_taken && lsc.nr_writeback == lsc.nr_taken)
					sc->nr_writeback_batches++;
				sc->nr_scanned += lsc.nr_scanned;
				sc->nr_reclaimed += lsc.nr_freed;
				sc->weight_reclaimed += lsc.weight_freed;
				sc->nr_rotated += lsc.nr_rotated;
				sc->nr_activated += lsc.nr_activated;
				reclaimed += lsc.nr_freed;
			} else if (rcl_lruvec_inactive_is_low(lv, l / 2)) {
				/* Age the active list only when needed. */
				rcl_lruvec_shrink_active(lv, &lsc);
				sc->nr_refill += lsc.nr_scanned;
				sc->nr_deactivated += lsc.nr_deactivated;
			}
		}
		sc->nr_rounds++;
		sc->last_round_lists = lists;
		if (reclaimed < sc->nr_to_reclaim || full || adjusted)
			continue;
		/*
		 * Proportional chunks keep every list at the same completed
		 * fraction of its target (within one chunk), so the pass may
		 * stop the moment the goal is met.
		 */
		if (proportional)
			break;
		/*
		 * The kernel from 3.11 to 3.15 (e82e0561dae9): stop the type
		 * with the least work left, rescale the others to the fraction
		 * it completed, and go on - with no abort when that type had
		 * nothing left, so the others are scanned to their whole
		 * targets.  That is the over-reclaim Hugh Dickins bisected
		 * ("once one of those is empty, it then tries to empty the
		 * other"), which the 2014 seed patch cut off.
		 */
		left = rescale_3_11(lv, targets, nr);
		adjusted = true;
	}
	return 0;
}
