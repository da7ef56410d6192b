/* SPDX-License-Identifier: MIT */
/**
 * DOC: clock - the injectable clock behind every time-based behaviour
 *
 * Everything in the library that waits or looks at the time (the background
 * reclaimer, later the flusher's throttles) does so through a
 * &struct rcl_clock: `now` and a condition wait with a deadline.  Production
 * code uses rcl_clock_monotonic(); tests use a fake clock
 * (rcl_fake_clock_new()) whose time moves only when the test advances it,
 * so that a cmocka test can script time exactly.
 *
 * Usage in a test:
 *
 * .. code-block:: c
 *
 *	struct rcl_fake_clock *fc;
 *	rcl_fake_clock_new(0, &fc);
 *	struct rcl_domain_config cfg = { .budget = 1000,
 *					 .clock = rcl_fake_clock_clock(fc) };
 *	...
 *	rcl_fake_clock_advance(fc, 100 * RCL_NSEC_PER_MSEC);	// wakes timed waiters
 *	...
 *	rcl_fake_clock_free(fc);
 *
 * Synchronization: all functions are thread-safe.
 */
#ifndef RECLAIM_CLOCK_H
#define RECLAIM_CLOCK_H

#include <pthread.h>
#include <stdint.h>

#include <reclaim/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RCL_NSEC_PER_USEC 1000ull
#define RCL_NSEC_PER_MSEC 1000000ull
#define RCL_NSEC_PER_SEC 1000000000ull
/** A deadline that never comes: wait until signalled. */
#define RCL_CLOCK_FOREVER UINT64_MAX

/**
 * struct rcl_clock - a clock
 * @now: the current time in nanoseconds, monotonic
 * @wait: wait on @cond (with @mutex held, as pthread_cond_wait()) until it
 *	is signalled or the clock reaches @deadline (RCL_CLOCK_FOREVER: no
 *	deadline).  Returns 0 when signalled (or spuriously), ETIMEDOUT when
 *	the deadline has passed.  The library creates every condition variable
 *	it passes here with pthread_condattr_setclock(CLOCK_MONOTONIC).
 * @ctx: passed to both
 *
 * The library may call both with its own locks held (@wait always with
 * @mutex, one of them): a custom clock must release @mutex in @wait as
 * pthread_cond_wait() does before it blocks, and neither callback may call
 * the library or fork().  rcl_clock_monotonic() and the fake clock keep
 * to that.
 */
struct rcl_clock {
	uint64_t (*now)(void *ctx);
	int (*wait)(void *ctx, pthread_cond_t *cond, pthread_mutex_t *mutex,
		    uint64_t deadline);
	void *ctx;
};

/**
 * rcl_clock_monotonic() - the real clock (CLOCK_MONOTONIC)
 *
 * Context: any thread.
 * Return: a static clock.
 */
RCL_API const struct rcl_clock *rcl_clock_monotonic(void);

struct rcl_fake_clock;

/**
 * rcl_fake_clock_new() - a clock that moves only when told.  Pair with
 * rcl_fake_clock_free().
 * @start: the initial time (ns); RCL_CLOCK_FOREVER is taken as
 *	RCL_CLOCK_FOREVER - 1 (the clock never reaches FOREVER, see
 *	rcl_fake_clock_advance())
 * @out: receives the clock
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL; -ENOMEM.
 */
RCL_API int rcl_fake_clock_new(uint64_t start, struct rcl_fake_clock **out);

/**
 * rcl_fake_clock_free() - free a fake clock
 * @fc: the clock; NULL is a no-op
 *
 * Context: no object may still wait on it.
 */
RCL_API void rcl_fake_clock_free(struct rcl_fake_clock *fc);

/**
 * rcl_fake_clock_clock() - the &struct rcl_clock of a fake clock
 * @fc: the fake clock
 *
 * Context: any thread.
 * Return: a clock valid as long as @fc; NULL for NULL.
 */
RCL_API const struct rcl_clock *rcl_fake_clock_clock(struct rcl_fake_clock *fc);

/**
 * rcl_fake_clock_advance() - move a fake clock forward
 * @fc: the fake clock
 * @ns: how far
 *
 * Wakes every waiter whose deadline is reached (it returns ETIMEDOUT).
 *
 * Context: any thread; takes the mutex of each such waiter, so never call
 * it holding one of the library's locks (not an issue from test code).
 *
 * Bad input: @fc NULL is a no-op. The time saturates at RCL_CLOCK_FOREVER -
 * 1, so that it never reaches RCL_CLOCK_FOREVER.
 */
RCL_API void rcl_fake_clock_advance(struct rcl_fake_clock *fc, uint64_t ns);

/**
 * rcl_fake_clock_waiters() - how many threads wait on a fake clock now
 * @fc: the fake clock
 *
 * Lets a test wait until a background thread has gone to sleep.
 *
 * Context: any thread.
 * Return: the number of threads inside @wait; 0 for NULL.
 */
RCL_API unsigned rcl_fake_clock_waiters(struct rcl_fake_clock *fc);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_CLOCK_H */
