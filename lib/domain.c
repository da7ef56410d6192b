/* SPDX-License-Identifier: MIT */
/*
 * Memory domains: a budget with watermarks, explicit charging, direct
 * reclaim in the charging thread and an optional background reclaimer, after
 * the kernel's page allocator slow path, kswapd and do_try_to_free_pages().
 *
 * Attached lruvecs live in a fixed table of slots, like the shrinker
 * registry's: a reclaim pass pins a slot with an atomic count and reads its
 * lruvec pointer; detach clears the pointer and waits for the count to drain
 * (a Dekker handshake on seq_cst atomics).  So reclaim passes hold no domain
 * lock while callbacks run, and attach/detach work while others reclaim.
 *
 * The domain mutex guards the background reclaimer's state (running, stop,
 * failures, hopeless) and is the mutex of its condition variable.  The
 * charge path takes it only to wake the reclaimer, and only when no wakeup
 * is pending already.
 */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <reclaim/domain.h>
#include <reclaim/scan.h>

__extension__ typedef unsigned __int128 u128;

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
	NR_VM_ITEMS
};

static const char *const vm_names[NR_VM_ITEMS] = {
	"pgscan_kswapd",  "pgscan_direct",   "pgsteal_kswapd",
	"pgsteal_direct", "pgrefill",	     "pgactivate",
	"pgdeactivate",	  "pgrotated",	     "slabs_scanned",
	"slabs_freed",	  "allocstall",	     "pageoutrun",
	"kswapd_wakeups", "kswapd_failures", "kswapd_hopeless",
	"charge_failures", "charge_overshoots",
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

	atomic_ullong usage;
	atomic_ullong budget;
	atomic_ullong wmin, wlow, whigh;

	struct rcl_shrinker_registry *reg;

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* reclaimer wakeups; detach waits */
	bool running, stop;
	pthread_t thread;
	unsigned failures;
	atomic_bool hopeless;
	atomic_bool wake_pending;
	atomic_uint nr_detaching;
	atomic_uint high;		/* slots [0, high) may be used */

	atomic_ullong vm[NR_VM_ITEMS];
	struct att_slot slots[];
};

/* The pass this thread is inside, if any (for -EDEADLK and recursion). */
static RCL__TLS const struct rcl_domain *tls_pass_domain;
static RCL__TLS const struct rcl_lruvec *tls_pass_lv;
static RCL__TLS const struct rcl_domain *tls_reclaimer_of;

static void vm_add(struct rcl_domain *d, enum vm_item i, uint64_t v)
{
	if (v)
		atomic_fetch_add_explicit(&d->vm[i], v, memory_order_relaxed);
}

/* ------------------------------------------------------------------------- */
/* Memory                                                                     */
/* ------------------------------------------------------------------------- */

static void *std_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static void std_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static const struct rcl_allocator std_allocator = { std_alloc, std_free, NULL };

/* ------------------------------------------------------------------------- */
/* Watermarks                                                                 */
/* ------------------------------------------------------------------------- */

static void derive_watermarks(uint64_t budget, unsigned scale,
			      struct rcl_watermarks *wm)
{
	uint64_t min = budget / 1024, gap;

	gap = RCL_MAX(min / 4, budget / 10000 * scale +
				       budget % 10000 * scale / 10000);
	if (!gap)
		gap = 1;
	wm->min = min;
	wm->low = min + gap;
	wm->high = min + 2 * gap;
	if (wm->high > budget) {	/* tiny budgets, huge scale factors */
		wm->min = 0;
		wm->low = budget / 2;
		wm->high = budget;
	}
}

static void store_watermarks(struct rcl_domain *d, const struct rcl_watermarks *wm)
{
	atomic_store(&d->wmin, wm->min);
	atomic_store(&d->wlow, wm->low);
	atomic_store(&d->whigh, wm->high);
}

static uint64_t headroom(const struct rcl_domain *d)
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
static uint64_t need(const struct rcl_domain *d, uint64_t level)
{
	uint64_t b = atomic_load(&((struct rcl_domain *)d)->budget);
	uint64_t u = atomic_load(&((struct rcl_domain *)d)->usage);

	if (u + level < u)
		return UINT64_MAX;
	return u + level > b ? u + level - b : 0;
}

/* ------------------------------------------------------------------------- */
/* Lifecycle                                                                  */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_domain_new(const struct rcl_domain_config *cfg,
			   struct rcl_domain **out)
{
	const struct rcl_allocator *a = &std_allocator;
	struct rcl_shrinker_registry_config rc = { 0 };
	struct rcl_watermarks wm;
	pthread_condattr_t ca;
	struct rcl_domain *d;
	unsigned max_lv;
	size_t size;
	int err;

	if (!cfg || !out || !cfg->budget ||
	    cfg->nr_partitions > RCL_SHRINKER_MAX_PARTITIONS ||
	    (cfg->mode != RCL_CHARGE_STRICT && cfg->mode != RCL_CHARGE_SOFT) ||
	    !rcl_shrink_policy_name(cfg->shrink_policy) ||
	    cfg->swappiness > RCL_SWAPPINESS_MAX ||
	    cfg->watermark_scale_factor > 10000 ||
	    (cfg->flags & ~RCL_DOMAIN_NONPROPORTIONAL))
		return -EINVAL;
	if (cfg->allocator) {
		if (!cfg->allocator->alloc || !cfg->allocator->free)
			return -EINVAL;
		a = cfg->allocator;
	}
	max_lv = cfg->max_lruvecs ? cfg->max_lruvecs : 256;
	size = sizeof(*d) + (size_t)max_lv * sizeof(d->slots[0]);
	d = a->alloc(a->ctx, size);
	if (!d)
		return -ENOMEM;
	memset(d, 0, size);
	d->alloc = *a;
	d->clock = cfg->clock ? cfg->clock : rcl_clock_monotonic();
	d->nr_partitions = cfg->nr_partitions ? cfg->nr_partitions : 1;
	d->max_lruvecs = max_lv;
	d->mode = cfg->mode;
	d->flags = cfg->flags;
	d->scale = cfg->watermark_scale_factor ? cfg->watermark_scale_factor
					       : RCL_WATERMARK_SCALE_DEFAULT;
	atomic_init(&d->swappiness,
		    cfg->swappiness ? cfg->swappiness : RCL_SWAPPINESS_DEFAULT);
	atomic_init(&d->budget, cfg->budget);
	derive_watermarks(cfg->budget, d->scale, &wm);
	store_watermarks(d, &wm);

	rc.nr_partitions = d->nr_partitions;
	rc.policy = cfg->shrink_policy;
	rc.allocator = a;
	err = rcl_shrinker_registry_new(&rc, &d->reg);
	if (err)
		goto fail;
	err = -pthread_mutex_init(&d->lock, NULL);
	if (err)
		goto fail_reg;
	/* Monotonic, as rcl_clock_monotonic()'s deadlines are. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = -pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (err)
		goto fail_lock;
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
	high = atomic_load(&d->high);
	for (i = 0; i < high; i++)
		if (atomic_load(&d->slots[i].lv))
			return -EBUSY;
	/* Check before stopping anything: a failing call changes nothing. */
	if (rcl__shrinker_registry_count(d->reg))
		return -EBUSY;
	err = rcl_domain_reclaimer_stop(d);
	if (err)
		return err;
	err = rcl_shrinker_registry_free(d->reg);
	if (err)
		return err;
	a = d->alloc;
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	a.free(a.ctx, d);
	return 0;
}

RCL_API struct rcl_shrinker_registry *rcl_domain_registry(struct rcl_domain *d)
{
	return d ? d->reg : NULL;
}

/* Something changed: a hopeless reclaimer may have work again. */
static void revive_locked(struct rcl_domain *d)
{
	d->failures = 0;
	atomic_store(&d->hopeless, false);
}

/* ------------------------------------------------------------------------- */
/* Attach and detach                                                          */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_domain_attach(struct rcl_domain *d, struct rcl_lruvec *lv,
			      unsigned partition)
{
	unsigned i, high, free_slot = UINT32_MAX;
	int err = 0;

	if (!d || !lruvec_live(lv) || !lv->__ops || !lv->__ops->evict ||
	    partition >= d->nr_partitions)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	high = atomic_load(&d->high);
	for (i = 0; i < high; i++) {
		if (d->slots[i].used) {
			if (atomic_load(&d->slots[i].lv) == lv) {
				err = -EBUSY;
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
		atomic_store(&d->high, high + 1);
	}
	d->slots[free_slot].used = true;
	d->slots[free_slot].partition = partition;
	atomic_store(&d->slots[free_slot].lv, lv);
	revive_locked(d);
out:
	pthread_mutex_unlock(&d->lock);
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
	if (tls_pass_domain == d)
		return -EDEADLK;
	pthread_mutex_lock(&d->lock);
	high = atomic_load(&d->high);
	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];

		if (!s->used || atomic_load(&s->lv) != lv)
			continue;
		/* Dekker with slot_put(): clear, then wait for the pins. */
		atomic_fetch_add(&d->nr_detaching, 1);
		atomic_store(&s->lv, NULL);
		while (atomic_load(&s->pins))
			d->clock->wait(d->clock->ctx, &d->cond, &d->lock,
				       RCL_CLOCK_FOREVER);
		atomic_fetch_sub(&d->nr_detaching, 1);
		s->used = false;
		err = 0;
		break;
	}
	pthread_mutex_unlock(&d->lock);
	return err;
}

static struct rcl_lruvec *slot_get(struct att_slot *s)
{
	atomic_fetch_add(&s->pins, 1);
	return atomic_load(&s->lv);
}

static void slot_put(struct rcl_domain *d, struct att_slot *s)
{
	atomic_fetch_sub(&s->pins, 1);
	if (atomic_load(&d->nr_detaching)) {
		pthread_mutex_lock(&d->lock);
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
	}
}

/* Average object weight over the attached lruvecs (>= 1). */
static uint64_t avg_weight(struct rcl_domain *d)
{
	uint64_t objs = 0, weight = 0;
	unsigned i, high = atomic_load(&d->high);

	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_lruvec *lv = slot_get(s);
		unsigned l;

		if (lv) {
			for (l = 0; l < RCL_LRU_UNEVICTABLE; l++) {
				uint64_t w;

				objs += rcl_lruvec_count(lv, l, &w);
				weight += w;
			}
		}
		slot_put(d, s);
	}
	return objs && weight >= objs ? weight / objs : 1;
}

/* Objects to reclaim to free @deficit units of weight: at least 32. */
static uint64_t goal_objects(struct rcl_domain *d, uint64_t deficit)
{
	uint64_t w = avg_weight(d), n = deficit / w + (deficit % w != 0);

	return RCL_MAX(n, (uint64_t)RCL_SCAN_CHUNK);
}

/* ------------------------------------------------------------------------- */
/* Reclaim passes                                                             */
/* ------------------------------------------------------------------------- */

struct pass {
	struct rcl_scan_control sc;	/* summed over lruvecs */
	uint64_t slab_scanned, slab_freed;
};

/* Objects on an lruvec's evictable lists. */
static uint64_t lruvec_size(const struct rcl_lruvec *lv)
{
	uint64_t n = 0;
	unsigned l;

	for (l = 0; l < RCL_LRU_UNEVICTABLE; l++)
		n += rcl_lruvec_count(lv, l, NULL);
	return n;
}

/*
 * shrink_node(): every lruvec of the partition, then the partition's
 * shrinkers at the same priority.  Each lruvec is asked for its share of the
 * goal, in proportion to its size, so that a goal met early by one lruvec
 * does not spare the others: lruvecs are scanned in proportion to their
 * sizes, as the lists within one lruvec are.  The whole pass, shrinkers
 * included, runs with this thread marked as inside a pass of @d.
 */
static void shrink_partition(struct rcl_domain *d, unsigned p, int priority,
			     uint64_t goal, uint64_t context, unsigned flags,
			     struct pass *ps)
{
	const struct rcl_domain *pd = tls_pass_domain;
	const struct rcl_lruvec *pl = tls_pass_lv;
	unsigned i, high = atomic_load(&d->high);
	struct rcl_shrink_result res = { 0 };
	uint64_t total = 0;

	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_lruvec *lv;

		if (!atomic_load_explicit(&s->lv, memory_order_relaxed))
			continue;
		lv = slot_get(s);
		if (lv && s->partition == p)
			total += lruvec_size(lv);
		slot_put(d, s);
	}

	tls_pass_domain = d;
	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_scan_control sc = {
			.priority = priority,
			.swappiness = atomic_load(&d->swappiness),
			.context = context,
			.flags = flags,
		};
		struct rcl_lruvec *lv;

		if (!atomic_load_explicit(&s->lv, memory_order_relaxed))
			continue;
		lv = slot_get(s);
		if (lv && s->partition == p) {
			uint64_t size = lruvec_size(lv);

			/* ceil(goal * size / total); the whole goal if alone */
			sc.nr_to_reclaim =
				total ? (uint64_t)(((u128)goal * size + total - 1) /
						   total)
				      : goal;
			tls_pass_lv = lv;
			rcl_scan_lruvec(lv, &sc);
			tls_pass_lv = NULL;
			ps->sc.nr_scanned += sc.nr_scanned;
			ps->sc.nr_reclaimed += sc.nr_reclaimed;
			ps->sc.weight_reclaimed += sc.weight_reclaimed;
			ps->sc.nr_refill += sc.nr_refill;
			ps->sc.nr_rotated += sc.nr_rotated;
			ps->sc.nr_activated += sc.nr_activated;
			ps->sc.nr_deactivated += sc.nr_deactivated;
			ps->sc.last_round_lists = sc.last_round_lists;
		}
		slot_put(d, s);
	}
	/* Slab-like caches feel the same pressure, after the LRUs. */
	rcl_shrinker_registry_shrink(d->reg, p, priority, context, &res);
	tls_pass_domain = pd;
	tls_pass_lv = pl;
	ps->slab_scanned += res.scanned;
	ps->slab_freed += res.freed;
}

static void account_pass(struct rcl_domain *d, const struct pass *ps,
			 bool direct)
{
	vm_add(d, direct ? VM_PGSCAN_DIRECT : VM_PGSCAN_KSWAPD, ps->sc.nr_scanned);
	vm_add(d, direct ? VM_PGSTEAL_DIRECT : VM_PGSTEAL_KSWAPD,
	       ps->sc.nr_reclaimed);
	vm_add(d, VM_PGREFILL, ps->sc.nr_refill);
	vm_add(d, VM_PGACTIVATE, ps->sc.nr_activated);
	vm_add(d, VM_PGDEACTIVATE, ps->sc.nr_deactivated);
	vm_add(d, VM_PGROTATED, ps->sc.nr_rotated);
	vm_add(d, VM_SLABS_SCANNED, ps->slab_scanned);
	vm_add(d, VM_SLABS_FREED, ps->slab_freed);
}

/*
 * do_try_to_free_pages(): priority 12 down to 0 over every partition until
 * @goal objects are freed.  At most 13 passes.
 */
static void direct_reclaim(struct rcl_domain *d, uint64_t goal,
			   uint64_t context, struct rcl_reclaim_result *res)
{
	unsigned flags = RCL_SCAN_DIRECT;
	uint64_t reclaimed = 0;
	int prio;
	unsigned p;

	if (d->flags & RCL_DOMAIN_NONPROPORTIONAL)
		flags |= RCL_SCAN_NONPROPORTIONAL;
	vm_add(d, VM_ALLOCSTALL, 1);
	memset(res, 0, sizeof(*res));
	res->nr_to_reclaim = goal;
	res->priority = RCL_DEF_PRIORITY;
	for (prio = RCL_DEF_PRIORITY; prio >= 0; prio--) {
		struct pass ps = { 0 };

		for (p = 0; p < d->nr_partitions; p++)
			shrink_partition(d, p, prio, goal - RCL_MIN(reclaimed, goal),
					 context, flags, &ps);
		account_pass(d, &ps, true);
		reclaimed += ps.sc.nr_reclaimed;
		res->nr_reclaimed += ps.sc.nr_reclaimed;
		res->weight_reclaimed += ps.sc.weight_reclaimed;
		res->nr_scanned += ps.sc.nr_scanned;
		res->slab_freed += ps.slab_freed;
		res->last_round_lists = ps.sc.last_round_lists;
		res->priority = prio;
		if (reclaimed >= goal)
			break;
	}
	if (res->nr_reclaimed || res->slab_freed) {
		/* Progress revives a hopeless background reclaimer. */
		if (atomic_load(&d->hopeless)) {
			pthread_mutex_lock(&d->lock);
			revive_locked(d);
			pthread_mutex_unlock(&d->lock);
		}
	}
}

RCL_API int rcl_domain_reclaim(struct rcl_domain *d, uint64_t nr_to_reclaim,
			       uint64_t context, struct rcl_reclaim_result *res)
{
	struct rcl_reclaim_result local;

	if (!d || !nr_to_reclaim)
		return -EINVAL;
	if (tls_pass_domain == d)
		return -EDEADLK;
	direct_reclaim(d, nr_to_reclaim, context, res ? res : &local);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The background reclaimer                                                   */
/* ------------------------------------------------------------------------- */

static void wake_reclaimer(struct rcl_domain *d)
{
	/* Lock-free filters: a wakeup is pending, or nobody listens. */
	if (atomic_load(&d->wake_pending) || atomic_load(&d->hopeless))
		return;
	pthread_mutex_lock(&d->lock);
	if (d->running && !d->stop && !atomic_load(&d->wake_pending) &&
	    !atomic_load(&d->hopeless)) {
		atomic_store(&d->wake_pending, true);
		vm_add(d, VM_KSWAPD_WAKEUPS, 1);
		pthread_cond_broadcast(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
}

/*
 * balance_pgdat(): reclaim until headroom is back above high.  Priority
 * starts at 12 and goes down only when a pass scanned less than its goal or
 * freed nothing ("no need to raise the scanning priority if enough pages are
 * already being scanned").  Bounded: at most 13 lowerings and 64 passes.
 */
static void balance(struct rcl_domain *d)
{
	unsigned flags = 0, passes;
	uint64_t freed = 0;
	int prio = RCL_DEF_PRIORITY;

	if (d->flags & RCL_DOMAIN_NONPROPORTIONAL)
		flags |= RCL_SCAN_NONPROPORTIONAL;
	vm_add(d, VM_PAGEOUTRUN, 1);
	for (passes = 0; passes < 64 && prio >= 0; passes++) {
		uint64_t deficit = need(d, atomic_load(&d->whigh));
		uint64_t goal;
		struct pass ps = { 0 };
		unsigned p;

		if (!deficit)
			break;
		goal = goal_objects(d, deficit);
		for (p = 0; p < d->nr_partitions; p++)
			shrink_partition(d, p, prio, goal, RCL_CTX_CAPABLE,
					 flags, &ps);
		account_pass(d, &ps, false);
		freed += ps.sc.nr_reclaimed + ps.slab_freed;
		if (!(ps.sc.nr_reclaimed + ps.slab_freed) ||
		    ps.sc.nr_scanned < goal)
			prio--;
	}

	pthread_mutex_lock(&d->lock);
	if (freed) {
		d->failures = 0;
	} else if (headroom(d) < atomic_load(&d->whigh)) {
		vm_add(d, VM_KSWAPD_FAILURES, 1);
		if (++d->failures >= RCL_MAX_RECLAIM_RETRIES &&
		    !atomic_load(&d->hopeless)) {
			atomic_store(&d->hopeless, true);
			vm_add(d, VM_KSWAPD_HOPELESS, 1);
		}
	}
	pthread_mutex_unlock(&d->lock);
}

static void *reclaimer_main(void *arg)
{
	struct rcl_domain *d = arg;

	tls_reclaimer_of = d;
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		if (!atomic_load(&d->wake_pending)) {
			d->clock->wait(d->clock->ctx, &d->cond, &d->lock,
				       RCL_CLOCK_FOREVER);
			continue;
		}
		atomic_store(&d->wake_pending, false);
		pthread_mutex_unlock(&d->lock);
		balance(d);
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

RCL_API int rcl_domain_reclaimer_start(struct rcl_domain *d)
{
	int err = 0;

	if (!d)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	if (d->running) {
		err = -EBUSY;
	} else {
		d->stop = false;
		if (headroom(d) < atomic_load(&d->wlow)) {
			atomic_store(&d->wake_pending, true);
			vm_add(d, VM_KSWAPD_WAKEUPS, 1);
		}
		if (pthread_create(&d->thread, NULL, reclaimer_main, d) != 0)
			err = -EAGAIN;
		else
			d->running = true;
	}
	pthread_mutex_unlock(&d->lock);
	return err;
}

RCL_API int rcl_domain_reclaimer_stop(struct rcl_domain *d)
{
	pthread_t t;

	if (!d)
		return -EINVAL;
	if (tls_reclaimer_of == d)
		return -EDEADLK;
	pthread_mutex_lock(&d->lock);
	if (!d->running) {
		pthread_mutex_unlock(&d->lock);
		return 0;
	}
	d->stop = true;
	t = d->thread;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(t, NULL);
	pthread_mutex_lock(&d->lock);
	d->running = false;
	atomic_store(&d->wake_pending, false);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

RCL_API int rcl_domain_wakeup(struct rcl_domain *d)
{
	if (!d)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	revive_locked(d);
	pthread_mutex_unlock(&d->lock);
	wake_reclaimer(d);
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
static void drain_all(struct rcl_domain *d)
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

/*
 * Direct reclaim until a charge of @amount would leave at least min of
 * headroom, or until that is hopeless (see CHARGE_RECLAIM_TRIES).
 */
static void charge_reclaim(struct rcl_domain *d, uint64_t amount,
			   uint64_t context)
{
	bool drained = false;
	unsigned tries;

	if (!(context & RCL_CTX_MAY_BLOCK) || tls_pass_domain == d)
		return;
	for (tries = 0; tries < CHARGE_RECLAIM_TRIES; tries++) {
		struct rcl_reclaim_result res;
		uint64_t min = atomic_load(&d->wmin);
		uint64_t deficit = need(d, min + amount < min ? UINT64_MAX
							      : min + amount);

		if (!deficit)
			return;
		direct_reclaim(d, goal_objects(d, deficit), context, &res);
		if (!res.nr_reclaimed && !res.slab_freed) {
			if (!drained) {
				drain_all(d);
				drained = true;
			} else if (others_isolated(d)) {
				sched_yield();
			} else {
				return;
			}
		}
	}
}

RCL_API int rcl_domain_charge(struct rcl_domain *d, uint64_t amount,
			      uint64_t context, uint64_t *overshoot)
{
	unsigned long long u;
	uint64_t budget;

	if (overshoot)
		*overshoot = 0;
	if (!d)
		return -EINVAL;
	budget = atomic_load(&d->budget);
	/* A charge that can never fit is refused without evicting anything. */
	if (d->mode == RCL_CHARGE_STRICT && amount > budget) {
		vm_add(d, VM_CHARGE_FAILURES, 1);
		return -ENOMEM;
	}

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
	do {
		if (u + amount < u)
			return -EOVERFLOW;
		if (d->mode == RCL_CHARGE_STRICT &&
		    u + amount > atomic_load(&d->budget)) {
			vm_add(d, VM_CHARGE_FAILURES, 1);
			return -ENOMEM;
		}
	} while (!atomic_compare_exchange_weak(&d->usage, &u, u + amount));

	if (headroom(d) < atomic_load(&d->wlow)) {
		wake_reclaimer(d);
		/*
		 * Give the background reclaimer the CPU, once.  The kernel's
		 * kswapd gets to run because the allocator's slow path sleeps
		 * and kswapd is a kernel thread; here it is one more runnable
		 * thread among busy ones, and without a yield it waits for a
		 * time slice while the headroom down to min lasts a few
		 * microseconds (rcl-bench stream: 47-51 % of scans done in the
		 * background without the yield, over 99 % with it).
		 */
		if (atomic_load(&d->wake_pending) &&
		    (context & RCL_CTX_MAY_BLOCK) && tls_pass_domain != d &&
		    tls_reclaimer_of != d)
			sched_yield();
	}

	budget = atomic_load(&d->budget);
	u += amount;
	if (u > budget) {
		vm_add(d, VM_CHARGE_OVERSHOOTS, 1);
		if (overshoot)
			*overshoot = u - budget;
	}
	return 0;
}

RCL_API int rcl_domain_uncharge(struct rcl_domain *d, uint64_t amount)
{
	unsigned long long u;

	if (!d)
		return -EINVAL;
	u = atomic_load(&d->usage);
	while (!atomic_compare_exchange_weak(&d->usage, &u,
					     u > amount ? u - amount : 0))
		;
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

RCL_API int rcl_domain_set_budget(struct rcl_domain *d, uint64_t budget)
{
	struct rcl_watermarks wm;
	bool bg;

	if (!d || !budget)
		return -EINVAL;
	derive_watermarks(budget, d->scale, &wm);
	pthread_mutex_lock(&d->lock);
	atomic_store(&d->budget, budget);
	store_watermarks(d, &wm);
	revive_locked(d);
	bg = d->running;
	pthread_mutex_unlock(&d->lock);

	if (headroom(d) < wm.low) {
		if (bg) {
			wake_reclaimer(d);
		} else if (tls_pass_domain != d) {
			struct rcl_reclaim_result res;

			direct_reclaim(d, goal_objects(d, need(d, wm.high)),
				       RCL_CTX_CAPABLE, &res);
		}
	}
	return 0;
}

RCL_API int rcl_domain_watermarks(const struct rcl_domain *d,
				  struct rcl_watermarks *out)
{
	struct rcl_domain *w = (struct rcl_domain *)d;

	if (!d || !out)
		return -EINVAL;
	out->min = atomic_load(&w->wmin);
	out->low = atomic_load(&w->wlow);
	out->high = atomic_load(&w->whigh);
	return 0;
}

RCL_API int rcl_domain_set_watermarks(struct rcl_domain *d,
				      const struct rcl_watermarks *wm)
{
	if (!d || !wm || !(wm->min < wm->low && wm->low < wm->high &&
			   wm->high <= atomic_load(&d->budget)))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	store_watermarks(d, wm);
	revive_locked(d);
	pthread_mutex_unlock(&d->lock);
	if (headroom(d) < wm->low)
		wake_reclaimer(d);
	return 0;
}

RCL_API int rcl_domain_set_swappiness(struct rcl_domain *d, unsigned swappiness)
{
	if (!d || swappiness > RCL_SWAPPINESS_MAX)
		return -EINVAL;
	atomic_store(&d->swappiness, swappiness);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Counters                                                                   */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_domain_vmstat(const struct rcl_domain *d, struct rcl_vmstat *out)
{
	struct rcl_domain *w = (struct rcl_domain *)d;
	uint64_t v[NR_VM_ITEMS];
	unsigned i;

	if (!d || !out)
		return -EINVAL;
	for (i = 0; i < NR_VM_ITEMS; i++)
		v[i] = atomic_load_explicit(&w->vm[i], memory_order_relaxed);
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
	return 0;
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
