/* SPDX-License-Identifier: MIT */
/*
 * The lruvec: intrusive active/inactive lists, after the kernel's mm/swap.c
 * and mm/vmscan.c.
 *
 * Each list is a circular doubly linked list through the nodes embedded in the
 * application's objects, with a sentinel head in the lruvec; the head is the
 * young end, the tail the old end.  One mutex per lruvec guards the links and
 * the list sizes.  The node's 32-bit flag word carries its state (pending in a
 * batch, listed, isolated, or idle), the bits that choose its list (type,
 * active, unevictable), the referenced bit and the id of its lruvec.  Bits
 * that only age a node (referenced, queued) change by CAS without the lock,
 * which is what makes a cache hit cheap: the hot path of mark_accessed() is
 * one load of the node's flags and, for an active referenced node, nothing
 * else.
 *
 * Reclaim follows isolate_lru_folios()/move_folios_to_lru(): up to 32 nodes
 * are unlinked from the tail under the lock and marked isolated, the lock is
 * dropped while the application's evict callback judges each one, and the
 * survivors are relinked under the lock.  A node that is isolated is in the
 * reclaimer's hands; deleting it reports -EBUSY (or waits, with _del_wait()).
 *
 * Why a CLOCK on the active list rather than the kernel's unconditional
 * deactivation of unmapped pages: the kernel can afford a FIFO active list
 * because refault detection catches what it demotes too early; a user-space
 * cache without that information (workingset comes later) keeps its hot set
 * better if a referenced active object gets one more trip.  The rule is
 * documented in the header and counted (active_rotated).
 *
 * Calls back into this file, each explained where the other side lives:
 * lib/batch.c applies queued adds and activations through
 * rcl__lruvec_apply_locked(); lib/workingset.c, which this file tells of
 * evictions and activations, re-adds refaulting objects; lib/flusher.c,
 * which this file tells of dirty and writeback changes, starts and ends
 * writeback here.  The domain (lib/domain.c) is only pinned from here
 * (rcl__domain_get()/put()).  Nothing in lib/scan.c calls back.
 */
#include "internal.h"
#include "probes.h"
#include "refusal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include <reclaim/flusher.h>

/* ------------------------------------------------------------------------- */
/* Assertions                                                                 */
/* ------------------------------------------------------------------------- */

void rcl__assert_fail(const char *expr, const char *file, int line,
		      const char *func)
{
	fprintf(stderr, "libreclaim: internal invariant violated: %s (%s:%d, %s)\n",
		expr, file, line, func);
	abort();
}

/* ------------------------------------------------------------------------- */
/* lruvec ids                                                                 */
/* ------------------------------------------------------------------------- */

/* Bit i set: id i is in use.  Id 0 is never handed out ("no lruvec"). */
static uint64_t id_map[(RCL_LRUVEC_MAX_IDS + 1) / 64];
static unsigned id_hint = 1;
static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t id_once = PTHREAD_ONCE_INIT;

static void id_lock_take(void) { pthread_mutex_lock(&id_lock); }
static void id_lock_drop(void) { pthread_mutex_unlock(&id_lock); }
static void id_atfork(void) { (void)pthread_atfork(id_lock_take, id_lock_drop, id_lock_drop); }

static unsigned id_alloc(void)
{
	unsigned i, id = 0;

	pthread_once(&id_once, id_atfork);
	pthread_mutex_lock(&id_lock);
	for (i = 0; i < RCL_LRUVEC_MAX_IDS; i++) {
		unsigned cand = 1 + (id_hint - 1 + i) % RCL_LRUVEC_MAX_IDS;

		if (!(id_map[cand / 64] & (1ull << (cand % 64)))) {
			id_map[cand / 64] |= 1ull << (cand % 64);
			id = cand;
			/* Hand ids out round-robin so a freed id is reused late. */
			id_hint = cand % RCL_LRUVEC_MAX_IDS + 1;
			break;
		}
	}
	pthread_mutex_unlock(&id_lock);
	return id;
}

static void id_free(unsigned id)
{
	pthread_mutex_lock(&id_lock);
	id_map[id / 64] &= ~(1ull << (id % 64));
	pthread_mutex_unlock(&id_lock);
}

/* ------------------------------------------------------------------------- */
/* List primitives (lruvec lock held)                                         */
/* ------------------------------------------------------------------------- */

/* Sizes are written under the lock and read lock-free (relaxed). */
static inline void ctr_add(RCL__ATOMIC(uint64_t) *c, int64_t d)
{
	atomic_store_explicit(
		c, atomic_load_explicit(c, memory_order_relaxed) + (uint64_t)d,
		memory_order_relaxed);
}

static inline void stat_add(struct rcl_lruvec *lv, unsigned type,
			    enum rcl__stat s, uint64_t d)
{
	atomic_fetch_add_explicit(&lv->__types[type].stat[s], d,
				  memory_order_relaxed);
}

/*
 * Account a change of a node's DIRTY and WRITEBACK bits (lock held): in the
 * lruvec and, if attached, in its domain.  Attach and detach move an
 * lruvec's counts under the same lock, so the domain's sums stay exact.
 */
static __attribute__((noinline)) void
dirty_account_slow(struct rcl_lruvec *lv, uint32_t oldf, uint32_t newf,
		   uint32_t weight)
{
	int64_t dn = (int64_t)!!(newf & F_DIRTY) - (int64_t)!!(oldf & F_DIRTY);
	int64_t wn = (int64_t)!!(newf & F_WRITEBACK) -
		     (int64_t)!!(oldf & F_WRITEBACK);
	struct rcl_domain *d;

	ctr_add(&lv->__dirty[0], dn);
	ctr_add(&lv->__dirty[1], dn * (int64_t)weight);
	ctr_add(&lv->__dirty[2], wn);
	ctr_add(&lv->__dirty[3], wn * (int64_t)weight);
	d = atomic_load_explicit(&lv->__domain, memory_order_relaxed);
	if (d)
		rcl__domain_dirty_delta(d, dn, dn * (int64_t)weight, wn,
					wn * (int64_t)weight);
}

/* The common case, a clean node that stays clean, inline and first. */
static inline void dirty_account(struct rcl_lruvec *lv, uint32_t oldf,
				 uint32_t newf, uint32_t weight)
{
	if ((oldf ^ newf) & (F_DIRTY | F_WRITEBACK))
		dirty_account_slow(lv, oldf, newf, weight);
}

static inline void link_between(struct rcl_lru_node *n,
				struct rcl_lru_node *prev,
				struct rcl_lru_node *next)
{
	n->__prev = prev;
	n->__next = next;
	prev->__next = n;
	next->__prev = n;
}

static inline void unlink_node(struct rcl_lru_node *n)
{
	n->__prev->__next = n->__next;
	n->__next->__prev = n->__prev;
	n->__next = n->__prev = NULL;
}

static RCL__HOT void list_add_head(struct rcl_lruvec *lv, unsigned list,
			  struct rcl_lru_node *n)
{
	struct rcl__lru_list *l = &lv->__lists[list];

	link_between(n, &l->head, l->head.__next);
	ctr_add(&l->nr, 1);
	ctr_add(&l->weight, n->__weight);
}

static RCL__HOT void list_add_tail(struct rcl_lruvec *lv, unsigned list,
			  struct rcl_lru_node *n)
{
	struct rcl__lru_list *l = &lv->__lists[list];

	link_between(n, l->head.__prev, &l->head);
	ctr_add(&l->nr, 1);
	ctr_add(&l->weight, n->__weight);
}

static RCL__HOT void list_del(struct rcl_lruvec *lv, unsigned list,
		     struct rcl_lru_node *n)
{
	struct rcl__lru_list *l = &lv->__lists[list];

	RCL_ASSERT(atomic_load_explicit(&l->nr, memory_order_relaxed) > 0);
	unlink_node(n);
	ctr_add(&l->nr, -1);
	ctr_add(&l->weight, -(int64_t)n->__weight);
}

static inline struct rcl_lru_node *list_tail(struct rcl_lruvec *lv,
					     unsigned list)
{
	struct rcl__lru_list *l = &lv->__lists[list];

	return l->head.__prev == &l->head ? NULL : l->head.__prev;
}

/*
 * Replace the flag word of a node whose list-choosing bits only change under
 * the lruvec lock (held): @clear and @set are applied to whatever the lockless
 * bits (REFERENCED, QUEUED) are at the moment.  Returns the new value.
 */
static uint32_t flags_update(struct rcl_lru_node *n, uint32_t clear,
			     uint32_t set)
{
	uint32_t f = node_flags(n);

	while (!node_cas(n, &f, (f & ~clear) | set))
		;
	return (f & ~clear) | set;
}

/* Is @n (flags @f) on @lv, in one of the states in @states? */
static inline bool node_on(const struct rcl_lruvec *lv, uint32_t f,
			   uint32_t states)
{
	return (f & states) && f_id(f) == lv->__id;
}

/*
 * Move a listed node (flags @f) to the list its flags choose once @clear and
 * @set are applied: its head, or its tail if @tail.  Lock held.  Returns the
 * new flags.
 */
static uint32_t relink_locked(struct rcl_lruvec *lv, struct rcl_lru_node *n,
			      uint32_t f, uint32_t clear, uint32_t set,
			      bool tail)
{
	list_del(lv, f_list(f), n);
	f = flags_update(n, clear, set);
	if (tail)
		list_add_tail(lv, f_list(f), n);
	else
		list_add_head(lv, f_list(f), n);
	return f;
}

/* Inactive -> active head (clearing @clear too), counted.  Lock held. */
static void activate_locked(struct rcl_lruvec *lv, struct rcl_lru_node *n,
			    uint32_t f, uint32_t clear)
{
	f = relink_locked(lv, n, f, clear, F_ACTIVE, false);
	stat_add(lv, f_type(f), RCL__STAT_ACTIVATED, 1);
	rcl__workingset_age(lv, 1);	/* activations age the clock */
}

/*
 * Active -> inactive head (or tail), as the kernel's deactivation: the node
 * loses its referenced bit and keeps the memory of having been active (the
 * workingset bit).  Counted.  Lock held.
 */
static void deactivate_locked(struct rcl_lruvec *lv, struct rcl_lru_node *n,
			      uint32_t f, bool tail)
{
	f = relink_locked(lv, n, f, F_ACTIVE | F_REFERENCED, F_WORKINGSET, tail);
	stat_add(lv, f_type(f), RCL__STAT_DEACTIVATED, 1);
}

/* ------------------------------------------------------------------------- */
/* Batch application (called by lib/batch.c, lruvec lock held)                */
/* ------------------------------------------------------------------------- */

void rcl__lruvec_apply_locked(struct rcl_lruvec *lv, struct rcl_lru_node *n,
			      enum rcl__batch_op op)
{
	uint32_t f = node_flags(n);

	if (op == RCL__OP_ADD) {
		/* Pending: list it.  Otherwise it was deleted meanwhile. */
		while (node_on(lv, f, F_PENDING)) {
			uint32_t nf = (f & ~(F_PENDING | F_QUEUED)) | F_LISTED;

			if (node_cas(n, &f, nf)) {
				list_add_head(lv, f_list(nf), n);
				return;
			}
		}
	} else {
		/*
		 * A queued activation: still inactive and evictable?  The
		 * entry is dropped by CAS: mark_accessed() may re-arm a stale
		 * entry (set WANT_ACT) between our load and the clear.
		 */
		for (;;) {
			if (node_on(lv, f, F_LISTED) && (f & F_WANT_ACT) &&
			    !(f & (F_ACTIVE | F_UNEVICTABLE))) {
				activate_locked(lv, n, f, F_QUEUED | F_WANT_ACT);
				return;
			}
			if (node_cas(n, &f, f & ~(F_QUEUED | F_WANT_ACT)))
				return;
		}
	}
	atomic_fetch_and_explicit(&n->__flags, ~(F_QUEUED | F_WANT_ACT),
				  memory_order_acq_rel);
}

/* ------------------------------------------------------------------------- */
/* Cost model (read by the scan controller)                                   */
/* ------------------------------------------------------------------------- */

/*
 * The kernel's lru_note_cost(): a type's cost grows with what reclaim met and
 * could not free (rotations) and with refaults; when the costs of all types
 * together exceed a quarter of the lruvec's objects, all are halved, so that
 * recent events weigh more than old ones.  Lock-free: a racing halving may
 * lose a little, which a floating average tolerates.
 */
void rcl__lruvec_add_cost(struct rcl_lruvec *lv, unsigned type, uint64_t cost)
{
	uint64_t sum = 0, size = 0;
	unsigned t, l;

	if (!cost)
		return;
	atomic_fetch_add_explicit(&lv->__cost[type], cost, memory_order_relaxed);
	for (t = 0; t < lv->__nr_types; t++)
		sum += atomic_load_explicit(&lv->__cost[t], memory_order_relaxed);
	for (l = 0; l < RCL_LRU_UNEVICTABLE; l++)
		size += atomic_load_explicit(&lv->__lists[l].nr,
					     memory_order_relaxed);
	if (sum > size / 4) {
		for (t = 0; t < lv->__nr_types; t++)
			atomic_store_explicit(
				&lv->__cost[t],
				atomic_load_explicit(&lv->__cost[t],
						     memory_order_relaxed) / 2,
				memory_order_relaxed);
	}
}

/* ------------------------------------------------------------------------- */
/* Nodes                                                                      */
/* ------------------------------------------------------------------------- */

RCL_API void rcl_lru_node_init(struct rcl_lru_node *node)
{
	if (!node)
		return;
	node->__next = node->__prev = NULL;
	atomic_store_explicit(&node->__flags, 0, memory_order_relaxed);
	node->__weight = 0;
}

RCL_API unsigned rcl_lru_node_flags(const struct rcl_lru_node *node)
{
	return node ? node_flags(node) & F_PUBLIC : 0;
}

RCL_API unsigned rcl_lru_node_type(const struct rcl_lru_node *node)
{
	uint32_t f;

	if (!node)
		return 0;
	f = node_flags(node);
	return (f & F_STATE) ? f_type(f) : 0;
}

/* ------------------------------------------------------------------------- */
/* Lifecycle                                                                  */
/* ------------------------------------------------------------------------- */

/* ------------------------------------------------------------------------- */
/* The lruvec lock (lib/internal.h)                                           */
/* ------------------------------------------------------------------------- */

void rcl__lruvec_lock_slow(struct rcl_lruvec *lv)
{
	rcl__flock_lock_slow(&lv->__lock);
}

void rcl__lruvec_wake_one(struct rcl_lruvec *lv)
{
	rcl__futex_wake(&lv->__lock, 1);
}

/*
 * Lock held: release it, sleep until a putback after this call (or a
 * spurious wake-up), take it again.  The count is read and raised under the
 * lock, so a putback between the unlock and the sleep makes the sleep return
 * at once.
 */
void rcl__lruvec_wait_putback(struct rcl_lruvec *lv)
{
	uint32_t seq = atomic_load_explicit(&lv->__putback,
					    memory_order_relaxed);

	rcl__lruvec_unlock(lv);
	rcl__futex_wait(&lv->__putback, seq);
	rcl__lruvec_lock(lv);
}

/* Lock held: wake every rcl__lruvec_wait_putback() sleeper. */
void rcl__lruvec_wake_putback(struct rcl_lruvec *lv)
{
	atomic_fetch_add_explicit(&lv->__putback, 1, memory_order_relaxed);
	rcl__futex_wake(&lv->__putback, INT_MAX);
}

RCL_API int rcl_lruvec_init(struct rcl_lruvec *lv,
			    const struct rcl_lruvec_config *cfg)
{
	static const struct rcl_lru_type_config defaults[2] = {
		{ "file", 1 },
		{ "anon", 2 },
	};
	const struct rcl_lru_type_config *types = defaults;
	unsigned nr_types = 2, i;
	unsigned id;

	if (!lv)
		return -EINVAL;
	if (cfg && (cfg->nr_types > RCL_LRU_MAX_TYPES ||
		    (cfg->flags & ~RCL_LRUVEC_KERNEL)))
		return -EINVAL;
	if (cfg && cfg->nr_types) {
		types = cfg->types;
		nr_types = cfg->nr_types;
	}

	memset(lv, 0, sizeof(*lv));
	atomic_init(&lv->__lock, 0);
	atomic_init(&lv->__putback, 0);
	id = id_alloc();
	if (!id)
		return -ENOSPC;

	for (i = 0; i < RCL_LRU_NR_LISTS; i++) {
		struct rcl_lru_node *h = &lv->__lists[i].head;

		h->__next = h->__prev = h;
	}
	for (i = 0; i < nr_types; i++) {
		struct rcl__lru_type *t = &lv->__types[i];

		if (types[i].name)
			snprintf(t->name, sizeof(t->name), "%s", types[i].name);
		else
			snprintf(t->name, sizeof(t->name), "type%u", i);
		t->cost = types[i].cost ? types[i].cost : 1;
	}
	lv->__nr_types = nr_types;
	lv->__ops = cfg ? cfg->ops : NULL;
	lv->__priv = cfg ? cfg->priv : NULL;
	lv->__weight_per_gib =
		cfg && cfg->weight_per_gib ? cfg->weight_per_gib : 1ull << 30;
	lv->__flags = cfg ? cfg->flags : 0;
	lv->__id = (uint16_t)id;
	atomic_store_explicit(&lv->__magic, RCL__LRUVEC_MAGIC,
			      memory_order_release);
	return 0;
}

static bool lruvec_empty_locked(struct rcl_lruvec *lv)
{
	unsigned i;

	if (atomic_load_explicit(&lv->__nr_isolated, memory_order_relaxed))
		return false;
	for (i = 0; i < RCL_LRU_NR_LISTS; i++)
		if (lv->__lists[i].head.__next != &lv->__lists[i].head)
			return false;
	return true;
}

RCL_API int rcl_lruvec_destroy(struct rcl_lruvec *lv)
{
	bool empty;

	if (!lruvec_live(lv))
		return 0;
	if (rcl__tls_shrinking(lv))
		return RCL__REFUSE(-EDEADLK, "called from an evict callback (or batch_end) of a shrink of this lruvec, at any depth of nested shrinks");

	/* No batch may keep a pointer to @lv once it is gone. */
	rcl__tbatch_drain_all(lv);

	rcl__lruvec_lock(lv);
	/* Attached: the domain holds a pointer to it (detach it first). */
	empty = lruvec_empty_locked(lv) &&
		!atomic_load_explicit(&lv->__domain, memory_order_relaxed);
	rcl__lruvec_unlock(lv);
	if (!empty)
		return RCL__REFUSE(-EBUSY, "objects are still on it (delete them first) or it is attached to a domain (detach it first)");

	atomic_store_explicit(&lv->__magic, 0, memory_order_release);
	id_free(lv->__id);
	lv->__id = 0;
	return 0;
}

RCL_API unsigned rcl_lruvec_id(const struct rcl_lruvec *lv)
{
	return lruvec_live(lv) ? lv->__id : 0;
}

/* ------------------------------------------------------------------------- */
/* Add, delete, access                                                        */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_lruvec_add(struct rcl_lruvec *lv, struct rcl_lru_node *node,
			   unsigned type, uint32_t weight, unsigned flags)
{
	const unsigned known = RCL_LRU_ADD_ACTIVE | RCL_LRU_ADD_UNEVICTABLE |
			       RCL_LRU_ADD_NOBATCH;
	struct rcl__tbatch *b = NULL;
	uint32_t f, nf;

	if (!lruvec_live(lv) || !node || type >= lv->__nr_types ||
	    (flags & ~known) ||
	    (flags & (RCL_LRU_ADD_ACTIVE | RCL_LRU_ADD_UNEVICTABLE)) ==
		    (RCL_LRU_ADD_ACTIVE | RCL_LRU_ADD_UNEVICTABLE))
		return -EINVAL;

	if (!(flags & RCL_LRU_ADD_NOBATCH))
		b = rcl__tbatch_lock_local();
	if (!b)
		rcl__lruvec_lock(lv);

	/*
	 * Claim the node: idle -> idle and QUEUED, which every other call
	 * refuses or takes for idle (add: -EBUSY; the rest: -ENOENT), so
	 * that its weight is written before it becomes pending or listed:
	 * set_dirty() and writeback_start() account a pending node's weight
	 * under the lruvec lock, which a batched add does not hold.  Then
	 * publish it, pending (batched) or listed, with a release store:
	 * nobody else changes a node claimed so.
	 */
	f = node_flags(node);
	do {
		if (f & (F_STATE | F_QUEUED)) {
			if (b)
				rcl__tbatch_unlock(b);
			else
				rcl__lruvec_unlock(lv);
			return RCL__REFUSE(-EBUSY, "the node is on an lruvec, isolated or in a batch already (double add, or not initialised with rcl_lru_node_init())");
		}
	} while (!node_cas(node, &f, f | F_QUEUED));
	node->__weight = weight;
	nf = (f & F_KEEP_IDLE) | type | ((uint32_t)lv->__id << F_ID_SHIFT);
	if (flags & RCL_LRU_ADD_ACTIVE)
		nf |= F_ACTIVE;
	if (flags & RCL_LRU_ADD_UNEVICTABLE)
		nf |= F_UNEVICTABLE;
	nf |= b ? F_PENDING | F_QUEUED : F_LISTED;
	atomic_store_explicit(&node->__flags, nf, memory_order_release);

	if (b) {
		rcl__tbatch_append(b, node, lv, RCL__OP_ADD);
		rcl__tbatch_unlock(b);
	} else {
		list_add_head(lv, f_list(nf), node);
		rcl__lruvec_unlock(lv);
	}
	return 0;
}

/*
 * Unlink a listed node of @lv and make it idle.  Lock held.  Returns whether
 * it has a batch entry left to purge.
 */
static bool del_listed_locked(struct rcl_lruvec *lv, struct rcl_lru_node *n)
{
	uint32_t f = node_flags(n);

	RCL_ASSERT(node_on(lv, f, F_LISTED));
	list_del(lv, f_list(f), n);
	while (!node_cas(n, &f, f & (F_KEEP_IDLE | F_QUEUED)))
		;
	dirty_account(lv, f, 0, n->__weight);
	return f & F_QUEUED;
}

/* Tries are bounded: each retry means another thread changed the state. */
#define STATE_RETRIES 64

/* Is the node held by someone else: isolated, or pinned by writeback? */
static inline bool node_held(const struct rcl_lruvec *lv, uint32_t f)
{
	return node_on(lv, f, F_ISOLATED) ||
	       (node_on(lv, f, F_STATE) && (f & F_WRITEBACK));
}

static int do_del(struct rcl_lruvec *lv, struct rcl_lru_node *node, bool wait)
{
	unsigned tries;

	if (!lruvec_live(lv) || !node)
		return -EINVAL;

	for (tries = 0; tries < STATE_RETRIES; tries++) {
		uint32_t f = node_flags(node);
		bool queued;

		if (!node_on(lv, f, F_STATE))
			return -ENOENT;
		if (!wait && node_held(lv, f))
			return rcl__refuse("rcl_lruvec_del", -EBUSY,
					   "a reclaimer holds the node isolated or it is under writeback (use rcl_lruvec_del_wait())");
		if ((f & F_PENDING) && !(f & (F_DIRTY | F_WRITEBACK))) {
			/* In our own batch (the common case): one CAS. */
			if (rcl__tbatch_del_pending_local(lv, node))
				return 0;
			f = node_flags(node);
			if (!node_on(lv, f, F_PENDING) ||
			    (f & (F_DIRTY | F_WRITEBACK)))
				continue;
			/* Not on a list: only the batch entry refers to it. */
			if (!node_cas(node, &f, f & (F_KEEP_IDLE | F_QUEUED)))
				continue;
			rcl__tbatch_purge(node);
			return 0;
		}

		rcl__lruvec_lock(lv);
		f = node_flags(node);
		if (wait && node_held(lv, f)) {
			int cs;

			/*
			 * An evict callback may wait for itself (or for a
			 * thread that waits for it), and so may a write
			 * callback for the writeback its own batch holds.
			 */
			if (rcl__tls_evict_frames || rcl__tls_writing) {
				rcl__lruvec_unlock(lv);
				return rcl__refuse("rcl_lruvec_del_wait", -EDEADLK,
						   "would wait for an isolated or written node from an evict or write callback");
			}
			/*
			 * Wait for the putback (or the end of the writeback),
			 * then delete under the same lock hold, so that no
			 * other reclaimer can isolate the node again in
			 * between.  Not a cancellation point: a thread
			 * cancelled in the wait would die holding the lock.
			 */
			cs = rcl__cancel_off();
			atomic_fetch_add_explicit(&lv->__nr_waiters, 1,
						  memory_order_relaxed);
			while (node_held(lv, f)) {
				rcl__lruvec_wait_putback(lv);
				f = node_flags(node);
			}
			atomic_fetch_sub_explicit(&lv->__nr_waiters, 1,
						  memory_order_relaxed);
			rcl__cancel_restore(cs);
		}
		if (node_held(lv, f)) {
			rcl__lruvec_unlock(lv);
			return rcl__refuse(wait ? "rcl_lruvec_del_wait" : "rcl_lruvec_del",
					   -EBUSY, "a reclaimer holds the node isolated or it is under writeback");
		}
		if (node_on(lv, f, F_PENDING)) {
			/* Pending and dirty: account under the lock. */
			if (!node_cas(node, &f, f & (F_KEEP_IDLE | F_QUEUED))) {
				rcl__lruvec_unlock(lv);
				continue;
			}
			dirty_account(lv, f, 0, node->__weight);
			rcl__lruvec_unlock(lv);
			rcl__tbatch_purge(node);
			return 0;
		}
		if (!node_on(lv, f, F_LISTED)) {
			rcl__lruvec_unlock(lv);
			continue;	/* gone meanwhile: look again */
		}
		queued = del_listed_locked(lv, node);
		rcl__lruvec_unlock(lv);
		if (queued)
			rcl__tbatch_purge(node);
		return 0;
	}
	/* Another thread keeps changing the node: the caller races itself. */
	return rcl__refuse(wait ? "rcl_lruvec_del_wait" : "rcl_lruvec_del", -EBUSY,
			   "other threads kept changing the node's state (concurrent calls on one node)");
}

RCL_API int rcl_lruvec_del(struct rcl_lruvec *lv, struct rcl_lru_node *node)
{
	return do_del(lv, node, false);
}

RCL_API int rcl_lruvec_del_wait(struct rcl_lruvec *lv,
				struct rcl_lru_node *node)
{
	return do_del(lv, node, true);
}

/*
 * rcl_lruvec_mark_accessed() past its hot path, with the node's flags @f.
 * Out of line, so that the hot path saves no registers for it.
 */
static __attribute__((noinline)) int
mark_accessed_slow(struct rcl_lruvec *lv, struct rcl_lru_node *node, uint32_t f)
{
	unsigned tries;

	for (tries = 0; tries < STATE_RETRIES; tries++) {
		struct rcl__tbatch *b;

		if (!lruvec_live(lv))
			return -EINVAL;
		if (!node_on(lv, f, F_STATE))
			return -ENOENT;
		if (!(f & F_REFERENCED)) {
			/* First touch (or first since aged). */
			if (node_cas(node, &f, f | F_REFERENCED))
				return 0;
			continue;
		}
		if (f & F_ACTIVE) {
			/*
			 * A second reference while active and referenced
			 * (once per ageing; read by adaptive lruvecs only).
			 */
			if (!(f & F_REF2) && !node_cas(node, &f, f | F_REF2))
				continue;
			return 0;
		}
		if (f & (F_ISOLATED | F_UNEVICTABLE))
			return 0;	/* nothing to move */
		if (f & F_PENDING) {
			/* Second touch before the add is drained: land active. */
			if (node_cas(node, &f, (f | F_ACTIVE) & ~F_REFERENCED))
				return 0;
			continue;
		}
		if (f & F_QUEUED) {
			/*
			 * An entry exists.  If it is stale (isolation did its
			 * activation already), make it ask again.
			 */
			if ((f & F_WANT_ACT) ||
			    node_cas(node, &f, (f | F_WANT_ACT) & ~F_REFERENCED))
				return 0;
			continue;
		}

		/* Second touch of a listed inactive node: queue activation. */
		b = rcl__tbatch_lock_local();
		if (!b) {
			rcl__lruvec_lock(lv);
			f = node_flags(node);
			if (node_on(lv, f, F_LISTED) &&
			    !(f & (F_ACTIVE | F_UNEVICTABLE | F_QUEUED)))
				activate_locked(lv, node, f, F_REFERENCED);
			rcl__lruvec_unlock(lv);
			return 0;
		}
		if (node_cas(node, &f,
			     (f | F_QUEUED | F_WANT_ACT) & ~F_REFERENCED)) {
			rcl__tbatch_append(b, node, lv, RCL__OP_ACTIVATE);
			rcl__tbatch_unlock(b);
			return 0;
		}
		rcl__tbatch_unlock(b);
	}
	return 0;	/* contended to death: losing one access is harmless */
}

RCL_API int rcl_lruvec_mark_accessed(struct rcl_lruvec *lv,
				     struct rcl_lru_node *node)
{
	uint32_t f;

	if (unlikely(!lv || !node))
		return -EINVAL;
	f = atomic_load_explicit(&node->__flags, memory_order_relaxed);
	/* The hot path: active and referenced twice already.  No store. */
	if (likely((f & (F_ACTIVE | F_REFERENCED | F_REF2)) ==
			   (F_ACTIVE | F_REFERENCED | F_REF2) &&
		   f_id(f) == lv->__id && f_id(f) != 0))
		return 0;
	return mark_accessed_slow(lv, node, f);
}

/* ------------------------------------------------------------------------- */
/* Moves of a single node                                                     */
/* ------------------------------------------------------------------------- */

/*
 * Lock @lv with @node listed on it: drains the batch holding a pending node
 * first.  Returns 0 with the lock held and *@fp the node's flags, or an error
 * with the lock not held.
 */
static int lock_listed(struct rcl_lruvec *lv, struct rcl_lru_node *node,
		       uint32_t *fp, const char *who)
{
	unsigned tries;

	if (!lruvec_live(lv) || !node)
		return -EINVAL;
	for (tries = 0; tries < STATE_RETRIES; tries++) {
		uint32_t f;

		rcl__lruvec_lock(lv);
		f = node_flags(node);
		if (node_on(lv, f, F_LISTED)) {
			*fp = f;
			return 0;
		}
		rcl__lruvec_unlock(lv);
		if (node_on(lv, f, F_ISOLATED))
			return rcl__refuse(who, -EBUSY, "a reclaimer holds the node isolated");
		if (!node_on(lv, f, F_PENDING))
			return -ENOENT;
		/* Pending: bring it to its list, ours first. */
		rcl_lru_drain_local();
		if (node_on(lv, node_flags(node), F_PENDING))
			rcl__tbatch_drain_all(lv);
	}
	return rcl__refuse(who, -EBUSY,
			   "other threads kept changing the node's state (concurrent calls on one node)");
}

RCL_API int rcl_lruvec_rotate(struct rcl_lruvec *lv, struct rcl_lru_node *node)
{
	uint32_t f;
	int err = lock_listed(lv, node, &f, "rcl_lruvec_rotate");

	if (err)
		return err;
	if (f & F_UNEVICTABLE) {
		rcl__lruvec_unlock(lv);
		return -EPERM;
	}
	if (f & F_ACTIVE)
		deactivate_locked(lv, node, f, true);
	else
		relink_locked(lv, node, f, F_REFERENCED, 0, true);
	rcl__lruvec_unlock(lv);
	return 0;
}

RCL_API int rcl_lruvec_deactivate(struct rcl_lruvec *lv,
				  struct rcl_lru_node *node)
{
	uint32_t f;
	int err = lock_listed(lv, node, &f, "rcl_lruvec_deactivate");

	if (err)
		return err;
	if (f & F_UNEVICTABLE) {
		rcl__lruvec_unlock(lv);
		return -EPERM;
	}
	if (f & F_ACTIVE)
		deactivate_locked(lv, node, f, false);
	else
		flags_update(node, F_REFERENCED, 0);
	rcl__lruvec_unlock(lv);
	return 0;
}

RCL_API int rcl_lruvec_mark_unevictable(struct rcl_lruvec *lv,
					struct rcl_lru_node *node)
{
	uint32_t f;
	int err = lock_listed(lv, node, &f, "rcl_lruvec_mark_unevictable");

	if (err)
		return err;
	if (!(f & F_UNEVICTABLE))
		relink_locked(lv, node, f, F_ACTIVE, F_UNEVICTABLE, false);
	rcl__lruvec_unlock(lv);
	return 0;
}

RCL_API int rcl_lruvec_unmark_unevictable(struct rcl_lruvec *lv,
					  struct rcl_lru_node *node)
{
	uint32_t f;
	int err = lock_listed(lv, node, &f, "rcl_lruvec_unmark_unevictable");

	if (err)
		return err;
	if (f & F_UNEVICTABLE)
		relink_locked(lv, node, f, F_UNEVICTABLE | F_ACTIVE, 0, false);
	rcl__lruvec_unlock(lv);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Sizes and statistics                                                       */
/* ------------------------------------------------------------------------- */

RCL_API size_t rcl_lruvec_count(const struct rcl_lruvec *lv, unsigned list,
				uint64_t *weight)
{
	struct rcl__lru_list *l;

	if (!lruvec_live(lv) || list >= RCL_LRU_NR_LISTS) {
		if (weight)
			*weight = 0;
		return 0;
	}
	l = (struct rcl__lru_list *)&lv->__lists[list];
	if (weight)
		*weight = atomic_load_explicit(&l->weight, memory_order_relaxed);
	return (size_t)atomic_load_explicit(&l->nr, memory_order_relaxed);
}

RCL_API size_t rcl_lruvec_nr_isolated(const struct rcl_lruvec *lv)
{
	if (!lruvec_live(lv))
		return 0;
	return (size_t)atomic_load_explicit(
		&((struct rcl_lruvec *)lv)->__nr_isolated, memory_order_relaxed);
}

RCL_API unsigned rcl_lruvec_nr_types(const struct rcl_lruvec *lv)
{
	return lruvec_live(lv) ? lv->__nr_types : 0;
}

RCL_API const char *rcl_lruvec_type_name(const struct rcl_lruvec *lv,
					 unsigned type)
{
	if (!lruvec_live(lv) || type >= lv->__nr_types)
		return NULL;
	return lv->__types[type].name;
}

RCL_API uint32_t rcl_lruvec_type_cost(const struct rcl_lruvec *lv,
				      unsigned type)
{
	if (!lruvec_live(lv) || type >= lv->__nr_types)
		return 0;
	return lv->__types[type].cost;
}

RCL_API int rcl_lruvec_stats(const struct rcl_lruvec *lv, unsigned type,
			     struct rcl_lruvec_type_stats *out)
{
	struct rcl__lru_type *t;
	uint64_t v[RCL__NR_STATS];
	unsigned i;

	if (!lruvec_live(lv) || type >= lv->__nr_types || !out)
		return -EINVAL;
	t = (struct rcl__lru_type *)&lv->__types[type];
	for (i = 0; i < RCL__NR_STATS; i++)
		v[i] = atomic_load_explicit(&t->stat[i], memory_order_relaxed);
	out->scanned = v[RCL__STAT_SCANNED];
	out->freed = v[RCL__STAT_FREED];
	out->weight_freed = v[RCL__STAT_WEIGHT_FREED];
	out->rotated = v[RCL__STAT_ROTATED];
	out->activated = v[RCL__STAT_ACTIVATED];
	out->deactivated = v[RCL__STAT_DEACTIVATED];
	out->refill_scanned = v[RCL__STAT_REFILL_SCANNED];
	out->active_rotated = v[RCL__STAT_ACTIVE_ROTATED];
	return 0;
}

/* Integer square root (floor), Newton's method; no libm. */
static uint64_t isqrt64(uint64_t x)
{
	uint64_t r, y;

	if (x < 2)
		return x;
	r = x;
	y = (r + 1) / 2;
	while (y < r) {
		r = y;
		y = (r + x / r) / 2;
	}
	return r;
}

RCL_API unsigned rcl_lruvec_inactive_ratio(const struct rcl_lruvec *lv,
					   unsigned type)
{
	uint64_t in, act, gb;

	if (!lruvec_live(lv) || type >= lv->__nr_types)
		return 0;
	rcl_lruvec_count(lv, RCL_LRU_LIST(type, 0), &in);
	rcl_lruvec_count(lv, RCL_LRU_LIST(type, 1), &act);
	gb = (in + act) / lv->__weight_per_gib;
	return gb ? (unsigned)isqrt64(10 * gb) : 1;
}

RCL_API bool rcl_lruvec_inactive_is_low(const struct rcl_lruvec *lv,
					unsigned type)
{
	uint64_t in, act;
	unsigned ratio = rcl_lruvec_inactive_ratio(lv, type);
	unsigned share;

	if (!ratio)
		return false;
	rcl_lruvec_count(lv, RCL_LRU_LIST(type, 0), &in);
	rcl_lruvec_count(lv, RCL_LRU_LIST(type, 1), &act);
	share = rcl__workingset_target(lv, type);
	if (share)	/* never empty while there is something to age */
		return in < rcl__share_of(in + act, share) || (!in && act);
	return in * ratio < act;
}

/* ------------------------------------------------------------------------- */
/* Dirty, writeback, reclaim-when-clean (flusher.h)                           */
/* ------------------------------------------------------------------------- */

static void wake_waiters_locked(struct rcl_lruvec *lv);

/*
 * Wait, lock held, until reclaim puts back a node it handed to the evict
 * callback (F_EVICTING).  Returns the node's flags then, or -EDEADLK from
 * any evict callback: the callback may be the one holding the node, or wait
 * for one that does (conservatively, as rcl_lruvec_del_wait()); the caller
 * refuses once it has dropped the lock (the refusal log is the
 * application's, and a fork() from it would wait for batches whose holders
 * wait for this lock).
 */
static int wait_evicting_locked(struct rcl_lruvec *lv, struct rcl_lru_node *node,
				uint32_t *fp)
{
	uint32_t f = *fp;
	int cs;

	if (rcl__tls_evict_frames)
		return -EDEADLK;
	/* Not a cancellation point: see do_del(). */
	cs = rcl__cancel_off();
	atomic_fetch_add_explicit(&lv->__nr_waiters, 1, memory_order_relaxed);
	while (node_on(lv, f, F_ISOLATED) && (f & F_EVICTING)) {
		rcl__lruvec_wait_putback(lv);
		f = node_flags(node);
	}
	atomic_fetch_sub_explicit(&lv->__nr_waiters, 1, memory_order_relaxed);
	rcl__cancel_restore(cs);
	*fp = f;
	return 0;
}

/*
 * The domain an lruvec is attached to, kept alive for a call after the
 * lruvec lock is dropped (rcl__domain_put() after it).  Lock held.
 */
static struct rcl_domain *domain_get_locked(struct rcl_lruvec *lv)
{
	struct rcl_domain *d = atomic_load_explicit(&lv->__domain,
						    memory_order_relaxed);

	if (d)
		rcl__domain_get(d);
	return d;
}

RCL_API int rcl_lruvec_set_dirty(struct rcl_lruvec *lv, struct rcl_lru_node *node)
{
	struct rcl_domain *d = NULL;
	uint32_t f;

	if (!lruvec_live(lv) || !node)
		return -EINVAL;
	rcl__lruvec_lock(lv);
	f = node_flags(node);
	for (;;) {
		if (!node_on(lv, f, F_STATE)) {
			rcl__lruvec_unlock(lv);
			return -ENOENT;
		}
		if (f & F_EVICTING) {
			/*
			 * The evict callback is judging the object as it
			 * found it, clean: it must not become dirty under the
			 * callback's feet (and be freed dirty).  Wait for its
			 * answer; the caller's pin makes it keep the object.
			 */
			int err = wait_evicting_locked(lv, node, &f);

			if (err) {
				rcl__lruvec_unlock(lv);
				return rcl__refuse("rcl_lruvec_set_dirty", err,
						   "would wait for a node in an evict callback's hands from an evict callback");
			}
			continue;
		}
		if (f & F_DIRTY)
			break;
		/* Reclaim claims nodes without the lock: CAS from unclaimed. */
		if (node_cas(node, &f, f | F_DIRTY)) {
			dirty_account(lv, f, f | F_DIRTY, node->__weight);
			d = domain_get_locked(lv);
			break;
		}
	}
	rcl__lruvec_unlock(lv);
	if (d) {
		rcl__domain_dirtied(d);	/* the background threshold */
		rcl__domain_put(d);
	}
	return 0;
}

int rcl__lruvec_writeback_start_locked(struct rcl_lruvec *lv,
				       struct rcl_lru_node *node)
{
	uint32_t f = node_flags(node), nf;

	do {
		if (!node_on(lv, f, F_STATE))
			return -ENOENT;
		/* Claimed: the baseline's evict callback is writing it. */
		if (f & (F_WRITEBACK | F_EVICTING))
			return -EBUSY;
		if (!(f & F_DIRTY))
			return -EINVAL;
		nf = (f & ~F_DIRTY) | F_WRITEBACK;
	} while (!node_cas(node, &f, nf));
	dirty_account(lv, f, nf, node->__weight);
	return 0;
}

RCL_API int rcl_lruvec_writeback_start(struct rcl_lruvec *lv,
				       struct rcl_lru_node *node)
{
	int err;

	if (!lruvec_live(lv) || !node)
		return -EINVAL;
	rcl__lruvec_lock(lv);
	err = rcl__lruvec_writeback_start_locked(lv, node);
	rcl__lruvec_unlock(lv);
	if (err == -EBUSY)
		return RCL__REFUSE(err, "the node is under writeback already, or an evict callback is writing it");
	return err;
}

RCL_API int rcl_lruvec_writeback_end(struct rcl_lruvec *lv,
				     struct rcl_lru_node *node, int error)
{
	struct rcl_domain *d;
	uint32_t f, nf, weight;
	bool rotate;

	if (!lruvec_live(lv) || !node)
		return -EINVAL;
	rcl__lruvec_lock(lv);
	f = node_flags(node);
	if (!node_on(lv, f, F_STATE)) {
		rcl__lruvec_unlock(lv);
		return -ENOENT;
	}
	if (!(f & F_WRITEBACK)) {
		rcl__lruvec_unlock(lv);
		return -EINVAL;
	}
	/*
	 * Clearing WRITEBACK ends the pin.  An isolated node may be freed by
	 * its reclaimer's evict callback from that moment on, without our
	 * lock (and a clean pending node may be deleted without it): so read
	 * what we need first and make every change to the node in that one
	 * CAS.  Only a listed node, which cannot leave without the lock we
	 * hold, is touched afterwards (the rotation).
	 */
	weight = node->__weight;
	do {
		/* A failed write leaves the object dirty. */
		nf = (f & ~F_WRITEBACK) | (error ? F_DIRTY : 0);
		/*
		 * Reclaim wanted it when clean: a listed node moves to the
		 * inactive tail, so that the next scan frees it
		 * (folio_rotate_reclaimable()); elsewhere the flag goes.
		 */
		rotate = (nf & F_RECLAIM) && !(nf & F_DIRTY) &&
			 node_on(lv, nf, F_LISTED) && !(nf & F_UNEVICTABLE);
		if (!(nf & F_DIRTY) && !rotate)
			nf &= ~F_RECLAIM;
	} while (!node_cas(node, &f, nf));
	dirty_account(lv, f, nf, weight);
	if (rotate) {
		relink_locked(lv, node, nf, F_RECLAIM | F_ACTIVE | F_REFERENCED,
			      0, true);
		stat_add(lv, f_type(nf), RCL__STAT_ROTATED, 1);
	}
	/*
	 * Still under the lruvec lock, so that the domain cannot be detached
	 * and freed meanwhile (its wake-up takes only a leaf lock).
	 */
	d = atomic_load_explicit(&lv->__domain, memory_order_relaxed);
	/*
	 * A failed write is no progress for rcl_domain_balance_dirty(), or it
	 * would ask a flusher that fails every write again and again until
	 * its timeout; it still ends a writeback for the reclaim throttle.
	 */
	if (d)
		rcl__domain_writeback_done(d, !error);
	wake_waiters_locked(lv);	/* rcl_lruvec_del_wait() */
	rcl__lruvec_unlock(lv);
	return 0;
}

RCL_API int rcl_lruvec_dirty_stats(const struct rcl_lruvec *lv,
				   struct rcl_dirty_stats *out)
{
	struct rcl_lruvec *w = (struct rcl_lruvec *)lv;

	if (!lruvec_live(lv) || !out)
		return -EINVAL;
	out->nr_dirty = atomic_load_explicit(&w->__dirty[0], memory_order_relaxed);
	out->weight_dirty = atomic_load_explicit(&w->__dirty[1],
						 memory_order_relaxed);
	out->nr_writeback = atomic_load_explicit(&w->__dirty[2],
						 memory_order_relaxed);
	out->weight_writeback = atomic_load_explicit(&w->__dirty[3],
						     memory_order_relaxed);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Isolation and putback                                                      */
/* ------------------------------------------------------------------------- */

RCL_API void rcl_lru_isolated_init(struct rcl_lru_isolated *iso)
{
	if (!iso)
		return;
	memset(iso, 0, sizeof(*iso));
	iso->__head.__next = iso->__head.__prev = &iso->__head;
}

static bool iso_ok(const struct rcl_lru_isolated *iso)
{
	return iso && iso->__head.__next && iso->__head.__prev;
}

/*
 * May reclaim (with RCL_LRU_SHRINK_* @shrink_flags) hand a node with flags
 * @f to the evict callback?  Not if it is dirty (unless the baseline hands
 * those over) or under writeback.
 */
static inline bool evictable_now(uint32_t f, unsigned shrink_flags)
{
	return !(f & (F_DIRTY | F_WRITEBACK)) ||
	       (!(f & F_WRITEBACK) &&
		(shrink_flags & RCL_LRU_SHRINK_WRITE_DIRTY));
}

/*
 * rcl_lruvec_isolate(); with @claim (rcl_lruvec_shrink_inactive()), each
 * node that the evict callback may have (evictable_now()) is also claimed
 * for it (F_EVICTING) by the isolating CAS itself, which saves reclaim a
 * second locked instruction per node.
 */
static void isolate_nodes(struct rcl_lruvec *lv, unsigned list,
			  size_t nr_to_scan, struct rcl_lru_isolated *iso,
			  bool claim, unsigned shrink_flags)
{
	size_t scanned = 0;
	bool inactive = !(list & 1);

	iso->__lv = lv;

	/* Pending adds and activations of this thread reach the lists first. */
	rcl_lru_drain_local();

	while (scanned < nr_to_scan) {
		size_t chunk = RCL_MIN(nr_to_scan - scanned,
				       (size_t)RCL_LRU_BATCH_ISOLATE);
		size_t k, taken = 0, activated = 0, protected = 0;
		bool empty = false;
		/* Reclaim's own isolation: is tier 1 protected (workingset.c)? */
		bool tier1 = claim && inactive &&
			     rcl__workingset_tier1_protected(lv);

		rcl__lruvec_lock(lv);
		for (k = 0; k < chunk; k++) {
			struct rcl_lru_node *n = list_tail(lv, list);
			uint32_t f;

			if (!n) {
				empty = true;
				break;
			}
			list_del(lv, list, n);
			if (tier1) {
				f = node_flags(n);
				if ((f & F_REFERENCED) &&
				    !(f & (F_WANT_ACT | F_DIRTY | F_WRITEBACK))) {
					/* Hit once here: activate, not evict. */
					f = flags_update(n, F_REFERENCED,
							 F_ACTIVE);
					list_add_head(lv, f_list(f), n);
					activated++;
					protected++;
					continue;
				}
			}
			/*
			 * Decide and isolate in one CAS: mark_accessed() may
			 * queue an activation (set QUEUED, by CAS, on a LISTED
			 * node) at any moment until the node is ISOLATED.
			 */
			f = node_flags(n);
			while (!(inactive && (f & F_WANT_ACT)) &&
			       !node_cas(n, &f,
					 (f & ~F_LISTED) | F_ISOLATED |
						 (claim && evictable_now(
								   f, shrink_flags)
							  ? F_EVICTING
							  : 0)))
				;
			if (inactive && (f & F_WANT_ACT)) {
				/*
				 * Accessed twice, activation still in a batch:
				 * activate now rather than evict a hot object.
				 * The entry stays (QUEUED) but is now stale.
				 */
				f = flags_update(n, F_REFERENCED | F_WANT_ACT,
						 F_ACTIVE);
				list_add_head(lv, f_list(f), n);
				activated++;
				continue;
			}
			link_between(n, iso->__head.__prev, &iso->__head);
			iso->nr++;
			iso->weight += n->__weight;
			taken++;
		}
		if (taken)
			atomic_fetch_add_explicit(&lv->__nr_isolated, taken,
						  memory_order_relaxed);
		rcl__lruvec_unlock(lv);
		if (activated) {
			/* One list: every node is of the list's type. */
			stat_add(lv, list / 2, RCL__STAT_ACTIVATED, activated);
			rcl__workingset_age(lv, activated);
		}
		/* Protections count in tier 1's denominator. */
		if (protected)
			rcl__workingset_tiers(lv, list / 2, 0, protected);
		scanned += k;
		if (empty)
			break;
	}
	iso->nr_scanned = scanned;
}

RCL_API int rcl_lruvec_isolate(struct rcl_lruvec *lv, unsigned list,
			       size_t nr_to_scan, struct rcl_lru_isolated *iso)
{
	if (!lruvec_live(lv) || !iso_ok(iso) || list >= RCL_LRU_UNEVICTABLE ||
	    list / 2 >= lv->__nr_types || (iso->nr && iso->__lv != lv))
		return -EINVAL;
	isolate_nodes(lv, list, nr_to_scan, iso, false, 0);
	return 0;
}

RCL_API struct rcl_lru_node *rcl_lru_isolated_next(struct rcl_lru_isolated *iso,
						   struct rcl_lru_node *pos)
{
	struct rcl_lru_node *n;

	if (!iso_ok(iso))
		return NULL;
	n = pos ? pos->__next : iso->__head.__next;
	return n == &iso->__head ? NULL : n;
}

/* Is @node isolated from the set's lruvec? */
static bool iso_member(const struct rcl_lru_isolated *iso,
		       const struct rcl_lru_node *node)
{
	return iso_ok(iso) && node && iso->__lv && node->__next &&
	       node_on(iso->__lv, node_flags(node), F_ISOLATED);
}

/* Wake rcl_lruvec_del_wait() callers; lock held. */
static void wake_waiters_locked(struct rcl_lruvec *lv)
{
	if (atomic_load_explicit(&lv->__nr_waiters, memory_order_relaxed))
		rcl__lruvec_wake_putback(lv);
}

RCL_API int rcl_lru_isolated_remove(struct rcl_lru_isolated *iso,
				    struct rcl_lru_node *node)
{
	struct rcl_lruvec *lv;
	uint32_t f;

	if (!iso_member(iso, node))
		return -EINVAL;
	lv = iso->__lv;
	/*
	 * An isolated node may still have a stale activation entry in some
	 * thread's batch (isolation of the inactive list activated it): purge
	 * it while the node is still ISOLATED (no new entry can appear for an
	 * isolated node), or that batch would later touch memory the caller
	 * frees.  Harmless if the node then stays in the set.
	 */
	if (node_flags(node) & F_QUEUED)
		rcl__tbatch_purge(node);
	/*
	 * Make it idle under the lruvec lock: a rcl_lruvec_del_wait() caller
	 * reads the state and goes to sleep under this lock, so it either
	 * sees the node idle or is counted in __nr_waiters and gets woken.
	 */
	rcl__lruvec_lock(lv);
	f = node_flags(node);
	do {
		/*
		 * Under writeback, the writer holds it (flusher.h): the pin
		 * ends with rcl_lruvec_writeback_end(), not here.
		 */
		if (f & F_WRITEBACK) {
			rcl__lruvec_unlock(lv);
			return RCL__REFUSE(-EBUSY, "the node is under writeback: its writer holds it until rcl_lruvec_writeback_end()");
		}
	} while (!node_cas(node, &f, f & F_KEEP_IDLE));
	unlink_node(node);
	iso->nr--;
	iso->weight -= node->__weight;
	dirty_account(lv, f, 0, node->__weight);
	atomic_fetch_sub_explicit(&lv->__nr_isolated, 1, memory_order_relaxed);
	wake_waiters_locked(lv);
	rcl__lruvec_unlock(lv);
	return 0;
}

RCL_API int rcl_lru_isolated_set_active(struct rcl_lru_isolated *iso,
					struct rcl_lru_node *node, bool active)
{
	uint32_t f;

	if (!iso_member(iso, node))
		return -EINVAL;
	f = node_flags(node);
	if (active && !(f & F_ACTIVE))
		flags_update(node, F_REFERENCED, F_ACTIVE);
	else if (!active && (f & F_ACTIVE))
		flags_update(node, F_ACTIVE, F_WORKINGSET);
	return 0;
}

/*
 * Relink the nodes of a private list to their lists, ending reclaim's claim
 * on them (set_dirty() waits for that); lock held.
 */
static size_t putback_locked(struct rcl_lruvec *lv, struct rcl_lru_node *head,
			     size_t max)
{
	size_t n = 0;

	while (n < max && head->__next != head) {
		struct rcl_lru_node *node = head->__next;
		uint32_t f;

		unlink_node(node);
		f = flags_update(node, F_ISOLATED | F_EVICTING, F_LISTED);
		list_add_head(lv, f_list(f), node);
		n++;
	}
	return n;
}

static void putback_list(struct rcl_lruvec *lv, struct rcl_lru_node *head)
{
	while (head->__next != head) {
		size_t n;

		rcl__lruvec_lock(lv);
		n = putback_locked(lv, head, RCL_LRU_BATCH_ISOLATE);
		atomic_fetch_sub_explicit(&lv->__nr_isolated, n,
					  memory_order_relaxed);
		wake_waiters_locked(lv);
		rcl__lruvec_unlock(lv);
	}
}

RCL_API int rcl_lruvec_putback(struct rcl_lruvec *lv,
			       struct rcl_lru_isolated *iso)
{
	if (!lruvec_live(lv) || !iso_ok(iso) || (iso->nr && iso->__lv != lv))
		return -EINVAL;
	putback_list(lv, &iso->__head);
	iso->nr = 0;
	iso->weight = 0;
	iso->__lv = NULL;	/* an empty set may serve another lruvec */
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Reclaim primitives                                                         */
/* ------------------------------------------------------------------------- */

/*
 * What reclaim does with an isolated node, decided and recorded in one CAS
 * on its flags (*@fp receives them as they were decided on).  A dirty node
 * (unless the baseline hands those over) or one under writeback is flagged
 * for reclaim when clean and activated: returns false.  Otherwise the node
 * is claimed for the evict callback (F_EVICTING): returns true.  The CAS
 * makes the decision and the flags agree: a writeback that ends, a write
 * that starts or a set_dirty() in between makes it fail, and the node is
 * judged again as it now is.
 */
static RCL__HOT bool evict_claim(struct rcl_lru_node *n, unsigned shrink_flags,
			uint32_t *fp)
{
	uint32_t f = node_flags(n), nf;
	bool evict;

	if (f & F_EVICTING) {
		/*
		 * Claimed when isolated: its dirty and writeback bits are
		 * frozen since (only REFERENCED may have changed).
		 */
		*fp = f;
		return true;
	}
	do {
		evict = evictable_now(f, shrink_flags);
		if (evict)
			nf = f | F_EVICTING;
		else
			nf = (f & ~F_REFERENCED) | F_RECLAIM | F_ACTIVE;
	} while (!node_cas(n, &f, nf));
	*fp = f;
	return evict;
}

/* What one isolation pass of rcl_lruvec_shrink_inactive() adds up. */
struct shrink_pass {
	size_t freed, rotated, activated;
	uint64_t wfreed;
	uint64_t aged;		/* workingset clock ticks not yet added */
	uint64_t ws_seq;	/* bit i: the i-th eviction was B2's (below) */
	unsigned nr_evicted;	/* evictions in ws_seq */
	unsigned tier[2];	/* evictions without, with REFERENCED */
};

/*
 * Act on the answer @st for the claimed node @n (flags @f when claimed,
 * evict control @ctl); a kept node goes on @keep.  After FREED, @n is not
 * touched.
 */
static void evict_answer(struct rcl_lruvec *lv, struct rcl_lru_node *n,
			 uint32_t f, const struct rcl_evict_control *ctl,
			 enum rcl_evict_status st, struct rcl_lru_node *keep,
			 struct shrink_pass *p)
{
	switch (st) {
	case RCL_EVICT_FREED:
		p->freed++;
		p->wfreed += ctl->weight;
		p->aged++;	/* an eviction */
		/*
		 * For the ghost estimates, once per pass (one type): B2's are
		 * the evictions with the workingset bit and, adaptive, those
		 * with the referenced bit (ARC's T2: hit since insertion).
		 */
		RCL_ASSERT(p->nr_evicted < 64);
		p->ws_seq |= (uint64_t)((f & F_WORKINGSET) != 0 ||
					((f & F_REFERENCED) &&
					 !(lv->__flags & RCL_LRUVEC_KERNEL)))
			     << p->nr_evicted;
		p->nr_evicted++;
		p->tier[(f & F_REFERENCED) != 0]++;
		if (f & F_DIRTY) {
			/* The baseline's callback wrote it. */
			rcl__lruvec_lock(lv);
			dirty_account(lv, f, 0, ctl->weight);
			rcl__lruvec_unlock(lv);
		}
		return;
	case RCL_EVICT_ACTIVATE:
		flags_update(n, F_REFERENCED, F_ACTIVE);
		p->activated++;
		p->aged++;
		break;
	case RCL_EVICT_BUSY:
	default:	/* an unknown answer keeps the object */
		p->rotated++;
		break;
	}
	link_between(n, keep->__prev, keep);
}

RCL_API int rcl_lruvec_shrink_inactive(struct rcl_lruvec *lv,
				       struct rcl_lru_shrink_control *sc)
{
	size_t remaining;
	const struct rcl__evict_frame *saved_frames;
	struct rcl__evict_frame frame;
	bool batched;
	int cs;

	if (!lruvec_live(lv) || !sc || sc->type >= lv->__nr_types ||
	    !lruvec_can_evict(lv))
		return -EINVAL;
	batched = lv->__ops->evict_batch != NULL;
	/* The callbacks run with cancellation held off (internal.h). */
	cs = rcl__cancel_off();

	saved_frames = rcl__tls_evict_frames;
	frame.lv = lv;
	frame.prev = saved_frames;
	remaining = sc->nr_to_scan;
#if defined(RCL_HAVE_USDT) && RCL_HAVE_USDT
	/* This call's share of the (cumulative) outputs, for the probe. */
	const size_t p_scanned = sc->nr_scanned, p_freed = sc->nr_freed,
		     p_dirty = sc->nr_dirty, p_wb = sc->nr_writeback;
#endif
	while (remaining > 0) {
		struct rcl_lru_isolated iso;
		struct rcl_lru_node keep;
		struct rcl_lru_node *n;
		struct rcl_evict_item items[RCL_LRU_BATCH_ISOLATE];
		uint32_t iflags[RCL_LRU_BATCH_ISOLATE];
		/*
		 * Batched: the pass's nodes in isolation order, NULL for the
		 * next item, so that the kept ones go back in the order the
		 * per-object calls leave them in.
		 */
		struct rcl_lru_node *order[RCL_LRU_BATCH_ISOLATE];
		struct shrink_pass p = { 0 };
		size_t nr_items = 0, nr_order = 0, i, j;

		rcl_lru_isolated_init(&iso);
		isolate_nodes(lv, RCL_LRU_LIST(sc->type, 0),
			      RCL_MIN(remaining, (size_t)RCL_LRU_BATCH_ISOLATE),
			      &iso, true, sc->flags);
		sc->nr_scanned += iso.nr_scanned;
		sc->nr_taken += iso.nr;
		/* Nodes met with a queued activation were activated, not taken. */
		sc->nr_activated += iso.nr_scanned - iso.nr;
		stat_add(lv, sc->type, RCL__STAT_SCANNED, iso.nr_scanned);
		remaining -= iso.nr_scanned;
		if (!iso.nr_scanned)
			break;

		keep.__next = keep.__prev = &keep;
		rcl__tls_evict_frames = &frame;
		while ((n = rcl_lru_isolated_next(&iso, NULL)) != NULL) {
			uint32_t f;
			bool evict = evict_claim(n, sc->flags, &f);
			/*
			 * The workingset clock as it is with this pass's own
			 * evictions and activations so far (added to the
			 * shared clock once, at the end of the pass).  A
			 * batched call sees the clock of its claim for every
			 * item (p.aged grows there only by dirty objects'
			 * activations): the shadows of one batch differ from
			 * the per-object ones by less than a batch.
			 */
			struct rcl_evict_control ctl = {
				.lruvec = lv,
				.priv = lv->__priv,
				.type = f_type(f),
				.weight = n->__weight,
				.flags = ((f & F_REFERENCED) ? RCL_EVICT_REFERENCED : 0) |
					 ((f & F_WORKINGSET) ? RCL_EVICT_WORKINGSET : 0),
				.priority = sc->priority,
				.context = sc->context,
				.shadow = rcl__workingset_shadow(
					lv, f_type(f), f, batched ? 0 : p.aged),
			};

			/* Off the set first: after FREED, n is not touched. */
			unlink_node(n);
			if (f & (F_DIRTY | F_WRITEBACK)) {
				/* shrink_folio_list()'s counts (flusher.h) */
				sc->nr_dirty++;
				if (!(f & F_WRITEBACK))
					sc->nr_unqueued_dirty++;
				if (f & F_WRITEBACK) {
					sc->nr_writeback++;
					if (f & F_RECLAIM)
						sc->nr_immediate++;
				}
				if (!evict) {
					/*
					 * Flagged for reclaim when clean and
					 * moved out of the way until then.
					 * An activation: it ages the clock.
					 */
					p.activated++;
					p.aged++;
					if (batched)
						order[nr_order++] = n;
					else
						link_between(n, keep.__prev, &keep);
					continue;
				}
				ctl.flags |= RCL_EVICT_DIRTY;	/* baseline */
			}
			/*
			 * A stale activation entry (see isolation) must go
			 * before the callback may free the object.
			 */
			if (f & F_QUEUED)
				rcl__tbatch_purge(n);
			if (batched) {
				items[nr_items].node = n;
				items[nr_items].ctl = ctl;
				items[nr_items].status = RCL_EVICT_BUSY;
				iflags[nr_items] = f;
				nr_items++;
				order[nr_order++] = NULL;
				continue;
			}
			evict_answer(lv, n, f, &ctl, lv->__ops->evict(n, &ctl),
				     &keep, &p);
		}
		if (nr_items)
			lv->__ops->evict_batch(lv, lv->__priv, items, nr_items);
		for (i = 0, j = 0; i < nr_order; i++) {
			if (order[i]) {
				link_between(order[i], keep.__prev, &keep);
				continue;
			}
			evict_answer(lv, items[j].node, iflags[j], &items[j].ctl,
				     items[j].status, &keep, &p);
			j++;
		}
		if (p.aged)
			rcl__workingset_age(lv, p.aged);
		rcl__workingset_evicted(lv, sc->type, p.ws_seq, p.nr_evicted);
		rcl__workingset_tiers(lv, sc->type, p.tier[0], p.tier[1]);
		if (p.freed)
			atomic_fetch_sub_explicit(&lv->__nr_isolated, p.freed,
						  memory_order_relaxed);
		putback_list(lv, &keep);
		if (lv->__ops->batch_end)
			lv->__ops->batch_end(lv, lv->__priv, p.freed);
		rcl__tls_evict_frames = saved_frames;

		if (p.freed && atomic_load_explicit(&lv->__nr_waiters,
						    memory_order_relaxed)) {
			/* A waiter may have been waiting on a node now gone. */
			rcl__lruvec_lock(lv);
			wake_waiters_locked(lv);
			rcl__lruvec_unlock(lv);
		}
		stat_add(lv, sc->type, RCL__STAT_FREED, p.freed);
		stat_add(lv, sc->type, RCL__STAT_WEIGHT_FREED, p.wfreed);
		stat_add(lv, sc->type, RCL__STAT_ROTATED, p.rotated);
		stat_add(lv, sc->type, RCL__STAT_ACTIVATED, p.activated);
		/* What reclaim met and could not free is its cost. */
		rcl__lruvec_add_cost(lv, sc->type, iso.nr_scanned - p.freed);
		sc->nr_freed += p.freed;
		sc->weight_freed += p.wfreed;
		sc->nr_rotated += p.rotated;
		sc->nr_activated += p.activated;
	}
	RCL_PROBE7(mm_vmscan_lru_shrink_inactive, lv->__id, sc->type,
		   sc->nr_scanned - p_scanned, sc->nr_freed - p_freed,
		   sc->nr_dirty - p_dirty, sc->nr_writeback - p_wb,
		   sc->priority);
	rcl__cancel_restore(cs);
	return 0;
}

RCL_API int rcl_lruvec_shrink_active(struct rcl_lruvec *lv,
				     struct rcl_lru_shrink_control *sc)
{
	unsigned list;
	size_t remaining;

	if (!lruvec_live(lv) || !sc || sc->type >= lv->__nr_types)
		return -EINVAL;
	list = RCL_LRU_LIST(sc->type, 1);
	rcl_lru_drain_local();

	remaining = sc->nr_to_scan;
	while (remaining > 0) {
		size_t chunk = RCL_MIN(remaining, (size_t)RCL_LRU_BATCH_ISOLATE);
		size_t k, rotated = 0, deactivated = 0;
		bool empty = false;
		bool ref2 = !(lv->__flags & RCL_LRUVEC_KERNEL);

		rcl__lruvec_lock(lv);
		for (k = 0; k < chunk; k++) {
			struct rcl_lru_node *n = list_tail(lv, list);
			uint32_t f;

			if (!n) {
				empty = true;
				break;
			}
			f = node_flags(n);
			list_del(lv, list, n);
			if (f & F_REFERENCED) {
				/* Second chance on the active list. */
				f = flags_update(n, F_REFERENCED, 0);
				rotated++;
			} else if (ref2 && (f & F_REF2)) {
				/*
				 * A second reference: one more chance (a 2-bit
				 * count, as MGLRU's tiers and S3-FIFO's main
				 * queue keep).
				 */
				f = flags_update(n, F_REF2, 0);
				rotated++;
			} else {
				f = flags_update(n, F_ACTIVE, F_WORKINGSET);
				deactivated++;
			}
			list_add_head(lv, f_list(f), n);
		}
		rcl__lruvec_unlock(lv);

		stat_add(lv, sc->type, RCL__STAT_REFILL_SCANNED, k);
		stat_add(lv, sc->type, RCL__STAT_ACTIVE_ROTATED, rotated);
		stat_add(lv, sc->type, RCL__STAT_DEACTIVATED, deactivated);
		rcl__lruvec_add_cost(lv, sc->type, rotated);
		sc->nr_scanned += k;
		sc->nr_rotated += rotated;
		sc->nr_deactivated += deactivated;
		remaining -= k;
		if (empty)
			break;
	}
	return 0;
}
