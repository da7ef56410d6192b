/* SPDX-License-Identifier: MIT */
/*
 * xxh64.c - the XXH64 hash, after the algorithm's specification.
 *
 * Four 64-bit accumulators take the input in 32-byte stripes; what is left
 * (fewer than 32 bytes, or all of a short input) is folded in by 8-byte
 * words, then one 4-byte word, then single bytes; a final avalanche mixes
 * the result.
 */
#include "xxh64.h"

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t read_le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint32_t read_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* One lane of a stripe into its accumulator. */
static inline uint64_t xxh_round(uint64_t acc, uint64_t lane)
{
	acc += lane * P2;
	acc = rotl64(acc, 31);
	return acc * P1;
}

/* An accumulator into the converged hash (inputs of 32 bytes or more). */
static inline uint64_t xxh_merge(uint64_t h, uint64_t acc)
{
	h ^= xxh_round(0, acc);
	return h * P1 + P4;
}

/* An 8-byte word of the tail. */
static inline uint64_t xxh_tail8(uint64_t h, uint64_t word)
{
	h ^= xxh_round(0, word);
	return rotl64(h, 27) * P1 + P4;
}

static inline uint64_t xxh_avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

uint64_t sim_xxh64(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	size_t left = len;
	uint64_t h;

	if (len >= 32) {
		uint64_t v1 = seed + P1 + P2, v2 = seed + P2;
		uint64_t v3 = seed, v4 = seed - P1;

		do {
			v1 = xxh_round(v1, read_le64(p));
			v2 = xxh_round(v2, read_le64(p + 8));
			v3 = xxh_round(v3, read_le64(p + 16));
			v4 = xxh_round(v4, read_le64(p + 24));
			p += 32;
			left -= 32;
		} while (left >= 32);
		h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) +
		    rotl64(v4, 18);
		h = xxh_merge(h, v1);
		h = xxh_merge(h, v2);
		h = xxh_merge(h, v3);
		h = xxh_merge(h, v4);
	} else {
		h = seed + P5;
	}
	h += (uint64_t)len;
	for (; left >= 8; left -= 8, p += 8)
		h = xxh_tail8(h, read_le64(p));
	if (left >= 4) {
		h ^= (uint64_t)read_le32(p) * P1;
		h = rotl64(h, 23) * P2 + P3;
		p += 4;
		left -= 4;
	}
	for (; left; left--, p++) {
		h ^= (uint64_t)*p * P5;
		h = rotl64(h, 11) * P1;
	}
	return xxh_avalanche(h);
}

uint64_t sim_xxh64_u64(uint64_t key, uint64_t seed)
{
	return xxh_avalanche(xxh_tail8(seed + P5 + 8, key));
}
