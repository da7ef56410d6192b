/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pressure - libFuzzer target: the pressure monitor's parsers
 *
 * The first input byte picks one of the nine parsers of
 * lib/pressure_parse.h, the next two its options (output sizes, the key,
 * the mountinfo version, which /proc/self/cgroup outputs are wanted); the
 * rest is the file content (fuzz/README.md documents the encoding).  The
 * content is copied into a heap block of exactly its length (NULL when it
 * is empty), and every output into one of exactly its size, filled with a
 * canary, so that ASan or valgrind sees any access past either.
 *
 * Checked on every call: the return value is one the header documents;
 * on failure every output still holds the canary; on success every string
 * output is NUL-terminated inside its buffer and no byte past what the
 * parser reports is written; the same call gives the same answer again.
 * Per parser:
 * - cgroup single values and keyed files, statm, base64: an independent
 *   oracle (written line-first and string-based, unlike the parsers'
 *   single scan) must give the same return value and value;
 * - PSI: a parsed file is one or two whole lines, and each total equals
 *   the digits after its line's "total=";
 * - triggers: 0 < stall <= window <= UINT32_MAX, and the kind is the
 *   input's first four bytes;
 * - /proc/self/cgroup, mountinfo, the cgroup directory, base64: an output
 *   size is honoured exactly (the length + 1 works, the length alone is
 *   -ENAMETOOLONG or -E2BIG), a failure for size alone turns into success
 *   with room, and each path found is absolute and comes from the input;
 *   rcl__cgroup_dir() built in place in the mount point's buffer gives the
 *   same directory as into a separate one, and never climbs out of the
 *   mount ("." and ".." components).
 *
 * Without FUZZ_LIBFUZZER the file also has a main() that replays files (or
 * every file of directories), for the Meson test 'fuzz-pressure-corpus'.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/pressure_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------------------- */
/* Checks                                                                     */
/* ------------------------------------------------------------------------- */

static const char *g_parser = "?";

#define FUZZ_WHERE_FMT "fuzz_pressure: %s: "
#define FUZZ_WHERE_ARGS g_parser
#include "check.h"

#define CANARY 0xa5

/* A buffer of exactly @n bytes (n = 0: a zero-sized block, or NULL). */
static void *xalloc(size_t n)
{
	void *p = malloc(n);

	if (!p && n)
		abort();
	return p;
}

static void fill(void *p, size_t n)
{
	if (n)
		memset(p, CANARY, n);
}

static bool untouched(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i] != CANARY)
			return false;
	return true;
}

/* A NUL inside the @n bytes at @p: the string ends in its buffer. */
static bool terminated(const char *p, size_t n)
{
	return n && memchr(p, '\0', n) != NULL;
}

/*
 * An output size from an option byte: 0..127, or 4096 when the top bit
 * is set (room for any path of a small input).
 */
static size_t out_size(uint8_t b)
{
	return b & 0x80 ? 4096 : b;
}

static bool is_dig(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * The oracles' number: the decimal string @s of @n digits, compared as a
 * string with UINT64_MAX's after its leading zeros are dropped.  Returns
 * false when it does not fit.
 */
static bool dec_value(const char *s, size_t n, uint64_t *v)
{
	static const char max[] = "18446744073709551615";
	uint64_t x = 0;

	while (n > 1 && *s == '0')
		s++, n--;
	if (n > 20 || (n == 20 && memcmp(s, max, 20) > 0))
		return false;
	for (size_t i = 0; i < n; i++)
		x = x * 10 + (uint64_t)(s[i] - '0');
	*v = x;
	return true;
}

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_dig(s[i]))
			return false;
	return true;
}

/* ------------------------------------------------------------------------- */
/* PSI                                                                        */
/* ------------------------------------------------------------------------- */

/* The value after "total=" on the line of @buf that starts with @kind. */
static bool psi_line_total(const char *buf, size_t len, const char *kind,
			   uint64_t *v)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t e = (size_t)(nl - buf);
		const char *t;

		CHECK(nl, "a parsed PSI file has a line without a newline");
		if (e - i > 5 && memcmp(buf + i, kind, 5) == 0) {
			t = memmem(buf + i, e - i, "total=", 6);
			CHECK(t, "a parsed PSI line without total=");
			t += 6;
			CHECK(all_digits(t, (size_t)(buf + e - t)),
			      "total= is not all digits");
			return dec_value(t, (size_t)(buf + e - t), v);
		}
		i = e + 1;
	}
	return false;
}

static void fuzz_psi(const char *buf, size_t len)
{
	struct rcl__psi p, q;
	unsigned char fb;
	uint64_t t;
	size_t lines = 0;
	int rc;

	g_parser = "psi";
	fill(&p, sizeof(p));
	rc = rcl__psi_parse(buf, len, &p);
	CHECK(rc == 0 || rc == -EBADMSG || rc == -ERANGE, "rc %d", rc);
	fill(&q, sizeof(q));
	CHECK(rcl__psi_parse(buf, len, &q) == rc, "not deterministic");
	if (rc) {
		CHECK(untouched(&p, sizeof(p)), "output written on %d", rc);
		return;
	}
	CHECK(p.some_total_us == q.some_total_us &&
	      p.full_total_us == q.full_total_us && p.has_full == q.has_full,
	      "two answers");
	memcpy(&fb, &p.has_full, 1);
	CHECK(fb == 0 || fb == 1, "has_full is %u", fb);
	CHECK(len && buf[len - 1] == '\n', "parsed without a final newline");
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	CHECK(lines == 1u + p.has_full, "%zu lines", lines);
	CHECK(psi_line_total(buf, len, "some ", &t) && t == p.some_total_us,
	      "some total");
	if (p.has_full)
		CHECK(psi_line_total(buf, len, "full ", &t) &&
		      t == p.full_total_us, "full total");
}

/*
 * As the kernel reads it, string-based: a C string of the input up to its
 * first NUL, the kind, then strspn() runs of the kernel's whitespace and
 * of digits, twice; the rest is never looked at.  Numbers above the
 * kernel's u32 are refused.
 */
static int trigger_oracle(const char *buf, size_t len, bool *full,
			  uint64_t *stall, uint64_t *window)
{
	static const char ws[] = " \t\n\v\f\r\xa0", dig[] = "0123456789";
	char *s = xalloc(len + 1);
	const char *p;
	size_t n;
	int rc = -EINVAL;

	if (len)
		memcpy(s, buf, len);
	s[len] = '\0';
	if (strncmp(s, "some", 4) && strncmp(s, "full", 4))
		goto out;
	*full = s[0] == 'f';
	p = s + 4;
	p += strspn(p, ws);
	n = strspn(p, dig);
	if (!n || !dec_value(p, n, stall))
		goto out;
	p += n;
	p += strspn(p, ws);
	n = strspn(p, dig);
	if (!n || !dec_value(p, n, window))
		goto out;
	if (*stall && *window <= UINT32_MAX && *stall <= *window)
		rc = 0;
out:
	free(s);
	return rc;
}

static void fuzz_trigger(const char *buf, size_t len)
{
	struct {
		bool full;
		uint64_t stall, window;
	} t;
	bool wfull = false;
	uint64_t ws = 0, ww = 0;
	unsigned char fb;
	int rc, wrc;

	g_parser = "trigger";
	fill(&t, sizeof(t));
	rc = rcl__psi_trigger_parse(buf, len, &t.full, &t.stall, &t.window);
	CHECK(rc == 0 || rc == -EINVAL, "rc %d", rc);
	wrc = trigger_oracle(buf, len, &wfull, &ws, &ww);
	CHECK(rc == wrc, "rc %d, oracle %d", rc, wrc);
	if (rc) {
		CHECK(untouched(&t.full, sizeof(t.full)) &&
		      untouched(&t.stall, sizeof(t.stall)) &&
		      untouched(&t.window, sizeof(t.window)),
		      "output written on %d", rc);
		return;
	}
	memcpy(&fb, &t.full, 1);
	CHECK(fb == 0 || fb == 1, "full is %u", fb);
	CHECK(t.stall > 0 && t.window > 0, "zero stall or window");
	CHECK(t.stall <= t.window, "stall %llu > window %llu",
	      (unsigned long long)t.stall, (unsigned long long)t.window);
	CHECK(len >= 4 && memcmp(buf, t.full ? "full" : "some", 4) == 0,
	      "kind");
	CHECK(t.window <= UINT32_MAX, "window %llu beyond u32",
	      (unsigned long long)t.window);
	CHECK(t.full == wfull && t.stall == ws && t.window == ww,
	      "oracle: %llu %llu", (unsigned long long)ws,
	      (unsigned long long)ww);
}

/* ------------------------------------------------------------------------- */
/* cgroup files                                                               */
/* ------------------------------------------------------------------------- */

static int u64_oracle(const char *buf, size_t len, uint64_t *v)
{
	if (len && buf[len - 1] == '\n')
		len--;
	if (len == 3 && memcmp(buf, "max", 3) == 0) {
		*v = UINT64_MAX;
		return 0;
	}
	if (!all_digits(buf, len))
		return -EBADMSG;
	return dec_value(buf, len, v) ? 0 : -ERANGE;
}

static void fuzz_cg_u64(const char *buf, size_t len)
{
	uint64_t v, want = 0;
	int rc, wrc;

	g_parser = "cg_u64";
	fill(&v, sizeof(v));
	rc = rcl__cg_parse_u64(buf, len, &v);
	wrc = u64_oracle(buf, len, &want);
	CHECK(rc == wrc, "rc %d, oracle %d", rc, wrc);
	if (rc)
		CHECK(untouched(&v, sizeof(v)), "output written on %d", rc);
	else
		CHECK(v == want, "value %llu, oracle %llu",
		      (unsigned long long)v, (unsigned long long)want);
}

static const char *const keys[] = {
	"anon", "file", "inactive_file", "total_inactive_file", "low", "high",
	"max", "oom", "oom_kill", "oom_group_kill", "cache", "", "a b", "a",
	"hierarchical_memory_limit", "x\n",
};

/* Line first: split at '\n', then at the first ' '. */
static int keyed_oracle(const char *buf, size_t len, const char *key,
			uint64_t *v)
{
	size_t klen = strlen(key), i = 0;
	bool found = false, fits = true;

	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		const char *line = buf + i, *sp;
		size_t n, w;

		if (!nl)
			return -EBADMSG;
		n = (size_t)(nl - line);
		sp = memchr(line, ' ', n);
		if (!sp)
			return -EBADMSG;
		w = (size_t)(sp - line);
		if (!w || !all_digits(sp + 1, n - w - 1))
			return -EBADMSG;
		for (size_t j = 0; j < w; j++)
			if (line[j] <= ' ' || line[j] >= 0x7f)
				return -EBADMSG;
		if (!found && w == klen && memcmp(line, key, w) == 0) {
			found = true;
			fits = dec_value(sp + 1, n - w - 1, v);
		}
		i += n + 1;
	}
	if (!found)
		return -ENOENT;
	return fits ? 0 : -ERANGE;
}

static void fuzz_keyed(const char *buf, size_t len, uint8_t a)
{
	char kbuf[128];
	const char *key;
	uint64_t v, want = 0;
	int rc, wrc;

	g_parser = "keyed";
	if (a & 0x80) {
		/* A key from the content's start: often one of its words. */
		size_t n = a & 0x7f;

		if (n > len)
			n = len;
		memcpy(kbuf, buf ? buf : "", n);
		kbuf[n] = '\0';
		key = kbuf;
	} else {
		key = keys[a % (sizeof(keys) / sizeof(keys[0]))];
	}
	fill(&v, sizeof(v));
	rc = rcl__cg_parse_keyed(buf, len, key, &v);
	wrc = keyed_oracle(buf, len, key, &want);
	CHECK(rc == wrc, "rc %d, oracle %d", rc, wrc);
	if (rc)
		CHECK(untouched(&v, sizeof(v)), "output written on %d", rc);
	else
		CHECK(v == want, "value %llu, oracle %llu",
		      (unsigned long long)v, (unsigned long long)want);
}

/* ------------------------------------------------------------------------- */
/* /proc/self/cgroup                                                          */
/* ------------------------------------------------------------------------- */

/* @s (a path found) is in @buf, at a line's end. */
static bool from_input(const char *buf, size_t len, const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i + n < len; i++)
		if (buf[i + n] == '\n' && memcmp(buf + i, s, n) == 0)
			return true;
	return false;
}

static int cg_call(const char *buf, size_t len, bool want2, size_t s2,
		   bool want1, size_t s1, char **o2, char **o1)
{
	int rc;

	*o2 = want2 ? xalloc(s2) : NULL;
	*o1 = want1 ? xalloc(s1) : NULL;
	fill(*o2, want2 ? s2 : 0);
	fill(*o1, want1 ? s1 : 0);
	rc = rcl__proc_cgroup_parse(buf, len, *o2, s2, *o1, s1);
	CHECK(rc == -EBADMSG || rc == -ENAMETOOLONG || (rc >= 0 && rc <= 3),
	      "rc %d", rc);
	if (rc < 0) {
		CHECK(!want2 || untouched(*o2, s2), "v2 written on %d", rc);
		CHECK(!want1 || untouched(*o1, s1), "v1 written on %d", rc);
		return rc;
	}
	if (want2 && (rc & 1)) {
		CHECK(terminated(*o2, s2), "v2 not terminated");
		CHECK((*o2)[0] == '/', "v2 not absolute");
		CHECK(from_input(buf, len, *o2), "v2 not from the input");
	} else if (want2) {
		CHECK(untouched(*o2, s2), "v2 written, not found");
	}
	if (want1 && (rc & 2)) {
		CHECK(terminated(*o1, s1), "v1 not terminated");
		CHECK((*o1)[0] == '/', "v1 not absolute");
		CHECK(from_input(buf, len, *o1), "v1 not from the input");
	} else if (want1) {
		CHECK(untouched(*o1, s1), "v1 written, not found");
	}
	return rc;
}

static bool graph(char c)
{
	return c > ' ' && c < 0x7f;
}

/*
 * Line first, then its two colons.  Returns the mask and sets the two
 * paths' offsets and lengths.
 */
static int cg_oracle(const char *buf, size_t len, size_t off[2],
		     size_t n[2])
{
	int mask = 0;
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		const char *line = buf + i, *c1, *c2, *p;
		size_t ll, idn, cn, pn;
		bool zero = true, mem = false;

		if (!nl)
			return -EBADMSG;
		ll = (size_t)(nl - line);
		c1 = memchr(line, ':', ll);
		if (!c1)
			return -EBADMSG;
		idn = (size_t)(c1 - line);
		c2 = memchr(c1 + 1, ':', ll - idn - 1);
		if (!c2 || !all_digits(line, idn))
			return -EBADMSG;
		for (size_t j = 0; j < idn; j++)
			zero &= line[j] == '0';
		cn = (size_t)(c2 - c1 - 1);
		p = c2 + 1;
		pn = (size_t)(nl - p);
		if (!pn || p[0] != '/' || memchr(p, '\0', pn))
			return -EBADMSG;
		for (size_t j = 0, item = 0; j <= cn; j++) {
			if (j == cn || c1[1 + j] == ',') {
				if (cn && !item)
					return -EBADMSG;
				mem |= item == 6 &&
				       memcmp(c1 + 1 + j - 6, "memory", 6) == 0;
				item = 0;
			} else if (!graph(c1[1 + j])) {
				return -EBADMSG;
			} else {
				item++;
			}
		}
		if (!cn && !zero)
			return -EBADMSG;
		if (!cn && !(mask & 1)) {
			mask |= 1;
			off[0] = (size_t)(p - buf);
			n[0] = pn;
		} else if (mem && !(mask & 2)) {
			mask |= 2;
			off[1] = (size_t)(p - buf);
			n[1] = pn;
		}
		i += ll + 1;
	}
	return mask;
}

static void fuzz_proc_cgroup(const char *buf, size_t len, uint8_t a,
			     uint8_t b)
{
	bool want2 = !(b & 1), want1 = !(b & 2);
	size_t s2 = out_size(a), s1 = out_size((uint8_t)(b & ~3u));
	char *o2, *o1, *p2, *p1;
	int rc, mask;

	g_parser = "proc_cgroup";
	rc = cg_call(buf, len, want2, s2, want1, s1, &o2, &o1);
	{
		size_t off[2] = { 0, 0 }, n[2] = { 0, 0 };
		int w = cg_oracle(buf, len, off, n);
		bool short2 = want2 && (w & 1) && n[0] >= s2;
		bool short1 = want1 && (w & 2) && n[1] >= s1;

		CHECK(rc == (w < 0 ? w : short2 || short1 ? -ENAMETOOLONG : w),
		      "rc %d, oracle %d", rc, w);
		if (rc > 0 && want2 && (rc & 1))
			CHECK(strlen(o2) == n[0] &&
			      memcmp(o2, buf + off[0], n[0]) == 0, "v2 path");
		if (rc > 0 && want1 && (rc & 2))
			CHECK(strlen(o1) == n[1] &&
			      memcmp(o1, buf + off[1], n[1]) == 0, "v1 path");
	}
	/* The mask does not depend on what is wanted, or on the sizes. */
	mask = cg_call(buf, len, false, 0, false, 0, &p2, &p1);
	if (rc == -EBADMSG)
		CHECK(mask == -EBADMSG, "-EBADMSG only for some outputs");
	else
		CHECK(mask >= 0 && (rc < 0 || rc == mask), "mask %d, rc %d",
		      mask, rc);
	if (rc > 0) {
		/* Exactly the room each path needs suffices, one less not. */
		size_t n2 = (want2 && (rc & 1)) ? strlen(o2) : 0;
		size_t n1 = (want1 && (rc & 2)) ? strlen(o1) : 0;
		char *q2, *q1;

		free(p2);
		free(p1);
		CHECK(cg_call(buf, len, want2, n2 + 1, want1, n1 + 1, &p2,
			      &p1) == rc, "the exact sizes");
		CHECK(!n2 || strcmp(o2, p2) == 0, "v2 differs");
		CHECK(!n1 || strcmp(o1, p1) == 0, "v1 differs");
		if (n2) {
			CHECK(cg_call(buf, len, true, n2, want1, n1 + 1, &q2,
				      &q1) == -ENAMETOOLONG, "v2 one short");
			free(q2);
			free(q1);
		}
		if (n1) {
			CHECK(cg_call(buf, len, want2, n2 + 1, true, n1, &q2,
				      &q1) == -ENAMETOOLONG, "v1 one short");
			free(q2);
			free(q1);
		}
	}
	free(o2);
	free(o1);
	free(p2);
	free(p1);
}

/* ------------------------------------------------------------------------- */
/* /proc/self/mountinfo                                                       */
/* ------------------------------------------------------------------------- */

/*
 * The oracle's unescape: every '\\' takes three octal digits, a value up
 * to 255 and not 0.  Returns the decoded length or -1.
 */
static ssize_t mi_unescape(const char *s, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned v = 0;

		if (s[i] != '\\') {
			if (!s[i])
				return -1;
			out[o++] = s[i];
			continue;
		}
		if (n - i < 4)
			return -1;
		for (unsigned k = 1; k <= 3; k++) {
			if (s[i + k] < '0' || s[i + k] > '7')
				return -1;
			v = v * 8 + (unsigned)(s[i + k] - '0');
		}
		if (!v || v > 255)
			return -1;
		out[o++] = (char)(unsigned char)v;
		i += 3;
	}
	out[o] = '\0';
	return (ssize_t)o;
}

/*
 * Line first, then all its fields into an array.  On 0, @m and @r (of
 * len + 1 bytes) hold the decoded mount point and root.
 */
static int mi_oracle(const char *buf, size_t len, unsigned version, char *m,
		     char *r)
{
	const char *fm = NULL, *fr = NULL;
	size_t nm = 0, nr = 0, i = 0;

	if (version != 1 && version != 2)
		return -EINVAL;
	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		const char *line = buf + i;
		const char **f;
		size_t ll, nf = 1, sep = 0, *fl;
		bool match;

		if (!nl)
			return -EBADMSG;
		ll = (size_t)(nl - line);
		for (size_t j = 0; j < ll; j++)
			nf += line[j] == ' ';
		f = xalloc(nf * sizeof(*f));
		fl = xalloc(nf * sizeof(*fl));
		nf = 0;
		for (size_t j = 0, s = 0; j <= ll; j++)
			if (j == ll || line[j] == ' ') {
				f[nf] = line + s;
				fl[nf++] = j - s;
				s = j + 1;
			}
		for (size_t j = 6; j < nf && !sep; j++)
			if (fl[j] == 1 && f[j][0] == '-')
				sep = j;
#define MI_BAD() do { free(f); free(fl); return -EBADMSG; } while (0)
		if (!sep || nf < sep + 4)
			MI_BAD();
		for (size_t j = 0; j < sep; j++)
			if (!fl[j])
				MI_BAD();
		if (!fl[sep + 1] || f[nf - 1] + fl[nf - 1] == f[sep + 3])
			MI_BAD();	/* no type, or no super options */
		if (!all_digits(f[0], fl[0]) || !all_digits(f[1], fl[1]))
			MI_BAD();
		{
			const char *c = memchr(f[2], ':', fl[2]);
			size_t a = c ? (size_t)(c - f[2]) : 0;

			if (!c || !all_digits(f[2], a) ||
			    !all_digits(c + 1, fl[2] - a - 1))
				MI_BAD();
		}
		if (version == 2) {
			match = fl[sep + 1] == 7 &&
				memcmp(f[sep + 1], "cgroup2", 7) == 0;
		} else {
			/* "memory" among the comma-separated super options */
			const char *o = f[sep + 3];
			size_t on = (size_t)(nl - o), st = 0;

			bool mem = false;

			for (size_t j = 0; j <= on; j++) {
				if (j < on && o[j] != ',')
					continue;
				mem |= j - st == 6 &&
				       memcmp(o + st, "memory", 6) == 0;
				st = j + 1;
			}
			match = mem && fl[sep + 1] == 6 &&
				memcmp(f[sep + 1], "cgroup", 6) == 0;
		}
		if (match && !fm) {
			if (f[3][0] != '/' || f[4][0] != '/')
				MI_BAD();
			fr = f[3];
			nr = fl[3];
			fm = f[4];
			nm = fl[4];
		}
#undef MI_BAD
		free(f);
		free(fl);
		i += ll + 1;
	}
	if (!fm)
		return -ENOENT;
	if (mi_unescape(fm, nm, m) < 0 || mi_unescape(fr, nr, r) < 0)
		return -EBADMSG;
	return 0;
}

static int mi_call(const char *buf, size_t len, unsigned version,
		   size_t ms, size_t rs, char **m, char **r)
{
	int rc;

	*m = xalloc(ms);
	*r = xalloc(rs);
	fill(*m, ms);
	fill(*r, rs);
	rc = rcl__mountinfo_find(buf, len, version, *m, ms, *r, rs);
	CHECK(rc == 0 || rc == -ENOENT || rc == -EBADMSG ||
	      rc == -ENAMETOOLONG || rc == -EINVAL, "rc %d", rc);
	CHECK(rc == -EINVAL ? version != 1 && version != 2 :
	      version == 1 || version == 2, "-EINVAL and version %u", version);
	if (rc) {
		CHECK(untouched(*m, ms) && untouched(*r, rs),
		      "output written on %d", rc);
		return rc;
	}
	CHECK(terminated(*m, ms) && terminated(*r, rs), "not terminated");
	CHECK((*m)[0] == '/' && (*r)[0] == '/', "not absolute");
	/* Decoding only shortens: 4 bytes "\040" become 1. */
	CHECK(strlen(*m) + strlen(*r) < len, "longer than the input");
	return 0;
}

static void fuzz_mountinfo(const char *buf, size_t len, uint8_t a,
			   uint8_t b)
{
	unsigned version = b & 3;
	size_t ms = out_size(a), rs = out_size((uint8_t)(b & ~3u));
	char *m, *r, *m2, *r2;
	int rc;

	g_parser = "mountinfo";
	rc = mi_call(buf, len, version, ms, rs, &m, &r);
	{
		char *omnt = xalloc(len + 1), *oroot = xalloc(len + 1);
		int w = mi_oracle(buf, len, version, omnt, oroot);

		if (w == 0 && (strlen(omnt) >= ms || strlen(oroot) >= rs))
			w = -ENAMETOOLONG;
		CHECK(rc == w, "rc %d, oracle %d", rc, w);
		if (rc == 0)
			CHECK(strcmp(m, omnt) == 0 && strcmp(r, oroot) == 0,
			      "mount point or root differs");
		free(omnt);
		free(oroot);
	}
	if (rc == 0) {
		size_t mn = strlen(m), rn = strlen(r);

		CHECK(mi_call(buf, len, version, mn + 1, rn + 1, &m2, &r2) == 0,
		      "the exact sizes");
		CHECK(strcmp(m, m2) == 0 && strcmp(r, r2) == 0, "differs");
		free(m2);
		free(r2);
		CHECK(mi_call(buf, len, version, mn, rn + 1, &m2, &r2) ==
		      -ENAMETOOLONG, "mount point one short");
		free(m2);
		free(r2);
		CHECK(mi_call(buf, len, version, mn + 1, rn, &m2, &r2) ==
		      -ENAMETOOLONG, "root one short");
		free(m2);
		free(r2);
	} else if (rc == -ENAMETOOLONG) {
		CHECK(mi_call(buf, len, version, len + 1, len + 1, &m2, &r2) ==
		      0, "-ENAMETOOLONG with room");
		free(m2);
		free(r2);
	}
	free(m);
	free(r);
}

/* ------------------------------------------------------------------------- */
/* The cgroup directory                                                       */
/* ------------------------------------------------------------------------- */

/* The NUL-terminated @i-th of the NUL-separated strings of @buf. */
static char *nth_string(const char *buf, size_t len, unsigned i)
{
	size_t s = 0, e;
	char *p;

	for (; i; i--) {
		const char *z = s < len ? memchr(buf + s, '\0', len - s) : NULL;

		s = z ? (size_t)(z - buf) + 1 : len;
	}
	e = s;
	while (e < len && buf[e])
		e++;
	p = xalloc(e - s + 1);
	if (e > s)
		memcpy(p, buf + s, e - s);
	p[e - s] = '\0';
	return p;
}

static bool climbs(const char *p)
{
	return strstr(p, "/../") || strstr(p, "/./") ||
	       (strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0) ||
	       (strlen(p) >= 2 && strcmp(p + strlen(p) - 2, "/.") == 0);
}

static int dir_call(const char *mnt, const char *root, const char *path,
		    size_t size, char **out)
{
	int rc;

	*out = xalloc(size);
	fill(*out, size);
	rc = rcl__cgroup_dir(mnt, root, path, *out, size);
	CHECK(rc == 0 || rc == -ENOENT || rc == -ENAMETOOLONG, "rc %d", rc);
	if (rc) {
		CHECK(untouched(*out, size), "output written on %d", rc);
		return rc;
	}
	CHECK(terminated(*out, size), "not terminated");
	CHECK((*out)[0] == '/', "not absolute");
	return 0;
}

static void fuzz_cgroup_dir(const char *buf, size_t len, uint8_t a)
{
	char *mnt = nth_string(buf, len, 0);
	char *root = nth_string(buf, len, 1);
	char *path = nth_string(buf, len, 2);
	size_t size = out_size(a), mlen = strlen(mnt);
	char *out, *o2;
	int rc;

	g_parser = "cgroup_dir";
	rc = dir_call(mnt, root, path, size, &out);
	if (rc == 0) {
		size_t n = strlen(out), m = mlen, plen = strlen(path);
		const char *tail;

		/*
		 * The mount point (without its slashes at the end; nothing
		 * for "/"), then nothing or a tail of @path that does not
		 * climb; or "/" alone, for @path at the root of a mount on
		 * "/".
		 */
		while (m > 1 && mnt[m - 1] == '/')
			m--;
		if (m == 1)
			m = 0;
		CHECK(n >= m && memcmp(out, mnt, m) == 0,
		      "not under the mount point: %s", out);
		tail = out + m;
		if (m || strcmp(out, "/") != 0)
			CHECK(!*tail || (tail[0] == '/' &&
					 strlen(tail) <= plen &&
					 strcmp(path + plen - strlen(tail),
						tail) == 0),
			      "not a tail of the path: %s", out);
		CHECK(!climbs(tail), "climbs out: %s", out);
		CHECK(dir_call(mnt, root, path, n + 1, &o2) == 0 &&
		      strcmp(o2, out) == 0, "the exact size");
		free(o2);
		CHECK(dir_call(mnt, root, path, n, &o2) == -ENAMETOOLONG,
		      "one short");
		free(o2);
		/* In place, in the mount point's buffer. */
		if (size > mlen) {
			char *in = xalloc(size);

			memcpy(in, mnt, mlen + 1);
			CHECK(rcl__cgroup_dir(in, root, path, in, size) == 0 &&
			      strcmp(in, out) == 0, "in place: %s", in);
			free(in);
		}
	} else if (rc == -ENAMETOOLONG) {
		CHECK(dir_call(mnt, root, path, mlen + strlen(path) + 1, &o2) ==
		      0, "-ENAMETOOLONG with room");
		free(o2);
	}
	free(out);
	free(mnt);
	free(root);
	free(path);
}

/* ------------------------------------------------------------------------- */
/* /proc/self/statm                                                           */
/* ------------------------------------------------------------------------- */

/* Fields first: the line, then its space-separated numbers. */
static int statm_oracle(const char *buf, size_t len, uint64_t *v)
{
	size_t fields = 0, i = 0;
	bool fits = true;

	if (!len || buf[len - 1] != '\n' || memchr(buf, '\n', len) !=
	    buf + len - 1)
		return -EBADMSG;
	len--;
	for (;;) {
		const char *sp = memchr(buf + i, ' ', len - i);
		size_t e = sp ? (size_t)(sp - buf) : len;

		if (!all_digits(buf + i, e - i))
			return -EBADMSG;
		if (++fields == 2)
			fits = dec_value(buf + i, e - i, v);
		if (!sp)
			break;
		i = e + 1;
	}
	if (fields < 2)
		return -EBADMSG;
	return fits ? 0 : -ERANGE;
}

static void fuzz_statm(const char *buf, size_t len)
{
	uint64_t v, want = 0;
	int rc, wrc;

	g_parser = "statm";
	fill(&v, sizeof(v));
	rc = rcl__statm_parse(buf, len, &v);
	wrc = statm_oracle(buf, len, &want);
	CHECK(rc == wrc, "rc %d, oracle %d", rc, wrc);
	if (rc)
		CHECK(untouched(&v, sizeof(v)), "output written on %d", rc);
	else
		CHECK(v == want, "value %llu, oracle %llu",
		      (unsigned long long)v, (unsigned long long)want);
}

/* ------------------------------------------------------------------------- */
/* base64                                                                     */
/* ------------------------------------------------------------------------- */

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Padded standard base64 of @n bytes into @out (4 * ceil(n / 3) + 1). */
static size_t b64_encode(const uint8_t *in, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = b64chars[v >> 18 & 63];
		out[o++] = b64chars[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64chars[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64chars[v & 63] : '=';
	}
	out[o] = '\0';
	return o;
}

static ssize_t b64_call(const char *buf, size_t len, size_t size,
			uint8_t **out)
{
	ssize_t rc;

	*out = xalloc(size);
	fill(*out, size);
	rc = rcl__base64_decode(buf, len, *out, size);
	CHECK(rc >= 0 || rc == -EINVAL || rc == -E2BIG, "rc %zd", rc);
	if (rc < 0)
		CHECK(untouched(*out, size), "output written on %zd", rc);
	else
		CHECK((size_t)rc <= size && untouched(*out + rc, size -
		      (size_t)rc), "written past the decoded length");
	return rc;
}

static void fuzz_base64(const char *buf, size_t len, uint8_t a)
{
	size_t size = out_size(a);
	uint8_t *out, *o2;
	ssize_t rc;

	g_parser = "base64";
	rc = b64_call(buf, len, size, &out);
	if (rc >= 0) {
		/* Encoding it again gives the input (one encoding a value). */
		size_t n = len, e;
		char *enc = xalloc(4 * ((size_t)rc / 3 + 1) + 1);

		if (n && buf[n - 1] == '\n')
			n--;
		e = b64_encode(out, (size_t)rc, enc);
		if (n < e)	/* the input was unpadded */
			while (e && enc[e - 1] == '=')
				e--;
		CHECK(n == e && (!n || memcmp(buf, enc, n) == 0),
		      "not the input's encoding: %s", enc);
		free(enc);
		if (rc > 0) {
			CHECK(b64_call(buf, len, (size_t)rc, &o2) == rc &&
			      memcmp(o2, out, (size_t)rc) == 0,
			      "the exact size");
			free(o2);
			CHECK(b64_call(buf, len, (size_t)rc - 1, &o2) == -E2BIG,
			      "one short");
			free(o2);
		}
	} else {
		/* -EINVAL regardless of room, -E2BIG only for lack of it. */
		ssize_t big = b64_call(buf, len, len, &o2);

		CHECK(rc == -EINVAL ? big == -EINVAL :
		      big > 0 && (size_t)big > size, "%zd, with room %zd", rc,
		      big);
		free(o2);
	}
	free(out);
}

/* ------------------------------------------------------------------------- */
/* Entry point                                                                */
/* ------------------------------------------------------------------------- */

#define NR_PARSERS 9

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sel, a, b;
	size_t len;
	char *buf;

	if (size < 3)
		return 0;
	sel = data[0];
	a = data[1];
	b = data[2];
	len = size - 3;
	/* Exactly @len bytes, and NULL for an empty file. */
	buf = len ? xalloc(len) : NULL;
	if (len)
		memcpy(buf, data + 3, len);
	switch (sel % NR_PARSERS) {
	case 0: fuzz_psi(buf, len); break;
	case 1: fuzz_trigger(buf, len); break;
	case 2: fuzz_cg_u64(buf, len); break;
	case 3: fuzz_keyed(buf, len, a); break;
	case 4: fuzz_proc_cgroup(buf, len, a, b); break;
	case 5: fuzz_mountinfo(buf, len, a, b); break;
	case 6: fuzz_cgroup_dir(buf, len, a); break;
	case 7: fuzz_statm(buf, len); break;
	default: fuzz_base64(buf, len, a); break;
	}
	free(buf);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Stand-alone replay driver (no libFuzzer)                                   */
/* ------------------------------------------------------------------------- */

#include "replay.h"
