/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench stream: two threads stream through a data set 4x a memory
 * domain's budget while re-reading a hot set, charging every miss; direct
 * reclaim only, with the background reclaimer, and with the pre-2014
 * (nonproportional) scan.  The user-space analogue of vm-scalability.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reclaim/reclaim.h>

#include "commands.h"
#include "harness.h"

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
 * A mode during which other processes used more than BENCH_OTHER_MAX of
 * the CPU time is measured again (up to BENCH_TRIES times), as in hotpath.
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
/*
 * A mode measured while others used the CPUs is repeated, as in hotpath
 * (BENCH_OTHER_MAX, BENCH_TRIES); --watermark-scale-factor is at most
 * BENCH_MAX_SCALE; charge latencies go to a harness histogram.
 */

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

struct st_run;

/* One thread's cache.  "Owner": its worker, or main once the worker is gone. */
struct st_cache {
	_Alignas(64) struct rcl_lruvec lv;
	struct st_run *run;
	struct st_obj **slot;		/* the index; stripe lock */
	struct bench_stripe *stripe;
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
	uint64_t *hist;		/* charge latencies, BENCH_HIST_BUCKETS */
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
	_Alignas(64) struct bench_barrier bar;
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
	bool disturbed;		/* other > BENCH_OTHER_MAX in every attempt */
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

static struct bench_stripe *st_stripe_of(struct st_cache *c, uint64_t key)
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
	struct bench_stripe *s = st_stripe_of(c, o->key);

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
	struct bench_stripe *s = st_stripe_of(c, key);
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
		t0 = bench_now_ns();
	ret = rcl_domain_charge(r->d, ST_OBJ_SIZE, RCL_CTX_CAPABLE, NULL);
	if (hist)
		hist[bench_hist_idx(bench_now_ns() - t0)]++;
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
			key = r->stream_keys + bench_rng_next(&w->rng) % r->hot_keys;
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
	if (bench_barrier_wait(&r->bar)) {
		rcl_domain_vmstat(r->d, &r->vm0);
		r->t0_ns = bench_now_ns();
	}
	bench_barrier_wait(&r->bar);
	st_phase(w, r->timed_ops, true);
	w->end_ns = bench_now_ns();
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
	for (i = 0; i < 64 && bench_sub(rcl_domain_budget(d),
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
		bench_stripes_free(c->stripe, ST_STRIPES);
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
	int ret;

	c->run = r;
	atomic_init(&c->free_head, NULL);
	c->slot = calloc(nkeys, sizeof(*c->slot));
	c->stripe = bench_stripes_new(ST_STRIPES);
	c->nobjs = (size_t)(budget / ST_OBJ_SIZE) + ST_POOL_MARGIN;
	c->objs = aligned_alloc(64, c->nobjs * sizeof(*c->objs));
	if (!c->slot || !c->stripe || !c->objs) {
		bench_stripes_free(c->stripe, ST_STRIPES);
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
	uint64_t hist[BENCH_HIST_BUCKETS] = { 0 }, budget_objs, per_pass, end = 0;
	uint64_t hot_reads = 0, hot_hits = 0, stream_reads = 0, stream_hits = 0;
	struct bench_cpu_snap snap0, snap1;
	struct rcl_vmstat vm1;
	struct st_run *r;
	unsigned t, i;
	int ret, err = 0;

	memset(res, 0, sizeof(*res));
	r = bench_zalloc64(sizeof(*r));
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
	bench_barrier_init(&r->bar, ST_THREADS);
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
		w->hist = calloc(BENCH_HIST_BUCKETS, sizeof(*w->hist));
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

	bench_cpu_snapshot(&snap0);
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
	bench_cpu_snapshot(&snap1);
	res->other = bench_cpu_other(&snap0, &snap1);

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
		for (i = 0; i < BENCH_HIST_BUCKETS; i++)
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
#define ST_DELTA(f) res->vm.f = bench_sub(vm1.f, r->vm0.f)
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
	for (i = 0; i < BENCH_HIST_BUCKETS; i++)
		res->charges += hist[i];
	res->charge_p50_us = bench_hist_quantile(hist, res->charges, 0.50) / 1e3;
	res->charge_p99_us = bench_hist_quantile(hist, res->charges, 0.99) / 1e3;
	res->charge_max_us = bench_hist_quantile(hist, res->charges, 1.0) / 1e3;
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

		bench_json_begin("stream");
		bench_json_str("mode", st_mode_names[m]);
		bench_json_dbl("ops_per_s", 1, x->ops_per_s);
		bench_json_dbl("hot_hit_ratio", 6, x->hot_hit_ratio);
		bench_json_uint("pgscan_bg", x->vm.pgscan_kswapd);
		bench_json_uint("pgscan_direct", x->vm.pgscan_direct);
		bench_json_uint("pgsteal_bg", x->vm.pgsteal_kswapd);
		bench_json_uint("pgsteal_direct", x->vm.pgsteal_direct);
		bench_json_dbl("bg_scan_pct", 3, x->bg_scan_pct);
		bench_json_dbl("efficiency_pct", 3, x->efficiency_pct);
		bench_json_dbl("overreclaim_pct", 3, x->overreclaim_pct);
		bench_json_uint("allocstall", x->vm.allocstall);
		bench_json_dbl("charge_p50_us", 3, x->charge_p50_us);
		bench_json_dbl("charge_p99_us", 3, x->charge_p99_us);
		bench_json_end();
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
		       BENCH_OTHER_MAX * 100.0);
}

int cmd_stream(int argc, char **argv)
{
	struct st_params p = {
		.budget = ST_BUDGET,
		.passes = ST_PASSES,
		.or_calls = ST_OR_CALLS,
		.scale = 0,
	};
	struct st_result res[ST_NR_MODES];
	unsigned m, disturbed = 0;
	bool json = false, shortrun = false, check_other = true;
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_FLAG("--short", &shortrun),
		BENCH_OPT_UINT("--watermark-scale-factor", &p.scale, 1,
			       BENCH_MAX_SCALE),
		BENCH_OPT_END,
	};
	int ret;

	ret = bench_parse_opts(argc, argv, opts);
	if (ret != BENCH_CONTINUE)
		return ret;
	if (shortrun) {
		p.budget = ST_SHORT_BUDGET;
		p.passes = ST_SHORT_PASSES;
		p.or_calls = ST_SHORT_OR_CALLS;
		/* /proc/stat counts 10 ms ticks: no use for 1 ms runs. */
		check_other = false;
	}

	fprintf(stderr, "rcl-bench stream: libreclaim %s, %u threads, budget %llu KiB, %u timed passes, %u over-reclaim calls per mode\n",
		rcl_version(), ST_THREADS,
		(unsigned long long)(p.budget >> 10), p.passes, p.or_calls);
	for (m = 0; m < ST_NR_MODES; m++) {
		struct bench_retry rt = BENCH_RETRY_INIT(BENCH_TRIES,
							 check_other);

		do {
			if (st_measure((enum st_mode)m, &p, &res[m]))
				return 1;
		} while (bench_retry_again(&rt, st_mode_names[m], 15,
					   res[m].other));
		res[m].disturbed = rt.disturbed;
		disturbed += res[m].disturbed;
		fprintf(stderr, "  %-15s %.0f ops/s, hot hits %.4f, bg scans %.2f%%, efficiency %.2f%%, allocstall %llu, over-reclaim %.2f%%\n",
			st_mode_names[m], res[m].ops_per_s,
			res[m].hot_hit_ratio, res[m].bg_scan_pct,
			res[m].efficiency_pct,
			(unsigned long long)res[m].vm.allocstall,
			res[m].overreclaim_pct);
	}
	bench_warn_disturbed(disturbed, "mode", "measured");
	if (json)
		st_print_json(res);
	else
		st_print_table(res, &p);
	return 0;
}
