/* SPDX-License-Identifier: MIT */
/*
 * policies.h - the replacement policies rcl-sim compares.
 *
 * A policy is an entry of sim_policies[]: create() builds an empty cache of
 * a capacity in objects or in bytes, access() presents one request and
 * answers hit or miss (inserting on a miss and evicting as needed),
 * counters() reports what the policy counted, destroy() frees it.
 *
 * Object mode (the capacity in objects): every request has size 1.  Byte
 * mode (the capacity in bytes): each request carries its object's size, and
 * the policy charges an object the size of the request that inserted it,
 * against the capacity and against every share of it (segments, windows,
 * ghost lists), as libCacheSim does without --ignore-obj-size; an object
 * larger than the capacity (or than the part of the cache it must enter) is
 * a miss and is not inserted.  The same code serves both modes: in byte mode
 * with every size 1 a policy makes the decisions of object mode.
 *
 * Keys are the dense ids of trace.h (0 .. nr_keys - 1), so a policy may
 * index arrays by key; a policy that must see the trace's own key values
 * (wtinylfu, whose sketch hashes them) finds them in the array create()
 * receives.  To add a policy, write these four functions in policies.c and
 * add an entry to the table there.
 */
#ifndef RCL_SIM_POLICIES_H
#define RCL_SIM_POLICIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Most counters a policy reports. */
#define SIM_MAX_COUNTERS 16

/**
 * struct sim_counter - one named counter
 * @name: its name (a JSON key: no quotes or backslashes)
 * @value: its value
 */
struct sim_counter {
	const char *name;
	uint64_t value;
};

struct sim_policy;

/**
 * struct sim_cache - the part of every policy's state that rcl-sim reads
 * @policy: the policy
 * @err: a message when access() failed
 */
struct sim_cache {
	const struct sim_policy *policy;
	char err[256];
};

/**
 * struct sim_policy - one policy
 * @name: the --policy name
 * @help: a one-line description
 * @create: an empty cache of @capacity (>= 1) objects, or bytes with
 *	@bytes, over keys 0 .. @nr_keys - 1, @keys[k] being the trace's
 *	original key behind key k (valid for the cache's life; only a policy
 *	whose decisions depend on key values reads it); NULL with a message in
 *	@err on failure
 * @access: one request for @key, of @size bytes (1 in object mode): 1 hit,
 *	0 miss, -1 error (message in @c->err)
 * @counters: fills at most @max counters; returns how many
 * @destroy: frees the cache
 * @config: the variant's parameters (private to the implementation)
 */
struct sim_policy {
	const char *name;
	const char *help;
	struct sim_cache *(*create)(const struct sim_policy *p,
				    uint64_t capacity, uint32_t nr_keys,
				    const uint64_t *keys, bool bytes,
				    char *err, size_t errlen);
	int (*access)(struct sim_cache *c, uint32_t key, uint32_t size);
	size_t (*counters)(struct sim_cache *c, struct sim_counter *out,
			   size_t max);
	void (*destroy)(struct sim_cache *c);
	const void *config;
};

/** The policies, terminated by NULL. */
extern const struct sim_policy *const sim_policies[];

#endif /* RCL_SIM_POLICIES_H */
