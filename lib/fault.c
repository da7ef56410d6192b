/* SPDX-License-Identifier: MIT */
/*
 * The fault-injection seam: every allocation the library makes, and every
 * thread it creates, goes through here first.
 *
 * Applications choose where a library object's memory comes from with a
 * &struct rcl_allocator, and tests make it fail.  A few allocations cannot
 * take one (a thread's add batch, made on its first add; a fake clock) and
 * thread creation has no hook at all, so the library's own tests could not
 * make them fail.  Here one process-wide hook, internal and not exported,
 * sees each of them - and each call to an application's allocator too -
 * before it is made, and may refuse it.  Unset (always, outside the test
 * binaries) it costs one relaxed load per allocation, and the library
 * allocates per object never, per thread and per object created rarely.
 */
#include "internal.h"

#include <errno.h>

struct fault_hook {
	rcl__fault_fn fn;
	void *ctx;
};

/*
 * A set publishes a {fn, ctx} pair that is never written again while it may
 * be read: each set takes the next of FAULT_SLOTS slots in turn, so that a
 * fault() that loaded the previous pair reads it whole (rewriting one slot
 * in place let it pair the new fn with the old ctx).  A slot is reused only
 * FAULT_SLOTS sets later, by which time the test that set it has long been
 * done with it.
 */
#define FAULT_SLOTS 16u

static _Atomic(const struct fault_hook *) hook;
static struct fault_hook hook_storage[FAULT_SLOTS];
static atomic_uint hook_next;

void rcl__fault_set(rcl__fault_fn fn, void *ctx)
{
	struct fault_hook *h;

	atomic_store(&hook, NULL);
	if (!fn)
		return;
	h = &hook_storage[atomic_fetch_add(&hook_next, 1) % FAULT_SLOTS];
	h->fn = fn;
	h->ctx = ctx;
	atomic_store(&hook, h);
}

static bool fault(enum rcl__fault_site site, size_t size)
{
	const struct fault_hook *h =
		atomic_load_explicit(&hook, memory_order_acquire);

	return unlikely(h != NULL) && h->fn(h->ctx, site, size);
}

void *rcl__calloc(size_t size)
{
	if (fault(RCL__FAULT_ALLOC, size))
		return NULL;
	return calloc(1, size);
}

void rcl__free(void *p)
{
	free(p);
}

static void *std_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

static void std_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

const struct rcl_allocator rcl__std_allocator = { std_alloc, std_free, NULL };

void *rcl__alloc(const struct rcl_allocator *a, size_t size)
{
	if (fault(RCL__FAULT_ALLOC, size))
		return NULL;
	return a->alloc(a->ctx, size);
}

int rcl__thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	if (fault(RCL__FAULT_THREAD, 0))
		return EAGAIN;
	return pthread_create(t, NULL, fn, arg);
}
