/* SPDX-License-Identifier: MIT */
/*
 * Per-thread batches of LRU adds and activations.
 *
 * The kernel's per-CPU folio_batch turns one lru_lock round trip per page into
 * one per 31 pages.  User space has no cheap per-CPU data with preemption
 * disabled, so the batch is per thread: a fixed array of 31 (node, lruvec, op)
 * entries guarded by its own mutex.  The owner takes that mutex on every
 * batched operation; since nobody else normally does, it is uncontended (two
 * atomic operations).  Other threads take it only to find a node in it (a
 * delete of a pending node, rare) or to drain it for an lruvec (explicit drain
 * points and lruvec teardown).
 *
 * Every batch is on a global registry so that those walkers can find it.  A
 * thread that exits drains its batch from a pthread key destructor, under the
 * registry lock, so no walker can miss entries that are about to move.
 *
 * Lock order: registry > batch > lruvec.
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
#include <string.h>

struct rcl__tentry {
	struct rcl_lru_node *node;
	struct rcl_lruvec *lv;
	unsigned op;
};

struct rcl__tbatch {
	pthread_mutex_t lock;
	unsigned nr;
	struct rcl__tentry e[RCL_LRU_PERTHREAD_BATCH];
	/* registry links, under registry_lock */
	struct rcl__tbatch *reg_next;
	struct rcl__tbatch *reg_prev;
};

/* ------------------------------------------------------------------------- */
/* Registry                                                                   */
/* ------------------------------------------------------------------------- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcl__tbatch registry_head = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.reg_next = &registry_head,
	.reg_prev = &registry_head,
};

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t batch_key;
static bool batch_key_ok;

static RCL__TLS struct rcl__tbatch *tls_batch;

RCL__TLS struct rcl_lruvec *rcl__tls_evicting;
RCL__TLS unsigned rcl__tls_writing;

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
	pthread_mutex_lock(&b->lock);
	batch_apply(b, NULL);
	b->reg_prev->reg_next = b->reg_next;
	b->reg_next->reg_prev = b->reg_prev;
	pthread_mutex_unlock(&b->lock);
	pthread_mutex_unlock(&registry_lock);

	if (tls_batch == b)
		tls_batch = NULL;
	pthread_mutex_destroy(&b->lock);
	rcl__free(b);
}

static void make_key(void)
{
	batch_key_ok = pthread_key_create(&batch_key, batch_destructor) == 0;
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
	if (pthread_mutex_init(&b->lock, NULL) != 0) {
		rcl__free(b);
		return NULL;
	}
	if (pthread_setspecific(batch_key, b) != 0) {
		pthread_mutex_destroy(&b->lock);
		rcl__free(b);
		return NULL;
	}
	pthread_mutex_lock(&registry_lock);
	b->reg_next = registry_head.reg_next;
	b->reg_prev = &registry_head;
	registry_head.reg_next->reg_prev = b;
	registry_head.reg_next = b;
	pthread_mutex_unlock(&registry_lock);
	tls_batch = b;
	return b;
}

/* ------------------------------------------------------------------------- */
/* Internal API                                                               */
/* ------------------------------------------------------------------------- */

struct rcl__tbatch *rcl__tbatch_lock_local(void)
{
	struct rcl__tbatch *b = tls_batch;

	if (unlikely(!b)) {
		b = batch_create();
		if (!b)
			return NULL;
	}
	pthread_mutex_lock(&b->lock);
	return b;
}

void rcl__tbatch_unlock(struct rcl__tbatch *b)
{
	pthread_mutex_unlock(&b->lock);
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
		pthread_mutex_lock(&b->lock);
		found = batch_remove(b, node);
		pthread_mutex_unlock(&b->lock);
	}
	if (!found) {
		pthread_mutex_lock(&registry_lock);
		for (b = registry_head.reg_next; b != &registry_head && !found;
		     b = b->reg_next) {
			pthread_mutex_lock(&b->lock);
			found = batch_remove(b, node);
			pthread_mutex_unlock(&b->lock);
		}
		pthread_mutex_unlock(&registry_lock);
	}
	atomic_fetch_and_explicit(&node->__flags, ~F_QUEUED,
				  memory_order_acq_rel);
}

void rcl__tbatch_drain_all(struct rcl_lruvec *lv)
{
	struct rcl__tbatch *b;

	pthread_mutex_lock(&registry_lock);
	for (b = registry_head.reg_next; b != &registry_head; b = b->reg_next) {
		pthread_mutex_lock(&b->lock);
		batch_apply(b, lv);
		pthread_mutex_unlock(&b->lock);
	}
	pthread_mutex_unlock(&registry_lock);
}

/* ------------------------------------------------------------------------- */
/* Public API                                                                 */
/* ------------------------------------------------------------------------- */

RCL_API void rcl_lru_drain_local(void)
{
	struct rcl__tbatch *b = tls_batch;

	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	batch_apply(b, NULL);
	pthread_mutex_unlock(&b->lock);
}

RCL_API int rcl_lruvec_drain(struct rcl_lruvec *lv)
{
	if (!lruvec_live(lv))
		return -EINVAL;
	rcl__tbatch_drain_all(lv);
	return 0;
}
