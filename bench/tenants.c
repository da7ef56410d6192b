/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench tenants: four caches (tenants) on one budget, keyed by four real
 * traces: each tenant in a flat domain of its own (static), all in one flat
 * domain (shared), and a tree of domains whose parent has the budget and one
 * child per tenant, one of them protected by protect_low (tree; issue #17).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <reclaim/reclaim.h>

#include "../tools/rcl-sim/trace.h"
#include "commands.h"
#include "harness.h"

/* ------------------------------------------------------------------------- */
/* The workload                                                               */
/* ------------------------------------------------------------------------- */

/*
 * The tenants are the four traces of issue #17, decoded by rcl-sim's reader
 * (tools/rcl-sim/trace.c, compiled in), which renumbers each trace's keys by
 * first appearance: tenant t's keys are 0 .. unique_t - 1, so its index is
 * an array of unique_t slots (a perfect hash).  Every tenant has its own
 * index and its own lruvec, so keys of different tenants never collide.
 *
 * Objects are of TN_OBJ_SIZE bytes: that is what a miss charges and what the
 * lruvec weighs them.  The payload itself is not allocated (a struct tn_obj
 * is the node, the key and the pin): hit ratios do not depend on it, and
 * 4 KiB payloads would add a few hundred MiB of memset per configuration to
 * the throughput run without telling anything about reclaim.
 *
 * The budget is TN_BUDGET_PCT % of the four traces' unique keys together,
 * times TN_OBJ_SIZE.  Each configuration starts empty and replays every
 * trace once, whole, with no warm-up; every request counts.
 *
 * Round-robin: one thread takes the next request of tenant 0, 1, 2, 3, 0,
 * ...; a tenant whose trace has ended leaves the rotation (the traces have
 * 914,145, 5,000,000, 135,702 and 26,311 requests, so the last 4,085,855
 * rounds are orm-busy's alone).  The library runs on a fake clock and only
 * direct reclaim runs (no background reclaimer), so every figure is
 * deterministic: the same on every run and machine, for a given library.
 *
 * Threads (--threads, after the round-robin run): one thread per tenant
 * replays its trace as fast as it can, all released together once they
 * exist; the figures are requests per second (all requests over the time
 * until the last thread ends, and the protected tenant's over its own
 * time), medians of TN_THREAD_RUNS runs per configuration, the
 * configurations in alternation (bench_median_of_runs()).  Evictions run
 * on whichever thread reclaims, so the index is under striped mutexes and
 * lookups pin objects (the pin protocol of <reclaim/lruvec.h>), in both
 * modes.
 */
#define TN_NR_TENANTS 4u
#define TN_OBJ_SIZE 4096u
#define TN_BUDGET_PCT 25u
#define TN_SHORT_REQUESTS 50000u	/* --short: the prefix of each trace */
#define TN_STRIPES 256u			/* index locks per tenant */
#define TN_THREAD_RUNS 5u		/* --threads: the median of 5 runs */

/*
 * The protected tenant's working-set size: the knee of its exact LRU
 * miss-ratio curve (tn_wss()): the smallest size c such that, for every
 * size c' >= c, doubling c' (up to the unique keys, where the curve ends)
 * lowers the miss ratio by less than eps (--knee-eps; TN_KNEE_EPS, one
 * point of miss ratio, by default).
 */
#define TN_KNEE_EPS 0.01

#ifndef RCL_BENCH_TRACES_DIR
#define RCL_BENCH_TRACES_DIR "../shared/traces"
#endif

_Static_assert(TN_STRIPES && !(TN_STRIPES & (TN_STRIPES - 1)),
	       "TN_STRIPES is a power of two");

static const struct tn_trace_info {
	const char *path;	/* under the traces directory */
	const char *format;	/* rcl-sim's --format */
	const char *name;
	bool protect;		/* the tenant tree protects */
} tn_traces[TN_NR_TENANTS] = {
	{ "arc/OLTP.lis.zst", "arc", "OLTP", false },
	{ "cache2k/orm-busy.trace.xz", "u32be", "orm-busy", true },
	{ "corda/trace_vaultservice.gz", "u64be", "vaultservice", false },
	{ "lirs/multi2.trace.gz", "lirs", "multi2", false },
};

/*
 * The configurations, at the same budget B, all strict: static, a flat
 * domain of B / 4 per tenant; shared, one flat domain of B with the four
 * lruvecs attached; tree, a root of B with no lruvec and a child per
 * tenant, whose budget (its max) is B as well: a child has no limit of its
 * own below the parent's, but with B rather than 0 (UINT64_MAX) its max is
 * a number that the check against it means something for.  The protected
 * tenant's child has protect_low = its working-set size.
 */
enum tn_config { TN_STATIC, TN_SHARED, TN_TREE, TN_NR_CONFIGS };

static const char *const tn_config_names[TN_NR_CONFIGS] = {
	"static", "shared", "tree",
};

/* The index of the protected tenant (there is one). */
static unsigned tn_protected(void)
{
	unsigned t;

	for (t = 0; t < TN_NR_TENANTS; t++)
		if (tn_traces[t].protect)
			return t;
	return 0;
}

/* A decoded trace: its key stream (a prefix of it under --short). */
struct tn_trace {
	const char *name;
	struct trace t;
	size_t nr_requests;	/* used: the whole trace or the prefix */
	uint32_t nr_unique;	/* of those requests */
};

struct tn_obj {
	struct rcl_lru_node lru;
	uint32_t key;
	atomic_uint refs;	/* the index's reference + pins */
	bool hashed;		/* under its stripe's lock */
};

struct tn_run;

/* One tenant's cache in one configuration. */
struct tn_cache {
	_Alignas(64) struct rcl_lruvec lv;
	struct tn_run *run;
	const struct tn_trace *tr;
	struct rcl_domain *d;		/* the domain its misses charge */
	bool own_domain;		/* d is the tenant's alone */
	uint64_t max;			/* the most it may hold: its max */
	struct tn_obj **slot;		/* the index; stripe lock */
	struct bench_stripe *stripe;
	bool lv_ok;
	bool attached;
	/* evictions, from any thread */
	_Alignas(64) atomic_ullong bytes;	/* charged for its objects */
	atomic_ullong evict_errors;
	/* its own thread's */
	_Alignas(64) size_t pos;	/* the next request */
	uint64_t hits;
	/* round-robin: in rounds another tenant was still active in */
	uint64_t contended_requests, contended_hits;
	uint64_t refused;		/* charges refused (-ENOMEM) */
	uint64_t peak;			/* the most it held */
	uint64_t over;			/* a usage above max, or 0 */
	uint64_t usage_sum;		/* its usage after each request */
	uint64_t start_ns, end_ns;
	const char *err;
	int err_code;
};

struct tn_run {
	enum tn_config config;
	uint64_t budget;
	struct rcl_fake_clock *fc;
	struct rcl_domain *top;		/* shared: the domain; tree: the root */
	/* static: each tenant's flat domain; tree: each tenant's child */
	struct rcl_domain *dom[TN_NR_TENANTS];
	struct tn_cache cache[TN_NR_TENANTS];
	/* every tenant's thread updates these (tn_atomic_max()) */
	atomic_ullong top_peak;		/* the most top held */
	atomic_ullong top_over;		/* top's usage above the budget, or 0 */
	atomic_bool go;			/* threads: start */
	atomic_bool stop;		/* a thread failed */
};

/* What one configuration's run gives, per tenant. */
struct tn_tenant_result {
	uint64_t requests, hits, refused;
	uint64_t contended_requests, contended_hits;
	uint64_t usage, peak, max, usage_sum;
	uint64_t low_events;
	uint64_t protect_low;		/* its setting (tree) */
	uint64_t elow;			/* its effective low at the end (tree) */
	double seconds;
};

struct tn_result {
	struct tn_tenant_result t[TN_NR_TENANTS];
	uint64_t usage;			/* the configuration's total at the end */
	uint64_t peak;			/* the most the top domain held, or 0 */
	uint64_t low_events;
	double seconds;			/* the whole run (threads: the slowest) */
	double other;			/* CPU time others used (threads) */
	bool above_max;			/* a tenant, or the whole, was */
};

struct tn_params {
	const struct tn_trace *tr;	/* TN_NR_TENANTS */
	uint64_t budget;
	uint64_t protect_low;
	bool threads;
};

/* ------------------------------------------------------------------------- */
/* The cache                                                                  */
/* ------------------------------------------------------------------------- */

static struct bench_stripe *tn_stripe(struct tn_cache *c, uint32_t key)
{
	return &c->stripe[bench_mix64(key) & (TN_STRIPES - 1u)];
}

/*
 * The evict callback, in whichever thread reclaims: free the object unless
 * its tenant's thread holds a pin on it.
 */
static enum rcl_evict_status tn_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct tn_obj *o = rcl_container_of(node, struct tn_obj, lru);
	struct tn_cache *c = ctl->priv;
	struct bench_stripe *s = tn_stripe(c, o->key);

	pthread_mutex_lock(&s->lock);
	if (!o->hashed ||
	    atomic_load_explicit(&o->refs, memory_order_acquire) != 1) {
		pthread_mutex_unlock(&s->lock);
		return RCL_EVICT_BUSY;
	}
	c->slot[o->key] = NULL;
	o->hashed = false;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_sub_explicit(&c->bytes, TN_OBJ_SIZE, memory_order_relaxed);
	if (rcl_domain_uncharge(c->d, TN_OBJ_SIZE))
		atomic_fetch_add(&c->evict_errors, 1);
	free(o);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops tn_ops = { .evict = tn_evict };

static void tn_fail(struct tn_cache *c, const char *what, int code)
{
	if (!c->err) {
		c->err = what;
		c->err_code = code;
	}
	atomic_store_explicit(&c->run->stop, true, memory_order_relaxed);
}

/* *@a = max(*@a, @v), from any thread. */
static void tn_atomic_max(atomic_ullong *a, unsigned long long v)
{
	unsigned long long cur = atomic_load_explicit(a, memory_order_relaxed);

	while (cur < v && !atomic_compare_exchange_weak_explicit(
				  a, &cur, v, memory_order_relaxed,
				  memory_order_relaxed))
		;
}

/* What the tenant holds now: its domain's usage, or its own count (shared). */
static uint64_t tn_usage(struct tn_cache *c)
{
	if (c->own_domain)
		return rcl_domain_usage(c->d);
	return atomic_load_explicit(&c->bytes, memory_order_relaxed);
}

/*
 * A miss: charge the tenant's domain (which may reclaim from any tenant),
 * check what the tenant and the configuration hold against their maxima,
 * then insert.  Returns 0, or -1 after tn_fail().
 */
static int tn_miss(struct tn_cache *c, uint32_t key)
{
	struct tn_run *r = c->run;
	struct bench_stripe *s = tn_stripe(c, key);
	struct tn_obj *o;
	uint64_t u;
	int ret;

	ret = rcl_domain_charge(c->d, TN_OBJ_SIZE, RCL_CTX_CAPABLE, NULL);
	if (ret == -ENOMEM) {
		c->refused++;
		return 0;
	}
	if (ret) {
		tn_fail(c, "rcl_domain_charge", ret);
		return -1;
	}
	atomic_fetch_add_explicit(&c->bytes, TN_OBJ_SIZE, memory_order_relaxed);
	/*
	 * Only this thread charges c->d (static, tree) or counts c->bytes up,
	 * so what is read here bounds the tenant's usage until its next miss.
	 */
	u = tn_usage(c);
	if (u > c->peak)
		c->peak = u;
	if (u > c->max && !c->over)
		c->over = u;
	if (r->top) {
		u = rcl_domain_usage(r->top);
		tn_atomic_max(&r->top_peak, u);
		if (u > r->budget)
			tn_atomic_max(&r->top_over, u);
	}

	o = malloc(sizeof(*o));
	if (!o) {
		atomic_fetch_sub(&c->bytes, TN_OBJ_SIZE);
		rcl_domain_uncharge(c->d, TN_OBJ_SIZE);
		tn_fail(c, "out of memory", -ENOMEM);
		return -1;
	}
	rcl_lru_node_init(&o->lru);
	o->key = key;
	atomic_init(&o->refs, 1);
	pthread_mutex_lock(&s->lock);
	c->slot[key] = o;
	o->hashed = true;
	pthread_mutex_unlock(&s->lock);
	ret = rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE, TN_OBJ_SIZE, 0);
	if (ret) {
		pthread_mutex_lock(&s->lock);
		c->slot[key] = NULL;
		o->hashed = false;
		pthread_mutex_unlock(&s->lock);
		atomic_fetch_sub(&c->bytes, TN_OBJ_SIZE);
		rcl_domain_uncharge(c->d, TN_OBJ_SIZE);
		free(o);
		tn_fail(c, "rcl_lruvec_add", ret);
		return -1;
	}
	return 0;
}

/* The tenant's next request (its own thread).  Returns 0, or -1. */
static int tn_request(struct tn_cache *c)
{
	uint32_t key = c->tr->t.ids[c->pos++];
	struct bench_stripe *s = tn_stripe(c, key);
	struct tn_obj *o;
	int ret;

	pthread_mutex_lock(&s->lock);
	o = c->slot[key];
	if (o)
		atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&s->lock);
	if (o) {
		ret = rcl_lruvec_mark_accessed(&c->lv, &o->lru);
		atomic_fetch_sub_explicit(&o->refs, 1, memory_order_release);
		if (ret) {
			tn_fail(c, "rcl_lruvec_mark_accessed", ret);
			return -1;
		}
		c->hits++;
	} else if (tn_miss(c, key)) {
		return -1;
	}
	c->usage_sum += tn_usage(c);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The configurations                                                         */
/* ------------------------------------------------------------------------- */

static int tn_domain_new(struct rcl_domain_config *cfg, struct rcl_domain **d)
{
	int ret = rcl_domain_new(cfg, d);

	if (ret)
		fprintf(stderr, "rcl-bench tenants: rcl_domain_new: %s\n",
			strerror(-ret));
	return ret ? -1 : 0;
}

/* The domains of configuration @r->config, all strict, on the fake clock. */
static int tn_setup_domains(struct tn_run *r, const struct tn_params *p)
{
	struct rcl_domain_config cfg = {
		.mode = RCL_CHARGE_STRICT,
		.clock = rcl_fake_clock_clock(r->fc),
	};
	unsigned t;

	switch (r->config) {
	case TN_STATIC:
		cfg.budget = p->budget / TN_NR_TENANTS;
		for (t = 0; t < TN_NR_TENANTS; t++) {
			if (tn_domain_new(&cfg, &r->dom[t]))
				return -1;
			r->cache[t].d = r->dom[t];
			r->cache[t].own_domain = true;
			r->cache[t].max = cfg.budget;
		}
		break;
	case TN_SHARED:
		cfg.budget = p->budget;
		if (tn_domain_new(&cfg, &r->top))
			return -1;
		for (t = 0; t < TN_NR_TENANTS; t++) {
			r->cache[t].d = r->top;
			r->cache[t].max = p->budget;
		}
		break;
	case TN_TREE:
		cfg.budget = p->budget;
		if (tn_domain_new(&cfg, &r->top))
			return -1;
		cfg.parent = r->top;
		for (t = 0; t < TN_NR_TENANTS; t++) {
			cfg.protect_low = tn_traces[t].protect ? p->protect_low
							       : 0;
			if (tn_domain_new(&cfg, &r->dom[t]))
				return -1;
			r->cache[t].d = r->dom[t];
			r->cache[t].own_domain = true;
			r->cache[t].max = cfg.budget;
		}
		break;
	default:
		return -1;
	}
	return 0;
}

/*
 * Every low event of configuration @r: of each tenant's own domain, and in
 * all (the root's subtree for tree, the four domains for static).
 */
static int tn_events(struct tn_run *r, struct tn_result *res)
{
	struct rcl_domain_events ev;
	unsigned t;
	int ret;

	for (t = 0; t < TN_NR_TENANTS; t++) {
		if (!r->dom[t])
			continue;
		ret = rcl_domain_events(r->dom[t], false, &ev);
		if (ret)
			goto fail;
		res->t[t].low_events = ev.low;
		if (!r->top)
			res->low_events += ev.low;
	}
	if (r->top) {
		ret = rcl_domain_events(r->top, true, &ev);
		if (ret)
			goto fail;
		res->low_events = ev.low;
	}
	if (r->config != TN_TREE)
		return 0;
	for (t = 0; t < TN_NR_TENANTS; t++) {
		struct rcl_domain_limits lim;

		ret = rcl_domain_limits(r->dom[t], &lim);
		if (!ret)
			ret = rcl_domain_effective_protection(r->top, r->dom[t],
							      NULL,
							      &res->t[t].elow);
		if (ret)
			goto fail;
		res->t[t].protect_low = lim.protect_low;
	}
	return 0;
fail:
	fprintf(stderr, "rcl-bench tenants: %s: the events: %s\n",
		tn_config_names[r->config], strerror(-ret));
	return -1;
}

static int tn_setup(struct tn_run *r, enum tn_config config,
		    const struct tn_params *p)
{
	struct rcl_lruvec_config lcfg = {
		.ops = &tn_ops,
		.nr_types = 1,
		.types = { { .name = "object", .cost = 1 } },
	};
	unsigned t;
	int ret;

	memset(r, 0, sizeof(*r));
	r->config = config;
	r->budget = p->budget;
	atomic_init(&r->top_peak, 0);
	atomic_init(&r->top_over, 0);
	atomic_init(&r->go, false);
	atomic_init(&r->stop, false);
	ret = rcl_fake_clock_new(0, &r->fc);
	if (ret) {
		fprintf(stderr, "rcl-bench tenants: rcl_fake_clock_new: %s\n",
			strerror(-ret));
		return -1;
	}
	if (tn_setup_domains(r, p))
		return -1;
	for (t = 0; t < TN_NR_TENANTS; t++) {
		struct tn_cache *c = &r->cache[t];

		c->run = r;
		c->tr = &p->tr[t];
		atomic_init(&c->bytes, 0);
		atomic_init(&c->evict_errors, 0);
		c->slot = calloc(c->tr->nr_unique ? c->tr->nr_unique : 1,
				 sizeof(*c->slot));
		c->stripe = bench_stripes_new(TN_STRIPES);
		if (!c->slot || !c->stripe) {
			fprintf(stderr, "rcl-bench tenants: out of memory\n");
			return -1;
		}
		lcfg.priv = c;
		ret = rcl_lruvec_init(&c->lv, &lcfg);
		if (ret) {
			fprintf(stderr, "rcl-bench tenants: rcl_lruvec_init: %s\n",
				strerror(-ret));
			return -1;
		}
		c->lv_ok = true;
		ret = rcl_domain_attach(c->d, &c->lv, 0);
		if (ret) {
			fprintf(stderr, "rcl-bench tenants: rcl_domain_attach: %s\n",
				strerror(-ret));
			return -1;
		}
		c->attached = true;
	}
	return 0;
}

/*
 * Read what the run left: the usages (before anything is taken out), the
 * events, and the consistency of the caches with the domains.  Returns 0 or
 * -1.
 */
static int tn_collect(struct tn_run *r, struct tn_result *res)
{
	uint64_t total = 0;
	unsigned t;
	int err = 0;

	for (t = 0; t < TN_NR_TENANTS; t++) {
		struct tn_cache *c = &r->cache[t];
		struct tn_tenant_result *tr = &res->t[t];
		uint64_t cached = 0, k;

		for (k = 0; k < c->tr->nr_unique; k++)
			cached += c->slot[k] != NULL;
		tr->requests = c->pos;
		tr->hits = c->hits;
		tr->contended_requests = c->contended_requests;
		tr->contended_hits = c->contended_hits;
		tr->refused = c->refused;
		tr->usage = tn_usage(c);
		tr->peak = c->peak;
		tr->max = c->max;
		tr->usage_sum = c->usage_sum;
		tr->seconds = (double)(c->end_ns - c->start_ns) * 1e-9;
		if (cached * TN_OBJ_SIZE != atomic_load(&c->bytes) ||
		    tr->usage != cached * TN_OBJ_SIZE) {
			fprintf(stderr, "rcl-bench tenants: %s, %s: %" PRIu64 " objects cached, %llu bytes counted, usage %" PRIu64 "\n",
				tn_config_names[r->config], c->tr->name,
				cached, (unsigned long long)atomic_load(&c->bytes),
				tr->usage);
			err = -1;
		}
		if (atomic_load(&c->evict_errors)) {
			fprintf(stderr, "rcl-bench tenants: %s, %s: rcl_domain_uncharge failed in the evict callback\n",
				tn_config_names[r->config], c->tr->name);
			err = -1;
		}
		if (c->over) {
			fprintf(stderr, "rcl-bench tenants: %s, %s: usage %" PRIu64 " above its max %" PRIu64 "\n",
				tn_config_names[r->config], c->tr->name,
				c->over, c->max);
			res->above_max = true;
		}
		total += tr->usage;
	}
	res->usage = total;
	res->peak = atomic_load(&r->top_peak);
	if (tn_events(r, res))
		err = -1;
	if (r->top && rcl_domain_usage(r->top) != total) {
		fprintf(stderr, "rcl-bench tenants: %s: usage %" PRIu64 ", but the tenants hold %" PRIu64 "\n",
			tn_config_names[r->config], rcl_domain_usage(r->top),
			total);
		err = -1;
	}
	if (atomic_load(&r->top_over)) {
		fprintf(stderr, "rcl-bench tenants: %s: usage %llu above the budget %" PRIu64 "\n",
			tn_config_names[r->config],
			(unsigned long long)atomic_load(&r->top_over), r->budget);
		res->above_max = true;
	}
	return err;
}

/* Take every object out and free everything.  Returns 0 or -1. */
static int tn_teardown(struct tn_run *r)
{
	unsigned t;
	int ret, err = 0;

	rcl_lru_drain_local();
	for (t = 0; t < TN_NR_TENANTS; t++) {
		struct tn_cache *c = &r->cache[t];
		uint32_t k;

		if (c->attached) {
			ret = rcl_domain_detach(c->d, &c->lv);
			if (ret) {
				fprintf(stderr, "rcl-bench tenants: rcl_domain_detach: %s\n",
					strerror(-ret));
				err = -1;
			}
		}
		for (k = 0; c->slot && k < c->tr->nr_unique; k++) {
			struct tn_obj *o = c->slot[k];

			if (!o)
				continue;
			ret = rcl_lruvec_del(&c->lv, &o->lru);
			if (ret) {
				fprintf(stderr, "rcl-bench tenants: rcl_lruvec_del: %s\n",
					strerror(-ret));
				err = -1;
				continue;	/* leaked: still on the lruvec */
			}
			c->slot[k] = NULL;
			rcl_domain_uncharge(c->d, TN_OBJ_SIZE);
			free(o);
		}
		if (c->lv_ok) {
			ret = rcl_lruvec_destroy(&c->lv);
			if (ret) {
				fprintf(stderr, "rcl-bench tenants: rcl_lruvec_destroy: %s\n",
					strerror(-ret));
				err = -1;
			}
		}
		bench_stripes_free(c->stripe, TN_STRIPES);
		free(c->slot);
	}
	for (t = 0; t < TN_NR_TENANTS; t++) {
		if (!r->dom[t])
			continue;
		if (rcl_domain_usage(r->dom[t])) {
			fprintf(stderr, "rcl-bench tenants: usage %" PRIu64 " after every object was uncharged\n",
				rcl_domain_usage(r->dom[t]));
			err = -1;
		}
		ret = rcl_domain_free(r->dom[t]);
		if (ret) {
			fprintf(stderr, "rcl-bench tenants: rcl_domain_free: %s\n",
				strerror(-ret));
			err = -1;
		}
	}
	if (r->top) {
		if (rcl_domain_usage(r->top)) {
			fprintf(stderr, "rcl-bench tenants: usage %" PRIu64 " after every object was uncharged\n",
				rcl_domain_usage(r->top));
			err = -1;
		}
		ret = rcl_domain_free(r->top);
		if (ret) {
			fprintf(stderr, "rcl-bench tenants: rcl_domain_free: %s\n",
				strerror(-ret));
			err = -1;
		}
	}
	rcl_fake_clock_free(r->fc);
	return err;
}

static int tn_check_errors(struct tn_run *r)
{
	unsigned t;
	int err = 0;

	for (t = 0; t < TN_NR_TENANTS; t++) {
		struct tn_cache *c = &r->cache[t];

		if (c->err) {
			fprintf(stderr, "rcl-bench tenants: %s, %s: %s: %s\n",
				tn_config_names[r->config], c->tr->name,
				c->err, strerror(-c->err_code));
			err = -1;
		}
	}
	return err;
}

/* ------------------------------------------------------------------------- */
/* The two ways of running a configuration                                    */
/* ------------------------------------------------------------------------- */

/* One thread, the tenants' requests in turn.  Returns 0 or -1. */
static int tn_run_round_robin(struct tn_run *r, struct tn_result *res)
{
	uint64_t t0 = bench_now_ns();
	unsigned t, active = 0;

	for (t = 0; t < TN_NR_TENANTS; t++) {
		r->cache[t].start_ns = t0;
		active += r->cache[t].pos < r->cache[t].tr->nr_requests;
	}
	while (active) {
		bool contended = active > 1;	/* at the start of the round */

		for (t = 0; t < TN_NR_TENANTS; t++) {
			struct tn_cache *c = &r->cache[t];
			uint64_t hits = c->hits;

			if (c->pos == c->tr->nr_requests)
				continue;
			if (tn_request(c))
				return -1;
			if (contended) {
				c->contended_requests++;
				c->contended_hits += c->hits - hits;
			}
			if (c->pos == c->tr->nr_requests) {
				c->end_ns = bench_now_ns();
				active--;
			}
		}
	}
	res->seconds = (double)(bench_now_ns() - t0) * 1e-9;
	return 0;
}

static void *tn_thread_main(void *arg)
{
	struct tn_cache *c = arg;
	struct tn_run *r = c->run;
	char name[16];

	snprintf(name, sizeof(name), "tenant-%u", (unsigned)(c - r->cache));
	pthread_setname_np(pthread_self(), name);
	while (!atomic_load_explicit(&r->go, memory_order_acquire))
		sched_yield();
	c->start_ns = bench_now_ns();
	while (c->pos < c->tr->nr_requests) {
		if (!(c->pos & 1023u) &&
		    atomic_load_explicit(&r->stop, memory_order_relaxed))
			break;
		if (tn_request(c))
			break;
	}
	c->end_ns = bench_now_ns();
	rcl_lru_drain_local();
	return NULL;
}

/* A thread per tenant.  Returns 0 or -1. */
static int tn_run_threads(struct tn_run *r, struct tn_result *res)
{
	pthread_t tid[TN_NR_TENANTS];
	struct bench_cpu_snap s0, s1;
	uint64_t first = UINT64_MAX, last = 0;
	unsigned t, started = 0;
	int ret, err = 0;

	bench_cpu_snapshot(&s0);
	for (t = 0; t < TN_NR_TENANTS; t++) {
		ret = pthread_create(&tid[t], NULL, tn_thread_main,
				     &r->cache[t]);
		if (ret) {
			fprintf(stderr, "rcl-bench tenants: pthread_create: %s\n",
				strerror(ret));
			atomic_store(&r->stop, true);	/* the others return */
			err = -1;
			break;
		}
		started++;
	}
	/* Released together once all exist (or told to stop at once). */
	atomic_store_explicit(&r->go, true, memory_order_release);
	for (t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	bench_cpu_snapshot(&s1);
	for (t = 0; t < TN_NR_TENANTS; t++) {
		if (r->cache[t].start_ns && r->cache[t].start_ns < first)
			first = r->cache[t].start_ns;
		if (r->cache[t].end_ns > last)
			last = r->cache[t].end_ns;
	}
	res->seconds = last > first ? (double)(last - first) * 1e-9 : 0;
	res->other = bench_cpu_other(&s0, &s1);
	return err;
}

/*
 * Configuration @config once, round-robin or with threads, from setup to
 * teardown.  Returns 0 or -1.
 */
static int tn_measure(enum tn_config config, const struct tn_params *p,
		      bool threads, struct tn_result *res)
{
	struct tn_run *r;
	int err;

	memset(res, 0, sizeof(*res));
	r = bench_zalloc64(sizeof(*r));
	if (!r) {
		fprintf(stderr, "rcl-bench tenants: out of memory\n");
		return -1;
	}
	err = tn_setup(r, config, p);
	if (!err)
		err = threads ? tn_run_threads(r, res)
			      : tn_run_round_robin(r, res);
	rcl_lru_drain_local();
	if (tn_check_errors(r))
		err = -1;
	if (!err)
		err = tn_collect(r, res);
	if (tn_teardown(r))
		err = -1;
	free(r);
	return err;
}

/* The figures of one thread-per-tenant run (bench_median_of_runs()). */
enum { TN_V_OPS, TN_V_HIT, TN_V_PROT_OPS, TN_V_PROT_HIT, TN_NR_V };

struct tn_threads_arg {
	const struct tn_params *p;
	unsigned prot;			/* the protected tenant */
};

static int tn_threads_sample(void *arg, unsigned impl,
			     struct bench_sample *out)
{
	const struct tn_threads_arg *a = arg;
	struct tn_result res;
	uint64_t req = 0, hits = 0;
	const struct tn_tenant_result *pt = &res.t[a->prot];
	unsigned t;

	/* Above a max is a failure here too (said on standard error). */
	if (tn_measure((enum tn_config)impl, a->p, true, &res) ||
	    res.above_max)
		return -1;
	for (t = 0; t < TN_NR_TENANTS; t++) {
		req += res.t[t].requests;
		hits += res.t[t].hits;
	}
	out->v[TN_V_OPS] = res.seconds > 0 ? (double)req / res.seconds : 0;
	out->v[TN_V_HIT] = req ? (double)hits / (double)req : 0;
	out->v[TN_V_PROT_OPS] =
		pt->seconds > 0 ? (double)pt->requests / pt->seconds : 0;
	out->v[TN_V_PROT_HIT] =
		pt->requests ? (double)pt->hits / (double)pt->requests : 0;
	out->other = res.other;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The working-set size: the knee of an exact LRU miss-ratio curve            */
/* ------------------------------------------------------------------------- */

/*
 * The stack distance of every request (Mattson et al. 1970): the request
 * hits an LRU cache of c objects exactly when fewer than c distinct keys
 * were requested since the previous request of its key.  A Fenwick tree
 * over request times holds a 1 at the latest request of each key, so the
 * distinct keys since time p are a prefix-sum difference: O(n log n) in
 * all.  @hist[d] (d = 1 .. nr_unique) receives the number of requests at
 * distance d; first requests are in none.  Returns 0 or -1.
 */
static int tn_stack_distances(const struct tn_trace *tr, uint64_t *hist)
{
	size_t n = tr->nr_requests, i, j;
	uint32_t *fen = calloc(n + 1, sizeof(*fen));
	size_t *last = malloc((size_t)tr->nr_unique * sizeof(*last));
	uint32_t live = 0;	/* keys seen so far: the 1s in the tree */

	if (!fen || !last) {
		free(fen);
		free(last);
		return -1;
	}
	for (i = 0; i < tr->nr_unique; i++)
		last[i] = SIZE_MAX;
	for (i = 0; i < n; i++) {
		uint32_t key = tr->t.ids[i];
		size_t p = last[key];

		if (p != SIZE_MAX) {
			uint32_t upto = 0;	/* the 1s at times 0 .. p */

			for (j = p + 1; j > 0; j -= j & -j)
				upto += fen[j];
			/* distinct keys after p, and this one */
			hist[live - upto + 1]++;
			for (j = p + 1; j <= n; j += j & -j)
				fen[j]--;
		} else {
			live++;
		}
		for (j = i + 1; j <= n; j += j & -j)
			fen[j]++;
		last[key] = i;
	}
	free(fen);
	free(last);
	return 0;
}

struct tn_wss {
	uint32_t objects;	/* the knee */
	double mr_knee;		/* the LRU miss ratio there */
	double mr_cold;		/* at nr_unique: first requests only */
	double mr_static;	/* at the static share, budget / N */
	uint32_t chord_knee;	/* for comparison: farthest below the chord */
};

/*
 * The working-set size of @tr: the knee of its LRU miss-ratio curve mr(c),
 * c = 0 .. U (U the unique keys; mr(0) = 1, mr(U) the cold-miss ratio): the
 * smallest c such that mr(c') - mr(min(2c', U)) < @eps for every
 * c' >= c.  Also the point of the curve farthest below the chord from
 * (0, 1) to (U, mr(U)), the other usual definition of a knee, printed for
 * comparison.  Returns 0 or -1.
 */
static int tn_wss(const struct tn_trace *tr, uint64_t static_objs, double eps,
		  struct tn_wss *w)
{
	uint32_t u = tr->nr_unique, c;
	uint64_t *hist = calloc((size_t)u + 2, sizeof(*hist));
	double *mr = malloc(((size_t)u + 1) * sizeof(*mr));
	double n = (double)tr->nr_requests, best = -1.0;
	uint64_t hits = 0;

	if (!hist || !mr || !u || tn_stack_distances(tr, hist)) {
		free(hist);
		free(mr);
		return -1;
	}
	for (c = 0; c <= u; c++) {
		hits += hist[c];	/* hist[0] is 0 */
		mr[c] = 1.0 - (double)hits / n;
	}
	/* The largest size that fails; the knee is the next one (0 if none). */
	for (c = u; c > 0; c--) {
		uint32_t cc = c - 1;
		uint32_t c2 = cc > u / 2 ? u : 2 * cc;

		if (mr[cc] - mr[c2] >= eps)
			break;
	}
	w->objects = c;
	w->mr_knee = mr[w->objects];
	w->mr_cold = mr[u];
	w->mr_static = mr[static_objs < u ? static_objs : u];
	w->chord_knee = 0;
	for (c = 0; c <= u; c++) {
		double chord = 1.0 + (mr[u] - 1.0) * (double)c / (double)u;

		if (chord - mr[c] > best) {
			best = chord - mr[c];
			w->chord_knee = c;
		}
	}
	free(hist);
	free(mr);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Output                                                                     */
/* ------------------------------------------------------------------------- */

static double tn_ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

/* The configuration's overall row: the tenants summed. */
static void tn_sum(const struct tn_result *res, struct tn_tenant_result *all)
{
	unsigned t;

	memset(all, 0, sizeof(*all));
	for (t = 0; t < TN_NR_TENANTS; t++) {
		all->requests += res->t[t].requests;
		all->hits += res->t[t].hits;
		all->contended_requests += res->t[t].contended_requests;
		all->contended_hits += res->t[t].contended_hits;
		all->refused += res->t[t].refused;
	}
	all->usage = res->usage;
	all->peak = res->peak;
	all->low_events = res->low_events;
	all->seconds = res->seconds;
}

static void tn_json_bool(const char *key, bool v)
{
	printf(",\"%s\":%s", key, v ? "true" : "false");
}

static void tn_json_row(enum tn_config config, const char *tenant, bool prot,
			const struct tn_tenant_result *tr)
{
	bench_json_begin("tenants");
	bench_json_str("mode", "round-robin");
	bench_json_str("config", tn_config_names[config]);
	bench_json_str("tenant", tenant);
	tn_json_bool("protected", prot);
	bench_json_dbl("hit_ratio", 6, tn_ratio(tr->hits, tr->requests));
	bench_json_uint("usage_bytes", tr->usage);
	bench_json_uint("low_events", tr->low_events);
	bench_json_uint("requests", tr->requests);
	bench_json_uint("hits", tr->hits);
	bench_json_uint("refused", tr->refused);
	bench_json_uint("contended_requests", tr->contended_requests);
	bench_json_dbl("contended_hit_ratio", 6,
		       tn_ratio(tr->contended_hits, tr->contended_requests));
	if (tr->protect_low) {
		bench_json_uint("protect_low_bytes", tr->protect_low);
		bench_json_uint("effective_low_bytes", tr->elow);
	}
	if (tr->max) {
		if (tr->usage_sum)
			bench_json_uint("mean_usage_bytes",
					tr->usage_sum / tr->requests);
		if (tr->peak)
			bench_json_uint("peak_bytes", tr->peak);
		bench_json_uint("max_bytes", tr->max);
	}
	bench_json_end();
}

/*
 * The targets, from the round-robin figures: tree's overall hit
 * ratio at least shared's - TN_TARGET_SLACK and above static's; the
 * protected tenant's under tree at least its static one and above its
 * shared one.  "No tenant ever above its max" is checked on every charge
 * (a run that breaks it has failed: exit status 1, no row).
 */
#define TN_TARGET_SLACK 0.005

static void tn_targets(bool json, const struct tn_result *rr, unsigned prot,
		       bool ok)
{
	struct tn_tenant_result a[TN_NR_CONFIGS];
	double all[TN_NR_CONFIGS], pt[TN_NR_CONFIGS];
	bool t1, t2, t3, t4;
	unsigned c;

	for (c = 0; c < TN_NR_CONFIGS; c++) {
		tn_sum(&rr[c], &a[c]);
		all[c] = tn_ratio(a[c].hits, a[c].requests);
		pt[c] = tn_ratio(rr[c].t[prot].hits, rr[c].t[prot].requests);
	}
	t1 = all[TN_TREE] >= all[TN_SHARED] - TN_TARGET_SLACK;
	t2 = all[TN_TREE] > all[TN_STATIC];
	t3 = pt[TN_TREE] >= pt[TN_STATIC];
	t4 = pt[TN_TREE] > pt[TN_SHARED];
	if (json) {
		bench_json_begin("tenants");
		bench_json_str("mode", "targets");
		bench_json_dbl("overall_tree_minus_shared", 6,
			       all[TN_TREE] - all[TN_SHARED]);
		tn_json_bool("overall_tree_ge_shared_minus_0_005", t1);
		bench_json_dbl("overall_tree_minus_static", 6,
			       all[TN_TREE] - all[TN_STATIC]);
		tn_json_bool("overall_tree_gt_static", t2);
		bench_json_dbl("protected_tree_minus_static", 6,
			       pt[TN_TREE] - pt[TN_STATIC]);
		tn_json_bool("protected_tree_ge_static", t3);
		bench_json_dbl("protected_tree_minus_shared", 6,
			       pt[TN_TREE] - pt[TN_SHARED]);
		tn_json_bool("protected_tree_gt_shared", t4);
		tn_json_bool("never_above_max", ok);
		bench_json_end();
		return;
	}
	printf("targets:\n");
	printf("  tree overall %.4f >= shared %.4f - %.3f: %s\n",
	       all[TN_TREE], all[TN_SHARED], TN_TARGET_SLACK,
	       t1 ? "yes" : "NO");
	printf("  tree overall %.4f > static %.4f: %s\n", all[TN_TREE],
	       all[TN_STATIC], t2 ? "yes" : "NO");
	printf("  protected under tree %.4f >= static %.4f: %s\n",
	       pt[TN_TREE], pt[TN_STATIC], t3 ? "yes" : "NO");
	printf("  protected under tree %.4f > shared %.4f: %s\n",
	       pt[TN_TREE], pt[TN_SHARED], t4 ? "yes" : "NO");
	printf("  no tenant ever above its max: %s\n", ok ? "yes" : "NO");
}

/* One configuration's medians of the thread-per-tenant runs. */
static void tn_threads_row(bool json, enum tn_config config, unsigned reps,
			   const struct tn_trace *prot,
			   const struct bench_figure *f)
{
	if (!json) {
		printf("threads %-7s %12.0f requests/s, hit ratio %.4f; %s %12.0f requests/s, hit ratio %.4f%s\n",
		       tn_config_names[config], f->v[TN_V_OPS], f->v[TN_V_HIT],
		       prot->name, f->v[TN_V_PROT_OPS], f->v[TN_V_PROT_HIT],
		       f->disturbed ? " (disturbed)" : "");
		return;
	}
	bench_json_begin("tenants");
	bench_json_str("mode", "threads");
	bench_json_str("config", tn_config_names[config]);
	bench_json_str("tenant", "all");
	tn_json_bool("protected", false);
	bench_json_dbl("ops_per_s", 0, f->v[TN_V_OPS]);
	bench_json_dbl("hit_ratio", 6, f->v[TN_V_HIT]);
	bench_json_str("protected_tenant", prot->name);
	bench_json_dbl("protected_ops_per_s", 0, f->v[TN_V_PROT_OPS]);
	bench_json_dbl("protected_hit_ratio", 6, f->v[TN_V_PROT_HIT]);
	bench_json_uint("runs", reps);
	tn_json_bool("disturbed", f->disturbed);
	bench_json_end();
}

static void tn_print_config(enum tn_config config, const struct tn_params *p,
			    const struct tn_result *res)
{
	struct tn_tenant_result all;
	unsigned t;

	printf("%s (%.2f s)\n", tn_config_names[config], res->seconds);
	printf("  %-13s %9s %10s %10s %10s %10s %8s %8s\n", "tenant",
	       "hit ratio", "usage MiB", "mean MiB", "peak MiB", "max MiB",
	       "low ev.", "refused");
	for (t = 0; t < TN_NR_TENANTS; t++) {
		const struct tn_tenant_result *tr = &res->t[t];

		printf("  %-12s%s %9.4f %10.1f %10.1f %10.1f %10.1f %8" PRIu64 " %8" PRIu64 "\n",
		       p->tr[t].name, tn_traces[t].protect ? "*" : " ",
		       tn_ratio(tr->hits, tr->requests),
		       (double)tr->usage / 1048576.0,
		       tr->requests ? (double)tr->usage_sum / (double)tr->requests / 1048576.0 : 0.0,
		       (double)tr->peak / 1048576.0,
		       (double)tr->max / 1048576.0, tr->low_events,
		       tr->refused);
	}
	tn_sum(res, &all);
	printf("  %-13s %9.4f %10.1f %10s %10s %10.1f %8" PRIu64 " %8" PRIu64 "\n",
	       "all", tn_ratio(all.hits, all.requests),
	       (double)all.usage / 1048576.0, "", "",
	       (double)p->budget / 1048576.0, all.low_events, all.refused);
}

/* ------------------------------------------------------------------------- */
/* The command                                                                */
/* ------------------------------------------------------------------------- */

/* Load the four traces (prefixes with @prefix > 0).  Returns 0 or -1. */
static int tn_load(const char *dir, size_t prefix, struct tn_trace *tr)
{
	unsigned t;

	for (t = 0; t < TN_NR_TENANTS; t++) {
		struct trace_options topt = { .format = tn_traces[t].format,
					      .csv_key_col = 1,
					      .csv_sep = ',' };
		char path[PATH_MAX], err[512];
		size_t i;

		snprintf(path, sizeof(path), "%s/%s", dir, tn_traces[t].path);
		if (trace_load(path, &topt, &tr[t].t, err, sizeof(err))) {
			fprintf(stderr, "rcl-bench tenants: %s\n", err);
			return -1;
		}
		tr[t].name = tn_traces[t].name;
		tr[t].nr_requests = tr[t].t.nr_requests;
		tr[t].nr_unique = tr[t].t.nr_unique;
		if (prefix && prefix < tr[t].nr_requests) {
			/* numbered by first appearance: the largest + 1 */
			tr[t].nr_requests = prefix;
			tr[t].nr_unique = 0;
			for (i = 0; i < prefix; i++)
				if (tr[t].t.ids[i] >= tr[t].nr_unique)
					tr[t].nr_unique = tr[t].t.ids[i] + 1;
		}
		if (!tr[t].nr_requests) {
			fprintf(stderr, "rcl-bench tenants: %s: no requests\n",
				path);
			return -1;
		}
	}
	return 0;
}

int cmd_tenants(int argc, char **argv)
{
	static struct tn_trace tr[TN_NR_TENANTS];
	static struct tn_result rr[TN_NR_CONFIGS];
	struct tn_params p = { .tr = tr };
	const char *dir = NULL;
	bool json = false, shortrun = false, threads = false, failed = false;
	bool max_ok = true;
	double eps = TN_KNEE_EPS;
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_FLAG("--short", &shortrun),
		BENCH_OPT_FLAG("--threads", &threads),
		BENCH_OPT_DBL("--knee-eps", &eps, 0.0001, 1.0),
		BENCH_OPT_END,
	};
	char **rest;
	uint64_t unique = 0;
	struct tn_wss wss = { 0 };
	unsigned t, c;
	int i, nrest = 1, ret;

	/* --traces DIR takes a word the harness does not parse. */
	rest = calloc((size_t)argc + 1, sizeof(*rest));
	if (!rest)
		return 1;
	rest[0] = argv[0];
	for (i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--traces", 8) ||
		    (argv[i][8] != '\0' && argv[i][8] != '=')) {
			rest[nrest++] = argv[i];
			continue;
		}
		dir = argv[i][8] == '=' ? argv[i] + 9
					: i + 1 < argc ? argv[++i] : NULL;
		if (!dir || !*dir) {
			fprintf(stderr, "rcl-bench tenants: --traces needs a directory\n");
			bench_usage(stderr);
			free(rest);
			return 2;
		}
	}
	ret = bench_parse_opts(nrest, rest, opts);
	free(rest);
	if (ret != BENCH_CONTINUE)
		return ret;
	if (!dir)
		dir = getenv("RCL_TRACES_DIR");
	if (!dir || !*dir)
		dir = RCL_BENCH_TRACES_DIR;
	for (t = 0; t < TN_NR_TENANTS; t++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, tn_traces[t].path);
		if (access(path, R_OK)) {
			fprintf(stderr, "rcl-bench tenants: %s: %s; skipped (--traces DIR names another copy)\n",
				path, strerror(errno));
			return 77;
		}
	}

	if (tn_load(dir, shortrun ? TN_SHORT_REQUESTS : 0, tr))
		goto fail;
	for (t = 0; t < TN_NR_TENANTS; t++)
		unique += tr[t].nr_unique;
	p.budget = unique * TN_BUDGET_PCT / 100 * TN_OBJ_SIZE;
	t = tn_protected();
	if (tn_wss(&tr[t], p.budget / TN_NR_TENANTS / TN_OBJ_SIZE, eps, &wss)) {
		fprintf(stderr, "rcl-bench tenants: out of memory\n");
		goto fail;
	}
	p.protect_low = (uint64_t)wss.objects * TN_OBJ_SIZE;
	if (json) {
		bench_json_begin("tenants");
		bench_json_str("mode", "wss");
		bench_json_str("tenant", tr[t].name);
		bench_json_str("method", "exact LRU miss-ratio curve (stack distances); knee: the smallest size c with mr(c') - mr(min(2c', unique)) < eps for every c' >= c");
		bench_json_dbl("eps", 4, eps);
		bench_json_uint("wss_objects", wss.objects);
		bench_json_uint("protect_low_bytes", p.protect_low);
		bench_json_dbl("lru_miss_ratio_at_wss", 6, wss.mr_knee);
		bench_json_dbl("lru_miss_ratio_static", 6, wss.mr_static);
		bench_json_dbl("lru_miss_ratio_cold", 6, wss.mr_cold);
		bench_json_uint("chord_knee_objects", wss.chord_knee);
		bench_json_end();
	}
	if (json) {
		for (t = 0; t < TN_NR_TENANTS; t++) {
			bench_json_begin("tenants");
			bench_json_str("mode", "trace");
			bench_json_str("tenant", tr[t].name);
			bench_json_str("path", tn_traces[t].path);
			bench_json_uint("requests", tr[t].nr_requests);
			bench_json_uint("unique", tr[t].nr_unique);
			bench_json_end();
		}
	} else {
		printf("rcl-bench tenants: libreclaim %s, %u tenants, objects of %u bytes, budget %u %% of %" PRIu64 " unique keys = %" PRIu64 " objects (%.1f MiB)%s\n",
		       rcl_version(), TN_NR_TENANTS, TN_OBJ_SIZE, TN_BUDGET_PCT,
		       unique, p.budget / TN_OBJ_SIZE,
		       (double)p.budget / 1048576.0,
		       shortrun ? ", prefixes of the traces (--short)" : "");
		for (t = 0; t < TN_NR_TENANTS; t++)
			printf("  %-12s%s %-30s %9zu requests %8" PRIu32 " unique\n",
			       tr[t].name, tn_traces[t].protect ? "*" : " ",
			       tn_traces[t].path, tr[t].nr_requests,
			       tr[t].nr_unique);
		printf("  * protected: working set %" PRIu32 " objects (the knee of its LRU miss-ratio curve, eps %.4g: miss ratio %.4f there, %.4f at the static share, %.4f cold; the chord's knee is at %" PRIu32 ")\n",
		       wss.objects, eps, wss.mr_knee, wss.mr_static,
		       wss.mr_cold, wss.chord_knee);
	}

	for (c = 0; c < TN_NR_CONFIGS; c++) {
		if (!json) {
			fflush(stdout);
			fprintf(stderr, "  round-robin: %s ...\n",
				tn_config_names[c]);
		}
		if (tn_measure((enum tn_config)c, &p, false, &rr[c])) {
			failed = true;
			continue;
		}
		if (rr[c].above_max)
			max_ok = false;	/* the rows, then exit status 1 */
		for (t = 0; t < TN_NR_TENANTS; t++)
			if (json)
				tn_json_row((enum tn_config)c, tr[t].name,
					    tn_traces[t].protect, &rr[c].t[t]);
		if (json) {
			struct tn_tenant_result all;

			tn_sum(&rr[c], &all);
			all.max = p.budget;
			tn_json_row((enum tn_config)c, "all", false, &all);
		} else {
			tn_print_config((enum tn_config)c, &p, &rr[c]);
		}
	}

	if (!failed)
		tn_targets(json, rr, tn_protected(), max_ok);
	failed |= !max_ok;

	if (threads && !failed) {
		struct bench_figure fig[TN_NR_CONFIGS];
		struct tn_threads_arg ta = { .p = &p, .prot = tn_protected() };
		unsigned reps = shortrun ? 1 : TN_THREAD_RUNS, redone = 0;

		bench_warn_threads(TN_NR_TENANTS);
		if (!json) {
			fflush(stdout);
			fprintf(stderr, "  threads: %u run%s of each configuration, alternating ...",
				reps, bench_plural(reps));
		}
		if (bench_median_of_runs(TN_NR_CONFIGS, TN_NR_V, reps,
					 shortrun ? 1 : BENCH_TRIES,
					 tn_threads_sample, &ta, tn_config_names,
					 fig, &redone)) {
			failed = true;
		} else {
			if (!json)
				bench_progress_end(redone);
			for (c = 0; c < TN_NR_CONFIGS; c++)
				tn_threads_row(json, (enum tn_config)c, reps,
					       &tr[ta.prot], &fig[c]);
		}
	}
	for (t = 0; t < TN_NR_TENANTS; t++)
		trace_free(&tr[t].t);
	return failed ? 1 : 0;
fail:
	for (t = 0; t < TN_NR_TENANTS; t++)
		trace_free(&tr[t].t);
	return 1;
}
