// SPDX-License-Identifier: MIT
// <reclaim/sqlite.h> (installed with libreclaim-sqlite) compiles as C++11
// and links from C++, as test_cxx_headers.cpp checks for the others.
#include <reclaim/sqlite.h>

#include <cerrno>

int main()
{
	struct rcl_sqlite_stats st = {};
	struct rcl_sqlite_config cfg = {};

	if (rcl_sqlite_stats(&st) != 0 || rcl_sqlite_stats(nullptr) != -EINVAL)
		return 1;
	if (rcl_sqlite_page_charge(4096, 0) != RCL_SQLITE_PAGE_OVERHEAD + 4096)
		return 1;
	if (rcl_sqlite_install(nullptr) != -EINVAL ||
	    rcl_sqlite_install(&cfg) != -EINVAL)	/* no domain */
		return 1;
	if (rcl_sqlite_cache_stats(nullptr, "main", &st) != -EINVAL)
		return 1;
	return 0;
}
