/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench writeback: a write-back cache of the blocks of a real file,
 * simoop-like: writers dirty blocks, a reader reads, an allocator charges
 * new memory; reclaim writes dirty blocks itself (the pre-2017 kernel), or
 * the library's flusher thread writes them (all, or proportional requests).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <reclaim/reclaim.h>

#include "commands.h"
#include "harness.h"

/* ------------------------------------------------------------------------- */
/* writeback: reclaim that writes against the flusher (simoop-like)          */
/* ------------------------------------------------------------------------- */

/*
 * A write-back cache of the 4 KiB blocks of a real file under a memory
 * domain, after Mel Gorman's simoop as used for the kernel's 2017 series
 * ("mm: vmscan: fix kswapd writeback regression"): WB_WRITERS writer threads
 * dirty blocks, WB_READERS reader threads read blocks, and an allocator
 * thread charges new memory under the same budget; each runs at a fixed
 * rate (a burst of operations every millisecond), so that the machine is
 * not saturated and the latencies measure reclaim and writeback rather than
 * the scheduler.
 *
 * Each worker thread has its own cache (as in stream): an lruvec attached to
 * the domain, a direct-mapped index over its own range of file blocks under
 * striped mutexes, and a pool of objects (evictions push onto a lock-free
 * list, only the owner pops).  Lookups pin under the stripe lock; the evict
 * callback frees only unpinned objects (the pin protocol).
 *
 * - A writer streams through its own range (WB_WRITE_X budgets long, so a
 *   block has long been evicted when the writer comes back to it): charge
 *   on a miss, overwrite the whole block under its stripe lock,
 *   rcl_lruvec_set_dirty(), unpin, rcl_domain_balance_dirty().  The write
 *   latency is the time of that whole call, throttling included.  New
 *   blocks are added with RCL_LRU_ADD_NOBATCH: the flusher finds dirty
 *   objects on the lists and does not see those pending in a thread's add
 *   batch (31 per thread).
 * - A reader reads a random block of its range (WB_READ_X budgets; one read
 *   in WB_HOT_EVERY goes to the first WB_HOT_PCT % of it): a hit checks the
 *   block's first word and marks it accessed; a miss charges and pread()s.
 * - The allocator charges one object (the allocation latency is the time of
 *   rcl_domain_charge(), retries after -ENOMEM included), fills it, and
 *   frees (uncharges) the oldest of the WB_RING_DIV-th of the budget it holds.
 *
 * The domain is strict, with the background reclaimer.  Three modes, each
 * on a fresh domain and a fresh file:
 *
 * - reclaim-writes: RCL_DOMAIN_RECLAIM_WRITES and no flusher: reclaim hands
 *   dirty blocks to the evict callback (RCL_EVICT_DIRTY), which pwrite()s
 *   the block under its stripe lock (the page lock of the kernel's
 *   pageout()) before it answers FREED; the batch_end callback calls
 *   fdatasync() once per scan batch (of at most RCL_LRU_BATCH_ISOLATE
 *   objects) that wrote, and only then releases the written objects'
 *   memory, as the issue asks ("reclaim writes dirty objects itself,
 *   synchronously"; "the flusher, or in the baseline the reclaimer, calls
 *   fdatasync once per batch").  --reclaim-sync object syncs each object
 *   instead, as the kernel's reclaim wrote single pages.
 * - flusher-all, flusher-proportional: the library's flusher thread
 *   (rcl_domain_flusher_start(), batches of WB_FLUSH_BATCH: one pwrite() per
 *   object, one fdatasync() per batch), with flush_policy RCL_FLUSH_ALL or
 *   RCL_FLUSH_PROPORTIONAL.
 *
 * Objects written from reclaim are counted twice: by the domain
 * (writes_from_reclaim) and by the write routine itself, which the evict
 * callback enters with a thread-local "in reclaim" flag set; so a write
 * callback run inside reclaim would be counted too.
 */
#define WB_OBJ_SIZE 4096u
#define WB_WORDS (WB_OBJ_SIZE / sizeof(uint64_t))
#define WB_BUDGET (16ull << 20)
#define WB_SHORT_BUDGET (2ull << 20)
#define WB_WRITERS 2u
#define WB_READERS 1u
#define WB_CACHES (WB_WRITERS + WB_READERS)
#define WB_THREADS (WB_CACHES + 1u)		/* and the allocator */
#define WB_WRITE_X 1u		/* a writer's range / the budget */
#define WB_READ_X 1u		/* a reader's range / the budget */
#define WB_HOT_PCT 20u		/* the reader's hot part of its range */
#define WB_HOT_EVERY 2u		/* one read in 2 is hot */
#define WB_RING_DIV 8u		/* the allocator holds budget / 8 */
/* Operations per thread per millisecond. */
#define WB_WRITE_PER_MS 16u
#define WB_READ_PER_MS 40u
#define WB_ALLOC_PER_MS 10u
#define WB_MAX_LAG_MS 10u	/* further behind: skip ahead */
#define WB_WARM_MS 1000u
#define WB_RUN_MS 4000u
#define WB_SHORT_WARM_MS 60u
#define WB_SHORT_RUN_MS 150u
/* Rounds of the three modes, pooled (--rounds); --short runs one. */
#define WB_ROUNDS 3u
#define WB_MAX_ROUNDS 20u
#define WB_FLUSH_BATCH 64u
/*
 * The domain's dirty thresholds (% of the budget).  With the library's
 * defaults (10 and 20) the flusher, woken at the background threshold and
 * writing oldest first, cleans every block before it reaches the LRU tail
 * here: reclaim never meets a dirty object and the trigger never fires, so
 * the modes would differ only in having a flusher at all.  The trigger is
 * for an LRU that is small against the dirty limits (a NUMA node's against
 * the global limits, a cgroup-v1 memory cgroup's), where dirty objects do
 * reach the tail: 50 and 70 make this domain one.
 */
#define WB_DIRTY_BG 50u
#define WB_DIRTY_HARD 70u
#define WB_STRIPES 1024u	/* a power of two */
#define WB_POOL_MARGIN 64u
/* Disturbed measurements: BENCH_OTHER_MAX and BENCH_TRIES, as in stream. */

_Static_assert(WB_STRIPES && !(WB_STRIPES & (WB_STRIPES - 1)),
	       "WB_STRIPES is a power of two");

enum wb_mode { WB_RECLAIM_WRITES, WB_FLUSHER_ALL, WB_FLUSHER_PROP, WB_NR_MODES };

static const char *const wb_mode_names[WB_NR_MODES] = {
	"reclaim-writes", "flusher-all", "flusher-proportional",
};

enum wb_role { WB_WRITER, WB_READER, WB_ALLOCATOR };

struct wb_cache;

struct wb_obj {
	struct rcl_lru_node lru;
	struct wb_obj *next_free;	/* on a free list */
	struct wb_cache *cache;
	uint64_t key;			/* the block of the file */
	atomic_uint refs;		/* the index's reference + pins */
	bool hashed;			/* stripe lock */
	_Alignas(64) uint64_t payload[WB_WORDS];	/* stripe lock */
};

struct wb_run;

/* One thread's cache.  "Owner": its worker, or main once it is gone. */
struct wb_cache {
	_Alignas(64) struct rcl_lruvec lv;
	struct wb_run *run;
	uint64_t key0, nkeys;		/* its blocks of the file */
	struct wb_obj **slot;		/* the index; stripe lock */
	struct bench_stripe *stripe;
	struct wb_obj *objs;		/* the pool's memory */
	size_t nobjs;
	size_t used;			/* handed out at least once (owner) */
	struct wb_obj *priv_free;	/* the owner's free list */
	bool lv_ok;
	bool attached;
	_Alignas(64) _Atomic(struct wb_obj *) free_head;	/* evictions push */
};

struct wb_worker {
	_Alignas(64) struct wb_run *run;
	struct wb_cache *c;		/* NULL for the allocator */
	enum wb_role role;
	pthread_t tid;
	uint64_t rng;
	uint64_t next_key;		/* writers: the stream position */
	uint64_t gen;			/* writers: writes so far */
	/* the timed window */
	uint64_t ops, misses, retries;
	uint64_t below_low;		/* allocator: charges from below low */
	uint64_t *hist;			/* BENCH_HIST_BUCKETS, in ns */
	const char *err;
	int err_code;
};

struct wb_run {
	struct rcl_domain *d;
	enum wb_mode mode;
	bool sync_each;		/* wb_params.sync_each */
	int fd;
	uint64_t budget_objs;
	struct rcl_watermarks wm;
	struct wb_cache cache[WB_CACHES];
	struct wb_worker w[WB_THREADS];
	/* the allocator's memory: a ring of charged objects */
	uint64_t *ring;
	size_t nring, ring_held, ring_head;
	_Alignas(64) atomic_int phase;	/* 0 warm-up, 1 timed, 2 stop */
	_Alignas(64) atomic_ullong writes_reclaim;	/* by the write routine */
	_Alignas(64) atomic_ullong writes_flusher;
	atomic_ullong syncs;
	/* writes from reclaim by where reclaim ran: wb_role, 3 = background */
	atomic_ullong reclaim_writes_in[4];
	atomic_ullong io_errors;
	atomic_ullong bad_payloads;
	atomic_ullong unexpected_dirty;	/* RCL_EVICT_DIRTY without the flag */
	atomic_ullong evict_errors;
};

struct wb_params {
	uint64_t budget;
	unsigned warm_ms, run_ms;
	unsigned scale;		/* watermark_scale_factor; 0 = the default */
	unsigned dirty_bg, dirty_hard;	/* 0 = the library's defaults */
	bool sync_each;		/* reclaim-writes: fdatasync() per object */
	unsigned rounds;	/* windows per mode, pooled */
};

/* The vmstat counters the benchmark measures (over a window) and pools. */
#define WB_VM_COUNTERS(X)                                                     \
	X(pgscan_kswapd) X(pgscan_direct) X(pgsteal_kswapd)                   \
	X(pgsteal_direct) X(pgactivate) X(allocstall) X(pageoutrun)           \
	X(kswapd_wakeups) X(charge_failures) X(nr_dirty_scanned)              \
	X(nr_unqueued_dirty) X(nr_writeback_scanned) X(nr_immediate)          \
	X(flush_requests) X(flush_requests_vmscan) X(flush_coalesced)         \
	X(flusher_wakeups) X(writeback_throttled)                             \
	X(writeback_throttle_timeouts) X(dirty_throttled)                     \
	X(dirty_throttle_timeouts) X(writes_from_reclaim) X(writes_flusher)

struct wb_result {
	struct rcl_watermarks wm;
	double other;		/* CPU time others used during the window */
	bool disturbed;
	double secs;
	uint64_t writes, reads, read_misses, allocs, retries;
	uint64_t allocs_below_low;	/* headroom below low at the charge */
	double write_us[4], alloc_us[4], read_us[4];	/* p50 p95 p99 max */
	struct rcl_vmstat vm;	/* over the window */
	uint64_t own_reclaim_writes, own_flusher_writes, syncs;	/* window */
	uint64_t reclaim_writes_in[4];	/* window; by wb_role, 3 = background */
	uint64_t hist[3][BENCH_HIST_BUCKETS];	/* latencies, by wb_role */
};

/* Set around the evict callback's write: the write happens in reclaim. */
static _Thread_local bool wb_tls_in_reclaim;
/*
 * reclaim-writes, one sync per batch: the objects this thread's evict
 * callbacks wrote in the current batch, still charged, released by
 * wb_batch_end() after the batch's fdatasync() (linked by next_free).
 */
static _Thread_local struct wb_obj *wb_tls_written;
/* The worker of this thread; NULL in the library's threads. */
static _Thread_local struct wb_worker *wb_tls_worker;

static off_t wb_offset(uint64_t key)
{
	return (off_t)(key * WB_OBJ_SIZE);
}

/* A whole block, retrying short transfers.  0 or a negative errno. */
static int wb_io(int fd, void *buf, uint64_t key, bool write)
{
	size_t done = 0;

	while (done < WB_OBJ_SIZE) {
		ssize_t n = write ? pwrite(fd, (char *)buf + done,
					   WB_OBJ_SIZE - done,
					   wb_offset(key) + (off_t)done)
				  : pread(fd, (char *)buf + done,
					  WB_OBJ_SIZE - done,
					  wb_offset(key) + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/*
 * Write one object (its stripe lock held, so no writer changes it
 * meanwhile), counted by context: from reclaim, or not.
 */
static int wb_write_locked(struct wb_run *r, struct wb_obj *o)
{
	int err = wb_io(r->fd, o->payload, o->key, true);

	if (err) {
		atomic_fetch_add(&r->io_errors, 1);
		return err;
	}
	if (wb_tls_in_reclaim) {
		atomic_fetch_add_explicit(&r->writes_reclaim, 1,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(
			&r->reclaim_writes_in[wb_tls_worker ? wb_tls_worker->role
							     : 3u],
			1, memory_order_relaxed);
	} else
		atomic_fetch_add_explicit(&r->writes_flusher, 1,
					  memory_order_relaxed);
	return 0;
}

static int wb_sync(void *priv)
{
	struct wb_run *r = priv;

	atomic_fetch_add_explicit(&r->syncs, 1, memory_order_relaxed);
	if (fdatasync(r->fd) != 0) {
		atomic_fetch_add(&r->io_errors, 1);
		return -errno;
	}
	return 0;
}

static struct bench_stripe *wb_stripe_of(struct wb_cache *c, uint64_t key)
{
	return &c->stripe[key & (WB_STRIPES - 1u)];
}

/* The flusher's write callback: the object is under writeback (pinned). */
static int wb_flusher_write(void *priv, struct rcl_lru_node *node)
{
	struct wb_run *r = priv;
	struct wb_obj *o = rcl_container_of(node, struct wb_obj, lru);
	struct bench_stripe *s = wb_stripe_of(o->cache, o->key);
	int err;

	pthread_mutex_lock(&s->lock);
	err = wb_write_locked(r, o);
	pthread_mutex_unlock(&s->lock);
	return err;
}

static const struct rcl_writeback_ops wb_wops = {
	.write = wb_flusher_write,
	.sync = wb_sync,
};

/* Any thread: a freed object goes back to its cache's pool. */
static void wb_free_push(struct wb_cache *c, struct wb_obj *o)
{
	struct wb_obj *head =
		atomic_load_explicit(&c->free_head, memory_order_relaxed);

	do {
		o->next_free = head;
	} while (!atomic_compare_exchange_weak_explicit(
		&c->free_head, &head, o, memory_order_release,
		memory_order_relaxed));
}

/* The owner: an idle object, or NULL if the pool is exhausted. */
static struct wb_obj *wb_obj_get(struct wb_cache *c)
{
	struct wb_obj *o = c->priv_free;

	if (!o) {
		o = atomic_exchange_explicit(&c->free_head, NULL,
					     memory_order_acquire);
		if (!o) {
			if (c->used == c->nobjs)
				return NULL;
			o = &c->objs[c->used++];
			o->cache = c;
			rcl_lru_node_init(&o->lru);
			o->hashed = false;
			atomic_init(&o->refs, 0);
			return o;
		}
	}
	c->priv_free = o->next_free;
	return o;
}

/* An evicted, unhashed object: uncharged, and back to its cache's pool. */
static void wb_release(struct wb_run *r, struct wb_obj *o)
{
	if (rcl_domain_uncharge(r->d, WB_OBJ_SIZE) != 0)
		atomic_fetch_add(&r->evict_errors, 1);
	rcl_lru_node_init(&o->lru);
	wb_free_push(o->cache, o);
}

/*
 * The evict callback, in whichever thread reclaims.  With the flusher only
 * clean objects come here; in reclaim-writes, dirty ones come with
 * RCL_EVICT_DIRTY and are written here, synchronously: the memory of a
 * written object is released (uncharged) only after an fdatasync() that
 * covers its write, once per batch in wb_batch_end(), or at once with
 * --reclaim-sync object.  The flusher modes likewise end an object's
 * writeback, and so let reclaim free it, only after their batch's sync.
 */
static enum rcl_evict_status wb_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct wb_obj *o = rcl_container_of(node, struct wb_obj, lru);
	struct wb_cache *c = ctl->priv;
	struct wb_run *r = c->run;
	struct bench_stripe *s = wb_stripe_of(c, o->key);
	bool defer = false;
	unsigned f;

	pthread_mutex_lock(&s->lock);
	if (!o->hashed ||
	    atomic_load_explicit(&o->refs, memory_order_acquire) != 1) {
		pthread_mutex_unlock(&s->lock);
		return RCL_EVICT_BUSY;
	}
	/* Dirtied since reclaim isolated it: keep it until it is written. */
	f = rcl_lru_node_flags(node);
	if ((f & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK)) &&
	    !(ctl->flags & RCL_EVICT_DIRTY)) {
		pthread_mutex_unlock(&s->lock);
		return RCL_EVICT_BUSY;
	}
	if (ctl->flags & RCL_EVICT_DIRTY) {
		int err;

		if (r->mode != WB_RECLAIM_WRITES)
			atomic_fetch_add(&r->unexpected_dirty, 1);
		wb_tls_in_reclaim = true;
		err = wb_write_locked(r, o);
		/*
		 * --reclaim-sync object: one fdatasync() per object, as the
		 * kernel's pageout() wrote single pages.
		 */
		if (!err && r->sync_each)
			err = wb_sync(r);
		wb_tls_in_reclaim = false;
		if (err) {
			pthread_mutex_unlock(&s->lock);
			return RCL_EVICT_BUSY;	/* still dirty */
		}
		/*
		 * Otherwise the block is held until the batch's fdatasync()
		 * (wb_batch_end()); out of the index meanwhile, so that a
		 * lookup reads it back from the file.
		 */
		defer = !r->sync_each;
	}
	c->slot[o->key - c->key0] = NULL;
	o->hashed = false;
	pthread_mutex_unlock(&s->lock);
	atomic_store_explicit(&o->refs, 0, memory_order_relaxed);
	if (defer) {
		o->next_free = wb_tls_written;
		wb_tls_written = o;
	} else {
		wb_release(r, o);
	}
	return RCL_EVICT_FREED;
}

/*
 * The end of a batch of evict callbacks: in reclaim-writes (one sync per
 * batch), one fdatasync() for the objects the batch wrote, then their
 * memory goes.  A failed sync is counted as an I/O error, which fails the
 * run (checked after each mode); the objects are released all the same.
 */
static void wb_batch_end(struct rcl_lruvec *lv, void *priv, size_t nr_freed)
{
	struct wb_cache *c = priv;
	struct wb_run *r = c->run;
	struct wb_obj *o = wb_tls_written;

	(void)lv;
	(void)nr_freed;
	if (!o)
		return;
	wb_tls_written = NULL;
	(void)wb_sync(r);
	while (o) {
		struct wb_obj *next = o->next_free;

		wb_release(r, o);
		o = next;
	}
}

static const struct rcl_lruvec_ops wb_ops = {
	.evict = wb_evict,
	.batch_end = wb_batch_end,
};

/*
 * Charge one object; a strict domain refuses while everything reclaimable
 * is pinned, dirty or under writeback: yield and retry (counted).
 */
static int wb_charge(struct wb_worker *w, bool timed)
{
	int ret;

	while ((ret = rcl_domain_charge(w->run->d, WB_OBJ_SIZE,
					RCL_CTX_CAPABLE, NULL)) == -ENOMEM) {
		if (timed)
			w->retries++;
		if (atomic_load_explicit(&w->run->phase,
					 memory_order_relaxed) == 2)
			return ret;
		sched_yield();
	}
	return ret;
}

static void wb_fail(struct wb_worker *w, const char *what, int code)
{
	if (!w->err) {
		w->err = what;
		w->err_code = code;
	}
	atomic_store(&w->run->phase, 2);
}

/* Look @key up in the owner's cache and pin it, or NULL. */
static struct wb_obj *wb_lookup(struct wb_cache *c, uint64_t key)
{
	struct bench_stripe *s = wb_stripe_of(c, key);
	struct wb_obj *o;

	pthread_mutex_lock(&s->lock);
	o = c->slot[key - c->key0];
	if (o)
		atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&s->lock);
	return o;
}

/*
 * A new object for @key in the owner's cache, charged, indexed and on the
 * lruvec, pinned once; its payload is read from the file if @read.
 */
static struct wb_obj *wb_insert(struct wb_worker *w, uint64_t key, bool read,
				bool timed, const char **what, int *code)
{
	struct wb_run *r = w->run;
	struct wb_cache *c = w->c;
	struct bench_stripe *s = wb_stripe_of(c, key);
	struct wb_obj *o;
	int ret;

	ret = wb_charge(w, timed);
	if (ret) {
		*what = "rcl_domain_charge";
		*code = ret;
		return NULL;
	}
	o = wb_obj_get(c);
	if (!o) {
		rcl_domain_uncharge(r->d, WB_OBJ_SIZE);
		*what = "object pool exhausted (usage over the budget)";
		*code = -ENOMEM;
		return NULL;
	}
	o->key = key;
	if (read) {
		/* Read-only blocks: no write can race with this read. */
		ret = wb_io(r->fd, o->payload, key, false);
		if (ret) {
			rcl_domain_uncharge(r->d, WB_OBJ_SIZE);
			wb_free_push(c, o);
			*what = "pread";
			*code = ret;
			return NULL;
		}
	}
	atomic_store_explicit(&o->refs, 2, memory_order_relaxed);
	pthread_mutex_lock(&s->lock);
	c->slot[key - c->key0] = o;
	o->hashed = true;
	pthread_mutex_unlock(&s->lock);
	ret = rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE, WB_OBJ_SIZE,
			     read ? 0 : RCL_LRU_ADD_NOBATCH);
	if (ret) {
		pthread_mutex_lock(&s->lock);
		c->slot[key - c->key0] = NULL;
		o->hashed = false;
		pthread_mutex_unlock(&s->lock);
		rcl_domain_uncharge(r->d, WB_OBJ_SIZE);
		wb_free_push(c, o);
		*what = "rcl_lruvec_add";
		*code = ret;
		return NULL;
	}
	return o;
}

/* One write: the latency figure covers all of it. */
static int wb_write_op(struct wb_worker *w, bool timed, const char **what,
		       int *code)
{
	struct wb_run *r = w->run;
	struct wb_cache *c = w->c;
	uint64_t key = c->key0 + w->next_key;
	struct bench_stripe *s = wb_stripe_of(c, key);
	struct wb_obj *o;
	size_t i;
	int ret;

	w->next_key = (w->next_key + 1u) % c->nkeys;
	o = wb_lookup(c, key);
	if (o) {
		ret = rcl_lruvec_mark_accessed(&c->lv, &o->lru);
		if (ret) {
			*what = "rcl_lruvec_mark_accessed";
			*code = ret;
			return -1;
		}
	} else {
		if (timed)
			w->misses++;
		o = wb_insert(w, key, false, timed, what, code);
		if (!o)
			return -1;
	}
	/* The new content: one store per cache line, the key first. */
	w->gen++;
	pthread_mutex_lock(&s->lock);
	o->payload[0] = key;
	o->payload[1] = w->gen;
	for (i = 8; i < WB_WORDS; i += 8)
		o->payload[i] = key ^ w->gen ^ i;
	pthread_mutex_unlock(&s->lock);
	ret = rcl_lruvec_set_dirty(&c->lv, &o->lru);
	atomic_fetch_sub_explicit(&o->refs, 1, memory_order_release);
	if (ret) {
		*what = "rcl_lruvec_set_dirty";
		*code = ret;
		return -1;
	}
	ret = rcl_domain_balance_dirty(r->d, RCL_CTX_CAPABLE);
	if (ret && ret != -ETIMEDOUT) {
		*what = "rcl_domain_balance_dirty";
		*code = ret;
		return -1;
	}
	return 0;
}

static int wb_read_op(struct wb_worker *w, bool timed, const char **what,
		      int *code)
{
	struct wb_cache *c = w->c;
	uint64_t r = bench_rng_next(&w->rng), hot = c->nkeys * WB_HOT_PCT / 100u;
	uint64_t key = c->key0 + ((r >> 8) % WB_HOT_EVERY == 0
					  ? (r >> 16) % hot
					  : hot + (r >> 16) % (c->nkeys - hot));
	struct wb_obj *o = wb_lookup(c, key);
	int ret;

	if (!o) {
		if (timed)
			w->misses++;
		o = wb_insert(w, key, true, timed, what, code);
		if (!o)
			return -1;
	} else {
		ret = rcl_lruvec_mark_accessed(&c->lv, &o->lru);
		if (ret) {
			atomic_fetch_sub(&o->refs, 1);
			*what = "rcl_lruvec_mark_accessed";
			*code = ret;
			return -1;
		}
	}
	if (o->payload[0] != key)
		atomic_fetch_add(&w->run->bad_payloads, 1);
	atomic_fetch_sub_explicit(&o->refs, 1, memory_order_release);
	return 0;
}

/* The allocator: charge a new object, fill it, free the oldest. */
static int wb_alloc_op(struct wb_worker *w, bool timed, const char **what,
		       int *code)
{
	struct wb_run *r = w->run;
	uint64_t *obj, t0;
	int ret;

	/*
	 * Below the low watermark a charge wakes the background reclaimer and
	 * may yield the CPU to it (domain.h): count how often that is so.
	 */
	if (timed && rcl_domain_budget(r->d) - rcl_domain_usage(r->d) <
			     r->wm.low + WB_OBJ_SIZE)
		w->below_low++;
	/* The allocation latency: the charge alone, retries included. */
	t0 = bench_now_ns();
	ret = wb_charge(w, timed);
	if (timed && !ret)
		w->hist[bench_hist_idx(bench_now_ns() - t0)]++;
	if (ret) {
		*what = "rcl_domain_charge";
		*code = ret;
		return -1;
	}
	obj = r->ring + r->ring_head * WB_WORDS;
	if (r->ring_held == r->nring)
		rcl_domain_uncharge(r->d, WB_OBJ_SIZE);	/* the oldest */
	else
		r->ring_held++;
	memset(obj, (int)(r->ring_head & 0xff), WB_OBJ_SIZE);
	r->ring_head = (r->ring_head + 1u) % r->nring;
	return 0;
}

static void *wb_worker_main(void *arg)
{
	static const unsigned per_ms[] = {
		[WB_WRITER] = WB_WRITE_PER_MS,
		[WB_READER] = WB_READ_PER_MS,
		[WB_ALLOCATOR] = WB_ALLOC_PER_MS,
	};
	static const char *const names[] = {
		[WB_WRITER] = "wb-writer",
		[WB_READER] = "wb-reader",
		[WB_ALLOCATOR] = "wb-alloc",
	};
	struct wb_worker *w = arg;
	struct wb_run *r = w->run;
	struct timespec ts;
	uint64_t tick;
	int phase;

	pthread_setname_np(pthread_self(), names[w->role]);
	wb_tls_worker = w;
	tick = bench_now_ns();
	while ((phase = atomic_load_explicit(&r->phase,
					     memory_order_acquire)) != 2) {
		bool timed = phase == 1;
		uint64_t now;
		unsigned i;

		for (i = 0; i < per_ms[w->role]; i++) {
			const char *what = NULL;
			uint64_t t0 = bench_now_ns();
			int code = 0, ret;

			switch (w->role) {
			case WB_WRITER:
				ret = wb_write_op(w, timed, &what, &code);
				break;
			case WB_READER:
				ret = wb_read_op(w, timed, &what, &code);
				break;
			case WB_ALLOCATOR:
			default:
				ret = wb_alloc_op(w, timed, &what, &code);
				break;
			}
			if (ret) {
				if (atomic_load(&r->phase) != 2 || !what ||
				    strcmp(what, "rcl_domain_charge"))
					wb_fail(w, what, code);
				rcl_lru_drain_local();
				return NULL;
			}
			if (!timed)
				continue;
			/* The allocator times its charge itself. */
			if (w->role != WB_ALLOCATOR)
				w->hist[bench_hist_idx(bench_now_ns() - t0)]++;
			w->ops++;
		}
		/* The next millisecond; far behind, skip ahead. */
		tick += 1000000u;
		now = bench_now_ns();
		if (now > tick + WB_MAX_LAG_MS * 1000000ull)
			tick = now;
		if (tick > now) {
			ts.tv_sec = (time_t)(tick / 1000000000u);
			ts.tv_nsec = (long)(tick % 1000000000u);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
					NULL);
		}
	}
	rcl_lru_drain_local();
	return NULL;
}

static int wb_setup_cache(struct wb_run *r, struct wb_cache *c, uint64_t key0,
			  uint64_t nkeys)
{
	struct rcl_lruvec_config cfg = { .ops = &wb_ops, .priv = c };
	int ret;

	c->run = r;
	c->key0 = key0;
	c->nkeys = nkeys;
	atomic_init(&c->free_head, NULL);
	c->slot = calloc((size_t)nkeys, sizeof(*c->slot));
	c->stripe = bench_stripes_new(WB_STRIPES);
	c->nobjs = (size_t)r->budget_objs + WB_POOL_MARGIN;
	c->objs = aligned_alloc(64, c->nobjs * sizeof(*c->objs));
	if (!c->slot || !c->stripe || !c->objs) {
		bench_stripes_free(c->stripe, WB_STRIPES);
		c->stripe = NULL;
		fprintf(stderr, "rcl-bench: out of memory\n");
		return -1;
	}
	ret = rcl_lruvec_init(&c->lv, &cfg);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_lruvec_init: %s\n",
			strerror(-ret));
		return -1;
	}
	c->lv_ok = true;
	ret = rcl_domain_attach(r->d, &c->lv, 0);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_domain_attach: %s\n",
			strerror(-ret));
		return -1;
	}
	c->attached = true;
	return 0;
}

/*
 * The file: the writers' ranges, then the readers', every block holding its
 * number in its first word (the writers' blocks are overwritten anyway).
 * Created with mkstemp() under $TMPDIR (or /tmp) and unlinked at once, so
 * that it goes with the descriptor whatever happens.
 */
static int wb_file_create(uint64_t nblocks)
{
	const char *dir = getenv("TMPDIR");
	uint64_t *buf, key;
	char path[256];
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	if ((size_t)snprintf(path, sizeof(path), "%s/rcl-bench-wb-XXXXXX",
			     dir) >= sizeof(path)) {
		fprintf(stderr, "rcl-bench: $TMPDIR is too long\n");
		return -1;
	}
	fd = mkstemp(path);
	if (fd < 0) {
		fprintf(stderr, "rcl-bench: mkstemp(%s): %s\n", path,
			strerror(errno));
		return -1;
	}
	unlink(path);
	buf = calloc(1, WB_OBJ_SIZE);
	if (!buf) {
		close(fd);
		fprintf(stderr, "rcl-bench: out of memory\n");
		return -1;
	}
	for (key = 0; key < nblocks; key++) {
		int ret;

		buf[0] = key;
		ret = wb_io(fd, buf, key, true);
		if (ret) {
			fprintf(stderr, "rcl-bench: writing %s: %s\n", path,
				strerror(-ret));
			free(buf);
			close(fd);
			return -1;
		}
	}
	free(buf);
	return fd;
}

/*
 * After the workers: write what is dirty, stop the threads, check the
 * counters against the domain, take every object out and free everything.
 * Returns 0 or -1.
 */
static int wb_teardown(struct wb_run *r)
{
	struct rcl_dirty_stats ds = { 0 };
	struct rcl_vmstat vm;
	uint64_t cached = 0, written = 0;
	unsigned t;
	int ret, err = 0;

	rcl_lru_drain_local();
	if (r->d) {
		/* The flusher first: see rcl_domain_writeback_all(). */
		ret = rcl_domain_reclaimer_stop(r->d);
		if (!ret)
			ret = rcl_domain_flusher_stop(r->d);
		if (!ret)
			ret = rcl_domain_writeback_all(r->d, &wb_wops, r,
						       &written);
		if (ret) {
			fprintf(stderr, "rcl-bench: writeback teardown: %s\n",
				strerror(-ret));
			err = -1;
		}
		rcl_domain_dirty_stats(r->d, &ds);
		rcl_domain_vmstat(r->d, &vm);
		if (ds.nr_dirty || ds.nr_writeback) {
			fprintf(stderr, "rcl-bench: writeback %s: %llu dirty and %llu writeback objects after rcl_domain_writeback_all()\n",
				wb_mode_names[r->mode],
				(unsigned long long)ds.nr_dirty,
				(unsigned long long)ds.nr_writeback);
			err = -1;
		}
		/* The write routine's counts against the domain's. */
		if (vm.writes_from_reclaim != atomic_load(&r->writes_reclaim) ||
		    vm.writes_flusher != atomic_load(&r->writes_flusher)) {
			fprintf(stderr, "rcl-bench: writeback %s: the domain counted %llu writes from reclaim and %llu by the flusher, the write routine %llu and %llu\n",
				wb_mode_names[r->mode],
				(unsigned long long)vm.writes_from_reclaim,
				(unsigned long long)vm.writes_flusher,
				(unsigned long long)atomic_load(&r->writes_reclaim),
				(unsigned long long)atomic_load(&r->writes_flusher));
			err = -1;
		}
	}
	for (t = 0; t < WB_CACHES; t++) {
		struct wb_cache *c = &r->cache[t];

		if (c->attached) {
			ret = rcl_domain_detach(r->d, &c->lv);
			if (ret) {
				fprintf(stderr, "rcl-bench: rcl_domain_detach: %s\n",
					strerror(-ret));
				err = -1;
			}
			c->attached = false;
		}
	}
	for (t = 0; t < WB_CACHES; t++) {
		struct wb_cache *c = &r->cache[t];
		uint64_t k;

		if (c->slot) {
			for (k = 0; k < c->nkeys; k++) {
				struct wb_obj *o = c->slot[k];

				if (!o)
					continue;
				cached++;
				ret = rcl_lruvec_del(&c->lv, &o->lru);
				if (ret) {
					fprintf(stderr, "rcl-bench: rcl_lruvec_del: %s\n",
						strerror(-ret));
					err = -1;
				}
				c->slot[k] = NULL;
			}
		}
		if (c->lv_ok) {
			ret = rcl_lruvec_destroy(&c->lv);
			if (ret) {
				fprintf(stderr, "rcl-bench: rcl_lruvec_destroy: %s\n",
					strerror(-ret));
				err = -1;
			}
		}
		bench_stripes_free(c->stripe, WB_STRIPES);
		free(c->slot);
		free(c->objs);
	}
	if (r->d) {
		uint64_t want = (cached + r->ring_held) * WB_OBJ_SIZE;

		if (rcl_domain_usage(r->d) != want) {
			fprintf(stderr, "rcl-bench: writeback %s: usage %llu, but %llu objects of %u bytes are held\n",
				wb_mode_names[r->mode],
				(unsigned long long)rcl_domain_usage(r->d),
				(unsigned long long)(cached + r->ring_held),
				WB_OBJ_SIZE);
			err = -1;
		}
		ret = rcl_domain_free(r->d);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_domain_free: %s\n",
				strerror(-ret));
			err = -1;
		}
	}
	for (t = 0; t < WB_THREADS; t++)
		free(r->w[t].hist);
	free(r->ring);
	if (r->fd >= 0)
		close(r->fd);
	return err;
}

static void wb_quantiles(const uint64_t *h, double out[4])
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < BENCH_HIST_BUCKETS; i++)
		n += h[i];
	out[0] = bench_hist_quantile(h, n, 0.50) / 1e3;
	out[1] = bench_hist_quantile(h, n, 0.95) / 1e3;
	out[2] = bench_hist_quantile(h, n, 0.99) / 1e3;
	out[3] = bench_hist_quantile(h, n, 1.0) / 1e3;
}

/* One mode, on a fresh domain and file.  Returns 0 or -1. */
static int wb_measure(enum wb_mode mode, const struct wb_params *p,
		      struct wb_result *res)
{
	struct rcl_domain_config cfg = {
		.budget = p->budget,
		.mode = RCL_CHARGE_STRICT,
		.watermark_scale_factor = p->scale,
		.flags = mode == WB_RECLAIM_WRITES ? RCL_DOMAIN_RECLAIM_WRITES
						   : 0,
		.flush_policy = mode == WB_FLUSHER_PROP ? RCL_FLUSH_PROPORTIONAL
							: RCL_FLUSH_ALL,
		.dirty_background_ratio = p->dirty_bg,
		.dirty_ratio = p->dirty_hard,
	};
	uint64_t (*hist)[BENCH_HIST_BUCKETS] = res->hist;
	uint64_t wkeys, rkeys, key0 = 0, t0, t1, own0[3], in0[4];
	struct bench_cpu_snap snap0, snap1;
	struct rcl_vmstat vm0, vm1;
	struct timespec ts;
	struct wb_run *r;
	unsigned t, i;
	int ret, err = 0;

	memset(res, 0, sizeof(*res));
	r = bench_zalloc64(sizeof(*r));
	if (!r) {
		fprintf(stderr, "rcl-bench: out of memory\n");
		return -1;
	}
	r->mode = mode;
	r->sync_each = p->sync_each;
	r->fd = -1;
	r->budget_objs = p->budget / WB_OBJ_SIZE;
	wkeys = r->budget_objs * WB_WRITE_X;
	rkeys = r->budget_objs * WB_READ_X;
	r->nring = (size_t)(r->budget_objs / WB_RING_DIV);
	atomic_init(&r->phase, 0);
	r->ring = aligned_alloc(64, r->nring * WB_OBJ_SIZE);
	if (!r->ring) {
		fprintf(stderr, "rcl-bench: out of memory\n");
		err = -1;
		goto out;
	}
	r->fd = wb_file_create(wkeys * WB_WRITERS + rkeys * WB_READERS);
	if (r->fd < 0) {
		err = -1;
		goto out;
	}
	ret = rcl_domain_new(&cfg, &r->d);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_domain_new: %s\n",
			strerror(-ret));
		r->d = NULL;
		err = -1;
		goto out;
	}
	rcl_domain_watermarks(r->d, &r->wm);
	res->wm = r->wm;
	for (t = 0; t < WB_THREADS; t++) {
		struct wb_worker *w = &r->w[t];

		w->run = r;
		w->role = t < WB_WRITERS ? WB_WRITER
			  : t < WB_CACHES ? WB_READER
					  : WB_ALLOCATOR;
		w->rng = 0x9E3779B97F4A7C15ull * (t + 1u) ^ 0x5752495445ull;
		w->hist = calloc(BENCH_HIST_BUCKETS, sizeof(*w->hist));
		if (!w->hist) {
			fprintf(stderr, "rcl-bench: out of memory\n");
			err = -1;
			goto out;
		}
		if (t < WB_CACHES) {
			uint64_t n = w->role == WB_WRITER ? wkeys : rkeys;

			w->c = &r->cache[t];
			if (wb_setup_cache(r, w->c, key0, n)) {
				err = -1;
				goto out;
			}
			key0 += n;
		}
	}
	ret = rcl_domain_reclaimer_start(r->d);
	if (!ret && mode != WB_RECLAIM_WRITES)
		ret = rcl_domain_flusher_start(r->d, &wb_wops, r,
					       WB_FLUSH_BATCH);
	if (ret) {
		fprintf(stderr, "rcl-bench: starting the reclaimer or the flusher: %s\n",
			strerror(-ret));
		err = -1;
		goto out;
	}

	for (t = 0; t < WB_THREADS; t++) {
		ret = pthread_create(&r->w[t].tid, NULL, wb_worker_main,
				     &r->w[t]);
		if (ret) {
			fprintf(stderr, "rcl-bench: pthread_create: %s\n",
				strerror(ret));
			atomic_store(&r->phase, 2);
			while (t--)
				pthread_join(r->w[t].tid, NULL);
			err = -1;
			goto out;
		}
	}
	ts.tv_sec = p->warm_ms / 1000u;
	ts.tv_nsec = (long)(p->warm_ms % 1000u) * 1000000l;
	nanosleep(&ts, NULL);
	rcl_domain_vmstat(r->d, &vm0);
	own0[0] = atomic_load(&r->writes_reclaim);
	own0[1] = atomic_load(&r->writes_flusher);
	own0[2] = atomic_load(&r->syncs);
	for (i = 0; i < 4; i++)
		in0[i] = atomic_load(&r->reclaim_writes_in[i]);
	bench_cpu_snapshot(&snap0);
	t0 = bench_now_ns();
	atomic_store(&r->phase, 1);
	ts.tv_sec = p->run_ms / 1000u;
	ts.tv_nsec = (long)(p->run_ms % 1000u) * 1000000l;
	nanosleep(&ts, NULL);
	if (atomic_exchange(&r->phase, 2) == 2)
		err = -1;	/* a worker failed */
	t1 = bench_now_ns();
	rcl_domain_vmstat(r->d, &vm1);
	res->own_reclaim_writes = atomic_load(&r->writes_reclaim) - own0[0];
	res->own_flusher_writes = atomic_load(&r->writes_flusher) - own0[1];
	res->syncs = atomic_load(&r->syncs) - own0[2];
	for (i = 0; i < 4; i++)
		res->reclaim_writes_in[i] =
			atomic_load(&r->reclaim_writes_in[i]) - in0[i];
	bench_cpu_snapshot(&snap1);
	for (t = 0; t < WB_THREADS; t++)
		pthread_join(r->w[t].tid, NULL);
	res->other = bench_cpu_other(&snap0, &snap1);
	res->secs = (double)(t1 - t0) / 1e9;

	for (t = 0; t < WB_THREADS; t++) {
		struct wb_worker *w = &r->w[t];

		if (w->err) {
			fprintf(stderr, "rcl-bench: writeback %s, thread %u: %s (%s)\n",
				wb_mode_names[mode], t, w->err,
				strerror(-w->err_code));
			err = -1;
		}
		for (i = 0; i < BENCH_HIST_BUCKETS; i++)
			hist[w->role][i] += w->hist[i];
		res->retries += w->retries;
		switch (w->role) {
		case WB_WRITER:
			res->writes += w->ops;
			break;
		case WB_READER:
			res->reads += w->ops;
			res->read_misses += w->misses;
			break;
		case WB_ALLOCATOR:
			res->allocs += w->ops;
			res->allocs_below_low += w->below_low;
			break;
		}
	}
	if (atomic_load(&r->bad_payloads) || atomic_load(&r->evict_errors) ||
	    atomic_load(&r->unexpected_dirty) || atomic_load(&r->io_errors)) {
		fprintf(stderr, "rcl-bench: writeback %s: %llu reads found another block, %llu uncharge errors, %llu dirty objects handed to the evict callback, %llu I/O errors\n",
			wb_mode_names[mode],
			(unsigned long long)atomic_load(&r->bad_payloads),
			(unsigned long long)atomic_load(&r->evict_errors),
			(unsigned long long)atomic_load(&r->unexpected_dirty),
			(unsigned long long)atomic_load(&r->io_errors));
		err = -1;
	}
	wb_quantiles(hist[WB_WRITER], res->write_us);
	wb_quantiles(hist[WB_ALLOCATOR], res->alloc_us);
	wb_quantiles(hist[WB_READER], res->read_us);
#define WB_DELTA(f) res->vm.f = bench_sub(vm1.f, vm0.f);
	WB_VM_COUNTERS(WB_DELTA)
#undef WB_DELTA
out:
	if (wb_teardown(r))
		err = -1;
	free(r);
	return err;
}

/*
 * Pool one round's window into a mode's result: latencies from the summed
 * histograms, counts summed, the CPU time of others as the worst round's.
 */
static void wb_pool(struct wb_result *acc, const struct wb_result *x)
{
	size_t i, k;

	acc->other = acc->other > x->other ? acc->other : x->other;
	acc->disturbed = acc->disturbed || x->disturbed;
	acc->secs += x->secs;
	acc->writes += x->writes;
	acc->reads += x->reads;
	acc->read_misses += x->read_misses;
	acc->allocs += x->allocs;
	acc->retries += x->retries;
	acc->allocs_below_low += x->allocs_below_low;
#define WB_SUM(f) acc->vm.f += x->vm.f;
	WB_VM_COUNTERS(WB_SUM)
#undef WB_SUM
	acc->own_reclaim_writes += x->own_reclaim_writes;
	acc->own_flusher_writes += x->own_flusher_writes;
	acc->syncs += x->syncs;
	for (i = 0; i < 4; i++)
		acc->reclaim_writes_in[i] += x->reclaim_writes_in[i];
	for (k = 0; k < 3; k++)
		for (i = 0; i < BENCH_HIST_BUCKETS; i++)
			acc->hist[k][i] += x->hist[k][i];
	wb_quantiles(acc->hist[WB_WRITER], acc->write_us);
	wb_quantiles(acc->hist[WB_ALLOCATOR], acc->alloc_us);
	wb_quantiles(acc->hist[WB_READER], acc->read_us);
}

static void wb_print_json(const struct wb_result *res)
{
	unsigned m;

	for (m = 0; m < WB_NR_MODES; m++) {
		const struct wb_result *x = &res[m];

		bench_json_begin("writeback");
		bench_json_str("mode", wb_mode_names[m]);
		bench_json_dbl("write_p50_us", 3, x->write_us[0]);
		bench_json_dbl("write_p95_us", 3, x->write_us[1]);
		bench_json_dbl("write_p99_us", 3, x->write_us[2]);
		bench_json_dbl("alloc_p50_us", 3, x->alloc_us[0]);
		bench_json_dbl("alloc_p95_us", 3, x->alloc_us[1]);
		bench_json_dbl("alloc_p99_us", 3, x->alloc_us[2]);
		bench_json_uint("writes_from_reclaim",
				x->vm.writes_from_reclaim);
		bench_json_uint("writes_total", x->vm.writes_from_reclaim +
							x->vm.writes_flusher);
		bench_json_uint("flusher_wakeups", x->vm.flusher_wakeups);
		bench_json_end();
	}
}

/* The change from reclaim-writes to mode @m, in %, or NAN. */
static double wb_change(double base, double v)
{
	return base > 0.0 ? (v - base) / base * 100.0 : NAN;
}

static void wb_print_table(const struct wb_result *res,
			   const struct wb_params *p)
{
	unsigned m;

#define WB_ROW(name, fmt, ...)                                                \
	do {                                                                  \
		printf("%-34s", name);                                        \
		for (m = 0; m < WB_NR_MODES; m++) {                           \
			const struct wb_result *x = &res[m];                  \
			char buf[32];                                         \
			snprintf(buf, sizeof(buf), fmt, __VA_ARGS__);         \
			printf(" %20s", buf);                                 \
		}                                                             \
		putchar('\n');                                                \
	} while (0)
#define WB_ROW_U64(name, expr) WB_ROW(name, "%llu", (unsigned long long)(expr))

	printf("rcl-bench writeback: libreclaim %s, budget %llu MiB (%llu objects of\n"
	       "%u bytes, strict), %u writers x %u writes/ms streaming over %ux the\n"
	       "budget each, %u reader x %u reads/ms over %ux the budget (one in %u\n"
	       "on its first %u%%), 1 allocator x %u charges/ms holding 1/%u of the\n"
	       "budget; flusher batches of %u; watermarks min/low/high %llu/%llu/%llu\n"
	       "KiB (scale factor %u%s); dirty thresholds %u/%u %% of the budget%s;\n"
	       "reclaim-writes syncs once per %s; %u round%s of the modes, each\n"
	       "%u ms measured after %u ms of warm-up, pooled\n\n",
	       rcl_version(), (unsigned long long)(p->budget >> 20),
	       (unsigned long long)(p->budget / WB_OBJ_SIZE), WB_OBJ_SIZE,
	       WB_WRITERS, WB_WRITE_PER_MS, WB_WRITE_X, WB_READERS,
	       WB_READ_PER_MS, WB_READ_X, WB_HOT_EVERY, WB_HOT_PCT,
	       WB_ALLOC_PER_MS, WB_RING_DIV, WB_FLUSH_BATCH,
	       (unsigned long long)(res[0].wm.min >> 10),
	       (unsigned long long)(res[0].wm.low >> 10),
	       (unsigned long long)(res[0].wm.high >> 10),
	       p->scale ? p->scale : RCL_WATERMARK_SCALE_DEFAULT,
	       p->scale ? "" : ", the default",
	       p->dirty_bg, p->dirty_hard,
	       p->dirty_bg == WB_DIRTY_BG && p->dirty_hard == WB_DIRTY_HARD
		       ? " (the default here)" : "",
	       p->sync_each ? "object" : "scan batch", p->rounds,
	       p->rounds == 1 ? "" : "s", p->run_ms, p->warm_ms);
	printf("%-34s", "");
	for (m = 0; m < WB_NR_MODES; m++) {
		char head[32];

		snprintf(head, sizeof(head), "%s%s", wb_mode_names[m],
			 res[m].disturbed ? "*" : "");
		printf(" %20s", head);
	}
	putchar('\n');
	WB_ROW("write p50 / p95 (us)", "%.1f / %.1f", x->write_us[0],
	       x->write_us[1]);
	WB_ROW("write p99 / max (us)", "%.1f / %.0f", x->write_us[2],
	       x->write_us[3]);
	WB_ROW("alloc p50 / p95 (us)", "%.2f / %.2f", x->alloc_us[0],
	       x->alloc_us[1]);
	WB_ROW("alloc p99 / max (us)", "%.1f / %.0f", x->alloc_us[2],
	       x->alloc_us[3]);
	WB_ROW("read p50 / p99 (us)", "%.2f / %.1f", x->read_us[0],
	       x->read_us[2]);
	WB_ROW("write p99 change (%)", "%+.1f",
	       wb_change(res[0].write_us[2], x->write_us[2]));
	WB_ROW("alloc p95 change (%)", "%+.1f",
	       wb_change(res[0].alloc_us[1], x->alloc_us[1]));
	WB_ROW_U64("writes", x->writes);
	WB_ROW_U64("  reads", x->reads);
	WB_ROW_U64("  allocs", x->allocs);
	WB_ROW("  allocs below low watermark (%)", "%.1f",
	       x->allocs ? (double)x->allocs_below_low / (double)x->allocs *
				   100.0
			 : 0.0);
	WB_ROW("  read miss ratio", "%.3f",
	       x->reads ? (double)x->read_misses / (double)x->reads : 0.0);
	WB_ROW_U64("writes_total", x->vm.writes_from_reclaim + x->vm.writes_flusher);
	WB_ROW_U64("writes_from_reclaim (vmstat)", x->vm.writes_from_reclaim);
	WB_ROW_U64("  in reclaim (own count)", x->own_reclaim_writes);
	WB_ROW_U64("    by the background reclaimer", x->reclaim_writes_in[3]);
	WB_ROW_U64("    in the writers' charges", x->reclaim_writes_in[WB_WRITER]);
	WB_ROW_U64("    in the reader's charges", x->reclaim_writes_in[WB_READER]);
	WB_ROW_U64("    in the allocator's charges",
		   x->reclaim_writes_in[WB_ALLOCATOR]);
	WB_ROW_U64("writes_flusher (vmstat)", x->vm.writes_flusher);
	WB_ROW_U64("  by the flusher (own count)", x->own_flusher_writes);
	WB_ROW_U64("fdatasync calls", x->syncs);
	WB_ROW_U64("flusher_wakeups", x->vm.flusher_wakeups);
	WB_ROW_U64("flush requests / from reclaim", x->vm.flush_requests);
	WB_ROW_U64("  from reclaim", x->vm.flush_requests_vmscan);
	WB_ROW_U64("  coalesced", x->vm.flush_coalesced);
	WB_ROW_U64("dirty_throttled", x->vm.dirty_throttled);
	WB_ROW_U64("  timeouts", x->vm.dirty_throttle_timeouts);
	WB_ROW_U64("writeback_throttled", x->vm.writeback_throttled);
	WB_ROW_U64("  timeouts", x->vm.writeback_throttle_timeouts);
	WB_ROW_U64("reclaim met dirty/writeback", x->vm.nr_dirty_scanned);
	WB_ROW_U64("  unqueued dirty", x->vm.nr_unqueued_dirty);
	WB_ROW_U64("  immediate", x->vm.nr_immediate);
	WB_ROW_U64("pgscan bg", x->vm.pgscan_kswapd);
	WB_ROW_U64("pgscan direct", x->vm.pgscan_direct);
	WB_ROW_U64("pgsteal bg", x->vm.pgsteal_kswapd);
	WB_ROW_U64("pgsteal direct", x->vm.pgsteal_direct);
	WB_ROW_U64("allocstall", x->vm.allocstall);
	WB_ROW_U64("bg reclaimer wakeups", x->vm.kswapd_wakeups);
	WB_ROW_U64("bg reclaimer runs (pageoutrun)", x->vm.pageoutrun);
	WB_ROW_U64("charge failures (retried)", x->retries);
	WB_ROW("others' CPU time (%)", "%.1f", x->other * 100.0);
#undef WB_ROW_U64
#undef WB_ROW
	printf("\n"
	       "Latencies: write = the whole write call (lookup, charge on a miss,\n"
	       "overwrite, rcl_lruvec_set_dirty(), rcl_domain_balance_dirty());\n"
	       "alloc = the allocator's rcl_domain_charge(), -ENOMEM retries included.\n"
	       "Latencies and counts pool the rounds: the histograms and the\n"
	       "domain's vmstat over the measured windows are summed.  Changes are\n"
	       "against reclaim-writes.  Others' CPU time is the worst round's.\n");
	for (m = 0; m < WB_NR_MODES; m++)
		if (res[m].disturbed)
			break;
	if (m < WB_NR_MODES)
		printf("*: a round was measured while other processes used more than %.0f%% of the CPUs.\n",
		       BENCH_OTHER_MAX * 100.0);
}

int cmd_writeback(int argc, char **argv)
{
	static const char *const syncs[] = { "batch", "object", NULL };
	struct wb_params p = {
		.budget = WB_BUDGET,
		.warm_ms = WB_WARM_MS,
		.run_ms = WB_RUN_MS,
		.scale = 0,
		.dirty_bg = WB_DIRTY_BG,
		.dirty_hard = WB_DIRTY_HARD,
	};
	struct wb_result *res, *one;
	unsigned m, k, rounds = 0, disturbed = 0;	/* 0: not given */
	unsigned sync = 0;				/* syncs[]: batch */
	bool json = false, check_other = true, short_run = false;
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_FLAG("--short", &short_run),
		BENCH_OPT_UINT("--rounds", &rounds, 1, WB_MAX_ROUNDS),
		BENCH_OPT_UINT("--watermark-scale-factor", &p.scale, 1,
			       BENCH_MAX_SCALE),
		BENCH_OPT_CHOICE("--reclaim-sync", &sync, syncs),
		BENCH_OPT_UINT("--dirty-background-ratio", &p.dirty_bg, 1, 100),
		BENCH_OPT_UINT("--dirty-ratio", &p.dirty_hard, 1, 100),
		BENCH_OPT_END,
	};
	int ret;

	ret = bench_parse_opts(argc, argv, opts);
	if (ret != BENCH_CONTINUE)
		return ret;
	ret = 1;
	if (short_run) {
		p.budget = WB_SHORT_BUDGET;
		p.warm_ms = WB_SHORT_WARM_MS;
		p.run_ms = WB_SHORT_RUN_MS;
		/* /proc/stat counts 10 ms ticks: too coarse here. */
		check_other = false;
	}
	p.sync_each = sync == 1;

	p.rounds = rounds ? rounds : short_run ? 1u : WB_ROUNDS;
	fprintf(stderr, "rcl-bench writeback: libreclaim %s, budget %llu KiB, watermark scale factor %u, dirty thresholds %u/%u %%, reclaim-writes syncs per %s, %u round%s of %u ms per mode after %u ms of warm-up\n",
		rcl_version(), (unsigned long long)(p.budget >> 10),
		p.scale ? p.scale : RCL_WATERMARK_SCALE_DEFAULT,
		p.dirty_bg, p.dirty_hard, p.sync_each ? "object" : "batch",
		p.rounds, p.rounds == 1 ? "" : "s", p.run_ms, p.warm_ms);
	res = calloc(WB_NR_MODES, sizeof(*res));
	one = calloc(1, sizeof(*one));
	if (!res || !one) {
		fprintf(stderr, "rcl-bench: writeback: out of memory\n");
		goto out;
	}
	/* The rounds interleave the modes, so that drift hits them alike. */
	for (k = 0; k < p.rounds; k++) {
		for (m = 0; m < WB_NR_MODES; m++) {
			struct bench_retry rt =
				BENCH_RETRY_INIT(BENCH_TRIES, check_other);

			do {
				if (wb_measure((enum wb_mode)m, &p, one))
					goto out;
			} while (bench_retry_again(&rt, wb_mode_names[m], 20,
						   one->other));
			one->disturbed = rt.disturbed;
			disturbed += one->disturbed;
			fprintf(stderr, "  %-20s round %u: write p99 %.1f us, alloc p95 %.2f us, writes from reclaim %llu of %llu, flusher wakeups %llu\n",
				wb_mode_names[m], k + 1, one->write_us[2],
				one->alloc_us[1],
				(unsigned long long)one->vm.writes_from_reclaim,
				(unsigned long long)(one->vm.writes_from_reclaim +
						     one->vm.writes_flusher),
				(unsigned long long)one->vm.flusher_wakeups);
			if (k == 0)
				res[m] = *one;
			else
				wb_pool(&res[m], one);
		}
	}
	bench_warn_disturbed(disturbed, "measurement", "made");
	if (json)
		wb_print_json(res);
	else
		wb_print_table(res, &p);
	ret = 0;
out:
	free(one);
	free(res);
	return ret;
}

