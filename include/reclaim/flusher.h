/* SPDX-License-Identifier: MIT */
/**
 * DOC: flusher - dirty objects, reclaim that never writes, and write-back
 *
 * Write-back caches hold dirty objects that cannot be dropped until they are
 * written.  The library follows the kernel's 2017 series: reclaim never
 * writes anything itself; when the tail it took was all dirty and not yet
 * queued for writing, it wakes the application's flusher, and it keeps dirty
 * and writeback objects out of its way until they are clean.
 *
 * Object states live on the lru node (RCL_LRU_F_DIRTY, RCL_LRU_F_WRITEBACK,
 * RCL_LRU_F_RECLAIM).  The application marks an object dirty when it
 * modifies it (rcl_lruvec_set_dirty()), and brackets each write:
 * rcl_lruvec_writeback_start() (dirty -> writeback) before, and
 * rcl_lruvec_writeback_end() after.  An object under writeback is pinned: it
 * cannot be deleted (rcl_lruvec_del() returns -EBUSY, rcl_lruvec_del_wait()
 * waits for the end of the writeback - except in an evict callback, where it
 * returns -EDEADLK rather than wait) and reclaim does not evict it, so a
 * flusher may hold a pointer to it while it writes without a lock.  The pin
 * ends inside rcl_lruvec_writeback_end(): from then on a reclaimer that holds
 * the object isolated may evict it, so the flusher must not touch it after
 * that call unless it holds it by other means.
 *
 * What reclaim does with them (rcl_lruvec_shrink_inactive()), the kernel's
 * shrink_folio_list() rules:
 *
 * - a dirty object at the inactive tail is counted (nr_dirty, and
 *   nr_unqueued_dirty when not under writeback), flagged for immediate
 *   reclaim (RCL_LRU_F_RECLAIM) and activated - moved out of the way of
 *   reclaim until it is written ("waiting for writes is worse than
 *   potentially causing reads");
 * - an object under writeback is counted (nr_writeback, and nr_immediate if
 *   it was already flagged: reclaim met it twice while it was being
 *   written), flagged and activated the same way;
 * - when writeback ends on a flagged object that is still clean, it is moved
 *   to the tail of its inactive list, so that the next scan frees it;
 * - neither reaches the evict callback, which therefore never has to write.
 *
 * An object reclaim hands to the evict callback stays as the callback found
 * it, clean, until the callback has answered: rcl_lruvec_set_dirty() on it
 * waits until reclaim puts it back (the callback, seeing the writer's pin,
 * keeps it), and rcl_lruvec_writeback_start() refuses it.  The hand-over
 * starts when rcl_lruvec_shrink_inactive() isolates the object (one atomic
 * step claims it, which saves a locked instruction per object), so this
 * holds for every clean object of the batch, also those whose turn in the
 * callback has not come yet: from an evict callback, set_dirty() on one of
 * them is -EDEADLK like on the object being judged.  So an object
 * dirtied while isolated is never freed dirty, and the dirty counts stay
 * exact.  The evict callback must therefore not wait for a thread that may
 * be inside rcl_lruvec_set_dirty() for the same object, or for another
 * clean object of its batch: take such a lock
 * with a trylock there (as the kernel's shrink_folio_list() does the folio
 * lock), or do not hold it across rcl_lruvec_set_dirty().
 *
 * The trigger.  When one batch of a domain's reclaim took only dirty,
 * unqueued objects (nr_unqueued_dirty == nr_taken), the domain asks the
 * flusher to write: "all dirty" (the kernel's rule since 4.11;
 * nr_to_write = 0) or "proportional" (like PostgreSQL's bgwriter, scaled to
 * what reclaim met and needs: nr_to_write = max(d, ceil(goal * d / taken)),
 * with d the unqueued dirty objects met, taken the objects isolated and
 * goal the lruvec's share of the reclaim goal), per domain.  Requests go to the application's
 * flusher through &rcl_flusher_ops.wakeup, or to the library's own flusher
 * thread (rcl_domain_flusher_start()).  They are coalesced as the kernel's
 * WB_start_all: at most one request in flight (delivered, not yet
 * acknowledged with rcl_domain_flush_done()) and one pending; further
 * requests merge into the pending one.
 *
 * Dirty limits.  When the dirty (and writeback) weight of a domain reaches
 * its background threshold (default 10 % of the budget), marking an object
 * dirty wakes the flusher.  A thread that dirties objects calls
 * rcl_domain_balance_dirty() (the kernel's balance_dirty_pages()), which
 * waits while the domain is above its hard threshold (default 20 %) until
 * writeback (or deleting dirty objects, detaching an lruvec, raising the
 * budget) brings it below, or a timeout passes.
 *
 * Throttling.  A reclaim batch that took only objects under writeback waits
 * (on the domain's clock) until 32 x (number of throttled reclaimers) objects
 * have finished writeback, written or failed, since it started waiting - the kernel's
 * reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK) rule - or 100 ms, or (beyond
 * the kernel) until no object of the domain is under writeback any more:
 * with fewer than 32 in flight, the kernel's waiter sleeps out the 100 ms.
 *
 * The flusher thread.  rcl_domain_flusher_start() runs a thread that serves
 * the requests itself: it finds dirty objects on the domain's lruvecs
 * (oldest first; objects still pending in threads' add batches are drained
 * to their lists once per request when the lists run out; isolated objects
 * are left to their reclaimer and found later), marks a batch of them as
 * under writeback, calls the
 * application's write callback for each, and its sync callback once per
 * batch, then ends their writeback.  A failed write (or sync) does not end a
 * request: the objects concerned stay dirty and are not tried again within
 * it, and the others are written.  With it, an application gets a complete
 * write-back cache in a few lines: mark dirty on write, charge and uncharge,
 * and a write callback.  The write callback only ever runs on that thread,
 * never in reclaim.
 *
 * Usage:
 *
 * .. code-block:: c
 *
 *	static int my_write(void *priv, struct rcl_lru_node *n)
 *	{
 *		struct obj *o = rcl_container_of(n, struct obj, lru);
 *		return pwrite(fd, o->data, o->size, o->offset) == o->size ? 0 : -EIO;
 *	}
 *	static int my_sync(void *priv) { return fdatasync(fd) ? -errno : 0; }
 *	static const struct rcl_writeback_ops wb_ops = { my_write, my_sync };
 *
 *	rcl_domain_flusher_start(d, &wb_ops, NULL, 64);
 *	...
 *	modify(o); rcl_lruvec_set_dirty(&lv, &o->lru);
 *	rcl_domain_balance_dirty(d, RCL_CTX_CAPABLE);	// may wait for writeback
 *
 * Synchronization: all functions are thread-safe.  State changes take the
 * lruvec lock; the trigger and the counters are lock-free; no lock is held
 * while a callback runs.  Functions that may sleep say so.
 */
#ifndef RECLAIM_FLUSHER_H
#define RECLAIM_FLUSHER_H

#include <stdint.h>

#include <reclaim/common.h>
#include <reclaim/lruvec.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcl_domain;

/* ------------------------------------------------------------------------- */
/* Object states                                                              */
/* ------------------------------------------------------------------------- */

/**
 * rcl_lruvec_set_dirty() - mark an object dirty
 * @lv: its lruvec
 * @node: the node (pending, listed or isolated on @lv)
 *
 * Idempotent.  An object under writeback may be dirtied again (it will need
 * another write).  Counts its weight as dirty in the lruvec and, if the
 * lruvec is attached to a domain, in the domain, and wakes the domain's
 * flusher when the background dirty threshold is reached (the wakeup
 * callback then runs in this thread).
 *
 * If reclaim has handed the object to its evict callback, this waits until
 * the callback has answered and reclaim has put the object back (at most
 * one batch of RCL_LRU_BATCH_ISOLATE callbacks), then marks it: the callback
 * never sees an object become dirty under it.  The caller must hold the
 * object so that the callback keeps it (the pin protocol of lruvec.h), as
 * for any call on a node that reclaim might free.
 *
 * Context: any thread; takes the lruvec lock; may sleep (see above), and
 * never from an evict callback on such an object.
 * Return: 0; -EINVAL for NULL or an uninitialised lruvec; -ENOENT if the
 * node is not on @lv (also if it was deleted while this waited); -EDEADLK
 * from any evict callback if the object is in an evict callback's hands
 * (conservatively: also another thread's), which includes a clean object of
 * a batch rcl_lruvec_shrink_inactive() has isolated and not yet put back.
 */
RCL_API int rcl_lruvec_set_dirty(struct rcl_lruvec *lv, struct rcl_lru_node *node);

/**
 * rcl_lruvec_writeback_start() - the object is about to be written
 * @lv: its lruvec
 * @node: a dirty node on @lv
 *
 * Dirty -> under writeback (and clean).  Pins the object until
 * rcl_lruvec_writeback_end().
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL, an uninitialised lruvec or a node that is not
 * dirty; -EBUSY if it is under writeback already, or in an evict callback's
 * hands (the RCL_LRU_SHRINK_WRITE_DIRTY baseline, where that callback
 * writes it); -ENOENT if not on @lv.
 */
RCL_API int rcl_lruvec_writeback_start(struct rcl_lruvec *lv,
				       struct rcl_lru_node *node);

/**
 * rcl_lruvec_writeback_end() - the write of an object completed
 * @lv: its lruvec
 * @node: a node under writeback on @lv
 * @error: 0 if the write succeeded; otherwise the object becomes dirty again
 *
 * Ends the pin.  If reclaim flagged the object for immediate reclaim and it
 * is clean, it moves to the tail of its inactive list.  Wakes reclaimers and
 * dirtiers throttled on writeback, and rcl_lruvec_del_wait() callers.
 *
 * An isolated object may be evicted (and freed) by its reclaimer as soon as
 * the pin ends; the call itself no longer touches the node then, and the
 * caller must not either, unless it holds the object otherwise.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL, an uninitialised lruvec or a node that is not
 * under writeback; -ENOENT if not on @lv.
 */
RCL_API int rcl_lruvec_writeback_end(struct rcl_lruvec *lv,
				     struct rcl_lru_node *node, int error);

/**
 * struct rcl_dirty_stats - dirty state of an lruvec or a domain
 * @nr_dirty: dirty objects: those not under writeback, and those dirtied
 *	again while under writeback (they need another write)
 * @weight_dirty: their weight
 * @nr_writeback: objects under writeback, including those dirtied again
 * @weight_writeback: their weight
 *
 * An object dirtied again while under writeback counts in both, as the
 * kernel's NR_FILE_DIRTY and NR_WRITEBACK count such a page; the dirty
 * limits compare the sum of both weights.
 */
struct rcl_dirty_stats {
	uint64_t nr_dirty;
	uint64_t weight_dirty;
	uint64_t nr_writeback;
	uint64_t weight_writeback;
};

/**
 * rcl_lruvec_dirty_stats() - an lruvec's dirty and writeback counts
 * @lv: the lruvec
 * @out: receives them
 *
 * Context: lock-free; may be stale.
 * Return: 0; -EINVAL for NULL or an uninitialised lruvec.
 */
RCL_API int rcl_lruvec_dirty_stats(const struct rcl_lruvec *lv,
				   struct rcl_dirty_stats *out);

/* ------------------------------------------------------------------------- */
/* Flush requests                                                             */
/* ------------------------------------------------------------------------- */

/** Why a flush was requested. */
enum rcl_flush_reason {
	RCL_FLUSH_VMSCAN = 0,	  /**< reclaim met a batch of unqueued dirty objects */
	RCL_FLUSH_BACKGROUND = 1, /**< the background dirty threshold was reached */
	RCL_FLUSH_SYNC = 2,	  /**< rcl_domain_flush() */
};

/** How a reclaim-triggered request is sized (per domain). */
enum rcl_flush_policy {
	RCL_FLUSH_ALL = 0,	    /**< write every dirty object (kernel 4.11+) */
	RCL_FLUSH_PROPORTIONAL = 1, /**< scaled to what reclaim met and needs */
};

/**
 * struct rcl_flush_request - what the flusher is asked to do
 * @nr_to_write: objects to write; 0 means every dirty object
 * @reason: why (of the latest request merged into this one)
 * @seq: a sequence number, for rcl_domain_flush_done()
 */
struct rcl_flush_request {
	uint64_t nr_to_write;
	enum rcl_flush_reason reason;
	uint64_t seq;
};

/**
 * struct rcl_flusher_ops - the application's flusher
 * @wakeup: a request is ready.  Called from reclaim and from the dirtying
 *	paths, with no library lock held: it must not write or block, only
 *	hand the request to the application's flusher (signal a thread, post
 *	to an event loop).  The flusher calls rcl_domain_flush_done() when it
 *	has served it.  Not used while the library's flusher thread runs.
 */
struct rcl_flusher_ops {
	void (*wakeup)(void *priv, const struct rcl_flush_request *req);
};

/**
 * rcl_domain_flush_done() - the request in flight has been served
 * @d: the domain
 * @req: the request (its @seq identifies it)
 *
 * If a request is pending, it becomes the one in flight and is delivered
 * (the wakeup callback runs in this thread).
 *
 * Context: any thread, typically the application's flusher.
 * Return: 0; -EINVAL for NULL; -ENOENT if @req is not the one in flight.
 */
RCL_API int rcl_domain_flush_done(struct rcl_domain *d,
				  const struct rcl_flush_request *req);

/**
 * rcl_domain_flush() - ask the flusher to write, explicitly
 * @d: the domain
 * @nr_to_write: objects to write; 0 = every dirty object
 *
 * Coalesced like any other request.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL; -ENODEV if the domain has no flusher.
 */
RCL_API int rcl_domain_flush(struct rcl_domain *d, uint64_t nr_to_write);

/**
 * rcl_domain_balance_dirty() - throttle a thread that dirties objects
 * @d: the domain
 * @context: the capability mask; without RCL_CTX_MAY_BLOCK it never waits
 *
 * When the dirty and writeback weight reaches the background threshold
 * (and is not 0), wakes the flusher.  Above the hard threshold, waits until
 * that weight is no longer above it, or the
 * domain's dirty timeout passes (on the domain's clock).  The wait is woken
 * whenever that weight drops (a write ends, a dirty object is deleted, an
 * lruvec is detached) and when the budget is set, which moves the threshold;
 * it is compared with the threshold of the budget at that moment, also once
 * more when the timeout passes.  While it waits, whenever the flusher goes
 * idle with the domain still above the threshold and some write has ended
 * since this call last asked, it asks the flusher again (a background
 * request): a request is bounded, and objects dirtied after its last batch
 * would otherwise wait for the timeout.
 *
 * Context: any thread but the flusher's (it would wait for itself: it
 * returns at once there); not from callbacks.  May sleep.
 * Return: 0 (below the threshold, or after waiting); -ETIMEDOUT if the
 * domain was still above it when the timeout passed; -EINVAL for NULL.
 *
 * Bad input: A dirty timeout beyond the clock's range means no timeout.
 */
RCL_API int rcl_domain_balance_dirty(struct rcl_domain *d, uint64_t context);

/**
 * rcl_domain_dirty_stats() - a domain's dirty and writeback counts
 * @d: the domain
 * @out: receives the sums over its attached lruvecs
 *
 * Context: lock-free; may be stale.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_domain_dirty_stats(const struct rcl_domain *d,
				   struct rcl_dirty_stats *out);

/* ------------------------------------------------------------------------- */
/* The library's flusher thread                                               */
/* ------------------------------------------------------------------------- */

/** The largest batch of rcl_domain_flusher_start() (one allocation each). */
#define RCL_WRITEBACK_MAX_BATCH 65536u

/**
 * struct rcl_writeback_ops - how the library's flusher thread writes
 * @write: write one object (it is under writeback: pinned, clean); return
 *	0, or a negative errno (the object becomes dirty again).  Runs only on
 *	the flusher thread, never in reclaim, with no library lock held.
 * @sync: optional; called once after each batch of writes (fdatasync());
 *	a failure makes every object of the batch dirty again.
 *
 * Both run on the flusher thread or in rcl_domain_writeback_all()'s caller,
 * with the batch's objects under writeback.  They may call the list
 * operations, rcl_lruvec_set_dirty() and rcl_domain_detach(); these return
 * -EDEADLK from them (nothing done): rcl_domain_flusher_stop() (on the
 * flusher thread), rcl_domain_free() of the domain being written, and
 * rcl_lruvec_del_wait() on a node under writeback or isolated (the object
 * being written would wait for itself).  rcl_lruvec_del() of such a node
 * returns -EBUSY.
 *
 * An object whose write (or its batch's sync) failed is not tried again in
 * the same request or rcl_domain_writeback_all() call; the next one does.
 */
struct rcl_writeback_ops {
	int (*write)(void *priv, struct rcl_lru_node *node);
	int (*sync)(void *priv);
};

/**
 * rcl_domain_flusher_start() - run the library's flusher thread
 * @d: the domain
 * @ops: the write callbacks (@ops->write is required)
 * @priv: passed to them
 * @batch: objects per batch (per sync); 0 = 64; at most
 *	RCL_WRITEBACK_MAX_BATCH
 *
 * From now on flush requests go to this thread instead of the application's
 * wakeup callback.  A request pending for the application's flusher (never
 * delivered) goes to the thread; the one in flight to it is dropped, and
 * its rcl_domain_flush_done() returns -ENOENT.
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL arguments or @batch above
 * RCL_WRITEBACK_MAX_BATCH; -EBUSY if it runs already; -EAGAIN
 * if the thread cannot be created (nothing changes: a request in flight to
 * the application's flusher stays in flight, to be acknowledged with
 * rcl_domain_flush_done()).
 */
RCL_API int rcl_domain_flusher_start(struct rcl_domain *d,
				     const struct rcl_writeback_ops *ops,
				     void *priv, unsigned batch);

/**
 * rcl_domain_flusher_stop() - stop the flusher thread, after its current batch
 * @d: the domain
 *
 * The thread checks between batches: it finishes the batch it is writing
 * (writes, sync, end of writeback) and leaves the rest of its request.
 * Dirty objects stay dirty: flush them first (rcl_domain_flush() and wait,
 * or rcl_domain_writeback_all()) if they must reach storage.  Once the stop
 * has begun, flush requests go where they go with no thread running (the
 * application's wakeup callback, or nowhere); the thread's own are dropped.
 * Two stops at once (rcl_domain_free() is one): one joins the thread, the
 * other waits until it has; both return 0.  rcl_domain_flusher_start()
 * returns -EBUSY until the thread is joined.
 *
 * Context: any thread but the flusher's callbacks (-EDEADLK).
 * Return: 0 (also if it was not running); -EINVAL for NULL; -EDEADLK from
 * the flusher thread's own callbacks.
 *
 * Bad input: -EDEADLK from the flusher's own callbacks.
 */
RCL_API int rcl_domain_flusher_stop(struct rcl_domain *d);

/**
 * rcl_domain_writeback_all() - write every dirty object now, in this thread
 * @d: the domain
 * @ops: the write callbacks
 * @priv: passed to them
 * @written: if not NULL, receives the number of objects written
 *
 * For shutdown and tests: the same batches as the flusher thread, run by the
 * caller until no dirty object is left (objects dirtied meanwhile included,
 * bounded by the number dirty at the start plus those re-dirtied, at most
 * twice over).  A failed write or sync does not stop it: the objects
 * concerned stay dirty and are not tried again in this call; all the others
 * are written.
 *
 * The library's flusher thread (rcl_domain_flusher_start()) may go on
 * meanwhile.  Objects in its batch are not written twice at once: when a
 * batch of the thread overlapped a pass, the call waits for the batch under
 * way to end (at most the domain's dirty timeout or 1 s, whichever is
 * longer, per wait) and passes again, so that an object dirtied during the thread's
 * write is written too; at most 4 passes.  Objects under writeback by the
 * application's own writers are skipped, not waited for.  For a complete
 * write-back at shutdown, stop the dirtying threads first.
 *
 * Memory: one batch array, and a set of the objects whose write failed,
 * from the domain's allocator.  If that set cannot grow, the call stops
 * after the batch in hand (objects not reached stay dirty) and returns
 * -ENOMEM.
 *
 * Context: any thread, not from callbacks.
 * Return: 0; -EINVAL for NULL arguments; -ENOMEM if no batch could be
 * allocated, or the call stopped early for want of memory; -ETIMEDOUT if a
 * batch of the flusher thread did not end within that bound (the
 * objects it holds are its to write; one dirtied during that write may stay
 * dirty); else the first error a write or sync returned (the objects
 * concerned stay dirty), after the others were written.
 *
 * Bad input: *@written counts the objects written, also on failure; 0 for
 * -EINVAL.
 */
RCL_API int rcl_domain_writeback_all(struct rcl_domain *d,
				     const struct rcl_writeback_ops *ops,
				     void *priv, uint64_t *written);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_FLUSHER_H */
