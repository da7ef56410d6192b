/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of <reclaim/refusal.h>: a refused call says which rule it
 * enforced.  Each -EBUSY / -EDEADLK of one errno but different rules gets a
 * different reason; the reason is thread-local; the log hook sees every
 * refusal once, with the function's name; a
 * successful call leaves the last reason alone; rcl_clear_refusal() forgets
 * it.  The pressure monitor's refusals likewise (test_refusal_pressure),
 * and those of trees of domains (test_refusal_domain_tree).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

struct obj {
	struct rcl_lru_node lru;
	struct rcl_lruvec *lv;
	int evict_ret;		/* what the nested del returned */
};

/* Set: the evict callback frees objects and uncharges them from it. */
static struct rcl_domain *evict_frees;

static enum rcl_evict_status keep_evict(struct rcl_lru_node *node,
					struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);

	if (evict_frees) {
		rcl_domain_uncharge(evict_frees, ctl->weight);
		return RCL_EVICT_FREED;
	}
	/* From the evict callback: destroy would wait for itself. */
	o->evict_ret = rcl_lruvec_destroy(o->lv);
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops ops = { .evict = keep_evict };

struct logged {
	unsigned calls;
	int err;
	const char *func, *rule;
};

static void log_fn(void *arg, const char *func, int err, const char *rule)
{
	struct logged *l = arg;

	l->calls++;
	l->err = err;
	l->func = func;
	l->rule = rule;
}

static bool has(const char *s, const char *sub)
{
	return s && strstr(s, sub);
}

static void test_refusal_names_function_and_rule(void **state)
{
	struct rcl_lruvec_config cfg = { .ops = &ops };
	struct rcl_lruvec lv;
	struct obj o = { .lv = &lv };
	char first[RCL_REFUSAL_MAX];

	(void)state;
	rcl_clear_refusal();
	assert_null(rcl_last_refusal());
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	rcl_lru_node_init(&o.lru);
	assert_int_equal(rcl_lruvec_add(&lv, &o.lru, RCL_LRU_FILE, 1,
					RCL_LRU_ADD_NOBATCH), 0);
	/* A success leaves nothing. */
	assert_null(rcl_last_refusal());

	/* Two -EBUSY of different rules, two reasons. */
	assert_int_equal(rcl_lruvec_add(&lv, &o.lru, RCL_LRU_FILE, 1, 0), -EBUSY);
	assert_true(has(rcl_last_refusal(), "rcl_lruvec_add: "));
	assert_true(has(rcl_last_refusal(), "(-EBUSY)"));
	strcpy(first, rcl_last_refusal());
	assert_int_equal(rcl_lruvec_destroy(&lv), -EBUSY);
	assert_true(has(rcl_last_refusal(), "rcl_lruvec_destroy: "));
	assert_string_not_equal(rcl_last_refusal(), first);

	/* A later success keeps the last reason. */
	assert_int_equal(rcl_lruvec_rotate(&lv, &o.lru), 0);
	assert_true(has(rcl_last_refusal(), "rcl_lruvec_destroy: "));

	/* -EDEADLK from the evict callback, named. */
	{
		struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
						     .nr_to_scan = 1 };

		assert_int_equal(rcl_lruvec_shrink_inactive(&lv, &sc), 0);
		assert_int_equal(o.evict_ret, -EDEADLK);
		assert_true(has(rcl_last_refusal(), "rcl_lruvec_destroy: "));
		assert_true(has(rcl_last_refusal(), "evict callback"));
		assert_true(has(rcl_last_refusal(), "(-EDEADLK)"));
	}

	rcl_clear_refusal();
	assert_null(rcl_last_refusal());
	assert_int_equal(rcl_lruvec_del(&lv, &o.lru), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

static void *other_thread(void *arg)
{
	const char **out = arg;

	*out = rcl_last_refusal();
	return NULL;
}

static unsigned long t_count(struct rcl_shrinker *sh, struct rcl_shrink_control *sc)
{
	(void)sh;
	(void)sc;
	return 0;
}

static unsigned long t_scan(struct rcl_shrinker *sh, struct rcl_shrink_control *sc)
{
	(void)sh;
	(void)sc;
	return 0;
}

static const struct rcl_shrinker_ops t_ops = { t_count, t_scan };

static void test_refusal_is_thread_local(void **state)
{
	struct rcl_shrinker_config cfg = { .ops = &t_ops,
					   .seeks = RCL_DEFAULT_SEEKS };
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker *s;
	const char *seen = "not run";
	pthread_t t;

	(void)state;
	rcl_clear_refusal();
	assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
	assert_int_equal(rcl_shrinker_new(reg, &cfg, &s), 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(rcl_shrinker_register(s), -EBUSY);
	assert_true(has(rcl_last_refusal(), "rcl_shrinker_register: "));
	/* A registry with a shrinker in it cannot be freed. */
	assert_int_equal(rcl_shrinker_registry_free(reg), -EBUSY);
	assert_true(has(rcl_last_refusal(), "rcl_shrinker_registry_free: "));

	/* Another thread has its own (none). */
	assert_int_equal(pthread_create(&t, NULL, other_thread, &seen), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_null(seen);
	assert_non_null(rcl_last_refusal());

	assert_int_equal(rcl_shrinker_free(s), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	rcl_clear_refusal();
}

static void test_refusal_log_hook(void **state)
{
	struct logged l = { 0 };
	const struct rcl_refusal_log log = { log_fn, &l };
	const struct rcl_refusal_log bad = { NULL, &l };
	struct rcl_lruvec_config cfg = { .ops = &ops };
	struct rcl_lruvec lv;
	struct rcl_lru_node n;

	(void)state;
	assert_int_equal(rcl_set_refusal_log(&bad), -EINVAL);
	assert_int_equal(rcl_set_refusal_log(&log), 0);
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	rcl_lru_node_init(&n);
	assert_int_equal(rcl_lruvec_add(&lv, &n, RCL_LRU_FILE, 1,
					RCL_LRU_ADD_NOBATCH), 0);
	assert_int_equal(l.calls, 0);
	assert_int_equal(rcl_lruvec_add(&lv, &n, RCL_LRU_FILE, 1, 0), -EBUSY);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.err, -EBUSY);
	assert_string_equal(l.func, "rcl_lruvec_add");
	assert_true(has(rcl_last_refusal(), l.rule));

	/* Removed: no more calls. */
	assert_int_equal(rcl_set_refusal_log(NULL), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &n, RCL_LRU_FILE, 1, 0), -EBUSY);
	assert_int_equal(l.calls, 1);
	assert_int_equal(rcl_lruvec_del(&lv, &n), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	rcl_clear_refusal();
}

/* ------------------------------------------------------------------------- */
/* pressure.h                                                                 */
/* ------------------------------------------------------------------------- */

static char trim_free[RCL_REFUSAL_MAX], trim_stop[RCL_REFUSAL_MAX];
static char trim_add[RCL_REFUSAL_MAX], trim_dispatch[RCL_REFUSAL_MAX];
static struct rcl_pressure *refused_p;

static void copy_reason(char *dst)
{
	const char *r = rcl_last_refusal();

	snprintf(dst, RCL_REFUSAL_MAX, "%s", r ? r : "(none)");
}

/* The trim hook runs in the monitor's action: what it may not do. */
static void refusing_trim(void *priv)
{
	(void)priv;
	if (rcl_pressure_free(refused_p) == -EDEADLK)
		copy_reason(trim_free);
	if (rcl_pressure_stop(refused_p) == -EDEADLK)
		copy_reason(trim_stop);
	if (rcl_pressure_add_systemd(refused_p, "/dev/null", NULL) == -EDEADLK)
		copy_reason(trim_add);
	if (rcl_pressure_dispatch(refused_p) == -EDEADLK)
		copy_reason(trim_dispatch);
}

static void rfile(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void refused(int got, int want, const char *func, const char *rule)
{
	char prefix[64];

	assert_int_equal(got, want);
	snprintf(prefix, sizeof(prefix), "%s: ", func);
	if (!has(rcl_last_refusal(), prefix) || !has(rcl_last_refusal(), rule))
		fail_msg("%s returned %d with reason \"%s\", want \"%s...%s\"",
			 func, got, rcl_last_refusal() ? rcl_last_refusal() : "(none)",
			 prefix, rule);
}

/*
 * The monitor's refusals name the function and the rule: -EBUSY (the
 * domain held, the thread running, its descriptor taken), -EDEADLK (from
 * the monitor's own trim hook), -EINVAL of different rules with different
 * reasons, -ENOENT, -EBADF, -EEXIST, -EBADMSG, -ENOSPC.
 */
static void test_refusal_pressure(void **state)
{
	struct rcl_domain_config dc = { .budget = 100000 };
	struct rcl_lruvec_config lc = { .ops = &ops };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure_source_info si;
	struct rcl_domain *d;
	struct rcl_pressure *p;
	struct rcl_lruvec lv;
	struct obj objs[64];
	char dir[64], cg[128], first[RCL_REFUSAL_MAX];
	unsigned i;
	int m;

	(void)state;
	rcl_clear_refusal();
	snprintf(dir, sizeof(dir), "/tmp/rcl-refusal-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(cg, sizeof(cg), "%s/cg", dir);
	assert_int_equal(mkdir(cg, 0755), 0);
	rfile(cg, "memory.current", "100\n");
	rfile(cg, "memory.max", "max\n");
	rfile(cg, "memory.high", "max\n");
	rfile(cg, "memory.stat", "inactive_file 0\n");
	rfile(cg, "memory.events", "high 0\nmax 0\n");
	assert_int_equal(rcl_domain_new(&dc, &d), 0);

	/* rcl_pressure_new: two -EINVAL rules, two reasons. */
	pc.domain = d;
	pc.flags = 1u << 9;
	refused(rcl_pressure_new(&pc, &p), -EINVAL, "rcl_pressure_new", "flags");
	strcpy(first, rcl_last_refusal());
	pc.flags = 0;
	pc.grow_pct = 101;
	refused(rcl_pressure_new(&pc, &p), -EINVAL, "rcl_pressure_new", "(-EINVAL)");
	assert_string_not_equal(rcl_last_refusal(), first);
	pc.grow_pct = 0;

	pc.trim = refusing_trim;
	pc.trim_min_bytes = 1;
	pc.interval_ns = 1000000;	/* the trim is due 1 ms after the frees */
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	refused_p = p;
	refused(rcl_domain_free(d), -EBUSY, "rcl_domain_free", "pressure monitor");

	/* Sources. */
	refused(rcl_pressure_add_systemd(p, "relative", NULL), -EINVAL,
		"rcl_pressure_add_systemd", "absolute");
	refused(rcl_pressure_add_systemd(p, "/dev/null", "!"), -EINVAL,
		"rcl_pressure_add_systemd", "base64");
	unsetenv("MEMORY_PRESSURE_WATCH");
	refused(rcl_pressure_add_systemd(p, NULL, NULL), -ENOENT,
		"rcl_pressure_add_systemd", "MEMORY_PRESSURE_WATCH");
	/* The codes the pressure monitor added are named too. */
	refused(rcl_pressure_add_systemd(p, dir, NULL), -EBADF,
		"rcl_pressure_add_systemd", "no regular file, FIFO or socket");
	assert_true(has(rcl_last_refusal(), "(-EBADF)"));
	refused(rcl_pressure_add_cgroup(p, cg, 7), -EINVAL,
		"rcl_pressure_add_cgroup", "version");
	refused(rcl_pressure_add_cgroup(p, dir, 0), -ENOENT,
		"rcl_pressure_add_cgroup", "(-ENOENT)");
	rfile(cg, "memory.max", "many\n");
	refused(rcl_pressure_add_cgroup(p, cg, 0), -EBADMSG,
		"rcl_pressure_add_cgroup", "does not parse");
	assert_true(has(rcl_last_refusal(), "(-EBADMSG)"));
	rfile(cg, "memory.max", "max\n");
	assert_int_equal(rcl_pressure_add_cgroup(p, cg, 0), 0);
	refused(rcl_pressure_add_cgroup(p, cg, 0), -EEXIST,
		"rcl_pressure_add_cgroup", "cgroup source");
	assert_true(has(rcl_last_refusal(), "(-EEXIST)"));
	rfile(dir, "notpsi", "x\n");
	snprintf(first, sizeof(first), "%s/notpsi", dir);
	refused(rcl_pressure_add_psi(p, first), -EBADMSG, "rcl_pressure_add_psi",
		"PSI");
	refused(rcl_pressure_add_manual(NULL), -EINVAL, "rcl_pressure_add_manual",
		"NULL");
	m = rcl_pressure_add_manual(p);
	assert_int_equal(m, 1);
	/* A success keeps the last reason. */
	assert_true(has(rcl_last_refusal(), "rcl_pressure_add_manual: "));

	/* notify: two -EINVAL rules; source_info: -ENOENT. */
	refused(rcl_pressure_notify(p, m, (enum rcl_pressure_level)9), -EINVAL,
		"rcl_pressure_notify", "level");
	strcpy(first, rcl_last_refusal());
	refused(rcl_pressure_notify(p, 0, RCL_PRESSURE_SEVERE), -EINVAL,
		"rcl_pressure_notify", "manual");
	assert_string_not_equal(rcl_last_refusal(), first);
	refused(rcl_pressure_source_info(p, 5, &si), -ENOENT,
		"rcl_pressure_source_info", "(-ENOENT)");

	/* The thread: two -EBUSY of different rules, two reasons. */
	assert_int_equal(rcl_pressure_start(p), 0);
	refused(rcl_pressure_start(p), -EBUSY, "rcl_pressure_start", "(-EBUSY)");
	strcpy(first, rcl_last_refusal());
	refused(rcl_pressure_fd(p), -EBUSY, "rcl_pressure_fd", "(-EBUSY)");
	assert_string_not_equal(rcl_last_refusal(), first);
	assert_int_equal(rcl_pressure_stop(p), 0);

	/* -EDEADLK from the trim hook, which an action that frees runs. */
	lc.priv = d;
	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&objs[i].lru);
		assert_int_equal(rcl_domain_charge(d, 1000, RCL_CTX_CAPABLE, NULL), 0);
		assert_int_equal(rcl_lruvec_add(&lv, &objs[i].lru, RCL_LRU_FILE, 1000,
						RCL_LRU_ADD_NOBATCH), 0);
	}
	evict_frees = d;
	trim_free[0] = trim_stop[0] = trim_add[0] = trim_dispatch[0] = '\0';
	assert_int_equal(rcl_pressure_notify(p, m, RCL_PRESSURE_CRITICAL), 0);
	evict_frees = NULL;
	/* The trim runs from a dispatch one interval after the frees. */
	for (i = 0; i < 1000 && !trim_free[0]; i++) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
		assert_true(rcl_pressure_dispatch(p) >= 0);
	}
	assert_true(has(trim_free, "rcl_pressure_free: "));
	assert_true(has(trim_free, "(-EDEADLK)"));
	assert_true(has(trim_stop, "rcl_pressure_stop: "));
	assert_true(has(trim_add, "rcl_pressure_add_systemd: "));
	assert_true(has(trim_add, "(-EDEADLK)"));
	assert_true(has(trim_dispatch, "rcl_pressure_dispatch: "));

	assert_int_equal(rcl_pressure_free(p), 0);
	for (i = 0; i < 64; i++)
		if (rcl_lruvec_del(&lv, &objs[i].lru) == 0)
			assert_int_equal(rcl_domain_uncharge(d, 1000), 0);
	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	rcl_clear_refusal();
	{
		char path[320];

		snprintf(path, sizeof(path), "%s/notpsi", dir);
		assert_int_equal(unlink(path), 0);
		for (i = 0; i < 5; i++) {
			static const char *const f[] = { "memory.current", "memory.max",
							 "memory.high", "memory.stat",
							 "memory.events" };

			snprintf(path, sizeof(path), "%s/%s", cg, f[i]);
			assert_int_equal(unlink(path), 0);
		}
		assert_int_equal(rmdir(cg), 0);
		assert_int_equal(rmdir(dir), 0);
	}
}

/* ------------------------------------------------------------------------- */
/* domain.h: trees of domains                                                 */
/* ------------------------------------------------------------------------- */

static struct rcl_domain *tree_child;
static int tree_set_limits_rc;
static char tree_set_limits_why[RCL_REFUSAL_MAX];

static enum rcl_evict_status set_limits_evict(struct rcl_lru_node *node,
					      struct rcl_evict_control *ctl)
{
	struct rcl_domain_limits lim = { .limit_high = 1 };

	(void)node;
	(void)ctl;
	if (!tree_set_limits_rc) {
		tree_set_limits_rc = rcl_domain_set_limits(tree_child, &lim);
		copy_reason(tree_set_limits_why);
	}
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops set_limits_ops = { .evict = set_limits_evict };

/*
 * The tree's -EBUSY (free of a domain with children) has a reason of its
 * own, not the one of attached lruvecs; the -EDEADLK of set_limits from a
 * callback of the tree's reclaim names set_limits.  The hook sees each.
 */
static void test_refusal_domain_tree(void **state)
{
	struct rcl_domain_config rc = { .budget = 1000 };
	struct rcl_domain_config cc = { .budget = 500 };
	struct rcl_lruvec_config lc = { .ops = &set_limits_ops };
	struct logged l = { 0 };
	const struct rcl_refusal_log log = { log_fn, &l };
	struct rcl_domain *root, *child, *other;
	struct rcl_lruvec lv;
	struct rcl_lru_node n[2];
	char attached[RCL_REFUSAL_MAX];

	(void)state;
	rcl_clear_refusal();
	assert_int_equal(rcl_domain_new(&rc, &root), 0);
	cc.parent = root;
	assert_int_equal(rcl_domain_new(&cc, &child), 0);
	assert_int_equal(rcl_domain_new(&rc, &other), 0);

	/* The reason of the other -EBUSY of rcl_domain_free(). */
	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(other, &lv, 0), 0);
	refused(rcl_domain_free(other), -EBUSY, "rcl_domain_free", "(-EBUSY)");
	strcpy(attached, rcl_last_refusal());
	assert_int_equal(rcl_domain_detach(other, &lv), 0);

	assert_int_equal(rcl_set_refusal_log(&log), 0);
	refused(rcl_domain_free(root), -EBUSY, "rcl_domain_free", "(-EBUSY)");
	assert_string_not_equal(rcl_last_refusal(), attached);
	assert_int_equal(l.calls, 1);
	assert_int_equal(l.err, -EBUSY);
	assert_string_equal(l.func, "rcl_domain_free");
	assert_true(has(rcl_last_refusal(), l.rule));
	assert_int_equal(rcl_set_refusal_log(NULL), 0);

	/* -EDEADLK from an evict callback of the root's reclaim. */
	assert_int_equal(rcl_domain_attach(child, &lv, 0), 0);
	rcl_lru_node_init(&n[0]);
	rcl_lru_node_init(&n[1]);
	assert_int_equal(rcl_lruvec_add(&lv, &n[0], RCL_LRU_FILE, 10,
					RCL_LRU_ADD_NOBATCH), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &n[1], RCL_LRU_FILE, 10,
					RCL_LRU_ADD_NOBATCH), 0);
	assert_int_equal(rcl_domain_charge(child, 20, RCL_CTX_CAPABLE, NULL), 0);
	tree_child = child;
	tree_set_limits_rc = 0;
	tree_set_limits_why[0] = '\0';
	assert_int_equal(rcl_domain_reclaim(root, 1, RCL_CTX_CAPABLE, NULL), 0);
	assert_int_equal(tree_set_limits_rc, -EDEADLK);
	assert_true(has(tree_set_limits_why, "rcl_domain_set_limits: "));
	assert_true(has(tree_set_limits_why, "(-EDEADLK)"));

	assert_int_equal(rcl_domain_detach(child, &lv), 0);
	assert_int_equal(rcl_lruvec_del(&lv, &n[0]), 0);
	assert_int_equal(rcl_lruvec_del(&lv, &n[1]), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_domain_uncharge(child, 20), 0);
	assert_int_equal(rcl_domain_free(child), 0);
	assert_int_equal(rcl_domain_free(root), 0);
	assert_int_equal(rcl_domain_free(other), 0);
	rcl_clear_refusal();
}

/*
 * The log hook of a refusal made under a library lock (a second
 * rcl_domain_reclaimer_start(): -EBUSY under the domain's lock) reaches a
 * cancellation point (pthread_testcancel(), as a write() to a log would).
 * Before, a thread cancelled there kept the lock, and rcl_domain_wakeup()
 * waited for ever (a review's reproducer).  The hook now runs with
 * cancellation held off: the thread ends after the call, at its own
 * cancellation point, and the lock is free.
 */
static struct rcl_domain *hook_d;
static volatile int hook_calls, hook_woken;

static void *hook_waker(void *arg)
{
	(void)arg;
	if (rcl_domain_wakeup(hook_d) == 0)
		__atomic_store_n(&hook_woken, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void cancel_hook(void *arg, const char *func, int err, const char *rule)
{
	(void)arg;
	(void)func;
	(void)err;
	(void)rule;
	__atomic_add_fetch(&hook_calls, 1, __ATOMIC_SEQ_CST);
	pthread_cancel(pthread_self());
	pthread_testcancel();	/* a cancellation point in the hook */
}

static void *hook_starter(void *arg)
{
	(void)arg;
	(void)rcl_domain_reclaimer_start(hook_d);	/* -EBUSY: runs already */
	pthread_testcancel();	/* the thread's own: it ends here */
	return NULL;
}

static void test_refusal_log_hook_is_not_a_cancellation_point(void **state)
{
	const struct rcl_refusal_log log = { cancel_hook, NULL };
	struct rcl_domain_config cfg = { .budget = 1u << 20 };
	void *ret = NULL;
	unsigned long spins;
	pthread_t t, w;

	(void)state;
	hook_calls = 0;
	hook_woken = 0;
	assert_int_equal(rcl_domain_new(&cfg, &hook_d), 0);
	assert_int_equal(rcl_domain_reclaimer_start(hook_d), 0);
	assert_int_equal(rcl_set_refusal_log(&log), 0);
	assert_int_equal(pthread_create(&t, NULL, hook_starter, NULL), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_int_equal(rcl_set_refusal_log(NULL), 0);
	assert_true(ret == PTHREAD_CANCELED);
	assert_int_equal(hook_calls, 1);
	/* The domain's lock is free: a wakeup returns (waited with a bound). */
	assert_int_equal(pthread_create(&w, NULL, hook_waker, NULL), 0);
	for (spins = 0; !__atomic_load_n(&hook_woken, __ATOMIC_SEQ_CST) &&
			spins < 10000;
	     spins++)
		usleep(1000);
	if (!hook_woken)
		fail_msg("the thread cancelled in the refusal hook kept the "
			 "domain's lock");
	assert_int_equal(pthread_join(w, NULL), 0);
	assert_int_equal(rcl_domain_free(hook_d), 0);
	rcl_clear_refusal();
}

/*
 * The refusal hook may fork(): the library's atfork handlers take its
 * registries' and domains' locks, so no refusal may call the hook with one
 * of those held (a hook that forks would wait for itself for ever; so would
 * a fork-safe logger's lock, taken by its own prepare handler, in a fork
 * from another thread).  An alarm turns such a hang into a failure.
 */
static unsigned fork_hook_forks;

static void fork_hook(void *arg, const char *func, int err, const char *rule)
{
	pid_t pid;

	(void)arg;
	(void)func;
	(void)err;
	(void)rule;
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid > 0 && waitpid(pid, NULL, 0) == pid)
		fork_hook_forks++;
}

static int fork_write(void *priv, struct rcl_lru_node *node)
{
	(void)priv;
	(void)node;
	return 0;
}

static unsigned long fork_count(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 0;
}

static void test_refusal_log_hook_may_fork(void **state)
{
	const struct rcl_refusal_log log = { fork_hook, NULL };
	const struct rcl_writeback_ops wops = { .write = fork_write };
	const struct rcl_shrinker_ops sops = { .count_objects = fork_count,
					       .scan_objects = fork_count };
	const struct rcl_shrinker_config scfg = { .ops = &sops, .name = "f",
						  .seeks = 2 };
	struct rcl_domain_config cfg = { .budget = 1u << 20 };
	struct rcl_shrinker_registry *reg;
	struct rcl_shrinker *sh;
	struct rcl_domain *d;

	(void)state;
	fork_hook_forks = 0;
	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, NULL, 0), 0);
	assert_int_equal(rcl_shrinker_registry_new(NULL, &reg), 0);
	assert_int_equal(rcl_shrinker_new(reg, &scfg, &sh), 0);
	assert_int_equal(rcl_shrinker_register(sh), 0);
	assert_int_equal(rcl_set_refusal_log(&log), 0);
	alarm(60);
	assert_int_equal(rcl_domain_flusher_start(d, &wops, NULL, 0), -EBUSY);
	assert_int_equal(fork_hook_forks, 1);
	assert_int_equal(rcl_shrinker_register(sh), -EBUSY);
	assert_int_equal(fork_hook_forks, 2);
	alarm(0);
	assert_int_equal(rcl_set_refusal_log(NULL), 0);
	assert_int_equal(rcl_shrinker_free(sh), 0);
	assert_int_equal(rcl_shrinker_registry_free(reg), 0);
	assert_int_equal(rcl_domain_flusher_stop(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	rcl_clear_refusal();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusal_names_function_and_rule),
		cmocka_unit_test(test_refusal_is_thread_local),
		cmocka_unit_test(test_refusal_log_hook),
		cmocka_unit_test(test_refusal_pressure),
		cmocka_unit_test(test_refusal_domain_tree),
		cmocka_unit_test(test_refusal_log_hook_is_not_a_cancellation_point),
		cmocka_unit_test(test_refusal_log_hook_may_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
