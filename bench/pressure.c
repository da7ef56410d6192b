/* SPDX-License-Identifier: MIT */
/*
 * rcl-bench pressure: a cache under memory pressure from a neighbour, in a
 * cgroup of its own with swap off for it.  For each mode the parent
 * creates a child cgroup of its own cgroup (limit L; v1 memsw = L, v2
 * memory.swap.max = 0 and memory.high = 90 % of L) and forks two processes
 * into it: a *cache* (one libreclaim object cache in a strict domain whose
 * budget alone fills 75 % of L: Zipf keys, get-or-insert with a miss
 * penalty, objects of 4 to 16 KiB malloc'd and written) and a *hog* that
 * allocates and touches L/16 more every step (8 steps: half of L).  Then a
 * final phase: the cache deletes everything and stops serving, the hog
 * stays and tops the cgroup up to just above the pressure threshold, so
 * that pressure is present and nothing is left to free.  The parent samples
 * the cgroup's working set (usage - inactive file) every 10 ms.
 *
 * Modes: fixed (a fixed budget, no pressure front-end: what caches do
 * today), trim-all (what a systemd default handler does: on every pressure
 * event drop everything, then malloc_trim(0); the event is the working set
 * at 90 % of the limit, polled every 10 ms by a thread of the cache), and
 * library (the pressure monitor, <reclaim/pressure.h>, following the
 * cgroup).  See bench/README.md ("pressure") for the parameters and the
 * figures.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <reclaim/reclaim.h>

#include "commands.h"
#include "harness.h"

/* ------------------------------------------------------------------------- */
/* Parameters                                                                 */
/* ------------------------------------------------------------------------- */

#define MIB (1ull << 20)

#define PR_LIMIT_MIB 256u		/* the cgroup's limit L */
#define PR_SHORT_LIMIT_MIB 128u
#define PR_BUDGET_PCT 75u		/* the cache's budget, % of L */
#define PR_KEYS_FACTOR 3u		/* all keys' bytes / the budget */
#define PR_ALPHA 0.99
#define PR_VAL_MIN 4096u		/* value bytes: 4 to 16 KiB */
#define PR_VAL_SPAN (16384u - 4096u + 1u)
#define PR_MISS_US 20u			/* the backend fetch of a miss */
#define PR_STEPS 8u			/* the hog's steps ... */
#define PR_STEP_DIV 16u			/* ... of L / 16 each */
#define PR_STEP_MS 1000u
#define PR_SHORT_STEP_MS 500u
#define PR_FINAL_MS 5000u
#define PR_SHORT_FINAL_MS 2000u
/*
 * library: the monitor's configuration.  The timer at 100 ms (the
 * library's default is 1 s) to follow a hog that steps every second;
 * growth at the library's default (5 % of base per 1 s grow interval).
 * cgroup_pct 85: the working set is to stay at 85 % of L, under the relief
 * line (90 %), with 15 % of L free for the hog's next step (L/16) and for
 * what the cache does not charge.  See bench/README.md.
 */
#define PR_INTERVAL_MS 100u
#define PR_GROW_PCT 5u
#define PR_CGROUP_PCT 85u
#define PR_THRESH_PCT 90u		/* pressure: the working set at 90 % */
#define PR_FINAL_PCT 92u		/* the final phase's working set */
#define PR_SAMPLE_MS 10u		/* the parent's sampling */
#define PR_TRIM_POLL_MS 10u		/* trim-all's polling */
#define PR_TRACE_MS 100u		/* --trace: a line every 100 ms */
#define PR_WARM_TIMEOUT_MS 60000u	/* the cache must fill in this time */
#define PR_EXIT_TIMEOUT_MS 10000u	/* the children must end in this time */
#define PR_MAX_SAMPLES 65536u

/* Ops between two looks at the phase (and publications of the counters). */
#define PR_CHUNK 64u

enum pr_mode { MODE_FIXED, MODE_TRIM_ALL, MODE_LIBRARY, NR_MODES };

static const char *const mode_names[NR_MODES] = { "fixed", "trim-all",
						  "library" };

/* The --mode words: every mode, or one. */
static const char *const mode_words[] = { "all", "fixed", "trim-all",
					  "library", NULL };

struct pr_params {
	uint64_t limit;		/* L, bytes */
	uint64_t budget;	/* the cache's domain budget, bytes */
	uint64_t step_bytes;
	unsigned steps;
	unsigned step_ms;
	unsigned final_ms;
	unsigned miss_us;
	uint64_t keys;
	double alpha;
	struct bench_zipf zipf;
	unsigned interval_ms;	/* library: the monitor's timer */
	unsigned cgroup_pct;	/* library: its budget's share of the room */
	unsigned grow_pct;	/* library: regrowth per quiet interval */
	bool trace;
};

/* ------------------------------------------------------------------------- */
/* Files                                                                      */
/* ------------------------------------------------------------------------- */

/* @dir/@name into @buf (NUL-terminated): its length, or -errno. */
static ssize_t read_file(const char *dir, const char *name, char *buf,
			 size_t size)
{
	char path[PATH_MAX];
	size_t len = 0;
	ssize_t n;
	int fd;

	if (name)
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	else
		snprintf(path, sizeof(path), "%s", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len + 1 < size) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* @s into @dir/@name: 0 or -errno. */
static int write_file(const char *dir, const char *name, const char *s)
{
	char path[PATH_MAX];
	size_t len = strlen(s);
	ssize_t n;
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

static int write_u64(const char *dir, const char *name, uint64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%llu", (unsigned long long)v);
	return write_file(dir, name, s);
}

/* A single-number file ("max" is UINT64_MAX): 0 or -errno. */
static int read_u64(const char *dir, const char *name, uint64_t *out)
{
	char buf[64], *end;
	ssize_t n = read_file(dir, name, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (!strncmp(buf, "max", 3)) {
		*out = UINT64_MAX;
		return 0;
	}
	errno = 0;
	*out = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EBADMSG;
	return 0;
}

/* "key value" lines: the value of @key, 0 or -ENOENT. */
static int keyed_u64(const char *buf, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);
	const char *p = buf;

	while (p && *p) {
		if (!strncmp(p, key, klen) && p[klen] == ' ') {
			*out = strtoull(p + klen + 1, NULL, 10);
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

/* Whether the space-separated @list holds the word @w. */
static bool has_word(const char *list, const char *w, char sep)
{
	size_t len = strlen(w);
	const char *p = list;

	while (*p) {
		if (!strncmp(p, w, len) &&
		    (p[len] == sep || p[len] == '\0' || p[len] == '\n'))
			return true;
		p = strchr(p, sep);
		if (!p)
			break;
		p++;
	}
	return false;
}

/* ------------------------------------------------------------------------- */
/* The child cgroup                                                           */
/* ------------------------------------------------------------------------- */

struct cg {
	unsigned version;		/* 1 or 2 */
	char own[PATH_MAX / 2];		/* this process's cgroup directory */
	char dir[PATH_MAX];		/* the child, while it exists */
	uint64_t limit;			/* v1 limit_in_bytes, v2 memory.max */
	uint64_t level_limit;		/* v1 the limit, v2 memory.high */
	uint64_t relief;		/* v1 90 % of the limit, v2 memory.high */
	bool oom_counter;		/* the kernel counts oom_kill */
	bool no_swap_file;		/* memsw / swap.max absent, no swap */
};

/*
 * What the signal handler needs to clean up: the child cgroup and the
 * processes in it.  Written by the parent only, before and after the forks.
 */
static char cleanup_dir[PATH_MAX];
static volatile sig_atomic_t cleanup_live;
static volatile pid_t cleanup_pids[2];

/* Kill the children, reap them, remove the cgroup.  Async-signal-safe. */
static void cleanup_now(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	unsigned i;

	for (i = 0; i < 2; i++) {
		pid_t pid = cleanup_pids[i];

		if (pid > 0) {
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			cleanup_pids[i] = 0;
		}
	}
	if (cleanup_live) {
		for (i = 0; i < 50 && rmdir(cleanup_dir) && errno == EBUSY; i++)
			nanosleep(&ts, NULL);
		cleanup_live = 0;
	}
}

static void on_signal(int sig)
{
	cleanup_now();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_exit_cleanup(void)
{
	cleanup_now();
}

static void install_cleanup(void)
{
	static bool done;
	struct sigaction sa;

	if (done)
		return;
	done = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	atexit(on_exit_cleanup);
}

/*
 * The mount point and root of the cgroup2 mount and of v1's memory
 * hierarchy, from /proc/self/mountinfo ("" if none).
 */
static void cg_mounts(char *v2mnt, char *v2root, char *v1mnt, char *v1root,
		      size_t size)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");

	v2mnt[0] = v2root[0] = v1mnt[0] = v1root[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char root[1024], mnt[1024], fstype[64], src[256], sopts[1024];
		char *sep = strstr(line, " - ");

		if (!sep)
			continue;
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2)
			continue;
		if (sscanf(sep + 3, "%63s %255s %1023s", fstype, src, sopts) != 3)
			continue;
		if (!strcmp(fstype, "cgroup2") && !v2mnt[0]) {
			snprintf(v2mnt, size, "%s", mnt);
			snprintf(v2root, size, "%s", root);
		} else if (!strcmp(fstype, "cgroup") && !v1mnt[0] &&
			   has_word(sopts, "memory", ',')) {
			snprintf(v1mnt, size, "%s", mnt);
			snprintf(v1root, size, "%s", root);
		}
	}
	fclose(f);
}

/* @mnt + (@path without the mount's @root) into @out. */
static void cg_join(char *out, size_t size, const char *mnt, const char *root,
		    const char *path)
{
	size_t rlen = strlen(root);

	if (rlen > 1 && !strncmp(path, root, rlen))
		path += rlen;
	if (!strcmp(path, "/"))
		path = "";
	snprintf(out, size, "%s%s", mnt, path);
}

/*
 * Find this process's memory cgroup: v2 if its cgroup2 mount has the memory
 * controller there (as the library's rcl_pressure_add_cgroup() decides),
 * else v1's memory hierarchy.  0, or 77 (skip) with the reason said.
 */
static int cg_find(struct cg *cg)
{
	char buf[8192], v2path[1024] = "", v1path[1024] = "", *line, *save;
	char v2mnt[1024], v2root[1024], v1mnt[1024], v1root[1024], ctl[512];
	char dir[PATH_MAX / 2];

	if (read_file("/proc/self/cgroup", NULL, buf, sizeof(buf)) < 0) {
		fprintf(stderr, "rcl-bench pressure: /proc/self/cgroup: %s; skipped\n",
			strerror(errno));
		return 77;
	}
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		*c2 = '\0';
		if (c1[1] == '\0' && !strncmp(line, "0:", 2))
			snprintf(v2path, sizeof(v2path), "%s", c2 + 1);
		else if (has_word(c1 + 1, "memory", ','))
			snprintf(v1path, sizeof(v1path), "%s", c2 + 1);
	}
	cg_mounts(v2mnt, v2root, v1mnt, v1root, sizeof(v2mnt));

	if (v2mnt[0] && v2path[0]) {
		cg_join(dir, sizeof(dir), v2mnt, v2root, v2path);
		if (read_file(dir, "cgroup.controllers", ctl, sizeof(ctl)) >= 0 &&
		    has_word(ctl, "memory", ' ')) {
			cg->version = 2;
			snprintf(cg->own, sizeof(cg->own), "%s", dir);
			if (read_file(dir, "cgroup.subtree_control", ctl,
				      sizeof(ctl)) < 0 ||
			    !has_word(ctl, "memory", ' ')) {
				fprintf(stderr, "rcl-bench pressure: cgroup v2: the memory controller is not enabled in %s/cgroup.subtree_control, so a child cgroup would have no memory limit; rcl-bench changes no cgroup but its own child: skipped\n",
					dir);
				return 77;
			}
			return 0;
		}
	}
	if (v1mnt[0] && v1path[0]) {
		cg_join(dir, sizeof(dir), v1mnt, v1root, v1path);
		if (read_file(dir, "memory.limit_in_bytes", ctl, sizeof(ctl)) >= 0) {
			cg->version = 1;
			snprintf(cg->own, sizeof(cg->own), "%s", dir);
			return 0;
		}
	}
	fprintf(stderr, "rcl-bench pressure: no cgroup memory controller for this process (neither cgroup v2 with memory nor v1's memory hierarchy); skipped\n");
	return 77;
}

/* Whether the machine has swap configured (SwapTotal > 0). */
static bool have_swap(void)
{
	char buf[8192];
	uint64_t kb = 0;
	const char *p;

	if (read_file("/proc/meminfo", NULL, buf, sizeof(buf)) < 0)
		return true;	/* unknown: assume it has */
	p = strstr(buf, "SwapTotal:");
	if (p)
		kb = strtoull(p + 10, NULL, 10);
	return kb > 0;
}

/* Undo cg_create(): remove the child (its processes have ended). */
static void cg_remove(struct cg *cg)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	unsigned i;

	if (!cleanup_live)
		return;
	for (i = 0; i < 50; i++) {
		if (!rmdir(cg->dir) || errno == ENOENT)
			break;
		if (errno != EBUSY) {
			fprintf(stderr, "rcl-bench pressure: rmdir %s: %s\n",
				cg->dir, strerror(errno));
			break;
		}
		nanosleep(&ts, NULL);
	}
	if (i == 50)
		fprintf(stderr, "rcl-bench pressure: rmdir %s: still busy\n",
			cg->dir);
	cleanup_live = 0;
}

/* The cgroup setup failed after the mkdir: say so, remove it, skip. */
static int cg_setup_failed(struct cg *cg, const char *file, int err)
{
	fprintf(stderr, "rcl-bench pressure: %s/%s: %s; skipped\n", cg->dir,
		file, strerror(-err));
	cg_remove(cg);
	return 77;
}

/*
 * Create the child cgroup of @mode with limit @limit and swap off for it.
 * 0, 77 (skip: no child cgroup possible here, said), or 1.
 */
static int cg_create(struct cg *cg, const char *mode, uint64_t limit)
{
	char buf[1024];
	uint64_t v;
	int err;

	snprintf(cg->dir, sizeof(cg->dir), "%s/rcl-bench-pressure-%ld-%s",
		 cg->own, (long)getpid(), mode);
	if (mkdir(cg->dir, 0755)) {
		fprintf(stderr, "rcl-bench pressure: cannot create the child cgroup %s: %s%s; skipped\n",
			cg->dir, strerror(errno),
			errno == EACCES || errno == EPERM ? " (needs root)" : "");
		return 77;
	}
	snprintf(cleanup_dir, sizeof(cleanup_dir), "%s", cg->dir);
	cleanup_live = 1;
	cg->no_swap_file = false;

	if (cg->version == 1) {
		/* The memory limit first: memsw may not go below it. */
		err = write_u64(cg->dir, "memory.limit_in_bytes", limit);
		if (err)
			return cg_setup_failed(cg, "memory.limit_in_bytes", err);
		err = read_u64(cg->dir, "memory.limit_in_bytes", &cg->limit);
		if (err)
			return cg_setup_failed(cg, "memory.limit_in_bytes", err);
		err = write_u64(cg->dir, "memory.memsw.limit_in_bytes", cg->limit);
		if (err == -ENOENT && !have_swap())
			cg->no_swap_file = true;
		else if (err)
			return cg_setup_failed(cg, "memory.memsw.limit_in_bytes", err);
		cg->level_limit = cg->limit;
		cg->relief = cg->limit / 100 * PR_THRESH_PCT;
		cg->oom_counter =
			read_file(cg->dir, "memory.oom_control", buf, sizeof(buf)) > 0 &&
			!keyed_u64(buf, "oom_kill", &v);
	} else {
		err = write_u64(cg->dir, "memory.max", limit);
		if (err)
			return cg_setup_failed(cg, "memory.max", err);
		err = read_u64(cg->dir, "memory.max", &cg->limit);
		if (err)
			return cg_setup_failed(cg, "memory.max", err);
		err = write_u64(cg->dir, "memory.high", cg->limit / 100 * PR_THRESH_PCT);
		if (err)
			return cg_setup_failed(cg, "memory.high", err);
		err = read_u64(cg->dir, "memory.high", &cg->level_limit);
		if (err)
			return cg_setup_failed(cg, "memory.high", err);
		err = write_file(cg->dir, "memory.swap.max", "0");
		if (err == -ENOENT && !have_swap())
			cg->no_swap_file = true;
		else if (err)
			return cg_setup_failed(cg, "memory.swap.max", err);
		cg->relief = cg->level_limit;
		cg->oom_counter =
			read_file(cg->dir, "memory.events", buf, sizeof(buf)) > 0 &&
			!keyed_u64(buf, "oom_kill", &v);
	}
	return 0;
}

/* The working set (usage - inactive file pages) and the usage: 0 or -errno. */
static int cg_working_set(const struct cg *cg, uint64_t *ws, uint64_t *usage)
{
	char buf[8192];
	uint64_t inactive = 0;
	int err;

	err = read_u64(cg->dir, cg->version == 1 ? "memory.usage_in_bytes"
						 : "memory.current", usage);
	if (err)
		return err;
	if (read_file(cg->dir, "memory.stat", buf, sizeof(buf)) < 0)
		return -errno;
	keyed_u64(buf, cg->version == 1 ? "total_inactive_file" : "inactive_file",
		  &inactive);
	*ws = *usage > inactive ? *usage - inactive : 0;
	return 0;
}

/* The kernel's OOM kills in the cgroup so far (0 if it does not count). */
static uint64_t cg_oom_kills(const struct cg *cg)
{
	char buf[1024];
	uint64_t v = 0;

	if (read_file(cg->dir, cg->version == 1 ? "memory.oom_control"
						: "memory.events",
		      buf, sizeof(buf)) > 0)
		keyed_u64(buf, "oom_kill", &v);
	return v;
}

/* Move the calling process into the child cgroup: 0 or -errno. */
static int cg_enter(const struct cg *cg)
{
	return write_u64(cg->dir, "cgroup.procs", (uint64_t)getpid());
}

/* ------------------------------------------------------------------------- */
/* What the processes share                                                   */
/* ------------------------------------------------------------------------- */

/* The run's phases, set by the parent. */
enum { PH_WARM, PH_RAMP, PH_FINAL, PH_END };

/* The cache's state, set by the cache. */
enum { CS_START, CS_WARM, CS_EMPTIED, CS_DONE };

/*
 * One page of MAP_SHARED anonymous memory, created and touched by the
 * parent before the forks (so it is charged to the parent's cgroup, not to
 * the child's).  Counters the parent reads while the children run are
 * atomics; the cache's results are written before CS_DONE (release) and
 * read after it (acquire), or after the cache has ended.
 */
struct pr_shared {
	atomic_int phase;
	atomic_uint hog_steps;		/* parent -> hog: steps to hold */
	atomic_ullong hog_final_bytes;	/* parent -> hog: the final top-up */
	atomic_int hog_final;		/* parent -> hog: do the top-up */
	atomic_uint hog_done;		/* hog: steps allocated and touched */
	atomic_ullong hog_bytes;	/* hog: bytes it holds */

	atomic_int cache_state;
	atomic_ullong budget, usage;	/* the domain's, bytes */
	atomic_ullong ramp_ops, ramp_hits, ramp_refused;
	atomic_ullong events;		/* trim-all: drops; library: actions */
	atomic_ullong final_events;	/* ... of them in the final phase */
	atomic_ullong container;	/* library: the container budget */
	atomic_ullong trims;		/* library: trim hook calls */

	/* the cache's results (CS_DONE) */
	uint64_t final_ns;		/* the final phase, its own clock */
	uint64_t reclaim_cpu_ns;	/* CPU of its other threads in it */
	uint64_t empty_ns;		/* deleting everything, and the trim */
	/* library: the monitor's counters (every 10 ms, and at the end) */
	struct rcl_pressure_stats stats;
	char sources[160];		/* its sources' modes */
	char err[192];
	atomic_flag err_set;
};

static void child_fail(struct pr_shared *sh, const char *what, int err)
{
	if (!atomic_flag_test_and_set(&sh->err_set))
		snprintf(sh->err, sizeof(sh->err), "%s%s%s", what,
			 err ? ": " : "", err ? strerror(err < 0 ? -err : err) : "");
	_exit(1);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A child's first steps: default signals, die with the parent, enter the cgroup. */
static void child_start(struct pr_shared *sh, const struct cg *cg,
			pid_t parent)
{
	int err;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	err = cg_enter(cg);
	if (err)
		child_fail(sh, "cannot enter the child cgroup", err);
}

/* ------------------------------------------------------------------------- */
/* The hog                                                                    */
/* ------------------------------------------------------------------------- */

/* Map @bytes and write every page: they are resident and charged. */
static void hog_touch(struct pr_shared *sh, uint64_t bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *p;
	uint64_t off;

	if (!bytes)
		return;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		child_fail(sh, "hog: mmap", errno);
	for (off = 0; off < bytes; off += (uint64_t)page)
		p[off] = 1;
	atomic_fetch_add(&sh->hog_bytes, bytes);
}

static void hog_main(struct pr_shared *sh, const struct pr_params *p)
{
	unsigned done = 0;
	bool final_done = false;

	for (;;) {
		unsigned want = atomic_load(&sh->hog_steps);
		int phase = atomic_load(&sh->phase);

		while (done < want) {
			hog_touch(sh, p->step_bytes);
			atomic_store(&sh->hog_done, ++done);
		}
		if (!final_done && atomic_load(&sh->hog_final)) {
			hog_touch(sh, atomic_load(&sh->hog_final_bytes));
			final_done = true;
		}
		if (phase == PH_END)
			_exit(0);
		sleep_ms(1);
	}
}

/* ------------------------------------------------------------------------- */
/* The cache                                                                  */
/* ------------------------------------------------------------------------- */

struct pr_obj {
	struct rcl_objcache_node node;
	uint64_t key;
	uint32_t size;			/* value bytes */
	uint32_t pad;
	unsigned char val[];
};

static inline uint32_t val_size(uint64_t key)
{
	return PR_VAL_MIN + (uint32_t)(bench_mix64(key ^ 0x70726573u) % PR_VAL_SPAN);
}

/*
 * What an object costs beyond its value, charged by the cache with each
 * (rcl_objcache_config.meta_charge, measured as objcache.h says): its
 * header, glibc's chunk header (8) and average slack (the request rounded
 * up to 16: 8), and its share of the cache's index (32).
 */
#define PR_META_CHARGE (sizeof(struct pr_obj) + 8u + 8u + 32u)

/* What an object costs the budget: its value, its weight, and the rest. */
static inline uint64_t obj_charge(uint32_t size)
{
	return size + PR_META_CHARGE;
}

static void obj_destroy(struct rcl_objcache_node *n, void *priv)
{
	(void)priv;
	free(rcl_container_of(n, struct pr_obj, node));
}

static const struct rcl_objcache_ops cache_ops = { .destructor = obj_destroy };

struct cache {
	struct pr_shared *sh;
	const struct pr_params *p;
	const struct cg *cg;
	enum pr_mode mode;
	struct rcl_domain *d;
	struct rcl_objcache *c;
	uint64_t rng, sink;
	/* drop_everything() */
	pthread_mutex_t drop_lock;
	uint64_t *drop_keys;
	uint64_t nr_drop;
	/* trim-all */
	pthread_t poller;
	atomic_bool poller_stop;
	bool poller_started;
	/* library */
	struct rcl_pressure *mon;
	int src[2];			/* the cgroup source, the PSI source */
	int psi_err;			/* why there is no PSI source */
	uint64_t next_stats;
};

/* The miss's backend fetch: spin for the miss penalty. */
static void miss_penalty(unsigned us)
{
	uint64_t end = bench_now_ns() + (uint64_t)us * 1000u;

	while (bench_now_ns() < end)
		bench_cpu_relax();
}

/* One get-or-insert.  1 hit, 0 miss (*refused if it could not be cached). */
static int cache_op(struct cache *k, bool *refused)
{
	uint64_t key = bench_zipf_next(&k->p->zipf, &k->rng);
	struct rcl_objcache_miss miss;
	struct rcl_objcache_node *n = rcl_objcache_get(k->c, &key, sizeof(key), &miss);
	struct pr_obj *o;
	uint32_t size;
	int err;

	*refused = false;
	if (n) {
		o = rcl_container_of(n, struct pr_obj, node);
		if (o->key != key || o->val[o->size - 1] != (unsigned char)key)
			child_fail(k->sh, "cache: a hit found another key's value", 0);
		k->sink += o->val[0];
		rcl_objcache_put(k->c, n);
		return 1;
	}
	miss_penalty(k->p->miss_us);
	size = val_size(key);
	o = malloc(sizeof(*o) + size);
	if (!o)
		child_fail(k->sh, "cache: malloc", ENOMEM);
	memset(&o->node, 0, sizeof(o->node));
	o->key = key;
	o->size = size;
	o->pad = 0;
	memset(o->val, (int)(key & 0xff), size);
	err = rcl_objcache_insert(k->c, &o->node, &o->key, sizeof(o->key),
				  size, RCL_CTX_CAPABLE, &miss, &n);
	if (err == 0) {
		rcl_objcache_put(k->c, &o->node);
		return 0;
	}
	free(o);
	if (err == -ENOMEM) {
		*refused = true;
		return 0;
	}
	if (err == -EEXIST && n) {	/* no other thread inserts: not expected */
		rcl_objcache_put(k->c, n);
		return 0;
	}
	child_fail(k->sh, "cache: rcl_objcache_insert", err);
	return 0;
}

static int collect_key(struct rcl_objcache_node *n, void *arg)
{
	struct cache *k = arg;

	if (k->nr_drop < k->p->keys)
		k->drop_keys[k->nr_drop++] = rcl_container_of(n, struct pr_obj, node)->key;
	return 0;
}

/*
 * Drop everything: delete every object in the cache (their keys collected
 * first: for-each holds the shard lock, a delete takes it), then give the
 * free memory back to the system (malloc_trim(0)).  What "flush your
 * caches" does.  Both trim-all's poller and the main thread (emptying the
 * cache for the final phase) call it: drop_lock serialises them.
 */
static void drop_everything(struct cache *k)
{
	uint64_t i;

	pthread_mutex_lock(&k->drop_lock);
	k->nr_drop = 0;
	rcl_objcache_for_each(k->c, collect_key, k);
	for (i = 0; i < k->nr_drop; i++)
		rcl_objcache_del(k->c, &k->drop_keys[i], sizeof(k->drop_keys[i]));
	malloc_trim(0);
	pthread_mutex_unlock(&k->drop_lock);
}

/*
 * trim-all: what a default pressure handler does.  Every PR_TRIM_POLL_MS
 * it reads the cgroup's working set; at PR_THRESH_PCT % of the level limit
 * (v1 the limit, v2 memory.high) that is a pressure event, and every event
 * drops everything (and malloc_trim(0)).  No rate limit, no backoff.
 */
static void *poller_main(void *arg)
{
	struct cache *k = arg;
	uint64_t thresh = k->cg->level_limit / 100 * PR_THRESH_PCT;

	while (!atomic_load(&k->poller_stop)) {
		uint64_t ws, usage;

		if (!cg_working_set(k->cg, &ws, &usage) && ws >= thresh) {
			drop_everything(k);
			atomic_fetch_add(&k->sh->events, 1);
			if (atomic_load(&k->sh->phase) >= PH_FINAL)
				atomic_fetch_add(&k->sh->final_events, 1);
		}
		sleep_ms(PR_TRIM_POLL_MS);
	}
	return NULL;
}

/*
 * The sources' modes and their actions so far, "cgroup-v1-events:0
 * psi-trigger:2", into @buf; a PSI source in a fallback mode says why, as
 * "psi-poll(Invalid argument):0".
 */
static void describe_sources(struct rcl_pressure *mon, const int *idx,
			     unsigned n, char *buf, size_t size)
{
	size_t len = 0;
	unsigned i;

	buf[0] = '\0';
	for (i = 0; i < n && len < size; i++) {
		struct rcl_pressure_source_info info;

		if (idx[i] < 0 || rcl_pressure_source_info(mon, idx[i], &info))
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s%s%s:%llu",
					len ? " " : "",
					rcl_pressure_source_mode_name(info.mode),
					info.fallback_errno ? "(" : "",
					info.fallback_errno ?
						strerror(info.fallback_errno) : "",
					info.fallback_errno ? ")" : "",
					(unsigned long long)info.actions);
	}
}

/*
 * library: the pressure monitor on the domain, its budget following the
 * process's own cgroup (the child: it is there by now), the system's PSI
 * too where it can be read, on a library thread.
 */
static void library_setup(struct cache *k)
{
	struct rcl_pressure_config pc = {
		.domain = k->d,
		.flags = RCL_PRESSURE_FOLLOW_CGROUP,
		.bytes_per_unit = 1,
		.interval_ns = (uint64_t)k->p->interval_ms * 1000000u,
		.cgroup_pct = k->p->cgroup_pct,
		.grow_pct = k->p->grow_pct,
		/* Trims as often as the timer: RSS lagging a second behind
		   the budget reads as the others' working set. */
		.trim_interval_ns = (uint64_t)k->p->interval_ms * 1000000u,
	};
	int err, *idx = k->src;

	err = rcl_pressure_new(&pc, &k->mon);
	if (err)
		child_fail(k->sh, "cache: rcl_pressure_new", err);
	idx[0] = rcl_pressure_add_cgroup(k->mon, NULL, 0);
	if (idx[0] < 0)
		child_fail(k->sh, "cache: rcl_pressure_add_cgroup", idx[0]);
	idx[1] = rcl_pressure_add_psi(k->mon, NULL);	/* optional */
	if (idx[1] < 0)
		k->psi_err = -idx[1];
	err = rcl_pressure_start(k->mon);
	if (err)
		child_fail(k->sh, "cache: rcl_pressure_start", err);
}

static void cache_setup(struct cache *k)
{
	struct rcl_domain_config dcfg = {
		.budget = k->p->budget,
		.mode = RCL_CHARGE_STRICT,
	};
	struct rcl_objcache_config ccfg = {
		.ops = &cache_ops,
		.seed = 1,
		.meta_charge = PR_META_CHARGE,
	};
	int err;

	pthread_mutex_init(&k->drop_lock, NULL);
	k->drop_keys = malloc(k->p->keys * sizeof(*k->drop_keys));
	if (!k->drop_keys)
		child_fail(k->sh, "cache: malloc", ENOMEM);
	err = rcl_domain_new(&dcfg, &k->d);
	if (err)
		child_fail(k->sh, "cache: rcl_domain_new", err);
	err = rcl_objcache_new(k->d, &ccfg, &k->c);
	if (err)
		child_fail(k->sh, "cache: rcl_objcache_new", err);
	err = rcl_domain_reclaimer_start(k->d);
	if (err)
		child_fail(k->sh, "cache: rcl_domain_reclaimer_start", err);
	if (k->mode == MODE_LIBRARY)
		library_setup(k);
	if (k->mode == MODE_TRIM_ALL) {
		atomic_init(&k->poller_stop, false);
		err = pthread_create(&k->poller, NULL, poller_main, k);
		if (err)
			child_fail(k->sh, "cache: pthread_create", err);
		k->poller_started = true;
	}
}

static uint64_t cpu_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cache_publish(struct cache *k)
{
	atomic_store_explicit(&k->sh->budget, rcl_domain_budget(k->d),
			      memory_order_relaxed);
	atomic_store_explicit(&k->sh->usage, rcl_domain_usage(k->d),
			      memory_order_relaxed);
	if (k->mon) {
		/* The monitor's counters take its lock: every 10 ms. */
		uint64_t now = bench_now_ns();
		struct rcl_pressure_stats st;

		if (now < k->next_stats || rcl_pressure_stats(k->mon, &st))
			return;
		k->next_stats = now + PR_SAMPLE_MS * 1000000ull;
		k->sh->stats = st;	/* read once the cache has ended */
		describe_sources(k->mon, k->src, 2, k->sh->sources,
				 sizeof(k->sh->sources));
		if (k->psi_err) {
			size_t len = strlen(k->sh->sources);

			snprintf(k->sh->sources + len, sizeof(k->sh->sources) - len,
				 " (no psi: %s)", strerror(k->psi_err));
		}
		atomic_store(&k->sh->events, st.actions);
		atomic_store(&k->sh->container, st.container_budget);
		atomic_store(&k->sh->trims, st.trims);
	}
}

/* The values' bytes read on hits go here, so that the reads stay. */
static volatile uint64_t pr_sink;

static void cache_main(struct pr_shared *sh, const struct pr_params *p,
		       const struct cg *cg, enum pr_mode mode)
{
	struct cache k = { .sh = sh, .p = p, .cg = cg, .mode = mode };
	uint64_t ops = 0, hits = 0, refused = 0, t0, c0_proc, c0_main;
	struct rcl_pressure_stats st0 = { 0 };
	bool warm = false;
	int phase, err;
	unsigned i;

	k.rng = bench_mix64(0x7072657373757265ull) | 1;
	cache_setup(&k);

	/* Serve: the warm-up, then the ramp (counted). */
	while ((phase = atomic_load(&sh->phase)) < PH_FINAL) {
		bool counting = phase == PH_RAMP;

		for (i = 0; i < PR_CHUNK; i++) {
			bool ref;
			int hit = cache_op(&k, &ref);

			if (counting) {
				ops++;
				hits += (uint64_t)hit;
				refused += ref;
			}
		}
		cache_publish(&k);
		if (counting) {
			atomic_store_explicit(&sh->ramp_ops, ops, memory_order_relaxed);
			atomic_store_explicit(&sh->ramp_hits, hits, memory_order_relaxed);
			atomic_store_explicit(&sh->ramp_refused, refused,
					      memory_order_relaxed);
		}
		if (!warm && rcl_domain_usage(k.d) >=
			     rcl_domain_budget(k.d) / 10 * 9) {
			warm = true;
			atomic_store(&sh->cache_state, CS_WARM);
		}
	}

	/* The final phase: delete everything, then idle while the hog stays. */
	t0 = bench_now_ns();
	drop_everything(&k);
	sh->empty_ns = bench_now_ns() - t0;
	cache_publish(&k);
	if (k.mon && rcl_pressure_stats(k.mon, &st0))
		child_fail(sh, "cache: rcl_pressure_stats", -EINVAL);
	t0 = bench_now_ns();
	c0_proc = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	c0_main = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	atomic_store(&sh->cache_state, CS_EMPTIED);
	while (atomic_load(&sh->phase) < PH_END) {
		sleep_ms(5);
		cache_publish(&k);
	}
	sh->reclaim_cpu_ns = bench_sub(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - c0_proc,
				       cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0_main);
	sh->final_ns = bench_now_ns() - t0;
	if (k.mon) {
		k.next_stats = 0;
		cache_publish(&k);	/* the last counters, now */
		atomic_store(&sh->events, sh->stats.actions);
		atomic_store(&sh->final_events,
			     sh->stats.actions - st0.actions);
		err = rcl_pressure_free(k.mon);
		if (err)
			child_fail(sh, "cache: rcl_pressure_free", err);
	}

	if (k.poller_started) {
		atomic_store(&k.poller_stop, true);
		pthread_join(k.poller, NULL);
	}
	rcl_domain_reclaimer_stop(k.d);
	err = rcl_objcache_destroy(k.c);
	if (err)
		child_fail(sh, "cache: rcl_objcache_destroy", err);
	err = rcl_domain_free(k.d);
	if (err)
		child_fail(sh, "cache: rcl_domain_free", err);
	pr_sink = k.sink;
	atomic_store_explicit(&sh->cache_state, CS_DONE, memory_order_release);
	_exit(0);
}

/* ------------------------------------------------------------------------- */
/* The parent: one mode                                                       */
/* ------------------------------------------------------------------------- */

struct pr_result {
	enum pr_mode mode;
	bool ok;
	uint64_t oom_kills;
	bool cache_killed, hog_killed;	/* by SIGKILL */
	double time_to_relief_ms;	/* the longest over the steps */
	double relief_mean_ms;		/* ... the mean over steps with pressure */
	unsigned pressure_steps;	/* steps whose working set crossed it */
	unsigned unrelieved_steps;	/* ... and stayed over for the step */
	double hit_ratio;
	uint64_t ramp_ops, ramp_refused;
	double reclaim_cpu_ms;
	double final_phase_ms;
	double empty_ms;
	uint64_t peak_ws;
	uint64_t final_ws;		/* the working set at the end */
	uint64_t events, final_events;
	uint64_t trims;			/* malloc_trim(0) calls: trim-all's, the monitor's */
	struct rcl_pressure_stats stats;	/* library: the monitor's */
	char sources[160];		/* library: its sources' modes */
	double other;			/* CPU share others took */
};

/* One sample of the parent's. */
struct sample {
	uint64_t t_ns;
	uint64_t ws;
};

struct run {
	const struct pr_params *p;
	struct cg *cg;
	struct pr_shared *sh;
	enum pr_mode mode;
	pid_t cache, hog;
	int cache_status, hog_status;
	bool cache_ended, hog_ended;
	struct sample *samples;
	unsigned nsamples;
	uint64_t t_start, next_trace;
	uint64_t peak_ws, last_ws;
};

static const char *phase_name(int phase)
{
	static const char *const names[] = { "warm", "ramp", "final", "end" };

	return phase >= 0 && phase <= PH_END ? names[phase] : "?";
}

static bool reap_one(pid_t pid, bool wait, int *status)
{
	pid_t got;

	do
		got = waitpid(pid, status, wait ? 0 : WNOHANG);
	while (got < 0 && errno == EINTR);
	return got == pid;
}

/* Reap the children that have ended (@wait: wait for both to end). */
static void reap(struct run *r, bool wait)
{
	if (!r->cache_ended && reap_one(r->cache, wait, &r->cache_status)) {
		r->cache_ended = true;
		cleanup_pids[0] = 0;
	}
	if (!r->hog_ended && reap_one(r->hog, wait, &r->hog_status)) {
		r->hog_ended = true;
		cleanup_pids[1] = 0;
	}
}

/* A process's resident memory (/proc/PID/statm, field 2); 0 if gone. */
static uint64_t rss_bytes(pid_t pid)
{
	char path[64], buf[128];
	unsigned long long size, res;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/statm", (long)pid);
	if (read_file(path, NULL, buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%llu %llu", &size, &res) != 2)
		return 0;
	return res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void sample_now(struct run *r)
{
	uint64_t ws, usage, now = bench_now_ns();
	struct pr_shared *sh = r->sh;

	if (cg_working_set(r->cg, &ws, &usage))
		return;
	r->last_ws = ws;
	if (ws > r->peak_ws)
		r->peak_ws = ws;
	if (r->nsamples < PR_MAX_SAMPLES) {
		r->samples[r->nsamples].t_ns = now;
		r->samples[r->nsamples].ws = ws;
		r->nsamples++;
	}
	if (r->p->trace && now >= r->next_trace) {
		uint64_t ops = atomic_load(&sh->ramp_ops);
		uint64_t c = atomic_load(&sh->container);
		char cont[32] = "-";

		if (r->mode == MODE_LIBRARY && c != UINT64_MAX && c)
			snprintf(cont, sizeof(cont), "%.1f", (double)c / MIB);
		fprintf(stderr, "  trace %-8s t=%6.2f s %-5s step %u ws %6.1f MiB (%5.1f %%) hog %6.1f cache rss %6.1f budget %6.1f container %6s charged %6.1f MiB hit %.3f events %llu trims %llu\n",
			mode_names[r->mode], (double)(now - r->t_start) / 1e9,
			phase_name(atomic_load(&sh->phase)),
			atomic_load(&sh->hog_done), (double)ws / MIB,
			100.0 * (double)ws / (double)r->cg->limit,
			(double)atomic_load(&sh->hog_bytes) / MIB,
			(double)rss_bytes(r->cache_ended ? 0 : r->cache) / MIB,
			(double)atomic_load(&sh->budget) / MIB, cont,
			(double)atomic_load(&sh->usage) / MIB,
			ops ? (double)atomic_load(&sh->ramp_hits) / (double)ops : 0.0,
			(unsigned long long)atomic_load(&sh->events),
			(unsigned long long)(r->mode == MODE_TRIM_ALL ?
					     atomic_load(&sh->events) :
					     atomic_load(&sh->trims)));
		r->next_trace = now + PR_TRACE_MS * 1000000ull;
	}
}

/* Sample every PR_SAMPLE_MS until @until_ns, or until @stop(r) holds. */
static void sample_until(struct run *r, uint64_t until_ns,
			 bool (*stop)(struct run *r))
{
	while (bench_now_ns() < until_ns) {
		sample_now(r);
		reap(r, false);
		if (stop && stop(r))
			return;
		sleep_ms(PR_SAMPLE_MS);
	}
}

static bool cache_warm_or_gone(struct run *r)
{
	return r->cache_ended || atomic_load(&r->sh->cache_state) >= CS_WARM;
}

static bool cache_emptied_or_gone(struct run *r)
{
	return r->cache_ended || atomic_load(&r->sh->cache_state) >= CS_EMPTIED;
}

static bool hog_final_or_gone(struct run *r)
{
	return r->hog_ended ||
	       atomic_load(&r->sh->hog_bytes) >=
		       (uint64_t)r->p->steps * r->p->step_bytes +
			       atomic_load(&r->sh->hog_final_bytes);
}

static bool both_ended(struct run *r)
{
	return r->cache_ended && r->hog_ended;
}

/*
 * The relief of each step k, from the samples of [t_k, t_k + step): 0 if
 * the working set stayed under the relief threshold; else the time from
 * t_k to the first sample back under it after it was over; a step that
 * stays over to its end counts its whole length (and is unrelieved).
 */
static void relief_times(const struct run *r, const uint64_t *t_step,
			 struct pr_result *res)
{
	uint64_t step_ns = (uint64_t)r->p->step_ms * 1000000u;
	double sum = 0.0;
	unsigned k, i = 0;

	res->time_to_relief_ms = 0.0;
	res->pressure_steps = res->unrelieved_steps = 0;
	for (k = 0; k < r->p->steps; k++) {
		uint64_t t0 = t_step[k], t1 = t0 + step_ns, relief = 0;
		bool over = false, relieved = false;

		while (i < r->nsamples && r->samples[i].t_ns < t0)
			i++;
		for (; i < r->nsamples && r->samples[i].t_ns < t1; i++) {
			const struct sample *s = &r->samples[i];

			if (s->ws >= r->cg->relief) {
				over = true;
			} else if (over && !relieved) {
				relieved = true;
				relief = s->t_ns - t0;
			}
		}
		if (!over)
			continue;
		res->pressure_steps++;
		if (!relieved) {
			res->unrelieved_steps++;
			relief = step_ns;
		}
		sum += (double)relief / 1e6;
		if ((double)relief / 1e6 > res->time_to_relief_ms)
			res->time_to_relief_ms = (double)relief / 1e6;
	}
	res->relief_mean_ms = res->pressure_steps ? sum / res->pressure_steps : 0.0;
}

static bool killed(int status)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

/* CPU time of this process and its reaped children, in microseconds. */
static uint64_t self_and_children_us(void)
{
	struct rusage a, b;

	getrusage(RUSAGE_SELF, &a);
	getrusage(RUSAGE_CHILDREN, &b);
	return (uint64_t)(a.ru_utime.tv_sec + a.ru_stime.tv_sec +
			  b.ru_utime.tv_sec + b.ru_stime.tv_sec) * 1000000u +
	       (uint64_t)(a.ru_utime.tv_usec + a.ru_stime.tv_usec +
			  b.ru_utime.tv_usec + b.ru_stime.tv_usec);
}

static pid_t fork_child(struct run *r, bool cache)
{
	pid_t parent = getpid(), pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		child_start(r->sh, r->cg, parent);
		if (cache)
			cache_main(r->sh, r->p, r->cg, r->mode);
		else
			hog_main(r->sh, r->p);
		_exit(0);
	}
	cleanup_pids[cache ? 0 : 1] = pid;
	return pid;
}

/* One mode: 0, 77 (skipped), or 1. */
static int run_mode(const struct pr_params *p, struct cg *cg,
		    enum pr_mode mode, struct pr_result *res)
{
	struct run r = { .p = p, .cg = cg, .mode = mode };
	uint64_t t_step[64], t_final, t_end, deadline, oom0;
	struct bench_cpu_snap s0, s1;
	struct pr_shared *sh;
	unsigned k;
	int ret, err = 0;

	memset(res, 0, sizeof(*res));
	res->mode = mode;
	ret = cg_create(cg, mode_names[mode], p->limit);
	if (ret)
		return ret;
	oom0 = cg_oom_kills(cg);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	r.samples = calloc(PR_MAX_SAMPLES, sizeof(*r.samples));
	if (sh == MAP_FAILED || !r.samples) {
		fprintf(stderr, "rcl-bench pressure: out of memory\n");
		if (sh != MAP_FAILED)
			munmap(sh, sizeof(*sh));
		free(r.samples);
		cg_remove(cg);
		return 1;
	}
	memset(sh, 0, sizeof(*sh));	/* touched here: the parent's cgroup */
	atomic_flag_clear(&sh->err_set);
	r.sh = sh;

	bench_cpu_snapshot(&s0);
	s0.self_us = self_and_children_us();
	r.t_start = bench_now_ns();
	r.cache = fork_child(&r, true);
	r.hog = r.cache > 0 ? fork_child(&r, false) : -1;
	if (r.cache < 0 || r.hog < 0) {
		perror("rcl-bench pressure: fork");
		err = 1;
		goto out;
	}

	/* Warm-up: the cache fills its domain. */
	sample_until(&r, r.t_start + PR_WARM_TIMEOUT_MS * 1000000ull,
		     cache_warm_or_gone);
	if (!cache_warm_or_gone(&r)) {
		fprintf(stderr, "rcl-bench pressure: %s: the cache did not fill its domain in %u s\n",
			mode_names[mode], PR_WARM_TIMEOUT_MS / 1000);
		err = 1;
		goto out;
	}
	if (r.cache_ended) {
		fprintf(stderr, "rcl-bench pressure: %s: the cache ended in its warm-up\n",
			mode_names[mode]);
		err = 1;
		goto out;
	}

	/* The ramp: a step of the hog every step_ms. */
	atomic_store(&sh->phase, PH_RAMP);
	for (k = 0; k < p->steps; k++) {
		t_step[k] = bench_now_ns();
		atomic_store(&sh->hog_steps, k + 1);
		sample_until(&r, t_step[k] + (uint64_t)p->step_ms * 1000000u, NULL);
	}

	/*
	 * The final phase: the cache deletes everything; then the hog tops
	 * the working set up to PR_FINAL_PCT % of the level limit (pressure
	 * present, nothing left to free) and holds it for final_ms.
	 */
	atomic_store(&sh->phase, PH_FINAL);
	t_final = bench_now_ns();
	sample_until(&r, t_final + 10000 * 1000000ull, cache_emptied_or_gone);
	sample_now(&r);
	{
		uint64_t target = cg->level_limit / 100 * PR_FINAL_PCT;

		atomic_store(&sh->hog_final_bytes,
			     r.last_ws < target ? target - r.last_ws : 0);
		atomic_store(&sh->hog_final, 1);
	}
	t_final = bench_now_ns();
	sample_until(&r, t_final + 5000 * 1000000ull, hog_final_or_gone);
	sample_until(&r, t_final + (uint64_t)p->final_ms * 1000000u, NULL);
	res->final_ws = r.last_ws;
	t_end = bench_now_ns();
	atomic_store(&sh->phase, PH_END);
	deadline = t_end + PR_EXIT_TIMEOUT_MS * 1000000ull;
	sample_until(&r, deadline, both_ended);
	if (!both_ended(&r)) {
		fprintf(stderr, "rcl-bench pressure: %s: the children did not end; killed\n",
			mode_names[mode]);
		err = 1;
	}

out:
	/* Whatever is left (a failure, a timeout) is killed and reaped. */
	if (r.cache > 0 && !r.cache_ended)
		kill(r.cache, SIGKILL);
	if (r.hog > 0 && !r.hog_ended)
		kill(r.hog, SIGKILL);
	if (r.cache <= 0)
		r.cache_ended = true;
	if (r.hog <= 0)
		r.hog_ended = true;
	reap(&r, true);
	bench_cpu_snapshot(&s1);
	s1.self_us = self_and_children_us();
	res->other = bench_cpu_other(&s0, &s1);
	res->oom_kills = bench_sub(cg_oom_kills(cg), oom0);
	cg_remove(cg);

	if (!err) {
		res->cache_killed = r.cache_ended && killed(r.cache_status);
		res->hog_killed = r.hog_ended && killed(r.hog_status);
		if (!cg->oom_counter)
			res->oom_kills = (uint64_t)res->cache_killed + res->hog_killed;
		if (r.cache_ended && WIFEXITED(r.cache_status) &&
		    WEXITSTATUS(r.cache_status)) {
			fprintf(stderr, "rcl-bench pressure: %s: the cache failed: %s\n",
				mode_names[mode], sh->err[0] ? sh->err : "?");
			err = 1;
		}
		if (r.hog_ended && WIFEXITED(r.hog_status) &&
		    WEXITSTATUS(r.hog_status)) {
			fprintf(stderr, "rcl-bench pressure: %s: the hog failed: %s\n",
				mode_names[mode], sh->err[0] ? sh->err : "?");
			err = 1;
		}
	}
	if (!err) {
		bool done = atomic_load_explicit(&sh->cache_state,
						 memory_order_acquire) == CS_DONE;
		uint64_t ops = atomic_load(&sh->ramp_ops);

		relief_times(&r, t_step, res);
		res->ramp_ops = ops;
		res->ramp_refused = atomic_load(&sh->ramp_refused);
		res->hit_ratio = ops ? (double)atomic_load(&sh->ramp_hits) / (double)ops
				     : 0.0;
		res->peak_ws = r.peak_ws;
		res->events = atomic_load(&sh->events);
		res->final_events = atomic_load(&sh->final_events);
		res->trims = mode == MODE_TRIM_ALL ? res->events
						   : atomic_load(&sh->trims);
		if (mode == MODE_LIBRARY) {
			/* Its last counters, also if it was killed. */
			res->stats = sh->stats;
			res->trims = sh->stats.trims;
		}
		snprintf(res->sources, sizeof(res->sources), "%s", sh->sources);
		if (done) {
			res->reclaim_cpu_ms = (double)sh->reclaim_cpu_ns / 1e6;
			res->final_phase_ms = (double)sh->final_ns / 1e6;
			res->empty_ms = (double)sh->empty_ns / 1e6;
		} else {
			res->final_phase_ms = (double)(t_end - t_final) / 1e6;
		}
		res->ok = true;
	}
	munmap(sh, sizeof(*sh));
	free(r.samples);
	return err;
}

/* ------------------------------------------------------------------------- */
/* Output                                                                     */
/* ------------------------------------------------------------------------- */

static const char *killed_name(const struct pr_result *r)
{
	if (r->cache_killed && r->hog_killed)
		return "cache+hog";
	if (r->cache_killed)
		return "cache";
	if (r->hog_killed)
		return "hog";
	return "none";
}

static void print_json(const struct pr_params *p, const struct cg *cg,
		       const struct pr_result *r)
{
	bench_json_begin("pressure");
	bench_json_str("mode", mode_names[r->mode]);
	bench_json_uint("oom_kills", r->oom_kills);
	bench_json_dbl("time_to_relief_ms", 1, r->time_to_relief_ms);
	bench_json_dbl("cache_hit_ratio", 4, r->hit_ratio);
	bench_json_dbl("reclaim_cpu_ms", 3, r->reclaim_cpu_ms);
	bench_json_dbl("final_phase_ms", 1, r->final_phase_ms);
	bench_json_uint("peak_working_set", r->peak_ws);
	bench_json_uint("limit_bytes", cg->limit);
	bench_json_uint("relief_bytes", cg->relief);
	bench_json_uint("budget_bytes", p->budget);
	bench_json_uint("cgroup", cg->version);
	bench_json_dbl("relief_mean_ms", 1, r->relief_mean_ms);
	bench_json_uint("pressure_steps", r->pressure_steps);
	bench_json_uint("unrelieved_steps", r->unrelieved_steps);
	bench_json_str("killed", killed_name(r));
	bench_json_uint("ramp_ops", r->ramp_ops);
	bench_json_uint("events", r->events);
	bench_json_uint("final_events", r->final_events);
	bench_json_uint("final_working_set", r->final_ws);
	bench_json_uint("trims", r->trims);
	if (r->mode == MODE_LIBRARY) {
		bench_json_str("sources", r->sources);
		bench_json_uint("interval_ms", p->interval_ms);
		bench_json_uint("cgroup_pct", p->cgroup_pct);
		bench_json_uint("grow_pct", p->grow_pct);
		bench_json_uint("empty_actions", r->stats.empty_actions);
		bench_json_uint("dispatches", r->stats.dispatches);
		bench_json_uint("read_errors", r->stats.read_errors);
	}
	bench_json_end();
}

static void print_table(const struct pr_params *p, const struct cg *cg,
			const struct pr_result *res, unsigned nres)
{
	unsigned i;

	printf("rcl-bench pressure: libreclaim %s, cgroup v%u, limit %.0f MiB (relief under %.1f MiB), cache budget %.0f MiB, %u steps of %.0f MiB every %u ms, final phase %u ms\n\n",
	       rcl_version(), cg->version, (double)cg->limit / MIB,
	       (double)cg->relief / MIB, (double)p->budget / MIB, p->steps,
	       (double)p->step_bytes / MIB, p->step_ms, p->final_ms);
	printf("%-9s %4s %-9s %11s %10s %6s %12s %10s %14s\n", "mode", "oom",
	       "killed", "relief ms", "(mean)", "hit", "reclaim ms", "final ms",
	       "peak ws MiB");
	for (i = 0; i < nres; i++) {
		const struct pr_result *r = &res[i];

		printf("%-9s %4llu %-9s %11.1f %10.1f %6.4f %12.3f %10.1f %7.1f (%3.0f%%)%s\n",
		       mode_names[r->mode], (unsigned long long)r->oom_kills,
		       killed_name(r), r->time_to_relief_ms, r->relief_mean_ms,
		       r->hit_ratio, r->reclaim_cpu_ms, r->final_phase_ms,
		       (double)r->peak_ws / MIB,
		       100.0 * (double)r->peak_ws / (double)cg->limit,
		       r->other > BENCH_OTHER_MAX ? "  *" : "");
	}
	printf("\n"
	       "oom: the kernel's OOM kills in the mode's cgroup; killed: which process\n"
	       "was; relief: the longest time from a hog's step to the working set back\n"
	       "under the relief line (mean over the steps that crossed it); hit: the\n"
	       "cache's hit ratio during the ramp; reclaim ms: CPU time of the cache's\n"
	       "threads but its main one in the final phase; peak ws: the largest\n"
	       "working set sampled, against the limit.\n");
	for (i = 0; i < nres; i++)
		if (res[i].other > BENCH_OTHER_MAX) {
			printf("*: measured while other processes used more than %.0f %% of the CPU time.\n",
			       BENCH_OTHER_MAX * 100.0);
			break;
		}
}

/* ------------------------------------------------------------------------- */
/* The sub-command                                                            */
/* ------------------------------------------------------------------------- */

int cmd_pressure(int argc, char **argv)
{
	unsigned limit_mib = 0, step_ms = 0, final_ms = 0, miss_us = PR_MISS_US;
	unsigned mode_word = 0, nres = 0, m, interval_ms = PR_INTERVAL_MS;
	unsigned cgroup_pct = PR_CGROUP_PCT, grow_pct = PR_GROW_PCT;
	bool json = false, shortrun = false, trace = false, failed = false;
	struct pr_params p = { .alpha = PR_ALPHA };
	const struct bench_opt opts[] = {
		BENCH_OPT_FLAG("--json", &json),
		BENCH_OPT_FLAG("--short", &shortrun),
		BENCH_OPT_FLAG("--trace", &trace),
		BENCH_OPT_UINT("--limit-mib", &limit_mib, 32, 65536),
		BENCH_OPT_UINT("--step-ms", &step_ms, 50, 60000),
		BENCH_OPT_UINT("--final-ms", &final_ms, 100, 600000),
		BENCH_OPT_UINT("--miss-us", &miss_us, 0, 100000),
		BENCH_OPT_DBL("--alpha", &p.alpha, 0.01, 5.0),
		BENCH_OPT_UINT("--interval-ms", &interval_ms, 1, 10000),
		BENCH_OPT_UINT("--cgroup-pct", &cgroup_pct, 1, 100),
		BENCH_OPT_UINT("--grow-pct", &grow_pct, 1, 100),
		BENCH_OPT_CHOICE("--mode", &mode_word, mode_words),
		BENCH_OPT_END,
	};
	struct pr_result res[NR_MODES];
	struct cg cg = { 0 };
	long double total = 0;
	uint64_t t0, key;
	int ret;

	ret = bench_parse_opts(argc, argv, opts);
	if (ret != BENCH_CONTINUE)
		return ret;
	p.trace = trace;
	p.limit = (uint64_t)(limit_mib ? limit_mib
				       : shortrun ? PR_SHORT_LIMIT_MIB : PR_LIMIT_MIB) * MIB;
	p.budget = p.limit / 100 * PR_BUDGET_PCT;
	p.steps = PR_STEPS;
	p.step_bytes = p.limit / PR_STEP_DIV;
	p.step_ms = step_ms ? step_ms : shortrun ? PR_SHORT_STEP_MS : PR_STEP_MS;
	p.final_ms = final_ms ? final_ms : shortrun ? PR_SHORT_FINAL_MS : PR_FINAL_MS;
	p.miss_us = miss_us;
	p.interval_ms = interval_ms;
	p.cgroup_pct = cgroup_pct;
	p.grow_pct = grow_pct;
	for (key = 0; total < (long double)p.budget * PR_KEYS_FACTOR; key++)
		total += (long double)obj_charge(val_size(key));
	p.keys = key;
	bench_zipf_init(&p.zipf, p.keys, p.alpha);

	ret = cg_find(&cg);
	if (ret)
		return ret;
	install_cleanup();
	fprintf(stderr, "rcl-bench pressure: libreclaim %s, cgroup v%u under %s, limit %llu MiB, cache budget %llu MiB, %llu keys (Zipf %.2f, %u..%u bytes, %u us a miss), %u steps of %llu MiB every %u ms, final %u ms\n",
		rcl_version(), cg.version, cg.own,
		(unsigned long long)(p.limit / MIB),
		(unsigned long long)(p.budget / MIB), (unsigned long long)p.keys,
		p.alpha, PR_VAL_MIN, PR_VAL_MIN + PR_VAL_SPAN - 1, p.miss_us,
		p.steps, (unsigned long long)(p.step_bytes / MIB), p.step_ms,
		p.final_ms);

	t0 = bench_now_ns();
	for (m = 0; m < NR_MODES; m++) {
		struct pr_result *r = &res[nres];

		if (mode_word && mode_word - 1 != m)
			continue;
		ret = run_mode(&p, &cg, (enum pr_mode)m, r);
		if (ret == 77)
			return 77;
		if (ret) {
			failed = true;
			continue;
		}
		if (cg.no_swap_file && !nres)
			fprintf(stderr, "rcl-bench pressure: note: no %s file (no swap accounting); the machine has no swap, so none is used\n",
				cg.version == 1 ? "memory.memsw.limit_in_bytes" : "memory.swap.max");
		fprintf(stderr, "  %-9s oom_kills %llu (killed: %s), relief %.1f ms (mean %.1f, %u/%u steps over, %u unrelieved), hit %.4f over %llu ops (%llu refused), reclaim CPU %.3f ms of %.1f ms, peak ws %.1f MiB (%.1f %%), events %llu (%llu final), emptied in %.1f ms%s\n",
			mode_names[m], (unsigned long long)r->oom_kills,
			killed_name(r), r->time_to_relief_ms, r->relief_mean_ms,
			r->pressure_steps, p.steps, r->unrelieved_steps,
			r->hit_ratio, (unsigned long long)r->ramp_ops,
			(unsigned long long)r->ramp_refused, r->reclaim_cpu_ms,
			r->final_phase_ms, (double)r->peak_ws / MIB,
			100.0 * (double)r->peak_ws / (double)cg.limit,
			(unsigned long long)r->events,
			(unsigned long long)r->final_events, r->empty_ms,
			r->other > BENCH_OTHER_MAX ? " (disturbed by other load)" : "");
		if (m == MODE_LIBRARY)
			fprintf(stderr, "            monitor: sources %s; %llu actions (%llu freed nothing), %llu trims, %llu dispatches, %llu read errors; budget at the end %.1f MiB (base %.1f)\n",
				r->sources, (unsigned long long)r->stats.actions,
				(unsigned long long)r->stats.empty_actions,
				(unsigned long long)r->stats.trims,
				(unsigned long long)r->stats.dispatches,
				(unsigned long long)r->stats.read_errors,
				(double)r->stats.budget / MIB,
				(double)r->stats.base_budget / MIB);
		nres++;
	}
	fprintf(stderr, "rcl-bench pressure: %.1f s\n",
		(double)(bench_now_ns() - t0) / 1e9);
	if (json) {
		for (m = 0; m < nres; m++)
			print_json(&p, &cg, &res[m]);
	} else if (nres) {
		print_table(&p, &cg, res, nres);
	}
	return failed ? 1 : 0;
}
