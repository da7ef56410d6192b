/* SPDX-License-Identifier: MIT */
/* docs/getting-started.md, section 2: a cache of computed strings in a 1 MiB budget. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <reclaim/reclaim.h>

struct entry {
	struct rcl_objcache_node node;	/* the library's part: index, LRU, pins */
	unsigned key;			/* the key bytes live in the object */
	char value[200];
};

static void entry_free(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	free(rcl_container_of(n, struct entry, node));	/* evicted, deleted or destroyed */
}

static const struct rcl_objcache_ops ops = { .destructor = entry_free };

/* Get-or-insert: the entry comes back pinned; NULL if the budget has no room. */
static struct entry *lookup(struct rcl_objcache *c, unsigned key)
{
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n = rcl_objcache_get(c, &key, sizeof(key), &miss);
	struct entry *e;

	if (n)
		return rcl_container_of(n, struct entry, node);		/* a hit */
	e = calloc(1, sizeof(*e));		/* zeroed: an idle node */
	if (!e)
		return NULL;
	e->key = key;
	snprintf(e->value, sizeof(e->value), "value of %u", key);	/* the expensive part */
	if (rcl_objcache_insert(c, &e->node, &e->key, sizeof(e->key), sizeof(*e),
				RCL_CTX_CAPABLE, &miss, &n) == 0)
		return e;			/* charged to the budget; may have reclaimed */
	free(e);	/* -EEXIST: n is the entry another thread inserted; -ENOMEM: n is NULL */
	return n ? rcl_container_of(n, struct entry, node) : NULL;
}

int main(void)
{
	struct rcl_domain_config dcfg = { .budget = 1 << 20 };	/* bytes */
	struct rcl_objcache_config ccfg = { .ops = &ops };
	struct rcl_domain *d;
	struct rcl_objcache *c;
	struct rcl_objcache_stats st;
	unsigned i, rnd = 1;

	if (rcl_domain_new(&dcfg, &d) || rcl_objcache_new(d, &ccfg, &c) ||
	    rcl_domain_reclaimer_start(d))
		return 1;
	for (i = 0; i < 100000; i++) {
		/* 3 in 4 requests on 1000 hot keys, the rest on all 8000 (2 MiB) */
		unsigned key = (rnd = rnd * 1103515245u + 12345u) >> 8;
		key = (key & 3) ? (key >> 2) % 1000 : (key >> 2) % 8000;
		struct entry *e = lookup(c, key);

		if (!e)
			continue;			/* not cached: use a local copy */
		if (strncmp(e->value, "value of", 8))	/* use it while pinned */
			return 1;
		rcl_objcache_put(c, &e->node);
	}
	rcl_objcache_stats(c, &st);
	printf("hits %llu of 100000, usage %llu of %llu bytes\n",
	       (unsigned long long)st.hits,
	       (unsigned long long)rcl_domain_usage(d),
	       (unsigned long long)rcl_domain_budget(d));
	rcl_domain_reclaimer_stop(d);		/* teardown: threads, caches, domain */
	return rcl_objcache_destroy(c) || rcl_domain_free(d);
}
