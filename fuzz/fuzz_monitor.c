/* SPDX-License-Identifier: MIT */
/*
 * fuzz_monitor - libFuzzer target: a script of pressure-monitor operations
 *
 * The input drives one pressure monitor (<reclaim/pressure.h>) on a fake
 * clock, over one domain with an lruvec of weight-1 objects, a manual
 * source and (optionally) a fake cgroup directory, v1 or v2, whose files the
 * script rewrites with well-formed values or with raw input bytes.  After
 * every operation the monitor's state is checked against its contract:
 *
 * - the budget it applied lies within [floor, base], or below the floor
 *   down to the container budget (at least 1), which binds below it, and
 *   is the domain's budget unless the script set one itself since;
 * - the pressure budget is none or within [floor, base];
 * - each source's wait lies within [window, backoff_max], and a source
 *   that acted twice did so at least one window apart (the rate limit);
 *   after an action that freed nothing its wait doubled (bounded);
 * - each trim follows trim_min freed bytes, and two trims are
 *   trim_interval apart;
 * - a cgroup file that does not parse never moves the container budget
 *   ("never a wild budget"): it counts a read error instead;
 * - every return code is the documented one.
 *
 * Encoding (fuzz/README.md): 8 setup bytes, then 4-byte operations (an op
 * byte and 3 arguments).  Single-threaded: no monitor thread; dispatch is
 * called by the script.  Without FUZZ_LIBFUZZER the file has a main() that
 * replays files (fuzz/replay.h), for the Meson test 'fuzz-monitor-corpus'.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <reclaim/reclaim.h>
#include <reclaim/pressure.h>

static unsigned g_step, g_op;

#define FUZZ_WHERE_FMT "fuzz_monitor: step %u op %u: "
#define FUZZ_WHERE_ARGS g_step, g_op
#include "check.h"
#define CHECK_RC(rc, want)                                                    \
	do {                                                                  \
		int rc_ = (rc), want_ = (want);                               \
		CHECK(rc_ == want_, "got %d, want %d", rc_, want_);          \
	} while (0)

#define MS 1000000ull
#define MAX_OBJS 4096
#define MAX_STEPS 500

struct reader {
	const uint8_t *p;
	size_t n, i;
};

static uint8_t rd8(struct reader *r)
{
	return r->i < r->n ? r->p[r->i++] : 0;
}

/* The harness's objects: a free list of nodes. */
struct fobj {
	struct rcl_lru_node lru;
	bool live;
};

static struct fobj objs[MAX_OBJS];
static struct rcl_domain *dom;
static struct rcl_lruvec lv;
static struct rcl_fake_clock *fc;
static struct rcl_pressure *mon;
static int manual = -1, cgsrc = -1;
static unsigned cg_version;
static char cgdir[64];

/* The model. */
static uint64_t m_now, m_base, m_floor, m_window, m_backoff, m_trim_interval;
static uint64_t m_trim_min;
static bool m_app_budget;	/* the script set the budget itself */
static uint64_t m_trims, m_last_trim;
static bool m_trimmed;
static struct src_model {
	uint64_t actions, empty, wait, last_action;
	bool acted;
} m_src[2];

static enum rcl_evict_status evict(struct rcl_lru_node *n,
				   struct rcl_evict_control *ctl)
{
	struct fobj *o = rcl_container_of(n, struct fobj, lru);

	(void)ctl;
	o->live = false;
	rcl_domain_uncharge(dom, 1);
	return RCL_EVICT_FREED;
}

static const struct rcl_lruvec_ops ops = { .evict = evict };

static void trim_hook(void *priv)
{
	(void)priv;
	CHECK(!m_trimmed || m_now - m_last_trim >= m_trim_interval,
	      "trims %llu ns apart", (unsigned long long)(m_now - m_last_trim));
	m_trims++;
	m_last_trim = m_now;
	m_trimmed = true;
	/* The hook may not free or stop the monitor. */
	CHECK_RC(rcl_pressure_free(mon), -EDEADLK);
	CHECK_RC(rcl_pressure_stop(mon), -EDEADLK);
}

static void write_file(const char *name, const void *buf, size_t len)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", cgdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0, "open %s", path);
	CHECK(write(fd, buf, len) == (ssize_t)len, "write %s", path);
	close(fd);
}

static void write_u64(const char *name, uint64_t v, bool max)
{
	char b[32];
	int n = max ? snprintf(b, sizeof(b), "max\n") :
		      snprintf(b, sizeof(b), "%llu\n", (unsigned long long)v);

	write_file(name, b, (size_t)n);
}

/* Well-formed cgroup files: usage, inactive file pages, limit, events. */
static void write_cgroup(uint64_t usage, uint64_t inact, uint64_t limit,
			 unsigned high_ev, unsigned max_ev)
{
	char b[256];
	int n;

	if (cg_version == 2) {
		write_u64("memory.current", usage, false);
		write_u64("memory.max", limit, limit == UINT64_MAX);
		write_u64("memory.high", 0, true);
		n = snprintf(b, sizeof(b), "anon %llu\nfile 0\ninactive_file %llu\n",
			     (unsigned long long)usage,
			     (unsigned long long)inact);
		write_file("memory.stat", b, (size_t)n);
		n = snprintf(b, sizeof(b),
			     "low 0\nhigh %u\nmax %u\noom 0\noom_kill 0\n",
			     high_ev, max_ev);
		write_file("memory.events", b, (size_t)n);
	} else {
		write_u64("memory.usage_in_bytes", usage, false);
		write_u64("memory.limit_in_bytes",
			  limit == UINT64_MAX ? 9223372036854771712ull : limit,
			  false);
		n = snprintf(b, sizeof(b), "cache 0\nrss %llu\ntotal_inactive_file %llu\n",
			     (unsigned long long)usage,
			     (unsigned long long)inact);
		write_file("memory.stat", b, (size_t)n);
	}
}

static void check_invariants(void)
{
	struct rcl_pressure_stats st;
	uint64_t lo;
	unsigned i;

	CHECK_RC(rcl_pressure_stats(mon, &st), 0);
	/* The floor is the pressure budget's; the container binds below it. */
	lo = st.container_budget ? st.container_budget : 1;
	if (lo > m_floor)
		lo = m_floor;
	CHECK(st.budget >= lo && st.budget <= m_base,
	      "budget %llu outside [%llu, %llu]", (unsigned long long)st.budget,
	      (unsigned long long)lo, (unsigned long long)m_base);
	if (!m_app_budget)
		CHECK(rcl_domain_budget(dom) == st.budget, "domain budget %llu, applied %llu",
		      (unsigned long long)rcl_domain_budget(dom),
		      (unsigned long long)st.budget);
	CHECK(st.pressure_budget == UINT64_MAX ||
		      (st.pressure_budget >= m_floor &&
		       st.pressure_budget < m_base),
	      "pressure budget %llu", (unsigned long long)st.pressure_budget);
	/* Each trim needs trim_min bytes freed (by actions or budgets). */
	CHECK(st.trims * m_trim_min <= st.freed_bytes,
	      "trims %llu, freed %llu bytes", (unsigned long long)st.trims,
	      (unsigned long long)st.freed_bytes);
	CHECK(st.trims == m_trims, "trims");
	CHECK(st.empty_actions <= st.actions, "empty actions");

	for (i = 0; i < 2; i++) {
		struct rcl_pressure_source_info si;
		int idx = i ? cgsrc : manual;
		struct src_model *m = &m_src[i];

		if (idx < 0)
			continue;
		CHECK_RC(rcl_pressure_source_info(mon, idx, &si), 0);
		CHECK(si.wait_ns >= m_window && si.wait_ns <= m_backoff,
		      "wait %llu", (unsigned long long)si.wait_ns);
		CHECK(si.actions >= m->actions && si.actions <= m->actions + 1,
		      "source %u: %llu actions in one step", i,
		      (unsigned long long)(si.actions - m->actions));
		if (si.actions > m->actions) {
			/* The rate limit: a window (or the wait) since the last. */
			if (m->acted)
				CHECK(m_now - m->last_action >= m->wait,
				      "acted %llu ns after the last, wait %llu",
				      (unsigned long long)(m_now - m->last_action),
				      (unsigned long long)m->wait);
			if (si.empty_actions > m->empty) {
				uint64_t want = m->wait * 2 > m_backoff ?
							m_backoff :
							m->wait * 2;

				CHECK(si.wait_ns == want,
				      "wait %llu after an empty action, want %llu",
				      (unsigned long long)si.wait_ns,
				      (unsigned long long)want);
			} else {
				CHECK(si.wait_ns == m_window, "wait not reset");
			}
			m->acted = true;
			m->last_action = m_now;
		}
		m->actions = si.actions;
		m->empty = si.empty_actions;
		m->wait = si.wait_ns;
	}
}

static void add_objects(unsigned n)
{
	unsigned i;

	for (i = 0; i < MAX_OBJS && n; i++) {
		struct fobj *o = &objs[i];
		int rc;

		if (o->live)
			continue;
		rc = rcl_domain_charge(dom, 1, RCL_CTX_CAPABLE, NULL);
		if (rc)
			break;
		memset(&o->lru, 0, sizeof(o->lru));
		CHECK_RC(rcl_lruvec_add(&lv, &o->lru, RCL_LRU_FILE, 1, 0), 0);
		o->live = true;
		n--;
	}
	rcl_lruvec_drain(&lv);
}

static void setup(struct reader *r)
{
	uint8_t h[8];
	struct rcl_domain_config dc = { 0 };
	struct rcl_lruvec_config lc = { .ops = &ops };
	struct rcl_pressure_config pc = { 0 };
	unsigned i;

	for (i = 0; i < 8; i++)
		h[i] = rd8(r);
	memset(objs, 0, sizeof(objs));
	memset(m_src, 0, sizeof(m_src));
	m_now = 0;
	m_app_budget = false;
	m_trims = 0;
	m_trimmed = false;
	manual = cgsrc = -1;

	CHECK_RC(rcl_fake_clock_new(0, &fc), 0);
	dc.budget = 64 + (uint64_t)h[0] * 16;	/* 64 .. 4144 */
	dc.clock = rcl_fake_clock_clock(fc);
	CHECK_RC(rcl_domain_new(&dc, &dom), 0);
	CHECK_RC(rcl_lruvec_init(&lv, &lc), 0);
	CHECK_RC(rcl_domain_attach(dom, &lv, 0), 0);

	pc.domain = dom;
	pc.clock = rcl_fake_clock_clock(fc);
	pc.flags = (h[1] & 1) ? RCL_PRESSURE_FOLLOW_CGROUP : 0;
	pc.window_ns = (1 + h[2] % 8) * 100 * MS;
	pc.backoff_max_ns = (h[2] & 0x80) ? 0 : (1 + h[3] % 16) * 500 * MS;
	pc.interval_ns = (1 + h[4] % 10) * 50 * MS;
	pc.grow_pct = h[5] % 101;
	pc.cgroup_pct = (h[6] % 100) + 1;
	pc.min_budget = (h[1] & 2) ? 0 : 1 + h[7] % 32;
	pc.trim = trim_hook;
	pc.trim_min_bytes = 1 + (h[7] >> 4) * 16;
	pc.trim_interval_ns = (1 + (h[3] >> 4)) * 200 * MS;
	CHECK_RC(rcl_pressure_new(&pc, &mon), 0);
	m_base = dc.budget;
	m_floor = pc.min_budget ? pc.min_budget :
				  (m_base / 64 ? m_base / 64 : 1);
	m_window = pc.window_ns;
	m_backoff = pc.backoff_max_ns ? pc.backoff_max_ns :
					RCL_PRESSURE_BACKOFF_MAX_DEFAULT_NS;
	if (m_backoff < m_window)
		m_backoff = m_window;
	m_trim_interval = pc.trim_interval_ns;
	m_trim_min = pc.trim_min_bytes;

	manual = rcl_pressure_add_manual(mon);
	CHECK(manual >= 0, "manual %d", manual);
	if (h[1] & 4) {
		static const char *const all[] = {
			"memory.usage_in_bytes", "memory.limit_in_bytes",
			"memory.current", "memory.max", "memory.high",
			"memory.stat", "memory.events",
		};
		char path[128];

		/* The last input's files go: a version is told by its files. */
		for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", cgdir, all[i]);
			unlink(path);
		}
		cg_version = (h[1] & 8) ? 2 : 1;
		write_cgroup(m_base * 2, 0, m_base * 4, 0, 0);
		cgsrc = rcl_pressure_add_cgroup(mon, cgdir,
						(h[1] & 16) ? cg_version : 0);
		CHECK(cgsrc >= 0, "cgroup %d", cgsrc);
		CHECK_RC(rcl_pressure_add_cgroup(mon, cgdir, 0), -EEXIST);
	}
	add_objects((unsigned)(m_base * (h[0] & 3) / 3));
}

static void teardown(void)
{
	unsigned i;

	CHECK_RC(rcl_domain_free(dom), -EBUSY);
	CHECK_RC(rcl_pressure_free(mon), 0);
	CHECK_RC(rcl_domain_detach(dom, &lv), 0);
	for (i = 0; i < MAX_OBJS; i++)
		if (objs[i].live) {
			CHECK_RC(rcl_lruvec_del(&lv, &objs[i].lru), 0);
			objs[i].live = false;
		}
	CHECK_RC(rcl_lruvec_destroy(&lv), 0);
	CHECK_RC(rcl_domain_free(dom), 0);
	rcl_fake_clock_free(fc);
}

static void advance(uint64_t ns)
{
	rcl_fake_clock_advance(fc, ns);
	m_now += ns;
}

enum {
	OP_NOTIFY, OP_ADVANCE, OP_DISPATCH, OP_ADD, OP_CGROUP, OP_GARBAGE,
	OP_SET_BUDGET, OP_QUERY, OP_INVALID, NR_OPS
};

static void op_garbage(struct reader *r, const uint8_t *a)
{
	static const char *const v1[] = { "memory.usage_in_bytes",
					  "memory.limit_in_bytes",
					  "memory.stat" };
	static const char *const v2[] = { "memory.current", "memory.max",
					  "memory.stat", "memory.events",
					  "memory.high" };
	struct rcl_pressure_stats b, e;
	uint8_t buf[64];
	unsigned n = a[1] % sizeof(buf), i;
	const char *name;

	if (cgsrc < 0)
		return;
	for (i = 0; i < n; i++)
		buf[i] = rd8(r);
	name = cg_version == 2 ? v2[a[0] % 5] : v1[a[0] % 3];
	write_file(name, buf, n);
	/* Read it now: whatever it says, the budget stays sane (checked). */
	CHECK_RC(rcl_pressure_stats(mon, &b), 0);
	advance(RCL_PRESSURE_INTERVAL_DEFAULT_NS);
	CHECK(rcl_pressure_dispatch(mon) >= 0, "dispatch");
	CHECK_RC(rcl_pressure_stats(mon, &e), 0);
	/* memory.events is not read for the budget: the others are. */
	if (e.read_errors > b.read_errors && strcmp(name, "memory.events"))
		CHECK(e.container_budget <= b.container_budget,
		      "a bad read raised the container budget");
	/* Put a good file back so that later steps read values. */
	write_cgroup(m_base * 2, 0, m_base * 4, 0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, size, 0 };

	if (!cgdir[0]) {
		snprintf(cgdir, sizeof(cgdir), "/tmp/fuzz-monitor-XXXXXX");
		CHECK(mkdtemp(cgdir), "mkdtemp");
	}
	g_step = 0;
	g_op = 0;
	setup(&r);
	check_invariants();
	while (r.i < r.n && g_step < MAX_STEPS) {
		uint8_t a[3];
		unsigned i;

		g_op = rd8(&r) % NR_OPS;
		for (i = 0; i < 3; i++)
			a[i] = rd8(&r);
		switch (g_op) {
		case OP_NOTIFY:
			CHECK_RC(rcl_pressure_notify(mon, manual, a[0] % 4), 0);
			break;
		case OP_ADVANCE:
			advance(((uint64_t)a[0] << 8 | a[1]) * MS / 4);
			break;
		case OP_DISPATCH:
			CHECK(rcl_pressure_dispatch(mon) >= 0, "dispatch");
			break;
		case OP_ADD:
			add_objects(a[0] * 4u);
			break;
		case OP_CGROUP:
			if (cgsrc >= 0) {
				uint64_t lim = a[0] == 255 ? UINT64_MAX :
					       (uint64_t)(a[0] + 1) * m_base / 32;
				uint64_t use = (uint64_t)a[1] * m_base / 32;

				write_cgroup(use, use * (a[2] & 7) / 8, lim,
					     a[2] >> 3 & 3, a[2] >> 5);
			}
			break;
		case OP_GARBAGE:
			op_garbage(&r, a);
			break;
		case OP_SET_BUDGET:
			/* The application's own change holds until the next. */
			CHECK_RC(rcl_domain_set_budget(dom, 1 + a[0]), 0);
			m_app_budget = true;
			break;
		case OP_QUERY: {
			struct rcl_memory_sample ms;

			CHECK_RC(rcl_pressure_memory(mon, &ms), 0);
			CHECK(ms.charged_bytes == rcl_domain_usage(dom),
			      "charged bytes");
			CHECK(rcl_pressure_next_deadline(mon) != RCL_CLOCK_FOREVER,
			      "no deadline");
			break;
		}
		default:
			CHECK_RC(rcl_pressure_notify(mon, manual, 4 + a[0] % 8),
				 -EINVAL);
			CHECK_RC(rcl_pressure_notify(mon, cgsrc >= 0 ? cgsrc : 7,
						     1), -EINVAL);
			CHECK_RC(rcl_pressure_source_info(mon, 9 + a[1] % 7,
							  &(struct rcl_pressure_source_info){ 0 }),
				 -ENOENT);
			break;
		}
		check_invariants();
		g_step++;
	}
	g_op = NR_OPS;
	teardown();
	return 0;
}

#include "replay.h"
