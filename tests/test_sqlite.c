/* SPDX-License-Identifier: MIT */
/*
 * libreclaim-sqlite: bad input, the pcache2 methods one by one, and
 * allocation faults.
 *
 * The plug-in is installed once per process, so the tests run in order:
 * first the refusals of rcl_sqlite_install() (bad arguments, SQLite already
 * initialised), then the install, then the methods called directly (from
 * sqlite3_config(SQLITE_CONFIG_GETPCACHE2)), then real databases, then the
 * fault sweep: a test allocator that fails the Nth allocation made inside
 * xCreate or xFetch, for N = 1, 2, ..., must give SQLITE_NOMEM (or
 * success, where SQLite retried) and leave the database intact: its content
 * is the state before or after the failed transaction, and
 * integrity_check says ok.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <cmocka.h>

#include <reclaim/domain.h>
#include <reclaim/flusher.h>
#include <reclaim/lruvec.h>
#include <reclaim/sqlite.h>

/* ------------------------------------------------------------------------- */
/* The test allocator: counts, and fails the Nth allocation once armed        */
/* ------------------------------------------------------------------------- */

static atomic_long a_live, a_calls;
static atomic_long a_fail_at;	/* 0: never; else the call number to fail */
static atomic_bool a_fail_from;	/* fail every call from a_fail_at on */
static atomic_long a_failed;

static void *t_alloc(void *ctx, size_t size)
{
	long n = atomic_fetch_add(&a_calls, 1) + 1, at = atomic_load(&a_fail_at);
	void *p;

	(void)ctx;
	if (at && (n == at || (atomic_load(&a_fail_from) && n > at))) {
		atomic_fetch_add(&a_failed, 1);
		return NULL;
	}
	p = malloc(size);
	if (p)
		atomic_fetch_add(&a_live, 1);
	return p;
}

static void t_free(void *ctx, void *p)
{
	(void)ctx;
	atomic_fetch_sub(&a_live, 1);
	free(p);
}

static const struct rcl_allocator t_allocator = { t_alloc, t_free, NULL };

static void arm(long nth, bool from)
{
	atomic_store(&a_calls, 0);
	atomic_store(&a_failed, 0);
	atomic_store(&a_fail_from, from);
	atomic_store(&a_fail_at, nth);
}

static void disarm(void)
{
	atomic_store(&a_fail_at, 0);
}

static struct rcl_domain *g_domain;
static char g_path[512];

/* Callbacks the plug-in must never reach: they fill the stack frame in
 * which the installed allocator was. */
static atomic_long a_wrong;

static void *wrong_alloc(void *ctx, size_t size)
{
	(void)ctx;
	atomic_fetch_add(&a_wrong, 1);
	return malloc(size);
}

static void wrong_free(void *ctx, void *p)
{
	(void)ctx;
	atomic_fetch_add(&a_wrong, 1);
	free(p);
}

/* Installs with an allocator structure that is gone once this returns. */
static __attribute__((noinline)) int install_stack_allocator(struct rcl_sqlite_config *c)
{
	struct rcl_allocator a = t_allocator;
	int rc;

	c->allocator = &a;
	rc = rcl_sqlite_install(c);
	c->allocator = NULL;
	return rc;
}

/* Overwrites the frame install_stack_allocator() used. */
static __attribute__((noinline)) void clobber_stack(void)
{
	volatile struct rcl_allocator junk[128];
	size_t i;

	for (i = 0; i < 128; i++) {
		junk[i].alloc = wrong_alloc;
		junk[i].free = wrong_free;
		junk[i].ctx = NULL;
	}
	(void)junk[0].alloc;
}

/* ------------------------------------------------------------------------- */
/* Install: refusals, then the install                                        */
/* ------------------------------------------------------------------------- */

static void test_install_badinput(void **state)
{
	struct rcl_domain_config dc = { .budget = 4u << 20 };
	struct rcl_sqlite_config c = { 0 };
	struct rcl_allocator half = { t_alloc, NULL, NULL };
	struct rcl_sqlite_stats s;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &g_domain), 0);
	assert_int_equal(rcl_sqlite_install(NULL), -EINVAL);
	assert_int_equal(rcl_sqlite_install(&c), -EINVAL);	/* no domain */
	c.domain = g_domain;
	c.flags = 2;
	assert_int_equal(rcl_sqlite_install(&c), -EINVAL);	/* unknown flag */
	c.flags = 0;
	c.allocator = &half;
	assert_int_equal(rcl_sqlite_install(&c), -EINVAL);	/* no free */
	c.allocator = &t_allocator;

	/* SQLite initialised already: SQLITE_MISUSE, -EBUSY, nothing changed. */
	assert_int_equal(sqlite3_initialize(), SQLITE_OK);
	assert_int_equal(rcl_sqlite_install(&c), -EBUSY);
	assert_int_equal(sqlite3_shutdown(), SQLITE_OK);

	assert_int_equal(rcl_sqlite_stats(NULL), -EINVAL);
	assert_int_equal(rcl_sqlite_cache_stats(NULL, "main", &s), -EINVAL);
	assert_int_equal(rcl_sqlite_page_charge(4096, 120), RCL_SQLITE_PAGE_OVERHEAD + 4096 + 120);

	/* The allocator structure is copied: one on a dead stack frame still
	 * gives the callbacks it had. */
	assert_int_equal(install_stack_allocator(&c), 0);
	clobber_stack();
	c.allocator = &t_allocator;
	assert_int_equal(rcl_sqlite_install(&c), -EBUSY);	/* once */
	assert_int_equal(rcl_sqlite_stats(&s), 0);
	assert_int_equal(s.caches, 0);
	{
		sqlite3_pcache_methods2 pm;
		sqlite3_pcache *pc;
		long calls = atomic_load(&a_calls);

		assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &pm), SQLITE_OK);
		/* Sizes SQLite never sends, whose page charge would wrap its
		 * 32-bit weight (a heap overflow at the first xFetch before). */
		assert_null(pm.xCreate(0, 16, 1));
		assert_null(pm.xCreate(1024, -1, 1));
		assert_null(pm.xCreate(65537, 16, 1));
		assert_null(pm.xCreate(1024, 65537, 1));
		assert_null(pm.xCreate(INT_MAX, INT_MAX, 1));
		/* SQLite's largest page, with the largest extra area. */
		pc = pm.xCreate(65536, 65536, 1);
		assert_non_null(pc);
		{
			sqlite3_pcache_page *pg = pm.xFetch(pc, 1, 2);

			assert_non_null(pg);
			memset(pg->pBuf, 0xa5, 65536);
			memset(pg->pExtra, 0x5a, 65536);
			pm.xUnpin(pc, pg, 1);
		}
		pm.xDestroy(pc);
		pc = pm.xCreate(1024, 16, 1);
		assert_non_null(pc);
		pm.xUnpin(pc, pm.xFetch(pc, 1, 2), 1);
		pm.xDestroy(pc);
		assert_true(atomic_load(&a_calls) >= calls + 3);
		assert_int_equal(atomic_load(&a_wrong), 0);
		assert_int_equal(atomic_load(&a_live), 0);
	}
}

/* ------------------------------------------------------------------------- */
/* The methods, called directly                                               */
/* ------------------------------------------------------------------------- */

static sqlite3_pcache_methods2 m;

static void test_methods(void **state)
{
	sqlite3_pcache *pc;
	sqlite3_pcache_page *p[8], *q;
	struct rcl_sqlite_stats s;
	uint64_t charge = rcl_sqlite_page_charge(1024, 64), u0;
	int i;

	(void)state;
	assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &m), SQLITE_OK);
	assert_int_equal(m.xInit(m.pArg), SQLITE_OK);
	u0 = rcl_domain_usage(g_domain);
	pc = m.xCreate(1024, 64, 1);
	assert_non_null(pc);
	m.xCachesize(pc, 4);
	assert_null(m.xFetch(pc, 1, 0));		/* 0: never allocate */
	for (i = 0; i < 8; i++) {
		p[i] = m.xFetch(pc, (unsigned)i + 1, i % 2 ? 1 : 2);
		assert_non_null(p[i]);
		/* a new page: the whole extra area is zero */
		for (int j = 0; j < 64; j++)
			assert_int_equal(((unsigned char *)p[i]->pExtra)[j], 0);
		assert_ptr_equal((char *)p[i]->pExtra, (char *)p[i]->pBuf + 1024);
		memset(p[i]->pBuf, 'a' + i, 1024);
		*(int *)p[i]->pExtra = i + 100;
	}
	assert_int_equal(m.xPagecount(pc), 8);
	rcl_sqlite_stats(&s);
	/* the cache structure and its tables are charged with the pages */
	assert_true(s.meta >= 64 * (sizeof(void *) + 16));
	assert_int_equal(rcl_domain_usage(g_domain), u0 + s.meta + 8 * charge);
	assert_int_equal(s.charged, s.meta + 8 * charge);
	assert_int_equal(s.pinned, 8);
	/* a hit returns the same page, content intact */
	assert_ptr_equal(m.xFetch(pc, 3, 0), p[2]);
	assert_int_equal(((char *)p[2]->pBuf)[5], 'c');

	/* unpin (no counting: one unpin unpins), discard */
	m.xUnpin(pc, p[0], 0);
	m.xUnpin(pc, p[1], 1);				/* discarded */
	assert_int_equal(m.xPagecount(pc), 7);
	assert_null(m.xFetch(pc, 2, 0));
	q = m.xFetch(pc, 1, 0);				/* re-pinned, intact */
	assert_ptr_equal(q, p[0]);
	assert_int_equal(*(int *)q->pExtra, 100);

	/* rekey a pinned page onto an unpinned page's key: that one goes */
	m.xUnpin(pc, p[4], 0);				/* key 5, unpinned */
	m.xRekey(pc, p[3], 4, 5);
	assert_int_equal(m.xPagecount(pc), 6);
	assert_ptr_equal(m.xFetch(pc, 5, 0), p[3]);
	assert_int_equal(((char *)p[3]->pBuf)[0], 'd');
	assert_null(m.xFetch(pc, 4, 0));

	/* truncate drops keys >= 7, pinned or not */
	m.xUnpin(pc, p[6], 0);				/* 7 unpinned, 8 pinned */
	m.xTruncate(pc, 7);
	assert_int_equal(m.xPagecount(pc), 4);		/* 1, 3, 5, 6 */
	assert_null(m.xFetch(pc, 7, 0));
	assert_null(m.xFetch(pc, 8, 0));

	/* shrink frees the unpinned pages only */
	m.xUnpin(pc, p[5], 0);				/* 6 */
	m.xShrink(pc);
	assert_int_equal(m.xPagecount(pc), 3);		/* 1, 3, 5 pinned */
	assert_null(m.xFetch(pc, 6, 0));

	/* reclaim never meets a pinned page: a budget below the pinned pages */
	assert_int_equal(rcl_domain_set_budget(g_domain, 2 * charge), 0);
	struct rcl_reclaim_result rr;
	rcl_domain_reclaim(g_domain, 64, RCL_CTX_CAPABLE, &rr);
	assert_int_equal(m.xPagecount(pc), 3);
	assert_int_equal(((char *)p[2]->pBuf)[0], 'c');
	/* strict domain, no room: createFlag 1 and 2 both fail, nothing leaks */
	assert_null(m.xFetch(pc, 20, 1));
	assert_null(m.xFetch(pc, 20, 2));
	assert_int_equal(rcl_domain_set_budget(g_domain, 4u << 20), 0);

	/* eviction and refault: unpin, reclaim everything, fetch again */
	m.xUnpin(pc, p[0], 0);
	m.xUnpin(pc, p[2], 0);
	m.xUnpin(pc, p[3], 0);
	for (i = 0; i < 3; i++) {		/* make them active: several touches */
		m.xUnpin(pc, m.xFetch(pc, 1, 0), 0);
		m.xUnpin(pc, m.xFetch(pc, 3, 0), 0);
	}
	rcl_sqlite_stats(&s);
	uint64_t ev0 = s.evictions, ra0 = s.refault_activations;
	/* no drain: xUnpin puts pages straight onto the lists */
	assert_int_equal(rcl_domain_set_budget(g_domain, charge / 2 + 1), 0);
	for (i = 0; i < 8 && m.xPagecount(pc); i++)
		rcl_domain_reclaim(g_domain, 64, RCL_CTX_CAPABLE, &rr);
	assert_int_equal(m.xPagecount(pc), 0);
	assert_int_equal(rcl_domain_set_budget(g_domain, 4u << 20), 0);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.evictions, ev0 + 3);
	q = m.xFetch(pc, 1, 2);
	assert_non_null(q);
	m.xUnpin(pc, q, 0);	/* a refault (activated only if the distance
				 * fits the active list: here it is empty) */
	rcl_sqlite_stats(&s);
	assert_true(s.refault_activations >= ra0);

	m.xDestroy(pc);
	assert_int_equal(rcl_domain_usage(g_domain), u0);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.caches, 0);
	assert_int_equal(s.pages, 0);
	assert_int_equal(s.pinned, 0);

	/* a non-purgeable cache (in-memory database): unpin always discards */
	pc = m.xCreate(512, 8, 0);
	assert_non_null(pc);
	q = m.xFetch(pc, 1, 2);
	assert_non_null(q);
	m.xUnpin(pc, q, 0);
	assert_int_equal(m.xPagecount(pc), 0);
	m.xDestroy(pc);
	assert_int_equal(a_live, 0);
}

/* ------------------------------------------------------------------------- */
/* Methods called inside the library's callbacks                              */
/* ------------------------------------------------------------------------- */

/*
 * A write callback of rcl_domain_writeback_all() calls a method while
 * another thread (holder(), playing a reclaimer) holds the cache's pages
 * isolated: rcl_lruvec_del_wait() refuses to wait there (-EDEADLK).  The
 * plug-in must neither forget that the page is still on the lruvec nor
 * free it while it is isolated (an ASan or valgrind run reports a use after
 * free; the counters tell it in any build).
 */
enum cb_action { CB_FETCH, CB_TRUNCATE, CB_REKEY, CB_DESTROY };

static struct {
	sqlite3_pcache *pc;
	sqlite3_pcache_page *got;	/* CB_FETCH's result */
	sqlite3_pcache_page *pinned;	/* CB_REKEY's page, pinned */
	enum cb_action action;
	struct rcl_lru_isolated iso;
	pthread_barrier_t held, release;
} cb;

static void *holder(void *arg)
{
	/* The lruvec is the first member of the plug-in's cache structure
	 * (lib/sqlite/pcache.c): a white-box test may know that. */
	struct rcl_lruvec *lv = (struct rcl_lruvec *)cb.pc;

	(void)arg;
	rcl_lru_isolated_init(&cb.iso);
	rcl_lruvec_isolate(lv, RCL_LRU_LIST(RCL_LRU_FILE, 0), 32, &cb.iso);
	pthread_barrier_wait(&cb.held);
	pthread_barrier_wait(&cb.release);
	rcl_lruvec_putback(lv, &cb.iso);
	return NULL;
}

static int cb_write(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	switch (cb.action) {
	case CB_FETCH:
		cb.got = m.xFetch(cb.pc, 1, 0);
		break;
	case CB_TRUNCATE:
		m.xTruncate(cb.pc, 1);
		break;
	case CB_REKEY:
		m.xRekey(cb.pc, cb.pinned, 2, 1);
		break;
	case CB_DESTROY:
		m.xDestroy(cb.pc);
		break;
	}
	return 0;
}

static enum rcl_evict_status cb_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops cb_lru_ops = { .evict = cb_evict };
static const struct rcl_writeback_ops cb_wb_ops = { .write = cb_write };

/* A cache with page 1 unpinned on the inactive list (and with @rekey,
 * page 2 pinned). */
static void cb_setup(bool rekey)
{
	sqlite3_pcache_page *pg;

	cb.pc = m.xCreate(1024, 16, 1);
	assert_non_null(cb.pc);
	pg = m.xFetch(cb.pc, 1, 2);
	assert_non_null(pg);
	m.xUnpin(cb.pc, pg, 0);
	rcl_lru_drain_local();
	cb.pinned = rekey ? m.xFetch(cb.pc, 2, 2) : NULL;
	cb.got = NULL;
}

/* Run @a in a write callback while holder() has page 1 isolated; let
 * holder() put it back after the callback. */
static void cb_run(enum cb_action a)
{
	struct rcl_lruvec_config lc = { .ops = &cb_lru_ops };
	struct rcl_lru_node dirty = RCL_LRU_NODE_INIT;
	struct rcl_lruvec lv;
	pthread_t t;
	uint64_t written = 0;

	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(g_domain, &lv, 0), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &dirty, RCL_LRU_FILE, 1, RCL_LRU_ADD_NOBATCH), 0);
	assert_true(rcl_lruvec_set_dirty(&lv, &dirty) >= 0);
	assert_int_equal(pthread_barrier_init(&cb.held, NULL, 2), 0);
	assert_int_equal(pthread_barrier_init(&cb.release, NULL, 2), 0);
	assert_int_equal(pthread_create(&t, NULL, holder, NULL), 0);
	pthread_barrier_wait(&cb.held);
	assert_int_equal(cb.iso.nr, 1);
	cb.action = a;
	assert_int_equal(rcl_domain_writeback_all(g_domain, &cb_wb_ops, NULL, &written), 0);
	assert_int_equal(written, 1);
	pthread_barrier_wait(&cb.release);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&cb.held);
	pthread_barrier_destroy(&cb.release);
	assert_int_equal(rcl_lruvec_del(&lv, &dirty), 0);
	assert_int_equal(rcl_domain_detach(g_domain, &lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

static uint64_t sqlite_pages(void)
{
	struct rcl_sqlite_stats s;

	rcl_sqlite_stats(&s);
	return s.pages;
}

/* xFetch in a callback: the page stays on the lruvec, and xUnpin keeps it
 * there (it used to free it while it was listed). */
static void test_callback_fetch_of_isolated_page(void **state)
{
	struct rcl_reclaim_result rr;
	uint64_t u0 = rcl_domain_usage(g_domain);
	struct rcl_sqlite_stats s;

	(void)state;
	cb_setup(false);
	cb_run(CB_FETCH);
	assert_non_null(cb.got);
	assert_int_equal(m.xPagecount(cb.pc), 1);
	m.xUnpin(cb.pc, cb.got, 0);
	assert_int_equal(sqlite_pages(), 1);
	assert_int_equal(rcl_lruvec_count((struct rcl_lruvec *)cb.pc,
					  RCL_LRU_LIST(RCL_LRU_FILE, 0), NULL), 1);
	/* a hit again, then the domain's reclaim takes it */
	assert_ptr_equal(m.xFetch(cb.pc, 1, 0), cb.got);
	m.xUnpin(cb.pc, cb.got, 0);
	rcl_lru_drain_local();
	rcl_sqlite_stats(&s);
	rcl_domain_reclaim(g_domain, 1u << 30, RCL_CTX_CAPABLE, &rr);
	assert_int_equal(m.xPagecount(cb.pc), 0);
	assert_int_equal(sqlite_pages(), 0);
	m.xDestroy(cb.pc);
	assert_int_equal(rcl_domain_usage(g_domain), u0);
	assert_int_equal(atomic_load(&a_live), 0);
}

/* xTruncate in a callback: the isolated page is doomed, not freed; the
 * evict callback frees it when reclaim reaches it. */
static void test_callback_truncate_of_isolated_page(void **state)
{
	struct rcl_reclaim_result rr;
	uint64_t u0 = rcl_domain_usage(g_domain), ev0;
	struct rcl_sqlite_stats s;

	(void)state;
	cb_setup(false);
	cb_run(CB_TRUNCATE);
	assert_int_equal(m.xPagecount(cb.pc), 0);	/* gone for SQLite */
	assert_null(m.xFetch(cb.pc, 1, 0));
	rcl_sqlite_stats(&s);
	assert_int_equal(s.pages, 1);			/* still held, charged */
	ev0 = s.evictions;
	rcl_domain_reclaim(g_domain, 1u << 30, RCL_CTX_CAPABLE, &rr);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.pages, 0);
	assert_int_equal(s.evictions, ev0);		/* a discard, not an eviction */
	m.xDestroy(cb.pc);
	assert_int_equal(rcl_domain_usage(g_domain), u0);
	assert_int_equal(atomic_load(&a_live), 0);
}

/* xRekey in a callback onto an isolated page: doomed, and freed by the
 * cache's next creating xFetch once it is put back. */
static void test_callback_rekey_onto_isolated_page(void **state)
{
	uint64_t u0 = rcl_domain_usage(g_domain);
	sqlite3_pcache_page *p5;

	(void)state;
	cb_setup(true);
	cb_run(CB_REKEY);
	assert_int_equal(m.xPagecount(cb.pc), 1);
	assert_ptr_equal(m.xFetch(cb.pc, 1, 0), cb.pinned);
	assert_int_equal(sqlite_pages(), 2);		/* the doomed one too */
	p5 = m.xFetch(cb.pc, 5, 2);			/* reaps it */
	assert_non_null(p5);
	assert_int_equal(sqlite_pages(), 2);
	assert_int_equal(m.xPagecount(cb.pc), 2);
	m.xUnpin(cb.pc, p5, 1);
	m.xUnpin(cb.pc, cb.pinned, 1);
	m.xDestroy(cb.pc);
	assert_int_equal(rcl_domain_usage(g_domain), u0);
	assert_int_equal(atomic_load(&a_live), 0);
}

/* xDestroy in a callback with a page isolated: the cache waits on the
 * orphan list and the next xCreate finishes it. */
static void test_callback_destroy_with_isolated_page(void **state)
{
	uint64_t u0 = rcl_domain_usage(g_domain);
	struct rcl_sqlite_stats s;
	sqlite3_pcache *pc;

	(void)state;
	cb_setup(false);
	cb_run(CB_DESTROY);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.caches, 0);
	assert_int_equal(s.pages, 1);
	assert_true(rcl_domain_usage(g_domain) > u0);	/* not freed yet */
	pc = m.xCreate(1024, 16, 1);			/* finishes it */
	assert_non_null(pc);
	m.xDestroy(pc);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.pages, 0);
	assert_int_equal(s.charged, 0);
	assert_int_equal(rcl_domain_usage(g_domain), u0);
	assert_int_equal(atomic_load(&a_live), 0);
}

/* ------------------------------------------------------------------------- */
/* Real databases                                                             */
/* ------------------------------------------------------------------------- */

static int exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static uint64_t content_hash(sqlite3 *db)
{
	sqlite3_stmt *st;
	uint64_t h = 1469598103934665603ull;

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, v FROM t ORDER BY id", -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 1);

		h = (h ^ (uint64_t)sqlite3_column_int64(st, 0)) * 1099511628211ull;
		for (; v && *v; v++)
			h = (h ^ *v) * 1099511628211ull;
	}
	sqlite3_finalize(st);
	return h;
}

static void integrity_ok(sqlite3 *db)
{
	sqlite3_stmt *st;

	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
}

/*
 * Each open page cache takes one of the domain's max_lruvecs attachment
 * slots (256 by default): the next xCreate fails (SQLite: SQLITE_NOMEM)
 * and changes nothing; a destroyed cache gives its slot back.
 */
#define DEFAULT_MAX_LRUVECS 256

static void test_caches_are_bounded_by_max_lruvecs(void **state)
{
	static sqlite3_pcache *pcs[DEFAULT_MAX_LRUVECS];
	uint64_t u0 = rcl_domain_usage(g_domain), u;
	struct rcl_sqlite_stats s;
	sqlite3 *db;
	unsigned i;

	(void)state;
	for (i = 0; i < DEFAULT_MAX_LRUVECS; i++) {
		pcs[i] = m.xCreate(512, 8, 1);
		assert_non_null(pcs[i]);
	}
	u = rcl_domain_usage(g_domain);
	assert_null(m.xCreate(512, 8, 1));		/* -ENOSPC inside */
	assert_int_equal(rcl_domain_usage(g_domain), u);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.caches, DEFAULT_MAX_LRUVECS);
	/* as SQLite sees it: the open cannot get its cache */
	assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_NOMEM);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	m.xDestroy(pcs[0]);
	pcs[0] = m.xCreate(512, 8, 1);			/* the slot is free again */
	assert_non_null(pcs[0]);
	for (i = 0; i < DEFAULT_MAX_LRUVECS; i++)
		m.xDestroy(pcs[i]);
	assert_int_equal(rcl_domain_usage(g_domain), u0);
	assert_int_equal(atomic_load(&a_live), 0);
}

static void test_databases(void **state)
{
	sqlite3 *db;
	struct rcl_sqlite_stats s, cs;
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(g_path, sizeof(g_path), "%s/rcl-test-sqlite-%d.db", tmp && *tmp ? tmp : "/tmp",
		 (int)getpid());
	unlink(g_path);
	assert_int_equal(sqlite3_open(g_path, &db), SQLITE_OK);
	/* auto_vacuum=FULL moves pages at commit (xRekey) and truncates the
	 * file (xTruncate) */
	assert_int_equal(exec(db, "PRAGMA auto_vacuum=FULL; PRAGMA cache_size=20;"
			      "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);"
			      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<3000)"
			      " INSERT INTO t SELECT x, printf('%.*c', 200 + x % 300, 'v') FROM c;"
			      "DELETE FROM t WHERE id % 3 = 0; DELETE FROM t WHERE id > 2500;"
			      "UPDATE t SET v = v || 'x' WHERE id % 5 = 0"), SQLITE_OK);
	integrity_ok(db);
	assert_int_equal(rcl_sqlite_cache_stats(db, "main", &cs), 0);
	assert_int_equal(cs.caches, 1);
	assert_true(cs.pages > 20);		/* cache_size is a share, not a wall */
	assert_true(cs.hits > 0);
	assert_int_equal(rcl_sqlite_cache_stats(db, "nosuch", &cs), -ENOENT);
	assert_int_equal(rcl_sqlite_cache_stats(db, NULL, NULL), -EINVAL);
	sqlite3_db_release_memory(db);		/* xShrink: every unpinned page */
	assert_int_equal(rcl_sqlite_cache_stats(db, "main", &cs), 0);
	assert_true(cs.pages <= 2);		/* page 1 read by the probe, maybe */
	rcl_sqlite_stats(&s);
	assert_int_equal(s.charged, rcl_domain_usage(g_domain));
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.caches, 0);
	assert_int_equal(s.charged, 0);
	assert_int_equal(a_live, 0);
}

/*
 * The tables' doublings are charged before they are allocated; one that the
 * strict domain refuses is not made, and the cache works on.
 */
/*
 * An xRekey onto the number of a page that is still pinned (SQLite promises
 * none; every page of a non-purgeable cache is pinned): that page leaves
 * the index, and was left charged for ever by an xDestroy or xTruncate
 * before its xUnpin (a review's reproducer: 1152 bytes).
 */
static void test_rekey_onto_pinned_page_is_freed(void **state)
{
	sqlite3_pcache_page *a, *b;
	struct rcl_sqlite_stats s;
	sqlite3_pcache *pc;
	uint64_t u0;
	int purgeable;

	(void)state;
	assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &m), SQLITE_OK);
	assert_int_equal(m.xInit(m.pArg), SQLITE_OK);
	for (purgeable = 0; purgeable < 2; purgeable++) {
		u0 = rcl_domain_usage(g_domain);
		pc = m.xCreate(1024, 64, purgeable);
		assert_non_null(pc);
		a = m.xFetch(pc, 1, 2);
		b = m.xFetch(pc, 2, 2);
		assert_non_null(a);
		assert_non_null(b);
		m.xRekey(pc, a, 1, 2);
		assert_ptr_equal(m.xFetch(pc, 2, 0), a);
		if (purgeable) {
			/* The truncate covers it (SQLite holds no page there). */
			m.xTruncate(pc, 2);
			assert_int_equal(m.xPagecount(pc), 0);
		}
		m.xDestroy(pc);
		rcl_sqlite_stats(&s);
		print_message("rekey onto a pinned page (purgeable %d): pages %llu, "
			      "pinned %llu, usage %+lld\n", purgeable,
			      (unsigned long long)s.pages,
			      (unsigned long long)s.pinned,
			      (long long)(rcl_domain_usage(g_domain) - u0));
		assert_int_equal(s.pages, 0);
		assert_int_equal(s.pinned, 0);
		assert_int_equal(rcl_domain_usage(g_domain), u0);
	}
	/* Its xUnpin, first: freed there, and off the lost list. */
	u0 = rcl_domain_usage(g_domain);
	pc = m.xCreate(1024, 64, 1);
	assert_non_null(pc);
	a = m.xFetch(pc, 1, 2);
	b = m.xFetch(pc, 2, 2);
	m.xRekey(pc, a, 1, 2);
	m.xUnpin(pc, b, 0);
	assert_int_equal(m.xPagecount(pc), 1);
	m.xUnpin(pc, a, 0);
	m.xDestroy(pc);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.pages, 0);
	assert_int_equal(rcl_domain_usage(g_domain), u0);
}

/*
 * The lost page (pinned, out of the index after a rekey onto it) rekeyed in
 * its turn: it leaves the lost list as it joins the index, so that neither
 * list frees it twice or keeps it after it is freed.  Three endings: a
 * destroy; an unpin then a truncate that covers it; a discarding unpin then
 * a destroy (each freed it twice, or walked a freed page, before).
 */
static void test_rekey_of_a_lost_page(void **state)
{
	sqlite3_pcache_page *a, *b;
	struct rcl_sqlite_stats s;
	sqlite3_pcache *pc;
	uint64_t u0;
	int ending;

	(void)state;
	assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &m), SQLITE_OK);
	assert_int_equal(m.xInit(m.pArg), SQLITE_OK);
	for (ending = 0; ending < 3; ending++) {
		u0 = rcl_domain_usage(g_domain);
		pc = m.xCreate(1024, 64, 1);
		assert_non_null(pc);
		a = m.xFetch(pc, 1, 2);
		b = m.xFetch(pc, 2, 2);
		assert_non_null(a);
		assert_non_null(b);
		m.xRekey(pc, a, 1, 2);		/* b is lost */
		m.xRekey(pc, b, 2, 3);		/* and found at 3 */
		assert_ptr_equal(m.xFetch(pc, 3, 0), b);	/* still pinned */
		assert_int_equal(m.xPagecount(pc), 2);
		switch (ending) {
		case 0:
			break;
		case 1:
			m.xUnpin(pc, b, 0);
			m.xTruncate(pc, 3);
			assert_int_equal(m.xPagecount(pc), 1);
			break;
		case 2:
			m.xUnpin(pc, b, 1);
			assert_int_equal(m.xPagecount(pc), 1);
			break;
		}
		m.xDestroy(pc);
		rcl_sqlite_stats(&s);
		assert_int_equal(s.pages, 0);
		assert_int_equal(rcl_domain_usage(g_domain), u0);
	}
}

/*
 * The counters are striped by thread: a page pinned or allocated in one
 * thread and unpinned or freed in another leaves each stripe's level
 * wrapped, and the sums must still be exact.
 */
struct stripe_job {
	sqlite3_pcache *pc;
	sqlite3_pcache_page *pg[4];
	int step;
};

static void *stripe_thread(void *arg)
{
	struct stripe_job *j = arg;
	unsigned i;

	if (j->step == 0) {
		j->pc = m.xCreate(1024, 64, 1);
		for (i = 0; i < 4 && j->pc; i++)
			j->pg[i] = m.xFetch(j->pc, i + 1, 2);
	} else {
		/* a hit on an unpinned page, then every page freed */
		j->pg[0] = m.xFetch(j->pc, 1, 0);
		if (j->pg[0])
			m.xUnpin(j->pc, j->pg[0], 0);
		m.xTruncate(j->pc, 0);
	}
	return NULL;
}

static void run_stripe_thread(struct stripe_job *j, int step)
{
	pthread_t t;

	j->step = step;
	assert_int_equal(pthread_create(&t, NULL, stripe_thread, j), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static void test_stats_across_threads(void **state)
{
	uint64_t charge = rcl_sqlite_page_charge(1024, 64);
	struct rcl_sqlite_stats s0, s;
	struct stripe_job j = { 0 };
	unsigned i;

	(void)state;
	assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &m), SQLITE_OK);
	assert_int_equal(m.xInit(m.pArg), SQLITE_OK);
	rcl_sqlite_stats(&s0);
	run_stripe_thread(&j, 0);		/* created, 4 pages pinned */
	assert_non_null(j.pc);
	for (i = 0; i < 4; i++)
		assert_non_null(j.pg[i]);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.pages - s0.pages, 4);
	assert_int_equal(s.pinned - s0.pinned, 4);
	assert_int_equal(s.misses - s0.misses, 4);
	assert_int_equal(s.charged - s0.charged,
			 4 * charge + (s.meta - s0.meta));
	for (i = 0; i < 4; i++)			/* unpinned here */
		m.xUnpin(j.pc, j.pg[i], 0);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.pinned, s0.pinned);
	assert_int_equal(s.pages - s0.pages, 4);
	run_stripe_thread(&j, 1);		/* a hit, then all freed */
	rcl_sqlite_stats(&s);
	print_message("stats across threads: pages %+lld, pinned %+lld, "
		      "charged %+lld (meta %+lld), hits %+lld\n",
		      (long long)(s.pages - s0.pages),
		      (long long)(s.pinned - s0.pinned),
		      (long long)(s.charged - s0.charged),
		      (long long)(s.meta - s0.meta),
		      (long long)(s.hits - s0.hits));
	assert_int_equal(s.hits - s0.hits, 1);
	assert_int_equal(s.pages, s0.pages);
	assert_int_equal(s.pinned, s0.pinned);
	assert_int_equal(s.charged - s0.charged, s.meta - s0.meta);
	m.xDestroy(j.pc);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.caches, s0.caches);
	assert_int_equal(s.charged, s0.charged);
	assert_int_equal(s.meta, s0.meta);
}

/*
 * A level read while pages move between threads' stripes: a page pinned
 * (and allocated) in one thread and unpinned (and freed) in another, the
 * reader summing the stripes between the two, must read a level that was
 * (here 0 or 1 page more than before), never one summed from two moments
 * (a wrap below it, about 2^64, or a count of pages gone already).
 */
struct level_job {
	sqlite3_pcache *pc;
	sqlite3_pcache_page *_Atomic pg;	/* handed from pinner to unpinner */
	atomic_bool stop;
};

static void *level_pinner(void *arg)
{
	struct level_job *j = arg;

	while (!atomic_load(&j->stop)) {
		sqlite3_pcache_page *pg;

		if (atomic_load(&j->pg))
			continue;
		pg = m.xFetch(j->pc, 1, 2);	/* allocated and pinned here */
		if (pg)
			atomic_store(&j->pg, pg);
	}
	return NULL;
}

static void *level_unpinner(void *arg)
{
	struct level_job *j = arg;

	while (!atomic_load(&j->stop)) {
		sqlite3_pcache_page *pg = atomic_load(&j->pg);

		if (!pg)
			continue;
		m.xUnpin(j->pc, pg, 1);		/* unpinned and freed here */
		atomic_store(&j->pg, NULL);
	}
	return NULL;
}

static void test_stats_levels_of_one_moment(void **state)
{
	struct level_job j = { 0 };
	uint64_t charge = rcl_sqlite_page_charge(1024, 64);
	struct rcl_sqlite_stats s0, s;
	pthread_t a, b;
	long i, bad = 0;

	(void)state;
	assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &m), SQLITE_OK);
	assert_int_equal(m.xInit(m.pArg), SQLITE_OK);
	j.pc = m.xCreate(1024, 64, 0);
	assert_non_null(j.pc);
	rcl_sqlite_stats(&s0);
	/* The pinner's stripe is chosen first: the reader sums it first. */
	assert_int_equal(pthread_create(&a, NULL, level_pinner, &j), 0);
	while (!atomic_load(&j.pg))
		;
	assert_int_equal(pthread_create(&b, NULL, level_unpinner, &j), 0);
	for (i = 0; i < 8000000 && !bad; i++) {
		rcl_sqlite_stats(&s);
		if (s.pinned - s0.pinned > 1 || s.pages - s0.pages > 1 ||
		    s.charged - s0.charged > charge)
			bad = i + 1;
	}
	atomic_store(&j.stop, true);
	assert_int_equal(pthread_join(a, NULL), 0);
	assert_int_equal(pthread_join(b, NULL), 0);
	if (j.pg)
		m.xUnpin(j.pc, j.pg, 1);
	m.xDestroy(j.pc);
	if (bad)
		print_message("read %ld: pinned %+lld pages %+lld charged %+lld\n",
			      bad, (long long)(s.pinned - s0.pinned),
			      (long long)(s.pages - s0.pages),
			      (long long)(s.charged - s0.charged));
	assert_int_equal(bad, 0);
}

static void test_table_charge(void **state)
{
	uint64_t charge = rcl_sqlite_page_charge(512, 16), u0, meta0;
	struct rcl_sqlite_stats s;
	sqlite3_pcache_page *p[300];
	sqlite3_pcache *pc;
	unsigned i;

	(void)state;
	u0 = rcl_domain_usage(g_domain);
	pc = m.xCreate(512, 16, 1);
	assert_non_null(pc);
	rcl_sqlite_stats(&s);
	meta0 = s.meta;
	assert_int_equal(rcl_domain_usage(g_domain), u0 + meta0);
	for (i = 0; i < 200; i++) {	/* 64 -> 128 -> 256 buckets */
		p[i] = m.xFetch(pc, i + 1, 2);
		assert_non_null(p[i]);
	}
	rcl_sqlite_stats(&s);
	assert_true(s.meta >= meta0 + 192 * (sizeof(void *) + 16));
	assert_int_equal(rcl_domain_usage(g_domain), u0 + s.meta + 200 * charge);
	meta0 = s.meta;
	/* room for pages 201 .. 257 but not for the doubling to 512 */
	assert_int_equal(rcl_domain_set_budget(g_domain, rcl_domain_usage(g_domain) +
						      57 * charge + 1024), 0);
	for (i = 200; i < 257; i++) {
		p[i] = m.xFetch(pc, i + 1, 2);
		assert_non_null(p[i]);
	}
	rcl_sqlite_stats(&s);
	assert_int_equal(s.meta, meta0);		/* not doubled */
	for (i = 0; i < 257; i++)			/* longer chains, all there */
		assert_ptr_equal(m.xFetch(pc, i + 1, 0), p[i]);
	assert_int_equal(rcl_domain_set_budget(g_domain, 4u << 20), 0);
	for (i = 0; i < 257; i++)
		m.xUnpin(pc, p[i], 1);
	m.xDestroy(pc);
	assert_int_equal(rcl_domain_usage(g_domain), u0);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.meta, 0);
	assert_int_equal(s.charged, 0);
}

/* ------------------------------------------------------------------------- */
/* Faults                                                                     */
/* ------------------------------------------------------------------------- */

/*
 * The fault points swept: with --full (suite 'slow'), every one; otherwise
 * (suites 'unit' and 'concurrency', run under valgrind and the sanitizers)
 * the first SWEEP_DENSE (xCreate in sqlite3_open, the first fetches), then
 * one in SWEEP_STRIDE, at a different phase for the two modes.
 */
#define SWEEP_DENSE 16
#define SWEEP_STRIDE 13
static bool g_full_sweep;

static long sweep_next(long nth, int from)
{
	if (g_full_sweep || nth < SWEEP_DENSE)
		return nth + 1;
	if (nth == SWEEP_DENSE)
		return nth + 1 + (from ? SWEEP_STRIDE / 2 : 0);
	return nth + SWEEP_STRIDE;
}

static void test_faults(void **state)
{
	sqlite3 *db;
	uint64_t before, after;
	long nth, injected = 0, nomem = 0, points = 0;
	int from;

	(void)state;
	/* the reference states: before and after the workload */
	assert_int_equal(sqlite3_open(g_path, &db), SQLITE_OK);
	before = content_hash(db);
	assert_int_equal(exec(db, "SAVEPOINT x; UPDATE t SET v = v || 'y' WHERE id % 2 = 0;"
			      "INSERT INTO t(v) SELECT v FROM t WHERE id < 400; SELECT 1"), SQLITE_OK);
	after = content_hash(db);
	assert_int_equal(exec(db, "ROLLBACK TO x; RELEASE x"), SQLITE_OK);
	assert_int_equal(content_hash(db), before);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);

	for (from = 0; from < 2; from++) {
		for (nth = 1;; nth = sweep_next(nth, from)) {
			int rc, orc;
			uint64_t h;

			/* the failure may hit xCreate inside sqlite3_open */
			arm(nth, from);
			orc = sqlite3_open(g_path, &db);
			if (orc == SQLITE_OK) {
				exec(db, "PRAGMA synchronous=OFF; PRAGMA cache_size=10");
				rc = exec(db, "BEGIN; UPDATE t SET v = v || 'y' WHERE id % 2 = 0;"
					  "INSERT INTO t(v) SELECT v FROM t WHERE id < 400;"
					  "SELECT count(*) FROM t; COMMIT");
			} else {
				rc = orc;
			}
			disarm();
			if (rc != SQLITE_OK) {
				assert_int_equal(rc & 0xff, SQLITE_NOMEM);
				nomem++;
			}
			if (orc == SQLITE_OK) {
				exec(db, "ROLLBACK");	/* if the failure left it open */
			}
			sqlite3_close(db);
			injected += atomic_load(&a_failed);
			points++;

			/* the database is intact: before or after, and ok */
			assert_int_equal(sqlite3_open(g_path, &db), SQLITE_OK);
			assert_int_equal(exec(db, "PRAGMA synchronous=OFF"), SQLITE_OK);
			integrity_ok(db);
			h = content_hash(db);
			assert_true(h == before || h == after);
			if (h == after)	/* undo it for the next run */
				assert_int_equal(exec(db, "DELETE FROM t WHERE id > 2500;"
						      "UPDATE t SET v = substr(v, 1, length(v) - 1) WHERE id % 2 = 0"),
						 SQLITE_OK);
			assert_int_equal(content_hash(db), before);
			assert_int_equal(sqlite3_close(db), SQLITE_OK);
			assert_int_equal(a_live, 0);
			if (atomic_load(&a_failed) == 0)
				break;		/* ran to the end without reaching N */
			if (nth > 4000)
				fail_msg("no end to the fault points");
		}
	}
	print_message("faults (%s sweep): %ld runs, %ld failures injected, %ld SQLITE_NOMEM\n",
		      g_full_sweep ? "full" : "quick", points, injected, nomem);
	assert_true(nomem > 0);
	unlink(g_path);
}

static void test_teardown(void **state)
{
	struct rcl_sqlite_stats s;

	(void)state;
	assert_int_equal(sqlite3_shutdown(), SQLITE_OK);
	rcl_sqlite_stats(&s);
	assert_int_equal(s.caches, 0);
	assert_int_equal(s.pages, 0);
	assert_int_equal(rcl_domain_usage(g_domain), 0);
	assert_int_equal(rcl_domain_free(g_domain), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_install_badinput),
		cmocka_unit_test(test_methods),
		cmocka_unit_test(test_rekey_onto_pinned_page_is_freed),
		cmocka_unit_test(test_rekey_of_a_lost_page),
		cmocka_unit_test(test_table_charge),
		cmocka_unit_test(test_stats_across_threads),
		cmocka_unit_test(test_stats_levels_of_one_moment),
		cmocka_unit_test(test_callback_fetch_of_isolated_page),
		cmocka_unit_test(test_callback_truncate_of_isolated_page),
		cmocka_unit_test(test_callback_rekey_onto_isolated_page),
		cmocka_unit_test(test_callback_destroy_with_isolated_page),
		cmocka_unit_test(test_caches_are_bounded_by_max_lruvecs),
		cmocka_unit_test(test_databases),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_teardown),
	};

	if (argc > 1 && !strcmp(argv[1], "--full"))
		g_full_sweep = true;
	else if (argc > 1) {
		fprintf(stderr, "usage: %s [--full]\n", argv[0]);
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
