/* SPDX-License-Identifier: MIT */
/*
 * Clocks: the real monotonic one, and a fake one for tests.
 *
 * The fake clock's waiters sleep on their own condition variable (the one
 * the library passed), untimed.  advance() moves the time and, for each
 * waiter whose deadline has come, takes that waiter's mutex and broadcasts
 * its condition.  A waiter registers while holding its mutex and sleeps in
 * pthread_cond_wait(), which releases the mutex atomically, so the
 * broadcast cannot fall between the waiter's time check and its sleep.
 */
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include <reclaim/clock.h>

/* ------------------------------------------------------------------------- */
/* The monotonic clock                                                        */
/* ------------------------------------------------------------------------- */

static uint64_t mono_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * RCL_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int mono_wait(void *ctx, pthread_cond_t *cond, pthread_mutex_t *mutex,
		     uint64_t deadline)
{
	struct timespec ts;

	(void)ctx;
	if (deadline == RCL_CLOCK_FOREVER)
		return pthread_cond_wait(cond, mutex);
	ts.tv_sec = (time_t)(deadline / RCL_NSEC_PER_SEC);
	ts.tv_nsec = (long)(deadline % RCL_NSEC_PER_SEC);
	return pthread_cond_timedwait(cond, mutex, &ts);
}

static const struct rcl_clock mono_clock = { mono_now, mono_wait, NULL };

RCL_API const struct rcl_clock *rcl_clock_monotonic(void)
{
	return &mono_clock;
}

/* ------------------------------------------------------------------------- */
/* The fake clock                                                             */
/* ------------------------------------------------------------------------- */

struct fake_waiter {
	pthread_cond_t *cond;
	pthread_mutex_t *mutex;
	uint64_t deadline;
	bool kicked;
	bool kicking;			/* advance() is using cond/mutex */
	struct fake_waiter *next, *prev;
};

struct rcl_fake_clock {
	struct rcl_clock clock;
	pthread_mutex_t lock;
	uint64_t now;			/* under lock */
	struct fake_waiter head;	/* circular list, under lock */
	unsigned nr;			/* waiters not yet kicked */
	pthread_cond_t kick_done;
};

static uint64_t fake_now(void *ctx)
{
	struct rcl_fake_clock *fc = ctx;
	uint64_t t;

	pthread_mutex_lock(&fc->lock);
	t = fc->now;
	pthread_mutex_unlock(&fc->lock);
	return t;
}

static int fake_wait(void *ctx, pthread_cond_t *cond, pthread_mutex_t *mutex,
		     uint64_t deadline)
{
	struct rcl_fake_clock *fc = ctx;
	struct fake_waiter w = { cond, mutex, deadline, false, false, NULL, NULL };
	uint64_t t;

	pthread_mutex_lock(&fc->lock);
	if (fc->now >= deadline) {
		pthread_mutex_unlock(&fc->lock);
		return ETIMEDOUT;
	}
	w.next = fc->head.next;
	w.prev = &fc->head;
	fc->head.next->prev = &w;
	fc->head.next = &w;
	fc->nr++;
	pthread_mutex_unlock(&fc->lock);

	pthread_cond_wait(cond, mutex);

	pthread_mutex_lock(&fc->lock);
	while (w.kicking) {
		/* advance() still needs our mutex and cond: let it finish. */
		pthread_mutex_unlock(mutex);
		pthread_cond_wait(&fc->kick_done, &fc->lock);
		pthread_mutex_unlock(&fc->lock);
		pthread_mutex_lock(mutex);
		pthread_mutex_lock(&fc->lock);
	}
	w.prev->next = w.next;
	w.next->prev = w.prev;
	if (!w.kicked)
		fc->nr--;
	t = fc->now;
	pthread_mutex_unlock(&fc->lock);
	return t >= deadline ? ETIMEDOUT : 0;
}

RCL_API int rcl_fake_clock_new(uint64_t start, struct rcl_fake_clock **out)
{
	struct rcl_fake_clock *fc;

	if (!out)
		return -EINVAL;
	fc = rcl__calloc(sizeof(*fc));
	if (!fc)
		return -ENOMEM;
	if (pthread_mutex_init(&fc->lock, NULL) != 0) {
		rcl__free(fc);
		return -ENOMEM;
	}
	if (pthread_cond_init(&fc->kick_done, NULL) != 0) {
		pthread_mutex_destroy(&fc->lock);
		rcl__free(fc);
		return -ENOMEM;
	}
	fc->clock.now = fake_now;
	fc->clock.wait = fake_wait;
	fc->clock.ctx = fc;
	/* FOREVER is no time: every wait without a deadline would end. */
	fc->now = start == RCL_CLOCK_FOREVER ? RCL_CLOCK_FOREVER - 1 : start;
	fc->head.next = fc->head.prev = &fc->head;
	*out = fc;
	return 0;
}

RCL_API void rcl_fake_clock_free(struct rcl_fake_clock *fc)
{
	if (!fc)
		return;
	pthread_cond_destroy(&fc->kick_done);
	pthread_mutex_destroy(&fc->lock);
	rcl__free(fc);
}

RCL_API const struct rcl_clock *rcl_fake_clock_clock(struct rcl_fake_clock *fc)
{
	return fc ? &fc->clock : NULL;
}

RCL_API void rcl_fake_clock_advance(struct rcl_fake_clock *fc, uint64_t ns)
{
	struct fake_waiter *w;

	if (!fc)
		return;
	pthread_mutex_lock(&fc->lock);
	fc->now = ns >= UINT64_MAX - 1 - fc->now ? UINT64_MAX - 1 : fc->now + ns;
	/*
	 * Kick each due waiter once.  The list lock is dropped around each
	 * kick (the waiter's mutex comes first in its own order), so rescan
	 * from the head after each one; kicked waiters are skipped.
	 */
	for (;;) {
		struct fake_waiter *k = NULL;
		pthread_cond_t *cond = NULL;
		pthread_mutex_t *mutex = NULL;

		for (w = fc->head.next; w != &fc->head; w = w->next) {
			if (!w->kicked && w->deadline <= fc->now) {
				w->kicked = true;
				w->kicking = true;
				fc->nr--;
				k = w;
				cond = w->cond;
				mutex = w->mutex;
				break;
			}
		}
		if (!cond)
			break;
		pthread_mutex_unlock(&fc->lock);
		pthread_mutex_lock(mutex);
		pthread_cond_broadcast(cond);
		pthread_mutex_unlock(mutex);
		pthread_mutex_lock(&fc->lock);
		k->kicking = false;
		pthread_cond_broadcast(&fc->kick_done);
	}
	pthread_mutex_unlock(&fc->lock);
}

RCL_API unsigned rcl_fake_clock_waiters(struct rcl_fake_clock *fc)
{
	unsigned n;

	if (!fc)
		return 0;
	pthread_mutex_lock(&fc->lock);
	n = fc->nr;
	pthread_mutex_unlock(&fc->lock);
	return n;
}
