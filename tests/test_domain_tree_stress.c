/* SPDX-License-Identifier: MIT */
/*
 * Concurrency test of trees of domains (suite 'concurrency': the TSan job
 * runs it; bounded, so it is in the default setup too).
 *
 * A tree of depth 3: a root R, children A and B, grandchildren A1, A2
 * (no limit of its own) and B1 (soft mode); every other level is strict.
 * Each domain has one lruvec.  Three workers create objects charged to a
 * domain of the tree (a leaf mostly, an inner node sometimes) and added to
 * that domain's lruvec, delete their own objects, touch them, and charge
 * and uncharge "blobs" (memory outside the lruvecs) through any domain;
 * half their charges may block and reclaim directly.  Beside them:
 *
 * - a control thread changes the budgets of A, B, A1 and B1 (each between
 *   two bounds) and the limits and protection of every child with
 *   rcl_domain_set_limits(), and the root's limit_high; after setting a
 *   child's protection it checks rcl_domain_effective_protection() against
 *   the root (a child of the target gets its setting) and that the root
 *   refuses protection;
 * - a reclaim thread runs rcl_domain_reclaim() on R, A and B (and the
 *   leaves), and the root's background reclaimer serves the whole tree;
 * - a sampling thread reads every level's usage, budget and events.
 *
 * Objects have one owner (the worker) and are taken by CAS on their state:
 * the evict callback frees only a live object, which its owner cannot be
 * deleting at the same time, and uncharges it from the domain it was
 * charged to.  Every charge and uncharge is counted per domain.
 *
 * Checked while it runs: no strict level is ever seen above its largest
 * budget, and, between two budget changes, a strict level once seen
 * within its budget is never seen above it (a budget change waits until
 * every worker has finished the call it was in, so no charge decided
 * against the old budget lands after it); events never decrease, own and
 * subtree.  Checked at the end (quiescent): every level's usage is exactly
 * the sum, over its subtree, of what was charged through each domain less
 * what was uncharged through it, and equals the live objects' weights plus
 * the blobs; a subtree's events are its own plus its children's subtrees,
 * and rcl_domain_vmstat_subtree() is the sum of rcl_domain_vmstat() over
 * the subtree.  The second test gives the tree charge stocks (the root's
 * charge_stock, which serves every level): every level is exact once
 * rcl_domain_drain_stocks() of the root has taken back its subtree's.
 * Iterations are bounded (RCL_STRESS_OPS per worker); nothing depends on
 * the wall clock.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "lru_check.h"
#include "test_util.h"

/* cmocka's allocator is not thread-safe: use libc's in threads. */
#undef malloc
#undef calloc
#undef free

enum { R, A, B, A1, A2, B1, NDOM };

#define NWORKERS 3
#define NSLOTS 512		/* objects per worker */
#define BLOB_W 100u
#define MAX_BLOBS 64		/* per worker and domain */
#define MIN_CYCLES 400		/* control and reclaim turns, at least */

static const int parent_of[NDOM] = { -1, R, R, A, A, B };
/* Budget bounds; lo == hi: never changed; 0: no limit of its own. */
static const uint64_t budget_lo[NDOM] = { 300000, 150000, 120000, 60000, 0, 50000 };
static const uint64_t budget_hi[NDOM] = { 300000, 250000, 200000, 120000, 0, 100000 };
static const bool soft_of[NDOM] = { false, false, false, false, false, true };

struct tobj {
	struct rcl_lru_node lru;
	atomic_int state;
	unsigned dom;
	uint32_t weight;
};

enum { T_FREE, T_LIVE, T_BUSY };

struct worker {
	pthread_t tid;
	unsigned idx;
	unsigned ops;
	atomic_ulong epoch;	/* bumped between library calls */
	atomic_bool done;
	struct tobj slots[NSLOTS];
	unsigned blobs[NDOM];
};

static struct rcl_domain *doms[NDOM];
static struct rcl_lruvec lvs[NDOM];
static struct worker workers[NWORKERS];
static atomic_ullong charged[NDOM], uncharged[NDOM];
static atomic_bool stop;
static atomic_ulong budget_gen;		/* odd while a budget changes */
static atomic_long c_created, c_evicted, c_deleted, c_enomem, c_blobs,
	c_reclaims, c_budgets, c_limits, c_samples, c_cycles, c_rcycles,
	c_violations;

static bool is_ancestor_or_self(int anc, int d)
{
	for (; d >= 0; d = parent_of[d])
		if (d == anc)
			return true;
	return false;
}

/* ------------------------------------------------------------------------- */
/* Objects                                                                    */
/* ------------------------------------------------------------------------- */

static enum rcl_evict_status tree_evict(struct rcl_lru_node *node,
					struct rcl_evict_control *ctl)
{
	struct tobj *o = rcl_container_of(node, struct tobj, lru);
	int live = T_LIVE;
	unsigned d;

	if (!atomic_compare_exchange_strong(&o->state, &live, T_BUSY))
		return RCL_EVICT_BUSY;		/* its owner is deleting it */
	d = o->dom;
	T_PEQ(ctl->lruvec, &lvs[d]);
	T_PEQ(ctl->priv, &lvs[d]);
	T_EQ(ctl->weight, o->weight);
	T_EQ(rcl_domain_uncharge(doms[d], o->weight), 0);
	atomic_fetch_add(&uncharged[d], o->weight);
	atomic_fetch_add(&c_evicted, 1);
	atomic_store(&o->state, T_FREE);	/* the owner may reuse it now */
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops tree_ops = { .evict = tree_evict };

/* A domain for a new charge: leaves mostly, inner nodes now and then. */
static unsigned pick_dom(uint64_t r)
{
	static const unsigned pick[16] = { A1, A1, A1, A2, A2, A2, B1, B1,
					   B1, A1, A2, B1, A, B, R, A };

	return pick[r % 16];
}

static uint64_t pick_ctx(uint64_t r)
{
	return (r & 1) ? RCL_CTX_CAPABLE : RCL_CTX_MAY_IO;
}

static void obj_create(struct tobj *o, uint64_t r)
{
	int st = T_FREE;
	unsigned d = pick_dom(r >> 8);
	uint32_t wt = 64 + (uint32_t)((r >> 24) % 256);
	int err;

	if (!atomic_compare_exchange_strong(&o->state, &st, T_BUSY))
		return;
	err = rcl_domain_charge(doms[d], wt, pick_ctx(r >> 40), NULL);
	if (err) {
		T_EQ(err, -ENOMEM);
		atomic_fetch_add(&c_enomem, 1);
		atomic_store(&o->state, T_FREE);
		return;
	}
	atomic_fetch_add(&charged[d], wt);
	rcl_lru_node_init(&o->lru);
	o->dom = d;
	o->weight = wt;
	atomic_store(&o->state, T_LIVE);
	T_EQ(rcl_lruvec_add(&lvs[d], &o->lru, RCL_LRU_FILE, wt,
			    (r >> 50) & 1 ? RCL_LRU_ADD_NOBATCH : 0), 0);
	atomic_fetch_add(&c_created, 1);
}

static void obj_delete(struct tobj *o)
{
	int live = T_LIVE;

	if (!atomic_compare_exchange_strong(&o->state, &live, T_BUSY))
		return;
	T_EQ(rcl_lruvec_del_wait(&lvs[o->dom], &o->lru), 0);
	T_EQ(rcl_domain_uncharge(doms[o->dom], o->weight), 0);
	atomic_fetch_add(&uncharged[o->dom], o->weight);
	atomic_fetch_add(&c_deleted, 1);
	atomic_store(&o->state, T_FREE);
}

static void obj_touch(struct tobj *o)
{
	int err;

	if (atomic_load(&o->state) != T_LIVE)
		return;
	/* -ENOENT: a reclaimer evicted it meanwhile (only we re-add it). */
	err = rcl_lruvec_mark_accessed(&lvs[o->dom], &o->lru);
	T_CHECK(err == 0 || err == -ENOENT);
}

static void blob_charge(struct worker *w, uint64_t r)
{
	unsigned d = (unsigned)((r >> 8) % NDOM);
	int err;

	if (w->blobs[d] >= MAX_BLOBS || (r >> 20) % 3 == 0) {
		if (!w->blobs[d])
			return;
		T_EQ(rcl_domain_uncharge(doms[d], BLOB_W), 0);
		atomic_fetch_add(&uncharged[d], BLOB_W);
		w->blobs[d]--;
		return;
	}
	err = rcl_domain_charge(doms[d], BLOB_W, pick_ctx(r >> 30), NULL);
	if (err) {
		T_EQ(err, -ENOMEM);
		atomic_fetch_add(&c_enomem, 1);
		return;
	}
	atomic_fetch_add(&charged[d], BLOB_W);
	w->blobs[d]++;
	atomic_fetch_add(&c_blobs, 1);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0x7ee0ull + w->idx;
	unsigned i;

	for (i = 0; i < w->ops || atomic_load(&c_cycles) < MIN_CYCLES ||
		    atomic_load(&c_rcycles) < MIN_CYCLES; i++) {
		uint64_t r = rng_next(&rng);
		struct tobj *o = &w->slots[(r >> 4) % NSLOTS];
		unsigned op = (unsigned)(r % 100);

		if (op < 45)
			obj_create(o, r);
		else if (op < 80)
			obj_delete(o);
		else if (op < 85)
			obj_touch(o);
		else
			blob_charge(w, r);
		atomic_fetch_add(&w->epoch, 1);
	}
	atomic_store(&w->done, true);
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Control, reclaim, sampling                                                 */
/* ------------------------------------------------------------------------- */

/* Wait until every worker has left the library call it was in. */
static void wait_for_workers(void)
{
	unsigned long seen[NWORKERS];
	unsigned i;

	for (i = 0; i < NWORKERS; i++)
		seen[i] = atomic_load(&workers[i].epoch);
	for (i = 0; i < NWORKERS; i++)
		while (!atomic_load(&workers[i].done) &&
		       atomic_load(&workers[i].epoch) == seen[i])
			sched_yield();
}

static void *control_main(void *arg)
{
	uint64_t rng = 0xc0de17ull;
	unsigned i;

	(void)arg;
	for (i = 0; !atomic_load(&stop); i++) {
		uint64_t r = rng_next(&rng);
		unsigned d = 1 + (unsigned)(r % (NDOM - 1));	/* a child */

		if (i % 3 == 0 && budget_lo[d] != budget_hi[d]) {
			uint64_t b = budget_lo[d] +
				     (r >> 8) % (budget_hi[d] - budget_lo[d] + 1);

			atomic_fetch_add(&budget_gen, 1);	/* odd */
			T_EQ(rcl_domain_set_budget(doms[d], b), 0);
			T_EQ(rcl_domain_budget(doms[d]), b);
			wait_for_workers();
			atomic_fetch_add(&budget_gen, 1);	/* even */
			atomic_fetch_add(&c_budgets, 1);
		} else if (i % 3 == 1) {
			uint64_t hi = budget_hi[d] ? budget_hi[d] : budget_hi[R];
			struct rcl_domain_limits lim = {
				.limit_high = (r >> 8) % 4 == 0
						      ? 0
						      : hi / 2 + (r >> 12) % (hi / 2),
				.protect_low = (r >> 32) % 3 == 0 ? 0 : (r >> 34) % (hi / 2),
				.protect_min = (r >> 40) % 3 == 0 ? 0 : (r >> 42) % (hi / 4),
			}, got;
			uint64_t emin, elow;

			T_EQ(rcl_domain_set_limits(doms[d], &lim), 0);
			T_EQ(rcl_domain_limits(doms[d], &got), 0);
			T_EQ(got.limit_high, lim.limit_high ? lim.limit_high : UINT64_MAX);
			T_EQ(got.protect_low, lim.protect_low);
			T_EQ(got.protect_min, lim.protect_min);
			/*
			 * This thread alone sets limits: a child of R gets
			 * them whole (not torn, not stale), whatever its usage
			 * at that moment (docs/bad-input-audit.md F20).
			 */
			if (parent_of[d] == R) {
				T_EQ(rcl_domain_effective_protection(doms[R], doms[d],
								     &emin, &elow), 0);
				T_EQ(emin, lim.protect_min);
				T_EQ(elow, lim.protect_low);
			}
			T_EQ(rcl_domain_effective_protection(doms[d], doms[d], &emin,
							     &elow), 0);
			T_EQ(emin, 0);
			T_EQ(elow, 0);
			T_EQ(rcl_domain_effective_protection(doms[d], doms[R], &emin,
							     &elow), -EINVAL);
			atomic_fetch_add(&c_limits, 1);
		} else {
			struct rcl_domain_limits lim = { 0 };

			lim.limit_high = (r >> 8) % 2 ? 0 : budget_hi[R] / 2 +
							    (r >> 16) % (budget_hi[R] / 2);
			T_EQ(rcl_domain_set_limits(doms[R], &lim), 0);
			lim.protect_low = 1;
			T_EQ(rcl_domain_set_limits(doms[R], &lim), -EINVAL);
		}
		atomic_fetch_add(&c_cycles, 1);
	}
	return NULL;
}

static void *reclaim_main(void *arg)
{
	static const unsigned targets[8] = { R, A, B, R, A, B, A1, B1 };
	uint64_t rng = 0x5ca1ab1eull;

	(void)arg;
	while (!atomic_load(&stop)) {
		uint64_t r = rng_next(&rng);
		struct rcl_reclaim_result res;

		T_EQ(rcl_domain_reclaim(doms[targets[r % 8]], 1 + (r >> 8) % 64,
					RCL_CTX_CAPABLE, &res), 0);
		T_CHECK(res.nr_reclaimed <= res.nr_scanned || res.nr_scanned == 0);
		atomic_fetch_add(&c_reclaims, 1);
		atomic_fetch_add(&c_rcycles, 1);
	}
	return NULL;
}

static struct rcl_domain_events last_ev[NDOM][2];

static bool events_ge(const struct rcl_domain_events *now,
		      const struct rcl_domain_events *then)
{
	return now->low >= then->low && now->high >= then->high &&
	       now->max >= then->max && now->oom >= then->oom;
}

static void check_events_monotonic(unsigned d)
{
	for (unsigned sub = 0; sub < 2; sub++) {
		struct rcl_domain_events ev;

		T_EQ(rcl_domain_events(doms[d], sub, &ev), 0);
		if (!events_ge(&ev, &last_ev[d][sub])) {
			fprintf(stderr, "domain %u: events (%s) went down\n", d,
				sub ? "subtree" : "own");
			atomic_fetch_add(&c_violations, 1);
		}
		last_ev[d][sub] = ev;
	}
}

static void *sampler_main(void *arg)
{
	unsigned long ok_gen[NDOM] = { 0 };	/* gen + 1 when seen within */

	(void)arg;
	while (!atomic_load(&stop)) {
		for (unsigned d = 0; d < NDOM; d++) {
			unsigned long g1 = atomic_load(&budget_gen), g2;
			uint64_t b, u, hi = budget_hi[d] ? budget_hi[d] : UINT64_MAX;

			check_events_monotonic(d);
			if (soft_of[d] || (g1 & 1))
				continue;
			b = rcl_domain_budget(doms[d]);
			u = rcl_domain_usage(doms[d]);
			g2 = atomic_load(&budget_gen);
			if (u > hi) {
				fprintf(stderr, "domain %u: usage %llu above its largest "
					"budget %llu\n", d, (unsigned long long)u,
					(unsigned long long)hi);
				atomic_fetch_add(&c_violations, 1);
			}
			if (g1 != g2)
				continue;
			if (u <= b) {
				ok_gen[d] = g1 + 1;
			} else if (ok_gen[d] == g1 + 1) {
				fprintf(stderr, "domain %u: usage %llu above budget %llu "
					"after it was seen within it\n", d,
					(unsigned long long)u, (unsigned long long)b);
				atomic_fetch_add(&c_violations, 1);
			}
		}
		atomic_fetch_add(&c_samples, 1);
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The test                                                                   */
/* ------------------------------------------------------------------------- */

static void tree_setup(uint64_t root_stock)
{
	for (unsigned d = 0; d < NDOM; d++) {
		struct rcl_domain_config cfg = {
			.budget = budget_hi[d],
			.mode = soft_of[d] ? RCL_CHARGE_SOFT : RCL_CHARGE_STRICT,
			.parent = parent_of[d] < 0 ? NULL : doms[parent_of[d]],
			.charge_stock = d == R ? root_stock : 0,
		};
		struct rcl_lruvec_config lcfg = { .ops = &tree_ops, .priv = &lvs[d] };

		T_EQ(rcl_domain_new(&cfg, &doms[d]), 0);
		T_PEQ(rcl_domain_parent(doms[d]), cfg.parent);
		T_EQ(rcl_lruvec_init(&lvs[d], &lcfg), 0);
		T_EQ(rcl_domain_attach(doms[d], &lvs[d], 0), 0);
		atomic_store(&charged[d], 0);
		atomic_store(&uncharged[d], 0);
		memset(last_ev[d], 0, sizeof(last_ev[d]));
	}
	T_EQ(rcl_domain_budget(doms[A2]), UINT64_MAX);
	atomic_store(&stop, false);
	atomic_store(&budget_gen, 0);
	atomic_store(&c_created, 0);
	atomic_store(&c_evicted, 0);
	atomic_store(&c_deleted, 0);
	atomic_store(&c_enomem, 0);
	atomic_store(&c_blobs, 0);
	atomic_store(&c_reclaims, 0);
	atomic_store(&c_budgets, 0);
	atomic_store(&c_limits, 0);
	atomic_store(&c_samples, 0);
	atomic_store(&c_cycles, 0);
	atomic_store(&c_rcycles, 0);
	atomic_store(&c_violations, 0);
}

static void run_threads(void)
{
	pthread_t control, reclaimer, sampler;
	unsigned i;

	T_EQ(rcl_domain_reclaimer_start(doms[R]), 0);
	T_EQ(pthread_create(&control, NULL, control_main, NULL), 0);
	T_EQ(pthread_create(&reclaimer, NULL, reclaim_main, NULL), 0);
	T_EQ(pthread_create(&sampler, NULL, sampler_main, NULL), 0);
	for (i = 0; i < NWORKERS; i++) {
		struct worker *w = &workers[i];

		memset(w->slots, 0, sizeof(w->slots));
		memset(w->blobs, 0, sizeof(w->blobs));
		w->idx = i;
		w->ops = ops_per_thread(20000);
		atomic_store(&w->epoch, 0);
		atomic_store(&w->done, false);
		T_EQ(pthread_create(&w->tid, NULL, worker_main, w), 0);
	}
	for (i = 0; i < NWORKERS; i++)
		T_EQ(pthread_join(workers[i].tid, NULL), 0);
	atomic_store(&stop, true);
	T_EQ(pthread_join(control, NULL), 0);
	T_EQ(pthread_join(reclaimer, NULL), 0);
	T_EQ(pthread_join(sampler, NULL), 0);
	T_EQ(rcl_domain_reclaimer_stop(doms[R]), 0);
	rcl_lru_drain_local();
	for (unsigned d = 0; d < NDOM; d++)
		T_EQ(rcl_lruvec_drain(&lvs[d]), 0);
}

/* Quiescent: the exact accounting, events and counters of every level. */
static void check_tree(void)
{
	uint64_t own[NDOM] = { 0 }, nobj[NDOM] = { 0 }, net[NDOM];

	for (unsigned i = 0; i < NWORKERS; i++) {
		for (unsigned s = 0; s < NSLOTS; s++) {
			struct tobj *o = &workers[i].slots[s];
			int st = atomic_load(&o->state);

			T_CHECK(st == T_FREE || st == T_LIVE);
			if (st != T_LIVE)
				continue;
			T_EQ(rcl_lru_node_flags(&o->lru) &
				     (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
				      RCL_LRU_F_ISOLATED),
			     RCL_LRU_F_LISTED);
			own[o->dom] += o->weight;
			nobj[o->dom]++;
		}
		for (unsigned d = 0; d < NDOM; d++)
			own[d] += (uint64_t)workers[i].blobs[d] * BLOB_W;
	}
	for (unsigned d = 0; d < NDOM; d++) {
		net[d] = atomic_load(&charged[d]) - atomic_load(&uncharged[d]);
		T_EQ(net[d], own[d]);
		T_EQ(lru_check_invariants(&lvs[d]), nobj[d]);
		T_EQ(rcl_lruvec_nr_isolated(&lvs[d]), 0);
	}
	for (unsigned d = 0; d < NDOM; d++) {
		uint64_t want = 0;
		struct rcl_domain_events sub, mine, sum;
		struct rcl_vmstat vs, v;
		uint64_t *ps = (uint64_t *)&vs, acc[sizeof(v) / sizeof(uint64_t)] = { 0 };

		for (unsigned x = 0; x < NDOM; x++)
			if (is_ancestor_or_self((int)d, (int)x))
				want += net[x];
		T_EQ(rcl_domain_usage(doms[d]), want);

		/* events: monotonic to the end; subtree = own + children's. */
		check_events_monotonic(d);
		T_EQ(rcl_domain_events(doms[d], false, &mine), 0);
		T_EQ(rcl_domain_events(doms[d], true, &sub), 0);
		sum = mine;
		for (unsigned x = 0; x < NDOM; x++) {
			struct rcl_domain_events c;

			if (parent_of[x] != (int)d)
				continue;
			T_EQ(rcl_domain_events(doms[x], true, &c), 0);
			sum.low += c.low;
			sum.high += c.high;
			sum.max += c.max;
			sum.oom += c.oom;
		}
		T_CHECK(memcmp(&sum, &sub, sizeof(sum)) == 0);

		/* vmstat of the subtree: the sum of its domains' own. */
		T_EQ(rcl_domain_vmstat_subtree(doms[d], &vs), 0);
		for (unsigned x = 0; x < NDOM; x++) {
			const uint64_t *pv = (const uint64_t *)&v;

			if (!is_ancestor_or_self((int)d, (int)x))
				continue;
			T_EQ(rcl_domain_vmstat(doms[x], &v), 0);
			for (size_t k = 0; k < sizeof(v) / sizeof(uint64_t); k++)
				acc[k] += pv[k];
		}
		for (size_t k = 0; k < sizeof(v) / sizeof(uint64_t); k++)
			T_EQ(ps[k], acc[k]);
	}
	T_EQ(atomic_load(&c_violations), 0);
}

static void tree_teardown(void)
{
	for (unsigned i = 0; i < NWORKERS; i++) {
		for (unsigned s = 0; s < NSLOTS; s++)
			obj_delete(&workers[i].slots[s]);
		for (unsigned d = 0; d < NDOM; d++) {
			T_EQ(rcl_domain_uncharge(doms[d], (uint64_t)workers[i].blobs[d] *
								  BLOB_W), 0);
			workers[i].blobs[d] = 0;
		}
	}
	T_EQ(rcl_domain_drain_stocks(doms[R]), 0);
	for (unsigned d = NDOM; d-- > 0;) {
		T_EQ(rcl_domain_usage(doms[d]), 0);
		T_EQ(lru_check_invariants(&lvs[d]), 0);
		T_EQ(rcl_domain_detach(doms[d], &lvs[d]), 0);
		T_EQ(rcl_lruvec_destroy(&lvs[d]), 0);
	}
	/* Leaves first: a parent with children is refused. */
	T_EQ(rcl_domain_free(doms[R]), -EBUSY);
	T_EQ(rcl_domain_free(doms[A]), -EBUSY);
	for (unsigned d = NDOM; d-- > 0;)
		T_EQ(rcl_domain_free(doms[d]), 0);
}

static void report(const char *name)
{
	struct rcl_domain_events ev;

	T_EQ(rcl_domain_events(doms[R], true, &ev), 0);
	print_message("%s: created %ld, evicted %ld, deleted %ld, -ENOMEM %ld, "
		      "blob charges %ld; %ld reclaims, %ld budget changes, "
		      "%ld limit changes, %ld control turns, %ld samples; tree "
		      "events low %llu high %llu max %llu oom %llu\n",
		      name, atomic_load(&c_created), atomic_load(&c_evicted),
		      atomic_load(&c_deleted), atomic_load(&c_enomem),
		      atomic_load(&c_blobs), atomic_load(&c_reclaims),
		      atomic_load(&c_budgets), atomic_load(&c_limits),
		      atomic_load(&c_cycles), atomic_load(&c_samples),
		      (unsigned long long)ev.low, (unsigned long long)ev.high,
		      (unsigned long long)ev.max, (unsigned long long)ev.oom);
}

static void test_domain_tree_stress_charges(void **state)
{
	(void)state;
	tree_setup(0);
	run_threads();
	report("tree stress");
	check_tree();
	/* Every path ran. */
	T_CHECK(atomic_load(&c_evicted) > 0);
	T_CHECK(atomic_load(&c_deleted) > 0);
	T_CHECK(atomic_load(&c_budgets) > 0);
	T_CHECK(atomic_load(&c_limits) > 0);
	T_CHECK(atomic_load(&c_reclaims) > 0);
	T_CHECK(atomic_load(&c_samples) > 0);
	tree_teardown();
}

/*
 * The tree with charge stocks (configured on the root): a thread's stock
 * serves one domain of the tree and is charged to it and to each ancestor,
 * so every level reads its stocks as charged (the sampler's strict checks
 * still hold) and is exact once the root's drain has taken back its
 * subtree's stocks.
 */
static void test_domain_tree_stress_tree_stocks(void **state)
{
	(void)state;
	tree_setup(64 * 320);
	run_threads();
	report("tree stress, tree stocks");
	T_EQ(rcl_domain_drain_stocks(doms[R]), 0);
	check_tree();
	tree_teardown();
}

/*
 * Freeing a child while another thread reclaims the tree: a root's pass
 * sweeps the children under the tree lock, and rcl_domain_free() used to
 * free the child's shrinker registry before unlinking the child, so the
 * sweep could shrink a freed registry (ASan: heap-use-after-free).  The
 * child is charged, so that the sweep does visit it.
 */
static struct rcl_domain *fc_root;
static atomic_bool fc_done;
static atomic_long fc_passes;

static void *fc_reclaimer(void *arg)
{
	(void)arg;
	while (!atomic_load(&fc_done)) {
		rcl_domain_reclaim(fc_root, 32, RCL_CTX_CAPABLE, NULL);
		atomic_fetch_add(&fc_passes, 1);
	}
	return NULL;
}

static void test_domain_tree_free_child_while_reclaimed(void **state)
{
	struct rcl_domain_config rc = { .budget = 1 << 20 };
	unsigned i, n = ops_per_thread(20000);
	pthread_t t;

	(void)state;
	T_EQ(rcl_domain_new(&rc, &fc_root), 0);
	T_EQ(pthread_create(&t, NULL, fc_reclaimer, NULL), 0);
	for (i = 0; i < n; i++) {
		struct rcl_domain_config cc = { .parent = fc_root };
		struct rcl_domain *c;

		T_EQ(rcl_domain_new(&cc, &c), 0);
		T_EQ(rcl_domain_charge(c, 100, RCL_CTX_CAPABLE, NULL), 0);
		T_EQ(rcl_domain_free(c), 0);
	}
	atomic_store(&fc_done, true);
	T_EQ(pthread_join(t, NULL), 0);
	/* What the freed children held left the root with them. */
	T_EQ(rcl_domain_usage(fc_root), 0);
	print_message("free while reclaimed: %u children, %ld passes\n", n,
		      atomic_load(&fc_passes));
	T_EQ(rcl_domain_free(fc_root), 0);
}

/*
 * Detach from a callback of another domain's pass while a pass is inside the
 * lruvec: refused (-EDEADLK), not waited for, since that pass's callback may
 * be waiting for ours (two callbacks detaching each other's lruvec hung for
 * ever).  Two unrelated domains: thread 1's pass of B stops in B's evict
 * callback (B's lruvec pinned) until thread 2's pass of A, from A's evict
 * callback, has tried to detach B's lruvec.  Afterwards, outside any
 * callback, the detach succeeds.
 */
static struct rcl_domain *dx_dom[2];
static struct rcl_lruvec dx_lv[2];
static struct rcl_lru_node dx_node[2][8];
static pthread_barrier_t dx_in, dx_out;
static _Thread_local int dx_me = -1;
static int dx_ret = 99;

static enum rcl_evict_status dx_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	if (dx_me == 1) {		/* B's pass: hold B's lruvec */
		dx_me = -1;
		pthread_barrier_wait(&dx_in);
		pthread_barrier_wait(&dx_out);
	} else if (dx_me == 0) {	/* A's pass: detach B's */
		dx_me = -1;
		dx_ret = rcl_domain_detach(dx_dom[1], &dx_lv[1]);
	}
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops dx_ops = { .evict = dx_evict };

static void *dx_worker(void *arg)
{
	int me = (int)(long)arg;

	if (me == 0)
		pthread_barrier_wait(&dx_in);	/* B's pass is inside B's lruvec */
	dx_me = me;
	rcl_domain_reclaim(dx_dom[me], 4, RCL_CTX_CAPABLE, NULL);
	if (me == 0)
		pthread_barrier_wait(&dx_out);
	return NULL;
}

static void test_domain_detach_from_other_pass_refused(void **state)
{
	struct rcl_lruvec_config lc = { .ops = &dx_ops };
	pthread_t t[2];
	int i, j;

	(void)state;
	T_EQ(pthread_barrier_init(&dx_in, NULL, 2), 0);
	T_EQ(pthread_barrier_init(&dx_out, NULL, 2), 0);
	for (i = 0; i < 2; i++) {
		struct rcl_domain_config rc = { .budget = 1 << 20 };

		T_EQ(rcl_domain_new(&rc, &dx_dom[i]), 0);
		T_EQ(rcl_lruvec_init(&dx_lv[i], &lc), 0);
		for (j = 0; j < 8; j++) {
			rcl_lru_node_init(&dx_node[i][j]);
			T_EQ(rcl_lruvec_add(&dx_lv[i], &dx_node[i][j],
					    RCL_LRU_FILE, 1,
					    RCL_LRU_ADD_NOBATCH),
			     0);
		}
		T_EQ(rcl_domain_attach(dx_dom[i], &dx_lv[i], 0), 0);
		T_EQ(rcl_domain_charge(dx_dom[i], 8, RCL_CTX_CAPABLE, NULL), 0);
	}
	for (i = 0; i < 2; i++)
		T_EQ(pthread_create(&t[i], NULL, dx_worker, (void *)(long)i), 0);
	for (i = 0; i < 2; i++)
		T_EQ(pthread_join(t[i], NULL), 0);
	T_EQ(dx_ret, -EDEADLK);
	/* Refused with nothing done: still attached, detached from here. */
	T_EQ(rcl_domain_detach(dx_dom[1], &dx_lv[1]), 0);
	T_EQ(rcl_domain_detach(dx_dom[0], &dx_lv[0]), 0);
	for (i = 0; i < 2; i++) {
		for (j = 0; j < 8; j++)
			T_EQ(rcl_lruvec_del(&dx_lv[i], &dx_node[i][j]), 0);
		T_EQ(rcl_lruvec_destroy(&dx_lv[i]), 0);
		rcl_domain_uncharge(dx_dom[i], 8);
		T_EQ(rcl_domain_free(dx_dom[i]), 0);
	}
	pthread_barrier_destroy(&dx_in);
	pthread_barrier_destroy(&dx_out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domain_tree_stress_charges),
		cmocka_unit_test(test_domain_tree_stress_tree_stocks),
		cmocka_unit_test(test_domain_tree_free_child_while_reclaimed),
		cmocka_unit_test(test_domain_detach_from_other_pass_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
