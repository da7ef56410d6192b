/* SPDX-License-Identifier: MIT */
/*
 * This example shows how to build a write-back cache over a real file: a
 * cache of 4 KiB blocks of a file, bounded by a memory domain, where writes
 * only dirty the cached block and the library's flusher thread writes dirty
 * blocks back in batches, so that reclaim never has to write anything.
 *
 * The file.  A temporary file of NR_BLOCKS blocks (mkstemp() under $TMPDIR,
 * or /tmp), created sparse (all zeros) and removed at the end.
 *
 * The cache.  One object per cached block: the block's data, a mutex for
 * the data (the "content lock"), and a reference count.  The index is
 * direct-mapped (block number -> object), one mutex per block (the "slot
 * lock").  Every cached object holds one reference for the index; a lookup
 * takes one more (a pin) under the slot lock.  This is the pin (try-get)
 * protocol of the "Object lifetime" section of <reclaim/lruvec.h>, as in
 * handcache.c.  A miss charges the domain first (no lock held: the charge may
 * reclaim, and reclaim takes slot locks), then, under the slot lock, reads
 * the block from the file with pread() and inserts it.  Reading under the
 * slot lock matters: a block is dropped only when clean, that is after its
 * last pwrite(), and only under that lock, so a miss can never read an old
 * version of a block that another thread is about to drop.
 *
 * Writes.  A writer pins the block, takes its content lock, checks that the
 * block holds what the model says (see below), changes 64 bytes of it,
 * calls rcl_lruvec_set_dirty() and drops the lock and the pin; then it calls
 * rcl_domain_balance_dirty(), which wakes the flusher above the domain's
 * background dirty threshold (10 % of the budget) and waits while the
 * domain is above its hard threshold (20 %).  The set_dirty() comes after
 * the change: a write that starts later sees the new data, and a write
 * already under way leaves the block dirty again, so it is written again.
 *
 * The flusher.  rcl_domain_flusher_start() runs the library's flusher
 * thread with two callbacks: write_block() copies the block under its
 * content lock and pwrite()s it, and sync_file() calls fdatasync() once per
 * batch.  The library marks each block of a batch "under writeback" before
 * the write (it cannot be evicted or deleted then, so write_block() needs no
 * pin) and ends the writeback after the sync.
 *
 * Eviction.  The domain's background reclaimer (and a charge below the min
 * watermark) evict from the inactive tail.  Reclaim never writes: a dirty
 * block at the tail is moved out of the way and the flusher is asked to
 * write, so only clean blocks reach the evict callback - the callback checks
 * that RCL_EVICT_DIRTY is never set.  Under the slot lock it also re-checks
 * the block's state with rcl_lru_node_flags(): a writer may have pinned,
 * dirtied and unpinned the block after reclaim took it from the list, and
 * such a block must stay (BUSY) until it is written.
 *
 * The model.  Independently of the cache, version[b] counts the writes to
 * block b, and the content of a block is a function of (b, version): write
 * number k changes the 64-byte region k % 64 to a pattern of (b, k), and
 * version 0 is all zeros.  Every write first checks the whole block against
 * the model, which catches a block read back from the file before its last
 * write reached it.  At the end: the flusher is stopped,
 * rcl_domain_writeback_all() writes what is left, and every block is read back from the file with pread() and
 * compared with the model: nothing may be lost.
 *
 * The workload is deterministic per thread (splitmix64 seeded by --seed and
 * the thread number): 80 % of the writes go to the first 20 % of the blocks.
 * The interleaving of the threads is not deterministic, so the counts vary a
 * little from run to run.
 *
 * Usage: writeback [--ops N] [--threads T] [--budget BLOCKS] [--seed S]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <reclaim/reclaim.h>

#define BLOCK_SIZE	4096u
#define BLOCK_WORDS	(BLOCK_SIZE / sizeof(uint64_t))
#define NR_REGIONS	64u			/* a write changes one region */
#define REGION_WORDS	(BLOCK_WORDS / NR_REGIONS)
#define NR_BLOCKS	1024u			/* the file: 4 MiB */
#define HOT_BLOCKS	(NR_BLOCKS / 5)
#define HOT_PERCENT	80u

#define DEFAULT_OPS	20000ul
#define DEFAULT_THREADS	2u
#define DEFAULT_BUDGET	256u			/* blocks: 1 MiB */
#define DEFAULT_SEED	1ull
#define MAX_THREADS	64u
#define MIN_BUDGET	32u
#define FLUSH_BATCH	32u			/* blocks per fdatasync() */

struct block {
	struct rcl_lru_node lru;	/* on the cache's lruvec */
	uint32_t nr;			/* block number */
	atomic_uint refs;		/* index reference + one per pin */
	bool hashed;			/* slot lock */
	pthread_mutex_t lock;		/* the content lock: data */
	uint64_t data[BLOCK_WORDS];
};

struct slot {
	pthread_mutex_t lock;
	struct block *b;
};

struct cache {
	int fd;
	char path[256];
	struct slot slots[NR_BLOCKS];
	uint64_t version[NR_BLOCKS];	/* the model; the block's content lock */
	struct rcl_lruvec lru;
	struct rcl_domain *dom;
	/* counted by the callbacks */
	_Atomic uint64_t evicted;	/* FREED answers */
	_Atomic uint64_t evict_busy;	/* pinned: BUSY */
	_Atomic uint64_t evict_redirtied;	/* dirtied after isolation: BUSY */
	_Atomic uint64_t evict_dirty_flag;	/* RCL_EVICT_DIRTY seen (must be 0) */
	_Atomic uint64_t writes;	/* write_block() calls */
	_Atomic uint64_t syncs;		/* sync_file() calls */
	_Atomic uint64_t io_errors;
	_Atomic uint64_t lib_errors;	/* unexpected library return values */
	_Atomic uint64_t bad_blocks;	/* content differs from the model */
};

struct writer {
	pthread_t thread;
	struct cache *cache;
	unsigned id;
	uint64_t rng;
	unsigned long nr_ops;
	/* results, read by main() after the join */
	unsigned long hits, misses, raced, charge_retries, timeouts;
};

/* ------------------------------------------------------------------------- */
/* Deterministic pseudo-random numbers and block contents                    */
/* ------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return mix64(*state);
}

static uint32_t pick_block(uint64_t *rng)
{
	uint64_t r = splitmix64(rng);

	if (r % 100 < HOT_PERCENT)
		return (uint32_t)((r >> 32) % HOT_BLOCKS);
	return HOT_BLOCKS + (uint32_t)((r >> 32) % (NR_BLOCKS - HOT_BLOCKS));
}

/* Word @i of the region that write number @k (>= 1) of block @nr sets. */
static uint64_t pattern(uint32_t nr, uint64_t k, unsigned i)
{
	return mix64(((uint64_t)nr << 40) ^ (k << 4) ^ i) | 1u;	/* never 0 */
}

/* The write that last set region @r of a block at @version; 0: none. */
static uint64_t region_version(uint64_t version, unsigned r)
{
	if (version < r)
		return 0;
	return version - (version - r) % NR_REGIONS;	/* 0 for r = 0, v < 64 */
}

/* Word @w of block @nr at @version, as the model says. */
static uint64_t model_word(uint32_t nr, uint64_t version, unsigned w)
{
	uint64_t k = region_version(version, w / REGION_WORDS);

	return k ? pattern(nr, k, w % REGION_WORDS) : 0;
}

static bool block_matches(const uint64_t *data, uint32_t nr, uint64_t version)
{
	unsigned w;

	for (w = 0; w < BLOCK_WORDS; w++)
		if (data[w] != model_word(nr, version, w))
			return false;
	return true;
}

/* Write number @k of block @nr: set region k % 64 (content lock held). */
static void apply_write(uint64_t *data, uint32_t nr, uint64_t k)
{
	unsigned r = (unsigned)(k % NR_REGIONS), i;

	for (i = 0; i < REGION_WORDS; i++)
		data[r * REGION_WORDS + i] = pattern(nr, k, i);
}

/* ------------------------------------------------------------------------- */
/* The file                                                                  */
/* ------------------------------------------------------------------------- */

static off_t block_offset(uint32_t nr)
{
	return (off_t)nr * BLOCK_SIZE;
}

/* pread()/pwrite() of a whole block, retrying short transfers. */
static int block_io(int fd, void *buf, uint32_t nr, bool write)
{
	size_t done = 0;

	while (done < BLOCK_SIZE) {
		ssize_t n = write ? pwrite(fd, (char *)buf + done,
					   BLOCK_SIZE - done,
					   block_offset(nr) + (off_t)done)
				  : pread(fd, (char *)buf + done,
					  BLOCK_SIZE - done,
					  block_offset(nr) + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* a read beyond the end of the file */
		done += (size_t)n;
	}
	return 0;
}

static int file_create(struct cache *c)
{
	const char *dir = getenv("TMPDIR");

	if (!dir || !*dir)
		dir = "/tmp";
	if ((size_t)snprintf(c->path, sizeof(c->path),
			     "%s/rcl-writeback-XXXXXX", dir) >= sizeof(c->path))
		return -ENAMETOOLONG;
	c->fd = mkstemp(c->path);
	if (c->fd < 0)
		return -errno;
	/* Sparse: every block reads as zeros, which is version 0. */
	if (ftruncate(c->fd, (off_t)NR_BLOCKS * BLOCK_SIZE) != 0) {
		int err = -errno;

		close(c->fd);
		unlink(c->path);
		return err;
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The flusher's callbacks                                                   */
/* ------------------------------------------------------------------------- */

static void lib_error(struct cache *c, const char *what, int err)
{
	fprintf(stderr, "writeback: %s returned %d (%s)\n", what, err,
		strerror(-err));
	atomic_fetch_add(&c->lib_errors, 1);
}

/*
 * Runs on the flusher thread (or in rcl_domain_writeback_all()), with no
 * library lock held.  The block is under writeback: it can be neither
 * evicted nor deleted, so it needs no pin.  Writers may still change it:
 * copy it under its content lock, so that a consistent version is written
 * (a change made meanwhile made the block dirty again).
 */
static int write_block(void *priv, struct rcl_lru_node *node)
{
	struct cache *c = priv;
	struct block *b = rcl_container_of(node, struct block, lru);
	uint64_t copy[BLOCK_WORDS];
	int err;

	pthread_mutex_lock(&b->lock);
	memcpy(copy, b->data, sizeof(copy));
	pthread_mutex_unlock(&b->lock);
	err = block_io(c->fd, copy, b->nr, true);
	if (err) {
		atomic_fetch_add(&c->io_errors, 1);
		return err;	/* the block becomes dirty again */
	}
	atomic_fetch_add(&c->writes, 1);
	return 0;
}

/* Once per batch. */
static int sync_file(void *priv)
{
	struct cache *c = priv;

	atomic_fetch_add(&c->syncs, 1);
	if (fdatasync(c->fd) != 0) {
		atomic_fetch_add(&c->io_errors, 1);
		return -errno;	/* every block of the batch stays dirty */
	}
	return 0;
}

static const struct rcl_writeback_ops wb_ops = {
	.write = write_block,
	.sync = sync_file,
};

/* ------------------------------------------------------------------------- */
/* Blocks and eviction                                                       */
/* ------------------------------------------------------------------------- */

static void block_free(struct cache *c, struct block *b)
{
	rcl_domain_uncharge(c->dom, BLOCK_SIZE);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static void block_put(struct cache *c, struct block *b)
{
	if (atomic_fetch_sub(&b->refs, 1) == 1)
		block_free(c, b);
}

/*
 * Called by reclaim for each isolated block, with no library lock held.
 * Reclaim keeps dirty and writeback blocks away from it, so it never writes.
 */
static enum rcl_evict_status cache_evict(struct rcl_lru_node *node,
					 struct rcl_evict_control *ctl)
{
	struct cache *c = ctl->priv;
	struct block *b = rcl_container_of(node, struct block, lru);
	struct slot *s = &c->slots[b->nr];
	unsigned flags;

	if (ctl->flags & RCL_EVICT_DIRTY)	/* only with RECLAIM_WRITES */
		atomic_fetch_add(&c->evict_dirty_flag, 1);
	pthread_mutex_lock(&s->lock);
	if (!b->hashed || atomic_load(&b->refs) != 1) {
		/* Pinned by a writer, or being deleted: put it back. */
		pthread_mutex_unlock(&s->lock);
		atomic_fetch_add(&c->evict_busy, 1);
		return RCL_EVICT_BUSY;
	}
	/*
	 * Unpinned, and nobody can pin it without the slot lock.  A writer
	 * that dirtied it since reclaim isolated it did so before unpinning:
	 * the flags read now are final.  Keep it until it is written.
	 */
	flags = rcl_lru_node_flags(node);
	if (flags & (RCL_LRU_F_DIRTY | RCL_LRU_F_WRITEBACK)) {
		pthread_mutex_unlock(&s->lock);
		atomic_fetch_add(&c->evict_redirtied, 1);
		return RCL_EVICT_BUSY;
	}
	s->b = NULL;
	b->hashed = false;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&c->evicted, 1);
	block_free(c, b);	/* the library does not touch the node again */
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops cache_ops = {
	.evict = cache_evict,
};

/* Lookup: find and pin under the slot lock. */
static struct block *cache_lookup(struct cache *c, uint32_t nr)
{
	struct slot *s = &c->slots[nr];
	struct block *b;

	pthread_mutex_lock(&s->lock);
	b = s->b;
	if (b)
		atomic_fetch_add(&b->refs, 1);
	pthread_mutex_unlock(&s->lock);
	return b;
}

/*
 * Miss: charge (the domain may reclaim: no lock is held), then read the
 * block from the file and insert it under the slot lock - unless another
 * thread was quicker.  Returns the block pinned, or NULL on an error.
 */
static struct block *cache_load(struct cache *c, struct writer *w, uint32_t nr)
{
	struct slot *s = &c->slots[nr];
	struct block *b;
	int err;

	/*
	 * Strict mode: a charge fails when everything reclaimable is pinned,
	 * dirty or under writeback.  Throttle on writeback and retry.
	 */
	while ((err = rcl_domain_charge(c->dom, BLOCK_SIZE, RCL_CTX_CAPABLE,
					NULL)) == -ENOMEM) {
		w->charge_retries++;
		rcl_domain_balance_dirty(c->dom, RCL_CTX_CAPABLE);
		sched_yield();
	}
	if (err) {
		lib_error(c, "rcl_domain_charge()", err);
		return NULL;
	}
	b = malloc(sizeof(*b));
	if (!b) {
		rcl_domain_uncharge(c->dom, BLOCK_SIZE);
		return NULL;
	}
	rcl_lru_node_init(&b->lru);
	b->nr = nr;
	atomic_init(&b->refs, 2);	/* the index and our pin */
	b->hashed = false;
	pthread_mutex_init(&b->lock, NULL);

	pthread_mutex_lock(&s->lock);
	if (s->b) {
		struct block *old = s->b;

		atomic_fetch_add(&old->refs, 1);
		pthread_mutex_unlock(&s->lock);
		block_free(c, b);	/* never published */
		w->raced++;
		return old;
	}
	/*
	 * Under the slot lock: no clean copy of this block can be dropped
	 * now.  The block is added with RCL_LRU_ADD_NOBATCH, straight to the
	 * list, because it is about to be dirtied: the flusher finds dirty
	 * blocks on the lruvec's lists, and does not see a block that is
	 * still pending in this thread's add batch (up to 31 of them, more
	 * than the hard dirty threshold of a small budget).
	 */
	err = block_io(c->fd, b->data, nr, false);
	if (!err)
		err = rcl_lruvec_add(&c->lru, &b->lru, RCL_LRU_FILE,
				     BLOCK_SIZE, RCL_LRU_ADD_NOBATCH);
	if (err) {
		pthread_mutex_unlock(&s->lock);
		if (err == -EINVAL || err == -EBUSY)
			lib_error(c, "rcl_lruvec_add()", err);
		else
			atomic_fetch_add(&c->io_errors, 1);
		block_free(c, b);
		return NULL;
	}
	b->hashed = true;
	s->b = b;
	pthread_mutex_unlock(&s->lock);
	return b;
}

/* One read-modify-write of block @nr. */
static void cache_write(struct cache *c, struct writer *w, uint32_t nr)
{
	struct block *b = cache_lookup(c, nr);
	uint64_t k;
	int err;

	if (b) {
		w->hits++;
		err = rcl_lruvec_mark_accessed(&c->lru, &b->lru);
		if (err)
			lib_error(c, "rcl_lruvec_mark_accessed()", err);
	} else {
		w->misses++;
		b = cache_load(c, w, nr);
		if (!b)
			return;
	}

	pthread_mutex_lock(&b->lock);
	if (!block_matches(b->data, nr, c->version[nr])) {
		if (atomic_fetch_add(&c->bad_blocks, 1) == 0)
			fprintf(stderr, "writeback: block %" PRIu32 " does not "
				"hold version %" PRIu64 " (a lost write)\n", nr,
				c->version[nr]);
	}
	k = ++c->version[nr];
	apply_write(b->data, nr, k);
	/* After the change: a write that starts from now on sees it. */
	err = rcl_lruvec_set_dirty(&c->lru, &b->lru);
	pthread_mutex_unlock(&b->lock);
	if (err)
		lib_error(c, "rcl_lruvec_set_dirty()", err);
	block_put(c, b);

	/* Throttled while the domain is over its hard dirty threshold. */
	err = rcl_domain_balance_dirty(c->dom, RCL_CTX_CAPABLE);
	if (err == -ETIMEDOUT)
		w->timeouts++;
	else if (err)
		lib_error(c, "rcl_domain_balance_dirty()", err);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	unsigned long i;

	for (i = 0; i < w->nr_ops; i++)
		cache_write(w->cache, w, pick_block(&w->rng));
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Setup and teardown                                                        */
/* ------------------------------------------------------------------------- */

static int cache_init(struct cache *c, unsigned budget)
{
	struct rcl_lruvec_config cfg = {
		.ops = &cache_ops,
		.priv = c,
	};
	struct rcl_domain_config dcfg = {
		.budget = (uint64_t)budget * BLOCK_SIZE,
		.mode = RCL_CHARGE_STRICT,
		/* Defaults: flush at 10 % dirty, throttle writers at 20 %. */
	};
	unsigned i;
	int err;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NR_BLOCKS; i++)
		pthread_mutex_init(&c->slots[i].lock, NULL);
	err = file_create(c);
	if (err)
		goto fail_slots;
	err = rcl_lruvec_init(&c->lru, &cfg);
	if (err)
		goto fail_file;
	err = rcl_domain_new(&dcfg, &c->dom);
	if (err)
		goto fail_lru;
	err = rcl_domain_attach(c->dom, &c->lru, 0);
	if (!err)
		err = rcl_domain_reclaimer_start(c->dom);
	if (!err)
		err = rcl_domain_flusher_start(c->dom, &wb_ops, c, FLUSH_BATCH);
	if (!err)
		return 0;
	rcl_domain_reclaimer_stop(c->dom);
	rcl_domain_detach(c->dom, &c->lru);
	rcl_domain_free(c->dom);
fail_lru:
	rcl_lruvec_destroy(&c->lru);
fail_file:
	close(c->fd);
	unlink(c->path);
fail_slots:
	for (i = 0; i < NR_BLOCKS; i++)
		pthread_mutex_destroy(&c->slots[i].lock);
	return err;
}

/*
 * Drop every cached block (all clean by now); returns how many, and counts
 * the cached blocks that differ from the model.
 */
static unsigned long cache_clear(struct cache *c, unsigned long *bad)
{
	unsigned long n = 0;
	unsigned i;
	int err;

	for (i = 0; i < NR_BLOCKS; i++) {
		struct slot *s = &c->slots[i];
		struct block *b;

		pthread_mutex_lock(&s->lock);
		b = s->b;
		if (b) {
			s->b = NULL;
			b->hashed = false;
		}
		pthread_mutex_unlock(&s->lock);
		if (!b)
			continue;
		if (!block_matches(b->data, i, c->version[i]))
			(*bad)++;
		err = rcl_lruvec_del_wait(&c->lru, &b->lru);
		if (err) {
			lib_error(c, "rcl_lruvec_del_wait()", err);
			continue;	/* still known to the library: leak it */
		}
		block_put(c, b);
		n++;
	}
	return n;
}

/* Returns the first failure; the cache is gone only if 0. */
static int cache_destroy(struct cache *c)
{
	unsigned i;
	int err = rcl_domain_flusher_stop(c->dom);

	if (!err)
		err = rcl_domain_reclaimer_stop(c->dom);
	if (!err)
		err = rcl_domain_detach(c->dom, &c->lru);
	if (!err)
		err = rcl_domain_free(c->dom);
	if (!err)
		err = rcl_lruvec_destroy(&c->lru);
	if (err)
		return err;
	close(c->fd);
	unlink(c->path);
	for (i = 0; i < NR_BLOCKS; i++)
		pthread_mutex_destroy(&c->slots[i].lock);
	return 0;
}

/* Read every block back from the file; returns how many differ. */
static unsigned long verify_file(struct cache *c, unsigned long *io_failed)
{
	uint64_t data[BLOCK_WORDS];
	unsigned long bad = 0;
	uint32_t nr;

	for (nr = 0; nr < NR_BLOCKS; nr++) {
		if (block_io(c->fd, data, nr, false) != 0) {
			(*io_failed)++;
			continue;
		}
		if (!block_matches(data, nr, c->version[nr])) {
			if (!bad)
				fprintf(stderr, "writeback: block %" PRIu32
					" in the file does not hold version %"
					PRIu64 "\n", nr, c->version[nr]);
			bad++;
		}
	}
	return bad;
}

/* ------------------------------------------------------------------------- */
/* Command line and report                                                   */
/* ------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: writeback [OPTION]...\n"
		"Run read-modify-write threads on a write-back cache of the\n"
		"blocks of a temporary file, built on a libreclaim memory domain\n"
		"and its flusher thread; then check the file against a model.\n"
		"\n"
		"  -n, --ops N            writes per thread (default %lu)\n"
		"  -t, --threads T        writer threads, 1..%u (default %u)\n"
		"  -b, --budget BLOCKS    cache budget in blocks of %u bytes,\n"
		"                         %u..%u (default %u)\n"
		"  -s, --seed S           workload seed (default %llu)\n"
		"  -h, --help             show this help\n"
		"\n"
		"The file (%u blocks) is created with mkstemp() under $TMPDIR\n"
		"(or /tmp) and removed at the end.\n"
		"Exit status: 0 if every self-check passed, 1 otherwise.\n",
		DEFAULT_OPS, MAX_THREADS, DEFAULT_THREADS, BLOCK_SIZE,
		MIN_BUDGET, NR_BLOCKS, DEFAULT_BUDGET,
		(unsigned long long)DEFAULT_SEED, NR_BLOCKS);
}

static bool parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static int check(bool ok, const char *what)
{
	if (!ok)
		fprintf(stderr, "writeback: FAILED: %s\n", what);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ops", required_argument, NULL, 'n' },
		{ "threads", required_argument, NULL, 't' },
		{ "budget", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ops = DEFAULT_OPS, threads = DEFAULT_THREADS;
	uint64_t budget = DEFAULT_BUDGET, seed = DEFAULT_SEED;
	unsigned long hits = 0, misses = 0, raced = 0, retries = 0;
	unsigned long cleared, bad_cached = 0, bad_file;
	unsigned long io_failed = 0;
	uint64_t written = 0, total_writes = 0;
	struct rcl_dirty_stats ds;
	struct rcl_vmstat vm;
	struct writer *writers;
	struct cache *cache;
	unsigned i;
	int opt, err, failed = 0;

	while ((opt = getopt_long(argc, argv, "n:t:b:s:h", longopts,
				  NULL)) != -1) {
		bool ok = true;

		switch (opt) {
		case 'n':
			ok = parse_u64(optarg, &ops) && ops >= 1 &&
			     ops <= 1000000000;
			break;
		case 't':
			ok = parse_u64(optarg, &threads) && threads >= 1 &&
			     threads <= MAX_THREADS;
			break;
		case 'b':
			ok = parse_u64(optarg, &budget) &&
			     budget >= MIN_BUDGET && budget <= NR_BLOCKS;
			break;
		case 's':
			ok = parse_u64(optarg, &seed);
			break;
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return EXIT_FAILURE;
		}
		if (!ok) {
			const struct option *lo = longopts;

			while (lo->val != opt)
				lo++;
			fprintf(stderr, "writeback: bad value for --%s: '%s'\n",
				lo->name, optarg);
			return EXIT_FAILURE;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return EXIT_FAILURE;
	}

	cache = malloc(sizeof(*cache));
	writers = calloc(threads, sizeof(*writers));
	if (!cache || !writers) {
		fprintf(stderr, "writeback: out of memory\n");
		free(cache);
		free(writers);
		return EXIT_FAILURE;
	}
	err = cache_init(cache, (unsigned)budget);
	if (err) {
		fprintf(stderr, "writeback: cannot create the cache: %s\n",
			strerror(-err));
		free(cache);
		free(writers);
		return EXIT_FAILURE;
	}
	printf("writeback: %" PRIu64 " threads x %" PRIu64 " writes on %u "
	       "blocks of %u bytes (%u%% on %u%% of them), budget %" PRIu64
	       " blocks, seed %" PRIu64 "\n", threads, ops, NR_BLOCKS,
	       BLOCK_SIZE, HOT_PERCENT, HOT_BLOCKS * 100 / NR_BLOCKS, budget,
	       seed);

	for (i = 0; i < threads; i++) {
		struct writer *w = &writers[i];

		w->cache = cache;
		w->id = i;
		w->rng = seed ^ mix64(i + 1);
		w->nr_ops = ops;
		err = pthread_create(&w->thread, NULL, writer_main, w);
		if (err) {
			fprintf(stderr, "writeback: pthread_create: %s\n",
				strerror(err));
			threads = i;
			failed = 1;
			break;
		}
	}
	for (i = 0; i < threads; i++) {
		struct writer *w = &writers[i];

		pthread_join(w->thread, NULL);
		printf("  thread %u: %lu writes (%lu hits, %lu misses), "
		       "%lu throttle timeouts\n", w->id, w->hits + w->misses,
		       w->hits, w->misses, w->timeouts);
		hits += w->hits;
		misses += w->misses;
		raced += w->raced;
		retries += w->charge_retries;
	}

	/*
	 * Shutdown: nothing reclaims any more; stop the flusher (it finishes
	 * its batch), then write every dirty block in this thread.  The other
	 * order works too since rcl_domain_writeback_all() waits for the
	 * flusher thread's batch and passes again; before it did, a block
	 * dirtied during that batch's write came back dirty after the call
	 * (this example, in that order, failed 6 of 80 runs under load; 0 of
	 * 80 since).  Nothing may be dirty or under writeback after.
	 */
	err = rcl_domain_reclaimer_stop(cache->dom);
	if (err)
		lib_error(cache, "rcl_domain_reclaimer_stop()", err);
	err = rcl_domain_flusher_stop(cache->dom);
	if (err)
		lib_error(cache, "rcl_domain_flusher_stop()", err);
	err = rcl_domain_writeback_all(cache->dom, &wb_ops, cache, &written);
	if (err)
		lib_error(cache, "rcl_domain_writeback_all()", err);
	rcl_domain_dirty_stats(cache->dom, &ds);
	rcl_domain_vmstat(cache->dom, &vm);
	total_writes = atomic_load(&cache->writes);

	printf("cache:    %lu hits, %lu misses read from the file, %" PRIu64
	       " clean blocks evicted, %" PRIu64 " kept (pinned), %" PRIu64
	       " kept (dirtied after isolation)\n", hits, misses,
	       atomic_load(&cache->evicted), atomic_load(&cache->evict_busy),
	       atomic_load(&cache->evict_redirtied));
	printf("flusher:  %" PRIu64 " blocks written (writes_flusher), %" PRIu64
	       " fdatasync() calls, %" PRIu64 " wakeups; %" PRIu64
	       " flush requests, %" PRIu64 " from reclaim, %" PRIu64
	       " coalesced\n", vm.writes_flusher, atomic_load(&cache->syncs),
	       vm.flusher_wakeups, vm.flush_requests,
	       vm.flush_requests_vmscan, vm.flush_coalesced);
	printf("dirty:    writers throttled %" PRIu64 " times (%" PRIu64
	       " timeouts); reclaim met %" PRIu64 " dirty or writeback "
	       "blocks (%" PRIu64 " unqueued, %" PRIu64 " immediate), "
	       "throttled %" PRIu64 " times on writeback\n",
	       vm.dirty_throttled, vm.dirty_throttle_timeouts,
	       vm.nr_dirty_scanned, vm.nr_unqueued_dirty, vm.nr_immediate,
	       vm.writeback_throttled);
	printf("reclaim:  pgscan %" PRIu64 " background + %" PRIu64
	       " direct, pgsteal %" PRIu64 " + %" PRIu64 ", allocstall %"
	       PRIu64 ", writes_from_reclaim %" PRIu64 "\n",
	       vm.pgscan_kswapd, vm.pgscan_direct, vm.pgsteal_kswapd,
	       vm.pgsteal_direct, vm.allocstall, vm.writes_from_reclaim);
	printf("shutdown: rcl_domain_writeback_all() wrote %" PRIu64 " blocks; "
	       "left dirty %" PRIu64 ", under writeback %" PRIu64 "\n",
	       written, ds.nr_dirty, ds.nr_writeback);
	if (raced || retries)
		printf("note:     %lu misses raced with another thread's load, "
		       "%lu charges retried (budget full of dirty blocks)\n",
		       raced, retries);

	bad_file = verify_file(cache, &io_failed);
	printf("verify:   %u blocks read back from the file, %lu differ from "
	       "the model\n", NR_BLOCKS, bad_file);

	failed |= check(atomic_load(&cache->evict_dirty_flag) == 0,
			"the evict callback was handed a dirty block");
	failed |= check(vm.writes_from_reclaim == 0,
			"reclaim wrote (writes_from_reclaim != 0)");
	failed |= check(vm.writes_flusher == total_writes,
			"writes_flusher differs from the write callback's count");
	failed |= check(ds.nr_dirty == 0 && ds.nr_writeback == 0,
			"blocks still dirty or under writeback after the flush");
	failed |= check(atomic_load(&cache->bad_blocks) == 0,
			"a write found a block that did not match the model");
	failed |= check(atomic_load(&cache->io_errors) == 0 && io_failed == 0,
			"an I/O call failed");
	failed |= check(atomic_load(&cache->lib_errors) == 0,
			"a library call failed unexpectedly");
	failed |= check(atomic_load(&cache->evicted) ==
				vm.pgsteal_kswapd + vm.pgsteal_direct,
			"pgsteal differs from the evict callback's count");
	failed |= check(bad_file == 0,
			"the file lost a write (it differs from the model)");

	cleared = cache_clear(cache, &bad_cached);
	failed |= check(bad_cached == 0,
			"a cached block differs from the model");
	failed |= check(rcl_domain_usage(cache->dom) == 0,
			"usage is not 0 after every block was dropped");
	err = cache_destroy(cache);
	printf("teardown: %lu blocks dropped, domain, lruvec and file removed: "
	       "%d\n", cleared, err);
	failed |= check(err == 0, "the domain or the lruvec could not go");
	free(writers);
	if (!err)
		free(cache);

	printf("%s\n", failed ? "FAILED" : "OK");
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
