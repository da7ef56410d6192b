/* SPDX-License-Identifier: MIT */
/*
 * Per-thread batches of LRU adds and activations.
 *
 * The kernel's per-CPU folio_batch turns one lru_lock round trip per page into
 * one per 31 pages.  User space has no cheap per-CPU data with preemption
 * disabled, so the batch is per thread: a fixed array of 31 (node, lruvec, op)
 * entries guarded by its own lock.  The owner takes that lock on every
 * batched operation; since nobody else normally does, it is uncontended, and
 * it is built to cost its owner one locked instruction per operation (an
 * exchange to take it, a plain release store to drop it), where a pthread
 * mutex costs two.  Other threads take it only to find a node in it (a
 * delete of a pending node, rare) or to drain it for an lruvec (explicit drain
 * points and lruvec teardown); a waiter spins on plain loads, not on locked
 * instructions, and yields the CPU after a short while, as the holder may be
 * asleep on an lruvec mutex.
 *
 * Every batch is on a global registry so that those walkers can find it.  A
 * thread that exits drains its batch from a pthread key destructor, under the
 * registry lock, so no walker can miss entries that are about to move.
 *
 * That destructor does not run for a batch first made from another key's
 * destructor in the last round of them (a value set then is never
 * destroyed).  So the owner also holds a robust mutex from the batch's
 * birth to its destructor: a drain of all batches that finds it
 * owner-dead applies the dead thread's entries and frees its batch.  In a
 * fork() child the other threads' batches are orphaned, and go the same way.
 *
 * Lock order: registry > batch > lruvec.  The owner mutex is outside it:
 * everyone only ever trylocks it.
 *
 * Circle: lib/lruvec.c queues entries here (rcl__tbatch_*), and a drain
 * applies each one back through rcl__lruvec_apply_locked(), under the
 * lruvec lock.  The kernel has the same circle inside one file, mm/swap.c:
 * folio_add_lru() and folio_activate() queue into per-CPU folio batches,
 * and folio_batch_move_lru() calls the move function for each folio.
 * Here the registry and the thread-exit drain make the batches a file of
 * their own, and the way back stays one function.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

struct rcl__tentry {
	struct rcl_lru_node *node;
	struct rcl_lruvec *lv;
	unsigned op;
};

struct rcl__tbatch {
	atomic_uint lock;	/* 0 free, 1 held: batch_lock() */
	unsigned nr;
	struct rcl__tentry e[RCL_LRU_PERTHREAD_BATCH];
	/* registry links, under registry_lock */
	struct rcl__tbatch *reg_next;
	struct rcl__tbatch *reg_prev;
	/*
	 * Robust, held by the owner until its key destructor: EOWNERDEAD to
	 * a trylock means the thread ended without it (batch_reap_dead()).
	 * @owned: it is held (false if it could not be made).
	 */
	struct rcl__owner owner;
	/* In a fork() child: a batch of a thread the child does not have. */
	bool orphan;
};

/* ------------------------------------------------------------------------- */
/* Registry                                                                   */
/* ------------------------------------------------------------------------- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcl__tbatch registry_head = {
	.reg_next = &registry_head,
	.reg_prev = &registry_head,
};

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t batch_key;
static bool batch_key_ok;

static RCL__TLS struct rcl__tbatch *tls_batch;
/*
 * The library's key destructor has run for this thread's batch: a later
 * destructor of the application's (its key is newer, or it asked for
 * another round) that adds or activates goes unbatched, straight to the
 * lruvec under its lock.  A batch made then would be left pending, its
 * nodes off every list and its memory lost, when the rounds end.
 */
static RCL__TLS bool tls_batch_gone;

RCL__TLS const struct rcl__evict_frame *rcl__tls_evict_frames;
RCL__TLS unsigned rcl__tls_writing;

/* ------------------------------------------------------------------------- */
/* The batch lock                                                             */
/* ------------------------------------------------------------------------- */

/* Plain-load spins between two attempts before a waiter yields. */
#define BATCH_LOCK_SPINS 128

static __attribute__((noinline)) void batch_lock_slow(struct rcl__tbatch *b)
{
	unsigned spins = 0;

	for (;;) {
		/* Wait on plain loads: the line stays shared while held. */
		while (atomic_load_explicit(&b->lock, memory_order_relaxed)) {
			if (++spins < BATCH_LOCK_SPINS) {
				rcl__cpu_relax();
			} else {
				spins = 0;
				sched_yield();	/* the holder may sleep */
			}
		}
		if (!atomic_exchange_explicit(&b->lock, 1, memory_order_acquire))
			return;
	}
}

/* Take a batch's lock: one exchange when it is free (the owner's case). */
static inline void batch_lock(struct rcl__tbatch *b)
{
	if (unlikely(atomic_exchange_explicit(&b->lock, 1,
					      memory_order_acquire)))
		batch_lock_slow(b);
}

/* Drop it: a release store, no locked instruction. */
static inline void batch_unlock(struct rcl__tbatch *b)
{
	atomic_store_explicit(&b->lock, 0, memory_order_release);
}

/* ------------------------------------------------------------------------- */
/* Applying entries                                                           */
/* ------------------------------------------------------------------------- */

/*
 * Apply (and remove) the entries of a locked batch that refer to @only, or all
 * of them if @only is NULL.  Takes each lruvec's lock once per run of entries
 * for the same lruvec, as the kernel's folio_batch_move_lru() does.
 */
static void batch_apply(struct rcl__tbatch *b, struct rcl_lruvec *only)
{
	struct rcl_lruvec *locked = NULL;
	unsigned i, keep = 0;

	for (i = 0; i < b->nr; i++) {
		struct rcl__tentry e = b->e[i];

		if (only && e.lv != only) {
			b->e[keep++] = e;
			continue;
		}
		if (e.lv != locked) {
			if (locked)
				rcl__lruvec_unlock(locked);
			rcl__lruvec_lock(e.lv);
			locked = e.lv;
		}
		rcl__lruvec_apply_locked(e.lv, e.node, (enum rcl__batch_op)e.op);
	}
	if (locked)
		rcl__lruvec_unlock(locked);
	b->nr = keep;
}

static void batch_destructor(void *arg)
{
	struct rcl__tbatch *b = arg;

	pthread_mutex_lock(&registry_lock);
	batch_lock(b);
	batch_apply(b, NULL);
	b->reg_prev->reg_next = b->reg_next;
	b->reg_next->reg_prev = b->reg_prev;
	batch_unlock(b);
	pthread_mutex_unlock(&registry_lock);

	if (tls_batch == b) {
		tls_batch = NULL;
		tls_batch_gone = true;
	}
	rcl__owner_drop(&b->owner);
	rcl__free(b);
}

/*
 * With the registry lock held: if @b's thread has ended without its key
 * destructor, apply its entries, unlink it and free it.  True if it did.
 */
static bool batch_reap_dead(struct rcl__tbatch *b)
{
	if (b->orphan) {
		/*
		 * Its owner mutex is held by a thread of the parent, on no
		 * robust list of the child: freed with the batch, untouched.
		 */
		b->owner.held = false;
	} else if (!rcl__owner_dead(&b->owner)) {
		return false;
	}
	batch_lock(b);
	batch_apply(b, NULL);
	b->reg_prev->reg_next = b->reg_next;
	b->reg_next->reg_prev = b->reg_prev;
	batch_unlock(b);
	rcl__owner_drop(&b->owner);
	rcl__free(b);
	return true;
}

/* fork(): no registry or batch lock may stay held by a thread the child lacks. */
static void batch_atfork_prepare(void)
{
	struct rcl__tbatch *b;

	pthread_mutex_lock(&registry_lock);
	for (b = registry_head.reg_next; b != &registry_head; b = b->reg_next)
		batch_lock(b);
}

static void batch_atfork_release(void)
{
	struct rcl__tbatch *b;

	for (b = registry_head.reg_next; b != &registry_head; b = b->reg_next)
		batch_unlock(b);
	pthread_mutex_unlock(&registry_lock);
}

/*
 * The child has only the forking thread: the other threads' batches are
 * nobody's, and no key destructor of theirs will run.  Orphaned, they are
 * applied and freed by the next drain of all batches, as a dead thread's.
 */
static void batch_atfork_child(void)
{
	struct rcl__tbatch *b;

	for (b = registry_head.reg_next; b != &registry_head; b = b->reg_next)
		if (b != tls_batch)
			b->orphan = true;
	batch_atfork_release();
}

static void make_key(void)
{
	batch_key_ok = pthread_key_create(&batch_key, batch_destructor) == 0 &&
		       pthread_atfork(batch_atfork_prepare, batch_atfork_release,
				      batch_atfork_child) == 0;
}

static struct rcl__tbatch *batch_create(void)
{
	struct rcl__tbatch *b;

	pthread_once(&key_once, make_key);
	if (!batch_key_ok)
		return NULL;
	b = rcl__calloc(sizeof(*b));
	if (!b)
		return NULL;
	atomic_init(&b->lock, 0);
	rcl__owner_take(&b->owner);
	if (pthread_setspecific(batch_key, b) != 0) {
		rcl__owner_drop(&b->owner);
		rcl__free(b);
		return NULL;
	}
	/* Ours before it is listed: a fork() child must not orphan it. */
	tls_batch = b;
	pthread_mutex_lock(&registry_lock);
	b->reg_next = registry_head.reg_next;
	b->reg_prev = &registry_head;
	registry_head.reg_next->reg_prev = b;
	registry_head.reg_next = b;
	pthread_mutex_unlock(&registry_lock);
	return b;
}

/* ------------------------------------------------------------------------- */
/* Internal API                                                               */
/* ------------------------------------------------------------------------- */

struct rcl__tbatch *rcl__tbatch_lock_local(void)
{
	struct rcl__tbatch *b = tls_batch;

	if (unlikely(!b)) {
		if (tls_batch_gone)
			return NULL;	/* exiting: unbatched */
		b = batch_create();
		if (!b)
			return NULL;
	}
	batch_lock(b);
	return b;
}

void rcl__tbatch_unlock(struct rcl__tbatch *b)
{
	batch_unlock(b);
}

void rcl__tbatch_append(struct rcl__tbatch *b, struct rcl_lru_node *node,
			struct rcl_lruvec *lv, enum rcl__batch_op op)
{
	RCL_ASSERT(b->nr < RCL_LRU_PERTHREAD_BATCH);
	b->e[b->nr].node = node;
	b->e[b->nr].lv = lv;
	b->e[b->nr].op = op;
	if (++b->nr == RCL_LRU_PERTHREAD_BATCH)
		batch_apply(b, NULL);
}

/* Remove @node's entry from a locked batch; true if it was there. */
static bool batch_remove(struct rcl__tbatch *b, struct rcl_lru_node *node)
{
	unsigned i;

	/* Newest first: a delete usually follows its add closely. */
	for (i = b->nr; i-- > 0;) {
		if (b->e[i].node == node) {
			memmove(&b->e[i], &b->e[i + 1],
				(b->nr - i - 1) * sizeof(b->e[0]));
			b->nr--;
			return true;
		}
	}
	return false;
}

bool rcl__tbatch_del_pending_local(struct rcl_lruvec *lv,
				   struct rcl_lru_node *node)
{
	struct rcl__tbatch *b = tls_batch;
	bool done = false;
	unsigned i;

	if (!b)
		return false;
	batch_lock(b);
	/*
	 * Newest first: a delete usually follows its add closely.  While the
	 * batch lock is held its entries are not applied, so a node found here
	 * stays pending unless another thread deletes it (then the CAS sees
	 * the change and that thread purges the entry, after we let go).
	 */
	for (i = b->nr; i-- > 0;) {
		uint32_t f;

		if (b->e[i].node != node)
			continue;
		if (b->e[i].op != RCL__OP_ADD || b->e[i].lv != lv)
			break;
		f = node_flags(node);
		while ((f & F_STATE) == F_PENDING && f_id(f) == lv->__id &&
		       !(f & (F_DIRTY | F_WRITEBACK))) {
			/* Pending -> idle, and the entry goes with QUEUED. */
			if (node_cas(node, &f, f & F_KEEP_IDLE)) {
				memmove(&b->e[i], &b->e[i + 1],
					(b->nr - i - 1) * sizeof(b->e[0]));
				b->nr--;
				done = true;
				break;
			}
		}
		break;
	}
	batch_unlock(b);
	return done;
}

void rcl__tbatch_purge(struct rcl_lru_node *node)
{
	struct rcl__tbatch *b = tls_batch;
	bool found = false;

	/*
	 * The node is idle, so nobody can queue it again, and it is in at most
	 * one batch (QUEUED is set by CAS only when clear).  Either we find the
	 * entry, or the batch's owner applied it (and cleared QUEUED) before
	 * we got to that batch.
	 */
	if (b) {
		batch_lock(b);
		found = batch_remove(b, node);
		batch_unlock(b);
	}
	if (!found) {
		pthread_mutex_lock(&registry_lock);
		for (b = registry_head.reg_next; b != &registry_head && !found;
		     b = b->reg_next) {
			batch_lock(b);
			found = batch_remove(b, node);
			batch_unlock(b);
		}
		pthread_mutex_unlock(&registry_lock);
	}
	atomic_fetch_and_explicit(&node->__flags, ~F_QUEUED,
				  memory_order_acq_rel);
}

void rcl__tbatch_drain_all(struct rcl_lruvec *lv)
{
	struct rcl__tbatch *b, *next;

	pthread_mutex_lock(&registry_lock);
	for (b = registry_head.reg_next; b != &registry_head; b = next) {
		next = b->reg_next;
		if (batch_reap_dead(b))
			continue;
		batch_lock(b);
		batch_apply(b, lv);
		batch_unlock(b);
	}
	pthread_mutex_unlock(&registry_lock);
}

unsigned rcl__tbatch_count(void)
{
	struct rcl__tbatch *b;
	unsigned n = 0;

	pthread_mutex_lock(&registry_lock);
	for (b = registry_head.reg_next; b != &registry_head; b = b->reg_next)
		n++;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

/* ------------------------------------------------------------------------- */
/* Public API                                                                 */
/* ------------------------------------------------------------------------- */

RCL_API void rcl_lru_drain_local(void)
{
	struct rcl__tbatch *b = tls_batch;

	if (!b)
		return;
	batch_lock(b);
	batch_apply(b, NULL);
	batch_unlock(b);
}

RCL_API int rcl_lruvec_drain(struct rcl_lruvec *lv)
{
	if (!lruvec_live(lv))
		return -EINVAL;
	rcl__tbatch_drain_all(lv);
	return 0;
}
