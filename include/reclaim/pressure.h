/* SPDX-License-Identifier: MIT */
/**
 * DOC: pressure - the domain hears the system: PSI, cgroups, systemd, the
 * application; and reports the memory the system sees
 *
 * A domain bounds what the application charges.  What gets a process killed
 * is what the kernel sees: its cgroup's working set against memory.high or
 * memory.max, pressure stalls, and resident memory that stays up after
 * objects are freed.  A pressure monitor watches one or more *sources*,
 * turns each event into a *level*, and applies the level to one domain by
 * lowering its budget, which reclaims by the domain's own rules (watermarks,
 * proportional passes, shrinkers; domain.h).
 *
 * Levels.  Named so as not to collide with GLib's "low" (its mildest):
 *
 * ==============  ==================================================
 * level           reclaim target of one action
 * ==============  ==================================================
 * MODERATE        the budget steps down to 7/8 of usage (12.5 %)
 * SEVERE          ... to 3/4 of usage (25 %)
 * CRITICAL        ... to 1/2 of usage (50 %)
 * ==============  ==================================================
 *
 * never below the floor (&rcl_pressure_config.min_budget).  An action sets
 * the domain's budget with rcl_domain_set_budget(), so the reclaim that
 * follows is the domain's: the caller of the action reclaims towards the
 * high watermark (or the background reclaimer does, if it runs).
 *
 * The effective budget.  The monitor owns the domain's budget while it is
 * attached: effective = min(base, container, pressure), where base is the
 * domain's budget when the monitor was created (or
 * &rcl_pressure_config.base_budget), container is the budget that follows
 * the cgroup (RCL_PRESSURE_FOLLOW_CGROUP, below) and pressure is what the
 * last actions left.  The floor bounds the pressure budget only: the
 * container budget binds below it (a cgroup limit that leaves the cache
 * less than the floor is followed, down to a budget of 1), so the budget
 * is never above what the cgroup allows.  A step down is applied at once; a step up at most
 * &rcl_pressure_config.grow_pct percent of base per
 * &rcl_pressure_config.grow_interval_ns (1 s), and only once no action came
 * for a whole grow interval (hysteresis: a cache that dropped does not
 * regrow at once and oscillate).  Applying a budget reclaims down to it in
 * the caller (the monitor's thread or dispatch), even when the domain's
 * background reclaimer runs, so that an action knows what it freed.  A budget set by the application with
 * rcl_domain_set_budget() holds until the monitor's next change.
 *
 * Sources and their mapping to levels (each optional; add any number):
 *
 * - PSI (rcl_pressure_add_psi()): /proc/pressure/memory or a cgroup v2
 *   memory.pressure.  Triggers, one per level, each on its own descriptor,
 *   on a 2 s window (unprivileged triggers on kernels since 6.5 need a
 *   window that is a multiple of 2 s): MODERATE "some 140000 2000000" (7 %
 *   of the time some task stalled, Android lmkd's medium), SEVERE
 *   "some 300000 2000000" (15 %, the kernel documentation's example),
 *   CRITICAL "full 1400000 2000000" (70 % of the time every task stalled,
 *   lmkd's critical).  Triggers are tried only on procfs and cgroup2 files;
 *   where they are refused (EINVAL, EPERM, EACCES, ...) or the file is
 *   elsewhere, the source reads the "total=" stall counters on a timer
 *   (&rcl_pressure_config.interval_ns) and applies the same fractions to
 *   the stall time since its last rated reading: mode
 *   RCL_PSOURCE_PSI_POLL.  A tick that a v2 memory.events change brings
 *   forward (below) reads it too; a reading less than half the interval,
 *   or less than 2 s (PSI's window) if that is shorter, after the last
 *   rated one is skipped: not rated, the source's level left as it was,
 *   and the next reading rates the whole time since.  A file
 *   whose reads fail (EOPNOTSUPP: PSI compiled in but disabled) makes the
 *   call fail with that error; the other sources still work.
 * - cgroup (rcl_pressure_add_cgroup()): the process's own cgroup, found from
 *   /proc/self/cgroup and /proc/self/mountinfo (v2 first, then v1's memory
 *   hierarchy), or a directory given.  Read on the timer: v2 memory.current,
 *   memory.high, memory.max, memory.stat (inactive_file), memory.events;
 *   v1 memory.usage_in_bytes, memory.limit_in_bytes, memory.stat
 *   (total_inactive_file, hierarchical_memory_limit); v2 also the
 *   ancestors' memory.high and memory.max.  The working set is usage minus
 *   inactive file pages (page cache the kernel drops at no cost): raw
 *   usage is never taken as pressure.  The limit is the cgroup's effective one, its
 *   ancestors' included (a cgroup without a limit of its own under a
 *   limited parent is limited): v2 the lowest memory.high or memory.max
 *   of the cgroup and of its ancestors up to the root of the cgroup2 mount
 *   (/proc/self/mountinfo's first; for a directory given, only when it is
 *   in that mount), that root included and nothing above it, at most 64
 *   levels up (a cgroup deeper below the root has its own limit only); a
 *   file missing at an ancestor (the root has neither) is no limit there.
 *   v1 the lower of memory.limit_in_bytes and memory.stat's
 *   hierarchical_memory_limit (the kernel's effective limit; a kernel
 *   without that line: the cgroup's own).  Usage and working set stay
 *   the cgroup's own: what its siblings hold under a limiting ancestor is
 *   not counted.  Levels: working set at 90 % of the limit MODERATE, 95 %
 *   SEVERE, 98 % CRITICAL, unless the budget follows the cgroup
 *   (RCL_PRESSURE_FOLLOW_CGROUP: the budget already answers the working
 *   set, re-read every interval, and ratio levels would cut the cache a
 *   second time for the same memory); a rise of memory.events "high"
 *   SEVERE, of "max", "oom" or "oom_kill" CRITICAL.  On v1,
 *   memory.pressure_level notifications (eventfds registered through
 *   cgroup.event_control): low MODERATE, but only with the working set at
 *   90 % of the limit or more (below it, "low" reports the kernel dropping
 *   page cache, at no cost; in a cgroup with no limit, never), medium
 *   SEVERE, critical CRITICAL.  On a real
 *   v2 cgroup
 *   memory.events is also watched for POLLPRI (an event wakes the monitor
 *   before the timer); a read through that descriptor that fails (the
 *   cgroup removed) closes it, counts a read error and sets the source's
 *   fallback_errno, and the timer's reads go on.
 * - systemd (rcl_pressure_add_systemd()): $MEMORY_PRESSURE_WATCH and
 *   $MEMORY_PRESSURE_WRITE as systemd's docs/PRESSURE.md says: a regular
 *   file is a PSI file (write the decoded trigger on a read-write
 *   descriptor, wait for POLLPRI; its totals are read through a read-only
 *   one), a FIFO (write, wait for POLLIN, read and discard) or an AF_UNIX
 *   stream socket (connect, write, POLLIN, read and discard); "/dev/null"
 *   means off.  A PSI file with nothing to write (no trigger: its
 *   descriptor would report EPOLLERR | EPOLLPRI for ever), or whose
 *   trigger is refused (or that opens only for reading), or that is not on
 *   procfs or cgroup2, is polled: its totals on the timer against the
 *   trigger's own threshold, or systemd's default of 100 ms per 1 s
 *   (readings too soon skipped as above; mode
 *   RCL_PSOURCE_SYSTEMD_PSI_POLL, fallback_errno ENODATA, EINVAL,
 *   EACCES, ..., ENOTSUP).  The trigger's threshold is read as the
 *   kernel reads a trigger (sscanf(buf, "some %u %u")): "some" or "full",
 *   the stall and the window in microseconds after any whitespace, and
 *   whatever follows them ignored; on procfs, of at most the first 32
 *   bytes less the last one, as /proc/pressure reads a write (data
 *   without its NUL loses its last byte there); the default is used only for data that
 *   is not such a trigger (a number missing, signed or above UINT32_MAX,
 *   a stall of 0 or above the window).  systemd has one level: SEVERE.
 * - A PSI trigger's descriptor (rcl_pressure_add_psi()'s or systemd's)
 *   that reports an error has nothing left to wait on (its cgroup was
 *   removed): the source turns RCL_PSOURCE_OFF, fallback_errno ENODEV.
 * - the application (rcl_pressure_notify()), with the mappings of
 *   rcl_pressure_level_from_glib() and rcl_pressure_level_from_android().
 *
 * Peers' failures, designed out:
 *
 * - Rate limit: at most one action per &rcl_pressure_config.window_ns per
 *   source.  Events inside a window merge (the highest level wins) into
 *   one action at the window's end.
 * - Freed nothing, back off: an action that freed nothing (usage did not
 *   fall across it, reclaim included) doubles that source's wait, up to
 *   &rcl_pressure_config.backoff_max_ns; one that freed something restores
 *   the window.  A source that fires continuously at an empty cache costs
 *   one action per backoff_max_ns.
 * - Budget that follows the container (RCL_PRESSURE_FOLLOW_CGROUP, needs a
 *   cgroup source): container = limit x &rcl_pressure_config.cgroup_pct /
 *   100 - (working set - this domain's usage in bytes), converted to the
 *   domain's unit by &rcl_pressure_config.bytes_per_unit, re-read every
 *   interval (a limit change raises no event): the cgroup's working set is
 *   to stay at cgroup_pct of its limit, whatever the others hold, so the
 *   margin left for their growth between two readings (and for what the
 *   cache does not charge) is a fixed share of the limit.  No limit: no
 *   container budget.
 * - Allocator trim: freed objects are not freed memory.  After actions and
 *   budget changes (the container's included) have freed at least &rcl_pressure_config.trim_min_bytes since the last
 *   trim, and at most once per &rcl_pressure_config.trim_interval_ns, the
 *   trim hook runs: by default malloc_trim(0) on glibc (nothing elsewhere),
 *   or the application's (jemalloc's arena.<i>.purge, mimalloc's
 *   mi_collect()), or none (RCL_PRESSURE_NO_TRIM).  It runs one timer
 *   interval after the frees that made it due (from dispatch or the
 *   thread), so that destructors the cache defers (the object cache's, to
 *   the shard's next insert) have run.
 *
 * Two ways to run it.  rcl_pressure_start() runs a library thread that
 * waits on the sources and the timer.  Without it, the application's event
 * loop polls rcl_pressure_fd() for POLLIN (an epoll descriptor holding the
 * sources' descriptors and a timerfd armed for the next deadline) and calls
 * rcl_pressure_dispatch() when it is readable, or whenever it likes: with a
 * fake clock (tests) dispatch does exactly what the clock's time says is
 * due.  PSI triggers and the two ways: the kernel clears a trigger's event
 * when a poll reports it, and a poll of the epoll descriptor polls the
 * trigger's descriptor inside it, so the application's own poll consumes
 * the event before dispatch can ask epoll for it.  The thread waits once
 * and handles what that wait returned, so it sees every event.  In fd mode
 * each dispatch reads the totals of the trigger sources (one small read
 * each) and takes a level as fired when the stall grew by its trigger's
 * threshold since a baseline at most one trigger window old (what the
 * kernel's trigger means), or, after a longer time, by the same share of
 * it; each trigger fires at most once per window after its last event (as
 * the kernel's does); the baseline moves when a level fires (so a stall is
 * counted once; a higher level then needs its own threshold of new stall,
 * a little later than the kernel's sliding window) or the window has
 * passed, and the timer keeps it no older than one window (a dispatch at
 * least every 2 s, systemd's trigger's window for its file).  An event that
 * epoll does return is taken as it is.
 *
 * Real memory.  rcl_pressure_memory() samples the process's resident memory
 * (/proc/self/statm) and, with a cgroup source, the cgroup's usage, working
 * set and limit, beside the domain's charged usage, with the sampling time.
 * rcl_domain_vmstat() stays lock-free and reads no file.
 *
 * Lifetime.  A monitor holds its domain: rcl_domain_free() is refused
 * (-EBUSY) until the monitor is freed.  Every descriptor is O_CLOEXEC.
 * After fork() the child must not use a monitor created by its parent (the
 * thread is not there; the descriptors are shared with the parent): free
 * it there only with rcl_pressure_free(), which then closes its copies and
 * does not join a thread it does not have.  When the process moves to
 * another cgroup, a cgroup source keeps the directory it opened; remove
 * nothing, add a new monitor (or call rcl_pressure_add_cgroup() again on a
 * new monitor) to follow the move.
 *
 * Synchronization.  Every function is thread-safe (a monitor mutex), except
 * rcl_pressure_free(), which must not run concurrently with other calls on
 * the monitor.  Actions (dispatch, notify) run reclaim, and so the
 * domain's callbacks, in the calling thread, with the monitor mutex not
 * held (its action lock is).  "The monitor's own callbacks" below are its
 * trim hook and the callbacks of its actions' reclaim at any depth: a
 * callback of its action may act with another monitor (of another tree),
 * and the callbacks of that action are still inside the first one's, so
 * the calls on the first monitor that take its action lock, or free it,
 * refuse them too (-EDEADLK).  A call that takes a monitor's action lock
 * from any callback of the library (of another monitor's action; of a
 * reclaim pass; of a shrink the application runs itself: an lruvec's
 * evict callback, a shrinker's count or scan; of a write-back's write or
 * sync) does not wait for it: if another thread holds it, the call returns
 * -EBUSY and does nothing (two monitors whose actions call into each
 * other from two threads would otherwise deadlock, and so would an evict
 * callback whose isolated node the action waits for); retry outside the
 * callback.
 */
#ifndef RECLAIM_PRESSURE_H
#define RECLAIM_PRESSURE_H

#include <stddef.h>
#include <stdint.h>

#include <reclaim/common.h>
#include <reclaim/clock.h>
#include <reclaim/domain.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcl_pressure;

/** Pressure levels, mildest first. */
enum rcl_pressure_level {
	RCL_PRESSURE_NONE = 0,
	RCL_PRESSURE_MODERATE = 1,
	RCL_PRESSURE_SEVERE = 2,
	RCL_PRESSURE_CRITICAL = 3,
};

/** Most sources one monitor watches. */
#define RCL_PRESSURE_MAX_SOURCES 16

/** Monitor flag: the budget follows the cgroup's limit (needs a cgroup source). */
#define RCL_PRESSURE_FOLLOW_CGROUP (1u << 0)
/** Monitor flag: no allocator trim at all. */
#define RCL_PRESSURE_NO_TRIM (1u << 1)

/** Defaults of &struct rcl_pressure_config (0 selects them). */
#define RCL_PRESSURE_WINDOW_DEFAULT_NS		1000000000ull	/* 1 s */
#define RCL_PRESSURE_BACKOFF_MAX_DEFAULT_NS	60000000000ull	/* 60 s */
#define RCL_PRESSURE_INTERVAL_DEFAULT_NS	1000000000ull	/* 1 s */
#define RCL_PRESSURE_GROW_PCT_DEFAULT		5
#define RCL_PRESSURE_CGROUP_PCT_DEFAULT		90
#define RCL_PRESSURE_TRIM_MIN_DEFAULT_BYTES	(1ull << 20)	/* 1 MiB */
#define RCL_PRESSURE_TRIM_INTERVAL_DEFAULT_NS	1000000000ull	/* 1 s */
#define RCL_PRESSURE_GROW_INTERVAL_DEFAULT_NS	1000000000ull	/* 1 s */

/**
 * struct rcl_pressure_config - creation parameters
 * @domain: the domain the levels apply to (required)
 * @clock: the clock of windows, intervals and samples; NULL = the real
 *	monotonic clock.  With a fake clock, the library thread and the
 *	timerfd still wait in real time; tests call rcl_pressure_dispatch().
 * @allocator: where the monitor comes from; NULL = malloc
 * @flags: RCL_PRESSURE_FOLLOW_CGROUP, RCL_PRESSURE_NO_TRIM; others -EINVAL
 * @bytes_per_unit: bytes per unit of the domain's budget; 0 = 1 (the
 *	domain counts bytes).  Used for cgroup budgets, trim amounts and
 *	rcl_pressure_memory().
 * @base_budget: the budget without pressure; 0 = the domain's budget now.
 *	A base other than the domain's budget is applied by the first dispatch
 *	or action (creating a monitor reclaims nothing)
 * @min_budget: the floor no action goes below (the pressure budget's; the
 *	container budget binds below it); 0 = base / 64 (at least 1), or 1
 *	if base is no limit (UINT64_MAX: a child domain with no budget of its
 *	own, whose 1/64 would be above any usage).  With no base, growth
 *	steps of grow_pct of it lift the pressure budget above any usage at
 *	the first quiet grow interval: give @base_budget for a gradual one
 * @window_ns: the rate-limit window per source; 0 = 1 s
 * @backoff_max_ns: the longest wait after actions that freed nothing;
 *	0 = 60 s; raised to @window_ns if below it
 * @interval_ns: the timer: PSI polling, cgroup reads; 0 = 1 s; at least
 *	1 ms; a value beyond the clock's range means no timer (polled
 *	files are then read only on the ticks a v2 memory.events change
 *	brings forward, and rated over at least 2 s: see PSI above)
 * @grow_pct: how far the budget grows back per grow interval, in percent
 *	of base, 1..100; 0 = 5
 * @cgroup_pct: the share of the cgroup's limit its working set is to stay
 *	within, in percent, 1..100; 0 = 90
 * @trim: the allocator trim hook; NULL = malloc_trim(0) on glibc (none
 *	elsewhere), unless RCL_PRESSURE_NO_TRIM
 * @trim_priv: passed to @trim
 * @trim_min_bytes: freed bytes that make a trim worth it; 0 = 1 MiB
 * @trim_interval_ns: the shortest time between two trims; 0 = 1 s
 * @grow_interval_ns: the budget grows one step per grow interval, once no
 *	action came for a whole one (checked on the timer); 0 = 1 s
 */
struct rcl_pressure_config {
	struct rcl_domain *domain;
	const struct rcl_clock *clock;
	const struct rcl_allocator *allocator;
	unsigned flags;
	uint64_t bytes_per_unit;
	uint64_t base_budget;
	uint64_t min_budget;
	uint64_t window_ns;
	uint64_t backoff_max_ns;
	uint64_t interval_ns;
	unsigned grow_pct;
	unsigned cgroup_pct;
	void (*trim)(void *priv);
	void *trim_priv;
	uint64_t trim_min_bytes;
	uint64_t trim_interval_ns;
	uint64_t grow_interval_ns;
};

/** What a source is and how it is read (rcl_pressure_source_info()). */
enum rcl_psource_mode {
	RCL_PSOURCE_MANUAL = 0,		/**< rcl_pressure_notify() */
	RCL_PSOURCE_PSI_TRIGGER,	/**< PSI triggers, POLLPRI */
	RCL_PSOURCE_PSI_POLL,		/**< PSI totals read on the timer */
	RCL_PSOURCE_CGROUP_V2,		/**< cgroup v2 files on the timer (+ events) */
	RCL_PSOURCE_CGROUP_V1,		/**< cgroup v1 files on the timer */
	RCL_PSOURCE_CGROUP_V1_EVENTS,	/**< ... and memory.pressure_level eventfds */
	RCL_PSOURCE_SYSTEMD_PSI,	/**< $MEMORY_PRESSURE_WATCH, a PSI file */
	RCL_PSOURCE_SYSTEMD_PSI_POLL,	/**< ... its trigger refused: totals polled */
	RCL_PSOURCE_SYSTEMD_FIFO,	/**< ... a FIFO */
	RCL_PSOURCE_SYSTEMD_SOCKET,	/**< ... an AF_UNIX stream socket */
	RCL_PSOURCE_OFF,		/**< $MEMORY_PRESSURE_WATCH=/dev/null, a
					     peer that closed, or a trigger
					     whose file went: watches nothing */
};

/**
 * struct rcl_pressure_source_info - one source
 * @mode: how it is read now
 * @level: the level of its last event (NONE if none yet or it has ended:
 *	a polled source says so on the timer; a descriptor's level ends after
 *	twice the longer of the window and PSI's 2 s without another event;
 *	a manual source's when the application notifies NONE)
 * @events: events above NONE it raised (merged ones included)
 * @actions: actions it caused
 * @merged: events merged into a pending action (rate limit)
 * @empty_actions: actions that freed nothing
 * @wait_ns: its current wait between actions (window, or backed off)
 * @fallback_errno: why a PSI trigger was not used (positive errno: EINVAL,
 *	EPERM, EACCES, ...; ENOTSUP when the file is not on procfs or
 *	cgroup2; ENODATA for systemd's PSI file with nothing to write;
 *	ENODEV when a trigger's descriptor reported an error and the source
 *	turned off); for
 *	a cgroup v2 source, why memory.events is no longer watched for
 *	POLLPRI (the errno of a read through its descriptor that failed,
 *	ENODEV once the cgroup is removed: the descriptor is closed, the
 *	timer's reads go on); 0
 * @path: the file, directory or socket it watches ("" for manual)
 */
struct rcl_pressure_source_info {
	enum rcl_psource_mode mode;
	enum rcl_pressure_level level;
	uint64_t events;
	uint64_t actions;
	uint64_t merged;
	uint64_t empty_actions;
	uint64_t wait_ns;
	int fallback_errno;
	char path[256];
};

/**
 * struct rcl_pressure_stats - a monitor's counters and state
 * @nr_sources: sources added
 * @actions: actions taken (all sources)
 * @empty_actions: of which freed nothing
 * @freed_bytes: what the actions freed (usage drops, x bytes_per_unit)
 * @trims: trim hook calls
 * @budget: the effective budget last applied
 * @base_budget: the budget without pressure
 * @container_budget: the budget that follows the cgroup (UINT64_MAX: none)
 * @pressure_budget: what actions left (UINT64_MAX: none)
 * @level: the highest level among the sources' last events
 * @dispatches: rcl_pressure_dispatch() calls and thread wakeups
 * @read_errors: source reads that failed or could not be parsed (the
 *	source keeps its last good values; a budget is never derived from a
 *	value that did not parse)
 */
struct rcl_pressure_stats {
	unsigned nr_sources;
	uint64_t actions;
	uint64_t empty_actions;
	uint64_t freed_bytes;
	uint64_t trims;
	uint64_t budget;
	uint64_t base_budget;
	uint64_t container_budget;
	uint64_t pressure_budget;
	enum rcl_pressure_level level;
	uint64_t dispatches;
	uint64_t read_errors;
};

/**
 * struct rcl_memory_sample - real memory beside logical bytes
 * @time_ns: when it was sampled (the monitor's clock)
 * @charged_bytes: the domain's usage x bytes_per_unit
 * @budget_bytes: the domain's budget x bytes_per_unit
 * @rss_bytes: the process's resident memory (/proc/self/statm, field 2,
 *	times the page size); 0 if unreadable
 * @cgroup_usage_bytes: the cgroup's usage (v2 memory.current, v1
 *	memory.usage_in_bytes); 0 without a cgroup source
 * @cgroup_working_set_bytes: usage minus inactive file pages; 0 likewise
 * @cgroup_limit_bytes: the limit the levels use; UINT64_MAX: none; 0
 *	without a cgroup source
 */
struct rcl_memory_sample {
	uint64_t time_ns;
	uint64_t charged_bytes;
	uint64_t budget_bytes;
	uint64_t rss_bytes;
	uint64_t cgroup_usage_bytes;
	uint64_t cgroup_working_set_bytes;
	uint64_t cgroup_limit_bytes;
};

/**
 * rcl_pressure_new() - create a monitor of one domain.  Pair with
 * rcl_pressure_free().
 * @cfg: the configuration
 * @out: receives the monitor (written only on success)
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL arguments, a NULL domain, unknown flags, a
 * grow_pct or cgroup_pct above 100, a min_budget above the base budget, or
 * an allocator without both callbacks; -ENOMEM; -EMFILE, -ENFILE (no
 * descriptor for the epoll set or the timerfd).
 */
RCL_API int rcl_pressure_new(const struct rcl_pressure_config *cfg,
			     struct rcl_pressure **out);

/**
 * rcl_pressure_free() - stop and free a monitor
 * @p: the monitor; NULL is a no-op
 *
 * Stops its thread if it runs, closes every descriptor, and releases the
 * domain (which may then be freed).  The budget stays as last applied.
 *
 * Context: any thread but the monitor's own (its thread, its trim hook,
 * the domain's callbacks run by its actions, at any depth: -EDEADLK); not
 * concurrently with other calls on @p.  From another callback of the
 * library, as rcl_pressure_stop().
 * Return: 0; -EDEADLK (nothing done); -EBUSY from a callback while the
 * thread or another caller acts on @p (nothing done).
 */
RCL_API int rcl_pressure_free(struct rcl_pressure *p);

/**
 * rcl_pressure_add_psi() - watch a PSI file
 * @p: the monitor
 * @path: /proc/pressure/memory, a cgroup v2 memory.pressure, or any file in
 *	that format; NULL = "/proc/pressure/memory"
 *
 * Tries triggers (on procfs and cgroup2 only), else polls the totals; see
 * rcl_pressure_source_info() for the mode in force and why.
 *
 * Context: any thread but the monitor's own callbacks (its trim hook, the
 * domain's callbacks run by its actions, at any depth: -EDEADLK).
 * Return: the source's index (>= 0); -EINVAL for NULL @p; -ENOENT, -EACCES,
 * -EOPNOTSUPP (PSI disabled), ... (the errno of opening or reading it);
 * -EBADMSG if its content does not parse; -ENOSPC with
 * RCL_PRESSURE_MAX_SOURCES already; -ENOMEM; -EDEADLK; -EBUSY from a
 * callback while another thread acts on the monitor (see Synchronization).
 */
RCL_API int rcl_pressure_add_psi(struct rcl_pressure *p, const char *path);

/**
 * rcl_pressure_add_cgroup() - watch a cgroup's memory
 * @p: the monitor
 * @dir: the cgroup's directory; NULL = the process's own (v2 if its
 *	cgroup2 mount has the memory controller, else v1's memory hierarchy)
 * @version: 1 or 2; 0 = from the files in @dir (memory.current: 2,
 *	memory.usage_in_bytes: 1)
 *
 * On a real cgroupfs, v1 also registers memory.pressure_level
 * notifications (mode RCL_PSOURCE_CGROUP_V1_EVENTS; RCL_PSOURCE_CGROUP_V1
 * if they are refused).  At most one cgroup source per monitor.  The
 * limit includes the ancestors' (see the file comment): for a v2 @dir,
 * /proc/self/mountinfo is read once here to find the cgroup2 mount whose
 * root ends the walk up; if it cannot be read or @dir is not in that
 * mount, the limit is @dir's own (no error).
 *
 * Context: any thread but the monitor's own callbacks (-EDEADLK).
 * Return: the source's index; -EINVAL for NULL @p or a version other than
 * 0, 1, 2; -ENOENT (no such directory, no memory controller for this
 * process, or neither version's files); -EBADMSG if a file does not parse;
 * -ERANGE if a value does not fit 64 bits; -EFBIG if a file is larger than
 * 16 KiB (16384 bytes: one of exactly 16384 is read), or, for a NULL @dir,
 * /proc/self/cgroup or /proc/self/mountinfo is larger than 4 MiB (a host
 * with thousands of mounts; they are read whole, whatever their length
 * below that); -EEXIST if the
 * monitor has a cgroup source; -ENOSPC; -ENOMEM; -EDEADLK; -EBUSY (as
 * rcl_pressure_add_psi()); the errno of opening a file.
 */
RCL_API int rcl_pressure_add_cgroup(struct rcl_pressure *p, const char *dir,
				    unsigned version);

/**
 * rcl_pressure_add_systemd() - watch what systemd's protocol says
 * @p: the monitor
 * @watch: the path; NULL = getenv("MEMORY_PRESSURE_WATCH")
 * @write_b64: base64 of the bytes to write first (NUL bytes allowed); NULL =
 *	getenv("MEMORY_PRESSURE_WRITE") when @watch is NULL too, else none
 *
 * @watch is opened, and a socket connected, before the monitor's locks are
 * taken: a connect() that waits for a listener's full backlog holds up
 * this call only, not the monitor's other calls or its thread.
 *
 * Context: any thread but the monitor's own callbacks (-EDEADLK).
 * Return: the source's index (mode RCL_PSOURCE_OFF for "/dev/null");
 * -EINVAL for NULL @p, a relative path, or @write_b64 that is not base64
 * (or decodes to more than 1 KiB); -ENOENT if @watch is NULL and the
 * variable is unset (or the path does not exist); -EBADF for a file that is
 * no regular file, FIFO or socket; -EBADMSG for a regular file whose
 * content is not PSI's; -ENAMETOOLONG for a
 * socket path longer than sun_path; -EIO for a short write to a FIFO or
 * socket; -ENOSPC; -ENOMEM; -EDEADLK; -EBUSY (as rcl_pressure_add_psi());
 * the errno of opening, connecting or writing.  On error nothing is added.
 */
RCL_API int rcl_pressure_add_systemd(struct rcl_pressure *p, const char *watch,
				     const char *write_b64);

/**
 * rcl_pressure_add_manual() - a source for the application's own levels
 * @p: the monitor
 *
 * Context: any thread.
 * Return: the source's index, for rcl_pressure_notify(); -EINVAL for NULL;
 * -ENOSPC.
 */
RCL_API int rcl_pressure_add_manual(struct rcl_pressure *p);

/**
 * rcl_pressure_notify() - an event from the application
 * @p: the monitor
 * @source: an index from rcl_pressure_add_manual()
 * @level: the level; RCL_PRESSURE_NONE says the pressure has ended
 *
 * Rate-limited like every source: the action runs now, in the caller, or
 * merges into the one due at the end of the source's wait (run by the next
 * dispatch or by the thread).  RCL_PRESSURE_NONE sets the source's level
 * (rcl_pressure_stats()) to none; it does not cancel an action already
 * merged: the events merged into it happened, and the rate limit only
 * delays them.
 *
 * Context: any thread but the domain's reclaim callbacks and the
 * monitor's own callbacks (at any depth); runs reclaim (and so the
 * domain's callbacks) when it acts.
 * Return: 0; -EINVAL for NULL, a level out of range, or an index that is
 * not a manual source; -EDEADLK from a callback of a reclaim pass of the
 * domain's tree (a pass of its root over a child included, and a pass
 * nested in another pass's callback) or from the monitor's own callbacks;
 * -EBUSY (nothing recorded) from another callback while another thread
 * acts on the monitor (see Synchronization).
 */
RCL_API int rcl_pressure_notify(struct rcl_pressure *p, int source,
				enum rcl_pressure_level level);

/**
 * rcl_pressure_level_from_glib() - GLib's GMemoryMonitorWarningLevel
 * @glib_level: 50 (LOW), 100 (MEDIUM), 255 (CRITICAL), taken as ranges:
 *	1..99 MODERATE, 100..254 SEVERE, 255 and above CRITICAL, 0 and
 *	below NONE
 *
 * Context: any thread.
 * Return: the level.
 */
RCL_API enum rcl_pressure_level rcl_pressure_level_from_glib(int glib_level);

/**
 * rcl_pressure_level_from_android() - Android's onTrimMemory() level
 * @trim_level: TRIM_MEMORY_RUNNING_MODERATE 5, _RUNNING_LOW 10,
 *	_RUNNING_CRITICAL 15, _UI_HIDDEN 20, _BACKGROUND 40, _MODERATE 60,
 *	_COMPLETE 80, taken as ranges: 5..9 MODERATE, 10..14 SEVERE, 15..19
 *	CRITICAL (the app runs, the system is nearly out), 20..59 MODERATE
 *	(hidden or in the background list's top), 60..79 SEVERE, 80 and above
 *	CRITICAL (next to be killed); below 5 NONE
 *
 * Context: any thread.
 * Return: the level.
 */
RCL_API enum rcl_pressure_level rcl_pressure_level_from_android(int trim_level);

/**
 * rcl_pressure_level_name() - "none", "moderate", "severe", "critical"
 * @level: the level
 *
 * Context: any thread.
 * Return: a static string; "unknown" out of range.
 */
RCL_API const char *rcl_pressure_level_name(enum rcl_pressure_level level);

/**
 * rcl_pressure_start() - run the monitor in a library thread
 * @p: the monitor
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL; -EBUSY if it runs; -EAGAIN if the thread
 * cannot be created.
 */
RCL_API int rcl_pressure_start(struct rcl_pressure *p);

/**
 * rcl_pressure_stop() - stop the library thread and join it
 * @p: the monitor
 *
 * Context: any thread but the monitor's own (its thread, its callbacks at
 * any depth: -EDEADLK).  From another callback of the library (another
 * monitor's action, a reclaim pass, an evict, shrinker or write-back
 * callback) it does not wait for an action: it takes @p's action lock with
 * a try, and the thread does not act once it sees the stop, so the join
 * waits only for the thread's wait to end.  (Two monitors' threads, each in
 * an action, stopping each other would otherwise join each other for ever.)
 * Return: 0 (also if it was not running); -EINVAL for NULL; -EDEADLK;
 * -EBUSY from a callback while the thread or another caller acts on @p, or
 * another thread stops it (nothing done; stop it outside the callback).
 */
RCL_API int rcl_pressure_stop(struct rcl_pressure *p);

/**
 * rcl_pressure_fd() - the descriptor an event loop polls
 * @p: the monitor
 *
 * Readable (POLLIN) when a source has an event or the timer is due; then
 * call rcl_pressure_dispatch().  Do not read or close it.  Polling it
 * consumes PSI trigger events (see "Two ways to run it" above): dispatch
 * reads the trigger sources' totals in their stead.
 *
 * Context: any thread.
 * Return: the descriptor; -EINVAL for NULL; -EBUSY while the library thread
 * runs (it waits on the same descriptor).
 */
RCL_API int rcl_pressure_fd(struct rcl_pressure *p);

/**
 * rcl_pressure_dispatch() - do what is due
 * @p: the monitor
 *
 * Reads the sources that have events (without waiting), reads the PSI
 * trigger sources' totals (their events are consumed by the poll that
 * woke the caller), runs the timer's work if the clock says it is due (PSI
 * and cgroup reads, budget growth), runs the actions whose windows have
 * ended, and re-arms the timerfd.
 *
 * Context: any thread but the callbacks of a reclaim pass of the domain's
 * tree and the monitor's own callbacks at any depth (-EDEADLK); runs
 * reclaim.  Calls from several threads are serialised.
 * Return: the number of actions taken (>= 0); -EINVAL for NULL; -EDEADLK;
 * -EBUSY from another callback while another thread acts on the monitor.
 */
RCL_API int rcl_pressure_dispatch(struct rcl_pressure *p);

/**
 * rcl_pressure_next_deadline() - when the monitor next has work
 * @p: the monitor
 *
 * Context: any thread.
 * Return: the clock time (ns) of the next timer or pending action (or,
 * without the library thread, the end of a PSI trigger source's window,
 * when its totals' baseline moves); RCL_CLOCK_FOREVER for none or for NULL.
 */
RCL_API uint64_t rcl_pressure_next_deadline(struct rcl_pressure *p);

/**
 * rcl_pressure_stats() - a monitor's counters
 * @p: the monitor
 * @out: receives them
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_pressure_stats(struct rcl_pressure *p,
			       struct rcl_pressure_stats *out);

/**
 * rcl_pressure_source_info() - one source's mode and counters
 * @p: the monitor
 * @source: its index
 * @out: receives them
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL; -ENOENT for an index not in use.
 */
RCL_API int rcl_pressure_source_info(struct rcl_pressure *p, int source,
				     struct rcl_pressure_source_info *out);

/**
 * rcl_pressure_source_mode_name() - "manual", "psi-trigger", "psi-poll", ...
 * @mode: the mode
 *
 * Context: any thread.
 * Return: a static string; "unknown" out of range.
 */
RCL_API const char *rcl_pressure_source_mode_name(enum rcl_psource_mode mode);

/**
 * rcl_pressure_memory() - sample real memory beside the domain's bytes
 * @p: the monitor
 * @out: receives the sample
 *
 * Reads /proc/self/statm and, with a cgroup source, its usage and
 * memory.stat, now (a few small file reads; not lock-free).
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL.  A file that cannot be read leaves its
 * fields 0 (and counts a read error).
 */
RCL_API int rcl_pressure_memory(struct rcl_pressure *p,
				struct rcl_memory_sample *out);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_PRESSURE_H */
