/* SPDX-License-Identifier: MIT */
/*
 * peers.c - peer policies of rcl-sim: clock, sieve, arc, 2q, slru (see
 * peers.h).
 *
 * Each policy follows its paper; where libCacheSim@aa0fc40, the simulator
 * behind ../shared/traces/reference-miss-ratios.tsv, does something the
 * paper leaves open or does differently, the policy does what libCacheSim
 * does, so that it reproduces the table's rows.  Those places are marked
 * "libCacheSim:" below and listed in README.md.
 *
 * Keys are dense (0 .. nr_keys - 1), so the state is in arrays indexed by
 * key: a key is on at most one list of a policy at a time, so one pair of
 * prev/next arrays serves all of the policy's lists, and a byte per key says
 * which list (or none) holds it.
 *
 * Byte mode: every list counts the bytes of its keys beside their number,
 * and the policies compare bytes where object mode compared numbers (in
 * object mode the two are the same: every key has size 1).  A key's size is
 * set when it enters the policy from nowhere (not cached, not a ghost) and
 * kept while it is on any list, ghost lists included, as in libCacheSim,
 * whose ghosts keep their object's size.
 */
#include "peers.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEER_NIL UINT32_MAX
#define PEER_NONE 0		/* where[]: on no list */

/* ------------------------------------------------------------------------- */
/* Lists over keys                                                            */
/* ------------------------------------------------------------------------- */

/*
 * struct peer_list - a doubly linked list of keys, from its head (most
 * recently inserted or used) to its tail; the links are in peer_nodes.
 */
struct peer_list {
	uint32_t head, tail;
	uint64_t len;
	uint64_t bytes;		/* the sizes of its keys (= len, object mode) */
};

/* The links of every list of one cache, and which list holds each key. */
struct peer_nodes {
	uint32_t *prev, *next;	/* prev: toward the head; next: the tail */
	uint8_t *where;		/* PEER_NONE, or the policy's list number */
	uint32_t *size;		/* byte mode: each key's size; NULL: all 1 */
};

/* The size of key @k (1 in object mode). */
static inline uint64_t peer_size(const struct peer_nodes *n, uint32_t k)
{
	return n->size ? n->size[k] : 1;
}

/* Give @k, on no list, the size @size (byte mode; no-op in object mode). */
static inline void peer_set_size(struct peer_nodes *n, uint32_t k,
				 uint32_t size)
{
	if (n->size)
		n->size[k] = size;
}

static void peer_list_init(struct peer_list *l)
{
	l->head = l->tail = PEER_NIL;
	l->len = 0;
	l->bytes = 0;
}

static void peer_push_head(struct peer_nodes *n, struct peer_list *l,
			   uint32_t k, uint8_t where)
{
	n->prev[k] = PEER_NIL;
	n->next[k] = l->head;
	if (l->head != PEER_NIL)
		n->prev[l->head] = k;
	else
		l->tail = k;
	l->head = k;
	l->len++;
	l->bytes += peer_size(n, k);
	n->where[k] = where;
}

static void peer_unlink(struct peer_nodes *n, struct peer_list *l, uint32_t k)
{
	uint32_t p = n->prev[k], x = n->next[k];

	if (p != PEER_NIL)
		n->next[p] = x;
	else
		l->head = x;
	if (x != PEER_NIL)
		n->prev[x] = p;
	else
		l->tail = p;
	l->len--;
	l->bytes -= peer_size(n, k);
	n->where[k] = PEER_NONE;
}

/* Take the tail off @l (which must not be empty) and return it. */
static uint32_t peer_pop_tail(struct peer_nodes *n, struct peer_list *l)
{
	uint32_t k = l->tail;

	peer_unlink(n, l, k);
	return k;
}

static void peer_move_head(struct peer_nodes *n, struct peer_list *l,
			   uint32_t k)
{
	uint8_t where = n->where[k];

	if (l->head == k)
		return;
	peer_unlink(n, l, k);
	peer_push_head(n, l, k, where);
}

static void peer_nodes_free(struct peer_nodes *n)
{
	free(n->prev);
	free(n->next);
	free(n->where);
	free(n->size);
}

static int peer_nodes_alloc(struct peer_nodes *n, uint32_t nr_keys,
			    bool bytes)
{
	size_t nr = nr_keys ? nr_keys : 1;

	n->prev = malloc(nr * sizeof(*n->prev));
	n->next = malloc(nr * sizeof(*n->next));
	n->where = calloc(nr, sizeof(*n->where));
	n->size = bytes ? malloc(nr * sizeof(*n->size)) : NULL;
	if (!n->prev || !n->next || !n->where || (bytes && !n->size)) {
		peer_nodes_free(n);
		memset(n, 0, sizeof(*n));
		return -1;
	}
	return 0;
}

/* calloc() @size bytes of cache state and its nodes; NULL after a message. */
static void *peer_cache_alloc(const struct sim_policy *p, size_t size,
			      struct peer_nodes **nodes, size_t nodes_off,
			      uint32_t nr_keys, bool bytes, char *err,
			      size_t errlen)
{
	char *c = calloc(1, size);

	if (c) {
		*nodes = (struct peer_nodes *)(c + nodes_off);
		if (peer_nodes_alloc(*nodes, nr_keys, bytes)) {
			free(c);
			c = NULL;
		}
	}
	if (!c) {
		snprintf(err, errlen, "%s: out of memory", p->name);
		return NULL;
	}
	((struct sim_cache *)c)->policy = p;
	return c;
}

/* ------------------------------------------------------------------------- */
/* clock: one reference bit, second chance                                    */
/* ------------------------------------------------------------------------- */

/*
 * The classic clock: the cached keys sit in a circle of slots in insertion
 * order; a hit sets the key's reference bit; a miss in a full cache moves
 * the hand over the circle, clearing set bits, to the first key whose bit is
 * clear, evicts it and puts the new key in its slot, just behind the hand,
 * with its bit clear.  libCacheSim keeps the same order in a FIFO list that
 * moves a referenced tail to the head (n-bit-counter=1: the counter is one
 * bit); the two are the same policy, eviction for eviction.
 *
 * Byte mode uses that list (slots cannot hold objects of different sizes):
 * a miss evicts until the new object fits, each eviction taking the tail,
 * or moving a referenced tail to the head with its bit cleared.  With every
 * size 1 it makes object mode's decisions (a test holds it to that).
 */
enum { CLOCK_OUT, CLOCK_IN, CLOCK_REF };

struct clock_cache {
	struct sim_cache base;
	uint64_t capacity;
	uint64_t count;
	uint64_t hand;
	uint64_t evicted, second_chances;
	uint32_t *slot;		/* object mode: min(capacity, nr_keys) slots */
	uint8_t *state;		/* per key: CLOCK_OUT, CLOCK_IN, CLOCK_REF */
	bool bytes;
	struct peer_nodes nodes; /* byte mode: the FIFO list */
	struct peer_list q;
};

static void clock_destroy(struct sim_cache *c)
{
	struct clock_cache *k = (struct clock_cache *)c;

	if (!k)
		return;
	free(k->slot);
	free(k->state);
	peer_nodes_free(&k->nodes);
	free(k);
}

static struct sim_cache *clock_create(const struct sim_policy *p,
				      uint64_t capacity, uint32_t nr_keys,
				      const uint64_t *keys, bool bytes,
				      char *err, size_t errlen)
{
	struct clock_cache *k = calloc(1, sizeof(*k));
	/* More slots than keys are never filled. */
	uint64_t slots = capacity < nr_keys ? capacity : nr_keys;
	int r = 0;

	if (k) {
		if (bytes)
			r = peer_nodes_alloc(&k->nodes, nr_keys, true);
		else
			k->slot = malloc((slots ? slots : 1) *
					 sizeof(*k->slot));
		k->state = calloc(nr_keys ? nr_keys : 1, sizeof(*k->state));
	}
	if (!k || r || (!bytes && !k->slot) || !k->state) {
		clock_destroy(k ? &k->base : NULL);
		snprintf(err, errlen, "%s: out of memory", p->name);
		return NULL;
	}
	k->base.policy = p;
	k->capacity = capacity;
	k->bytes = bytes;
	peer_list_init(&k->q);
	return &k->base;
}

/* Byte mode: a miss on @key of @size bytes, with the FIFO list. */
static int clock_miss_bytes(struct clock_cache *k, uint32_t key,
			    uint32_t size)
{
	struct peer_nodes *n = &k->nodes;

	if (size > k->capacity)
		return 0;	/* too large: not inserted */
	while (k->q.bytes + size > k->capacity) {
		uint32_t victim = peer_pop_tail(n, &k->q);

		if (k->state[victim] == CLOCK_REF) {
			k->state[victim] = CLOCK_IN;
			k->second_chances++;
			peer_push_head(n, &k->q, victim, 1);
			continue;
		}
		k->state[victim] = CLOCK_OUT;
		k->evicted++;
	}
	peer_set_size(n, key, size);
	peer_push_head(n, &k->q, key, 1);
	k->state[key] = CLOCK_IN;
	return 0;
}

static int clock_access(struct sim_cache *c, uint32_t key, uint32_t size)
{
	struct clock_cache *k = (struct clock_cache *)c;
	uint32_t victim;

	if (k->state[key] != CLOCK_OUT) {
		k->state[key] = CLOCK_REF;
		return 1;
	}
	if (k->bytes)
		return clock_miss_bytes(k, key, size);
	if (k->count < k->capacity) {
		/* Filling up: the hand stays on slot 0, the oldest key. */
		k->slot[k->count++] = key;
		k->state[key] = CLOCK_IN;
		return 0;
	}
	for (;;) {
		victim = k->slot[k->hand];
		if (k->state[victim] != CLOCK_REF)
			break;
		k->state[victim] = CLOCK_IN;
		k->second_chances++;
		if (++k->hand == k->capacity)
			k->hand = 0;
	}
	k->state[victim] = CLOCK_OUT;
	k->evicted++;
	k->slot[k->hand] = key;
	k->state[key] = CLOCK_IN;
	if (++k->hand == k->capacity)
		k->hand = 0;
	return 0;
}

static size_t clock_counters(struct sim_cache *c, struct sim_counter *out,
			     size_t max)
{
	struct clock_cache *k = (struct clock_cache *)c;

	if (max < 2)
		return 0;
	out[0].name = "evicted";
	out[0].value = k->evicted;
	out[1].name = "second_chances";
	out[1].value = k->second_chances;
	return 2;
}

const struct sim_policy sim_policy_clock = {
	.name = "clock",
	.help = "CLOCK, one reference bit (second chance)",
	.create = clock_create,
	.access = clock_access,
	.counters = clock_counters,
	.destroy = clock_destroy,
};

/* ------------------------------------------------------------------------- */
/* sieve                                                                      */
/* ------------------------------------------------------------------------- */

/*
 * SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI '24): one FIFO
 * queue, new keys at the head, a visited bit set by a hit.  To evict, the
 * hand moves from where it stopped last (the tail at first) toward the head,
 * clearing visited bits, wraps around to the tail, and evicts the first key
 * whose bit is clear; it then rests on that key's neighbour toward the head
 * (none when the key was the head: the next eviction starts at the tail).
 * Survivors stay where they are: nothing moves in the queue.
 */
enum { SIEVE_OUT, SIEVE_IN };

struct sieve_cache {
	struct sim_cache base;
	struct peer_nodes nodes;
	struct peer_list q;
	uint64_t capacity;
	uint32_t hand;		/* PEER_NIL: start at the tail */
	uint8_t *visited;
	uint64_t evicted;
};

static void sieve_destroy(struct sim_cache *c)
{
	struct sieve_cache *s = (struct sieve_cache *)c;

	if (!s)
		return;
	peer_nodes_free(&s->nodes);
	free(s->visited);
	free(s);
}

static struct sim_cache *sieve_create(const struct sim_policy *p,
				      uint64_t capacity, uint32_t nr_keys,
				      const uint64_t *keys, bool bytes,
				      char *err, size_t errlen)
{
	struct peer_nodes *n;
	struct sieve_cache *s = peer_cache_alloc(p, sizeof(*s), &n,
			offsetof(struct sieve_cache, nodes), nr_keys, bytes, err,
			errlen);

	if (!s)
		return NULL;
	s->visited = calloc(nr_keys ? nr_keys : 1, 1);
	if (!s->visited) {
		sieve_destroy(&s->base);
		snprintf(err, errlen, "%s: out of memory", p->name);
		return NULL;
	}
	peer_list_init(&s->q);
	s->capacity = capacity;
	s->hand = PEER_NIL;
	return &s->base;
}

static int sieve_access(struct sim_cache *c, uint32_t key, uint32_t size)
{
	struct sieve_cache *s = (struct sieve_cache *)c;
	struct peer_nodes *n = &s->nodes;

	if (n->where[key] == SIEVE_IN) {
		s->visited[key] = 1;
		return 1;
	}
	if (size > s->capacity)
		return 0;	/* too large: not inserted */
	while (s->q.bytes + size > s->capacity) {
		uint32_t o = s->hand != PEER_NIL ? s->hand : s->q.tail;

		while (s->visited[o]) {
			s->visited[o] = 0;
			o = n->prev[o] != PEER_NIL ? n->prev[o] : s->q.tail;
		}
		s->hand = n->prev[o];
		peer_unlink(n, &s->q, o);
		s->evicted++;
	}
	peer_set_size(n, key, size);
	peer_push_head(n, &s->q, key, SIEVE_IN);
	s->visited[key] = 0;
	return 0;
}

static size_t sieve_counters(struct sim_cache *c, struct sim_counter *out,
			     size_t max)
{
	struct sieve_cache *s = (struct sieve_cache *)c;

	if (max < 1)
		return 0;
	out[0].name = "evicted";
	out[0].value = s->evicted;
	return 1;
}

const struct sim_policy sim_policy_sieve = {
	.name = "sieve",
	.help = "SIEVE (NSDI '24): a FIFO queue, a visited bit, a moving hand",
	.create = sieve_create,
	.access = sieve_access,
	.counters = sieve_counters,
	.destroy = sieve_destroy,
};

/* ------------------------------------------------------------------------- */
/* arc                                                                        */
/* ------------------------------------------------------------------------- */

/*
 * ARC (Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead Replacement
 * Cache", FAST '03, figure 4): T1 holds keys seen once recently, T2 keys seen
 * at least twice; B1 and B2 are their ghosts (keys only); p is the target
 * size of T1.  A hit in T1 or T2 moves the key to T2's head.  A ghost hit in
 * B1 raises p by max(|B2| / |B1|, 1), one in B2 lowers it by
 * max(|B1| / |B2|, 1), and the key goes to T2's head after REPLACE.  A miss
 * everywhere (case IV) trims L1 = T1 + B1 or the ghosts of L2 as the paper
 * says, then REPLACE, then the key goes to T1's head.
 *
 * libCacheSim: p and the deltas are doubles, not integers (the paper leaves
 * this open); REPLACE also takes T1's tail when T2 is empty; case IV (A)
 * tests "B1 not empty" for "|T1| < c".  With objects of size 1 the last two
 * are the paper's rule.
 *
 * Byte mode, libCacheSim's: the sizes of T1, T2, B1, B2, c and p are in
 * bytes; the deltas are still max(|B2| / |B1|, 1) with the lists in bytes,
 * so a ghost hit moves p by about one byte; a miss repeats the eviction
 * step (REPLACE after a ghost hit, case IV otherwise, where "L1 holds c"
 * reads T1 + B1 + the new object's size > c) until the object fits, and
 * case IV (B) drops B2's tail only when B2 is not empty.
 */
enum { ARC_OUT, ARC_T1, ARC_T2, ARC_B1, ARC_B2 };

struct arc_cache {
	struct sim_cache base;
	struct peer_nodes nodes;
	struct peer_list t1, t2, b1, b2;
	uint64_t capacity;
	double p;
	uint64_t evicted, ghost_hits;
};

static void arc_destroy(struct sim_cache *c)
{
	struct arc_cache *a = (struct arc_cache *)c;

	if (!a)
		return;
	peer_nodes_free(&a->nodes);
	free(a);
}

static struct sim_cache *arc_create(const struct sim_policy *p,
				    uint64_t capacity, uint32_t nr_keys,
				    const uint64_t *keys, bool bytes,
				    char *err, size_t errlen)
{
	struct peer_nodes *n;
	struct arc_cache *a = peer_cache_alloc(p, sizeof(*a), &n,
			offsetof(struct arc_cache, nodes), nr_keys, bytes, err,
			errlen);

	if (!a)
		return NULL;
	peer_list_init(&a->t1);
	peer_list_init(&a->t2);
	peer_list_init(&a->b1);
	peer_list_init(&a->b2);
	a->capacity = capacity;
	return &a->base;
}

/* REPLACE(x, p): move T1's or T2's tail to the head of its ghost list. */
static void arc_replace(struct arc_cache *a, bool in_b2)
{
	struct peer_nodes *n = &a->nodes;
	double t1 = (double)a->t1.bytes;
	uint32_t k;

	if ((a->t1.len > 0 && (t1 > a->p || (t1 == a->p && in_b2))) ||
	    a->t2.len == 0) {
		k = peer_pop_tail(n, &a->t1);
		peer_push_head(n, &a->b1, k, ARC_B1);
	} else {
		k = peer_pop_tail(n, &a->t2);
		peer_push_head(n, &a->b2, k, ARC_B2);
	}
	a->evicted++;
}

static int arc_access(struct sim_cache *c, uint32_t key, uint32_t size)
{
	struct arc_cache *a = (struct arc_cache *)c;
	struct peer_nodes *n = &a->nodes;
	uint8_t where = n->where[key];
	double cap = (double)a->capacity, delta;

	switch (where) {
	case ARC_T1:
		peer_unlink(n, &a->t1, key);
		peer_push_head(n, &a->t2, key, ARC_T2);
		return 1;
	case ARC_T2:
		peer_move_head(n, &a->t2, key);
		return 1;
	case ARC_B1:	/* case II */
		delta = (double)a->b2.bytes / (double)a->b1.bytes;
		if (delta < 1)
			delta = 1;
		a->p = a->p + delta < cap ? a->p + delta : cap;
		peer_unlink(n, &a->b1, key);
		a->ghost_hits++;
		break;
	case ARC_B2:	/* case III */
		delta = (double)a->b1.bytes / (double)a->b2.bytes;
		if (delta < 1)
			delta = 1;
		a->p = a->p - delta > 0 ? a->p - delta : 0;
		peer_unlink(n, &a->b2, key);
		a->ghost_hits++;
		break;
	}

	if (size > a->capacity)
		return 0;	/* too large: not inserted (the ghost is gone) */
	peer_set_size(n, key, size);
	while (a->t1.bytes + a->t2.bytes + size > a->capacity) {
		if (where != ARC_OUT) {
			arc_replace(a, where == ARC_B2);
		} else if (a->t1.bytes + a->b1.bytes + size > a->capacity) {
			/* case IV (A): L1 holds c keys */
			if (a->b1.len > 0) {
				peer_pop_tail(n, &a->b1);
				arc_replace(a, false);
			} else {
				peer_pop_tail(n, &a->t1);
				a->evicted++;
			}
		} else {
			/* case IV (B) */
			if (a->t1.bytes + a->b1.bytes + a->t2.bytes +
			    a->b2.bytes >= 2 * a->capacity && a->b2.len > 0)
				peer_pop_tail(n, &a->b2);
			arc_replace(a, false);
		}
	}
	if (where != ARC_OUT)
		peer_push_head(n, &a->t2, key, ARC_T2);
	else
		peer_push_head(n, &a->t1, key, ARC_T1);
	return 0;
}

static size_t arc_counters(struct sim_cache *c, struct sim_counter *out,
			   size_t max)
{
	struct arc_cache *a = (struct arc_cache *)c;

	if (max < 3)
		return 0;
	out[0].name = "evicted";
	out[0].value = a->evicted;
	out[1].name = "ghost_hits";
	out[1].value = a->ghost_hits;
	out[2].name = "p";
	out[2].value = (uint64_t)a->p;
	return 3;
}

const struct sim_policy sim_policy_arc = {
	.name = "arc",
	.help = "ARC (FAST '03): T1, T2, ghosts B1, B2, adaptive target p",
	.create = arc_create,
	.access = arc_access,
	.counters = arc_counters,
	.destroy = arc_destroy,
};

/* ------------------------------------------------------------------------- */
/* 2q                                                                         */
/* ------------------------------------------------------------------------- */

/*
 * 2Q, the full version (Johnson and Shasha, "2Q: A Low Overhead High
 * Performance Buffer Management Replacement Algorithm", VLDB '94): a new key
 * enters A1in, a FIFO; a hit there changes nothing.  When the cache is full
 * and A1in holds more than Kin keys, A1in's tail leaves the cache for the
 * head of A1out, a FIFO of at most Kout keys (ghosts); otherwise Am, an LRU,
 * loses its tail.  A miss on a key of A1out puts it at Am's head; a hit in
 * Am moves it there.
 *
 * libCacheSim (Ain-size-ratio=0.25, Aout-size-ratio=0.5): Kin and Kout are
 * the capacity times 0.25 and 0.5 rounded down; Am is a cache of its own of
 * capacity - Kin keys that evicts its own tail when full (which never
 * happens: no key reaches Am before the cache has filled, and from then on
 * A1in holds at least Kin keys); with Kin = 0 (capacities below 4) nothing
 * is ever cached.
 *
 * Byte mode, libCacheSim's: Kin, Kout and Am's capacity are in bytes; an
 * object larger than Kin is not cached; a key leaving A1in enters A1out only
 * if its size is at most Kout, A1out dropping its oldest keys until it fits;
 * A1in may hold more than Kin bytes (only eviction trims it).
 */
enum { TWOQ_OUT, TWOQ_AIN, TWOQ_AOUT, TWOQ_AM };

struct twoq_cache {
	struct sim_cache base;
	struct peer_nodes nodes;
	struct peer_list ain, aout, am;
	uint64_t capacity;
	uint64_t kin, kout, am_capacity;
	uint64_t evicted, ghost_hits;
};

static void twoq_destroy(struct sim_cache *c)
{
	struct twoq_cache *q = (struct twoq_cache *)c;

	if (!q)
		return;
	peer_nodes_free(&q->nodes);
	free(q);
}

static struct sim_cache *twoq_create(const struct sim_policy *p,
				     uint64_t capacity, uint32_t nr_keys,
				     const uint64_t *keys, bool bytes,
				     char *err, size_t errlen)
{
	struct peer_nodes *n;
	struct twoq_cache *q = peer_cache_alloc(p, sizeof(*q), &n,
			offsetof(struct twoq_cache, nodes), nr_keys, bytes, err,
			errlen);

	if (!q)
		return NULL;
	peer_list_init(&q->ain);
	peer_list_init(&q->aout);
	peer_list_init(&q->am);
	q->capacity = capacity;
	q->kin = (uint64_t)((double)capacity * 0.25);
	q->kout = (uint64_t)((double)capacity * 0.5);
	q->am_capacity = capacity - q->kin;
	return &q->base;
}

static int twoq_access(struct sim_cache *c, uint32_t key, uint32_t size)
{
	struct twoq_cache *q = (struct twoq_cache *)c;
	struct peer_nodes *n = &q->nodes;
	bool ghost = false;
	uint32_t k;

	switch (n->where[key]) {
	case TWOQ_AIN:
		return 1;
	case TWOQ_AM:
		peer_move_head(n, &q->am, key);
		return 1;
	case TWOQ_AOUT:
		peer_unlink(n, &q->aout, key);
		ghost = true;
		q->ghost_hits++;
		break;
	}
	/* libCacheSim: an object must fit in A1in (none does when Kin = 0) */
	if (size > q->kin || size > q->capacity)
		return 0;
	peer_set_size(n, key, size);

	/* reclaimfor() */
	while (q->ain.bytes + q->am.bytes + size > q->capacity) {
		if (q->ain.bytes > q->kin) {
			k = peer_pop_tail(n, &q->ain);
			if (peer_size(n, k) <= q->kout) {
				while (q->aout.bytes + peer_size(n, k) >
				       q->kout)
					peer_pop_tail(n, &q->aout);
				peer_push_head(n, &q->aout, k, TWOQ_AOUT);
			}
		} else {
			peer_pop_tail(n, &q->am);
		}
		q->evicted++;
	}
	if (ghost) {
		while (q->am.bytes + size > q->am_capacity) {
			peer_pop_tail(n, &q->am);
			q->evicted++;
		}
		peer_push_head(n, &q->am, key, TWOQ_AM);
	} else {
		peer_push_head(n, &q->ain, key, TWOQ_AIN);
	}
	return 0;
}

static size_t twoq_counters(struct sim_cache *c, struct sim_counter *out,
			    size_t max)
{
	struct twoq_cache *q = (struct twoq_cache *)c;

	if (max < 2)
		return 0;
	out[0].name = "evicted";
	out[0].value = q->evicted;
	out[1].name = "ghost_hits";
	out[1].value = q->ghost_hits;
	return 2;
}

const struct sim_policy sim_policy_2q = {
	.name = "2q",
	.help = "2Q (VLDB '94): A1in FIFO 25 %, ghost A1out 50 %, Am LRU",
	.create = twoq_create,
	.access = twoq_access,
	.counters = twoq_counters,
	.destroy = twoq_destroy,
};

/* ------------------------------------------------------------------------- */
/* slru                                                                       */
/* ------------------------------------------------------------------------- */

/*
 * Segmented LRU (Karedla, Love and Wherry, "Caching Strategies to Improve
 * Disk System Performance", IEEE Computer, 1994), with n equal segments,
 * each an LRU list: a new key enters segment 0 (probationary); a hit moves a
 * key to the head of the next segment up (the last segment: to its own
 * head); a segment over its size passes its tail down to the head of the
 * segment below, and segment 0's tail leaves the cache.
 *
 * libCacheSim (n-seg=4, or 2): each segment holds capacity / n keys,
 * rounded down, and the cache capacity keys; a new key goes to the lowest
 * segment that has room (so, while the cache fills, to upper segments too),
 * and to segment 0 when none has, even over segment 0's size; eviction takes
 * the tail of the lowest non-empty segment.  When a hit's cascade reaches
 * segment 0 while it holds more than its size (the rounding's remainder),
 * segment 0 is evicted down to its size, leaving room that the next misses
 * refill (counter hit_evicted).
 *
 * Byte mode, libCacheSim's: the segments and the cache hold bytes; an
 * object larger than a segment is not cached; a new object goes to the
 * lowest segment with room for its size.
 */
#define SLRU_MAX_SEG 16

struct slru_config {
	unsigned nr_seg;
};

struct slru_cache {
	struct sim_cache base;
	struct peer_nodes nodes;	/* where[]: segment + 1 */
	struct peer_list seg[SLRU_MAX_SEG];
	unsigned nr_seg;
	uint64_t capacity, seg_size, used;
	uint64_t evicted, promoted, demoted;
	uint64_t hit_evicted;	/* evicted by a hit's cascade (libCacheSim) */
};

static void slru_destroy(struct sim_cache *c)
{
	struct slru_cache *s = (struct slru_cache *)c;

	if (!s)
		return;
	peer_nodes_free(&s->nodes);
	free(s);
}

static struct sim_cache *slru_create(const struct sim_policy *p,
				     uint64_t capacity, uint32_t nr_keys,
				     const uint64_t *keys, bool bytes,
				     char *err, size_t errlen)
{
	const struct slru_config *cfg = p->config;
	struct peer_nodes *n;
	struct slru_cache *s = peer_cache_alloc(p, sizeof(*s), &n,
			offsetof(struct slru_cache, nodes), nr_keys, bytes, err,
			errlen);
	unsigned i;

	if (!s)
		return NULL;
	s->nr_seg = cfg->nr_seg;
	for (i = 0; i < s->nr_seg; i++)
		peer_list_init(&s->seg[i]);
	s->capacity = capacity;
	s->seg_size = capacity / s->nr_seg;
	return &s->base;
}

/* Evict the tail of the lowest non-empty segment. */
static void slru_evict(struct slru_cache *s)
{
	unsigned i;

	for (i = 0; i < s->nr_seg; i++) {
		if (s->seg[i].len) {
			uint32_t k = peer_pop_tail(&s->nodes, &s->seg[i]);

			s->used -= peer_size(&s->nodes, k);
			s->evicted++;
			return;
		}
	}
}

/* Segment @i is over its size: pass its tail down (or evict it). */
static void slru_cool(struct slru_cache *s, unsigned i)
{
	uint32_t k;

	if (i == 0) {
		slru_evict(s);
		s->hit_evicted++;
		return;
	}
	k = peer_pop_tail(&s->nodes, &s->seg[i]);
	peer_push_head(&s->nodes, &s->seg[i - 1], k, (uint8_t)i);
	s->demoted++;
	while (s->seg[i - 1].bytes > s->seg_size)
		slru_cool(s, i - 1);
}

static int slru_access(struct sim_cache *c, uint32_t key, uint32_t size)
{
	struct slru_cache *s = (struct slru_cache *)c;
	struct peer_nodes *n = &s->nodes;
	unsigned where = n->where[key], i;

	if (where) {
		i = where - 1;
		if (i == s->nr_seg - 1) {
			peer_move_head(n, &s->seg[i], key);
			return 1;
		}
		peer_unlink(n, &s->seg[i], key);
		peer_push_head(n, &s->seg[i + 1], key, (uint8_t)(i + 2));
		s->promoted++;
		while (s->seg[n->where[key] - 1].bytes > s->seg_size)
			slru_cool(s, n->where[key] - 1);
		return 1;
	}
	/* libCacheSim: an object must fit in a segment (none when 0) */
	if (size > s->seg_size || size > s->capacity)
		return 0;
	while (s->used + size > s->capacity)
		slru_evict(s);
	for (i = 0; i < s->nr_seg; i++) {
		if (s->seg[i].bytes + size <= s->seg_size)
			break;
	}
	if (i == s->nr_seg)
		i = 0;
	peer_set_size(n, key, size);
	peer_push_head(n, &s->seg[i], key, (uint8_t)(i + 1));
	s->used += size;
	return 0;
}

static size_t slru_counters(struct sim_cache *c, struct sim_counter *out,
			    size_t max)
{
	struct slru_cache *s = (struct slru_cache *)c;

	if (max < 4)
		return 0;
	out[0].name = "evicted";
	out[0].value = s->evicted;
	out[1].name = "promoted";
	out[1].value = s->promoted;
	out[2].name = "demoted";
	out[2].value = s->demoted;
	out[3].name = "hit_evicted";
	out[3].value = s->hit_evicted;
	return 4;
}

static const struct slru_config slru4_config = { .nr_seg = 4 };
static const struct slru_config slru2_config = { .nr_seg = 2 };

const struct sim_policy sim_policy_slru = {
	.name = "slru",
	.help = "segmented LRU, 4 equal segments",
	.create = slru_create,
	.access = slru_access,
	.counters = slru_counters,
	.destroy = slru_destroy,
	.config = &slru4_config,
};

const struct sim_policy sim_policy_slru2 = {
	.name = "slru:n-seg=2",
	.help = "segmented LRU, 2 equal segments",
	.create = slru_create,
	.access = slru_access,
	.counters = slru_counters,
	.destroy = slru_destroy,
	.config = &slru2_config,
};
