/* SPDX-License-Identifier: MIT */
/**
 * DOC: lruvec - intrusive active/inactive LRU lists
 *
 * An lruvec is one partition of one cache: for each LRU *type* (up to
 * RCL_LRU_MAX_TYPES; by default two, "file" - cheap to recreate - and "anon" -
 * expensive) an inactive and an active list, plus one unevictable list for
 * pinned objects.  A cache that shards itself (by hash, or one shard per NUMA
 * node) uses one lruvec per shard; each lruvec has its own lock.
 *
 * Ownership model.  The application owns its objects and embeds a
 * &struct rcl_lru_node in each one; the library never allocates per object.
 * The application also owns the &struct rcl_lruvec, which it may embed in its
 * own structures.  Objects carry a *weight* in the application's unit (bytes,
 * pages, or 1 per object), so every list's size is known in objects and in
 * weight.  Adding a node does not charge any budget.
 *
 * Aging follows the kernel's second-chance rule (mark_accessed): a first access
 * sets *referenced*, a second access while inactive activates.  Reclaim takes
 * objects from the inactive tail (rcl_lruvec_shrink_inactive()) and asks the
 * application's evict callback what to do with each; rcl_lruvec_shrink_active()
 * refills the inactive list from the active tail.
 *
 * **The locking rule.  No library lock is held while an application callback
 * runs.**  Reclaim isolates a batch of at most RCL_LRU_BATCH_ISOLATE nodes
 * under the lruvec lock, drops the lock, calls the callback for each node, and
 * takes the lock again to put the survivors back.  A callback may therefore
 * take the application's own locks and may call back into the library (see
 * &struct rcl_lruvec_ops for what it may call).
 *
 * Per-thread batching.  Adds and activations go through a small per-thread
 * batch (RCL_LRU_PERTHREAD_BATCH entries, the kernel's per-CPU folio_batch)
 * and reach the lists when the batch fills, before the calling thread
 * isolates, on rcl_lru_drain_local() / rcl_lruvec_drain(), and when the thread
 * exits.  Until then a node is *pending*: it belongs to its lruvec (del, and a
 * second add, behave as for a listed node) but is not yet counted in the
 * lists.  Use %RCL_LRU_ADD_NOBATCH, or a drain, when counts must be exact.
 * Thread exit drains from a pthread key destructor.  Adds and activations
 * from the application's key destructors that run after it go unbatched.
 * The one batch no destructor drains is one a thread first makes from a key
 * destructor in the last round of them (PTHREAD_DESTRUCTOR_ITERATIONS, where
 * a value set is never destroyed): its nodes stay pending after the thread
 * is gone, until the next rcl_lruvec_drain() or rcl_lruvec_destroy() (any
 * lruvec), which lists them and frees that batch.  In the child of a
 * fork(), the batches of the parent's other threads are such batches too.
 *
 * Object lifetime.  Once rcl_lruvec_del() has returned 0 the library holds no
 * reference to the node: it is on no list, in no thread's batch, and not
 * isolated, so the application may free it.  A node that a reclaimer has
 * isolated cannot be deleted: rcl_lruvec_del() returns -EBUSY and
 * rcl_lruvec_del_wait() waits until the reclaimer puts it back.  The reclaimer
 * presents every isolated node to the evict callback exactly once, and the
 * callback decides, under the application's own lock, whether the object can
 * go.  The race between a lookup in the application's index and reclaim is
 * therefore settled by the application's own pin (try-get) protocol:
 *
 * .. code-block:: c
 *
 *	struct obj { struct rcl_lru_node lru; atomic_int refs; bool hashed; ... };
 *
 *	// lookup: find under the bucket lock, pin, then age the object
 *	lock(bucket); o = find(key); if (o) atomic_fetch_add(&o->refs, 1); unlock(bucket);
 *	if (o) rcl_lruvec_mark_accessed(lv, &o->lru);
 *
 *	// evict callback: the object may go only if nobody else holds it
 *	static enum rcl_evict_status evict(struct rcl_lru_node *n, struct rcl_evict_control *ctl)
 *	{
 *		struct obj *o = rcl_container_of(n, struct obj, lru);
 *		lock(bucket_of(o));
 *		if (!o->hashed || atomic_load(&o->refs) != 1) {	// pinned, or being deleted
 *			unlock(bucket_of(o));
 *			return RCL_EVICT_BUSY;			// put back; deleter waits
 *		}
 *		unhash(o); unlock(bucket_of(o));
 *		free(o);				// node is not touched again
 *		return RCL_EVICT_FREED;
 *	}
 *
 *	// delete: unhash under the bucket lock (we now own the index's reference),
 *	// then take the node off the lruvec, waiting out a reclaimer if needed.
 *	lock(bucket); o = find(key); if (o) unhash(o); unlock(bucket);
 *	if (o) { rcl_lruvec_del_wait(lv, &o->lru); put(o); }
 *
 * Destroying an lruvec first drains every thread's batch entries that refer to
 * it; it fails with -EBUSY while objects are still on it or isolated from it.
 *
 * Usage:
 *
 * .. code-block:: c
 *
 *	static const struct rcl_lruvec_ops ops = { .evict = my_evict };
 *	struct rcl_lruvec_config cfg = { .ops = &ops, .priv = my_cache };
 *	struct rcl_lruvec lv;
 *	rcl_lruvec_init(&lv, &cfg);
 *	rcl_lruvec_add(&lv, &obj->lru, RCL_LRU_FILE, obj_size, 0);
 *	rcl_lruvec_mark_accessed(&lv, &obj->lru);	// on every cache hit
 *	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE, .nr_to_scan = 64 };
 *	if (rcl_lruvec_inactive_is_low(&lv, RCL_LRU_FILE))
 *		rcl_lruvec_shrink_active(&lv, &sc);
 *	rcl_lruvec_shrink_inactive(&lv, &sc);	// sc.nr_freed, sc.weight_freed
 *	rcl_lruvec_del(&lv, &obj->lru);		// when the application drops obj
 *	rcl_lruvec_destroy(&lv);
 *
 * Synchronization.  Every function is thread-safe.  The table lists what each
 * takes; "lruvec" is the lruvec's mutex, "batch" the calling thread's batch
 * lock (a spinning lock held for a few entries at most; other threads'
 * batch locks are taken only by the calls marked "all batches"), and "none"
 * means atomics on the node only.
 *
 * =================================  ==========================================
 * function                           locks taken
 * =================================  ==========================================
 * rcl_lruvec_init / _destroy         global id table; destroy: all batches,
 *                                    lruvec.  Not concurrent with other calls
 *                                    on the same lruvec.
 * rcl_lruvec_add                     batch (lruvec when the batch fills or
 *                                    with RCL_LRU_ADD_NOBATCH)
 * rcl_lruvec_mark_accessed           none; batch on a second touch
 * rcl_lruvec_del / _del_wait         lruvec; all batches if the node is queued
 * rotate / deactivate / unevictable  lruvec; all batches if the node is pending
 * rcl_lruvec_isolate / _putback      batch (drain), lruvec
 * rcl_lru_isolated_remove            lruvec; all batches if the node has a
 *                                    stale activation entry
 * rcl_lruvec_shrink_inactive         batch (drain), lruvec; released around
 *                                    each evict callback
 * rcl_lruvec_shrink_active           lruvec, in chunks of RCL_LRU_BATCH_ISOLATE
 * rcl_lruvec_count / _stats          none (lock-free reads, may be stale)
 * rcl_lruvec_inactive_is_low         none (lock-free reads, may be stale)
 * rcl_lru_drain_local                batch, lruvec(s)
 * rcl_lruvec_drain                   all batches, lruvec
 * =================================  ==========================================
 *
 * Lock order: global batch registry > a thread's batch > an lruvec.  No
 * library lock is held while a callback runs.
 */
#ifndef RECLAIM_LRUVEC_H
#define RECLAIM_LRUVEC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reclaim/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Constants                                                                  */
/* ------------------------------------------------------------------------- */

/** Maximum number of LRU types per lruvec. */
#define RCL_LRU_MAX_TYPES 4
/** The default type 0: cheap to recreate (the kernel's file LRU). */
#define RCL_LRU_FILE 0u
/** The default type 1: expensive to recreate (the kernel's anon LRU). */
#define RCL_LRU_ANON 1u

/**
 * RCL_LRU_LIST() - index of the inactive (@active = 0) or active (@active = 1)
 * list of type @type, as used by rcl_lruvec_count() and rcl_lruvec_isolate().
 */
#define RCL_LRU_LIST(type, active) (2u * (unsigned)(type) + ((active) ? 1u : 0u))
/** Index of the unevictable list (shared by all types). */
#define RCL_LRU_UNEVICTABLE (2u * RCL_LRU_MAX_TYPES)
/** Number of list indices. */
#define RCL_LRU_NR_LISTS (RCL_LRU_UNEVICTABLE + 1u)

/** Entries in a thread's add/activate batch (the kernel's PAGEVEC_SIZE). */
#define RCL_LRU_PERTHREAD_BATCH 31
/** Nodes isolated under one lock hold (the kernel's SWAP_CLUSTER_MAX). */
#define RCL_LRU_BATCH_ISOLATE 32
/** Number of lruvecs that may exist at the same time (ids 1..65535). */
#define RCL_LRUVEC_MAX_IDS 65535u

/* ------------------------------------------------------------------------- */
/* The node the application embeds                                            */
/* ------------------------------------------------------------------------- */

/**
 * struct rcl_lru_node - the per-object LRU node, embedded in the object
 *
 * 24 bytes on LP64.  Its layout is frozen for SONAME 0.  A node filled with
 * zero bytes (static storage, calloc, RCL_LRU_NODE_INIT, rcl_lru_node_init())
 * is a valid idle node; a node with indeterminate content must not be passed
 * to the library.  The flag word has room for what later modules store in
 * it: the dirty, writeback and reclaim-when-clean bits, a workingset bit, the
 * type, and the 16-bit id of the lruvec the node belongs to.
 *
 * All members are private.  Read the state with rcl_lru_node_flags().
 */
struct rcl_lru_node {
	/* These are for internal use */
	struct rcl_lru_node *__next;
	struct rcl_lru_node *__prev;
	RCL__ATOMIC(uint32_t) __flags;
	uint32_t __weight;
};

/** Static initialiser for an idle node. */
#define RCL_LRU_NODE_INIT { NULL, NULL, 0, 0 }

/* Public bits of rcl_lru_node_flags(). */
#define RCL_LRU_F_ACTIVE       (1u << 2)  /**< on (or bound for) an active list */
#define RCL_LRU_F_UNEVICTABLE  (1u << 3)  /**< on (or bound for) the unevictable list */
#define RCL_LRU_F_PENDING      (1u << 4)  /**< in an add batch, not yet listed */
#define RCL_LRU_F_LISTED       (1u << 5)  /**< on one of the lruvec's lists */
#define RCL_LRU_F_ISOLATED     (1u << 6)  /**< isolated by a reclaimer */
#define RCL_LRU_F_REFERENCED   (1u << 8)  /**< accessed since last aged */
#define RCL_LRU_F_WORKINGSET   (1u << 9)  /**< was active once (deactivated) */
#define RCL_LRU_F_DIRTY        (1u << 10) /**< dirty (flusher.h) */
#define RCL_LRU_F_WRITEBACK    (1u << 11) /**< under writeback (flusher.h) */
#define RCL_LRU_F_RECLAIM      (1u << 12) /**< reclaim when clean (flusher.h) */

/* ------------------------------------------------------------------------- */
/* Callbacks                                                                  */
/* ------------------------------------------------------------------------- */

struct rcl_lruvec;

/**
 * enum rcl_evict_status - the evict callback's answer for one object
 * @RCL_EVICT_FREED: the application has removed the object from its cache
 *	(and typically freed it).  The library does not touch the node again;
 *	to reuse the memory as a node, initialise it again.
 * @RCL_EVICT_BUSY: keep the object (it is pinned, locked, or being deleted).
 *	It goes back to the head of its inactive list (counted as rotated).
 * @RCL_EVICT_ACTIVATE: keep the object and move it to the active list
 *	(counted as activated).
 */
enum rcl_evict_status {
	RCL_EVICT_FREED = 0,
	RCL_EVICT_BUSY = 1,
	RCL_EVICT_ACTIVATE = 2,
};

/** Input flag of &struct rcl_evict_control: the object was accessed once. */
#define RCL_EVICT_REFERENCED (1u << 0)
/** Input flag: the object was active before (it carries the workingset bit). */
#define RCL_EVICT_WORKINGSET (1u << 1)
/**
 * Input flag: the object is dirty.  Only with RCL_LRU_SHRINK_WRITE_DIRTY
 * (the pre-2017 baseline where reclaim writes): the callback must write the
 * object itself before it answers FREED.  A synchronous write keeps the
 * object's memory until the write is durable; &rcl_lruvec_ops.batch_end can
 * make that one sync per batch.
 * Never set otherwise: dirty objects do not reach the evict callback (see
 * flusher.h).
 */
#define RCL_EVICT_DIRTY (1u << 2)

/**
 * struct rcl_evict_control - what the evict callback is told, by pointer
 * @lruvec: the lruvec the node was isolated from
 * @priv: the @priv of the lruvec's configuration
 * @type: the node's LRU type
 * @weight: the node's weight
 * @flags: RCL_EVICT_REFERENCED, RCL_EVICT_WORKINGSET, RCL_EVICT_DIRTY
 * @priority: the reclaim priority of the caller (12 = gentle .. 0 = all)
 * @context: the caller's reclaim-context mask (see later modules), passed
 *	through unchanged
 * @shadow: the shadow of this eviction (workingset.h): if the callback
 *	answers FREED, it may store this value in place of the object and pass
 *	it back to rcl_lruvec_add_refault() when the key is missed later
 *
 * The library allocates this struct for each call; new members are only
 * added at the end, so the callback's signature never changes.
 */
struct rcl_evict_control {
	struct rcl_lruvec *lruvec;
	void *priv;
	unsigned type;
	uint32_t weight;
	unsigned flags;
	int priority;
	uint64_t context;
	uint64_t shadow;
};

/**
 * struct rcl_evict_item - one object of a batched eviction (&rcl_lruvec_ops.evict_batch)
 * @node: the isolated node, claimed for eviction
 * @ctl: what &rcl_lruvec_ops.evict would be told about it
 * @status: the callback's answer for it, preset to RCL_EVICT_BUSY (keep)
 */
struct rcl_evict_item {
	struct rcl_lru_node *node;
	struct rcl_evict_control ctl;
	enum rcl_evict_status status;
};

/**
 * struct rcl_lruvec_ops - the application's callbacks for one lruvec
 * @evict: called by rcl_lruvec_shrink_inactive() for each isolated node, with
 *	no library lock held.  It may take the application's locks and may call
 *	rcl_lruvec_add(), _del(), _mark_accessed() and the other list
 *	operations (rotate, deactivate, unevictable, set_dirty, writeback
 *	start and end) on *other* nodes, of this or any lruvec; any read-only
 *	function; rcl_lruvec_drain(); rcl_lruvec_shrink_inactive() and
 *	_shrink_active() on any lruvec, this one included (nodes isolated
 *	already are not met again; the callback bounds its own recursion);
 *	and rcl_domain_charge() / _uncharge() (domain.h).  It must not call
 *	rcl_lruvec_destroy() on the lruvec being shrunk, nor
 *	rcl_lruvec_del_wait() on a node that is isolated or under writeback,
 *	nor rcl_lruvec_set_dirty() on a node in an evict callback's hands
 *	(flusher.h), nor rcl_domain_reclaim() on the domain the lruvec is
 *	attached to: from any evict callback these return -EDEADLK rather than
 *	wait or recurse.  rcl_lruvec_del() on the node being evicted, or on
 *	another node of its batch, returns -EBUSY.
 *	Conversely, it must not wait for a thread that may be inside
 *	rcl_lruvec_del_wait() or rcl_lruvec_set_dirty() for the node it judges
 *	or another node of its batch, which reclaim holds until the batch is
 *	put back (use a trylock on a lock such a thread may hold).  It may block for a
 *	long time: only rcl_lruvec_del_wait() and rcl_lruvec_set_dirty() on
 *	the nodes of its batch, and rcl_domain_detach() of its lruvec during a
 *	domain pass, wait for it.
 * @batch_end: optional; called by rcl_lruvec_shrink_inactive() once per
 *	isolation pass that scanned at least one node (a batch of at most
 *	RCL_LRU_BATCH_ISOLATE nodes), after the pass's evict callbacks, in the
 *	same thread, once the batch's kept nodes are back on the lists and with
 *	no library lock held, with @priv of the configuration and the number of
 *	nodes the batch's callbacks answered FREED.  That may be 0, also when
 *	no evict callback ran (every node scanned was activated, dirty or under
 *	writeback).  It is where an application does, once per batch, work its
 *	evict callbacks deferred: free the batch's objects together, wait for
 *	one RCU grace period, or one fdatasync() of the writes they made (the
 *	kernel's shrink_folio_list() flushes the TLB and frees its folios once
 *	per batch the same way).  The library does not touch the freed nodes
 *	again, so their memory may be released here rather than in @evict.
 *	The answers are final: an object answered FREED whose deferred work
 *	fails is the application's to add back or dirty again.  It runs under
 *	the rules of @evict (what it may call, and the -EDEADLK returns those
 *	calls give from an evict callback) and may block as @evict may.  The
 *	batch's statistics and the control's outputs (nr_freed, ...) are
 *	updated after it returns.  Nesting: a
 *	shrink started from inside @evict runs its own batches, with their own
 *	@batch_end calls, before the outer batch ends; work deferred per thread
 *	must be kept per nesting level (or done early, if that is harmless).
 *
 * @evict_batch: optional; the batched form of @evict, for caches that can
 *	judge and free a batch at once (one lock round trip, one free of many
 *	objects).  When set, rcl_lruvec_shrink_inactive() calls it once per
 *	isolation pass instead of calling @evict for each node (@evict may then
 *	be NULL; if both are set, @evict is not called by the shrink), with the
 *	pass's claimed nodes in @items[0..@nr-1], @nr >= 1 and at most
 *	RCL_LRU_BATCH_ISOLATE, oldest first.  Each item carries what @evict
 *	would have been told (&rcl_evict_item.ctl), except that every shadow
 *	of a batch holds the workingset clock of the batch's claim, where
 *	per-object calls see it advance by one per eviction before theirs: a
 *	refault is judged at a distance up to one batch (31) larger.  Each
 *	also holds its answer: &rcl_evict_item.status, preset to RCL_EVICT_BUSY,
 *	which the callback sets to RCL_EVICT_FREED for every object it removed
 *	(and to RCL_EVICT_ACTIVATE where it wants one), exactly as @evict's
 *	return value.  After it returns, the library reads only @items (never a
 *	node answered FREED), puts the kept nodes back, then calls @batch_end
 *	(if set) with the number answered FREED, as after per-object calls:
 *	@evict_batch judges and may free, @batch_end does the batch's deferred
 *	work; a cache may use either or both.  Nodes that are dirty or under
 *	writeback are not in @items (flusher.h), as they never reach @evict;
 *	with RCL_LRU_SHRINK_WRITE_DIRTY a dirty node is, with
 *	RCL_EVICT_DIRTY in its ctl.flags.  It runs under the rules of @evict:
 *	no library lock held, the same calls allowed and refused (-EDEADLK),
 *	and rcl_lruvec_del() of any node in @items returns -EBUSY.  @items is
 *	the library's (on the reclaiming thread's stack) and is valid only
 *	during the call.
 *
 * The table is normally `static const`; initialise it by member names.  The
 * library reads it, so it grows only at the end, and until the first stable
 * release (version 1.0, soname 1) a program built against an older header
 * must be rebuilt when it does (@batch_end was added in 0.1.0's development).
 */
struct rcl_lruvec_ops {
	enum rcl_evict_status (*evict)(struct rcl_lru_node *node,
				       struct rcl_evict_control *ctl);
	void (*batch_end)(struct rcl_lruvec *lv, void *priv, size_t nr_freed);
	void (*evict_batch)(struct rcl_lruvec *lv, void *priv,
			    struct rcl_evict_item *items, size_t nr);
};

/* ------------------------------------------------------------------------- */
/* The lruvec                                                                 */
/* ------------------------------------------------------------------------- */

/** Length of a type's name, including the terminating NUL. */
#define RCL_LRU_TYPE_NAME_LEN 16

/**
 * struct rcl_lru_type_config - one LRU type
 * @name: name for statistics (copied, truncated to 15 bytes); NULL = "typeN"
 * @cost: relative cost to recreate one unit of weight (>= 1); the scan
 *	controller scans cheap types harder.  0 = 1.
 */
struct rcl_lru_type_config {
	const char *name;
	uint32_t cost;
};

/**
 * struct rcl_lruvec_config - creation parameters of an lruvec
 * @ops: callbacks; may be NULL if the lruvec is never shrunk with
 *	rcl_lruvec_shrink_inactive() (isolation still works)
 * @priv: passed to callbacks in &struct rcl_evict_control
 * @nr_types: number of types, 1..RCL_LRU_MAX_TYPES; 0 selects the default
 *	two types, "file" (cost 1) and "anon" (cost 2), and ignores @types
 * @types: the types, when @nr_types > 0
 * @weight_per_gib: how many units of weight make a GiB, for the
 *	inactive-ratio rule of rcl_lruvec_inactive_is_low(); 0 = 2^30 (weight
 *	is in bytes).  An application that counts pages of 4 KiB sets 262144.
 * @flags: RCL_LRUVEC_KERNEL, or 0; other bits are rejected with -EINVAL
 */
struct rcl_lruvec_config {
	const struct rcl_lruvec_ops *ops;
	void *priv;
	unsigned nr_types;
	struct rcl_lru_type_config types[RCL_LRU_MAX_TYPES];
	uint64_t weight_per_gib;
	unsigned flags;
};

/**
 * Flag of &rcl_lruvec_config.flags: kernel parity.  The inactive target stays
 * the kernel's ratio rule and a refault is activated only by its distance,
 * whatever refaults show (workingset.h).  Without it, an lruvec that is
 * given shadows back adapts its inactive target (docs/adaptive-target.md).
 */
#define RCL_LRUVEC_KERNEL (1u << 0)

/* private: one list and its sizes */
struct rcl__lru_list {
	struct rcl_lru_node head;
	RCL__ATOMIC(uint64_t) nr;
	RCL__ATOMIC(uint64_t) weight;
};

/**
 * struct rcl_lruvec_type_stats - cumulative counters of one type
 * @scanned: nodes examined at the inactive tail by
 *	rcl_lruvec_shrink_inactive() (the kernel's pgscan)
 * @freed: nodes the evict callback answered FREED for (pgsteal)
 * @weight_freed: their weight
 * @rotated: nodes put back to the inactive list by reclaim (BUSY answers)
 * @activated: nodes moved inactive -> active (second touch, ACTIVATE
 *	answers, and isolation finding a queued activation) (pgactivate);
 *	not a node whose second touch came while its add was still pending
 *	in a per-thread batch: it lands on the active list when the batch is
 *	drained, was never on the inactive one, and is not counted (nor does
 *	it age the workingset clock, where the kernel's folio_mark_accessed()
 *	ages it for a folio in its lru_add batch too)
 * @deactivated: nodes moved active -> inactive (pgdeactivate)
 * @refill_scanned: nodes examined on the active list (pgrefill)
 * @active_rotated: referenced active nodes given another trip on the active list
 */
struct rcl_lruvec_type_stats {
	uint64_t scanned;
	uint64_t freed;
	uint64_t weight_freed;
	uint64_t rotated;
	uint64_t activated;
	uint64_t deactivated;
	uint64_t refill_scanned;
	uint64_t active_rotated;
};

/* private: per-type state */
struct rcl__lru_type {
	char name[RCL_LRU_TYPE_NAME_LEN];
	uint32_t cost;
	RCL__ATOMIC(uint64_t) stat[8];	/* struct rcl_lruvec_type_stats order */
};

/**
 * struct rcl_lruvec - one partition of one cache
 *
 * Embeddable; initialise with rcl_lruvec_init(), tear down with
 * rcl_lruvec_destroy().  All members are private; the reserved words leave
 * room for later modules without a change of size.
 */
struct rcl_lruvec {
	/* These are for internal use */
	RCL__ATOMIC(uint32_t) __lock;	/* 0 free, 1 held, 2 held and waited for */
	RCL__ATOMIC(uint32_t) __putback; /* putbacks: del_wait's futex word */
	uint64_t __lock_reserved[10];	/* the size a pthread mutex and cond had */
	struct rcl__lru_list __lists[RCL_LRU_NR_LISTS];
	struct rcl__lru_type __types[RCL_LRU_MAX_TYPES];
	const struct rcl_lruvec_ops *__ops;
	void *__priv;
	uint64_t __weight_per_gib;
	RCL__ATOMIC(uint64_t) __nr_isolated;
	RCL__ATOMIC(uint32_t) __magic;
	uint32_t __nr_types;
	RCL__ATOMIC(uint32_t) __nr_waiters;
	uint16_t __id;
	uint16_t __pad16;
	RCL__ATOMIC(uint64_t) __cost[RCL_LRU_MAX_TYPES];	/* scan.h */
	RCL__ATOMIC(uint64_t) __dirty[4];	/* flusher.h: nr, weight x2 */
	RCL__ATOMIC(void *) __domain;		/* the domain attached to */
	RCL__ATOMIC(uint64_t) __ws[4];		/* workingset.h: age, counters */
	RCL__ATOMIC(uint64_t) __target;		/* workingset.h: inactive shares */
	RCL__ATOMIC(uint64_t) __ghost[RCL_LRU_MAX_TYPES]; /* workingset.h */
	uint32_t __flags;			/* RCL_LRUVEC_* */
	uint32_t __pad32;
	RCL__ATOMIC(uint64_t) __tiers;		/* workingset.h: tier-1 gate */
	uint64_t __reserved[1];
};

/** Flag of rcl_lruvec_add(): put the node on the active list. */
#define RCL_LRU_ADD_ACTIVE (1u << 0)
/** Flag of rcl_lruvec_add(): put the node on the unevictable list. */
#define RCL_LRU_ADD_UNEVICTABLE (1u << 1)
/** Flag of rcl_lruvec_add(): bypass the per-thread batch; listed on return. */
#define RCL_LRU_ADD_NOBATCH (1u << 2)

/**
 * rcl_lru_node_init() - make @node an idle node
 * @node: the node; NULL is ignored
 *
 * Equivalent to filling it with zero bytes.  Never call it on a node that is
 * on an lruvec, pending or isolated.
 *
 * Context: any thread; the caller owns @node.
 */
RCL_API void rcl_lru_node_init(struct rcl_lru_node *node);

/**
 * rcl_lru_node_flags() - a snapshot of a node's public state bits
 * @node: the node
 *
 * Context: lock-free; the snapshot may be stale by the time it is read.
 * Return: a mask of RCL_LRU_F_* bits; none of PENDING, LISTED, ISOLATED
 * for an idle node; 0 for NULL.
 */
RCL_API unsigned rcl_lru_node_flags(const struct rcl_lru_node *node);

/**
 * rcl_lru_node_type() - the LRU type a node was added with
 * @node: the node
 *
 * Context: lock-free.
 * Return: the type; 0 for an idle node and for NULL.
 */
RCL_API unsigned rcl_lru_node_type(const struct rcl_lru_node *node);

/**
 * rcl_lruvec_init() - initialise an lruvec.  Pair with rcl_lruvec_destroy().
 * @lv: the lruvec (application memory; its previous content is ignored)
 * @cfg: the configuration, or NULL for the defaults (two types, no ops)
 *
 * Assigns the lruvec an id (1..65535) unique among live lruvecs.
 *
 * Context: any thread; not concurrently with any other call on @lv.
 * Return: 0; -EINVAL if @lv is NULL, @cfg->nr_types exceeds
 * RCL_LRU_MAX_TYPES or @cfg->flags has an unknown bit; -ENOSPC if
 * RCL_LRUVEC_MAX_IDS lruvecs exist.  (The lruvec's lock is a futex word
 * of its own, lib/internal.h: nothing to create, so no -ENOMEM.)
 *
 * Bad input: Initialising a live lruvec again is not detected: its id stays
 * allocated for the life of the process.
 */
RCL_API int rcl_lruvec_init(struct rcl_lruvec *lv,
			    const struct rcl_lruvec_config *cfg);

/**
 * rcl_lruvec_destroy() - tear down an lruvec.  Pair with rcl_lruvec_init().
 * @lv: the lruvec
 *
 * First drains every thread's batch entries that refer to @lv (pending nodes
 * become listed).  Then, if any node is listed or isolated, the lruvec is left
 * intact and -EBUSY is returned: delete the objects first.  Destroying an
 * lruvec that is already destroyed is a no-op that returns 0; so is NULL.
 *
 * Context: any thread, not inside an evict callback of @lv; not
 * concurrently with any other call on @lv.  Takes all batches.
 * Return: 0; -EBUSY if the lruvec is not empty; -EDEADLK from an evict or
 * batch_end callback of a shrink of @lv, also where that shrink's callback
 * runs other shrinks and the call comes from theirs.
 *
 * Bad input: -EBUSY also while it is attached to a domain
 * (rcl_domain_detach() first). A zero-filled, never-initialised lruvec is
 * taken as destroyed (0).
 */
RCL_API int rcl_lruvec_destroy(struct rcl_lruvec *lv);

/**
 * rcl_lruvec_id() - the id of an lruvec, unique among live lruvecs
 * @lv: the lruvec
 *
 * Context: lock-free.
 * Return: 1..65535; 0 for NULL or an lruvec that is not initialised.
 */
RCL_API unsigned rcl_lruvec_id(const struct rcl_lruvec *lv);

/**
 * rcl_lruvec_add() - put an idle node on an lruvec
 * @lv: the lruvec
 * @node: an idle node (never added, or deleted, or answered FREED and
 *	re-initialised)
 * @type: its LRU type, < the lruvec's number of types
 * @weight: its size in the application's unit
 * @flags: RCL_LRU_ADD_ACTIVE, RCL_LRU_ADD_UNEVICTABLE, RCL_LRU_ADD_NOBATCH
 *
 * The node goes to the head of the inactive list of @type (the active list
 * with RCL_LRU_ADD_ACTIVE; the unevictable list with
 * RCL_LRU_ADD_UNEVICTABLE), through the calling thread's batch unless
 * RCL_LRU_ADD_NOBATCH is given.  It starts unreferenced.
 *
 * A node that is already on an lruvec - *any* lruvec, not only @lv - is
 * refused with -EBUSY and left where it is.
 *
 * The calling thread's batch is allocated on its first batched call; if
 * that allocation fails, the node is added as with RCL_LRU_ADD_NOBATCH
 * (listed on return), and the next batched call tries again.
 *
 * Context: any thread, including evict callbacks.
 * Return: 0; -EINVAL for NULL, an uninitialised lruvec, @type out of range
 * or an unknown flag; -EBUSY if the node is not idle.
 *
 * Bad input: @flags with both RCL_LRU_ADD_ACTIVE and RCL_LRU_ADD_UNEVICTABLE
 * is -EINVAL.
 */
RCL_API int rcl_lruvec_add(struct rcl_lruvec *lv, struct rcl_lru_node *node,
			   unsigned type, uint32_t weight, unsigned flags);

/**
 * rcl_lruvec_del() - take a node off its lruvec
 * @lv: the lruvec the node was added to
 * @node: the node
 *
 * Works on listed and pending nodes.  On success the node is idle and the
 * library holds no reference to it (it is in no thread's batch).
 *
 * Context: any thread, including evict callbacks; never blocks on a reclaimer.
 * Return: 0; -EINVAL for NULL or an uninitialised lruvec; -ENOENT if the node
 * is not on @lv (idle, or on another lruvec); -EBUSY if a reclaimer has it
 * isolated (nothing changes: retry after the reclaimer has put it back, or use
 * rcl_lruvec_del_wait()).
 *
 * Bad input: -EBUSY also for a node under writeback (flusher.h).
 */
RCL_API int rcl_lruvec_del(struct rcl_lruvec *lv, struct rcl_lru_node *node);

/**
 * rcl_lruvec_del_wait() - rcl_lruvec_del(), waiting out a reclaimer
 * @lv: the lruvec
 * @node: the node
 *
 * Like rcl_lruvec_del(), but if the node is isolated it waits until the
 * reclaimer puts it back and then deletes it, and if it is under writeback
 * (flusher.h) it waits for the end of the writeback.  If the evict callback
 * answers FREED for it meanwhile, the node's memory may be gone: the
 * application's pin protocol must prevent that (see the lifetime section
 * above).  Do not hold a lock that the evict callback takes while calling
 * this.
 *
 * The wait is not a cancellation point (a thread cancelled there would die
 * holding the lruvec lock): cancellation takes effect after the call.
 *
 * Context: any thread; may sleep.  Never for a node that the calling thread
 * holds in an isolated set of its own: it would wait for itself (this is not
 * detected outside evict callbacks).
 * Return: as rcl_lruvec_del(), but -EBUSY only as below; -EDEADLK if
 * called from any evict callback on a node that is isolated (conservatively, even if another
 * thread isolated it) or under writeback: a callback must not wait for a
 * write, which may itself wait for memory that reclaim is freeing.  Also
 * -EDEADLK from the write and sync callbacks of the library's write-back
 * (flusher.h) on such a node: the node being written would wait for the
 * end of its own writeback.
 *
 * Bad input: -EDEADLK also from a write callback (the flusher thread,
 * rcl_domain_writeback_all()) on a node that its own batch holds under
 * writeback.  -EBUSY only if the node's state changes under it 64 times in
 * a row, which takes another thread adding and deleting the same node at
 * once (the caller racing itself): it gives up rather than loop for ever.
 */
RCL_API int rcl_lruvec_del_wait(struct rcl_lruvec *lv,
				struct rcl_lru_node *node);

/**
 * rcl_lruvec_mark_accessed() - note an access (a cache hit)
 * @lv: the node's lruvec
 * @node: the node
 *
 * The kernel's two-touch rule: inactive unreferenced -> inactive referenced;
 * inactive referenced -> active unreferenced (queued through the thread's
 * batch); active unreferenced -> active referenced.  An access to an active,
 * referenced node (the hot path) reads the node and writes no shared memory.
 * Pending nodes are activated in place (they land on the active list);
 * isolated and unevictable nodes only get the referenced bit.
 *
 * Context: any thread; lock-free except on the activation step.
 * Return: 0; -EINVAL for NULL or an uninitialised lruvec; -ENOENT if the node
 * is not on @lv.
 */
RCL_API int rcl_lruvec_mark_accessed(struct rcl_lruvec *lv,
				     struct rcl_lru_node *node);

/**
 * rcl_lruvec_rotate() - move a node to the tail of its inactive list
 * @lv: the node's lruvec
 * @node: the node
 *
 * The next scan of the type meets it first (the kernel's
 * folio_rotate_reclaimable()).  An active node is deactivated; the
 * referenced bit is cleared.  A pending node is first drained to its list.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL or an uninitialised lruvec; -ENOENT if the node
 * is not on @lv; -EBUSY if it is isolated; -EPERM if it is unevictable.
 */
RCL_API int rcl_lruvec_rotate(struct rcl_lruvec *lv, struct rcl_lru_node *node);

/**
 * rcl_lruvec_deactivate() - move an active node to the head of its inactive list
 * @lv: the node's lruvec
 * @node: the node
 *
 * Clears the referenced bit and sets the workingset bit (the object was
 * active once).  An inactive node is left where it is (its referenced bit is
 * cleared).  A pending node is first drained to its list.
 *
 * Context: any thread.
 * Return: 0; -EINVAL, -ENOENT, -EBUSY, -EPERM as rcl_lruvec_rotate().
 */
RCL_API int rcl_lruvec_deactivate(struct rcl_lruvec *lv,
				  struct rcl_lru_node *node);

/**
 * rcl_lruvec_mark_unevictable() - pin a node: move it to the unevictable list
 * @lv: the node's lruvec
 * @node: the node
 *
 * Reclaim never scans the unevictable list.  Idempotent.
 *
 * Context: any thread.
 * Return: 0; -EINVAL, -ENOENT, -EBUSY as rcl_lruvec_rotate().
 */
RCL_API int rcl_lruvec_mark_unevictable(struct rcl_lruvec *lv,
					struct rcl_lru_node *node);

/**
 * rcl_lruvec_unmark_unevictable() - unpin a node: back to its inactive list head
 * @lv: the node's lruvec
 * @node: the node
 *
 * Idempotent: a node that is not unevictable is left where it is.
 *
 * Context: any thread.
 * Return: 0; -EINVAL, -ENOENT, -EBUSY as rcl_lruvec_rotate().
 */
RCL_API int rcl_lruvec_unmark_unevictable(struct rcl_lruvec *lv,
					  struct rcl_lru_node *node);

/**
 * rcl_lruvec_count() - the size of one list
 * @lv: the lruvec
 * @list: RCL_LRU_LIST(type, active) or RCL_LRU_UNEVICTABLE
 * @weight: if not NULL, receives the list's weight
 *
 * Pending nodes are not counted until drained; isolated nodes are counted by
 * rcl_lruvec_nr_isolated().
 *
 * Context: lock-free; may be slightly stale while other threads work.
 * Return: the number of nodes on the list; 0 (and *@weight = 0) for NULL, an
 * uninitialised lruvec or a list index out of range.
 *
 * Bad input: The index of a type the lruvec does not have is an empty list
 * (0).
 */
RCL_API size_t rcl_lruvec_count(const struct rcl_lruvec *lv, unsigned list,
				uint64_t *weight);

/**
 * rcl_lruvec_nr_isolated() - nodes currently isolated from an lruvec
 * @lv: the lruvec
 *
 * Context: lock-free; may be stale.
 * Return: the number of isolated nodes; 0 for NULL.
 *
 * Bad input: 0 for NULL or an uninitialised lruvec.
 */
RCL_API size_t rcl_lruvec_nr_isolated(const struct rcl_lruvec *lv);

/**
 * rcl_lruvec_nr_types() - the number of LRU types of an lruvec
 * @lv: the lruvec
 *
 * Context: lock-free.
 * Return: 1..RCL_LRU_MAX_TYPES; 0 for NULL or an uninitialised lruvec.
 */
RCL_API unsigned rcl_lruvec_nr_types(const struct rcl_lruvec *lv);

/**
 * rcl_lruvec_type_name() - the name of an LRU type
 * @lv: the lruvec
 * @type: the type
 *
 * Context: lock-free.
 * Return: the name (owned by @lv); NULL for bad arguments.
 */
RCL_API const char *rcl_lruvec_type_name(const struct rcl_lruvec *lv,
					 unsigned type);

/**
 * rcl_lruvec_type_cost() - the relative cost of an LRU type
 * @lv: the lruvec
 * @type: the type
 *
 * Context: lock-free.
 * Return: the cost (>= 1); 0 for bad arguments.
 */
RCL_API uint32_t rcl_lruvec_type_cost(const struct rcl_lruvec *lv,
				      unsigned type);

/**
 * rcl_lruvec_stats() - a snapshot of one type's cumulative counters
 * @lv: the lruvec
 * @type: the type
 * @out: receives the counters
 *
 * Context: lock-free; the counters are read one by one.
 * Return: 0; -EINVAL for NULL, an uninitialised lruvec or @type out of range.
 */
RCL_API int rcl_lruvec_stats(const struct rcl_lruvec *lv, unsigned type,
			     struct rcl_lruvec_type_stats *out);

/**
 * rcl_lruvec_inactive_ratio() - the target active:inactive ratio of a type
 * @lv: the lruvec
 * @type: the type
 *
 * The kernel's sqrt rule: with gb = (inactive + active weight of @type) in
 * GiB (see &rcl_lruvec_config.weight_per_gib), the ratio is
 * int_sqrt(10 * gb), or 1 below 1 GiB.  So 1 GiB -> 3, 10 GiB -> 10,
 * 100 GiB -> 31, 1 TiB -> 101.
 *
 * Context: lock-free; may be stale.
 * Return: the ratio (>= 1); 0 for bad arguments.
 */
RCL_API unsigned rcl_lruvec_inactive_ratio(const struct rcl_lruvec *lv,
					   unsigned type);

/**
 * rcl_lruvec_inactive_is_low() - should the active list of a type be aged?
 * @lv: the lruvec
 * @type: the type
 *
 * True when inactive_weight * rcl_lruvec_inactive_ratio() < active_weight:
 * below 1 GiB the inactive list is kept at least as large as the active one.
 * Once the type has an adaptive target (rcl_lruvec_inactive_target(),
 * workingset.h), true when the inactive weight is below that share of the
 * type's weight, or the inactive list is empty while the active one is not.
 *
 * Context: lock-free; may be stale.
 * Return: the answer; false for bad arguments.
 */
RCL_API bool rcl_lruvec_inactive_is_low(const struct rcl_lruvec *lv,
					unsigned type);

/* ------------------------------------------------------------------------- */
/* Isolation and putback                                                      */
/* ------------------------------------------------------------------------- */

/**
 * struct rcl_lru_isolated - a set of nodes isolated from one lruvec
 * @nr: number of nodes in the set (read-only for the application)
 * @weight: their weight (read-only)
 * @nr_scanned: nodes examined by the last rcl_lruvec_isolate() (read-only)
 *
 * Caller-allocated (usually on the stack); initialise with
 * rcl_lru_isolated_init().  The nodes of the
 * set are in the caller's hands: nobody else can delete or move them until
 * they are put back or taken out.
 */
struct rcl_lru_isolated {
	/* These are for internal use */
	struct rcl_lru_node __head;
	struct rcl_lruvec *__lv;
	/* read-only */
	size_t nr;
	uint64_t weight;
	size_t nr_scanned;
};

/**
 * rcl_lru_isolated_init() - initialise an empty isolated set
 * @iso: the set
 *
 * Context: the caller owns @iso.
 *
 * Bad input: NULL is ignored. Never call it on a set that holds nodes: they
 * would stay isolated for ever.
 */
RCL_API void rcl_lru_isolated_init(struct rcl_lru_isolated *iso);

/**
 * rcl_lruvec_isolate() - take nodes from a list's tail for reclaim
 * @lv: the lruvec
 * @list: RCL_LRU_LIST(type, active); the unevictable list cannot be isolated
 * @nr_to_scan: maximum number of nodes to take
 * @iso: an initialised set, empty (it may have served another lruvec) or
 *	holding nodes of @lv; nodes are appended
 *
 * First drains the calling thread's batch.  Then, under the lruvec lock, takes
 * up to @nr_to_scan nodes from the tail of @list and marks them isolated.  On
 * an inactive list, a node with a queued activation (accessed twice) is
 * activated instead of taken; it still counts towards @nr_to_scan and
 * @iso->nr_scanned.  The lock is dropped in chunks of RCL_LRU_BATCH_ISOLATE.
 *
 * Context: any thread.  Pair with rcl_lruvec_putback().
 * Return: 0 (@iso->nr grows by the number taken, possibly 0); -EINVAL for
 * NULL, an uninitialised lruvec, a bad list index, or @iso holding nodes of
 * another lruvec.
 *
 * Bad input: -EINVAL also for a set not passed to rcl_lru_isolated_init()
 * first.
 */
RCL_API int rcl_lruvec_isolate(struct rcl_lruvec *lv, unsigned list,
			       size_t nr_to_scan, struct rcl_lru_isolated *iso);

/**
 * rcl_lru_isolated_next() - iterate over an isolated set
 * @iso: the set
 * @pos: the previous node, or NULL to start
 *
 * Do not remove @pos while iterating from it; fetch the next node first.
 *
 * Context: the caller owns @iso.
 * Return: the next node (oldest first), or NULL at the end.
 *
 * Bad input: NULL for NULL or an uninitialised set.
 */
RCL_API struct rcl_lru_node *rcl_lru_isolated_next(struct rcl_lru_isolated *iso,
						   struct rcl_lru_node *pos);

/**
 * rcl_lru_isolated_remove() - take a node out of the set for good
 * @iso: the set
 * @node: a node of the set
 *
 * The node becomes idle; the library forgets it (the caller typically frees
 * it).  Threads waiting in rcl_lruvec_del_wait() for it are woken (and get
 * -ENOENT).  Passing a node of another set of the same lruvec is undefined
 * (it cannot be detected cheaply).  A node under writeback (flusher.h) stays
 * in the set: its writer holds it until rcl_lruvec_writeback_end().
 *
 * Context: the caller owns @iso; takes the lruvec lock, and all batches if
 * the node still has a stale activation entry.
 * Return: 0; -EINVAL for NULL or a node that is not isolated in a set;
 * -EBUSY if the node is under writeback (nothing changes).
 */
RCL_API int rcl_lru_isolated_remove(struct rcl_lru_isolated *iso,
				    struct rcl_lru_node *node);

/**
 * rcl_lru_isolated_set_active() - choose where a node goes on putback
 * @iso: the set
 * @node: a node of the set
 * @active: true for the active list, false for the inactive list
 *
 * Nodes keep the list they were taken from unless this is called.  Activating
 * clears the referenced bit; deactivating sets the workingset bit.
 *
 * Context: the caller owns @iso.
 * Return: 0; -EINVAL for NULL or a node that is not isolated.
 *
 * Bad input: A node of another set of the same lruvec is not detected (it
 * cannot be, cheaply); do not pass one.
 */
RCL_API int rcl_lru_isolated_set_active(struct rcl_lru_isolated *iso,
					struct rcl_lru_node *node, bool active);

/**
 * rcl_lruvec_putback() - return every node of an isolated set to its list
 * @lv: the lruvec the nodes were isolated from
 * @iso: the set; empty on return
 *
 * Each node goes to the head of its inactive or active list (see
 * rcl_lru_isolated_set_active()).  Threads waiting in rcl_lruvec_del_wait()
 * are woken.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL or a set that holds nodes of another lruvec.
 *
 * Bad input: -EINVAL for an uninitialised set; 0 for an empty set, whatever
 * lruvec it served.
 */
RCL_API int rcl_lruvec_putback(struct rcl_lruvec *lv,
			       struct rcl_lru_isolated *iso);

/* ------------------------------------------------------------------------- */
/* The two reclaim primitives                                                 */
/* ------------------------------------------------------------------------- */

/**
 * struct rcl_lru_shrink_control - parameters and results of a shrink call
 * @type: in: the LRU type to shrink
 * @nr_to_scan: in: how many nodes to take from the list's tail
 * @priority: in: passed to the evict callback (informational here)
 * @context: in: the reclaim-context mask, passed to the evict callback
 * @nr_scanned: out (added to): nodes examined
 * @nr_taken: out (added to): nodes isolated and presented to the callback
 * @nr_freed: out (added to): FREED answers
 * @weight_freed: out (added to): weight of the freed nodes
 * @nr_rotated: out (added to): BUSY answers (inactive), or referenced active
 *	nodes given another trip (active)
 * @nr_activated: out (added to): ACTIVATE answers and queued activations met
 * @nr_deactivated: out (added to): active nodes moved to the inactive list
 * @flags: in: RCL_LRU_SHRINK_WRITE_DIRTY
 * @nr_dirty: out (added to): dirty or writeback nodes met (flusher.h)
 * @nr_unqueued_dirty: out (added to): dirty nodes not under writeback
 * @nr_writeback: out (added to): nodes under writeback
 * @nr_immediate: out (added to): writeback nodes met a second time
 *
 * Outputs accumulate, so one control can be passed to several calls (the
 * kernel's scan_control); zero them before the first.
 */
struct rcl_lru_shrink_control {
	unsigned type;
	size_t nr_to_scan;
	int priority;
	uint64_t context;

	size_t nr_scanned;
	size_t nr_taken;
	size_t nr_freed;
	uint64_t weight_freed;
	size_t nr_rotated;
	size_t nr_activated;
	size_t nr_deactivated;
	unsigned flags;
	size_t nr_dirty;
	size_t nr_unqueued_dirty;
	size_t nr_writeback;
	size_t nr_immediate;

	/* These are for internal use: room for later inputs and outputs */
	uint64_t __reserved[3];
};

/**
 * Shrink flag: hand dirty objects to the evict callback (RCL_EVICT_DIRTY),
 * which writes them synchronously - what reclaim did before the kernel's
 * 2017 series.  For comparisons only.
 */
#define RCL_LRU_SHRINK_WRITE_DIRTY (1u << 0)

/**
 * rcl_lruvec_shrink_inactive() - reclaim from the tail of an inactive list
 * @lv: the lruvec
 * @sc: the control; @sc->type and @sc->nr_to_scan are read
 *
 * Drains the calling thread's batch, then repeatedly isolates up to
 * RCL_LRU_BATCH_ISOLATE nodes from the inactive tail of @sc->type, drops the
 * lock, and calls the evict callback for each node (oldest first).  FREED
 * nodes are forgotten; BUSY nodes return to the inactive head; ACTIVATE nodes
 * go to the active head; then the optional batch_end callback runs (see
 * &struct rcl_lruvec_ops).  Stops after @sc->nr_to_scan nodes or when the
 * list is empty.  An adaptive lruvec (not RCL_LRUVEC_KERNEL) may also
 * activate a referenced clean node at the tail instead of isolating it, while
 * objects evicted referenced refault at a clearly higher rate than the
 * others (docs/adaptive-target.md, "Tiers"); it counts as scanned and
 * activated.
 *
 * Context: any thread, including an evict callback of another lruvec; calls
 * the evict callback with no library lock held.
 * Return: 0; -EINVAL for NULL, an uninitialised lruvec, a type out of range
 * or an lruvec without an evict callback.
 *
 * Bad input: @sc->nr_to_scan is the only bound: objects answered BUSY are met
 * again, so do not pass SIZE_MAX to mean everything. Unknown @sc->flags bits
 * are ignored.
 */
RCL_API int rcl_lruvec_shrink_inactive(struct rcl_lruvec *lv,
				       struct rcl_lru_shrink_control *sc);

/**
 * rcl_lruvec_shrink_active() - age the active list: refill the inactive list
 * @lv: the lruvec
 * @sc: the control; @sc->type and @sc->nr_to_scan are read
 *
 * Scans up to @sc->nr_to_scan nodes from the active tail of @sc->type.  The
 * rule for referenced nodes: a node accessed since it was last scanned
 * (referenced bit set) loses the bit and goes back to the active head, once
 * (the active list is a CLOCK, as in the kernel before 2.6.28 for unmapped
 * pages; the kernel now deactivates unmapped pages unconditionally); a node
 * without the bit is deactivated to the inactive head and gets the workingset
 * bit.  In an adaptive lruvec (not RCL_LRUVEC_KERNEL), a node referenced
 * again while active already referenced keeps a second reference, which
 * buys it one more rotation.  No callback runs; the lock is dropped every
 * RCL_LRU_BATCH_ISOLATE nodes.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL, an uninitialised lruvec or a type out of range.
 */
RCL_API int rcl_lruvec_shrink_active(struct rcl_lruvec *lv,
				     struct rcl_lru_shrink_control *sc);

/* ------------------------------------------------------------------------- */
/* Batches                                                                    */
/* ------------------------------------------------------------------------- */

/**
 * rcl_lru_drain_local() - drain the calling thread's batch into the lists
 *
 * Context: any thread.
 */
RCL_API void rcl_lru_drain_local(void);

/**
 * rcl_lruvec_drain() - drain every thread's batch entries for an lruvec
 * @lv: the lruvec
 *
 * Afterwards no batch refers to @lv and rcl_lruvec_count() is exact (until
 * the next add).  Costs one lock round per live thread that has used the
 * library: use it for explicit drain points, not on a hot path.  It also
 * lists the nodes of, and frees, any batch whose thread ended without
 * draining it (see "Per-thread batching" above), whatever lruvec they are on.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL or an uninitialised lruvec.
 */
RCL_API int rcl_lruvec_drain(struct rcl_lruvec *lv);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_LRUVEC_H */
