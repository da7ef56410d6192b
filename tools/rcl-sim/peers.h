/* SPDX-License-Identifier: MIT */
/*
 * peers.h - peer replacement policies of rcl-sim, each written after its
 * paper and, where libCacheSim (the simulator behind the reference table)
 * departs from the paper, after libCacheSim, so that rcl-sim reproduces the
 * table's rows (README.md, "Peer policies", lists the departures).
 *
 * In object mode every object has size 1 and the capacity is in objects, as
 * in the table; in byte mode (policies.h) objects are charged their sizes
 * with libCacheSim's byte semantics (README.md, "Byte budgets").  The
 * objects are entries of sim_policies[] (policies.c).
 */
#ifndef RCL_SIM_PEERS_H
#define RCL_SIM_PEERS_H

#include "policies.h"

/* CLOCK with one reference bit (second chance; libCacheSim n-bit-counter=1) */
extern const struct sim_policy sim_policy_clock;
/* SIEVE (Zhang et al., NSDI '24) */
extern const struct sim_policy sim_policy_sieve;
/* ARC (Megiddo and Modha, FAST '03) */
extern const struct sim_policy sim_policy_arc;
/* 2Q (Johnson and Shasha, VLDB '94): A1in 25 %, A1out 50 % of the capacity */
extern const struct sim_policy sim_policy_2q;
/* segmented LRU, 4 equal segments */
extern const struct sim_policy sim_policy_slru;
/* segmented LRU, 2 equal segments (the table's slru:n-seg=2) */
extern const struct sim_policy sim_policy_slru2;

#endif /* RCL_SIM_PEERS_H */
