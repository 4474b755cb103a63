/* cg_memory: memory access under contention. Every rank of a node runs the
 * same kernel at once; each kernel/stride is measured twice in the same
 * job: with 1 active rank per node (the others wait in the barrier) and
 * with all k ranks of the node active. The second line carries
 * ratio = time(k active) / time(1 active): 1.0 = the memory system serves
 * the k-th process for free, k = it gives it nothing.
 *
 * Kernels (a, b, c: arrays of n doubles per rank, q = 3.0):
 *   read        s += a[j]              write   a[j] = v
 *   rand_read   s += a[idx[i]]         rand_write  a[idx[i]] = v
 *   copy  c[j] = a[j]      scale b[j] = q*c[j]
 *   add   c[j] = a[j]+b[j] triad a[j] = b[j]+q*c[j]       (STREAM order)
 * Strided kernels visit j in the order of CG_STRIDED(n, s): s passes
 * (offset 0..s-1), each with stride s over the same array, so that every
 * element is touched exactly once at every stride: the same number of
 * elements (n) and the same array at stride 1..17; per access the number of
 * cache lines fetched grows like min(s, 8)/8 as in the classic "stride"
 * experiment where the array grows with the stride. idx is a random
 * permutation of 0..n-1 (Fisher-Yates, xorshift64* seeded by --seed and the
 * rank): every element exactly once, in random order; the accesses are
 * independent (throughput of random access; latency is cg_memlat's job).
 *
 * Reported: t_us = time of one sweep over the n elements (mean of the kept
 * trials, max over ranks), bw_MBps = bytes of the elements touched per
 * second (STREAM counting: 8 B per element read or written), and extra
 * fields kernel= stride= active_ppn= ns_per_elem= [ratio= t1_us=].
 *
 * usage: cg_memory [--kernels read,write,...|all] [--strides 1-17|1,2,8]
 *        [--array-bytes SIZE (default 2x last-level cache from sysfs,
 *        at least 64 MiB; the cache flush is also 2x that cache)]
 *        [--seed N] [harness options; --trials default 5 here]
 */
#ifndef CG_PURE_ONLY
#include "cg_harness.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_random.h"

/* ---- pure part (no MPI): unit-tested through cg_node_cli --------------- */

/* The visiting order of every strided kernel: s passes of stride s. */
#define CG_STRIDED(n, s, j, body)                                   \
    for (size_t off_ = 0; off_ < (s); ++off_)                       \
        for (size_t j = off_; j < (n); j += (s)) {                  \
            body;                                                   \
        }

/* Random permutation of 0..n-1 (Fisher-Yates). */
static void mem_permutation(uint32_t *p, size_t n, uint64_t seed)
{
    uint64_t st = cg_rng_seed(seed, 0x1234567ULL);
    for (size_t i = 0; i < n; ++i)
        p[i] = (uint32_t)i;
    for (size_t i = n; i > 1; --i) {
        size_t j = cg_rng_next(&st) % i;    /* 0 <= j <= i-1 */
        uint32_t t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
}

/* Stride bookkeeping: counts[j] += 1 for every element the strided kernels
 * visit at stride s; returns the number of visits. */
__attribute__((unused))
static size_t mem_stride_visits(size_t n, size_t s, unsigned *counts)
{
    size_t visits = 0;
    CG_STRIDED(n, s, j, { counts[j] += 1; ++visits; });
    return visits;
}

#ifndef CG_PURE_ONLY

/* ---- kernels ------------------------------------------------------------ */

enum { K_READ, K_WRITE, K_RREAD, K_RWRITE, K_COPY, K_SCALE, K_ADD, K_TRIAD,
       K_N };
static const char *KNAME[K_N] = {"read", "write", "rand_read", "rand_write",
                                 "copy", "scale", "add", "triad"};
static const int KARRAYS[K_N] = {1, 1, 1, 1, 2, 2, 3, 3};
static const double Q = 3.0;

typedef struct {
    int kernel;
    size_t n, s;
    double *a, *b, *c;
    uint32_t *idx;
    double v;               /* value written in this trial */
    double sum;
} kernel_state;

static volatile double sink;

static void run_kernel(void *vp)
{
    kernel_state *state = vp;
    size_t n = state->n, s = state->s;
    double *restrict a = state->a, *restrict b = state->b,
        *restrict c = state->c;
    const uint32_t *restrict idx = state->idx;
    double sum = 0.0, v = state->v;
    switch (state->kernel) {
    case K_READ:   CG_STRIDED(n, s, j, sum += a[j]); break;
    case K_WRITE:  CG_STRIDED(n, s, j, a[j] = v); break;
    case K_RREAD:  for (size_t i = 0; i < n; ++i) sum += a[idx[i]]; break;
    case K_RWRITE: for (size_t i = 0; i < n; ++i) a[idx[i]] = v; break;
    case K_COPY:   CG_STRIDED(n, s, j, c[j] = a[j]); break;
    case K_SCALE:  CG_STRIDED(n, s, j, b[j] = Q * c[j]); break;
    case K_ADD:    CG_STRIDED(n, s, j, c[j] = a[j] + b[j]); break;
    case K_TRIAD:  CG_STRIDED(n, s, j, a[j] = b[j] + Q * c[j]); break;
    }
    state->sum = sum;
    sink = sum;
}

static void prep(void *vp, int t)
{
    kernel_state *state = vp;
    state->v = 1.0 + t;
}

/* Expected values: a=1, b=2, c=0 before the STREAM kernels (set once per
 * kernel; every kernel is idempotent); reads sum n ones. */
static void verify(void *vp, int t)
{
    kernel_state *state = vp;
    size_t n = state->n, step = n / 61 + 1;
    double want = 0.0, *arr = NULL;
    switch (state->kernel) {
    case K_READ: case K_RREAD:
        if (state->sum != (double)n) {
            printf("CG_ERROR kind=verify kernel=%s rank=%d stride=%zu "
                   "expected_sum=%zu got=%.17g trial=%d\n",
                       KNAME[state->kernel],
                   cg.rank, state->s, n, state->sum, t);
            ++cg.errors;
        }
        return;
    case K_WRITE: case K_RWRITE: arr = state->a; want = state->v; break;
    case K_COPY: arr = state->c; want = 1.0; break;
    case K_SCALE: arr = state->b; want = 0.0; break;
    case K_ADD: arr = state->c; want = 1.0 + 0.0; break;   /* a + (b=0) */
    case K_TRIAD: arr = state->a; want = 0.0 + Q * 1.0; break;
    }
    for (size_t i = 0; i < n; i += step) {
        if (arr[i] != want) {
            printf("CG_ERROR kind=verify kernel=%s rank=%d stride=%zu "
                   "element=%zu expected=%g got=%g trial=%d\n",
                   KNAME[state->kernel], cg.rank, state->s, i, want, arr[i],
                       t);
            ++cg.errors;
            return;
        }
    }
}

/* Array contents before the kernel's first trial. The STREAM sequence
 * copy, scale, add, triad starting from a=1, b=2, c=0 gives c=1, b=3, c=4,
 * a=15 in the real benchmark; here each kernel runs alone many times, so
 * each starts from a state where it is idempotent. */
static void init_arrays(kernel_state *state)
{
    size_t n = state->n;
    for (size_t i = 0; i < n; ++i) {
        state->a[i] = 1.0;
        if (state->b) state->b[i] = 0.0;
        if (state->c) state->c[i] = 1.0;
    }
    if (state->kernel == K_COPY)     /* c = a: c starts at 0 */
        for (size_t i = 0; i < n; ++i) state->c[i] = 0.0;
    if (state->kernel == K_SCALE)    /* b = q*c with c = 0 */
        for (size_t i = 0; i < n; ++i) {
            state->c[i] = 0.0;
            state->b[i] = 5.0;
        }
    if (state->kernel == K_ADD)      /* c = a + b = 1 + 0 */
        for (size_t i = 0; i < n; ++i) state->c[i] = 7.0;
    if (state->kernel == K_TRIAD)    /* a = b + q*c = 0 + 3*1 */
        for (size_t i = 0; i < n; ++i) state->a[i] = 9.0;
}

/* ---- measurement: 1 active rank per node, then all --------------------- */

static void measure_kernel(kernel_state *state, int lr)
{
    const char *name = KNAME[state->kernel];
    double bytes_per = 8.0 * KARRAYS[state->kernel];
    cg_measurement m = cg_measurement_of(name, state->n * sizeof(double));
    m.bw_bytes = bytes_per * state->n;
    m.prepare = prep;
    m.run = run_kernel;
    m.verify = verify;
    m.ctx = state;

    m.active = lr == 0;
    cg_stats one = cg_measure_quiet(&m);
    m.active = 1;
    cg_stats all = cg_measure_quiet(&m);
    if (cg.rank == 0) {
        char extra[256], sstr[24];
        if (state->kernel == K_RREAD || state->kernel == K_RWRITE)
            strcpy(sstr, "-");          /* random order: no stride */
        else
            snprintf(sstr, sizeof sstr, "%zu", state->s);
        snprintf(extra, sizeof extra, "kernel=%s stride=%s active_ppn=1 "
                 "ns_per_elem=%.4f", name, sstr, one.mean * 1e9 / state->n);
        m.extra = extra;
        cg_report(&m, &one);
        snprintf(extra, sizeof extra, "kernel=%s stride=%s active_ppn=%d "
                 "ns_per_elem=%.4f ratio=%.4f t1_us=%.4f", name, sstr,
                 cg.ppn, all.mean * 1e9 / state->n, all.mean / one.mean,
                 one.mean * 1e6);
        cg_report(&m, &all);
    }
    cg.measurements += 2;
}

/* "1-17" or "1,2,8" -> list */
static int parse_strides(const char *spec, size_t *out, int max)
{
    int n = 0;
    char *copy = strdup(spec), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        long lo, hi;
        if (sscanf(tok, "%ld-%ld", &lo, &hi) != 2) {
            if (sscanf(tok, "%ld", &lo) != 1)
                cg_die("bad stride '%s'", tok);
            hi = lo;
        }
        if (lo < 1 || hi < lo)
            cg_die("bad stride range '%s' (strides are >= 1)", tok);
        for (long s = lo; s <= hi && n < max; ++s)
            out[n++] = (size_t)s;
    }
    free(copy);
    return n;
}

/* "read,copy" or "all" -> want[k]; *any_rand: a random-order kernel
 * (needs the index array); returns how many arrays the kernels use */
static int select_kernels(const char *list, int want[K_N], int *any_rand)
{
    int narr = 1;
    char *copy = strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < K_N; ++k) {
            if (!strcmp(tok, "all") || !strcmp(tok, KNAME[k])) {
                want[k] = found = 1;
                if (k == K_RREAD || k == K_RWRITE)
                    *any_rand = 1;
                if (KARRAYS[k] > narr || k >= K_COPY)
                    narr = 3;
            }
        }
        if (!found)
            cg_die("unknown kernel '%s'", tok);
    }
    free(copy);
    return narr;
}

/* narr arrays of array_bytes (1 or 3), and with any_rand the random
 * permutation of the indices (seeded per rank) */
static void allocate_arrays(kernel_state *state, size_t array_bytes,
                            int narr, int any_rand, uint64_t seed)
{
    memset(state, 0, sizeof *state);
    state->n = array_bytes / sizeof(double);
    if (state->n > UINT32_MAX)
        cg_die("--array-bytes too large (at most 2^32 elements)");
    state->a = malloc(state->n * sizeof(double));
    if (narr == 3) {
        state->b = malloc(state->n * sizeof(double));
        state->c = malloc(state->n * sizeof(double));
    }
    if (any_rand)
        state->idx = malloc(state->n * sizeof(uint32_t));
    if (!state->a || (narr == 3 && (!state->b || !state->c)) ||
        (any_rand && !state->idx))
        cg_die("cannot allocate %d array(s) of %zu bytes", narr,
               array_bytes);
    if (any_rand)
        mem_permutation(state->idx, state->n, seed);
}

int main(int argc, char **argv)
{
    cg_init_trials(&argc, &argv, "cg_memory", 5);

    const char *kernels = "all", *strides = "1-17";
    size_t array_bytes = 0;
    uint64_t seed = 42;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            kernels = argv[++i];
        else if (!strcmp(argv[i], "--strides") && i + 1 < argc)
            strides = argv[++i];
        else if (!strcmp(argv[i], "--array-bytes") && i + 1 < argc)
            array_bytes = cg_parse_size(argv[++i], "--array-bytes", 1,
                                        SIZE_MAX);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else
            cg_die("unknown argument '%s' (see the header of cg_memory.c)",
                   argv[i]);
    }

    size_t llc = cg_llc_bytes();
    if (!cg.opt.flush_bytes)
        cg.opt.flush_bytes = 2 * llc;
    if (!array_bytes) {
        array_bytes = 2 * llc;
        if (array_bytes < ((size_t)64 << 20))
            array_bytes = (size_t)64 << 20;
    }

    size_t st[64];
    int nst = parse_strides(strides, st, 64);
    int want[K_N] = {0}, any_rand = 0;
    int narr = select_kernels(kernels, want, &any_rand);

    kernel_state state;
    allocate_arrays(&state, array_bytes, narr, any_rand,
                    seed + (uint64_t)cg.rank);

    int lr = cg.local_rank;
    if (cg.rank == 0) {
        printf("CG_INFO program=cg_memory array_bytes=%zu elements=%zu "
               "llc_bytes=%zu flush_bytes=%zu ranks=%d ppn=%d nodes=%d "
               "trials=%d\n", array_bytes, state.n, llc, cg.opt.flush_bytes,
               cg.size, cg.ppn, cg.nodes, cg.opt.ntrials);
        fflush(stdout);
    }

    for (int k = 0; k < K_N; ++k) {
        if (!want[k])
            continue;
        state.kernel = k;
        init_arrays(&state);
        if (k == K_RREAD || k == K_RWRITE) {
            state.s = 1;
            measure_kernel(&state, lr);
            continue;
        }
        for (int i = 0; i < nst; ++i) {
            state.s = st[i];
            measure_kernel(&state, lr);
        }
    }

    return cg_finish();
}

#endif /* CG_PURE_ONLY */
