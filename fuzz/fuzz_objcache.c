/* SPDX-License-Identifier: MIT */
/*
 * fuzz_objcache - libFuzzer target: a script of object-cache operations
 *
 * The input drives one or two object caches (<reclaim/objcache.h>) in one
 * memory domain, over a fixed pool of harness objects and a small key space
 * (16 byte-string keys of 1..8 bytes that share prefixes; optionally the
 * application's hash and equality callbacks, one of them deliberately weak,
 * so that hashes collide).  A model of every object (free, in the index
 * with its pins and dirty bit, deleted but still pinned) is kept beside the
 * library; after every operation the model is compared with the library's
 * counters (rcl_objcache_stats(), rcl_domain_usage(), the domain's dirty
 * counts), every return code with the documented answer, and every
 * destructor call with what the contract allows at that moment (never
 * while pinned, dirty or under writeback, never twice, only from the paths
 * objcache.h names).  Each cache may have a per-object meta_charge (an
 * input that starts with "MC" and a byte choosing it): the model charges
 * every object weight + meta_charge, the lru weight included.  Any
 * mismatch aborts.  fuzz/README.md documents the encoding.
 *
 * Single-threaded, as fuzz_ops.c: no reclaimer or flusher thread, and a
 * harness clock whose wait never sleeps.
 *
 * Without FUZZ_LIBFUZZER the file also has a main() that replays files (or
 * every file of directories), for the Meson test 'fuzz-objcache-corpus'.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <reclaim/reclaim.h>
#include <reclaim/objcache.h>
#include <reclaim/refusal.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#endif
#ifdef FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#elif defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define POISON(p, n) ((void)VALGRIND_MAKE_MEM_NOACCESS((p), (n)))
#define UNPOISON(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#endif
#endif
#ifndef POISON
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------------------- */
/* Checks                                                                     */
/* ------------------------------------------------------------------------- */

static unsigned g_step;		/* operation index, for messages */
static unsigned g_op;		/* its opcode */
static int g_trace = -1;	/* FUZZ_TRACE=1: print each operation */

#define FUZZ_WHERE_FMT "fuzz_objcache: step %u op %u: "
#define FUZZ_WHERE_ARGS g_step, g_op
#include "check.h"

/*
 * A refusal with -EBUSY or -EDEADLK says why (refusal.h), and names an
 * rcl_objcache_ function when the call was one (@fn_ prefix).  The reason
 * is cleared before each checked call (CALL_RC), so it comes from that call.
 */
#define CHECK_REASON(rc_, pfx_)                                               \
	do {                                                                  \
		if ((rc_) == -EBUSY || (rc_) == -EDEADLK) {                   \
			const char *why_ = rcl_last_refusal();                \
			CHECK(why_ && strncmp(why_, (pfx_), strlen(pfx_)) == 0, \
			      "refused with %d and no reason (%s)", (rc_),    \
			      why_ ? why_ : "NULL");                          \
		}                                                             \
	} while (0)
#define CHECK_RC(rc, want)                                                    \
	do {                                                                  \
		int rc_, want_ = (want);                                      \
		rcl_clear_refusal();                                          \
		rc_ = (rc);                                                   \
		CHECK(rc_ == want_, "got %d, want %d", rc_, want_);          \
		CHECK_REASON(rc_, "rcl_");                                    \
	} while (0)
/* The same, for a call of the object cache: the reason names it. */
#define CHECK_OC_RC(rc, want)                                                 \
	do {                                                                  \
		int rc_, want_ = (want);                                      \
		rcl_clear_refusal();                                          \
		rc_ = (rc);                                                   \
		CHECK(rc_ == want_, "got %d, want %d", rc_, want_);          \
		CHECK_REASON(rc_, "rcl_objcache_");                           \
	} while (0)

/* ------------------------------------------------------------------------- */
/* The model                                                                  */
/* ------------------------------------------------------------------------- */

#define NOBJ 48
#define NKEY 16
#define NCACHE 2
#define MAX_STEPS 4096
#define NR_OPS 16

enum ostate { O_FREE, O_INDEXED, O_ZOMBIE };

struct hobj {
	struct rcl_objcache_node node;
	uint8_t key[8];		/* the key bytes the node points to */
	/* model (never poisoned) */
	enum ostate st;
	int cache;		/* while not free */
	int kid;
	unsigned klen;
	unsigned pins;
	bool dirty;
	bool in_write;		/* in the write hook now */
	unsigned writes;	/* write calls in this writeback_all */
	uint64_t weight;	/* its charge: the insert's weight + meta */
	unsigned inserts, dtors;
	bool visited;
};

/* What a destructor call may be, at this moment. */
enum dctx { D_NONE, D_RECLAIM, D_DEL, D_PUT, D_DESTROY };

struct hcache {
	struct rcl_objcache *c;
	struct rcl_objcache_config cfg;
	struct rcl_objcache_ops ops;
	bool live;
	bool user_keys, weak, shadows, has_write;
	uint64_t meta;			/* cfg.meta_charge */
	struct rcl_objcache_stats m;	/* the model's counters */
	struct rcl_objcache_miss tok[NKEY];
	bool tok_set[NKEY];
	bool shadow_possible[NKEY];	/* an object of this key was evicted */
};

static struct hobj pool[NOBJ];
static struct hcache caches[NCACHE];
static unsigned g_ncache;
static struct rcl_domain *g_dom;
static uint64_t g_budget;
static bool g_soft;
static uint64_t g_extra;	/* unrelated charges */
static uint64_t g_now;

static enum dctx g_dctx;
static struct hobj *g_dtarget;	/* D_DEL / D_PUT: the object expected */
static int g_dcache = -1;	/* D_DESTROY: the cache */
static unsigned g_dcalls;	/* destructor calls in the current call */
static uint64_t g_dweight;
static bool g_dtor_destroy_other;	/* D_RECLAIM: try destroying the other cache */
static const uint8_t *g_wb_fail;	/* write failure pattern */
static unsigned g_wb_idx, g_wb_calls, g_wb_ok;
static bool g_wb_selfdel;
static bool g_reclaim_writes;	/* the domain has RCL_DOMAIN_RECLAIM_WRITES */

static const char key_base[2][8] = {
	{ 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h' },
	{ 'A', 'b', 0, 'd', 'x', 'y', 'z', (char)0xff },
};

static const uint8_t *key_bytes(int k)
{
	return (const uint8_t *)key_base[k / 8];
}

static unsigned key_len(int k)
{
	return 1 + (unsigned)(k % 8);
}

static struct hobj *obj_of(const struct rcl_objcache_node *n)
{
	struct hobj *o = rcl_container_of((struct rcl_objcache_node *)n,
					   struct hobj, node);

	CHECK(o >= pool && o < pool + NOBJ && (char *)o - (char *)pool ==
	      (o - pool) * (ptrdiff_t)sizeof(*o), "node %p not a pool object",
	      (const void *)n);
	return o;
}

static int cache_index(void *priv)
{
	struct hcache *hc = priv;

	CHECK(hc == &caches[0] || hc == &caches[1], "bad priv %p", priv);
	return (int)(hc - caches);
}

/* The object the model has in cache @c's index under key @k, or NULL. */
static struct hobj *model_find(int c, int k)
{
	struct hobj *found = NULL;

	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].st == O_INDEXED && pool[i].cache == c &&
		    pool[i].kid == k) {
			CHECK(!found, "two objects of key %d in cache %d", k, c);
			found = &pool[i];
		}
	return found;
}

static uint64_t model_usage(void)
{
	uint64_t u = g_extra;

	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].st != O_FREE)
			u += pool[i].weight;
	return u;
}

/* Two keys with the same hash (the weak user hash: the same length). */
static bool same_hash(int c, int k1, int k2)
{
	if (k1 == k2)
		return true;
	return caches[c].user_keys && caches[c].weak &&
	       key_len(k1) == key_len(k2);
}

/* ------------------------------------------------------------------------- */
/* Clock: never sleeps                                                        */
/* ------------------------------------------------------------------------- */

static uint64_t clk_now(void *ctx)
{
	(void)ctx;
	return g_now;
}

static int clk_wait(void *ctx, pthread_cond_t *cond, pthread_mutex_t *mutex,
		    uint64_t deadline)
{
	(void)ctx, (void)cond, (void)mutex;
	CHECK(deadline != RCL_CLOCK_FOREVER, "library waits forever");
	if (g_now < deadline)
		g_now = deadline;
	return ETIMEDOUT;
}

static const struct rcl_clock fuzz_clock = { clk_now, clk_wait, NULL };

/* ------------------------------------------------------------------------- */
/* Callbacks                                                                  */
/* ------------------------------------------------------------------------- */

static uint64_t h_hash(const void *key, size_t len, void *priv)
{
	struct hcache *hc = &caches[cache_index(priv)];
	const uint8_t *p = key;
	uint64_t h = 1469598103934665603ull;

	CHECK(len <= 8 && (key || !len), "hash of %zu bytes", len);
	if (hc->weak)
		return len;	/* the key itself would do; this is worse */
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static bool h_eq(const struct rcl_objcache_node *n, const void *key,
		 size_t len, void *priv)
{
	int c = cache_index(priv);
	struct hobj *o = obj_of(n);
	size_t nlen;
	const void *nk = rcl_objcache_node_key(n, &nlen);

	/* Under the shard lock, on a node of this cache's index. */
	CHECK(o->st == O_INDEXED && o->cache == c, "eq on obj %d state %d",
	      (int)(o - pool), o->st);
	CHECK(nk == o->key && nlen == o->klen, "eq: node key");
	return nlen == len && memcmp(nk, key, len) == 0;
}

static void h_dtor(struct rcl_objcache_node *n, void *priv)
{
	int c = cache_index(priv);
	struct hobj *o = obj_of(n);
	size_t len = 1;

	CHECK(o->st != O_FREE, "destructor of free obj %d", (int)(o - pool));
	CHECK(o->dtors + 1 == o->inserts, "destructor twice on obj %d",
	      (int)(o - pool));
	CHECK(o->cache == c, "destructor of obj %d from cache %d, in %d",
	      (int)(o - pool), c, o->cache);
	CHECK(!o->in_write, "destructor under writeback (obj %d)", (int)(o - pool));
	CHECK(rcl_objcache_node_key(n, &len) == NULL && len == 0,
	      "node not idle in its destructor");
	switch (g_dctx) {
	case D_RECLAIM:
		CHECK(o->st == O_INDEXED && o->pins == 0 && !o->dirty,
		      "evicted obj %d: state %d pins %u dirty %d",
		      (int)(o - pool), o->st, o->pins, o->dirty);
		caches[c].m.evictions++;
		caches[c].m.objects--;
		caches[c].m.weight -= o->weight;
		if (caches[c].shadows)
			for (int k = 0; k < NKEY; k++)
				if (same_hash(c, k, o->kid))
					caches[c].shadow_possible[k] = true;
		if (g_dtor_destroy_other && g_ncache == 2 && caches[1 - c].live) {
			/* A destroy from an evict callback: -EDEADLK (or
			 * -EBUSY, checked before, if it has pins). */
			bool pinned = false;
			int rc;

			for (unsigned i = 0; i < NOBJ; i++)
				if (pool[i].st != O_FREE && pool[i].cache == 1 - c &&
				    (pool[i].pins || pool[i].st == O_ZOMBIE))
					pinned = true;
			rcl_clear_refusal();
			rc = rcl_objcache_destroy(caches[1 - c].c);
			CHECK(rc == (pinned ? -EBUSY : -EDEADLK),
			      "destroy from evict: %d", rc);
			CHECK_REASON(rc, "rcl_objcache_destroy");
		}
		break;
	case D_DEL:
		CHECK(o == g_dtarget && o->st == O_INDEXED && o->pins == 0,
		      "del destructor on obj %d", (int)(o - pool));
		break;
	case D_PUT:
		CHECK(o == g_dtarget && o->st == O_ZOMBIE && o->pins == 1,
		      "put destructor on obj %d", (int)(o - pool));
		break;
	case D_DESTROY:
		CHECK(c == g_dcache && o->st == O_INDEXED && o->pins == 0,
		      "destroy destructor on obj %d", (int)(o - pool));
		break;
	default:
		CHECK(0, "destructor of obj %d outside any allowed path",
		      (int)(o - pool));
	}
	g_dcalls++;
	g_dweight += o->weight;
	o->dtors++;
	o->st = O_FREE;
	o->pins = 0;
	o->dirty = false;
	/* The library must not touch the node or the key again. */
	POISON(o, offsetof(struct hobj, st));
}

static int h_write(struct rcl_objcache_node *n, void *priv)
{
	int c = cache_index(priv);
	struct hobj *o = obj_of(n);
	int fail;

	CHECK(o->st == O_INDEXED && o->cache == c && o->dirty && !o->in_write,
	      "write of obj %d: state %d dirty %d", (int)(o - pool), o->st,
	      o->dirty);
	CHECK(o->writes == 0, "obj %d written twice in one writeback_all",
	      (int)(o - pool));
	o->writes++;
	g_wb_calls++;
	o->in_write = true;
	if (g_wb_selfdel) {
		/* Under writeback: a del from the write callback would wait
		 * for itself. */
		CHECK_OC_RC(rcl_objcache_del_node(caches[c].c, n), -EDEADLK);
		CHECK_OC_RC(rcl_objcache_del(caches[c].c, o->key, o->klen),
			    -EDEADLK);
	}
	o->in_write = false;
	fail = g_wb_fail ? (g_wb_fail[g_wb_idx++ % 3] & 1) : 0;
	if (fail)
		return -EIO;
	o->dirty = false;
	g_wb_ok++;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Invariants                                                                 */
/* ------------------------------------------------------------------------- */

static void check_stats(int c)
{
	struct hcache *hc = &caches[c];
	struct rcl_objcache_stats s;

	CHECK_RC(rcl_objcache_stats(hc->c, &s), 0);
	CHECK(s.hits == hc->m.hits, "cache %d hits %llu, model %llu", c,
	      (unsigned long long)s.hits, (unsigned long long)hc->m.hits);
	CHECK(s.misses == hc->m.misses, "cache %d misses %llu, model %llu", c,
	      (unsigned long long)s.misses, (unsigned long long)hc->m.misses);
	CHECK(s.refault_misses == hc->m.refault_misses, "refault_misses");
	CHECK(s.inserts == hc->m.inserts, "cache %d inserts %llu, model %llu", c,
	      (unsigned long long)s.inserts, (unsigned long long)hc->m.inserts);
	CHECK(s.refault_activations <= hc->m.refault_activations,
	      "refault activations %llu, refault inserts %llu",
	      (unsigned long long)s.refault_activations,
	      (unsigned long long)hc->m.refault_activations);
	CHECK(s.lost_races == hc->m.lost_races, "lost_races");
	CHECK(s.charge_failures == hc->m.charge_failures, "charge_failures");
	CHECK(s.evictions == hc->m.evictions, "evictions %llu, model %llu",
	      (unsigned long long)s.evictions, (unsigned long long)hc->m.evictions);
	CHECK(s.deletes == hc->m.deletes, "deletes");
	CHECK(s.objects == hc->m.objects, "cache %d objects %llu, model %llu", c,
	      (unsigned long long)s.objects, (unsigned long long)hc->m.objects);
	CHECK(s.weight == hc->m.weight, "cache %d weight %llu, model %llu", c,
	      (unsigned long long)s.weight, (unsigned long long)hc->m.weight);
	CHECK(s.shadows_dropped >= hc->m.shadows_dropped, "shadows_dropped fell");
	hc->m.shadows_dropped = s.shadows_dropped;
	CHECK(s.shadows + s.refault_misses + s.shadows_dropped <= s.evictions,
	      "shadows %llu + taken %llu + dropped %llu > evictions %llu",
	      (unsigned long long)s.shadows, (unsigned long long)s.refault_misses,
	      (unsigned long long)s.shadows_dropped,
	      (unsigned long long)s.evictions);
	if (!hc->shadows)
		CHECK(s.shadows == 0 && s.refault_misses == 0, "shadows kept");
}

static void check_invariants(void)
{
	uint64_t objs[NCACHE] = { 0 }, w[NCACHE] = { 0 }, nd = 0, wd = 0;
	struct rcl_dirty_stats ds;

	for (unsigned i = 0; i < NOBJ; i++) {
		struct hobj *o = &pool[i];

		CHECK(o->dtors + (o->st != O_FREE) == o->inserts,
		      "obj %u: %u inserts, %u destructor calls, state %d", i,
		      o->inserts, o->dtors, o->st);
		CHECK(!o->in_write, "obj %u in write", i);
		if (o->st == O_FREE)
			continue;
		if (o->st == O_INDEXED) {
			size_t len;

			CHECK(rcl_objcache_node_key(&o->node, &len) == o->key &&
			      len == o->klen, "obj %u key", i);
			objs[o->cache]++;
			w[o->cache] += o->weight;
			if (o->dirty) {
				nd++;
				wd += o->weight;
			}
		} else {
			CHECK(o->pins > 0, "zombie obj %u without pins", i);
			CHECK(!o->dirty, "zombie obj %u dirty", i);
		}
	}
	for (unsigned c = 0; c < g_ncache; c++) {
		CHECK(objs[c] == caches[c].m.objects && w[c] == caches[c].m.weight,
		      "cache %u model counters", c);
		check_stats((int)c);
	}
	CHECK(rcl_domain_usage(g_dom) == model_usage(),
	      "usage %llu, model %llu", (unsigned long long)rcl_domain_usage(g_dom),
	      (unsigned long long)model_usage());
	if (!g_soft)
		CHECK(rcl_domain_usage(g_dom) <= g_budget, "strict domain over budget");
	CHECK_RC(rcl_domain_dirty_stats(g_dom, &ds), 0);
	CHECK(ds.nr_dirty == nd && ds.weight_dirty == wd && ds.nr_writeback == 0,
	      "dirty %llu/%llu, model %llu/%llu, writeback %llu",
	      (unsigned long long)ds.nr_dirty, (unsigned long long)ds.weight_dirty,
	      (unsigned long long)nd, (unsigned long long)wd,
	      (unsigned long long)ds.nr_writeback);
}

/* ------------------------------------------------------------------------- */
/* Setup and teardown                                                         */
/* ------------------------------------------------------------------------- */

struct reader {
	const uint8_t *p;
	size_t n, i;
};

static uint8_t rd8(struct reader *r)
{
	return r->i < r->n ? r->p[r->i++] : 0;
}

static void cache_new(int c)
{
	struct hcache *hc = &caches[c];

	memset(&hc->m, 0, sizeof(hc->m));
	memset(hc->tok, 0, sizeof(hc->tok));
	memset(hc->tok_set, 0, sizeof(hc->tok_set));
	memset(hc->shadow_possible, 0, sizeof(hc->shadow_possible));
	CHECK_RC(rcl_objcache_new(g_dom, &hc->cfg, &hc->c), 0);
	CHECK(rcl_objcache_nr_shards(hc->c) ==
	      (hc->cfg.nr_shards ? hc->cfg.nr_shards : RCL_OBJCACHE_SHARDS_DEFAULT),
	      "nr_shards");
	hc->live = true;
}

/*
 * The meta_charge of a cache, by the nibble of the "MC" byte: small ones
 * against the weights 1..16 and the budgets 16..1036, and ones at the lru
 * weight's limit, where weights up to 16, 8, 1 and only 0 still fit.
 */
static const uint64_t metas[16] = {
	0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 100, 1000,
	UINT32_MAX - 16, UINT32_MAX - 8, UINT32_MAX - 1, UINT32_MAX,
};

static void setup(struct reader *r, uint8_t meta)
{
	uint8_t h[4];

	for (unsigned i = 0; i < 4; i++)
		h[i] = rd8(r);
	memset(pool, 0, sizeof(pool));
	memset(caches, 0, sizeof(caches));
	g_now = 1000;
	g_extra = 0;
	g_dctx = D_NONE;
	g_soft = h[0] & 1;
	g_reclaim_writes = h[3] & 0x10;
	g_budget = 16 + 4ull * h[1];

	struct rcl_domain_config dcfg = {
		.budget = g_budget,
		.mode = g_soft ? RCL_CHARGE_SOFT : RCL_CHARGE_STRICT,
		.flags = (h[3] & 0x10) ? RCL_DOMAIN_RECLAIM_WRITES : 0,
		.clock = &fuzz_clock,
	};
	CHECK_RC(rcl_domain_new(&dcfg, &g_dom), 0);

	g_ncache = (h[0] & 0x80) ? 2 : 1;
	for (unsigned c = 0; c < g_ncache; c++) {
		struct hcache *hc = &caches[c];
		uint8_t b = (uint8_t)(h[0] >> (3 * c));	/* bits 1-3, 4-6 */
		uint8_t s = (uint8_t)(h[2] >> (4 * c));

		hc->shadows = !(b & 2);
		hc->user_keys = b & 4;
		hc->weak = (b & 8) && hc->user_keys;
		hc->has_write = !(c == 1 && (h[3] & 0x80));
		hc->ops.hash = hc->user_keys ? h_hash : NULL;
		hc->ops.eq = hc->user_keys ? h_eq : NULL;
		hc->ops.destructor = h_dtor;
		hc->ops.write = hc->has_write ? h_write : NULL;
		hc->cfg.ops = &hc->ops;
		hc->cfg.priv = hc;
		hc->cfg.seed = h[3] & 0x40 ? 0x1234567 : 0;
		hc->cfg.nr_shards = 1u << (s & 3);
		hc->cfg.nr_buckets = 1u << ((s >> 2) & 3);
		hc->cfg.shadow_quota = 1 + (h[3] & 7);
		hc->cfg.lru_type = (h[3] >> 3) & 1;
		/*
		 * Destructors in the evict callback: the model learns of an
		 * eviction from its destructor (the deferred default is covered
		 * by tests/test_objcache.c and the stress test).
		 */
		hc->cfg.flags = (hc->shadows ? 0 : RCL_OBJCACHE_NO_SHADOWS) |
				RCL_OBJCACHE_DESTROY_IN_RECLAIM;
		hc->meta = metas[(meta >> (4 * c)) & 15];
		hc->cfg.meta_charge = hc->meta;
		cache_new((int)c);
	}
}

static void writeback_all(void)
{
	size_t written = 0;
	unsigned want = 0, nohook = 0;
	int rc;

	for (unsigned i = 0; i < NOBJ; i++) {
		pool[i].writes = 0;
		if (pool[i].st == O_INDEXED && pool[i].dirty) {
			if (caches[pool[i].cache].has_write)
				want++;
			else
				nohook++;
		}
	}
	g_wb_calls = 0;
	g_wb_ok = 0;
	g_wb_idx = 0;
	rc = rcl_domain_writeback_all(g_dom, rcl_objcache_writeback_ops(), NULL,
				      &written);
	/* The first failed write's error, after all the others. */
	CHECK(rc == (g_wb_ok < g_wb_calls ? -EIO : 0),
	      "writeback_all: %d, %u of %u writes failed", rc,
	      g_wb_calls - g_wb_ok, g_wb_calls);
	g_wb_fail = NULL;
	g_wb_selfdel = false;
	CHECK(g_wb_calls == want, "writeback_all wrote %u of %u dirty objects",
	      g_wb_calls, want);
	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].st == O_INDEXED && pool[i].dirty &&
		    !caches[pool[i].cache].has_write)
			pool[i].dirty = false;	/* no hook: taken as written */
		else if (pool[i].st == O_INDEXED && pool[i].dirty)
			CHECK(pool[i].writes == 1, "dirty obj %u not tried", i);
	CHECK(written == g_wb_ok + nohook, "written %zu, %u writes + %u without hook",
	      written, g_wb_ok, nohook);
}

static void destroy_cache(int c)
{
	struct hcache *hc = &caches[c];
	uint64_t u = rcl_domain_usage(g_dom);
	unsigned n = 0;

	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].st == O_INDEXED && pool[i].cache == c)
			n++;
	g_dctx = D_DESTROY;
	g_dcache = c;
	g_dcalls = 0;
	g_dweight = 0;
	CHECK_OC_RC(rcl_objcache_destroy(hc->c), 0);
	g_dctx = D_NONE;
	CHECK(g_dcalls == n, "destroy ran %u destructors, %u objects", g_dcalls, n);
	CHECK(rcl_domain_usage(g_dom) == u - g_dweight, "destroy uncharge");
	hc->live = false;
	hc->c = NULL;
}

static void teardown(void)
{
	for (unsigned i = 0; i < NOBJ; i++) {
		struct hobj *o = &pool[i];

		while (o->st != O_FREE && o->pins) {
			bool last = o->st == O_ZOMBIE && o->pins == 1;

			g_dctx = last ? D_PUT : D_NONE;
			g_dtarget = o;
			CHECK_OC_RC(rcl_objcache_put(caches[o->cache].c, &o->node), 0);
			g_dctx = D_NONE;
			if (!last)
				o->pins--;
			else
				CHECK(o->st == O_FREE, "last put kept obj %u", i);
		}
	}
	writeback_all();
	for (unsigned c = 0; c < g_ncache; c++)
		destroy_cache((int)c);
	CHECK_RC(rcl_domain_uncharge(g_dom, g_extra), 0);
	g_extra = 0;
	CHECK(rcl_domain_usage(g_dom) == 0, "usage %llu after teardown",
	      (unsigned long long)rcl_domain_usage(g_dom));
	CHECK_RC(rcl_domain_free(g_dom), 0);
	g_dom = NULL;
	for (unsigned i = 0; i < NOBJ; i++) {
		CHECK(pool[i].st == O_FREE && pool[i].dtors == pool[i].inserts,
		      "obj %u: %u inserts, %u destructor calls", i,
		      pool[i].inserts, pool[i].dtors);
		UNPOISON(&pool[i], offsetof(struct hobj, st));
	}
}

/* ------------------------------------------------------------------------- */
/* Operations                                                                 */
/* ------------------------------------------------------------------------- */

enum {
	OP_GET, OP_INSERT, OP_PUT, OP_DEL, OP_DEL_NODE, OP_MARK_DIRTY,
	OP_WRITEBACK, OP_RECLAIM, OP_CHARGE, OP_UNCHARGE, OP_FOR_EACH,
	OP_STATS, OP_DESTROY, OP_INVALID, OP_GET_PUT, OP_INSERT2,
};

static int pick_cache(uint8_t b)
{
	return g_ncache == 2 ? (b & 1) : 0;
}

static void do_get(int c, int k, bool keep)
{
	struct hcache *hc = &caches[c];
	struct rcl_objcache_miss miss;
	struct hobj *want = model_find(c, k);
	struct rcl_objcache_node *n;

	memset(&miss, 0xa5, sizeof(miss));
	n = rcl_objcache_get(hc->c, key_bytes(k), key_len(k), &miss);
	if (want) {
		CHECK(n == &want->node, "get key %d: %p, want obj %d", k,
		      (void *)n, (int)(want - pool));
		hc->m.hits++;
		want->pins++;
		if (!keep) {
			CHECK_OC_RC(rcl_objcache_put(hc->c, n), 0);
			want->pins--;
		}
		return;
	}
	CHECK(n == NULL, "get key %d hit obj %d, the model has none", k,
	      n ? (int)(obj_of(n) - pool) : -1);
	hc->m.misses++;
	if (miss.refault) {
		CHECK(hc->shadow_possible[k], "refault of key %d never evicted", k);
		hc->m.refault_misses++;
		for (int j = 0; j < NKEY; j++)
			if (same_hash(c, j, k))
				hc->shadow_possible[j] = false;
	}
	hc->tok[k] = miss;
	hc->tok_set[k] = true;
}

static void op_get(const uint8_t *a)
{
	do_get(pick_cache(a[1]), a[0] % NKEY, !(a[1] & 2));
}

static const uint64_t weights[8] = {
	1, 2, 3, 5, 8, 0, (uint64_t)UINT32_MAX + 1, 13,
};

static void op_insert(const uint8_t *a, bool weird)
{
	struct hobj *o = &pool[a[0] % NOBJ];
	int c = pick_cache(a[1]);
	struct hcache *hc = &caches[c];
	int k = (a[1] >> 1) % NKEY;
	uint64_t w = weird ? weights[a[2] & 7] : (uint64_t)(1 + (a[2] & 15));
	uint64_t ctx = (a[2] & 0x10) ? (uint64_t)0 : RCL_CTX_CAPABLE;
	unsigned tmode = (a[2] >> 5) & 3;
	const struct rcl_objcache_miss *tok = NULL;
	int tok_cache = c;
	struct rcl_objcache_node *ex = (void *)1;
	struct hobj *present = model_find(c, k);
	uint64_t before = rcl_domain_usage(g_dom);
	uint64_t charge;
	bool refault_tok = false;
	int want, rc;

	if (weird && w == (uint64_t)UINT32_MAX + 1 && (a[3] & 1))
		w = UINT64_MAX;
	if (tmode == 1 && hc->tok_set[k]) {
		tok = &hc->tok[k];
		refault_tok = tok->refault;
	} else if (tmode == 2 && hc->tok_set[(k + 1) % NKEY]) {
		tok = &hc->tok[(k + 1) % NKEY];	/* another key's */
		refault_tok = tok->refault && same_hash(c, k, (k + 1) % NKEY);
	} else if (tmode == 3 && g_ncache == 2 && caches[1 - c].tok_set[k]) {
		tok = &caches[1 - c].tok[k];	/* another cache's */
		tok_cache = 1 - c;
	}

	/* The charge must fit the lru weight; the sum is never wrapped. */
	charge = w > UINT32_MAX - hc->meta ? 0 : w + hc->meta;
	if (w > UINT32_MAX - hc->meta)
		want = -E2BIG;
	else if (charge == 0)
		want = -EINVAL;
	else if (tok && tok_cache != c)
		want = -EINVAL;
	else if (o->st != O_FREE)
		want = -EBUSY;
	else if (present)
		want = -EEXIST;
	else
		want = 0;	/* or -ENOMEM: see below */

	if (o->st == O_FREE) {
		UNPOISON(o, offsetof(struct hobj, st));
		if (a[3] & 2)
			rcl_objcache_node_init(&o->node);
		memcpy(o->key, key_bytes(k), key_len(k));
		memset(o->key + key_len(k), 0x5a, sizeof(o->key) - key_len(k));
	}
	g_dctx = D_RECLAIM;	/* the charge may reclaim */
	g_dtor_destroy_other = a[3] & 4;
	rcl_clear_refusal();
	/* Without @existing a lost race must pin nothing. */
	rc = rcl_objcache_insert(hc->c, &o->node,
				 o->st == O_FREE ? o->key : key_bytes(k),
				 key_len(k), w, ctx, tok,
				 (a[3] & 0x10) ? NULL : &ex);
	if (a[3] & 0x10)
		ex = NULL;	/* nothing to hand back into */
	g_dctx = D_NONE;
	g_dtor_destroy_other = false;
	CHECK_REASON(rc, "rcl_objcache_insert");
	if (want == 0 && rc == -ENOMEM && !g_soft) {
		/* Strict: refused only if it still does not fit. */
		CHECK(rcl_domain_usage(g_dom) + charge > g_budget,
		      "insert -ENOMEM with room: usage %llu + %llu <= %llu",
		      (unsigned long long)rcl_domain_usage(g_dom),
		      (unsigned long long)charge, (unsigned long long)g_budget);
		CHECK(ex == NULL, "-ENOMEM: existing not NULL");
		hc->m.charge_failures++;
		return;
	}
	CHECK(rc == want, "insert obj %d key %d w %llu meta %llu: got %d, want %d",
	      (int)(o - pool), k, (unsigned long long)w,
	      (unsigned long long)hc->meta, rc, want);
	if (rc == -EEXIST) {
		CHECK((a[3] & 0x10) || ex == &present->node,
		      "-EEXIST hands back obj %d, got %p",
		      (int)(present - pool), (void *)ex);
		CHECK(rcl_domain_usage(g_dom) == before, "-EEXIST charged");
		if (!(a[3] & 0x10))
			present->pins++;
		hc->m.lost_races++;
		return;
	}
	CHECK(ex == NULL, "existing %p on %d", (void *)ex, rc);
	if (rc)
		return;
	o->st = O_INDEXED;
	o->cache = c;
	o->kid = k;
	o->klen = key_len(k);
	o->pins = 1;
	o->dirty = false;
	o->weight = charge;
	o->inserts++;
	hc->m.inserts++;
	hc->m.objects++;
	hc->m.weight += charge;
	if (refault_tok)
		hc->m.refault_activations++;
	if (a[3] & 8) {
		/* put it now: insert-and-forget */
		CHECK_OC_RC(rcl_objcache_put(hc->c, &o->node), 0);
		o->pins--;
	}
}

static void op_put(const uint8_t *a)
{
	struct hobj *o = &pool[a[0] % NOBJ];
	int c = pick_cache(a[1]);
	struct hcache *hc = &caches[c];

	if (o->st == O_FREE) {
		/* An idle node (never inserted, or its destructor ran and
		 * the memory is still ours): no cache's node. */
		UNPOISON(&o->node, sizeof(o->node));
		CHECK_OC_RC(rcl_objcache_put(hc->c, &o->node), -EINVAL);
		return;
	}
	if (o->cache != c) {
		CHECK_OC_RC(rcl_objcache_put(hc->c, &o->node), -EINVAL);
		return;
	}
	if (o->st == O_INDEXED && o->pins == 0) {
		CHECK_OC_RC(rcl_objcache_put(hc->c, &o->node), -EINVAL);
		return;
	}
	if (o->st == O_ZOMBIE && o->pins == 1) {
		uint64_t u = rcl_domain_usage(g_dom);

		g_dctx = D_PUT;
		g_dtarget = o;
		g_dcalls = 0;
		CHECK_OC_RC(rcl_objcache_put(hc->c, &o->node), 0);
		g_dctx = D_NONE;
		CHECK(g_dcalls == 1, "last put of a deleted object: no destructor");
		CHECK(rcl_domain_usage(g_dom) == u - o->weight, "put uncharge");
		return;
	}
	CHECK_OC_RC(rcl_objcache_put(hc->c, &o->node), 0);
	o->pins--;
}

/* The model's side of a successful del of @o. */
static void deleted(struct hobj *o, uint64_t u)
{
	struct hcache *hc = &caches[o->cache];

	hc->m.deletes++;
	hc->m.objects--;
	hc->m.weight -= o->weight;
	if (o->pins) {
		CHECK(g_dcalls == 0, "del of a pinned object ran its destructor");
		o->st = O_ZOMBIE;
		o->dirty = false;	/* dropped unwritten */
	} else {
		CHECK(g_dcalls == 1 && o->st == O_FREE,
		      "del of an unpinned object: %u destructor calls", g_dcalls);
		CHECK(rcl_domain_usage(g_dom) == u - o->weight, "del uncharge");
	}
}

static void op_del(const uint8_t *a)
{
	int c = pick_cache(a[1]);
	int k = a[0] % NKEY;
	struct hobj *o = model_find(c, k);
	uint64_t u = rcl_domain_usage(g_dom);

	g_dctx = D_DEL;
	g_dtarget = o;
	g_dcalls = 0;
	CHECK_OC_RC(rcl_objcache_del(caches[c].c, key_bytes(k), key_len(k)),
		    o ? 0 : -ENOENT);
	g_dctx = D_NONE;
	if (o)
		deleted(o, u);
	else
		CHECK(g_dcalls == 0, "del of a missing key ran a destructor");
	if (a[1] & 2) {
		/* a get after del misses */
		struct rcl_objcache_miss miss;

		CHECK(rcl_objcache_get(caches[c].c, key_bytes(k), key_len(k),
				       &miss) == NULL, "get after del hit");
		caches[c].m.misses++;
		CHECK(!miss.refault || caches[c].shadow_possible[k],
		      "refault after del");
		if (miss.refault) {
			caches[c].m.refault_misses++;
			for (int j = 0; j < NKEY; j++)
				if (same_hash(c, j, k))
					caches[c].shadow_possible[j] = false;
		}
	}
}

static void op_del_node(const uint8_t *a)
{
	struct hobj *o = &pool[a[0] % NOBJ];
	int c = pick_cache(a[1]);
	uint64_t u = rcl_domain_usage(g_dom);

	if (o->st == O_FREE) {
		UNPOISON(&o->node, sizeof(o->node));
		CHECK_OC_RC(rcl_objcache_del_node(caches[c].c, &o->node), -EINVAL);
		return;
	}
	if (o->cache != c) {
		CHECK_OC_RC(rcl_objcache_del_node(caches[c].c, &o->node), -EINVAL);
		return;
	}
	if (o->st == O_ZOMBIE) {
		CHECK_OC_RC(rcl_objcache_del_node(caches[c].c, &o->node), -ENOENT);
		return;
	}
	if (o->pins == 0)
		return;	/* the contract: a node pinned by the caller */
	g_dctx = D_DEL;
	g_dtarget = o;
	g_dcalls = 0;
	CHECK_OC_RC(rcl_objcache_del_node(caches[c].c, &o->node), 0);
	g_dctx = D_NONE;
	deleted(o, u);
	/* Idempotent. */
	CHECK_OC_RC(rcl_objcache_del_node(caches[c].c, &o->node), -ENOENT);
	if (a[1] & 2) {
		/* An insert of the same key succeeds meanwhile: the zombie
		 * is not in the way. */
		CHECK(model_find(c, o->kid) == NULL, "key still indexed");
	}
}

static void op_mark_dirty(const uint8_t *a)
{
	struct hobj *o = &pool[a[0] % NOBJ];
	int c = pick_cache(a[1]);
	struct rcl_objcache *cc = caches[c].c;

	if (o->st == O_FREE) {
		UNPOISON(&o->node, sizeof(o->node));
		CHECK_OC_RC(rcl_objcache_mark_dirty(cc, &o->node), -EINVAL);
		return;
	}
	if (o->cache != c) {
		CHECK_OC_RC(rcl_objcache_mark_dirty(cc, &o->node), -EINVAL);
		return;
	}
	if (o->st == O_ZOMBIE) {
		CHECK_OC_RC(rcl_objcache_mark_dirty(cc, &o->node), -ENOENT);
		return;
	}
	if (o->pins == 0) {
		CHECK_OC_RC(rcl_objcache_mark_dirty(cc, &o->node), -EINVAL);
		return;
	}
	CHECK_OC_RC(rcl_objcache_mark_dirty(cc, &o->node), 0);
	o->dirty = true;
	if (a[1] & 2)
		CHECK_OC_RC(rcl_objcache_mark_dirty(cc, &o->node), 0);
}

static void op_writeback(const uint8_t *a)
{
	g_wb_fail = (a[0] & 1) ? a : NULL;
	g_wb_selfdel = a[1] & 1;
	writeback_all();
}

static unsigned nr_evictions(void)
{
	unsigned n = 0;

	for (unsigned c = 0; c < g_ncache; c++)
		n += (unsigned)caches[c].m.evictions;
	return n;
}

static void op_reclaim(const uint8_t *a)
{
	struct rcl_reclaim_result res;
	unsigned ev = nr_evictions();

	g_dctx = D_RECLAIM;
	g_dtor_destroy_other = a[1] & 1;
	CHECK_RC(rcl_domain_reclaim(g_dom, 1 + a[0] % 8,
				    (a[1] & 2) ? (uint64_t)0 : RCL_CTX_CAPABLE, &res), 0);
	g_dctx = D_NONE;
	g_dtor_destroy_other = false;
	CHECK(res.nr_reclaimed == nr_evictions() - ev,
	      "reclaim: nr_reclaimed %llu, evictions %u",
	      (unsigned long long)res.nr_reclaimed, nr_evictions() - ev);
}

static void op_charge(const uint8_t *a)
{
	uint64_t amount = 1 + a[0] % 32;
	int rc;

	g_dctx = D_RECLAIM;
	g_dtor_destroy_other = a[1] & 4;
	rc = rcl_domain_charge(g_dom, amount, (a[1] & 1) ? RCL_CTX_CAPABLE : (uint64_t)0,
			       NULL);
	g_dctx = D_NONE;
	g_dtor_destroy_other = false;
	if (rc == 0) {
		g_extra += amount;
		return;
	}
	CHECK(rc == -ENOMEM && !g_soft, "charge: %d", rc);
	CHECK(rcl_domain_usage(g_dom) + amount > g_budget,
	      "charge -ENOMEM with room");
}

static void op_uncharge(const uint8_t *a)
{
	uint64_t amount = a[0] % 32;

	if (amount > g_extra)
		amount = g_extra;
	CHECK_RC(rcl_domain_uncharge(g_dom, amount), 0);
	g_extra -= amount;
}

struct walk {
	int c;
	unsigned seen, stop_after;
};

static int walk_fn(struct rcl_objcache_node *n, void *arg)
{
	struct walk *wk = arg;
	struct hobj *o = obj_of(n);
	size_t len;

	CHECK(o->st == O_INDEXED && o->cache == wk->c,
	      "for_each visits obj %d: state %d", (int)(o - pool), o->st);
	CHECK(!o->visited, "for_each visits obj %d twice", (int)(o - pool));
	CHECK(rcl_objcache_node_key(n, &len) == o->key && len == o->klen,
	      "for_each: node key");
	o->visited = true;
	if (++wk->seen == wk->stop_after)
		return 7;
	return 0;
}

static void op_for_each(const uint8_t *a)
{
	struct walk wk = { pick_cache(a[1]), 0, (a[1] & 2) ? 1 + a[0] % 8 : 0 };
	unsigned n = (unsigned)caches[wk.c].m.objects;
	int rc;

	for (unsigned i = 0; i < NOBJ; i++)
		pool[i].visited = false;
	rc = rcl_objcache_for_each(caches[wk.c].c, walk_fn, &wk);
	if (wk.stop_after && wk.stop_after <= n) {
		CHECK(rc == 7 && wk.seen == wk.stop_after, "for_each stop: %d", rc);
		return;
	}
	CHECK(rc == 0 && wk.seen == n, "for_each: rc %d, %u of %u", rc,
	      wk.seen, n);
	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].st == O_INDEXED && pool[i].cache == wk.c)
			CHECK(pool[i].visited, "for_each missed obj %u", i);
}

static void op_stats(const uint8_t *a)
{
	int c = pick_cache(a[1]);
	struct rcl_objcache *cc = caches[c].c;
	unsigned ns = rcl_objcache_nr_shards(cc);

	CHECK(ns >= 1 && (ns & (ns - 1)) == 0, "nr_shards %u", ns);
	uint64_t lw = 0, w;

	for (unsigned i = 0; i < ns; i++) {
		CHECK(rcl_objcache_lruvec(cc, i) != NULL, "shard %u lruvec", i);
		/* The pending adds onto the lists, where reclaim sees them. */
		if (a[0] & 2) {
			rcl_lruvec_drain(rcl_objcache_lruvec(cc, i));
			for (unsigned l = 0; l < RCL_LRU_NR_LISTS; l++) {
				rcl_lruvec_count(rcl_objcache_lruvec(cc, i), l, &w);
				lw += w;
			}
		}
	}
	/* On the lists, each object weighs its charge (weight + meta). */
	if (a[0] & 2)
		CHECK(lw == caches[c].m.weight, "lru weight %llu, model %llu",
		      (unsigned long long)lw,
		      (unsigned long long)caches[c].m.weight);
	CHECK(rcl_objcache_lruvec(cc, ns) == NULL, "lruvec out of range");
	check_stats(c);
	/* gets of every key, without keeping the pin */
	if (a[0] & 1)
		for (int k = 0; k < NKEY; k++)
			do_get(c, k, false);
}

static void op_destroy(const uint8_t *a)
{
	int c = pick_cache(a[1]);
	bool pinned = false;

	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].st != O_FREE && pool[i].cache == c && pool[i].pins)
			pinned = true;
	if (pinned) {
		g_dctx = D_NONE;	/* nothing may be destroyed */
		CHECK_OC_RC(rcl_objcache_destroy(caches[c].c), -EBUSY);
		return;
	}
	if (a[0] & 1)
		writeback_all();
	destroy_cache(c);
	cache_new(c);	/* the script goes on with a new one */
}

static uint64_t bad_hash(const void *key, size_t len, void *priv)
{
	(void)key, (void)len, (void)priv;
	return 0;
}

static void op_invalid(const uint8_t *a)
{
	int c = pick_cache(a[1]);
	struct rcl_objcache *cc = caches[c].c;
	struct rcl_objcache_miss miss, zero;
	struct hobj *o = &pool[a[2] % NOBJ];
	struct rcl_objcache_stats s;
	struct rcl_objcache *out = NULL;
	size_t len = 9;

	memset(&zero, 0, sizeof(zero));
	switch (a[0] % 12) {
	case 0:
		memset(&miss, 0x5a, sizeof(miss));
		CHECK(rcl_objcache_get(NULL, "a", 1, &miss) == NULL, "get NULL");
		CHECK(memcmp(&miss, &zero, sizeof(miss)) == 0, "miss not cleared");
		memset(&miss, 0x5a, sizeof(miss));
		CHECK(rcl_objcache_get(cc, NULL, 3, &miss) == NULL, "get NULL key");
		CHECK(memcmp(&miss, &zero, sizeof(miss)) == 0, "miss not cleared");
		break;
	case 1:	/* the empty key: valid, never inserted here */
		CHECK(rcl_objcache_get(cc, NULL, 0, NULL) == NULL, "empty key");
		CHECK(rcl_objcache_get(cc, "", 0, &miss) == NULL, "empty key");
		caches[c].m.misses += 2;
		CHECK(!miss.refault, "empty key refault");
		break;
	case 2: {
		struct rcl_objcache_node *ex = (void *)1;

		CHECK_OC_RC(rcl_objcache_insert(NULL, &o->node, "a", 1, 1,
						0, NULL, &ex), -EINVAL);
		CHECK(ex == NULL, "existing not cleared");
		CHECK_OC_RC(rcl_objcache_insert(cc, NULL, "a", 1, 1, 0, NULL,
						NULL), -EINVAL);
		if (o->st == O_FREE) {
			UNPOISON(o, offsetof(struct hobj, st));
			CHECK_OC_RC(rcl_objcache_insert(cc, &o->node, NULL, 2, 1, 0,
							NULL, NULL), -EINVAL);
			CHECK_OC_RC(rcl_objcache_insert(cc, &o->node, o->key,
							(size_t)UINT32_MAX + 1,
							1, 0, NULL, NULL), -EINVAL);
			/* Weight 0: a charge of 0 only without meta_charge. */
			if (!caches[c].meta)
				CHECK_OC_RC(rcl_objcache_insert(cc, &o->node, o->key,
								1, 0, 0, NULL,
								NULL), -EINVAL);
		}
		break;
	}
	case 3:
		CHECK_OC_RC(rcl_objcache_put(NULL, &o->node), -EINVAL);
		CHECK_OC_RC(rcl_objcache_put(cc, NULL), -EINVAL);
		CHECK_OC_RC(rcl_objcache_del_node(NULL, &o->node), -EINVAL);
		CHECK_OC_RC(rcl_objcache_del_node(cc, NULL), -EINVAL);
		CHECK_OC_RC(rcl_objcache_mark_dirty(NULL, &o->node), -EINVAL);
		CHECK_OC_RC(rcl_objcache_mark_dirty(cc, NULL), -EINVAL);
		break;
	case 4:
		CHECK_OC_RC(rcl_objcache_del(NULL, "a", 1), -EINVAL);
		CHECK_OC_RC(rcl_objcache_del(cc, NULL, 1), -EINVAL);
		CHECK_OC_RC(rcl_objcache_del(cc, NULL, 0), -ENOENT);
		break;
	case 5:
		CHECK_OC_RC(rcl_objcache_for_each(NULL, walk_fn, NULL), -EINVAL);
		CHECK_OC_RC(rcl_objcache_for_each(cc, NULL, NULL), -EINVAL);
		CHECK_OC_RC(rcl_objcache_stats(NULL, &s), -EINVAL);
		CHECK_OC_RC(rcl_objcache_stats(cc, NULL), -EINVAL);
		break;
	case 6:
		CHECK_OC_RC(rcl_objcache_destroy(NULL), 0);
		CHECK(rcl_objcache_node_key(NULL, &len) == NULL && len == 0,
		      "node_key NULL");
		CHECK(rcl_objcache_nr_shards(NULL) == 0, "nr_shards NULL");
		CHECK(rcl_objcache_lruvec(NULL, 0) == NULL, "lruvec NULL");
		rcl_objcache_node_init(NULL);
		CHECK(rcl_objcache_writeback_ops() != NULL &&
		      rcl_objcache_writeback_ops()->write != NULL, "wb ops");
		break;
	case 7: {
		struct rcl_objcache_config cfg = caches[c].cfg;

		CHECK_OC_RC(rcl_objcache_new(NULL, &cfg, &out), -EINVAL);
		CHECK_OC_RC(rcl_objcache_new(g_dom, NULL, &out), -EINVAL);
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, NULL), -EINVAL);
		cfg.nr_shards = 3 + 2 * (a[3] % 8);
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), -EINVAL);
		cfg.nr_shards = RCL_OBJCACHE_MAX_SHARDS * 2;
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), -EINVAL);
		CHECK(out == NULL, "out written on failure");
		break;
	}
	case 8: {
		struct rcl_objcache_config cfg = caches[c].cfg;
		struct rcl_objcache_ops ops = caches[c].ops;

		cfg.nr_buckets = RCL_OBJCACHE_MAX_BUCKETS + 1;
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), -EINVAL);
		cfg = caches[c].cfg;
		cfg.lru_type = 2;
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), -EINVAL);
		cfg = caches[c].cfg;
		cfg.flags = 1u << (2 + a[3] % 30);
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), -EINVAL);
		cfg = caches[c].cfg;
		ops.hash = bad_hash;
		ops.eq = NULL;
		cfg.ops = &ops;
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), -EINVAL);
		cfg.partition = 5;
		ops.hash = NULL;
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), -EINVAL);
		cfg = caches[c].cfg;
		cfg.meta_charge = (uint64_t)UINT32_MAX + 1 + a[3];
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), -EINVAL);
		CHECK(out == NULL, "out written on failure");
		break;
	}
	case 9: {
		/* A third cache, created and destroyed empty. */
		struct rcl_objcache_config cfg = { 0 };

		cfg.nr_shards = 1u << (a[3] % 4);
		cfg.flags = (a[3] & 0x10) ? RCL_OBJCACHE_NO_SHADOWS : 0;
		CHECK_OC_RC(rcl_objcache_new(g_dom, &cfg, &out), 0);
		CHECK(rcl_objcache_get(out, "a", 1, NULL) == NULL, "empty cache hit");
		CHECK_OC_RC(rcl_objcache_del(out, "a", 1), -ENOENT);
		CHECK_OC_RC(rcl_objcache_destroy(out), 0);
		break;
	}
	case 10:
		/* An idle node of the pool is not another cache's. */
		if (o->st == O_FREE) {
			UNPOISON(o, offsetof(struct hobj, st));
			CHECK(rcl_objcache_node_key(&o->node, &len) == NULL &&
			      len == 0, "idle node has a key");
		}
		break;
	default:
		/* A put without a pin on every unpinned indexed object. */
		for (unsigned i = 0; i < NOBJ; i++)
			if (pool[i].st == O_INDEXED && pool[i].pins == 0)
				CHECK_OC_RC(rcl_objcache_put(caches[pool[i].cache].c,
							     &pool[i].node), -EINVAL);
		break;
	}
}

static void op_get_put(const uint8_t *a)
{
	/* A get-or-insert: the pattern of objcache.h's example. */
	int c = pick_cache(a[1]);
	int k = a[0] % NKEY;
	struct hobj *o = model_find(c, k);
	uint8_t b[4];

	if (o) {
		do_get(c, k, false);
		return;
	}
	do_get(c, k, false);
	for (unsigned i = 0; i < NOBJ; i++) {
		unsigned j = (a[2] + i) % NOBJ;

		if (pool[j].st == O_FREE) {
			b[0] = (uint8_t)j;
			b[1] = (uint8_t)((k << 1) | (c & 1));
			b[2] = (uint8_t)((a[3] & 15) | 0x20);	/* token of the get */
			b[3] = 8;				/* put at once */
			op_insert(b, false);
			return;
		}
	}
}

/* ------------------------------------------------------------------------- */
/* Entry point                                                                */
/* ------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, size, 0 };
	uint8_t meta = 0;

	if (g_trace < 0) {
		const char *t = getenv("FUZZ_TRACE");

		g_trace = t && *t && *t != '0';
	}
	g_step = 0;
	g_op = 0;
	/* "MC" and a byte: the caches' meta_charge; otherwise none. */
	if (size >= 2 && data[0] == 'M' && data[1] == 'C') {
		r.i = 2;
		meta = rd8(&r);
	}
	setup(&r, meta);
	check_invariants();
	while (r.i < r.n && g_step < MAX_STEPS) {
		uint8_t a[4];

		g_op = rd8(&r) % NR_OPS;
		for (unsigned i = 0; i < 4; i++)
			a[i] = rd8(&r);
		if (g_trace)
			fprintf(stderr, "step %u: op %u %02x %02x %02x %02x\n",
				g_step, g_op, a[0], a[1], a[2], a[3]);
		switch (g_op) {
		case OP_GET: op_get(a); break;
		case OP_INSERT: op_insert(a, false); break;
		case OP_INSERT2: op_insert(a, true); break;
		case OP_PUT: op_put(a); break;
		case OP_DEL: op_del(a); break;
		case OP_DEL_NODE: op_del_node(a); break;
		case OP_MARK_DIRTY: op_mark_dirty(a); break;
		case OP_WRITEBACK: op_writeback(a); break;
		case OP_RECLAIM: op_reclaim(a); break;
		case OP_CHARGE: op_charge(a); break;
		case OP_UNCHARGE: op_uncharge(a); break;
		case OP_FOR_EACH: op_for_each(a); break;
		case OP_STATS: op_stats(a); break;
		case OP_DESTROY: op_destroy(a); break;
		case OP_INVALID: op_invalid(a); break;
		default: op_get_put(a); break;
		}
		check_invariants();
		g_step++;
	}
	g_op = NR_OPS;	/* tear-down */
	if (g_trace)
		for (unsigned c = 0; c < g_ncache; c++) {
			struct rcl_objcache_stats s;

			rcl_objcache_stats(caches[c].c, &s);
			fprintf(stderr, "cache %u: hits %llu misses %llu (refault %llu) "
				"inserts %llu (activated %llu) lost %llu nomem %llu "
				"evicted %llu deleted %llu objects %llu weight %llu "
				"shadows %llu dropped %llu; usage %llu\n", c,
				(unsigned long long)s.hits, (unsigned long long)s.misses,
				(unsigned long long)s.refault_misses,
				(unsigned long long)s.inserts,
				(unsigned long long)s.refault_activations,
				(unsigned long long)s.lost_races,
				(unsigned long long)s.charge_failures,
				(unsigned long long)s.evictions,
				(unsigned long long)s.deletes,
				(unsigned long long)s.objects,
				(unsigned long long)s.weight,
				(unsigned long long)s.shadows,
				(unsigned long long)s.shadows_dropped,
				(unsigned long long)rcl_domain_usage(g_dom));
		}
	teardown();
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Stand-alone replay driver (no libFuzzer)                                   */
/* ------------------------------------------------------------------------- */

#include "replay.h"
