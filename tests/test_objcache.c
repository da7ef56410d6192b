/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of <reclaim/objcache.h>: hits and misses, the lost insert race,
 * charging (one value, exactly once, with or without a per-object
 * meta_charge), reclaim of unpinned objects only,
 * refaults activated through the miss token, del and destroy with pins,
 * put without get, iteration, statistics, dirty objects and the flusher
 * path, several caches in one domain, and new and destroy refused from
 * callbacks.
 *
 * Deterministic: no background reclaimer; reclaim is explicit
 * (rcl_domain_reclaim()) after rcl_lru_drain_local(); the flusher test
 * runs the domain on a fake clock and waits for the write count, never for
 * time.  Objects come from malloc (not cmocka's allocator, which is
 * single-threaded); a live-object count checks that every object inserted
 * met its destructor exactly once.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT_TESTING 1
#include <cmocka.h>
#undef malloc
#undef calloc
#undef free

#include <reclaim/reclaim.h>

/* ------------------------------------------------------------------------- */
/* Fixtures                                                                   */
/* ------------------------------------------------------------------------- */

#define TOBJ_MAGIC 0x544f424au

struct tobj {
	struct rcl_objcache_node node;
	uint32_t magic;
	atomic_int destroyed;		/* destructor calls */
	atomic_int writes;		/* write hook calls */
	size_t klen;
	char key[24];
};

static atomic_int live;			/* objects allocated, not destroyed */
static atomic_int nr_destroyed;
static atomic_int nr_writes;

static struct tobj *tobj_new(const char *key)
{
	struct tobj *o = calloc(1, sizeof(*o));

	assert_non_null(o);
	o->magic = TOBJ_MAGIC;
	o->klen = strlen(key);
	memcpy(o->key, key, o->klen);
	atomic_fetch_add(&live, 1);
	return o;
}

static void tobj_free(struct tobj *o)
{
	atomic_fetch_sub(&live, 1);
	o->magic = 0;
	free(o);
}

static struct tobj *to(struct rcl_objcache_node *n)
{
	return n ? rcl_container_of(n, struct tobj, node) : NULL;
}

static void t_destructor(struct rcl_objcache_node *n, void *priv)
{
	struct tobj *o = to(n);

	(void)priv;
	assert_int_equal(o->magic, TOBJ_MAGIC);
	assert_int_equal(atomic_fetch_add(&o->destroyed, 1), 0);
	atomic_fetch_add(&nr_destroyed, 1);
	tobj_free(o);
}

static int t_write(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	atomic_fetch_add(&to(n)->writes, 1);
	atomic_fetch_add(&nr_writes, 1);
	return 0;
}

static const struct rcl_objcache_ops t_ops = {
	.destructor = t_destructor,
	.write = t_write,
};

struct fx {
	struct rcl_domain *d;
	struct rcl_objcache *c;
	struct rcl_fake_clock *fc;
};

static struct fx *fx_new(uint64_t budget, unsigned nr_shards, bool fake_clock)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct rcl_domain_config dc = { .budget = budget,
					.mode = RCL_CHARGE_STRICT };
	/* Destructors in the evict callback: the counts below are exact at
	 * once (test_objcache_evicted_destroyed_by_next_insert: the default). */
	struct rcl_objcache_config cc = { .ops = &t_ops, .seed = 42,
					  .nr_shards = nr_shards,
					  .flags = RCL_OBJCACHE_DESTROY_IN_RECLAIM };

	assert_non_null(f);
	if (fake_clock) {
		assert_int_equal(rcl_fake_clock_new(1, &f->fc), 0);
		dc.clock = rcl_fake_clock_clock(f->fc);
	}
	assert_int_equal(rcl_domain_new(&dc, &f->d), 0);
	assert_int_equal(rcl_objcache_new(f->d, &cc, &f->c), 0);
	atomic_store(&live, 0);
	atomic_store(&nr_destroyed, 0);
	atomic_store(&nr_writes, 0);
	return f;
}

/* The default: an evicted object's destructor waits for the next insert. */
static struct fx *fx_new_deferred(uint64_t budget, unsigned nr_shards)
{
	struct fx *f = fx_new(budget, nr_shards, false);
	struct rcl_objcache_config cc = { .ops = &t_ops, .seed = 42,
					  .nr_shards = nr_shards };

	assert_int_equal(rcl_objcache_destroy(f->c), 0);
	assert_int_equal(rcl_objcache_new(f->d, &cc, &f->c), 0);
	return f;
}

/* A cache with a per-object overhead (meta_charge) and @flags. */
static struct fx *fx_new_meta(uint64_t budget, unsigned nr_shards,
			      uint64_t meta, unsigned flags)
{
	struct fx *f = fx_new(budget, nr_shards, false);
	struct rcl_objcache_config cc = { .ops = &t_ops, .seed = 42,
					  .nr_shards = nr_shards,
					  .flags = flags, .meta_charge = meta };

	assert_int_equal(rcl_objcache_destroy(f->c), 0);
	assert_int_equal(rcl_objcache_new(f->d, &cc, &f->c), 0);
	return f;
}

static void fx_free(struct fx *f)
{
	if (f->c)
		assert_int_equal(rcl_objcache_destroy(f->c), 0);
	assert_int_equal(rcl_domain_usage(f->d), 0);
	assert_int_equal(rcl_domain_free(f->d), 0);
	rcl_fake_clock_free(f->fc);
	assert_int_equal(atomic_load(&live), 0);
	free(f);
}

/* Get-or-insert, as an application does it: returns the object pinned. */
static struct tobj *goi(struct fx *f, const char *key, uint64_t weight,
			int *errp)
{
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n;
	struct tobj *o;
	int err;

	n = rcl_objcache_get(f->c, key, strlen(key), &miss);
	if (n) {
		if (errp)
			*errp = 0;
		return to(n);
	}
	o = tobj_new(key);
	err = rcl_objcache_insert(f->c, &o->node, o->key, o->klen, weight,
				  RCL_CTX_CAPABLE, &miss, &n);
	if (errp)
		*errp = err;
	if (err) {
		tobj_free(o);
		return to(n);
	}
	return o;
}

static struct tobj *insert_new(struct fx *f, const char *key, uint64_t w)
{
	struct tobj *o = tobj_new(key);

	assert_int_equal(rcl_objcache_insert(f->c, &o->node, o->key, o->klen, w,
					     RCL_CTX_CAPABLE, NULL, NULL), 0);
	return o;
}

static void put(struct fx *f, struct tobj *o)
{
	assert_int_equal(rcl_objcache_put(f->c, &o->node), 0);
}

static struct rcl_objcache_stats stats(struct fx *f)
{
	struct rcl_objcache_stats st;

	assert_int_equal(rcl_objcache_stats(f->c, &st), 0);
	return st;
}

/* Everything pending reaches the lists; then reclaim hard. */
static void reclaim_all(struct fx *f, struct rcl_reclaim_result *res)
{
	unsigned i;

	rcl_lru_drain_local();
	for (i = 0; f->c && i < rcl_objcache_nr_shards(f->c); i++)
		assert_int_equal(rcl_lruvec_drain(rcl_objcache_lruvec(f->c, i)), 0);
	assert_int_equal(rcl_domain_reclaim(f->d, 1u << 20, RCL_CTX_CAPABLE,
					    res), 0);
}

static size_t count_list(struct fx *f, unsigned list)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < rcl_objcache_nr_shards(f->c); i++) {
		struct rcl_lruvec *lv = rcl_objcache_lruvec(f->c, i);

		rcl_lruvec_drain(lv);
		n += rcl_lruvec_count(lv, list, NULL);
	}
	return n;
}

/* The lru weight of every object on the cache's lruvecs (all drained). */
static uint64_t lru_weight(struct fx *f)
{
	uint64_t sum = 0, w;
	unsigned i, l;

	rcl_lru_drain_local();
	for (i = 0; i < rcl_objcache_nr_shards(f->c); i++) {
		struct rcl_lruvec *lv = rcl_objcache_lruvec(f->c, i);

		rcl_lruvec_drain(lv);
		for (l = 0; l < RCL_LRU_UNEVICTABLE; l++) {
			rcl_lruvec_count(lv, l, &w);
			sum += w;
		}
	}
	return sum;
}

/* ------------------------------------------------------------------------- */
/* Tests                                                                      */
/* ------------------------------------------------------------------------- */

static void test_objcache_node_size_is_documented(void **state)
{
	struct rcl_objcache_node n = RCL_OBJCACHE_NODE_INIT;

	(void)state;
	if (sizeof(void *) == 8)
		assert_int_equal(sizeof(struct rcl_objcache_node), 72);
	assert_null(rcl_objcache_node_key(&n, NULL));
}

static void test_objcache_hit_and_miss(void **state)
{
	struct fx *f = fx_new(1 << 20, 0, false);
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n;
	struct rcl_objcache_stats st;
	struct tobj *a;
	size_t len;
	int err;

	(void)state;
	assert_int_equal(rcl_objcache_nr_shards(f->c), RCL_OBJCACHE_SHARDS_DEFAULT);
	assert_null(rcl_objcache_get(f->c, "a", 1, &miss));
	assert_false(miss.refault);
	a = goi(f, "a", 100, &err);
	assert_int_equal(err, 0);
	assert_int_equal(rcl_domain_usage(f->d), 100);
	put(f, a);
	n = rcl_objcache_get(f->c, "a", 1, &miss);
	assert_ptr_equal(n, &a->node);
	assert_ptr_equal(rcl_objcache_node_key(n, &len), a->key);
	assert_int_equal(len, 1);
	put(f, a);
	assert_null(rcl_objcache_get(f->c, "b", 1, NULL));
	assert_null(rcl_objcache_get(f->c, "aa", 2, NULL));
	/* The empty key is a key. */
	a = goi(f, "", 7, &err);
	assert_int_equal(err, 0);
	put(f, a);
	assert_ptr_equal(rcl_objcache_get(f->c, "", 0, NULL), &a->node);
	put(f, a);
	st = stats(f);
	assert_int_equal(st.hits, 2);
	assert_int_equal(st.misses, 5);
	assert_int_equal(st.inserts, 2);
	assert_int_equal(st.objects, 2);
	assert_int_equal(st.weight, 107);
	fx_free(f);
}

static void test_objcache_lost_insert_race(void **state)
{
	struct fx *f = fx_new(1 << 20, 4, false);
	struct rcl_objcache_miss m1, m2;
	struct rcl_objcache_node *ex = NULL;
	struct tobj *a = tobj_new("k"), *b = tobj_new("k");

	(void)state;
	/* Two threads missed the same key; both insert. */
	assert_null(rcl_objcache_get(f->c, "k", 1, &m1));
	assert_null(rcl_objcache_get(f->c, "k", 1, &m2));
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, 1, 300,
					     RCL_CTX_CAPABLE, &m1, &ex), 0);
	assert_null(ex);
	assert_int_equal(rcl_objcache_insert(f->c, &b->node, b->key, 1, 500,
					     RCL_CTX_CAPABLE, &m2, &ex), -EEXIST);
	assert_ptr_equal(ex, &a->node);		/* the winner, pinned */
	assert_int_equal(rcl_domain_usage(f->d), 300);	/* loser uncharged */
	assert_int_equal(stats(f).lost_races, 1);
	assert_int_equal(stats(f).objects, 1);
	/* The loser's node is untouched: it may be inserted elsewhere. */
	assert_null(rcl_objcache_node_key(&b->node, NULL));
	tobj_free(b);
	put(f, a);
	put(f, a);
	assert_int_equal(rcl_objcache_put(f->c, &a->node), -EINVAL);
	fx_free(f);
}

static void test_objcache_charge_failure_changes_nothing(void **state)
{
	struct fx *f = fx_new(1000, 2, false);
	struct tobj *objs[10], *x;
	struct rcl_objcache_stats before, after;
	struct rcl_objcache_node *ex = (void *)1;
	unsigned i;
	char key[8];

	(void)state;
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "p%u", i);
		objs[i] = insert_new(f, key, 100);	/* pinned */
	}
	assert_int_equal(rcl_domain_usage(f->d), 1000);
	rcl_lru_drain_local();
	before = stats(f);
	x = tobj_new("x");
	assert_int_equal(rcl_objcache_insert(f->c, &x->node, x->key, 1, 100,
					     RCL_CTX_CAPABLE, NULL, &ex), -ENOMEM);
	assert_null(ex);
	after = stats(f);
	assert_int_equal(rcl_domain_usage(f->d), 1000);
	assert_int_equal(after.objects, before.objects);
	assert_int_equal(after.weight, before.weight);
	assert_int_equal(after.inserts, before.inserts);
	assert_int_equal(after.charge_failures, 1);
	assert_int_equal(atomic_load(&nr_destroyed), 0);
	assert_null(rcl_objcache_get(f->c, "x", 1, NULL));
	/* The node is still idle: it can go in once there is room. */
	put(f, objs[0]);
	assert_int_equal(rcl_objcache_insert(f->c, &x->node, x->key, 1, 100,
					     RCL_CTX_CAPABLE, NULL, NULL), 0);
	assert_int_equal(atomic_load(&nr_destroyed), 1);	/* p0 went */
	assert_int_equal(rcl_domain_usage(f->d), 1000);
	put(f, x);
	for (i = 1; i < 10; i++)
		put(f, objs[i]);
	fx_free(f);
}

static void test_objcache_weight_is_one_value(void **state)
{
	struct fx *f = fx_new(1ull << 40, 1, false);
	struct tobj *a = tobj_new("big");

	(void)state;
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen,
					     (uint64_t)UINT32_MAX + 1,
					     RCL_CTX_CAPABLE, NULL, NULL), -E2BIG);
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen, 0,
					     RCL_CTX_CAPABLE, NULL, NULL), -EINVAL);
	assert_int_equal(rcl_domain_usage(f->d), 0);
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen,
					     UINT32_MAX, RCL_CTX_CAPABLE, NULL,
					     NULL), 0);
	/* The charge is the lru weight. */
	assert_int_equal(rcl_domain_usage(f->d), UINT32_MAX);
	rcl_lru_drain_local();
	{
		uint64_t w;

		assert_int_equal(rcl_lruvec_count(rcl_objcache_lruvec(f->c, 0),
						  RCL_LRU_LIST(RCL_LRU_FILE, 0),
						  &w), 1);
		assert_int_equal(w, UINT32_MAX);
	}
	/* The same node again: not idle. */
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen, 1,
					     RCL_CTX_CAPABLE, NULL, NULL), -EBUSY);
	put(f, a);
	fx_free(f);
}

static void test_objcache_reclaim_evicts_unpinned_only(void **state)
{
	struct fx *f = fx_new(1 << 20, 4, false);
	struct rcl_reclaim_result res;
	struct tobj *objs[10];
	unsigned i;
	char key[8];

	(void)state;
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "o%u", i);
		objs[i] = insert_new(f, key, 100);
		if (i % 2)
			put(f, objs[i]);	/* odd ones unpinned */
	}
	reclaim_all(f, &res);
	assert_int_equal(res.nr_reclaimed, 5);
	assert_int_equal(atomic_load(&nr_destroyed), 5);
	assert_int_equal(rcl_domain_usage(f->d), 500);
	assert_int_equal(stats(f).evictions, 5);
	assert_int_equal(stats(f).objects, 5);
	assert_int_equal(stats(f).shadows, 5);
	for (i = 0; i < 10; i += 2) {
		assert_int_equal(atomic_load(&objs[i]->destroyed), 0);
		snprintf(key, sizeof(key), "o%u", i);
		assert_ptr_equal(rcl_objcache_get(f->c, key, strlen(key), NULL),
				 &objs[i]->node);
		put(f, objs[i]);
		put(f, objs[i]);
	}
	/* Unpinned now: a second reclaim takes them, each once. */
	reclaim_all(f, &res);
	assert_int_equal(atomic_load(&nr_destroyed), 10);
	assert_int_equal(rcl_domain_usage(f->d), 0);
	assert_int_equal(stats(f).objects, 0);
	fx_free(f);
}

static void test_objcache_refault_insert_is_activated(void **state)
{
	struct fx *f = fx_new(1 << 20, 1, false);
	struct rcl_lruvec *lv;
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					      .nr_to_scan = 1 };
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *ex;
	struct rcl_workingset_stats ws;
	struct tobj *a, *b, *hot[4];
	unsigned i, j;
	char key[8];

	(void)state;
	lv = rcl_objcache_lruvec(f->c, 0);
	/* A working set of four objects on the active list (two touches). */
	for (i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "h%u", i);
		hot[i] = insert_new(f, key, 100);
		put(f, hot[i]);
		for (j = 0; j < 2; j++)
			put(f, to(rcl_objcache_get(f->c, key, 2, NULL)));
	}
	a = insert_new(f, "r", 100);
	put(f, a);
	rcl_lru_drain_local();
	assert_int_equal(count_list(f, RCL_LRU_LIST(RCL_LRU_FILE, 1)), 4);
	/* Evict "r", the one inactive object; its shadow is kept. */
	assert_int_equal(rcl_lruvec_shrink_inactive(lv, &sc), 0);
	assert_int_equal(sc.nr_freed, 1);
	assert_int_equal(atomic_load(&nr_destroyed), 1);
	assert_int_equal(stats(f).shadows, 1);

	/* The miss finds the shadow and takes it into the token. */
	assert_null(rcl_objcache_get(f->c, "r", 1, &miss));
	assert_true(miss.refault);
	assert_int_equal(stats(f).refault_misses, 1);
	assert_int_equal(stats(f).shadows, 0);
	a = tobj_new("r");
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, 1, 100,
					     RCL_CTX_CAPABLE, &miss, &ex), 0);
	/* Within the active list's reach: inserted active. */
	assert_int_equal(stats(f).refault_activations, 1);
	assert_int_equal(count_list(f, RCL_LRU_LIST(RCL_LRU_FILE, 1)), 5);
	assert_int_equal(count_list(f, RCL_LRU_LIST(RCL_LRU_FILE, 0)), 0);
	assert_int_equal(rcl_lruvec_workingset_stats(lv, &ws), 0);
	assert_int_equal(ws.refault, 1);
	assert_int_equal(ws.activate, 1);
	/* A second miss of a key finds no shadow; a plain add is inactive. */
	assert_null(rcl_objcache_get(f->c, "plain", 5, &miss));
	assert_false(miss.refault);
	b = tobj_new("plain");
	assert_int_equal(rcl_objcache_insert(f->c, &b->node, b->key, 5, 100,
					     RCL_CTX_CAPABLE, &miss, NULL), 0);
	assert_int_equal(count_list(f, RCL_LRU_LIST(RCL_LRU_FILE, 0)), 1);
	/* A token of another cache is refused. */
	{
		struct rcl_objcache_miss other = miss;
		struct tobj *c = tobj_new("zz");

		other.__cache = (const struct rcl_objcache *)&other;
		assert_int_equal(rcl_objcache_insert(f->c, &c->node, c->key, 2, 1,
						     RCL_CTX_CAPABLE, &other,
						     NULL), -EINVAL);
		tobj_free(c);
	}
	/*
	 * A token that a get cleared (its answer for a NULL cache, a bad key
	 * or a pin overflow) is no token: the get-or-insert pattern meets the
	 * insert's own answer, not -EINVAL.
	 */
	{
		struct rcl_objcache_miss cleared;
		struct tobj *c = tobj_new("zz");

		memset(&cleared, 0, sizeof(cleared));
		assert_int_equal(rcl_objcache_insert(f->c, &c->node, c->key, 2, 1,
						     RCL_CTX_CAPABLE, &cleared,
						     NULL), 0);
		put(f, c);
	}
	put(f, a);
	put(f, b);
	fx_free(f);
}

/*
 * A key evicted (leaving a shadow), inserted again without a miss token and
 * then deleted keeps no shadow (objcache.h: "No shadow is kept for a deleted
 * key"): the shadow of the eviction used to stay in the table, so the
 * deleted key's next miss reported a refault.
 */
static void test_objcache_deleted_key_keeps_no_old_shadow(void **state)
{
	struct fx *f = fx_new(1 << 20, 1, false);
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					      .nr_to_scan = 64 };
	struct rcl_objcache_miss miss;
	struct tobj *a;

	(void)state;
	a = insert_new(f, "k", 100);
	put(f, a);
	rcl_lru_drain_local();
	assert_int_equal(rcl_lruvec_shrink_inactive(rcl_objcache_lruvec(f->c, 0),
						    &sc),
			 0);
	assert_int_equal(stats(f).evictions, 1);
	assert_int_equal(stats(f).shadows, 1);
	/* Inserted again by a path with no token (a preload, a writer). */
	a = insert_new(f, "k", 100);
	put(f, a);
	assert_int_equal(rcl_objcache_del(f->c, "k", 1), 0);
	assert_int_equal(stats(f).shadows, 0);
	assert_null(rcl_objcache_get(f->c, "k", 1, &miss));
	assert_false(miss.refault);
	assert_int_equal(stats(f).refault_misses, 0);
	fx_free(f);
}

/* Every key hashes alike: each token matches every key (by hash). */
static uint64_t same_hash(const void *key, size_t len, void *priv)
{
	(void)key;
	(void)len;
	(void)priv;
	return 7;
}

static bool tobj_eq(const struct rcl_objcache_node *n, const void *key,
		    size_t len, void *priv)
{
	const struct tobj *o = rcl_container_of(n, const struct tobj, node);

	(void)priv;
	return o->klen == len && memcmp(o->key, key, len) == 0;
}

static const struct rcl_objcache_ops collide_ops = {
	.hash = same_hash, .eq = tobj_eq, .destructor = t_destructor,
};

/*
 * Tokens are matched by hash (objcache.h, struct rcl_objcache_miss): a
 * token of key A passed to the insert of a colliding key takes that key as
 * A's.  Its shadow goes to the other key, and a present key is still found
 * (-EEXIST, never twice in the index).
 */
static void test_objcache_miss_token_is_matched_by_hash(void **state)
{
	struct fx *f = fx_new(1 << 20, 1, false);
	struct rcl_objcache_config cc = { .ops = &collide_ops, .nr_shards = 1,
					  .flags = RCL_OBJCACHE_DESTROY_IN_RECLAIM };
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					      .nr_to_scan = 1 };
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *ex;
	struct rcl_workingset_stats ws0, ws;
	struct rcl_lruvec *lv;
	struct tobj *a, *b, *b2, *c;

	(void)state;
	assert_int_equal(rcl_objcache_destroy(f->c), 0);
	assert_int_equal(rcl_objcache_new(f->d, &cc, &f->c), 0);
	lv = rcl_objcache_lruvec(f->c, 0);
	/* A is evicted and leaves its shadow; B is cached. */
	a = insert_new(f, "A", 10);
	put(f, a);
	rcl_lru_drain_local();
	assert_int_equal(rcl_lruvec_shrink_inactive(lv, &sc), 0);
	assert_int_equal(sc.nr_freed, 1);
	assert_int_equal(stats(f).shadows, 1);
	b = insert_new(f, "B", 10);
	put(f, b);
	assert_null(rcl_objcache_get(f->c, "A", 1, &miss));
	assert_true(miss.refault);

	/* A's token for B, which is present: found, not inserted twice. */
	b2 = tobj_new("B");
	assert_int_equal(rcl_objcache_insert(f->c, &b2->node, b2->key, 1, 10,
					     RCL_CTX_CAPABLE, &miss, &ex), -EEXIST);
	assert_ptr_equal(ex, &b->node);
	put(f, b);
	tobj_free(b2);
	assert_int_equal(stats(f).objects, 1);
	assert_int_equal(rcl_domain_usage(f->d), 10);

	/* A's token for C, absent: C is inserted with A's shadow. */
	assert_int_equal(rcl_lruvec_workingset_stats(lv, &ws0), 0);
	c = tobj_new("C");
	assert_int_equal(rcl_objcache_insert(f->c, &c->node, c->key, 1, 10,
					     RCL_CTX_CAPABLE, &miss, NULL), 0);
	assert_int_equal(rcl_lruvec_workingset_stats(lv, &ws), 0);
	assert_int_equal(ws.refault, ws0.refault + 1);
	put(f, c);
	assert_int_equal(stats(f).objects, 2);
	assert_ptr_equal(rcl_objcache_get(f->c, "C", 1, NULL), &c->node);
	put(f, c);
	assert_null(rcl_objcache_get(f->c, "A", 1, NULL));
	fx_free(f);
}

static void test_objcache_shadows_are_bounded(void **state)
{
	struct rcl_domain_config dc = { .budget = 1 << 20 };
	struct rcl_objcache_config cc = { .ops = &t_ops, .nr_shards = 2,
					  .shadow_quota = 4,
					  .flags = RCL_OBJCACHE_DESTROY_IN_RECLAIM };
	struct rcl_reclaim_result res;
	struct fx f = { 0 };
	unsigned i;
	char key[8];

	(void)state;
	atomic_store(&live, 0);
	assert_int_equal(rcl_domain_new(&dc, &f.d), 0);
	assert_int_equal(rcl_objcache_new(f.d, &cc, &f.c), 0);
	for (i = 0; i < 64; i++) {
		snprintf(key, sizeof(key), "s%u", i);
		put(&f, insert_new(&f, key, 10));
	}
	reclaim_all(&f, &res);		/* evicts all: 64 shadows */
	assert_true(stats(&f).shadows > 8);
	/* The shadow limit's shrinker drops the excess over the quota. */
	for (i = 0; i < 16 && stats(&f).shadows > 8; i++)
		assert_int_equal(rcl_domain_reclaim(f.d, 32, RCL_CTX_CAPABLE,
						    &res), 0);
	assert_true(stats(&f).shadows <= 8);
	assert_true(stats(&f).shadows_dropped > 0);
	assert_int_equal(rcl_objcache_destroy(f.c), 0);
	assert_int_equal(rcl_domain_free(f.d), 0);
	assert_int_equal(atomic_load(&live), 0);
}

static void test_objcache_del_with_pins(void **state)
{
	struct fx *f = fx_new(1 << 20, 0, false);
	struct tobj *a = insert_new(f, "d", 100), *b;

	(void)state;
	assert_int_equal(rcl_objcache_del(f->c, "d", 1), 0);
	assert_null(rcl_objcache_get(f->c, "d", 1, NULL));
	assert_int_equal(atomic_load(&a->destroyed), 0);	/* still pinned */
	assert_int_equal(rcl_domain_usage(f->d), 100);
	assert_int_equal(rcl_objcache_del(f->c, "d", 1), -ENOENT);
	assert_int_equal(rcl_objcache_del_node(f->c, &a->node), -ENOENT);
	assert_int_equal(rcl_objcache_mark_dirty(f->c, &a->node), -ENOENT);
	/* The key may be cached again meanwhile. */
	b = insert_new(f, "d", 50);
	assert_int_equal(rcl_domain_usage(f->d), 150);
	/* Destroy waits for the deleted object's last pin. */
	assert_int_equal(rcl_objcache_destroy(f->c), -EBUSY);
	put(f, a);					/* the last pin */
	assert_int_equal(atomic_load(&nr_destroyed), 1);
	assert_int_equal(rcl_domain_usage(f->d), 50);
	/* del_node of a pinned object; unpinned: the destructor runs now. */
	assert_int_equal(rcl_objcache_del_node(f->c, &b->node), 0);
	assert_int_equal(rcl_objcache_del_node(f->c, &b->node), -ENOENT);
	put(f, b);
	assert_int_equal(atomic_load(&nr_destroyed), 2);
	a = insert_new(f, "e", 10);
	put(f, a);
	assert_int_equal(rcl_objcache_del(f->c, "e", 1), 0);
	assert_int_equal(atomic_load(&nr_destroyed), 3);
	assert_int_equal(stats(f).deletes, 3);
	assert_int_equal(rcl_domain_usage(f->d), 0);
	fx_free(f);
}

static void test_objcache_destroy_with_pins_is_ebusy(void **state)
{
	struct fx *f = fx_new(1 << 20, 2, false);
	struct tobj *a = insert_new(f, "a", 10), *b = insert_new(f, "b", 20);

	(void)state;
	put(f, b);
	assert_int_equal(rcl_objcache_destroy(f->c), -EBUSY);
	/* Nothing changed. */
	assert_int_equal(stats(f).objects, 2);
	assert_int_equal(rcl_domain_usage(f->d), 30);
	assert_ptr_equal(rcl_objcache_get(f->c, "b", 1, NULL), &b->node);
	put(f, b);
	put(f, a);
	assert_int_equal(rcl_objcache_destroy(f->c), 0);	/* destructs both */
	f->c = NULL;
	assert_int_equal(atomic_load(&nr_destroyed), 2);
	assert_int_equal(rcl_objcache_destroy(NULL), 0);
	fx_free(f);
}

/*
 * Destroy releases every object of a large cache, sparse in many buckets,
 * once each (it rescanned each shard from bucket 0 for every object:
 * quadratic).  Correctness only; the time is not asserted.
 */
static void test_objcache_destroy_releases_a_large_cache(void **state)
{
	struct fx *f = fx_new(1 << 20, 4, false);
	struct rcl_objcache_config cc = { .ops = &t_ops, .seed = 42,
					  .nr_shards = 4, .nr_buckets = 1u << 14,
					  .flags = RCL_OBJCACHE_DESTROY_IN_RECLAIM };
	const unsigned n = 20000;
	char key[24];
	unsigned i;

	(void)state;
	assert_int_equal(rcl_objcache_destroy(f->c), 0);
	assert_int_equal(rcl_objcache_new(f->d, &cc, &f->c), 0);
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		put(f, insert_new(f, key, 1));
	}
	assert_int_equal(stats(f).objects, n);
	assert_int_equal(rcl_domain_usage(f->d), n);
	assert_int_equal(rcl_objcache_destroy(f->c), 0);
	f->c = NULL;
	/* t_destructor fails on a second call for one object */
	assert_int_equal(atomic_load(&nr_destroyed), n);
	assert_int_equal(atomic_load(&live), 0);
	fx_free(f);
}

static void test_objcache_put_without_get_is_einval(void **state)
{
	struct fx *f = fx_new(1 << 20, 0, false);
	struct tobj *a = insert_new(f, "a", 10);
	struct rcl_objcache_stats st;

	(void)state;
	put(f, a);
	st = stats(f);
	assert_int_equal(rcl_objcache_put(f->c, &a->node), -EINVAL);
	assert_int_equal(rcl_objcache_put(f->c, &a->node), -EINVAL);
	assert_int_equal(rcl_objcache_mark_dirty(f->c, &a->node), -EINVAL);
	assert_int_equal(stats(f).objects, st.objects);
	assert_ptr_equal(rcl_objcache_get(f->c, "a", 1, NULL), &a->node);
	put(f, a);
	assert_int_equal(atomic_load(&nr_destroyed), 0);
	fx_free(f);
}

struct walk {
	unsigned n;
	uint64_t weight;
	unsigned stop_at;
};

static int walk_fn(struct rcl_objcache_node *n, void *arg)
{
	struct walk *w = arg;
	size_t len;

	assert_non_null(rcl_objcache_node_key(n, &len));
	w->n++;
	w->weight += strtoul(to(n)->key + 1, NULL, 10) + 1;
	return w->stop_at && w->n == w->stop_at ? 7 : 0;
}

static void test_objcache_for_each_sees_every_object(void **state)
{
	struct fx *f = fx_new(1 << 30, 8, false);
	struct walk w = { 0 };
	unsigned i;
	char key[16];

	(void)state;
	/* 1000 objects: every shard's table grows several times. */
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "w%u", i);
		put(f, insert_new(f, key, i + 1));
	}
	assert_int_equal(rcl_objcache_for_each(f->c, walk_fn, &w), 0);
	assert_int_equal(w.n, 1000);
	assert_int_equal(w.weight, 1000ull * 1001 / 2);
	assert_int_equal(stats(f).weight, 1000ull * 1001 / 2);
	assert_int_equal(rcl_domain_usage(f->d), 1000ull * 1001 / 2);
	memset(&w, 0, sizeof(w));
	w.stop_at = 10;
	assert_int_equal(rcl_objcache_for_each(f->c, walk_fn, &w), 7);
	assert_int_equal(w.n, 10);
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "w%u", i);
		assert_int_equal(rcl_objcache_put(
			f->c, rcl_objcache_get(f->c, key, strlen(key), NULL)), 0);
		assert_int_equal(rcl_objcache_put(
			f->c, rcl_objcache_get(f->c, key, strlen(key), NULL)), 0);
	}
	fx_free(f);
}

static void test_objcache_stats_add_up(void **state)
{
	struct fx *f = fx_new(4000, 4, false);
	struct rcl_objcache_stats st;
	unsigned i, gets = 0;
	char key[16];
	int err;

	(void)state;
	for (i = 0; i < 400; i++) {
		struct tobj *o;

		snprintf(key, sizeof(key), "k%u", (i * 7) % 97);
		gets++;
		o = goi(f, key, 100, &err);
		if (o)
			put(f, o);
		if (i % 13 == 0)
			rcl_objcache_del(f->c, key, strlen(key));
	}
	st = stats(f);
	assert_int_equal(st.hits + st.misses, gets);
	assert_int_equal(st.objects,
			 st.inserts - st.evictions - st.deletes);
	assert_int_equal(st.weight, rcl_domain_usage(f->d));
	assert_true(st.evictions > 0);
	assert_int_equal(atomic_load(&nr_destroyed), st.evictions + st.deletes);
	assert_true(st.refault_misses <= st.misses);
	assert_true(st.refault_activations <= st.inserts);
	fx_free(f);
}

static void test_objcache_dirty_objects_stay_and_are_written(void **state)
{
	struct fx *f = fx_new(1 << 20, 2, false);
	struct rcl_reclaim_result res;
	struct tobj *objs[4];
	uint64_t written = 0;
	unsigned i;
	char key[8];

	(void)state;
	for (i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "y%u", i);
		objs[i] = insert_new(f, key, 100);
		if (i < 2) {
			assert_int_equal(rcl_objcache_mark_dirty(f->c, &objs[i]->node), 0);
			assert_int_equal(rcl_objcache_mark_dirty(f->c, &objs[i]->node), 0);
		}
		put(f, objs[i]);
	}
	reclaim_all(f, &res);
	assert_int_equal(atomic_load(&nr_destroyed), 2);	/* clean ones */
	assert_int_equal(atomic_load(&objs[0]->destroyed), 0);
	assert_int_equal(atomic_load(&objs[1]->destroyed), 0);
	assert_int_equal(rcl_domain_writeback_all(f->d, rcl_objcache_writeback_ops(),
						  NULL, &written), 0);
	assert_int_equal(written, 2);
	assert_int_equal(atomic_load(&objs[0]->writes), 1);
	assert_int_equal(atomic_load(&objs[1]->writes), 1);
	reclaim_all(f, &res);
	assert_int_equal(atomic_load(&nr_destroyed), 4);
	fx_free(f);
}

static void test_objcache_flusher_thread_writes(void **state)
{
	struct fx *f = fx_new(1 << 20, 2, true);
	struct rcl_dirty_stats ds;
	struct tobj *objs[8];
	unsigned i;
	char key[8];

	(void)state;
	assert_int_equal(rcl_objcache_flusher_start(f->d, 4), 0);
	assert_int_equal(rcl_objcache_flusher_start(f->d, 4), -EBUSY);
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "f%u", i);
		objs[i] = insert_new(f, key, 10);
		assert_int_equal(rcl_objcache_mark_dirty(f->c, &objs[i]->node), 0);
		put(f, objs[i]);
	}
	rcl_lru_drain_local();
	assert_int_equal(rcl_domain_flush(f->d, 0), 0);
	/* Wait for the writes (not for time: the clock is fake). */
	for (i = 0; i < 20000 && atomic_load(&nr_writes) < 8; i++) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
	assert_int_equal(atomic_load(&nr_writes), 8);
	assert_int_equal(rcl_domain_flusher_stop(f->d), 0);
	assert_int_equal(rcl_domain_dirty_stats(f->d, &ds), 0);
	assert_int_equal(ds.nr_dirty + ds.nr_writeback, 0);
	fx_free(f);
}

static int other_writes;

static int other_write(struct rcl_objcache_node *n, void *priv)
{
	(void)n;
	assert_ptr_equal(priv, &other_writes);
	other_writes++;
	return 0;
}

static const struct rcl_objcache_ops other_ops = {
	.destructor = t_destructor,
	.write = other_write,
};

static void test_objcache_caches_share_a_domain(void **state)
{
	struct fx *f = fx_new(1 << 20, 4, false);
	struct rcl_objcache_config cc = { .ops = &other_ops,
					  .priv = &other_writes, .seed = 1,
					  .nr_shards = 2,
					  .flags = RCL_OBJCACHE_DESTROY_IN_RECLAIM };
	struct rcl_objcache *c2;
	struct rcl_reclaim_result res;
	struct tobj *a, *b;
	uint64_t written;

	(void)state;
	other_writes = 0;
	assert_int_equal(rcl_objcache_new(f->d, &cc, &c2), 0);
	a = insert_new(f, "same", 100);
	b = tobj_new("same");
	assert_int_equal(rcl_objcache_insert(c2, &b->node, b->key, b->klen, 30,
					     RCL_CTX_CAPABLE, NULL, NULL), 0);
	assert_int_equal(rcl_domain_usage(f->d), 130);
	/* A node of one cache is refused by the other. */
	assert_int_equal(rcl_objcache_put(c2, &a->node), -EINVAL);
	assert_int_equal(rcl_objcache_mark_dirty(f->c, &a->node), 0);
	assert_int_equal(rcl_objcache_mark_dirty(c2, &b->node), 0);
	assert_int_equal(rcl_domain_writeback_all(f->d, rcl_objcache_writeback_ops(),
						  NULL, &written), 0);
	assert_int_equal(written, 2);
	assert_int_equal(atomic_load(&a->writes), 1);	/* each cache's hook */
	assert_int_equal(other_writes, 1);
	put(f, a);
	assert_int_equal(rcl_objcache_put(c2, &b->node), 0);
	reclaim_all(f, &res);
	rcl_lruvec_drain(rcl_objcache_lruvec(c2, 0));
	rcl_lruvec_drain(rcl_objcache_lruvec(c2, 1));
	assert_int_equal(rcl_domain_reclaim(f->d, 64, RCL_CTX_CAPABLE, &res), 0);
	assert_int_equal(atomic_load(&nr_destroyed), 2);	/* from both */
	assert_int_equal(rcl_domain_usage(f->d), 0);
	assert_int_equal(rcl_objcache_destroy(c2), 0);
	fx_free(f);
}

/* Application keys: a 64-bit integer in the object, a weak hash. */
struct ikey {
	struct rcl_objcache_node node;
	uint64_t id;
};

static uint64_t ikey_hash(const void *key, size_t len, void *priv)
{
	uint64_t v;

	(void)priv;
	assert_int_equal(len, sizeof(v));
	memcpy(&v, key, sizeof(v));
	return v;	/* identity: the cache mixes it */
}

static bool ikey_eq(const struct rcl_objcache_node *n, const void *key,
		    size_t len, void *priv)
{
	(void)priv;
	(void)len;
	return rcl_container_of(n, struct ikey, node)->id ==
	       *(const uint64_t *)key;
}

static const struct rcl_objcache_ops ikey_ops = { .hash = ikey_hash,
						  .eq = ikey_eq };

/*
 * rcl_objcache_new() from a shrinker of its domain's reclaim pass is
 * refused with nothing done: a failure there (here the domain's room for two
 * lruvecs, with four shards asked) could not detach the shards it attached,
 * which stayed attached after their memory was freed.
 */
static struct rcl_domain *new_in_pass_d;
static int new_in_pass_ret = 1;
static bool new_in_pass_done;

static unsigned long new_in_pass_count(struct rcl_shrinker *s,
				       struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return new_in_pass_done ? RCL_SHRINK_EMPTY : 1000;
}

static unsigned long new_in_pass_scan(struct rcl_shrinker *s,
				      struct rcl_shrink_control *sc)
{
	(void)s;
	if (!new_in_pass_done) {
		struct rcl_objcache_config cfg = { .nr_shards = 4 };
		struct rcl_objcache *c = NULL;

		new_in_pass_done = true;
		new_in_pass_ret = rcl_objcache_new(new_in_pass_d, &cfg, &c);
		if (c)
			abort();	/* written only on success */
	}
	sc->nr_scanned = sc->nr_to_scan;
	return 0;
}

/* The same from an evict callback of an lruvec shrunk by hand (no pass). */
static enum rcl_evict_status new_in_evict(struct rcl_lru_node *node,
					  struct rcl_evict_control *ctl)
{
	struct rcl_objcache_config cfg = { .nr_shards = 1 };
	struct rcl_objcache *c = NULL;

	(void)node;
	(void)ctl;
	new_in_pass_ret = rcl_objcache_new(new_in_pass_d, &cfg, &c);
	if (c)
		abort();
	return RCL_EVICT_BUSY;
}

static void test_objcache_new_in_a_reclaim_pass_is_refused(void **state)
{
	static const struct rcl_shrinker_ops ops = {
		.count_objects = new_in_pass_count,
		.scan_objects = new_in_pass_scan,
	};
	struct rcl_domain_config dc = { .budget = 1 << 20, .max_lruvecs = 2 };
	struct rcl_shrinker_config sc = { .ops = &ops };
	struct rcl_objcache_config cc = { .nr_shards = 2 };
	struct rcl_objcache *c = NULL;
	struct rcl_shrinker *s;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &new_in_pass_d), 0);
	assert_int_equal(rcl_shrinker_new(rcl_domain_registry(new_in_pass_d),
					  &sc, &s),
			 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_true(rcl_domain_reclaim(new_in_pass_d, 100, RCL_CTX_CAPABLE,
				       NULL) >= 0);
	assert_true(new_in_pass_done);
	assert_int_equal(new_in_pass_ret, -EDEADLK);
	assert_int_equal(rcl_shrinker_free(s), 0);
	/* Nothing was left attached: the domain's room is whole. */
	assert_int_equal(rcl_objcache_new(new_in_pass_d, &cc, &c), 0);
	assert_int_equal(rcl_objcache_destroy(c), 0);
	{
		static const struct rcl_lruvec_ops lops = { .evict =
								    new_in_evict };
		struct rcl_lruvec_config lc = { .ops = &lops };
		struct rcl_lru_shrink_control lsc = { .type = RCL_LRU_FILE,
						      .nr_to_scan = 1 };
		struct rcl_lruvec lv;
		struct rcl_lru_node n;

		assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
		rcl_lru_node_init(&n);
		assert_int_equal(rcl_lruvec_add(&lv, &n, RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH),
				 0);
		new_in_pass_ret = 1;
		assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &lsc), 0);
		assert_int_equal(new_in_pass_ret, -EDEADLK);
		assert_int_equal(rcl_lruvec_del(&lv, &n), 0);
		rcl_lruvec_destroy(&lv);
	}
	/* And from a shrinker of a registry the application shrinks itself. */
	{
		struct rcl_shrinker_registry *reg;

		assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
		assert_int_equal(rcl_shrinker_new(reg, &sc, &s), 0);
		assert_int_equal(rcl_shrinker_register(s), 0);
		new_in_pass_done = false;
		new_in_pass_ret = 1;
		assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 0,
							      RCL_CTX_CAPABLE,
							      NULL),
				 0);
		assert_true(new_in_pass_done);
		assert_int_equal(new_in_pass_ret, -EDEADLK);
		assert_int_equal(rcl_shrinker_free(s), 0);
		assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	}
	assert_int_equal(rcl_domain_free(new_in_pass_d), 0);
}

/*
 * rcl_objcache_destroy() from a callback is refused (-EDEADLK) before it
 * changes anything, however the callback is reached.  It used to detach
 * every shard first and learn only then, from rcl_shadow_limit_free(), that
 * the limit could not be freed there (its shrinker running in another
 * thread): the shards went back by rcl_domain_attach(), and one whose slot
 * another attach took meanwhile stayed detached, its objects charged and
 * out of every reclaim's reach.  Each context below is refused whether or
 * not the limit runs, and the cache stays whole: its objects are all found,
 * a charge over the budget reclaims every one of them (every shard is still
 * attached), and a destroy from outside a callback then succeeds.
 */
static struct rcl_objcache *dic_cache;
static int dic_ret;
static bool dic_done;

static unsigned long dic_count(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return dic_done ? RCL_SHRINK_EMPTY : 1000;
}

static unsigned long dic_scan(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	(void)s;
	if (!dic_done) {
		dic_done = true;
		dic_ret = rcl_objcache_destroy(dic_cache);
	}
	sc->nr_scanned = sc->nr_to_scan;
	return 0;
}

static enum rcl_evict_status dic_evict(struct rcl_lru_node *node,
				       struct rcl_evict_control *ctl)
{
	(void)node;
	(void)ctl;
	dic_ret = rcl_objcache_destroy(dic_cache);
	return RCL_EVICT_BUSY;
}

static void test_objcache_destroy_in_a_callback_is_refused(void **state)
{
	static const struct rcl_shrinker_ops sops = {
		.count_objects = dic_count,
		.scan_objects = dic_scan,
	};
	struct rcl_shrinker_config scfg = { .ops = &sops };
	struct fx *f = fx_new(64, 4, false);
	struct rcl_shrinker *s;
	unsigned i;
	char key[8];

	(void)state;
	for (i = 0; i < 32; i++) {
		snprintf(key, sizeof(key), "o%u", i);
		put(f, insert_new(f, key, 1));
	}
	dic_cache = f->c;

	/* A shrinker of another domain's reclaim pass. */
	{
		struct rcl_domain_config dc = { .budget = 1 << 20 };
		struct rcl_domain *d2;

		assert_int_equal(rcl_domain_new(&dc, &d2), 0);
		assert_int_equal(rcl_shrinker_new(rcl_domain_registry(d2),
						  &scfg, &s), 0);
		assert_int_equal(rcl_shrinker_register(s), 0);
		dic_done = false;
		dic_ret = 1;
		assert_true(rcl_domain_reclaim(d2, 100, RCL_CTX_CAPABLE,
					       NULL) >= 0);
		assert_true(dic_done);
		assert_int_equal(dic_ret, -EDEADLK);
		assert_int_equal(rcl_shrinker_free(s), 0);
		assert_int_equal(rcl_domain_free(d2), 0);
	}
	/* An evict callback of an lruvec shrunk by hand (no pass). */
	{
		static const struct rcl_lruvec_ops lops = { .evict = dic_evict };
		struct rcl_lruvec_config lc = { .ops = &lops };
		struct rcl_lru_shrink_control lsc = { .type = RCL_LRU_FILE,
						      .nr_to_scan = 1 };
		struct rcl_lruvec lv;
		struct rcl_lru_node n;

		assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
		rcl_lru_node_init(&n);
		assert_int_equal(rcl_lruvec_add(&lv, &n, RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		dic_ret = 1;
		assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &lsc), 0);
		assert_int_equal(dic_ret, -EDEADLK);
		assert_int_equal(rcl_lruvec_del(&lv, &n), 0);
		rcl_lruvec_destroy(&lv);
	}
	/*
	 * A shrinker of a registry the application shrinks itself: no pass,
	 * but rcl_shrinker_free() of the cache's shadow limit would not wait
	 * there either.
	 */
	{
		struct rcl_shrinker_registry *reg;

		assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
		assert_int_equal(rcl_shrinker_new(reg, &scfg, &s), 0);
		assert_int_equal(rcl_shrinker_register(s), 0);
		dic_done = false;
		dic_ret = 1;
		assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 0,
							      RCL_CTX_CAPABLE,
							      NULL), 0);
		assert_true(dic_done);
		assert_int_equal(dic_ret, -EDEADLK);
		assert_int_equal(rcl_shrinker_free(s), 0);
		assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	}

	/* Nothing was done: every object is there, still charged. */
	for (i = 0; i < 32; i++) {
		struct rcl_objcache_node *n;

		snprintf(key, sizeof(key), "o%u", i);
		n = rcl_objcache_get(f->c, key, strlen(key), NULL);
		assert_non_null(n);
		assert_int_equal(rcl_objcache_put(f->c, n), 0);
	}
	assert_int_equal(rcl_domain_usage(f->d), 32);
	assert_int_equal(atomic_load(&nr_destroyed), 0);
	/* The domain reaches every shard: a charge of the whole budget
	 * reclaims all 32 objects. */
	rcl_lru_drain_local();
	for (i = 0; i < rcl_objcache_nr_shards(f->c); i++) {
		assert_int_equal(rcl_lruvec_drain(rcl_objcache_lruvec(f->c, i)), 0);
		assert_true(rcl_lruvec_count(rcl_objcache_lruvec(f->c, i),
					     RCL_LRU_LIST(RCL_LRU_FILE, 0),
					     NULL) > 0);
	}
	assert_int_equal(rcl_domain_charge(f->d, 64, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(atomic_load(&nr_destroyed), 32);
	assert_int_equal(stats(f).objects, 0);
	assert_int_equal(stats(f).evictions, 32);
	rcl_domain_uncharge(f->d, 64);
	fx_free(f);
}

static void test_objcache_application_keys(void **state)
{
	struct rcl_domain_config dc = { .budget = 1 << 20 };
	struct rcl_objcache_config cc = { .ops = &ikey_ops, .nr_shards = 4,
					  .flags = RCL_OBJCACHE_DESTROY_IN_RECLAIM };
	static struct ikey pool[64];	/* no destructor: a static pool */
	struct rcl_domain *d;
	struct rcl_objcache *c;
	unsigned i;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	assert_int_equal(rcl_objcache_new(d, &cc, &c), 0);
	for (i = 0; i < 64; i++) {
		pool[i].id = (uint64_t)i << 40;
		assert_int_equal(rcl_objcache_insert(c, &pool[i].node, &pool[i].id,
						     8, 1, RCL_CTX_CAPABLE, NULL,
						     NULL), 0);
		assert_int_equal(rcl_objcache_put(c, &pool[i].node), 0);
	}
	for (i = 0; i < 64; i++) {
		uint64_t id = (uint64_t)i << 40;
		struct rcl_objcache_node *n = rcl_objcache_get(c, &id, 8, NULL);

		assert_ptr_equal(n, &pool[i].node);
		assert_int_equal(rcl_objcache_put(c, n), 0);
	}
	{
		uint64_t id = 5;

		assert_null(rcl_objcache_get(c, &id, 8, NULL));
		id = 3ull << 40;
		assert_int_equal(rcl_objcache_del(c, &id, 8), 0);
		assert_null(rcl_objcache_get(c, &id, 8, NULL));
	}
	/* After its destructor-less end the node is idle: reusable. */
	assert_int_equal(rcl_objcache_insert(c, &pool[3].node, &pool[3].id, 8, 1,
					     RCL_CTX_CAPABLE, NULL, NULL), 0);
	assert_int_equal(rcl_objcache_put(c, &pool[3].node), 0);
	assert_int_equal(rcl_domain_usage(d), 64);
	assert_int_equal(rcl_objcache_destroy(c), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The default end of an evicted object: uncharged when evicted (reclaim
 * sees its progress), destroyed by the shard's next insert in the inserting
 * thread, at most RCL_OBJCACHE_REAP_MAX waiting per shard (the evict
 * callback destroys the rest itself), and destroy runs whatever still waits.
 */
static void test_objcache_evicted_destroyed_by_next_insert(void **state)
{
	struct fx *f = fx_new_deferred(1 << 20, 1);
	struct rcl_reclaim_result res;
	struct rcl_objcache_stats st;
	struct tobj *x;
	char key[16];
	unsigned i;

	(void)state;
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "d%u", i);
		put(f, insert_new(f, key, 100));
	}
	reclaim_all(f, &res);
	st = stats(f);
	assert_int_equal(res.nr_reclaimed, 10);
	assert_int_equal(st.evictions, 10);
	assert_int_equal(st.objects, 0);
	assert_int_equal(st.reap_pending, 10);
	assert_int_equal(rcl_domain_usage(f->d), 0);	/* uncharged at once */
	assert_int_equal(atomic_load(&nr_destroyed), 0);	/* not yet */
	assert_int_equal(atomic_load(&live), 10);
	/* Nothing reaches a waiting object: its key misses. */
	assert_null(rcl_objcache_get(f->c, "d3", 2, NULL));

	/* The next insert into the shard destroys them, after its own. */
	x = insert_new(f, "new", 100);
	assert_int_equal(atomic_load(&nr_destroyed), 10);
	assert_int_equal(stats(f).reap_pending, 0);
	assert_int_equal(atomic_load(&live), 1);
	put(f, x);

	/* Beyond RCL_OBJCACHE_REAP_MAX, the evict callback destroys. */
	for (i = 0; i < RCL_OBJCACHE_REAP_MAX + 8; i++) {
		snprintf(key, sizeof(key), "e%u", i);
		put(f, insert_new(f, key, 100));
	}
	atomic_store(&nr_destroyed, 0);
	reclaim_all(f, &res);
	st = stats(f);
	assert_int_equal(st.objects, 0);
	assert_int_equal(st.reap_pending, RCL_OBJCACHE_REAP_MAX);
	assert_int_equal(atomic_load(&nr_destroyed),
			 RCL_OBJCACHE_REAP_MAX + 8 + 1 - RCL_OBJCACHE_REAP_MAX);
	assert_int_equal(rcl_domain_usage(f->d), 0);

	/* Destroy runs the rest (fx_free checks nothing is left). */
	assert_int_equal(rcl_objcache_destroy(f->c), 0);
	f->c = NULL;
	assert_int_equal(atomic_load(&live), 0);
	fx_free(f);
}

/*
 * meta_charge: every insert charges weight + meta_charge, which is also the
 * lru weight and what the stats call weight; an empty value (weight 0) is
 * charged the overhead alone; a lost race and a failed charge leave
 * nothing charged.
 */
static void test_objcache_meta_charge_is_charged(void **state)
{
	const uint64_t w = 100, meta = 40;
	struct fx *f = fx_new_meta(1 << 20, 4, meta,
				   RCL_OBJCACHE_DESTROY_IN_RECLAIM);
	struct tobj *objs[100], *e, *x;
	struct rcl_objcache_node *ex;
	unsigned i;
	char key[8];

	(void)state;
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "m%u", i);
		objs[i] = insert_new(f, key, w);
		assert_int_equal(rcl_domain_usage(f->d), (i + 1) * (w + meta));
	}
	assert_int_equal(stats(f).objects, 100);
	assert_int_equal(stats(f).weight, 100 * (w + meta));
	assert_int_equal(lru_weight(f), 100 * (w + meta));
	/* The payload is weight - objects x meta_charge. */
	assert_int_equal(stats(f).weight - stats(f).objects * meta, 100 * w);

	/* A lost race: nothing charged. */
	x = tobj_new("m7");
	assert_int_equal(rcl_objcache_insert(f->c, &x->node, x->key, x->klen, w,
					     RCL_CTX_CAPABLE, NULL, &ex), -EEXIST);
	assert_ptr_equal(ex, &objs[7]->node);
	put(f, objs[7]);
	assert_int_equal(rcl_domain_usage(f->d), 100 * (w + meta));

	/* An empty value: the overhead alone. */
	e = insert_new(f, "empty", 0);
	assert_int_equal(rcl_domain_usage(f->d), 100 * (w + meta) + meta);
	assert_int_equal(lru_weight(f), 100 * (w + meta) + meta);

	/*
	 * Strict and full of pinned objects, with room for the weight but
	 * not for the charge: -ENOMEM, nothing charged.
	 */
	assert_int_equal(rcl_domain_set_budget(f->d, rcl_domain_usage(f->d) +
						     w + meta - 1), 0);
	assert_int_equal(rcl_objcache_insert(f->c, &x->node, x->key, 1, w,
					     RCL_CTX_CAPABLE, NULL, NULL), -ENOMEM);
	assert_int_equal(rcl_domain_usage(f->d), 100 * (w + meta) + meta);
	assert_int_equal(stats(f).charge_failures, 1);
	tobj_free(x);
	put(f, e);
	for (i = 0; i < 100; i++)
		put(f, objs[i]);
	fx_free(f);
}

/*
 * What was charged is uncharged, once, however the object goes: del of an
 * unpinned object, del of a pinned one (at its last put), eviction (in the
 * evict callback and deferred to the next insert), destroy.
 */
static void test_objcache_meta_charge_uncharge_is_symmetric(void **state)
{
	const uint64_t w = 60, meta = 100, c = w + meta;
	struct rcl_reclaim_result res;
	struct fx *f;
	struct tobj *a, *b;
	unsigned i, mode;
	char key[8];

	(void)state;
	for (mode = 0; mode < 2; mode++) {
		/* One shard: the next insert reaps every deferred object. */
		f = fx_new_meta(1 << 20, 1, meta,
				mode ? 0 : RCL_OBJCACHE_DESTROY_IN_RECLAIM);
		/* del, unpinned: uncharged at once */
		a = insert_new(f, "a", w);
		put(f, a);
		assert_int_equal(rcl_domain_usage(f->d), c);
		assert_int_equal(rcl_objcache_del(f->c, "a", 1), 0);
		assert_int_equal(rcl_domain_usage(f->d), 0);
		/* del, pinned: uncharged at the last put */
		b = insert_new(f, "b", w);
		assert_int_equal(rcl_objcache_del_node(f->c, &b->node), 0);
		assert_int_equal(rcl_domain_usage(f->d), c);
		put(f, b);
		assert_int_equal(rcl_domain_usage(f->d), 0);
		assert_int_equal(atomic_load(&nr_destroyed), 2);

		/* eviction: uncharged when evicted, whenever destroyed */
		for (i = 0; i < RCL_OBJCACHE_REAP_MAX; i++) {
			snprintf(key, sizeof(key), "e%u", i);
			put(f, insert_new(f, key, w));
		}
		assert_int_equal(rcl_domain_usage(f->d), RCL_OBJCACHE_REAP_MAX * c);
		reclaim_all(f, &res);
		assert_int_equal(res.nr_reclaimed, RCL_OBJCACHE_REAP_MAX);
		assert_int_equal(res.weight_reclaimed, RCL_OBJCACHE_REAP_MAX * c);
		assert_int_equal(rcl_domain_usage(f->d), 0);
		assert_int_equal(stats(f).weight, 0);
		assert_int_equal(stats(f).reap_pending,
				 mode ? RCL_OBJCACHE_REAP_MAX : 0);
		assert_int_equal(atomic_load(&nr_destroyed),
				 mode ? 2 : 2 + RCL_OBJCACHE_REAP_MAX);
		/* The next insert destroys the deferred ones; nothing more
		 * is uncharged for them. */
		a = insert_new(f, "a", w);
		assert_int_equal(atomic_load(&nr_destroyed),
				 2 + RCL_OBJCACHE_REAP_MAX);
		assert_int_equal(rcl_domain_usage(f->d), c);
		put(f, a);

		/* destroy: every object left is uncharged (fx_free: 0) */
		for (i = 0; i < 20; i++) {
			snprintf(key, sizeof(key), "d%u", i);
			put(f, insert_new(f, key, w + i));
		}
		assert_int_equal(rcl_domain_usage(f->d),
				 21 * c + 20 * 19 / 2);
		fx_free(f);
	}
}

/*
 * -E2BIG when weight + meta_charge does not fit the lru weight, even if
 * the weight alone does, and for weights whose sum with meta_charge would
 * wrap 64 bits; the largest that fits is charged exactly.  A meta_charge
 * above UINT32_MAX is refused at creation.
 */
static void test_objcache_meta_charge_e2big_boundary(void **state)
{
	const uint64_t meta = 100;
	struct fx *f = fx_new_meta(1ull << 40, 1, meta,
				   RCL_OBJCACHE_DESTROY_IN_RECLAIM);
	struct rcl_objcache_config cc = { .ops = &t_ops, .nr_shards = 1 };
	struct tobj *a = tobj_new("big"), *z;
	struct rcl_objcache *c2;

	(void)state;
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen,
					     (uint64_t)UINT32_MAX - meta + 1,
					     RCL_CTX_CAPABLE, NULL, NULL), -E2BIG);
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen,
					     UINT32_MAX, RCL_CTX_CAPABLE, NULL,
					     NULL), -E2BIG);
	/* The sum would wrap to 0 and to 99: still -E2BIG. */
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen,
					     UINT64_MAX - meta + 1,
					     RCL_CTX_CAPABLE, NULL, NULL), -E2BIG);
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen,
					     UINT64_MAX, RCL_CTX_CAPABLE, NULL,
					     NULL), -E2BIG);
	assert_int_equal(rcl_domain_usage(f->d), 0);
	assert_int_equal(stats(f).charge_failures, 0);
	assert_null(rcl_objcache_node_key(&a->node, NULL));	/* still idle */
	/* The largest weight that fits. */
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen,
					     (uint64_t)UINT32_MAX - meta,
					     RCL_CTX_CAPABLE, NULL, NULL), 0);
	assert_int_equal(rcl_domain_usage(f->d), UINT32_MAX);
	assert_int_equal(lru_weight(f), UINT32_MAX);
	put(f, a);
	fx_free(f);

	/* meta_charge UINT32_MAX: only an empty value fits. */
	f = fx_new_meta(1ull << 40, 1, UINT32_MAX,
			RCL_OBJCACHE_DESTROY_IN_RECLAIM);
	a = tobj_new("one");
	z = tobj_new("zero");
	assert_int_equal(rcl_objcache_insert(f->c, &a->node, a->key, a->klen, 1,
					     RCL_CTX_CAPABLE, NULL, NULL), -E2BIG);
	tobj_free(a);
	assert_int_equal(rcl_objcache_insert(f->c, &z->node, z->key, z->klen, 0,
					     RCL_CTX_CAPABLE, NULL, NULL), 0);
	assert_int_equal(rcl_domain_usage(f->d), UINT32_MAX);
	put(f, z);
	/* Above UINT32_MAX: refused at creation, *out untouched. */
	c2 = (void *)f;
	cc.meta_charge = (uint64_t)UINT32_MAX + 1;
	assert_int_equal(rcl_objcache_new(f->d, &cc, &c2), -EINVAL);
	cc.meta_charge = UINT64_MAX;
	assert_int_equal(rcl_objcache_new(f->d, &cc, &c2), -EINVAL);
	assert_ptr_equal(c2, (void *)f);
	fx_free(f);
}

/*
 * A full strict domain of 200 objects charged @w + @meta each, with no
 * watermark margin, then a charge of 64 objects' charges: the evictions
 * it took.  Checks that usage fell by exactly their charges.
 */
static uint64_t evictions_for_deficit(uint64_t w, uint64_t meta)
{
	const uint64_t c = w + meta;
	struct fx *f = fx_new_meta(200 * c, 1, meta,
				   RCL_OBJCACHE_DESTROY_IN_RECLAIM);
	struct rcl_watermarks wm = { .min = 0, .low = 1, .high = 2 };
	struct rcl_reclaim_result res;
	uint64_t ev;
	unsigned i;
	char key[8];

	/* No margin: the deficit of a charge is what does not fit. */
	assert_int_equal(rcl_domain_set_watermarks(f->d, &wm), 0);
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "r%u", i);
		put(f, insert_new(f, key, w));
	}
	assert_int_equal(rcl_domain_usage(f->d), 200 * c);	/* full */
	assert_int_equal(stats(f).evictions, 0);
	assert_int_equal(lru_weight(f), 200 * c);
	assert_int_equal(rcl_domain_charge(f->d, 64 * c, RCL_CTX_CAPABLE, NULL), 0);
	ev = stats(f).evictions;
	assert_int_equal(atomic_load(&nr_destroyed), ev);
	assert_int_equal(rcl_domain_usage(f->d), (200 - ev) * c + 64 * c);
	assert_int_equal(rcl_domain_uncharge(f->d, 64 * c), 0);
	/* An explicit reclaim: the weight it counts is what it uncharged. */
	assert_int_equal(rcl_domain_reclaim(f->d, 40, RCL_CTX_CAPABLE, &res), 0);
	assert_true(res.nr_reclaimed > 0);
	assert_int_equal(res.weight_reclaimed, res.nr_reclaimed * c);
	assert_int_equal(rcl_domain_usage(f->d),
			 (200 - ev - res.nr_reclaimed) * c);
	assert_int_equal(stats(f).weight, rcl_domain_usage(f->d));
	fx_free(f);
	return ev;
}

/*
 * The lru weight includes meta_charge, so reclaim turns a deficit into
 * objects at the charge: a cache of 50-byte payloads with a meta_charge of
 * 150 gives up exactly as many objects as a cache of weight-200 objects
 * with none, enough to cover the deficit and far from all 200 (at an lru
 * weight of 50 the deficit of 64 x 200 would be a goal of 256 objects).
 */
static void test_objcache_meta_charge_reclaims_by_charge(void **state)
{
	uint64_t with_meta, plain;

	(void)state;
	with_meta = evictions_for_deficit(50, 150);
	plain = evictions_for_deficit(200, 0);
	assert_int_equal(with_meta, plain);
	assert_true(with_meta >= 64);		/* the deficit is covered */
	assert_true(with_meta < 100);		/* reclaim's batches, no more */
}

/*
 * A lost race with @existing NULL hands nothing back, so it must pin
 * nothing: the cached object stays reclaimable and destroy succeeds.
 */
static void test_objcache_lost_race_without_existing_pins_nothing(void **state)
{
	struct fx *f = fx_new(1 << 20, 2, false);
	struct rcl_reclaim_result res;
	struct tobj *a = insert_new(f, "k", 100), *b = tobj_new("k");

	(void)state;
	put(f, a);
	assert_int_equal(rcl_objcache_insert(f->c, &b->node, b->key, 1, 50,
					     RCL_CTX_CAPABLE, NULL, NULL), -EEXIST);
	tobj_free(b);
	assert_int_equal(stats(f).lost_races, 1);
	/* Only the index holds it: a put is one too many. */
	assert_int_equal(rcl_objcache_put(f->c, &a->node), -EINVAL);
	reclaim_all(f, &res);
	assert_int_equal(rcl_domain_usage(f->d), 0);
	assert_int_equal(atomic_load(&live), 0);
	fx_free(f);
}

/*
 * The reference word counts 2^31 - 2 pins besides the index's; a get or a
 * lost race past that is refused (a pin leak), never carried into the
 * "hashed" bit.  White-box: the word is set near the limit directly, since
 * taking 2^31 pins one by one takes minutes.
 */
static void test_objcache_pin_count_is_bounded(void **state)
{
	const uint32_t hashed = 1u << 31, full = hashed - 1;
	struct fx *f = fx_new(1 << 20, 1, false);
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *ex;
	struct tobj *a = insert_new(f, "k", 100), *b = tobj_new("k");

	(void)state;
	put(f, a);
	atomic_store(&a->node.__refs, hashed | (full - 1));
	assert_ptr_equal(rcl_objcache_get(f->c, "k", 1, NULL), &a->node);
	assert_int_equal(atomic_load(&a->node.__refs), hashed | full);
	/* Full: refused, the miss token cleared, the object unchanged. */
	memset(&miss, 0xa5, sizeof(miss));
	assert_null(rcl_objcache_get(f->c, "k", 1, &miss));
	assert_false(miss.refault);
	assert_int_equal(atomic_load(&a->node.__refs), hashed | full);
	ex = &b->node;
	assert_int_equal(rcl_objcache_insert(f->c, &b->node, b->key, 1, 50,
					     RCL_CTX_CAPABLE, NULL, &ex), -EOVERFLOW);
	assert_null(ex);
	assert_int_equal(rcl_objcache_insert(f->c, &b->node, b->key, 1, 50,
					     RCL_CTX_CAPABLE, NULL, NULL), -EEXIST);
	assert_int_equal(atomic_load(&a->node.__refs), hashed | full);
	assert_int_equal(rcl_domain_usage(f->d), 100);
	tobj_free(b);
	/* Puts bring it down as usual. */
	assert_int_equal(rcl_objcache_put(f->c, &a->node), 0);
	assert_int_equal(atomic_load(&a->node.__refs), hashed | (full - 1));
	atomic_store(&a->node.__refs, hashed | 1);	/* the leaked pins */
	fx_free(f);
}

/* An allocator that records the sizes asked for and fails one of them. */
static size_t rec_sizes[64];
static unsigned rec_nr, rec_fail_at = ~0u;

static void *rec_alloc(void *ctx, size_t n)
{
	unsigned i = rec_nr++;

	(void)ctx;
	if (i < 64)
		rec_sizes[i] = n;
	return i == rec_fail_at ? NULL : malloc(n);
}

static void rec_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

/*
 * The shadow table has as many slots as the shard has buckets ("grown with
 * it"): after a failed shadow allocation the next insert catches up, and
 * later doublings keep the two equal.  8 buckets of 8 bytes, 8 slots of 16.
 */
static void test_objcache_shadow_table_catches_up(void **state)
{
	static const struct rcl_allocator al = { .alloc = rec_alloc,
						 .free = rec_free };
	struct fx *f = fx_new(1 << 20, 1, false);
	struct rcl_objcache_config cc = { .ops = &t_ops, .seed = 42,
					  .nr_shards = 1, .nr_buckets = 8,
					  .allocator = &al };
	unsigned i, base, n;
	char k[8];

	(void)state;
	assert_int_equal(rcl_objcache_destroy(f->c), 0);
	rec_nr = 0;
	rec_fail_at = ~0u;
	assert_int_equal(rcl_objcache_new(f->d, &cc, &f->c), 0);
	base = rec_nr;
	rec_fail_at = base + 1;		/* the shadows' first growth */
	for (i = 0; i < 9; i++) {
		snprintf(k, sizeof(k), "%u", i);
		put(f, insert_new(f, k, 1));
	}
	/* At the 9th insert: buckets to 16 (128 bytes), shadows (256) fail. */
	assert_int_equal(rec_nr, base + 2);
	assert_int_equal(rec_sizes[base], 16 * sizeof(void *));
	assert_int_equal(rec_sizes[base + 1], 16 * 16);
	/* The next insert does not grow the buckets but brings the shadows up. */
	put(f, insert_new(f, "9", 1));
	assert_int_equal(rec_nr, base + 3);
	assert_int_equal(rec_sizes[base + 2], 16 * 16);
	for (i = 10; i < 17; i++) {
		snprintf(k, sizeof(k), "%u", i);
		put(f, insert_new(f, k, 1));
	}
	/* The 17th: both to 32. */
	n = rec_nr;
	assert_int_equal(n, base + 5);
	assert_int_equal(rec_sizes[base + 3], 32 * sizeof(void *));
	assert_int_equal(rec_sizes[base + 4], 32 * 16);
	fx_free(f);
	rec_fail_at = ~0u;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_objcache_node_size_is_documented),
		cmocka_unit_test(test_objcache_hit_and_miss),
		cmocka_unit_test(test_objcache_lost_insert_race),
		cmocka_unit_test(test_objcache_lost_race_without_existing_pins_nothing),
		cmocka_unit_test(test_objcache_pin_count_is_bounded),
		cmocka_unit_test(test_objcache_shadow_table_catches_up),
		cmocka_unit_test(test_objcache_charge_failure_changes_nothing),
		cmocka_unit_test(test_objcache_weight_is_one_value),
		cmocka_unit_test(test_objcache_meta_charge_is_charged),
		cmocka_unit_test(test_objcache_meta_charge_uncharge_is_symmetric),
		cmocka_unit_test(test_objcache_meta_charge_e2big_boundary),
		cmocka_unit_test(test_objcache_meta_charge_reclaims_by_charge),
		cmocka_unit_test(test_objcache_reclaim_evicts_unpinned_only),
		cmocka_unit_test(test_objcache_evicted_destroyed_by_next_insert),
		cmocka_unit_test(test_objcache_refault_insert_is_activated),
		cmocka_unit_test(test_objcache_deleted_key_keeps_no_old_shadow),
		cmocka_unit_test(test_objcache_shadows_are_bounded),
		cmocka_unit_test(test_objcache_miss_token_is_matched_by_hash),
		cmocka_unit_test(test_objcache_del_with_pins),
		cmocka_unit_test(test_objcache_destroy_with_pins_is_ebusy),
		cmocka_unit_test(test_objcache_destroy_releases_a_large_cache),
		cmocka_unit_test(test_objcache_put_without_get_is_einval),
		cmocka_unit_test(test_objcache_for_each_sees_every_object),
		cmocka_unit_test(test_objcache_stats_add_up),
		cmocka_unit_test(test_objcache_dirty_objects_stay_and_are_written),
		cmocka_unit_test(test_objcache_flusher_thread_writes),
		cmocka_unit_test(test_objcache_caches_share_a_domain),
		cmocka_unit_test(test_objcache_application_keys),
		cmocka_unit_test(test_objcache_new_in_a_reclaim_pass_is_refused),
		cmocka_unit_test(test_objcache_destroy_in_a_callback_is_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
