/* SPDX-License-Identifier: MIT */
/**
 * DOC: why a call was refused
 *
 * An errno alone cannot say which rule a refused call broke: -EBUSY from
 * rcl_lruvec_add() means "the node is on a list or in a batch already",
 * from rcl_lruvec_del() "a reclaimer holds it isolated", from
 * rcl_domain_free() "lruvecs are still attached".  Every library call that
 * refuses with -EBUSY or -EDEADLK (and the cheap-to-name -EINVAL cases of
 * the lruvec and shrinker calls) records a one-line reason naming the
 * function and the rule:
 *
 *	err = rcl_lruvec_add(&lv, &o->lru, RCL_LRU_FILE, w, 0);
 *	if (err)
 *		fprintf(stderr, "%s (%d)\n", rcl_last_refusal(), err);
 *	// "rcl_lruvec_add: the node is on a list or in a batch already (-EBUSY)"
 *
 * The reason is thread-local: it describes the calling thread's most recent
 * refusal (a successful call does not clear it; rcl_clear_refusal() does).
 * Optionally, a process-wide log hook sees every refusal as it happens, for
 * a debug log or an assertion in tests.
 *
 * Cost: nothing on any call that succeeds; a refusal writes a thread-local
 * buffer (and calls the hook if one is set).
 */
#ifndef RECLAIM_REFUSAL_H
#define RECLAIM_REFUSAL_H

#include <reclaim/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The longest reason, with its terminating NUL. */
#define RCL_REFUSAL_MAX 256

/**
 * rcl_last_refusal() - why this thread's most recent refused call was refused
 *
 * Context: any thread; thread-local, lock-free.
 * Return: "function: rule (-ERRNO)", valid until this thread's next refusal
 * or rcl_clear_refusal(); NULL if this thread has had none since it started
 * or since rcl_clear_refusal().
 */
RCL_API const char *rcl_last_refusal(void);

/**
 * rcl_clear_refusal() - forget this thread's last refusal
 *
 * Context: any thread; thread-local.
 */
RCL_API void rcl_clear_refusal(void);

/**
 * struct rcl_refusal_log - a process-wide hook for every refusal
 * @fn: called in the refusing thread, before the refused call returns, with
 *	@arg, the function's name, the negative errno it returns and the rule
 *	(static strings).  It may run with a library lock held, so it must not
 *	call the library (rcl_last_refusal() excepted); log, count or assert.
 *	It never runs with a lock that the library's fork() handlers take, so
 *	it may take a lock that the application's own atfork handlers take
 *	(a fork-safe logger's), or fork().
 * @arg: passed to @fn
 */
struct rcl_refusal_log {
	void (*fn)(void *arg, const char *func, int err, const char *rule);
	void *arg;
};

/**
 * rcl_set_refusal_log() - install (or, with NULL, remove) the refusal hook
 * @log: the hook; the library keeps the pointer, so it must stay valid, and
 *	unchanged, until it is replaced and no library call that could be
 *	refusing at that moment is still running (static storage is simplest)
 *
 * Context: any thread; an atomic store.  A call refusing concurrently sees
 * the old hook or the new one.
 * Return: 0; -EINVAL for a hook whose @fn is NULL.
 */
RCL_API int rcl_set_refusal_log(const struct rcl_refusal_log *log);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_REFUSAL_H */
