/* SPDX-License-Identifier: MIT */
/*
 * Why a call was refused: a thread-local reason and an optional process-wide
 * hook (<reclaim/refusal.h>).  The kernel has no counterpart: its misuse
 * checks WARN() with a stack trace; a library that returns errno values
 * instead owes its users the sentence the WARN would have printed.
 *
 * Threads: the reason is per thread (no sharing, no lock).  The hook is one
 * atomic pointer, loaded with acquire when a refusal happens.
 */
#include "internal.h"
#include "refusal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

#include <reclaim/refusal.h>

static RCL__TLS char tls_reason[RCL_REFUSAL_MAX];
static RCL__TLS bool tls_has_reason;
static RCL__TLS bool tls_in_hook;
static _Atomic(const struct rcl_refusal_log *) refusal_log;

static const char *errno_name(int err)
{
	switch (err) {
	case -EBUSY:
		return "-EBUSY";
	case -EDEADLK:
		return "-EDEADLK";
	case -EINVAL:
		return "-EINVAL";
	case -ENOENT:
		return "-ENOENT";
	case -ENOSPC:
		return "-ENOSPC";
	case -EBADF:
		return "-EBADF";
	case -EEXIST:
		return "-EEXIST";
	case -EBADMSG:
		return "-EBADMSG";
	case -ERANGE:
		return "-ERANGE";
	default:
		return NULL;
	}
}

int rcl__refuse(const char *func, int err, const char *rule)
{
	const struct rcl_refusal_log *log;
	const char *name = errno_name(err);

	if (name)
		snprintf(tls_reason, sizeof(tls_reason), "%s: %s (%s)", func,
			 rule, name);
	else
		snprintf(tls_reason, sizeof(tls_reason), "%s: %s (%d)", func,
			 rule, err);
	tls_has_reason = true;
	log = atomic_load_explicit(&refusal_log, memory_order_acquire);
	if (log && !tls_in_hook) {
		/* Some refusals hold a lock: not a cancellation point. */
		int cs = rcl__cancel_off();

		tls_in_hook = true;
		log->fn(log->arg, func, err, rule);
		tls_in_hook = false;
		rcl__cancel_restore(cs);
	}
	return err;
}

RCL_API const char *rcl_last_refusal(void)
{
	return tls_has_reason ? tls_reason : NULL;
}

RCL_API void rcl_clear_refusal(void)
{
	tls_has_reason = false;
}

RCL_API int rcl_set_refusal_log(const struct rcl_refusal_log *log)
{
	if (log && !log->fn)
		return -EINVAL;
	atomic_store_explicit(&refusal_log, log, memory_order_release);
	return 0;
}
