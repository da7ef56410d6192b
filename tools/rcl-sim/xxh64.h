/* SPDX-License-Identifier: MIT */
/*
 * xxh64.h - the XXH64 hash (Yann Collet's xxHash, 64-bit variant).
 *
 * Written from the algorithm's description (xxHash's doc/xxhash_spec.md),
 * for the one policy whose decisions depend on key values: W-TinyLFU's
 * sketch, which must hash keys exactly as libCacheSim's does to reproduce
 * its rows.  Checked against the algorithm's published vectors by
 * test_xxh64.c.
 */
#ifndef RCL_SIM_XXH64_H
#define RCL_SIM_XXH64_H

#include <stddef.h>
#include <stdint.h>

/**
 * sim_xxh64() - XXH64 of a byte string
 * @data: the bytes (may be NULL when @len is 0)
 * @len: their number
 * @seed: the seed
 *
 * Return: the 64-bit hash, the same on every host (the input is read as
 * little-endian words, as the algorithm specifies).
 */
uint64_t sim_xxh64(const void *data, size_t len, uint64_t seed);

/**
 * sim_xxh64_u64() - XXH64 of the 8 little-endian bytes of @key
 * @key: the value
 * @seed: the seed
 *
 * The same as sim_xxh64() on those 8 bytes, without the loop: what a
 * little-endian program gets by hashing a uint64_t in memory.
 *
 * Return: the 64-bit hash.
 */
uint64_t sim_xxh64_u64(uint64_t key, uint64_t seed);

#endif /* RCL_SIM_XXH64_H */
