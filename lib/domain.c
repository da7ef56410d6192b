/* SPDX-License-Identifier: MIT */
/*
 * Memory domains: a budget with watermarks, explicit charging, attach and
 * detach of lruvecs, the counters and the lifecycle, after the kernel's page
 * allocator (mm/page_alloc.c: the watermarks of __setup_per_zone_wmarks(),
 * and the allocation path that wakes kswapd below low and reclaims in the
 * allocating thread below min) and its vmstat counters.  The reclaim passes
 * and the background reclaimer are lib/vmscan.c's, dirty accounting and
 * writeback lib/flusher.c's; struct rcl_domain and what the three files
 * share are in lib/domain_internal.h.
 *
 * Attached lruvecs live in a fixed table of slots, like the shrinker
 * registry's: a reclaim pass pins a slot with an atomic count and reads its
 * lruvec pointer; detach clears the pointer and waits for the count to drain
 * (a Dekker handshake on seq_cst atomics).  So reclaim passes hold no domain
 * lock while callbacks run, and attach/detach work while others reclaim.
 *
 * Locks: the domain mutex serialises attach and detach (the slots' used
 * flags), the watermark writers and the background reclaimer's state; its
 * condition variable carries the reclaimer's wakeups and detach's wait for
 * the pins.  Charging takes no lock: usage moves by CAS, the watermarks are
 * read under a sequence count, and the mutex is taken only to wake the
 * reclaimer, when no wakeup is pending already.  Threads: none of its own;
 * any thread may charge, and the reclaimer (vmscan.c) and the flusher thread
 * (flusher.c) call in here too.
 *
 * Calls between modules:
 * - domain.c -> vmscan.c: a charge below min reclaims directly, below low
 *   (or refused, below high) it wakes the reclaimer
 *   (rcl__domain_direct_reclaim(), rcl__domain_goal_objects(),
 *   rcl__domain_wake_reclaimer()); vmscan.c calls nothing back, only the
 *   inline helpers of lib/domain_internal.h.
 * - domain.c <-> flusher.c: the budget and detach wake the dirty throttle
 *   (rcl__domain_dirty_wake()), and the writer drains pending adds with
 *   rcl__domain_drain_all(); lib/flusher.c explains why that circle stays.
 * - domain.c <-> lruvec.c: the domain moves an lruvec's dirty counts under
 *   its lock and asks it for drains and isolated counts; the lruvec calls
 *   back only rcl__domain_get()/put(), a reference count that keeps its
 *   domain alive for a call made after its lock is dropped.  That hook is
 *   as narrow as it gets, so the circle stays; the rest of the lruvec's
 *   calls into the domain are dirty accounting, lib/flusher.c's.
 */
#include "domain_internal.h"
#include "refusal.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <reclaim/domain.h>
#include <reclaim/flusher.h>
#include <reclaim/scan.h>

/* ------------------------------------------------------------------------- */
/* Counter names (rcl_domain_vmstat_format())                                 */
/* ------------------------------------------------------------------------- */

static const char *const vm_names[NR_VM_ITEMS] = {
	"pgscan_kswapd",  "pgscan_direct",   "pgsteal_kswapd",
	"pgsteal_direct", "pgrefill",	     "pgactivate",
	"pgdeactivate",	  "pgrotated",	     "slabs_scanned",
	"slabs_freed",	  "allocstall",	     "pageoutrun",
	"kswapd_wakeups", "kswapd_failures", "kswapd_hopeless",
	"charge_failures", "charge_overshoots", "nr_dirty_scanned",
	"nr_unqueued_dirty", "nr_writeback_scanned", "nr_immediate",
	"flush_requests", "flush_requests_vmscan", "flush_coalesced",
	"flusher_wakeups", "writeback_throttled",
	"writeback_throttle_timeouts", "dirty_throttled",
	"dirty_throttle_timeouts", "writes_from_reclaim", "writes_flusher",
};

/* ------------------------------------------------------------------------- */
/* Watermarks                                                                 */
/* ------------------------------------------------------------------------- */

__extension__ typedef unsigned __int128 u128;

static void derive_watermarks(uint64_t budget, unsigned scale,
			      struct rcl_watermarks *wm)
{
	uint64_t min = budget / 1024, gap;
	/* In 128 bits: a budget near 2^64 times a large scale factor. */
	u128 g = RCL_MAX((u128)budget * scale / 10000, (u128)(min / 4));

	gap = g > UINT64_MAX ? UINT64_MAX : (uint64_t)g;
	if (!gap)
		gap = 1;
	/* Tested before adding, so that min + 2 x gap cannot wrap. */
	if (gap > (budget - min) / 2) {	/* tiny budgets, huge scale factors */
		wm->min = 0;
		wm->low = budget / 2;
		wm->high = budget;
		return;
	}
	wm->min = min;
	wm->low = min + gap;
	wm->high = min + 2 * gap;
}

/*
 * The three watermarks change together (under d->lock, or before the domain
 * is shared), but the hot paths read them one at a time without a lock.  A
 * sequence count lets rcl_domain_watermarks() return a set that was current
 * at one instant, so that min < low < high holds in every snapshot.
 */
static void store_watermarks(struct rcl_domain *d, const struct rcl_watermarks *wm)
{
	unsigned seq = atomic_load_explicit(&d->wm_seq, memory_order_relaxed);

	atomic_store_explicit(&d->wm_seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&d->wmin, wm->min, memory_order_relaxed);
	atomic_store_explicit(&d->wlow, wm->low, memory_order_relaxed);
	atomic_store_explicit(&d->whigh, wm->high, memory_order_relaxed);
	atomic_store_explicit(&d->wm_seq, seq + 2, memory_order_release);
}

/* ------------------------------------------------------------------------- */
/* The levels of a tree                                                       */
/* ------------------------------------------------------------------------- */

/*
 * A level's part of a charge (page_counter_try_charge()): by CAS, only if
 * usage stays at most @limit (a child's budget; UINT64_MAX for a soft level
 * that gave up reclaiming; less for a stock), so that a strict level never
 * exceeds its budget.
 */
static int level_charge(struct rcl_domain *c, uint64_t amount, uint64_t limit)
{
	unsigned long long u = atomic_load(&c->usage);

	do {
		if (u + amount < u)
			return -EOVERFLOW;
		if (u + amount > limit)
			return -ENOMEM;
	} while (!atomic_compare_exchange_weak(&c->usage, &u, u + amount));
	return 0;
}

/*
 * ... and of an uncharge: usage clamps at 0.  level_unwind() undoes a
 * charge that a level above refused: nothing was freed, so it is no pass's
 * progress.  Returns the usage before.
 */
static unsigned long long level_unwind(struct rcl_domain *c, uint64_t amount)
{
	unsigned long long u = atomic_load(&c->usage);

	while (!atomic_compare_exchange_weak(&c->usage, &u,
					     u > amount ? u - amount : 0))
		;
	return u;
}

/*
 * An uncharge proper: inside a pass of this level, the pass's progress
 * (shrink_partition()).  Returns what it took, at most @amount: all that
 * the levels above may be uncharged, so that each stays the total of its
 * subtree when more is uncharged than was charged.
 */
static uint64_t level_uncharge(struct rcl_domain *c, uint64_t amount)
{
	unsigned long long u = level_unwind(c, amount);

	amount = RCL_MIN(u, (unsigned long long)amount);
	if (rcl__tls_pass_domain == c)
		rcl__tls_pass_uncharged += amount;
	return amount;
}

/* Uncharge @amount from @d up to (not including) @stop, as clamped above. */
static uint64_t path_uncharge(struct rcl_domain *d, struct rcl_domain *stop,
			      uint64_t amount)
{
	for (; d != stop; d = d->parent)
		amount = level_uncharge(d, amount);
	return amount;
}

/* ------------------------------------------------------------------------- */
/* Lifecycle                                                                  */
/* ------------------------------------------------------------------------- */

/* Charge stocks (below). */
static void stock_size(struct rcl_domain *d, uint64_t budget);
static void stocks_forget(struct rcl_domain *d);

/* Link child @d last among its siblings (walks visit children in order). */
static void tree_link(struct rcl_domain *d)
{
	struct rcl_domain **link;

	pthread_rwlock_wrlock(&d->root->tree_lock);
	for (link = &d->parent->children; *link; link = &(*link)->sibling)
		;
	*link = d;
	d->parent->nr_children++;
	/*
	 * Sized again, now that a resize_stocks() of the tree walks it: one
	 * that ran since rcl_domain_new() sized it from an ancestor's stock
	 * may have shrunk that stock (a budget change).
	 */
	stock_size(d, atomic_load(&d->budget));
	pthread_rwlock_unlock(&d->root->tree_lock);
	atomic_fetch_add(&d->root->stock_gen, 1);
}

/*
 * Unlink child @d from its tree.  Once this returns, no reclaim pass of the
 * tree sees it: a pass holds the tree lock for reading from its start to its
 * end, and this takes it for writing.
 */
static void tree_unlink(struct rcl_domain *d)
{
	struct rcl_domain **link;

	pthread_rwlock_wrlock(&d->root->tree_lock);
	for (link = &d->parent->children; *link != d; link = &(*link)->sibling)
		;
	*link = d->sibling;
	d->sibling = NULL;
	d->parent->nr_children--;
	pthread_rwlock_unlock(&d->root->tree_lock);
}

int rcl__domain_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int err;

	/* Monotonic, as rcl_clock_monotonic()'s deadlines are. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = -pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return err;
}

/*
 * fork(): in the child, the slot pins of passes that the parent's threads
 * were in (the background reclaimer inside an evict callback) are held by
 * no thread, and rcl_domain_detach() would wait for them for ever.  The
 * process's domains are on one list, locked across the fork, and the
 * child's handler gives back every pin and detach count, then takes again
 * the pins of the thread that forked, if it forked from a callback of a
 * pass (its pin frames): it is the child's one thread, and its passes put
 * them when they end.  (Only shrink_partition() holds a pin across
 * callbacks, the scan's and the flusher's wakeup of its flush requests;
 * the other pins are taken and put with no call in between.)
 */
static pthread_mutex_t all_domains_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcl_domain *all_domains;
static pthread_once_t all_domains_once = PTHREAD_ONCE_INIT;

static void all_domains_prepare(void)
{
	pthread_mutex_lock(&all_domains_lock);
}

static void all_domains_parent(void)
{
	pthread_mutex_unlock(&all_domains_lock);
}

static void all_domains_child(void)
{
	const struct rcl__pin_frame *f;
	struct rcl_domain *d;
	unsigned i;

	for (d = all_domains; d; d = d->all_next) {
		rcl__domain_flusher_atfork_child(d);
		for (i = 0; i < d->max_lruvecs; i++)
			atomic_store(&d->slots[i].pins, 0);
		atomic_store(&d->nr_detaching, 0);
	}
	for (f = rcl__tls_pin_frames; f; f = f->prev)
		atomic_fetch_add(&f->slot->pins, 1);
	pthread_mutex_unlock(&all_domains_lock);
}

static void all_domains_init(void)
{
	/* Without the handler (ENOMEM), a child's detach may wait as before. */
	(void)pthread_atfork(all_domains_prepare, all_domains_parent,
			     all_domains_child);
}

static void all_domains_add(struct rcl_domain *d)
{
	pthread_once(&all_domains_once, all_domains_init);
	pthread_mutex_lock(&all_domains_lock);
	d->all_prev = NULL;
	d->all_next = all_domains;
	if (all_domains)
		all_domains->all_prev = d;
	all_domains = d;
	pthread_mutex_unlock(&all_domains_lock);
}

static void all_domains_del(struct rcl_domain *d)
{
	pthread_mutex_lock(&all_domains_lock);
	if (d->all_prev)
		d->all_prev->all_next = d->all_next;
	else
		all_domains = d->all_next;
	if (d->all_next)
		d->all_next->all_prev = d->all_prev;
	pthread_mutex_unlock(&all_domains_lock);
}

RCL_API int rcl_domain_new(const struct rcl_domain_config *cfg,
			   struct rcl_domain **out)
{
	const struct rcl_allocator *a = &rcl__std_allocator;
	struct rcl_shrinker_registry_config rc = { 0 };
	struct rcl_watermarks wm;
	struct rcl_domain *d;
	uint64_t budget;
	unsigned max_lv;
	size_t size;
	int err;

	if (!cfg || !out ||
	    cfg->nr_partitions > RCL_SHRINKER_MAX_PARTITIONS ||
	    (cfg->mode != RCL_CHARGE_STRICT && cfg->mode != RCL_CHARGE_SOFT) ||
	    !rcl_shrink_policy_name(cfg->shrink_policy) ||
	    cfg->swappiness > RCL_SWAPPINESS_MAX ||
	    cfg->watermark_scale_factor > 10000 ||
	    cfg->dirty_background_ratio > 100 || cfg->dirty_ratio > 100 ||
	    (cfg->flush_policy != RCL_FLUSH_ALL &&
	     cfg->flush_policy != RCL_FLUSH_PROPORTIONAL) ||
	    (cfg->flusher && !cfg->flusher->wakeup) ||
	    cfg->max_lruvecs > RCL_LRUVEC_MAX_IDS)
		return -EINVAL;
	if (cfg->flags & ~(RCL_DOMAIN_NONPROPORTIONAL | RCL_DOMAIN_RECLAIM_WRITES |
			   RCL_DOMAIN_RECURSIVE_PROT))
		return -EINVAL;
	if (cfg->parent) {
		const struct rcl_domain *pa = cfg->parent;

		if (pa->depth >= RCL_DOMAIN_MAX_DEPTH)
			return RCL__REFUSE(-EINVAL, "the tree would be deeper than RCL_DOMAIN_MAX_DEPTH");
		if (cfg->charge_stock)
			return RCL__REFUSE(-EINVAL, "a child domain has no charge stocks: its root's serve the tree");
		if (cfg->flags & RCL_DOMAIN_RECURSIVE_PROT)
			return RCL__REFUSE(-EINVAL, "RCL_DOMAIN_RECURSIVE_PROT is the tree's option: set it on the root");
		if (cfg->nr_partitions && cfg->nr_partitions != pa->nr_partitions)
			return RCL__REFUSE(-EINVAL, "a child must have its parent's partitions");
		if (cfg->clock && cfg->clock != pa->clock)
			return RCL__REFUSE(-EINVAL, "a child must have its parent's clock");
		/*
		 * A pass holds its tree's lock for reading: creating a child
		 * of any tree from its callbacks could wait for a pass that
		 * waits for this one.
		 */
		if (in_any_pass())
			return RCL__REFUSE(-EDEADLK, "called from a callback of a reclaim pass, which holds its tree");
	} else if (cfg->protect_low || cfg->protect_min) {
		return RCL__REFUSE(-EINVAL, "a root is never protected from its own pressure: protection needs a parent");
	} else if (!cfg->budget) {
		return -EINVAL;
	}
	if (cfg->allocator) {
		if (!cfg->allocator->alloc || !cfg->allocator->free)
			return -EINVAL;
		a = cfg->allocator;
	}
	max_lv = cfg->max_lruvecs ? cfg->max_lruvecs : 256;
	size = sizeof(*d) + (size_t)max_lv * sizeof(d->slots[0]);
	d = rcl__alloc(a, size);
	if (!d)
		return -ENOMEM;
	memset(d, 0, size);
	d->alloc = *a;
	budget = cfg->budget ? cfg->budget : UINT64_MAX;
	if (cfg->parent) {
		d->parent = cfg->parent;
		d->root = cfg->parent->root;
		d->depth = cfg->parent->depth + 1;
		d->clock = cfg->parent->clock;
		d->nr_partitions = cfg->parent->nr_partitions;
		d->recursive_prot = d->root->recursive_prot;
	} else {
		d->root = d;
		d->depth = 1;
		d->clock = cfg->clock ? cfg->clock : rcl_clock_monotonic();
		d->nr_partitions = cfg->nr_partitions ? cfg->nr_partitions : 1;
		d->recursive_prot = cfg->flags & RCL_DOMAIN_RECURSIVE_PROT;
	}
	atomic_init(&d->limit_high,
		    cfg->limit_high && cfg->limit_high != UINT64_MAX
			    ? cfg->limit_high
			    : UINT64_MAX);
	atomic_init(&d->protect_low, cfg->protect_low);
	atomic_init(&d->protect_min, cfg->protect_min);
	d->max_lruvecs = max_lv;
	d->mode = cfg->mode;
	d->flags = cfg->flags;
	d->scale = cfg->watermark_scale_factor ? cfg->watermark_scale_factor
					       : RCL_WATERMARK_SCALE_DEFAULT;
	atomic_init(&d->swappiness,
		    cfg->swappiness ? cfg->swappiness : RCL_SWAPPINESS_DEFAULT);
	atomic_init(&d->budget, budget);
	derive_watermarks(budget, d->scale, &wm);
	store_watermarks(d, &wm);
	/* Stocks are the tree's: configured on its root. */
	d->stock_cfg = d->parent ? d->root->stock_cfg : cfg->charge_stock;
	stock_size(d, budget);
	d->bg_ratio = cfg->dirty_background_ratio ? cfg->dirty_background_ratio
						  : 10;
	d->hard_ratio = cfg->dirty_ratio ? cfg->dirty_ratio : 20;
	/* As the kernel's domain_dirty_limits(): background below hard. */
	if (d->bg_ratio >= d->hard_ratio)
		d->bg_ratio = d->hard_ratio / 2;
	d->dirty_timeout = cfg->dirty_timeout_ns ? cfg->dirty_timeout_ns
						 : 100 * RCL_NSEC_PER_MSEC;
	d->flush_policy = cfg->flush_policy;
	d->fops = cfg->flusher;
	d->fpriv = cfg->flusher_priv;

	rc.nr_partitions = d->nr_partitions;
	rc.policy = cfg->shrink_policy;
	rc.allocator = a;
	err = rcl_shrinker_registry_new(&rc, &d->reg);
	if (err)
		goto fail;
	err = -pthread_mutex_init(&d->lock, NULL);
	if (err)
		goto fail_reg;
	d->cond_pid = d->fcond_pid = d->wbcond_pid = getpid();
	err = rcl__domain_cond_init(&d->cond);
	if (!err) {
		err = rcl__domain_cond_init(&d->wbcond);
		if (err)
			pthread_cond_destroy(&d->cond);
	}
	if (!err) {
		err = rcl__domain_cond_init(&d->fcond);
		if (err) {
			pthread_cond_destroy(&d->wbcond);
			pthread_cond_destroy(&d->cond);
		}
	}
	if (err)
		goto fail_lock;
	err = -pthread_mutex_init(&d->flock, NULL);
	if (!err) {
		err = -pthread_mutex_init(&d->wblock, NULL);
		if (err)
			pthread_mutex_destroy(&d->flock);
	}
	if (!err) {
		err = -pthread_rwlock_init(&d->tree_lock, NULL);
		if (err) {
			pthread_mutex_destroy(&d->wblock);
			pthread_mutex_destroy(&d->flock);
		}
	}
	if (err) {
		pthread_cond_destroy(&d->fcond);
		pthread_cond_destroy(&d->wbcond);
		pthread_cond_destroy(&d->cond);
		goto fail_lock;
	}
	/* Only now: a failure above must not leave the root counting it. */
	if (atomic_load(&d->limit_high) != UINT64_MAX)
		atomic_fetch_add(&d->root->nr_high, 1);
	if (d->parent)
		tree_link(d);
	all_domains_add(d);
	*out = d;
	return 0;

fail_lock:
	pthread_mutex_destroy(&d->lock);
fail_reg:
	rcl_shrinker_registry_free(d->reg);
fail:
	a->free(a->ctx, d);
	return err;
}

RCL_API int rcl_domain_free(struct rcl_domain *d)
{
	unsigned i, high;
	struct rcl_allocator a;
	int err;

	if (!d)
		return 0;
	/*
	 * Its own threads cannot join themselves, and a write callback
	 * cannot free the domain its batch is using (checked before
	 * anything: a failing call changes nothing).
	 */
	if (rcl__tls_reclaimer_of == d || rcl__tls_flusher_of == d ||
	    rcl__tls_writing_of == d)
		return RCL__REFUSE(-EDEADLK, "called from the domain's own reclaimer or flusher thread, or from a write callback of its write-back");
	if (in_tree_pass(d) || (d->parent && in_any_pass()))
		return RCL__REFUSE(-EDEADLK, "called from a callback of a reclaim pass, which holds its tree");
	pthread_rwlock_rdlock(&d->root->tree_lock);
	err = d->nr_children ? -EBUSY : 0;
	pthread_rwlock_unlock(&d->root->tree_lock);
	if (err)
		return RCL__REFUSE(-EBUSY, "the domain has children (free them first)");
	high = atomic_load(&d->high);
	for (i = 0; i < high; i++)
		if (atomic_load(&d->slots[i].lv))
			return RCL__REFUSE(-EBUSY, "lruvecs are still attached (rcl_domain_detach() them first)");
	if (atomic_load(&d->nr_monitors))
		return RCL__REFUSE(-EBUSY, "a pressure monitor holds it (rcl_pressure_free() it first)");
	/* Check before stopping anything: a failing call changes nothing. */
	if (rcl__shrinker_registry_count(d->reg))
		return RCL__REFUSE(-EBUSY, "shrinkers remain in its registry (rcl_shrinker_free() them first)");
	err = rcl_domain_reclaimer_stop(d);
	if (!err)
		err = rcl_domain_flusher_stop(d);
	if (err)
		return err;
	/*
	 * Out of the tree before its registry goes: a pass of an ancestor
	 * (another thread's charge, the root's reclaimer) may be sweeping the
	 * tree and would shrink a freed registry.
	 */
	if (d->parent)
		tree_unlink(d);
	err = rcl_shrinker_registry_free(d->reg);
	if (err) {
		if (d->parent)
			tree_link(d);	/* a failing call changes nothing */
		return err;
	}
	/*
	 * A call that found the domain through an lruvec before it was
	 * detached may still be using it (set_dirty()'s flush request).  No
	 * new one can start: nothing is attached.  Those are short (a flush
	 * request and its non-blocking wakeup), so yielding until they are
	 * done is enough.
	 */
	while (atomic_load(&d->users))
		sched_yield();
	/* No thread-local stock may point at the domain once it is gone. */
	stocks_forget(d);
	if (d->parent) {
		uint64_t left;

		/*
		 * What is still charged to it leaves the ancestors too, so
		 * that each level stays the sum of what was charged through
		 * it (the kernel reparents it; nothing here can own it).
		 */
		left = atomic_load(&d->usage);
		path_uncharge(d->parent, NULL, left);
		/* Its counts stay in its ancestors' subtree sums. */
		for (i = 0; i < NR_EV_ITEMS; i++)
			atomic_fetch_add(&d->parent->ev_gone[i],
					 atomic_load(&d->ev[i]) +
						 atomic_load(&d->ev_gone[i]));
		for (i = 0; i < NR_VM_ITEMS; i++)
			atomic_fetch_add(&d->parent->vm_gone[i],
					 atomic_load(&d->vm[i]) +
						 atomic_load(&d->vm_gone[i]));
	}
	if (d->parent && atomic_load(&d->limit_high) != UINT64_MAX)
		atomic_fetch_sub(&d->root->nr_high, 1);
	all_domains_del(d);
	a = d->alloc;
	pthread_rwlock_destroy(&d->tree_lock);
	pthread_mutex_destroy(&d->wblock);
	pthread_mutex_destroy(&d->flock);
	/*
	 * In the child of a fork(), a condition that no thread of the child
	 * has used still holds the places of the parent's waiting threads
	 * (reclaimer_cond_after_fork_locked()), and glibc's
	 * pthread_cond_destroy() would wait for them for ever.  The
	 * conditions hold no resource but their memory, freed below.
	 */
	if (d->fcond_pid == getpid())
		pthread_cond_destroy(&d->fcond);
	if (d->wbcond_pid == getpid())
		pthread_cond_destroy(&d->wbcond);
	if (d->cond_pid == getpid())
		pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	a.free(a.ctx, d);
	return 0;
}

RCL_API struct rcl_shrinker_registry *rcl_domain_registry(struct rcl_domain *d)
{
	return d ? d->reg : NULL;
}

void rcl__domain_get(struct rcl_domain *d)
{
	atomic_fetch_add(&d->users, 1);
}

void rcl__domain_put(struct rcl_domain *d)
{
	/* The last access: rcl_domain_free() may free @d right after it. */
	atomic_fetch_sub(&d->users, 1);
}

/* ------------------------------------------------------------------------- */
/* Attach and detach                                                          */
/* ------------------------------------------------------------------------- */

/*
 * Move an lruvec's dirty counts into (or out of) the domain's sums, and
 * point it at the domain (or not), under its lock: the lruvec's own state
 * changes account under that lock too, so the sums stay exact.
 */
/*
 * Move @lv's dirty counts into @d (@in) or out of it, and set or clear the
 * lruvec's domain, under its lock.  -EBUSY (nothing done) when attaching an
 * lruvec that another domain holds already.
 */
static int transfer_dirty(struct rcl_domain *d, struct rcl_lruvec *lv,
			  bool in)
{
	unsigned i;

	rcl__lruvec_lock(lv);
	if (in && atomic_load(&lv->__domain)) {
		rcl__lruvec_unlock(lv);
		return rcl__refuse("rcl_domain_attach", -EBUSY,
				   "the lruvec is attached to another domain");
	}
	for (i = 0; i < 4; i++) {
		uint64_t v = atomic_load(&lv->__dirty[i]);

		if (in)
			atomic_fetch_add(&d->dirty[i], v);
		else
			atomic_fetch_sub(&d->dirty[i], v);
	}
	atomic_store(&lv->__domain, in ? (void *)d : NULL);
	rcl__lruvec_unlock(lv);
	return 0;
}

RCL_API int rcl_domain_attach(struct rcl_domain *d, struct rcl_lruvec *lv,
			      unsigned partition)
{
	unsigned i, high, free_slot = UINT32_MAX;
	int err = 0;

	if (!d || !lruvec_live(lv) || !lruvec_can_evict(lv) ||
	    partition >= d->nr_partitions)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	high = atomic_load(&d->high);
	for (i = 0; i < high; i++) {
		if (d->slots[i].used) {
			if (atomic_load(&d->slots[i].lv) == lv) {
				err = RCL__REFUSE(-EBUSY, "the lruvec is attached to this domain already");
				goto out;
			}
		} else if (free_slot == UINT32_MAX) {
			free_slot = i;
		}
	}
	if (free_slot == UINT32_MAX) {
		if (high == d->max_lruvecs) {
			err = -ENOSPC;
			goto out;
		}
		free_slot = high;
	}
	/* Attached to another domain: one domain charges an lruvec. */
	err = transfer_dirty(d, lv, true);
	if (err)
		goto out;
	if (free_slot == high)
		atomic_store(&d->high, high + 1);
	d->slots[free_slot].used = true;
	d->slots[free_slot].partition = partition;
	atomic_store(&d->slots[free_slot].lv, lv);
	revive_locked(d);
out:
	pthread_mutex_unlock(&d->lock);
	if (!err && d->root != d) {
		/* The tree's reclaimer is the root's: revive that one. */
		pthread_mutex_lock(&d->root->lock);
		revive_locked(d->root);
		pthread_mutex_unlock(&d->root->lock);
	}
	return err;
}

RCL_API int rcl_domain_detach(struct rcl_domain *d, struct rcl_lruvec *lv)
{
	unsigned i, high;
	int err = -ENOENT;

	if (!d || !lv)
		return -EINVAL;
	/*
	 * From any callback of this domain's reclaim: the pass pins lruvecs,
	 * and two callbacks detaching each other's lruvec would wait for each
	 * other.
	 */
	if (rcl__tls_pass_domain == d)
		return RCL__REFUSE(-EDEADLK, "called from a callback of this domain's reclaim pass, which pins its lruvecs");
	pthread_mutex_lock(&d->lock);
	high = atomic_load(&d->high);
	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];

		if (!s->used || atomic_load(&s->lv) != lv)
			continue;
		/* Dekker with slot_put(): clear, then wait for the pins. */
		atomic_fetch_add(&d->nr_detaching, 1);
		atomic_store(&s->lv, NULL);
		if (atomic_load(&s->pins) && rcl__tls_pass_domain) {
			/*
			 * A callback of another domain's pass: the pass inside
			 * @lv may be in a callback that waits for ours (each
			 * detaching the other's lruvec).  Do not wait there;
			 * put the slot back as it was.
			 */
			atomic_store(&s->lv, lv);
			atomic_fetch_sub(&d->nr_detaching, 1);
			err = RCL__REFUSE(-EDEADLK, "called from a callback of another domain's reclaim pass while a pass is inside the lruvec (it would wait there)");
			break;
		}
		reclaimer_cond_after_fork_locked(d);
		while (atomic_load(&s->pins))
			rcl__clock_wait(d->clock, &d->cond, &d->lock,
				        RCL_CLOCK_FOREVER);
		atomic_fetch_sub(&d->nr_detaching, 1);
		(void)transfer_dirty(d, lv, false);
		s->used = false;
		/* Its dirty weight is no longer ours, nor its writeback. */
		rcl__domain_dirty_wake(d);
		rcl__domain_throttle_wake(d);
		err = 0;
		break;
	}
	pthread_mutex_unlock(&d->lock);
	return err;
}

/* ------------------------------------------------------------------------- */
/* Charge stocks                                                              */
/* ------------------------------------------------------------------------- */

/*
 * A thread's charge stock (memcg's per-CPU memcg_stock_pcp): an amount
 * already charged to one domain's usage, from which the thread serves its
 * charges and into which it puts its uncharges, so that most of them write
 * only the thread's own cache line.  One stock per thread, for one domain
 * at a time (charging another domain hands the stock back first).
 *
 * The owner moves @nr by CAS without the lock (consume_stock(), and the
 * refund of an uncharge); everything else happens under @lock: the owner
 * attaching the stock to a domain (and giving back the old one), a drainer
 * taking it, thread exit, rcl_domain_free() and fork.  A drainer detaches
 * the stock: it exchanges @nr for STOCK_DEAD, gives back what was there,
 * and clears @dom.  The owner's lock-free paths read @dom without the lock,
 * possibly stale, but their CAS is on @nr, and no CAS succeeds on
 * STOCK_DEAD: so nothing is ever added to, or served from, a stock that a
 * drainer took.  Only the owner attaches a stock again.
 *
 * Every stock is on a registry, so that drainers find them.  Lock order:
 * registry > stock; with a stock's lock held, the library only moves a
 * domain's usage (stock_take(), stock_return()).
 *
 * A thread's exit gives its stock back from a pthread key destructor.  It
 * does not run for a stock first made from another key's destructor in the
 * last round of them (a value set then is never destroyed), so the owner
 * also holds @owner, a robust mutex, from the stock's birth to its
 * destructor: a drain that finds it owner-dead gives the dead thread's
 * stock back and frees it (stock_reap_dead()), as lib/batch.c does for
 * its batches.  @owner is outside the lock order: it is only trylocked.
 */
#define STOCK_DEAD (UINT64_C(1) << 63)
#define STOCK_LINE 64u

/*
 * Charges a thread makes while its stock cannot be allocated before it
 * tries again (each of them is unstocked, and exact).
 */
#define STOCK_RETRY_AFTER 256u

struct charge_stock {
	atomic_ullong nr;			/* the owner's line */
	_Atomic(struct rcl_domain *) dom;
	pthread_mutex_t lock;
	struct charge_stock *next, *prev;	/* registry, its lock */
	void *raw;				/* what rcl__calloc() returned */
	struct rcl__owner owner;		/* see above */
};

static pthread_mutex_t stock_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct charge_stock stock_head = {
	.next = &stock_head,
	.prev = &stock_head,
};
static pthread_once_t stock_once = PTHREAD_ONCE_INIT;
static pthread_key_t stock_key;
static bool stock_key_ok;

static RCL__TLS struct charge_stock *tls_stock;
static RCL__TLS unsigned tls_stock_retry;
/*
 * Set once the thread's stock went back at its exit (stock_destructor()):
 * a charge from a later key destructor of the application is unstocked, for
 * a stock made then could outlive the destructor rounds, held by no thread.
 */
static RCL__TLS bool tls_stock_gone;

/*
 * The one place where a stock's memory is taken from the counters: @amount,
 * from @d and each of its ancestors, only if that leaves every level room:
 * a child level at least 1/RCL_CHARGE_STOCKS_SHARE of its budget and of
 * its limit_high below them, the root at least its high watermark below its
 * budget (a stock never takes memory a charge or reclaim would miss).
 * Nothing is taken if any level refuses.
 */
static bool stock_take_levels(struct rcl_domain *d, uint64_t amount)
{
	struct rcl_domain *c, *u;
	uint64_t limit, high;

	for (c = d; c->parent; c = c->parent) {
		limit = RCL_MIN((uint64_t)atomic_load(&c->budget),
				(uint64_t)atomic_load(&c->limit_high));
		if (level_charge(c, amount,
				 limit - limit / RCL_CHARGE_STOCKS_SHARE))
			goto undo;
	}
	limit = atomic_load(&c->budget);
	high = atomic_load(&c->whigh);
	if (high < limit && !level_charge(c, amount, limit - high))
		return true;
undo:
	for (u = d; u != c; u = u->parent)
		level_unwind(u, amount);
	return false;
}

/*
 * A charge that goes unstocked decides (drain, reclaim, commit) on the
 * usage it reads; a stock taken by another thread after that read would
 * change its outcome from the one it has without stocks (a strict charge
 * that fits failing, a reclaim or an overshoot for nothing).  So, tree-wide
 * on the root: the charge raises nr_tight, then waits for the takes already
 * in flight; a take announces itself in nr_taking, then refuses if nr_tight
 * is raised.  Sequentially consistent both ways (Dekker): either the take
 * sees nr_tight, or the charge, waiting for nr_taking, sees the take's
 * usage.  Takes are short (a few CAS, no lock the charge holds): the wait
 * spins, then yields, and past TIGHT_WAIT_MAX rounds waits on the stocks'
 * locks (tight_wait_takes()) rather than go on with a take in flight.
 */
#define TIGHT_WAIT_SPINS 64u
#define TIGHT_WAIT_MAX 4096u

/*
 * The count is tagged with the fork generation (bumped in a fork's child,
 * stock_atfork_child()): a window that another thread of the parent had
 * open when the process forked has no thread in the child to close it, and
 * would refuse every stock there for ever.  A count of an older generation
 * is 0.
 */
static atomic_uint tight_gen;

/*
 * A take in flight still, after the bounded wait (its thread descheduled
 * in the middle of it): a taker holds its stock's lock across the take
 * (stock_refill()), so taking every stock's lock in turn waits out every
 * take that began before the window opened; those that begin after it see
 * it and refuse.  Lock order: the registry, then a stock, as stocks_forget().
 */
static void tight_wait_takes(void)
{
	struct charge_stock *s;

	pthread_mutex_lock(&stock_registry_lock);
	for (s = stock_head.next; s != &stock_head; s = s->next) {
		pthread_mutex_lock(&s->lock);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&stock_registry_lock);
}

static uint32_t tight_begin(struct rcl_domain *r)
{
	uint32_t g = atomic_load(&tight_gen);
	unsigned long long w = atomic_load(&r->tight), nw;
	unsigned i;

	do
		nw = (w >> 32) == g ? w + 1 : ((unsigned long long)g << 32) | 1;
	while (!atomic_compare_exchange_weak(&r->tight, &w, nw));
	for (i = 0; atomic_load(&r->nr_taking); i++) {
		if (i < TIGHT_WAIT_SPINS) {
			rcl__cpu_relax();
		} else if (i < TIGHT_WAIT_MAX) {
			sched_yield();
		} else {
			tight_wait_takes();
			break;
		}
	}
	return g;
}

static void tight_end(struct rcl_domain *r, uint32_t g)
{
	unsigned long long w = atomic_load(&r->tight);

	do {
		if ((w >> 32) != g || !(w & 0xffffffffu))
			return;		/* opened before a fork: void in the child */
	} while (!atomic_compare_exchange_weak(&r->tight, &w, w - 1));
}

static bool tight_now(struct rcl_domain *r)
{
	unsigned long long w = atomic_load(&r->tight);

	return (w >> 32) == atomic_load(&tight_gen) && (w & 0xffffffffu);
}

static bool stock_take(struct rcl_domain *d, uint64_t amount)
{
	struct rcl_domain *r = d->root;
	bool ok = false;

	atomic_fetch_add(&r->nr_taking, 1);
	if (!tight_now(r))
		ok = stock_take_levels(d, amount);
	atomic_fetch_sub(&r->nr_taking, 1);
	return ok;
}

/*
 * ... and the one place where it goes back, to every level: clamps at 0.
 * Memory that no callback freed, so no pass's progress (level_unwind()),
 * as the kernel's drain_all_stock() is not reclaim: a drain from inside a
 * pass (a callback's charge, or its rcl_domain_drain_stocks()) would else
 * count another thread's stock as what the pass's shrinkers freed.
 */
static void stock_return(struct rcl_domain *d, uint64_t amount)
{
	for (; d && amount; d = d->parent)
		amount = RCL_MIN(level_unwind(d, amount),
				 (unsigned long long)amount);
}

/*
 * Count a stock attached to @d at every level, each bounded by its
 * stock_max; false (nothing counted) if one is at its bound.
 */
static bool stock_count_up(struct rcl_domain *d)
{
	struct rcl_domain *c, *u;

	for (c = d; c; c = c->parent) {
		unsigned n = atomic_load(&c->nr_stocks);

		do {
			if (n >= atomic_load(&c->stock_max))
				goto undo;
		} while (!atomic_compare_exchange_weak(&c->nr_stocks, &n,
						       n + 1));
	}
	return true;
undo:
	for (u = d; u != c; u = u->parent)
		atomic_fetch_sub(&u->nr_stocks, 1);
	return false;
}

static void stock_count_down(struct rcl_domain *d)
{
	for (; d; d = d->parent)
		atomic_fetch_sub(&d->nr_stocks, 1);
}

/* Detach @s (its lock held) from its domain, giving back what it holds. */
static void stock_detach_locked(struct charge_stock *s)
{
	struct rcl_domain *d = atomic_load(&s->dom);
	uint64_t nr;

	if (!d)
		return;
	nr = atomic_exchange(&s->nr, STOCK_DEAD);
	if (!(nr & STOCK_DEAD))
		stock_return(d, nr);
	atomic_store(&s->dom, NULL);
	stock_count_down(d);
}

static void stock_unlink(struct charge_stock *s)
{
	s->prev->next = s->next;
	s->next->prev = s->prev;
}

/*
 * Free @s, letting go of @s->owner first: a held robust mutex is on its
 * holder's robust list, which the kernel walks at that thread's exit.  (In
 * a fork child the unlock of another thread's stock fails, EPERM: its
 * owner is a thread of the parent, on no list of the child's.)
 */
static void stock_release(struct charge_stock *s)
{
	rcl__owner_drop(&s->owner);
	pthread_mutex_destroy(&s->lock);
	rcl__free(s->raw);
}

/*
 * With the registry lock held: if @s's thread ended without its key
 * destructor, give its stock back, unlink it and free it.  True if it did.
 */
static bool stock_reap_dead(struct charge_stock *s)
{
	if (!rcl__owner_dead(&s->owner))
		return false;	/* its owner lives, or nothing is known */
	pthread_mutex_lock(&s->lock);
	stock_detach_locked(s);
	stock_unlink(s);
	pthread_mutex_unlock(&s->lock);
	stock_release(s);
	return true;
}

/* Thread exit: give the stock back (under the registry lock: see free). */
static void stock_destructor(void *arg)
{
	struct charge_stock *s = arg;

	pthread_mutex_lock(&stock_registry_lock);
	pthread_mutex_lock(&s->lock);
	stock_detach_locked(s);
	stock_unlink(s);
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&stock_registry_lock);
	if (tls_stock == s)
		tls_stock = NULL;
	tls_stock_gone = true;
	stock_release(s);
}

/*
 * fork(): the child has only the thread that forked.  The registry and
 * every stock are locked across the fork, so no lock is held in the child
 * by a thread that is not there; in the child, the stocks of those threads
 * go back to their domains (their memory is charged to nothing the child
 * has) and are freed.
 */
static void stock_atfork_prepare(void)
{
	struct charge_stock *s;

	pthread_mutex_lock(&stock_registry_lock);
	for (s = stock_head.next; s != &stock_head; s = s->next)
		pthread_mutex_lock(&s->lock);
}

static void stock_atfork_parent(void)
{
	struct charge_stock *s;

	for (s = stock_head.next; s != &stock_head; s = s->next)
		pthread_mutex_unlock(&s->lock);
	pthread_mutex_unlock(&stock_registry_lock);
}

static void stock_atfork_child(void)
{
	struct charge_stock *s, *next;

	/* Windows other threads had open are void here (tight_begin()). */
	atomic_fetch_add(&tight_gen, 1);

	for (s = stock_head.next; s != &stock_head; s = next) {
		next = s->next;
		if (s == tls_stock) {
			pthread_mutex_unlock(&s->lock);
			continue;
		}
		stock_detach_locked(s);
		stock_unlink(s);
		pthread_mutex_unlock(&s->lock);
		stock_release(s);
	}
	pthread_mutex_unlock(&stock_registry_lock);
}

static void stock_make_key(void)
{
	stock_key_ok = pthread_key_create(&stock_key, stock_destructor) == 0;
	if (stock_key_ok &&
	    pthread_atfork(stock_atfork_prepare, stock_atfork_parent,
			   stock_atfork_child) != 0) {
		/* Without the fork handlers, no stocks: still correct. */
		pthread_key_delete(stock_key);
		stock_key_ok = false;
	}
}

/*
 * The calling thread's stock, created on first use; NULL if it cannot be
 * (then the charge is made unstocked, and exact).
 */
static struct charge_stock *stock_local(void)
{
	struct charge_stock *s = tls_stock;
	void *raw;

	if (likely(s))
		return s;
	if (tls_stock_gone)
		return NULL;
	if (tls_stock_retry) {
		tls_stock_retry--;
		return NULL;
	}
	pthread_once(&stock_once, stock_make_key);
	if (!stock_key_ok)
		return NULL;
	/* A line of its own: the owner writes it on every stocked charge. */
	raw = rcl__calloc(sizeof(*s) + STOCK_LINE);
	if (!raw)
		goto fail;
	s = (struct charge_stock *)(((uintptr_t)raw + STOCK_LINE - 1) &
				    ~(uintptr_t)(STOCK_LINE - 1));
	s->raw = raw;
	atomic_init(&s->nr, STOCK_DEAD);
	atomic_init(&s->dom, NULL);
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		rcl__free(raw);
		goto fail;
	}
	rcl__owner_take(&s->owner);
	if (pthread_setspecific(stock_key, s) != 0) {
		stock_release(s);
		goto fail;
	}
	pthread_mutex_lock(&stock_registry_lock);
	s->next = stock_head.next;
	s->prev = &stock_head;
	stock_head.next->prev = s;
	stock_head.next = s;
	pthread_mutex_unlock(&stock_registry_lock);
	tls_stock = s;
	return s;
fail:
	tls_stock_retry = STOCK_RETRY_AFTER;
	return NULL;
}

/* From the budget: the size of a stock and how many threads may hold one. */
static void stock_size(struct rcl_domain *d, uint64_t budget)
{
	uint64_t cap = RCL_MIN(d->stock_cfg, budget / RCL_CHARGE_STOCK_SHARE);
	uint64_t max;

	/* No larger than a stock of any ancestor: their bounds hold too. */
	if (d->parent)
		cap = RCL_MIN(cap, (uint64_t)atomic_load(&d->parent->stock_cap));
	max = cap ? budget / RCL_CHARGE_STOCKS_SHARE / cap : 0;

	atomic_store(&d->stock_cap, cap);
	atomic_store(&d->stock_max, (unsigned)RCL_MIN(max, UINT32_MAX));
}

/* The fast path: serve @amount from the thread's stock of @d. */
static inline bool stock_consume(struct rcl_domain *d, uint64_t amount)
{
	struct charge_stock *s = tls_stock;
	unsigned long long nr;

	if (!s || atomic_load_explicit(&s->dom, memory_order_relaxed) != d)
		return false;
	nr = atomic_load_explicit(&s->nr, memory_order_relaxed);
	while (!(nr & STOCK_DEAD) && nr >= amount)
		if (atomic_compare_exchange_weak_explicit(
			    &s->nr, &nr, nr - amount, memory_order_relaxed,
			    memory_order_relaxed))
			return true;
	return false;
}

/*
 * The slow path of a stocked charge (refill_stock()): attach the thread's
 * stock to @d if it is not, and take @amount plus what fills the stock from
 * the usage.  False (nothing charged) if that does not fit above the high
 * watermark, no stock can be had, or @amount is as large as a stock: then
 * the charge is made unstocked.
 */
static bool stock_refill(struct rcl_domain *d, uint64_t amount)
{
	uint64_t cap = atomic_load(&d->stock_cap), nr;
	struct charge_stock *s;
	struct rcl_domain *old;
	bool ok = false;

	if (amount >= cap)
		return false;
	s = stock_local();
	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	/*
	 * Again under the lock: a set_budget() that shrank the stocks since
	 * the read above drains every stock after the resize, taking this
	 * lock, so a fill to the old size would outlive that drain and hold
	 * more than the documented bound.
	 */
	cap = atomic_load(&d->stock_cap);
	if (amount >= cap)
		goto out;
	old = atomic_load(&s->dom);
	if (old != d) {
		if (!stock_count_up(d))
			goto out;
		stock_detach_locked(s);
		atomic_store(&s->dom, d);
		atomic_store(&s->nr, 0);
		/*
		 * And again once counted: a set_budget() that resized between
		 * the read above and stock_count_up() saw no stock of ours
		 * (nr_stocks, rcl__domain_drain_stocks()) and drained nothing
		 * here.  Both sides are sequentially consistent: either its
		 * drain counts this stock (and waits on our lock) or this read
		 * sees its size.
		 */
		cap = atomic_load(&d->stock_cap);
		if (amount >= cap)
			goto out;
	}
	/* Only this thread moves nr while it holds the lock. */
	nr = atomic_load(&s->nr);
	if (nr >= amount) {
		atomic_store(&s->nr, nr - amount);
		ok = true;
	} else if (nr <= cap && stock_take(d, amount + (cap - nr))) {
		atomic_store(&s->nr, cap);
		ok = true;
	}
out:
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/*
 * The fast path of an uncharge: put @amount into the thread's stock of @d.
 * Past the stock's size, it keeps half and gives the rest back in one go
 * (memcg drains a stock that grows past its batch).
 */
static inline bool stock_refund(struct rcl_domain *d, uint64_t amount)
{
	struct charge_stock *s = tls_stock;
	unsigned long long nr;
	uint64_t cap;

	if (!s || atomic_load_explicit(&s->dom, memory_order_relaxed) != d)
		return false;
	cap = atomic_load_explicit(&d->stock_cap, memory_order_relaxed);
	nr = atomic_load_explicit(&s->nr, memory_order_relaxed);
	while (!(nr & STOCK_DEAD)) {
		uint64_t keep, back;

		if (nr <= cap && amount <= cap - nr) {
			keep = nr + amount;
			back = 0;
		} else {
			/* nr + amount - keep, saturating (over-uncharges). */
			keep = cap / 2;
			back = amount > UINT64_MAX - nr ? UINT64_MAX
							 : nr + amount;
			back -= keep;
		}
		if (atomic_compare_exchange_weak_explicit(
			    &s->nr, &nr, keep, memory_order_relaxed,
			    memory_order_relaxed)) {
			stock_return(d, back);
			return true;
		}
	}
	return false;
}

/*
 * Detach every stock of @d and of its subtree (they hold @d's memory too).
 * Unconditional, for rcl_domain_free(): under
 * the registry lock, a stock that its exiting thread gives back is seen
 * either way.  A stock whose thread ended without its destructor, of any
 * domain or none, goes back and is freed on the way.
 */
static void stocks_forget(struct rcl_domain *d)
{
	struct charge_stock *s, *next;

	pthread_mutex_lock(&stock_registry_lock);
	for (s = stock_head.next; s != &stock_head; s = next) {
		next = s->next;
		if (stock_reap_dead(s))
			continue;
		pthread_mutex_lock(&s->lock);
		if (in_subtree(d, atomic_load(&s->dom)))
			stock_detach_locked(s);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&stock_registry_lock);
}

void rcl__domain_drain_stocks(struct rcl_domain *d)
{
	/* None attached: a stock attached from now on found headroom. */
	if (atomic_load(&d->nr_stocks))
		stocks_forget(d);
}

unsigned rcl__domain_stock_count(void)
{
	struct charge_stock *s;
	unsigned n = 0;

	pthread_mutex_lock(&stock_registry_lock);
	for (s = stock_head.next; s != &stock_head; s = s->next)
		n++;
	pthread_mutex_unlock(&stock_registry_lock);
	return n;
}

RCL_API int rcl_domain_drain_stocks(struct rcl_domain *d)
{
	if (!d)
		return -EINVAL;
	rcl__domain_drain_stocks(d);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Charging                                                                   */
/* ------------------------------------------------------------------------- */

/*
 * Direct reclaim attempts per charge, each a full priority sweep.  After
 * the first sweep that frees nothing, every thread's pending adds are
 * drained to the lists and the caller tries again; after later ones, it
 * tries again only while other reclaimers hold objects isolated (they may
 * free them, or put them back), yielding first, like the kernel's
 * throttling of direct reclaimers on too many isolated pages.  At most
 * CHARGE_RECLAIM_TRIES sweeps.
 */
#define CHARGE_RECLAIM_TRIES 16

/*
 * Bring every thread's pending adds to the lists of every attached lruvec:
 * in a small cache, a few threads' batches (up to 31 objects each) can hold
 * most of what could be reclaimed.  The kernel drains its per-CPU lists the
 * same way when direct reclaim fails (drain_all_pages()).
 */
void rcl__domain_drain_all(struct rcl_domain *d)
{
	unsigned i, high = atomic_load(&d->high);

	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_lruvec *lv = slot_get(s);

		if (lv)
			rcl_lruvec_drain(lv);
		slot_put(d, s);
	}
}

/* Do other threads hold objects of this domain isolated right now? */
static bool others_isolated(struct rcl_domain *d)
{
	unsigned i, high = atomic_load(&d->high);
	bool any = false;

	for (i = 0; i < high && !any; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_lruvec *lv = slot_get(s);

		if (lv && rcl_lruvec_nr_isolated(lv))
			any = true;
		slot_put(d, s);
	}
	return any;
}

/* Put every thread's pending adds on the lists of @t's subtree. */
static void drain_subtree(struct rcl_domain *t)
{
	struct rcl_domain *d;

	pthread_rwlock_rdlock(&t->root->tree_lock);
	for (d = t; d; d = tree_next(t, d))
		rcl__domain_drain_all(d);
	pthread_rwlock_unlock(&t->root->tree_lock);
}

/* Do other threads hold objects of @t's subtree isolated right now? */
static bool subtree_isolated(struct rcl_domain *t)
{
	struct rcl_domain *d;
	bool any = false;

	pthread_rwlock_rdlock(&t->root->tree_lock);
	for (d = t; d && !any; d = tree_next(t, d))
		any = others_isolated(d);
	pthread_rwlock_unlock(&t->root->tree_lock);
	return any;
}

/*
 * Direct reclaim until a charge of @amount would leave at least min of
 * headroom, or until that is hopeless (see CHARGE_RECLAIM_TRIES).
 */
static void charge_reclaim(struct rcl_domain *d, uint64_t amount,
			   uint64_t context)
{
	bool drained = false;
	unsigned tries;

	if (!(context & RCL_CTX_MAY_BLOCK) || !may_reclaim_here(d))
		return;
	for (tries = 0; tries < CHARGE_RECLAIM_TRIES; tries++) {
		struct rcl_reclaim_result res;
		uint64_t min = atomic_load(&d->wmin);
		uint64_t deficit = need(d, min + amount < min ? UINT64_MAX
							      : min + amount);

		if (!deficit)
			return;
		rcl__domain_direct_reclaim(d,
					   rcl__domain_goal_objects(d, deficit),
					   context, &res);
		if (!res.nr_reclaimed && !res.slab_freed) {
			if (!drained) {
				drain_subtree(d);
				drained = true;
			} else if (subtree_isolated(d)) {
				sched_yield();
			} else {
				return;
			}
		}
	}
}

/*
 * A strict charge of @amount was refused by @d's budget: wake the tree's
 * background reclaimer (the root's) if the root's charge would have left
 * its headroom below low, as an admitted charge does.  That always holds
 * when the root refused; when a child level did, the root's charge never
 * came, and the kernel's page allocation, which wakes kswapd, comes before
 * the memcg charge.  The kernel's allocator slow path likewise wakes kswapd
 * (wake_all_kswapds()) before it fails an allocation that may not block.
 * Not at or above high: the reclaimer reclaims towards high, not for the
 * charge's size, so its run would have nothing to do.  Decided without
 * stocks, as every wakeup is (a root's refusal has taken them back
 * already).  One wakeup request per refusal, coalesced and filtered
 * (pending, hopeless, none running) by rcl__domain_wake_reclaimer().
 */
static void refused_wake(struct rcl_domain *d, uint64_t amount)
{
	struct rcl_domain *r = d->root;
	bool drained = false;

	for (;;) {
		uint64_t room = headroom(r);

		if (room >= atomic_load(&r->whigh) ||
		    (room >= amount &&
		     room - amount >= atomic_load(&r->wlow)))
			return;
		if (drained || !atomic_load(&r->nr_stocks))
			break;
		rcl__domain_drain_stocks(r);
		drained = true;
	}
	rcl__domain_wake_reclaimer(r);
}

/*
 * A root's unstocked charge: drain the stocks if it is tight, reclaim,
 * commit.  0; -ENOMEM, -EOVERFLOW.
 */
static int flat_commit(struct rcl_domain *d, uint64_t amount,
		       uint64_t context, uint64_t *overshoot)
{
	unsigned long long u;
	uint64_t budget = atomic_load(&d->budget), room, low;
	bool retaken = false;

	/*
	 * Unstocked.  A charge that would leave less headroom than low
	 * (direct reclaim, the reclaimer's wakeup, failure and overshoot are
	 * decided only there) first takes every stock of the domain back, so
	 * that none of those happens while stocks hold the memory.
	 */
	if (d->stock_cfg) {
		u = atomic_load(&d->usage);
		low = atomic_load(&d->wlow);
		if (u + amount < u || u + amount + low < u + amount ||
		    u + amount + low > budget)
			rcl__domain_drain_stocks(d);
	}
	/*
	 * A charge that can never be counted evicts nothing either; tested
	 * with the stocks back, so that none makes a fitting charge wrap.
	 */
	u = atomic_load(&d->usage);
	if (u + amount < u)
		return -EOVERFLOW;

	/*
	 * Reclaim first, then commit, as the page allocator does: below min,
	 * the caller makes room itself, if it may block and is not inside a
	 * reclaim pass of this domain already.
	 */
	charge_reclaim(d, amount, context);

	/*
	 * Commit.  Strict mode commits only what fits, by CAS, so that usage
	 * never exceeds the budget, even for an instant; soft mode always
	 * commits.
	 */
	u = atomic_load(&d->usage);
	for (;;) {
		budget = atomic_load(&d->budget);
		/*
		 * A wrap, a refusal or an overshoot is decided without the
		 * stocks, once more here: other threads' charges may have
		 * filled the room since the test above chose not to take
		 * them back, and a stock may hold memory again since it (or
		 * a reclaim sweep) did: one attached, empty, while this
		 * charge decides (no stock is filled then) takes its thread's
		 * uncharges.  Once: a charge does not chase other threads'.
		 */
		if ((u + amount < u || u + amount > budget) && d->stock_cfg &&
		    !retaken && atomic_load(&d->nr_stocks)) {
			rcl__domain_drain_stocks(d);
			retaken = true;
			u = atomic_load(&d->usage);
			continue;
		}
		if (u + amount < u)
			return -EOVERFLOW;
		if (d->mode == RCL_CHARGE_STRICT && u + amount > budget) {
			vm_add(d, VM_CHARGE_FAILURES, 1);
			ev_add(d, EV_OOM, 1);
			refused_wake(d, amount);
			return -ENOMEM;
		}
		if (atomic_compare_exchange_weak(&d->usage, &u, u + amount))
			break;
	}

	room = headroom(d);
	low = atomic_load(&d->wlow);
	if (room < low) {
		/*
		 * Give the background reclaimer the CPU.  The kernel's kswapd
		 * gets to run because the allocator's slow path sleeps and
		 * kswapd is a kernel thread; here it is one more runnable
		 * thread among busy ones, and without a yield it waits for a
		 * time slice while the headroom down to min lasts a few
		 * microseconds (rcl-bench stream: 47-51 % of scans done in the
		 * background without any yield).  The charge that wakes it
		 * yields, and while the wakeup is still pending, so does every
		 * charge in the lower half of the band between min and low
		 * (the reclaimer is late).  Not every charge below low: those
		 * yields (0.5-0.8 us each) set the charge p95 as soon as more
		 * than 5 % of the charges fell in the window of a prompt
		 * reclaimer's wakeup (rcl-bench writeback, bench/README.md).
		 */
		bool woke = rcl__domain_wake_reclaimer(d);
		uint64_t min = atomic_load(&d->wmin);

		if ((woke || (atomic_load(&d->wake_pending) &&
			      room < min + (low - min) / 2)) &&
		    (context & RCL_CTX_MAY_BLOCK) && !in_tree_pass(d) &&
		    rcl__tls_reclaimer_of != d)
			sched_yield();
	}

	/*
	 * Soft mode only: a strict charge fitted the budget its CAS was
	 * checked against, and a budget lowered since is the budget
	 * change's excess, not this charge's (rcl_domain_set_budget()).
	 */
	budget = atomic_load(&d->budget);
	u += amount;
	if (d->mode != RCL_CHARGE_STRICT && u > budget) {
		vm_add(d, VM_CHARGE_OVERSHOOTS, 1);
		ev_add(d, EV_OOM, 1);
		if (overshoot)
			*overshoot = u - budget;
	}
	return 0;
}

/*
 * A root's charge (the flat domain's): 0, or 1 when the thread's stock
 * served it (usage did not move); -ENOMEM, -EOVERFLOW.
 */
static __attribute__((noinline)) int flat_charge(struct rcl_domain *d,
						  uint64_t amount,
						  uint64_t context,
						  uint64_t *overshoot,
						  bool may_stock)
{
	uint64_t budget;
	bool stocked;
	uint32_t g;
	int err;

	/*
	 * From the thread's stock (memory already charged, within the
	 * budget), else a refill that leaves usage at least the high
	 * watermark below the budget.  Not inside a pass of this domain: a
	 * reclaimer's charges and uncharges move usage itself, so that the
	 * pass sees its progress.
	 */
	stocked = may_stock && d->stock_cfg && !in_tree_pass(d);
	if (stocked && stock_consume(d, amount))
		return 1;
	budget = atomic_load(&d->budget);
	/* A charge that can never fit is refused without evicting anything. */
	if (d->mode == RCL_CHARGE_STRICT && amount > budget) {
		vm_add(d, VM_CHARGE_FAILURES, 1);
		ev_add(d, EV_OOM, 1);
		return -ENOMEM;
	}
	if (stocked && stock_refill(d, amount))
		return 0;
	if (!d->stock_cfg)
		return flat_commit(d, amount, context, overshoot);
	/* No stock is taken while it decides (tight_begin()). */
	g = tight_begin(d);
	err = flat_commit(d, amount, context, overshoot);
	tight_end(d, g);
	return err;
}

/*
 * memory.high (mem_cgroup_handle_over_high()): every level of @d's path
 * that a charge left above its limit_high counts a high event, and the
 * charging thread, if it may block, reclaims that level's subtree down to
 * the limit (one reclaim, bounded) before returning.
 */
static __attribute__((noinline)) void over_high(struct rcl_domain *d,
						   uint64_t context)
{
	struct rcl_domain *c;

	for (c = d; c; c = c->parent) {
		uint64_t high = atomic_load_explicit(&c->limit_high,
						     memory_order_relaxed);
		uint64_t u;

		if (likely(high == UINT64_MAX))
			continue;
		bool tight = false;
		uint32_t g = 0;

		u = atomic_load(&c->usage);
		if (u <= high)
			continue;
		if (atomic_load(&c->nr_stocks)) {
			/*
			 * Take the stocks back, and take none until decided
			 * (tight_begin()), so that the event and the reclaim
			 * are the ones it would have without stocks.
			 */
			tight = true;
			g = tight_begin(c->root);
			rcl__domain_drain_stocks(c);
			u = atomic_load(&c->usage);
		}
		if (u > high) {
			ev_add(c, EV_HIGH, 1);
			if ((context & RCL_CTX_MAY_BLOCK) && may_reclaim_here(c) &&
			    rcl__tls_reclaimer_of != c->root) {
				struct rcl_reclaim_result res;

				rcl__domain_direct_reclaim(
					c, rcl__domain_goal_objects(c, u - high),
					context, &res);
			}
		}
		if (tight)
			tight_end(c->root, g);
	}
}

/*
 * Most sweeps a child's charge makes, over all the levels it finds full:
 * each level gets CHARGE_RECLAIM_TRIES, and levels can fill again while
 * others are reclaimed.
 */
#define TREE_CHARGE_ROUNDS (CHARGE_RECLAIM_TRIES * RCL_DOMAIN_MAX_DEPTH)

/*
 * A child's charge (memcg's try_charge()): each child level from @d up by
 * CAS, then the root's own charge path.  A child level that is full makes
 * the caller reclaim that level's subtree (a max event), with the same
 * retries as a root's charge, and try again; one that stays full fails the
 * charge if strict (an oom event), or is admitted over its budget if soft.
 * Whatever fails, nothing stays charged at any level.
 */
/*
 * Can a charge of @amount to child @d ever be counted?  Decided on the
 * usage before any reclaim, at every level, as a root's charge decides it
 * (flat_charge(), flat_commit()), so that no level is reclaimed for a charge
 * a level above must refuse: -EOVERFLOW if some level's usage would wrap
 * (tested again with the stocks back, as flat_commit() does), -ENOMEM
 * (counted at that level) if a strict level's whole budget is smaller than
 * @amount; else 0.
 */
static int tree_charge_hopeless(struct rcl_domain *d, uint64_t amount)
{
	struct rcl_domain *c;
	bool drained = false;

again:
	for (c = d; c; c = c->parent) {
		uint64_t u = atomic_load(&c->usage);

		if (u + amount >= u)
			continue;
		if (drained || !atomic_load(&d->root->nr_stocks))
			return -EOVERFLOW;
		rcl__domain_drain_stocks(d->root);
		drained = true;
		goto again;
	}
	for (c = d; c; c = c->parent) {
		if (c->mode == RCL_CHARGE_STRICT &&
		    amount > atomic_load(&c->budget)) {
			vm_add(c, VM_CHARGE_FAILURES, 1);
			ev_add(c, EV_OOM, 1);
			return -ENOMEM;
		}
	}
	return 0;
}

static int tree_charge_levels(struct rcl_domain *d, uint64_t amount,
			      uint64_t context, uint64_t *overshoot)
{
	bool may = (context & RCL_CTX_MAY_BLOCK) && may_reclaim_here(d);
	unsigned forced = 0, maxed = 0, stock_drained = 0, retaken = 0;
	unsigned rounds, tries = 0;
	struct rcl_domain *c, *u, *last = NULL;
	bool drained = false;
	uint64_t os = 0;
	int err;

	err = tree_charge_hopeless(d, amount);
	if (err)
		return err;
	for (rounds = 0;; rounds++) {
		err = 0;
		for (c = d; c->parent; c = c->parent) {
			err = level_charge(c, amount,
					   (forced & (1u << c->depth))
						   ? UINT64_MAX
						   : atomic_load(&c->budget));
			if (err)
				break;
		}
		if (!err) {
			err = flat_charge(d->root, amount, context, &os, false);
			if (err >= 0)
				break;
		}
		for (u = d; u != c; u = u->parent)
			level_unwind(u, amount);
		if (err == -EOVERFLOW || !c->parent)
			return err;
		/* Child level @c is full. */
		if (c != last) {
			last = c;
			tries = 0;
			drained = false;
		}
		/*
		 * Stocks of its subtree hold some of its memory: take them
		 * back before deciding anything (drain_all_stock()), so that
		 * what follows is what it would be without stocks.
		 */
		if (!(stock_drained & (1u << c->depth))) {
			stock_drained |= 1u << c->depth;
			if (atomic_load(&c->nr_stocks)) {
				rcl__domain_drain_stocks(c);
				continue;
			}
		}
		if (!(maxed & (1u << c->depth))) {
			maxed |= 1u << c->depth;
			ev_add(c, EV_MAX, 1);
		}
		if (may && amount <= atomic_load(&c->budget) &&
		    tries < CHARGE_RECLAIM_TRIES && rounds < TREE_CHARGE_ROUNDS) {
			uint64_t deficit = need(c, amount);
			struct rcl_reclaim_result res;

			tries++;
			if (!deficit)
				continue;	/* room was made meanwhile */
			rcl__domain_direct_reclaim(
				c, rcl__domain_goal_objects(c, deficit), context,
				&res);
			if (!res.nr_reclaimed && !res.slab_freed) {
				if (!drained) {
					drain_subtree(c);
					drained = true;
				} else if (subtree_isolated(c)) {
					sched_yield();
				} else {
					tries = CHARGE_RECLAIM_TRIES;
				}
			}
			continue;
		}
		/*
		 * It stays full.  Decided without the stocks, once more: one
		 * may hold the level's memory again since the drain above
		 * and each reclaim sweep's (attached, empty, while this
		 * charge decides, it takes its thread's uncharges).
		 */
		if (!(retaken & (1u << c->depth)) &&
		    atomic_load(&c->nr_stocks)) {
			retaken |= 1u << c->depth;
			rcl__domain_drain_stocks(c);
			continue;
		}
		if (c->mode == RCL_CHARGE_STRICT) {
			ev_add(c, EV_OOM, 1);
			vm_add(c, VM_CHARGE_FAILURES, 1);
			refused_wake(c, amount);
			return -ENOMEM;
		}
		/* Admitted over its budget: counted once the charge is. */
		forced |= 1u << c->depth;
	}
	for (c = d; c->parent; c = c->parent) {
		if (forced & (1u << c->depth)) {
			ev_add(c, EV_OOM, 1);
			vm_add(c, VM_CHARGE_OVERSHOOTS, 1);
		}
	}
	/* How far the charge left the most overcommitted level. */
	for (c = d; c->parent; c = c->parent) {
		uint64_t b = atomic_load(&c->budget), v = atomic_load(&c->usage);

		if (c->mode != RCL_CHARGE_STRICT && v > b)
			os = RCL_MAX(os, v - b);
	}
	if (overshoot)
		*overshoot = os;
	if (atomic_load_explicit(&d->root->nr_high, memory_order_relaxed))
		over_high(d, context);
	return 0;
}

static __attribute__((noinline)) int tree_charge_slow(struct rcl_domain *d,
						       uint64_t amount,
						       uint64_t context,
						       uint64_t *overshoot)
{
	struct rcl_domain *r = d->root;
	uint32_t g;
	int err;

	if (!d->stock_cfg)
		return tree_charge_levels(d, amount, context, overshoot);
	/* No stock is taken in the tree while it decides (tight_begin()). */
	g = tight_begin(r);
	err = tree_charge_levels(d, amount, context, overshoot);
	tight_end(r, g);
	return err;
}

/*
 * The common case of a child's charge, kept apart from the retries: every
 * child level has room (one CAS each), and the root's stock or the root's
 * charge path takes it.  A child level that is full goes to
 * tree_charge_slow(), which starts over.
 */
static __attribute__((noinline)) int tree_charge(struct rcl_domain *d,
						  uint64_t amount,
						  uint64_t context,
						  uint64_t *overshoot)
{
	struct rcl_domain *c, *u, *r = d->root;
	int err;

	/* A stock for @d, charged to every level at once (refill_stock()). */
	if (d->stock_cfg && !in_tree_pass(d) && stock_refill(d, amount))
		goto done;
	for (c = d; c->parent; c = c->parent)
		if (level_charge(c, amount, atomic_load(&c->budget)))
			break;
	if (c->parent) {
		for (u = d; u != c; u = u->parent)
			level_unwind(u, amount);
		return tree_charge_slow(d, amount, context, overshoot);
	}
	{
		err = flat_charge(r, amount, context, overshoot, false);
		if (err < 0) {
			for (u = d; u != r; u = u->parent)
				level_unwind(u, amount);
			return err;
		}
	}
done:
	if (atomic_load_explicit(&r->nr_high, memory_order_relaxed))
		over_high(d, context);
	return 0;
}

RCL_API int rcl_domain_charge(struct rcl_domain *d, uint64_t amount,
			      uint64_t context, uint64_t *overshoot)
{
	int err;

	if (overshoot)
		*overshoot = 0;
	if (!d)
		return -EINVAL;
	/* The fast path, with nothing to set up: from the thread's stock. */
	if (d->stock_cfg && !in_tree_pass(d) && stock_consume(d, amount))
		return 0;
	if (unlikely(d->parent))
		return tree_charge(d, amount, context, overshoot);
	err = flat_charge(d, amount, context, overshoot, true);
	if (err > 0)
		return 0;	/* from the stock: usage did not move */
	if (!err &&
	    unlikely(atomic_load_explicit(&d->limit_high,
					  memory_order_relaxed) != UINT64_MAX))
		over_high(d, context);
	return err;
}

/* A root's uncharge, past its stock (usage clamps at 0). */
static void flat_uncharge(struct rcl_domain *d, uint64_t amount)
{
	unsigned long long u = atomic_load(&d->usage);

	while (!atomic_compare_exchange_weak(&d->usage, &u,
					     u > amount ? u - amount : 0))
		;
	/* Inside this domain's pass: the pass's progress (shrink_partition). */
	if (rcl__tls_pass_domain == d)
		rcl__tls_pass_uncharged +=
			RCL_MIN(u, (unsigned long long)amount);
}

/* A child's: each child level, then the root's, stock included. */
static __attribute__((noinline)) void tree_uncharge(struct rcl_domain *d,
						    uint64_t amount)
{
	amount = path_uncharge(d, d->root, amount);
	if (amount)
		flat_uncharge(d->root, amount);
}

RCL_API int rcl_domain_uncharge(struct rcl_domain *d, uint64_t amount)
{
	if (!d)
		return -EINVAL;
	if (d->stock_cfg && !in_tree_pass(d) && stock_refund(d, amount))
		return 0;
	if (unlikely(d->parent))
		tree_uncharge(d, amount);
	else
		flat_uncharge(d, amount);
	return 0;
}

RCL_API uint64_t rcl_domain_usage(const struct rcl_domain *d)
{
	return d ? atomic_load(&((struct rcl_domain *)d)->usage) : 0;
}

RCL_API uint64_t rcl_domain_budget(const struct rcl_domain *d)
{
	return d ? atomic_load(&((struct rcl_domain *)d)->budget) : 0;
}

/*
 * Reclaim @d's subtree until its usage is at most @level, while sweeps make
 * progress: at most CHARGE_RECLAIM_TRIES.  True if it got there.
 */
static bool reclaim_to(struct rcl_domain *d, uint64_t level)
{
	unsigned tries;

	if (!may_reclaim_here(d))
		return atomic_load(&d->usage) <= level;
	for (tries = 0; tries < CHARGE_RECLAIM_TRIES; tries++) {
		uint64_t u = atomic_load(&d->usage);
		struct rcl_reclaim_result res;

		if (u <= level)
			return true;
		rcl__domain_direct_reclaim(
			d, rcl__domain_goal_objects(d, u - level),
			RCL_CTX_CAPABLE, &res);
		if (!res.nr_reclaimed && !res.slab_freed)
			break;
	}
	return atomic_load(&d->usage) <= level;
}

/* Most walks of one resize_stocks() that other budget changes may undo. */
#define RESIZE_STOCKS_ROUNDS 64

/*
 * Size the stocks of @d's subtree again from their budgets, parents first
 * (a stock is no larger than any ancestor's), after the caller stored the
 * new budget.  Each call first bumps the root's stock_gen.  Two budget
 * changes at once may store their sizes in either order: a walk that read
 * a budget before another change stored its own may end last, with sizes
 * of the old budget; it sees that change's bump and walks again, reading
 * the new budget.  Bounded: after RESIZE_STOCKS_ROUNDS walks, each undone by a
 * later change, the last of those changes is still to walk.
 */
static void resize_stocks(struct rcl_domain *d)
{
	struct rcl_domain *c;
	unsigned g, rounds = 0;

	atomic_fetch_add(&d->root->stock_gen, 1);
	do {
		g = atomic_load(&d->root->stock_gen);
		pthread_rwlock_rdlock(&d->root->tree_lock);
		for (c = d; c; c = tree_next(d, c))
			stock_size(c, atomic_load(&c->budget));
		pthread_rwlock_unlock(&d->root->tree_lock);
	} while (atomic_load(&d->root->stock_gen) != g &&
		 ++rounds < RESIZE_STOCKS_ROUNDS);
}

/*
 * A child's budget is its hard limit only (memory.max): no watermarks to
 * move, no stocks; a usage above the new one is reclaimed (bounded), and
 * what reclaim cannot free stays charged, above the budget, until it is
 * uncharged: new charges fail (strict) or overshoot (soft) until then.
 */
static int child_set_budget(struct rcl_domain *d, uint64_t budget)
{
	struct rcl_watermarks wm;

	derive_watermarks(budget, d->scale, &wm);
	pthread_mutex_lock(&d->lock);
	atomic_store(&d->budget, budget);
	store_watermarks(d, &wm);
	pthread_mutex_unlock(&d->lock);
	resize_stocks(d);
	rcl__domain_drain_stocks(d);
	rcl__domain_dirty_wake(d);
	if (!reclaim_to(d, budget))
		ev_add(d, EV_MAX, 1);
	return 0;
}

RCL_API int rcl_domain_set_budget(struct rcl_domain *d, uint64_t budget)
{
	struct rcl_watermarks wm;
	bool bg;

	if (!d || !budget)
		return -EINVAL;
	if (d->parent)
		return child_set_budget(d, budget);
	derive_watermarks(budget, d->scale, &wm);
	pthread_mutex_lock(&d->lock);
	atomic_store(&d->budget, budget);
	store_watermarks(d, &wm);
	revive_locked(d);
	reclaimer_cond_after_fork_locked(d);
	bg = d->running;
	pthread_mutex_unlock(&d->lock);
	/*
	 * Stocks sized for the old budget, and memory the headroom below
	 * must count: take them all back before looking.
	 */
	resize_stocks(d);
	rcl__domain_drain_stocks(d);
	/* The dirty thresholds follow the budget. */
	rcl__domain_dirty_wake(d);

	if (headroom(d) < wm.low) {
		if (bg) {
			rcl__domain_wake_reclaimer(d);
		} else if (may_reclaim_here(d)) {
			struct rcl_reclaim_result res;

			rcl__domain_direct_reclaim(
				d, rcl__domain_goal_objects(d, need(d, wm.high)),
				RCL_CTX_CAPABLE, &res);
		}
	}
	return 0;
}

RCL_API int rcl_domain_watermarks(const struct rcl_domain *d,
				  struct rcl_watermarks *out)
{
	struct rcl_domain *w = (struct rcl_domain *)d;
	unsigned s1, s2;

	if (!d || !out)
		return -EINVAL;
	/*
	 * A writer's section is three stores with no waiting in it, so a
	 * retry follows only a store that overlapped this read; each retry
	 * needs another concurrent update of the watermarks.
	 */
	do {
		s1 = atomic_load_explicit(&w->wm_seq, memory_order_acquire);
		out->min = atomic_load_explicit(&w->wmin, memory_order_relaxed);
		out->low = atomic_load_explicit(&w->wlow, memory_order_relaxed);
		out->high = atomic_load_explicit(&w->whigh,
						 memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&w->wm_seq, memory_order_relaxed);
	} while ((s1 & 1) || s1 != s2);
	return 0;
}

RCL_API int rcl_domain_set_watermarks(struct rcl_domain *d,
				      const struct rcl_watermarks *wm)
{
	if (!d || !wm || !(wm->min < wm->low && wm->low < wm->high))
		return -EINVAL;
	if (d->parent)
		return RCL__REFUSE(-EINVAL, "a child domain has no watermarks: its root's are the tree's");
	pthread_mutex_lock(&d->lock);
	/* Checked under the lock, so a concurrent set_budget() cannot
	 * leave high above the budget. */
	if (wm->high > atomic_load(&d->budget)) {
		pthread_mutex_unlock(&d->lock);
		return -EINVAL;
	}
	store_watermarks(d, wm);
	revive_locked(d);
	pthread_mutex_unlock(&d->lock);
	if (headroom(d) < wm->low) {
		rcl__domain_drain_stocks(d);
		if (headroom(d) < wm->low)
			rcl__domain_wake_reclaimer(d);
	}
	return 0;
}

/*
 * A change that may make memory evictable (protection, swappiness): the
 * tree's reclaimer, the root's, may have given up on it.
 */
static void revive_root(struct rcl_domain *d)
{
	pthread_mutex_lock(&d->root->lock);
	revive_locked(d->root);
	pthread_mutex_unlock(&d->root->lock);
}

RCL_API int rcl_domain_set_swappiness(struct rcl_domain *d, unsigned swappiness)
{
	if (!d || swappiness > RCL_SWAPPINESS_MAX)
		return -EINVAL;
	atomic_store(&d->swappiness, swappiness);
	revive_root(d);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Limits and the tree                                                        */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_domain_set_limits(struct rcl_domain *d,
				  const struct rcl_domain_limits *lim)
{
	uint64_t high, old;

	if (!d || !lim)
		return -EINVAL;
	if (!d->parent && (lim->protect_low || lim->protect_min))
		return RCL__REFUSE(-EINVAL, "a root is never protected from its own pressure: protection needs a parent");
	if (in_tree_pass(d))
		return RCL__REFUSE(-EDEADLK, "called from a callback of a reclaim pass of the domain's tree");
	high = lim->limit_high ? lim->limit_high : UINT64_MAX;
	atomic_store(&d->protect_min, lim->protect_min);
	atomic_store(&d->protect_low, lim->protect_low);
	old = atomic_exchange(&d->limit_high, high);
	/* The tree's count of limits: the charge path's filter. */
	if (old == UINT64_MAX && high != UINT64_MAX)
		atomic_fetch_add(&d->root->nr_high, 1);
	else if (old != UINT64_MAX && high == UINT64_MAX)
		atomic_fetch_sub(&d->root->nr_high, 1);
	revive_root(d);
	if (high != UINT64_MAX && atomic_load(&d->usage) > high) {
		rcl__domain_drain_stocks(d);
		if (!reclaim_to(d, high))
			ev_add(d, EV_HIGH, 1);
	}
	return 0;
}

RCL_API int rcl_domain_limits(const struct rcl_domain *d,
			      struct rcl_domain_limits *out)
{
	struct rcl_domain *w = (struct rcl_domain *)d;

	if (!d || !out)
		return -EINVAL;
	out->limit_high = atomic_load(&w->limit_high);
	out->protect_low = atomic_load(&w->protect_low);
	out->protect_min = atomic_load(&w->protect_min);
	return 0;
}

RCL_API struct rcl_domain *rcl_domain_parent(const struct rcl_domain *d)
{
	return d ? d->parent : NULL;
}

RCL_API int rcl_domain_events(const struct rcl_domain *d, bool subtree,
			      struct rcl_domain_events *out)
{
	struct rcl_domain *t = (struct rcl_domain *)d, *c;
	uint64_t ev[NR_EV_ITEMS] = { 0 };
	unsigned i;

	if (!d || !out)
		return -EINVAL;
	if (subtree)
		pthread_rwlock_rdlock(&t->root->tree_lock);
	for (c = t; c; c = subtree ? tree_next(t, c) : NULL)
		for (i = 0; i < NR_EV_ITEMS; i++)
			ev[i] += atomic_load_explicit(&c->ev[i],
						      memory_order_relaxed) +
				 (subtree ? atomic_load_explicit(
						    &c->ev_gone[i],
						    memory_order_relaxed)
					  : 0);
	if (subtree)
		pthread_rwlock_unlock(&t->root->tree_lock);
	out->low = ev[EV_LOW];
	out->high = ev[EV_HIGH];
	out->max = ev[EV_MAX];
	out->oom = ev[EV_OOM];
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Counters                                                                   */
/* ------------------------------------------------------------------------- */

static void vmstat_fill(const uint64_t *v, struct rcl_vmstat *out);

RCL_API int rcl_domain_vmstat_subtree(const struct rcl_domain *d,
				      struct rcl_vmstat *out)
{
	struct rcl_domain *t = (struct rcl_domain *)d, *c;
	uint64_t v[NR_VM_ITEMS] = { 0 };
	unsigned i;

	if (!d || !out)
		return -EINVAL;
	pthread_rwlock_rdlock(&t->root->tree_lock);
	for (c = t; c; c = tree_next(t, c))
		for (i = 0; i < NR_VM_ITEMS; i++)
			v[i] += atomic_load_explicit(&c->vm[i],
						     memory_order_relaxed) +
				atomic_load_explicit(&c->vm_gone[i],
						     memory_order_relaxed);
	pthread_rwlock_unlock(&t->root->tree_lock);
	vmstat_fill(v, out);
	return 0;
}

RCL_API int rcl_domain_vmstat(const struct rcl_domain *d, struct rcl_vmstat *out)
{
	struct rcl_domain *w = (struct rcl_domain *)d;
	uint64_t v[NR_VM_ITEMS];
	unsigned i;

	if (!d || !out)
		return -EINVAL;
	for (i = 0; i < NR_VM_ITEMS; i++)
		v[i] = atomic_load_explicit(&w->vm[i], memory_order_relaxed);
	vmstat_fill(v, out);
	return 0;
}

static void vmstat_fill(const uint64_t *v, struct rcl_vmstat *out)
{
	out->pgscan_kswapd = v[VM_PGSCAN_KSWAPD];
	out->pgscan_direct = v[VM_PGSCAN_DIRECT];
	out->pgsteal_kswapd = v[VM_PGSTEAL_KSWAPD];
	out->pgsteal_direct = v[VM_PGSTEAL_DIRECT];
	out->pgrefill = v[VM_PGREFILL];
	out->pgactivate = v[VM_PGACTIVATE];
	out->pgdeactivate = v[VM_PGDEACTIVATE];
	out->pgrotated = v[VM_PGROTATED];
	out->slabs_scanned = v[VM_SLABS_SCANNED];
	out->slabs_freed = v[VM_SLABS_FREED];
	out->allocstall = v[VM_ALLOCSTALL];
	out->pageoutrun = v[VM_PAGEOUTRUN];
	out->kswapd_wakeups = v[VM_KSWAPD_WAKEUPS];
	out->kswapd_failures = v[VM_KSWAPD_FAILURES];
	out->kswapd_hopeless = v[VM_KSWAPD_HOPELESS];
	out->charge_failures = v[VM_CHARGE_FAILURES];
	out->charge_overshoots = v[VM_CHARGE_OVERSHOOTS];
	out->nr_dirty_scanned = v[VM_NR_DIRTY_SCANNED];
	out->nr_unqueued_dirty = v[VM_NR_UNQUEUED_DIRTY];
	out->nr_writeback_scanned = v[VM_NR_WRITEBACK_SCANNED];
	out->nr_immediate = v[VM_NR_IMMEDIATE];
	out->flush_requests = v[VM_FLUSH_REQUESTS];
	out->flush_requests_vmscan = v[VM_FLUSH_REQUESTS_VMSCAN];
	out->flush_coalesced = v[VM_FLUSH_COALESCED];
	out->flusher_wakeups = v[VM_FLUSHER_WAKEUPS];
	out->writeback_throttled = v[VM_WRITEBACK_THROTTLED];
	out->writeback_throttle_timeouts = v[VM_WRITEBACK_THROTTLE_TIMEOUTS];
	out->dirty_throttled = v[VM_DIRTY_THROTTLED];
	out->dirty_throttle_timeouts = v[VM_DIRTY_THROTTLE_TIMEOUTS];
	out->writes_from_reclaim = v[VM_WRITES_FROM_RECLAIM];
	out->writes_flusher = v[VM_WRITES_FLUSHER];
}

/* Append one line to @buf like snprintf() does, counting the full length. */
__attribute__((format(printf, 4, 5))) static void
emit(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (buf && *len + 1 < size) {
		size_t room = size - 1 - *len;
		size_t k = RCL_MIN((size_t)n, room);

		memcpy(buf + *len, line, k);
		buf[*len + k] = '\0';
	}
	*len += (size_t)n;
}

RCL_API int rcl_domain_vmstat_format(const struct rcl_domain *d, char *buf,
				     size_t size)
{
	struct rcl_domain *w = (struct rcl_domain *)d;
	struct rcl_watermarks wm;
	size_t len = 0;
	unsigned i;

	if (!d || (!buf && size))
		return -EINVAL;
	if (buf && size)
		buf[0] = '\0';
	rcl_domain_watermarks(d, &wm);
	for (i = 0; i < NR_VM_ITEMS; i++)
		emit(buf, size, &len, "%s %llu\n", vm_names[i],
		     (unsigned long long)atomic_load(&w->vm[i]));
	emit(buf, size, &len, "usage %llu\n",
	     (unsigned long long)atomic_load(&w->usage));
	emit(buf, size, &len, "budget %llu\n",
	     (unsigned long long)atomic_load(&w->budget));
	emit(buf, size, &len, "watermark_min %llu\n", (unsigned long long)wm.min);
	emit(buf, size, &len, "watermark_low %llu\n", (unsigned long long)wm.low);
	emit(buf, size, &len, "watermark_high %llu\n",
	     (unsigned long long)wm.high);
	return len > INT32_MAX ? INT32_MAX : (int)len;
}
