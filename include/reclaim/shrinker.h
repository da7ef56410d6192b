/* SPDX-License-Identifier: MIT */
/**
 * DOC: shrinker - caches that are not on an lruvec, shrunk in proportion
 *
 * Most of an application's memory is not in one LRU: indexes, decoded
 * objects, buffers, negative-lookup caches.  Each such cache registers a
 * *shrinker*: a count callback that says how many objects could be freed, and
 * a scan callback that frees up to a given number.  A reclaim pass calls
 * every registered shrinker with a *priority* (12 = gentle .. 0 = everything)
 * and the library decides how much each one scans, from its size, the
 * priority and its cost to rebuild (*seeks*), as the kernel's
 * do_shrink_slab() does.
 *
 * Counting is kept separate from doing.  A reclaimer that cannot do the work
 * in its context (its capability mask lacks what the shrinker needs, or the
 * cache's lock is contended) has the scan callback return RCL_SHRINK_STOP;
 * the work it should have done is *deferred* in the shrinker's backlog
 * (nr_deferred, one per partition for partition-aware shrinkers) and done by a
 * later capable call.  The registry's *damping policy* decides how fast a
 * backlog is worked off (see &enum rcl_shrink_policy); the default does not
 * let a backlog empty a cache in one call, and lets small caches accumulate
 * fractional pressure instead of never being scanned.
 *
 * Where deferred work is kept.  The kernel keeps each backlog in one shared
 * word that every call exchanges and adds to.  Here, a call that was not
 * stopped and leaves less than one of its scan batches undone (the
 * sub-batch remainder of its own arithmetic, not yet worth a scan_objects
 * call) keeps that remainder on the calling thread's own stripe of the
 * shrinker, and that thread's next call on the shrinker (and partition)
 * claims it back; so threads that reclaim together do not write a shared
 * line per shrinker per call.  Work a context refused (RCL_SHRINK_STOP), and
 * any remainder of a batch or more, is *backlog*: it goes to the shared
 * word, which any later call claims.  So each reclaiming thread may hold
 * less than one batch of a shrinker's deferred work per partition, on top
 * of the backlog's cap.  It is not lost: rcl_shrinker_backlog() counts it,
 * an RCL_SHRINK_EMPTY count drops it, rcl_shrinker_free() drops it with the
 * rest, and when the thread exits, the next calls on the shrinker, from any
 * thread, take it over (in a child after fork(), the next calls there take
 * over what the parent's other threads held).  A single thread sees exactly
 * the kernel's arithmetic.
 *
 * Ownership.  A registry is created with rcl_shrinker_registry_new() and
 * freed with rcl_shrinker_registry_free().  Shrinkers are allocated by the
 * library, in a registry: rcl_shrinker_new(), then rcl_shrinker_register()
 * (from then on reclaim may call it), then rcl_shrinker_free() (unregisters,
 * waits for callbacks in flight, releases).  The ops table is the
 * application's, normally `static const`; the callbacks get the application's
 * context back through &rcl_shrink_control.priv.
 *
 * Usage:
 *
 * .. code-block:: c
 *
 *	static unsigned long my_count(struct rcl_shrinker *s, struct rcl_shrink_control *sc)
 *	{
 *		struct my_cache *c = sc->priv;
 *		unsigned long n = atomic_load(&c->nr_unused);	// no lock: may be stale
 *		(void)s;					// see "Unused parameters"
 *		return n ? n : RCL_SHRINK_EMPTY;
 *	}
 *	static unsigned long my_scan(struct rcl_shrinker *s, struct rcl_shrink_control *sc)
 *	{
 *		struct my_cache *c = sc->priv;
 *		(void)s;
 *		if (!(sc->context & RCL_CTX_MAY_BLOCK) || !my_trylock(c))
 *			return RCL_SHRINK_STOP;			// deferred, not lost
 *		unsigned long freed = my_free_oldest(c, sc->nr_to_scan, &sc->nr_scanned);
 *		my_unlock(c);
 *		return freed;
 *	}
 *	static const struct rcl_shrinker_ops my_ops = {
 *		.count_objects = my_count, .scan_objects = my_scan,
 *	};
 *
 *	struct rcl_shrinker_registry *reg;
 *	struct rcl_shrinker *s;
 *	rcl_shrinker_registry_new(NULL, &reg);
 *	struct rcl_shrinker_config cfg = { .ops = &my_ops, .priv = cache,
 *					   .name = "my-cache", .seeks = RCL_DEFAULT_SEEKS };
 *	rcl_shrinker_new(reg, &cfg, &s);
 *	rcl_shrinker_register(s);
 *	...
 *	struct rcl_shrink_result res = { 0 };
 *	rcl_shrinker_registry_shrink(reg, 0, 12, RCL_CTX_CAPABLE, &res);
 *	...
 *	rcl_shrinker_free(s);
 *	rcl_shrinker_registry_free(reg);
 *
 * Unused parameters.  Both callbacks receive the shrinker and the control
 * block; most use only sc->priv, and -Wextra (-Wunused-parameter) then warns
 * about the other.  Mark it used with a cast to void, as above, or omit its
 * name (C23 and C++ allow an unnamed parameter in a definition).  The
 * prototypes stay as they are: the shrinker pointer is what a callback needs
 * to call rcl_shrinker_name() or to tell apart shrinkers that share one ops
 * table, and a callback type that differs from the kernel's would only move
 * the warning elsewhere.
 *
 * Synchronization.  Every function is thread-safe.  No library lock is held
 * while a callback runs, and the reclaim path takes no lock in the common
 * case: walkers pin each shrinker's registry slot with an atomic count, so
 * any number of threads can shrink at once, and registration never waits
 * for them.  A walker takes the registry lock only briefly to wake an
 * rcl_shrinker_free() that waits for its pin, and to pin a shrinker whose
 * slot a free is clearing.
 *
 * ==================================  =========================================
 * function                            locks taken
 * ==================================  =========================================
 * rcl_shrinker_registry_new / _free   none / registry mutex
 * rcl_shrinker_new                    none (allocates)
 * rcl_shrinker_register               registry mutex (short; not held by
 *                                     reclaimers)
 * rcl_shrinker_free                   registry mutex; sleeps until callbacks
 *                                     of this shrinker in flight have returned
 * rcl_shrinker_registry_shrink        none (atomic slot pins); the registry
 *                                     mutex briefly while a free waits
 * rcl_shrinker_shrink, _debug_*       none (atomic slot pin); the same
 * fork() (an atfork handler)          every registry's mutex, across the
 *                                     fork: the child finds none held
 * rcl_shrinker_stats / _backlog       none (lock-free reads, may be stale)
 * ==================================  =========================================
 */
#ifndef RECLAIM_SHRINKER_H
#define RECLAIM_SHRINKER_H

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

/** Returned by scan_objects: no progress is possible in this context. */
#define RCL_SHRINK_STOP (~0UL)
/** Returned by count_objects: the cache has no objects at all (distinct from 0). */
#define RCL_SHRINK_EMPTY (~0UL - 1)
/** Default batch (the kernel's SHRINK_BATCH). */
#define RCL_SHRINK_BATCH 128
/** The kernel's DEFAULT_SEEKS. */
#define RCL_DEFAULT_SEEKS 2
/** The gentlest priority (the kernel's DEF_PRIORITY); 0 is the most urgent. */
#define RCL_DEF_PRIORITY 12

/* Reclaim-context capability bits (&rcl_shrink_control.context). */
/** The reclaiming thread may sleep (take contended locks, wait). */
#define RCL_CTX_MAY_BLOCK (1ull << 0)
/** The reclaiming thread may do I/O (write back, read metadata). */
#define RCL_CTX_MAY_IO (1ull << 1)
/** A fully capable context. */
#define RCL_CTX_CAPABLE (RCL_CTX_MAY_BLOCK | RCL_CTX_MAY_IO)
/** Bits 16..63 are the application's own capability bits. */
#define RCL_CTX_USER(n) (1ull << (16 + (n)))

/** Shrinker flag: keep one backlog per partition; sc->partition is meaningful. */
#define RCL_SHRINKER_PARTITION_AWARE (1u << 0)

/** Longest shrinker name kept (longer names are truncated), with the NUL. */
#define RCL_SHRINKER_NAME_LEN 32

/* ------------------------------------------------------------------------- */
/* Callbacks                                                                  */
/* ------------------------------------------------------------------------- */

struct rcl_shrinker;
struct rcl_shrinker_registry;

/**
 * struct rcl_shrink_control - what a shrinker callback is told, by pointer
 * @partition: the partition being shrunk (0 for shrinkers that are not
 *	partition-aware)
 * @nr_to_scan: scan_objects: how many objects to look at (at most the
 *	shrinker's batch).  Reset before every call, so the callee may modify it.
 * @nr_scanned: scan_objects: preset to @nr_to_scan; the callee sets it to what
 *	it really examined.  Values above @nr_to_scan are treated as
 *	@nr_to_scan; 0 ends this shrinker's turn.
 * @priority: 12 (gentle) .. 0 (urgent)
 * @context: the reclaimer's capability mask (RCL_CTX_*).  A scan that needs
 *	a capability the mask lacks returns RCL_SHRINK_STOP.
 * @priv: the shrinker's &rcl_shrinker_config.priv
 * @weight_freed: scan_objects: preset to 0; the callee may set it to the
 *	weight (the domain's charge units) of what it freed but did not
 *	rcl_domain_uncharge() itself in this call on this thread, for
 *	instance memory it hands to another thread or an RCU-like grace
 *	period to free.  Within a domain's reclaim pass (domain.h), the weight
 *	that the callback uncharges from that domain on the reclaiming thread,
 *	plus this, counts toward the pass's goal, and the pass stops once the
 *	goal is met.  Report nothing twice: weight uncharged in the call is
 *	already counted.  Ignored outside a domain's pass.
 *
 * The library allocates this struct for each call; members are only ever
 * added at the end.
 */
struct rcl_shrink_control {
	unsigned partition;
	unsigned long nr_to_scan;
	unsigned long nr_scanned;
	int priority;
	uint64_t context;
	void *priv;
	uint64_t weight_freed;
};

/**
 * struct rcl_shrinker_ops - a shrinker's callbacks
 * @count_objects: the number of freeable objects, RCL_SHRINK_EMPTY if the
 *	cache is empty (its backlog is then dropped, every thread's remainder
 *	included: there is nothing to defer work on), or 0 if the number cannot be determined or the cache should
 *	be skipped this time (the backlog is kept).  Must not take the cache's own locks in a
 *	way that can block (a stale count is fine: the kernel's
 *	super_cache_count() lesson).  Called with no library lock held, from
 *	any thread, possibly concurrently with itself and with scan_objects.
 * @scan_objects: free up to sc->nr_to_scan objects; set sc->nr_scanned to
 *	the number examined; return the number freed, or RCL_SHRINK_STOP if no
 *	progress can be made in this context (then it is not called again in
 *	this reclaim call, and the work is deferred).  Called with no library
 *	lock held, only after a non-zero count.
 *
 * Misbehaviour is contained.  A count above 2^40 is taken as 2^40, so the
 * arithmetic cannot overflow and backlogs stay below twice that; a count
 * that flaps to RCL_SHRINK_EMPTY drops the backlog each time, and one that
 * flaps to 0 keeps it.  A count far above the real size makes reclaim call
 * scan_objects until it reports sc->nr_scanned = 0 (or answers
 * RCL_SHRINK_STOP), so a scan that finds nothing left must say so.  A scan
 * answer above what the call examined (min(sc->nr_scanned,
 * sc->nr_to_scan)), such as a stray sentinel, is counted as that: freed
 * never exceeds scanned, in the counters, the results and a domain's sums.
 *
 * Both may block (sleep, wait for I/O or a lock): nothing waits for them
 * but rcl_shrinker_free() of that shrinker; other threads register, free,
 * and shrink meanwhile.  Both may call any library function, with these
 * exceptions, which return -EDEADLK (nothing done): rcl_shrinker_free() on
 * their own shrinker (and rcl_shadow_limit_free() from a shadow limit's
 * drop callback), and, from a pass of a domain (domain.h),
 * rcl_domain_reclaim() and rcl_domain_detach() on that domain.
 */
struct rcl_shrinker_ops {
	unsigned long (*count_objects)(struct rcl_shrinker *shrinker,
				       struct rcl_shrink_control *sc);
	unsigned long (*scan_objects)(struct rcl_shrinker *shrinker,
				      struct rcl_shrink_control *sc);
};

/* ------------------------------------------------------------------------- */
/* The registry                                                               */
/* ------------------------------------------------------------------------- */

/**
 * enum rcl_shrink_policy - how scan targets and backlogs are computed
 * @RCL_SHRINK_POLICY_DEFAULT: the library's own, "rcl-default".  The
 *	kernel-modern arithmetic with three changes: (1) pressure is kept in
 *	fixed point (1/65536 object), so a small cache accumulates the fraction
 *	of an object that each gentle call asks of it and is scanned in
 *	proportion to its size over many calls, where the kernel rounds it to
 *	zero until priority 1 (a seeks=2 cache below ~131k objects is never
 *	scanned at priority 12); (2) the backlog is capped at half the cache
 *	(each call caps what it claimed plus its own pressure; the remainders
 *	that reclaiming threads keep, below a batch each, come on top), not
 *	twice the cache: more deferred work than that is windup, and doing
 *	it would throw away the working set of a cache that is not being
 *	refilled (the 2014 form bounded it the same way, implicitly; the 2016
 *	change that removed the bound led to backlogs of trillions of objects);
 *	(3) each call works off max(backlog >> priority, freeable / 8, one
 *	batch) of the backlog (all of it if less), so a backlog is gone within
 *	about 4 capable calls at any priority while the cache keeps its size
 *	(a few dozen if the calls also consume the cache), where the kernel
 *	takes thousands at priority 12; a cache smaller than 8 batches is scanned in
 *	batches of freeable / 8 (at least 1), so that it does not wait for a
 *	whole batch, or its whole size, to accumulate; and a call whose own
 *	pressure (delta) is below
 *	freeable / 4 scans at most freeable / 2 (the 2014 damping rule).  So
 *	after any number of deferring calls, a capable call at priority >= 3
 *	frees at most freeable / 8 + delta, and at any priority at most half
 *	of a cache whose delta is below a quarter of it.
 * @RCL_SHRINK_POLICY_KERNEL_MODERN: "kernel-modern", the kernel's
 *	do_shrink_slab() (v5.13+), exactly: delta = ((freeable >> priority) *
 *	4) / seeks (freeable / 2 for seeks = 0); total = min((backlog >>
 *	priority) + delta, 2 * freeable); batches of @batch, a sub-batch
 *	remainder only when total >= freeable; backlog' = min(max(backlog +
 *	delta - scanned, 0), 2 * freeable).
 * @RCL_SHRINK_POLICY_KERNEL_2014: "kernel-2014", the 2014 form (v3.16-v4.9):
 *	the whole backlog plus delta, clamped to freeable / 2 when delta <
 *	freeable / 4 and to 2 * freeable always, scanned in batches of @batch,
 *	a sub-batch remainder only when total >= freeable (so a cache smaller
 *	than its batch is scanned, min(@batch, total) in one call, only when
 *	delta >= freeable / 4: the kernel's "tight on memory" rule, since
 *	v3.14), the unscanned remainder put back.  Its delta is the modern priority-based
 *	one, since there is no LRU ratio here.
 */
enum rcl_shrink_policy {
	RCL_SHRINK_POLICY_DEFAULT = 0,
	RCL_SHRINK_POLICY_KERNEL_MODERN = 1,
	RCL_SHRINK_POLICY_KERNEL_2014 = 2,
};

/** The phase of a trace event. */
enum rcl_shrink_trace_phase {
	RCL_SHRINK_TRACE_START = 0,
	RCL_SHRINK_TRACE_END = 1,
};

/**
 * struct rcl_shrink_trace - one trace event, like the kernel's
 * mm_shrink_slab_start / mm_shrink_slab_end tracepoints
 * @phase: START (before the first scan) or END (after the last)
 * @shrinker: the shrinker
 * @name: its name
 * @partition: the partition
 * @priority: the priority
 * @backlog: START: the backlog claimed (objects)
 * @freeable: START: the count callback's answer
 * @delta: START: this call's own pressure (objects, rounded down)
 * @total_scan: START: the scan target (objects)
 * @freed: END: objects freed
 * @scanned: END: objects scanned
 * @new_backlog: END: the backlog after the call (objects)
 */
struct rcl_shrink_trace {
	enum rcl_shrink_trace_phase phase;
	struct rcl_shrinker *shrinker;
	const char *name;
	unsigned partition;
	int priority;
	unsigned long backlog;
	unsigned long freeable;
	unsigned long delta;
	unsigned long total_scan;
	unsigned long freed;
	unsigned long scanned;
	unsigned long new_backlog;
};

/**
 * struct rcl_shrinker_registry_config - creation parameters of a registry
 * @nr_partitions: partitions (NUMA nodes or shards); 0 means 1
 * @policy: the damping policy
 * @trace: if not NULL, called at the start and end of every shrinker call
 *	that got past counting (no library lock held); it counts as a
 *	callback of the shrinker it reports on: rcl_shrinker_free() of that
 *	shrinker from it returns -EDEADLK, as from count_objects
 * @trace_arg: passed to @trace
 * @allocator: where the registry and its shrinkers get memory; NULL = malloc
 */
struct rcl_shrinker_registry_config {
	unsigned nr_partitions;
	enum rcl_shrink_policy policy;
	void (*trace)(void *arg, const struct rcl_shrink_trace *ev);
	void *trace_arg;
	const struct rcl_allocator *allocator;
};

/** Most partitions a registry may have. */
#define RCL_SHRINKER_MAX_PARTITIONS 1024
/** Most shrinkers a registry may hold at once. */
#define RCL_SHRINKER_MAX 65536

/**
 * rcl_shrinker_registry_new() - create a registry.  Pair with
 * rcl_shrinker_registry_free().
 * @cfg: configuration, or NULL for one partition and the default policy
 * @out: receives the registry (written only on success)
 *
 * Context: any thread.
 * Return: 0; -EINVAL for a NULL @out, more than RCL_SHRINKER_MAX_PARTITIONS
 * partitions or an unknown policy; -ENOMEM.
 *
 * Bad input: -EINVAL also for an allocator without both callbacks.
 */
RCL_API int rcl_shrinker_registry_new(const struct rcl_shrinker_registry_config *cfg,
				      struct rcl_shrinker_registry **out);

/**
 * rcl_shrinker_registry_free() - free a registry
 * @reg: the registry; NULL is a no-op
 *
 * Context: any thread, not concurrently with other calls on @reg.
 * Return: 0; -EBUSY (nothing freed) while shrinkers allocated in it have not
 * been freed.
 */
RCL_API int rcl_shrinker_registry_free(struct rcl_shrinker_registry *reg);

/**
 * rcl_shrinker_registry_policy() - a registry's damping policy
 * @reg: the registry
 *
 * Context: lock-free.
 * Return: the policy; RCL_SHRINK_POLICY_DEFAULT for NULL.
 */
RCL_API enum rcl_shrink_policy
rcl_shrinker_registry_policy(const struct rcl_shrinker_registry *reg);

/**
 * rcl_shrink_policy_name() - "rcl-default", "kernel-modern", "kernel-2014"
 * @policy: the policy
 *
 * Context: any thread.
 * Return: a static string; NULL for an unknown policy.
 */
RCL_API const char *rcl_shrink_policy_name(enum rcl_shrink_policy policy);

/**
 * struct rcl_shrink_result - what a shrink call did (outputs are added to)
 * @freed: objects freed (sum of scan_objects' answers)
 * @scanned: objects scanned (sum of nr_scanned)
 * @nr_shrinkers: shrinkers whose count was asked
 * @nr_stopped: shrinkers that answered RCL_SHRINK_STOP
 */
struct rcl_shrink_result {
	unsigned long freed;
	unsigned long scanned;
	unsigned long nr_shrinkers;
	unsigned long nr_stopped;
};

/**
 * rcl_shrinker_registry_shrink() - shrink every registered shrinker
 * @reg: the registry
 * @partition: the partition, < the registry's number of partitions;
 *	shrinkers that are not partition-aware are shrunk at every partition
 *	(with sc->partition = 0 and their single backlog), as in the kernel
 * @priority: 0..RCL_DEF_PRIORITY
 * @context: the capability mask passed to the callbacks
 * @res: if not NULL, the results are added to it
 *
 * Shrinkers registered or freed during the walk may or may not be visited.
 *
 * Context: any thread, including shrinker callbacks; takes no lock but
 * briefly the registry's, when a free waits (Synchronization); calls the
 * callbacks.
 * Return: 0; -EINVAL for NULL @reg, a partition or priority out of range.
 */
RCL_API int rcl_shrinker_registry_shrink(struct rcl_shrinker_registry *reg,
					 unsigned partition, int priority,
					 uint64_t context,
					 struct rcl_shrink_result *res);

/* ------------------------------------------------------------------------- */
/* Shrinkers                                                                  */
/* ------------------------------------------------------------------------- */

/**
 * struct rcl_shrinker_config - a shrinker's parameters
 * @ops: the callbacks; both are required
 * @priv: passed to the callbacks in sc->priv
 * @name: for statistics and traces (copied, truncated); NULL = "shrinker"
 * @seeks: relative cost to recreate an object; RCL_DEFAULT_SEEKS (2) is
 *	the kernel's default; 0 means trivially cheap (scanned at half its size
 *	per call, at any priority)
 * @batch: objects per scan_objects call; 0 = RCL_SHRINK_BATCH (the default
 *	policy uses smaller batches for caches below 8 batches)
 * @flags: RCL_SHRINKER_PARTITION_AWARE
 */
struct rcl_shrinker_config {
	const struct rcl_shrinker_ops *ops;
	void *priv;
	const char *name;
	int seeks;
	long batch;
	unsigned flags;
};

/**
 * rcl_shrinker_new() - allocate a shrinker in a registry.  Pair with
 * rcl_shrinker_free().
 * @reg: the registry
 * @cfg: the parameters
 * @out: receives the shrinker (written only on success)
 *
 * The shrinker is not called until rcl_shrinker_register().
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL arguments, missing callbacks, a negative
 * seeks or batch, or unknown flags; -ENOSPC if the registry holds
 * RCL_SHRINKER_MAX shrinkers; -ENOMEM.
 */
RCL_API int rcl_shrinker_new(struct rcl_shrinker_registry *reg,
			     const struct rcl_shrinker_config *cfg,
			     struct rcl_shrinker **out);

/**
 * rcl_shrinker_register() - let reclaim call a shrinker
 * @shrinker: a shrinker from rcl_shrinker_new()
 *
 * Takes a slot of the registry's table, which grows in chunks of 64 slots
 * from the registry's allocator, called with no lock of the registry held
 * (an allocator may reclaim through this registry when memory is short).
 *
 * Context: any thread, while other threads shrink.
 * Return: 0; -EINVAL for NULL; -EBUSY if it is already registered;
 * -ENOMEM if the table must grow and cannot (the shrinker stays allocated
 * and unregistered: register it again later, or free it); -ENOSPC if the
 * table is full.
 *
 * Bad input: -ENOMEM also if the registry's slot table cannot grow.
 */
RCL_API int rcl_shrinker_register(struct rcl_shrinker *shrinker);

/**
 * rcl_shrinker_free() - unregister a shrinker, wait for its callbacks, free it
 * @shrinker: the shrinker; NULL is a no-op
 *
 * Once this returns 0, no callback of @shrinker is running or will run, and
 * the pointer is invalid.  Its backlog is dropped, with the remainders that
 * threads kept on their stripes (they are part of the shrinker's memory).
 *
 * Context: any thread except @shrinker's own callbacks; sleeps while its
 * callbacks are in flight in other threads.  In the child of a fork(),
 * callbacks that other threads of the parent were in are not in flight.
 * Return: 0; -EDEADLK (nothing done: it stays registered, and callable
 * throughout) when called from one of @shrinker's own callbacks, and when
 * called from a callback of another shrinker, an evict callback, a
 * callback inside a domain's reclaim pass or a write callback, while
 * @shrinker's callbacks are in flight in other threads: it does not wait
 * there, since a callback in flight may be waiting for what the caller's
 * callback holds (two callbacks freeing each other's shrinkers; a scan
 * that detaches the lruvec a pass pins), and the two would wait for each
 * other for ever (try again later, outside the callback).
 */
RCL_API int rcl_shrinker_free(struct rcl_shrinker *shrinker);

/**
 * rcl_shrinker_shrink() - shrink one shrinker, as the registry walk would
 * @shrinker: a registered shrinker
 * @partition: the partition (see rcl_shrinker_registry_shrink())
 * @priority: 0..RCL_DEF_PRIORITY
 * @context: the capability mask
 * @res: if not NULL, the results are added to it
 *
 * Context: any thread; takes no lock but briefly the registry's, when a
 * free waits (Synchronization); calls the callbacks.
 * Return: 0; -EINVAL for NULL or out-of-range arguments; -ENOENT if the
 * shrinker is not registered.
 */
RCL_API int rcl_shrinker_shrink(struct rcl_shrinker *shrinker,
				unsigned partition, int priority,
				uint64_t context, struct rcl_shrink_result *res);

/**
 * struct rcl_shrinker_stats - cumulative counters of one shrinker
 * @calls: calls that got past counting (count > 0)
 * @scanned: objects scanned
 * @freed: objects freed
 * @stops: RCL_SHRINK_STOP answers
 */
struct rcl_shrinker_stats {
	uint64_t calls;
	uint64_t scanned;
	uint64_t freed;
	uint64_t stops;
};

/**
 * rcl_shrinker_stats() - a snapshot of a shrinker's counters
 * @shrinker: the shrinker
 * @out: receives them
 *
 * Context: lock-free; read one by one.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_shrinker_stats(const struct rcl_shrinker *shrinker,
			       struct rcl_shrinker_stats *out);

/**
 * rcl_shrinker_backlog() - the deferred work of one partition, in objects
 * @shrinker: the shrinker
 * @partition: the partition (0 for shrinkers that are not partition-aware)
 * @out: receives the backlog
 *
 * All of it: the shared backlog plus the sub-batch remainders that threads
 * keep on their stripes (see "Where deferred work is kept"), summed in the
 * policy's unit and then rounded down to whole objects.
 *
 * Context: lock-free; may be stale (a call in flight holds the backlog it
 * claimed until it returns the rest; the parts are read one by one).
 * Return: 0; -EINVAL for NULL or a partition out of range.
 */
RCL_API int rcl_shrinker_backlog(const struct rcl_shrinker *shrinker,
				 unsigned partition, unsigned long *out);

/**
 * rcl_shrinker_name() - a shrinker's name
 * @shrinker: the shrinker
 *
 * Context: lock-free.
 * Return: the name (owned by the shrinker); NULL for NULL.
 */
RCL_API const char *rcl_shrinker_name(const struct rcl_shrinker *shrinker);

/* ------------------------------------------------------------------------- */
/* Debug entry points (the kernel's shrinker debugfs "count" and "scan")      */
/* ------------------------------------------------------------------------- */

/**
 * rcl_shrinker_debug_count() - call a shrinker's count callback once
 * @shrinker: a registered shrinker
 * @partition: the partition
 * @context: the capability mask
 * @out: receives the answer (which may be RCL_SHRINK_EMPTY)
 *
 * For applications' own tests of their shrinkers.  Touches no backlog and
 * no counter.
 *
 * Context: any thread; calls the callback.
 * Return: 0; -EINVAL for NULL or a partition out of range; -ENOENT if not
 * registered.
 */
RCL_API int rcl_shrinker_debug_count(struct rcl_shrinker *shrinker,
				     unsigned partition, uint64_t context,
				     unsigned long *out);

/**
 * rcl_shrinker_debug_scan() - call a shrinker's scan callback once
 * @shrinker: a registered shrinker
 * @partition: the partition
 * @nr_to_scan: the number to scan (not limited to the batch)
 * @context: the capability mask
 * @freed: receives the answer (which may be RCL_SHRINK_STOP)
 * @scanned: if not NULL, receives sc->nr_scanned
 *
 * Bypasses counting and the backlog; touches no counter.  The priority
 * passed is 0.
 *
 * Context: any thread; calls the callback.
 * Return: 0; -EINVAL for NULL or a partition out of range; -ENOENT if not
 * registered.
 */
RCL_API int rcl_shrinker_debug_scan(struct rcl_shrinker *shrinker,
				    unsigned partition,
				    unsigned long nr_to_scan, uint64_t context,
				    unsigned long *freed,
				    unsigned long *scanned);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_SHRINKER_H */
