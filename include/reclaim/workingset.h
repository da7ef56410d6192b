/* SPDX-License-Identifier: MIT */
/**
 * DOC: workingset - remembering evicted objects: shadows and refault distance
 *
 * A cache is judged by what it keeps.  When an object is evicted, the library
 * hands the evict callback a *shadow*: a 64-bit value that records when (on
 * the lruvec's eviction clock), from which lruvec and type, and whether the
 * object had been active.  The application stores it where the object was,
 * in its own index (bit 63 is always set, so it never looks like a pointer or
 * a small integer).  When the key is missed later, the application passes the
 * shadow back as it inserts the object again (rcl_lruvec_add_refault()), and
 * the library decides from the *refault distance* - the evictions and
 * activations since - whether the object would have stayed in the cache had
 * the active list been smaller by that much.  If so, it goes straight to the
 * active list (the kernel's mm/workingset.c, kernel-reference §6.1):
 *
 *	refault distance = clock now - clock at eviction
 *	activate if refault distance <= the objects on the active lists (and on
 *	the other types' inactive lists)
 *
 * Activated refaults of objects that had been active before (the workingset
 * bit) count as restores and feed the scan controller's cost model
 * (rcl_lruvec_note_cost()), so that a type whose working set is being
 * thrashed loses pressure to the others.
 *
 * Beyond the kernel (unless the lruvec was created with RCL_LRUVEC_KERNEL),
 * refaults also steer the balance of the two lists: the first refault of a
 * type's own shadow replaces the kernel's inactive ratio by an adaptive
 * target, a share of the type's weight (start 2 %, bounds 1 % and 99 %).
 * Ghost hits move it as ARC moves its target: a close refault of an object
 * that was never active grows the inactive share; one of an object that had
 * been active shrinks it.  And while the active list is below its share, any
 * refault is activated: an object with a reuse history takes the room, so a
 * loop larger than the cache keeps a stable part of itself on the active
 * list instead of thrashing it all (rcl_lruvec_inactive_target(),
 * docs/adaptive-target.md).  An application that never passes shadows back
 * gets the kernel's behaviour exactly.
 *
 * Shadows take memory of their own.  rcl_shadow_limit_new() registers a
 * shrinker, as the kernel's shadow-node shrinker does (seeks = 0: cheap to
 * drop), whose count is only the excess of the application's shadows over a
 * quota; its scan asks the application to drop its oldest shadows.
 *
 * Usage:
 *
 * .. code-block:: c
 *
 *	// evict callback, when the object goes:
 *	slot->shadow = ctl->shadow;			// instead of the object
 *	rcl_shadow_limit_add(limit, 1);
 *	// on a miss whose slot holds a shadow:
 *	rcl_lruvec_add_refault(&lv, &o->lru, RCL_LRU_FILE, size, 0, slot->shadow);
 *	rcl_shadow_limit_add(limit, -1);
 *
 * Synchronization: every function is thread-safe and lock-free except
 * rcl_lruvec_add_refault() (which adds as rcl_lruvec_add() does).
 */
#ifndef RECLAIM_WORKINGSET_H
#define RECLAIM_WORKINGSET_H

#include <stdbool.h>
#include <stdint.h>

#include <reclaim/common.h>
#include <reclaim/lruvec.h>
#include <reclaim/shrinker.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The tag bit every shadow carries. */
#define RCL_SHADOW_TAG (1ull << 63)

/**
 * rcl_shadow_is_valid() - does @v look like a shadow?
 * @v: a value from the application's index
 */
static inline bool rcl_shadow_is_valid(uint64_t v)
{
	return (v & RCL_SHADOW_TAG) != 0;
}

/* Outcome bits of rcl_lruvec_add_refault(). */
#define RCL_REFAULT_REFAULT (1u << 0)  /**< the shadow was valid for this lruvec */
#define RCL_REFAULT_ACTIVATE (1u << 1) /**< close enough: added to the active list (unless UNEVICTABLE) */
#define RCL_REFAULT_RESTORE (1u << 2)  /**< activated, and it had been active before eviction */

/**
 * rcl_lruvec_add_refault() - add an object that was evicted before
 * @lv: the lruvec
 * @node: an idle node
 * @type: its type
 * @weight: its weight
 * @flags: as rcl_lruvec_add() (RCL_LRU_ADD_ACTIVE forces the active list)
 * @shadow: the shadow its eviction left (0 or an invalid value: a plain add)
 * @outcome: if not NULL, receives RCL_REFAULT_* bits
 *
 * A shadow from another lruvec, or of another type, counts as a refault but
 * does not activate (the distance is not comparable).
 *
 * Context: as rcl_lruvec_add().
 * Return: as rcl_lruvec_add().
 *
 * Bad input: *@outcome is 0 on failure, and a failing call changes nothing
 * (not even the adaptive target). @flags as rcl_lruvec_add(): both ACTIVE and
 * UNEVICTABLE is -EINVAL; an activation decided here does not override
 * UNEVICTABLE: the node goes to the unevictable list, while the verdict
 * (RCL_REFAULT_ACTIVATE), the activate counter and the clock's tick for an
 * activation stand, as the kernel's workingset_refault() decides and counts
 * before the folio's list is known. A shadow whose lruvec was destroyed and whose id a new lruvec
 * took is taken as the new lruvec's own (ids are reused); if its clock is ahead of the new
 * lruvec's by more than RCL_LRU_BATCH_ISOLATE, its distance is taken as the largest (it does not
 * activate by distance).
 */
RCL_API int rcl_lruvec_add_refault(struct rcl_lruvec *lv,
				   struct rcl_lru_node *node, unsigned type,
				   uint32_t weight, unsigned flags,
				   uint64_t shadow, unsigned *outcome);

/**
 * struct rcl_workingset_stats - refault counters of an lruvec
 * @refault: shadows passed back (the kernel's workingset_refault)
 * @activate: of which activated (workingset_activate)
 * @restore: of the activated, those that had been active before
 *	(workingset_restore)
 * @nonresident_age: the eviction clock (evictions plus activations)
 */
struct rcl_workingset_stats {
	uint64_t refault;
	uint64_t activate;
	uint64_t restore;
	uint64_t nonresident_age;
};

/**
 * rcl_lruvec_workingset_stats() - an lruvec's refault counters
 * @lv: the lruvec
 * @out: receives them
 *
 * Context: lock-free.  While other threads add, the counters keep moving, but
 * every snapshot has restore <= activate <= refault.
 * Return: 0; -EINVAL for NULL or an uninitialised lruvec.
 */
RCL_API int rcl_lruvec_workingset_stats(const struct rcl_lruvec *lv,
					struct rcl_workingset_stats *out);

/**
 * rcl_lruvec_inactive_target() - a type's adaptive inactive target
 * @lv: the lruvec
 * @type: the type
 *
 * The share of the type's weight that rcl_lruvec_inactive_is_low() keeps on
 * the inactive list, in 1/65536ths (655..64881), once refaults have started
 * adapting it.
 *
 * Context: lock-free; may be stale.
 * Return: the share; 0 while the kernel's ratio rule applies (no refault of
 * the type yet, or RCL_LRUVEC_KERNEL), and for bad arguments.
 */
RCL_API unsigned rcl_lruvec_inactive_target(const struct rcl_lruvec *lv,
					    unsigned type);

/* ------------------------------------------------------------------------- */
/* Bounding the shadows                                                       */
/* ------------------------------------------------------------------------- */

struct rcl_shadow_limit;

/**
 * struct rcl_shadow_ops - how the application drops shadows
 * @drop: drop up to @nr of the oldest shadows it keeps (and report it with
 *	rcl_shadow_limit_add(limit, -dropped)); return how many it dropped.
 *	Called from reclaim, with no library lock held.
 */
struct rcl_shadow_ops {
	unsigned long (*drop)(void *priv, unsigned long nr);
};

/**
 * rcl_shadow_limit_new() - bound the shadows an application keeps
 * @reg: the shrinker registry (a domain's, or a standalone one)
 * @quota: how many shadows may be kept before the excess is reclaimable
 * @ops: the drop callback
 * @priv: passed to it
 * @out: receives the limit (written on success only)
 *
 * Registers a shrinker named "shadow" with seeks = 0 whose count is the
 * number of shadows above @quota (0 below it).  The limit's memory comes
 * from the registry's allocator.  Pair with rcl_shadow_limit_free().
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL arguments; -ENOMEM; as rcl_shrinker_new().
 *
 * Bad input: -EINVAL also for a NULL @ops->drop.
 */
RCL_API int rcl_shadow_limit_new(struct rcl_shrinker_registry *reg,
				 uint64_t quota, const struct rcl_shadow_ops *ops,
				 void *priv, struct rcl_shadow_limit **out);

/**
 * rcl_shadow_limit_add() - report shadows stored (> 0) or dropped (< 0)
 * @limit: the limit
 * @delta: the change
 *
 * Context: any thread; lock-free.
 *
 * Bad input: @limit NULL is a no-op.
 */
RCL_API void rcl_shadow_limit_add(struct rcl_shadow_limit *limit, int64_t delta);

/**
 * rcl_shadow_limit_count() - shadows currently reported
 * @limit: the limit
 *
 * Context: lock-free.
 * Return: the count; 0 for NULL.
 *
 * Bad input: 0 if more shadows were reported dropped than stored.
 */
RCL_API uint64_t rcl_shadow_limit_count(const struct rcl_shadow_limit *limit);

/**
 * rcl_shadow_limit_free() - unregister and free a limit
 * @limit: the limit; NULL is a no-op
 *
 * Context: as rcl_shrinker_free().
 * Return: as rcl_shrinker_free().
 */
RCL_API int rcl_shadow_limit_free(struct rcl_shadow_limit *limit);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_WORKINGSET_H */
