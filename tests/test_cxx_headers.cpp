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

// Trees of domains: the config's tree members, the limits and events
// structs, and the six functions, called from C++.
static int domain_tree_from_cxx()
{
	struct rcl_domain_config rc = {};
	struct rcl_domain_config cc = {};
	struct rcl_domain_limits lim = {};
	struct rcl_domain_events ev = {};
	struct rcl_vmstat vm = {};
	struct rcl_domain *root = nullptr;
	struct rcl_domain *child = nullptr;
	uint64_t emin = 0, elow = 0;

	rc.budget = 1000;
	rc.flags = RCL_DOMAIN_RECURSIVE_PROT;
	if (rcl_domain_new(&rc, &root) != 0)
		return 1;
	cc.parent = root;
	cc.budget = 0;			// no limit of its own
	cc.limit_high = 800;
	cc.protect_low = 100;
	cc.protect_min = 50;
	if (rcl_domain_new(&cc, &child) != 0)
		return 1;
	if (rcl_domain_parent(child) != root || rcl_domain_parent(root) != nullptr ||
	    rcl_domain_budget(child) != UINT64_MAX)
		return 1;
	lim.limit_high = 900;
	lim.protect_low = 200;
	lim.protect_min = 20;
	if (rcl_domain_set_limits(child, &lim) != 0 ||
	    rcl_domain_limits(child, &lim) != 0 || lim.protect_low != 200)
		return 1;
	if (rcl_domain_charge(child, 10, RCL_CTX_CAPABLE, nullptr) != 0 ||
	    rcl_domain_usage(root) != 10)
		return 1;
	if (rcl_domain_effective_protection(root, child, &emin, &elow) != 0 ||
	    emin != 20 || elow != 200)
		return 1;
	if (rcl_domain_events(child, true, &ev) != 0 || ev.high + ev.max + ev.oom + ev.low != 0 ||
	    rcl_domain_vmstat_subtree(root, &vm) != 0)
		return 1;
	if (rcl_domain_uncharge(child, 10) != 0 || rcl_domain_free(child) != 0 ||
	    rcl_domain_free(root) != 0)
		return 1;
	return RCL_DOMAIN_MAX_DEPTH >= 2 ? 0 : 1;
}

// The batched evict callback: struct rcl_evict_item and ops.evict_batch.
static size_t cxx_batch_items;
static bool cxx_batch_ok = true;

static void cxx_evict_batch(struct rcl_lruvec *lv, void *priv,
			    struct rcl_evict_item *items, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		struct rcl_evict_item &e = items[i];
		struct item *o = rcl_container_of(e.node, struct item, lru);

		if (e.status != RCL_EVICT_BUSY || e.ctl.lruvec != lv ||
		    e.ctl.priv != priv || e.ctl.weight != uint32_t(o->key) ||
		    e.ctl.type != RCL_LRU_FILE || !rcl_shadow_is_valid(e.ctl.shadow))
			cxx_batch_ok = false;
		if (o->key % 2 == 0)
			e.status = RCL_EVICT_FREED;	// odd keys keep the preset
	}
	cxx_batch_items += nr;
}

static int evict_batch_from_cxx()
{
	// C++11 has no designated initialisers: value-initialise, then name
	// the members (C++20 code may write { .evict_batch = ... }).
	struct rcl_lruvec_ops ops = {};
	ops.evict_batch = cxx_evict_batch;
	struct rcl_lruvec_config cfg = {};
	cfg.ops = &ops;
	cfg.priv = &ops;
	struct rcl_evict_item probe = {};
	probe.node = nullptr;
	probe.ctl.flags = RCL_EVICT_REFERENCED;
	probe.status = RCL_EVICT_ACTIVATE;
	struct rcl_lru_shrink_control sc = {};
	sc.type = RCL_LRU_FILE;
	sc.nr_to_scan = 3;
	struct rcl_lruvec lv;
	struct item it[3] = {};

	if (ops.evict != nullptr || probe.status != RCL_EVICT_ACTIVATE)
		return 1;
	if (rcl_lruvec_init(&lv, &cfg) != 0)
		return 1;
	for (int i = 0; i < 3; i++) {
		it[i].key = i + 2;	// weights 2, 3, 4: keys 2 and 4 go
		if (rcl_lruvec_add(&lv, &it[i].lru, RCL_LRU_FILE, uint32_t(i + 2),
				   RCL_LRU_ADD_NOBATCH) != 0)
			return 1;
	}
	if (rcl_lruvec_shrink_inactive(&lv, &sc) != 0 || !cxx_batch_ok ||
	    cxx_batch_items != 3 || sc.nr_freed != 2 || sc.weight_freed != 6 ||
	    sc.nr_rotated != 1)
		return 1;
	if (rcl_lruvec_del(&lv, &it[1].lru) != 0 || rcl_lruvec_destroy(&lv) != 0)
		return 1;
	return 0;
}

int main()
{
	struct rcl_lruvec lv;
	struct item it = {};

	if (objcache_from_cxx() != 0 || pressure_from_cxx() != 0 ||
	    evict_batch_from_cxx() != 0 || domain_tree_from_cxx() != 0)
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
