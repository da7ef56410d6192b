/* SPDX-License-Identifier: MIT */
/**
 * DOC: libreclaim umbrella header
 *
 * Includes every public header of the library.  Applications may include
 * the module headers (<reclaim/lruvec.h>, ...) individually instead.
 */
#ifndef RECLAIM_RECLAIM_H
#define RECLAIM_RECLAIM_H

#include <reclaim/common.h>
#include <reclaim/version.h>
#include <reclaim/clock.h>
#include <reclaim/lruvec.h>
#include <reclaim/shrinker.h>
#include <reclaim/scan.h>
#include <reclaim/domain.h>
#include <reclaim/flusher.h>
#include <reclaim/workingset.h>
#include <reclaim/refusal.h>
#include <reclaim/objcache.h>
#include <reclaim/pressure.h>

#endif /* RECLAIM_RECLAIM_H */
