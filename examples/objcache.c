/* SPDX-License-Identifier: MIT */
/*
 * This example shows how to build a multi-threaded object cache with a byte
 * budget on <reclaim/objcache.h>: the library owns the index, the pins, the
 * charging and the workingset shadows, and the application writes only its
 * object, a destructor and get-or-insert.  (handcache.c builds the same
 * cache by hand on an lruvec, the way for caches that own their index.)
 *
 * The cache is the first section below, a few dozen lines.  The rest is a
 * workload driver with self-checks: threads run a deterministic, skewed
 * get-or-insert workload (80% of the operations on 20% of the keys, and
 * once in 64 an explicit delete) on objects of 64..2048 bytes whose size,
 * derived from the key, is the object's weight, in a strict domain with the
 * background reclaimer; the cache adds a measured per-object overhead
 * (meta_charge) to every charge, so the budget holds what the objects
 * really take.  Every access checks the payload under the pin
 * (which catches an object freed or reused under it).  At the end the
 * cache's weight must equal the domain's usage, and after teardown the
 * usage must be 0 with every object destroyed exactly once.
 *
 * Usage: objcache [--ops N] [--threads T] [--budget BYTES[K|M|G]] [--seed S]
 *                 [--meta-charge BYTES]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reclaim/reclaim.h>

/* ------------------------------------------------------------------------- */
/* The cache: an object, its destructor, get-or-insert                        */
/* ------------------------------------------------------------------------- */

struct obj {
	struct rcl_objcache_node node;	/* the library's: index, lru, pins */
	uint64_t key;			/* the key bytes live in the object */
	uint32_t size;			/* payload bytes: the weight */
	uint64_t payload[];
};

/*
 * What an object takes beyond its payload, added by the cache to each
 * charge and lru weight (objcache.h, "The per-object overhead").  Measured
 * on glibc 2.36, x86-64, over the 249 payload sizes of this program
 * (64..2048 bytes, step 8), each allocated as sizeof(struct obj) + size:
 * - the header: sizeof(struct obj) = 88 (the 72-byte node, key, size);
 * - malloc: malloc_usable_size() - the size asked for averages 3.98 bytes
 *   (0 or 8: glibc rounds chunks to 16), and the address stride of two
 *   allocations in a row is malloc_usable_size() + 8 for every size (the
 *   chunk's size word): 12;
 * - the index: 24 bytes a bucket (8 for the pointer, 16 for the shadow
 *   slot) at a load between 1/2 and 1, so 24..48 an object.  At the
 *   default 2 MiB budget the cache holds about 1,700 objects in 16 shards
 *   of 128 buckets: 16 x 128 x 24 / 1,700 = 29; 32 is the middle of the
 *   range (about 33 averaged over a doubling), for other budgets.
 * So 88 + 12 + 32 = 132 bytes an object.  --meta-charge 0 charges the
 * payload alone, as the example did before (and handcache.c does).
 */
#define OBJ_MALLOC_OVERHEAD	12u
#define OBJ_INDEX_SHARE		32u
#define OBJ_META_CHARGE		(sizeof(struct obj) + OBJ_MALLOC_OVERHEAD + \
				 OBJ_INDEX_SHARE)

static atomic_ulong nr_live;		/* objects allocated, not destroyed */

static void obj_destroy(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	atomic_fetch_sub(&nr_live, 1);
	free(rcl_container_of(n, struct obj, node));
}

static const struct rcl_objcache_ops cache_ops = { .destructor = obj_destroy };

static void obj_fill(struct obj *o, uint64_t key, uint32_t size);

/* The object for @key, pinned; NULL if the budget has no room for it. */
static struct obj *cache_get(struct rcl_objcache *c, uint64_t key,
			     uint32_t size, bool *hit)
{
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n = rcl_objcache_get(c, &key, sizeof(key), &miss);
	struct obj *o;

	*hit = n != NULL;
	if (n)
		return rcl_container_of(n, struct obj, node);
	o = calloc(1, sizeof(*o) + size);	/* zeroed: an idle node */
	if (!o)
		return NULL;
	obj_fill(o, key, size);
	atomic_fetch_add(&nr_live, 1);
	if (rcl_objcache_insert(c, &o->node, &o->key, sizeof(o->key), size,
				RCL_CTX_CAPABLE, &miss, &n) == 0)
		return o;
	/* -EEXIST: another thread was first (n is its object, pinned); or
	 * -ENOMEM: the budget is full of pinned objects (n is NULL). */
	atomic_fetch_sub(&nr_live, 1);
	free(o);
	return n ? rcl_container_of(n, struct obj, node) : NULL;
}

/* ------------------------------------------------------------------------- */
/* The workload and its checks                                                */
/* ------------------------------------------------------------------------- */

#define NR_KEYS		10000u
#define HOT_KEYS	(NR_KEYS / 5)
#define HOT_PERCENT	80u
#define DELETE_EVERY	64u
#define MIN_PAYLOAD	64u
#define MAX_PAYLOAD	2048u
#define MAX_THREADS	64u

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return mix64(*state);
}

static uint32_t payload_size(uint64_t key)
{
	const uint32_t steps = (MAX_PAYLOAD - MIN_PAYLOAD) / 8 + 1;

	return MIN_PAYLOAD + (uint32_t)(mix64(key ^ 0x5a5a5a5aull) % steps) * 8;
}

static void obj_fill(struct obj *o, uint64_t key, uint32_t size)
{
	uint32_t i;

	o->key = key;
	o->size = size;
	for (i = 0; i < size / 8; i++)
		o->payload[i] = mix64(key * 0x100000001b3ull + i);
}

static bool obj_ok(const struct obj *o, uint64_t key)
{
	uint32_t i;

	if (o->key != key || o->size != payload_size(key))
		return false;
	for (i = 0; i < o->size / 8; i++)
		if (o->payload[i] != mix64(key * 0x100000001b3ull + i))
			return false;
	return true;
}

struct worker {
	pthread_t thread;
	struct rcl_objcache *cache;
	uint64_t rng;
	unsigned long nr_ops;
	unsigned long gets, hits, uncached, deletes, bad, errors;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned long i;

	for (i = 0; i < w->nr_ops; i++) {
		uint64_t r = splitmix64(&w->rng);
		uint64_t key = r % 100 < HOT_PERCENT
				       ? (r >> 32) % HOT_KEYS
				       : HOT_KEYS + (r >> 32) % (NR_KEYS - HOT_KEYS);
		struct obj *o;
		bool hit;
		int err;

		if (splitmix64(&w->rng) % DELETE_EVERY == 0) {
			w->deletes++;
			err = rcl_objcache_del(w->cache, &key, sizeof(key));
			w->errors += err && err != -ENOENT;
			continue;
		}
		w->gets++;
		o = cache_get(w->cache, key, payload_size(key), &hit);
		w->hits += hit;
		if (!o) {
			w->uncached++;
			continue;
		}
		w->bad += !obj_ok(o, key);
		w->errors += rcl_objcache_put(w->cache, &o->node) != 0;
	}
	return NULL;
}

static bool parse_u64(const char *s, bool suffix, uint64_t *out)
{
	unsigned shift = 0;
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return false;
	if (suffix && *end) {
		switch (*end++) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: return false;
		}
	}
	if (*end || (v << shift) >> shift != v)
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

static int check(bool ok, const char *what)
{
	if (!ok)
		fprintf(stderr, "objcache: FAILED: %s\n", what);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ops", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "budget", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "meta-charge", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ops = 200000, threads = 2, budget = 2ull << 20, seed = 1;
	uint64_t meta = OBJ_META_CHARGE;
	unsigned long gets = 0, hits = 0, uncached = 0, deletes = 0, bad = 0,
		      errors = 0;
	struct rcl_domain_config dcfg = { .mode = RCL_CHARGE_STRICT };
	struct rcl_objcache_config ccfg = { .ops = &cache_ops };
	struct rcl_objcache_stats st;
	struct worker w[MAX_THREADS];
	struct rcl_domain *d;
	struct rcl_objcache *c;
	unsigned i;
	int opt, err, failed = 0;

	while ((opt = getopt_long(argc, argv, "n:t:b:s:m:h", longopts, NULL)) != -1) {
		bool ok = true;

		switch (opt) {
		case 'n': ok = parse_u64(optarg, false, &ops) && ops >= 1; break;
		case 't':
			ok = parse_u64(optarg, false, &threads) && threads >= 1 &&
			     threads <= MAX_THREADS;
			break;
		case 'b':
			ok = parse_u64(optarg, true, &budget) && budget >= (64 << 10);
			break;
		case 's': ok = parse_u64(optarg, false, &seed); break;
		case 'm':
			ok = parse_u64(optarg, false, &meta) && meta <= 65536;
			break;
		case 'h':
			printf("Usage: objcache [--ops N] [--threads T] "
			       "[--budget BYTES[K|M|G]] [--seed S] "
			       "[--meta-charge BYTES]\n");
			return EXIT_SUCCESS;
		default: return EXIT_FAILURE;
		}
		if (!ok) {
			fprintf(stderr, "objcache: bad value '%s'\n", optarg);
			return EXIT_FAILURE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "objcache: unexpected argument '%s' (see --help)\n",
			argv[optind]);
		return EXIT_FAILURE;
	}

	/* Setup: a domain with a budget and its reclaimer, and the cache. */
	dcfg.budget = budget;
	ccfg.seed = seed;
	ccfg.meta_charge = meta;	/* 0: the payload alone */
	if ((err = rcl_domain_new(&dcfg, &d)) != 0 ||
	    (err = rcl_objcache_new(d, &ccfg, &c)) != 0 ||
	    (err = rcl_domain_reclaimer_start(d)) != 0) {
		fprintf(stderr, "objcache: setup: %s\n", strerror(-err));
		return EXIT_FAILURE;
	}
	printf("objcache: %" PRIu64 " threads x %" PRIu64 " ops on %u keys, "
	       "budget %" PRIu64 " bytes, seed %" PRIu64 ", meta_charge %" PRIu64
	       "\n", threads, ops, NR_KEYS, budget, seed, meta);
	for (i = 0; i < threads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].cache = c;
		w[i].rng = seed ^ mix64(i + 1);
		w[i].nr_ops = ops;
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
			fprintf(stderr, "objcache: pthread_create failed\n");
			threads = i;
			failed = 1;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].thread, NULL);
		gets += w[i].gets;
		hits += w[i].hits;
		uncached += w[i].uncached;
		deletes += w[i].deletes;
		bad += w[i].bad;
		errors += w[i].errors;
	}
	rcl_domain_reclaimer_stop(d);
	rcl_objcache_stats(c, &st);

	printf("gets:     %lu, hits %lu (%.1f%%), not cached %lu; deletes %lu\n",
	       gets, hits, gets ? 100.0 * (double)hits / (double)gets : 0.0,
	       uncached, deletes);
	printf("cache:    %" PRIu64 " inserts, %" PRIu64 " lost races, %" PRIu64
	       " evictions, %" PRIu64 " refault misses (%" PRIu64
	       " activated), %" PRIu64 " shadows\n", st.inserts, st.lost_races,
	       st.evictions, st.refault_misses, st.refault_activations,
	       st.shadows);
	printf("now:      %" PRIu64 " objects, %" PRIu64 " bytes charged (%" PRIu64
	       " of payload); usage %" PRIu64 " of %" PRIu64 "\n", st.objects,
	       st.weight, st.weight - st.objects * meta, rcl_domain_usage(d),
	       budget);

	failed |= check(bad == 0, "payload mismatch (use after free?)");
	failed |= check(errors == 0, "a library call failed unexpectedly");
	failed |= check(st.hits + st.misses == gets, "hits + misses != gets");
	/* Evicted objects whose destructor waits for their shard's next
	 * insert are uncharged but still allocated (objcache.h). */
	failed |= check(st.weight == rcl_domain_usage(d) &&
			st.objects + st.reap_pending == atomic_load(&nr_live),
			"the cache does not hold exactly what is charged");
	failed |= check(rcl_domain_usage(d) <= budget, "usage above the budget");

	/* Teardown: destroy deletes (and destructs) every object. */
	err = rcl_objcache_destroy(c);
	failed |= check(err == 0, "rcl_objcache_destroy() failed");
	failed |= check(rcl_domain_usage(d) == 0 && atomic_load(&nr_live) == 0,
			"objects or charges left after teardown");
	failed |= check(rcl_domain_free(d) == 0, "rcl_domain_free() failed");
	printf("%s\n", failed ? "FAILED" : "OK");
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
