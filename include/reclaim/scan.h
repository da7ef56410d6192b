/* SPDX-License-Identifier: MIT */
/**
 * DOC: scan - the proportional scan controller
 *
 * A reclaim pass asks every lruvec of a partition to free up to
 * @nr_to_reclaim objects at a priority (12 = gentle .. 0 = everything), then
 * calls the partition's shrinkers at the same priority.  How much of each list
 * it scans is the kernel's get_scan_count(); how it stops is the kernel's
 * shrink_lruvec() with one change (below).  Memory domains (domain.h) drive
 * it; it is public so that tests and custom reclaimers can use it directly.
 *
 * Scan targets (rcl_scan_targets()).  Each evictable list's target is
 * (size >> priority) * fraction[type] / denominator, where:
 *
 * - each type has a *bias weight*: with swappiness s (0..200, default 100),
 *   the cheapest types (lowest configured cost, "file") weigh 200 - s and
 *   every costlier type weighs s * min_cost / its cost (with the default
 *   types, "anon" at cost 2 weighs s / 2: a third of the pressure at
 *   s = 100, as the kernel's anon gets at its default swappiness of 60);
 * - each type has a *cost*: its recent rotations (objects reclaim met but
 *   could not free, and referenced active objects it kept) plus 32 per
 *   refault the application reports (rcl_lruvec_note_cost()), decayed by
 *   halving all costs when their sum exceeds a quarter of the lruvec's
 *   objects (the kernel's lru_note_cost());
 * - as in the kernel's SCAN_FRACT, each cost is primed with the total cost,
 *   so a type with no cost still gets pressure: fraction[t] = weight[t] *
 *   (sum of primed costs + 1) / (primed cost[t] + 1);
 * - a type whose lists are not empty gets at least 1/20 of the denominator
 *   (the floor share), whatever its bias and cost; empty types get nothing
 *   and are left out of the denominator;
 * - at priority 0 every list is scanned whole, whatever its type's bias and
 *   cost (the kernel's SCAN_EQUAL, which applies no fraction).
 *
 * Scanning (rcl_scan_lruvec()).  Lists are scanned round-robin in chunks.
 * Inactive chunks go through rcl_lruvec_shrink_inactive(); active chunks
 * through rcl_lruvec_shrink_active() when the type's inactive list is low,
 * and are skipped otherwise (as in the kernel).  After each round, if
 * @nr_to_reclaim objects have been freed, the pass stops; at priority 12
 * direct reclaim scans its whole target instead (the 2014 seed patch: "full
 * scan at DEF_PRIORITY" - many small stalls instead of one long one).
 *
 * The change from the kernel.  The kernel scans SWAP_CLUSTER_MAX (32) objects
 * of every list per round, so small lists finish a larger fraction of their
 * targets than large ones; when the goal is met it stops the type with less
 * work left and rescales the other to the same completed fraction (the seed
 * patch "Use proportional scanning during direct reclaim"), then does one
 * more round.  Here every list scans a chunk proportional to its target
 * (32 for the largest target of the lruvec; each other list as much as
 * brings it to the largest's completed fraction of its own target, rounded
 * up: at most 32, none in some rounds), so the completed fractions of all
 * lists stay equal to within one chunk at every round, and the pass can
 * stop as soon as the goal is met.  The result
 * is the proportionality the seed patch aimed for, at every stop, and no
 * extra round: below priority 12 a pass frees at most @nr_to_reclaim plus 32
 * per list scanned in its last round.  RCL_SCAN_NONPROPORTIONAL restores
 * what the kernel did before the seed patch, for comparison: equal 32-object
 * chunks, no full scan at priority 12, and at the goal the 3.11 rescale
 * (stop the type with the least work left, rescale the others to its
 * completed fraction and go on) without the 2014 abort, so that when that
 * type had nothing left the others are scanned to their whole targets - the
 * over-reclaim the seed patch fixed.
 *
 * Synchronization: the functions take each lruvec's lock as its primitives
 * do; no lock is held across evict callbacks.
 */
#ifndef RECLAIM_SCAN_H
#define RECLAIM_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include <reclaim/common.h>
#include <reclaim/lruvec.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The kernel's SWAP_CLUSTER_MAX: the largest chunk of one list per round. */
#define RCL_SCAN_CHUNK 32
/** Default swappiness (neutral: the bias comes from the types' costs). */
#define RCL_SWAPPINESS_DEFAULT 100
/** Largest swappiness. */
#define RCL_SWAPPINESS_MAX 200
/** Each refault reported with rcl_lruvec_note_cost() costs this many rotations. */
#define RCL_REFAULT_COST 32

/** Scan flag: direct reclaim (full scan at priority 12; counted as direct). */
#define RCL_SCAN_DIRECT (1u << 0)
/** Scan flag: the 3.11-3.15 kernel's behaviour, for comparison. */
#define RCL_SCAN_NONPROPORTIONAL (1u << 1)
/** Scan flag: dirty objects go to the evict callback (RCL_LRU_SHRINK_WRITE_DIRTY). */
#define RCL_SCAN_WRITE_DIRTY (1u << 2)

/**
 * struct rcl_scan_control - one reclaim pass over one lruvec (or more)
 * @nr_to_reclaim: in: the goal, in objects
 * @priority: in: 0..12
 * @swappiness: in: 0..200
 * @context: in: the capability mask, passed to the evict callbacks
 * @flags: in: RCL_SCAN_DIRECT, RCL_SCAN_NONPROPORTIONAL
 * @nr_scanned: out (added to): inactive objects scanned (pgscan)
 * @nr_reclaimed: out (added to): objects freed (pgsteal)
 * @weight_reclaimed: out (added to): their weight
 * @nr_refill: out (added to): active objects scanned (pgrefill)
 * @nr_rotated: out (added to): inactive objects kept (pgrotated)
 * @nr_activated: out (added to): pgactivate
 * @nr_deactivated: out (added to): pgdeactivate
 * @nr_rounds: out (added to): rounds of chunks
 * @last_round_lists: out: lists scanned in the last round of the last lruvec
 * @nr_taken: out (added to): inactive objects isolated
 * @nr_dirty: out (added to): dirty or writeback objects met (flusher.h)
 * @nr_unqueued_dirty: out (added to): dirty objects not under writeback met
 * @nr_writeback: out (added to): objects under writeback met
 * @nr_immediate: out (added to): writeback objects met a second time
 * @nr_dirty_batches: out (added to): batches whose every object was dirty
 *	and unqueued (the flusher trigger)
 * @nr_writeback_batches: out (added to): batches whose every object was
 *	under writeback (the throttle)
 */
struct rcl_scan_control {
	uint64_t nr_to_reclaim;
	int priority;
	unsigned swappiness;
	uint64_t context;
	unsigned flags;

	uint64_t nr_scanned;
	uint64_t nr_reclaimed;
	uint64_t weight_reclaimed;
	uint64_t nr_refill;
	uint64_t nr_rotated;
	uint64_t nr_activated;
	uint64_t nr_deactivated;
	uint64_t nr_rounds;
	unsigned last_round_lists;
	uint64_t nr_taken;
	uint64_t nr_dirty;
	uint64_t nr_unqueued_dirty;
	uint64_t nr_writeback;
	uint64_t nr_immediate;
	uint64_t nr_dirty_batches;
	uint64_t nr_writeback_batches;
};

/**
 * rcl_scan_targets() - the scan target of every list of an lruvec
 * @lv: the lruvec
 * @priority: 0..12
 * @swappiness: 0..200
 * @targets: receives RCL_LRU_NR_LISTS targets (the unevictable one is 0)
 *
 * The kernel's get_scan_count(), as described above.
 *
 * Context: lock-free reads of sizes and costs (may be stale).
 * Return: 0; -EINVAL for NULL, an uninitialised lruvec, or a priority or
 * swappiness out of range.
 */
RCL_API int rcl_scan_targets(const struct rcl_lruvec *lv, int priority,
			     unsigned swappiness,
			     uint64_t targets[RCL_LRU_NR_LISTS]);

/**
 * rcl_scan_lruvec() - one reclaim pass over one lruvec
 * @lv: the lruvec (it needs an evict callback)
 * @sc: the control; outputs are added to
 *
 * Context: any thread; calls the lruvec's evict callback with no library
 * lock held.
 * Return: 0; -EINVAL for NULL, an lruvec without an evict callback, or a
 * priority or swappiness out of range.
 *
 * Bad input: -EINVAL also for an uninitialised lruvec. Unknown @sc->flags
 * bits are ignored.
 */
RCL_API int rcl_scan_lruvec(struct rcl_lruvec *lv, struct rcl_scan_control *sc);

/**
 * rcl_lruvec_note_cost() - report the cost of having evicted objects
 * @lv: the lruvec
 * @type: the type of the objects
 * @nr_refaults: how many evicted objects had to be re-created (refaults)
 *
 * Each counts RCL_REFAULT_COST rotations in the type's cost, so that the
 * scan controller shifts pressure towards the other types.  The workingset
 * module reports refaults this way; an application without it can report
 * re-creations it notices itself.
 *
 * Context: lock-free.
 * Return: 0; -EINVAL for NULL, an uninitialised lruvec or a type out of range.
 *
 * Bad input: @nr_refaults saturates at 2^60 / RCL_REFAULT_COST: the cost
 * never wraps.
 */
RCL_API int rcl_lruvec_note_cost(struct rcl_lruvec *lv, unsigned type,
				 uint64_t nr_refaults);

/**
 * rcl_lruvec_cost() - a type's current (decayed) cost
 * @lv: the lruvec
 * @type: the type
 *
 * Context: lock-free.
 * Return: the cost; 0 for bad arguments.
 */
RCL_API uint64_t rcl_lruvec_cost(const struct rcl_lruvec *lv, unsigned type);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_SCAN_H */
