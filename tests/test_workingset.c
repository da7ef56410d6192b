/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the workingset module: the shadow an eviction leaves, the
 * refault distance and its activation rule (kernel parity), the counters,
 * restores feeding the cost model, the adaptive inactive target (its start,
 * its moves, its bounds, the room rule and what it does to a loop larger than
 * the cache), the shadow-count shrinker, and every documented error.
 *
 * Every scenario is single-threaded and scripted: adds bypass the per-thread
 * batch, evictions are explicit shrink calls, so the clock and every outcome
 * are exact.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#define NOBJ 256

struct obj {
	struct rcl_lru_node lru;
	bool cached;
	uint64_t shadow;	/* what the index slot keeps once evicted */
};

struct fixture {
	struct rcl_lruvec lv;
	struct obj objs[NOBJ];
	unsigned nr_evicted;
	unsigned nr_ws_flag;	/* evictions told RCL_EVICT_WORKINGSET */
};

#define INACTIVE RCL_LRU_LIST(RCL_LRU_FILE, 0)
#define ACTIVE RCL_LRU_LIST(RCL_LRU_FILE, 1)

static enum rcl_evict_status evict(struct rcl_lru_node *node,
				   struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);
	struct fixture *fx = ctl->priv;

	o->cached = false;
	o->shadow = ctl->shadow;
	fx->nr_evicted++;
	if (ctl->flags & RCL_EVICT_WORKINGSET)
		fx->nr_ws_flag++;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops ops = { .evict = evict };

static struct fixture *fixture_new(unsigned flags)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct rcl_lruvec_config cfg = { .ops = &ops, .flags = flags };

	assert_non_null(fx);
	cfg.priv = fx;
	assert_int_equal(rcl_lruvec_init(&fx->lv, &cfg), 0);
	return fx;
}

static void fixture_free(struct fixture *fx)
{
	unsigned i;

	for (i = 0; i < NOBJ; i++) {
		if (fx->objs[i].cached)
			assert_int_equal(rcl_lruvec_del(&fx->lv,
							&fx->objs[i].lru), 0);
	}
	assert_int_equal(rcl_lruvec_destroy(&fx->lv), 0);
	free(fx);
}

static int setup_kernel(void **state)
{
	*state = fixture_new(RCL_LRUVEC_KERNEL);
	return 0;
}

static int setup_default(void **state)
{
	*state = fixture_new(0);
	return 0;
}

static int teardown(void **state)
{
	fixture_free(*state);
	return 0;
}

/* Add object @i (with its shadow, if any); return the outcome bits. */
static unsigned add(struct fixture *fx, unsigned i, unsigned flags)
{
	struct obj *o = &fx->objs[i];
	unsigned out = ~0u;

	rcl_lru_node_init(&o->lru);
	assert_int_equal(rcl_lruvec_add_refault(&fx->lv, &o->lru, RCL_LRU_FILE,
						1, flags | RCL_LRU_ADD_NOBATCH,
						o->shadow, &out),
			 0);
	o->cached = true;
	o->shadow = 0;
	return out;
}

static void shrink_inactive(struct fixture *fx, size_t nr)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = nr };

	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
}

static void shrink_active(struct fixture *fx, size_t nr)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = nr };

	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, &sc), 0);
}

static uint64_t age(struct fixture *fx)
{
	struct rcl_workingset_stats ws;

	assert_int_equal(rcl_lruvec_workingset_stats(&fx->lv, &ws), 0);
	return ws.nonresident_age;
}

/* ------------------------------------------------------------------------- */
/* Shadows                                                                    */
/* ------------------------------------------------------------------------- */

static void test_ws_shadow_is_tagged_and_distinct(void **state)
{
	struct fixture *fx = *state;
	unsigned i;

	for (i = 0; i < 4; i++)
		assert_int_equal(add(fx, i, 0), 0);	/* no shadow: plain add */
	shrink_inactive(fx, 4);
	assert_int_equal(fx->nr_evicted, 4);
	for (i = 0; i < 4; i++) {
		assert_false(fx->objs[i].cached);
		assert_true(rcl_shadow_is_valid(fx->objs[i].shadow));
		/* The clock moved one eviction between them. */
		if (i)
			assert_int_equal(fx->objs[i].shadow -
						 fx->objs[i - 1].shadow,
					 1);
	}
	assert_int_equal(age(fx), 4);
	assert_false(rcl_shadow_is_valid(0));
	assert_false(rcl_shadow_is_valid(0x7fffffffffffffffull));
}

/* ------------------------------------------------------------------------- */
/* Refault distance (kernel parity)                                           */
/* ------------------------------------------------------------------------- */

/*
 * 8 objects made active, object 100 evicted, then more evictions until its
 * refault distance is @d (the clock is read before the eviction that it then
 * advances, so an object refaulting right after its eviction is at distance
 * 1), against a workingset of the 8 active objects.
 */
static unsigned refault_at_distance(struct fixture *fx, unsigned d)
{
	unsigned i;

	for (i = 0; i < 8; i++)
		add(fx, i, RCL_LRU_ADD_ACTIVE);
	add(fx, 100, 0);
	shrink_inactive(fx, 1);
	assert_false(fx->objs[100].cached);
	for (i = 1; i < d; i++) {
		add(fx, 100 + i, 0);
		shrink_inactive(fx, 1);
	}
	return add(fx, 100, 0);
}

static void test_ws_kernel_activates_within_workingset(void **state)
{
	struct fixture *fx = *state;
	unsigned out = refault_at_distance(fx, 8);

	assert_int_equal(out, RCL_REFAULT_REFAULT | RCL_REFAULT_ACTIVATE);
	assert_int_equal(rcl_lru_node_flags(&fx->objs[100].lru) &
				 RCL_LRU_F_ACTIVE,
			 RCL_LRU_F_ACTIVE);
	assert_int_equal(rcl_lruvec_count(&fx->lv, ACTIVE, NULL), 9);
}

static void test_ws_kernel_does_not_activate_beyond(void **state)
{
	struct fixture *fx = *state;
	struct rcl_workingset_stats ws;
	unsigned out = refault_at_distance(fx, 9);

	assert_int_equal(out, RCL_REFAULT_REFAULT);
	assert_int_equal(rcl_lruvec_count(&fx->lv, INACTIVE, NULL), 1);
	assert_int_equal(rcl_lruvec_workingset_stats(&fx->lv, &ws), 0);
	assert_int_equal(ws.refault, 1);
	assert_int_equal(ws.activate, 0);
	assert_int_equal(ws.restore, 0);
	assert_int_equal(ws.nonresident_age, 9);	/* 9 evictions */
	/* Kernel parity never adapts. */
	assert_int_equal(rcl_lruvec_inactive_target(&fx->lv, RCL_LRU_FILE), 0);
}

/* An activation on refault ages the clock by one. */
static void test_ws_activation_ages_the_clock(void **state)
{
	struct fixture *fx = *state;
	uint64_t before;

	refault_at_distance(fx, 1);
	before = age(fx);
	assert_int_equal(before, 2);	/* 1 eviction + 1 activation */
}

/*
 * So does a dirty object that reclaim meets at the inactive tail: it is
 * flagged for reclaim when clean and activated (counted so), and like every
 * activation it ticks the clock (the kernel's move_folios_to_lru() ages the
 * nonresident clock for each folio shrink_folio_list() activated, dirty or
 * not), as an ACTIVATE answer does.
 */
static void test_ws_dirty_activation_ages_the_clock(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 1 };
	struct rcl_lruvec_type_stats st;

	add(fx, 0, 0);
	assert_int_equal(rcl_lruvec_set_dirty(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(age(fx), 0);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
	assert_int_equal(fx->nr_evicted, 0);
	assert_int_equal(sc.nr_dirty, 1);
	assert_int_equal(sc.nr_activated, 1);
	assert_int_equal(rcl_lruvec_stats(&fx->lv, RCL_LRU_FILE, &st), 0);
	assert_int_equal(st.activated, 1);
	assert_int_equal(rcl_lruvec_count(&fx->lv, ACTIVE, NULL), 1);
	assert_int_equal(age(fx), 1);	/* one activation */
}

/* A deactivated object carries the workingset bit: its refault restores. */
static void test_ws_restore_feeds_cost(void **state)
{
	struct fixture *fx = *state;
	struct rcl_workingset_stats ws;
	uint64_t cost0 = rcl_lruvec_cost(&fx->lv, RCL_LRU_FILE);
	unsigned out;

	add(fx, 0, RCL_LRU_ADD_ACTIVE);
	shrink_active(fx, 1);		/* unreferenced: deactivated */
	assert_int_equal(rcl_lruvec_count(&fx->lv, INACTIVE, NULL), 1);
	shrink_inactive(fx, 1);
	assert_int_equal(fx->nr_ws_flag, 1);
	add(fx, 5, RCL_LRU_ADD_ACTIVE);	/* a workingset of 1: distance 1 fits */
	out = add(fx, 0, 0);
	assert_int_equal(out, RCL_REFAULT_REFAULT | RCL_REFAULT_ACTIVATE |
				      RCL_REFAULT_RESTORE);
	assert_int_equal(rcl_lruvec_workingset_stats(&fx->lv, &ws), 0);
	assert_int_equal(ws.restore, 1);
	assert_true(rcl_lruvec_cost(&fx->lv, RCL_LRU_FILE) > cost0);
}

/*
 * The workingset bit on a refault too far to activate: no restore and no
 * cost (the kernel counts WORKINGSET_RESTORE only for a recent refault), so
 * restore <= activate.
 */
static void test_ws_far_refault_of_an_active_object_is_no_restore(void **state)
{
	struct fixture *fx = *state;
	struct rcl_workingset_stats ws;
	uint64_t cost0;
	unsigned out;

	add(fx, 0, RCL_LRU_ADD_ACTIVE);
	shrink_active(fx, 1);		/* unreferenced: deactivated */
	shrink_inactive(fx, 1);
	assert_int_equal(fx->nr_ws_flag, 1);
	cost0 = rcl_lruvec_cost(&fx->lv, RCL_LRU_FILE);
	out = add(fx, 0, 0);		/* distance 1, a workingset of 0 */
	assert_int_equal(out, RCL_REFAULT_REFAULT);
	assert_int_equal(rcl_lruvec_workingset_stats(&fx->lv, &ws), 0);
	assert_int_equal(ws.refault, 1);
	assert_int_equal(ws.activate, 0);
	assert_int_equal(ws.restore, 0);
	assert_int_equal(rcl_lruvec_cost(&fx->lv, RCL_LRU_FILE), cost0);
}

/* Another lruvec's shadow, or another type's: a refault, never activated. */
static void test_ws_foreign_shadow_does_not_activate(void **state)
{
	struct fixture *fx = *state;
	struct fixture *other = fixture_new(RCL_LRUVEC_KERNEL);
	unsigned out;

	add(fx, 2, RCL_LRU_ADD_ACTIVE);	/* a workingset for distance 1 */
	add(other, 0, 0);
	shrink_inactive(other, 1);
	assert_true(rcl_shadow_is_valid(other->objs[0].shadow));
	fx->objs[0].shadow = other->objs[0].shadow;
	out = add(fx, 0, 0);	/* distance would be tiny: still no */
	assert_int_equal(out, RCL_REFAULT_REFAULT);

	/* Same lruvec, other type. */
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[0].lru), 0);
	fx->objs[0].cached = false;
	add(fx, 1, 0);
	shrink_inactive(fx, 1);
	rcl_lru_node_init(&fx->objs[1].lru);
	assert_int_equal(rcl_lruvec_add_refault(&fx->lv, &fx->objs[1].lru,
						RCL_LRU_ANON, 1,
						RCL_LRU_ADD_NOBATCH,
						fx->objs[1].shadow, &out),
			 0);
	fx->objs[1].cached = true;
	assert_int_equal(out, RCL_REFAULT_REFAULT);
	fixture_free(other);
}

/* Unevictable wins over an activation on refault. */
/*
 * A refault inside the shrink pass that evicted the object (from a later
 * evict callback of the same pass; a thread racing the pass sees the same):
 * the shadow is stamped with the clock the pass will leave, ahead of the
 * shared clock until the pass ends.  The distance is 0, so the object is
 * activated (16 active objects: kernel rule), not judged 2^44 away.
 */
struct inpass {
	struct rcl_lruvec lv;
	struct obj objs[24];
	unsigned nr_evicted;
	int victim;		/* index of the object evicted second */
	unsigned out;		/* its refault's outcome */
};

static enum rcl_evict_status inpass_evict(struct rcl_lru_node *node,
					  struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);
	struct inpass *ip = ctl->priv;

	o->cached = false;
	o->shadow = ctl->shadow;
	if (ip->nr_evicted++ == 1) {
		ip->victim = (int)(o - ip->objs);
	} else if (ip->nr_evicted == 3) {
		struct obj *v = &ip->objs[ip->victim];

		rcl_lru_node_init(&v->lru);
		assert_int_equal(rcl_lruvec_add_refault(
					 &ip->lv, &v->lru, RCL_LRU_FILE, 1,
					 RCL_LRU_ADD_NOBATCH, v->shadow,
					 &ip->out),
				 0);
		v->cached = true;
		v->shadow = 0;
	}
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops inpass_ops = { .evict = inpass_evict };

static void test_ws_refault_within_the_pass(void **state)
{
	struct inpass *ip = calloc(1, sizeof(*ip));
	struct rcl_lruvec_config cfg = { .ops = &inpass_ops,
					 .flags = RCL_LRUVEC_KERNEL };
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 4 };
	unsigned i;

	(void)state;
	assert_non_null(ip);
	cfg.priv = ip;
	ip->out = ~0u;
	assert_int_equal(rcl_lruvec_init(&ip->lv, &cfg), 0);
	for (i = 0; i < 20; i++) {
		rcl_lru_node_init(&ip->objs[i].lru);
		assert_int_equal(rcl_lruvec_add(&ip->lv, &ip->objs[i].lru,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH |
							(i < 16 ? RCL_LRU_ADD_ACTIVE
								: 0)),
				 0);
		ip->objs[i].cached = true;
	}
	assert_int_equal(rcl_lruvec_shrink_inactive(&ip->lv, &sc), 0);
	assert_int_equal(ip->nr_evicted, 4);
	/*
	 * Evicted 2nd, its shadow 1 ahead of the shared clock when it
	 * refaulted (the 1st eviction's shadow equals the clock).
	 */
	assert_int_equal(ip->out, RCL_REFAULT_REFAULT | RCL_REFAULT_ACTIVATE);
	assert_int_equal(rcl_lruvec_count(&ip->lv, ACTIVE, NULL), 17);
	for (i = 0; i < 20; i++) {
		if (ip->objs[i].cached)
			assert_int_equal(rcl_lruvec_del(&ip->lv,
							&ip->objs[i].lru), 0);
	}
	assert_int_equal(rcl_lruvec_destroy(&ip->lv), 0);
	free(ip);
}

/*
 * A shadow of a destroyed lruvec, refaulting into a new lruvec that took
 * the same id, carries a clock the new one has not reached.  The rule for
 * shadows stamped ahead of the clock within a pass (distance 0) used to
 * cover it too, so it was always activated; it is taken as the oldest now.
 * RCL_LRUVEC_KERNEL: only the distance decides (no active object: a
 * workingset of 0, so only distance 0 would activate).
 */
static void test_ws_stale_shadow_of_a_reused_id_is_old(void **state)
{
	struct fixture *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct rcl_lruvec_config cfg = { .ops = &ops,
					 .flags = RCL_LRUVEC_KERNEL };
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 200 };
	struct rcl_lruvec t;
	struct rcl_lru_node x;
	unsigned ida, tries, i, out = ~0u;
	uint64_t stale;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	cfg.priv = a;
	assert_int_equal(rcl_lruvec_init(&a->lv, &cfg), 0);
	ida = rcl_lruvec_id(&a->lv);
	for (i = 0; i < 200; i++) {
		rcl_lru_node_init(&a->objs[i].lru);
		assert_int_equal(rcl_lruvec_add(&a->lv, &a->objs[i].lru,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH),
				 0);
	}
	assert_int_equal(rcl_lruvec_shrink_inactive(&a->lv, &sc), 0);
	assert_int_equal(a->nr_evicted, 200);
	stale = a->objs[199].shadow;	/* the clock of A is 200 */
	assert_int_equal(rcl_lruvec_destroy(&a->lv), 0);
	/* Take ids until the new lruvec has A's (bounded: 2^16 ids). */
	cfg.priv = b;
	for (tries = 0; tries < (1u << 17); tries++) {
		assert_int_equal(rcl_lruvec_init(&t, &cfg), 0);
		if (rcl_lruvec_id(&t) == ida)
			break;
		assert_int_equal(rcl_lruvec_destroy(&t), 0);
	}
	assert_int_equal(rcl_lruvec_id(&t), ida);
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&b->objs[i].lru);
		assert_int_equal(rcl_lruvec_add(&t, &b->objs[i].lru,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH),
				 0);
	}
	rcl_lru_node_init(&x);
	assert_int_equal(rcl_lruvec_add_refault(&t, &x, RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH, stale,
						&out),
			 0);
	assert_int_equal(out, RCL_REFAULT_REFAULT);
	assert_int_equal(rcl_lruvec_count(&t, ACTIVE, NULL), 0);
	assert_int_equal(rcl_lruvec_del(&t, &x), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(rcl_lruvec_del(&t, &b->objs[i].lru), 0);
	assert_int_equal(rcl_lruvec_destroy(&t), 0);
	free(a);
	free(b);
}

static void test_ws_unevictable_wins(void **state)
{
	struct fixture *fx = *state;
	unsigned out;

	add(fx, 1, RCL_LRU_ADD_ACTIVE);
	add(fx, 0, 0);
	shrink_inactive(fx, 1);
	out = add(fx, 0, RCL_LRU_ADD_UNEVICTABLE);
	assert_true(out & RCL_REFAULT_ACTIVATE);
	assert_int_equal(rcl_lruvec_count(&fx->lv, RCL_LRU_UNEVICTABLE, NULL),
			 1);
	assert_int_equal(rcl_lruvec_count(&fx->lv, ACTIVE, NULL), 1);
}

static void test_ws_errors(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec dead;
	struct rcl_workingset_stats ws;
	struct rcl_lru_node n;
	unsigned out = 123;

	memset(&dead, 0, sizeof(dead));
	rcl_lru_node_init(&n);
	assert_int_equal(rcl_lruvec_add_refault(NULL, &n, 0, 1, 0, 0, &out),
			 -EINVAL);
	assert_int_equal(out, 0);	/* written even on error */
	assert_int_equal(rcl_lruvec_add_refault(&dead, &n, 0, 1, 0, 0, NULL),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_add_refault(&fx->lv, NULL, 0, 1, 0, 0,
						NULL),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_add_refault(&fx->lv, &n, 2, 1, 0, 0, NULL),
			 -EINVAL);	/* two types by default */
	/* A listed node: as rcl_lruvec_add(), and no counter moves. */
	add(fx, 0, 0);
	assert_int_equal(rcl_lruvec_add_refault(&fx->lv, &fx->objs[0].lru, 0,
						1, RCL_LRU_ADD_NOBATCH,
						RCL_SHADOW_TAG, &out),
			 -EBUSY);
	assert_int_equal(rcl_lruvec_workingset_stats(&fx->lv, &ws), 0);
	assert_int_equal(ws.refault, 0);

	assert_int_equal(rcl_lruvec_workingset_stats(NULL, &ws), -EINVAL);
	assert_int_equal(rcl_lruvec_workingset_stats(&fx->lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_workingset_stats(&dead, &ws), -EINVAL);
	assert_int_equal(rcl_lruvec_inactive_target(NULL, 0), 0);
	assert_int_equal(rcl_lruvec_inactive_target(&fx->lv, 9), 0);

	{
		struct rcl_lruvec lv;
		struct rcl_lruvec_config cfg = { .flags = 1u << 7 };

		assert_int_equal(rcl_lruvec_init(&lv, &cfg), -EINVAL);
	}
}

/* ------------------------------------------------------------------------- */
/* The adaptive target                                                        */
/* ------------------------------------------------------------------------- */

static unsigned target(struct fixture *fx)
{
	return rcl_lruvec_inactive_target(&fx->lv, RCL_LRU_FILE);
}

/* Without refaults: the kernel's rule, exactly. */
static void test_ws_adaptive_starts_as_kernel(void **state)
{
	struct fixture *fx = *state;
	unsigned i;

	for (i = 0; i < 8; i++)
		add(fx, i, i < 5 ? RCL_LRU_ADD_ACTIVE : 0);
	assert_int_equal(target(fx), 0);
	/* 3 inactive < 5 active: low by the ratio rule (ratio 1). */
	assert_true(rcl_lruvec_inactive_is_low(&fx->lv, RCL_LRU_FILE));
	add(fx, 8, 0);
	add(fx, 9, 0);
	assert_false(rcl_lruvec_inactive_is_low(&fx->lv, RCL_LRU_FILE));
}

/*
 * The first refault starts the target at 2 %; far refaults do not move it;
 * inactive_is_low then follows the share.
 */
static void test_ws_adaptive_first_refault_sets_target(void **state)
{
	struct fixture *fx = *state;
	unsigned i, out;

	for (i = 0; i < 100; i++)
		add(fx, i, 0);
	shrink_inactive(fx, 1);		/* object 0 out */
	for (i = 100; i < 160; i++) {	/* 60 more evictions: distance 60 */
		add(fx, i, 0);
		shrink_inactive(fx, 1);
	}
	out = add(fx, 0, 0);		/* 100 cached, 60 > 100 / 2: no ghost hit */
	assert_int_equal(target(fx), 1311);
	/* The active list (0) is below its 98 %: the room rule activates. */
	assert_int_equal(out, RCL_REFAULT_REFAULT | RCL_REFAULT_ACTIVATE);
	/* 99 inactive of 100: not low at 2 %; one inactive of 100 is. */
	assert_false(rcl_lruvec_inactive_is_low(&fx->lv, RCL_LRU_FILE));
}

/* A close refault of a never-active object grows the share (B1 hit). */
static void test_ws_adaptive_b1_hit_grows(void **state)
{
	struct fixture *fx = *state;
	unsigned i, t0;

	for (i = 0; i < 100; i++)
		add(fx, i, 0);
	shrink_inactive(fx, 2);		/* objects 0 and 1 out */
	add(fx, 100, 0);
	add(fx, 101, 0);		/* 100 cached again */
	add(fx, 0, 0);			/* distance 1 <= 50: B1 hit */
	t0 = target(fx);
	/*
	 * 1311 + 2 x 1 x 65536 / 100 (the weight before the add; b1 = b2 = 1
	 * before any estimate).
	 */
	assert_int_equal(t0, 1311 + (2 * 65536) / 100);
	add(fx, 1, 0);			/* and again */
	assert_true(target(fx) > t0);
}

/* A close refault of an object that had been active shrinks it (B2 hit). */
static void test_ws_adaptive_b2_hit_shrinks(void **state)
{
	struct fixture *fx = *state;
	unsigned i, t1, out;

	for (i = 0; i < 20; i++)
		add(fx, i, 0);
	shrink_inactive(fx, 1);
	out = add(fx, 0, 0);		/* B1 hit: grows; room: activated */
	assert_int_equal(out, RCL_REFAULT_REFAULT | RCL_REFAULT_ACTIVATE);
	t1 = target(fx);
	assert_true(t1 > 1311);
	shrink_active(fx, 1);		/* deactivated: the workingset bit */
	shrink_inactive(fx, 20);	/* everything out, object 0 last */
	assert_false(fx->objs[0].cached);
	assert_int_equal(fx->nr_ws_flag, 1);
	for (i = 20; i < 30; i++)
		add(fx, i, 0);
	out = add(fx, 0, 0);		/* distance 1 <= 10 / 2 */
	assert_true(out & RCL_REFAULT_RESTORE);
	assert_true(target(fx) < t1);
}

/* Evict the inactive tail and refault it at once; return it. */
static unsigned evict_and_refault(struct fixture *fx)
{
	unsigned i;

	fx->nr_evicted = 0;
	shrink_inactive(fx, 1);
	assert_int_equal(fx->nr_evicted, 1);
	for (i = 0; i < NOBJ; i++) {
		if (!fx->objs[i].cached && fx->objs[i].shadow) {
			add(fx, i, 0);
			return i;
		}
	}
	fail();
	return 0;
}

/* The share never leaves [1 %, 99 %]. */
static void test_ws_adaptive_bounds(void **state)
{
	struct fixture *fx = *state;
	unsigned i;

	for (i = 0; i < 10; i++)
		add(fx, i, 0);
	/*
	 * Close B1 hits: a new object in, the oldest never-active one out and
	 * straight back (activated by the room rule, so it stays).
	 */
	for (i = 10; i < 210; i++) {
		add(fx, i, 0);
		evict_and_refault(fx);
	}
	assert_int_equal(target(fx), 65536 - 655);
	/* Close B2 hits: everything deactivated, then refaulted at once. */
	while (rcl_lruvec_count(&fx->lv, ACTIVE, NULL))
		shrink_active(fx, 64);
	for (i = 0; i < 200; i++)
		evict_and_refault(fx);
	assert_int_equal(target(fx), 655);
}

/*
 * A ghost hit's step, 2 x weight x max(1, b2 / b1) / size in 1/65536ths of
 * the size, with heavy objects and a lopsided ghost ratio: 100,000 active
 * objects of weight 2^32 - 1 (a size of about 2^48.6), b2 = 40,000 (objects
 * evicted with their referenced bit), b1 = 1, then a B1 hit of weight
 * 2^32 - 1.  The step is about 0.8 x 65536; the product scaled by 2^16
 * before the division does not fit in 64 bits.
 */
#define HEAVY_NR 100000u
#define GHOST_NR 40000u
static void test_ws_adaptive_step_of_heavy_objects(void **state)
{
	struct fixture *fx = fixture_new(0);
	struct obj *big = calloc(HEAVY_NR + GHOST_NR + 2, sizeof(*big));
	struct obj *x = &big[HEAVY_NR + GHOST_NR], *z = x + 1;
	const uint32_t w = UINT32_MAX;
	uint64_t in, act, shadow;
	unsigned i, t0, t1, out;
	__extension__ typedef unsigned __int128 u128;
	u128 want;

	(void)state;
	assert_non_null(big);
	for (i = 0; i < HEAVY_NR; i++) {
		assert_int_equal(rcl_lruvec_add(&fx->lv, &big[i].lru,
						RCL_LRU_FILE, w,
						RCL_LRU_ADD_ACTIVE |
							RCL_LRU_ADD_NOBATCH),
				 0);
		big[i].cached = true;
	}
	/* A first own refault starts the target (and the ghost counts). */
	assert_int_equal(rcl_lruvec_add(&fx->lv, &x->lru, RCL_LRU_FILE, 1,
					RCL_LRU_ADD_NOBATCH),
			 0);
	shrink_inactive(fx, 1);
	assert_false(x->cached);
	shadow = x->shadow;
	rcl_lru_node_init(&x->lru);
	assert_int_equal(rcl_lruvec_add_refault(&fx->lv, &x->lru, RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH, shadow,
						&out),
			 0);
	x->cached = true;
	assert_true(target(fx) != 0);
	/* B2: evicted with the referenced bit (hit once). */
	for (i = HEAVY_NR; i < HEAVY_NR + GHOST_NR; i++) {
		assert_int_equal(rcl_lruvec_add(&fx->lv, &big[i].lru,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH),
				 0);
		assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv,
							  &big[i].lru),
				 0);
	}
	shrink_inactive(fx, GHOST_NR);
	for (i = HEAVY_NR; i < HEAVY_NR + GHOST_NR; i++)
		assert_false(big[i].cached);
	/* B1: one evicted unreferenced, refaulting at once, heavy. */
	assert_int_equal(rcl_lruvec_add(&fx->lv, &z->lru, RCL_LRU_FILE, 1,
					RCL_LRU_ADD_NOBATCH),
			 0);
	z->cached = true;
	shrink_inactive(fx, 1);
	assert_false(z->cached);
	shadow = z->shadow;
	rcl_lruvec_count(&fx->lv, INACTIVE, &in);
	rcl_lruvec_count(&fx->lv, ACTIVE, &act);
	t0 = target(fx);
	rcl_lru_node_init(&z->lru);
	assert_int_equal(rcl_lruvec_add_refault(&fx->lv, &z->lru, RCL_LRU_FILE,
						w, RCL_LRU_ADD_NOBATCH, shadow,
						&out),
			 0);
	z->cached = true;
	t1 = target(fx);
	want = (u128)w * 2 * GHOST_NR * 65536 / (in + act);
	assert_true(want > 50000 && want < 60000);
	assert_int_equal(t1 - t0, (unsigned)want);

	for (i = 0; i < HEAVY_NR + GHOST_NR + 2; i++)
		if (big[i].cached)
			assert_int_equal(rcl_lruvec_del(&fx->lv, &big[i].lru),
					 0);
	free(big);
	fixture_free(fx);
}

/*
 * Run a loop over 4 x capacity objects, 10 times, through a cache of
 * @capacity on @fx (reclaim: age the active list when the inactive one is
 * low, then evict the inactive tail); return the hits.
 */
static unsigned loop_hits(struct fixture *fx, unsigned capacity)
{
	unsigned pass, i, hits = 0, cached = 0;

	for (pass = 0; pass < 10; pass++) {
		for (i = 0; i < 4 * capacity; i++) {
			struct obj *o = &fx->objs[i];

			if (o->cached) {
				assert_int_equal(rcl_lruvec_mark_accessed(
							 &fx->lv, &o->lru),
						 0);
				hits++;
				continue;
			}
			add(fx, i, 0);
			if (++cached <= capacity)
				continue;
			if (rcl_lruvec_inactive_is_low(&fx->lv, RCL_LRU_FILE))
				shrink_active(fx, 1);
			fx->nr_evicted = 0;
			while (!fx->nr_evicted) {
				shrink_inactive(fx, 1);
				if (!fx->nr_evicted)
					shrink_active(fx, 1);
			}
			cached--;
		}
	}
	return hits;
}

/*
 * A loop larger than the cache: LRU and the kernel's rule keep nothing;
 * the room rule keeps a stable 98 % of the cache on the active list.
 */
static void test_ws_adaptive_loop_keeps_a_part(void **state)
{
	struct fixture *fx = *state;
	struct fixture *k = fixture_new(RCL_LRUVEC_KERNEL);
	unsigned ahits = loop_hits(fx, 50), khits = loop_hits(k, 50);

	assert_int_equal(khits, 0);
	/* 8 passes after the first two fill it, ~49 hits each. */
	assert_true(ahits >= 8 * 45);
	assert_true(ahits <= 10 * 50);
	fixture_free(k);
}

/* ------------------------------------------------------------------------- */
/* The shadow limit                                                           */
/* ------------------------------------------------------------------------- */

struct shadows {
	struct rcl_shadow_limit *limit;
	unsigned long asked;
	unsigned calls;
};

static unsigned long drop(void *priv, unsigned long nr)
{
	struct shadows *s = priv;

	s->asked += nr;
	s->calls++;
	rcl_shadow_limit_add(s->limit, -(int64_t)nr);
	return nr;
}

static const struct rcl_shadow_ops shadow_ops = { .drop = drop };

static void test_ws_shadow_limit(void **state)
{
	struct rcl_shrinker_registry *reg;
	struct shadows s = { 0 };
	struct rcl_shrink_result res = { 0 };

	(void)state;
	assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
	assert_int_equal(rcl_shadow_limit_new(reg, 600, &shadow_ops, &s,
					      &s.limit),
			 0);
	rcl_shadow_limit_add(s.limit, 500);
	assert_int_equal(rcl_shadow_limit_count(s.limit), 500);
	/* Under the quota: nothing is reclaimable, drop is never asked. */
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 0, ~0ull, &res),
			 0);
	assert_int_equal(s.calls, 0);
	/* 1000: an excess of 400; seeks = 0 asks for half of it a call. */
	rcl_shadow_limit_add(s.limit, 500);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 12, ~0ull, &res),
			 0);
	assert_int_equal(s.asked, 200);
	assert_int_equal(rcl_shadow_limit_count(s.limit), 800);
	/* Repeated, it converges on the quota and never below it. */
	for (int i = 0; i < 64; i++)
		assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 12,
							      ~0ull, NULL),
				 0);
	assert_true(rcl_shadow_limit_count(s.limit) >= 600);
	assert_true(rcl_shadow_limit_count(s.limit) <= 602);

	/* A negative balance reads as 0. */
	rcl_shadow_limit_add(s.limit, -5000);
	assert_int_equal(rcl_shadow_limit_count(s.limit), 0);

	/* Errors. */
	assert_int_equal(rcl_shadow_limit_new(NULL, 1, &shadow_ops, &s,
					      &s.limit),
			 -EINVAL);
	assert_int_equal(rcl_shadow_limit_new(reg, 1, NULL, &s, &s.limit),
			 -EINVAL);
	assert_int_equal(rcl_shadow_limit_new(reg, 1, &shadow_ops, &s, NULL),
			 -EINVAL);
	{
		static const struct rcl_shadow_ops nodrop = { 0 };
		struct rcl_shadow_limit *l = NULL;

		assert_int_equal(rcl_shadow_limit_new(reg, 1, &nodrop, &s, &l),
				 -EINVAL);
		assert_null(l);
	}
	assert_int_equal(rcl_shadow_limit_count(NULL), 0);
	rcl_shadow_limit_add(NULL, 1);	/* a no-op */
	assert_int_equal(rcl_shadow_limit_free(NULL), 0);

	assert_int_equal(rcl_shrinker_registry_free(reg), -EBUSY);
	assert_int_equal(rcl_shadow_limit_free(s.limit), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_ws_shadow_is_tagged_and_distinct, setup_kernel,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_kernel_activates_within_workingset,
			setup_kernel, teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_kernel_does_not_activate_beyond, setup_kernel,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_activation_ages_the_clock, setup_kernel,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_dirty_activation_ages_the_clock, setup_kernel,
			teardown),
		cmocka_unit_test_setup_teardown(test_ws_restore_feeds_cost,
						setup_kernel, teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_far_refault_of_an_active_object_is_no_restore,
			setup_kernel, teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_foreign_shadow_does_not_activate, setup_kernel,
			teardown),
		cmocka_unit_test(test_ws_refault_within_the_pass),
		cmocka_unit_test(test_ws_stale_shadow_of_a_reused_id_is_old),
		cmocka_unit_test_setup_teardown(test_ws_unevictable_wins,
						setup_kernel, teardown),
		cmocka_unit_test_setup_teardown(test_ws_errors, setup_default,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_adaptive_starts_as_kernel, setup_default,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_adaptive_first_refault_sets_target,
			setup_default, teardown),
		cmocka_unit_test_setup_teardown(test_ws_adaptive_b1_hit_grows,
						setup_default, teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_adaptive_b2_hit_shrinks, setup_default,
			teardown),
		cmocka_unit_test_setup_teardown(test_ws_adaptive_bounds,
						setup_default, teardown),
		cmocka_unit_test_setup_teardown(
			test_ws_adaptive_loop_keeps_a_part, setup_default,
			teardown),
		cmocka_unit_test(test_ws_adaptive_step_of_heavy_objects),
		cmocka_unit_test(test_ws_shadow_limit),
	};

	return cmocka_run_group_tests_name("workingset", tests, NULL, NULL);
}
