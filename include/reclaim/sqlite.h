/* SPDX-License-Identifier: MIT */
/**
 * DOC: sqlite - SQLite's page cache on a libreclaim memory domain
 *
 * libreclaim-sqlite is a &sqlite3_pcache_methods2 implementation: every
 * page cache SQLite creates (one per open database file, attached
 * database, temporary database) keeps its unpinned pages on an lruvec of
 * its own, attached to one memory domain whose budget the application
 * sets.  The domain's reclaim (direct, in the thread whose page needs room,
 * or the domain's background reclaimer) evicts the coldest unpinned pages
 * of all the caches together; workingset shadows make a page that is read
 * again soon after its eviction go straight to the active list.
 *
 * Install it once, before SQLite is initialised:
 *
 * .. code-block:: c
 *
 *	struct rcl_domain_config dc = {
 *		.budget = 64 << 20,
 *		.max_lruvecs = 1024,	// >= the page caches open at once
 *	};
 *	rcl_domain_new(&dc, &d);
 *	struct rcl_sqlite_config sc = { .domain = d };
 *	rcl_sqlite_install(&sc);	// sqlite3_config(SQLITE_CONFIG_PCACHE2)
 *	sqlite3_initialize();
 *	...			// every connection's page caches share the budget
 *	sqlite3_shutdown();	// after the last sqlite3_close()
 *	rcl_domain_free(d);
 *
 * One lruvec per cache.  Each cache open at once takes one of the domain's
 * attachment slots (&rcl_domain_config.max_lruvecs, 256 if 0), and an
 * xCreate that finds none free fails: SQLite reports SQLITE_NOMEM (from
 * sqlite3_open() or the statement that needed the cache).  SQLite creates
 * a cache for each database a connection opens (main, each attached one,
 * temp once used) and for the ephemeral tables (temporary b-trees) and
 * temporary databases of running statements (VACUUM's copy), so
 * set max_lruvecs to cover them all, plus the domain's other lruvecs (an
 * objcache takes one per shard); RCL_LRUVEC_MAX_IDS bounds the lruvecs of
 * the process.
 *
 * What is charged.  Each page is one allocation from the configured
 * allocator: RCL_SQLITE_PAGE_OVERHEAD bytes of metadata, then szPage bytes
 * of page buffer, then szExtra bytes of SQLite's extra area.  That sum is
 * charged to the domain when the page is created and uncharged when it is
 * freed, and is its weight on the lruvec.  A cache's own structure and its
 * two tables (the page index, 8 bytes a bucket, and the shadow table, 16
 * bytes a slot, with as many buckets as the cache holds pages, at least
 * 64) are charged too: the structure and the first tables at xCreate
 * (which fails, and SQLite's open with SQLITE_NOMEM, when a strict domain
 * has no room for them after reclaim), each doubling of the tables before
 * it allocates the new ones, the old ones uncharged after they are freed.
 * A doubling the domain refuses is not made (the old tables stay, with
 * longer chains).  So every byte the plug-in holds from its allocator is
 * charged before it is allocated and uncharged after it is freed: the
 * allocator's bytes <= the plug-in's charge <= the budget (strict mode), at
 * every instant.
 *
 * PRAGMA cache_size (xCachesize) is a *soft share*, not a limit: a cache
 * may hold more pages, up to what the domain's budget allows.  When a new
 * page needs room (the domain's headroom is below its low watermark, or
 * the domain refused the charge), a cache above its share first evicts its
 * own coldest unpinned pages; a cache at or below its share takes the room
 * from the domain's reclaim, which takes from every cache in proportion to
 * its size.  sqlite3_db_release_memory() and PRAGMA shrink_memory reach
 * xShrink, which frees every unpinned page of the cache at once (no
 * shadows are kept for them); sqlite3_release_memory() does not (SQLite
 * frees only its built-in cache's pages there): rcl_domain_reclaim() or a
 * lower budget shrinks every cache.  docs/sqlite.md has
 * the details of xFetch's create flags, xRekey and xTruncate.  A strict
 * domain needs room to spare: give it at least 32 pages per connection
 * beyond what transactions pin, or concurrent reclaims that find each
 * other's pages busy can fail a read with SQLITE_NOMEM (docs/sqlite.md).
 *
 * Synchronization.  Every function here may be called from any thread.
 * The page-cache methods are thread-safe for SQLite's serialized and
 * multi-thread modes: each cache has a mutex, taken by the methods and (by
 * trylock only) by the domain's evict callback, so reclaim from any thread
 * never waits for a connection.  SQLite may also be used inside the
 * library's evict and write callbacks: there a method never waits for a
 * reclaimer, and a page another thread holds isolated is freed later, by
 * the evict callback or a later method outside the callbacks (at the
 * latest at sqlite3_shutdown()); docs/sqlite.md, "SQLite used inside the
 * library's callbacks".
 */
#ifndef RECLAIM_SQLITE_H
#define RECLAIM_SQLITE_H

#include <stdint.h>

#include <reclaim/common.h>
#include <reclaim/domain.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sqlite3;

/** Config flag: keep no workingset shadows (no refault detection). */
#define RCL_SQLITE_NO_SHADOWS (1u << 0)

/**
 * RCL_SQLITE_PAGE_OVERHEAD - the plug-in's metadata per page, in bytes
 *
 * Charged with each page on top of szPage + szExtra (LP64; the value is
 * checked at compile time against the page header's size).
 */
#define RCL_SQLITE_PAGE_OVERHEAD 64u

/**
 * struct rcl_sqlite_config - what rcl_sqlite_install() needs
 * @domain: required: the budget every page cache shares; its max_lruvecs
 *	must cover every page cache open at once (one lruvec each)
 * @allocator: NULL: malloc; every byte of the plug-in (page buffers,
 *	extras, metadata, tables) comes from it.  The structure is copied
 *	at install (it may be on the caller's stack); its @ctx must stay
 *	valid while SQLite uses the plug-in
 * @flags: 0, or RCL_SQLITE_NO_SHADOWS
 */
struct rcl_sqlite_config {
	struct rcl_domain *domain;
	const struct rcl_allocator *allocator;
	unsigned flags;
};

/**
 * rcl_sqlite_install() - install the plug-in as SQLite's page cache
 * @cfg: the configuration (copied, with the allocator structure it points to)
 *
 * sqlite3_config(SQLITE_CONFIG_PCACHE2, ...).  Call it once, before
 * sqlite3_initialize() (or after sqlite3_shutdown(), but only once per
 * process).  The domain must outlive SQLite's use of it: free it only
 * after the last connection is closed (every cache destroyed).
 *
 * Context: any thread, but not concurrently with SQLite's initialisation
 * (the same rule as sqlite3_config()).
 * Return: 0; -EINVAL for a NULL @cfg or domain, an unknown flag, or an
 * allocator without both callbacks; -EBUSY if SQLite is already
 * initialised or the plug-in is already installed (SQLite said
 * SQLITE_MISUSE; nothing changed).
 */
RCL_API int rcl_sqlite_install(const struct rcl_sqlite_config *cfg);

/**
 * struct rcl_sqlite_stats - counters of the plug-in (or of one cache)
 * @caches: open page caches (xCreate - xDestroy); 1 for one cache
 * @pages: pages held (pinned + unpinned)
 * @pinned: pages pinned now
 * @charged: bytes charged to the domain now (pages and @meta)
 * @meta: of @charged, the bytes of cache structures and their tables
 * @hits: xFetch found the page
 * @misses: xFetch did not (whatever the create flag)
 * @evictions: pages reclaimed by the domain (or by the cache itself, above
 *	its share), not those SQLite discarded, truncated or shrank
 * @refault_activations: pages that refaulted close enough to be activated
 */
struct rcl_sqlite_stats {
	uint64_t caches;
	uint64_t pages;
	uint64_t pinned;
	uint64_t charged;
	uint64_t hits, misses;
	uint64_t evictions;
	uint64_t refault_activations;
	uint64_t meta;
};

/**
 * rcl_sqlite_stats() - the plug-in's counters, summed over all caches
 * @out: receives them
 *
 * The counters of caches destroyed already are kept in the sums (hits,
 * misses, evictions, refault_activations); the levels (caches, pages,
 * pinned, charged) are those of now.  Each counter is read atomically; the
 * set may mix moments while other threads work.
 *
 * Context: any thread, lock-free.
 * Return: 0; -EINVAL for NULL.
 */
RCL_API int rcl_sqlite_stats(struct rcl_sqlite_stats *out);

/**
 * rcl_sqlite_cache_stats() - the counters of one database's page cache
 * @db: an open connection
 * @schema: "main", "temp" or an attached database's name; NULL = "main"
 * @out: receives the cache's counters (@caches = 1)
 *
 * Finds the cache by running "SELECT 1 FROM schema.sqlite_master" under
 * the connection's mutex and noting which cache the first xFetch of this
 * thread went to (page 1 of that database).  So it reads the schema's
 * first page (from the cache or the file) and needs a read transaction
 * (it fails while another connection holds an exclusive lock).
 *
 * Context: any thread, not from inside an SQLite callback of @db (it runs a
 * statement) nor from a page-cache method.
 * Return: 0; -EINVAL for NULL @db or @out; -ENOENT if @schema is not a
 * database of @db, or the plug-in is not SQLite's page cache; -EIO if the
 * statement failed otherwise (busy, locked, out of memory).
 */
RCL_API int rcl_sqlite_cache_stats(struct sqlite3 *db, const char *schema,
				   struct rcl_sqlite_stats *out);

/**
 * rcl_sqlite_page_charge() - the charge of one page
 * @sz_page: the page size
 * @sz_extra: SQLite's extra bytes per page
 *
 * Context: lock-free.
 * Return: RCL_SQLITE_PAGE_OVERHEAD + @sz_page + @sz_extra.
 */
RCL_API uint64_t rcl_sqlite_page_charge(unsigned sz_page, unsigned sz_extra);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_SQLITE_H */
