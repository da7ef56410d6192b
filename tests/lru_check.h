/* SPDX-License-Identifier: MIT */
/*
 * Test helper: walks an lruvec's lists through its (public but private-by-
 * convention) members and checks the structural invariants:
 *  - each list is a well-formed circular doubly linked list;
 *  - every node on list L carries the LISTED state, the lruvec's id and the
 *    flags that select list L;
 *  - the list's object count and weight equal its contents.
 * Returns the number of listed nodes, or a negative value (with a message on
 * stderr) on the first violation.  Call it with no other thread using the
 * lruvec.
 */
#ifndef RECLAIM_TESTS_LRU_CHECK_H
#define RECLAIM_TESTS_LRU_CHECK_H

#include <stdatomic.h>
#include <stdio.h>

#include <reclaim/lruvec.h>

static inline unsigned lru_check_expected_list(unsigned f)
{
	if (f & RCL_LRU_F_UNEVICTABLE)
		return RCL_LRU_UNEVICTABLE;
	return RCL_LRU_LIST(f & 3u, f & RCL_LRU_F_ACTIVE);
}

static inline long lru_check_invariants(struct rcl_lruvec *lv)
{
	long total = 0;
	unsigned l;

	for (l = 0; l < RCL_LRU_NR_LISTS; l++) {
		struct rcl_lru_node *head = &lv->__lists[l].head;
		struct rcl_lru_node *n, *prev = head;
		uint64_t nr = 0, weight = 0, cw;
		size_t cnr;

		for (n = head->__next; n != head; prev = n, n = n->__next) {
			unsigned f = atomic_load(&n->__flags);

			if (n->__prev != prev) {
				fprintf(stderr, "list %u: broken prev link\n", l);
				return -1;
			}
			if (!(f & RCL_LRU_F_LISTED) ||
			    (f & (RCL_LRU_F_PENDING | RCL_LRU_F_ISOLATED))) {
				fprintf(stderr, "list %u: node state %#x\n", l, f);
				return -1;
			}
			if ((f >> 16) != rcl_lruvec_id(lv)) {
				fprintf(stderr, "list %u: node of lruvec %u\n", l,
					f >> 16);
				return -1;
			}
			if (lru_check_expected_list(f) != l) {
				fprintf(stderr, "list %u: node flags %#x say list %u\n",
					l, f, lru_check_expected_list(f));
				return -1;
			}
			nr++;
			weight += n->__weight;
			if (nr > (1u << 30)) {
				fprintf(stderr, "list %u: cycle\n", l);
				return -1;
			}
		}
		if (head->__prev != prev) {
			fprintf(stderr, "list %u: broken tail link\n", l);
			return -1;
		}
		cnr = rcl_lruvec_count(lv, l, &cw);
		if (cnr != nr || cw != weight) {
			fprintf(stderr,
				"list %u: count %zu/%llu but contents %llu/%llu\n",
				l, cnr, (unsigned long long)cw,
				(unsigned long long)nr,
				(unsigned long long)weight);
			return -1;
		}
		total += (long)nr;
	}
	return total;
}

/* Is @n on list @l of @lv?  (Linear walk.) */
static inline int lru_check_on_list(struct rcl_lruvec *lv, unsigned l,
				    const struct rcl_lru_node *n)
{
	struct rcl_lru_node *head = &lv->__lists[l].head, *p;

	for (p = head->__next; p != head; p = p->__next)
		if (p == n)
			return 1;
	return 0;
}

/* Position of @n counted from the tail of list @l (0 = tail), or -1. */
static inline long lru_check_pos_from_tail(struct rcl_lruvec *lv, unsigned l,
					   const struct rcl_lru_node *n)
{
	struct rcl_lru_node *head = &lv->__lists[l].head, *p;
	long i = 0;

	for (p = head->__prev; p != head; p = p->__prev, i++)
		if (p == n)
			return i;
	return -1;
}

#endif /* RECLAIM_TESTS_LRU_CHECK_H */
