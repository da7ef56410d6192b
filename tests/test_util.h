/* SPDX-License-Identifier: MIT */
/*
 * Test helpers shared by the cmocka binaries.
 *
 * cmocka's assertions longjmp into the test's frame and are not thread-safe:
 * code that runs on other threads (workers, the library's reclaimer and
 * flusher threads, callbacks) checks with T_CHECK() and friends, which abort
 * the test binary on failure.
 */
#ifndef RECLAIM_TESTS_TEST_UTIL_H
#define RECLAIM_TESTS_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define T_CHECK(cond)                                                         \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                             \
			abort();                                              \
		}                                                             \
	} while (0)
#define T_EQ(a, b) T_CHECK((long long)(a) == (long long)(b))
#define T_NE(a, b) T_CHECK((long long)(a) != (long long)(b))
#define T_PEQ(a, b) T_CHECK((const void *)(a) == (const void *)(b))

/*
 * LATE_DESTRUCTORS: whether a test may run code in a thread's later
 * pthread-key destructor rounds.  TSan finishes a thread in a key destructor
 * of its own, in those rounds; a lock taken after that trips its internal
 * check, so such tests skip under TSan.
 */
#if defined(__SANITIZE_THREAD__)
#define LATE_DESTRUCTORS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LATE_DESTRUCTORS 0
#endif
#endif
#ifndef LATE_DESTRUCTORS
#define LATE_DESTRUCTORS 1
#endif

/*
 * THREADS_AFTER_FORK: whether a test may start a thread in the child of a
 * fork() taken with other threads running; TSan ends such a child.
 */
#define THREADS_AFTER_FORK LATE_DESTRUCTORS

/*
 * A forked child's wait status @st: it exited, with 0 (not by a signal).
 * cmocka's assertions: for the test's own thread, in a file that includes
 * <cmocka.h>.
 */
#define ASSERT_CHILD_EXITED_OK(st)                                            \
	do {                                                                  \
		if (!WIFEXITED(st))                                           \
			print_message("child ended by signal %d\n",           \
				      WIFSIGNALED(st) ? WTERMSIG(st) : -1);   \
		assert_true(WIFEXITED(st));                                   \
		assert_int_equal(WEXITSTATUS(st), 0);                         \
	} while (0)

/* splitmix64: the stress tests' seeded, per-thread random numbers. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Operations per thread of a stress test: $RCL_STRESS_OPS, or @dflt. */
static inline unsigned ops_per_thread(unsigned dflt)
{
	const char *s = getenv("RCL_STRESS_OPS");

	return s ? (unsigned)strtoul(s, NULL, 10) : dflt;
}

#endif /* RECLAIM_TESTS_TEST_UTIL_H */
