/* SPDX-License-Identifier: MIT */
/*
 * peers_lfu.h - peer policies of rcl-sim that keep more than recency,
 * each with the semantics and parameters of the libCacheSim runs behind the
 * reference table (see peers_lfu.c and README.md).
 */
#ifndef RCL_SIM_PEERS_LFU_H
#define RCL_SIM_PEERS_LFU_H

#include "policies.h"

/* s3fifo: small FIFO 10 %, main FIFO with a 2-bit clock, ghost FIFO 90 %. */
extern const struct sim_policy sim_policy_s3fifo;

/* lirs: LIR set and a resident HIR share of 1 % (at least one object). */
extern const struct sim_policy sim_policy_lirs;

/* wtinylfu: a 1 % LRU window, a main SLRU 1:4, a counting sketch. */
extern const struct sim_policy sim_policy_wtinylfu;

#endif /* RCL_SIM_PEERS_LFU_H */
