/*
 * The few system calls of sysperf's freestanding helper programs (csrc/forker.c, the papers'
 * forks/execs programs, and csrc/cspeed_main.c, Feder's C-speed program): no libc, the calls
 * made directly, and the pipe protocol both speak with sysperf. Counts arrive as 8-byte words
 * on fd 3; answers leave on fd 4 as 64-bit words, the first of which (0) says the program is
 * ready. An answer holds the program's own rusage over the run and its reaped children's
 * (usage() below: user and system nanoseconds, minor and major faults, voluntary and
 * involuntary switches, 6 words each), then a count of operations that went wrong.
 */
#ifndef SYSPERF_SYS_H
#define SYSPERF_SYS_H

typedef unsigned long u64;
typedef long i64;

#if defined(__x86_64__)
#define SYS_read 0
#define SYS_write 1
#define SYS_brk 12
#define SYS_clone 56
#define SYS_execve 59
#define SYS_wait4 61
#define SYS_getrusage 98
#define SYS_exit_group 231

static inline i64 sc6(i64 n, i64 a, i64 b, i64 c, i64 d, i64 e, i64 f)
{
    i64 ret;
    register i64 r10 __asm__("r10") = d;
    register i64 r8 __asm__("r8") = e;
    register i64 r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

/* The entry: the stack holds argc, argv[], NULL, envp[], NULL; main gets its address. */
#define SYS_ENTRY(main)                                                                      \
    __asm__(".text\n.global _start\n_start:\n\txor %rbp, %rbp\n\tmov %rsp, %rdi\n\tand $-16, " \
            "%rsp\n\tcall " #main "\n\thlt\n");

#elif defined(__aarch64__)
#define SYS_read 63
#define SYS_write 64
#define SYS_brk 214
#define SYS_clone 220
#define SYS_execve 221
#define SYS_wait4 260
#define SYS_getrusage 165
#define SYS_exit_group 94

static inline i64 sc6(i64 n, i64 a, i64 b, i64 c, i64 d, i64 e, i64 f)
{
    register i64 x8 __asm__("x8") = n;
    register i64 x0 __asm__("x0") = a;
    register i64 x1 __asm__("x1") = b;
    register i64 x2 __asm__("x2") = c;
    register i64 x3 __asm__("x3") = d;
    register i64 x4 __asm__("x4") = e;
    register i64 x5 __asm__("x5") = f;
    __asm__ volatile("svc #0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    return x0;
}

#define SYS_ENTRY(main)                                                                      \
    __asm__(".text\n.global _start\n_start:\n\tmov x29, #0\n\tmov x0, sp\n\tbl " #main        \
            "\n\tbrk #0\n");

#else
#error "sysperf's helper programs: add the system calls for this architecture in csrc/sys.h"
#endif

#define RUSAGE_SELF 0
#define RUSAGE_CHILDREN (-1)
#define CMD_FD 3
#define REPORT_FD 4
/* Words of an answer: own usage, children's usage, operations that went wrong. */
#define ANSWER_WORDS 13

struct timeval {
    i64 tv_sec;
    i64 tv_usec;
};

/* struct rusage of Linux on 64-bit machines. */
struct rusage {
    struct timeval ru_utime, ru_stime;
    i64 ru_maxrss, ru_ixrss, ru_idrss, ru_isrss, ru_minflt, ru_majflt, ru_nswap, ru_inblock,
        ru_oublock, ru_msgsnd, ru_msgrcv, ru_nsignals, ru_nvcsw, ru_nivcsw;
};

static __attribute__((noreturn)) void die(int code)
{
    for (;;)
        sc6(SYS_exit_group, code, 0, 0, 0, 0, 0);
}

/* Reads (write == 0) or writes exactly len bytes; -1 on end of file or an error. */
static int full(int write, int fd, char *buf, u64 len)
{
    u64 done = 0;
    while (done < len) {
        i64 n = sc6(write ? SYS_write : SYS_read, fd, (i64)(buf + done), (i64)(len - done), 0, 0, 0);
        if (n == -4) /* EINTR */
            continue;
        if (n <= 0)
            return -1;
        done += (u64)n;
    }
    return 0;
}

/* The 6 words of an answer for getrusage(who). */
static void usage(int who, u64 *out)
{
    struct rusage r; /* filled whole by the kernel */
    if (sc6(SYS_getrusage, who, (i64)&r, 0, 0, 0, 0) != 0)
        die(5);
    out[0] = (u64)r.ru_utime.tv_sec * 1000000000ul + (u64)r.ru_utime.tv_usec * 1000ul;
    out[1] = (u64)r.ru_stime.tv_sec * 1000000000ul + (u64)r.ru_stime.tv_usec * 1000ul;
    out[2] = (u64)r.ru_minflt;
    out[3] = (u64)r.ru_majflt;
    out[4] = (u64)r.ru_nvcsw;
    out[5] = (u64)r.ru_nivcsw;
}

#endif
