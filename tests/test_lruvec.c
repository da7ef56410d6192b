/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the lruvec: list membership and counts after every operation,
 * the two-touch rule, batching and drains, isolation and putback, every evict
 * answer, shrink_active's rule, inactive_is_low, object lifetime across
 * threads, and every documented error.  Deterministic: threads, where used,
 * are sequenced with barriers and joins.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "lru_check.h"
#include "../lib/internal.h"
#include "test_util.h"

#define NOBJ 64

struct obj {
	int key;
	struct rcl_lru_node lru;
};

struct fixture {
	struct rcl_lruvec lv;
	struct obj objs[NOBJ];
};

#define INACTIVE(t) RCL_LRU_LIST((t), 0)
#define ACTIVE(t) RCL_LRU_LIST((t), 1)

static enum rcl_evict_status mock_evict(struct rcl_lru_node *node,
					struct rcl_evict_control *ctl);

static const struct rcl_lruvec_ops mock_ops = { .evict = mock_evict };

/* ------------------------------------------------------------------------- */
/* Fixtures                                                                   */
/* ------------------------------------------------------------------------- */

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct rcl_lruvec_config cfg = { .ops = &mock_ops };
	int i;

	if (!fx)
		return -1;
	cfg.priv = fx;
	for (i = 0; i < NOBJ; i++)
		fx->objs[i].key = i;
	if (rcl_lruvec_init(&fx->lv, &cfg) != 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	int i;

	rcl_lru_drain_local();
	for (i = 0; i < NOBJ; i++)
		rcl_lruvec_del(&fx->lv, &fx->objs[i].lru);
	if (rcl_lruvec_destroy(&fx->lv) != 0)
		return -1;
	free(fx);
	return 0;
}

static size_t count(struct fixture *fx, unsigned list)
{
	return rcl_lruvec_count(&fx->lv, list, NULL);
}

static void check(struct fixture *fx, long listed)
{
	assert_int_equal(lru_check_invariants(&fx->lv), listed);
}

/* Add objs[from..to) with weight key+1, unbatched, in order. */
static void add_range(struct fixture *fx, int from, int to, unsigned type,
		      unsigned flags)
{
	int i;

	for (i = from; i < to; i++)
		assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[i].lru, type,
						(uint32_t)i + 1,
						flags | RCL_LRU_ADD_NOBATCH),
				 0);
}

static unsigned flags_of(struct fixture *fx, int i)
{
	return rcl_lru_node_flags(&fx->objs[i].lru);
}

/* ------------------------------------------------------------------------- */
/* The mock evict callback                                                    */
/* ------------------------------------------------------------------------- */

/* Optional re-entry hook run inside the callback. */
static void (*evict_hook)(struct rcl_lru_node *node,
			  struct rcl_evict_control *ctl);

static enum rcl_evict_status mock_evict(struct rcl_lru_node *node,
					struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);

	check_expected(o->key);
	check_expected(ctl->flags);
	assert_int_equal(ctl->weight, (uint32_t)o->key + 1);
	assert_int_equal(ctl->priority, 7);
	assert_int_equal(ctl->context, 0xabcu);
	assert_non_null(ctl->priv);
	assert_ptr_equal(ctl->lruvec, &((struct fixture *)ctl->priv)->lv);
	/* The node is isolated while the callback runs. */
	assert_true(rcl_lru_node_flags(node) & RCL_LRU_F_ISOLATED);
	if (evict_hook)
		evict_hook(node, ctl);
	return (enum rcl_evict_status)mock_type(int);
}

static void expect_evict(int key, unsigned flags, enum rcl_evict_status st)
{
	expect_value(mock_evict, o->key, key);
	expect_value(mock_evict, ctl->flags, flags);
	will_return(mock_evict, st);
}

/* ------------------------------------------------------------------------- */
/* Node and version                                                           */
/* ------------------------------------------------------------------------- */

static void test_lruvec_node_is_at_most_24_bytes(void **state)
{
	(void)state;
	assert_true(sizeof(struct rcl_lru_node) <= 24);
#if defined(__x86_64__) && defined(__LP64__)
	assert_int_equal(sizeof(struct rcl_lru_node), 24);
#endif
}

static void test_lruvec_zeroed_node_is_idle(void **state)
{
	struct rcl_lru_node a = RCL_LRU_NODE_INIT, b;

	(void)state;
	memset(&b, 0x5a, sizeof(b));
	rcl_lru_node_init(&b);
	rcl_lru_node_init(NULL);
	assert_int_equal(rcl_lru_node_flags(&a), 0);
	assert_int_equal(rcl_lru_node_flags(&b), 0);
	assert_int_equal(rcl_lru_node_flags(NULL), 0);
	assert_int_equal(rcl_lru_node_type(NULL), 0);
}

static void test_lruvec_container_of(void **state)
{
	struct obj o = { .key = 42 };

	(void)state;
	assert_ptr_equal(rcl_container_of(&o.lru, struct obj, lru), &o);
}

static void test_lruvec_version(void **state)
{
	(void)state;
	assert_string_equal(rcl_version(), RCL_VERSION_STRING);
	assert_int_equal(rcl_version_number(), RCL_VERSION_NUMBER);
	assert_int_equal(RCL_VERSION_NUMBER, RCL_VERSION_MAJOR * 10000 +
						     RCL_VERSION_MINOR * 100 +
						     RCL_VERSION_PATCH);
}

/* ------------------------------------------------------------------------- */
/* Lifecycle                                                                  */
/* ------------------------------------------------------------------------- */

/*
 * An add from an application's key destructor that runs after the
 * library's batch destructor (the application's key is newer, and it asks
 * for more rounds) goes unbatched: a batch made then would be left with
 * its nodes pending, on no list, when the destructor rounds end.
 */
#define LATE_NODES 16
static struct rcl_lruvec late_lv;
static struct rcl_lru_node late_nodes[LATE_NODES + 1];
static pthread_key_t late_key;
static int late_calls, late_errors;

static void late_destructor(void *arg)
{
	(void)arg;
	if (late_calls >= LATE_NODES)
		return;
	if (rcl_lruvec_add(&late_lv, &late_nodes[1 + late_calls], RCL_LRU_FILE,
			   1, 0) != 0)
		late_errors++;
	/* Ask for another round each time: glibc runs at most 4. */
	if (++late_calls < LATE_NODES &&
	    pthread_setspecific(late_key, (void *)1) != 0)
		late_errors++;
}

static void *late_main(void *arg)
{
	(void)arg;
	/* This thread's batch, then the application's key. */
	if (rcl_lruvec_add(&late_lv, &late_nodes[0], RCL_LRU_FILE, 1, 0) != 0 ||
	    pthread_setspecific(late_key, (void *)1) != 0)
		late_errors++;
	return NULL;
}


static void test_lruvec_add_from_a_later_key_destructor_is_listed(void **state)
{
	struct rcl_lru_node extra;
	pthread_t t;
	int i, listed = 0;

	(void)state;
	if (!LATE_DESTRUCTORS)
		skip();
	memset(late_nodes, 0, sizeof(late_nodes));
	assert_int_equal(rcl_lruvec_init(&late_lv, NULL), 0);
	/* The library's batch key exists before the application's. */
	rcl_lru_node_init(&extra);
	assert_int_equal(rcl_lruvec_add(&late_lv, &extra, RCL_LRU_FILE, 1, 0), 0);
	assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
	late_calls = late_errors = 0;
	assert_int_equal(pthread_create(&t, NULL, late_main, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(late_errors, 0);
	for (i = 0; i < 1 + late_calls; i++)
		listed += (rcl_lru_node_flags(&late_nodes[i]) &
			   RCL_LRU_F_LISTED) != 0;
	print_message("%d destructor adds after the batch went back: %d of %d "
		      "nodes listed\n", late_calls, listed, 1 + late_calls);
	assert_true(late_calls >= 1);
	assert_int_equal(listed, 1 + late_calls);
	assert_int_equal(pthread_key_delete(late_key), 0);
	for (i = 0; i < 1 + late_calls; i++)
		assert_int_equal(rcl_lruvec_del(&late_lv, &late_nodes[i]), 0);
	assert_int_equal(rcl_lruvec_del(&late_lv, &extra), 0);
	assert_int_equal(rcl_lruvec_destroy(&late_lv), 0);
}

/*
 * A thread whose FIRST add is made from an application's key destructor in
 * the last round (PTHREAD_DESTRUCTOR_ITERATIONS), from a key newer than the
 * library's batch key: its batch is made after glibc passed the batch key
 * in that round, and a value set in the last round is never destroyed.
 * No key destructor drains that batch; the node stays pending until a drain
 * of all batches.
 */
#ifndef PTHREAD_DESTRUCTOR_ITERATIONS
#define PTHREAD_DESTRUCTOR_ITERATIONS 4
#endif
static struct rcl_lruvec last_lv;
static struct rcl_lru_node last_node;
static pthread_key_t last_key;
static int last_calls, last_errors;

static void last_destructor(void *arg)
{
	(void)arg;
	/* Ask for another round until the last one, and add only then. */
	if (++last_calls < PTHREAD_DESTRUCTOR_ITERATIONS) {
		if (pthread_setspecific(last_key, (void *)1) != 0)
			last_errors++;
		return;
	}
	if (rcl_lruvec_add(&last_lv, &last_node, RCL_LRU_FILE, 1, 0) != 0)
		last_errors++;
}

static void *last_main(void *arg)
{
	(void)arg;
	/* No batched call before the destructors: no batch yet. */
	if (pthread_setspecific(last_key, (void *)1) != 0)
		last_errors++;
	return NULL;
}

static void test_lruvec_first_add_in_the_last_destructor_round(void **state)
{
	struct rcl_lru_node extra;
	pthread_t t;
	unsigned before;

	(void)state;
	if (!LATE_DESTRUCTORS)
		skip();
	assert_int_equal(rcl_lruvec_init(&last_lv, NULL), 0);
	/* The library's batch key exists before the application's. */
	rcl_lru_node_init(&extra);
	rcl_lru_node_init(&last_node);
	assert_int_equal(rcl_lruvec_add(&last_lv, &extra, RCL_LRU_FILE, 1, 0), 0);
	assert_int_equal(pthread_key_create(&last_key, last_destructor), 0);
	before = rcl__tbatch_count();
	last_calls = last_errors = 0;
	assert_int_equal(pthread_create(&t, NULL, last_main, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(last_errors, 0);
	assert_int_equal(last_calls, PTHREAD_DESTRUCTOR_ITERATIONS);
	print_message("after the exit: node flags %#x, batches %u (before %u)\n",
		      rcl_lru_node_flags(&last_node), rcl__tbatch_count(), before);
	/* Not lost: a drain of all batches lists it ... */
	assert_int_equal(rcl_lruvec_drain(&last_lv), 0);
	assert_true(rcl_lru_node_flags(&last_node) & RCL_LRU_F_LISTED);
	/* ... and frees the dead thread's batch. */
	assert_int_equal(rcl__tbatch_count(), before);
	assert_int_equal(pthread_key_delete(last_key), 0);
	assert_int_equal(rcl_lruvec_del(&last_lv, &last_node), 0);
	assert_int_equal(rcl_lruvec_del(&last_lv, &extra), 0);
	assert_int_equal(rcl_lruvec_destroy(&last_lv), 0);
}

/*
 * fork(): a batch of another thread of the parent is nobody's in the child,
 * and its key destructor never runs there.  The child's next drain of all
 * batches lists its entries and frees it, as a dead thread's.
 */
static struct rcl_lruvec fkb_lv;
static struct rcl_lru_node fkb_node;
static sem_t fkb_added, fkb_release;

static void *fkb_main(void *arg)
{
	(void)arg;
	if (rcl_lruvec_add(&fkb_lv, &fkb_node, RCL_LRU_FILE, 1, 0) != 0)
		abort();
	sem_post(&fkb_added);
	while (sem_wait(&fkb_release) != 0)
		;
	return NULL;
}

static void test_lruvec_fork_child_frees_other_threads_batches(void **state)
{
	struct rcl_lru_node own;
	pthread_t t;
	unsigned before;
	pid_t pid;
	int st;

	(void)state;
	assert_int_equal(rcl_lruvec_init(&fkb_lv, NULL), 0);
	rcl_lru_node_init(&fkb_node);
	rcl_lru_node_init(&own);
	/* The forking thread's own batch, with an entry: kept in the child. */
	assert_int_equal(rcl_lruvec_add(&fkb_lv, &own, RCL_LRU_FILE, 1, 0), 0);
	assert_int_equal(sem_init(&fkb_added, 0, 0), 0);
	assert_int_equal(sem_init(&fkb_release, 0, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, fkb_main, NULL), 0);
	assert_int_equal(sem_wait(&fkb_added), 0);
	assert_true(rcl_lru_node_flags(&fkb_node) & RCL_LRU_F_PENDING);
	before = rcl__tbatch_count();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Child: plain checks, no cmocka (its state is the parent's). */
		if (rcl_lruvec_drain(&fkb_lv) != 0)
			_exit(2);
		if (!(rcl_lru_node_flags(&fkb_node) & RCL_LRU_F_LISTED))
			_exit(3);
		if (!(rcl_lru_node_flags(&own) & RCL_LRU_F_LISTED))
			_exit(4);
		/* The other thread's batch is freed; this thread's stays. */
		if (rcl__tbatch_count() != before - 1)
			_exit(5);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ASSERT_CHILD_EXITED_OK(st);
	/* In the parent the thread lives: its batch is its own. */
	assert_int_equal(rcl__tbatch_count(), before);
	assert_int_equal(sem_post(&fkb_release), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(rcl_lruvec_drain(&fkb_lv), 0);
	assert_int_equal(rcl_lruvec_del(&fkb_lv, &fkb_node), 0);
	assert_int_equal(rcl_lruvec_del(&fkb_lv, &own), 0);
	assert_int_equal(rcl_lruvec_destroy(&fkb_lv), 0);
	sem_destroy(&fkb_added);
	sem_destroy(&fkb_release);
}

static void test_lruvec_init_defaults(void **state)
{
	struct rcl_lruvec lv;

	(void)state;
	assert_int_equal(rcl_lruvec_init(&lv, NULL), 0);
	assert_int_equal(rcl_lruvec_nr_types(&lv), 2);
	assert_string_equal(rcl_lruvec_type_name(&lv, RCL_LRU_FILE), "file");
	assert_string_equal(rcl_lruvec_type_name(&lv, RCL_LRU_ANON), "anon");
	assert_int_equal(rcl_lruvec_type_cost(&lv, RCL_LRU_FILE), 1);
	assert_int_equal(rcl_lruvec_type_cost(&lv, RCL_LRU_ANON), 2);
	assert_null(rcl_lruvec_type_name(&lv, 2));
	assert_int_equal(rcl_lruvec_type_cost(&lv, 2), 0);
	assert_int_not_equal(rcl_lruvec_id(&lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_lruvec_id(&lv), 0);
	/* A second destroy, and destroy(NULL), are no-ops. */
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_lruvec_destroy(NULL), 0);
}

static void test_lruvec_init_custom_types(void **state)
{
	struct rcl_lruvec_config cfg = {
		.nr_types = 3,
		.types = { { "clean", 1 }, { "a-very-long-type-name", 0 }, { NULL, 9 } },
	};
	struct rcl_lruvec lv;

	(void)state;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	assert_int_equal(rcl_lruvec_nr_types(&lv), 3);
	assert_string_equal(rcl_lruvec_type_name(&lv, 0), "clean");
	assert_string_equal(rcl_lruvec_type_name(&lv, 1), "a-very-long-typ");
	assert_string_equal(rcl_lruvec_type_name(&lv, 2), "type2");
	assert_int_equal(rcl_lruvec_type_cost(&lv, 1), 1);
	assert_int_equal(rcl_lruvec_type_cost(&lv, 2), 9);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);

	cfg.nr_types = RCL_LRU_MAX_TYPES + 1;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), -EINVAL);
	assert_int_equal(rcl_lruvec_init(NULL, NULL), -EINVAL);
}

static void test_lruvec_ids_are_unique(void **state)
{
	struct rcl_lruvec a, b;

	(void)state;
	assert_int_equal(rcl_lruvec_init(&a, NULL), 0);
	assert_int_equal(rcl_lruvec_init(&b, NULL), 0);
	assert_int_not_equal(rcl_lruvec_id(&a), rcl_lruvec_id(&b));
	assert_int_equal(rcl_lruvec_destroy(&a), 0);
	assert_int_equal(rcl_lruvec_destroy(&b), 0);
}

static void test_lruvec_ids_run_out_with_enospc(void **state)
{
	struct rcl_lruvec *lvs, extra;
	size_t i, n = 0;

	(void)state;
	lvs = calloc(RCL_LRUVEC_MAX_IDS, sizeof(*lvs));
	assert_non_null(lvs);
	/* The fixture of other tests may hold ids: fill what is left. */
	for (i = 0; i < RCL_LRUVEC_MAX_IDS; i++) {
		int err = rcl_lruvec_init(&lvs[i], NULL);

		if (err) {
			assert_int_equal(err, -ENOSPC);
			break;
		}
		n++;
	}
	assert_true(n > RCL_LRUVEC_MAX_IDS - 16);
	assert_int_equal(rcl_lruvec_init(&extra, NULL), -ENOSPC);
	for (i = 0; i < n; i++)
		assert_int_equal(rcl_lruvec_destroy(&lvs[i]), 0);
	assert_int_equal(rcl_lruvec_init(&extra, NULL), 0);
	assert_int_equal(rcl_lruvec_destroy(&extra), 0);
	free(lvs);
}

static void test_lruvec_destroy_refuses_nonempty(void **state)
{
	struct fixture *fx = *state;

	add_range(fx, 0, 2, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_destroy(&fx->lv), -EBUSY);
	/* Intact afterwards. */
	check(fx, 2);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[1].lru), 0);
	check(fx, 0);
}

static void test_lruvec_destroy_refuses_isolated(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;

	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(iso.nr, 1);
	assert_int_equal(rcl_lruvec_destroy(&fx->lv), -EBUSY);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	check(fx, 1);
}

/* ------------------------------------------------------------------------- */
/* Add and delete                                                             */
/* ------------------------------------------------------------------------- */

static void test_lruvec_add_goes_to_inactive_head(void **state)
{
	struct fixture *fx = *state;
	uint64_t w;

	add_range(fx, 0, 3, RCL_LRU_FILE, 0);
	check(fx, 3);
	assert_int_equal(rcl_lruvec_count(&fx->lv, INACTIVE(0), &w), 3);
	assert_int_equal(w, 1 + 2 + 3);
	assert_int_equal(count(fx, ACTIVE(0)), 0);
	assert_int_equal(count(fx, INACTIVE(1)), 0);
	/* Oldest at the tail. */
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[0].lru), 0);
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[2].lru), 2);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED);
	assert_int_equal(rcl_lru_node_type(&fx->objs[0].lru), RCL_LRU_FILE);
}

static void test_lruvec_add_active_unevictable_and_types(void **state)
{
	struct fixture *fx = *state;
	uint64_t w;

	add_range(fx, 0, 2, RCL_LRU_ANON, RCL_LRU_ADD_ACTIVE);
	add_range(fx, 2, 3, RCL_LRU_ANON, RCL_LRU_ADD_UNEVICTABLE);
	add_range(fx, 3, 4, RCL_LRU_FILE, 0);
	check(fx, 4);
	assert_int_equal(rcl_lruvec_count(&fx->lv, ACTIVE(1), &w), 2);
	assert_int_equal(w, 1 + 2);
	assert_int_equal(rcl_lruvec_count(&fx->lv, RCL_LRU_UNEVICTABLE, &w), 1);
	assert_int_equal(w, 3);
	assert_int_equal(count(fx, INACTIVE(0)), 1);
	assert_int_equal(rcl_lru_node_type(&fx->objs[2].lru), RCL_LRU_ANON);
	assert_true(flags_of(fx, 0) & RCL_LRU_F_ACTIVE);
	assert_true(flags_of(fx, 2) & RCL_LRU_F_UNEVICTABLE);
}

static void test_lruvec_add_bad_input(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec dead;
	struct rcl_lru_node n = RCL_LRU_NODE_INIT;

	memset(&dead, 0, sizeof(dead));
	assert_int_equal(rcl_lruvec_add(NULL, &n, 0, 1, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_add(&fx->lv, NULL, 0, 1, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_add(&dead, &n, 0, 1, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_add(&fx->lv, &n, 2, 1, 0), -EINVAL);
	assert_int_equal(rcl_lruvec_add(&fx->lv, &n, 0, 1, 1u << 9), -EINVAL);
	assert_int_equal(rcl_lruvec_add(&fx->lv, &n, 0, 1,
					RCL_LRU_ADD_ACTIVE |
						RCL_LRU_ADD_UNEVICTABLE),
			 -EINVAL);
	/* Nothing happened. */
	assert_int_equal(rcl_lru_node_flags(&n), 0);
	check(fx, 0);
}

static void test_lruvec_add_twice_is_ebusy(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec other;

	assert_int_equal(rcl_lruvec_init(&other, NULL), 0);
	/* Listed. */
	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[0].lru, 0, 1, 0),
			 -EBUSY);
	/* "Already on a list" is not "on this list": another lruvec refuses too. */
	assert_int_equal(rcl_lruvec_add(&other, &fx->objs[0].lru, 0, 1, 0),
			 -EBUSY);
	/* Pending. */
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[1].lru, 0, 2, 0), 0);
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[1].lru, 0, 2, 0),
			 -EBUSY);
	assert_int_equal(rcl_lruvec_add(&other, &fx->objs[1].lru, 0, 2,
					RCL_LRU_ADD_NOBATCH),
			 -EBUSY);
	rcl_lru_drain_local();
	check(fx, 2);
	assert_int_equal(rcl_lruvec_count(&other, INACTIVE(0), NULL), 0);
	assert_int_equal(rcl_lruvec_destroy(&other), 0);
}

static void test_lruvec_del_listed(void **state)
{
	struct fixture *fx = *state;
	uint64_t w;

	add_range(fx, 0, 3, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[1].lru), 0);
	check(fx, 2);
	assert_int_equal(rcl_lruvec_count(&fx->lv, INACTIVE(0), &w), 2);
	assert_int_equal(w, 1 + 3);
	assert_int_equal(flags_of(fx, 1), 0);
	/* Idle now: may be added again, here to the other type. */
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[1].lru, RCL_LRU_ANON,
					2, RCL_LRU_ADD_NOBATCH),
			 0);
	check(fx, 3);
	assert_int_equal(count(fx, INACTIVE(1)), 1);
}

static void test_lruvec_del_bad_input(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec other;
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;

	assert_int_equal(rcl_lruvec_init(&other, NULL), 0);
	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_del(NULL, &fx->objs[0].lru), -EINVAL);
	assert_int_equal(rcl_lruvec_del(&fx->lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &idle), -ENOENT);
	/* A node of another lruvec is refused and left alone. */
	assert_int_equal(rcl_lruvec_del(&other, &fx->objs[0].lru), -ENOENT);
	assert_int_equal(rcl_lruvec_del_wait(&other, &fx->objs[0].lru), -ENOENT);
	check(fx, 1);
	/* Double delete. */
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[0].lru), -ENOENT);
	assert_int_equal(rcl_lruvec_del_wait(&fx->lv, &fx->objs[0].lru), -ENOENT);
	check(fx, 0);
	assert_int_equal(rcl_lruvec_destroy(&other), 0);
}

static void test_lruvec_del_isolated_is_ebusy(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;

	add_range(fx, 0, 2, RCL_LRU_FILE, 0);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[0].lru), -EBUSY);
	assert_true(flags_of(fx, 0) & RCL_LRU_F_ISOLATED);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[0].lru), 0);
	check(fx, 1);
}

/* ------------------------------------------------------------------------- */
/* Per-thread batching                                                        */
/* ------------------------------------------------------------------------- */

static void test_lruvec_batched_add_is_pending_until_drain(void **state)
{
	struct fixture *fx = *state;
	int i;

	for (i = 0; i < 5; i++)
		assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[i].lru, 0,
						(uint32_t)i + 1, 0),
				 0);
	assert_int_equal(count(fx, INACTIVE(0)), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_PENDING);
	rcl_lru_drain_local();
	check(fx, 5);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED);
	/* Order is preserved: the first added is the oldest. */
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[0].lru), 0);
}

static void test_lruvec_batch_drains_when_full(void **state)
{
	struct fixture *fx = *state;
	int i;

	for (i = 0; i < RCL_LRU_PERTHREAD_BATCH - 1; i++)
		assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[i].lru, 0,
						(uint32_t)i + 1, 0),
				 0);
	assert_int_equal(count(fx, INACTIVE(0)), 0);
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[i].lru, 0,
					(uint32_t)i + 1, 0),
			 0);
	check(fx, RCL_LRU_PERTHREAD_BATCH);
	/* The next one starts a new batch. */
	i++;
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[i].lru, 0,
					(uint32_t)i + 1, 0),
			 0);
	check(fx, RCL_LRU_PERTHREAD_BATCH);
	assert_int_equal(rcl_lruvec_drain(&fx->lv), 0);
	check(fx, RCL_LRU_PERTHREAD_BATCH + 1);
}

static void test_lruvec_del_pending_leaves_no_batch_entry(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[0].lru, 0, 1, 0), 0);
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[1].lru, 0, 2, 0), 0);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(flags_of(fx, 0), 0);
	/* Overwrite the node: a stale batch entry would corrupt the lists. */
	memset(&fx->objs[0].lru, 0, sizeof(fx->objs[0].lru));
	rcl_lru_drain_local();
	check(fx, 1);
	assert_int_equal(flags_of(fx, 0), 0);
	/* Idle again: a fresh add works. */
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[0].lru, 0, 1,
					RCL_LRU_ADD_NOBATCH),
			 0);
	check(fx, 2);
}

static void test_lruvec_drain_bad_input(void **state)
{
	(void)state;
	assert_int_equal(rcl_lruvec_drain(NULL), -EINVAL);
	rcl_lru_drain_local(); /* with nothing batched: a no-op */
}

/* A helper thread that runs a function, then parks until released. */
struct parked {
	pthread_t tid;
	pthread_barrier_t ready, release;
	void (*fn)(struct fixture *fx);
	struct fixture *fx;
};

static void *parked_main(void *arg)
{
	struct parked *p = arg;

	p->fn(p->fx);
	pthread_barrier_wait(&p->ready);
	pthread_barrier_wait(&p->release);
	return NULL;
}

static void park_start(struct parked *p, struct fixture *fx,
		       void (*fn)(struct fixture *fx))
{
	p->fn = fn;
	p->fx = fx;
	assert_int_equal(pthread_barrier_init(&p->ready, NULL, 2), 0);
	assert_int_equal(pthread_barrier_init(&p->release, NULL, 2), 0);
	assert_int_equal(pthread_create(&p->tid, NULL, parked_main, p), 0);
	pthread_barrier_wait(&p->ready);
}

static void park_finish(struct parked *p)
{
	pthread_barrier_wait(&p->release);
	assert_int_equal(pthread_join(p->tid, NULL), 0);
	pthread_barrier_destroy(&p->ready);
	pthread_barrier_destroy(&p->release);
}

static void add_five_batched(struct fixture *fx)
{
	int i;

	for (i = 0; i < 5; i++)
		rcl_lruvec_add(&fx->lv, &fx->objs[i].lru, 0, (uint32_t)i + 1, 0);
}

static void *add_five_and_exit(void *arg)
{
	add_five_batched(arg);
	return NULL;
}

static void test_lruvec_thread_exit_flushes_its_batch(void **state)
{
	struct fixture *fx = *state;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, add_five_and_exit, fx), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	check(fx, 5);
}

static void test_lruvec_drain_reaches_other_threads(void **state)
{
	struct fixture *fx = *state;
	struct parked p;

	park_start(&p, fx, add_five_batched);
	assert_int_equal(count(fx, INACTIVE(0)), 0);
	assert_int_equal(rcl_lruvec_drain(&fx->lv), 0);
	check(fx, 5);
	park_finish(&p);
	check(fx, 5);
}

static void test_lruvec_del_pending_in_other_thread(void **state)
{
	struct fixture *fx = *state;
	struct parked p;

	park_start(&p, fx, add_five_batched);
	/* objs[2] sits in the parked thread's batch. */
	assert_int_equal(flags_of(fx, 2), RCL_LRU_F_PENDING);
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[2].lru), 0);
	assert_int_equal(flags_of(fx, 2), 0);
	memset(&fx->objs[2].lru, 0, sizeof(fx->objs[2].lru));
	park_finish(&p);	/* the exiting thread drains its batch */
	check(fx, 4);
	assert_int_equal(flags_of(fx, 2), 0);
}

static void test_lruvec_destroy_drains_other_threads(void **state)
{
	struct fixture *fx = *state;
	struct parked p;
	int i;

	park_start(&p, fx, add_five_batched);
	/* The drain lists the pending nodes, so the lruvec is not empty. */
	assert_int_equal(rcl_lruvec_destroy(&fx->lv), -EBUSY);
	check(fx, 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[i].lru), 0);
	park_finish(&p);
	check(fx, 0);
}

/* ------------------------------------------------------------------------- */
/* mark_accessed                                                              */
/* ------------------------------------------------------------------------- */

static void test_lruvec_mark_accessed_two_touch(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_node *n = &fx->objs[0].lru;
	struct rcl_lruvec_type_stats st;

	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED);

	/* First touch: referenced, still inactive. */
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, n), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED | RCL_LRU_F_REFERENCED);
	check(fx, 1);
	assert_int_equal(count(fx, INACTIVE(0)), 1);

	/* Second touch: activation queued in this thread's batch. */
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, n), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED);
	assert_int_equal(count(fx, INACTIVE(0)), 1);
	rcl_lru_drain_local();
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED | RCL_LRU_F_ACTIVE);
	assert_int_equal(count(fx, ACTIVE(0)), 1);
	assert_int_equal(count(fx, INACTIVE(0)), 0);
	check(fx, 1);

	/* Third touch: active referenced; more touches change nothing. */
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, n), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED | RCL_LRU_F_ACTIVE |
						  RCL_LRU_F_REFERENCED);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, n), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED | RCL_LRU_F_ACTIVE |
						  RCL_LRU_F_REFERENCED);
	check(fx, 1);

	assert_int_equal(rcl_lruvec_stats(&fx->lv, RCL_LRU_FILE, &st), 0);
	assert_int_equal(st.activated, 1);
}

static void test_lruvec_mark_accessed_pending_lands_active(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[0].lru, 0, 1, 0), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_PENDING | RCL_LRU_F_REFERENCED);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_PENDING | RCL_LRU_F_ACTIVE);
	rcl_lru_drain_local();
	assert_int_equal(count(fx, ACTIVE(0)), 1);
	check(fx, 1);
}

static void test_lruvec_mark_accessed_unevictable_only_references(void **state)
{
	struct fixture *fx = *state;

	add_range(fx, 0, 1, RCL_LRU_FILE, RCL_LRU_ADD_UNEVICTABLE);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru), 0);
	rcl_lru_drain_local();
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED |
						  RCL_LRU_F_UNEVICTABLE |
						  RCL_LRU_F_REFERENCED);
	assert_int_equal(count(fx, RCL_LRU_UNEVICTABLE), 1);
	check(fx, 1);
}

static void test_lruvec_mark_accessed_bad_input(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec other;
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;

	assert_int_equal(rcl_lruvec_init(&other, NULL), 0);
	add_range(fx, 0, 1, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	assert_int_equal(rcl_lruvec_mark_accessed(NULL, &idle), -EINVAL);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &idle), -ENOENT);
	assert_int_equal(rcl_lruvec_mark_accessed(&other, &fx->objs[0].lru),
			 -ENOENT);
	/* The refused access did not age the node. */
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED | RCL_LRU_F_ACTIVE);
	assert_int_equal(rcl_lruvec_destroy(&other), 0);
}

/*
 * The hot path writes no shared memory: with the node's page and the
 * lruvec's pages read-only, an access to an active referenced node must not
 * fault.
 */
static void test_lruvec_mark_accessed_hot_path_writes_nothing(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t lvsz = ((sizeof(struct rcl_lruvec) + (size_t)pg - 1) /
		       (size_t)pg) * (size_t)pg;
	char *mem;
	struct rcl_lruvec *lv;
	struct rcl_lru_node *n;

	(void)state;
	mem = mmap(NULL, lvsz + (size_t)pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(mem != MAP_FAILED);
	lv = (struct rcl_lruvec *)(void *)mem;
	n = (struct rcl_lru_node *)(void *)(mem + lvsz);
	assert_int_equal(rcl_lruvec_init(lv, NULL), 0);
	assert_int_equal(rcl_lruvec_add(lv, n, 0, 1,
					RCL_LRU_ADD_ACTIVE | RCL_LRU_ADD_NOBATCH),
			 0);
	assert_int_equal(rcl_lruvec_mark_accessed(lv, n), 0);
	assert_int_equal(rcl_lru_node_flags(n), RCL_LRU_F_LISTED |
							RCL_LRU_F_ACTIVE |
							RCL_LRU_F_REFERENCED);
	/* The second reference while active (a private bit) is a store too. */
	assert_int_equal(rcl_lruvec_mark_accessed(lv, n), 0);
	assert_int_equal(rcl_lru_node_flags(n), RCL_LRU_F_LISTED |
							RCL_LRU_F_ACTIVE |
							RCL_LRU_F_REFERENCED);

	assert_int_equal(mprotect(mem, lvsz + (size_t)pg, PROT_READ), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(lv, n), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(lv, n), 0);
	assert_int_equal(mprotect(mem, lvsz + (size_t)pg, PROT_READ | PROT_WRITE),
			 0);

	assert_int_equal(rcl_lruvec_del(lv, n), 0);
	assert_int_equal(rcl_lruvec_destroy(lv), 0);
	munmap(mem, lvsz + (size_t)pg);
}

/* ------------------------------------------------------------------------- */
/* Moves                                                                      */
/* ------------------------------------------------------------------------- */

static void test_lruvec_rotate_moves_to_inactive_tail(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;

	add_range(fx, 0, 3, RCL_LRU_FILE, 0);
	add_range(fx, 3, 4, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[2].lru), 0);
	assert_int_equal(rcl_lruvec_rotate(&fx->lv, &fx->objs[2].lru), 0);
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[2].lru), 0);
	assert_int_equal(flags_of(fx, 2), RCL_LRU_F_LISTED);
	/* An active node is deactivated to the tail. */
	assert_int_equal(rcl_lruvec_rotate(&fx->lv, &fx->objs[3].lru), 0);
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[3].lru), 0);
	assert_int_equal(flags_of(fx, 3), RCL_LRU_F_LISTED | RCL_LRU_F_WORKINGSET);
	check(fx, 4);
	/* The next scan meets it first. */
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_ptr_equal(rcl_lru_isolated_next(&iso, NULL), &fx->objs[3].lru);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	check(fx, 4);
}

static void test_lruvec_rotate_pending_and_errors(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;
	struct rcl_lru_isolated iso;

	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[1].lru, 0, 2, 0), 0);
	/* Pending: drained first, then rotated behind objs[0]. */
	assert_int_equal(rcl_lruvec_rotate(&fx->lv, &fx->objs[1].lru), 0);
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[1].lru), 0);
	check(fx, 2);

	add_range(fx, 2, 3, RCL_LRU_FILE, RCL_LRU_ADD_UNEVICTABLE);
	assert_int_equal(rcl_lruvec_rotate(&fx->lv, &fx->objs[2].lru), -EPERM);
	assert_int_equal(rcl_lruvec_deactivate(&fx->lv, &fx->objs[2].lru), -EPERM);
	assert_int_equal(rcl_lruvec_rotate(NULL, &idle), -EINVAL);
	assert_int_equal(rcl_lruvec_rotate(&fx->lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_rotate(&fx->lv, &idle), -ENOENT);
	assert_int_equal(rcl_lruvec_deactivate(&fx->lv, &idle), -ENOENT);
	assert_int_equal(rcl_lruvec_mark_unevictable(&fx->lv, &idle), -ENOENT);
	assert_int_equal(rcl_lruvec_unmark_unevictable(&fx->lv, &idle), -ENOENT);

	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(rcl_lruvec_rotate(&fx->lv, &fx->objs[1].lru), -EBUSY);
	assert_int_equal(rcl_lruvec_deactivate(&fx->lv, &fx->objs[1].lru), -EBUSY);
	assert_int_equal(rcl_lruvec_mark_unevictable(&fx->lv, &fx->objs[1].lru),
			 -EBUSY);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	check(fx, 3);
}

static void test_lruvec_deactivate(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec_type_stats st;

	add_range(fx, 0, 2, RCL_LRU_FILE, 0);
	add_range(fx, 2, 3, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[2].lru), 0);
	assert_int_equal(rcl_lruvec_deactivate(&fx->lv, &fx->objs[2].lru), 0);
	/* To the inactive head: the youngest inactive node. */
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[2].lru), 2);
	assert_int_equal(flags_of(fx, 2), RCL_LRU_F_LISTED | RCL_LRU_F_WORKINGSET);
	/* An inactive node stays where it is and loses its referenced bit. */
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_deactivate(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[0].lru), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED);
	check(fx, 3);
	assert_int_equal(rcl_lruvec_stats(&fx->lv, 0, &st), 0);
	assert_int_equal(st.deactivated, 1);
}

static void test_lruvec_unevictable_round_trip(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = {
		.type = 0, .nr_to_scan = 10, .priority = 7, .context = 0xabc,
	};

	add_range(fx, 0, 2, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	assert_int_equal(rcl_lruvec_mark_unevictable(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_unevictable(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(count(fx, RCL_LRU_UNEVICTABLE), 1);
	assert_int_equal(count(fx, ACTIVE(0)), 1);
	check(fx, 2);
	/* Reclaim never sees it. */
	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, &sc), 0);
	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, &sc), 0);
	assert_int_equal(count(fx, INACTIVE(0)), 1);
	sc.nr_to_scan = 1;
	expect_evict(1, RCL_EVICT_WORKINGSET, RCL_EVICT_BUSY);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
	assert_int_equal(count(fx, RCL_LRU_UNEVICTABLE), 1);
	/* Unpinned: back to the inactive head, not active. */
	assert_int_equal(rcl_lruvec_unmark_unevictable(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_unmark_unevictable(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(count(fx, RCL_LRU_UNEVICTABLE), 0);
	assert_int_equal(count(fx, INACTIVE(0)), 2);
	assert_int_equal(flags_of(fx, 0) & (RCL_LRU_F_ACTIVE | RCL_LRU_F_UNEVICTABLE),
			 0);
	check(fx, 2);
}

/* ------------------------------------------------------------------------- */
/* Isolation and putback                                                      */
/* ------------------------------------------------------------------------- */

static void test_lruvec_isolate_takes_oldest_first(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;
	struct rcl_lru_node *n;
	int expect = 0;

	add_range(fx, 0, 10, RCL_LRU_FILE, 0);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 4, &iso), 0);
	assert_int_equal(iso.nr, 4);
	assert_int_equal(iso.nr_scanned, 4);
	assert_int_equal(iso.weight, 1 + 2 + 3 + 4);
	assert_int_equal(rcl_lruvec_nr_isolated(&fx->lv), 4);
	for (n = rcl_lru_isolated_next(&iso, NULL); n;
	     n = rcl_lru_isolated_next(&iso, n)) {
		assert_ptr_equal(n, &fx->objs[expect].lru);
		assert_int_equal(rcl_lru_node_flags(n), RCL_LRU_F_ISOLATED);
		expect++;
	}
	assert_int_equal(expect, 4);
	check(fx, 6);
	assert_int_equal(count(fx, INACTIVE(0)), 6);

	/* objs[0] survives to the active list, objs[1] is freed for good. */
	assert_int_equal(rcl_lru_isolated_set_active(&iso, &fx->objs[0].lru, true), 0);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &fx->objs[1].lru), 0);
	assert_int_equal(iso.nr, 3);
	assert_int_equal(iso.weight, 1 + 3 + 4);
	assert_int_equal(flags_of(fx, 1), 0);
	assert_int_equal(rcl_lruvec_nr_isolated(&fx->lv), 3);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	assert_int_equal(iso.nr, 0);
	assert_int_equal(rcl_lruvec_nr_isolated(&fx->lv), 0);
	check(fx, 9);
	assert_int_equal(count(fx, ACTIVE(0)), 1);
	assert_int_equal(count(fx, INACTIVE(0)), 8);
	/* Survivors go to the head: they are now the youngest. */
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[4].lru), 0);
	/* The removed node is idle and can be added again. */
	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[1].lru, 0, 2,
					RCL_LRU_ADD_NOBATCH),
			 0);
	check(fx, 10);
}

static void test_lruvec_isolate_more_than_list(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;

	add_range(fx, 0, 40, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, ACTIVE(0), 100, &iso), 0);
	assert_int_equal(iso.nr, 40);
	assert_int_equal(iso.nr_scanned, 40);
	check(fx, 0);
	/* Taken from the active list, they return there. */
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	assert_int_equal(count(fx, ACTIVE(0)), 40);
	check(fx, 40);
}

static void test_lruvec_isolate_bad_input(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec other;
	struct rcl_lru_isolated iso, raw;
	struct rcl_lru_node idle = RCL_LRU_NODE_INIT;

	assert_int_equal(rcl_lruvec_init(&other, NULL), 0);
	add_range(fx, 0, 2, RCL_LRU_FILE, 0);
	rcl_lru_isolated_init(&iso);
	memset(&raw, 0, sizeof(raw));
	assert_int_equal(rcl_lruvec_isolate(NULL, 0, 1, &iso), -EINVAL);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, 0, 1, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, 0, 1, &raw), -EINVAL);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, RCL_LRU_UNEVICTABLE, 1, &iso),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(2), 1, &iso),
			 -EINVAL);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	/* A set belongs to one lruvec. */
	assert_int_equal(rcl_lruvec_isolate(&other, INACTIVE(0), 1, &iso), -EINVAL);
	assert_int_equal(rcl_lruvec_putback(&other, &iso), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &idle), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &fx->objs[1].lru), -EINVAL);
	assert_int_equal(rcl_lru_isolated_remove(NULL, &fx->objs[0].lru), -EINVAL);
	assert_int_equal(rcl_lru_isolated_set_active(&iso, &idle, true), -EINVAL);
	assert_null(rcl_lru_isolated_next(NULL, NULL));
	assert_int_equal(rcl_lruvec_putback(NULL, &iso), -EINVAL);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	check(fx, 2);
	assert_int_equal(rcl_lruvec_destroy(&other), 0);
}

static void touch_twice(struct fixture *fx)
{
	rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru);
	rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru);
}

/*
 * A node whose activation is still queued in another thread's batch is not
 * evicted: isolation activates it instead.
 */
static void test_lruvec_isolate_activates_queued_node(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;
	struct parked p;

	add_range(fx, 0, 3, RCL_LRU_FILE, 0);
	park_start(&p, fx, touch_twice);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED);	/* queued */
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 2, &iso), 0);
	assert_int_equal(iso.nr_scanned, 2);
	assert_int_equal(iso.nr, 1);
	assert_ptr_equal(rcl_lru_isolated_next(&iso, NULL), &fx->objs[1].lru);
	assert_true(flags_of(fx, 0) & RCL_LRU_F_ACTIVE);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	park_finish(&p);	/* its stale entry is applied harmlessly */
	check(fx, 3);
	assert_int_equal(count(fx, ACTIVE(0)), 1);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED | RCL_LRU_F_ACTIVE);
}


/*
 * Isolation of the inactive list activates a node whose activation is queued
 * in another thread's batch; the entry stays there.  If that node is then
 * isolated from the active list and removed (to be freed), the entry must be
 * purged, or the other thread's next drain touches freed memory.
 */
static void test_lruvec_isolated_remove_purges_stale_entry(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;
	struct rcl_lru_node poison;
	struct parked p;

	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	park_start(&p, fx, touch_twice);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(iso.nr, 0);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, ACTIVE(0), 1, &iso), 0);
	assert_int_equal(iso.nr, 1);
	assert_int_equal(rcl_lru_isolated_remove(&iso, &fx->objs[0].lru), 0);
	/* No batch refers to it: the private QUEUED bit (7) is clear. */
	assert_int_equal(atomic_load(&fx->objs[0].lru.__flags), 0);
	memset(&fx->objs[0].lru, 0xff, sizeof(poison));
	memcpy(&poison, &fx->objs[0].lru, sizeof(poison));
	park_finish(&p);	/* the parked thread drains its batch */
	assert_memory_equal(&fx->objs[0].lru, &poison, sizeof(poison));
	rcl_lru_node_init(&fx->objs[0].lru);
	check(fx, 0);
}


/*
 * Found in review: after isolation activated a node whose activation was
 * queued in another thread's batch, the stale entry kept the QUEUED bit, so
 * every later scan "activated" the node again and it could never be
 * reclaimed.  Now the stale entry is recognised (no WANT_ACT), the node is
 * evicted normally, and the entry is purged before the evict callback frees
 * the object.
 */
static void test_lruvec_stale_entry_does_not_block_reclaim(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sa = { .type = 0, .nr_to_scan = 8 };
	struct rcl_lru_shrink_control si = {
		.type = 0, .nr_to_scan = 1, .priority = 7, .context = 0xabc,
	};
	struct rcl_lru_isolated iso;
	struct rcl_lruvec_type_stats st;
	struct rcl_lru_node poison;
	struct parked p;

	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	park_start(&p, fx, touch_twice);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(iso.nr, 0);				/* activated */
	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, &sa), 0);
	assert_int_equal(sa.nr_deactivated, 1);		/* not touched since */
	expect_evict(0, RCL_EVICT_WORKINGSET, RCL_EVICT_FREED);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &si), 0);
	assert_int_equal(si.nr_freed, 1);
	assert_int_equal(si.nr_activated, 0);
	/* The stale entry is gone: the parked thread's exit leaves it alone. */
	memset(&fx->objs[0].lru, 0xff, sizeof(poison));
	memcpy(&poison, &fx->objs[0].lru, sizeof(poison));
	park_finish(&p);
	assert_memory_equal(&fx->objs[0].lru, &poison, sizeof(poison));
	rcl_lru_node_init(&fx->objs[0].lru);
	assert_int_equal(rcl_lruvec_stats(&fx->lv, 0, &st), 0);
	assert_int_equal(st.activated, 1);
	check(fx, 0);
}

/* A second touch after isolation's early activation asks again. */
static void test_lruvec_stale_entry_reused_by_new_touch(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sa = { .type = 0, .nr_to_scan = 8 };
	struct rcl_lru_isolated iso;
	struct parked p;

	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	park_start(&p, fx, touch_twice);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, &sa), 0);
	assert_int_equal(count(fx, INACTIVE(0)), 1);
	/* Touched twice again: the existing (stale) entry is reused. */
	touch_twice(fx);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(iso.nr, 0);
	assert_int_equal(count(fx, ACTIVE(0)), 1);
	park_finish(&p);
	check(fx, 1);
	assert_int_equal(count(fx, ACTIVE(0)), 1);
}

static void test_lruvec_pending_unevictable_only_references(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(rcl_lruvec_add(&fx->lv, &fx->objs[0].lru, 0, 1,
					RCL_LRU_ADD_UNEVICTABLE), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_PENDING |
						  RCL_LRU_F_UNEVICTABLE |
						  RCL_LRU_F_REFERENCED);
	rcl_lru_drain_local();
	assert_int_equal(count(fx, RCL_LRU_UNEVICTABLE), 1);
	check(fx, 1);
}

/* An emptied set may serve another lruvec. */
static void test_lruvec_empty_set_rebinds(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec other;
	struct rcl_lru_node n = RCL_LRU_NODE_INIT;
	struct rcl_lru_isolated iso;

	assert_int_equal(rcl_lruvec_init(&other, NULL), 0);
	assert_int_equal(rcl_lruvec_add(&other, &n, 0, 1, RCL_LRU_ADD_NOBATCH), 0);
	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	assert_int_equal(rcl_lruvec_isolate(&other, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(iso.nr, 1);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), -EINVAL);
	assert_int_equal(rcl_lruvec_putback(&other, &iso), 0);
	assert_int_equal(rcl_lruvec_del(&other, &n), 0);
	assert_int_equal(rcl_lruvec_destroy(&other), 0);
	check(fx, 1);
}

/* ------------------------------------------------------------------------- */
/* shrink_inactive                                                            */
/* ------------------------------------------------------------------------- */

static void test_lruvec_shrink_inactive_every_answer(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = {
		.type = RCL_LRU_FILE, .nr_to_scan = 3, .priority = 7,
		.context = 0xabc,
	};
	struct rcl_lruvec_type_stats st;

	add_range(fx, 0, 5, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[1].lru), 0);
	expect_evict(0, 0, RCL_EVICT_FREED);
	expect_evict(1, RCL_EVICT_REFERENCED, RCL_EVICT_BUSY);
	expect_evict(2, 0, RCL_EVICT_ACTIVATE);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);

	assert_int_equal(sc.nr_scanned, 3);
	assert_int_equal(sc.nr_taken, 3);
	assert_int_equal(sc.nr_freed, 1);
	assert_int_equal(sc.weight_freed, 1);
	assert_int_equal(sc.nr_rotated, 1);
	assert_int_equal(sc.nr_activated, 1);
	/* objs[0] was forgotten: the library left its node as it was. */
	assert_true(flags_of(fx, 0) & RCL_LRU_F_ISOLATED);
	rcl_lru_node_init(&fx->objs[0].lru);
	check(fx, 4);
	assert_int_equal(count(fx, INACTIVE(0)), 3);
	assert_int_equal(count(fx, ACTIVE(0)), 1);
	assert_true(lru_check_on_list(&fx->lv, ACTIVE(0), &fx->objs[2].lru));
	/* The busy one went to the head of the inactive list. */
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[1].lru), 2);
	assert_int_equal(rcl_lruvec_nr_isolated(&fx->lv), 0);

	assert_int_equal(rcl_lruvec_stats(&fx->lv, RCL_LRU_FILE, &st), 0);
	assert_int_equal(st.scanned, 3);
	assert_int_equal(st.freed, 1);
	assert_int_equal(st.weight_freed, 1);
	assert_int_equal(st.rotated, 1);
	assert_int_equal(st.activated, 1);
}

static void test_lruvec_shrink_inactive_outputs_accumulate(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = {
		.type = RCL_LRU_FILE, .nr_to_scan = 100, .priority = 7,
		.context = 0xabc,
	};
	int i;

	/* 40 objects: more than one isolation chunk; all are freed. */
	add_range(fx, 0, 40, RCL_LRU_FILE, 0);
	for (i = 0; i < 40; i++)
		expect_evict(i, 0, RCL_EVICT_FREED);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
	assert_int_equal(sc.nr_scanned, 40);
	assert_int_equal(sc.nr_freed, 40);
	assert_int_equal(sc.weight_freed, 40 * 41 / 2);
	for (i = 0; i < 40; i++)
		rcl_lru_node_init(&fx->objs[i].lru);
	check(fx, 0);
	/* An empty list: nothing scanned, nothing changes. */
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
	assert_int_equal(sc.nr_scanned, 40);
}

static void test_lruvec_shrink_inactive_unknown_answer_keeps(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = {
		.type = RCL_LRU_FILE, .nr_to_scan = 1, .priority = 7,
		.context = 0xabc,
	};

	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	expect_evict(0, 0, (enum rcl_evict_status)77);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
	assert_int_equal(sc.nr_rotated, 1);
	check(fx, 1);
}

static void test_lruvec_shrink_bad_input(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = { .type = 0, .nr_to_scan = 1 };
	struct rcl_lru_shrink_control bad = { .type = 2, .nr_to_scan = 1 };
	struct rcl_lruvec noops;

	assert_int_equal(rcl_lruvec_init(&noops, NULL), 0);
	assert_int_equal(rcl_lruvec_shrink_inactive(NULL, &sc), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &bad), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_inactive(&noops, &sc), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_active(NULL, &sc), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, NULL), -EINVAL);
	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, &bad), -EINVAL);
	assert_int_equal(rcl_lruvec_destroy(&noops), 0);
}

/* Re-entry from the evict callback. */
static struct fixture *reenter_fx;
static int reenter_results[6];

static void reenter_hook(struct rcl_lru_node *node,
			 struct rcl_evict_control *ctl)
{
	struct fixture *fx = reenter_fx;

	(void)ctl;
	reenter_results[0] = rcl_lruvec_del(&fx->lv, node);
	reenter_results[1] = rcl_lruvec_del_wait(&fx->lv, node);
	reenter_results[2] = rcl_lruvec_destroy(&fx->lv);
	/* Allowed: operations on other nodes. */
	reenter_results[3] = rcl_lruvec_add(&fx->lv, &fx->objs[10].lru, 0, 11, 0);
	reenter_results[4] = rcl_lruvec_del(&fx->lv, &fx->objs[1].lru);
	reenter_results[5] = rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[2].lru);
}

static void test_lruvec_evict_callback_reentry(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = {
		.type = RCL_LRU_FILE, .nr_to_scan = 1, .priority = 7,
		.context = 0xabc,
	};

	add_range(fx, 0, 3, RCL_LRU_FILE, 0);
	reenter_fx = fx;
	evict_hook = reenter_hook;
	expect_evict(0, 0, RCL_EVICT_BUSY);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
	evict_hook = NULL;
	assert_int_equal(reenter_results[0], -EBUSY);
	assert_int_equal(reenter_results[1], -EDEADLK);
	assert_int_equal(reenter_results[2], -EDEADLK);
	assert_int_equal(reenter_results[3], 0);
	assert_int_equal(reenter_results[4], 0);
	assert_int_equal(reenter_results[5], 0);
	rcl_lru_drain_local();
	check(fx, 3);	/* objs 0, 2, 10 */
	assert_true(flags_of(fx, 2) & RCL_LRU_F_REFERENCED);
	assert_int_equal(flags_of(fx, 1), 0);
}

/* batch_end: once per isolated batch, after the putback, before returning. */
struct be_cache {
	struct rcl_lruvec lv;
	struct obj objs[NOBJ];
	int log[2 * NOBJ];	/* evicted keys; -1 - nr_freed at a batch end */
	size_t nlog;
	size_t evicts_since_end;
	size_t ends;
	size_t busy_listed_at_end;
	long isolated_at_end;
	int destroy_at_end;
	int spare_add_at_end, spare_del_at_end;	/* on objs[NOBJ - 1] */
	bool all_busy;
	struct obj *deferred[NOBJ];	/* freed, released at the batch end */
	size_t ndeferred;
};

static enum rcl_evict_status be_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct be_cache *c = ctl->priv;
	struct obj *o = rcl_container_of(node, struct obj, lru);

	c->log[c->nlog++] = o->key;
	c->evicts_since_end++;
	if (c->all_busy || o->key % 2)
		return RCL_EVICT_BUSY;
	/* Freed: the node is handed back to us, released at the batch end. */
	c->deferred[c->ndeferred++] = o;
	return RCL_EVICT_FREED;
}

static void be_batch_end(struct rcl_lruvec *lv, void *priv, size_t nr_freed)
{
	struct be_cache *c = priv;
	size_t i;

	assert_ptr_equal(lv, &c->lv);
	assert_int_equal(nr_freed, c->ndeferred);
	c->log[c->nlog++] = -1 - (int)nr_freed;
	c->ends++;
	/* Every kept node of the batch is back on a list, none isolated. */
	c->isolated_at_end = (long)rcl_lruvec_nr_isolated(lv);
	c->busy_listed_at_end = 0;
	for (i = 0; i < NOBJ; i++)
		if (c->objs[i].key % 2 &&
		    (rcl_lru_node_flags(&c->objs[i].lru) &
		     (RCL_LRU_F_ISOLATED | RCL_LRU_F_LISTED)) ==
			    RCL_LRU_F_LISTED)
			c->busy_listed_at_end++;
	/* Still inside reclaim of this lruvec, but no library lock is held. */
	c->destroy_at_end = rcl_lruvec_destroy(lv);
	c->spare_add_at_end = rcl_lruvec_add(lv, &c->objs[NOBJ - 1].lru,
					     RCL_LRU_FILE, 1,
					     RCL_LRU_ADD_NOBATCH);
	c->spare_del_at_end = rcl_lruvec_del(lv, &c->objs[NOBJ - 1].lru);
	/* The freed nodes are ours: reuse their memory now. */
	for (i = 0; i < c->ndeferred; i++) {
		memset(&c->deferred[i]->lru, 0x5a, sizeof(c->deferred[i]->lru));
		rcl_lru_node_init(&c->deferred[i]->lru);
	}
	c->ndeferred = 0;
	c->evicts_since_end = 0;
}

/*
 * rcl_lruvec_shrink_inactive() claims a clean node for the evict callback
 * when it isolates it: from then until the callback's answer the node's
 * dirty state is frozen, also for the nodes of the batch not judged yet.
 * From the callback of node 0: set_dirty() on node 1 (same batch, not yet
 * judged) is -EDEADLK and writeback_start() -EBUSY; node 5 (not isolated)
 * may be dirtied.  So node 1 is freed clean and node 5 stays, dirty.
 */
static struct fixture *claim_fx;
static int claim_rc[3];

static void claim_hook(struct rcl_lru_node *node,
		       struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, lru);

	(void)ctl;
	if (o->key != 0)
		return;
	claim_rc[0] = rcl_lruvec_set_dirty(&claim_fx->lv,
					   &claim_fx->objs[1].lru);
	claim_rc[1] = rcl_lruvec_writeback_start(&claim_fx->lv,
						 &claim_fx->objs[1].lru);
	claim_rc[2] = rcl_lruvec_set_dirty(&claim_fx->lv,
					   &claim_fx->objs[5].lru);
}

static void test_lruvec_shrink_claims_the_batch_when_isolating(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = {
		.type = RCL_LRU_FILE, .nr_to_scan = 2, .priority = 7,
		.context = 0xabc,
	};

	add_range(fx, 0, 6, RCL_LRU_FILE, 0);
	claim_fx = fx;
	evict_hook = claim_hook;
	expect_evict(0, 0, RCL_EVICT_BUSY);
	expect_evict(1, 0, RCL_EVICT_FREED);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
	evict_hook = NULL;
	assert_int_equal(claim_rc[0], -EDEADLK);
	assert_int_equal(claim_rc[1], -EBUSY);
	assert_int_equal(claim_rc[2], 0);
	assert_int_equal(sc.nr_freed, 1);
	assert_int_equal(sc.nr_dirty, 0);
	/* Freed clean; the library left it as it was (isolated). */
	assert_int_equal(flags_of(fx, 1) & (RCL_LRU_F_DIRTY | RCL_LRU_F_LISTED),
			 0);
	rcl_lru_node_init(&fx->objs[1].lru);
	assert_true(flags_of(fx, 5) & RCL_LRU_F_DIRTY);
	assert_true(flags_of(fx, 0) & RCL_LRU_F_LISTED);
	assert_false(flags_of(fx, 0) & RCL_LRU_F_DIRTY);
	check(fx, 5);
}

static void test_lruvec_batch_end_once_per_batch(void **state)
{
	static const struct rcl_lruvec_ops ops = {
		.evict = be_evict, .batch_end = be_batch_end,
	};
	struct be_cache *c = calloc(1, sizeof(*c));
	struct rcl_lruvec_config cfg = { .ops = &ops };
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 40 };
	size_t i, k = 0;

	(void)state;
	assert_non_null(c);
	cfg.priv = c;
	assert_int_equal(rcl_lruvec_init(&c->lv, &cfg), 0);
	for (i = 0; i < NOBJ; i++)
		c->objs[i].key = (int)i;
	for (i = 0; i < 40; i++)
		assert_int_equal(rcl_lruvec_add(&c->lv, &c->objs[i].lru,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH),
				 0);
	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &sc), 0);
	assert_int_equal(sc.nr_freed, 20);
	assert_int_equal(sc.nr_rotated, 20);
	/* Two batches (32 + 8), each closed by one batch_end. */
	assert_int_equal(c->ends, 2);
	assert_int_equal(c->nlog, 42);
	for (i = 0; i < 32; i++)
		assert_int_equal(c->log[k++], (int)i);
	assert_int_equal(c->log[k++], -1 - 16);
	for (i = 32; i < 40; i++)
		assert_int_equal(c->log[k++], (int)i);
	assert_int_equal(c->log[k++], -1 - 4);
	assert_int_equal(c->isolated_at_end, 0);
	assert_int_equal(c->busy_listed_at_end, 20);
	assert_int_equal(c->destroy_at_end, -EDEADLK);
	assert_int_equal(c->spare_add_at_end, 0);
	assert_int_equal(c->spare_del_at_end, 0);
	/* The nodes released at the batch end are idle and may be reused. */
	assert_int_equal(rcl_lru_node_flags(&c->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_add(&c->lv, &c->objs[0].lru, RCL_LRU_FILE,
					1, RCL_LRU_ADD_NOBATCH),
			 0);
	assert_int_equal(rcl_lruvec_count(&c->lv, INACTIVE(RCL_LRU_FILE), NULL),
			 21);

	/* A batch that frees nothing still ends: nr_freed 0. */
	c->all_busy = true;
	c->nlog = 0;
	sc = (struct rcl_lru_shrink_control){ .type = RCL_LRU_FILE,
					      .nr_to_scan = 5 };
	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &sc), 0);
	assert_int_equal(sc.nr_freed, 0);
	assert_int_equal(sc.nr_rotated, 5);
	assert_int_equal(c->ends, 3);
	assert_int_equal(c->nlog, 6);
	assert_int_equal(c->log[5], -1);

	/* Nothing to scan: no batch, no batch_end. */
	sc.nr_to_scan = 0;
	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &sc), 0);
	assert_int_equal(c->ends, 3);
	for (i = 0; i < 40; i++)
		assert_int_equal(rcl_lruvec_del(&c->lv, &c->objs[i].lru),
				 (i % 2 || i == 0) ? 0 : -ENOENT);
	sc.nr_to_scan = 8;
	assert_int_equal(rcl_lruvec_shrink_inactive(&c->lv, &sc), 0);
	assert_int_equal(c->ends, 3);
	assert_int_equal(rcl_lruvec_destroy(&c->lv), 0);
	free(c);
}

/* ------------------------------------------------------------------------- */
/* shrink_active and inactive_is_low                                          */
/* ------------------------------------------------------------------------- */

static void test_lruvec_shrink_active_rule(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE, .nr_to_scan = 3 };
	struct rcl_lruvec_type_stats st;

	add_range(fx, 0, 4, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	/* objs[0] (the tail) and objs[2] are referenced. */
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[0].lru), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&fx->lv, &fx->objs[2].lru), 0);
	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, &sc), 0);
	/* Scanned 0 (rotated), 1 (deactivated), 2 (rotated). */
	assert_int_equal(sc.nr_scanned, 3);
	assert_int_equal(sc.nr_rotated, 2);
	assert_int_equal(sc.nr_deactivated, 1);
	assert_int_equal(flags_of(fx, 0), RCL_LRU_F_LISTED | RCL_LRU_F_ACTIVE);
	assert_int_equal(flags_of(fx, 1), RCL_LRU_F_LISTED | RCL_LRU_F_WORKINGSET);
	assert_int_equal(count(fx, ACTIVE(0)), 3);
	assert_int_equal(count(fx, INACTIVE(0)), 1);
	check(fx, 4);

	/* Second pass: the rotated nodes lost their bit and go now. */
	sc.nr_to_scan = 10;
	assert_int_equal(rcl_lruvec_shrink_active(&fx->lv, &sc), 0);
	assert_int_equal(count(fx, ACTIVE(0)), 0);
	assert_int_equal(count(fx, INACTIVE(0)), 4);
	check(fx, 4);
	assert_int_equal(rcl_lruvec_stats(&fx->lv, RCL_LRU_FILE, &st), 0);
	assert_int_equal(st.refill_scanned, 6);
	assert_int_equal(st.active_rotated, 2);
	assert_int_equal(st.deactivated, 4);

	/*
	 * Inactive, head to tail: 2 0 3 1 (1 went first, then 3, 0, 2).
	 * Deactivated nodes reach the evict callback with WORKINGSET.
	 */
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[1].lru), 0);
	assert_int_equal(lru_check_pos_from_tail(&fx->lv, INACTIVE(0),
						 &fx->objs[2].lru), 3);
	sc.nr_to_scan = 1;
	sc.priority = 7;
	sc.context = 0xabc;
	expect_evict(1, RCL_EVICT_WORKINGSET, RCL_EVICT_BUSY);
	assert_int_equal(rcl_lruvec_shrink_inactive(&fx->lv, &sc), 0);
}

/*
 * A second reference while active and referenced buys one more rotation at
 * the active tail (a 2-bit count); RCL_LRUVEC_KERNEL keeps the 1-bit rule.
 */
static void second_reference_case(bool kernel)
{
	struct rcl_lruvec lv;
	struct rcl_lruvec_config cfg = { .ops = &mock_ops,
					 .flags = kernel ? RCL_LRUVEC_KERNEL : 0 };
	struct rcl_lru_node n[2];
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE, .nr_to_scan = 1 };
	int i;

	memset(n, 0, sizeof(n));
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(rcl_lruvec_add(&lv, &n[i], RCL_LRU_FILE, 1,
						RCL_LRU_ADD_ACTIVE |
							RCL_LRU_ADD_NOBATCH),
				 0);
	/* n[0], the tail, is referenced twice. */
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &n[0]), 0);
	assert_int_equal(rcl_lruvec_mark_accessed(&lv, &n[0]), 0);
	assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), 0);	/* n[0] rotates */
	assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), 0);	/* n[1] goes */
	assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), 0);	/* n[0]: ? */
	assert_int_equal(sc.nr_scanned, 3);
	assert_int_equal(sc.nr_rotated, kernel ? 1 : 2);
	assert_int_equal(sc.nr_deactivated, kernel ? 2 : 1);
	assert_int_equal(rcl_lru_node_flags(&n[0]) & RCL_LRU_F_ACTIVE,
			 kernel ? 0 : RCL_LRU_F_ACTIVE);
	/* The second reference is spent: the next visit deactivates. */
	if (!kernel) {
		assert_int_equal(rcl_lruvec_shrink_active(&lv, &sc), 0);
		assert_int_equal(sc.nr_deactivated, 2);
	}
	assert_int_equal(rcl_lruvec_count(&lv, ACTIVE(0), NULL), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(rcl_lruvec_del(&lv, &n[i]), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

static void test_lruvec_shrink_active_second_reference(void **state)
{
	(void)state;
	second_reference_case(false);
	second_reference_case(true);
}

static void test_lruvec_inactive_ratio_is_the_sqrt_rule(void **state)
{
	static const struct {
		uint64_t gb;
		unsigned ratio;
	} table[] = {
		{ 0, 1 }, { 1, 3 }, { 10, 10 }, { 100, 31 }, { 1024, 101 },
		{ 10240, 320 },
	};
	struct rcl_lruvec_config cfg = { .weight_per_gib = 1000 };
	struct rcl_lruvec lv;
	struct rcl_lru_node a = RCL_LRU_NODE_INIT, b = RCL_LRU_NODE_INIT;
	size_t i;

	(void)state;
	assert_int_equal(rcl_lruvec_init(&lv, &cfg), 0);
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		/* One inactive node of weight gb * 1000 (one "GiB" = 1000). */
		uint32_t w = (uint32_t)(table[i].gb * 1000);

		assert_int_equal(rcl_lruvec_add(&lv, &a, 0, w, RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_inactive_ratio(&lv, 0), table[i].ratio);
		assert_int_equal(rcl_lruvec_del(&lv, &a), 0);
	}
	/* 1 "GiB" of active, less of inactive: ratio 3 decides. */
	assert_int_equal(rcl_lruvec_add(&lv, &a, 0, 800, RCL_LRU_ADD_NOBATCH |
							 RCL_LRU_ADD_ACTIVE), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &b, 0, 300, RCL_LRU_ADD_NOBATCH), 0);
	assert_int_equal(rcl_lruvec_inactive_ratio(&lv, 0), 3);
	assert_false(rcl_lruvec_inactive_is_low(&lv, 0));	/* 900 >= 800 */
	assert_int_equal(rcl_lruvec_del(&lv, &b), 0);
	assert_int_equal(rcl_lruvec_add(&lv, &b, 0, 260, RCL_LRU_ADD_NOBATCH), 0);
	assert_int_equal(rcl_lruvec_inactive_ratio(&lv, 0), 3);
	assert_true(rcl_lruvec_inactive_is_low(&lv, 0));	/* 780 < 800 */
	/* The other type is empty: not low. */
	assert_false(rcl_lruvec_inactive_is_low(&lv, 1));
	assert_false(rcl_lruvec_inactive_is_low(&lv, 2));
	assert_false(rcl_lruvec_inactive_is_low(NULL, 0));
	assert_int_equal(rcl_lruvec_inactive_ratio(NULL, 0), 0);
	assert_int_equal(rcl_lruvec_del(&lv, &a), 0);
	assert_int_equal(rcl_lruvec_del(&lv, &b), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
}

static void test_lruvec_small_lists_keep_inactive_as_large_as_active(void **state)
{
	struct fixture *fx = *state;

	/* Below 1 GiB the ratio is 1 (weights in bytes by default). */
	add_range(fx, 0, 3, RCL_LRU_FILE, RCL_LRU_ADD_ACTIVE);
	add_range(fx, 3, 4, RCL_LRU_FILE, 0);
	assert_int_equal(rcl_lruvec_inactive_ratio(&fx->lv, 0), 1);
	assert_true(rcl_lruvec_inactive_is_low(&fx->lv, 0));	/* 4 < 1+2+3 */
	add_range(fx, 4, 5, RCL_LRU_FILE, 0);
	assert_false(rcl_lruvec_inactive_is_low(&fx->lv, 0));	/* 9 >= 6 */
}

/* ------------------------------------------------------------------------- */
/* Counts and stats: bad input                                                */
/* ------------------------------------------------------------------------- */

static void test_lruvec_queries_bad_input(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lruvec_type_stats st;
	uint64_t w = 99;

	assert_int_equal(rcl_lruvec_count(NULL, 0, &w), 0);
	assert_int_equal(w, 0);
	w = 99;
	assert_int_equal(rcl_lruvec_count(&fx->lv, RCL_LRU_NR_LISTS, &w), 0);
	assert_int_equal(w, 0);
	assert_int_equal(rcl_lruvec_nr_isolated(NULL), 0);
	assert_int_equal(rcl_lruvec_nr_types(NULL), 0);
	assert_int_equal(rcl_lruvec_id(NULL), 0);
	assert_null(rcl_lruvec_type_name(NULL, 0));
	assert_int_equal(rcl_lruvec_stats(NULL, 0, &st), -EINVAL);
	assert_int_equal(rcl_lruvec_stats(&fx->lv, 2, &st), -EINVAL);
	assert_int_equal(rcl_lruvec_stats(&fx->lv, 0, NULL), -EINVAL);
}

/* ------------------------------------------------------------------------- */
/* del_wait across threads                                                    */
/* ------------------------------------------------------------------------- */

struct waiter {
	struct fixture *fx;
	int result;
};

static void *del_wait_main(void *arg)
{
	struct waiter *w = arg;

	w->result = rcl_lruvec_del_wait(&w->fx->lv, &w->fx->objs[0].lru);
	return NULL;
}

static void test_lruvec_del_wait_waits_for_putback(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;
	struct waiter w = { .fx = fx, .result = 1 };
	pthread_t t;

	add_range(fx, 0, 2, RCL_LRU_FILE, 0);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(pthread_create(&t, NULL, del_wait_main, &w), 0);
	/* Wait until the deleter sleeps on the lruvec (a private counter). */
	while (atomic_load(&fx->lv.__nr_waiters) == 0)
		sched_yield();
	assert_true(flags_of(fx, 0) & RCL_LRU_F_ISOLATED);
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.result, 0);
	assert_int_equal(flags_of(fx, 0), 0);
	check(fx, 1);
}

static void test_lruvec_del_wait_wakes_on_remove(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;
	struct waiter w = { .fx = fx, .result = 1 };
	pthread_t t;

	add_range(fx, 0, 1, RCL_LRU_FILE, 0);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(pthread_create(&t, NULL, del_wait_main, &w), 0);
	while (atomic_load(&fx->lv.__nr_waiters) == 0)
		sched_yield();
	/* The isolating caller takes it for good instead: the waiter learns. */
	assert_int_equal(rcl_lru_isolated_remove(&iso, &fx->objs[0].lru), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(w.result, -ENOENT);
	check(fx, 0);
}

/* Found in review: a thread cancelled in del_wait died holding the lock. */
static void *del_wait_cancellable(void *arg)
{
	struct waiter *w = arg;

	w->result = rcl_lruvec_del_wait(&w->fx->lv, &w->fx->objs[0].lru);
	pthread_testcancel();
	return NULL;
}

static void test_lruvec_del_wait_survives_cancellation(void **state)
{
	struct fixture *fx = *state;
	struct rcl_lru_isolated iso;
	struct waiter w = { .fx = fx, .result = 1 };
	pthread_t t;
	void *ret;

	add_range(fx, 0, 2, RCL_LRU_FILE, 0);
	rcl_lru_isolated_init(&iso);
	assert_int_equal(rcl_lruvec_isolate(&fx->lv, INACTIVE(0), 1, &iso), 0);
	assert_int_equal(pthread_create(&t, NULL, del_wait_cancellable, &w), 0);
	while (atomic_load(&fx->lv.__nr_waiters) == 0)
		sched_yield();
	assert_int_equal(pthread_cancel(t), 0);
	/* The wait is not a cancellation point: the waiter finishes its
	 * delete once the node is back, then is cancelled. */
	assert_int_equal(rcl_lruvec_putback(&fx->lv, &iso), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	assert_int_equal(w.result, 0);
	assert_int_equal(atomic_load(&fx->lv.__nr_waiters), 0);
	/* The lock is free. */
	assert_int_equal(rcl_lruvec_del(&fx->lv, &fx->objs[1].lru), 0);
	check(fx, 0);
}

/*
 * rcl_lruvec_destroy(A) from an evict callback of B, where B's shrink runs
 * from A's batch_end (allowed: batch_end runs under the rules of evict).
 * A is still being shrunk by the outer call, which touches it after
 * batch_end returns: the destroy must be refused (-EDEADLK) even though A's
 * batch is back and A is empty.  Before the fix only the innermost shrink
 * was seen, the destroy returned 0, and the application's free of A made
 * the outer shrink a use-after-free (ASan).  Also from B's evict callback
 * inside A's evict callback (A's node isolated: -EDEADLK, not -EBUSY).
 */
struct nest_lv {
	struct rcl_lruvec *a, b;
	struct rcl_lru_node na, nb;
	bool from_evict;	/* start B's shrink from A's evict, not batch_end */
	int nested;
	int destroy_ret;
};

static struct nest_lv nest_lv;

static void nest_shrink_b(void)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 1 };

	if (nest_lv.nested++)
		return;
	rcl_lruvec_shrink_inactive(&nest_lv.b, &sc);
}

static enum rcl_evict_status nest_evict_a(struct rcl_lru_node *n,
					  struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	if (nest_lv.from_evict)
		nest_shrink_b();
	return RCL_EVICT_FREED;
}

static void nest_batch_end_a(struct rcl_lruvec *lv, void *priv, size_t freed)
{
	(void)lv;
	(void)priv;
	(void)freed;
	if (!nest_lv.from_evict)
		nest_shrink_b();
}

static enum rcl_evict_status nest_evict_b(struct rcl_lru_node *n,
					  struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	nest_lv.destroy_ret = rcl_lruvec_destroy(nest_lv.a);
	return RCL_EVICT_FREED;
}

static void test_lruvec_destroy_from_nested_shrink_refused(void **state)
{
	static const struct rcl_lruvec_ops ops_a = {
		.evict = nest_evict_a, .batch_end = nest_batch_end_a,
	};
	static const struct rcl_lruvec_ops ops_b = { .evict = nest_evict_b };
	struct rcl_lruvec_config ca = { .ops = &ops_a }, cb = { .ops = &ops_b };
	int round;

	(void)state;
	for (round = 0; round < 2; round++) {
		struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
						     .nr_to_scan = 64 };

		memset(&nest_lv, 0, sizeof(nest_lv));
		nest_lv.from_evict = round == 1;
		nest_lv.destroy_ret = 12345;
		nest_lv.a = malloc(sizeof(*nest_lv.a));
		assert_non_null(nest_lv.a);
		assert_int_equal(rcl_lruvec_init(nest_lv.a, &ca), 0);
		assert_int_equal(rcl_lruvec_init(&nest_lv.b, &cb), 0);
		assert_int_equal(rcl_lruvec_add(nest_lv.a, &nest_lv.na,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_add(&nest_lv.b, &nest_lv.nb,
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_lruvec_shrink_inactive(nest_lv.a, &sc), 0);
		assert_int_equal(sc.nr_freed, 1);
		assert_int_equal(nest_lv.nested, 1);
		assert_int_equal(nest_lv.destroy_ret, -EDEADLK);
		/* Outside the shrinks the same call destroys both. */
		assert_int_equal(rcl_lruvec_destroy(nest_lv.a), 0);
		assert_int_equal(rcl_lruvec_destroy(&nest_lv.b), 0);
		free(nest_lv.a);
	}
}

/*
 * A reclaimer cancelled while its evict callback runs (at a cancellation
 * point the callback reaches: a write(), a wait) died with its isolation
 * batch still isolated: nothing put it back, rcl_lruvec_del() said -EBUSY
 * and rcl_lruvec_destroy() -EBUSY for ever (a review's reproducer).  The
 * callbacks now run with cancellation held off: the request waits until
 * the shrink returns and acts at the thread's next cancellation point, so
 * every node is back on its list.
 */
#define CANCEL_N 8
static struct {
	struct rcl_lruvec lv;
	struct rcl_lru_node nodes[CANCEL_N];
	volatile int in_cb, cancelled, calls;
} cnl;

static enum rcl_evict_status cancel_evict(struct rcl_lru_node *n,
					  struct rcl_evict_control *ctl)
{
	unsigned long spins;

	(void)n;
	(void)ctl;
	__atomic_store_n(&cnl.in_cb, 1, __ATOMIC_SEQ_CST);
	for (spins = 0; !__atomic_load_n(&cnl.cancelled, __ATOMIC_SEQ_CST) &&
			spins < 20000;
	     spins++)
		usleep(1000);
	__atomic_add_fetch(&cnl.calls, 1, __ATOMIC_SEQ_CST);
	pthread_testcancel();	/* a cancellation point in the callback */
	return RCL_EVICT_BUSY;	/* kept */
}

static __attribute__((noinline)) void cancel_shrink(void)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = CANCEL_N };

	(void)rcl_lruvec_shrink_inactive(&cnl.lv, &sc);
}

/*
 * The cancellation unwinds this frame only, which has no locals: ASan
 * leaves the redzones of an unwound frame poisoned, and its own thread
 * teardown then reports them.
 */
static void *cancel_reclaimer(void *arg)
{
	(void)arg;
	cancel_shrink();
	pthread_testcancel();	/* the thread's own: it ends here */
	return NULL;
}

static void test_lruvec_cancel_in_evict_callback_puts_back(void **state)
{
	static const struct rcl_lruvec_ops ops = { .evict = cancel_evict };
	struct rcl_lruvec_config cfg = { .ops = &ops };
	unsigned long spins;
	void *ret = NULL;
	pthread_t t;
	int i;

	(void)state;
	memset(&cnl, 0, sizeof(cnl));
	assert_int_equal(rcl_lruvec_init(&cnl.lv, &cfg), 0);
	for (i = 0; i < CANCEL_N; i++)
		assert_int_equal(rcl_lruvec_add(&cnl.lv, &cnl.nodes[i],
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
	assert_int_equal(pthread_create(&t, NULL, cancel_reclaimer, NULL), 0);
	for (spins = 0; !__atomic_load_n(&cnl.in_cb, __ATOMIC_SEQ_CST) &&
			spins < 20000;
	     spins++)
		usleep(1000);
	assert_true(cnl.in_cb);
	assert_int_equal(pthread_cancel(t), 0);
	__atomic_store_n(&cnl.cancelled, 1, __ATOMIC_SEQ_CST);
	assert_int_equal(pthread_join(t, &ret), 0);
	/* Cancelled, after the shrink: every callback ran, every node is back. */
	assert_true(ret == PTHREAD_CANCELED);
	assert_int_equal(cnl.calls, CANCEL_N);
	assert_int_equal(rcl_lruvec_nr_isolated(&cnl.lv), 0);
	assert_int_equal(rcl_lruvec_count(&cnl.lv, RCL_LRU_LIST(RCL_LRU_FILE, 0),
					  NULL), CANCEL_N);
	for (i = 0; i < CANCEL_N; i++)
		assert_int_equal(rcl_lruvec_del(&cnl.lv, &cnl.nodes[i]), 0);
	assert_int_equal(rcl_lruvec_destroy(&cnl.lv), 0);
}

/*
 * A batched add makes the node pending without the lruvec lock, and
 * rcl_lruvec_set_dirty() on a pending node counts its weight under that
 * lock: the weight must be the node's before it is pending.  One thread adds
 * and deletes one node, with weights 1 and 1000 in turn; another dirties it
 * whenever it is on the lruvec.  After each delete no weight is dirty.  The
 * add wrote the weight after its claiming CAS, so a set_dirty() in between
 * counted the previous weight, and the delete took back the new one: the
 * dirty weight drifted (by -999 or +999 per race) and, if attached, so did
 * the domain's.  Up to 2 s or 40,000,000 rounds, stopping at the first drift.
 */
struct wrace {
	struct rcl_lruvec lv;
	struct rcl_lru_node node;
	atomic_int stop;
};

static void *wrace_dirtier(void *arg)
{
	struct wrace *w = arg;

	while (!atomic_load(&w->stop))
		(void)rcl_lruvec_set_dirty(&w->lv, &w->node);
	return NULL;
}

static void test_lruvec_add_weight_is_set_before_pending(void **state)
{
	struct wrace *w = calloc(1, sizeof(*w));
	struct rcl_dirty_stats ds = { 0 };
	struct timespec t0, t1;
	unsigned long i;
	pthread_t t;

	(void)state;
	assert_non_null(w);
	assert_int_equal(rcl_lruvec_init(&w->lv, NULL), 0);
	assert_int_equal(pthread_create(&t, NULL, wrace_dirtier, w), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 40000000; i++) {
		assert_int_equal(rcl_lruvec_add(&w->lv, &w->node, RCL_LRU_FILE,
						(i & 1) ? 1000 : 1, 0),
				 0);
		while (rcl_lruvec_del(&w->lv, &w->node) != 0)
			;
		assert_int_equal(rcl_lruvec_dirty_stats(&w->lv, &ds), 0);
		if (ds.nr_dirty || ds.weight_dirty)
			break;
		if (!(i & 4095)) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec >= 2)
				break;
		}
	}
	atomic_store(&w->stop, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (ds.weight_dirty)
		print_message("round %lu: dirty weight %lld after the delete\n",
			      i, (long long)ds.weight_dirty);
	assert_int_equal(ds.nr_dirty, 0);
	assert_int_equal(ds.weight_dirty, 0);
	assert_int_equal(rcl_lruvec_destroy(&w->lv), 0);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lruvec_node_is_at_most_24_bytes),
		cmocka_unit_test(test_lruvec_zeroed_node_is_idle),
		cmocka_unit_test(test_lruvec_add_from_a_later_key_destructor_is_listed),
		cmocka_unit_test(test_lruvec_first_add_in_the_last_destructor_round),
		cmocka_unit_test(test_lruvec_fork_child_frees_other_threads_batches),
		cmocka_unit_test(test_lruvec_container_of),
		cmocka_unit_test(test_lruvec_version),
		cmocka_unit_test(test_lruvec_init_defaults),
		cmocka_unit_test(test_lruvec_init_custom_types),
		cmocka_unit_test(test_lruvec_ids_are_unique),
		cmocka_unit_test(test_lruvec_ids_run_out_with_enospc),
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_lruvec_destroy_refuses_nonempty),
		T(test_lruvec_destroy_refuses_isolated),
		T(test_lruvec_add_goes_to_inactive_head),
		T(test_lruvec_add_active_unevictable_and_types),
		T(test_lruvec_add_bad_input),
		T(test_lruvec_add_twice_is_ebusy),
		T(test_lruvec_del_listed),
		T(test_lruvec_del_bad_input),
		T(test_lruvec_del_isolated_is_ebusy),
		T(test_lruvec_batched_add_is_pending_until_drain),
		T(test_lruvec_batch_drains_when_full),
		T(test_lruvec_del_pending_leaves_no_batch_entry),
		T(test_lruvec_drain_bad_input),
		T(test_lruvec_thread_exit_flushes_its_batch),
		T(test_lruvec_drain_reaches_other_threads),
		T(test_lruvec_del_pending_in_other_thread),
		T(test_lruvec_destroy_drains_other_threads),
		T(test_lruvec_mark_accessed_two_touch),
		T(test_lruvec_mark_accessed_pending_lands_active),
		T(test_lruvec_mark_accessed_unevictable_only_references),
		T(test_lruvec_mark_accessed_bad_input),
		cmocka_unit_test(test_lruvec_mark_accessed_hot_path_writes_nothing),
		T(test_lruvec_rotate_moves_to_inactive_tail),
		T(test_lruvec_rotate_pending_and_errors),
		T(test_lruvec_deactivate),
		T(test_lruvec_unevictable_round_trip),
		T(test_lruvec_isolate_takes_oldest_first),
		T(test_lruvec_isolate_more_than_list),
		T(test_lruvec_isolate_bad_input),
		T(test_lruvec_isolate_activates_queued_node),
		T(test_lruvec_isolated_remove_purges_stale_entry),
		T(test_lruvec_stale_entry_does_not_block_reclaim),
		T(test_lruvec_stale_entry_reused_by_new_touch),
		T(test_lruvec_pending_unevictable_only_references),
		T(test_lruvec_empty_set_rebinds),
		T(test_lruvec_shrink_inactive_every_answer),
		T(test_lruvec_shrink_inactive_outputs_accumulate),
		T(test_lruvec_shrink_inactive_unknown_answer_keeps),
		T(test_lruvec_shrink_bad_input),
		T(test_lruvec_evict_callback_reentry),
		cmocka_unit_test(test_lruvec_batch_end_once_per_batch),
		cmocka_unit_test(test_lruvec_destroy_from_nested_shrink_refused),
		T(test_lruvec_shrink_claims_the_batch_when_isolating),
		T(test_lruvec_shrink_active_rule),
		cmocka_unit_test(test_lruvec_shrink_active_second_reference),
		cmocka_unit_test(test_lruvec_inactive_ratio_is_the_sqrt_rule),
		cmocka_unit_test(test_lruvec_cancel_in_evict_callback_puts_back),
		T(test_lruvec_small_lists_keep_inactive_as_large_as_active),
		T(test_lruvec_queries_bad_input),
		T(test_lruvec_del_wait_waits_for_putback),
		T(test_lruvec_del_wait_wakes_on_remove),
		T(test_lruvec_del_wait_survives_cancellation),
		cmocka_unit_test(test_lruvec_add_weight_is_set_before_pending),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
