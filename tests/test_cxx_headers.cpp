// SPDX-License-Identifier: MIT
// The public headers compile as C++11 and link from C++.
#include <reclaim/reclaim.h>
#include <reclaim/pressure.h>

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
	dc.charge_stock = 64;
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
	if (rcl_domain_drain_stocks(d) != 0 || rcl_domain_usage(d) != 0)
		return 1;
	if (rcl_objcache_destroy(c) != 0 || rcl_domain_free(d) != 0)
		return 1;
	(void)init;
	return sizeof(struct rcl_objcache_node) == (sizeof(void *) == 8 ? 72 : sizeof(init)) ? 0 : 1;
}

static int pressure_from_cxx()
{
	struct rcl_domain_config dc = {};
	struct rcl_pressure_config pc = {};
	struct rcl_domain *d = nullptr;
	struct rcl_pressure *p = nullptr;
	struct rcl_pressure_stats st = {};
	struct rcl_pressure_source_info si = {};
	struct rcl_memory_sample ms = {};
	enum rcl_pressure_level l = rcl_pressure_level_from_glib(100);
	enum rcl_psource_mode mode = RCL_PSOURCE_MANUAL;
	int src;

	dc.budget = 1000;
	if (rcl_domain_new(&dc, &d) != 0)
		return 1;
	pc.domain = d;
	pc.flags = RCL_PRESSURE_FOLLOW_CGROUP | RCL_PRESSURE_NO_TRIM;
	pc.window_ns = RCL_PRESSURE_WINDOW_DEFAULT_NS;
	pc.grow_pct = RCL_PRESSURE_GROW_PCT_DEFAULT;
	if (rcl_pressure_new(&pc, &p) != 0)
		return 1;
	src = rcl_pressure_add_manual(p);
	if (src != 0 || l != RCL_PRESSURE_SEVERE ||
	    rcl_pressure_level_from_android(80) != RCL_PRESSURE_CRITICAL)
		return 1;
	if (rcl_pressure_notify(p, src, RCL_PRESSURE_MODERATE) != 0 ||
	    rcl_pressure_stats(p, &st) != 0 || st.nr_sources != 1 ||
	    rcl_pressure_source_info(p, src, &si) != 0 || si.mode != mode ||
	    rcl_pressure_memory(p, &ms) != 0 || ms.charged_bytes != 0)
		return 1;
	if (rcl_pressure_level_name(si.level)[0] == '\0' ||
	    rcl_pressure_source_mode_name(si.mode)[0] == '\0' ||
	    sizeof(si.path) != 256 || RCL_PRESSURE_MAX_SOURCES < 1)
		return 1;
	if (rcl_pressure_free(p) != 0 || rcl_domain_free(d) != 0)
		return 1;
	return 0;
}

int main()
{
	struct rcl_lruvec lv;
	struct item it = {};

	if (objcache_from_cxx() != 0 || pressure_from_cxx() != 0)
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
