/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench - benchmarks of libreclaim.
 *
 * usage: rcl-bench <command> [options]
 *
 * main() only dispatches to a sub-command (see the table `commands` at the
 * end of the file); each sub-command parses its own options.  Exit status:
 * 0 success, 1 the benchmark failed (a library call returned an error, a
 * state check failed, out of memory), 2 bad usage.
 *
 * hotpath: the cost of the LRU operations a cache performs on every request,
 * for libreclaim and for the baseline users write by hand ("mutex-lru": a
 * doubly linked move-to-front list behind one pthread mutex).  With T threads
 * every thread works on the SAME lruvec (the same baseline list), each on its
 * own disjoint set of objects.  See bench/README.md for what each operation
 * measures and how the figures are computed.
 *
 * windup: a shrinker backlog deferred by calls that cannot scan, then worked
 * off by capable calls, under each of the three damping policies; and whether
 * gentle calls ever scan a small cache.  Deterministic (no timing).
 *
 * shrink-scale: throughput of rcl_shrinker_registry_shrink() on one registry
 * of 64 shrinkers, called by T threads at once.
 *
 * stream: two threads stream through a data set 4x a memory domain's budget
 * while re-reading a hot set, charging every miss; direct reclaim only,
 * with the background reclaimer, and with the pre-2014 (nonproportional)
 * scan.  The user-space analogue of vm-scalability.
 *
 * writeback: a write-back cache of the blocks of a real file, simoop-like:
 * writers dirty blocks, a reader reads, an allocator charges new memory;
 * reclaim writes dirty blocks itself (the pre-2017 kernel), or the
 * library's flusher thread writes them (all, or proportional requests).
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
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <reclaim/reclaim.h>

/* ------------------------------------------------------------------------- */
/* Parameters                                                                 */
/* ------------------------------------------------------------------------- */

/* Objects per thread: 4096 x 64 bytes = 256 KiB, inside a 2 MiB L2. */
#define HP_OBJS_PER_THREAD 4096u
/* churn: idle objects each thread starts with in its free pool. */
#define HP_CHURN_SPARES 64u
/* churn: one rcl_lruvec_shrink_inactive() of this many per as many inserts. */
#define HP_CHURN_SCAN 32u
/* churn: inserts between two looks at the clock. */
#define HP_CHURN_CHUNK 1024u
#define HP_MAX_THREADS 256u
/* Normal run: wall time of one measurement, and measurements per figure. */
#define HP_RUN_MS 150u
#define HP_REPS 5u
/* --short: just enough to exercise every code path. */
#define HP_SHORT_RUN_MS 2u
#define HP_SHORT_REPS 1u
/*
 * Other load on the machine: a run during which other processes (or the
 * hypervisor: steal time) used more than HP_OTHER_MAX of the CPU time
 * available is repeated, up to HP_TRIES times as many runs as wanted in all.
 */
#define HP_OTHER_MAX 0.10
#define HP_TRIES 3u

/* ------------------------------------------------------------------------- */
/* Objects                                                                    */
/* ------------------------------------------------------------------------- */

/* The baseline's list link. */
struct ml_node {
	struct ml_node *prev;
	struct ml_node *next;
};

/*
 * A cached object: a key, a small payload, and the links of both
 * implementations (each run uses one of them), so both see the same object
 * size and layout: one cache line.
 */
struct bench_obj {
	_Alignas(64) uint64_t key;
	struct rcl_lru_node lru;
	struct ml_node ml;
	uint64_t payload[2];
};

_Static_assert(sizeof(struct bench_obj) == 64, "an object is one cache line");

/* A LIFO free pool of idle objects (churn). */
struct obj_pool {
	struct bench_obj **slot;
	size_t nr;
	size_t cap;
};

static inline struct bench_obj *pool_pop(struct obj_pool *p)
{
	return p->nr ? p->slot[--p->nr] : NULL;
}

static inline bool pool_push(struct obj_pool *p, struct bench_obj *o)
{
	if (p->nr == p->cap)
		return false;
	p->slot[p->nr++] = o;
	return true;
}

/* ------------------------------------------------------------------------- */
/* The baseline: a move-to-front list behind one mutex                        */
/* ------------------------------------------------------------------------- */

struct mutex_lru {
	pthread_mutex_t lock;
	struct ml_node head;	/* next: the most recent; prev: the tail */
	size_t nr;
};

static int ml_init(struct mutex_lru *l)
{
	l->head.prev = l->head.next = &l->head;
	l->nr = 0;
	return pthread_mutex_init(&l->lock, NULL);
}

static inline void ml_link_head(struct mutex_lru *l, struct ml_node *n)
{
	n->prev = &l->head;
	n->next = l->head.next;
	l->head.next->prev = n;
	l->head.next = n;
	l->nr++;
}

static inline void ml_unlink(struct mutex_lru *l, struct ml_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = NULL;
	l->nr--;
}

static inline void ml_move_head(struct mutex_lru *l, struct ml_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = &l->head;
	n->next = l->head.next;
	l->head.next->prev = n;
	l->head.next = n;
}

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * CPU time used on the whole machine (from /proc/stat, including steal time)
 * and by this process, to tell how much of a run's CPU time others took.
 */
struct cpu_snap {
	bool ok;
	uint64_t busy_ticks;	/* all CPUs, in clock ticks */
	uint64_t self_us;	/* this process, microseconds */
	uint64_t wall_ns;
};

static void cpu_snap(struct cpu_snap *s)
{
	unsigned long long v[8] = { 0 };
	struct rusage ru;
	FILE *f;

	s->ok = false;
	s->wall_ns = now_ns();
	f = fopen("/proc/stat", "r");
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
		/* user nice system idle iowait irq softirq steal */
		s->busy_ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
		s->ok = true;
	}
	fclose(f);
	if (getrusage(RUSAGE_SELF, &ru) != 0) {
		s->ok = false;
		return;
	}
	s->self_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u +
		     (uint64_t)ru.ru_utime.tv_usec +
		     (uint64_t)ru.ru_stime.tv_sec * 1000000u +
		     (uint64_t)ru.ru_stime.tv_usec;
}

/* The share of the CPU time between @a and @b that other processes used. */
static double cpu_other(const struct cpu_snap *a, const struct cpu_snap *b)
{
	static long hz, ncpu;
	double busy_us, self_us, avail_us;

	if (!a->ok || !b->ok)
		return 0.0;
	if (!hz) {
		hz = sysconf(_SC_CLK_TCK);
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		if (hz <= 0 || ncpu <= 0) {
			hz = -1;
			return 0.0;
		}
	}
	if (hz < 0)
		return 0.0;
	busy_us = (double)(b->busy_ticks - a->busy_ticks) * 1e6 / (double)hz;
	self_us = (double)(b->self_us - a->self_us);
	avail_us = (double)(b->wall_ns - a->wall_ns) / 1e3 * (double)ncpu;
	if (avail_us <= 0.0 || busy_us <= self_us)
		return 0.0;
	return (busy_us - self_us) / avail_us;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/*
 * A spinning barrier.  pthread_barrier_wait() puts the waiters to sleep, and
 * waking a thread on an idle (virtual) CPU takes tens of microseconds: the
 * threads would start their timed passes that far apart, and passes that
 * short would not overlap at all.  Spinning releases them together.  It
 * yields after a while, for more threads than CPUs (and valgrind).
 */
struct spin_barrier {
	atomic_uint count;
	atomic_uint gen;
	unsigned n;
};

static void spin_barrier_init(struct spin_barrier *b, unsigned n)
{
	atomic_init(&b->count, 0);
	atomic_init(&b->gen, 0);
	b->n = n;
}

/* Returns true in exactly one thread, like PTHREAD_BARRIER_SERIAL_THREAD. */
static bool spin_barrier_wait(struct spin_barrier *b)
{
	unsigned gen = atomic_load_explicit(&b->gen, memory_order_acquire);
	unsigned spins = 0;

	if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 ==
	    b->n) {
		atomic_store_explicit(&b->count, 0, memory_order_relaxed);
		atomic_store_explicit(&b->gen, gen + 1, memory_order_release);
		return true;
	}
	while (atomic_load_explicit(&b->gen, memory_order_acquire) == gen) {
		if (++spins < 2000)
			cpu_relax();
		else
			sched_yield();
	}
	return false;
}

/* xorshift64*: a deterministic shuffle, the same for both implementations. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* ------------------------------------------------------------------------- */
/* hotpath: one measurement                                                   */
/* ------------------------------------------------------------------------- */

enum hp_impl { IMPL_LIB, IMPL_MUTEX, NR_IMPLS };
enum hp_op { OP_HIT_ACTIVE, OP_HIT_INACTIVE, OP_ADD_DEL, OP_CHURN, NR_OPS };

static const char *const impl_names[NR_IMPLS] = { "libreclaim", "mutex-lru" };
static const char *const op_names[NR_OPS] = {
	"hit-active", "hit-inactive", "add-del", "churn",
};

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
	struct bench_obj *objs;	/* this thread's objects */
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
	enum hp_impl impl;
	enum hp_op op;
	unsigned nthreads;
	struct worker *w;
	_Alignas(64) struct spin_barrier round;	/* the workers (hit-inactive) */
	_Alignas(64) bool cont;		/* hit-inactive: run another round */
	pthread_barrier_t start;	/* the workers and main */
};

/* Zeroed memory aligned for @size bytes of a type with 64-byte alignment. */
static void *zalloc64(size_t size)
{
	void *p;

	size = (size + 63) / 64 * 64;
	p = aligned_alloc(64, size);
	if (p)
		memset(p, 0, size);
	return p;
}

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
static bool stopped(struct hp_run *r, uint64_t deadline)
{
	return atomic_load_explicit(&r->stop, memory_order_relaxed) ||
	       now_ns() >= deadline;
}

static unsigned lib_state(const struct bench_obj *o)
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
	struct bench_obj *o = rcl_container_of(node, struct bench_obj, lru);

	(void)ctl;
	rcl_lru_node_init(node);
	if (!pool_push(tls_pool, o))
		abort();	/* cannot happen: a pool holds every object */
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops churn_ops = { .evict = churn_evict };

/* Untimed: initialise this thread's objects and put them in the cache. */
static void worker_setup(struct worker *w)
{
	struct hp_run *r = w->run;
	struct rcl_lruvec *lv = &r->lv;
	uint64_t seed = 0x9E3779B97F4A7C15ull * (w->idx + 1);
	size_t i;
	int ret;

	for (i = 0; i < w->nobjs; i++) {
		struct bench_obj *o = &w->objs[i];

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
		size_t j = (size_t)(rng_next(&seed) % i);
		uint32_t t = w->order[i - 1];

		w->order[i - 1] = w->order[j];
		w->order[j] = t;
	}

	if (r->op == OP_ADD_DEL)
		return;	/* the objects start idle */

	for (i = 0; i < w->nwork; i++) {
		struct bench_obj *o = &w->objs[i];

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
		case NR_OPS:
			break;
		}
	}
	if (r->op == OP_CHURN) {
		for (i = w->nwork; i < w->nobjs; i++)
			pool_push(&w->pool, &w->objs[i]);
	}
}

/* hit-active, hit-inactive (baseline): move to front. */
static inline void ml_hit(struct mutex_lru *l, struct bench_obj *o)
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
	struct bench_obj *objs = w->objs;
	size_t i, n = w->nwork;
	uint64_t ops = 0, sink = 0, t0, t1;
	int bad = 0;

	t0 = now_ns();
	if (r->impl == IMPL_LIB) {
		do {
			for (i = 0; i < n; i++) {
				struct bench_obj *o = &objs[order[i]];

				sink += o->key;
				bad |= rcl_lruvec_mark_accessed(lv, &o->lru);
			}
			ops += n;
		} while (!stopped(r, t0 + r->run_ns));
	} else {
		do {
			for (i = 0; i < n; i++) {
				struct bench_obj *o = &objs[order[i]];

				sink += o->key;
				ml_hit(ml, o);
			}
			ops += n;
		} while (!stopped(r, t0 + r->run_ns));
	}
	t1 = now_ns();
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
	struct bench_obj *objs = w->objs;
	size_t i, n = w->nwork;
	uint64_t ops = 0, ns = 0, sink = 0, rounds = 0, t0, t1;
	uint64_t deadline = now_ns() + r->run_ns;
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
		if (spin_barrier_wait(&r->round))
			r->cont = rounds == 0 || !stopped(r, deadline);
		spin_barrier_wait(&r->round);
		if (!r->cont)
			break;
		rounds++;
		if (w->err)
			continue;

		if (r->impl == IMPL_LIB) {
			int bad = 0;

			t0 = now_ns();
			for (i = 0; i < n; i++) {
				struct bench_obj *o = &objs[order[i]];

				sink += o->key;
				bad |= rcl_lruvec_mark_accessed(lv, &o->lru);
			}
			t1 = now_ns();
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
			t0 = now_ns();
			for (i = 0; i < n; i++) {
				struct bench_obj *o = &objs[order[i]];

				sink += o->key;
				ml_hit(ml, o);
			}
			t1 = now_ns();
		}
		ns += t1 - t0;
		ops += n;
	}
	w->ops = ops;
	w->ns = ns;
	w->sink = sink;
}

/* add-del: put an idle object in the cache and take it out again. */
static void loop_add_del(struct worker *w)
{
	struct hp_run *r = w->run;
	struct rcl_lruvec *lv = &r->lv;
	struct mutex_lru *ml = &r->ml;
	const uint32_t *order = w->order;
	struct bench_obj *objs = w->objs;
	size_t i, n = w->nwork;
	uint64_t ops = 0, t0, t1;
	int bad = 0;

	t0 = now_ns();
	if (r->impl == IMPL_LIB) {
		do {
			for (i = 0; i < n; i++) {
				struct bench_obj *o = &objs[order[i]];

				bad |= rcl_lruvec_add(lv, &o->lru,
						      RCL_LRU_FILE, 1, 0);
				bad |= rcl_lruvec_del(lv, &o->lru);
			}
			ops += n;
		} while (!stopped(r, t0 + r->run_ns));
	} else {
		do {
			for (i = 0; i < n; i++) {
				struct bench_obj *o = &objs[order[i]];

				pthread_mutex_lock(&ml->lock);
				ml_link_head(ml, &o->ml);
				pthread_mutex_unlock(&ml->lock);
				pthread_mutex_lock(&ml->lock);
				ml_unlink(ml, &o->ml);
				pthread_mutex_unlock(&ml->lock);
			}
			ops += n;
		} while (!stopped(r, t0 + r->run_ns));
	}
	t1 = now_ns();
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

	t0 = now_ns();
	if (r->impl == IMPL_LIB) {
		do {
			for (i = 0; i < HP_CHURN_CHUNK; i++) {
				struct bench_obj *o = pool_pop(pool);

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
		} while (!stopped(r, t0 + r->run_ns));
	} else {
		do {
			for (i = 0; i < HP_CHURN_CHUNK; i++) {
				struct bench_obj *o = pool_pop(pool);
				struct ml_node *tail;

				o->key = key++;
				o->payload[0] = o->key * 3;
				pthread_mutex_lock(&ml->lock);
				ml_link_head(ml, &o->ml);
				tail = ml->head.prev;
				ml_unlink(ml, tail);
				pthread_mutex_unlock(&ml->lock);
				o = rcl_container_of(tail, struct bench_obj,
						     ml);
				pool_push(pool, o);
			}
			ops += HP_CHURN_CHUNK;
		} while (!stopped(r, t0 + r->run_ns));
	}
out:
	t1 = now_ns();
	w->ops = ops;
	w->ns = t1 - t0;
	w->next_key = key;
	if (bad)
		fail(w, "churn: rcl_lruvec_add/shrink_inactive", bad);
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
		loop_add_del(w);
		break;
	case OP_CHURN:
		loop_churn(w);
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
			struct bench_obj *o = &w->objs[i];
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
	if (r->op == OP_CHURN && (idle != pooled || listed + pooled != total)) {
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
		expect += r->op == OP_ADD_DEL ? 0 : r->w[t].nwork;
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
		      unsigned run_ms, struct hp_result *res)
{
	struct hp_run *r;
	struct cpu_snap snap0, snap1;
	size_t per_thread = HP_OBJS_PER_THREAD, spares = 0, total;
	double sum_nspo = 0.0;
	uint64_t max_ns = 0, ops = 0;
	unsigned t, started = 0;
	int ret, err = 0;

	if (op == OP_CHURN)
		spares = HP_CHURN_SPARES;
	total = (per_thread + spares) * nthreads;

	r = zalloc64(sizeof(*r));
	if (!r)
		goto nomem;
	r->impl = impl;
	r->op = op;
	r->nthreads = nthreads;
	r->run_ns = (uint64_t)run_ms * 1000000u;
	atomic_init(&r->stop, false);
	r->w = zalloc64(nthreads * sizeof(*r->w));
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
		if (op == OP_CHURN) {
			/* Evicted objects may come from any thread. */
			w->pool.cap = total;
			w->pool.slot = malloc(total * sizeof(*w->pool.slot));
			if (!w->pool.slot)
				goto nomem;
		}
	}

	if (impl == IMPL_LIB) {
		struct rcl_lruvec_config cfg = { .ops = &churn_ops, .priv = r };

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
	spin_barrier_init(&r->round, nthreads);
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
	cpu_snap(&snap0);
	for (t = 0; t < started; t++)
		pthread_join(r->w[t].tid, NULL);
	cpu_snap(&snap1);
	res->other = cpu_other(&snap0, &snap1);

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
	if (impl == IMPL_LIB) {
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

/*
 * One line of the table: the median of @reps undisturbed measurements of
 * each implementation, alternating the implementations run by run.  Runs
 * disturbed by other load are repeated (counted in *@redone), up to @tries
 * times @reps runs; if too few are clean, the median of what there is, with
 * a warning.  @out has NR_IMPLS entries.  Returns 0 or -1.
 */
static int hp_figure(enum hp_op op, unsigned nthreads, unsigned run_ms,
		     unsigned reps, unsigned tries, struct hp_result *out,
		     unsigned *redone)
{
	double ns[NR_IMPLS][HP_REPS * HP_TRIES];
	double mops[NR_IMPLS][HP_REPS * HP_TRIES];
	double all_ns[NR_IMPLS][HP_REPS * HP_TRIES];
	double all_mops[NR_IMPLS][HP_REPS * HP_TRIES];
	unsigned clean[NR_IMPLS] = { 0 }, all[NR_IMPLS] = { 0 };
	unsigned impl, attempt;

	if (reps > HP_REPS)
		reps = HP_REPS;
	if (tries > HP_TRIES)
		tries = HP_TRIES;
	for (attempt = 0; attempt < reps * tries; attempt++) {
		bool more = false;

		for (impl = 0; impl < NR_IMPLS; impl++) {
			struct hp_result one;

			if (clean[impl] >= reps)
				continue;
			more = true;
			if (hp_measure((enum hp_impl)impl, op, nthreads, run_ms,
				       &one))
				return -1;
			all_ns[impl][all[impl]] = one.ns_per_op;
			all_mops[impl][all[impl]++] = one.mops;
			if (one.other <= HP_OTHER_MAX) {
				ns[impl][clean[impl]] = one.ns_per_op;
				mops[impl][clean[impl]++] = one.mops;
			} else if (tries > 1) {
				(*redone)++;
			}
		}
		if (!more)
			break;
	}
	for (impl = 0; impl < NR_IMPLS; impl++) {
		out[impl].disturbed = clean[impl] < reps && tries > 1;
		if (out[impl].disturbed)
			fprintf(stderr, "rcl-bench: warning: %s %s threads=%u: %u of %u runs undisturbed by other load; the figure is less reliable\n",
				impl_names[impl], op_names[op], nthreads,
				clean[impl], all[impl]);
		if (clean[impl]) {
			out[impl].ns_per_op = median(ns[impl], clean[impl]);
			out[impl].mops = median(mops[impl], clean[impl]);
		} else {
			out[impl].ns_per_op = median(all_ns[impl], all[impl]);
			out[impl].mops = median(all_mops[impl], all[impl]);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* hotpath: the sub-command                                                   */
/* ------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: rcl-bench <command> [options]\n"
	      "       rcl-bench --help\n"
	      "\n"
	      "commands:\n"
	      "  hotpath [--threads N] [--json] [--short]\n"
	      "      Cost of the per-request LRU operations (hit-active,\n"
	      "      hit-inactive, add-del, churn) in libreclaim and in a\n"
	      "      mutex-protected move-to-front list (mutex-lru), for 1..N\n"
	      "      threads sharing one cache.\n"
	      "      --threads N  measure 1..N threads (default 2, at most 256)\n"
	      "      --json       only JSON on standard output, one object a line\n"
	      "      --short      a tiny run (for CI: checks that it works)\n"
	      "  windup [--json]\n"
	      "      A shrinker backlog deferred by 1000 calls that cannot scan,\n"
	      "      then worked off by capable calls, under each damping policy\n"
	      "      (kernel-modern, kernel-2014, rcl-default); and how much a\n"
	      "      small cache is scanned at priority 12.  Deterministic.\n"
	      "      --json       only JSON on standard output, one object a line\n"
	      "  shrink-scale [--threads N] [--json] [--short]\n"
	      "      Throughput of rcl_shrinker_registry_shrink() on one registry\n"
	      "      of 64 shrinkers, for 1..N threads calling it at once.\n"
	      "      --threads N  measure 1..N threads (default 2, at most 256)\n"
	      "      --json       only JSON on standard output, one object a line\n"
	      "      --short      a tiny run (for CI: checks that it works)\n"
	      "  stream [--json] [--short] [--watermark-scale-factor N]\n"
	      "      Two threads stream through a data set 4x a memory domain's\n"
	      "      budget while re-reading a hot set of 20 % of it, charging\n"
	      "      every miss; with direct reclaim only (direct), with the\n"
	      "      background reclaimer (background), and with the pre-2014\n"
	      "      scan (nonproportional).\n"
	      "      --json       only JSON on standard output, one object a line\n"
	      "      --short      a tiny run (for CI: checks that it works)\n"
	      "      --watermark-scale-factor N  the domain's watermark gap in\n"
	      "                   1/10000 of the budget (default: the library's, 100)\n"
	      "  writeback [--json] [--short] [--watermark-scale-factor N]\n"
	      "            [--dirty-background-ratio N] [--dirty-ratio N]\n"
	      "            [--reclaim-sync batch|object] [--rounds N]\n"
	      "      A write-back cache of the blocks of a temporary file: writers\n"
	      "      dirty blocks, a reader reads, an allocator charges new memory;\n"
	      "      reclaim writes dirty blocks itself (reclaim-writes), or the\n"
	      "      library's flusher thread writes them (flusher-all,\n"
	      "      flusher-proportional).  Write and allocation latencies.\n"
	      "      --json       only JSON on standard output, one object a line\n"
	      "      --short      a tiny run (for CI: checks that it works)\n"
	      "      --watermark-scale-factor N  as for stream\n"
	      "      --dirty-background-ratio N, --dirty-ratio N  the domain's\n"
	      "                   dirty thresholds in % of the budget (default 50\n"
	      "                   and 70, so that dirty blocks reach the LRU tail;\n"
	      "                   the library's own defaults are 10 and 20)\n"
	      "      --reclaim-sync batch|object  reclaim-writes: one fdatasync()\n"
	      "                   per scan batch that wrote (default, as the\n"
	      "                   flusher's per batch) or per object (as the\n"
	      "                   kernel's reclaim wrote single pages)\n"
	      "      --rounds N   rounds of the three modes, interleaved and\n"
	      "                   pooled (1-20; default 3, --short 1)\n",
	      f);
}

static bool parse_uint(const char *s, unsigned min, unsigned max,
		       unsigned *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

/*
 * A numeric option, as "NAME N" or "NAME=N", at argv[*i].  Returns 0 if
 * argv[*i] is not that option, 1 if it is and its value is in [min, max]
 * (*i then points at the last word used), -1 if its value is missing or bad.
 */
static int opt_uint(int argc, char **argv, int *i, const char *name,
		    unsigned min, unsigned max, unsigned *out)
{
	const char *a = argv[*i];
	size_t len = strlen(name);

	if (strncmp(a, name, len))
		return 0;
	if (!a[len]) {
		if (*i + 1 >= argc)
			return -1;
		return parse_uint(argv[++*i], min, max, out) ? 1 : -1;
	}
	if (a[len] != '=')
		return 0;
	return parse_uint(a + len + 1, min, max, out) ? 1 : -1;
}

/* The figure of (@op, @t threads, @impl) in the table of @max_threads. */
static struct hp_result *hp_at(struct hp_result *res, unsigned max_threads,
			       unsigned op, unsigned t, unsigned impl)
{
	return &res[((size_t)op * max_threads + (t - 1)) * NR_IMPLS + impl];
}

static void hp_print_json(struct hp_result *res, unsigned max_threads)
{
	unsigned op, t, impl;

	for (op = 0; op < NR_OPS; op++) {
		for (t = 1; t <= max_threads; t++) {
			for (impl = 0; impl < NR_IMPLS; impl++) {
				const struct hp_result *x =
					hp_at(res, max_threads, op, t, impl);

				printf("{\"bench\":\"hotpath\",\"impl\":\"%s\",\"op\":\"%s\",\"threads\":%u,\"ns_per_op\":%.3f,\"mops\":%.3f}\n",
				       impl_names[impl], op_names[op], t,
				       x->ns_per_op, x->mops);
			}
		}
	}
}

static void hp_print_table(struct hp_result *res, unsigned max_threads,
			   unsigned run_ms, unsigned reps)
{
	unsigned op, t, impl, disturbed = 0;

	printf("rcl-bench hotpath: libreclaim %s, %ld CPUs online, %u ms per run, median of %u run%s\n\n",
	       rcl_version(), sysconf(_SC_NPROCESSORS_ONLN), run_ms, reps,
	       reps == 1 ? "" : "s");
	printf("%-12s %7s  %-10s %9s %10s %10s %9s\n", "op", "threads", "impl",
	       "ns/op", "Mops/s", "vs mutex", "scaling");
	for (op = 0; op < NR_OPS; op++) {
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
				printf("%-12s %7u  %-10s %9.2f %10.1f %10s %9s%s\n",
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

static int cmd_hotpath(int argc, char **argv)
{
	unsigned max_threads = 2, run_ms = HP_RUN_MS, reps = HP_REPS;
	unsigned tries = HP_TRIES;
	bool json = false, shortrun = false;
	struct hp_result *res, *lib, *base;
	long ncpu;
	unsigned op, t;
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--short")) {
			shortrun = true;
		} else if ((r = opt_uint(argc, argv, &i, "--threads",
					   1, HP_MAX_THREADS, &max_threads))) {
			if (r < 0)
				goto bad;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			goto bad;
		}
	}
	if (shortrun) {
		run_ms = HP_SHORT_RUN_MS;
		reps = HP_SHORT_REPS;
		tries = 1;
	}

	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu > 0 && max_threads > (unsigned long)ncpu)
		fprintf(stderr, "rcl-bench: warning: %u threads on %ld online CPUs: the figures for more threads than CPUs measure the scheduler\n",
			max_threads, ncpu);

	res = calloc((size_t)NR_OPS * max_threads * NR_IMPLS, sizeof(*res));
	if (!res) {
		fprintf(stderr, "rcl-bench: out of memory\n");
		return 1;
	}

	fprintf(stderr, "rcl-bench hotpath: libreclaim %s, threads 1..%u, %u ms per run, median of %u run%s\n",
		rcl_version(), max_threads, run_ms, reps, reps == 1 ? "" : "s");
	for (op = 0; op < NR_OPS; op++) {
		for (t = 1; t <= max_threads; t++) {
			unsigned redone = 0;

			lib = hp_at(res, max_threads, op, t, IMPL_LIB);
			base = hp_at(res, max_threads, op, t, IMPL_MUTEX);
			if (hp_figure((enum hp_op)op, t, run_ms, reps, tries,
				      lib, &redone)) {
				free(res);
				return 1;
			}
			fprintf(stderr, "  %-12s threads=%-3u %s %.1f Mops/s, %s %.1f Mops/s",
				op_names[op], t, impl_names[IMPL_LIB],
				lib->mops, impl_names[IMPL_MUTEX], base->mops);
			if (redone)
				fprintf(stderr, " (%u disturbed run%s repeated)",
					redone, redone == 1 ? "" : "s");
			fputc('\n', stderr);
		}
	}

	if (json)
		hp_print_json(res, max_threads);
	else
		hp_print_table(res, max_threads, run_ms, reps);
	free(res);
	return 0;

bad:
	usage(stderr);
	return 2;
}

/* ------------------------------------------------------------------------- */
/* windup: a backlog deferred while reclaim could not work, then worked off   */
/* ------------------------------------------------------------------------- */

/*
 * The scenario of the 2014 thread that gave the kernel its windup clamp.  A
 * big cache that nobody refills receives K calls from a reclaimer that
 * cannot do the work (its context lacks RCL_CTX_MAY_BLOCK, so the scan
 * callback answers RCL_SHRINK_STOP and each call's pressure is deferred),
 * then capable calls until the backlog is below one batch.  The question is
 * how much of the cache one capable call throws away, and how many calls
 * the backlog takes to go.  A separate small cache, re-filled as fast as it
 * is scanned, shows the other side of the damping: whether gentle pressure
 * on a small cache ever scans it at all.
 *
 * Hand check of the first capable call of each policy, from the formulas of
 * enum rcl_shrink_policy in <reclaim/shrinker.h> (F = 100000, seeks 2,
 * batch 128, priority 6; the program's output must match):
 *
 * kernel-modern: delta = ((100000 >> 6) * 4) / 2 = (1562 * 4) / 2 = 3124.
 *   Each deferring call adds delta to the backlog, capped at 2F = 200000
 *   (reached at the 65th of the 1000 calls).  First capable call: total =
 *   min((200000 >> 6) + 3124, 2F) = 3125 + 3124 = 6249, scanned in whole
 *   batches (the 105 left are below a batch and below freeable): 48 x 128 =
 *   6144 freed = 6.144% of F; backlog' = min(200000 + 3124 - 6144, 2F) =
 *   196980.  Every later call frees about (2f >> 6) + f / 32 = f / 16 of
 *   the f objects left, with the backlog at its 2f cap, until f / 16 is
 *   below a batch (f below about 2048): from then on nothing is scanned and
 *   the backlog (about 2f) never gets below 128: not drained, -1.
 * kernel-2014: the same delta, 3124 < F / 4, so every target is clamped to
 *   F / 2: the backlog winds up to 50000 (after 17 calls) and stays there.
 *   First capable call: total = min(50000 + 3124, F / 2) = 50000, 390 whole
 *   batches = 49920 freed = 49.92% of F; backlog' = 50000 - 49920 = 80 <
 *   128: drained in 1 call, leaving 50080 objects.
 * rcl-default: delta = ((F << 16 >> 6) * 4 / 2) >> 16 = 3125 exactly; the
 *   backlog winds up to its cap F / 2 = 50000 (after 16 calls).  First
 *   capable call: drain = min(50000, max(50000 >> 6, F / 8 = 12500)) =
 *   12500; total = 12500 + 3125 = 15625 (not above F / 2), 122 batches =
 *   15616 freed = 15.616% of F; backlog' = 50000 + 3125 - 15616 = 37509.
 *   The next calls (f = 84384, 71200, 60192, 50848, 42912: drain f / 8,
 *   then the last 4369; delta f / 32) free 13184, 11008, 9344, 7936 and
 *   5632, leaving backlogs of 26962, 18179, 10716, 4369 and 78 < 128:
 *   drained in 6 calls, leaving 37280 objects.
 *
 * Small cache (1000 objects, re-created, priority 12, 1000 calls): the
 * kernel's delta is ((1000 >> 12) * 4) / 2 = 0, so both kernel policies
 * scan nothing.  rcl-default keeps ((1000 << 16) >> 12) * 4 / 2 = 32000
 * sixty-five-thousandths of an object a call and scans a cache below 8
 * batches in batches of 1000 / 8 = 125: one batch every 125 * 65536 /
 * 32000 = 256 calls, 3 batches in 1000 calls = 375 objects.
 */
#define WU_CACHE 100000ul	/* F: the big cache, never refilled */
#define WU_STOP_CALLS 1000u	/* K: calls that cannot scan */
#define WU_MAX_CAPABLE 10000u	/* capable calls before giving up */
#define WU_PRIORITY 6
#define WU_SEEKS 2
#define WU_BATCH 128l
/* Drained: a backlog below one batch. */
#define WU_DRAINED ((unsigned long)WU_BATCH)
#define WU_SMALL 1000ul		/* the small cache, re-created */
#define WU_SMALL_CALLS 1000u
#define WU_SMALL_PRIORITY 12
/* The capability mask of the calls that cannot do the work: none. */
#define WU_CTX_INCAPABLE 0ull

static const enum rcl_shrink_policy wu_policies[] = {
	RCL_SHRINK_POLICY_KERNEL_MODERN,
	RCL_SHRINK_POLICY_KERNEL_2014,
	RCL_SHRINK_POLICY_DEFAULT,
};
#define WU_NR_POLICIES (sizeof(wu_policies) / sizeof(wu_policies[0]))

/* The model cache.  The callbacks keep their own tally, to check the library's. */
struct wu_cache {
	unsigned long nr;	/* objects in the cache */
	bool recreate;		/* freed objects come straight back */
	unsigned long freed;	/* scan's answers, summed */
	unsigned long scanned;
	unsigned long stops;
};

struct wu_result {
	const char *policy;
	unsigned long backlog_wound;	/* after the K deferring calls */
	double first_call_freed_pct;
	double max_call_freed_pct;
	long calls_to_drain;		/* -1: not drained */
	unsigned long cache_left;
	unsigned long small_scanned;
};

static unsigned long wu_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	const struct wu_cache *c = sc->priv;

	(void)s;
	return c->nr ? c->nr : RCL_SHRINK_EMPTY;
}

static unsigned long wu_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	struct wu_cache *c = sc->priv;
	unsigned long n;

	(void)s;
	if (!(sc->context & RCL_CTX_MAY_BLOCK)) {
		c->stops++;
		return RCL_SHRINK_STOP;	/* deferred, not lost */
	}
	n = sc->nr_to_scan < c->nr ? sc->nr_to_scan : c->nr;
	if (!c->recreate)
		c->nr -= n;
	sc->nr_scanned = n;
	c->freed += n;
	c->scanned += n;
	return n;
}

static const struct rcl_shrinker_ops wu_ops = {
	.count_objects = wu_count,
	.scan_objects = wu_scan,
};

/* A registry with @policy holding one registered shrinker over @c. */
static int wu_setup(enum rcl_shrink_policy policy, struct wu_cache *c,
		    const char *name, struct rcl_shrinker_registry **reg,
		    struct rcl_shrinker **s)
{
	struct rcl_shrinker_registry_config rcfg = { .policy = policy };
	struct rcl_shrinker_config cfg = {
		.ops = &wu_ops,
		.priv = c,
		.name = name,
		.seeks = WU_SEEKS,
		.batch = WU_BATCH,
	};
	int ret;

	ret = rcl_shrinker_registry_new(&rcfg, reg);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_registry_new: %s\n",
			strerror(-ret));
		return -1;
	}
	ret = rcl_shrinker_new(*reg, &cfg, s);
	if (!ret) {
		ret = rcl_shrinker_register(*s);
		if (ret)
			rcl_shrinker_free(*s);
	}
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_new/register: %s\n",
			strerror(-ret));
		rcl_shrinker_registry_free(*reg);
		return -1;
	}
	return 0;
}

static int wu_teardown(struct rcl_shrinker_registry *reg,
		       struct rcl_shrinker *s)
{
	int ret = rcl_shrinker_free(s);

	if (!ret)
		ret = rcl_shrinker_registry_free(reg);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_free/registry_free: %s\n",
			strerror(-ret));
		return -1;
	}
	return 0;
}

/* One registry-wide call; checks that it visited the one shrinker. */
static int wu_call(struct rcl_shrinker_registry *reg, int priority,
		   uint64_t context, struct rcl_shrink_result *res)
{
	int ret;

	memset(res, 0, sizeof(*res));
	ret = rcl_shrinker_registry_shrink(reg, 0, priority, context, res);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_registry_shrink: %s\n",
			strerror(-ret));
		return -1;
	}
	if (res->nr_shrinkers != 1) {
		fprintf(stderr, "rcl-bench: windup: a call visited %lu shrinkers, expected 1\n",
			res->nr_shrinkers);
		return -1;
	}
	return 0;
}

/* The library's figures against the callbacks' own tally. */
static int wu_check(const char *policy, const char *what,
		    const struct wu_cache *c, unsigned long lib_freed,
		    unsigned long lib_scanned, unsigned long lib_stops)
{
	if (c->freed == lib_freed && c->scanned == lib_scanned &&
	    c->stops == lib_stops)
		return 0;
	fprintf(stderr, "rcl-bench: windup %s, %s: the library reports %lu freed, %lu scanned, %lu stops; the callbacks saw %lu, %lu, %lu\n",
		policy, what, lib_freed, lib_scanned, lib_stops, c->freed,
		c->scanned, c->stops);
	return -1;
}

/* The scenario under one policy.  Returns 0 or -1. */
static int wu_run(enum rcl_shrink_policy policy, struct wu_result *out)
{
	struct wu_cache big = { .nr = WU_CACHE };
	struct wu_cache small = { .nr = WU_SMALL, .recreate = true };
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker *s;
	struct rcl_shrink_result res;
	unsigned long freed = 0, scanned = 0, stops = 0, bl = 0, f;
	unsigned i;
	int ret;

	out->policy = rcl_shrink_policy_name(policy);
	out->first_call_freed_pct = 0.0;
	out->max_call_freed_pct = 0.0;
	out->calls_to_drain = -1;

	/* The big cache: K calls that defer, then capable calls. */
	if (wu_setup(policy, &big, "windup-big", &reg, &s))
		return -1;
	for (i = 0; i < WU_STOP_CALLS; i++) {
		if (wu_call(reg, WU_PRIORITY, WU_CTX_INCAPABLE, &res))
			goto fail;
		if (res.freed || res.scanned) {
			fprintf(stderr, "rcl-bench: windup %s: a call that cannot scan freed %lu\n",
				out->policy, res.freed);
			goto fail;
		}
		stops += res.nr_stopped;
	}
	ret = rcl_shrinker_backlog(s, 0, &out->backlog_wound);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_backlog: %s\n",
			strerror(-ret));
		goto fail;
	}
	for (i = 0; i < WU_MAX_CAPABLE; i++) {
		double pct;

		if (wu_call(reg, WU_PRIORITY, RCL_CTX_CAPABLE, &res))
			goto fail;
		freed += res.freed;
		scanned += res.scanned;
		stops += res.nr_stopped;
		pct = 100.0 * (double)res.freed / (double)WU_CACHE;
		if (i == 0)
			out->first_call_freed_pct = pct;
		if (pct > out->max_call_freed_pct)
			out->max_call_freed_pct = pct;
		ret = rcl_shrinker_backlog(s, 0, &bl);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_shrinker_backlog: %s\n",
				strerror(-ret));
			goto fail;
		}
		if (bl < WU_DRAINED) {
			out->calls_to_drain = (long)i + 1;
			break;
		}
	}
	out->cache_left = big.nr;
	if (wu_check(out->policy, "big cache", &big, freed, scanned, stops))
		goto fail;
	if (big.nr != WU_CACHE - freed) {
		fprintf(stderr, "rcl-bench: windup %s: %lu objects left after %lu freed of %lu\n",
			out->policy, big.nr, freed, WU_CACHE);
		goto fail;
	}
	if (wu_teardown(reg, s))
		return -1;

	/* The small cache: gentle capable calls, objects re-created. */
	if (wu_setup(policy, &small, "windup-small", &reg, &s))
		return -1;
	freed = scanned = stops = 0;
	for (i = 0; i < WU_SMALL_CALLS; i++) {
		if (wu_call(reg, WU_SMALL_PRIORITY, RCL_CTX_CAPABLE, &res))
			goto fail;
		freed += res.freed;
		scanned += res.scanned;
		stops += res.nr_stopped;
	}
	out->small_scanned = scanned;
	if (wu_check(out->policy, "small cache", &small, freed, scanned,
		     stops))
		goto fail;
	f = small.nr;
	if (f != WU_SMALL) {
		fprintf(stderr, "rcl-bench: windup %s: the small cache holds %lu objects\n",
			out->policy, f);
		goto fail;
	}
	return wu_teardown(reg, s);

fail:
	wu_teardown(reg, s);
	return -1;
}

static int cmd_windup(int argc, char **argv)
{
	struct wu_result res[WU_NR_POLICIES];
	bool json = false;
	size_t p;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}

	for (p = 0; p < WU_NR_POLICIES; p++)
		if (wu_run(wu_policies[p], &res[p]))
			return 1;

	if (json) {
		for (p = 0; p < WU_NR_POLICIES; p++)
			printf("{\"bench\":\"windup\",\"policy\":\"%s\",\"max_call_freed_pct\":%.3f,\"capable_calls_to_drain\":%ld,\"small_cache_scanned\":%lu}\n",
			       res[p].policy, res[p].max_call_freed_pct,
			       res[p].calls_to_drain, res[p].small_scanned);
		return 0;
	}

	printf("rcl-bench windup: libreclaim %s\n"
	       "big cache: %lu objects (seeks %d, batch %ld, not refilled); %u calls at\n"
	       "priority %d that cannot scan, then capable calls at priority %d until the\n"
	       "backlog is below %lu (at most %u calls).  Small cache: %lu objects\n"
	       "(re-created), %u capable calls at priority %d.\n\n",
	       rcl_version(), WU_CACHE, WU_SEEKS, WU_BATCH, WU_STOP_CALLS,
	       WU_PRIORITY, WU_PRIORITY, WU_DRAINED, WU_MAX_CAPABLE, WU_SMALL,
	       WU_SMALL_CALLS, WU_SMALL_PRIORITY);
	printf("%-14s %9s %11s %10s %11s %11s %12s\n", "policy", "backlog",
	       "first call", "max call", "calls to", "cache left", "small cache");
	printf("%-14s %9s %11s %10s %11s %11s %12s\n", "", "wound up",
	       "freed %", "freed %", "drain", "at the end", "scanned");
	for (p = 0; p < WU_NR_POLICIES; p++) {
		char drain[32];

		if (res[p].calls_to_drain < 0)
			snprintf(drain, sizeof(drain), "-1 (>%u)",
				 WU_MAX_CAPABLE);
		else
			snprintf(drain, sizeof(drain), "%ld",
				 res[p].calls_to_drain);
		printf("%-14s %9lu %11.3f %10.3f %11s %11lu %12lu\n",
		       res[p].policy, res[p].backlog_wound,
		       res[p].first_call_freed_pct, res[p].max_call_freed_pct,
		       drain, res[p].cache_left, res[p].small_scanned);
	}
	printf("\n"
	       "backlog wound up: rcl_shrinker_backlog() after the calls that cannot\n"
	       "scan; freed %%: objects one call freed, in %% of the original %lu;\n"
	       "calls to drain: capable calls until the backlog is below one batch\n"
	       "(-1: not within %u); cache left: objects left after the last capable\n"
	       "call; small cache scanned: objects scanned in %u calls.\n",
	       WU_CACHE, WU_MAX_CAPABLE, WU_SMALL_CALLS);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* shrink-scale: concurrent registry-wide shrinks                             */
/* ------------------------------------------------------------------------- */

/*
 * T threads call rcl_shrinker_registry_shrink() on ONE registry of 64
 * registered shrinkers, as T reclaimers under memory pressure would.  The
 * callbacks are as cheap as they can be (count answers a constant from a
 * read-only line, scan answers nr_to_scan), so the figure is the library's
 * walk and arithmetic: slot pins, the backlog claim and return, statistics.
 *
 * Priority 6 with the default policy: each call's own pressure on a
 * shrinker is ((10000 << 16 >> 6) * 4 / 2) >> 16 = 312.5 objects, so every
 * call scans two or three batches of 128 of every shrinker (on average
 * 312.5 objects) and the backlog stays below one call's worth.  At priority
 * 12 a call would only add 4.9 objects of pressure and scan one shrinker in
 * 26 calls: that measures counting, not shrinking.
 */
#define SS_NR_SHRINKERS 64u
#define SS_COUNT 10000ul
#define SS_PRIORITY 6
#define SS_MAX_THREADS 256u
#define SS_RUN_MS 300u
#define SS_REPS 5u
#define SS_SHORT_RUN_MS 5u
#define SS_SHORT_REPS 1u
#define SS_OTHER_MAX HP_OTHER_MAX
#define SS_TRIES HP_TRIES

/* What a shrinker's count answers: read only, on a line of its own. */
struct ss_cache {
	_Alignas(64) unsigned long nr;
};

static unsigned long ss_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	const struct ss_cache *c = sc->priv;

	(void)s;
	return c->nr;
}

static unsigned long ss_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	(void)s;
	return sc->nr_to_scan;
}

static const struct rcl_shrinker_ops ss_ops = {
	.count_objects = ss_count,
	.scan_objects = ss_scan,
};

struct ss_run;

/* Cache-line aligned, so that no two threads write to the same line. */
struct ss_worker {
	_Alignas(64) struct ss_run *run;
	pthread_t tid;
	uint64_t ops;
	uint64_t ns;
	struct rcl_shrink_result res;
	int err;
};

struct ss_run {
	struct ss_cache caches[SS_NR_SHRINKERS];
	struct rcl_shrinker *s[SS_NR_SHRINKERS];
	struct rcl_shrinker_registry *reg;
	uint64_t run_ns;
	unsigned nthreads;
	struct ss_worker *w;
	_Alignas(64) struct spin_barrier go;	/* the workers */
	pthread_barrier_t start;		/* the workers and main */
};

struct ss_result {
	double ops_per_s;	/* aggregate */
	double ns_per_op;	/* one thread's, averaged over the threads */
	double other;
	bool disturbed;
};

static void *ss_worker_main(void *arg)
{
	struct ss_worker *w = arg;
	struct ss_run *r = w->run;
	uint64_t ops = 0, t0, t1, deadline;
	int ret = 0;

	pthread_barrier_wait(&r->start);
	spin_barrier_wait(&r->go);
	t0 = now_ns();
	deadline = t0 + r->run_ns;
	do {
		ret = rcl_shrinker_registry_shrink(r->reg, 0, SS_PRIORITY,
						   RCL_CTX_CAPABLE, &w->res);
		if (ret)
			break;
		ops++;
		t1 = now_ns();
	} while (t1 < deadline);
	t1 = now_ns();
	w->ops = ops;
	w->ns = t1 - t0;
	w->err = ret;
	return NULL;
}

/*
 * After the run: every call visited every shrinker and scanned what it
 * freed, and the library's counters agree with the calls made.  With the
 * default policy each call adds delta = 312.5 objects (exactly, in 16.16
 * fixed point) to a shrinker's work and the backlog keeps what was not
 * scanned, so per shrinker scanned + backlog = calls * 312.5, to within the
 * backlog's rounding down to whole objects, however the threads split the
 * backlog between them.
 */
static int ss_check(struct ss_run *r)
{
	struct rcl_shrink_result sum = { 0 };
	uint64_t ops = 0;
	unsigned t, i;
	int err = 0;

	for (t = 0; t < r->nthreads; t++) {
		const struct ss_worker *w = &r->w[t];

		if (w->err) {
			fprintf(stderr, "rcl-bench: shrink-scale thread %u: rcl_shrinker_registry_shrink: %s\n",
				t, strerror(-w->err));
			return -1;
		}
		if (!w->ops) {
			fprintf(stderr, "rcl-bench: shrink-scale: thread %u did no work\n",
				t);
			return -1;
		}
		ops += w->ops;
		sum.freed += w->res.freed;
		sum.scanned += w->res.scanned;
		sum.nr_shrinkers += w->res.nr_shrinkers;
		sum.nr_stopped += w->res.nr_stopped;
	}
	if (sum.nr_shrinkers != ops * SS_NR_SHRINKERS || sum.nr_stopped ||
	    sum.freed != sum.scanned || !sum.scanned) {
		fprintf(stderr, "rcl-bench: shrink-scale: %llu calls visited %lu shrinkers (%lu stopped), freed %lu, scanned %lu\n",
			(unsigned long long)ops, sum.nr_shrinkers,
			sum.nr_stopped, sum.freed, sum.scanned);
		return -1;
	}
	for (i = 0; i < SS_NR_SHRINKERS; i++) {
		struct rcl_shrinker_stats st;
		unsigned long bl;
		double want, have;

		if (rcl_shrinker_stats(r->s[i], &st) ||
		    rcl_shrinker_backlog(r->s[i], 0, &bl)) {
			fprintf(stderr, "rcl-bench: rcl_shrinker_stats/backlog failed\n");
			return -1;
		}
		want = (double)st.calls * 312.5;
		have = (double)st.scanned + (double)bl;
		if (st.calls != ops || st.freed != st.scanned || st.stops ||
		    have > want || want - have >= 1.0) {
			fprintf(stderr, "rcl-bench: shrink-scale: shrinker %u: %llu calls (expected %llu), %llu scanned, %llu freed, %llu stops, backlog %lu (scanned + backlog %.1f, expected %.1f)\n",
				i, (unsigned long long)st.calls,
				(unsigned long long)ops,
				(unsigned long long)st.scanned,
				(unsigned long long)st.freed,
				(unsigned long long)st.stops, bl, have, want);
			err = -1;
		}
	}
	return err;
}

/* Free the shrinkers (the first @n) and the registry.  Returns 0 or -1. */
static int ss_teardown(struct ss_run *r, unsigned n)
{
	unsigned i;
	int ret, err = 0;

	for (i = 0; i < n; i++) {
		ret = rcl_shrinker_free(r->s[i]);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_shrinker_free: %s\n",
				strerror(-ret));
			err = -1;
		}
	}
	ret = rcl_shrinker_registry_free(r->reg);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_registry_free: %s\n",
			strerror(-ret));
		err = -1;
	}
	return err;
}

/* One measurement with @nthreads threads.  Returns 0 or -1. */
static int ss_measure(unsigned nthreads, unsigned run_ms,
		      struct ss_result *res)
{
	struct ss_run *r;
	struct cpu_snap snap0, snap1;
	uint64_t ops = 0, max_ns = 0;
	double sum_nspo = 0.0;
	unsigned i, t;
	int ret, err = 0;

	r = zalloc64(sizeof(*r));
	if (!r)
		goto nomem;
	r->nthreads = nthreads;
	r->run_ns = (uint64_t)run_ms * 1000000u;
	r->w = zalloc64(nthreads * sizeof(*r->w));
	if (!r->w)
		goto nomem;

	ret = rcl_shrinker_registry_new(NULL, &r->reg);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_shrinker_registry_new: %s\n",
			strerror(-ret));
		free(r->w);
		free(r);
		return -1;
	}
	for (i = 0; i < SS_NR_SHRINKERS; i++) {
		char name[RCL_SHRINKER_NAME_LEN];
		struct rcl_shrinker_config cfg = {
			.ops = &ss_ops,
			.priv = &r->caches[i],
			.name = name,
			.seeks = RCL_DEFAULT_SEEKS,
		};

		r->caches[i].nr = SS_COUNT;
		snprintf(name, sizeof(name), "scale-%u", i);
		ret = rcl_shrinker_new(r->reg, &cfg, &r->s[i]);
		if (!ret) {
			ret = rcl_shrinker_register(r->s[i]);
			if (ret)
				rcl_shrinker_free(r->s[i]);
		}
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_shrinker_new/register: %s\n",
				strerror(-ret));
			ss_teardown(r, i);
			free(r->w);
			free(r);
			return -1;
		}
	}

	spin_barrier_init(&r->go, nthreads);
	if (pthread_barrier_init(&r->start, NULL, nthreads + 1)) {
		fprintf(stderr, "rcl-bench: pthread_barrier_init failed\n");
		exit(1);
	}
	for (t = 0; t < nthreads; t++) {
		r->w[t].run = r;
		ret = pthread_create(&r->w[t].tid, NULL, ss_worker_main,
				     &r->w[t]);
		if (ret) {
			/* The barriers need every thread: give up. */
			fprintf(stderr, "rcl-bench: pthread_create: %s\n",
				strerror(ret));
			exit(1);
		}
	}
	pthread_barrier_wait(&r->start);
	cpu_snap(&snap0);
	for (t = 0; t < nthreads; t++)
		pthread_join(r->w[t].tid, NULL);
	cpu_snap(&snap1);
	res->other = cpu_other(&snap0, &snap1);
	pthread_barrier_destroy(&r->start);

	if (ss_check(r))
		err = -1;
	for (t = 0; t < nthreads && !err; t++) {
		const struct ss_worker *w = &r->w[t];
		uint64_t ns = w->ns ? w->ns : 1;

		sum_nspo += (double)ns / (double)w->ops;
		ops += w->ops;
		if (ns > max_ns)
			max_ns = ns;
	}
	if (ss_teardown(r, SS_NR_SHRINKERS))
		err = -1;
	free(r->w);
	free(r);
	if (err)
		return -1;
	res->ns_per_op = sum_nspo / nthreads;
	res->ops_per_s = (double)ops / (double)max_ns * 1e9;
	return 0;

nomem:
	fprintf(stderr, "rcl-bench: out of memory\n");
	free(r);
	return -1;
}

/*
 * The figure of @nthreads: the median of @reps runs undisturbed by other
 * load, repeating disturbed runs up to @tries times @reps runs in all (as
 * hp_figure()).  Returns 0 or -1.
 */
static int ss_figure(unsigned nthreads, unsigned run_ms, unsigned reps,
		     unsigned tries, struct ss_result *out, unsigned *redone)
{
	double ops[SS_REPS * SS_TRIES], nspo[SS_REPS * SS_TRIES];
	double all_ops[SS_REPS * SS_TRIES], all_nspo[SS_REPS * SS_TRIES];
	unsigned clean = 0, all = 0;

	if (reps > SS_REPS)
		reps = SS_REPS;
	if (tries > SS_TRIES)
		tries = SS_TRIES;
	while (clean < reps && all < reps * tries) {
		struct ss_result one;

		if (ss_measure(nthreads, run_ms, &one))
			return -1;
		all_ops[all] = one.ops_per_s;
		all_nspo[all++] = one.ns_per_op;
		if (one.other <= SS_OTHER_MAX) {
			ops[clean] = one.ops_per_s;
			nspo[clean++] = one.ns_per_op;
		} else if (tries > 1) {
			(*redone)++;
		}
	}
	out->disturbed = clean < reps && tries > 1;
	if (out->disturbed)
		fprintf(stderr, "rcl-bench: warning: shrink-scale threads=%u: %u of %u runs undisturbed by other load; the figure is less reliable\n",
			nthreads, clean, all);
	if (clean) {
		out->ops_per_s = median(ops, clean);
		out->ns_per_op = median(nspo, clean);
	} else {
		out->ops_per_s = median(all_ops, all);
		out->ns_per_op = median(all_nspo, all);
	}
	return 0;
}

static int cmd_shrink_scale(int argc, char **argv)
{
	unsigned max_threads = 2, run_ms = SS_RUN_MS, reps = SS_REPS;
	unsigned tries = SS_TRIES, t, disturbed = 0;
	bool json = false, shortrun = false;
	struct ss_result *res;
	long ncpu;
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--short")) {
			shortrun = true;
		} else if ((r = opt_uint(argc, argv, &i, "--threads",
					   1, SS_MAX_THREADS, &max_threads))) {
			if (r < 0)
				goto bad;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			goto bad;
		}
	}
	if (shortrun) {
		run_ms = SS_SHORT_RUN_MS;
		reps = SS_SHORT_REPS;
		tries = 1;
	}

	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu > 0 && max_threads > (unsigned long)ncpu)
		fprintf(stderr, "rcl-bench: warning: %u threads on %ld online CPUs: the figures for more threads than CPUs measure the scheduler\n",
			max_threads, ncpu);

	res = calloc(max_threads, sizeof(*res));
	if (!res) {
		fprintf(stderr, "rcl-bench: out of memory\n");
		return 1;
	}
	fprintf(stderr, "rcl-bench shrink-scale: libreclaim %s, %u shrinkers, priority %d, threads 1..%u, %u ms per run, median of %u run%s\n",
		rcl_version(), SS_NR_SHRINKERS, SS_PRIORITY, max_threads,
		run_ms, reps, reps == 1 ? "" : "s");
	for (t = 1; t <= max_threads; t++) {
		unsigned redone = 0;

		if (ss_figure(t, run_ms, reps, tries, &res[t - 1], &redone)) {
			free(res);
			return 1;
		}
		fprintf(stderr, "  threads=%-3u %.0f ops/s", t,
			res[t - 1].ops_per_s);
		if (redone)
			fprintf(stderr, " (%u disturbed run%s repeated)", redone,
				redone == 1 ? "" : "s");
		fputc('\n', stderr);
	}

	if (json) {
		for (t = 1; t <= max_threads; t++)
			printf("{\"bench\":\"shrink-scale\",\"threads\":%u,\"ops_per_s\":%.1f}\n",
			       t, res[t - 1].ops_per_s);
		free(res);
		return 0;
	}

	printf("rcl-bench shrink-scale: libreclaim %s, %ld CPUs online, %u shrinkers,\n"
	       "priority %d, default policy, %u ms per run, median of %u run%s\n\n",
	       rcl_version(), ncpu, SS_NR_SHRINKERS, SS_PRIORITY, run_ms, reps,
	       reps == 1 ? "" : "s");
	printf("%7s %12s %10s %9s\n", "threads", "ops/s", "us/op", "scaling");
	for (t = 1; t <= max_threads; t++) {
		const struct ss_result *x = &res[t - 1];
		char sc[32] = "";

		if (t > 1)
			snprintf(sc, sizeof(sc), "%.2fx",
				 x->ops_per_s / res[0].ops_per_s);
		printf("%7u %12.0f %10.2f %9s%s\n", t, x->ops_per_s,
		       x->ns_per_op / 1e3, sc, x->disturbed ? "  *" : "");
		disturbed += x->disturbed;
	}
	if (max_threads >= 2)
		printf("\n2-thread/1-thread ratio: %.2f\n",
		       res[1].ops_per_s / res[0].ops_per_s);
	printf("\n"
	       "One op: one rcl_shrinker_registry_shrink() of all %u shrinkers.\n"
	       "ops/s: aggregate of all threads; us/op: mean time of one op in one\n"
	       "thread; scaling: ops/s over the 1-thread figure.\n",
	       SS_NR_SHRINKERS);
	if (disturbed)
		printf("*: measured while other processes used the CPUs; less reliable.\n");
	free(res);
	return 0;

bad:
	usage(stderr);
	return 2;
}

/* ------------------------------------------------------------------------- */
/* stream: streaming readers and a hot set on a memory domain                 */
/* ------------------------------------------------------------------------- */

/*
 * The user-space analogue of vm-scalability's streaming readers
 * (lru-file-readonce), with a hot set added: ST_THREADS threads
 * stream through a data set ST_DATASET_X times the budget (each thread
 * through its own half, in key order, pass after pass, so that every
 * streamed object is read once per pass and is long gone by the next), and
 * every ST_HOT_EVERY-th operation re-reads a random object of the thread's
 * hot set (ST_HOT_PCT % of the budget over all threads).
 *
 * Each thread has its own cache: an lruvec, a direct-mapped index (key ->
 * object) under striped mutexes, and a pool of 4 KiB objects.  All lruvecs
 * are attached to one soft-mode domain whose budget is in bytes, and every
 * miss charges ST_OBJ_SIZE with RCL_CTX_CAPABLE before it inserts.  The
 * domain reclaims from every lruvec, so an evict callback may run in any
 * thread (the background reclaimer, or the other worker in direct reclaim):
 * lookups pin objects and the callback frees only unpinned objects, the pin
 * protocol of <reclaim/lruvec.h>.  It unhashes, uncharges, and pushes the
 * object onto its cache's lock-free free list (many pushers; only the owner
 * pops, by taking the whole list, so there is no ABA).  A miss "reads" the
 * object by writing one word in every cache line of its payload; a hit
 * checks those words against the key, which catches an object recycled
 * while in use.
 *
 * One object in ST_ANON_EVERY (by a hash of its key) is of type anon (cost
 * 2), the others file: with a single type every lruvec has a single
 * inactive list, and the pre-2014 mode would be the same as the proportional
 * one (see scan.h: the modes differ only in the chunks of the lists scanned
 * in one round).
 *
 * Per mode (a fresh domain each): an untimed warm-up pass fills the cache,
 * then ST_PASSES timed passes; the counters are the domain's vmstat over the
 * timed passes, and every charge of those passes is timed into a histogram.
 * A mode during which other processes used more than ST_OTHER_MAX of the
 * CPU time is measured again (up to ST_TRIES times), as in hotpath.
 *
 * Then, with the workers gone and the background reclaimer stopped, the
 * over-reclaim sub-measurement: the domain does not report the goals of the
 * direct reclaim that charges run internally, so the main thread calls
 * rcl_domain_reclaim(goal = ST_OR_GOAL, large enough that each list takes
 * several chunks, which is where the scan modes differ) ST_OR_CALLS times,
 * and after each call reads as
 * many new objects as it freed, so that the lists keep their shape; the
 * refills start at or above the min watermark and so never reclaim by
 * themselves (checked).  Over-reclaim = (sum of nr_reclaimed - sum of goals)
 * / sum of goals.  The human table adds the same figure derived for the
 * charges from lib/domain.c and lib/vmscan.c (see st_measure()).
 */
#define ST_THREADS 2u
#define ST_OBJ_SIZE 4096u			/* weight and payload, bytes */
#define ST_WORDS (ST_OBJ_SIZE / sizeof(uint64_t))
#define ST_WORDS_PER_LINE (64u / sizeof(uint64_t))
#define ST_BUDGET (64ull << 20)
#define ST_SHORT_BUDGET (4ull << 20)
#define ST_DATASET_X 4u				/* the data set / the budget */
#define ST_HOT_PCT 20u				/* the hot set / the budget */
#define ST_HOT_EVERY 4u				/* one operation in 4 is hot */
#define ST_ANON_EVERY 4u			/* one object in 4 is anon */
#define ST_WARM_PASSES 1u
#define ST_PASSES 120u
#define ST_SHORT_PASSES 2u
#define ST_POOL_MARGIN 4096u	/* objects per thread beyond the budget */
#define ST_STRIPES 1024u	/* index locks per cache, a power of two */
#define ST_OR_GOAL ((uint64_t)1024)	/* lists need several chunks */
#define ST_OR_CALLS 2000u
#define ST_SHORT_OR_CALLS 100u
#define ST_MAX_SCALE 4000u	/* watermark_scale_factor: high < budget */
/* A mode measured while others used the CPUs is repeated, as in hotpath. */
#define ST_OTHER_MAX HP_OTHER_MAX
#define ST_TRIES HP_TRIES
/* Charge latency histogram: 32 linear sub-buckets per power of two. */
#define ST_HIST_SUB_BITS 5u
#define ST_HIST_SUB (1u << ST_HIST_SUB_BITS)
#define ST_HIST_BUCKETS ((64u - ST_HIST_SUB_BITS + 1u) * ST_HIST_SUB)

_Static_assert(ST_STRIPES && !(ST_STRIPES & (ST_STRIPES - 1)),
	       "ST_STRIPES is a power of two");

enum st_mode { ST_DIRECT, ST_BACKGROUND, ST_NONPROP, ST_NR_MODES };

static const char *const st_mode_names[ST_NR_MODES] = {
	"direct", "background", "nonproportional",
};

struct st_obj {
	struct rcl_lru_node lru;
	struct st_obj *next_free;	/* on a free list */
	uint64_t key;
	atomic_uint refs;		/* the index's reference + pins */
	bool hashed;			/* stripe lock */
	unsigned char type;
	_Alignas(64) uint64_t payload[ST_WORDS];
};

struct st_stripe {
	_Alignas(64) pthread_mutex_t lock;
};

struct st_run;

/* One thread's cache.  "Owner": its worker, or main once the worker is gone. */
struct st_cache {
	_Alignas(64) struct rcl_lruvec lv;
	struct st_run *run;
	struct st_obj **slot;		/* the index; stripe lock */
	struct st_stripe *stripe;
	struct st_obj *objs;		/* the pool's memory */
	size_t nobjs;
	size_t used;			/* handed out at least once (owner) */
	struct st_obj *priv_free;	/* the owner's free list */
	uint64_t next_stream;		/* the next stream key (owner) */
	bool lv_ok;
	bool attached;
	_Alignas(64) _Atomic(struct st_obj *) free_head;	/* evictions push */
};

struct st_worker {
	_Alignas(64) struct st_run *run;
	struct st_cache *c;
	pthread_t tid;
	uint64_t rng;
	uint64_t op;		/* operations so far, warm-up included */
	/* the timed passes */
	uint64_t ops;
	uint64_t hot_reads, hot_hits, stream_reads, stream_hits;
	uint64_t end_ns;
	uint64_t *hist;		/* charge latencies, ST_HIST_BUCKETS */
	const char *err;
	int err_code;
};

struct st_run {
	struct rcl_domain *d;
	enum st_mode mode;
	uint64_t stream_keys, hot_keys;	/* per thread */
	uint64_t warm_ops, timed_ops;	/* per thread */
	struct st_cache cache[ST_THREADS];
	struct st_worker w[ST_THREADS];
	_Alignas(64) struct spin_barrier bar;
	_Alignas(64) atomic_bool stop;	/* a worker failed */
	atomic_ullong bad_payloads;	/* hits that found another content */
	atomic_ullong evict_errors;	/* library errors in the evict callback */
	/* the start of the timed passes, written by one worker */
	uint64_t t0_ns;
	struct rcl_vmstat vm0;
};

struct st_params {
	uint64_t budget;
	unsigned passes;
	unsigned or_calls;
	unsigned scale;		/* watermark_scale_factor; 0 = the default */
};

struct st_result {
	struct rcl_watermarks wm;
	double other;		/* CPU time others used during the passes */
	bool disturbed;		/* other > ST_OTHER_MAX in every attempt */
	uint64_t ops;
	double wall_s;
	double ops_per_s;
	double hot_hit_ratio;
	double stream_hit_ratio;
	struct rcl_vmstat vm;		/* over the timed passes */
	double bg_scan_pct;
	double efficiency_pct;
	uint64_t charges;
	double charge_p50_us, charge_p99_us, charge_max_us;
	uint64_t lists[4];		/* file, anon x inactive, active: end */
	/* the explicit over-reclaim sub-measurement */
	uint64_t or_calls, or_goals, or_freed, or_scanned, or_short;
	double or_prio_mean;
	double overreclaim_pct;
	/* the same, derived for the direct reclaim inside charges */
	double charge_or_pct;
};

static unsigned st_hist_idx(uint64_t v)
{
	unsigned e;

	if (v < ST_HIST_SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);	/* >= ST_HIST_SUB_BITS */
	return (e - ST_HIST_SUB_BITS + 1u) * ST_HIST_SUB +
	       (unsigned)((v >> (e - ST_HIST_SUB_BITS)) & (ST_HIST_SUB - 1u));
}

/* The middle of bucket @i, in the unit of the samples. */
static double st_hist_value(unsigned i)
{
	unsigned e, sub;
	double low, width;

	if (i < ST_HIST_SUB)
		return (double)i;
	e = i / ST_HIST_SUB + ST_HIST_SUB_BITS - 1u;
	sub = i % ST_HIST_SUB;
	low = (double)((uint64_t)(ST_HIST_SUB + sub) << (e - ST_HIST_SUB_BITS));
	width = (double)(1ull << (e - ST_HIST_SUB_BITS));
	return low + width / 2.0;
}

/* The @q quantile (0 < q <= 1) of @n samples, or 0 without samples. */
static double st_hist_quantile(const uint64_t *h, uint64_t n, double q)
{
	uint64_t rank = (uint64_t)(q * (double)n + 0.999999), sum = 0;
	unsigned i;

	if (!n)
		return 0.0;
	if (rank < 1)
		rank = 1;
	for (i = 0; i < ST_HIST_BUCKETS; i++) {
		sum += h[i];
		if (sum >= rank)
			return st_hist_value(i);
	}
	return st_hist_value(ST_HIST_BUCKETS - 1u);
}

/* The payload word of line @i of the object with key @key. */
static inline uint64_t st_word(uint64_t key, size_t i)
{
	return (key + 1u) * 0x9E3779B97F4A7C15ull ^ i;
}

/* A miss reads the object: one store per cache line of the payload. */
static void st_fill(struct st_obj *o, uint64_t key)
{
	size_t i;

	for (i = 0; i < ST_WORDS; i += ST_WORDS_PER_LINE)
		o->payload[i] = st_word(key, i);
}

/* A hit reads it back. */
static bool st_check(const struct st_obj *o, uint64_t key)
{
	uint64_t bad = 0;
	size_t i;

	for (i = 0; i < ST_WORDS; i += ST_WORDS_PER_LINE)
		bad |= o->payload[i] ^ st_word(key, i);
	return !bad;
}

static unsigned st_type(uint64_t key)
{
	return ((key + 7u) * 0xD6E8FEB86659FD93ull >> 32) % ST_ANON_EVERY == 0
		       ? RCL_LRU_ANON
		       : RCL_LRU_FILE;
}

static struct st_stripe *st_stripe_of(struct st_cache *c, uint64_t key)
{
	return &c->stripe[key & (ST_STRIPES - 1u)];
}

/* Any thread: a freed object goes back to its cache's pool. */
static void st_free_push(struct st_cache *c, struct st_obj *o)
{
	struct st_obj *head =
		atomic_load_explicit(&c->free_head, memory_order_relaxed);

	do {
		o->next_free = head;
	} while (!atomic_compare_exchange_weak_explicit(
		&c->free_head, &head, o, memory_order_release,
		memory_order_relaxed));
}

/* The owner: an idle object, or NULL if the pool is exhausted. */
static struct st_obj *st_obj_get(struct st_cache *c)
{
	struct st_obj *o = c->priv_free;

	if (!o) {
		o = atomic_exchange_explicit(&c->free_head, NULL,
					     memory_order_acquire);
		if (!o) {
			if (c->used == c->nobjs)
				return NULL;
			o = &c->objs[c->used++];
			rcl_lru_node_init(&o->lru);
			o->hashed = false;
			atomic_init(&o->refs, 0);
			return o;
		}
	}
	c->priv_free = o->next_free;
	return o;
}

/*
 * The evict callback, in whichever thread reclaims: free the object unless
 * someone holds a pin on it (the pin protocol of <reclaim/lruvec.h>).
 */
static enum rcl_evict_status st_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct st_obj *o = rcl_container_of(node, struct st_obj, lru);
	struct st_cache *c = ctl->priv;
	struct st_stripe *s = st_stripe_of(c, o->key);

	pthread_mutex_lock(&s->lock);
	if (!o->hashed ||
	    atomic_load_explicit(&o->refs, memory_order_acquire) != 1) {
		pthread_mutex_unlock(&s->lock);
		return RCL_EVICT_BUSY;
	}
	c->slot[o->key] = NULL;
	o->hashed = false;
	pthread_mutex_unlock(&s->lock);
	atomic_store_explicit(&o->refs, 0, memory_order_relaxed);
	if (rcl_domain_uncharge(c->run->d, ST_OBJ_SIZE) != 0)
		atomic_fetch_add(&c->run->evict_errors, 1);
	rcl_lru_node_init(&o->lru);
	st_free_push(c, o);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops st_ops = { .evict = st_evict };

/*
 * Read object @key of cache @c (its owner only).  A hit pins the object,
 * checks it and marks it accessed; a miss charges the domain (timed into
 * @hist unless it is NULL), fills an object and inserts it.  Returns 1 for a
 * hit, 0 for a miss, or a negative errno with *@what set.
 */
static int st_read(struct st_run *r, struct st_cache *c, uint64_t key,
		   unsigned add_flags, uint64_t *hist, const char **what)
{
	struct st_stripe *s = st_stripe_of(c, key);
	struct st_obj *o;
	uint64_t t0 = 0;
	int ret;

	pthread_mutex_lock(&s->lock);
	o = c->slot[key];
	if (o)
		atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&s->lock);
	if (o) {
		if (!st_check(o, key))
			atomic_fetch_add(&r->bad_payloads, 1);
		ret = rcl_lruvec_mark_accessed(&c->lv, &o->lru);
		/* Evictions take only unpinned objects: never the last ref. */
		if (atomic_fetch_sub_explicit(&o->refs, 1,
					      memory_order_release) == 1) {
			*what = "a pinned object lost its index reference";
			return -EPROTO;
		}
		if (ret) {
			*what = "rcl_lruvec_mark_accessed";
			return ret;
		}
		return 1;
	}

	if (hist)
		t0 = now_ns();
	ret = rcl_domain_charge(r->d, ST_OBJ_SIZE, RCL_CTX_CAPABLE, NULL);
	if (hist)
		hist[st_hist_idx(now_ns() - t0)]++;
	if (ret) {
		*what = "rcl_domain_charge";
		return ret;
	}
	o = st_obj_get(c);
	if (!o) {
		rcl_domain_uncharge(r->d, ST_OBJ_SIZE);
		*what = "object pool exhausted (usage far over the budget)";
		return -ENOMEM;
	}
	o->key = key;
	o->type = (unsigned char)st_type(key);
	atomic_store_explicit(&o->refs, 1, memory_order_relaxed);
	st_fill(o, key);
	pthread_mutex_lock(&s->lock);
	c->slot[key] = o;
	o->hashed = true;
	pthread_mutex_unlock(&s->lock);
	ret = rcl_lruvec_add(&c->lv, &o->lru, o->type, ST_OBJ_SIZE, add_flags);
	if (ret) {
		pthread_mutex_lock(&s->lock);
		c->slot[key] = NULL;
		o->hashed = false;
		pthread_mutex_unlock(&s->lock);
		rcl_domain_uncharge(r->d, ST_OBJ_SIZE);
		st_free_push(c, o);
		*what = "rcl_lruvec_add";
		return ret;
	}
	return 0;
}

static uint64_t st_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static void st_fail(struct st_worker *w, const char *what, int code)
{
	if (!w->err) {
		w->err = what;
		w->err_code = code;
	}
	atomic_store_explicit(&w->run->stop, true, memory_order_relaxed);
}

/* @nops operations of the thread's sequence; counted if @timed. */
static void st_phase(struct st_worker *w, uint64_t nops, bool timed)
{
	struct st_run *r = w->run;
	struct st_cache *c = w->c;
	uint64_t *hist = timed ? w->hist : NULL;
	uint64_t i;

	for (i = 0; i < nops; i++) {
		const char *what = NULL;
		uint64_t key;
		bool hot;
		int ret;

		if (!(i & 1023u) &&
		    atomic_load_explicit(&r->stop, memory_order_relaxed))
			return;
		hot = ++w->op % ST_HOT_EVERY == 0;
		if (hot) {
			key = r->stream_keys + rng_next(&w->rng) % r->hot_keys;
		} else {
			key = c->next_stream;
			c->next_stream = (key + 1u) % r->stream_keys;
		}
		ret = st_read(r, c, key, 0, hist, &what);
		if (ret < 0) {
			st_fail(w, what, ret);
			return;
		}
		if (!timed)
			continue;
		w->ops++;
		if (hot) {
			w->hot_reads++;
			w->hot_hits += (uint64_t)ret;
		} else {
			w->stream_reads++;
			w->stream_hits += (uint64_t)ret;
		}
	}
}

static void *st_worker_main(void *arg)
{
	struct st_worker *w = arg;
	struct st_run *r = w->run;
	char name[16];

	/* For perf and top: the library's reclaimer keeps the program's name. */
	snprintf(name, sizeof(name), "stream-%u", (unsigned)(w - r->w));
	pthread_setname_np(pthread_self(), name);
	st_phase(w, r->warm_ops, false);
	/* One thread notes the start of the timed passes. */
	if (spin_barrier_wait(&r->bar)) {
		rcl_domain_vmstat(r->d, &r->vm0);
		r->t0_ns = now_ns();
	}
	spin_barrier_wait(&r->bar);
	st_phase(w, r->timed_ops, true);
	w->end_ns = now_ns();
	rcl_lru_drain_local();
	return NULL;
}

/*
 * The over-reclaim sub-measurement (see above), by the main thread once the
 * workers are gone and the background reclaimer is stopped.  Returns 0 or -1.
 */
static int st_overreclaim(struct st_run *r, unsigned calls,
			  struct st_result *res)
{
	struct rcl_domain *d = r->d;
	struct rcl_vmstat a, b;
	uint64_t prio_sum = 0, k = 0;
	unsigned i;
	int ret;

	ret = rcl_domain_reclaimer_stop(d);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_domain_reclaimer_stop: %s\n",
			strerror(-ret));
		return -1;
	}
	/*
	 * Start at or above the min watermark: each call is followed by as
	 * many charges as it freed objects, which then end where the call
	 * started and never reclaim by themselves.
	 */
	for (i = 0; i < 64 && st_sub(rcl_domain_budget(d),
				     rcl_domain_usage(d)) <
				      res->wm.min + ST_OBJ_SIZE;
	     i++)
		rcl_domain_reclaim(d, ST_OR_GOAL, RCL_CTX_CAPABLE, NULL);
	rcl_domain_vmstat(d, &a);
	for (i = 0; i < calls; i++) {
		struct rcl_reclaim_result rr;
		uint64_t n;

		ret = rcl_domain_reclaim(d, ST_OR_GOAL, RCL_CTX_CAPABLE, &rr);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_domain_reclaim: %s\n",
				strerror(-ret));
			return -1;
		}
		res->or_calls++;
		res->or_goals += ST_OR_GOAL;
		res->or_freed += rr.nr_reclaimed;
		res->or_scanned += rr.nr_scanned;
		res->or_short += rr.nr_reclaimed < ST_OR_GOAL;
		prio_sum += (uint64_t)rr.priority;
		for (n = 0; n < rr.nr_reclaimed;) {
			struct st_cache *c = &r->cache[k++ % ST_THREADS];
			uint64_t key = c->next_stream;
			const char *what = NULL;

			c->next_stream = (key + 1u) % r->stream_keys;
			ret = st_read(r, c, key, RCL_LRU_ADD_NOBATCH, NULL,
				      &what);
			if (ret < 0) {
				fprintf(stderr, "rcl-bench: over-reclaim refill: %s: %s\n",
					what, strerror(-ret));
				return -1;
			}
			n += ret == 0;
		}
	}
	rcl_domain_vmstat(d, &b);
	if (b.allocstall - a.allocstall != calls ||
	    b.pgsteal_direct - a.pgsteal_direct != res->or_freed) {
		fprintf(stderr, "rcl-bench: %s: over-reclaim: %llu direct reclaims and %llu freed, expected %u and %llu (a refill reclaimed by itself)\n",
			st_mode_names[r->mode],
			(unsigned long long)(b.allocstall - a.allocstall),
			(unsigned long long)(b.pgsteal_direct - a.pgsteal_direct),
			calls, (unsigned long long)res->or_freed);
		return -1;
	}
	if (res->or_goals)
		res->overreclaim_pct = ((double)res->or_freed -
					(double)res->or_goals) /
				       (double)res->or_goals * 100.0;
	if (res->or_calls)
		res->or_prio_mean = (double)prio_sum / (double)res->or_calls;
	return 0;
}

/*
 * After the workers: check the caches against the domain, then take every
 * object out, destroy the lruvecs and free the domain.  Returns 0 or -1.
 */
static int st_teardown(struct st_run *r)
{
	uint64_t cached = 0, pooled = 0, used = 0;
	unsigned t;
	int ret, err = 0;

	rcl_lru_drain_local();	/* the refills' activations */
	if (r->d) {
		ret = rcl_domain_reclaimer_stop(r->d);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_domain_reclaimer_stop: %s\n",
				strerror(-ret));
			err = -1;
		}
	}
	for (t = 0; t < ST_THREADS; t++) {
		struct st_cache *c = &r->cache[t];

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
	/* Every charged object is in an index; nothing else is charged. */
	for (t = 0; t < ST_THREADS; t++) {
		struct st_cache *c = &r->cache[t];
		struct st_obj *o;
		uint64_t key;

		if (!c->slot)
			continue;
		for (key = 0; key < r->stream_keys + r->hot_keys; key++)
			cached += c->slot[key] != NULL;
		for (o = c->priv_free; o; o = o->next_free)
			pooled++;
		for (o = atomic_load(&c->free_head); o; o = o->next_free)
			pooled++;
		used += c->used;
	}
	if (r->d && rcl_domain_usage(r->d) != cached * ST_OBJ_SIZE) {
		fprintf(stderr, "rcl-bench: %s: usage %llu, but %llu objects of %u bytes are cached\n",
			st_mode_names[r->mode],
			(unsigned long long)rcl_domain_usage(r->d),
			(unsigned long long)cached, ST_OBJ_SIZE);
		err = -1;
	}
	if (cached + pooled != used) {
		fprintf(stderr, "rcl-bench: %s: %llu cached + %llu pooled != %llu objects used\n",
			st_mode_names[r->mode], (unsigned long long)cached,
			(unsigned long long)pooled, (unsigned long long)used);
		err = -1;
	}
	for (t = 0; t < ST_THREADS; t++) {
		struct st_cache *c = &r->cache[t];
		uint64_t key;

		if (c->slot) {
			for (key = 0; key < r->stream_keys + r->hot_keys;
			     key++) {
				struct st_obj *o = c->slot[key];

				if (!o)
					continue;
				ret = rcl_lruvec_del(&c->lv, &o->lru);
				if (ret) {
					fprintf(stderr, "rcl-bench: rcl_lruvec_del: %s\n",
						strerror(-ret));
					err = -1;
				}
				c->slot[key] = NULL;
				if (r->d)
					rcl_domain_uncharge(r->d, ST_OBJ_SIZE);
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
		if (c->stripe) {
			unsigned i;

			for (i = 0; i < ST_STRIPES; i++)
				pthread_mutex_destroy(&c->stripe[i].lock);
		}
		free(c->stripe);
		free(c->slot);
		free(c->objs);
		free(r->w[t].hist);
	}
	if (r->d) {
		if (rcl_domain_usage(r->d) != 0) {
			fprintf(stderr, "rcl-bench: usage %llu after every object was uncharged\n",
				(unsigned long long)rcl_domain_usage(r->d));
			err = -1;
		}
		ret = rcl_domain_free(r->d);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_domain_free: %s\n",
				strerror(-ret));
			err = -1;
		}
	}
	return err;
}

static int st_setup_cache(struct st_run *r, struct st_cache *c,
			  uint64_t budget)
{
	struct rcl_lruvec_config cfg = { .ops = &st_ops, .priv = c };
	size_t nkeys = (size_t)(r->stream_keys + r->hot_keys);
	unsigned i;
	int ret;

	c->run = r;
	atomic_init(&c->free_head, NULL);
	c->slot = calloc(nkeys, sizeof(*c->slot));
	c->stripe = aligned_alloc(64, ST_STRIPES * sizeof(*c->stripe));
	c->nobjs = (size_t)(budget / ST_OBJ_SIZE) + ST_POOL_MARGIN;
	c->objs = aligned_alloc(64, c->nobjs * sizeof(*c->objs));
	if (!c->slot || !c->stripe || !c->objs) {
		free(c->stripe);
		c->stripe = NULL;
		fprintf(stderr, "rcl-bench: out of memory\n");
		return -1;
	}
	for (i = 0; i < ST_STRIPES; i++)
		pthread_mutex_init(&c->stripe[i].lock, NULL);
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

/* One mode, on a fresh domain.  Returns 0 or -1. */
static int st_measure(enum st_mode mode, const struct st_params *p,
		      struct st_result *res)
{
	struct rcl_domain_config cfg = {
		.budget = p->budget,
		.mode = RCL_CHARGE_SOFT,
		.watermark_scale_factor = p->scale,
		.flags = mode == ST_NONPROP ? RCL_DOMAIN_NONPROPORTIONAL : 0,
	};
	uint64_t hist[ST_HIST_BUCKETS] = { 0 }, budget_objs, per_pass, end = 0;
	uint64_t hot_reads = 0, hot_hits = 0, stream_reads = 0, stream_hits = 0;
	struct cpu_snap snap0, snap1;
	struct rcl_vmstat vm1;
	struct st_run *r;
	unsigned t, i;
	int ret, err = 0;

	memset(res, 0, sizeof(*res));
	r = zalloc64(sizeof(*r));
	if (!r) {
		fprintf(stderr, "rcl-bench: out of memory\n");
		return -1;
	}
	r->mode = mode;
	budget_objs = p->budget / ST_OBJ_SIZE;
	r->stream_keys = budget_objs * ST_DATASET_X / ST_THREADS;
	r->hot_keys = budget_objs * ST_HOT_PCT / 100u / ST_THREADS;
	/* A pass reads every stream key once; hot reads come on top. */
	per_pass = r->stream_keys * ST_HOT_EVERY / (ST_HOT_EVERY - 1u);
	r->warm_ops = per_pass * ST_WARM_PASSES;
	r->timed_ops = per_pass * p->passes;
	spin_barrier_init(&r->bar, ST_THREADS);
	atomic_init(&r->stop, false);
	atomic_init(&r->bad_payloads, 0);
	atomic_init(&r->evict_errors, 0);

	ret = rcl_domain_new(&cfg, &r->d);
	if (ret) {
		fprintf(stderr, "rcl-bench: rcl_domain_new: %s\n",
			strerror(-ret));
		r->d = NULL;
		err = -1;
		goto out;
	}
	rcl_domain_watermarks(r->d, &res->wm);
	for (t = 0; t < ST_THREADS; t++) {
		struct st_worker *w = &r->w[t];

		w->run = r;
		w->c = &r->cache[t];
		w->rng = 0x9E3779B97F4A7C15ull * (t + 1u) ^ 0x5354524541Dull;
		w->hist = calloc(ST_HIST_BUCKETS, sizeof(*w->hist));
		if (!w->hist) {
			fprintf(stderr, "rcl-bench: out of memory\n");
			err = -1;
			goto out;
		}
		if (st_setup_cache(r, &r->cache[t], p->budget)) {
			err = -1;
			goto out;
		}
	}
	if (mode == ST_BACKGROUND) {
		ret = rcl_domain_reclaimer_start(r->d);
		if (ret) {
			fprintf(stderr, "rcl-bench: rcl_domain_reclaimer_start: %s\n",
				strerror(-ret));
			err = -1;
			goto out;
		}
	}

	cpu_snap(&snap0);
	for (t = 0; t < ST_THREADS; t++) {
		ret = pthread_create(&r->w[t].tid, NULL, st_worker_main,
				     &r->w[t]);
		if (ret) {
			/* The barrier needs every thread: give up. */
			fprintf(stderr, "rcl-bench: pthread_create: %s\n",
				strerror(ret));
			exit(1);
		}
	}
	for (t = 0; t < ST_THREADS; t++)
		pthread_join(r->w[t].tid, NULL);
	rcl_domain_vmstat(r->d, &vm1);
	cpu_snap(&snap1);
	res->other = cpu_other(&snap0, &snap1);

	for (t = 0; t < ST_THREADS; t++) {
		struct st_worker *w = &r->w[t];

		if (w->err) {
			fprintf(stderr, "rcl-bench: stream %s, thread %u: %s (%s)\n",
				st_mode_names[mode], t, w->err,
				strerror(-w->err_code));
			err = -1;
		}
		if (w->end_ns > end)
			end = w->end_ns;
		res->ops += w->ops;
		hot_reads += w->hot_reads;
		hot_hits += w->hot_hits;
		stream_reads += w->stream_reads;
		stream_hits += w->stream_hits;
		for (i = 0; i < ST_HIST_BUCKETS; i++)
			hist[i] += w->hist[i];
		for (i = 0; i < 4; i++)
			res->lists[i] += rcl_lruvec_count(&r->cache[t].lv,
							  RCL_LRU_LIST(i / 2, i % 2),
							  NULL);
	}
	if (atomic_load(&r->bad_payloads) || atomic_load(&r->evict_errors)) {
		fprintf(stderr, "rcl-bench: stream %s: %llu hits found another object's content, %llu uncharge errors\n",
			st_mode_names[mode],
			(unsigned long long)atomic_load(&r->bad_payloads),
			(unsigned long long)atomic_load(&r->evict_errors));
		err = -1;
	}
	if (err)
		goto out;

	res->wall_s = (double)(end - r->t0_ns) / 1e9;
	res->ops_per_s = (double)res->ops / res->wall_s;
	res->hot_hit_ratio = hot_reads ? (double)hot_hits / (double)hot_reads
				       : 0.0;
	res->stream_hit_ratio =
		stream_reads ? (double)stream_hits / (double)stream_reads : 0.0;
#define ST_DELTA(f) res->vm.f = st_sub(vm1.f, r->vm0.f)
	ST_DELTA(pgscan_kswapd);
	ST_DELTA(pgscan_direct);
	ST_DELTA(pgsteal_kswapd);
	ST_DELTA(pgsteal_direct);
	ST_DELTA(pgrefill);
	ST_DELTA(pgactivate);
	ST_DELTA(pgdeactivate);
	ST_DELTA(pgrotated);
	ST_DELTA(allocstall);
	ST_DELTA(pageoutrun);
	ST_DELTA(kswapd_wakeups);
	ST_DELTA(kswapd_failures);
	ST_DELTA(charge_overshoots);
#undef ST_DELTA
	{
		uint64_t scan = res->vm.pgscan_kswapd + res->vm.pgscan_direct;
		uint64_t steal = res->vm.pgsteal_kswapd + res->vm.pgsteal_direct;

		res->bg_scan_pct = scan ? (double)res->vm.pgscan_kswapd /
						  (double)scan * 100.0
					: 0.0;
		res->efficiency_pct =
			scan ? (double)steal / (double)scan * 100.0 : 0.0;
	}
	for (i = 0; i < ST_HIST_BUCKETS; i++)
		res->charges += hist[i];
	res->charge_p50_us = st_hist_quantile(hist, res->charges, 0.50) / 1e3;
	res->charge_p99_us = st_hist_quantile(hist, res->charges, 0.99) / 1e3;
	res->charge_max_us = st_hist_quantile(hist, res->charges, 1.0) / 1e3;
	/*
	 * The goal of the direct reclaim inside a charge is not reported, but
	 * lib/domain.c derives it with lib/vmscan.c's
	 * rcl__domain_goal_objects(min - headroom), that is
	 * max(ceil(deficit / 4096), RCL_SCAN_CHUNK) objects, and the deficit
	 * is at most min.  While min is at most RCL_SCAN_CHUNK objects (16 at
	 * 64 MiB), every goal is RCL_SCAN_CHUNK and each is one allocstall.
	 * Valid for the library as it is; NAN otherwise.
	 */
	res->charge_or_pct = NAN;
	if ((res->wm.min + ST_OBJ_SIZE - 1u) / ST_OBJ_SIZE <= RCL_SCAN_CHUNK &&
	    res->vm.allocstall) {
		double goals = (double)res->vm.allocstall * RCL_SCAN_CHUNK;

		res->charge_or_pct =
			((double)res->vm.pgsteal_direct - goals) / goals * 100.0;
	}

	if (st_overreclaim(r, p->or_calls, res))
		err = -1;
out:
	if (st_teardown(r))
		err = -1;
	free(r);
	return err;
}

static void st_print_json(const struct st_result *res)
{
	unsigned m;

	for (m = 0; m < ST_NR_MODES; m++) {
		const struct st_result *x = &res[m];

		printf("{\"bench\":\"stream\",\"mode\":\"%s\",\"ops_per_s\":%.1f,"
		       "\"hot_hit_ratio\":%.6f,\"pgscan_bg\":%llu,"
		       "\"pgscan_direct\":%llu,\"pgsteal_bg\":%llu,"
		       "\"pgsteal_direct\":%llu,\"bg_scan_pct\":%.3f,"
		       "\"efficiency_pct\":%.3f,\"overreclaim_pct\":%.3f,"
		       "\"allocstall\":%llu,\"charge_p50_us\":%.3f,"
		       "\"charge_p99_us\":%.3f}\n",
		       st_mode_names[m], x->ops_per_s, x->hot_hit_ratio,
		       (unsigned long long)x->vm.pgscan_kswapd,
		       (unsigned long long)x->vm.pgscan_direct,
		       (unsigned long long)x->vm.pgsteal_kswapd,
		       (unsigned long long)x->vm.pgsteal_direct,
		       x->bg_scan_pct, x->efficiency_pct, x->overreclaim_pct,
		       (unsigned long long)x->vm.allocstall, x->charge_p50_us,
		       x->charge_p99_us);
	}
}

static void st_row_u64(const char *name, const struct st_result *res,
		       size_t off)
{
	unsigned m;

	printf("%-30s", name);
	for (m = 0; m < ST_NR_MODES; m++) {
		uint64_t v;

		memcpy(&v, (const char *)&res[m] + off, sizeof(v));
		printf(" %16llu", (unsigned long long)v);
	}
	putchar('\n');
}

static void st_row_dbl(const char *name, int prec,
		       const double v[ST_NR_MODES])
{
	unsigned m;

	printf("%-30s", name);
	for (m = 0; m < ST_NR_MODES; m++) {
		char buf[32];

		if (isnan(v[m]))
			snprintf(buf, sizeof(buf), "n/a");
		else
			snprintf(buf, sizeof(buf), "%.*f", prec, v[m]);
		printf(" %16s", buf);
	}
	putchar('\n');
}

static void st_print_table(const struct st_result *res,
			   const struct st_params *p)
{
	double v[ST_NR_MODES];
	unsigned m;

#define ST_ROW_DBL(name, prec, expr)                                          \
	do {                                                                  \
		for (m = 0; m < ST_NR_MODES; m++) {                           \
			const struct st_result *x = &res[m];                  \
			v[m] = (expr);                                        \
		}                                                             \
		st_row_dbl(name, prec, v);                                     \
	} while (0)
#define ST_ROW_U64(name, field)                                               \
	st_row_u64(name, res, offsetof(struct st_result, field))

	printf("rcl-bench stream: libreclaim %s, %u threads, budget %llu MiB\n"
	       "(%llu objects of %u bytes), data set %ux the budget, hot set %u%% of\n"
	       "it, one hot read in %u operations, one object in %u anon;\n"
	       "watermarks min/low/high %llu/%llu/%llu KiB (scale factor %u%s);\n"
	       "%u timed passes after %u warm-up pass per mode\n\n",
	       rcl_version(), ST_THREADS,
	       (unsigned long long)(p->budget >> 20),
	       (unsigned long long)(p->budget / ST_OBJ_SIZE), ST_OBJ_SIZE,
	       ST_DATASET_X, ST_HOT_PCT, ST_HOT_EVERY, ST_ANON_EVERY,
	       (unsigned long long)(res[0].wm.min >> 10),
	       (unsigned long long)(res[0].wm.low >> 10),
	       (unsigned long long)(res[0].wm.high >> 10),
	       p->scale ? p->scale : RCL_WATERMARK_SCALE_DEFAULT,
	       p->scale ? "" : ", the default", p->passes, ST_WARM_PASSES);
	printf("%-30s", "");
	for (m = 0; m < ST_NR_MODES; m++) {
		char head[32];

		snprintf(head, sizeof(head), "%s%s", st_mode_names[m],
			 res[m].disturbed ? "*" : "");
		printf(" %16s", head);
	}
	putchar('\n');
	ST_ROW_DBL("ops/s", 0, x->ops_per_s);
	ST_ROW_DBL("wall time (s)", 2, x->wall_s);
	ST_ROW_DBL("hot hit ratio", 4, x->hot_hit_ratio);
	ST_ROW_DBL("stream hit ratio", 4, x->stream_hit_ratio);
	ST_ROW_U64("pgscan bg (kswapd)", vm.pgscan_kswapd);
	ST_ROW_U64("pgscan direct", vm.pgscan_direct);
	ST_ROW_U64("pgsteal bg (kswapd)", vm.pgsteal_kswapd);
	ST_ROW_U64("pgsteal direct", vm.pgsteal_direct);
	ST_ROW_DBL("bg scan %", 2, x->bg_scan_pct);
	ST_ROW_DBL("efficiency %", 2, x->efficiency_pct);
	ST_ROW_U64("allocstall", vm.allocstall);
	ST_ROW_DBL("direct freed per stall", 1,
		   x->vm.allocstall ? (double)x->vm.pgsteal_direct /
					      (double)x->vm.allocstall
				    : 0.0);
	ST_ROW_U64("bg wakeups", vm.kswapd_wakeups);
	ST_ROW_U64("bg runs (pageoutrun)", vm.pageoutrun);
	ST_ROW_U64("pgactivate", vm.pgactivate);
	ST_ROW_U64("pgrefill", vm.pgrefill);
	ST_ROW_U64("charge overshoots", vm.charge_overshoots);
	ST_ROW_U64("inactive file at the end", lists[0]);
	ST_ROW_U64("active file at the end", lists[1]);
	ST_ROW_U64("inactive anon at the end", lists[2]);
	ST_ROW_U64("active anon at the end", lists[3]);
	ST_ROW_DBL("charge p50 (us)", 3, x->charge_p50_us);
	ST_ROW_DBL("charge p99 (us)", 3, x->charge_p99_us);
	ST_ROW_DBL("charge max (us)", 1, x->charge_max_us);
	ST_ROW_DBL("over-reclaim % (charges)", 2, x->charge_or_pct);
	ST_ROW_DBL("over-reclaim % (explicit)", 2, x->overreclaim_pct);
	ST_ROW_DBL("  freed per explicit call", 2,
		   x->or_calls ? (double)x->or_freed / (double)x->or_calls
			       : 0.0);
	ST_ROW_DBL("  scanned per call", 2,
		   x->or_calls ? (double)x->or_scanned / (double)x->or_calls
			       : 0.0);
	ST_ROW_DBL("  lowest priority, mean", 2, x->or_prio_mean);
	ST_ROW_U64("  calls short of the goal", or_short);
#undef ST_ROW_DBL
#undef ST_ROW_U64
	printf("\n"
	       "Counters are the domain's vmstat over the timed passes.  bg scan %%:\n"
	       "pgscan bg / all pgscan; efficiency: all pgsteal / all pgscan; charge\n"
	       "latency: every rcl_domain_charge() of the timed passes (one per miss).\n"
	       "Over-reclaim (explicit, the JSON figure): %u rcl_domain_reclaim(goal %u)\n"
	       "calls after the timed passes, (freed - goals) / goals.  The domain does\n"
	       "not report the goals of the direct reclaim inside charges; (charges)\n"
	       "derives them from lib/vmscan.c (32 per allocstall while min <= 32\n"
	       "objects): (pgsteal direct - 32 x allocstall) / (32 x allocstall).\n",
	       p->or_calls, (unsigned)ST_OR_GOAL);
	for (m = 0; m < ST_NR_MODES; m++)
		if (res[m].disturbed)
			break;
	if (m < ST_NR_MODES)
		printf("*: measured while other processes used more than %.0f%% of the CPUs.\n",
		       ST_OTHER_MAX * 100.0);
}

static int cmd_stream(int argc, char **argv)
{
	struct st_params p = {
		.budget = ST_BUDGET,
		.passes = ST_PASSES,
		.or_calls = ST_OR_CALLS,
		.scale = 0,
	};
	struct st_result res[ST_NR_MODES];
	unsigned m, tries = ST_TRIES, disturbed = 0;
	bool json = false, check_other = true;
	int i, r;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--short")) {
			p.budget = ST_SHORT_BUDGET;
			p.passes = ST_SHORT_PASSES;
			p.or_calls = ST_SHORT_OR_CALLS;
			/* /proc/stat counts 10 ms ticks: no use for 1 ms runs. */
			check_other = false;
		} else if ((r = opt_uint(argc, argv, &i, "--watermark-scale-factor",
					   1, ST_MAX_SCALE, &p.scale))) {
			if (r < 0)
				goto bad;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			goto bad;
		}
	}

	fprintf(stderr, "rcl-bench stream: libreclaim %s, %u threads, budget %llu KiB, %u timed passes, %u over-reclaim calls per mode\n",
		rcl_version(), ST_THREADS,
		(unsigned long long)(p.budget >> 10), p.passes, p.or_calls);
	for (m = 0; m < ST_NR_MODES; m++) {
		unsigned a;

		for (a = 0; a < tries; a++) {
			if (st_measure((enum st_mode)m, &p, &res[m]))
				return 1;
			if (!check_other || res[m].other <= ST_OTHER_MAX)
				break;
			fprintf(stderr, "  %-15s disturbed: others used %.0f%% of the CPU time%s\n",
				st_mode_names[m], res[m].other * 100.0,
				a + 1 < tries ? "; repeating" : "");
		}
		res[m].disturbed = check_other && res[m].other > ST_OTHER_MAX;
		disturbed += res[m].disturbed;
		fprintf(stderr, "  %-15s %.0f ops/s, hot hits %.4f, bg scans %.2f%%, efficiency %.2f%%, allocstall %llu, over-reclaim %.2f%%\n",
			st_mode_names[m], res[m].ops_per_s,
			res[m].hot_hit_ratio, res[m].bg_scan_pct,
			res[m].efficiency_pct,
			(unsigned long long)res[m].vm.allocstall,
			res[m].overreclaim_pct);
	}
	if (disturbed)
		fprintf(stderr, "rcl-bench: warning: %u mode%s measured while other processes used more than %.0f%% of the CPU time\n",
			disturbed, disturbed == 1 ? " was" : "s were",
			ST_OTHER_MAX * 100.0);
	if (json)
		st_print_json(res);
	else
		st_print_table(res, &p);
	return 0;

bad:
	usage(stderr);
	return 2;
}

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
#define WB_OTHER_MAX HP_OTHER_MAX
#define WB_TRIES HP_TRIES

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
	struct st_stripe *stripe;
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
	uint64_t *hist;			/* ST_HIST_BUCKETS, in ns */
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
	uint64_t hist[3][ST_HIST_BUCKETS];	/* latencies, by wb_role */
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

static struct st_stripe *wb_stripe_of(struct wb_cache *c, uint64_t key)
{
	return &c->stripe[key & (WB_STRIPES - 1u)];
}

/* The flusher's write callback: the object is under writeback (pinned). */
static int wb_flusher_write(void *priv, struct rcl_lru_node *node)
{
	struct wb_run *r = priv;
	struct wb_obj *o = rcl_container_of(node, struct wb_obj, lru);
	struct st_stripe *s = wb_stripe_of(o->cache, o->key);
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
	struct st_stripe *s = wb_stripe_of(c, o->key);
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
	struct st_stripe *s = wb_stripe_of(c, key);
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
	struct st_stripe *s = wb_stripe_of(c, key);
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
	struct st_stripe *s = wb_stripe_of(c, key);
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
	uint64_t r = rng_next(&w->rng), hot = c->nkeys * WB_HOT_PCT / 100u;
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
	t0 = now_ns();
	ret = wb_charge(w, timed);
	if (timed && !ret)
		w->hist[st_hist_idx(now_ns() - t0)]++;
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
	tick = now_ns();
	while ((phase = atomic_load_explicit(&r->phase,
					     memory_order_acquire)) != 2) {
		bool timed = phase == 1;
		uint64_t now;
		unsigned i;

		for (i = 0; i < per_ms[w->role]; i++) {
			const char *what = NULL;
			uint64_t t0 = now_ns();
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
				w->hist[st_hist_idx(now_ns() - t0)]++;
			w->ops++;
		}
		/* The next millisecond; far behind, skip ahead. */
		tick += 1000000u;
		now = now_ns();
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
	unsigned i;
	int ret;

	c->run = r;
	c->key0 = key0;
	c->nkeys = nkeys;
	atomic_init(&c->free_head, NULL);
	c->slot = calloc((size_t)nkeys, sizeof(*c->slot));
	c->stripe = aligned_alloc(64, WB_STRIPES * sizeof(*c->stripe));
	c->nobjs = (size_t)r->budget_objs + WB_POOL_MARGIN;
	c->objs = aligned_alloc(64, c->nobjs * sizeof(*c->objs));
	if (!c->slot || !c->stripe || !c->objs) {
		free(c->stripe);
		c->stripe = NULL;
		fprintf(stderr, "rcl-bench: out of memory\n");
		return -1;
	}
	for (i = 0; i < WB_STRIPES; i++)
		pthread_mutex_init(&c->stripe[i].lock, NULL);
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
		if (c->stripe) {
			unsigned i;

			for (i = 0; i < WB_STRIPES; i++)
				pthread_mutex_destroy(&c->stripe[i].lock);
		}
		free(c->stripe);
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

	for (i = 0; i < ST_HIST_BUCKETS; i++)
		n += h[i];
	out[0] = st_hist_quantile(h, n, 0.50) / 1e3;
	out[1] = st_hist_quantile(h, n, 0.95) / 1e3;
	out[2] = st_hist_quantile(h, n, 0.99) / 1e3;
	out[3] = st_hist_quantile(h, n, 1.0) / 1e3;
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
	uint64_t (*hist)[ST_HIST_BUCKETS] = res->hist;
	uint64_t wkeys, rkeys, key0 = 0, t0, t1, own0[3], in0[4];
	struct cpu_snap snap0, snap1;
	struct rcl_vmstat vm0, vm1;
	struct timespec ts;
	struct wb_run *r;
	unsigned t, i;
	int ret, err = 0;

	memset(res, 0, sizeof(*res));
	r = zalloc64(sizeof(*r));
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
		w->hist = calloc(ST_HIST_BUCKETS, sizeof(*w->hist));
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
	cpu_snap(&snap0);
	t0 = now_ns();
	atomic_store(&r->phase, 1);
	ts.tv_sec = p->run_ms / 1000u;
	ts.tv_nsec = (long)(p->run_ms % 1000u) * 1000000l;
	nanosleep(&ts, NULL);
	if (atomic_exchange(&r->phase, 2) == 2)
		err = -1;	/* a worker failed */
	t1 = now_ns();
	rcl_domain_vmstat(r->d, &vm1);
	res->own_reclaim_writes = atomic_load(&r->writes_reclaim) - own0[0];
	res->own_flusher_writes = atomic_load(&r->writes_flusher) - own0[1];
	res->syncs = atomic_load(&r->syncs) - own0[2];
	for (i = 0; i < 4; i++)
		res->reclaim_writes_in[i] =
			atomic_load(&r->reclaim_writes_in[i]) - in0[i];
	cpu_snap(&snap1);
	for (t = 0; t < WB_THREADS; t++)
		pthread_join(r->w[t].tid, NULL);
	res->other = cpu_other(&snap0, &snap1);
	res->secs = (double)(t1 - t0) / 1e9;

	for (t = 0; t < WB_THREADS; t++) {
		struct wb_worker *w = &r->w[t];

		if (w->err) {
			fprintf(stderr, "rcl-bench: writeback %s, thread %u: %s (%s)\n",
				wb_mode_names[mode], t, w->err,
				strerror(-w->err_code));
			err = -1;
		}
		for (i = 0; i < ST_HIST_BUCKETS; i++)
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
#define WB_DELTA(f) res->vm.f = st_sub(vm1.f, vm0.f);
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
		for (i = 0; i < ST_HIST_BUCKETS; i++)
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

		printf("{\"bench\":\"writeback\",\"mode\":\"%s\","
		       "\"write_p50_us\":%.3f,\"write_p95_us\":%.3f,"
		       "\"write_p99_us\":%.3f,\"alloc_p50_us\":%.3f,"
		       "\"alloc_p95_us\":%.3f,\"alloc_p99_us\":%.3f,"
		       "\"writes_from_reclaim\":%llu,\"writes_total\":%llu,"
		       "\"flusher_wakeups\":%llu}\n",
		       wb_mode_names[m], x->write_us[0], x->write_us[1],
		       x->write_us[2], x->alloc_us[0], x->alloc_us[1],
		       x->alloc_us[2],
		       (unsigned long long)x->vm.writes_from_reclaim,
		       (unsigned long long)(x->vm.writes_from_reclaim +
					    x->vm.writes_flusher),
		       (unsigned long long)x->vm.flusher_wakeups);
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
		       WB_OTHER_MAX * 100.0);
}

static int cmd_writeback(int argc, char **argv)
{
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
	bool json = false, check_other = true, short_run = false;
	int i, r, ret = 1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--short")) {
			p.budget = WB_SHORT_BUDGET;
			p.warm_ms = WB_SHORT_WARM_MS;
			p.run_ms = WB_SHORT_RUN_MS;
			/* /proc/stat counts 10 ms ticks: too coarse here. */
			check_other = false;
			short_run = true;
		} else if ((r = opt_uint(argc, argv, &i, "--rounds", 1,
					   WB_MAX_ROUNDS, &rounds))) {
			if (r < 0)
				goto bad;
		} else if ((r = opt_uint(argc, argv, &i, "--watermark-scale-factor",
					   1, ST_MAX_SCALE, &p.scale))) {
			if (r < 0)
				goto bad;
		} else if (!strcmp(a, "--reclaim-sync") && i + 1 < argc) {
			a = argv[++i];
			if (!strcmp(a, "object"))
				p.sync_each = true;
			else if (!strcmp(a, "batch"))
				p.sync_each = false;
			else
				goto bad;
		} else if ((r = opt_uint(argc, argv, &i, "--dirty-background-ratio",
					   1, 100, &p.dirty_bg))) {
			if (r < 0)
				goto bad;
		} else if ((r = opt_uint(argc, argv, &i, "--dirty-ratio",
					   1, 100, &p.dirty_hard))) {
			if (r < 0)
				goto bad;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else {
			goto bad;
		}
	}

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
			unsigned a;

			for (a = 0; a < WB_TRIES; a++) {
				if (wb_measure((enum wb_mode)m, &p, one))
					goto out;
				if (!check_other || one->other <= WB_OTHER_MAX)
					break;
				fprintf(stderr, "  %-20s disturbed: others used %.0f%% of the CPU time%s\n",
					wb_mode_names[m], one->other * 100.0,
					a + 1 < WB_TRIES ? "; repeating" : "");
			}
			one->disturbed = check_other &&
					 one->other > WB_OTHER_MAX;
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
	if (disturbed)
		fprintf(stderr, "rcl-bench: warning: %u measurement%s made while other processes used more than %.0f%% of the CPU time\n",
			disturbed, disturbed == 1 ? " was" : "s were",
			WB_OTHER_MAX * 100.0);
	if (json)
		wb_print_json(res);
	else
		wb_print_table(res, &p);
	ret = 0;
out:
	free(one);
	free(res);
	return ret;

bad:
	usage(stderr);
	return 2;
}

/* ------------------------------------------------------------------------- */
/* Dispatcher                                                                 */
/* ------------------------------------------------------------------------- */

struct command {
	const char *name;
	/* argv[0] is the command's name. */
	int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
	{ "hotpath", cmd_hotpath },
	{ "windup", cmd_windup },
	{ "shrink-scale", cmd_shrink_scale },
	{ "stream", cmd_stream },
	{ "writeback", cmd_writeback },
};

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "rcl-bench: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
