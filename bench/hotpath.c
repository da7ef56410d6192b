/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench hotpath: the cost of the LRU operations a cache performs on
 * every request, for libreclaim and for the baseline users write by hand
 * ("mutex-lru": a doubly linked move-to-front list behind one pthread
 * mutex).  With T threads every thread works on the SAME lruvec (the same
 * baseline list), each on its own disjoint set of objects.  See
 * bench/README.md for what each operation measures and how the figures are
 * computed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <reclaim/reclaim.h>

#include "commands.h"
#include "harness.h"

/* ------------------------------------------------------------------------- */
/* Parameters                                                                 */
/* ------------------------------------------------------------------------- */

/* Objects per thread: 4096 x 64 bytes = 256 KiB, inside a 2 MiB L2. */
#define HP_OBJS_PER_THREAD 4096u
/* churn: idle objects each thread starts with in its free pool. */
#define HP_CHURN_SPARES 64u
/* churn: one rcl_lruvec_shrink_inactive() of this many per as many inserts. */
#define HP_CHURN_SCAN 32u
/*
 * add-del-listed: the object deleted is the one added this many operations
 * earlier, more than a per-thread batch (RCL_LRU_PERTHREAD_BATCH), so that
 * it has reached the shared list.
 */
#define HP_LISTED_LAG 64u
/* churn: inserts between two looks at the clock. */
#define HP_CHURN_CHUNK 1024u
#define HP_MAX_THREADS 256u
/* Normal run: wall time of one measurement, and measurements per figure. */
#define HP_RUN_MS 150u
#define HP_REPS 5u
/* --short: just enough to exercise every code path. */
#define HP_SHORT_RUN_MS 2u
#define HP_SHORT_REPS 1u
/* Runs disturbed by other load: see BENCH_OTHER_MAX and BENCH_TRIES. */
_Static_assert(HP_REPS <= BENCH_MAX_REPS, "bench_median_of_runs() takes HP_REPS");

/* ------------------------------------------------------------------------- */
/* Objects                                                                    */
/* ------------------------------------------------------------------------- */

/*
 * A cached object: a key, a small payload, and the links of both
 * implementations (each run uses one of them), so both see the same object
 * size and layout: one cache line.
 */
struct hp_obj {
	_Alignas(64) uint64_t key;
	struct rcl_lru_node lru;
	struct ml_node ml;
	uint64_t payload[2];
};

_Static_assert(sizeof(struct hp_obj) == 64, "an object is one cache line");

/* A LIFO free pool of idle objects (churn). */
struct obj_pool {
	struct hp_obj **slot;
	size_t nr;
	size_t cap;
};

static inline struct hp_obj *pool_pop(struct obj_pool *p)
{
	return p->nr ? p->slot[--p->nr] : NULL;
}

static inline bool pool_push(struct obj_pool *p, struct hp_obj *o)
{
	if (p->nr == p->cap)
		return false;
	p->slot[p->nr++] = o;
	return true;
}

/* ------------------------------------------------------------------------- */
/* hotpath: one measurement                                                   */
/* ------------------------------------------------------------------------- */

enum hp_impl { IMPL_LIB, IMPL_MUTEX, NR_IMPLS };
enum hp_op {
	OP_HIT_ACTIVE,
	OP_HIT_INACTIVE,
	OP_ADD_DEL,
	OP_ADD_DEL_LISTED,
	OP_CHURN,
	OP_CHURN_BATCH,
	OP_CHARGE,	/* domain charge/uncharge; no LRU work */
	NR_OPS
};

static const char *const impl_names[NR_IMPLS] = { "libreclaim", "mutex-lru" };
static const char *const op_names[NR_OPS] = {
	"hit-active", "hit-inactive", "add-del", "add-del-listed", "churn",
	"churn-batch", "charge",
};
/* --op: "all", or one of op_names (index + 1). */
static const char *const op_choices[NR_OPS + 2] = {
	"all", "hit-active", "hit-inactive", "add-del", "add-del-listed",
	"churn", "churn-batch", "charge", NULL,
};
_Static_assert(sizeof(op_names) / sizeof(op_names[0]) == NR_OPS,
	       "a name for every op");

/* The node state bits the benchmark checks. */
#define ST_MASK                                                               \
	(RCL_LRU_F_ACTIVE | RCL_LRU_F_UNEVICTABLE | RCL_LRU_F_PENDING |       \
	 RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED | RCL_LRU_F_REFERENCED)

struct hp_run;

/* Cache-line aligned, so that no two threads write to the same line. */
struct worker {
	_Alignas(64) struct hp_run *run;
	unsigned idx;
	pthread_t tid;
	struct hp_obj *objs;	/* this thread's objects */
	size_t nobjs;		/* allocated */
	size_t nwork;		/* listed at the start (add-del: cycled) */
	uint32_t *order;	/* shuffled indices 0..nwork-1 */
	struct obj_pool pool;	/* churn */
	uint64_t next_key;
	/* results */
	uint64_t ops;
	uint64_t ns;
	uint64_t sink;
	const char *err;	/* first failure, NULL if none */
	int err_code;
};

/* The shared state of one measurement; the hot parts on lines of their own. */
struct hp_run {
	_Alignas(64) struct rcl_lruvec lv;
	_Alignas(64) struct mutex_lru ml;
	_Alignas(64) atomic_bool stop;	/* set by a worker that failed */
	uint64_t run_ns;		/* how long each worker runs */
	uint64_t max_ops;		/* --count: ops per worker instead (0: time) */
	enum hp_impl impl;
	enum hp_op op;
	unsigned nthreads;
	struct worker *w;
	_Alignas(64) struct bench_barrier round;	/* the workers (hit-inactive) */
	_Alignas(64) bool cont;		/* hit-inactive: run another round */
	pthread_barrier_t start;	/* the workers and main */
	/* charge: the libreclaim domain, or the baseline's shared counter. */
	struct rcl_domain *dom;
	_Alignas(64) atomic_ullong counter;
};

struct hp_result {
	double ns_per_op;
	double mops;
	double other;	/* CPU time used by others / CPU time available */
	bool disturbed;	/* too few runs free of other load (hp_figure) */
};

/* The free pool of the calling thread, for the evict callback. */
static _Thread_local struct obj_pool *tls_pool;

static void fail(struct worker *w, const char *what, int code)
{
	if (!w->err) {
		w->err = what;
		w->err_code = code;
	}
	atomic_store_explicit(&w->run->stop, true, memory_order_release);
}

/*
 * Between two chunks of work: is the run over?  Each worker times itself
 * (its own deadline), so the end does not depend on the main thread being
 * scheduled (more threads than CPUs, valgrind).
 */
static bool stopped(struct hp_run *r, uint64_t deadline, uint64_t ops)
{
	if (atomic_load_explicit(&r->stop, memory_order_relaxed))
		return true;
	if (r->max_ops)
		return ops >= r->max_ops;
	return bench_now_ns() >= deadline;
}

static unsigned lib_state(const struct hp_obj *o)
{
	return rcl_lru_node_flags(&o->lru) & ST_MASK;
}

/*
 * churn's evict callback: the object leaves the cache and its memory goes to
 * the free pool of the thread that is reclaiming.  The node is re-initialised
 * before reuse, as the header requires after RCL_EVICT_FREED.
 */
static enum rcl_evict_status churn_evict(struct rcl_lru_node *node,
					 struct rcl_evict_control *ctl)
{
	struct hp_obj *o = rcl_container_of(node, struct hp_obj, lru);

	(void)ctl;
	rcl_lru_node_init(node);
	if (!pool_push(tls_pool, o))
		abort();	/* cannot happen: a pool holds every object */
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops churn_ops = { .evict = churn_evict };

/* churn-batch: the same, one call for each isolated batch. */
static void churn_evict_batch(struct rcl_lruvec *lv, void *priv,
			      struct rcl_evict_item *items, size_t nr)
{
	size_t i;

	(void)lv;
	(void)priv;
	for (i = 0; i < nr; i++) {
		struct hp_obj *o =
			rcl_container_of(items[i].node, struct hp_obj, lru);

		rcl_lru_node_init(items[i].node);
		if (!pool_push(tls_pool, o))
			abort();
		items[i].status = RCL_EVICT_FREED;
	}
}

static const struct rcl_lruvec_ops churn_batch_ops = {
	.evict_batch = churn_evict_batch,
};

/* Untimed: initialise this thread's objects and put them in the cache. */
static void worker_setup(struct worker *w)
{
	struct hp_run *r = w->run;
	struct rcl_lruvec *lv = &r->lv;
	uint64_t seed = 0x9E3779B97F4A7C15ull * (w->idx + 1);
	size_t i;
	int ret;

	for (i = 0; i < w->nobjs; i++) {
		struct hp_obj *o = &w->objs[i];

		o->key = ((uint64_t)w->idx << 40) | i;
		rcl_lru_node_init(&o->lru);
		o->ml.prev = o->ml.next = NULL;
		o->payload[0] = o->key * 3;
		o->payload[1] = ~o->key;
	}
	w->next_key = ((uint64_t)w->idx << 40) | w->nobjs;

	for (i = 0; i < w->nwork; i++)
		w->order[i] = (uint32_t)i;
	for (i = w->nwork; i > 1; i--) {
		size_t j = (size_t)(bench_rng_next(&seed) % i);
		uint32_t t = w->order[i - 1];

		w->order[i - 1] = w->order[j];
		w->order[j] = t;
	}

	if (r->op == OP_ADD_DEL || r->op == OP_ADD_DEL_LISTED)
		return;	/* the objects start idle */
	if (r->op == OP_CHARGE)
		return;	/* charge puts nothing in the cache */

	for (i = 0; i < w->nwork; i++) {
		struct hp_obj *o = &w->objs[i];

		if (r->impl == IMPL_MUTEX) {
			pthread_mutex_lock(&r->ml.lock);
			ml_link_head(&r->ml, &o->ml);
			pthread_mutex_unlock(&r->ml.lock);
			continue;
		}
		switch (r->op) {
		case OP_HIT_ACTIVE:
			/* Active, then one access: active and referenced. */
			ret = rcl_lruvec_add(lv, &o->lru, RCL_LRU_FILE, 1,
					     RCL_LRU_ADD_ACTIVE |
						     RCL_LRU_ADD_NOBATCH);
			if (!ret)
				ret = rcl_lruvec_mark_accessed(lv, &o->lru);
			if (ret) {
				fail(w, "setup: rcl_lruvec_add/mark_accessed",
				     ret);
				return;
			}
			if (lib_state(o) !=
			    (RCL_LRU_F_LISTED | RCL_LRU_F_ACTIVE |
			     RCL_LRU_F_REFERENCED)) {
				fail(w, "setup: node not active+referenced",
				     (int)lib_state(o));
				return;
			}
			break;
		case OP_HIT_INACTIVE:
		case OP_CHURN:
		case OP_CHURN_BATCH:
			/* Listed on the inactive list, unreferenced. */
			ret = rcl_lruvec_add(lv, &o->lru, RCL_LRU_FILE, 1,
					     RCL_LRU_ADD_NOBATCH);
			if (ret) {
				fail(w, "setup: rcl_lruvec_add", ret);
				return;
			}
			if (lib_state(o) != RCL_LRU_F_LISTED) {
				fail(w, "setup: node not inactive+unreferenced",
				     (int)lib_state(o));
				return;
			}
			break;
		case OP_ADD_DEL:
		case OP_ADD_DEL_LISTED:
		case OP_CHARGE:
		case NR_OPS:
			break;
		}
	}
	if (r->op == OP_CHURN || r->op == OP_CHURN_BATCH) {
		for (i = w->nwork; i < w->nobjs; i++)
			pool_push(&w->pool, &w->objs[i]);
	}
}

/* hit-active, hit-inactive (baseline): move to front. */
static inline void ml_hit(struct mutex_lru *l, struct hp_obj *o)
{
	pthread_mutex_lock(&l->lock);
	ml_move_head(l, &o->ml);
	pthread_mutex_unlock(&l->lock);
}

/* hit-active: every access finds the node active and referenced. */
static void loop_hit_active(struct worker *w)
{
	struct hp_run *r = w->run;
	struct rcl_lruvec *lv = &r->lv;
	struct mutex_lru *ml = &r->ml;
	const uint32_t *order = w->order;
	struct hp_obj *objs = w->objs;
	size_t i, n = w->nwork;
	uint64_t ops = 0, sink = 0, t0, t1;
	int bad = 0;

	t0 = bench_now_ns();
	if (r->impl == IMPL_LIB) {
		do {
			for (i = 0; i < n; i++) {
				struct hp_obj *o = &objs[order[i]];

				sink += o->key;
				bad |= rcl_lruvec_mark_accessed(lv, &o->lru);
			}
			ops += n;
		} while (!stopped(r, t0 + r->run_ns, ops));
	} else {
		do {
			for (i = 0; i < n; i++) {
				struct hp_obj *o = &objs[order[i]];

				sink += o->key;
				ml_hit(ml, o);
			}
			ops += n;
		} while (!stopped(r, t0 + r->run_ns, ops));
	}
	t1 = bench_now_ns();
	w->ops = ops;
	w->ns = t1 - t0;
	w->sink = sink;
	if (bad)
		fail(w, "rcl_lruvec_mark_accessed", bad);
}

/*
 * hit-inactive: rounds.  Untimed: check that every node is inactive and
 * unreferenced.  Timed: one pass over the nodes, the first access to each.
 * Untimed: rcl_lruvec_deactivate() clears the referenced bit again.  The
 * threads start each timed pass together, at a barrier.
 */
static void loop_hit_inactive(struct worker *w)
{
	struct hp_run *r = w->run;
	struct rcl_lruvec *lv = &r->lv;
	struct mutex_lru *ml = &r->ml;
	const uint32_t *order = w->order;
	struct hp_obj *objs = w->objs;
	size_t i, n = w->nwork;
	uint64_t ops = 0, ns = 0, sink = 0, rounds = 0, t0, t1;
	uint64_t deadline = bench_now_ns() + r->run_ns;
	int ret;

	for (;;) {
		if (!w->err && r->impl == IMPL_LIB) {
			for (i = 0; i < n; i++) {
				if (lib_state(&objs[i]) != RCL_LRU_F_LISTED) {
					fail(w, "hit-inactive: node not inactive+unreferenced before a pass",
					     (int)lib_state(&objs[i]));
					break;
				}
			}
		}
		/* One thread decides whether all run another round. */
		if (bench_barrier_wait(&r->round))
			r->cont = rounds == 0 || !stopped(r, deadline, ops);
		bench_barrier_wait(&r->round);
		if (!r->cont)
			break;
		rounds++;
		if (w->err)
			continue;

		if (r->impl == IMPL_LIB) {
			int bad = 0;

			t0 = bench_now_ns();
			for (i = 0; i < n; i++) {
				struct hp_obj *o = &objs[order[i]];

				sink += o->key;
				bad |= rcl_lruvec_mark_accessed(lv, &o->lru);
			}
			t1 = bench_now_ns();
			if (bad)
				fail(w, "rcl_lruvec_mark_accessed", bad);
			for (i = 0; i < n && !w->err; i++) {
				/* The pass did its work: referenced now. */
				if (lib_state(&objs[i]) !=
				    (RCL_LRU_F_LISTED | RCL_LRU_F_REFERENCED)) {
					fail(w, "hit-inactive: node not inactive+referenced after a pass",
					     (int)lib_state(&objs[i]));
					break;
				}
				ret = rcl_lruvec_deactivate(lv, &objs[i].lru);
				if (ret)
					fail(w, "rcl_lruvec_deactivate", ret);
			}
		} else {
			t0 = bench_now_ns();
			for (i = 0; i < n; i++) {
				struct hp_obj *o = &objs[order[i]];

				sink += o->key;
				ml_hit(ml, o);
			}
			t1 = bench_now_ns();
		}
		ns += t1 - t0;
		ops += n;
	}
	w->ops = ops;
	w->ns = ns;
	w->sink = sink;
}

/*
 * add-del (@lag 0): put an idle object in the cache and take it out again.
 * add-del-listed (@lag HP_LISTED_LAG): each operation adds an idle object
 * and deletes the one added @lag operations earlier, which is on the shared
 * list by then (the deleting thread's batch has been applied since).  The
 * first @lag adds, untimed, fill the pipeline; the last ones are deleted at
 * teardown.
 */
static void loop_add_del(struct worker *w, size_t lag)
{
	struct hp_run *r = w->run;
	struct rcl_lruvec *lv = &r->lv;
	struct mutex_lru *ml = &r->ml;
	const uint32_t *order = w->order;
	struct hp_obj *objs = w->objs;
	size_t i, n = w->nwork;
	uint64_t ops = 0, t0, t1;
	int bad = 0;

	for (i = 0; i < lag; i++) {
		struct hp_obj *o = &objs[order[i]];

		if (r->impl == IMPL_LIB) {
			bad |= rcl_lruvec_add(lv, &o->lru, RCL_LRU_FILE, 1, 0);
		} else {
			pthread_mutex_lock(&ml->lock);
			ml_link_head(ml, &o->ml);
			pthread_mutex_unlock(&ml->lock);
		}
	}
	t0 = bench_now_ns();
	if (r->impl == IMPL_LIB) {
		do {
			for (i = 0; i < n; i++) {
				size_t j = i + lag;
				struct hp_obj *in = &objs[order[j < n ? j : j - n]];
				struct hp_obj *out = &objs[order[i]];

				bad |= rcl_lruvec_add(lv, &in->lru,
						      RCL_LRU_FILE, 1, 0);
				bad |= rcl_lruvec_del(lv, &out->lru);
			}
			ops += n;
		} while (!bad && !stopped(r, t0 + r->run_ns, ops));
	} else {
		do {
			for (i = 0; i < n; i++) {
				size_t j = i + lag;
				struct hp_obj *in = &objs[order[j < n ? j : j - n]];
				struct hp_obj *out = &objs[order[i]];

				pthread_mutex_lock(&ml->lock);
				ml_link_head(ml, &in->ml);
				pthread_mutex_unlock(&ml->lock);
				pthread_mutex_lock(&ml->lock);
				ml_unlink(ml, &out->ml);
				pthread_mutex_unlock(&ml->lock);
			}
			ops += n;
		} while (!stopped(r, t0 + r->run_ns, ops));
	}
	t1 = bench_now_ns();
	w->ops = ops;
	w->ns = t1 - t0;
	if (bad)
		fail(w, "rcl_lruvec_add/del", bad);
}

/* libreclaim churn: evict HP_CHURN_SCAN from the inactive tail. */
static int churn_shrink(struct rcl_lruvec *lv)
{
	struct rcl_lru_shrink_control sc = {
		.type = RCL_LRU_FILE,
		.nr_to_scan = HP_CHURN_SCAN,
	};

	return rcl_lruvec_shrink_inactive(lv, &sc);
}

/*
 * churn: the cache is at capacity; each operation inserts a new object (from
 * the thread's free pool) and, on average, evicts one.
 */
static void loop_churn(struct worker *w)
{
	struct hp_run *r = w->run;
	struct rcl_lruvec *lv = &r->lv;
	struct mutex_lru *ml = &r->ml;
	struct obj_pool *pool = &w->pool;
	uint64_t ops = 0, key = w->next_key, t0, t1;
	unsigned i, since = 0;
	int bad = 0;

	t0 = bench_now_ns();
	if (r->impl == IMPL_LIB) {
		do {
			for (i = 0; i < HP_CHURN_CHUNK; i++) {
				struct hp_obj *o = pool_pop(pool);

				if (!o) {
					/* Not while the list is long. */
					bad |= churn_shrink(lv);
					o = pool_pop(pool);
					if (!o) {
						fail(w, "churn: pool empty", 0);
						goto out;
					}
				}
				o->key = key++;
				o->payload[0] = o->key * 3;
				bad |= rcl_lruvec_add(lv, &o->lru,
						      RCL_LRU_FILE, 1, 0);
				if (++since == HP_CHURN_SCAN) {
					since = 0;
					bad |= churn_shrink(lv);
				}
			}
			ops += HP_CHURN_CHUNK;
		} while (!stopped(r, t0 + r->run_ns, ops));
	} else {
		do {
			for (i = 0; i < HP_CHURN_CHUNK; i++) {
				struct hp_obj *o = pool_pop(pool);
				struct ml_node *tail;

				o->key = key++;
				o->payload[0] = o->key * 3;
				pthread_mutex_lock(&ml->lock);
				ml_link_head(ml, &o->ml);
				tail = ml->head.prev;
				ml_unlink(ml, tail);
				pthread_mutex_unlock(&ml->lock);
				o = rcl_container_of(tail, struct hp_obj,
						     ml);
				pool_push(pool, o);
			}
			ops += HP_CHURN_CHUNK;
		} while (!stopped(r, t0 + r->run_ns, ops));
	}
out:
	t1 = bench_now_ns();
	w->ops = ops;
	w->ns = t1 - t0;
	w->next_key = key;
	if (bad)
		fail(w, "churn: rcl_lruvec_add/shrink_inactive", bad);
}

/*
 * charge: HP_CHARGE_BURST charges of HP_CHARGE_SIZE, then as many uncharges,
 * on a domain with room for every thread's burst (nothing is reclaimed).  An
 * operation is one charge and one uncharge.  The baseline ("mutex-lru" in
 * the rows) is what a hand-written budget does: one shared atomic counter.
 */
#define HP_CHARGE_BURST 64u
#define HP_CHARGE_SIZE 4096u
/*
 * Stock per thread: 64 x 4 KiB, the kernel's memcg charge batch
 * (MEMCG_CHARGE_BATCH pages) and one burst.  Each burst's charges drain the
 * stock to zero and its uncharges fill it again; after a thread's first
 * burst, its bursts no longer touch the shared counter (bench/README.md has
 * the figures with half a burst, where every burst refills from it).
 */
#define HP_CHARGE_STOCK (HP_CHARGE_BURST * HP_CHARGE_SIZE)

static void loop_charge(struct worker *w)
{
	struct hp_run *r = w->run;
	struct rcl_domain *d = r->dom;
	uint64_t ops = 0, t0, t1;
	unsigned k;
	int bad = 0;

	t0 = bench_now_ns();
	if (r->impl == IMPL_LIB) {
		do {
			for (k = 0; k < HP_CHARGE_BURST; k++)
				bad |= rcl_domain_charge(d, HP_CHARGE_SIZE,
							 RCL_CTX_CAPABLE, NULL);
			for (k = 0; k < HP_CHARGE_BURST; k++)
				bad |= rcl_domain_uncharge(d, HP_CHARGE_SIZE);
			ops += HP_CHARGE_BURST;
		} while (!bad && !stopped(r, t0 + r->run_ns, ops));
	} else {
		do {
			for (k = 0; k < HP_CHARGE_BURST; k++)
				atomic_fetch_add(&r->counter, HP_CHARGE_SIZE);
			for (k = 0; k < HP_CHARGE_BURST; k++)
				atomic_fetch_sub(&r->counter, HP_CHARGE_SIZE);
			ops += HP_CHARGE_BURST;
		} while (!stopped(r, t0 + r->run_ns, ops));
	}
	t1 = bench_now_ns();
	w->ops = ops;
	w->ns = t1 - t0;
	if (bad)
		fail(w, "rcl_domain_charge/uncharge", bad);
}

/*
 * --tree-depth N (charge only): the workers charge a domain N levels below
 * the root, through a chain of children without limits, so that each
 * charge and uncharge also moves N child counters (one CAS each) before the
 * root's stock serves it (domain.h, "Trees of domains").  0: the root.
 */
static unsigned hp_tree_depth;
static struct rcl_domain *hp_chain[RCL_DOMAIN_MAX_DEPTH];

/* charge: a domain with room for every thread's burst, many times over. */
static int charge_setup(struct hp_run *r)
{
	struct rcl_domain_config cfg = {
		.budget = (uint64_t)1 << 30,
		.charge_stock = HP_CHARGE_STOCK,
	};
	unsigned i;
	int ret = 0;

	atomic_init(&r->counter, 0);
	if (r->impl == IMPL_LIB) {
		ret = rcl_domain_new(&cfg, &hp_chain[0]);
		for (i = 1; !ret && i <= hp_tree_depth; i++) {
			struct rcl_domain_config cc = { .parent = hp_chain[i - 1] };

			ret = rcl_domain_new(&cc, &hp_chain[i]);
			if (ret)
				break;
		}
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_domain_new: %s\n",
				strerror(-ret));
			/* hp_chain[0 .. i - 1] exist if the root does. */
			while (hp_chain[0] && i-- > 0)
				rcl_domain_free(hp_chain[i]);
			hp_chain[0] = NULL;
			return -1;
		}
		r->dom = hp_chain[hp_tree_depth];
	}
	return 0;
}

/*
 * charge, after the workers have exited: everything charged was uncharged
 * (thread exit gives back what a thread held).  Returns 0 or -1.
 */
static int charge_teardown(struct hp_run *r)
{
	uint64_t left = r->impl == IMPL_LIB ? rcl_domain_usage(hp_chain[0])
					    : atomic_load(&r->counter);
	unsigned i;
	int err = 0, ret;

	if (left) {
		fprintf(stderr, "rcl-bench: charge: %llu still charged after the run\n",
			(unsigned long long)left);
		err = -1;
	}
	for (i = hp_tree_depth; r->impl == IMPL_LIB && i > 0; i--) {
		ret = rcl_domain_free(hp_chain[i]);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_domain_free: %s\n",
				strerror(-ret));
			err = -1;
		}
	}
	if (r->impl == IMPL_LIB) {
		ret = rcl_domain_free(hp_chain[0]);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_domain_free: %s\n",
				strerror(-ret));
			err = -1;
		}
	}
	return err;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct hp_run *r = w->run;

	tls_pool = &w->pool;
	worker_setup(w);
	pthread_barrier_wait(&r->start);

	if (r->op == OP_HIT_INACTIVE) {
		/* Takes part in the rounds even after an error. */
		loop_hit_inactive(w);
		return NULL;
	}
	if (w->err)
		return NULL;
	switch (r->op) {
	case OP_HIT_ACTIVE:
		loop_hit_active(w);
		break;
	case OP_ADD_DEL:
		loop_add_del(w, 0);
		break;
	case OP_ADD_DEL_LISTED:
		loop_add_del(w, HP_LISTED_LAG);
		break;
	case OP_CHURN:
	case OP_CHURN_BATCH:
		loop_churn(w);
		break;
	case OP_CHARGE:
		loop_charge(w);
		break;
	case OP_HIT_INACTIVE:
	case NR_OPS:
		break;
	}
	return NULL;
}

/*
 * After the workers have exited (their batches are drained by then): check the
 * final state, delete every object, destroy the lruvec.  Returns 0 or -1.
 */
static int teardown_lib(struct hp_run *r)
{
	struct rcl_lruvec *lv = &r->lv;
	size_t listed = 0, idle = 0, pooled = 0, total = 0, counted;
	size_t bad_state = 0;
	struct rcl_lruvec_type_stats st;
	unsigned t;
	size_t i;
	int ret, err = 0;

	counted = rcl_lruvec_count(lv, RCL_LRU_LIST(RCL_LRU_FILE, 0), NULL) +
		  rcl_lruvec_count(lv, RCL_LRU_LIST(RCL_LRU_FILE, 1), NULL) +
		  rcl_lruvec_count(lv, RCL_LRU_UNEVICTABLE, NULL);
	if (rcl_lruvec_stats(lv, RCL_LRU_FILE, &st) != 0) {
		fprintf(stderr, "rcl-bench: rcl_lruvec_stats failed\n");
		err = -1;
	}
	if (!err && r->op == OP_HIT_ACTIVE && st.activated != 0) {
		fprintf(stderr, "rcl-bench: hit-active: %llu activations, expected none\n",
			(unsigned long long)st.activated);
		err = -1;
	}
	for (t = 0; t < r->nthreads; t++) {
		struct worker *w = &r->w[t];

		total += w->nobjs;
		pooled += w->pool.nr;
		for (i = 0; i < w->nobjs; i++) {
			struct hp_obj *o = &w->objs[i];
			unsigned f = lib_state(o);

			if (r->op == OP_HIT_ACTIVE && i < w->nwork &&
			    f != (RCL_LRU_F_LISTED | RCL_LRU_F_ACTIVE |
				  RCL_LRU_F_REFERENCED))
				bad_state++;
			if (f & (RCL_LRU_F_ISOLATED | RCL_LRU_F_PENDING)) {
				/* Nobody isolates now; batches are drained. */
				bad_state++;
				if (f & RCL_LRU_F_ISOLATED)
					continue;
			}
			if (!(f & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED))) {
				idle++;
				continue;
			}
			ret = rcl_lruvec_del(lv, &o->lru);
			if (ret) {
				fprintf(stderr, "rcl-bench: rcl_lruvec_del: %s\n",
					strerror(-ret));
				err = -1;
				continue;
			}
			listed++;
		}
	}
	if (bad_state) {
		fprintf(stderr, "rcl-bench: %s: %zu nodes in an unexpected state after the run\n",
			op_names[r->op], bad_state);
		err = -1;
	}
	if (counted != listed) {
		fprintf(stderr, "rcl-bench: %s: lists count %zu nodes, %zu found listed\n",
			op_names[r->op], counted, listed);
		err = -1;
	}
	if ((r->op == OP_CHURN || r->op == OP_CHURN_BATCH) &&
	    (idle != pooled || listed + pooled != total)) {
		fprintf(stderr, "rcl-bench: churn: %zu listed + %zu pooled != %zu objects (%zu idle)\n",
			listed, pooled, total, idle);
		err = -1;
	}
	ret = rcl_lruvec_destroy(lv);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_lruvec_destroy: %s\n",
			strerror(-ret));
		err = -1;
	}
	return err;
}

static int teardown_mutex(struct hp_run *r)
{
	size_t n = 0, expect = 0;
	struct ml_node *p;
	unsigned t;

	for (t = 0; t < r->nthreads; t++)
		expect += r->op == OP_ADD_DEL	      ? 0
			  : r->op == OP_ADD_DEL_LISTED ? HP_LISTED_LAG
						       : r->w[t].nwork;
	for (p = r->ml.head.next; p != &r->ml.head; p = p->next)
		n++;
	pthread_mutex_destroy(&r->ml.lock);
	if (n != expect || r->ml.nr != expect) {
		fprintf(stderr, "rcl-bench: mutex-lru: %zu objects on the list (nr %zu), expected %zu\n",
			n, r->ml.nr, expect);
		return -1;
	}
	return 0;
}

static void free_workers(struct worker *w, unsigned n)
{
	unsigned t;

	if (!w)
		return;
	for (t = 0; t < n; t++) {
		free(w[t].objs);
		free(w[t].order);
		free(w[t].pool.slot);
	}
	free(w);
}

/* One measurement of one (impl, op, threads).  Returns 0 or -1. */
static int hp_measure(enum hp_impl impl, enum hp_op op, unsigned nthreads,
		      unsigned run_ms, uint64_t max_ops, struct hp_result *res)
{
	struct hp_run *r;
	struct bench_cpu_snap snap0, snap1;
	size_t per_thread = HP_OBJS_PER_THREAD, spares = 0, total;
	double sum_nspo = 0.0;
	uint64_t max_ns = 0, ops = 0;
	unsigned t, started = 0;
	int ret, err = 0;

	if (op == OP_CHURN || op == OP_CHURN_BATCH)
		spares = HP_CHURN_SPARES;
	total = (per_thread + spares) * nthreads;

	r = bench_zalloc64(sizeof(*r));
	if (!r)
		goto nomem;
	r->impl = impl;
	r->op = op;
	r->nthreads = nthreads;
	r->run_ns = (uint64_t)run_ms * 1000000u;
	r->max_ops = max_ops;
	atomic_init(&r->stop, false);
	r->w = bench_zalloc64(nthreads * sizeof(*r->w));
	if (!r->w)
		goto nomem;
	for (t = 0; t < nthreads; t++) {
		struct worker *w = &r->w[t];

		w->run = r;
		w->idx = t;
		w->nwork = per_thread;
		w->nobjs = per_thread + spares;
		w->objs = aligned_alloc(64, w->nobjs * sizeof(*w->objs));
		w->order = malloc(w->nwork * sizeof(*w->order));
		if (!w->objs || !w->order)
			goto nomem;
		if (op == OP_CHURN || op == OP_CHURN_BATCH) {
			/* Evicted objects may come from any thread. */
			w->pool.cap = total;
			w->pool.slot = malloc(total * sizeof(*w->pool.slot));
			if (!w->pool.slot)
				goto nomem;
		}
	}

	if (op == OP_CHARGE) {
		if (charge_setup(r)) {
			free_workers(r->w, nthreads);
			free(r);
			return -1;
		}
	} else if (impl == IMPL_LIB) {
		struct rcl_lruvec_config cfg = {
			.ops = op == OP_CHURN_BATCH ? &churn_batch_ops
						    : &churn_ops,
			.priv = r,
		};

		ret = rcl_lruvec_init(&r->lv, &cfg);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_lruvec_init: %s\n",
				strerror(-ret));
			free_workers(r->w, nthreads);
			free(r);
			return -1;
		}
	} else {
		ret = ml_init(&r->ml);
		if (ret) {
			fprintf(stderr, "rcl-bench: pthread_mutex_init: %s\n",
				strerror(ret));
			free_workers(r->w, nthreads);
			free(r);
			return -1;
		}
	}
	bench_barrier_init(&r->round, nthreads);
	if (pthread_barrier_init(&r->start, NULL, nthreads + 1)) {
		fprintf(stderr, "rcl-bench: pthread_barrier_init failed\n");
		exit(1);
	}

	for (t = 0; t < nthreads; t++) {
		ret = pthread_create(&r->w[t].tid, NULL, worker_main, &r->w[t]);
		if (ret) {
			/* The barriers need every thread: give up. */
			fprintf(stderr, "rcl-bench: pthread_create: %s\n",
				strerror(ret));
			exit(1);
		}
		started++;
	}
	pthread_barrier_wait(&r->start);
	bench_cpu_snapshot(&snap0);
	for (t = 0; t < started; t++)
		pthread_join(r->w[t].tid, NULL);
	bench_cpu_snapshot(&snap1);
	res->other = bench_cpu_other(&snap0, &snap1);

	for (t = 0; t < nthreads; t++) {
		struct worker *w = &r->w[t];

		if (w->err) {
			fprintf(stderr, "rcl-bench: %s %s threads=%u, thread %u: %s (%d)\n",
				impl_names[impl], op_names[op], nthreads, t,
				w->err, w->err_code);
			err = -1;
			continue;
		}
		if (!w->ops) {
			fprintf(stderr, "rcl-bench: thread %u did no work\n",
				t);
			err = -1;
			continue;
		}
		if (!w->ns)
			w->ns = 1;
		sum_nspo += (double)w->ns / (double)w->ops;
		ops += w->ops;
		if (w->ns > max_ns)
			max_ns = w->ns;
	}
	if (op == OP_CHARGE) {
		if (charge_teardown(r))
			err = -1;
	} else if (impl == IMPL_LIB) {
		if (teardown_lib(r))
			err = -1;
	} else {
		if (teardown_mutex(r))
			err = -1;
	}
	pthread_barrier_destroy(&r->start);
	free_workers(r->w, nthreads);
	free(r);
	if (err)
		return -1;
	res->ns_per_op = sum_nspo / nthreads;
	res->mops = (double)ops / (double)max_ns * 1e3;
	return 0;

nomem:
	fprintf(stderr, "rcl-bench: out of memory\n");
	if (r)
		free_workers(r->w, nthreads);
	free(r);
	return -1;
}

/* What each run of hp_figure() measures. */
struct hp_figure_arg {
	enum hp_op op;
	unsigned nthreads;
	unsigned run_ms;
	uint64_t max_ops;
	unsigned only_impl;	/* 0: both; else impl + 1 (--impl) */
};

/* One run of @impl for bench_median_of_runs(): v[0] ns/op, v[1] Mops/s. */
static int hp_sample(void *arg, unsigned impl, struct bench_sample *out)
{
	const struct hp_figure_arg *a = arg;
	struct hp_result one;

	if (a->only_impl && impl != a->only_impl - 1) {
		/* Not measured (--impl): a zero figure. */
		memset(out, 0, sizeof(*out));
		return 0;
	}
	if (hp_measure((enum hp_impl)impl, a->op, a->nthreads, a->run_ms,
		       a->max_ops, &one))
		return -1;
	out->v[0] = one.ns_per_op;
	out->v[1] = one.mops;
	out->other = one.other;
	return 0;
}

/*
 * One line of the table: the median of @reps undisturbed measurements of
 * each implementation, alternating the implementations run by run.  Runs
 * disturbed by other load are repeated (counted in *@redone), up to @tries
 * times @reps runs; if too few are clean, the median of what there is, with
 * a warning (bench_median_of_runs()).  @out has NR_IMPLS entries.  Returns
 * 0 or -1.
 */
static int hp_figure(enum hp_op op, unsigned nthreads, unsigned run_ms,
		     uint64_t max_ops, unsigned only_impl, unsigned reps,
		     unsigned tries, struct hp_result *out, unsigned *redone)
{
	struct hp_figure_arg arg = { op, nthreads, run_ms, max_ops, only_impl };
	struct bench_figure fig[NR_IMPLS];
	char label[NR_IMPLS][64];
	const char *labels[NR_IMPLS];
	unsigned impl;

	for (impl = 0; impl < NR_IMPLS; impl++) {
		snprintf(label[impl], sizeof(label[impl]), "%s %s threads=%u",
			 impl_names[impl], op_names[op], nthreads);
		labels[impl] = label[impl];
	}
	if (bench_median_of_runs(NR_IMPLS, 2, reps, tries, hp_sample, &arg,
				 labels, fig, redone))
		return -1;
	for (impl = 0; impl < NR_IMPLS; impl++) {
		out[impl].ns_per_op = fig[impl].v[0];
		out[impl].mops = fig[impl].v[1];
		out[impl].disturbed = fig[impl].disturbed;
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* hotpath: the sub-command                                                   */
/* ------------------------------------------------------------------------- */

/* The figure of (@op, @t threads, @impl) in the table of @max_threads. */
static struct hp_result *hp_at(struct hp_result *res, unsigned max_threads,
			       unsigned op, unsigned t, unsigned impl)
{
	return &res[((size_t)op * max_threads + (t - 1)) * NR_IMPLS + impl];
}

static void hp_print_json(struct hp_result *res, unsigned max_threads,
			  unsigned only)
{
	unsigned op, t, impl;

	for (op = 0; op < NR_OPS; op++) {
		if (only && op != only - 1)
			continue;
		for (t = 1; t <= max_threads; t++) {
			for (impl = 0; impl < NR_IMPLS; impl++) {
				const struct hp_result *x =
					hp_at(res, max_threads, op, t, impl);

				bench_json_begin("hotpath");
				bench_json_str("impl", impl_names[impl]);
				bench_json_str("op", op_names[op]);
				bench_json_uint("threads", t);
				bench_json_dbl("ns_per_op", 3, x->ns_per_op);
				bench_json_dbl("mops", 3, x->mops);
				bench_json_end();
			}
		}
	}
}

static void hp_print_table(struct hp_result *res, unsigned max_threads,
			   unsigned run_ms, unsigned reps, unsigned only)
{
	unsigned op, t, impl, disturbed = 0;

	printf("rcl-bench hotpath: libreclaim %s, %ld CPUs online, %u ms per run, median of %u run%s\n\n",
	       rcl_version(), sysconf(_SC_NPROCESSORS_ONLN), run_ms, reps,
	       reps == 1 ? "" : "s");
	printf("%-14s %7s  %-10s %9s %10s %10s %9s\n", "op", "threads", "impl",
	       "ns/op", "Mops/s", "vs mutex", "scaling");
	for (op = 0; op < NR_OPS; op++) {
		if (only && op != only - 1)
			continue;
		for (t = 1; t <= max_threads; t++) {
			for (impl = 0; impl < NR_IMPLS; impl++) {
				const struct hp_result *x =
					hp_at(res, max_threads, op, t, impl);
				const struct hp_result *base =
					hp_at(res, max_threads, op, t,
					      IMPL_MUTEX);
				const struct hp_result *one =
					hp_at(res, max_threads, op, 1, impl);
				char vs[32] = "", sc[32] = "";

				if (impl == IMPL_LIB)
					snprintf(vs, sizeof(vs), "%.1fx",
						 x->mops / base->mops);
				if (t > 1)
					snprintf(sc, sizeof(sc), "%.2fx",
						 x->mops / one->mops);
				printf("%-14s %7u  %-10s %9.2f %10.1f %10s %9s%s\n",
				       op_names[op], t, impl_names[impl],
				       x->ns_per_op, x->mops, vs, sc,
				       x->disturbed ? "  *" : "");
				disturbed += x->disturbed;
			}
		}
	}
	printf("\n"
	       "ns/op: mean time of one operation in one thread; Mops/s: aggregate\n"
	       "throughput of all threads; vs mutex: libreclaim Mops/s over mutex-lru\n"
	       "Mops/s at the same thread count; scaling: Mops/s over the 1-thread figure.\n");
	if (disturbed)
		printf("*: measured while other processes used the CPUs; less reliable.\n");
}

int cmd_hotpath(int argc, char **argv)
{
	unsigned max_threads = 2, run_ms = HP_RUN_MS, reps = HP_REPS;
	static const char *const impl_choices[] = { "both", "libreclaim",
						    "mutex-lru", NULL };
	unsigned tries = BENCH_TRIES, only = 0, count = 0, only_impl = 0;
	bool json = false, shortrun = false;
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_FLAG("--short", &shortrun),
		BENCH_OPT_UINT("--threads", &max_threads, 1, HP_MAX_THREADS),
		BENCH_OPT_CHOICE("--op", &only, op_choices),
		BENCH_OPT_UINT("--count", &count, 1, 1000000000u),
		BENCH_OPT_CHOICE("--impl", &only_impl, impl_choices),
		BENCH_OPT_UINT("--tree-depth", &hp_tree_depth, 0,
			       RCL_DOMAIN_MAX_DEPTH - 1),
		BENCH_OPT_END,
	};
	struct hp_result *res, *lib, *base;
	unsigned op, t;
	int ret;

	ret = bench_parse_opts(argc, argv, opts);
	if (ret != BENCH_CONTINUE)
		return ret;
	if (shortrun) {
		run_ms = HP_SHORT_RUN_MS;
		reps = HP_SHORT_REPS;
		tries = 1;
	}
	if (count) {
		/*
		 * A fixed amount of work per thread (at least @count
		 * operations, whole passes), once: for instruction counts
		 * under callgrind, where two counts' difference cancels setup.
		 */
		reps = 1;
		tries = 1;
	}

	bench_warn_threads(max_threads);

	res = calloc((size_t)NR_OPS * max_threads * NR_IMPLS, sizeof(*res));
	if (!res) {
		fprintf(stderr, "rcl-bench: out of memory\n");
		return 1;
	}

	fprintf(stderr, "rcl-bench hotpath: libreclaim %s, threads 1..%u, %u ms per run, median of %u run%s\n",
		rcl_version(), max_threads, run_ms, reps, reps == 1 ? "" : "s");
	for (op = 0; op < NR_OPS; op++) {
		if (only && op != only - 1)
			continue;
		for (t = 1; t <= max_threads; t++) {
			unsigned redone = 0;

			lib = hp_at(res, max_threads, op, t, IMPL_LIB);
			base = hp_at(res, max_threads, op, t, IMPL_MUTEX);
			if (hp_figure((enum hp_op)op, t, run_ms, count,
				      only_impl, reps, tries, lib, &redone)) {
				free(res);
				return 1;
			}
			fprintf(stderr, "  %-14s threads=%-3u %s %.1f Mops/s, %s %.1f Mops/s",
				op_names[op], t, impl_names[IMPL_LIB],
				lib->mops, impl_names[IMPL_MUTEX], base->mops);
			bench_progress_end(redone);
		}
	}

	if (json)
		hp_print_json(res, max_threads, only);
	else
		hp_print_table(res, max_threads, run_ms, reps, only);
	free(res);
	return 0;
}

