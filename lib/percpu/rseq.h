/* rseq.h - per-CPU critical sections with restartable sequences (x86-64).
 *
 * glibc 2.35+ registers a struct rseq for every thread (<sys/rseq.h>:
 * __rseq_offset, __rseq_size). A critical section that the kernel restarts
 * when the thread is preempted, migrated or signalled lets a thread update the
 * shard of the CPU it runs on with plain loads and stores: no other thread can
 * run on that CPU in between, and no thread on another CPU touches that shard.
 * Shard words live at `base + cpu * ACCT_SHARD_STRIDE`.
 *
 * Shard word encoding (shared with the fallback path in counter.c): bit 0 is the
 * "folding" flag, bits 63..1 the residue r as a signed value, so word = 2r when
 * not folding. While the flag is set the residue is 0 and only the folder
 * writes the word.
 *
 * Where rseq is not available (other architectures, old glibc, registration
 * refused) acct_rseq_usable() is false and the counter engine uses atomics. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACCT_SHARD_STRIDE 4096 /* bytes between one counter's shards on consecutive CPUs */

#if defined(__x86_64__) && __has_include(<sys/rseq.h>)
#define ACCT_HAVE_RSEQ_ASM 1
#include <sys/rseq.h>

/* The calling thread's registered rseq area. */
static inline struct rseq *acct_rseq_area(void)
{
	return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

/* A copy of glibc's __rseq_offset in this program's own data, so that the hot
 * path reaches the rseq area with one %fs-relative access instead of going
 * through the GOT and the thread pointer. Set by acct_rseq_usable(). */
extern ptrdiff_t acct_rseq_off;

/* The critical-section descriptor, the abort signature (the 4 bytes before the
 * abort handler must equal glibc's RSEQ_SIG, 0x53053053 on x86), and the abort
 * handler, which re-arms the section and runs it again. */
#define ACCT_RSEQ_CS_PROLOGUE                            \
	".pushsection __rseq_cs, \"aw\"\n\t"             \
	".balign 32\n\t"                                 \
	"3:\n\t"                                         \
	".long 0x0, 0x0\n\t"                             \
	".quad 1f, (2f - 1f), 4f\n\t"                    \
	".popsection\n\t"                                \
	"5:\n\t"                                         \
	"leaq 3b(%%rip), %%rax\n\t"                      \
	"movq %%rax, %%fs:8(%[rs])\n\t"

#define ACCT_RSEQ_CS_EPILOGUE                            \
	".pushsection __rseq_failure, \"ax\"\n\t"        \
	".byte 0x0f, 0xb9, 0x3d\n\t"                     \
	".long 0x53053053\n\t"                           \
	"4:\n\t"                                         \
	"jmp 5b\n\t"                                     \
	".popsection\n\t"

/* Add 2*delta (`delta2`, computed by the caller without overflow) to the
 * current CPU's shard word at base + cpu * stride, unless the word is flagged
 * or the new residue would leave [-lim/2, lim/2], that is unless |new word| >
 * *limp (an overflowing sum counts as outside). Returns true when committed,
 * false when the caller must take the slow path (nothing was written then).
 * `base` already includes the caller's spread offset. The limit is read inside
 * the section so that a limit lowered by another thread followed by an rseq
 * fence (membarrier) is obeyed by every commit after the fence. */
static inline bool acct_rseq_shard_add(char *base, const int64_t *limp, int64_t delta2)
{
	ptrdiff_t rs = acct_rseq_off;

	__asm__ goto(ACCT_RSEQ_CS_PROLOGUE
		     "1:\n\t"
		     "movl %%fs:4(%[rs]), %%eax\n\t" /* cpu_id */
		     "shlq $12, %%rax\n\t"           /* * ACCT_SHARD_STRIDE */
		     "addq %[base], %%rax\n\t"
		     "movq (%%rax), %%rcx\n\t"       /* w */
		     "testb $1, %%cl\n\t"
		     "jnz %l[slow]\n\t"              /* a fold holds this shard */
		     "addq %[d2], %%rcx\n\t"         /* w' = w + 2*delta */
		     "jo %l[slow]\n\t"
		     "movq (%[limp]), %%rdx\n\t"     /* lim */
		     "leaq (%%rcx, %%rdx), %%r8\n\t" /* w' + lim, in [0, 2 lim] iff |w'| <= lim */
		     "addq %%rdx, %%rdx\n\t"
		     "cmpq %%rdx, %%r8\n\t"
		     "ja %l[slow]\n\t"
		     "movq %%rcx, (%%rax)\n\t"       /* commit */
		     "2:\n\t" ACCT_RSEQ_CS_EPILOGUE
		     :
		     : [rs] "r"(rs), [base] "r"(base), [limp] "r"(limp), [d2] "r"(delta2)
		     : "rax", "rcx", "rdx", "r8", "memory", "cc"
		     : slow);
	return true;
slow:
	return false;
}

/* Take the current CPU's shard for a fold: if its word is not flagged, replace
 * it by the flag (1) and return the old word; if it is flagged, return the
 * flagged word unchanged. *ret_cpu is the CPU whose shard was examined. */
static inline int64_t acct_rseq_shard_grab(char *base, unsigned *ret_cpu)
{
	ptrdiff_t rs = acct_rseq_off;
	int64_t w;
	uint32_t cpu;

	__asm__ volatile(ACCT_RSEQ_CS_PROLOGUE
			 "1:\n\t"
			 "movl %%fs:4(%[rs]), %k[cpu]\n\t"
			 "movl %k[cpu], %%eax\n\t"
			 "shlq $12, %%rax\n\t"
			 "addq %[base], %%rax\n\t"
			 "movq (%%rax), %[w]\n\t"
			 "testq $1, %[w]\n\t"
			 "jnz 2f\n\t"
			 "movq $1, (%%rax)\n\t" /* commit: flag it, residue now ours */
			 "2:\n\t" ACCT_RSEQ_CS_EPILOGUE
			 : [w] "=&r"(w), [cpu] "=&r"(cpu)
			 : [rs] "r"(rs), [base] "r"(base)
			 : "rax", "memory", "cc");
	*ret_cpu = cpu;
	return w;
}
#else
#define ACCT_HAVE_RSEQ_ASM 0
#endif

/* True when this process can use the rseq critical sections above: built for
 * x86-64, glibc registered rseq for the calling thread, and the kernel accepted
 * MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ (needed to fence limit
 * changes). The answer is computed once and cached. Thread-safe. */
bool acct_rseq_usable(void);

/* Restart every rseq critical section running in this process, so that none
 * that began before the call commits after it. Returns 0 or a negative errno.
 * Costs an IPI to each CPU running a thread of this process (microseconds). */
int acct_rseq_fence(void);

/* The current CPU as the kernel reports it (rseq's cpu_id when registered, else
 * sched_getcpu()); 0 if neither works. The value may be stale on return. */
unsigned acct_current_cpu(void);
