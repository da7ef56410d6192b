/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of <reclaim/refusal.h>: a refused call says which rule it
 * enforced.  Each -EBUSY / -EDEADLK of one errno but different rules gets a
 * different reason; the reason is thread-local; the log hook sees every
 * refusal once, with the function's name; a
 * successful call leaves the last reason alone; rcl_clear_refusal() forgets
 * it.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

struct obj {
	struct rcl_lru_node lru;
	struct rcl_lruvec *lv;
	int evict_ret;		/* what the nested del returned */
};

static enum rcl_evict_status keep_evict(struct rcl_lru_node *node,
					struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);

	(void)ctl;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusal_names_function_and_rule),
		cmocka_unit_test(test_refusal_is_thread_local),
		cmocka_unit_test(test_refusal_log_hook),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
