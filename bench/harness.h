/* SPDX-License-Identifier: MIT */
/*
 * DOC: the rcl-bench harness
 *
 * What every benchmark of rcl-bench needs and writes only once: option
 * parsing, a monotonic clock, the CPU time other processes took during a
 * run (to repeat disturbed runs), medians and latency histograms, JSON
 * lines, and the small concurrency helpers the workloads share (a spinning
 * barrier, a deterministic random sequence, striped locks), and the
 * mutex-lru baseline's list (hotpath, objcache).
 *
 * A benchmark is one file, bench/NAME.c, that exports cmd_NAME() (declared
 * in bench/commands.h) and uses these calls:
 *
 *	static int cmd_example(int argc, char **argv)
 *	{
 *		bool json = false, shortrun = false;
 *		unsigned threads = 2;
 *		const struct bench_opt opts[] = {
 *			BENCH_OPT_FLAG("--json", &json),
 *			BENCH_OPT_FLAG("--short", &shortrun),
 *			BENCH_OPT_UINT("--threads", &threads, 1, 256),
 *			BENCH_OPT_END,
 *		};
 *		int ret = bench_parse_opts(argc, argv, opts);
 *
 *		if (ret != BENCH_CONTINUE)
 *			return ret;	// 0 after --help, 2 for bad usage
 *		...
 *		bench_json_begin("example");
 *		bench_json_uint("threads", t);
 *		bench_json_dbl("ops_per_s", 1, ops);
 *		bench_json_end();
 *	}
 *
 * Everything here is for the benchmark's own threads; nothing is
 * thread-safe unless it says so (bench_now_ns(), bench_rng_next() on a
 * state of its own, the barrier, the stripes are).  The hot helpers (the
 * clock, the random sequence, the histogram index, cpu_relax) are static
 * inline, so that the timed loops compile as they did when every benchmark
 * had its own copy.
 */
#ifndef RCL_BENCH_HARNESS_H
#define RCL_BENCH_HARNESS_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* ------------------------------------------------------------------------- */
/* Shared parameters                                                          */
/* ------------------------------------------------------------------------- */

/*
 * Other load on the machine: a run during which other processes (or the
 * hypervisor: steal time) used more than BENCH_OTHER_MAX of the CPU time
 * available is repeated, up to BENCH_TRIES times as many runs as wanted in
 * all (bench_median_of_runs(), bench_retry_again()).
 */
#define BENCH_OTHER_MAX 0.10
#define BENCH_TRIES 3u

/*
 * The upper bound of --watermark-scale-factor (stream, writeback): the
 * domain's watermark_scale_factor, with which high stays below the budget.
 */
#define BENCH_MAX_SCALE 4000u

/* "s" unless @n is 1: "%u run%s". */
static inline const char *bench_plural(unsigned long long n)
{
	return n == 1 ? "" : "s";
}

/* ------------------------------------------------------------------------- */
/* Options and usage                                                          */
/* ------------------------------------------------------------------------- */

/*
 * The usage text of every command, on @f.  Defined in rcl-bench.c, next to
 * the command table that holds each command's part of it.
 */
void bench_usage(FILE *f);

enum bench_opt_kind {
	BENCH_OPT_KIND_END,
	BENCH_OPT_KIND_FLAG,	/* NAME: *flag = true */
	BENCH_OPT_KIND_UINT,	/* NAME N or NAME=N, min <= N <= max */
	BENCH_OPT_KIND_CHOICE,	/* NAME WORD (one of choices; no NAME=WORD) */
	BENCH_OPT_KIND_DBL,	/* NAME X or NAME=X, dmin <= X <= dmax */
};

/* One option of a command, in a table ended by BENCH_OPT_END. */
struct bench_opt {
	const char *name;
	enum bench_opt_kind kind;
	bool *flag;			/* FLAG */
	unsigned *val;			/* UINT: N; CHOICE: the word's index */
	unsigned min, max;		/* UINT */
	const char *const *choices;	/* CHOICE: NULL-terminated */
	double *dval;			/* DBL */
	double dmin, dmax;		/* DBL */
};

#define BENCH_OPT_FLAG(n, p) { .name = (n), .kind = BENCH_OPT_KIND_FLAG, .flag = (p) }
#define BENCH_OPT_UINT(n, p, lo, hi)                                          \
	{ .name = (n), .kind = BENCH_OPT_KIND_UINT, .val = (p), .min = (lo),  \
	  .max = (hi) }
#define BENCH_OPT_CHOICE(n, p, words)                                         \
	{ .name = (n), .kind = BENCH_OPT_KIND_CHOICE, .val = (p),             \
	  .choices = (words) }
#define BENCH_OPT_DBL(n, p, lo, hi)                                           \
	{ .name = (n), .kind = BENCH_OPT_KIND_DBL, .dval = (p), .dmin = (lo), \
	  .dmax = (hi) }
#define BENCH_OPT_END { .name = NULL, .kind = BENCH_OPT_KIND_END }

/* bench_parse_opts(): every option was good, run the benchmark. */
#define BENCH_CONTINUE (-1)

/*
 * Parse argv[1..argc-1] (argv[0] is the command's name) against @opts, in
 * order.  -h and --help print the usage on standard output and return 0;
 * an unknown word, or an option whose value is missing or out of range,
 * prints it on standard error and returns 2; otherwise BENCH_CONTINUE.
 * The command returns what this returns, unless it is BENCH_CONTINUE.
 */
int bench_parse_opts(int argc, char **argv, const struct bench_opt *opts);

/*
 * A numeric option, as "NAME N" or "NAME=N", at argv[*i].  Returns 0 if
 * argv[*i] is not that option, 1 if it is and its value is in [min, max]
 * (*i then points at the last word used), -1 if its value is missing or bad.
 * For a command whose options do not fit bench_parse_opts().
 */
int bench_opt_uint(int argc, char **argv, int *i, const char *name,
		   unsigned min, unsigned max, unsigned *out);

/*
 * More threads than online CPUs measure the scheduler: warn on standard
 * error if @max_threads is more.  Returns the number of online CPUs
 * (sysconf(), so -1 if unknown).
 */
long bench_warn_threads(unsigned max_threads);

/* ------------------------------------------------------------------------- */
/* Time and memory                                                            */
/* ------------------------------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds.  Any thread. */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* @a - @b, or 0 if @b is larger: the change of a counter over a run. */
static inline uint64_t bench_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Zeroed memory aligned for @size bytes of a type with 64-byte alignment. */
void *bench_zalloc64(size_t size);

/* ------------------------------------------------------------------------- */
/* Other load: CPU time others used during a run                              */
/* ------------------------------------------------------------------------- */

/*
 * CPU time used on the whole machine (from /proc/stat, including steal time)
 * and by this process, to tell how much of a run's CPU time others took.
 */
struct bench_cpu_snap {
	bool ok;
	uint64_t busy_ticks;	/* all CPUs, in clock ticks */
	uint64_t self_us;	/* this process, microseconds */
	uint64_t wall_ns;
};

void bench_cpu_snapshot(struct bench_cpu_snap *s);

/* The share of the CPU time between @a and @b that other processes used. */
double bench_cpu_other(const struct bench_cpu_snap *a,
		       const struct bench_cpu_snap *b);

/* ------------------------------------------------------------------------- */
/* Disturbed runs: repeated                                                   */
/* ------------------------------------------------------------------------- */

#define BENCH_MAX_IMPLS 4u	/* implementations measured in alternation */
#define BENCH_MAX_VALUES 4u	/* figures one run gives */
#define BENCH_MAX_REPS 5u	/* runs a median is taken of */

/* What one run measured: its figures, and the CPU time others used. */
struct bench_sample {
	double v[BENCH_MAX_VALUES];
	double other;		/* bench_cpu_other() over the run */
};

/* A figure: the medians of each value, and whether too few runs were clean. */
struct bench_figure {
	double v[BENCH_MAX_VALUES];
	bool disturbed;
};

/* One run of implementation @impl.  Returns 0, or -1 to give up. */
typedef int bench_sample_fn(void *arg, unsigned impl,
			    struct bench_sample *out);

/*
 * The median of @reps runs undisturbed by other load (other <=
 * BENCH_OTHER_MAX) of each of @nimpls implementations, alternating the
 * implementations run by run, of each of the first @nvalues values.  Runs
 * disturbed are repeated (counted in *@redone, if @tries > 1), up to
 * @tries times @reps runs of each; if too few are clean, the median of what
 * there is, with a warning naming @labels[impl] on standard error, and
 * out[impl].disturbed.  @reps is at most BENCH_MAX_REPS and @tries at most
 * BENCH_TRIES (larger values are cut).  @out has @nimpls entries.  Returns
 * 0, or -1 if a run failed.
 */
int bench_median_of_runs(unsigned nimpls, unsigned nvalues, unsigned reps,
			 unsigned tries, bench_sample_fn *run, void *arg,
			 const char *const *labels, struct bench_figure *out,
			 unsigned *redone);

/*
 * One measurement, made again (up to @tries in all) while others used more
 * than BENCH_OTHER_MAX of the CPU time; the last one stands:
 *
 *	struct bench_retry rt = BENCH_RETRY_INIT(BENCH_TRIES, check_other);
 *
 *	do {
 *		if (measure(&res))
 *			return 1;
 *	} while (bench_retry_again(&rt, name, 15, res.other));
 *	res.disturbed = rt.disturbed;
 *
 * Without check_other (runs too short for /proc/stat's ticks) one
 * measurement.
 */
struct bench_retry {
	unsigned tries;		/* measurements at most */
	bool check_other;
	unsigned done;		/* disturbed measurements so far */
	bool disturbed;		/* the last one was disturbed, too */
};

#define BENCH_RETRY_INIT(tries_, check_other_)                                \
	{ .tries = (tries_), .check_other = (check_other_), .done = 0,        \
	  .disturbed = false }

/*
 * After a measurement that others took @other of the CPU time of: true to
 * measure again.  A disturbed one is said on standard error ("  NAME
 * disturbed: ...", @name padded to @width).
 */
bool bench_retry_again(struct bench_retry *rt, const char *name, int width,
		       double other);

/*
 * The warning after the runs if @n measurements were disturbed: "@n @what
 * was/were @verb while other processes used more than 10% ...".
 */
void bench_warn_disturbed(unsigned n, const char *what, const char *verb);

/* The end of a progress line: " (N disturbed runs repeated)" if any, \n. */
void bench_progress_end(unsigned redone);

/* ------------------------------------------------------------------------- */
/* Statistics                                                                 */
/* ------------------------------------------------------------------------- */

/* The median of @n values (n > 0); sorts @v. */
double bench_median(double *v, size_t n);

/*
 * A latency histogram: 32 linear sub-buckets per power of two, so that a
 * quantile is within about 3% of the sample's value.  An array of
 * BENCH_HIST_BUCKETS counters, indexed by bench_hist_idx(sample).
 */
#define BENCH_HIST_SUB_BITS 5u
#define BENCH_HIST_SUB (1u << BENCH_HIST_SUB_BITS)
#define BENCH_HIST_BUCKETS ((64u - BENCH_HIST_SUB_BITS + 1u) * BENCH_HIST_SUB)

static inline unsigned bench_hist_idx(uint64_t v)
{
	unsigned e;

	if (v < BENCH_HIST_SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);	/* >= BENCH_HIST_SUB_BITS */
	return (e - BENCH_HIST_SUB_BITS + 1u) * BENCH_HIST_SUB +
	       (unsigned)((v >> (e - BENCH_HIST_SUB_BITS)) &
			  (BENCH_HIST_SUB - 1u));
}

/* The middle of bucket @i, in the unit of the samples. */
double bench_hist_value(unsigned i);

/* The @q quantile (0 < q <= 1) of @n samples, or 0 without samples. */
double bench_hist_quantile(const uint64_t *h, uint64_t n, double q);

/* ------------------------------------------------------------------------- */
/* JSON lines                                                                 */
/* ------------------------------------------------------------------------- */

/*
 * One object per line on standard output, with its fields in the order of
 * the calls: bench_json_begin("NAME") writes {"bench":"NAME", each field
 * call ,"key":value, and bench_json_end() the closing } and the newline.
 */
void bench_json_begin(const char *bench);
void bench_json_str(const char *key, const char *v);
void bench_json_uint(const char *key, unsigned long long v);
void bench_json_int(const char *key, long long v);
/* @prec digits after the point, as printf's %.*f. */
void bench_json_dbl(const char *key, int prec, double v);
void bench_json_end(void);

/* ------------------------------------------------------------------------- */
/* Concurrency helpers                                                        */
/* ------------------------------------------------------------------------- */

static inline void bench_cpu_relax(void)
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
struct bench_barrier {
	atomic_uint count;
	atomic_uint gen;
	unsigned n;
};

void bench_barrier_init(struct bench_barrier *b, unsigned n);

/* Returns true in exactly one thread, like PTHREAD_BARRIER_SERIAL_THREAD. */
bool bench_barrier_wait(struct bench_barrier *b);

/* xorshift64*: a deterministic sequence (shuffles, random keys). */
static inline uint64_t bench_rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* A 64-bit finaliser (splitmix64's): a key's hash, a seed from an index. */
static inline uint64_t bench_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * Zipf(s) over ranks 1..n by rejection-inversion (Hoermann and Derflinger
 * 1996, as in Apache Commons RNG): O(1) per draw, no table, a few log/exp.
 * bench_zipf_next() returns rank r as key r - 1, from the caller's
 * bench_rng_next() state.  The state is read-only after bench_zipf_init():
 * threads share one.  (objcache's, and pressure's.)
 */
struct bench_zipf {
	double s;		/* the exponent, alpha */
	double n;
	double h_x1;		/* hIntegral(1.5) - 1 */
	double h_n;		/* hIntegral(n + 0.5) */
	double acc;		/* the acceptance shortcut */
};

void bench_zipf_init(struct bench_zipf *z, uint64_t n, double s);

static inline double bench__zipf_helper1(double x)	/* log1p(x) / x */
{
	return fabs(x) > 1e-8 ? log1p(x) / x
			      : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}

static inline double bench__zipf_helper2(double x)	/* expm1(x) / x */
{
	return fabs(x) > 1e-8 ? expm1(x) / x
			      : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}

static inline double bench__zipf_hint(const struct bench_zipf *z, double x)
{
	double lx = log(x);

	return bench__zipf_helper2((1.0 - z->s) * lx) * lx;
}

static inline double bench__zipf_h(const struct bench_zipf *z, double x)
{
	return exp(-z->s * log(x));
}

static inline double bench__zipf_hint_inv(const struct bench_zipf *z, double x)
{
	double t = x * (1.0 - z->s);

	if (t < -1.0)
		t = -1.0;
	return exp(bench__zipf_helper1(t) * x);
}

static inline uint64_t bench_zipf_next(const struct bench_zipf *z, uint64_t *rng)
{
	for (;;) {
		double u01 = (double)(bench_rng_next(rng) >> 11) * 0x1p-53;
		double u = z->h_n + u01 * (z->h_x1 - z->h_n);
		double x = bench__zipf_hint_inv(z, u);
		double k = floor(x + 0.5);

		if (k < 1.0)
			k = 1.0;
		else if (k > z->n)
			k = z->n;
		if (k - x <= z->acc ||
		    u >= bench__zipf_hint(z, k + 0.5) - bench__zipf_h(z, k))
			return (uint64_t)k - 1;
	}
}

/*
 * Striped locks of a cache's index (key & (n - 1) picks the stripe), each
 * on a cache line of its own.  @n is a power of two.  NULL if out of memory.
 */
struct bench_stripe {
	_Alignas(64) pthread_mutex_t lock;
};

struct bench_stripe *bench_stripes_new(unsigned n);

/* Destroys the @n locks and frees them; NULL is a no-op. */
void bench_stripes_free(struct bench_stripe *s, unsigned n);

/* ------------------------------------------------------------------------- */
/* The mutex-lru baseline: a move-to-front list behind one mutex              */
/* ------------------------------------------------------------------------- */

/*
 * What users write by hand: a doubly linked list, most recent first, behind
 * one pthread_mutex_t (the caller takes @lock around every call below).
 * hotpath uses the list alone; objcache puts a hash map behind the same
 * lock.  Static inline, as they were in hotpath.c.
 */
struct ml_node {
	struct ml_node *prev;
	struct ml_node *next;
};

struct mutex_lru {
	pthread_mutex_t lock;
	struct ml_node head;	/* next: the most recent; prev: the tail */
	size_t nr;
};

static inline int ml_init(struct mutex_lru *l)
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

/* The least recent node, or NULL if the list is empty. */
static inline struct ml_node *ml_tail(struct mutex_lru *l)
{
	return l->head.prev == &l->head ? NULL : l->head.prev;
}

#endif /* RCL_BENCH_HARNESS_H */
