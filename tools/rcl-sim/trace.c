/* SPDX-License-Identifier: MIT */
/*
 * trace.c - trace decoding for rcl-sim (see trace.h).
 *
 * Three layers: a byte source over libarchive (lines or fixed-size records,
 * whatever the compression), a sink that renumbers keys by first appearance
 * (and, for the formats with sizes, keeps each request's size), and one
 * decoder per format between them.  The decoding rules are those of
 * ../shared/traces/README.md, "Record layouts and decoding rules".
 */
#include "trace.h"

#include <archive.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* The formats                                                                */
/* ------------------------------------------------------------------------- */

const struct trace_format_info trace_formats[] = {
	{ "keys", "text: one unsigned decimal key per line" },
	{ "lirs", "text: one decimal block number per line; lines \"*\" and "
		  "empty lines skipped; CRLF tolerated (LIRS traces)" },
	{ "arc", "text: \"start nblocks ignored reqno\"; emits start .. "
		 "start+nblocks-1 (ARC traces)" },
	{ "u32be", "binary: 4-byte big-endian unsigned keys (cache2k traces)" },
	{ "u32le", "binary: 4-byte little-endian unsigned keys" },
	{ "u64be", "binary: 8-byte big-endian unsigned keys (Corda traces)" },
	{ "u64le", "binary: 8-byte little-endian unsigned keys" },
	{ "vscsi", "binary: vscsi records (version 1: 32 bytes, version 2: 40 "
		   "bytes, detected); the key is the lbn" },
	{ "oracleGeneral", "binary: libCacheSim oracleGeneral, 24-byte records "
			   "(u32 time, u64 obj_id, u32 size, i64 next); the "
			   "key is obj_id, with its size" },
	{ "csv", "text: the key is column --csv-key-col N (1-based) of each "
		 "line; decimal keys are used as they are, others are hashed; "
		 "sizes from --csv-size-col N" },
	{ "tencent-block", "SNIA Tencent CBS sample: reads only, one key per "
			   "512-byte sector, (volume << 40) | sector" },
	{ "tencent-photo", "SNIA Tencent photo sample: formats 0 and 5 only; a "
			   "key per (photo id, format, size class)" },
	{ "msr", "SNIA MSR Cambridge: reads only, one key per 512-byte block, "
		 "(disk namespace << 40) | block" },
	{ "adapt_size", "text: \"time object_id bytes\" (AdaptSize traces); the "
			"key is object_id, with its size" },
	{ NULL, NULL },
};

enum fmt {
	FMT_KEYS,
	FMT_LIRS,
	FMT_ARC,
	FMT_U32BE,
	FMT_U32LE,
	FMT_U64BE,
	FMT_U64LE,
	FMT_VSCSI,
	FMT_ORACLE_GENERAL,
	FMT_CSV,
	FMT_TENCENT_BLOCK,
	FMT_TENCENT_PHOTO,
	FMT_MSR,
	FMT_ADAPT_SIZE,
};

/* ------------------------------------------------------------------------- */
/* Decoder state and errors                                                   */
/* ------------------------------------------------------------------------- */

/* Open-addressing map from a string to its first-seen index. */
struct strmap {
	uint32_t *slots;	/* index + 1; 0 = empty */
	uint64_t *hashes;	/* per index */
	size_t *offs;		/* per index: offset in arena */
	size_t *lens;		/* per index */
	char *arena;
	size_t arena_len, arena_cap;
	size_t nr, cap;		/* indices used / allocated */
	size_t mask;		/* slots - 1 */
};

struct dec {
	const char *path;
	const struct trace_options *opt;
	char *err;
	size_t errlen;

	/* source */
	struct archive *a;
	const uint8_t *p, *end;
	bool eof;
	char *line;
	size_t line_len, line_cap;
	uint64_t lineno;
	uint64_t recno;

	/* sink: ids (and sizes) and the renumbering map */
	bool sized;		/* the format has sizes: keep them */
	uint32_t *ids;
	uint32_t *sizes;	/* with sized, one per id */
	uint64_t request_bytes, unique_bytes;
	size_t nr, cap;
	uint64_t *keys;		/* map slots: key */
	uint32_t *vals;		/* map slots: id + 1, 0 = empty */
	size_t mask;
	uint32_t nr_unique;

	struct strmap smap;
};

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static int fail(struct dec *d, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(d->err, d->errlen, "%s: ", d->path);
	if (n < 0 || (size_t)n >= d->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* At most this many characters of a bad line go into an error message. */
#define SHOW 40

/* A text line that is not a @what: the line's number and its start. */
static int fail_record(struct dec *d, const char *what, const char *s,
		       size_t n)
{
	return fail(d, "line %" PRIu64 ": not %s: \"%.*s\"%s", d->lineno, what,
		    (int)(n < SHOW ? n : SHOW), s, n > SHOW ? "..." : "");
}

/* ------------------------------------------------------------------------- */
/* The source                                                                 */
/* ------------------------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && strcmp(s + n - k, suffix) == 0;
}

static int src_open(struct dec *d)
{
	struct archive_entry *entry;
	int r;

	d->a = archive_read_new();
	if (!d->a)
		return fail(d, "out of memory");
	/*
	 * The decompression filters of the compressions in use for traces,
	 * rather than archive_read_support_filter_all(): each is detected by
	 * its magic number, and fewer filters are fewer ways for a binary
	 * trace to be mistaken for a compressed file.  lzma ("alone") and
	 * compress (.Z) have weak magic numbers (a vscsi trace can look like
	 * lzma), so they are tried only for files named so.  A filter that
	 * the library was built without answers ARCHIVE_WARN (it would run an
	 * external program) or fails; either is fine for the others.
	 */
	archive_read_support_filter_gzip(d->a);
	archive_read_support_filter_bzip2(d->a);
	archive_read_support_filter_xz(d->a);
	archive_read_support_filter_zstd(d->a);
	archive_read_support_filter_lz4(d->a);
	if (has_suffix(d->path, ".lzma"))
		archive_read_support_filter_lzma(d->a);
	if (has_suffix(d->path, ".Z"))
		archive_read_support_filter_compress(d->a);
	archive_read_support_format_raw(d->a);
	archive_read_support_format_empty(d->a);

	if (strcmp(d->path, "-") == 0)
		r = archive_read_open_fd(d->a, 0, 1 << 16);
	else
		r = archive_read_open_filename(d->a, d->path, 1 << 16);
	if (r != ARCHIVE_OK)
		return fail(d, "%s", archive_error_string(d->a) ?
				   archive_error_string(d->a) : "cannot open");
	r = archive_read_next_header(d->a, &entry);
	if (r == ARCHIVE_EOF) {
		d->eof = true;		/* an empty file */
		return 0;
	}
	if (r < ARCHIVE_WARN)
		return fail(d, "%s", archive_error_string(d->a));
	return 0;
}

/* Next block of decompressed data: 1, 0 at the end, -1 on error. */
static int src_next_block(struct dec *d)
{
	for (;;) {
		const void *buf;
		size_t size;
		la_int64_t off;
		int r;

		if (d->eof)
			return 0;
		r = archive_read_data_block(d->a, &buf, &size, &off);
		if (r == ARCHIVE_EOF) {
			d->eof = true;
			return 0;
		}
		if (r < ARCHIVE_WARN)
			return fail(d, "read error: %s",
				    archive_error_string(d->a));
		if (size == 0)
			continue;
		d->p = buf;
		d->end = d->p + size;
		return 1;
	}
}

/*
 * Make room for @need bytes in the byte buffer *@buf of capacity *@cap,
 * doubling from @first.  Returns false (the buffer unchanged) without memory.
 */
static bool buf_reserve(char **buf, size_t *cap, size_t need, size_t first)
{
	size_t c = *cap ? *cap : first;
	char *nb;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	nb = realloc(*buf, c);
	if (!nb)
		return false;
	*buf = nb;
	*cap = c;
	return true;
}

static int line_append(struct dec *d, const uint8_t *s, size_t n)
{
	if (!buf_reserve(&d->line, &d->line_cap, d->line_len + n, 256))
		return fail(d, "out of memory");
	memcpy(d->line + d->line_len, s, n);
	d->line_len += n;
	return 0;
}

/*
 * The next line, without its '\n' (a last line without one counts): 1 with
 * *@line and *@len set (valid until the next call), 0 at the end, -1 on error.
 */
static int src_getline(struct dec *d, const char **line, size_t *len)
{
	bool partial = false;

	d->line_len = 0;
	for (;;) {
		const uint8_t *nl;

		if (d->p == d->end) {
			int r = src_next_block(d);

			if (r < 0)
				return -1;
			if (r == 0) {
				if (!partial)
					return 0;
				break;
			}
		}
		nl = memchr(d->p, '\n', (size_t)(d->end - d->p));
		if (nl) {
			if (!partial) {
				*line = (const char *)d->p;
				*len = (size_t)(nl - d->p);
				d->p = nl + 1;
				d->lineno++;
				return 1;
			}
			if (line_append(d, d->p, (size_t)(nl - d->p)))
				return -1;
			d->p = nl + 1;
			break;
		}
		if (line_append(d, d->p, (size_t)(d->end - d->p)))
			return -1;
		partial = true;
		d->p = d->end;
	}
	*line = d->line;
	*len = d->line_len;
	d->lineno++;
	return 1;
}

/*
 * The next fixed-size record of @n bytes: 1, 0 at a clean end, -1 on error
 * (including a truncated last record).
 */
static int src_read(struct dec *d, uint8_t *dst, size_t n)
{
	size_t got = 0;

	while (got < n) {
		size_t k;

		if (d->p == d->end) {
			int r = src_next_block(d);

			if (r < 0)
				return -1;
			if (r == 0) {
				if (got == 0)
					return 0;
				return fail(d, "record %" PRIu64 " is truncated "
					    "(%zu of %zu bytes)", d->recno + 1,
					    got, n);
			}
		}
		k = (size_t)(d->end - d->p);
		if (k > n - got)
			k = n - got;
		memcpy(dst + got, d->p, k);
		d->p += k;
		got += k;
	}
	d->recno++;
	return 1;
}

/* ------------------------------------------------------------------------- */
/* The sink: renumbering by first appearance                                  */
/* ------------------------------------------------------------------------- */

static inline uint64_t mix64(uint64_t x)
{
	/* splitmix64's finaliser */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static int map_grow(struct dec *d)
{
	size_t nslots = d->keys ? 2 * (d->mask + 1) : 1u << 16;
	uint64_t *keys = malloc(nslots * sizeof(*keys));
	uint32_t *vals = calloc(nslots, sizeof(*vals));
	size_t i, mask = nslots - 1;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return fail(d, "out of memory");
	}
	if (d->keys) {
		for (i = 0; i <= d->mask; i++) {
			size_t j;

			if (!d->vals[i])
				continue;
			j = mix64(d->keys[i]) & mask;
			while (vals[j])
				j = (j + 1) & mask;
			keys[j] = d->keys[i];
			vals[j] = d->vals[i];
		}
	}
	free(d->keys);
	free(d->vals);
	d->keys = keys;
	d->vals = vals;
	d->mask = mask;
	return 0;
}

/*
 * One request for @key, of @size bytes when the format has sizes (a size of
 * 0 counts as 1: every object takes room).
 */
static int emit_sized(struct dec *d, uint64_t key, uint64_t size)
{
	bool is_new = false;
	size_t j;
	uint32_t id;

	if (d->nr == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 1u << 16;
		uint32_t *ids = realloc(d->ids, cap * sizeof(*ids));

		if (!ids)
			return fail(d, "out of memory");
		d->ids = ids;
		if (d->sized) {
			uint32_t *sizes = realloc(d->sizes,
						  cap * sizeof(*sizes));

			if (!sizes)
				return fail(d, "out of memory");
			d->sizes = sizes;
		}
		d->cap = cap;
	}
	if (d->sized) {
		if (size > UINT32_MAX)
			return fail(d, "request %zu: size %" PRIu64 " beyond "
				    "2^32 - 1 bytes", d->nr + 1, size);
		if (size == 0)
			size = 1;
	}
	if (!d->keys || 2 * ((size_t)d->nr_unique + 1) > d->mask + 1) {
		if (map_grow(d))
			return -1;
	}
	j = mix64(key) & d->mask;
	for (;;) {
		if (!d->vals[j]) {
			if (d->nr_unique == UINT32_MAX - 1)
				return fail(d, "more than 2^32 - 2 unique keys");
			id = d->nr_unique++;
			d->keys[j] = key;
			d->vals[j] = id + 1;
			is_new = true;
			break;
		}
		if (d->keys[j] == key) {
			id = d->vals[j] - 1;
			break;
		}
		j = (j + 1) & d->mask;
	}
	if (d->sized) {
		d->sizes[d->nr] = (uint32_t)size;
		d->request_bytes += size;
		if (is_new)
			d->unique_bytes += size;
	}
	d->ids[d->nr++] = id;
	return 0;
}

static int emit(struct dec *d, uint64_t key)
{
	return emit_sized(d, key, 1);
}

/*
 * The original key of every id, read off the renumbering map once the
 * trace is decoded (nothing on the path of each request).
 */
static int keep_keys(struct dec *d, struct trace *t)
{
	size_t i;

	t->keys = malloc((d->nr_unique ? d->nr_unique : 1) * sizeof(*t->keys));
	if (!t->keys)
		return fail(d, "out of memory");
	for (i = 0; d->keys && i <= d->mask; i++) {
		if (d->vals[i])
			t->keys[d->vals[i] - 1] = d->keys[i];
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* String interning (the SNIA samples)                                        */
/* ------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int strmap_grow_slots(struct dec *d)
{
	struct strmap *m = &d->smap;
	size_t nslots = m->slots ? 2 * (m->mask + 1) : 1024;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	size_t i;

	if (!slots)
		return fail(d, "out of memory");
	for (i = 0; i < m->nr; i++) {
		size_t j = m->hashes[i] & (nslots - 1);

		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(m->slots);
	m->slots = slots;
	m->mask = nslots - 1;
	return 0;
}

/* The first-seen index of the string @s of @n bytes, from 0; -1 on error. */
static int64_t strmap_index(struct dec *d, const char *s, size_t n)
{
	struct strmap *m = &d->smap;
	uint64_t h = fnv1a(s, n);
	size_t j;

	if (!m->slots || 2 * (m->nr + 1) > m->mask + 1) {
		if (strmap_grow_slots(d))
			return -1;
	}
	for (j = h & m->mask; m->slots[j]; j = (j + 1) & m->mask) {
		size_t i = m->slots[j] - 1;

		if (m->hashes[i] == h && m->lens[i] == n &&
		    memcmp(m->arena + m->offs[i], s, n) == 0)
			return (int64_t)i;
	}
	if (m->nr == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 1024;
		uint64_t *hashes = realloc(m->hashes, cap * sizeof(*hashes));
		size_t *offs, *lens;

		if (!hashes)
			return fail(d, "out of memory");
		m->hashes = hashes;
		offs = realloc(m->offs, cap * sizeof(*offs));
		if (!offs)
			return fail(d, "out of memory");
		m->offs = offs;
		lens = realloc(m->lens, cap * sizeof(*lens));
		if (!lens)
			return fail(d, "out of memory");
		m->lens = lens;
		m->cap = cap;
	}
	if (!buf_reserve(&m->arena, &m->arena_cap, m->arena_len + n, 4096))
		return fail(d, "out of memory");
	memcpy(m->arena + m->arena_len, s, n);
	m->offs[m->nr] = m->arena_len;
	m->lens[m->nr] = n;
	m->hashes[m->nr] = h;
	m->arena_len += n;
	m->slots[j] = (uint32_t)m->nr + 1;
	return (int64_t)m->nr++;
}

static void strmap_free(struct strmap *m)
{
	free(m->slots);
	free(m->hashes);
	free(m->offs);
	free(m->lens);
	free(m->arena);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------------------- */
/* Field helpers                                                              */
/* ------------------------------------------------------------------------- */

struct field {
	const char *s;
	size_t n;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static void trim(const char **s, size_t *n)
{
	while (*n && is_blank((*s)[0])) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_blank((*s)[*n - 1]))
		(*n)--;
}

/* Strict unsigned decimal: digits only, no sign, no overflow. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		unsigned c = (unsigned char)s[i] - '0';

		if (c > 9)
			return false;
		if (v > (UINT64_MAX - c) / 10)
			return false;
		v = v * 10 + c;
	}
	*out = v;
	return true;
}

/* Split at @sep (each field trimmed of blanks); returns the field count. */
static size_t split_sep(const char *s, size_t n, char sep, struct field *f,
			size_t max)
{
	size_t nf = 0, start = 0, i;

	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != sep)
			continue;
		if (nf < max) {
			f[nf].s = s + start;
			f[nf].n = i - start;
			trim(&f[nf].s, &f[nf].n);
		}
		nf++;
		start = i + 1;
	}
	return nf;
}

/* Split at runs of blanks; returns the field count. */
static size_t split_ws(const char *s, size_t n, struct field *f, size_t max)
{
	size_t nf = 0, i = 0;

	while (i < n) {
		size_t start;

		while (i < n && is_blank(s[i]))
			i++;
		if (i == n)
			break;
		start = i;
		while (i < n && !is_blank(s[i]))
			i++;
		if (nf < max) {
			f[nf].s = s + start;
			f[nf].n = i - start;
		}
		nf++;
	}
	return nf;
}

static uint64_t get_be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = n; i > 0; i--)
		v = (v << 8) | p[i - 1];
	return v;
}


/* ------------------------------------------------------------------------- */
/* Decoders                                                                   */
/* ------------------------------------------------------------------------- */

/* keys and lirs: one decimal key per line. */
static int dec_keys(struct dec *d, bool lirs)
{
	const char *s;
	size_t n;
	int r;

	while ((r = src_getline(d, &s, &n)) > 0) {
		uint64_t key;

		d->recno++;
		trim(&s, &n);
		if (n == 0)
			continue;
		if (lirs && n == 1 && s[0] == '*')
			continue;
		if (!parse_u64(s, n, &key))
			return fail_record(d, "an unsigned decimal key", s, n);
		if (emit(d, key))
			return -1;
	}
	return r;
}

/* arc: "start nblocks ignored reqno"; expand the blocks. */
static int dec_arc(struct dec *d)
{
	const char *s;
	size_t n;
	int r;

	while ((r = src_getline(d, &s, &n)) > 0) {
		struct field f[4];
		uint64_t start, nblocks, i, dummy;
		size_t nf;

		d->recno++;
		nf = split_ws(s, n, f, 4);
		if (nf == 0)
			continue;
		if (nf != 4 || !parse_u64(f[0].s, f[0].n, &start) ||
		    !parse_u64(f[1].s, f[1].n, &nblocks) ||
		    !parse_u64(f[2].s, f[2].n, &dummy) ||
		    !parse_u64(f[3].s, f[3].n, &dummy))
			return fail_record(d, "an ARC record \"start nblocks "
					   "ignored reqno\"", s, n);
		if (nblocks && start > UINT64_MAX - (nblocks - 1))
			return fail(d, "line %" PRIu64 ": blocks beyond 2^64",
				    d->lineno);
		for (i = 0; i < nblocks; i++) {
			if (emit(d, start + i))
				return -1;
		}
	}
	return r;
}

/* Fixed-width integers. */
static int dec_int(struct dec *d, unsigned width, bool big)
{
	uint8_t rec[8];
	int r;

	while ((r = src_read(d, rec, width)) > 0) {
		if (emit(d, big ? get_be(rec, width) : get_le(rec, width)))
			return -1;
	}
	return r;
}

/* vscsi version 1 (32 bytes) or 2 (40 bytes); the key is the lbn. */
static int dec_vscsi(struct dec *d)
{
	uint8_t rec[40];
	unsigned size, ver;
	int r;

	/* The first record decides the version (libCacheSim's rule). */
	r = src_read(d, rec, 32);
	if (r <= 0)
		return r;
	if (get_le(rec + 14, 2) >> 8 == 1) {
		ver = 1;
		size = 32;
	} else if (get_le(rec + 2, 2) >> 8 == 2) {
		ver = 2;
		size = 40;
		r = src_read(d, rec + 32, 8);
		if (r == 0)
			return fail(d, "record 1 is truncated (32 of 40 "
				    "bytes)");
		if (r < 0)
			return -1;
	} else {
		return fail(d, "not a vscsi trace (no version 1 or 2 in the "
			    "first record)");
	}
	d->recno = 1;
	for (;;) {
		uint64_t v = ver == 1 ? get_le(rec + 14, 2) >> 8 :
					get_le(rec + 2, 2) >> 8;

		if (v != ver)
			return fail(d, "record %" PRIu64 ": not a version %u "
				    "vscsi record", d->recno, ver);
		/* lbn is at offset 16 in both versions */
		if (emit(d, get_le(rec + 16, 8)))
			return -1;
		r = src_read(d, rec, size);
		if (r <= 0)
			return r;
	}
}

/* libCacheSim oracleGeneral: u32 time, u64 obj_id, u32 size, i64 next. */
static int dec_oracle_general(struct dec *d)
{
	uint8_t rec[24];
	int r;

	while ((r = src_read(d, rec, sizeof(rec))) > 0) {
		if (emit_sized(d, get_le(rec + 4, 8), get_le(rec + 12, 4)))
			return -1;
	}
	return r;
}

/*
 * Column @col (1-based) of the line @s of @n bytes, trimmed and unquoted:
 * true with *@f set, false when the line has fewer columns.
 */
static bool csv_column(const char *s, size_t n, char sep, unsigned col,
		       struct field *f)
{
	const char *p = s;
	size_t left = n;
	unsigned k;

	for (k = 1; k < col; k++) {
		const char *c = memchr(p, sep, left);

		if (!c)
			return false;
		left -= (size_t)(c + 1 - p);
		p = c + 1;
	}
	f->s = p;
	f->n = left;
	{
		const char *c = memchr(p, sep, left);

		if (c)
			f->n = (size_t)(c - p);
	}
	trim(&f->s, &f->n);
	if (f->n >= 2 && f->s[0] == '"' && f->s[f->n - 1] == '"') {
		f->s++;
		f->n -= 2;
	}
	return true;
}

/* csv: the key column, and the size column if any. */
static int dec_csv(struct dec *d)
{
	unsigned col = d->opt->csv_key_col, size_col = d->opt->csv_size_col;
	const char *s;
	size_t n;
	int r;

	if (col == 0)
		return fail(d, "the csv format needs --csv-key-col N");
	while ((r = src_getline(d, &s, &n)) > 0) {
		struct field f;
		const char *p = s;
		size_t left = n;
		uint64_t key, size = 1;

		if (d->lineno == 1 && d->opt->csv_header)
			continue;
		d->recno++;
		trim(&p, &left);
		if (left == 0)
			continue;
		if (!csv_column(p, left, d->opt->csv_sep, col, &f))
			return fail(d, "line %" PRIu64 ": no column %u",
				    d->lineno, col);
		if (!parse_u64(f.s, f.n, &key))
			key = fnv1a(f.s, f.n);
		if (size_col) {
			struct field fs;

			if (!csv_column(p, left, d->opt->csv_sep, size_col,
					&fs))
				return fail(d, "line %" PRIu64 ": no column "
					    "%u", d->lineno, size_col);
			if (!parse_u64(fs.s, fs.n, &size))
				return fail(d, "line %" PRIu64 ": column %u "
					    "is not an unsigned decimal size: "
					    "\"%.*s\"", d->lineno, size_col,
					    (int)(fs.n < SHOW ? fs.n : SHOW),
					    fs.s);
		}
		if (emit_sized(d, key, size))
			return -1;
	}
	return r;
}

#define SECTOR_MASK ((UINT64_C(1) << 40) - 1)

/* Tencent CBS: timestamp,offset,size,io_type,volume_id; reads only. */
static int dec_tencent_block(struct dec *d)
{
	const char *s;
	size_t n;
	int r;

	while ((r = src_getline(d, &s, &n)) > 0) {
		struct field f[5];
		uint64_t v[5], i;
		size_t nf, k;

		d->recno++;
		trim(&s, &n);
		if (n == 0)
			continue;
		nf = split_sep(s, n, ',', f, 5);
		for (k = 0; k < 5 && nf == 5; k++) {
			if (!parse_u64(f[k].s, f[k].n, &v[k]))
				break;
		}
		if (nf != 5 || k != 5)
			return fail(d, "line %" PRIu64 ": not a Tencent CBS "
				    "record \"timestamp,offset,size,io_type,"
				    "volume_id\"", d->lineno);
		if (v[3] != 0)
			continue;	/* writes */
		for (i = 0; i < v[2]; i++) {
			if (emit(d, (v[4] << 40) | ((v[1] + i) & SECTOR_MASK)))
				return -1;
		}
	}
	return r;
}

/* Tencent photo: time photo_id format size_class bytes ...; jpeg and webp. */
static int dec_tencent_photo(struct dec *d)
{
	const char *s;
	size_t n;
	int r;

	while ((r = src_getline(d, &s, &n)) > 0) {
		struct field f[4];
		uint64_t format;
		size_t nf;
		char key[256];
		int64_t idx;
		int len;

		d->recno++;
		nf = split_ws(s, n, f, 4);
		if (nf == 0)
			continue;
		if (nf < 4 || !parse_u64(f[2].s, f[2].n, &format))
			return fail(d, "line %" PRIu64 ": not a Tencent photo "
				    "record \"time photo_id format size_class "
				    "...\"", d->lineno);
		if (format != 0 && format != 5)
			continue;
		len = snprintf(key, sizeof(key), "%.*s %" PRIu64 " %.*s",
			       (int)f[1].n, f[1].s, format, (int)f[3].n,
			       f[3].s);
		if (len < 0 || (size_t)len >= sizeof(key))
			return fail(d, "line %" PRIu64 ": fields too long",
				    d->lineno);
		idx = strmap_index(d, key, (size_t)len);
		if (idx < 0 || emit(d, (uint64_t)idx))
			return -1;
	}
	return r;
}

/* MSR Cambridge: Timestamp,Hostname,DiskNumber,Type,Offset,Size,RT. */
static int dec_msr(struct dec *d)
{
	const char *s;
	size_t n;
	int r;

	while ((r = src_getline(d, &s, &n)) > 0) {
		struct field f[7];
		uint64_t off, size, first, count, i, ns;
		char key[256];
		int64_t idx;
		int len;

		d->recno++;
		trim(&s, &n);
		if (n == 0)
			continue;
		if (split_sep(s, n, ',', f, 7) != 7 ||
		    !parse_u64(f[4].s, f[4].n, &off) ||
		    !parse_u64(f[5].s, f[5].n, &size))
			return fail(d, "line %" PRIu64 ": not an MSR record "
				    "\"Timestamp,Hostname,DiskNumber,Type,"
				    "Offset,Size,ResponseTime\"", d->lineno);
		if (!(f[3].n == 4 && memcmp(f[3].s, "Read", 4) == 0))
			continue;
		len = snprintf(key, sizeof(key), "%.*s,%.*s", (int)f[1].n,
			       f[1].s, (int)f[2].n, f[2].s);
		if (len < 0 || (size_t)len >= sizeof(key))
			return fail(d, "line %" PRIu64 ": fields too long",
				    d->lineno);
		idx = strmap_index(d, key, (size_t)len);
		if (idx < 0)
			return -1;
		ns = (uint64_t)idx + 1;
		first = off / 512;
		count = size / 512 + (size % 512 != 0);
		for (i = 0; i < count; i++) {
			if (emit(d, (ns << 40) | ((first + i) & SECTOR_MASK)))
				return -1;
		}
	}
	return r;
}

/* adapt_size: "time object_id bytes"; the key is object_id. */
static int dec_adapt_size(struct dec *d)
{
	const char *s;
	size_t n;
	int r;

	while ((r = src_getline(d, &s, &n)) > 0) {
		struct field f[3];
		uint64_t t, key, size;
		size_t nf;

		d->recno++;
		nf = split_ws(s, n, f, 3);
		if (nf == 0)
			continue;
		if (nf != 3 || !parse_u64(f[0].s, f[0].n, &t) ||
		    !parse_u64(f[1].s, f[1].n, &key) ||
		    !parse_u64(f[2].s, f[2].n, &size))
			return fail_record(d, "an AdaptSize record \"time "
					   "object_id bytes\"", s, n);
		if (emit_sized(d, key, size))
			return -1;
	}
	return r;
}

/* ------------------------------------------------------------------------- */
/* Entry points                                                               */
/* ------------------------------------------------------------------------- */

static int find_format(const char *name)
{
	int i;

	for (i = 0; trace_formats[i].name; i++) {
		if (strcmp(trace_formats[i].name, name) == 0)
			return i;
	}
	return -1;
}

bool trace_has_sizes(const struct trace_options *opt)
{
	int fmt = find_format(opt->format);

	return fmt == FMT_ADAPT_SIZE || fmt == FMT_ORACLE_GENERAL ||
	       (fmt == FMT_CSV && opt->csv_size_col > 0);
}

int trace_load(const char *path, const struct trace_options *opt,
	       struct trace *t, char *err, size_t errlen)
{
	struct dec d;
	int fmt, r;

	memset(t, 0, sizeof(*t));
	memset(&d, 0, sizeof(d));
	d.path = path;
	d.opt = opt;
	d.err = err;
	d.errlen = errlen;

	fmt = find_format(opt->format);
	if (fmt < 0) {
		snprintf(err, errlen, "unknown trace format \"%s\"",
			 opt->format);
		return -1;
	}
	d.sized = trace_has_sizes(opt);
	r = src_open(&d);
	if (r == 0) {
		switch ((enum fmt)fmt) {
		case FMT_KEYS:
			r = dec_keys(&d, false);
			break;
		case FMT_LIRS:
			r = dec_keys(&d, true);
			break;
		case FMT_ARC:
			r = dec_arc(&d);
			break;
		case FMT_U32BE:
			r = dec_int(&d, 4, true);
			break;
		case FMT_U32LE:
			r = dec_int(&d, 4, false);
			break;
		case FMT_U64BE:
			r = dec_int(&d, 8, true);
			break;
		case FMT_U64LE:
			r = dec_int(&d, 8, false);
			break;
		case FMT_VSCSI:
			r = dec_vscsi(&d);
			break;
		case FMT_ORACLE_GENERAL:
			r = dec_oracle_general(&d);
			break;
		case FMT_CSV:
			r = dec_csv(&d);
			break;
		case FMT_TENCENT_BLOCK:
			r = dec_tencent_block(&d);
			break;
		case FMT_TENCENT_PHOTO:
			r = dec_tencent_photo(&d);
			break;
		case FMT_MSR:
			r = dec_msr(&d);
			break;
		case FMT_ADAPT_SIZE:
			r = dec_adapt_size(&d);
			break;
		}
	}
	if (d.a) {
		archive_read_close(d.a);
		archive_read_free(d.a);
	}
	free(d.line);
	strmap_free(&d.smap);
	if (r == 0 && keep_keys(&d, t))
		r = -1;
	free(d.keys);
	free(d.vals);
	if (r < 0) {
		free(d.ids);
		free(d.sizes);
		return -1;
	}
	t->sizes = d.sizes;
	t->request_bytes = d.request_bytes;
	t->unique_bytes = d.unique_bytes;
	t->ids = d.ids;
	t->nr_requests = d.nr;
	t->nr_unique = d.nr_unique;
	t->nr_records = d.recno;
	return 0;
}

void trace_free(struct trace *t)
{
	if (!t)
		return;
	free(t->ids);
	free(t->sizes);
	free(t->keys);
	memset(t, 0, sizeof(*t));
}
