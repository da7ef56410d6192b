/* SPDX-License-Identifier: MIT */
/*
 * The pressure monitor's test seam (lib/pressure.c): internal.
 *
 * What a hermetic test cannot make a temporary file do: be on procfs or
 * cgroup2 (so that triggers are tried), accept a trigger and then raise
 * POLLPRI, take a short write, or be the process's /proc/self/mountinfo.  Each hook, when set, replaces one system
 * call of the monitor's; NULL (the default) is the system call itself.  A
 * test sets them around the calls that use them, from one thread, with no
 * monitor thread running; the library never sets them.
 */
#ifndef RECLAIM_LIB_PRESSURE_INTERNAL_H
#define RECLAIM_LIB_PRESSURE_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

struct rcl__pressure_seam {
	/* fstatfs(@fd)'s f_type: where triggers are tried. */
	unsigned long (*fs_magic)(int fd);
	/*
	 * openat(@dir, @path, @flags) of a descriptor the monitor polls: a
	 * PSI trigger's (read-write), systemd's PSI file's trigger, v2
	 * memory.events.  The descriptor, or -1 with errno set.
	 */
	int (*open_poll)(int dir, const char *path, int flags);
	/*
	 * open(@path, @flags) of /proc/self/cgroup and /proc/self/mountinfo,
	 * which rcl_pressure_add_cgroup(p, NULL, 0) reads.  The descriptor,
	 * or -1 with errno set.
	 */
	int (*open_proc)(const char *path, int flags);
	/* write(2) of a trigger or of systemd's data to a FIFO or socket. */
	ssize_t (*write)(int fd, const void *buf, size_t len);
	/*
	 * Added to a trigger descriptor's EPOLLPRI in the epoll set: EPOLLET
	 * makes epoll report its event once, as psi_trigger_poll() clears
	 * the event it reports.
	 */
	unsigned trigger_epoll_flags;
};

extern struct rcl__pressure_seam rcl__pressure_seam;

#endif /* RECLAIM_LIB_PRESSURE_INTERNAL_H */
