/* SPDX-License-Identifier: MIT */
/*
 * The pressure monitor against the real kernel: a real memory cgroup with
 * a limit, a real second process that takes memory from the cache's
 * cgroup, and this machine's real PSI file.  No fake clock, no fake files.
 *
 * Part 1, PSI.  rcl_pressure_add_psi(p, NULL) on /proc/pressure/memory
 * must succeed and say how it reads the file: "psi-trigger" (the kernel
 * took the triggers) or "psi-poll" with the errno that refused them.  The
 * test writes the same first trigger itself and checks that the library's
 * answer agrees with the kernel's.  Skipped (with a message) where the
 * file is absent or PSI is disabled (EOPNOTSUPP).
 *
 * Part 2, the cgroup.  The test creates a child of its own memory cgroup
 * (v2 if its cgroup can give children the memory controller, else v1's
 * memory hierarchy), with a limit of LIMIT and no swap (v1 memsw = the
 * limit, v2 memory.swap.max = 0), and forks two processes that move
 * themselves into it:
 *
 *  - the cache: an object cache (<reclaim/objcache.h>) of 64 KiB objects,
 *    malloc'd and touched, in a strict domain whose budget alone fills 70 %
 *    of the limit, driven by a monitor with rcl_pressure_add_cgroup(p,
 *    NULL, 0) (its own cgroup, found from /proc/self/cgroup),
 *    RCL_PRESSURE_FOLLOW_CGROUP, a 50 ms interval, the default trim hook
 *    (malloc_trim(0)) and rcl_pressure_start().  It fills itself to its
 *    budget, then keeps serving a skewed get-or-insert workload over twice
 *    as many keys as fit, and prints a timeline (logical usage, budget,
 *    RSS, the cgroup's working set, the level) every 100 ms;
 *  - the hog: allocates and touches HOG_BYTES (half the limit) in steps of
 *    HOG_STEP (1 MiB) every HOG_STEP_MS (100 ms), then holds it.
 *
 * The cache alone (70 %) plus the hog (50 %) do not fit: the limit holds
 * only if the cache gives memory back, logically (its budget follows the
 * cgroup) and really (freed objects trimmed back to the kernel).  It
 * passes when the cache shrank (its usage and budget, reported through a
 * pipe before the hog and after it), nothing in the cgroup was OOM-killed
 * (the cgroup's oom_kill counter, and both children exited normally, not
 * by SIGKILL), and the cgroup is gone at the end.
 *
 * Exit status: 0 pass, 1 fail, 77 skip (no memory cgroup this process may
 * create a child in: not root, no memory controller, the cgroup v2
 * "no internal processes" rule, or a sanitizer build, whose allocator keeps
 * freed memory in a quarantine the limit cannot hold).  The cgroup is
 * removed on every path: the children are killed and reaped first, also
 * from SIGTERM (meson's timeout) and SIGALRM (the test's own deadline).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <reclaim/domain.h>
#include <reclaim/objcache.h>
#include <reclaim/pressure.h>

#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif

#define KIB (1ull << 10)
#define MIB (1ull << 20)

#define LIMIT (96 * MIB)
#define CACHE_BUDGET (LIMIT * 70 / 100)
#define OBJ_SIZE (64 * KIB)
#define NR_KEYS (2 * CACHE_BUDGET / OBJ_SIZE)
#define HOG_BYTES (LIMIT / 2)
/*
 * The hog's pace: 10 MiB/s, half a MiB per monitor interval, a twentieth
 * of the margin that RCL_PRESSURE_CGROUP_PCT_DEFAULT (90 %) leaves (10 %
 * of the limit, 9.6 MiB): a monitor that follows the cgroup keeps up.
 */
#define HOG_STEP (1 * MIB)
#define HOG_STEP_MS 100
#define INTERVAL_NS 50000000ull		/* the monitor's timer: 50 ms */
#define SETTLE_MS 100			/* between "after" reports ... */
#define SETTLE_TRIES 200		/* ... at most this many */
#define DEADLINE_S 60			/* the whole test (SIGALRM) */

/* ------------------------------------------------------------------------- */
/* Output and time                                                            */
/* ------------------------------------------------------------------------- */

static uint64_t t0_ns;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double t_s(void)
{
	return (double)(mono_ns() - t0_ns) / 1e9;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR) {
	}
}

static double mib(uint64_t b)
{
	return (double)b / (double)MIB;
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* ------------------------------------------------------------------------- */
/* Files                                                                      */
/* ------------------------------------------------------------------------- */

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err = 0;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

/* Read a small file into @buf (NUL-terminated): the length or -errno. */
static ssize_t read_str(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* The value after "key " in a keyed file (v1 oom_control, v2 events). */
static int read_keyed(const char *path, const char *key, uint64_t *out)
{
	char buf[4096], *line, *save = NULL;
	size_t klen = strlen(key);

	if (read_str(path, buf, sizeof(buf)) < 0)
		return -errno;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			*out = strtoull(line + klen + 1, NULL, 10);
			return 0;
		}
	return -ENOENT;
}

/* ------------------------------------------------------------------------- */
/* Part 1: PSI                                                                */
/* ------------------------------------------------------------------------- */

#define PSI_PATH "/proc/pressure/memory"

/* 0 pass, 1 fail, 77 skipped; @mode receives what ran, for the summary. */
static int psi_part(char *mode, size_t size)
{
	struct rcl_domain_config dcfg = { .budget = MIB };
	struct rcl_pressure_config pcfg = { 0 };
	struct rcl_pressure_source_info info;
	struct rcl_pressure *p = NULL;
	struct rcl_domain *d = NULL;
	const char *trig = "some 140000 2000000";
	char buf[512];
	int fd, idx, kernel_errno = 0, rc = 0;

	say("# psi: %s\n", PSI_PATH);
	if (read_str(PSI_PATH, buf, sizeof(buf)) < 0) {
		int e = errno;

		if (e == ENOENT || e == EOPNOTSUPP) {
			say("# psi: SKIPPED: %s (%s)\n",
			    e == ENOENT ? "the file is absent (no PSI in this kernel)" :
					  "PSI is compiled in but disabled",
			    strerror(e));
			snprintf(mode, size, "skipped (%s)", strerror(e));
			return 77;
		}
		say("# psi: cannot read it: %s\n", strerror(e));
	}

	/* What the kernel says to the first of the library's triggers. */
	fd = open(PSI_PATH, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		kernel_errno = errno;
	else if (write(fd, trig, strlen(trig) + 1) < 0)
		kernel_errno = errno;
	if (fd >= 0)
		close(fd);
	say("# psi: the kernel %s the trigger \"%s\"%s%s\n",
	    kernel_errno ? "refuses" : "accepts", trig,
	    kernel_errno ? ": " : "", kernel_errno ? strerror(kernel_errno) : "");

	T_EQ(rcl_domain_new(&dcfg, &d), 0);
	pcfg.domain = d;
	pcfg.flags = RCL_PRESSURE_NO_TRIM;
	T_EQ(rcl_pressure_new(&pcfg, &p), 0);
	idx = rcl_pressure_add_psi(p, NULL);
	if (idx == -ENOENT || idx == -EOPNOTSUPP) {
		say("# psi: SKIPPED: rcl_pressure_add_psi: %s\n", strerror(-idx));
		snprintf(mode, size, "skipped (%s)", strerror(-idx));
		rc = 77;
		goto out;
	}
	if (idx < 0) {
		say("not ok - psi: rcl_pressure_add_psi(p, NULL) = %d (%s)\n",
		    idx, strerror(-idx));
		snprintf(mode, size, "failed (%s)", strerror(-idx));
		rc = 1;
		goto out;
	}
	T_EQ(rcl_pressure_source_info(p, idx, &info), 0);
	say("# psi: mode %s, fallback_errno %d%s%s%s, path %s\n",
	    rcl_pressure_source_mode_name(info.mode), info.fallback_errno,
	    info.fallback_errno ? " (" : "",
	    info.fallback_errno ? strerror(info.fallback_errno) : "",
	    info.fallback_errno ? ")" : "", info.path);
	snprintf(mode, size, "%s%s%s", rcl_pressure_source_mode_name(info.mode),
		 info.fallback_errno ? ", fallback_errno " : "",
		 info.fallback_errno ? strerror(info.fallback_errno) : "");
	if (info.mode == RCL_PSOURCE_PSI_TRIGGER) {
		if (kernel_errno || info.fallback_errno) {
			say("not ok - psi: psi-trigger, but the kernel refused the trigger (%s)\n",
			    strerror(kernel_errno));
			rc = 1;
		}
	} else if (info.mode == RCL_PSOURCE_PSI_POLL) {
		if (!info.fallback_errno) {
			say("not ok - psi: psi-poll without a fallback_errno\n");
			rc = 1;
		} else if (!kernel_errno) {
			say("not ok - psi: psi-poll (%s), but the kernel accepted the same trigger\n",
			    strerror(info.fallback_errno));
			rc = 1;
		}
	} else {
		say("not ok - psi: unexpected mode %s\n",
		    rcl_pressure_source_mode_name(info.mode));
		rc = 1;
	}
	/* The source is read and dispatched once for real. */
	if (rcl_pressure_dispatch(p) < 0) {
		say("not ok - psi: rcl_pressure_dispatch failed\n");
		rc = 1;
	}
	if (!rc)
		say("ok - psi: rcl_pressure_add_psi on %s: %s\n", PSI_PATH, mode);
out:
	T_EQ(rcl_pressure_free(p), 0);
	T_EQ(rcl_domain_free(d), 0);
	return rc;
}

/* ------------------------------------------------------------------------- */
/* The child cgroup: finding our own, creating, removing                     */
/* ------------------------------------------------------------------------- */

static char cg_dir[PATH_MAX];		/* the child we created, or "" */
static unsigned cg_version;
static volatile pid_t kids[2];		/* cache, hog; 0 when reaped */

/*
 * Our own cgroup's directory for @version (1: the memory hierarchy; 2: the
 * unified one) into @out: 0, or -ENOENT with a reason in @why.
 */
static int own_cgroup(unsigned version, char *out, size_t size, char *why,
		      size_t wsize)
{
	char buf[16384], path[PATH_MAX] = "", *line, *save = NULL;
	bool found = false;

	if (read_str("/proc/self/cgroup", buf, sizeof(buf)) < 0) {
		snprintf(why, wsize, "/proc/self/cgroup: %s", strerror(errno));
		return -ENOENT;
	}
	for (line = strtok_r(buf, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		if (version == 2 && c1 == line + 1 && line[0] == '0' &&
		    c2 == c1 + 1) {
			found = true;
		} else if (version == 1) {
			char *ctl, *s2 = NULL;

			for (ctl = strtok_r(c1 + 1, ",", &s2); ctl;
			     ctl = strtok_r(NULL, ",", &s2))
				if (!strcmp(ctl, "memory"))
					found = true;
		}
		if (found)
			snprintf(path, sizeof(path), "%s", c2 + 1);
	}
	if (!found) {
		snprintf(why, wsize, "no %s line in /proc/self/cgroup",
			 version == 2 ? "cgroup v2 (0::)" : "v1 memory");
		return -ENOENT;
	}

	/* The mount: fstype cgroup with "memory" in its options, or cgroup2. */
	if (read_str("/proc/self/mountinfo", buf, sizeof(buf)) < 0) {
		snprintf(why, wsize, "/proc/self/mountinfo: %s", strerror(errno));
		return -ENOENT;
	}
	save = NULL;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char root[PATH_MAX], mnt[PATH_MAX], fstype[64], opts[1024];
		const char *dash = strstr(line, " - "), *rel;
		bool ok;

		if (!dash ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, opts) != 2)
			continue;
		if (version == 2) {
			ok = !strcmp(fstype, "cgroup2");
		} else {
			char *o, *s3 = NULL;

			ok = false;
			if (!strcmp(fstype, "cgroup"))
				for (o = strtok_r(opts, ",", &s3); o;
				     o = strtok_r(NULL, ",", &s3))
					if (!strcmp(o, "memory"))
						ok = true;
		}
		if (!ok)
			continue;
		/* The path is relative to the mount's root, if it has one. */
		rel = path;
		if (strcmp(root, "/") && !strncmp(path, root, strlen(root)))
			rel = path + strlen(root);
		if (snprintf(out, size, "%s%s%s", mnt, *rel == '/' ? "" : "/",
			     rel) >= (int)size) {
			snprintf(why, wsize, "the cgroup's path is too long");
			return -ENOENT;
		}
		return 0;
	}
	snprintf(why, wsize, "no %s mount in /proc/self/mountinfo",
		 version == 2 ? "cgroup2" : "cgroup v1 memory");
	return -ENOENT;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *s = list;

	while ((s = strstr(s, word))) {
		if ((s == list || s[-1] == ' ' || s[-1] == '\n') &&
		    (s[n] == '\0' || s[n] == ' ' || s[n] == '\n'))
			return true;
		s += n;
	}
	return false;
}

/* Remove our child cgroup (its processes reaped): 0 or -errno. */
static int cg_remove(void)
{
	int i;

	if (!cg_dir[0])
		return 0;
	/* A reaped process may leave the cgroup a moment after wait(). */
	for (i = 0; i < 200; i++) {
		if (!rmdir(cg_dir) || errno == ENOENT) {
			cg_dir[0] = '\0';
			return 0;
		}
		if (errno != EBUSY)
			return -errno;
		sleep_ms(10);
	}
	return -EBUSY;
}

/* Kill and reap the children, then remove the cgroup (any path). */
static void cleanup(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (i = 0; i < 2; i++)
		if (kids[i] > 0) {
			while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR) {
			}
			kids[i] = 0;
		}
	cg_remove();
}

/* SIGTERM (meson's timeout), SIGINT, SIGALRM: only async-signal-safe calls. */
static void on_signal(int sig)
{
	static const char msg[] = "not ok - killed by a signal: cleaning up the cgroup\n";
	int i;

	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0) {
	}
	for (i = 0; i < 2; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (i = 0; i < 2; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
	if (cg_dir[0])
		for (i = 0; i < 200 && rmdir(cg_dir) && errno == EBUSY; i++) {
			struct timespec ts = { 0, 10000000L };

			nanosleep(&ts, NULL);
		}
	_exit(sig == SIGALRM ? 1 : 128 + sig);
}

/*
 * Create the child cgroup with the limit: 0, or 77 with the reason
 * printed (the caller skips), or 1 (a failure after creating it).
 */
static int cg_create(void)
{
	char own[PATH_MAX], why[512], buf[1024], f[PATH_MAX + 64];
	char lim[32];
	int err;

	snprintf(lim, sizeof(lim), "%llu", (unsigned long long)LIMIT);
	/* v2 if our cgroup can give children the memory controller. */
	if (!own_cgroup(2, own, sizeof(own), why, sizeof(why))) {
		snprintf(f, sizeof(f), "%s/cgroup.subtree_control", own);
		if (read_str(f, buf, sizeof(buf)) >= 0 && has_word(buf, "memory")) {
			cg_version = 2;
		} else {
			char ctl[256] = "";

			snprintf(f, sizeof(f), "%s/cgroup.controllers", own);
			if (read_str(f, ctl, sizeof(ctl)) >= 0)
				ctl[strcspn(ctl, "\n")] = '\0';
			say("# cgroup v2: %s: memory not in cgroup.subtree_control "
			    "(controllers: \"%s\"); enabling it there would touch our "
			    "own cgroup, and the \"no internal processes\" rule forbids "
			    "it while we are in it\n",
			    own, ctl);
		}
	} else {
		say("# cgroup v2: %s\n", why);
	}
	if (!cg_version) {
		if (own_cgroup(1, own, sizeof(own), why, sizeof(why))) {
			say("# cgroup v1: %s\n", why);
			return 77;
		}
		cg_version = 1;
	}
	if (snprintf(cg_dir, sizeof(cg_dir), "%s/rcl-pressure-real-%ld", own,
		     (long)getpid()) >= (int)sizeof(cg_dir)) {
		say("# cgroup v%u: the path of %s is too long\n", cg_version, own);
		cg_dir[0] = '\0';
		return 77;
	}
	if (mkdir(cg_dir, 0755)) {
		say("# cgroup v%u: mkdir %s: %s\n", cg_version, cg_dir,
		    strerror(errno));
		cg_dir[0] = '\0';
		return 77;
	}
	say("# cgroup v%u: created %s\n", cg_version, cg_dir);
	if (cg_version == 1) {
		snprintf(f, sizeof(f), "%s/memory.limit_in_bytes", cg_dir);
		err = write_str(f, lim);
		if (!err) {
			/* No swap: memory + swap = memory (swap is off anyway). */
			snprintf(f, sizeof(f), "%s/memory.memsw.limit_in_bytes",
				 cg_dir);
			err = write_str(f, lim);
			if (err == -ENOENT) {
				say("# cgroup v1: no memsw files (swap accounting off)\n");
				err = 0;
			}
		}
	} else {
		snprintf(f, sizeof(f), "%s/memory.max", cg_dir);
		err = write_str(f, lim);
		if (!err) {
			snprintf(f, sizeof(f), "%s/memory.swap.max", cg_dir);
			err = write_str(f, "0");
			if (err == -ENOENT)
				err = 0;
		}
	}
	if (err) {
		say("not ok - cgroup: setting the limit (%s): %s\n", f,
		    strerror(-err));
		return 1;
	}
	say("# cgroup v%u: limit %.0f MiB, no swap\n", cg_version, mib(LIMIT));
	return 0;
}

/* The cgroup's OOM kills so far: v1 memory.oom_control, v2 memory.events. */
static int cg_oom_kills(uint64_t *out)
{
	char f[PATH_MAX + 32];

	snprintf(f, sizeof(f), "%s/%s", cg_dir,
		 cg_version == 1 ? "memory.oom_control" : "memory.events");
	return read_keyed(f, "oom_kill", out);
}

/* Move this process into the child cgroup: 0 or -errno. */
static int cg_join(void)
{
	char f[PATH_MAX + 32], pid[32];

	snprintf(f, sizeof(f), "%s/cgroup.procs", cg_dir);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	return write_str(f, pid);
}

/* ------------------------------------------------------------------------- */
/* Pipes between the parent and the children                                  */
/* ------------------------------------------------------------------------- */

/* What the cache child reports. */
struct report {
	uint64_t usage, budget;
	uint64_t rss, cg_ws, cg_limit;
	uint64_t objects, evictions, reap_pending, actions, trims;
	uint64_t container_budget;
	uint32_t level;
	uint32_t errors;		/* payload mismatches, failed calls */
};

/*
 * Read exactly @len bytes from @fd within @ms: 0, -ETIMEDOUT, or -EPIPE
 * (the writer is gone: the child died).
 */
static int read_full(int fd, void *buf, size_t len, int ms)
{
	uint64_t end = mono_ns() + (uint64_t)ms * 1000000ull;
	size_t got = 0;

	while (got < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = mono_ns();
		ssize_t n;
		int r;

		if (now >= end)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)((end - now) / 1000000ull) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		n = read(fd, (char *)buf + got, len - got);
		if (n == 0)
			return -EPIPE;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	return 0;
}

static void send_cmd(int fd, char c)
{
	if (write(fd, &c, 1) != 1) {
		/* The child is gone; its wait status will say why. */
	}
}

/* ------------------------------------------------------------------------- */
/* The cache child                                                            */
/* ------------------------------------------------------------------------- */

struct obj {
	struct rcl_objcache_node node;
	uint64_t key;
	unsigned char data[];
};

#define PAYLOAD (OBJ_SIZE - sizeof(struct obj))

static unsigned long nr_freed;

static void obj_free(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	nr_freed++;
	free(rcl_container_of(n, struct obj, node));
}

static const struct rcl_objcache_ops obj_ops = { .destructor = obj_free };

struct cache {
	struct rcl_domain *d;
	struct rcl_objcache *oc;
	struct rcl_pressure *p;
	uint64_t rng;
	uint32_t errors;
	uint64_t inserts, hits, failed_charges;
};

/* One get-or-insert of @key. */
static void cache_access(struct cache *c, uint64_t key)
{
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n;
	struct obj *o;
	int err;

	n = rcl_objcache_get(c->oc, &key, sizeof(key), &miss);
	if (n) {
		o = rcl_container_of(n, struct obj, node);
		if (o->key != key || o->data[0] != (unsigned char)key ||
		    o->data[PAYLOAD - 1] != (unsigned char)key)
			c->errors++;
		c->hits++;
		rcl_objcache_put(c->oc, n);
		return;
	}
	o = calloc(1, OBJ_SIZE);
	if (!o) {
		c->errors++;
		return;
	}
	o->key = key;
	memset(o->data, (unsigned char)key, PAYLOAD);	/* touched: resident */
	err = rcl_objcache_insert(c->oc, &o->node, &o->key, sizeof(o->key),
				  OBJ_SIZE, RCL_CTX_CAPABLE, &miss, &n);
	if (err) {
		free(o);
		if (err == -ENOMEM)
			c->failed_charges++;	/* strict: no room made */
		else
			c->errors++;
		if (n)
			rcl_objcache_put(c->oc, n);
		return;
	}
	c->inserts++;
	rcl_objcache_put(c->oc, &o->node);
}

static void cache_report(struct cache *c, struct report *r)
{
	struct rcl_memory_sample m;
	struct rcl_pressure_stats ps;
	struct rcl_objcache_stats os;

	memset(r, 0, sizeof(*r));
	if (rcl_pressure_memory(c->p, &m) || rcl_pressure_stats(c->p, &ps) ||
	    rcl_objcache_stats(c->oc, &os))
		c->errors++;
	r->usage = m.charged_bytes;
	r->budget = m.budget_bytes;
	r->rss = m.rss_bytes;
	r->cg_ws = m.cgroup_working_set_bytes;
	r->cg_limit = m.cgroup_limit_bytes;
	r->objects = os.objects;
	r->evictions = os.evictions;
	r->reap_pending = os.reap_pending;
	r->actions = ps.actions;
	r->trims = ps.trims;
	r->container_budget = ps.container_budget;
	r->level = ps.level;
	r->errors = c->errors;
}

static void print_sample(const char *tag, const struct report *r)
{
	char cont[32];

	if (r->container_budget == UINT64_MAX)
		snprintf(cont, sizeof(cont), "%9s", "-");
	else
		snprintf(cont, sizeof(cont), "%9.1f", mib(r->container_budget));
	say("%-6s %6.2f %9.1f %9.1f %9s %9.1f %9.1f %-9s %7" PRIu64 " %7" PRIu64
	    " %5" PRIu64 " %5" PRIu64 "\n",
	    tag, t_s(), mib(r->usage), mib(r->budget), cont, mib(r->rss),
	    mib(r->cg_ws), rcl_pressure_level_name((enum rcl_pressure_level)r->level),
	    r->evictions, r->reap_pending, r->actions, r->trims);
}

static int cache_child(int cmd_fd, int rep_fd)
{
	struct rcl_domain_config dcfg = { .budget = CACHE_BUDGET };
	struct rcl_objcache_config ccfg = { .ops = &obj_ops, .seed = 1 };
	struct rcl_pressure_config pcfg = { 0 };
	struct rcl_pressure_source_info info;
	struct cache c = { .rng = 42 };
	struct report r;
	uint64_t key, next_sample;
	const char *name;
	int err, idx;

	err = cg_join();
	if (err) {
		say("not ok - cache: joining %s: %s\n", cg_dir, strerror(-err));
		return 10;
	}
	T_EQ(rcl_domain_new(&dcfg, &c.d), 0);
	T_EQ(rcl_objcache_new(c.d, &ccfg, &c.oc), 0);
	pcfg.domain = c.d;
	pcfg.flags = RCL_PRESSURE_FOLLOW_CGROUP;
	pcfg.interval_ns = INTERVAL_NS;
	T_EQ(rcl_pressure_new(&pcfg, &c.p), 0);
	idx = rcl_pressure_add_cgroup(c.p, NULL, 0);
	if (idx < 0) {
		say("not ok - cache: rcl_pressure_add_cgroup(p, NULL, 0) = %d (%s)\n",
		    idx, strerror(-idx));
		return 11;
	}
	T_EQ(rcl_pressure_source_info(c.p, idx, &info), 0);
	say("# cache: pid %ld, monitor source %s%s%s, path %s\n", (long)getpid(),
	    rcl_pressure_source_mode_name(info.mode),
	    info.fallback_errno ? ", events refused: " : "",
	    info.fallback_errno ? strerror(info.fallback_errno) : "", info.path);
	/* It found the cgroup we joined, not the one we came from. */
	name = strrchr(cg_dir, '/');
	if (!name || !strstr(info.path, name + 1)) {
		say("not ok - cache: the monitor watches %s, not %s\n", info.path,
		    cg_dir);
		return 12;
	}
	T_EQ(rcl_pressure_start(c.p), 0);

	/* Fill to the budget. */
	for (key = 0; key < NR_KEYS / 2 + 16 &&
		      rcl_domain_usage(c.d) + OBJ_SIZE <= rcl_domain_budget(c.d);
	     key++)
		cache_access(&c, key);
	say("# cache: filled %" PRIu64 " objects of %llu KiB in %.2f s\n",
	    key, (unsigned long long)(OBJ_SIZE / KIB), t_s());
	say("%-6s %6s %9s %9s %9s %9s %9s %-9s %7s %7s %5s %5s\n", "#", "t(s)",
	    "usage", "budget", "container", "rss", "cg_ws", "level", "evicted",
	    "unfreed", "acts", "trims");
	say("%-6s %6s %9s %9s %9s %9s %9s %-9s %7s %7s %5s %5s\n", "#", "", "MiB",
	    "MiB", "MiB", "MiB", "MiB", "", "", "", "", "");
	cache_report(&c, &r);
	print_sample("cache", &r);
	if (write(rep_fd, &r, sizeof(r)) != sizeof(r))
		return 13;

	/*
	 * Serve: every 10 ms, 32 gets of a skewed key (80 % of them on the
	 * first fifth of twice the keys that fit); a sample every 100 ms;
	 * the parent's commands between.
	 */
	next_sample = mono_ns() + 100000000ull;
	for (;;) {
		struct pollfd pfd = { .fd = cmd_fd, .events = POLLIN };
		unsigned i;
		char cmd;

		for (i = 0; i < 32; i++) {
			uint64_t x = rng_next(&c.rng);

			cache_access(&c, x % 5 < 4 ? (x >> 8) % (NR_KEYS / 5) :
						     (x >> 8) % NR_KEYS);
		}
		if (mono_ns() >= next_sample) {
			cache_report(&c, &r);
			print_sample("cache", &r);
			next_sample += 100000000ull;
		}
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		if (read(cmd_fd, &cmd, 1) != 1)
			cmd = 'q';	/* the parent is gone */
		if (cmd == 'r') {
			cache_report(&c, &r);
			print_sample("report", &r);
			if (write(rep_fd, &r, sizeof(r)) != sizeof(r))
				return 13;
		} else if (cmd == 'q') {
			break;
		}
	}
	say("# cache: %" PRIu64 " inserts, %" PRIu64 " hits, %" PRIu64
	    " charges refused, %lu objects freed\n",
	    c.inserts, c.hits, c.failed_charges, nr_freed);
	T_EQ(rcl_pressure_stop(c.p), 0);
	T_EQ(rcl_pressure_free(c.p), 0);
	T_EQ(rcl_objcache_destroy(c.oc), 0);
	T_EQ(rcl_domain_free(c.d), 0);
	return c.errors ? 14 : 0;
}

/* ------------------------------------------------------------------------- */
/* The hog child                                                              */
/* ------------------------------------------------------------------------- */

static int hog_child(int cmd_fd, int done_fd)
{
	uint64_t total = 0;
	long page = sysconf(_SC_PAGESIZE);
	char c = 'd';
	int err = cg_join();

	if (err) {
		say("not ok - hog: joining %s: %s\n", cg_dir, strerror(-err));
		return 10;
	}
	say("# hog: pid %ld, %.0f MiB in steps of %.0f MiB every %d ms\n",
	    (long)getpid(), mib(HOG_BYTES), mib(HOG_STEP), HOG_STEP_MS);
	while (total < HOG_BYTES) {
		char *m = mmap(NULL, HOG_STEP, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t off;

		if (m == MAP_FAILED) {
			say("not ok - hog: mmap: %s\n", strerror(errno));
			return 11;
		}
		for (off = 0; off < HOG_STEP; off += (uint64_t)page)
			m[off] = 1;	/* touched: charged to the cgroup */
		total += HOG_STEP;
		say("hog    %6.2f holds %.0f MiB\n", t_s(), mib(total));
		sleep_ms(HOG_STEP_MS);
	}
	if (write(done_fd, &c, 1) != 1)
		return 12;
	/* Hold it until told to go (or the parent is gone). */
	if (read(cmd_fd, &c, 1) < 0)
		return 13;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Part 2: the parent                                                         */
/* ------------------------------------------------------------------------- */

/* Fork a child running @fn in the cgroup; the pipes' other ends closed. */
static pid_t spawn(int (*fn)(int, int), int *cmd_w, int *data_r)
{
	int cmd[2], data[2];
	pid_t parent = getpid(), pid;

	T_EQ(pipe2(cmd, O_CLOEXEC), 0);
	T_EQ(pipe2(data, O_CLOEXEC), 0);
	fflush(stdout);
	pid = fork();
	T_CHECK(pid >= 0);
	if (!pid) {
		/* Never outlive the parent (its cleanup needs us gone). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(20);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		close(cmd[1]);
		close(data[0]);
		/* Keep no descriptor of the other child's pipes. */
		if (*cmd_w >= 0)
			close(*cmd_w);
		if (*data_r >= 0)
			close(*data_r);
		_exit(fn(cmd[0], data[1]));
	}
	close(cmd[0]);
	close(data[1]);
	*cmd_w = cmd[1];
	*data_r = data[0];
	return pid;
}

/* Describe a wait status; true for a normal exit with 0. */
static bool status_ok(const char *who, int st)
{
	if (WIFEXITED(st)) {
		say("# %s: exited with %d\n", who, WEXITSTATUS(st));
		return WEXITSTATUS(st) == 0;
	}
	if (WIFSIGNALED(st))
		say("# %s: killed by signal %d (%s)%s\n", who, WTERMSIG(st),
		    strsignal(WTERMSIG(st)),
		    WTERMSIG(st) == SIGKILL ? ": the OOM killer?" : "");
	return false;
}

static int wait_kid(int i, int ms, int *st)
{
	int k;

	for (k = 0; k < ms / 10; k++) {
		pid_t r = waitpid(kids[i], st, WNOHANG);

		if (r == kids[i]) {
			kids[i] = 0;
			return 0;
		}
		sleep_ms(10);
	}
	return -ETIMEDOUT;
}

static int cgroup_part(char *what, size_t size)
{
	int cache_cmd = -1, cache_rep = -1, hog_cmd = -1, hog_done = -1;
	struct report before, after;
	char path[PATH_MAX];
	uint64_t oom_before = 0, oom_after = 0;
	bool have_oom, ok = true;
	int rc, err, st, i;
	char d;

#ifdef SANITIZED
	say("# cgroup: SKIPPED: a sanitizer build (its allocator keeps freed "
	    "memory in a quarantine and shadow memory beside it: real memory is "
	    "not the program's)\n");
	snprintf(what, size, "skipped (sanitizer build)");
	return 77;
#endif
	if (geteuid() != 0)
		say("# cgroup: not root (uid %ld): creating a child may fail\n",
		    (long)geteuid());
	rc = cg_create();
	if (rc == 77) {
		say("# cgroup: SKIPPED: no memory cgroup this process may create a child in\n");
		snprintf(what, size, "skipped (no child memory cgroup)");
		return 77;
	}
	if (rc) {
		cleanup();
		snprintf(what, size, "failed (setting the limit)");
		return 1;
	}
	snprintf(what, size, "cgroup v%u", cg_version);
	have_oom = !cg_oom_kills(&oom_before);
	if (!have_oom)
		say("# cgroup: no oom_kill counter; the wait statuses alone tell OOM kills\n");

	kids[0] = spawn(cache_child, &cache_cmd, &cache_rep);
	err = read_full(cache_rep, &before, sizeof(before), 20000);
	if (err) {
		say("not ok - cache: no report after the fill (%s)\n",
		    strerror(-err));
		ok = false;
		goto out;
	}
	/* A moment of serving at the full budget, then the "before" report. */
	sleep_ms(300);
	send_cmd(cache_cmd, 'r');
	err = read_full(cache_rep, &before, sizeof(before), 5000);
	if (err) {
		say("not ok - cache: no report before the hog (%s)\n",
		    strerror(-err));
		ok = false;
		goto out;
	}

	kids[1] = spawn(hog_child, &hog_cmd, &hog_done);
	err = read_full(hog_done, &d, 1, 20000);
	if (err) {
		say("not ok - hog: did not finish allocating (%s)\n",
		    err == -EPIPE ? "it died" : strerror(-err));
		ok = false;
		goto out;
	}
	/*
	 * The "after" report: the first that shows the cache shrunk, asked
	 * for every SETTLE_MS; the bound only ends a test that would wait
	 * for ever (no time is asserted: a slow machine just asks again).
	 */
	for (i = 0; i < SETTLE_TRIES; i++) {
		sleep_ms(SETTLE_MS);
		send_cmd(cache_cmd, 'r');
		err = read_full(cache_rep, &after, sizeof(after), 5000);
		if (err) {
			say("not ok - cache: no report after the hog (%s)\n",
			    err == -EPIPE ? "it died" : strerror(-err));
			ok = false;
			goto out;
		}
		if (after.usage < before.usage && after.budget < before.budget)
			break;
	}

	say("# before the hog: usage %.1f MiB, budget %.1f MiB, rss %.1f MiB, cgroup working set %.1f MiB\n",
	    mib(before.usage), mib(before.budget), mib(before.rss),
	    mib(before.cg_ws));
	say("# with the hog:   usage %.1f MiB, budget %.1f MiB, rss %.1f MiB, cgroup working set %.1f MiB (limit %.1f MiB)\n",
	    mib(after.usage), mib(after.budget), mib(after.rss),
	    mib(after.cg_ws), mib(after.cg_limit));
	if (before.cg_limit != LIMIT) {
		say("not ok - the monitor read a limit of %.1f MiB, not %.1f MiB\n",
		    mib(before.cg_limit), mib(LIMIT));
		ok = false;
	}
	if (!(after.usage < before.usage && after.budget < before.budget)) {
		say("not ok - the cache did not shrink\n");
		ok = false;
	} else {
		say("ok - the cache shrank: usage %.1f -> %.1f MiB, budget %.1f -> %.1f MiB\n",
		    mib(before.usage), mib(after.usage), mib(before.budget),
		    mib(after.budget));
	}
	if (after.errors) {
		say("not ok - cache: %u payload mismatches or failed calls\n",
		    after.errors);
		ok = false;
	}

out:
	/* Let them go, then reap (kill what does not go). */
	if (hog_cmd >= 0)
		send_cmd(hog_cmd, 'q');
	if (cache_cmd >= 0)
		send_cmd(cache_cmd, 'q');
	if (kids[1] > 0) {
		if (wait_kid(1, 5000, &st)) {
			say("not ok - hog: still running; killed\n");
			ok = false;
		} else if (!status_ok("hog", st)) {
			ok = false;
		}
	}
	if (kids[0] > 0) {
		if (wait_kid(0, 10000, &st)) {
			say("not ok - cache: still running; killed\n");
			ok = false;
		} else if (!status_ok("cache", st)) {
			ok = false;
		}
	}
	/* Kill and reap whatever is left, read the counter, remove it. */
	for (st = 0; st < 2; st++)
		if (kids[st] > 0) {
			kill(kids[st], SIGKILL);
			while (waitpid(kids[st], NULL, 0) < 0 && errno == EINTR) {
			}
			kids[st] = 0;
		}
	if (have_oom) {
		if (cg_oom_kills(&oom_after)) {
			say("not ok - cgroup: its oom_kill counter is unreadable now\n");
			ok = false;
		} else if (oom_after != oom_before) {
			say("not ok - cgroup: %" PRIu64 " processes OOM-killed\n",
			    oom_after - oom_before);
			ok = false;
		} else {
			say("ok - cgroup: no OOM kill (oom_kill %" PRIu64 ")\n",
			    oom_after);
		}
	}
	snprintf(path, sizeof(path), "%s", cg_dir);
	err = cg_remove();
	if (err || !access(path, F_OK)) {
		say("not ok - cgroup: %s is still there (%s)\n", path,
		    strerror(err ? -err : EEXIST));
		ok = false;
	} else {
		say("ok - cgroup: %s removed\n", path);
	}
	if (cache_cmd >= 0)
		close(cache_cmd);
	if (cache_rep >= 0)
		close(cache_rep);
	if (hog_cmd >= 0)
		close(hog_cmd);
	if (hog_done >= 0)
		close(hog_done);
	return ok ? 0 : 1;
}

int main(void)
{
	char psi_mode[128] = "", cg_what[128] = "";
	int psi_rc, cg_rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t0_ns = mono_ns();
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGALRM, on_signal);
	signal(SIGABRT, on_signal);	/* a failed T_CHECK() */
	signal(SIGSEGV, on_signal);
	/* A child that died (the OOM killer) closes its pipe: EPIPE, not death. */
	signal(SIGPIPE, SIG_IGN);
	alarm(DEADLINE_S);
	say("# test_pressure_real: the pressure monitor on this machine's real "
	    "PSI file and a real memory cgroup\n");

	psi_rc = psi_part(psi_mode, sizeof(psi_mode));
	cg_rc = cgroup_part(cg_what, sizeof(cg_what));

	say("# summary: psi %s: %s; cgroup %s: %s\n", psi_mode,
	    psi_rc == 0 ? "PASS" : psi_rc == 77 ? "SKIP" : "FAIL", cg_what,
	    cg_rc == 0 ? "PASS" : cg_rc == 77 ? "SKIP" : "FAIL");
	if (psi_rc == 1 || cg_rc == 1)
		return 1;
	return cg_rc == 77 ? 77 : 0;
}
