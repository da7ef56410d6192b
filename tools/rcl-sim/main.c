/* SPDX-License-Identifier: MIT */
/*
 * rcl-sim - replay a cache-access trace through caches built on libreclaim
 * (and exact baselines) and print miss ratios.
 *
 * usage: rcl-sim [options] TRACE|-
 *
 * The trace is decoded once (trace.c), into memory, and renumbered by first
 * appearance; then every (policy, capacity) pair replays it, on --jobs
 * threads.  Results are printed in the order of the capacities given, then
 * of the policies given, whatever the order in which the runs finish.
 *
 * Exit status: 0 success, 1 failure (unreadable trace, a policy failed, an
 * output file could not be written), 2 bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <reclaim/version.h>

#include "policies.h"
#include "trace.h"

extern char **environ;

#define DEFAULT_CAPACITIES "1%,5%,10%,25%"
#define DEFAULT_POLICIES "default"
#define MRC_DEFAULT_POINTS 24

/* ------------------------------------------------------------------------- */
/* Options                                                                    */
/* ------------------------------------------------------------------------- */

/*
 * A capacity: in objects (object mode: every object counts 1) or in bytes
 * (byte mode: every object is charged its size).  A percentage is of the
 * trace's unique keys (N%) or of its unique bytes (N%b).
 */
struct capacity_spec {
	uint64_t objects;	/* resolved capacity, in objects or bytes */
	double pct;		/* < 0: given as an absolute count */
	bool bytes;		/* byte mode */
};

struct options {
	const char *path;
	struct trace_options topt;
	const struct sim_policy **policies;
	size_t nr_policies;
	const char *capacities;	/* NULL: the default (or the MRC range) */
	bool sized;		/* the trace's format has sizes */
	bool json;
	bool quiet;
	unsigned jobs;
	const char *mrc;	/* CSV path, or NULL */
	unsigned mrc_points;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: rcl-sim [options] TRACE|-\n"
"\n"
"Replay a trace through caches and print their miss ratios.\n"
"\n"
"  -p, --policy P[,P...]    policies to compare (default: " DEFAULT_POLICIES ");\n"
"                           --list-policies lists them, 'all' means every\n"
"                           one; names are matched without regard to case\n"
"  -f, --format F           trace format (default: keys); --list-formats\n"
"  -c, --capacity C[,C...]  capacities: objects (5000) or percentages of the\n"
"                           trace's unique keys (1%%,5%%); a percentage is\n"
"                           round(pct x unique / 100), at least 2\n"
"                           (default: %s).\n"
"                           For a trace with sizes, also bytes: 64MiB,\n"
"                           1.5GiB, 4096B (B, KiB, MiB, GiB, TiB; KB, MB,\n"
"                           GB, TB are powers of 1000) or a percentage of\n"
"                           its unique bytes (5%%b); every object is then\n"
"                           charged its size\n"
"      --json               one JSON object per (policy, capacity) line on\n"
"                           standard output, nothing else\n"
"      --csv-key-col N      csv: the key is column N (1-based)\n"
"      --csv-header         csv: skip the first line\n"
"      --csv-sep C          csv: field separator (default ',')\n"
"      --csv-size-col N     csv: column N (1-based) is the object's size in\n"
"                           bytes (a trace with sizes)\n"
"      --mrc FILE.csv       miss-ratio curves: write capacity,capacity_pct\n"
"                           and one miss-ratio column per policy; with\n"
"                           gnuplot in PATH, also plot FILE.svg.  Without\n"
"                           --capacity, %u sizes from 0.1%% to 100%% of the\n"
"                           unique keys, evenly spaced on a log scale\n"
"      --mrc-points N       number of sizes for --mrc (default %u)\n"
"  -j, --jobs N             runs in parallel (default: online CPUs)\n"
"  -q, --quiet              no progress messages on standard error\n"
"      --list-policies      list the policies\n"
"      --list-formats       list the trace formats\n"
"  -V, --version            print the version\n"
"  -h, --help               this help\n"
"\n"
"Compressed traces (gzip, bzip2, xz, zstd, lz4; .lzma and .Z by name) are\n"
"read directly; TRACE '-' reads standard input.\n",
		DEFAULT_CAPACITIES, MRC_DEFAULT_POINTS, MRC_DEFAULT_POINTS);
}

/* Policy names are matched without regard to case ("ARC", "wtinyLFU"). */
static const struct sim_policy *find_policy(const char *name, size_t n)
{
	size_t i;

	for (i = 0; sim_policies[i]; i++) {
		if (strlen(sim_policies[i]->name) == n &&
		    strncasecmp(sim_policies[i]->name, name, n) == 0)
			return sim_policies[i];
	}
	return NULL;
}

static int add_policy(struct options *o, const struct sim_policy *p)
{
	const struct sim_policy **np;

	np = realloc(o->policies, (o->nr_policies + 1) * sizeof(*np));
	if (!np) {
		fprintf(stderr, "rcl-sim: out of memory\n");
		return -1;
	}
	o->policies = np;
	o->policies[o->nr_policies++] = p;
	return 0;
}

/* "P[,P...]"; "all" stands for every entry of sim_policies[], in order. */
static int parse_policies(const char *arg, struct options *o)
{
	const char *s = arg;

	free(o->policies);
	o->policies = NULL;
	o->nr_policies = 0;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s);
		const struct sim_policy *p = find_policy(s, n);

		if (!p && n == 3 && strncasecmp(s, "all", 3) == 0) {
			size_t i;

			for (i = 0; sim_policies[i]; i++) {
				if (add_policy(o, sim_policies[i]))
					return -1;
			}
		} else if (!p) {
			fprintf(stderr, "rcl-sim: unknown policy \"%.*s\" "
				"(see --list-policies)\n", (int)n, s);
			return -1;
		} else if (add_policy(o, p)) {
			return -1;
		}
		if (!comma)
			return 0;
		s = comma + 1;
	}
}

static bool parse_uint(const char *s, unsigned long long max,
		       unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

/* The capacity for a percentage: round(pct x unique / 100), at least 2. */
static uint64_t pct_capacity(double pct, uint32_t unique)
{
	double c = floor(pct * (double)unique / 100.0 + 0.5);

	return c < 2 ? 2 : (uint64_t)c;
}

/* The byte capacity for a percentage: round(pct x bytes / 100), >= 1. */
static uint64_t pct_byte_capacity(double pct, uint64_t unique_bytes)
{
	double c = floor(pct * (double)unique_bytes / 100.0 + 0.5);

	if (c >= 18446744073709551615.0)
		return UINT64_MAX;
	return c < 1 ? 1 : (uint64_t)c;
}

/* A positive decimal number (digits, one optional '.'), no sign or exponent. */
static bool parse_decimal(const char *s, size_t n, double *out)
{
	char buf[64], *end;
	size_t i, dots = 0;

	if (n == 0 || n >= sizeof(buf) || s[0] < '0' || s[0] > '9')
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '.')
			dots++;
		else if (s[i] < '0' || s[i] > '9')
			return false;
	}
	if (dots > 1 || s[n - 1] == '.')
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtod(buf, &end);
	return !errno && *end == '\0' && isfinite(*out) && *out > 0;
}

/* The byte units of --capacity, longest first. */
static const struct {
	const char *suffix;
	double mult;
} byte_units[] = {
	{ "KiB", 1024.0 },
	{ "MiB", 1024.0 * 1024 },
	{ "GiB", 1024.0 * 1024 * 1024 },
	{ "TiB", 1024.0 * 1024 * 1024 * 1024 },
	{ "KB", 1e3 },
	{ "MB", 1e6 },
	{ "GB", 1e9 },
	{ "TB", 1e12 },
	{ "B", 1.0 },
};

/*
 * One capacity of --capacity: "5000" (objects), "5%" (of the unique keys),
 * "5%b" (of the unique bytes), or a number with a byte unit ("64MiB",
 * "1.5GiB": rounded to the nearest byte, at least 1).  False if it is none.
 */
static bool parse_capacity(const char *s, size_t len, struct capacity_spec *cs)
{
	double v;
	size_t i;

	memset(cs, 0, sizeof(*cs));
	cs->pct = -1;
	if (len >= 2 && s[len - 2] == '%' && s[len - 1] == 'b') {
		if (!parse_decimal(s, len - 2, &v))
			return false;
		cs->pct = v;
		cs->bytes = true;
		return true;
	}
	if (len >= 1 && s[len - 1] == '%') {
		if (!parse_decimal(s, len - 1, &v))
			return false;
		cs->pct = v;
		return true;
	}
	for (i = 0; i < sizeof(byte_units) / sizeof(byte_units[0]); i++) {
		size_t k = strlen(byte_units[i].suffix);
		double b;

		if (len <= k || memcmp(s + len - k, byte_units[i].suffix, k))
			continue;
		if (!parse_decimal(s, len - k, &v))
			return false;
		b = floor(v * byte_units[i].mult + 0.5);
		if (b < 1 || b >= 18446744073709551615.0)
			return false;
		cs->objects = (uint64_t)b;
		cs->bytes = true;
		return true;
	}
	{
		char buf[32];
		unsigned long long c;

		if (len >= sizeof(buf))
			return false;
		memcpy(buf, s, len);
		buf[len] = '\0';
		if (!parse_uint(buf, UINT64_MAX, &c) || c == 0)
			return false;
		cs->objects = c;
		return true;
	}
}

/*
 * Parse "5000,1%,2.5%,64MiB,5%b" into specs (percentages are resolved
 * later, by resolve_capacities()).  Returns the number of specs (> 0), or 0
 * after a message.
 */
static size_t parse_capacities(const char *arg, struct capacity_spec **out)
{
	struct capacity_spec *v = NULL;
	size_t n = 0;
	const char *s = arg;

	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		struct capacity_spec cs;
		struct capacity_spec *nv;

		if (!parse_capacity(s, len, &cs)) {
			fprintf(stderr, "rcl-sim: bad capacity \"%.*s\" in "
				"\"%s\"\n", (int)len, s, arg);
			goto bad;
		}
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			fprintf(stderr, "rcl-sim: out of memory\n");
			return 0;
		}
		v = nv;
		v[n++] = cs;
		if (!comma)
			break;
		s = comma + 1;
	}
	*out = v;
	return n;
bad:
	fprintf(stderr, "rcl-sim: a capacity is a positive object count "
		"(5000), a positive percentage of the unique keys (5%%), or, "
		"for a trace with sizes, bytes (64MiB, 1.5GiB, 4096B; units B, "
		"KiB, MiB, GiB, TiB, KB, MB, GB, TB) or a percentage of the "
		"unique bytes (5%%b)\n");
	free(v);
	return 0;
}

static void resolve_capacities(struct capacity_spec *v, size_t n,
			       const struct trace *t)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i].pct >= 0 && v[i].bytes)
			v[i].objects = pct_byte_capacity(v[i].pct,
							 t->unique_bytes);
		else if (v[i].pct >= 0)
			v[i].objects = pct_capacity(v[i].pct, t->nr_unique);
	}
}

static const char *cap_unit(const struct capacity_spec *c)
{
	return c->bytes ? "bytes" : "objects";
}

/* ------------------------------------------------------------------------- */
/* Runs                                                                       */
/* ------------------------------------------------------------------------- */

struct run {
	const struct sim_policy *policy;
	struct capacity_spec cap;
	uint64_t misses;
	uint64_t miss_bytes;	/* a trace with sizes: bytes of the misses */
	uint64_t too_large;	/* byte mode: misses larger than the capacity */
	struct sim_counter counters[SIM_MAX_COUNTERS];
	size_t nr_counters;
	double seconds;
	bool failed;
	char err[320];
};

struct pool {
	const struct trace *t;
	struct run *runs;
	size_t nr_runs;
	atomic_size_t next;
	pthread_mutex_t lock;	/* progress messages */
	bool quiet;
	size_t done;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_one(const struct trace *t, struct run *r)
{
	struct sim_cache *c;
	uint64_t misses = 0;
	double t0 = now();
	size_t i;

	c = r->policy->create(r->policy, r->cap.objects, t->nr_unique,
			      t->keys, r->cap.bytes, r->err, sizeof(r->err));
	if (!c) {
		r->failed = true;
		return;
	}
	if (!t->sizes) {
		for (i = 0; i < t->nr_requests; i++) {
			int h = r->policy->access(c, t->ids[i], 1);

			if (h < 0) {
				snprintf(r->err, sizeof(r->err),
					 "request %zu: %s", i + 1, c->err);
				r->failed = true;
				break;
			}
			misses += (h == 0);
		}
	} else {
		/*
		 * A trace with sizes: the byte miss ratio in either mode;
		 * byte mode presents each request's size to the policy.
		 */
		uint64_t miss_bytes = 0, too_large = 0;

		for (i = 0; i < t->nr_requests; i++) {
			uint32_t size = r->cap.bytes ? t->sizes[i] : 1;
			int h = r->policy->access(c, t->ids[i], size);

			if (h < 0) {
				snprintf(r->err, sizeof(r->err),
					 "request %zu: %s", i + 1, c->err);
				r->failed = true;
				break;
			}
			if (h == 0) {
				misses++;
				miss_bytes += t->sizes[i];
				too_large += size > r->cap.objects;
			}
		}
		r->miss_bytes = miss_bytes;
		r->too_large = too_large;
	}
	r->misses = misses;
	if (!r->failed)
		r->nr_counters = r->policy->counters(c, r->counters,
						     SIM_MAX_COUNTERS);
	r->policy->destroy(c);
	r->seconds = now() - t0;
}

static void *worker(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		size_t i = atomic_fetch_add(&p->next, 1);
		struct run *r;

		if (i >= p->nr_runs)
			return NULL;
		r = &p->runs[i];
		run_one(p->t, r);
		pthread_mutex_lock(&p->lock);
		p->done++;
		if (!p->quiet && !r->failed)
			fprintf(stderr, "rcl-sim: [%zu/%zu] %s, %" PRIu64
				" %s: miss ratio %.4f (%.2f s)\n",
				p->done, p->nr_runs, r->policy->name,
				r->cap.objects, cap_unit(&r->cap),
				(double)r->misses /
					(double)p->t->nr_requests,
				r->seconds);
		pthread_mutex_unlock(&p->lock);
	}
}

static int run_all(const struct trace *t, struct run *runs, size_t nr_runs,
		   unsigned jobs, bool quiet)
{
	struct pool p = {
		.t = t,
		.runs = runs,
		.nr_runs = nr_runs,
		.quiet = quiet,
	};
	pthread_t *th;
	unsigned i, started = 0;

	atomic_init(&p.next, 0);
	pthread_mutex_init(&p.lock, NULL);
	if (jobs > nr_runs)
		jobs = (unsigned)nr_runs;
	th = calloc(jobs, sizeof(*th));
	if (!th) {
		fprintf(stderr, "rcl-sim: out of memory\n");
		return -1;
	}
	for (i = 0; i < jobs; i++) {
		if (pthread_create(&th[i], NULL, worker, &p) != 0)
			break;
		started++;
	}
	if (started == 0)
		worker(&p);	/* no thread: run them here */
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	pthread_mutex_destroy(&p.lock);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Output                                                                     */
/* ------------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

static void print_json(const struct options *o, const struct trace *t,
		       const struct run *r)
{
	size_t i;

	fputs("{\"trace\":", stdout);
	json_string(stdout, o->path);
	fputs(",\"format\":", stdout);
	json_string(stdout, o->topt.format);
	fputs(",\"policy\":", stdout);
	json_string(stdout, r->policy->name);
	printf(",\"capacity\":%" PRIu64, r->cap.objects);
	if (o->sized)
		printf(",\"capacity_unit\":\"%s\"", cap_unit(&r->cap));
	if (r->cap.pct >= 0)
		printf(",\"capacity_pct\":%.15g", r->cap.pct);
	printf(",\"requests\":%zu,\"unique\":%" PRIu32 ",\"misses\":%" PRIu64
	       ",\"hits\":%" PRIu64 ",\"miss_ratio\":%.17g",
	       t->nr_requests, t->nr_unique, r->misses,
	       (uint64_t)t->nr_requests - r->misses,
	       (double)r->misses / (double)t->nr_requests);
	if (o->sized)
		printf(",\"request_bytes\":%" PRIu64 ",\"unique_bytes\":%"
		       PRIu64 ",\"miss_bytes\":%" PRIu64 ",\"byte_miss_ratio\":"
		       "%.17g,\"too_large\":%" PRIu64, t->request_bytes,
		       t->unique_bytes, r->miss_bytes,
		       (double)r->miss_bytes / (double)t->request_bytes,
		       r->too_large);
	fputs(",\"counters\":{", stdout);
	for (i = 0; i < r->nr_counters; i++)
		printf("%s\"%s\":%" PRIu64, i ? "," : "", r->counters[i].name,
		       r->counters[i].value);
	printf("},\"seconds\":%.3f}\n", r->seconds);
}

/* The share of the trace a capacity is: of its unique keys or bytes. */
static double cap_pct(const struct capacity_spec *c, const struct trace *t)
{
	if (c->pct >= 0)
		return c->pct;
	return 100.0 * (double)c->objects /
	       (c->bytes ? (double)t->unique_bytes : (double)t->nr_unique);
}

/* The table of a trace with sizes: object and byte miss ratios. */
static void print_table_sized(const struct options *o, const struct trace *t,
			      const struct run *runs, size_t nr_runs, int w)
{
	size_t i;

	(void)o;
	printf("%-*s %14s %9s %12s %10s %10s %10s\n", w, "policy",
	       "capacity", "pct", "misses", "miss_ratio", "byte_mr",
	       "too_large");
	for (i = 0; i < nr_runs; i++) {
		const struct run *r = &runs[i];
		char cap[40], pct[32];

		snprintf(cap, sizeof(cap), "%" PRIu64 "%s", r->cap.objects,
			 r->cap.bytes ? "B" : "");
		snprintf(pct, sizeof(pct), r->cap.pct >= 0 ? "%g%%%s" :
			 "%.2f%%%s", cap_pct(&r->cap, t),
			 r->cap.bytes ? "b" : "");
		printf("%-*s %14s %9s %12" PRIu64 " %10.4f %10.4f %10" PRIu64
		       "\n", w, r->policy->name, cap, pct, r->misses,
		       (double)r->misses / (double)t->nr_requests,
		       (double)r->miss_bytes / (double)t->request_bytes,
		       r->too_large);
	}
}

static void print_table(const struct options *o, const struct trace *t,
			const struct run *runs, size_t nr_runs)
{
	int w = 10;	/* the policy column: wider for longer names */
	size_t i;

	for (i = 0; i < o->nr_policies; i++) {
		if ((int)strlen(o->policies[i]->name) > w)
			w = (int)strlen(o->policies[i]->name);
	}
	printf("trace %s (format %s): %zu requests, %" PRIu32
	       " unique keys", o->path, o->topt.format, t->nr_requests,
	       t->nr_unique);
	if (o->sized)
		printf(", %" PRIu64 " bytes requested, %" PRIu64 " unique "
		       "bytes", t->request_bytes, t->unique_bytes);
	fputs("\n\n", stdout);
	if (o->sized) {
		print_table_sized(o, t, runs, nr_runs, w);
		return;
	}
	printf("%-*s %12s %8s %12s %10s %12s %12s\n", w, "policy", "capacity",
	       "pct", "misses", "miss_ratio", "activated", "deactivated");
	for (i = 0; i < nr_runs; i++) {
		const struct run *r = &runs[i];
		char pct[32], act[32] = "-", deact[32] = "-";
		size_t k;

		if (r->cap.pct >= 0)
			snprintf(pct, sizeof(pct), "%g%%", r->cap.pct);
		else
			snprintf(pct, sizeof(pct), "%.2f%%",
				 100.0 * (double)r->cap.objects /
					 (double)t->nr_unique);
		for (k = 0; k < r->nr_counters; k++) {
			if (strcmp(r->counters[k].name, "activated") == 0)
				snprintf(act, sizeof(act), "%" PRIu64,
					 r->counters[k].value);
			if (strcmp(r->counters[k].name, "deactivated") == 0)
				snprintf(deact, sizeof(deact), "%" PRIu64,
					 r->counters[k].value);
		}
		printf("%-*s %12" PRIu64 " %8s %12" PRIu64 " %10.4f %12s %12s\n",
		       w, r->policy->name, r->cap.objects, pct, r->misses,
		       (double)r->misses / (double)t->nr_requests, act, deact);
	}
}

/* ------------------------------------------------------------------------- */
/* Miss-ratio curves                                                          */
/* ------------------------------------------------------------------------- */

static int cmp_cap(const void *a, const void *b)
{
	const struct capacity_spec *x = a, *y = b;

	return (x->objects > y->objects) - (x->objects < y->objects);
}

/* @n sizes from 0.1 % to 100 % of the unique keys, log-spaced, deduplicated. */
static size_t mrc_capacities(uint32_t unique, unsigned n,
			     struct capacity_spec **out)
{
	struct capacity_spec *v = calloc(n, sizeof(*v));
	size_t k = 0;
	unsigned i;

	if (!v)
		return 0;
	for (i = 0; i < n; i++) {
		double pct = n > 1 ? 0.1 * pow(1000.0, (double)i / (n - 1)) :
				     100.0;
		uint64_t c = pct_capacity(pct, unique);

		if (k && v[k - 1].objects == c)
			continue;
		v[k].objects = c;
		v[k].pct = -1;	/* computed, not given */
		k++;
	}
	*out = v;
	return k;
}

/* A string for a gnuplot single-quoted literal ('' stands for '). */
static void gp_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

/* Plot @csv into @svg with gnuplot, if it is installed: 0, 1 = no gnuplot. */
static int mrc_plot(const char *csv, const char *svg, const char *title,
		    size_t nr_policies)
{
	char *argv[] = { "gnuplot", NULL };
	posix_spawn_file_actions_t fa;
	int pfd[2], r, status;
	pid_t pid;
	FILE *f;

	if (pipe(pfd))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[0], 0);
	posix_spawn_file_actions_addclose(&fa, pfd[1]);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	r = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[0]);
	if (r) {
		close(pfd[1]);
		return r == ENOENT ? 1 : -1;
	}
	f = fdopen(pfd[1], "w");
	if (!f) {
		close(pfd[1]);
		waitpid(pid, &status, 0);
		return -1;
	}
	fputs("set terminal svg size 900,560 dynamic noenhanced "
	      "font 'sans,12'\nset output ", f);
	gp_quote(f, svg);
	fputs("\nset datafile separator ','\nset logscale x\n"
	      "set xlabel 'cache size (objects)'\nset ylabel 'miss ratio'\n"
	      "set yrange [0:*]\nset grid\nset key top right\nset title ", f);
	gp_quote(f, title);
	fprintf(f, "\nplot for [i=3:%zu] ", nr_policies + 2);
	gp_quote(f, csv);
	fputs(" using 1:i with linespoints title columnheader(i)\n", f);
	if (fclose(f))
		r = -1;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		r = -1;
	return r;
}

static int mrc_write(const struct options *o, const struct trace *t,
		     const struct run *runs, size_t nr_caps)
{
	const char *base = strrchr(o->path, '/');
	FILE *f = fopen(o->mrc, "w");
	size_t i, j, len;
	char *svg;
	int r;

	if (!f) {
		fprintf(stderr, "rcl-sim: %s: %s\n", o->mrc, strerror(errno));
		return -1;
	}
	fputs("capacity,capacity_pct", f);
	for (j = 0; j < o->nr_policies; j++)
		fprintf(f, ",%s", o->policies[j]->name);
	fputc('\n', f);
	/* runs are capacity-major: runs[i * nr_policies + j] */
	for (i = 0; i < nr_caps; i++) {
		const struct run *r0 = &runs[i * o->nr_policies];

		fprintf(f, "%" PRIu64 ",%.6g", r0->cap.objects,
			r0->cap.bytes ? 100.0 * (double)r0->cap.objects /
						(double)t->unique_bytes :
					100.0 * (double)r0->cap.objects /
						(double)t->nr_unique);
		for (j = 0; j < o->nr_policies; j++)
			fprintf(f, ",%.6f",
				(double)r0[j].misses /
					(double)t->nr_requests);
		fputc('\n', f);
	}
	if (fclose(f)) {
		fprintf(stderr, "rcl-sim: %s: %s\n", o->mrc, strerror(errno));
		return -1;
	}

	len = strlen(o->mrc);
	svg = malloc(len + 5);
	if (!svg)
		return -1;
	memcpy(svg, o->mrc, len + 1);
	if (len > 4 && strcmp(svg + len - 4, ".csv") == 0)
		svg[len - 4] = '\0';
	strcat(svg, ".svg");
	r = mrc_plot(o->mrc, svg, base ? base + 1 : o->path, o->nr_policies);
	if (r == 1) {
		if (!o->quiet)
			fprintf(stderr, "rcl-sim: wrote %s (gnuplot is not "
				"installed: no plot)\n", o->mrc);
		r = 0;
	} else if (r) {
		fprintf(stderr, "rcl-sim: gnuplot failed to plot %s\n", svg);
	} else if (!o->quiet) {
		fprintf(stderr, "rcl-sim: wrote %s and %s\n", o->mrc, svg);
	}
	free(svg);
	return r;
}

/* ------------------------------------------------------------------------- */
/* main                                                                       */
/* ------------------------------------------------------------------------- */

enum {
	OPT_JSON = 256,
	OPT_CSV_KEY_COL,
	OPT_CSV_HEADER,
	OPT_CSV_SEP,
	OPT_CSV_SIZE_COL,
	OPT_MRC,
	OPT_MRC_POINTS,
	OPT_LIST_POLICIES,
	OPT_LIST_FORMATS,
};

/* Option argument: "--opt=value", or the next argument. */
static const char *opt_value(int argc, char **argv, int *i, const char *arg,
			     const char *name)
{
	size_t n = strlen(name);

	if (strncmp(arg, name, n) == 0 && arg[n] == '=')
		return arg + n + 1;
	if (*i + 1 >= argc) {
		fprintf(stderr, "rcl-sim: %s needs a value\n", name);
		return NULL;
	}
	return argv[++*i];
}

/* A 1-based column number option (--csv-key-col N); 0 or -1 (said). */
static int opt_column(int argc, char **argv, int *i, const char *arg,
		      const char *name, unsigned *out)
{
	const char *v = opt_value(argc, argv, i, arg, name);
	unsigned long long n;

	if (!v)
		return -1;
	if (!parse_uint(v, 100000, &n) || n == 0) {
		fprintf(stderr, "rcl-sim: bad %s \"%s\" (1-based)\n", name, v);
		return -1;
	}
	*out = (unsigned)n;
	return 0;
}

static bool opt_is(const char *arg, const char *lng, const char *shrt)
{
	size_t n = strlen(lng);

	if (shrt && strcmp(arg, shrt) == 0)
		return true;
	return strncmp(arg, lng, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int parse_args(int argc, char **argv, struct options *o)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v;
		unsigned long long n;

		if (a[0] != '-' || strcmp(a, "-") == 0) {
			if (o->path) {
				fprintf(stderr, "rcl-sim: one trace at a "
					"time\n");
				return 2;
			}
			o->path = a;
		} else if (strcmp(a, "--") == 0) {
			if (i + 1 != argc - 1 || o->path) {
				fprintf(stderr, "rcl-sim: one trace at a "
					"time\n");
				return 2;
			}
			o->path = argv[++i];
		} else if (opt_is(a, "--help", "-h")) {
			usage(stdout);
			return 0;
		} else if (opt_is(a, "--version", "-V")) {
			printf("rcl-sim (libreclaim) %s\n", RCL_VERSION_STRING);
			return 0;
		} else if (opt_is(a, "--list-policies", NULL)) {
			size_t k;

			for (k = 0; sim_policies[k]; k++)
				printf("%-14s %s\n", sim_policies[k]->name,
				       sim_policies[k]->help);
			return 0;
		} else if (opt_is(a, "--list-formats", NULL)) {
			size_t k;

			for (k = 0; trace_formats[k].name; k++)
				printf("%-14s %s\n", trace_formats[k].name,
				       trace_formats[k].help);
			return 0;
		} else if (opt_is(a, "--policy", "-p")) {
			if (!(v = opt_value(argc, argv, &i, a, "--policy")) ||
			    parse_policies(v, o))
				return 2;
		} else if (opt_is(a, "--format", "-f")) {
			if (!(v = opt_value(argc, argv, &i, a, "--format")))
				return 2;
			o->topt.format = v;
		} else if (opt_is(a, "--capacity", "-c")) {
			if (!(v = opt_value(argc, argv, &i, a, "--capacity")))
				return 2;
			o->capacities = v;
		} else if (opt_is(a, "--json", NULL)) {
			o->json = true;
		} else if (opt_is(a, "--quiet", "-q")) {
			o->quiet = true;
		} else if (opt_is(a, "--csv-key-col", NULL)) {
			if (opt_column(argc, argv, &i, a, "--csv-key-col",
				       &o->topt.csv_key_col))
				return 2;
		} else if (opt_is(a, "--csv-size-col", NULL)) {
			if (opt_column(argc, argv, &i, a, "--csv-size-col",
				       &o->topt.csv_size_col))
				return 2;
		} else if (opt_is(a, "--csv-header", NULL)) {
			o->topt.csv_header = true;
		} else if (opt_is(a, "--csv-sep", NULL)) {
			if (!(v = opt_value(argc, argv, &i, a, "--csv-sep")))
				return 2;
			if (strcmp(v, "\\t") == 0 || strcmp(v, "tab") == 0)
				v = "\t";
			if (strlen(v) != 1 || v[0] == '\n') {
				fprintf(stderr, "rcl-sim: --csv-sep takes one "
					"character\n");
				return 2;
			}
			o->topt.csv_sep = v[0];
		} else if (opt_is(a, "--mrc", NULL)) {
			if (!(v = opt_value(argc, argv, &i, a, "--mrc")))
				return 2;
			o->mrc = v;
		} else if (opt_is(a, "--mrc-points", NULL)) {
			if (!(v = opt_value(argc, argv, &i, a,
					    "--mrc-points")))
				return 2;
			if (!parse_uint(v, 10000, &n) || n < 2) {
				fprintf(stderr, "rcl-sim: bad --mrc-points "
					"\"%s\" (2 .. 10000)\n", v);
				return 2;
			}
			o->mrc_points = (unsigned)n;
		} else if (opt_is(a, "--jobs", "-j")) {
			if (!(v = opt_value(argc, argv, &i, a, "--jobs")))
				return 2;
			if (!parse_uint(v, 1024, &n) || n == 0) {
				fprintf(stderr, "rcl-sim: bad --jobs \"%s\"\n",
					v);
				return 2;
			}
			o->jobs = (unsigned)n;
		} else {
			fprintf(stderr, "rcl-sim: unknown option \"%s\" (see "
				"--help)\n", a);
			return 2;
		}
	}
	if (!o->path) {
		usage(stderr);
		return 2;
	}
	return -1;	/* go on */
}

int main(int argc, char **argv)
{
	struct options o;
	struct trace t;
	struct capacity_spec *caps = NULL;
	struct run *runs = NULL;
	size_t nr_caps = 0, nr_runs, i, j;
	const char *caps_arg;
	char err[512];
	double t0;
	int rc, failed = 0;

	memset(&o, 0, sizeof(o));
	o.topt.format = "keys";
	o.topt.csv_sep = ',';
	o.mrc_points = MRC_DEFAULT_POINTS;
	rc = parse_args(argc, argv, &o);
	if (rc >= 0) {
		free(o.policies);
		return rc;
	}
	if (!o.policies && parse_policies(DEFAULT_POLICIES, &o))
		return 2;
	if (strcmp(o.topt.format, "csv") == 0 && !o.topt.csv_key_col) {
		fprintf(stderr, "rcl-sim: --format csv needs --csv-key-col "
			"N\n");
		free(o.policies);
		return 2;
	}
	if (!o.jobs) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		o.jobs = n > 0 ? (unsigned)n : 1;
	}

	/* Check the capacities before the (possibly long) decoding. */
	caps_arg = o.capacities ? o.capacities :
				  (o.mrc ? NULL : DEFAULT_CAPACITIES);
	o.sized = trace_has_sizes(&o.topt);
	if (caps_arg) {
		nr_caps = parse_capacities(caps_arg, &caps);
		if (nr_caps == 0) {
			free(o.policies);
			return 2;
		}
		for (i = 0; i < nr_caps && !o.sized; i++) {
			if (caps[i].bytes) {
				fprintf(stderr, "rcl-sim: byte capacities "
					"(64MiB, 5%%b) need a trace with "
					"sizes: --format adapt_size, "
					"oracleGeneral, or csv with "
					"--csv-size-col N\n");
				free(caps);
				free(o.policies);
				return 2;
			}
		}
	}

	t0 = now();
	if (trace_load(o.path, &o.topt, &t, err, sizeof(err))) {
		fprintf(stderr, "rcl-sim: %s\n", err);
		free(caps);
		free(o.policies);
		return 1;
	}
	if (!o.quiet)
		fprintf(stderr, "rcl-sim: %s: %" PRIu64 " records, %zu "
			"requests, %" PRIu32 " unique keys (decoded in "
			"%.2f s)\n", o.path, t.nr_records, t.nr_requests,
			t.nr_unique, now() - t0);
	if (t.nr_requests == 0) {
		fprintf(stderr, "rcl-sim: %s: no requests\n", o.path);
		rc = 1;
		goto out;
	}

	if (caps_arg) {
		resolve_capacities(caps, nr_caps, &t);
	} else {
		nr_caps = mrc_capacities(t.nr_unique, o.mrc_points, &caps);
		if (nr_caps == 0) {
			fprintf(stderr, "rcl-sim: out of memory\n");
			rc = 1;
			goto out;
		}
	}
	if (o.mrc)	/* a curve wants increasing sizes */
		qsort(caps, nr_caps, sizeof(*caps), cmp_cap);

	nr_runs = nr_caps * o.nr_policies;
	runs = calloc(nr_runs, sizeof(*runs));
	if (!runs) {
		fprintf(stderr, "rcl-sim: out of memory\n");
		rc = 1;
		goto out;
	}
	for (i = 0; i < nr_caps; i++) {
		for (j = 0; j < o.nr_policies; j++) {
			runs[i * o.nr_policies + j].policy = o.policies[j];
			runs[i * o.nr_policies + j].cap = caps[i];
		}
	}
	if (run_all(&t, runs, nr_runs, o.jobs, o.quiet)) {
		rc = 1;
		goto out;
	}
	for (i = 0; i < nr_runs; i++) {
		if (runs[i].failed) {
			fprintf(stderr, "rcl-sim: %s, %" PRIu64 " %s: %s\n",
				runs[i].policy->name, runs[i].cap.objects,
				cap_unit(&runs[i].cap), runs[i].err);
			failed = 1;
		}
	}
	if (failed) {
		rc = 1;
		goto out;
	}

	if (o.json) {
		for (i = 0; i < nr_runs; i++)
			print_json(&o, &t, &runs[i]);
	} else {
		print_table(&o, &t, runs, nr_runs);
	}
	rc = 0;
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "rcl-sim: error writing standard output\n");
		rc = 1;
	}
	if (o.mrc && mrc_write(&o, &t, runs, nr_caps))
		rc = 1;
out:
	free(runs);
	free(caps);
	trace_free(&t);
	free(o.policies);
	return rc;
}
