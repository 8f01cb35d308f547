/*
 * The 4.2BSD paper's "forks" and "execs" programs (Appendix A), and the "vforks" and "vexecs"
 * programs "constructed from the forks and execs programs, respectively, by substituting calls
 * to fork with calls to vfork", as a process of the paper's size: a freestanding static
 * executable of a few KiB, no libc, so that what fork copies is what the paper's small C
 * program had (its text, data, stack and the sbrk'd heap), not a Rust worker's megabytes and
 * dozens of mappings.
 *
 *   forks  N brk-size            (argv[0] names the program, as the paper's file names did)
 *   execs  N brk-size job-name
 *   vforks N brk-size
 *   vexecs N brk-size job-name
 *
 * vfork is clone(CLONE_VM|CLONE_VFORK|SIGCHLD) on the caller's own stack, done by a few lines
 * of assembly (vfork_child below) whose child touches no memory: it execs or exits straight
 * from registers, as libc's vfork must (the parent's stack frame is shared until then).
 *
 * As the appendix: sbrk(brk-size) and store a byte every 1024 bytes; then each operation is
 * fork, the child _exit(-1) (forks) or execv(job-name, argv) with the caller's environment
 * (execs: a path lookup of job-name in the working directory), and the parent's wait() loop
 * until that child. N in argv is only passed on to the job, as the paper's argv was.
 *
 * Unlike the appendix, the count of each run comes from sysperf over a pipe, so that one such
 * process serves every trial and its start is not timed: it reads an 8-byte count from fd 3,
 * runs that many operations, and writes 13 64-bit words to fd 4: its own user and system
 * nanoseconds, minor and major faults, voluntary and involuntary switches over the run, the
 * same for the children it reaped, and the number of children that ended wrongly. It writes
 * one word (0) when it is ready, after the sbrk, and exits when fd 3 reaches end of file.
 * Nothing here reads a clock: sysperf times the run around its pipe exchange.
 */

#include "sys.h"

SYS_ENTRY(forker_main)

#if defined(__x86_64__)
/*
 * i64 vfork_child(path rdi, argv rsi, envp rdx, code rcx): vfork; the child execs path (when
 * not NULL) or exits with code (127 when the exec failed); the parent gets the child's pid.
 * clone ignores rdx, r10 and r8 without CLONE_*SETTID/SETTLS, and the syscall instruction
 * keeps every register but rax, rcx and r11: the values ride there into the child.
 */
__asm__(".text\n.global vfork_child\nvfork_child:\n"
        "\tmov %rcx, %r8\n\tmov %rdi, %r9\n\tmov %rsi, %r10\n"
        "\tmov $0x4111, %edi\n\txor %esi, %esi\n\tmov $56, %eax\n\tsyscall\n"
        "\ttest %rax, %rax\n\tjnz 1f\n"
        "\ttest %r9, %r9\n\tjz 2f\n"
        "\tmov %r9, %rdi\n\tmov %r10, %rsi\n\tmov $59, %eax\n\tsyscall\n\tmov $127, %r8\n"
        "2:\tmov %r8, %rdi\n\tmov $231, %eax\n\tsyscall\n\thlt\n"
        "1:\tret\n");

#elif defined(__aarch64__)
/* vfork_child(path x0, argv x1, envp x2, code x3), as on x86-64; svc keeps x1-x30. */
__asm__(".text\n.global vfork_child\nvfork_child:\n"
        "\tmov x9, x0\n\tmov x10, x1\n\tmov x11, x2\n\tmov x12, x3\n"
        "\tmov x0, #0x4111\n\tmov x1, #0\n\tmov x2, #0\n\tmov x3, #0\n\tmov x4, #0\n"
        "\tmov x8, #220\n\tsvc #0\n\tcbnz x0, 1f\n"
        "\tcbz x9, 2f\n\tmov x0, x9\n\tmov x1, x10\n\tmov x2, x11\n\tmov x8, #221\n\tsvc #0\n"
        "\tmov x12, #127\n"
        "2:\tmov x0, x12\n\tmov x8, #94\n\tsvc #0\n\tbrk #0\n"
        "1:\tret\n");
#endif

i64 vfork_child(const char *path, char **argv, char **envp, i64 code);

#define SIGCHLD 17

static u64 atou(const char *s)
{
    u64 v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (u64)(*s++ - '0');
    return v;
}

__attribute__((used, noreturn)) void forker_main(i64 *sp)
{
    i64 argc = sp[0];
    char **argv = (char **)(sp + 1);
    char **envp = argv + argc + 1;
    if (argc < 3)
        die(1);
    /* "vforks", "vexecs": the same programs with vfork. */
    int vfork = argv[0][0] == 'v';
    int execs = argv[0][vfork] == 'e';
    if (execs && argc < 4)
        die(1);
    /* cp = sbrk(brksize); for (i = 0; i < brksize; i += 1024) cp[i] = i; */
    u64 brksize = atou(argv[2]);
    char *cp = (char *)sc6(SYS_brk, 0, 0, 0, 0, 0, 0);
    if (brksize > 0) {
        char *end = (char *)sc6(SYS_brk, (i64)(cp + brksize), 0, 0, 0, 0, 0);
        if (end < cp + brksize)
            die(4);
        for (u64 i = 0; i < brksize; i += 1024)
            cp[i] = (char)i;
    }
    u64 ready = 0;
    if (full(1, REPORT_FD, (char *)&ready, sizeof ready))
        die(2);
    for (;;) {
        u64 n;
        if (full(0, CMD_FD, (char *)&n, sizeof n))
            die(0); /* sysperf closed the pipe: done */
        u64 out[ANSWER_WORDS];
        u64 s0[6], c0[6], s1[6], c1[6];
        u64 wrong = 0;
        usage(RUSAGE_SELF, s0);
        usage(RUSAGE_CHILDREN, c0);
        while (n-- > 0) {
            i64 child;
            if (vfork) {
                /* vfork(); the child execv()s the job or _exit(-1)s, from registers. */
                child = vfork_child(execs ? argv[3] : 0, argv, envp, 255);
            } else {
                child = sc6(SYS_clone, SIGCHLD, 0, 0, 0, 0, 0); /* fork() */
                if (child == 0) {
                    if (execs)
                        sc6(SYS_execve, (i64)argv[3], (i64)argv, (i64)envp, 0, 0, 0);
                    die(execs ? 127 : 255); /* _exit(-1) in the paper's forks */
                }
            }
            if (child < 0)
                die(3);
            /* while ((pid = wait(&status)) != -1 && pid != child) ; */
            int status = 0;
            i64 pid;
            for (;;) {
                pid = sc6(SYS_wait4, -1, (i64)&status, 0, 0, 0, 0);
                if (pid == child || (pid < 0 && pid != -4))
                    break;
            }
            /* forks: the child's _exit(-1); execs: the job's exit(0). */
            int want = execs ? 0 : 255;
            if (pid != child || (status & 0x7f) != 0 || ((status >> 8) & 0xff) != want)
                wrong++;
        }
        usage(RUSAGE_SELF, s1);
        usage(RUSAGE_CHILDREN, c1);
        for (int i = 0; i < 6; i++) {
            out[i] = s1[i] - s0[i];
            out[6 + i] = c1[i] - c0[i];
        }
        out[12] = wrong;
        if (full(1, REPORT_FD, (char *)out, sizeof out))
            die(2);
    }
}
