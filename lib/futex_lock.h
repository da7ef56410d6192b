/* SPDX-License-Identifier: MIT */
/*
 * A lock on one 32-bit futex word: 0 free, 1 held, 2 held and perhaps
 * waited for (Drepper's "Futexes Are Tricky", mutex 3).  Taking and
 * releasing it uncontended is one CAS and one exchange, inline, the same
 * two locked instructions as a glibc mutex without its 50 to 67
 * instructions a pair (callgrind; bench/README.md).  A waiter spins on
 * plain loads, 1, 2, 4 .. RCL__LOCK_BACKOFF_MAX pauses apart, for about
 * RCL__LRUVEC_SPINS pauses, and takes the word with a CAS when it reads it
 * free; then it sleeps on the word, and an unlock that finds 2 wakes one
 * sleeper.  Acquire and release orders make it visible to ThreadSanitizer
 * as a lock.  Without Linux's futex the sleeps are sched_yield() loops.
 *
 * The lruvec lock is one (lib/internal.h, which says why it spins); so is
 * the SQLite plug-in's cache lock (lib/sqlite/pcache.c).  Everything here is
 * static: each library that includes it has its own copy, and no symbol.
 */
#ifndef RCL_FUTEX_LOCK_H
#define RCL_FUTEX_LOCK_H

#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <reclaim/common.h>

/* About how many pause instructions a waiter spins before it sleeps. */
#define RCL__LRUVEC_SPINS 512

/* Pause instructions between two tries of a waiter, at most. */
#define RCL__LOCK_BACKOFF_MAX 32u

static inline void rcl__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#if defined(__linux__)
/* Returns at once if *w is no longer @val; spurious returns are fine. */
static inline void rcl__futex_wait(RCL__ATOMIC(uint32_t) *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static inline void rcl__futex_wake(RCL__ATOMIC(uint32_t) *w, int n)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}
#else
static inline void rcl__futex_wait(RCL__ATOMIC(uint32_t) *w, uint32_t val)
{
	(void)w;
	(void)val;
	sched_yield();
}

static inline void rcl__futex_wake(RCL__ATOMIC(uint32_t) *w, int n)
{
	(void)w;
	(void)n;
}
#endif

static inline bool rcl__flock_trylock(RCL__ATOMIC(uint32_t) *w)
{
	uint32_t free_ = 0;

	return atomic_compare_exchange_strong_explicit(
		w, &free_, 1, memory_order_acquire, memory_order_relaxed);
}

/* The wait, out of line: the inline fast path saves no registers for it. */
static __attribute__((noinline, unused)) void
rcl__flock_lock_slow(RCL__ATOMIC(uint32_t) *w)
{
	unsigned spent = 0, j, backoff = 1;

	/*
	 * Spin on loads while the holder runs, whether or not others sleep
	 * (as glibc's adaptive mutex does): a waiter that slept as soon as
	 * it saw a sleeper would turn every contended hand-over into a
	 * futex wake-up and sleep.
	 */
	while (spent < RCL__LRUVEC_SPINS) {
		uint32_t c = atomic_load_explicit(w, memory_order_relaxed);

		if (c == 0 && rcl__flock_trylock(w))
			return;
		for (j = 0; j < backoff; j++)
			rcl__cpu_relax();
		spent += backoff;
		if (backoff < RCL__LOCK_BACKOFF_MAX)
			backoff *= 2;
	}
	while (atomic_exchange_explicit(w, 2, memory_order_acquire))
		rcl__futex_wait(w, 2);
}

/* Release; true if a waiter may sleep (the caller wakes one). */
static inline bool rcl__flock_release(RCL__ATOMIC(uint32_t) *w)
{
	return atomic_exchange_explicit(w, 0, memory_order_release) == 2;
}

#endif /* RCL_FUTEX_LOCK_H */
