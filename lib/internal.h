/* SPDX-License-Identifier: MIT */
/*
 * Internal definitions shared by the library's source files.  Nothing here is
 * part of the API; names are rcl__ (cross-file) or static.
 */
#ifndef RECLAIM_INTERNAL_H
#define RECLAIM_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <reclaim/lruvec.h>

#include "futex_lock.h"

/*
 * RCL_ASSERT() checks the library's own invariants, never the caller's input
 * (bad input gets an -errno).  It is active in every build: a broken
 * invariant in a reclaim library means lost or corrupted objects, and stopping
 * is the lesser harm.
 */
#define RCL_ASSERT(cond)                                                      \
	do {                                                                  \
		if (__builtin_expect(!(cond), 0))                             \
			rcl__assert_fail(#cond, __FILE__, __LINE__, __func__);  \
	} while (0)

__attribute__((noreturn, cold)) void rcl__assert_fail(const char *expr,
						       const char *file,
						       int line,
						       const char *func);

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* A small helper of a hot path, inlined into each caller. */
#define RCL__HOT inline __attribute__((always_inline))

#define RCL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RCL_MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * The library's few thread-local words use the initial-exec model: one
 * %fs-relative load instead of a __tls_get_addr() call on every batched
 * operation.  They take 16 bytes of the static TLS surplus that glibc keeps
 * for libraries loaded with dlopen().
 */
#define RCL__TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* ------------------------------------------------------------------------- */
/* Node flag word                                                             */
/* ------------------------------------------------------------------------- */
/*
 * bits  0-1  type
 * bit   2    ACTIVE        (public)
 * bit   3    UNEVICTABLE   (public)
 * bit   4    PENDING       (public)  in an add batch
 * bit   5    LISTED        (public)  linked on a list of the lruvec
 * bit   6    ISOLATED      (public)  held by a reclaimer
 * bit   7    QUEUED        a batch entry refers to the node (idle: an add
 *                          is claiming it, or a delete purging its entry)
 * bit   8    REFERENCED    (public)
 * bit   9    WORKINGSET    (public)
 * bit  10    DIRTY         (public, reserved)
 * bit  11    WRITEBACK     (public, reserved)
 * bit  12    RECLAIM       (public, reserved)
 * bit  13    WANT_ACT      the queued entry still asks for activation
 * bit  14    EVICTING      claimed for the evict callback (see below)
 * bit  15    reserved
 * bits 16-31 id of the lruvec (0 = none)
 *
 * PENDING, LISTED and ISOLATED are mutually exclusive; none set = idle.
 * While LISTED, the bits that choose the list (type, ACTIVE, UNEVICTABLE)
 * change only under the lruvec lock, together with the move.  REFERENCED,
 * QUEUED and WANT_ACT change locklessly, by CAS.
 */
#define F_TYPE_MASK 0x3u
#define F_ACTIVE RCL_LRU_F_ACTIVE
#define F_UNEVICTABLE RCL_LRU_F_UNEVICTABLE
#define F_PENDING RCL_LRU_F_PENDING
#define F_LISTED RCL_LRU_F_LISTED
#define F_ISOLATED RCL_LRU_F_ISOLATED
#define F_QUEUED (1u << 7)
/*
 * The queued entry still asks for an activation.  QUEUED alone means "an
 * entry exists"; isolation may perform the activation early (and clears
 * this bit), leaving a stale entry behind that must not activate again.
 */
#define F_WANT_ACT (1u << 13)
#define F_REFERENCED RCL_LRU_F_REFERENCED
#define F_WORKINGSET RCL_LRU_F_WORKINGSET
#define F_DIRTY RCL_LRU_F_DIRTY
#define F_WRITEBACK RCL_LRU_F_WRITEBACK
#define F_RECLAIM RCL_LRU_F_RECLAIM
/*
 * Reclaim hands the node to the evict callback: set by CAS on an isolated
 * node just before the callback, and cleared at putback (never after FREED:
 * the node is the application's then).  Its dirty and writeback bits are
 * frozen meanwhile - set_dirty() waits and writeback_start() refuses, and
 * both change the node only by CAS from a state without this bit - so the
 * callback judges a stable object and the accounting after FREED is exact.
 */
#define F_EVICTING (1u << 14)
/*
 * A second reference on the active list (bit 15): set by a hit on an
 * active object that is referenced already, spent by one more rotation at
 * the active tail (adaptive lruvecs only; see rcl_lruvec_shrink_active()).
 * It survives deactivation, so that an object deactivated with it and
 * activated again starts with it.
 */
#define F_REF2 (1u << 15)
#define F_STATE (F_PENDING | F_LISTED | F_ISOLATED)
#define F_ID_SHIFT 16
#define F_PUBLIC                                                              \
	(F_ACTIVE | F_UNEVICTABLE | F_PENDING | F_LISTED | F_ISOLATED |       \
	 F_REFERENCED | F_WORKINGSET | F_DIRTY | F_WRITEBACK | F_RECLAIM)
/* Object state that survives deletion and re-adding: none (idle is clean). */
#define F_KEEP_IDLE 0u

static inline unsigned f_id(uint32_t f)
{
	return f >> F_ID_SHIFT;
}

static inline unsigned f_type(uint32_t f)
{
	return f & F_TYPE_MASK;
}

/* The list a node with flags @f belongs on. */
static inline unsigned f_list(uint32_t f)
{
	if (f & F_UNEVICTABLE)
		return RCL_LRU_UNEVICTABLE;
	return RCL_LRU_LIST(f_type(f), f & F_ACTIVE);
}

static inline uint32_t node_flags(const struct rcl_lru_node *n)
{
	return atomic_load_explicit(&((struct rcl_lru_node *)n)->__flags,
				    memory_order_acquire);
}

static inline bool node_cas(struct rcl_lru_node *n, uint32_t *old, uint32_t new)
{
	return atomic_compare_exchange_weak_explicit(&n->__flags, old, new,
						     memory_order_acq_rel,
						     memory_order_acquire);
}

/* ------------------------------------------------------------------------- */
/* lruvec internals (lib/lruvec.c)                                            */
/* ------------------------------------------------------------------------- */

#define RCL__LRUVEC_MAGIC 0x5652554cu /* "LURV" */

enum rcl__stat {
	RCL__STAT_SCANNED,
	RCL__STAT_FREED,
	RCL__STAT_WEIGHT_FREED,
	RCL__STAT_ROTATED,
	RCL__STAT_ACTIVATED,
	RCL__STAT_DEACTIVATED,
	RCL__STAT_REFILL_SCANNED,
	RCL__STAT_ACTIVE_ROTATED,
	RCL__NR_STATS
};

static inline bool lruvec_live(const struct rcl_lruvec *lv)
{
	return lv && atomic_load_explicit(
			     &((struct rcl_lruvec *)lv)->__magic,
			     memory_order_acquire) == RCL__LRUVEC_MAGIC;
}

/*
 * The lruvec lock: spin briefly, then sleep.  Its holders work on at most one
 * batch of RCL_LRU_BATCH_ISOLATE nodes, a few microseconds even when every
 * node is a cache miss, so a waiter whose holder is running does better to
 * spin than to pay a futex sleep and wake-up (the churn benchmark).
 *
 * It is a futex word of its own (lv->__lock: 0 free, 1 held, 2 held and
 * perhaps waited for; Drepper's "Futexes Are Tricky", mutex 3), not a
 * pthread mutex: taking and releasing it uncontended is one CAS and one
 * exchange, the same two locked instructions as glibc's adaptive mutex,
 * without the 67 instructions a pair that pthread_mutex_trylock() and
 * pthread_mutex_unlock() executed here (callgrind; bench/README.md,
 * hotpath).  A waiter spins on plain loads, 1, 2, 4 .. RCL__LOCK_BACKOFF_MAX
 * pauses apart, for about RCL__LRUVEC_SPINS pauses, whether or not others
 * sleep already, and takes the word with a CAS when it reads it free; then
 * it sleeps on the word, and an unlock that finds 2 wakes one sleeper.  The
 * spin lasts about as long as that of the pthread mutex it replaced (256
 * pauses of spaced trylocks, then glibc's adaptive spin of up to 100 more).
 * A first version that spun half as long and slept as soon as it saw a
 * sleeper measured 0.90x in `rcl-bench stream`'s contended direct reclaim
 * (on a machine found loaded later; bench/README.md).  rcl_lruvec_del_wait()
 * sleeps on a second word, the putback count (rcl__lruvec_wait_putback()).
 * Acquire and release orders make the lock visible to ThreadSanitizer as
 * such.  Without Linux's futex the sleeps are sched_yield() loops.
 */
/* RCL__LRUVEC_SPINS, RCL__LOCK_BACKOFF_MAX, rcl__cpu_relax(): lib/futex_lock.h */


/*
 * Try to take @m for about @spins pause instructions; true if it did.  The
 * tries are spaced out 1, 2, 4 .. RCL__LOCK_BACKOFF_MAX pauses apart, so
 * that a contended lock's line is not pulled away from its holder by a
 * locked instruction (each trylock is one) on every iteration of the wait.
 */
static inline bool rcl__mutex_trylock_spin(pthread_mutex_t *m, unsigned spins)
{
	unsigned spent = 0, j, backoff = 1;

	for (;;) {
		if (pthread_mutex_trylock(m) == 0)
			return true;
		if (spent >= spins)
			return false;
		for (j = 0; j < backoff; j++)
			rcl__cpu_relax();
		spent += backoff;
		if (backoff < RCL__LOCK_BACKOFF_MAX)
			backoff *= 2;
	}
}

/* Lock @m: spin briefly (about @spins pauses), then sleep in the mutex. */
static inline void rcl__mutex_lock_spin(pthread_mutex_t *m, unsigned spins)
{
	if (!rcl__mutex_trylock_spin(m, spins))
		pthread_mutex_lock(m);
}

/* lib/lruvec.c: the contended halves of the lruvec lock, and the wait. */
void rcl__lruvec_lock_slow(struct rcl_lruvec *lv);
void rcl__lruvec_wake_one(struct rcl_lruvec *lv);
void rcl__lruvec_wait_putback(struct rcl_lruvec *lv);
void rcl__lruvec_wake_putback(struct rcl_lruvec *lv);

static inline bool rcl__lruvec_trylock(struct rcl_lruvec *lv)
{
	return rcl__flock_trylock(&lv->__lock);
}

static inline void rcl__lruvec_lock(struct rcl_lruvec *lv)
{
	if (!rcl__lruvec_trylock(lv))
		rcl__lruvec_lock_slow(lv);
}

static inline void rcl__lruvec_unlock(struct rcl_lruvec *lv)
{
	if (rcl__flock_release(&lv->__lock))
		rcl__lruvec_wake_one(lv);
}

/* Does @lv have an evict callback (per object or batched)? */
static inline bool lruvec_can_evict(const struct rcl_lruvec *lv)
{
	return lv->__ops && (lv->__ops->evict || lv->__ops->evict_batch);
}

/* Batch entry operations, applied under the lruvec lock. */
enum rcl__batch_op {
	RCL__OP_ADD = 0,
	RCL__OP_ACTIVATE = 1,
};
/*
 * lib/scan.c: a list of @size objects of a domain with protection @prot and
 * usage @usage, as its scan sees it (apply_proportional_protection()), and
 * rcl_scan_lruvec() with every list so scaled (@prot 0: unchanged).
 */
uint64_t rcl__protected_size(uint64_t size, uint64_t prot, uint64_t usage);
struct rcl_scan_control;
int rcl__scan_lruvec_protected(struct rcl_lruvec *lv,
			       struct rcl_scan_control *sc, uint64_t prot,
			       uint64_t usage);

/* Add @cost to a type's reclaim cost, with the kernel's decay (scan.h). */
void rcl__lruvec_add_cost(struct rcl_lruvec *lv, unsigned type, uint64_t cost);

/* rcl_lruvec_writeback_start() with the lruvec lock held. */
int rcl__lruvec_writeback_start_locked(struct rcl_lruvec *lv,
				       struct rcl_lru_node *node);

void rcl__lruvec_apply_locked(struct rcl_lruvec *lv, struct rcl_lru_node *node,
			      enum rcl__batch_op op);

/* ------------------------------------------------------------------------- */
/* Per-thread batches (lib/batch.c)                                           */
/* ------------------------------------------------------------------------- */

struct rcl__tbatch;

/*
 * Lock the calling thread's batch, creating it on first use.  Returns NULL
 * (nothing locked) if it cannot be created; callers then work unbatched.
 */
struct rcl__tbatch *rcl__tbatch_lock_local(void);
void rcl__tbatch_unlock(struct rcl__tbatch *b);
/* Append an entry to a locked batch; drains the batch when it fills. */
void rcl__tbatch_append(struct rcl__tbatch *b, struct rcl_lru_node *node,
			struct rcl_lruvec *lv, enum rcl__batch_op op);
/*
 * Remove every entry for @node from every batch (the caller has made the node
 * idle, so no new entry can appear) and clear its QUEUED bit.
 */
void rcl__tbatch_purge(struct rcl_lru_node *node);
/*
 * rcl_lruvec_del()'s fast path: if @node is pending on @lv, clean, and its
 * add entry is in the calling thread's own batch, make it idle and drop the
 * entry (one exchange and one CAS).  Returns true if it did; false changes
 * nothing.
 */
bool rcl__tbatch_del_pending_local(struct rcl_lruvec *lv,
				   struct rcl_lru_node *node);
/* Drain every batch's entries for @lv (NULL: everything). */
void rcl__tbatch_drain_all(struct rcl_lruvec *lv);
/* How many batches the registry holds (for tests). */
unsigned rcl__tbatch_count(void);

/*
 * A thread's mark on something it owns until its key destructor runs (its
 * add batch, its charge stock), for the case no destructor sees: a value
 * first set in the last round of key destructors is never destroyed.  A
 * robust mutex that the owner takes at creation and gives back in its
 * destructor; a thread that ends holding it leaves it owner-dead, which a
 * walker's trylock sees.  Every take is a trylock, so that a lock checker
 * (TSan) orders no lock before one held for a thread's life.  @held: the
 * mark was made (false if the mutex could not be: then nothing is known).
 */
struct rcl__owner {
	pthread_mutex_t m;
	bool held;
};

/* Mark @o as the calling thread's (it is creating @o's object). */
static inline void rcl__owner_take(struct rcl__owner *o)
{
	pthread_mutexattr_t attr;

	if (pthread_mutexattr_init(&attr) != 0)
		return;
	if (pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) == 0 &&
	    pthread_mutex_init(&o->m, &attr) == 0) {
		if (pthread_mutex_trylock(&o->m) == 0)
			o->held = true;
		else
			pthread_mutex_destroy(&o->m);
	}
	pthread_mutexattr_destroy(&attr);
}

/*
 * Let go of @o before its object is freed: a held robust mutex is on its
 * holder's robust list, which the kernel writes through at that thread's
 * exit.  (In a fork child the unlock of another thread's mark fails,
 * EPERM: its owner is a thread of the parent, on no list of the child's.)
 */
static inline void rcl__owner_drop(struct rcl__owner *o)
{
	if (o->held) {
		pthread_mutex_unlock(&o->m);
		pthread_mutex_destroy(&o->m);
		o->held = false;
	}
}

/*
 * Did @o's thread end without giving it back?  Then @o is the caller's now
 * (on its robust list: rcl__owner_drop() it before the free).
 */
static inline bool rcl__owner_dead(struct rcl__owner *o)
{
	if (!o->held)
		return false;
	switch (pthread_mutex_trylock(&o->m)) {
	case EOWNERDEAD:
		return true;
	case 0:
		/* Unheld: cannot be, as its owner frees it on letting go. */
		pthread_mutex_unlock(&o->m);
		return false;
	default:
		return false;	/* EBUSY: the owner lives */
	}
}

/* Workingset (lib/workingset.c): the shadow of an eviction now, the clock. */
/* The shadow of an eviction now, @ahead ticks not yet added to the clock. */
uint64_t rcl__workingset_shadow(struct rcl_lruvec *lv, unsigned type,
				uint32_t f, uint64_t ahead);
/*
 * The tier-1 gate (lib/workingset.c): is an inactive object found at the
 * tail with its referenced bit (hit once since it came to the inactive
 * list) to be activated rather than evicted?  rcl__workingset_tiers() counts
 * @e0 evictions without the referenced bit, @e1 with it or protected.
 */
bool rcl__workingset_tier1_protected(struct rcl_lruvec *lv);
void rcl__workingset_tiers(struct rcl_lruvec *lv, unsigned type, unsigned e0,
			   unsigned e1);
void rcl__workingset_age(struct rcl_lruvec *lv, uint64_t n);
/*
 * @n (<= 64) evictions of @type, in order; bit i of @ws_seq: the i-th had
 * the workingset bit.  One update of the ghost estimates for all of them.
 */
void rcl__workingset_evicted(struct rcl_lruvec *lv, unsigned type,
			     uint64_t ws_seq, unsigned n);
unsigned rcl__workingset_target(const struct rcl_lruvec *lv, unsigned type);

/* @share / 65536 of @total, without overflow. */
static inline uint64_t rcl__share_of(uint64_t total, unsigned share)
{
	return (total >> 16) * share + (((total & 0xffff) * share) >> 16);
}

/* Dirty accounting and the flusher trigger (lib/flusher.c). */
struct rcl_domain;
void rcl__domain_dirty_delta(struct rcl_domain *d, int64_t dn, int64_t dw,
			     int64_t wn, int64_t ww);
void rcl__domain_dirtied(struct rcl_domain *d);
void rcl__domain_writeback_done(struct rcl_domain *d, bool ok);
/*
 * Keep @d alive for a call made after dropping the lock of an lruvec that
 * found it attached (get under that lock): rcl_domain_free() waits for it,
 * as the lruvec may be detached meanwhile (lib/domain.c).
 */
void rcl__domain_get(struct rcl_domain *d);
void rcl__domain_put(struct rcl_domain *d);

/* Shrinkers allocated in a registry and not yet freed (lib/shrinker.c). */
struct rcl_shrinker_registry;
struct rcl_shrink_result;
unsigned rcl__shrinker_registry_count(const struct rcl_shrinker_registry *reg);
/* Is the calling thread inside a shrinker's count or scan callback? */
bool rcl__shrinker_in_callback(void);
/*
 * Is it inside a callback that holds what other threads may wait for: a
 * reclaim pass (its slot pins), an evict callback (isolated nodes), a write
 * (objects under writeback)?  (lib/vmscan.c)
 */
bool rcl__in_holding_callback(void);
/* Memory from (and back to) a registry's allocator, for objects tied to it. */
void *rcl__shrinker_registry_alloc(struct rcl_shrinker_registry *reg,
				   size_t size);
void rcl__shrinker_registry_release(struct rcl_shrinker_registry *reg,
				    void *p);
/*
 * A reclaim pass's goal, seen by the shrinker walk: after each scan_objects
 * call that made progress, enough(arg, reported) is asked (@reported: the
 * weight the call put in sc->weight_freed); true ends the walk there, and
 * the part of the call's fresh scan target left undone is dropped, not
 * deferred (the goal made it unnecessary, no context refused it).
 */
struct rcl__shrink_goal {
	bool (*enough)(void *arg, uint64_t reported);
	void *arg;
	bool met;	/* set when enough() said so */
};
/* rcl_shrinker_registry_shrink() that stops once @goal (may be NULL) is met. */
int rcl__shrinker_registry_shrink_goal(struct rcl_shrinker_registry *reg,
				       unsigned partition, int priority,
				       uint64_t context,
				       struct rcl_shrink_result *res,
				       struct rcl__shrink_goal *goal);

/* ------------------------------------------------------------------------- */
/* Per-thread reclaim context                                                 */
/* ------------------------------------------------------------------------- */

/*
 * Every lruvec whose evict callbacks (or batch_end) the calling thread is
 * inside, innermost first: a shrink run from another shrink's callback
 * pushes a frame on its stack.  A refusal must see the outer frames too (a
 * destroy of, or a reclaim through, an lruvec an outer frame still
 * shrinks); "inside any evict callback" is a non-empty chain.
 */
struct rcl__evict_frame {
	struct rcl_lruvec *lv;
	const struct rcl__evict_frame *prev;
};
extern RCL__TLS const struct rcl__evict_frame *rcl__tls_evict_frames;

/* Is the calling thread inside a shrink of @lv, at any depth? */
static inline bool rcl__tls_shrinking(const struct rcl_lruvec *lv)
{
	const struct rcl__evict_frame *f;

	for (f = rcl__tls_evict_frames; f; f = f->prev)
		if (f->lv == lv)
			return true;
	return false;
}
/*
 * Cancellation.  A thread cancelled inside the library, at a cancellation
 * point of a callback (a write(), a wait) or of the library's own waits,
 * would leave what the call holds - isolated nodes, slot pins, locks,
 * objects under writeback - held for ever.  So the calls that run
 * callbacks or wait hold cancellation off while they do, and give the
 * caller's state back on return: a request made meanwhile acts at the
 * caller's next cancellation point.  Nested, only the outermost changes
 * the state (glibc then takes no atomic operation).
 */
static inline int rcl__cancel_off(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void rcl__cancel_restore(int old)
{
	pthread_setcancelstate(old, NULL);
}

static inline void rcl__cancel_restore_at(int *old)
{
	pthread_setcancelstate(*old, NULL);
}

/* Hold cancellation off until the enclosing block ends, on every return. */
#define RCL__CANCEL_OFF_SCOPE()                                                \
	int rcl__cs __attribute__((cleanup(rcl__cancel_restore_at), unused)) = \
		rcl__cancel_off()

/*
 * Non-zero while the calling thread runs the write or sync callback of a
 * batch whose objects it holds under writeback (lib/flusher.c).
 */
extern RCL__TLS unsigned rcl__tls_writing;

/* ------------------------------------------------------------------------- */
/* Fault injection (lib/fault.c)                                              */
/* ------------------------------------------------------------------------- */

/*
 * Every allocation of the library and every thread it creates goes through
 * these, so that a test can make any one of them fail: the hook, if set,
 * is asked first and refuses by returning true.  Internal (hidden, not in
 * libreclaim.sym): only tests linked with the static library can set it.
 */
enum rcl__fault_site {
	RCL__FAULT_ALLOC = 0,	/* rcl__calloc(), rcl__alloc() */
	RCL__FAULT_THREAD = 1,	/* rcl__thread_create() */
};
typedef bool (*rcl__fault_fn)(void *ctx, enum rcl__fault_site site,
			      size_t size);
/* Install (NULL: remove) the hook; not concurrently with library calls. */
void rcl__fault_set(rcl__fault_fn fn, void *ctx);
/* Zeroed memory from malloc, for objects that take no allocator. */
void *rcl__calloc(size_t size);
void rcl__free(void *p);
/* @size bytes from an application's allocator. */
void *rcl__alloc(const struct rcl_allocator *a, size_t size);
/* malloc() and free(), for objects created without an allocator. */
extern const struct rcl_allocator rcl__std_allocator;
/* pthread_create() with default attributes; returns 0 or an errno value. */
int rcl__thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

#endif /* RECLAIM_INTERNAL_H */
