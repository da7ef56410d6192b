/* SPDX-License-Identifier: MIT */
/*
 * Charge stocks (domain.h, &struct rcl_domain_config.charge_stock): exact
 * usage step by step, the bound, and that every outcome (return code,
 * overshoot, counters, reclaim) is the one a domain without stocks gives.
 *
 * Threads are scripted: an "agent" thread runs one step at a time when the
 * main thread asks, so that which thread holds which stock is known.  The
 * comparison tests run the same script on a domain with stocks and one
 * without, and compare every answer and counter.  The last test is a
 * concurrency test (suite 'concurrency': TSan): threads charge and
 * uncharge on two strict domains with small budgets while a monitor checks
 * that usage never exceeds the budget; afterwards usage is 0 and the
 * failure counter equals the failures the threads saw.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "../lib/domain_internal.h"
#include "../lib/internal.h"
#include "test_util.h"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------- */

static struct rcl_vmstat vmstat(const struct rcl_domain *d)
{
	struct rcl_vmstat v;

	assert_int_equal(rcl_domain_vmstat(d, &v), 0);
	return v;
}

static struct rcl_watermarks wmarks(const struct rcl_domain *d)
{
	struct rcl_watermarks wm;

	assert_int_equal(rcl_domain_watermarks(d, &wm), 0);
	return wm;
}

static struct rcl_domain *dom_new(uint64_t budget, enum rcl_charge_mode mode,
				  uint64_t stock)
{
	struct rcl_domain_config cfg = {
		.budget = budget,
		.mode = mode,
		.charge_stock = stock,
	};
	struct rcl_domain *d = NULL;

	assert_int_equal(rcl_domain_new(&cfg, &d), 0);
	assert_non_null(d);
	return d;
}

/* A thread that runs one step at a time, when asked. */
struct agent {
	pthread_t t;
	sem_t go, done;
	int (*fn)(struct rcl_domain *d, uint64_t v, uint64_t *out);
	struct rcl_domain *d;
	uint64_t v, out;
	int ret;
	bool quit;
};

static void *agent_main(void *arg)
{
	struct agent *a = arg;

	for (;;) {
		sem_wait(&a->go);
		if (a->quit)
			break;
		a->ret = a->fn(a->d, a->v, &a->out);
		sem_post(&a->done);
	}
	return NULL;
}

static void agent_start(struct agent *a)
{
	memset(a, 0, sizeof(*a));
	assert_int_equal(sem_init(&a->go, 0, 0), 0);
	assert_int_equal(sem_init(&a->done, 0, 0), 0);
	assert_int_equal(pthread_create(&a->t, NULL, agent_main, a), 0);
}

/* Thread exit: the thread's stock goes back (its key destructor). */
static void agent_stop(struct agent *a)
{
	a->quit = true;
	sem_post(&a->go);
	assert_int_equal(pthread_join(a->t, NULL), 0);
	sem_destroy(&a->go);
	sem_destroy(&a->done);
}

static int do_charge(struct rcl_domain *d, uint64_t v, uint64_t *out)
{
	return rcl_domain_charge(d, v, RCL_CTX_CAPABLE, out);
}

static int do_uncharge(struct rcl_domain *d, uint64_t v, uint64_t *out)
{
	(void)out;
	return rcl_domain_uncharge(d, v);
}

static int agent_run(struct agent *a,
		     int (*fn)(struct rcl_domain *, uint64_t, uint64_t *),
		     struct rcl_domain *d, uint64_t v, uint64_t *out)
{
	a->fn = fn;
	a->d = d;
	a->v = v;
	sem_post(&a->go);
	sem_wait(&a->done);
	if (out)
		*out = a->out;
	return a->ret;
}

static int charge(struct agent *a, struct rcl_domain *d, uint64_t v,
		  uint64_t *over)
{
	uint64_t o = 0;
	int ret;

	if (a)
		ret = agent_run(a, do_charge, d, v, &o);
	else
		ret = rcl_domain_charge(d, v, RCL_CTX_CAPABLE, &o);
	if (over)
		*over = o;
	return ret;
}

static uint64_t drained_usage(struct rcl_domain *d)
{
	assert_int_equal(rcl_domain_drain_stocks(d), 0);
	return rcl_domain_usage(d);
}

/* ------------------------------------------------------------------------- */
/* Exact usage                                                                */
/* ------------------------------------------------------------------------- */

/* 1 MiB: cap = min(4096, 16384) = 4096; each refill leaves the stock full. */
static void test_stock_serves_charges_and_counts_as_charged(void **state)
{
	struct rcl_domain *d = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	uint64_t over = 1;
	unsigned i;

	(void)state;
	assert_int_equal(charge(NULL, d, 100, &over), 0);
	assert_int_equal(over, 0);
	assert_int_equal(rcl_domain_usage(d), 100 + 4096);	/* stock full */
	for (i = 1; i < 41; i++)	/* 40 more: 4000 from the stock */
		assert_int_equal(charge(NULL, d, 100, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 4196);
	/* 96 left < 100: the charge plus what fills the stock again. */
	assert_int_equal(charge(NULL, d, 100, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 4196 + 100 + 4096 - 96);
	assert_int_equal(drained_usage(d), 42 * 100);
	/* A second drain has nothing left to give. */
	assert_int_equal(drained_usage(d), 42 * 100);
	assert_int_equal(vmstat(d).charge_failures, 0);
	assert_int_equal(vmstat(d).charge_overshoots, 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_uncharge_refunds_then_gives_back_half(void **state)
{
	struct rcl_domain *d = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	unsigned i;

	(void)state;
	assert_int_equal(charge(NULL, d, 1000, NULL), 0);	/* stock 4096 */
	assert_int_equal(charge(NULL, d, 1000, NULL), 0);	/* stock 3096 */
	assert_int_equal(rcl_domain_usage(d), 5096);
	assert_int_equal(rcl_domain_uncharge(d, 1000), 0);	/* stock 4096 */
	assert_int_equal(rcl_domain_usage(d), 5096);
	/* Past the stock's size: keep 2048, give back 4096 + 1000 - 2048. */
	assert_int_equal(rcl_domain_uncharge(d, 1000), 0);
	assert_int_equal(rcl_domain_usage(d), 2048);
	assert_int_equal(drained_usage(d), 0);
	/* Charges as large as a stock are never stocked. */
	for (i = 0; i < 3; i++)
		assert_int_equal(charge(NULL, d, 4096, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 3 * 4096);
	for (i = 0; i < 3; i++)
		assert_int_equal(rcl_domain_uncharge(d, 4096), 0);
	assert_int_equal(rcl_domain_usage(d), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static void test_stocks_off_is_exact(void **state)
{
	struct rcl_domain *d = dom_new(1u << 20, RCL_CHARGE_STRICT, 0);

	(void)state;
	assert_int_equal(charge(NULL, d, 100, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 100);
	assert_int_equal(rcl_domain_uncharge(d, 40), 0);
	assert_int_equal(rcl_domain_usage(d), 60);
	assert_int_equal(rcl_domain_drain_stocks(d), 0);
	assert_int_equal(rcl_domain_usage(d), 60);
	assert_int_equal(rcl_domain_drain_stocks(NULL), -EINVAL);
	assert_int_equal(rcl_domain_uncharge(d, 60), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* A budget of 63 gives a stock size of 0: no stocks at all. */
static void test_tiny_budget_has_no_stocks(void **state)
{
	struct rcl_domain *d = dom_new(63, RCL_CHARGE_STRICT, 4096);

	(void)state;
	assert_int_equal(charge(NULL, d, 1, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 1);
	assert_int_equal(charge(NULL, d, 62, NULL), 0);
	assert_int_equal(charge(NULL, d, 1, NULL), -ENOMEM);
	assert_int_equal(rcl_domain_usage(d), 63);
	assert_int_equal(vmstat(d).charge_failures, 1);
	assert_int_equal(rcl_domain_uncharge(d, 63), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * 64 KiB, stock 1024: budget / 16 / 1024 = 4 threads hold a stock at once,
 * the fifth charges unstocked.
 */
static void test_stock_holders_are_bounded(void **state)
{
	struct rcl_domain *d = dom_new(65536, RCL_CHARGE_STRICT, 1u << 20);
	struct agent a[5];
	unsigned i;

	(void)state;
	for (i = 0; i < 5; i++) {
		agent_start(&a[i]);
		assert_int_equal(charge(&a[i], d, 10, NULL), 0);
	}
	/* Four stocks of 1024 (the cap: 65536 / 64), one unstocked 10. */
	assert_int_equal(rcl_domain_usage(d), 4 * (10 + 1024) + 10);
	assert_true(rcl_domain_usage(d) - 50 <= 65536 / RCL_CHARGE_STOCKS_SHARE);
	for (i = 0; i < 5; i++)
		agent_stop(&a[i]);
	assert_int_equal(rcl_domain_usage(d), 50);
	assert_int_equal(rcl_domain_uncharge(d, 50), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* Lifetime: thread exit, another domain, rcl_domain_free(), fork            */
/* ------------------------------------------------------------------------- */

static void test_thread_exit_returns_stock(void **state)
{
	struct rcl_domain *d = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	struct agent a;

	(void)state;
	agent_start(&a);
	assert_int_equal(charge(&a, d, 100, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 4196);
	agent_stop(&a);
	assert_int_equal(rcl_domain_usage(d), 100);
	assert_int_equal(rcl_domain_uncharge(d, 100), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * A charge from an application's key destructor that runs after the
 * library's (its key is newer) makes no stock: one made then would be
 * left, still charged, when the destructor rounds end.
 */
static struct rcl_domain *late_d;
static pthread_key_t late_key;
static atomic_int late_calls;

static void late_destructor(void *arg)
{
	(void)arg;
	T_EQ(rcl_domain_charge(late_d, 100, RCL_CTX_CAPABLE, NULL), 0);
	/* Ask for another round each time: glibc runs at most 4. */
	if (atomic_fetch_add(&late_calls, 1) < 16)
		T_EQ(pthread_setspecific(late_key, (void *)1), 0);
}

static void *late_main(void *arg)
{
	(void)arg;
	T_EQ(rcl_domain_charge(late_d, 100, RCL_CTX_CAPABLE, NULL), 0);
	T_EQ(pthread_setspecific(late_key, (void *)1), 0);
	return NULL;
}


static void test_charge_from_a_later_key_destructor_is_unstocked(void **state)
{
	pthread_t t;
	uint64_t usage;
	int calls;

	(void)state;
	if (!LATE_DESTRUCTORS)
		skip();
	late_d = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	/* The library's key exists before the application's. */
	assert_int_equal(charge(NULL, late_d, 100, NULL), 0);
	assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
	atomic_store(&late_calls, 0);
	assert_int_equal(pthread_create(&t, NULL, late_main, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	calls = atomic_load(&late_calls);
	usage = rcl_domain_usage(late_d);
	print_message("%d destructor charges after the stock went back; usage "
		      "%llu (the main thread's stock 4096 + %d x 100)\n", calls,
		      (unsigned long long)usage, calls + 2);
	assert_true(calls >= 1);
	/* The main thread's stock is still its own; the exited thread's: none. */
	assert_int_equal(usage, 4096 + (uint64_t)(calls + 2) * 100);
	assert_int_equal(drained_usage(late_d), (uint64_t)(calls + 2) * 100);
	assert_int_equal(pthread_key_delete(late_key), 0);
	assert_int_equal(rcl_domain_uncharge(late_d, (uint64_t)(calls + 2) * 100),
			 0);
	assert_int_equal(rcl_domain_free(late_d), 0);
}

/*
 * A thread whose first charge comes from an application's key destructor
 * in the last round of them (PTHREAD_DESTRUCTOR_ITERATIONS) makes its
 * stock after the library's key was passed in that round, and a value set
 * in the last round is never destroyed: no destructor gives that stock
 * back, and tls_stock_gone is never set, as the thread had no stock
 * before.  The next drain of the stocks gives its memory back and frees it;
 * so does rcl_domain_free().
 */
static struct rcl_domain *last_d;
static pthread_key_t last_key;
static int last_calls, last_errors;

static void last_destructor(void *arg)
{
	(void)arg;
	/* Ask for another round until the last one, and charge only then. */
	if (++last_calls < PTHREAD_DESTRUCTOR_ITERATIONS) {
		if (pthread_setspecific(last_key, (void *)1) != 0)
			last_errors++;
		return;
	}
	if (rcl_domain_charge(last_d, 100, RCL_CTX_CAPABLE, NULL) != 0)
		last_errors++;
}

static void *last_main(void *arg)
{
	(void)arg;
	/* No charge before the destructors: no stock yet. */
	if (pthread_setspecific(last_key, (void *)1) != 0)
		last_errors++;
	return NULL;
}

static void last_thread(void)
{
	pthread_t t;

	last_calls = last_errors = 0;
	assert_int_equal(pthread_create(&t, NULL, last_main, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(last_errors, 0);
	assert_int_equal(last_calls, PTHREAD_DESTRUCTOR_ITERATIONS);
}

static void test_first_charge_in_the_last_destructor_round(void **state)
{
	unsigned before;

	(void)state;
	if (!LATE_DESTRUCTORS)
		skip();
	last_d = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	/* The library's key exists before the application's. */
	assert_int_equal(charge(NULL, last_d, 100, NULL), 0);
	assert_int_equal(drained_usage(last_d), 100);
	assert_int_equal(pthread_key_create(&last_key, last_destructor), 0);
	before = rcl__domain_stock_count();

	last_thread();
	print_message("after the exit: usage %llu, stocks %u (before %u)\n",
		      (unsigned long long)rcl_domain_usage(last_d),
		      rcl__domain_stock_count(), before);
	/* Its charge is counted once the stock is back ... */
	assert_int_equal(drained_usage(last_d), 200);
	/* ... and the dead thread's stock is freed. */
	assert_int_equal(rcl__domain_stock_count(), before);

	/* rcl_domain_free() gives it back and frees it too. */
	last_thread();
	assert_int_equal(rcl_domain_usage(last_d), 300 + 4096);
	assert_int_equal(rcl_domain_free(last_d), 0);
	assert_int_equal(rcl__domain_stock_count(), before);
	assert_int_equal(pthread_key_delete(last_key), 0);
}

static void test_other_domain_gives_the_stock_back(void **state)
{
	struct rcl_domain *d1 = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	struct rcl_domain *d2 = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);

	(void)state;
	assert_int_equal(charge(NULL, d1, 100, NULL), 0);
	assert_int_equal(rcl_domain_usage(d1), 4196);
	assert_int_equal(charge(NULL, d2, 100, NULL), 0);
	assert_int_equal(rcl_domain_usage(d1), 100);
	assert_int_equal(rcl_domain_usage(d2), 4196);
	/* An uncharge of d1 does not take the stock back from d2. */
	assert_int_equal(rcl_domain_uncharge(d1, 100), 0);
	assert_int_equal(rcl_domain_usage(d1), 0);
	assert_int_equal(rcl_domain_usage(d2), 4196);
	assert_int_equal(rcl_domain_uncharge(d2, 100), 0);
	assert_int_equal(drained_usage(d2), 0);
	assert_int_equal(rcl_domain_free(d1), 0);
	assert_int_equal(rcl_domain_free(d2), 0);
}

/*
 * rcl_domain_free() detaches another thread's stock: that thread's next
 * charge, of another domain, must not touch the freed one (ASan).
 */
static void test_free_detaches_every_stock(void **state)
{
	struct rcl_domain *d1 = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	struct rcl_domain *d2 = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	struct agent a;

	(void)state;
	agent_start(&a);
	assert_int_equal(charge(&a, d1, 100, NULL), 0);
	assert_int_equal(agent_run(&a, do_uncharge, d1, 100, NULL), 0);
	/* The stock overflowed: it keeps half, all the usage there is. */
	assert_int_equal(rcl_domain_usage(d1), 2048);
	assert_int_equal(rcl_domain_free(d1), 0);
	assert_int_equal(charge(&a, d2, 100, NULL), 0);
	assert_int_equal(charge(&a, d2, 100, NULL), 0);
	assert_int_equal(rcl_domain_usage(d2), 4196);
	assert_int_equal(agent_run(&a, do_uncharge, d2, 50, NULL), 0);
	assert_int_equal(rcl_domain_usage(d2), 4196);
	/* Thread exit gives back the stock of the domain it charged last. */
	agent_stop(&a);
	assert_int_equal(rcl_domain_usage(d2), 150);
	assert_int_equal(rcl_domain_uncharge(d2, 150), 0);
	assert_int_equal(rcl_domain_free(d2), 0);
}

/*
 * After fork() the child gives back the stock of the thread it does not
 * have, and keeps its own thread's.
 */
static void test_fork_child_returns_absent_threads_stocks(void **state)
{
	struct rcl_domain *d = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	struct agent a;
	int status;
	pid_t pid;

	(void)state;
	agent_start(&a);
	assert_int_equal(charge(&a, d, 100, NULL), 0);
	assert_int_equal(charge(NULL, d, 200, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 300 + 2 * 4096);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int bad = 0;

		bad |= rcl_domain_usage(d) != 300 + 4096;
		bad |= charge(NULL, d, 96, NULL) != 0;	/* from the stock */
		bad |= rcl_domain_usage(d) != 300 + 4096;
		bad |= drained_usage(d) != 396;
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(rcl_domain_usage(d), 300 + 2 * 4096);
	agent_stop(&a);
	assert_int_equal(drained_usage(d), 300);
	assert_int_equal(rcl_domain_uncharge(d, 300), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/* ------------------------------------------------------------------------- */
/* Outcomes as without stocks                                                 */
/* ------------------------------------------------------------------------- */

struct step {
	int who;	/* 0: the main thread; 1, 2: agents */
	bool uncharge;
	uint64_t amount;
};

/*
 * Run @steps on a domain with stocks and one without; every answer, every
 * overshoot, every counter and the drained usage must be the same.
 */
static void compare(uint64_t budget, enum rcl_charge_mode mode, uint64_t stock,
		    const struct step *steps, size_t n)
{
	struct rcl_domain *ds = dom_new(budget, mode, stock);
	struct rcl_domain *du = dom_new(budget, mode, 0);
	struct agent a[2];
	struct rcl_vmstat vs, vu;
	size_t i;

	agent_start(&a[0]);
	agent_start(&a[1]);
	for (i = 0; i < n; i++) {
		struct agent *who = steps[i].who ? &a[steps[i].who - 1] : NULL;
		uint64_t os = 7, ou = 7;
		int rs, ru;

		if (steps[i].uncharge) {
			if (who) {
				rs = agent_run(who, do_uncharge, ds,
					       steps[i].amount, NULL);
				ru = agent_run(who, do_uncharge, du,
					       steps[i].amount, NULL);
			} else {
				rs = rcl_domain_uncharge(ds, steps[i].amount);
				ru = rcl_domain_uncharge(du, steps[i].amount);
			}
			os = ou = 0;
		} else {
			rs = charge(who, ds, steps[i].amount, &os);
			ru = charge(who, du, steps[i].amount, &ou);
		}
		if (rs != ru || os != ou)
			fail_msg("step %zu: stocked %d (overshoot %llu), unstocked %d (%llu)",
				 i, rs, (unsigned long long)os, ru,
				 (unsigned long long)ou);
		assert_true(mode == RCL_CHARGE_SOFT ||
			    rcl_domain_usage(ds) <= budget);
	}
	vs = vmstat(ds);
	vu = vmstat(du);
	assert_memory_equal(&vs, &vu, sizeof(vs));
	assert_int_equal(drained_usage(ds), rcl_domain_usage(du));
	agent_stop(&a[0]);
	agent_stop(&a[1]);
	assert_int_equal(drained_usage(ds), rcl_domain_usage(du));
	assert_int_equal(rcl_domain_free(ds), 0);
	assert_int_equal(rcl_domain_free(du), 0);
}

/*
 * 64 KiB strict: stock 1024.  The main thread's charge fits only with the
 * agent's stock taken back, and is admitted; the agent's next charge fails
 * as it would without stocks.
 */
static void test_small_strict_budget_as_unstocked(void **state)
{
	static const struct step s[] = {
		{ 1, false, 100 },	/* agent 1: 100 + a stock of 1024 */
		{ 2, false, 200 },	/* agent 2: 200 + 1024 */
		{ 0, false, 65536 - 300 },	/* fits exactly, after the drain */
		{ 1, false, 1 },	/* -ENOMEM, as unstocked */
		{ 2, true, 200 },
		{ 1, false, 150 },	/* fits: no stock (below high) */
		{ 1, false, 60 },	/* -ENOMEM */
		{ 0, true, 65536 - 300 },
		{ 1, false, 10 },	/* room again: a stock */
		{ 2, false, 500 },
		{ 0, false, 65536 - 760 },	/* the last unit */
		{ 0, false, 1 },	/* -ENOMEM */
		{ 1, true, 260 },
		{ 2, true, 500 },
	};

	(void)state;
	compare(65536, RCL_CHARGE_STRICT, 4096, s, sizeof(s) / sizeof(s[0]));
}

/* Soft: overshoots and their sizes as without stocks; -EOVERFLOW too. */
static void test_soft_overshoot_and_overflow_as_unstocked(void **state)
{
	static const struct step s[] = {
		{ 1, false, 100 },
		{ 2, false, 300 },
		{ 0, false, 65536 },	/* over by 400 */
		{ 1, false, 10 },	/* over by 410 */
		{ 0, false, UINT64_MAX - 100 },	/* -EOVERFLOW */
		{ 0, true, 65536 },
		{ 2, false, 20 },
		{ 1, true, 110 },
		{ 2, true, 320 },
	};

	(void)state;
	compare(65536, RCL_CHARGE_SOFT, 4096, s, sizeof(s) / sizeof(s[0]));
}

/*
 * Soft with a budget of 2^64 - 1: a charge that fits to the last unit
 * without stocks fits with them too (the stocks come back first, then the
 * wrap is tested); one more unit is -EOVERFLOW either way.
 */
static void test_wrap_tested_after_stocks_as_unstocked(void **state)
{
	static const struct step s[] = {
		{ 1, false, 100 },	/* agent 1: 100 + a stock */
		{ 2, false, 300 },	/* agent 2: 300 + a stock */
		{ 0, false, UINT64_MAX - 400 },	/* fits exactly */
		{ 0, false, 1 },	/* -EOVERFLOW */
		{ 1, false, 1 },	/* -EOVERFLOW */
		{ 0, true, UINT64_MAX - 400 },
		{ 1, true, 100 },
		{ 2, true, 300 },
	};

	(void)state;
	compare(UINT64_MAX, RCL_CHARGE_SOFT, 4096, s, sizeof(s) / sizeof(s[0]));
}

/* ------------------------------------------------------------------------- */
/* Reclaim sees what stocks hold                                              */
/* ------------------------------------------------------------------------- */

struct obj {
	struct rcl_lru_node node;
	struct rcl_domain *d;
	bool evicted;
};

static enum rcl_evict_status obj_evict(struct rcl_lru_node *node,
				       struct rcl_evict_control *ctl)
{
	struct obj *o = rcl_container_of(node, struct obj, node);

	(void)ctl;
	o->evicted = true;
	rcl_domain_uncharge(o->d, 1000);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops obj_ops = { .evict = obj_evict };

/*
 * Lowering the budget and charging near it take the stocks back first, so
 * nothing is evicted for memory only stocks held.
 */
static void test_reclaim_sees_stocked_memory(void **state)
{
	struct rcl_lruvec_config lc = { .ops = &obj_ops };
	struct rcl_domain *d = dom_new(1u << 20, RCL_CHARGE_STRICT, 1u << 20);
	struct rcl_lruvec lv;
	struct obj o[10];
	struct agent a;
	unsigned i;

	(void)state;
	assert_int_equal(rcl_lruvec_init(&lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(d, &lv, 0), 0);
	for (i = 0; i < 10; i++) {
		o[i].d = d;
		o[i].evicted = false;
		rcl_lru_node_init(&o[i].node);
		assert_int_equal(charge(NULL, d, 1000, NULL), 0);
		assert_int_equal(rcl_lruvec_add(&lv, &o[i].node, RCL_LRU_FILE,
						1000, RCL_LRU_ADD_NOBATCH), 0);
	}
	/* The stock is 16384 (1 MiB / 64): 10000 charged + 7384 held. */
	assert_int_equal(rcl_domain_usage(d), 17384);
	/* Budget 11000: low 120; with the stock back, headroom is 1000. */
	assert_int_equal(rcl_domain_set_budget(d, 11000), 0);
	assert_int_equal(rcl_domain_usage(d), 10000);
	assert_int_equal(vmstat(d).allocstall, 0);
	assert_int_equal(wmarks(d).low, 120);

	/* An agent takes a stock: 10 + 171 (the cap is now 11000 / 64). */
	agent_start(&a);
	assert_int_equal(charge(&a, d, 10, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 10000 + 10 + 171);
	/* 800 fits only with that stock back: no reclaim for it. */
	assert_int_equal(charge(NULL, d, 800, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 10810);
	assert_int_equal(vmstat(d).allocstall, 0);
	assert_int_equal(vmstat(d).pgsteal_direct, 0);
	for (i = 0; i < 10; i++)
		assert_false(o[i].evicted);
	agent_stop(&a);

	/* 1000 more does need reclaim: one object goes. */
	assert_int_equal(charge(NULL, d, 1000, NULL), 0);
	assert_true(vmstat(d).pgsteal_direct >= 1);
	assert_true(rcl_domain_usage(d) <= 11000);

	assert_int_equal(rcl_domain_detach(d, &lv), 0);
	for (i = 0; i < 10; i++)
		if (!o[i].evicted)
			assert_int_equal(rcl_lruvec_del(&lv, &o[i].node), 0);
	assert_int_equal(rcl_lruvec_destroy(&lv), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The watermark crossing counts the stocks out: a charge that crosses low
 * only because of another thread's stock does not wake the reclaimer.
 */
/*
 * Another thread's stock that goes back during a pass (here a shrinker's
 * scan makes the agent fill one, then drains the stocks) is no memory the
 * pass's shrinkers freed: slab_weight counts their own uncharges only.
 */
struct drain_in_pass {
	struct agent a;
	struct rcl_domain *d;
	atomic_ulong scans;
	uint64_t before, after;
};

static unsigned long dip_count(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 1000;
}

static unsigned long dip_scan(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	struct drain_in_pass *c = sc->priv;

	(void)s;
	if (atomic_fetch_add(&c->scans, 1) == 0) {
		T_EQ(agent_run(&c->a, do_charge, c->d, 100, NULL), 0);
		c->before = rcl_domain_usage(c->d);
		T_EQ(rcl_domain_drain_stocks(c->d), 0);
		c->after = rcl_domain_usage(c->d);
	}
	sc->nr_scanned = sc->nr_to_scan;
	return 0;
}

static const struct rcl_shrinker_ops dip_ops = {
	.count_objects = dip_count,
	.scan_objects = dip_scan,
};

static void test_stock_drained_in_a_pass_is_no_progress(void **state)
{
	struct drain_in_pass c = { 0 };
	struct rcl_shrinker_config scfg = {
		.ops = &dip_ops,
		.name = "drain-in-pass",
		.seeks = RCL_DEFAULT_SEEKS,
		.priv = &c,
	};
	struct rcl_reclaim_result res;
	struct rcl_shrinker *s;

	(void)state;
	c.d = dom_new(1u << 20, RCL_CHARGE_STRICT, 4096);
	agent_start(&c.a);
	assert_int_equal(charge(NULL, c.d, 10000, NULL), 0);
	assert_int_equal(rcl_shrinker_new(rcl_domain_registry(c.d), &scfg, &s),
			 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	assert_int_equal(rcl_domain_reclaim(c.d, 100, RCL_CTX_CAPABLE, &res), 0);
	print_message("a stock drained in a pass: usage %llu -> %llu, %lu "
		      "scans, slab_weight %llu, slab_reclaimed %llu\n",
		      (unsigned long long)c.before,
		      (unsigned long long)c.after, atomic_load(&c.scans),
		      (unsigned long long)res.slab_weight,
		      (unsigned long long)res.slab_reclaimed);
	assert_true(atomic_load(&c.scans) >= 1);
	/* The agent's stock did go back... */
	assert_int_equal(c.before - c.after, 4096);
	/* ... but the shrinker freed nothing. */
	assert_int_equal(res.slab_weight, 0);
	assert_int_equal(res.slab_reclaimed, 0);
	assert_int_equal(res.nr_reclaimed, 0);
	assert_int_equal(drained_usage(c.d), 10100);
	assert_int_equal(rcl_shrinker_free(s), 0);
	agent_stop(&c.a);
	assert_int_equal(rcl_domain_uncharge(c.d, 10100), 0);
	assert_int_equal(rcl_domain_free(c.d), 0);
}

static void test_wakeup_sees_stocked_memory(void **state)
{
	struct rcl_domain *d = dom_new(1u << 20, RCL_CHARGE_STRICT, 16384);
	uint64_t low, x;
	struct agent a;

	(void)state;
	low = wmarks(d).low;
	assert_int_equal(low, 11509);
	assert_int_equal(rcl_domain_reclaimer_start(d), 0);
	agent_start(&a);
	assert_int_equal(charge(&a, d, 1000, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 1000 + 16384);
	/* Headroom exactly low after it, once the stock is back. */
	x = (1u << 20) - 1000 - low;
	assert_int_equal(charge(NULL, d, x, NULL), 0);
	assert_int_equal(rcl_domain_usage(d), 1000 + x);
	assert_int_equal(vmstat(d).kswapd_wakeups, 0);
	/* One more unit crosses low: that wakes it. */
	assert_int_equal(charge(NULL, d, 1, NULL), 0);
	assert_int_equal(vmstat(d).kswapd_wakeups, 1);
	assert_int_equal(rcl_domain_reclaimer_stop(d), 0);
	agent_stop(&a);
	assert_int_equal(drained_usage(d), 1000 + x + 1);
	assert_int_equal(rcl_domain_uncharge(d, 1000 + x + 1), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * A child's refusal wakes the root's reclaimer only if the root's charge
 * would have left its headroom below low: decided without the stocks, so
 * another thread's stock of the root (16384) does not make it wake.
 */
static void test_refusal_wakeup_sees_stocked_memory(void **state)
{
	struct rcl_domain *r = dom_new(1u << 20, RCL_CHARGE_STRICT, 16384);
	struct rcl_domain_config cfg = { .budget = 65536 };
	struct rcl_domain *u = NULL;
	uint64_t low, x;
	struct agent a;

	(void)state;
	cfg.parent = r;
	assert_int_equal(rcl_domain_new(&cfg, &u), 0);
	low = wmarks(r).low;
	assert_int_equal(low, 11509);
	assert_int_equal(rcl_domain_reclaimer_start(r), 0);
	agent_start(&a);
	assert_int_equal(charge(&a, r, 1000, NULL), 0);
	assert_int_equal(rcl_domain_usage(r), 1000 + 16384);
	/* u full; the root's headroom low + 100 counting the stock. */
	assert_int_equal(charge(NULL, u, 65536, NULL), 0);
	x = (1u << 20) - 1000 - 16384 - 65536 - low - 100;
	assert_int_equal(charge(NULL, r, x, NULL), 0);
	assert_int_equal(rcl_domain_usage(r), (1u << 20) - low - 100);
	assert_int_equal(vmstat(r).kswapd_wakeups, 0);
	/* u refuses 1000: with the stock counted, the root would have been
	 * left below low; without it, 16384 above. */
	assert_int_equal(rcl_domain_charge(u, 1000, 0, NULL), -ENOMEM);
	assert_int_equal(vmstat(u).charge_failures, 1);
	assert_int_equal(vmstat(r).kswapd_wakeups, 0);
	assert_int_equal(rcl_domain_reclaimer_stop(r), 0);
	agent_stop(&a);
	assert_int_equal(drained_usage(r), 1000 + 65536 + x);
	assert_int_equal(rcl_domain_uncharge(u, 65536), 0);
	assert_int_equal(rcl_domain_uncharge(r, 1000 + x), 0);
	assert_int_equal(rcl_domain_free(u), 0);
	assert_int_equal(rcl_domain_free(r), 0);
}

/*
 * A charge decides (a strict refusal, a soft overshoot and its oom event)
 * with the stocks back, also when a stock holds memory again after the
 * drains before it: its first one, and each direct reclaim sweep's.  Here
 * the charge's own reclaim runs a shrinker that frees nothing, and whose
 * every scan makes an agent charge 100 and uncharge it.  No stock can be
 * filled while the charge decides (tight_begin()), but the agent's stock
 * is attached, empty, by its first charge, and the uncharge goes into it;
 * without stocks usage is back where it was, and the charge fits with 50
 * to spare.
 */
#define DS_BUDGET (1u << 20)
#define DS_BIG 8192u
#define DS_FILL (DS_BUDGET - DS_BIG - 50u)

struct ds_ctx {
	struct agent a;
	struct rcl_domain *d;
	unsigned scans;
};

static unsigned long ds_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return 1000;
}

static unsigned long ds_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	struct ds_ctx *c = sc->priv;

	(void)s;
	c->scans++;
	T_EQ(agent_run(&c->a, do_charge, c->d, 100, NULL), 0);
	T_EQ(agent_run(&c->a, do_uncharge, c->d, 100, NULL), 0);
	sc->nr_scanned = sc->nr_to_scan;
	return 0;
}

static const struct rcl_shrinker_ops ds_ops = {
	.count_objects = ds_count,
	.scan_objects = ds_scan,
};

struct ds_result {
	int ret;
	uint64_t over, usage;
	struct rcl_vmstat vm;
	struct rcl_domain_events ev;
	unsigned scans;
};

static void ds_run(enum rcl_charge_mode mode, uint64_t stock,
		   struct ds_result *r)
{
	struct rcl_watermarks wm = { .min = 1024, .low = 2048, .high = 4096 };
	struct ds_ctx c = { .d = dom_new(DS_BUDGET, mode, stock) };
	struct rcl_shrinker_config scfg = {
		.ops = &ds_ops,
		.name = "stock-in-reclaim",
		.seeks = RCL_DEFAULT_SEEKS,
		.priv = &c,
	};
	struct rcl_shrinker *s;

	assert_int_equal(rcl_domain_set_watermarks(c.d, &wm), 0);
	assert_int_equal(rcl_shrinker_new(rcl_domain_registry(c.d), &scfg, &s),
			 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	agent_start(&c.a);
	/* Unstocked (as large as a stock); headroom stays above low. */
	assert_int_equal(charge(NULL, c.d, DS_FILL, NULL), 0);
	/* Headroom 50 after it: below min, so it reclaims. */
	r->ret = charge(NULL, c.d, DS_BIG, &r->over);
	r->scans = c.scans;
	r->vm = vmstat(c.d);
	assert_int_equal(rcl_domain_events(c.d, false, &r->ev), 0);
	r->usage = drained_usage(c.d);
	assert_int_equal(rcl_shrinker_free(s), 0);
	agent_stop(&c.a);
	assert_int_equal(rcl_domain_usage(c.d), r->usage);
	assert_int_equal(rcl_domain_uncharge(c.d, r->usage), 0);
	assert_int_equal(rcl_domain_free(c.d), 0);
}

static void ds_compare(enum rcl_charge_mode mode)
{
	struct ds_result s, u;

	ds_run(mode, 0, &u);
	ds_run(mode, 4096, &s);
	print_message("stocked: %d, overshoot %llu, %llu overshoots, %llu "
		      "failures, %llu oom, %u scans; unstocked: %d, overshoot "
		      "%llu, %u scans\n", s.ret, (unsigned long long)s.over,
		      (unsigned long long)s.vm.charge_overshoots,
		      (unsigned long long)s.vm.charge_failures,
		      (unsigned long long)s.ev.oom, s.scans, u.ret,
		      (unsigned long long)u.over, u.scans);
	/* Without stocks: the shrinker ran, freed nothing, and it fits. */
	assert_true(u.scans >= 1);
	assert_int_equal(u.ret, 0);
	assert_int_equal(u.over, 0);
	assert_int_equal(u.usage, DS_FILL + DS_BIG);
	assert_int_equal(s.scans, u.scans);
	assert_int_equal(s.ret, u.ret);
	assert_int_equal(s.over, u.over);
	assert_int_equal(s.usage, u.usage);
	assert_int_equal(s.vm.charge_overshoots, u.vm.charge_overshoots);
	assert_int_equal(s.vm.charge_failures, u.vm.charge_failures);
	assert_int_equal(s.vm.allocstall, u.vm.allocstall);
	assert_int_equal(s.ev.oom, u.ev.oom);
}

static void test_soft_overshoot_decided_with_stocks_back(void **state)
{
	(void)state;
	ds_compare(RCL_CHARGE_SOFT);
}

static void test_strict_refusal_after_drain_with_stocks_back(void **state)
{
	(void)state;
	ds_compare(RCL_CHARGE_STRICT);
}

/*
 * The same for a child level that stays full: the shrinker's first scan
 * frees 4242 of the child's, which without stocks leaves room for the
 * charge with 50 to spare; every scan makes the agent charge 100 to the
 * child and uncharge it, into its stock of the child, attached empty.
 */
#define DT_BUDGET 65536u
#define DT_FILL (DT_BUDGET - 4000u)
#define DT_FREED (DS_BIG - 4000u + 50u)

struct dt_ctx {
	struct agent a;
	struct rcl_domain *c;
	unsigned scans;
};

static unsigned long dt_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	struct dt_ctx *c = sc->priv;

	(void)s;
	T_EQ(agent_run(&c->a, do_charge, c->c, 100, NULL), 0);
	T_EQ(agent_run(&c->a, do_uncharge, c->c, 100, NULL), 0);
	sc->nr_scanned = sc->nr_to_scan;
	if (c->scans++)
		return 0;
	T_EQ(rcl_domain_uncharge(c->c, DT_FREED), 0);
	return 1;
}

static const struct rcl_shrinker_ops dt_ops = {
	.count_objects = ds_count,
	.scan_objects = dt_scan,
};

static void dt_run(enum rcl_charge_mode mode, uint64_t stock,
		   struct ds_result *r)
{
	struct rcl_domain *root = dom_new(1u << 20, RCL_CHARGE_STRICT, stock);
	struct rcl_domain_config cfg = {
		.budget = DT_BUDGET,
		.mode = mode,
		.parent = root,
	};
	struct dt_ctx c = { 0 };
	struct rcl_shrinker_config scfg = {
		.ops = &dt_ops,
		.name = "child-stock-in-reclaim",
		.seeks = RCL_DEFAULT_SEEKS,
		.priv = &c,
	};
	struct rcl_shrinker *s;

	assert_int_equal(rcl_domain_new(&cfg, &c.c), 0);
	assert_int_equal(rcl_shrinker_new(rcl_domain_registry(c.c), &scfg, &s),
			 0);
	assert_int_equal(rcl_shrinker_register(s), 0);
	agent_start(&c.a);
	/* Unstocked: as large as a stock of the child (1024). */
	assert_int_equal(charge(NULL, c.c, DT_FILL, NULL), 0);
	/* The child's room is 4000: it reclaims. */
	r->ret = charge(NULL, c.c, DS_BIG, &r->over);
	r->scans = c.scans;
	r->vm = vmstat(c.c);
	assert_int_equal(rcl_domain_events(c.c, false, &r->ev), 0);
	r->usage = drained_usage(c.c);
	assert_int_equal(rcl_shrinker_free(s), 0);
	agent_stop(&c.a);
	assert_int_equal(rcl_domain_usage(c.c), r->usage);
	assert_int_equal(drained_usage(root), r->usage);
	assert_int_equal(rcl_domain_uncharge(c.c, r->usage), 0);
	assert_int_equal(rcl_domain_free(c.c), 0);
	assert_int_equal(rcl_domain_free(root), 0);
}

static void dt_compare(enum rcl_charge_mode mode)
{
	struct ds_result s, u;

	dt_run(mode, 0, &u);
	dt_run(mode, 4096, &s);
	print_message("stocked: %d, overshoot %llu, %llu overshoots, %llu "
		      "failures, %llu oom; unstocked: %d, overshoot %llu\n",
		      s.ret, (unsigned long long)s.over,
		      (unsigned long long)s.vm.charge_overshoots,
		      (unsigned long long)s.vm.charge_failures,
		      (unsigned long long)s.ev.oom, u.ret,
		      (unsigned long long)u.over);
	assert_true(u.scans >= 1);
	assert_int_equal(u.ret, 0);
	assert_int_equal(u.over, 0);
	assert_int_equal(u.usage, DT_FILL - DT_FREED + DS_BIG);
	assert_int_equal(s.ret, u.ret);
	assert_int_equal(s.over, u.over);
	assert_int_equal(s.usage, u.usage);
	assert_int_equal(s.vm.charge_overshoots, u.vm.charge_overshoots);
	assert_int_equal(s.vm.charge_failures, u.vm.charge_failures);
	assert_int_equal(s.ev.oom, u.ev.oom);
}

static void test_child_soft_overshoot_decided_with_stocks_back(void **state)
{
	(void)state;
	dt_compare(RCL_CHARGE_SOFT);
}

static void test_child_strict_refusal_decided_with_stocks_back(void **state)
{
	(void)state;
	dt_compare(RCL_CHARGE_STRICT);
}

/* ------------------------------------------------------------------------- */
/* Concurrency (TSan)                                                         */
/* ------------------------------------------------------------------------- */

#define CS_THREADS 4
#define CS_ITERS 20000
#define CS_BUDGET 65536u

struct cs_ctx {
	struct rcl_domain *d[2];
	atomic_bool stop;
	atomic_ullong failures[2];
	atomic_bool over;
};

struct cs_worker {
	struct cs_ctx *c;
	unsigned idx;
	int bad;
};

static void *cs_worker_main(void *arg)
{
	struct cs_worker *w = arg;
	struct cs_ctx *c = w->c;
	uint64_t held[2] = { 0, 0 }, seed = 0x9E3779B97F4A7C15ull * (w->idx + 1);
	unsigned i;

	for (i = 0; i < CS_ITERS; i++) {
		unsigned k, which;
		uint64_t amt;
		int ret;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		/* Mostly one domain; now and then the other (switches). */
		which = (seed >> 8) % 16 == 0 ? 1 : 0;
		k = (unsigned)(seed >> 16) % 100;
		amt = 1 + (seed >> 32) % (k < 5 ? 3000 : 300);
		if (k < 55) {
			ret = rcl_domain_charge(c->d[which], amt,
						RCL_CTX_CAPABLE, NULL);
			if (ret == 0)
				held[which] += amt;
			else if (ret == -ENOMEM)
				atomic_fetch_add(&c->failures[which], 1);
			else
				w->bad = ret;
		} else if (k < 98) {
			amt = held[which] < amt ? held[which] : amt;
			if (rcl_domain_uncharge(c->d[which], amt))
				w->bad = -1;
			held[which] -= amt;
		} else {
			if (rcl_domain_drain_stocks(c->d[which]))
				w->bad = -1;
		}
	}
	for (i = 0; i < 2; i++)
		if (rcl_domain_uncharge(c->d[i], held[i]))
			w->bad = -1;
	return NULL;
}

static void *cs_monitor_main(void *arg)
{
	struct cs_ctx *c = arg;

	while (!atomic_load(&c->stop)) {
		unsigned i;

		for (i = 0; i < 2; i++)
			if (rcl_domain_usage(c->d[i]) > CS_BUDGET)
				atomic_store(&c->over, true);
		sched_yield();
	}
	return NULL;
}

/*
 * A large strict charge that fits without stocks must fit with them while
 * another thread refills its stock.  The charge decides on the usage it
 * reads (drains the stocks when tight, then commits); a stock refilled in
 * between used to take the room it had counted on: with a budget of 1 MiB
 * and charges of the budget less 100 while the other thread charges and
 * uncharges 1 byte (never holding more than 1 without stocks), 97 % of the
 * large charges failed.  Now none does: no stock is taken while an
 * unstocked charge decides.
 */
#define TIGHT_BUDGET (1u << 20)

static struct rcl_domain *tight_dom;
static atomic_bool tight_done;
static atomic_long tight_small;

static void *tight_small_charger(void *arg)
{
	(void)arg;
	while (!atomic_load(&tight_done)) {
		if (rcl_domain_charge(tight_dom, 1, RCL_CTX_CAPABLE, NULL) == 0)
			rcl_domain_uncharge(tight_dom, 1);
		atomic_fetch_add(&tight_small, 1);
	}
	return NULL;
}

static void test_concurrent_large_charge_fits_as_unstocked(void **state)
{
	struct rcl_domain_config cfg = {
		.budget = TIGHT_BUDGET,
		.mode = RCL_CHARGE_STRICT,
		.charge_stock = TIGHT_BUDGET / 64,
	};
	const char *env = getenv("RCL_STRESS_OPS");
	unsigned i, n = env ? (unsigned)strtoul(env, NULL, 10) : 20000;
	unsigned fails = 0;
	pthread_t t;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &tight_dom), 0);
	atomic_store(&tight_done, false);
	assert_int_equal(pthread_create(&t, NULL, tight_small_charger, NULL), 0);
	for (i = 0; i < n; i++) {
		if (rcl_domain_charge(tight_dom, TIGHT_BUDGET - 100,
				      RCL_CTX_CAPABLE, NULL) == 0)
			rcl_domain_uncharge(tight_dom, TIGHT_BUDGET - 100);
		else
			fails++;
	}
	atomic_store(&tight_done, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	print_message("large charges %u, failed %u; small charges %ld\n", n,
		      fails, atomic_load(&tight_small));
	assert_int_equal(fails, 0);
	assert_int_equal(vmstat(tight_dom).charge_failures, 0);
	assert_int_equal(rcl_domain_drain_stocks(tight_dom), 0);
	assert_int_equal(rcl_domain_usage(tight_dom), 0);
	assert_int_equal(rcl_domain_free(tight_dom), 0);
}

/*
 * fork() while another thread is inside an unstocked charge's window (here
 * held in an evict callback of its direct reclaim): the child has no thread
 * to close that window, which used to refuse every stock in the child for
 * ever.  The window is void in the child: a 1-byte charge there refills a
 * stock (usage moves by a whole stock, not by 1).
 */
#define FT_BUDGET (1u << 20)

static struct rcl_domain *ft_dom;
static struct rcl_lruvec ft_lv;
static struct rcl_lru_node ft_nodes[64];
static atomic_bool ft_in_cb, ft_release;

static enum rcl_evict_status ft_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	atomic_store(&ft_in_cb, true);
	while (!atomic_load(&ft_release))
		sched_yield();
	return RCL_EVICT_BUSY;
}

static const struct rcl_lruvec_ops ft_ops = { .evict = ft_evict };

static void *ft_big(void *arg)
{
	(void)arg;
	/* Leaves headroom below low: unstocked, reclaims (and fails). */
	rcl_domain_charge(ft_dom, FT_BUDGET - 10, RCL_CTX_CAPABLE, NULL);
	return NULL;
}

/* What a 1-byte charge moves usage by, from drained stocks. */
static uint64_t ft_probe(void)
{
	uint64_t u0, moved;

	if (rcl_domain_drain_stocks(ft_dom))
		return 0;
	u0 = rcl_domain_usage(ft_dom);
	if (rcl_domain_charge(ft_dom, 1, RCL_CTX_CAPABLE, NULL))
		return 0;
	moved = rcl_domain_usage(ft_dom) - u0;
	rcl_domain_uncharge(ft_dom, 1);
	rcl_domain_drain_stocks(ft_dom);
	return moved;
}

static void test_fork_child_not_held_by_parent_window(void **state)
{
	struct rcl_domain_config cfg = {
		.budget = FT_BUDGET,
		.mode = RCL_CHARGE_STRICT,
		.charge_stock = FT_BUDGET / 64,
	};
	struct rcl_lruvec_config lc = { .ops = &ft_ops };
	pthread_t t;
	pid_t pid;
	int i, st;

	(void)state;
	assert_int_equal(rcl_domain_new(&cfg, &ft_dom), 0);
	assert_int_equal(rcl_lruvec_init(&ft_lv, &lc), 0);
	for (i = 0; i < 64; i++) {
		rcl_lru_node_init(&ft_nodes[i]);
		assert_int_equal(rcl_lruvec_add(&ft_lv, &ft_nodes[i], RCL_LRU_FILE,
						1, RCL_LRU_ADD_NOBATCH),
				 0);
	}
	assert_int_equal(rcl_domain_attach(ft_dom, &ft_lv, 0), 0);
	assert_int_equal(rcl_domain_charge(ft_dom, 64, RCL_CTX_CAPABLE, NULL), 0);
	assert_true(ft_probe() > 1);	/* a stock refill */
	atomic_store(&ft_in_cb, false);
	atomic_store(&ft_release, false);
	assert_int_equal(pthread_create(&t, NULL, ft_big, NULL), 0);
	while (!atomic_load(&ft_in_cb))
		sched_yield();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(ft_probe() > 1 ? 0 : 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&ft_release, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(ft_probe() > 1);	/* and the parent's window closed */
	assert_int_equal(rcl_domain_detach(ft_dom, &ft_lv), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(rcl_lruvec_del(&ft_lv, &ft_nodes[i]), 0);
	assert_int_equal(rcl_lruvec_destroy(&ft_lv), 0);
	rcl_domain_uncharge(ft_dom, 64);
	assert_int_equal(rcl_domain_free(ft_dom), 0);
}

static void test_concurrent_strict_never_over_budget(void **state)
{
	struct cs_ctx c;
	struct cs_worker w[CS_THREADS];
	pthread_t t[CS_THREADS], mon;
	unsigned i;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.d[0] = dom_new(CS_BUDGET, RCL_CHARGE_STRICT, 2048);
	c.d[1] = dom_new(CS_BUDGET, RCL_CHARGE_STRICT, 512);
	assert_int_equal(pthread_create(&mon, NULL, cs_monitor_main, &c), 0);
	for (i = 0; i < CS_THREADS; i++) {
		w[i].c = &c;
		w[i].idx = i;
		w[i].bad = 0;
		assert_int_equal(pthread_create(&t[i], NULL, cs_worker_main,
						&w[i]), 0);
	}
	for (i = 0; i < CS_THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].bad, 0);
	}
	atomic_store(&c.stop, true);
	assert_int_equal(pthread_join(mon, NULL), 0);
	assert_false(atomic_load(&c.over));
	for (i = 0; i < 2; i++) {
		/* Every thread gave everything back, and its stock on exit. */
		assert_int_equal(rcl_domain_usage(c.d[i]), 0);
		assert_int_equal(vmstat(c.d[i]).charge_failures,
				 atomic_load(&c.failures[i]));
		assert_int_equal(rcl_domain_free(c.d[i]), 0);
	}
}

/*
 * A refill that read the stock size before rcl_domain_set_budget() shrank
 * it must not fill to the old size: stock_refill() read d->stock_cap, then
 * got the thread's stock (allocated on first use) and locked it; the budget
 * change resized the stocks and drained them before that lock, and the
 * thread then filled its stock to the old size.  Four threads held
 * budget/4 after a shrink to 1 MiB, against budget/16 for all stocks
 * (a review's reproducer).  The library's allocation hook pauses each
 * thread inside its stock's allocation (it refuses nothing).
 */
static struct rcl_domain *stall_d;
static RCL__TLS bool stall_me;
static sem_t stall_in, stall_release, stall_done, stall_quit;

static bool stall_hook(void *ctx, enum rcl__fault_site site, size_t size)
{
	(void)ctx;
	(void)size;
	if (site == RCL__FAULT_ALLOC && stall_me) {
		stall_me = false;
		sem_post(&stall_in);
		sem_wait(&stall_release);
	}
	return false;
}

static void *stall_agent(void *arg)
{
	int *ret = arg;

	stall_me = true;
	*ret = rcl_domain_charge(stall_d, 100, RCL_CTX_CAPABLE, NULL);
	sem_post(&stall_done);
	sem_wait(&stall_quit);	/* keep the stock: exit would return it */
	return NULL;
}

static void test_stock_refill_after_shrink_keeps_the_bound(void **state)
{
	struct rcl_domain_config cfg = {
		.budget = 64u << 20, .mode = RCL_CHARGE_STRICT,
		.charge_stock = 65536,
	};
	const uint64_t small = 1u << 20;
	pthread_t t[4];
	int ret[4], i;

	(void)state;
	assert_int_equal(sem_init(&stall_in, 0, 0), 0);
	assert_int_equal(sem_init(&stall_release, 0, 0), 0);
	assert_int_equal(sem_init(&stall_done, 0, 0), 0);
	assert_int_equal(sem_init(&stall_quit, 0, 0), 0);
	assert_int_equal(rcl_domain_new(&cfg, &stall_d), 0);
	rcl__fault_set(stall_hook, NULL);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_create(&t[i], NULL, stall_agent,
						&ret[i]), 0);
		sem_wait(&stall_in);	/* inside stock_refill(), old size read */
	}
	assert_int_equal(rcl_domain_set_budget(stall_d, small), 0);
	for (i = 0; i < 4; i++)
		sem_post(&stall_release);
	for (i = 0; i < 4; i++)
		sem_wait(&stall_done);
	rcl__fault_set(NULL, NULL);
	for (i = 0; i < 4; i++)
		assert_int_equal(ret[i], 0);
	/* Stocks of S = budget/64 each, at most budget/16 in all. */
	assert_true(rcl_domain_usage(stall_d) - 4 * 100 <= small / 16);
	for (i = 0; i < 4; i++)
		sem_post(&stall_quit);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(rcl_domain_uncharge(stall_d, 400), 0);
	assert_int_equal(rcl_domain_drain_stocks(stall_d), 0);
	assert_int_equal(rcl_domain_usage(stall_d), 0);
	assert_int_equal(rcl_domain_free(stall_d), 0);
	sem_destroy(&stall_in);
	sem_destroy(&stall_release);
	sem_destroy(&stall_done);
	sem_destroy(&stall_quit);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stock_serves_charges_and_counts_as_charged),
		cmocka_unit_test(test_uncharge_refunds_then_gives_back_half),
		cmocka_unit_test(test_stocks_off_is_exact),
		cmocka_unit_test(test_tiny_budget_has_no_stocks),
		cmocka_unit_test(test_stock_holders_are_bounded),
		cmocka_unit_test(test_thread_exit_returns_stock),
		cmocka_unit_test(test_charge_from_a_later_key_destructor_is_unstocked),
		cmocka_unit_test(test_first_charge_in_the_last_destructor_round),
		cmocka_unit_test(test_other_domain_gives_the_stock_back),
		cmocka_unit_test(test_free_detaches_every_stock),
		cmocka_unit_test(test_fork_child_returns_absent_threads_stocks),
		cmocka_unit_test(test_small_strict_budget_as_unstocked),
		cmocka_unit_test(test_soft_overshoot_and_overflow_as_unstocked),
		cmocka_unit_test(test_wrap_tested_after_stocks_as_unstocked),
		cmocka_unit_test(test_reclaim_sees_stocked_memory),
		cmocka_unit_test(test_wakeup_sees_stocked_memory),
		cmocka_unit_test(test_refusal_wakeup_sees_stocked_memory),
		cmocka_unit_test(test_stock_drained_in_a_pass_is_no_progress),
		cmocka_unit_test(test_soft_overshoot_decided_with_stocks_back),
		cmocka_unit_test(test_strict_refusal_after_drain_with_stocks_back),
		cmocka_unit_test(test_child_soft_overshoot_decided_with_stocks_back),
		cmocka_unit_test(test_child_strict_refusal_decided_with_stocks_back),
		cmocka_unit_test(test_fork_child_not_held_by_parent_window),
		cmocka_unit_test(test_concurrent_large_charge_fits_as_unstocked),
		cmocka_unit_test(test_concurrent_strict_never_over_budget),
		cmocka_unit_test(test_stock_refill_after_shrink_keeps_the_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
