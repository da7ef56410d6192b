/* SPDX-License-Identifier: MIT */
/*
 * The flusher side of a memory domain: dirty accounting and limits, the
 * flusher trigger, the throttles that wait for writeback, and the library's
 * own writer (the flusher thread and rcl_domain_writeback_all()), after the
 * kernel's mm/page-writeback.c and fs/fs-writeback.c.
 *
 * Dirty accounting: each lruvec counts its dirty and writeback objects (and
 * their weights) under its own lock, and while it is attached it reports
 * every change here (rcl__domain_dirty_delta()), so the domain's sums are
 * exact.  The thresholds are ratios of the budget, as domain_dirty_limits():
 * above the background one, a flush is requested; above the hard one,
 * rcl_domain_balance_dirty() (balance_dirty_pages()) sleeps until writes end,
 * the budget rises or its timeout passes.
 *
 * The flusher trigger follows the kernel's WB_start_all, for every request:
 * one request in flight (delivered, not yet acknowledged with
 * rcl_domain_flush_done()) and one pending, into which later requests merge.
 * Reclaim asks (wakeup_flusher_threads(WB_REASON_VMSCAN)) when a batch it
 * took was all dirty and unqueued, and throttles itself when a batch was all
 * under writeback (reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK), which the
 * kernel keeps in mm/vmscan.c; here it lives beside the writeback progress it
 * waits for).
 *
 * The writer collects dirty objects oldest first under each lruvec's lock,
 * starts their writeback (which pins them), and writes them with no lock
 * held; objects whose write failed are skipped for the rest of the call.
 *
 * Locks: flock guards the flush requests and the flusher thread's state and
 * is the mutex of fcond, which the flusher thread sleeps on; callbacks
 * (the application's wakeup, the writes) run with no lock held.  wblock is a
 * leaf lock, the mutex of wbcond, on which both throttles and
 * rcl_domain_writeback_all() sleep: the lruvec paths that lower the dirty
 * weight or end a write wake them under the lruvec lock, and detach under
 * the domain mutex.  Threads: the flusher thread (rcl_domain_flusher_start()),
 * or the application's flusher, told through rcl_flusher_ops.wakeup; the
 * dirtying threads in rcl_domain_balance_dirty(); reclaimers in the
 * writeback throttle.
 *
 * Circular calls, all of them the kernel's too:
 * - lruvec.c <-> flusher.c: the lruvec reports state changes here
 *   (rcl__domain_dirty_delta(), _dirtied(), _writeback_done()), and the
 *   writer starts and ends writeback through the lruvec
 *   (rcl__lruvec_writeback_start_locked(), rcl_lruvec_writeback_end()).
 *   The kernel's mm/filemap.c and mm/page-writeback.c call each other the
 *   same way: folio_end_writeback() accounts through
 *   __folio_end_writeback(), and write_cache_pages() finds the dirty folios
 *   with filemap_get_folios_tag().
 * - vmscan.c -> flusher.c only: reclaim requests flushes and throttles on
 *   writeback; this file calls nothing of vmscan.c and only reads
 *   rcl__tls_pass_domain (rcl_domain_balance_dirty() does not sleep inside
 *   a reclaim pass of the domain).
 * - domain.c <-> flusher.c: the domain wakes the dirty throttle when the
 *   budget (hence the thresholds) or the set of attached lruvecs (hence the
 *   sums) changes, and the writer brings pending adds to the lists with
 *   rcl__domain_drain_all(), the walk over the attached lruvecs that the
 *   charge path uses.  The kernel's page allocator and mm/page-writeback.c
 *   are tied both ways in the same manner (the allocator asks
 *   node_dirty_ok(); the dirty limits follow the allocator's dirtyable
 *   memory).  The only lock held across it is the domain mutex, in detach,
 *   around a wake-up that takes the leaf wblock.
 */
#include "domain_internal.h"
#include "probes.h"
#include "refusal.h"

#include <errno.h>
#include <string.h>

#include <reclaim/flusher.h>
#include <reclaim/scan.h>

RCL__TLS const struct rcl_domain *rcl__tls_flusher_of;
RCL__TLS const struct rcl_domain *rcl__tls_writing_of;

/* ------------------------------------------------------------------------- */
/* Dirty accounting and limits (flusher.h)                                    */
/* ------------------------------------------------------------------------- */

/* Wake every thread sleeping on wbcond (both throttles). */
static void wb_broadcast(struct rcl_domain *d)
{
	pthread_mutex_lock(&d->wblock);
	wb_cond_after_fork_locked(d);
	pthread_cond_broadcast(&d->wbcond);
	pthread_mutex_unlock(&d->wblock);
}

/*
 * Wake rcl_domain_balance_dirty() waiters: the dirty weight dropped, or the
 * threshold rose.  They sleep under wblock after counting themselves, and
 * the counters are seq_cst: either a waiter sees the change before it
 * sleeps, or this sees the waiter and wakes it.
 */
void rcl__domain_dirty_wake(struct rcl_domain *d)
{
	if (atomic_load(&d->nr_dirty_waiters))
		wb_broadcast(d);
}

/*
 * Wake reclaimers throttled on writeback (rcl__domain_throttle_writeback()):
 * a detach took the lruvec's objects under writeback out of the domain's
 * count without a write ending, and the count at 0 ends their wait.  Not
 * from rcl__domain_dirty_delta(): at a write's end that would wake them
 * before rcl_lruvec_writeback_end() has rotated the object to the inactive
 * tail and counted the write, and rcl__domain_writeback_done() wakes them
 * after both.
 */
void rcl__domain_throttle_wake(struct rcl_domain *d)
{
	if (atomic_load(&d->nr_throttled))
		wb_broadcast(d);
}

/* Called under the lruvec lock (wblock is a leaf). */
void rcl__domain_dirty_delta(struct rcl_domain *d, int64_t dn, int64_t dw,
			     int64_t wn, int64_t ww)
{
	/* Unsigned wrap-around adds the negative deltas. */
	atomic_fetch_add(&d->dirty[0], (uint64_t)dn);
	atomic_fetch_add(&d->dirty[1], (uint64_t)dw);
	atomic_fetch_add(&d->dirty[2], (uint64_t)wn);
	atomic_fetch_add(&d->dirty[3], (uint64_t)ww);
	/* Deleted dirty objects, ended writes: what the hard limit compares. */
	if (dw + ww < 0)
		rcl__domain_dirty_wake(d);
}

/* Dirty plus writeback weight: what the kernel's limits compare. */
static uint64_t dirty_weight(const struct rcl_domain *d)
{
	struct rcl_domain *w = (struct rcl_domain *)d;

	return atomic_load(&w->dirty[1]) + atomic_load(&w->dirty[3]);
}

static uint64_t ratio_of_budget(const struct rcl_domain *d, unsigned ratio)
{
	uint64_t b = atomic_load(&((struct rcl_domain *)d)->budget);

	return b / 100 * ratio + b % 100 * ratio / 100;
}

/*
 * Above the hard threshold of the budget as it is now (flusher.h: "waits
 * while the domain is above its hard threshold").  Strictly above: with a
 * budget so small that the threshold rounds down to 0, no dirty weight at
 * all would otherwise throttle for the whole timeout.
 */
static bool dirty_exceeded(const struct rcl_domain *d)
{
	return dirty_weight(d) > ratio_of_budget(d, d->hard_ratio);
}

/*
 * At or above the background threshold ("reaches" it, flusher.h), with
 * something dirty: a threshold rounded down to 0 asks for no flush of
 * nothing.
 */
static bool dirty_background(const struct rcl_domain *d)
{
	uint64_t w = dirty_weight(d);

	return w && w >= ratio_of_budget(d, d->bg_ratio);
}

void rcl__domain_dirtied(struct rcl_domain *d)
{
	/* Lock-free filter: a request is pending or in flight already. */
	if (atomic_load(&d->flush_busy))
		return;
	if (dirty_background(d))
		rcl__domain_flush_request(d, 0, RCL_FLUSH_BACKGROUND);
}

/*
 * One object's writeback ended, written (@ok) or failed.  Called under the
 * lruvec lock (wblock is a leaf).  The reclaim throttle counts every end, as
 * the kernel's does; rcl_domain_balance_dirty() counts only the writes that
 * succeeded as progress.
 */
void rcl__domain_writeback_done(struct rcl_domain *d, bool ok)
{
	atomic_fetch_add(&d->wb_ended, 1);
	if (ok)
		atomic_fetch_add(&d->written, 1);
	if (atomic_load(&d->nr_throttled) || atomic_load(&d->nr_dirty_waiters))
		wb_broadcast(d);
}

/* Now plus @ns on the domain's clock; beyond the clock's range: no deadline. */
static uint64_t deadline_in(const struct rcl_domain *d, uint64_t ns)
{
	uint64_t now = d->clock->now(d->clock->ctx);

	return now + ns < now ? RCL_CLOCK_FOREVER : now + ns;
}

/*
 * reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK): a batch took only objects
 * under writeback, so reclaim is outrunning it.  Wait until 32 objects per
 * throttled reclaimer have ended writeback (written or failed: the kernel
 * counts every folio_end_writeback()) since this one started waiting, or
 * 100 ms - or, beyond the kernel, until no object of the domain is under
 * writeback any more: then no completion can come, and the kernel's waiter
 * would sleep out its 100 ms for nothing (small flush requests, such as
 * RCL_FLUSH_PROPORTIONAL's, often leave fewer than 32 in flight).
 * rcl__domain_writeback_done() broadcasts after the count has dropped.
 */
void rcl__domain_throttle_writeback(struct rcl_domain *d)
{
	uint64_t start, deadline;
	unsigned n;

	vm_add(d, VM_WRITEBACK_THROTTLED, 1);
	/* The clock is the application's: not read under wblock. */
	deadline = deadline_in(d, 100 * RCL_NSEC_PER_MSEC);
	pthread_mutex_lock(&d->wblock);
	wb_cond_after_fork_locked(d);
	start = atomic_load(&d->wb_ended);
	n = atomic_fetch_add(&d->nr_throttled, 1) + 1;
	while (atomic_load(&d->wb_ended) - start <
		       (uint64_t)RCL_SCAN_CHUNK *
			       RCL_MAX(n, atomic_load(&d->nr_throttled)) &&
	       atomic_load(&d->dirty[2])) {
		if (rcl__clock_wait(d->clock, &d->wbcond, &d->wblock,
				    deadline) == ETIMEDOUT) {
			vm_add(d, VM_WRITEBACK_THROTTLE_TIMEOUTS, 1);
			break;
		}
	}
	atomic_fetch_sub(&d->nr_throttled, 1);
	pthread_mutex_unlock(&d->wblock);
}

RCL_API int rcl_domain_balance_dirty(struct rcl_domain *d, uint64_t context)
{
	uint64_t deadline, kicked;
	int err = 0;

	if (!d)
		return -EINVAL;
	if (dirty_background(d) && !atomic_load(&d->flush_busy))
		rcl__domain_flush_request(d, 0, RCL_FLUSH_BACKGROUND);
	if (!dirty_exceeded(d) || !(context & RCL_CTX_MAY_BLOCK) ||
	    rcl__tls_flusher_of == d || rcl__tls_pass_domain == d)
		return 0;

	vm_add(d, VM_DIRTY_THROTTLED, 1);
	deadline = deadline_in(d, d->dirty_timeout);	/* not under wblock */
	pthread_mutex_lock(&d->wblock);
	wb_cond_after_fork_locked(d);
	atomic_fetch_add(&d->nr_dirty_waiters, 1);
	kicked = atomic_load(&d->written);
	/*
	 * Woken when the dirty weight drops (writes end, dirty objects are
	 * deleted, an lruvec is detached), the budget changes or the flusher
	 * goes idle; the threshold is computed again each time.
	 */
	while (dirty_exceeded(d)) {
		/*
		 * The flusher went idle with the domain still over the limit
		 * (a request is bounded, and objects dirtied after its last
		 * batch asked for nothing): ask again, as the kernel's
		 * balance_dirty_pages() starts background writeback on each
		 * pass.  Only after progress, so that a flusher that cannot
		 * write anything is not asked in a loop until the timeout.
		 */
		if (!atomic_load(&d->flush_busy) &&
		    atomic_load(&d->written) != kicked) {
			kicked = atomic_load(&d->written);
			pthread_mutex_unlock(&d->wblock);
			rcl__domain_flush_request(d, 0, RCL_FLUSH_BACKGROUND);
			pthread_mutex_lock(&d->wblock);
			wb_cond_after_fork_locked(d);
			continue;
		}
		if (rcl__clock_wait(d->clock, &d->wbcond, &d->wblock,
				    deadline) == ETIMEDOUT) {
			/* The timeout may have raced with the last wake-up. */
			if (dirty_exceeded(d)) {
				vm_add(d, VM_DIRTY_THROTTLE_TIMEOUTS, 1);
				err = -ETIMEDOUT;
			}
			break;
		}
	}
	atomic_fetch_sub(&d->nr_dirty_waiters, 1);
	pthread_mutex_unlock(&d->wblock);
	return err;
}

RCL_API int rcl_domain_dirty_stats(const struct rcl_domain *d,
				   struct rcl_dirty_stats *out)
{
	struct rcl_domain *w = (struct rcl_domain *)d;

	if (!d || !out)
		return -EINVAL;
	out->nr_dirty = atomic_load(&w->dirty[0]);
	out->weight_dirty = atomic_load(&w->dirty[1]);
	out->nr_writeback = atomic_load(&w->dirty[2]);
	out->weight_writeback = atomic_load(&w->dirty[3]);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Flush requests                                                             */
/* ------------------------------------------------------------------------- */

/*
 * The kernel's WB_start_all, for every request: one in flight (delivered and
 * not yet done) and one pending; more requests merge into the pending one
 * (the larger, 0 meaning "all", wins).  Delivery happens outside the lock.
 */
/*
 * flusher_cond_after_fork_locked() (flock held), which in a fork()'s child
 * forgets the parent's flusher thread; the requests that thread owned
 * (in flight to it, pending) have no one to serve or acknowledge them in
 * the child either: drop them, as a stop does, so that the child's own
 * requests go where they go without a thread instead of merging for ever
 * into a pending one.
 */
static void wb_skip_free(struct rcl_domain *d, struct wb_skip *sk);

/*
 * flush_busy (flock held): a request that writes everything is in flight
 * or pending, so that a background request would add nothing to it and the
 * lock-free filters skip asking.  A bounded one (rcl_domain_flush() of a
 * number, RCL_FLUSH_PROPORTIONAL) does not cover the dirt that reaches the
 * background threshold: the request is asked for, and merges into the
 * pending one.
 */
static void busy_update_locked(struct rcl_domain *d)
{
	atomic_store(&d->flush_busy,
		     (d->inflight && !d->cur.nr_to_write) ||
			     (d->pending && !d->pend.nr_to_write));
}

static void flusher_after_fork_locked(struct rcl_domain *d)
{
	if (d->fl_running && d->fl_pid != getpid()) {
		if (!atomic_load(&d->fl_stop)) {
			d->inflight = d->pending = false;
			busy_update_locked(d);
		}
		/*
		 * What the thread had allocated for a request under way is
		 * this process's copy, which nothing refers to but the
		 * thread's stack: free it - unless this thread is that one,
		 * forked from its own write callback, whose batch goes on
		 * using them.  Each pointer is cleared before its free, so
		 * that a fork from the free (or of another thread meanwhile)
		 * cannot free it twice.
		 */
		if (rcl__tls_flusher_of != d) {
			struct wb_item *items = d->fl_items;

			wb_skip_free(d, &d->fl_skip);
			d->fl_items = NULL;
			if (items)
				d->alloc.free(d->alloc.ctx, items);
		}
	}
	flusher_cond_after_fork_locked(d);
}

/*
 * The lock-free filters (rcl__domain_dirtied(), rcl_domain_balance_dirty())
 * would see the parent thread's requests busy for ever and never take
 * flock, where flusher_after_fork_locked() drops them.  The child is one
 * thread here: plain reads of the thread's fields are safe.
 *
 * A thread of the parent may also have held flock or wblock at the fork
 * (the flusher thread between two waits, a writer between two looks at the
 * throttle's counts), and no one gives them back in the child.  The forking
 * thread holds neither (nothing that may fork runs under them: clock.h,
 * refusal.h), so one it cannot take is another thread's: it starts afresh.
 * What flock guarded may be half changed: the requests are dropped, as a
 * stop drops them.  (Holding both across the fork instead deadlocks it:
 * the forking thread would hold wblock while the batches' prepare handler
 * waits for a batch lock, whose holder waits for an lruvec lock, whose
 * holder waits for wblock to wake throttled writers.)
 */
void rcl__domain_flusher_atfork_child(struct rcl_domain *d)
{
	if (pthread_mutex_trylock(&d->flock) == 0) {
		pthread_mutex_unlock(&d->flock);
	} else {
		(void)pthread_mutex_init(&d->flock, NULL);
		d->inflight = d->pending = false;
		atomic_store(&d->flush_busy, false);
	}
	if (pthread_mutex_trylock(&d->wblock) == 0)
		pthread_mutex_unlock(&d->wblock);
	else
		(void)pthread_mutex_init(&d->wblock, NULL);
	if (d->fl_running && d->fl_pid != getpid())
		atomic_store(&d->flush_busy, false);
}

/*
 * Requests go to the library's flusher thread (under flock): it runs and no
 * stop has begun.  A stopping thread serves none (it checks fl_stop between
 * batches and quits), so they go where they go without a thread.
 */
static bool flusher_owns_requests(struct rcl_domain *d)
{
	flusher_after_fork_locked(d);
	return d->fl_running && !atomic_load(&d->fl_stop);
}

static void deliver(struct rcl_domain *d, const struct rcl_flush_request *req,
		    bool to_thread)
{
	vm_add(d, VM_FLUSHER_WAKEUPS, 1);
	if (!to_thread) {
		/* A pass may call it with a slot pinned (internal.h). */
		int cs = rcl__cancel_off();

		d->fops->wakeup(d->fpriv, req);
		rcl__cancel_restore(cs);
	}
}

void rcl__domain_flush_request(struct rcl_domain *d, uint64_t nr,
			       enum rcl_flush_reason reason)
{
	struct rcl_flush_request req;
	bool now = false, to_thread;

	pthread_mutex_lock(&d->flock);
	to_thread = flusher_owns_requests(d);
	if (!to_thread && !d->fops) {
		pthread_mutex_unlock(&d->flock);
		return;		/* nobody to ask */
	}
	vm_add(d, VM_FLUSH_REQUESTS, 1);
	RCL_PROBE3(writeback_queue, d, reason, nr);
	if (reason == RCL_FLUSH_VMSCAN)
		vm_add(d, VM_FLUSH_REQUESTS_VMSCAN, 1);
	d->seq++;
	if (!d->inflight) {
		d->inflight = true;
		d->cur.nr_to_write = nr;
		d->cur.reason = reason;
		d->cur.seq = d->seq;
		req = d->cur;
		now = true;
		if (to_thread) {
			d->fl_work = true;
			pthread_cond_broadcast(&d->fcond);
		}
	} else if (!d->pending) {
		d->pending = true;
		d->pend.nr_to_write = nr;
		d->pend.reason = reason;
		d->pend.seq = d->seq;
	} else {
		d->pend.nr_to_write = (!nr || !d->pend.nr_to_write)
					      ? 0
					      : RCL_MAX(nr, d->pend.nr_to_write);
		d->pend.reason = reason;
		vm_add(d, VM_FLUSH_COALESCED, 1);
	}
	busy_update_locked(d);
	pthread_mutex_unlock(&d->flock);
	if (now)
		deliver(d, &req, to_thread);
}

RCL_API int rcl_domain_flush_done(struct rcl_domain *d,
				  const struct rcl_flush_request *req)
{
	struct rcl_flush_request next;
	bool now = false, to_thread;

	if (!d || !req)
		return -EINVAL;
	pthread_mutex_lock(&d->flock);
	if (!d->inflight || req->seq != d->cur.seq) {
		pthread_mutex_unlock(&d->flock);
		return -ENOENT;
	}
	to_thread = flusher_owns_requests(d);
	if (d->pending) {
		d->pending = false;
		d->cur = d->pend;
		next = d->cur;
		now = true;
		if (to_thread) {
			d->fl_work = true;
			pthread_cond_broadcast(&d->fcond);
		}
	} else {
		d->inflight = false;
	}
	busy_update_locked(d);
	pthread_mutex_unlock(&d->flock);
	if (now && (to_thread || d->fops))
		deliver(d, &next, to_thread);
	else		/* idle: balance_dirty() may ask again */
		rcl__domain_dirty_wake(d);
	return 0;
}

RCL_API int rcl_domain_flush(struct rcl_domain *d, uint64_t nr_to_write)
{
	bool any;

	if (!d)
		return -EINVAL;
	pthread_mutex_lock(&d->flock);
	any = flusher_owns_requests(d) || d->fops;
	pthread_mutex_unlock(&d->flock);
	if (!any)
		return -ENODEV;
	rcl__domain_flush_request(d, nr_to_write, RCL_FLUSH_SYNC);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Writing: the library's flusher thread and rcl_domain_writeback_all()       */
/* ------------------------------------------------------------------------- */

struct wb_item {
	struct rcl_lruvec *lv;
	struct rcl_lru_node *node;
	int err;
};

/*
 * The objects whose write failed during one call.  Each batch is collected
 * from the oldest object on, and a failed object stays dirty where it is, so
 * a call that goes on after a failure would collect it again and again: it
 * skips these instead.  An open-addressing hash set of addresses, at most
 * half full; addresses are only compared, never dereferenced (an object
 * deleted meanwhile whose memory is reused is at worst skipped).
 */
/* struct wb_skip: lib/domain_internal.h */

static size_t wb_skip_hash(uintptr_t key, size_t cap)
{
	uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (cap - 1);
}

static bool wb_skipped(const struct wb_skip *sk, const struct rcl_lru_node *n)
{
	uintptr_t key = (uintptr_t)n;
	size_t i;

	if (!sk || !sk->nr)
		return false;
	/* At most half full: the probe meets an empty slot. */
	for (i = wb_skip_hash(key, sk->cap); sk->slot[i];
	     i = (i + 1) & (sk->cap - 1))
		if (sk->slot[i] == key)
			return true;
	return false;
}

static void wb_skip_insert(uintptr_t *slot, size_t cap, uintptr_t key)
{
	size_t i;

	for (i = wb_skip_hash(key, cap); slot[i] && slot[i] != key;
	     i = (i + 1) & (cap - 1))
		;
	slot[i] = key;
}

static int wb_skip_add(struct rcl_domain *d, struct wb_skip *sk,
		       const struct rcl_lru_node *n)
{
	if (wb_skipped(sk, n))
		return 0;
	if (2 * (sk->nr + 1) > sk->cap) {
		size_t cap = sk->cap ? 2 * sk->cap : 64, i;
		uintptr_t *slot = rcl__alloc(&d->alloc, cap * sizeof(*slot));
		uintptr_t *old = sk->slot;

		if (!slot)
			return -ENOMEM;
		memset(slot, 0, cap * sizeof(*slot));
		for (i = 0; i < sk->cap; i++)
			if (sk->slot[i])
				wb_skip_insert(slot, cap, sk->slot[i]);
		/*
		 * The new table first, then the old one freed: a fork()'s
		 * child frees the flusher thread's table (d->fl_skip), and
		 * must find one that this thread has not freed already.
		 */
		sk->slot = slot;
		sk->cap = cap;
		if (old)
			d->alloc.free(d->alloc.ctx, old);
	}
	wb_skip_insert(sk->slot, sk->cap, (uintptr_t)n);
	sk->nr++;
	return 0;
}

/* Emptied before its table is freed: a fork()'s child may free it too. */
static void wb_skip_free(struct rcl_domain *d, struct wb_skip *sk)
{
	uintptr_t *slot = sk->slot;

	sk->slot = NULL;
	sk->nr = sk->cap = 0;
	if (slot)
		d->alloc.free(d->alloc.ctx, slot);
}

/*
 * Take up to @max dirty objects, oldest first (inactive tails, then active,
 * then unevictable), and start their writeback: from then on they are
 * pinned, so they stay valid after the locks are dropped.  Isolated and
 * pending objects are skipped (isolated ones are found later; write_batches()
 * drains pending ones once and looks again), and so are those in @skip.
 */
static unsigned collect_dirty(struct rcl_domain *d, struct wb_item *it,
			      unsigned max, const struct wb_skip *skip)
{
	unsigned i, high = atomic_load(&d->high), n = 0;

	for (i = 0; i < high && n < max; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_lruvec *lv = slot_get(s);
		unsigned pass, l;

		if (lv) {
			for (pass = 0; pass < 3 && n < max; pass++) {
				for (l = 0; l < RCL_LRU_NR_LISTS && n < max; l++) {
					struct rcl_lru_node *head, *node, *prev;

					if ((pass == 0 && ((l & 1) || l == RCL_LRU_UNEVICTABLE)) ||
					    (pass == 1 && !(l & 1)) ||
					    (pass == 2 && l != RCL_LRU_UNEVICTABLE))
						continue;
					/*
					 * One walk under the lock: starting the
					 * writeback does not move the node.
					 */
					rcl__lruvec_lock(lv);
					head = &lv->__lists[l].head;
					for (node = head->__prev; node != head && n < max;
					     node = prev) {
						uint32_t f = node_flags(node);

						prev = node->__prev;
						if ((f & F_DIRTY) && !(f & F_WRITEBACK) &&
						    !wb_skipped(skip, node) &&
						    rcl__lruvec_writeback_start_locked(
							    lv, node) == 0) {
							it[n].lv = lv;
							it[n].node = node;
							n++;
						}
					}
					rcl__lruvec_unlock(lv);
				}
			}
		}
		slot_put(d, s);
	}
	return n;
}

/*
 * The flusher thread's batch has ended (its objects' writeback too): wake
 * rcl_domain_writeback_all() calls waiting for it.  They count themselves
 * before they look at the sequence, under wblock (seq_cst, as
 * rcl__domain_dirty_wake()).
 */
static void flusher_batch_end(struct rcl_domain *d)
{
	atomic_fetch_add(&d->fl_batch_seq, 1);
	if (atomic_load(&d->nr_wball_waiters))
		wb_broadcast(d);
}

/*
 * Write dirty objects in batches of @batch until @limit are written (0: until
 * none is left), or @bound batches have run, or *@stop is set (checked
 * between batches).  A failed write does not end the call: the objects that
 * failed stay dirty and are not tried again in it.  Returns the first error,
 * or -ENOMEM if the call had to stop early because the set of failed objects
 * could not grow (it would collect them again and again otherwise).  That
 * set, @skip, is the caller's: rcl_domain_writeback_all() keeps it across
 * its passes.  Called with @stop by the flusher thread only, whose batches
 * move fl_batch_seq.
 */
static int write_batches(struct rcl_domain *d, const struct rcl_writeback_ops *ops,
			 void *priv, unsigned batch, uint64_t limit,
			 uint64_t bound, const atomic_bool *stop,
			 struct wb_skip *skip, uint64_t *written)
{
	struct wb_item *it = rcl__alloc(&d->alloc, batch * sizeof(*it));
	const struct rcl_domain *prev_writing;
	int cs;
	uint64_t total = 0, b;
	bool skip_full = false, drained = false;
	int err = 0;

	if (!it)
		return -ENOMEM;
	if (stop)
		d->fl_items = it;
	for (b = 0; b < bound && !skip_full && (!limit || total < limit); b++) {
		unsigned max = (unsigned)RCL_MIN((uint64_t)batch,
						 limit ? limit - total : batch);
		unsigned n, i, ok = 0;
		int serr = 0;

		if (stop && atomic_load(stop))
			break;
		if (stop)	/* the flusher thread: a batch begins */
			atomic_fetch_add(&d->fl_batch_seq, 1);
		n = collect_dirty(d, it, max, skip);
		if (n < max && !drained && atomic_load(&d->dirty[0])) {
			/*
			 * Dirty objects left behind may still wait in some
			 * thread's add batch (pending, not on a list): put
			 * them on their lists, once per call.
			 */
			drained = true;
			rcl__domain_drain_all(d);
			n += collect_dirty(d, it + n, max - n, skip);
		}
		if (!n) {
			if (stop)
				flusher_batch_end(d);
			break;
		}
		/*
		 * rcl_lruvec_del_wait() from these would wait for itself,
		 * and rcl_domain_free() would pull @d from under this call.
		 */
		prev_writing = rcl__tls_writing_of;
		rcl__tls_writing_of = d;
		rcl__tls_writing++;
		cs = rcl__cancel_off();	/* the objects are under writeback */
		for (i = 0; i < n; i++)
			it[i].err = ops->write(priv, it[i].node);
		if (ops->sync)
			serr = ops->sync(priv);
		rcl__cancel_restore(cs);
		rcl__tls_writing--;
		rcl__tls_writing_of = prev_writing;
		for (i = 0; i < n; i++) {
			int e = it[i].err ? it[i].err : serr;

			/*
			 * Only the address is kept.  Without room for it,
			 * this batch is the last: the object would be
			 * collected again and again.
			 */
			if (e && wb_skip_add(d, skip, it[i].node))
				skip_full = true;
			rcl_lruvec_writeback_end(it[i].lv, it[i].node, e);
			if (e && !err)
				err = e;
			else if (!e)
				ok++;
		}
		if (stop)
			flusher_batch_end(d);
		total += ok;
		vm_add(d, VM_WRITES_FLUSHER, ok);
	}
	/*
	 * Stopped early for want of memory, with objects perhaps left
	 * unwritten: say so, or the caller would take a write error for the
	 * whole story ("the others were written").
	 */
	if (skip_full)
		err = -ENOMEM;
	if (stop)
		d->fl_items = NULL;
	d->alloc.free(d->alloc.ctx, it);
	if (written)
		*written = total;
	return err;
}

static void *flusher_main(void *arg)
{
	struct rcl_domain *d = arg;

	rcl__tls_flusher_of = d;
	pthread_mutex_lock(&d->flock);
	while (!atomic_load(&d->fl_stop)) {
		struct rcl_flush_request req;
		uint64_t dirty;

		if (!d->fl_work) {
			rcl__clock_wait(d->clock, &d->fcond, &d->flock,
				        RCL_CLOCK_FOREVER);
			continue;
		}
		d->fl_work = false;
		req = d->cur;
		pthread_mutex_unlock(&d->flock);

		/* At most twice the dirty objects of now: bounded. */
		dirty = atomic_load(&d->dirty[0]);
		d->fl_skip = (struct wb_skip){ 0 };
		write_batches(d, &d->wops, d->wpriv, d->wbatch, req.nr_to_write,
			      2 * dirty / d->wbatch + 2, &d->fl_stop,
			      &d->fl_skip, NULL);
		wb_skip_free(d, &d->fl_skip);
		rcl_domain_flush_done(d, &req);
		pthread_mutex_lock(&d->flock);
	}
	pthread_mutex_unlock(&d->flock);
	return NULL;
}

/*
 * With no flusher thread in this process (flock held, after
 * flusher_after_fork_locked()), fl_batch_seq is odd only in the child
 * of a fork() taken during one of the parent's batches, which nothing ends
 * there: make it even (no batch under way), or rcl_domain_writeback_all()
 * waits for that batch and a thread started here counts its batches with
 * the parity inverted.
 */
static void flusher_batch_seq_settle_locked(struct rcl_domain *d)
{
	if (!d->fl_running && (atomic_load(&d->fl_batch_seq) & 1))
		atomic_fetch_add(&d->fl_batch_seq, 1);
}

RCL_API int rcl_domain_flusher_start(struct rcl_domain *d,
				     const struct rcl_writeback_ops *ops,
				     void *priv, unsigned batch)
{
	int err = 0;

	if (!d || !ops || !ops->write || batch > RCL_WRITEBACK_MAX_BATCH)
		return -EINVAL;
	pthread_mutex_lock(&d->flock);
	flusher_after_fork_locked(d);
	if (d->fl_running) {
		err = -EBUSY;	/* refused below, without flock */
	} else {
		flusher_batch_seq_settle_locked(d);
		d->wops = *ops;
		d->wpriv = priv;
		d->wbatch = batch ? batch : 64;
		atomic_store(&d->fl_stop, false);
		d->fl_work = false;
		/*
		 * The thread waits for this lock before it looks at anything.
		 * Only once it exists are the requests owed to the
		 * application's flusher dropped: a start that fails leaves
		 * them in flight, to be acknowledged as before.
		 */
		if (rcl__thread_create(&d->fl_thread, flusher_main, d) != 0) {
			err = -EAGAIN;
		} else {
			/*
			 * A request pending for the application's flusher was
			 * never delivered to anyone: the thread takes it (the
			 * one in flight was, and is dropped: its
			 * rcl_domain_flush_done() finds nothing).
			 */
			bool owed = d->pending;

			d->inflight = d->pending = false;
			if (owed) {
				d->inflight = true;
				d->cur = d->pend;
				d->cur.seq = ++d->seq;
				d->fl_work = true;
			}
			busy_update_locked(d);
			d->fl_running = true;
			d->fl_pid = getpid();
		}
	}
	pthread_mutex_unlock(&d->flock);
	/*
	 * The refusal log is the application's: called with no lock held
	 * (refusal.h: a hook may fork, or take a fork-safe logger's lock).
	 */
	if (err == -EBUSY)
		return RCL__REFUSE(-EBUSY, "the flusher thread runs already");
	return err;
}

/*
 * One stopper joins the thread; a concurrent one (rcl_domain_free() racing
 * an explicit stop) waits on fcond until the joiner has cleared fl_running:
 * joining a thread twice is undefined (glibc's second join never returns).
 * The joiner does not hold flock across the join, so that a write callback
 * calling rcl_domain_flusher_start() gets -EBUSY (fl_running is still set)
 * instead of a deadlock.  Stopping (fl_running with fl_stop set) counts as
 * no thread for requests (flusher_owns_requests()): the thread's own are
 * dropped here, and those made until the join is done go to the
 * application's flusher or nowhere, as when no thread runs, instead of
 * being queued for a thread that will not serve them.
 */
RCL_API int rcl_domain_flusher_stop(struct rcl_domain *d)
{
	/* Its join is not a cancellation point (lib/internal.h). */
	RCL__CANCEL_OFF_SCOPE();
	pthread_t t;

	if (!d)
		return -EINVAL;
	if (rcl__tls_flusher_of == d)
		return RCL__REFUSE(-EDEADLK, "called from the flusher thread's own callbacks: it would join itself");
	pthread_mutex_lock(&d->flock);
	flusher_after_fork_locked(d);
	if (!d->fl_running) {
		pthread_mutex_unlock(&d->flock);
		return 0;
	}
	if (atomic_load(&d->fl_stop)) {
		/*
		 * Another stopper joins: wait until it is done (or until a
		 * start after it made a new thread: this stop came first).
		 */
		while (d->fl_running && atomic_load(&d->fl_stop))
			rcl__clock_wait(d->clock, &d->fcond, &d->flock,
				        RCL_CLOCK_FOREVER);
		pthread_mutex_unlock(&d->flock);
		return 0;
	}
	atomic_store(&d->fl_stop, true);
	t = d->fl_thread;
	/* The thread's requests: it serves none after this batch. */
	d->inflight = d->pending = false;
	busy_update_locked(d);
	pthread_cond_broadcast(&d->fcond);
	pthread_mutex_unlock(&d->flock);
	/* Idle now: a throttled writer may ask again (the application). */
	rcl__domain_dirty_wake(d);
	pthread_join(t, NULL);
	pthread_mutex_lock(&d->flock);
	d->fl_running = false;
	pthread_cond_broadcast(&d->fcond);	/* other stoppers */
	pthread_mutex_unlock(&d->flock);
	return 0;
}

/* Passes of rcl_domain_writeback_all() (see there). */
#define WBALL_PASSES 4

/* The shortest bound of rcl_domain_writeback_all()'s wait for a batch. */
#define WBALL_WAIT_MIN_NS (1000 * RCL_NSEC_PER_MSEC)

/*
 * Wait until the flusher thread's batch under way at sequence @seq (odd)
 * has ended, or the domain's dirty timeout passes (at least 1 s: a
 * shutdown path, not a throttle).  Returns 0 or -ETIMEDOUT.
 */
static int wait_flusher_batch(struct rcl_domain *d, uint64_t seq)
{
	uint64_t deadline =
		deadline_in(d, RCL_MAX(d->dirty_timeout, WBALL_WAIT_MIN_NS));
	int err = 0;

	pthread_mutex_lock(&d->wblock);
	wb_cond_after_fork_locked(d);
	atomic_fetch_add(&d->nr_wball_waiters, 1);
	while (atomic_load(&d->fl_batch_seq) == seq) {
		if (rcl__clock_wait(d->clock, &d->wbcond, &d->wblock,
				    deadline) == ETIMEDOUT) {
			if (atomic_load(&d->fl_batch_seq) == seq)
				err = -ETIMEDOUT;
			break;
		}
	}
	atomic_fetch_sub(&d->nr_wball_waiters, 1);
	pthread_mutex_unlock(&d->wblock);
	return err;
}

RCL_API int rcl_domain_writeback_all(struct rcl_domain *d,
				     const struct rcl_writeback_ops *ops,
				     void *priv, uint64_t *written)
{
	struct wb_skip skip = { 0 };
	uint64_t total = 0;
	unsigned pass;
	int err = 0;

	if (written)
		*written = 0;
	if (!d || !ops || !ops->write)
		return -EINVAL;
	pthread_mutex_lock(&d->flock);
	flusher_after_fork_locked(d);
	flusher_batch_seq_settle_locked(d);
	pthread_mutex_unlock(&d->flock);
	/* Pending adds reach the lists first, so that none is missed. */
	rcl__domain_drain_all(d);
	for (pass = 0; pass < WBALL_PASSES; pass++) {
		uint64_t s0 = atomic_load(&d->fl_batch_seq), s1, n = 0;
		uint64_t dirty = atomic_load(&d->dirty[0]);
		int e;

		e = write_batches(d, ops, priv, 64, 0, 2 * dirty / 64 + 2, NULL,
				  &skip, &n);
		total += n;
		if (e && !err)
			err = e;
		if (e == -ENOMEM)
			break;
		/*
		 * A batch of the flusher thread overlapped this pass: the
		 * objects it held were skipped, and one dirtied during its
		 * write is dirty again when it ends.  Wait for the batch
		 * under way, if any, and pass again.  The skip set carries
		 * over: a failed object is not tried twice.
		 */
		s1 = atomic_load(&d->fl_batch_seq);
		if ((s0 == s1 && !(s1 & 1)) || rcl__tls_flusher_of == d)
			break;	/* none; or it is this thread's own batch */
		if (s1 & 1) {
			e = wait_flusher_batch(d, s1);
			if (e) {
				if (!err)
					err = e;
				break;
			}
		}
	}
	wb_skip_free(d, &skip);
	if (written)
		*written = total;
	return err;
}
