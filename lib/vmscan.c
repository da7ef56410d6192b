/* SPDX-License-Identifier: MIT */
/*
 * Reclaim passes over a memory domain, after the kernel's mm/vmscan.c: the
 * proportional pass over one partition's lruvecs and shrinkers
 * (shrink_node()), direct reclaim in the charging thread
 * (do_try_to_free_pages()) and the background reclaimer (kswapd and
 * balance_pgdat()).  The scan of one lruvec, get_scan_count() and
 * shrink_lruvec(), is lib/scan.c's.
 *
 * A pass asks each lruvec of the partition for its share of the goal, in
 * proportion to its size, then walks the partition's shrinkers at the same
 * priority; what they free counts toward the goal (the kernel's
 * reclaim_state), and their walk stops once it is met.  Direct reclaim goes
 * from priority 12 down to 0 over every partition until its goal is freed.
 * The background reclaimer works until the headroom is back above the high
 * watermark, lowers the priority only when a pass scanned less than its goal
 * or freed nothing, and stops trying (hopeless) after RCL_MAX_RECLAIM_RETRIES
 * runs that freed nothing, until something changes (revive_locked()).
 *
 * Locks: a pass holds no domain lock while callbacks run; it pins each slot
 * it reads (slot_get()/slot_put()), and the lruvec locks are taken inside
 * lib/lruvec.c.  The domain mutex guards the background reclaimer's state
 * (running, stop, failures, hopeless) and is the mutex of its condition
 * variable.  The charge path takes it only to wake the reclaimer, and only
 * when no wakeup is pending already.  Threads: direct reclaim runs in the
 * charging thread (rcl_domain_charge(), rcl_domain_set_budget()) or in the
 * caller of rcl_domain_reclaim(); the background reclaimer is one thread per
 * domain (rcl_domain_reclaimer_start()).  Per-thread words:
 * rcl__tls_pass_domain marks a thread inside a pass of a domain (its
 * callbacks' reclaim and detach of that domain return -EDEADLK, their
 * charges do not reclaim), rcl__tls_pass_uncharged counts what those
 * callbacks uncharged, and rcl__tls_reclaimer_of marks the reclaimer.
 *
 * Calls between modules, none of them circular through this file:
 * - domain.c -> vmscan.c: the charge path reclaims directly and wakes the
 *   reclaimer (rcl__domain_direct_reclaim(), rcl__domain_goal_objects(),
 *   rcl__domain_wake_reclaimer()), as the kernel's allocator slow path calls
 *   try_to_free_pages() and wakeup_kswapd().  The other way this file uses
 *   only the static inline helpers of lib/domain_internal.h (slot pins,
 *   headroom, need, revive_locked): that is what breaks the circle.
 * - vmscan.c -> flusher.c: flush requests and the writeback throttle, as
 *   shrink_node() calls wakeup_flusher_threads() and reclaim_throttle();
 *   flusher.c calls nothing here (it reads rcl__tls_pass_domain).
 * - vmscan.c -> scan.c and shrinker.c: rcl_scan_lruvec() and
 *   rcl__shrinker_registry_shrink_goal(), which do not call back.
 */
#include "domain_internal.h"
#include "probes.h"
#include "refusal.h"

#include <errno.h>
#include <string.h>

#include <reclaim/scan.h>

__extension__ typedef unsigned __int128 u128;

/* ------------------------------------------------------------------------- */
/* Per-thread state                                                           */
/* ------------------------------------------------------------------------- */

RCL__TLS const struct rcl_domain *rcl__tls_pass_domain;
/* The lruvec that this thread's pass is scanning, if any. */
static RCL__TLS const struct rcl_lruvec *tls_pass_lv;
RCL__TLS uint64_t rcl__tls_pass_uncharged;
RCL__TLS const struct rcl__pass_frame *rcl__tls_pass_frames;
RCL__TLS const struct rcl__pin_frame *rcl__tls_pin_frames;
RCL__TLS const struct rcl_domain *rcl__tls_reclaimer_of;

bool rcl__in_holding_callback(void)
{
	return rcl__tls_pass_frames || rcl__tls_evict_frames ||
	       rcl__tls_writing || rcl__tls_writing_of;
}

/* ------------------------------------------------------------------------- */
/* Reclaim goals                                                              */
/* ------------------------------------------------------------------------- */

/* Add the objects and weight on @d's evictable lists to @objs and @weight. */
static void domain_weight(struct rcl_domain *d, uint64_t *objs,
			  uint64_t *weight)
{
	unsigned i, high = atomic_load(&d->high);

	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_lruvec *lv = slot_get(s);
		unsigned l;

		if (lv) {
			for (l = 0; l < RCL_LRU_UNEVICTABLE; l++) {
				uint64_t w;

				*objs += rcl_lruvec_count(lv, l, &w);
				*weight += w;
			}
		}
		slot_put(d, s);
	}
}

/*
 * Average object weight over the lruvecs attached to @target's subtree
 * (>= 1).  The caller holds the tree lock for reading.
 */
static uint64_t avg_weight(struct rcl_domain *target)
{
	uint64_t objs = 0, weight = 0;
	struct rcl_domain *d;

	for (d = target; d; d = tree_next(target, d))
		domain_weight(d, &objs, &weight);
	return objs && weight >= objs ? weight / objs : 1;
}

/*
 * Objects to reclaim to free @deficit units of weight, at an average object
 * weight of @w: at least 32.
 */
static uint64_t goal_objects_w(uint64_t deficit, uint64_t w)
{
	uint64_t n = deficit / w + (deficit % w != 0);

	return RCL_MAX(n, (uint64_t)RCL_SCAN_CHUNK);
}

uint64_t rcl__domain_goal_objects(struct rcl_domain *d, uint64_t deficit)
{
	uint64_t w;

	pthread_rwlock_rdlock(&d->root->tree_lock);
	w = avg_weight(d);
	pthread_rwlock_unlock(&d->root->tree_lock);
	return goal_objects_w(deficit, w);
}

/* ------------------------------------------------------------------------- */
/* Protection (memcg's memory.min and memory.low)                            */
/* ------------------------------------------------------------------------- */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/*
 * The kernel's effective_protection(): of @setting, what a domain of
 * @usage may keep, given its parent's usage and effective protection and
 * what all the parent's children claim (@siblings: the sum of
 * min(usage, setting) over them).  When they claim more than the parent
 * has, each gets its claim scaled down to the parent's share; with
 * @recursive, what they leave unclaimed is shared by all of them in
 * proportion to their unprotected usage.
 */
static uint64_t effective_protection(uint64_t usage, uint64_t parent_usage,
				     uint64_t setting, uint64_t parent_eff,
				     uint64_t siblings, bool recursive)
{
	uint64_t claimed = RCL_MIN(usage, setting), ep = claimed;

	if (siblings > parent_eff)
		return (uint64_t)((u128)claimed * parent_eff / siblings);
	if (recursive && parent_eff > siblings && parent_usage > siblings &&
	    usage > claimed) {
		u128 share = (u128)(parent_eff - siblings) * (usage - claimed) /
			     (parent_usage - siblings);

		ep += (uint64_t)RCL_MIN(share, (u128)(UINT64_MAX - ep));
	}
	return ep;
}

/*
 * A walk over a subtree, parent first, that computes each domain's
 * effective protection relative to the walk's target, as
 * mem_cgroup_calculate_protection() does on the way down.  The values of
 * the domains above the current one are kept on a stack indexed by depth,
 * in the walk itself, so that two walks with different targets never see
 * each other's numbers.  The caller holds the tree lock for reading.
 */
struct prot_walk {
	const struct rcl_domain *target;
	bool recursive;
	/* By depth: effective min and low, and the children's claims. */
	uint64_t emin[RCL_DOMAIN_MAX_DEPTH + 1], elow[RCL_DOMAIN_MAX_DEPTH + 1];
	uint64_t cmin[RCL_DOMAIN_MAX_DEPTH + 1], clow[RCL_DOMAIN_MAX_DEPTH + 1];
};

/* @d's effective protection, then what its children claim (for theirs). */
static void prot_visit(struct prot_walk *w, struct rcl_domain *d,
		       uint64_t *usage, uint64_t *emin, uint64_t *elow)
{
	struct rcl_domain *p = d->parent, *c;
	uint64_t u = atomic_load(&d->usage), smin = 0, slow = 0;

	*usage = u;
	*emin = *elow = 0;
	if (d == w->target) {
		/* The target's own protection does not count. */
	} else if (p == w->target) {
		/* A child of the target: its setting (also with no usage). */
		*emin = atomic_load(&d->protect_min);
		*elow = atomic_load(&d->protect_low);
	} else if (u) {
		uint64_t pu = atomic_load(&p->usage);
		unsigned k = p->depth;

		*emin = effective_protection(u, pu, atomic_load(&d->protect_min),
					     w->emin[k], w->cmin[k], w->recursive);
		*elow = effective_protection(u, pu, atomic_load(&d->protect_low),
					     w->elow[k], w->clow[k], w->recursive);
	}
	for (c = d->children; c; c = c->sibling) {
		uint64_t cu = atomic_load(&c->usage);

		smin = sat_add(smin, RCL_MIN(cu, (uint64_t)atomic_load(
							   &c->protect_min)));
		slow = sat_add(slow, RCL_MIN(cu, (uint64_t)atomic_load(
							   &c->protect_low)));
	}
	w->emin[d->depth] = *emin;
	w->elow[d->depth] = *elow;
	w->cmin[d->depth] = smin;
	w->clow[d->depth] = slow;
}

RCL_API int rcl_domain_effective_protection(const struct rcl_domain *target,
					    const struct rcl_domain *d,
					    uint64_t *emin, uint64_t *elow)
{
	struct rcl_domain *path[RCL_DOMAIN_MAX_DEPTH], *a;
	struct prot_walk w;
	uint64_t u, mn = 0, lw = 0;
	unsigned n = 0;

	if (!target || !d)
		return -EINVAL;
	for (a = (struct rcl_domain *)d; a != target; a = a->parent) {
		if (!a->parent)
			return RCL__REFUSE(-EINVAL, "the target is neither the domain nor one of its ancestors");
		path[n++] = a;
	}
	w.target = target;
	w.recursive = target->root->recursive_prot;
	pthread_rwlock_rdlock(&target->root->tree_lock);
	prot_visit(&w, (struct rcl_domain *)target, &u, &mn, &lw);
	while (n)
		prot_visit(&w, path[--n], &u, &mn, &lw);
	pthread_rwlock_unlock(&target->root->tree_lock);
	if (emin)
		*emin = mn;
	if (elow)
		*elow = lw;
	return 0;
}

/*
 * What a sweep does with one domain (shrink_node_memcgs()): skip it
 * (below its min; below its low, unless the sweep reclaims low), or scan it
 * with its lists scaled by @prot.
 */
enum visit { SKIP, SKIP_LOW, SCAN, SCAN_LOW };

static enum visit decide(struct prot_walk *w, struct rcl_domain *d,
			 bool low_reclaim, bool *low_used, uint64_t *prot,
			 uint64_t *usage)
{
	uint64_t emin, elow;

	prot_visit(w, d, usage, &emin, &elow);
	*prot = 0;
	if (d == w->target)
		return SCAN;
	if (*usage <= emin)
		return SKIP;
	if (*usage <= elow) {
		if (!low_reclaim)
			return SKIP_LOW;
		*prot = emin;
		return SCAN_LOW;
	}
	/* Scaled by low while low is honoured: worth a retry without it. */
	if (!low_reclaim && elow > emin) {
		*prot = elow;
		*low_used = true;
	} else {
		*prot = emin;
	}
	return SCAN;
}

/* ------------------------------------------------------------------------- */
/* Reclaim passes                                                             */
/* ------------------------------------------------------------------------- */

struct pass {
	struct rcl_scan_control sc;	/* summed over lruvecs */
	uint64_t slab_scanned, slab_freed;
	/*
	 * Shrinker progress toward the goal: the weight their callbacks
	 * uncharged from the domain on this thread, plus what they reported
	 * (sc->weight_freed), in objects of @avg_w (>= 1) each.
	 */
	uint64_t avg_w;
	uint64_t slab_weight;
	bool scanned;		/* some lruvec was scanned (last_round_lists) */
};

/* Add the figures of @b, one domain's call, to @a, its sweep's. */
static void pass_add(struct pass *a, const struct pass *b)
{
	a->sc.nr_taken += b->sc.nr_taken;
	a->sc.nr_dirty += b->sc.nr_dirty;
	a->sc.nr_unqueued_dirty += b->sc.nr_unqueued_dirty;
	a->sc.nr_writeback += b->sc.nr_writeback;
	a->sc.nr_immediate += b->sc.nr_immediate;
	a->sc.nr_scanned += b->sc.nr_scanned;
	a->sc.nr_reclaimed += b->sc.nr_reclaimed;
	a->sc.weight_reclaimed += b->sc.weight_reclaimed;
	a->sc.nr_refill += b->sc.nr_refill;
	a->sc.nr_rotated += b->sc.nr_rotated;
	a->sc.nr_activated += b->sc.nr_activated;
	a->sc.nr_deactivated += b->sc.nr_deactivated;
	if (b->scanned) {
		a->sc.last_round_lists = b->sc.last_round_lists;
		a->scanned = true;
	}
	a->slab_scanned += b->slab_scanned;
	a->slab_freed += b->slab_freed;
	a->slab_weight += b->slab_weight;
}

/* Shrinker progress of pass @ps, in objects. */
static uint64_t slab_objects(const struct pass *ps)
{
	return ps->slab_weight / ps->avg_w;
}

/*
 * The shrinker walk's goal (struct rcl__shrink_goal): enough once the
 * callbacks have uncharged or reported @need units of weight since @start.
 * With @stop false (the LRUs met the pass's goal already) it only counts, so
 * that the shrinkers feel the priority's full pressure, as the LRUs did.
 */
struct slab_goal {
	uint64_t start;		/* rcl__tls_pass_uncharged before the walk */
	uint64_t reported;	/* sum of sc->weight_freed */
	uint64_t need;
	bool stop;
};

static uint64_t slab_goal_weight(const struct slab_goal *g)
{
	uint64_t w = (rcl__tls_pass_uncharged - g->start) + g->reported;

	return w < g->reported ? UINT64_MAX : w;
}

static bool slab_goal_enough(void *arg, uint64_t reported)
{
	struct slab_goal *g = arg;

	g->reported = g->reported + reported < g->reported ? UINT64_MAX
							   : g->reported + reported;
	return g->stop && slab_goal_weight(g) >= g->need;
}

/*
 * Objects on an lruvec's evictable lists, each list scaled by a domain's
 * protection @prot at usage @usage (unscaled when @prot is 0).  Only the
 * lists of its types, those scan_targets() scans: scaled, an absent list
 * would count RCL_SCAN_CHUNK objects.
 */
static uint64_t lruvec_size(const struct rcl_lruvec *lv, uint64_t prot,
			    uint64_t usage)
{
	uint64_t n = 0;
	unsigned l;

	for (l = 0; l < 2 * lv->__nr_types; l++)
		n += rcl__protected_size(rcl_lruvec_count(lv, l, NULL), prot,
					 usage);
	return n;
}

/* The (scaled) objects of @d's lruvecs in partition @p. */
static uint64_t partition_size(struct rcl_domain *d, unsigned p, uint64_t prot,
			       uint64_t usage)
{
	unsigned i, high = atomic_load(&d->high);
	uint64_t total = 0;

	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_lruvec *lv;

		if (!atomic_load_explicit(&s->lv, memory_order_relaxed))
			continue;
		lv = slot_get(s);
		if (lv && s->partition == p)
			total += lruvec_size(lv, prot, usage);
		slot_put(d, s);
	}
	return total;
}

/*
 * shrink_node() for one domain of a sweep: every lruvec of @d in partition
 * @p, then @d's shrinkers of @p at the same priority.  Each lruvec is asked
 * for its share of the goal, in proportion to its (protection-scaled) size
 * among the @total of every lruvec the sweep visits in @p, so that a goal
 * met early by one lruvec does not spare the others: lruvecs are scanned
 * in proportion to their sizes, as the lists within one lruvec are.  @ps
 * receives this call's own figures; @before holds those of the sweep's
 * earlier calls at this priority, for the shrinkers' stop.  The whole pass,
 * shrinkers included, runs with this thread marked as inside a pass of @d.
 * Returns true when a batch was all under writeback and this thread may
 * wait for it: sweep() then throttles once for the partition.
 */
static bool shrink_partition(struct rcl_domain *d, unsigned p, int priority,
			     uint64_t goal, uint64_t total, uint64_t prot,
			     uint64_t usage, uint64_t context, unsigned flags,
			     struct pass *ps, const struct pass *before)
{
	const struct rcl_domain *pd = rcl__tls_pass_domain;
	const struct rcl_lruvec *pl = tls_pass_lv;
	unsigned i, high = atomic_load(&d->high);
	struct rcl_shrink_result res = { 0 };
	bool throttle = false;	/* a batch was all under writeback */

	rcl__tls_pass_domain = d;
	for (i = 0; i < high; i++) {
		struct att_slot *s = &d->slots[i];
		struct rcl_scan_control sc = {
			.priority = priority,
			.swappiness = atomic_load(&d->swappiness),
			.context = context,
			.flags = flags,
		};
		struct rcl__pin_frame pin = { s, rcl__tls_pin_frames };
		struct rcl_lruvec *lv;

		if (!atomic_load_explicit(&s->lv, memory_order_relaxed))
			continue;
		/*
		 * The pin is held across callbacks until slot_put(): the
		 * scan's evict callbacks and the flusher's wakeup of a flush
		 * request below.  A fork() from one of them gives the child
		 * this pin (all_domains_child()).
		 */
		lv = slot_get(s);
		rcl__tls_pin_frames = &pin;
		if (lv && s->partition == p) {
			uint64_t size = lruvec_size(lv, prot, usage);

			/* ceil(goal * size / total); the whole goal if alone */
			sc.nr_to_reclaim =
				total ? (uint64_t)(((u128)goal * size + total - 1) /
						   total)
				      : goal;
			tls_pass_lv = lv;
			rcl__scan_lruvec_protected(lv, &sc, prot, usage);
			tls_pass_lv = NULL;
			ps->sc.nr_taken += sc.nr_taken;
			ps->sc.nr_dirty += sc.nr_dirty;
			ps->sc.nr_unqueued_dirty += sc.nr_unqueued_dirty;
			ps->sc.nr_writeback += sc.nr_writeback;
			ps->sc.nr_immediate += sc.nr_immediate;
			if (flags & RCL_SCAN_WRITE_DIRTY) {
				/* The baseline: the callback wrote them. */
				vm_add(d, VM_WRITES_FROM_RECLAIM,
				       sc.nr_unqueued_dirty);
			} else if (sc.nr_dirty_batches) {
				/*
				 * A batch was all dirty and unqueued: LRU aging
				 * outstrips writeback.  Wake the flusher.
				 */
				uint64_t nr = 0;

				if (d->flush_policy == RCL_FLUSH_PROPORTIONAL) {
					/* ceil(goal x dirty / taken), in 128 bits */
					u128 q = ((u128)sc.nr_to_reclaim *
							  sc.nr_unqueued_dirty +
						  sc.nr_taken - 1) /
						 RCL_MAX(sc.nr_taken, 1);

					nr = q > UINT64_MAX ? UINT64_MAX
							    : (uint64_t)q;
					nr = RCL_MAX(sc.nr_unqueued_dirty, nr);
				}
				rcl__domain_flush_request(d, nr,
							  RCL_FLUSH_VMSCAN);
			}
			if (sc.nr_writeback_batches)
				throttle = true;
			ps->sc.nr_scanned += sc.nr_scanned;
			ps->sc.nr_reclaimed += sc.nr_reclaimed;
			ps->sc.weight_reclaimed += sc.weight_reclaimed;
			ps->sc.nr_refill += sc.nr_refill;
			ps->sc.nr_rotated += sc.nr_rotated;
			ps->sc.nr_activated += sc.nr_activated;
			ps->sc.nr_deactivated += sc.nr_deactivated;
			ps->sc.last_round_lists = sc.last_round_lists;
			ps->scanned = true;
		}
		rcl__tls_pin_frames = pin.prev;
		slot_put(d, s);
	}
	/*
	 * A batch all under writeback: the caller waits for writeback to make
	 * progress (see sweep()).  Not the threads that do the writing: the
	 * flusher, and a write callback of rcl_domain_writeback_all().
	 */
	throttle = throttle && (context & RCL_CTX_MAY_BLOCK) &&
		   rcl__tls_flusher_of != d && rcl__tls_writing_of != d;
	/*
	 * Slab-like caches feel the same pressure, after the LRUs.  What
	 * they free counts toward the goal (the kernel's reclaim_state): if
	 * the LRUs left part of it, the walk stops once that part is freed,
	 * rather than emptying every shrinker's cache at priority 0.
	 */
	{
		uint64_t got = before->sc.nr_reclaimed + ps->sc.nr_reclaimed +
			       (before->slab_weight + ps->slab_weight) /
				       ps->avg_w;
		struct slab_goal g = { .start = rcl__tls_pass_uncharged };
		struct rcl__shrink_goal hook = { slab_goal_enough, &g, false };

		if (got < goal) {
			g.stop = true;
			g.need = goal - got > UINT64_MAX / ps->avg_w
					 ? UINT64_MAX
					 : (goal - got) * ps->avg_w;
		}
		rcl__shrinker_registry_shrink_goal(d->reg, p, priority, context,
						   &res, &hook);
		ps->slab_weight += slab_goal_weight(&g);
	}
	rcl__tls_pass_domain = pd;
	tls_pass_lv = pl;
	ps->slab_scanned += res.scanned;
	ps->slab_freed += res.freed;
	return throttle;
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
	vm_add(d, VM_NR_DIRTY_SCANNED, ps->sc.nr_dirty);
	vm_add(d, VM_NR_UNQUEUED_DIRTY, ps->sc.nr_unqueued_dirty);
	vm_add(d, VM_NR_WRITEBACK_SCANNED, ps->sc.nr_writeback);
	vm_add(d, VM_NR_IMMEDIATE, ps->sc.nr_immediate);
}

/* The scan flags of @d's own lruvecs, on top of @base. */
static unsigned domain_flags(const struct rcl_domain *d, unsigned base)
{
	if (d->flags & RCL_DOMAIN_NONPROPORTIONAL)
		base |= RCL_SCAN_NONPROPORTIONAL;
	if (d->flags & RCL_DOMAIN_RECLAIM_WRITES)
		base |= RCL_SCAN_WRITE_DIRTY;
	return base;
}

/*
 * One priority over a subtree (shrink_node_memcgs(), for every partition):
 * each domain is skipped or scanned as decide() says, its lruvecs' share
 * of @goal taken from the protection-scaled sizes of all the lruvecs the
 * sweep scans in that partition.  A domain's figures are counted in its own
 * counters; @ps, whose avg_w the caller sets, receives the sums.  The
 * caller holds the tree lock for reading.
 */
struct sweep {
	struct rcl_domain *target;
	uint64_t context;
	unsigned flags;		/* RCL_SCAN_DIRECT or 0 */
	bool low_reclaim;	/* reclaim below low too (memcg_low_reclaim) */
	bool low_skipped;	/* out: low protection held something back */
};

static void sweep(struct sweep *sw, int prio, uint64_t goal, struct pass *ps)
{
	struct rcl_domain *t = sw->target, *d;
	struct prot_walk w = { .target = t, .recursive = t->root->recursive_prot };
	bool direct = sw->flags & RCL_SCAN_DIRECT;
	unsigned p;

	for (p = 0; p < t->nr_partitions; p++) {
		struct rcl_domain *throttle = NULL;
		uint64_t total = 0, prot, usage;
		bool low_used = false;
		enum visit v;

		for (d = t; d; d = tree_next(t, d)) {
			v = decide(&w, d, sw->low_reclaim, &low_used, &prot,
				   &usage);
			if (v == SCAN || v == SCAN_LOW)
				total += partition_size(d, p, prot, usage);
		}
		for (d = t; d; d = tree_next(t, d)) {
			struct pass pd = { .avg_w = ps->avg_w };

			v = decide(&w, d, sw->low_reclaim, &low_used, &prot,
				   &usage);
			if (v == SKIP_LOW)
				sw->low_skipped = true;
			if (v == SKIP || v == SKIP_LOW)
				continue;
			if (v == SCAN_LOW && p == 0)
				ev_add(d, EV_LOW, 1);
			if (shrink_partition(d, p, prio, goal, total, prot,
					     usage, sw->context,
					     domain_flags(d, sw->flags), &pd,
					     ps) &&
			    !throttle)
				throttle = d;
			account_pass(d, &pd, direct);
			pass_add(ps, &pd);
		}
		/*
		 * A batch all under writeback: wait for writeback to make
		 * progress once for the pass over this partition's lruvecs,
		 * in every domain of the subtree (the kernel's
		 * reclaim_throttle() in shrink_node(), after
		 * shrink_node_memcgs()), not once per lruvec or per domain (up
		 * to 13 x 100 ms a charge for each), with no slot pinned, so
		 * that a detach does not wait behind it.  The wait is on the
		 * writeback of the first domain whose batch asked for it.
		 */
		if (throttle)
			rcl__domain_throttle_writeback(throttle);
		if (low_used)
			sw->low_skipped = true;
	}
}

/*
 * do_try_to_free_pages(): priority 12 down to 0 over @d's subtree until
 * @goal objects are freed; if nothing was freed while low protection held
 * domains back, once more with them (memcg_low_reclaim).  At most 26
 * sweeps.
 */
void rcl__domain_direct_reclaim(struct rcl_domain *d, uint64_t goal,
				uint64_t context,
				struct rcl_reclaim_result *res)
{
	struct rcl__pass_frame frame = { .tree = d->root,
					  .prev = rcl__tls_pass_frames };
	struct sweep sw = {
		.target = d,
		.context = context,
		.flags = RCL_SCAN_DIRECT,
	};
	uint64_t reclaimed = 0, w;
	int prio, cs;

	/* What threads hold in stocks is memory this reclaim need not free. */
	rcl__domain_drain_stocks(d);
	vm_add(d, VM_ALLOCSTALL, 1);
	/* The pass holds the tree's lock and slot pins (internal.h). */
	cs = rcl__cancel_off();
	RCL_PROBE2(mm_vmscan_direct_reclaim_begin, d, goal);
	memset(res, 0, sizeof(*res));
	res->nr_to_reclaim = goal;
	res->priority = RCL_DEF_PRIORITY;
	pthread_rwlock_rdlock(&d->root->tree_lock);
	rcl__tls_pass_frames = &frame;
	w = avg_weight(d);
retry:
	for (prio = RCL_DEF_PRIORITY; prio >= 0; prio--) {
		struct pass ps = { .avg_w = w };

		sweep(&sw, prio, goal - RCL_MIN(reclaimed, goal), &ps);
		reclaimed += ps.sc.nr_reclaimed + slab_objects(&ps);
		res->nr_reclaimed += ps.sc.nr_reclaimed;
		res->weight_reclaimed += ps.sc.weight_reclaimed;
		res->nr_scanned += ps.sc.nr_scanned;
		res->slab_freed += ps.slab_freed;
		res->slab_weight += ps.slab_weight;
		res->slab_reclaimed += slab_objects(&ps);
		res->last_round_lists = ps.sc.last_round_lists;
		res->priority = prio;
		if (reclaimed >= goal)
			break;
	}
	if (!res->nr_reclaimed && !res->slab_freed && sw.low_skipped &&
	    !sw.low_reclaim) {
		sw.low_reclaim = true;
		sw.low_skipped = false;
		goto retry;
	}
	rcl__tls_pass_frames = frame.prev;
	pthread_rwlock_unlock(&d->root->tree_lock);
	rcl__cancel_restore(cs);
	RCL_PROBE4(mm_vmscan_direct_reclaim_end, d, res->nr_reclaimed,
		   res->slab_reclaimed, res->priority);
	if (res->nr_reclaimed || res->slab_freed) {
		/* Progress revives a hopeless background reclaimer. */
		if (atomic_load(&d->root->hopeless)) {
			pthread_mutex_lock(&d->root->lock);
			revive_locked(d->root);
			pthread_mutex_unlock(&d->root->lock);
		}
	}
}

/*
 * Is the calling thread inside an evict callback (at any depth of nested
 * shrinks) of an lruvec attached to @d's subtree?
 */
static bool evicting_in_subtree(const struct rcl_domain *d)
{
	const struct rcl__evict_frame *f;

	for (f = rcl__tls_evict_frames; f; f = f->prev)
		if (in_subtree(d, atomic_load_explicit(&f->lv->__domain,
						       memory_order_relaxed)))
			return true;
	return false;
}

RCL_API int rcl_domain_reclaim(struct rcl_domain *d, uint64_t nr_to_reclaim,
			       uint64_t context, struct rcl_reclaim_result *res)
{
	struct rcl_reclaim_result local;

	if (!d || !nr_to_reclaim)
		return -EINVAL;
	/*
	 * Within a pass of @d, and from the evict callback of an lruvec
	 * attached to @d however it is being shrunk: the reclaim would
	 * shrink that lruvec again from inside its own callback.
	 */
	if (in_tree_pass(d) || evicting_in_subtree(d))
		return RCL__REFUSE(-EDEADLK, "called from a callback of a reclaim pass of this domain's tree, or from an evict callback of an lruvec of its subtree: it would reclaim recursively");
	rcl__domain_direct_reclaim(d, nr_to_reclaim, context,
				   res ? res : &local);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The background reclaimer                                                   */
/* ------------------------------------------------------------------------- */

/* Returns true if this call woke the reclaimer (it was not pending). */
bool rcl__domain_wake_reclaimer(struct rcl_domain *d)
{
	bool woke = false;

	/* Lock-free filters: a wakeup is pending, or nobody listens. */
	if (atomic_load(&d->wake_pending) || atomic_load(&d->hopeless))
		return false;
	pthread_mutex_lock(&d->lock);
	reclaimer_cond_after_fork_locked(d);
	if (d->running && !d->stop && !atomic_load(&d->wake_pending) &&
	    !atomic_load(&d->hopeless)) {
		atomic_store(&d->wake_pending, true);
		vm_add(d, VM_KSWAPD_WAKEUPS, 1);
		pthread_cond_broadcast(&d->cond);
		woke = true;
	}
	pthread_mutex_unlock(&d->lock);
	return woke;
}

/*
 * balance_pgdat(): reclaim until headroom is back above high.  Priority
 * starts at 12 and goes down only when a pass scanned less than its goal or
 * freed nothing ("no need to raise the scanning priority if enough pages are
 * already being scanned").  Bounded: at most 13 lowerings and 64 passes.
 * Returns the objects freed (LRU and shrinkers).
 */
static uint64_t balance(struct rcl_domain *d)
{
	struct sweep sw = { .target = d, .context = RCL_CTX_CAPABLE };
	struct rcl__pass_frame frame = { .tree = d,
					  .prev = rcl__tls_pass_frames };
	uint64_t freed = 0;
	int prio = RCL_DEF_PRIORITY;
	unsigned passes;

	vm_add(d, VM_PAGEOUTRUN, 1);
	rcl__domain_drain_stocks(d);
	for (passes = 0; passes < 64 && prio >= 0; passes++) {
		uint64_t deficit = need(d, atomic_load(&d->whigh));
		uint64_t goal;
		struct pass ps = { 0 };

		if (!deficit)
			break;
		pthread_rwlock_rdlock(&d->tree_lock);
		rcl__tls_pass_frames = &frame;
		ps.avg_w = avg_weight(d);
		goal = goal_objects_w(deficit, ps.avg_w);
		sw.low_skipped = false;
		sweep(&sw, prio, goal, &ps);
		rcl__tls_pass_frames = frame.prev;
		pthread_rwlock_unlock(&d->tree_lock);
		freed += ps.sc.nr_reclaimed + ps.slab_freed;
		if (!(ps.sc.nr_reclaimed + ps.slab_freed)) {
			/* Held back by low protection: include it next. */
			if (sw.low_skipped && !sw.low_reclaim) {
				sw.low_reclaim = true;
				continue;
			}
			prio--;
		} else if (ps.sc.nr_scanned < goal) {
			prio--;
		}
	}

	pthread_mutex_lock(&d->lock);
	if (freed) {
		/* Progress, also of a run that a wakeup posted while hopeless
		 * started: the domain listens to charges again. */
		revive_locked(d);
	} else if (headroom(d) < atomic_load(&d->whigh)) {
		vm_add(d, VM_KSWAPD_FAILURES, 1);
		if (++d->failures >= RCL_MAX_RECLAIM_RETRIES &&
		    !atomic_load(&d->hopeless)) {
			atomic_store(&d->hopeless, true);
			vm_add(d, VM_KSWAPD_HOPELESS, 1);
		}
	}
	pthread_mutex_unlock(&d->lock);
	return freed;
}

static void *reclaimer_main(void *arg)
{
	struct rcl_domain *d = arg;

	rcl__tls_reclaimer_of = d;
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		if (!atomic_load(&d->wake_pending)) {
			rcl__clock_wait(d->clock, &d->cond, &d->lock,
				        RCL_CLOCK_FOREVER);
			continue;
		}
		atomic_store(&d->wake_pending, false);
		pthread_mutex_unlock(&d->lock);
		RCL_PROBE2(mm_vmscan_kswapd_wake, d, headroom(d));
		{
			uint64_t freed = balance(d);

			RCL_PROBE2(mm_vmscan_kswapd_sleep, d, freed);
			(void)freed;
		}
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
	if (d->parent)
		return RCL__REFUSE(-EINVAL, "a child domain has no background reclaimer: its root's serves the whole tree");
	pthread_mutex_lock(&d->lock);
	reclaimer_cond_after_fork_locked(d);
	if (d->running) {
		err = RCL__REFUSE(-EBUSY, "the background reclaimer runs already");
	} else {
		d->stop = false;
		/*
		 * The thread waits for this lock before it looks at anything,
		 * so the wakeup can be posted after it exists: a start that
		 * fails leaves no wakeup pending (and counts none).
		 */
		if (rcl__thread_create(&d->thread, reclaimer_main, d) != 0) {
			err = -EAGAIN;
		} else {
			d->running = true;
			d->pid = getpid();
			if (headroom(d) < atomic_load(&d->wlow)) {
				atomic_store(&d->wake_pending, true);
				vm_add(d, VM_KSWAPD_WAKEUPS, 1);
			}
		}
	}
	pthread_mutex_unlock(&d->lock);
	return err;
}

/*
 * One stopper joins the thread; a concurrent one (rcl_domain_free() racing
 * an explicit stop) waits on cond until the joiner has cleared running:
 * joining a thread twice is undefined (glibc's second join never returns).
 * The lock is not held across the join: the thread's callbacks may take it
 * (rcl_domain_reclaimer_start() from one gets -EBUSY, running is still set).
 */
RCL_API int rcl_domain_reclaimer_stop(struct rcl_domain *d)
{
	/* Its join is not a cancellation point (lib/internal.h). */
	RCL__CANCEL_OFF_SCOPE();
	pthread_t t;

	if (!d)
		return -EINVAL;
	if (rcl__tls_reclaimer_of == d)
		return RCL__REFUSE(-EDEADLK, "called from the reclaimer thread's own callbacks: it would join itself");
	pthread_mutex_lock(&d->lock);
	reclaimer_cond_after_fork_locked(d);
	if (!d->running) {
		pthread_mutex_unlock(&d->lock);
		return 0;
	}
	if (d->stop) {
		/*
		 * Another stopper joins: wait until it is done (or until a
		 * start after it made a new thread: this stop came first).
		 */
		while (d->running && d->stop)
			rcl__clock_wait(d->clock, &d->cond, &d->lock,
				        RCL_CLOCK_FOREVER);
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
	pthread_cond_broadcast(&d->cond);	/* other stoppers */
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
	rcl__domain_wake_reclaimer(d);
	return 0;
}
