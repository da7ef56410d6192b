/* SPDX-License-Identifier: MIT */
/*
 * Recording why a call was refused (<reclaim/refusal.h>): internal.
 */
#ifndef RECLAIM_LIB_REFUSAL_H
#define RECLAIM_LIB_REFUSAL_H

/*
 * Record that @func refuses with @err (negative) because of @rule, a static
 * string, for rcl_last_refusal() and the log hook; returns @err.  Only on
 * error paths: it costs a formatted write to a thread-local buffer.
 */
int rcl__refuse(const char *func, int err, const char *rule);

/* return RCL__REFUSE(-EBUSY, "the node is on a list already"); */
#define RCL__REFUSE(err, rule) rcl__refuse(__func__, (err), (rule))

#endif /* RECLAIM_LIB_REFUSAL_H */
