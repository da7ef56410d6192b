/* SPDX-License-Identifier: MIT */
/*
 * test_xxh64.c - sim_xxh64() against known XXH64 values.
 *
 * The published vectors ("", "a", "abc" with seed 0, and the python-xxhash
 * README's sentence), then inputs of 0 to 100 bytes 0, 1, 2, ... (every
 * path: short, one and several stripes, each kind of tail) with two seeds,
 * and sim_xxh64_u64() on keys with the seeds of libCacheSim's counting
 * Bloom filter.  The values past the published ones were computed with the
 * reference library (libxxhash 0.8.1, XXH64()).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "xxh64.h"

static int failures;

static void check(const char *what, size_t len, uint64_t seed, uint64_t got,
		  uint64_t want)
{
	if (got == want)
		return;
	printf("FAIL %s (%zu bytes, seed 0x%" PRIx64 "): 0x%016" PRIX64
	       ", want 0x%016" PRIX64 "\n", what, len, seed, got, want);
	failures++;
}

static const struct {
	const char *s;
	uint64_t h;
} published[] = {
	{ "", 0xEF46DB3751D8E999ULL },
	{ "a", 0xD24EC4F1A98C6E5BULL },
	{ "abc", 0x44BC2CF5AD770999ULL },
	{ "Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1ULL },
};

#define SEED_B 0x9E3779B185EBCA8DULL

/* XXH64 of the bytes 0, 1, ..., len - 1, with seed 0 and with SEED_B. */
static const struct {
	size_t len;
	uint64_t h0, hb;
} counting[] = {
	{   0, 0xEF46DB3751D8E999ULL, 0x0B303D920EC349DFULL },
	{   1, 0xE934A84ADB052768ULL, 0x9C6678669FCD2E6DULL },
	{   3, 0xE5C7BB4533BC65DDULL, 0xF465322E2768434FULL },
	{   4, 0xFFCED8604453CC1EULL, 0x6105C2E67219DEC8ULL },
	{   7, 0x14CC643F630C72D2ULL, 0x625ACC63365064BDULL },
	{   8, 0x884A173614B81B8DULL, 0xB55F66AFFCC24E70ULL },
	{   9, 0x67D85784A7C78C5BULL, 0x458FBF0E5D7D5A33ULL },
	{  15, 0xA948F5F0F6ABAC2DULL, 0x5F7CB106FE5E7CB6ULL },
	{  16, 0x44B6EF2FB84169F7ULL, 0x21E52D46A74045EBULL },
	{  31, 0xC346D2B59B4D8EE1ULL, 0xF6A0359CAC5381BAULL },
	{  32, 0xCBF59C5116FF32B4ULL, 0xBC9B546AB584ABD0ULL },
	{  33, 0x0C535D1ACAFB8EADULL, 0xA11BD47EF728DA75ULL },
	{  63, 0xE26AA9E2A95F8E4FULL, 0x550D67CDCEB02F14ULL },
	{  64, 0xF7C67301DB6713F0ULL, 0x6517F78C897AD8FEULL },
	{ 100, 0x6AC1E58032166597ULL, 0x76C675ECA518BB3CULL },
};

/* The seeds libCacheSim's counting Bloom filter hashes an obj_id with. */
#define CBF_SEED0 0x12345678ULL
#define CBF_SEED1 0x12344321ULL

/* XXH64 of a key's 8 little-endian bytes, with CBF_SEED0 and CBF_SEED1. */
static const struct {
	uint64_t key, h0, h1;
} keys[] = {
	{ 0x0ULL, 0x67BB774D39F5D473ULL, 0xC2A64453B85A5E79ULL },
	{ 0x1ULL, 0x071B9484A2374097ULL, 0x83E9F36FCB5854BFULL },
	{ 0x2ULL, 0x2C1434D0D5D929B1ULL, 0x2721F0DCF4785A3DULL },
	{ 0x74DULL, 0xC4565F91D0C3ABE1ULL, 0xBAF060A3C3C615BBULL },
	{ 0xFFFFFFFFULL, 0xD1101BBD3D41985EULL, 0xA678DD4DFFD46923ULL },
	{ 0x10000000005ULL, 0x2AA32B9D8F732FB1ULL, 0xA4D2EE40A778E719ULL },
	{ 0xFFFFFFFFFFFFFFFFULL, 0x60B38A7D6D1E7EA9ULL, 0xCEAD0A48B29D4D47ULL },
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
	unsigned char buf[100];
	size_t i;

	for (i = 0; i < N(published); i++) {
		size_t n = strlen(published[i].s);

		check(published[i].s, n, 0, sim_xxh64(published[i].s, n, 0),
		      published[i].h);
	}
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)i;
	for (i = 0; i < N(counting); i++) {
		size_t n = counting[i].len;

		check("0, 1, 2, ...", n, 0, sim_xxh64(buf, n, 0),
		      counting[i].h0);
		check("0, 1, 2, ...", n, SEED_B, sim_xxh64(buf, n, SEED_B),
		      counting[i].hb);
	}
	check("NULL", 0, 0, sim_xxh64(NULL, 0, 0), 0xEF46DB3751D8E999ULL);
	for (i = 0; i < N(keys); i++) {
		unsigned char le[8];
		int b;

		for (b = 0; b < 8; b++)
			le[b] = (unsigned char)(keys[i].key >> (8 * b));
		check("key", 8, CBF_SEED0, sim_xxh64_u64(keys[i].key, CBF_SEED0),
		      keys[i].h0);
		check("key", 8, CBF_SEED1, sim_xxh64_u64(keys[i].key, CBF_SEED1),
		      keys[i].h1);
		check("key bytes", 8, CBF_SEED0, sim_xxh64(le, 8, CBF_SEED0),
		      keys[i].h0);
	}
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	printf("xxh64: %zu values, all as expected\n",
	       N(published) + 2 * N(counting) + 1 + 3 * N(keys));
	return 0;
}
