/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the batched evict callback, &rcl_lruvec_ops.evict_batch
 * (lruvec.h): one call per isolation pass with at most RCL_LRU_BATCH_ISOLATE
 * items, oldest first, each preset to RCL_EVICT_BUSY; the same outcomes as
 * the per-object callback (a differential run of one scripted workload
 * through both); evict not called, and allowed to be NULL; batch_end after
 * it with the FREED count; dirty and writeback nodes kept out of the items
 * (RCL_EVICT_DIRTY with RCL_LRU_SHRINK_WRITE_DIRTY); what the callback may
 * call, nested shrinks included; the shadows it is given; every field of
 * each item's control.  Single-threaded and deterministic: the workload is
 * a fixed-seed script.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "lru_check.h"
#include "test_util.h"

#define NOBJ 96
#define INACTIVE(t) RCL_LRU_LIST((t), 0)
#define ACTIVE(t) RCL_LRU_LIST((t), 1)

/* What the script makes the callback answer for an object. */
enum answer {
	ANS_FREED,
	ANS_BUSY,
	ANS_ACTIVATE,
	ANS_UNSET,	/* batched: leave the preset; per object: BUSY */
	ANS_BOGUS,	/* an unknown status value (77): kept */
};

struct obj {
	int key;
	enum answer answer;
	bool in;		/* on the lruvec (the library holds it) */
	uint64_t shadow;	/* left by its last eviction */
	struct rcl_lru_node lru;
};

/* One object as the callback was told about it (the shadow aside). */
struct seen {
	int key;
	unsigned type;
	uint32_t weight;
	unsigned flags;
	int priority;
	uint64_t context;
};

#define MAX_SEEN 8192
#define MAX_DEPTH 4

struct cache {
	struct rcl_lruvec lv;
	struct obj objs[NOBJ];
	int id;
	struct seen seen[MAX_SEEN];
	size_t nseen;
	size_t evict_calls;		/* per-object callback */
	size_t batch_calls;		/* evict_batch */
	size_t batch_nr[256];		/* nr of each evict_batch call */
	size_t ends;			/* batch_end */
	size_t end_freed[256];		/* nr_freed of each batch_end */
	size_t freed[MAX_DEPTH];	/* FREED answers since the last end */
	int depth;
	bool preset_not_busy;		/* an item was not preset to BUSY */
	bool bad_ctl;			/* lruvec/priv of a control wrong */
	/* Run inside evict_batch before the answers, at depth + 1. */
	void (*hook)(struct cache *c, struct rcl_evict_item *items, size_t nr);
};

/* The order of callbacks across caches (nested shrinks). */
struct event {
	char kind;	/* 'B' evict_batch, 'V' evict, 'E' batch_end */
	int cache;
	size_t n;	/* B: nr, V: key, E: nr_freed */
};

static struct event g_ev[1024];
static size_t g_nev;

static void log_event(char kind, int cache, size_t n)
{
	assert_true(g_nev < sizeof(g_ev) / sizeof(g_ev[0]));
	g_ev[g_nev].kind = kind;
	g_ev[g_nev].cache = cache;
	g_ev[g_nev].n = n;
	g_nev++;
}

static void expect_event(size_t i, char kind, int cache, size_t n)
{
	assert_true(i < g_nev);
	assert_int_equal(g_ev[i].kind, kind);
	assert_int_equal(g_ev[i].cache, cache);
	assert_int_equal(g_ev[i].n, n);
}

/* ------------------------------------------------------------------------- */
/* The callbacks                                                              */
/* ------------------------------------------------------------------------- */

static struct obj *obj_of(struct cache *c, struct rcl_lru_node *n)
{
	struct obj *o = rcl_container_of(n, struct obj, lru);

	assert_true(o >= c->objs && o < c->objs + NOBJ);
	assert_true(o->in);
	return o;
}

static void note_seen(struct cache *c, struct obj *o,
		      const struct rcl_evict_control *ctl)
{
	struct seen *s;

	assert_true(c->nseen < MAX_SEEN);
	s = &c->seen[c->nseen++];
	s->key = o->key;
	s->type = ctl->type;
	s->weight = ctl->weight;
	s->flags = ctl->flags;
	s->priority = ctl->priority;
	s->context = ctl->context;
	if (ctl->lruvec != &c->lv || ctl->priv != c)
		c->bad_ctl = true;
	/* Every object handed over is isolated, whatever the form. */
	assert_true(rcl_lru_node_flags(&o->lru) & RCL_LRU_F_ISOLATED);
	assert_true(rcl_shadow_is_valid(ctl->shadow));
}

/* The script's answer for @o; a FREED object leaves the cache. */
static enum rcl_evict_status judge(struct cache *c, struct obj *o,
				   uint64_t shadow)
{
	switch (o->answer) {
	case ANS_FREED:
		o->in = false;
		o->shadow = shadow;
		c->freed[c->depth]++;
		return RCL_EVICT_FREED;
	case ANS_ACTIVATE:
		return RCL_EVICT_ACTIVATE;
	case ANS_BOGUS:
		return (enum rcl_evict_status)77;
	case ANS_BUSY:
	case ANS_UNSET:
	default:
		return RCL_EVICT_BUSY;
	}
}

static enum rcl_evict_status cb_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct cache *c = ctl->priv;
	struct obj *o = obj_of(c, node);

	c->evict_calls++;
	log_event('V', c->id, (size_t)o->key);
	note_seen(c, o, ctl);
	return judge(c, o, ctl->shadow);
}

static void cb_evict_batch(struct rcl_lruvec *lv, void *priv,
			   struct rcl_evict_item *items, size_t nr)
{
	struct cache *c = priv;
	size_t i;

	assert_ptr_equal(lv, &c->lv);
	assert_true(nr >= 1 && nr <= RCL_LRU_BATCH_ISOLATE);
	if (c->batch_calls < sizeof(c->batch_nr) / sizeof(c->batch_nr[0]))
		c->batch_nr[c->batch_calls] = nr;
	c->batch_calls++;
	log_event('B', c->id, nr);
	for (i = 0; i < nr; i++) {
		if (items[i].status != RCL_EVICT_BUSY)
			c->preset_not_busy = true;
		note_seen(c, obj_of(c, items[i].node), &items[i].ctl);
	}
	if (c->hook) {
		assert_true(c->depth + 1 < MAX_DEPTH);
		c->depth++;
		c->hook(c, items, nr);
		c->depth--;
	}
	for (i = 0; i < nr; i++) {
		struct obj *o = obj_of(c, items[i].node);
		enum rcl_evict_status st = judge(c, o, items[i].ctl.shadow);

		if (o->answer != ANS_UNSET)
			items[i].status = st;
	}
}

static void cb_batch_end(struct rcl_lruvec *lv, void *priv, size_t nr_freed)
{
	struct cache *c = priv;

	assert_ptr_equal(lv, &c->lv);
	/* The batch's kept nodes are back: only a nesting caller's remain. */
	if (c->depth == 0)
		assert_int_equal(rcl_lruvec_nr_isolated(lv), 0);
	assert_int_equal(nr_freed, c->freed[c->depth]);
	c->freed[c->depth] = 0;
	assert_true(c->ends < sizeof(c->end_freed) / sizeof(c->end_freed[0]));
	c->end_freed[c->ends++] = nr_freed;
	log_event('E', c->id, nr_freed);
}

/* Per object; batched (evict set too, and never called); batched only. */
static const struct rcl_lruvec_ops ops_object = {
	.evict = cb_evict, .batch_end = cb_batch_end,
};
static const struct rcl_lruvec_ops ops_both = {
	.evict = cb_evict, .batch_end = cb_batch_end,
	.evict_batch = cb_evict_batch,
};
static const struct rcl_lruvec_ops ops_batch = {
	.batch_end = cb_batch_end, .evict_batch = cb_evict_batch,
};

/* ------------------------------------------------------------------------- */
/* Fixtures                                                                   */
/* ------------------------------------------------------------------------- */

static struct cache *cache_new(const struct rcl_lruvec_ops *ops, int id,
			       unsigned flags)
{
	struct cache *c = calloc(1, sizeof(*c));
	struct rcl_lruvec_config cfg = { .ops = ops, .flags = flags };
	int i;

	assert_non_null(c);
	cfg.priv = c;
	c->id = id;
	for (i = 0; i < NOBJ; i++)
		c->objs[i].key = i;
	assert_int_equal(rcl_lruvec_init(&c->lv, &cfg), 0);
	return c;
}

static void cache_free(struct cache *c)
{
	int i;

	rcl_lru_drain_local();
	for (i = 0; i < NOBJ; i++) {
		if (c->objs[i].in) {
			/* A node under writeback must end it first. */
			if (rcl_lru_node_flags(&c->objs[i].lru) & RCL_LRU_F_WRITEBACK)
				assert_int_equal(rcl_lruvec_writeback_end(
							 &c->lv, &c->objs[i].lru, 0), 0);
			assert_int_equal(rcl_lruvec_del(&c->lv, &c->objs[i].lru), 0);
		}
	}
	assert_int_equal(lru_check_invariants(&c->lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&c->lv), 0);
	free(c);
}

static void setup_events(void)
{
	g_nev = 0;
}

/* Add objs[k] (weight k + 1), unbatched. */
static void add(struct cache *c, int k, unsigned type, unsigned flags)
{
	struct obj *o = &c->objs[k];

	rcl_lru_node_init(&o->lru);
	assert_int_equal(rcl_lruvec_add(&c->lv, &o->lru, type, (uint32_t)k + 1,
					flags | RCL_LRU_ADD_NOBATCH),
			 0);
	o->in = true;
}

static void add_range(struct cache *c, int from, int to, unsigned type,
		      unsigned flags)
{
	for (int k = from; k < to; k++)
		add(c, k, type, flags);
}

static void answer_range(struct cache *c, int from, int to, enum answer a)
{
	for (int k = from; k < to; k++)
		c->objs[k].answer = a;
}

static struct rcl_lru_shrink_control shrink(struct cache *c, unsigned type,
					    size_t nr, unsigned flags)
{
	struct rcl_lru_shrink_control sc = {
		.type = type, .nr_to_scan = nr, .priority = 4,
		.context = 0x77, .flags = flags,
	};

	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &sc), 0);
	return sc;
}

/* Key at position @pos from the tail of list @l, or -1. */
static int key_from_tail(struct cache *c, unsigned l, long pos)
{
	struct rcl_lru_node *head = &c->lv.__lists[l].head, *p;

	for (p = head->__prev; p != head; p = p->__prev)
		if (pos-- == 0)
			return rcl_container_of(p, struct obj, lru)->key;
	return -1;
}

/* ------------------------------------------------------------------------- */
/* The call itself                                                            */
/* ------------------------------------------------------------------------- */

/*
 * 70 objects: passes of 32, 32 and 6 nodes, one evict_batch each, the items
 * oldest first (the order of the per-object calls), each preset to BUSY and
 * followed by one batch_end with the batch's FREED count.  evict is NULL.
 */
static void test_evict_batch_one_call_per_pass_oldest_first(void **state)
{
	struct cache *c = cache_new(&ops_batch, 1, 0);
	struct rcl_lru_shrink_control sc;
	struct rcl_lruvec_type_stats st;
	size_t i, k = 0, ev = 0;
	static const size_t nr[] = { 32, 32, 6 };

	(void)state;
	setup_events();
	add_range(c, 0, 70, RCL_LRU_FILE, 0);
	for (i = 0; i < 70; i++)
		c->objs[i].answer = (enum answer)(i % 3);	/* F, B, A */
	sc = shrink(c, RCL_LRU_FILE, 70, 0);

	assert_int_equal(c->batch_calls, 3);
	assert_int_equal(c->ends, 3);
	assert_false(c->preset_not_busy);
	assert_false(c->bad_ctl);
	assert_int_equal(c->nseen, 70);
	for (i = 0; i < 70; i++)
		assert_int_equal(c->seen[i].key, (int)i);	/* oldest first */
	for (i = 0; i < 3; i++) {
		size_t j, f = 0;

		assert_int_equal(c->batch_nr[i], nr[i]);
		for (j = 0; j < nr[i]; j++, k++)
			f += k % 3 == 0;
		/* batch_end right after its batch, with the FREED count */
		expect_event(ev++, 'B', 1, nr[i]);
		expect_event(ev++, 'E', 1, f);
		assert_int_equal(c->end_freed[i], f);
	}
	assert_int_equal(g_nev, ev);

	/* keys 0, 3, .. 69 freed (24); 1, 4, .. rotated; 2, 5, .. activated */
	assert_int_equal(sc.nr_scanned, 70);
	assert_int_equal(sc.nr_taken, 70);
	assert_int_equal(sc.nr_freed, 24);
	assert_int_equal(sc.nr_rotated, 23);
	assert_int_equal(sc.nr_activated, 23);
	assert_int_equal(sc.weight_freed, 24 * (1 + 70) / 2);	/* 1 + 4 + .. + 70 */
	assert_int_equal(rcl_lruvec_count(&c->lv, INACTIVE(0), NULL), 23);
	assert_int_equal(rcl_lruvec_count(&c->lv, ACTIVE(0), NULL), 23);
	assert_int_equal(rcl_lruvec_nr_isolated(&c->lv), 0);
	assert_int_equal(rcl_lruvec_stats(&c->lv, RCL_LRU_FILE, &st), 0);
	assert_int_equal(st.scanned, 70);
	assert_int_equal(st.freed, 24);
	assert_int_equal(st.weight_freed, sc.weight_freed);
	assert_int_equal(st.rotated, 23);
	assert_int_equal(st.activated, 23);
	/* The last batch's kept nodes are the newest at the inactive head. */
	assert_int_equal(key_from_tail(c, INACTIVE(0), 22), 67);
	assert_int_equal(key_from_tail(c, INACTIVE(0), 0), 1);
	assert_int_equal(lru_check_invariants(&c->lv), 46);
	cache_free(c);
}

/* An item whose status the callback leaves alone is kept, counted rotated. */
static void test_evict_batch_unset_status_is_busy(void **state)
{
	struct cache *c = cache_new(&ops_batch, 1, 0);
	struct rcl_lru_shrink_control sc;
	struct rcl_lruvec_type_stats st;

	(void)state;
	setup_events();
	add_range(c, 0, 10, RCL_LRU_FILE, 0);
	answer_range(c, 0, 10, ANS_UNSET);
	sc = shrink(c, RCL_LRU_FILE, 10, 0);
	assert_int_equal(c->batch_calls, 1);
	assert_int_equal(c->batch_nr[0], 10);
	assert_int_equal(sc.nr_freed, 0);
	assert_int_equal(sc.weight_freed, 0);
	assert_int_equal(sc.nr_rotated, 10);
	assert_int_equal(sc.nr_activated, 0);
	assert_int_equal(c->ends, 1);
	assert_int_equal(c->end_freed[0], 0);
	assert_int_equal(rcl_lruvec_stats(&c->lv, RCL_LRU_FILE, &st), 0);
	assert_int_equal(st.rotated, 10);
	assert_int_equal(st.freed, 0);
	assert_int_equal(rcl_lruvec_count(&c->lv, INACTIVE(0), NULL), 10);
	/* Back at the head in their order: the oldest is the tail again. */
	assert_int_equal(key_from_tail(c, INACTIVE(0), 0), 0);
	assert_int_equal(key_from_tail(c, INACTIVE(0), 9), 9);
	for (int k = 0; k < 10; k++)
		assert_int_equal(rcl_lru_node_flags(&c->objs[k].lru) &
					 (RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED |
					  RCL_LRU_F_ACTIVE),
				 RCL_LRU_F_LISTED);
	cache_free(c);
}

/* ------------------------------------------------------------------------- */
/* The differential run                                                       */
/* ------------------------------------------------------------------------- */

/* The keys of every list of @a and @b are the same, in the same order. */
static void same_lists(struct cache *a, struct cache *b)
{
	for (unsigned l = 0; l < RCL_LRU_NR_LISTS; l++) {
		struct rcl_lru_node *ha = &a->lv.__lists[l].head;
		struct rcl_lru_node *hb = &b->lv.__lists[l].head;
		struct rcl_lru_node *pa = ha->__next, *pb = hb->__next;

		for (; pa != ha && pb != hb; pa = pa->__next, pb = pb->__next)
			assert_int_equal(rcl_container_of(pa, struct obj, lru)->key,
					 rcl_container_of(pb, struct obj, lru)->key);
		assert_true(pa == ha && pb == hb);
	}
}

static void same_state(struct cache *a, struct cache *b)
{
	long na = lru_check_invariants(&a->lv);

	assert_true(na >= 0);
	assert_int_equal(lru_check_invariants(&b->lv), na);
	same_lists(a, b);
	for (unsigned t = 0; t < 2; t++) {
		struct rcl_lruvec_type_stats sa, sb;

		assert_int_equal(rcl_lruvec_stats(&a->lv, t, &sa), 0);
		assert_int_equal(rcl_lruvec_stats(&b->lv, t, &sb), 0);
		assert_memory_equal(&sa, &sb, sizeof(sa));
		assert_int_equal(rcl_lruvec_cost(&a->lv, t),
				 rcl_lruvec_cost(&b->lv, t));
	}
	{
		struct rcl_dirty_stats da, db;
		struct rcl_workingset_stats wa, wb;

		assert_int_equal(rcl_lruvec_dirty_stats(&a->lv, &da), 0);
		assert_int_equal(rcl_lruvec_dirty_stats(&b->lv, &db), 0);
		assert_memory_equal(&da, &db, sizeof(da));
		assert_int_equal(rcl_lruvec_workingset_stats(&a->lv, &wa), 0);
		assert_int_equal(rcl_lruvec_workingset_stats(&b->lv, &wb), 0);
		assert_memory_equal(&wa, &wb, sizeof(wa));
	}
	assert_int_equal(rcl_lruvec_nr_isolated(&a->lv), 0);
	assert_int_equal(rcl_lruvec_nr_isolated(&b->lv), 0);
	for (int k = 0; k < NOBJ; k++) {
		assert_int_equal(a->objs[k].in, b->objs[k].in);
		if (a->objs[k].in)	/* state bits; the lruvec id differs */
			assert_int_equal(rcl_lru_node_flags(&a->objs[k].lru) & 0xffffu,
					 rcl_lru_node_flags(&b->objs[k].lru) & 0xffffu);
	}
	/* The same objects were judged, in the same order, told the same. */
	assert_int_equal(a->nseen, b->nseen);
	assert_memory_equal(a->seen, b->seen, a->nseen * sizeof(a->seen[0]));
	assert_int_equal(a->ends, b->ends);
	assert_memory_equal(a->end_freed, b->end_freed,
			    a->ends * sizeof(a->end_freed[0]));
}

/*
 * One fixed-seed script - adds (both types, some active), single and double
 * touches, deletes, dirtying, writeback start and end (some failing), moves,
 * shrink_active, and shrink_inactive of random sizes, with and without
 * RCL_LRU_SHRINK_WRITE_DIRTY, whose objects answer FREED, BUSY, ACTIVATE,
 * nothing or an unknown value - runs on an lruvec with evict and on one
 * with evict_batch (and evict set, never called).  After every step the two
 * agree on every list's content and order, every counter, the dirty and
 * workingset statistics, every node's state bits, the sequence of objects
 * handed over and what each was told, and each batch_end's count; and
 * every shrink's outputs are the same.
 */
static void test_evict_batch_matches_per_object(void **state)
{
	struct cache *c[2] = { cache_new(&ops_object, 1, RCL_LRUVEC_KERNEL),
			       cache_new(&ops_both, 2, RCL_LRUVEC_KERNEL) };
	uint64_t rng = 0x5eedb47c4ull;
	size_t shrinks = 0, batched_objects = 0, seen_total[2] = { 0, 0 };
	int step, m;

	(void)state;
	setup_events();
	for (step = 0; step < 3000; step++) {
		uint64_t r = rng_next(&rng);
		unsigned op = (unsigned)(r % 100);
		int k = (int)((r >> 8) % NOBJ);
		int rc[2];

		if (op < 25) {				/* add */
			unsigned type = (unsigned)(r >> 16) & 1;
			unsigned fl = ((r >> 17) % 4 == 0) ? RCL_LRU_ADD_ACTIVE : 0;

			if (c[0]->objs[k].in)
				continue;
			if ((r >> 20) & 1)
				fl |= RCL_LRU_ADD_NOBATCH;
			for (m = 0; m < 2; m++) {
				rcl_lru_node_init(&c[m]->objs[k].lru);
				assert_int_equal(rcl_lruvec_add(&c[m]->lv,
								&c[m]->objs[k].lru,
								type,
								1 + (uint32_t)(r >> 24) % 9,
								fl), 0);
				c[m]->objs[k].in = true;
			}
		} else if (op < 45) {			/* one or two touches */
			if (!c[0]->objs[k].in)
				continue;
			for (m = 0; m < 2; m++)
				for (unsigned t = 0; t <= ((r >> 16) & 1); t++)
					assert_int_equal(rcl_lruvec_mark_accessed(
								 &c[m]->lv, &c[m]->objs[k].lru), 0);
		} else if (op < 50) {			/* delete */
			if (!c[0]->objs[k].in)
				continue;
			for (m = 0; m < 2; m++) {
				rc[m] = rcl_lruvec_del(&c[m]->lv, &c[m]->objs[k].lru);
				if (rc[m] == 0)
					c[m]->objs[k].in = false;
			}
			assert_int_equal(rc[0], rc[1]);
		} else if (op < 56) {			/* dirty */
			if (!c[0]->objs[k].in)
				continue;
			for (m = 0; m < 2; m++)
				assert_int_equal(rcl_lruvec_set_dirty(
							 &c[m]->lv, &c[m]->objs[k].lru), 0);
		} else if (op < 60) {			/* writeback start */
			if (!c[0]->objs[k].in)
				continue;
			for (m = 0; m < 2; m++)
				rc[m] = rcl_lruvec_writeback_start(&c[m]->lv,
								   &c[m]->objs[k].lru);
			assert_int_equal(rc[0], rc[1]);
		} else if (op < 65) {			/* writeback end */
			if (!c[0]->objs[k].in)
				continue;
			for (m = 0; m < 2; m++)
				rc[m] = rcl_lruvec_writeback_end(&c[m]->lv,
								 &c[m]->objs[k].lru,
								 (r >> 16) % 3 == 0);
			assert_int_equal(rc[0], rc[1]);
		} else if (op < 70) {			/* moves */
			if (!c[0]->objs[k].in)
				continue;
			for (m = 0; m < 2; m++) {
				struct rcl_lru_node *n = &c[m]->objs[k].lru;

				switch ((r >> 16) % 4) {
				case 0: rc[m] = rcl_lruvec_rotate(&c[m]->lv, n); break;
				case 1: rc[m] = rcl_lruvec_deactivate(&c[m]->lv, n); break;
				case 2: rc[m] = rcl_lruvec_mark_unevictable(&c[m]->lv, n); break;
				default: rc[m] = rcl_lruvec_unmark_unevictable(&c[m]->lv, n); break;
				}
			}
			assert_int_equal(rc[0], rc[1]);
		} else if (op < 76) {			/* shrink_active */
			struct rcl_lru_shrink_control sc[2];

			for (m = 0; m < 2; m++) {
				sc[m] = (struct rcl_lru_shrink_control){
					.type = (unsigned)(r >> 16) & 1,
					.nr_to_scan = 1 + (r >> 24) % 40,
				};
				assert_int_equal(rcl_lruvec_shrink_active(&c[m]->lv,
									  &sc[m]), 0);
			}
			assert_memory_equal(&sc[0], &sc[1], sizeof(sc[0]));
		} else {				/* shrink_inactive */
			struct rcl_lru_shrink_control sc[2];
			uint64_t ar = rng_next(&rng);

			/* This shrink's answers, the same in both. */
			for (int j = 0; j < NOBJ; j++) {
				static const enum answer pick[10] = {
					ANS_FREED, ANS_FREED, ANS_FREED,
					ANS_BUSY, ANS_BUSY, ANS_ACTIVATE,
					ANS_ACTIVATE, ANS_UNSET, ANS_UNSET,
					ANS_BOGUS,
				};
				enum answer a = pick[rng_next(&ar) % 10];

				c[0]->objs[j].answer = c[1]->objs[j].answer = a;
			}
			for (m = 0; m < 2; m++) {
				sc[m] = (struct rcl_lru_shrink_control){
					.type = (unsigned)(r >> 16) & 1,
					.nr_to_scan = 1 + (r >> 24) % 80,
					.priority = (int)((r >> 32) % 13),
					.context = r >> 40,
					.flags = ((r >> 18) % 4 == 0)
							 ? RCL_LRU_SHRINK_WRITE_DIRTY : 0,
				};
				assert_int_equal(rcl_lruvec_shrink_inactive(&c[m]->lv,
									    &sc[m]), 0);
			}
			assert_memory_equal(&sc[0], &sc[1], sizeof(sc[0]));
			shrinks++;
		}
		rcl_lru_drain_local();
		same_state(c[0], c[1]);
		/* Compared: start this step's logs afresh. */
		for (m = 0; m < 2; m++) {
			seen_total[m] += c[m]->nseen;
			c[m]->nseen = 0;
			c[m]->ends = 0;
		}
		g_nev = 0;
	}
	batched_objects = seen_total[1];
	/* evict_batch replaced evict, and was called with real batches. */
	assert_int_equal(c[1]->evict_calls, 0);
	assert_int_equal(c[0]->batch_calls, 0);
	assert_false(c[1]->preset_not_busy);
	assert_false(c[0]->bad_ctl || c[1]->bad_ctl);
	assert_true(c[1]->batch_calls > 100);
	assert_true(batched_objects > 1000);
	assert_int_equal(c[0]->evict_calls, seen_total[1]);
	print_message("differential: %zu shrinks, %zu objects in %zu batches\n",
		      shrinks, batched_objects, c[1]->batch_calls);
	for (m = 0; m < 2; m++)
		cache_free(c[m]);
}

/* ------------------------------------------------------------------------- */
/* evict may be NULL; neither is -EINVAL                                      */
/* ------------------------------------------------------------------------- */

static void test_evict_batch_evict_may_be_null(void **state)
{
	static const struct rcl_lruvec_ops ops_neither = {
		.batch_end = cb_batch_end,
	};
	static const struct rcl_lruvec_ops ops_empty = { 0 };
	const struct rcl_lruvec_ops *none[] = { &ops_neither, &ops_empty, NULL };
	struct cache *c = cache_new(&ops_batch, 1, 0);
	struct rcl_domain_config dcfg = { .budget = 1000 };
	struct rcl_domain *d = NULL;
	struct rcl_reclaim_result res;
	struct rcl_lru_shrink_control sc;
	struct rcl_scan_control ssc = {
		.nr_to_reclaim = 4, .priority = 0, .swappiness = 60,
	};
	size_t calls;

	(void)state;
	setup_events();
	add_range(c, 0, 20, RCL_LRU_FILE, 0);
	answer_range(c, 0, 20, ANS_FREED);

	sc = shrink(c, RCL_LRU_FILE, 2, 0);
	assert_int_equal(sc.nr_freed, 2);
	assert_int_equal(c->batch_calls, 1);

	assert_int_equal(rcl_scan_lruvec(&c->lv, &ssc), 0);
	assert_true(ssc.nr_reclaimed >= 1);
	assert_true(c->batch_calls > 1);

	assert_int_equal(rcl_domain_new(&dcfg, &d), 0);
	assert_int_equal(rcl_domain_attach(d, &c->lv, 0), 0);
	add_range(c, 40, 60, RCL_LRU_FILE, 0);
	answer_range(c, 40, 60, ANS_FREED);
	calls = c->batch_calls;
	assert_int_equal(rcl_domain_reclaim(d, 2, RCL_CTX_CAPABLE, &res), 0);
	assert_true(res.nr_reclaimed >= 2);
	assert_true(c->batch_calls > calls);	/* the domain's pass used it */
	assert_int_equal(c->evict_calls, 0);

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		struct rcl_lruvec lv;
		struct rcl_lruvec_config cfg = { .ops = none[i], .priv = c };
		struct rcl_lru_node n = RCL_LRU_NODE_INIT;
		struct rcl_lru_shrink_control s = { .type = RCL_LRU_FILE,
						    .nr_to_scan = 4 };
		struct rcl_scan_control ss = { .nr_to_reclaim = 4,
					       .swappiness = 60 };

		/* Such an lruvec is valid: it is only never shrunk. */
		assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
		assert_int_equal(rcl_lruvec_add(&lv, &n, RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &s), -EINVAL);
		assert_int_equal(s.nr_scanned, 0);
		assert_int_equal(rcl_scan_lruvec(&lv, &ss), -EINVAL);
		assert_int_equal(ss.nr_scanned, 0);
		assert_int_equal(rcl_domain_attach(d, &lv, 0), -EINVAL);
		assert_int_equal(rcl_lruvec_del(&lv, &n), 0);
		assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	}
	assert_int_equal(c->ends, c->batch_calls);	/* no stray batch_end */

	assert_int_equal(rcl_domain_detach(d, &c->lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	cache_free(c);
}

/* ------------------------------------------------------------------------- */
/* Dirty and writeback nodes                                                  */
/* ------------------------------------------------------------------------- */

static bool seen_key(struct cache *c, size_t from, int key, unsigned *flags)
{
	for (size_t i = from; i < c->nseen; i++)
		if (c->seen[i].key == key) {
			if (flags)
				*flags = c->seen[i].flags;
			return true;
		}
	return false;
}

static void test_evict_batch_skips_dirty_and_writeback(void **state)
{
	struct cache *c = cache_new(&ops_batch, 1, 0);
	struct rcl_lru_shrink_control sc;
	struct rcl_dirty_stats ds;
	unsigned fl = 0;
	size_t from;

	(void)state;
	setup_events();
	/* 0..7: 1 dirty, 4 under writeback, 6 under writeback and dirty. */
	add_range(c, 0, 8, RCL_LRU_FILE, 0);
	answer_range(c, 0, 8, ANS_BUSY);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[1].lru), 0);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[4].lru), 0);
	assert_int_equal(rcl_lruvec_writeback_start(&c->lv, &c->objs[4].lru), 0);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[6].lru), 0);
	assert_int_equal(rcl_lruvec_writeback_start(&c->lv, &c->objs[6].lru), 0);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[6].lru), 0);

	sc = shrink(c, RCL_LRU_FILE, 8, 0);
	assert_int_equal(c->batch_calls, 1);
	assert_int_equal(c->batch_nr[0], 5);
	assert_int_equal(c->nseen, 5);
	assert_int_equal(c->seen[0].key, 0);
	assert_int_equal(c->seen[1].key, 2);
	assert_int_equal(c->seen[2].key, 3);
	assert_int_equal(c->seen[3].key, 5);
	assert_int_equal(c->seen[4].key, 7);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(c->seen[i].flags & RCL_EVICT_DIRTY, 0);
	assert_int_equal(sc.nr_taken, 8);
	assert_int_equal(sc.nr_dirty, 3);
	assert_int_equal(sc.nr_unqueued_dirty, 1);
	assert_int_equal(sc.nr_writeback, 2);
	assert_int_equal(sc.nr_rotated, 5);
	assert_int_equal(sc.nr_activated, 3);	/* moved out of the way */
	assert_int_equal(c->ends, 1);
	assert_int_equal(c->end_freed[0], 0);

	/* A pass of dirty nodes only: no evict_batch, but a batch_end(0). */
	for (int k = 0; k < 8; k++)
		if (k != 1 && k != 4 && k != 6) {
			assert_int_equal(rcl_lruvec_del(&c->lv, &c->objs[k].lru), 0);
			c->objs[k].in = false;
		}
	add_range(c, 10, 12, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[10].lru), 0);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[11].lru), 0);
	sc = shrink(c, RCL_LRU_FILE, 8, 0);
	assert_int_equal(sc.nr_scanned, 2);
	assert_int_equal(sc.nr_dirty, 2);
	assert_int_equal(c->batch_calls, 1);
	assert_int_equal(c->ends, 2);
	assert_int_equal(c->end_freed[1], 0);

	/*
	 * RCL_LRU_SHRINK_WRITE_DIRTY: 20 clean, 21 dirty, 22 under writeback;
	 * the dirty one is an item with RCL_EVICT_DIRTY, the writeback one
	 * is not, and freeing the dirty one takes it out of the dirty counts.
	 */
	add_range(c, 20, 23, RCL_LRU_FILE, 0);
	answer_range(c, 20, 23, ANS_FREED);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[21].lru), 0);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[22].lru), 0);
	assert_int_equal(rcl_lruvec_writeback_start(&c->lv, &c->objs[22].lru), 0);
	assert_int_equal(rcl_lruvec_dirty_stats(&c->lv, &ds), 0);
	assert_int_equal(ds.nr_dirty, 5);	/* 1, 6, 10, 11, 21 (22 is clean) */
	from = c->nseen;
	sc = shrink(c, RCL_LRU_FILE, 3, RCL_LRU_SHRINK_WRITE_DIRTY);
	assert_int_equal(c->batch_calls, 2);
	assert_int_equal(c->batch_nr[1], 2);
	assert_true(seen_key(c, from, 20, &fl));
	assert_int_equal(fl & RCL_EVICT_DIRTY, 0);
	assert_true(seen_key(c, from, 21, &fl));
	assert_int_equal(fl & RCL_EVICT_DIRTY, RCL_EVICT_DIRTY);
	assert_false(seen_key(c, from, 22, NULL));
	assert_int_equal(sc.nr_freed, 2);
	assert_int_equal(sc.nr_writeback, 1);
	assert_int_equal(c->end_freed[2], 2);
	assert_int_equal(rcl_lruvec_dirty_stats(&c->lv, &ds), 0);
	assert_int_equal(ds.nr_dirty, 4);
	cache_free(c);
}

/* ------------------------------------------------------------------------- */
/* What the callback may call                                                 */
/* ------------------------------------------------------------------------- */

static int g_reenter[8];

static void reenter_hook(struct cache *c, struct rcl_evict_item *items,
			 size_t nr)
{
	struct obj spare = { .key = -1 };

	assert_int_equal(nr, 4);
	g_reenter[0] = rcl_lruvec_del(&c->lv, items[0].node);
	g_reenter[1] = rcl_lruvec_del(&c->lv, items[nr - 1].node);
	g_reenter[2] = rcl_lruvec_del_wait(&c->lv, items[1].node);
	g_reenter[3] = rcl_lruvec_set_dirty(&c->lv, items[2].node);
	g_reenter[4] = rcl_lruvec_destroy(&c->lv);
	g_reenter[5] = rcl_lruvec_writeback_start(&c->lv, items[0].node);
	/* Nodes that are not in the batch are the callback's to change. */
	g_reenter[6] = rcl_lruvec_del(&c->lv, &c->objs[5].lru);
	if (g_reenter[6] == 0)
		c->objs[5].in = false;
	rcl_lru_node_init(&spare.lru);
	g_reenter[7] = rcl_lruvec_add(&c->lv, &spare.lru, RCL_LRU_FILE, 1,
				      RCL_LRU_ADD_NOBATCH);
	if (g_reenter[7] == 0)
		assert_int_equal(rcl_lruvec_del(&c->lv, &spare.lru), 0);
}

static void test_evict_batch_del_of_an_item_is_ebusy(void **state)
{
	struct cache *c = cache_new(&ops_batch, 1, 0);
	struct rcl_lru_shrink_control sc;

	(void)state;
	setup_events();
	add_range(c, 0, 6, RCL_LRU_FILE, 0);
	answer_range(c, 0, 6, ANS_BUSY);
	c->hook = reenter_hook;
	sc = shrink(c, RCL_LRU_FILE, 4, 0);
	c->hook = NULL;
	assert_int_equal(g_reenter[0], -EBUSY);
	assert_int_equal(g_reenter[1], -EBUSY);
	assert_int_equal(g_reenter[2], -EDEADLK);
	assert_int_equal(g_reenter[3], -EDEADLK);
	assert_int_equal(g_reenter[4], -EDEADLK);
	assert_int_equal(g_reenter[5], -EBUSY);
	assert_int_equal(g_reenter[6], 0);
	assert_int_equal(g_reenter[7], 0);
	assert_int_equal(sc.nr_rotated, 4);
	/* The refusals changed nothing: items kept, clean, deletable now. */
	assert_int_equal(lru_check_invariants(&c->lv), 5);
	for (int k = 0; k < 4; k++)
		assert_int_equal(rcl_lru_node_flags(&c->objs[k].lru) &
					 (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK |
					  RCL_LRU_F_ISOLATED | RCL_LRU_F_LISTED),
				 RCL_LRU_F_LISTED);
	assert_int_equal(rcl_lruvec_del(&c->lv, &c->objs[0].lru), 0);
	c->objs[0].in = false;
	cache_free(c);
}

/* Nested: a shrink of the same lruvec and of another from evict_batch. */
static struct cache *g_other;
static struct rcl_lru_shrink_control g_inner_sc, g_other_sc;

static void nest_hook(struct cache *c, struct rcl_evict_item *items, size_t nr)
{
	(void)items;
	(void)nr;
	if (c->depth != 1)
		return;		/* the inner batch does not nest again */
	g_inner_sc = (struct rcl_lru_shrink_control){ .type = RCL_LRU_FILE,
						      .nr_to_scan = 4 };
	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &g_inner_sc), 0);
	g_other_sc = (struct rcl_lru_shrink_control){ .type = RCL_LRU_FILE,
						      .nr_to_scan = 2 };
	assert_int_equal(rcl_lruvec_shrink_inactive(&g_other->lv, &g_other_sc), 0);
}

static void test_evict_batch_nested_shrink(void **state)
{
	struct cache *c = cache_new(&ops_batch, 1, 0);
	struct rcl_lru_shrink_control sc;
	size_t i;

	(void)state;
	setup_events();
	g_other = cache_new(&ops_object, 2, 0);
	add_range(c, 0, 12, RCL_LRU_FILE, 0);
	answer_range(c, 0, 8, ANS_BUSY);	/* the outer batch */
	answer_range(c, 8, 12, ANS_FREED);	/* the inner one */
	add_range(g_other, 0, 3, RCL_LRU_FILE, 0);
	answer_range(g_other, 0, 3, ANS_FREED);
	c->hook = nest_hook;
	sc = shrink(c, RCL_LRU_FILE, 8, 0);
	c->hook = NULL;

	/* Outer batch; inner batch of the next 4 and its end; the other
	 * lruvec's two evicts and its end; then the outer end. */
	assert_int_equal(g_nev, 7);
	expect_event(0, 'B', 1, 8);
	expect_event(1, 'B', 1, 4);
	expect_event(2, 'E', 1, 4);
	expect_event(3, 'V', 2, 0);
	expect_event(4, 'V', 2, 1);
	expect_event(5, 'E', 2, 2);
	expect_event(6, 'E', 1, 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(c->seen[i].key, (int)i);
	for (i = 8; i < 12; i++)
		assert_int_equal(c->seen[i].key, (int)i);
	assert_int_equal(g_inner_sc.nr_freed, 4);
	assert_int_equal(g_inner_sc.weight_freed, 9 + 10 + 11 + 12);
	assert_int_equal(g_other_sc.nr_freed, 2);
	assert_int_equal(sc.nr_freed, 0);
	assert_int_equal(sc.nr_rotated, 8);
	assert_int_equal(sc.nr_scanned, 8);
	assert_int_equal(rcl_lruvec_nr_isolated(&c->lv), 0);
	assert_int_equal(lru_check_invariants(&c->lv), 8);
	assert_int_equal(lru_check_invariants(&g_other->lv), 1);
	cache_free(g_other);
	cache_free(c);
}

/* ------------------------------------------------------------------------- */
/* Shadows and controls                                                       */
/* ------------------------------------------------------------------------- */

/*
 * 32 objects evicted in one pass, with 8 active objects: in a batch every
 * item's shadow has the clock of the claim, so they are all equal and the
 * youngest refaults at distance 32 (> 8: not activated); per object the
 * shadows step by one and the youngest refaults at distance 1 (activated).
 * Either way each shadow is recognised as a refault of its lruvec, and the
 * clock moved by the 32 evictions.
 */
static void shadows_of_one_pass(const struct rcl_lruvec_ops *ops, bool batched)
{
	struct cache *c = cache_new(ops, 1, RCL_LRUVEC_KERNEL);
	struct rcl_workingset_stats w0, w1;
	struct rcl_lru_shrink_control sc;
	unsigned out;
	int k;

	add_range(c, 32, 40, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	add_range(c, 0, 32, RCL_LRU_FILE, 0);
	answer_range(c, 0, 32, ANS_FREED);
	assert_int_equal(rcl_lruvec_workingset_stats(&c->lv, &w0), 0);
	sc = shrink(c, RCL_LRU_FILE, 32, 0);
	assert_int_equal(sc.nr_freed, 32);
	assert_int_equal(c->batch_calls, batched ? 1 : 0);
	assert_int_equal(rcl_lruvec_workingset_stats(&c->lv, &w1), 0);
	assert_int_equal(w1.nonresident_age - w0.nonresident_age, 32);
	for (k = 0; k < 32; k++) {
		assert_true(rcl_shadow_is_valid(c->objs[k].shadow));
		assert_int_equal(c->objs[k].shadow - c->objs[0].shadow,
				 batched ? 0 : (uint64_t)k);
	}
	/* The youngest first: its distance decides as described above. */
	rcl_lru_node_init(&c->objs[31].lru);
	assert_int_equal(rcl_lruvec_add_refault(&c->lv, &c->objs[31].lru,
						RCL_LRU_FILE, 32,
						RCL_LRU_ADD_NOBATCH,
						c->objs[31].shadow, &out), 0);
	c->objs[31].in = true;
	assert_true(out & RCL_REFAULT_REFAULT);
	assert_int_equal(out & RCL_REFAULT_RESTORE, 0);
	assert_int_equal(!!(out & RCL_REFAULT_ACTIVATE), !batched);
	/* The oldest is too far in both. */
	rcl_lru_node_init(&c->objs[0].lru);
	assert_int_equal(rcl_lruvec_add_refault(&c->lv, &c->objs[0].lru,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH,
						c->objs[0].shadow, &out), 0);
	c->objs[0].in = true;
	assert_int_equal(out, RCL_REFAULT_REFAULT);
	assert_int_equal(rcl_lruvec_workingset_stats(&c->lv, &w1), 0);
	assert_int_equal(w1.refault - w0.refault, 2);
	assert_int_equal(w1.activate - w0.activate, batched ? 0 : 1);
	cache_free(c);
}

static void test_evict_batch_shadows_are_claim_clock(void **state)
{
	(void)state;
	setup_events();
	shadows_of_one_pass(&ops_batch, true);
	shadows_of_one_pass(&ops_object, false);
}

/*
 * A dirty object in the pass is activated, and that activation ticks the
 * clock as the evictions do (so 3 ticks for 2 evictions and 1 dirty
 * activation).  In a batch the two evicted objects around it still carry the
 * one clock of the claim; per object the younger one's shadow counts the
 * dirty activation before it.
 */
static void dirty_in_one_pass(const struct rcl_lruvec_ops *ops, bool batched)
{
	struct cache *c = cache_new(ops, 1, RCL_LRUVEC_KERNEL);
	struct rcl_workingset_stats w0, w1;
	struct rcl_lru_shrink_control sc;

	add_range(c, 0, 3, RCL_LRU_FILE, 0);
	answer_range(c, 0, 3, ANS_FREED);
	assert_int_equal(rcl_lruvec_set_dirty(&c->lv, &c->objs[1].lru), 0);
	assert_int_equal(rcl_lruvec_workingset_stats(&c->lv, &w0), 0);
	sc = shrink(c, RCL_LRU_FILE, 3, 0);
	assert_int_equal(sc.nr_freed, 2);
	assert_int_equal(sc.nr_dirty, 1);
	assert_int_equal(sc.nr_activated, 1);
	assert_int_equal(rcl_lruvec_workingset_stats(&c->lv, &w1), 0);
	assert_int_equal(w1.nonresident_age - w0.nonresident_age, 3);
	assert_false(c->objs[0].in);
	assert_false(c->objs[2].in);
	assert_int_equal(c->objs[2].shadow - c->objs[0].shadow,
			 batched ? 0 : 2);
	cache_free(c);
}

static void test_evict_batch_dirty_activation_ticks_the_clock(void **state)
{
	(void)state;
	setup_events();
	dirty_in_one_pass(&ops_batch, true);
	dirty_in_one_pass(&ops_object, false);
}

/* Every member of each item's control, and a shadow that restores. */
static void test_evict_batch_control_fields(void **state)
{
	struct cache *c = cache_new(&ops_batch, 1, 0);
	struct rcl_lru_shrink_control sc = {
		.type = RCL_LRU_FILE, .nr_to_scan = 3, .priority = 3,
		.context = 0x5a5a5a5a5ull,
	};
	struct rcl_lru_shrink_control sa = {
		.type = RCL_LRU_ANON, .nr_to_scan = 8, .priority = 11,
		.context = 1,
	};
	struct rcl_lru_shrink_control act = { .type = RCL_LRU_FILE,
					      .nr_to_scan = 1 };
	unsigned out;

	(void)state;
	setup_events();
	add(c, 0, RCL_LRU_FILE, 0);
	add(c, 1, RCL_LRU_ANON, 0);
	add(c, 2, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&c->lv, &c->objs[2].lru), 0);
	/* 3 was active once: deactivated to the inactive head, workingset. */
	add(c, 3, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	assert_int_equal(rcl_lruvec_shrink_active(&c->lv, &act), 0);
	assert_int_equal(act.nr_deactivated, 1);
	answer_range(c, 0, 4, ANS_FREED);

	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &sc), 0);
	assert_false(c->bad_ctl);	/* lruvec and priv of every item */
	assert_int_equal(c->nseen, 3);
	assert_int_equal(c->seen[0].key, 0);
	assert_int_equal(c->seen[0].flags, 0);
	assert_int_equal(c->seen[1].key, 2);
	assert_int_equal(c->seen[1].flags, RCL_EVICT_REFERENCED);
	assert_int_equal(c->seen[2].key, 3);
	assert_int_equal(c->seen[2].flags, RCL_EVICT_WORKINGSET);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(c->seen[i].type, RCL_LRU_FILE);
		assert_int_equal(c->seen[i].weight, c->seen[i].key + 1);
		assert_int_equal(c->seen[i].priority, 3);
		assert_int_equal(c->seen[i].context, 0x5a5a5a5a5ull);
	}
	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &sa), 0);
	assert_int_equal(c->nseen, 4);
	assert_int_equal(c->seen[3].key, 1);
	assert_int_equal(c->seen[3].type, RCL_LRU_ANON);
	assert_int_equal(c->seen[3].weight, 2);
	assert_int_equal(c->seen[3].priority, 11);
	assert_int_equal(c->seen[3].context, 1);
	assert_false(c->bad_ctl);

	/*
	 * The workingset object's shadow restores (four active objects make
	 * a workingset that covers its distance, 4: the batch stamped its
	 * shadows with the clock at the claim, and a restore is an activated
	 * refault); another object's does not.
	 */
	add_range(c, 4, 8, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	rcl_lru_node_init(&c->objs[3].lru);
	assert_int_equal(rcl_lruvec_add_refault(&c->lv, &c->objs[3].lru,
						RCL_LRU_FILE, 4,
						RCL_LRU_ADD_NOBATCH,
						c->objs[3].shadow, &out), 0);
	c->objs[3].in = true;
	assert_true(out & RCL_REFAULT_REFAULT);
	assert_true(out & RCL_REFAULT_ACTIVATE);
	assert_true(out & RCL_REFAULT_RESTORE);
	rcl_lru_node_init(&c->objs[0].lru);
	assert_int_equal(rcl_lruvec_add_refault(&c->lv, &c->objs[0].lru,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH,
						c->objs[0].shadow, &out), 0);
	c->objs[0].in = true;
	assert_true(out & RCL_REFAULT_REFAULT);
	assert_int_equal(out & RCL_REFAULT_RESTORE, 0);
	cache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evict_batch_one_call_per_pass_oldest_first),
		cmocka_unit_test(test_evict_batch_unset_status_is_busy),
		cmocka_unit_test(test_evict_batch_matches_per_object),
		cmocka_unit_test(test_evict_batch_evict_may_be_null),
		cmocka_unit_test(test_evict_batch_skips_dirty_and_writeback),
		cmocka_unit_test(test_evict_batch_del_of_an_item_is_ebusy),
		cmocka_unit_test(test_evict_batch_nested_shrink),
		cmocka_unit_test(test_evict_batch_shadows_are_claim_clock),
		cmocka_unit_test(test_evict_batch_dirty_activation_ticks_the_clock),
		cmocka_unit_test(test_evict_batch_control_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
