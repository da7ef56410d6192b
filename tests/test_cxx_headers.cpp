// SPDX-License-Identifier: MIT
// The public headers compile as C++11 and link from C++.
#include <reclaim/reclaim.h>

struct item {
	int key;
	struct rcl_lru_node lru;
};

int main()
{
	struct rcl_lruvec lv;
	struct item it = {};

	if (rcl_lruvec_init(&lv, nullptr) != 0)
		return 1;
	if (rcl_lruvec_add(&lv, &it.lru, RCL_LRU_FILE, 1, RCL_LRU_ADD_NOBATCH) != 0)
		return 1;
	if (rcl_container_of(&it.lru, struct item, lru) != &it)
		return 1;
	if (rcl_lruvec_del(&lv, &it.lru) != 0 || rcl_lruvec_destroy(&lv) != 0)
		return 1;
	return sizeof(struct rcl_lru_node) <= 24 ? 0 : 1;
}
