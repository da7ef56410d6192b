/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench objcache: get-or-insert through the library's object cache
 * (<reclaim/objcache.h>: a strict memory domain, its background reclaimer
 * and one rcl_objcache with the default 16 shards) against the cache users
 * write by hand ("mutex-lru": a chained hash map and a move-to-front list
 * behind ONE pthread mutex, evicting from the tail while over budget), both
 * with the same byte budget.  Every operation draws a key (Zipf over the
 * key set, each thread its own seeded sequence, the same for both
 * implementations), looks it up, touches two bytes of the value on a hit;
 * on a miss it mallocs an object whose value size (64..1024 bytes) follows
 * from the key, fills it and inserts it.  The figures are throughput and
 * hit ratio over a fixed wall-time window after a warm-up that fills the
 * cache.  See bench/README.md ("objcache") for the parameters.
 */
#include <errno.h>
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

#define OC_KEYS 1000000u
#define OC_ALPHA 0.99
#define OC_BUDGET_PCT 10u
#define OC_MAX_THREADS_DEFAULT 4u	/* rows 1, 2, 4 */
#define OC_MAX_THREADS 64u
#define OC_RUN_MS 1000u
#define OC_REPS 5u
/* Warm-up: this many operations per key, shared among the threads. */
#define OC_WARM_PER_KEY 2u
/* --short: a small key space, so that the warm-up is quick. */
#define OC_SHORT_KEYS 20000u
#define OC_SHORT_RUN_MS 5u
#define OC_SHORT_REPS 1u
/* Value sizes: 64 + hash(key) % 961, 64..1024 bytes. */
#define OC_VAL_MIN 64u
#define OC_VAL_SPAN 961u
/* Operations between two looks at the clock. */
#define OC_CHUNK 32u
/* A warm cache holds at least this share of the budget. */
#define OC_FULL 0.9
_Static_assert(OC_REPS <= BENCH_MAX_REPS, "bench_median_of_runs() takes OC_REPS");

/* ------------------------------------------------------------------------- */
/* Keys and values                                                            */
/* ------------------------------------------------------------------------- */

static inline uint32_t val_size(uint64_t key)
{
	return OC_VAL_MIN + (uint32_t)(bench_mix64(key ^ 0x5bd1e995u) % OC_VAL_SPAN);
}

/*
 * An object of either implementation: the links of both (each run uses one
 * set), the key and the value.  Both allocate the same size with malloc()
 * and free() it, so the allocator does the same work for both.  Its header
 * is the fixed per-object overhead that both charge to the budget.
 */
struct oc_obj {
	struct rcl_objcache_node node;	/* libreclaim */
	struct ml_node ml;		/* mutex-lru: the LRU list */
	struct oc_obj *hnext;		/* mutex-lru: the hash chain */
	uint64_t key;
	uint32_t size;			/* value bytes */
	uint32_t pad;
	unsigned char val[];
};

#define OC_OVERHEAD ((uint64_t)sizeof(struct oc_obj))

/* What an object costs the budget, in both implementations. */
static inline uint64_t obj_weight(uint32_t size)
{
	return OC_OVERHEAD + size;
}

/* malloc, an idle header, the value filled.  NULL if out of memory. */
static struct oc_obj *obj_new(uint64_t key)
{
	uint32_t size = val_size(key);
	struct oc_obj *o = malloc(sizeof(*o) + size);

	if (!o)
		return NULL;
	memset(o, 0, sizeof(*o));
	o->key = key;
	o->size = size;
	memset(o->val, (int)(key & 0xff), size);
	return o;
}

/* A use of the value: its first and last bytes; false if not @key's. */
static inline bool obj_touch(const struct oc_obj *o, uint64_t key,
			     uint64_t *sink)
{
	*sink += o->val[0] + o->val[o->size - 1];
	return o->key == key && o->val[0] == (unsigned char)(key & 0xff) &&
	       o->val[o->size - 1] == (unsigned char)(key & 0xff);
}

/* ------------------------------------------------------------------------- */
/* The baseline: a hash map and an LRU list behind one mutex                  */
/* ------------------------------------------------------------------------- */

struct ml_map {
	_Alignas(64) struct mutex_lru lru;	/* its lock is THE lock */
	struct oc_obj **buckets;
	uint64_t mask;
	uint64_t bytes;				/* charged, as obj_weight() */
	uint64_t budget;
};

static int ml_map_init(struct ml_map *m, uint64_t budget, uint64_t max_objs)
{
	uint64_t nb = 1;

	while (nb < max_objs)
		nb <<= 1;
	m->buckets = calloc(nb, sizeof(*m->buckets));
	if (!m->buckets)
		return -ENOMEM;
	m->mask = nb - 1;
	m->bytes = 0;
	m->budget = budget;
	return ml_init(&m->lru) ? -ENOMEM : 0;
}

static inline struct oc_obj **ml_bucket(struct ml_map *m, uint64_t key)
{
	return &m->buckets[bench_mix64(key) & m->mask];
}

static inline struct oc_obj *ml_find(struct ml_map *m, uint64_t key)
{
	struct oc_obj *o;

	for (o = *ml_bucket(m, key); o; o = o->hnext)
		if (o->key == key)
			return o;
	return NULL;
}

static inline void ml_unhash(struct ml_map *m, struct oc_obj *o)
{
	struct oc_obj **pp = ml_bucket(m, o->key);

	while (*pp != o)
		pp = &(*pp)->hnext;
	*pp = o->hnext;
}

/*
 * Lock held: link @o at the front and evict from the tail while over the
 * budget.  The evicted objects are chained on *@freed (by hnext), to be
 * freed after the unlock, as a careful user does.
 */
static inline void ml_insert_locked(struct ml_map *m, struct oc_obj *o,
				    struct oc_obj **freed)
{
	struct oc_obj **pp = ml_bucket(m, o->key);

	o->hnext = *pp;
	*pp = o;
	ml_link_head(&m->lru, &o->ml);
	m->bytes += obj_weight(o->size);
	while (m->bytes > m->budget) {
		struct ml_node *t = ml_tail(&m->lru);
		struct oc_obj *v;

		if (!t || t == &o->ml)
			break;
		v = rcl_container_of(t, struct oc_obj, ml);
		ml_unlink(&m->lru, t);
		ml_unhash(m, v);
		m->bytes -= obj_weight(v->size);
		v->hnext = *freed;
		*freed = v;
	}
}

static void ml_map_destroy(struct ml_map *m)
{
	struct ml_node *p, *next;

	for (p = m->lru.head.next; p != &m->lru.head; p = next) {
		next = p->next;
		free(rcl_container_of(p, struct oc_obj, ml));
	}
	free(m->buckets);
	pthread_mutex_destroy(&m->lru.lock);
}

/* ------------------------------------------------------------------------- */
/* One run                                                                    */
/* ------------------------------------------------------------------------- */

enum oc_impl { IMPL_LIB, IMPL_MUTEX, NR_IMPLS };

static const char *const impl_names[NR_IMPLS] = { "libreclaim", "mutex-lru" };

struct oc_params {
	uint64_t keys;
	double alpha;
	unsigned budget_pct;
	uint64_t budget;	/* bytes: budget_pct of every key's obj_weight() */
	uint64_t warm_ops;	/* all threads together */
	unsigned run_ms;
	struct bench_zipf zipf;
};

struct oc_run;

struct oc_worker {
	_Alignas(64) struct oc_run *run;
	unsigned idx;
	pthread_t tid;
	uint64_t rng;
	/* the timed window */
	uint64_t ops, hits, uncached, ns;
	uint64_t gets;		/* the warm-up's and the window's */
	uint64_t sink;
	const char *err;
	int err_code;
};

struct oc_run {
	const struct oc_params *p;
	enum oc_impl impl;
	unsigned nthreads;
	struct rcl_domain *d;		/* libreclaim */
	struct rcl_objcache *c;
	struct ml_map ml;		/* mutex-lru */
	struct oc_worker *w;
	pthread_barrier_t warm;		/* the workers and main: warm-up done */
	_Alignas(64) struct bench_barrier go;	/* the workers: start timing */
	_Alignas(64) atomic_bool stop;	/* a worker failed */
};

/* The seed of thread @idx: the same for both implementations. */
static uint64_t thread_seed(unsigned idx)
{
	return bench_mix64(0x6f626a6361636865ull + idx) | 1;
}

static void fail(struct oc_worker *w, const char *what, int code)
{
	if (!w->err) {
		w->err = what;
		w->err_code = code;
	}
	atomic_store_explicit(&w->run->stop, true, memory_order_relaxed);
}

static void obj_destroy(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	free(rcl_container_of(n, struct oc_obj, node));
}

static const struct rcl_objcache_ops lib_ops = { .destructor = obj_destroy };

/* libreclaim: get, or insert on a miss.  1 hit, 0 miss, -1 failed. */
static inline int lib_op(struct oc_worker *w, struct rcl_objcache *c,
			 uint64_t key, bool *cached)
{
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n = rcl_objcache_get(c, &key, sizeof(key), &miss);
	struct oc_obj *o;
	int err;

	*cached = true;
	if (n) {
		o = rcl_container_of(n, struct oc_obj, node);
		if (!obj_touch(o, key, &w->sink))
			fail(w, "a hit found another key's value", 0);
		err = rcl_objcache_put(c, n);
		if (err)
			fail(w, "rcl_objcache_put", err);
		return w->err ? -1 : 1;
	}
	o = obj_new(key);
	if (!o) {
		fail(w, "out of memory", -ENOMEM);
		return -1;
	}
	err = rcl_objcache_insert(c, &o->node, &o->key, sizeof(o->key),
				  obj_weight(o->size), RCL_CTX_CAPABLE, &miss, &n);
	if (err == 0) {
		n = &o->node;
	} else {
		free(o);
		if (err == -ENOMEM) {
			*cached = false;	/* a miss that could not be cached */
			return 0;
		}
		if (err != -EEXIST || !n) {
			fail(w, "rcl_objcache_insert", err);
			return -1;
		}
	}
	o = rcl_container_of(n, struct oc_obj, node);
	if (!obj_touch(o, key, &w->sink))
		fail(w, "an insert found another key's value", 0);
	err = rcl_objcache_put(c, n);
	if (err)
		fail(w, "rcl_objcache_put", err);
	return w->err ? -1 : 0;
}

/* mutex-lru: the same.  The value is touched under the lock (no pins). */
static inline int ml_op(struct oc_worker *w, struct ml_map *m, uint64_t key)
{
	struct oc_obj *o, *e, *freed = NULL;
	bool ok;

	pthread_mutex_lock(&m->lru.lock);
	o = ml_find(m, key);
	if (o) {
		ml_move_head(&m->lru, &o->ml);
		ok = obj_touch(o, key, &w->sink);
		pthread_mutex_unlock(&m->lru.lock);
		if (!ok)
			fail(w, "a hit found another key's value", 0);
		return ok ? 1 : -1;
	}
	pthread_mutex_unlock(&m->lru.lock);

	o = obj_new(key);
	if (!o) {
		fail(w, "out of memory", -ENOMEM);
		return -1;
	}
	pthread_mutex_lock(&m->lru.lock);
	e = ml_find(m, key);
	if (e) {
		/* Another thread was first: use its object. */
		ml_move_head(&m->lru, &e->ml);
		ok = obj_touch(e, key, &w->sink);
		pthread_mutex_unlock(&m->lru.lock);
		free(o);
	} else {
		ml_insert_locked(m, o, &freed);
		ok = obj_touch(o, key, &w->sink);
		pthread_mutex_unlock(&m->lru.lock);
	}
	while (freed) {
		e = freed;
		freed = e->hnext;
		free(e);
	}
	if (!ok)
		fail(w, "an insert found another key's value", 0);
	return ok ? 0 : -1;
}

/* @n operations (n > 0), or until the deadline (checked every OC_CHUNK). */
static void worker_loop(struct oc_worker *w, uint64_t n, uint64_t deadline,
			bool count)
{
	struct oc_run *r = w->run;
	const struct bench_zipf *z = &r->p->zipf;
	uint64_t ops = 0, hits = 0, uncached = 0, rng = w->rng;
	unsigned i;

	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		for (i = 0; i < OC_CHUNK; i++) {
			uint64_t key = bench_zipf_next(z, &rng);
			bool cached = true;
			int ret;

			if (r->impl == IMPL_LIB)
				ret = lib_op(w, r->c, key, &cached);
			else
				ret = ml_op(w, &r->ml, key);
			if (ret < 0)
				goto out;
			hits += (uint64_t)ret;
			uncached += !cached;
		}
		ops += OC_CHUNK;
		if (n ? ops >= n : bench_now_ns() >= deadline)
			break;
	}
out:
	w->rng = rng;
	w->gets += ops;
	if (count) {
		w->ops = ops;
		w->hits = hits;
		w->uncached = uncached;
	}
}

static void *worker_main(void *arg)
{
	struct oc_worker *w = arg;
	struct oc_run *r = w->run;
	uint64_t warm = r->p->warm_ops / r->nthreads, t0;

	worker_loop(w, warm ? warm : 1, 0, false);
	pthread_barrier_wait(&r->warm);
	bench_barrier_wait(&r->go);
	t0 = bench_now_ns();
	worker_loop(w, 0, t0 + (uint64_t)r->p->run_ms * 1000000u, true);
	w->ns = bench_now_ns() - t0;
	return NULL;
}

struct oc_result {
	double ops_per_s;
	double hit_ratio;
	double fill;		/* charged / budget after the run */
	uint64_t uncached;	/* libreclaim: inserts refused (-ENOMEM) */
	double other;
};

static int lib_setup(struct oc_run *r)
{
	struct rcl_domain_config dcfg = {
		.budget = r->p->budget,
		.mode = RCL_CHARGE_STRICT,
	};
	struct rcl_objcache_config ccfg = { .ops = &lib_ops, .seed = 1 };
	int err;

	err = rcl_domain_new(&dcfg, &r->d);
	if (err) {
		fprintf(stderr, "rcl-bench: rcl_domain_new: %s\n", strerror(-err));
		return -1;
	}
	err = rcl_objcache_new(r->d, &ccfg, &r->c);
	if (err) {
		fprintf(stderr, "rcl-bench: rcl_objcache_new: %s\n", strerror(-err));
		rcl_domain_free(r->d);
		return -1;
	}
	err = rcl_domain_reclaimer_start(r->d);
	if (err) {
		fprintf(stderr, "rcl-bench: rcl_domain_reclaimer_start: %s\n",
			strerror(-err));
		rcl_objcache_destroy(r->c);
		rcl_domain_free(r->d);
		return -1;
	}
	return 0;
}

/* Stop the reclaimer, check the books, free everything.  0 or -1. */
static int lib_teardown(struct oc_run *r, uint64_t gets, struct oc_result *res)
{
	struct rcl_objcache_stats st;
	uint64_t usage;
	int err, ret = 0;

	rcl_domain_reclaimer_stop(r->d);
	usage = rcl_domain_usage(r->d);
	res->fill = (double)usage / (double)r->p->budget;
	if (rcl_objcache_stats(r->c, &st) == 0) {
		if (gets && st.hits + st.misses != gets) {
			fprintf(stderr, "rcl-bench: objcache: %llu hits + %llu misses, %llu gets\n",
				(unsigned long long)st.hits,
				(unsigned long long)st.misses,
				(unsigned long long)gets);
			ret = -1;
		}
		if (st.weight != usage || usage > r->p->budget) {
			fprintf(stderr, "rcl-bench: objcache: weight %llu, usage %llu, budget %llu\n",
				(unsigned long long)st.weight,
				(unsigned long long)usage,
				(unsigned long long)r->p->budget);
			ret = -1;
		}
	}
	err = rcl_objcache_destroy(r->c);
	if (err) {
		fprintf(stderr, "rcl-bench: rcl_objcache_destroy: %s\n", strerror(-err));
		return -1;
	}
	if (rcl_domain_usage(r->d) != 0) {
		fprintf(stderr, "rcl-bench: objcache: usage %llu after destroy\n",
			(unsigned long long)rcl_domain_usage(r->d));
		ret = -1;
	}
	err = rcl_domain_free(r->d);
	if (err) {
		fprintf(stderr, "rcl-bench: rcl_domain_free: %s\n", strerror(-err));
		ret = -1;
	}
	return ret;
}

/* One run of (@impl, @nthreads).  0 or -1. */
static int oc_measure(const struct oc_params *p, enum oc_impl impl,
		      unsigned nthreads, struct oc_result *res)
{
	struct oc_run *r = bench_zalloc64(sizeof(*r));
	struct bench_cpu_snap snap0, snap1;
	uint64_t ops = 0, hits = 0, uncached = 0, max_ns = 0, all_gets = 0;
	unsigned t;
	int ret, err = 0;

	if (!r)
		goto nomem;
	r->p = p;
	r->impl = impl;
	r->nthreads = nthreads;
	atomic_init(&r->stop, false);
	r->w = bench_zalloc64(nthreads * sizeof(*r->w));
	if (!r->w)
		goto nomem;
	if (impl == IMPL_LIB) {
		if (lib_setup(r)) {
			free(r->w);
			free(r);
			return -1;
		}
	} else if (ml_map_init(&r->ml, p->budget,
			       p->budget / obj_weight(OC_VAL_MIN) + 1)) {
		goto nomem;
	}
	bench_barrier_init(&r->go, nthreads);
	if (pthread_barrier_init(&r->warm, NULL, nthreads + 1)) {
		fprintf(stderr, "rcl-bench: pthread_barrier_init failed\n");
		exit(1);
	}
	for (t = 0; t < nthreads; t++) {
		struct oc_worker *w = &r->w[t];

		w->run = r;
		w->idx = t;
		w->rng = thread_seed(t);
		ret = pthread_create(&w->tid, NULL, worker_main, w);
		if (ret) {
			/* The barriers need every thread: give up. */
			fprintf(stderr, "rcl-bench: pthread_create: %s\n",
				strerror(ret));
			exit(1);
		}
	}
	pthread_barrier_wait(&r->warm);
	bench_cpu_snapshot(&snap0);
	for (t = 0; t < nthreads; t++)
		pthread_join(r->w[t].tid, NULL);
	bench_cpu_snapshot(&snap1);
	res->other = bench_cpu_other(&snap0, &snap1);

	for (t = 0; t < nthreads; t++) {
		struct oc_worker *w = &r->w[t];

		if (w->err) {
			fprintf(stderr, "rcl-bench: objcache %s threads=%u, thread %u: %s (%d)\n",
				impl_names[impl], nthreads, t, w->err,
				w->err_code);
			err = -1;
			continue;
		}
		ops += w->ops;
		hits += w->hits;
		uncached += w->uncached;
		all_gets += w->gets;
		if (w->ns > max_ns)
			max_ns = w->ns;
	}
	pthread_barrier_destroy(&r->warm);
	if (impl == IMPL_LIB) {
		if (lib_teardown(r, err ? 0 : all_gets, res))
			err = -1;
	} else {
		res->fill = (double)r->ml.bytes / (double)p->budget;
		ml_map_destroy(&r->ml);
	}
	free(r->w);
	free(r);
	if (err)
		return -1;
	if (!ops || !max_ns) {
		fprintf(stderr, "rcl-bench: objcache %s threads=%u did no work\n",
			impl_names[impl], nthreads);
		return -1;
	}
	res->ops_per_s = (double)ops / (double)max_ns * 1e9;
	res->hit_ratio = (double)hits / (double)ops;
	res->uncached = uncached;
	return 0;

nomem:
	fprintf(stderr, "rcl-bench: out of memory\n");
	if (r)
		free(r->w);
	free(r);
	return -1;
}

/* ------------------------------------------------------------------------- */
/* Medians                                                                    */
/* ------------------------------------------------------------------------- */

struct oc_figure_arg {
	const struct oc_params *p;
	unsigned nthreads;
	double min_fill[NR_IMPLS];	/* the least full a run's cache was */
	uint64_t uncached;	/* libreclaim: refused inserts, all runs */
};

/* One run for bench_median_of_runs(): v[0] ops/s, v[1] hit ratio. */
static int oc_sample(void *arg, unsigned impl, struct bench_sample *out)
{
	struct oc_figure_arg *a = arg;
	struct oc_result one = { 0 };

	if (oc_measure(a->p, (enum oc_impl)impl, a->nthreads, &one))
		return -1;
	out->v[0] = one.ops_per_s;
	out->v[1] = one.hit_ratio;
	out->other = one.other;
	if (one.fill < a->min_fill[impl])
		a->min_fill[impl] = one.fill;
	a->uncached += one.uncached;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The sub-command                                                            */
/* ------------------------------------------------------------------------- */

struct oc_row {
	unsigned threads;
	struct bench_figure fig[NR_IMPLS];
};

static void oc_print_json(const struct oc_params *p, const struct oc_row *rows,
			  unsigned nrows)
{
	unsigned i, impl;

	for (i = 0; i < nrows; i++) {
		for (impl = 0; impl < NR_IMPLS; impl++) {
			const struct bench_figure *f = &rows[i].fig[impl];

			bench_json_begin("objcache");
			bench_json_str("impl", impl_names[impl]);
			bench_json_uint("threads", rows[i].threads);
			bench_json_dbl("ops_per_s", 0, f->v[0]);
			bench_json_dbl("hit_ratio", 4, f->v[1]);
			bench_json_uint("keys", p->keys);
			bench_json_dbl("alpha", 3, p->alpha);
			bench_json_uint("budget_bytes", p->budget);
			bench_json_end();
		}
	}
}

static void oc_print_table(const struct oc_params *p, const struct oc_row *rows,
			   unsigned nrows, unsigned reps)
{
	unsigned i, disturbed = 0;

	printf("rcl-bench objcache: libreclaim %s, %ld CPUs online, %llu keys, Zipf %.3f, budget %llu bytes (%u %%), %u ms per run, median of %u run%s\n\n",
	       rcl_version(), sysconf(_SC_NPROCESSORS_ONLN),
	       (unsigned long long)p->keys, p->alpha,
	       (unsigned long long)p->budget, p->budget_pct, p->run_ms, reps,
	       bench_plural(reps));
	printf("%7s  %14s %14s %7s  %10s %10s %8s\n", "threads",
	       "libreclaim/s", "mutex-lru/s", "ratio", "hit lib", "hit mutex",
	       "diff");
	for (i = 0; i < nrows; i++) {
		const struct bench_figure *l = &rows[i].fig[IMPL_LIB];
		const struct bench_figure *m = &rows[i].fig[IMPL_MUTEX];
		bool dist = l->disturbed || m->disturbed;

		printf("%7u  %14.0f %14.0f %6.2fx  %10.4f %10.4f %+8.4f%s\n",
		       rows[i].threads, l->v[0], m->v[0], l->v[0] / m->v[0],
		       l->v[1], m->v[1], l->v[1] - m->v[1], dist ? "  *" : "");
		disturbed += dist;
	}
	printf("\n"
	       "ops/s: get-or-insert operations of all threads per second of wall\n"
	       "time; ratio: libreclaim over mutex-lru; hit: hits over operations in\n"
	       "the timed window; diff: libreclaim's hit ratio minus mutex-lru's.\n"
	       "Targets: hit diff >= +0.01; ratio >= 0.8x at 1 thread, >= 1.5x at 2.\n");
	if (disturbed)
		printf("*: measured while other processes used the CPUs; less reliable.\n");
}

int cmd_objcache(int argc, char **argv)
{
	unsigned max_threads = OC_MAX_THREADS_DEFAULT, keys = 0, budget_pct = OC_BUDGET_PCT;
	unsigned run_ms = 0, reps = OC_REPS, tries = BENCH_TRIES, nrows = 0, t, k;
	bool json = false, shortrun = false;
	struct oc_params p = { .alpha = OC_ALPHA };
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_FLAG("--short", &shortrun),
		BENCH_OPT_UINT("--threads", &max_threads, 1, OC_MAX_THREADS),
		BENCH_OPT_UINT("--keys", &keys, 1000, 100000000),
		BENCH_OPT_UINT("--budget-pct", &budget_pct, 1, 100),
		BENCH_OPT_UINT("--run-ms", &run_ms, 1, 60000),
		BENCH_OPT_DBL("--alpha", &p.alpha, 1e-6, 10.0),
		BENCH_OPT_END,
	};
	struct oc_row rows[8];
	long double total = 0;
	uint64_t t0;
	int ret;

	ret = bench_parse_opts(argc, argv, opts);
	if (ret != BENCH_CONTINUE)
		return ret;
	if (shortrun) {
		reps = OC_SHORT_REPS;
		tries = 1;
	}
	p.keys = keys ? keys : shortrun ? OC_SHORT_KEYS : OC_KEYS;
	p.run_ms = run_ms ? run_ms : shortrun ? OC_SHORT_RUN_MS : OC_RUN_MS;
	p.budget_pct = budget_pct;
	p.warm_ops = (uint64_t)OC_WARM_PER_KEY * p.keys;
	for (k = 0; k < p.keys; k++)
		total += (long double)obj_weight(val_size(k));
	p.budget = (uint64_t)(total * budget_pct / 100);
	bench_zipf_init(&p.zipf, p.keys, p.alpha);

	/* Rows: 1, 2, 4, ... threads up to max_threads (and it). */
	for (t = 1; t <= max_threads && nrows < 8; t *= 2)
		rows[nrows++].threads = t;
	if (rows[nrows - 1].threads != max_threads && nrows < 8)
		rows[nrows++].threads = max_threads;
	bench_warn_threads(max_threads);

	fprintf(stderr, "rcl-bench objcache: libreclaim %s, %llu keys, Zipf %.3f, budget %llu bytes (%u %% of %.0Lf), object overhead %llu bytes, warm-up %llu ops, %u ms per run, median of %u run%s\n",
		rcl_version(), (unsigned long long)p.keys, p.alpha,
		(unsigned long long)p.budget, budget_pct, total,
		(unsigned long long)OC_OVERHEAD, (unsigned long long)p.warm_ops,
		p.run_ms, reps, bench_plural(reps));
	t0 = bench_now_ns();
	for (k = 0; k < nrows; k++) {
		struct oc_figure_arg arg = { &p, rows[k].threads, { 1e9, 1e9 }, 0 };
		char label[NR_IMPLS][64];
		const char *labels[NR_IMPLS];
		unsigned impl, redone = 0;

		for (impl = 0; impl < NR_IMPLS; impl++) {
			snprintf(label[impl], sizeof(label[impl]),
				 "objcache %s threads=%u", impl_names[impl],
				 rows[k].threads);
			labels[impl] = label[impl];
		}
		if (bench_median_of_runs(NR_IMPLS, 2, reps, tries, oc_sample,
					 &arg, labels, rows[k].fig, &redone))
			return 1;
		fprintf(stderr, "  threads=%-3u %s %.0f ops/s hit %.4f, %s %.0f ops/s hit %.4f",
			rows[k].threads, impl_names[IMPL_LIB],
			rows[k].fig[IMPL_LIB].v[0], rows[k].fig[IMPL_LIB].v[1],
			impl_names[IMPL_MUTEX], rows[k].fig[IMPL_MUTEX].v[0],
			rows[k].fig[IMPL_MUTEX].v[1]);
		fprintf(stderr, "; least full %.1f %% / %.1f %% of the budget",
			arg.min_fill[IMPL_LIB] * 100.0,
			arg.min_fill[IMPL_MUTEX] * 100.0);
		if (arg.uncached)
			fprintf(stderr, ", %llu inserts refused",
				(unsigned long long)arg.uncached);
		bench_progress_end(redone);
		for (impl = 0; impl < NR_IMPLS; impl++)
			if (arg.min_fill[impl] < OC_FULL)
				fprintf(stderr, "rcl-bench: warning: objcache %s threads=%u: the cache held only %.0f %% of the budget after a run: the warm-up is too short\n",
					impl_names[impl], rows[k].threads,
					arg.min_fill[impl] * 100.0);
	}
	fprintf(stderr, "rcl-bench objcache: %.1f s\n",
		(double)(bench_now_ns() - t0) / 1e9);

	if (json)
		oc_print_json(&p, rows, nrows);
	else
		oc_print_table(&p, rows, nrows, reps);
	return 0;
}
