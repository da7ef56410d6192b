/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ops - libFuzzer target: the input is a script of API operations
 *
 * The input drives three lruvecs (with per-object or batched evict
 * callbacks, chosen per lruvec by the input, and workingset
 * shadows), two domains (budgets, charges, watermarks, direct reclaim, an
 * application flusher that only records requests), a standalone shrinker
 * registry and up to four shrinkers over a fixed pool of harness objects.
 * A model of every object (free, on which lruvec, isolated, in which
 * shrinker's cache, dirty, under writeback, charged to which domain) is kept
 * beside the library, and after every operation check_invariants() compares
 * it with what the library reports through its public query functions.  Any
 * mismatch, any unexpected return code and any callback on an object that
 * was freed abort the process.  fuzz/README.md documents the encoding.
 *
 * Single-threaded by design: no background reclaimer, no library flusher
 * thread.  The domains run on a harness clock whose wait never sleeps (it
 * jumps to the deadline and returns ETIMEDOUT; a wait without deadline
 * aborts, since with one thread it could never end), and calls that would
 * wait on a condition (rcl_lruvec_del_wait() on an isolated or writeback
 * node) are only made in states where they return at once.
 *
 * An input that starts with TREE_MAGIC is in tree mode (fuzz/README.md):
 * the same script, plus operations on up to NKID child domains under the
 * two domains (trees of domains, issue #17), whose model checks that each
 * level's usage is its own charges plus its children's, that a strict
 * level is never charged above its budget, that events never decrease,
 * and the documented refusals.  Any other input means what it always did.
 *
 * Without FUZZ_LIBFUZZER the file also has a main() that replays files (or
 * every file of directories) given on the command line, for the Meson test
 * suite 'fuzz' in builds without libFuzzer.
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
#define UNPOISON(p, n) ((void)VALGRIND_MAKE_MEM_UNDEFINED((p), (n)))
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

#define FUZZ_WHERE_FMT "fuzz_ops: step %u op %u: "
#define FUZZ_WHERE_ARGS g_step, g_op
#include "check.h"

/*
 * A refusal with -EBUSY or -EDEADLK says why (refusal.h): the call must have
 * left a reason naming a library function.  Cleared before each operation
 * (run_ops), so a reason always comes from the operation being checked.
 */
#define CHECK_REASON(rc_)                                                     \
	do {                                                                  \
		if ((rc_) == -EBUSY || (rc_) == -EDEADLK) {                   \
			const char *why_ = rcl_last_refusal();                \
			CHECK(why_ && strncmp(why_, "rcl_", 4) == 0,          \
			      "refused with %d and no reason", (rc_));        \
		}                                                             \
	} while (0)
#define CHECK_RC(rc, want)                                                    \
	do {                                                                  \
		int rc_ = (rc), want_ = (want);                               \
		CHECK(rc_ == want_, "got %d, want %d", rc_, want_);          \
		CHECK_REASON(rc_);                                            \
	} while (0)
#define CHECK_RC2(rc, w1, w2)                                                 \
	do {                                                                  \
		int rc_ = (rc), w1_ = (w1), w2_ = (w2);                       \
		CHECK(rc_ == w1_ || rc_ == w2_, "got %d, want %d or %d", rc_, \
		      w1_, w2_);                                              \
		CHECK_REASON(rc_);                                            \
	} while (0)

/* ------------------------------------------------------------------------- */
/* The model                                                                  */
/* ------------------------------------------------------------------------- */

#define NOBJ 64
#define NLV 3		/* lruvecs with an evict callback */
#define NDOM 2
#define NSHR 4
#define NREG 3		/* domain 0's, domain 1's, the standalone registry */
#define MAX_STEPS 4096

enum obj_state {
	O_FREE = 0,	/* in the harness pool; node idle (poisoned if evicted) */
	O_LV,		/* on lruvec o->lv (pending, listed or isolated) */
	O_SHR,		/* in shrinker o->shr's cache */
};

struct fobj {
	struct rcl_lru_node lru;	/* first: poisoned while free */
	uint8_t state;
	uint8_t lv;
	uint8_t type;
	uint8_t shr;
	bool iso;		/* in the harness's isolated set of its lruvec */
	bool in_cb;		/* in an evict callback's hands now */
	bool handed;		/* judged by an evict callback in this op */
	bool unevictable;
	bool dirty;
	bool wb;
	bool poisoned;
	uint8_t mode;		/* evict answer and callback action */
	int8_t dom;		/* domain charged with weight, or -1 */
	uint32_t weight;
	uint64_t shadow;	/* left by the last eviction */
};

struct fshr {
	struct rcl_shrinker *s;
	bool registered;
	uint8_t reg;		/* NREG index */
	uint8_t count_mode;
	uint8_t scan_mode;
	unsigned flags;
	long batch;
	unsigned nr;		/* objects in its cache */
};

struct fdom {
	struct rcl_domain *d;
	unsigned nr_partitions;
	unsigned flags;
	bool has_flusher;
	bool soft;
	uint64_t usage;		/* model: sum of charges - uncharges */
	uint64_t extra;		/* charged by CHARGE ops, not by objects */
	bool inflight;		/* a flush request delivered, not done */
	struct rcl_flush_request req;
};

static struct fobj pool[NOBJ];
static struct rcl_lruvec lvs[NLV + 1];	/* lvs[NLV]: no ops, never holds objects */
static int lv_dom[NLV];			/* attached to, or -1 */
static bool lv_batched[NLV];		/* judged by evict_batch */
static struct rcl_lru_isolated isos[NLV];
static struct fdom doms[NDOM];
static struct rcl_shrinker_registry *regs[NREG];
static unsigned reg_parts[NREG];
static struct fshr shrs[NSHR];
static uint64_t g_now;
static struct rcl_shadow_limit *g_limit;	/* in domain 0's registry, or NULL */

/*
 * Tree mode.  Tree nodes 0 and 1 are the two domains above (the roots);
 * nodes NDOM.. are child domains, which hold charges only (no lruvec, no
 * shrinker), so their usage is exactly what the script charged through
 * them.  A root's own charges are doms[].usage; a child's are own.
 */
#define NKID 8
#define NTN (NDOM + NKID)

static const uint8_t TREE_MAGIC[4] = { 0xd1, 0x7e, 0x5e, 0x17 };

struct ftree {
	struct rcl_domain *d;
	int parent;			/* tree node, or -1 for a root */
	bool live;
	bool soft;
	bool recursive;			/* a root with RCL_DOMAIN_RECURSIVE_PROT */
	bool over_ok;			/* a budget change left it above its budget */
	unsigned depth;
	uint64_t own;			/* children: charged through it, not uncharged */
	uint64_t budget;		/* children: the budget (UINT64_MAX: none) */
	uint64_t over_mark;		/* usage when over_ok, at most */
	struct rcl_domain_limits lim;	/* limit_high UINT64_MAX: none */
	struct rcl_domain_events ev[2];	/* last seen: own, subtree */
};

static bool g_tree;
static struct ftree tn[NTN];

static int tree_root(int n);
static bool tree_has_kids(int n);

/* Per top-level call: what the callbacks saw. */
static int g_pass_dom = -1;		/* domain whose reclaim may run */
static bool g_write_dirty;		/* shrink_inactive with WRITE_DIRTY */
static bool g_no_evict;			/* an evict callback now is a bug */
static unsigned g_cb_freed, g_cb_busy, g_cb_act;
static uint64_t g_cb_wfreed;
/* weight shrinker callbacks uncharged from g_pass_dom (a pass's progress) */
static uint64_t g_cb_slab_w;
static int g_cb_depth;
/* FREED answers since the last batch_end, by callback depth (re-entry). */
#define FUZZ_MAX_DEPTH (NOBJ + 2)	/* each level holds one object */
static unsigned g_batch_freed[FUZZ_MAX_DEPTH];
static bool g_debug_scan;
static int g_in_shr = -1;		/* shrinker whose callback runs */
static const uint8_t *g_wb_fail;	/* writeback_all: failure pattern */
static unsigned g_wb_idx;
static int g_wb_batch[NOBJ];
static unsigned g_wb_nbatch;

static struct fobj *obj_of(struct rcl_lru_node *n)
{
	struct fobj *o = rcl_container_of(n, struct fobj, lru);

	CHECK(o >= pool && o < pool + NOBJ && &pool[o - pool] == o,
	      "node %p is not a harness object", (void *)n);
	return o;
}

static unsigned lv_index(const struct rcl_lruvec *lv)
{
	for (unsigned i = 0; i <= NLV; i++)
		if (lv == &lvs[i])
			return i;
	CHECK(0, "unknown lruvec %p", (const void *)lv);
	return 0;
}

/* A free object, made usable: unpoisoned and idle. */
static struct fobj *obj_take(struct fobj *o)
{
	CHECK(o->state == O_FREE, "taking a busy object");
	if (o->poisoned) {
		UNPOISON(&o->lru, sizeof(o->lru));
		o->poisoned = false;
	}
	rcl_lru_node_init(&o->lru);
	return o;
}

static void dom_uncharge(int d, uint64_t w)
{
	if (d < 0)
		return;
	CHECK(doms[d].usage >= w, "model uncharge below zero");
	CHECK_RC(rcl_domain_uncharge(doms[d].d, w), 0);
	doms[d].usage -= w;
	if (g_in_shr >= 0 && d == g_pass_dom)
		g_cb_slab_w += w;
}

/* The object leaves the library for good; back to the pool. */
static void obj_release(struct fobj *o, bool poison)
{
	dom_uncharge(o->dom, o->weight);
	o->dom = -1;
	o->state = O_FREE;
	o->iso = o->in_cb = o->handed = o->unevictable = o->dirty = o->wb = false;
	if (poison) {
		POISON(&o->lru, sizeof(o->lru));
		o->poisoned = true;
	}
}

/* The application's shadow store: o->shadow, reported to the limit. */
static void shadow_set(struct fobj *o, uint64_t shadow)
{
	int64_t delta = (int64_t)rcl_shadow_is_valid(shadow) -
			(int64_t)rcl_shadow_is_valid(o->shadow);

	o->shadow = shadow;
	if (delta)
		rcl_shadow_limit_add(g_limit, delta);	/* NULL: a no-op */
}

static unsigned long fuzz_shadow_drop(void *priv, unsigned long nr)
{
	unsigned long dropped = 0;

	CHECK(priv == &g_limit, "bad shadow priv");
	for (unsigned i = 0; i < NOBJ && dropped < nr; i++)
		if (rcl_shadow_is_valid(pool[i].shadow)) {
			shadow_set(&pool[i], 0);
			dropped++;
		}
	return dropped;
}

static const struct rcl_shadow_ops fuzz_shadow_ops = { fuzz_shadow_drop };

static int dom_charge(int d, uint64_t amount, uint64_t ctx)
{
	int saved = g_pass_dom, rc;
	uint64_t over = 0;

	if (g_cb_depth == 0)
		g_pass_dom = d;
	rc = rcl_domain_charge(doms[d].d, amount, ctx, &over);
	g_pass_dom = saved;
	if (rc == 0)
		doms[d].usage += amount;
	else
		CHECK(rc == -ENOMEM || rc == -EOVERFLOW, "charge: %d", rc);
	return rc;
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
	/* One thread: nobody could ever signal this wait. */
	CHECK(deadline != RCL_CLOCK_FOREVER, "library waits forever");
	if (g_now < deadline)
		g_now = deadline;
	return ETIMEDOUT;
}

static const struct rcl_clock fuzz_clock = { clk_now, clk_wait, NULL };

/* ------------------------------------------------------------------------- */
/* Callbacks                                                                  */
/* ------------------------------------------------------------------------- */

/* The object after @o in the pool (a bystander for callback actions). */
static struct fobj *other_of(struct fobj *o)
{
	return &pool[(o - pool + 1) % NOBJ];
}

static void evict_action(struct fobj *o, struct rcl_lruvec *lv, unsigned act)
{
	struct fobj *b;
	int rc;

	switch (act) {
	case 1:
		CHECK_RC(rcl_lruvec_del(lv, &o->lru), -EBUSY);
		break;
	case 2:
		CHECK_RC(rcl_lruvec_del_wait(lv, &o->lru), -EDEADLK);
		break;
	case 3:
		CHECK_RC(rcl_lruvec_set_dirty(lv, &o->lru), -EDEADLK);
		break;
	case 4:
		CHECK_RC(rcl_lruvec_destroy(lv), -EDEADLK);
		break;
	case 5:
		/* age and dirty a bystander (maybe in the same batch) */
		b = other_of(o);
		if (b->state != O_LV || b->in_cb)
			break;
		CHECK_RC(rcl_lruvec_mark_accessed(&lvs[b->lv], &b->lru), 0);
		rc = rcl_lruvec_set_dirty(&lvs[b->lv], &b->lru);
		/*
		 * One that reclaim has claimed stays in its hands until the
		 * batch is put back: -EDEADLK rather than wait (flusher.h).
		 * rcl_lruvec_shrink_inactive() claims a clean node when it
		 * isolates it, so that is also a bystander of this batch (or
		 * of a nested one) not yet judged: isolated, and clean - or
		 * dirty, when the pass hands dirty objects to the callback
		 * (RCL_LRU_SHRINK_WRITE_DIRTY, RCL_DOMAIN_RECLAIM_WRITES), as
		 * judge() allows.  (The harness required clean until
		 * fuzz/crashes/harness-dirty-bystander-of-write-dirty-shrink.)
		 */
		CHECK_RC2(rc, 0, -EDEADLK);
		if (rc == -EDEADLK && !b->handed) {
			bool writes = g_write_dirty ||
				      (g_pass_dom >= 0 &&
				       (doms[g_pass_dom].flags & RCL_DOMAIN_RECLAIM_WRITES));

			CHECK((rcl_lru_node_flags(&b->lru) &
			       RCL_LRU_F_ISOLATED) && (!b->dirty || writes) && !b->wb,
			      "set_dirty -EDEADLK on an object reclaim does not hold");
		}
		if (rc == 0)
			b->dirty = true;
		break;
	case 6:
		if (o->dom < 0)
			break;
		if (dom_charge(o->dom, 1, 0) == 0)
			doms[o->dom].extra++;
		if (g_pass_dom == o->dom)
			CHECK_RC(rcl_domain_reclaim(doms[o->dom].d, 1,
						    RCL_CTX_CAPABLE, NULL),
				 -EDEADLK);
		break;
	case 7:
		rc = rcl_lruvec_writeback_start(lv, &o->lru);
		CHECK_RC2(rc, -EINVAL, -EBUSY);
		break;
	default:
		break;
	}
}

/*
 * Tree mode, mode bit 5: inside a reclaim pass of the object's tree, what
 * the tree refuses from its callbacks (-EDEADLK, nothing changed):
 * rcl_domain_set_limits() of a domain of the tree, rcl_domain_free() of a
 * child without children, rcl_domain_new() of a child in the tree; and
 * from any pass, the last two in the other tree too.
 */
static void tree_evict_action(struct fobj *o)
{
	int root = lv_dom[o->lv], nodes[NTN], nr = 0, n;
	struct rcl_domain_limits lim = { .limit_high = 1 };
	struct rcl_domain_config cfg = { .budget = 1 };
	struct rcl_domain *out = NULL;

	if (root < 0 || g_pass_dom != root)
		return;			/* not a pass of its tree */
	for (n = 0; n < NTN; n++)
		if (tn[n].live && tree_root(n) == root)
			nodes[nr++] = n;
	n = nodes[(unsigned)(o - pool) % (unsigned)nr];
	if (g_trace)
		fprintf(stderr, "  evict callback of object %td, in a pass of tree "
			"%d: node %d refuses\n", o - pool, root, n);
	if (n >= NDOM)
		lim.protect_low = 1;
	CHECK_RC(rcl_domain_set_limits(tn[n].d, &lim), -EDEADLK);
	if (n >= NDOM && !tree_has_kids(n))
		CHECK_RC(rcl_domain_free(tn[n].d), -EDEADLK);
	cfg.parent = tn[n].d;
	if (tn[n].depth < RCL_DOMAIN_MAX_DEPTH) {
		CHECK_RC(rcl_domain_new(&cfg, &out), -EDEADLK);
		CHECK(out == NULL, "out written on failure");
	}
	/* the other tree: its root as parent, and a childless child */
	cfg.parent = tn[1 - root].d;
	CHECK_RC(rcl_domain_new(&cfg, &out), -EDEADLK);
	CHECK(out == NULL, "out written on failure");
	for (n = NDOM; n < NTN; n++)
		if (tn[n].live && tree_root(n) != root && !tree_has_kids(n)) {
			CHECK_RC(rcl_domain_free(tn[n].d), -EDEADLK);
			break;
		}
}

/*
 * What either callback form does with one object: the checks, the action,
 * the answer.  @li is the index of the lruvec it came from.
 */
static enum rcl_evict_status judge(struct fobj *o, unsigned li,
				   struct rcl_evict_control *ctl)
{
	enum rcl_evict_status ans;

	CHECK(!g_no_evict, "evict callback where none may run");
	CHECK(!o->poisoned && o->state == O_LV, "evict of a freed object %td",
	      o - pool);
	CHECK(o->lv == li, "evict from the wrong lruvec");
	CHECK(ctl->priv == &lvs[li], "wrong priv");
	CHECK(!o->iso, "evict of an object the harness has isolated");
	CHECK(!o->in_cb, "object presented twice at once");
	CHECK(!o->unevictable, "evict of an unevictable object");
	CHECK(!o->wb, "evict of an object under writeback");
	CHECK(ctl->type == o->type && ctl->weight == o->weight,
	      "evict control: type %u/%u weight %u/%u", ctl->type, o->type,
	      ctl->weight, o->weight);
	CHECK(ctl->priority >= 0 && ctl->priority <= RCL_DEF_PRIORITY,
	      "priority %d", ctl->priority);
	CHECK(rcl_shadow_is_valid(ctl->shadow), "invalid shadow");
	if (o->dirty) {
		bool ok = g_write_dirty ||
			  (g_pass_dom >= 0 &&
			   (doms[g_pass_dom].flags & RCL_DOMAIN_RECLAIM_WRITES));
		CHECK(ok && (ctl->flags & RCL_EVICT_DIRTY),
		      "dirty object reached the evict callback");
	} else {
		CHECK(!(ctl->flags & RCL_EVICT_DIRTY), "clean object flagged dirty");
	}

	o->in_cb = true;
	o->handed = true;
	CHECK(g_cb_depth + 1 < FUZZ_MAX_DEPTH, "evict callbacks nested too deep");
	g_cb_depth++;
	evict_action(o, ctl->lruvec, (o->mode >> 2) & 7);
	if (g_tree && (o->mode & 0x20))
		tree_evict_action(o);
	/* Every batch of a shrink started in there has ended. */
	CHECK(g_batch_freed[g_cb_depth] == 0,
	      "a nested batch ended without batch_end (%u freed)",
	      g_batch_freed[g_cb_depth]);
	g_cb_depth--;
	o->in_cb = false;

	switch (o->mode & 3) {
	case 1:
		ans = RCL_EVICT_BUSY;
		g_cb_busy++;
		break;
	case 2:
		ans = RCL_EVICT_ACTIVATE;
		g_cb_act++;
		break;
	default:
		ans = RCL_EVICT_FREED;
		g_cb_freed++;
		g_batch_freed[g_cb_depth]++;
		g_cb_wfreed += o->weight;
		shadow_set(o, ctl->shadow);
		obj_release(o, true);
		break;
	}
	return ans;
}

static enum rcl_evict_status fuzz_evict(struct rcl_lru_node *node,
					struct rcl_evict_control *ctl)
{
	struct fobj *o = obj_of(node);
	unsigned li = lv_index(ctl->lruvec);

	CHECK(li < NLV && !lv_batched[li],
	      "evict called on lruvec %u, which has evict_batch", li);
	return judge(o, li, ctl);
}

/*
 * The batched form: the whole pass's claimed objects at once.  All of
 * them are in this reclaim's hands from the start (a bystander action on a
 * later item gets -EDEADLK), each is judged as fuzz_evict() would, and a
 * BUSY answer is left as the preset on even items.  FREED objects are
 * poisoned before this returns: the library must read only @items.
 */
static void fuzz_evict_batch(struct rcl_lruvec *lv, void *priv,
			     struct rcl_evict_item *items, size_t nr)
{
	unsigned li = lv_index(lv);

	CHECK(!g_no_evict, "evict_batch where no evict callback may run");
	CHECK(li < NLV && lv_batched[li],
	      "evict_batch called on lruvec %u, which judges per object", li);
	CHECK(priv == &lvs[li], "evict_batch: wrong priv");
	CHECK(nr >= 1 && nr <= RCL_LRU_BATCH_ISOLATE, "evict_batch: nr %zu", nr);
	for (size_t i = 0; i < nr; i++) {
		struct fobj *o = obj_of(items[i].node);

		CHECK(items[i].status == RCL_EVICT_BUSY,
		      "item %zu preset to %d", i, (int)items[i].status);
		CHECK(items[i].ctl.lruvec == lv && items[i].ctl.priv == priv,
		      "item %zu: control of another lruvec", i);
		for (size_t j = 0; j < i; j++)
			CHECK(items[j].node != items[i].node,
			      "object %td twice in one batch", o - pool);
		CHECK(!o->in_cb, "object %td in a batch and in a callback",
		      o - pool);
	}
	for (size_t i = 0; i < nr; i++)
		obj_of(items[i].node)->handed = true;
	for (size_t i = 0; i < nr; i++) {
		enum rcl_evict_status st = judge(obj_of(items[i].node), li,
						 &items[i].ctl);

		if (st != RCL_EVICT_BUSY || (i & 1))
			items[i].status = st;
	}
}

/* Once per batch of the evict callbacks above, at their depth. */
static void fuzz_batch_end(struct rcl_lruvec *lv, void *priv, size_t nr_freed)
{
	(void)priv;
	CHECK(lv != NULL, "batch_end without an lruvec");
	CHECK(nr_freed == g_batch_freed[g_cb_depth],
	      "batch_end: %zu freed, the callbacks answered FREED %u times",
	      nr_freed, g_batch_freed[g_cb_depth]);
	CHECK(lv >= lvs && lv < lvs + NLV, "batch_end of a foreign lruvec");
	/* At the top level, only the harness's own set is isolated now. */
	CHECK(g_cb_depth > 0 ||
		      rcl_lruvec_nr_isolated(lv) == isos[lv - lvs].nr,
	      "batch_end: %zu isolated, the harness holds %zu",
	      rcl_lruvec_nr_isolated(lv), isos[lv - lvs].nr);
	g_batch_freed[g_cb_depth] = 0;
	/* Still inside reclaim of @lv. */
	CHECK_RC(rcl_lruvec_destroy(lv), -EDEADLK);
}

static const struct rcl_lruvec_ops fuzz_lv_ops = {
	.evict = fuzz_evict,
	.batch_end = fuzz_batch_end,
};

/* evict_batch only (evict NULL), and both (evict must not be called). */
static const struct rcl_lruvec_ops fuzz_lv_batch_ops = {
	.batch_end = fuzz_batch_end,
	.evict_batch = fuzz_evict_batch,
};
static const struct rcl_lruvec_ops fuzz_lv_both_ops = {
	.evict = fuzz_evict,
	.batch_end = fuzz_batch_end,
	.evict_batch = fuzz_evict_batch,
};

static void fuzz_flusher_wakeup(void *priv, const struct rcl_flush_request *req)
{
	struct fdom *fd = priv;

	CHECK(fd >= doms && fd < doms + NDOM && fd->has_flusher, "bad priv");
	CHECK(!fd->inflight, "second flush request in flight");
	CHECK(req->reason <= RCL_FLUSH_SYNC, "reason %d", (int)req->reason);
	fd->inflight = true;
	fd->req = *req;
}

static const struct rcl_flusher_ops fuzz_flusher_ops = { fuzz_flusher_wakeup };

static bool g_wb_ok[NOBJ];
static unsigned g_wb_synced;		/* writes covered by a sync */

static int fuzz_wb_write(void *priv, struct rcl_lru_node *node)
{
	struct fobj *o = obj_of(node);
	bool fail = g_wb_fail[g_wb_idx++ % 3] & 1;

	CHECK(priv == &g_wb_idx, "bad priv");
	CHECK(!o->poisoned && o->state == O_LV, "write of a freed object");
	CHECK(o->dirty && !o->wb, "write of an object that is not dirty");
	CHECK(lv_dom[o->lv] >= 0, "write of an object of no domain");
	CHECK(rcl_lru_node_flags(node) & RCL_LRU_F_WRITEBACK, "not under writeback");
	for (unsigned i = 0; i < g_wb_nbatch; i++)
		CHECK(g_wb_batch[i] != o - pool || !g_wb_ok[i],
		      "object written twice in one call");
	/* until writeback ends: clean and under writeback */
	o->dirty = false;
	o->wb = true;
	CHECK(g_wb_nbatch < NOBJ, "batch overflow");
	g_wb_ok[g_wb_nbatch] = !fail;
	g_wb_batch[g_wb_nbatch++] = (int)(o - pool);
	return fail ? -EIO : 0;
}

static int fuzz_wb_sync(void *priv)
{
	bool fail = g_wb_fail[g_wb_idx++ % 3] & 2;

	CHECK(priv == &g_wb_idx, "bad priv");
	if (fail)
		for (unsigned i = g_wb_synced; i < g_wb_nbatch; i++)
			g_wb_ok[i] = false;
	g_wb_synced = g_wb_nbatch;
	return fail ? -EIO : 0;
}

static const struct rcl_writeback_ops fuzz_wb_ops = { fuzz_wb_write, fuzz_wb_sync };

static struct fshr *shr_of(struct rcl_shrinker *s, struct rcl_shrink_control *sc)
{
	struct fshr *f = sc->priv;

	CHECK(f >= shrs && f < shrs + NSHR, "bad shrinker priv");
	CHECK(f->s == s && s != NULL, "callback of a freed shrinker");
	CHECK(f->registered, "callback of an unregistered shrinker");
	CHECK(sc->priority >= 0 && sc->priority <= RCL_DEF_PRIORITY,
	      "priority %d", sc->priority);
	CHECK(sc->partition < reg_parts[f->reg], "partition %u", sc->partition);
	CHECK((f->flags & RCL_SHRINKER_PARTITION_AWARE) || sc->partition == 0,
	      "partition %u for a shrinker that is not partition-aware",
	      sc->partition);
	return f;
}

static unsigned long fuzz_count(struct rcl_shrinker *s, struct rcl_shrink_control *sc)
{
	struct fshr *f = shr_of(s, sc);

	switch (f->count_mode & 3) {
	case 1:
		return 0;			/* skip this time */
	case 2:
		return f->nr * 3 + 1;		/* over-reports */
	default:
		return f->nr ? f->nr : RCL_SHRINK_EMPTY;
	}
}

static unsigned long fuzz_scan(struct rcl_shrinker *s, struct rcl_shrink_control *sc)
{
	struct fshr *f = shr_of(s, sc);
	unsigned long want = sc->nr_to_scan, freed = 0;
	int saved = g_in_shr;

	CHECK(want > 0, "scan of 0 objects");
	if (!g_debug_scan)
		CHECK(want <= (unsigned long)(f->batch ? f->batch : RCL_SHRINK_BATCH),
		      "nr_to_scan %lu above batch %ld", want, f->batch);
	/* needs I/O unless scan_mode bit 0; STOP without it */
	if (!(f->scan_mode & 1) && !(sc->context & RCL_CTX_MAY_IO))
		return RCL_SHRINK_STOP;
	g_in_shr = (int)(f - shrs);
	if (f->scan_mode & 4)
		CHECK_RC(rcl_shrinker_free(s), -EDEADLK);
	for (unsigned i = 0; i < NOBJ && freed < want; i++) {
		struct fobj *o = &pool[i];

		if (o->state != O_SHR || o->shr != f - shrs)
			continue;
		obj_release(o, true);
		f->nr--;
		freed++;
	}
	g_in_shr = saved;
	switch ((f->scan_mode >> 1) & 1) {
	case 1:
		sc->nr_scanned = want * 2;	/* "treated as nr_to_scan" */
		break;
	default:
		sc->nr_scanned = freed;
		break;
	}
	return freed;
}

static const struct rcl_shrinker_ops fuzz_shr_ops = { fuzz_count, fuzz_scan };

static void fuzz_trace(void *arg, const struct rcl_shrink_trace *ev)
{
	bool found = false;

	CHECK(arg == &regs[NREG - 1], "bad trace arg");
	for (unsigned i = 0; i < NSHR; i++)
		if (shrs[i].s && shrs[i].s == ev->shrinker)
			found = true;
	CHECK(found, "trace of a freed shrinker");
	CHECK(ev->phase == RCL_SHRINK_TRACE_START || ev->phase == RCL_SHRINK_TRACE_END,
	      "phase");
}

/* ------------------------------------------------------------------------- */
/* Invariants                                                                 */
/* ------------------------------------------------------------------------- */

static int tree_root(int n)
{
	while (tn[n].parent >= 0)
		n = tn[n].parent;
	return n;
}

/* The model's usage of tree node @n: its own charges plus its children's. */
static uint64_t tree_usage(int n)
{
	uint64_t u = n < NDOM ? doms[n].usage : tn[n].own;

	for (int c = NDOM; c < NTN; c++)
		if (tn[c].live && tn[c].parent == n)
			u += tree_usage(c);
	return u;
}

static bool tree_has_kids(int n)
{
	for (int c = NDOM; c < NTN; c++)
		if (tn[c].live && tn[c].parent == n)
			return true;
	return false;
}

static bool ev_ge(const struct rcl_domain_events *x,
		  const struct rcl_domain_events *y)
{
	return x->low >= y->low && x->high >= y->high && x->max >= y->max &&
	       x->oom >= y->oom;
}

/*
 * The effective protection of live child @n relative to @t, an ancestor or
 * @n itself (domain.h, "Trees of domains"): 0 for @t itself; a child of @t
 * gets its setting; deeper, min(usage, setting), scaled by parent_effective
 * / siblings' claims when they claim more than the parent has; with
 * RCL_DOMAIN_RECURSIVE_PROT, at least that and at most the parent's (what
 * flows to it is a share of what the siblings leave unclaimed).  The
 * parent's value is the library's, itself checked one level up.
 */
static void check_protection(int t, int n)
{
	uint64_t emin = 7, elow = 7, pmin = 0, plow = 0, u = tree_usage(n);
	int p = tn[n].parent;

	CHECK_RC(rcl_domain_effective_protection(tn[t].d, tn[n].d, &emin, &elow), 0);
	if (t == n) {
		CHECK(emin == 0 && elow == 0, "node %d: protection %llu/%llu from "
		      "its own pressure", n, (unsigned long long)emin,
		      (unsigned long long)elow);
		return;
	}
	if (p == t) {
		/* Also with no usage (F20 of docs/bad-input-audit.md, fixed). */
		CHECK(emin == tn[n].lim.protect_min && elow == tn[n].lim.protect_low,
		      "node %d, a child of the target %d: protection %llu/%llu, "
		      "settings %llu/%llu", n, t, (unsigned long long)emin,
		      (unsigned long long)elow,
		      (unsigned long long)tn[n].lim.protect_min,
		      (unsigned long long)tn[n].lim.protect_low);
		return;
	}
	CHECK_RC(rcl_domain_effective_protection(tn[t].d, tn[p].d, &pmin, &plow), 0);
	for (unsigned k = 0; k < 2; k++) {
		uint64_t pe = k ? plow : pmin, e = k ? elow : emin, sib = 0;
		uint64_t set = k ? tn[n].lim.protect_low : tn[n].lim.protect_min;
		uint64_t claimed = u < set ? u : set;

		for (int c = NDOM; c < NTN; c++)
			if (tn[c].live && tn[c].parent == p) {
				uint64_t cu = tree_usage(c);
				uint64_t cs = k ? tn[c].lim.protect_low
						: tn[c].lim.protect_min;

				sib += cu < cs ? cu : cs;
			}
		if (sib > pe)
			CHECK(e == claimed * pe / sib,
			      "node %d (target %d, %s): %llu, want %llu * %llu / %llu",
			      n, t, k ? "low" : "min", (unsigned long long)e,
			      (unsigned long long)claimed, (unsigned long long)pe,
			      (unsigned long long)sib);
		else if (!tn[tree_root(n)].recursive)
			CHECK(e == claimed, "node %d (target %d, %s): %llu, claims %llu",
			      n, t, k ? "low" : "min", (unsigned long long)e,
			      (unsigned long long)claimed);
		else
			CHECK(e >= claimed && e <= pe,
			      "node %d (target %d, %s, recursive): %llu, claims %llu, "
			      "parent's %llu", n, t, k ? "low" : "min",
			      (unsigned long long)e, (unsigned long long)claimed,
			      (unsigned long long)pe);
	}
}

/*
 * Every level of every tree: usage, budget and limits as the model has
 * them; a strict level above its budget only after a budget change put it
 * there, and then not growing; events never decrease, own or subtree (the
 * subtree sums keep a freed descendant's), and a subtree's are at least
 * its own plus its children's; the subtree counters at least the sum of
 * the live domains' own; effective protection.
 */
static void check_tree(void)
{
	for (int n = 0; n < NTN; n++) {
		struct ftree *f = &tn[n];
		uint64_t u, b;
		struct rcl_domain_events ev[2], sum;
		struct rcl_vmstat vs, v;
		uint64_t acc[sizeof(v) / sizeof(uint64_t)] = { 0 };
		const uint64_t *ps = (const uint64_t *)&vs;

		if (!f->live)
			continue;
		u = rcl_domain_usage(f->d);
		b = rcl_domain_budget(f->d);
		CHECK(u == tree_usage(n), "tree node %d: usage %llu, model %llu "
		      "(own %llu + children)", n, (unsigned long long)u,
		      (unsigned long long)tree_usage(n),
		      (unsigned long long)(n < NDOM ? doms[n].usage : f->own));
		if (n >= NDOM) {
			struct rcl_domain_limits lim;

			CHECK(b == f->budget, "tree node %d: budget %llu, model %llu",
			      n, (unsigned long long)b, (unsigned long long)f->budget);
			CHECK_RC(rcl_domain_limits(f->d, &lim), 0);
			CHECK(memcmp(&lim, &f->lim, sizeof(lim)) == 0,
			      "tree node %d: limits %llu/%llu/%llu, model %llu/%llu/%llu",
			      n, (unsigned long long)lim.limit_high,
			      (unsigned long long)lim.protect_low,
			      (unsigned long long)lim.protect_min,
			      (unsigned long long)f->lim.limit_high,
			      (unsigned long long)f->lim.protect_low,
			      (unsigned long long)f->lim.protect_min);
			CHECK(rcl_domain_parent(f->d) == tn[f->parent].d, "parent");
		} else {
			CHECK(rcl_domain_parent(f->d) == NULL, "a root's parent");
		}
		if (!f->soft && u > b) {
			CHECK(f->over_ok && u <= f->over_mark,
			      "tree node %d (strict): usage %llu above budget %llu%s",
			      n, (unsigned long long)u, (unsigned long long)b,
			      f->over_ok ? ", and growing" : "");
			f->over_mark = u;
		} else {
			f->over_ok = false;
		}
		CHECK_RC(rcl_domain_events(f->d, false, &ev[0]), 0);
		CHECK_RC(rcl_domain_events(f->d, true, &ev[1]), 0);
		CHECK(ev_ge(&ev[0], &f->ev[0]), "tree node %d: own events went down", n);
		CHECK(ev_ge(&ev[1], &f->ev[1]), "tree node %d: subtree events went down",
		      n);
		sum = ev[0];
		for (int c = NDOM; c < NTN; c++) {
			struct rcl_domain_events ce;

			if (!tn[c].live || tn[c].parent != n)
				continue;
			CHECK_RC(rcl_domain_events(tn[c].d, true, &ce), 0);
			sum.low += ce.low;
			sum.high += ce.high;
			sum.max += ce.max;
			sum.oom += ce.oom;
		}
		CHECK(ev_ge(&ev[1], &sum), "tree node %d: subtree events below "
		      "own + children's", n);
		f->ev[0] = ev[0];
		f->ev[1] = ev[1];
		CHECK_RC(rcl_domain_vmstat_subtree(f->d, &vs), 0);
		for (int x = 0; x < NTN; x++) {
			const uint64_t *pv = (const uint64_t *)&v;
			int y = x;

			if (!tn[x].live)
				continue;
			while (y >= 0 && y != n)
				y = tn[y].parent;
			if (y != n)
				continue;
			CHECK_RC(rcl_domain_vmstat(tn[x].d, &v), 0);
			for (size_t k = 0; k < sizeof(v) / sizeof(uint64_t); k++)
				acc[k] += pv[k];
		}
		for (size_t k = 0; k < sizeof(v) / sizeof(uint64_t); k++)
			CHECK(ps[k] >= acc[k], "tree node %d: subtree counter %zu "
			      "%llu below its domains' %llu", n, k,
			      (unsigned long long)ps[k], (unsigned long long)acc[k]);
		if (n >= NDOM)
			for (int t = n; t >= 0; t = tn[t].parent)
				check_protection(t, n);
	}
}

static void check_invariants(void)
{
	size_t cnt[NLV][RCL_LRU_NR_LISTS] = { { 0 } };
	uint64_t wt[NLV][RCL_LRU_NR_LISTS] = { { 0 } };
	size_t niso[NLV] = { 0 };
	uint64_t wiso[NLV] = { 0 };
	struct rcl_dirty_stats ds[NLV] = { { 0 } };
	unsigned shr_nr[NSHR] = { 0 };
	uint64_t charged[NDOM] = { 0 };

	/* Every batch of the last operation ended with batch_end. */
	CHECK(g_batch_freed[0] == 0, "a batch ended without batch_end (%u freed)",
	      g_batch_freed[0]);
	for (unsigned i = 0; i < NOBJ; i++) {
		struct fobj *o = &pool[i];
		unsigned f, st;

		CHECK(!o->in_cb, "object %u left in a callback's hands", i);
		o->handed = false;	/* every batch is put back by now */
		if (o->state == O_FREE) {
			CHECK(o->dom < 0, "free object %u still charged", i);
			if (!o->poisoned)
				CHECK((rcl_lru_node_flags(&o->lru) &
				       (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
					RCL_LRU_F_ISOLATED)) == 0,
				      "free object %u not idle", i);
			continue;
		}
		if (o->dom >= 0)
			charged[o->dom] += o->weight;
		if (o->state == O_SHR) {
			shr_nr[o->shr]++;
			CHECK((rcl_lru_node_flags(&o->lru) &
			       (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
				RCL_LRU_F_ISOLATED)) == 0,
			      "shrinker object %u on an lruvec", i);
			continue;
		}
		f = rcl_lru_node_flags(&o->lru);
		st = f & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED | RCL_LRU_F_ISOLATED);
		CHECK(st == RCL_LRU_F_PENDING || st == RCL_LRU_F_LISTED ||
		      st == RCL_LRU_F_ISOLATED,
		      "object %u: state bits %#x, not exactly one", i, st);
		CHECK(!!(st == RCL_LRU_F_ISOLATED) == o->iso,
		      "object %u: isolated %d, model %d", i,
		      st == RCL_LRU_F_ISOLATED, o->iso);
		CHECK(!!(f & RCL_LRU_F_UNEVICTABLE) == o->unevictable,
		      "object %u: unevictable %#x, model %d", i, f, o->unevictable);
		CHECK(!!(f & RCL_LRU_F_DIRTY) == o->dirty,
		      "object %u: dirty flag %#x, model %d", i, f, o->dirty);
		CHECK(!!(f & RCL_LRU_F_WRITEBACK) == o->wb,
		      "object %u: writeback flag %#x, model %d", i, f, o->wb);
		CHECK(rcl_lru_node_type(&o->lru) == o->type, "object %u: type", i);
		if (st == RCL_LRU_F_LISTED) {
			unsigned l = (f & RCL_LRU_F_UNEVICTABLE)
					     ? RCL_LRU_UNEVICTABLE
					     : RCL_LRU_LIST(o->type, f & RCL_LRU_F_ACTIVE);
			cnt[o->lv][l]++;
			wt[o->lv][l] += o->weight;
		} else if (st == RCL_LRU_F_ISOLATED) {
			niso[o->lv]++;
			wiso[o->lv] += o->weight;
		}
		if (o->dirty) {
			ds[o->lv].nr_dirty++;
			ds[o->lv].weight_dirty += o->weight;
		}
		if (o->wb) {
			ds[o->lv].nr_writeback++;
			ds[o->lv].weight_writeback += o->weight;
		}
	}

	for (unsigned v = 0; v < NLV; v++) {
		struct rcl_dirty_stats got;

		for (unsigned l = 0; l < RCL_LRU_NR_LISTS; l++) {
			uint64_t w = 1;
			size_t n = rcl_lruvec_count(&lvs[v], l, &w);

			CHECK(n == cnt[v][l] && w == wt[v][l],
			      "lruvec %u list %u: count %zu/%zu weight %llu/%llu",
			      v, l, n, cnt[v][l], (unsigned long long)w,
			      (unsigned long long)wt[v][l]);
		}
		CHECK(rcl_lruvec_nr_isolated(&lvs[v]) == niso[v],
		      "lruvec %u: nr_isolated %zu, model %zu", v,
		      rcl_lruvec_nr_isolated(&lvs[v]), niso[v]);
		CHECK(isos[v].nr == niso[v] && isos[v].weight == wiso[v],
		      "lruvec %u: isolated set %zu/%zu", v, isos[v].nr, niso[v]);
		CHECK_RC(rcl_lruvec_dirty_stats(&lvs[v], &got), 0);
		CHECK(memcmp(&got, &ds[v], sizeof(got)) == 0,
		      "lruvec %u: dirty %llu/%llu w %llu/%llu, writeback %llu/%llu w %llu/%llu",
		      v, (unsigned long long)got.nr_dirty,
		      (unsigned long long)ds[v].nr_dirty,
		      (unsigned long long)got.weight_dirty,
		      (unsigned long long)ds[v].weight_dirty,
		      (unsigned long long)got.nr_writeback,
		      (unsigned long long)ds[v].nr_writeback,
		      (unsigned long long)got.weight_writeback,
		      (unsigned long long)ds[v].weight_writeback);
	}
	for (unsigned d = 0; d < NDOM; d++) {
		struct rcl_dirty_stats got, want = { 0 };
		struct rcl_watermarks wm;

		/* Its own charges, plus its children's in tree mode. */
		CHECK(rcl_domain_usage(doms[d].d) == tree_usage((int)d),
		      "domain %u: usage %llu, model %llu", d,
		      (unsigned long long)rcl_domain_usage(doms[d].d),
		      (unsigned long long)tree_usage((int)d));
		CHECK(doms[d].usage == charged[d] + doms[d].extra,
		      "domain %u: model usage inconsistent", d);
		for (unsigned v = 0; v < NLV; v++) {
			if (lv_dom[v] != (int)d)
				continue;
			want.nr_dirty += ds[v].nr_dirty;
			want.weight_dirty += ds[v].weight_dirty;
			want.nr_writeback += ds[v].nr_writeback;
			want.weight_writeback += ds[v].weight_writeback;
		}
		CHECK_RC(rcl_domain_dirty_stats(doms[d].d, &got), 0);
		CHECK(memcmp(&got, &want, sizeof(got)) == 0,
		      "domain %u: dirty %llu/%llu, writeback %llu/%llu", d,
		      (unsigned long long)got.nr_dirty,
		      (unsigned long long)want.nr_dirty,
		      (unsigned long long)got.nr_writeback,
		      (unsigned long long)want.nr_writeback);
		CHECK_RC(rcl_domain_watermarks(doms[d].d, &wm), 0);
		CHECK(wm.min <= wm.low && wm.low <= wm.high &&
		      wm.high <= rcl_domain_budget(doms[d].d),
		      "domain %u: watermarks out of order", d);
	}
	if (g_limit) {
		uint64_t nsh = 0;

		for (unsigned i = 0; i < NOBJ; i++)
			nsh += rcl_shadow_is_valid(pool[i].shadow);
		CHECK(rcl_shadow_limit_count(g_limit) == nsh,
		      "shadow limit counts %llu, store holds %llu",
		      (unsigned long long)rcl_shadow_limit_count(g_limit),
		      (unsigned long long)nsh);
	}
	for (unsigned s = 0; s < NSHR; s++)
		CHECK(shr_nr[s] == shrs[s].nr && (shrs[s].s || !shrs[s].nr),
		      "shrinker %u: %u objects, model %u", s, shr_nr[s], shrs[s].nr);
	check_tree();
}

/* ------------------------------------------------------------------------- */
/* Set-up and tear-down                                                       */
/* ------------------------------------------------------------------------- */

struct reader {
	const uint8_t *p;
	size_t n, i;
};

static uint8_t rd8(struct reader *r)
{
	return r->i < r->n ? r->p[r->i++] : 0;
}

static void setup(struct reader *r, uint8_t tree_hdr)
{
	uint8_t h[6];
	struct rcl_shrinker_registry_config rcfg = { 0 };

	for (unsigned i = 0; i < 6; i++)
		h[i] = rd8(r);
	memset(pool, 0, sizeof(pool));
	for (unsigned i = 0; i < NOBJ; i++)
		pool[i].dom = -1;
	memset(shrs, 0, sizeof(shrs));
	g_now = 1000;

	for (unsigned d = 0; d < NDOM; d++) {
		uint8_t c = h[2 * d];
		struct rcl_domain_config cfg = {
			.budget = 8 + 4ull * h[2 * d + 1],
			.nr_partitions = (c & 2) ? 2 : 1,
			.mode = (c & 1) ? RCL_CHARGE_SOFT : RCL_CHARGE_STRICT,
			.shrink_policy = (enum rcl_shrink_policy)(((c >> 2) & 3) % 3),
			.flags = ((c & 0x20) ? RCL_DOMAIN_RECLAIM_WRITES : 0) |
				 ((c & 0x40) ? RCL_DOMAIN_NONPROPORTIONAL : 0) |
				 ((g_tree && (tree_hdr & (1u << d)))
					  ? RCL_DOMAIN_RECURSIVE_PROT : 0),
			.clock = &fuzz_clock,
			.flusher = (c & 0x80) ? &fuzz_flusher_ops : NULL,
			.flusher_priv = &doms[d],
			.flush_policy = (c & 0x10) ? RCL_FLUSH_PROPORTIONAL : RCL_FLUSH_ALL,
		};

		memset(&doms[d], 0, sizeof(doms[d]));
		doms[d].nr_partitions = cfg.nr_partitions;
		doms[d].flags = cfg.flags;
		doms[d].has_flusher = cfg.flusher != NULL;
		doms[d].soft = cfg.mode == RCL_CHARGE_SOFT;
		CHECK_RC(rcl_domain_new(&cfg, &doms[d].d), 0);
		memset(&tn[d], 0, sizeof(tn[d]));
		tn[d].d = doms[d].d;
		tn[d].parent = -1;
		tn[d].live = true;
		tn[d].soft = doms[d].soft;
		tn[d].recursive = (cfg.flags & RCL_DOMAIN_RECURSIVE_PROT) != 0;
		tn[d].depth = 1;
		tn[d].lim.limit_high = UINT64_MAX;
		regs[d] = rcl_domain_registry(doms[d].d);
		CHECK(regs[d] != NULL, "domain registry");
		reg_parts[d] = cfg.nr_partitions;
	}
	g_limit = NULL;
	if (h[5] & 0x10) {
		struct rcl_shadow_limit *l = NULL;

		CHECK_RC(rcl_shadow_limit_new(regs[0], 2u * (h[5] >> 5),
					      &fuzz_shadow_ops, &g_limit, &l), 0);
		CHECK_RC(rcl_shadow_limit_new(regs[0], 0, NULL, NULL, &l), -EINVAL);
		CHECK(rcl_shadow_limit_count(l) == 0, "new limit not empty");
		g_limit = l;
	}
	rcfg.nr_partitions = 1 + (h[5] & 3);
	rcfg.policy = (enum rcl_shrink_policy)(((h[5] >> 2) & 3) % 3);
	rcfg.trace = fuzz_trace;
	rcfg.trace_arg = &regs[NREG - 1];
	CHECK_RC(rcl_shrinker_registry_new(&rcfg, &regs[NREG - 1]), 0);
	reg_parts[NREG - 1] = rcfg.nr_partitions;

	for (unsigned k = NDOM; k < NTN; k++)
		memset(&tn[k], 0, sizeof(tn[k]));

	/*
	 * The callback form of each lruvec: bit 5 + v of the first
	 * operation's opcode byte (input byte 6), which the opcode (% 32)
	 * ignores; lruvec 1 sets evict too, which must then not be called.
	 * In tree mode, where bit 5 of an opcode byte means a tree
	 * operation, the same bits of the tree header.
	 */
	uint8_t form = g_tree ? tree_hdr : r->i < r->n ? r->p[r->i] : 0;

	for (unsigned v = 0; v < NLV; v++) {
		lv_batched[v] = (form >> (5 + v)) & 1;
		struct rcl_lruvec_config cfg = {
			.ops = !lv_batched[v] ? &fuzz_lv_ops
			       : v == 1       ? &fuzz_lv_both_ops
					      : &fuzz_lv_batch_ops,
			.priv = &lvs[v],
			.nr_types = (h[4] & (1u << v)) ? 1 : 0,
			.weight_per_gib = (h[4] & 0x80) ? 64 : 0,
			.flags = (h[4] & (8u << v)) ? RCL_LRUVEC_KERNEL : 0,
		};
		if (v == 2 && (h[4] & 0x40)) {
			cfg.nr_types = RCL_LRU_MAX_TYPES;
			for (unsigned t = 0; t < RCL_LRU_MAX_TYPES; t++)
				cfg.types[t].cost = t;
		}
		CHECK_RC(rcl_lruvec_init(&lvs[v], &cfg), 0);
		rcl_lru_isolated_init(&isos[v]);
		lv_dom[v] = -1;
	}
	CHECK_RC(rcl_lruvec_init(&lvs[NLV], NULL), 0);
}

/*
 * Free child @n (it has no children): what it holds is uncharged first, so
 * that the ancestors' usage does not depend on what rcl_domain_free() does
 * with a child's charges (docs/bad-input-audit.md, F18).
 */
static void tree_free(int n)
{
	struct ftree *f = &tn[n];

	CHECK(!tree_has_kids(n), "freeing a parent in the model");
	if (f->own)
		CHECK_RC(rcl_domain_uncharge(f->d, f->own), 0);
	f->own = 0;
	CHECK_RC(rcl_domain_free(f->d), 0);
	f->live = false;
	f->d = NULL;
}

/* Children before their parents; a parent with children is refused. */
static void tree_teardown(void)
{
	bool any = true;

	while (any) {
		any = false;
		for (int n = NTN - 1; n >= NDOM; n--) {
			if (!tn[n].live)
				continue;
			any = true;
			if (tree_has_kids(n))
				CHECK_RC(rcl_domain_free(tn[n].d), -EBUSY);
			else
				tree_free(n);
		}
	}
}

static void teardown(void)
{
	tree_teardown();
	for (unsigned v = 0; v < NLV; v++)
		if (isos[v].nr) {
			CHECK_RC(rcl_lruvec_putback(&lvs[v], &isos[v]), 0);
			for (unsigned i = 0; i < NOBJ; i++)
				if (pool[i].state == O_LV && pool[i].lv == v)
					pool[i].iso = false;
		}
	for (unsigned i = 0; i < NOBJ; i++) {
		struct fobj *o = &pool[i];

		if (o->state == O_LV) {
			if (o->wb) {
				CHECK_RC(rcl_lruvec_writeback_end(&lvs[o->lv], &o->lru, 0), 0);
				o->wb = false;
			}
			CHECK_RC(rcl_lruvec_del(&lvs[o->lv], &o->lru), 0);
			obj_release(o, false);
		}
	}
	check_invariants();
	for (unsigned s = 0; s < NSHR; s++) {
		if (!shrs[s].s)
			continue;
		CHECK_RC(rcl_shrinker_free(shrs[s].s), 0);
		shrs[s].s = NULL;
		for (unsigned i = 0; i < NOBJ; i++)
			if (pool[i].state == O_SHR && pool[i].shr == s)
				obj_release(&pool[i], false);
		shrs[s].nr = 0;
	}
	for (unsigned v = 0; v < NLV; v++)
		if (lv_dom[v] >= 0) {
			CHECK_RC(rcl_domain_detach(doms[lv_dom[v]].d, &lvs[v]), 0);
			lv_dom[v] = -1;
		}
	for (unsigned d = 0; d < NDOM; d++) {
		dom_uncharge((int)d, doms[d].extra);
		doms[d].extra = 0;
	}
	check_invariants();
	CHECK_RC(rcl_shadow_limit_free(g_limit), 0);	/* NULL: a no-op */
	g_limit = NULL;
	for (unsigned i = 0; i < NOBJ; i++)
		pool[i].shadow = 0;
	for (unsigned d = 0; d < NDOM; d++)
		CHECK_RC(rcl_domain_free(doms[d].d), 0);
	CHECK_RC(rcl_shrinker_registry_free(regs[NREG - 1]), 0);
	for (unsigned v = 0; v <= NLV; v++) {
		CHECK_RC(rcl_lruvec_destroy(&lvs[v]), 0);
		CHECK_RC(rcl_lruvec_destroy(&lvs[v]), 0);	/* a no-op */
	}
	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].poisoned) {
			UNPOISON(&pool[i].lru, sizeof(pool[i].lru));
			pool[i].poisoned = false;
		}
	rcl_lru_drain_local();
}

/* ------------------------------------------------------------------------- */
/* Operations                                                                 */
/* ------------------------------------------------------------------------- */

enum {
	OP_ADD, OP_ADD_REFAULT, OP_DEL, OP_ACCESS, OP_MOVE, OP_SET_DIRTY,
	OP_WB_START, OP_WB_END, OP_ISOLATE, OP_PUTBACK, OP_ISO_EDIT,
	OP_SHRINK_INACTIVE, OP_SHRINK_ACTIVE, OP_DRAIN, OP_SET_MODE, OP_ATTACH,
	OP_DETACH, OP_CHARGE, OP_UNCHARGE, OP_TUNE, OP_RECLAIM, OP_FLUSH,
	OP_BALANCE, OP_WRITEBACK_ALL, OP_SHR_NEW, OP_SHR_REGISTER, OP_SHR_FREE,
	OP_SHR_GROW, OP_SHR_SHRINK, OP_SHR_DEBUG, OP_INVALID, OP_QUERY,
	NR_OPS
};

static unsigned nr_types(unsigned v)
{
	return rcl_lruvec_nr_types(&lvs[v]);
}

/* Is @o on lruvec @v in the model? */
static bool on_lv(const struct fobj *o, unsigned v)
{
	return o->state == O_LV && o->lv == v;
}

/*
 * rcl_lruvec_add_refault() that must fail (the node is not idle, an unknown
 * flag, or ACTIVE with UNEVICTABLE): -EBUSY / -EINVAL, and - common.h - no
 * effect.  The object's shadow may be a valid one of this lruvec and type:
 * that is how BUG-1 (fuzz/crashes/bug1-*) showed, a failing call that had
 * moved the adaptive inactive target (fixed in b1b5d4f).
 */
static bool both_flags(unsigned flags)
{
	return (flags & RCL_LRU_ADD_ACTIVE) && (flags & RCL_LRU_ADD_UNEVICTABLE);
}

static void refault_busy(struct fobj *o, unsigned v, unsigned type,
			 uint32_t w, unsigned flags)
{
	struct rcl_workingset_stats b, e;
	unsigned outcome = 1, tb, te;
	uint64_t shadow = o->shadow;
	int rc;

	if (o->state == O_LV && o->poisoned)
		return;
	CHECK_RC(rcl_lruvec_workingset_stats(&lvs[v], &b), 0);
	tb = rcl_lruvec_inactive_target(&lvs[v], type);
	rc = rcl_lruvec_add_refault(&lvs[v], &o->lru, type, w, flags, shadow,
				    &outcome);
	te = rcl_lruvec_inactive_target(&lvs[v], type);
	CHECK_RC(rcl_lruvec_workingset_stats(&lvs[v], &e), 0);
	if (o->state == O_LV && !(flags & (1u << 7)) && !both_flags(flags))
		CHECK_RC(rc, -EBUSY);
	else
		CHECK_RC(rc, -EINVAL);
	CHECK(outcome == 0, "failed add_refault: outcome %#x", outcome);
	CHECK(e.refault == b.refault && e.activate == b.activate &&
	      e.restore == b.restore && e.nonresident_age == b.nonresident_age,
	      "BUG-1: failed add_refault counted (refault %llu -> %llu)",
	      (unsigned long long)b.refault, (unsigned long long)e.refault);
	CHECK(tb == te, "BUG-1: failed add_refault moved the inactive target "
	      "%u -> %u", tb, te);
}

static void op_add(const uint8_t *a, bool refault)
{
	struct fobj *o = &pool[a[0] % NOBJ];
	unsigned v = a[1] & 3, type = (a[1] >> 2) & 7, flags = 0, outcome = 0;
	uint32_t w = 1 + (a[2] & 15);
	uint64_t ctx = (a[2] & 0x10) ? RCL_CTX_CAPABLE : 0;
	int rc, d;

	if (a[3] & 1)
		flags |= RCL_LRU_ADD_ACTIVE;
	if (a[3] & 2)
		flags |= RCL_LRU_ADD_UNEVICTABLE;
	if (a[3] & 4)
		flags |= RCL_LRU_ADD_NOBATCH;
	if (a[3] & 8)
		flags |= 1u << 7;		/* unknown flag */
	if (v == NLV)
		v = a[0] % NLV;
	type %= (a[2] & 0x20) ? 8 : nr_types(v);

	if (o->state != O_FREE) {
		/* already on an lruvec (or a shrinker's object, idle) */
		if (refault && o->state == O_LV) {
			refault_busy(o, v, type % nr_types(v), w, flags);
			return;
		}
		rc = rcl_lruvec_add(&lvs[v], &o->lru, type % nr_types(v), w,
				    flags & ~(1u << 7) & ~RCL_LRU_ADD_UNEVICTABLE);
		if (o->state == O_LV)
			CHECK_RC(rc, -EBUSY);
		else {
			/* idle node of a shrinker's object: take it back */
			CHECK_RC(rc, 0);
			CHECK_RC(rcl_lruvec_del(&lvs[v], &o->lru), 0);
		}
		return;
	}
	obj_take(o);
	/* ACTIVE with UNEVICTABLE is refused (-EINVAL), like unknown flags */
	if ((flags & (1u << 7)) || type >= nr_types(v) || both_flags(flags)) {
		if (refault && type < nr_types(v)) {
			refault_busy(o, v, type, w, flags);
			return;
		}
		if (refault)
			rc = rcl_lruvec_add_refault(&lvs[v], &o->lru, type, w, flags,
						    o->shadow, &outcome);
		else
			rc = rcl_lruvec_add(&lvs[v], &o->lru, type, w, flags);
		CHECK_RC(rc, -EINVAL);
		return;
	}
	d = lv_dom[v];
	if (d >= 0 && dom_charge(d, w, ctx) != 0)
		return;			/* refused: the object is not created */
	/* the charge may have reclaimed; @o is still free */
	CHECK(o->state == O_FREE && !o->poisoned, "object changed in reclaim");
	if (refault) {
		struct rcl_workingset_stats b, e;

		CHECK_RC(rcl_lruvec_workingset_stats(&lvs[v], &b), 0);
		rc = rcl_lruvec_add_refault(&lvs[v], &o->lru, type, w, flags,
					    o->shadow, &outcome);
		CHECK_RC(rc, 0);
		CHECK_RC(rcl_lruvec_workingset_stats(&lvs[v], &e), 0);
		if (!rcl_shadow_is_valid(o->shadow))
			CHECK(outcome == 0, "refault outcome %#x for no shadow",
			      outcome);
		CHECK(!(outcome & (RCL_REFAULT_ACTIVATE | RCL_REFAULT_RESTORE)) ||
		      (outcome & RCL_REFAULT_REFAULT), "outcome %#x", outcome);
		/* A restore is an activated refault (the kernel's rule). */
		CHECK(!(outcome & RCL_REFAULT_RESTORE) ||
		      (outcome & RCL_REFAULT_ACTIVATE), "outcome %#x", outcome);
		CHECK(e.refault - b.refault == !!(outcome & RCL_REFAULT_REFAULT),
		      "refault counter");
		CHECK(e.activate - b.activate == !!(outcome & RCL_REFAULT_ACTIVATE),
		      "activate counter");
		CHECK(e.restore - b.restore == !!(outcome & RCL_REFAULT_RESTORE),
		      "restore counter");
		shadow_set(o, 0);
	} else {
		CHECK_RC(rcl_lruvec_add(&lvs[v], &o->lru, type, w, flags), 0);
	}
	o->state = O_LV;
	o->lv = (uint8_t)v;
	o->type = (uint8_t)type;
	o->weight = w;
	o->dom = (int8_t)d;
	o->unevictable = (flags & RCL_LRU_ADD_UNEVICTABLE) != 0;
	o->mode = a[3] >> 4;
	if (flags & RCL_LRU_ADD_NOBATCH)
		CHECK(rcl_lru_node_flags(&o->lru) & RCL_LRU_F_LISTED,
		      "NOBATCH add not listed");
}

/*
 * The object and lruvec an operation names: a[0] the object (a free one is
 * taken from the pool first), a[1] the lruvec (NLV: the one without ops).
 */
static struct fobj *op_obj(const uint8_t *a, unsigned *v)
{
	struct fobj *o = &pool[a[0] % NOBJ];

	*v = a[1] % (NLV + 1);
	if (o->state == O_FREE)
		obj_take(o);
	return o;
}

static void op_del(const uint8_t *a)
{
	unsigned v;
	bool wait = a[2] & 1;
	int rc;
	struct fobj *o = op_obj(a, &v);

	if (!on_lv(o, v)) {
		rc = wait ? rcl_lruvec_del_wait(&lvs[v], &o->lru)
			  : rcl_lruvec_del(&lvs[v], &o->lru);
		CHECK_RC(rc, -ENOENT);
		return;
	}
	if (o->iso || o->wb) {
		/* del_wait would wait for ourselves: never here */
		CHECK_RC(rcl_lruvec_del(&lvs[v], &o->lru), -EBUSY);
		return;
	}
	rc = wait ? rcl_lruvec_del_wait(&lvs[v], &o->lru)
		  : rcl_lruvec_del(&lvs[v], &o->lru);
	CHECK_RC(rc, 0);
	CHECK((rcl_lru_node_flags(&o->lru) & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
					       RCL_LRU_F_ISOLATED | RCL_LRU_F_DIRTY |
					       RCL_LRU_F_WRITEBACK)) == 0,
	      "deleted node not idle and clean");
	obj_release(o, a[2] & 2);
	/* a second delete of the same node */
	if (!(a[2] & 2))
		CHECK_RC(rcl_lruvec_del(&lvs[v], &o->lru), -ENOENT);
}

static void op_access(const uint8_t *a)
{
	unsigned v;
	int n = 1 + (a[2] & 3);
	struct fobj *o = op_obj(a, &v);

	for (int i = 0; i < n; i++)
		CHECK_RC(rcl_lruvec_mark_accessed(&lvs[v], &o->lru),
			 on_lv(o, v) ? 0 : -ENOENT);
}

static void op_move(const uint8_t *a)
{
	unsigned v, how = a[2] & 3;
	int rc, want;
	struct fobj *o = op_obj(a, &v);

	switch (how) {
	case 0:
		rc = rcl_lruvec_rotate(&lvs[v], &o->lru);
		break;
	case 1:
		rc = rcl_lruvec_deactivate(&lvs[v], &o->lru);
		break;
	case 2:
		rc = rcl_lruvec_mark_unevictable(&lvs[v], &o->lru);
		break;
	default:
		rc = rcl_lruvec_unmark_unevictable(&lvs[v], &o->lru);
		break;
	}
	if (!on_lv(o, v))
		want = -ENOENT;
	else if (o->iso)
		want = -EBUSY;
	else if (o->unevictable && how < 2)
		want = -EPERM;
	else
		want = 0;
	CHECK_RC(rc, want);
	if (rc == 0 && how >= 2)
		o->unevictable = how == 2;
}

static void op_set_dirty(const uint8_t *a)
{
	unsigned v;
	int n = 1 + (a[2] & 1);
	struct fobj *o = op_obj(a, &v);

	for (int i = 0; i < n; i++)	/* idempotent */
		CHECK_RC(rcl_lruvec_set_dirty(&lvs[v], &o->lru),
			 on_lv(o, v) ? 0 : -ENOENT);
	if (on_lv(o, v))
		o->dirty = true;
	if (a[2] & 2) {
		int d = v < NLV ? lv_dom[v] : -1;

		/* dirtying throttles; our clock never sleeps */
		if (d >= 0) {
			int rc = rcl_domain_balance_dirty(doms[d].d,
						  (a[2] & 4) ? RCL_CTX_CAPABLE : 0);
			CHECK_RC2(rc, 0, -ETIMEDOUT);
		}
	}
}

static void op_wb_start(const uint8_t *a)
{
	unsigned v;
	int rc;
	struct fobj *o = op_obj(a, &v);

	rc = rcl_lruvec_writeback_start(&lvs[v], &o->lru);
	if (!on_lv(o, v)) {
		CHECK_RC2(rc, -ENOENT, -EINVAL);
	} else if (o->wb) {
		if (o->dirty)
			CHECK_RC(rc, -EBUSY);
		else
			CHECK_RC2(rc, -EBUSY, -EINVAL);
	} else if (!o->dirty) {
		CHECK_RC(rc, -EINVAL);
	} else {
		CHECK_RC(rc, 0);
		o->dirty = false;
		o->wb = true;
	}
}

static void op_wb_end(const uint8_t *a)
{
	unsigned v;
	int err = (a[2] & 1) ? -EIO : 0, rc;
	struct fobj *o = op_obj(a, &v);

	rc = rcl_lruvec_writeback_end(&lvs[v], &o->lru, err);
	if (!on_lv(o, v)) {
		CHECK_RC2(rc, -ENOENT, -EINVAL);
	} else if (!o->wb) {
		CHECK_RC(rc, -EINVAL);
	} else {
		CHECK_RC(rc, 0);
		o->wb = false;
		if (err)
			o->dirty = true;
	}
}

/* Mark the nodes of an isolated set in the model. */
static void iso_sync(unsigned v)
{
	struct rcl_lru_node *n = NULL;
	size_t nr = 0;

	while ((n = rcl_lru_isolated_next(&isos[v], n)) != NULL) {
		struct fobj *o = obj_of(n);

		CHECK(on_lv(o, v) && !o->unevictable && !o->poisoned,
		      "isolated node %td not on lruvec %u", o - pool, v);
		o->iso = true;
		nr++;
	}
	CHECK(nr == isos[v].nr, "isolated set: %zu nodes, nr %zu", nr, isos[v].nr);
}

static void op_isolate(const uint8_t *a)
{
	unsigned v = a[0] % NLV, list = a[1] % (RCL_LRU_NR_LISTS + 2);
	size_t n = a[2] % 40;
	unsigned other = (v + 1) % NLV;
	int rc;

	if ((a[3] & 1) && isos[other].nr) {
		/* a set holding nodes of another lruvec */
		CHECK_RC(rcl_lruvec_isolate(&lvs[v], 0, n, &isos[other]), -EINVAL);
		return;
	}
	g_no_evict = true;
	rc = rcl_lruvec_isolate(&lvs[v], list, n, &isos[v]);
	g_no_evict = false;
	if (list >= 2 * nr_types(v)) {
		CHECK_RC(rc, -EINVAL);
		return;
	}
	CHECK_RC(rc, 0);
	CHECK(isos[v].nr_scanned <= n, "nr_scanned %zu > %zu", isos[v].nr_scanned, n);
	iso_sync(v);
}

static void op_putback(const uint8_t *a)
{
	unsigned v = a[0] % NLV, other = (v + 1) % NLV;

	if ((a[1] & 1) && isos[other].nr) {
		CHECK_RC(rcl_lruvec_putback(&lvs[v], &isos[other]), -EINVAL);
		return;
	}
	g_no_evict = true;
	CHECK_RC(rcl_lruvec_putback(&lvs[v], &isos[v]), 0);
	g_no_evict = false;
	CHECK(isos[v].nr == 0 && isos[v].weight == 0, "set not empty after putback");
	for (unsigned i = 0; i < NOBJ; i++)
		if (on_lv(&pool[i], v))
			pool[i].iso = false;
}

static void op_iso_edit(const uint8_t *a)
{
	unsigned v = a[0] % NLV, k = a[1];
	struct rcl_lru_node *n = NULL;
	struct fobj *o;
	int rc;

	if (!isos[v].nr) {
		struct fobj *x = &pool[a[1] % NOBJ];

		/* a node that is not isolated in this set */
		if (x->state == O_FREE)
			obj_take(x);
		if (!x->iso) {
			CHECK_RC(rcl_lru_isolated_remove(&isos[v], &x->lru), -EINVAL);
			CHECK_RC(rcl_lru_isolated_set_active(&isos[v], &x->lru, true),
				 -EINVAL);
		}
		return;
	}
	k %= isos[v].nr;
	for (unsigned i = 0; i <= k; i++)
		n = rcl_lru_isolated_next(&isos[v], n);
	CHECK(n != NULL, "set shorter than nr");
	o = obj_of(n);
	CHECK(o->iso && on_lv(o, v), "set member not isolated in model");
	if (a[2] & 1) {
		CHECK_RC(rcl_lru_isolated_set_active(&isos[v], n, a[2] & 2), 0);
		return;
	}
	rc = rcl_lru_isolated_remove(&isos[v], n);
	if (o->wb) {
		CHECK_RC(rc, -EBUSY);
		return;
	}
	CHECK_RC(rc, 0);
	CHECK((rcl_lru_node_flags(n) & (RCL_LRU_F_PENDING | RCL_LRU_F_LISTED |
					RCL_LRU_F_ISOLATED)) == 0,
	      "removed node not idle");
	obj_release(o, a[2] & 4);
}

static void begin_cb(void)
{
	g_cb_freed = g_cb_busy = g_cb_act = 0;
	g_cb_wfreed = g_cb_slab_w = 0;
}

static void op_shrink_inactive(const uint8_t *a)
{
	unsigned v = a[0] % (NLV + 1);
	struct rcl_lru_shrink_control sc = {
		.type = (a[1] & 7) % (a[1] & 8 ? 8 : (v < NLV ? nr_types(v) : 2)),
		.nr_to_scan = a[2] % 70,
		.priority = a[3] % 13,
		.context = (a[3] & 0x80) ? RCL_CTX_CAPABLE : 0,
		.flags = (a[1] & 0x10) ? RCL_LRU_SHRINK_WRITE_DIRTY : 0,
	};
	int rc;

	begin_cb();
	g_write_dirty = sc.flags != 0;
	rc = rcl_lruvec_shrink_inactive(&lvs[v], &sc);
	g_write_dirty = false;
	if (v == NLV || sc.type >= nr_types(v)) {
		CHECK_RC(rc, -EINVAL);
		return;
	}
	CHECK_RC(rc, 0);
	CHECK(sc.nr_freed == g_cb_freed && sc.weight_freed == g_cb_wfreed,
	      "nr_freed %zu, callbacks %u", sc.nr_freed, g_cb_freed);
	CHECK(sc.nr_rotated == g_cb_busy, "nr_rotated %zu, BUSY %u",
	      sc.nr_rotated, g_cb_busy);
	CHECK(sc.nr_activated >= g_cb_act, "nr_activated %zu, ACTIVATE %u",
	      sc.nr_activated, g_cb_act);
	CHECK(sc.nr_taken >= g_cb_freed + g_cb_busy + g_cb_act &&
	      sc.nr_taken <= sc.nr_scanned && sc.nr_scanned <= sc.nr_to_scan,
	      "taken %zu scanned %zu to_scan %zu callbacks %u", sc.nr_taken,
	      sc.nr_scanned, sc.nr_to_scan, g_cb_freed + g_cb_busy + g_cb_act);
	CHECK(sc.nr_unqueued_dirty <= sc.nr_dirty && sc.nr_writeback <= sc.nr_dirty &&
	      sc.nr_immediate <= sc.nr_writeback, "dirty counters");
}

static void op_shrink_active(const uint8_t *a)
{
	unsigned v = a[0] % (NLV + 1);
	struct rcl_lru_shrink_control sc = {
		.type = (a[1] & 7) % (a[1] & 8 ? 8 : (v < NLV ? nr_types(v) : 2)),
		.nr_to_scan = a[2] % 70,
	};
	int rc;

	g_no_evict = true;
	rc = rcl_lruvec_shrink_active(&lvs[v], &sc);
	g_no_evict = false;
	if (sc.type >= rcl_lruvec_nr_types(&lvs[v])) {
		CHECK_RC(rc, -EINVAL);
		return;
	}
	CHECK_RC(rc, 0);
	CHECK(sc.nr_rotated + sc.nr_deactivated <= sc.nr_to_scan,
	      "active scan moved %zu+%zu of %zu", sc.nr_rotated,
	      sc.nr_deactivated, sc.nr_to_scan);
	CHECK(sc.nr_freed == 0, "shrink_active freed");
}

static void op_drain(const uint8_t *a)
{
	unsigned v = a[0] % (NLV + 1);

	g_no_evict = true;
	if (a[1] & 1) {
		rcl_lru_drain_local();
	} else {
		CHECK_RC(rcl_lruvec_drain(&lvs[v]), 0);
	}
	g_no_evict = false;
	/* one thread: after either drain, nothing of ours is pending */
	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].state == O_LV && (v == pool[i].lv || (a[1] & 1)))
			CHECK(!(rcl_lru_node_flags(&pool[i].lru) & RCL_LRU_F_PENDING),
			      "object %u pending after drain", i);
}

static void op_set_mode(const uint8_t *a)
{
	pool[a[0] % NOBJ].mode = a[1];
}

static void op_attach(const uint8_t *a)
{
	unsigned d = a[0] % NDOM, v = a[1] % (NLV + 1), part = a[2] % 3;
	int rc;

	/*
	 * An lruvec attached to another domain is refused too (-EBUSY): BUG-2
	 * (fuzz/crashes/bug2-*), fixed in b1b5d4f, accepted it and broke the
	 * domains' dirty counts.
	 */
	rc = rcl_domain_attach(doms[d].d, &lvs[v], part);

	if (v == NLV) {
		CHECK_RC(rc, -EINVAL);	/* no evict callback */
		return;
	}
	if (part >= doms[d].nr_partitions) {
		if (lv_dom[v] >= 0)
			CHECK_RC2(rc, -EINVAL, -EBUSY);
		else
			CHECK_RC(rc, -EINVAL);
		return;
	}
	if (lv_dom[v] >= 0) {
		CHECK_RC(rc, -EBUSY);
		return;
	}
	CHECK_RC(rc, 0);
	lv_dom[v] = (int)d;
}

static void op_detach(const uint8_t *a)
{
	unsigned d = a[0] % NDOM, v = a[1] % (NLV + 1);
	int rc = rcl_domain_detach(doms[d].d, &lvs[v]);

	if (v == NLV || lv_dom[v] != (int)d) {
		CHECK_RC(rc, -ENOENT);
		return;
	}
	CHECK_RC(rc, 0);
	lv_dom[v] = -1;
}

static void op_charge(const uint8_t *a)
{
	unsigned d = a[0] % NDOM;
	uint64_t amount = a[1] % 64, ctx = (a[2] & 1) ? RCL_CTX_CAPABLE : 0;
	int rc;

	if (a[2] & 2) {
		/* would wrap the 64-bit usage, or larger than any budget */
		uint64_t u = tree_usage((int)d);

		if (u) {
			rc = rcl_domain_charge(doms[d].d, UINT64_MAX - u + 1, 0, NULL);
			CHECK_RC2(rc, -EOVERFLOW, -ENOMEM);
		} else if (!doms[d].soft) {
			rc = rcl_domain_charge(doms[d].d, UINT64_MAX, ctx, NULL);
			CHECK_RC(rc, -ENOMEM);
		}
		return;
	}
	if (amount == 0) {
		/* changes nothing; refused (strict) only above the budget */
		rc = dom_charge((int)d, 0, ctx);
		if (rc)
			CHECK(rc == -ENOMEM && !doms[d].soft &&
			      rcl_domain_usage(doms[d].d) > rcl_domain_budget(doms[d].d),
			      "zero charge: %d", rc);
		return;
	}
	begin_cb();
	rc = dom_charge((int)d, amount, ctx);
	if (rc == 0)
		doms[d].extra += amount;
	else
		CHECK_RC(rc, -ENOMEM);
	if (rc == -ENOMEM)
		CHECK(!doms[d].soft && rcl_domain_usage(doms[d].d) + amount >
					       rcl_domain_budget(doms[d].d),
		      "-ENOMEM for a charge that fits");
}

static void op_uncharge(const uint8_t *a)
{
	unsigned d = a[0] % NDOM;
	uint64_t amount = a[1] % 64;

	if (amount > doms[d].extra)
		amount = doms[d].extra;
	dom_uncharge((int)d, amount);
	doms[d].extra -= amount;
}

static void op_tune(const uint8_t *a)
{
	unsigned d = a[0] % NDOM;
	struct rcl_domain *dd = doms[d].d;
	int saved = g_pass_dom, rc;

	switch (a[1] & 3) {
	case 0: {
		uint64_t b = 4ull * a[2] + (a[3] & 3);

		g_pass_dom = (int)d;
		rc = rcl_domain_set_budget(dd, b);
		g_pass_dom = saved;
		CHECK_RC(rc, b ? 0 : -EINVAL);
		if (b)
			CHECK(rcl_domain_budget(dd) == b, "budget");
		/* A smaller budget may leave usage above it (check_tree()). */
		if (b && rcl_domain_usage(dd) > b) {
			tn[d].over_ok = true;
			tn[d].over_mark = rcl_domain_usage(dd);
		}
		break;
	}
	case 1: {
		struct rcl_watermarks wm = { a[2] % 32, a[2] % 32 + a[3] % 17,
					     a[2] % 32 + (a[3] >> 2) % 33 };
		bool ok = wm.min < wm.low && wm.low < wm.high &&
			  wm.high <= rcl_domain_budget(dd);

		rc = rcl_domain_set_watermarks(dd, (a[1] & 4) ? NULL : &wm);
		CHECK_RC(rc, (ok && !(a[1] & 4)) ? 0 : -EINVAL);
		break;
	}
	case 2:
		CHECK_RC(rcl_domain_set_swappiness(dd, a[2]), a[2] <= 200 ? 0 : -EINVAL);
		break;
	default:
		rc = rcl_domain_wakeup(dd);	/* no reclaimer: a no-op */
		CHECK_RC(rc, 0);
		g_now += (uint64_t)a[2] * RCL_NSEC_PER_MSEC;
		break;
	}
}

static void op_reclaim(const uint8_t *a)
{
	unsigned d = a[0] % NDOM;
	uint64_t nr = a[1] % 80;
	struct rcl_reclaim_result res;
	int saved = g_pass_dom, rc;

	begin_cb();
	g_pass_dom = (int)d;
	rc = rcl_domain_reclaim(doms[d].d, nr, (a[2] & 1) ? RCL_CTX_CAPABLE : a[2] & 2,
				&res);
	g_pass_dom = saved;
	CHECK_RC(rc, nr ? 0 : -EINVAL);
	if (rc)
		return;
	CHECK(res.nr_reclaimed == g_cb_freed && res.weight_reclaimed == g_cb_wfreed,
	      "reclaimed %llu, callbacks freed %u",
	      (unsigned long long)res.nr_reclaimed, g_cb_freed);
	CHECK(res.priority >= 0 && res.priority <= RCL_DEF_PRIORITY, "priority");
	/* Shrinker progress: exactly what their callbacks uncharged. */
	CHECK(res.slab_weight == g_cb_slab_w, "slab weight %llu, uncharged %llu",
	      (unsigned long long)res.slab_weight,
	      (unsigned long long)g_cb_slab_w);
	CHECK(res.slab_reclaimed <= res.slab_weight, "slab_reclaimed");
}

static void op_flush(const uint8_t *a)
{
	struct fdom *fd = &doms[a[0] % NDOM];
	int rc;

	if (a[1] & 1) {
		rc = rcl_domain_flush(fd->d, a[2] % 8);
		CHECK_RC(rc, fd->has_flusher ? 0 : -ENODEV);
		if (fd->has_flusher)
			CHECK(fd->inflight, "flush request not delivered");
		return;
	}
	if (fd->inflight && !(a[1] & 2)) {
		struct rcl_flush_request req = fd->req;

		fd->inflight = false;
		CHECK_RC(rcl_domain_flush_done(fd->d, &req), 0);
		return;
	}
	{
		struct rcl_flush_request bad = fd->req;

		bad.seq += 1 + a[2];
		CHECK_RC(rcl_domain_flush_done(fd->d, &bad), -ENOENT);
	}
}

static void op_balance(const uint8_t *a)
{
	unsigned d = a[0] % NDOM;
	int rc = rcl_domain_balance_dirty(doms[d].d,
					  (a[1] & 1) ? RCL_CTX_CAPABLE : 0);

	CHECK_RC2(rc, 0, -ETIMEDOUT);
	if (!(a[1] & 1))
		CHECK_RC(rc, 0);
}

static void op_writeback_all(const uint8_t *a)
{
	unsigned d = a[0] % NDOM;
	uint64_t written = 0;
	unsigned nwrites;
	int rc;

	g_wb_fail = a + 1;
	g_wb_idx = 0;
	g_wb_nbatch = 0;
	g_wb_synced = 0;
	begin_cb();
	rc = rcl_domain_writeback_all(doms[d].d, &fuzz_wb_ops, &g_wb_idx, &written);
	CHECK(rc == 0 || rc == -EIO, "writeback_all: %d", rc);
	/*
	 * Each write was followed by its end of writeback: success cleans the
	 * object, failure (of the write or of its batch's sync) dirties it.
	 * Replay the failure pattern the callbacks answered.
	 */
	nwrites = 0;
	for (unsigned i = 0; i < g_wb_nbatch; i++) {
		struct fobj *o = &pool[g_wb_batch[i]];

		CHECK(o->state == O_LV && o->wb, "written object vanished");
		o->wb = false;
		o->dirty = !g_wb_ok[i] || o->dirty;
		nwrites += g_wb_ok[i];
	}
	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].state == O_LV && lv_dom[pool[i].lv] == (int)d &&
		    !pool[i].iso && !pool[i].wb &&
		    (rcl_lru_node_flags(&pool[i].lru) & RCL_LRU_F_LISTED))
			CHECK(!pool[i].dirty || !(rc == 0),
			      "object %u dirty after a clean writeback_all (flags %#x, %u written)",
			      i, rcl_lru_node_flags(&pool[i].lru), g_wb_nbatch);
	CHECK(written <= g_wb_nbatch && written >= nwrites,
	      "written %llu, clean %u of %u", (unsigned long long)written,
	      nwrites, g_wb_nbatch);
	CHECK(rc == 0 || g_wb_nbatch > 0, "error without a write");
}

static void op_shr_new(const uint8_t *a)
{
	struct fshr *f = &shrs[a[0] % NSHR];
	struct rcl_shrinker_config cfg = {
		.ops = &fuzz_shr_ops,
		.priv = f,
		.name = (a[1] & 0x80) ? "fuzz-shrinker-with-a-name-longer-than-32" : NULL,
		.seeks = a[2] % 5,
		.batch = (a[2] >> 3) % 5 * 3,
		.flags = (a[1] & 0x40) ? RCL_SHRINKER_PARTITION_AWARE : 0,
	};
	unsigned r = a[1] % NREG;
	struct rcl_shrinker *s = NULL;

	if (f->s) {
		/* already allocated: register again, or bad configurations */
		CHECK_RC(rcl_shrinker_new(regs[r], NULL, &s), -EINVAL);
		cfg.seeks = -1;
		CHECK_RC(rcl_shrinker_new(regs[r], &cfg, &s), -EINVAL);
		cfg.seeks = 0;
		cfg.flags = 1u << 5;
		CHECK_RC(rcl_shrinker_new(regs[r], &cfg, &s), -EINVAL);
		CHECK(s == NULL, "out written on failure");
		if (f->registered)
			CHECK_RC(rcl_shrinker_register(f->s), -EBUSY);
		return;
	}
	CHECK_RC(rcl_shrinker_new(regs[r], &cfg, &s), 0);
	CHECK(s != NULL, "no shrinker");
	CHECK(rcl_shrinker_name(s) != NULL &&
	      strlen(rcl_shrinker_name(s)) < RCL_SHRINKER_NAME_LEN, "name");
	f->s = s;
	f->registered = false;
	f->reg = (uint8_t)r;
	f->count_mode = a[3] & 3;
	f->scan_mode = (a[3] >> 2) & 7;
	f->flags = cfg.flags;
	f->batch = cfg.batch;
	f->nr = 0;
	if (a[3] & 0x80) {
		CHECK_RC(rcl_shrinker_register(s), 0);
		f->registered = true;
	}
}

static void op_shr_register(const uint8_t *a)
{
	struct fshr *f = &shrs[a[0] % NSHR];

	if (!f->s) {
		CHECK_RC(rcl_shrinker_register(NULL), -EINVAL);
		return;
	}
	CHECK_RC(rcl_shrinker_register(f->s), f->registered ? -EBUSY : 0);
	f->registered = true;
}

static void op_shr_free(const uint8_t *a)
{
	unsigned si = a[0] % NSHR;
	struct fshr *f = &shrs[si];

	CHECK_RC(rcl_shrinker_free(f->s), 0);	/* NULL: a no-op */
	if (!f->s)
		return;
	f->s = NULL;
	f->registered = false;
	for (unsigned i = 0; i < NOBJ; i++)
		if (pool[i].state == O_SHR && pool[i].shr == si)
			obj_release(&pool[i], true);
	f->nr = 0;
	if (f->reg == NREG - 1 && (a[1] & 1)) {
		/* the standalone registry is empty only when all are freed */
		bool busy = false;

		for (unsigned s = 0; s < NSHR; s++)
			busy |= shrs[s].s && shrs[s].reg == NREG - 1;
		if (busy)
			CHECK_RC(rcl_shrinker_registry_free(regs[NREG - 1]), -EBUSY);
	}
}

static void op_shr_grow(const uint8_t *a)
{
	unsigned si = a[0] % NSHR;
	struct fshr *f = &shrs[si];
	unsigned n = 1 + a[1] % 12;
	uint64_t ctx = (a[2] & 1) ? RCL_CTX_CAPABLE : 0;
	int d = f->reg < NDOM ? f->reg : -1;

	if (!f->s)
		return;
	for (unsigned i = a[3] % NOBJ, k = 0; k < NOBJ && n; k++, i = (i + 1) % NOBJ) {
		struct fobj *o = &pool[i];

		if (o->state != O_FREE)
			continue;
		obj_take(o);
		o->weight = 1 + (a[2] >> 4);
		if (d >= 0 && dom_charge(d, o->weight, ctx) != 0)
			break;
		if (!f->s)
			break;	/* cannot happen: only harness ops free shrinkers */
		CHECK(o->state == O_FREE, "object taken during the charge");
		o->state = O_SHR;
		o->shr = (uint8_t)si;
		o->dom = (int8_t)d;
		f->nr++;
		n--;
	}
}

static void op_shr_shrink(const uint8_t *a)
{
	unsigned si = a[0] % NSHR, r = a[0] / NSHR % NREG;
	struct fshr *f = &shrs[si];
	unsigned part = a[1] % 5;
	int prio = a[2] % 14;
	uint64_t ctx = (a[3] & 3) | ((a[3] & 4) ? RCL_CTX_USER(1) : 0);
	struct rcl_shrink_result res = { 0 };
	int rc, want, saved = g_pass_dom;
	unsigned long before = 0;

	if (a[3] & 0x80) {
		/* the whole registry */
		if (r < NDOM)
			g_pass_dom = (int)r;
		rc = rcl_shrinker_registry_shrink(regs[r], part, prio, ctx, &res);
		g_pass_dom = saved;
		want = (part >= reg_parts[r] || prio > RCL_DEF_PRIORITY) ? -EINVAL : 0;
		CHECK_RC(rc, want);
		return;
	}
	if (!f->s) {
		CHECK_RC(rcl_shrinker_shrink(NULL, 0, 0, ctx, &res), -EINVAL);
		return;
	}
	for (unsigned i = 0; i < NSHR; i++)
		before += shrs[i].nr;
	rc = rcl_shrinker_shrink(f->s, part, prio, ctx, &res);
	if (part >= reg_parts[f->reg] || prio > RCL_DEF_PRIORITY)
		want = -EINVAL;
	else if (!f->registered)
		want = -ENOENT;
	else
		want = 0;
	CHECK_RC(rc, want);
	if (rc == 0) {
		unsigned long after = 0;

		for (unsigned i = 0; i < NSHR; i++)
			after += shrs[i].nr;
		CHECK(res.freed == before - after, "freed %lu, model %lu",
		      res.freed, before - after);
	}
}

static void op_shr_debug(const uint8_t *a)
{
	struct fshr *f = &shrs[a[0] % NSHR];
	unsigned part = a[1] % 5;
	unsigned long out = 0, freed = 0, scanned = 0;
	uint64_t ctx = (a[3] & 1) ? RCL_CTX_CAPABLE : 0;
	int rc, want;
	unsigned nr0;

	if (!f->s)
		return;
	want = part >= reg_parts[f->reg] ? -EINVAL : (f->registered ? 0 : -ENOENT);
	nr0 = f->nr;
	if (a[2] & 1) {
		CHECK_RC(rcl_shrinker_debug_count(f->s, part, ctx, &out), want);
		return;
	}
	g_debug_scan = true;
	rc = rcl_shrinker_debug_scan(f->s, part, 1 + a[2] % 300, ctx, &freed,
				     (a[2] & 2) ? &scanned : NULL);
	g_debug_scan = false;
	CHECK_RC(rc, want);
	if (rc == 0 && freed != RCL_SHRINK_STOP)
		CHECK(freed == nr0 - f->nr, "debug scan freed %lu, model %u",
		      freed, nr0 - f->nr);
}

/* Documented errors for invalid arguments. */
static void op_invalid(const uint8_t *a)
{
	struct rcl_lruvec *lv = &lvs[a[1] % NLV];
	struct fobj *o = &pool[a[2] % NOBJ];
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;
	struct rcl_lru_shrink_control sc = { 0 };
	struct rcl_lruvec_type_stats ts;
	struct rcl_lru_isolated iso;
	uint64_t w = 7;
	unsigned outcome = 0;

	rcl_lru_isolated_init(&iso);
	switch (a[0] % 24) {
	case 0:
		CHECK_RC(rcl_lruvec_add(NULL, &idle, 0, 1, 0), -EINVAL);
		break;
	case 1:
		CHECK_RC(rcl_lruvec_add(lv, NULL, 0, 1, 0), -EINVAL);
		break;
	case 2:
		CHECK_RC(rcl_lruvec_del(NULL, &idle), -EINVAL);
		CHECK_RC(rcl_lruvec_del(lv, NULL), -EINVAL);
		CHECK_RC(rcl_lruvec_del(lv, &idle), -ENOENT);
		break;
	case 3:
		CHECK_RC(rcl_lruvec_mark_accessed(NULL, &idle), -EINVAL);
		CHECK_RC(rcl_lruvec_mark_accessed(lv, &idle), -ENOENT);
		break;
	case 4:
		CHECK(rcl_lruvec_count(NULL, 0, &w) == 0 && w == 0, "count NULL");
		w = 7;
		CHECK(rcl_lruvec_count(lv, RCL_LRU_NR_LISTS + a[3], &w) == 0 && w == 0,
		      "count out of range");
		CHECK(rcl_lruvec_nr_isolated(NULL) == 0, "nr_isolated NULL");
		break;
	case 5:
		CHECK_RC(rcl_lruvec_stats(lv, RCL_LRU_MAX_TYPES + a[3], &ts), -EINVAL);
		CHECK_RC(rcl_lruvec_stats(NULL, 0, &ts), -EINVAL);
		CHECK_RC(rcl_lruvec_stats(lv, 0, NULL), -EINVAL);
		break;
	case 6:
		CHECK_RC(rcl_lruvec_isolate(NULL, 0, 1, &iso), -EINVAL);
		CHECK_RC(rcl_lruvec_isolate(lv, RCL_LRU_UNEVICTABLE, 1, &iso), -EINVAL);
		CHECK_RC(rcl_lruvec_isolate(lv, 0, 1, NULL), -EINVAL);
		break;
	case 7:
		CHECK_RC(rcl_lruvec_putback(NULL, &iso), -EINVAL);
		CHECK_RC(rcl_lruvec_putback(lv, NULL), -EINVAL);
		CHECK_RC(rcl_lruvec_putback(lv, &iso), 0);	/* empty */
		break;
	case 8:
		CHECK_RC(rcl_lruvec_shrink_inactive(NULL, &sc), -EINVAL);
		CHECK_RC(rcl_lruvec_shrink_inactive(lv, NULL), -EINVAL);
		CHECK_RC(rcl_lruvec_shrink_active(NULL, &sc), -EINVAL);
		break;
	case 9:
		CHECK_RC(rcl_lruvec_set_dirty(NULL, &idle), -EINVAL);
		CHECK_RC(rcl_lruvec_set_dirty(lv, NULL), -EINVAL);
		CHECK_RC(rcl_lruvec_writeback_start(lv, NULL), -EINVAL);
		CHECK_RC(rcl_lruvec_writeback_end(NULL, &idle, 0), -EINVAL);
		break;
	case 10:
		CHECK_RC(rcl_lruvec_dirty_stats(NULL, NULL), -EINVAL);
		CHECK_RC(rcl_domain_dirty_stats(NULL, NULL), -EINVAL);
		CHECK_RC(rcl_lruvec_workingset_stats(NULL, NULL), -EINVAL);
		break;
	case 11:
		CHECK_RC(rcl_domain_charge(NULL, 1, 0, NULL), -EINVAL);
		CHECK_RC(rcl_domain_uncharge(NULL, 1), -EINVAL);
		CHECK(rcl_domain_usage(NULL) == 0 && rcl_domain_budget(NULL) == 0,
		      "NULL domain");
		break;
	case 12:
		CHECK_RC(rcl_domain_set_budget(NULL, 1), -EINVAL);
		CHECK_RC(rcl_domain_set_budget(doms[0].d, 0), -EINVAL);
		CHECK_RC(rcl_domain_set_swappiness(doms[0].d, 201 + a[3]), -EINVAL);
		break;
	case 13:
		CHECK_RC(rcl_domain_reclaim(NULL, 1, 0, NULL), -EINVAL);
		CHECK_RC(rcl_domain_reclaim(doms[0].d, 0, 0, NULL), -EINVAL);
		break;
	case 14:
		CHECK_RC(rcl_domain_attach(NULL, lv, 0), -EINVAL);
		CHECK_RC(rcl_domain_attach(doms[1].d, NULL, 0), -EINVAL);
		CHECK_RC(rcl_domain_detach(NULL, lv), -EINVAL);
		CHECK_RC(rcl_domain_detach(doms[0].d, NULL), -EINVAL);
		break;
	case 15:
		CHECK_RC(rcl_domain_flush(NULL, 0), -EINVAL);
		CHECK_RC(rcl_domain_flush_done(NULL, NULL), -EINVAL);
		CHECK_RC(rcl_domain_balance_dirty(NULL, 0), -EINVAL);
		break;
	case 16:
		CHECK_RC(rcl_domain_writeback_all(NULL, &fuzz_wb_ops, NULL, NULL), -EINVAL);
		CHECK_RC(rcl_domain_writeback_all(doms[0].d, NULL, NULL, NULL), -EINVAL);
		break;
	case 17:
		CHECK_RC(rcl_shrinker_registry_shrink(NULL, 0, 0, 0, NULL), -EINVAL);
		CHECK_RC(rcl_shrinker_registry_shrink(regs[NREG - 1], 0, -1, 0, NULL),
			 -EINVAL);
		CHECK_RC(rcl_shrinker_register(NULL), -EINVAL);
		CHECK_RC(rcl_shrinker_free(NULL), 0);
		break;
	case 18:
		CHECK_RC(rcl_lruvec_add_refault(NULL, &idle, 0, 1, 0, 0, &outcome),
			 -EINVAL);
		CHECK_RC(rcl_lruvec_add_refault(lv, NULL, 0, 1, 0, 0, &outcome),
			 -EINVAL);
		break;
	case 19:
		/* double add of a node that is on an lruvec: any lruvec */
		if (o->state == O_LV)
			CHECK_RC(rcl_lruvec_add(lv, &o->lru, 0, 1, 0), -EBUSY);
		break;
	case 20:
		/* wrong lruvec for a node */
		if (o->state == O_LV) {
			struct rcl_lruvec *w2 = &lvs[(o->lv + 1 + a[3] % NLV) % (NLV + 1)];

			if (w2 != &lvs[o->lv]) {
				CHECK_RC(rcl_lruvec_del(w2, &o->lru), -ENOENT);
				CHECK_RC(rcl_lruvec_mark_accessed(w2, &o->lru), -ENOENT);
				CHECK_RC(rcl_lruvec_rotate(w2, &o->lru), -ENOENT);
				CHECK_RC(rcl_lruvec_set_dirty(w2, &o->lru), -ENOENT);
			}
		}
		break;
	case 21:
		CHECK_RC(rcl_domain_set_watermarks(doms[0].d, NULL), -EINVAL);
		CHECK_RC(rcl_domain_watermarks(NULL, NULL), -EINVAL);
		CHECK_RC(rcl_domain_vmstat(NULL, NULL), -EINVAL);
		CHECK_RC(rcl_domain_vmstat_format(NULL, NULL, 0), -EINVAL);
		CHECK_RC(rcl_domain_vmstat_format(doms[0].d, NULL, 5), -EINVAL);
		break;
	case 22:
		CHECK_RC(rcl_lruvec_destroy(NULL), 0);
		/* not empty: refused, intact */
		for (unsigned v = 0; v < NLV; v++) {
			bool busy = false;

			for (unsigned i = 0; i < NOBJ; i++)
				busy |= pool[i].state == O_LV && pool[i].lv == v;
			if (busy) {
				g_no_evict = true;
				CHECK_RC(rcl_lruvec_destroy(&lvs[v]), -EBUSY);
				g_no_evict = false;
			}
		}
		break;
	default: {
		/* a domain with lruvecs or shrinkers is not freed */
		unsigned d = a[3] % NDOM;
		bool busy = false;

		for (unsigned v = 0; v < NLV; v++)
			busy |= lv_dom[v] == (int)d;
		for (unsigned s = 0; s < NSHR; s++)
			busy |= shrs[s].s && shrs[s].reg == d;
		if (busy)
			CHECK_RC(rcl_domain_free(doms[d].d), -EBUSY);
		break;
	}
	}
}

static size_t min_sz(size_t x, size_t y)
{
	return x < y ? x : y;
}

static void op_query(const uint8_t *a)
{
	unsigned v = a[0] % NLV;
	struct rcl_lruvec *lv = &lvs[v];
	char buf[64];
	uint64_t targets[RCL_LRU_NR_LISTS];
	struct rcl_vmstat vm;
	int n;

	switch (a[1] % 7) {
	case 6: {
		/* one scan-controller pass over one lruvec, outside any domain */
		struct rcl_scan_control sc = {
			.nr_to_reclaim = a[2] % 64,
			.priority = a[3] % 14,
			.swappiness = (unsigned)(a[2] >> 6) * 70,
			.context = (a[3] & 0x80) ? RCL_CTX_CAPABLE : 0,
		};
		int rc;

		begin_cb();
		rc = rcl_scan_lruvec(lv, &sc);
		CHECK_RC(rc, (sc.priority <= 12 && sc.swappiness <= 200) ? 0 : -EINVAL);
		if (rc == 0)
			CHECK(sc.nr_reclaimed == g_cb_freed &&
			      sc.weight_reclaimed == g_cb_wfreed &&
			      sc.nr_reclaimed <= sc.nr_scanned,
			      "scan_lruvec reclaimed %llu, callbacks freed %u",
			      (unsigned long long)sc.nr_reclaimed, g_cb_freed);
		break;
	}
	case 0:
		for (unsigned t = 0; t < nr_types(v); t++) {
			struct rcl_lruvec_type_stats ts;

			CHECK_RC(rcl_lruvec_stats(lv, t, &ts), 0);
			CHECK(ts.freed <= ts.scanned, "freed %llu > scanned %llu",
			      (unsigned long long)ts.freed,
			      (unsigned long long)ts.scanned);
			CHECK(rcl_lruvec_inactive_ratio(lv, t) >= 1, "ratio");
			(void)rcl_lruvec_inactive_is_low(lv, t);
			(void)rcl_lruvec_inactive_target(lv, t);
			CHECK(rcl_lruvec_type_cost(lv, t) >= 1, "cost");
			CHECK(rcl_lruvec_type_name(lv, t) != NULL, "name");
		}
		CHECK(rcl_lruvec_type_name(lv, nr_types(v)) == NULL, "name out of range");
		break;
	case 1:
		n = rcl_domain_vmstat_format(doms[a[2] % NDOM].d, buf, a[3] % sizeof(buf));
		CHECK(n > 0, "vmstat_format %d", n);
		if (a[3] % sizeof(buf))
			CHECK(strlen(buf) == min_sz((size_t)n, a[3] % sizeof(buf) - 1),
			      "vmstat_format truncation");
		break;
	case 2:
		CHECK_RC(rcl_domain_vmstat(doms[a[2] % NDOM].d, &vm), 0);
		break;
	case 3:
		CHECK_RC(rcl_scan_targets(lv, a[2] % 14, a[3], targets),
			 (a[2] % 14 <= 12 && a[3] <= 200) ? 0 : -EINVAL);
		break;
	case 4:
		CHECK_RC(rcl_lruvec_note_cost(lv, a[2] % 5, a[3]),
			 a[2] % 5 < nr_types(v) ? 0 : -EINVAL);
		break;
	default:
		for (unsigned s = 0; s < NSHR; s++) {
			struct rcl_shrinker_stats st;
			unsigned long bl;

			if (!shrs[s].s)
				continue;
			CHECK_RC(rcl_shrinker_stats(shrs[s].s, &st), 0);
			CHECK(st.stops <= st.calls, "stops %llu > calls %llu",
			      (unsigned long long)st.stops,
			      (unsigned long long)st.calls);
			CHECK_RC(rcl_shrinker_backlog(shrs[s].s, a[2] % 5, &bl),
				 a[2] % 5 < ((shrs[s].flags & RCL_SHRINKER_PARTITION_AWARE)
						     ? reg_parts[shrs[s].reg] : 1)
					 ? 0 : -EINVAL);
		}
		break;
	}
}

/* ------------------------------------------------------------------------- */
/* Tree operations (tree mode only)                                           */
/* ------------------------------------------------------------------------- */

enum {
	TOP_NEW, TOP_CHARGE, TOP_UNCHARGE, TOP_SET_LIMITS, TOP_SET_BUDGET,
	TOP_FREE, TOP_RECLAIM, TOP_INVALID,
	NR_TREE_OPS
};

/* The live child a[0] names, or -1. */
static int tree_kid(uint8_t a0)
{
	int n = NDOM + a0 % NKID;

	return tn[n].live ? n : -1;
}

/* The live tree node (root or child) @b names: a child if live, else a root. */
static int tree_node(uint8_t b)
{
	int n = b % NTN;

	return tn[n].live ? n : b % NDOM;
}

/*
 * Create child a0 % NKID under tree node a1 & 15 (a root if that one is
 * not live).  a0 >> 3 & 7: 0-2 a valid configuration, 3-7 one refusal
 * (charge_stock, RCL_DOMAIN_RECURSIVE_PROT, another partition count,
 * another clock, an unknown flag); a0 & 0x40 names the partition count,
 * a0 & 0x80 the clock (the parent's).  a2: budget 4 + 4 * (a2 & 0x7f), or
 * none if a2 & 0x80.  a3: bit 0 soft; bit 1 limit_high 8 * (1 + a1 >> 4);
 * protect_min 4 * (a3 >> 2 & 7), protect_low 8 * (a3 >> 5).  On a used
 * slot, or one level too deep, the call must be refused.
 */
static void top_new(const uint8_t *a)
{
	int n = NDOM + a[0] % NKID, p = tree_node(a[1] & 15);
	unsigned bad = (a[0] >> 3) & 7;
	struct rcl_domain_config cfg = {
		.budget = (a[2] & 0x80) ? 0 : 4 + 4ull * (a[2] & 0x7f),
		.mode = (a[3] & 1) ? RCL_CHARGE_SOFT : RCL_CHARGE_STRICT,
		.parent = tn[p].d,
		.limit_high = (a[3] & 2) ? 8ull * (1 + (a[1] >> 4)) : 0,
		.protect_min = 4ull * ((a[3] >> 2) & 7),
		.protect_low = 8ull * (a[3] >> 5),
		.nr_partitions = (a[0] & 0x40) ? doms[tree_root(p)].nr_partitions : 0,
		.clock = (a[0] & 0x80) ? &fuzz_clock : NULL,
	};
	struct rcl_domain *out = (struct rcl_domain *)&cfg;
	bool ok;
	int rc;

	if (tn[n].live && bad < 3)
		bad = 3 + a[0] % 5;	/* a used slot: a refusal only */
	switch (bad) {
	case 3:
		cfg.charge_stock = 1 + a[2];
		break;
	case 4:
		cfg.flags = RCL_DOMAIN_RECURSIVE_PROT;
		break;
	case 5:
		cfg.nr_partitions = doms[tree_root(p)].nr_partitions + 1;
		break;
	case 6:
		cfg.clock = rcl_clock_monotonic();
		break;
	case 7:
		cfg.flags = 1u << 3;
		break;
	default:
		break;
	}
	ok = bad < 3 && tn[p].depth < RCL_DOMAIN_MAX_DEPTH;
	rc = rcl_domain_new(&cfg, &out);
	CHECK_RC(rc, ok ? 0 : -EINVAL);
	if (!ok) {
		CHECK(out == (struct rcl_domain *)&cfg, "out written on failure");
		return;
	}
	memset(&tn[n], 0, sizeof(tn[n]));
	tn[n].d = out;
	tn[n].parent = p;
	tn[n].live = true;
	tn[n].soft = cfg.mode == RCL_CHARGE_SOFT;
	tn[n].depth = tn[p].depth + 1;
	tn[n].budget = cfg.budget ? cfg.budget : UINT64_MAX;
	tn[n].lim.limit_high = cfg.limit_high ? cfg.limit_high : UINT64_MAX;
	tn[n].lim.protect_low = cfg.protect_low;
	tn[n].lim.protect_min = cfg.protect_min;
	CHECK(rcl_domain_usage(out) == 0, "a new child has usage");
}

/*
 * Charge a1 % 64 through child a0 (capable if a2 & 1).  Child levels hold
 * no lruvec, so their usage moves only by the charge: a success leaves
 * every strict level within its budget and counts one high event at each
 * child level it leaves above its limit_high; a refusal (-ENOMEM, *over 0)
 * charges no level and is made by a strict level that has no room.
 */
static void top_charge(const uint8_t *a)
{
	int n = tree_kid(a[0]), path[RCL_DOMAIN_MAX_DEPTH], np = 0, saved;
	uint64_t amount = a[1] % 64, ctx = (a[2] & 1) ? RCL_CTX_CAPABLE : 0;
	uint64_t over = 77, high0[RCL_DOMAIN_MAX_DEPTH];
	int rc;

	if (n < 0)
		return;
	for (int c = n; c >= 0; c = tn[c].parent) {
		struct rcl_domain_events ev;

		CHECK_RC(rcl_domain_events(tn[c].d, false, &ev), 0);
		high0[np] = ev.high;
		path[np++] = c;
	}
	begin_cb();
	saved = g_pass_dom;
	g_pass_dom = tree_root(n);	/* a reclaim may run over its tree */
	rc = rcl_domain_charge(tn[n].d, amount, ctx, &over);
	g_pass_dom = saved;
	if (rc == 0) {
		tn[n].own += amount;
	} else {
		bool full = false;

		CHECK_RC(rc, -ENOMEM);
		CHECK(over == 0, "overshoot %llu on failure", (unsigned long long)over);
		for (int i = 0; i < np; i++) {
			struct ftree *f = &tn[path[i]];

			full |= !f->soft && rcl_domain_usage(f->d) + amount >
						   rcl_domain_budget(f->d);
		}
		CHECK(full, "-ENOMEM for a charge that fits every strict level");
	}
	for (int i = 0; i < np; i++) {
		struct ftree *f = &tn[path[i]];
		struct rcl_domain_events ev;
		uint64_t u = rcl_domain_usage(f->d);

		if (rc == 0 && !f->soft)
			CHECK(u <= rcl_domain_budget(f->d) || f->over_ok,
			      "tree node %d: charged to %llu, above its budget %llu",
			      path[i], (unsigned long long)u,
			      (unsigned long long)rcl_domain_budget(f->d));
		if (path[i] < NDOM)
			continue;
		CHECK_RC(rcl_domain_events(f->d, false, &ev), 0);
		CHECK(ev.high == high0[i] + (rc == 0 && u > f->lim.limit_high),
		      "tree node %d: high events %llu -> %llu (usage %llu, "
		      "limit_high %llu)", path[i], (unsigned long long)high0[i],
		      (unsigned long long)ev.high, (unsigned long long)u,
		      (unsigned long long)f->lim.limit_high);
	}
}

/* Uncharge through child a0 at most what it holds (a1 % 64). */
static void top_uncharge(const uint8_t *a)
{
	int n = tree_kid(a[0]);
	uint64_t amount = a[1] % 64;

	if (n < 0)
		return;
	if (amount > tn[n].own)
		amount = tn[n].own;
	CHECK_RC(rcl_domain_uncharge(tn[n].d, amount), 0);
	tn[n].own -= amount;
}

/*
 * Set the limits of tree node a0 (a root too): limit_high 2 * a1 (0 =
 * none), protect_low 2 * (a2 & 0x7f), protect_min a3 & 0x7f (bit 7 of a2,
 * a3: 0).  A root refuses protection (-EINVAL, nothing changed).  A child
 * left above its new limit_high cannot be reclaimed: one high event.
 */
static void top_set_limits(const uint8_t *a)
{
	int n = tree_node(a[0]), saved;
	struct rcl_domain_limits lim = {
		.limit_high = 2ull * a[1],
		.protect_low = (a[2] & 0x80) ? 0 : 2ull * (a[2] & 0x7f),
		.protect_min = (a[3] & 0x80) ? 0 : a[3] & 0x7f,
	};
	struct rcl_domain_events e0, e1;
	bool refused = n < NDOM && (lim.protect_low || lim.protect_min);
	uint64_t u = tree_usage(n);
	int rc;

	CHECK_RC(rcl_domain_events(tn[n].d, false, &e0), 0);
	begin_cb();
	saved = g_pass_dom;
	g_pass_dom = tree_root(n);
	rc = rcl_domain_set_limits(tn[n].d, &lim);
	g_pass_dom = saved;
	CHECK_RC(rc, refused ? -EINVAL : 0);
	CHECK_RC(rcl_domain_events(tn[n].d, false, &e1), 0);
	if (refused) {
		CHECK(memcmp(&e0, &e1, sizeof(e0)) == 0, "a refused set_limits counted");
		if (n >= NDOM)
			return;
		/* a root's limits: as before (check_tree() has children's) */
		{
			struct rcl_domain_limits got;

			CHECK_RC(rcl_domain_limits(tn[n].d, &got), 0);
			CHECK(memcmp(&got, &tn[n].lim, sizeof(got)) == 0,
			      "a refused set_limits changed the root's limits");
		}
		return;
	}
	tn[n].lim = lim;
	if (!lim.limit_high)
		tn[n].lim.limit_high = UINT64_MAX;
	if (n >= NDOM)
		CHECK(e1.high == e0.high + (lim.limit_high && u > lim.limit_high),
		      "tree node %d: set_limits %llu under usage %llu: high "
		      "events %llu -> %llu", n, (unsigned long long)lim.limit_high,
		      (unsigned long long)u, (unsigned long long)e0.high,
		      (unsigned long long)e1.high);
}

/* A child's budget: 4 * a1 + (a2 & 3); 0 is -EINVAL. */
static void top_set_budget(const uint8_t *a)
{
	int n = tree_kid(a[0]), saved, rc;
	uint64_t b = 4ull * a[1] + (a[2] & 3);

	if (n < 0)
		return;
	begin_cb();
	saved = g_pass_dom;
	g_pass_dom = tree_root(n);
	rc = rcl_domain_set_budget(tn[n].d, b);
	g_pass_dom = saved;
	CHECK_RC(rc, b ? 0 : -EINVAL);
	if (!b)
		return;
	tn[n].budget = b;
	if (tree_usage(n) > b) {
		tn[n].over_ok = true;
		tn[n].over_mark = tree_usage(n);
	}
}

/*
 * Free child a0: -EBUSY (nothing changed) while it has children; else its
 * charges are uncharged and it is freed.  A root with children: -EBUSY.
 */
static void top_free(const uint8_t *a)
{
	int n = tree_kid(a[0]);

	if (n < 0) {
		int r = a[0] % NDOM;

		if (tree_has_kids(r))
			CHECK_RC(rcl_domain_free(tn[r].d), -EBUSY);
		return;
	}
	if (tree_has_kids(n)) {
		CHECK_RC(rcl_domain_free(tn[n].d), -EBUSY);
		return;
	}
	if (tn[n].parent >= NDOM)
		CHECK_RC(rcl_domain_free(tn[tn[n].parent].d), -EBUSY);
	tree_free(n);
}

/*
 * Reclaim child a0's subtree (a1 % 80 objects, capable if a2 & 1): it
 * holds no lruvec and no shrinker, so nothing is scanned and no evict
 * callback runs (the root's lruvecs are not in a child's subtree).
 */
static void top_reclaim(const uint8_t *a)
{
	int n = tree_kid(a[0]), rc;
	uint64_t nr = a[1] % 80;
	struct rcl_reclaim_result res;

	if (n < 0)
		return;
	g_no_evict = true;
	rc = rcl_domain_reclaim(tn[n].d, nr, (a[2] & 1) ? RCL_CTX_CAPABLE : 0, &res);
	g_no_evict = false;
	CHECK_RC(rc, nr ? 0 : -EINVAL);
	if (rc == 0)
		CHECK(res.nr_reclaimed == 0 && res.nr_scanned == 0 &&
		      res.slab_freed == 0, "a child's reclaim freed %llu",
		      (unsigned long long)res.nr_reclaimed);
}

/* FUZZ_TRACE: every live tree node after a tree operation. */
static void tree_trace(void)
{
	for (int n = 0; n < NTN; n++) {
		struct rcl_domain_events ev;

		if (!tn[n].live || (n < NDOM && !tree_has_kids(n)))
			continue;
		(void)rcl_domain_events(tn[n].d, false, &ev);
		fprintf(stderr, "  node %d (parent %d, depth %u%s): usage %llu budget "
			"%llu high %llu prot %llu/%llu; events low %llu high %llu "
			"max %llu oom %llu\n", n, tn[n].parent, tn[n].depth,
			tn[n].soft ? ", soft" : "",
			(unsigned long long)rcl_domain_usage(tn[n].d),
			(unsigned long long)rcl_domain_budget(tn[n].d),
			(unsigned long long)tn[n].lim.limit_high,
			(unsigned long long)tn[n].lim.protect_min,
			(unsigned long long)tn[n].lim.protect_low,
			(unsigned long long)ev.low, (unsigned long long)ev.high,
			(unsigned long long)ev.max, (unsigned long long)ev.oom);
	}
}

/* Documented refusals of the tree API, group a0 % 6; nothing changes. */
static void top_invalid(const uint8_t *a)
{
	int n = tree_node(a[1]), m = tree_node(a[2]);
	struct rcl_domain_limits lim = { 0 };
	struct rcl_domain_events ev = { 1, 2, 3, 4 };
	struct rcl_vmstat vm;
	struct rcl_watermarks wm = { 1, 2, 3 };
	uint64_t emin = 5, elow = 6;

	switch (a[0] % 6) {
	case 0:
		CHECK_RC(rcl_domain_set_limits(NULL, &lim), -EINVAL);
		CHECK_RC(rcl_domain_set_limits(tn[n].d, NULL), -EINVAL);
		CHECK_RC(rcl_domain_limits(NULL, &lim), -EINVAL);
		CHECK_RC(rcl_domain_limits(tn[n].d, NULL), -EINVAL);
		CHECK_RC(rcl_domain_events(NULL, a[3] & 1, &ev), -EINVAL);
		CHECK_RC(rcl_domain_events(tn[n].d, a[3] & 1, NULL), -EINVAL);
		CHECK(ev.low == 1 && ev.oom == 4, "events written on failure");
		CHECK_RC(rcl_domain_vmstat_subtree(NULL, &vm), -EINVAL);
		CHECK_RC(rcl_domain_vmstat_subtree(tn[n].d, NULL), -EINVAL);
		CHECK(rcl_domain_parent(NULL) == NULL, "parent of NULL");
		break;
	case 1: {
		/* a target that is not @m nor one of its ancestors */
		int t = m;

		while (t >= 0 && t != n)
			t = tn[t].parent;
		CHECK_RC(rcl_domain_effective_protection(NULL, tn[m].d, &emin, &elow),
			 -EINVAL);
		CHECK_RC(rcl_domain_effective_protection(tn[n].d, NULL, &emin, &elow),
			 -EINVAL);
		CHECK_RC(rcl_domain_effective_protection(tn[n].d, tn[m].d, NULL, NULL),
			 t == n ? 0 : -EINVAL);
		CHECK_RC(rcl_domain_effective_protection(tn[n].d, tn[m].d, &emin, &elow),
			 t == n ? 0 : -EINVAL);
		if (t != n)
			CHECK(emin == 5 && elow == 6, "protection written on failure");
		break;
	}
	case 2:
		/* what only a root has */
		if (n >= NDOM) {
			struct rcl_watermarks w0, w1;
			int r0 = rcl_domain_watermarks(tn[n].d, &w0);

			CHECK_RC(rcl_domain_reclaimer_start(tn[n].d), -EINVAL);
			CHECK_RC(rcl_domain_set_watermarks(tn[n].d, &wm), -EINVAL);
			CHECK(rcl_domain_watermarks(tn[n].d, &w1) == r0 &&
			      (r0 || memcmp(&w0, &w1, sizeof(w0)) == 0),
			      "a refused set_watermarks changed a child's");
		}
		break;
	case 3:
		/* a root with children is not freed */
		if (tree_has_kids(a[1] % NDOM))
			CHECK_RC(rcl_domain_free(tn[a[1] % NDOM].d), -EBUSY);
		break;
	case 4: {
		/* a root is never protected, at creation either */
		struct rcl_domain_config cfg = { .budget = 10, .clock = &fuzz_clock };
		struct rcl_domain *out = (struct rcl_domain *)&cfg;

		if (a[3] & 1)
			cfg.protect_low = 1 + a[3];
		else
			cfg.protect_min = 1 + a[3];
		CHECK_RC(rcl_domain_new(&cfg, &out), -EINVAL);
		CHECK(out == (struct rcl_domain *)&cfg, "out written on failure");
		break;
	}
	default: {
		/* every refusal of a child's configuration, for node @n */
		struct rcl_domain_config cfg = { .budget = 10, .parent = tn[n].d };
		struct rcl_domain *out = (struct rcl_domain *)&cfg;

		cfg.charge_stock = 1;
		CHECK_RC(rcl_domain_new(&cfg, &out), -EINVAL);
		cfg.charge_stock = 0;
		cfg.flags = RCL_DOMAIN_RECURSIVE_PROT;
		CHECK_RC(rcl_domain_new(&cfg, &out), -EINVAL);
		cfg.flags = 0;
		cfg.nr_partitions = doms[tree_root(n)].nr_partitions % 2 + 1;
		CHECK_RC(rcl_domain_new(&cfg, &out), -EINVAL);
		cfg.nr_partitions = 0;
		cfg.clock = rcl_clock_monotonic();
		CHECK_RC(rcl_domain_new(&cfg, &out), -EINVAL);
		CHECK(out == (struct rcl_domain *)&cfg, "out written on failure");
		break;
	}
	}
}

/* ------------------------------------------------------------------------- */
/* Entry point                                                                */
/* ------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, size, 0 };
	uint8_t tree_hdr = 0;

	g_step = 0;
	g_op = 0;
	g_tree = size >= sizeof(TREE_MAGIC) &&
		 memcmp(data, TREE_MAGIC, sizeof(TREE_MAGIC)) == 0;
	if (g_tree) {
		r.i = sizeof(TREE_MAGIC);
		tree_hdr = rd8(&r);
	}
	if (g_trace < 0) {
		const char *e = getenv("FUZZ_TRACE");

		g_trace = e && *e && *e != '0';
	}
	setup(&r, tree_hdr);
	check_invariants();
	while (r.i < r.n && g_step < MAX_STEPS) {
		uint8_t a[4], b = rd8(&r);

		/* tree mode: bit 5 of the opcode byte, a tree operation */
		g_op = g_tree && (b & 0x20) ? NR_OPS + (b & 31) % NR_TREE_OPS
					    : b % NR_OPS;
		rcl_clear_refusal();
		for (unsigned i = 0; i < 4; i++)
			a[i] = rd8(&r);
		if (g_trace)
			fprintf(stderr, "step %u: op %u %02x %02x %02x %02x\n",
				g_step, g_op, a[0], a[1], a[2], a[3]);
		switch (g_op) {
		case OP_ADD: op_add(a, false); break;
		case OP_ADD_REFAULT: op_add(a, true); break;
		case OP_DEL: op_del(a); break;
		case OP_ACCESS: op_access(a); break;
		case OP_MOVE: op_move(a); break;
		case OP_SET_DIRTY: op_set_dirty(a); break;
		case OP_WB_START: op_wb_start(a); break;
		case OP_WB_END: op_wb_end(a); break;
		case OP_ISOLATE: op_isolate(a); break;
		case OP_PUTBACK: op_putback(a); break;
		case OP_ISO_EDIT: op_iso_edit(a); break;
		case OP_SHRINK_INACTIVE: op_shrink_inactive(a); break;
		case OP_SHRINK_ACTIVE: op_shrink_active(a); break;
		case OP_DRAIN: op_drain(a); break;
		case OP_SET_MODE: op_set_mode(a); break;
		case OP_ATTACH: op_attach(a); break;
		case OP_DETACH: op_detach(a); break;
		case OP_CHARGE: op_charge(a); break;
		case OP_UNCHARGE: op_uncharge(a); break;
		case OP_TUNE: op_tune(a); break;
		case OP_RECLAIM: op_reclaim(a); break;
		case OP_FLUSH: op_flush(a); break;
		case OP_BALANCE: op_balance(a); break;
		case OP_WRITEBACK_ALL: op_writeback_all(a); break;
		case OP_SHR_NEW: op_shr_new(a); break;
		case OP_SHR_REGISTER: op_shr_register(a); break;
		case OP_SHR_FREE: op_shr_free(a); break;
		case OP_SHR_GROW: op_shr_grow(a); break;
		case OP_SHR_SHRINK: op_shr_shrink(a); break;
		case OP_SHR_DEBUG: op_shr_debug(a); break;
		case OP_INVALID: op_invalid(a); break;
		case OP_QUERY: op_query(a); break;
		case NR_OPS + TOP_NEW: top_new(a); break;
		case NR_OPS + TOP_CHARGE: top_charge(a); break;
		case NR_OPS + TOP_UNCHARGE: top_uncharge(a); break;
		case NR_OPS + TOP_SET_LIMITS: top_set_limits(a); break;
		case NR_OPS + TOP_SET_BUDGET: top_set_budget(a); break;
		case NR_OPS + TOP_FREE: top_free(a); break;
		case NR_OPS + TOP_RECLAIM: top_reclaim(a); break;
		default: top_invalid(a); break;
		}
		if (g_trace && g_op >= NR_OPS)
			tree_trace();
		check_invariants();
		g_step++;
	}
	g_op = NR_OPS + NR_TREE_OPS;	/* tear-down */
	teardown();
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Stand-alone replay driver (no libFuzzer)                                   */
/* ------------------------------------------------------------------------- */

#include "replay.h"
