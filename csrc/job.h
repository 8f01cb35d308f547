/*
 * Shared by the papers' "null job" and "big job" (4.2BSD paper, Appendix A): programs that do
 * nothing but exit(0), so that exec benchmarks time the kernel's exec path and not a C runtime.
 * They are freestanding static executables: no libc, no dynamic loader, an entry point that
 * makes the exit system call directly. What differs between the two is only the size of the
 * initialized data segment, exactly as in the paper (1 KiB against 250 KiB).
 */
#ifndef SYSPERF_JOB_H
#define SYSPERF_JOB_H

/* Touch one byte of the data so that neither compiler nor linker can drop the segment. */
#define JOB_BODY(space)                                                                  \
    void _start(void)                                                                    \
    {                                                                                    \
        volatile char keep = space[0];                                                   \
        (void)keep;                                                                      \
        job_exit0();                                                                     \
    }

#if defined(__x86_64__)
static inline __attribute__((noreturn)) void job_exit0(void)
{
    __asm__ volatile("mov $60, %%eax\n\txor %%edi, %%edi\n\tsyscall" ::: "rax", "rdi", "memory");
    __builtin_unreachable();
}
#elif defined(__aarch64__)
static inline __attribute__((noreturn)) void job_exit0(void)
{
    __asm__ volatile("mov x8, #93\n\tmov x0, #0\n\tsvc #0" ::: "x0", "x8", "memory");
    __builtin_unreachable();
}
#else
#error "sysperf's null/big job: add the exit system call for this architecture in csrc/job.h"
#endif

#endif
