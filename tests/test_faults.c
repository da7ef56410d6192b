/* SPDX-License-Identifier: MIT */
/*
 * Fault injection and misbehaving callbacks.
 *
 * Part 1, allocation failure.  Four scripted scenarios (an lruvec with its
 * per-thread batch, a shrinker registry with a shadow limit, a whole domain
 * with its threads, flusher and write-back, an object cache whose tables
 * grow) run again and again; run N makes
 * the Nth allocation fail, for N = 1, 2, ... until a run completes without
 * reaching an Nth allocation.  Two sources of failure are swept:
 *
 * - the public allocator hooks (&struct rcl_allocator of the domain and of
 *   the registry), which see what an application can see;
 * - the library's internal seam (lib/fault.c), which every allocation and
 *   thread creation of the library passes, including those no public hook
 *   reaches (a thread's add batch, a fake clock, the reclaimer and flusher
 *   threads).
 *
 * and each in two variants: only the Nth call fails ("once"), or every call
 * from the Nth on ("from N on", which also exercises the error paths of the
 * error paths).  Every call must succeed or return its documented error,
 * and after every step the scenario checks its invariants: list counts
 * equal the objects the test has listed, the domain's usage equals the sum
 * of the charges, dirty counts equal the dirty objects, every allocation is
 * given back.  Each scenario runs in a fresh thread, so that the thread's
 * add batch is created (and can fail) in every run; the scenario records
 * its first failed check and the main thread asserts on it.
 *
 * The pressure monitor (pressure.h) is failed piece by piece: its one
 * allocation (seam and allocator hook: -ENOMEM, nothing left), its thread
 * (-EAGAIN, the monitor unchanged), and each of the three descriptors it
 * opens at creation (RLIMIT_NOFILE: -EMFILE, the others closed).
 *
 * Part 2, misbehaving callbacks: shrinker answers above nr_to_scan or the
 * count, counts near ULONG_MAX or flapping to RCL_SHRINK_EMPTY, callbacks
 * that sleep while other threads register, free, attach, detach and
 * reclaim, and evict, shrinker, reclaimer and flusher callbacks that call
 * back into the library - what is allowed works, what is forbidden returns
 * -EDEADLK.
 *
 * The figures (fault points per scenario, failures injected) are printed
 * with print_message().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define UNIT_TESTING 1
#include <cmocka.h>
/*
 * The scenarios allocate from their own threads; cmocka's allocator is
 * single-threaded.  Leaks are counted by the test allocator below instead
 * (and by Valgrind and ASan).
 */
#undef malloc
#undef calloc
#undef free
#undef realloc

#include <reclaim/reclaim.h>

#include "../lib/internal.h"

/* ------------------------------------------------------------------------- */
/* Injection: the public allocator and the internal seam                      */
/* ------------------------------------------------------------------------- */

enum inj_source {
	INJ_ALLOCATOR = 0,	/* the public struct rcl_allocator fails */
	INJ_SEAM = 1,		/* the internal seam fails (any allocation) */
};

static const char *const source_name[] = { "allocator hook", "internal seam" };

struct injector {
	enum inj_source source;
	bool persist;		/* fail every call from fail_at on */
	unsigned long fail_at;	/* 1-based; 0: never */
	atomic_ulong seam_calls;
	atomic_ulong alloc_calls;
	atomic_ulong injected;
	atomic_long live;	/* blocks of the test allocator not freed */
	atomic_ulong thread_faults; /* thread creations refused */
};

static struct injector inj;

static bool inj_fire(unsigned long n)
{
	if (!inj.fail_at)
		return false;
	if (n == inj.fail_at || (inj.persist && n > inj.fail_at)) {
		atomic_fetch_add(&inj.injected, 1);
		return true;
	}
	return false;
}

static bool seam_hook(void *ctx, enum rcl__fault_site site, size_t size)
{
	unsigned long n = atomic_fetch_add(&inj.seam_calls, 1) + 1;

	(void)ctx;
	(void)size;
	if (inj.source != INJ_SEAM || !inj_fire(n))
		return false;
	if (site == RCL__FAULT_THREAD)
		atomic_fetch_add(&inj.thread_faults, 1);
	return true;
}

static void *t_alloc(void *ctx, size_t size)
{
	unsigned long n = atomic_fetch_add(&inj.alloc_calls, 1) + 1;
	void *p;

	(void)ctx;
	if (inj.source == INJ_ALLOCATOR && inj_fire(n))
		return NULL;
	p = malloc(size);
	if (p)
		atomic_fetch_add(&inj.live, 1);
	return p;
}

static void t_free(void *ctx, void *p)
{
	(void)ctx;
	atomic_fetch_sub(&inj.live, 1);
	free(p);
}

static const struct rcl_allocator t_allocator = { t_alloc, t_free, NULL };

static void inj_reset(enum inj_source source, bool persist,
		      unsigned long fail_at)
{
	inj.source = source;
	inj.persist = persist;
	inj.fail_at = fail_at;
	atomic_store(&inj.seam_calls, 0);
	atomic_store(&inj.alloc_calls, 0);
	atomic_store(&inj.injected, 0);
	atomic_store(&inj.thread_faults, 0);
}

static unsigned long inj_now(void)
{
	return atomic_load(&inj.injected);
}

/* ------------------------------------------------------------------------- */
/* Scenario bookkeeping                                                       */
/* ------------------------------------------------------------------------- */

#define NOBJ 160

struct obj {
	struct rcl_lru_node lru;
	unsigned id;
	uint32_t weight;
	bool on;		/* on an lruvec, as far as the test knows */
	bool dirty;		/* dirty, as far as the test knows */
	bool charged;		/* its weight is charged to the domain */
	bool fail_write;	/* the write callback fails for it */
	bool freed;		/* answered FREED: the node is stale */
};

struct sc {
	/* the first failed check */
	bool failed;
	int line;
	char msg[256];

	struct obj objs[NOBJ];
	struct rcl_lruvec lv;
	bool lv_live;
	struct rcl_domain *d;
	uint64_t charged;	/* the test's sum of charges */
	unsigned long evicted;	/* FREED answers */

	/* the application's flusher (domain scenario) */
	struct rcl_flush_request req;
	bool have_req;

	/* errors seen, for the report */
	unsigned long errors;
};

__attribute__((format(printf, 3, 4))) static bool
sc_fail(struct sc *c, int line, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return false;
	c->failed = true;
	c->line = line;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	return false;
}

#define SC_CHECK(c, cond)                                                     \
	((cond) ? true : sc_fail((c), __LINE__, "check failed: %s", #cond))

/*
 * A library call's result: true on success; false on the documented error
 * @allowed when a failure was injected during the call; a failed check for
 * anything else.
 */
static bool expect(struct sc *c, int line, const char *what, int err,
		   int allowed, unsigned long before)
{
	if (!err)
		return true;
	if (err == allowed && inj_now() != before) {
		c->errors++;
		return false;
	}
	return sc_fail(c, line, "%s returned %d (allowed %d, injected %s)",
		       what, err, allowed, inj_now() != before ? "yes" : "no");
}

#define TRY(call, allowed)                                                    \
	(before = inj_now(), err = (call),                                    \
	 expect(c, __LINE__, #call, err, (allowed), before))

static enum rcl_evict_status sc_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	struct sc *c = ctl->priv;
	struct obj *o = rcl_container_of(n, struct obj, lru);

	if (o->dirty)	/* never: dirty objects do not reach the callback */
		sc_fail(c, __LINE__, "dirty object %u evicted", o->id);
	o->on = false;
	o->freed = true;
	if (o->charged) {
		rcl_domain_uncharge(c->d, o->weight);
		c->charged -= o->weight;
		o->charged = false;
	}
	c->evicted++;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops sc_ops = { .evict = sc_evict };

/*
 * The invariants of the lruvec and the domain: after a drain, the lists
 * hold exactly the objects the test has on them (count and weight), none
 * is isolated, each object's state bits agree, the dirty counts match, the
 * evictions match the FREED answers, and usage is the sum of the charges.
 */
static bool check_state(struct sc *c, int line)
{
	uint64_t want_w = 0, have_w = 0, dirty_n = 0, dirty_w = 0;
	size_t want_n = 0, have_n = 0;
	struct rcl_lruvec_type_stats st;
	struct rcl_dirty_stats ds;
	unsigned l, i;

	if (c->failed)
		return false;
	if (c->lv_live) {
		if (rcl_lruvec_drain(&c->lv) != 0)
			return sc_fail(c, line, "drain failed");
		for (i = 0; i < NOBJ; i++) {
			struct obj *o = &c->objs[i];
			unsigned f = rcl_lru_node_flags(&o->lru);

			if (!o->on) {
				if (!o->freed && f & (RCL_LRU_F_LISTED | RCL_LRU_F_PENDING |
					 RCL_LRU_F_ISOLATED))
					return sc_fail(c, line,
						       "object %u not idle (%#x)",
						       i, f);
				continue;
			}
			if (!(f & RCL_LRU_F_LISTED))
				return sc_fail(c, line,
					       "object %u not listed (%#x)", i,
					       f);
			if (!!(f & RCL_LRU_F_DIRTY) != o->dirty)
				return sc_fail(c, line,
					       "object %u dirty bit %#x", i, f);
			want_n++;
			want_w += o->weight;
			if (o->dirty) {
				dirty_n++;
				dirty_w += o->weight;
			}
		}
		for (l = 0; l < RCL_LRU_NR_LISTS; l++) {
			uint64_t w;

			have_n += rcl_lruvec_count(&c->lv, l, &w);
			have_w += w;
		}
		if (have_n != want_n || have_w != want_w)
			return sc_fail(c, line,
				       "lists hold %zu objects (%llu), test "
				       "listed %zu (%llu)",
				       have_n, (unsigned long long)have_w,
				       want_n, (unsigned long long)want_w);
		if (rcl_lruvec_nr_isolated(&c->lv))
			return sc_fail(c, line, "%zu isolated at rest",
				       rcl_lruvec_nr_isolated(&c->lv));
		if (rcl_lruvec_dirty_stats(&c->lv, &ds) ||
		    ds.nr_dirty != dirty_n || ds.weight_dirty != dirty_w ||
		    ds.nr_writeback || ds.weight_writeback)
			return sc_fail(c, line,
				       "dirty stats %llu/%llu, test %llu/%llu",
				       (unsigned long long)ds.nr_dirty,
				       (unsigned long long)ds.weight_dirty,
				       (unsigned long long)dirty_n,
				       (unsigned long long)dirty_w);
		if (rcl_lruvec_stats(&c->lv, RCL_LRU_FILE, &st) ||
		    st.freed != c->evicted)
			return sc_fail(c, line, "stats freed %llu, evicted %lu",
				       (unsigned long long)st.freed, c->evicted);
	}
	if (c->d) {
		if (rcl_domain_usage(c->d) != c->charged)
			return sc_fail(c, line, "usage %llu, charged %llu",
				       (unsigned long long)rcl_domain_usage(c->d),
				       (unsigned long long)c->charged);
		if (c->lv_live &&
		    (rcl_domain_dirty_stats(c->d, &ds) || ds.nr_dirty != dirty_n))
			return sc_fail(c, line, "domain dirty %llu, test %llu",
				       (unsigned long long)ds.nr_dirty,
				       (unsigned long long)dirty_n);
	}
	return true;
}

#define CHECK_STATE(c) check_state((c), __LINE__)

/* Take every object off the lruvec the way an application would. */
static void del_all(struct sc *c)
{
	unsigned i;

	for (i = 0; i < NOBJ; i++) {
		struct obj *o = &c->objs[i];

		if (!o->on)
			continue;
		if (rcl_lruvec_del(&c->lv, &o->lru) != 0) {
			sc_fail(c, __LINE__, "del of object %u failed", i);
			return;
		}
		o->on = false;
		o->dirty = false;
		if (o->charged) {
			rcl_domain_uncharge(c->d, o->weight);
			c->charged -= o->weight;
			o->charged = false;
		}
	}
}

static void init_objs(struct sc *c, uint32_t weight)
{
	unsigned i;

	for (i = 0; i < NOBJ; i++) {
		c->objs[i].id = i;
		c->objs[i].weight = weight;
	}
}

/* ------------------------------------------------------------------------- */
/* Scenario 1: an lruvec and the calling thread's batch                       */
/* ------------------------------------------------------------------------- */

static void scenario_lruvec(struct sc *c)
{
	struct rcl_lruvec_config cfg = { .ops = &sc_ops, .priv = c };
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 40 };
	unsigned long before;
	unsigned i;
	int err;

	init_objs(c, 3);
	if (!TRY(rcl_lruvec_init(&c->lv, &cfg), -ENOMEM))
		return;
	c->lv_live = true;
	/*
	 * Batched adds: the first one creates this thread's batch.  If that
	 * fails, the add works unbatched: listed at once.
	 */
	for (i = 0; i < 100; i++) {
		struct obj *o = &c->objs[i];

		if (!TRY(rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE,
					o->weight, 0), -ENOMEM))
			break;
		o->on = true;
		if (!SC_CHECK(c, rcl_lru_node_flags(&o->lru) &
					 (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED)))
			return;
	}
	if (!CHECK_STATE(c))
		return;
	/* Second touches queue activations through the batch. */
	for (i = 50; i < 100; i++) {
		if (!SC_CHECK(c, rcl_lruvec_mark_accessed(&c->lv,
							  &c->objs[i].lru) == 0) ||
		    !SC_CHECK(c, rcl_lruvec_mark_accessed(&c->lv,
							  &c->objs[i].lru) == 0))
			return;
	}
	if (!CHECK_STATE(c))
		return;
	for (i = 0; i < 3; i++)
		if (!SC_CHECK(c, rcl_lruvec_shrink_inactive(&c->lv, &sc) == 0))
			return;
	if (!SC_CHECK(c, sc.nr_freed == c->evicted) || !CHECK_STATE(c))
		return;
	del_all(c);
	if (!CHECK_STATE(c))
		return;
	if (SC_CHECK(c, rcl_lruvec_destroy(&c->lv) == 0))
		c->lv_live = false;
}

/* ------------------------------------------------------------------------- */
/* Scenario 2: a shrinker registry and a shadow limit                         */
/* ------------------------------------------------------------------------- */

#define NSHRINK 70	/* more than one chunk of 64 slots */

static unsigned long sh_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 1000;
}

static unsigned long sh_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	(void)s;
	return sc->nr_to_scan / 2;
}

static const struct rcl_shrinker_ops sh_ops = { sh_count, sh_scan };

static unsigned long shadow_drop(void *priv, unsigned long nr)
{
	struct rcl_shadow_limit **l = priv;

	rcl_shadow_limit_add(*l, -(int64_t)nr);
	return nr;
}

static const struct rcl_shadow_ops shadow_ops = { shadow_drop };

static void scenario_shrinker(struct sc *c)
{
	struct rcl_shrinker_registry_config rc = { .allocator = &t_allocator };
	struct rcl_shrinker_registry *reg = NULL;
	struct rcl_shrinker *s[NSHRINK] = { 0 };
	struct rcl_shadow_limit *limit = NULL;
	struct rcl_shrink_result res = { 0 };
	unsigned registered = 0, held = 0, i;
	unsigned long before;
	int err;

	if (!TRY(rcl_shrinker_registry_new(&rc, &reg), -ENOMEM))
		return;
	for (i = 0; i < NSHRINK; i++) {
		struct rcl_shrinker_config cfg = { .ops = &sh_ops,
						   .seeks = RCL_DEFAULT_SEEKS };

		if (!TRY(rcl_shrinker_new(reg, &cfg, &s[i]), -ENOMEM)) {
			if (c->failed)
				goto out;
			s[i] = NULL;
			continue;
		}
		held++;
		if (!TRY(rcl_shrinker_register(s[i]), -ENOMEM)) {
			if (c->failed)
				goto out;
			continue;	/* held, not registered */
		}
		registered++;
	}
	if (!SC_CHECK(c, rcl__shrinker_registry_count(reg) == held))
		goto out;
	if (TRY(rcl_shadow_limit_new(reg, 10, &shadow_ops, &limit, &limit),
		-ENOMEM)) {
		rcl_shadow_limit_add(limit, 500);
		registered++;
		held++;
	} else if (c->failed) {
		goto out;
	} else {
		limit = NULL;
	}
	/* A failed shadow limit leaves nothing behind in the registry. */
	if (!SC_CHECK(c, rcl__shrinker_registry_count(reg) == held))
		goto out;
	if (!SC_CHECK(c, rcl_shrinker_registry_shrink(reg, 0, 0, RCL_CTX_CAPABLE,
						      &res) == 0) ||
	    !SC_CHECK(c, res.nr_shrinkers == registered))
		goto out;
	if (limit && !SC_CHECK(c, rcl_shadow_limit_count(limit) < 500))
		goto out;
	/* Refused while shrinkers remain; without any, it frees. */
	err = rcl_shrinker_registry_free(reg);
	if (!err)
		reg = NULL;
	SC_CHECK(c, err == (held ? -EBUSY : 0));
out:
	if (limit && rcl_shadow_limit_free(limit) != 0)
		sc_fail(c, __LINE__, "shadow limit free failed");
	for (i = 0; i < NSHRINK; i++)
		if (s[i] && rcl_shrinker_free(s[i]) != 0)
			sc_fail(c, __LINE__, "shrinker free failed");
	if (reg && rcl_shrinker_registry_free(reg) != 0)
		sc_fail(c, __LINE__, "registry free failed");
}

/* ------------------------------------------------------------------------- */
/* Scenario 3: a domain, its threads, its flusher and write-back              */
/* ------------------------------------------------------------------------- */

static void app_wakeup(void *priv, const struct rcl_flush_request *req)
{
	struct sc *c = priv;

	c->req = *req;
	c->have_req = true;
}

static const struct rcl_flusher_ops app_flusher = { app_wakeup };

static int sc_write(void *priv, struct rcl_lru_node *n)
{
	struct obj *o = rcl_container_of(n, struct obj, lru);

	(void)priv;
	if (o->fail_write)
		return -EIO;
	o->dirty = false;
	return 0;
}

static const struct rcl_writeback_ops sc_wb = { sc_write, NULL };

static unsigned long slab_objects;

static unsigned long slab_count(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return slab_objects ? slab_objects : RCL_SHRINK_EMPTY;
}

static unsigned long slab_scan(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	unsigned long n = RCL_MIN(sc->nr_to_scan, slab_objects);

	(void)s;
	slab_objects -= n;
	sc->nr_scanned = n;
	return n;
}

static const struct rcl_shrinker_ops slab_ops = { slab_count, slab_scan };

static void scenario_domain(struct sc *c)
{
	struct rcl_fake_clock *fc = NULL;
	struct rcl_shadow_limit *limit = NULL;
	struct rcl_shrinker *slab = NULL;
	struct rcl_lruvec_config lcfg = { .ops = &sc_ops, .priv = c };
	struct rcl_vmstat vm0, vm1;
	bool attached = false;
	unsigned long before;
	uint64_t written;
	unsigned i, nr_dirty = 0;
	int err;

	slab_objects = 300;
	init_objs(c, 10);
	if (!TRY(rcl_fake_clock_new(0, &fc), -ENOMEM))
		return;
	{
		struct rcl_domain_config cfg = {
			.budget = 1000,
			.allocator = &t_allocator,
			.clock = rcl_fake_clock_clock(fc),
			.flusher = &app_flusher,
			.flusher_priv = c,
		};

		if (!TRY(rcl_domain_new(&cfg, &c->d), -ENOMEM)) {
			c->d = NULL;
			goto out;
		}
	}
	if (!TRY(rcl_lruvec_init(&c->lv, &lcfg), -ENOMEM))
		goto out;
	c->lv_live = true;
	if (!SC_CHECK(c, rcl_domain_attach(c->d, &c->lv, 0) == 0))
		goto out;
	attached = true;
	if (TRY(rcl_shadow_limit_new(rcl_domain_registry(c->d), 0, &shadow_ops,
				     &limit, &limit), -ENOMEM))
		rcl_shadow_limit_add(limit, 100);
	else if (c->failed)
		goto out;
	else
		limit = NULL;
	{
		struct rcl_shrinker_config scfg = { .ops = &slab_ops,
						    .seeks = RCL_DEFAULT_SEEKS };

		if (TRY(rcl_shrinker_new(rcl_domain_registry(c->d), &scfg,
					 &slab), -ENOMEM)) {
			if (!TRY(rcl_shrinker_register(slab), -ENOMEM) &&
			    c->failed)
				goto out;
		} else if (c->failed) {
			goto out;
		} else {
			slab = NULL;
		}
	}

	/*
	 * Charge and insert 150 objects of 10 into a budget of 1000: direct
	 * reclaim (in this thread) evicts and uncharges as it goes.
	 */
	for (i = 0; i < 150; i++) {
		struct obj *o = &c->objs[i];

		if (!TRY(rcl_domain_charge(c->d, o->weight, RCL_CTX_CAPABLE,
					   NULL), -ENOMEM))
			goto out;
		c->charged += o->weight;
		o->charged = true;
		if (!SC_CHECK(c, rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE,
						o->weight, 0) == 0))
			goto out;
		o->on = true;
	}
	if (!SC_CHECK(c, c->evicted > 0) || !CHECK_STATE(c))
		goto out;

	/*
	 * Dirty 60 of the survivors: past the background threshold (10 %)
	 * the domain asks the application's flusher (no allocation).
	 */
	for (i = 0; i < NOBJ && nr_dirty < 60; i++) {
		struct obj *o = &c->objs[i];

		if (!o->on)
			continue;
		if (!SC_CHECK(c, rcl_lruvec_set_dirty(&c->lv, &o->lru) == 0))
			goto out;
		o->dirty = true;
		o->fail_write = i % 8 != 0;
		nr_dirty++;
	}
	if (!SC_CHECK(c, c->have_req) || !CHECK_STATE(c))
		goto out;

	/* Make room, so that the reclaimer has nothing to do. */
	for (i = 0; i < NOBJ && rcl_domain_usage(c->d) > 700; i++) {
		struct obj *o = &c->objs[i];

		if (!o->on || o->dirty)
			continue;
		if (!SC_CHECK(c, rcl_lruvec_del(&c->lv, &o->lru) == 0))
			goto out;
		o->on = false;
		rcl_domain_uncharge(c->d, o->weight);
		c->charged -= o->weight;
		o->charged = false;
	}
	if (!CHECK_STATE(c))
		goto out;

	/* Threads: a start that fails changes nothing. */
	rcl_domain_vmstat(c->d, &vm0);
	if (TRY(rcl_domain_reclaimer_start(c->d), -EAGAIN)) {
		if (!SC_CHECK(c, rcl_domain_reclaimer_start(c->d) == -EBUSY) ||
		    !SC_CHECK(c, rcl_domain_reclaimer_stop(c->d) == 0))
			goto out;
	} else if (c->failed) {
		goto out;
	}
	rcl_domain_vmstat(c->d, &vm1);
	if (!SC_CHECK(c, vm1.kswapd_wakeups == vm0.kswapd_wakeups))
		goto out;
	if (TRY(rcl_domain_flusher_start(c->d, &sc_wb, c, 16), -EAGAIN)) {
		/* The request owed to the application's flusher is dropped. */
		c->have_req = false;
		if (!SC_CHECK(c, rcl_domain_flusher_stop(c->d) == 0))
			goto out;
	} else if (c->failed) {
		goto out;
	} else {
		/* Still in flight: the application acknowledges it. */
		if (!SC_CHECK(c, rcl_domain_flush_done(c->d, &c->req) == 0))
			goto out;
		c->have_req = false;
	}
	if (!CHECK_STATE(c))
		goto out;

	/*
	 * Write-back with most writes failing: the batch array, and the set
	 * of failed objects, grown twice (64 and 128 slots).
	 */
	before = inj_now();
	err = rcl_domain_writeback_all(c->d, &sc_wb, c, &written);
	if (err != -EIO && !(err == -ENOMEM && inj_now() != before)) {
		sc_fail(c, __LINE__, "writeback_all returned %d", err);
		goto out;
	}
	if (err == -ENOMEM)
		c->errors++;
	if (!CHECK_STATE(c))
		goto out;
	if (!SC_CHECK(c, rcl_domain_reclaim(c->d, 10, RCL_CTX_CAPABLE, NULL) ==
				 0) ||
	    !CHECK_STATE(c))
		goto out;
out:
	if (c->lv_live) {
		del_all(c);
		if (attached && rcl_domain_detach(c->d, &c->lv) != 0)
			sc_fail(c, __LINE__, "detach failed");
		if (rcl_lruvec_destroy(&c->lv) != 0)
			sc_fail(c, __LINE__, "lruvec destroy failed");
		c->lv_live = false;
	}
	if (limit && rcl_shadow_limit_free(limit) != 0)
		sc_fail(c, __LINE__, "shadow limit free failed");
	if (slab && rcl_shrinker_free(slab) != 0)
		sc_fail(c, __LINE__, "shrinker free failed");
	if (c->d) {
		if (rcl_domain_usage(c->d) != 0)
			sc_fail(c, __LINE__, "usage %llu at the end",
				(unsigned long long)rcl_domain_usage(c->d));
		if (rcl_domain_free(c->d) != 0)
			sc_fail(c, __LINE__, "domain free failed");
		c->d = NULL;
	}
	rcl_fake_clock_free(fc);
}

/* ------------------------------------------------------------------------- */
/* The sweep                                                                  */
/* ------------------------------------------------------------------------- */

struct run {
	void (*fn)(struct sc *c);
	struct sc *c;
};

static void *run_thread(void *arg)
{
	struct run *r = arg;

	r->fn(r->c);
	return NULL;
}

/* Totals for the report. */
static unsigned long total_points, total_injected, total_runs;

/*
 * Run @fn with the Nth allocation failing, N = 1, 2, ... until a run does
 * not reach the Nth.  Returns the fault points (runs that injected).
 */
static unsigned long sweep(const char *name, void (*fn)(struct sc *c),
			   enum inj_source source, bool persist)
{
	unsigned long n, points = 0, injected = 0, errors = 0;
	unsigned long clean_calls = 0;
	struct sc *c = malloc(sizeof(*c));

	assert_non_null(c);
	for (n = 1; n < 100000; n++) {
		struct run r = { fn, c };
		pthread_t t;

		memset(c, 0, sizeof(*c));
		inj_reset(source, persist, n);
		atomic_store(&inj.live, 0);
		rcl__fault_set(seam_hook, NULL);
		assert_int_equal(pthread_create(&t, NULL, run_thread, &r), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		rcl__fault_set(NULL, NULL);
		total_runs++;
		if (c->failed)
			fail_msg("%s, %s, %s, N = %lu: line %d: %s", name,
				 source_name[source], persist ? "from N on" : "once",
				 n, c->line, c->msg);
		if (atomic_load(&inj.live) != 0)
			fail_msg("%s, %s, N = %lu: %ld blocks leaked", name,
				 source_name[source], n, atomic_load(&inj.live));
		if (!atomic_load(&inj.injected)) {
			clean_calls = source == INJ_SEAM ? atomic_load(&inj.seam_calls)
							 : atomic_load(&inj.alloc_calls);
			break;
		}
		points++;
		injected += atomic_load(&inj.injected);
		errors += c->errors;
	}
	assert_true(n < 100000);
	free(c);
	total_points += points;
	total_injected += injected;
	print_message("%-8s %-14s %-9s: %3lu fault points, %4lu failures "
		      "injected, %3lu calls failed with their error; a clean "
		      "run makes %lu calls\n",
		      name, source_name[source], persist ? "from N on" : "once",
		      points, injected, errors, clean_calls);
	return points;
}

static void sweep_all(const char *name, void (*fn)(struct sc *c),
		      bool with_allocator)
{
	unsigned long p;

	p = sweep(name, fn, INJ_SEAM, false);
	assert_true(p > 0);
	sweep(name, fn, INJ_SEAM, true);
	if (with_allocator) {
		p = sweep(name, fn, INJ_ALLOCATOR, false);
		assert_true(p > 0);
		sweep(name, fn, INJ_ALLOCATOR, true);
	}
}

/*
 * The object cache: create (cache, shards, tables, lruvecs, shadow limit),
 * then inserts that grow every shard's table several times, evictions that
 * store shadows, refault inserts, del, destroy.  Creation fails cleanly
 * (nothing attached, nothing leaked); a failed table growth fails no insert
 * (the old table stays); every object meets its destructor once.
 */
#define OC_NOBJ 48

struct ocobj {
	struct rcl_objcache_node node;
	uint32_t id;
	int destroyed;
};

static void oc_destructor(struct rcl_objcache_node *n, void *priv)
{
	struct ocobj *o = rcl_container_of(n, struct ocobj, node);

	(void)priv;
	o->destroyed++;
}

static const struct rcl_objcache_ops oc_ops = { .destructor = oc_destructor };

static void scenario_objcache(struct sc *c)
{
	struct rcl_domain_config dc = { .budget = 1 << 20,
					.allocator = &t_allocator };
	struct rcl_objcache_config cc = { .ops = &oc_ops, .nr_shards = 2,
					  .nr_buckets = 1, .shadow_quota = 2,
					  .allocator = &t_allocator,
					  .flags = RCL_OBJCACHE_DESTROY_IN_RECLAIM };
	static struct ocobj objs[OC_NOBJ];
	struct rcl_objcache *oc = NULL;
	struct rcl_objcache_stats st;
	struct rcl_reclaim_result res;
	unsigned long before;
	unsigned i, destroyed = 0;
	int err;

	memset(objs, 0, sizeof(objs));
	if (!TRY(rcl_domain_new(&dc, &c->d), -ENOMEM)) {
		c->d = NULL;
		return;
	}
	if (!TRY(rcl_objcache_new(c->d, &cc, &oc), -ENOMEM)) {
		/* Nothing left attached or registered: the domain frees. */
		SC_CHECK(c, oc == NULL);
		goto out;
	}
	for (i = 0; i < OC_NOBJ; i++) {
		objs[i].id = i;
		if (!TRY(rcl_objcache_insert(oc, &objs[i].node, &objs[i].id,
					     sizeof(objs[i].id), 10,
					     RCL_CTX_CAPABLE, NULL, NULL), 0))
			goto out;
		c->charged += 10;
		if (!SC_CHECK(c, rcl_objcache_put(oc, &objs[i].node) == 0))
			goto out;
	}
	if (!SC_CHECK(c, rcl_objcache_stats(oc, &st) == 0) ||
	    !SC_CHECK(c, st.objects == OC_NOBJ && st.weight == c->charged) ||
	    !SC_CHECK(c, rcl_domain_usage(c->d) == c->charged))
		goto out;
	for (i = 0; i < OC_NOBJ; i++) {
		struct rcl_objcache_node *n =
			rcl_objcache_get(oc, &objs[i].id, sizeof(objs[i].id), NULL);

		if (!SC_CHECK(c, n == &objs[i].node) ||
		    !SC_CHECK(c, rcl_objcache_put(oc, n) == 0))
			goto out;
	}
	/* Evict everything (shadows kept), then refault half of it. */
	rcl_lru_drain_local();
	for (i = 0; i < rcl_objcache_nr_shards(oc); i++)
		rcl_lruvec_drain(rcl_objcache_lruvec(oc, i));
	if (!SC_CHECK(c, rcl_domain_reclaim(c->d, 1024, RCL_CTX_CAPABLE,
					    &res) == 0))
		goto out;
	for (i = 0; i < OC_NOBJ; i++)
		destroyed += objs[i].destroyed;
	if (!SC_CHECK(c, destroyed == res.nr_reclaimed))
		goto out;
	c->charged -= 10 * destroyed;
	for (i = 0; i < OC_NOBJ; i += 2) {
		struct rcl_objcache_miss miss;

		if (!objs[i].destroyed)
			continue;
		if (!SC_CHECK(c, rcl_objcache_get(oc, &objs[i].id,
						  sizeof(objs[i].id), &miss) == NULL))
			goto out;
		memset(&objs[i].node, 0, sizeof(objs[i].node));
		objs[i].destroyed = 0;
		if (!TRY(rcl_objcache_insert(oc, &objs[i].node, &objs[i].id,
					     sizeof(objs[i].id), 10,
					     RCL_CTX_CAPABLE, &miss, NULL), 0))
			goto out;
		c->charged += 10;
		rcl_objcache_put(oc, &objs[i].node);
	}
	if (!SC_CHECK(c, rcl_domain_usage(c->d) == c->charged))
		goto out;
	err = rcl_objcache_del(oc, &objs[0].id, sizeof(objs[0].id));
	if (!SC_CHECK(c, err == 0 || err == -ENOENT))
		goto out;
out:
	if (oc && !SC_CHECK(c, rcl_objcache_destroy(oc) == 0))
		return;
	for (i = 0; oc && i < OC_NOBJ; i++)
		if (!SC_CHECK(c, objs[i].destroyed <= 1))
			return;
	if (!SC_CHECK(c, rcl_domain_usage(c->d) == 0))
		return;
	SC_CHECK(c, rcl_domain_free(c->d) == 0);
	c->d = NULL;
}

static void test_faults_objcache_every_allocation(void **state)
{
	(void)state;
	sweep_all("objcache", scenario_objcache, true);
}

static void test_faults_lruvec_every_allocation(void **state)
{
	(void)state;
	sweep_all("lruvec", scenario_lruvec, false);
}

static void test_faults_shrinker_every_allocation(void **state)
{
	(void)state;
	sweep_all("shrinker", scenario_shrinker, true);
}

static void test_faults_domain_every_allocation(void **state)
{
	(void)state;
	sweep_all("domain", scenario_domain, true);
}

/* ------------------------------------------------------------------------- */
/* Failed calls change nothing: the fixes                                     */
/* ------------------------------------------------------------------------- */

/* Refuse the next thread creation (only). */
static void fail_next_thread(void)
{
	inj_reset(INJ_SEAM, false, 1);
	rcl__fault_set(seam_hook, NULL);
}

static void no_faults(void)
{
	rcl__fault_set(NULL, NULL);
	inj_reset(INJ_SEAM, false, 0);
}

static enum rcl_evict_status keep_evict(struct rcl_lru_node *n,
					struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops keep_ops = { .evict = keep_evict };

/*
 * A reclaimer that cannot start leaves no wakeup behind: before the fix the
 * failed start posted (and counted) a wakeup that no thread would take, and
 * the next successful start counted a second one.
 */
static void test_faults_reclaimer_start_failure_changes_nothing(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1000 };
	struct rcl_domain *d;
	struct rcl_vmstat vm;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	/* Below low: a start wakes the reclaimer at once. */
	assert_int_equal(rcl_domain_charge(d, 995, 0, NULL), 0);
	fail_next_thread();
	assert_int_equal(rcl_domain_reclaimer_start(d), -EAGAIN);
	no_faults();
	assert_int_equal(rcl_domain_vmstat(d, &vm), 0);
	assert_int_equal(vm.kswapd_wakeups, 0);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);	/* not running */
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	assert_int_equal(rcl_domain_vmstat(d, &vm), 0);
	assert_int_equal(vm.kswapd_wakeups, 1);
	rcl_domain_uncharge(d, 995);
	assert_int_equal(rcl_domain_free(d), 0);
}

static struct rcl_flush_request app_req;
static int app_wakeups;

static void app_wakeup2(void *priv, const struct rcl_flush_request *req)
{
	(void)priv;
	app_req = *req;
	app_wakeups++;
}

static const struct rcl_flusher_ops app_flusher2 = { app_wakeup2 };

static int ok_write(void *priv, struct rcl_lru_node *n)
{
	(void)priv;
	(void)n;
	return 0;
}

static const struct rcl_writeback_ops ok_wb = { ok_write, NULL };

/*
 * A flusher thread that cannot start leaves the application's request in
 * flight: before the fix the failed start had dropped it, and the
 * application's acknowledgement was refused with -ENOENT.
 */
static void test_faults_flusher_start_failure_keeps_request(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1000,
					 .flusher = &app_flusher2 };
	struct rcl_domain *d;

	(void)state;
	app_wakeups = 0;
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_int_equal(rcl_domain_flush(d, 0), 0);
	assert_int_equal(app_wakeups, 1);
	fail_next_thread();
	assert_int_equal(rcl_domain_flusher_start(d, &ok_wb, NULL, 0), -EAGAIN);
	no_faults();
	assert_int_equal(rcl_domain_flush_done(d, &app_req), 0);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static int fail_write(void *priv, struct rcl_lru_node *n)
{
	(void)priv;
	(void)n;
	return -EIO;
}

static const struct rcl_writeback_ops fail_wb = { fail_write, NULL };

/*
 * rcl_domain_writeback_all() whose set of failed objects cannot grow stops
 * early; before the fix it returned the write error, as if every other
 * object had been written.  It now returns -ENOMEM, and the objects it did
 * not reach are still dirty.
 */
static void test_faults_writeback_skip_set_failure_is_enomem(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1u << 20,
					 .allocator = &t_allocator };
	struct rcl_lruvec_config lcfg = { .ops = &keep_ops };
	struct rcl_lruvec lv;
	struct rcl_domain *d;
	struct rcl_dirty_stats ds;
	static struct rcl_lru_node nodes[200];
	uint64_t written;
	unsigned i;

	(void)state;
	memset(nodes, 0, sizeof(nodes));
	inj_reset(INJ_ALLOCATOR, false, 0);
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_int_equal(rcl_lruvec_init(&lv, &lcfg), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	for (i = 0; i < 200; i++) {
		assert_int_equal(rcl_lruvec_add(&lv, &nodes[i], RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_set_dirty(&lv, &nodes[i]), 0);
	}
	/* Unlimited memory: every write fails, nothing is lost. */
	assert_int_equal(rcl_domain_writeback_all(d, &fail_wb, NULL, &written),
			 -EIO);
	assert_int_equal(written, 0);
	/* The batch array, the set of 64 slots, then 128: the third fails. */
	inj_reset(INJ_ALLOCATOR, false, 3);
	assert_int_equal(rcl_domain_writeback_all(d, &fail_wb, NULL, &written),
			 -ENOMEM);
	assert_int_equal(atomic_load(&inj.injected), 1);
	inj_reset(INJ_ALLOCATOR, false, 0);
	assert_int_equal(rcl_lruvec_dirty_stats(&lv, &ds), 0);
	assert_int_equal(ds.nr_dirty, 200);
	assert_int_equal(ds.nr_writeback, 0);
	/* And with memory, the good writes all happen. */
	assert_int_equal(rcl_domain_writeback_all(d, &ok_wb, NULL, &written), 0);
	assert_int_equal(written, 200);
	for (i = 0; i < 200; i++)
		assert_int_equal(rcl_lruvec_del(&lv, &nodes[i]), 0);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(atomic_load(&inj.live), 0);
}

/*
 * A shadow limit takes its memory from the registry's allocator (a domain's
 * allocator reaches it); before the fix it used malloc() whatever the
 * registry was given.
 */
static void test_faults_shadow_limit_uses_registry_allocator(void **state)
{
	struct rcl_shrinker_registry_config rc = { .allocator = &t_allocator };
	struct rcl_shrinker_registry *reg;
	struct rcl_shadow_limit *limit;
	unsigned long calls;

	(void)state;
	inj_reset(INJ_ALLOCATOR, false, 0);
	atomic_store(&inj.live, 0);
	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
	calls = atomic_load(&inj.alloc_calls);
	assert_int_equal(rcl_shadow_limit_new(reg, 0, &shadow_ops, &limit,
					      &limit), 0);
	/* The limit, its shrinker and the first chunk of slots. */
	assert_int_equal(atomic_load(&inj.alloc_calls) - calls, 3);
	assert_int_equal(rcl_shadow_limit_free(limit), 0);
	/* The first allocation of the three failing: -ENOMEM, nothing left. */
	inj_reset(INJ_ALLOCATOR, false, 1);
	assert_int_equal(rcl_shadow_limit_new(reg, 0, &shadow_ops, &limit,
					      &limit), -ENOMEM);
	inj_reset(INJ_ALLOCATOR, false, 0);
	assert_int_equal(rcl__shrinker_registry_count(reg), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	assert_int_equal(atomic_load(&inj.live), 0);
}

/* ------------------------------------------------------------------------- */
/* Misbehaving shrinkers                                                      */
/* ------------------------------------------------------------------------- */

struct bad {
	unsigned long count;		/* the count answer */
	const unsigned long *counts;	/* or a script of them */
	unsigned nr_counts, next_count;
	unsigned long answer;		/* the scan answer ... */
	unsigned long factor;		/* ... or nr_to_scan * factor */
	unsigned long objects;		/* the real cache */
	bool stop;			/* answer STOP */
	unsigned long scans;
};

static unsigned long bad_count(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	struct bad *b = sc->priv;

	(void)s;
	if (b->counts)
		return b->counts[b->next_count++ % b->nr_counts];
	return b->count;
}

static unsigned long bad_scan(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	struct bad *b = sc->priv;
	unsigned long n = RCL_MIN(sc->nr_to_scan, b->objects);

	(void)s;
	b->scans++;
	if (b->stop)
		return RCL_SHRINK_STOP;
	/* What it really examined: nothing left ends the turn. */
	b->objects -= n;
	sc->nr_scanned = n;
	if (b->factor)
		return sc->nr_to_scan * b->factor;
	return b->answer;
}

static const struct rcl_shrinker_ops bad_ops = { bad_count, bad_scan };

static struct rcl_shrinker *bad_new(struct rcl_shrinker_registry *reg,
				    struct bad *b)
{
	struct rcl_shrinker_config cfg = { .ops = &bad_ops, .priv = b,
					   .seeks = RCL_DEFAULT_SEEKS };
	struct rcl_shrinker *s;

	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	return s;
}

static const enum rcl_shrink_policy policies[] = {
	RCL_SHRINK_POLICY_DEFAULT,
	RCL_SHRINK_POLICY_KERNEL_MODERN,
	RCL_SHRINK_POLICY_KERNEL_2014,
};

/*
 * A scan that answers more than it was asked to look at (ten times
 * nr_to_scan, more than the count, the RCL_SHRINK_EMPTY sentinel, ULONG_MAX
 * - 2) is counted as having freed nr_to_scan: freed never exceeds scanned,
 * in the shrinker's counters, the call's result and a domain's vmstat.
 * Before the fix the answers were summed: ULONG_MAX - 2 plus the LRU's
 * reclaimed objects wrapped a domain's progress sum around to 0.
 */
static void test_faults_scan_answer_above_nr_to_scan_is_clamped(void **state)
{
	const unsigned long answers[] = { 0, RCL_SHRINK_EMPTY, ~0ul - 2,
					  1ul << 62, 5000 };
	unsigned p, a;

	(void)state;
	for (p = 0; p < 3; p++) {
		for (a = 0; a < 5; a++) {
			struct rcl_shrinker_registry_config rc = {
				.policy = policies[p] };
			struct rcl_shrinker_registry *reg;
			struct bad b = { .count = 1000, .objects = 1000,
					 .answer = answers[a],
					 .factor = a == 0 ? 10 : 0 };
			struct rcl_shrink_result res = { 0 };
			struct rcl_shrinker_stats st;
			struct rcl_shrinker *s;

			assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
			s = bad_new(reg, &b);
			assert_int_equal(rcl_shrinker_registry_shrink(
						 reg, 0, 0, RCL_CTX_CAPABLE, &res),
					 0);
			assert_true(res.scanned > 0);
			assert_true(res.freed <= res.scanned);
			assert_true(res.scanned <= 1000);
			assert_int_equal(rcl_shrinker_stats(s, &st), 0);
			assert_true(st.freed <= st.scanned);
			assert_int_equal(rcl_shrinker_free(s), 0);
			assert_int_equal(rcl_shrinker_registry_free(reg), 0);
		}
	}
}

static void test_faults_scan_answer_above_count_in_a_domain(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1000 };
	struct rcl_lruvec_config lcfg = { .ops = &sc_ops };
	struct rcl_reclaim_result res;
	struct rcl_shrinker *s;
	struct rcl_domain *d;
	struct rcl_vmstat vm;
	struct sc *c = calloc(1, sizeof(*c));
	struct bad b = { .count = 100, .objects = 100, .answer = ~0ul - 2 };
	unsigned i;

	(void)state;
	assert_non_null(c);
	lcfg.priv = c;
	init_objs(c, 1);
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	c->d = d;
	s = bad_new(rcl_domain_registry(d), &b);
	assert_int_equal(rcl_lruvec_init(&c->lv, &lcfg), 0);
	c->lv_live = true;
	assert_int_equal(rcl_domain_attach(d, &c->lv, 0), 0);
	for (i = 0; i < 100; i++) {
		assert_int_equal(rcl_lruvec_add(&c->lv, &c->objs[i].lru,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		c->objs[i].on = true;
	}
	assert_int_equal(rcl_domain_reclaim(d, 50, RCL_CTX_CAPABLE, &res), 0);
	assert_true(res.nr_reclaimed > 0);
	assert_true(res.slab_freed <= 100);
	assert_int_equal(rcl_domain_vmstat(d, &vm), 0);
	assert_true(vm.slabs_freed <= vm.slabs_scanned);
	assert_true(check_state(c, __LINE__));
	del_all(c);
	assert_int_equal(rcl_domain_detach(d, &c->lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&c->lv), 0);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	free(c);
}

/*
 * Counts near ULONG_MAX (the RCL_SHRINK_STOP value, ULONG_MAX - 2, 2^63,
 * just above the arithmetic's cap) are taken as 2^40 objects: the targets
 * and backlogs stay bounded, and a scan that reports what it really
 * examined (0 once its cache is empty) ends the call, at any priority.
 */
static void test_faults_count_near_overflow_is_bounded(void **state)
{
	const unsigned long counts[] = { ~0ul, ~0ul - 2, 1ul << 63,
					 (1ul << 40) + 1 };
	int prios[] = { 0, 6, RCL_DEF_PRIORITY };
	unsigned p, k, q;

	(void)state;
	for (p = 0; p < 3; p++) {
		for (k = 0; k < 4; k++) {
			for (q = 0; q < 3; q++) {
				struct rcl_shrinker_registry_config rc = {
					.policy = policies[p] };
				struct rcl_shrinker_registry *reg;
				struct bad b = { .count = counts[k],
						 .objects = 5000,
						 .factor = 1 };
				struct rcl_shrink_result res = { 0 };
				struct rcl_shrinker *s;
				unsigned long bl;
				int round;

				assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
				s = bad_new(reg, &b);
				for (round = 0; round < 3; round++) {
					assert_int_equal(
						rcl_shrinker_shrink(s, 0, prios[q],
								    RCL_CTX_CAPABLE,
								    &res),
						0);
					assert_int_equal(rcl_shrinker_backlog(s, 0, &bl), 0);
					assert_true(bl <= 2ul << 40);
				}
				assert_true(res.scanned <= 5000);
				assert_true(res.freed <= res.scanned);
				/* It stops as soon as the cache is empty. */
				assert_true(b.scans <= 5000 / 1 + 3);
				assert_int_equal(rcl_shrinker_free(s), 0);
				assert_int_equal(rcl_shrinker_registry_free(reg), 0);
			}
		}
	}
}

/*
 * A count that flaps between a size, RCL_SHRINK_EMPTY and 0 (while every
 * scan defers with STOP): EMPTY drops the backlog and the scan is not
 * called; 0 keeps it; the next non-empty count starts again from its own
 * pressure, without the dropped backlog.
 */
static void test_faults_count_flapping_to_empty(void **state)
{
	const unsigned long script[] = { 10000, RCL_SHRINK_EMPTY, 10000, 0 };
	unsigned p;

	(void)state;
	for (p = 0; p < 3; p++) {
		struct rcl_shrinker_registry_config rc = { .policy = policies[p] };
		struct rcl_shrinker_registry *reg;
		struct bad b = { .counts = script, .nr_counts = 4,
				 .objects = 10000, .stop = true };
		struct rcl_shrinker *s;
		unsigned long bl1, bl2, bl3, bl4, scans;

		assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
		s = bad_new(reg, &b);
		assert_int_equal(rcl_shrinker_shrink(s, 0, 0, 0, NULL), 0);
		assert_int_equal(rcl_shrinker_backlog(s, 0, &bl1), 0);
		assert_true(bl1 > 0);
		scans = b.scans;
		assert_int_equal(rcl_shrinker_shrink(s, 0, 0, 0, NULL), 0);
		assert_int_equal(b.scans, scans);	/* EMPTY: no scan */
		assert_int_equal(rcl_shrinker_backlog(s, 0, &bl2), 0);
		assert_int_equal(bl2, 0);
		assert_int_equal(rcl_shrinker_shrink(s, 0, 0, 0, NULL), 0);
		assert_int_equal(rcl_shrinker_backlog(s, 0, &bl3), 0);
		assert_true(bl3 <= bl1);
		scans = b.scans;
		assert_int_equal(rcl_shrinker_shrink(s, 0, 0, 0, NULL), 0);
		assert_int_equal(b.scans, scans);	/* 0: no scan */
		assert_int_equal(rcl_shrinker_backlog(s, 0, &bl4), 0);
		assert_int_equal(bl4, bl3);
		assert_int_equal(rcl_shrinker_free(s), 0);
		assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	}
}

/* ------------------------------------------------------------------------- */
/* Callbacks that block                                                       */
/* ------------------------------------------------------------------------- */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Wait (yielding) until *@flag is set; no deadline: the test timeout is it. */
static void wait_flag(atomic_int *flag)
{
	while (!atomic_load(flag))
		sleep_ms(1);
}

struct slow {
	atomic_int entered;
	atomic_int calls;
};

static unsigned long slow_count(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 1000;
}

static unsigned long slow_scan(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	struct slow *w = sc->priv;

	(void)s;
	if (atomic_fetch_add(&w->calls, 1) == 0) {
		atomic_store(&w->entered, 1);
		sleep_ms(50);	/* a scan stuck on I/O or a lock */
	}
	return sc->nr_to_scan / 2;
}

static const struct rcl_shrinker_ops slow_ops = { slow_count, slow_scan };

static struct rcl_shrinker_registry *slow_reg;

static void *shrink_thread(void *arg)
{
	struct rcl_shrink_result *res = arg;

	rcl_shrinker_registry_shrink(slow_reg, 0, 0, RCL_CTX_CAPABLE, res);
	return NULL;
}

/*
 * A scan that sleeps 50 ms while other threads register, shrink and free
 * shrinkers: nobody waits for it but the free of that very shrinker, which
 * returns once the scan has.
 */
static void test_faults_slow_scan_blocks_nobody(void **state)
{
	struct rcl_shrinker_config cfg = { .ops = &slow_ops, .seeks = 0 };
	struct rcl_shrink_result res = { 0 }, mine = { 0 };
	struct rcl_shrinker *slow, *other[3];
	struct slow w = { 0 };
	pthread_t t;
	unsigned i;

	(void)state;
	cfg.priv = &w;
	assert_int_equal(rcl_shrinker_registry_new(NULL, &slow_reg), 0);
	assert_int_equal(rcl_shrinker_new(slow_reg, &cfg, &slow), 0);
	assert_int_equal(rcl_shrinker_register(slow), 0);
	assert_int_equal(pthread_create(&t, NULL, shrink_thread, &res), 0);
	wait_flag(&w.entered);
	for (i = 0; i < 3; i++) {
		struct rcl_shrinker_config oc = { .ops = &sh_ops, .seeks = 2 };

		assert_int_equal(rcl_shrinker_new(slow_reg, &oc, &other[i]), 0);
		assert_int_equal(rcl_shrinker_register(other[i]), 0);
	}
	assert_int_equal(rcl_shrinker_registry_shrink(slow_reg, 0, 0,
						      RCL_CTX_CAPABLE, &mine), 0);
	assert_true(mine.nr_shrinkers >= 4);
	for (i = 0; i < 3; i++)
		assert_int_equal(rcl_shrinker_free(other[i]), 0);
	/* Waits for the sleeping scan, then frees. */
	assert_int_equal(rcl_shrinker_free(slow), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(res.nr_shrinkers >= 1);
	assert_int_equal(rcl_shrinker_registry_free(slow_reg), 0);
}

#define NSLOW 64

struct slow_lv {
	struct rcl_lruvec lv;
	struct rcl_lru_node n[NSLOW];
	atomic_bool freed[NSLOW];
};

static struct slow_lv slv[2];
static atomic_int slow_entered;
static _Atomic(struct rcl_lru_node *) slow_judged;
static struct rcl_domain *slow_d;

static enum rcl_evict_status slow_evict(struct rcl_lru_node *n,
					struct rcl_evict_control *ctl)
{
	struct slow_lv *s = ctl->priv;

	if (!atomic_load(&slow_entered) && s == &slv[0]) {
		atomic_store(&slow_judged, n);
		atomic_store(&slow_entered, 1);
		sleep_ms(50);
		return RCL_EVICT_BUSY;	/* pinned: someone deletes it */
	}
	atomic_store(&s->freed[n - s->n], true);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops slow_lv_ops = { .evict = slow_evict };

static void *reclaim_thread(void *arg)
{
	struct rcl_reclaim_result *res = arg;

	rcl_domain_reclaim(slow_d, 20, RCL_CTX_CAPABLE, res);
	return NULL;
}

static void slow_lv_fill(struct slow_lv *s)
{
	struct rcl_lruvec_config cfg = { .ops = &slow_lv_ops, .priv = s };
	unsigned i;

	assert_int_equal(rcl_lruvec_init(&s->lv, &cfg), 0);
	for (i = 0; i < NSLOW; i++) {
		rcl_lru_node_init(&s->n[i]);
		atomic_store(&s->freed[i], false);
		assert_int_equal(rcl_lruvec_add(&s->lv, &s->n[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH), 0);
	}
}

static void slow_lv_empty(struct slow_lv *s)
{
	unsigned i;

	for (i = 0; i < NSLOW; i++) {
		if (atomic_load(&s->freed[i]) ||
		    !(rcl_lru_node_flags(&s->n[i]) & RCL_LRU_F_LISTED))
			continue;
		assert_int_equal(rcl_lruvec_del(&s->lv, &s->n[i]), 0);
	}
	assert_int_equal(rcl_lruvec_destroy(&s->lv), 0);
}

/*
 * An evict callback that sleeps 50 ms inside a domain's reclaim while
 * another thread attaches, reclaims, detaches, and deletes the very object
 * being judged: the delete waits for the answer, the detach of the lruvec
 * being scanned waits for the pass; nothing deadlocks.
 */
static void test_faults_slow_evict_blocks_nobody(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1u << 20 };
	struct rcl_reclaim_result res, mine;
	struct rcl_lru_node *judged;
	pthread_t t;

	(void)state;
	atomic_store(&slow_entered, 0);
	assert_int_equal(rcl_domain_new(&cfg, &slow_d), 0);
	slow_lv_fill(&slv[0]);
	assert_int_equal(rcl_domain_attach(slow_d, &slv[0].lv, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, reclaim_thread, &res), 0);
	wait_flag(&slow_entered);

	slow_lv_fill(&slv[1]);
	assert_int_equal(rcl_domain_attach(slow_d, &slv[1].lv, 0), 0);
	assert_int_equal(rcl_domain_reclaim(slow_d, 8, RCL_CTX_CAPABLE, &mine), 0);
	assert_int_equal(rcl_domain_detach(slow_d, &slv[1].lv), 0);
	judged = atomic_load(&slow_judged);
	assert_int_equal(rcl_lruvec_del_wait(&slv[0].lv, judged), 0);
	assert_int_equal(rcl_domain_detach(slow_d, &slv[0].lv), 0);
	assert_int_equal(pthread_join(t, NULL), 0);

	assert_int_equal(rcl_lruvec_nr_isolated(&slv[0].lv), 0);
	slow_lv_empty(&slv[0]);
	slow_lv_empty(&slv[1]);
	assert_int_equal(rcl_domain_free(slow_d), 0);
}

/* ------------------------------------------------------------------------- */
/* Evict callbacks that call back into the library                            */
/* ------------------------------------------------------------------------- */

enum reentry {
	/* allowed */
	R_ADD, R_DEL_OTHER, R_DEL_SELF, R_DEL_ISOLATED, R_MARK, R_ROTATE,
	R_DEACTIVATE, R_UNEVICTABLE, R_EVICTABLE, R_SET_DIRTY_OTHER,
	R_WB_START, R_WB_END, R_ADD_OTHER_LV, R_DEL_OTHER_LV,
	R_SHRINK_OTHER_LV, R_SHRINK_SAME_LV, R_SHRINK_ACTIVE, R_DRAIN,
	R_CHARGE, R_UNCHARGE, R_READ,
	/* forbidden */
	F_DESTROY, F_DEL_WAIT_SELF, F_DEL_WAIT_ISOLATED, F_SET_DIRTY_SELF,
	F_DOMAIN_RECLAIM,
	/* forbidden within a pass of the domain */
	P_DOMAIN_RECLAIM, P_DETACH_SELF, P_DETACH_OTHER, P_CHARGE,
	NR_REENTRY
};

static const struct {
	const char *name;
	int want;
} reentry_want[NR_REENTRY] = {
	[R_ADD] = { "add another node", 0 },
	[R_DEL_OTHER] = { "del another node", 0 },
	[R_DEL_SELF] = { "del the node judged", -EBUSY },
	[R_DEL_ISOLATED] = { "del a node of the same batch", -EBUSY },
	[R_MARK] = { "mark_accessed", 0 },
	[R_ROTATE] = { "rotate", 0 },
	[R_DEACTIVATE] = { "deactivate", 0 },
	[R_UNEVICTABLE] = { "mark_unevictable", 0 },
	[R_EVICTABLE] = { "unmark_unevictable", 0 },
	[R_SET_DIRTY_OTHER] = { "set_dirty another node", 0 },
	[R_WB_START] = { "writeback_start another node", 0 },
	[R_WB_END] = { "writeback_end another node", 0 },
	[R_ADD_OTHER_LV] = { "add to another lruvec", 0 },
	[R_DEL_OTHER_LV] = { "del from another lruvec", 0 },
	[R_SHRINK_OTHER_LV] = { "shrink_inactive another lruvec", 0 },
	[R_SHRINK_SAME_LV] = { "shrink_inactive the same lruvec", 0 },
	[R_SHRINK_ACTIVE] = { "shrink_active the same lruvec", 0 },
	[R_DRAIN] = { "rcl_lruvec_drain", 0 },
	[R_CHARGE] = { "rcl_domain_charge", 0 },
	[R_UNCHARGE] = { "rcl_domain_uncharge", 0 },
	[R_READ] = { "rcl_lruvec_stats", 0 },
	[F_DESTROY] = { "rcl_lruvec_destroy of the lruvec", -EDEADLK },
	[F_DEL_WAIT_SELF] = { "del_wait the node judged", -EDEADLK },
	[F_DEL_WAIT_ISOLATED] = { "del_wait a node of the batch", -EDEADLK },
	[F_SET_DIRTY_SELF] = { "set_dirty the node judged", -EDEADLK },
	[F_DOMAIN_RECLAIM] = { "rcl_domain_reclaim, no pass", -EDEADLK },
	[P_DOMAIN_RECLAIM] = { "rcl_domain_reclaim in a pass", -EDEADLK },
	[P_DETACH_SELF] = { "detach its lruvec in a pass", -EDEADLK },
	[P_DETACH_OTHER] = { "detach another lruvec in a pass", -EDEADLK },
	[P_CHARGE] = { "charge in a pass (no recursion)", 0 },
};

static struct {
	struct rcl_lruvec a, b;
	struct rcl_lru_node an[8], bn[8], x, y;
	struct rcl_domain *d;
	int mode;		/* 0: off; 1: direct shrink; 2: domain pass */
	int depth;
	int res[NR_REENTRY];
	unsigned long freed_b;
} re;

static enum rcl_evict_status b_evict(struct rcl_lru_node *n,
				     struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	re.freed_b++;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops b_ops = { .evict = b_evict };

static void reenter_direct(struct rcl_lru_node *n)
{
	struct rcl_lru_shrink_control sb = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 2 };
	struct rcl_lru_shrink_control sa = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 1 };
	struct rcl_lru_shrink_control sact = { .type = RCL_LRU_FILE,
					       .nr_to_scan = 8 };
	struct rcl_lruvec_type_stats st;

	re.res[R_ADD] = rcl_lruvec_add(&re.a, &re.x, RCL_LRU_FILE, 1, 0);
	re.res[R_DEL_OTHER] = rcl_lruvec_del(&re.a, &re.an[5]);
	re.res[R_DEL_SELF] = rcl_lruvec_del(&re.a, n);
	re.res[R_DEL_ISOLATED] = rcl_lruvec_del(&re.a, &re.an[1]);
	re.res[R_MARK] = rcl_lruvec_mark_accessed(&re.a, &re.an[4]);
	re.res[R_ROTATE] = rcl_lruvec_rotate(&re.a, &re.an[3]);
	re.res[R_DEACTIVATE] = rcl_lruvec_deactivate(&re.a, &re.an[6]);
	re.res[R_UNEVICTABLE] = rcl_lruvec_mark_unevictable(&re.a, &re.an[7]);
	re.res[R_EVICTABLE] = rcl_lruvec_unmark_unevictable(&re.a, &re.an[7]);
	re.res[R_SET_DIRTY_OTHER] = rcl_lruvec_set_dirty(&re.a, &re.an[2]);
	re.res[R_WB_START] = rcl_lruvec_writeback_start(&re.a, &re.an[2]);
	re.res[R_WB_END] = rcl_lruvec_writeback_end(&re.a, &re.an[2], 0);
	re.res[R_ADD_OTHER_LV] = rcl_lruvec_add(&re.b, &re.y, RCL_LRU_FILE, 1, 0);
	re.res[R_DEL_OTHER_LV] = rcl_lruvec_del(&re.b, &re.bn[7]);
	re.res[R_SHRINK_OTHER_LV] = rcl_lruvec_shrink_inactive(&re.b, &sb);
	re.depth++;
	re.res[R_SHRINK_SAME_LV] = rcl_lruvec_shrink_inactive(&re.a, &sa);
	re.depth--;
	re.res[R_SHRINK_ACTIVE] = rcl_lruvec_shrink_active(&re.a, &sact);
	re.res[R_DRAIN] = rcl_lruvec_drain(&re.a);
	re.res[R_CHARGE] = rcl_domain_charge(re.d, 1, RCL_CTX_CAPABLE, NULL);
	re.res[R_UNCHARGE] = rcl_domain_uncharge(re.d, 1);
	re.res[R_READ] = rcl_lruvec_stats(&re.a, RCL_LRU_FILE, &st);

	re.res[F_DESTROY] = rcl_lruvec_destroy(&re.a);
	re.res[F_DEL_WAIT_SELF] = rcl_lruvec_del_wait(&re.a, n);
	re.res[F_DEL_WAIT_ISOLATED] = rcl_lruvec_del_wait(&re.a, &re.an[1]);
	re.res[F_SET_DIRTY_SELF] = rcl_lruvec_set_dirty(&re.a, n);
	re.res[F_DOMAIN_RECLAIM] = rcl_domain_reclaim(re.d, 1, RCL_CTX_CAPABLE,
						      NULL);
}

static enum rcl_evict_status re_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	int mode = re.mode;

	(void)ctl;
	if (re.depth || !mode)
		return RCL_EVICT_BUSY;
	re.mode = 0;	/* once */
	if (mode == 1) {
		reenter_direct(n);
		return RCL_EVICT_FREED;
	}
	re.res[P_DOMAIN_RECLAIM] = rcl_domain_reclaim(re.d, 1, RCL_CTX_CAPABLE,
						      NULL);
	re.res[P_DETACH_SELF] = rcl_domain_detach(re.d, &re.a);
	re.res[P_DETACH_OTHER] = rcl_domain_detach(re.d, &re.b);
	re.res[P_CHARGE] = rcl_domain_charge(re.d, 1, RCL_CTX_CAPABLE, NULL);
	if (!re.res[P_CHARGE])
		rcl_domain_uncharge(re.d, 1);
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops re_ops = { .evict = re_evict };

static size_t listed(struct rcl_lruvec *lv)
{
	size_t n = 0;
	unsigned l;

	for (l = 0; l < RCL_LRU_NR_LISTS; l++)
		n += rcl_lruvec_count(lv, l, NULL);
	return n;
}

static void test_faults_evict_reentry(void **state)
{
	struct rcl_lruvec_config ca = { .ops = &re_ops };
	struct rcl_lruvec_config cb = { .ops = &b_ops };
	struct rcl_domain_config cfg = { .budget = 1u << 20 };
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 2 };
	unsigned i, bad = 0;

	(void)state;
	memset(&re, 0, sizeof(re));
	for (i = 0; i < NR_REENTRY; i++)
		re.res[i] = 12345;
	assert_int_equal(rcl_domain_new(&cfg, &re.d), 0);
	assert_int_equal(rcl_lruvec_init(&re.a, &ca), 0);
	assert_int_equal(rcl_lruvec_init(&re.b, &cb), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(rcl_lruvec_add(&re.a, &re.an[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_add(&re.b, &re.bn[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH), 0);
	}
	assert_int_equal(rcl_domain_attach(re.d, &re.a, 0), 0);
	assert_int_equal(rcl_domain_attach(re.d, &re.b, 0), 0);

	/* Shrunk directly: an[0] and an[1] isolated, an[0] judged first. */
	re.mode = 1;
	assert_int_equal(rcl_lruvec_shrink_inactive(&re.a, &sc), 0);
	assert_int_equal(sc.nr_freed, 1);
	/* A domain pass over both lruvecs. */
	re.mode = 2;
	assert_int_equal(rcl_domain_reclaim(re.d, 1, RCL_CTX_CAPABLE, NULL), 0);

	for (i = 0; i < NR_REENTRY; i++) {
		if (re.res[i] == reentry_want[i].want)
			continue;
		print_message("evict callback: %s returned %d, want %d\n",
			      reentry_want[i].name, re.res[i],
			      reentry_want[i].want);
		bad++;
	}
	assert_int_equal(bad, 0);

	/* State: an[0] freed, an[5] deleted, x added; bn[7] deleted, y added. */
	assert_int_equal(rcl_lruvec_nr_isolated(&re.a), 0);
	assert_int_equal(rcl_lruvec_nr_isolated(&re.b), 0);
	assert_int_equal(rcl_lruvec_drain(&re.a), 0);
	assert_int_equal(rcl_lruvec_drain(&re.b), 0);
	assert_int_equal(listed(&re.a), 7);
	assert_int_equal(listed(&re.b), 8 - 1 + 1 - re.freed_b);
	assert_int_equal(rcl_domain_usage(re.d), 0);
	for (i = 1; i < 8; i++)
		if (i != 5)
			assert_int_equal(rcl_lruvec_del(&re.a, &re.an[i]), 0);
	assert_int_equal(rcl_lruvec_del(&re.a, &re.x), 0);
	for (i = 0; i < 8; i++)
		rcl_lruvec_del(&re.b, &re.bn[i]);	/* some were freed */
	rcl_lruvec_del(&re.b, &re.y);
	assert_int_equal(rcl_domain_detach(re.d, &re.a), 0);
	assert_int_equal(rcl_domain_detach(re.d, &re.b), 0);
	assert_int_equal(rcl_lruvec_destroy(&re.a), 0);
	assert_int_equal(rcl_lruvec_destroy(&re.b), 0);
	assert_int_equal(rcl_domain_free(re.d), 0);
}

/* ------------------------------------------------------------------------- */
/* Shrinker, reclaimer and flusher callbacks that call back                   */
/* ------------------------------------------------------------------------- */

static struct {
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker *self, *victim, *born;
	struct rcl_shadow_limit *limit;
	int depth;
	int free_self_count, free_self_scan, free_other, nested_shrink;
	int born_new, born_register, limit_free;
} sr;

static unsigned long sr_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	(void)sc;
	if (s == sr.self && !sr.depth)
		sr.free_self_count = rcl_shrinker_free(s);
	return 100;
}

static unsigned long sr_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	struct rcl_shrinker_config cfg = { .ops = &sh_ops, .seeks = 2 };

	if (s != sr.self || sr.depth)
		return 0;
	sr.depth++;
	sr.free_self_scan = rcl_shrinker_free(s);
	if (sr.victim) {
		sr.free_other = rcl_shrinker_free(sr.victim);
		sr.victim = NULL;
	}
	sr.nested_shrink = rcl_shrinker_registry_shrink(sr.reg, 0, 12, 0, NULL);
	if (!sr.born) {
		sr.born_new = rcl_shrinker_new(sr.reg, &cfg, &sr.born);
		sr.born_register = rcl_shrinker_register(sr.born);
	}
	sr.depth--;
	sc->nr_scanned = 0;
	return 0;
}

static const struct rcl_shrinker_ops sr_ops = { sr_count, sr_scan };

static unsigned long limit_drop(void *priv, unsigned long nr)
{
	(void)priv;
	(void)nr;
	sr.limit_free = rcl_shadow_limit_free(sr.limit);
	return 0;
}

static const struct rcl_shadow_ops limit_ops = { limit_drop };

/*
 * Shrinker callbacks may call any library function: freeing another
 * shrinker, registering a new one, a nested registry walk all work; freeing
 * their own shrinker (from count or scan) and a shadow limit's drop freeing
 * its limit return -EDEADLK.
 */
static void test_faults_shrinker_reentry(void **state)
{
	struct rcl_shrinker_config cfg = { .ops = &sr_ops, .seeks = 0 };
	struct rcl_shrinker_config vc = { .ops = &sh_ops, .seeks = 2 };

	(void)state;
	memset(&sr, 0, sizeof(sr));
	assert_int_equal(rcl_shrinker_registry_new(NULL, &sr.reg), 0);
	assert_int_equal(rcl_shrinker_new(sr.reg, &cfg, &sr.self), 0);
	assert_int_equal(rcl_shrinker_register(sr.self), 0);
	assert_int_equal(rcl_shrinker_new(sr.reg, &vc, &sr.victim), 0);
	assert_int_equal(rcl_shrinker_register(sr.victim), 0);
	assert_int_equal(rcl_shadow_limit_new(sr.reg, 0, &limit_ops, NULL,
					      &sr.limit), 0);
	rcl_shadow_limit_add(sr.limit, 1000);
	assert_int_equal(rcl_shrinker_registry_shrink(sr.reg, 0, 0,
						      RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(sr.free_self_count, -EDEADLK);
	assert_int_equal(sr.free_self_scan, -EDEADLK);
	assert_int_equal(sr.free_other, 0);
	assert_int_equal(sr.nested_shrink, 0);
	assert_int_equal(sr.born_new, 0);
	assert_int_equal(sr.born_register, 0);
	assert_int_equal(sr.limit_free, -EDEADLK);
	/* Three left: self, born, the limit's. */
	assert_int_equal(rcl__shrinker_registry_count(sr.reg), 3);
	assert_int_equal(rcl_shadow_limit_free(sr.limit), 0);
	assert_int_equal(rcl_shrinker_free(sr.born), 0);
	assert_int_equal(rcl_shrinker_free(sr.self), 0);
	assert_int_equal(rcl_shrinker_registry_free(sr.reg), 0);
}

static struct {
	struct rcl_domain *d;
	struct rcl_lruvec lv;
	struct rcl_lru_node n[64];
	atomic_int done;
	int stop, dfree, del_wait, detach, fl_stop;
} tr;

static enum rcl_evict_status tr_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	if (!atomic_load(&tr.done)) {
		tr.stop = rcl_domain_reclaimer_stop(tr.d);
		tr.dfree = rcl_domain_free(tr.d);
		atomic_store(&tr.done, 1);
	}
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops tr_ops = { .evict = tr_evict };

static void tr_setup(const struct rcl_lruvec_ops *ops, bool dirty)
{
	struct rcl_domain_config cfg = { .budget = 100000 };
	struct rcl_lruvec_config lc = { .ops = ops };
	unsigned i;

	memset(&tr, 0, sizeof(tr));
	assert_int_equal(rcl_domain_new(&cfg, &tr.d), 0);
	assert_int_equal(rcl_lruvec_init(&tr.lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(tr.d, &tr.lv, 0), 0);
	for (i = 0; i < 64; i++) {
		assert_int_equal(rcl_lruvec_add(&tr.lv, &tr.n[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH), 0);
		if (dirty)
			assert_int_equal(rcl_lruvec_set_dirty(&tr.lv, &tr.n[i]),
					 0);
	}
}

static void tr_teardown(void)
{
	unsigned i;

	for (i = 0; i < 64; i++)
		assert_int_equal(rcl_lruvec_del_wait(&tr.lv, &tr.n[i]), 0);
	rcl_domain_detach(tr.d, &tr.lv);	/* maybe detached already */
	assert_int_equal(rcl_lruvec_destroy(&tr.lv), 0);
	assert_int_equal(rcl_domain_free(tr.d), 0);
}

/*
 * The background reclaimer's callbacks cannot stop it, nor free its
 * domain: -EDEADLK (rcl_domain_free() checks that first, before anything).
 */
static void test_faults_reclaimer_reentry(void **state)
{
	(void)state;
	tr_setup(&tr_ops, false);
	assert_int_equal(rcl_domain_reclaimer_start(tr.d), 0);
	/* Below low, without direct reclaim: the reclaimer is woken. */
	assert_int_equal(rcl_domain_charge(tr.d, 99990, 0, NULL), 0);
	wait_flag(&tr.done);
	assert_int_equal(tr.stop, -EDEADLK);
	assert_int_equal(tr.dfree, -EDEADLK);
	assert_int_equal(rcl_domain_reclaimer_start(tr.d), -EBUSY); /* runs */
	assert_int_equal(rcl_domain_reclaimer_stop(tr.d), 0);
	rcl_domain_uncharge(tr.d, 99990);
	tr_teardown();
}

static int tr_write(void *priv, struct rcl_lru_node *n)
{
	(void)priv;
	if (!atomic_load(&tr.done)) {
		tr.fl_stop = rcl_domain_flusher_stop(tr.d);
		/* Would wait for the end of its own writeback: was a hang. */
		tr.del_wait = rcl_lruvec_del_wait(&tr.lv, n);
		tr.detach = rcl_domain_detach(tr.d, &tr.lv);
		/* Would have stopped the reclaimer, then failed. */
		tr.dfree = rcl_domain_free(tr.d);
		atomic_store(&tr.done, 1);
	}
	return 0;
}

static const struct rcl_writeback_ops tr_wb = { tr_write, NULL };

/*
 * The library flusher's write callback: stopping the flusher and freeing
 * the domain are -EDEADLK (the latter before it stops anything: the
 * reclaimer keeps running), rcl_lruvec_del_wait() on the object being
 * written is -EDEADLK instead of a wait for itself; detaching works.
 */
static void test_faults_flusher_reentry(void **state)
{
	(void)state;
	tr_setup(&keep_ops, true);
	assert_int_equal(rcl_domain_reclaimer_start(tr.d), 0);
	assert_int_equal(rcl_domain_flusher_start(tr.d, &tr_wb, NULL, 8), 0);
	assert_int_equal(rcl_domain_flush(tr.d, 0), 0);
	wait_flag(&tr.done);
	assert_int_equal(tr.fl_stop, -EDEADLK);
	assert_int_equal(tr.del_wait, -EDEADLK);
	assert_int_equal(tr.detach, 0);
	assert_int_equal(tr.dfree, -EDEADLK);
	assert_int_equal(rcl_domain_reclaimer_start(tr.d), -EBUSY); /* runs */
	assert_int_equal(rcl_domain_flusher_stop(tr.d), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(tr.d), 0);
	tr_teardown();
}

/* The same from rcl_domain_writeback_all(), in the caller's thread. */
static void test_faults_writeback_all_reentry(void **state)
{
	uint64_t written;

	(void)state;
	tr_setup(&keep_ops, true);
	assert_int_equal(rcl_domain_writeback_all(tr.d, &tr_wb, NULL, &written),
			 0);
	assert_int_equal(tr.del_wait, -EDEADLK);
	assert_int_equal(tr.detach, 0);
	assert_int_equal(tr.fl_stop, 0);	/* not running: nothing to do */
	/* Would have freed the domain under this very call: was a UAF. */
	assert_int_equal(tr.dfree, -EDEADLK);
	tr_teardown();
}

/* ------------------------------------------------------------------------- */
/* The pressure monitor: its allocation, its thread, its descriptors          */
/* ------------------------------------------------------------------------- */

/* Descriptors open below 1024 (valgrind keeps its own above the limit). */
static unsigned fds_open(int *highest)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned n = 0;
	int self;

	assert_non_null(dir);
	self = dirfd(dir);
	*highest = -1;
	while ((e = readdir(dir))) {
		long fd = strtol(e->d_name, NULL, 10);

		if (e->d_name[0] == '.' || fd == self || fd < 0 || fd >= 1024)
			continue;
		n++;
		if (fd > *highest)
			*highest = (int)fd;
	}
	closedir(dir);
	return n;
}

/*
 * The monitor's one allocation fails, through the internal seam and
 * through the public allocator: -ENOMEM, *out untouched, no descriptor
 * and no allocation left, the domain not held.
 */
static void test_faults_pressure_new_allocation(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure *p = (void *)&pc;
	struct rcl_domain *d;
	unsigned fds;
	int hi;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	fds = fds_open(&hi);

	inj_reset(INJ_SEAM, false, 1);
	rcl__fault_set(seam_hook, NULL);
	assert_int_equal(rcl_pressure_new(&pc, &p), -ENOMEM);
	no_faults();
	assert_ptr_equal(p, (void *)&pc);
	assert_int_equal(fds_open(&hi), fds);

	pc.allocator = &t_allocator;
	inj_reset(INJ_ALLOCATOR, false, 1);
	atomic_store(&inj.live, 0);
	assert_int_equal(rcl_pressure_new(&pc, &p), -ENOMEM);
	assert_int_equal(atomic_load(&inj.injected), 1);
	assert_int_equal(atomic_load(&inj.live), 0);
	assert_ptr_equal(p, (void *)&pc);
	assert_int_equal(fds_open(&hi), fds);
	/* Not held: the domain can go, and come back. */
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;

	/* The allocation the hook sees is the monitor's only one. */
	inj_reset(INJ_ALLOCATOR, false, 0);
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	assert_int_equal(atomic_load(&inj.alloc_calls), 1);
	assert_int_equal(atomic_load(&inj.live), 1);
	assert_int_equal(rcl_pressure_add_manual(p), 0);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(atomic_load(&inj.live), 0);
	assert_int_equal(fds_open(&hi), fds);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The library thread cannot be created: -EAGAIN, and nothing changed (the
 * monitor does not run: its descriptor is the caller's, stop is a no-op);
 * the next start works.
 */
static void test_faults_pressure_start_thread_failure(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure *p;
	struct rcl_domain *d;
	int fd;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	pc.interval_ns = 5 * RCL_NSEC_PER_MSEC;
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	fd = rcl_pressure_fd(p);
	assert_true(fd >= 0);
	fail_next_thread();
	assert_int_equal(rcl_pressure_start(p), -EAGAIN);
	assert_int_equal(atomic_load(&inj.thread_faults), 1);
	no_faults();
	assert_int_equal(rcl_pressure_fd(p), fd);
	assert_int_equal(rcl_pressure_stop(p), 0);
	assert_int_equal(rcl_pressure_dispatch(p), 0);
	assert_int_equal(rcl_pressure_start(p), 0);
	assert_int_equal(rcl_pressure_fd(p), -EBUSY);
	assert_int_equal(rcl_pressure_stop(p), 0);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * No descriptor for the epoll set, then none for the timerfd, then none
 * for the stop eventfd (RLIMIT_NOFILE lowered and every slot below it
 * taken but k): -EMFILE each time, and what was opened is closed.
 * (Descriptors inherited from the caller may sit anywhere below 1024.)
 */
static void test_faults_pressure_new_without_descriptors(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure *p;
	struct rcl_domain *d;
	struct rlimit old, lim;
	static int hold[1024];
	int base, hi, n, k, room, err;
	unsigned fds;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	base = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(base >= 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	for (k = 0; k <= 3; k++) {
		fds = fds_open(&hi);
		assert_true(hi + 16 < 1024);
		lim = old;
		lim.rlim_cur = (rlim_t)hi + 16;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
		for (n = 0; n < 1024; n++) {
			hold[n] = dup(base);
			if (hold[n] < 0)
				break;
		}
		assert_int_equal(errno, EMFILE);
		assert_true(n >= k);
		for (room = 0; room < k; room++)	/* k slots free */
			close(hold[--n]);
		err = rcl_pressure_new(&pc, &p);
		while (n)
			close(hold[--n]);
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
		if (k < 3) {
			if (err != -EMFILE)
				fail_msg("room for %d descriptors: %d, want -EMFILE",
					 k, err);
		} else {
			assert_int_equal(err, 0);
			assert_int_equal(rcl_pressure_free(p), 0);
		}
		assert_int_equal(fds_open(&hi), fds);
	}
	close(base);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* Report                                                                     */
/* ------------------------------------------------------------------------- */

static void test_faults_report(void **state)
{
	(void)state;
	print_message("fault injection total: %lu fault points, %lu failures "
		      "injected over %lu runs\n",
		      total_points, total_injected, total_runs);
	print_message("library fixes proven here: reclaimer_start and "
		      "flusher_start failures changed state; writeback_all "
		      "hid a stop for want of memory; shadow limits ignored the "
		      "registry's allocator; scan answers above nr_to_scan "
		      "overflowed sums; rcl_domain_reclaim from an attached "
		      "lruvec's evict callback recursed; rcl_domain_free from "
		      "the flusher stopped the reclaimer then failed; "
		      "rcl_lruvec_del_wait from a write callback hung\n");
}

/*
 * A thread's charge stock cannot be allocated: its charges are made
 * unstocked, exactly (usage is the sum of the charges), and nothing is
 * lost; once allocations work again, the thread gets a stock (after at
 * most 256 more charges) and gives it back when it exits.
 */
static bool refuse_alloc(void *ctx, enum rcl__fault_site site, size_t size)
{
	(void)ctx;
	(void)size;
	return site == RCL__FAULT_ALLOC;
}

struct stock_fault_arg {
	struct rcl_domain *d;
	int bad;
};

static void *stock_fault_thread(void *arg)
{
	struct stock_fault_arg *a = arg;
	uint64_t charged = 0;
	unsigned i;

	rcl__fault_set(refuse_alloc, NULL);
	for (i = 0; i < 600; i++) {
		if (rcl_domain_charge(a->d, 10, RCL_CTX_CAPABLE, NULL))
			a->bad |= 1;
		charged += 10;
		if (rcl_domain_usage(a->d) != charged)
			a->bad |= 2;
	}
	for (i = 0; i < 300; i++) {
		if (rcl_domain_uncharge(a->d, 10))
			a->bad |= 4;
		charged -= 10;
		if (rcl_domain_usage(a->d) != charged)
			a->bad |= 8;
	}
	rcl__fault_set(NULL, NULL);
	for (i = 0; i < 300; i++) {
		if (rcl_domain_charge(a->d, 10, RCL_CTX_CAPABLE, NULL))
			a->bad |= 16;
		charged += 10;
	}
	/* A stock now: 10 + 4096 at the charge that took it. */
	if (rcl_domain_usage(a->d) <= charged)
		a->bad |= 32;
	return NULL;
}

static void test_faults_charge_stock_allocation_is_unstocked(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1u << 20,
					 .charge_stock = 4096 };
	struct stock_fault_arg a = { 0 };
	struct rcl_vmstat vm;
	pthread_t t;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &a.d), 0);
	assert_int_equal(pthread_create(&t, NULL, stock_fault_thread, &a), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.bad, 0);
	/* The thread exited: its stock went back. */
	assert_int_equal(rcl_domain_usage(a.d), 600 * 10);
	assert_int_equal(rcl_domain_vmstat(a.d, &vm), 0);
	assert_int_equal(vm.charge_failures, 0);
	assert_int_equal(rcl_domain_uncharge(a.d, 600 * 10), 0);
	assert_int_equal(rcl_domain_free(a.d), 0);
}

/*
 * Trees of domains: a child's charge is served by the tree's stocks (the
 * root's charge_stock), so a thread's first charge through a child is now
 * what allocates its stock.  When that allocation fails, every charge
 * through the child is made unstocked and exact at every level, none
 * fails; once it succeeds, the stock taken is charged to the child and to
 * each ancestor; when the thread exits it goes back to all of them.
 */
struct tree_stock_fault_arg {
	struct rcl_domain *root, *mid, *leaf;
	int bad;
	unsigned refused;	/* allocations refused (the stock's) */
};

static bool refuse_alloc_counted(void *ctx, enum rcl__fault_site site,
				 size_t size)
{
	(void)size;
	if (site != RCL__FAULT_ALLOC)
		return false;
	++*(unsigned *)ctx;
	return true;
}

static bool tree_levels_are(const struct tree_stock_fault_arg *a, uint64_t v)
{
	return rcl_domain_usage(a->leaf) == v && rcl_domain_usage(a->mid) == v &&
	       rcl_domain_usage(a->root) == v;
}

static void *tree_stock_fault_thread(void *arg)
{
	struct tree_stock_fault_arg *a = arg;
	uint64_t charged = 0;
	unsigned i;

	rcl__fault_set(refuse_alloc_counted, &a->refused);
	for (i = 0; i < 600; i++) {
		if (rcl_domain_charge(a->leaf, 10, RCL_CTX_CAPABLE, NULL))
			a->bad |= 1;
		charged += 10;
		if (!tree_levels_are(a, charged))
			a->bad |= 2;
	}
	for (i = 0; i < 300; i++) {
		if (rcl_domain_uncharge(a->leaf, 10))
			a->bad |= 4;
		charged -= 10;
		if (!tree_levels_are(a, charged))
			a->bad |= 8;
	}
	rcl__fault_set(NULL, NULL);
	for (i = 0; i < 300; i++) {
		if (rcl_domain_charge(a->leaf, 10, RCL_CTX_CAPABLE, NULL))
			a->bad |= 16;
		charged += 10;
	}
	/* A stock now, charged to the leaf and to each ancestor alike. */
	if (rcl_domain_usage(a->leaf) <= charged ||
	    rcl_domain_usage(a->mid) != rcl_domain_usage(a->leaf) ||
	    rcl_domain_usage(a->root) != rcl_domain_usage(a->leaf))
		a->bad |= 32;
	return NULL;
}

static void test_faults_child_charge_stock_allocation_is_unstocked(void **state)
{
	struct rcl_domain_config rc = { .budget = 1u << 20, .charge_stock = 4096 };
	struct rcl_domain_config cc = { .budget = 1u << 19 };
	struct tree_stock_fault_arg a = { 0 };
	struct rcl_domain *lv[3];
	pthread_t t;
	unsigned i;

	(void)state;
	assert_int_equal(rcl_domain_new(&rc, &a.root), 0);
	cc.parent = a.root;
	assert_int_equal(rcl_domain_new(&cc, &a.mid), 0);
	cc.parent = a.mid;
	cc.budget = 0;
	assert_int_equal(rcl_domain_new(&cc, &a.leaf), 0);
	assert_int_equal(pthread_create(&t, NULL, tree_stock_fault_thread, &a), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.bad, 0);
	assert_true(a.refused >= 1);	/* the child's charges asked for a stock */
	/* The thread exited: its stock went back to every level. */
	lv[0] = a.leaf;
	lv[1] = a.mid;
	lv[2] = a.root;
	for (i = 0; i < 3; i++) {
		struct rcl_vmstat vm;

		assert_int_equal(rcl_domain_usage(lv[i]), 600 * 10);
		assert_int_equal(rcl_domain_vmstat(lv[i], &vm), 0);
		assert_int_equal(vm.charge_failures, 0);
	}
	assert_int_equal(rcl_domain_uncharge(a.leaf, 600 * 10), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(rcl_domain_usage(lv[i]), 0);
		assert_int_equal(rcl_domain_free(lv[i]), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_faults_lruvec_every_allocation),
		cmocka_unit_test(test_faults_shrinker_every_allocation),
		cmocka_unit_test(test_faults_domain_every_allocation),
		cmocka_unit_test(test_faults_charge_stock_allocation_is_unstocked),
		cmocka_unit_test(test_faults_child_charge_stock_allocation_is_unstocked),
		cmocka_unit_test(test_faults_objcache_every_allocation),
		cmocka_unit_test(test_faults_reclaimer_start_failure_changes_nothing),
		cmocka_unit_test(test_faults_flusher_start_failure_keeps_request),
		cmocka_unit_test(test_faults_writeback_skip_set_failure_is_enomem),
		cmocka_unit_test(test_faults_shadow_limit_uses_registry_allocator),
		cmocka_unit_test(test_faults_pressure_new_allocation),
		cmocka_unit_test(test_faults_pressure_start_thread_failure),
		cmocka_unit_test(test_faults_pressure_new_without_descriptors),
		cmocka_unit_test(test_faults_scan_answer_above_nr_to_scan_is_clamped),
		cmocka_unit_test(test_faults_scan_answer_above_count_in_a_domain),
		cmocka_unit_test(test_faults_count_near_overflow_is_bounded),
		cmocka_unit_test(test_faults_count_flapping_to_empty),
		cmocka_unit_test(test_faults_slow_scan_blocks_nobody),
		cmocka_unit_test(test_faults_slow_evict_blocks_nobody),
		cmocka_unit_test(test_faults_evict_reentry),
		cmocka_unit_test(test_faults_shrinker_reentry),
		cmocka_unit_test(test_faults_reclaimer_reentry),
		cmocka_unit_test(test_faults_flusher_reentry),
		cmocka_unit_test(test_faults_writeback_all_reentry),
		cmocka_unit_test(test_faults_report),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
