/* SPDX-License-Identifier: MIT */
/**
 * DOC: domain - a memory budget, its watermarks, and the reclaimers
 *
 * A *domain* is the unit with a budget, in the application's unit (bytes by
 * default).  It has one or more *partitions* (NUMA nodes or shards); each
 * cache attaches one lruvec per partition (rcl_domain_attach(); the lruvec
 * stays the application's), and the domain owns one shrinker registry
 * (rcl_domain_registry()) with a backlog per partition for partition-aware
 * shrinkers.
 *
 * Charging is explicit: the application charges when it creates an object
 * (rcl_domain_charge()) and uncharges when it frees one, typically in its
 * evict callback (rcl_domain_uncharge()).  Adding a node to an lruvec
 * charges nothing, because charged memory also lives outside lruvecs (in a
 * shrinker's cache, say).
 *
 * Watermarks are levels of free headroom (budget - usage), min < low < high,
 * as the kernel's per-zone watermarks:
 *
 * - headroom above low: nothing happens;
 * - a charge that leaves headroom below low wakes the background reclaimer
 *   (if started), which reclaims until headroom is back above high; the
 *   charge that wakes it, and while the wakeup is pending every charge that
 *   leaves headroom in the lower half between min and low, yields the CPU
 *   once (if its context may block), so that the reclaimer gets to run
 *   before the headroom down to min is gone;
 * - a charge that would leave headroom below min makes the caller reclaim
 *   (direct reclaim), if its context mask has RCL_CTX_MAY_BLOCK: up to 16
 *   sweeps from priority 12 to 0; when one frees nothing, the pending adds
 *   of every thread are drained to the lists, and it stops at the next
 *   sweep that frees nothing while no other reclaimer holds objects
 *   isolated;
 * - a charge that is still over budget afterwards fails with -ENOMEM in
 *   strict mode, or is admitted and reported as overshoot in soft mode.
 *   Reclaim comes before the charge is committed, and strict mode commits
 *   by compare-and-swap only what fits: its usage never exceeds the budget,
 *   not even for an instant.  A refused charge, whether its context may
 *   block or not, wakes the background reclaimer (if started) as an
 *   admitted one below low does, as the kernel's allocator slow path wakes
 *   kswapd before it fails an allocation: so a caller whose charges may
 *   not block is not refused on and on while the reclaimer sleeps.  Not
 *   while the headroom is at or above high (the reclaimer reclaims towards
 *   high, whatever the size of the charge, so it would have nothing to
 *   do: only direct reclaim, or uncharges, make room for such a charge),
 *   nor for a charge larger than the whole budget or one that would wrap
 *   usage around.  One refusal makes at most one wakeup request, which
 *   the pending one absorbs, and a hopeless domain ignores (below).
 *
 * Default watermarks (rcl_domain_set_budget() recomputes them):
 * min = budget / 1024 (the kernel's min_free_kbytes is about 0.1 % to 0.4 %
 * of memory), gap = max(min / 4, budget * scale_factor / 10000, 1), low =
 * min + gap, high = min + 2 * gap, with scale_factor 100 (1 %; the kernel's
 * watermark_scale_factor defaults to 10, 0.1 %: a user-space cache reclaims
 * in coarser units, and a wider gap lets the background reclaimer work in
 * larger batches).  Where that gives high > budget (tiny budgets, or scale
 * factors near 5000 and above), the watermarks are min = 0, low = budget / 2,
 * high = budget instead; below a budget of 3 they cannot be strictly
 * ordered.
 *
 * Reclaim goals are in objects: the weight to free (what usage is over the
 * level wanted, counting what it is over the budget) divided by the average
 * object weight of the attached lruvecs, at least 32.  Within a partition,
 * each lruvec is asked for its share of the goal in proportion to its size.
 *
 * The background reclaimer (the kswapd analogue) is an optional thread per
 * domain: rcl_domain_reclaimer_start() / _stop().  Woken by a charge below
 * low, it reclaims towards high, starting at priority 12 and lowering the
 * priority only when a pass fell short (the kernel's balance_pgdat()).  A
 * wakeup whose passes free nothing at any priority is a failure; after 16
 * consecutive failures (MAX_RECLAIM_RETRIES) the domain is *hopeless*: charge
 * wakeups are ignored, and nothing runs, until something changes - reclaim
 * progress (by a direct reclaimer, or by a run of the reclaimer that a
 * wakeup posted before), a budget or watermark change, an attach (to any
 * domain of the tree), a change of limits or protection
 * (rcl_domain_set_limits()) or of swappiness, or rcl_domain_wakeup().  With nothing reclaimable it therefore stops
 * after 16 passes instead of spinning.
 *
 * Usage:
 *
 * .. code-block:: c
 *
 *	struct rcl_domain_config cfg = { .budget = 64 << 20 };
 *	struct rcl_domain *d;
 *	rcl_domain_new(&cfg, &d);
 *	rcl_domain_attach(d, &cache->lv, 0);
 *	rcl_domain_reclaimer_start(d);
 *	...
 *	if (rcl_domain_charge(d, size, RCL_CTX_CAPABLE, NULL) == 0)
 *		insert(obj);			// evict callback: rcl_domain_uncharge()
 *	...
 *	rcl_domain_reclaimer_stop(d);
 *	rcl_domain_detach(d, &cache->lv);
 *	rcl_domain_free(d);
 *
 * Charge stocks (opt-in: &struct rcl_domain_config.charge_stock, 0 = off,
 * the default) make charging scale across threads, as the kernel's memcg
 * per-CPU stock does (consume_stock(), refill_stock(), drain_all_stock()).
 * A thread's charge that its stock cannot serve takes the charge plus a
 * full stock from the usage in one step, and the following charges are
 * served from the stock, and uncharges put back into it, writing only the
 * thread's own cache line.  What stocks hold *is charged*: rcl_domain_usage()
 * counts it, as memcg counts its stocks, so usage is the sum of the charges
 * less the uncharges, plus what the stocks hold; it is exact when no thread
 * holds a stock (stocks off, or after rcl_domain_drain_stocks()).  The
 * bound, with S = min(charge_stock, budget / RCL_CHARGE_STOCK_SHARE):
 * one stock holds at most S, and at most budget / RCL_CHARGE_STOCKS_SHARE
 * / S threads hold a stock of the domain at once (the others charge
 * unstocked), so the stocks together hold at most budget / 16.  A stock is
 * only taken while it leaves usage at least the high watermark below the
 * budget, and charges of S or more are never stocked.  Stocks are taken
 * back (every thread's, by the caller, under a lock of each stock) before
 * anything depends on the headroom: by a charge that would leave headroom
 * below low (so before its direct reclaim, the reclaimer's wakeup, a
 * strict failure or a soft overshoot, and once more before those two if a
 * stock is attached again by then), by every direct reclaim
 * (rcl_domain_reclaim() too), by each background reclaimer run, by
 * rcl_domain_set_budget(), by rcl_domain_set_watermarks() below low, and
 * by the pressure monitor's actions; and while a charge that no stock
 * serves decides (its drain, reclaim and commit), no stock of its tree is
 * taken, so that none takes the room it counted on.  So the outcome of every charge -
 * admitted, refused, overshoot, reclaim - is the one it would have without
 * stocks; what stocks change is only when usage moves.  A thread's stock
 * serves one domain at a time (charging another gives it back first); a
 * thread that exits gives its stock back (a pthread key destructor; its
 * charges from key destructors that run later are unstocked), as
 * does rcl_domain_free() for every stock of the domain; after fork() the
 * child gives back the stocks of the threads it does not have.  A stock
 * that a thread first takes from another key's destructor in the last
 * round of them (PTHREAD_DESTRUCTOR_ITERATIONS) is seen by no destructor:
 * it stays charged after the thread's exit, as a stock does, until the
 * next drain of its domain's stocks (any of those above,
 * rcl_domain_drain_stocks() or rcl_domain_free()), which gives it back and
 * frees it.  One that a drain had emptied before holds nothing; its
 * memory is freed by the next drain, of any domain, that finds stocks
 * attached, or by an rcl_domain_free().
 *
 * fork().  The child of a fork() has only the thread that called it, so a
 * domain there has no background reclaimer and no flusher thread, whatever
 * the parent ran: in the child, rcl_domain_reclaimer_stop(),
 * rcl_domain_flusher_stop() and rcl_domain_free() return without waiting
 * for the parent's threads, charges below low wake nothing until
 * rcl_domain_reclaimer_start() starts a thread of the child's own, and
 * flush requests go to the application's flusher ops (or nowhere), as with
 * no thread.  The domain's conditions, which the parent's waiting threads
 * still hold places in, are given a fresh state by the child's first use.
 * A pass that the parent's reclaimer (or another thread) was in at the
 * fork ends for the child then: rcl_domain_detach() in the child does not
 * wait for it (also when the child was forked from a callback of a pass:
 * only that pass, the child's own, is waited for until it ends), though the objects that pass had isolated stay isolated in
 * the child's copy of the lruvec (the child cannot destroy it).
 * The flush and writeback-throttle locks, which the parent's flusher
 * thread and throttled writers hold for moments, start afresh in the child
 * if a thread of the parent held them at the fork (the flush requests are
 * then dropped).  Otherwise, as POSIX says of fork() in a multithreaded
 * process, a thread of the parent that was inside a call of the library at
 * the fork can leave that domain's locks (an lruvec's, the domain's own)
 * held in the child.
 *
 * Trees of domains (the kernel's memory cgroups).  A domain created with a
 * parent (&struct rcl_domain_config.parent) is a *child*: every charge to it
 * is charged to each ancestor too, as the kernel's page_counter does (one
 * compare-and-swap per level, no lock), and reclaim under pressure at any
 * level walks that level's subtree.  A domain without a parent is a *root*,
 * and a root without children is today's flat domain, unchanged.  Each
 * child has, all optional and changeable (rcl_domain_set_limits()):
 *
 * - its budget, a hard limit (memory.max): a charge that would take the
 *   child, or any ancestor, above its budget makes the charging thread
 *   reclaim from the subtree of the level that is full (a ``max`` event
 *   there), as memcg's try_charge() does; if that cannot make room, a
 *   strict level fails the charge with -ENOMEM (an ``oom`` event; nothing
 *   stays charged at any level) and a soft one admits it as overshoot.
 *   A refusal wakes the tree's background reclaimer, the root's (a child
 *   has none), as a refusal by a root's budget does, when the root's
 *   headroom is below high; for one by a child level, only if the root's
 *   charge would have left the root's headroom below low (the kernel
 *   allocates the page, waking kswapd, before it charges the memcg):
 *   that reclaimer works for the root's watermarks, and a child's budget
 *   is relieved only by direct reclaim, as memory.max is.
 *   Budget 0 at creation means no limit of its own (UINT64_MAX);
 * - limit_high (memory.high): a charge that leaves a level above it counts
 *   a ``high`` event and, if the context may block, the charging thread
 *   reclaims that level's subtree down to it before returning;
 * - protect_min and protect_low (memory.min, memory.low): protection from
 *   reclaim that an ancestor's pressure causes.
 *
 * Effective protection is computed as mem_cgroup_calculate_protection()
 * does, relative to the level whose pressure is being relieved (the
 * *target*; its own protection does not count): a child of the target gets
 * its setting; deeper, a domain's protection is min(usage, setting), scaled
 * down by parent_effective / siblings' protected usage when the siblings
 * claim more than the parent has; with RCL_DOMAIN_RECURSIVE_PROT (the
 * kernel's memory_recursiveprot, set on the root for its whole tree),
 * protection the protected siblings leave unclaimed flows to every sibling
 * in proportion to its unprotected usage.  A reclaim pass at priority p
 * visits the subtree parent first: a domain whose usage is at or below its
 * effective min is skipped (so is a domain whose usage is 0, whatever is on
 * its lruvecs, as memcg skips a cgroup that holds nothing: charge a
 * cache's memory to the domain its lruvecs are attached to, or their
 * objects are not reclaimed by a pass over the tree); one at or below its effective low is skipped
 * too unless a whole sweep freed nothing while such domains were skipped,
 * in which case the sweep is repeated with them included, counting a
 * ``low`` event for each (memory.events); every other domain's lruvecs are
 * scanned with each list's size scaled to size - size * protection /
 * (usage + 1), at least 32 (apply_proportional_protection()), and its
 * shrinkers are shrunk at p.  The goal is shared out over the lruvecs in
 * proportion to their scaled sizes.
 *
 * A child has no watermarks and no background reclaimer (starting one
 * returns -EINVAL; rcl_domain_set_watermarks() too): the root's reclaimer
 * serves the whole tree, its passes walking every domain with protection
 * relative to the root, and its watermarks are the tree's.  Charge stocks
 * are the tree's, configured on the root (a child may not be given
 * charge_stock: -EINVAL), and hierarchical as memcg's: a thread's stock
 * serves one domain of the tree, and what it holds is charged to that
 * domain and to every ancestor, taken in one step per level when it is
 * refilled; so a charge served from it moves no shared counter at any
 * level.  A child's stock is no larger than any ancestor's, and is refilled
 * only while every child level stays at least 1/RCL_CHARGE_STOCKS_SHARE of
 * its budget and of its limit_high below them (the root: its high
 * watermark), and each level counts the stocks of its subtree against its
 * own bound.  Before a charge finds a child level full, and before
 * limit_high reclaim, the stocks of that level's subtree are taken back
 * (memcg's drain_all_stock()), and when a child level's refusal would
 * wake the root's reclaimer, the whole tree's are, before it decides; so
 * that, as for a root, every charge's outcome is the one it has without
 * stocks; a child's charge without a stock takes one compare-and-swap per
 * child level, then the root's.
 *
 * The parent is given at creation and never changes, so a tree cannot
 * have a cycle; depth is at most RCL_DOMAIN_MAX_DEPTH (a root is at depth
 * 1); a domain with children cannot be freed (-EBUSY).  usage of a domain
 * is its subtree's total (every charge went through it); rcl_domain_vmstat()
 * counts a domain's own lruvecs and shrinkers, rcl_domain_vmstat_subtree()
 * sums its subtree, and rcl_domain_events() gives the events.
 *
 * Synchronization.  All functions are thread-safe.  charge and uncharge are
 * lock-free unless they reclaim or wake the reclaimer (domain mutex, briefly),
 * or (stocks on) take or give back a stock (the thread's stock lock).
 * Reclaim passes pin each attached lruvec (an atomic count), never holding a
 * domain lock across callbacks; detach waits for passes over that lruvec.
 */
#ifndef RECLAIM_DOMAIN_H
#define RECLAIM_DOMAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reclaim/clock.h>
#include <reclaim/common.h>
#include <reclaim/flusher.h>
#include <reclaim/lruvec.h>
#include <reclaim/shrinker.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcl_domain;

/** What a charge does when it cannot be brought under budget. */
enum rcl_charge_mode {
	RCL_CHARGE_STRICT = 0,	/**< fail with -ENOMEM */
	RCL_CHARGE_SOFT = 1,	/**< admit it; report the overshoot */
};

/** Domain flag: scan as the kernel did before 2014 (for comparison). */
#define RCL_DOMAIN_NONPROPORTIONAL (1u << 0)
/**
 * Domain flag: reclaim hands dirty objects to the evict callback, which
 * writes them synchronously (RCL_EVICT_DIRTY): what the kernel did before
 * 2017.  For comparisons only; counted as writes_from_reclaim.
 */
#define RCL_DOMAIN_RECLAIM_WRITES (1u << 1)

/**
 * Domain flag: the kernel's memory_recursiveprot for the whole tree: a
 * parent's protection that its protected children leave unclaimed is shared
 * by all its children in proportion to their unprotected usage.  Set on a
 * root; a child inherits its root's and may not set it.
 */
#define RCL_DOMAIN_RECURSIVE_PROT (1u << 2)

/** The deepest a tree of domains may be: a root is at depth 1. */
#define RCL_DOMAIN_MAX_DEPTH 8

/** One charge stock holds at most budget / RCL_CHARGE_STOCK_SHARE. */
#define RCL_CHARGE_STOCK_SHARE 64
/** All stocks of a domain hold at most budget / RCL_CHARGE_STOCKS_SHARE. */
#define RCL_CHARGE_STOCKS_SHARE 16

/** Default scale factor of the watermark gap, in 1/10000 of the budget. */
#define RCL_WATERMARK_SCALE_DEFAULT 100
/** Failed background passes before a domain is hopeless (the kernel's value). */
#define RCL_MAX_RECLAIM_RETRIES 16

/**
 * struct rcl_domain_config - creation parameters
 * @budget: the budget (> 0), in the application's unit
 * @nr_partitions: partitions; 0 = 1, for a child its parent's
 * @mode: strict or soft
 * @watermark_scale_factor: the gap between watermarks in 1/10000 of the
 *	budget, up to 10000; 0 = RCL_WATERMARK_SCALE_DEFAULT
 * @swappiness: 1..200, bias between cheap and costly LRU types (see scan.h);
 *	0 = RCL_SWAPPINESS_DEFAULT (use rcl_domain_set_swappiness() for 0)
 * @shrink_policy: the damping policy of the domain's shrinker registry
 * @max_lruvecs: most lruvecs attached at once; 0 = 256
 * @flags: RCL_DOMAIN_NONPROPORTIONAL, RCL_DOMAIN_RECLAIM_WRITES
 * @clock: the clock; NULL = rcl_clock_monotonic(), for a child its parent's
 * @allocator: NULL = malloc
 * @flusher: the application's flusher (flusher.h), or NULL
 * @flusher_priv: passed to @flusher
 * @flush_policy: how reclaim-triggered requests are sized
 * @dirty_background_ratio: % of the budget of dirty and writeback weight
 *	that wakes the flusher; 0 = 10; if not below the hard one (given or
 *	defaulted), half of that (as the kernel's domain_dirty_limits())
 * @dirty_ratio: % of the budget above which rcl_domain_balance_dirty()
 *	waits; 0 = 20
 * @dirty_timeout_ns: longest wait of rcl_domain_balance_dirty(); 0 = 100 ms
 * @charge_stock: the most a thread's charge stock holds (see the DOC
 *	above), capped at budget / RCL_CHARGE_STOCK_SHARE; 0 = no stocks.  A
 *	good size is a few dozen of the domain's typical charges (memcg's
 *	stock is 64 pages); any value is accepted.  On a root, for its
 *	whole tree; 0 for a child
 * @parent: the parent domain, or NULL for a root (see "Trees of domains"
 *	above).  It must outlive this domain; a child shares its root's
 *	clock, and its partition count must equal the root's
 * @limit_high: the throttle limit (memory.high), of a child or of a root
 *	(the charging thread reclaims the tree back to it); 0 = none
 * @protect_low: a child's best-effort protection (memory.low); 0 = none
 * @protect_min: a child's hard protection (memory.min); 0 = none
 *
 * For a child, @budget 0 means no limit of its own (UINT64_MAX), and
 * @watermark_scale_factor, @flusher and the dirty ratios apply to its own
 * lruvecs' dirty accounting only.
 */
struct rcl_domain_config {
	uint64_t budget;
	unsigned nr_partitions;
	enum rcl_charge_mode mode;
	unsigned watermark_scale_factor;
	unsigned swappiness;
	enum rcl_shrink_policy shrink_policy;
	unsigned max_lruvecs;
	unsigned flags;
	const struct rcl_clock *clock;
	const struct rcl_allocator *allocator;
	const struct rcl_flusher_ops *flusher;
	void *flusher_priv;
	enum rcl_flush_policy flush_policy;
	unsigned dirty_background_ratio;
	unsigned dirty_ratio;
	uint64_t dirty_timeout_ns;
	uint64_t charge_stock;
	struct rcl_domain *parent;
	uint64_t limit_high;
	uint64_t protect_low;
	uint64_t protect_min;
};

/** Watermarks, as levels of headroom (budget - usage). */
struct rcl_watermarks {
	uint64_t min;
	uint64_t low;
	uint64_t high;
};

/**
 * rcl_domain_new() - create a domain.  Pair with rcl_domain_free().
 * @cfg: the configuration
 * @out: receives the domain (written only on success)
 *
 * Context: any thread; with a parent, not concurrently with
 * rcl_domain_free() of the parent (creating children of one tree from
 * several threads at once is fine: the tree's lock orders them).
 * Return: 0; -EINVAL for NULL arguments, a zero budget (roots), too many partitions
 * (more than RCL_SHRINKER_MAX_PARTITIONS), an unknown mode, policy or flag,
 * a swappiness above 200, a scale factor above 10000, dirty ratios above
 * 100, an unknown flush policy, a flusher without a wakeup callback,
 * @max_lruvecs above RCL_LRUVEC_MAX_IDS (no more lruvecs can exist), or an
 * allocator without both callbacks; -ENOMEM.  A @dirty_timeout_ns beyond
 * the clock's range means no timeout.  With a @parent, also -EINVAL for a
 * tree deeper than RCL_DOMAIN_MAX_DEPTH, a @charge_stock, the flag
 * RCL_DOMAIN_RECURSIVE_PROT, a non-zero @nr_partitions other than the
 * parent's or a @clock other than the parent's; without one, -EINVAL for
 * a zero @budget or any protection; -EDEADLK (nothing created) for a child
 * created from a callback of any reclaim pass (a pass holds its tree's
 * lock for reading; the child would wait for it).
 */
RCL_API int rcl_domain_new(const struct rcl_domain_config *cfg,
			   struct rcl_domain **out);

/**
 * rcl_domain_free() - free a domain
 * @d: the domain; NULL is a no-op
 *
 * Stops the background reclaimer if it runs.
 *
 * Context: any thread, not concurrently with other calls on @d.
 * A child's usage that is still charged when it is freed is uncharged
 * from its ancestors.
 *
 * Return: 0; -EBUSY (nothing freed) while lruvecs are attached, shrinkers
 * remain in its registry, a pressure monitor holds it (pressure.h), or it
 * has children; -EDEADLK (nothing done) for a child freed from a callback
 * of any reclaim pass, or any domain from a callback of its own tree's;
 * -EDEADLK (nothing done, checked first) from a callback run by @d's
 * reclaimer or flusher thread, or by a write-back of @d
 * (rcl_domain_writeback_all()).
 *
 * Bad input: It stops the background reclaimer and the flusher thread first.
 * -EDEADLK (nothing done) from its own reclaimer or flusher thread, or from a
 * write callback.
 */
RCL_API int rcl_domain_free(struct rcl_domain *d);

/**
 * rcl_domain_attach() - make a domain reclaim from an lruvec
 * @d: the domain
 * @lv: an initialised lruvec with an evict callback
 * @partition: its partition
 *
 * Context: any thread, while other threads reclaim.
 * Return: 0; -EINVAL for NULL, an lruvec without an evict callback or a
 * partition out of range; -EBUSY if @lv is attached already; -ENOSPC if
 * max_lruvecs are attached.
 *
 * Bad input: -EINVAL also for an uninitialised lruvec; -EBUSY also if the
 * lruvec is attached to another domain.
 */
RCL_API int rcl_domain_attach(struct rcl_domain *d, struct rcl_lruvec *lv,
			      unsigned partition);

/**
 * rcl_domain_detach() - stop reclaiming from an lruvec
 * @d: the domain
 * @lv: an attached lruvec
 *
 * Waits until no reclaim pass is inside @lv.
 *
 * Context: any thread, but not from a callback (evict or shrinker) run by
 * this domain's reclaim: two callbacks detaching each other's lruvec would
 * wait for each other.  From a callback of another domain's pass it does
 * not wait either: while a pass is inside @lv it refuses.
 * Return: 0; -EINVAL for NULL; -ENOENT if not attached; -EDEADLK (nothing
 * done) from a callback during a reclaim pass of this domain, and from a
 * callback of another domain's pass while a pass is inside @lv (try again
 * later, outside the callback).
 */
RCL_API int rcl_domain_detach(struct rcl_domain *d, struct rcl_lruvec *lv);

/**
 * rcl_domain_registry() - the domain's shrinker registry
 * @d: the domain
 *
 * Create shrinkers in it with rcl_shrinker_new(); free them before the
 * domain.
 *
 * Context: any thread.
 * Return: the registry; NULL for NULL.
 */
RCL_API struct rcl_shrinker_registry *rcl_domain_registry(struct rcl_domain *d);

/**
 * rcl_domain_charge() - account for new memory, reclaiming if needed
 * @d: the domain
 * @amount: how much, in the domain's unit
 * @context: the caller's capability mask; direct reclaim needs
 *	RCL_CTX_MAY_BLOCK and passes the mask to the callbacks
 * @overshoot: if not NULL, receives how far usage exceeds the budget after
 *	the charge (soft mode; 0 otherwise)
 *
 * With charge stocks (&struct rcl_domain_config.charge_stock), a charge the
 * thread's stock holds is served from it (usage does not move: the stock
 * was charged when taken); one it does not takes the charge and a full
 * stock from usage at once, if that leaves usage at least the high
 * watermark below the budget; otherwise it is made as without stocks,
 * after taking every thread's stock back if it would leave headroom below
 * low.  Overshoot, -ENOMEM, -EOVERFLOW, reclaim and the counters are
 * therefore decided as without stocks; a charge served from a stock, or
 * with a stock refill, is never over budget (overshoot 0).
 *
 * Context: any thread, including evict and shrinker callbacks (a charge from
 * a callback of this domain's reclaim does not reclaim recursively, and is
 * never stocked; nor does one from an evict callback of an lruvec attached
 * to this domain's tree, however that lruvec is being shrunk, e.g. by the
 * application's own rcl_lruvec_shrink_inactive()); may run callbacks.
 * Return: 0; -EINVAL for NULL; -ENOMEM (strict mode) if the charge would
 * leave usage above the budget even after reclaim (and after taking back
 * every stock), or is larger than the whole budget (then nothing is evicted
 * for it); -EOVERFLOW if usage would wrap around 64 bits (decided on the
 * usage before any reclaim: nothing is evicted for it).  Nothing is
 * charged on failure.  An -ENOMEM, also without RCL_CTX_MAY_BLOCK, wakes
 * the background reclaimer (the root's) while the root's headroom is below
 * high, for a child level's refusal only if the root's charge would have
 * left it below low; not for a charge larger than a whole budget (see the
 * DOC above: "fails with -ENOMEM", and "Trees of domains").
 *
 * Bad input: *@overshoot is 0 on failure.
 */
RCL_API int rcl_domain_charge(struct rcl_domain *d, uint64_t amount,
			      uint64_t context, uint64_t *overshoot);

/**
 * rcl_domain_uncharge() - account for freed memory
 * @d: the domain
 * @amount: how much
 *
 * Uncharging more than is charged clamps usage to 0.  With charge stocks, an
 * uncharge by a thread whose stock serves @d goes into the stock; a stock
 * that would grow past its size keeps half and gives the rest back to usage
 * in one step.  An uncharge from a callback of @d's reclaim goes to usage,
 * so that the pass sees its progress.
 *
 * Context: any thread, lock-free; typically from evict callbacks.
 * Return: 0; -EINVAL for NULL.
 *
 * Bad input: with a stock, an uncharge of more than was charged is held in
 * the stock (up to its size) and clamped only when the stock goes back to
 * usage; until then usage reads lower than without stocks, by at most the
 * stock's size.  Strict mode still never lets usage exceed the budget.
 */
RCL_API int rcl_domain_uncharge(struct rcl_domain *d, uint64_t amount);

/**
 * rcl_domain_usage() - the charged total
 * @d: the domain
 *
 * With charge stocks, what the stocks hold counts as charged (as in memcg):
 * the sum of the charges less the uncharges, plus at most budget /
 * RCL_CHARGE_STOCKS_SHARE held by stocks; exact after
 * rcl_domain_drain_stocks() while no thread charges @d.
 *
 * Context: lock-free.
 * Return: the usage; 0 for NULL.
 */
RCL_API uint64_t rcl_domain_usage(const struct rcl_domain *d);

/**
 * rcl_domain_drain_stocks() - take back every thread's charge stock
 * @d: the domain
 *
 * Gives what every thread's stock of @d, or of a domain of its subtree,
 * holds back to the usages it was charged to, and detaches the stocks (a
 * thread's next charge takes a new one if there is room).  The library does this itself before anything depends on the
 * headroom (see the DOC above); call it for an exact rcl_domain_usage().
 * Without stocks, nothing to do.
 *
 * Context: any thread, including callbacks; takes each stock's lock
 * briefly (the owners' lock-free paths never wait for it).
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_domain_drain_stocks(struct rcl_domain *d);

/**
 * rcl_domain_budget() - the budget
 * @d: the domain
 *
 * Context: lock-free.
 * Return: the budget; 0 for NULL.
 */
RCL_API uint64_t rcl_domain_budget(const struct rcl_domain *d);

/**
 * rcl_domain_set_budget() - resize the budget
 * @d: the domain
 * @budget: the new budget (> 0)
 *
 * Recomputes the watermarks from the scale factor, and the size of the
 * charge stocks, and takes every stock back.  If usage now leaves less
 * headroom than low, reclaim starts: the background reclaimer is woken if it
 * runs, otherwise the caller reclaims towards high (bounded).
 *
 * Context: any thread; may run callbacks.
 * Return: 0; -EINVAL for NULL or 0.
 */
RCL_API int rcl_domain_set_budget(struct rcl_domain *d, uint64_t budget);

/**
 * rcl_domain_watermarks() - the current watermarks
 * @d: the domain
 * @out: receives them
 *
 * Context: lock-free.  The three values were current together: a concurrent
 * rcl_domain_set_budget() or rcl_domain_set_watermarks() is seen whole or
 * not at all (a sequence count; the read retries only while one overlaps it).
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_domain_watermarks(const struct rcl_domain *d,
				  struct rcl_watermarks *out);

/**
 * rcl_domain_set_watermarks() - set the watermarks explicitly
 * @d: the domain
 * @wm: min < low < high <= budget
 *
 * They hold until the next rcl_domain_set_budget().
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL, watermarks out of order, high above the
 * budget (checked under the domain's lock, against the budget of that
 * moment), or a child (a tree's watermarks are its root's; a child's
 * rcl_domain_watermarks() are derived from its budget and used by nothing).
 */
RCL_API int rcl_domain_set_watermarks(struct rcl_domain *d,
				      const struct rcl_watermarks *wm);

/**
 * rcl_domain_set_swappiness() - set the type bias
 * @d: the domain
 * @swappiness: 0..200
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL or a value out of range.
 */
RCL_API int rcl_domain_set_swappiness(struct rcl_domain *d, unsigned swappiness);

/**
 * struct rcl_reclaim_result - what a domain reclaim did
 * @nr_to_reclaim: the goal, in objects
 * @nr_reclaimed: LRU objects freed
 * @weight_reclaimed: their weight
 * @nr_scanned: inactive LRU objects scanned
 * @slab_freed: objects freed by shrinkers (the sum of their scan_objects
 *	answers; not counted toward the goal: a shrinker's objects need not
 *	be charged to this domain)
 * @last_round_lists: lists scanned in the last round of the last lruvec
 * @priority: the lowest priority reached
 * @slab_weight: the weight shrinkers freed for this domain: what their
 *	callbacks rcl_domain_uncharge()d from it on the reclaiming thread
 *	during the passes, plus what they reported in sc->weight_freed
 * @slab_reclaimed: @slab_weight in objects, at the average object weight of
 *	the attached lruvecs when the reclaim began (1 unit of weight per
 *	object when none is attached or they are empty); counted toward the
 *	goal with @nr_reclaimed
 *
 * The goal is met when @nr_reclaimed + @slab_reclaimed reaches
 * @nr_to_reclaim.  A pass stops at the goal even inside the shrinker walk,
 * so beyond it a pass frees at most one scan_objects batch of one shrinker
 * (the one whose batch met it).  When the lruvecs alone meet a pass's goal,
 * the shrinkers are still shrunk at that priority's full pressure, as in the
 * kernel, so that slab-like caches age with the LRUs.
 *
 * Members are only ever added at the end; until 1.0 (soname 1), programs
 * are rebuilt when it grows.
 */
struct rcl_reclaim_result {
	uint64_t nr_to_reclaim;
	uint64_t nr_reclaimed;
	uint64_t weight_reclaimed;
	uint64_t nr_scanned;
	uint64_t slab_freed;
	unsigned last_round_lists;
	int priority;
	uint64_t slab_weight;
	uint64_t slab_reclaimed;
};

/**
 * rcl_domain_reclaim() - direct reclaim, explicitly
 * @d: the domain
 * @nr_to_reclaim: the goal in objects (> 0)
 * @context: the capability mask
 * @res: if not NULL, receives the result
 *
 * Priority 12 down to 0 over every partition until the goal is met, as the
 * kernel's do_try_to_free_pages(); counts as direct reclaim (allocstall).
 * What the shrinkers free for the domain counts toward the goal (see
 * &struct rcl_reclaim_result: @slab_reclaimed), as the kernel counts slab
 * pages freed during a pass (reclaim_state), and a pass stops once the goal
 * is met, also in the middle of the shrinker walk.
 *
 * Context: any thread except this domain's own evict callbacks (-EDEADLK);
 * runs callbacks.
 * Return: 0 (even if the goal was not met: see @res); -EINVAL for NULL or a
 * zero goal; -EDEADLK from within a reclaim pass of @d's tree (its evict
 * and shrinker callbacks, and the callbacks of passes run from those), and
 * from the evict callback of an lruvec attached to @d's subtree however it
 * is being shrunk (rcl_lruvec_shrink_inactive(), rcl_scan_lruvec()), also
 * from a shrink nested in that callback: the reclaim would shrink that
 * lruvec again from inside its own callback.
 */
RCL_API int rcl_domain_reclaim(struct rcl_domain *d, uint64_t nr_to_reclaim,
			       uint64_t context, struct rcl_reclaim_result *res);

/**
 * rcl_domain_reclaimer_start() - start the background reclaimer thread
 * @d: the domain
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL, or for a child (a tree's background
 * reclaimer is its root's); -EBUSY if it runs already; -EAGAIN if the
 * thread cannot be created (nothing changes: no wakeup is left pending or
 * counted).  rcl_domain_reclaimer_stop() of a child returns 0 (none runs).
 */
RCL_API int rcl_domain_reclaimer_start(struct rcl_domain *d);

/**
 * rcl_domain_reclaimer_stop() - stop the background reclaimer and join it
 * @d: the domain
 *
 * Two stops at once (rcl_domain_free() is one): one joins the thread, the
 * other waits until it has; both return 0.  rcl_domain_reclaimer_start()
 * returns -EBUSY until the thread is joined.
 *
 * Context: any thread but the reclaimer's own callbacks (-EDEADLK).
 * Return: 0 (also if it was not running); -EINVAL for NULL; -EDEADLK.
 */
RCL_API int rcl_domain_reclaimer_stop(struct rcl_domain *d);

/**
 * rcl_domain_wakeup() - wake the background reclaimer, even if hopeless
 * @d: the domain
 *
 * Context: any thread.
 * Return: 0; -EINVAL for NULL.
 *
 * Bad input: Without a running reclaimer it only clears the hopeless state;
 * on a child (which has none), only the child's own, which nothing uses.
 */
RCL_API int rcl_domain_wakeup(struct rcl_domain *d);

/**
 * struct rcl_vmstat - a domain's counters, with the kernel's vmstat names
 * @pgscan_kswapd: inactive objects scanned by the background reclaimer
 * @pgscan_direct: ... by direct reclaim
 * @pgsteal_kswapd: objects freed by the background reclaimer
 * @pgsteal_direct: ... by direct reclaim
 * @pgrefill: active objects scanned
 * @pgactivate: objects activated by reclaim
 * @pgdeactivate: objects deactivated by reclaim
 * @pgrotated: inactive objects reclaim met and kept
 * @slabs_scanned: objects scanned by shrinkers
 * @slabs_freed: objects freed by shrinkers
 * @allocstall: direct reclaim entries
 * @pageoutrun: background reclaimer runs
 * @kswapd_wakeups: wakeups of the background reclaimer
 * @kswapd_failures: background runs that freed nothing
 * @kswapd_hopeless: times the domain became hopeless
 * @charge_failures: charges refused (strict) with -ENOMEM
 * @charge_overshoots: charges admitted over budget (soft)
 * @nr_dirty_scanned: dirty or writeback objects reclaim met (not freed)
 * @nr_unqueued_dirty: of which dirty and not under writeback
 * @nr_writeback_scanned: of which under writeback
 * @nr_immediate: writeback objects met a second time
 * @flush_requests: flush requests made (reclaim, background, explicit)
 * @flush_requests_vmscan: of which by reclaim (the trigger)
 * @flush_coalesced: requests merged into a pending one
 * @flusher_wakeups: requests delivered to the flusher
 * @writeback_throttled: reclaim waits for writeback to progress
 * @writeback_throttle_timeouts: of which ended by the 100 ms timeout
 * @dirty_throttled: rcl_domain_balance_dirty() waits
 * @dirty_throttle_timeouts: of which ended by the timeout
 * @writes_from_reclaim: dirty objects handed to the evict callback to write
 *	(RCL_DOMAIN_RECLAIM_WRITES only)
 * @writes_flusher: objects written by the library's flusher thread or
 *	rcl_domain_writeback_all()
 */
struct rcl_vmstat {
	uint64_t pgscan_kswapd;
	uint64_t pgscan_direct;
	uint64_t pgsteal_kswapd;
	uint64_t pgsteal_direct;
	uint64_t pgrefill;
	uint64_t pgactivate;
	uint64_t pgdeactivate;
	uint64_t pgrotated;
	uint64_t slabs_scanned;
	uint64_t slabs_freed;
	uint64_t allocstall;
	uint64_t pageoutrun;
	uint64_t kswapd_wakeups;
	uint64_t kswapd_failures;
	uint64_t kswapd_hopeless;
	uint64_t charge_failures;
	uint64_t charge_overshoots;
	uint64_t nr_dirty_scanned;
	uint64_t nr_unqueued_dirty;
	uint64_t nr_writeback_scanned;
	uint64_t nr_immediate;
	uint64_t flush_requests;
	uint64_t flush_requests_vmscan;
	uint64_t flush_coalesced;
	uint64_t flusher_wakeups;
	uint64_t writeback_throttled;
	uint64_t writeback_throttle_timeouts;
	uint64_t dirty_throttled;
	uint64_t dirty_throttle_timeouts;
	uint64_t writes_from_reclaim;
	uint64_t writes_flusher;
};

/**
 * rcl_domain_vmstat() - a snapshot of a domain's counters
 * @d: the domain
 * @out: receives them
 *
 * Context: lock-free; read one by one.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_domain_vmstat(const struct rcl_domain *d, struct rcl_vmstat *out);

/**
 * rcl_domain_vmstat_format() - the counters as text, "/proc/vmstat" style
 * @d: the domain
 * @buf: the buffer (may be NULL if @size is 0)
 * @size: its size
 *
 * One "name value" line per counter, followed by usage, budget and the
 * watermarks, like snprintf(): the output is truncated to @size - 1 bytes.
 *
 * Context: lock-free.
 * Return: the length of the full text (excluding the NUL), or -EINVAL for a
 * NULL domain or a NULL buffer with a non-zero size.
 */
RCL_API int rcl_domain_vmstat_format(const struct rcl_domain *d, char *buf,
				     size_t size);

/**
 * struct rcl_domain_limits - a child's limits and protection
 * @limit_high: the throttle limit (memory.high); 0 or UINT64_MAX = none
 * @protect_low: best-effort protection (memory.low); 0 = none
 * @protect_min: hard protection (memory.min); 0 = none
 *
 * The budget, the hard limit, has its own calls (rcl_domain_set_budget()).
 * No order is required between them (as in cgroup v2: a protect_min above
 * protect_low makes the low one irrelevant).
 */
struct rcl_domain_limits {
	uint64_t limit_high;
	uint64_t protect_low;
	uint64_t protect_min;
};

/**
 * rcl_domain_set_limits() - change a domain's limits and protection
 * @d: the domain
 * @lim: the new values
 *
 * A limit_high below the current usage makes the caller reclaim the
 * subtree down to it (bounded; if it cannot, a ``high`` event is counted
 * and the next charges try again).  The new protection applies from the
 * next reclaim pass.
 *
 * Context: any thread but a callback of a reclaim pass of @d's tree; may
 * run callbacks.
 * Return: 0; -EINVAL for NULL, or protection on a root (a root is never
 * protected from its own pressure); -EDEADLK from a callback of a reclaim
 * pass of @d's tree (nothing changed).
 */
RCL_API int rcl_domain_set_limits(struct rcl_domain *d,
				  const struct rcl_domain_limits *lim);

/**
 * rcl_domain_limits() - a domain's current limits and protection
 * @d: the domain
 * @out: receives them (limit_high UINT64_MAX when none)
 *
 * Context: lock-free; the three values are read one by one.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_domain_limits(const struct rcl_domain *d,
			      struct rcl_domain_limits *out);

/**
 * rcl_domain_parent() - a domain's parent
 * @d: the domain
 *
 * Context: lock-free (the parent never changes).
 * Return: the parent; NULL for a root or NULL.
 */
RCL_API struct rcl_domain *rcl_domain_parent(const struct rcl_domain *d);

/**
 * rcl_domain_effective_protection() - protection relative to a reclaim target
 * @target: the level whose pressure is relieved (an ancestor of @d, or @d)
 * @d: the domain
 * @emin: if not NULL, receives the effective protect_min
 * @elow: if not NULL, receives the effective protect_low
 *
 * Computes, from the current usages, what a reclaim pass of @target's
 * subtree would use for @d (see "Trees of domains" above); 0 and 0 for
 * @d == @target.
 *
 * Context: any thread; takes the tree's lock for reading.
 * Return: 0; -EINVAL for NULL, or a @target that is not @d nor one of its
 * ancestors.
 */
RCL_API int rcl_domain_effective_protection(const struct rcl_domain *target,
					    const struct rcl_domain *d,
					    uint64_t *emin, uint64_t *elow);

/**
 * struct rcl_domain_events - memory.events of a domain
 * @low: reclaim sweeps (one priority over the subtree) that reclaimed it
 *	while it was at or below its effective protect_low, because nothing
 *	else was reclaimable
 * @high: charges that left it above its limit_high
 * @max: charges that found it (a child) at its budget, so that its subtree
 *	was reclaimed, counted once per charge; and budget changes it could
 *	not reclaim down to
 * @oom: charges it refused (strict; after reclaim where reclaim could
 *	help) or admitted over its budget (soft)
 */
struct rcl_domain_events {
	uint64_t low;
	uint64_t high;
	uint64_t max;
	uint64_t oom;
};

/**
 * rcl_domain_events() - a domain's events
 * @d: the domain
 * @subtree: false: its own (memory.events.local); true: summed over its
 *	subtree (memory.events)
 * @out: receives them
 *
 * The subtree sums keep the events of freed descendants, as memory.events
 * keeps a removed cgroup's in its parent's; the counters of
 * rcl_domain_vmstat_subtree() likewise.
 *
 * Context: lock-free for its own; the subtree takes the tree's lock for
 * reading.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_domain_events(const struct rcl_domain *d, bool subtree,
			      struct rcl_domain_events *out);

/**
 * rcl_domain_vmstat_subtree() - the counters summed over a subtree
 * @d: the domain
 * @out: receives, per counter, the sum over @d and its descendants
 *
 * Context: takes the tree's lock for reading; counters read one by one.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_domain_vmstat_subtree(const struct rcl_domain *d,
				      struct rcl_vmstat *out);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_DOMAIN_H */
