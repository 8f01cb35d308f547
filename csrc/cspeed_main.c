/*
 * The driver of Feder's C-speed program (csrc/cspeed.c): a freestanding static executable, no
 * libc, that sysperf carries, writes into a private directory and starts once per trial, as it
 * does the papers' forks/execs program (csrc/forker.c), so that neither an exec nor a C
 * runtime's start-up is inside the timed region.
 *
 *   cspeed KERNEL        (wc, symtab, sort, interp or crc)
 *
 * It makes the text, checks one pass of every kernel against the known answer (exits 6 when
 * one differs: then this build computes something else than the source means), says it is
 * ready, and then, for every count sysperf sends on fd 3, runs that many passes of KERNEL and
 * answers on fd 4 with its own usage over them, zeros for children (it has none), and the
 * number of passes whose self-check failed (csrc/sys.h's protocol). It exits when fd 3
 * reaches end of file. Between a count and its answer it makes no system call: the passes are
 * pure user-mode C. Nothing here reads a clock: sysperf times the run around the exchange.
 */

#include "sys.h"

typedef unsigned int u32;

void cspeed_init(void);
int cspeed_kernel(const char *name);
int cspeed_pass(int k, u32 *result);
int cspeed_check(void);

SYS_ENTRY(cspeed_main)

/*
 * The compiler may turn a copying or clearing loop into a call of these (structure copies,
 * array initialisers), which a freestanding program must then provide. The empty asm keeps
 * the compiler from seeing the loops as the very same call.
 */
void *memset(void *d, int c, unsigned long n)
{
    unsigned char *p = d;
    while (n-- > 0) {
        *p++ = (unsigned char)c;
        __asm__ volatile("" ::: "memory");
    }
    return d;
}

void *memcpy(void *d, const void *s, unsigned long n)
{
    unsigned char *p = d;
    const unsigned char *q = s;
    while (n-- > 0) {
        *p++ = *q++;
        __asm__ volatile("" ::: "memory");
    }
    return d;
}

__attribute__((used, noreturn)) void cspeed_main(i64 *sp)
{
    i64 argc = sp[0];
    char **argv = (char **)(sp + 1);
    if (argc < 2)
        die(1);
    int k = cspeed_kernel(argv[1]);
    if (k < 0)
        die(2);
    cspeed_init();
    if (cspeed_check() != 0)
        die(6);
    u64 ready = 0;
    if (full(1, REPORT_FD, (char *)&ready, sizeof ready))
        die(3);
    for (;;) {
        u64 n;
        if (full(0, CMD_FD, (char *)&n, sizeof n))
            die(0); /* sysperf closed the pipe: done */
        u64 out[ANSWER_WORDS] = {0};
        u64 s0[6], s1[6];
        u64 wrong = 0;
        usage(RUSAGE_SELF, s0);
        while (n-- > 0) {
            u32 result;
            wrong += (u64)cspeed_pass(k, &result);
        }
        usage(RUSAGE_SELF, s1);
        for (int i = 0; i < 6; i++)
            out[i] = s1[i] - s0[i];
        out[12] = wrong;
        if (full(1, REPORT_FD, (char *)out, sizeof out))
            die(3);
    }
}
