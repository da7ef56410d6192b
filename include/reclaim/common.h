/* SPDX-License-Identifier: MIT */
/**
 * DOC: common definitions
 *
 * Export macro, the type-checked container_of() that every intrusive user of
 * the library needs, and the few portability helpers the public headers share.
 *
 * Error convention, for every module: fallible functions return 0 on success
 * or a negative errno value (-EINVAL, -ENOMEM, -EBUSY, ...) on failure, and a
 * failing call has no effect (in particular, a callback passed to a failing
 * call never runs).  Misuse that can be detected cheaply (NULL, double add, a
 * node of another lruvec) is reported by such an error in every build, never
 * by an abort.
 *
 * Cancellation (pthread_cancel()): no function of the library is a
 * cancellation point.  The calls that run the application's callbacks
 * (evict, evict_batch and batch_end, a shrinker's count and scan, write-back
 * write, sync and wakeup, a shadow limit's drop, an object cache's
 * destructor, a pressure monitor's trim hook, the refusal log hook) or
 * wait (among them the background threads' stop calls) hold the calling
 * thread's cancellation off while they do, because a thread cancelled there
 * would leave what the call holds (isolated objects, locks, pins, objects
 * under writeback) held for ever; a request made meanwhile acts at the
 * thread's next cancellation point after the call.  So do the pressure
 * monitor's calls that read files or act.  A callback must return: it must
 * not exit its thread or jump out of the library.  An object cache's hash
 * and eq run under its lock with the caller's cancellation state: they must
 * not reach a cancellation point.
 */
#ifndef RECLAIM_COMMON_H
#define RECLAIM_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define RCL_API __attribute__((visibility("default")))
#else
#define RCL_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RCL_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define RCL_DEPRECATED(msg)
#endif

/*
 * Private members of public structs that the library accesses atomically.
 * C++ has no _Atomic before C++23; there the member is declared with the plain
 * type, which has the same size and alignment for the lock-free integer and
 * pointer types used here.  Applications never touch these members.
 */
#ifdef __cplusplus
#define RCL__ATOMIC(type) type
#else
#define RCL__ATOMIC(type) _Atomic(type)
#endif

/**
 * struct rcl_allocator - where a library object gets its memory
 * @alloc: returns @size bytes aligned for any type, or NULL
 * @free: releases memory from @alloc; never called with NULL
 * @ctx: passed to both
 *
 * Both may be called with the library's locks held: they must not call the
 * library, nor fork().
 *
 * Library-allocated objects (registries, shrinkers, ...) take an optional
 * allocator at creation; NULL means malloc()/free().  Everything allocated
 * on behalf of an object comes from its allocator: a domain's registry and
 * shrinkers, a registry's shadow limits, a domain's write-back batches.
 * Tests use it to count allocations and to make the Nth one fail.  The
 * library never allocates per cached object.
 *
 * When an allocation fails, the call that needed it returns -ENOMEM (or
 * -EAGAIN for a thread that cannot be created) and changes nothing, as any
 * failing call.  The one allocation no allocator reaches, a thread's add
 * batch (lruvec.h, made on the thread's first batched call), never fails
 * a call: without it the thread's adds and activations are done unbatched.
 */
struct rcl_allocator {
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr);
	void *ctx;
};

/**
 * rcl_container_of() - the object that embeds @ptr as its member @member
 * @ptr: pointer to the embedded member
 * @type: type of the containing object
 * @member: name of the member within @type
 *
 * Type-checked: a pointer that is not a pointer to @member's type gives a
 * compiler diagnostic.
 */
#define rcl_container_of(ptr, type, member)                                   \
	((type *)(void *)((char *)(1 ? (ptr) : &((type *)0)->member) -         \
			  offsetof(type, member)))

#endif /* RECLAIM_COMMON_H */
