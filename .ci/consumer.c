/* SPDX-License-Identifier: MIT */
/* An out-of-tree program that uses the installed library. */
#include <stdio.h>
#include <string.h>

#include <reclaim/reclaim.h>

struct entry {
	int key;
	struct rcl_lru_node lru;
};

static enum rcl_evict_status evict(struct rcl_lru_node *node,
				   struct rcl_evict_control *ctl)
{
	(void)ctl;
	rcl_container_of(node, struct entry, lru)->key = -1;
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops ops = { .evict = evict };

int main(void)
{
	struct rcl_lruvec_config cfg = { .ops = &ops };
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE, .nr_to_scan = 2 };
	struct rcl_lruvec lv;
	struct entry e[3] = { { 0, RCL_LRU_NODE_INIT }, { 1, RCL_LRU_NODE_INIT },
			      { 2, RCL_LRU_NODE_INIT } };
	int i;

	if (strcmp(rcl_version(), RCL_VERSION_STRING) != 0 ||
	    rcl_version_number() != RCL_VERSION_NUMBER) {
		fprintf(stderr, "version mismatch: %s\n", rcl_version());
		return 1;
	}
	if (rcl_lruvec_init(&lv, &cfg) != 0)
		return 1;
	for (i = 0; i < 3; i++)
		if (rcl_lruvec_add(&lv, &e[i].lru, RCL_LRU_FILE, 1, 0) != 0)
			return 1;
	if (rcl_lruvec_shrink_inactive(&lv, &sc) != 0 || sc.nr_freed != 2 ||
	    e[0].key != -1 || e[1].key != -1 || e[2].key != 2)
		return 1;
	if (rcl_lruvec_del(&lv, &e[2].lru) != 0 || rcl_lruvec_destroy(&lv) != 0)
		return 1;
	printf("consumer: libreclaim %s works\n", rcl_version());
	return 0;
}
