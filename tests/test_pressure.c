/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the pressure monitor (<reclaim/pressure.h>), hermetic: no
 * real cgroup, no /proc/pressure, no root.  Every source is faked in a
 * temporary directory (mkdtemp()): cgroup v1 and v2 directories with files
 * in the kernel's formats, PSI files that are regular files (not on procfs,
 * so their triggers are never tried: mode psi-poll), a FIFO and a UNIX
 * stream socket for systemd's MEMORY_PRESSURE_WATCH protocol.
 *
 * Time is the fake clock's (rcl_fake_clock_new()), so rcl_pressure_dispatch()
 * does exactly what the test's time says is due, and outcomes are asserted
 * exactly: the budget of each action (MODERATE 7/8, SEVERE 3/4, CRITICAL 1/2
 * of the usage before it, never below the floor, base / 64 by default), the
 * growth of grow_pct of base per quiet interval, the container budget
 * (limit - (working set - own usage x bytes_per_unit)) x cgroup_pct / 100 /
 * bytes_per_unit, the rate limit's merges, the doubling back-off and the
 * trim hook's threshold and interval.  The domain is real: a cache of
 * objects of one weight on an lruvec, whose evict callback uncharges.  An
 * action sets the budget with rcl_domain_set_budget(), which reclaims
 * towards the high watermark (domain.h): so after an action that lowered
 * the budget under the usage, usage + high <= budget, with high computed
 * here from domain.h's formula; the exact usage is the reclaim's, so the
 * tests read it before each action and derive the next budget from it.
 *
 * The few tests that need the library thread or the real clock (the fd
 * becoming readable, -EDEADLK from the monitor's own thread, fork) use
 * bounded waits and never assert on elapsed time.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNIT_TESTING 1
#include <cmocka.h>

#include <reclaim/reclaim.h>

#include "test_util.h"
#include "../lib/pressure_internal.h"

#define MS RCL_NSEC_PER_MSEC
#define SEC RCL_NSEC_PER_SEC
/* The fake clock starts here: nothing may depend on time 0. */
#define T0 (1000 * SEC)

/* The standard cache: a budget of 100000 units, 900 objects of 100. */
#define BUDGET 100000u
#define W 100u
#define NOBJ 1000u
#define FILL 900u
#define FLOOR (BUDGET / 64)		/* the default floor: 1562 */

/* cgroup v1's "no limit" (PAGE_COUNTER_MAX pages of 4 KiB, page-aligned). */
#define V1_NO_LIMIT 9223372036854771712ull
#define MB 1000000ull

/* systemd's trigger as MEMORY_PRESSURE_WRITE: "some 200000 2000000\0". */
#define SD_WRITE "c29tZSAyMDAwMDAgMjAwMDAwMAA="
static const char sd_trigger[] = "some 200000 2000000";	/* + its NUL: 20 */

/* ------------------------------------------------------------------------- */
/* Allocators                                                                 */
/* ------------------------------------------------------------------------- */

/* cmocka's, so that a leak fails the test (single-threaded tests only). */
static void *t_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return test_malloc(size);
}

static void t_free(void *ctx, void *p)
{
	(void)ctx;
	test_free(p);
}

static const struct rcl_allocator test_allocator = { t_alloc, t_free, NULL };

/* ------------------------------------------------------------------------- */
/* Files: a temporary directory, atomic rewrites                              */
/* ------------------------------------------------------------------------- */

static void tmpdir_new(char *dir, size_t size)
{
	const char *base = getenv("TMPDIR");

	if (!base || base[0] != '/' || strlen(base) > 40)
		base = "/tmp";
	snprintf(dir, size, "%s/rcl-pressure-XXXXXX", base);
	assert_non_null(mkdtemp(dir));
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void tmpdir_rm(const char *dir)
{
	if (dir[0])
		assert_int_equal(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void path_of(char *out, size_t size, const char *dir, const char *name)
{
	int n = snprintf(out, size, "%s/%s", dir, name);

	assert_true(n > 0 && (size_t)n < size);
}

/*
 * Write @len bytes as @dir/@name, atomically (a temporary file renamed over
 * it): the monitor never reads half a rewrite.
 */
static void put_raw(const char *dir, const char *name, const void *buf,
		    size_t len)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	path_of(path, sizeof(path), dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	assert_int_equal(rename(tmp, path), 0);
}

/* Rewrite @dir/@name in place (truncate, write): its inode stays. */
static void put_in_place(const char *dir, const char *name, const void *buf,
			 size_t len)
{
	char path[PATH_MAX];
	int fd;

	path_of(path, sizeof(path), dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

__attribute__((format(printf, 3, 4))) static void
put_file(const char *dir, const char *name, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	put_raw(dir, name, buf, (size_t)n);
}

static void make_subdir(char *out, size_t size, const char *dir,
			const char *name)
{
	path_of(out, size, dir, name);
	assert_int_equal(mkdir(out, 0755), 0);
}

/* ------------------------------------------------------------------------- */
/* A cache of objects of one weight                                           */
/* ------------------------------------------------------------------------- */

struct tobj {
	struct rcl_lru_node lru;
	atomic_bool cached;
};

struct tcache {
	struct rcl_lruvec lv;
	struct rcl_domain *d;
	struct tobj *objs;
	unsigned n, next;
	uint32_t w;
	atomic_ulong evicted;
};

/* Called in every evict callback before the object goes (NULL: none). */
typedef void (*evict_hook_fn)(struct tcache *c);
static _Atomic(evict_hook_fn) evict_hook;

static enum rcl_evict_status tc_evict(struct rcl_lru_node *node,
				      struct rcl_evict_control *ctl)
{
	struct tobj *o = rcl_container_of(node, struct tobj, lru);
	struct tcache *c = ctl->priv;
	evict_hook_fn hook = atomic_load(&evict_hook);

	T_EQ(ctl->weight, c->w);
	T_CHECK(atomic_load(&o->cached));
	if (hook)
		hook(c);
	atomic_store(&o->cached, false);
	T_EQ(rcl_domain_uncharge(c->d, ctl->weight), 0);
	atomic_fetch_add(&c->evicted, 1);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops tc_ops = { .evict = tc_evict };

static void tc_init(struct tcache *c, struct rcl_domain *d, unsigned n,
		    uint32_t w)
{
	struct rcl_lruvec_config cfg = { .ops = &tc_ops, .priv = c };

	memset(c, 0, sizeof(*c));
	c->d = d;
	c->n = n;
	c->w = w;
	c->objs = calloc(n ? n : 1, sizeof(*c->objs));
	assert_non_null(c->objs);
	assert_int_equal(rcl_lruvec_init(&c->lv, &cfg), 0);
	assert_int_equal(rcl_domain_attach(d, &c->lv, 0), 0);
}

/* Charge and insert objects until @upto are inserted. */
static void tc_fill(struct tcache *c, unsigned upto)
{
	while (c->next < upto) {
		struct tobj *o = &c->objs[c->next];

		assert_int_equal(rcl_domain_charge(c->d, c->w, RCL_CTX_CAPABLE,
						   NULL), 0);
		rcl_lru_node_init(&o->lru);
		atomic_store(&o->cached, true);
		assert_int_equal(rcl_lruvec_add(&c->lv, &o->lru, RCL_LRU_FILE,
						c->w, RCL_LRU_ADD_NOBATCH), 0);
		c->next++;
	}
}

static uint64_t tc_cached_weight(struct tcache *c)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < c->next; i++)
		if (atomic_load(&c->objs[i].cached))
			sum += c->w;
	return sum;
}

static void tc_destroy(struct tcache *c)
{
	unsigned i;

	assert_int_equal(rcl_domain_usage(c->d), tc_cached_weight(c));
	for (i = 0; i < c->next; i++) {
		struct tobj *o = &c->objs[i];

		if (!atomic_load(&o->cached))
			continue;
		assert_int_equal(rcl_lruvec_del(&c->lv, &o->lru), 0);
		atomic_store(&o->cached, false);
		assert_int_equal(rcl_domain_uncharge(c->d, c->w), 0);
	}
	assert_int_equal(rcl_domain_detach(c->d, &c->lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&c->lv), 0);
	free(c->objs);
	c->objs = NULL;
}

/* ------------------------------------------------------------------------- */
/* The fixture: a fake clock, a domain with the cache, a monitor              */
/* ------------------------------------------------------------------------- */

struct fx {
	struct rcl_fake_clock *fc;
	struct rcl_domain *d;
	struct tcache c;
	struct rcl_pressure_config cfg;
	struct rcl_pressure *p;
	char tmp[PATH_MAX];
};

/*
 * A domain of @budget (strict, the real clock for the domain: set_budget's
 * reclaim does not wait) with a cache of NOBJ objects of W, @fill of them
 * charged; a monitor configuration on the fake clock at T0 with the
 * counting allocator.  The monitor itself is made by fx_monitor(), after
 * the test has adjusted f->cfg.
 */
static void fx_init(struct fx *f, uint64_t budget, unsigned fill)
{
	struct rcl_domain_config dc = { .budget = budget,
					.allocator = &test_allocator };

	memset(f, 0, sizeof(*f));
	atomic_store(&evict_hook, NULL);
	assert_int_equal(rcl_fake_clock_new(T0, &f->fc), 0);
	assert_int_equal(rcl_domain_new(&dc, &f->d), 0);
	tc_init(&f->c, f->d, NOBJ, W);
	tc_fill(&f->c, fill);
	f->cfg.domain = f->d;
	f->cfg.clock = rcl_fake_clock_clock(f->fc);
	f->cfg.allocator = &test_allocator;
	tmpdir_new(f->tmp, sizeof(f->tmp));
}

static void fx_monitor(struct fx *f)
{
	assert_int_equal(rcl_pressure_new(&f->cfg, &f->p), 0);
	assert_non_null(f->p);
}

static void fx_fini(struct fx *f)
{
	atomic_store(&evict_hook, NULL);
	assert_int_equal(rcl_pressure_free(f->p), 0);
	f->p = NULL;
	tc_destroy(&f->c);
	assert_int_equal(rcl_domain_free(f->d), 0);
	rcl_fake_clock_free(f->fc);
	tmpdir_rm(f->tmp);
}

/*
 * Two monitors of two domains, for the tests of a callback that calls into
 * another monitor: A is the fixture's (f.p on f.d and its cache f.c), B
 * watches a second domain db with its own filled cache cb; each has a
 * manual source.  Both caches share tc_evict(), so one evict_hook sees
 * both.
 */
struct fx2 {
	struct fx f;
	struct rcl_domain *db;
	struct tcache cb;
	struct rcl_pressure *b;
	int src_a, src_b;
};

static void fx2_init(struct fx2 *t)
{
	struct rcl_domain_config dc = { .budget = BUDGET,
					.allocator = &test_allocator };
	struct rcl_pressure_config pc;

	fx_init(&t->f, BUDGET, FILL);
	t->f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	fx_monitor(&t->f);
	t->src_a = rcl_pressure_add_manual(t->f.p);
	assert_int_equal(rcl_domain_new(&dc, &t->db), 0);
	tc_init(&t->cb, t->db, NOBJ, W);
	tc_fill(&t->cb, FILL);
	pc = t->f.cfg;
	pc.domain = t->db;
	assert_int_equal(rcl_pressure_new(&pc, &t->b), 0);
	t->src_b = rcl_pressure_add_manual(t->b);
}

static void fx2_fini(struct fx2 *t)
{
	atomic_store(&evict_hook, NULL);
	assert_int_equal(rcl_pressure_free(t->b), 0);
	tc_destroy(&t->cb);
	assert_int_equal(rcl_domain_free(t->db), 0);
	fx_fini(&t->f);
}

/*
 * Wait, 1 ms at a time and at most @ms ms, until @flag is set; whether it
 * is.  Bounded, so that a deadlock fails a test instead of hanging it.
 */
static bool wait_flag(atomic_int *flag, unsigned long ms)
{
	unsigned long spins;

	for (spins = 0; !atomic_load(flag) && spins < ms; spins++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	return atomic_load(flag) != 0;
}

static void adv(struct fx *f, uint64_t ns)
{
	rcl_fake_clock_advance(f->fc, ns);
}

static uint64_t now(struct fx *f)
{
	const struct rcl_clock *c = rcl_fake_clock_clock(f->fc);

	return c->now(c->ctx);
}

static uint64_t usage(struct fx *f)
{
	return rcl_domain_usage(f->d);
}

static struct rcl_pressure_stats pstats(struct rcl_pressure *p)
{
	struct rcl_pressure_stats st;

	assert_int_equal(rcl_pressure_stats(p, &st), 0);
	return st;
}

static struct rcl_pressure_source_info sinfo(struct rcl_pressure *p, int i)
{
	struct rcl_pressure_source_info si;

	assert_int_equal(rcl_pressure_source_info(p, i, &si), 0);
	return si;
}

/* ------------------------------------------------------------------------- */
/* The documented arithmetic                                                  */
/* ------------------------------------------------------------------------- */

/* domain.h's default watermarks (scale factor 100): low and high. */
static void doc_wm(uint64_t budget, uint64_t *low, uint64_t *high)
{
	uint64_t min = budget / 1024;
	uint64_t frac = budget / 10000 * 100 + budget % 10000 * 100 / 10000;
	uint64_t gap = min / 4 > frac ? min / 4 : frac;

	if (!gap)
		gap = 1;
	*low = min + gap;
	*high = min + 2 * gap;
	if (*high > budget) {
		*low = budget / 2;
		*high = budget;
	}
}

static uint64_t doc_high(uint64_t budget)
{
	uint64_t low, high;

	doc_wm(budget, &low, &high);
	return high;
}

static uint64_t doc_low(uint64_t budget)
{
	uint64_t low, high;

	doc_wm(budget, &low, &high);
	return low;
}

/* The budget one action at @level leaves from @use (pressure.h's table). */
static uint64_t doc_target(uint64_t use, enum rcl_pressure_level level,
			   uint64_t floor)
{
	static const uint64_t eighths[] = { 8, 7, 6, 4 };
	uint64_t t = use * eighths[level] / 8;

	return t > floor ? t : floor;
}

/*
 * The budget is @b, in the stats and in the domain, and the domain's
 * set_budget left at least low of headroom (reclaim, if it ran, went to
 * high).
 */
static void assert_budget(struct fx *f, uint64_t b)
{
	struct rcl_pressure_stats st = pstats(f->p);

	assert_int_equal(st.budget, b);
	assert_int_equal(rcl_domain_budget(f->d), b);
	assert_true(usage(f) + doc_low(b) <= b);
}

/*
 * One action at @level, by a manual notify: the budget follows from the
 * usage before it, the reclaim goes to the high watermark, and the stats
 * count what it freed.
 */
static void notify_and_check(struct fx *f, int src,
			     enum rcl_pressure_level level, uint64_t floor)
{
	uint64_t before = usage(f), freed0 = pstats(f->p).freed_bytes;
	uint64_t bpu = f->cfg.bytes_per_unit ? f->cfg.bytes_per_unit : 1;
	uint64_t b = doc_target(before, level, floor);

	assert_int_equal(rcl_pressure_notify(f->p, src, level), 0);
	assert_budget(f, b);
	/* A target at base binds nothing that base does not: none. */
	assert_int_equal(pstats(f->p).pressure_budget,
			 b < pstats(f->p).base_budget ? b : UINT64_MAX);
	if (before + doc_low(b) > b)	/* it had to reclaim */
		assert_true(usage(f) + doc_high(b) <= b);
	assert_int_equal(pstats(f->p).freed_bytes - freed0,
			 (before - usage(f)) * bpu);
	assert_int_equal(usage(f), tc_cached_weight(&f->c));
}

/* ------------------------------------------------------------------------- */
/* Fake cgroups                                                               */
/* ------------------------------------------------------------------------- */

/*
 * A cgroup as the test wants it.  The working set is @ws if non-zero,
 * else @others plus the domain's own usage x @bpu (the domain's memory is
 * the cgroup's); usage = working set + @inactive.  v2: @max and @high
 * (UINT64_MAX writes "max"), the memory.events counters.  v1: @max is
 * memory.limit_in_bytes (V1_NO_LIMIT: none), @hier memory.stat's
 * hierarchical_memory_limit (V1_NO_LIMIT by default; @no_hier: no such
 * line, as in older kernels).
 */
struct cg {
	unsigned version;
	char dir[PATH_MAX];
	struct rcl_domain *d;
	uint64_t bpu;
	uint64_t ws, others, inactive;
	uint64_t max, high;
	uint64_t hier;
	bool no_hier;
	uint64_t ev_high, ev_max, ev_oom, ev_oom_kill;
};

static uint64_t cg_ws(const struct cg *c)
{
	return c->ws ? c->ws : c->others + rcl_domain_usage(c->d) * c->bpu;
}

static void put_limit(const char *dir, const char *name, uint64_t v)
{
	if (v == UINT64_MAX)
		put_file(dir, name, "max\n");
	else
		put_file(dir, name, "%llu\n", (unsigned long long)v);
}

static void cg_write_stat(const struct cg *c)
{
	unsigned long long ws = cg_ws(c), in = c->inactive;

	if (c->version == 2)
		put_file(c->dir, "memory.stat",
			 "anon %llu\nfile %llu\nkernel 0\nkernel_stack 16384\n"
			 "sock 0\nshmem 0\nfile_mapped 0\nfile_dirty 0\n"
			 "file_writeback 0\ninactive_anon 0\nactive_anon %llu\n"
			 "inactive_file %llu\nactive_file 0\nunevictable 0\n"
			 "slab 0\nworkingset_refault_file 0\npgfault 1234\n",
			 ws, in, ws, in);
	else if (c->no_hier)
		put_file(c->dir, "memory.stat",
			 "cache %llu\nrss %llu\nmapped_file 0\n"
			 "inactive_anon 0\nactive_anon 0\ninactive_file 7\n"
			 "active_file 0\nunevictable 0\n"
			 "total_cache %llu\ntotal_rss %llu\n"
			 "total_inactive_anon 0\ntotal_active_anon %llu\n"
			 "total_inactive_file %llu\ntotal_active_file 0\n",
			 in, ws, in, ws, ws, in);
	else
		put_file(c->dir, "memory.stat",
			 "cache %llu\nrss %llu\nmapped_file 0\n"
			 "inactive_anon 0\nactive_anon 0\ninactive_file 7\n"
			 "active_file 0\nunevictable 0\n"
			 "hierarchical_memory_limit %llu\n"
			 "total_cache %llu\ntotal_rss %llu\n"
			 "total_inactive_anon 0\ntotal_active_anon %llu\n"
			 "total_inactive_file %llu\ntotal_active_file 0\n",
			 in, ws, (unsigned long long)c->hier, in, ws, ws, in);
}

static void cg_write(const struct cg *c)
{
	unsigned long long use = cg_ws(c) + c->inactive;

	cg_write_stat(c);
	if (c->version == 2) {
		put_file(c->dir, "memory.current", "%llu\n", use);
		put_limit(c->dir, "memory.max", c->max);
		put_limit(c->dir, "memory.high", c->high);
		put_file(c->dir, "memory.events",
			 "low 0\nhigh %llu\nmax %llu\noom %llu\noom_kill %llu\n"
			 "oom_group_kill 0\n",
			 (unsigned long long)c->ev_high,
			 (unsigned long long)c->ev_max,
			 (unsigned long long)c->ev_oom,
			 (unsigned long long)c->ev_oom_kill);
	} else {
		put_file(c->dir, "memory.usage_in_bytes", "%llu\n", use);
		put_file(c->dir, "memory.limit_in_bytes", "%llu\n",
			 (unsigned long long)c->max);
	}
}

/* A cgroup directory @name under @parent, whose memory includes @d's. */
static void cg_init_in(struct cg *c, const char *parent, const char *name,
		       unsigned version, struct rcl_domain *d, uint64_t bpu)
{
	memset(c, 0, sizeof(*c));
	make_subdir(c->dir, sizeof(c->dir), parent, name);
	c->version = version;
	c->d = d;
	c->bpu = bpu;
	c->max = version == 2 ? UINT64_MAX : V1_NO_LIMIT;
	c->high = UINT64_MAX;
	c->hier = V1_NO_LIMIT;
}

static void cg_init(struct cg *c, struct fx *f, const char *name,
		    unsigned version, uint64_t bpu)
{
	cg_init_in(c, f->tmp, name, version, f->d, bpu);
}

/* ------------------------------------------------------------------------- */
/* PSI files                                                                  */
/* ------------------------------------------------------------------------- */

/*
 * A PSI file is rewritten in place, as the kernel's is: the monitor keeps
 * the descriptor it opened and reads it again every interval.
 */
static void put_psi(const char *dir, const char *name, uint64_t some,
		    uint64_t full)
{
	char buf[256];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "some avg10=0.00 avg60=0.00 avg300=0.00 total=%llu\n"
		     "full avg10=1.25 avg60=0.30 avg300=0.07 total=%llu\n",
		     (unsigned long long)some, (unsigned long long)full);
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	put_in_place(dir, name, buf, (size_t)n);
}

/* ------------------------------------------------------------------------- */
/* Descriptors                                                                */
/* ------------------------------------------------------------------------- */

#define MAX_FDS 1024

/* The open descriptors below MAX_FDS, as a bitmap; returns the count. */
static unsigned fd_set_now(bool *set)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned n = 0;
	int self;

	assert_non_null(dir);
	self = dirfd(dir);
	memset(set, 0, MAX_FDS * sizeof(*set));
	while ((e = readdir(dir))) {
		long fd;

		if (e->d_name[0] == '.')
			continue;
		fd = strtol(e->d_name, NULL, 10);
		/* Valgrind keeps its own above the limit it shows the program. */
		if (fd == self || fd < 0 || fd >= MAX_FDS)
			continue;
		set[fd] = true;
		n++;
	}
	closedir(dir);
	return n;
}

static unsigned fd_count(void)
{
	bool set[MAX_FDS];

	return fd_set_now(set);
}

/* ------------------------------------------------------------------------- */
/* The test seam: descriptors that behave as the kernel's                     */
/* ------------------------------------------------------------------------- */

/*
 * What a temporary file cannot do, the seam (lib/pressure_internal.h)
 * stands in for: the filesystem check says procfs or cgroup2, and each
 * polled descriptor the monitor opens on a path ending in seam.match
 * (a PSI trigger's, systemd's PSI file's, memory.events) is one end of an
 * AF_UNIX stream socketpair whose other end the test keeps.  One byte of
 * out-of-band data from the peer raises EPOLLPRI, as a trigger's event
 * or a changed memory.events does; reading it back through the monitor's
 * end clears it, as the nested poll of an application's event loop
 * clears a PSI trigger's event; a peer that closes with data unread
 * leaves EPOLLERR | EPOLLHUP | EPOLLPRI for ever, as a removed cgroup's
 * file does (and reads fail, as they do there).  Triggers written go to
 * the peer, unread.
 */
#define PROC_MAGIC 0x9fa0ul
#define CGROUP2_MAGIC 0x63677270ul
#define SEAM_MAX 8

static struct {
	const char *match;
	unsigned long magic;
	int refuse_rw;		/* an errno: read-write opens refused */
	int nr;
	int ours[SEAM_MAX], peer[SEAM_MAX];
} seam;

static unsigned long seam_magic(int fd)
{
	(void)fd;
	return seam.magic;
}

static int seam_open(int dir, const char *path, int flags)
{
	size_t n = strlen(path), m = strlen(seam.match);
	int sv[2];

	if (n < m || strcmp(path + n - m, seam.match))
		return openat(dir, path, flags);
	if (seam.refuse_rw && (flags & O_ACCMODE) != O_RDONLY) {
		errno = seam.refuse_rw;
		return -1;
	}
	if (seam.nr >= SEAM_MAX ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv)) {
		errno = EMFILE;
		return -1;
	}
	seam.ours[seam.nr] = sv[0];
	seam.peer[seam.nr++] = sv[1];
	return sv[0];
}

/* Descriptors on paths ending in @match, on a filesystem of @magic. */
static void seam_on(const char *match, unsigned long magic)
{
	memset(&seam, 0, sizeof(seam));
	seam.match = match;
	seam.magic = magic;
	rcl__pressure_seam.fs_magic = seam_magic;
	rcl__pressure_seam.open_poll = seam_open;
}

/* Back to the system calls (the peers stay the test's). */
static void seam_off(void)
{
	memset(&rcl__pressure_seam, 0, sizeof(rcl__pressure_seam));
}

static void seam_close_peers(void)
{
	int i;

	for (i = 0; i < seam.nr; i++)
		if (seam.peer[i] >= 0)
			close(seam.peer[i]);
	seam.nr = 0;
}

/* Descriptor @i's event: EPOLLPRI until it is read. */
static void seam_fire(int i)
{
	assert_int_equal(send(seam.peer[i], "!", 1, MSG_OOB), 1);
}

/* Read descriptor @i's event, as a nested poll consumes a trigger's. */
static void seam_consume(int i)
{
	char c;

	assert_int_equal(recv(seam.ours[i], &c, 1, MSG_OOB), 1);
}

/* Descriptor @i's file is gone: EPOLLERR | EPOLLHUP | EPOLLPRI for ever. */
static void seam_gone(int i)
{
	assert_int_equal(send(seam.ours[i], "x", 1, 0), 1);
	seam_fire(i);
	close(seam.peer[i]);
	seam.peer[i] = -1;
}

/* Whether the monitor's descriptor is readable now. */
static bool fd_readable(struct rcl_pressure *p)
{
	struct pollfd pfd = { .fd = rcl_pressure_fd(p), .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/* ------------------------------------------------------------------------- */
/* 1. Levels of other systems, names                                          */
/* ------------------------------------------------------------------------- */

static void test_pressure_level_from_glib(void **state)
{
	(void)state;
	/* GMemoryMonitorWarningLevel: LOW 50, MEDIUM 100, CRITICAL 255. */
	assert_int_equal(rcl_pressure_level_from_glib(50), RCL_PRESSURE_MODERATE);
	assert_int_equal(rcl_pressure_level_from_glib(100), RCL_PRESSURE_SEVERE);
	assert_int_equal(rcl_pressure_level_from_glib(255), RCL_PRESSURE_CRITICAL);
	/* ... taken as ranges. */
	assert_int_equal(rcl_pressure_level_from_glib(INT_MIN), RCL_PRESSURE_NONE);
	assert_int_equal(rcl_pressure_level_from_glib(-1), RCL_PRESSURE_NONE);
	assert_int_equal(rcl_pressure_level_from_glib(0), RCL_PRESSURE_NONE);
	assert_int_equal(rcl_pressure_level_from_glib(1), RCL_PRESSURE_MODERATE);
	assert_int_equal(rcl_pressure_level_from_glib(99), RCL_PRESSURE_MODERATE);
	assert_int_equal(rcl_pressure_level_from_glib(101), RCL_PRESSURE_SEVERE);
	assert_int_equal(rcl_pressure_level_from_glib(254), RCL_PRESSURE_SEVERE);
	assert_int_equal(rcl_pressure_level_from_glib(256), RCL_PRESSURE_CRITICAL);
	assert_int_equal(rcl_pressure_level_from_glib(INT_MAX), RCL_PRESSURE_CRITICAL);
}

static void test_pressure_level_from_android(void **state)
{
	static const struct {
		int trim;
		enum rcl_pressure_level want;
	} t[] = {
		/* The ComponentCallbacks2 constants. */
		{ 5, RCL_PRESSURE_MODERATE },	/* RUNNING_MODERATE */
		{ 10, RCL_PRESSURE_SEVERE },	/* RUNNING_LOW */
		{ 15, RCL_PRESSURE_CRITICAL },	/* RUNNING_CRITICAL */
		{ 20, RCL_PRESSURE_MODERATE },	/* UI_HIDDEN */
		{ 40, RCL_PRESSURE_MODERATE },	/* BACKGROUND */
		{ 60, RCL_PRESSURE_SEVERE },	/* MODERATE */
		{ 80, RCL_PRESSURE_CRITICAL },	/* COMPLETE */
		/* The ranges' edges. */
		{ INT_MIN, RCL_PRESSURE_NONE },
		{ -1, RCL_PRESSURE_NONE },
		{ 0, RCL_PRESSURE_NONE },
		{ 4, RCL_PRESSURE_NONE },
		{ 9, RCL_PRESSURE_MODERATE },
		{ 14, RCL_PRESSURE_SEVERE },
		{ 19, RCL_PRESSURE_CRITICAL },
		{ 59, RCL_PRESSURE_MODERATE },
		{ 79, RCL_PRESSURE_SEVERE },
		{ 81, RCL_PRESSURE_CRITICAL },
		{ INT_MAX, RCL_PRESSURE_CRITICAL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (rcl_pressure_level_from_android(t[i].trim) != t[i].want)
			fail_msg("trim level %d: %d, want %d", t[i].trim,
				 rcl_pressure_level_from_android(t[i].trim),
				 t[i].want);
	}
}

static void test_pressure_level_and_mode_names(void **state)
{
	static const char *const modes[] = {
		"manual", "psi-trigger", "psi-poll", "cgroup-v2", "cgroup-v1",
		"cgroup-v1-events", "systemd-psi", "systemd-psi-poll",
		"systemd-fifo", "systemd-socket", "off",
	};
	unsigned i;

	(void)state;
	assert_string_equal(rcl_pressure_level_name(RCL_PRESSURE_NONE), "none");
	assert_string_equal(rcl_pressure_level_name(RCL_PRESSURE_MODERATE), "moderate");
	assert_string_equal(rcl_pressure_level_name(RCL_PRESSURE_SEVERE), "severe");
	assert_string_equal(rcl_pressure_level_name(RCL_PRESSURE_CRITICAL), "critical");
	assert_string_equal(rcl_pressure_level_name((enum rcl_pressure_level)4), "unknown");
	assert_string_equal(rcl_pressure_level_name((enum rcl_pressure_level)-1), "unknown");
	assert_int_equal(RCL_PSOURCE_OFF + 1, sizeof(modes) / sizeof(modes[0]));
	for (i = 0; i <= RCL_PSOURCE_OFF; i++)
		assert_string_equal(rcl_pressure_source_mode_name((enum rcl_psource_mode)i),
				    modes[i]);
	assert_string_equal(rcl_pressure_source_mode_name((enum rcl_psource_mode)(RCL_PSOURCE_OFF + 1)),
			    "unknown");
	assert_string_equal(rcl_pressure_source_mode_name((enum rcl_psource_mode)-1),
			    "unknown");
}

/* ------------------------------------------------------------------------- */
/* 2. Actions: levels, floor, rate limit, back-off, growth                    */
/* ------------------------------------------------------------------------- */

/*
 * Each level steps the budget to its fraction of the usage before the
 * action: 90000 -> MODERATE 78750 -> SEVERE 3/4 -> CRITICAL 1/2, then
 * CRITICAL until the floor (100000 / 64 = 1562) holds it.  (The domain's
 * reclaim frees at least 32 objects, 3200 here, so the cache may empty
 * before the budget reaches the floor: such an action frees nothing.)  At
 * the floor the next action frees nothing: an empty action, whose wait
 * doubles.
 */
static void test_pressure_levels_step_the_budget(void **state)
{
	struct fx f;
	struct rcl_pressure_source_info si;
	struct rcl_pressure_stats st;
	uint64_t empty, wait;
	unsigned i;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	assert_int_equal(src, 0);
	st = pstats(f.p);
	assert_int_equal(st.nr_sources, 1);
	assert_int_equal(st.base_budget, BUDGET);
	assert_int_equal(st.budget, BUDGET);
	assert_int_equal(st.pressure_budget, UINT64_MAX);
	assert_int_equal(st.container_budget, UINT64_MAX);
	assert_int_equal(st.level, RCL_PRESSURE_NONE);

	assert_int_equal(usage(&f), 90000);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);
	assert_int_equal(rcl_domain_budget(f.d), 78750);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_MODERATE);
	si = sinfo(f.p, src);
	assert_int_equal(si.mode, RCL_PSOURCE_MANUAL);
	assert_int_equal(si.level, RCL_PRESSURE_MODERATE);
	assert_int_equal(si.events, 1);
	assert_int_equal(si.actions, 1);
	assert_int_equal(si.merged, 0);
	assert_int_equal(si.empty_actions, 0);
	assert_int_equal(si.wait_ns, RCL_PRESSURE_WINDOW_DEFAULT_NS);
	assert_string_equal(si.path, "");

	adv(&f, SEC);
	notify_and_check(&f, src, RCL_PRESSURE_SEVERE, FLOOR);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_SEVERE);
	adv(&f, SEC);
	notify_and_check(&f, src, RCL_PRESSURE_CRITICAL, FLOOR);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_CRITICAL);
	for (i = 0; i < 16 && rcl_domain_budget(f.d) > FLOOR; i++) {
		adv(&f, sinfo(f.p, src).wait_ns);
		notify_and_check(&f, src, RCL_PRESSURE_CRITICAL, FLOOR);
	}
	assert_int_equal(rcl_domain_budget(f.d), FLOOR);
	assert_true(usage(&f) + doc_high(FLOOR) <= FLOOR);
	si = sinfo(f.p, src);
	assert_int_equal(si.actions, 3 + i);
	empty = si.empty_actions;
	wait = si.wait_ns;

	/* At the floor: nothing more to free, the wait doubles. */
	adv(&f, wait);
	notify_and_check(&f, src, RCL_PRESSURE_CRITICAL, FLOOR);
	si = sinfo(f.p, src);
	assert_int_equal(si.empty_actions, empty + 1);
	assert_int_equal(si.wait_ns, 2 * wait);
	st = pstats(f.p);
	assert_int_equal(st.actions, 4 + i);
	assert_int_equal(st.empty_actions, empty + 1);
	assert_int_equal(st.freed_bytes, 90000 - usage(&f));
	/* NONE says it ended: the level, not the budget. */
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_NONE), 0);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_NONE);
	assert_int_equal(pstats(f.p).actions, 4 + i);
	assert_int_equal(rcl_domain_budget(f.d), FLOOR);
	fx_fini(&f);
}

/*
 * min_budget is the floor: a MODERATE step from 90000 (78750) stops at
 * 80000; min_budget == base is allowed and no action moves the budget.
 */
static void test_pressure_min_budget_is_the_floor(void **state)
{
	struct fx f;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.min_budget = 80000;
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, 80000);
	assert_int_equal(rcl_domain_budget(f.d), 80000);
	adv(&f, SEC);
	notify_and_check(&f, src, RCL_PRESSURE_CRITICAL, 80000);
	assert_int_equal(rcl_domain_budget(f.d), 80000);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	f.cfg.min_budget = 80000;
	f.cfg.base_budget = 80000;
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	notify_and_check(&f, src, RCL_PRESSURE_CRITICAL, 80000);
	assert_int_equal(rcl_domain_budget(f.d), 80000);
	fx_fini(&f);
}

/*
 * Rate limit, window 1 s: the first event acts at once; events inside the
 * window merge (counted), the highest level wins, and one action runs at
 * the window's end (the next dispatch at or after it; none before).  An
 * event once the wait has passed acts in the notifying call with the
 * highest of what was pending and its own level.
 */
static void test_pressure_rate_limit_merges_into_one_action(void **state)
{
	struct fx f;
	struct rcl_pressure_source_info si;
	uint64_t u, b;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + SEC);

	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);
	b = rcl_domain_budget(f.d);
	adv(&f, 200 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_SEVERE), 0);
	adv(&f, 300 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.events, 3);
	assert_int_equal(si.merged, 2);
	assert_int_equal(si.actions, 1);
	assert_int_equal(si.level, RCL_PRESSURE_MODERATE);	/* the last one */
	assert_int_equal(rcl_domain_budget(f.d), b);
	/* The pending action is due at the window's end, with the tick. */
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + SEC);
	adv(&f, 499 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).actions, 1);
	assert_int_equal(rcl_domain_budget(f.d), b);

	/* T0 + 1 s: one action, SEVERE (the highest merged). */
	adv(&f, MS);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	si = sinfo(f.p, src);
	assert_int_equal(si.actions, 2);
	assert_int_equal(si.merged, 2);
	assert_int_equal(si.events, 3);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_SEVERE, FLOOR));
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);	/* nothing pending */
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + 2 * SEC);

	/* Merged MODERATE, then CRITICAL once the wait has passed: it acts. */
	adv(&f, 500 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	assert_int_equal(sinfo(f.p, src).merged, 3);
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + 2 * SEC);
	adv(&f, 500 * MS);
	notify_and_check(&f, src, RCL_PRESSURE_CRITICAL, FLOOR);
	si = sinfo(f.p, src);
	assert_int_equal(si.actions, 3);
	assert_int_equal(si.merged, 3);
	assert_int_equal(si.events, 5);
	assert_int_equal(pstats(f.p).actions, 3);
	/* A pending MODERATE, then CRITICAL: the action takes CRITICAL. */
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_CRITICAL), 0);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	adv(&f, 800 * MS);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_CRITICAL, FLOOR));
	fx_fini(&f);
}

/*
 * RCL_PRESSURE_NONE after a merged event ends the source's level but not
 * the merged action: the SEVERE event happened, and the window only
 * delays its action, which runs at the window's end (rcl_pressure_notify()).
 */
static void test_pressure_none_keeps_a_merged_action(void **state)
{
	struct fx f;
	struct rcl_pressure_source_info si;
	uint64_t u, b;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);
	b = rcl_domain_budget(f.d);
	adv(&f, 200 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_SEVERE), 0);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_NONE), 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.level, RCL_PRESSURE_NONE);
	assert_int_equal(si.events, 2);	/* NONE is no event */
	assert_int_equal(si.merged, 1);
	assert_int_equal(si.actions, 1);
	assert_int_equal(rcl_domain_budget(f.d), b);
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + SEC);
	adv(&f, 700 * MS);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	si = sinfo(f.p, src);
	assert_int_equal(si.actions, 2);
	assert_int_equal(si.level, RCL_PRESSURE_NONE);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_SEVERE, FLOOR));
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);	/* nothing pending */
	fx_fini(&f);
}

/*
 * A source that fires continuously at an empty cache (usage 0): every
 * action frees nothing, so its wait doubles, 1 s -> 2, 4, 8, 16, 32, then
 * 60 s (backoff_max).  An event every 100 ms for 10 minutes gives actions
 * at 0, 2, 6, 14, 30, 62, 122, 182, ..., 542 s: 14, not 6000.  The next
 * action that frees something brings the wait back to the window.
 */
static void test_pressure_backoff_on_an_empty_cache(void **state)
{
	struct fx f;
	struct rcl_pressure_source_info si;
	uint64_t i, u;
	int src;

	(void)state;
	fx_init(&f, 64000, 0);		/* floor 1000 */
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	for (i = 0; i <= 6000; i++) {
		assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_SEVERE), 0);
		assert_true(rcl_pressure_dispatch(f.p) >= 0);
		assert_true(rcl_domain_budget(f.d) >= 1000);
		assert_true(rcl_domain_budget(f.d) <= 64000);
		if (i < 6000)
			adv(&f, 100 * MS);
	}
	assert_int_equal(now(&f), T0 + 600 * SEC);
	si = sinfo(f.p, src);
	assert_int_equal(si.events, 6001);
	assert_int_equal(si.actions, 14);
	assert_int_equal(si.empty_actions, 14);
	assert_int_equal(si.merged, 6001 - 14);
	assert_int_equal(si.wait_ns, RCL_PRESSURE_BACKOFF_MAX_DEFAULT_NS);
	assert_int_equal(pstats(f.p).actions, 14);
	assert_int_equal(pstats(f.p).freed_bytes, 0);
	/* The last action was at 542 s: the next is due at 602 s. */
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + 601 * SEC);
	/* 58 quiet intervals since: the budget has grown back to base. */
	assert_int_equal(rcl_domain_budget(f.d), 64000);

	/* Something to free: the action at 602 s frees, the wait is 1 s. */
	tc_fill(&f.c, 500);
	adv(&f, 2 * SEC);
	u = usage(&f);
	assert_int_equal(u, 50000);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);	/* the pending one */
	assert_budget(&f, doc_target(u, RCL_PRESSURE_SEVERE, 1000));
	si = sinfo(f.p, src);
	assert_int_equal(si.actions, 15);
	assert_int_equal(si.empty_actions, 14);
	assert_int_equal(si.wait_ns, SEC);
	assert_true(usage(&f) < u);
	fx_fini(&f);
}

/* backoff_max below the window is raised to it; a custom one bounds. */
static void test_pressure_backoff_bounds(void **state)
{
	struct fx f;
	int src;

	(void)state;
	fx_init(&f, 64000, 0);
	f.cfg.window_ns = 250 * MS;
	f.cfg.backoff_max_ns = 10 * MS;		/* raised to 250 ms */
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	assert_int_equal(sinfo(f.p, src).wait_ns, 250 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	assert_int_equal(sinfo(f.p, src).wait_ns, 250 * MS);
	adv(&f, 250 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	assert_int_equal(sinfo(f.p, src).actions, 2);
	assert_int_equal(sinfo(f.p, src).empty_actions, 2);
	assert_int_equal(sinfo(f.p, src).wait_ns, 250 * MS);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	f.cfg.window_ns = 0;
	f.cfg.backoff_max_ns = 3 * SEC;		/* 1 s, 2 s, 3 s, 3 s */
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	assert_int_equal(sinfo(f.p, src).wait_ns, 2 * SEC);
	adv(&f, 2 * SEC);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	assert_int_equal(sinfo(f.p, src).wait_ns, 3 * SEC);
	adv(&f, 3 * SEC - 1);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	assert_int_equal(sinfo(f.p, src).actions, 2);
	adv(&f, 1);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_MODERATE), 0);
	assert_int_equal(sinfo(f.p, src).actions, 3);
	assert_int_equal(sinfo(f.p, src).wait_ns, 3 * SEC);
	fx_fini(&f);
}

/*
 * Hysteresis: after an action the budget grows back by grow_pct of base
 * per quiet interval (5 % of 100000: 5000), from the first interval
 * without an action, until it reaches base (the pressure budget is then
 * none).  An interval with an action does not grow.
 */
static void test_pressure_budget_grows_back_per_quiet_interval(void **state)
{
	struct fx f;
	uint64_t b, u;
	int src, i;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);	/* T0 */
	b = 78750;
	assert_int_equal(rcl_domain_budget(f.d), b);
	u = usage(&f);
	/* T0 + 1 s ends the interval of the action: no growth. */
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, b);
	for (i = 0; i < 4; i++) {
		adv(&f, SEC);
		assert_int_equal(rcl_pressure_dispatch(f.p), 0);
		b += 5000;
		assert_budget(&f, b);
		assert_int_equal(pstats(f.p).pressure_budget, b);
	}
	assert_int_equal(b, 98750);
	adv(&f, SEC);				/* 103750 >= base: none */
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, BUDGET);
	assert_int_equal(pstats(f.p).pressure_budget, UINT64_MAX);
	assert_int_equal(usage(&f), u);		/* growth reclaims nothing */

	/* An action in the interval: no growth at its end. */
	adv(&f, 500 * MS);			/* T0 + 6.5 s */
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);
	b = rcl_domain_budget(f.d);
	adv(&f, 500 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, b);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, b + 5000);
	/* Five intervals late: at most five intervals' growth. */
	adv(&f, 5 * SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_true(rcl_domain_budget(f.d) > b + 5000);
	assert_true(rcl_domain_budget(f.d) <= b + 5000 + 5 * 5000);
	fx_fini(&f);
}

/* Other grow_pct: 10 % and 30 % of base, capped at base. */
static void test_pressure_grow_pct(void **state)
{
	struct fx f;
	uint64_t b;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.grow_pct = 10;
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	notify_and_check(&f, src, RCL_PRESSURE_SEVERE, FLOOR);	/* 67500 */
	assert_int_equal(rcl_domain_budget(f.d), 67500);
	adv(&f, SEC);
	/* The tick 1 s after the action: not yet a whole quiet interval. */
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, 67500);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, 77500);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* A new monitor: its base is the domain's budget now, 77500. */
	f.cfg.grow_pct = 30;
	fx_monitor(&f);
	assert_int_equal(pstats(f.p).base_budget, 77500);
	src = rcl_pressure_add_manual(f.p);
	assert_int_equal(rcl_pressure_next_deadline(f.p), now(&f) + SEC);
	b = doc_target(usage(&f), RCL_PRESSURE_MODERATE, 77500 / 64);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, 77500 / 64);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, b);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	/* + 30 % of 77500 (23250), capped at base: then none. */
	b += 23250;
	assert_budget(&f, b < 77500 ? b : 77500);
	assert_int_equal(pstats(f.p).pressure_budget, b < 77500 ? b : UINT64_MAX);
	fx_fini(&f);
}

/*
 * "A budget set by the application with rcl_domain_set_budget() holds
 * until the monitor's next change."
 */
static void test_pressure_application_budget_holds(void **state)
{
	struct fx f;
	int src, i;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	assert_int_equal(rcl_domain_set_budget(f.d, 95000), 0);
	for (i = 0; i < 3; i++) {
		adv(&f, SEC);
		assert_int_equal(rcl_pressure_dispatch(f.p), 0);
		assert_int_equal(rcl_domain_budget(f.d), 95000);
	}
	assert_int_equal(usage(&f), 90000);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);
	assert_int_equal(rcl_domain_budget(f.d), 78750);
	fx_fini(&f);
}

/* Configuration defaults and clamps that show in the deadlines. */
static void test_pressure_config_interval(void **state)
{
	struct fx f;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	assert_int_equal(rcl_pressure_next_deadline(f.p),
			 T0 + RCL_PRESSURE_INTERVAL_DEFAULT_NS);
	assert_int_equal(rcl_pressure_free(f.p), 0);
	f.cfg.interval_ns = 1;			/* at least 1 ms */
	fx_monitor(&f);
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + MS);
	adv(&f, MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + 2 * MS);
	assert_int_equal(pstats(f.p).dispatches, 1);
	assert_int_equal(rcl_pressure_free(f.p), 0);
	f.cfg.interval_ns = 250 * MS;
	fx_monitor(&f);
	assert_int_equal(rcl_pressure_next_deadline(f.p), T0 + MS + 250 * MS);
	fx_fini(&f);
}

/*
 * base_budget given: the budget without pressure, whatever the domain's
 * is; the floor is base / 64; actions and growth are relative to it.
 */
static void test_pressure_base_budget(void **state)
{
	struct fx f;
	int src;

	(void)state;
	fx_init(&f, BUDGET, 400);		/* usage 40000 */
	f.cfg.base_budget = 64000;		/* floor 1000 */
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	assert_int_equal(pstats(f.p).base_budget, 64000);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, 64000);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, 1000);	/* 35000 */
	assert_int_equal(rcl_domain_budget(f.d), 35000);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);	/* acted */
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_budget(&f, 35000 + 3200);	/* 5 % of 64000 */
	fx_fini(&f);
}

/* ------------------------------------------------------------------------- */
/* 3. The trim hook                                                           */
/* ------------------------------------------------------------------------- */

static atomic_uint trim_calls;
static void *_Atomic trim_priv_seen;

static void count_trim(void *priv)
{
	atomic_store(&trim_priv_seen, priv);
	atomic_fetch_add(&trim_calls, 1);
}

/* pressure.h's rule, with the frees the test observes. */
struct trim_model {
	uint64_t min, interval;
	uint64_t acc, last, due;
	bool armed;
	bool trimmed;
	unsigned trims;
};

static void trim_model_action(struct trim_model *m, uint64_t freed_bytes,
			      uint64_t t)
{
	m->acc += freed_bytes;
	if (!m->armed && m->acc && m->acc >= m->min) {
		m->armed = true;
		m->due = t + SEC;	/* one timer interval later */
	}
}

static void trim_model_dispatch(struct trim_model *m, uint64_t t)
{
	if (m->armed && t >= m->due &&
	    (!m->trimmed || t - m->last >= m->interval)) {
		m->trims++;
		m->acc = 0;
		m->armed = false;
		m->last = t;
		m->trimmed = true;
	}
}

/*
 * bytes_per_unit 1000, trim_min 5 MB (5000 units), trim_interval 5 s, one
 * MODERATE action a second, a dispatch before each: the first action
 * (frees >= 12900 units) makes a trim due one interval (1 s) later, run by
 * the dispatch of T0 + 1 s; the next ones free enough but the dispatches of
 * T0 + 2..5 s are inside the trim interval; the one of T0 + 6 s trims
 * again; later ones trim when both rules allow.  Actions never trim by
 * themselves.  The hook gets trim_priv.
 */
static void test_pressure_trim_after_freed_bytes_once_per_interval(void **state)
{
	struct fx f;
	struct trim_model m = { .min = 5 * MB, .interval = 5 * SEC };
	int src, i, tok = 0;

	(void)state;
	atomic_store(&trim_calls, 0);
	atomic_store(&trim_priv_seen, NULL);
	fx_init(&f, BUDGET, FILL);
	f.cfg.bytes_per_unit = 1000;
	f.cfg.trim = count_trim;
	f.cfg.trim_priv = &tok;
	f.cfg.trim_min_bytes = 5 * MB;
	f.cfg.trim_interval_ns = 5 * SEC;
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	for (i = 0; i < 12; i++) {
		uint64_t before;

		assert_int_equal(rcl_pressure_dispatch(f.p), 0);
		trim_model_dispatch(&m, now(&f));
		before = usage(&f);
		notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);
		trim_model_action(&m, (before - usage(&f)) * 1000, now(&f));
		if (i == 0) {
			assert_true((before - usage(&f)) * 1000 >= 12900 * 1000);
			assert_int_equal(atomic_load(&trim_calls), 0);
		}
		if (i == 1 || i == 5)
			assert_int_equal(atomic_load(&trim_calls), 1);
		if (i == 6)
			assert_int_equal(atomic_load(&trim_calls), 2);
		assert_int_equal(atomic_load(&trim_calls), m.trims);
		assert_int_equal(pstats(f.p).trims, m.trims);
		adv(&f, SEC);
	}
	assert_ptr_equal(atomic_load(&trim_priv_seen), &tok);
	assert_true(m.trims >= 3);
	fx_fini(&f);
}

/* Frees below trim_min_bytes: no trim, however long it has been. */
static void test_pressure_trim_needs_trim_min_bytes(void **state)
{
	struct fx f;
	int src, i;

	(void)state;
	atomic_store(&trim_calls, 0);
	fx_init(&f, BUDGET, FILL);
	f.cfg.trim = count_trim;
	f.cfg.trim_min_bytes = 90001;		/* more than the cache */
	f.cfg.trim_interval_ns = 1;
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	for (i = 0; i < 6; i++) {
		notify_and_check(&f, src, RCL_PRESSURE_CRITICAL, FLOOR);
		adv(&f, 10 * SEC);
	}
	assert_true(pstats(f.p).freed_bytes < 90001);
	assert_true(pstats(f.p).freed_bytes > 80000);
	assert_int_equal(atomic_load(&trim_calls), 0);
	assert_int_equal(pstats(f.p).trims, 0);
	fx_fini(&f);
}

/* RCL_PRESSURE_NO_TRIM: never, not even with a hook. */
static void test_pressure_no_trim_flag(void **state)
{
	struct fx f;
	int src, i;

	(void)state;
	atomic_store(&trim_calls, 0);
	fx_init(&f, BUDGET, FILL);
	f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	f.cfg.trim = count_trim;
	f.cfg.trim_min_bytes = 1;
	f.cfg.trim_interval_ns = 1;
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	for (i = 0; i < 6; i++) {
		notify_and_check(&f, src, RCL_PRESSURE_SEVERE, FLOOR);
		adv(&f, SEC);
	}
	assert_true(pstats(f.p).freed_bytes > 0);
	assert_int_equal(atomic_load(&trim_calls), 0);
	assert_int_equal(pstats(f.p).trims, 0);
	fx_fini(&f);
}

/* ------------------------------------------------------------------------- */
/* 4. Calls back from the monitor's own action: -EDEADLK                      */
/* ------------------------------------------------------------------------- */

static struct {
	struct rcl_pressure *p;
	int src;
	atomic_int calls;
	atomic_int free_ret, stop_ret, dispatch_ret, notify_ret;
	atomic_int stats_ret, memory_ret, add_ret;
	atomic_bool want_thread;	/* only in the monitor's thread */
	pthread_t main_thread;
} re;

static void reentry_reset(struct rcl_pressure *p, int src)
{
	re.p = p;
	re.src = src;
	atomic_store(&re.calls, 0);
	atomic_store(&re.free_ret, 1);
	atomic_store(&re.stop_ret, 1);
	atomic_store(&re.dispatch_ret, 1);
	atomic_store(&re.notify_ret, 1);
	atomic_store(&re.stats_ret, 1);
	atomic_store(&re.memory_ret, 1);
	atomic_store(&re.add_ret, 1);
	atomic_store(&re.want_thread, false);
	re.main_thread = pthread_self();
}

/* What the monitor's own callbacks may and may not call. */
static void reentry_calls(void)
{
	struct rcl_pressure_stats st;
	struct rcl_memory_sample ms;

	if (atomic_load(&re.want_thread) &&
	    pthread_equal(pthread_self(), re.main_thread))
		return;
	if (atomic_fetch_add(&re.calls, 1))
		return;			/* the first call only */
	atomic_store(&re.free_ret, rcl_pressure_free(re.p));
	atomic_store(&re.stop_ret, rcl_pressure_stop(re.p));
	atomic_store(&re.dispatch_ret, rcl_pressure_dispatch(re.p));
	atomic_store(&re.notify_ret,
		     rcl_pressure_notify(re.p, re.src, RCL_PRESSURE_CRITICAL));
	/* Reading is fine. */
	atomic_store(&re.stats_ret, rcl_pressure_stats(re.p, &st));
	atomic_store(&re.memory_ret, rcl_pressure_memory(re.p, &ms));
	atomic_store(&re.add_ret, rcl_pressure_add_manual(re.p));
}

static void reentry_trim(void *priv)
{
	(void)priv;
	reentry_calls();
}

static void reentry_evict(struct tcache *c)
{
	(void)c;
	reentry_calls();
}

static void assert_reentry_refused(void)
{
	assert_int_equal(atomic_load(&re.calls) > 0, 1);
	assert_int_equal(atomic_load(&re.free_ret), -EDEADLK);
	assert_int_equal(atomic_load(&re.stop_ret), -EDEADLK);
	assert_int_equal(atomic_load(&re.dispatch_ret), -EDEADLK);
	assert_int_equal(atomic_load(&re.notify_ret), -EDEADLK);
	assert_int_equal(atomic_load(&re.stats_ret), 0);
	assert_int_equal(atomic_load(&re.memory_ret), 0);
	assert_true(atomic_load(&re.add_ret) >= 0);
}

/*
 * The trim hook runs in the action: rcl_pressure_free(), _stop(),
 * _dispatch() and _notify() of its own monitor are refused (-EDEADLK,
 * nothing done); the monitor works on afterwards.
 */
static void test_pressure_trim_hook_cannot_free_or_stop(void **state)
{
	struct fx f;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.trim = reentry_trim;
	f.cfg.trim_min_bytes = 1;
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	reentry_reset(f.p, src);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);
	/* The trim runs from the dispatch one interval later. */
	assert_int_equal(pstats(f.p).trims, 0);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_reentry_refused();
	assert_int_equal(pstats(f.p).trims, 1);
	assert_int_equal(pstats(f.p).nr_sources, 2);	/* the hook's add */
	/* A second time, after a pending action run by dispatch. */
	reentry_reset(f.p, src);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_SEVERE), 0);
	adv(&f, 100 * MS);	/* inside the window: merges, pending */
	assert_int_equal(rcl_pressure_notify(f.p, src, RCL_PRESSURE_SEVERE), 0);
	adv(&f, 5 * SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_reentry_refused();
	assert_int_equal(pstats(f.p).trims, 2);
	fx_fini(&f);
}

/*
 * An evict callback run by the monitor's action (the domain's reclaim in
 * rcl_domain_set_budget()) likewise.
 */
static void test_pressure_evict_callback_cannot_free_or_stop(void **state)
{
	struct fx f;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	fx_monitor(&f);
	src = rcl_pressure_add_manual(f.p);
	reentry_reset(f.p, src);
	atomic_store(&evict_hook, reentry_evict);
	notify_and_check(&f, src, RCL_PRESSURE_MODERATE, FLOOR);
	atomic_store(&evict_hook, NULL);
	assert_reentry_refused();
	assert_int_equal(pstats(f.p).actions, 1);
	fx_fini(&f);
}

/*
 * Adding sources from the monitor's own callbacks (its trim hook, the
 * domain's evict callbacks run by its action): the action holds the
 * monitor's action lock, so add_psi, add_cgroup and add_systemd, which
 * take it, must refuse (-EDEADLK) rather than wait for themselves for ever;
 * add_manual does not need it and works.  The action runs in a helper
 * thread and this one waits for it with a bound, so that a deadlock fails
 * the test instead of hanging it.
 */
static struct {
	struct rcl_pressure *p;
	struct rcl_fake_clock *fc;
	int src;
	char psi[PATH_MAX], cgdir[PATH_MAX];
	atomic_int calls, psi_ret, cg_ret, sd_ret, manual_ret;
	atomic_bool done;
} adds;

static void adds_calls(void)
{
	if (atomic_fetch_add(&adds.calls, 1))
		return;
	atomic_store(&adds.psi_ret, rcl_pressure_add_psi(adds.p, adds.psi));
	atomic_store(&adds.cg_ret, rcl_pressure_add_cgroup(adds.p, adds.cgdir, 0));
	atomic_store(&adds.sd_ret, rcl_pressure_add_systemd(adds.p, "/dev/null",
							    NULL));
	atomic_store(&adds.manual_ret, rcl_pressure_add_manual(adds.p));
}

static void adds_trim(void *priv)
{
	(void)priv;
	adds_calls();
}

static void adds_evict(struct tcache *c)
{
	(void)c;
	adds_calls();
}

static void *adds_notify_main(void *arg)
{
	(void)arg;
	T_EQ(rcl_pressure_notify(adds.p, adds.src, RCL_PRESSURE_MODERATE), 0);
	/* The trim runs one interval after the frees, from dispatch. */
	rcl_fake_clock_advance(adds.fc, RCL_PRESSURE_INTERVAL_DEFAULT_NS);
	T_EQ(rcl_pressure_dispatch(adds.p) >= 0, 1);
	atomic_store(&adds.done, true);
	return NULL;
}

static void test_pressure_add_from_own_callbacks_is_refused(void **state)
{
	struct rcl_domain_config dc = { .budget = BUDGET };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_fake_clock *fc;
	struct rcl_domain *d;
	struct tcache c;
	struct cg cg;
	char tmp[PATH_MAX];
	int pass;

	(void)state;
	tmpdir_new(tmp, sizeof(tmp));
	put_psi(tmp, "psi", 0, 0);
	path_of(adds.psi, sizeof(adds.psi), tmp, "psi");
	assert_int_equal(rcl_fake_clock_new(T0, &fc), 0);
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	tc_init(&c, d, NOBJ, W);
	cg_init_in(&cg, tmp, "cg", 2, d, 1);
	cg_write(&cg);
	snprintf(adds.cgdir, sizeof(adds.cgdir), "%s", cg.dir);
	for (pass = 0; pass < 2; pass++) {		/* trim hook, evict */
		unsigned long spins;
		pthread_t t;

		tc_fill(&c, FILL);
		pc.domain = d;
		pc.clock = rcl_fake_clock_clock(fc);
		pc.trim = pass ? NULL : adds_trim;
		pc.trim_min_bytes = 1;
		pc.flags = pass ? RCL_PRESSURE_NO_TRIM : 0;
		assert_int_equal(rcl_pressure_new(&pc, &adds.p), 0);
		adds.fc = fc;
		adds.src = rcl_pressure_add_manual(adds.p);
		atomic_store(&adds.calls, 0);
		atomic_store(&adds.psi_ret, 1);
		atomic_store(&adds.cg_ret, 1);
		atomic_store(&adds.sd_ret, 1);
		atomic_store(&adds.manual_ret, -1);
		atomic_store(&adds.done, false);
		atomic_store(&evict_hook, pass ? adds_evict : NULL);
		assert_int_equal(pthread_create(&t, NULL, adds_notify_main, NULL), 0);
		for (spins = 0; !atomic_load(&adds.done) && spins < 10000; spins++) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
		if (!atomic_load(&adds.done))
			fail_msg("an add from the monitor's own %s deadlocked "
				 "(add_psi %d, add_cgroup %d, add_systemd %d)",
				 pass ? "evict callback" : "trim hook",
				 atomic_load(&adds.psi_ret), atomic_load(&adds.cg_ret),
				 atomic_load(&adds.sd_ret));
		assert_int_equal(pthread_join(t, NULL), 0);
		atomic_store(&evict_hook, NULL);
		assert_true(atomic_load(&adds.calls) > 0);
		assert_int_equal(atomic_load(&adds.psi_ret), -EDEADLK);
		assert_int_equal(atomic_load(&adds.cg_ret), -EDEADLK);
		assert_int_equal(atomic_load(&adds.sd_ret), -EDEADLK);
		assert_int_equal(atomic_load(&adds.manual_ret), 1);
		assert_int_equal(pstats(adds.p).nr_sources, 2);
		/* Outside the callbacks they work. */
		assert_int_equal(rcl_pressure_add_psi(adds.p, adds.psi), 2);
		assert_int_equal(rcl_pressure_add_cgroup(adds.p, adds.cgdir, 0), 3);
		assert_int_equal(rcl_pressure_free(adds.p), 0);
	}
	tc_destroy(&c);
	assert_int_equal(rcl_domain_free(d), 0);
	rcl_fake_clock_free(fc);
	tmpdir_rm(tmp);
}

/*
 * A callback of monitor A's action may act with another monitor B (its
 * own domain): B's action ends, and A's callback is still inside A's
 * action, so A's free and stop are still refused.
 */
static struct {
	struct rcl_pressure *a, *b;
	int src_b;
	atomic_int calls, notify_b, free_a, stop_a;
} nest;

static void nest_evict(struct tcache *c)
{
	(void)c;
	if (atomic_fetch_add(&nest.calls, 1))
		return;
	atomic_store(&nest.notify_b,
		     rcl_pressure_notify(nest.b, nest.src_b, RCL_PRESSURE_SEVERE));
	atomic_store(&nest.free_a, rcl_pressure_free(nest.a));
	atomic_store(&nest.stop_a, rcl_pressure_stop(nest.a));
}

static void test_pressure_nested_action_keeps_the_refusal(void **state)
{
	struct fx2 t;

	(void)state;
	fx2_init(&t);
	nest.a = t.f.p;
	nest.b = t.b;
	nest.src_b = t.src_b;
	atomic_store(&nest.calls, 0);
	atomic_store(&nest.notify_b, 1);
	atomic_store(&nest.free_a, 1);
	atomic_store(&nest.stop_a, 1);
	/* Only A's domain's evictions call back (B's cache shares tc_evict). */
	atomic_store(&evict_hook, nest_evict);
	assert_int_equal(rcl_pressure_notify(t.f.p, t.src_a, RCL_PRESSURE_MODERATE), 0);
	atomic_store(&evict_hook, NULL);
	assert_int_equal(atomic_load(&nest.notify_b), 0);
	assert_int_equal(sinfo(nest.b, nest.src_b).actions, 1);
	assert_int_equal(atomic_load(&nest.free_a), -EDEADLK);
	assert_int_equal(atomic_load(&nest.stop_a), -EDEADLK);
	assert_int_equal(sinfo(t.f.p, t.src_a).actions, 1);
	fx2_fini(&t);
}

/*
 * Three deep: A's action evicts from A's domain, whose callback acts with
 * B (allowed: another domain's tree), and B's action evicts from B's
 * domain, whose callback calls back into A.  A is still acting (it holds
 * its action lock, outside B's action): every call on A that takes that
 * lock, or frees A, is refused (-EDEADLK), not only those of the innermost
 * monitor.  Before, only B counted as acting there: rcl_pressure_add_psi(A)
 * waited for ever for A's own lock, and rcl_pressure_free(A) freed A under
 * its running action.  A's action runs in a helper thread, waited for with
 * a bound, so that a deadlock fails the test instead of hanging it.
 */
static struct {
	struct rcl_pressure *a, *b;
	struct tcache *ca, *cb;
	int src_a, src_b;
	char psi[PATH_MAX], cgdir[PATH_MAX];
	atomic_int stage;		/* 1: in A's callback; 2: in B's */
	atomic_int notify_b, psi_a, cg_a, sd_a, notify_a, dispatch_a;
	atomic_int stop_a, free_a, manual_a;
	atomic_int done;
} deep;

static void deep_evict(struct tcache *c)
{
	if (c == deep.ca) {
		int zero = 0;

		if (!atomic_compare_exchange_strong(&deep.stage, &zero, 1))
			return;
		atomic_store(&deep.notify_b,
			     rcl_pressure_notify(deep.b, deep.src_b,
						 RCL_PRESSURE_SEVERE));
	} else if (c == deep.cb) {
		int one = 1;

		if (!atomic_compare_exchange_strong(&deep.stage, &one, 2))
			return;
		/* The ones that take A's action lock first, free last. */
		atomic_store(&deep.psi_a, rcl_pressure_add_psi(deep.a, deep.psi));
		atomic_store(&deep.cg_a,
			     rcl_pressure_add_cgroup(deep.a, deep.cgdir, 0));
		atomic_store(&deep.sd_a,
			     rcl_pressure_add_systemd(deep.a, "/dev/null", NULL));
		atomic_store(&deep.notify_a,
			     rcl_pressure_notify(deep.a, deep.src_a,
						 RCL_PRESSURE_CRITICAL));
		atomic_store(&deep.dispatch_a, rcl_pressure_dispatch(deep.a));
		atomic_store(&deep.stop_a, rcl_pressure_stop(deep.a));
		atomic_store(&deep.free_a, rcl_pressure_free(deep.a));
		/* Only p->lock: fine. */
		atomic_store(&deep.manual_a, rcl_pressure_add_manual(deep.a));
	}
}

static void *deep_notify_main(void *arg)
{
	(void)arg;
	T_EQ(rcl_pressure_notify(deep.a, deep.src_a, RCL_PRESSURE_MODERATE), 0);
	atomic_store(&deep.done, 1);
	return NULL;
}

static void test_pressure_callback_of_a_nested_action_refuses_the_outer(void **state)
{
	struct cg cg;
	pthread_t th;
	struct fx2 t;

	(void)state;
	fx2_init(&t);
	deep.a = t.f.p;
	deep.src_a = t.src_a;
	deep.b = t.b;
	deep.src_b = t.src_b;
	put_psi(t.f.tmp, "psi", 0, 0);
	path_of(deep.psi, sizeof(deep.psi), t.f.tmp, "psi");
	cg_init(&cg, &t.f, "cg", 2, 1);
	cg_write(&cg);
	snprintf(deep.cgdir, sizeof(deep.cgdir), "%s", cg.dir);
	deep.ca = &t.f.c;
	deep.cb = &t.cb;
	atomic_store(&deep.stage, 0);
	atomic_store(&deep.notify_b, 1);
	atomic_store(&deep.psi_a, 1);
	atomic_store(&deep.cg_a, 1);
	atomic_store(&deep.sd_a, 1);
	atomic_store(&deep.notify_a, 1);
	atomic_store(&deep.dispatch_a, 1);
	atomic_store(&deep.stop_a, 1);
	atomic_store(&deep.free_a, 1);
	atomic_store(&deep.manual_a, -1);
	atomic_store(&deep.done, 0);
	atomic_store(&evict_hook, deep_evict);
	assert_int_equal(pthread_create(&th, NULL, deep_notify_main, NULL), 0);
	if (!wait_flag(&deep.done, 10000))
		fail_msg("a call on A from B's callback inside A's action "
			 "deadlocked (stage %d, add_psi %d, add_cgroup %d, "
			 "add_systemd %d)", atomic_load(&deep.stage),
			 atomic_load(&deep.psi_a), atomic_load(&deep.cg_a),
			 atomic_load(&deep.sd_a));
	assert_int_equal(pthread_join(th, NULL), 0);
	atomic_store(&evict_hook, NULL);
	assert_int_equal(atomic_load(&deep.stage), 2);
	assert_int_equal(atomic_load(&deep.notify_b), 0);
	assert_int_equal(atomic_load(&deep.psi_a), -EDEADLK);
	assert_int_equal(atomic_load(&deep.cg_a), -EDEADLK);
	assert_int_equal(atomic_load(&deep.sd_a), -EDEADLK);
	assert_int_equal(atomic_load(&deep.notify_a), -EDEADLK);
	assert_int_equal(atomic_load(&deep.dispatch_a), -EDEADLK);
	assert_int_equal(atomic_load(&deep.stop_a), -EDEADLK);
	assert_int_equal(atomic_load(&deep.free_a), -EDEADLK);
	assert_int_equal(atomic_load(&deep.manual_a), 1);
	/* Both monitors acted once and work on. */
	assert_int_equal(sinfo(t.f.p, deep.src_a).actions, 1);
	assert_int_equal(sinfo(deep.b, deep.src_b).actions, 1);
	assert_int_equal(pstats(t.f.p).nr_sources, 2);
	assert_int_equal(rcl_pressure_add_psi(t.f.p, deep.psi), 2);
	fx2_fini(&t);
}

/*
 * Two monitors of two domains, two threads: A's action (thread 1) evicts
 * from A's domain, whose callback calls into B, while B's action (thread
 * 2) evicts from B's domain, whose callback calls into A.  Each thread
 * holds its own monitor's action lock and asks for the other's: before,
 * both waited for ever.  From a callback the calls only try the lock:
 * both are refused with -EBUSY (nothing done), and both actions finish.
 * Each callback waits, with a bound, until the other thread is in its
 * callback too, so that the overlap is certain; the main thread waits for
 * both with a bound, so that a deadlock fails the test instead of hanging.
 */
static struct {
	struct rcl_pressure *a, *b;
	struct tcache *ca, *cb;
	int src_a, src_b;
	atomic_int in_a, in_b, tried_a, tried_b;
	atomic_int notify_b, dispatch_b, notify_a, dispatch_a;
	atomic_int done_a, done_b;
} cross;

static void cross_evict(struct tcache *c)
{
	int zero = 0;

	if (c == cross.ca) {
		if (!atomic_compare_exchange_strong(&cross.in_a, &zero, 1))
			return;
		if (!wait_flag(&cross.in_b, 10000))
			return;
		atomic_store(&cross.notify_b,
			     rcl_pressure_notify(cross.b, cross.src_b,
						 RCL_PRESSURE_CRITICAL));
		atomic_store(&cross.dispatch_b, rcl_pressure_dispatch(cross.b));
		atomic_store(&cross.tried_a, 1);
		wait_flag(&cross.tried_b, 10000);
	} else if (c == cross.cb) {
		if (!atomic_compare_exchange_strong(&cross.in_b, &zero, 1))
			return;
		if (!wait_flag(&cross.in_a, 10000))
			return;
		atomic_store(&cross.notify_a,
			     rcl_pressure_notify(cross.a, cross.src_a,
						 RCL_PRESSURE_CRITICAL));
		atomic_store(&cross.dispatch_a, rcl_pressure_dispatch(cross.a));
		atomic_store(&cross.tried_b, 1);
		wait_flag(&cross.tried_a, 10000);
	}
}

static void *cross_a_main(void *arg)
{
	(void)arg;
	T_EQ(rcl_pressure_notify(cross.a, cross.src_a, RCL_PRESSURE_MODERATE), 0);
	atomic_store(&cross.done_a, 1);
	return NULL;
}

static void *cross_b_main(void *arg)
{
	(void)arg;
	T_EQ(rcl_pressure_notify(cross.b, cross.src_b, RCL_PRESSURE_SEVERE), 0);
	atomic_store(&cross.done_b, 1);
	return NULL;
}

static void test_pressure_two_monitors_calling_each_other_do_not_deadlock(void **state)
{
	pthread_t ta, tb;
	struct fx2 t;

	(void)state;
	fx2_init(&t);
	cross.a = t.f.p;
	cross.src_a = t.src_a;
	cross.b = t.b;
	cross.src_b = t.src_b;
	cross.ca = &t.f.c;
	cross.cb = &t.cb;
	atomic_store(&cross.in_a, 0);
	atomic_store(&cross.in_b, 0);
	atomic_store(&cross.tried_a, 0);
	atomic_store(&cross.tried_b, 0);
	atomic_store(&cross.notify_a, 1);
	atomic_store(&cross.notify_b, 1);
	atomic_store(&cross.dispatch_a, 1);
	atomic_store(&cross.dispatch_b, 1);
	atomic_store(&cross.done_a, 0);
	atomic_store(&cross.done_b, 0);
	atomic_store(&evict_hook, cross_evict);
	assert_int_equal(pthread_create(&ta, NULL, cross_a_main, NULL), 0);
	assert_int_equal(pthread_create(&tb, NULL, cross_b_main, NULL), 0);
	if (!wait_flag(&cross.done_a, 30000) ||
	    !wait_flag(&cross.done_b, 30000))
		fail_msg("two monitors' actions calling into each other "
			 "deadlocked (in A %d, in B %d, A tried %d, B tried %d)",
			 atomic_load(&cross.in_a), atomic_load(&cross.in_b),
			 atomic_load(&cross.tried_a),
			 atomic_load(&cross.tried_b));
	assert_int_equal(pthread_join(ta, NULL), 0);
	assert_int_equal(pthread_join(tb, NULL), 0);
	atomic_store(&evict_hook, NULL);
	/* Both callbacks ran, each while the other thread acted. */
	assert_int_equal(atomic_load(&cross.tried_a), 1);
	assert_int_equal(atomic_load(&cross.tried_b), 1);
	assert_int_equal(atomic_load(&cross.notify_b), -EBUSY);
	assert_int_equal(atomic_load(&cross.dispatch_b), -EBUSY);
	assert_int_equal(atomic_load(&cross.notify_a), -EBUSY);
	assert_int_equal(atomic_load(&cross.dispatch_a), -EBUSY);
	/* Nothing recorded by the refused calls: each acted once, and works on. */
	assert_int_equal(sinfo(t.f.p, cross.src_a).actions, 1);
	assert_int_equal(sinfo(cross.b, cross.src_b).actions, 1);
	assert_int_equal(sinfo(t.f.p, cross.src_a).events, 1);
	assert_int_equal(sinfo(cross.b, cross.src_b).events, 1);
	assert_true(rcl_pressure_dispatch(t.f.p) >= 0);
	assert_true(rcl_pressure_dispatch(cross.b) >= 0);
	fx2_fini(&t);
}

/*
 * The fixture of the two tests below: monitor A (a manual source) on a
 * domain whose one shrinker, on its first scan (inside A's action), calls
 * rcl_lruvec_del_wait() on the node of a standalone lruvec, whose evict
 * callback (the test's) another thread's rcl_lruvec_shrink_inactive() runs
 * with the node isolated.
 */
static struct {
	struct rcl_pressure *a;
	int src;
	struct rcl_domain *d;
	struct rcl_shrinker *sh;
	struct rcl_lruvec lv;
	struct rcl_lru_node node;
	atomic_ulong pool;
	atomic_int in_scan, del_ret, in_evict;
	atomic_int notify_ret, done1, done2;		/* first test */
	atomic_int go_stop, stop_ret, stop_done;	/* second test */
	atomic_int w_in_gate, gate_open, x_done, x_ret;
} dw;

static unsigned long dw_count(struct rcl_shrinker *s,
			      struct rcl_shrink_control *sc)
{
	(void)s;
	(void)sc;
	return atomic_load(&dw.pool);
}

static unsigned long dw_scan(struct rcl_shrinker *s,
			     struct rcl_shrink_control *sc)
{
	unsigned long n = sc->nr_to_scan, have = atomic_load(&dw.pool);

	(void)s;
	if (!atomic_exchange(&dw.in_scan, 1))	/* inside A's action */
		atomic_store(&dw.del_ret, rcl_lruvec_del_wait(&dw.lv, &dw.node));
	if (n > have)
		n = have;
	atomic_fetch_sub(&dw.pool, n);
	(void)rcl_domain_uncharge(dw.d, n);
	sc->nr_scanned = n;
	return n;
}

static void *dw_shrink_main(void *arg)
{
	struct rcl_lru_shrink_control sc = { .type = RCL_LRU_FILE,
					     .nr_to_scan = 1,
					     .priority = 12,
					     .context = RCL_CTX_CAPABLE };

	(void)arg;
	T_EQ(rcl_lruvec_shrink_inactive(&dw.lv, &sc), 0);
	atomic_store(&dw.done2, 1);
	return NULL;
}

static void dw_init(const struct rcl_lruvec_ops *lops,
		    const struct rcl_clock *clock)
{
	static const struct rcl_shrinker_ops sops = {
		.count_objects = dw_count, .scan_objects = dw_scan
	};
	struct rcl_domain_config dc = { .budget = 1000,
					.allocator = &test_allocator };
	struct rcl_lruvec_config lc = { .ops = lops };
	struct rcl_shrinker_config shc = { .ops = &sops, .name = "pool",
					   .seeks = RCL_DEFAULT_SEEKS };
	struct rcl_pressure_config pc = { 0 };

	memset(&dw, 0, sizeof(dw));
	atomic_store(&dw.pool, 400);
	atomic_store(&dw.del_ret, 1);
	atomic_store(&dw.notify_ret, 1);
	atomic_store(&dw.stop_ret, 1);
	atomic_store(&dw.x_ret, 1);
	assert_int_equal(rcl_domain_new(&dc, &dw.d), 0);
	assert_int_equal(rcl_shrinker_new(rcl_domain_registry(dw.d), &shc,
					  &dw.sh), 0);
	assert_int_equal(rcl_shrinker_register(dw.sh), 0);
	assert_int_equal(rcl_domain_charge(dw.d, 400, 0, NULL), 0);
	pc.domain = dw.d;
	pc.clock = clock;
	pc.flags = RCL_PRESSURE_NO_TRIM;
	pc.allocator = &test_allocator;
	assert_int_equal(rcl_pressure_new(&pc, &dw.a), 0);
	dw.src = rcl_pressure_add_manual(dw.a);
	assert_true(dw.src >= 0);
	assert_int_equal(rcl_lruvec_init(&dw.lv, &lc), 0);
	rcl_lru_node_init(&dw.node);
	assert_int_equal(rcl_lruvec_add(&dw.lv, &dw.node, RCL_LRU_FILE, 1,
					RCL_LRU_ADD_NOBATCH), 0);
}

static void dw_fini(void)
{
	assert_int_equal(rcl_pressure_free(dw.a), 0);
	assert_int_equal(rcl_lruvec_destroy(&dw.lv), 0);
	assert_int_equal(rcl_shrinker_free(dw.sh), 0);
	assert_int_equal(rcl_domain_free(dw.d), 0);
}

/*
 * An evict callback of a shrink the application runs itself (no domain
 * pass, no monitor's action) is a callback too: it holds its isolated
 * nodes.  Thread 2 shrinks the standalone lruvec; its evict callback calls
 * rcl_pressure_notify(A) while thread 1 is inside A's action, in the
 * shrinker that waits in rcl_lruvec_del_wait() for the node thread 2 holds.
 * Before, the notify waited for A's action lock and the del_wait for the
 * putback: both for ever (a review's reproducer).  Now the notify only
 * tries the lock: -EBUSY, nothing done, and both threads finish.
 */
static enum rcl_evict_status ecb_evict(struct rcl_lru_node *n,
				       struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	atomic_store(&dw.in_evict, 1);
	if (wait_flag(&dw.in_scan, 10000))
		atomic_store(&dw.notify_ret,
			     rcl_pressure_notify(dw.a, dw.src,
						 RCL_PRESSURE_MODERATE));
	return RCL_EVICT_BUSY;	/* kept: put back */
}

static void *ecb_notify_main(void *arg)
{
	(void)arg;
	T_EQ(rcl_pressure_notify(dw.a, dw.src, RCL_PRESSURE_CRITICAL), 0);
	atomic_store(&dw.done1, 1);
	return NULL;
}

static void test_pressure_evict_callback_of_a_direct_shrink_does_not_deadlock(void **state)
{
	static const struct rcl_lruvec_ops lops = { .evict = ecb_evict };
	pthread_t t1, t2;

	(void)state;
	dw_init(&lops, NULL);
	assert_int_equal(pthread_create(&t2, NULL, dw_shrink_main, NULL), 0);
	assert_true(wait_flag(&dw.in_evict, 10000));	/* the node is isolated */
	assert_int_equal(pthread_create(&t1, NULL, ecb_notify_main, NULL), 0);
	if (!wait_flag(&dw.done1, 30000) || !wait_flag(&dw.done2, 30000))
		fail_msg("an evict callback's notify and an action's del_wait "
			 "deadlocked (in scan %d, notify %d)",
			 atomic_load(&dw.in_scan), atomic_load(&dw.notify_ret));
	assert_int_equal(pthread_join(t1, NULL), 0);
	assert_int_equal(pthread_join(t2, NULL), 0);
	/* The callback's notify was refused; the del_wait had its node. */
	assert_int_equal(atomic_load(&dw.notify_ret), -EBUSY);
	assert_int_equal(atomic_load(&dw.del_ret), 0);
	assert_int_equal(sinfo(dw.a, dw.src).events, 1);
	assert_int_equal(sinfo(dw.a, dw.src).actions, 1);
	dw_fini();
}

/*
 * A stop from a callback, while an ordinary caller X and the library thread
 * both wait for the action lock that the stop holds for a moment.  Before,
 * unlocking it handed it to X, whose action waited in rcl_lruvec_del_wait()
 * for the node the stopping callback held, while the library thread waited
 * for X and the stop joined the library thread: all three for ever (a
 * review's reproducer).  Now the library thread's wait for the action lock
 * ends when the stop is set.  The stopping thread S shrinks the standalone
 * lruvec and stops the monitor from its evict callback; a fourth thread W
 * holds the monitor's mutex inside the monitor's clock (a gate), so that S
 * holds the action lock while X and the library thread queue on it.  The
 * sleeps only make that interleaving likely; nothing asserted depends on
 * them (if S comes late and finds the lock taken, its stop is refused).
 */
static _Thread_local bool sj_gated;

static uint64_t sj_now(void *ctx)
{
	const struct rcl_clock *m = rcl_clock_monotonic();

	(void)ctx;
	if (sj_gated && !atomic_load(&dw.gate_open)) {
		atomic_store(&dw.w_in_gate, 1);	/* the monitor's mutex held */
		(void)wait_flag(&dw.gate_open, 20000);
	}
	return m->now(m->ctx);
}

static int sj_wait(void *ctx, pthread_cond_t *c, pthread_mutex_t *mu,
		   uint64_t deadline)
{
	const struct rcl_clock *m = rcl_clock_monotonic();

	(void)ctx;
	return m->wait(m->ctx, c, mu, deadline);
}

static enum rcl_evict_status sj_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	atomic_store(&dw.in_evict, 1);
	(void)wait_flag(&dw.go_stop, 20000);
	atomic_store(&dw.stop_ret, rcl_pressure_stop(dw.a));
	atomic_store(&dw.stop_done, 1);
	return RCL_EVICT_BUSY;	/* kept: put back */
}

static void *sj_gate_main(void *arg)
{
	(void)arg;
	sj_gated = true;
	T_EQ(rcl_pressure_add_manual(dw.a) >= 0, 1);
	return NULL;
}

static void *sj_notify_main(void *arg)
{
	(void)arg;
	atomic_store(&dw.x_ret,
		     rcl_pressure_notify(dw.a, dw.src, RCL_PRESSURE_CRITICAL));
	atomic_store(&dw.x_done, 1);
	return NULL;
}

static void test_pressure_stop_from_a_callback_does_not_wait_for_a_queued_action(void **state)
{
	static const struct rcl_lruvec_ops lops = { .evict = sj_evict };
	static const struct rcl_clock gclock = { sj_now, sj_wait, NULL };
	struct timespec ms50 = { 0, 50000000 }, ms1500 = { 1, 500000000 };
	pthread_t ts, tw, tx;
	int stop_ret;

	(void)state;
	dw_init(&lops, &gclock);
	assert_int_equal(rcl_pressure_start(dw.a), 0);
	/* S: its evict callback holds the node. */
	assert_int_equal(pthread_create(&ts, NULL, dw_shrink_main, NULL), 0);
	assert_true(wait_flag(&dw.in_evict, 10000));
	/* W: holds the monitor's mutex inside the clock. */
	assert_int_equal(pthread_create(&tw, NULL, sj_gate_main, NULL), 0);
	assert_true(wait_flag(&dw.w_in_gate, 10000));
	/* S: takes the action lock, then waits for the mutex. */
	atomic_store(&dw.go_stop, 1);
	nanosleep(&ms50, NULL);
	/* X queues on the action lock; the thread's 1 s wait ends, it too. */
	assert_int_equal(pthread_create(&tx, NULL, sj_notify_main, NULL), 0);
	nanosleep(&ms1500, NULL);
	atomic_store(&dw.gate_open, 1);
	if (!wait_flag(&dw.stop_done, 20000) || !wait_flag(&dw.x_done, 20000))
		fail_msg("a stop from a callback, a queued notify and the "
			 "library thread deadlocked (stop returned %d, notify "
			 "returned %d, notify's action in del_wait %d)",
			 atomic_load(&dw.stop_done), atomic_load(&dw.x_done),
			 atomic_load(&dw.in_scan) &&
				 atomic_load(&dw.del_ret) == 1);
	assert_int_equal(pthread_join(ts, NULL), 0);
	assert_int_equal(pthread_join(tw, NULL), 0);
	assert_int_equal(pthread_join(tx, NULL), 0);
	assert_int_equal(atomic_load(&dw.x_ret), 0);
	assert_int_equal(atomic_load(&dw.del_ret), 0);
	stop_ret = atomic_load(&dw.stop_ret);
	assert_true(stop_ret == 0 || stop_ret == -EBUSY);
	/* Stopped (or, refused, still running): stop from here ends it. */
	assert_int_equal(rcl_pressure_start(dw.a), stop_ret ? -EBUSY : 0);
	assert_int_equal(rcl_pressure_stop(dw.a), 0);
	dw_fini();
}

/*
 * The fixture of the next two tests: a notify in a helper thread whose
 * action waits in an evict callback (holding the monitor's action lock)
 * until ha.release is set.
 */
static struct {
	struct rcl_domain *d;
	struct rcl_lruvec lv;
	struct rcl_lru_node nodes[200];
	struct rcl_pressure *p;
	int src;
	pthread_t notifier;
	atomic_int in_cb, release, refusals, dispatching;
} ha;

static enum rcl_evict_status ha_evict(struct rcl_lru_node *n,
				      struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	atomic_store(&ha.in_cb, 1);
	(void)wait_flag(&ha.release, 20000);
	rcl_domain_uncharge(ha.d, 1);
	return RCL_EVICT_FREED;
}

static void *ha_notify_main(void *arg)
{
	(void)arg;
	T_EQ(rcl_pressure_notify(ha.p, ha.src, RCL_PRESSURE_CRITICAL), 0);
	return NULL;
}

static void ha_init(void)
{
	static const struct rcl_lruvec_ops ops = { .evict = ha_evict };
	struct rcl_lruvec_config lc = { .ops = &ops };
	struct rcl_domain_config cfg = { .budget = 256 };
	struct rcl_pressure_config pc = { 0 };
	int i;

	memset(&ha, 0, sizeof(ha));
	assert_int_equal(rcl_domain_new(&cfg, &ha.d), 0);
	assert_int_equal(rcl_lruvec_init(&ha.lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(ha.d, &ha.lv, 0), 0);
	for (i = 0; i < 200; i++) {
		rcl_lru_node_init(&ha.nodes[i]);
		assert_int_equal(rcl_lruvec_add(&ha.lv, &ha.nodes[i],
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_domain_charge(ha.d, 1, 0, NULL), 0);
	}
	pc.domain = ha.d;
	pc.flags = RCL_PRESSURE_NO_TRIM;
	assert_int_equal(rcl_pressure_new(&pc, &ha.p), 0);
	ha.src = rcl_pressure_add_manual(ha.p);
	assert_true(ha.src >= 0);
	assert_int_equal(pthread_create(&ha.notifier, NULL, ha_notify_main,
					NULL), 0);
	assert_true(wait_flag(&ha.in_cb, 10000));	/* the action lock held */
}

static void ha_fini(void)
{
	atomic_store(&ha.release, 1);
	assert_int_equal(pthread_join(ha.notifier, NULL), 0);
	assert_int_equal(rcl_pressure_free(ha.p), 0);
	assert_int_equal(rcl_domain_detach(ha.d, &ha.lv), 0);
	for (int i = 0; i < 200; i++)
		(void)rcl_lruvec_del(&ha.lv, &ha.nodes[i]);
	assert_int_equal(rcl_lruvec_destroy(&ha.lv), 0);
	assert_int_equal(rcl_domain_free(ha.d), 0);
}

/*
 * A plain stop while the library thread waits for the action lock: the
 * thread gives up its wait, and that is not a refusal (it reported "called
 * from a callback while another thread acts" to the refusal hook: a
 * review's reproducer).  The sleep only lets the thread's 1 s wait end, so
 * that it waits for the lock; nothing asserted depends on it.
 */
static void ha_hook(void *arg, const char *func, int err, const char *rule)
{
	(void)arg;
	(void)func;
	(void)err;
	(void)rule;
	atomic_fetch_add(&ha.refusals, 1);
}

static void test_pressure_stop_of_a_thread_waiting_to_act_is_no_refusal(void **state)
{
	const struct rcl_refusal_log log = { ha_hook, NULL };
	struct timespec ms1500 = { 1, 500000000 };

	(void)state;
	ha_init();
	assert_int_equal(rcl_set_refusal_log(&log), 0);
	assert_int_equal(rcl_pressure_start(ha.p), 0);
	nanosleep(&ms1500, NULL);
	assert_int_equal(rcl_pressure_stop(ha.p), 0);
	assert_int_equal(rcl_set_refusal_log(NULL), 0);
	assert_int_equal(atomic_load(&ha.refusals), 0);
	ha_fini();
}

/*
 * A child forked while a parent thread waits for the action lock frees its
 * copy of the monitor.  glibc's pthread_cond_destroy() in the child waited
 * for ever for that parent waiter (a review's reproducer).  The child now
 * leaves the condition as it is.  The sleep only lets the dispatcher reach
 * its wait; the child ends by its alarm if the free hangs.
 */
static void *ha_dispatch_main(void *arg)
{
	(void)arg;
	atomic_store(&ha.dispatching, 1);
	T_EQ(rcl_pressure_dispatch(ha.p) >= 0, 1);
	return NULL;
}

static void test_pressure_free_in_a_fork_child_while_the_parent_waits(void **state)
{
	struct timespec ms200 = { 0, 200000000 };
	pthread_t td;
	int st = 0;
	pid_t pid;

	(void)state;
	ha_init();
	assert_int_equal(pthread_create(&td, NULL, ha_dispatch_main, NULL), 0);
	assert_true(wait_flag(&ha.dispatching, 10000));
	nanosleep(&ms200, NULL);	/* it waits for the action lock */
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(20);
		_exit(rcl_pressure_free(ha.p) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	atomic_store(&ha.release, 1);
	assert_int_equal(pthread_join(td, NULL), 0);
	ASSERT_CHILD_EXITED_OK(st);
	ha_fini();
}

/*
 * The same from the library thread: its action's evict callbacks cannot
 * stop or free the monitor (the thread would join itself).  Real clock,
 * interval 5 ms: the thread's first tick reads a cgroup whose working set
 * is at 98 % of its limit and acts (CRITICAL), in the thread; this thread
 * only waits (bounded) for the callback to have run.
 */
static void test_pressure_thread_callbacks_cannot_stop(void **state)
{
	struct rcl_domain_config dc = { .budget = BUDGET };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_domain *d;
	struct rcl_pressure *p;
	struct tcache c;
	struct cg cg;
	char tmp[PATH_MAX];
	unsigned long spins;
	int src;

	(void)state;
	tmpdir_new(tmp, sizeof(tmp));
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	tc_init(&c, d, NOBJ, W);
	tc_fill(&c, FILL);
	cg_init_in(&cg, tmp, "cg", 2, d, 1);
	cg.max = 1000 * MB;
	cg.ws = 980 * MB;
	cg_write(&cg);
	pc.domain = d;
	pc.interval_ns = 5 * MS;
	pc.flags = RCL_PRESSURE_NO_TRIM;
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	src = rcl_pressure_add_cgroup(p, cg.dir, 0);
	assert_int_equal(src, 0);
	reentry_reset(p, src);
	atomic_store(&re.want_thread, true);
	atomic_store(&evict_hook, reentry_evict);
	assert_int_equal(rcl_pressure_start(p), 0);
	for (spins = 0; !atomic_load(&re.calls) && spins < 20000; spins++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	assert_int_equal(rcl_pressure_stop(p), 0);
	atomic_store(&evict_hook, NULL);
	/* A notify from the thread's callback: not a manual source. */
	assert_int_equal(atomic_load(&re.calls) > 0, 1);
	assert_int_equal(atomic_load(&re.free_ret), -EDEADLK);
	assert_int_equal(atomic_load(&re.stop_ret), -EDEADLK);
	assert_int_equal(atomic_load(&re.dispatch_ret), -EDEADLK);
	assert_int_equal(atomic_load(&re.notify_ret), -EDEADLK);
	assert_int_equal(atomic_load(&re.stats_ret), 0);
	assert_true(sinfo(p, src).actions >= 1);
	assert_int_equal(rcl_pressure_free(p), 0);
	tc_destroy(&c);
	assert_int_equal(rcl_domain_free(d), 0);
	tmpdir_rm(tmp);
}

/*
 * Two monitors' library threads, each inside an action of its own monitor,
 * stop each other from an evict callback.  Before, each joined the other's
 * thread, which was waiting to join it: both for ever (a review's
 * reproducer).  From a callback a stop now takes the monitor's action lock
 * with a try, so each is refused (-EBUSY, nothing done: both threads run
 * on), and the main thread stops both afterwards.  Real clock, interval
 * 5 ms, each monitor's cgroup at 98 % of its limit, as in the test above;
 * each callback waits (bounded) until the other thread is in its callback
 * too, so that the overlap is certain.
 */
static struct {
	struct rcl_pressure *p[2];
	struct tcache *c[2];
	pthread_t main_thread;
	atomic_int in[2], stopped[2], stop_ret[2];
} xs;

static void xstop_evict(struct tcache *c)
{
	int me = c == xs.c[1], zero = 0;

	if (pthread_equal(pthread_self(), xs.main_thread))
		return;
	if (!atomic_compare_exchange_strong(&xs.in[me], &zero, 1))
		return;
	if (!wait_flag(&xs.in[!me], 10000))
		return;
	atomic_store(&xs.stop_ret[me], rcl_pressure_stop(xs.p[!me]));
	atomic_store(&xs.stopped[me], 1);
	(void)wait_flag(&xs.stopped[!me], 10000);
}

static void test_pressure_threads_stopping_each_other_do_not_deadlock(void **state)
{
	struct rcl_domain_config dc = { .budget = BUDGET };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_domain *d[2];
	struct tcache c[2];
	struct cg cg[2];
	char tmp[PATH_MAX];
	int k;

	(void)state;
	tmpdir_new(tmp, sizeof(tmp));
	xs.main_thread = pthread_self();
	pc.interval_ns = 5 * MS;
	pc.flags = RCL_PRESSURE_NO_TRIM;
	for (k = 0; k < 2; k++) {
		assert_int_equal(rcl_domain_new(&dc, &d[k]), 0);
		tc_init(&c[k], d[k], NOBJ, W);
		tc_fill(&c[k], FILL);
		cg_init_in(&cg[k], tmp, k ? "cgB" : "cgA", 2, d[k], 1);
		cg[k].max = 1000 * MB;
		cg[k].ws = 980 * MB;
		cg_write(&cg[k]);
		pc.domain = d[k];
		assert_int_equal(rcl_pressure_new(&pc, &xs.p[k]), 0);
		assert_int_equal(rcl_pressure_add_cgroup(xs.p[k], cg[k].dir, 0), 0);
		xs.c[k] = &c[k];
		atomic_store(&xs.in[k], 0);
		atomic_store(&xs.stopped[k], 0);
		atomic_store(&xs.stop_ret[k], 1);
	}
	atomic_store(&evict_hook, xstop_evict);
	assert_int_equal(rcl_pressure_start(xs.p[0]), 0);
	assert_int_equal(rcl_pressure_start(xs.p[1]), 0);
	if (!wait_flag(&xs.stopped[0], 30000) ||
	    !wait_flag(&xs.stopped[1], 30000))
		fail_msg("two library threads stopping each other's monitor "
			 "deadlocked (in A %d, in B %d)", atomic_load(&xs.in[0]),
			 atomic_load(&xs.in[1]));
	assert_int_equal(atomic_load(&xs.stop_ret[0]), -EBUSY);
	assert_int_equal(atomic_load(&xs.stop_ret[1]), -EBUSY);
	/* Nothing done: both threads still run, and stop from here. */
	assert_int_equal(rcl_pressure_start(xs.p[0]), -EBUSY);
	assert_int_equal(rcl_pressure_start(xs.p[1]), -EBUSY);
	assert_int_equal(rcl_pressure_stop(xs.p[0]), 0);
	assert_int_equal(rcl_pressure_stop(xs.p[1]), 0);
	atomic_store(&evict_hook, NULL);
	for (k = 0; k < 2; k++) {
		assert_int_equal(rcl_pressure_free(xs.p[k]), 0);
		tc_destroy(&c[k]);
		assert_int_equal(rcl_domain_free(d[k]), 0);
	}
	tmpdir_rm(tmp);
}

/* ------------------------------------------------------------------------- */
/* 5. cgroup sources                                                          */
/* ------------------------------------------------------------------------- */

/*
 * One interval: rewrite @c's files (from the domain's usage now), advance
 * to the next tick, dispatch; @n actions at @level (the budget then
 * follows from the usage before them).
 */
static void cg_tick(struct fx *f, struct cg *c, int n,
		    enum rcl_pressure_level level, uint64_t floor)
{
	uint64_t before;

	if (c)
		cg_write(c);
	before = usage(f);
	adv(f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f->p), n);
	if (n) {
		uint64_t b = doc_target(before, level, floor);

		assert_budget(f, b);
		assert_true(usage(f) + doc_high(b) <= b);
	}
}

static void test_pressure_cgroup_version_detection(void **state)
{
	struct fx f;
	struct cg v1, v2;
	struct rcl_pressure_source_info si;
	char empty[PATH_MAX], plain[PATH_MAX];

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	cg_init(&v2, &f, "v2", 2, 1);
	v2.max = 1000 * MB;
	v2.ws = 100 * MB;
	cg_write(&v2);
	cg_init(&v1, &f, "v1", 1, 1);
	v1.max = 1000 * MB;
	v1.ws = 100 * MB;
	cg_write(&v1);
	make_subdir(empty, sizeof(empty), f.tmp, "empty");
	put_file(f.tmp, "plain", "x\n");
	path_of(plain, sizeof(plain), f.tmp, "plain");

	assert_int_equal(rcl_pressure_add_cgroup(f.p, empty, 0), -ENOENT);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, "/nonexistent-rcl-test/x", 0),
			 -ENOENT);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, plain, 0), -ENOTDIR);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, v2.dir, 1), -ENOENT);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, v1.dir, 2), -ENOENT);
	assert_int_equal(pstats(f.p).nr_sources, 0);

	/* Version 0: memory.current is v2. */
	assert_int_equal(rcl_pressure_add_cgroup(f.p, v2.dir, 0), 0);
	si = sinfo(f.p, 0);
	assert_int_equal(si.mode, RCL_PSOURCE_CGROUP_V2);
	assert_string_equal(si.path, v2.dir);
	assert_int_equal(si.level, RCL_PRESSURE_NONE);
	assert_int_equal(si.actions, 0);
	assert_int_equal(pstats(f.p).read_errors, 0);
	/* One cgroup source per monitor. */
	assert_int_equal(rcl_pressure_add_cgroup(f.p, v1.dir, 0), -EEXIST);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, v2.dir, 2), -EEXIST);
	assert_int_equal(pstats(f.p).nr_sources, 1);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* Version 0: memory.usage_in_bytes is v1. */
	fx_monitor(&f);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, v1.dir, 0), 0);
	si = sinfo(f.p, 0);
	assert_int_equal(si.mode, RCL_PSOURCE_CGROUP_V1);	/* not cgroupfs */
	assert_string_equal(si.path, v1.dir);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* Versions given. */
	fx_monitor(&f);
	assert_int_equal(rcl_pressure_add_manual(f.p), 0);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, v1.dir, 1), 1);
	assert_int_equal(sinfo(f.p, 1).mode, RCL_PSOURCE_CGROUP_V1);
	assert_int_equal(rcl_pressure_free(f.p), 0);
	fx_monitor(&f);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, v2.dir, 2), 0);
	assert_int_equal(sinfo(f.p, 0).mode, RCL_PSOURCE_CGROUP_V2);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/*
 * v2 working-set ratios against memory.max, then against memory.high when
 * it is lower: 90 % MODERATE, 95 % SEVERE, 98 % CRITICAL (no
 * FOLLOW_CGROUP: levels only).
 */
static void test_pressure_cgroup_v2_ratio_levels(void **state)
{
	struct fx f;
	struct cg c;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	cg_init(&c, &f, "cg", 2, 1);
	c.max = 1000 * MB;
	c.inactive = 100 * MB;
	c.ws = 900 * MB - 1;
	cg_write(&c);
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	assert_int_equal(src, 0);

	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);		/* 89.99 % */
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	assert_int_equal(rcl_domain_budget(f.d), BUDGET);
	c.ws = 900 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_MODERATE, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_MODERATE);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_MODERATE);
	c.ws = 950 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	c.ws = 980 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_CRITICAL, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_CRITICAL);
	c.ws = 980 * MB - 1;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	/* memory.high below memory.max is the limit: 480 of 500 MB = 96 %. */
	c.high = 500 * MB;
	c.ws = 480 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	c.ws = 450 * MB - 1;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_NONE);
	/* No limit at all: no ratio. */
	c.high = UINT64_MAX;
	c.max = UINT64_MAX;
	c.ws = 2000 * MB;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(sinfo(f.p, src).actions, 5);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/*
 * memory.events: a rise of "high" is SEVERE, of "max", "oom" or
 * "oom_kill" CRITICAL; counters that stay or fall (a new cgroup) are none;
 * a file without oom_kill (older kernels) is no error.
 */
static void test_pressure_cgroup_v2_events(void **state)
{
	struct fx f;
	struct cg c;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	cg_init(&c, &f, "cg", 2, 1);
	c.max = 1000 * MB;
	c.ws = 100 * MB;
	c.ev_high = 7;
	c.ev_max = 3;
	cg_write(&c);
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);

	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);		/* baseline */
	c.ev_high++;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);		/* no rise */
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	c.ev_max++;
	cg_tick(&f, &c, 1, RCL_PRESSURE_CRITICAL, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_CRITICAL);
	c.ev_oom++;
	cg_tick(&f, &c, 1, RCL_PRESSURE_CRITICAL, FLOOR);
	c.ev_oom_kill++;
	cg_tick(&f, &c, 1, RCL_PRESSURE_CRITICAL, FLOOR);
	c.ev_high += 5;
	c.ev_max += 2;
	cg_tick(&f, &c, 1, RCL_PRESSURE_CRITICAL, FLOOR);	/* max wins */
	/* Counters that fall are no rise; the next rise counts from them. */
	c.ev_high = c.ev_max = c.ev_oom = c.ev_oom_kill = 0;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	c.ev_high = 1;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	/* No oom_kill line, nothing new: none, and no read error. */
	cg_write(&c);
	put_file(c.dir, "memory.events", "low 0\nhigh 1\nmax 0\noom 0\n");
	cg_tick(&f, NULL, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(sinfo(f.p, src).actions, 6);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/*
 * A v2 memory.events descriptor whose reads fail (its cgroup removed:
 * EPOLLERR | EPOLLPRI for ever, reads ENODEV; emulated through the seam,
 * whose reads fail with ESPIPE) is closed, with the errno in the source's
 * fallback_errno and a read error; the timer's reads go on.  It stayed in
 * the epoll set: the monitor's descriptor readable for ever and a tick
 * forced by every dispatch (a busy loop of the application's event loop
 * or of the library thread).
 */
static void test_pressure_cgroup_v2_events_fd_gone(void **state)
{
	struct fx f;
	struct cg c;
	unsigned fds;
	int src, i;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	cg_init(&c, &f, "cg", 2, 1);
	c.max = 1000 * MB;
	c.ws = 100 * MB;
	cg_write(&c);
	seam_on("memory.events", CGROUP2_MAGIC);
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	seam_off();
	assert_int_equal(src, 0);
	assert_int_equal(seam.nr, 1);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_CGROUP_V2);
	assert_false(fd_readable(f.p));

	seam_gone(0);
	assert_true(fd_readable(f.p));
	fds = fd_count();
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(pstats(f.p).read_errors, 1);
	assert_int_equal(sinfo(f.p, src).fallback_errno, ESPIPE);
	assert_int_equal(fd_count(), fds - 1);	/* closed */
	for (i = 0; i < 3; i++) {
		assert_false(fd_readable(f.p));
		assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	}
	assert_int_equal(pstats(f.p).read_errors, 1);
	/* The timer's reads go on: a working set at 95 % is SEVERE. */
	c.ws = 950 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_CGROUP_V2);
	seam_close_peers();
	fx_fini(&f);
}

/*
 * v1: memory.usage_in_bytes, memory.limit_in_bytes (9223372036854771712 is
 * "no limit"), memory.stat's total_inactive_file (not its inactive_file).
 */
static void test_pressure_cgroup_v1(void **state)
{
	struct fx f;
	struct cg c;
	struct rcl_memory_sample ms;
	struct rcl_pressure_stats st;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.flags = RCL_PRESSURE_FOLLOW_CGROUP;
	fx_monitor(&f);
	cg_init(&c, &f, "cg", 1, 1);
	c.ws = 900 * MB;
	c.inactive = 50 * MB;
	cg_write(&c);
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_CGROUP_V1);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_usage_bytes, 950 * MB);
	assert_int_equal(ms.cgroup_working_set_bytes, 900 * MB);
	assert_int_equal(ms.cgroup_limit_bytes, UINT64_MAX);
	/* No limit: no container budget, no level. */
	st = pstats(f.p);
	assert_int_equal(st.container_budget, UINT64_MAX);
	assert_int_equal(st.budget, BUDGET);
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, UINT64_MAX);
	assert_int_equal(rcl_domain_budget(f.d), BUDGET);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* Ratio levels against the v1 limit. */
	f.cfg.flags = 0;
	fx_monitor(&f);
	src = rcl_pressure_add_cgroup(f.p, c.dir, 1);
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	c.max = 1000 * MB;
	c.ws = 950 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	c.ws = 980 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_CRITICAL, FLOOR);
	c.ws = 900 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_MODERATE, FLOOR);
	c.ws = 899 * MB;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	c.max = V1_NO_LIMIT;
	c.ws = 2000 * MB;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(sinfo(f.p, src).actions, 3);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_working_set_bytes, 2000 * MB);
	assert_int_equal(ms.cgroup_limit_bytes, UINT64_MAX);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/* The v1 memory.pressure_level notifications, faked: cgroupfs v1 by the seam. */
static unsigned long seam_cgroup1(int fd)
{
	(void)fd;
	return 0x27e0ebul;	/* CGROUP1_MAGIC */
}

/*
 * A v1 cgroup source on a fake cgroupfs (the seam's filesystem check):
 * memory.pressure_level is a regular file, and the registrations the
 * monitor writes to cgroup.event_control, "<eventfd> <fd> low" and so on,
 * tell the test the eventfds to signal.  Returns the source; @efd gets the
 * low, medium and critical eventfds.
 */
static int v1_events_source(struct fx *f, struct cg *c, int efd[3])
{
	char path[PATH_MAX], buf[256];
	ssize_t n;
	int fd, file[3], src;

	put_file(c->dir, "memory.pressure_level", "%s", "");
	put_file(c->dir, "cgroup.event_control", "%s", "");
	rcl__pressure_seam.fs_magic = seam_cgroup1;
	src = rcl_pressure_add_cgroup(f->p, c->dir, 1);
	seam_off();
	assert_true(src >= 0);
	assert_int_equal(sinfo(f->p, src).mode, RCL_PSOURCE_CGROUP_V1_EVENTS);
	path_of(path, sizeof(path), c->dir, "cgroup.event_control");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	close(fd);
	/* Three writes at one offset's advance: no separator between them. */
	assert_int_equal(sscanf(buf, "%d %d low%d %d medium%d %d critical",
				&efd[0], &file[0], &efd[1], &file[1], &efd[2],
				&file[2]), 6);
	return src;
}

static void v1_signal(int efd)
{
	uint64_t one = 1;

	assert_int_equal(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
}

/*
 * v1: the limit is the lower of memory.limit_in_bytes and memory.stat's
 * hierarchical_memory_limit, the kernel's effective limit with the
 * ancestors' (a cgroup without a limit of its own under a limited parent
 * saw no limit); a memory.stat without that line (older kernels) leaves
 * the cgroup's own.  The levels use it.
 */
static void test_pressure_cgroup_v1_hierarchical_limit(void **state)
{
	struct fx f;
	struct cg c;
	struct rcl_memory_sample ms;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	cg_init(&c, &f, "cg", 1, 1);
	c.ws = 100 * MB;
	c.hier = 400 * MB;
	cg_write(&c);
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	assert_int_equal(src, 0);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_CGROUP_V1);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_limit_bytes, 400 * MB);
	/* The lower of the two. */
	c.max = 300 * MB;
	cg_write(&c);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_limit_bytes, 300 * MB);
	c.max = V1_NO_LIMIT;
	c.hier = V1_NO_LIMIT;
	cg_write(&c);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_limit_bytes, UINT64_MAX);
	/* No such line: the cgroup's own limit. */
	c.no_hier = true;
	c.max = 250 * MB;
	cg_write(&c);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_limit_bytes, 250 * MB);
	c.max = V1_NO_LIMIT;
	cg_write(&c);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_limit_bytes, UINT64_MAX);
	/* The ancestors' limit makes the level: 100 of 105 MB = 95 %. */
	c.no_hier = false;
	c.hier = 105 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/*
 * v1 "low" only says that the kernel reclaims in the cgroup: it counts
 * (MODERATE) only with the working set at 90 % of the limit or more.  In a
 * cgroup with no limit (v1's 2^63 rounded to a page) the working set is
 * at no share of it: "low" is dropped, as below 90 % (before, it was taken
 * as MODERATE and cut the cache to 7/8).  "medium" is SEVERE either way;
 * with a limit and the working set at 95 %, "low" is MODERATE.  No tick
 * runs (the fake clock stays before it): only the eventfds act.
 */
static void test_pressure_cgroup_v1_low_needs_a_limit(void **state)
{
	struct fx f;
	struct cg c;
	int efd[3], src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	fx_monitor(&f);
	cg_init(&c, &f, "cg", 1, 1);
	c.ws = 900 * MB;		/* no limit: V1_NO_LIMIT */
	cg_write(&c);
	src = v1_events_source(&f, &c, efd);
	v1_signal(efd[0]);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).actions, 0);
	assert_int_equal(sinfo(f.p, src).events, 0);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	assert_int_equal(rcl_domain_budget(f.d), BUDGET);
	assert_int_equal(usage(&f), FILL * W);
	/* The eventfds work: medium is SEVERE. */
	v1_signal(efd[1]);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(pstats(f.p).pressure_budget,
			 doc_target(FILL * W, RCL_PRESSURE_SEVERE, FLOOR));
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* A limit, the working set at 95 % of it: low is MODERATE. */
	f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	fx_monitor(&f);
	make_subdir(c.dir, sizeof(c.dir), f.tmp, "cg2");
	c.max = 1000 * MB;
	c.ws = 950 * MB;
	cg_write(&c);
	src = v1_events_source(&f, &c, efd);
	v1_signal(efd[0]);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_MODERATE);
	assert_int_equal(sinfo(f.p, src).actions, 1);
	fx_fini(&f);
}

/*
 * The budget that follows the container (bytes_per_unit 1000: the domain
 * counts kB), own usage 50 MB (50000 units), the rest of the cgroup's
 * working set 40 MB, cgroup_pct 90:
 *
 *	container = (limit x 90 / 100 - (ws - own x 1000)) / 1000
 *		  = (limit x 0.9 - 40 MB) / 1000
 *
 * 200 MB: 140000 (above base: the budget is base, 100000); 110 MB: 59000
 * at the next interval, at once; back to 200 MB: 5000 (5 % of base) more
 * per quiet interval, 64000 ... 99000, then 140000 (no longer binding).
 * memory.high below memory.max is the limit.  No limit: grows to base,
 * then none.  An interval with an action does not grow it.  The working
 * set stays under 90 % of the limit throughout: no ratio level.
 */
static void test_pressure_cgroup_budget_follows_the_limit(void **state)
{
	struct fx f;
	struct cg c;
	struct rcl_pressure_stats st;
	struct rcl_pressure_source_info si;
	uint64_t b;
	int src, man, i;

	(void)state;
	fx_init(&f, BUDGET, 500);
	f.cfg.flags = RCL_PRESSURE_FOLLOW_CGROUP | RCL_PRESSURE_NO_TRIM;
	f.cfg.bytes_per_unit = 1000;
	fx_monitor(&f);
	cg_init(&c, &f, "cg", 2, 1000);
	c.others = 40 * MB;
	c.inactive = 30 * MB;
	c.max = 200 * MB;
	cg_write(&c);
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	man = rcl_pressure_add_manual(f.p);
	st = pstats(f.p);
	assert_int_equal(st.container_budget, 140000);
	assert_int_equal(st.budget, BUDGET);
	assert_int_equal(rcl_domain_budget(f.d), BUDGET);

	/* A lower limit raises no event: it is read at the next interval. */
	c.max = 110 * MB;
	cg_write(&c);
	si = sinfo(f.p, src);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(pstats(f.p).container_budget, 140000);
	assert_int_equal(rcl_domain_budget(f.d), BUDGET);
	assert_int_equal(sinfo(f.p, src).events, si.events);
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, 59000);
	assert_budget(&f, 59000);
	assert_int_equal(usage(&f), 50000);

	/* Back to 200 MB: 5000 per quiet interval. */
	c.max = 200 * MB;
	for (b = 64000; b <= 99000; b += 5000) {
		cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
		assert_int_equal(pstats(f.p).container_budget, b);
		assert_budget(&f, b);
	}
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, 140000);
	assert_budget(&f, BUDGET);

	/* memory.high (105 MB) under memory.max is the limit: 54500. */
	c.high = 105 * MB;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, 54500);
	assert_budget(&f, 54500);
	/* No limit: grows by 5000 to base, then none. */
	c.high = c.max = UINT64_MAX;
	for (b = 59500; b <= 99500; b += 5000) {
		cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
		assert_int_equal(pstats(f.p).container_budget, b);
		assert_budget(&f, b);
	}
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, UINT64_MAX);
	assert_budget(&f, BUDGET);
	assert_int_equal(usage(&f), 50000);

	/* An action in an interval: the container does not grow at its end. */
	c.max = 110 * MB;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, 59000);
	c.max = 200 * MB;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, 64000);
	adv(&f, 500 * MS);
	notify_and_check(&f, man, RCL_PRESSURE_MODERATE, FLOOR);	/* 43750 */
	assert_int_equal(rcl_domain_budget(f.d), 43750);
	cg_write(&c);
	adv(&f, 500 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	st = pstats(f.p);
	assert_int_equal(st.container_budget, 64000);
	assert_int_equal(st.pressure_budget, 43750);
	assert_budget(&f, 43750);
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	st = pstats(f.p);
	assert_int_equal(st.container_budget, 69000);
	assert_int_equal(st.pressure_budget, 48750);
	assert_budget(&f, 48750);
	for (i = 0; i < 3; i++)
		cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_budget(&f, 63750);		/* pressure 48750 + 3 x 5000 */
	assert_int_equal(pstats(f.p).container_budget, 84000);
	assert_int_equal(sinfo(f.p, src).actions, 0);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/*
 * The floor is the pressure budget's, not the container's: a cgroup whose
 * limit leaves the cache less than the floor binds below it.  Base
 * 100000 (kB: bytes_per_unit 1000), the default floor 1562, the others'
 * working set 44 MB: a limit of 50 MB leaves (45 - 44) MB = 1000 units,
 * applied as such (before: the floor, 1562, above what the cgroup allows);
 * a limit of 40 MB leaves none: the budget is 1 (a budget of 0 would be
 * no limit for a child).  An action's target still stops at the floor.
 */
static void test_pressure_container_budget_binds_below_the_floor(void **state)
{
	struct fx f;
	struct cg c;
	struct rcl_pressure_stats st;
	int man;

	(void)state;
	fx_init(&f, BUDGET, 500);
	f.cfg.flags = RCL_PRESSURE_FOLLOW_CGROUP | RCL_PRESSURE_NO_TRIM;
	f.cfg.bytes_per_unit = 1000;
	fx_monitor(&f);
	man = rcl_pressure_add_manual(f.p);
	cg_init(&c, &f, "cg", 2, 1000);
	c.others = 44 * MB;
	c.max = 50 * MB;
	cg_write(&c);
	assert_true(rcl_pressure_add_cgroup(f.p, c.dir, 0) >= 0);
	st = pstats(f.p);
	assert_int_equal(st.container_budget, 1000);
	assert_budget(&f, 1000);
	assert_true(usage(&f) < FLOOR);
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, 1000);
	assert_budget(&f, 1000);
	/* No room at all: 1. */
	c.max = 40 * MB;
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).container_budget, 0);
	assert_int_equal(pstats(f.p).budget, 1);
	assert_int_equal(rcl_domain_budget(f.d), 1);
	assert_int_equal(usage(&f), 0);
	/* An action's target stops at the floor; the container binds. */
	assert_int_equal(rcl_pressure_notify(f.p, man, RCL_PRESSURE_CRITICAL), 0);
	st = pstats(f.p);
	assert_int_equal(st.pressure_budget, FLOOR);
	assert_int_equal(st.budget, 1);
	fx_fini(&f);
}

/*
 * A monitor of a child domain with no budget of its own: base is no
 * limit (UINT64_MAX), and a default floor of base / 64 (2^58) was above
 * any usage: every action left the budget at 2^58 and freed nothing.
 * With no base there is no default floor: CRITICAL halves the usage.
 */
static void test_pressure_unlimited_base_actions_free(void **state)
{
	struct rcl_domain_config rc = { .budget = 10 * BUDGET,
					.allocator = &test_allocator };
	struct rcl_domain_config cc = { .budget = 0,
					.allocator = &test_allocator };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_fake_clock *fc;
	struct rcl_domain *root, *child;
	struct rcl_pressure_stats st;
	struct rcl_pressure *p;
	struct tcache c;
	uint64_t before;
	int man;

	(void)state;
	assert_int_equal(rcl_fake_clock_new(T0, &fc), 0);
	assert_int_equal(rcl_domain_new(&rc, &root), 0);
	cc.parent = root;
	assert_int_equal(rcl_domain_new(&cc, &child), 0);
	assert_int_equal(rcl_domain_budget(child), UINT64_MAX);
	tc_init(&c, child, NOBJ, W);
	tc_fill(&c, FILL);
	pc.domain = child;
	pc.clock = rcl_fake_clock_clock(fc);
	pc.flags = RCL_PRESSURE_NO_TRIM;
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	man = rcl_pressure_add_manual(p);
	before = rcl_domain_usage(child);
	assert_int_equal(before, FILL * W);
	assert_int_equal(rcl_pressure_notify(p, man, RCL_PRESSURE_CRITICAL), 0);
	st = pstats(p);
	assert_int_equal(st.base_budget, UINT64_MAX);
	assert_int_equal(st.pressure_budget, before / 2);
	assert_int_equal(st.budget, before / 2);
	assert_int_equal(rcl_domain_budget(child), before / 2);
	assert_true(rcl_domain_usage(child) + doc_high(before / 2) <= before / 2);
	assert_int_equal(st.actions, 1);
	assert_int_equal(st.empty_actions, 0);
	assert_int_equal(pstats(p).freed_bytes, before - rcl_domain_usage(child));
	assert_int_equal(rcl_pressure_free(p), 0);
	tc_destroy(&c);
	assert_int_equal(rcl_domain_free(child), 0);
	assert_int_equal(rcl_domain_free(root), 0);
	rcl_fake_clock_free(fc);
}

/*
 * The tuist / ClickHouse failure: a cgroup whose usage is at its limit,
 * mostly inactive page cache (200 MB used of 200 MB, 150 MB of it
 * inactive_file).  The working set is 50 MB, 25 %: no level, and the
 * container budget is 200 x 0.9 - (50 - 40) = 170 MB, above base: the
 * cache keeps its budget.  (Raw usage would read CRITICAL and a container
 * of 200 x 0.9 - 160 = 20 MB.)
 */
static void test_pressure_cgroup_inactive_file_is_not_pressure(void **state)
{
	struct fx f;
	struct cg c;
	struct rcl_memory_sample ms;
	int src, i, pass;

	(void)state;
	fx_init(&f, BUDGET, 400);		/* own 40 MB */
	cg_init(&c, &f, "cg", 2, 1000);
	c.ws = 50 * MB;
	c.inactive = 150 * MB;
	c.max = 200 * MB;
	cg_write(&c);
	for (pass = 0; pass < 2; pass++) {
		f.cfg.flags = pass ? 0 : RCL_PRESSURE_FOLLOW_CGROUP;
		f.cfg.bytes_per_unit = 1000;
		fx_monitor(&f);
		src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
		assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
		assert_int_equal(ms.cgroup_usage_bytes, 200 * MB);
		assert_int_equal(ms.cgroup_working_set_bytes, 50 * MB);
		assert_int_equal(ms.cgroup_limit_bytes, 200 * MB);
		for (i = 0; i < 5; i++) {
			cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
			assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
			assert_budget(&f, BUDGET);
		}
		assert_int_equal(pstats(f.p).container_budget,
				 pass ? UINT64_MAX : 170000);
		assert_int_equal(pstats(f.p).actions, 0);
		assert_int_equal(usage(&f), 40000);
		if (!pass)
			assert_int_equal(rcl_pressure_free(f.p), 0);
	}
	fx_fini(&f);
}

struct bad_file {
	unsigned version;
	const char *name;
	const char *content;
	size_t len;		/* 0: strlen(content) */
	int err;
};

/*
 * A file that does not parse makes rcl_pressure_add_cgroup() fail with a
 * clear error, adds nothing and leaves no descriptor: garbage and
 * truncated lines -EBADMSG, numbers beyond 64 bits -ERANGE, a file longer
 * than the 16 KiB the monitor reads -EFBIG.
 */
static void test_pressure_cgroup_bad_files_at_creation(void **state)
{
	static const struct bad_file bad[] = {
		{ 2, "memory.current", "12abc\n", 0, -EBADMSG },
		{ 2, "memory.current", "", 0, -EBADMSG },
		{ 2, "memory.current", "\n", 0, -EBADMSG },
		{ 2, "memory.current", "18446744073709551616\n", 0, -ERANGE },
		{ 2, "memory.current", "99999999999999999999999999\n", 0, -ERANGE },
		{ 2, "memory.max", "maxi\n", 0, -EBADMSG },
		{ 2, "memory.max", "-1\n", 0, -EBADMSG },
		{ 2, "memory.max", " 100\n", 0, -EBADMSG },
		{ 2, "memory.high", "1e9\n", 0, -EBADMSG },
		{ 2, "memory.high", "100\n\n", 0, -EBADMSG },
		{ 2, "memory.stat", "anon 1\ninactive_file 12", 0, -EBADMSG },
		{ 2, "memory.stat", "anon 1\ngarbage\ninactive_file 3\n", 0, -EBADMSG },
		{ 2, "memory.stat", "anon 1\n\0inactive_file 3\n", 24, -EBADMSG },
		{ 2, "memory.stat", "inactive_file 99999999999999999999999\n", 0, -ERANGE },
		{ 1, "memory.usage_in_bytes", "abc\n", 0, -EBADMSG },
		{ 1, "memory.limit_in_bytes", "99999999999999999999\n", 0, -ERANGE },
		{ 1, "memory.stat", "total_inactive_file 12", 0, -EBADMSG },
		{ 1, "memory.stat", "total_inactive_file 1\ntotal_rss x\n", 0, -EBADMSG },
	};
	struct fx f;
	struct cg c;
	unsigned i, fds;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[16];
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].content);
		int err;

		snprintf(name, sizeof(name), "cg%u", i);
		cg_init(&c, &f, name, bad[i].version, 1);
		c.max = bad[i].version == 2 ? 1000 * MB : 1000 * MB;
		c.ws = 100 * MB;
		cg_write(&c);
		put_raw(c.dir, bad[i].name, bad[i].content, len);
		fds = fd_count();
		err = rcl_pressure_add_cgroup(f.p, c.dir, 0);
		if (err != bad[i].err)
			fail_msg("%s \"%s\": %d, want %d", bad[i].name,
				 bad[i].content, err, bad[i].err);
		assert_int_equal(fd_count(), fds);
		assert_int_equal(pstats(f.p).nr_sources, 0);
	}
	/* A file longer than any the kernel writes (20 KiB of good lines). */
	{
		static char big[20480 + 64];
		size_t len = 0;

		cg_init(&c, &f, "big", 2, 1);
		c.max = 1000 * MB;
		cg_write(&c);
		while (len < 20480)
			len += (size_t)snprintf(big + len, sizeof(big) - len,
						"pgfault%zu 1\n", len);
		len += (size_t)snprintf(big + len, sizeof(big) - len,
					"inactive_file 0\n");
		put_raw(c.dir, "memory.stat", big, len);
		assert_int_equal(rcl_pressure_add_cgroup(f.p, c.dir, 0), -EFBIG);
		assert_int_equal(pstats(f.p).nr_sources, 0);
	}
	/* The monitor is unharmed: a good directory is added. */
	cg_init(&c, &f, "good", 2, 1);
	c.max = 1000 * MB;
	cg_write(&c);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, c.dir, 0), 0);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/*
 * rcl_pressure_add_cgroup(p, NULL, 0) finds the process's cgroup from
 * /proc/self/cgroup and /proc/self/mountinfo; the seam opens the test's
 * copies of them (proc_dir's "cgroup" and "mountinfo") instead.
 */
static char proc_dir[PATH_MAX];

static int seam_open_proc(const char *path, int flags)
{
	const char *name = strrchr(path, '/');
	char p[PATH_MAX];

	path_of(p, sizeof(p), proc_dir, name + 1);
	return open(p, flags);
}

/*
 * A mountinfo of @nr_other unrelated mounts (about 100 bytes each, as a
 * container host's tmpfs and overlay mounts), then the cgroup2 mount at
 * @mnt.
 */
static void put_mountinfo(const char *dir, unsigned nr_other, const char *mnt)
{
	size_t cap = (size_t)nr_other * 128 + PATH_MAX + 256, n = 0;
	char *buf = malloc(cap);
	unsigned i;

	assert_non_null(buf);
	n += (size_t)snprintf(buf + n, cap - n,
			      "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/root rw\n");
	for (i = 0; i < nr_other; i++)
		n += (size_t)snprintf(buf + n, cap - n,
				      "%u 22 0:%u / /run/containerd/io.containerd.runtime.v2.task/k8s.io/m%05u rw,nosuid shared:%u - tmpfs none rw,size=4k\n",
				      100 + i, 100 + i, i, 100 + i);
	n += (size_t)snprintf(buf + n, cap - n,
			      "30 22 0:26 / %s rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
			      mnt);
	assert_true(n < cap);
	put_raw(dir, "mountinfo", buf, n);
	free(buf);
}

/*
 * The process's own cgroup on a host with many mounts: a mountinfo above
 * 16 KiB (the monitor's file buffer) is read whole (before: -EFBIG, and
 * no cgroup source anywhere with many containers); one above 4 MiB is
 * -EFBIG, nothing added.
 */
static void test_pressure_own_cgroup_with_a_long_mountinfo(void **state)
{
	struct fx f;
	struct cg c;
	char mnt[PATH_MAX];
	struct rcl_pressure_source_info si;
	struct stat st;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	make_subdir(proc_dir, sizeof(proc_dir), f.tmp, "proc");
	make_subdir(mnt, sizeof(mnt), f.tmp, "cgroup2");
	cg_init_in(&c, mnt, "app.slice", 2, f.d, 1);
	cg_write(&c);
	put_file(proc_dir, "cgroup", "0::/app.slice\n");
	put_mountinfo(proc_dir, 400, mnt);
	path_of(c.dir, sizeof(c.dir), proc_dir, "mountinfo");
	assert_int_equal(stat(c.dir, &st), 0);
	assert_true(st.st_size > 16384);
	rcl__pressure_seam.open_proc = seam_open_proc;
	src = rcl_pressure_add_cgroup(f.p, NULL, 0);
	seam_off();
	assert_int_equal(src, 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.mode, RCL_PSOURCE_CGROUP_V2);
	path_of(c.dir, sizeof(c.dir), mnt, "app.slice");
	assert_string_equal(si.path, c.dir);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* Above 4 MiB: -EFBIG, nothing added. */
	fx_monitor(&f);
	put_mountinfo(proc_dir, 4u * 1024 * 1024 / 100, mnt);
	path_of(c.dir, sizeof(c.dir), proc_dir, "mountinfo");
	assert_int_equal(stat(c.dir, &st), 0);
	assert_true(st.st_size > 4 * 1024 * 1024);
	rcl__pressure_seam.open_proc = seam_open_proc;
	assert_int_equal(rcl_pressure_add_cgroup(f.p, NULL, 0), -EFBIG);
	seam_off();
	assert_int_equal(pstats(f.p).nr_sources, 0);
	fx_fini(&f);
}

/* The limit rcl_pressure_memory() reads now. */
static uint64_t cg_limit_now(struct rcl_pressure *p)
{
	struct rcl_memory_sample ms;

	assert_int_equal(rcl_pressure_memory(p, &ms), 0);
	return ms.cgroup_limit_bytes;
}

/*
 * v2: the limit is the cgroup's effective one, the lowest memory.max or
 * memory.high of the cgroup and of its ancestors up to the root of the
 * cgroup2 mount (/proc/self/mountinfo's, from the seam here), that root
 * included; a file missing at an ancestor is no limit there (the real
 * root has neither); nothing above the mount is read.  A process in an
 * unlimited child of a limited parent saw no limit at all.  The same for
 * a directory named by the application, and the levels use the limit.
 */
static void test_pressure_cgroup_v2_limit_of_an_ancestor(void **state)
{
	struct fx f;
	struct cg c;
	char mnt[PATH_MAX], parent[PATH_MAX], mid[PATH_MAX], path[PATH_MAX];
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	make_subdir(proc_dir, sizeof(proc_dir), f.tmp, "proc");
	make_subdir(mnt, sizeof(mnt), f.tmp, "cgroup2");
	/* Above the mount: never read. */
	put_file(f.tmp, "memory.max", "1000\n");
	put_file(f.tmp, "memory.high", "1000\n");
	make_subdir(parent, sizeof(parent), mnt, "limited.slice");
	put_limit(parent, "memory.max", 300 * MB);
	put_limit(parent, "memory.high", UINT64_MAX);
	/* No limit files at all in the middle. */
	make_subdir(mid, sizeof(mid), parent, "app.slice");
	cg_init_in(&c, mid, "app.service", 2, f.d, 1);
	c.ws = 100 * MB;
	cg_write(&c);
	put_file(proc_dir, "cgroup", "0::/limited.slice/app.slice/app.service\n");
	put_mountinfo(proc_dir, 0, mnt);

	fx_monitor(&f);
	rcl__pressure_seam.open_proc = seam_open_proc;
	src = rcl_pressure_add_cgroup(f.p, NULL, 0);
	seam_off();
	assert_int_equal(src, 0);
	assert_string_equal(sinfo(f.p, src).path, c.dir);
	assert_int_equal(cg_limit_now(f.p), 300 * MB);
	/* A lower memory.high of the parent, a memory.max in the middle. */
	put_limit(parent, "memory.high", 200 * MB);
	assert_int_equal(cg_limit_now(f.p), 200 * MB);
	put_limit(mid, "memory.max", 150 * MB);
	assert_int_equal(cg_limit_now(f.p), 150 * MB);
	/* The cgroup's own, when it is the lowest. */
	c.max = 120 * MB;
	cg_write(&c);
	assert_int_equal(cg_limit_now(f.p), 120 * MB);
	c.max = UINT64_MAX;
	cg_write(&c);
	assert_int_equal(cg_limit_now(f.p), 150 * MB);
	/* The mount's root is read too (a namespace's root has limits). */
	put_limit(mnt, "memory.max", 130 * MB);
	assert_int_equal(cg_limit_now(f.p), 130 * MB);
	path_of(path, sizeof(path), mnt, "memory.max");
	assert_int_equal(unlink(path), 0);
	assert_int_equal(cg_limit_now(f.p), 150 * MB);
	/* The levels: 143 of 150 MB is 95 %. */
	c.ws = 143 * MB;
	cg_tick(&f, &c, 1, RCL_PRESSURE_SEVERE, FLOOR);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(pstats(f.p).read_errors, 0);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* A directory the application names, in that mount. */
	fx_monitor(&f);
	rcl__pressure_seam.open_proc = seam_open_proc;
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	seam_off();
	assert_int_equal(src, 0);
	assert_int_equal(cg_limit_now(f.p), 150 * MB);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* The parent's own cgroup as the mount's root: nothing above it. */
	put_mountinfo(proc_dir, 0, parent);
	put_limit(mnt, "memory.max", 1 * MB);
	fx_monitor(&f);
	rcl__pressure_seam.open_proc = seam_open_proc;
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	seam_off();
	assert_int_equal(src, 0);
	assert_int_equal(cg_limit_now(f.p), 150 * MB);
	put_limit(mid, "memory.max", UINT64_MAX);
	assert_int_equal(cg_limit_now(f.p), 200 * MB);
	/* A mount the directory is not in: its own limit only. */
	put_mountinfo(proc_dir, 0, proc_dir);
	assert_int_equal(rcl_pressure_free(f.p), 0);
	fx_monitor(&f);
	rcl__pressure_seam.open_proc = seam_open_proc;
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	seam_off();
	assert_int_equal(src, 0);
	assert_int_equal(cg_limit_now(f.p), UINT64_MAX);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/*
 * The walk is bounded: a cgroup 64 levels below the mount's root reads
 * its ancestors' limits, one 65 levels below reads only its own.
 */
static void test_pressure_cgroup_v2_ancestors_are_bounded(void **state)
{
	static const unsigned depths[] = { 64, 65 };
	struct fx f;
	struct cg c;
	char mnt[PATH_MAX], dir[PATH_MAX], top[PATH_MAX];
	char cg[4096], name[16];
	unsigned k, i;
	size_t n;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	make_subdir(proc_dir, sizeof(proc_dir), f.tmp, "proc");
	make_subdir(mnt, sizeof(mnt), f.tmp, "cgroup2");
	make_subdir(top, sizeof(top), mnt, "d");
	put_limit(top, "memory.max", 300 * MB);
	put_mountinfo(proc_dir, 0, mnt);
	for (k = 0; k < 2; k++) {
		/* top is level 1; the cgroup is level depths[k]. */
		snprintf(dir, sizeof(dir), "%s", top);
		n = (size_t)snprintf(cg, sizeof(cg), "0::/d");
		for (i = 2; i < depths[k]; i++) {
			size_t l = strlen(dir);

			snprintf(dir + l, sizeof(dir) - l, "/d");
			if (mkdir(dir, 0755))
				assert_int_equal(errno, EEXIST);
			n += (size_t)snprintf(cg + n, sizeof(cg) - n, "/d");
		}
		snprintf(cg + n, sizeof(cg) - n, "/cg%u\n", depths[k]);
		snprintf(name, sizeof(name), "cg%u", depths[k]);
		cg_init_in(&c, dir, name, 2, f.d, 1);
		c.ws = 100 * MB;
		cg_write(&c);
		put_file(proc_dir, "cgroup", "%s", cg);
		fx_monitor(&f);
		rcl__pressure_seam.open_proc = seam_open_proc;
		assert_int_equal(rcl_pressure_add_cgroup(f.p, NULL, 0), 0);
		seam_off();
		assert_int_equal(cg_limit_now(f.p),
				 depths[k] <= 64 ? 300 * MB : UINT64_MAX);
		if (k == 0)
			assert_int_equal(rcl_pressure_free(f.p), 0);
	}
	fx_fini(&f);
}

/*
 * memory.events is one of the files the source reads (pressure.h), so one
 * that does not parse at creation is -EBADMSG like the others.
 */
/*
 * read_fd()'s limit is what the header says: a file of 16 KiB (16384
 * bytes) is read, one byte more is -EFBIG.  A memory.stat of exactly the
 * limit used to be refused, as was one of 16383 bytes: the buffer kept a
 * byte for the NUL out of the 16384 it read into.
 */
static void put_stat_of_len(const char *dir, size_t want)
{
	static char big[16384 + 64];
	static const char tail[] = "inactive_file 0\n";
	size_t len = 0, pad;

	/* Lines of 12 bytes, then one filler line, then the key. */
	while (len + 12 + 32 + sizeof(tail) - 1 <= want)
		len += (size_t)snprintf(big + len, sizeof(big) - len,
					"pg%07zu 1\n", len % 10000000);
	pad = want - len - (sizeof(tail) - 1);	/* "z...z 1\n": pad >= 4 */
	assert_true(pad >= 4 && pad < 64);
	memset(big + len, 'z', pad - 3);
	memcpy(big + len + pad - 3, " 1\n", 3);
	len += pad;
	memcpy(big + len, tail, sizeof(tail) - 1);
	len += sizeof(tail) - 1;
	assert_int_equal(len, want);
	put_raw(dir, "memory.stat", big, len);
}

static void test_pressure_cgroup_file_of_16_kib_is_read(void **state)
{
	static const size_t lens[] = { 16383, 16384 };
	struct fx f;
	struct cg c;
	unsigned i;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	for (i = 0; i < 2; i++) {
		char name[16];

		fx_monitor(&f);
		snprintf(name, sizeof(name), "cg16k%u", i);
		cg_init(&c, &f, name, 2, 1);
		c.max = 1000 * MB;
		cg_write(&c);
		put_stat_of_len(c.dir, lens[i]);
		if (rcl_pressure_add_cgroup(f.p, c.dir, 0) != 0)
			fail_msg("a memory.stat of %zu bytes refused", lens[i]);
		assert_int_equal(pstats(f.p).read_errors, 0);
		assert_int_equal(rcl_pressure_free(f.p), 0);
		f.p = NULL;
	}
	fx_monitor(&f);
	cg_init(&c, &f, "cg16k+1", 2, 1);
	c.max = 1000 * MB;
	cg_write(&c);
	put_stat_of_len(c.dir, 16385);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, c.dir, 0), -EFBIG);
	assert_int_equal(pstats(f.p).nr_sources, 0);
	fx_fini(&f);
}

static void test_pressure_cgroup_bad_events_file_at_creation(void **state)
{
	static const char *const bad[] = {
		"low 0\nhigh x\nmax 0\n",
		"low 0\nhigh 1\nmax 2",
		"garbage\n",
	};
	struct fx f;
	struct cg c;
	unsigned i;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[16];
		int err;

		snprintf(name, sizeof(name), "cg%u", i);
		cg_init(&c, &f, name, 2, 1);
		c.max = 1000 * MB;
		cg_write(&c);
		put_file(c.dir, "memory.events", "%s", bad[i]);
		err = rcl_pressure_add_cgroup(f.p, c.dir, 0);
		if (err != -EBADMSG)
			fail_msg("memory.events \"%s\": add_cgroup %d, want -EBADMSG",
				 bad[i], err);
		assert_int_equal(pstats(f.p).nr_sources, 0);
	}
	fx_fini(&f);
}

/*
 * After creation a file that stops parsing is a read error: the source
 * keeps its last good values and the budget does not move (it would, and
 * wildly, if the bad value were taken: "12abc" read as 12 bytes of limit
 * gives a budget of 1).  The steady state: container == its raw value, 59000.
 * rcl_pressure_memory() leaves the cgroup fields 0 and counts the error.
 */
static void test_pressure_cgroup_bad_files_after_creation(void **state)
{
	static const struct bad_file bad[] = {
		{ 2, "memory.max", "garbage\n", 0, 0 },
		{ 2, "memory.max", "12abc\n", 0, 0 },
		{ 2, "memory.max", "340282366920938463463374607431768211456\n", 0, 0 },
		{ 2, "memory.high", "11 \n", 0, 0 },
		{ 2, "memory.current", "", 0, 0 },
		{ 2, "memory.current", "5x\n", 0, 0 },
		{ 2, "memory.stat", "anon 5\ninactive_file 3", 0, 0 },
		{ 2, "memory.stat", "anon 5\ninactive_file 18446744073709551617\n", 0, 0 },
	};
	struct fx f;
	struct cg c;
	struct rcl_memory_sample ms;
	uint64_t errs;
	unsigned i;
	int src;
	char path[PATH_MAX];

	(void)state;
	fx_init(&f, BUDGET, 500);
	f.cfg.flags = RCL_PRESSURE_FOLLOW_CGROUP;
	f.cfg.bytes_per_unit = 1000;
	fx_monitor(&f);
	cg_init(&c, &f, "cg", 2, 1000);
	c.others = 40 * MB;
	c.max = 110 * MB;
	cg_write(&c);
	src = rcl_pressure_add_cgroup(f.p, c.dir, 0);
	assert_int_equal(pstats(f.p).container_budget, 59000);
	assert_budget(&f, 59000);
	cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_budget(&f, 59000);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errs = pstats(f.p).read_errors;
		cg_write(&c);
		put_raw(c.dir, bad[i].name, bad[i].content, strlen(bad[i].content));
		cg_tick(&f, NULL, 0, RCL_PRESSURE_NONE, FLOOR);
		if (pstats(f.p).read_errors != errs + 1)
			fail_msg("%s \"%s\": %llu read errors, want %llu",
				 bad[i].name, bad[i].content,
				 (unsigned long long)pstats(f.p).read_errors,
				 (unsigned long long)errs + 1);
		assert_int_equal(pstats(f.p).container_budget, 59000);
		assert_budget(&f, 59000);
		assert_int_equal(pstats(f.p).actions, 0);
		/* The sample reads it now: the fields stay 0, one more error. */
		assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
		assert_int_equal(ms.cgroup_usage_bytes, 0);
		assert_int_equal(ms.cgroup_working_set_bytes, 0);
		assert_int_equal(ms.cgroup_limit_bytes, 0);
		assert_true(ms.rss_bytes > 0);
		assert_int_equal(pstats(f.p).read_errors, errs + 2);
		/* Good again: no error, same budget. */
		cg_tick(&f, &c, 0, RCL_PRESSURE_NONE, FLOOR);
		assert_int_equal(pstats(f.p).read_errors, errs + 2);
		assert_budget(&f, 59000);
	}
	/* A file that went away is a read error too. */
	errs = pstats(f.p).read_errors;
	path_of(path, sizeof(path), c.dir, "memory.stat");
	assert_int_equal(unlink(path), 0);
	cg_tick(&f, NULL, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).read_errors, errs + 1);
	assert_budget(&f, 59000);

	/*
	 * memory.events bad, the rest good: an error, and the budget follows
	 * the good files (a limit of 120 MB: raw 68000, 5000 up).
	 */
	errs = pstats(f.p).read_errors;
	c.max = 120 * MB;
	cg_write(&c);
	put_file(c.dir, "memory.events", "high\n");
	cg_tick(&f, NULL, 0, RCL_PRESSURE_NONE, FLOOR);
	assert_int_equal(pstats(f.p).read_errors, errs + 1);
	assert_int_equal(pstats(f.p).container_budget, 64000);
	assert_budget(&f, 64000);
	assert_int_equal(sinfo(f.p, src).actions, 0);
	fx_fini(&f);
}

/* rcl_pressure_memory(): real memory beside the domain's bytes. */
static void test_pressure_memory_sample(void **state)
{
	struct fx f;
	struct cg c;
	struct rcl_memory_sample ms;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.bytes_per_unit = 4096;
	fx_monitor(&f);
	adv(&f, 123);
	memset(&ms, 0xa5, sizeof(ms));
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.time_ns, T0 + 123);
	assert_int_equal(ms.charged_bytes, 90000ull * 4096);
	assert_int_equal(ms.budget_bytes, (uint64_t)BUDGET * 4096);
	assert_true(ms.rss_bytes > 0);
	assert_int_equal(ms.rss_bytes % (uint64_t)sysconf(_SC_PAGESIZE), 0);
	/* No cgroup source: its fields are 0. */
	assert_int_equal(ms.cgroup_usage_bytes, 0);
	assert_int_equal(ms.cgroup_working_set_bytes, 0);
	assert_int_equal(ms.cgroup_limit_bytes, 0);
	assert_int_equal(pstats(f.p).read_errors, 0);

	cg_init(&c, &f, "cg", 2, 4096);
	c.ws = 300 * MB;
	c.inactive = 20 * MB;
	c.max = 1000 * MB;
	c.high = 800 * MB;
	cg_write(&c);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, c.dir, 0), 0);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_usage_bytes, 320 * MB);
	assert_int_equal(ms.cgroup_working_set_bytes, 300 * MB);
	assert_int_equal(ms.cgroup_limit_bytes, 800 * MB);	/* the high */
	c.high = UINT64_MAX;
	c.max = UINT64_MAX;
	cg_write(&c);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_limit_bytes, UINT64_MAX);
	/* It reads the files, not the last tick's values. */
	c.ws = 310 * MB;
	cg_write(&c);
	assert_int_equal(rcl_pressure_memory(f.p, &ms), 0);
	assert_int_equal(ms.cgroup_working_set_bytes, 310 * MB);
	assert_int_equal(ms.charged_bytes, usage(&f) * 4096);
	assert_int_equal(pstats(f.p).read_errors, 0);
	fx_fini(&f);
}

/* ------------------------------------------------------------------------- */
/* 6. PSI files whose triggers are refused: polled                            */
/* ------------------------------------------------------------------------- */

struct psi_totals {
	char dir[PATH_MAX];
	const char *name;
	uint64_t some, full;
};

/* @t's file in @f's directory with zero totals; its path into @path. */
static void psi_file(struct fx *f, struct psi_totals *t, char *path,
		     size_t size)
{
	snprintf(t->dir, sizeof(t->dir), "%s", f->tmp);
	put_psi(t->dir, t->name, 0, 0);
	path_of(path, size, f->tmp, t->name);
}

/* Add to the totals, write them, and run one interval of @ns. */
static void psi_tick(struct fx *f, struct psi_totals *t, uint64_t dsome,
		     uint64_t dfull, uint64_t ns, int n,
		     enum rcl_pressure_level level)
{
	uint64_t before = usage(f);

	t->some += dsome;
	t->full += dfull;
	put_psi(t->dir, t->name, t->some, t->full);
	adv(f, ns);
	assert_int_equal(rcl_pressure_dispatch(f->p), n);
	if (n)
		assert_budget(f, doc_target(before, level, FLOOR));
}

/*
 * A regular file in PSI's format: not on procfs, so no trigger is tried
 * (fallback_errno ENOTSUP) and its totals are read every interval.  The
 * fractions of the interval's stall time: some 7 % MODERATE, some 15 %
 * SEVERE, full 70 % CRITICAL, measured over the time since the last good
 * reading.  Totals that go back are a new baseline, no reading; a file
 * that stops parsing is a read error and no event.
 */
static void test_pressure_psi_file_polled(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure", .some = 1000,
				.full = 500 };
	struct rcl_pressure_source_info si;
	char path[PATH_MAX];
	uint64_t events;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	snprintf(t.dir, sizeof(t.dir), "%s", f.tmp);
	put_psi(t.dir, t.name, t.some, t.full);
	path_of(path, sizeof(path), f.tmp, t.name);
	src = rcl_pressure_add_psi(f.p, path);
	assert_int_equal(src, 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.mode, RCL_PSOURCE_PSI_POLL);
	assert_int_equal(si.fallback_errno, ENOTSUP);
	assert_string_equal(si.path, path);

	psi_tick(&f, &t, 69999, 0, SEC, 0, RCL_PRESSURE_NONE);	/* 6.9999 % */
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	psi_tick(&f, &t, 70000, 0, SEC, 1, RCL_PRESSURE_MODERATE);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_MODERATE);
	psi_tick(&f, &t, 150000, 0, SEC, 1, RCL_PRESSURE_SEVERE);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	psi_tick(&f, &t, 700000, 700000, SEC, 1, RCL_PRESSURE_CRITICAL);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_CRITICAL);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_CRITICAL);
	psi_tick(&f, &t, 699999, 699999, SEC, 1, RCL_PRESSURE_SEVERE);
	psi_tick(&f, &t, 149999, 0, SEC, 1, RCL_PRESSURE_MODERATE);
	/* Totals that go back: a new baseline, no reading. */
	events = sinfo(f.p, src).events;
	t.some = 10;
	t.full = 5;
	psi_tick(&f, &t, 0, 0, SEC, 0, RCL_PRESSURE_NONE);
	assert_int_equal(sinfo(f.p, src).events, events);
	psi_tick(&f, &t, 0, 0, SEC, 0, RCL_PRESSURE_NONE);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	/* Two intervals at once: 280 ms of 2 s is 14 %, MODERATE. */
	psi_tick(&f, &t, 280000, 0, 2 * SEC, 1, RCL_PRESSURE_MODERATE);
	/* Garbage: a read error, no event, no action. */
	events = sinfo(f.p, src).events;
	{
		static const char garbage[] =
			"some avg10=0.00 avg60=0.00 avg300=0.00 total=\n";

		put_in_place(t.dir, t.name, garbage, sizeof(garbage) - 1);
	}
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(pstats(f.p).read_errors, 1);
	assert_int_equal(sinfo(f.p, src).events, events);
	/*
	 * Good again, 1 s after the garbage: the totals grew by 200 ms since
	 * the last good reading, 2 s ago: 10 % (MODERATE), not 20 % of the
	 * last interval (SEVERE).
	 */
	psi_tick(&f, &t, 200000, 0, SEC, 1, RCL_PRESSURE_MODERATE);
	assert_int_equal(pstats(f.p).read_errors, 1);
	assert_int_equal(sinfo(f.p, src).actions, 7);
	fx_fini(&f);
}

/*
 * A tick brought forward: memory.events changed, and the tick reads every
 * source, the polled PSI files too.  The fixture: a v2 cgroup source
 * (index 0, with no pressure of its own) whose memory.events descriptor is
 * the seam's socket, and a polled PSI file (index 1).  The monitor reads
 * memory.events through that descriptor, which a socket cannot do
 * (pread(): ESPIPE), so its descriptor number is pointed at the file
 * itself, while a copy the test keeps holds the socket in the epoll set
 * under the source's tag (epoll(7): an entry lives as long as its open
 * file, whatever its descriptor number refers to now).
 */
struct forced {
	struct cg c;
	struct psi_totals t;
	int keep;		/* the socket, kept in the epoll set */
	int psi;
};

static void forced_init(struct fx *f, struct forced *x)
{
	char path[PATH_MAX];
	int fd;

	memset(x, 0, sizeof(*x));
	cg_init(&x->c, f, "cg", 2, 1);
	x->c.max = 1000 * MB;
	x->c.ws = 100 * MB;
	cg_write(&x->c);
	seam_on("memory.events", CGROUP2_MAGIC);
	assert_int_equal(rcl_pressure_add_cgroup(f->p, x->c.dir, 0), 0);
	seam_off();
	assert_int_equal(seam.nr, 1);
	x->keep = fcntl(seam.ours[0], F_DUPFD_CLOEXEC, 0);
	path_of(path, sizeof(path), x->c.dir, "memory.events");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(x->keep >= 0 && fd >= 0);
	assert_int_equal(dup3(fd, seam.ours[0], O_CLOEXEC), seam.ours[0]);
	assert_int_equal(close(fd), 0);
	x->t.name = "memory.pressure";
	psi_file(f, &x->t, path, sizeof(path));
	x->psi = rcl_pressure_add_psi(f->p, path);
	assert_int_equal(x->psi, 1);
	assert_int_equal(sinfo(f->p, x->psi).mode, RCL_PSOURCE_PSI_POLL);
}

/*
 * Add to the PSI totals, advance @ns, change memory.events (EPOLLPRI) and
 * dispatch: the actions taken (the budget checked for @level if any); the
 * event is cleared afterwards, as the monitor's read of the real file
 * does.
 */
static int forced_tick(struct fx *f, struct forced *x, uint64_t dsome,
		       uint64_t dfull, uint64_t ns, enum rcl_pressure_level level)
{
	uint64_t before = usage(f);
	char c;
	int n;

	x->t.some += dsome;
	x->t.full += dfull;
	put_psi(x->t.dir, x->t.name, x->t.some, x->t.full);
	adv(f, ns);
	assert_int_equal(send(seam.peer[0], "!", 1, MSG_OOB), 1);
	n = rcl_pressure_dispatch(f->p);
	assert_int_equal(recv(x->keep, &c, 1, MSG_OOB), 1);
	if (n > 0)
		assert_budget(f, doc_target(before, level, FLOOR));
	return n;
}

static void forced_fini(struct forced *x)
{
	assert_int_equal(close(x->keep), 0);
	seam_close_peers();
}

/*
 * A forced tick 5 ms after the timer's: the polled PSI source was rated
 * over those 5 ms, where 4 ms of "full" stall read as 80 % (CRITICAL), an
 * action that halved the cache.  Under half the interval it is skipped
 * with the baseline kept (fbb4348): no event, and the next tick rates the
 * whole time since the timer's (72 ms over 1.005 s, 7.2 %: MODERATE;
 * 68 ms over the last 1 s alone would be none).
 */
static void test_pressure_psi_polled_forced_tick_too_soon(void **state)
{
	struct fx f;
	struct forced x;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	fx_monitor(&f);
	forced_init(&f, &x);

	psi_tick(&f, &x.t, 0, 0, SEC, 0, RCL_PRESSURE_NONE);	/* the timer */
	assert_int_equal(forced_tick(&f, &x, 4000, 4000, 5 * MS,
				     RCL_PRESSURE_NONE), 0);
	/* It was a tick: the timer's next is an interval after it. */
	assert_int_equal(rcl_pressure_next_deadline(f.p), now(&f) + SEC);
	assert_int_equal(sinfo(f.p, x.psi).events, 0);
	assert_int_equal(sinfo(f.p, x.psi).level, RCL_PRESSURE_NONE);
	psi_tick(&f, &x.t, 68000, 0, SEC, 1, RCL_PRESSURE_MODERATE);
	assert_int_equal(sinfo(f.p, x.psi).level, RCL_PRESSURE_MODERATE);
	assert_int_equal(sinfo(f.p, x.psi).events, 1);
	forced_fini(&x);
	fx_fini(&f);
}

/*
 * An interval of 10 s, above twice max(window, PSI's 2 s): a forced tick
 * 4.5 s after a SEVERE reading, the stall going on at 15 %, was under half
 * the interval and skipped, and the skip was taken as a reading without an
 * event, so the rule that ends a descriptor's level after 4 s without one
 * set the polled source's level to none while it was under pressure.  The
 * spacing is now at most PSI's 2 s window: that reading is rated.  One
 * still skipped (1 s later, 50 %) is no evidence either way: no event,
 * the level kept, the baseline kept (the timer's next tick, an interval
 * after that forced one, rates 800 ms over the 11 s since the last rated
 * reading, 7.3 %: MODERATE; its own 300 ms over 10 s would be none).
 */
static void test_pressure_psi_polled_forced_tick_keeps_the_level(void **state)
{
	struct fx f;
	struct forced x;
	uint64_t events;
	int n;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	f.cfg.interval_ns = 10 * SEC;
	fx_monitor(&f);
	forced_init(&f, &x);

	psi_tick(&f, &x.t, 1500000, 0, 10 * SEC, 1, RCL_PRESSURE_SEVERE);
	assert_int_equal(sinfo(f.p, x.psi).level, RCL_PRESSURE_SEVERE);
	n = forced_tick(&f, &x, 675000, 0, 4500 * MS, RCL_PRESSURE_SEVERE);
	assert_int_equal(rcl_pressure_next_deadline(f.p), now(&f) + 10 * SEC);
	assert_int_equal(sinfo(f.p, x.psi).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(n, 1);
	events = sinfo(f.p, x.psi).events;
	assert_int_equal(forced_tick(&f, &x, 500000, 0, SEC,
				     RCL_PRESSURE_NONE), 0);
	assert_int_equal(sinfo(f.p, x.psi).events, events);
	assert_int_equal(sinfo(f.p, x.psi).level, RCL_PRESSURE_SEVERE);
	psi_tick(&f, &x.t, 300000, 0, 10 * SEC, 1, RCL_PRESSURE_MODERATE);
	assert_int_equal(sinfo(f.p, x.psi).level, RCL_PRESSURE_MODERATE);
	forced_fini(&x);
	fx_fini(&f);
}

/*
 * An interval beyond the clock's range is no timer: a polled PSI source is
 * read only on the ticks memory.events brings forward.  Every one was under
 * half that interval, so the source was never rated.  A forced reading 2 s
 * (PSI's window) or more after the last rated one is rated now; one sooner
 * is skipped, with the baseline kept (300 ms over the 2 s since the first:
 * 15 %, SEVERE).
 */
static void test_pressure_psi_polled_without_a_timer(void **state)
{
	struct fx f;
	struct forced x;
	int n;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	f.cfg.interval_ns = UINT64_MAX;
	fx_monitor(&f);
	forced_init(&f, &x);
	assert_int_equal(rcl_pressure_next_deadline(f.p), RCL_CLOCK_FOREVER);

	assert_int_equal(forced_tick(&f, &x, 150000, 0, SEC,
				     RCL_PRESSURE_NONE), 0);
	assert_int_equal(sinfo(f.p, x.psi).events, 0);
	n = forced_tick(&f, &x, 150000, 0, SEC, RCL_PRESSURE_SEVERE);
	assert_int_equal(sinfo(f.p, x.psi).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(n, 1);
	assert_int_equal(rcl_pressure_next_deadline(f.p), RCL_CLOCK_FOREVER);
	/* An hour on: 70 % full stall over it, CRITICAL. */
	n = forced_tick(&f, &x, 2520 * SEC / 1000, 2520 * SEC / 1000,
			3600 * SEC, RCL_PRESSURE_CRITICAL);
	assert_int_equal(sinfo(f.p, x.psi).level, RCL_PRESSURE_CRITICAL);
	assert_int_equal(n, 1);
	assert_int_equal(sinfo(f.p, x.psi).events, 2);
	forced_fini(&x);
	fx_fini(&f);
}

static void test_pressure_psi_bad_files(void **state)
{
	static const struct {
		const char *content;
		int err;
	} bad[] = {
		{ "", -EBADMSG },
		{ "garbage\n", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=12", -EBADMSG },
		{ "some avg10=0.00 avg60=0.00 avg300=0.00 total=99999999999999999999999\n",
		  -EBADMSG },
		{ "full avg10=0.00 avg60=0.00 avg300=0.00 total=1\n", -EBADMSG },
		{ "some avg10=x avg60=0.00 avg300=0.00 total=1\n", -EBADMSG },
	};
	struct fx f;
	char path[PATH_MAX];
	unsigned i, fds;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	path_of(path, sizeof(path), f.tmp, "psi");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put_file(f.tmp, "psi", "%s", bad[i].content);
		fds = fd_count();
		assert_int_equal(rcl_pressure_add_psi(f.p, path), bad[i].err);
		assert_int_equal(fd_count(), fds);
	}
	assert_int_equal(rcl_pressure_add_psi(f.p, "/nonexistent-rcl-test/psi"),
			 -ENOENT);
	assert_int_equal(rcl_pressure_add_psi(f.p, f.tmp), -EISDIR);
	assert_int_equal(pstats(f.p).nr_sources, 0);
	/* Without a "full" line (older kernels' cpu file): fine. */
	put_file(f.tmp, "psi", "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n");
	assert_int_equal(rcl_pressure_add_psi(f.p, path), 0);
	assert_int_equal(sinfo(f.p, 0).mode, RCL_PSOURCE_PSI_POLL);
	fx_fini(&f);
}

/*
 * A FIFO given as the PSI file, with no writer: the call fails (pread() on
 * it is -ESPIPE) and does not wait in open() for a writer that never comes.
 * In a child with an alarm: a call that waits ends the child by SIGALRM.
 */
static void test_pressure_psi_fifo_does_not_block(void **state)
{
	struct fx f;
	char path[PATH_MAX];
	unsigned fds;
	int st = 0;
	pid_t pid;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	path_of(path, sizeof(path), f.tmp, "psi-fifo");
	assert_int_equal(mkfifo(path, 0600), 0);
	fds = fd_count();
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(10);
		_exit(rcl_pressure_add_psi(f.p, path) == -ESPIPE &&
			      fd_count() == fds && pstats(f.p).nr_sources == 0 ?
		      0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	ASSERT_CHILD_EXITED_OK(st);
	fx_fini(&f);
}

/* ------------------------------------------------------------------------- */
/* 7. systemd's MEMORY_PRESSURE_WATCH / MEMORY_PRESSURE_WRITE                 */
/* ------------------------------------------------------------------------- */

static void unset_sd_env(void)
{
	unsetenv("MEMORY_PRESSURE_WATCH");
	unsetenv("MEMORY_PRESSURE_WRITE");
}

/*
 * MEMORY_PRESSURE_WATCH a PSI file whose trigger is refused (a regular
 * file): its totals are polled against the trigger's own threshold, one
 * level (SEVERE).  "full 500000 2000000" is full 25 %; systemd's
 * "some 200000 2000000" (the environment's, watch = NULL) 10 %; no write
 * data, systemd's documented default, some 100 ms per 1 s (10 %).
 */
static void test_pressure_systemd_psi_file_polled(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "sd.pressure" };
	struct rcl_pressure_source_info si;
	char path[PATH_MAX];
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	psi_file(&f, &t, path, sizeof(path));

	fx_monitor(&f);
	src = rcl_pressure_add_systemd(f.p, path, "ZnVsbCA1MDAwMDAgMjAwMDAwMAA=");
	assert_int_equal(src, 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.mode, RCL_PSOURCE_SYSTEMD_PSI_POLL);
	assert_int_equal(si.fallback_errno, ENOTSUP);
	assert_string_equal(si.path, path);
	psi_tick(&f, &t, 1000000, 249999, SEC, 0, RCL_PRESSURE_NONE);
	psi_tick(&f, &t, 1000000, 250000, SEC, 1, RCL_PRESSURE_SEVERE);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	psi_tick(&f, &t, 1000000, 1000000, SEC, 1, RCL_PRESSURE_SEVERE);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	psi_tick(&f, &t, 1000000, 0, SEC, 0, RCL_PRESSURE_NONE);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/*
	 * Text after the window, which the kernel's sscanf() ignores: the
	 * trigger's own threshold (25 % full), not systemd's default (10 %
	 * some, which 100 % some would reach).  Before, such a value was
	 * refused and the default used.
	 */
	{
		static const char *const tails[] = {
			/* "full 500000 2000000\r\n" */
			"ZnVsbCA1MDAwMDAgMjAwMDAwMA0K",
			/* "full 500000 2000000 # 25 %\0" */
			"ZnVsbCA1MDAwMDAgMjAwMDAwMCAjIDI1ICUA",
		};

		for (unsigned i = 0; i < 2; i++) {
			fx_monitor(&f);
			src = rcl_pressure_add_systemd(f.p, path, tails[i]);
			assert_int_equal(src, 0);
			assert_int_equal(sinfo(f.p, src).mode,
					 RCL_PSOURCE_SYSTEMD_PSI_POLL);
			psi_tick(&f, &t, 1000000, 249999, SEC, 0,
				 RCL_PRESSURE_NONE);
			psi_tick(&f, &t, 0, 250000, SEC, 1,
				 RCL_PRESSURE_SEVERE);
			assert_int_equal(rcl_pressure_free(f.p), 0);
		}
	}

	/* From the environment: systemd's own trigger, 10 % some. */
	fx_monitor(&f);
	unset_sd_env();
	assert_int_equal(setenv("MEMORY_PRESSURE_WATCH", path, 1), 0);
	assert_int_equal(setenv("MEMORY_PRESSURE_WRITE", SD_WRITE, 1), 0);
	src = rcl_pressure_add_systemd(f.p, NULL, NULL);
	unset_sd_env();
	assert_int_equal(src, 0);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_SYSTEMD_PSI_POLL);
	psi_tick(&f, &t, 199999, 0, 2 * SEC, 0, RCL_PRESSURE_NONE);
	psi_tick(&f, &t, 100000, 0, SEC, 1, RCL_PRESSURE_SEVERE);
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* No write data: 100 ms per 1 s. */
	fx_monitor(&f);
	src = rcl_pressure_add_systemd(f.p, path, NULL);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_SYSTEMD_PSI_POLL);
	psi_tick(&f, &t, 99999, 99999, SEC, 0, RCL_PRESSURE_NONE);
	psi_tick(&f, &t, 100000, 0, SEC, 1, RCL_PRESSURE_SEVERE);
	/* A watched file that is not PSI's is refused. */
	put_file(f.tmp, "notpsi", "hello\n");
	path_of(path, sizeof(path), f.tmp, "notpsi");
	assert_int_equal(rcl_pressure_add_systemd(f.p, path, SD_WRITE), -EBADMSG);
	assert_int_equal(pstats(f.p).nr_sources, 1);
	fx_fini(&f);
}

/*
 * A reading right after the baseline is no reading.  The systemd PSI file
 * polled is added 500 ns before the timer's tick: its first interval is
 * 0 us long, and rated as such (0 >= threshold x 0) it read SEVERE with no
 * stall at all (an action, the budget cut by a quarter).  Now it is no
 * reading, and the baseline stays: the next tick rates the whole interval
 * since it.
 */
static void test_pressure_systemd_psi_poll_needs_an_interval(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "sd.pressure" };
	char path[PATH_MAX];
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	psi_file(&f, &t, path, sizeof(path));
	fx_monitor(&f);
	adv(&f, SEC - 500);
	src = rcl_pressure_add_systemd(f.p, path, NULL);
	assert_int_equal(src, 0);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_SYSTEMD_PSI_POLL);
	/* The tick, 500 ns after the baseline: nothing. */
	psi_tick(&f, &t, 0, 0, 500, 0, RCL_PRESSURE_NONE);
	assert_int_equal(sinfo(f.p, src).events, 0);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_NONE);
	assert_int_equal(pstats(f.p).actions, 0);
	/* 150 ms over the 1 s + 500 ns since the baseline: 100 ms per 1 s. */
	psi_tick(&f, &t, 150000, 0, SEC, 1, RCL_PRESSURE_SEVERE);
	assert_int_equal(sinfo(f.p, src).events, 1);
	fx_fini(&f);
}

/*
 * systemd's PSI file with nothing to write (no $MEMORY_PRESSURE_WRITE, or
 * ""): a PSI descriptor without a trigger polls EPOLLERR | EPOLLPRI for
 * ever, which the monitor read as a SEVERE event per dispatch (335,621 in
 * 1 s, by the review that found it).  It is polled against systemd's default threshold, no
 * descriptor is opened for polling (the seam counts none), fallback_errno
 * ENODATA.  A file that opens only for reading (EACCES for read-write:
 * emulated through the seam, as root passes any mode bits) was refused
 * with EACCES; now it is read-only with nothing to write, and polled with
 * EACCES as the reason when there is a trigger to write.
 */
static void test_pressure_systemd_psi_file_without_trigger_is_polled(void **state)
{
	static const char *const writes[] = { NULL, "" };
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure" };
	struct rcl_pressure_source_info si;
	char path[PATH_MAX];
	unsigned i;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	psi_file(&f, &t, path, sizeof(path));
	for (i = 0; i < 2; i++) {
		fx_monitor(&f);
		seam_on("memory.pressure", PROC_MAGIC);
		src = rcl_pressure_add_systemd(f.p, path, writes[i]);
		seam_off();
		assert_int_equal(src, 0);
		si = sinfo(f.p, src);
		assert_int_equal(si.mode, RCL_PSOURCE_SYSTEMD_PSI_POLL);
		assert_int_equal(si.fallback_errno, ENODATA);
		assert_int_equal(seam.nr, 0);
		assert_false(fd_readable(f.p));
		assert_int_equal(rcl_pressure_dispatch(f.p), 0);
		psi_tick(&f, &t, 99999, 0, SEC, 0, RCL_PRESSURE_NONE);
		psi_tick(&f, &t, 100000, 0, SEC, 1, RCL_PRESSURE_SEVERE);
		assert_int_equal(rcl_pressure_free(f.p), 0);
		f.p = NULL;
	}

	/* Opens only for reading: with nothing to write, and with a trigger. */
	for (i = 0; i < 2; i++) {
		fx_monitor(&f);
		seam_on("memory.pressure", PROC_MAGIC);
		seam.refuse_rw = EACCES;
		src = rcl_pressure_add_systemd(f.p, path, i ? SD_WRITE : NULL);
		seam_off();
		assert_int_equal(src, 0);
		si = sinfo(f.p, src);
		assert_int_equal(si.mode, RCL_PSOURCE_SYSTEMD_PSI_POLL);
		assert_int_equal(si.fallback_errno, i ? EACCES : ENODATA);
		/* systemd's trigger, 200 ms per 2 s, or the default. */
		psi_tick(&f, &t, 99999, 0, SEC, 0, RCL_PRESSURE_NONE);
		psi_tick(&f, &t, 100000, 0, SEC, 1, RCL_PRESSURE_SEVERE);
		assert_int_equal(rcl_pressure_free(f.p), 0);
		f.p = NULL;
	}
	fx_monitor(&f);
	fx_fini(&f);
}

/*
 * A systemd trigger without its NUL, as the kernel will read it: written
 * to /proc/pressure, psi_write() puts a NUL on the last byte it copies, so
 * "some 150000 10000000" is some 150 ms per 1 s there (15 %); a cgroup's
 * memory.pressure takes the whole write, 150 ms per 10 s (1.5 %).  The
 * write is refused (read-only opens), so the source polls at that
 * threshold.
 */
static void test_pressure_systemd_trigger_as_proc_pressure_reads_it(void **state)
{
	static const unsigned long magics[] = { PROC_MAGIC, CGROUP2_MAGIC };
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure" };
	char path[PATH_MAX];
	unsigned i;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	psi_file(&f, &t, path, sizeof(path));
	for (i = 0; i < 2; i++) {
		fx_monitor(&f);
		seam_on("memory.pressure", magics[i]);
		seam.refuse_rw = EACCES;
		/* "some 150000 10000000", no NUL */
		src = rcl_pressure_add_systemd(f.p, path,
					       "c29tZSAxNTAwMDAgMTAwMDAwMDA=");
		seam_off();
		assert_int_equal(src, 0);
		assert_int_equal(sinfo(f.p, src).mode,
				 RCL_PSOURCE_SYSTEMD_PSI_POLL);
		if (magics[i] == PROC_MAGIC) {
			psi_tick(&f, &t, 149999, 0, SEC, 0, RCL_PRESSURE_NONE);
			psi_tick(&f, &t, 150000, 0, SEC, 1,
				 RCL_PRESSURE_SEVERE);
		} else {
			psi_tick(&f, &t, 14999, 0, SEC, 0, RCL_PRESSURE_NONE);
			psi_tick(&f, &t, 15000, 0, SEC, 1,
				 RCL_PRESSURE_SEVERE);
		}
		assert_int_equal(rcl_pressure_free(f.p), 0);
		f.p = NULL;
	}
	fx_monitor(&f);
	fx_fini(&f);
}

/*
 * A PSI trigger's descriptor that reports EPOLLERR | EPOLLPRI (its cgroup
 * removed: kernfs reports that for ever) turns the source off.  The old
 * check (EPOLLERR without EPOLLPRI) never matched it: an event per
 * dispatch, for ever (239,280 dispatches in 1 s by the review that found
 * it, the level stuck at severe).  rcl_pressure_add_psi()'s triggers and systemd's alike.
 */
static void test_pressure_psi_trigger_gone_turns_off(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure" };
	struct rcl_pressure_source_info si;
	char path[PATH_MAX];
	unsigned k, fds;
	int src, i;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	psi_file(&f, &t, path, sizeof(path));
	for (k = 0; k < 2; k++) {
		fx_monitor(&f);
		seam_on("memory.pressure", CGROUP2_MAGIC);
		src = k ? rcl_pressure_add_systemd(f.p, path, SD_WRITE) :
			  rcl_pressure_add_psi(f.p, path);
		seam_off();
		assert_int_equal(src, 0);
		assert_int_equal(seam.nr, k ? 1 : 3);
		assert_int_equal(sinfo(f.p, src).mode,
				 k ? RCL_PSOURCE_SYSTEMD_PSI :
				     RCL_PSOURCE_PSI_TRIGGER);
		assert_false(fd_readable(f.p));
		seam_gone(0);
		assert_true(fd_readable(f.p));
		fds = fd_count();
		assert_int_equal(rcl_pressure_dispatch(f.p), 0);
		si = sinfo(f.p, src);
		assert_int_equal(si.mode, RCL_PSOURCE_OFF);
		assert_int_equal(si.fallback_errno, ENODEV);
		assert_int_equal(si.events, 0);
		assert_int_equal(si.level, RCL_PRESSURE_NONE);
		assert_true(fd_count() < fds);
		for (i = 0; i < 3; i++) {
			assert_false(fd_readable(f.p));
			adv(&f, SEC);
			assert_int_equal(rcl_pressure_dispatch(f.p), 0);
		}
		assert_int_equal(pstats(f.p).actions, 0);
		seam_close_peers();
		assert_int_equal(rcl_pressure_free(f.p), 0);
		f.p = NULL;
	}
	fx_monitor(&f);
	fx_fini(&f);
}

/*
 * Within one dispatch a source's level is the highest of its events, not
 * the last epoll returned: the CRITICAL trigger fires before the MODERATE
 * one (epoll returns them in that order), and the source's level stayed
 * MODERATE although its action was CRITICAL.
 */
static void test_pressure_psi_trigger_level_is_the_highest(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure" };
	char path[PATH_MAX];
	uint64_t u;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	psi_file(&f, &t, path, sizeof(path));
	fx_monitor(&f);
	seam_on("memory.pressure", PROC_MAGIC);
	src = rcl_pressure_add_psi(f.p, path);
	seam_off();
	assert_int_equal(src, 0);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_PSI_TRIGGER);
	seam_fire(2);		/* full 70 %: CRITICAL */
	seam_fire(0);		/* some 7 %: MODERATE */
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_CRITICAL, FLOOR));
	assert_int_equal(sinfo(f.p, src).events, 2);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_CRITICAL);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_CRITICAL);
	seam_close_peers();
	fx_fini(&f);
}

/*
 * The library thread sees every trigger event.  psi_trigger_poll() clears
 * the event it reports, so the thread's own wait consumed it and the second
 * wait in dispatch found nothing: on the real kernel a systemd PSI source
 * gave 0 events where its raw trigger fired 8 times, rcl_pressure_add_psi()
 * lost about a third.  Emulated with EPOLLET through the seam (epoll reports
 * each event once): no event at all before, each one now.
 */
static void test_pressure_psi_trigger_events_reach_the_thread(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure" };
	char path[PATH_MAX];
	unsigned k;
	int src, i;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.window_ns = 1;	/* each event acts */
	psi_file(&f, &t, path, sizeof(path));
	for (k = 0; k < 2; k++) {
		fx_monitor(&f);
		seam_on("memory.pressure", PROC_MAGIC);
		rcl__pressure_seam.trigger_epoll_flags = EPOLLET;
		src = k ? rcl_pressure_add_systemd(f.p, path, SD_WRITE) :
			  rcl_pressure_add_psi(f.p, path);
		seam_off();
		assert_int_equal(src, 0);
		assert_int_equal(sinfo(f.p, src).mode,
				 k ? RCL_PSOURCE_SYSTEMD_PSI :
				     RCL_PSOURCE_PSI_TRIGGER);
		assert_int_equal(rcl_pressure_start(f.p), 0);
		for (i = 1; i <= 3; i++) {
			int ms;

			seam_fire(k ? 0 : i - 1);
			for (ms = 0; ms < 10000; ms++) {
				if (sinfo(f.p, src).events == (uint64_t)i)
					break;
				usleep(1000);
			}
			if (sinfo(f.p, src).events != (uint64_t)i)
				fail_msg("event %d not seen by the thread", i);
			adv(&f, SEC);
		}
		assert_int_equal(rcl_pressure_stop(f.p), 0);
		assert_int_equal(sinfo(f.p, src).level,
				 k ? RCL_PRESSURE_SEVERE : RCL_PRESSURE_CRITICAL);
		seam_close_peers();
		assert_int_equal(rcl_pressure_free(f.p), 0);
		f.p = NULL;
	}
	fx_monitor(&f);
	fx_fini(&f);
}

/*
 * fd mode, mixed: the application's poll consumed the CRITICAL trigger's
 * event (the kernel wakes the trigger added last first, and a nested poll
 * stops at the first ready one) while epoll still returns MODERATE's.  The
 * totals say CRITICAL: the source acts at CRITICAL.  Before, a source with
 * any event from epoll ignored its totals, and acted at MODERATE.
 */
static void test_pressure_psi_trigger_fd_mode_mixed_events(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure" };
	char path[PATH_MAX];
	uint64_t u;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.interval_ns = 3600 * SEC;	/* no tick in the way */
	psi_file(&f, &t, path, sizeof(path));
	fx_monitor(&f);
	seam_on("memory.pressure", PROC_MAGIC);
	rcl__pressure_seam.trigger_epoll_flags = EPOLLET;
	src = rcl_pressure_add_psi(f.p, path);
	seam_off();
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_PSI_TRIGGER);
	seam_fire(2);
	seam_consume(2);
	seam_fire(0);
	t.some += 1400000;
	t.full += 1400000;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 100 * MS);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_CRITICAL, FLOOR));
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_CRITICAL);
	seam_close_peers();
	assert_int_equal(rcl_pressure_free(f.p), 0);
	f.p = NULL;
	fx_monitor(&f);
	fx_fini(&f);
}

/*
 * After the library thread stops, fd mode starts from a fresh baseline:
 * the thread's events came from epoll and it never moved the totals'
 * baseline, so the stall of the whole run (1.0 s of some over 10 s, 10 %:
 * MODERATE by the polled rule) would have fired at the first dispatch.
 */
static void test_pressure_psi_trigger_fd_mode_after_stop(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure" };
	char path[PATH_MAX];
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.interval_ns = 3600 * SEC;	/* no tick in the way */
	psi_file(&f, &t, path, sizeof(path));
	fx_monitor(&f);
	seam_on("memory.pressure", PROC_MAGIC);
	rcl__pressure_seam.trigger_epoll_flags = EPOLLET;
	src = rcl_pressure_add_psi(f.p, path);
	seam_off();
	assert_int_equal(rcl_pressure_start(f.p), 0);
	t.some += 1000000;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 10 * SEC);
	assert_int_equal(rcl_pressure_stop(f.p), 0);
	assert_int_equal(sinfo(f.p, src).events, 0);
	/* The timer keeps the new baseline no older than a window. */
	assert_int_equal(rcl_pressure_next_deadline(f.p), now(&f) + 2 * SEC);
	seam_fire(0);
	seam_consume(0);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).events, 0);
	seam_close_peers();
	assert_int_equal(rcl_pressure_free(f.p), 0);
	f.p = NULL;
	fx_monitor(&f);
	fx_fini(&f);
}

/*
 * fd mode: the application's poll of rcl_pressure_fd() polls the trigger
 * descriptors inside it, and that poll clears a trigger's event (emulated:
 * seam_consume()), so dispatch's wait returns nothing.  The totals stand
 * in: a level whose threshold the stall grew by within one window since
 * the baseline (some 140 ms MODERATE, 300 ms SEVERE, full 1400 ms
 * CRITICAL, systemd's trigger 200 ms SEVERE), each level once per window
 * and the stall that fired one counted once,
 * or, over a longer time, the same share of it; no growth is no event.
 * Before, none of them was seen.
 */
static void test_pressure_psi_trigger_fd_mode_consumed_events(void **state)
{
	struct fx f;
	struct psi_totals t = { .name = "memory.pressure" };
	char path[PATH_MAX];
	uint64_t u;
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.interval_ns = 3600 * SEC;	/* no tick in the way */
	psi_file(&f, &t, path, sizeof(path));
	fx_monitor(&f);
	seam_on("memory.pressure", PROC_MAGIC);
	src = rcl_pressure_add_psi(f.p, path);
	seam_off();
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_PSI_TRIGGER);
	/* The baseline is at most a window old: the timer says so. */
	assert_int_equal(rcl_pressure_next_deadline(f.p), now(&f) + 2 * SEC);

	/* Consumed, no growth: nothing. */
	seam_fire(0);
	seam_consume(0);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).events, 0);

	/* 140 ms of some within the window: MODERATE. */
	seam_fire(0);
	seam_consume(0);
	t.some += 140000;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 100 * MS);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_MODERATE, FLOOR));
	assert_int_equal(sinfo(f.p, src).events, 1);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_MODERATE);
	/* Once per level per window, as the kernel's trigger: nothing. */
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	t.some += 140000;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).events, 1);
	/* ... but 300 ms since the last event is SEVERE, a level higher. */
	t.some += 160000;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);	/* merged */
	assert_int_equal(sinfo(f.p, src).events, 2);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);

	/* full 1400 ms: CRITICAL. */
	adv(&f, 2 * SEC);
	u = usage(&f);
	/* The window rolls; the merged SEVERE acts at its wait's end. */
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_SEVERE, FLOOR));
	assert_int_equal(sinfo(f.p, src).events, 2);
	seam_fire(2);
	seam_consume(2);
	t.some += 1400000;
	t.full += 1400000;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, SEC);		/* the SEVERE action's wait ends */
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_CRITICAL, FLOOR));
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_CRITICAL);

	/* A late dispatch: 150 ms over 10 s is 1.5 %, nothing. */
	t.some += 150000;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 10 * SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).events, 3);
	/* ... but 1.5 s of some over 10 s (15 %) is SEVERE. */
	t.some += 1500000;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 10 * SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_int_equal(sinfo(f.p, src).events, 4);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(pstats(f.p).read_errors, 0);
	seam_close_peers();
	assert_int_equal(rcl_pressure_free(f.p), 0);

	/* systemd's PSI file: its own trigger, 200 ms per 2 s. */
	fx_monitor(&f);
	seam_on("memory.pressure", PROC_MAGIC);
	src = rcl_pressure_add_systemd(f.p, path, SD_WRITE);
	seam_off();
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_SYSTEMD_PSI);
	seam_fire(0);
	seam_consume(0);
	t.some += 199999;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	t.some += 1;
	put_psi(t.dir, t.name, t.some, t.full);
	adv(&f, 100 * MS);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	seam_close_peers();
	fx_fini(&f);
}

/*
 * A descriptor's level ends after twice the longer of the window and 2 s
 * without another event: with a window of 2^63 ns, twice it is beyond the
 * clock's range (saturated), not 0, and the level holds on the next tick.
 */
static void test_pressure_descriptor_level_with_a_huge_window(void **state)
{
	struct fx f;
	char path[PATH_MAX];
	int src, wr;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.window_ns = 1ull << 63;
	fx_monitor(&f);
	path_of(path, sizeof(path), f.tmp, "fifo");
	assert_int_equal(mkfifo(path, 0600), 0);
	src = rcl_pressure_add_systemd(f.p, path, NULL);
	assert_int_equal(src, 0);
	wr = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(wr >= 0);
	assert_int_equal(write(wr, "x", 1), 1);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	adv(&f, SEC);			/* a tick, no event */
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_SEVERE);
	assert_int_equal(close(wr), 0);
	fx_fini(&f);
}

/* A FIFO: each readiness (one byte written per dispatch here) is one event. */

static void test_pressure_systemd_fifo(void **state)
{
	struct fx f;
	struct rcl_pressure_source_info si;
	struct pollfd pfd;
	char path[PATH_MAX];
	uint64_t u;
	int src, wr;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.interval_ns = 3600 * SEC;		/* no timer during the test */
	fx_monitor(&f);
	path_of(path, sizeof(path), f.tmp, "fifo");
	assert_int_equal(mkfifo(path, 0600), 0);
	src = rcl_pressure_add_systemd(f.p, path, SD_WRITE);
	assert_int_equal(src, 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.mode, RCL_PSOURCE_SYSTEMD_FIFO);
	assert_string_equal(si.path, path);
	assert_int_equal(si.fallback_errno, 0);
	wr = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(wr >= 0);
	pfd.fd = rcl_pressure_fd(f.p);
	pfd.events = POLLIN;
	assert_true(pfd.fd >= 0);
	/* The monitor's own write is no event. */
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).events, 0);

	assert_int_equal(write(wr, "x", 1), 1);
	assert_int_equal(poll(&pfd, 1, 0), 1);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_SEVERE, FLOOR));
	si = sinfo(f.p, src);
	assert_int_equal(si.events, 1);
	assert_int_equal(si.actions, 1);
	assert_int_equal(si.level, RCL_PRESSURE_SEVERE);
	assert_int_equal(poll(&pfd, 1, 0), 0);	/* drained */
	/* Inside the window: merged; the action at its end. */
	adv(&f, 100 * MS);
	assert_int_equal(write(wr, "y", 1), 1);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.events, 2);
	assert_int_equal(si.merged, 1);
	adv(&f, 900 * MS);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_SEVERE, FLOOR));
	assert_int_equal(sinfo(f.p, src).events, 2);
	adv(&f, SEC);
	assert_int_equal(write(wr, "z", 1), 1);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_int_equal(sinfo(f.p, src).events, 3);
	assert_int_equal(sinfo(f.p, src).actions, 3);
	/* The writer goes: a FIFO has no peer to lose; nothing happens. */
	assert_int_equal(close(wr), 0);
	adv(&f, SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_SYSTEMD_FIFO);
	assert_int_equal(sinfo(f.p, src).events, 3);
	fx_fini(&f);
}

/* Read exactly @len bytes from @fd within 10 s. */
static void read_exact(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		assert_int_equal(poll(&pfd, 1, 10000), 1);
		n = read(fd, (char *)buf + got, len - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
}

/* A listening AF_UNIX stream socket at @path (socket() @flags added). */
static int unix_listen(const char *path, int flags)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd;

	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	return lfd;
}

/*
 * A monitor with an hour's interval (no tick in the test) and a socket
 * listening at @path (of @len bytes) in its directory; returns the socket.
 */
static int sd_socket_fixture(struct fx *f, char *path, size_t len)
{
	fx_init(f, BUDGET, FILL);
	f->cfg.interval_ns = 3600 * SEC;
	fx_monitor(f);
	path_of(path, len, f->tmp, "sock");
	return unix_listen(path, 0);
}

/*
 * An AF_UNIX stream socket: the monitor connects and writes the decoded
 * MEMORY_PRESSURE_WRITE ("some 200000 2000000" and its NUL, 20 bytes);
 * each readiness is an event; the peer closing turns the source off (mode
 * "off", its descriptor out of the epoll set: nothing stays readable, no
 * busy loop).
 */
static void test_pressure_systemd_socket(void **state)
{
	struct fx f;
	struct rcl_pressure_source_info si;
	struct pollfd pfd;
	char path[PATH_MAX], got[64];
	uint64_t u;
	int lfd, cfd, src, i;

	(void)state;
	lfd = sd_socket_fixture(&f, path, sizeof(path));

	src = rcl_pressure_add_systemd(f.p, path, SD_WRITE);
	assert_int_equal(src, 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.mode, RCL_PSOURCE_SYSTEMD_SOCKET);
	assert_string_equal(si.path, path);
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(cfd >= 0);
	read_exact(cfd, got, sizeof(sd_trigger));
	assert_memory_equal(got, sd_trigger, sizeof(sd_trigger));	/* + NUL */
	pfd.fd = cfd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0);		/* nothing more */

	pfd.fd = rcl_pressure_fd(f.p);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(write(cfd, "!", 1), 1);
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_SEVERE, FLOOR));
	si = sinfo(f.p, src);
	assert_int_equal(si.events, 1);
	assert_int_equal(si.level, RCL_PRESSURE_SEVERE);
	assert_int_equal(poll(&pfd, 1, 0), 0);

	/* The peer closes: off, and nothing is left readable. */
	assert_int_equal(close(cfd), 0);
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	si = sinfo(f.p, src);
	assert_int_equal(si.mode, RCL_PSOURCE_OFF);
	assert_int_equal(si.level, RCL_PRESSURE_NONE);
	assert_int_equal(si.events, 1);
	assert_string_equal(si.path, path);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).events, 1);
	assert_int_equal(pstats(f.p).dispatches, 102);
	assert_int_equal(pstats(f.p).level, RCL_PRESSURE_NONE);
	assert_int_equal(close(lfd), 0);
	fx_fini(&f);
}

/*
 * The peer writes its event and closes before the monitor reads: the byte
 * is an event still (as when a dispatch came between the two), and the
 * source turns off.
 */
static void test_pressure_systemd_socket_last_event_before_close(void **state)
{
	struct fx f;
	struct rcl_pressure_source_info si;
	struct pollfd pfd;
	char path[PATH_MAX], got[64];
	uint64_t u;
	int lfd, cfd, src;

	(void)state;
	lfd = sd_socket_fixture(&f, path, sizeof(path));
	src = rcl_pressure_add_systemd(f.p, path, SD_WRITE);
	assert_int_equal(src, 0);
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(cfd >= 0);
	read_exact(cfd, got, sizeof(sd_trigger));

	assert_int_equal(write(cfd, "!", 1), 1);
	assert_int_equal(close(cfd), 0);
	pfd.fd = rcl_pressure_fd(f.p);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	u = usage(&f);
	assert_int_equal(rcl_pressure_dispatch(f.p), 1);
	assert_budget(&f, doc_target(u, RCL_PRESSURE_SEVERE, FLOOR));
	si = sinfo(f.p, src);
	assert_int_equal(si.events, 1);
	assert_int_equal(si.actions, 1);
	assert_int_equal(si.mode, RCL_PSOURCE_OFF);
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(sinfo(f.p, src).events, 1);
	assert_int_equal(close(lfd), 0);
	fx_fini(&f);
}

/* A tiny base64 encoder for the size limit. */
/*
 * A systemd socket whose listener's backlog is full: connect() waits until
 * the listener accepts.  rcl_pressure_add_systemd() connected with the
 * monitor's locks held, so every other call on the monitor (stats,
 * dispatch, the library thread) waited behind it; it connects before it
 * takes them.  The add runs in one helper thread and, once that thread
 * sleeps in connect(), the other calls in a second one, waited for with a
 * bound; then the listener accepts and the add completes.
 */
static struct {
	struct rcl_pressure *p;
	char path[PATH_MAX];
	atomic_int tid;
	atomic_int add_ret, stats_ret, dispatch_ret, manual_ret;
	atomic_bool add_done, others_done;
} sdb;

static void *sdb_add_main(void *arg)
{
	(void)arg;
	atomic_store(&sdb.tid, (int)syscall(SYS_gettid));
	atomic_store(&sdb.add_ret, rcl_pressure_add_systemd(sdb.p, sdb.path, NULL));
	atomic_store(&sdb.add_done, true);
	return NULL;
}

static void *sdb_others_main(void *arg)
{
	struct rcl_pressure_stats st;

	(void)arg;
	atomic_store(&sdb.stats_ret, rcl_pressure_stats(sdb.p, &st));
	atomic_store(&sdb.dispatch_ret, rcl_pressure_dispatch(sdb.p));
	atomic_store(&sdb.manual_ret, rcl_pressure_add_manual(sdb.p));
	atomic_store(&sdb.others_done, true);
	return NULL;
}

/* Whether thread @tid of this process sleeps (state S in its stat). */
static bool thread_sleeps(int tid)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] == 'S';
}

static void test_pressure_systemd_socket_connect_holds_no_lock(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fill[64], nfill = 0, lfd, i, src;
	bool others_while_blocked;
	unsigned long spins;
	pthread_t ta, tb;
	struct fx f;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.interval_ns = 3600 * SEC;
	fx_monitor(&f);
	sdb.p = f.p;
	path_of(sdb.path, sizeof(sdb.path), f.tmp, "sock");
	assert_true(strlen(sdb.path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sdb.path, strlen(sdb.path));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	/* Fill the backlog with non-blocking connects until one would wait. */
	for (;;) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		assert_true(c >= 0);
		if (connect(c, (struct sockaddr *)&sa, sizeof(sa))) {
			assert_int_equal(errno, EAGAIN);
			close(c);
			break;
		}
		assert_true(nfill < 64);
		fill[nfill++] = c;
	}
	atomic_store(&sdb.tid, 0);
	atomic_store(&sdb.add_ret, 1);
	atomic_store(&sdb.stats_ret, 1);
	atomic_store(&sdb.dispatch_ret, 1);
	atomic_store(&sdb.manual_ret, -1);
	atomic_store(&sdb.add_done, false);
	atomic_store(&sdb.others_done, false);
	assert_int_equal(pthread_create(&ta, NULL, sdb_add_main, NULL), 0);
	for (spins = 0; spins < 10000 && !atomic_load(&sdb.add_done) &&
			(!atomic_load(&sdb.tid) ||
			 !thread_sleeps(atomic_load(&sdb.tid)));
	     spins++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	assert_false(atomic_load(&sdb.add_done));	/* waits in connect() */
	assert_int_equal(pthread_create(&tb, NULL, sdb_others_main, NULL), 0);
	for (spins = 0; !atomic_load(&sdb.others_done) && spins < 2000; spins++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	others_while_blocked = atomic_load(&sdb.others_done);
	assert_false(atomic_load(&sdb.add_done));
	/* The listener accepts: the add's connect() completes. */
	for (spins = 0; !atomic_load(&sdb.add_done) && spins < 10000; spins++) {
		struct timespec ts = { 0, 1000000 };
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (c >= 0)
			close(c);
		nanosleep(&ts, NULL);
	}
	assert_int_equal(pthread_join(ta, NULL), 0);
	assert_int_equal(pthread_join(tb, NULL), 0);
	if (!others_while_blocked)
		fail_msg("rcl_pressure_stats(), _dispatch() and _add_manual() "
			 "waited for add_systemd's connect()");
	assert_int_equal(atomic_load(&sdb.stats_ret), 0);
	assert_int_equal(atomic_load(&sdb.dispatch_ret), 0);
	assert_int_equal(atomic_load(&sdb.manual_ret), 0);
	src = atomic_load(&sdb.add_ret);
	assert_int_equal(src, 1);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_SYSTEMD_SOCKET);
	for (i = 0; i < nfill; i++)
		close(fill[i]);
	assert_int_equal(close(lfd), 0);
	fx_fini(&f);
}

/*
 * A systemd socket whose peer closed between the add's connect() and its
 * write of the data: the write fails (-EPIPE, nothing added), and raises
 * no SIGPIPE, whose default action ends the application.  The add waits
 * between the two for the action lock, held by an action in another
 * thread whose evict callback waits: meanwhile the listener accepts the
 * add's connection and closes it.  A handler counts SIGPIPEs.
 */
static struct {
	struct rcl_pressure *p;
	char path[PATH_MAX];
	int src;
	atomic_int in_evict, release, add_ret, notify_ret, sigpipes;
} spp;

static void spp_on_sigpipe(int sig)
{
	(void)sig;
	atomic_fetch_add(&spp.sigpipes, 1);
}

static void spp_evict_hook(struct tcache *c)
{
	(void)c;
	atomic_store(&spp.in_evict, 1);
	(void)wait_flag(&spp.release, 10000);
}

static void *spp_notify_main(void *arg)
{
	(void)arg;
	atomic_store(&spp.notify_ret,
		     rcl_pressure_notify(spp.p, spp.src, RCL_PRESSURE_CRITICAL));
	return NULL;
}

static void *spp_add_main(void *arg)
{
	(void)arg;
	atomic_store(&spp.add_ret,
		     rcl_pressure_add_systemd(spp.p, spp.path, SD_WRITE));
	return NULL;
}

static void test_pressure_systemd_socket_peer_gone_is_no_sigpipe(void **state)
{
	struct sigaction act = { .sa_handler = spp_on_sigpipe }, old;
	struct pollfd pfd;
	pthread_t tn, ta;
	struct fx f;
	int lfd, c;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	f.cfg.interval_ns = 3600 * SEC;
	f.cfg.flags = RCL_PRESSURE_NO_TRIM;
	fx_monitor(&f);
	memset(&spp, 0, sizeof(spp));
	spp.p = f.p;
	spp.src = rcl_pressure_add_manual(f.p);
	assert_int_equal(spp.src, 0);
	path_of(spp.path, sizeof(spp.path), f.tmp, "sock");
	lfd = unix_listen(spp.path, SOCK_NONBLOCK);
	sigemptyset(&act.sa_mask);
	assert_int_equal(sigaction(SIGPIPE, &act, &old), 0);
	atomic_store(&spp.add_ret, 1);
	atomic_store(&spp.notify_ret, 1);

	/* An action holds the action lock, in its evict callback. */
	atomic_store(&evict_hook, spp_evict_hook);
	assert_int_equal(pthread_create(&tn, NULL, spp_notify_main, NULL), 0);
	assert_true(wait_flag(&spp.in_evict, 10000));
	/* The add connects, then waits for the action lock. */
	assert_int_equal(pthread_create(&ta, NULL, spp_add_main, NULL), 0);
	pfd.fd = lfd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(c >= 0);
	assert_int_equal(close(c), 0);		/* the peer goes */
	atomic_store(&spp.release, 1);
	assert_int_equal(pthread_join(tn, NULL), 0);
	assert_int_equal(pthread_join(ta, NULL), 0);
	atomic_store(&evict_hook, NULL);
	assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);

	assert_int_equal(atomic_load(&spp.notify_ret), 0);
	assert_int_equal(atomic_load(&spp.sigpipes), 0);
	assert_int_equal(atomic_load(&spp.add_ret), -EPIPE);
	assert_int_equal(pstats(f.p).nr_sources, 1);
	assert_int_equal(close(lfd), 0);
	fx_fini(&f);
}

static void b64(const unsigned char *in, size_t n, char *out)
{
	static const char t[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i, o = 0;

	for (i = 0; i + 2 < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];

		out[o++] = t[v >> 18];
		out[o++] = t[v >> 12 & 63];
		out[o++] = t[v >> 6 & 63];
		out[o++] = t[v & 63];
	}
	if (n - i == 1) {
		unsigned v = (unsigned)in[i] << 16;

		out[o++] = t[v >> 18];
		out[o++] = t[v >> 12 & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;

		out[o++] = t[v >> 18];
		out[o++] = t[v >> 12 & 63];
		out[o++] = t[v >> 6 & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
}

/* The write seam: short by half, and errno left as it was. */
static ssize_t short_write(int fd, const void *buf, size_t len)
{
	(void)buf;
	(void)fd;
	errno = 0;
	return (ssize_t)(len / 2);
}

/*
 * A short write of systemd's data to the socket is -EIO, and adds
 * nothing.  The call returned 0, the index of a source it never added
 * (err = -errno with errno 0), left its half-made slot in place, and the
 * next add took the slot over with its mode.
 */
static void test_pressure_systemd_short_write_adds_nothing(void **state)
{
	struct fx f;
	struct rcl_pressure_source_info si;
	char path[PATH_MAX];
	unsigned fds;
	int lfd, src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	path_of(path, sizeof(path), f.tmp, "sock");
	lfd = unix_listen(path, 0);

	fds = fd_count();
	rcl__pressure_seam.write = short_write;
	src = rcl_pressure_add_systemd(f.p, path, SD_WRITE);
	rcl__pressure_seam.write = NULL;
	assert_int_equal(src, -EIO);
	assert_int_equal(pstats(f.p).nr_sources, 0);
	assert_int_equal(fd_count(), fds);
	assert_int_equal(rcl_pressure_source_info(f.p, 0, &si), -ENOENT);
	/* The slot is clean for the next add. */
	src = rcl_pressure_add_manual(f.p);
	assert_int_equal(src, 0);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_MANUAL);
	assert_string_equal(sinfo(f.p, src).path, "");
	close(lfd);
	fx_fini(&f);
}

/*
 * The protocol's edges: "/dev/null" is off; a relative path, bad base64
 * or more than 1 KiB decoded -EINVAL; a directory or device -EBADF; a
 * missing path or an unset variable -ENOENT; watch = NULL takes both
 * variables, a watch given takes neither.  Failures add nothing.
 */
static void test_pressure_systemd_paths_and_environment(void **state)
{
	struct fx f;
	char fifo[PATH_MAX], big[1400];
	unsigned char raw[1025];
	int src;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	fx_monitor(&f);
	unset_sd_env();
	path_of(fifo, sizeof(fifo), f.tmp, "fifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);

	assert_int_equal(rcl_pressure_add_systemd(f.p, "relative/path", NULL), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(f.p, "", NULL), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(f.p, fifo, "not base64!"), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(f.p, fifo, "===="), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(f.p, fifo, "c29tZQ=x"), -EINVAL);
	memset(raw, 'a', sizeof(raw));
	b64(raw, 1025, big);
	assert_int_equal(rcl_pressure_add_systemd(f.p, fifo, big), -EINVAL);
	assert_int_equal(rcl_pressure_add_systemd(f.p, f.tmp, NULL), -EBADF);
	assert_int_equal(rcl_pressure_add_systemd(f.p, "/dev/zero", NULL), -EBADF);
	assert_int_equal(rcl_pressure_add_systemd(f.p, "/nonexistent-rcl-test/x", NULL),
			 -ENOENT);
	assert_int_equal(rcl_pressure_add_systemd(f.p, NULL, NULL), -ENOENT);
	assert_int_equal(rcl_pressure_add_systemd(f.p, NULL, SD_WRITE), -ENOENT);
	assert_int_equal(pstats(f.p).nr_sources, 0);

	/* 1 KiB decoded is the most. */
	b64(raw, 1024, big);
	src = rcl_pressure_add_systemd(f.p, fifo, big);
	assert_int_equal(src, 0);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_SYSTEMD_FIFO);
	/* Unpadded base64 is base64 too. */
	assert_int_equal(rcl_pressure_add_systemd(f.p, fifo, "c29tZQ"), 1);
	/* /dev/null: off, watches nothing. */
	src = rcl_pressure_add_systemd(f.p, "/dev/null", SD_WRITE);
	assert_int_equal(src, 2);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_OFF);
	assert_string_equal(sinfo(f.p, src).path, "/dev/null");

	/* The environment, when watch is NULL. */
	assert_int_equal(setenv("MEMORY_PRESSURE_WATCH", fifo, 1), 0);
	assert_int_equal(setenv("MEMORY_PRESSURE_WRITE", SD_WRITE, 1), 0);
	src = rcl_pressure_add_systemd(f.p, NULL, NULL);
	assert_int_equal(src, 3);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_SYSTEMD_FIFO);
	assert_string_equal(sinfo(f.p, src).path, fifo);
	assert_int_equal(setenv("MEMORY_PRESSURE_WRITE", "%%%", 1), 0);
	assert_int_equal(rcl_pressure_add_systemd(f.p, NULL, NULL), -EINVAL);
	/* A watch given: MEMORY_PRESSURE_WRITE is not read. */
	assert_int_equal(rcl_pressure_add_systemd(f.p, fifo, NULL), 4);
	/* An explicit write with watch = NULL replaces the variable. */
	assert_int_equal(rcl_pressure_add_systemd(f.p, NULL, SD_WRITE), 5);
	/* ... which is read, with watch = NULL: not base64. */
	assert_int_equal(setenv("MEMORY_PRESSURE_WATCH", "/dev/null", 1), 0);
	assert_int_equal(rcl_pressure_add_systemd(f.p, NULL, NULL), -EINVAL);
	assert_int_equal(setenv("MEMORY_PRESSURE_WRITE", SD_WRITE, 1), 0);
	src = rcl_pressure_add_systemd(f.p, NULL, NULL);
	assert_int_equal(src, 6);
	assert_int_equal(sinfo(f.p, src).mode, RCL_PSOURCE_OFF);
	assert_int_equal(setenv("MEMORY_PRESSURE_WATCH", "pressure", 1), 0);
	assert_int_equal(rcl_pressure_add_systemd(f.p, NULL, NULL), -EINVAL);
	unset_sd_env();
	assert_int_equal(rcl_pressure_add_systemd(f.p, NULL, NULL), -ENOENT);
	assert_int_equal(pstats(f.p).nr_sources, 7);
	/* Off sources never fire. */
	adv(&f, 10 * SEC);
	assert_int_equal(rcl_pressure_dispatch(f.p), 0);
	assert_int_equal(pstats(f.p).actions, 0);
	fx_fini(&f);
}

/* ------------------------------------------------------------------------- */
/* 8. Lifetime: the domain held, the thread, descriptors, fork                */
/* ------------------------------------------------------------------------- */

static void test_pressure_holds_its_domain(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure *a, *b;
	struct rcl_domain *d;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	assert_int_equal(rcl_pressure_new(&pc, &a), 0);
	assert_int_equal(rcl_pressure_new(&pc, &b), 0);
	assert_int_equal(rcl_domain_free(d), -EBUSY);
	assert_int_equal(rcl_pressure_free(a), 0);
	assert_int_equal(rcl_domain_free(d), -EBUSY);
	assert_int_equal(rcl_pressure_free(b), 0);
	assert_int_equal(rcl_pressure_free(NULL), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

static uint64_t mono_now(void)
{
	return rcl_clock_monotonic()->now(NULL);
}

/*
 * rcl_pressure_fd() is -EBUSY while the library thread runs (it waits on
 * the descriptor); start twice -EBUSY; stop twice 0.
 */
static void test_pressure_fd_busy_while_thread_runs(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure *p;
	struct rcl_domain *d;
	int fd;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	pc.interval_ns = 5 * MS;
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	fd = rcl_pressure_fd(p);
	assert_true(fd >= 0);
	assert_int_equal(rcl_pressure_start(p), 0);
	assert_int_equal(rcl_pressure_start(p), -EBUSY);
	assert_int_equal(rcl_pressure_fd(p), -EBUSY);
	assert_int_equal(rcl_pressure_stop(p), 0);
	assert_int_equal(rcl_pressure_stop(p), 0);
	assert_int_equal(rcl_pressure_fd(p), fd);
	assert_int_equal(rcl_pressure_start(p), 0);
	/* Freed while it runs: stopped first. */
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * The real clock, an interval of 5 ms: the descriptor becomes readable
 * when the timer is due (within a generous bound, no timing asserted),
 * dispatch does the tick and re-arms it, and it becomes readable again.
 */
static void test_pressure_fd_readable_when_timer_due(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure *p;
	struct rcl_domain *d;
	struct pollfd pfd = { .events = POLLIN };
	uint64_t t;

	(void)state;
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	pc.interval_ns = 5 * MS;
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	pfd.fd = rcl_pressure_fd(p);
	assert_true(pfd.fd >= 0);
	assert_int_equal(poll(&pfd, 1, 30000), 1);
	assert_true(pfd.revents & POLLIN);
	t = mono_now();
	assert_int_equal(rcl_pressure_dispatch(p), 0);
	assert_int_equal(pstats(p).dispatches, 1);
	assert_true(rcl_pressure_next_deadline(p) > t);
	assert_int_equal(poll(&pfd, 1, 30000), 1);
	assert_int_equal(rcl_pressure_dispatch(p), 0);
	assert_int_equal(pstats(p).dispatches, 2);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
}

/*
 * Every descriptor the monitor opens is O_CLOEXEC (the epoll set, the
 * timerfd, and what each kind of source holds), and freeing it closes
 * them all.
 */
static void test_pressure_descriptors_are_cloexec(void **state)
{
	static bool before[MAX_FDS], after[MAX_FDS], end[MAX_FDS];
	struct fx f;
	struct cg c;
	char psi[PATH_MAX], fifo[PATH_MAX], sock[PATH_MAX];
	unsigned i, nr_new = 0;
	int lfd, cfd;

	(void)state;
	fx_init(&f, BUDGET, FILL);
	put_psi(f.tmp, "psi", 0, 0);
	path_of(psi, sizeof(psi), f.tmp, "psi");
	cg_init(&c, &f, "cg", 2, 1);
	cg_write(&c);
	path_of(fifo, sizeof(fifo), f.tmp, "fifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	path_of(sock, sizeof(sock), f.tmp, "sock");
	lfd = unix_listen(sock, 0);

	fd_set_now(before);
	fx_monitor(&f);
	assert_int_equal(rcl_pressure_add_psi(f.p, psi), 0);
	assert_int_equal(rcl_pressure_add_cgroup(f.p, c.dir, 0), 1);
	assert_int_equal(rcl_pressure_add_systemd(f.p, fifo, SD_WRITE), 2);
	assert_int_equal(rcl_pressure_add_systemd(f.p, sock, SD_WRITE), 3);
	assert_int_equal(rcl_pressure_add_systemd(f.p, "/dev/null", NULL), 4);
	assert_int_equal(rcl_pressure_add_manual(f.p), 5);
	fd_set_now(after);
	for (i = 0; i < MAX_FDS; i++) {
		int fl;

		if (!after[i] || before[i])
			continue;
		nr_new++;
		fl = fcntl((int)i, F_GETFD);
		assert_true(fl >= 0);
		if (!(fl & FD_CLOEXEC))
			fail_msg("descriptor %u has no FD_CLOEXEC", i);
	}
	/* At least the epoll set, the timerfd, the FIFO and the socket. */
	assert_true(nr_new >= 4);
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(cfd >= 0);
	assert_int_equal(close(cfd), 0);
	assert_int_equal(rcl_pressure_free(f.p), 0);
	f.p = NULL;
	fd_set_now(end);
	assert_memory_equal(end, before, sizeof(before));
	assert_int_equal(close(lfd), 0);
	fx_fini(&f);
}

/*
 * After fork() the child frees its copy with rcl_pressure_free(): it does
 * not join the parent's thread (it has none) and returns 0; the parent's
 * monitor and its thread go on (a FIFO byte is still its event).
 */
static void test_pressure_free_in_forked_child(void **state)
{
	struct rcl_domain_config dc = { .budget = 1000 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure *p;
	struct rcl_domain *d;
	char tmp[PATH_MAX], fifo[PATH_MAX];
	unsigned long spins;
	int status = -1, src, wr;
	pid_t pid, w = 0;

	(void)state;
	tmpdir_new(tmp, sizeof(tmp));
	path_of(fifo, sizeof(fifo), tmp, "fifo");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(rcl_domain_new(&dc, &d), 0);
	pc.domain = d;
	pc.interval_ns = 20 * MS;
	assert_int_equal(rcl_pressure_new(&pc, &p), 0);
	src = rcl_pressure_add_systemd(p, fifo, NULL);
	assert_int_equal(src, 0);
	assert_int_equal(rcl_pressure_start(p), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(rcl_pressure_free(p) == 0 ? 0 : 1);
	for (spins = 0; spins < 10000; spins++) {
		struct timespec ts = { 0, 1000000 };

		w = waitpid(pid, &status, WNOHANG);
		if (w)
			break;
		nanosleep(&ts, NULL);
	}
	if (!w) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the child's rcl_pressure_free() did not return");
	}
	assert_int_equal(w, pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	wr = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(wr >= 0);
	assert_int_equal(write(wr, "x", 1), 1);
	for (spins = 0; sinfo(p, src).events == 0 && spins < 20000; spins++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	assert_int_equal(sinfo(p, src).events, 1);
	assert_int_equal(close(wr), 0);
	assert_int_equal(rcl_pressure_stop(p), 0);
	assert_int_equal(rcl_pressure_free(p), 0);
	assert_int_equal(rcl_domain_free(d), 0);
	tmpdir_rm(tmp);
}

/*
 * A monitor of a root R, called from an evict callback of a child C's
 * lruvec during R's reclaim pass (R's pass over C): rcl_pressure_notify()
 * and rcl_pressure_dispatch() are refused (-EDEADLK, no action), as from
 * any callback of a pass of the domain's tree.  Before the fix the check
 * compared the domain being scanned (C) with the monitor's (R), and the
 * action ran inside R's pass.
 */
#define TREE_N 64
struct tree_pass {
	struct rcl_domain *r, *c;
	struct rcl_pressure *p;
	struct rcl_lruvec lv;
	struct rcl_lru_node nodes[TREE_N];
	int src, calls, notify_ret, dispatch_ret;
};

static struct tree_pass tree_pass;

static enum rcl_evict_status tree_pass_evict(struct rcl_lru_node *n,
					     struct rcl_evict_control *ctl)
{
	(void)n;
	(void)ctl;
	if (!tree_pass.calls++) {
		tree_pass.notify_ret = rcl_pressure_notify(
			tree_pass.p, tree_pass.src, RCL_PRESSURE_CRITICAL);
		tree_pass.dispatch_ret = rcl_pressure_dispatch(tree_pass.p);
	}
	rcl_domain_uncharge(tree_pass.c, 1);
	return RCL_EVICT_FREED;
}

static void test_pressure_refused_from_tree_pass_over_child(void **state)
{
	static const struct rcl_lruvec_ops ops = { .evict = tree_pass_evict };
	struct rcl_lruvec_config lc = { .ops = &ops };
	struct rcl_domain_config rc = { .budget = 1000 }, cc = { .budget = 0 };
	struct rcl_pressure_config pc = { 0 };
	struct rcl_pressure_stats st;
	struct rcl_reclaim_result res;
	int i;

	(void)state;
	memset(&tree_pass, 0, sizeof(tree_pass));
	tree_pass.notify_ret = tree_pass.dispatch_ret = 12345;
	assert_int_equal(rcl_domain_new(&rc, &tree_pass.r), 0);
	cc.parent = tree_pass.r;
	assert_int_equal(rcl_domain_new(&cc, &tree_pass.c), 0);
	assert_int_equal(rcl_lruvec_init(&tree_pass.lv, &lc), 0);
	assert_int_equal(rcl_domain_attach(tree_pass.c, &tree_pass.lv, 0), 0);
	pc.domain = tree_pass.r;
	pc.flags = RCL_PRESSURE_NO_TRIM;
	assert_int_equal(rcl_pressure_new(&pc, &tree_pass.p), 0);
	tree_pass.src = rcl_pressure_add_manual(tree_pass.p);
	assert_true(tree_pass.src >= 0);
	for (i = 0; i < TREE_N; i++) {
		assert_int_equal(rcl_lruvec_add(&tree_pass.lv,
						&tree_pass.nodes[i],
						RCL_LRU_FILE, 1,
						RCL_LRU_ADD_NOBATCH), 0);
		assert_int_equal(rcl_domain_charge(tree_pass.c, 1, 0, NULL), 0);
	}
	assert_int_equal(rcl_domain_reclaim(tree_pass.r, 8, RCL_CTX_CAPABLE,
					    &res), 0);
	assert_true(tree_pass.calls > 0);
	assert_int_equal(tree_pass.notify_ret, -EDEADLK);
	assert_int_equal(tree_pass.dispatch_ret, -EDEADLK);
	assert_int_equal(rcl_pressure_stats(tree_pass.p, &st), 0);
	assert_int_equal(st.actions, 0);
	/* Outside the pass the same notify acts. */
	assert_int_equal(rcl_pressure_notify(tree_pass.p, tree_pass.src,
					     RCL_PRESSURE_CRITICAL), 0);
	assert_int_equal(rcl_pressure_stats(tree_pass.p, &st), 0);
	assert_int_equal(st.actions, 1);

	assert_int_equal(rcl_pressure_free(tree_pass.p), 0);
	for (i = 0; i < TREE_N; i++)
		rcl_lruvec_del(&tree_pass.lv, &tree_pass.nodes[i]);
	assert_int_equal(rcl_domain_detach(tree_pass.c, &tree_pass.lv), 0);
	assert_int_equal(rcl_lruvec_destroy(&tree_pass.lv), 0);
	rcl_domain_uncharge(tree_pass.c, rcl_domain_usage(tree_pass.c));
	assert_int_equal(rcl_domain_free(tree_pass.c), 0);
	assert_int_equal(rcl_domain_free(tree_pass.r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pressure_level_from_glib),
		cmocka_unit_test(test_pressure_level_from_android),
		cmocka_unit_test(test_pressure_level_and_mode_names),
		cmocka_unit_test(test_pressure_levels_step_the_budget),
		cmocka_unit_test(test_pressure_min_budget_is_the_floor),
		cmocka_unit_test(test_pressure_rate_limit_merges_into_one_action),
		cmocka_unit_test(test_pressure_none_keeps_a_merged_action),
		cmocka_unit_test(test_pressure_backoff_on_an_empty_cache),
		cmocka_unit_test(test_pressure_backoff_bounds),
		cmocka_unit_test(test_pressure_budget_grows_back_per_quiet_interval),
		cmocka_unit_test(test_pressure_grow_pct),
		cmocka_unit_test(test_pressure_application_budget_holds),
		cmocka_unit_test(test_pressure_config_interval),
		cmocka_unit_test(test_pressure_base_budget),
		cmocka_unit_test(test_pressure_trim_after_freed_bytes_once_per_interval),
		cmocka_unit_test(test_pressure_trim_needs_trim_min_bytes),
		cmocka_unit_test(test_pressure_no_trim_flag),
		cmocka_unit_test(test_pressure_trim_hook_cannot_free_or_stop),
		cmocka_unit_test(test_pressure_evict_callback_cannot_free_or_stop),
		cmocka_unit_test(test_pressure_add_from_own_callbacks_is_refused),
		cmocka_unit_test(test_pressure_nested_action_keeps_the_refusal),
		cmocka_unit_test(test_pressure_callback_of_a_nested_action_refuses_the_outer),
		cmocka_unit_test(test_pressure_two_monitors_calling_each_other_do_not_deadlock),
		cmocka_unit_test(test_pressure_evict_callback_of_a_direct_shrink_does_not_deadlock),
		cmocka_unit_test(test_pressure_stop_from_a_callback_does_not_wait_for_a_queued_action),
		cmocka_unit_test(test_pressure_stop_of_a_thread_waiting_to_act_is_no_refusal),
		cmocka_unit_test(test_pressure_free_in_a_fork_child_while_the_parent_waits),
		cmocka_unit_test(test_pressure_thread_callbacks_cannot_stop),
		cmocka_unit_test(test_pressure_threads_stopping_each_other_do_not_deadlock),
		cmocka_unit_test(test_pressure_cgroup_version_detection),
		cmocka_unit_test(test_pressure_cgroup_v2_ratio_levels),
		cmocka_unit_test(test_pressure_cgroup_v2_events),
		cmocka_unit_test(test_pressure_cgroup_v2_events_fd_gone),
		cmocka_unit_test(test_pressure_cgroup_v1),
		cmocka_unit_test(test_pressure_cgroup_v1_hierarchical_limit),
		cmocka_unit_test(test_pressure_cgroup_v1_low_needs_a_limit),
		cmocka_unit_test(test_pressure_cgroup_budget_follows_the_limit),
		cmocka_unit_test(test_pressure_container_budget_binds_below_the_floor),
		cmocka_unit_test(test_pressure_unlimited_base_actions_free),
		cmocka_unit_test(test_pressure_cgroup_inactive_file_is_not_pressure),
		cmocka_unit_test(test_pressure_cgroup_bad_files_at_creation),
		cmocka_unit_test(test_pressure_cgroup_file_of_16_kib_is_read),
		cmocka_unit_test(test_pressure_own_cgroup_with_a_long_mountinfo),
		cmocka_unit_test(test_pressure_cgroup_v2_limit_of_an_ancestor),
		cmocka_unit_test(test_pressure_cgroup_v2_ancestors_are_bounded),
		cmocka_unit_test(test_pressure_cgroup_bad_events_file_at_creation),
		cmocka_unit_test(test_pressure_cgroup_bad_files_after_creation),
		cmocka_unit_test(test_pressure_memory_sample),
		cmocka_unit_test(test_pressure_psi_file_polled),
		cmocka_unit_test(test_pressure_psi_polled_forced_tick_too_soon),
		cmocka_unit_test(test_pressure_psi_polled_forced_tick_keeps_the_level),
		cmocka_unit_test(test_pressure_psi_polled_without_a_timer),
		cmocka_unit_test(test_pressure_psi_bad_files),
		cmocka_unit_test(test_pressure_psi_fifo_does_not_block),
		cmocka_unit_test(test_pressure_systemd_psi_file_polled),
		cmocka_unit_test(test_pressure_systemd_psi_poll_needs_an_interval),
		cmocka_unit_test(test_pressure_systemd_psi_file_without_trigger_is_polled),
		cmocka_unit_test(test_pressure_systemd_trigger_as_proc_pressure_reads_it),
		cmocka_unit_test(test_pressure_psi_trigger_gone_turns_off),
		cmocka_unit_test(test_pressure_psi_trigger_level_is_the_highest),
		cmocka_unit_test(test_pressure_psi_trigger_events_reach_the_thread),
		cmocka_unit_test(test_pressure_psi_trigger_fd_mode_consumed_events),
		cmocka_unit_test(test_pressure_psi_trigger_fd_mode_mixed_events),
		cmocka_unit_test(test_pressure_psi_trigger_fd_mode_after_stop),
		cmocka_unit_test(test_pressure_systemd_fifo),
		cmocka_unit_test(test_pressure_descriptor_level_with_a_huge_window),
		cmocka_unit_test(test_pressure_systemd_socket),
		cmocka_unit_test(test_pressure_systemd_socket_last_event_before_close),
		cmocka_unit_test(test_pressure_systemd_socket_connect_holds_no_lock),
		cmocka_unit_test(test_pressure_systemd_socket_peer_gone_is_no_sigpipe),
		cmocka_unit_test(test_pressure_systemd_short_write_adds_nothing),
		cmocka_unit_test(test_pressure_systemd_paths_and_environment),
		cmocka_unit_test(test_pressure_holds_its_domain),
		cmocka_unit_test(test_pressure_fd_busy_while_thread_runs),
		cmocka_unit_test(test_pressure_fd_readable_when_timer_due),
		cmocka_unit_test(test_pressure_descriptors_are_cloexec),
		cmocka_unit_test(test_pressure_free_in_forked_child),
		cmocka_unit_test(test_pressure_refused_from_tree_pass_over_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
