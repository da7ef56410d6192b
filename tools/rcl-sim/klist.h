/* SPDX-License-Identifier: MIT */
/*
 * rcl-sim's key lists: doubly linked lists over a trace's dense key ids,
 * with per-list links (peers_lfu.c's policies, and policies.c's exact LRU
 * and FIFO).
 */
#ifndef RCL_SIM_KLIST_H
#define RCL_SIM_KLIST_H

#include <stdint.h>
#include <stdlib.h>

#define NIL UINT32_MAX

/* ------------------------------------------------------------------------- */
/* Key lists                                                                  */
/* ------------------------------------------------------------------------- */

/*
 * A doubly linked list over keys, with its own links, so that a key can be
 * on several lists at once (LIRS keeps a block on S and on Q).  The head is
 * the newest (most recently inserted or used) key, the tail the oldest.
 * Membership is tracked by the caller.
 */
struct klist {
	uint32_t *prev, *next;
	uint32_t head, tail;
	uint64_t count;
	uint64_t bytes;		/* the sizes of its keys (= count, objects) */
	const uint32_t *size;	/* byte mode: each key's size; NULL: all 1 */
};

static inline uint64_t klist_size(const struct klist *l, uint32_t k)
{
	return l->size ? l->size[k] : 1;
}

static inline int klist_init(struct klist *l, uint32_t nr_keys)
{
	size_t n = nr_keys ? nr_keys : 1;

	l->prev = malloc(n * sizeof(*l->prev));
	l->next = malloc(n * sizeof(*l->next));
	l->head = l->tail = NIL;
	l->count = 0;
	l->bytes = 0;
	l->size = NULL;
	return l->prev && l->next ? 0 : -1;
}

static inline void klist_free(struct klist *l)
{
	free(l->prev);
	free(l->next);
	l->prev = l->next = NULL;
}

static inline void klist_push_head(struct klist *l, uint32_t k)
{
	l->prev[k] = NIL;
	l->next[k] = l->head;
	if (l->head != NIL)
		l->prev[l->head] = k;
	else
		l->tail = k;
	l->head = k;
	l->count++;
	l->bytes += klist_size(l, k);
}

static inline void klist_del(struct klist *l, uint32_t k)
{
	uint32_t p = l->prev[k], n = l->next[k];

	if (p != NIL)
		l->next[p] = n;
	else
		l->head = n;
	if (n != NIL)
		l->prev[n] = p;
	else
		l->tail = p;
	l->count--;
	l->bytes -= klist_size(l, k);
}

static inline void klist_move_head(struct klist *l, uint32_t k)
{
	if (l->head == k)
		return;
	klist_del(l, k);
	klist_push_head(l, k);
}

#endif
