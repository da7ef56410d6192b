/* SPDX-License-Identifier: MIT */
/*
 * Several SQLite databases on one memory budget (libreclaim-sqlite).
 *
 * Three databases of different sizes and access patterns share a 1 MiB
 * domain: "hot" (small, read all the time), "warm" (medium, random point
 * reads and updates) and "scan" (large, read sequentially).  Each has a
 * PRAGMA cache_size that is only its share: the budget is what holds.  At
 * the end the program prints each database's pages, its part of the budget
 * and its hit ratio, then the totals.
 *
 * Usage: sqlite [--budget KiB] [--ops N]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include <reclaim/domain.h>
#include <reclaim/sqlite.h>

#define NDB 3

static const char *names[NDB] = { "hot", "warm", "scan" };
static const int rows[NDB] = { 500, 4000, 12000 };

static void check(int rc, sqlite3 *db, const char *what)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
		fprintf(stderr, "%s: %s\n", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		exit(1);
	}
}

/* A decimal number in [min, max], nothing after it; false otherwise. */
static bool parse_num(const char *s, unsigned long min, unsigned long max,
		      unsigned long *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = (unsigned long)v;
	return true;
}

int main(int argc, char **argv)
{
	unsigned long budget_kib = 1024, ops = 20000, i;
	const char *tmp = getenv("TMPDIR");
	struct rcl_domain_config dc = { 0 };
	struct rcl_sqlite_config sc = { 0 };
	struct rcl_sqlite_stats st, tot;
	struct rcl_domain *d;
	sqlite3 *db[NDB];
	sqlite3_stmt *get[NDB], *put;
	char path[NDB][512];
	int k, rc;

	for (k = 1; k < argc; k++) {
		/* A budget of 1 KiB to 1 TiB; 1 to 100 million operations. */
		if (!strcmp(argv[k], "--budget") && k + 1 < argc &&
		    parse_num(argv[k + 1], 1, 1ul << 30, &budget_kib))
			k++;
		else if (!strcmp(argv[k], "--ops") && k + 1 < argc &&
			 parse_num(argv[k + 1], 1, 100000000, &ops))
			k++;
		else {
			fprintf(stderr, "usage: %s [--budget KiB (1..2^30)] [--ops N (1..10^8)]\n",
				argv[0]);
			return 2;
		}
	}

	/* One budget for every page cache; the background reclaimer keeps
	 * headroom above the high watermark. */
	dc.budget = (uint64_t)budget_kib << 10;
	if (rcl_domain_new(&dc, &d) != 0)
		return 1;
	sc.domain = d;
	if (rcl_sqlite_install(&sc) != 0) {	/* before sqlite3_initialize() */
		fprintf(stderr, "rcl_sqlite_install failed\n");
		return 1;
	}
	check(sqlite3_initialize(), NULL, "initialize");
	rcl_domain_reclaimer_start(d);

	for (k = 0; k < NDB; k++) {
		snprintf(path[k], sizeof(path[k]), "%s/rcl-example-%s-%d.db",
			 tmp && *tmp ? tmp : "/tmp", names[k], (int)getpid());
		unlink(path[k]);
		/* sqlite3_open() sets db[k] (or leaves it NULL when out of
		 * memory): read it only after the call. */
		db[k] = NULL;
		rc = sqlite3_open(path[k], &db[k]);
		check(rc, db[k], "open");
		check(sqlite3_exec(db[k],
				   "PRAGMA synchronous=OFF; PRAGMA cache_size=64;"
				   "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);", NULL, NULL, NULL),
		      db[k], "schema");
		char *sql = sqlite3_mprintf(
			"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%d)"
			" INSERT INTO t SELECT x, printf('%%.100c', 'a' + x %% 26) FROM c", rows[k]);
		check(sqlite3_exec(db[k], sql, NULL, NULL, NULL), db[k], "fill");
		sqlite3_free(sql);
		check(sqlite3_prepare_v2(db[k], "SELECT v FROM t WHERE id = ?", -1, &get[k], NULL),
		      db[k], "prepare");
	}
	check(sqlite3_prepare_v2(db[1], "UPDATE t SET v = v WHERE id = ?", -1, &put, NULL),
	      db[1], "prepare");

	srand(1);
	for (i = 0; i < ops; i++) {
		int which = i % 10 < 6 ? 0 : (i % 10 < 9 ? 1 : 2);
		int id = which == 0 ? 1 + rand() % rows[0]
		       : which == 1 ? 1 + rand() % rows[1]
		       : 1 + (int)((i * 7) % (unsigned long)rows[2]);	/* a sweep */

		sqlite3_bind_int(get[which], 1, id);
		check(sqlite3_step(get[which]), db[which], "select");
		sqlite3_reset(get[which]);
		if (which == 1 && i % 50 == 0) {
			sqlite3_bind_int(put, 1, id);
			check(sqlite3_step(put), db[1], "update");
			sqlite3_reset(put);
		}
	}

	printf("budget %lu KiB, usage %" PRIu64 " KiB\n", budget_kib,
	       rcl_domain_usage(d) >> 10);
	printf("%-6s %7s %9s %7s %9s %10s\n", "db", "pages", "KiB", "share", "hit%", "evictions");
	for (k = 0; k < NDB; k++) {
		if (rcl_sqlite_cache_stats(db[k], "main", &st) != 0)
			return 1;
		printf("%-6s %7" PRIu64 " %9" PRIu64 " %6.1f%% %8.1f%% %10" PRIu64 "\n",
		       names[k], st.pages, st.charged >> 10,
		       100.0 * (double)st.charged / (double)dc.budget,
		       st.hits + st.misses ? 100.0 * (double)st.hits / (double)(st.hits + st.misses) : 0.0,
		       st.evictions);
	}
	rcl_sqlite_stats(&tot);
	printf("all    %7" PRIu64 " %9" PRIu64 " %6.1f%% %8.1f%% %10" PRIu64
	       "  (%" PRIu64 " caches, %" PRIu64 " refault activations)\n",
	       tot.pages, tot.charged >> 10, 100.0 * (double)tot.charged / (double)dc.budget,
	       100.0 * (double)tot.hits / (double)(tot.hits + tot.misses ? tot.hits + tot.misses : 1),
	       tot.evictions, tot.caches, tot.refault_activations);

	sqlite3_finalize(put);
	for (k = 0; k < NDB; k++) {
		sqlite3_finalize(get[k]);
		sqlite3_close(db[k]);
		unlink(path[k]);
	}
	sqlite3_shutdown();
	rcl_domain_reclaimer_stop(d);
	return rcl_domain_free(d) == 0 ? 0 : 1;
}
