/* SPDX-License-Identifier: MIT */
/*
 * Parsers of the files the pressure monitor reads (pressure_parse.h).
 *
 * Every parser is a single forward scan of (buf, len) by index: no end
 * pointer is formed (buf may be NULL when len is 0), no byte at or past len
 * is read, and every loop advances by at least one byte, so the work is
 * bounded by len.  The scan validates the whole input before it stores
 * anything: values go to locals, strings are remembered as offsets into
 * the input, and outputs are written only once the answer is known to be
 * 0.  A file that is malformed anywhere is -EBADMSG even where the value
 * asked for was already found: a file the kernel did not write (or a read
 * cut short) must not yield a number a budget is then derived from.
 *
 * Line-oriented files must end in '\n' (the kernel always writes one):
 * without it, a read cut inside the last number ("total=12" of
 * "total=123") would parse as a smaller value.  Only the single-value
 * cgroup files (rcl__cg_parse_u64()) may lack it, as their contract says.
 * The trigger is no file the kernel wrote but a value written to it: it
 * is read as the kernel reads it, whatever follows its numbers.
 *
 * When both a shape error and an overflow are present, the shape error
 * wins: -EBADMSG says "not the kernel's file", -ERANGE "the kernel's file
 * with a value we cannot hold".
 */
#include "pressure_parse.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* Scanning helpers                                                           */
/* ------------------------------------------------------------------------- */

/* Locale-independent, and the same for signed and unsigned char. */
static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A visible ASCII byte: no space, control, NUL or 8-bit byte. */
static bool is_graph(char c)
{
	return c > ' ' && c < 0x7f;
}

/*
 * Scans the run of decimal digits at @pos.  Returns the position after it
 * (@pos itself: no digit).  *@val is the value, or UINT64_MAX with
 * *@overflow set when it does not fit; the run is still consumed to its
 * end, so that the caller can check what follows (a shape error wins).
 */
static size_t scan_u64(const char *buf, size_t len, size_t pos,
		       uint64_t *val, bool *overflow)
{
	uint64_t v = 0;
	bool ovf = false;

	for (; pos < len && is_digit(buf[pos]); pos++) {
		unsigned d = (unsigned)(buf[pos] - '0');

		if (ovf)
			continue;
		if (v > (UINT64_MAX - d) / 10) {
			ovf = true;
			v = UINT64_MAX;
			continue;
		}
		v = v * 10 + d;
	}
	*val = v;
	*overflow = ovf;
	return pos;
}

static size_t skip_digits(const char *buf, size_t len, size_t pos)
{
	while (pos < len && is_digit(buf[pos]))
		pos++;
	return pos;
}

/* Whether the bytes at *@pos are @lit; if so, *@pos moves past them. */
static bool eat(const char *buf, size_t len, size_t *pos, const char *lit)
{
	size_t n = strlen(lit);

	if (len - *pos < n || memcmp(buf + *pos, lit, n) != 0)
		return false;
	*pos += n;
	return true;
}

static bool eat_char(const char *buf, size_t len, size_t *pos, char c)
{
	if (*pos >= len || buf[*pos] != c)
		return false;
	(*pos)++;
	return true;
}

/*
 * The end of the line that starts at @pos (the index of its '\n'), or
 * @len when the line has no newline.  Only called with @pos < @len, so
 * buf is not NULL.
 */
static size_t line_end(const char *buf, size_t len, size_t pos)
{
	const char *nl = memchr(buf + pos, '\n', len - pos);

	return nl ? (size_t)(nl - buf) : len;
}

/* Whether the comma-separated list buf[off, off + n) has the item @item. */
static bool list_has(const char *buf, size_t off, size_t n, const char *item)
{
	size_t ilen = strlen(item);
	size_t i = off, end = off + n;

	while (i <= end) {
		const char *c = memchr(buf + i, ',', end - i);
		size_t e = c ? (size_t)(c - buf) : end;

		if (e - i == ilen && memcmp(buf + i, item, ilen) == 0)
			return true;
		i = e + 1;
	}
	return false;
}

/* ------------------------------------------------------------------------- */
/* PSI                                                                        */
/* ------------------------------------------------------------------------- */

/* "<digits>.<digits>": the shape the kernel prints its averages in. */
static bool psi_avg(const char *buf, size_t len, size_t *pos)
{
	size_t p = *pos, q;

	q = skip_digits(buf, len, p);
	if (q == p || !eat_char(buf, len, &q, '.'))
		return false;
	p = q;
	q = skip_digits(buf, len, p);
	if (q == p)
		return false;
	*pos = q;
	return true;
}

/*
 * One line at *@pos, through its '\n':
 * "some|full avg10=A avg60=A avg300=A total=N\n".
 */
static int psi_line(const char *buf, size_t len, size_t *pos, bool *full,
		    uint64_t *total, bool *overflow)
{
	size_t p = *pos, q;

	if (eat(buf, len, &p, "some "))
		*full = false;
	else if (eat(buf, len, &p, "full "))
		*full = true;
	else
		return -EBADMSG;
	if (!eat(buf, len, &p, "avg10=") || !psi_avg(buf, len, &p) ||
	    !eat(buf, len, &p, " avg60=") || !psi_avg(buf, len, &p) ||
	    !eat(buf, len, &p, " avg300=") || !psi_avg(buf, len, &p) ||
	    !eat(buf, len, &p, " total="))
		return -EBADMSG;
	q = scan_u64(buf, len, p, total, overflow);
	if (q == p || !eat_char(buf, len, &q, '\n'))
		return -EBADMSG;
	*pos = q;
	return 0;
}

int rcl__psi_parse(const char *buf, size_t len, struct rcl__psi *out)
{
	struct rcl__psi psi = { 0 };
	bool has_some = false, overflow = false;
	size_t pos = 0;

	while (pos < len) {
		uint64_t total;
		bool full, ovf;
		int err = psi_line(buf, len, &pos, &full, &total, &ovf);

		if (err)
			return err;
		if (full ? psi.has_full : has_some)
			return -EBADMSG;	/* a line twice */
		if (full) {
			psi.has_full = true;
			psi.full_total_us = total;
		} else {
			has_some = true;
			psi.some_total_us = total;
		}
		overflow |= ovf;
	}
	if (!has_some)
		return -EBADMSG;
	if (overflow)
		return -ERANGE;
	*out = psi;
	return 0;
}

/*
 * The kernel's isspace() (lib/ctype.c): ' ', '\t' to '\r', and Latin-1's
 * no-break space 0xa0, which its table marks as a space too.
 */
static bool is_kspace(char c)
{
	unsigned char u = (unsigned char)c;

	return u == ' ' || (u >= '\t' && u <= '\r') || u == 0xa0;
}

static size_t skip_kspace(const char *buf, size_t len, size_t pos)
{
	while (pos < len && is_kspace(buf[pos]))
		pos++;
	return pos;
}

/*
 * As psi_trigger_create() reads it: sscanf(buf, "some %u %u"), where a
 * space in the format is any run of whitespace (none included), %u skips
 * whitespace too and takes decimal digits, and nothing after the second
 * number is looked at.  A NUL ends the kernel's string; it is neither a
 * space nor a digit here, so it ends the scan at the same place.
 */
int rcl__psi_trigger_parse(const char *buf, size_t len, bool *full,
			   uint64_t *stall_us, uint64_t *window_us)
{
	uint64_t stall, window;
	bool is_full, ovf_s, ovf_w;
	size_t pos = 0, q;

	if (eat(buf, len, &pos, "some"))
		is_full = false;
	else if (eat(buf, len, &pos, "full"))
		is_full = true;
	else
		return -EINVAL;
	pos = skip_kspace(buf, len, pos);
	q = scan_u64(buf, len, pos, &stall, &ovf_s);
	if (q == pos)
		return -EINVAL;
	pos = skip_kspace(buf, len, q);
	q = scan_u64(buf, len, pos, &window, &ovf_w);
	if (q == pos)
		return -EINVAL;
	/*
	 * The kernel's %u is 32 bits and would wrap a larger number: the
	 * threshold it used would not be the one written.  A trigger is
	 * configuration, so such a value is just a bad one.
	 */
	if (ovf_s || ovf_w || stall > UINT32_MAX || window > UINT32_MAX ||
	    stall == 0 || window == 0 || stall > window)
		return -EINVAL;
	*full = is_full;
	*stall_us = stall;
	*window_us = window;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* cgroup files                                                               */
/* ------------------------------------------------------------------------- */

int rcl__cg_parse_u64(const char *buf, size_t len, uint64_t *out)
{
	uint64_t v;
	bool ovf = false;
	size_t pos = 0;

	if (eat(buf, len, &pos, "max")) {
		v = UINT64_MAX;
	} else {
		pos = scan_u64(buf, len, 0, &v, &ovf);
		if (pos == 0)
			return -EBADMSG;
	}
	eat_char(buf, len, &pos, '\n');
	if (pos != len)
		return -EBADMSG;
	if (ovf)
		return -ERANGE;
	*out = v;
	return 0;
}

int rcl__cg_parse_keyed(const char *buf, size_t len, const char *key,
			uint64_t *out)
{
	size_t klen = strlen(key);
	uint64_t val = 0;
	bool found = false, overflow = false;
	size_t pos = 0;

	while (pos < len) {
		size_t w = pos, wlen, q;
		uint64_t v;
		bool ovf;

		while (pos < len && is_graph(buf[pos]))
			pos++;
		wlen = pos - w;
		if (!wlen || !eat_char(buf, len, &pos, ' '))
			return -EBADMSG;
		q = scan_u64(buf, len, pos, &v, &ovf);
		if (q == pos || !eat_char(buf, len, &q, '\n'))
			return -EBADMSG;
		pos = q;
		/* The first line of the key counts (the kernel writes one). */
		if (!found && wlen == klen && memcmp(buf + w, key, klen) == 0) {
			found = true;
			val = v;
			overflow = ovf;
		}
	}
	if (!found)
		return -ENOENT;
	if (overflow)
		return -ERANGE;
	*out = val;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* /proc/self/cgroup                                                          */
/* ------------------------------------------------------------------------- */

int rcl__proc_cgroup_parse(const char *buf, size_t len, char *v2,
			   size_t v2size, char *v1mem, size_t v1size)
{
	size_t v2off = 0, v2len = 0, v1off = 0, v1len = 0;
	int mask = 0;
	size_t pos = 0;

	while (pos < len) {
		size_t end = line_end(buf, len, pos);
		size_t id, ctl, ctlen, path;
		const char *colon;
		bool id_zero = true;

		if (end == len)
			return -EBADMSG;	/* cut short: no newline */
		/* "<id>:": a hierarchy id, 0 only for the v2 line. */
		id = pos;
		pos = skip_digits(buf, end, pos);
		if (pos == id || !eat_char(buf, end, &pos, ':'))
			return -EBADMSG;
		for (size_t i = id; i < pos - 1; i++)
			id_zero &= buf[i] == '0';
		/* "<controllers>:": visible bytes, no empty item. */
		ctl = pos;
		colon = memchr(buf + ctl, ':', end - ctl);
		if (!colon)
			return -EBADMSG;
		ctlen = (size_t)(colon - buf) - ctl;
		for (size_t i = ctl; i < ctl + ctlen; i++)
			if (!is_graph(buf[i]))
				return -EBADMSG;
		if (ctlen && (buf[ctl] == ',' || buf[ctl + ctlen - 1] == ',' ||
			      memmem(buf + ctl, ctlen, ",,", 2)))
			return -EBADMSG;
		/*
		 * "<path>": the rest of the line (a cgroup's name may hold a
		 * ':'), absolute; a NUL would cut the copy short.
		 */
		path = ctl + ctlen + 1;
		if (path == end || buf[path] != '/' ||
		    memchr(buf + path, '\0', end - path))
			return -EBADMSG;
		if (!ctlen) {
			/* Only the v2 hierarchy has no controller or name. */
			if (!id_zero)
				return -EBADMSG;
			if (!(mask & 1)) {
				mask |= 1;
				v2off = path;
				v2len = end - path;
			}
		} else if (!(mask & 2) && list_has(buf, ctl, ctlen, "memory")) {
			mask |= 2;
			v1off = path;
			v1len = end - path;
		}
		pos = end + 1;
	}
	if (v2 && (mask & 1) && v2len >= v2size)
		return -ENAMETOOLONG;
	if (v1mem && (mask & 2) && v1len >= v1size)
		return -ENAMETOOLONG;
	if (v2 && (mask & 1)) {
		memcpy(v2, buf + v2off, v2len);
		v2[v2len] = '\0';
	}
	if (v1mem && (mask & 2)) {
		memcpy(v1mem, buf + v1off, v1len);
		v1mem[v1len] = '\0';
	}
	return mask;
}

/* ------------------------------------------------------------------------- */
/* /proc/self/mountinfo                                                       */
/* ------------------------------------------------------------------------- */

struct span {
	size_t off, len;
};

/*
 * The next space-separated field of the line that ends at @end, or false
 * past its last one.  Fields may be empty: a mount's source can be the
 * empty string, and the kernel then prints two spaces in a row.
 */
static bool next_field(const char *buf, size_t end, size_t *pos,
		       struct span *f)
{
	const char *sp;
	size_t p = *pos, q;

	if (p > end)
		return false;
	sp = memchr(buf + p, ' ', end - p);
	q = sp ? (size_t)(sp - buf) : end;
	f->off = p;
	f->len = q - p;
	*pos = q + 1;
	return true;
}

static bool span_is(const char *buf, struct span f, const char *s)
{
	size_t n = strlen(s);

	return f.len == n && memcmp(buf + f.off, s, n) == 0;
}

static bool span_digits(const char *buf, struct span f)
{
	return f.len && skip_digits(buf, f.off + f.len, f.off) == f.off + f.len;
}

static int octal(char c)
{
	return c >= '0' && c <= '7' ? c - '0' : -1;
}

/*
 * Decodes the kernel's escapes (mangle(): '\' and three octal digits, for
 * space, tab, newline and backslash) of field @f into @out (NULL: only
 * measure).  Returns the decoded length, or -EBADMSG for a '\' without
 * three octal digits, a code above 0377, or a NUL (raw or decoded), which
 * a C string cannot carry.
 */
static ssize_t unescape(const char *buf, struct span f, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < f.len; i++, n++) {
		char c = buf[f.off + i];

		if (c == '\\') {
			const char *e;
			int a, b, d;

			if (f.len - i < 4)
				return -EBADMSG;
			e = buf + f.off + i + 1;
			a = octal(e[0]);
			b = octal(e[1]);
			d = octal(e[2]);
			if (a < 0 || a > 3 || b < 0 || d < 0)
				return -EBADMSG;
			c = (char)(unsigned char)(a * 64 + b * 8 + d);
			i += 3;
		}
		if (c == '\0')
			return -EBADMSG;
		if (out)
			out[n] = c;
	}
	return (ssize_t)n;
}

/*
 * One line, buf[pos, end): "<id> <parent> <maj>:<min> <root> <mount point>
 * <options> [optional fields...] - <type> <source> <super options>".
 * Sets *@match when it is the mount @version asks for, and *@root and
 * *@mnt (never empty) in any case.
 */
static int mountinfo_line(const char *buf, size_t pos, size_t end,
			  unsigned version, bool *match, struct span *root,
			  struct span *mnt)
{
	struct span f[6], type, src, opts, minor;
	size_t dev_end, colon;
	bool sep = false;

	for (unsigned i = 0; i < 6; i++)
		if (!next_field(buf, end, &pos, &f[i]) || !f[i].len)
			return -EBADMSG;
	if (!span_digits(buf, f[0]) || !span_digits(buf, f[1]))
		return -EBADMSG;
	/* "<major>:<minor>" */
	dev_end = f[2].off + f[2].len;
	colon = skip_digits(buf, dev_end, f[2].off);
	if (colon == f[2].off || colon == dev_end || buf[colon] != ':')
		return -EBADMSG;
	minor.off = colon + 1;
	minor.len = dev_end - minor.off;
	if (!span_digits(buf, minor))
		return -EBADMSG;
	/* The optional fields ("shared:N", "master:N", ...), then "-". */
	while (!sep) {
		struct span o;

		if (!next_field(buf, end, &pos, &o) || !o.len)
			return -EBADMSG;
		sep = span_is(buf, o, "-");
	}
	if (!next_field(buf, end, &pos, &type) || !type.len ||
	    !next_field(buf, end, &pos, &src) || pos > end)
		return -EBADMSG;
	/*
	 * The super options are the rest of the line: a filesystem whose
	 * show_options() leaves a space unescaped still has them whole.
	 */
	opts.off = pos;
	opts.len = end - pos;
	if (!opts.len)
		return -EBADMSG;
	if (version == 2)
		*match = span_is(buf, type, "cgroup2");
	else
		*match = span_is(buf, type, "cgroup") &&
			 list_has(buf, opts.off, opts.len, "memory");
	*root = f[3];
	*mnt = f[4];
	return 0;
}

int rcl__mountinfo_find(const char *buf, size_t len, unsigned version,
			char *mnt, size_t mntsize, char *root, size_t rootsize)
{
	struct span mnt_f = { 0, 0 }, root_f = { 0, 0 };
	bool found = false;
	ssize_t mlen, rlen;
	size_t pos = 0;

	if (version != 1 && version != 2)
		return -EINVAL;
	while (pos < len) {
		size_t end = line_end(buf, len, pos);
		struct span m, r;
		bool match = false;
		int err;

		if (end == len)
			return -EBADMSG;	/* cut short: no newline */
		err = mountinfo_line(buf, pos, end, version, &match, &r, &m);
		if (err)
			return err;
		if (match && !found) {
			found = true;
			mnt_f = m;
			root_f = r;
		}
		pos = end + 1;
	}
	if (!found)
		return -ENOENT;
	/*
	 * Only the mount found is looked at closer (as its escapes are): a
	 * cgroup mount's root and mount point are absolute.
	 */
	if (buf[mnt_f.off] != '/' || buf[root_f.off] != '/')
		return -EBADMSG;
	mlen = unescape(buf, mnt_f, NULL);
	rlen = unescape(buf, root_f, NULL);
	if (mlen < 0 || rlen < 0)
		return -EBADMSG;
	if ((size_t)mlen >= mntsize || (size_t)rlen >= rootsize)
		return -ENAMETOOLONG;
	unescape(buf, mnt_f, mnt);
	mnt[mlen] = '\0';
	unescape(buf, root_f, root);
	root[rlen] = '\0';
	return 0;
}

/*
 * Whether the absolute path @p (length @n) has a "." or ".." component:
 * the kernel shows a cgroup outside the reader's cgroup namespace as
 * "/../..", and such a path must not climb out of the mount.
 */
static bool has_dot_component(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && p[i] == '/')
			i++;
		s = i;
		while (i < n && p[i] != '/')
			i++;
		e = i;
		if ((e - s == 1 && p[s] == '.') ||
		    (e - s == 2 && p[s] == '.' && p[s + 1] == '.'))
			return true;
	}
	return false;
}

int rcl__cgroup_dir(const char *mnt, const char *root, const char *path,
		    char *out, size_t outsize)
{
	size_t mlen = strlen(mnt), rlen = strlen(root), plen = strlen(path);
	size_t rest;

	if (mnt[0] != '/' || root[0] != '/' || path[0] != '/')
		return -ENOENT;
	/* "/" and "/a/" as prefixes are "" and "/a". */
	while (rlen && root[rlen - 1] == '/')
		rlen--;
	while (mlen > 1 && mnt[mlen - 1] == '/')
		mlen--;
	/* @path must be @root or below it, on a component boundary. */
	if (plen < rlen || memcmp(path, root, rlen) != 0 ||
	    (plen > rlen && path[rlen] != '/'))
		return -ENOENT;
	rest = rlen;
	while (rest < plen && path[rest] == '/' && path[rest + 1] == '/')
		rest++;		/* one slash between the two parts */
	if (has_dot_component(path + rest, plen - rest))
		return -ENOENT;
	if (plen - rest == 1)
		rest = plen;	/* "/": the mount itself, no slash after it */
	if (mlen == 1 && rest < plen)
		mlen = 0;	/* mounted at "/": "/" + "/a" is "/a" */
	if (mlen + (plen - rest) >= outsize)
		return -ENAMETOOLONG;
	/*
	 * The rest first, then the mount: @out may be @mnt's buffer (the
	 * directory built in place), and memmove() allows any overlap.
	 */
	memmove(out + mlen, path + rest, plen - rest);
	memmove(out, mnt, mlen);
	out[mlen + plen - rest] = '\0';
	return 0;
}

/* ------------------------------------------------------------------------- */
/* /proc/self/statm                                                           */
/* ------------------------------------------------------------------------- */

int rcl__statm_parse(const char *buf, size_t len, uint64_t *rss_pages)
{
	uint64_t rss = 0;
	bool rss_ovf = false;
	unsigned fields = 0;
	size_t pos = 0;

	for (;;) {
		uint64_t v;
		bool ovf;
		size_t q = scan_u64(buf, len, pos, &v, &ovf);

		if (q == pos || q >= len)
			return -EBADMSG;
		if (++fields == 2) {
			rss = v;
			rss_ovf = ovf;
		}
		pos = q + 1;
		if (buf[q] == '\n')
			break;
		if (buf[q] != ' ')
			return -EBADMSG;
	}
	if (pos != len || fields < 2)
		return -EBADMSG;
	if (rss_ovf)
		return -ERANGE;
	*rss_pages = rss;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* base64                                                                     */
/* ------------------------------------------------------------------------- */

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

ssize_t rcl__base64_decode(const char *in, size_t inlen, uint8_t *out,
			   size_t outsize)
{
	size_t n = inlen, pad = 0, data, olen, o = 0;
	uint32_t acc = 0;

	if (n && in[n - 1] == '\n')
		n--;
	while (pad < n && pad < 3 && in[n - 1 - pad] == '=')
		pad++;
	/* With padding, whole quantums only; "x===" is never valid. */
	if (pad > 2 || (pad && n % 4))
		return -EINVAL;
	data = n - pad;
	if (data % 4 == 1)
		return -EINVAL;
	for (size_t i = 0; i < data; i++)
		if (b64_value(in[i]) < 0)
			return -EINVAL;	/* also a '=' before the end */
	/*
	 * The bits of the last character past the last whole byte must be
	 * zero: one encoding per byte string, so that a value cannot hide
	 * data in them.
	 */
	if ((data % 4 == 2 && (b64_value(in[data - 1]) & 0xf)) ||
	    (data % 4 == 3 && (b64_value(in[data - 1]) & 0x3)))
		return -EINVAL;
	olen = data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0);
	if (olen > outsize || olen > SSIZE_MAX)
		return -E2BIG;
	for (size_t i = 0; i < data; i++) {
		acc = acc << 6 | (uint32_t)b64_value(in[i]);
		if (i % 4 == 3) {
			out[o++] = (uint8_t)(acc >> 16);
			out[o++] = (uint8_t)(acc >> 8);
			out[o++] = (uint8_t)acc;
			acc = 0;
		}
	}
	if (data % 4 == 2) {
		out[o++] = (uint8_t)(acc >> 4);
	} else if (data % 4 == 3) {
		out[o++] = (uint8_t)(acc >> 10);
		out[o++] = (uint8_t)(acc >> 2);
	}
	return (ssize_t)o;
}
