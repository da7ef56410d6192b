/* SPDX-License-Identifier: MIT */
/*
 * Parsers of what the pressure module reads: PSI lines, cgroup files,
 * /proc/self/cgroup, /proc/self/mountinfo, /proc/self/statm, systemd's
 * base64 trigger.  Pure functions on a buffer and its length (no NUL needed,
 * embedded NULs are data), no allocation, no file access: the monitor reads
 * a file into a buffer and hands it here, and fuzz/fuzz_pressure.c feeds
 * them arbitrary bytes.  Every one either fills its outputs completely or
 * returns a negative errno and leaves them untouched.
 *
 * Numbers: decimal digits only, no sign, no leading '+'; a value that does
 * not fit 64 bits is -ERANGE (never wrapped or saturated: a budget must not
 * be derived from a wild value).  A malformed input is -EBADMSG even when
 * it also has such a value: the shape is checked first, over the whole
 * input.
 *
 * Lines: in the line-oriented files every line, the last included, ends
 * in '\n' (the kernel always writes it), so that a read cut inside the
 * last number is -EBADMSG rather than a smaller value.  Only
 * rcl__cg_parse_u64() allows it to be missing; rcl__psi_trigger_parse()
 * reads a value written to the kernel, as the kernel does.
 */
#ifndef RECLAIM_PRESSURE_PARSE_H
#define RECLAIM_PRESSURE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The stall totals of one PSI file (microseconds, monotonic). */
struct rcl__psi {
	uint64_t some_total_us;
	uint64_t full_total_us;
	bool has_full;		/* the "full" line was present (not in older
				   kernels' cpu file; always in memory) */
};

/*
 * A PSI file: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" and
 * optionally the same with "full".  The avg fields are checked for shape
 * (digits, '.', digits) and ignored; total= is required on each line.
 * Fields as the kernel prints them: in that order, one space apart.
 * Lines in either order; unknown lines, a line twice, and a file without
 * the "some" line are -EBADMSG.
 * Return: 0; -EBADMSG; -ERANGE.
 */
int rcl__psi_parse(const char *buf, size_t len, struct rcl__psi *out);

/*
 * A PSI trigger as written to a PSI file, read as the kernel reads it
 * (psi_trigger_create(): sscanf(buf, "some %u %u"), or "full"): "some" or
 * "full" at the start, then the stall and the window in microseconds,
 * decimal digits each, each after any run of the kernel's whitespace
 * (isspace() of lib/ctype.c: ' ', '\t' to '\r', 0xa0; the run may be
 * empty).  Whatever follows the window is ignored, as the kernel ignores
 * it: a newline, systemd's NUL (its decoded $MEMORY_PRESSURE_WRITE ends in
 * one), any text.  A NUL before the window ends the kernel's string, and
 * so the trigger.  The stall must be > 0 and at most the window; the
 * window > 0.  (The kernel's own window limits, 500 ms to 10 s, are not
 * checked here: the kernel checks them.  Nor is /proc/pressure's write
 * buffer: psi_write() copies at most 32 bytes and replaces the last byte
 * copied with a NUL, so the caller passes the length that the kernel keeps
 * there; a cgroup's memory.pressure reads the whole write.)  A trigger is
 * configuration,
 * not a measurement: a number above UINT32_MAX (which the kernel's %u
 * would wrap to another value) is -EINVAL too, and so are a sign and a
 * missing number.
 * Return: 0; -EINVAL.
 */
int rcl__psi_trigger_parse(const char *buf, size_t len, bool *full,
			   uint64_t *stall_us, uint64_t *window_us);

/*
 * A single-value cgroup file: "<u64>\n" (newline optional), or "max\n"
 * (v2: no limit), which gives UINT64_MAX.
 * Return: 0; -EBADMSG; -ERANGE.
 */
int rcl__cg_parse_u64(const char *buf, size_t len, uint64_t *out);

/*
 * A flat keyed file (memory.stat, memory.events): lines "<key> <u64>\n".
 * Finds @key (an exact match of the whole first field; the first such line
 * if there were two).  Lines that do not have the shape "word number"
 * (a word: visible ASCII bytes; one space; the newline) make the file
 * -EBADMSG, wherever they are.  An empty file is well-formed.
 * Return: 0; -ENOENT (well-formed, key absent); -EBADMSG; -ERANGE (the
 * key's value; other lines' overflow is ignored).
 */
int rcl__cg_parse_keyed(const char *buf, size_t len, const char *key,
			uint64_t *out);

/*
 * /proc/self/cgroup: lines "<id>:<controllers>:<path>".  Copies the path of
 * the v2 line ("0::<path>") into @v2 and that of the v1 line whose
 * comma-separated controllers include "memory" into @v1mem (either output
 * may be NULL: not wanted; its size is then ignored).  A path is absolute
 * and is the rest of the line (a cgroup's name may hold ':'; a NUL byte
 * is -EBADMSG); controllers are visible ASCII, comma-separated, no empty
 * item; only the v2 line ("0") has none.  The first line of each kind
 * counts.
 * Return: a mask: 1 (v2 found), 2 (v1 memory found), 0 (neither); -EBADMSG
 * for a line that is not of that shape; -ENAMETOOLONG if a wanted path
 * does not fit its buffer (with its NUL).
 */
int rcl__proc_cgroup_parse(const char *buf, size_t len, char *v2,
			   size_t v2size, char *v1mem, size_t v1size);

/*
 * /proc/self/mountinfo: finds the first mount of filesystem type "cgroup2"
 * (@version 2) or of type "cgroup" whose super options include "memory"
 * (@version 1), and copies its mount point (field 5) and its root within
 * the filesystem (field 4) into @mnt and @root, with the kernel's octal
 * escapes (\040 and the like) decoded.  Every line is checked for shape
 * (ids, major:minor, fields one space apart; the source after the type may
 * be empty; the super options are the rest of the line); the escapes only
 * in the two fields copied.
 * Return: 0; -ENOENT (no such mount); -EBADMSG (a line without the " - "
 * separator or with too few fields; in the mount found, a '\' without
 * three octal digits up to \377, a NUL raw or decoded, a root or mount
 * point that is not absolute); -ENAMETOOLONG; -EINVAL for a version other
 * than 1 or 2 (before the content is looked at).
 */
int rcl__mountinfo_find(const char *buf, size_t len, unsigned version,
			char *mnt, size_t mntsize, char *root, size_t rootsize);

/*
 * The cgroup directory: @mnt + (@path with the mount's @root prefix
 * stripped, on a component boundary); @path equal to @root gives @mnt
 * itself (no slash at the end).  A @path outside @root (another
 * namespace's view), one with a "." or ".." component (the kernel shows a
 * cgroup outside the reader's namespace as "/.."), and any of the three
 * that is not absolute are -ENOENT.  @out may be @mnt's buffer (the
 * directory built in place).
 * Return: 0; -ENOENT; -ENAMETOOLONG.
 */
int rcl__cgroup_dir(const char *mnt, const char *root, const char *path,
		    char *out, size_t outsize);

/*
 * /proc/self/statm: "<size> <resident> <shared> ...\n" in pages (at least
 * two fields, one space apart, the newline); gives the second field.
 * Return: 0; -EBADMSG; -ERANGE (the second field; others' overflow is
 * ignored, as in a keyed file).
 */
int rcl__statm_parse(const char *buf, size_t len, uint64_t *rss_pages);

/*
 * Standard base64 (RFC 4648 alphabet): '=' padding only at the end, at most
 * two, and then the length is a multiple of 4; unpadded input is accepted
 * too (its length mod 4 is not 1); one trailing newline is ignored, other
 * whitespace is not base64.  Non-zero unused bits in the last character
 * are -EINVAL.  Decodes into @out, and writes nothing past the decoded
 * length.
 * Return: the decoded length; -EINVAL (not base64, checked first); -E2BIG
 * (does not fit @outsize).
 */
ssize_t rcl__base64_decode(const char *in, size_t inlen, uint8_t *out,
			   size_t outsize);

#endif /* RECLAIM_PRESSURE_PARSE_H */
