/* SPDX-License-Identifier: MIT */
/* Version of the running library (see <reclaim/version.h>). */
#include <reclaim/version.h>

RCL_API const char *rcl_version(void)
{
	return RCL_VERSION_STRING;
}

RCL_API unsigned rcl_version_number(void)
{
	return RCL_VERSION_NUMBER;
}
