/* SPDX-License-Identifier: MIT */
/*
 * trace.h - decoding a cache-access trace into a key stream.
 *
 * Every format turns its file into a sequence of unsigned 64-bit keys, one
 * per request, by the rules of the shared traces' README
 * (../shared/traces/README.md).  The stream is then renumbered by first
 * appearance (the first distinct key becomes 0, the next 1, ...), which gives
 * the number of unique keys for free and lets the policies index arrays
 * instead of hash tables.  Renumbering is a one-to-one relabelling of the
 * keys, so it changes no miss ratio of a policy whose decisions do not depend
 * on key values (every policy of rcl-sim but wtinylfu).  The original key of
 * each id is kept beside the stream, for the one policy whose decisions do
 * depend on it: wtinylfu's sketch hashes it as libCacheSim hashes its
 * obj_id.
 *
 * Three formats carry object sizes (adapt_size, oracleGeneral, and csv with
 * a size column): their traces keep each request's size beside its id, for
 * byte capacities and byte miss ratios.  A request's size is the size of the
 * object as that request sees it; what a policy charges when the size of a
 * cached object changes between requests is the policy's business (rcl-sim's
 * policies charge the size of the request that inserted the object, as
 * libCacheSim does).
 *
 * The input is read through libarchive's "raw" format with its decompression
 * filters: plain, gzip, bzip2, xz, zstd and lz4 files (and .lzma and .Z files
 * by their names), and standard input (path "-"), are read the same way.
 */
#ifndef RCL_SIM_TRACE_H
#define RCL_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * struct trace_options - how to decode a trace
 * @format: a name from trace_formats[]
 * @csv_key_col: csv: the 1-based column that holds the key
 * @csv_header: csv: skip the first line
 * @csv_sep: csv: the field separator
 * @csv_size_col: csv: the 1-based column that holds the object's size in
 *	bytes, or 0 for a trace without sizes
 */
struct trace_options {
	const char *format;
	unsigned csv_key_col;
	bool csv_header;
	char csv_sep;
	unsigned csv_size_col;
};

/**
 * struct trace - a decoded trace
 * @ids: the key stream renumbered by first appearance, one id per request
 * @nr_requests: length of @ids
 * @nr_unique: number of distinct keys; every id is < @nr_unique
 * @nr_records: records read from the file (lines or fixed-size records)
 * @sizes: for a trace with sizes, each request's object size in bytes
 *	(parallel to @ids; a size of 0 in the file counts as 1); NULL for a
 *	trace without sizes
 * @request_bytes: with @sizes, the sum of every request's size
 * @unique_bytes: with @sizes, the sum over the distinct keys of the size of
 *	each one's first request (libCacheSim's "unique bytes")
 * @keys: the original key of each id, @nr_unique entries: @keys[id] is the
 *	decoded key (by the shared traces' rules) that id stands for
 */
struct trace {
	uint32_t *ids;
	size_t nr_requests;
	uint32_t nr_unique;
	uint64_t nr_records;
	uint32_t *sizes;
	uint64_t request_bytes;
	uint64_t unique_bytes;
	uint64_t *keys;
};

/**
 * struct trace_format_info - one supported format
 * @name: the --format name
 * @help: a one-line description of the record and its decoding
 */
struct trace_format_info {
	const char *name;
	const char *help;
};

/** The supported formats, terminated by an entry with a NULL name. */
extern const struct trace_format_info trace_formats[];

/**
 * trace_has_sizes() - does a format give each request an object size?
 * @opt: the format and its options
 *
 * Return: true for adapt_size, oracleGeneral, and csv with a size column.
 */
bool trace_has_sizes(const struct trace_options *opt);

/**
 * trace_load() - read and decode a whole trace
 * @path: a file name, or "-" for standard input
 * @opt: the format and its options
 * @t: receives the trace (free it with trace_free())
 * @err: receives a message on failure
 * @errlen: size of @err
 *
 * Return: 0, or -1 with a message in @err (the message names the file, and
 * the line or record where decoding failed).
 */
int trace_load(const char *path, const struct trace_options *opt,
	       struct trace *t, char *err, size_t errlen);

/** trace_free() - release a trace loaded by trace_load(); NULL is ignored */
void trace_free(struct trace *t);

#endif /* RCL_SIM_TRACE_H */
