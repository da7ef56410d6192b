/* SPDX-License-Identifier: MIT */
/*
 * The shrinker registry, after the kernel's mm/shrinker.c.
 *
 * Arithmetic.  do_shrink() is the kernel's do_shrink_slab() under three
 * policies (see enum rcl_shrink_policy in the header): the modern form
 * exactly, the 2014 form with its windup clamp, and the library's default,
 * which keeps pressure in 16.16 fixed point so that small caches accumulate
 * fractions of an object, caps the backlog at half the cache, and works a
 * backlog off at a bounded rate.  The backlog is claimed with an atomic
 * exchange and the remainder returned with an atomic add, so concurrent
 * reclaimers split it instead of each doing it.
 *
 * Where the backlog lives.  The kernel keeps nr_deferred in one word per node,
 * so every reclaimer exchanges and adds it on every call: with two threads
 * walking the same shrinkers, each visit moved that line between the CPUs
 * (rcl-bench shrink-scale: 55 -> 170 ns per visit).  Most of that traffic
 * is a sub-batch remainder: the part of a call's own pressure too small for
 * one more scan_objects call, which the next call does.  So a remainder
 * smaller than one batch of the call that left it, from a call that was not
 * stopped, is kept on the calling thread's stripe of the shrinker (a word per
 * partition next to its statistics) and claimed back by that thread's next
 * call; only larger remainders and work that a context refused (STOP), the
 * real backlog, go to the shared word.  Readers add the stripes in.  A
 * thread owns its stripe while it lives (a pthread key gives it back at
 * exit); the stripe of a thread that exited (or, in a child after fork(),
 * that is not in the child) is *orphaned*, and every call takes over the
 * orphaned stripes' remainders of the shrinker it visits until a new thread
 * owns the stripe (and so takes them over itself).
 *
 * Concurrency.  The kernel walks its shrinker list under RCU and pins each
 * shrinker with a refcount.  User space has no RCU, and a registry mutex per
 * step would make every reclaimer bounce one cache line (the 2018 "47%
 * down_read_trylock" profile).  Instead each registered shrinker occupies a
 * *slot* in an append-only table of slots that live as long as the
 * registry: { shrinker pointer, count of walkers inside }.  A walker
 * increments the slot's count, then reads the pointer; free() clears the
 * pointer, then waits for the count to reach zero.  Both sides use seq_cst
 * operations, so either the walker sees the cleared pointer and skips, or the
 * freer sees the walker's count and waits (a Dekker handshake); slots are
 * never freed while the registry lives, so a walker can always touch one.
 * Reclaimers therefore take no lock at all, and only write the slots and
 * shrinkers they actually call, and of those, in the common case, only
 * their own stripes (pin counts, statistics, remainders).  Registration and
 * free take the registry mutex, which reclaimers never take (except to wake
 * a waiting freer).
 */
#include "internal.h"
#include "probes.h"
#include "refusal.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <reclaim/shrinker.h>

/* ------------------------------------------------------------------------- */
/* Types                                                                      */
/* ------------------------------------------------------------------------- */

#define SLOTS_PER_CHUNK 64u
#define MAX_CHUNKS (RCL_SHRINKER_MAX / SLOTS_PER_CHUNK)
#define FP_SHIFT 16
/* Freeable counts above this are treated as this in the arithmetic. */
#define FREEABLE_MAX (1ul << 40)

/*
 * Per-thread stripes.  A thread always uses the same stripe of a slot's pin
 * count and of a shrinker's counters and remainders, so that two reclaimers
 * walking the same shrinkers do not pass those cache lines back and forth
 * (measured by rcl-bench shrink-scale: the shared counters made two threads
 * slower than one).  Readers sum the stripes.
 *
 * Up to NSTRIPES threads own a stripe each.  An owner is the only writer of
 * its stripe's statistics, so it updates them with a load and a store, not
 * a locked add; its remainders, which others may take over or drop, stay
 * locked.  Threads beyond NSTRIPES (or that cannot register a key) share one
 * more stripe, SHARED_STRIPE, where every write is locked and whose
 * remainders every call takes over, as if orphaned.
 */
#define NSTRIPES 8u
#define SHARED_STRIPE NSTRIPES
#define NSTRIPES_ALL (NSTRIPES + 1)
/*
 * A shrinker's header, its shared backlogs and its stripes start on pairs
 * of their own, as do the registry's allocations: the adjacent-line
 * prefetcher fetches 128-byte pairs, so a written line next to a
 * read-mostly line in one pair still bounces.
 */
#define PAIR 128
/*
 * A thread's stripe of a shrinker, and its row of a chunk's pin counts,
 * are STRIPE_GAP bytes from the next thread's.  A pair was not enough on
 * this project's machine (AMD EPYC, whose L2 prefetchers fetch further
 * than the adjacent line): in five alternating runs, two threads walking
 * one registry of 64 shrinkers ran at 1.09 to 1.54 times one thread with
 * stripes 128 bytes apart, 1.60 to 2.16 with 512 (rcl-bench shrink-scale,
 * bench/README.md).
 */
#define STRIPE_GAP 512

/*
 * A chunk of SLOTS_PER_CHUNK slots, stored by column: the shrinker pointers
 * (read-mostly: written at register and free only) together, and each
 * stripe's pin counts for all the slots together, a row of its own
 * STRIPE_GAP bytes from the next.  A walk then reads 8 pointers per line
 * and writes only its own rows.
 */
struct chunk {
	void *raw;		/* what the allocator returned */
	bool used[SLOTS_PER_CHUNK];	/* registry mutex: slot taken */
	_Atomic(struct rcl_shrinker *) ptr[SLOTS_PER_CHUNK]
		__attribute__((aligned(PAIR)));
	struct {
		atomic_uint n[SLOTS_PER_CHUNK];	/* walkers inside */
	} __attribute__((aligned(STRIPE_GAP))) refs[NSTRIPES_ALL];
};

/* A slot: its chunk and its index there. */
struct slot {
	struct chunk *c;
	unsigned j;
};

struct rcl_shrinker_registry {
	pthread_mutex_t lock;
	pthread_cond_t released;	/* a slot's walker count reached 0 */
	unsigned nr_partitions;
	enum rcl_shrink_policy policy;
	void (*trace)(void *arg, const struct rcl_shrink_trace *ev);
	void *trace_arg;
	struct rcl_allocator alloc;
	atomic_uint high;		/* slots [0, high) may be in use */
	atomic_uint nr_shrinkers;	/* allocated and not freed */
	atomic_uint nr_freeing;		/* frees waiting for walkers */
	_Atomic(struct chunk *) chunks[MAX_CHUNKS];
	/* Every registry of the process, for fork() (all_regs_lock). */
	struct rcl_shrinker_registry *all_prev, *all_next;
};

/*
 * One thread's stripe of a shrinker: its statistics and, per backlog, the
 * sub-batch remainder it keeps (same unit as the backlog).  Stripes are
 * struct rcl_shrinker.stripe_size apart, a multiple of STRIPE_GAP.
 */
struct stripe {
	atomic_ullong calls, scanned, freed, stops;
	atomic_ulong rem[];
};

struct rcl_shrinker {
	void *raw;		/* what the allocator returned */
	struct rcl_shrinker_registry *reg;
	const struct rcl_shrinker_ops *ops;
	void *priv;
	char name[RCL_SHRINKER_NAME_LEN];
	unsigned long seeks;
	unsigned long batch;
	unsigned flags;
	unsigned nr_backlogs;
	atomic_int slot;		/* -1: not registered; set under the mutex */
	/*
	 * The shared backlogs (objects, or 16.16 fixed point; claimed by
	 * xchg, returned by add), on pairs of their own after this header,
	 * then the NSTRIPES_ALL stripes.
	 */
	atomic_ulong *backlog;
	char *stripes;
	size_t stripe_size;
};

#define RCL__ROUND_PAIR(n) (((n) + PAIR - 1) / PAIR * PAIR)

static struct stripe *stripe_of(const struct rcl_shrinker *s, unsigned i)
{
	return (struct stripe *)(s->stripes + (size_t)i * s->stripe_size);
}

/* ------------------------------------------------------------------------- */
/* Stripe ownership                                                           */
/* ------------------------------------------------------------------------- */

static atomic_uint stripes_owned;	/* bit i: a live thread owns stripe i */
/* bit i: its owner exited; bit SHARED_STRIPE: some thread shares it */
static atomic_uint stripes_orphaned;
static RCL__TLS unsigned tls_stripe;	/* stripe + 1; 0: not assigned */
static RCL__TLS bool tls_stripe_owned;	/* the only writer of its stats */
/*
 * The key destructor gave this thread's stripe up: a later destructor of
 * the application's (its key is newer, or it asked for another round)
 * that shrinks uses the shared stripe.  A stripe owned then would stay
 * owned when the rounds end, by no thread, its remainders never taken over.
 */
static RCL__TLS bool tls_stripe_gone;
static pthread_once_t stripe_once = PTHREAD_ONCE_INIT;
static pthread_key_t stripe_key;
static bool stripe_key_ok;

/*
 * The owner exits: orphan its stripe first, then give it up, so that a
 * thread that takes it next clears the orphan bit after this set it.
 */
static void stripe_release(void *arg)
{
	unsigned bit = 1u << ((unsigned)(uintptr_t)arg - 1);

	tls_stripe = 0;
	tls_stripe_owned = false;
	tls_stripe_gone = true;
	atomic_fetch_or(&stripes_orphaned, bit);
	atomic_fetch_and(&stripes_owned, ~bit);
}

static void stripe_make_key(void)
{
	stripe_key_ok = pthread_key_create(&stripe_key, stripe_release) == 0;
}

/* Out of line, so that my_stripe()'s fast path stays inline in the walk. */
static __attribute__((noinline, cold)) unsigned stripe_assign(void)
{
	unsigned owned, i;

	pthread_once(&stripe_once, stripe_make_key);
	owned = atomic_load(&stripes_owned);
	while (stripe_key_ok && !tls_stripe_gone &&
	       owned != (1u << NSTRIPES) - 1) {
		i = (unsigned)__builtin_ctz(~owned);
		if (!atomic_compare_exchange_weak(&stripes_owned, &owned,
						  owned | 1u << i))
			continue;
		if (pthread_setspecific(stripe_key,
					(void *)(uintptr_t)(i + 1)) == 0) {
			/* Its remainders are ours now: no one else takes them. */
			atomic_fetch_and(&stripes_orphaned, ~(1u << i));
			tls_stripe_owned = true;
			return i;
		}
		atomic_fetch_and(&stripes_owned, ~(1u << i));
		break;
	}
	/*
	 * Share the extra stripe.  No thread owns it, so mark it for every
	 * call to take its remainders over (for good: it is not worth
	 * counting who still uses it).
	 */
	tls_stripe_owned = false;
	if (!(atomic_load_explicit(&stripes_orphaned, memory_order_relaxed) &
	      (1u << SHARED_STRIPE)))
		atomic_fetch_or(&stripes_orphaned, 1u << SHARED_STRIPE);
	return SHARED_STRIPE;
}

static inline __attribute__((always_inline)) unsigned my_stripe(void)
{
	if (unlikely(!tls_stripe))
		tls_stripe = stripe_assign() + 1;
	return tls_stripe - 1;
}

/* Count one more walker of slot @sl, on the calling thread's stripe. */
static void slot_pin(struct slot sl)
{
	atomic_fetch_add(&sl.c->refs[my_stripe()].n[sl.j], 1);
}

static unsigned slot_refs(struct slot sl)
{
	unsigned i, n = 0;

	for (i = 0; i < NSTRIPES_ALL; i++)
		n += atomic_load(&sl.c->refs[i].n[sl.j]);
	return n;
}

/*
 * The shrinkers whose callbacks the calling thread is inside, innermost
 * first: rcl_shrinker_free() on one of them would wait for itself.
 */
struct cb_frame {
	const struct rcl_shrinker *s;
	struct cb_frame *up;
};
static RCL__TLS struct cb_frame *tls_frames;

/* ------------------------------------------------------------------------- */
/* Memory                                                                     */
/* ------------------------------------------------------------------------- */

/*
 * Zeroed memory from the registry's allocator (which only promises
 * max_align_t), aligned to STRIPE_GAP (struct chunk's rows ask for it), in
 * whole pairs, so that nothing else the allocator hands out shares a pair
 * with it; *@raw receives the pointer to free.
 */
static void *reg_alloc(struct rcl_shrinker_registry *reg, size_t size,
		       void **raw)
{
	size_t whole = (size + PAIR - 1) / PAIR * PAIR;
	char *p = rcl__alloc(&reg->alloc, whole + STRIPE_GAP);

	*raw = p;
	if (!p)
		return NULL;
	p += STRIPE_GAP - (uintptr_t)p % STRIPE_GAP;
	memset(p, 0, whole);
	return p;
}

static struct slot slot_at(struct rcl_shrinker_registry *reg, unsigned i)
{
	struct slot sl = {
		atomic_load_explicit(&reg->chunks[i / SLOTS_PER_CHUNK],
				     memory_order_acquire),
		i % SLOTS_PER_CHUNK,
	};

	return sl;
}

/* ------------------------------------------------------------------------- */
/* Registry                                                                   */
/* ------------------------------------------------------------------------- */

RCL_API const char *rcl_shrink_policy_name(enum rcl_shrink_policy policy)
{
	switch (policy) {
	case RCL_SHRINK_POLICY_DEFAULT:
		return "rcl-default";
	case RCL_SHRINK_POLICY_KERNEL_MODERN:
		return "kernel-modern";
	case RCL_SHRINK_POLICY_KERNEL_2014:
		return "kernel-2014";
	}
	return NULL;
}

/*
 * fork(): the child has only the thread that forked, so the slot pins that
 * other threads' walks held are nobody's there, and a free in the child
 * would wait for them for ever.  The child drops every pin and every
 * waiting free's announcement, then takes again the forking thread's own
 * (one per callback frame it is inside: each callback runs under its
 * walk's pin of the shrinker's slot), as the domains do with their slot
 * pins.  Registries are listed under all_regs_lock, held across the fork,
 * and so is each registry's lock (taken after all_regs_lock, the only
 * place two are held at once; nothing is called under a registry's lock),
 * so that the child never finds a registration or a free half done.
 *
 * The stripes that the other threads owned are nobody's in the child
 * either, and their key destructors never run there: without more, their
 * remainders would be counted by rcl_shrinker_backlog() but claimed by no
 * call, and the stripes never owned again.  The child orphans them, as
 * those threads' exits would have: every call then takes their remainders
 * over, until a new thread owns the stripe (and takes them over itself).
 * Two atomic operations, no lock and no allocation.
 */
static pthread_mutex_t all_regs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t all_regs_once = PTHREAD_ONCE_INIT;
static struct rcl_shrinker_registry *all_regs;

static void all_regs_prepare(void)
{
	struct rcl_shrinker_registry *reg;

	pthread_mutex_lock(&all_regs_lock);
	for (reg = all_regs; reg; reg = reg->all_next)
		pthread_mutex_lock(&reg->lock);
}

static void all_regs_parent(void)
{
	struct rcl_shrinker_registry *reg;

	for (reg = all_regs; reg; reg = reg->all_next)
		pthread_mutex_unlock(&reg->lock);
	pthread_mutex_unlock(&all_regs_lock);
}

static void all_regs_child(void)
{
	struct rcl_shrinker_registry *reg;
	const struct cb_frame *f;
	unsigned k, i, j, mine = 0, others;

	/* Orphan first, then give up, as stripe_release() does. */
	if (tls_stripe && tls_stripe_owned)
		mine = 1u << (tls_stripe - 1);
	others = atomic_load(&stripes_owned) & ~mine;
	atomic_fetch_or(&stripes_orphaned, others);
	atomic_fetch_and(&stripes_owned, ~others);

	for (reg = all_regs; reg; reg = reg->all_next) {
		for (k = 0; k < MAX_CHUNKS; k++) {
			struct chunk *c = atomic_load(&reg->chunks[k]);

			if (!c)
				continue;
			for (i = 0; i < NSTRIPES_ALL; i++)
				for (j = 0; j < SLOTS_PER_CHUNK; j++)
					atomic_store(&c->refs[i].n[j], 0);
		}
		atomic_store(&reg->nr_freeing, 0);
		/*
		 * The parent's threads waiting in rcl_shrinker_free() on
		 * @released (or holding @lock) are not in the child, but the
		 * condition still counts them: glibc's pthread_cond_destroy()
		 * in the child's rcl_shrinker_registry_free() would wait for
		 * them for ever.  The forking thread holds @lock (prepare):
		 * give it back, and start the condition afresh, as a domain's
		 * conditions do (cond_fresh()).
		 */
		pthread_mutex_unlock(&reg->lock);
		(void)pthread_cond_init(&reg->released, NULL);
	}
	for (f = tls_frames; f; f = f->up) {
		int slot = atomic_load(&f->s->slot);

		if (slot >= 0)
			slot_pin(slot_at(f->s->reg, (unsigned)slot));
	}
	pthread_mutex_unlock(&all_regs_lock);
}

static void all_regs_init(void)
{
	/* Without the handler (ENOMEM), a child's free may wait as before. */
	(void)pthread_atfork(all_regs_prepare, all_regs_parent,
			     all_regs_child);
}

static void all_regs_add(struct rcl_shrinker_registry *reg)
{
	pthread_once(&all_regs_once, all_regs_init);
	pthread_mutex_lock(&all_regs_lock);
	reg->all_prev = NULL;
	reg->all_next = all_regs;
	if (all_regs)
		all_regs->all_prev = reg;
	all_regs = reg;
	pthread_mutex_unlock(&all_regs_lock);
}

static void all_regs_del(struct rcl_shrinker_registry *reg)
{
	pthread_mutex_lock(&all_regs_lock);
	if (reg->all_prev)
		reg->all_prev->all_next = reg->all_next;
	else
		all_regs = reg->all_next;
	if (reg->all_next)
		reg->all_next->all_prev = reg->all_prev;
	pthread_mutex_unlock(&all_regs_lock);
}

RCL_API int rcl_shrinker_registry_new(const struct rcl_shrinker_registry_config *cfg,
				      struct rcl_shrinker_registry **out)
{
	const struct rcl_allocator *a = &rcl__std_allocator;
	struct rcl_shrinker_registry *reg;
	unsigned parts = 1;
	int err;

	if (!out)
		return -EINVAL;
	if (cfg) {
		if (cfg->nr_partitions > RCL_SHRINKER_MAX_PARTITIONS ||
		    !rcl_shrink_policy_name(cfg->policy))
			return -EINVAL;
		if (cfg->allocator) {
			if (!cfg->allocator->alloc || !cfg->allocator->free)
				return -EINVAL;
			a = cfg->allocator;
		}
		if (cfg->nr_partitions)
			parts = cfg->nr_partitions;
	}
	reg = rcl__alloc(a, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	memset(reg, 0, sizeof(*reg));
	reg->alloc = *a;
	err = pthread_mutex_init(&reg->lock, NULL);
	if (err) {
		a->free(a->ctx, reg);
		return -err;
	}
	err = pthread_cond_init(&reg->released, NULL);
	if (err) {
		pthread_mutex_destroy(&reg->lock);
		a->free(a->ctx, reg);
		return -err;
	}
	reg->nr_partitions = parts;
	if (cfg) {
		reg->policy = cfg->policy;
		reg->trace = cfg->trace;
		reg->trace_arg = cfg->trace_arg;
	}
	all_regs_add(reg);
	*out = reg;
	return 0;
}

RCL_API int rcl_shrinker_registry_free(struct rcl_shrinker_registry *reg)
{
	struct rcl_allocator a;
	unsigned i;

	if (!reg)
		return 0;
	if (atomic_load(&reg->nr_shrinkers))
		return RCL__REFUSE(-EBUSY, "shrinkers of this registry are not freed yet (rcl_shrinker_free() them first)");
	all_regs_del(reg);
	a = reg->alloc;
	for (i = 0; i < MAX_CHUNKS; i++) {
		struct chunk *c = atomic_load(&reg->chunks[i]);

		if (c)
			a.free(a.ctx, c->raw);
	}
	pthread_cond_destroy(&reg->released);
	pthread_mutex_destroy(&reg->lock);
	a.free(a.ctx, reg);
	return 0;
}

unsigned rcl__shrinker_registry_count(const struct rcl_shrinker_registry *reg)
{
	return atomic_load(&((struct rcl_shrinker_registry *)reg)->nr_shrinkers);
}

void *rcl__shrinker_registry_alloc(struct rcl_shrinker_registry *reg,
				   size_t size)
{
	return rcl__alloc(&reg->alloc, size);
}

void rcl__shrinker_registry_release(struct rcl_shrinker_registry *reg, void *p)
{
	reg->alloc.free(reg->alloc.ctx, p);
}

RCL_API enum rcl_shrink_policy
rcl_shrinker_registry_policy(const struct rcl_shrinker_registry *reg)
{
	return reg ? reg->policy : RCL_SHRINK_POLICY_DEFAULT;
}

/* ------------------------------------------------------------------------- */
/* Shrinker lifecycle                                                         */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_shrinker_new(struct rcl_shrinker_registry *reg,
			     const struct rcl_shrinker_config *cfg,
			     struct rcl_shrinker **out)
{
	struct rcl_shrinker *s;
	void *raw;
	unsigned nb;
	size_t hdr, bls, ssz;

	if (!reg || !cfg || !out || !cfg->ops || !cfg->ops->count_objects ||
	    !cfg->ops->scan_objects || cfg->seeks < 0 || cfg->batch < 0 ||
	    (cfg->flags & ~RCL_SHRINKER_PARTITION_AWARE))
		return -EINVAL;
	nb = (cfg->flags & RCL_SHRINKER_PARTITION_AWARE) ? reg->nr_partitions
							 : 1;
	/* Count it first, so that the limit holds under concurrent news. */
	if (atomic_fetch_add(&reg->nr_shrinkers, 1) >= RCL_SHRINKER_MAX) {
		atomic_fetch_sub(&reg->nr_shrinkers, 1);
		return -ENOSPC;
	}
	/* header | shared backlogs | NSTRIPES_ALL stripes, on whole pairs */
	hdr = RCL__ROUND_PAIR(sizeof(*s));
	bls = RCL__ROUND_PAIR(nb * sizeof(atomic_ulong));
	ssz = (sizeof(struct stripe) + nb * sizeof(atomic_ulong) +
	       STRIPE_GAP - 1) / STRIPE_GAP * STRIPE_GAP;
	s = reg_alloc(reg, hdr + bls + NSTRIPES_ALL * ssz, &raw);
	if (!s) {
		atomic_fetch_sub(&reg->nr_shrinkers, 1);
		return -ENOMEM;
	}
	s->raw = raw;
	s->backlog = (atomic_ulong *)((char *)s + hdr);
	s->stripes = (char *)s + hdr + bls;
	s->stripe_size = ssz;
	s->reg = reg;
	s->ops = cfg->ops;
	s->priv = cfg->priv;
	snprintf(s->name, sizeof(s->name), "%s",
		 cfg->name ? cfg->name : "shrinker");
	s->seeks = (unsigned long)cfg->seeks;
	s->batch = cfg->batch ? (unsigned long)cfg->batch : RCL_SHRINK_BATCH;
	s->flags = cfg->flags;
	s->nr_backlogs = nb;
	atomic_init(&s->slot, -1);
	*out = s;
	return 0;
}

RCL_API int rcl_shrinker_register(struct rcl_shrinker *s)
{
	struct rcl_shrinker_registry *reg;
	struct chunk *spare = NULL;
	void *spare_raw = NULL;
	struct slot sl;
	unsigned i, high;
	int err = 0;

	if (!s)
		return -EINVAL;
	reg = s->reg;
	pthread_mutex_lock(&reg->lock);
again:
	if (atomic_load(&s->slot) >= 0) {
		err = -EBUSY;	/* refused below, without the lock */
		goto out;
	}
	/* Reuse the lowest free slot; grow the table if there is none. */
	high = atomic_load_explicit(&reg->high, memory_order_relaxed);
	for (i = 0; i < high; i++) {
		sl = slot_at(reg, i);
		if (!sl.c->used[sl.j])
			break;
	}
	if (i == high) {
		if (i % SLOTS_PER_CHUNK == 0) {
			if (i / SLOTS_PER_CHUNK >= MAX_CHUNKS) {
				err = -ENOSPC;
				goto out;
			}
			/*
			 * The allocator is the application's: called without
			 * the lock, since one that reclaims on failure may walk
			 * this registry, whose walkers take the lock while a
			 * free waits.  Once: a spare fits any chunk.
			 */
			if (!spare) {
				pthread_mutex_unlock(&reg->lock);
				spare = reg_alloc(reg, sizeof(*spare),
						  &spare_raw);
				pthread_mutex_lock(&reg->lock);
				if (!spare) {
					err = -ENOMEM;
					goto out;
				}
				goto again;
			}
			spare->raw = spare_raw;
			atomic_store_explicit(&reg->chunks[i / SLOTS_PER_CHUNK],
					      spare, memory_order_release);
			spare = NULL;
		}
		atomic_store_explicit(&reg->high, i + 1, memory_order_release);
	}
	sl = slot_at(reg, i);
	sl.c->used[sl.j] = true;
	atomic_store(&s->slot, (int)i);
	/* Publish: from here on walkers may call it. */
	atomic_store_explicit(&sl.c->ptr[sl.j], s, memory_order_release);
out:
	pthread_mutex_unlock(&reg->lock);
	/* A spare that another registration made unneeded. */
	if (spare)
		reg->alloc.free(reg->alloc.ctx, spare_raw);
	/* The refusal log is the application's: not under the lock (fork). */
	if (err == -EBUSY)
		return RCL__REFUSE(-EBUSY, "the shrinker is registered already");
	return err;
}

RCL_API int rcl_shrinker_free(struct rcl_shrinker *s)
{
	struct rcl_shrinker_registry *reg;
	struct cb_frame *f;
	bool no_wait;

	if (!s)
		return 0;
	for (f = tls_frames; f; f = f->up)
		if (f->s == s)
			return RCL__REFUSE(-EDEADLK, "called from the shrinker's own callback, which it would wait for");
	reg = s->reg;

	/*
	 * From a callback of another shrinker, or one that holds what other
	 * threads wait for (a pass's slot pins, an evict callback's isolated
	 * objects, a write's objects under writeback), do not wait: a
	 * callback of @s in flight could be waiting for just that (two
	 * callbacks freeing each other's shrinkers; a scan that detaches the
	 * lruvec this thread's pass holds), and the two would wait for each
	 * other for ever.
	 */
	no_wait = tls_frames || rcl__in_holding_callback();
	pthread_mutex_lock(&reg->lock);
	if (atomic_load(&s->slot) >= 0) {
		struct slot sl = slot_at(reg, (unsigned)atomic_load(&s->slot));

		/* Refused before anything changes: it stays published. */
		if (no_wait && slot_refs(sl))
			goto refuse;
		/*
		 * Dekker with walker_put(): we announce a waiter and clear the
		 * pointer, then read the count; a walker drops the count, then
		 * reads the announcement.  One of us sees the other.
		 */
		atomic_fetch_add(&reg->nr_freeing, 1);
		atomic_store(&sl.c->ptr[sl.j], NULL);
		/*
		 * A walker that came in since: put it back and say so (under
		 * the lock; pin_registered() looks again under it).
		 */
		if (no_wait && slot_refs(sl)) {
			atomic_store(&sl.c->ptr[sl.j], s);
			atomic_fetch_sub(&reg->nr_freeing, 1);
			goto refuse;
		}
		{
			/* Not a cancellation point (internal.h). */
			int cs = rcl__cancel_off();

			while (slot_refs(sl))
				pthread_cond_wait(&reg->released, &reg->lock);
			rcl__cancel_restore(cs);
		}
		atomic_fetch_sub(&reg->nr_freeing, 1);
		sl.c->used[sl.j] = false;
		atomic_store(&s->slot, -1);
	}
	pthread_mutex_unlock(&reg->lock);

	atomic_fetch_sub(&reg->nr_shrinkers, 1);
	reg->alloc.free(reg->alloc.ctx, s->raw);
	return 0;

refuse:
	pthread_mutex_unlock(&reg->lock);
	return RCL__REFUSE(-EDEADLK, "called from a callback (another shrinker's, an evict or a pass's, a write) while this shrinker's callback runs: the two could wait for each other");
}

RCL_API const char *rcl_shrinker_name(const struct rcl_shrinker *s)
{
	return s ? s->name : NULL;
}

/* ------------------------------------------------------------------------- */
/* Pinning a slot                                                             */
/* ------------------------------------------------------------------------- */

/*
 * Enter slot @sl: returns its shrinker, or NULL if none; either way, pair
 * with walker_put().
 */
static struct rcl_shrinker *walker_get(struct slot sl)
{
	slot_pin(sl);
	return atomic_load(&sl.c->ptr[sl.j]);
}

static void walker_put(struct rcl_shrinker_registry *reg, struct slot sl)
{
	atomic_fetch_sub(&sl.c->refs[my_stripe()].n[sl.j], 1);
	if (atomic_load(&reg->nr_freeing)) {
		pthread_mutex_lock(&reg->lock);
		pthread_cond_broadcast(&reg->released);
		pthread_mutex_unlock(&reg->lock);
	}
}

/* Pin a registered shrinker's own slot; false if it is not registered. */
static bool pin_registered(struct rcl_shrinker *s, struct slot *out)
{
	int i = atomic_load(&s->slot);

	if (i < 0)
		return false;
	*out = slot_at(s->reg, (unsigned)i);
	if (walker_get(*out) == s)
		return true;
	walker_put(s->reg, *out);
	/*
	 * A free refused from a callback unpublishes the shrinker for a
	 * moment, under the registry lock: look again under it, so that a
	 * shrinker that stays registered is never "not registered".
	 */
	if (!atomic_load(&s->reg->nr_freeing))
		return false;
	pthread_mutex_lock(&s->reg->lock);
	if (atomic_load(&s->slot) != i ||
	    atomic_load(&out->c->ptr[out->j]) != s) {
		pthread_mutex_unlock(&s->reg->lock);
		return false;
	}
	slot_pin(*out);
	pthread_mutex_unlock(&s->reg->lock);
	return true;
}

/* ------------------------------------------------------------------------- */
/* The arithmetic                                                             */
/* ------------------------------------------------------------------------- */

static unsigned long sat_add(unsigned long a, unsigned long b)
{
	return a + b < a ? ~0ul : a + b;
}

static unsigned long sat_mul(unsigned long a, unsigned long b)
{
	unsigned long r;

	return __builtin_mul_overflow(a, b, &r) ? ~0ul : r;
}

bool rcl__shrinker_in_callback(void)
{
	return tls_frames != NULL;
}

/*
 * Callbacks run inside a frame so that free() from them is detected.  Every
 * entry point that reaches them holds cancellation off (internal.h: a walk
 * holds the shrinker's slot), once per call, not per callback: the
 * registry walk, rcl_shrinker_shrink() and the debug calls.
 */
static unsigned long call_count(struct rcl_shrinker *s,
				struct rcl_shrink_control *sc)
{
	struct cb_frame f = { s, tls_frames };
	unsigned long n;

	tls_frames = &f;
	n = s->ops->count_objects(s, sc);
	tls_frames = f.up;
	return n;
}

static unsigned long call_scan(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc)
{
	struct cb_frame f = { s, tls_frames };
	unsigned long n;

	tls_frames = &f;
	n = s->ops->scan_objects(s, sc);
	tls_frames = f.up;
	return n;
}

struct shrink_args {
	unsigned partition;
	int priority;
	uint64_t context;
	struct rcl__shrink_goal *goal;	/* NULL: no goal, the whole target */
};

/*
 * Scan @total objects in batches, the kernel's loop since v3.14 (Davydov,
 * "mm: vmscan: shrink all slab objects if tight on memory"): whole batches,
 * and a sub-batch remainder only while total >= freeable.  Returns the
 * objects scanned; *freed and *stopped are set.  With a goal, the loop also
 * ends after the call that met it (a.goal->met is then set).
 */
static unsigned long scan_loop(struct rcl_shrinker *s,
			       struct rcl_shrink_control *sc,
			       const struct shrink_args *a,
			       unsigned long total, unsigned long freeable,
			       unsigned long batch, unsigned long *freed,
			       bool *stopped)
{
	unsigned long scanned = 0;

	*freed = 0;
	*stopped = false;
	while (total >= batch || (total >= freeable && total)) {
		unsigned long n = RCL_MIN(batch, total), ret, done;

		sc->nr_to_scan = n;
		sc->nr_scanned = n;
		sc->weight_freed = 0;
		ret = call_scan(s, sc);
		if (ret == RCL_SHRINK_STOP) {
			*stopped = true;
			break;
		}
		done = RCL_MIN(sc->nr_scanned, n);
		/*
		 * A callback cannot free more than it looked at: a larger
		 * answer (a bug, or a stray sentinel) would inflate the
		 * counters and a domain's progress sums without bound.
		 */
		*freed = sat_add(*freed, RCL_MIN(ret, done));
		if (!done)
			break;	/* no progress: do not spin */
		total -= done;
		scanned += done;
		/*
		 * The kernel counts slab memory freed during a pass toward
		 * its goal (reclaim_state) and stops the pass once it is met;
		 * this stops even within the shrinker, so that beyond the goal
		 * a pass frees at most one batch of each shrinker.
		 */
		if (a->goal && a->goal->enough(a->goal->arg, sc->weight_freed)) {
			a->goal->met = true;
			break;
		}
	}
	return scanned;
}

/*
 * What is left of a scan target that a met goal cut short: the claimed
 * backlog less what was scanned beyond the fresh @delta.  The fresh part's
 * remainder is dropped: no context refused that work, it was not needed.
 */
static unsigned long goal_leftover(unsigned long nr, unsigned long delta,
				   unsigned long scanned)
{
	unsigned long done = RCL_MAX(scanned, delta);

	return sat_add(nr, delta) > done ? sat_add(nr, delta) - done : 0;
}

static unsigned long modern_delta(const struct rcl_shrinker *s,
				  unsigned long freeable, int priority)
{
	if (!s->seeks)
		return freeable / 2;
	return sat_mul(freeable >> priority, 4) / s->seeks;
}

static void trace_event(struct rcl_shrinker *s, const struct shrink_args *a,
			struct rcl_shrink_trace *ev,
			enum rcl_shrink_trace_phase phase)
{
	if (phase == RCL_SHRINK_TRACE_START)
		RCL_PROBE8(mm_shrink_slab_start, s->name, s, a->partition,
			   ev->freeable, ev->backlog, ev->delta, ev->total_scan,
			   a->priority);
	else
		RCL_PROBE6(mm_shrink_slab_end, s->name, s, a->partition,
			   ev->freed, ev->scanned, ev->new_backlog);
	if (!s->reg->trace)
		return;
	ev->phase = phase;
	ev->shrinker = s;
	ev->name = s->name;
	ev->partition = a->partition;
	ev->priority = a->priority;
	{
		/* A callback too: free() of @s from it must not wait for itself. */
		struct cb_frame f = { s, tls_frames };

		tls_frames = &f;
		s->reg->trace(s->reg->trace_arg, ev);
		tls_frames = f.up;
	}
}

/*
 * Add to a statistic of the calling thread's stripe: a load and a store if
 * the thread owns the stripe (it is the only writer), else a locked add.
 */
static void stat_add(atomic_ullong *c, unsigned long long v)
{
	if (likely(tls_stripe_owned))
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
				      memory_order_relaxed);
	else
		atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Add what @w holds to @nr and zero it; no write if it holds nothing. */
static unsigned long take(atomic_ulong *w, unsigned long nr)
{
	if (!atomic_load_explicit(w, memory_order_relaxed))
		return nr;
	return sat_add(nr, atomic_exchange(w, 0));
}

/* Take over the remainders that exited threads left on their stripes. */
static unsigned long take_orphans(const struct rcl_shrinker *s, unsigned idx,
				  unsigned long nr)
{
	unsigned orph = atomic_load_explicit(&stripes_orphaned,
					     memory_order_relaxed);

	while (unlikely(orph)) {
		unsigned i = (unsigned)__builtin_ctz(orph);

		orph &= orph - 1;
		nr = take(&stripe_of(s, i)->rem[idx], nr);
	}
	return nr;
}

/* An empty count drops the backlog: the shared word and every stripe's. */
static void drop_backlog(const struct rcl_shrinker *s, unsigned idx)
{
	unsigned i;

	(void)take(&s->backlog[idx], 0);
	for (i = 0; i < NSTRIPES_ALL; i++)
		(void)take(&stripe_of(s, i)->rem[idx], 0);
}

/* The deferred work of backlog @idx: the shared word and the stripes'. */
static unsigned long backlog_sum(const struct rcl_shrinker *s, unsigned idx)
{
	unsigned long v = atomic_load_explicit(&s->backlog[idx],
					       memory_order_relaxed);
	unsigned i;

	for (i = 0; i < NSTRIPES_ALL; i++)
		v = sat_add(v, atomic_load_explicit(&stripe_of(s, i)->rem[idx],
						    memory_order_relaxed));
	return v;
}

/*
 * One shrinker, one call: the kernel's do_shrink_slab() under the registry's
 * policy.  The slot is pinned by the caller.
 */
static void do_shrink(struct rcl_shrinker *s, const struct shrink_args *a,
		      struct rcl_shrink_result *res)
{
	struct rcl_shrink_control sc = {
		.partition = a->partition,
		.priority = a->priority,
		.context = a->context,
		.priv = s->priv,
	};
	struct rcl_shrink_trace ev = { 0 };
	unsigned long freeable, nr, delta, total, scanned, freed, next;
	unsigned idx = (s->flags & RCL_SHRINKER_PARTITION_AWARE) ? a->partition
								  : 0;
	atomic_ulong *bl = &s->backlog[idx];
	struct stripe *st = stripe_of(s, my_stripe());
	atomic_ulong *rem = &st->rem[idx];
	unsigned long keep;	/* remainders below this stay on the stripe */
	int p = a->priority;
	bool stopped;

	if (!(s->flags & RCL_SHRINKER_PARTITION_AWARE))
		sc.partition = 0;
	res->nr_shrinkers++;
	freeable = call_count(s, &sc);
	if (freeable == RCL_SHRINK_EMPTY) {
		/*
		 * An empty cache has nothing to defer work on: a backlog kept
		 * through it would only burst on the cache's next objects.
		 * (0, "cannot tell now", keeps the backlog.)
		 */
		drop_backlog(s, idx);
		return;
	}
	if (freeable == 0)
		return;
	if (freeable > FREEABLE_MAX)
		freeable = FREEABLE_MAX;

	/*
	 * Claim this thread's remainder, the orphaned stripes' and the shared
	 * backlog; concurrent callers split the shared one.  Each is read
	 * first, so that a zero costs no write.
	 */
	nr = take(rem, 0);
	nr = take_orphans(s, idx, nr);
	nr = take(bl, nr);

	switch (s->reg->policy) {
	case RCL_SHRINK_POLICY_KERNEL_MODERN:
		delta = modern_delta(s, freeable, p);
		total = RCL_MIN(sat_add(nr >> p, delta), 2 * freeable);
		ev.backlog = nr;
		ev.delta = delta;
		ev.freeable = freeable;
		ev.total_scan = total;
		trace_event(s, a, &ev, RCL_SHRINK_TRACE_START);
		scanned = scan_loop(s, &sc, a, total, freeable, s->batch,
				    &freed, &stopped);
		next = sat_add(nr, delta);
		next = next > scanned ? next - scanned : 0;
		if (a->goal && a->goal->met)
			next = goal_leftover(nr, delta, scanned);
		next = RCL_MIN(next, 2 * freeable);
		ev.new_backlog = next;
		keep = s->batch;
		break;

	case RCL_SHRINK_POLICY_KERNEL_2014:
		delta = modern_delta(s, freeable, p);
		total = sat_add(nr, delta);
		if (delta < freeable / 4)
			total = RCL_MIN(total, freeable / 2);
		total = RCL_MIN(total, 2 * freeable);
		ev.backlog = nr;
		ev.delta = delta;
		ev.freeable = freeable;
		ev.total_scan = total;
		trace_event(s, a, &ev, RCL_SHRINK_TRACE_START);
		/*
		 * The clamp keeps total below freeable, and so a cache smaller
		 * than a batch unscanned, unless delta >= freeable / 4.
		 */
		scanned = scan_loop(s, &sc, a, total, freeable, s->batch,
				    &freed, &stopped);
		/* Put back what is left of the (clamped) target. */
		next = total - RCL_MIN(scanned, total);
		if (a->goal && a->goal->met)
			next = RCL_MIN(next, goal_leftover(nr, delta, scanned));
		ev.new_backlog = next;
		keep = s->batch;
		break;

	case RCL_SHRINK_POLICY_DEFAULT:
	default: {
		/*
		 * 16.16 fixed point; freeable <= 2^40 keeps it in range.  A
		 * cache smaller than 8 batches is scanned in eighths of itself
		 * rather than waiting for a whole batch (or, below one batch,
		 * for its whole size) to accumulate.
		 */
		unsigned long f_fp = freeable << FP_SHIFT, d_fp, drain, t_fp;
		unsigned long eb = RCL_MIN(s->batch, RCL_MAX(1ul, freeable / 8));
		unsigned long floor_fp = RCL_MAX(eb, freeable / 8) << FP_SHIFT;

		d_fp = s->seeks ? ((f_fp >> p) * 4) / s->seeks : f_fp / 2;
		/*
		 * The backlog was capped at half of the cache as it was when
		 * it was put back; a cache that shrank since (by itself,
		 * while the work was deferred) caps it again now: above half
		 * of what is there it is windup, by this policy's own rule.
		 */
		nr = RCL_MIN(nr, f_fp / 2);
		drain = RCL_MIN(nr, RCL_MAX(nr >> p, floor_fp));
		t_fp = drain + d_fp;
		delta = d_fp >> FP_SHIFT;
		if (delta < freeable / 4)
			t_fp = RCL_MIN(t_fp, (freeable / 2) << FP_SHIFT);
		t_fp = RCL_MIN(t_fp, f_fp);
		total = t_fp >> FP_SHIFT;
		ev.backlog = nr >> FP_SHIFT;
		ev.delta = delta;
		ev.freeable = freeable;
		ev.total_scan = total;
		trace_event(s, a, &ev, RCL_SHRINK_TRACE_START);
		scanned = scan_loop(s, &sc, a, total, freeable, eb, &freed,
				    &stopped);
		next = nr + d_fp;
		next = next > (scanned << FP_SHIFT) ? next - (scanned << FP_SHIFT)
						    : 0;
		if (a->goal && a->goal->met)
			next = goal_leftover(nr, d_fp, scanned << FP_SHIFT);
		next = RCL_MIN(next, f_fp / 2);
		ev.new_backlog = next >> FP_SHIFT;
		keep = eb << FP_SHIFT;
		break;
	}
	}

	/*
	 * Less than one batch of the call's own arithmetic is not backlog yet:
	 * this thread's next call does it (see "Where the backlog lives" above).
	 * What a context refused, or more, is for any capable caller.
	 */
	if (next && !stopped && next < keep)
		atomic_fetch_add_explicit(rem, next, memory_order_relaxed);
	else if (next)
		atomic_fetch_add(bl, next);

	stat_add(&st->calls, 1);
	if (scanned)
		stat_add(&st->scanned, scanned);
	if (freed)
		stat_add(&st->freed, freed);
	if (stopped) {
		stat_add(&st->stops, 1);
		res->nr_stopped++;
	}
	res->freed = sat_add(res->freed, freed);
	res->scanned = sat_add(res->scanned, scanned);
	ev.freed = freed;
	ev.scanned = scanned;
	trace_event(s, a, &ev, RCL_SHRINK_TRACE_END);
}

/* ------------------------------------------------------------------------- */
/* Shrinking                                                                  */
/* ------------------------------------------------------------------------- */

static int check_args(const struct rcl_shrinker_registry *reg,
		      unsigned partition, int priority)
{
	if (!reg || partition >= reg->nr_partitions || priority < 0 ||
	    priority > RCL_DEF_PRIORITY)
		return -EINVAL;
	return 0;
}

int rcl__shrinker_registry_shrink_goal(struct rcl_shrinker_registry *reg,
				       unsigned partition, int priority,
				       uint64_t context,
				       struct rcl_shrink_result *res,
				       struct rcl__shrink_goal *goal)
{
	struct shrink_args a = { partition, priority, context, goal };
	struct rcl_shrink_result local = { 0 };
	unsigned i, high;
	int err = check_args(reg, partition, priority), cs;

	if (err)
		return err;
	/* Once for the walk, not per callback (internal.h). */
	cs = rcl__cancel_off();
	high = atomic_load_explicit(&reg->high, memory_order_acquire);
	for (i = 0; i < high && !(goal && goal->met); i++) {
		struct slot sl = slot_at(reg, i);
		struct rcl_shrinker *s;

		/* Cheap skip of free slots, without writing anything. */
		if (!atomic_load_explicit(&sl.c->ptr[sl.j], memory_order_relaxed))
			continue;
		s = walker_get(sl);
		if (s)
			do_shrink(s, &a, &local);
		walker_put(reg, sl);
	}
	if (res) {
		res->freed = sat_add(res->freed, local.freed);
		res->scanned = sat_add(res->scanned, local.scanned);
		res->nr_shrinkers += local.nr_shrinkers;
		res->nr_stopped += local.nr_stopped;
	}
	rcl__cancel_restore(cs);
	return 0;
}

RCL_API int rcl_shrinker_registry_shrink(struct rcl_shrinker_registry *reg,
					 unsigned partition, int priority,
					 uint64_t context,
					 struct rcl_shrink_result *res)
{
	return rcl__shrinker_registry_shrink_goal(reg, partition, priority,
						  context, res, NULL);
}

RCL_API int rcl_shrinker_shrink(struct rcl_shrinker *s, unsigned partition,
				int priority, uint64_t context,
				struct rcl_shrink_result *res)
{
	RCL__CANCEL_OFF_SCOPE();
	struct shrink_args a = { partition, priority, context, NULL };
	struct rcl_shrink_result local = { 0 };
	struct slot sl;
	int err;

	if (!s)
		return -EINVAL;
	err = check_args(s->reg, partition, priority);
	if (err)
		return err;
	if (!pin_registered(s, &sl))
		return -ENOENT;
	do_shrink(s, &a, &local);
	walker_put(s->reg, sl);
	if (res) {
		res->freed = sat_add(res->freed, local.freed);
		res->scanned = sat_add(res->scanned, local.scanned);
		res->nr_shrinkers += local.nr_shrinkers;
		res->nr_stopped += local.nr_stopped;
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Statistics and debug entry points                                          */
/* ------------------------------------------------------------------------- */

RCL_API int rcl_shrinker_stats(const struct rcl_shrinker *s,
			       struct rcl_shrinker_stats *out)
{
	struct rcl_shrinker *w = (struct rcl_shrinker *)s;

	if (!s || !out)
		return -EINVAL;
	unsigned i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < NSTRIPES_ALL; i++) {
		struct stripe *st = stripe_of(w, i);

		out->calls += atomic_load_explicit(&st->calls,
						   memory_order_relaxed);
		out->scanned += atomic_load_explicit(&st->scanned,
						     memory_order_relaxed);
		out->freed += atomic_load_explicit(&st->freed,
						   memory_order_relaxed);
		out->stops += atomic_load_explicit(&st->stops,
						   memory_order_relaxed);
	}
	return 0;
}

RCL_API int rcl_shrinker_backlog(const struct rcl_shrinker *s,
				 unsigned partition, unsigned long *out)
{
	unsigned long v;

	if (!s || !out || partition >= s->nr_backlogs)
		return -EINVAL;
	v = backlog_sum(s, partition);
	*out = s->reg->policy == RCL_SHRINK_POLICY_DEFAULT ? v >> FP_SHIFT : v;
	return 0;
}

RCL_API int rcl_shrinker_debug_count(struct rcl_shrinker *s,
				     unsigned partition, uint64_t context,
				     unsigned long *out)
{
	RCL__CANCEL_OFF_SCOPE();
	struct rcl_shrink_control sc = { 0 };
	struct slot sl;

	if (!s || !out || partition >= s->reg->nr_partitions)
		return -EINVAL;
	if (!pin_registered(s, &sl))
		return -ENOENT;
	sc.partition = (s->flags & RCL_SHRINKER_PARTITION_AWARE) ? partition : 0;
	sc.priority = 0;
	sc.context = context;
	sc.priv = s->priv;
	*out = call_count(s, &sc);
	walker_put(s->reg, sl);
	return 0;
}

RCL_API int rcl_shrinker_debug_scan(struct rcl_shrinker *s,
				    unsigned partition,
				    unsigned long nr_to_scan, uint64_t context,
				    unsigned long *freed,
				    unsigned long *scanned)
{
	RCL__CANCEL_OFF_SCOPE();
	struct rcl_shrink_control sc = { 0 };
	struct slot sl;
	unsigned long ret;

	if (!s || !freed || partition >= s->reg->nr_partitions)
		return -EINVAL;
	if (!pin_registered(s, &sl))
		return -ENOENT;
	sc.partition = (s->flags & RCL_SHRINKER_PARTITION_AWARE) ? partition : 0;
	sc.nr_to_scan = nr_to_scan;
	sc.nr_scanned = nr_to_scan;
	sc.priority = 0;
	sc.context = context;
	sc.priv = s->priv;
	ret = call_scan(s, &sc);
	walker_put(s->reg, sl);
	*freed = ret;
	if (scanned)
		*scanned = sc.nr_scanned;
	return 0;
}
