/* SPDX-License-Identifier: MIT */
/*
 * The memory domain's internals: struct rcl_domain and what its three source
 * files share.  lib/domain.c holds the budget, the watermarks, charging,
 * attach/detach, the counters and the lifecycle; lib/vmscan.c the reclaim
 * passes and the background reclaimer; lib/flusher.c dirty accounting, flush
 * requests and writeback.  Nothing here is part of the API; names are rcl__
 * (cross-file) or static inline, for the helpers that the charge path and
 * the passes' slot walks must keep inline.
 */
#ifndef RECLAIM_DOMAIN_INTERNAL_H
#define RECLAIM_DOMAIN_INTERNAL_H

#include "internal.h"

#include <sys/types.h>
#include <unistd.h>

#include <reclaim/domain.h>
#include <reclaim/flusher.h>

/* ------------------------------------------------------------------------- */
/* Types                                                                      */
/* ------------------------------------------------------------------------- */

struct att_slot {
	_Atomic(struct rcl_lruvec *) lv;
	unsigned partition;	/* written before lv is published */
	atomic_uint pins;
	bool used;		/* domain mutex */
};

enum vm_item {
	VM_PGSCAN_KSWAPD,
	VM_PGSCAN_DIRECT,
	VM_PGSTEAL_KSWAPD,
	VM_PGSTEAL_DIRECT,
	VM_PGREFILL,
	VM_PGACTIVATE,
	VM_PGDEACTIVATE,
	VM_PGROTATED,
	VM_SLABS_SCANNED,
	VM_SLABS_FREED,
	VM_ALLOCSTALL,
	VM_PAGEOUTRUN,
	VM_KSWAPD_WAKEUPS,
	VM_KSWAPD_FAILURES,
	VM_KSWAPD_HOPELESS,
	VM_CHARGE_FAILURES,
	VM_CHARGE_OVERSHOOTS,
	VM_NR_DIRTY_SCANNED,
	VM_NR_UNQUEUED_DIRTY,
	VM_NR_WRITEBACK_SCANNED,
	VM_NR_IMMEDIATE,
	VM_FLUSH_REQUESTS,
	VM_FLUSH_REQUESTS_VMSCAN,
	VM_FLUSH_COALESCED,
	VM_FLUSHER_WAKEUPS,
	VM_WRITEBACK_THROTTLED,
	VM_WRITEBACK_THROTTLE_TIMEOUTS,
	VM_DIRTY_THROTTLED,
	VM_DIRTY_THROTTLE_TIMEOUTS,
	VM_WRITES_FROM_RECLAIM,
	VM_WRITES_FLUSHER,
	NR_VM_ITEMS
};

/* memory.events (struct rcl_domain_events) */
enum ev_item { EV_LOW, EV_HIGH, EV_MAX, EV_OOM, NR_EV_ITEMS };

/*
 * A set of objects whose write failed (lib/flusher.c): an open-addressing
 * hash set of addresses, at most half full.
 */
struct wb_skip {
	uintptr_t *slot;
	size_t nr, cap;		/* cap: 0 or a power of two */
};

struct rcl_domain {
	struct rcl_allocator alloc;
	const struct rcl_clock *clock;
	unsigned nr_partitions;
	unsigned max_lruvecs;
	enum rcl_charge_mode mode;
	unsigned flags;
	unsigned scale;
	atomic_uint swappiness;
	/*
	 * Charge stocks (lib/domain.c), read on every charge and uncharge:
	 * the configured size (0: off), and from the budget the size of one
	 * stock and the most threads that may hold one at once.  Written only
	 * by rcl_domain_new() and rcl_domain_set_budget(), so this line stays
	 * shared and clean; the padding keeps usage, written by every
	 * unstocked charge, off it.
	 */
	uint64_t stock_cfg;
	atomic_ullong stock_cap;
	atomic_uint stock_max;
	/* The root's: bumped by each resize_stocks() in its tree and each
	 * child linked, so that a resize that read a budget older than its
	 * last store sizes again. */
	atomic_uint stock_gen;
	/*
	 * The tree (issue #17), read on every charge and uncharge too:
	 * @parent, @root and @depth never change after rcl_domain_new(); a
	 * root is its own @root.  limit_high: UINT64_MAX when none.
	 */
	unsigned depth;
	struct rcl_domain *parent, *root;
	atomic_ullong limit_high;
	atomic_uint nr_high;	/* in a root: domains of the tree with one */
	char pad_usage_[64];

	atomic_ullong usage;
	/*
	 * Threads whose stock is charged to this domain, the stock serving it
	 * or a domain of its subtree (at most stock_max).
	 */
	atomic_uint nr_stocks;
	/*
	 * In a root: unstocked charges of the tree in flight (each raises
	 * tight from before it reads usage to after its commit), and stock
	 * takes in flight.  A take refuses while tight is raised; a
	 * charge that raised it waits for the takes that began before, so
	 * that the usage it judges includes every stock (domain.c, "Charge
	 * stocks").
	 */
	atomic_ullong tight;	/* fork generation << 32 | count (domain.c) */
	atomic_uint nr_taking;
	atomic_ullong budget;
	atomic_ullong wmin, wlow, whigh;
	atomic_uint wm_seq;	/* odd while a writer (under lock) stores them */

	struct rcl_shrinker_registry *reg;

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* reclaimer wakeups; detach waits */
	bool running, stop;
	pthread_t thread;
	pid_t pid;			/* the process @thread runs in */
	/* The process whose threads alone can be waiting on each condition
	 * (cond under lock, fcond under flock, wbcond under wblock). */
	pid_t cond_pid, fcond_pid, wbcond_pid;
	unsigned failures;
	atomic_bool hopeless;
	atomic_bool wake_pending;
	atomic_uint nr_detaching;
	/* Every domain of the process, for the fork handler (domain.c). */
	struct rcl_domain *all_next, *all_prev;
	atomic_uint high;		/* slots [0, high) may be used */

	atomic_ullong vm[NR_VM_ITEMS];

	/* Dirty accounting (flusher.h): sums over the attached lruvecs. */
	atomic_ullong dirty[4];		/* nr, weight; writeback nr, weight */
	unsigned bg_ratio, hard_ratio;
	uint64_t dirty_timeout;
	enum rcl_flush_policy flush_policy;
	const struct rcl_flusher_ops *fops;
	void *fpriv;
	/*
	 * Writeback progress and the dirty weight, for the throttles: their
	 * waits sleep on wbcond under wblock.  A leaf lock, so that the paths
	 * that lower the dirty weight wake them under the lruvec lock.
	 */
	pthread_mutex_t wblock;
	pthread_cond_t wbcond;
	atomic_ullong written;	/* writes that succeeded */
	atomic_ullong wb_ended;	/* writebacks that ended, failed or not */
	atomic_uint nr_throttled;
	atomic_uint nr_dirty_waiters;
	/* The flusher thread's batches: odd while one is under writeback. */
	atomic_ullong fl_batch_seq;
	atomic_uint nr_wball_waiters;	/* rcl_domain_writeback_all() */
	/* Calls still using the domain after an lruvec lock (rcl__domain_get). */
	atomic_uint users;
	/* Pressure monitors attached (lib/pressure.c): rcl_domain_free() waits. */
	atomic_uint nr_monitors;
	/* Flush requests: one in flight, one pending (under flock). */
	pthread_mutex_t flock;
	pthread_cond_t fcond;		/* the library's flusher thread */
	bool inflight, pending;
	struct rcl_flush_request cur, pend;
	uint64_t seq;
	atomic_bool flush_busy;		/* a flush-all in flight or pending */
	/* The library's flusher thread (under flock). */
	bool fl_running, fl_work;
	atomic_bool fl_stop;		/* also read between batches */
	pthread_t fl_thread;
	pid_t fl_pid;			/* the process @fl_thread runs in */
	/*
	 * What the thread allocates for a request (its batch, its set of
	 * failed objects), set and cleared by the thread alone: read only in
	 * a fork()'s child, which frees them when it forgets the thread
	 * (flusher_after_fork_locked()).  The set is here, not on the
	 * thread's stack: the child reclaims that stack at the fork, and a
	 * thread it starts may be given it.
	 */
	void *fl_items;
	struct wb_skip fl_skip;
	struct rcl_writeback_ops wops;
	void *wpriv;
	unsigned wbatch;

	/*
	 * The child list (@children, @sibling) changes under the root's
	 * @tree_lock, for writing, and reclaim walks it holding that lock for
	 * reading.
	 */
	struct rcl_domain *children, *sibling;	/* root's tree_lock */
	unsigned nr_children;			/* root's tree_lock */
	pthread_rwlock_t tree_lock;		/* used in a root only */
	bool recursive_prot;			/* the root's flag */
	atomic_ullong protect_low, protect_min;
	atomic_ullong ev[NR_EV_ITEMS];
	/*
	 * What freed children had counted, kept for the subtree sums (as
	 * memory.events keeps a removed cgroup's events in its parent's).
	 */
	atomic_ullong ev_gone[NR_EV_ITEMS];
	atomic_ullong vm_gone[NR_VM_ITEMS];

	struct att_slot slots[];
};

/* ------------------------------------------------------------------------- */
/* Per-thread state                                                           */
/* ------------------------------------------------------------------------- */

/* The pass this thread is inside, if any (-EDEADLK, recursion; vmscan.c). */
extern RCL__TLS const struct rcl_domain *rcl__tls_pass_domain;
/*
 * Weight this thread uncharged from rcl__tls_pass_domain while inside its
 * pass: a shrinker's progress is the difference across its calls.  Only ever
 * grows (wraps harmlessly: differences are taken modulo 2^64).
 */
extern RCL__TLS uint64_t rcl__tls_pass_uncharged;
/*
 * The roots of the trees whose reclaim passes this thread is inside,
 * innermost first (a pass run from a callback of another pass pushes a
 * frame on its stack; vmscan.c): callbacks' charges to any domain of those
 * trees do not reclaim, and they may not create or free domains of them.
 */
struct rcl__pass_frame {
	const struct rcl_domain *tree;
	const struct rcl__pass_frame *prev;
};
extern RCL__TLS const struct rcl__pass_frame *rcl__tls_pass_frames;
/*
 * The slots this thread's passes hold pinned while their callbacks run
 * (shrink_partition() in vmscan.c), innermost first: after fork() from a
 * callback they are the child's only pins (lib/domain.c).
 */
struct rcl__pin_frame {
	struct att_slot *slot;
	const struct rcl__pin_frame *prev;
};
extern RCL__TLS const struct rcl__pin_frame *rcl__tls_pin_frames;
/* The domain whose background reclaimer the calling thread is (vmscan.c). */
extern RCL__TLS const struct rcl_domain *rcl__tls_reclaimer_of;
/* The domain whose flusher thread the calling thread is (flusher.c). */
extern RCL__TLS const struct rcl_domain *rcl__tls_flusher_of;
/* The domain whose write callbacks the calling thread runs (flusher.c). */
extern RCL__TLS const struct rcl_domain *rcl__tls_writing_of;

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------- */

/* Count @v events of counter @i (relaxed: statistics only). */
static inline void vm_add(struct rcl_domain *d, enum vm_item i, uint64_t v)
{
	if (v)
		atomic_fetch_add_explicit(&d->vm[i], v, memory_order_relaxed);
}

/* Budget minus usage: 0 when usage is at or over the budget. */
static inline uint64_t headroom(const struct rcl_domain *d)
{
	uint64_t b = atomic_load(&((struct rcl_domain *)d)->budget);
	uint64_t u = atomic_load(&((struct rcl_domain *)d)->usage);

	return b > u ? b - u : 0;
}

/*
 * How much must be freed for the headroom to reach @level: usage + level -
 * budget, which counts what usage is over the budget, unlike a clamped
 * headroom.
 */
static inline uint64_t need(const struct rcl_domain *d, uint64_t level)
{
	uint64_t b = atomic_load(&((struct rcl_domain *)d)->budget);
	uint64_t u = atomic_load(&((struct rcl_domain *)d)->usage);

	if (u + level < u)
		return UINT64_MAX;
	return u + level > b ? u + level - b : 0;
}

/* Something changed: a hopeless reclaimer may have work again. */
static inline void revive_locked(struct rcl_domain *d)
{
	d->failures = 0;
	atomic_store(&d->hopeless, false);
}

/*
 * Pin slot @s and read its lruvec (NULL: free or being detached); pair with
 * slot_put().  Dekker with rcl_domain_detach(): it clears the pointer, then
 * waits for the pins to drain.
 */
static inline struct rcl_lruvec *slot_get(struct att_slot *s)
{
	atomic_fetch_add(&s->pins, 1);
	return atomic_load(&s->lv);
}

static inline void reclaimer_cond_after_fork_locked(struct rcl_domain *d);

static inline void slot_put(struct rcl_domain *d, struct att_slot *s)
{
	atomic_fetch_sub(&s->pins, 1);
	if (atomic_load(&d->nr_detaching)) {
		pthread_mutex_lock(&d->lock);
		reclaimer_cond_after_fork_locked(d);
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
	}
}

/* ------------------------------------------------------------------------- */
/* Calls between the domain's files                                           */
/* ------------------------------------------------------------------------- */

/* lib/domain.c */

/* Put every thread's pending adds for @d's attached lruvecs on their lists. */
void rcl__domain_drain_all(struct rcl_domain *d);
/*
 * Give every thread's charge stock of @d back to its usage and detach them
 * (drain_all_stock()): before direct reclaim, the background reclaimer's
 * passes and the pressure monitor's actions, so that they see the memory.
 */
void rcl__domain_drain_stocks(struct rcl_domain *d);
/* How many charge stocks the registry holds, of every thread (for tests). */
unsigned rcl__domain_stock_count(void);

/* lib/vmscan.c */

/*
 * The next domain of @target's subtree after @d, parent before children
 * (pre-order); NULL at the end.  The caller holds the tree lock.
 */
static inline struct rcl_domain *tree_next(const struct rcl_domain *target,
					   struct rcl_domain *d)
{
	if (d->children)
		return d->children;
	while (d != target) {
		if (d->sibling)
			return d->sibling;
		d = d->parent;
	}
	return NULL;
}

/* Is @d in @anc's subtree (@anc itself included)? */
static inline bool in_subtree(const struct rcl_domain *anc,
			      const struct rcl_domain *d)
{
	for (; d; d = d->parent)
		if (d == anc)
			return true;
	return false;
}

/* A condition whose waits time out on CLOCK_MONOTONIC (domain.c). */
int rcl__domain_cond_init(pthread_cond_t *c);

/*
 * The child of a fork() has only the thread that called it.  A domain's
 * condition there still holds the places of parent threads that were
 * waiting on it (the reclaimer, the flusher, throttled writers), which no
 * thread of the child will ever take up: glibc's broadcast and destroy can
 * wait for them.  The first thread of the child to take the condition's
 * mutex gives it a fresh state; no thread of the child can be waiting on it
 * before that, for every wait and broadcast comes here first, under the
 * same mutex.  A reclaimer or flusher thread recorded as running belongs
 * to the parent too: there is none here, so nothing may join it.
 */
/* Give @c a fresh state if the process that last did (@owner) is not @me. */
static inline void cond_fresh(pthread_cond_t *c, pid_t *owner, pid_t me)
{
	if (*owner != me) {
		(void)rcl__domain_cond_init(c);
		*owner = me;
	}
}

static inline void reclaimer_cond_after_fork_locked(struct rcl_domain *d)
{
	pid_t me = getpid();

	cond_fresh(&d->cond, &d->cond_pid, me);
	if (d->running && d->pid != me) {
		d->running = false;
		d->stop = false;
		atomic_store(&d->wake_pending, false);
	}
}

/* The same for the flusher's condition and thread; d->flock held. */
static inline void flusher_cond_after_fork_locked(struct rcl_domain *d)
{
	pid_t me = getpid();

	cond_fresh(&d->fcond, &d->fcond_pid, me);
	if (d->fl_running && d->fl_pid != me) {
		d->fl_running = false;
		atomic_store(&d->fl_stop, false);
	}
}

/* The same for the throttles' condition; d->wblock held. */
static inline void wb_cond_after_fork_locked(struct rcl_domain *d)
{
	cond_fresh(&d->wbcond, &d->wbcond_pid, getpid());
}

/* Is this thread inside a reclaim pass of @d's tree, at any depth? */
static inline bool in_tree_pass(const struct rcl_domain *d)
{
	const struct rcl__pass_frame *f;

	for (f = rcl__tls_pass_frames; f; f = f->prev)
		if (f->tree == d->root)
			return true;
	return false;
}

/*
 * Is this thread inside an evict callback (or batch_end), at any depth, of
 * an lruvec attached to @d's tree?  However that lruvec is being shrunk (a
 * pass, or the application's own rcl_lruvec_shrink_inactive()), a reclaim
 * of the tree from here could shrink it again from inside its callback.
 */
static inline bool in_tree_evict(const struct rcl_domain *d)
{
	const struct rcl__evict_frame *f;

	for (f = rcl__tls_evict_frames; f; f = f->prev) {
		const struct rcl_domain *o = atomic_load_explicit(
			&f->lv->__domain, memory_order_relaxed);

		if (o && o->root == d->root)
			return true;
	}
	return false;
}

/* May a charge, an over-high check or a budget change of @d reclaim here? */
static inline bool may_reclaim_here(const struct rcl_domain *d)
{
	return !in_tree_pass(d) && !in_tree_evict(d);
}

/*
 * @clock's wait on @cond (with @mutex held), not a cancellation point
 * (internal.h): a thread cancelled there would come back holding @mutex.
 */
static inline int rcl__clock_wait(const struct rcl_clock *clock,
				  pthread_cond_t *cond, pthread_mutex_t *mutex,
				  uint64_t deadline)
{
	int cs = rcl__cancel_off(), err;

	err = clock->wait(clock->ctx, cond, mutex, deadline);
	rcl__cancel_restore(cs);
	return err;
}

/* Is this thread inside any reclaim pass? */
static inline bool in_any_pass(void)
{
	return rcl__tls_pass_frames != NULL;
}

/* Count @v events @i of @d (relaxed: statistics only). */
static inline void ev_add(struct rcl_domain *d, enum ev_item i, uint64_t v)
{
	atomic_fetch_add_explicit(&d->ev[i], v, memory_order_relaxed);
}


/*
 * Objects to reclaim from @d's subtree to free @deficit units of weight, at
 * the subtree's average object weight: at least 32.
 */
uint64_t rcl__domain_goal_objects(struct rcl_domain *d, uint64_t deficit);
/*
 * do_try_to_free_pages() over shrink_node_memcgs(): passes from priority 12
 * down over @d's subtree (just @d when it has no children), with memcg
 * protection relative to @d, until @goal objects are freed.
 */
void rcl__domain_direct_reclaim(struct rcl_domain *d, uint64_t goal,
				uint64_t context,
				struct rcl_reclaim_result *res);
/* Wake the background reclaimer; true if this call did (none was pending). */
bool rcl__domain_wake_reclaimer(struct rcl_domain *d);

/* lib/flusher.c */

/* Ask for @nr objects (0: all) to be written; merges into a pending request. */
void rcl__domain_flush_request(struct rcl_domain *d, uint64_t nr,
			       enum rcl_flush_reason reason);
/*
 * In a fork()'s child, from the atfork handler (one thread, no lock): the
 * parent's flusher thread and its requests are not here, so the lock-free
 * filters must not see them busy; flock and wblock, if a parent thread held
 * them, are initialised again (and the requests dropped).
 */
void rcl__domain_flusher_atfork_child(struct rcl_domain *d);
/* Reclaim met only writeback: sleep until writes progress (at most 100 ms). */
void rcl__domain_throttle_writeback(struct rcl_domain *d);
/* The dirty weight fell or its limit rose: wake rcl_domain_balance_dirty(). */
void rcl__domain_dirty_wake(struct rcl_domain *d);
void rcl__domain_throttle_wake(struct rcl_domain *d);

#endif /* RECLAIM_DOMAIN_INTERNAL_H */
