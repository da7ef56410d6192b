// SPDX-License-Identifier: MIT
/*
 * The pressure monitor (<reclaim/pressure.h>): sources, levels, actions.
 *
 * Algorithm.  Each source yields events with a level: a PSI trigger's or a
 * v1 pressure_level eventfd's descriptor becoming ready, a FIFO or socket
 * byte from systemd's protocol, a PSI stall fraction or a cgroup working-set
 * ratio read on the timer, or the application's rcl_pressure_notify().  An
 * event either acts at once (its source's wait since its last action has
 * passed) or merges into the source's pending level, acted on when the wait
 * ends.  An action lowers the "pressure budget" to a fraction of usage
 * (7/8, 3/4, 1/2 by level) and applies the effective budget, min(base,
 * container, pressure), with rcl_domain_set_budget(), which reclaims by the
 * domain's rules.  An action that freed nothing doubles its source's wait
 * (bounded): the busy loop of systemd #38417 designed out.  On each quiet
 * timer tick (no action since the previous one) the pressure and container
 * budgets grow back by at most grow_pct of base (CacheLib's band rule).
 *
 * Kernel counterpart.  None in the kernel itself: this is what userspace
 * OOM daemons (lmkd, oomd, systemd-oomd) and sd_event's memory-pressure
 * source do with PSI and memcg files.  The thresholds are lmkd's and the
 * kernel documentation's (pressure.h).
 *
 * Locks.  p->lock guards the sources and the budgets (a leaf: nothing is
 * called with it held but file reads of the sources).  p->act serialises
 * dispatch and actions, so that two threads never step the budget against
 * each other; it is held while reclaim runs (rcl_domain_set_budget()), so
 * the domain's callbacks run under it, and a callback that calls back into
 * the monitor's acting calls is refused (-EDEADLK: a thread-local chain of
 * the monitors acting in the thread, which a nested action of another
 * monitor does not hide).
 * p->join serialises rcl_pressure_stop(), which joins the thread with
 * p->lock dropped.
 *
 * Threads.  Optionally one (rcl_pressure_start()): it waits on the epoll
 * descriptor, which holds the sources' descriptors, a timerfd armed for the
 * next deadline, and an eventfd that stops it.
 */
#include "domain_internal.h"
#include "pressure_internal.h"
#include "pressure_parse.h"
#include "refusal.h"

#include <reclaim/pressure.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

__extension__ typedef unsigned __int128 u128;

#define PROC_MAGIC 0x9fa0u
/* The bytes psi_write() copies of a write to /proc/pressure/<res>. */
#define PROC_PSI_WRITE_MAX 32
#define CGROUP1_MAGIC 0x27e0ebu
#define CGROUP2_MAGIC 0x63677270u

/* Epoll tags: a source's slot is (index << 2 | slot); these are above. */
#define TAG_TIMER (~0ull)
#define TAG_STOP (~0ull - 1)

/*
 * A file the monitor reads is at most this long, 16 KiB (v2 memory.stat:
 * ~3 KiB); a longer one is -EFBIG (pressure.h).
 */
#define READ_MAX 16384

/*
 * /proc/self/cgroup and /proc/self/mountinfo are read whole into a buffer
 * that grows from PROC_READ_MIN up to this, 4 MiB: a host with many mounts
 * (containers, Kubernetes pods) has a mountinfo far above READ_MAX (100
 * bytes or so a mount); a longer one is -EFBIG (pressure.h).
 */
#define PROC_READ_MIN 65536
#define PROC_READ_MAX (4u << 20)

/* Longest decoded $MEMORY_PRESSURE_WRITE. */
#define WRITE_MAX 1024

/* PSI thresholds in parts per million of the interval (pressure.h). */
#define PSI_WINDOW_US 2000000ull
static const struct {
	bool full;
	uint64_t stall_us;	/* per PSI_WINDOW_US */
} psi_levels[3] = {
	{ false, 140000 },	/* MODERATE: some 7 % */
	{ false, 300000 },	/* SEVERE: some 15 % */
	{ true, 1400000 },	/* CRITICAL: full 70 % */
};

/* Working set over the limit, in percent, for MODERATE, SEVERE, CRITICAL. */
static const unsigned cg_ratio[3] = { 90, 95, 98 };

struct psrc {
	bool used;
	enum rcl_psource_mode mode;
	int fds[3];		/* trigger fds, v1 eventfds; FIFO/socket in 0 */
	int file;		/* PSI file polled; v1 pressure_level; v2 events */
	int dir;		/* a cgroup's directory */
	unsigned version;	/* cgroup */
	unsigned depth;		/* v2: ancestors whose limits count */
	char path[256];

	/* PSI polling: the last totals and when they were read. */
	bool have_prev;
	struct rcl__psi prev;
	uint64_t prev_ns;
	/* A trigger's last event (per descriptor), as the kernel rate-limits. */
	bool fire_set[3];
	uint64_t fire_ns[3];
	/* systemd's PSI file polled: its trigger's own threshold. */
	bool sd_full;
	uint64_t sd_stall_us, sd_window_us;

	/* cgroup: the last good values. */
	bool have_cg;
	uint64_t cg_usage, cg_ws, cg_limit;
	bool have_events;
	uint64_t ev_high, ev_max;	/* max: max + oom + oom_kill */
	bool read_now;			/* memory.events changed */
	bool read_ok;			/* the last tick's reading parsed */

	/* Rate limit. */
	enum rcl_pressure_level level;
	uint64_t level_gen;	/* the dispatch that set level (0: none) */
	uint64_t last_event;	/* of the latest event above NONE */
	enum rcl_pressure_level pending;
	bool acted;
	uint64_t last_action;
	uint64_t wait;

	uint64_t events, actions, merged, empty_actions;
	int fallback_errno;
};

struct rcl_pressure {
	struct rcl_allocator alloc;
	const struct rcl_clock *clock;
	struct rcl_domain *d;
	unsigned flags;
	uint64_t bpu;
	uint64_t window, backoff_max, interval;
	unsigned grow_pct, cgroup_pct;
	void (*trim)(void *priv);
	void *trim_priv;
	uint64_t trim_min, trim_interval;

	pthread_mutex_t lock;
	/*
	 * The action lock: act_held under act_mutex, waited for on act_cond
	 * (act_lock()), so that the library thread's wait for it ends when a
	 * stop is set.
	 */
	pthread_mutex_t act_mutex;
	pthread_cond_t act_cond;
	bool act_held;
	pthread_mutex_t join;	/* one rcl_pressure_stop() at a time */
	int epfd, tfd, stopfd;
	unsigned nr;
	int cg;			/* the cgroup source, or -1 */
	struct psrc src[RCL_PRESSURE_MAX_SOURCES];

	/* Budgets (domain units), under lock. */
	uint64_t base, floor;
	uint64_t container;	/* smoothed; UINT64_MAX: none */
	uint64_t pressure;	/* UINT64_MAX: none */
	uint64_t applied;
	uint64_t next_tick;
	bool any_action;
	uint64_t last_any_action;	/* the latest action of any source */
	uint64_t grow_interval;
	uint64_t last_grow;		/* the latest growth step */

	/* Trim. */
	uint64_t trim_acc, last_trim;
	bool trimmed;
	bool trim_armed;	/* trim_acc reached trim_min: due at trim_due */
	uint64_t trim_due;

	/* Counters. */
	uint64_t actions, empty_actions, freed_bytes, trims, dispatches;
	uint64_t read_errors;

	/* The library thread. */
	bool running;
	atomic_bool stop;
	pthread_t thread;
	pid_t pid;		/* of the process that created it (fork) */

	/* File reads, under lock: READ_MAX, a byte that tells a longer file, NUL. */
	char buf[READ_MAX + 2];
};

/*
 * The monitor whose thread this is, and the monitors acting in this thread,
 * innermost first: a callback of one monitor's action may act with another
 * (its own domain), whose callbacks may call back into the first, which
 * still holds its p->act.  Each action pushes a frame on its stack
 * (acting_push()), as vmscan.c's passes do (rcl__pass_frame), and a call
 * that takes p->act or frees p is refused if any frame is p's, not only
 * the innermost.
 */
struct acting_frame {
	const struct rcl_pressure *p;
	const struct acting_frame *prev;
};
static RCL__TLS const struct rcl_pressure *tls_thread_of;
static RCL__TLS const struct acting_frame *tls_acting;

static void acting_push(struct acting_frame *f, const struct rcl_pressure *p)
{
	f->p = p;
	f->prev = tls_acting;
	tls_acting = f;
}

static void acting_pop(const struct acting_frame *f)
{
	tls_acting = f->prev;
}

/* Is @p acting in this thread, at any depth (its trim hook, its reclaim)? */
static bool acting_here(const struct rcl_pressure *p)
{
	const struct acting_frame *f;

	for (f = tls_acting; f; f = f->prev)
		if (f->p == p)
			return true;
	return false;
}

/*
 * Is this thread inside a callback of the library: of a monitor's action,
 * of a domain's reclaim pass, of a shrink the application ran itself (an
 * lruvec's evict callback, a shrinker's count or scan), or of a write-back
 * (a flusher's or rcl_domain_writeback_all()'s write or sync)?  Each holds
 * something another thread may wait for: a monitor's p->act, a pass's
 * slots, isolated nodes (rcl_lruvec_del_wait(), set_dirty() and
 * rcl_domain_detach() wait for them), objects under writeback.
 */
static bool in_callback(void)
{
	return tls_acting || rcl__in_holding_callback() ||
	       rcl__shrinker_in_callback();
}

/*
 * Take p->act.  A thread inside a callback (in_callback()) holds something,
 * and another thread may hold p->act and wait, in its own callback, for
 * what this thread holds: two monitors whose actions call into each other,
 * in two threads, would deadlock (A's action -> notify(B) against B's
 * action -> notify(A)); so would an evict callback calling notify(A) while
 * A's action waits in rcl_lruvec_del_wait() for the callback's isolated
 * node.  Such a thread only tries (false if p->act is taken: the caller
 * returns -EBUSY).  A thread in no callback holds nothing and waits.
 */
static bool act_take(struct rcl_pressure *p, bool wait)
{
	bool got = false;

	pthread_mutex_lock(&p->act_mutex);
	for (;;) {
		if (!p->act_held) {
			p->act_held = true;
			got = true;
			break;
		}
		/*
		 * The library thread stops waiting once a stop is set: the
		 * stopper may be in a callback that the holder waits for
		 * (rcl_pressure_stop()).
		 */
		if (!wait || (tls_thread_of == p && atomic_load(&p->stop)))
			break;
		pthread_cond_wait(&p->act_cond, &p->act_mutex);
	}
	pthread_mutex_unlock(&p->act_mutex);
	return got;
}

static bool act_lock(struct rcl_pressure *p)
{
	return act_take(p, !in_callback());
}

static void act_unlock(struct rcl_pressure *p)
{
	pthread_mutex_lock(&p->act_mutex);
	p->act_held = false;
	pthread_cond_broadcast(&p->act_cond);
	pthread_mutex_unlock(&p->act_mutex);
}

/* After a stop is set: the library thread, if it waits for p->act, gives up. */
static void act_wake_stopped(struct rcl_pressure *p)
{
	pthread_mutex_lock(&p->act_mutex);
	pthread_cond_broadcast(&p->act_cond);
	pthread_mutex_unlock(&p->act_mutex);
}

#define ACT_BUSY "called from a callback while another thread acts on the monitor"

/* ------------------------------------------------------------------------- */
/* Small helpers                                                              */
/* ------------------------------------------------------------------------- */

static uint64_t now_ns(struct rcl_pressure *p)
{
	return p->clock->now(p->clock->ctx);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* @a x @b, saturated. */
static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* @v x @num / @den without overflow (den > 0). */
static uint64_t mul_div(uint64_t v, uint64_t num, uint64_t den)
{
	return (uint64_t)((u128)v * num / den);
}

/* Copy @src into @dst of @size bytes, truncating: a path for display. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Take @s's slot descriptors out of the epoll set and close them. */
static void drop_slots(struct rcl_pressure *p, struct psrc *s)
{
	unsigned i;

	for (i = 0; i < 3; i++) {
		if (s->fds[i] >= 0)
			epoll_ctl(p->epfd, EPOLL_CTL_DEL, s->fds[i], NULL);
		close_fd(&s->fds[i]);
	}
}

/* A free source slot: zeroed, and no descriptor. */
static void clear_source(struct psrc *s)
{
	unsigned i;

	memset(s, 0, sizeof(*s));
	s->file = s->dir = -1;
	for (i = 0; i < 3; i++)
		s->fds[i] = -1;
}

/* The test seam (pressure_internal.h): all NULL, the system calls. */
struct rcl__pressure_seam rcl__pressure_seam;

static unsigned long fs_magic(int fd)
{
	struct statfs sf;

	if (rcl__pressure_seam.fs_magic)
		return rcl__pressure_seam.fs_magic(fd);
	if (fstatfs(fd, &sf))
		return 0;
	return (unsigned long)sf.f_type;
}

/* Open a descriptor the monitor polls (a trigger's, memory.events). */
static int open_poll(int dir, const char *path, int flags)
{
	if (rcl__pressure_seam.open_poll)
		return rcl__pressure_seam.open_poll(dir, path, flags);
	return openat(dir, path, flags);
}

/*
 * Write a trigger, or systemd's data to a FIFO or socket.  A socket is
 * written with MSG_NOSIGNAL: a peer that closed is -EPIPE, not a SIGPIPE
 * that ends the application.
 */
static ssize_t write_data(int fd, const void *buf, size_t len)
{
	ssize_t n;

	if (rcl__pressure_seam.write)
		return rcl__pressure_seam.write(fd, buf, len);
	n = send(fd, buf, len, MSG_NOSIGNAL);
	if (n >= 0 || errno != ENOTSOCK)
		return n;
	return write(fd, buf, len);
}

/*
 * Read a whole small file from @fd at offset 0 into p->buf (NUL after it):
 * the length, or a negative errno (-EFBIG if it is longer than READ_MAX).
 * It asks for one byte more than READ_MAX, so that a file of exactly
 * READ_MAX bytes ends at EOF and only a longer one is refused.
 */
static ssize_t read_fd(struct rcl_pressure *p, int fd)
{
	size_t len = 0;
	ssize_t n;
	int tries = 0;

	for (;;) {
		n = pread(fd, p->buf + len, READ_MAX + 1 - len, (off_t)len);
		if (n < 0) {
			if (errno == EINTR && ++tries < 8)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > READ_MAX)
			return -EFBIG;
	}
	p->buf[len] = '\0';
	return (ssize_t)len;
}

/*
 * Read the whole of @path, a /proc/self file, into a buffer from the
 * monitor's allocator that grows as needed (PROC_READ_MIN, doubling, at
 * most PROC_READ_MAX bytes): 0 with *@out (free it with p->alloc) and
 * *@len; -EFBIG if it is longer; -ENOMEM; the errno of opening or reading.
 * Sequential reads, not pread(): the file is the kernel's seq_file.
 */
static int read_proc(struct rcl_pressure *p, const char *path, char **out,
		     size_t *len)
{
	size_t cap = PROC_READ_MIN, n = 0;
	char *buf = NULL;
	int fd, err = 0, tries = 0;

	fd = rcl__pressure_seam.open_proc ?
		     rcl__pressure_seam.open_proc(path, O_RDONLY | O_CLOEXEC) :
		     open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno ? -errno : -EIO;
	buf = rcl__alloc(&p->alloc, cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			/* One byte past PROC_READ_MAX tells a longer file. */
			size_t ncap = RCL_MIN(cap * 2, (size_t)PROC_READ_MAX + 1);
			char *nb;

			if (ncap == cap) {
				err = -EFBIG;
				goto out;
			}
			nb = rcl__alloc(&p->alloc, ncap);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			memcpy(nb, buf, n);
			p->alloc.free(p->alloc.ctx, buf);
			buf = nb;
			cap = ncap;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR && ++tries < 8)
				continue;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > PROC_READ_MAX)
		err = -EFBIG;
out:
	close(fd);
	if (err) {
		if (buf)
			p->alloc.free(p->alloc.ctx, buf);
		return err;
	}
	*out = buf;
	*len = n;
	return 0;
}

static ssize_t read_at(struct rcl_pressure *p, int dir, const char *name)
{
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read_fd(p, fd);
	close(fd);
	return n;
}

static int read_u64_at(struct rcl_pressure *p, int dir, const char *name,
		       uint64_t *out)
{
	ssize_t n = read_at(p, dir, name);

	if (n < 0)
		return (int)n;
	return rcl__cg_parse_u64(p->buf, (size_t)n, out);
}

static int read_key_at(struct rcl_pressure *p, int dir, const char *name,
		       const char *key, uint64_t *out)
{
	ssize_t n = read_at(p, dir, name);

	if (n < 0)
		return (int)n;
	return rcl__cg_parse_keyed(p->buf, (size_t)n, key, out);
}

static enum rcl_pressure_level max_level(enum rcl_pressure_level a,
					 enum rcl_pressure_level b)
{
	return a > b ? a : b;
}

/* ------------------------------------------------------------------------- */
/* Budgets                                                                    */
/* ------------------------------------------------------------------------- */

/*
 * The effective budget: min(base, container, pressure).  The floor is the
 * pressure budget's (an action's target never goes below it), not the
 * container's: the cgroup's limit binds below it, or the budget would stay
 * above what the cgroup allows (base 64 GB, its floor 1 GB, a 500 MB
 * limit).  At least 1: a child's budget of 0 is no limit.
 */
static uint64_t effective_locked(const struct rcl_pressure *p)
{
	uint64_t b = RCL_MIN(p->base, RCL_MIN(p->container,
					      RCL_MAX(p->pressure, p->floor)));

	return RCL_MAX(b, 1);
}

/*
 * Apply the effective budget (p->act held, p->lock not), and reclaim down
 * to it in this thread: rcl_domain_set_budget() reclaims towards the high
 * watermark itself, but only wakes the background reclaimer if one runs,
 * and an action must see what it freed (its back-off and the trim depend
 * on it), so what is still over the high watermark is reclaimed here.
 * Returns the usage drop across it (domain units).
 */
static uint64_t apply_budget(struct rcl_pressure *p, bool force)
{
	struct acting_frame frame;
	struct rcl_reclaim_result res;
	struct rcl_watermarks wm;
	uint64_t b, before, after, over;

	pthread_mutex_lock(&p->lock);
	b = effective_locked(p);
	if (!force && b == p->applied) {
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	p->applied = b;
	pthread_mutex_unlock(&p->lock);

	before = rcl_domain_usage(p->d);
	/*
	 * Popped, not cleared: a callback of another monitor's action may
	 * act with this one, and that monitor is still acting afterwards.
	 */
	acting_push(&frame, p);
	rcl_domain_set_budget(p->d, b);
	if (!rcl_domain_watermarks(p->d, &wm)) {
		over = need(p->d, wm.high);
		if (over)
			rcl_domain_reclaim(p->d,
					   rcl__domain_goal_objects(p->d, over),
					   RCL_CTX_CAPABLE, &res);
	}
	acting_pop(&frame);
	after = rcl_domain_usage(p->d);
	return before > after ? before - after : 0;
}

/*
 * Count @freed units freed by an action or a budget change (p->act held,
 * p->lock not).  Once frees since the last trim reach trim_min, a trim is
 * due one timer interval later: the object cache, by default, destroys an
 * evicted object in the shard's next insert, after the eviction that was
 * counted here, and a trim at once would find that memory still in use.
 */
static void count_freed(struct rcl_pressure *p, uint64_t freed, uint64_t now)
{
	uint64_t bytes = sat_mul(freed, p->bpu);

	pthread_mutex_lock(&p->lock);
	p->freed_bytes = sat_add(p->freed_bytes, bytes);
	p->trim_acc = sat_add(p->trim_acc, bytes);
	if (!(p->flags & RCL_PRESSURE_NO_TRIM) && !p->trim_armed &&
	    p->trim_acc && p->trim_acc >= p->trim_min) {
		p->trim_armed = true;
		p->trim_due = sat_add(now, p->interval);
	}
	pthread_mutex_unlock(&p->lock);
}

/* When the next trim may run (p->lock held); RCL_CLOCK_FOREVER: none. */
static uint64_t trim_deadline_locked(const struct rcl_pressure *p)
{
	uint64_t d;

	if (!p->trim_armed)
		return RCL_CLOCK_FOREVER;
	d = p->trim_due;
	if (p->trimmed)
		d = RCL_MAX(d, sat_add(p->last_trim, p->trim_interval));
	return d;
}

/* Run the trim hook if one is due (p->act held, p->lock not). */
static void maybe_trim(struct rcl_pressure *p, uint64_t now)
{
	struct acting_frame frame;
	bool trim = false;

	pthread_mutex_lock(&p->lock);
	if (p->trim_armed && now >= trim_deadline_locked(p)) {
		trim = true;
		p->trim_armed = false;
		p->trim_acc = 0;
		p->last_trim = now;
		p->trimmed = true;
		p->trims++;
	}
	pthread_mutex_unlock(&p->lock);
	if (!trim)
		return;
	acting_push(&frame, p);
	p->trim(p->trim_priv);
	acting_pop(&frame);
}

/* The fraction of usage an action at @level leaves, in eighths. */
static uint64_t level_keep_eighths(enum rcl_pressure_level level)
{
	switch (level) {
	case RCL_PRESSURE_MODERATE:
		return 7;
	case RCL_PRESSURE_SEVERE:
		return 6;
	default:
		return 4;
	}
}

static void default_trim(void *priv)
{
	(void)priv;
#if defined(__GLIBC__)
	malloc_trim(0);
#endif
}

/*
 * One action of source @s at @level (p->act held).  Returns 1 (an action
 * was taken).
 */
static int act(struct rcl_pressure *p, struct psrc *s,
	       enum rcl_pressure_level level, uint64_t now)
{
	uint64_t usage, target, freed;

	/* The target is a share of what is charged, not of threads' stocks. */
	rcl__domain_drain_stocks(p->d);
	usage = rcl_domain_usage(p->d);
	pthread_mutex_lock(&p->lock);
	target = mul_div(usage, level_keep_eighths(level), 8);
	target = RCL_MAX(target, p->floor);
	/*
	 * Usage can be over base (the application raised the domain's
	 * budget): a target at or above base binds nothing that base does
	 * not, and the pressure budget stays none (it is below base or none).
	 */
	if (target < p->base)
		p->pressure = RCL_MIN(p->pressure, target);
	p->last_any_action = now;
	p->any_action = true;
	pthread_mutex_unlock(&p->lock);

	freed = apply_budget(p, true);

	pthread_mutex_lock(&p->lock);
	s->actions++;
	s->last_action = now;
	s->acted = true;
	s->pending = RCL_PRESSURE_NONE;
	p->actions++;
	if (!freed) {
		s->empty_actions++;
		p->empty_actions++;
		s->wait = s->wait > p->backoff_max / 2 ? p->backoff_max :
							 s->wait * 2;
	} else {
		s->wait = p->window;
	}
	pthread_mutex_unlock(&p->lock);
	count_freed(p, freed, now);
	return 1;
}

/*
 * An event of source @s (p->lock held): true if it should act now (the
 * caller does, after dropping the lock), else it merged into the pending
 * level.  @gen is the dispatch it came in (p->dispatches), 0 for one of its
 * own (rcl_pressure_notify()): within one dispatch the source's level is
 * the highest of its events (its three triggers, an eventfd and the tick's
 * reading), whatever order epoll returned them in.
 */
static bool event_locked(struct rcl_pressure *p, struct psrc *s,
			 enum rcl_pressure_level level, uint64_t now,
			 uint64_t gen)
{
	if (gen && s->level_gen == gen)
		s->level = max_level(s->level, level);
	else
		s->level = level;
	s->level_gen = gen;
	if (level == RCL_PRESSURE_NONE)
		return false;
	s->events++;
	s->last_event = now;
	if (!s->acted || now - s->last_action >= s->wait) {
		s->pending = max_level(s->pending, level);
		return true;
	}
	s->merged++;
	s->pending = max_level(s->pending, level);
	return false;
}

/* ------------------------------------------------------------------------- */
/* Reading the sources                                                        */
/* ------------------------------------------------------------------------- */

/* The level of a stall fraction: @some and @full in us over @dt_us. */
static enum rcl_pressure_level psi_level(uint64_t some, uint64_t full,
					 uint64_t dt_us)
{
	enum rcl_pressure_level l = RCL_PRESSURE_NONE;
	unsigned i;

	if (!dt_us)
		return l;
	for (i = 0; i < 3; i++) {
		uint64_t v = psi_levels[i].full ? full : some;

		/* v / dt >= stall / window, without division. */
		if ((u128)v * PSI_WINDOW_US >=
		    (u128)psi_levels[i].stall_us * dt_us)
			l = (enum rcl_pressure_level)(i + 1);
	}
	return l;
}

/* The shortest interval a PSI reading is rated over: 1 ms. */
#define PSI_MIN_DT_US 1000ull

/*
 * The spacing a polled PSI reading needs from the last rated one to be
 * rated (psi_poll_locked()) is half the interval, and at most this: PSI's
 * own window, 2 s.  With a huge interval (no timer) the readings are the
 * ticks memory.events brings forward, and half of it would skip every one
 * (pressure.h).
 */
#define PSI_POLL_SPACING_MAX_US PSI_WINDOW_US

/*
 * A polled source's reading skipped as too soon after the last rated one
 * (psi_poll_locked()): no level, and no evidence that its level ended;
 * the next reading rates the whole time since.
 */
#define LEVEL_SKIPPED (-2)

/* What psi_read_locked() got. */
enum psi_read {
	PSI_READ_FAILED,	/* the file did not read or parse */
	PSI_READ_BASE,		/* a new baseline: no interval to rate */
	PSI_READ_SHORT,		/* under PSI_MIN_DT_US since it: baseline kept */
	PSI_READ_DELTA,		/* the stall growth since the baseline */
};

/* Make @cur, read at @now, source @s's baseline. */
static void psi_rebase(struct psrc *s, const struct rcl__psi *cur,
		       uint64_t now)
{
	s->prev = *cur;
	s->prev_ns = now;
	s->have_prev = true;
}

/*
 * Read source @s's PSI totals from s->file (p->lock held) into @cur, and
 * the growth of the "some" and "full" totals since its baseline into
 * @dsome, @dfull over @dt_us.  The first reading, and one whose counters
 * went back, become the baseline.  An interval shorter than PSI_MIN_DT_US
 * (a forced tick right after a reading) is PSI_READ_SHORT, not rated, and
 * keeps the baseline: a stall share over no time means nothing, and rated
 * as such it read as any level (0 >= threshold x 0).  The caller moves the
 * baseline on PSI_READ_DELTA (psi_rebase()).
 */
static enum psi_read psi_read_locked(struct rcl_pressure *p, struct psrc *s,
				     uint64_t now, struct rcl__psi *cur,
				     uint64_t *dsome, uint64_t *dfull,
				     uint64_t *dt_us)
{
	ssize_t n = read_fd(p, s->file);

	if (n < 0 || rcl__psi_parse(p->buf, (size_t)n, cur)) {
		p->read_errors++;
		return PSI_READ_FAILED;
	}
	if (!s->have_prev || cur->some_total_us < s->prev.some_total_us ||
	    cur->full_total_us < s->prev.full_total_us || now <= s->prev_ns) {
		psi_rebase(s, cur, now);
		return PSI_READ_BASE;
	}
	*dt_us = (now - s->prev_ns) / 1000;
	if (*dt_us < PSI_MIN_DT_US)
		return PSI_READ_SHORT;
	*dsome = cur->some_total_us - s->prev.some_total_us;
	*dfull = cur->full_total_us - s->prev.full_total_us;
	return PSI_READ_DELTA;
}

/* systemd's one level: @s's trigger's stall share reached over @dt_us. */
static enum rcl_pressure_level sd_level(const struct psrc *s, uint64_t dsome,
					uint64_t dfull, uint64_t dt_us)
{
	uint64_t v = s->sd_full ? dfull : dsome;

	if (!dt_us)
		return RCL_PRESSURE_NONE;
	return (u128)v * s->sd_window_us >= (u128)s->sd_stall_us * dt_us ?
		       RCL_PRESSURE_SEVERE :
		       RCL_PRESSURE_NONE;
}

/*
 * Read a polled PSI file (p->lock held): the level, -1 for no reading (a
 * read error, a new baseline), or LEVEL_SKIPPED.
 */
static int psi_poll_locked(struct rcl_pressure *p, struct psrc *s,
			   uint64_t now)
{
	struct rcl__psi cur;
	uint64_t dsome, dfull, dt;

	switch (psi_read_locked(p, s, now, &cur, &dsome, &dfull, &dt)) {
	case PSI_READ_DELTA:
		break;
	case PSI_READ_SHORT:
		return LEVEL_SKIPPED;
	default:
		return -1;
	}
	/*
	 * A tick brought forward (memory.events changed) reads every source;
	 * a few milliseconds are too short to rate a stall share over (1 ms
	 * of stall in 5 would read as 20 %).  Under half the interval, or
	 * PSI's window if that is shorter (a huge interval would skip every
	 * forced reading), it is skipped, and the baseline stays, so the
	 * next reading rates the whole time since.
	 */
	if (dt < RCL_MIN(p->interval / 2000, PSI_POLL_SPACING_MAX_US))
		return LEVEL_SKIPPED;
	psi_rebase(s, &cur, now);
	if (s->mode == RCL_PSOURCE_SYSTEMD_PSI_POLL)
		return (int)sd_level(s, dsome, dfull, dt);
	return (int)psi_level(dsome, dfull, dt);
}

/* Whether @s waits on PSI triggers. */
static bool is_trigger(const struct psrc *s)
{
	return s->mode == RCL_PSOURCE_PSI_TRIGGER ||
	       s->mode == RCL_PSOURCE_SYSTEMD_PSI;
}

/* The window of @s's triggers, in us. */
static uint64_t trigger_window_us(const struct psrc *s)
{
	return s->mode == RCL_PSOURCE_SYSTEMD_PSI ? s->sd_window_us :
						    PSI_WINDOW_US;
}

/*
 * fd mode: what trigger source @s's totals say (p->lock held): the level,
 * or -1.  A PSI trigger's event is cleared by the poll that reports it
 * (psi_trigger_poll()), and the application's poll of the epoll descriptor
 * polls the trigger's descriptor (a nested poll), so the event is gone by
 * the time dispatch asks epoll for it.  So the totals stand in for it: a
 * level whose threshold the stall grew by since the baseline, if that is at
 * most one window old (so much stall within one window is what the kernel's
 * trigger means), or whose share of a longer time (a dispatch that came
 * late) it reached (the polled mode's rule).  As a kernel trigger, each
 * fires at most once per window (since its last event, from epoll or from
 * here).  The baseline moves when a level fires (the stall that fired it
 * fires nothing again; a higher level then needs its own threshold's worth
 * of new stall, a little later than the kernel's sliding window would), when
 * it is a window old (the timer makes it no older: deadline_locked()), or
 * when @fired (epoll did return the trigger's own event).
 */
static int trigger_totals_locked(struct rcl_pressure *p, struct psrc *s,
				 uint64_t now, bool fired)
{
	bool sd = s->mode == RCL_PSOURCE_SYSTEMD_PSI;
	struct rcl__psi cur;
	uint64_t dsome, dfull, dt, w = trigger_window_us(s), over;
	unsigned i;
	int l = -1;

	switch (psi_read_locked(p, s, now, &cur, &dsome, &dfull, &dt)) {
	case PSI_READ_FAILED:
		s->have_prev = false;	/* no deadline until a reading */
		return -1;
	case PSI_READ_BASE:
	case PSI_READ_SHORT:
		if (fired)
			psi_rebase(s, &cur, now);
		return -1;
	default:
		break;
	}
	over = RCL_MAX(dt, w);
	for (i = 0; i < (sd ? 1u : 3u); i++) {
		uint64_t v = (sd ? s->sd_full : psi_levels[i].full) ? dfull :
								      dsome;
		uint64_t stall = sd ? s->sd_stall_us : psi_levels[i].stall_us;

		if ((u128)v * w < (u128)stall * over)
			continue;
		if (s->fire_set[i] && now - s->fire_ns[i] < w * 1000)
			continue;
		s->fire_set[i] = true;
		s->fire_ns[i] = now;
		l = sd ? RCL_PRESSURE_SEVERE : (int)i + 1;
	}
	if (fired || l >= 0 || dt >= w)
		psi_rebase(s, &cur, now);
	return l;
}

/*
 * The v2 limits of @s's @s->depth ancestors (p->lock held): *@lim lowered
 * to the lowest memory.max or memory.high among them.  Each is its
 * parent's "..", from the cgroup's own directory: no path is built, and
 * cg_depth() counted them up to the mount's root, so none is above it.
 * A file missing at an ancestor (the root has neither) is no limit there.
 * Return: 0 or a negative errno (*@lim then unchanged).
 */
static int cg_ancestors_locked(struct rcl_pressure *p, struct psrc *s,
			       uint64_t *lim)
{
	static const char *const names[2] = { "memory.max", "memory.high" };
	uint64_t l = *lim, v;
	int cur = s->dir, err = 0;
	unsigned i, j;

	for (i = 0; i < s->depth && !err; i++) {
		int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		err = up < 0 ? -errno : 0;
		if (cur != s->dir)
			close(cur);
		cur = up;
		for (j = 0; j < 2 && !err; j++) {
			err = read_u64_at(p, cur, names[j], &v);
			if (err == -ENOENT)
				err = 0;
			else if (!err && v < l)
				l = v;
		}
	}
	if (cur >= 0 && cur != s->dir)
		close(cur);
	if (!err)
		*lim = l;
	return err;
}

/*
 * Read a cgroup's usage, working set and limit (p->lock held): 0 or a
 * negative errno; the outputs only on success.  The limit is the
 * cgroup's effective one: the lowest of its own and its ancestors' (v2:
 * cg_ancestors_locked(); v1: the kernel's hierarchical_memory_limit).
 */
static int cg_read_locked(struct rcl_pressure *p, struct psrc *s,
			  uint64_t *usage, uint64_t *ws, uint64_t *limit)
{
	uint64_t u, inact, lim, high, hier;
	ssize_t n;
	int err;

	if (s->version == 2) {
		err = read_u64_at(p, s->dir, "memory.current", &u);
		if (!err)
			err = read_key_at(p, s->dir, "memory.stat",
					  "inactive_file", &inact);
		if (!err)
			err = read_u64_at(p, s->dir, "memory.max", &lim);
		if (!err)
			err = read_u64_at(p, s->dir, "memory.high", &high);
		if (!err && high < lim)
			lim = high;
		if (!err)
			err = cg_ancestors_locked(p, s, &lim);
		if (err)
			return err;
	} else {
		err = read_u64_at(p, s->dir, "memory.usage_in_bytes", &u);
		if (err)
			return err;
		n = read_at(p, s->dir, "memory.stat");
		if (n < 0)
			return (int)n;
		err = rcl__cg_parse_keyed(p->buf, (size_t)n,
					  "total_inactive_file", &inact);
		if (err)
			return err;
		/*
		 * The limit the kernel enforces, the ancestors' included
		 * (memcg1_stat_format()); absent from a kernel without it.
		 */
		err = rcl__cg_parse_keyed(p->buf, (size_t)n,
					  "hierarchical_memory_limit", &hier);
		if (err == -ENOENT)
			hier = UINT64_MAX;
		else if (err)
			return err;
		err = read_u64_at(p, s->dir, "memory.limit_in_bytes", &lim);
		if (err)
			return err;
		if (hier < lim)
			lim = hier;
		/* v1 says "no limit" with a huge number (PAGE_COUNTER_MAX). */
		if (lim >= (1ull << 62))
			lim = UINT64_MAX;
	}
	*usage = u;
	*ws = u > inact ? u - inact : 0;
	*limit = lim;
	return 0;
}

/*
 * Read v2 memory.events (p->lock held): its "high" count, and "max" +
 * "oom" + "oom_kill"; 0 or a negative errno, the outputs only on success.
 */
static int cg_events_locked(struct rcl_pressure *p, struct psrc *s,
			    uint64_t *high, uint64_t *max)
{
	uint64_t h, m, oom, kill;
	ssize_t n = read_at(p, s->dir, "memory.events");
	int err;

	if (n < 0)
		return (int)n;
	err = rcl__cg_parse_keyed(p->buf, (size_t)n, "high", &h);
	if (!err)
		err = rcl__cg_parse_keyed(p->buf, (size_t)n, "max", &m);
	if (err)
		return err;
	/* Older kernels lack oom_kill; a missing key counts 0. */
	if (rcl__cg_parse_keyed(p->buf, (size_t)n, "oom", &oom))
		oom = 0;
	if (rcl__cg_parse_keyed(p->buf, (size_t)n, "oom_kill", &kill))
		kill = 0;
	*high = h;
	*max = sat_add(m, sat_add(oom, kill));
	return 0;
}

/* The level of the cgroup source on this tick (p->lock held), or -1. */
static int cg_poll_locked(struct rcl_pressure *p, struct psrc *s)
{
	uint64_t u, ws, lim, high, max;
	int l = RCL_PRESSURE_NONE;
	unsigned i;

	s->read_now = false;
	s->read_ok = false;
	if (cg_read_locked(p, s, &u, &ws, &lim)) {
		p->read_errors++;
		return -1;
	}
	s->read_ok = true;
	s->cg_usage = u;
	s->cg_ws = ws;
	s->cg_limit = lim;
	s->have_cg = true;
	/*
	 * A budget that follows the cgroup already answers its working set
	 * (it is re-read here); ratio levels on top would cut the cache
	 * again for the same memory, every window.
	 */
	if (lim != UINT64_MAX && lim &&
	    !(p->flags & RCL_PRESSURE_FOLLOW_CGROUP))
		for (i = 0; i < 3; i++)
			if ((u128)ws * 100 >=
			    (u128)lim * cg_ratio[i])
				l = (int)i + 1;

	if (s->version == 2) {
		if (cg_events_locked(p, s, &high, &max)) {
			p->read_errors++;
			return l;
		}
		if (s->have_events) {
			if (high > s->ev_high)
				l = RCL_MAX(l, RCL_PRESSURE_SEVERE);
			if (max > s->ev_max)
				l = RCL_PRESSURE_CRITICAL;
		}
		s->ev_high = high;
		s->ev_max = max;
		s->have_events = true;
	}
	return l;
}

/*
 * The container budget from the cgroup's last reading (p->lock held), in
 * domain units; UINT64_MAX for no limit.
 */
static uint64_t container_raw_locked(struct rcl_pressure *p,
				     const struct psrc *s)
{
	uint64_t own = rcl_domain_usage(p->d), others, line;

	if (!s->have_cg || s->cg_limit == UINT64_MAX)
		return UINT64_MAX;
	own = own > UINT64_MAX / p->bpu ? UINT64_MAX : own * p->bpu;
	others = s->cg_ws > own ? s->cg_ws - own : 0;
	/*
	 * The cgroup's working set is to stay at cgroup_pct of the limit:
	 * the margin is a share of the limit, so it does not shrink as the
	 * others grow (a share of the room would leave less than one step
	 * of a growing neighbour once it holds a third of the limit).
	 */
	line = mul_div(s->cg_limit, p->cgroup_pct, 100);
	return (line > others ? line - others : 0) / p->bpu;
}

/*
 * The timer's work (p->lock held): read the polled sources, mark those that
 * should act in @act_now, and step the budgets.
 */
static void tick_locked(struct rcl_pressure *p, uint64_t now, bool *act_now)
{
	uint64_t step = RCL_MAX(mul_div(p->base, p->grow_pct, 100), 1);
	bool quiet, grow;
	unsigned i;

	for (i = 0; i < p->nr; i++) {
		struct psrc *s = &p->src[i];
		int l = -1;

		if (!s->used)
			continue;
		switch (s->mode) {
		case RCL_PSOURCE_PSI_POLL:
		case RCL_PSOURCE_SYSTEMD_PSI_POLL:
			l = psi_poll_locked(p, s, now);
			break;
		case RCL_PSOURCE_CGROUP_V1:
		case RCL_PSOURCE_CGROUP_V1_EVENTS:
		case RCL_PSOURCE_CGROUP_V2:
			l = cg_poll_locked(p, s);
			break;
		default:
			break;
		}
		/*
		 * A reading skipped as too soon says nothing: it neither
		 * rates the source nor ends its level below.
		 */
		if (l == LEVEL_SKIPPED)
			continue;
		if (l >= 0 && event_locked(p, s, (enum rcl_pressure_level)l,
					   now, p->dispatches))
			act_now[i] = true;
		/*
		 * A descriptor says when pressure starts, never when it
		 * ends: its level ends after twice the longer of the window
		 * and PSI's own (2 s) without another event.
		 */
		if (l < 0 && s->level != RCL_PRESSURE_NONE &&
		    s->mode != RCL_PSOURCE_MANUAL &&
		    now - s->last_event >=
			    sat_mul(2, RCL_MAX(p->window, PSI_WINDOW_US * 1000)))
			s->level = RCL_PRESSURE_NONE;
	}

	/*
	 * Hysteresis: grow back by one step per grow interval, and only when
	 * no action came in the last one: a cache that dropped regrows at a
	 * bounded rate and not while pressure goes on.
	 */
	quiet = !p->any_action || now - p->last_any_action > p->grow_interval;
	grow = quiet && now - p->last_grow >= p->grow_interval;
	if (grow)
		p->last_grow = now;
	if (grow && p->pressure != UINT64_MAX) {
		p->pressure = sat_add(p->pressure, step);
		if (p->pressure >= p->base)
			p->pressure = UINT64_MAX;
	}
	/* A reading that failed holds the container budget where it is. */
	if ((p->flags & RCL_PRESSURE_FOLLOW_CGROUP) && p->cg >= 0 &&
	    p->src[p->cg].read_ok) {
		uint64_t raw = container_raw_locked(p, &p->src[p->cg]);

		if (raw <= p->container) {
			p->container = raw;
		} else if (grow) {
			uint64_t c = sat_add(p->container, step);

			/* At base the container no longer binds: none. */
			p->container = c >= raw || (c >= p->base &&
						    raw >= p->base) ?
					       raw :
					       c;
		}
	}
	/* Saturated: a huge interval is a tick at RCL_CLOCK_FOREVER, never. */
	if (now - p->next_tick >= p->interval)
		p->next_tick = sat_add(now, p->interval);	/* far behind: skip */
	else
		p->next_tick = sat_add(p->next_tick, p->interval);
}

/* The next deadline (p->lock held). */
static uint64_t deadline_locked(const struct rcl_pressure *p)
{
	uint64_t d = RCL_MIN(p->next_tick, trim_deadline_locked(p));
	unsigned i;

	for (i = 0; i < p->nr; i++) {
		const struct psrc *s = &p->src[i];

		if (s->used && s->pending != RCL_PRESSURE_NONE && s->acted)
			d = RCL_MIN(d, sat_add(s->last_action, s->wait));
		/* fd mode: a trigger's baseline is at most a window old. */
		if (s->used && !p->running && is_trigger(s) && s->have_prev)
			d = RCL_MIN(d, sat_add(s->prev_ns,
					       trigger_window_us(s) * 1000));
	}
	return d;
}

static void arm_timer_locked(struct rcl_pressure *p, uint64_t now)
{
	uint64_t d = deadline_locked(p);
	uint64_t rel = d > now ? d - now : 1;
	struct itimerspec its = { 0 };

	if (rel > 3600ull * 1000000000ull)
		rel = 3600ull * 1000000000ull;
	its.it_value.tv_sec = (time_t)(rel / 1000000000ull);
	its.it_value.tv_nsec = (long)(rel % 1000000000ull);
	timerfd_settime(p->tfd, 0, &its, NULL);
}

/*
 * Drain a FIFO or socket (bounded); false if the peer closed.  *@got (if
 * not NULL) is set when bytes were read.
 */
static bool drain(int fd, bool *got)
{
	char b[256];
	int i;

	for (i = 0; i < 64; i++) {
		ssize_t n = read(fd, b, sizeof(b));

		if (n > 0) {
			if (got)
				*got = true;
			continue;
		}
		if (n == 0)
			return false;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK;
	}
	return true;
}

/* A source's descriptor is ready (p->lock held): its level, or -1. */
static int ready_locked(struct rcl_pressure *p, struct psrc *s, unsigned slot,
			uint32_t events)
{
	bool got = false;
	uint64_t v;

	switch (s->mode) {
	case RCL_PSOURCE_PSI_TRIGGER:
	case RCL_PSOURCE_SYSTEMD_PSI:
		/*
		 * A trigger's descriptor reports EPOLLERR only when it has
		 * none to wait on: its cgroup removed (kernfs), PSI off, no
		 * trigger written; always with EPOLLPRI, and for ever.
		 */
		if (events & (EPOLLERR | EPOLLHUP)) {
			s->fallback_errno = ENODEV;
			goto off;
		}
		return s->mode == RCL_PSOURCE_SYSTEMD_PSI ?
			       RCL_PRESSURE_SEVERE :
			       (int)slot + 1;
	case RCL_PSOURCE_CGROUP_V1_EVENTS:
		if (slot >= 3 ||
		    read(s->fds[slot], &v, sizeof(v)) != sizeof(v))
			return -1;
		/*
		 * "low" only says that the kernel reclaims in the cgroup:
		 * with the working set under 90 % of the limit that is page
		 * cache going at no cost, not this cache's problem.  With no
		 * limit (or no reading of it) the working set is at no share
		 * of one: the same (the ratio levels ignore such a cgroup
		 * too, cg_poll_locked()).
		 */
		if (slot == 0 &&
		    (!s->have_cg || s->cg_limit == UINT64_MAX || !s->cg_limit ||
		     (u128)s->cg_ws * 100 < (u128)s->cg_limit * cg_ratio[0]))
			return -1;
		return (int)slot + 1;
	case RCL_PSOURCE_CGROUP_V2: {
		/* memory.events changed: reading it through this descriptor
		   is what clears its POLLPRI (kernfs). */
		ssize_t n = read_fd(p, s->file);

		if (n < 0) {
			/*
			 * A read that fails cannot clear it (a removed
			 * cgroup's file: ENODEV, EPOLLERR | EPOLLPRI for
			 * ever): kept, it would wake every dispatch and
			 * force a tick each time.  The timer's reads go on.
			 */
			p->read_errors++;
			epoll_ctl(p->epfd, EPOLL_CTL_DEL, s->file, NULL);
			close_fd(&s->file);
			s->fallback_errno = (int)-n;
			return -1;
		}
		s->read_now = true;
		return -1;
	}
	case RCL_PSOURCE_SYSTEMD_FIFO:
	case RCL_PSOURCE_SYSTEMD_SOCKET:
		if (!drain(s->fds[0], &got) || (events & (EPOLLHUP | EPOLLERR)))
			goto off;
		return RCL_PRESSURE_SEVERE;
	default:
		return -1;
	}
off:
	drop_slots(p, s);
	close_fd(&s->file);	/* a trigger source's totals */
	s->mode = RCL_PSOURCE_OFF;
	s->level = RCL_PRESSURE_NONE;
	s->pending = RCL_PRESSURE_NONE;
	/* Bytes the peer wrote before it closed are its last event. */
	return got ? RCL_PRESSURE_SEVERE : -1;
}

/* Most events one wait takes. */
#define NR_EVENTS 16

/* Is @tag (an epoll event's) one of a PSI trigger's descriptors? */
static bool trigger_tag_locked(const struct rcl_pressure *p, uint64_t tag)
{
	if (tag == TAG_TIMER || tag == TAG_STOP || (tag >> 2) >= p->nr ||
	    (tag & 3) >= 3)
		return false;
	return p->src[tag >> 2].used && is_trigger(&p->src[tag >> 2]);
}

/*
 * Handle the events of one wait on p->epfd, then do what is due, all under
 * p->act and p->lock, so that dispatches in several threads are serialised.
 *
 * The library thread passes the @n events of its one blocking wait (@ev),
 * made with no lock held, and @gen, p->dispatches before it: a second wait
 * would find a PSI trigger's event gone (its poll clears it).  If another
 * dispatch ran meanwhile (the application's rcl_pressure_dispatch()), it
 * handled the level-triggered descriptors already: of @ev only the trigger
 * events are kept (nobody else saw them), and the rest is asked of epoll
 * again.  rcl_pressure_dispatch() passes no events and waits here.
 *
 * Without the library thread (fd mode), the trigger sources' totals are
 * read too, for the events the application's poll consumed
 * (trigger_totals_locked()); a level from them counts if it is above what
 * epoll returned for that source.  An event epoll returns for a trigger
 * that the totals fired within its window is the same stall: not counted
 * again.
 */
static int dispatch_events(struct rcl_pressure *p,
			   const struct epoll_event *ev, int n, uint64_t gen)
{
	bool act_now[RCL_PRESSURE_MAX_SOURCES] = { false };
	bool fired[RCL_PRESSURE_MAX_SOURCES] = { false };
	int ev_level[RCL_PRESSURE_MAX_SOURCES];
	struct epoll_event local[NR_EVENTS];
	int i, nr, nr_actions = 0;
	bool fd_mode;
	uint64_t now;

	if (!act_lock(p)) {
		/* The library thread gave up its wait for a stop: no refusal. */
		if (tls_thread_of == p && atomic_load(&p->stop))
			return 0;
		return RCL__REFUSE(-EBUSY, ACT_BUSY);
	}
	/*
	 * The library thread does not act once a stop is set: a stop from a
	 * callback sets it under p->act and then joins, and must not wait for
	 * an action whose callbacks may wait for it (rcl_pressure_stop()).
	 */
	if (tls_thread_of == p && atomic_load(&p->stop)) {
		act_unlock(p);
		return 0;
	}
	pthread_mutex_lock(&p->lock);
	if (!ev || p->dispatches != gen) {
		int m = 0, k;

		for (i = 0; ev && i < n; i++)
			if (trigger_tag_locked(p, ev[i].data.u64))
				local[m++] = ev[i];
		k = epoll_wait(p->epfd, local + m, NR_EVENTS - m, 0);
		n = m + (k > 0 ? k : 0);
		ev = local;
	}
	fd_mode = !p->running;
	for (i = 0; i < RCL_PRESSURE_MAX_SOURCES; i++)
		ev_level[i] = -1;
	p->dispatches++;
	now = now_ns(p);
	for (i = 0; i < n; i++) {
		uint64_t tag = ev[i].data.u64;
		struct psrc *s;
		int l;

		if (tag == TAG_TIMER) {
			uint64_t x;

			if (read(p->tfd, &x, sizeof(x)) < 0) {
				/* EAGAIN: re-armed meanwhile */
			}
			continue;
		}
		if (tag == TAG_STOP || (tag >> 2) >= p->nr)
			continue;
		s = &p->src[tag >> 2];
		if (!s->used)
			continue;
		l = ready_locked(p, s, (unsigned)(tag & 3), ev[i].events);
		if (l >= 0)
			fired[tag >> 2] = true;
		if (l >= 0 && is_trigger(s) && (tag & 3) < 3) {
			unsigned slot = (unsigned)(tag & 3);

			/* fd mode: the totals fired it already (the kernel's
			   own events are at most one a window). */
			if (fd_mode && s->fire_set[slot] &&
			    now - s->fire_ns[slot] < trigger_window_us(s) * 1000)
				continue;
			s->fire_set[slot] = true;
			s->fire_ns[slot] = now;
		}
		if (l > ev_level[tag >> 2])
			ev_level[tag >> 2] = l;
		if (l >= 0 && event_locked(p, s, (enum rcl_pressure_level)l,
					   now, p->dispatches))
			act_now[tag >> 2] = true;
	}
	for (i = 0; fd_mode && i < (int)p->nr; i++) {
		struct psrc *s = &p->src[i];
		int l;

		if (!s->used || !is_trigger(s) || s->file < 0)
			continue;
		l = trigger_totals_locked(p, s, now, fired[i]);
		if (l > ev_level[i] &&
		    event_locked(p, s, (enum rcl_pressure_level)l, now,
				 p->dispatches))
			act_now[i] = true;
	}
	if (p->cg >= 0 && p->src[p->cg].read_now && now < p->next_tick)
		p->next_tick = now;	/* memory.events changed: read now */
	if (now >= p->next_tick)
		tick_locked(p, now, act_now);
	for (i = 0; i < (int)p->nr; i++) {
		struct psrc *s = &p->src[i];

		if (s->used && s->pending != RCL_PRESSURE_NONE && s->acted &&
		    now - s->last_action >= s->wait)
			act_now[i] = true;
	}
	/*
	 * rcl_pressure_add_manual() takes only p->lock: the table's length
	 * is read under it (sources are never removed, so the first nr stay).
	 */
	nr = (int)p->nr;
	pthread_mutex_unlock(&p->lock);

	for (i = 0; i < nr; i++) {
		enum rcl_pressure_level l;

		if (!act_now[i])
			continue;
		pthread_mutex_lock(&p->lock);
		l = p->src[i].pending;
		pthread_mutex_unlock(&p->lock);
		if (l != RCL_PRESSURE_NONE)
			nr_actions += act(p, &p->src[i], l, now);
	}
	/* A budget that moved without an action (growth, the container). */
	count_freed(p, apply_budget(p, false), now);
	maybe_trim(p, now);

	pthread_mutex_lock(&p->lock);
	arm_timer_locked(p, now_ns(p));
	pthread_mutex_unlock(&p->lock);
	act_unlock(p);
	return nr_actions;
}

/* ------------------------------------------------------------------------- */
/* Creating and freeing                                                       */
/* ------------------------------------------------------------------------- */

static int epoll_add(struct rcl_pressure *p, int fd, uint32_t events,
		     uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

RCL_API int rcl_pressure_new(const struct rcl_pressure_config *cfg,
			     struct rcl_pressure **out)
{
	const struct rcl_allocator *a;
	struct rcl_pressure *p;
	uint64_t base;
	unsigned i;
	int err;

	if (!cfg || !out || !cfg->domain)
		return RCL__REFUSE(-EINVAL, "a NULL configuration, output or domain");
	if (cfg->flags & ~(RCL_PRESSURE_FOLLOW_CGROUP | RCL_PRESSURE_NO_TRIM))
		return RCL__REFUSE(-EINVAL, "unknown flags");
	if (cfg->grow_pct > 100 || cfg->cgroup_pct > 100)
		return RCL__REFUSE(-EINVAL, "grow_pct or cgroup_pct above 100");
	if (cfg->allocator && (!cfg->allocator->alloc || !cfg->allocator->free))
		return RCL__REFUSE(-EINVAL, "an allocator without both callbacks");
	base = cfg->base_budget ? cfg->base_budget :
				  rcl_domain_budget(cfg->domain);
	if (cfg->min_budget > base)
		return RCL__REFUSE(-EINVAL, "min_budget above the base budget");

	a = cfg->allocator ? cfg->allocator : &rcl__std_allocator;
	p = rcl__alloc(a, sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->alloc = *a;
	p->clock = cfg->clock ? cfg->clock : rcl_clock_monotonic();
	p->d = cfg->domain;
	p->flags = cfg->flags;
	p->bpu = cfg->bytes_per_unit ? cfg->bytes_per_unit : 1;
	p->window = cfg->window_ns ? cfg->window_ns :
				     RCL_PRESSURE_WINDOW_DEFAULT_NS;
	p->backoff_max = cfg->backoff_max_ns ?
				 cfg->backoff_max_ns :
				 RCL_PRESSURE_BACKOFF_MAX_DEFAULT_NS;
	p->backoff_max = RCL_MAX(p->backoff_max, p->window);
	p->interval = cfg->interval_ns ? cfg->interval_ns :
					 RCL_PRESSURE_INTERVAL_DEFAULT_NS;
	p->interval = RCL_MAX(p->interval, 1000000ull);
	p->grow_pct = cfg->grow_pct ? cfg->grow_pct :
				      RCL_PRESSURE_GROW_PCT_DEFAULT;
	p->grow_interval = cfg->grow_interval_ns ?
				   cfg->grow_interval_ns :
				   RCL_PRESSURE_GROW_INTERVAL_DEFAULT_NS;
	p->cgroup_pct = cfg->cgroup_pct ? cfg->cgroup_pct :
					  RCL_PRESSURE_CGROUP_PCT_DEFAULT;
	p->trim = cfg->trim ? cfg->trim : default_trim;
	p->trim_priv = cfg->trim ? cfg->trim_priv : NULL;
	p->trim_min = cfg->trim_min_bytes ? cfg->trim_min_bytes :
					    RCL_PRESSURE_TRIM_MIN_DEFAULT_BYTES;
	p->trim_interval = cfg->trim_interval_ns ?
				   cfg->trim_interval_ns :
				   RCL_PRESSURE_TRIM_INTERVAL_DEFAULT_NS;
	p->base = base;
	/*
	 * No base (UINT64_MAX: a child domain with no budget of its own): a
	 * share of it would be 2^58, above any usage, and no action would
	 * move the budget.  No default floor then.
	 */
	if (cfg->min_budget)
		p->floor = cfg->min_budget;
	else
		p->floor = base == UINT64_MAX ? 1 : RCL_MAX(base / 64, 1);
	p->container = UINT64_MAX;
	p->pressure = UINT64_MAX;
	p->applied = rcl_domain_budget(p->d);
	p->cg = -1;
	p->pid = getpid();
	for (i = 0; i < RCL_PRESSURE_MAX_SOURCES; i++)
		clear_source(&p->src[i]);
	p->tfd = p->stopfd = -1;

	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		goto fail_errno;
	p->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (p->tfd < 0)
		goto fail_errno;
	p->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->stopfd < 0)
		goto fail_errno;
	err = epoll_add(p, p->tfd, EPOLLIN, TAG_TIMER);
	if (!err)
		err = epoll_add(p, p->stopfd, EPOLLIN, TAG_STOP);
	if (err)
		goto fail;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->act_mutex, NULL);
	pthread_cond_init(&p->act_cond, NULL);
	pthread_mutex_init(&p->join, NULL);
	p->next_tick = sat_add(now_ns(p), p->interval);
	p->last_grow = now_ns(p);
	arm_timer_locked(p, now_ns(p));
	atomic_fetch_add(&p->d->nr_monitors, 1);
	*out = p;
	return 0;

fail_errno:
	err = -errno;
fail:
	close_fd(&p->stopfd);
	close_fd(&p->tfd);
	close_fd(&p->epfd);
	p->alloc.free(p->alloc.ctx, p);
	return err;
}

RCL_API int rcl_pressure_free(struct rcl_pressure *p)
{
	/* Not a cancellation point (lib/internal.h): locks, I/O, callbacks. */
	RCL__CANCEL_OFF_SCOPE();
	struct rcl_allocator a;
	unsigned i, j;

	if (!p)
		return 0;
	if (tls_thread_of == p || acting_here(p))
		return RCL__REFUSE(-EDEADLK, "called from the monitor's own thread, its trim hook, or a callback of its reclaim");
	/*
	 * A child after fork() has no thread to join: the parent's.  From a
	 * callback the stop may be refused (-EBUSY): nothing is freed then.
	 */
	if (p->pid == getpid()) {
		int err = rcl_pressure_stop(p);

		if (err)
			return err;
	}
	for (i = 0; i < p->nr; i++) {
		struct psrc *s = &p->src[i];

		for (j = 0; j < 3; j++)
			close_fd(&s->fds[j]);
		close_fd(&s->file);
		close_fd(&s->dir);
	}
	close_fd(&p->stopfd);
	close_fd(&p->tfd);
	close_fd(&p->epfd);
	atomic_fetch_sub(&p->d->nr_monitors, 1);
	pthread_mutex_destroy(&p->lock);
	/*
	 * In a child after fork(), the condition may still count a parent
	 * thread that waited on it, and glibc's destroy would wait for that
	 * thread for ever: the child leaves it as it is (its memory is freed
	 * with the monitor, never used again).
	 */
	if (p->pid == getpid())
		pthread_cond_destroy(&p->act_cond);
	pthread_mutex_destroy(&p->act_mutex);
	pthread_mutex_destroy(&p->join);
	a = p->alloc;
	a.free(a.ctx, p);
	return 0;
}

/* A free source slot (p->lock held), initialised; NULL if none. */
static struct psrc *new_source_locked(struct rcl_pressure *p, int *idx)
{
	struct psrc *s;

	if (p->nr >= RCL_PRESSURE_MAX_SOURCES)
		return NULL;
	*idx = (int)p->nr;
	s = &p->src[p->nr];
	/* Whatever an add that failed left in it is gone. */
	clear_source(s);
	s->wait = p->window;
	return s;
}

/* Publish source @idx (p->lock held). */
static int commit_source_locked(struct rcl_pressure *p, int idx,
				const char *path)
{
	struct psrc *s = &p->src[idx];

	copy_str(s->path, sizeof(s->path), path ? path : "");
	s->used = true;
	p->nr++;
	/* A trigger source's baseline is due to move one window from now. */
	arm_timer_locked(p, now_ns(p));
	return idx;
}

static void undo_source(struct rcl_pressure *p, struct psrc *s)
{
	drop_slots(p, s);
	if (s->file >= 0)
		epoll_ctl(p->epfd, EPOLL_CTL_DEL, s->file, NULL);
	close_fd(&s->file);
	close_fd(&s->dir);
	clear_source(s);
}

/*
 * Open @path read-write for a PSI trigger and write the @len bytes of
 * @trigger: the descriptor, or a negative errno (the kernel refuses a
 * trigger with EINVAL, EPERM, ...; a short write is -EIO).
 */
static int trigger_open(const char *path, const void *trigger, size_t len)
{
	int fd = open_poll(AT_FDCWD, path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return errno ? -errno : -EINVAL;
	n = write_data(fd, trigger, len);
	if (n == (ssize_t)len)
		return fd;
	err = n < 0 && errno ? -errno : -EIO;
	close(fd);
	return err;
}

/* Try PSI triggers on @path for source @idx: 0 or a positive errno. */
static int psi_triggers(struct rcl_pressure *p, struct psrc *s, int idx,
			const char *path, int file)
{
	unsigned long magic = fs_magic(file);
	unsigned i;
	int err;

	if (magic != PROC_MAGIC && magic != CGROUP2_MAGIC)
		return ENOTSUP;
	for (i = 0; i < 3; i++) {
		char t[64];
		int fd, len;

		len = snprintf(t, sizeof(t), "%s %llu %llu",
			       psi_levels[i].full ? "full" : "some",
			       (unsigned long long)psi_levels[i].stall_us,
			       (unsigned long long)PSI_WINDOW_US);
		/* The kernel takes the string with its NUL. */
		fd = trigger_open(path, t, (size_t)len + 1);
		if (fd < 0) {
			err = -fd;
			goto fail;
		}
		s->fds[i] = fd;
		err = -epoll_add(p, fd,
				 EPOLLPRI | rcl__pressure_seam.trigger_epoll_flags,
				 (uint64_t)idx << 2 | i);
		if (err)
			goto fail;
	}
	return 0;
fail:
	drop_slots(p, s);
	return err;
}

RCL_API int rcl_pressure_add_psi(struct rcl_pressure *p, const char *path)
{
	/* Not a cancellation point (lib/internal.h): locks, I/O, callbacks. */
	RCL__CANCEL_OFF_SCOPE();
	struct rcl__psi psi;
	struct psrc *s;
	ssize_t n;
	int idx, fd, err;

	if (!p)
		return RCL__REFUSE(-EINVAL, "a NULL monitor");
	if (acting_here(p))
		return RCL__REFUSE(-EDEADLK, "called from the monitor's own action (its trim hook or a callback of its reclaim), which holds the lock this call takes");
	if (!path)
		path = "/proc/pressure/memory";
	/* Non-blocking: a FIFO must not hold the call until a writer comes. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!act_lock(p)) {
		close(fd);
		return RCL__REFUSE(-EBUSY, ACT_BUSY);
	}
	pthread_mutex_lock(&p->lock);
	n = read_fd(p, fd);
	if (n < 0) {
		err = (int)n;
		goto out;
	}
	if (rcl__psi_parse(p->buf, (size_t)n, &psi)) {
		err = RCL__REFUSE(-EBADMSG, "the file is not in PSI's format");
		goto out;
	}
	s = new_source_locked(p, &idx);
	if (!s) {
		err = RCL__REFUSE(-ENOSPC, "RCL_PRESSURE_MAX_SOURCES sources already");
		goto out;
	}
	s->fallback_errno = psi_triggers(p, s, idx, path, fd);
	s->mode = s->fallback_errno ? RCL_PSOURCE_PSI_POLL :
				      RCL_PSOURCE_PSI_TRIGGER;
	/* Polled, or the triggers' totals checked in fd mode. */
	s->file = fd;
	fd = -1;
	psi_rebase(s, &psi, now_ns(p));
	err = commit_source_locked(p, idx, path);
out:
	pthread_mutex_unlock(&p->lock);
	act_unlock(p);
	if (fd >= 0)
		close(fd);
	return err;
}

/*
 * The process's own memory cgroup: @dir and @version, and for v2 the
 * cgroup2 mount point in @mnt2 (of PATH_MAX bytes); or a negative errno.
 */
static int find_own_cgroup(struct rcl_pressure *p, char *dir, size_t size,
			   unsigned *version, char *mnt2)
{
	char v2[PATH_MAX], v1[PATH_MAX], mnt[PATH_MAX], root[PATH_MAX];
	char *buf;
	size_t n;
	int mask, err;

	/* Both may be longer than READ_MAX: read into a buffer that grows. */
	err = read_proc(p, "/proc/self/cgroup", &buf, &n);
	if (err)
		return err;
	mask = rcl__proc_cgroup_parse(buf, n, v2, sizeof(v2), v1, sizeof(v1));
	p->alloc.free(p->alloc.ctx, buf);
	if (mask < 0)
		return mask;
	err = read_proc(p, "/proc/self/mountinfo", &buf, &n);
	if (err)
		return err;
	if (mask & 1 &&
	    !rcl__mountinfo_find(buf, n, 2, mnt, sizeof(mnt), root,
				 sizeof(root)) &&
	    !rcl__cgroup_dir(mnt, root, v2, dir, size)) {
		/* v2 counts here only with the memory controller enabled. */
		char f[PATH_MAX + 32];

		snprintf(f, sizeof(f), "%s/memory.current", dir);
		if (!access(f, R_OK)) {
			*version = 2;
			memcpy(mnt2, mnt, strlen(mnt) + 1);
			err = 0;
			goto out;
		}
	}
	if (mask & 2) {
		err = rcl__mountinfo_find(buf, n, 1, mnt, sizeof(mnt), root,
					  sizeof(root));
		if (!err)
			err = rcl__cgroup_dir(mnt, root, v1, dir, size);
		if (!err)
			*version = 1;
		goto out;
	}
	/* The public function's name: this helper's means nothing to a user. */
	err = rcl__refuse("rcl_pressure_add_cgroup", -ENOENT,
			  "no memory controller for this process (neither cgroup v2 with memory nor v1's memory hierarchy)");
out:
	p->alloc.free(p->alloc.ctx, buf);
	return err;
}

/*
 * The first cgroup2 mount point of /proc/self/mountinfo into @mnt (of
 * PATH_MAX bytes), for a directory the application named; "" when there
 * is none or it cannot be read: its ancestors are then not looked at.
 */
static void find_cgroup2_mount(struct rcl_pressure *p, char *mnt)
{
	char root[PATH_MAX];
	char *buf;
	size_t n;

	mnt[0] = '\0';
	if (read_proc(p, "/proc/self/mountinfo", &buf, &n))
		return;
	if (rcl__mountinfo_find(buf, n, 2, mnt, PATH_MAX, root, sizeof(root)))
		mnt[0] = '\0';
	p->alloc.free(p->alloc.ctx, buf);
}

/* Most ancestors of a v2 cgroup whose limits are read. */
#define CG_DEPTH_MAX 64

/*
 * How many ancestors of the v2 cgroup @dfd count: those up to the root
 * of the cgroup2 mount at @mnt, that root included.  Walks ".." from
 * @dfd (directories only, no file read) until it meets the root (the
 * same device and inode).  0 when @dfd is the root, when it is not below
 * it (on another filesystem, or the walk reaches "/" or leaves the
 * filesystem first), or when it is more than CG_DEPTH_MAX levels below
 * it: nothing above @dfd is read then, and never anything above the root.
 */
static unsigned cg_depth(int dfd, const char *mnt)
{
	struct stat top, st, up_st;
	unsigned n = 0;
	int cur = dfd, up;

	if (!mnt[0] || stat(mnt, &top) || fstat(dfd, &st) ||
	    st.st_dev != top.st_dev)
		return 0;
	while (st.st_ino != top.st_ino) {
		if (n == CG_DEPTH_MAX) {
			n = 0;
			break;
		}
		up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cur != dfd)
			close(cur);
		cur = up;
		/* "/" is its own parent. */
		if (cur < 0 || fstat(cur, &up_st) ||
		    up_st.st_dev != top.st_dev ||
		    up_st.st_ino == st.st_ino) {
			n = 0;
			break;
		}
		st = up_st;
		n++;
	}
	if (cur >= 0 && cur != dfd)
		close(cur);
	return n;
}

/* v1 memory.pressure_level notifications: 0 or a positive errno. */
static int v1_events(struct rcl_pressure *p, struct psrc *s, int idx)
{
	static const char *const names[3] = { "low", "medium", "critical" };
	int ctl, i, e;

	if (fs_magic(s->dir) != CGROUP1_MAGIC)
		return ENOTSUP;
	s->file = openat(s->dir, "memory.pressure_level",
			 O_RDONLY | O_CLOEXEC);
	if (s->file < 0)
		return errno;
	ctl = openat(s->dir, "cgroup.event_control", O_WRONLY | O_CLOEXEC);
	if (ctl < 0) {
		e = errno;
		goto fail;
	}
	for (i = 0; i < 3; i++) {
		char line[64];
		int len;

		s->fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (s->fds[i] < 0) {
			e = errno;
			goto fail;
		}
		len = snprintf(line, sizeof(line), "%d %d %s", s->fds[i],
			       s->file, names[i]);
		if (write(ctl, line, (size_t)len) < 0) {
			e = errno;
			goto fail;
		}
		e = -epoll_add(p, s->fds[i], EPOLLIN, (uint64_t)idx << 2 | i);
		if (e)
			goto fail;
	}
	close(ctl);
	return 0;
fail:
	if (ctl >= 0)
		close(ctl);
	drop_slots(p, s);
	close_fd(&s->file);
	return e ? e : EINVAL;
}

RCL_API int rcl_pressure_add_cgroup(struct rcl_pressure *p, const char *dir,
				    unsigned version)
{
	/* Not a cancellation point (lib/internal.h): locks, I/O, callbacks. */
	RCL__CANCEL_OFF_SCOPE();
	char own[PATH_MAX], mnt2[PATH_MAX] = "";
	bool named = dir != NULL;
	uint64_t u, ws, lim;
	struct psrc *s;
	int idx, err, dfd;

	if (!p)
		return RCL__REFUSE(-EINVAL, "a NULL monitor");
	if (acting_here(p))
		return RCL__REFUSE(-EDEADLK, "called from the monitor's own action (its trim hook or a callback of its reclaim), which holds the lock this call takes");
	if (version > 2)
		return RCL__REFUSE(-EINVAL, "a cgroup version other than 0, 1, 2");
	if (!act_lock(p))
		return RCL__REFUSE(-EBUSY, ACT_BUSY);
	pthread_mutex_lock(&p->lock);
	if (p->cg >= 0) {
		err = RCL__REFUSE(-EEXIST, "the monitor has a cgroup source");
		goto out;
	}
	if (!dir) {
		err = find_own_cgroup(p, own, sizeof(own), &version, mnt2);
		if (err)
			goto out;
		dir = own;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		err = -errno;
		goto out;
	}
	if (!version) {
		if (!faccessat(dfd, "memory.current", R_OK, 0))
			version = 2;
		else if (!faccessat(dfd, "memory.usage_in_bytes", R_OK, 0))
			version = 1;
		else {
			close(dfd);
			err = RCL__REFUSE(-ENOENT, "neither cgroup version's memory files in the directory");
			goto out;
		}
	}
	s = new_source_locked(p, &idx);
	if (!s) {
		close(dfd);
		err = RCL__REFUSE(-ENOSPC, "RCL_PRESSURE_MAX_SOURCES sources already");
		goto out;
	}
	s->dir = dfd;
	s->version = version;
	if (version == 2) {
		if (named)
			find_cgroup2_mount(p, mnt2);
		s->depth = cg_depth(dfd, mnt2);
	}
	err = cg_read_locked(p, s, &u, &ws, &lim);
	/* memory.events is read on every tick too: it must parse now. */
	if (!err && version == 2) {
		uint64_t high, max;

		err = cg_events_locked(p, s, &high, &max);
	}
	if (err) {
		if (err == -EBADMSG || err == -ERANGE)
			RCL__REFUSE(err, "a cgroup memory file does not parse");
		undo_source(p, s);
		goto out;
	}
	if (version == 2) {
		s->mode = RCL_PSOURCE_CGROUP_V2;
		if (fs_magic(dfd) == CGROUP2_MAGIC) {
			s->file = open_poll(dfd, "memory.events",
					    O_RDONLY | O_CLOEXEC);
			if (s->file >= 0 &&
			    epoll_add(p, s->file, EPOLLPRI, (uint64_t)idx << 2 | 3))
				close_fd(&s->file);
		}
	} else {
		s->fallback_errno = v1_events(p, s, idx);
		s->mode = s->fallback_errno ? RCL_PSOURCE_CGROUP_V1 :
					      RCL_PSOURCE_CGROUP_V1_EVENTS;
	}
	p->cg = idx;
	/* The first reading is the events' baseline and the working set. */
	cg_poll_locked(p, s);
	if (p->flags & RCL_PRESSURE_FOLLOW_CGROUP)
		p->container = container_raw_locked(p, s);
	err = commit_source_locked(p, idx, dir);
out:
	pthread_mutex_unlock(&p->lock);
	if (err >= 0 && (p->flags & RCL_PRESSURE_FOLLOW_CGROUP))
		count_freed(p, apply_budget(p, false), now_ns(p));
	act_unlock(p);
	return err;
}

/*
 * Open what systemd's @watch names, before the monitor's locks are taken
 * (a connect() waits while the socket's backlog is full, and every other
 * call on the monitor would wait behind it): the descriptor and *@mode
 * (RCL_PSOURCE_SYSTEMD_SOCKET, _FIFO, or _PSI for a regular file), or a
 * negative errno.
 */
static int sd_open(const char *watch, enum rcl_psource_mode *mode)
{
	struct stat st;
	int fd, err;

	if (stat(watch, &st))
		return -errno;
	if (S_ISSOCK(st.st_mode)) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		if (strlen(watch) >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		memcpy(sa.sun_path, watch, strlen(watch));
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		/*
		 * Connected (blocking, as a client waits for the backlog),
		 * then non-blocking: drain() reads until EAGAIN, and a read
		 * that waits would hang dispatch and the library thread.
		 */
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
			err = -errno;
			close(fd);
			return err;
		}
		*mode = RCL_PSOURCE_SYSTEMD_SOCKET;
		return fd;
	}
	if (S_ISFIFO(st.st_mode)) {
		/* Read-write: the FIFO never reports a hang-up to us. */
		fd = open(watch, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		*mode = RCL_PSOURCE_SYSTEMD_FIFO;
		return fd < 0 ? -errno : fd;
	}
	if (S_ISREG(st.st_mode)) {
		/*
		 * Read-only: the totals (polled, or checked in fd mode) and
		 * the filesystem.  The trigger has a descriptor of its own,
		 * read-write, only if there is one to write: a file only
		 * readable is polled, as rcl_pressure_add_psi() polls it.
		 */
		fd = open(watch, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		*mode = RCL_PSOURCE_SYSTEMD_PSI;
		return fd < 0 ? -errno : fd;
	}
	/* The public function's name: this helper's means nothing to a user. */
	return rcl__refuse("rcl_pressure_add_systemd", -EBADF,
			   "the watch path is no regular file, FIFO or socket");
}

RCL_API int rcl_pressure_add_systemd(struct rcl_pressure *p, const char *watch,
				     const char *write_b64)
{
	/* Not a cancellation point (lib/internal.h): locks, I/O, callbacks. */
	RCL__CANCEL_OFF_SCOPE();
	uint8_t data[WRITE_MAX + 1];
	enum rcl_psource_mode mode = RCL_PSOURCE_OFF;
	ssize_t dlen = 0;
	struct psrc *s = NULL;
	int idx, err = 0, fd = -1;

	if (!p)
		return RCL__REFUSE(-EINVAL, "a NULL monitor");
	if (acting_here(p))
		return RCL__REFUSE(-EDEADLK, "called from the monitor's own action (its trim hook or a callback of its reclaim), which holds the lock this call takes");
	if (!watch) {
		watch = getenv("MEMORY_PRESSURE_WATCH");
		if (!watch)
			return RCL__REFUSE(-ENOENT, "$MEMORY_PRESSURE_WATCH is not set");
		if (!write_b64)
			write_b64 = getenv("MEMORY_PRESSURE_WRITE");
	}
	if (watch[0] != '/')
		return RCL__REFUSE(-EINVAL, "the watch path is not absolute");
	if (write_b64 && *write_b64) {
		dlen = rcl__base64_decode(write_b64, strlen(write_b64), data,
					  WRITE_MAX);
		if (dlen < 0)
			return RCL__REFUSE(-EINVAL, "the write data is not base64 or decodes to more than 1 KiB");
	}
	/* Opened (a socket connected) with no lock held: sd_open(). */
	if (strcmp(watch, "/dev/null")) {
		fd = sd_open(watch, &mode);
		if (fd < 0)
			return fd;
	}

	if (!act_lock(p)) {
		if (fd >= 0)
			close(fd);
		return RCL__REFUSE(-EBUSY, ACT_BUSY);
	}
	pthread_mutex_lock(&p->lock);
	s = new_source_locked(p, &idx);
	if (!s) {
		err = RCL__REFUSE(-ENOSPC, "RCL_PRESSURE_MAX_SOURCES sources already");
		goto out;
	}
	s->mode = mode;
	if (mode == RCL_PSOURCE_OFF)
		goto commit;
	if (mode == RCL_PSOURCE_SYSTEMD_PSI) {
		struct rcl__psi psi;
		unsigned long magic;
		size_t plen;
		ssize_t n;
		int tfd;

		n = read_fd(p, fd);
		if (n < 0 || rcl__psi_parse(p->buf, (size_t)n, &psi)) {
			err = n < 0 ? (int)n :
				      RCL__REFUSE(-EBADMSG, "the watched file is not in PSI's format");
			goto out;
		}
		/*
		 * The trigger's own threshold, for polling and fd mode, as
		 * the kernel will read it: /proc/pressure's psi_write() copies
		 * at most 32 bytes and puts a NUL on the last one copied (a
		 * value without its NUL loses its last digit there); a
		 * cgroup's memory.pressure takes the whole write.
		 */
		magic = fs_magic(fd);
		plen = (size_t)dlen;
		if (magic == PROC_MAGIC && plen)
			plen = RCL_MIN(plen, (size_t)PROC_PSI_WRITE_MAX) - 1;
		if (!dlen || rcl__psi_trigger_parse((const char *)data, plen,
						    &s->sd_full,
						    &s->sd_stall_us,
						    &s->sd_window_us)) {
			/* systemd's documented default: 100 ms per 1 s. */
			s->sd_full = false;
			s->sd_stall_us = 100000;
			s->sd_window_us = 1000000;
		}
		if (magic != PROC_MAGIC && magic != CGROUP2_MAGIC) {
			s->fallback_errno = ENOTSUP;
		} else if (!dlen) {
			/*
			 * Nothing to write: a PSI descriptor without a
			 * trigger polls EPOLLERR | EPOLLPRI for ever.  Polled
			 * against systemd's default threshold instead.
			 */
			s->fallback_errno = ENODATA;
		} else {
			tfd = trigger_open(watch, data, (size_t)dlen);
			if (tfd < 0) {
				s->fallback_errno = -tfd;
			} else {
				err = epoll_add(p, tfd,
						EPOLLPRI | rcl__pressure_seam.trigger_epoll_flags,
						(uint64_t)idx << 2);
				if (err) {
					close(tfd);
					s->fallback_errno = -err;
					err = 0;
				} else {
					s->fds[0] = tfd;
				}
			}
		}
		s->mode = s->fallback_errno ? RCL_PSOURCE_SYSTEMD_PSI_POLL :
					      RCL_PSOURCE_SYSTEMD_PSI;
		s->file = fd;
		fd = -1;
		psi_rebase(s, &psi, now_ns(p));
		goto commit;
	}
	/*
	 * FIFO or socket: write the data, then wait for POLLIN.  A short
	 * write sets no errno (a stale one, or 0, would have made this call
	 * return an index for a source it never added): -EIO.
	 */
	if (dlen) {
		ssize_t n = write_data(fd, data, (size_t)dlen);

		if (n != dlen) {
			err = n < 0 ? -errno :
				      RCL__REFUSE(-EIO, "a short write of the data to the FIFO or socket");
			goto out;
		}
	}
	if (s->mode == RCL_PSOURCE_SYSTEMD_FIFO)
		drain(fd, NULL);	/* our own bytes are no event */
	err = epoll_add(p, fd, EPOLLIN, (uint64_t)idx << 2);
	if (err)
		goto out;
	s->fds[0] = fd;
	fd = -1;
commit:
	err = commit_source_locked(p, idx, watch);
out:
	if (err < 0 && s)
		undo_source(p, s);
	pthread_mutex_unlock(&p->lock);
	act_unlock(p);
	if (fd >= 0)
		close(fd);
	return err;
}

RCL_API int rcl_pressure_add_manual(struct rcl_pressure *p)
{
	struct psrc *s;
	int idx;

	if (!p)
		return RCL__REFUSE(-EINVAL, "a NULL monitor");
	pthread_mutex_lock(&p->lock);
	s = new_source_locked(p, &idx);
	if (!s) {
		pthread_mutex_unlock(&p->lock);
		return RCL__REFUSE(-ENOSPC, "RCL_PRESSURE_MAX_SOURCES sources already");
	}
	s->mode = RCL_PSOURCE_MANUAL;
	idx = commit_source_locked(p, idx, NULL);
	pthread_mutex_unlock(&p->lock);
	return idx;
}

RCL_API int rcl_pressure_notify(struct rcl_pressure *p, int source,
				enum rcl_pressure_level level)
{
	/* Not a cancellation point (lib/internal.h): locks, I/O, callbacks. */
	RCL__CANCEL_OFF_SCOPE();
	struct psrc *s;
	bool now_act;
	uint64_t now;

	if (!p || (unsigned)level > RCL_PRESSURE_CRITICAL)
		return RCL__REFUSE(-EINVAL, "a NULL monitor or a level out of range");
	if (acting_here(p) || in_tree_pass(p->d))
		return RCL__REFUSE(-EDEADLK, "called from a callback of a reclaim pass of the domain's tree");
	if (!act_lock(p))
		return RCL__REFUSE(-EBUSY, ACT_BUSY);
	pthread_mutex_lock(&p->lock);
	if (source < 0 || source >= (int)p->nr ||
	    p->src[source].mode != RCL_PSOURCE_MANUAL) {
		pthread_mutex_unlock(&p->lock);
		act_unlock(p);
		return RCL__REFUSE(-EINVAL, "the index is not a manual source");
	}
	s = &p->src[source];
	now = now_ns(p);
	now_act = event_locked(p, s, level, now, 0);
	level = s->pending;
	pthread_mutex_unlock(&p->lock);
	if (now_act)
		act(p, s, level, now);
	pthread_mutex_lock(&p->lock);
	arm_timer_locked(p, now_ns(p));
	pthread_mutex_unlock(&p->lock);
	act_unlock(p);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Levels of other systems                                                    */
/* ------------------------------------------------------------------------- */

RCL_API enum rcl_pressure_level rcl_pressure_level_from_glib(int glib_level)
{
	if (glib_level >= 255)
		return RCL_PRESSURE_CRITICAL;
	if (glib_level >= 100)
		return RCL_PRESSURE_SEVERE;
	if (glib_level >= 1)
		return RCL_PRESSURE_MODERATE;
	return RCL_PRESSURE_NONE;
}

RCL_API enum rcl_pressure_level rcl_pressure_level_from_android(int trim_level)
{
	if (trim_level >= 80)
		return RCL_PRESSURE_CRITICAL;
	if (trim_level >= 60)
		return RCL_PRESSURE_SEVERE;
	if (trim_level >= 20)
		return RCL_PRESSURE_MODERATE;
	if (trim_level >= 15)
		return RCL_PRESSURE_CRITICAL;
	if (trim_level >= 10)
		return RCL_PRESSURE_SEVERE;
	if (trim_level >= 5)
		return RCL_PRESSURE_MODERATE;
	return RCL_PRESSURE_NONE;
}

RCL_API const char *rcl_pressure_level_name(enum rcl_pressure_level level)
{
	static const char *const names[] = { "none", "moderate", "severe",
					     "critical" };

	if ((unsigned)level > RCL_PRESSURE_CRITICAL)
		return "unknown";
	return names[level];
}

RCL_API const char *rcl_pressure_source_mode_name(enum rcl_psource_mode mode)
{
	static const char *const names[] = {
		[RCL_PSOURCE_MANUAL] = "manual",
		[RCL_PSOURCE_PSI_TRIGGER] = "psi-trigger",
		[RCL_PSOURCE_PSI_POLL] = "psi-poll",
		[RCL_PSOURCE_CGROUP_V2] = "cgroup-v2",
		[RCL_PSOURCE_CGROUP_V1] = "cgroup-v1",
		[RCL_PSOURCE_CGROUP_V1_EVENTS] = "cgroup-v1-events",
		[RCL_PSOURCE_SYSTEMD_PSI] = "systemd-psi",
		[RCL_PSOURCE_SYSTEMD_PSI_POLL] = "systemd-psi-poll",
		[RCL_PSOURCE_SYSTEMD_FIFO] = "systemd-fifo",
		[RCL_PSOURCE_SYSTEMD_SOCKET] = "systemd-socket",
		[RCL_PSOURCE_OFF] = "off",
	};

	if ((unsigned)mode > RCL_PSOURCE_OFF)
		return "unknown";
	return names[mode];
}

/* ------------------------------------------------------------------------- */
/* Running                                                                    */
/* ------------------------------------------------------------------------- */

static void *monitor_thread(void *arg)
{
	struct rcl_pressure *p = arg;
	struct epoll_event ev[NR_EVENTS];
	int n;

	tls_thread_of = p;
	while (!atomic_load(&p->stop)) {
		uint64_t gen;

		pthread_mutex_lock(&p->lock);
		gen = p->dispatches;
		pthread_mutex_unlock(&p->lock);
		/*
		 * The timerfd wakes it for deadlines; 1 s bounds any miss.
		 * One wait, whose events dispatch handles: a PSI trigger's
		 * event is cleared by the poll that reports it.
		 */
		n = epoll_wait(p->epfd, ev, NR_EVENTS, 1000);
		if (atomic_load(&p->stop))
			break;
		dispatch_events(p, ev, n > 0 ? n : 0, gen);
	}
	return NULL;
}

RCL_API int rcl_pressure_start(struct rcl_pressure *p)
{
	int err;

	if (!p)
		return RCL__REFUSE(-EINVAL, "a NULL monitor");
	pthread_mutex_lock(&p->lock);
	if (p->running) {
		pthread_mutex_unlock(&p->lock);
		return RCL__REFUSE(-EBUSY, "its thread runs already");
	}
	atomic_store(&p->stop, false);
	err = rcl__thread_create(&p->thread, monitor_thread, p);
	if (!err)
		p->running = true;
	pthread_mutex_unlock(&p->lock);
	return err ? -EAGAIN : 0;
}

RCL_API int rcl_pressure_stop(struct rcl_pressure *p)
{
	/* Not a cancellation point (lib/internal.h): locks, I/O, callbacks. */
	RCL__CANCEL_OFF_SCOPE();
	uint64_t one = 1, x;
	bool act = false;
	unsigned i;
	pthread_t t;

	if (!p)
		return RCL__REFUSE(-EINVAL, "a NULL monitor");
	if (tls_thread_of == p || acting_here(p))
		return RCL__REFUSE(-EDEADLK, "called from the monitor's own thread or a callback of its action");
	/*
	 * From a callback, the join must not wait for an action: its
	 * callbacks may wait for what this thread holds (two monitors'
	 * threads, each in an action, stopping each other waited for ever).
	 * So the stop is set under p->act, taken with a try (-EBUSY, nothing
	 * done, if the thread or another caller acts).  The thread does not
	 * act once it sees the stop (dispatch_events()), and its wait for
	 * p->act ends when the stop is set (act_take()), even while another
	 * caller's action holds p->act and waits for this thread; so the join
	 * that follows waits only for the thread's epoll_wait to return.  The
	 * join lock is tried too: a stop that holds it may be waiting for a
	 * thread that this one holds back.
	 */
	if (in_callback()) {
		if (!act_take(p, false))
			return RCL__REFUSE(-EBUSY, ACT_BUSY);
		if (pthread_mutex_trylock(&p->join)) {
			act_unlock(p);
			return RCL__REFUSE(-EBUSY, "called from a callback while another thread stops the monitor");
		}
		act = true;
	} else {
		/*
		 * Stops one at a time: the thread is joined with p->lock
		 * dropped, and a second stop meanwhile would see it running
		 * and join it again (undefined; with glibc it can wait for
		 * ever).  It waits here instead, then finds the thread gone.
		 */
		pthread_mutex_lock(&p->join);
	}
	pthread_mutex_lock(&p->lock);
	if (!p->running) {
		pthread_mutex_unlock(&p->lock);
		pthread_mutex_unlock(&p->join);
		if (act)
			act_unlock(p);
		return 0;
	}
	t = p->thread;
	atomic_store(&p->stop, true);
	if (write(p->stopfd, &one, sizeof(one)) < 0) {
		/* An eventfd counter cannot overflow from one write. */
	}
	pthread_mutex_unlock(&p->lock);
	if (act)
		act_unlock(p);
	else
		act_wake_stopped(p);
	pthread_join(t, NULL);
	pthread_mutex_lock(&p->lock);
	p->running = false;
	if (read(p->stopfd, &x, sizeof(x)) < 0) {
		/* EAGAIN: nothing left to read */
	}
	/*
	 * fd mode from here: the thread never moved the trigger sources'
	 * baselines (their events came from epoll), so each takes a fresh
	 * one now, and the timer keeps it no older than a window.
	 */
	for (i = 0; i < p->nr; i++) {
		struct psrc *s = &p->src[i];
		struct rcl__psi cur;
		uint64_t ds, df, dt;

		if (!s->used || !is_trigger(s) || s->file < 0)
			continue;
		s->have_prev = false;
		(void)psi_read_locked(p, s, now_ns(p), &cur, &ds, &df, &dt);
	}
	arm_timer_locked(p, now_ns(p));
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&p->join);
	return 0;
}

RCL_API int rcl_pressure_fd(struct rcl_pressure *p)
{
	int fd;

	if (!p)
		return RCL__REFUSE(-EINVAL, "a NULL monitor");
	pthread_mutex_lock(&p->lock);
	fd = p->running ? RCL__REFUSE(-EBUSY, "the library thread waits on it") :
			  p->epfd;
	pthread_mutex_unlock(&p->lock);
	return fd;
}

RCL_API int rcl_pressure_dispatch(struct rcl_pressure *p)
{
	/* Not a cancellation point (lib/internal.h): locks, I/O, callbacks. */
	RCL__CANCEL_OFF_SCOPE();
	if (!p)
		return RCL__REFUSE(-EINVAL, "a NULL monitor");
	if (acting_here(p) || in_tree_pass(p->d))
		return RCL__REFUSE(-EDEADLK, "called from a callback of a reclaim pass of the domain's tree");
	return dispatch_events(p, NULL, 0, 0);
}

RCL_API uint64_t rcl_pressure_next_deadline(struct rcl_pressure *p)
{
	uint64_t d;

	if (!p)
		return RCL_CLOCK_FOREVER;
	pthread_mutex_lock(&p->lock);
	d = deadline_locked(p);
	pthread_mutex_unlock(&p->lock);
	return d;
}

/* ------------------------------------------------------------------------- */
/* Reporting                                                                  */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_pressure_stats(struct rcl_pressure *p,
			       struct rcl_pressure_stats *out)
{
	unsigned i;

	if (!p || !out)
		return RCL__REFUSE(-EINVAL, "a NULL monitor or output");
	pthread_mutex_lock(&p->lock);
	memset(out, 0, sizeof(*out));
	out->nr_sources = p->nr;
	out->actions = p->actions;
	out->empty_actions = p->empty_actions;
	out->freed_bytes = p->freed_bytes;
	out->trims = p->trims;
	out->budget = p->applied;
	out->base_budget = p->base;
	out->container_budget = p->container;
	out->pressure_budget = p->pressure;
	for (i = 0; i < p->nr; i++)
		if (p->src[i].used)
			out->level = max_level(out->level, p->src[i].level);
	out->dispatches = p->dispatches;
	out->read_errors = p->read_errors;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

RCL_API int rcl_pressure_source_info(struct rcl_pressure *p, int source,
				     struct rcl_pressure_source_info *out)
{
	struct psrc *s;

	if (!p || !out)
		return RCL__REFUSE(-EINVAL, "a NULL monitor or output");
	pthread_mutex_lock(&p->lock);
	if (source < 0 || source >= (int)p->nr || !p->src[source].used) {
		pthread_mutex_unlock(&p->lock);
		return RCL__REFUSE(-ENOENT, "no source at that index");
	}
	s = &p->src[source];
	memset(out, 0, sizeof(*out));
	out->mode = s->mode;
	out->level = s->level;
	out->events = s->events;
	out->actions = s->actions;
	out->merged = s->merged;
	out->empty_actions = s->empty_actions;
	out->wait_ns = s->wait;
	out->fallback_errno = s->fallback_errno;
	copy_str(out->path, sizeof(out->path), s->path);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

RCL_API int rcl_pressure_memory(struct rcl_pressure *p,
				struct rcl_memory_sample *out)
{
	/* Not a cancellation point (lib/internal.h): locks, I/O, callbacks. */
	RCL__CANCEL_OFF_SCOPE();
	uint64_t pages, u, ws, lim, usage, budget;
	ssize_t n;
	int fd;

	if (!p || !out)
		return RCL__REFUSE(-EINVAL, "a NULL monitor or output");
	memset(out, 0, sizeof(*out));
	usage = rcl_domain_usage(p->d);
	budget = rcl_domain_budget(p->d);
	out->charged_bytes = usage > UINT64_MAX / p->bpu ? UINT64_MAX :
							  usage * p->bpu;
	out->budget_bytes = budget > UINT64_MAX / p->bpu ? UINT64_MAX :
							  budget * p->bpu;
	pthread_mutex_lock(&p->lock);
	out->time_ns = now_ns(p);
	fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -errno : read_fd(p, fd);
	if (fd >= 0)
		close(fd);
	if (n >= 0 && !rcl__statm_parse(p->buf, (size_t)n, &pages))
		out->rss_bytes = pages * (uint64_t)sysconf(_SC_PAGESIZE);
	else
		p->read_errors++;
	if (p->cg >= 0) {
		if (!cg_read_locked(p, &p->src[p->cg], &u, &ws, &lim)) {
			out->cgroup_usage_bytes = u;
			out->cgroup_working_set_bytes = ws;
			out->cgroup_limit_bytes = lim;
		} else {
			p->read_errors++;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return 0;
}
