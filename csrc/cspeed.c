/*
 * Feder's C-speed benchmark program, sysperf's version (J. Feder, "The Evolution of UNIX System
 * Performance", 1984, Section II and Table II): small C kernels "that do not reference either
 * the operating system or the C library", that "do not use floating-point arithmetic and make
 * only light use of multiplication and division", with "a mixture of procedure calls, memory,
 * and register operations roughly typical of the larger body of UNIX system programs". The
 * paper's were extracted from system programs and never published; these are written for
 * sysperf in the same spirit, each the inner loop of a familiar system program:
 *
 *   wc      count lines, words and characters (wc)
 *   symtab  a chained hash table of the identifiers in the text, with their counts (a
 *           compiler's or cross-referencer's symbol table)
 *   sort    sort the text's lines with a comparison procedure (sort, qsort)
 *   interp  a stack-machine interpreter running a program that checksums the text as sum(1)
 *           does (awk, bc, the shell: a dispatch loop)
 *   crc     a table-driven CRC-32 of the text (cksum)
 *
 * The input is one fixed text of about 8 KiB that looks like C source, made at start-up by a
 * fixed generator: the program is deterministic, and small, so it runs from the caches (the
 * paper's note on its own benchmarks). Every pass checks itself against something computed
 * another way (the generator's own counts, a second lookup of every symbol, the order of every
 * adjacent pair, the native checksum, the CRC's residue), and cspeed_check() compares one pass
 * of each kernel with the result this source is known to give.
 *
 * This file is the whole benchmark proper, freestanding C with no header, so that the compile
 * series compiles exactly it (`cc -O -c cspeed.c`); csrc/cspeed_main.c is the driver that runs
 * it under sysperf. Nothing here makes a system call or reads a clock.
 */

#define TEXT_MAX 8192
#define LINES_MAX 512
#define SYMS_MAX 1024
#define BUCKETS 256
#define STACK_MAX 32
#define KERNELS 5

typedef unsigned int u32;

static char text[TEXT_MAX];
static int text_len;
/* What the generator put in the text, for the kernels' checks. */
static int gen_lines, gen_words, gen_idents;

/* ------------------------------------------------------------------------------------------ */
/* The text: lines of C-like tokens from a fixed vocabulary, chosen by a xorshift generator. */

static u32 rng_state;

static u32 rng(void)
{
    u32 x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    rng_state = x;
    return x;
}

static const char *const vocab[] = {
    "if",    "int",   "char",   "buf",   "inode", "proc",  "read",  "write", "count", "return",
    "while", "for",   "struct", "user",  "file",  "dev",   "block", "size",  "error", "name",
    "ptr",   "next",  "hash",   "table", "flag",  "mode",  "uid",   "pid",   "time",  "sig",
    "tty",   "line",  "word",   "sum",   "len",   "else",  "break", "case",  "switch", "unsigned",
};
#define VOCAB (sizeof vocab / sizeof vocab[0])

static const char *const punct[] = {"(", ")", ";", "=", "{", "}", ",", "+", "==", "->", "&&", "*"};
#define PUNCT (sizeof punct / sizeof punct[0])

static int append(char *at, int room, const char *s)
{
    int n = 0;
    while (s[n]) {
        if (n >= room)
            return -1;
        at[n] = s[n];
        n++;
    }
    return n;
}

/* One line into line[] (no newline); returns its length, and counts its words and identifiers. */
static int make_line(char *line, int room, int *words, int *idents)
{
    int len = 0, tokens = 2 + (int)(rng() % 9u), tabs = (int)(rng() & 3u);
    *words = 0;
    *idents = 0;
    while (tabs-- > 0 && len < room)
        line[len++] = '\t';
    for (int t = 0; t < tokens; t++) {
        u32 r = rng();
        int n;
        if (t > 0 && len < room)
            line[len++] = ' ';
        if ((r & 7u) < 2u) {
            n = append(line + len, room - len, punct[(r >> 3) % PUNCT]);
        } else {
            n = append(line + len, room - len, vocab[(r >> 3) % VOCAB]);
            /* Some identifiers carry a digit or two: buf1, inode12. */
            if (n > 0 && (r & 0x300u) == 0x300u && len + n + 2 <= room) {
                line[len + n++] = (char)('0' + (r >> 12) % 10u);
                if (r & 0x400u)
                    line[len + n++] = (char)('0' + (r >> 16) % 10u);
            }
            if (n > 0)
                (*idents)++;
        }
        if (n < 0)
            return -1;
        len += n;
        (*words)++;
    }
    return len;
}

static void make_text(void)
{
    char line[128];
    rng_state = 0x2545f491u;
    text_len = gen_lines = gen_words = gen_idents = 0;
    for (;;) {
        int words, idents, n = make_line(line, (int)sizeof line, &words, &idents);
        if (n < 0 || text_len + n + 1 > TEXT_MAX || gen_lines >= LINES_MAX)
            break;
        for (int i = 0; i < n; i++)
            text[text_len++] = line[i];
        text[text_len++] = '\n';
        gen_lines++;
        gen_words += words;
        gen_idents += idents;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* wc */

static u32 wc(int *failed)
{
    int lines = 0, words = 0, chars = 0, in_word = 0;
    for (int i = 0; i < text_len; i++) {
        char c = text[i];
        chars++;
        if (c == '\n')
            lines++;
        if (c == ' ' || c == '\t' || c == '\n') {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            words++;
        }
    }
    *failed = lines != gen_lines || words != gen_words || chars != text_len;
    return (u32)lines ^ ((u32)words << 10) ^ ((u32)chars << 20);
}

/* ------------------------------------------------------------------------------------------ */
/* symtab: identifiers of the text in a chained hash table */

struct sym {
    int at, len, count, next;
};

static struct sym syms[SYMS_MAX];
static int nsyms;
static int bucket[BUCKETS];

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static u32 hash(const char *s, int len)
{
    u32 h = 0;
    for (int i = 0; i < len; i++)
        h = (h << 5) - h + (u32)(unsigned char)s[i]; /* h * 31 + c, without the multiply */
    return h;
}

static int same(const char *a, const char *b, int len)
{
    for (int i = 0; i < len; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* The symbol named text[at..at+len), or -1; entered with a count of 0 when create is set. */
static int lookup(int at, int len, int create)
{
    u32 b = hash(text + at, len) & (BUCKETS - 1);
    for (int i = bucket[b]; i >= 0; i = syms[i].next)
        if (syms[i].len == len && same(text + syms[i].at, text + at, len))
            return i;
    if (!create || nsyms >= SYMS_MAX)
        return -1;
    syms[nsyms].at = at;
    syms[nsyms].len = len;
    syms[nsyms].count = 0;
    syms[nsyms].next = bucket[b];
    bucket[b] = nsyms;
    return nsyms++;
}

static u32 symtab(int *failed)
{
    int idents = 0, total = 0, bad = 0;
    u32 fold = 0;
    nsyms = 0;
    for (int b = 0; b < BUCKETS; b++)
        bucket[b] = -1;
    for (int i = 0; i < text_len;) {
        if (!is_ident(text[i])) {
            i++;
            continue;
        }
        int at = i;
        while (i < text_len && is_ident(text[i]))
            i++;
        int s = lookup(at, i - at, 1);
        if (s < 0)
            bad++;
        else
            syms[s].count++;
        idents++;
    }
    /* Every symbol is found again, and the counts add up to the identifiers entered. */
    for (int s = 0; s < nsyms; s++) {
        if (lookup(syms[s].at, syms[s].len, 0) != s)
            bad++;
        total += syms[s].count;
        fold = (fold << 3 | fold >> 29) ^ (u32)syms[s].count ^ ((u32)syms[s].len << 8);
    }
    *failed = bad != 0 || idents != gen_idents || total != idents;
    return fold ^ (u32)nsyms;
}

/* ------------------------------------------------------------------------------------------ */
/* sort: the lines, by a comparison procedure, as sort(1) and qsort(3) do */

static int line_at[LINES_MAX], line_len[LINES_MAX], nlines;
static int order[LINES_MAX];

static void find_lines(void)
{
    nlines = 0;
    for (int i = 0, start = 0; i < text_len; i++) {
        if (text[i] == '\n') {
            line_at[nlines] = start;
            line_len[nlines] = i - start;
            nlines++;
            start = i + 1;
        }
    }
}

/* Byte order, then length; ties by position, so that the order is total and unique. */
static int cmp_lines(int a, int b)
{
    const char *x = text + line_at[a], *y = text + line_at[b];
    int n = line_len[a] < line_len[b] ? line_len[a] : line_len[b];
    for (int i = 0; i < n; i++)
        if (x[i] != y[i])
            return (unsigned char)x[i] < (unsigned char)y[i] ? -1 : 1;
    if (line_len[a] != line_len[b])
        return line_len[a] < line_len[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static void quicksort(int *v, int n, int (*cmp)(int, int))
{
    while (n > 1) {
        if (n < 8) {
            for (int i = 1; i < n; i++)
                for (int j = i; j > 0 && cmp(v[j - 1], v[j]) > 0; j--) {
                    int t = v[j];
                    v[j] = v[j - 1];
                    v[j - 1] = t;
                }
            return;
        }
        int pivot = v[n >> 1], i = 0, j = n - 1;
        while (i <= j) {
            while (cmp(v[i], pivot) < 0)
                i++;
            while (cmp(v[j], pivot) > 0)
                j--;
            if (i <= j) {
                int t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        }
        /* Recurse into the smaller part, loop on the larger. */
        if (j + 1 < n - i) {
            quicksort(v, j + 1, cmp);
            v += i;
            n -= i;
        } else {
            quicksort(v + i, n - i, cmp);
            n = j + 1;
        }
    }
}

static u32 sort(int *failed)
{
    int bad = 0;
    u32 fold = 0, seen = 0;
    for (int i = 0; i < nlines; i++)
        order[i] = i;
    quicksort(order, nlines, cmp_lines);
    for (int i = 0; i < nlines; i++) {
        if (i > 0 && cmp_lines(order[i - 1], order[i]) >= 0)
            bad++;
        seen += (u32)order[i];
        fold = (fold << 5 | fold >> 27) ^ (u32)order[i];
    }
    /* Still a permutation of 0..nlines-1: the sum is n(n-1)/2 (one multiply, outside loops). */
    *failed = bad != 0 || nlines != gen_lines || seen != (u32)nlines * (u32)(nlines - 1) / 2u;
    return fold;
}

/* ------------------------------------------------------------------------------------------ */
/* interp: a stack machine running sum(1)'s checksum over the text */

enum op { PUSH, LOAD, STORE, ADD, AND, SHR, SHL, LT, JZ, JMP, BYTE, HALT };

struct insn {
    unsigned char op;
    int arg;
};

/* Variables: 0 = s (the sum), 1 = i (the index), 2 = n (the length). */
static const struct insn sum_program[] = {
    /* 0 */ {PUSH, 0}, {STORE, 0}, {PUSH, 0}, {STORE, 1},
    /* 4: while (i < n) */ {LOAD, 1}, {LOAD, 2}, {LT, 0}, {JZ, 28},
    /* 8: s = (s >> 1) + ((s & 1) << 15) */ {LOAD, 0}, {PUSH, 1}, {SHR, 0}, {LOAD, 0},
    {PUSH, 1}, {AND, 0}, {PUSH, 15}, {SHL, 0}, {ADD, 0},
    /* 17: s = (s + text[i]) & 0xffff */ {LOAD, 1}, {BYTE, 0}, {ADD, 0}, {PUSH, 0xffff},
    {AND, 0}, {STORE, 0},
    /* 23: i = i + 1 */ {LOAD, 1}, {PUSH, 1}, {ADD, 0}, {STORE, 1}, {JMP, 4},
    /* 28: return s */ {LOAD, 0}, {HALT, 0},
};

static int fetch_byte(int i)
{
    return i >= 0 && i < text_len ? (unsigned char)text[i] : 0;
}

/* Runs prog with variable 2 = n; returns the top of the stack at HALT (-1 on a fault). */
static int run(const struct insn *prog, int n)
{
    int stack[STACK_MAX], sp = 0, var[3] = {0, 0, n}, pc = 0;
    for (;;) {
        const struct insn *in = &prog[pc++];
        int a, b;
        if (sp >= STACK_MAX - 1)
            return -1;
        switch (in->op) {
        case PUSH:
            stack[sp++] = in->arg;
            break;
        case LOAD:
            stack[sp++] = var[in->arg];
            break;
        case STORE:
            var[in->arg] = stack[--sp];
            break;
        case BYTE:
            stack[sp - 1] = fetch_byte(stack[sp - 1]);
            break;
        case JZ:
            if (stack[--sp] == 0)
                pc = in->arg;
            break;
        case JMP:
            pc = in->arg;
            break;
        case HALT:
            return sp > 0 ? stack[sp - 1] : -1;
        default:
            if (sp < 2)
                return -1;
            b = stack[--sp];
            a = stack[sp - 1];
            switch (in->op) {
            case ADD:
                a = a + b;
                break;
            case AND:
                a = a & b;
                break;
            case SHR:
                a = (int)((unsigned)a >> b);
                break;
            case SHL:
                a = (int)((unsigned)a << b);
                break;
            case LT:
                a = a < b;
                break;
            default:
                return -1;
            }
            stack[sp - 1] = a;
        }
    }
}

/* The same checksum in C: BSD sum(1), a 16-bit rotate-and-add. */
static u32 bsd_sum(void)
{
    u32 s = 0;
    for (int i = 0; i < text_len; i++) {
        s = (s >> 1) + ((s & 1u) << 15);
        s = (s + (unsigned char)text[i]) & 0xffffu;
    }
    return s;
}

static u32 interp(int *failed)
{
    int s = run(sum_program, text_len);
    *failed = s < 0 || (u32)s != bsd_sum();
    return (u32)s;
}

/* ------------------------------------------------------------------------------------------ */
/* crc: CRC-32 (IEEE 802.3, reflected), one table lookup a byte */

static u32 crc_table[256];

static void make_crc_table(void)
{
    for (u32 n = 0; n < 256; n++) {
        u32 c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1u ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static u32 crc_update(u32 c, const char *p, int len)
{
    for (int i = 0; i < len; i++)
        c = crc_table[(c ^ (unsigned char)p[i]) & 0xffu] ^ (c >> 8);
    return c;
}

static u32 crc(int *failed)
{
    u32 c = ~crc_update(0xffffffffu, text, text_len);
    /* The CRC appended (least significant byte first) leaves the fixed residue. */
    char tail[4] = {(char)c, (char)(c >> 8), (char)(c >> 16), (char)(c >> 24)};
    u32 check = crc_update(~c, tail, 4);
    *failed = check != 0xdebb20e3u;
    return c;
}

/* ------------------------------------------------------------------------------------------ */
/* The interface the driver uses. */

typedef u32 (*kernel_fn)(int *failed);

static const kernel_fn kernels[KERNELS] = {wc, symtab, sort, interp, crc};
static const char *const kernel_names[KERNELS] = {"wc", "symtab", "sort", "interp", "crc"};

/* What one pass of each kernel gives for this text: the known answer. */
static const u32 expected[KERNELS] = {0xfeaa091bu, 0x661b9e91u, 0x78d507bcu, 0x0000e16au,
                                       0x1bc6a587u};

/* Makes the text and the tables; once, before any pass. */
void cspeed_init(void)
{
    make_text();
    find_lines();
    make_crc_table();
}

/* The kernel named name, or -1. */
int cspeed_kernel(const char *name)
{
    for (int k = 0; k < KERNELS; k++) {
        int i = 0;
        while (name[i] && name[i] == kernel_names[k][i])
            i++;
        if (name[i] == 0 && kernel_names[k][i] == 0)
            return k;
    }
    return -1;
}

/* One pass of kernel k; 0 when its self-check held, 1 when not. Its result goes to *result. */
int cspeed_pass(int k, u32 *result)
{
    int failed = 1;
    *result = k >= 0 && k < KERNELS ? kernels[k](&failed) : 0;
    return failed;
}

/* The number of kernels whose first pass fails its self-check or gives another result than
 * the known answer (0: the program computes what this source means). */
int cspeed_check(void)
{
    int wrong = 0;
    for (int k = 0; k < KERNELS; k++) {
        u32 r;
        if (cspeed_pass(k, &r) || r != expected[k])
            wrong++;
    }
    return wrong;
}
