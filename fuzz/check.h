/* SPDX-License-Identifier: MIT */
/*
 * The fuzz targets' one failure report: CHECK(cond, fmt, ...) prints where
 * (FUZZ_WHERE_FMT and FUZZ_WHERE_ARGS, which each target defines before
 * including this: its name and its step, operation or parser), the
 * message and the condition, then aborts, so that libFuzzer keeps the input.
 */
#ifndef FUZZ_CHECK_H
#define FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, FUZZ_WHERE_FMT "%s:%d: ",            \
				FUZZ_WHERE_ARGS, __FILE__, __LINE__);        \
			fprintf(stderr, __VA_ARGS__);                         \
			fprintf(stderr, " [%s]\n", #cond);                    \
			abort();                                              \
		}                                                             \
	} while (0)

#endif /* FUZZ_CHECK_H */
