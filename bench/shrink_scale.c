/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench shrink-scale: the throughput of rcl_shrinker_registry_shrink()
 * on one registry of 64 shrinkers, called by T threads at once.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reclaim/reclaim.h>

#include "commands.h"
#include "harness.h"

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
/* Runs disturbed by other load: see BENCH_OTHER_MAX and BENCH_TRIES. */
_Static_assert(SS_REPS <= BENCH_MAX_REPS, "bench_median_of_runs() takes SS_REPS");

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
	uint64_t calls;		/* > 0: each thread makes exactly this many */
	unsigned nthreads;
	struct ss_worker *w;
	_Alignas(64) struct bench_barrier go;	/* the workers */
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
	bench_barrier_wait(&r->go);
	t0 = bench_now_ns();
	deadline = t0 + r->run_ns;
	if (r->calls) {
		/* Deterministic: no clock in the loop (for callgrind). */
		while (ops < r->calls) {
			ret = rcl_shrinker_registry_shrink(r->reg, 0, SS_PRIORITY,
							   RCL_CTX_CAPABLE,
							   &w->res);
			if (ret)
				break;
			ops++;
		}
		t1 = bench_now_ns();
		w->ops = ops;
		w->ns = t1 - t0;
		w->err = ret;
		return NULL;
	}
	do {
		ret = rcl_shrinker_registry_shrink(r->reg, 0, SS_PRIORITY,
						   RCL_CTX_CAPABLE, &w->res);
		if (ret)
			break;
		ops++;
		t1 = bench_now_ns();
	} while (t1 < deadline);
	t1 = bench_now_ns();
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

/*
 * One measurement with @nthreads threads: for @run_ms each, or, if @calls
 * is not 0, exactly @calls calls each.  Returns 0 or -1.
 */
static int ss_measure(unsigned nthreads, unsigned run_ms, uint64_t calls,
		      struct ss_result *res)
{
	struct ss_run *r;
	struct bench_cpu_snap snap0, snap1;
	uint64_t ops = 0, max_ns = 0;
	double sum_nspo = 0.0;
	unsigned i, t;
	int ret, err = 0;

	r = bench_zalloc64(sizeof(*r));
	if (!r)
		goto nomem;
	r->nthreads = nthreads;
	r->run_ns = (uint64_t)run_ms * 1000000u;
	r->calls = calls;
	r->w = bench_zalloc64(nthreads * sizeof(*r->w));
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

	bench_barrier_init(&r->go, nthreads);
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
	bench_cpu_snapshot(&snap0);
	for (t = 0; t < nthreads; t++)
		pthread_join(r->w[t].tid, NULL);
	bench_cpu_snapshot(&snap1);
	res->other = bench_cpu_other(&snap0, &snap1);
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

/* What each run of ss_figure() measures. */
struct ss_figure_arg {
	unsigned nthreads;
	unsigned run_ms;
};

/* One run, for bench_median_of_runs(): v[0] ops/s, v[1] ns/op. */
static int ss_sample(void *arg, unsigned impl, struct bench_sample *out)
{
	const struct ss_figure_arg *a = arg;
	struct ss_result one;

	(void)impl;
	if (ss_measure(a->nthreads, a->run_ms, 0, &one))
		return -1;
	out->v[0] = one.ops_per_s;
	out->v[1] = one.ns_per_op;
	out->other = one.other;
	return 0;
}

/*
 * The figure of @nthreads: the median of @reps runs undisturbed by other
 * load, repeating disturbed runs up to @tries times @reps runs in all (as
 * hotpath's, with bench_median_of_runs()).  Returns 0 or -1.
 */
static int ss_figure(unsigned nthreads, unsigned run_ms, unsigned reps,
		     unsigned tries, struct ss_result *out, unsigned *redone)
{
	struct ss_figure_arg arg = { nthreads, run_ms };
	struct bench_figure fig;
	char label[64];
	const char *labels[1] = { label };

	snprintf(label, sizeof(label), "shrink-scale threads=%u", nthreads);
	if (bench_median_of_runs(1, 2, reps, tries, ss_sample, &arg, labels,
				 &fig, redone))
		return -1;
	out->ops_per_s = fig.v[0];
	out->ns_per_op = fig.v[1];
	out->disturbed = fig.disturbed;
	return 0;
}

int cmd_shrink_scale(int argc, char **argv)
{
	unsigned max_threads = 2, run_ms = SS_RUN_MS, reps = SS_REPS;
	unsigned tries = BENCH_TRIES, t, disturbed = 0, calls = 0;
	bool json = false, shortrun = false;
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_FLAG("--short", &shortrun),
		BENCH_OPT_UINT("--threads", &max_threads, 1, SS_MAX_THREADS),
		BENCH_OPT_UINT("--calls", &calls, 1, 100000000),
		BENCH_OPT_END,
	};
	struct ss_result *res;
	long ncpu;
	int ret;

	ret = bench_parse_opts(argc, argv, opts);
	if (ret != BENCH_CONTINUE)
		return ret;
	if (shortrun) {
		run_ms = SS_SHORT_RUN_MS;
		reps = SS_SHORT_REPS;
		tries = 1;
	}

	if (calls) {
		/*
		 * One run of exactly @calls calls per thread, checked as
		 * always, with --threads threads only: a fixed amount of work,
		 * for instruction counts (tools/count-locked.py), not timing.
		 */
		struct ss_result one;

		if (ss_measure(max_threads, 0, calls, &one))
			return 1;
		printf("shrink-scale: %u thread%s x %u calls of %u shrinkers: checked\n",
		       max_threads, max_threads == 1 ? "" : "s", calls,
		       SS_NR_SHRINKERS);
		return 0;
	}

	ncpu = bench_warn_threads(max_threads);

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
		bench_progress_end(redone);
	}

	if (json) {
		for (t = 1; t <= max_threads; t++) {
			bench_json_begin("shrink-scale");
			bench_json_uint("threads", t);
			bench_json_dbl("ops_per_s", 1, res[t - 1].ops_per_s);
			bench_json_end();
		}
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
}

