/* SPDX-License-Identifier: MIT */
/*
 * USDT probes, provider "libreclaim", at the sites of the kernel's reclaim
 * tracepoints and named after them where one exists.  With the Meson feature
 * 'usdt' on, <sys/sdt.h> puts a nop and an ELF note (.note.stapsdt) at each
 * site; a tracer (bpftrace, perf, SystemTap) that attaches turns the nop
 * into a trap.  Nobody attached: a nop, and the arguments stay where they
 * are (in registers or memory the code had anyway).  Without the feature the
 * macros vanish.
 *
 * Probes and their arguments (tools/rcl-vmstat reads them):
 *
 *   mm_shrink_slab_start   name, shrinker, partition, freeable, backlog,
 *                          delta, total_scan, priority
 *   mm_shrink_slab_end     name, shrinker, partition, freed, scanned,
 *                          new_backlog
 *   mm_vmscan_lru_shrink_inactive
 *                          lruvec id, type, scanned, reclaimed, dirty,
 *                          writeback, priority
 *   mm_vmscan_kswapd_wake  domain, headroom
 *   mm_vmscan_kswapd_sleep domain, freed (objects, LRU + shrinkers)
 *   mm_vmscan_direct_reclaim_begin
 *                          domain, goal (objects)
 *   mm_vmscan_direct_reclaim_end
 *                          domain, reclaimed (LRU objects), slab_reclaimed,
 *                          lowest priority
 *   writeback_queue        domain, reason (enum rcl_flush_reason),
 *                          nr_to_write (0: all)
 *   workingset_refault     lruvec id, type, activated (0/1), distance
 */
#ifndef RECLAIM_LIB_PROBES_H
#define RECLAIM_LIB_PROBES_H

#if defined(RCL_HAVE_USDT) && RCL_HAVE_USDT
#include <sys/sdt.h>
/*
 * <sys/sdt.h> passes an empty variadic argument inside its own macros,
 * which clang's -Wpedantic reports at every probe site.  The diagnostic is
 * given while the macro is expanded, where a push/pop _Pragma does not
 * reach, so it is off for the files that include this header (only the
 * expansion of an empty __VA_ARGS__ is concerned, a GNU extension that gcc
 * and clang both support).
 */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wgnu-zero-variadic-macro-arguments"
#endif
#define RCL_PROBE2(n, a, b) DTRACE_PROBE2(libreclaim, n, a, b)
#define RCL_PROBE3(n, a, b, c)                                                \
	DTRACE_PROBE3(libreclaim, n, a, b, c)
#define RCL_PROBE4(n, a, b, c, d)                                             \
	DTRACE_PROBE4(libreclaim, n, a, b, c, d)
#define RCL_PROBE6(n, a, b, c, d, e, f)                                       \
	DTRACE_PROBE6(libreclaim, n, a, b, c, d, e, f)
#define RCL_PROBE7(n, a, b, c, d, e, f, g)                                    \
	DTRACE_PROBE7(libreclaim, n, a, b, c, d, e, f, g)
#define RCL_PROBE8(n, a, b, c, d, e, f, g, h)                                 \
	DTRACE_PROBE8(libreclaim, n, a, b, c, d, e, f, g, h)
#else
#define RCL_PROBE2(n, a, b) do { } while (0)
#define RCL_PROBE3(n, a, b, c) do { } while (0)
#define RCL_PROBE4(n, a, b, c, d) do { } while (0)
#define RCL_PROBE6(n, a, b, c, d, e, f) do { } while (0)
#define RCL_PROBE7(n, a, b, c, d, e, f, g) do { } while (0)
#define RCL_PROBE8(n, a, b, c, d, e, f, g, h) do { } while (0)
#endif

#endif /* RECLAIM_LIB_PROBES_H */
