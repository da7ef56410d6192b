/* SPDX-License-Identifier: MIT */
/*
 * How `seeks` balances a shrinker's cache against lruvec caches in one
 * memory domain.
 *
 * Two caches of the same shape share one strict domain: cache L keeps its
 * objects on an lruvec (the library's two lists, second-chance promotion),
 * cache S keeps its own LRU list behind a shrinker.  Both see the same
 * request stream shape: Zipf-distributed keys (alpha 0.8) over a key space
 * whose objects would fill the budget twice, every miss charged and
 * inserted, objects of one size.  So an even split of the budget is what
 * a fair policy gives.  Reclaim is direct only (no background thread) and
 * the program is single-threaded, so every figure is exactly reproducible.
 *
 * For each `seeks` value it prints the share of the budget that S holds
 * after a warm-up, and each cache's hit ratio.  Why the share moves:
 *
 *  - at priority p, an lruvec's inactive list is scanned size >> p objects
 *    per pass, and a scanned object that was referenced since it was last
 *    looked at survives (it is activated or rotated): scanning is not
 *    freeing;
 *  - a shrinker is asked to scan ((freeable >> p) * 4) / seeks objects at the
 *    same priority (seeks 0: freeable / 2), and what this shrinker scans it
 *    frees, oldest first.
 *
 * So at seeks 2 a shrinker is scanned at twice the rate of one LRU list and
 * frees everything it scans: its cache ends smaller than an lruvec cache of
 * the same value.  Raise seeks to give it a larger share.  Here (its table
 * is quoted in docs/getting-started.md) an even split takes seeks 8: the
 * lruvec's active list shields L's hot objects from its scans, and the
 * shrinker's own list has no such second chance.
 *
 * usage: seeks [--check]
 *   --check   also assert that the shrinker's share grows with seeks
 *             (the test in suite 'examples')
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reclaim/reclaim.h>

#define BUDGET		(4u << 20)	/* bytes */
#define OBJ_SIZE	256u		/* bytes, the weight of every object */
#define NKEYS		(2 * BUDGET / OBJ_SIZE)	/* per cache: twice the budget */
#define ZIPF_ALPHA	0.8
#define WARMUP		400000u		/* requests per cache before measuring */
#define MEASURE		400000u		/* requests per cache measured */

struct obj {
	struct rcl_lru_node lru;	/* cache L: on the lruvec */
	struct obj *prev, *next;	/* cache S: its own LRU list */
	uint32_t key;
};

struct cache {
	struct obj **index;		/* key -> object, NULL if not cached */
	uint64_t objects, hits, misses;
	/* cache S: head = most recently used, tail = oldest */
	struct obj *head, *tail;
};

static struct rcl_domain *dom;
static struct rcl_lruvec lv;
static struct cache cl, cs;
static double *zipf_cdf;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)	/* splitmix64 */
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t zipf_key(void)
{
	double u = (double)(next_rand() >> 11) / (double)(1ull << 53);
	uint32_t lo = 0, hi = NKEYS - 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (zipf_cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void obj_free(struct cache *c, struct obj *o)
{
	c->index[o->key] = NULL;
	c->objects--;
	rcl_domain_uncharge(dom, OBJ_SIZE);
	free(o);
}

/* Cache L's evict callback: nothing is ever pinned here. */
static enum rcl_evict_status l_evict(struct rcl_lru_node *n,
				     struct rcl_evict_control *ctl)
{
	(void)ctl;
	obj_free(&cl, rcl_container_of(n, struct obj, lru));
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops l_ops = { .evict = l_evict };

static void s_unlink(struct obj *o)
{
	if (o->prev)
		o->prev->next = o->next;
	else
		cs.head = o->next;
	if (o->next)
		o->next->prev = o->prev;
	else
		cs.tail = o->prev;
}

static void s_push_head(struct obj *o)
{
	o->prev = NULL;
	o->next = cs.head;
	if (cs.head)
		cs.head->prev = o;
	cs.head = o;
	if (!cs.tail)
		cs.tail = o;
}

/* Cache S's shrinker: (void) marks the parameters a callback does not use. */
static unsigned long s_count(struct rcl_shrinker *s, struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return cs.objects ? cs.objects : RCL_SHRINK_EMPTY;
}

static unsigned long s_scan(struct rcl_shrinker *s, struct rcl_shrink_control *sc)
{
	unsigned long n = 0;

	(void)s;
	while (n < sc->nr_to_scan && cs.tail) {
		struct obj *o = cs.tail;

		s_unlink(o);
		obj_free(&cs, o);
		n++;
	}
	sc->nr_scanned = n;
	return n;
}

static const struct rcl_shrinker_ops s_ops = { s_count, s_scan };

/* One request to cache @c; @is_l: cache L, else S.  Returns -errno. */
static int request(struct cache *c, bool is_l, bool count)
{
	uint32_t key = zipf_key();
	struct obj *o = c->index[key];
	int err;

	if (o) {
		if (count)
			c->hits++;
		if (is_l)
			return rcl_lruvec_mark_accessed(&lv, &o->lru);
		s_unlink(o);
		s_push_head(o);
		return 0;
	}
	if (count)
		c->misses++;
	/* Charge first (direct reclaim below min), then allocate and insert. */
	err = rcl_domain_charge(dom, OBJ_SIZE, RCL_CTX_CAPABLE, NULL);
	if (err)
		return err;
	o = calloc(1, sizeof(*o));
	if (!o) {
		rcl_domain_uncharge(dom, OBJ_SIZE);
		return -ENOMEM;
	}
	o->key = key;
	c->index[key] = o;
	c->objects++;
	if (is_l)
		return rcl_lruvec_add(&lv, &o->lru, RCL_LRU_FILE, OBJ_SIZE,
				      RCL_LRU_ADD_NOBATCH);
	s_push_head(o);
	return 0;
}

struct result {
	int seeks;
	double share, hit_l, hit_s;
};

static int run(int seeks, struct result *r)
{
	struct rcl_domain_config dcfg = { .budget = BUDGET,
					  .mode = RCL_CHARGE_STRICT };
	struct rcl_lruvec_config lcfg = { .ops = &l_ops };
	struct rcl_shrinker_config scfg = { .ops = &s_ops, .name = "S",
					    .seeks = seeks };
	struct rcl_shrinker *sh;
	unsigned i;
	int err;

	memset(&cl, 0, sizeof(cl));
	memset(&cs, 0, sizeof(cs));
	rng = 0x9e3779b97f4a7c15ull;
	cl.index = calloc(NKEYS, sizeof(*cl.index));
	cs.index = calloc(NKEYS, sizeof(*cs.index));
	if (!cl.index || !cs.index)
		return -ENOMEM;
	if ((err = rcl_domain_new(&dcfg, &dom)) ||
	    (err = rcl_lruvec_init(&lv, &lcfg)) ||
	    (err = rcl_domain_attach(dom, &lv, 0)) ||
	    (err = rcl_shrinker_new(rcl_domain_registry(dom), &scfg, &sh)) ||
	    (err = rcl_shrinker_register(sh)))
		return err;

	for (i = 0; i < WARMUP + MEASURE; i++) {
		bool count = i >= WARMUP;

		if ((err = request(&cl, true, count)) ||
		    (err = request(&cs, false, count)))
			return err;
	}
	r->seeks = seeks;
	r->share = (double)cs.objects / (double)(cl.objects + cs.objects);
	r->hit_l = (double)cl.hits / (double)(cl.hits + cl.misses);
	r->hit_s = (double)cs.hits / (double)(cs.hits + cs.misses);

	/* Teardown: the shrinker first, then the lruvec, then the domain. */
	if ((err = rcl_shrinker_free(sh)))
		return err;
	while (cs.tail) {
		struct obj *o = cs.tail;

		s_unlink(o);
		obj_free(&cs, o);
	}
	for (i = 0; i < NKEYS; i++) {
		struct obj *o = cl.index[i];

		if (o) {
			if ((err = rcl_lruvec_del(&lv, &o->lru)))
				return err;
			obj_free(&cl, o);
		}
	}
	if ((err = rcl_domain_detach(dom, &lv)) ||
	    (err = rcl_lruvec_destroy(&lv)))
		return err;
	if (rcl_domain_usage(dom) != 0) {
		fprintf(stderr, "seeks: usage %llu after teardown\n",
			(unsigned long long)rcl_domain_usage(dom));
		return -EPROTO;
	}
	if ((err = rcl_domain_free(dom)))
		return err;
	free(cl.index);
	free(cs.index);
	return 0;
}

int main(int argc, char **argv)
{
	static const int seeks[] = { 0, 1, 2, 4, 8, 16, 32 };
	struct result r[sizeof(seeks) / sizeof(seeks[0])];
	bool check = argc > 1 && strcmp(argv[1], "--check") == 0;
	double sum = 0;
	unsigned i;
	int err;

	if (argc > 2 || (argc == 2 && !check)) {
		fprintf(stderr, "usage: seeks [--check]\n");
		return 2;
	}
	zipf_cdf = malloc(NKEYS * sizeof(*zipf_cdf));
	if (!zipf_cdf)
		return 1;
	for (i = 0; i < NKEYS; i++)
		zipf_cdf[i] = sum += pow(i + 1.0, -ZIPF_ALPHA);
	for (i = 0; i < NKEYS; i++)
		zipf_cdf[i] /= sum;

	printf("seeks: two caches of %u-byte objects in one %u MiB strict domain,\n"
	       "  L on an lruvec, S behind a shrinker; Zipf %.1f over %u keys each\n"
	       "  (twice the budget); %u requests each, the last %u measured\n\n",
	       OBJ_SIZE, BUDGET >> 20, ZIPF_ALPHA, NKEYS, WARMUP + MEASURE,
	       MEASURE);
	printf("  %5s  %14s  %9s  %9s\n", "seeks", "S's share", "L hits", "S hits");
	for (i = 0; i < sizeof(seeks) / sizeof(seeks[0]); i++) {
		err = run(seeks[i], &r[i]);
		if (err) {
			fprintf(stderr, "seeks: a library call failed: %d\n", err);
			return 1;
		}
		printf("  %5d  %13.1f%%  %8.1f%%  %8.1f%%\n", r[i].seeks,
		       100 * r[i].share, 100 * r[i].hit_l, 100 * r[i].hit_s);
	}
	free(zipf_cdf);
	if (check) {
		/* From seeks 1 up, a costlier shrinker keeps at least as much. */
		for (i = 2; i < sizeof(seeks) / sizeof(seeks[0]); i++)
			if (r[i].share + 0.005 < r[i - 1].share) {
				fprintf(stderr, "seeks: share fell from %.3f at "
					"seeks %d to %.3f at seeks %d\n",
					r[i - 1].share, r[i - 1].seeks,
					r[i].share, r[i].seeks);
				return 1;
			}
		if (!(r[6].share > r[2].share)) {
			fprintf(stderr, "seeks: seeks 32 kept no more than 2\n");
			return 1;
		}
	}
	return 0;
}
