/* rseq.c - whether restartable sequences can be used, and the fence that
 * restarts every running critical section. */
#include "rseq.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool usable;
ptrdiff_t acct_rseq_off;
static pthread_once_t usable_once = PTHREAD_ONCE_INIT;

static int membarrier(int cmd, unsigned flags)
{
	return (int)syscall(__NR_membarrier, cmd, flags, 0);
}

static void detect_usable(void)
{
#if ACCT_HAVE_RSEQ_ASM
	if (__rseq_size == 0 || (int32_t)acct_rseq_area()->cpu_id < 0)
		return;
	int cmds = membarrier(MEMBARRIER_CMD_QUERY, 0);
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ))
		return;
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0) < 0)
		return;
	acct_rseq_off = __rseq_offset;
	usable = true;
#endif
}

bool acct_rseq_usable(void)
{
	(void)pthread_once(&usable_once, detect_usable);
	return usable;
}

int acct_rseq_fence(void)
{
	if (!acct_rseq_usable())
		return -EOPNOTSUPP;
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0) < 0)
		return -errno;
	return 0;
}

unsigned acct_current_cpu(void)
{
#if ACCT_HAVE_RSEQ_ASM
	if (__rseq_size > 0) {
		int32_t cpu = (int32_t)__atomic_load_n(&acct_rseq_area()->cpu_id, __ATOMIC_RELAXED);
		if (cpu >= 0)
			return (unsigned)cpu;
	}
#endif
	int cpu = sched_getcpu();
	return cpu >= 0 ? (unsigned)cpu : 0;
}
