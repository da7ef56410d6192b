/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench sqlite: K SQLite databases in one process, one connection each
 * in its own thread, point and short range lookups whose keys come from
 * four real traces; SQLite's own page cache split M / K per connection
 * (split), SQLite's cache under one soft heap limit (soft-limit), and the
 * libreclaim page-cache plug-in <reclaim/sqlite.h> under one domain of
 * budget M (libreclaim), at the same total page-cache memory M.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include <reclaim/reclaim.h>
#include <reclaim/sqlite.h>

#include "../tools/rcl-sim/trace.h"
#include "commands.h"
#include "harness.h"

/* ------------------------------------------------------------------------- */
/* sqlite: three page caches at the same memory, on real access patterns     */
/* ------------------------------------------------------------------------- */

/*
 * The workload.  K (1 to 4) database files, built by the benchmark once per
 * run in --dir and read by every configuration: each holds one table
 *
 *	CREATE TABLE t(k INTEGER NOT NULL, payload BLOB NOT NULL);
 *	CREATE UNIQUE INDEX t_k ON t(k);
 *
 * of N rows, k = 0 .. N-1, each with a payload of SQ_PAYLOAD bytes, N chosen
 * so that the K files together are at least SQ_DB_X times the budget M
 * (each 4 M / K).  The rows are inserted in the order of a permutation of
 * the keys (row j has k = j * A mod N, A coprime to N near 0.618 N), and
 * the index is built afterwards: the index is in key order and compact,
 * the table in insertion order, so that neighbouring keys are in distant
 * table pages, as behind any secondary index.  (With the table in key
 * order, the first-appearance numbering below would pack a trace's keys
 * into a few contiguous pages, and every working set would be a prefix of
 * the file.)  A lookup goes down the index, then down the table; a range
 * of 10 keys reads one or two index leaves and 10 table leaves.
 *
 * Database i reads its keys from trace i of sq_traces[] (the order of the
 * issue; K = 1 uses the first): rcl-sim's reader (tools/rcl-sim/trace.c)
 * decodes it and numbers its keys by first appearance, and key j of the
 * trace becomes k = id(j) mod N.  The parent process writes each database's
 * key stream (the first W + Q keys, the trace replayed from its start again
 * if it is shorter) to a file beside the databases.  One query in
 * SQ_RANGE_EVERY is the short range "SELECT payload FROM t WHERE k BETWEEN
 * ?1 AND ?1 + 9", the others the point lookup "SELECT payload FROM t WHERE
 * k = ?1"; both are prepared once per connection.
 *
 * SQLite's page cache is process-global (sqlite3_config() before
 * sqlite3_initialize()), so each configuration runs in a child process of
 * its own: the parent fork()s and exec()s /proc/self/exe with the internal
 * arguments "sqlite --child CONFIG ...", and reads the child's one JSON line
 * through a pipe (its standard output).  In the child, every connection is
 * opened with the same flags (SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX:
 * the sampler thread reads the connections while their threads query) and
 * runs in its own thread: W warm-up queries, a barrier (where each thread
 * resets its SQLITE_DBSTATUS_CACHE_MISS and _HIT counters), then Q timed
 * queries.  queries_per_s is K x Q over the time from the barrier to the
 * end of the last thread.
 *
 * - split: SQLite's cache, PRAGMA cache_size = -(M / K / 1024) (KiB) on
 *   each connection: what applications do.
 * - soft-limit: SQLite's cache, PRAGMA cache_size = -SQ_LARGE_CACHE_KIB, and
 *   sqlite3_soft_heap_limit64(M + H0), H0 being sqlite3_memory_used() once
 *   the connections are open, the statements prepared (the schema read) and
 *   every cache emptied by sqlite3_db_release_memory().
 * - libreclaim: a strict domain of budget M, reclaimed by the charging
 *   threads (direct reclaim, as pcache1 recycles inline; --reclaimer starts
 *   the background reclaimer too), rcl_sqlite_install() with the counting
 *   allocator below, then the same large cache_size as soft-limit (the
 *   domain decides).
 *
 * peak_cache_bytes is the largest value a sampler thread saw, every
 * SQ_SAMPLE_NS, from before the warm-up to the end: the sum of
 * SQLITE_DBSTATUS_CACHE_USED over the connections for SQLite's cache, the
 * bytes the counting allocator holds for the plug-in (everything it
 * allocates, its metadata included).  rss_peak_bytes is the child's VmHWM
 * (the high-water mark of its address space since exec()), which includes
 * the key streams (4 bytes per query) and SQLite's own heap.
 *
 * The files are read through the OS page cache, warm after building them
 * and the same for every configuration: cache_misses (pages SQLite read
 * from the files) is the figure, not disk time.
 */
#define SQ_MAX_DBS 4u
#define SQ_PAYLOAD 100u			/* bytes of a row's payload */
#define SQ_DB_X 4u			/* the K files / the budget */
#define SQ_RANGE_EVERY 10u		/* one query in 10 is a range */
#define SQ_RANGE_LEN 10u		/* k BETWEEN ?1 AND ?1 + 9 */
#define SQ_BUDGET (16ull << 20)
#define SQ_SHORT_BUDGET (1ull << 20)
#define SQ_QUERIES 100000u		/* timed, per connection */
#define SQ_SHORT_QUERIES 2000u
#define SQ_WARMUP_DIV 10u		/* warm-up: Q / 10 queries */
#define SQ_PAGE_SIZE 4096u
#define SQ_LARGE_CACHE_KIB 4194304ll	/* 4 GiB: never binds */
#define SQ_SAMPLE_NS 10000000ull	/* the peak sampler's period */
#define SQ_ROW_BYTES_GUESS 120u		/* file bytes per row, first guess */

/* The traces, one per database, in the order of the issue. */
static const struct {
	const char *path;	/* under the traces directory */
	const char *format;	/* rcl-sim's --format */
	const char *name;
} sq_traces[SQ_MAX_DBS] = {
	{ "arc/OLTP.lis.zst", "arc", "OLTP" },
	{ "cache2k/orm-busy.trace.xz", "u32be", "orm-busy" },
	{ "corda/trace_vaultservice.gz", "u64be", "vaultservice" },
	{ "libcachesim/cloudPhysicsIO.vscsi", "vscsi", "cloudPhysicsIO" },
};

/*
 * The three configurations, and one more child that runs only with
 * --page-log: SQLite's cache wrapped to record the page number of every
 * xFetch, so that tools/sqlite-bound.py can replay the page streams through
 * simulated caches (bench/README.md, sqlite: "How far the miss target is").
 */
enum sq_config {
	SQ_SPLIT, SQ_SOFT_LIMIT, SQ_LIBRECLAIM, SQ_NR_CONFIGS,
	SQ_PAGE_LOG = SQ_NR_CONFIGS,
};

static const char *const sq_config_names[SQ_NR_CONFIGS + 1] = {
	"split", "soft-limit", "libreclaim", "page-log",
};

/* The page log's end-of-query mark (SQLite's page numbers are below it). */
#define SQ_PAGE_LOG_MARK 0xffffffffu

/* What the parent and every child agree on (the child gets it in argv). */
struct sq_params {
	unsigned k;		/* databases */
	uint64_t budget;	/* M, bytes */
	unsigned queries;	/* timed, per connection */
	unsigned warmup;	/* per connection */
	unsigned page_size;
	uint64_t rows;		/* per database */
	bool reclaimer;		/* libreclaim: start the background reclaimer */
	char prefix[PATH_MAX - 32];	/* DIR/rcl-bench-sqlite-PID */
};

/* One configuration's figures, as the child printed them. */
struct sq_result {
	bool ok;
	uint64_t queries;
	double queries_per_s;
	uint64_t cache_misses;
	double miss_ratio;
	uint64_t peak_cache_bytes;
	uint64_t rss_peak_bytes;
	char line[1024];
};

/* ------------------------------------------------------------------------- */
/* Small helpers                                                              */
/* ------------------------------------------------------------------------- */

static void sq_db_path(const struct sq_params *p, unsigned i, char *buf,
		       size_t len)
{
	snprintf(buf, len, "%s-%u.db", p->prefix, i);
}

static void sq_keys_path(const struct sq_params *p, unsigned i, char *buf,
			 size_t len)
{
	snprintf(buf, len, "%s-%u.keys", p->prefix, i);
}

/* "16M", "512K", "1G", "123456": bytes, or 0 if malformed. */
static uint64_t sq_parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	return *end ? 0 : (uint64_t)v;
}

/* VmHWM of this process (since its exec()), bytes; 0 if unknown. */
static uint64_t sq_rss_peak(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb << 10;
}

static int sq_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		fprintf(stderr, "rcl-bench sqlite: %s: %s\n", sql,
			msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The counting allocator of the plug-in                                      */
/* ------------------------------------------------------------------------- */

/*
 * malloc() with a 16-byte header holding the size (which keeps malloc's
 * alignment for any type), and the bytes held: what the plug-in asked for,
 * the header not included.  The exact high-water mark is kept too (for
 * standard error; the JSON figure is the sampled one, as for SQLite).
 */
struct sq_counter {
	atomic_ullong held;
	atomic_ullong peak;
	atomic_ullong allocs;
	atomic_ullong frees;
};

#define SQ_HDR 16u

static void *sq_alloc(void *ctx, size_t size)
{
	struct sq_counter *c = ctx;
	unsigned long long held, peak;
	unsigned char *p;

	if (size > SIZE_MAX - SQ_HDR)
		return NULL;
	p = malloc(size + SQ_HDR);
	if (!p)
		return NULL;
	memcpy(p, &size, sizeof(size));
	held = atomic_fetch_add_explicit(&c->held, size,
					 memory_order_relaxed) + size;
	peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
	while (held > peak &&
	       !atomic_compare_exchange_weak_explicit(&c->peak, &peak, held,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
	atomic_fetch_add_explicit(&c->allocs, 1, memory_order_relaxed);
	return p + SQ_HDR;
}

static void sq_free(void *ctx, void *ptr)
{
	struct sq_counter *c = ctx;
	unsigned char *p = (unsigned char *)ptr - SQ_HDR;
	size_t size;

	memcpy(&size, p, sizeof(size));
	atomic_fetch_sub_explicit(&c->held, size, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->frees, 1, memory_order_relaxed);
	free(p);
}

/* ------------------------------------------------------------------------- */
/* The child: one configuration                                               */
/* ------------------------------------------------------------------------- */

struct sq_child;

struct sq_conn {
	_Alignas(64) struct sq_child *ch;
	unsigned idx;
	sqlite3 *db;
	sqlite3_stmt *point, *range;
	uint32_t *keys;			/* warm-up, then timed */
	pthread_t tid;
	uint64_t end_ns;
	uint64_t rows_read;		/* timed phase */
	uint64_t bytes_read;		/* timed phase: payload bytes */
	int err;			/* an SQLite result code, or 0 */
	const char *what;
	FILE *log;			/* page-log: this connection's log */
};

struct sq_child {
	const struct sq_params *p;
	enum sq_config config;
	struct sq_conn conn[SQ_MAX_DBS];
	struct bench_barrier bar;
	uint64_t t0_ns;
	struct bench_cpu_snap cpu0;
	struct sq_counter counter;
	/* the sampler */
	pthread_t sampler;
	atomic_bool stop;
	uint64_t peak_cache;
	uint64_t samples;
};

/*
 * The page-log child: SQLite's own cache (pcache1) behind a wrapper that
 * writes each fetched page number, as a native-endian uint32, to the log of
 * the calling connection's thread, and records the cache size in pages that
 * SQLite asks for (split's PRAGMA cache_size, set on every connection of
 * this child: the log does not depend on what the cache holds).
 */
static sqlite3_pcache_methods2 sq_pcache1;
static _Thread_local FILE *sq_log;
static atomic_uint sq_log_split_pages;

static sqlite3_pcache_page *sq_log_fetch(sqlite3_pcache *c, unsigned key,
					 int create)
{
	uint32_t v = key;

	if (sq_log)
		fwrite(&v, sizeof(v), 1, sq_log);
	return sq_pcache1.xFetch(c, key, create);
}

static void sq_log_cachesize(sqlite3_pcache *c, int n)
{
	if (n > 0)
		atomic_store(&sq_log_split_pages, (unsigned)n);
	sq_pcache1.xCachesize(c, n);
}

static int sq_log_install(void)
{
	sqlite3_pcache_methods2 m;
	int rc = sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &sq_pcache1);

	if (rc == SQLITE_OK) {
		m = sq_pcache1;
		m.xFetch = sq_log_fetch;
		m.xCachesize = sq_log_cachesize;
		rc = sqlite3_config(SQLITE_CONFIG_PCACHE2, &m);
	}
	if (rc != SQLITE_OK)
		fprintf(stderr, "rcl-bench sqlite: page log: sqlite3_config: %s\n",
			sqlite3_errstr(rc));
	return rc == SQLITE_OK ? 0 : -1;
}

/* One query; 0 or an SQLite result code with *what set. */
static int sq_query(struct sq_conn *c, uint64_t i, uint32_t key,
		    uint64_t *rows, uint64_t *bytes, const char **what)
{
	bool range = i % SQ_RANGE_EVERY == SQ_RANGE_EVERY - 1;
	sqlite3_stmt *st = range ? c->range : c->point;
	uint64_t n = 0;
	int rc;

	rc = sqlite3_bind_int64(st, 1, key);
	if (rc != SQLITE_OK) {
		*what = "sqlite3_bind_int64";
		return rc;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*bytes += (uint64_t)sqlite3_column_bytes(st, 0);
		n++;
	}
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		*what = range ? "sqlite3_step (range)" : "sqlite3_step (point)";
		return rc;
	}
	if (!n) {
		/* Every key is < N, so every lookup finds its row. */
		*what = "a lookup found no row";
		return SQLITE_CORRUPT;
	}
	*rows += n;
	return 0;
}

/* Page-log: the end of one query in the connection's log. */
static void sq_log_mark(struct sq_conn *c)
{
	uint32_t v = SQ_PAGE_LOG_MARK;

	if (c->log)
		fwrite(&v, sizeof(v), 1, c->log);
}

static void *sq_conn_main(void *arg)
{
	struct sq_conn *c = arg;
	struct sq_child *ch = c->ch;
	const struct sq_params *p = ch->p;
	uint64_t rows = 0, bytes = 0, i;
	int cur, hi, rc = 0;
	char name[16];

	snprintf(name, sizeof(name), "sqlite-%u", c->idx);
	pthread_setname_np(pthread_self(), name);
	sq_log = c->log;
	for (i = 0; i < p->warmup && !rc; i++) {
		rc = sq_query(c, i, c->keys[i], &rows, &bytes, &c->what);
		sq_log_mark(c);
	}
	if (!rc) {
		/* Misses and hits of the timed phase only. */
		sqlite3_db_status(c->db, SQLITE_DBSTATUS_CACHE_MISS, &cur,
				  &hi, 1);
		sqlite3_db_status(c->db, SQLITE_DBSTATUS_CACHE_HIT, &cur, &hi,
				  1);
	}
	if (bench_barrier_wait(&ch->bar)) {
		bench_cpu_snapshot(&ch->cpu0);
		ch->t0_ns = bench_now_ns();
	}
	bench_barrier_wait(&ch->bar);
	rows = bytes = 0;
	for (i = p->warmup; i < (uint64_t)p->warmup + p->queries && !rc; i++) {
		rc = sq_query(c, i, c->keys[i], &rows, &bytes, &c->what);
		sq_log_mark(c);
	}
	c->end_ns = bench_now_ns();
	sq_log = NULL;
	c->rows_read = rows;
	c->bytes_read = bytes;
	c->err = rc;
	return NULL;
}

/* The bytes of page cache now: SQLite's CACHE_USED, or the plug-in's heap. */
static uint64_t sq_cache_bytes(struct sq_child *ch)
{
	uint64_t sum = 0;
	unsigned i;

	if (ch->config == SQ_LIBRECLAIM)
		return atomic_load_explicit(&ch->counter.held,
					    memory_order_relaxed);
	for (i = 0; i < ch->p->k; i++) {
		int cur = 0, hi = 0;

		if (sqlite3_db_status(ch->conn[i].db,
				      SQLITE_DBSTATUS_CACHE_USED, &cur, &hi,
				      0) == SQLITE_OK)
			sum += (uint64_t)cur;
	}
	return sum;
}

static void *sq_sampler_main(void *arg)
{
	struct sq_child *ch = arg;
	struct timespec ts;

	pthread_setname_np(pthread_self(), "sqlite-sample");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	while (!atomic_load_explicit(&ch->stop, memory_order_relaxed)) {
		uint64_t v = sq_cache_bytes(ch);

		if (v > ch->peak_cache)
			ch->peak_cache = v;
		ch->samples++;
		ts.tv_nsec += (long)SQ_SAMPLE_NS;
		if (ts.tv_nsec >= 1000000000l) {
			ts.tv_nsec -= 1000000000l;
			ts.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
	}
	return NULL;
}

static int sq_read_keys(const struct sq_params *p, unsigned i, uint32_t **out)
{
	size_t n = (size_t)p->warmup + p->queries;
	char path[PATH_MAX];
	uint32_t *keys;
	FILE *f;

	sq_keys_path(p, i, path, sizeof(path));
	keys = malloc(n * sizeof(*keys));
	if (!keys) {
		fprintf(stderr, "rcl-bench sqlite: out of memory\n");
		return -1;
	}
	f = fopen(path, "rb");
	if (!f || fread(keys, sizeof(*keys), n, f) != n) {
		fprintf(stderr, "rcl-bench sqlite: reading %s: %s\n", path,
			f ? "short file" : strerror(errno));
		if (f)
			fclose(f);
		free(keys);
		return -1;
	}
	fclose(f);
	*out = keys;
	return 0;
}

static int sq_install_plugin(struct sq_child *ch, struct rcl_domain **dp,
			     const struct rcl_allocator *alloc)
{
	struct rcl_domain_config dcfg = {
		.budget = ch->p->budget,
		.mode = RCL_CHARGE_STRICT,
	};
	struct rcl_sqlite_config scfg = { 0 };
	int ret;

	ret = rcl_domain_new(&dcfg, dp);
	if (ret) {
		fprintf(stderr, "rcl-bench sqlite: rcl_domain_new: %s\n",
			strerror(-ret));
		return -1;
	}
	ret = ch->p->reclaimer ? rcl_domain_reclaimer_start(*dp) : 0;
	if (ret) {
		fprintf(stderr, "rcl-bench sqlite: rcl_domain_reclaimer_start: %s\n",
			strerror(-ret));
		return -1;
	}
	scfg.domain = *dp;
	scfg.allocator = alloc;
	scfg.flags = 0;
	ret = rcl_sqlite_install(&scfg);
	if (ret) {
		fprintf(stderr, "rcl-bench sqlite: rcl_sqlite_install: %s\n",
			strerror(-ret));
		return -1;
	}
	return 0;
}

/* The child's main: argv = sqlite --child CONFIG K M W Q PAGE ROWS PREFIX. */
static int sq_child_main(int argc, char **argv)
{
	static struct sq_params p;
	static struct sq_child ch;
	struct rcl_allocator alloc = {
		.alloc = sq_alloc, .free = sq_free, .ctx = &ch.counter,
	};
	struct rcl_domain *d = NULL;
	struct bench_cpu_snap cpu1;
	sqlite3_int64 h0 = 0;
	uint64_t misses = 0, hits = 0, end = 0, rows = 0;
	double wall_s;
	char sql[128];
	unsigned i, c;
	int rc, ret = 1;

	if (argc != 11)
		return 2;
	for (c = 0; c <= SQ_PAGE_LOG; c++)
		if (!strcmp(argv[2], sq_config_names[c]))
			break;
	if (c > SQ_PAGE_LOG)
		return 2;
	p.k = (unsigned)strtoul(argv[3], NULL, 10);
	p.budget = strtoull(argv[4], NULL, 10);
	p.warmup = (unsigned)strtoul(argv[5], NULL, 10);
	p.queries = (unsigned)strtoul(argv[6], NULL, 10);
	p.page_size = (unsigned)strtoul(argv[7], NULL, 10);
	p.rows = strtoull(argv[8], NULL, 10);
	snprintf(p.prefix, sizeof(p.prefix), "%s", argv[9]);
	p.reclaimer = !strcmp(argv[10], "1");
	if (!p.k || p.k > SQ_MAX_DBS || !p.budget || !p.queries)
		return 2;
	ch.p = &p;
	ch.config = (enum sq_config)c;
	atomic_init(&ch.stop, false);
	for (i = 0; i < p.k; i++) {
		ch.conn[i].ch = &ch;
		ch.conn[i].idx = i;
		if (sq_read_keys(&p, i, &ch.conn[i].keys))
			return 1;
	}

	if (ch.config == SQ_LIBRECLAIM) {
		if (sq_install_plugin(&ch, &d, &alloc))
			return 1;
	}
	if (ch.config == SQ_PAGE_LOG) {
		const char *dir = getenv("RCL_BENCH_PAGE_LOG");

		if (!dir || !*dir || sq_log_install())
			return 1;
		for (i = 0; i < p.k; i++) {
			char path[PATH_MAX];

			snprintf(path, sizeof(path), "%s/pages-%u.bin", dir, i);
			ch.conn[i].log = fopen(path, "wbe");
			if (!ch.conn[i].log) {
				fprintf(stderr, "rcl-bench sqlite: %s: %s\n",
					path, strerror(errno));
				return 1;
			}
		}
	}
	rc = sqlite3_initialize();
	if (rc != SQLITE_OK) {
		fprintf(stderr, "rcl-bench sqlite: sqlite3_initialize: %s\n",
			sqlite3_errstr(rc));
		return 1;
	}
	for (i = 0; i < p.k; i++) {
		struct sq_conn *cn = &ch.conn[i];
		char path[PATH_MAX];

		sq_db_path(&p, i, path, sizeof(path));
		rc = sqlite3_open_v2(path, &cn->db,
				     SQLITE_OPEN_READONLY |
					     SQLITE_OPEN_FULLMUTEX,
				     NULL);
		if (rc != SQLITE_OK) {
			fprintf(stderr, "rcl-bench sqlite: open %s: %s\n", path,
				cn->db ? sqlite3_errmsg(cn->db)
				       : sqlite3_errstr(rc));
			goto out;
		}
		snprintf(sql, sizeof(sql), "PRAGMA cache_size = %lld",
			 ch.config == SQ_SPLIT || ch.config == SQ_PAGE_LOG
				 ? -(long long)(p.budget / p.k / 1024u)
				 : -SQ_LARGE_CACHE_KIB);
		if (sq_exec(cn->db, sql))
			goto out;
		rc = sqlite3_prepare_v3(cn->db,
					"SELECT payload FROM t WHERE k = ?1",
					-1, SQLITE_PREPARE_PERSISTENT,
					&cn->point, NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_prepare_v3(
				cn->db,
				"SELECT payload FROM t WHERE k BETWEEN ?1 AND ?1 + 9",
				-1, SQLITE_PREPARE_PERSISTENT, &cn->range,
				NULL);
		if (rc != SQLITE_OK) {
			fprintf(stderr, "rcl-bench sqlite: prepare: %s\n",
				sqlite3_errmsg(cn->db));
			goto out;
		}
	}
	if (ch.config == SQ_SOFT_LIMIT) {
		/* H0: SQLite's heap with empty caches, statements prepared. */
		for (i = 0; i < p.k; i++)
			sqlite3_db_release_memory(ch.conn[i].db);
		h0 = sqlite3_memory_used();
		if (h0 <= 0) {
			fprintf(stderr, "rcl-bench sqlite: sqlite3_memory_used() is 0: SQLite without memory statistics, no soft heap limit\n");
			goto out;
		}
		sqlite3_soft_heap_limit64((sqlite3_int64)p.budget + h0);
	}

	bench_barrier_init(&ch.bar, p.k);
	if (pthread_create(&ch.sampler, NULL, sq_sampler_main, &ch)) {
		fprintf(stderr, "rcl-bench sqlite: cannot create a thread\n");
		goto out;
	}
	for (i = 0; i < p.k; i++)
		if (pthread_create(&ch.conn[i].tid, NULL, sq_conn_main,
				   &ch.conn[i])) {
			fprintf(stderr, "rcl-bench sqlite: cannot create a thread\n");
			_exit(1);	/* the others wait at the barrier */
		}
	for (i = 0; i < p.k; i++)
		pthread_join(ch.conn[i].tid, NULL);
	bench_cpu_snapshot(&cpu1);
	atomic_store(&ch.stop, true);
	pthread_join(ch.sampler, NULL);

	for (i = 0; i < p.k; i++) {
		struct sq_conn *cn = &ch.conn[i];
		int cur = 0, hi = 0;

		if (cn->err) {
			fprintf(stderr, "rcl-bench sqlite: %s, database %u: %s: %s\n",
				sq_config_names[c], i, cn->what,
				sqlite3_errstr(cn->err));
			goto out;
		}
		sqlite3_db_status(cn->db, SQLITE_DBSTATUS_CACHE_MISS, &cur,
				  &hi, 0);
		misses += (uint64_t)cur;
		sqlite3_db_status(cn->db, SQLITE_DBSTATUS_CACHE_HIT, &cur, &hi,
				  0);
		hits += (uint64_t)cur;
		if (cn->end_ns > end)
			end = cn->end_ns;
		rows += cn->rows_read;
	}
	wall_s = (double)(end - ch.t0_ns) / 1e9;
	fprintf(stderr, "  %-10s misses per database:", sq_config_names[c]);
	for (i = 0; i < p.k; i++) {
		int cur = 0, hi = 0;

		sqlite3_db_status(ch.conn[i].db, SQLITE_DBSTATUS_CACHE_MISS,
				  &cur, &hi, 0);
		fprintf(stderr, " %d (%.2f s)", cur,
			(double)(ch.conn[i].end_ns - ch.t0_ns) / 1e9);
	}
	fputc('\n', stderr);

	fprintf(stderr, "  %-10s %.2f s timed, %.0f queries/s, %" PRIu64 " misses, %" PRIu64 " rows; peak cache %" PRIu64 " KiB (%" PRIu64 " samples), others took %.0f%% of the CPUs",
		sq_config_names[c], wall_s,
		(double)p.k * p.queries / wall_s, misses, rows,
		ch.peak_cache >> 10, ch.samples,
		100.0 * bench_cpu_other(&ch.cpu0, &cpu1));
	if (ch.config == SQ_SOFT_LIMIT)
		fprintf(stderr, "; H0 %lld KiB, heap high-water %lld KiB",
			(long long)h0 >> 10,
			(long long)sqlite3_memory_highwater(0) >> 10);
	if (ch.config == SQ_LIBRECLAIM) {
		fprintf(stderr, "; allocator high-water %llu KiB, %llu allocs",
			(unsigned long long)atomic_load(&ch.counter.peak) >> 10,
			(unsigned long long)atomic_load(&ch.counter.allocs));
		{
			struct rcl_sqlite_stats st;

			if (rcl_sqlite_stats(&st) == 0)
				fprintf(stderr, "; plug-in: %" PRIu64 " caches, %" PRIu64 " pages, %" PRIu64 " pinned, %" PRIu64 " charged, %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64 " evictions, %" PRIu64 " refault activations",
					st.caches, st.pages, st.pinned,
					st.charged, st.hits, st.misses,
					st.evictions, st.refault_activations);
			fprintf(stderr, "; %s", p.reclaimer ? "background reclaimer" : "direct reclaim only");
		}
	}
	fputc('\n', stderr);

	for (i = 0; i < p.k; i++) {
		FILE *f = ch.conn[i].log;

		ch.conn[i].log = NULL;
		if (f && fclose(f)) {
			fprintf(stderr, "rcl-bench sqlite: page log %u: %s\n", i,
				strerror(errno));
			goto out;
		}
	}
	bench_json_begin("sqlite");
	bench_json_uint("databases", p.k);
	bench_json_str("config", sq_config_names[c]);
	bench_json_uint("queries", (unsigned long long)p.k * p.queries);
	bench_json_dbl("queries_per_s", 1, (double)p.k * p.queries / wall_s);
	bench_json_uint("cache_misses", misses);
	bench_json_dbl("miss_ratio", 4,
		       hits + misses ? (double)misses / (double)(hits + misses)
				     : 0.0);
	bench_json_uint("peak_cache_bytes", ch.peak_cache);
	bench_json_uint("rss_peak_bytes", sq_rss_peak());
	if (ch.config == SQ_PAGE_LOG)
		bench_json_uint("split_pages", atomic_load(&sq_log_split_pages));
	bench_json_end();
	fflush(stdout);
	ret = 0;
out:
	for (i = 0; i < p.k; i++) {
		if (ch.conn[i].log)
			fclose(ch.conn[i].log);
		sqlite3_finalize(ch.conn[i].point);
		sqlite3_finalize(ch.conn[i].range);
		if (ch.conn[i].db && sqlite3_close(ch.conn[i].db) != SQLITE_OK) {
			fprintf(stderr, "rcl-bench sqlite: sqlite3_close: %s\n",
				sqlite3_errmsg(ch.conn[i].db));
			ret = 1;
		}
		free(ch.conn[i].keys);
	}
	sqlite3_shutdown();
	if (d) {
		int r;

		rcl_domain_reclaimer_stop(d);
		r = rcl_domain_free(d);
		if (r) {
			fprintf(stderr, "rcl-bench sqlite: rcl_domain_free after sqlite3_shutdown(): %s\n",
				strerror(-r));
			ret = 1;
		}
		if (atomic_load(&ch.counter.held)) {
			fprintf(stderr, "rcl-bench sqlite: the plug-in still holds %llu bytes of its allocator after sqlite3_shutdown()\n",
				(unsigned long long)atomic_load(&ch.counter.held));
			ret = 1;
		}
	}
	return ret;
}

/* ------------------------------------------------------------------------- */
/* The parent: traces, databases, the three children                          */
/* ------------------------------------------------------------------------- */

static const char *sq_traces_dir(void)
{
	const char *d = getenv("RCL_TRACES_DIR");

	if (d && *d)
		return d;
#ifdef RCL_BENCH_TRACES_DIR
	return RCL_BENCH_TRACES_DIR;
#else
	return "../shared/traces";
#endif
}

/*
 * Decode trace @i and write database @i's key stream: W + Q keys, id mod
 * rows, the trace replayed from its start if it is shorter.
 */
static int sq_write_keys(const struct sq_params *p, unsigned i,
			 const char *dir)
{
	struct trace_options topt = { .format = sq_traces[i].format,
				      .csv_key_col = 1, .csv_sep = ',' };
	size_t n = (size_t)p->warmup + p->queries, j;
	uint64_t seen = 0;
	char path[PATH_MAX], err[512];
	struct trace t;
	uint32_t *keys;
	FILE *f;
	int ret = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, sq_traces[i].path);
	if (trace_load(path, &topt, &t, err, sizeof(err))) {
		fprintf(stderr, "rcl-bench sqlite: %s\n", err);
		return -1;
	}
	if (!t.nr_requests) {
		fprintf(stderr, "rcl-bench sqlite: %s: no requests\n", path);
		trace_free(&t);
		return -1;
	}
	keys = malloc(n * sizeof(*keys));
	if (!keys) {
		trace_free(&t);
		return -1;
	}
	for (j = 0; j < n; j++) {
		keys[j] = (uint32_t)(t.ids[j % t.nr_requests] % p->rows);
		/* ids are numbered by first appearance: the largest + 1 */
		if (t.ids[j % t.nr_requests] >= seen)
			seen = (uint64_t)t.ids[j % t.nr_requests] + 1;
	}
	fprintf(stderr, "  trace %-15s %zu requests, %" PRIu32 " unique keys; the %zu queries%s use %" PRIu64 " of them%s\n",
		sq_traces[i].name, t.nr_requests, t.nr_unique, n,
		n > t.nr_requests ? " (the trace replayed from its start)" : "",
		seen, seen > p->rows ? ", folded onto the rows" : "");
	sq_keys_path(p, i, path, sizeof(path));
	f = fopen(path, "wb");
	if (!f || fwrite(keys, sizeof(*keys), n, f) != n) {
		fprintf(stderr, "rcl-bench sqlite: writing %s: %s\n", path,
			strerror(errno));
	} else {
		ret = 0;
	}
	if (f && fclose(f) && !ret) {
		fprintf(stderr, "rcl-bench sqlite: writing %s: %s\n", path,
			strerror(errno));
		ret = -1;
	}
	free(keys);
	trace_free(&t);
	return ret;
}

static uint64_t sq_gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* A multiplier coprime to @n near @f x @n: j -> j * A mod n permutes. */
static uint64_t sq_coprime_near(uint64_t n, double f)
{
	uint64_t a = (uint64_t)((double)n * f);

	if (n < 3)
		return 1;
	if (a < 1)
		a = 1;
	while (sq_gcd(a, n) != 1)
		a++;
	return a % n ? a : 1;
}

/* Build database @i with @rows rows; its size in bytes in *@bytes. */
static int sq_build_db(const struct sq_params *p, unsigned i, uint64_t rows,
		       uint64_t *bytes)
{
	unsigned char payload[SQ_PAYLOAD];
	char path[PATH_MAX], sql[128];
	sqlite3_stmt *ins = NULL, *pc = NULL;
	sqlite3 *db = NULL;
	uint64_t j, a = sq_coprime_near(rows, 0.618), s = 0x9E3779B97F4A7C15ull + i;
	int rc;

	sq_db_path(p, i, path, sizeof(path));
	unlink(path);
	rc = sqlite3_open_v2(path, &db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "rcl-bench sqlite: create %s: %s\n", path,
			db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return -1;
	}
	snprintf(sql, sizeof(sql), "PRAGMA page_size = %u", p->page_size);
	if (sq_exec(db, sql) || sq_exec(db, "PRAGMA journal_mode = OFF") ||
	    sq_exec(db, "PRAGMA synchronous = OFF") ||
	    sq_exec(db, "PRAGMA cache_size = -65536") ||
	    sq_exec(db, "CREATE TABLE t(k INTEGER NOT NULL, payload BLOB NOT NULL)") ||
	    sq_exec(db, "BEGIN"))
		goto fail;
	rc = sqlite3_prepare_v2(db, "INSERT INTO t(k, payload) VALUES (?1, ?2)",
				-1, &ins, NULL);
	if (rc != SQLITE_OK)
		goto fail_db;
	for (j = 0; j < rows; j++) {
		uint64_t k = j * a % rows;	/* rows < 2^32 */
		size_t b;

		for (b = 0; b < SQ_PAYLOAD; b += 8) {
			uint64_t r = bench_rng_next(&s);

			memcpy(payload + b, &r,
			       SQ_PAYLOAD - b < 8 ? SQ_PAYLOAD - b : 8);
		}
		sqlite3_bind_int64(ins, 1, (sqlite3_int64)k);
		sqlite3_bind_blob(ins, 2, payload, SQ_PAYLOAD, SQLITE_STATIC);
		rc = sqlite3_step(ins);
		sqlite3_reset(ins);
		if (rc != SQLITE_DONE)
			goto fail_db;
	}
	sqlite3_finalize(ins);
	ins = NULL;
	if (sq_exec(db, "COMMIT") ||
	    sq_exec(db, "CREATE UNIQUE INDEX t_k ON t(k)"))
		goto fail;
	rc = sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &pc, NULL);
	if (rc != SQLITE_OK || sqlite3_step(pc) != SQLITE_ROW)
		goto fail_db;
	*bytes = (uint64_t)sqlite3_column_int64(pc, 0) * p->page_size;
	sqlite3_finalize(pc);
	if (sqlite3_close(db) != SQLITE_OK) {
		fprintf(stderr, "rcl-bench sqlite: close %s\n", path);
		return -1;
	}
	return 0;
fail_db:
	fprintf(stderr, "rcl-bench sqlite: building %s: %s\n", path,
		sqlite3_errmsg(db));
fail:
	sqlite3_finalize(ins);
	sqlite3_finalize(pc);
	sqlite3_close(db);
	return -1;
}

/*
 * Build the K databases, each at least SQ_DB_X * M / K bytes: the row count
 * from a guess of the bytes per row, corrected once from the first file's
 * size if it came out short.
 */
static int sq_build_dbs(struct sq_params *p)
{
	uint64_t target = SQ_DB_X * p->budget / p->k, bytes = 0, total = 0;
	unsigned i;

	p->rows = target / SQ_ROW_BYTES_GUESS + 1;
	if (sq_build_db(p, 0, p->rows, &bytes))
		return -1;
	if (bytes < target) {
		p->rows = (uint64_t)((double)p->rows * (double)target /
				     (double)bytes * 1.01) + 1;
		if (sq_build_db(p, 0, p->rows, &bytes))
			return -1;
	}
	total = bytes;
	for (i = 1; i < p->k; i++) {
		if (sq_build_db(p, i, p->rows, &bytes))
			return -1;
		total += bytes;
	}
	fprintf(stderr, "  %u database%s of %" PRIu64 " rows, %" PRIu64 " KiB each (%" PRIu64 " KiB, %.2fx the budget), page size %u\n",
		p->k, bench_plural(p->k), p->rows, bytes >> 10, total >> 10,
		(double)total / (double)p->budget, p->page_size);
	return 0;
}

static void sq_remove_files(const struct sq_params *p)
{
	char path[PATH_MAX];
	unsigned i;

	for (i = 0; i < p->k; i++) {
		sq_db_path(p, i, path, sizeof(path));
		unlink(path);
		sq_keys_path(p, i, path, sizeof(path));
		unlink(path);
	}
}

/* The number after "key": in a JSON line; 0 if absent. */
static double sq_field(const char *line, const char *key)
{
	char pat[64];
	const char *s;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	s = strstr(line, pat);
	return s ? strtod(s + strlen(pat), NULL) : 0.0;
}

/* Run configuration @c in a child process; its JSON line into @r. */
static int sq_run_child(const struct sq_params *p, enum sq_config c,
			struct sq_result *r)
{
	char a[7][PATH_MAX];
	char *argv[13];
	size_t len = 0;
	ssize_t n;
	int fds[2], status;
	pid_t pid;

	snprintf(a[0], sizeof(a[0]), "%u", p->k);
	snprintf(a[1], sizeof(a[1]), "%" PRIu64, p->budget);
	snprintf(a[2], sizeof(a[2]), "%u", p->warmup);
	snprintf(a[3], sizeof(a[3]), "%u", p->queries);
	snprintf(a[4], sizeof(a[4]), "%u", p->page_size);
	snprintf(a[5], sizeof(a[5]), "%" PRIu64, p->rows);
	snprintf(a[6], sizeof(a[6]), "%s", p->prefix);
	argv[0] = "rcl-bench";
	argv[1] = "sqlite";
	argv[2] = "--child";
	argv[3] = (char *)sq_config_names[c];
	argv[4] = a[0];
	argv[5] = a[1];
	argv[6] = a[2];
	argv[7] = a[3];
	argv[8] = a[4];
	argv[9] = a[5];
	argv[10] = a[6];
	argv[11] = p->reclaimer ? "1" : "0";
	argv[12] = NULL;

	memset(r, 0, sizeof(*r));
	if (pipe(fds)) {
		perror("rcl-bench sqlite: pipe");
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("rcl-bench sqlite: fork");
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execv("/proc/self/exe", argv);
		perror("rcl-bench sqlite: exec /proc/self/exe");
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], r->line + len, sizeof(r->line) - 1 - len)) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n > 0)
			len += (size_t)n;
	r->line[len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("rcl-bench sqlite: waitpid");
			return -1;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "rcl-bench sqlite: %s: killed by signal %d\n",
				sq_config_names[c], WTERMSIG(status));
		else
			fprintf(stderr, "rcl-bench sqlite: %s: exit status %d\n",
				sq_config_names[c], WEXITSTATUS(status));
		return -1;
	}
	if (strncmp(r->line, "{\"bench\":\"sqlite\"", 17) ||
	    !strchr(r->line, '\n')) {
		fprintf(stderr, "rcl-bench sqlite: %s: no JSON line from the child\n",
			sq_config_names[c]);
		return -1;
	}
	r->ok = true;
	r->queries = (uint64_t)sq_field(r->line, "queries");
	r->queries_per_s = sq_field(r->line, "queries_per_s");
	r->cache_misses = (uint64_t)sq_field(r->line, "cache_misses");
	r->miss_ratio = sq_field(r->line, "miss_ratio");
	r->peak_cache_bytes = (uint64_t)sq_field(r->line, "peak_cache_bytes");
	r->rss_peak_bytes = (uint64_t)sq_field(r->line, "rss_peak_bytes");
	return 0;
}

/*
 * --page-log DIR: run the page-log child, which writes DIR/pages-I.bin (the
 * page number of every xFetch of connection I, warm-up and timed queries,
 * each query ended by SQ_PAGE_LOG_MARK), then write DIR/meta.json: what
 * tools/sqlite-bound.py needs to replay them (the warm-up length, split's
 * cache size in pages) and the measured misses it is checked against.
 */
static int sq_page_log(const struct sq_params *p, const char *dir,
		       const struct sq_result *res)
{
	struct sq_result r;
	char path[PATH_MAX];
	unsigned i, c;
	FILE *f;

	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "rcl-bench sqlite: --page-log %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	if (setenv("RCL_BENCH_PAGE_LOG", dir, 1) ||
	    sq_run_child(p, SQ_PAGE_LOG, &r))
		return -1;
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	f = fopen(path, "we");
	if (!f) {
		fprintf(stderr, "rcl-bench sqlite: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	fprintf(f, "{\"databases\":%u,\"warmup\":%u,\"queries\":%u,\"budget\":%" PRIu64 ",\"page_size\":%u,\"split_pages\":%.0f,\"traces\":[",
		p->k, p->warmup, p->queries, p->budget, p->page_size,
		sq_field(r.line, "split_pages"));
	for (i = 0; i < p->k; i++)
		fprintf(f, "%s\"%s\"", i ? "," : "", sq_traces[i].name);
	fputs("]", f);
	for (c = 0; c < SQ_NR_CONFIGS; c++)
		if (res[c].ok)
			fprintf(f, ",\"%s_cache_misses\":%" PRIu64,
				c == SQ_SOFT_LIMIT ? "soft_limit"
						   : sq_config_names[c],
				res[c].cache_misses);
	fputs("}\n", f);
	if (fclose(f)) {
		fprintf(stderr, "rcl-bench sqlite: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	fprintf(stderr, "  page log in %s (pages-0.bin ..; meta.json); tools/sqlite-bound.py %s replays it\n",
		dir, dir);
	return 0;
}

/* "met" or "MISSED", for the targets of the issue. */
static const char *sq_met(bool ok)
{
	return ok ? "met" : "MISSED";
}

static void sq_print_targets(const struct sq_params *p,
			     const struct sq_result *res)
{
	const struct sq_result *s = &res[SQ_SPLIT], *l = &res[SQ_SOFT_LIMIT],
			       *r = &res[SQ_LIBRECLAIM];
	uint64_t cap = p->budget + (uint64_t)p->k * p->page_size;
	double best;

	if (!r->ok)
		return;
	printf("\nTargets (libreclaim against the baselines):\n");
	if (p->k > 1) {
		best = s->queries_per_s > l->queries_per_s ? s->queries_per_s
							   : l->queries_per_s;
		printf("  cache_misses %+.1f%% against split (target <= -20%%): %s\n",
		       100.0 * ((double)r->cache_misses / (double)s->cache_misses - 1.0),
		       sq_met((double)r->cache_misses <= 0.8 * (double)s->cache_misses));
		printf("  cache_misses %+.1f%% against soft-limit (target <= 0%%): %s\n",
		       100.0 * ((double)r->cache_misses / (double)l->cache_misses - 1.0),
		       sq_met(r->cache_misses <= l->cache_misses));
		printf("  queries_per_s %.3fx the faster baseline (target >= 0.9x): %s\n",
		       r->queries_per_s / best, sq_met(r->queries_per_s >= 0.9 * best));
	} else {
		printf("  cache_misses %+.1f%% against split (target within 5%%): %s\n",
		       100.0 * ((double)r->cache_misses / (double)s->cache_misses - 1.0),
		       sq_met((double)r->cache_misses <= 1.05 * (double)s->cache_misses &&
			      (double)r->cache_misses >= 0.95 * (double)s->cache_misses));
		printf("  queries_per_s %.3fx split's (target >= 0.95x): %s\n",
		       r->queries_per_s / s->queries_per_s,
		       sq_met(r->queries_per_s >= 0.95 * s->queries_per_s));
	}
	printf("  peak_cache_bytes %" PRIu64 " (target <= M + one page per connection = %" PRIu64 "): %s\n",
	       r->peak_cache_bytes, cap, sq_met(r->peak_cache_bytes <= cap));
}

static void sq_print_table(const struct sq_params *p,
			   const struct sq_result *res)
{
	unsigned c;

	printf("rcl-bench sqlite: libreclaim %s, SQLite %s; %u database%s of %" PRIu64 " rows, budget M %" PRIu64 " KiB,\n"
	       "%u timed queries per connection after %u warm-up queries, one in %u a range of %u keys\n\n",
	       rcl_version(), sqlite3_libversion(), p->k, bench_plural(p->k),
	       p->rows, p->budget >> 10, p->queries, p->warmup,
	       SQ_RANGE_EVERY, SQ_RANGE_LEN);
	printf("%-12s %10s %12s %12s %10s %14s %14s\n", "config", "queries",
	       "queries/s", "cache misses", "miss ratio", "peak cache KiB",
	       "peak RSS KiB");
	for (c = 0; c < SQ_NR_CONFIGS; c++) {
		const struct sq_result *r = &res[c];

		if (!r->ok) {
			printf("%-12s %10s\n", sq_config_names[c], "(failed)");
			continue;
		}
		printf("%-12s %10" PRIu64 " %12.0f %12" PRIu64 " %10.4f %14" PRIu64 " %14" PRIu64 "\n",
		       sq_config_names[c], r->queries, r->queries_per_s,
		       r->cache_misses, r->miss_ratio,
		       r->peak_cache_bytes >> 10, r->rss_peak_bytes >> 10);
	}
	sq_print_targets(p, res);
}

int cmd_sqlite(int argc, char **argv)
{
	static struct sq_params p;
	struct sq_result res[SQ_NR_CONFIGS];
	const char *dir = NULL, *tdir;
	char **rest;
	uint64_t budget = 0;
	unsigned queries = 0, k = SQ_MAX_DBS, page_size = SQ_PAGE_SIZE, i, c;
	bool json = false, shortrun = false, failed = false, reclaimer = false;
	const char *page_log = NULL;
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_FLAG("--short", &shortrun),
		BENCH_OPT_FLAG("--reclaimer", &reclaimer),
		BENCH_OPT_UINT("--databases", &k, 1, SQ_MAX_DBS),
		BENCH_OPT_UINT("--queries", &queries, 10, 100000000),
		BENCH_OPT_UINT("--page-size", &page_size, 512, 65536),
		BENCH_OPT_END,
	};
	int ret, nrest = 1;

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return sq_child_main(argc, argv);

	/* --budget SIZE and --dir DIR take words the harness does not parse. */
	rest = calloc((size_t)argc + 1, sizeof(*rest));
	if (!rest)
		return 1;
	rest[0] = argv[0];
	for (i = 1; i < (unsigned)argc; i++) {
		const char *a = argv[i], *v = NULL;
		bool is_budget = !strncmp(a, "--budget", 8) &&
				 (a[8] == '\0' || a[8] == '=');
		bool is_dir = !strncmp(a, "--dir", 5) &&
			      (a[5] == '\0' || a[5] == '=');
		bool is_log = !strncmp(a, "--page-log", 10) &&
			      (a[10] == '\0' || a[10] == '=');

		if (!is_budget && !is_dir && !is_log) {
			rest[nrest++] = argv[i];
			continue;
		}
		v = strchr(a, '=');
		if (v)
			v++;
		else if (i + 1 < (unsigned)argc)
			v = argv[++i];
		if (!v || !*v ||
		    (is_budget && ((budget = sq_parse_size(v)) < (64u << 10) ||
					 budget > (64ull << 30)))) {
			fprintf(stderr, "rcl-bench sqlite: %s needs %s\n",
				is_budget ? "--budget"
				: is_dir  ? "--dir"
					  : "--page-log",
				is_budget ? "a size from 64K to 64G (e.g. 16M)"
					  : "a directory");
			bench_usage(stderr);
			free(rest);
			return 2;
		}
		if (is_dir)
			dir = v;
		if (is_log)
			page_log = v;
	}
	ret = bench_parse_opts(nrest, rest, opts);
	free(rest);
	if (ret != BENCH_CONTINUE)
		return ret;
	if (page_size & (page_size - 1)) {
		fprintf(stderr, "rcl-bench sqlite: --page-size must be a power of two\n");
		return 2;
	}

	p.k = k;
	p.budget = budget ? budget : shortrun ? SQ_SHORT_BUDGET : SQ_BUDGET;
	p.queries = queries ? queries : shortrun ? SQ_SHORT_QUERIES : SQ_QUERIES;
	p.warmup = p.queries / SQ_WARMUP_DIV;
	p.page_size = page_size;
	p.reclaimer = reclaimer;
	if (!dir) {
		dir = getenv("TMPDIR");
		if (!dir || !*dir)
			dir = "/tmp";
	}
	if (strlen(dir) > sizeof(p.prefix) - 64) {
		fprintf(stderr, "rcl-bench sqlite: --dir is too long\n");
		return 2;
	}
	snprintf(p.prefix, sizeof(p.prefix), "%s/rcl-bench-sqlite-%ld", dir,
		 (long)getpid());

	tdir = sq_traces_dir();
	for (i = 0; i < p.k; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", tdir, sq_traces[i].path);
		if (access(path, R_OK)) {
			fprintf(stderr, "rcl-bench sqlite: %s: %s; skipped (set RCL_TRACES_DIR)\n",
				path, strerror(errno));
			return 77;
		}
	}

	fprintf(stderr, "rcl-bench sqlite: libreclaim %s, SQLite %s, %u database%s, budget %" PRIu64 " KiB, %u + %u queries per connection, in %s\n",
		rcl_version(), sqlite3_libversion(), p.k, bench_plural(p.k),
		p.budget >> 10, p.warmup, p.queries, dir);
	if (sq_build_dbs(&p))
		goto fail;
	for (i = 0; i < p.k; i++)
		if (sq_write_keys(&p, i, tdir))
			goto fail;

	for (c = 0; c < SQ_NR_CONFIGS; c++) {
		if (sq_run_child(&p, (enum sq_config)c, &res[c]))
			failed = true;
		else if (json)
			fputs(res[c].line, stdout);
	}
	if (page_log && sq_page_log(&p, page_log, res))
		failed = true;
	sq_remove_files(&p);
	if (!json)
		sq_print_table(&p, res);
	return failed ? 1 : 0;
fail:
	sq_remove_files(&p);
	return 1;
}
