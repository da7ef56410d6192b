/* SPDX-License-Identifier: MIT */
/*
 * The sub-commands of rcl-bench, one file each (bench/NAME.c), dispatched by
 * main() in rcl-bench.c.  Each takes the command's own argv (argv[0] is the
 * command's name) and returns the exit status: 0 success, 1 the benchmark
 * failed (a library call returned an error, a state check failed, out of
 * memory), 2 bad usage.
 */
#ifndef RCL_BENCH_COMMANDS_H
#define RCL_BENCH_COMMANDS_H

int cmd_hotpath(int argc, char **argv);
int cmd_windup(int argc, char **argv);
int cmd_shrink_scale(int argc, char **argv);
int cmd_stream(int argc, char **argv);
int cmd_writeback(int argc, char **argv);
int cmd_objcache(int argc, char **argv);
int cmd_pressure(int argc, char **argv);
#ifdef RCL_BENCH_HAVE_TRACES
int cmd_tenants(int argc, char **argv);
#endif
#ifdef RCL_BENCH_HAVE_SQLITE
int cmd_sqlite(int argc, char **argv);
#endif

#endif /* RCL_BENCH_COMMANDS_H */
