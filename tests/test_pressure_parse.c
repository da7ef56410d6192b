/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the pressure monitor's parsers (lib/pressure_parse.h): the
 * kernel's real formats (the files of the machine this was written on,
 * copied in as literals: cgroup v1 with a v2 "unified" mount beside it,
 * kernel 6.18; and v2 files as a v2 kernel writes them), every error path,
 * every prefix of each valid input (a read cut short must fail cleanly or
 * give a result the contract allows for that prefix), overflow, and that
 * a failing call leaves every output untouched.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include "../lib/pressure_parse.h"

/* A string literal as (buffer, length): embedded NULs included. */
#define S(lit) lit, sizeof(lit) - 1

#define CANARY 0xa5

static bool untouched(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i] != CANARY)
			return false;
	return true;
}

/*
 * Each parser is called on a heap copy of exactly @len bytes, so that
 * valgrind (and ASan) catch a read past the end; the string literals'
 * NUL terminators would hide one.
 */
static char *dup_exact(const char *s, size_t len)
{
	char *p = malloc(len ? len : 1);

	assert_non_null(p);
	if (len)
		memcpy(p, s, len);
	return p;
}

/* ------------------------------------------------------------------------- */
/* The real files                                                             */
/* ------------------------------------------------------------------------- */

/* /proc/pressure/{memory,cpu,io} of the machine (kernel 6.18). */
static const char psi_memory[] =
	"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
	"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
static const char psi_cpu[] =
	"some avg10=0.54 avg60=0.37 avg300=13.41 total=3807059824\n"
	"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
static const char psi_io[] =
	"some avg10=0.04 avg60=0.60 avg300=0.31 total=70215732\n"
	"full avg10=0.03 avg60=0.49 avg300=0.24 total=28884527\n";

/* /proc/self/cgroup: v1 hierarchies, and the v2 line of "unified". */
static const char proc_cgroup[] =
	"9:name=systemd:/\n"
	"8:pids:/\n"
	"7:blkio:/\n"
	"6:freezer:/\n"
	"5:devices:/\n"
	"4:memory:/process_api/7517bf9661cf9ceae3c87c7f7bebbe77\n"
	"3:cpuset:/\n"
	"2:cpuacct:/\n"
	"1:cpu:/\n"
	"0::/\n";

/* /proc/self/mountinfo: no optional fields on this machine. */
static const char mountinfo[] =
	"22 27 0:21 / /proc rw,relatime - proc proc rw\n"
	"23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n"
	"24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334192k,nr_inodes=3083548,mode=755\n"
	"25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683584k\n"
	"26 24 0:24 / /dev/pts rw,relatime - devpts devpts rw,mode=600,ptmxmode=000\n"
	"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534\n"
	"28 27 0:25 / /mnt/sandboxing/model_tools_env/v1/python ro,nosuid,nodev,relatime - tmpfs model_tools_unavailable ro,size=4k,mode=755\n"
	"29 26 0:26 / /dev/pts rw,relatime - devpts devpts rw,mode=600,ptmxmode=000\n"
	"30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683584k\n"
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
	"34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
	"37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
	"38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
	"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

/*
 * A systemd host's mountinfo (pure v2): propagation fields, one to three
 * of them, and "memory_recursiveprot", which is not "memory".
 */
static const char mountinfo_v2_host[] =
	"24 29 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
	"25 29 0:23 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	"29 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
	"30 24 0:6 / /sys/kernel/security rw,nosuid,nodev,noexec,relatime shared:8 master:1 propagate_from:1 - securityfs securityfs rw\n"
	"34 24 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
	"36 24 0:30 / /sys/fs/bpf rw,nosuid,nodev,noexec,relatime unbindable - bpf bpf rw,mode=700\n";

/* /proc/self/statm */
static const char statm[] = "765 415 387 5 0 123 0\n";

/* /sys/fs/cgroup/memory/memory.stat (v1) of the machine. */
static const char v1_memory_stat[] =
	"cache 9801728\n"
	"rss 3960832\n"
	"rss_huge 0\n"
	"shmem 9580544\n"
	"mapped_file 8110080\n"
	"dirty 53248\n"
	"writeback 0\n"
	"workingset_refault_anon 0\n"
	"workingset_refault_file 1461\n"
	"swap 0\n"
	"swapcached 0\n"
	"pgpgin 39794\n"
	"pgpgout 36434\n"
	"pgfault 63625\n"
	"pgmajfault 0\n"
	"inactive_anon 0\n"
	"active_anon 1531904\n"
	"inactive_file 0\n"
	"active_file 221184\n"
	"unevictable 12009472\n"
	"hierarchical_memory_limit 9223372036854771712\n"
	"hierarchical_memsw_limit 9223372036854771712\n"
	"total_cache 54484992\n"
	"total_rss 7823360\n"
	"total_rss_huge 0\n"
	"total_shmem 9580544\n"
	"total_mapped_file 11481088\n"
	"total_dirty 618496\n"
	"total_writeback 0\n"
	"total_workingset_refault_anon 0\n"
	"total_workingset_refault_file 808182\n"
	"total_swap 0\n"
	"total_swapcached 0\n"
	"total_pgpgin 128992263\n"
	"total_pgpgout 128977988\n"
	"total_pgfault 134798356\n"
	"total_pgmajfault 11852\n"
	"total_inactive_anon 3641344\n"
	"total_active_anon 1556480\n"
	"total_inactive_file 22929408\n"
	"total_active_file 21975040\n"
	"total_unevictable 12009472\n";

/* v2 memory.stat as a 6.x kernel writes it (only "key value" lines). */
static const char v2_memory_stat[] =
	"anon 1069056\n"
	"file 10547200\n"
	"kernel 1462272\n"
	"kernel_stack 32768\n"
	"pagetables 118784\n"
	"sec_pagetables 0\n"
	"percpu 0\n"
	"sock 0\n"
	"vmalloc 0\n"
	"shmem 0\n"
	"zswap 0\n"
	"zswapped 0\n"
	"file_mapped 7659520\n"
	"file_dirty 0\n"
	"file_writeback 0\n"
	"swapcached 0\n"
	"anon_thp 0\n"
	"file_thp 0\n"
	"shmem_thp 0\n"
	"inactive_anon 1060864\n"
	"active_anon 8192\n"
	"inactive_file 2912256\n"
	"active_file 7634944\n"
	"unevictable 0\n"
	"slab_reclaimable 1013216\n"
	"slab_unreclaimable 224816\n"
	"slab 1238032\n"
	"workingset_refault_anon 0\n"
	"workingset_refault_file 0\n"
	"workingset_activate_anon 0\n"
	"workingset_activate_file 0\n"
	"workingset_restore_anon 0\n"
	"workingset_restore_file 0\n"
	"workingset_nodereclaim 0\n"
	"pgscan 0\n"
	"pgsteal 0\n"
	"pgscan_kswapd 0\n"
	"pgscan_direct 0\n"
	"pgsteal_kswapd 0\n"
	"pgsteal_direct 0\n"
	"pgfault 8764\n"
	"pgmajfault 186\n"
	"pgrefill 0\n"
	"pgactivate 1869\n"
	"pgdeactivate 0\n"
	"pglazyfree 0\n"
	"pglazyfreed 0\n"
	"zswpin 0\n"
	"zswpout 0\n"
	"thp_fault_alloc 0\n"
	"thp_collapse_alloc 0\n";

static const char v2_memory_events[] =
	"low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n";

/* ------------------------------------------------------------------------- */
/* Wrappers: a call on an exact-size copy, outputs checked on failure         */
/* ------------------------------------------------------------------------- */

static int psi(const char *s, size_t len, struct rcl__psi *out)
{
	char *b = dup_exact(s, len);
	struct rcl__psi tmp;
	int rc;

	memset(&tmp, CANARY, sizeof(tmp));
	rc = rcl__psi_parse(b, len, &tmp);
	free(b);
	if (rc)
		assert_true(untouched(&tmp, sizeof(tmp)));
	else
		*out = tmp;
	return rc;
}

static int trig(const char *s, size_t len, bool *full, uint64_t *stall,
		uint64_t *win)
{
	char *b = dup_exact(s, len);
	struct {
		bool f;
		uint64_t s, w;
	} t;
	int rc;

	memset(&t, CANARY, sizeof(t));
	rc = rcl__psi_trigger_parse(b, len, &t.f, &t.s, &t.w);
	free(b);
	if (rc) {
		assert_true(untouched(&t.f, sizeof(t.f)));
		assert_true(untouched(&t.s, sizeof(t.s)));
		assert_true(untouched(&t.w, sizeof(t.w)));
	} else {
		*full = t.f;
		*stall = t.s;
		*win = t.w;
	}
	return rc;
}

static int cg_u64(const char *s, size_t len, uint64_t *out)
{
	char *b = dup_exact(s, len);
	uint64_t v;
	int rc;

	memset(&v, CANARY, sizeof(v));
	rc = rcl__cg_parse_u64(b, len, &v);
	free(b);
	if (rc)
		assert_true(untouched(&v, sizeof(v)));
	else
		*out = v;
	return rc;
}

static int keyed(const char *s, size_t len, const char *key, uint64_t *out)
{
	char *b = dup_exact(s, len);
	uint64_t v;
	int rc;

	memset(&v, CANARY, sizeof(v));
	rc = rcl__cg_parse_keyed(b, len, key, &v);
	free(b);
	if (rc)
		assert_true(untouched(&v, sizeof(v)));
	else
		*out = v;
	return rc;
}

static int statm_rss(const char *s, size_t len, uint64_t *out)
{
	char *b = dup_exact(s, len);
	uint64_t v;
	int rc;

	memset(&v, CANARY, sizeof(v));
	rc = rcl__statm_parse(b, len, &v);
	free(b);
	if (rc)
		assert_true(untouched(&v, sizeof(v)));
	else
		*out = v;
	return rc;
}

#define PATHSZ 256

/* @v2 / @v1 NULL: not wanted; else PATHSZ buffers, @v2size / @v1size used. */
static int proc_cg(const char *s, size_t len, char *v2, size_t v2size,
		   char *v1, size_t v1size)
{
	char *b = dup_exact(s, len);
	char t2[PATHSZ], t1[PATHSZ];
	int rc;

	assert_true(v2size <= PATHSZ && v1size <= PATHSZ);
	memset(t2, CANARY, sizeof(t2));
	memset(t1, CANARY, sizeof(t1));
	rc = rcl__proc_cgroup_parse(b, len, v2 ? t2 : NULL, v2size,
				    v1 ? t1 : NULL, v1size);
	free(b);
	if (rc < 0) {
		assert_true(untouched(t2, sizeof(t2)));
		assert_true(untouched(t1, sizeof(t1)));
		return rc;
	}
	assert_true(rc <= 3);
	if (v2 && (rc & 1)) {
		assert_non_null(memchr(t2, '\0', v2size));
		strcpy(v2, t2);
	} else {
		assert_true(untouched(t2, sizeof(t2)));
	}
	if (v1 && (rc & 2)) {
		assert_non_null(memchr(t1, '\0', v1size));
		strcpy(v1, t1);
	} else {
		assert_true(untouched(t1, sizeof(t1)));
	}
	return rc;
}

static int mi(const char *s, size_t len, unsigned version, char *mnt,
	      size_t mntsize, char *root, size_t rootsize)
{
	char *b = dup_exact(s, len);
	char tm[PATHSZ], tr[PATHSZ];
	int rc;

	assert_true(mntsize <= PATHSZ && rootsize <= PATHSZ);
	memset(tm, CANARY, sizeof(tm));
	memset(tr, CANARY, sizeof(tr));
	rc = rcl__mountinfo_find(b, len, version, tm, mntsize, tr, rootsize);
	free(b);
	if (rc) {
		assert_true(untouched(tm, sizeof(tm)));
		assert_true(untouched(tr, sizeof(tr)));
		return rc;
	}
	assert_non_null(memchr(tm, '\0', mntsize));
	assert_non_null(memchr(tr, '\0', rootsize));
	strcpy(mnt, tm);
	strcpy(root, tr);
	return 0;
}

static int cgdir(const char *mnt, const char *root, const char *path,
		 char *out, size_t outsize)
{
	char t[PATHSZ];
	int rc;

	assert_true(outsize <= PATHSZ);
	memset(t, CANARY, sizeof(t));
	rc = rcl__cgroup_dir(mnt, root, path, t, outsize);
	if (rc) {
		assert_true(untouched(t, sizeof(t)));
		return rc;
	}
	assert_non_null(memchr(t, '\0', outsize));
	strcpy(out, t);
	return 0;
}

#define B64SZ 64

/*
 * Decodes into a B64SZ canary buffer with @outsize: nothing is written on
 * failure, nothing past the decoded length on success.
 */
static ssize_t b64(const char *s, size_t len, uint8_t *out, size_t outsize)
{
	char *b = dup_exact(s, len);
	uint8_t t[B64SZ];
	ssize_t rc;

	assert_true(outsize <= B64SZ);
	memset(t, CANARY, sizeof(t));
	rc = rcl__base64_decode(b, len, t, outsize);
	free(b);
	if (rc < 0) {
		assert_true(untouched(t, sizeof(t)));
		return rc;
	}
	assert_true((size_t)rc <= outsize);
	assert_true(untouched(t + rc, sizeof(t) - (size_t)rc));
	if (rc)
		memcpy(out, t, (size_t)rc);
	return rc;
}

/* ------------------------------------------------------------------------- */
/* PSI files                                                                  */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_psi_real_files(void **state)
{
	struct rcl__psi p;

	(void)state;
	assert_int_equal(psi(S(psi_memory), &p), 0);
	assert_int_equal(p.some_total_us, 0);
	assert_int_equal(p.full_total_us, 0);
	assert_true(p.has_full);

	assert_int_equal(psi(S(psi_cpu), &p), 0);
	assert_int_equal(p.some_total_us, 3807059824u);
	assert_int_equal(p.full_total_us, 0);
	assert_true(p.has_full);

	assert_int_equal(psi(S(psi_io), &p), 0);
	assert_int_equal(p.some_total_us, 70215732);
	assert_int_equal(p.full_total_us, 28884527);
	assert_true(p.has_full);
}

static void test_pressure_parse_psi_some_only_and_order(void **state)
{
	struct rcl__psi p;

	(void)state;
	/* Older kernels' cpu file: no "full" line. */
	assert_int_equal(psi(S("some avg10=1.00 avg60=2.50 avg300=100.00 "
			       "total=42\n"), &p), 0);
	assert_int_equal(p.some_total_us, 42);
	assert_false(p.has_full);
	/* Lines in either order. */
	assert_int_equal(psi(S("full avg10=0.00 avg60=0.00 avg300=0.00 "
			       "total=7\n"
			       "some avg10=0.00 avg60=0.00 avg300=0.00 "
			       "total=9\n"), &p), 0);
	assert_int_equal(p.some_total_us, 9);
	assert_int_equal(p.full_total_us, 7);
	assert_true(p.has_full);
	/* The largest total, and leading zeros in an average. */
	assert_int_equal(psi(S("some avg10=000.5 avg60=0.00 avg300=0.00 "
			       "total=18446744073709551615\n"), &p), 0);
	assert_true(p.some_total_us == UINT64_MAX);
}

static void test_pressure_parse_psi_overflow(void **state)
{
	struct rcl__psi p;

	(void)state;
	assert_int_equal(psi(S("some avg10=0.00 avg60=0.00 avg300=0.00 "
			       "total=18446744073709551616\n"), &p), -ERANGE);
	assert_int_equal(psi(S("some avg10=0.00 avg60=0.00 avg300=0.00 "
			       "total=0\n"
			       "full avg10=0.00 avg60=0.00 avg300=0.00 "
			       "total=99999999999999999999999999\n"), &p),
			 -ERANGE);
	/* A shape error wins over an overflow. */
	assert_int_equal(psi(S("some avg10=0.00 avg60=0.00 avg300=0.00 "
			       "total=18446744073709551616\n"
			       "bogus\n"), &p), -EBADMSG);
	/* Huge averages are only checked for shape. */
	assert_int_equal(psi(S("some avg10=99999999999999999999999.0 "
			       "avg60=0.00 avg300=0.00 total=1\n"), &p), 0);
	assert_int_equal(p.some_total_us, 1);
}

static void test_pressure_parse_psi_errors(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		{ S("") },
		{ S("\n") },
		/* no "some" line */
		{ S("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") },
		/* a line twice */
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		    "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") },
		/* unknown line */
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
		    "half avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\n") },
		/* truncated */
		{ S("some avg10=0.00 avg60=") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=\n") },
		/* shapes of the averages */
		{ S("some avg10=0 avg60=0.00 avg300=0.00 total=0\n") },
		{ S("some avg10=.00 avg60=0.00 avg300=0.00 total=0\n") },
		{ S("some avg10=0. avg60=0.00 avg300=0.00 total=0\n") },
		{ S("some avg10=0,00 avg60=0.00 avg300=0.00 total=0\n") },
		{ S("some avg10=-1.00 avg60=0.00 avg300=0.00 total=0\n") },
		{ S("some avg60=0.00 avg10=0.00 avg300=0.00 total=0\n") },
		/* spacing, signs, bases, garbage */
		{ S("some  avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0 \n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\r\n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=+1\n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0x10\n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=1x\n") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00\n") },
		{ S("Some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") },
		/* NUL bytes are data, not an end */
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\0") },
		{ S("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\0\n") },
		{ S("some avg10=0.00\0avg60=0.00 avg300=0.00 total=1\n") },
	};
	struct rcl__psi p;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(psi(bad[i].s, bad[i].len, &p), -EBADMSG);
}

/* Every prefix: the first line alone is a valid file, the rest fail. */
static void test_pressure_parse_psi_prefixes(void **state)
{
	const char *files[] = { psi_memory, psi_cpu, psi_io };

	(void)state;
	for (size_t f = 0; f < 3; f++) {
		size_t len = strlen(files[f]);
		size_t first = (size_t)(strchr(files[f], '\n') - files[f]) + 1;

		for (size_t n = 0; n <= len; n++) {
			struct rcl__psi p;
			int rc = psi(files[f], n, &p);

			if (n == first) {
				assert_int_equal(rc, 0);
				assert_false(p.has_full);
			} else if (n == len) {
				assert_int_equal(rc, 0);
				assert_true(p.has_full);
			} else {
				assert_int_equal(rc, -EBADMSG);
			}
		}
	}
}

/* ------------------------------------------------------------------------- */
/* PSI triggers                                                               */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_trigger_forms(void **state)
{
	bool full;
	uint64_t s, w;

	(void)state;
	/* systemd's decoded $MEMORY_PRESSURE_WRITE: a NUL at the end. */
	assert_int_equal(trig(S("some 200000 2000000\0"), &full, &s, &w), 0);
	assert_false(full);
	assert_int_equal(s, 200000);
	assert_int_equal(w, 2000000);
	assert_int_equal(trig(S("some 200000 2000000\n"), &full, &s, &w), 0);
	assert_int_equal(trig(S("some 200000 2000000"), &full, &s, &w), 0);
	assert_int_equal(trig(S("some 200000 2000000\n\0\0"), &full, &s, &w),
			 0);
	assert_int_equal(trig(S("full 150000 1000000\n"), &full, &s, &w), 0);
	assert_true(full);
	assert_int_equal(s, 150000);
	assert_int_equal(w, 1000000);
	/* stall == window is allowed; so is the kernel's largest %u. */
	assert_int_equal(trig(S("some 5 5"), &full, &s, &w), 0);
	assert_int_equal(trig(S("some 1 4294967295"), &full, &s, &w), 0);
	assert_true(w == UINT32_MAX);
}

/*
 * The kernel reads a trigger with sscanf(buf, "some %u %u")
 * (psi_trigger_create()): a space in the format is any run of whitespace,
 * none included, and what follows the second number is never looked at.
 * So does the parser: a $MEMORY_PRESSURE_WRITE with text after the window
 * was refused, and the monitor polled against systemd's default threshold
 * instead of the one the kernel's trigger used.
 */
static void test_pressure_parse_trigger_as_the_kernel_reads_it(void **state)
{
	static const struct {
		const char *s;
		size_t len;
		bool full;
		uint64_t stall, window;
	} ok[] = {
		{ S("some 200000 2000000 \0"), false, 200000, 2000000 },
		{ S("some 200000 2000000\r\n"), false, 200000, 2000000 },
		{ S("some 200000 2000000\n\n"), false, 200000, 2000000 },
		{ S("some 200000 2000000\t\v\f"), false, 200000, 2000000 },
		{ S("some 200000 2000000 # 10 %\n\0"), false, 200000, 2000000 },
		{ S("some 200000 2000000 5"), false, 200000, 2000000 },
		{ S("some 200000 2000000x"), false, 200000, 2000000 },
		{ S("full 150000 1000000,500"), true, 150000, 1000000 },
		/* After the string's NUL the kernel sees nothing at all. */
		{ S("some 100 1000\0\n"), false, 100, 1000 },
		{ S("some 100 1000\0x"), false, 100, 1000 },
		/* Any run of whitespace where the format has a space. */
		{ S("some  100   1000"), false, 100, 1000 },
		{ S("some\t100\n1000"), false, 100, 1000 },
		{ S("some\r\v\f100 1000"), false, 100, 1000 },
		{ S("some\xa0" "100\xa0" "1000"), false, 100, 1000 },	/* lib/ctype.c */
		{ S("some100 1000"), false, 100, 1000 },		/* none */
		{ S("full00100 0001000"), true, 100, 1000 },
	};
	bool full;
	uint64_t s, w;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (trig(ok[i].s, ok[i].len, &full, &s, &w) != 0)
			fail_msg("\"%s\" refused", ok[i].s);
		assert_int_equal(full, ok[i].full);
		assert_int_equal(s, ok[i].stall);
		assert_int_equal(w, ok[i].window);
	}
}

static void test_pressure_parse_trigger_errors(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		{ S("") },
		{ S("\0") },
		{ S("\n") },
		{ S("some") },
		{ S("some ") },
		{ S("some 100") },
		{ S("some 100 ") },
		{ S("some 0 1000") },		/* stall 0 */
		{ S("some 100 0") },		/* window 0 */
		{ S("some 2000 1000") },	/* stall > window */
		{ S(" some 100 1000") },	/* the kind first, as in sscanf() */
		{ S("\nsome 100 1000") },
		{ S("some 100\0 1000") },	/* the kernel's string ends */
		{ S("some\0 100 1000") },
		{ S("some 100 x1000") },	/* the window missing */
		{ S("some 100,1000") },
		{ S("some 100 \n") },
		{ S("some -100 1000") },	/* %u: no sign */
		{ S("some 100 -1000") },
		{ S("some +100 1000") },
		{ S("some 100 +1000") },
		{ S("some 0x10 1000") },	/* base 10: "0", then no window */
		{ S("some 100 0x10") },		/* window 0 */
		{ S("some 0x64 1000") },
		{ S("some\x85" "100 1000") },	/* not the kernel's space */
		{ S("somex 100 1000") },
		{ S("SOME 100 1000") },
		{ S("none 100 1000") },
		{ S("Some 100 1000") },
		{ S("sum 100 1000") },
		/* Beyond the kernel's u32 (it would wrap: 4294967397 is 101). */
		{ S("some 100 4294967296") },
		{ S("some 101 4294967397") },
		{ S("some 4294967296 4294967296") },
		{ S("some 100 18446744073709551616") },	/* beyond 64 bits */
		{ S("some 99999999999999999999999 1") },
		{ S("some 1 18446744073709551615") },
	};
	bool full;
	uint64_t s, w;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (trig(bad[i].s, bad[i].len, &full, &s, &w) != -EINVAL)
			fail_msg("\"%s\" (%zu bytes) not refused", bad[i].s,
				 bad[i].len);
}

/*
 * Prefixes of systemd's value: only those that end inside or after the
 * window and keep stall <= window parse, and then to what they say.
 */
static void test_pressure_parse_trigger_prefixes(void **state)
{
	static const char t[] = "some 200000 2000000\0";
	size_t len = sizeof(t) - 1;

	(void)state;
	for (size_t n = 0; n <= len; n++) {
		bool full;
		uint64_t s, w, want = 0;
		int rc = trig(t, n, &full, &s, &w);

		/* "some 200000 " is 12 bytes; the window follows. */
		for (size_t i = 12; i < n && i < 19; i++)
			want = want * 10 + (uint64_t)(t[i] - '0');
		if (n >= 18) {
			assert_int_equal(rc, 0);
			assert_int_equal(s, 200000);
			assert_int_equal(w, want);
		} else {
			/* the window is missing or smaller than the stall */
			assert_int_equal(rc, -EINVAL);
		}
	}
}

/* ------------------------------------------------------------------------- */
/* Single-value cgroup files                                                  */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_cg_u64_values(void **state)
{
	uint64_t v;

	(void)state;
	/* v2 memory.current, memory.max, memory.high */
	assert_int_equal(cg_u64(S("123\n"), &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(cg_u64(S("123"), &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(cg_u64(S("max\n"), &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(cg_u64(S("max"), &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(cg_u64(S("0\n"), &v), 0);
	assert_int_equal(v, 0);
	/* v1 memory.usage_in_bytes, memory.limit_in_bytes of the machine */
	assert_int_equal(cg_u64(S("62193664\n"), &v), 0);
	assert_int_equal(v, 62193664);
	assert_int_equal(cg_u64(S("9223372036854771712\n"), &v), 0);
	assert_true(v == 9223372036854771712ull);
	assert_int_equal(cg_u64(S("18446744073709551615\n"), &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(cg_u64(S("007\n"), &v), 0);
	assert_int_equal(v, 7);
}

static void test_pressure_parse_cg_u64_errors(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		{ S("") }, { S("\n") }, { S("max\n\n") }, { S("12\n\n") },
		{ S("12 \n") }, { S(" 12\n") }, { S("-1\n") }, { S("+1\n") },
		{ S("0x10\n") }, { S("12\n3") }, { S("maxx\n") }, { S("ma") },
		{ S("m") }, { S("Max\n") }, { S("1\0") }, { S("\0" "1") },
		{ S("12\r\n") }, { S("1.5\n") }, { S("max 1\n") },
		{ S("18446744073709551616x\n") },	/* a shape error wins */
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cg_u64(bad[i].s, bad[i].len, &v), -EBADMSG);
	assert_int_equal(cg_u64(S("18446744073709551616\n"), &v), -ERANGE);
	assert_int_equal(cg_u64(S("99999999999999999999999999999999\n"), &v),
			 -ERANGE);
}

/* The newline is optional, so "12" of "123\n" is 12: the contract's own. */
static void test_pressure_parse_cg_u64_prefixes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(cg_u64("123\n", 0, &v), -EBADMSG);
	assert_int_equal(cg_u64("123\n", 1, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(cg_u64("123\n", 2, &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(cg_u64("max\n", 1, &v), -EBADMSG);
	assert_int_equal(cg_u64("max\n", 2, &v), -EBADMSG);
	assert_int_equal(cg_u64("max\n", 3, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(cg_u64(NULL, 0, &v), -EBADMSG);
}

/* ------------------------------------------------------------------------- */
/* Flat keyed files                                                           */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_keyed_v1_memory_stat(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(keyed(S(v1_memory_stat), "total_inactive_file", &v),
			 0);
	assert_int_equal(v, 22929408);
	assert_int_equal(keyed(S(v1_memory_stat), "inactive_file", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(keyed(S(v1_memory_stat), "cache", &v), 0);
	assert_int_equal(v, 9801728);
	assert_int_equal(keyed(S(v1_memory_stat), "total_unevictable", &v), 0);
	assert_int_equal(v, 12009472);
	assert_int_equal(keyed(S(v1_memory_stat), "hierarchical_memory_limit",
			       &v), 0);
	assert_true(v == 9223372036854771712ull);
	/* v1 has no "anon"; a key is the whole first field */
	assert_int_equal(keyed(S(v1_memory_stat), "anon", &v), -ENOENT);
	assert_int_equal(keyed(S(v1_memory_stat), "total_inactive", &v),
			 -ENOENT);
	assert_int_equal(keyed(S(v1_memory_stat), "total_inactive_file_", &v),
			 -ENOENT);
	assert_int_equal(keyed(S(v1_memory_stat), "", &v), -ENOENT);
	assert_int_equal(keyed(S(v1_memory_stat), "cache 9801728", &v),
			 -ENOENT);
}

static void test_pressure_parse_keyed_v2_files(void **state)
{
	static const char *events[] = {
		"low", "high", "max", "oom", "oom_kill", "oom_group_kill",
	};
	uint64_t v;

	(void)state;
	assert_int_equal(keyed(S(v2_memory_stat), "inactive_file", &v), 0);
	assert_int_equal(v, 2912256);
	assert_int_equal(keyed(S(v2_memory_stat), "anon", &v), 0);
	assert_int_equal(v, 1069056);
	assert_int_equal(keyed(S(v2_memory_stat), "file", &v), 0);
	assert_int_equal(v, 10547200);
	assert_int_equal(keyed(S(v2_memory_stat), "thp_collapse_alloc", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(keyed(S(v2_memory_stat), "total_inactive_file", &v),
			 -ENOENT);
	for (size_t i = 0; i < 6; i++) {
		v = 1;
		assert_int_equal(keyed(S(v2_memory_events), events[i], &v), 0);
		assert_int_equal(v, 0);
	}
	assert_int_equal(keyed(S("low 1\nhigh 22\nmax 333\noom 4\noom_kill 55\n"
				 "oom_group_kill 6\n"), "oom_kill", &v), 0);
	assert_int_equal(v, 55);
	assert_int_equal(keyed(S(v2_memory_events), "oom_killer", &v), -ENOENT);
	/* an empty file is well-formed and has no key */
	assert_int_equal(keyed(NULL, 0, "anon", &v), -ENOENT);
	/* the first line of a key counts */
	assert_int_equal(keyed(S("a 1\na 2\n"), "a", &v), 0);
	assert_int_equal(v, 1);
}

static void test_pressure_parse_keyed_overflow(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(keyed(S("anon 18446744073709551616\nfile 1\n"), "anon",
			       &v), -ERANGE);
	/* other lines' overflow is ignored */
	assert_int_equal(keyed(S("anon 18446744073709551616\nfile 1\n"), "file",
			       &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(keyed(S("anon 18446744073709551616\nfile 1\n"),
			       "shmem", &v), -ENOENT);
	assert_int_equal(keyed(S("anon 18446744073709551615\n"), "anon", &v),
			 0);
	assert_true(v == UINT64_MAX);
	/* a shape error anywhere wins */
	assert_int_equal(keyed(S("anon 18446744073709551616\nfile x\n"), "anon",
			       &v), -EBADMSG);
}

static void test_pressure_parse_keyed_errors(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		{ S("anon\n") },
		{ S("anon 1") },		/* cut short: no newline */
		{ S("anon \n") },
		{ S("anon  1\n") },
		{ S(" anon 1\n") },
		{ S(" 1\n") },			/* no key */
		{ S("anon 1\n 2\n") },
		{ S("anon 1 \n") },
		{ S("anon 1 2\n") },
		{ S("anon\t1\n") },
		{ S("anon -1\n") },
		{ S("anon +1\n") },
		{ S("anon 0x1\n") },
		{ S("anon 1\n\n") },		/* an empty line */
		{ S("\nanon 1\n") },
		{ S("anon 1\r\n") },
		{ S("an\0n 1\n") },		/* a NUL in the key */
		{ S("anon 1\0\n") },
		{ S("anon 1\n\0") },
		{ S("anon 1\nfile 2\ngarbage\n") },	/* after the key */
		{ S("garbage\nanon 1\n") },		/* before it */
		{ S("total=1 N0=1\n") },		/* memory.numa_stat */
		{ S("an\xc3\xa9n 1\n") },		/* not ASCII */
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(keyed(bad[i].s, bad[i].len, "anon", &v),
				 -EBADMSG);
}

/*
 * Every prefix of memory.events, for "oom_kill": a prefix that ends at a
 * line's end is well-formed (the key found once its line is in, -ENOENT
 * before); any other is cut inside a line, -EBADMSG.
 */
static void test_pressure_parse_keyed_prefixes(void **state)
{
	const char *f = v2_memory_events;
	size_t len = strlen(f);
	size_t key_end = (size_t)(strstr(f, "oom_kill 0\n") - f) + 11;

	(void)state;
	for (size_t n = 0; n <= len; n++) {
		uint64_t v;
		int rc = keyed(f, n, "oom_kill", &v);

		if (n && f[n - 1] != '\n')
			assert_int_equal(rc, -EBADMSG);
		else if (n < key_end)
			assert_int_equal(rc, -ENOENT);
		else
			assert_int_equal(rc, 0);
	}
	/* v1 memory.stat, for its last key */
	len = strlen(v1_memory_stat);
	for (size_t n = 0; n < len; n++) {
		uint64_t v;
		int rc = keyed(v1_memory_stat, n, "total_unevictable", &v);

		assert_int_equal(rc, n && v1_memory_stat[n - 1] != '\n' ?
				 -EBADMSG : -ENOENT);
	}
}

/* ------------------------------------------------------------------------- */
/* /proc/self/cgroup                                                          */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_proc_cgroup_real(void **state)
{
	static const char mem[] =
		"/process_api/7517bf9661cf9ceae3c87c7f7bebbe77";
	char v2[PATHSZ], v1[PATHSZ];

	(void)state;
	assert_int_equal(proc_cg(S(proc_cgroup), v2, PATHSZ, v1, PATHSZ), 3);
	assert_string_equal(v2, "/");
	assert_string_equal(v1, mem);
	/* either output may be unwanted: the mask is the same */
	assert_int_equal(proc_cg(S(proc_cgroup), NULL, 0, v1, PATHSZ), 3);
	assert_string_equal(v1, mem);
	assert_int_equal(proc_cg(S(proc_cgroup), v2, PATHSZ, NULL, 0), 3);
	assert_string_equal(v2, "/");
	assert_int_equal(proc_cg(S(proc_cgroup), NULL, 0, NULL, 0), 3);
}

static void test_pressure_parse_proc_cgroup_forms(void **state)
{
	char v2[PATHSZ], v1[PATHSZ];

	(void)state;
	/* a pure v2 system */
	assert_int_equal(proc_cg(S("0::/user.slice/user-1000.slice/"
				   "session-2.scope\n"), v2, PATHSZ, v1, PATHSZ),
			 1);
	assert_string_equal(v2, "/user.slice/user-1000.slice/session-2.scope");
	/* memory co-mounted with other controllers; look-alikes */
	assert_int_equal(proc_cg(S("5:cpu,memory,blkio:/a\n"), v2, PATHSZ, v1,
				 PATHSZ), 2);
	assert_string_equal(v1, "/a");
	assert_int_equal(proc_cg(S("5:memoryx:/a\n6:name=memory:/b\n"
				   "7:nomemory:/c\n"), v2, PATHSZ, v1, PATHSZ),
			 0);
	/* a name may hold ':' and spaces; the path is the rest of the line */
	assert_int_equal(proc_cg(S("0::/a:b c\n"), v2, PATHSZ, v1, PATHSZ), 1);
	assert_string_equal(v2, "/a:b c");
	/* the first memory line counts */
	assert_int_equal(proc_cg(S("4:memory:/x\n3:memory:/y\n"), v2, PATHSZ,
				 v1, PATHSZ), 2);
	assert_string_equal(v1, "/x");
	/* nothing in an empty file */
	assert_int_equal(proc_cg(NULL, 0, v2, PATHSZ, v1, PATHSZ), 0);
}

static void test_pressure_parse_proc_cgroup_too_long(void **state)
{
	static const char f[] = "4:memory:/abcd\n0::/xy\n";
	char v2[PATHSZ], v1[PATHSZ];

	(void)state;
	/* "/abcd" needs 6 bytes, "/xy" 4 */
	assert_int_equal(proc_cg(S(f), v2, 4, v1, 6), 3);
	assert_string_equal(v1, "/abcd");
	assert_string_equal(v2, "/xy");
	assert_int_equal(proc_cg(S(f), v2, 4, v1, 5), -ENAMETOOLONG);
	assert_int_equal(proc_cg(S(f), v2, 3, v1, 6), -ENAMETOOLONG);
	assert_int_equal(proc_cg(S(f), v2, 0, v1, 6), -ENAMETOOLONG);
	/* an unwanted output's size does not matter */
	assert_int_equal(proc_cg(S(f), NULL, 0, v1, 6), 3);
	/* nor does the size of an output whose line is absent */
	assert_int_equal(proc_cg(S("0::/xy\n"), v2, 4, v1, 0), 1);
}

static void test_pressure_parse_proc_cgroup_errors(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		{ S("0::/") },			/* cut short: no newline */
		{ S("\n") },
		{ S("x::/\n") },
		{ S(":memory:/\n") },
		{ S("-1::/\n") },
		{ S("0:/\n") },
		{ S("0::\n") },
		{ S("0::relative\n") },
		{ S("1::/\n") },		/* no controllers, not id 0 */
		{ S("4:,memory:/\n") },
		{ S("4:memory,:/\n") },
		{ S("4:cpu,,memory:/\n") },
		{ S("4:mem ory:/\n") },
		{ S("4:mem\tory:/\n") },
		{ S("0::/a\0b\n") },		/* a NUL in the path */
		{ S("4:mem\0ry:/\n") },
		{ S("0::/\n\n") },
		{ S("0::/\ngarbage\n") },
		{ S("0::/\n4:memory:/a") },
	};
	char v2[PATHSZ], v1[PATHSZ];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(proc_cg(bad[i].s, bad[i].len, v2, PATHSZ, v1,
					 PATHSZ), -EBADMSG);
}

/* Every prefix: whole lines give the mask of their lines, others fail. */
static void test_pressure_parse_proc_cgroup_prefixes(void **state)
{
	size_t len = strlen(proc_cgroup);
	size_t mem_end = (size_t)(strstr(proc_cgroup, "3:cpu") - proc_cgroup);

	(void)state;
	for (size_t n = 0; n <= len; n++) {
		char v2[PATHSZ], v1[PATHSZ];
		int rc = proc_cg(proc_cgroup, n, v2, PATHSZ, v1, PATHSZ);

		if (n && proc_cgroup[n - 1] != '\n')
			assert_int_equal(rc, -EBADMSG);
		else
			assert_int_equal(rc, (n >= mem_end ? 2 : 0) |
					 (n == len ? 1 : 0));
	}
}

/* ------------------------------------------------------------------------- */
/* /proc/self/mountinfo                                                       */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_mountinfo_real(void **state)
{
	char mnt[PATHSZ], root[PATHSZ];

	(void)state;
	assert_int_equal(mi(S(mountinfo), 2, mnt, PATHSZ, root, PATHSZ), 0);
	assert_string_equal(mnt, "/sys/fs/cgroup/unified");
	assert_string_equal(root, "/");
	assert_int_equal(mi(S(mountinfo), 1, mnt, PATHSZ, root, PATHSZ), 0);
	assert_string_equal(mnt, "/sys/fs/cgroup/memory");
	assert_string_equal(root, "/");
}

static void test_pressure_parse_mountinfo_optional_fields(void **state)
{
	char mnt[PATHSZ], root[PATHSZ];

	(void)state;
	assert_int_equal(mi(S(mountinfo_v2_host), 2, mnt, PATHSZ, root, PATHSZ),
			 0);
	assert_string_equal(mnt, "/sys/fs/cgroup");
	assert_string_equal(root, "/");
	/* "memory_recursiveprot" is no v1 memory hierarchy */
	assert_int_equal(mi(S(mountinfo_v2_host), 1, mnt, PATHSZ, root, PATHSZ),
			 -ENOENT);
	/* a container's view: a non-trivial root, three optional fields */
	assert_int_equal(mi(S("1234 1200 0:29 /docker/abc "
			      "/sys/fs/cgroup/memory "
			      "ro,nosuid,nodev,noexec,relatime shared:5 "
			      "master:15 propagate_from:15 - cgroup cgroup "
			      "rw,cpu,memory,blkio\n"),
			    1, mnt, PATHSZ, root, PATHSZ), 0);
	assert_string_equal(mnt, "/sys/fs/cgroup/memory");
	assert_string_equal(root, "/docker/abc");
	/* an empty source: two spaces in a row after the type */
	assert_int_equal(mi(S("40 31 0:38 / /cg rw - cgroup2  rw\n"), 2, mnt,
			    PATHSZ, root, PATHSZ), 0);
	assert_string_equal(mnt, "/cg");
	/* the first match wins */
	assert_int_equal(mi(S("1 0 0:1 / /a rw - cgroup2 none rw\n"
			      "2 0 0:2 / /b rw - cgroup2 none rw\n"), 2, mnt,
			    PATHSZ, root, PATHSZ), 0);
	assert_string_equal(mnt, "/a");
	/* "memory" only as a whole super option, only on type cgroup */
	assert_int_equal(mi(S("1 0 0:1 / /a rw - cgroup none rw,nomemory\n"
			      "2 0 0:2 / /b rw - cgroup2 none rw,memory\n"
			      "3 0 0:3 / /c rw,memory - tmpfs none rw\n"
			      "4 0 0:4 / /d rw - cgroup memory rw\n"), 1, mnt,
			    PATHSZ, root, PATHSZ), -ENOENT);
	assert_int_equal(mi(S("4 0 0:4 / /d rw - cgroup none memory\n"), 1, mnt,
			    PATHSZ, root, PATHSZ), 0);
	assert_string_equal(mnt, "/d");
}

static void test_pressure_parse_mountinfo_escapes(void **state)
{
	char mnt[PATHSZ], root[PATHSZ];

	(void)state;
	assert_int_equal(mi(S("41 31 0:38 /a\\040b "
			      "/mnt/my\\040cgroup\\011x\\134y "
			      "rw - cgroup2 cgroup2 rw\n"), 2, mnt, PATHSZ,
			    root, PATHSZ), 0);
	assert_string_equal(mnt, "/mnt/my cgroup\tx\\y");
	assert_string_equal(root, "/a b");
	assert_int_equal(mi(S("41 31 0:38 / /m\\012\\377 rw - cgroup2 x "
			      "rw\n"), 2, mnt, PATHSZ, root, PATHSZ), 0);
	assert_string_equal(mnt, "/m\n\377");
	/* the size check is on the decoded length: "/ a" is 3 bytes */
	assert_int_equal(mi(S("41 31 0:38 / /\\040a rw - cgroup2 x rw\n"), 2,
			    mnt, 4, root, 2), 0);
	assert_string_equal(mnt, "/ a");
	assert_int_equal(mi(S("41 31 0:38 / /\\040a rw - cgroup2 x rw\n"), 2,
			    mnt, 3, root, 2), -ENAMETOOLONG);
}

static void test_pressure_parse_mountinfo_errors(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		/* no " - " separator, and fields around it */
		{ S("41 31 0:38 / /cg rw cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /cg rw -cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /cg rw - cgroup2 cgroup2\n") },
		{ S("41 31 0:38 / /cg rw - cgroup2 cgroup2 \n") },
		{ S("41 31 0:38 / /cg rw - cgroup2\n") },
		{ S("41 31 0:38 / /cg rw -\n") },
		{ S("41 31 0:38 / /cg - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 /  /cg rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /cg rw  - cgroup2 cgroup2 rw\n") },
		{ S(" - cgroup2 cgroup2 rw\n") },
		{ S("\n") },
		/* the fixed fields' shapes */
		{ S("x 31 0:38 / /cg rw - cgroup2 cgroup2 rw\n") },
		{ S("41 3y 0:38 / /cg rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0-38 / /cg rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 :38 / /cg rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0: / /cg rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38x / /cg rw - cgroup2 cgroup2 rw\n") },
		/* cut short: no newline at the end */
		{ S("41 31 0:38 / /cg rw - cgroup2 cgroup2 rw") },
		/* a bad line after the match */
		{ S("41 31 0:38 / /cg rw - cgroup2 cgroup2 rw\nbogus\n") },
		/* the matched line's root and mount point: escapes, absolute */
		{ S("41 31 0:38 / /c\\04g rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /c\\400 rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /c\\401 rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /c\\777 rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /c\\08x rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /c\\000 rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /c\\ rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 /\\x20 /cg rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / /c\0g rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 / cg rw - cgroup2 cgroup2 rw\n") },
		{ S("41 31 0:38 net:[1] /cg rw - cgroup2 cgroup2 rw\n") },
	};
	char mnt[PATHSZ], root[PATHSZ];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(mi(bad[i].s, bad[i].len, 2, mnt, PATHSZ, root,
				    PATHSZ), -EBADMSG);
	/*
	 * Another mount's escapes and paths are not looked at, not even a
	 * later match's (fuzz/crashes/pressure-mountinfo-later-match-relative)
	 */
	assert_int_equal(mi(S("1 0 0:1 / /x\\9 rw - tmpfs t rw\n"
			      "2 0 0:2 / /cg rw - cgroup2 c rw\n"), 2, mnt,
			    PATHSZ, root, PATHSZ), 0);
	assert_int_equal(mi(S("2 0 0:2 / /cg rw - cgroup2 c rw\n"
			      "3 0 0:3 x y\\9 rw - cgroup2 c rw\n"), 2, mnt,
			    PATHSZ, root, PATHSZ), 0);
	assert_string_equal(mnt, "/cg");
	/* -ENOENT, -EINVAL, -ENAMETOOLONG */
	assert_int_equal(mi(NULL, 0, 2, mnt, PATHSZ, root, PATHSZ), -ENOENT);
	assert_int_equal(mi(S(mountinfo_v2_host), 2, mnt, 15, root, 2), 0);
	assert_int_equal(mi(S(mountinfo_v2_host), 2, mnt, 14, root, 2),
			 -ENAMETOOLONG);
	assert_int_equal(mi(S(mountinfo_v2_host), 2, mnt, 15, root, 1),
			 -ENAMETOOLONG);
	assert_int_equal(mi(S(mountinfo_v2_host), 2, mnt, 0, root, 0),
			 -ENAMETOOLONG);
	for (unsigned v = 0; v < 8; v++)
		if (v != 1 && v != 2)
			assert_int_equal(mi(S(mountinfo), v, mnt, PATHSZ, root,
					    PATHSZ), -EINVAL);
	/* -EINVAL before the content is looked at */
	assert_int_equal(mi(S("garbage"), 3, mnt, PATHSZ, root, PATHSZ),
			 -EINVAL);
}

/* Every prefix: a complete line count gives what those lines hold. */
static void test_pressure_parse_mountinfo_prefixes(void **state)
{
	size_t len = strlen(mountinfo);
	size_t mem_end = (size_t)(strstr(mountinfo, "36 31") - mountinfo);

	(void)state;
	for (size_t n = 0; n <= len; n++) {
		char mnt[PATHSZ], root[PATHSZ];
		int v1 = mi(mountinfo, n, 1, mnt, PATHSZ, root, PATHSZ);
		int v2 = mi(mountinfo, n, 2, mnt, PATHSZ, root, PATHSZ);

		if (n && mountinfo[n - 1] != '\n') {
			assert_int_equal(v1, -EBADMSG);
			assert_int_equal(v2, -EBADMSG);
		} else {
			assert_int_equal(v1, n >= mem_end ? 0 : -ENOENT);
			assert_int_equal(v2, n == len ? 0 : -ENOENT);
		}
	}
}

/* ------------------------------------------------------------------------- */
/* The cgroup directory                                                       */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_cgroup_dir_root(void **state)
{
	char out[PATHSZ];

	(void)state;
	assert_int_equal(cgdir("/sys/fs/cgroup/memory", "/",
			       "/process_api/7517bf9661cf9ceae3c87c7f7bebbe77",
			       out, PATHSZ), 0);
	assert_string_equal(out, "/sys/fs/cgroup/memory/process_api/"
			    "7517bf9661cf9ceae3c87c7f7bebbe77");
	assert_int_equal(cgdir("/sys/fs/cgroup/unified", "/", "/", out, PATHSZ),
			 0);
	assert_string_equal(out, "/sys/fs/cgroup/unified");
	/* mounted at "/" (a container's cgroup namespace at its root) */
	assert_int_equal(cgdir("/", "/", "/a/b", out, PATHSZ), 0);
	assert_string_equal(out, "/a/b");
	assert_int_equal(cgdir("/", "/", "/", out, PATHSZ), 0);
	assert_string_equal(out, "/");
	/* a slash at the end of the mount point is not doubled */
	assert_int_equal(cgdir("/cg/", "/", "/a", out, PATHSZ), 0);
	assert_string_equal(out, "/cg/a");
}

static void test_pressure_parse_cgroup_dir_deep_root(void **state)
{
	char out[PATHSZ];

	(void)state;
	assert_int_equal(cgdir("/sys/fs/cgroup/memory", "/docker/abc",
			       "/docker/abc", out, PATHSZ), 0);
	assert_string_equal(out, "/sys/fs/cgroup/memory");
	assert_int_equal(cgdir("/sys/fs/cgroup/memory", "/docker/abc",
			       "/docker/abc/", out, PATHSZ), 0);
	assert_string_equal(out, "/sys/fs/cgroup/memory");
	assert_int_equal(cgdir("/sys/fs/cgroup/memory", "/docker/abc",
			       "/docker/abc/sub/leaf", out, PATHSZ), 0);
	assert_string_equal(out, "/sys/fs/cgroup/memory/sub/leaf");
	assert_int_equal(cgdir("/m", "/docker/abc/", "/docker/abc/s", out,
			       PATHSZ), 0);
	assert_string_equal(out, "/m/s");
	/* a root outside the namespace's ("/.." as the kernel shows it) */
	assert_int_equal(cgdir("/m", "/..", "/../x", out, PATHSZ), 0);
	assert_string_equal(out, "/m/x");
}

static void test_pressure_parse_cgroup_dir_outside(void **state)
{
	char out[PATHSZ];

	(void)state;
	/* outside the mount's root: another namespace's view */
	assert_int_equal(cgdir("/m", "/docker/abc", "/docker/abcd", out,
			       PATHSZ), -ENOENT);
	assert_int_equal(cgdir("/m", "/docker/abc", "/docker", out, PATHSZ),
			 -ENOENT);
	assert_int_equal(cgdir("/m", "/docker/abc", "/other/abc", out, PATHSZ),
			 -ENOENT);
	assert_int_equal(cgdir("/m", "/docker/abc", "/", out, PATHSZ), -ENOENT);
	/* a path that climbs out */
	assert_int_equal(cgdir("/m", "/", "/..", out, PATHSZ), -ENOENT);
	assert_int_equal(cgdir("/m", "/", "/../../x", out, PATHSZ), -ENOENT);
	assert_int_equal(cgdir("/m", "/a", "/a/../b", out, PATHSZ), -ENOENT);
	assert_int_equal(cgdir("/m", "/", "/a/./b", out, PATHSZ), -ENOENT);
	assert_int_equal(cgdir("/m", "/", "/a/..", out, PATHSZ), -ENOENT);
	/* not absolute */
	assert_int_equal(cgdir("/m", "/", "a", out, PATHSZ), -ENOENT);
	assert_int_equal(cgdir("/m", "/", "", out, PATHSZ), -ENOENT);
	assert_int_equal(cgdir("/m", "a", "/a", out, PATHSZ), -ENOENT);
	assert_int_equal(cgdir("m", "/", "/a", out, PATHSZ), -ENOENT);
	assert_int_equal(cgdir("", "/", "/a", out, PATHSZ), -ENOENT);
	/* names that only look like dots are names */
	assert_int_equal(cgdir("/m", "/", "/...", out, PATHSZ), 0);
	assert_string_equal(out, "/m/...");
	assert_int_equal(cgdir("/m", "/", "/.a/b.", out, PATHSZ), 0);
	assert_string_equal(out, "/m/.a/b.");
}

static void test_pressure_parse_cgroup_dir_sizes(void **state)
{
	char out[PATHSZ];
	char buf[32] = "/sys/fs/cgroup";

	(void)state;
	/* "/m/abc" is 6 bytes and its NUL */
	assert_int_equal(cgdir("/m", "/", "/abc", out, 7), 0);
	assert_string_equal(out, "/m/abc");
	assert_int_equal(cgdir("/m", "/", "/abc", out, 6), -ENAMETOOLONG);
	assert_int_equal(cgdir("/m", "/", "/abc", out, 0), -ENAMETOOLONG);
	assert_int_equal(cgdir("/m", "/", "/", out, 3), 0);
	assert_int_equal(cgdir("/m", "/", "/", out, 2), -ENAMETOOLONG);
	/* built in place in the mount point's buffer */
	assert_int_equal(rcl__cgroup_dir(buf, "/", "/a/b", buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "/sys/fs/cgroup/a/b");
}

/* ------------------------------------------------------------------------- */
/* /proc/self/statm                                                           */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_statm(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		{ S("") }, { S("\n") }, { S("765\n") }, { S("765 415") },
		{ S("765  415\n") }, { S("765 415 \n") }, { S(" 765 415\n") },
		{ S("a b\n") }, { S("765 415\n\n") }, { S("-1 2\n") },
		{ S("765 +415\n") }, { S("765\t415\n") }, { S("765 415\0\n") },
		{ S("765 415\n\0") }, { S("765 415 x\n") },
		{ S("765 415\r\n") },
		{ S("99999999999999999999999 415 x\n") },
	};
	uint64_t rss;

	(void)state;
	assert_int_equal(statm_rss(S(statm), &rss), 0);
	assert_int_equal(rss, 415);
	assert_int_equal(statm_rss(S("1 2\n"), &rss), 0);
	assert_int_equal(rss, 2);
	assert_int_equal(statm_rss(S("1 18446744073709551615 3 4 5 6 7\n"),
				   &rss), 0);
	assert_true(rss == UINT64_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(statm_rss(bad[i].s, bad[i].len, &rss),
				 -EBADMSG);
	assert_int_equal(statm_rss(S("1 18446744073709551616 3\n"), &rss),
			 -ERANGE);
	/* other fields' overflow is ignored, as in a keyed file */
	assert_int_equal(statm_rss(S("99999999999999999999999 415 0\n"), &rss),
			 0);
	assert_int_equal(rss, 415);
	/* every prefix of the real file is cut short */
	for (size_t n = 0; n < sizeof(statm) - 1; n++)
		assert_int_equal(statm_rss(statm, n, &rss), -EBADMSG);
}

/* ------------------------------------------------------------------------- */
/* base64                                                                     */
/* ------------------------------------------------------------------------- */

static void test_pressure_parse_base64_systemd(void **state)
{
	/* printf 'some 200000 2000000\0' | base64 */
	static const char env[] = "c29tZSAyMDAwMDAgMjAwMDAwMAA=";
	uint8_t out[B64SZ];
	bool full;
	uint64_t s, w;

	(void)state;
	assert_int_equal(b64(S(env), out, B64SZ), 20);
	assert_memory_equal(out, "some 200000 2000000\0", 20);
	assert_int_equal(trig((const char *)out, 20, &full, &s, &w), 0);
	assert_false(full);
	assert_int_equal(s, 200000);
	assert_int_equal(w, 2000000);
	/* exactly fits; one byte short */
	assert_int_equal(b64(S(env), out, 20), 20);
	assert_int_equal(b64(S(env), out, 19), -E2BIG);
	assert_int_equal(b64(S(env), out, 0), -E2BIG);
	/* unpadded, and with the newline of an echo */
	assert_int_equal(b64(S("c29tZSAyMDAwMDAgMjAwMDAwMAA"), out, B64SZ), 20);
	assert_memory_equal(out, "some 200000 2000000\0", 20);
	assert_int_equal(b64(S("c29tZSAyMDAwMDAgMjAwMDAwMAA=\n"), out, B64SZ),
			 20);
}

static void test_pressure_parse_base64_vectors(void **state)
{
	/* RFC 4648 section 10, padded and not */
	static const struct {
		const char *in, *out;
	} v[] = {
		{ "", "" }, { "Zg==", "f" }, { "Zm8=", "fo" },
		{ "Zm9v", "foo" },
		{ "Zm9vYg==", "foob" }, { "Zm9vYmE=", "fooba" },
		{ "Zm9vYmFy", "foobar" }, { "Zg", "f" }, { "Zm8", "fo" },
		{ "Zm9vYg", "foob" }, { "Zm9vYmE", "fooba" }, { "Zg==\n", "f" },
		{ "Zm9v\n", "foo" }, { "\n", "" },
	};
	uint8_t out[B64SZ];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t n = strlen(v[i].out);

		assert_int_equal(b64(v[i].in, strlen(v[i].in), out, B64SZ),
				 (ssize_t)n);
		assert_memory_equal(out, v[i].out, n);
		/* exactly its size suffices */
		assert_int_equal(b64(v[i].in, strlen(v[i].in), out, n),
				 (ssize_t)n);
	}
	assert_int_equal(b64(NULL, 0, NULL, 0), 0);
	/* NUL bytes out; the whole alphabet */
	assert_int_equal(b64(S("AA=="), out, B64SZ), 1);
	assert_int_equal(out[0], 0);
	assert_int_equal(b64(S("AAAA"), out, B64SZ), 3);
	assert_memory_equal(out, "\0\0\0", 3);
	assert_int_equal(b64(S("++//"), out, B64SZ), 3);
	assert_memory_equal(out, "\xfb\xef\xff", 3);
	assert_int_equal(b64(S("ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "abcdefghijklmnopqrstuvwxyz0123456789+/"),
			     out, B64SZ), 48);
	assert_int_equal(out[0], 0x00);
	assert_int_equal(out[1], 0x10);
	assert_int_equal(out[47], 0xbf);
}

static void test_pressure_parse_base64_errors(void **state)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = {
		/* not in the alphabet (the URL-safe one included) */
		{ S("Zm9v!") }, { S("Zm 9v") }, { S("Zm9v\r\n") },
		{ S("Zm9v\n\n") }, { S("\nZm9v") }, { S("Zm\0v") },
		{ S("Zm9v\0") }, { S("Zm-_") }, { S("Zm9v ") }, { S("Zm\t9v") },
		{ S("Zm9v\xc3") },
		/* padding */
		{ S("Zg=") }, { S("Zg===") }, { S("Z===") }, { S("====") },
		{ S("=") }, { S("==") }, { S("Zg==Zg==") }, { S("Zm9=v") },
		{ S("=Zm9") }, { S("Zm=9") }, { S("Zm9v=") }, { S("Zm9v==") },
		{ S("Zg==\n\n") }, { S("Zg=\n=") },
		/* a length of 1 mod 4 */
		{ S("Z") }, { S("Zm9vY") }, { S("Zm9vY\n") },
		/* non-zero bits past the last byte */
		{ S("Zh==") }, { S("Zh") }, { S("Zm9=") }, { S("Zm9") },
		{ S("AB==") }, { S("AAB=") },
	};
	uint8_t out[B64SZ];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(b64(bad[i].s, bad[i].len, out, B64SZ),
				 -EINVAL);
	/* -EINVAL before -E2BIG: the input is looked at first */
	assert_int_equal(b64(S("Zm9v!"), out, 0), -EINVAL);
	assert_int_equal(b64(S("Zm9v"), out, 2), -E2BIG);
}

/*
 * Every prefix of systemd's value: a length of 1 mod 4 is never base64; a
 * prefix that ends in a whole quantum decodes to a prefix of the bytes;
 * one that ends inside one decodes likewise or is refused for its unused
 * bits.
 */
static void test_pressure_parse_base64_prefixes(void **state)
{
	static const char env[] = "c29tZSAyMDAwMDAgMjAwMDAwMAA=";
	static const char want[] = "some 200000 2000000\0";

	(void)state;
	for (size_t n = 0; n <= sizeof(env) - 1; n++) {
		uint8_t out[B64SZ];
		ssize_t rc = b64(env, n, out, B64SZ);

		if (n % 4 == 1) {
			assert_int_equal(rc, -EINVAL);
		} else if (n % 4 == 0) {
			assert_int_equal(rc, n == 28 ? 20 :
					 (ssize_t)(n / 4 * 3));
			assert_memory_equal(out, want, (size_t)rc);
		} else if (rc >= 0) {
			assert_int_equal(rc, (ssize_t)(n / 4 * 3 + n % 4 - 1));
			assert_memory_equal(out, want, (size_t)rc);
		} else {
			assert_int_equal(rc, -EINVAL);
		}
	}
}

/*
 * An empty input may come as NULL (len 0): nothing is read, and each
 * parser gives its answer for an empty file.
 */
static void test_pressure_parse_null_empty_input(void **state)
{
	struct rcl__psi p;
	uint64_t v = 7, s = 7, w = 7;
	bool full = false;
	char a[8] = "x", b[8] = "y";

	(void)state;
	assert_int_equal(rcl__psi_parse(NULL, 0, &p), -EBADMSG);
	assert_int_equal(rcl__psi_trigger_parse(NULL, 0, &full, &s, &w),
			 -EINVAL);
	assert_int_equal(rcl__cg_parse_u64(NULL, 0, &v), -EBADMSG);
	assert_int_equal(rcl__cg_parse_keyed(NULL, 0, "anon", &v), -ENOENT);
	assert_int_equal(rcl__proc_cgroup_parse(NULL, 0, a, sizeof(a), b,
						sizeof(b)), 0);
	assert_int_equal(rcl__mountinfo_find(NULL, 0, 2, a, sizeof(a), b,
					     sizeof(b)), -ENOENT);
	assert_int_equal(rcl__statm_parse(NULL, 0, &v), -EBADMSG);
	assert_int_equal(rcl__base64_decode(NULL, 0, NULL, 0), 0);
	assert_int_equal(v, 7);
	assert_int_equal(s, 7);
	assert_int_equal(w, 7);
	assert_string_equal(a, "x");
	assert_string_equal(b, "y");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pressure_parse_psi_real_files),
		cmocka_unit_test(test_pressure_parse_psi_some_only_and_order),
		cmocka_unit_test(test_pressure_parse_psi_overflow),
		cmocka_unit_test(test_pressure_parse_psi_errors),
		cmocka_unit_test(test_pressure_parse_psi_prefixes),
		cmocka_unit_test(test_pressure_parse_trigger_forms),
		cmocka_unit_test(test_pressure_parse_trigger_as_the_kernel_reads_it),
		cmocka_unit_test(test_pressure_parse_trigger_errors),
		cmocka_unit_test(test_pressure_parse_trigger_prefixes),
		cmocka_unit_test(test_pressure_parse_cg_u64_values),
		cmocka_unit_test(test_pressure_parse_cg_u64_errors),
		cmocka_unit_test(test_pressure_parse_cg_u64_prefixes),
		cmocka_unit_test(test_pressure_parse_keyed_v1_memory_stat),
		cmocka_unit_test(test_pressure_parse_keyed_v2_files),
		cmocka_unit_test(test_pressure_parse_keyed_overflow),
		cmocka_unit_test(test_pressure_parse_keyed_errors),
		cmocka_unit_test(test_pressure_parse_keyed_prefixes),
		cmocka_unit_test(test_pressure_parse_proc_cgroup_real),
		cmocka_unit_test(test_pressure_parse_proc_cgroup_forms),
		cmocka_unit_test(test_pressure_parse_proc_cgroup_too_long),
		cmocka_unit_test(test_pressure_parse_proc_cgroup_errors),
		cmocka_unit_test(test_pressure_parse_proc_cgroup_prefixes),
		cmocka_unit_test(test_pressure_parse_mountinfo_real),
		cmocka_unit_test(test_pressure_parse_mountinfo_optional_fields),
		cmocka_unit_test(test_pressure_parse_mountinfo_escapes),
		cmocka_unit_test(test_pressure_parse_mountinfo_errors),
		cmocka_unit_test(test_pressure_parse_mountinfo_prefixes),
		cmocka_unit_test(test_pressure_parse_cgroup_dir_root),
		cmocka_unit_test(test_pressure_parse_cgroup_dir_deep_root),
		cmocka_unit_test(test_pressure_parse_cgroup_dir_outside),
		cmocka_unit_test(test_pressure_parse_cgroup_dir_sizes),
		cmocka_unit_test(test_pressure_parse_statm),
		cmocka_unit_test(test_pressure_parse_base64_systemd),
		cmocka_unit_test(test_pressure_parse_base64_vectors),
		cmocka_unit_test(test_pressure_parse_base64_errors),
		cmocka_unit_test(test_pressure_parse_base64_prefixes),
		cmocka_unit_test(test_pressure_parse_null_empty_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
