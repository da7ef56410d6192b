/* SPDX-License-Identifier: MIT */
/*
 * Linked against the *shared* library: touches every exported symbol (a
 * missing export fails the link), checks that internals stay hidden, and
 * that the version the headers promise is the version that runs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

static enum rcl_evict_status api_evict(struct rcl_lru_node *node,
				       struct rcl_evict_control *ctl)
{
	(void)node;
	(void)ctl;
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops api_ops = { .evict = api_evict };

static void test_api_version(void **state)
{
	(void)state;
	assert_string_equal(rcl_version(), RCL_VERSION_STRING);
	assert_int_equal(rcl_version_number(), RCL_VERSION_NUMBER);
}

static void api_refusal_fn(void *arg, const char *func, int err,
			   const char *rule)
{
	(void)func;
	(void)rule;
	*(int *)arg = err;
}

static void test_api_refusal(void **state)
{
	static int seen;
	static const struct rcl_refusal_log log = { api_refusal_fn, &seen };
	struct rcl_lruvec_config cfg = { .ops = &api_ops };
	struct rcl_lruvec lv;
	struct rcl_lru_node a;

	(void)state;
	rcl_clear_refusal();
	assert_null(rcl_last_refusal());
	assert_int_equal(rcl_set_refusal_log(&log), 0);
	rcl_lru_node_init(&a);
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &a, 0, 1, RCL_LRU_ADD_NOBATCH), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &a, 0, 1, 0), -EBUSY);
	assert_non_null(rcl_last_refusal());
	assert_int_equal(seen, -EBUSY);
	assert_int_equal(rcl_set_refusal_log(NULL), 0);
	assert_int_equal(rcl_lruvec_del(&lv, &a), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	rcl_clear_refusal();
}

static void test_api_every_lruvec_symbol(void **state)
{
	struct rcl_lruvec_config cfg = { .ops = &api_ops };
	struct rcl_lruvec lv;
	struct rcl_lru_node a, b;
	struct rcl_lru_isolated iso;
	struct rcl_lru_shrink_control sc = { .type = 0, .nr_to_scan = 1 };
	struct rcl_lruvec_type_stats st;
	uint64_t w;

	(void)state;
	rcl_lru_node_init(&a);
	rcl_lru_node_init(&b);
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	assert_int_not_equal(rcl_lruvec_id(&lv), 0);
	assert_int_equal(rcl_lruvec_nr_types(&lv), 2);
	assert_string_equal(rcl_lruvec_type_name(&lv, 0), "file");
	assert_int_equal(rcl_lruvec_type_cost(&lv, 1), 2);

	assert_int_equal(rcl_lruvec_add(&lv, &a, 0, 10, 0), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &b, 0, 20, RCL_LRU_ADD_NOBATCH), 0);
	rcl_lru_drain_local();
	assert_int_equal(rcl_lruvec_drain(&lv), 0);
	assert_int_equal(rcl_lruvec_count(&lv, RCL_LRU_LIST(0, 0), &w), 2);
	assert_int_equal(w, 30);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &a), 0);
	assert_true(rcl_lru_node_flags(&a) & RCL_LRU_F_REFERENCED);
	assert_int_equal(rcl_lru_node_type(&a), 0);
	assert_int_equal(rcl_lruvec_rotate(&lv, &a), 0);
	assert_int_equal(rcl_lruvec_deactivate(&lv, &a), 0);
	assert_int_equal(rcl_lruvec_mark_unevictable(&lv, &a), 0);
	assert_int_equal(rcl_lruvec_unmark_unevictable(&lv, &a), 0);
	assert_int_equal(rcl_lruvec_inactive_ratio(&lv, 0), 1);
	assert_false(rcl_lruvec_inactive_is_low(&lv, 0));

	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&lv, RCL_LRU_LIST(0, 0), 2, &iso), 0);
	assert_int_equal(iso.nr, 2);
	assert_int_equal(rcl_lruvec_nr_isolated(&lv), 2);
	assert_non_null(rcl_lru_isolated_next(&iso, NULL));
	assert_int_equal(rcl_lru_isolated_set_active(&iso, &a, true), 0);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &b), 0);
	assert_int_equal(rcl_lruvec_putback(&lv, &iso), 0);

	assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), 0);
	assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
	assert_int_equal(rcl_lruvec_stats(&lv, 0, &st), 0);
	assert_int_equal(rcl_lruvec_del_wait(&lv, &a), 0);
	assert_int_equal(rcl_lruvec_del(&lv, &a), -ENOENT);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

static unsigned long api_count(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 1000;
}

static unsigned long api_scan(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	(void)s;
	return sc->nr_to_scan;
}

static const struct rcl_shrinker_ops api_shrinker_ops = {
	.count_objects = api_count,
	.scan_objects = api_scan,
};

static void test_api_every_shrinker_symbol(void **state)
{
	struct rcl_shrinker_registry_config rc = {
		.policy = RCL_SHRINK_POLICY_KERNEL_MODERN,
	};
	struct rcl_shrinker_config cfg = { .ops = &api_shrinker_ops,
					   .name = "api", .seeks = 2 };
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker *s;
	struct rcl_shrink_result res = { 0 };
	struct rcl_shrinker_stats st;
	unsigned long v, w;

	(void)state;
	assert_string_equal(rcl_shrink_policy_name(RCL_SHRINK_POLICY_KERNEL_2014),
			    "kernel-2014");
	assert_int_equal(rcl_shrinker_registry_new(&rc, &reg), 0);
	assert_int_equal(rcl_shrinker_registry_policy(reg),
			 RCL_SHRINK_POLICY_KERNEL_MODERN);
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	assert_string_equal(rcl_shrinker_name(s), "api");
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(rcl_shrinker_registry_shrink(reg, 0, 0, RCL_CTX_CAPABLE,
						      &res), 0);
	assert_int_equal(res.scanned, 1920);	/* 15 batches of 2000 */
	assert_int_equal(rcl_shrinker_shrink(s, 0, 12, RCL_CTX_CAPABLE, &res), 0);
	assert_int_equal(rcl_shrinker_stats(s, &st), 0);
	assert_int_equal(st.calls, 2);
	assert_int_equal(rcl_shrinker_backlog(s, 0, &v), 0);
	assert_int_equal(rcl_shrinker_debug_count(s, 0, 0, &v), 0);
	assert_int_equal(v, 1000);
	assert_int_equal(rcl_shrinker_debug_scan(s, 0, 7, 0, &v, &w), 0);
	assert_int_equal(v, 7);
	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
}

static enum rcl_evict_status api_free_evict(struct rcl_lru_node *node,
					    struct rcl_evict_control *ctl)
{
	rcl_domain_uncharge(ctl->priv, ctl->weight);
	rcl_lru_node_init(node);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops api_free_ops = { .evict = api_free_evict };

static void test_api_every_domain_scan_clock_symbol(void **state)
{
	struct rcl_fake_clock *fc;
	struct rcl_domain_config dc = { .budget = 100000 };
	struct rcl_domain *d;
	struct rcl_lruvec_config lc = { .ops = &api_free_ops };
	struct rcl_lruvec lv;
	struct rcl_lru_node nodes[64];
	struct rcl_watermarks wm;
	struct rcl_reclaim_result rr;
	struct rcl_vmstat vm;
	struct rcl_scan_control sc = { .nr_to_reclaim = 1, .priority = 0,
					.swappiness = 100 };
	uint64_t targets[RCL_LRU_NR_LISTS], over;
	char buf[64];
	unsigned i;

	(void)state;
	assert_non_null(rcl_clock_monotonic());
	assert_true(rcl_clock_monotonic()->now(NULL) > 0);
	assert_int_equal(rcl_fake_clock_new(5, &fc), 0);
	assert_int_equal(rcl_fake_clock_clock(fc)->now(rcl_fake_clock_clock(fc)->ctx), 5);
	rcl_fake_clock_advance(fc, 10);
	assert_int_equal(rcl_fake_clock_waiters(fc), 0);
	dc.clock = rcl_fake_clock_clock(fc);

	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	lc.priv = d;
	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	assert_non_null(rcl_domain_registry(d));
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&nodes[i]);
		assert_int_equal(rcl_domain_charge(d, 1000, RCL_CTX_CAPABLE, &over), 0);
		assert_int_equal(rcl_lruvec_add(&lv, &nodes[i], 0, 1000,
						RCL_LRU_ADD_NOBATCH), 0);
	}
	assert_int_equal(rcl_domain_usage(d), 64000);
	assert_int_equal(rcl_domain_budget(d), 100000);
	assert_int_equal(rcl_domain_watermarks(d, &wm), 0);
	assert_int_equal(rcl_domain_set_watermarks(d, &wm), 0);
	assert_int_equal(rcl_domain_set_swappiness(d, 60), 0);
	assert_int_equal(rcl_scan_targets(&lv, 0, 100, targets), 0);
	assert_int_equal(rcl_lruvec_note_cost(&lv, 0, 1), 0);
	assert_int_equal(rcl_lruvec_cost(&lv, 0), 16);	/* 32 > 64 / 4: halved */
	assert_int_equal(rcl_scan_lruvec(&lv, &sc), 0);
	assert_int_equal(rcl_domain_reclaim(d, 4, RCL_CTX_CAPABLE, &rr), 0);
	assert_int_equal(rcl_domain_set_budget(d, 50000), 0);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	assert_int_equal(rcl_domain_wakeup(d), 0);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	assert_int_equal(rcl_domain_vmstat(d, &vm), 0);
	assert_true(vm.allocstall >= 1);
	assert_true(rcl_domain_vmstat_format(d, buf, sizeof(buf)) > 0);
	for (i = 0; i < 64; i++)
		if (rcl_lruvec_del(&lv, &nodes[i]) == 0)
			assert_int_equal(rcl_domain_uncharge(d, 1000), 0);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	rcl_fake_clock_free(fc);
}

static int api_walk(struct rcl_objcache_node *n, void *arg)
{
	(void)n;
	++*(int *)arg;
	return 0;
}

static void test_api_every_objcache_symbol(void **state)
{
	struct rcl_domain_config dc = { .budget = 1 << 20 };
	struct rcl_objcache_config cc = { .nr_shards = 2 };
	struct rcl_domain *d;
	struct rcl_objcache *c;
	struct rcl_objcache_node nodes[2], *n;
	struct rcl_objcache_miss miss;
	struct rcl_objcache_stats st;
	static const char keys[2][2] = { "a", "b" };
	size_t len;
	int seen = 0;

	(void)state;
	rcl_objcache_node_init(&nodes[0]);
	rcl_objcache_node_init(&nodes[1]);
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	assert_int_equal(rcl_objcache_new(d, &cc, &c), 0);
	assert_int_equal(rcl_objcache_nr_shards(c), 2);
	assert_non_null(rcl_objcache_lruvec(c, 1));
	assert_null(rcl_objcache_get(c, keys[0], 1, &miss));
	assert_int_equal(rcl_objcache_insert(c, &nodes[0], keys[0], 1, 10,
					     RCL_CTX_CAPABLE, &miss, NULL), 0);
	assert_int_equal(rcl_objcache_insert(c, &nodes[1], keys[1], 1, 20,
					     RCL_CTX_CAPABLE, NULL, NULL), 0);
	assert_ptr_equal(rcl_objcache_node_key(&nodes[0], &len), keys[0]);
	assert_int_equal(rcl_objcache_mark_dirty(c, &nodes[0]), 0);
	assert_non_null(rcl_objcache_writeback_ops());
	assert_int_equal(rcl_objcache_flusher_start(NULL, 0), -EINVAL);
	assert_int_equal(rcl_domain_writeback_all(d, rcl_objcache_writeback_ops(),
						  NULL, NULL), 0);
	n = rcl_objcache_get(c, keys[0], 1, NULL);
	assert_ptr_equal(n, &nodes[0]);
	assert_int_equal(rcl_objcache_put(c, n), 0);
	assert_int_equal(rcl_objcache_put(c, &nodes[0]), 0);
	assert_int_equal(rcl_objcache_for_each(c, api_walk, &seen), 0);
	assert_int_equal(seen, 2);
	assert_int_equal(rcl_objcache_stats(c, &st), 0);
	assert_int_equal(st.objects, 2);
	assert_int_equal(rcl_objcache_del_node(c, &nodes[1]), 0);
	assert_int_equal(rcl_objcache_put(c, &nodes[1]), 0);
	assert_int_equal(rcl_objcache_del(c, keys[0], 1), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_drain_stocks(d), 0);
	assert_int_equal(rcl_objcache_destroy(c), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void api_put(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int api_rm(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int api_trims;

static void api_trim(void *priv)
{
	++*(int *)priv;
}

/* The 19 functions of pressure.h, on a fake clock and a fake cgroup. */
static void test_api_every_pressure_symbol(void **state)
{
	struct rcl_domain_config dc = { .budget = 100000 };
	struct rcl_lruvec_config lc = { .ops = &api_free_ops };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_fake_clock *fc;
	struct rcl_domain *d;
	struct rcl_lruvec lv;
	struct rcl_lru_node nodes[64];
	struct rcl_pressure *p;
	struct rcl_pressure_stats st;
	struct rcl_pressure_source_info si;
	struct rcl_memory_sample ms;
	char dir[64], psi[128], cg[128];
	unsigned i;
	int m;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rcl-api-XXXXXX");
	assert_non_null(mkdtemp(dir));
	api_put(dir, "psi", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
	snprintf(psi, sizeof(psi), "%s/psi", dir);
	snprintf(cg, sizeof(cg), "%s/cg", dir);
	assert_int_equal(mkdir(cg, 0755), 0);
	api_put(cg, "memory.current", "5000000\n");
	api_put(cg, "memory.max", "max\n");
	api_put(cg, "memory.high", "max\n");
	api_put(cg, "memory.stat", "anon 4000000\ninactive_file 1000000\n");
	api_put(cg, "memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");

	assert_int_equal(rcl_pressure_level_from_glib(100), RCL_PRESSURE_SEVERE);
	assert_int_equal(rcl_pressure_level_from_android(80), RCL_PRESSURE_CRITICAL);
	assert_string_equal(rcl_pressure_level_name(RCL_PRESSURE_MODERATE), "moderate");
	assert_string_equal(rcl_pressure_source_mode_name(RCL_PSOURCE_PSI_POLL),
			    "psi-poll");

	assert_int_equal(rcl_fake_clock_new(1000 * RCL_NSEC_PER_SEC, &fc), 0);
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	lc.priv = d;
	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&nodes[i]);
		assert_int_equal(rcl_domain_charge(d, 1000, RCL_CTX_CAPABLE, NULL), 0);
		assert_int_equal(rcl_lruvec_add(&lv, &nodes[i], 0, 1000,
						RCL_LRU_ADD_NOBATCH), 0);
	}
	pc.domain = d;
	pc.clock = rcl_fake_clock_clock(fc);
	pc.trim = api_trim;
	pc.trim_priv = &api_trims;
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	assert_int_equal(rcl_pressure_add_psi(p, psi), 0);
	assert_int_equal(rcl_pressure_add_cgroup(p, cg, 0), 1);
	assert_int_equal(rcl_pressure_add_systemd(p, "/dev/null", NULL), 2);
	m = rcl_pressure_add_manual(p);
	assert_int_equal(m, 3);
	assert_int_equal(rcl_pressure_notify(p, m, RCL_PRESSURE_CRITICAL), 0);
	assert_int_equal(rcl_domain_budget(d), 32000);	/* 64000 / 2 */
	assert_true(api_trims <= 1);
	rcl_fake_clock_advance(fc, RCL_NSEC_PER_SEC);
	assert_int_equal(rcl_pressure_dispatch(p), 0);
	assert_int_equal(rcl_pressure_next_deadline(p), 1002 * RCL_NSEC_PER_SEC);
	assert_int_equal(rcl_pressure_stats(p, &st), 0);
	assert_int_equal(st.nr_sources, 4);
	assert_int_equal(st.actions, 1);
	assert_int_equal(rcl_pressure_source_info(p, 1, &si), 0);
	assert_int_equal(si.mode, RCL_PSOURCE_CGROUP_V2);
	assert_int_equal(rcl_pressure_memory(p, &ms), 0);
	assert_int_equal(ms.cgroup_working_set_bytes, 4000000);
	assert_true(rcl_pressure_fd(p) >= 0);
	assert_int_equal(rcl_pressure_start(p), 0);
	assert_int_equal(rcl_pressure_stop(p), 0);
	assert_int_equal(rcl_domain_free(d), -EBUSY);	/* the monitor holds it */
	assert_int_equal(rcl_pressure_free(p), 0);

	for (i = 0; i < 64; i++)
		if (rcl_lruvec_del(&lv, &nodes[i]) == 0)
			assert_int_equal(rcl_domain_uncharge(d, 1000), 0);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	rcl_fake_clock_free(fc);
	assert_int_equal(nftw(dir, api_rm, 8, FTW_DEPTH | FTW_PHYS), 0);
}

/* The six functions of trees of domains (domain.h, issue #17). */
static void test_api_every_domain_tree_symbol(void **state)
{
	struct rcl_domain_config rc = { .budget = 100000,
					.flags = RCL_DOMAIN_RECURSIVE_PROT };
	struct rcl_domain_config cc = { .budget = 50000, .limit_high = 40000,
					.protect_low = 2000, .protect_min = 1000 };
	struct rcl_domain_limits lim = { .limit_high = 30000,
					 .protect_low = 800, .protect_min = 500 };
	struct rcl_domain_limits got;
	struct rcl_domain_events ev;
	struct rcl_vmstat vm;
	struct rcl_domain *root, *child;
	uint64_t emin = 1, elow = 1;

	(void)state;
	assert_true(RCL_DOMAIN_MAX_DEPTH >= 2);
	assert_int_equal(rcl_domain_new(&rc, &root), 0);
	cc.parent = root;
	assert_int_equal(rcl_domain_new(&cc, &child), 0);
	assert_ptr_equal(rcl_domain_parent(child), root);
	assert_null(rcl_domain_parent(root));
	assert_int_equal(rcl_domain_limits(child, &got), 0);
	assert_int_equal(got.limit_high, 40000);
	assert_int_equal(got.protect_low, 2000);
	assert_int_equal(got.protect_min, 1000);
	assert_int_equal(rcl_domain_set_limits(child, &lim), 0);
	assert_int_equal(rcl_domain_limits(child, &got), 0);
	assert_memory_equal(&got, &lim, sizeof(got));

	assert_int_equal(rcl_domain_charge(child, 1000, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(rcl_domain_usage(child), 1000);
	assert_int_equal(rcl_domain_usage(root), 1000);
	/* A child of the target gets its setting. */
	assert_int_equal(rcl_domain_effective_protection(root, child, &emin,
							 &elow), 0);
	assert_int_equal(emin, 500);
	assert_int_equal(elow, 800);
	assert_int_equal(rcl_domain_effective_protection(child, child, &emin,
							 &elow), 0);
	assert_int_equal(emin, 0);
	assert_int_equal(elow, 0);
	assert_int_equal(rcl_domain_events(child, false, &ev), 0);
	assert_int_equal(ev.oom, 0);
	assert_int_equal(rcl_domain_events(root, true, &ev), 0);
	assert_int_equal(ev.oom, 0);
	assert_int_equal(rcl_domain_vmstat_subtree(root, &vm), 0);
	assert_int_equal(vm.charge_failures, 0);

	assert_int_equal(rcl_domain_uncharge(child, 1000), 0);
	assert_int_equal(rcl_domain_usage(root), 0);
	assert_int_equal(rcl_domain_free(root), -EBUSY);	/* it has a child */
	assert_int_equal(rcl_domain_free(child), 0);
	assert_int_equal(rcl_domain_free(root), 0);
}

static void test_api_internals_are_hidden(void **state)
{
	(void)state;
	assert_non_null(dlsym(RTLD_DEFAULT, "rcl_lruvec_add"));
	assert_null(dlsym(RTLD_DEFAULT, "rcl__assert_fail"));
	assert_null(dlsym(RTLD_DEFAULT, "rcl__tbatch_purge"));
	assert_null(dlsym(RTLD_DEFAULT, "rcl__lruvec_apply_locked"));
	assert_null(dlsym(RTLD_DEFAULT, "rcl__psi_parse"));
	assert_null(dlsym(RTLD_DEFAULT, "rcl__base64_decode"));
	assert_null(dlsym(RTLD_DEFAULT, "do_shrink"));
	assert_null(dlsym(RTLD_DEFAULT, "oc_evict"));
	/* The pressure monitor's parsers and helpers. */
	assert_non_null(dlsym(RTLD_DEFAULT, "rcl_pressure_new"));
	assert_null(dlsym(RTLD_DEFAULT, "rcl__psi_parse"));
	assert_null(dlsym(RTLD_DEFAULT, "rcl__cg_parse_keyed"));
	assert_null(dlsym(RTLD_DEFAULT, "rcl__base64_decode"));
	assert_null(dlsym(RTLD_DEFAULT, "do_dispatch"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_version),
		cmocka_unit_test(test_api_refusal),
		cmocka_unit_test(test_api_every_lruvec_symbol),
		cmocka_unit_test(test_api_every_shrinker_symbol),
		cmocka_unit_test(test_api_every_domain_scan_clock_symbol),
		cmocka_unit_test(test_api_every_objcache_symbol),
		cmocka_unit_test(test_api_every_pressure_symbol),
		cmocka_unit_test(test_api_every_domain_tree_symbol),
		cmocka_unit_test(test_api_internals_are_hidden),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
