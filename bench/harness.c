/* SPDX-License-Identifier: MIT */
/*
 * The rcl-bench harness: what the benchmarks share (see harness.h).
 *
 * Everything here was once written out in each benchmark; where two copies
 * differed only in a name or a width, that is a parameter now, so every
 * benchmark prints and measures what it did before.
 */
#include "harness.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ------------------------------------------------------------------------- */
/* Options                                                                    */
/* ------------------------------------------------------------------------- */

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

int bench_opt_uint(int argc, char **argv, int *i, const char *name,
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

static bool parse_dbl(const char *s, double min, double max, double *out)
{
	double v;
	char *end;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min) || !(v <= max))
		return false;
	*out = v;
	return true;
}

/* NAME X or NAME=X at argv[*i]: as bench_opt_uint(), for a real number. */
static int opt_dbl(int argc, char **argv, int *i, const struct bench_opt *o)
{
	const char *a = argv[*i];
	size_t len = strlen(o->name);

	if (strncmp(a, o->name, len))
		return 0;
	if (!a[len]) {
		if (*i + 1 >= argc)
			return -1;
		return parse_dbl(argv[++*i], o->dmin, o->dmax, o->dval) ? 1 : -1;
	}
	if (a[len] != '=')
		return 0;
	return parse_dbl(a + len + 1, o->dmin, o->dmax, o->dval) ? 1 : -1;
}

/* NAME WORD, WORD one of @o->choices: 1, or -1 if WORD is another word. */
static int opt_choice(const struct bench_opt *o, const char *word)
{
	unsigned k;

	for (k = 0; o->choices[k]; k++) {
		if (!strcmp(word, o->choices[k])) {
			*o->val = k;
			return 1;
		}
	}
	return -1;
}

/* One option at argv[*i]: 0 if it is not @o, 1 if it is, -1 if bad. */
static int parse_one(int argc, char **argv, int *i, const struct bench_opt *o)
{
	const char *a = argv[*i];

	switch (o->kind) {
	case BENCH_OPT_KIND_FLAG:
		if (strcmp(a, o->name))
			return 0;
		*o->flag = true;
		return 1;
	case BENCH_OPT_KIND_UINT:
		return bench_opt_uint(argc, argv, i, o->name, o->min, o->max,
				      o->val);
	case BENCH_OPT_KIND_CHOICE:
		/* Without its word it is no option of this command. */
		if (strcmp(a, o->name) || *i + 1 >= argc)
			return 0;
		return opt_choice(o, argv[++*i]);
	case BENCH_OPT_KIND_DBL:
		return opt_dbl(argc, argv, i, o);
	case BENCH_OPT_KIND_END:
		break;
	}
	return 0;
}

int bench_parse_opts(int argc, char **argv, const struct bench_opt *opts)
{
	int i;

	for (i = 1; i < argc; i++) {
		const struct bench_opt *o;
		int r = 0;

		for (o = opts; o->kind != BENCH_OPT_KIND_END && !r; o++)
			r = parse_one(argc, argv, &i, o);
		if (r > 0)
			continue;
		if (!r && (!strcmp(argv[i], "-h") ||
			   !strcmp(argv[i], "--help"))) {
			bench_usage(stdout);
			return 0;
		}
		bench_usage(stderr);
		return 2;
	}
	return BENCH_CONTINUE;
}

long bench_warn_threads(unsigned max_threads)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (ncpu > 0 && max_threads > (unsigned long)ncpu)
		fprintf(stderr, "rcl-bench: warning: %u threads on %ld online CPUs: the figures for more threads than CPUs measure the scheduler\n",
			max_threads, ncpu);
	return ncpu;
}

/* ------------------------------------------------------------------------- */
/* Memory                                                                     */
/* ------------------------------------------------------------------------- */

void *bench_zalloc64(size_t size)
{
	void *p;

	size = (size + 63) / 64 * 64;
	p = aligned_alloc(64, size);
	if (p)
		memset(p, 0, size);
	return p;
}

/* ------------------------------------------------------------------------- */
/* Other load                                                                 */
/* ------------------------------------------------------------------------- */

void bench_cpu_snapshot(struct bench_cpu_snap *s)
{
	unsigned long long v[8] = { 0 };
	struct rusage ru;
	FILE *f;

	s->ok = false;
	s->wall_ns = bench_now_ns();
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

double bench_cpu_other(const struct bench_cpu_snap *a,
		       const struct bench_cpu_snap *b)
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

/* ------------------------------------------------------------------------- */
/* Disturbed runs                                                             */
/* ------------------------------------------------------------------------- */

/*
 * Was hp_figure() (hotpath, two implementations) and ss_figure()
 * (shrink-scale, one): for one implementation the loop below makes the
 * same runs as ss_figure()'s "while (clean < reps && all < reps * tries)".
 */
int bench_median_of_runs(unsigned nimpls, unsigned nvalues, unsigned reps,
			 unsigned tries, bench_sample_fn *run, void *arg,
			 const char *const *labels, struct bench_figure *out,
			 unsigned *redone)
{
	enum { MAX_RUNS = BENCH_MAX_REPS * BENCH_TRIES };
	double clean_v[BENCH_MAX_IMPLS][BENCH_MAX_VALUES][MAX_RUNS];
	double all_v[BENCH_MAX_IMPLS][BENCH_MAX_VALUES][MAX_RUNS];
	unsigned clean[BENCH_MAX_IMPLS] = { 0 }, all[BENCH_MAX_IMPLS] = { 0 };
	unsigned impl, attempt, k;

	if (nimpls > BENCH_MAX_IMPLS || nvalues > BENCH_MAX_VALUES)
		abort();	/* a benchmark's bug */
	if (reps > BENCH_MAX_REPS)
		reps = BENCH_MAX_REPS;
	if (tries > BENCH_TRIES)
		tries = BENCH_TRIES;
	for (attempt = 0; attempt < reps * tries; attempt++) {
		bool more = false;

		for (impl = 0; impl < nimpls; impl++) {
			struct bench_sample one = { { 0 }, 0.0 };

			if (clean[impl] >= reps)
				continue;
			more = true;
			if (run(arg, impl, &one))
				return -1;
			for (k = 0; k < nvalues; k++)
				all_v[impl][k][all[impl]] = one.v[k];
			all[impl]++;
			if (one.other <= BENCH_OTHER_MAX) {
				for (k = 0; k < nvalues; k++)
					clean_v[impl][k][clean[impl]] = one.v[k];
				clean[impl]++;
			} else if (tries > 1) {
				(*redone)++;
			}
		}
		if (!more)
			break;
	}
	for (impl = 0; impl < nimpls; impl++) {
		out[impl].disturbed = clean[impl] < reps && tries > 1;
		if (out[impl].disturbed)
			fprintf(stderr, "rcl-bench: warning: %s: %u of %u runs undisturbed by other load; the figure is less reliable\n",
				labels[impl], clean[impl], all[impl]);
		for (k = 0; k < BENCH_MAX_VALUES; k++)
			out[impl].v[k] = 0.0;
		for (k = 0; k < nvalues; k++) {
			if (clean[impl])
				out[impl].v[k] = bench_median(clean_v[impl][k],
							      clean[impl]);
			else
				out[impl].v[k] = bench_median(all_v[impl][k],
							      all[impl]);
		}
	}
	return 0;
}

/* Was the loop of stream's and writeback's main, each over its own modes. */
bool bench_retry_again(struct bench_retry *rt, const char *name, int width,
		       double other)
{
	rt->disturbed = false;
	if (!rt->check_other || other <= BENCH_OTHER_MAX)
		return false;
	rt->done++;
	fprintf(stderr, "  %-*s disturbed: others used %.0f%% of the CPU time%s\n",
		width, name, other * 100.0,
		rt->done < rt->tries ? "; repeating" : "");
	rt->disturbed = true;
	return rt->done < rt->tries;
}

void bench_warn_disturbed(unsigned n, const char *what, const char *verb)
{
	if (n)
		fprintf(stderr, "rcl-bench: warning: %u %s%s %s while other processes used more than %.0f%% of the CPU time\n",
			n, what, n == 1 ? " was" : "s were", verb,
			BENCH_OTHER_MAX * 100.0);
}

void bench_progress_end(unsigned redone)
{
	if (redone)
		fprintf(stderr, " (%u disturbed run%s repeated)", redone,
			bench_plural(redone));
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------------- */
/* Statistics                                                                 */
/* ------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double bench_hist_value(unsigned i)
{
	unsigned e, sub;
	double low, width;

	if (i < BENCH_HIST_SUB)
		return (double)i;
	e = i / BENCH_HIST_SUB + BENCH_HIST_SUB_BITS - 1u;
	sub = i % BENCH_HIST_SUB;
	low = (double)((uint64_t)(BENCH_HIST_SUB + sub)
		       << (e - BENCH_HIST_SUB_BITS));
	width = (double)(1ull << (e - BENCH_HIST_SUB_BITS));
	return low + width / 2.0;
}

double bench_hist_quantile(const uint64_t *h, uint64_t n, double q)
{
	uint64_t rank = (uint64_t)(q * (double)n + 0.999999), sum = 0;
	unsigned i;

	if (!n)
		return 0.0;
	if (rank < 1)
		rank = 1;
	for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
		sum += h[i];
		if (sum >= rank)
			return bench_hist_value(i);
	}
	return bench_hist_value(BENCH_HIST_BUCKETS - 1u);
}

void bench_zipf_init(struct bench_zipf *z, uint64_t n, double s)
{
	z->s = s;
	z->n = (double)n;
	z->h_x1 = bench__zipf_hint(z, 1.5) - 1.0;
	z->h_n = bench__zipf_hint(z, z->n + 0.5);
	z->acc = 2.0 - bench__zipf_hint_inv(z, bench__zipf_hint(z, 2.5) -
						  bench__zipf_h(z, 2.0));
}

/* ------------------------------------------------------------------------- */
/* JSON lines                                                                 */
/* ------------------------------------------------------------------------- */

/* A JSON string: the benchmarks' names and keys need no escapes, but... */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_key(const char *key)
{
	putchar(',');
	json_string(key);
	putchar(':');
}

void bench_json_begin(const char *bench)
{
	fputs("{\"bench\":", stdout);
	json_string(bench);
}

void bench_json_str(const char *key, const char *v)
{
	json_key(key);
	json_string(v);
}

void bench_json_uint(const char *key, unsigned long long v)
{
	json_key(key);
	printf("%llu", v);
}

void bench_json_int(const char *key, long long v)
{
	json_key(key);
	printf("%lld", v);
}

void bench_json_dbl(const char *key, int prec, double v)
{
	json_key(key);
	printf("%.*f", prec, v);
}

void bench_json_end(void)
{
	fputs("}\n", stdout);
}

/* ------------------------------------------------------------------------- */
/* Concurrency helpers                                                        */
/* ------------------------------------------------------------------------- */

void bench_barrier_init(struct bench_barrier *b, unsigned n)
{
	atomic_init(&b->count, 0);
	atomic_init(&b->gen, 0);
	b->n = n;
}

bool bench_barrier_wait(struct bench_barrier *b)
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
			bench_cpu_relax();
		else
			sched_yield();
	}
	return false;
}

struct bench_stripe *bench_stripes_new(unsigned n)
{
	struct bench_stripe *s = aligned_alloc(64, n * sizeof(*s));
	unsigned i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		pthread_mutex_init(&s[i].lock, NULL);
	return s;
}

void bench_stripes_free(struct bench_stripe *s, unsigned n)
{
	unsigned i;

	if (!s)
		return;
	for (i = 0; i < n; i++)
		pthread_mutex_destroy(&s[i].lock);
	free(s);
}
