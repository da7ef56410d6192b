/* SPDX-License-Identifier: MIT */
/*
 * Three caches in a tree of domains (<reclaim/domain.h>, "Trees of
 * domains"): a parent holds the budget, and each cache charges a child of
 * it.  Two tenants stream through far more than the parent holds; the
 * third, "sessions", reads its hot set and then sits idle meanwhile.  Run
 * once without and once with protect_low on the sessions child: protected,
 * it keeps its hot set; then a smaller parent budget shows that memory.low
 * is best effort (a low event when nothing else is left to reclaim).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <reclaim/reclaim.h>

#define PAGE 4096u		/* what an entry is charged */
#define PARENT_PAGES 256u	/* the parent's budget: 1 MiB */
#define HOT_PAGES 96u		/* the sessions cache's hot set */
#define STREAM_KEYS 2048u	/* each streaming tenant reads these once */
#define SMALL_PAGES 64u		/* the parent's budget at the end */

struct entry {
	struct rcl_objcache_node node;
	unsigned key;
	char value[PAGE - 128];
};

struct tenant {
	const char *name;
	struct rcl_domain *d;		/* a child of the parent */
	struct rcl_objcache *c;		/* charges d */
};

static void entry_free(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	free(rcl_container_of(n, struct entry, node));
}

static const struct rcl_objcache_ops ops = { .destructor = entry_free };

/* Read @key through @t's cache (a miss inserts it): true on a hit. */
static bool get(struct tenant *t, unsigned key)
{
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n = rcl_objcache_get(t->c, &key, sizeof(key), &miss);
	struct entry *e;

	if (n) {
		rcl_objcache_put(t->c, n);
		return true;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return false;
	e->key = key;
	snprintf(e->value, sizeof(e->value), "%s %u", t->name, key);
	/* charges t->d, hence the parent: reclaims the parent's tree when full */
	if (rcl_objcache_insert(t->c, &e->node, &e->key, sizeof(e->key), PAGE,
				RCL_CTX_CAPABLE, &miss, &n) == 0) {
		rcl_objcache_put(t->c, &e->node);
	} else {
		free(e);
		if (n)
			rcl_objcache_put(t->c, n);
	}
	return false;
}

static void show(const char *when, struct rcl_domain *parent, struct tenant *t)
{
	struct rcl_domain_events ev;
	struct rcl_domain_limits lim;
	uint64_t elow = 0;
	unsigned i;

	rcl_domain_events(parent, true, &ev);	/* summed over the tree */
	printf("%s\n  %-9s %6s %12s %9s %11s\n  %-9s %6llu %12s %9s %11llu\n",
	       when, "domain", "pages", "protect_low", "eff. low", "low events",
	       "parent", (unsigned long long)(rcl_domain_usage(parent) / PAGE),
	       "-", "-", (unsigned long long)ev.low);
	for (i = 0; i < 3; i++) {
		rcl_domain_events(t[i].d, false, &ev);	/* its own */
		rcl_domain_limits(t[i].d, &lim);
		rcl_domain_effective_protection(parent, t[i].d, NULL, &elow);
		printf("  %-9s %6llu %12llu %9llu %11llu\n", t[i].name,
		       (unsigned long long)(rcl_domain_usage(t[i].d) / PAGE),
		       (unsigned long long)(lim.protect_low / PAGE),
		       (unsigned long long)(elow / PAGE),
		       (unsigned long long)ev.low);
	}
}

/* One run; returns the hits of the sessions' second look, or -1. */
static int run(uint64_t protect_low)
{
	struct rcl_domain_config pcfg = { .budget = PARENT_PAGES * PAGE };
	struct rcl_objcache_config ccfg = { .ops = &ops,
					    .flags = RCL_OBJCACHE_NO_SHADOWS };
	struct tenant t[3] = { { .name = "thumbs" }, { .name = "search" },
				{ .name = "sessions" } };
	struct rcl_domain_events ev;
	struct rcl_domain *parent;
	int i, hits = 0, err = 0;
	unsigned k;

	printf("--- protect_low of sessions: %llu pages\n",
	       (unsigned long long)(protect_low / PAGE));
	if (rcl_domain_new(&pcfg, &parent))
		return -1;
	for (i = 0; i < 3; i++) {
		/* budget 0: no limit of its own, only the parent's */
		struct rcl_domain_config cfg = {
			.parent = parent,
			.protect_low = i == 2 ? protect_low : 0,
		};

		if (rcl_domain_new(&cfg, &t[i].d) ||
		    rcl_objcache_new(t[i].d, &ccfg, &t[i].c))
			return -1;
	}
	for (k = 0; k < 3 * HOT_PAGES; k++)	/* three touches: active */
		get(&t[2], k % HOT_PAGES);
	for (k = 0; k < STREAM_KEYS; k++) {	/* the pressure */
		get(&t[0], k);
		get(&t[1], k);
	}
	show("after the streams", parent, t);
	for (k = 0; k < HOT_PAGES; k++)
		hits += get(&t[2], k);
	printf("sessions read its %u hot pages again: %d hits\n", HOT_PAGES, hits);
	if (protect_low) {
		/* Nothing but sessions fits now: protection gives way. */
		rcl_domain_set_budget(parent, SMALL_PAGES * PAGE);
		for (k = 0; k < SMALL_PAGES; k++)
			get(&t[0], STREAM_KEYS + k);
		show("after a smaller parent budget", parent, t);
		rcl_domain_events(t[2].d, false, &ev);
		if (!ev.low || rcl_domain_usage(parent) > SMALL_PAGES * PAGE)
			err = 1;
	}
	for (i = 0; i < 3; i++)
		if (rcl_objcache_destroy(t[i].c) || rcl_domain_free(t[i].d))
			err = 1;
	if (rcl_domain_free(parent))	/* after its children */
		err = 1;
	return err ? -1 : hits;
}

int main(void)
{
	int unprotected = run(0);
	int protected = run(HOT_PAGES * PAGE);

	printf("hits of the hot set: %d unprotected, %d protected (of %u)\n",
	       unprotected, protected, HOT_PAGES);
	/* The checks: protection kept every hot page, and it made the difference. */
	return unprotected < 0 || protected != (int)HOT_PAGES ||
	       unprotected >= protected;
}
