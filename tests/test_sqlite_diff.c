/* SPDX-License-Identifier: MIT */
/*
 * Differential test: SQLite's own page cache against libreclaim-sqlite.
 *
 * SQLite's page cache is process-global (sqlite3_config() before
 * sqlite3_initialize()), so the parent forks twice: the reference child
 * runs the script on SQLite's default cache, the plug-in child installs
 * libreclaim-sqlite on a small domain and runs the same script.  Each
 * child writes one line per statement (the step, the result code and a
 * 64-bit hash of every row it returned) and, at the end, a hash of every
 * table's content and the answer of PRAGMA integrity_check; the parent
 * compares the two files line by line and reports the first difference.
 *
 * The script, from the seed: per thread, two database files; connection A
 * opens the first and ATTACHes the second as "aux", connection B opens the
 * second directly.  Statements: inserts (with rows long enough for
 * overflow pages), updates, deletes, point and range selects, aggregates,
 * transactions that commit or roll back, savepoints released or rolled
 * back, CREATE/DROP TABLE, VACUUM, PRAGMA cache_size changes,
 * sqlite3_db_release_memory(), and budget changes (plug-in child only:
 * rcl_domain_set_budget() to a small or the normal budget, which forces
 * reclaim while other threads' statements run).  The plug-in child also
 * runs the domain's background reclaimer and, with several threads, a
 * thread that flips the budget every millisecond.  Threads use separate
 * files, so each thread's results are deterministic.
 *
 * Usage: test_sqlite_diff [--seed N[,N...]] [--threads T] [--steps S]
 *			   [--mode strict|soft] [--multithread]
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include <reclaim/domain.h>
#include <reclaim/sqlite.h>

#include "test_util.h"

/* Budgets: the normal one holds part of the data; the small ones force
 * reclaim.  A strict domain's small budget must still hold what SQLite
 * pins at once (the dirty pages of the largest transaction, VACUUM's
 * copy), or a charge fails with SQLITE_NOMEM and the results differ. */
static unsigned BUDGET_NORMAL = 768u << 10;
static unsigned BUDGET_STRICT_SMALL = 384u << 10;
static unsigned BUDGET_SOFT_SMALL = 64u << 10;

struct opts {
	uint64_t seed;
	unsigned threads;
	unsigned steps;
	bool soft;
	bool multithread;
};

static struct opts g_opt = { 1, 1, 400, false, false };
static const char *g_dir;
static bool g_plugin;
static struct rcl_domain *g_domain;
static atomic_bool g_stop;
static atomic_ulong g_budget_changes;

static uint64_t small_budget(void);
static uint64_t normal_budget(void);

/* ------------------------------------------------------------------------- */
/* Output: one line per statement, in a per-thread buffer                     */
/* ------------------------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, cap;
};

static void out_printf(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		T_CHECK(n >= 0);
		if ((size_t)n < o->cap - o->len)
			break;
		o->cap = o->cap * 2 + (size_t)n + 256;
		o->buf = realloc(o->buf, o->cap);
		T_CHECK(o->buf);
	}
	o->len += (size_t)n;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n--) {
		h ^= *s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

struct worker {
	unsigned id;
	uint64_t rng;
	sqlite3 *a, *b;		/* a: db0 + aux (db1); b: db1 */
	struct out out;
	unsigned step;
	unsigned nrows;		/* ids handed out so far, per table (approx) */
	bool in_tx;		/* A has a transaction open: B stays idle */
	bool t3;		/* table t3 exists */
};

static unsigned rnd(struct worker *w, unsigned n)
{
	return n ? (unsigned)(rng_next(&w->rng) % n) : 0;
}

/* Run one statement (or several, without rows) and log rc + rows' hash. */
static int run(struct worker *w, sqlite3 *db, const char *tag, const char *sql)
{
	sqlite3_stmt *st;
	const char *tail = sql;
	uint64_t h = 0xcbf29ce484222325ull;
	unsigned rows = 0;
	int rc = SQLITE_OK;

	while (tail && *tail) {
		rc = sqlite3_prepare_v2(db, tail, -1, &st, &tail);
		if (rc != SQLITE_OK || !st)
			break;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int i, n = sqlite3_column_count(st);

			rows++;
			for (i = 0; i < n; i++) {
				const unsigned char *t = sqlite3_column_text(st, i);
				int len = sqlite3_column_bytes(st, i);

				h = fnv(h, t ? (const void *)t : "\1NULL", t ? (size_t)len : 5);
				h = fnv(h, "|", 1);
			}
			h = fnv(h, "\n", 1);
		}
		sqlite3_finalize(st);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
		if (rc != SQLITE_OK)
			break;
	}
	out_printf(&w->out, "t%u s%u %s rc=%d rows=%u h=%016" PRIx64 "\n", w->id,
		   w->step, tag, rc, rows, h);
	return rc;
}

static void sql(struct worker *w, sqlite3 *db, const char *tag, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = sqlite3_vmprintf(fmt, ap);
	va_end(ap);
	T_CHECK(s);
	run(w, db, tag, s);
	sqlite3_free(s);
}

static void open_dbs(struct worker *w)
{
	char p0[512], p1[512];

	snprintf(p0, sizeof(p0), "%s/diff-%u-0.db", g_dir, w->id);
	snprintf(p1, sizeof(p1), "%s/diff-%u-1.db", g_dir, w->id);
	T_EQ(sqlite3_open(p0, &w->a), SQLITE_OK);
	T_EQ(sqlite3_open(p1, &w->b), SQLITE_OK);
	sqlite3_busy_timeout(w->a, 2000);
	sqlite3_busy_timeout(w->b, 2000);
	sql(w, w->a, "attach", "ATTACH %Q AS aux", p1);
	/* Durability is not under test: no fsync, same results. */
	run(w, w->a, "sync", "PRAGMA main.synchronous=OFF; PRAGMA aux.synchronous=OFF");
	run(w, w->b, "sync", "PRAGMA synchronous=OFF");
}

/* A random text value: short, or long enough to need overflow pages. */
static char *value(struct worker *w)
{
	unsigned len = rnd(w, 8) == 0 ? 1000 + rnd(w, 4000) : 1 + rnd(w, 120);
	char *s = malloc(len + 1);
	unsigned i;

	T_CHECK(s);
	for (i = 0; i < len; i++)
		s[i] = (char)('a' + rnd(w, 26));
	s[len] = 0;
	return s;
}

static const char *table(struct worker *w, sqlite3 **db)
{
	switch (rnd(w, w->in_tx ? 3 : 4)) {
	case 0:
	case 1:
		*db = w->a;
		return "main.t1";
	case 2:
		*db = w->a;
		return "aux.t2";
	default:
		*db = w->b;
		return "main.t2";	/* the same table, through connection B */
	}
}

static void op_dml(struct worker *w)
{
	sqlite3 *db;
	const char *t = table(w, &db);
	unsigned n = w->nrows + 1, i, k;
	char *v;

	switch (rnd(w, 9)) {
	case 0:
	case 1:
	case 2:
		k = 1 + rnd(w, 20);
		for (i = 0; i < k; i++) {
			v = value(w);
			sql(w, db, "insert", "INSERT OR REPLACE INTO %s(id,k,v) VALUES(%u,%u,%Q)",
			    t, 1 + rnd(w, n + 50), rnd(w, 1000), v);
			free(v);
		}
		w->nrows += k;
		break;
	case 3:
		v = value(w);
		i = rnd(w, n);
		k = i + rnd(w, 10);
		sql(w, db, "update", "UPDATE %s SET v=%Q, k=k+1 WHERE id BETWEEN %u AND %u",
		    t, v, i, k);
		free(v);
		break;
	case 4:
		i = rnd(w, n);
		k = i + rnd(w, 8);
		sql(w, db, "delete", "DELETE FROM %s WHERE id BETWEEN %u AND %u", t, i, k);
		break;
	case 5:
		sql(w, db, "point", "SELECT id,k,v FROM %s WHERE id=%u", t, rnd(w, n));
		break;
	case 6:
		i = rnd(w, 1000);
		k = i + rnd(w, 60);
		sql(w, db, "range", "SELECT id,k,length(v),substr(v,1,20) FROM %s WHERE k BETWEEN %u AND %u ORDER BY k,id",
		    t, i, k);
		break;
	case 7:
		sql(w, db, "agg", "SELECT count(*), sum(k), sum(length(v)), max(id) FROM %s", t);
		break;
	default:
		sql(w, db, "scan", "SELECT id, substr(v,-5) FROM %s WHERE id %% 7 = %u ORDER BY id DESC LIMIT 50",
		    t, rnd(w, 7));
		break;
	}
}

static void op_tx(struct worker *w)
{
	sqlite3 *db = rnd(w, 3) ? w->a : w->b;
	unsigned k = 1 + rnd(w, 12), i;

	if (rnd(w, 2)) {
		w->in_tx = true;
		run(w, db, "begin", "BEGIN");
		for (i = 0; i < k; i++) {
			if (db == w->a)
				op_dml(w);
			else {
				char *v = value(w);

				sql(w, db, "insert", "INSERT OR REPLACE INTO t2(id,k,v) VALUES(%u,%u,%Q)",
				    1 + rnd(w, w->nrows + 50), rnd(w, 1000), v);
				free(v);
			}
		}
		run(w, db, "end", rnd(w, 3) ? "COMMIT" : "ROLLBACK");
		w->in_tx = false;
	} else {
		w->in_tx = true;
		run(w, w->a, "savepoint", "SAVEPOINT sp1");
		for (i = 0; i < k; i++) {
			op_dml(w);
			if (i == k / 2)
				run(w, w->a, "savepoint", "SAVEPOINT sp2");
		}
		run(w, w->a, "sp2", rnd(w, 2) ? "ROLLBACK TO sp2" : "RELEASE sp2");
		run(w, w->a, "sp1", rnd(w, 2) ? "ROLLBACK TO sp1; RELEASE sp1" : "RELEASE sp1");
		w->in_tx = false;
	}
}

static void op_misc(struct worker *w)
{
	sqlite3 *db;
	int n;

	switch (rnd(w, 8)) {
	case 0:
		n = rnd(w, 2) ? (int)(5 + rnd(w, 400)) : -(int)(16 + rnd(w, 2000));
		sql(w, rnd(w, 2) ? w->a : w->b, "cache_size", "PRAGMA cache_size=%d", n);
		break;
	case 1:
		db = rnd(w, 2) ? w->a : w->b;
		sqlite3_db_release_memory(db);
		out_printf(&w->out, "t%u s%u release\n", w->id, w->step);
		break;
	case 2:
		if (g_plugin) {
			rcl_domain_set_budget(g_domain, rnd(w, 2) ? small_budget() : normal_budget());
			atomic_fetch_add(&g_budget_changes, 1);
		} else {
			(void)rnd(w, 2);
		}
		out_printf(&w->out, "t%u s%u budget\n", w->id, w->step);
		break;
	case 3:
		if (g_plugin && !g_opt.soft && rcl_domain_budget(g_domain) < small_budget())
			rcl_domain_set_budget(g_domain, small_budget());
		if (rnd(w, 6) == 0)
			run(w, rnd(w, 2) ? w->a : w->b, "vacuum", "VACUUM");
		else
			run(w, w->a, "vacuum-aux", "VACUUM aux");
		break;
	case 4:
		if (w->t3)
			run(w, w->a, "drop", "DROP TABLE t3");
		else
			run(w, w->a, "create",
			    "CREATE TABLE t3(a INTEGER PRIMARY KEY, b BLOB);"
			    "INSERT INTO t3(b) SELECT v FROM t1 WHERE id % 3 = 0");
		w->t3 = !w->t3;
		break;
	case 5:
		run(w, w->a, "join", "SELECT t1.id, t2.k FROM t1 JOIN aux.t2 ON t1.id=t2.id ORDER BY t1.id LIMIT 40");
		break;
	case 6:
		run(w, w->b, "b-agg", "SELECT count(*), total(k) FROM t2");
		break;
	default:
		sql(w, w->a, "temp", "CREATE TEMP TABLE IF NOT EXISTS tt(x); INSERT INTO tt VALUES(%u); SELECT count(*), sum(x) FROM tt",
		    rnd(w, 100));
		break;
	}
}

static void dump(struct worker *w, sqlite3 *db, const char *t)
{
	sql(w, db, "dump", "SELECT * FROM %s ORDER BY 1", t);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	sqlite3_stmt *st;

	open_dbs(w);
	run(w, w->a, "schema",
	    "CREATE TABLE IF NOT EXISTS t1(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);"
	    "CREATE INDEX IF NOT EXISTS t1k ON t1(k);"
	    "CREATE TABLE IF NOT EXISTS aux.t2(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);"
	    "CREATE INDEX IF NOT EXISTS aux.t2k ON t2(k)");
	for (w->step = 0; w->step < g_opt.steps; w->step++) {
		unsigned r = rnd(w, 20);

		if (r < 12)
			op_dml(w);
		else if (r < 16)
			op_tx(w);
		else
			op_misc(w);
	}
	w->step = g_opt.steps;
	dump(w, w->a, "main.t1");
	dump(w, w->a, "aux.t2");
	if (w->t3)
		dump(w, w->a, "main.t3");
	run(w, w->a, "integrity", "PRAGMA main.integrity_check; PRAGMA aux.integrity_check");
	/* And the check itself, not only equal to the reference: */
	T_EQ(sqlite3_prepare_v2(w->b, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	T_EQ(sqlite3_step(st), SQLITE_ROW);
	if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
		fprintf(stderr, "t%u: integrity_check: %s\n", w->id, sqlite3_column_text(st, 0));
		abort();
	}
	sqlite3_finalize(st);
	T_EQ(sqlite3_close(w->a), SQLITE_OK);
	T_EQ(sqlite3_close(w->b), SQLITE_OK);
	return NULL;
}

/*
 * The small budget of a strict domain: at least three times the databases'
 * size, so that what SQLite pins at once (a VACUUM's copy of a database in
 * a temporary one, then the dirty pages of the copy back) fits.  Below
 * that, a strict domain answers SQLITE_NOMEM, as documented.
 */
static uint64_t small_budget(void)
{
	uint64_t sum = 0;
	struct stat sb;
	char p[600];
	unsigned i, j;

	if (g_opt.soft)
		return BUDGET_SOFT_SMALL;
	for (i = 0; i < g_opt.threads; i++)
		for (j = 0; j < 2; j++) {
			snprintf(p, sizeof(p), "%s/diff-%u-%u.db", g_dir, i, j);
			if (stat(p, &sb) == 0)
				sum += (uint64_t)sb.st_size;
		}
	sum = sum * 3 / 2;
	return sum > BUDGET_STRICT_SMALL ? sum : BUDGET_STRICT_SMALL;
}

static uint64_t normal_budget(void)
{
	uint64_t small = small_budget();

	return g_opt.soft || small < BUDGET_NORMAL ? BUDGET_NORMAL : small + small / 4;
}

static void *budget_main(void *arg)
{
	struct timespec ts = { 0, 1000000 };
	unsigned i = 0;

	(void)arg;
	while (!atomic_load(&g_stop)) {
		rcl_domain_set_budget(g_domain, (i++ & 1) ? normal_budget() : small_budget());
		atomic_fetch_add(&g_budget_changes, 1);
		nanosleep(&ts, NULL);
	}
	rcl_domain_set_budget(g_domain, normal_budget());
	return NULL;
}

/* One child: run the script, write the log to @path. */
static int child(bool plugin, const char *path)
{
	struct worker *ws = calloc(g_opt.threads, sizeof(*ws));
	pthread_t *th = calloc(g_opt.threads, sizeof(*th)), bt;
	struct rcl_sqlite_stats s;
	unsigned i;
	FILE *f;

	T_CHECK(ws && th);
	g_plugin = plugin;
	if (g_opt.multithread)
		T_EQ(sqlite3_config(SQLITE_CONFIG_MULTITHREAD), SQLITE_OK);
	if (plugin) {
		struct rcl_domain_config dc = {
			.budget = BUDGET_NORMAL,
			.mode = g_opt.soft ? RCL_CHARGE_SOFT : RCL_CHARGE_STRICT,
		};
		struct rcl_sqlite_config sc = { 0 };

		T_EQ(rcl_domain_new(&dc, &g_domain), 0);
		sc.domain = g_domain;
		T_EQ(rcl_sqlite_install(&sc), 0);
		T_EQ(rcl_domain_reclaimer_start(g_domain), 0);
	}
	T_EQ(sqlite3_initialize(), SQLITE_OK);
	if (plugin && g_opt.threads > 1)
		T_EQ(pthread_create(&bt, NULL, budget_main, NULL), 0);
	for (i = 0; i < g_opt.threads; i++) {
		ws[i].id = i;
		ws[i].rng = g_opt.seed * 1000003u + i;
		T_EQ(pthread_create(&th[i], NULL, worker_main, &ws[i]), 0);
	}
	for (i = 0; i < g_opt.threads; i++)
		T_EQ(pthread_join(th[i], NULL), 0);
	if (plugin && g_opt.threads > 1) {
		atomic_store(&g_stop, true);
		T_EQ(pthread_join(bt, NULL), 0);
	}
	f = fopen(path, "w");
	T_CHECK(f);
	for (i = 0; i < g_opt.threads; i++) {
		fwrite(ws[i].out.buf, 1, ws[i].out.len, f);
		free(ws[i].out.buf);
	}
	T_EQ(fclose(f), 0);
	if (plugin) {
		T_EQ(rcl_sqlite_stats(&s), 0);
		fprintf(stderr, "plug-in: hits %" PRIu64 " misses %" PRIu64 " evictions %" PRIu64
			" refault activations %" PRIu64 " budget changes %lu\n",
			s.hits, s.misses, s.evictions, s.refault_activations,
			atomic_load(&g_budget_changes));
	}
	T_EQ(sqlite3_shutdown(), SQLITE_OK);
	if (plugin) {
		T_EQ(rcl_sqlite_stats(&s), 0);
		T_EQ(s.caches, 0);
		T_EQ(s.pages, 0);
		T_EQ(s.pinned, 0);
		T_EQ(s.charged, 0);
		T_EQ(rcl_domain_usage(g_domain), 0);
		T_EQ(rcl_domain_reclaimer_stop(g_domain), 0);
		T_EQ(rcl_domain_free(g_domain), 0);
	}
	free(ws);
	free(th);
	return 0;
}

static int run_child(bool plugin, const char *path)
{
	pid_t pid = fork();
	int status;

	T_CHECK(pid >= 0);
	if (pid == 0) {
		fflush(stderr);
		_exit(child(plugin, path));
	}
	T_EQ(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s child failed (status 0x%x)\n",
			plugin ? "plug-in" : "reference", status);
		return 1;
	}
	return 0;
}

static int compare(const char *pa, const char *pb, unsigned *lines)
{
	FILE *a = fopen(pa, "r"), *b = fopen(pb, "r");
	char la[512], lb[512];
	unsigned n = 0;
	int ret = 0;

	T_CHECK(a && b);
	for (;;) {
		char *ra = fgets(la, sizeof(la), a), *rb = fgets(lb, sizeof(lb), b);

		if (!ra && !rb)
			break;
		n++;
		if (!ra || !rb || strcmp(la, lb) != 0) {
			fprintf(stderr, "difference at line %u:\n  reference: %s  plug-in:   %s", n,
				ra ? la : "(end)\n", rb ? lb : "(end)\n");
			ret = 1;
			break;
		}
	}
	fclose(a);
	fclose(b);
	*lines = n;
	return ret;
}

static void cleanup(void)
{
	char p[512];
	unsigned i, j;

	for (i = 0; i < g_opt.threads; i++)
		for (j = 0; j < 2; j++) {
			snprintf(p, sizeof(p), "%s/diff-%u-%u.db", g_dir, i, j);
			unlink(p);
			snprintf(p, sizeof(p), "%s/diff-%u-%u.db-journal", g_dir, i, j);
			unlink(p);
		}
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char dir[512], ra[600], rb[600], *seeds = "1", *tok, *save = NULL;
	int i, fails = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seeds = argv[++i];
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			g_opt.threads = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			g_opt.steps = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			g_opt.soft = !strcmp(argv[++i], "soft");
		else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
			BUDGET_NORMAL = (unsigned)strtoul(argv[++i], NULL, 10) << 10;
			BUDGET_STRICT_SMALL = BUDGET_NORMAL / 2;
		} else if (!strcmp(argv[i], "--multithread"))
			g_opt.multithread = true;
		else {
			fprintf(stderr, "usage: %s [--seed N[,N...]] [--threads T] [--steps S] [--mode strict|soft] [--multithread]\n",
				argv[0]);
			return 2;
		}
	}
	if (g_opt.threads == 0)
		g_opt.threads = 1;
	snprintf(dir, sizeof(dir), "%s/rcl-sqlite-diff-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	T_CHECK(mkdtemp(dir));
	seeds = strdup(seeds);
	T_CHECK(seeds);
	for (tok = strtok_r(seeds, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned lines = 0;
		char refdir[600], plugdir[600];

		g_opt.seed = strtoull(tok, NULL, 10);
		snprintf(refdir, sizeof(refdir), "%s/ref", dir);
		snprintf(plugdir, sizeof(plugdir), "%s/plug", dir);
		mkdir(refdir, 0700);
		mkdir(plugdir, 0700);
		snprintf(ra, sizeof(ra), "%s/ref.log", dir);
		snprintf(rb, sizeof(rb), "%s/plug.log", dir);
		g_dir = refdir;
		fails += run_child(false, ra);
		g_dir = plugdir;
		fails += run_child(true, rb);
		if (!fails)
			fails += compare(ra, rb, &lines);
		printf("seed %" PRIu64 ": %u threads x %u steps, %u result lines %s (%s mode%s)\n",
		       g_opt.seed, g_opt.threads, g_opt.steps, lines,
		       fails ? "DIFFER" : "identical", g_opt.soft ? "soft" : "strict",
		       g_opt.multithread ? ", multi-thread" : ", serialized");
		g_dir = refdir;
		cleanup();
		g_dir = plugdir;
		cleanup();
		rmdir(refdir);
		rmdir(plugdir);
		if (fails)
			break;
		unlink(ra);
		unlink(rb);
	}
	free(seeds);
	if (!fails)
		rmdir(dir);
	else
		fprintf(stderr, "logs kept in %s\n", dir);
	return fails ? 1 : 0;
}
