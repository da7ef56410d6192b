/* SPDX-License-Identifier: MIT */
/*
 * Trees of domains (domain.h, "Trees of domains"): hierarchical charging,
 * limit_high, protect_min and protect_low with the kernel's effective
 * protection, reclaim that walks a subtree in proportion to each domain's
 * usage above its protection, and the kernel's own protection selftest
 * (tools/testing/selftests/cgroup/test_memcontrol.c,
 * test_memcg_protection()) rebuilt with domains.
 *
 * Every cache here is single-threaded and unbatched (RCL_LRU_ADD_NOBATCH),
 * so that every figure is exact and reproducible; no test reads a clock.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <reclaim/clock.h>
#include <reclaim/domain.h>
#include <reclaim/lruvec.h>

#include "test_util.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define OBJ (4 * KiB)

/* ------------------------------------------------------------------------- */
/* A cache of 4 KiB objects, charged to one domain                            */
/* ------------------------------------------------------------------------- */

struct tobj {
	struct rcl_lru_node lru;
	atomic_bool cached;
};

struct tcache {
	struct rcl_lruvec lv;
	struct rcl_domain *d;
	struct tobj *objs;
	unsigned n, next;
	atomic_ulong evicted;
	bool busy;		/* its objects are in use: evict answers BUSY */
};

static enum rcl_evict_status tc_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct tobj *o = rcl_container_of(node, struct tobj, lru);
	struct tcache *c = ctl->priv;

	if (c->busy)
		return RCL_EVICT_BUSY;
	T_CHECK(atomic_load(&o->cached));
	atomic_store(&o->cached, false);
	T_EQ(rcl_domain_uncharge(c->d, ctl->weight), 0);
	atomic_fetch_add(&c->evicted, 1);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops tc_ops = { .evict = tc_evict };

static void tc_init(struct tcache *c, struct rcl_domain *d, unsigned n)
{
	struct rcl_lruvec_config cfg = { .ops = &tc_ops, .priv = c };

	memset(c, 0, sizeof(*c));
	c->d = d;
	c->n = n;
	c->objs = calloc(n ? n : 1, sizeof(*c->objs));
	assert_non_null(c->objs);
	assert_int_equal(rcl_lruvec_init(&c->lv, &cfg), 0);
	assert_int_equal(rcl_domain_attach(d, &c->lv, 0), 0);
}

/* Charge and insert the next object; the charge's answer. */
static int tc_insert(struct tcache *c)
{
	struct tobj *o;
	int err;

	assert_true(c->next < c->n);
	o = &c->objs[c->next];
	err = rcl_domain_charge(c->d, OBJ, RCL_CTX_CAPABLE, NULL);
	if (err)
		return err;
	rcl_lru_node_init(&o->lru);
	atomic_store(&o->cached, true);
	assert_int_equal(rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE, OBJ,
					RCL_LRU_ADD_NOBATCH),
			 0);
	c->next++;
	return 0;
}

static void tc_fill(struct tcache *c, uint64_t bytes)
{
	while ((uint64_t)c->next * OBJ < bytes)
		assert_int_equal(tc_insert(c), 0);
}

static uint64_t tc_bytes(const struct tcache *c)
{
	uint64_t n = 0;
	unsigned i;

	for (i = 0; i < c->next; i++)
		n += atomic_load(&c->objs[i].cached);
	return n * OBJ;
}

static void tc_destroy(struct tcache *c)
{
	unsigned i;

	for (i = 0; i < c->next; i++) {
		if (!atomic_load(&c->objs[i].cached))
			continue;
		assert_int_equal(rcl_lruvec_del(&c->lv, &c->objs[i].lru), 0);
		assert_int_equal(rcl_domain_uncharge(c->d, OBJ), 0);
		atomic_store(&c->objs[i].cached, false);
	}
	assert_int_equal(rcl_domain_detach(c->d, &c->lv), 0);
	rcl_lruvec_destroy(&c->lv);
	free(c->objs);
}

static struct rcl_domain *child(struct rcl_domain *parent, uint64_t budget,
				uint64_t low, uint64_t min)
{
	struct rcl_domain_config cfg = {
		.budget = budget,
		.parent = parent,
		.protect_low = low,
		.protect_min = min,
	};
	struct rcl_domain *d = NULL;

	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	return d;
}

static struct rcl_domain *root(uint64_t budget, unsigned flags)
{
	struct rcl_domain_config cfg = { .budget = budget, .flags = flags };
	struct rcl_domain *d = NULL;

	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	return d;
}

static struct rcl_domain_events events(struct rcl_domain *d)
{
	struct rcl_domain_events ev;

	assert_int_equal(rcl_domain_events(d, false, &ev), 0);
	return ev;
}

/* ------------------------------------------------------------------------- */
/* Charging through the levels                                                */
/* ------------------------------------------------------------------------- */

/* A charge to a child is charged to each ancestor; an uncharge leaves all. */
static void test_tree_charge_is_hierarchical(void **state)
{
	struct rcl_domain *r = root(100 * MiB, 0), *a, *b, *c;
	struct rcl_vmstat v;

	(void)state;
	a = child(r, 0, 0, 0);
	b = child(a, 10 * MiB, 0, 0);
	c = child(a, 0, 0, 0);
	assert_ptr_equal(rcl_domain_parent(b), a);
	assert_ptr_equal(rcl_domain_parent(a), r);
	assert_null(rcl_domain_parent(r));
	assert_int_equal(rcl_domain_budget(a), UINT64_MAX);

	assert_int_equal(rcl_domain_charge(b, 3 * MiB, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(c, 2 * MiB, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(a, 1 * MiB, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(r, 1 * MiB, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_usage(b), 3 * MiB);
	assert_int_equal(rcl_domain_usage(c), 2 * MiB);
	assert_int_equal(rcl_domain_usage(a), 6 * MiB);
	assert_int_equal(rcl_domain_usage(r), 7 * MiB);

	/* b is strict at 10 MiB: 8 more would exceed it, nothing reclaimable. */
	assert_int_equal(rcl_domain_charge(b, 8 * MiB, RCL_CTX_CAPABLE, NULL),
			 -ENOMEM);
	assert_int_equal(rcl_domain_usage(b), 3 * MiB);
	assert_int_equal(rcl_domain_usage(a), 6 * MiB);
	assert_int_equal(rcl_domain_usage(r), 7 * MiB);
	assert_int_equal(events(b).max, 1);
	assert_int_equal(events(b).oom, 1);
	assert_int_equal(events(a).oom, 0);
	assert_int_equal(rcl_domain_vmstat(b, &v), 0);
	assert_int_equal(v.charge_failures, 1);

	assert_int_equal(rcl_domain_uncharge(b, 3 * MiB), 0);
	assert_int_equal(rcl_domain_uncharge(c, 2 * MiB), 0);
	assert_int_equal(rcl_domain_uncharge(a, 1 * MiB), 0);
	assert_int_equal(rcl_domain_uncharge(r, 1 * MiB), 0);
	assert_int_equal(rcl_domain_usage(r), 0);
	assert_int_equal(rcl_domain_usage(a), 0);

	/* A parent with children cannot go first. */
	assert_int_equal(rcl_domain_free(a), -EBUSY);
	assert_int_equal(rcl_domain_free(r), -EBUSY);
	assert_int_equal(rcl_domain_free(b), 0);
	assert_int_equal(rcl_domain_free(c), 0);
	/* A freed child's events and counters stay in the subtree sums. */
	{
		struct rcl_domain_events ev;

		assert_int_equal(rcl_domain_events(r, true, &ev), 0);
		assert_int_equal(ev.max, 1);
		assert_int_equal(ev.oom, 1);
		assert_int_equal(rcl_domain_events(a, false, &ev), 0);
		assert_int_equal(ev.oom, 0);
		assert_int_equal(rcl_domain_vmstat_subtree(r, &v), 0);
		assert_int_equal(v.charge_failures, 1);
	}
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/* The root's budget bounds the tree: a child's charge that the root refuses
 * leaves nothing charged below it either. */
static void test_tree_root_refusal_undoes_the_child_levels(void **state)
{
	struct rcl_domain *r = root(4 * MiB, 0), *a, *b;

	(void)state;
	a = child(r, 0, 0, 0);
	b = child(a, 0, 0, 0);
	assert_int_equal(rcl_domain_charge(b, 3 * MiB, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(b, 2 * MiB, RCL_CTX_CAPABLE, NULL),
			 -ENOMEM);
	assert_int_equal(rcl_domain_usage(b), 3 * MiB);
	assert_int_equal(rcl_domain_usage(a), 3 * MiB);
	assert_int_equal(rcl_domain_usage(r), 3 * MiB);
	assert_int_equal(events(r).oom, 1);
	assert_int_equal(events(b).oom, 0);
	/* Freeing a child with charges gives them back to its ancestors. */
	assert_int_equal(rcl_domain_free(b), 0);
	assert_int_equal(rcl_domain_usage(a), 0);
	assert_int_equal(rcl_domain_usage(r), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * A charge from the evict callback of an lruvec that the application
 * shrinks itself (rcl_lruvec_shrink_inactive(), no pass of the domain) does
 * not reclaim: its reclaim would shrink the same lruvec again from inside
 * its own callback.  It is refused (strict) as a charge from a pass is.
 */
struct nest {
	struct rcl_lruvec lv;
	struct rcl_domain *owner, *d;
	struct tobj objs[16];
	int depth, max_depth, charged;
	unsigned calls;
};

static enum rcl_evict_status nest_evict(struct rcl_lru_node *node,
					struct rcl_evict_control *ctl)
{
	struct tobj *o = rcl_container_of(node, struct tobj, lru);
	struct nest *c = ctl->priv;

	if (++c->depth > c->max_depth)
		c->max_depth = c->depth;
	if (c->calls++ == 0)
		c->charged = rcl_domain_charge(c->d, OBJ, RCL_CTX_CAPABLE, NULL);
	atomic_store(&o->cached, false);
	T_EQ(rcl_domain_uncharge(c->owner, ctl->weight), 0);
	c->depth--;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops nest_ops = { .evict = nest_evict };

static void nest_check(struct rcl_domain *d, struct rcl_domain *charged,
		       int expect)
{
	struct rcl_lruvec_config cfg = { .ops = &nest_ops };
	struct rcl_lru_shrink_control sc = {
		.type = RCL_LRU_FILE,
		.nr_to_scan = 1,
		.context = RCL_CTX_CAPABLE,
	};
	struct nest *c = calloc(1, sizeof(*c));
	unsigned i;

	assert_non_null(c);
	c->owner = d;
	c->d = charged;
	cfg.priv = c;
	assert_int_equal(rcl_lruvec_init(&c->lv, &cfg), 0);
	assert_int_equal(rcl_domain_attach(d, &c->lv, 0), 0);
	for (i = 0; i < 16; i++) {
		assert_int_equal(rcl_domain_charge(d, OBJ, 0, NULL), 0);
		rcl_lru_node_init(&c->objs[i].lru);
		atomic_store(&c->objs[i].cached, true);
		assert_int_equal(rcl_lruvec_add(&c->lv, &c->objs[i].lru,
						RCL_LRU_FILE, OBJ,
						RCL_LRU_ADD_NOBATCH),
				 0);
	}
	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &sc), 0);
	print_message("charge from a directly shrunk lruvec's callback: %d, "
		      "%u evict calls, nesting depth %d\n", c->charged,
		      c->calls, c->max_depth);
	assert_int_equal(c->max_depth, 1);
	assert_int_equal(c->calls, 1);
	assert_int_equal(c->charged, expect);
	if (!c->charged)
		assert_int_equal(rcl_domain_uncharge(charged, OBJ), 0);
	for (i = 0; i < 16; i++) {
		if (!atomic_load(&c->objs[i].cached))
			continue;
		assert_int_equal(rcl_lruvec_del(&c->lv, &c->objs[i].lru), 0);
		assert_int_equal(rcl_domain_uncharge(d, OBJ), 0);
	}
	assert_int_equal(rcl_domain_detach(d, &c->lv), 0);
	rcl_lruvec_destroy(&c->lv);
	free(c);
}

static void test_tree_charge_from_direct_shrink_does_not_nest(void **state)
{
	struct rcl_domain *r = root(16 * OBJ, 0), *a, *b;

	(void)state;
	/* A flat domain, its own lruvec's callback charging it. */
	nest_check(r, r, -ENOMEM);
	assert_int_equal(rcl_domain_usage(r), 0);
	/* A child's lruvec whose callback charges a sibling: same tree. */
	a = child(r, 0, 0, 0);
	b = child(r, 0, 0, 0);
	nest_check(a, b, -ENOMEM);
	assert_int_equal(rcl_domain_usage(a), 0);
	assert_int_equal(rcl_domain_usage(b), 0);
	assert_int_equal(rcl_domain_usage(r), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(b), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/* A full child reclaims its own subtree, never its sibling's. */
static void test_tree_max_reclaims_the_subtree_only(void **state)
{
	struct rcl_domain *r = root(64 * MiB, 0), *a, *b;
	struct tcache ca, cb;
	struct rcl_vmstat v;
	unsigned i;

	(void)state;
	a = child(r, 4 * MiB, 0, 0);
	b = child(r, 0, 0, 0);
	tc_init(&ca, a, 4096);
	tc_init(&cb, b, 4096);
	tc_fill(&cb, 8 * MiB);
	tc_fill(&ca, 4 * MiB);
	assert_int_equal(rcl_domain_usage(a), 4 * MiB);
	/* 100 more objects into the full child: each reclaims a. */
	for (i = 0; i < 100; i++)
		assert_int_equal(tc_insert(&ca), 0);
	assert_true(rcl_domain_usage(a) <= 4 * MiB);
	assert_int_equal(tc_bytes(&cb), 8 * MiB);
	assert_int_equal(cb.evicted, 0);
	assert_true(ca.evicted >= 100);
	assert_true(events(a).max >= 1);
	assert_int_equal(events(a).oom, 0);
	assert_int_equal(rcl_domain_vmstat(a, &v), 0);
	assert_int_equal(v.pgsteal_direct, ca.evicted);
	assert_int_equal(rcl_domain_vmstat(r, &v), 0);
	assert_int_equal(v.pgsteal_direct, 0);	/* a's lruvec is a's */
	assert_int_equal(rcl_domain_vmstat_subtree(r, &v), 0);
	assert_int_equal(v.pgsteal_direct, ca.evicted);
	assert_true(v.allocstall >= 1);
	tc_destroy(&ca);
	tc_destroy(&cb);
	assert_int_equal(rcl_domain_usage(r), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(b), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/* A soft child admits what it cannot reclaim, as overshoot. */
static void test_tree_soft_child_overshoots(void **state)
{
	struct rcl_domain_config cfg = { .budget = MiB, .mode = RCL_CHARGE_SOFT };
	struct rcl_domain *r = root(64 * MiB, 0), *a;
	uint64_t os = 0;

	(void)state;
	cfg.parent = r;
	assert_int_equal(rcl_domain_new(&cfg, &a), 0);
	assert_int_equal(rcl_domain_charge(a, MiB, RCL_CTX_CAPABLE, &os), 0);
	assert_int_equal(os, 0);
	assert_int_equal(rcl_domain_charge(a, 256 * KiB, RCL_CTX_CAPABLE, &os), 0);
	assert_int_equal(os, 256 * KiB);
	assert_int_equal(rcl_domain_usage(a), MiB + 256 * KiB);
	assert_int_equal(rcl_domain_usage(r), MiB + 256 * KiB);
	assert_int_equal(events(a).oom, 1);
	assert_int_equal(rcl_domain_uncharge(a, MiB + 256 * KiB), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * A charge that an ancestor must refuse whatever is reclaimed (larger than
 * a strict level's whole budget) evicts nothing at any level, as a root's
 * charge does (rcl_domain_charge(): "then nothing is evicted for it"): the
 * full child was reclaimed first, before the root's test.
 */
static void test_tree_hopeless_charge_evicts_nothing(void **state)
{
	struct rcl_domain *r = root(MiB, 0), *a;
	struct rcl_vmstat vs;
	struct tcache c;

	(void)state;
	a = child(r, 2 * MiB, 0, 0);	/* a child budget above its parent's */
	tc_init(&c, a, 256);
	tc_fill(&c, MiB - 4 * OBJ);
	assert_int_equal(rcl_domain_charge(a, MiB + OBJ, RCL_CTX_CAPABLE, NULL),
			 -ENOMEM);
	assert_int_equal(atomic_load(&c.evicted), 0);
	assert_int_equal(rcl_domain_usage(a), MiB - 4 * OBJ);
	assert_int_equal(rcl_domain_usage(r), MiB - 4 * OBJ);
	assert_int_equal(events(r).oom, 1);
	assert_int_equal(rcl_domain_vmstat(r, &vs), 0);
	assert_int_equal(vs.charge_failures, 1);
	/* Full at its own budget too, and still hopeless: nothing evicted. */
	assert_int_equal(rcl_domain_set_budget(a, MiB - 4 * OBJ), 0);
	assert_int_equal(rcl_domain_charge(a, MiB + OBJ, RCL_CTX_CAPABLE, NULL),
			 -ENOMEM);
	assert_int_equal(atomic_load(&c.evicted), 0);
	assert_int_equal(events(a).max, 0);
	tc_destroy(&c);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * -EOVERFLOW is decided on the usage before any reclaim (domain.h): a child
 * at its budget whose charge would wrap a soft root's usage evicts nothing.
 */
static void test_tree_overflow_evicts_nothing(void **state)
{
	struct rcl_domain_config cfg = { .budget = UINT64_MAX,
					 .mode = RCL_CHARGE_SOFT };
	struct rcl_domain *r, *a;
	struct tcache c;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &r), 0);
	a = child(r, 8 * OBJ, 0, 0);
	tc_init(&c, a, 16);
	tc_fill(&c, 8 * OBJ);
	assert_int_equal(rcl_domain_charge(r, UINT64_MAX - 9 * OBJ, 0, NULL), 0);
	assert_int_equal(rcl_domain_charge(a, 2 * OBJ, RCL_CTX_CAPABLE, NULL),
			 -EOVERFLOW);
	assert_int_equal(atomic_load(&c.evicted), 0);
	assert_int_equal(rcl_domain_usage(a), 8 * OBJ);
	assert_int_equal(rcl_domain_uncharge(r, UINT64_MAX - 9 * OBJ), 0);
	tc_destroy(&c);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * A soft child admits a charge over its budget only if the levels above
 * take it: refused by a strict root, the child counts no overshoot and no
 * oom event (both count admitted charges), and *overshoot is 0.
 */
static void test_tree_soft_child_counts_only_admitted_charges(void **state)
{
	struct rcl_domain_config cfg = { .budget = 4 * OBJ,
					 .mode = RCL_CHARGE_SOFT };
	struct rcl_domain *r = root(64 * OBJ, 0), *a;
	struct rcl_vmstat vs;
	uint64_t os = 123;

	(void)state;
	cfg.parent = r;
	assert_int_equal(rcl_domain_new(&cfg, &a), 0);
	assert_int_equal(rcl_domain_charge(r, 62 * OBJ, 0, NULL), 0);
	assert_int_equal(rcl_domain_charge(a, 8 * OBJ, 0, &os), -ENOMEM);
	assert_int_equal(os, 0);
	assert_int_equal(rcl_domain_usage(a), 0);
	assert_int_equal(events(a).oom, 0);
	assert_int_equal(rcl_domain_vmstat(a, &vs), 0);
	assert_int_equal(vs.charge_overshoots, 0);
	assert_int_equal(events(r).oom, 1);
	/* With room above, the same charge is admitted and counted once. */
	assert_int_equal(rcl_domain_uncharge(r, 62 * OBJ), 0);
	assert_int_equal(rcl_domain_charge(a, 8 * OBJ, 0, &os), 0);
	assert_int_equal(os, 4 * OBJ);
	assert_int_equal(events(a).oom, 1);
	assert_int_equal(rcl_domain_vmstat(a, &vs), 0);
	assert_int_equal(vs.charge_overshoots, 1);
	assert_int_equal(rcl_domain_uncharge(a, 8 * OBJ), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/* Over limit_high, the charging thread reclaims its subtree back to it. */
static void test_tree_limit_high_throttles(void **state)
{
	struct rcl_domain_limits lim = { .limit_high = 2 * MiB };
	struct rcl_domain_limits got;
	struct rcl_domain *r = root(64 * MiB, 0), *a;
	struct tcache ca;
	unsigned i;

	(void)state;
	a = child(r, 0, 0, 0);
	tc_init(&ca, a, 4096);
	tc_fill(&ca, 4 * MiB);
	assert_int_equal(events(a).high, 0);
	/* Lowering the limit below usage reclaims down to it at once. */
	assert_int_equal(rcl_domain_set_limits(a, &lim), 0);
	assert_true(rcl_domain_usage(a) <= 2 * MiB);
	assert_int_equal(rcl_domain_limits(a, &got), 0);
	assert_int_equal(got.limit_high, 2 * MiB);
	assert_int_equal(got.protect_low, 0);
	for (i = 0; i < 200; i++) {
		assert_int_equal(tc_insert(&ca), 0);
		assert_true(rcl_domain_usage(a) <= 2 * MiB);
	}
	assert_true(events(a).high >= 1);
	assert_int_equal(events(a).max, 0);
	lim.limit_high = 0;	/* none */
	assert_int_equal(rcl_domain_set_limits(a, &lim), 0);
	assert_int_equal(rcl_domain_limits(a, &got), 0);
	assert_int_equal(got.limit_high, UINT64_MAX);
	tc_destroy(&ca);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * Stocks are the tree's: a thread charging a grandchild takes one stock,
 * charged to every level at once, and serves the next charges from it.
 */
static void test_tree_stock_serves_children(void **state)
{
	struct rcl_domain_config cfg = { .budget = 1024 * MiB,
					 .charge_stock = 256 * KiB };
	struct rcl_domain *r, *a, *b;
	unsigned i;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &r), 0);
	a = child(r, 0, 0, 0);
	b = child(a, 0, 0, 0);
	assert_int_equal(rcl_domain_charge(b, OBJ, RCL_CTX_CAPABLE, NULL), 0);
	/* The charge and a full stock, at every level. */
	assert_int_equal(rcl_domain_usage(b), OBJ + 256 * KiB);
	assert_int_equal(rcl_domain_usage(a), OBJ + 256 * KiB);
	assert_int_equal(rcl_domain_usage(r), OBJ + 256 * KiB);
	for (i = 0; i < 10; i++)
		assert_int_equal(rcl_domain_charge(b, OBJ, RCL_CTX_CAPABLE, NULL),
				 0);
	assert_int_equal(rcl_domain_usage(r), OBJ + 256 * KiB);
	assert_int_equal(rcl_domain_uncharge(b, OBJ), 0);
	/* Draining the root takes back the stocks of its whole tree. */
	assert_int_equal(rcl_domain_drain_stocks(r), 0);
	assert_int_equal(rcl_domain_usage(b), 10 * OBJ);
	assert_int_equal(rcl_domain_usage(a), 10 * OBJ);
	assert_int_equal(rcl_domain_usage(r), 10 * OBJ);
	/* A charge to the root itself hands the grandchild's stock back. */
	assert_int_equal(rcl_domain_charge(b, OBJ, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(r, OBJ, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_usage(b), 11 * OBJ);
	assert_int_equal(rcl_domain_usage(r), 12 * OBJ + 256 * KiB);
	assert_int_equal(rcl_domain_uncharge(r, OBJ), 0);
	assert_int_equal(rcl_domain_uncharge(b, 11 * OBJ), 0);
	assert_int_equal(rcl_domain_drain_stocks(r), 0);
	assert_int_equal(rcl_domain_usage(r), 0);
	assert_int_equal(rcl_domain_free(b), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * With stocks, every charge's answer is the one it has without them: the
 * same random charges and uncharges on a strict child (2 MiB) of a strict
 * root (8 MiB), with and without stocks, give the same return codes, the
 * same usages once the stocks are drained, and the same events.
 */
/*
 * A child created while its root's budget shrinks: rcl_domain_new() sizes
 * its stock from the root's before linking it, and the budget change's
 * resize walks the tree without it.  The child's allocator holds its
 * creation between the two (the shrinker registry's allocation) while the
 * budget goes from 64 MiB to 4 MiB; the child's stock must still be sized
 * from the new budget: a 1-byte charge takes a stock of at most budget/64.
 */
static sem_t link_in_alloc, link_resume;
static atomic_int link_calls;

static void *link_alloc(void *ctx, size_t n)
{
	(void)ctx;
	if (atomic_fetch_add(&link_calls, 1) == 1) {
		/* 0: the domain; 1: its shrinker registry */
		T_EQ(sem_post(&link_in_alloc), 0);
		T_EQ(sem_wait(&link_resume), 0);
	}
	return malloc(n);
}

static void link_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

static const struct rcl_allocator link_allocator = { link_alloc, link_free,
						     NULL };

struct link_arg {
	struct rcl_domain *root, *child;
};

static void *link_child_main(void *arg)
{
	struct link_arg *la = arg;
	struct rcl_domain_config cfg = { .parent = la->root,
					 .allocator = &link_allocator };

	T_EQ(rcl_domain_new(&cfg, &la->child), 0);
	return NULL;
}

static void test_tree_child_created_during_a_budget_change(void **state)
{
	struct rcl_domain_config cfg = { .budget = 64 * MiB,
					 .charge_stock = MiB };
	struct link_arg la = { 0 };
	pthread_t t;

	(void)state;
	assert_int_equal(sem_init(&link_in_alloc, 0, 0), 0);
	assert_int_equal(sem_init(&link_resume, 0, 0), 0);
	atomic_store(&link_calls, 0);
	assert_int_equal(rcl_domain_new(&cfg, &la.root), 0);
	assert_int_equal(pthread_create(&t, NULL, link_child_main, &la), 0);
	assert_int_equal(sem_wait(&link_in_alloc), 0);
	assert_int_equal(rcl_domain_set_budget(la.root, 4 * MiB), 0);
	assert_int_equal(sem_post(&link_resume), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_non_null(la.child);

	assert_int_equal(rcl_domain_charge(la.child, 1, RCL_CTX_CAPABLE, NULL),
			 0);
	assert_true(rcl_domain_usage(la.root) <= 1 + 4 * MiB / 64);
	assert_int_equal(rcl_domain_drain_stocks(la.root), 0);
	assert_int_equal(rcl_domain_usage(la.root), 1);
	assert_int_equal(rcl_domain_uncharge(la.child, 1), 0);
	assert_int_equal(rcl_domain_free(la.child), 0);
	assert_int_equal(rcl_domain_free(la.root), 0);
	sem_destroy(&link_in_alloc);
	sem_destroy(&link_resume);
}

static void test_tree_stock_outcomes_match_unstocked(void **state)
{
	struct rcl_domain *r[2], *a[2], *b[2];
	struct rcl_domain_events ea[2], er[2];
	uint64_t held[2] = { 0, 0 }, seed = 17;
	unsigned k, i, refused = 0;

	(void)state;
	for (k = 0; k < 2; k++) {
		struct rcl_domain_config cfg = {
			.budget = 8 * MiB,
			.charge_stock = k ? 64 * KiB : 0,
		};

		assert_int_equal(rcl_domain_new(&cfg, &r[k]), 0);
		a[k] = child(r[k], 2 * MiB, 0, 0);
		b[k] = child(a[k], 0, 0, 0);
	}
	for (i = 0; i < 20000; i++) {
		uint64_t x = rng_next(&seed), amount = 1 + x % (48 * KiB);
		bool up = (x >> 32) % 3 != 0;
		int err[2];

		for (k = 0; k < 2; k++) {
			if (up) {
				err[k] = rcl_domain_charge(b[k], amount,
							   RCL_CTX_CAPABLE, NULL);
				if (!err[k])
					held[k] += amount;
			} else {
				amount = amount < held[k] ? amount : held[k];
				err[k] = rcl_domain_uncharge(b[k], amount);
				held[k] -= amount;
			}
		}
		assert_int_equal(err[0], err[1]);
		refused += err[0] != 0;
		assert_int_equal(held[0], held[1]);
	}
	assert_true(refused > 100);	/* the child's limit was reached */
	assert_int_equal(rcl_domain_drain_stocks(r[1]), 0);
	for (k = 0; k < 2; k++) {
		assert_int_equal(rcl_domain_usage(b[k]), held[k]);
		assert_int_equal(rcl_domain_usage(a[k]), held[k]);
		assert_int_equal(rcl_domain_usage(r[k]), held[k]);
		ea[k] = events(a[k]);
		er[k] = events(r[k]);
	}
	assert_int_equal(ea[0].max, ea[1].max);
	assert_int_equal(ea[0].oom, ea[1].oom);
	assert_int_equal(ea[0].oom, refused);
	assert_int_equal(er[0].oom, er[1].oom);
	for (k = 0; k < 2; k++) {
		assert_int_equal(rcl_domain_uncharge(b[k], held[k]), 0);
		assert_int_equal(rcl_domain_drain_stocks(r[k]), 0);
		assert_int_equal(rcl_domain_usage(r[k]), 0);
		assert_int_equal(rcl_domain_free(b[k]), 0);
		assert_int_equal(rcl_domain_free(a[k]), 0);
		assert_int_equal(rcl_domain_free(r[k]), 0);
	}
}

/* ------------------------------------------------------------------------- */
/* Refusals                                                                   */
/* ------------------------------------------------------------------------- */

static void test_tree_refusals(void **state)
{
	struct rcl_domain *r = root(64 * MiB, 0), *d[RCL_DOMAIN_MAX_DEPTH];
	struct rcl_domain_config cfg = { .budget = MiB };
	struct rcl_domain_limits lim = { .protect_low = MiB };
	struct rcl_watermarks wm = { 1, 2, 3 };
	struct rcl_domain *x = NULL;
	unsigned i;

	(void)state;
	d[0] = r;
	for (i = 1; i < RCL_DOMAIN_MAX_DEPTH; i++)
		d[i] = child(d[i - 1], 0, 0, 0);
	/* Depth RCL_DOMAIN_MAX_DEPTH is the deepest. */
	cfg.parent = d[RCL_DOMAIN_MAX_DEPTH - 1];
	assert_int_equal(rcl_domain_new(&cfg, &x), -EINVAL);
	assert_null(x);
	cfg.parent = d[1];
	cfg.charge_stock = 64 * KiB;
	assert_int_equal(rcl_domain_new(&cfg, &x), -EINVAL);
	cfg.charge_stock = 0;
	cfg.flags = RCL_DOMAIN_RECURSIVE_PROT;
	assert_int_equal(rcl_domain_new(&cfg, &x), -EINVAL);
	cfg.flags = 0;
	cfg.nr_partitions = 2;
	assert_int_equal(rcl_domain_new(&cfg, &x), -EINVAL);
	cfg.nr_partitions = 1;	/* the parent's: fine */
	cfg.clock = rcl_clock_monotonic();
	assert_int_equal(rcl_domain_new(&cfg, &x), 0);
	assert_int_equal(rcl_domain_free(x), 0);
	/* Protection on a root. */
	cfg = (struct rcl_domain_config){ .budget = MiB, .protect_min = 1 };
	assert_int_equal(rcl_domain_new(&cfg, &x), -EINVAL);
	assert_int_equal(rcl_domain_set_limits(r, &lim), -EINVAL);
	lim = (struct rcl_domain_limits){ .limit_high = MiB };
	assert_int_equal(rcl_domain_set_limits(r, &lim), 0);
	assert_int_equal(rcl_domain_set_limits(NULL, &lim), -EINVAL);
	assert_int_equal(rcl_domain_set_limits(r, NULL), -EINVAL);
	/* A child has neither a reclaimer nor watermarks of its own. */
	assert_int_equal(rcl_domain_reclaimer_start(d[1]), -EINVAL);
	assert_int_equal(rcl_domain_set_watermarks(d[1], &wm), -EINVAL);
	/* Effective protection only against an ancestor or itself. */
	assert_int_equal(rcl_domain_effective_protection(d[2], d[1], NULL, NULL),
			 -EINVAL);
	assert_int_equal(rcl_domain_effective_protection(d[1], d[1], NULL, NULL),
			 0);
	/* Parents last. */
	for (i = 0; i + 1 < RCL_DOMAIN_MAX_DEPTH; i++)
		assert_int_equal(rcl_domain_free(d[i]), -EBUSY);
	for (i = RCL_DOMAIN_MAX_DEPTH; i-- > 0;)
		assert_int_equal(rcl_domain_free(d[i]), 0);
}

/* ------------------------------------------------------------------------- */
/* Effective protection                                                       */
/* ------------------------------------------------------------------------- */

/*
 * The arithmetic of mem_cgroup_calculate_protection(), on the selftest's
 * tree before any pressure: B (low 50M) over C, D, E at 50M each, claiming
 * 75M, 25M and 0 - more than B has, so each claim is scaled by 50/75.
 */
static void test_tree_effective_protection_overcommitted(void **state)
{
	struct rcl_domain *r = root(1024 * MiB, 0), *a, *b, *c, *d, *e;
	uint64_t emin, elow;

	(void)state;
	a = child(r, 200 * MiB, 0, 0);
	b = child(a, 0, 50 * MiB, 0);
	c = child(b, 0, 75 * MiB, 0);
	d = child(b, 0, 25 * MiB, 0);
	e = child(b, 0, 0, 0);
	assert_int_equal(rcl_domain_charge(c, 50 * MiB, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(d, 50 * MiB, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_charge(e, 50 * MiB, RCL_CTX_CAPABLE, NULL), 0);

	assert_int_equal(rcl_domain_effective_protection(a, b, &emin, &elow), 0);
	assert_int_equal(elow, 50 * MiB);	/* a child of the target */
	assert_int_equal(emin, 0);
	assert_int_equal(rcl_domain_effective_protection(a, c, &emin, &elow), 0);
	assert_int_equal(elow, 50 * MiB * 50 / 75);
	assert_int_equal(rcl_domain_effective_protection(a, d, NULL, &elow), 0);
	assert_int_equal(elow, 25 * MiB * 50 / 75);
	assert_int_equal(rcl_domain_effective_protection(a, e, NULL, &elow), 0);
	assert_int_equal(elow, 0);
	/* Relative to the root, B's protection is bounded by A's (none). */
	assert_int_equal(rcl_domain_effective_protection(r, b, NULL, &elow), 0);
	assert_int_equal(elow, 0);
	assert_int_equal(rcl_domain_effective_protection(r, c, NULL, &elow), 0);
	assert_int_equal(elow, 0);
	/* Relative to B itself, C gets its setting. */
	assert_int_equal(rcl_domain_effective_protection(b, c, NULL, &elow), 0);
	assert_int_equal(elow, 75 * MiB);

	assert_int_equal(rcl_domain_uncharge(c, 50 * MiB), 0);
	assert_int_equal(rcl_domain_uncharge(d, 50 * MiB), 0);
	assert_int_equal(rcl_domain_uncharge(e, 50 * MiB), 0);
	assert_int_equal(rcl_domain_free(c), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_domain_free(e), 0);
	assert_int_equal(rcl_domain_free(b), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * memory_recursiveprot: protection the children leave unclaimed goes to
 * all of them in proportion to their unprotected usage.  B (low 50M) over
 * C (claims 10M of its 50M) and D (claims nothing of its 50M): 40M are
 * unclaimed; C gets 10 + 40 * 40/90 and D 40 * 50/90; without the option,
 * 10 and 0.
 */
static void test_tree_recursive_protection(void **state)
{
	unsigned flags[2] = { 0, RCL_DOMAIN_RECURSIVE_PROT };
	unsigned k;

	(void)state;
	for (k = 0; k < 2; k++) {
		struct rcl_domain *r = root(1024 * MiB, flags[k]), *a, *b, *c, *d;
		uint64_t elow_c, elow_d;

		a = child(r, 0, 0, 0);
		b = child(a, 0, 50 * MiB, 0);
		c = child(b, 0, 10 * MiB, 0);
		d = child(b, 0, 0, 0);
		assert_int_equal(rcl_domain_charge(c, 50 * MiB, 0, NULL), 0);
		assert_int_equal(rcl_domain_charge(d, 50 * MiB, 0, NULL), 0);
		assert_int_equal(rcl_domain_effective_protection(a, c, NULL,
								 &elow_c),
				 0);
		assert_int_equal(rcl_domain_effective_protection(a, d, NULL,
								 &elow_d),
				 0);
		if (!flags[k]) {
			assert_int_equal(elow_c, 10 * MiB);
			assert_int_equal(elow_d, 0);
		} else {
			assert_int_equal(elow_c,
					 10 * MiB + 40 * MiB * 40 / 90);
			assert_int_equal(elow_d, 40 * MiB * 50 / 90);
		}
		assert_int_equal(rcl_domain_uncharge(c, 50 * MiB), 0);
		assert_int_equal(rcl_domain_uncharge(d, 50 * MiB), 0);
		assert_int_equal(rcl_domain_free(c), 0);
		assert_int_equal(rcl_domain_free(d), 0);
		assert_int_equal(rcl_domain_free(b), 0);
		assert_int_equal(rcl_domain_free(a), 0);
		assert_int_equal(rcl_domain_free(r), 0);
	}
}

/*
 * protect_min holds; protect_low holds while anything else is
 * reclaimable, then gives way with low events.
 */
static void test_tree_min_and_low_order(void **state)
{
	unsigned k;

	(void)state;
	for (k = 0; k < 2; k++) {
		bool min = k == 0;
		struct rcl_domain *r = root(1024 * MiB, 0), *a, *p, *u;
		struct tcache cp, cu;
		struct rcl_reclaim_result res;

		a = child(r, 0, 0, 0);
		p = child(a, 0, min ? 0 : 4 * MiB, min ? 4 * MiB : 0);
		u = child(a, 0, 0, 0);
		tc_init(&cp, p, 2048);
		tc_init(&cu, u, 2048);
		tc_fill(&cp, 4 * MiB);
		tc_fill(&cu, 1 * MiB);
		/* 1 MiB of the unprotected sibling is all it may take. */
		assert_int_equal(rcl_domain_reclaim(a, 1024, RCL_CTX_CAPABLE,
						    &res),
				 0);
		assert_int_equal(tc_bytes(&cp), 4 * MiB);
		assert_int_equal(cp.evicted, 0);
		assert_int_equal(tc_bytes(&cu), 0);
		assert_int_equal(events(p).low, 0);
		/* Nothing else left: min holds, low gives way. */
		assert_int_equal(rcl_domain_reclaim(a, 256, RCL_CTX_CAPABLE,
						    &res),
				 0);
		if (min) {
			assert_int_equal(res.nr_reclaimed, 0);
			assert_int_equal(tc_bytes(&cp), 4 * MiB);
			assert_int_equal(events(p).low, 0);
		} else {
			assert_true(res.nr_reclaimed >= 256);
			assert_true(tc_bytes(&cp) < 4 * MiB);
			/* One per sweep that reclaimed it below low. */
			assert_true(events(p).low >= 1);
			assert_int_equal(events(u).low, 0);
		}
		/* Relative to p itself, nothing protects p's own lruvec. */
		assert_int_equal(rcl_domain_reclaim(p, 32, RCL_CTX_CAPABLE, &res),
				 0);
		assert_true(res.nr_reclaimed >= 32);
		tc_destroy(&cp);
		tc_destroy(&cu);
		assert_int_equal(rcl_domain_free(p), 0);
		assert_int_equal(rcl_domain_free(u), 0);
		assert_int_equal(rcl_domain_free(a), 0);
		assert_int_equal(rcl_domain_free(r), 0);
	}
}

/*
 * The goal of a sweep is shared out over the lruvecs in proportion to their
 * protection-scaled sizes, each of an lruvec's lists counting at least 32:
 * the lists it has, those scan_targets() scans.  p (protect_min 64 KiB, half
 * of its 32 objects, all in use) has a scaled size of 32 (its inactive file
 * list: 32 - 32 * 64K / (128K + 1) = 17, at least 32) plus 3 x 32 (its three
 * empty lists) = 128; u (unprotected) has 512 (at the start: then what it
 * has left).  Each sweep below priority 12 asks u for its share of what is
 * left of the goal (p frees nothing), and the reclaim ends at priority 0
 * with 340 >= 320 freed.  The four lists of the two types that
 * p's lruvec does not have counted 32 each too (p: 256, so u was asked for
 * 512/768 at first): the reclaim ended with 308 of its 320 freed, though u
 * had 204 objects left.
 */
static void test_tree_goal_share_counts_only_the_lruvecs_lists(void **state)
{
	struct rcl_domain *r = root(1024 * MiB, 0), *a, *p, *u;
	struct rcl_reclaim_result res;
	struct tcache cp, cu;

	(void)state;
	a = child(r, 0, 0, 0);
	p = child(a, 0, 0, 16 * OBJ);
	u = child(a, 0, 0, 0);
	tc_init(&cp, p, 32);
	tc_init(&cu, u, 512);
	tc_fill(&cp, 32 * OBJ);
	tc_fill(&cu, 512 * OBJ);
	cp.busy = true;
	assert_int_equal(rcl_domain_reclaim(a, 320, RCL_CTX_CAPABLE, &res), 0);
	print_message("goal 320: reclaimed %llu (u %lu, p %lu), priority %d\n",
		      (unsigned long long)res.nr_reclaimed,
		      atomic_load(&cu.evicted), atomic_load(&cp.evicted),
		      res.priority);
	assert_int_equal(atomic_load(&cp.evicted), 0);
	assert_int_equal(res.nr_reclaimed, atomic_load(&cu.evicted));
	assert_int_equal(res.priority, 0);
	assert_int_equal(res.nr_reclaimed, 340);
	cp.busy = false;
	tc_destroy(&cp);
	tc_destroy(&cu);
	assert_int_equal(rcl_domain_free(p), 0);
	assert_int_equal(rcl_domain_free(u), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * The background reclaimer serves the whole tree from its root: woken by a
 * child's charge below the root's low watermark, it reclaims the tree back
 * to high, taking from the unprotected child and sparing the protected one.
 */
static void test_tree_root_reclaimer_serves_the_tree(void **state)
{
	struct rcl_domain_config cfg = { .budget = 40 * MiB };
	struct rcl_fake_clock *fc = NULL;
	struct rcl_domain *r, *p, *u;
	struct rcl_watermarks wm;
	struct tcache cp, cu;
	struct rcl_vmstat v;
	unsigned long i;
	unsigned k;

	(void)state;
	assert_int_equal(rcl_fake_clock_new(0, &fc), 0);
	cfg.clock = rcl_fake_clock_clock(fc);
	assert_int_equal(rcl_domain_new(&cfg, &r), 0);
	p = child(r, 0, 16 * MiB, 0);
	u = child(r, 0, 0, 0);
	tc_init(&cp, p, 16 * MiB / OBJ);
	tc_init(&cu, u, 40 * MiB / OBJ);
	assert_int_equal(rcl_domain_reclaimer_start(r), 0);
	assert_int_equal(rcl_domain_watermarks(r, &wm), 0);
	tc_fill(&cp, 16 * MiB);
	/*
	 * u grows until the root's headroom falls below low (above min: no
	 * direct reclaim), three times, each time waiting for the reclaimer
	 * to bring it back above high and go idle.
	 */
	for (k = 1; k <= 3; k++) {
		while (rcl_domain_vmstat(r, &v), v.kswapd_wakeups < k)
			assert_int_equal(tc_insert(&cu), 0);
		for (i = 0; i < 20000000ul; i++) {
			rcl_domain_vmstat(r, &v);
			if (v.pageoutrun == v.kswapd_wakeups &&
			    rcl_fake_clock_waiters(fc) == 1)
				break;
			sched_yield();
		}
		assert_true(i < 20000000ul);
		assert_true(rcl_domain_budget(r) - rcl_domain_usage(r) >=
			    wm.high);
	}
	assert_int_equal(tc_bytes(&cp), 16 * MiB);
	assert_int_equal(atomic_load(&cp.evicted), 0);
	assert_int_equal(rcl_domain_vmstat(u, &v), 0);
	assert_int_equal(v.pgsteal_kswapd, atomic_load(&cu.evicted));
	assert_true(v.pgsteal_kswapd > 0);
	assert_int_equal(v.pgsteal_direct, 0);
	assert_int_equal(rcl_domain_vmstat(r, &v), 0);
	assert_int_equal(v.pageoutrun, 3);
	assert_int_equal(rcl_domain_reclaimer_stop(r), 0);
	tc_destroy(&cp);
	tc_destroy(&cu);
	assert_int_equal(rcl_domain_free(p), 0);
	assert_int_equal(rcl_domain_free(u), 0);
	assert_int_equal(rcl_domain_free(r), 0);
	rcl_fake_clock_free(fc);
}

/* Wait until the root's reclaimer sleeps with no wakeup pending. */
static void tree_wait_idle(struct rcl_domain *r, struct rcl_fake_clock *fc)
{
	struct rcl_vmstat v;
	unsigned long i;

	for (i = 0; i < 20000000ul; i++) {
		rcl_domain_vmstat(r, &v);
		if (v.pageoutrun == v.kswapd_wakeups &&
		    rcl_fake_clock_waiters(fc) == 1)
			return;
		sched_yield();
	}
	fail_msg("the background reclaimer did not go idle");
}

static uint64_t wakeups(struct rcl_domain *r)
{
	struct rcl_vmstat v;

	assert_int_equal(rcl_domain_vmstat(r, &v), 0);
	return v.kswapd_wakeups;
}

/*
 * A refused charge in a tree wakes the tree's reclaimer, the root's, as the
 * root's own charge would: refused by the root's budget, while the root's
 * headroom is below high; refused by a child's budget (no charge reached
 * the root), if the root's charge would have left its headroom below low
 * (the kernel's page allocation comes before the memcg charge) and it is
 * below high.  Root 40 MiB: low 112.4 objects of 4 KiB, high 214.8.
 */
static void test_tree_refused_charge_wakes_root_reclaimer(void **state)
{
	struct rcl_domain_config cfg = { .budget = 40 * MiB };
	struct rcl_fake_clock *fc = NULL;
	struct rcl_domain *r, *u, *o;
	struct rcl_watermarks wm;
	struct tcache cu, co;
	uint64_t room;

	(void)state;
	assert_int_equal(rcl_fake_clock_new(0, &fc), 0);
	cfg.clock = rcl_fake_clock_clock(fc);
	assert_int_equal(rcl_domain_new(&cfg, &r), 0);
	u = child(r, 8 * MiB, 0, 0);
	o = child(r, 0, 0, 0);
	tc_init(&cu, u, 8 * MiB / OBJ);
	tc_init(&co, o, 40 * MiB / OBJ);
	assert_int_equal(rcl_domain_watermarks(r, &wm), 0);
	assert_int_equal(rcl_domain_reclaimer_start(r), 0);
	tree_wait_idle(r, fc);
	/* u full; the root's headroom 150 objects, between low and high. */
	tc_fill(&cu, 8 * MiB);
	tc_fill(&co, 40 * MiB - 8 * MiB - 150 * OBJ);
	room = rcl_domain_budget(r) - rcl_domain_usage(r);
	assert_int_equal(room, 150 * OBJ);
	assert_true(room >= wm.low && room < wm.high);
	assert_int_equal(wakeups(r), 0);

	/* u refuses 10 objects that the root had room for above low: the
	 * root's charge would not have woken it, nor does the refusal. */
	assert_int_equal(rcl_domain_charge(u, 10 * OBJ, 0, NULL), -ENOMEM);
	assert_int_equal(events(u).oom, 1);
	assert_int_equal(wakeups(r), 0);
	/* 40 would have left the root 110, below low: one wakeup. */
	assert_int_equal(rcl_domain_charge(u, 40 * OBJ, 0, NULL), -ENOMEM);
	assert_int_equal(events(u).oom, 2);
	assert_int_equal(events(r).oom, 0);
	assert_int_equal(wakeups(r), 1);
	tree_wait_idle(r, fc);
	room = rcl_domain_budget(r) - rcl_domain_usage(r);
	assert_true(room >= wm.high);

	/* At or above high the reclaimer has nothing to do: a refusal by
	 * the root's budget wakes nothing. */
	assert_int_equal(rcl_domain_charge(o, room + OBJ, 0, NULL), -ENOMEM);
	assert_int_equal(events(r).oom, 1);
	assert_int_equal(wakeups(r), 1);

	/* Below high, the root's refusal of o's charge wakes it; then the
	 * charge fits. */
	tc_fill(&co, (co.next + room / OBJ - 150) * OBJ);
	assert_int_equal(rcl_domain_budget(r) - rcl_domain_usage(r), 150 * OBJ);
	assert_int_equal(wakeups(r), 1);
	assert_int_equal(rcl_domain_charge(o, 160 * OBJ, 0, NULL), -ENOMEM);
	assert_int_equal(events(r).oom, 2);
	assert_int_equal(wakeups(r), 2);
	tree_wait_idle(r, fc);
	assert_true(rcl_domain_budget(r) - rcl_domain_usage(r) >= wm.high);
	assert_int_equal(rcl_domain_charge(o, 160 * OBJ, 0, NULL), 0);
	assert_int_equal(rcl_domain_uncharge(o, 160 * OBJ), 0);

	assert_int_equal(rcl_domain_reclaimer_stop(r), 0);
	tc_destroy(&cu);
	tc_destroy(&co);
	assert_int_equal(rcl_domain_free(u), 0);
	assert_int_equal(rcl_domain_free(o), 0);
	assert_int_equal(rcl_domain_free(r), 0);
	rcl_fake_clock_free(fc);
}

/* ------------------------------------------------------------------------- */
/* The kernel's test_memcg_protection()                                       */
/* ------------------------------------------------------------------------- */

/*
 * The selftest's closeness: |a - b| <= (a + b) / 100 * err (its
 * values_close()), which is what "within err %" means there.
 */
static bool values_close(uint64_t a, uint64_t b, unsigned err)
{
	uint64_t diff = a > b ? a - b : b - a;

	return diff <= (a + b) / 100 * err;
}

static const char *const leaf_name[4] = { "C", "D", "E", "F" };

/*
 * The tree of test_memcg_protection(), under a root R standing for the
 * machine (1 GiB, never under pressure itself):
 *
 *	A (budget 200M) -> B (protect 50M) -> C (75M), D (25M), E (0), F (500M)
 *	A -> G (no lruvec, no shrinker)
 *
 * C, D and E each fill a cache of 4 KiB objects with 50M (the selftest's
 * page cache); F stays empty.  G then charges 148M in 4 KiB charges that
 * nothing can reclaim (the selftest's anonymous memory without swap), and
 * the usages must come out as the kernel's model of proportional
 * protection says: B ~ 50M, C ~ 29M, D ~ 21M, F = 0.  Then G's memory goes
 * (the selftest's process exits) and G charges 170M: with protect_min the
 * charge fails (the selftest's OOM kill: G gives back what it charged) and
 * B stays ~ 50M; with protect_low it succeeds, B ends ~ 30M, C and D have
 * low events, E and F none, and no domain of B's subtree an oom event.
 */
static void memcg_protection(bool min)
{
	struct rcl_domain *r, *a, *b, *g, *leaf[4];
	static const uint64_t prot[4] = { 75 * MiB, 25 * MiB, 0, 500 * MiB };
	struct tcache cache[3];
	uint64_t charged = 0, usage[4];
	unsigned i;
	int err = 0;

	r = root(1024 * MiB, 0);
	a = child(r, 200 * MiB, 0, 0);
	b = child(a, 0, min ? 0 : 50 * MiB, min ? 50 * MiB : 0);
	for (i = 0; i < 4; i++)
		leaf[i] = child(b, 0, min ? 0 : prot[i], min ? prot[i] : 0);
	g = child(a, 0, 0, 0);
	for (i = 0; i < 3; i++) {
		tc_init(&cache[i], leaf[i], 50 * MiB / OBJ);
		tc_fill(&cache[i], 50 * MiB);
	}
	assert_int_equal(rcl_domain_usage(b), 150 * MiB);

	while (charged < 148 * MiB) {
		assert_int_equal(rcl_domain_charge(g, OBJ, RCL_CTX_CAPABLE, NULL),
				 0);
		charged += OBJ;
	}
	for (i = 0; i < 4; i++)
		usage[i] = rcl_domain_usage(leaf[i]);
	print_message("%s, after G's 148M: A %.1fM, B %.1fM, C %.1fM, D %.1fM, "
		      "E %.1fM, F %.1fM\n",
		      min ? "protect_min" : "protect_low",
		      (double)rcl_domain_usage(a) / MiB,
		      (double)rcl_domain_usage(b) / MiB, (double)usage[0] / MiB,
		      (double)usage[1] / MiB, (double)usage[2] / MiB,
		      (double)usage[3] / MiB);
	for (i = 0; i < 3; i++)
		assert_int_equal(usage[i], tc_bytes(&cache[i]));
	assert_true(values_close(rcl_domain_usage(b), 50 * MiB, 3));
	assert_true(values_close(usage[0], 29 * MiB, 10));
	assert_true(values_close(usage[1], 21 * MiB, 10));
	assert_int_equal(usage[3], 0);
	assert_true(rcl_domain_usage(a) <= 200 * MiB);

	/* G's process exits; a new one wants 170M. */
	assert_int_equal(rcl_domain_uncharge(g, charged), 0);
	charged = 0;
	while (charged < 170 * MiB) {
		err = rcl_domain_charge(g, OBJ, RCL_CTX_CAPABLE, NULL);
		if (err)
			break;
		charged += OBJ;
	}
	print_message("%s, G's 170M: %s after %.1fM; B %.1fM, C %.1fM, D %.1fM, "
		      "E %.1fM\n",
		      min ? "protect_min" : "protect_low",
		      err ? "refused" : "charged", (double)charged / MiB,
		      (double)rcl_domain_usage(b) / MiB,
		      (double)rcl_domain_usage(leaf[0]) / MiB,
		      (double)rcl_domain_usage(leaf[1]) / MiB,
		      (double)rcl_domain_usage(leaf[2]) / MiB);
	if (min) {
		assert_int_equal(err, -ENOMEM);
		assert_true(events(a).oom >= 1);
		assert_true(values_close(rcl_domain_usage(b), 50 * MiB, 3));
	} else {
		assert_int_equal(err, 0);
		assert_true(values_close(rcl_domain_usage(b), 30 * MiB, 3));
		for (i = 0; i < 4; i++) {
			struct rcl_domain_events ev = events(leaf[i]);

			print_message("  %s: low %llu, oom %llu\n", leaf_name[i],
				      (unsigned long long)ev.low,
				      (unsigned long long)ev.oom);
			if (i < 2)
				assert_true(ev.low > 0);
			else
				assert_int_equal(ev.low, 0);
			assert_int_equal(ev.oom, 0);
		}
		assert_int_equal(events(b).oom, 0);
		assert_int_equal(events(a).oom, 0);
	}
	/* The OOM kill, or the process's exit. */
	assert_int_equal(rcl_domain_uncharge(g, charged), 0);

	for (i = 0; i < 3; i++)
		tc_destroy(&cache[i]);
	assert_int_equal(rcl_domain_usage(r), 0);
	assert_int_equal(rcl_domain_free(g), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(rcl_domain_free(leaf[i]), 0);
	assert_int_equal(rcl_domain_free(b), 0);
	assert_int_equal(rcl_domain_free(a), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

static void test_tree_memcg_protection_min(void **state)
{
	(void)state;
	memcg_protection(true);
}

static void test_tree_memcg_protection_low(void **state)
{
	(void)state;
	memcg_protection(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_charge_is_hierarchical),
		cmocka_unit_test(test_tree_root_refusal_undoes_the_child_levels),
		cmocka_unit_test(test_tree_charge_from_direct_shrink_does_not_nest),
		cmocka_unit_test(test_tree_max_reclaims_the_subtree_only),
		cmocka_unit_test(test_tree_soft_child_overshoots),
		cmocka_unit_test(test_tree_hopeless_charge_evicts_nothing),
		cmocka_unit_test(test_tree_overflow_evicts_nothing),
		cmocka_unit_test(test_tree_soft_child_counts_only_admitted_charges),
		cmocka_unit_test(test_tree_limit_high_throttles),
		cmocka_unit_test(test_tree_stock_serves_children),
		cmocka_unit_test(test_tree_stock_outcomes_match_unstocked),
		cmocka_unit_test(test_tree_child_created_during_a_budget_change),
		cmocka_unit_test(test_tree_refusals),
		cmocka_unit_test(test_tree_effective_protection_overcommitted),
		cmocka_unit_test(test_tree_recursive_protection),
		cmocka_unit_test(test_tree_min_and_low_order),
		cmocka_unit_test(test_tree_goal_share_counts_only_the_lruvecs_lists),
		cmocka_unit_test(test_tree_root_reclaimer_serves_the_tree),
		cmocka_unit_test(test_tree_refused_charge_wakes_root_reclaimer),
		cmocka_unit_test(test_tree_memcg_protection_min),
		cmocka_unit_test(test_tree_memcg_protection_low),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
