/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the flusher module (flusher.h): the dirty / writeback /
 * reclaim-when-clean states and their accounting in lruvecs and domains,
 * writeback pins, what reclaim does with dirty and writeback objects (it
 * never writes, never evicts them, counts them, flags and activates them),
 * immediate-reclaim rotation, the flusher trigger and its request sizes,
 * request coalescing (also under concurrent reclaimers), the dirty limits of
 * rcl_domain_balance_dirty(), the throttling of reclaimers on writeback, the
 * library's flusher thread and rcl_domain_writeback_all(), and the
 * RCL_DOMAIN_RECLAIM_WRITES baseline.
 *
 * Deterministic: every wait that involves time runs on a fake clock, and the
 * tests synchronise with other threads by polling counters and the fake
 * clock's waiters (WAIT_FOR()), never by sleeping for a time (one test
 * sleeps between its polls, to keep its loads few).  The application's
 * flusher is a mock that records every request it is handed (and asserts,
 * in the wakeup, that at most one is in flight); the library's flusher
 * thread writes through a mock write callback that asserts it never runs in
 * a reclaim context (a thread-local flag set by the evict callback and
 * around the tests' calls to rcl_domain_reclaim()).
 *
 * Sizes used by the trigger tests.  Direct reclaim starts at priority 12 and
 * scans its whole target there (scan.h); with one LRU type in use the
 * inactive target is size >> priority.  So an lruvec of 8192 objects has a
 * target of 2 at priority 12: one batch, the two oldest objects - which the
 * tests make dirty, writeback or clean as they need.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
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
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "lru_check.h"
#include "test_util.h"

/* Bound on polling loops (sched_yield() each): far beyond any real wait. */
#define SPIN_MAX 20000000ul

/*
 * Poll until @cond holds; fail the test if it never does.  @cond is not
 * evaluated again once it held: some conditions hold only for a moment (a
 * thread seen waiting may wake up right after).
 */
#define WAIT_FOR(cond)                                                        \
	do {                                                                  \
		unsigned long spin_;                                          \
		bool ok_ = false;                                             \
		for (spin_ = 0; spin_ < SPIN_MAX; spin_++) {                  \
			if ((cond)) {                                         \
				ok_ = true;                                   \
				break;                                        \
			}                                                     \
			sched_yield();                                        \
		}                                                             \
		if (!ok_)                                                     \
			fail_msg("line %d: timed out waiting for %s",         \
				 __LINE__, #cond);                            \
	} while (0)

#define INACTIVE RCL_LRU_LIST(RCL_LRU_FILE, 0)
#define ACTIVE RCL_LRU_LIST(RCL_LRU_FILE, 1)
#define F_STATE (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED)
#define F_DWR (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK | RCL_LRU_F_RECLAIM)
#define HUGE_BUDGET (1ull << 40)

/* Set while this thread is inside reclaim (evict callback, or the tests'
 * calls to rcl_domain_reclaim()): the write callback must never see it. */
static _Thread_local int tls_in_reclaim;

/* ------------------------------------------------------------------------- */
/* A test cache                                                               */
/* ------------------------------------------------------------------------- */

struct fcache;

struct fobj {
	struct rcl_lru_node lru;
	struct fcache *c;
	unsigned id;
	uint32_t weight;
	atomic_bool cached;	/* on the lruvec (charged, if the cache charges) */
	atomic_uint writes;	/* writes of this object (write callback, or
				   the baseline's evict callback) */
};

enum evict_mode { EV_FREE, EV_BUSY };

typedef void (*evict_hook_fn)(struct fcache *c, struct fobj *o,
			      struct rcl_evict_control *ctl);

#define EVLOG 256

struct fcache {
	struct rcl_lruvec lv;
	struct rcl_domain *d;	/* objects are charged to it, if not NULL */
	struct fobj *objs;
	unsigned n;
	atomic_int mode;
	atomic_ulong calls, freed;
	atomic_ulong evict_dirty_flag;	/* calls with RCL_EVICT_DIRTY */
	atomic_ulong dirty_seen;	/* calls on a dirty or writeback node */
	_Atomic(evict_hook_fn) hook;
	atomic_uint nlog;
	unsigned log[EVLOG];		/* ids, in evict order */
};

static enum rcl_evict_status fc_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct fobj *o = rcl_container_of(node, struct fobj, lru);
	struct fcache *c = ctl->priv;
	evict_hook_fn hook = atomic_load(&c->hook);
	enum rcl_evict_status st;
	unsigned f, k;

	tls_in_reclaim++;
	T_PEQ(o->c, c);
	T_PEQ(ctl->lruvec, &c->lv);
	T_EQ(ctl->weight, o->weight);
	T_CHECK(atomic_load(&o->cached));
	atomic_fetch_add(&c->calls, 1);
	k = atomic_fetch_add(&c->nlog, 1);
	if (k < EVLOG)
		c->log[k] = o->id;
	if (hook)
		hook(c, o, ctl);
	f = rcl_lru_node_flags(node);
	T_CHECK(f & RCL_LRU_F_ISOLATED);
	if (ctl->flags & RCL_EVICT_DIRTY) {
		/* The baseline only: a dirty object, not under writeback. */
		atomic_fetch_add(&c->evict_dirty_flag, 1);
		T_CHECK(f & RCL_LRU_F_DIRTY);
		T_CHECK(!(f & RCL_LRU_F_WRITEBACK));
	} else if (f & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK)) {
		atomic_fetch_add(&c->dirty_seen, 1);
	}
	if (atomic_load(&c->mode) == EV_BUSY) {
		st = RCL_EVICT_BUSY;
	} else {
		if (ctl->flags & RCL_EVICT_DIRTY)
			atomic_fetch_add(&o->writes, 1);  /* "written" here */
		atomic_store(&o->cached, false);
		if (c->d)
			T_EQ(rcl_domain_uncharge(c->d, ctl->weight), 0);
		atomic_fetch_add(&c->freed, 1);
		st = RCL_EVICT_FREED;
	}
	tls_in_reclaim--;
	return st;
}

static const struct rcl_lruvec_ops fc_ops = { .evict = fc_evict };

/*
 * A cache of @n objects; object i weighs @w, or @w * (i + 1) if @graded.
 * Objects are charged to @d (if not NULL); the lruvec is attached to it if
 * @attach.
 */
static void fc_init(struct fcache *c, struct rcl_domain *d, unsigned n,
		    uint32_t w, bool graded, bool attach)
{
	struct rcl_lruvec_config cfg = { .ops = &fc_ops, .priv = c };
	unsigned i;

	memset(c, 0, sizeof(*c));
	c->d = d;
	c->n = n;
	c->objs = calloc(n ? n : 1, sizeof(*c->objs));
	assert_non_null(c->objs);
	for (i = 0; i < n; i++) {
		c->objs[i].c = c;
		c->objs[i].id = i;
		c->objs[i].weight = graded ? w * (i + 1) : w;
	}
	assert_int_equal(rcl_lruvec_init(&c->lv, &cfg), 0);
	if (d && attach)
		assert_int_equal(rcl_domain_attach(d, &c->lv, 0), 0);
}

static struct fobj *O(struct fcache *c, unsigned i)
{
	assert_true(i < c->n);
	return &c->objs[i];
}

/* Charge object @i and add it (@flags as rcl_lruvec_add()'s). */
static void fc_add(struct fcache *c, unsigned i, unsigned flags)
{
	struct fobj *o = O(c, i);

	if (c->d)
		assert_int_equal(rcl_domain_charge(c->d, o->weight, 0, NULL), 0);
	rcl_lru_node_init(&o->lru);
	atomic_store(&o->cached, true);
	assert_int_equal(rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE,
					o->weight, flags),
			 0);
}

/* Objects 0 .. n - 1, listed in that order: object 0 at the inactive tail. */
static void fc_fill(struct fcache *c, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		fc_add(c, i, RCL_LRU_ADD_NOBATCH);
}

static unsigned fc_cached(struct fcache *c)
{
	unsigned i, n = 0;

	for (i = 0; i < c->n; i++)
		n += atomic_load(&c->objs[i].cached);
	return n;
}

static uint64_t fc_cached_weight(struct fcache *c)
{
	uint64_t w = 0;
	unsigned i;

	for (i = 0; i < c->n; i++)
		if (atomic_load(&c->objs[i].cached))
			w += c->objs[i].weight;
	return w;
}

static unsigned flags_of(struct fobj *o)
{
	return rcl_lru_node_flags(&o->lru);
}

static unsigned dwr_of(struct fobj *o)
{
	return flags_of(o) & F_DWR;
}

static void set_dirty(struct fcache *c, unsigned i)
{
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &O(c, i)->lru), 0);
}

static void wb_start(struct fcache *c, unsigned i)
{
	assert_int_equal(rcl_lruvec_writeback_start(&c->lv, &O(c, i)->lru), 0);
}

static void wb_end(struct fcache *c, unsigned i, int error)
{
	assert_int_equal(rcl_lruvec_writeback_end(&c->lv, &O(c, i)->lru, error),
			 0);
}

/* Dirty, then under writeback. */
static void make_wb(struct fcache *c, unsigned i)
{
	set_dirty(c, i);
	wb_start(c, i);
}

static void evlog_reset(struct fcache *c)
{
	atomic_store(&c->nlog, 0);
}

/* Lists consistent with the cached objects; nothing isolated. */
static void fc_check(struct fcache *c)
{
	assert_int_equal(lru_check_invariants(&c->lv), fc_cached(c));
	assert_int_equal(rcl_lruvec_nr_isolated(&c->lv), 0);
}

/*
 * End any writeback, delete and uncharge what is left, detach (if @attached)
 * and destroy.  The lruvec's dirty counts must end at zero.
 */
static void fc_destroy(struct fcache *c, bool attached)
{
	struct rcl_dirty_stats s;
	unsigned i;

	rcl_lru_drain_local();
	fc_check(c);
	for (i = 0; i < c->n; i++) {
		struct fobj *o = &c->objs[i];

		if (!atomic_load(&o->cached))
			continue;
		if (flags_of(o) & RCL_LRU_F_WRITEBACK)
			assert_int_equal(rcl_lruvec_writeback_end(&c->lv,
								  &o->lru, 0),
					 0);
		assert_int_equal(rcl_lruvec_del(&c->lv, &o->lru), 0);
		atomic_store(&o->cached, false);
		if (c->d)
			assert_int_equal(rcl_domain_uncharge(c->d, o->weight), 0);
	}
	assert_int_equal(rcl_lruvec_dirty_stats(&c->lv, &s), 0);
	assert_int_equal(s.nr_dirty + s.weight_dirty + s.nr_writeback +
				 s.weight_writeback,
			 0);
	if (attached)
		assert_int_equal(rcl_domain_detach(c->d, &c->lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&c->lv), 0);
	free(c->objs);
	c->objs = NULL;
}

/* ------------------------------------------------------------------------- */
/* Dirty statistics                                                           */
/* ------------------------------------------------------------------------- */

static void stats_eq_at(int line, const char *what,
			const struct rcl_dirty_stats *s, uint64_t nd,
			uint64_t wd, uint64_t nw, uint64_t ww)
{
	if (s->nr_dirty != nd || s->weight_dirty != wd ||
	    s->nr_writeback != nw || s->weight_writeback != ww)
		fail_msg("line %d: %s dirty stats %llu/%llu writeback %llu/%llu,"
			 " expected %llu/%llu writeback %llu/%llu",
			 line, what, (unsigned long long)s->nr_dirty,
			 (unsigned long long)s->weight_dirty,
			 (unsigned long long)s->nr_writeback,
			 (unsigned long long)s->weight_writeback,
			 (unsigned long long)nd, (unsigned long long)wd,
			 (unsigned long long)nw, (unsigned long long)ww);
}

static void lv_stats_at(int line, struct rcl_lruvec *lv, uint64_t nd,
			uint64_t wd, uint64_t nw, uint64_t ww)
{
	struct rcl_dirty_stats s;

	assert_int_equal(rcl_lruvec_dirty_stats(lv, &s), 0);
	stats_eq_at(line, "lruvec", &s, nd, wd, nw, ww);
}

static void dom_stats_at(int line, struct rcl_domain *d, uint64_t nd,
			 uint64_t wd, uint64_t nw, uint64_t ww)
{
	struct rcl_dirty_stats s;

	assert_int_equal(rcl_domain_dirty_stats(d, &s), 0);
	stats_eq_at(line, "domain", &s, nd, wd, nw, ww);
}

/* Exact dirty counts: (objects, weight) dirty, (objects, weight) writeback. */
#define LV_STATS(lv, nd, wd, nw, ww) lv_stats_at(__LINE__, lv, nd, wd, nw, ww)
#define DOM_STATS(d, nd, wd, nw, ww) dom_stats_at(__LINE__, d, nd, wd, nw, ww)

static struct rcl_vmstat vmstat(const struct rcl_domain *d)
{
	struct rcl_vmstat v;

	assert_int_equal(rcl_domain_vmstat(d, &v), 0);
	return v;
}

/* ------------------------------------------------------------------------- */
/* The application's flusher: a mock that records requests                    */
/* ------------------------------------------------------------------------- */

#define MOCK_MAX 8192

struct mock {
	pthread_mutex_t m;
	pthread_cond_t cv;
	struct rcl_flush_request req[MOCK_MAX];
	unsigned n;			/* requests delivered, under m */
	atomic_uint nwake;		/* n, for lock-free polling */
	atomic_int inflight;		/* delivered and not acknowledged */
	atomic_ullong last_seq;
	struct rcl_domain *d;
	/* the asynchronous acknowledger (mock_ack_main) */
	unsigned served;
	bool stop;
	atomic_ulong acks;
};

/*
 * The wakeup: runs wherever the library delivers (a reclaimer, a dirtier, a
 * thread calling rcl_domain_flush_done()).  At most one request is in
 * flight; sequence numbers only grow.
 */
static void mock_wakeup(void *priv, const struct rcl_flush_request *req)
{
	struct mock *m = priv;

	T_EQ(atomic_fetch_add(&m->inflight, 1), 0);
	T_CHECK(req->seq > atomic_load(&m->last_seq));
	atomic_store(&m->last_seq, req->seq);
	T_CHECK(req->reason == RCL_FLUSH_VMSCAN ||
		req->reason == RCL_FLUSH_BACKGROUND ||
		req->reason == RCL_FLUSH_SYNC);
	pthread_mutex_lock(&m->m);
	T_CHECK(m->n < MOCK_MAX);
	m->req[m->n++] = *req;
	atomic_store(&m->nwake, m->n);
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->m);
}

static const struct rcl_flusher_ops mock_ops = { .wakeup = mock_wakeup };

static void mock_init(struct mock *m)
{
	memset(m, 0, sizeof(*m));
	assert_int_equal(pthread_mutex_init(&m->m, NULL), 0);
	assert_int_equal(pthread_cond_init(&m->cv, NULL), 0);
}

static void mock_fini(struct mock *m)
{
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->m);
}

static unsigned mock_n(struct mock *m)
{
	return atomic_load(&m->nwake);
}

static struct rcl_flush_request mock_req(struct mock *m, unsigned i)
{
	struct rcl_flush_request r;

	pthread_mutex_lock(&m->m);
	T_CHECK(i < m->n);
	r = m->req[i];
	pthread_mutex_unlock(&m->m);
	return r;
}

/* The flusher has served request @i: acknowledge it (any thread). */
static int mock_ack(struct mock *m, unsigned i)
{
	struct rcl_flush_request r = mock_req(m, i);
	int err;

	atomic_fetch_sub(&m->inflight, 1);
	err = rcl_domain_flush_done(m->d, &r);
	if (err)
		atomic_fetch_add(&m->inflight, 1);
	else
		atomic_fetch_add(&m->acks, 1);
	return err;
}

static void req_eq_at(int line, const struct rcl_flush_request *r,
		      uint64_t nr, enum rcl_flush_reason reason, uint64_t seq)
{
	if (r->nr_to_write != nr || r->reason != reason || r->seq != seq)
		fail_msg("line %d: request {%llu, reason %d, seq %llu}, expected "
			 "{%llu, reason %d, seq %llu}",
			 line, (unsigned long long)r->nr_to_write, (int)r->reason,
			 (unsigned long long)r->seq, (unsigned long long)nr,
			 (int)reason, (unsigned long long)seq);
}

#define REQ_EQ(m, i, nr, reason, seq)                                         \
	do {                                                                  \
		struct rcl_flush_request r_ = mock_req((m), (i));             \
		req_eq_at(__LINE__, &r_, (nr), (reason), (seq));             \
	} while (0)

/* ------------------------------------------------------------------------- */
/* The library's flusher thread: mock write and sync callbacks                */
/* ------------------------------------------------------------------------- */

enum wthread { W_ANY, W_FLUSHER, W_CALLER };

typedef void (*write_hook_fn)(struct fobj *o);

#define WLOG 1024

struct wctx {
	pthread_t caller;	/* the test's thread */
	enum wthread where;	/* which thread the writes must run on */
	atomic_bool have_tid;
	pthread_t tid;		/* the thread of the first write */
	atomic_ulong writes, syncs, redirtied_at_write;
	atomic_int fail_id;	/* the write of this object fails (-EIO) */
	atomic_ullong fail_mask;	/* ... and those of these ids (< 64) */
	atomic_int sync_fail;	/* the next N syncs fail (-EIO) */
	atomic_int hold;	/* writes wait while it is set */
	atomic_int hold_only;	/* ... only that of this object, if >= 0 */
	_Atomic(write_hook_fn) hook;
	atomic_uint nlog;
	unsigned log[WLOG];	/* ids, in write order */
};

static struct wctx *wctx_cur;	/* for hooks */

static void wctx_init(struct wctx *w, enum wthread where)
{
	memset(w, 0, sizeof(*w));
	w->caller = pthread_self();
	w->where = where;
	atomic_store(&w->fail_id, -1);
	atomic_store(&w->hold_only, -1);
	wctx_cur = w;
}

static int mock_write(void *priv, struct rcl_lru_node *node)
{
	struct wctx *w = priv;
	struct fobj *o = rcl_container_of(node, struct fobj, lru);
	write_hook_fn hook = atomic_load(&w->hook);
	unsigned f = rcl_lru_node_flags(node), k;

	/* Never in reclaim: not in an evict callback, not in a reclaim call. */
	T_EQ(tls_in_reclaim, 0);
	/* Under writeback, hence pinned: still on its lruvec. */
	T_CHECK(f & RCL_LRU_F_WRITEBACK);
	T_CHECK(f & F_STATE);
	T_CHECK(atomic_load(&o->cached));
	if (f & RCL_LRU_F_DIRTY)
		atomic_fetch_add(&w->redirtied_at_write, 1);
	switch (w->where) {
	case W_FLUSHER:
		T_CHECK(!pthread_equal(pthread_self(), w->caller));
		if (!atomic_exchange(&w->have_tid, true))
			w->tid = pthread_self();
		else
			T_CHECK(pthread_equal(pthread_self(), w->tid));
		break;
	case W_CALLER:
		T_CHECK(pthread_equal(pthread_self(), w->caller));
		break;
	default:
		break;
	}
	while (atomic_load(&w->hold) && (atomic_load(&w->hold_only) < 0 ||
					  atomic_load(&w->hold_only) == (int)o->id))
		sched_yield();
	k = atomic_fetch_add(&w->nlog, 1);
	if (k < WLOG)
		w->log[k] = o->id;
	if (hook)
		hook(o);
	atomic_fetch_add(&o->writes, 1);
	atomic_fetch_add(&w->writes, 1);
	if ((int)o->id == atomic_load(&w->fail_id) ||
	    (o->id < 64 && (atomic_load(&w->fail_mask) >> o->id) & 1))
		return -EIO;
	return 0;
}

static int mock_sync(void *priv)
{
	struct wctx *w = priv;
	int n;

	T_EQ(tls_in_reclaim, 0);
	atomic_fetch_add(&w->syncs, 1);
	n = atomic_load(&w->sync_fail);
	if (n > 0) {
		atomic_store(&w->sync_fail, n - 1);
		return -EIO;
	}
	return 0;
}

static const struct rcl_writeback_ops wops = { mock_write, mock_sync };

/* ------------------------------------------------------------------------- */
/* Domains                                                                    */
/* ------------------------------------------------------------------------- */

static struct rcl_fake_clock *fclock_new(void)
{
	struct rcl_fake_clock *fc = NULL;

	assert_int_equal(rcl_fake_clock_new(0, &fc), 0);
	assert_non_null(fc);
	return fc;
}

static struct rcl_domain *dom_cfg(struct rcl_domain_config *cfg,
				  struct mock *m)
{
	struct rcl_domain *d = NULL;

	if (m) {
		cfg->flusher = &mock_ops;
		cfg->flusher_priv = m;
	}
	assert_int_equal(rcl_domain_new(cfg, &d), 0);
	assert_non_null(d);
	if (m)
		m->d = d;
	return d;
}

static struct rcl_domain *dom_make(uint64_t budget, struct rcl_fake_clock *fc,
				   struct mock *m, enum rcl_flush_policy pol,
				   unsigned flags)
{
	struct rcl_domain_config cfg = {
		.budget = budget,
		.clock = fc ? rcl_fake_clock_clock(fc) : NULL,
		.flush_policy = pol,
		.flags = flags,
	};

	return dom_cfg(&cfg, m);
}

static void dom_free(struct rcl_domain *d, struct rcl_fake_clock *fc)
{
	assert_int_equal(rcl_domain_usage(d), 0);
	DOM_STATS(d, 0, 0, 0, 0);
	assert_int_equal(rcl_domain_free(d), 0);
	if (fc) {
		assert_int_equal(rcl_fake_clock_waiters(fc), 0);
		rcl_fake_clock_free(fc);
	}
}

/* rcl_domain_reclaim(), marked as a reclaim context for the write check. */
static void reclaim(struct rcl_domain *d, uint64_t goal, uint64_t ctx,
		    struct rcl_reclaim_result *res)
{
	tls_in_reclaim++;
	T_EQ(rcl_domain_reclaim(d, goal, ctx, res), 0);
	tls_in_reclaim--;
}

/* ------------------------------------------------------------------------- */
/* 1. States and accounting                                                   */
/* ------------------------------------------------------------------------- */

static void test_flusher_state_errors(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;
	struct rcl_dirty_stats s;
	struct rcl_lruvec z;
	struct fcache a, b;

	(void)state;
	memset(&z, 0, sizeof(z));
	fc_init(&a, d, 2, 10, false, true);
	fc_init(&b, NULL, 1, 10, false, false);
	fc_add(&a, 0, RCL_LRU_ADD_NOBATCH);
	fc_add(&b, 0, RCL_LRU_ADD_NOBATCH);

	/* NULL and uninitialised lruvecs: -EINVAL. */
	assert_int_equal(rcl_lruvec_set_dirty(NULL, &O(&a, 0)->lru), -EINVAL);
	assert_int_equal(rcl_lruvec_set_dirty(&a.lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_set_dirty(&z, &idle), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_start(NULL, &O(&a, 0)->lru),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_start(&a.lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_start(&z, &idle), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(NULL, &O(&a, 0)->lru, 0),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(&a.lv, NULL, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(&z, &idle, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_dirty_stats(NULL, &s), -EINVAL);
	assert_int_equal(rcl_lruvec_dirty_stats(&a.lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_dirty_stats(&z, &s), -EINVAL);
	assert_int_equal(rcl_domain_dirty_stats(NULL, &s), -EINVAL);
	assert_int_equal(rcl_domain_dirty_stats(d, NULL), -EINVAL);

	/* Not on the lruvec: idle, or on another lruvec: -ENOENT. */
	assert_int_equal(rcl_lruvec_set_dirty(&a.lv, &idle), -ENOENT);
	assert_int_equal(rcl_lruvec_set_dirty(&a.lv, &O(&a, 1)->lru), -ENOENT);
	assert_int_equal(rcl_lruvec_set_dirty(&a.lv, &O(&b, 0)->lru), -ENOENT);
	assert_int_equal(rcl_lruvec_writeback_start(&a.lv, &idle), -ENOENT);
	assert_int_equal(rcl_lruvec_writeback_end(&a.lv, &idle, 0), -ENOENT);
	set_dirty(&b, 0);
	assert_int_equal(rcl_lruvec_writeback_start(&a.lv, &O(&b, 0)->lru),
			 -ENOENT);
	wb_start(&b, 0);
	assert_int_equal(rcl_lruvec_writeback_end(&a.lv, &O(&b, 0)->lru, 0),
			 -ENOENT);
	wb_end(&b, 0, 0);

	/* A clean node: writeback_start -EINVAL; not under writeback: end
	 * -EINVAL (clean or dirty). */
	assert_int_equal(rcl_lruvec_writeback_start(&a.lv, &O(&a, 0)->lru),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_writeback_end(&a.lv, &O(&a, 0)->lru, 0),
			 -EINVAL);
	set_dirty(&a, 0);
	assert_int_equal(rcl_lruvec_writeback_end(&a.lv, &O(&a, 0)->lru, 0),
			 -EINVAL);
	/* Under writeback already: -EBUSY, also once redirtied. */
	wb_start(&a, 0);
	assert_int_equal(rcl_lruvec_writeback_start(&a.lv, &O(&a, 0)->lru),
			 -EBUSY);
	set_dirty(&a, 0);
	assert_int_equal(rcl_lruvec_writeback_start(&a.lv, &O(&a, 0)->lru),
			 -EBUSY);
	/* Failing calls changed nothing. */
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK);
	LV_STATS(&a.lv, 1, 10, 1, 10);
	DOM_STATS(d, 1, 10, 1, 10);
	LV_STATS(&b.lv, 0, 0, 0, 0);
	wb_end(&a, 0, 0);
	wb_start(&a, 0);
	wb_end(&a, 0, 0);
	assert_int_equal(dwr_of(O(&a, 0)), 0);

	fc_destroy(&a, true);
	fc_destroy(&b, false);
	dom_free(d, NULL);
}

/*
 * Every transition, with the lruvec's and the domain's counts checked after
 * each step.  Object i of cache a weighs 10 * (i + 1).
 *
 * An object redirtied while under writeback counts both as dirty and as
 * under writeback (it needs another write, and its write is in progress),
 * as the kernel's NR_FILE_DIRTY and NR_WRITEBACK count such a page.
 */
static void test_flusher_state_transitions(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct fcache a;

	(void)state;
	fc_init(&a, d, 4, 10, true, true);
	fc_add(&a, 0, RCL_LRU_ADD_NOBATCH);
	LV_STATS(&a.lv, 0, 0, 0, 0);
	DOM_STATS(d, 0, 0, 0, 0);

	/* clean -> dirty; idempotent */
	set_dirty(&a, 0);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_DIRTY);
	assert_true(flags_of(O(&a, 0)) & RCL_LRU_F_LISTED);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);
	set_dirty(&a, 0);
	set_dirty(&a, 0);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_DIRTY);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);

	/* dirty -> writeback (and clean) */
	wb_start(&a, 0);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_WRITEBACK);
	LV_STATS(&a.lv, 0, 0, 1, 10);
	DOM_STATS(d, 0, 0, 1, 10);

	/* redirtied during writeback: dirty and writeback */
	set_dirty(&a, 0);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK);
	LV_STATS(&a.lv, 1, 10, 1, 10);
	DOM_STATS(d, 1, 10, 1, 10);
	set_dirty(&a, 0);	/* idempotent there too */
	LV_STATS(&a.lv, 1, 10, 1, 10);

	/* the write ends: the object stays dirty (it needs another write) */
	wb_end(&a, 0, 0);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_DIRTY);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);

	/* a failed write: dirty again */
	wb_start(&a, 0);
	LV_STATS(&a.lv, 0, 0, 1, 10);
	wb_end(&a, 0, -EIO);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_DIRTY);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);

	/* a failed write of a redirtied object: dirty, counted once */
	wb_start(&a, 0);
	set_dirty(&a, 0);
	wb_end(&a, 0, -EIO);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_DIRTY);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);

	/* a successful write: clean */
	wb_start(&a, 0);
	wb_end(&a, 0, 0);
	assert_int_equal(dwr_of(O(&a, 0)), 0);
	LV_STATS(&a.lv, 0, 0, 0, 0);
	DOM_STATS(d, 0, 0, 0, 0);
	assert_int_equal(rcl_lruvec_writeback_end(&a.lv, &O(&a, 0)->lru, 0),
			 -EINVAL);

	/* Several objects: the sums. */
	fc_add(&a, 1, RCL_LRU_ADD_NOBATCH);	/* 20 */
	fc_add(&a, 2, RCL_LRU_ADD_NOBATCH);	/* 30 */
	fc_add(&a, 3, RCL_LRU_ADD_NOBATCH);	/* 40 */
	set_dirty(&a, 1);
	set_dirty(&a, 2);
	set_dirty(&a, 3);
	wb_start(&a, 2);
	LV_STATS(&a.lv, 2, 60, 1, 30);
	DOM_STATS(d, 2, 60, 1, 30);
	wb_start(&a, 3);
	set_dirty(&a, 3);
	LV_STATS(&a.lv, 2, 60, 2, 70);
	DOM_STATS(d, 2, 60, 2, 70);
	wb_end(&a, 2, 0);
	wb_end(&a, 3, 0);
	LV_STATS(&a.lv, 2, 60, 0, 0);
	DOM_STATS(d, 2, 60, 0, 0);
	/* The list a node is on does not change with its state. */
	assert_int_equal(lru_check_pos_from_tail(&a.lv, INACTIVE, &O(&a, 0)->lru),
			 0);
	assert_int_equal(lru_check_pos_from_tail(&a.lv, INACTIVE, &O(&a, 3)->lru),
			 3);
	fc_check(&a);

	fc_destroy(&a, true);
	dom_free(d, NULL);
}

/* Pending (in this thread's add batch) and isolated nodes. */
static void test_flusher_state_pending_and_isolated(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_lru_isolated iso;
	struct rcl_lru_node *n;
	struct fcache a;

	(void)state;
	fc_init(&a, d, 4, 10, true, true);

	/* Pending: dirty, writeback, back to dirty; drained with its state. */
	fc_add(&a, 0, 0);
	assert_true(flags_of(O(&a, 0)) & RCL_LRU_F_PENDING);
	set_dirty(&a, 0);
	assert_true(flags_of(O(&a, 0)) & RCL_LRU_F_PENDING);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);
	wb_start(&a, 0);
	LV_STATS(&a.lv, 0, 0, 1, 10);
	wb_end(&a, 0, -EIO);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	assert_true(flags_of(O(&a, 0)) & RCL_LRU_F_PENDING);
	rcl_lru_drain_local();
	assert_true(flags_of(O(&a, 0)) & RCL_LRU_F_LISTED);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_DIRTY);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);

	/* Isolated: every transition works, and survives putback. */
	fc_add(&a, 1, RCL_LRU_ADD_NOBATCH);
	fc_add(&a, 2, RCL_LRU_ADD_NOBATCH);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&a.lv, INACTIVE, 3, &iso), 0);
	assert_int_equal(iso.nr, 3);
	assert_true(flags_of(O(&a, 1)) & RCL_LRU_F_ISOLATED);
	set_dirty(&a, 1);
	LV_STATS(&a.lv, 2, 30, 0, 0);
	DOM_STATS(d, 2, 30, 0, 0);
	wb_start(&a, 1);
	LV_STATS(&a.lv, 1, 10, 1, 20);
	wb_end(&a, 1, 0);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	set_dirty(&a, 1);
	set_dirty(&a, 2);
	LV_STATS(&a.lv, 3, 60, 0, 0);
	DOM_STATS(d, 3, 60, 0, 0);
	assert_int_equal(rcl_lruvec_putback(&a.lv, &iso), 0);
	assert_int_equal(dwr_of(O(&a, 1)), RCL_LRU_F_DIRTY);
	assert_int_equal(dwr_of(O(&a, 2)), RCL_LRU_F_DIRTY);
	LV_STATS(&a.lv, 3, 60, 0, 0);
	DOM_STATS(d, 3, 60, 0, 0);
	fc_check(&a);

	/* An isolated dirty node taken out of its set for good: no longer
	 * counted. */
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&a.lv, INACTIVE, 3, &iso), 0);
	for (n = rcl_lru_isolated_next(&iso, NULL); n;
	     n = rcl_lru_isolated_next(&iso, n))
		if (n == &O(&a, 2)->lru)
			break;
	assert_non_null(n);
	assert_int_equal(rcl_lru_isolated_remove(&iso, n), 0);
	atomic_store(&O(&a, 2)->cached, false);
	assert_int_equal(rcl_domain_uncharge(d, 30), 0);
	LV_STATS(&a.lv, 2, 30, 0, 0);
	DOM_STATS(d, 2, 30, 0, 0);
	assert_int_equal(rcl_lruvec_putback(&a.lv, &iso), 0);

	/* Deleting a dirty object (listed, then pending): no longer counted. */
	assert_int_equal(rcl_lruvec_del(&a.lv, &O(&a, 1)->lru), 0);
	atomic_store(&O(&a, 1)->cached, false);
	assert_int_equal(rcl_domain_uncharge(d, 20), 0);
	assert_int_equal(flags_of(O(&a, 1)) & (F_STATE | F_DWR), 0);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);
	fc_add(&a, 3, 0);	/* pending */
	set_dirty(&a, 3);
	LV_STATS(&a.lv, 2, 50, 0, 0);
	assert_int_equal(rcl_lruvec_del(&a.lv, &O(&a, 3)->lru), 0);
	atomic_store(&O(&a, 3)->cached, false);
	assert_int_equal(rcl_domain_uncharge(d, 40), 0);
	assert_int_equal(flags_of(O(&a, 3)) & (F_STATE | F_DWR), 0);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);
	/* A deleted node comes back clean. */
	fc_add(&a, 3, RCL_LRU_ADD_NOBATCH);
	assert_int_equal(dwr_of(O(&a, 3)), 0);
	LV_STATS(&a.lv, 1, 10, 0, 0);
	/* Deleting an object under writeback is refused (pins, below). */
	make_wb(&a, 3);
	assert_int_equal(rcl_lruvec_del(&a.lv, &O(&a, 3)->lru), -EBUSY);
	LV_STATS(&a.lv, 1, 10, 1, 40);
	DOM_STATS(d, 1, 10, 1, 40);
	wb_end(&a, 3, 0);

	fc_destroy(&a, true);
	dom_free(d, NULL);
}

/*
 * Attach and detach move an lruvec's counts in and out of the domain's sums;
 * changes while detached touch only the lruvec.
 */
static void test_flusher_state_attach_detach(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct fcache a, b;

	(void)state;
	fc_init(&a, d, 2, 10, true, true);	/* 10, 20 */
	fc_init(&b, d, 3, 100, true, false);	/* 100, 200, 300; detached */
	fc_fill(&a, 2);
	fc_fill(&b, 3);
	set_dirty(&a, 0);
	set_dirty(&b, 0);			/* dirty 100 */
	make_wb(&b, 1);				/* writeback 200 */
	make_wb(&b, 2);
	set_dirty(&b, 2);			/* dirty and writeback 300 */
	LV_STATS(&a.lv, 1, 10, 0, 0);
	LV_STATS(&b.lv, 2, 400, 2, 500);
	DOM_STATS(d, 1, 10, 0, 0);

	assert_int_equal(rcl_domain_attach(d, &b.lv, 0), 0);
	DOM_STATS(d, 3, 410, 2, 500);
	wb_end(&b, 1, 0);
	LV_STATS(&b.lv, 2, 400, 1, 300);
	DOM_STATS(d, 3, 410, 1, 300);

	assert_int_equal(rcl_domain_detach(d, &b.lv), 0);
	DOM_STATS(d, 1, 10, 0, 0);
	LV_STATS(&b.lv, 2, 400, 1, 300);
	/* Changes while detached: the lruvec only. */
	wb_end(&b, 2, 0);
	set_dirty(&b, 1);
	LV_STATS(&b.lv, 3, 600, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);
	/* Deleting a dirty object of the detached lruvec. */
	assert_int_equal(rcl_lruvec_del(&b.lv, &O(&b, 0)->lru), 0);
	atomic_store(&O(&b, 0)->cached, false);
	assert_int_equal(rcl_domain_uncharge(d, 100), 0);
	LV_STATS(&b.lv, 2, 500, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);

	assert_int_equal(rcl_domain_attach(d, &b.lv, 0), 0);
	DOM_STATS(d, 3, 510, 0, 0);
	make_wb(&b, 1);
	DOM_STATS(d, 2, 310, 1, 200);
	/* Detached with an object under writeback; its end after detach. */
	assert_int_equal(rcl_domain_detach(d, &b.lv), 0);
	DOM_STATS(d, 1, 10, 0, 0);
	wb_end(&b, 1, 0);
	LV_STATS(&b.lv, 1, 300, 0, 0);
	DOM_STATS(d, 1, 10, 0, 0);
	assert_int_equal(rcl_domain_attach(d, &b.lv, 0), 0);
	DOM_STATS(d, 2, 310, 0, 0);

	fc_destroy(&a, true);
	DOM_STATS(d, 1, 300, 0, 0);
	fc_destroy(&b, true);
	dom_free(d, NULL);
}

/* ------------------------------------------------------------------------- */
/* 2. Writeback pins                                                          */
/* ------------------------------------------------------------------------- */

struct delw {
	struct rcl_lruvec *lv;
	struct rcl_lru_node *node;
	atomic_int ret, done;
	atomic_int *must_be_set;	/* checked when del_wait returns */
};

static void *delw_main(void *arg)
{
	struct delw *x = arg;
	int ret = rcl_lruvec_del_wait(x->lv, x->node);

	if (x->must_be_set)
		T_CHECK(atomic_load(x->must_be_set));
	atomic_store(&x->ret, ret);
	atomic_store(&x->done, 1);
	return NULL;
}

static void test_flusher_writeback_pins(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct delw x = { 0 };
	struct fcache a;
	atomic_int ended = 0;
	pthread_t t;

	(void)state;
	fc_init(&a, d, 3, 10, true, true);
	fc_fill(&a, 2);

	/* A listed node under writeback: del -EBUSY, nothing changes. */
	make_wb(&a, 0);
	assert_int_equal(rcl_lruvec_del(&a.lv, &O(&a, 0)->lru), -EBUSY);
	assert_true(flags_of(O(&a, 0)) & RCL_LRU_F_LISTED);
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_WRITEBACK);
	LV_STATS(&a.lv, 0, 0, 1, 10);
	/* Redirtied: still pinned. */
	set_dirty(&a, 0);
	assert_int_equal(rcl_lruvec_del(&a.lv, &O(&a, 0)->lru), -EBUSY);
	LV_STATS(&a.lv, 1, 10, 1, 10);

	/* del_wait waits for the end of the writeback, then deletes. */
	x.lv = &a.lv;
	x.node = &O(&a, 0)->lru;
	x.must_be_set = &ended;
	assert_int_equal(pthread_create(&t, NULL, delw_main, &x), 0);
	WAIT_FOR(atomic_load(&a.lv.__nr_waiters) == 1);
	assert_int_equal(atomic_load(&x.done), 0);
	assert_true(flags_of(O(&a, 0)) & RCL_LRU_F_LISTED);
	atomic_store(&ended, 1);
	wb_end(&a, 0, 0);	/* still dirty: that does not matter */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&x.ret), 0);
	assert_int_equal(flags_of(O(&a, 0)) & (F_STATE | F_DWR), 0);
	atomic_store(&O(&a, 0)->cached, false);
	assert_int_equal(rcl_domain_uncharge(d, 10), 0);
	LV_STATS(&a.lv, 0, 0, 0, 0);
	DOM_STATS(d, 0, 0, 0, 0);

	/* A pending node under writeback: pinned too; a failed write ends
	 * the pin (dirty again), and del_wait then deletes it. */
	fc_add(&a, 2, 0);
	assert_true(flags_of(O(&a, 2)) & RCL_LRU_F_PENDING);
	make_wb(&a, 2);
	assert_int_equal(rcl_lruvec_del(&a.lv, &O(&a, 2)->lru), -EBUSY);
	memset(&x, 0, sizeof(x));
	atomic_store(&ended, 0);
	x.lv = &a.lv;
	x.node = &O(&a, 2)->lru;
	x.must_be_set = &ended;
	assert_int_equal(pthread_create(&t, NULL, delw_main, &x), 0);
	WAIT_FOR(atomic_load(&a.lv.__nr_waiters) == 1);
	assert_int_equal(atomic_load(&x.done), 0);
	atomic_store(&ended, 1);
	wb_end(&a, 2, -EIO);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&x.ret), 0);
	assert_int_equal(flags_of(O(&a, 2)) & (F_STATE | F_DWR), 0);
	atomic_store(&O(&a, 2)->cached, false);
	assert_int_equal(rcl_domain_uncharge(d, 30), 0);
	LV_STATS(&a.lv, 0, 0, 0, 0);

	/* Without writeback, del_wait does not wait. */
	set_dirty(&a, 1);
	assert_int_equal(rcl_lruvec_del_wait(&a.lv, &O(&a, 1)->lru), 0);
	atomic_store(&O(&a, 1)->cached, false);
	assert_int_equal(rcl_domain_uncharge(d, 20), 0);
	LV_STATS(&a.lv, 0, 0, 0, 0);
	DOM_STATS(d, 0, 0, 0, 0);

	fc_destroy(&a, true);
	dom_free(d, NULL);
}

/*
 * The pin with the library's flusher thread: while its write callback holds
 * the object, and until its sync callback has returned and the writeback has
 * ended, rcl_lruvec_del_wait() waits; then it deletes.
 */
static atomic_int pin_in_write, pin_gate, pin_synced;

static void pin_write_hook(struct fobj *o)
{
	(void)o;
	atomic_store(&pin_in_write, 1);
	while (!atomic_load(&pin_gate))
		sched_yield();
}

static int pin_sync(void *priv)
{
	unsigned i;

	/* Give a wrongly early del_wait every chance to return first. */
	for (i = 0; i < 100; i++)
		sched_yield();
	atomic_store(&pin_synced, 1);
	return mock_sync(priv);
}

static const struct rcl_writeback_ops pin_ops = { mock_write, pin_sync };

static void test_flusher_writeback_pins_flusher_thread(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct delw x = { 0 };
	struct fcache a;
	struct wctx w;
	pthread_t t;

	(void)state;
	atomic_store(&pin_in_write, 0);
	atomic_store(&pin_gate, 0);
	atomic_store(&pin_synced, 0);
	fc_init(&a, d, 2, 10, true, true);
	fc_fill(&a, 2);
	set_dirty(&a, 0);
	wctx_init(&w, W_FLUSHER);
	atomic_store(&w.hook, pin_write_hook);
	assert_int_equal(rcl_domain_flusher_start(d, &pin_ops, &w, 0), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(atomic_load(&pin_in_write));
	assert_int_equal(dwr_of(O(&a, 0)), RCL_LRU_F_WRITEBACK);
	assert_int_equal(rcl_lruvec_del(&a.lv, &O(&a, 0)->lru), -EBUSY);

	x.lv = &a.lv;
	x.node = &O(&a, 0)->lru;
	x.must_be_set = &pin_synced;
	assert_int_equal(pthread_create(&t, NULL, delw_main, &x), 0);
	WAIT_FOR(atomic_load(&a.lv.__nr_waiters) == 1);
	atomic_store(&pin_gate, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&x.ret), 0);
	atomic_store(&O(&a, 0)->cached, false);
	assert_int_equal(rcl_domain_uncharge(d, 10), 0);
	assert_int_equal(atomic_load(&w.writes), 1);
	assert_int_equal(atomic_load(&w.syncs), 1);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	LV_STATS(&a.lv, 0, 0, 0, 0);

	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	fc_destroy(&a, true);
	dom_free(d, fc);
}

/* ------------------------------------------------------------------------- */
/* 3. Reclaim never writes, never evicts dirty or writeback objects           */
/* ------------------------------------------------------------------------- */

/*
 * flusher.h: a dirty object at the inactive tail is counted (nr_dirty, and
 * nr_unqueued_dirty when not under writeback), flagged RCL_LRU_F_RECLAIM and
 * activated; an object under writeback is counted (nr_writeback, and
 * nr_immediate if already flagged), flagged and activated the same way;
 * neither reaches the evict callback.
 *
 * The inactive list, from the tail:
 *   C0 clean, D0 dirty, W0 writeback, C1 clean, D1 dirty (referenced),
 *   W1 writeback and flagged (met once already), C2 clean,
 *   DW writeback and redirtied.
 * By hand: taken 8; freed C0 C1 C2 (3); nr_dirty D0 W0 D1 W1 DW (5);
 * nr_unqueued_dirty D0 D1 (2); nr_writeback W0 W1 DW (3); nr_immediate W1
 * (1); activated 5; rotated 0.
 */
enum { C0, D0, W0, C1, D1, W1, C2, DW, NMIX };

static void test_flusher_reclaim_skips_dirty_and_writeback(void **state)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE };
	struct rcl_lruvec_type_stats st;
	struct fcache c;
	unsigned i;

	(void)state;
	fc_init(&c, NULL, NMIX, 1, true, false);	/* weight = id + 1 */

	/* W1 first: reclaim meets it under writeback once. */
	fc_add(&c, W1, RCL_LRU_ADD_NOBATCH);
	make_wb(&c, W1);
	sc.nr_to_scan = 1;
	assert_int_equal(rcl_lruvec_shrink_inactive(&c.lv, &sc), 0);
	assert_int_equal(sc.nr_taken, 1);
	assert_int_equal(sc.nr_dirty, 1);
	assert_int_equal(sc.nr_unqueued_dirty, 0);
	assert_int_equal(sc.nr_writeback, 1);
	assert_int_equal(sc.nr_immediate, 0);
	assert_int_equal(sc.nr_freed, 0);
	assert_int_equal(sc.nr_activated, 1);
	assert_int_equal(dwr_of(O(&c, W1)),
			 RCL_LRU_F_WRITEBACK | RCL_LRU_F_RECLAIM);
	assert_true(lru_check_on_list(&c.lv, ACTIVE, &O(&c, W1)->lru));
	assert_int_equal(atomic_load(&c.calls), 0);

	fc_add(&c, C0, RCL_LRU_ADD_NOBATCH);
	fc_add(&c, D0, RCL_LRU_ADD_NOBATCH);
	fc_add(&c, W0, RCL_LRU_ADD_NOBATCH);
	fc_add(&c, C1, RCL_LRU_ADD_NOBATCH);
	fc_add(&c, D1, RCL_LRU_ADD_NOBATCH);
	/* W1 back to the inactive head: keeps its flag. */
	assert_int_equal(rcl_lruvec_deactivate(&c.lv, &O(&c, W1)->lru), 0);
	assert_int_equal(dwr_of(O(&c, W1)),
			 RCL_LRU_F_WRITEBACK | RCL_LRU_F_RECLAIM);
	fc_add(&c, C2, RCL_LRU_ADD_NOBATCH);
	fc_add(&c, DW, RCL_LRU_ADD_NOBATCH);
	set_dirty(&c, D0);
	make_wb(&c, W0);
	set_dirty(&c, D1);
	assert_int_equal(rcl_lruvec_mark_accessed(&c.lv, &O(&c, D1)->lru), 0);
	assert_true(flags_of(O(&c, D1)) & RCL_LRU_F_REFERENCED);
	make_wb(&c, DW);
	set_dirty(&c, DW);
	for (i = 0; i < NMIX; i++)
		assert_int_equal(lru_check_pos_from_tail(&c.lv, INACTIVE,
							 &O(&c, i)->lru),
				 i);
	/* weights: dirty D0 2 + D1 5 + DW 8; writeback W0 3 + W1 6 + DW 8 */
	LV_STATS(&c.lv, 3, 15, 3, 17);

	memset(&sc, 0, sizeof(sc));
	sc.type = RCL_LRU_FILE;
	sc.nr_to_scan = 8;
	evlog_reset(&c);
	assert_int_equal(rcl_lruvec_shrink_inactive(&c.lv, &sc), 0);
	assert_int_equal(sc.nr_scanned, 8);
	assert_int_equal(sc.nr_taken, 8);
	assert_int_equal(sc.nr_freed, 3);
	assert_int_equal(sc.weight_freed, (C0 + 1) + (C1 + 1) + (C2 + 1));
	assert_int_equal(sc.nr_rotated, 0);
	assert_int_equal(sc.nr_activated, 5);
	assert_int_equal(sc.nr_dirty, 5);
	assert_int_equal(sc.nr_unqueued_dirty, 2);
	assert_int_equal(sc.nr_writeback, 3);
	assert_int_equal(sc.nr_immediate, 1);

	/* Only the clean ones reached the callback, oldest first, never
	 * flagged RCL_EVICT_DIRTY, never dirty. */
	assert_int_equal(atomic_load(&c.calls), 3);
	assert_int_equal(atomic_load(&c.nlog), 3);
	assert_int_equal(c.log[0], C0);
	assert_int_equal(c.log[1], C1);
	assert_int_equal(c.log[2], C2);
	assert_int_equal(atomic_load(&c.evict_dirty_flag), 0);
	assert_int_equal(atomic_load(&c.dirty_seen), 0);

	/* The others: flagged for reclaim, activated, referenced bit gone;
	 * their dirty state unchanged. */
	assert_int_equal(dwr_of(O(&c, D0)), RCL_LRU_F_DIRTY | RCL_LRU_F_RECLAIM);
	assert_int_equal(dwr_of(O(&c, D1)), RCL_LRU_F_DIRTY | RCL_LRU_F_RECLAIM);
	assert_int_equal(dwr_of(O(&c, W0)),
			 RCL_LRU_F_WRITEBACK | RCL_LRU_F_RECLAIM);
	assert_int_equal(dwr_of(O(&c, W1)),
			 RCL_LRU_F_WRITEBACK | RCL_LRU_F_RECLAIM);
	assert_int_equal(dwr_of(O(&c, DW)), F_DWR);
	for (i = 0; i < NMIX; i++) {
		if (i == C0 || i == C1 || i == C2) {
			assert_false(atomic_load(&O(&c, i)->cached));
			continue;
		}
		assert_true(lru_check_on_list(&c.lv, ACTIVE, &O(&c, i)->lru));
		assert_true(flags_of(O(&c, i)) & RCL_LRU_F_ACTIVE);
		assert_false(flags_of(O(&c, i)) & RCL_LRU_F_REFERENCED);
	}
	assert_int_equal(rcl_lruvec_count(&c.lv, INACTIVE, NULL), 0);
	assert_int_equal(rcl_lruvec_count(&c.lv, ACTIVE, NULL), 5);
	LV_STATS(&c.lv, 3, 15, 3, 17);
	assert_int_equal(rcl_lruvec_stats(&c.lv, RCL_LRU_FILE, &st), 0);
	assert_int_equal(st.scanned, 9);
	assert_int_equal(st.freed, 3);
	assert_int_equal(st.activated, 6);
	assert_int_equal(st.rotated, 0);
	fc_check(&c);

	/* Scanning them again (deactivated to the inactive list): the same;
	 * everything under writeback is now met a second time. */
	for (i = 0; i < NMIX; i++)
		if (atomic_load(&O(&c, i)->cached))
			assert_int_equal(rcl_lruvec_deactivate(&c.lv,
							       &O(&c, i)->lru),
					 0);
	memset(&sc, 0, sizeof(sc));
	sc.type = RCL_LRU_FILE;
	sc.nr_to_scan = 32;
	assert_int_equal(rcl_lruvec_shrink_inactive(&c.lv, &sc), 0);
	assert_int_equal(sc.nr_taken, 5);
	assert_int_equal(sc.nr_freed, 0);
	assert_int_equal(sc.nr_dirty, 5);
	assert_int_equal(sc.nr_unqueued_dirty, 2);
	assert_int_equal(sc.nr_writeback, 3);
	assert_int_equal(sc.nr_immediate, 3);
	assert_int_equal(atomic_load(&c.calls), 3);
	fc_check(&c);

	fc_destroy(&c, false);
}

/* ------------------------------------------------------------------------- */
/* 4. Immediate reclaim: rotation when the writeback ends clean               */
/* ------------------------------------------------------------------------- */

static void test_flusher_immediate_reclaim_rotation(void **state)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE };
	struct rcl_lruvec_type_stats st0, st1;
	struct fcache c;
	long pos;

	(void)state;
	/* 0 X (writeback), 1 Y (writeback), 2 Z (writeback), 3..5 clean */
	fc_init(&c, NULL, 6, 1, false, false);
	fc_fill(&c, 6);
	make_wb(&c, 0);
	make_wb(&c, 1);
	make_wb(&c, 2);

	/* Reclaim meets X, Y and Z: flagged and activated. */
	sc.nr_to_scan = 3;
	assert_int_equal(rcl_lruvec_shrink_inactive(&c.lv, &sc), 0);
	assert_int_equal(sc.nr_writeback, 3);
	assert_int_equal(sc.nr_freed, 0);
	assert_int_equal(atomic_load(&c.calls), 0);
	assert_int_equal(rcl_lruvec_stats(&c.lv, RCL_LRU_FILE, &st0), 0);

	/* X's writeback ends clean: to the inactive tail, flag cleared. */
	wb_end(&c, 0, 0);
	assert_int_equal(lru_check_pos_from_tail(&c.lv, INACTIVE, &O(&c, 0)->lru),
			 0);
	assert_int_equal(flags_of(O(&c, 0)) &
				 (F_DWR | RCL_LRU_F_ACTIVE | RCL_LRU_F_REFERENCED),
			 0);
	assert_int_equal(rcl_lruvec_stats(&c.lv, RCL_LRU_FILE, &st1), 0);
	assert_int_equal(st1.rotated, st0.rotated + 1);
	fc_check(&c);

	/* Y is redirtied during its writeback: it does not move. */
	set_dirty(&c, 1);
	pos = lru_check_pos_from_tail(&c.lv, ACTIVE, &O(&c, 1)->lru);
	assert_true(pos >= 0);
	wb_end(&c, 1, 0);
	assert_int_equal(lru_check_pos_from_tail(&c.lv, ACTIVE, &O(&c, 1)->lru),
			 pos);
	assert_int_equal(dwr_of(O(&c, 1)), RCL_LRU_F_DIRTY | RCL_LRU_F_RECLAIM);
	/* Z's write fails: dirty again, it does not move either. */
	pos = lru_check_pos_from_tail(&c.lv, ACTIVE, &O(&c, 2)->lru);
	assert_true(pos >= 0);
	wb_end(&c, 2, -EIO);
	assert_int_equal(lru_check_pos_from_tail(&c.lv, ACTIVE, &O(&c, 2)->lru),
			 pos);
	assert_int_equal(dwr_of(O(&c, 2)), RCL_LRU_F_DIRTY | RCL_LRU_F_RECLAIM);
	assert_int_equal(rcl_lruvec_stats(&c.lv, RCL_LRU_FILE, &st0), 0);
	assert_int_equal(st0.rotated, st1.rotated);
	fc_check(&c);

	/* The next scan frees X first. */
	memset(&sc, 0, sizeof(sc));
	sc.type = RCL_LRU_FILE;
	sc.nr_to_scan = 1;
	evlog_reset(&c);
	assert_int_equal(rcl_lruvec_shrink_inactive(&c.lv, &sc), 0);
	assert_int_equal(sc.nr_freed, 1);
	assert_int_equal(atomic_load(&c.nlog), 1);
	assert_int_equal(c.log[0], 0);
	assert_false(atomic_load(&O(&c, 0)->cached));
	fc_check(&c);

	/* An object whose writeback ends clean while it is not flagged
	 * stays where it is. */
	make_wb(&c, 4);
	pos = lru_check_pos_from_tail(&c.lv, INACTIVE, &O(&c, 4)->lru);
	wb_end(&c, 4, 0);
	assert_int_equal(lru_check_pos_from_tail(&c.lv, INACTIVE, &O(&c, 4)->lru),
			 pos);

	fc_destroy(&c, false);
}

/* ------------------------------------------------------------------------- */
/* 5. The trigger                                                             */
/* ------------------------------------------------------------------------- */

/* One lruvec of @n objects of weight 1 attached to @d, object 0 the oldest. */
static void big_cache(struct fcache *c, struct rcl_domain *d, unsigned n)
{
	fc_init(c, d, n, 1, false, true);
	fc_fill(c, n);
}

/*
 * An all-dirty, unqueued batch wakes the flusher.  8192 objects, the two
 * oldest dirty: priority 12 takes them (one batch, both dirty: the trigger),
 * priority 11 takes 8190 >> 11 = 3 clean ones and meets the goal.  Policy
 * ALL: nr_to_write 0.
 */
static void test_flusher_trigger_all(void **state)
{
	struct rcl_reclaim_result res;
	struct rcl_domain *d;
	struct rcl_vmstat v;
	struct fcache c;
	struct mock m;

	(void)state;
	mock_init(&m);
	d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_ALL, 0);
	big_cache(&c, d, 8192);
	set_dirty(&c, 0);
	set_dirty(&c, 1);
	assert_int_equal(mock_n(&m), 0);

	reclaim(d, 1, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.nr_reclaimed, 3);
	assert_int_equal(res.nr_scanned, 5);
	assert_int_equal(res.priority, 11);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 0, RCL_FLUSH_VMSCAN, 1);
	v = vmstat(d);
	assert_int_equal(v.flush_requests, 1);
	assert_int_equal(v.flush_requests_vmscan, 1);
	assert_int_equal(v.flusher_wakeups, 1);
	assert_int_equal(v.flush_coalesced, 0);
	assert_int_equal(v.nr_dirty_scanned, 2);
	assert_int_equal(v.nr_unqueued_dirty, 2);
	assert_int_equal(v.nr_writeback_scanned, 0);
	assert_int_equal(v.nr_immediate, 0);
	assert_int_equal(v.writeback_throttled, 0);
	assert_int_equal(v.writes_from_reclaim, 0);
	assert_int_equal(dwr_of(O(&c, 0)), RCL_LRU_F_DIRTY | RCL_LRU_F_RECLAIM);
	assert_int_equal(dwr_of(O(&c, 1)), RCL_LRU_F_DIRTY | RCL_LRU_F_RECLAIM);
	assert_int_equal(atomic_load(&c.calls), 3);
	assert_int_equal(atomic_load(&c.dirty_seen), 0);
	assert_int_equal(atomic_load(&c.evict_dirty_flag), 0);
	assert_int_equal(mock_ack(&m, 0), 0);
	assert_int_equal(mock_n(&m), 1);

	assert_int_equal(rcl_domain_usage(d), fc_cached_weight(&c));
	fc_destroy(&c, true);
	dom_free(d, NULL);
	mock_fini(&m);
}

/*
 * Policy PROPORTIONAL: nr_to_write = max(d, ceil(goal * d / taken)), with d
 * the unqueued dirty objects met, taken the objects isolated, and goal the
 * lruvec's share of the reclaim goal (flusher.h).
 *
 * a) Alone: 8192 objects, the two oldest dirty, goal 5.  Priority 12 takes
 *    the two: d = 2, taken = 2, share = 5: max(2, ceil(5 * 2 / 2)) = 5.
 *
 * b) Two lruvecs in one partition, goal 100.  A: 143360 = 35 << 12 objects,
 *    the 34 oldest dirty, then clean; B: 20480 = 5 << 12 clean objects.
 *    A's share = ceil(100 * 143360 / 163840) = ceil(87.5) = 88.  Priority
 *    12 scans A's whole target of 35 in two batches, 32 (all dirty: the
 *    trigger) then 3 (2 dirty, 1 clean): d = 34, taken = 35, so
 *    nr_to_write = max(34, ceil(88 * 34 / 35)) = ceil(85.49) = 86.
 *    Later priorities meet no dirty object (the 34 are active, and the
 *    active target 34 >> p is 0 until the goal is met).
 */
static void test_flusher_trigger_proportional(void **state)
{
	struct rcl_reclaim_result res;
	struct rcl_domain *d;
	struct rcl_vmstat v;
	struct fcache a, b;
	struct mock m;
	unsigned i;

	(void)state;
	/* a) */
	mock_init(&m);
	d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_PROPORTIONAL, 0);
	big_cache(&a, d, 8192);
	set_dirty(&a, 0);
	set_dirty(&a, 1);
	reclaim(d, 5, RCL_CTX_CAPABLE, &res);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 5, RCL_FLUSH_VMSCAN, 1);
	assert_int_equal(vmstat(d).flush_requests, 1);
	assert_int_equal(mock_ack(&m, 0), 0);
	fc_destroy(&a, true);
	dom_free(d, NULL);
	mock_fini(&m);

	/* b) */
	mock_init(&m);
	d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_PROPORTIONAL, 0);
	big_cache(&a, d, 35u << 12);
	big_cache(&b, d, 5u << 12);
	for (i = 0; i < 34; i++)
		set_dirty(&a, i);
	reclaim(d, 100, RCL_CTX_CAPABLE, &res);
	assert_true(res.nr_reclaimed >= 100);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 86, RCL_FLUSH_VMSCAN, 1);
	v = vmstat(d);
	assert_int_equal(v.flush_requests, 1);
	assert_int_equal(v.flush_requests_vmscan, 1);
	assert_int_equal(v.nr_dirty_scanned, 34);
	assert_int_equal(v.nr_unqueued_dirty, 34);
	for (i = 0; i < 34; i++)
		assert_int_equal(dwr_of(O(&a, i)),
				 RCL_LRU_F_DIRTY | RCL_LRU_F_RECLAIM);
	assert_false(atomic_load(&O(&a, 34)->cached));
	assert_int_equal(atomic_load(&a.dirty_seen), 0);
	assert_int_equal(mock_ack(&m, 0), 0);
	assert_int_equal(rcl_domain_usage(d),
			 fc_cached_weight(&a) + fc_cached_weight(&b));
	fc_destroy(&a, true);
	fc_destroy(&b, true);
	dom_free(d, NULL);
	mock_fini(&m);
}

/*
 * No trigger unless the batch was all dirty and unqueued.
 * a) [dirty, clean]: priority 12 takes both, frees the clean one, meets the
 *    goal of 1: no request.
 * b) [dirty, writeback]: neither all unqueued dirty nor all writeback: no
 *    request and no throttling; priority 11 frees 3 clean ones.
 */
static void test_flusher_trigger_mixed_batch(void **state)
{
	struct rcl_reclaim_result res;
	struct rcl_domain *d;
	struct rcl_vmstat v;
	struct fcache c;
	struct mock m;

	(void)state;
	mock_init(&m);
	d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_ALL, 0);

	big_cache(&c, d, 8192);
	set_dirty(&c, 0);
	reclaim(d, 1, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.priority, 12);
	assert_int_equal(res.nr_reclaimed, 1);
	assert_false(atomic_load(&O(&c, 1)->cached));
	assert_int_equal(mock_n(&m), 0);
	v = vmstat(d);
	assert_int_equal(v.flush_requests, 0);
	assert_int_equal(v.nr_dirty_scanned, 1);
	assert_int_equal(v.nr_unqueued_dirty, 1);
	assert_int_equal(dwr_of(O(&c, 0)), RCL_LRU_F_DIRTY | RCL_LRU_F_RECLAIM);
	fc_destroy(&c, true);

	big_cache(&c, d, 8192);
	set_dirty(&c, 0);
	make_wb(&c, 1);
	reclaim(d, 1, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.priority, 11);
	assert_int_equal(res.nr_reclaimed, 3);
	assert_int_equal(mock_n(&m), 0);
	v = vmstat(d);
	assert_int_equal(v.flush_requests, 0);
	assert_int_equal(v.writeback_throttled, 0);
	assert_int_equal(v.nr_dirty_scanned, 1 + 2);
	assert_int_equal(v.nr_unqueued_dirty, 1 + 1);
	assert_int_equal(v.nr_writeback_scanned, 1);
	assert_int_equal(atomic_load(&c.dirty_seen), 0);
	fc_destroy(&c, true);

	dom_free(d, NULL);
	mock_fini(&m);
}

/* ------------------------------------------------------------------------- */
/* 6. Coalescing                                                              */
/* ------------------------------------------------------------------------- */

static void test_flusher_coalescing(void **state)
{
	struct rcl_flush_request bad;
	struct rcl_reclaim_result res;
	struct rcl_domain *d;
	struct rcl_vmstat v;
	struct fcache c;
	struct mock m;

	(void)state;
	mock_init(&m);
	d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_ALL, 0);

	/* N = 6 requests, none acknowledged: one delivered, one pending,
	 * N - 2 merged into it (the larger wins). */
	assert_int_equal(rcl_domain_flush(d, 10), 0);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 10, RCL_FLUSH_SYNC, 1);
	assert_int_equal(rcl_domain_flush(d, 20), 0);
	assert_int_equal(rcl_domain_flush(d, 5), 0);
	assert_int_equal(rcl_domain_flush(d, 30), 0);
	assert_int_equal(rcl_domain_flush(d, 7), 0);
	assert_int_equal(rcl_domain_flush(d, 3), 0);
	assert_int_equal(mock_n(&m), 1);
	v = vmstat(d);
	assert_int_equal(v.flush_requests, 6);
	assert_int_equal(v.flusher_wakeups, 1);
	assert_int_equal(v.flush_coalesced, 4);

	/* Only the request in flight can be acknowledged. */
	bad = mock_req(&m, 0);
	bad.seq = 2;		/* the pending one */
	assert_int_equal(rcl_domain_flush_done(d, &bad), -ENOENT);
	bad.seq = 999;
	assert_int_equal(rcl_domain_flush_done(d, &bad), -ENOENT);
	assert_int_equal(rcl_domain_flush_done(NULL, &bad), -EINVAL);
	assert_int_equal(rcl_domain_flush_done(d, NULL), -EINVAL);
	assert_int_equal(mock_n(&m), 1);

	/* Done: the pending request is delivered (in this thread). */
	assert_int_equal(mock_ack(&m, 0), 0);
	assert_int_equal(mock_n(&m), 2);
	REQ_EQ(&m, 1, 30, RCL_FLUSH_SYNC, 2);
	assert_int_equal(vmstat(d).flusher_wakeups, 2);
	bad = mock_req(&m, 0);
	assert_int_equal(rcl_domain_flush_done(d, &bad), -ENOENT);
	assert_int_equal(mock_ack(&m, 1), 0);	/* nothing pending: idle */
	assert_int_equal(mock_n(&m), 2);
	bad = mock_req(&m, 1);
	assert_int_equal(rcl_domain_flush_done(d, &bad), -ENOENT);

	/* Idle again: the next request is delivered at once.  0 ("all")
	 * wins any merge. */
	assert_int_equal(rcl_domain_flush(d, 5), 0);
	REQ_EQ(&m, 2, 5, RCL_FLUSH_SYNC, 7);
	assert_int_equal(rcl_domain_flush(d, 8), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	assert_int_equal(rcl_domain_flush(d, 9), 0);
	assert_int_equal(mock_ack(&m, 2), 0);
	REQ_EQ(&m, 3, 0, RCL_FLUSH_SYNC, 8);

	/* A request of reclaim merges into a pending explicit one: the
	 * reason is the latest's (VMSCAN), and ALL makes it 0. */
	assert_int_equal(rcl_domain_flush(d, 6), 0);	/* pending, seq 11 */
	big_cache(&c, d, 8192);
	set_dirty(&c, 0);
	set_dirty(&c, 1);
	reclaim(d, 1, RCL_CTX_CAPABLE, &res);
	v = vmstat(d);
	assert_int_equal(v.flush_requests_vmscan, 1);
	assert_int_equal(v.flush_requests, 12);
	assert_int_equal(v.flush_coalesced, 4 + 2 + 1);
	assert_int_equal(mock_n(&m), 4);
	assert_int_equal(mock_ack(&m, 3), 0);
	assert_int_equal(mock_n(&m), 5);
	REQ_EQ(&m, 4, 0, RCL_FLUSH_VMSCAN, 11);
	assert_int_equal(mock_ack(&m, 4), 0);

	v = vmstat(d);
	assert_int_equal(v.flush_requests, v.flusher_wakeups + v.flush_coalesced);
	assert_int_equal(atomic_load(&m.inflight), 0);
	fc_destroy(&c, true);
	dom_free(d, NULL);
	mock_fini(&m);
}

/*
 * Concurrent reclaimers on all-dirty lists.  Each reclaim meets all-dirty
 * batches at several priorities, so requests pour in from several threads.
 */
#define CO_THREADS 4
#define CO_OBJS 64
#define CO_ROUNDS 20

struct co_ctx {
	struct rcl_domain *d;
	struct mock *m;
	atomic_int go;
};

static void *co_reclaimer(void *arg)
{
	struct co_ctx *x = arg;
	unsigned i;

	while (!atomic_load(&x->go))
		sched_yield();
	for (i = 0; i < CO_ROUNDS; i++) {
		struct rcl_reclaim_result res;

		reclaim(x->d, CO_OBJS / 2, RCL_CTX_CAPABLE, &res);
		T_EQ(res.nr_reclaimed, 0);	/* all dirty */
	}
	return NULL;
}

/* The application's flusher thread: serves (acknowledges) each request. */
static void *mock_ack_main(void *arg)
{
	struct mock *m = arg;

	pthread_mutex_lock(&m->m);
	for (;;) {
		unsigned i;

		while (m->served == m->n && !m->stop)
			pthread_cond_wait(&m->cv, &m->m);
		if (m->served == m->n && m->stop)
			break;
		i = m->served++;
		pthread_mutex_unlock(&m->m);
		sched_yield();		/* "writing" */
		T_EQ(mock_ack(m, i), 0);
		pthread_mutex_lock(&m->m);
	}
	pthread_mutex_unlock(&m->m);
	return NULL;
}

static void co_setup(struct fcache *c, struct rcl_domain *d)
{
	unsigned i, j;

	for (i = 0; i < CO_THREADS; i++) {
		fc_init(&c[i], d, CO_OBJS, 1, false, true);
		fc_fill(&c[i], CO_OBJS);
		for (j = 0; j < CO_OBJS; j++)
			set_dirty(&c[i], j);
	}
}

static void co_run(struct co_ctx *x)
{
	pthread_t t[CO_THREADS];
	unsigned i;

	for (i = 0; i < CO_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, co_reclaimer, x), 0);
	atomic_store(&x->go, 1);
	for (i = 0; i < CO_THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
}

static void test_flusher_coalescing_concurrent(void **state)
{
	struct fcache c[CO_THREADS];
	struct co_ctx x = { 0 };
	struct rcl_vmstat v;
	struct mock m;
	pthread_t ack;
	unsigned i;

	(void)state;
	/* Nobody acknowledges: exactly one delivery, one pending, the rest
	 * merged, whatever the interleaving. */
	mock_init(&m);
	x.m = &m;
	x.d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_ALL, 0);
	co_setup(c, x.d);
	co_run(&x);
	v = vmstat(x.d);
	assert_true(v.flush_requests_vmscan >= 2);
	assert_int_equal(v.flush_requests, v.flush_requests_vmscan);
	assert_int_equal(mock_n(&m), 1);
	assert_int_equal(v.flusher_wakeups, 1);
	assert_int_equal(v.flush_coalesced, v.flush_requests - 2);
	assert_int_equal(mock_ack(&m, 0), 0);	/* delivers the pending one */
	assert_int_equal(mock_n(&m), 2);
	REQ_EQ(&m, 1, 0, RCL_FLUSH_VMSCAN, 2);
	assert_int_equal(mock_ack(&m, 1), 0);
	assert_int_equal(mock_n(&m), 2);
	for (i = 0; i < CO_THREADS; i++) {
		assert_int_equal(atomic_load(&c[i].calls), 0);
		fc_destroy(&c[i], true);
	}
	dom_free(x.d, NULL);
	mock_fini(&m);

	/* An application flusher that serves requests as they come: never
	 * more than one in flight (asserted in the wakeup); in the end
	 * every request was delivered or merged. */
	mock_init(&m);
	memset(&x, 0, sizeof(x));
	x.m = &m;
	x.d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_ALL, 0);
	co_setup(c, x.d);
	assert_int_equal(pthread_create(&ack, NULL, mock_ack_main, &m), 0);
	co_run(&x);
	/* Quiesce: every delivered request served, none pending. */
	WAIT_FOR(atomic_load(&m.acks) == mock_n(&m) &&
		 (v = vmstat(x.d), v.flush_requests ==
				   v.flusher_wakeups + v.flush_coalesced));
	pthread_mutex_lock(&m.m);
	m.stop = true;
	pthread_cond_broadcast(&m.cv);
	pthread_mutex_unlock(&m.m);
	assert_int_equal(pthread_join(ack, NULL), 0);
	v = vmstat(x.d);
	assert_true(v.flush_requests >= 2);
	assert_int_equal(v.flusher_wakeups, mock_n(&m));
	assert_int_equal(v.flush_requests, v.flusher_wakeups + v.flush_coalesced);
	assert_int_equal(atomic_load(&m.inflight), 0);
	/* idle: the next request is delivered at once */
	assert_int_equal(rcl_domain_flush(x.d, 1), 0);
	assert_int_equal(mock_n(&m), v.flusher_wakeups + 1);
	assert_int_equal(mock_ack(&m, mock_n(&m) - 1), 0);
	for (i = 0; i < CO_THREADS; i++)
		fc_destroy(&c[i], true);
	dom_free(x.d, NULL);
	mock_fini(&m);
}

/* ------------------------------------------------------------------------- */
/* 7. Dirty thresholds                                                        */
/* ------------------------------------------------------------------------- */

struct bal {
	struct rcl_domain *d;
	uint64_t ctx;
	atomic_int ret, done;
};

static void *bal_main(void *arg)
{
	struct bal *b = arg;

	atomic_store(&b->ret, rcl_domain_balance_dirty(b->d, b->ctx));
	atomic_store(&b->done, 1);
	return NULL;
}

static void bal_start(struct bal *b, pthread_t *t, struct rcl_domain *d)
{
	b->d = d;
	b->ctx = RCL_CTX_CAPABLE;
	atomic_store(&b->done, 0);
	atomic_store(&b->ret, 1);
	assert_int_equal(pthread_create(t, NULL, bal_main, b), 0);
}

/*
 * Budget 1000, objects of weight 10: the background threshold (10 %) is
 * 100, the hard threshold (20 %) 200.
 */
static void test_flusher_dirty_thresholds_default(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d;
	struct rcl_vmstat v;
	struct fcache c;
	struct bal b;
	struct mock m;
	pthread_t t;
	unsigned i;

	(void)state;
	mock_init(&m);
	d = dom_make(1000, fc, &m, RCL_FLUSH_ALL, 0);
	fc_init(&c, d, 40, 10, false, true);
	fc_fill(&c, 40);

	/* Background: the set_dirty() that reaches 100 wakes the flusher. */
	for (i = 0; i < 9; i++)
		set_dirty(&c, i);
	assert_int_equal(mock_n(&m), 0);
	DOM_STATS(d, 9, 90, 0, 0);
	set_dirty(&c, 9);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 0, RCL_FLUSH_BACKGROUND, 1);
	v = vmstat(d);
	assert_int_equal(v.flush_requests, 1);
	assert_int_equal(v.flush_requests_vmscan, 0);
	/* Below the hard threshold: balance_dirty returns at once. */
	assert_int_equal(rcl_domain_balance_dirty(d, RCL_CTX_CAPABLE), 0);
	assert_int_equal(mock_ack(&m, 0), 0);
	/* Above the background threshold, balance_dirty wakes it too. */
	assert_int_equal(rcl_domain_balance_dirty(d, RCL_CTX_CAPABLE), 0);
	assert_int_equal(mock_n(&m), 2);
	REQ_EQ(&m, 1, 0, RCL_FLUSH_BACKGROUND, 2);
	assert_int_equal(mock_ack(&m, 1), 0);
	assert_int_equal(vmstat(d).dirty_throttled, 0);

	/* 230 dirty: above the hard threshold.  Without RCL_CTX_MAY_BLOCK
	 * no wait. */
	for (i = 10; i < 23; i++)
		set_dirty(&c, i);
	DOM_STATS(d, 23, 230, 0, 0);
	assert_int_equal(rcl_domain_balance_dirty(d, RCL_CTX_MAY_IO), 0);
	assert_int_equal(rcl_domain_balance_dirty(d, 0), 0);
	assert_int_equal(vmstat(d).dirty_throttled, 0);

	/* With it: waits until writeback brings the domain below 200.
	 * Writeback weight counts as dirty weight: starting a write changes
	 * nothing, ending one does. */
	bal_start(&b, &t, d);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(vmstat(d).dirty_throttled, 1);
	wb_start(&c, 0);
	wb_start(&c, 1);
	wb_start(&c, 2);
	wb_start(&c, 3);
	DOM_STATS(d, 19, 190, 4, 40);
	wb_end(&c, 0, 0);		/* 220 */
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&b.done), 0);
	wb_end(&c, 1, -EIO);		/* failed: still 220 */
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&b.done), 0);
	wb_end(&c, 2, 0);		/* 210 */
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&b.done), 0);
	wb_start(&c, 1);
	wb_end(&c, 1, 0);
	wb_end(&c, 3, 0);		/* 190 */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&b.ret), 0);
	DOM_STATS(d, 19, 190, 0, 0);
	v = vmstat(d);
	assert_int_equal(v.dirty_throttled, 1);
	assert_int_equal(v.dirty_throttle_timeouts, 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);

	/* The timeout (default 100 ms, on the domain's clock). */
	for (i = 0; i < 4; i++)
		set_dirty(&c, i);	/* 230 */
	bal_start(&b, &t, d);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	rcl_fake_clock_advance(fc, 99 * RCL_NSEC_PER_MSEC);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&b.done), 0);
	rcl_fake_clock_advance(fc, RCL_NSEC_PER_MSEC);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&b.ret), -ETIMEDOUT);
	v = vmstat(d);
	assert_int_equal(v.dirty_throttled, 2);
	assert_int_equal(v.dirty_throttle_timeouts, 1);

	assert_int_equal(rcl_domain_balance_dirty(NULL, RCL_CTX_CAPABLE),
			 -EINVAL);
	while (mock_n(&m) > atomic_load(&m.acks))
		assert_int_equal(mock_ack(&m, (unsigned)atomic_load(&m.acks)), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

/*
 * A throttled writer asks the flusher again when it goes idle with the
 * domain still above the hard threshold, but only after some write ended
 * since it last asked.  Budget 1000, weight 10: hard threshold 200.
 */
static void test_flusher_dirty_rekick(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d;
	struct fcache c;
	struct bal b;
	struct mock m;
	pthread_t t;
	unsigned i;

	(void)state;
	mock_init(&m);
	d = dom_make(1000, fc, &m, RCL_FLUSH_ALL, 0);
	fc_init(&c, d, 40, 10, false, true);
	fc_fill(&c, 40);
	for (i = 0; i < 23; i++)
		set_dirty(&c, i);	/* 230; request 0 at 100 */
	assert_int_equal(mock_n(&m), 1);
	assert_int_equal(mock_ack(&m, 0), 0);

	/* Idle flusher, above background: balance_dirty asks (request 1). */
	bal_start(&b, &t, d);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(mock_n(&m), 2);
	wb_start(&c, 0);
	wb_end(&c, 0, 0);		/* 220: progress, request 1 busy */
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(mock_n(&m), 2);
	/* The flusher goes idle, still above 200: asked again. */
	assert_int_equal(mock_ack(&m, 1), 0);
	WAIT_FOR(mock_n(&m) == 3);
	REQ_EQ(&m, 2, 0, RCL_FLUSH_BACKGROUND, 3);
	/* Idle again without a write ended: not asked (no loop). */
	assert_int_equal(mock_ack(&m, 2), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&b.done), 0);
	/*
	 * A write that fails is no progress: not asked again (a flusher
	 * whose every write fails was asked in a loop until the timeout).
	 */
	wb_start(&c, 1);
	wb_end(&c, 1, -EIO);		/* still 220 */
	/* Time for the woken waiter to ask, if it would (the bug did). */
	for (i = 0; i < 2000 && mock_n(&m) == 3; i++)
		sched_yield();
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(mock_n(&m), 3);
	assert_int_equal(atomic_load(&b.done), 0);
	/* A write ends while idle: asked again, once. */
	wb_start(&c, 1);
	wb_end(&c, 1, 0);		/* 210 */
	WAIT_FOR(mock_n(&m) == 4);
	wb_start(&c, 2);
	wb_end(&c, 2, 0);
	wb_start(&c, 3);
	wb_end(&c, 3, 0);		/* 190 */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&b.ret), 0);
	assert_int_equal(mock_n(&m), 4);
	assert_int_equal(vmstat(d).dirty_throttle_timeouts, 0);
	while (mock_n(&m) > atomic_load(&m.acks))
		assert_int_equal(mock_ack(&m, (unsigned)atomic_load(&m.acks)), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

/*
 * Configured thresholds: background 30 %, hard 50 %, timeout 5 ms.  Budget
 * 1000, objects of weight 10.  Writeback weight counts towards both.
 */
static void test_flusher_dirty_thresholds_configured(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain_config cfg = {
		.budget = 1000,
		.dirty_background_ratio = 30,
		.dirty_ratio = 50,
		.dirty_timeout_ns = 5 * RCL_NSEC_PER_MSEC,
	};
	struct rcl_domain *d;
	struct rcl_vmstat v;
	struct fcache c;
	struct bal b;
	struct mock m;
	pthread_t t;
	unsigned i;

	(void)state;
	mock_init(&m);
	cfg.clock = rcl_fake_clock_clock(fc);
	d = dom_cfg(&cfg, &m);
	fc_init(&c, d, 60, 10, false, true);
	fc_fill(&c, 60);

	for (i = 0; i < 10; i++)
		make_wb(&c, i);		/* 100 under writeback */
	for (i = 10; i < 29; i++)
		set_dirty(&c, i);	/* + 190 dirty = 290 */
	assert_int_equal(mock_n(&m), 0);
	assert_int_equal(rcl_domain_balance_dirty(d, RCL_CTX_CAPABLE), 0);
	assert_int_equal(mock_n(&m), 0);
	set_dirty(&c, 29);		/* 300: 30 % */
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 0, RCL_FLUSH_BACKGROUND, 1);
	assert_int_equal(mock_ack(&m, 0), 0);

	for (i = 30; i < 49; i++)
		set_dirty(&c, i);	/* 490: below 50 % */
	assert_int_equal(rcl_domain_balance_dirty(d, RCL_CTX_CAPABLE), 0);
	assert_int_equal(vmstat(d).dirty_throttled, 0);
	set_dirty(&c, 49);
	set_dirty(&c, 50);		/* 510 */
	bal_start(&b, &t, d);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	rcl_fake_clock_advance(fc, 4 * RCL_NSEC_PER_MSEC);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&b.done), 0);
	rcl_fake_clock_advance(fc, RCL_NSEC_PER_MSEC);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&b.ret), -ETIMEDOUT);
	v = vmstat(d);
	assert_int_equal(v.dirty_throttled, 1);
	assert_int_equal(v.dirty_throttle_timeouts, 1);

	/* And a writeback that brings it below 500 ends the wait. */
	bal_start(&b, &t, d);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	wb_end(&c, 0, 0);
	wb_end(&c, 1, 0);		/* 490 */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&b.ret), 0);
	v = vmstat(d);
	assert_int_equal(v.dirty_throttled, 2);
	assert_int_equal(v.dirty_throttle_timeouts, 1);

	while (mock_n(&m) > atomic_load(&m.acks))
		assert_int_equal(mock_ack(&m, (unsigned)atomic_load(&m.acks)), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

/*
 * A background threshold at or above the hard one would leave writers
 * throttled at the hard limit with no flusher woken: it becomes half the
 * hard one, as the kernel's domain_dirty_limits() makes it.
 */
static void test_flusher_dirty_thresholds_clamped(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain_config cfg = {
		.budget = 1000,
		.dirty_background_ratio = 60,
		.dirty_ratio = 40,
	};
	struct rcl_domain *d;
	struct fcache c;
	struct mock m;
	unsigned i;

	(void)state;
	mock_init(&m);
	cfg.clock = rcl_fake_clock_clock(fc);
	d = dom_cfg(&cfg, &m);
	fc_init(&c, d, 60, 10, false, true);
	fc_fill(&c, 60);
	for (i = 0; i < 19; i++)
		set_dirty(&c, i);	/* 190: below 20 % */
	assert_int_equal(mock_n(&m), 0);
	set_dirty(&c, 19);		/* 200: 20 %, half the hard 40 % */
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 0, RCL_FLUSH_BACKGROUND, 1);
	assert_int_equal(mock_ack(&m, 0), 0);
	while (mock_n(&m) > atomic_load(&m.acks))
		assert_int_equal(mock_ack(&m, (unsigned)atomic_load(&m.acks)), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

/*
 * Thresholds that round down to 0 (budget 4 at the default 20 %: 4 / 5;
 * budget 50 with dirty_ratio 1, background half of it): with nothing dirty
 * the domain is not "above the hard threshold", so
 * rcl_domain_balance_dirty() returns 0 at once (it used to wait the whole
 * timeout and return -ETIMEDOUT), and no flush of nothing is requested.
 * One dirty object is above them: it asks for a flush and throttles.  The
 * call runs in a thread: a wrong wait would show as a fake-clock waiter,
 * not as a hang.
 */
static void balance_returns_at_once(struct rcl_domain *d,
				    struct rcl_fake_clock *fc)
{
	struct bal b;
	pthread_t t;

	bal_start(&b, &t, d);
	WAIT_FOR(atomic_load(&b.done) || rcl_fake_clock_waiters(fc) == 1);
	if (!atomic_load(&b.done))	/* let it out before failing */
		rcl_fake_clock_advance(fc, 100 * RCL_NSEC_PER_MSEC);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&b.ret), 0);
	assert_int_equal(vmstat(d).dirty_throttled, 0);
}

static void test_flusher_dirty_thresholds_zero(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain_config cfg = { .budget = 50, .dirty_ratio = 1 };
	struct rcl_domain *d;
	struct fcache c;
	struct bal b;
	struct mock m;
	pthread_t t;

	(void)state;
	/* Budget 4, default ratios: both thresholds 0. */
	mock_init(&m);
	d = dom_make(4, fc, &m, RCL_FLUSH_ALL, 0);
	fc_init(&c, d, 2, 1, false, true);
	fc_fill(&c, 2);
	DOM_STATS(d, 0, 0, 0, 0);
	balance_returns_at_once(d, fc);
	assert_int_equal(rcl_domain_balance_dirty(d, RCL_CTX_MAY_IO), 0);
	assert_int_equal(mock_n(&m), 0);
	assert_int_equal(vmstat(d).flush_requests, 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);

	/* Budget 50, dirty_ratio 1: both thresholds 0 as well. */
	fc = fclock_new();
	mock_init(&m);
	cfg.clock = rcl_fake_clock_clock(fc);
	d = dom_cfg(&cfg, &m);
	fc_init(&c, d, 2, 1, false, true);
	fc_fill(&c, 2);
	balance_returns_at_once(d, fc);
	assert_int_equal(mock_n(&m), 0);
	assert_int_equal(vmstat(d).flush_requests, 0);

	/* Weight 1 dirty is above both: a request, and a throttle. */
	set_dirty(&c, 0);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 0, RCL_FLUSH_BACKGROUND, 1);
	bal_start(&b, &t, d);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(vmstat(d).dirty_throttled, 1);
	wb_start(&c, 0);
	wb_end(&c, 0, 0);		/* 0: not above 0 */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&b.ret), 0);
	assert_int_equal(vmstat(d).dirty_throttle_timeouts, 0);
	while (mock_n(&m) > atomic_load(&m.acks))
		assert_int_equal(mock_ack(&m, (unsigned)atomic_load(&m.acks)), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

/* ------------------------------------------------------------------------- */
/* 8. Throttling of reclaimers on writeback                                   */
/* ------------------------------------------------------------------------- */

struct rcl_thr {
	struct rcl_domain *d;
	struct rcl_reclaim_result res;
	atomic_int done;
};

static void *thr_main(void *arg)
{
	struct rcl_thr *r = arg;

	reclaim(r->d, 1, RCL_CTX_CAPABLE, &r->res);
	atomic_store(&r->done, 1);
	return NULL;
}

/*
 * Start a reclaimer thread on @d and wait until it sleeps throttled on @fc,
 * the @nwaiters-th to do so.
 */
static void thr_start(struct rcl_thr *r, pthread_t *t, struct rcl_domain *d,
		      struct rcl_fake_clock *fc, unsigned nwaiters)
{
	memset(r, 0, sizeof(*r));
	r->d = d;
	assert_int_equal(pthread_create(t, NULL, thr_main, r), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == nwaiters);
}

/*
 * 8192 objects; the @ntail oldest and the @nhead newest under writeback,
 * the rest clean.  Priority 12 takes the 2 oldest: a batch of writeback
 * objects only, so the reclaimer waits.
 */
static void thr_cache(struct fcache *c, struct rcl_domain *d, unsigned ntail,
		      unsigned nhead)
{
	unsigned i;

	big_cache(c, d, 8192);
	for (i = 0; i < ntail; i++)
		make_wb(c, i);
	for (i = 8192 - nhead; i < 8192; i++)
		make_wb(c, i);
}

static void test_flusher_throttle_writeback(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_thr r = { 0 };
	struct rcl_vmstat v;
	struct fcache c;
	pthread_t t;
	unsigned i;

	(void)state;
	/* Ended by 32 writeback completions (one throttled reclaimer). */
	thr_cache(&c, d, 2, 30);
	thr_start(&r, &t, d, fc, 1);
	assert_int_equal(vmstat(d).writeback_throttled, 1);
	assert_int_equal(dwr_of(O(&c, 0)), RCL_LRU_F_WRITEBACK | RCL_LRU_F_RECLAIM);
	/* 31 completions: it still waits. */
	wb_end(&c, 0, 0);
	for (i = 8192 - 30; i < 8192; i++)
		wb_end(&c, i, 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&r.done), 0);
	assert_int_equal(vmstat(d).writeback_throttled, 1);
	/* The 32nd: it goes on, and priority 11 frees the two objects
	 * rotated to the tail on completion, and 2 more. */
	wb_end(&c, 1, 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(r.res.nr_reclaimed, 4);
	assert_int_equal(r.res.priority, 11);
	assert_false(atomic_load(&O(&c, 0)->cached));
	assert_false(atomic_load(&O(&c, 1)->cached));
	v = vmstat(d);
	assert_int_equal(v.writeback_throttled, 1);
	assert_int_equal(v.writeback_throttle_timeouts, 0);
	assert_int_equal(v.nr_writeback_scanned, 2);
	assert_int_equal(atomic_load(&c.dirty_seen), 0);
	fc_destroy(&c, true);

	/* Ended by the 100 ms timeout. */
	thr_cache(&c, d, 2, 0);
	thr_start(&r, &t, d, fc, 1);
	assert_int_equal(vmstat(d).writeback_throttled, 2);
	rcl_fake_clock_advance(fc, 99 * RCL_NSEC_PER_MSEC);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&r.done), 0);
	rcl_fake_clock_advance(fc, RCL_NSEC_PER_MSEC);
	assert_int_equal(pthread_join(t, NULL), 0);
	/* priority 11: 8190 >> 11 = 3 clean ones */
	assert_int_equal(r.res.nr_reclaimed, 3);
	v = vmstat(d);
	assert_int_equal(v.writeback_throttled, 2);
	assert_int_equal(v.writeback_throttle_timeouts, 1);
	assert_true(atomic_load(&O(&c, 0)->cached));
	assert_true(atomic_load(&O(&c, 1)->cached));
	fc_destroy(&c, true);

	/* Without RCL_CTX_MAY_BLOCK: no throttling. */
	thr_cache(&c, d, 2, 0);
	tls_in_reclaim++;
	assert_int_equal(rcl_domain_reclaim(d, 1, RCL_CTX_MAY_IO, &r.res), 0);
	tls_in_reclaim--;
	assert_int_equal(r.res.nr_reclaimed, 3);
	assert_int_equal(vmstat(d).writeback_throttled, 2);
	fc_destroy(&c, true);

	dom_free(d, fc);
}

/*
 * Failed writes end writebacks too: 32 of them release a throttled reclaimer
 * (as 32 successes do; the kernel counts every end), though they are no
 * progress for rcl_domain_balance_dirty().  Ten more stay in flight, so the
 * "nothing under writeback" rule does not release it instead.
 */
static void test_flusher_throttle_writeback_failed_writes(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_thr r = { 0 };
	struct rcl_vmstat v;
	struct fcache c;
	pthread_t t;
	unsigned i;

	(void)state;
	thr_cache(&c, d, 2, 40);
	thr_start(&r, &t, d, fc, 1);
	assert_int_equal(vmstat(d).writeback_throttled, 1);
	/* 31 failed completions: it still waits. */
	wb_end(&c, 0, -EIO);
	for (i = 8192 - 40; i < 8192 - 10; i++)
		wb_end(&c, i, -EIO);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&r.done), 0);
	/* The 32nd, failed too: it goes on, with no timeout. */
	wb_end(&c, 1, -EIO);
	assert_int_equal(pthread_join(t, NULL), 0);
	v = vmstat(d);
	assert_int_equal(v.writeback_throttled, 1);
	assert_int_equal(v.writeback_throttle_timeouts, 0);
	for (i = 8192 - 10; i < 8192; i++)
		wb_end(&c, i, 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/*
 * Fewer than 32 objects in flight: the throttled reclaimer goes on when the
 * last of them completes, not after 100 ms (the kernel's waiter would sleep
 * out the timeout, since 32 completions cannot come).
 */
static void test_flusher_throttle_writeback_drained(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_thr r = { 0 };
	struct rcl_vmstat v;
	struct fcache c;
	pthread_t t;
	unsigned i;

	(void)state;
	thr_cache(&c, d, 2, 10);
	thr_start(&r, &t, d, fc, 1);
	assert_int_equal(vmstat(d).writeback_throttled, 1);
	/* 11 of the 12 complete: one is still in flight, so it waits. */
	wb_end(&c, 0, 0);
	for (i = 8192 - 10; i < 8192; i++)
		wb_end(&c, i, 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&r.done), 0);
	/* The last one: nothing is left to wait for; no time has passed. */
	wb_end(&c, 1, 0);
	WAIT_FOR(atomic_load(&r.done));	/* not the 100 ms of the clock */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_false(atomic_load(&O(&c, 0)->cached));
	assert_false(atomic_load(&O(&c, 1)->cached));
	v = vmstat(d);
	assert_int_equal(v.writeback_throttled, 1);
	assert_int_equal(v.writeback_throttle_timeouts, 0);
	assert_int_equal(atomic_load(&c.dirty_seen), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/*
 * The objects in flight leave the domain with their lruvec (a detach): none
 * of the domain's is under writeback any more, so the throttled reclaimer
 * goes on at once, as when the last one completes (flusher.h), not after
 * the 100 ms of the clock.
 */
static void test_flusher_throttle_writeback_detached(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_dirty_stats s;
	struct rcl_thr r = { 0 };
	struct fcache c;
	pthread_t t;

	(void)state;
	thr_cache(&c, d, 2, 0);
	thr_start(&r, &t, d, fc, 1);
	assert_int_equal(vmstat(d).writeback_throttled, 1);
	assert_int_equal(rcl_domain_detach(d, &c.lv), 0);
	assert_int_equal(rcl_domain_dirty_stats(d, &s), 0);
	assert_int_equal(s.nr_writeback, 0);
	WAIT_FOR(atomic_load(&r.done));	/* not the 100 ms of the clock */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(vmstat(d).writeback_throttle_timeouts, 0);
	assert_true(atomic_load(&O(&c, 0)->cached));
	assert_true(atomic_load(&O(&c, 1)->cached));
	fc_destroy(&c, false);
	dom_free(d, fc);
}

/*
 * Two throttled reclaimers: each waits for 32 x 2 = 64 completions.  The 4
 * oldest objects and the 60 newest are under writeback: each reclaimer's
 * priority-12 batch takes only writeback objects (the first takes objects
 * 0-1; the second 2-3, or 2 alone if the first had already taken its two
 * when it computed its target).
 */
static void test_flusher_throttle_writeback_two(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_thr r1 = { 0 }, r2 = { 0 };
	struct rcl_vmstat v;
	struct fcache c;
	pthread_t t1, t2;
	unsigned i, ended = 0;

	(void)state;
	thr_cache(&c, d, 4, 60);
	thr_start(&r1, &t1, d, fc, 1);
	thr_start(&r2, &t2, d, fc, 2);
	assert_int_equal(vmstat(d).writeback_throttled, 2);

	for (i = 8192 - 60; i < 8192; i++, ended++)
		wb_end(&c, i, 0);
	for (i = 0; i < 3; i++, ended++)
		wb_end(&c, i, 0);
	assert_int_equal(ended, 63);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 2);
	assert_int_equal(atomic_load(&r1.done), 0);
	assert_int_equal(atomic_load(&r2.done), 0);
	assert_int_equal(vmstat(d).writeback_throttled, 2);
	wb_end(&c, 3, 0);		/* the 64th */
	assert_int_equal(pthread_join(t1, NULL), 0);
	assert_int_equal(pthread_join(t2, NULL), 0);
	assert_true(r1.res.nr_reclaimed >= 1);
	assert_true(r2.res.nr_reclaimed >= 1);
	v = vmstat(d);
	assert_int_equal(v.writeback_throttled, 2);
	assert_int_equal(v.writeback_throttle_timeouts, 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/* ------------------------------------------------------------------------- */
/* 9. The library's flusher thread                                            */
/* ------------------------------------------------------------------------- */

/* The flusher thread is idle (in its wait) after @writes writes. */
#define WAIT_FLUSHER_IDLE(fc, w, nwrites, nwaiters)                           \
	WAIT_FOR(atomic_load(&(w)->writes) == (nwrites) &&                    \
		 rcl_fake_clock_waiters(fc) == (nwaiters))

static void test_flusher_thread_serves_requests(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d;
	struct rcl_vmstat v;
	struct fcache c;
	struct wctx w;
	struct mock m;
	unsigned i;

	(void)state;
	mock_init(&m);
	/* It also has an application flusher: not used while the thread
	 * runs. */
	d = dom_make(HUGE_BUDGET, fc, &m, RCL_FLUSH_ALL, 0);
	fc_init(&c, d, 10, 1, false, true);
	fc_fill(&c, 10);
	for (i = 0; i < 6; i++)
		set_dirty(&c, i);
	wctx_init(&w, W_FLUSHER);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 4), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&w.writes), 0);

	/* All: two batches (4 + 2), oldest first, one sync each. */
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 6, 1);
	for (i = 0; i < 6; i++) {
		assert_int_equal(w.log[i], i);
		assert_int_equal(atomic_load(&O(&c, i)->writes), 1);
		assert_int_equal(dwr_of(O(&c, i)), 0);
		/* a write does not move an object */
		assert_int_equal(lru_check_pos_from_tail(&c.lv, INACTIVE,
							 &O(&c, i)->lru),
				 i);
	}
	assert_int_equal(atomic_load(&w.syncs), 2);
	DOM_STATS(d, 0, 0, 0, 0);
	v = vmstat(d);
	assert_int_equal(v.writes_flusher, 6);
	assert_int_equal(v.flush_requests, 1);
	assert_int_equal(v.flusher_wakeups, 1);
	assert_int_equal(mock_n(&m), 0);

	/* nr_to_write 3: the 3 oldest, one batch. */
	for (i = 0; i < 6; i++)
		set_dirty(&c, i);
	assert_int_equal(rcl_domain_flush(d, 3), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 9, 1);
	assert_int_equal(w.log[6], 0);
	assert_int_equal(w.log[7], 1);
	assert_int_equal(w.log[8], 2);
	assert_int_equal(atomic_load(&w.syncs), 3);
	DOM_STATS(d, 3, 3, 0, 0);
	assert_int_equal(vmstat(d).writes_flusher, 9);

	/* A failed write: that object is dirty again, the others clean. */
	atomic_store(&w.fail_id, 4);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 12, 1);
	assert_int_equal(dwr_of(O(&c, 3)), 0);
	assert_int_equal(dwr_of(O(&c, 4)), RCL_LRU_F_DIRTY);
	assert_int_equal(dwr_of(O(&c, 5)), 0);
	DOM_STATS(d, 1, 1, 0, 0);
	assert_int_equal(vmstat(d).writes_flusher, 11);

	/* A failed sync: the whole batch is dirty again. */
	atomic_store(&w.fail_id, -1);
	atomic_store(&w.sync_fail, 1);
	set_dirty(&c, 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 14, 1);
	assert_int_equal(dwr_of(O(&c, 0)), RCL_LRU_F_DIRTY);
	assert_int_equal(dwr_of(O(&c, 4)), RCL_LRU_F_DIRTY);
	DOM_STATS(d, 2, 2, 0, 0);
	assert_int_equal(vmstat(d).writes_flusher, 11);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 16, 1);
	DOM_STATS(d, 0, 0, 0, 0);
	v = vmstat(d);
	assert_int_equal(v.writes_flusher, 13);
	assert_int_equal(v.flush_requests, 5);
	assert_int_equal(v.flusher_wakeups, 5);
	assert_int_equal(mock_n(&m), 0);

	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);	/* not running */
	/* Stopped: requests go to the application's flusher again. */
	assert_int_equal(rcl_domain_flush(d, 2), 0);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 2, RCL_FLUSH_SYNC, 6);
	assert_int_equal(mock_ack(&m, 0), 0);
	assert_int_equal(atomic_load(&w.writes), 16);

	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

/*
 * A request for every dirty object (nr_to_write 0) writes every dirty object
 * it can: objects whose write fails stay dirty, the others are written.
 * Batches of 2; the writes of the two oldest objects always fail.
 */
static void test_flusher_thread_write_error_does_not_stop_request(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct fcache c;
	struct wctx w;
	unsigned i;

	(void)state;
	fc_init(&c, d, 6, 1, false, true);
	fc_fill(&c, 6);
	for (i = 0; i < 6; i++)
		set_dirty(&c, i);
	wctx_init(&w, W_FLUSHER);
	atomic_store(&w.fail_mask, 3);		/* objects 0 and 1 */
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 2), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	/* served: it wrote, and went back to its wait */
	WAIT_FOR(atomic_load(&w.writes) >= 1 &&
		 rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(dwr_of(O(&c, 0)), RCL_LRU_F_DIRTY);
	assert_int_equal(dwr_of(O(&c, 1)), RCL_LRU_F_DIRTY);
	for (i = 2; i < 6; i++)
		assert_int_equal(dwr_of(O(&c, i)), 0);
	DOM_STATS(d, 2, 2, 0, 0);
	assert_int_equal(vmstat(d).writes_flusher, 4);

	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/*
 * Reclaim's trigger served by the flusher thread: the two dirty objects
 * reclaim met are written (on the flusher thread, never in reclaim), end
 * their writeback clean while flagged, so they move to the inactive tail,
 * and the next reclaim frees them first.
 */
static void test_flusher_thread_serves_reclaim(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_reclaim_result res;
	struct rcl_vmstat v;
	struct fcache c;
	struct wctx w;

	(void)state;
	big_cache(&c, d, 8192);
	wctx_init(&w, W_FLUSHER);
	/* The writes wait until this reclaim has returned, so that it does
	 * not meet the objects again once written. */
	atomic_store(&w.hold, 1);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 0), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	set_dirty(&c, 0);
	set_dirty(&c, 1);

	reclaim(d, 1, RCL_CTX_CAPABLE, &res);
	assert_int_equal(res.nr_reclaimed, 3);
	assert_int_equal(res.priority, 11);
	atomic_store(&w.hold, 0);
	WAIT_FLUSHER_IDLE(fc, &w, 2, 1);
	v = vmstat(d);
	assert_int_equal(v.flush_requests_vmscan, 1);
	assert_int_equal(v.flusher_wakeups, 1);
	assert_int_equal(v.writes_flusher, 2);
	assert_int_equal(atomic_load(&w.syncs), 1);
	DOM_STATS(d, 0, 0, 0, 0);
	/* written oldest first; each moved to the tail as its writeback
	 * ended: object 1 last, so at the tail */
	assert_int_equal(w.log[0], 0);
	assert_int_equal(w.log[1], 1);
	assert_int_equal(lru_check_pos_from_tail(&c.lv, INACTIVE, &O(&c, 1)->lru),
			 0);
	assert_int_equal(lru_check_pos_from_tail(&c.lv, INACTIVE, &O(&c, 0)->lru),
			 1);
	assert_int_equal(dwr_of(O(&c, 0)), 0);
	assert_int_equal(dwr_of(O(&c, 1)), 0);
	fc_check(&c);

	evlog_reset(&c);
	reclaim(d, 2, RCL_CTX_CAPABLE, &res);
	assert_true(atomic_load(&c.nlog) >= 2);
	assert_int_equal(c.log[0], 1);
	assert_int_equal(c.log[1], 0);
	assert_false(atomic_load(&O(&c, 0)->cached));
	assert_false(atomic_load(&O(&c, 1)->cached));
	assert_int_equal(atomic_load(&c.dirty_seen), 0);

	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/*
 * Background requests go to the thread too: budget 100, objects of weight
 * 1; the 10th set_dirty() reaches the background threshold (10 %).
 */
static void test_flusher_thread_background(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(100, fc, NULL, RCL_FLUSH_ALL, 0);
	struct fcache c;
	struct wctx w;
	unsigned i;

	(void)state;
	fc_init(&c, d, 20, 1, false, true);
	fc_fill(&c, 20);
	wctx_init(&w, W_FLUSHER);
	atomic_store(&w.hold, 1);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 0), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	for (i = 0; i < 9; i++)
		set_dirty(&c, i);
	assert_int_equal(vmstat(d).flush_requests, 0);
	set_dirty(&c, 9);
	assert_int_equal(vmstat(d).flush_requests, 1);
	assert_int_equal(vmstat(d).flusher_wakeups, 1);
	atomic_store(&w.hold, 0);
	WAIT_FLUSHER_IDLE(fc, &w, 10, 1);
	DOM_STATS(d, 0, 0, 0, 0);
	assert_int_equal(vmstat(d).writes_flusher, 10);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/*
 * A request pending for the application's flusher when the library's
 * thread starts was delivered to no one: the thread takes it (it was
 * dropped with the one in flight, and the dirty objects stayed dirty).
 * Budget 1000, weight 1: 10 dirty, below the background threshold.
 */
static void test_flusher_thread_takes_the_pending_request(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d;
	struct fcache c;
	struct wctx w;
	struct mock m;
	unsigned i;

	(void)state;
	mock_init(&m);
	d = dom_make(1000, fc, &m, RCL_FLUSH_ALL, 0);
	fc_init(&c, d, 20, 1, false, true);
	fc_fill(&c, 20);
	for (i = 0; i < 10; i++)
		set_dirty(&c, i);
	assert_int_equal(mock_n(&m), 0);
	assert_int_equal(rcl_domain_flush(d, 1), 0);	/* in flight */
	assert_int_equal(rcl_domain_flush(d, 0), 0);	/* pending */
	assert_int_equal(mock_n(&m), 1);
	wctx_init(&w, W_FLUSHER);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 0), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 10, 1);
	DOM_STATS(d, 0, 0, 0, 0);
	assert_int_equal(vmstat(d).writes_flusher, 10);
	/* The application's request in flight was dropped at the start. */
	assert_int_equal(mock_ack(&m, 0), -ENOENT);
	assert_int_equal(mock_n(&m), 1);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

/*
 * A bounded request in flight (rcl_domain_flush() of one object) does not
 * cover the dirt that reaches the background threshold meanwhile: the
 * background request is queued behind it, not dropped by the lock-free
 * filter (then nothing flushed the domain, above its threshold, until the
 * next set_dirty()).  Budget 1000, weight 10: background at 100.
 */
static void test_flusher_background_queues_behind_a_bounded_request(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d;
	struct fcache c;
	struct mock m;
	unsigned i;

	(void)state;
	mock_init(&m);
	d = dom_make(1000, fc, &m, RCL_FLUSH_ALL, 0);
	fc_init(&c, d, 40, 10, false, true);
	fc_fill(&c, 40);
	set_dirty(&c, 0);
	assert_int_equal(rcl_domain_flush(d, 1), 0);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 1, RCL_FLUSH_SYNC, 1);
	for (i = 1; i < 15; i++)
		set_dirty(&c, i);		/* 150 */
	assert_int_equal(mock_n(&m), 1);	/* pending behind it */
	wb_start(&c, 0);
	wb_end(&c, 0, 0);			/* the one object, served */
	assert_int_equal(mock_ack(&m, 0), 0);
	assert_int_equal(mock_n(&m), 2);
	REQ_EQ(&m, 1, 0, RCL_FLUSH_BACKGROUND, 2);
	/* A flush of everything in flight: the filter skips asking. */
	assert_int_equal(vmstat(d).flush_requests, 2);
	set_dirty(&c, 15);
	assert_int_equal(vmstat(d).flush_requests, 2);
	assert_int_equal(mock_ack(&m, 1), 0);
	for (i = 1; i < 16; i++) {
		wb_start(&c, i);
		wb_end(&c, i, 0);
	}
	DOM_STATS(d, 0, 0, 0, 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

/*
 * Objects dirtied while still pending in this thread's add batch: the
 * flusher thread drains the batches when the lists run out, and writes them.
 */
static void test_flusher_thread_pending_dirty(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct fcache c;
	struct wctx w;
	unsigned i;

	(void)state;
	fc_init(&c, d, 8, 1, false, true);
	for (i = 0; i < 8; i++)
		fc_add(&c, i, 0);	/* batched: pending */
	for (i = 0; i < 8; i++)
		set_dirty(&c, i);
	assert_int_equal(rcl_lru_node_flags(&O(&c, 0)->lru) & RCL_LRU_F_PENDING,
			 RCL_LRU_F_PENDING);
	wctx_init(&w, W_FLUSHER);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 4), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 8, 1);
	DOM_STATS(d, 0, 0, 0, 0);
	assert_int_equal(vmstat(d).writes_flusher, 8);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/* rcl_domain_writeback_all(): everything, pending objects and objects dirtied
 * meanwhile included, in the calling thread. */
static struct fcache *wball_c;

static void wball_hook(struct fobj *o)
{
	if (o->id == 0)
		T_EQ(rcl_lruvec_set_dirty(&wball_c->lv, &wball_c->objs[151].lru),
		     0);
}

static void test_flusher_writeback_all(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	uint64_t written = 99;
	struct fcache c;
	struct wctx w;
	unsigned i;

	(void)state;
	fc_init(&c, d, 152, 1, false, true);
	fc_fill(&c, 150);
	for (i = 0; i < 150; i++)
		set_dirty(&c, i);
	fc_add(&c, 150, 0);		/* pending in this thread's batch */
	set_dirty(&c, 150);
	fc_add(&c, 151, RCL_LRU_ADD_NOBATCH);	/* dirtied by the write of 0 */
	wball_c = &c;
	wctx_init(&w, W_CALLER);
	atomic_store(&w.hook, wball_hook);
	DOM_STATS(d, 151, 151, 0, 0);

	assert_int_equal(rcl_domain_writeback_all(d, &wops, &w, &written), 0);
	assert_int_equal(written, 152);
	assert_int_equal(atomic_load(&w.writes), 152);
	for (i = 0; i < 152; i++) {
		assert_int_equal(atomic_load(&O(&c, i)->writes), 1);
		assert_int_equal(dwr_of(O(&c, i)), 0);
	}
	DOM_STATS(d, 0, 0, 0, 0);
	assert_int_equal(vmstat(d).writes_flusher, 152);
	assert_int_equal(vmstat(d).flush_requests, 0);

	/* Nothing dirty: nothing written; @written is optional. */
	atomic_store(&w.hook, NULL);
	assert_int_equal(rcl_domain_writeback_all(d, &wops, &w, &written), 0);
	assert_int_equal(written, 0);
	assert_int_equal(rcl_domain_writeback_all(d, &wops, &w, NULL), 0);

	/* A failed sync: the error, the objects stay dirty. */
	set_dirty(&c, 3);
	atomic_store(&w.sync_fail, 1);
	assert_int_equal(rcl_domain_writeback_all(d, &wops, &w, &written), -EIO);
	assert_int_equal(written, 0);
	assert_int_equal(dwr_of(O(&c, 3)), RCL_LRU_F_DIRTY);
	assert_int_equal(rcl_domain_writeback_all(d, &wops, &w, &written), 0);
	assert_int_equal(written, 1);
	DOM_STATS(d, 0, 0, 0, 0);

	fc_destroy(&c, true);
	dom_free(d, NULL);
}

/*
 * rcl_domain_writeback_all() while the library's flusher thread writes:
 * object 0 is in the thread's batch, and dirtied again during its write.
 * The call writes 1 and 2, waits for the thread's batch to end, and writes
 * 0 again (or the thread does): when it returns nothing is dirty.  If the
 * batch does not end within the bound (the dirty timeout, at least 1 s):
 * -ETIMEDOUT.
 */
struct wball_thr {
	struct rcl_domain *d;
	struct wctx *w;
	uint64_t written;
	atomic_int ret;
	atomic_bool done;
};

static void *wball_main(void *arg)
{
	struct wball_thr *t = arg;

	atomic_store(&t->ret, rcl_domain_writeback_all(t->d, &wops, t->w,
							&t->written));
	atomic_store(&t->done, true);
	return NULL;
}

/* The flusher thread takes object @id into a batch and holds it there. */
static void wball_flusher_holds(struct rcl_domain *d, struct fcache *c,
				struct wctx *w, unsigned id)
{
	atomic_store(&w->hold_only, (int)id);
	atomic_store(&w->hold, 1);
	set_dirty(c, id);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(dwr_of(O(c, id)) & RCL_LRU_F_WRITEBACK);
}

static void test_flusher_writeback_all_vs_flusher(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct wball_thr t = { 0 };
	struct fcache c;
	struct wctx w;
	pthread_t tid;
	unsigned i;

	(void)state;
	fc_init(&c, d, 4, 1, false, true);
	fc_fill(&c, 4);
	wctx_init(&w, W_ANY);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 1), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	wball_flusher_holds(d, &c, &w, 0);
	set_dirty(&c, 0);	/* again, during the thread's write */
	set_dirty(&c, 1);
	set_dirty(&c, 2);
	assert_int_equal(dwr_of(O(&c, 0)),
			 RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK);

	t.d = d;
	t.w = &w;
	assert_int_equal(pthread_create(&tid, NULL, wball_main, &t), 0);
	/* It wrote 1 and 2 and waits for the thread's batch. */
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1 &&
		 atomic_load(&O(&c, 1)->writes) == 1 &&
		 atomic_load(&O(&c, 2)->writes) == 1);
	assert_false(atomic_load(&t.done));
	assert_int_equal(dwr_of(O(&c, 1)), 0);
	assert_int_equal(dwr_of(O(&c, 2)), 0);
	atomic_store(&w.hold, 0);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(atomic_load(&t.ret), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(dwr_of(O(&c, i)) & RCL_LRU_F_DIRTY, 0);
	/* 0 written twice: the thread's write it outdated, and the next. */
	assert_int_equal(atomic_load(&O(&c, 0)->writes), 2);
	assert_true(t.written >= 2 && t.written <= 3);

	/* A batch that does not end within the bound (1 s here). */
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);	/* the thread idle */
	wball_flusher_holds(d, &c, &w, 3);
	memset(&t, 0, sizeof(t));
	t.d = d;
	t.w = &w;
	assert_int_equal(pthread_create(&tid, NULL, wball_main, &t), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	rcl_fake_clock_advance(fc, 999 * RCL_NSEC_PER_MSEC);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_false(atomic_load(&t.done));
	rcl_fake_clock_advance(fc, RCL_NSEC_PER_MSEC);
	assert_int_equal(pthread_join(tid, NULL), 0);
	assert_int_equal(atomic_load(&t.ret), -ETIMEDOUT);
	assert_int_equal(t.written, 0);
	atomic_store(&w.hold, 0);
	WAIT_FOR(dwr_of(O(&c, 3)) == 0);

	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	DOM_STATS(d, 0, 0, 0, 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/*
 * rcl_domain_writeback_all() returns the first error, and "the objects
 * concerned stay dirty": the others are written.  150 dirty objects (3
 * batches of at most 64), the write of object 10 (first batch) fails.
 */
static void test_flusher_writeback_all_error(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	uint64_t written = 0;
	struct fcache c;
	struct wctx w;
	unsigned i;

	(void)state;
	fc_init(&c, d, 150, 1, false, true);
	fc_fill(&c, 150);
	for (i = 0; i < 150; i++)
		set_dirty(&c, i);
	wctx_init(&w, W_CALLER);
	atomic_store(&w.fail_id, 10);
	assert_int_equal(rcl_domain_writeback_all(d, &wops, &w, &written), -EIO);
	assert_int_equal(dwr_of(O(&c, 10)), RCL_LRU_F_DIRTY);
	DOM_STATS(d, 1, 1, 0, 0);
	assert_int_equal(written, 149);
	for (i = 0; i < 150; i++)
		if (i != 10)
			assert_int_equal(dwr_of(O(&c, i)), 0);

	atomic_store(&w.fail_id, -1);
	assert_int_equal(rcl_domain_writeback_all(d, &wops, &w, NULL), 0);
	DOM_STATS(d, 0, 0, 0, 0);
	fc_destroy(&c, true);
	dom_free(d, NULL);
}

/*
 * From the flusher's own callbacks: rcl_domain_flusher_stop() is -EDEADLK,
 * and rcl_domain_balance_dirty() returns at once even above the hard
 * threshold.  Budget 100, 30 dirty objects of weight 1: 30 % > 20 %.
 */
static struct rcl_domain *own_d;
static atomic_int own_once, own_stop_write, own_stop_sync, own_balance,
	own_sync_once;
static atomic_ullong own_weight;

static void own_write_hook(struct fobj *o)
{
	struct rcl_dirty_stats s;

	(void)o;
	if (atomic_exchange(&own_once, 0)) {
		T_EQ(rcl_domain_dirty_stats(own_d, &s), 0);
		atomic_store(&own_weight, s.weight_dirty + s.weight_writeback);
		atomic_store(&own_stop_write, rcl_domain_flusher_stop(own_d));
		atomic_store(&own_balance,
			     rcl_domain_balance_dirty(own_d, RCL_CTX_CAPABLE));
	}
}

static int own_sync(void *priv)
{
	if (atomic_exchange(&own_sync_once, 0))
		atomic_store(&own_stop_sync, rcl_domain_flusher_stop(own_d));
	return mock_sync(priv);
}

static const struct rcl_writeback_ops own_ops = { mock_write, own_sync };

static void test_flusher_thread_own_callbacks(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(100, fc, NULL, RCL_FLUSH_ALL, 0);
	struct fcache c;
	struct wctx w;
	unsigned i;

	(void)state;
	own_d = d;
	atomic_store(&own_once, 1);
	atomic_store(&own_sync_once, 1);
	atomic_store(&own_stop_write, 1);
	atomic_store(&own_stop_sync, 1);
	atomic_store(&own_balance, 1);
	fc_init(&c, d, 30, 1, false, true);
	fc_fill(&c, 30);
	for (i = 0; i < 30; i++)
		set_dirty(&c, i);	/* no flusher yet: no request */
	wctx_init(&w, W_FLUSHER);
	atomic_store(&w.hook, own_write_hook);
	assert_int_equal(rcl_domain_flusher_start(d, &own_ops, &w, 0), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 30, 1);
	assert_int_equal(atomic_load(&own_weight), 30);
	assert_int_equal(atomic_load(&own_stop_write), -EDEADLK);
	assert_int_equal(atomic_load(&own_stop_sync), -EDEADLK);
	assert_int_equal(atomic_load(&own_balance), 0);
	assert_int_equal(vmstat(d).dirty_throttled, 0);
	DOM_STATS(d, 0, 0, 0, 0);
	/* Still running: it serves the next request. */
	set_dirty(&c, 5);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FLUSHER_IDLE(fc, &w, 31, 1);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	fc_destroy(&c, true);
	dom_free(d, fc);
}

/*
 * Two threads stop the running flusher at once, while its write callback is
 * held: one joins the thread, the other waits for it (it is then the fake
 * clock's only waiter: the thread itself is inside its callback), and both
 * return 0 with the callback no longer running.  Joining the thread twice
 * is undefined; glibc's second join never returned.  While the stop is
 * under way, a request goes to the application's flusher, as with no
 * thread (not queued for the thread, then dropped), and it is still in
 * flight once the stop is done; the held write callback's
 * rcl_domain_flusher_start() gets -EBUSY, not a deadlock.
 */
static atomic_int dbl_active, dbl_start_ret;
static struct rcl_domain *dbl_d;

static int dbl_write(void *priv, struct rcl_lru_node *node)
{
	int err;

	atomic_fetch_add(&dbl_active, 1);
	err = mock_write(priv, node);	/* waits while w.hold is set */
	atomic_store(&dbl_start_ret,
		     rcl_domain_flusher_start(dbl_d, &wops, priv, 0));
	atomic_fetch_sub(&dbl_active, 1);
	return err;
}

static const struct rcl_writeback_ops dbl_ops = { dbl_write, mock_sync };

struct dbl_stop {
	struct rcl_domain *d;
	atomic_int ret, done;
};

static void *dbl_stop_main(void *arg)
{
	struct dbl_stop *s = arg;

	atomic_store(&s->ret, rcl_domain_flusher_stop(s->d));
	atomic_store(&s->done, 1);
	return NULL;
}

/* The flusher thread's write: waits until the test releases it. */
static atomic_int forkwb_entered, forkwb_release;

static int forkwb_hold(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	atomic_store(&forkwb_entered, 1);
	while (!atomic_load(&forkwb_release))
		usleep(1000);
	return 0;
}

static int forkwb_write(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	return 0;
}

/*
 * fork() while the parent's flusher thread is inside a batch: the child
 * has no flusher thread (domain.h), so nothing ends that batch there.
 * rcl_domain_writeback_all() in the child waited for it (1 s, on every
 * call) and returned -ETIMEDOUT, though it had written every object it
 * could; the batch's own object stays under writeback in the child's
 * copy, skipped as an application writer's would be.  The child ends
 * itself by alarm(), a failure, if a call hangs.
 */
static void test_flusher_fork_child_during_a_batch(void **state)
{
	static const struct rcl_writeback_ops hold = { .write = forkwb_hold };
	static const struct rcl_writeback_ops quick = { .write = forkwb_write };
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct fcache c;
	int st = 0;
	pid_t pid;

	(void)state;
	atomic_store(&forkwb_entered, 0);
	atomic_store(&forkwb_release, 0);
	fc_init(&c, d, 2, 1, false, true);
	fc_fill(&c, 2);
	set_dirty(&c, 0);
	assert_int_equal(rcl_domain_flusher_start(d, &hold, NULL, 1), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(atomic_load(&forkwb_entered));	/* object 0's batch */
	set_dirty(&c, 1);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t written = 0;
		int err, i, ok = 1;

		alarm(20);
		for (i = 0; i < 2 && ok; i++) {
			err = rcl_domain_writeback_all(d, &quick, NULL, &written);
			if (err != 0 || written != (i == 0 ? 1u : 0u)) {
				fprintf(stderr, "child: writeback_all %d, written %llu\n",
					err, (unsigned long long)written);
				ok = 0;
			}
		}
		ok = ok && dwr_of(O(&c, 1)) == 0 &&
		     dwr_of(O(&c, 0)) == RCL_LRU_F_WRITEBACK;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&forkwb_release, 1);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	ASSERT_CHILD_EXITED_OK(st);
	fc_destroy(&c, true);
	dom_free(d, NULL);
}

/*
 * fork() from the flusher thread's own write callback: the child's one
 * thread is that flusher thread, in the middle of its batch.  A flush
 * request there takes flock, whose first use in the child forgets the
 * parent's flusher thread; it freed the batch's items, which the batch
 * below the callback goes on using and frees again at its end.  The child
 * ends by its alarm once the batch is over (its flusher loop then waits for
 * ever, as a fork from a callback leaves it); a crash is a failure.
 */
static atomic_int fcb_child;
static atomic_int fcb_forked;

static void fcb_alarm(int sig)
{
	(void)sig;
	_exit(0);
}

static int fcb_write(void *priv, struct rcl_lru_node *node)
{
	struct rcl_domain *d = priv;

	(void)node;
	if (atomic_exchange(&fcb_forked, 1))
		return 0;
	atomic_store(&fcb_child, (int)fork());
	if (atomic_load(&fcb_child) == 0) {
		signal(SIGALRM, fcb_alarm);
		alarm(2);
		if (rcl_domain_flush(d, 0) != -ENODEV)
			_exit(1);
	}
	return 0;
}

static void test_flusher_fork_from_the_flusher_threads_write(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_writeback_ops ops = { .write = fcb_write };
	struct fcache c;
	int st = 0;

	(void)state;
	/*
	 * Under TSan the child, forked from a thread that is not the main
	 * one, does not end by its alarm in the flusher's endless wait.
	 */
	if (!THREADS_AFTER_FORK)
		skip();
	atomic_store(&fcb_forked, 0);
	atomic_store(&fcb_child, -1);
	fc_init(&c, d, 4, 1, false, true);
	fc_fill(&c, 4);
	set_dirty(&c, 0);
	set_dirty(&c, 1);
	fflush(NULL);
	assert_int_equal(rcl_domain_flusher_start(d, &ops, d, 2), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(atomic_load(&fcb_forked) && atomic_load(&fcb_child) != -1);
	assert_true(atomic_load(&fcb_child) > 0);
	assert_int_equal(waitpid((pid_t)atomic_load(&fcb_child), &st, 0),
			 (pid_t)atomic_load(&fcb_child));
	ASSERT_CHILD_EXITED_OK(st);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	fc_destroy(&c, true);
	dom_free(d, NULL);
}

/*
 * fork() while another thread holds the domain's flush lock: the parent's
 * flusher thread in its wait, through a clock whose wait() keeps the mutex
 * until the test lets it go (what a thread between two waits does for a
 * moment).  The child must not find flock held for ever: its flush request
 * returns.  An alarm turns a hang into a failure.
 */
static sem_t hold_in, hold_out;
static atomic_int hold_armed;

static uint64_t hold_now(void *ctx)
{
	const struct rcl_clock *m = rcl_clock_monotonic();

	(void)ctx;
	return m->now(m->ctx);
}

static int hold_wait(void *ctx, pthread_cond_t *cond, pthread_mutex_t *mutex,
		     uint64_t deadline)
{
	const struct rcl_clock *m = rcl_clock_monotonic();

	(void)ctx;
	if (atomic_exchange(&hold_armed, 0)) {
		sem_post(&hold_in);
		while (sem_wait(&hold_out) != 0)
			;
	}
	return m->wait(m->ctx, cond, mutex, deadline);
}

static const struct rcl_clock hold_clock = { hold_now, hold_wait, NULL };

static void test_flusher_fork_child_with_flock_held_elsewhere(void **state)
{
	static const struct rcl_writeback_ops ops = { .write = forkwb_write };
	struct rcl_domain_config cfg = { .budget = HUGE_BUDGET,
					 .clock = &hold_clock };
	struct rcl_domain *d;
	int st = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(sem_init(&hold_in, 0, 0), 0);
	assert_int_equal(sem_init(&hold_out, 0, 0), 0);
	atomic_store(&hold_armed, 1);
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_int_equal(rcl_domain_flusher_start(d, &ops, NULL, 0), 0);
	/* The thread is in its first wait, holding flock. */
	while (sem_wait(&hold_in) != 0)
		;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int err;

		alarm(20);
		/* No flusher in the child and no ops: nobody to ask. */
		err = rcl_domain_flush(d, 0);
		_exit(err == -ENODEV ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(sem_post(&hold_out), 0);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	ASSERT_CHILD_EXITED_OK(st);
	assert_int_equal(rcl_domain_free(d), 0);
	sem_destroy(&hold_in);
	sem_destroy(&hold_out);
}

/*
 * fork() while a request is in flight to the parent's flusher thread, in
 * a domain that also has an application flusher: in the child, with no
 * thread, flush requests go to the application's ops (domain.h).  The
 * thread's request stayed in flight there, with no thread to acknowledge
 * it, so every request of the child merged into the pending one and none
 * reached the ops (nor did a background one: the flush_busy filter).
 */
static void test_flusher_fork_child_requests_reach_the_ops(void **state)
{
	static const struct rcl_writeback_ops hold = { .write = forkwb_hold };
	struct rcl_domain *d;
	struct fcache c;
	struct mock m;
	int st = 0;
	pid_t pid;

	(void)state;
	mock_init(&m);
	d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_ALL, 0);
	atomic_store(&forkwb_entered, 0);
	atomic_store(&forkwb_release, 0);
	fc_init(&c, d, 1, 1, false, true);
	fc_fill(&c, 1);
	set_dirty(&c, 0);
	assert_int_equal(rcl_domain_flusher_start(d, &hold, NULL, 1), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(atomic_load(&forkwb_entered));	/* the thread's request */
	assert_int_equal(mock_n(&m), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int err, ok;

		alarm(20);
		err = rcl_domain_flush(d, 5);
		ok = err == 0 && mock_n(&m) == 1;
		if (!ok)
			fprintf(stderr, "child: flush %d, %u wakeups\n", err,
				mock_n(&m));
		ok = ok && mock_ack(&m, 0) == 0;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&forkwb_release, 1);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	ASSERT_CHILD_EXITED_OK(st);
	assert_int_equal(mock_n(&m), 0);
	fc_destroy(&c, true);
	dom_free(d, NULL);
	mock_fini(&m);
}

/*
 * The same fork, and in the child the dirt that reaches the background
 * threshold: the lock-free filter of a dirtying saw the parent thread's
 * request busy for ever (inherited flush_busy) and asked nothing, so no
 * background request ever reached the ops in the child (a review's
 * reproducer).  Budget 100, weight 1: background at 10.
 */
static void test_flusher_fork_child_background_reaches_the_ops(void **state)
{
	static const struct rcl_writeback_ops hold = { .write = forkwb_hold };
	struct rcl_domain *d;
	struct fcache c;
	struct mock m;
	int st = 0;
	pid_t pid;

	(void)state;
	mock_init(&m);
	d = dom_make(100, NULL, &m, RCL_FLUSH_ALL, 0);
	atomic_store(&forkwb_entered, 0);
	atomic_store(&forkwb_release, 0);
	fc_init(&c, d, 12, 1, false, true);
	fc_fill(&c, 12);
	set_dirty(&c, 0);
	assert_int_equal(rcl_domain_flusher_start(d, &hold, NULL, 1), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(atomic_load(&forkwb_entered));	/* the thread's request */
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rcl_flush_request r;
		unsigned i;
		int ok;

		alarm(20);
		for (i = 1; i <= 10; i++)
			T_EQ(rcl_lruvec_set_dirty(&c.lv, &O(&c, i)->lru), 0);
		ok = mock_n(&m) == 1;
		if (ok) {
			r = mock_req(&m, 0);
			ok = r.reason == RCL_FLUSH_BACKGROUND &&
			     r.nr_to_write == 0;
		}
		if (!ok)
			fprintf(stderr, "child: %u wakeups\n", mock_n(&m));
		ok = ok && mock_ack(&m, 0) == 0;
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&forkwb_release, 1);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	ASSERT_CHILD_EXITED_OK(st);
	fc_destroy(&c, true);
	dom_free(d, NULL);
	mock_fini(&m);
}

/*
 * fork() while the parent's flusher thread grows its set of failed objects
 * (wb_skip_add()), just after it freed the old table and before it stored
 * the new one: the allocator's free holds the thread there.  The child
 * frees what the thread held (flusher_after_fork_locked()), and must not
 * free the old table a second time.
 */
static atomic_int forkskip_armed, forkskip_entered, forkskip_release;
static void *forkskip_freed;
static pid_t forkskip_parent;

static void *forkskip_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static void forkskip_free(void *ctx, void *p)
{
	(void)ctx;
	if (getpid() != forkskip_parent && p && p == forkskip_freed)
		_exit(3);	/* the child frees it again */
	free(p);
	if (getpid() == forkskip_parent &&
	    atomic_exchange(&forkskip_armed, 0)) {
		forkskip_freed = p;
		atomic_store(&forkskip_entered, 1);
		while (!atomic_load(&forkskip_release))
			usleep(1000);
	}
}

static int forkskip_write(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	/* The first free from here on is the set's old table (64 slots,
	   given up at the 33rd failure). */
	atomic_store(&forkskip_armed, 1);
	return -EIO;
}

static void test_flusher_fork_child_while_skip_set_grows(void **state)
{
	static const struct rcl_allocator a = { forkskip_alloc, forkskip_free,
						NULL };
	static const struct rcl_writeback_ops ops = { .write = forkskip_write };
	struct rcl_domain_config cfg = {
		.budget = HUGE_BUDGET,
		.flush_policy = RCL_FLUSH_ALL,
		.allocator = &a,
	};
	struct rcl_domain *d = dom_cfg(&cfg, NULL);
	struct fcache c;
	unsigned i;
	int st = 0;
	pid_t pid;

	(void)state;
	forkskip_parent = getpid();
	atomic_store(&forkskip_armed, 0);
	atomic_store(&forkskip_entered, 0);
	atomic_store(&forkskip_release, 0);
	fc_init(&c, d, 40, 1, false, true);
	fc_fill(&c, 40);
	for (i = 0; i < 40; i++)
		set_dirty(&c, i);
	assert_int_equal(rcl_domain_flusher_start(d, &ops, NULL, 64), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(atomic_load(&forkskip_entered));
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(20);
		(void)rcl_domain_flush(d, 0);	/* forgets the thread */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&forkskip_release, 1);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	ASSERT_CHILD_EXITED_OK(st);
	fc_destroy(&c, true);
	dom_free(d, NULL);
}

/*
 * fork() while the parent's flusher thread holds a set of failed objects
 * (a first write failed, the second is under way), then a thread started
 * in the child before any flusher call: glibc gives it a cached stack, the
 * parent's flusher thread's among them, which the child reclaimed at the
 * fork.  The child frees what that thread held (flusher_after_fork_locked())
 * and must not read it from that stack, now the new thread's.
 */
static atomic_int forkstk_calls, forkstk_entered, forkstk_release;

static int forkstk_write(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	if (atomic_fetch_add(&forkstk_calls, 1) == 0)
		return -EIO;		/* the set gets its table */
	atomic_store(&forkstk_entered, 1);
	while (!atomic_load(&forkstk_release))
		usleep(1000);
	return 0;
}

static __attribute__((noinline)) void *forkstk_scribble(void *arg)
{
	volatile unsigned char big[256 * 1024];
	size_t i;

	(void)arg;
	for (i = 0; i < sizeof(big); i++)
		big[i] = 0x41;
	return (void *)(uintptr_t)big[0];
}

static void test_flusher_fork_child_new_thread_then_flush(void **state)
{
	static const struct rcl_writeback_ops ops = { .write = forkstk_write };
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct fcache c;
	int st = 0;
	pid_t pid;

	(void)state;
	if (!THREADS_AFTER_FORK) {
		dom_free(d, NULL);
		skip();
	}
	atomic_store(&forkstk_calls, 0);
	atomic_store(&forkstk_entered, 0);
	atomic_store(&forkstk_release, 0);
	fc_init(&c, d, 2, 1, false, true);
	fc_fill(&c, 2);
	set_dirty(&c, 0);
	set_dirty(&c, 1);
	assert_int_equal(rcl_domain_flusher_start(d, &ops, NULL, 1), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(atomic_load(&forkstk_entered));	/* object 1's batch */
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;

		alarm(20);
		if (pthread_create(&t, NULL, forkstk_scribble, NULL) != 0 ||
		    pthread_join(t, NULL) != 0)
			_exit(2);
		(void)rcl_domain_flush(d, 0);	/* forgets the thread */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&forkstk_release, 1);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	ASSERT_CHILD_EXITED_OK(st);
	fc_destroy(&c, true);
	dom_free(d, NULL);
}

static void test_flusher_thread_concurrent_stop(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d;
	struct dbl_stop s[2];
	pthread_t t[2];
	struct fcache c;
	struct wctx w;
	struct mock m;
	unsigned i;

	(void)state;
	mock_init(&m);
	d = dom_make(HUGE_BUDGET, fc, &m, RCL_FLUSH_ALL, 0);
	dbl_d = d;
	atomic_store(&dbl_active, 0);
	atomic_store(&dbl_start_ret, 1);
	fc_init(&c, d, 4, 1, false, true);
	fc_fill(&c, 4);
	set_dirty(&c, 0);
	set_dirty(&c, 1);
	wctx_init(&w, W_FLUSHER);
	atomic_store(&w.hold, 1);
	assert_int_equal(rcl_domain_flusher_start(d, &dbl_ops, &w, 1), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	WAIT_FOR(atomic_load(&dbl_active) == 1);	/* held in the write */
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 0);

	for (i = 0; i < 2; i++) {
		s[i].d = d;
		atomic_store(&s[i].ret, 1);
		atomic_store(&s[i].done, 0);
		assert_int_equal(pthread_create(&t[i], NULL, dbl_stop_main,
						&s[i]), 0);
	}
	/* One stopper joins, the other waits for it on the clock. */
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	assert_int_equal(atomic_load(&s[0].done) + atomic_load(&s[1].done), 0);
	/* Stopping: the application's flusher gets the request. */
	assert_int_equal(mock_n(&m), 0);
	assert_int_equal(rcl_domain_flush(d, 7), 0);
	assert_int_equal(mock_n(&m), 1);
	REQ_EQ(&m, 0, 7, RCL_FLUSH_SYNC, 2);

	atomic_store(&w.hold, 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(atomic_load(&s[i].ret), 0);
	}
	assert_int_equal(atomic_load(&dbl_active), 0);
	assert_int_equal(atomic_load(&dbl_start_ret), -EBUSY);
	/* One batch (of 1) was written; the rest of the request left. */
	assert_int_equal(atomic_load(&w.writes), 1);
	DOM_STATS(d, 1, 1, 0, 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);	/* not running */
	/* The request made while stopping is still in flight. */
	assert_int_equal(mock_ack(&m, 0), 0);
	assert_int_equal(mock_n(&m), 1);

	fc_destroy(&c, true);
	dom_free(d, fc);
	mock_fini(&m);
}

static void test_flusher_thread_errors(void **state)
{
	struct rcl_fake_clock *fc = fclock_new();
	struct rcl_domain *d = dom_make(HUGE_BUDGET, fc, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_writeback_ops nowrite = { NULL, mock_sync };
	uint64_t written = 7;
	struct fcache c;
	struct wctx w;

	(void)state;
	wctx_init(&w, W_ANY);
	/* No flusher at all: -ENODEV; requests from reclaim and from the
	 * dirty limits are dropped quietly. */
	assert_int_equal(rcl_domain_flush(d, 0), -ENODEV);
	assert_int_equal(rcl_domain_flush(NULL, 0), -EINVAL);
	assert_int_equal(vmstat(d).flush_requests, 0);

	assert_int_equal(rcl_domain_flusher_start(NULL, &wops, &w, 0), -EINVAL);
	assert_int_equal(rcl_domain_flusher_start(d, NULL, &w, 0), -EINVAL);
	assert_int_equal(rcl_domain_flusher_start(d, &nowrite, &w, 0), -EINVAL);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	assert_int_equal(rcl_domain_flusher_stop(NULL), -EINVAL);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);

	assert_int_equal(rcl_domain_writeback_all(NULL, &wops, &w, &written),
			 -EINVAL);
	assert_int_equal(written, 0);
	written = 7;
	assert_int_equal(rcl_domain_writeback_all(d, NULL, &w, &written),
			 -EINVAL);
	assert_int_equal(written, 0);
	assert_int_equal(rcl_domain_writeback_all(d, &nowrite, &w, NULL),
			 -EINVAL);

	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 0), 0);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 0), -EBUSY);
	assert_int_equal(rcl_domain_flush(d, 0), 0);	/* nothing dirty */
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	assert_int_equal(rcl_domain_flush(d, 0), -ENODEV);
	/* Restartable. */
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 0), 0);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);

	/* rcl_domain_free() stops a running flusher thread. */
	fc_init(&c, d, 1, 1, false, true);
	fc_fill(&c, 1);
	set_dirty(&c, 0);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, &w, 0), 0);
	WAIT_FOR(rcl_fake_clock_waiters(fc) == 1);
	fc_destroy(&c, true);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	rcl_fake_clock_free(fc);
}

/* ------------------------------------------------------------------------- */
/* 10. The RCL_DOMAIN_RECLAIM_WRITES baseline                                 */
/* ------------------------------------------------------------------------- */

/*
 * Reclaim hands dirty objects to the evict callback with RCL_EVICT_DIRTY; it
 * writes them and answers FREED.  8192 objects, the two oldest dirty, the
 * third under writeback.  Goal 2: priority 12 takes the two dirty ones and
 * frees them.  Objects under writeback still never reach the callback.
 */
static void test_flusher_baseline_reclaim_writes(void **state)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE };
	struct rcl_reclaim_result res;
	struct rcl_domain *d;
	struct rcl_vmstat v;
	struct fcache c, p;
	struct mock m;

	(void)state;
	mock_init(&m);
	d = dom_make(HUGE_BUDGET, NULL, &m, RCL_FLUSH_ALL,
		     RCL_DOMAIN_RECLAIM_WRITES);
	big_cache(&c, d, 8192);
	set_dirty(&c, 0);
	set_dirty(&c, 1);
	make_wb(&c, 2);
	DOM_STATS(d, 2, 2, 1, 1);

	reclaim(d, 2, 0, &res);
	assert_int_equal(res.priority, 12);
	assert_int_equal(res.nr_reclaimed, 2);
	assert_int_equal(atomic_load(&c.evict_dirty_flag), 2);
	assert_int_equal(atomic_load(&O(&c, 0)->writes), 1);
	assert_int_equal(atomic_load(&O(&c, 1)->writes), 1);
	assert_false(atomic_load(&O(&c, 0)->cached));
	assert_false(atomic_load(&O(&c, 1)->cached));
	v = vmstat(d);
	assert_int_equal(v.writes_from_reclaim, 2);
	assert_int_equal(v.nr_unqueued_dirty, 2);
	assert_int_equal(v.flush_requests, 0);	/* no trigger in the baseline */
	assert_int_equal(mock_n(&m), 0);
	DOM_STATS(d, 0, 0, 1, 1);
	LV_STATS(&c.lv, 0, 0, 1, 1);
	assert_int_equal(rcl_domain_usage(d), fc_cached_weight(&c));

	/* The writeback object: activated, not handed over; priority 11
	 * frees 8189 >> 11 = 3 clean ones. */
	reclaim(d, 1, 0, &res);
	assert_int_equal(res.nr_reclaimed, 3);
	assert_true(atomic_load(&O(&c, 2)->cached));
	assert_int_equal(dwr_of(O(&c, 2)), RCL_LRU_F_WRITEBACK | RCL_LRU_F_RECLAIM);
	v = vmstat(d);
	assert_int_equal(v.writes_from_reclaim, 2);
	assert_int_equal(v.nr_writeback_scanned, 1);
	assert_int_equal(atomic_load(&c.evict_dirty_flag), 2);
	assert_int_equal(atomic_load(&c.dirty_seen), 0);
	assert_int_equal(rcl_domain_usage(d), fc_cached_weight(&c));
	fc_check(&c);
	fc_destroy(&c, true);
	dom_free(d, NULL);
	mock_fini(&m);

	/* The shrink flag: a dirty object the callback keeps (BUSY) stays
	 * dirty and counted; one it frees (after writing) is no longer
	 * counted. */
	fc_init(&p, NULL, 2, 5, false, false);
	fc_fill(&p, 2);
	set_dirty(&p, 0);
	set_dirty(&p, 1);
	atomic_store(&p.mode, EV_BUSY);
	sc.nr_to_scan = 1;
	sc.flags = RCL_LRU_SHRINK_WRITE_DIRTY;
	assert_int_equal(rcl_lruvec_shrink_inactive(&p.lv, &sc), 0);
	assert_int_equal(sc.nr_rotated, 1);
	assert_int_equal(sc.nr_unqueued_dirty, 1);
	assert_int_equal(atomic_load(&p.evict_dirty_flag), 1);
	assert_int_equal(dwr_of(O(&p, 0)), RCL_LRU_F_DIRTY);
	LV_STATS(&p.lv, 2, 10, 0, 0);
	atomic_store(&p.mode, EV_FREE);
	memset(&sc, 0, sizeof(sc));
	sc.type = RCL_LRU_FILE;
	sc.nr_to_scan = 2;
	sc.flags = RCL_LRU_SHRINK_WRITE_DIRTY;
	assert_int_equal(rcl_lruvec_shrink_inactive(&p.lv, &sc), 0);
	assert_int_equal(sc.nr_freed, 2);
	assert_int_equal(atomic_load(&p.evict_dirty_flag), 3);
	LV_STATS(&p.lv, 0, 0, 0, 0);
	fc_destroy(&p, false);
}

/* ------------------------------------------------------------------------- */
/* An object dirtied while reclaim holds it isolated                          */
/* ------------------------------------------------------------------------- */

/*
 * set_dirty() accepts isolated nodes.  A reclaimer isolates a clean object
 * and calls the evict callback; the callback (the pin protocol of lruvec.h)
 * frees the object if nobody holds a pin.  Meanwhile a writer pins the
 * object, modifies it, marks it dirty and unpins it - all after reclaim
 * took the object, and before the callback looks at the pin.
 *
 * The callback waits, before its pin check, until the writer is done - or,
 * should set_dirty() wait for the callback (one way to close the race),
 * until it has given the writer ample time: then it finds the pin and keeps
 * the object.  Either way: flusher.h says dirty objects never reach the
 * evict callback (it "never has to write"), and an object that is freed
 * must not stay counted as dirty.
 */
struct di_obj {
	struct rcl_lru_node lru;
	atomic_int pins;
	atomic_bool freed;
};

static struct di_obj di_o;
static struct rcl_lruvec di_lv;
static atomic_int di_in_evict, di_writer_started, di_writer_done, di_seen_dirty;

static enum rcl_evict_status di_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct di_obj *o = rcl_container_of(node, struct di_obj, lru);
	unsigned long i;

	(void)ctl;
	atomic_store(&di_in_evict, 1);
	while (!atomic_load(&di_writer_started))
		sched_yield();
	for (i = 0; i < 50000 && !atomic_load(&di_writer_done); i++)
		sched_yield();
	/* the pin protocol: keep it if anybody holds it */
	if (atomic_load(&o->pins))
		return RCL_EVICT_BUSY;
	if (rcl_lru_node_flags(node) & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK))
		atomic_store(&di_seen_dirty, 1);
	atomic_store(&o->freed, true);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops di_ops = { .evict = di_evict };

static void *di_reclaimer(void *arg)
{
	struct rcl_lru_shrink_control *sc = arg;

	T_EQ(rcl_lruvec_shrink_inactive(&di_lv, sc), 0);
	return NULL;
}

static void *di_writer(void *arg)
{
	int err;

	(void)arg;
	atomic_fetch_add(&di_o.pins, 1);
	atomic_store(&di_writer_started, 1);
	err = rcl_lruvec_set_dirty(&di_lv, &di_o.lru);
	T_CHECK(err == 0);
	atomic_fetch_sub(&di_o.pins, 1);
	atomic_store(&di_writer_done, 1);
	return NULL;
}

static void test_flusher_dirtied_while_isolated(void **state)
{
	struct rcl_domain *d = dom_make(HUGE_BUDGET, NULL, NULL, RCL_FLUSH_ALL, 0);
	struct rcl_lruvec_config cfg = { .ops = &di_ops };
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 1 };
	pthread_t r, w;

	(void)state;
	memset(&di_o, 0, sizeof(di_o));
	atomic_store(&di_in_evict, 0);
	atomic_store(&di_writer_started, 0);
	atomic_store(&di_writer_done, 0);
	atomic_store(&di_seen_dirty, 0);
	assert_int_equal(rcl_lruvec_init(&di_lv, &cfg), 0);
	assert_int_equal(rcl_domain_attach(d, &di_lv, 0), 0);
	assert_int_equal(rcl_lruvec_add(&di_lv, &di_o.lru, RCL_LRU_FILE, 10,
					RCL_LRU_ADD_NOBATCH), 0);

	assert_int_equal(pthread_create(&r, NULL, di_reclaimer, &sc), 0);
	WAIT_FOR(atomic_load(&di_in_evict));
	assert_true(rcl_lru_node_flags(&di_o.lru) & RCL_LRU_F_ISOLATED);
	assert_int_equal(pthread_create(&w, NULL, di_writer, NULL), 0);
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_int_equal(pthread_join(w, NULL), 0);

	if (atomic_load(&di_o.freed)) {
		/* Gone: nothing of it may remain counted. */
		assert_int_equal(sc.nr_freed, 1);
		LV_STATS(&di_lv, 0, 0, 0, 0);
		DOM_STATS(d, 0, 0, 0, 0);
	} else {
		/* Kept: dirty, and counted. */
		assert_int_equal(rcl_lru_node_flags(&di_o.lru) & F_DWR,
				 RCL_LRU_F_DIRTY);
		LV_STATS(&di_lv, 1, 10, 0, 0);
		DOM_STATS(d, 1, 10, 0, 0);
		assert_int_equal(rcl_lruvec_del(&di_lv, &di_o.lru), 0);
	}
	/* flusher.h: dirty objects never reach the evict callback. */
	assert_int_equal(atomic_load(&di_seen_dirty), 0);
	assert_int_equal(rcl_domain_detach(d, &di_lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&di_lv), 0);
	dom_free(d, NULL);
}

/* ------------------------------------------------------------------------- */
/* The end of a writeback is the last touch of the node                       */
/* ------------------------------------------------------------------------- */

/*
 * An object under writeback is pinned only until rcl_lruvec_writeback_end()
 * clears its writeback bit: from then on a reclaimer that holds it isolated
 * may find it clean and evict it, and the application frees it.  So the call
 * must not touch the node once the bit is cleared.
 *
 * A (clean) and B (under writeback) are isolated by a reclaimer thread in
 * one batch, A first.  A's evict callback waits until B's writeback bit is
 * cleared - by the test thread's writeback_end() - and answers BUSY; the
 * reclaimer then finds B clean and its evict callback frees B (here: it
 * poisons the node's memory, as a freeing allocator would).  Nothing orders
 * what writeback_end() does after clearing the bit before that poisoning:
 * ThreadSanitizer reports any access writeback_end() makes to the node after
 * the clearing as a data race, whichever thread gets there first.  In plain
 * builds the test checks what can be seen: the accounting used the real
 * weight.
 */
struct we_obj {
	struct rcl_lru_node lru;
	int id;
};

#define WE_ROUNDS 8

static struct we_obj we_a, we_b;
static atomic_int we_in_a, we_ending, we_freed_b;

static enum rcl_evict_status we_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct we_obj *o = rcl_container_of(node, struct we_obj, lru);
	unsigned long i;

	if (o->id == 0) {
		atomic_store(&we_in_a, 1);
		while (!atomic_load(&we_ending))
			sched_yield();
		/*
		 * Until the lruvec no longer counts B under writeback, that
		 * is until writeback_end() has cleared B's bit and read its
		 * weight.  A relaxed read of a counter, so nothing is ordered
		 * by it, and no access to B's memory (the race detector keeps
		 * only a few accesses per word).
		 */
		for (i = 0; i < 100000; i++) {
			struct rcl_dirty_stats s;

			T_EQ(rcl_lruvec_dirty_stats(ctl->lruvec, &s), 0);
			if (!s.nr_writeback)
				break;
			usleep(1000);
		}
		T_CHECK(i < 100000);
		return RCL_EVICT_BUSY;
	}
	T_EQ(o->id, 1);
	/* freed: its memory poisoned (the weight word first, as a plain
	 * store the race detector compares with writeback_end()'s read) */
	node->__weight = 0x6b6b6b6bu;
	memset(node, 0x6b, sizeof(*node));
	atomic_store(&we_freed_b, 1);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops we_ops = { .evict = we_evict };

struct we_ctx {
	struct rcl_lruvec *lv;
	struct rcl_lru_shrink_control sc;
};

static void *we_reclaimer(void *arg)
{
	struct we_ctx *x = arg;

	T_EQ(rcl_lruvec_shrink_inactive(x->lv, &x->sc), 0);
	return NULL;
}

static void test_flusher_writeback_end_vs_eviction(void **state)
{
	struct rcl_lruvec_config cfg = { .ops = &we_ops };
	struct rcl_lruvec lv;
	unsigned round;

	(void)state;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	/* A few rounds: the race detector keeps only a few accesses per
	 * word, and may have dropped the one that races in one round. */
	for (round = 0; round < WE_ROUNDS; round++) {
		struct we_ctx x = { 0 };
		pthread_t t;

		atomic_store(&we_in_a, 0);
		atomic_store(&we_ending, 0);
		atomic_store(&we_freed_b, 0);
		memset(&we_a, 0, sizeof(we_a));
		memset(&we_b, 0, sizeof(we_b));
		we_a.id = 0;
		we_b.id = 1;
		/* inactive, from the tail: A, B (under writeback) */
		assert_int_equal(rcl_lruvec_add(&lv, &we_a.lru, RCL_LRU_FILE, 3,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_add(&lv, &we_b.lru, RCL_LRU_FILE, 7,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_set_dirty(&lv, &we_b.lru), 0);
		assert_int_equal(rcl_lruvec_writeback_start(&lv, &we_b.lru), 0);
		LV_STATS(&lv, 0, 0, 1, 7);

		x.lv = &lv;
		x.sc.type = RCL_LRU_FILE;
		x.sc.nr_to_scan = 2;
		assert_int_equal(pthread_create(&t, NULL, we_reclaimer, &x), 0);
		WAIT_FOR(atomic_load(&we_in_a));
		assert_true(rcl_lru_node_flags(&we_b.lru) & RCL_LRU_F_ISOLATED);
		atomic_store(&we_ending, 1);
		assert_int_equal(rcl_lruvec_writeback_end(&lv, &we_b.lru, 0), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(atomic_load(&we_freed_b), 1);
		assert_int_equal(x.sc.nr_freed, 1);
		LV_STATS(&lv, 0, 0, 0, 0);
		assert_int_equal(rcl_lruvec_del(&lv, &we_a.lru), 0);
	}
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flusher_state_errors),
		cmocka_unit_test(test_flusher_state_transitions),
		cmocka_unit_test(test_flusher_state_pending_and_isolated),
		cmocka_unit_test(test_flusher_state_attach_detach),
		cmocka_unit_test(test_flusher_writeback_pins),
		cmocka_unit_test(test_flusher_writeback_pins_flusher_thread),
		cmocka_unit_test(test_flusher_reclaim_skips_dirty_and_writeback),
		cmocka_unit_test(test_flusher_immediate_reclaim_rotation),
		cmocka_unit_test(test_flusher_trigger_all),
		cmocka_unit_test(test_flusher_trigger_proportional),
		cmocka_unit_test(test_flusher_trigger_mixed_batch),
		cmocka_unit_test(test_flusher_coalescing),
		cmocka_unit_test(test_flusher_coalescing_concurrent),
		cmocka_unit_test(test_flusher_dirty_thresholds_default),
		cmocka_unit_test(test_flusher_dirty_rekick),
		cmocka_unit_test(test_flusher_dirty_thresholds_configured),
		cmocka_unit_test(test_flusher_dirty_thresholds_clamped),
		cmocka_unit_test(test_flusher_dirty_thresholds_zero),
		cmocka_unit_test(test_flusher_throttle_writeback),
		cmocka_unit_test(test_flusher_throttle_writeback_failed_writes),
		cmocka_unit_test(test_flusher_throttle_writeback_drained),
		cmocka_unit_test(test_flusher_throttle_writeback_detached),
		cmocka_unit_test(test_flusher_throttle_writeback_two),
		cmocka_unit_test(test_flusher_thread_serves_requests),
		cmocka_unit_test(test_flusher_thread_write_error_does_not_stop_request),
		cmocka_unit_test(test_flusher_thread_serves_reclaim),
		cmocka_unit_test(test_flusher_thread_background),
		cmocka_unit_test(test_flusher_thread_takes_the_pending_request),
		cmocka_unit_test(test_flusher_background_queues_behind_a_bounded_request),
		cmocka_unit_test(test_flusher_thread_pending_dirty),
		cmocka_unit_test(test_flusher_writeback_all),
		cmocka_unit_test(test_flusher_writeback_all_error),
		cmocka_unit_test(test_flusher_writeback_all_vs_flusher),
		cmocka_unit_test(test_flusher_thread_own_callbacks),
		cmocka_unit_test(test_flusher_thread_concurrent_stop),
		cmocka_unit_test(test_flusher_fork_child_during_a_batch),
		cmocka_unit_test(test_flusher_fork_child_with_flock_held_elsewhere),
		cmocka_unit_test(test_flusher_fork_from_the_flusher_threads_write),
		cmocka_unit_test(test_flusher_fork_child_requests_reach_the_ops),
		cmocka_unit_test(test_flusher_fork_child_background_reaches_the_ops),
		cmocka_unit_test(test_flusher_fork_child_while_skip_set_grows),
		cmocka_unit_test(test_flusher_fork_child_new_thread_then_flush),
		cmocka_unit_test(test_flusher_thread_errors),
		cmocka_unit_test(test_flusher_baseline_reclaim_writes),
		cmocka_unit_test(test_flusher_dirtied_while_isolated),
		cmocka_unit_test(test_flusher_writeback_end_vs_eviction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
