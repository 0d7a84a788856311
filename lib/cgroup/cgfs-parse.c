/* cgfs-parse.c - strict parsers for cgroupfs and /proc files (see cgfs-parse.h).
 *
 * The file is long because every kernel file format (about fifteen, v1 and v2)
 * has its own strict parser, and they all share the lexer below (line_end(),
 * scan_u64(), scan_key()), which would otherwise have to become public.
 *
 * Every parser walks the buffer line by line. A line is [start, end) where end
 * points at its '\n' or at the terminating NUL, so no scan ever passes the end
 * of the buffer: each one stops at the first byte it does not expect, and NUL
 * is never expected. The rules shared by all files:
 *
 *   - lines end with '\n'; the last one may lack it (a read that stopped
 *     exactly at a line boundary), but an empty line is malformed;
 *   - fields are separated by exactly one space; no leading or trailing blanks;
 *   - numbers are unsigned decimal: at least one digit, no sign (a '-' or '+'
 *     is -EBADMSG), nothing glued after them; a number above UINT64_MAX is
 *     -ERANGE, but junk in the same token wins (-EBADMSG);
 *   - keys are printable ASCII without blanks, 1 to CGFS_KEY_MAX bytes.
 *
 * Numbers are parsed here rather than with strtoull(), which skips blanks,
 * accepts a sign (and negates "-1" into a huge value) and follows the locale.
 * PSI averages are read as fixed point for the same reason (no strtod()).
 *
 * Parsers that report through a callback validate the whole buffer before the
 * first call, so a malformed file never reaches the caller half-applied. */
#include "cgfs-parse.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

#include "basic/util.h"

/* ---- lexing ----------------------------------------------------------- */

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A byte that may appear in a key: printable ASCII other than space. */
static inline bool is_key_char(char c)
{
	return c > ' ' && c < 0x7f;
}

static inline bool is_eol(char c)
{
	return c == '\n' || c == '\0';
}

/* The end of the line that starts at s: its '\n' or the terminating NUL. */
static const char *line_end(const char *s)
{
	const char *e = strchr(s, '\n');
	return e ? e : s + strlen(s);
}

/* Step to the line after the one ending at e; NULL at the end of the buffer. */
static const char *next_line(const char *e)
{
	if (*e == '\0')
		return NULL;
	return e[1] == '\0' ? NULL : e + 1;
}

/* Scan an unsigned decimal at *p and advance past its digits. Returns 0,
 * -EBADMSG when *p is not a digit, -ERANGE when the digits exceed UINT64_MAX
 * (*p is still advanced past them, so the caller can check what follows and
 * report junk first). *ret is written only on success. */
static int scan_u64(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	bool overflow = false;

	if (!is_digit(*s))
		return -EBADMSG;
	for (; is_digit(*s); s++)
		if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			overflow = true;
	*p = s;
	if (overflow)
		return -ERANGE;
	*ret = v;
	return 0;
}

/* scan_u64() for a number that must be followed by `stop` (or end the line
 * when stop is '\n'). Junk takes precedence over overflow. */
static int scan_u64_to(const char **p, char stop, uint64_t *ret)
{
	int r = scan_u64(p, ret);

	if (r == -EBADMSG)
		return r;
	if (stop == '\n' ? !is_eol(**p) : **p != stop)
		return -EBADMSG;
	return r;
}

/* Skip the literal `lit` at *p. Returns false (and leaves *p) on a mismatch. */
static bool skip_literal(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	/* strncmp stops at the NUL of *p, so this never reads past the buffer. */
	if (strncmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

/* A key at *p ended by `stop` (a byte that is not a key byte itself, or '='
 * for numa_stat's v1 lines). Stores its length and leaves *p at the stop. */
static int scan_key(const char **p, char stop, size_t *ret_len)
{
	const char *s = *p;

	while (is_key_char(*s) && *s != stop)
		s++;
	if (s == *p || *s != stop)
		return -EBADMSG;
	if ((size_t)(s - *p) > CGFS_KEY_MAX)
		return -EBADMSG;
	*ret_len = (size_t)(s - *p);
	*p = s;
	return 0;
}

/* ---- single values ---------------------------------------------------- */

int cgfs_parse_u64(const char *buf, uint64_t *ret)
{
	const char *p = buf;
	uint64_t v;
	int r;

	if (!buf || !ret)
		return -EINVAL;
	if (skip_literal(&p, "max"))
		v = UINT64_MAX;
	else {
		r = scan_u64_to(&p, '\n', &v);
		if (r < 0)
			return r;
	}
	if (*p == '\n')
		p++;
	if (*p != '\0')
		return -EBADMSG;
	*ret = v;
	return 0;
}

/* ---- flat keyed ------------------------------------------------------- */

/* Walk "KEY SP VALUE" lines; fn may be NULL (validation only). */
static int flat_keyed_walk(const char *buf, cgfs_kv_fn fn, void *userdata)
{
	for (const char *s = *buf ? buf : NULL; s;) {
		const char *p = s, *e = line_end(s);
		size_t key_len;
		uint64_t v;
		int r;

		r = scan_key(&p, ' ', &key_len);
		if (r < 0)
			return r;
		p++;
		r = scan_u64_to(&p, '\n', &v);
		if (r < 0)
			return r;
		if (fn) {
			r = fn(s, key_len, v, userdata);
			if (r != 0)
				return r;
		}
		s = next_line(e);
	}
	return 0;
}

int cgfs_parse_flat_keyed(const char *buf, cgfs_kv_fn fn, void *userdata)
{
	int r;

	if (!buf || !fn)
		return -EINVAL;
	r = flat_keyed_walk(buf, NULL, NULL);
	if (r < 0)
		return r;
	return flat_keyed_walk(buf, fn, userdata);
}

static bool key_is(const char *key, size_t key_len, const char *want)
{
	return strlen(want) == key_len && memcmp(key, want, key_len) == 0;
}

struct kv_lookup {
	const char *key;
	size_t key_len;
	uint64_t value;
};

static int lookup_fn(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct kv_lookup *l = userdata;

	if (key_len != l->key_len || memcmp(key, l->key, key_len) != 0)
		return 0;
	l->value = value;
	return 1;
}

int cgfs_flat_keyed_get(const char *buf, const char *key, uint64_t *ret)
{
	struct kv_lookup l = { .key = key };
	int r;

	if (!buf || !key || !*key || !ret)
		return -EINVAL;
	l.key_len = strlen(key);
	r = cgfs_parse_flat_keyed(buf, lookup_fn, &l);
	if (r < 0)
		return r;
	if (r == 0)
		return -ENOENT;
	*ret = l.value;
	return 0;
}

/* ---- pressure --------------------------------------------------------- */

/* "D+.DD" as hundredths, without strtod() and its locale. */
static int scan_centi(const char **p, char stop, uint64_t *ret)
{
	const char *s = *p;
	uint64_t whole = 0, v;
	int r;

	r = scan_u64(&s, &whole);
	if (r == -EBADMSG)
		return r;
	if (s[0] != '.' || !is_digit(s[1]) || !is_digit(s[2]) || s[3] != stop)
		return -EBADMSG;
	if (r < 0 || __builtin_mul_overflow(whole, 100u, &v) ||
	    __builtin_add_overflow(v, (uint64_t)((s[1] - '0') * 10 + (s[2] - '0')), &v))
		return -ERANGE;
	*p = s + 3;
	*ret = v;
	return 0;
}

static int parse_psi_line(const char *s, const char *what, struct cgfs_psi_line *ret)
{
	static const char *const avg_keys[] = { "avg10=", "avg60=", "avg300=" };
	const char *p = s;
	uint64_t centi[3], total;
	int r;

	if (!skip_literal(&p, what))
		return -EBADMSG;
	for (size_t i = 0; i < ELEMENTSOF(avg_keys); i++) {
		if (!skip_literal(&p, avg_keys[i]))
			return -EBADMSG;
		r = scan_centi(&p, ' ', &centi[i]);
		if (r < 0)
			return r;
		p++;
	}
	if (!skip_literal(&p, "total="))
		return -EBADMSG;
	r = scan_u64_to(&p, '\n', &total);
	if (r < 0)
		return r;

	/* An exact quotient of two exact values: the same double strtod() gives. */
	*ret = (struct cgfs_psi_line){
		.present = true,
		.avg10 = (double)centi[0] / 100.0,
		.avg60 = (double)centi[1] / 100.0,
		.avg300 = (double)centi[2] / 100.0,
		.total_us = total,
	};
	return 0;
}

int cgfs_parse_pressure(const char *buf, struct cgfs_psi *ret)
{
	struct cgfs_psi psi = {};
	const char *s = buf, *e;
	int r;

	if (!buf || !ret)
		return -EINVAL;
	if (!*s)
		return -EBADMSG;
	e = line_end(s);
	r = parse_psi_line(s, "some ", &psi.some);
	if (r < 0)
		return r;
	s = next_line(e);
	if (s) {
		e = line_end(s);
		r = parse_psi_line(s, "full ", &psi.full);
		if (r < 0)
			return r;
		if (next_line(e))
			return -EBADMSG;
	}
	*ret = psi;
	return 0;
}

/* ---- cpu.stat and cpuacct.stat ---------------------------------------- */

enum {
	CPU_USAGE = 1 << 0,
	CPU_USER = 1 << 1,
	CPU_SYSTEM = 1 << 2,
	CPU_PERIODS = 1 << 3,
	CPU_THROTTLED = 1 << 4,
	CPU_THROTTLED_TIME = 1 << 5, /* throttled_usec (v2) or throttled_time (v1) */
	CPU_USAGE_ALL = CPU_USAGE | CPU_USER | CPU_SYSTEM,
	CPU_THROTTLING_ALL = CPU_PERIODS | CPU_THROTTLED | CPU_THROTTLED_TIME,
};

struct cpu_stat_collect {
	struct cgfs_cpu_stat st;
	unsigned seen;
};

static int cpu_stat_fn(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct cpu_stat_collect *c = userdata;
	unsigned bit;

	if (key_is(key, key_len, "usage_usec")) {
		bit = CPU_USAGE;
		c->st.usage_usec = value;
	} else if (key_is(key, key_len, "user_usec")) {
		bit = CPU_USER;
		c->st.user_usec = value;
	} else if (key_is(key, key_len, "system_usec")) {
		bit = CPU_SYSTEM;
		c->st.system_usec = value;
	} else if (key_is(key, key_len, "nr_periods")) {
		bit = CPU_PERIODS;
		c->st.nr_periods = value;
	} else if (key_is(key, key_len, "nr_throttled")) {
		bit = CPU_THROTTLED;
		c->st.nr_throttled = value;
	} else if (key_is(key, key_len, "throttled_usec")) {
		bit = CPU_THROTTLED_TIME;
		c->st.throttled_usec = value;
	} else if (key_is(key, key_len, "throttled_time")) {
		bit = CPU_THROTTLED_TIME;
		c->st.throttled_usec = value / 1000; /* v1: nanoseconds */
	} else
		return 0; /* nice_usec, nr_bursts, burst_*, wait_sum, ... */

	if (c->seen & bit)
		return -EBADMSG; /* a key twice, or throttled_usec with throttled_time */
	c->seen |= bit;
	return 0;
}

int cgfs_parse_cpu_stat(const char *buf, struct cgfs_cpu_stat *ret)
{
	struct cpu_stat_collect c = {};
	unsigned usage, throttling;
	int r;

	if (!buf || !ret)
		return -EINVAL;
	r = cgfs_parse_flat_keyed(buf, cpu_stat_fn, &c);
	if (r < 0)
		return r;

	/* The kernel prints each group whole: part of one is a damaged file, and
	 * a cpu.stat with neither is not a cpu.stat. */
	usage = c.seen & CPU_USAGE_ALL;
	throttling = c.seen & CPU_THROTTLING_ALL;
	if ((usage != 0 && usage != CPU_USAGE_ALL) || (throttling != 0 && throttling != CPU_THROTTLING_ALL))
		return -EBADMSG;
	if (usage == 0 && throttling == 0)
		return -EBADMSG;
	c.st.has_usage = usage != 0;
	c.st.has_throttling = throttling != 0;
	*ret = c.st;
	return 0;
}

struct cpuacct_collect {
	uint64_t user, system;
	bool has_user, has_system;
};

static int cpuacct_fn(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct cpuacct_collect *c = userdata;
	uint64_t *slot;
	bool *seen;

	if (key_is(key, key_len, "user")) {
		slot = &c->user;
		seen = &c->has_user;
	} else if (key_is(key, key_len, "system")) {
		slot = &c->system;
		seen = &c->has_system;
	} else
		return 0;
	if (*seen)
		return -EBADMSG;
	*seen = true;
	*slot = value;
	return 0;
}

/* ticks * 1000000 / hz without overflowing in the intermediate product. */
static int ticks_to_usec(uint64_t ticks, unsigned hz, uint64_t *ret)
{
	uint64_t whole;

	if (__builtin_mul_overflow(ticks / hz, 1000000u, &whole) ||
	    __builtin_add_overflow(whole, ticks % hz * 1000000u / hz, &whole))
		return -ERANGE;
	*ret = whole;
	return 0;
}

int cgfs_parse_cpuacct_stat(const char *buf, unsigned user_hz, uint64_t *ret_user_usec,
			    uint64_t *ret_system_usec)
{
	struct cpuacct_collect c = {};
	uint64_t user, system;
	int r;

	if (!buf || user_hz == 0 || !ret_user_usec || !ret_system_usec)
		return -EINVAL;
	r = cgfs_parse_flat_keyed(buf, cpuacct_fn, &c);
	if (r < 0)
		return r;
	if (!c.has_user || !c.has_system)
		return -EBADMSG;
	r = ticks_to_usec(c.user, user_hz, &user);
	if (r < 0)
		return r;
	r = ticks_to_usec(c.system, user_hz, &system);
	if (r < 0)
		return r;
	*ret_user_usec = user;
	*ret_system_usec = system;
	return 0;
}

/* ---- cpuacct.usage_percpu --------------------------------------------- */

/* The kernel prints "%llu " per possible CPU and then "\n"; the trailing
 * space is optional here. values may be NULL (count only). */
static int percpu_walk(const char *buf, uint64_t *values, size_t max, size_t *ret_n)
{
	const char *p = buf;
	size_t n = 0;

	for (;;) {
		uint64_t v;
		int r = scan_u64(&p, &v);

		if (r == -EBADMSG)
			return r;
		if (*p != ' ' && !is_eol(*p))
			return -EBADMSG;
		if (r < 0)
			return r;
		if (values && n < max)
			values[n] = v;
		n++;
		if (*p == ' ' && is_digit(p[1])) {
			p++;
			continue;
		}
		break;
	}
	if (*p == ' ')
		p++;
	if (*p == '\n')
		p++;
	if (*p != '\0')
		return -EBADMSG;
	*ret_n = n;
	return 0;
}

int cgfs_parse_percpu(const char *buf, uint64_t *values, size_t max, size_t *ret_n)
{
	size_t n;
	int r;

	if (!buf || (!values && max > 0) || !ret_n)
		return -EINVAL;
	r = percpu_walk(buf, NULL, 0, &n);
	if (r < 0)
		return r;
	if (n > max) {
		*ret_n = n; /* how many there are: the room a caller needs */
		return -ERANGE;
	}
	r = percpu_walk(buf, values, max, &n);
	if (r < 0)
		return r;
	*ret_n = n;
	return 0;
}

/* ---- memory.numa_stat ------------------------------------------------- */

enum numa_format {
	NUMA_UNKNOWN,
	NUMA_V1, /* key=total N0=pages ... */
	NUMA_V2, /* key N0=bytes ... */
};

/* One line; on success fills the key, total, per-node values (zeroed first)
 * and the slots used, and fixes *fmt from the first line. */
static int numa_line(const char *s, enum numa_format *fmt, size_t *ret_key_len, uint64_t *ret_total,
		     uint64_t per_node[static CGFS_MAX_NODES], size_t *ret_nr)
{
	const char *p = s, *k;
	enum numa_format f;
	uint64_t total = 0, sum = 0;
	size_t key_len, nr = 0;
	bool sum_overflow = false;
	int r;

	/* The key ends at the first '=' (v1) or space (v2). */
	for (k = s; is_key_char(*k) && *k != '='; k++)
		;
	f = *k == '=' ? NUMA_V1 : NUMA_V2;
	if (*fmt != NUMA_UNKNOWN && *fmt != f)
		return -EBADMSG;
	r = scan_key(&p, f == NUMA_V1 ? '=' : ' ', &key_len);
	if (r < 0)
		return r;
	if (f == NUMA_V1) {
		p++;
		r = scan_u64_to(&p, ' ', &total);
		if (r < 0)
			return r;
	}

	memset(per_node, 0, CGFS_MAX_NODES * sizeof(per_node[0]));
	/* At least one " N<id>=<value>", node ids strictly increasing. */
	do {
		uint64_t node, v;

		if (p[0] != ' ' || p[1] != 'N')
			return -EBADMSG;
		p += 2;
		r = scan_u64_to(&p, '=', &node);
		if (r < 0)
			return r;
		if (node >= CGFS_MAX_NODES)
			return -ERANGE;
		if (node < nr)
			return -EBADMSG;
		p++;
		r = scan_u64(&p, &v);
		if (r == -EBADMSG)
			return r;
		if (*p != ' ' && !is_eol(*p))
			return -EBADMSG;
		if (r < 0)
			return r;
		per_node[node] = v;
		nr = node + 1;
		if (__builtin_add_overflow(sum, v, &sum))
			sum_overflow = true;
	} while (!is_eol(*p));

	if (f == NUMA_V2) {
		if (sum_overflow)
			return -ERANGE;
		total = sum;
	}
	*fmt = f;
	*ret_key_len = key_len;
	*ret_total = total;
	*ret_nr = nr;
	return 0;
}

static int numa_walk(const char *buf, cgfs_numa_fn fn, void *userdata)
{
	enum numa_format fmt = NUMA_UNKNOWN;
	uint64_t per_node[CGFS_MAX_NODES];

	for (const char *s = *buf ? buf : NULL; s; s = next_line(line_end(s))) {
		size_t key_len, nr;
		uint64_t total;
		int r;

		r = numa_line(s, &fmt, &key_len, &total, per_node, &nr);
		if (r < 0)
			return r;
		if (fn) {
			r = fn(s, key_len, total, per_node, nr, userdata);
			if (r != 0)
				return r;
		}
	}
	return 0;
}

int cgfs_parse_numa_stat(const char *buf, cgfs_numa_fn fn, void *userdata)
{
	int r;

	if (!buf || !fn)
		return -EINVAL;
	r = numa_walk(buf, NULL, NULL);
	if (r < 0)
		return r;
	return numa_walk(buf, fn, userdata);
}

struct numa_v1_pick {
	uint64_t total[CGFS_MAX_NODES], hier[CGFS_MAX_NODES];
	size_t total_n, hier_n;
	bool has_total, has_hier;
};

static int numa_v1_pick_line(const char *key, size_t key_len, uint64_t total, const uint64_t *per_node,
			     size_t nr_nodes, void *userdata)
{
	struct numa_v1_pick *p = userdata;
	(void)total;
	if (key_len == 5 && memcmp(key, "total", 5) == 0) {
		memcpy(p->total, per_node, nr_nodes * sizeof(*per_node));
		p->total_n = nr_nodes;
		p->has_total = true;
	} else if (key_len == 18 && memcmp(key, "hierarchical_total", 18) == 0) {
		memcpy(p->hier, per_node, nr_nodes * sizeof(*per_node));
		p->hier_n = nr_nodes;
		p->has_hier = true;
	}
	return 0;
}

int cgfs_numa_v1_nodes(const char *buf, uint64_t *per_node, size_t max, size_t *ret_nodes, bool *ret_hierarchical)
{
	struct numa_v1_pick p = { .has_total = false };
	int r;

	if (!per_node || !ret_nodes)
		return -EINVAL;
	r = cgfs_parse_numa_stat(buf, numa_v1_pick_line, &p);
	if (r < 0)
		return r;
	if (!p.has_total && !p.has_hier)
		return -ENOENT;
	/* memory.usage_in_bytes of a v1 cgroup counts its descendants: the
	 * own-pages "total" of a parent is often 0 while its children hold GBs. */
	const uint64_t *v = p.has_hier ? p.hier : p.total;
	size_t n = p.has_hier ? p.hier_n : p.total_n;
	if (n > max)
		return -ERANGE;
	memcpy(per_node, v, n * sizeof(*v));
	memset(per_node + n, 0, (max - n) * sizeof(*per_node));
	*ret_nodes = n;
	if (ret_hierarchical)
		*ret_hierarchical = p.has_hier;
	return 0;
}

/* ---- /proc/meminfo ---------------------------------------------------- */

int cgfs_meminfo_get(const char *buf, const char *key, uint64_t *ret)
{
	size_t want_len;
	uint64_t found = 0;
	bool have = false;

	if (!buf || !key || !*key || strchr(key, ':') || !ret)
		return -EINVAL;
	want_len = strlen(key);

	/* "Key:" then one or more spaces, the value and an optional " kB". The
	 * whole file is checked, so that a damaged one never yields a value. */
	for (const char *s = *buf ? buf : NULL; s; s = next_line(line_end(s))) {
		const char *p = s;
		size_t key_len;
		uint64_t v;
		bool kb;
		int r;

		r = scan_key(&p, ':', &key_len);
		if (r < 0)
			return r;
		p++;
		if (*p != ' ')
			return -EBADMSG;
		while (*p == ' ')
			p++;
		r = scan_u64(&p, &v);
		if (r == -EBADMSG)
			return r;
		kb = skip_literal(&p, " kB");
		if (!is_eol(*p))
			return -EBADMSG;
		if (r < 0)
			return r;
		if (kb && __builtin_mul_overflow(v, 1024u, &v))
			return -ERANGE;
		if (!have && key_len == want_len && memcmp(s, key, key_len) == 0) {
			found = v;
			have = true;
		}
	}
	if (!have)
		return -ENOENT;
	*ret = found;
	return 0;
}

/* ---- cgroup.events ---------------------------------------------------- */

struct events_collect {
	bool populated, frozen;
	bool has_populated, has_frozen;
};

static int events_fn(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct events_collect *c = userdata;
	bool *slot, *seen;

	if (key_is(key, key_len, "populated")) {
		slot = &c->populated;
		seen = &c->has_populated;
	} else if (key_is(key, key_len, "frozen")) {
		slot = &c->frozen;
		seen = &c->has_frozen;
	} else
		return 0;
	if (*seen || value > 1)
		return -EBADMSG;
	*seen = true;
	*slot = value == 1;
	return 0;
}

int cgfs_parse_events(const char *buf, bool *ret_populated, bool *ret_frozen)
{
	struct events_collect c = {};
	int r;

	if (!buf)
		return -EINVAL;
	r = cgfs_parse_flat_keyed(buf, events_fn, &c);
	if (r < 0)
		return r;
	/* "frozen" arrived in 5.2; "populated" has always been there. */
	if (!c.has_populated)
		return -EBADMSG;
	if (ret_populated)
		*ret_populated = c.populated;
	if (ret_frozen)
		*ret_frozen = c.frozen;
	return 0;
}

/* ---- cgroup.procs ----------------------------------------------------- */

static int pids_walk(const char *buf, cgfs_pid_fn fn, void *userdata)
{
	for (const char *s = *buf ? buf : NULL; s; s = next_line(line_end(s))) {
		const char *p = s;
		uint64_t v;
		int r;

		r = scan_u64_to(&p, '\n', &v);
		if (r < 0)
			return r;
		if (v == 0)
			return -EBADMSG;
		if (v > INT_MAX)
			return -ERANGE;
		if (fn) {
			r = fn((int)v, userdata);
			if (r != 0)
				return r;
		}
	}
	return 0;
}

int cgfs_parse_pids(const char *buf, cgfs_pid_fn fn, void *userdata)
{
	int r;

	if (!buf || !fn)
		return -EINVAL;
	r = pids_walk(buf, NULL, NULL);
	if (r < 0)
		return r;
	return pids_walk(buf, fn, userdata);
}

/* ---- /proc/PID/stat --------------------------------------------------- */

int cgfs_parse_proc_stat_state(const char *buf, char *ret_state)
{
	const char *p = buf, *close;
	uint64_t pid;
	int r;

	if (!buf || !ret_state)
		return -EINVAL;
	r = scan_u64_to(&p, ' ', &pid);
	if (r < 0)
		return r;
	if (pid == 0)
		return -EBADMSG;
	if (pid > INT_MAX)
		return -ERANGE;
	if (p[1] != '(')
		return -EBADMSG;
	/* comm is whatever the task named itself, ')' and spaces included; the
	 * fields after it are numbers, so the last ')' closes it. */
	close = strrchr(p + 2, ')');
	if (!close)
		return -EBADMSG;
	/* Letters of fs/proc/array.c's task_state_array, with older kernels' x, K, W. */
	if (close[1] != ' ' || !close[2] || !strchr("RSDTtXxZPIKW", close[2]) ||
	    (close[3] != ' ' && !is_eol(close[3])))
		return -EBADMSG;
	*ret_state = close[2];
	return 0;
}

/* ---- block I/O -------------------------------------------------------- */

/* "MAJ:MIN" followed by a space; *p is left at the space. */
static int scan_device(const char **p, unsigned *ret_major, unsigned *ret_minor)
{
	uint64_t major, minor;
	int r, r2;

	r = scan_u64_to(p, ':', &major);
	if (r == -EBADMSG)
		return r;
	(*p)++;
	r2 = scan_u64_to(p, ' ', &minor);
	if (r2 == -EBADMSG)
		return r2;
	if (r < 0 || r2 < 0 || major > UINT32_MAX || minor > UINT32_MAX)
		return -ERANGE;
	*ret_major = (unsigned)major;
	*ret_minor = (unsigned)minor;
	return 0;
}

static struct cgfs_io_device *io_device_find(struct cgfs_io_device *devs, size_t n, unsigned major, unsigned minor)
{
	for (size_t i = 0; i < n; i++)
		if (devs[i].major == major && devs[i].minor == minor)
			return &devs[i];
	return NULL;
}

int cgfs_parse_io_stat(const char *buf, struct cgfs_io_device *devs, size_t max, size_t *ret_n)
{
	static const char *const keys[_CGFS_IO_FIELD_MAX] = {
		[CGFS_IO_RBYTES] = "rbytes", [CGFS_IO_WBYTES] = "wbytes", [CGFS_IO_RIOS] = "rios",
		[CGFS_IO_WIOS] = "wios",     [CGFS_IO_DBYTES] = "dbytes", [CGFS_IO_DIOS] = "dios",
	};
	struct cgfs_io_device tmp[CGFS_IO_MAX_DEVICES];
	size_t n = 0;

	if (!buf || !ret_n || (max && !devs))
		return -EINVAL;
	for (const char *s = *buf ? buf : NULL; s; s = next_line(line_end(s))) {
		const char *p = s;
		struct cgfs_io_device d = { 0 };
		int r = scan_device(&p, &d.major, &d.minor);
		if (r < 0)
			return r;
		if (io_device_find(tmp, n, d.major, d.minor))
			return -EBADMSG;
		/* Linux 6.1 lists, in the root's io.stat, a device whose
		 * counters are all zero as "MAJ:MIN " and nothing else (loop
		 * devices, an idle CD drive): nothing to store. */
		if (p[0] == ' ' && is_eol(p[1]))
			continue;
		bool any = false;
		while (*p == ' ') {
			size_t key_len;
			p++;
			r = scan_key(&p, '=', &key_len);
			if (r < 0)
				return r;
			const char *key = p - key_len;
			p++;
			int f = -1;
			for (int i = 0; i < _CGFS_IO_FIELD_MAX; i++)
				if (key_is(key, key_len, keys[i]))
					f = i;
			if (f >= 0) {
				if (d.present & (1u << f))
					return -EBADMSG;
				r = scan_u64(&p, &d.v[f]);
				if (r == -EBADMSG || (*p != ' ' && !is_eol(*p)))
					return -EBADMSG;
				if (r < 0)
					return r;
				d.present |= (uint8_t)(1u << f);
			} else {
				/* Another controller's value: any blank-free token. */
				const char *t = p;
				while (is_key_char(*p))
					p++;
				if (p == t || (*p != ' ' && !is_eol(*p)))
					return -EBADMSG;
			}
			any = true;
		}
		if (!any || !is_eol(*p))
			return -EBADMSG;
		if (n >= max || n >= CGFS_IO_MAX_DEVICES)
			return -ERANGE;
		tmp[n++] = d;
	}
	if (n)
		memcpy(devs, tmp, n * sizeof(*tmp));
	*ret_n = n;
	return 0;
}

int cgfs_parse_blkio_rwstat(const char *buf, bool ios, struct cgfs_io_device *devs, size_t max, size_t *n_inout,
			    uint64_t *ret_total)
{
	static const char *const ops[] = { "Read", "Write", "Sync", "Async", "Discard", "Total" };
	const enum cgfs_io_field fields[2][3] = {
		{ CGFS_IO_RBYTES, CGFS_IO_WBYTES, CGFS_IO_DBYTES },
		{ CGFS_IO_RIOS, CGFS_IO_WIOS, CGFS_IO_DIOS },
	};
	struct cgfs_io_device tmp[CGFS_IO_MAX_DEVICES];
	uint64_t total = 0;
	bool have_total = false;
	size_t n;

	if (!buf || !n_inout || *n_inout > max || (max && !devs))
		return -EINVAL;
	n = *n_inout;
	if (n > CGFS_IO_MAX_DEVICES)
		return -EINVAL;
	if (n)
		memcpy(tmp, devs, n * sizeof(*tmp));
	/* ops seen per device of this file, to refuse a repeated one */
	uint8_t seen[CGFS_IO_MAX_DEVICES] = { 0 };
	struct cgfs_io_device *cur = NULL;
	for (const char *s = *buf ? buf : NULL; s; s = next_line(line_end(s))) {
		const char *p = s;
		uint64_t v;
		int r;

		if (have_total)
			return -EBADMSG; /* "Total" is the last line */
		if (skip_literal(&p, "Total ")) {
			r = scan_u64_to(&p, '\n', &total);
			if (r < 0)
				return r;
			have_total = true;
			continue;
		}
		unsigned major, minor;
		r = scan_device(&p, &major, &minor);
		if (r < 0)
			return r;
		p++;
		struct cgfs_io_device *d = io_device_find(tmp, n, major, minor);
		if (d && d != cur && seen[d - tmp])
			return -EBADMSG; /* a device's lines are together */
		if (!d) {
			if (n >= max || n >= CGFS_IO_MAX_DEVICES)
				return -ERANGE;
			d = &tmp[n++];
			*d = (struct cgfs_io_device){ .major = major, .minor = minor };
		}
		cur = d;
		size_t op_len;
		r = scan_key(&p, ' ', &op_len);
		if (r < 0)
			return r;
		const char *op = p - op_len;
		p++;
		r = scan_u64_to(&p, '\n', &v);
		if (r < 0)
			return r;
		for (size_t i = 0; i < ELEMENTSOF(ops); i++) {
			if (!key_is(op, op_len, ops[i]))
				continue;
			if (seen[d - tmp] & (1u << i))
				return -EBADMSG;
			seen[d - tmp] |= (uint8_t)(1u << i);
			int slot = i == 0 ? 0 : i == 1 ? 1 : i == 4 ? 2 : -1;
			if (slot >= 0) {
				d->v[fields[ios][slot]] = v;
				d->present |= (uint8_t)(1u << fields[ios][slot]);
			}
		}
	}
	if (!have_total)
		return -EBADMSG;
	if (n)
		memcpy(devs, tmp, n * sizeof(*tmp));
	*n_inout = n;
	if (ret_total)
		*ret_total = total;
	return 0;
}

/* ---- memory events ---------------------------------------------------- */

struct memev_collect {
	struct cgfs_memory_events ev;
};

static int memev_fn(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	static const char *const keys[_CGFS_MEMEV_MAX] = {
		[CGFS_MEMEV_LOW] = "low",	  [CGFS_MEMEV_HIGH] = "high",
		[CGFS_MEMEV_MAX] = "max",	  [CGFS_MEMEV_OOM] = "oom",
		[CGFS_MEMEV_OOM_KILL] = "oom_kill", [CGFS_MEMEV_OOM_GROUP_KILL] = "oom_group_kill",
	};
	struct memev_collect *c = userdata;

	for (int i = 0; i < _CGFS_MEMEV_MAX; i++) {
		if (!key_is(key, key_len, keys[i]))
			continue;
		if (c->ev.present & (1u << i))
			return -EBADMSG;
		c->ev.v[i] = value;
		c->ev.present |= (uint8_t)(1u << i);
	}
	return 0;
}

int cgfs_parse_memory_events(const char *buf, struct cgfs_memory_events *ret)
{
	struct memev_collect c = { 0 };
	int r;

	if (!buf || !ret)
		return -EINVAL;
	r = cgfs_parse_flat_keyed(buf, memev_fn, &c);
	if (r < 0)
		return r;
	*ret = c.ev;
	return 0;
}

struct oom_collect {
	uint64_t under_oom, oom_kill;
	bool has_under_oom, has_oom_kill;
};

static int oom_fn(const char *key, size_t key_len, uint64_t value, void *userdata)
{
	struct oom_collect *c = userdata;

	if (key_is(key, key_len, "under_oom")) {
		if (c->has_under_oom || value > 1)
			return -EBADMSG;
		c->under_oom = value;
		c->has_under_oom = true;
	} else if (key_is(key, key_len, "oom_kill")) {
		if (c->has_oom_kill)
			return -EBADMSG;
		c->oom_kill = value;
		c->has_oom_kill = true;
	}
	return 0;
}

int cgfs_parse_oom_control(const char *buf, bool *ret_under_oom, uint64_t *ret_oom_kill, bool *ret_has_oom_kill)
{
	struct oom_collect c = { 0 };
	int r;

	if (!buf || !ret_under_oom || !ret_oom_kill || !ret_has_oom_kill)
		return -EINVAL;
	r = cgfs_parse_flat_keyed(buf, oom_fn, &c);
	if (r < 0)
		return r;
	if (!c.has_under_oom)
		return -EBADMSG;
	*ret_under_oom = c.under_oom;
	*ret_oom_kill = c.oom_kill;
	*ret_has_oom_kill = c.has_oom_kill;
	return 0;
}
