/* test-task-walk.c - the BPF task iterator (lib/bpf/task-walk.c) against
 * this process's own threads and /proc: every thread that lives through a
 * walk is in it, once (pid 1's group too, which the iterator misses here
 * and the reader adds from /proc); acctd's own threads are marked; a spinning thread is
 * active and a blocked one is not, as /proc/<tid>/stat says; a thread's
 * unified cgroup is the directory /proc/self/cgroup names; a thread moved to
 * another cgroup is seen there at the next walk; a frozen process is not
 * active, as the kernel's load average does not count it, nor are the
 * runnable threads of a CFS-throttled cgroup (R in /proc); a pinned walk,
 * read from its pin, fills the slots it was pinned with.
 *
 * It needs root, kernel BTF and the init pid namespace (the records carry
 * the kernel's pids), and exits 77 saying which is missing. The cgroup it
 * makes, <unified>/task-walk-test-<pid>, is removed on every exit path. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup-layout.h"
#include "task-walk.h"

static struct acct_hierarchies *layout;
static struct acct_task_walk *walk;
static char unified[64];      /* the v2 mount */
static char made[256];        /* our test cgroup, "" when none */
static char pin[128];         /* test_pinned()'s pin, "" when none */
static char frozen[128];      /* test_frozen_not_active()'s cgroup, "" when none */
static pid_t frozen_pid;      /* its process, 0 when none */
static char throttled[128];   /* test_throttled_not_active()'s cgroup, "" when none */
#define SPINNERS 4
static pid_t spinners[SPINNERS]; /* its processes, 0 when none */
static volatile int spin_stop;

static void *spinner(void *arg)
{
	__atomic_store_n((int *)arg, (int)gettid(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

static void *sleeper(void *arg)
{
	int *p = arg; /* p[0]: a pipe's read end; p[2]: the tid, out */
	__atomic_store_n(&p[2], (int)gettid(), __ATOMIC_RELEASE);
	char c;
	(void)!read(p[0], &c, 1);
	return NULL;
}

/* The state letter a /proc stat file shows, 0 when gone. */
static char state_in(const char *path)
{
	char buf[1024];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

/* The state of one of this process's threads. */
static char proc_state(int tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	return state_in(path);
}

/* The state of any process. */
static char proc_state_of(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return state_in(path);
}

/* Every thread of the system in /proc now: a sorted array of tids. */
static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static size_t proc_threads(int **ret)
{
	size_t n = 0, cap = 4096;
	int *v = malloc(cap * sizeof(*v));
	DIR *d = opendir("/proc");
	assert_non_null(v);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/proc/%s/task", e->d_name);
		DIR *t = opendir(path);
		if (!t)
			continue; /* exited */
		struct dirent *f;
		while ((f = readdir(t))) {
			if (f->d_name[0] < '1' || f->d_name[0] > '9')
				continue;
			if (n == cap) {
				cap *= 2;
				v = realloc(v, cap * sizeof(*v));
				assert_non_null(v);
			}
			v[n++] = atoi(f->d_name);
		}
		closedir(t);
	}
	closedir(d);
	qsort(v, n, sizeof(*v), cmp_int);
	*ret = v;
	return n;
}

static const struct acct_task_record *find(const struct acct_task_record *r, size_t n, int tid, unsigned *count)
{
	const struct acct_task_record *hit = NULL;
	*count = 0;
	for (size_t i = 0; i < n; i++)
		if ((int)r[i].tid == tid) {
			hit = &r[i];
			(*count)++;
		}
	return hit;
}

static uint64_t inode_of(const char *dir)
{
	struct stat sb;
	assert_int_equal(stat(dir, &sb), 0);
	return (uint64_t)sb.st_ino;
}

/* This process's unified cgroup directory. */
static void own_cgroup_dir(char *buf, size_t size)
{
	char line[3000];
	FILE *f = fopen("/proc/self/cgroup", "re");
	assert_non_null(f);
	buf[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(buf, size, "%s%s", unified, line + 3);
		}
	fclose(f);
	assert_true(buf[0] != 0);
}

static void test_threads_and_states(void **state)
{
	(void)state;
	int spin_tid = 0, sp[3] = { -1, -1, 0 };
	pthread_t a, b;
	assert_int_equal(pipe(sp), 0);
	spin_stop = 0;
	assert_int_equal(pthread_create(&a, NULL, spinner, &spin_tid), 0);
	assert_int_equal(pthread_create(&b, NULL, sleeper, sp), 0);
	while (!__atomic_load_n(&spin_tid, __ATOMIC_ACQUIRE) || !__atomic_load_n(&sp[2], __ATOMIC_ACQUIRE))
		usleep(1000);
	/* until /proc shows the sleeper blocked (S) */
	for (int i = 0; i < 10000 && proc_state(sp[2]) != 'S'; i++)
		usleep(1000);
	assert_int_equal(proc_state(sp[2]), 'S');

	int *before, *after;
	size_t nb = proc_threads(&before);
	const struct acct_task_record *r;
	ssize_t n = acct_task_walk_read(walk, 1u, &r);
	assert_true(n > 0);
	size_t na = proc_threads(&after);

	/* every thread alive over the whole walk is in it, once */
	size_t checked = 0;
	for (size_t i = 0; i < nb; i++) {
		if (!bsearch(&before[i], after, na, sizeof(int), cmp_int))
			continue;
		unsigned count;
		find(r, (size_t)n, before[i], &count);
		if (count != 1)
			fail_msg("thread %d: %u records, alive before and after the walk", before[i], count);
		checked++;
	}
	assert_true(checked > 3);

	char dir[4096];
	own_cgroup_dir(dir, sizeof(dir));
	uint64_t ino = inode_of(dir);
	unsigned count;
	const struct acct_task_record *me = find(r, (size_t)n, (int)gettid(), &count);
	const struct acct_task_record *spin = find(r, (size_t)n, spin_tid, &count);
	const struct acct_task_record *sleep = find(r, (size_t)n, sp[2], &count);
	if (!me || !spin || !sleep)
		fail_msg("a thread of this process is not in the walk");
	/* the walking thread runs; the spinner runs or waits to; the sleeper
	 * is blocked in read() */
	assert_true(me->flags & ACCT_TASK_F_ACTIVE);
	assert_true(spin->flags & ACCT_TASK_F_ACTIVE);
	assert_false(sleep->flags & ACCT_TASK_F_ACTIVE);
	for (const struct acct_task_record *t = r; t < r + n; t++) {
		bool ours = t == me || t == spin || t == sleep;
		if (ours) {
			assert_true(t->flags & ACCT_TASK_F_SELF);
			assert_int_equal(t->cgroup[0], ino);
		} else if (t->tid == 1)
			assert_false(t->flags & ACCT_TASK_F_SELF);
		/* only the unified slot was asked for */
		for (int k = 1; k < ACCT_TASK_SLOTS; k++)
			assert_int_equal(t->cgroup[k], 0);
	}

	/* moved to another cgroup: seen there at the next walk */
	snprintf(made, sizeof(made), "%s/task-walk-test-%d", unified, (int)getpid());
	assert_int_equal(mkdir(made, 0755), 0);
	char procs[300], tidbuf[32];
	snprintf(procs, sizeof(procs), "%s/cgroup.threads", made);
	int fd = open(procs, O_WRONLY);
	if (fd >= 0) {
		int len = snprintf(tidbuf, sizeof(tidbuf), "%d", sp[2]);
		/* a threaded move needs a threaded subtree: move the process */
		if (write(fd, tidbuf, (size_t)len) < 0) {
			close(fd);
			snprintf(procs, sizeof(procs), "%s/cgroup.procs", made);
			fd = open(procs, O_WRONLY);
			assert_true(fd >= 0);
			len = snprintf(tidbuf, sizeof(tidbuf), "%d", (int)getpid());
			assert_int_equal(write(fd, tidbuf, (size_t)len), len);
		}
		close(fd);
	}
	n = acct_task_walk_read(walk, 1u, &r);
	assert_true(n > 0);
	sleep = find(r, (size_t)n, sp[2], &count);
	if (!sleep)
		fail_msg("the moved thread is not in the walk");
	assert_int_equal(sleep->cgroup[0], inode_of(made));

	/* back where we were, and the helpers stopped */
	char back[4200];
	snprintf(back, sizeof(back), "%s/cgroup.procs", dir);
	fd = open(back, O_WRONLY);
	assert_true(fd >= 0);
	int len = snprintf(tidbuf, sizeof(tidbuf), "%d", (int)getpid());
	assert_int_equal(write(fd, tidbuf, (size_t)len), len);
	close(fd);
	assert_int_equal(rmdir(made), 0);
	made[0] = 0;
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELAXED);
	assert_int_equal(write(sp[1], "x", 1), 1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	close(sp[0]);
	close(sp[1]);
	free(before);
	free(after);
}

/* Every slot asked for is filled for a thread in every hierarchy mounted: the
 * v1 ids are those of the directories /proc/self/cgroup names. */
static void test_v1_slots(void **state)
{
	(void)state;
	static const struct { const char *controller; int slot; } v1[] = {
		{ "memory", 1 }, { "cpuacct", 2 }, { "cpu", 3 }, { "blkio", 4 },
	};
	char line[4096];
	unsigned tested = 0;
	const struct acct_task_record *r;
	ssize_t n = acct_task_walk_read(walk, 0x1f, &r);
	assert_true(n > 0);
	unsigned count;
	const struct acct_task_record *me = find(r, (size_t)n, (int)gettid(), &count);
	if (!me)
		fail_msg("this thread is not in the walk");
	FILE *f = fopen("/proc/self/cgroup", "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *ctrls = strchr(line, ':'), *path = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = 0;
		ctrls++;
		for (size_t i = 0; i < sizeof(v1) / sizeof(v1[0]); i++) {
			char list[256];
			snprintf(list, sizeof(list), ",%s,", ctrls);
			char want[64];
			snprintf(want, sizeof(want), ",%s,", v1[i].controller);
			if (!strstr(list, want))
				continue;
			char dir[4400];
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s%s", v1[i].controller, path);
			struct stat sb;
			if (stat(dir, &sb) < 0)
				continue; /* mounted elsewhere */
			assert_int_equal(me->cgroup[v1[i].slot], (uint64_t)sb.st_ino);
			tested++;
		}
	}
	fclose(f);
	if (!tested)
		print_message("no v1 hierarchy here: only the unified slot was compared\n");
	assert_true(me->cgroup[0] != 0); /* the unified slot too */
}

/* A walk pinned in bpffs (acctd --bpf-pin's way) and opened from the pin:
 * the same threads, this one with its slots as pinned (the reader's mask is
 * not the pin's to change); a pin that is not there is -ENOENT with a
 * reason that names it; a pinned walk cannot be pinned again. */
static void test_pinned(void **state)
{
	(void)state;
	char reason[256];
	struct acct_task_walk *w = NULL, *p = NULL;
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/task-walk-test-%d", (int)getpid());

	assert_int_equal(acct_task_walk_open_pin(layout, pin, &p, reason, sizeof(reason)), -ENOENT);
	assert_null(p);
	assert_non_null(strstr(reason, pin));

	assert_int_equal(acct_task_walk_new(layout, NULL, &w, reason, sizeof(reason)), 0);
	int r = acct_task_walk_pin(w, 1u << ACCT_HIER_UNIFIED, pin);
	if (r < 0) {
		acct_task_walk_free(w);
		skip(); /* no bpffs at /sys/fs/bpf */
	}
	assert_int_equal(acct_task_walk_open_pin(layout, pin, &p, reason, sizeof(reason)), 0);
	assert_string_equal(acct_task_walk_source(w), "task iterator, attached");
	assert_non_null(strstr(acct_task_walk_source(p), pin));
	assert_int_equal(acct_task_walk_pin(p, 1, pin), -EINVAL);

	const struct acct_task_record *r1;
	ssize_t n = acct_task_walk_read(p, 0x1f, &r1); /* 0x1f: not what the pin fills */
	assert_true(n > 0);
	unsigned count;
	const struct acct_task_record *me = find(r1, (size_t)n, (int)gettid(), &count);
	if (!me)
		fail_msg("this thread is not in the pinned walk");
	assert_int_equal(count, 1);
	assert_true(me->cgroup[ACCT_HIER_UNIFIED] != 0);
	for (int slot = 1; slot < ACCT_TASK_SLOTS; slot++)
		assert_int_equal(me->cgroup[slot], 0); /* the pin's mask, not the reader's */
	(void)unlink(pin);
	pin[0] = 0;
	acct_task_walk_free(p);
	acct_task_walk_free(w);
}

/* Write `value` to the file `name` of cgroup directory `dir`; -errno. */
static int cg_write(const char *dir, const char *name, const char *value)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, strlen(value));
	int r = n < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* Whether the file `name` of `dir` holds a line `line` (freezer.state's
 * FROZEN, cgroup.events' "frozen 1"). */
static bool cg_has_line(const char *dir, const char *name, const char *line)
{
	char path[300], buf[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	bool found = false;
	while (f && !found && fgets(buf, sizeof(buf), f))
		found = strcmp(strtok(buf, "\n") ?: "", line) == 0;
	if (f)
		fclose(f);
	return found;
}

/* Kill and reap *pid where it is a process (then 0). */
static void kill_reap(pid_t *pid)
{
	if (*pid > 0) {
		(void)kill(*pid, SIGKILL);
		(void)waitpid(*pid, NULL, 0);
		*pid = 0;
	}
}

/* Remove cgroup dir where it is set (then ""): it empties once its reaped
 * processes have left it, which may take a moment (up to 3 s). */
static void remove_cgroup(char *dir)
{
	if (dir[0]) {
		for (int i = 0; i < 3000 && rmdir(dir) < 0 && errno == EBUSY; i++)
			usleep(1000);
		dir[0] = 0;
	}
}

/* Thaw, kill and reap the frozen process and remove its cgroup; on every
 * exit path (a frozen process dies only once thawed). */
static void unfreeze(void)
{
	if (frozen[0]) {
		(void)cg_write(frozen, "freezer.state", "THAWED");
		(void)cg_write(frozen, "cgroup.freeze", "0");
	}
	kill_reap(&frozen_pid);
	remove_cgroup(frozen);
}

/* A frozen process is not active, though it was running: the kernel's load
 * average does not count it (kernel/sched/core.c counts a task that went to
 * sleep uninterruptible only without TASK_NOLOAD and TASK_FROZEN), where
 * /proc/<tid>/stat shows the v1 freezer's TASK_FROZEN as D and the task's
 * state has no bit of TASK_REPORT. With the v1 freezer where it is mounted
 * (the TASK_FROZEN case), else with the unified tree's cgroup.freeze. */
static void test_frozen_not_active(void **state)
{
	(void)state;
	bool v1 = access("/sys/fs/cgroup/freezer/freezer.state", F_OK) == 0 ||
		  access("/sys/fs/cgroup/freezer/tasks", F_OK) == 0;
	snprintf(frozen, sizeof(frozen), "%s/task-walk-frozen-%d", v1 ? "/sys/fs/cgroup/freezer" : unified,
		 (int)getpid());
	assert_int_equal(mkdir(frozen, 0755), 0);
	frozen_pid = fork();
	assert_true(frozen_pid >= 0);
	if (frozen_pid == 0)
		for (;;) /* runs until frozen, then killed */
			;
	char pidbuf[32];
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)frozen_pid);
	assert_int_equal(cg_write(frozen, v1 ? "tasks" : "cgroup.procs", pidbuf), 0);
	int r = cg_write(frozen, v1 ? "freezer.state" : "cgroup.freeze", v1 ? "FROZEN" : "1");
	if (r < 0) {
		unfreeze();
		skip(); /* a unified tree without cgroup.freeze (before 5.2) */
	}
	/* until the kernel says the whole cgroup is frozen: 60 s, a busy machine */
	bool done = false;
	for (int i = 0; i < 60000 && !done; i++) {
		done = v1 ? cg_has_line(frozen, "freezer.state", "FROZEN") : cg_has_line(frozen, "cgroup.events", "frozen 1");
		if (!done)
			usleep(1000);
	}
	assert_true(done);

	const struct acct_task_record *rec;
	ssize_t n = acct_task_walk_read(walk, 1u, &rec);
	assert_true(n > 0);
	unsigned count;
	const struct acct_task_record *t = find(rec, (size_t)n, (int)frozen_pid, &count);
	if (!t)
		fail_msg("the frozen process %d is not in the walk", (int)frozen_pid);
	assert_int_equal(count, 1);
	if (t->flags & ACCT_TASK_F_ACTIVE)
		fail_msg("the frozen process %d (%s freezer, /proc state %c) is active", (int)frozen_pid,
			 v1 ? "v1" : "unified", proc_state_of((int)frozen_pid));
	unfreeze();
}

/* Kill and reap test_throttled_not_active()'s spinners and remove their
 * cgroup; on every exit path. */
static void unthrottle(void)
{
	for (int i = 0; i < SPINNERS; i++)
		kill_reap(&spinners[i]);
	remove_cgroup(throttled);
}

/* cpu.stat's nr_periods and nr_throttled of `dir` (the enforcement periods
 * in which it ran, and those in which it ran out of quota); false where
 * either is missing. */
static bool bandwidth_periods(const char *dir, long *periods, long *throttled_periods)
{
	char path[300], buf[256];
	snprintf(path, sizeof(path), "%s/cpu.stat", dir);
	FILE *f = fopen(path, "re");
	*periods = *throttled_periods = -1;
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "nr_periods %ld", periods) != 1)
			(void)sscanf(buf, "nr_throttled %ld", throttled_periods);
	if (f)
		fclose(f);
	return *periods >= 0 && *throttled_periods >= 0;
}

/* Runnable threads of a cgroup over its CPU quota are not active: CFS takes a
 * throttled group's tasks off the run queue's count, which the load average
 * samples, though /proc/<tid>/stat shows them R. Four spinning processes
 * under a quota of 1 ms every 100 ms are throttled about 99% of each period
 * where they get the CPU to use their millisecond. On a busy machine they
 * may not (runnable, waiting for a CPU: active, rightly): so only windows of
 * walks in which the kernel throttled the group in every period count, and
 * in those they should be active about 1% of the time (more on a loaded
 * machine, where the group takes longer to use its millisecond). Counting
 * them as /proc shows them gives every record: the bound is half. With the
 * v1 cpu controller where it is mounted, else the unified tree's cpu.max;
 * skipped where neither has bandwidth control, or where in 60 s the group
 * was not once throttled in every period of a window. */
#define THROTTLE_WINDOWS 8
#define WINDOW_WALKS 25

static void test_throttled_not_active(void **state)
{
	(void)state;
	bool v1 = access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", F_OK) == 0;
	snprintf(throttled, sizeof(throttled), "%s/task-walk-throttled-%d", v1 ? "/sys/fs/cgroup/cpu" : unified,
		 (int)getpid());
	assert_int_equal(mkdir(throttled, 0755), 0);
	int r = v1 ? cg_write(throttled, "cpu.cfs_quota_us", "1000") : cg_write(throttled, "cpu.max", "1000 100000");
	if (r < 0) {
		unthrottle();
		skip(); /* no bandwidth control here */
	}
	if (v1)
		assert_int_equal(cg_write(throttled, "cpu.cfs_period_us", "100000"), 0);
	for (int i = 0; i < SPINNERS; i++) {
		spinners[i] = fork();
		assert_true(spinners[i] >= 0);
		if (spinners[i] == 0)
			for (;;) /* runs until killed */
				;
		char pidbuf[32];
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)spinners[i]);
		assert_int_equal(cg_write(throttled, v1 ? "tasks" : "cgroup.procs", pidbuf), 0);
	}

	unsigned active = 0, running = 0, records = 0, windows = 0, tried = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (windows == THROTTLE_WINDOWS || now.tv_sec - t0.tv_sec >= 60)
			break;
		long p0, th0, p1, th1;
		assert_true(bandwidth_periods(throttled, &p0, &th0));
		unsigned w_active = 0, w_running = 0;
		for (int w = 0; w < WINDOW_WALKS; w++) {
			const struct acct_task_record *rec;
			ssize_t n = acct_task_walk_read(walk, 1u, &rec);
			assert_true(n > 0);
			for (int i = 0; i < SPINNERS; i++) {
				unsigned count;
				const struct acct_task_record *t = find(rec, (size_t)n, (int)spinners[i], &count);
				if (!t)
					fail_msg("spinner %d is not in the walk", (int)spinners[i]);
				w_active += !!(t->flags & ACCT_TASK_F_ACTIVE);
				w_running += proc_state_of((int)spinners[i]) == 'R';
			}
			usleep(8000);
		}
		assert_true(bandwidth_periods(throttled, &p1, &th1));
		tried++;
		/* every period of the window throttled (two at least: the window
		 * is about 200 ms) */
		if (p1 - p0 < 2 || th1 - th0 < p1 - p0)
			continue;
		windows++;
		active += w_active;
		running += w_running;
		records += WINDOW_WALKS * SPINNERS;
	}
	print_message("throttled spinners: in %u of %u windows throttled in every period, active in %u of %u "
		      "records, R in /proc in %u\n",
		      windows, tried, active, records, running);
	if (windows < 2) {
		unthrottle();
		skip(); /* too busy a machine: the group could not use its quota */
	}
	assert_true(active < records / 2);
	unthrottle();
}

static void cleanup(void)
{
	unfreeze();
	unthrottle();
	if (made[0])
		(void)rmdir(made);
	if (pin[0])
		(void)unlink(pin);
}

/* Why the walk cannot run here, or NULL. */
static const char *missing(void)
{
	static char why[256];
	if (geteuid() != 0)
		return "not root";
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "NSpid:", 6) == 0 && strchr(line + 7, '\t')) {
			fclose(f);
			return "not in the init pid namespace (records carry the kernel's pids)";
		}
	if (f)
		fclose(f);
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0)
		snprintf(unified, sizeof(unified), "/sys/fs/cgroup");
	else if (access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK) == 0)
		snprintf(unified, sizeof(unified), "/sys/fs/cgroup/unified");
	else
		return "no cgroup v2 hierarchy";
	char reason[256];
	int r = acct_hierarchies_detect(NULL, &layout);
	if (r < 0)
		return "cannot find the cgroup hierarchies";
	r = acct_task_walk_new(layout, NULL, &walk, reason, sizeof(reason));
	if (r < 0) {
		snprintf(why, sizeof(why), "%s", reason);
		return why;
	}
	return NULL;
}

int main(void)
{
	const char *why = missing();
	if (why) {
		printf("skipping the task walk tests: %s\n", why);
		return 77;
	}
	atexit(cleanup);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_and_states),
		cmocka_unit_test(test_v1_slots),
		cmocka_unit_test(test_frozen_not_active),
		cmocka_unit_test(test_throttled_not_active),
		cmocka_unit_test(test_pinned),
	};
	int failed = cmocka_run_group_tests_name("task-walk", tests, NULL, NULL);
	walk = acct_task_walk_free(walk);
	acct_hierarchies_free(layout);
	return failed;
}
