/* sample-io-psi.c - the sampler's readers of pressure stall information
 * (cpu, memory and io.pressure) and of block I/O (v2 io.stat, v1 blkio),
 * per device and in total, with the I/O rates. */
#include "sampler-internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/util.h"
#include "cgroup/cgfs-parse.h"

/* ---- pressure stall information ----------------------------------------- */

bool sample_psi(struct sample_ctx *x)
{
	static const enum file_role roles[_ACCT_PSI_MAX] = { F_PSI_CPU, F_PSI_MEMORY, F_PSI_IO };
	static const enum acct_quantity totals[_ACCT_PSI_MAX][2] = {
		{ ACCT_Q_PSI_CPU_SOME, ACCT_Q_PSI_CPU_FULL },
		{ ACCT_Q_PSI_MEMORY_SOME, ACCT_Q_PSI_MEMORY_FULL },
		{ ACCT_Q_PSI_IO_SOME, ACCT_Q_PSI_IO_FULL },
	};
	struct cg_state *st = x->st;
	uint64_t read_start = acct_now_us(), sum = 0;
	unsigned failures = x->nr_failures;
	bool averages = false;

	for (int r = 0; r < _ACCT_PSI_MAX; r++) {
		struct cgfs_psi psi;
		if (!sampler_get(x, roles[r]))
			continue;
		if (cgfs_parse_pressure(x->w->buf, &psi) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			continue;
		}
		const struct cgfs_psi_line *lines[2] = { &psi.some, &psi.full };
		for (int k = 0; k < 2; k++) {
			if (!lines[k]->present)
				continue;
			const double avgs[3] = { lines[k]->avg10, lines[k]->avg60, lines[k]->avg300 };
			uint32_t hundredths[3];
			for (int a = 0; a < 3; a++) {
				hundredths[a] = (uint32_t)(avgs[a] * 100.0 + 0.5);
				averages |= hundredths[a] != 0;
			}
			acct_cgroup_set_psi_avg(x->cg, (enum acct_psi_resource)r, (enum acct_psi_kind)k, hundredths);
			sampler_set_checked(x, totals[r][k], (int64_t)lines[k]->total_us);
			sum += lines[k]->total_us;
		}
		acct_cgroup_mark_psi_known(x->cg, (enum acct_psi_resource)r);
	}
	if (x->nr_failures != failures) {
		st->psi_at = 0; /* the next pass reads it again */
		return false;
	}
	/* Quiet: nothing stalled between the last two reads. */
	st->psi_quiet = st->psi_at && sum == st->psi_sum;
	/* Read because the kernel's totals moved, yet the file's stand still:
	 * the record's totals are not this file's (sampler.c, psi_witness()),
	 * and would make every walk a read. */
	if (st->psi_witness_moved && st->psi_quiet)
		st->psi_witness_off = true;
	st->psi_averages = averages;
	st->psi_sum = sum;
	st->psi_at = read_start;
	return true;
}

/* ---- block I/O ---------------------------------------------------------- */

/* The kernel's name of a block device (DEVNAME of its uevent, "sda" for 8:0);
 * "" when sysfs does not have it. */
static void io_device_name(unsigned major, unsigned minor, char *name, size_t size)
{
	char path[64], buf[512];

	name[0] = 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major, minor);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, "DEVNAME=", 8) == 0) {
			size_t len = strcspn(line + 8, "\n");
			snprintf(name, size, "%.*s", (int)MIN(len, size - 1), line + 8);
			return;
		}
}

/* Totals and rates from the devices of one reading. The rates are those of
 * the CPU (note_cpu()): the change since the previous reading over the time
 * between the two passes' start. A total that went down (v1
 * blkio.reset_stats, a device that left io.stat) restarts the rate. */
static void note_io(struct sample_ctx *x, const struct cgfs_io_device *devs, size_t n, bool checked, uint64_t now_us)
{
	static const enum cgfs_io_field fields[_ACCT_IO_STAT_MAX] = {
		[ACCT_IO_READ_BYTES] = CGFS_IO_RBYTES, [ACCT_IO_WRITE_BYTES] = CGFS_IO_WBYTES,
		[ACCT_IO_READ_IOS] = CGFS_IO_RIOS,     [ACCT_IO_WRITE_IOS] = CGFS_IO_WIOS,
		[ACCT_IO_DISCARD_BYTES] = CGFS_IO_DBYTES, [ACCT_IO_DISCARD_IOS] = CGFS_IO_DIOS,
	};
	struct cg_state *st = x->st;
	struct acct_ledger *l = x->w->s->ledger;
	uint64_t total[_ACCT_IO_STAT_MAX] = { 0 };
	uint32_t known = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t v[_ACCT_IO_STAT_MAX];
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
			enum cgfs_io_field f = fields[k];
			if (!(devs[i].present & (1u << f))) {
				v[k] = -1;
				continue;
			}
			v[k] = (int64_t)MIN(devs[i].v[f], (uint64_t)INT64_MAX);
			total[k] = __builtin_add_overflow(total[k], devs[i].v[f], &total[k]) ? UINT64_MAX : total[k];
			known |= 1u << k;
		}
		int d = acct_ledger_io_device_find(l, devs[i].major, devs[i].minor);
		if (d < 0) {
			char name[ACCT_IO_NAME_MAX];
			io_device_name(devs[i].major, devs[i].minor, name, sizeof(name));
			d = acct_ledger_io_device_add(l, devs[i].major, devs[i].minor, name);
		}
		/* Past the tables' room the device still counts in the totals. */
		if (d >= 0)
			(void)acct_cgroup_set_io_device(x->cg, (unsigned)d, v);
	}
	/* No device listed: the kernel says nothing was done yet (v1 "Total 0",
	 * an empty io.stat), so every total is 0. */
	if (n == 0)
		known = (1u << _ACCT_IO_STAT_MAX) - 1;

	bool rates = st->io_last_at && now_us > st->io_last_at;
	st->io_rates_zero = false; /* sample_io_idle() stores them again */
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++) {
		if (!(known & (1u << k)))
			continue;
		int64_t v = (int64_t)MIN(total[k], (uint64_t)INT64_MAX);
		enum acct_quantity q = acct_io_stat_quantity((enum acct_io_stat)k);
		if (checked)
			sampler_set_checked(x, q, v);
		else
			sampler_set_unchecked(x, q, v);
		if (rates && (st->io_last_known & (1u << k))) {
			double per_s = total[k] >= st->io_last[k] ? (double)(total[k] - st->io_last[k]) * 1e6 /
									   (double)(now_us - st->io_last_at)
								 : 0;
			acct_cgroup_set_io_rate(x->cg, (enum acct_io_stat)k, per_s);
		}
		st->io_last[k] = total[k];
	}
	if (rates && st->io_last_known)
		acct_cgroup_mark_io_rate_known(x->cg);
	st->io_last_known = known;
	st->io_last_at = now_us;
	/* The I/O family's witness: the sum of the totals (each only grows). */
	uint64_t witness = 0;
	for (int k = 0; k < _ACCT_IO_STAT_MAX; k++)
		if (known & (1u << k))
			witness += total[k];
	x->witness[PF_IO] = witness;
	x->witness_tree[PF_IO] = (int8_t)x->st->spec[x->st->spec[F_IO_STAT].name ? F_IO_STAT : F_BLKIO_BYTES].tree;
	x->witnessed |= 1u << PF_IO;
}

void sample_io_idle(struct sample_ctx *x, uint64_t now_us)
{
	struct cg_state *st = x->st;

	if (!st->io_last_at || now_us <= st->io_last_at)
		return;
	/* Stored once: while the rates stand at 0, known, a steady cgroup's
	 * pass writes nothing here but the time. */
	if (st->io_last_known && !st->io_rates_zero) {
		for (int k = 0; k < _ACCT_IO_STAT_MAX; k++)
			if (st->io_last_known & (1u << k))
				acct_cgroup_set_io_rate(x->cg, (enum acct_io_stat)k, 0);
		acct_cgroup_mark_io_rate_known(x->cg);
		st->io_rates_zero = true;
	}
	st->io_last_at = now_us;
}

void sample_io(struct sample_ctx *x, uint64_t now_us)
{
	struct cgfs_io_device devs[CGFS_IO_MAX_DEVICES];
	size_t n = 0;

	if (x->st->spec[F_IO_STAT].name) {
		if (!sampler_get(x, F_IO_STAT))
			return;
		if (cgfs_parse_io_stat(x->w->buf, devs, ELEMENTSOF(devs), &n) < 0) {
			sampler_fail(x, ACCT_ERR_GARBAGE);
			return;
		}
		note_io(x, devs, n, true, now_us);
		return;
	}
	if (!x->st->spec[F_BLKIO_BYTES].name || !sampler_get(x, F_BLKIO_BYTES))
		return;
	/* v1 counters can be zeroed (blkio.reset_stats): not checked. */
	if (cgfs_parse_blkio_rwstat(x->w->buf, false, devs, ELEMENTSOF(devs), &n, NULL) < 0 || !sampler_get(x, F_BLKIO_IOS) ||
	    cgfs_parse_blkio_rwstat(x->w->buf, true, devs, ELEMENTSOF(devs), &n, NULL) < 0) {
		if (!x->failed)
			sampler_fail(x, ACCT_ERR_GARBAGE);
		return;
	}
	note_io(x, devs, n, false, now_us);
}

