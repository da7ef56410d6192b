// SPDX-License-Identifier: MIT
// The public headers compile as C++11 and link from C++.
#include <reclaim/reclaim.h>

struct item {
	int key;
	struct rcl_lru_node lru;
};

struct cobj {
	struct rcl_objcache_node node;
	char key[4];
};

static int objcache_from_cxx()
{
	struct rcl_domain_config dc = {};
	struct rcl_objcache_config cc = {};
	struct rcl_domain *d = nullptr;
	struct rcl_objcache *c = nullptr;
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n = nullptr;
	struct cobj o = {};
	struct rcl_objcache_node init = RCL_OBJCACHE_NODE_INIT;

	o.key[0] = 'k';
	dc.budget = 1000;
	if (rcl_domain_new(&dc, &d) != 0 || rcl_objcache_new(d, &cc, &c) != 0)
		return 1;
	if (rcl_objcache_get(c, o.key, 1, &miss) != nullptr)
		return 1;
	if (rcl_objcache_insert(c, &o.node, o.key, 1, 8, RCL_CTX_CAPABLE, &miss,
				&n) != 0)
		return 1;
	if (rcl_container_of(&o.node, struct cobj, node) != &o)
		return 1;
	if (rcl_objcache_put(c, &o.node) != 0 || rcl_objcache_del(c, o.key, 1) != 0)
		return 1;
	if (rcl_objcache_destroy(c) != 0 || rcl_domain_free(d) != 0)
		return 1;
	(void)init;
	return sizeof(struct rcl_objcache_node) == (sizeof(void *) == 8 ? 72 : sizeof(init)) ? 0 : 1;
}

int main()
{
	struct rcl_lruvec lv;
	struct item it = {};

	if (objcache_from_cxx() != 0)
		return 1;

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
