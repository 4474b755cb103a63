/* cg_memlat: memory latency by pointer chasing.
 *
 * The working set is split into 64-byte cache lines; line i holds the
 * address of line next[i], where next is a random cyclic permutation with
 * ONE cycle through all lines (Sattolo's algorithm), so the chase visits
 * every line once per lap in an order no prefetcher can guess, one access
 * per cache line. Each access depends on the previous one: time / accesses
 * = load-to-use latency. Working sets 4 KiB .. --max-bytes (default
 * auto: 6x the last-level cache, at least 256 MiB, so that DRAM, which
 * starts at 4x the LLC, is on the curve behind any LLC; at most half the
 * node's available memory shared by its ranks) in steps of x1.5 / x1.33
 * (2^k and 3*2^(k-1)). Buffers of 2 MiB
 * and more are madvise()d for transparent huge pages (--no-thp: 4 KiB
 * pages, the latency then includes the page walks).
 *
 * Output (harness format, t_us = microseconds per access):
 *   CG pattern=memlat bytes=<working set> ... ns=<ns per access>
 *      active_ppn=1                         (the curve: 1 rank per node)
 *   CG pattern=memlat_level bytes=<representative working set> ...
 *      level=L1|L2|L3|DRAM cache_bytes=<sysfs size> ns=<median over the
 *      sizes of that level> ns_k=<all k ranks at once> ratio=<ns_k/ns_1>
 *   CG pattern=memlat_numa_local/_remote (libnuma, >1 NUMA node) or
 *   CG_SKIP pattern=memlat_numa_remote reason=...
 * Levels come from sysfs (cpu0/cache/index*): the sizes of level i are those
 * from 2x the previous level's size to half this level's size; DRAM is from
 * 4x the last-level cache up. distinct=1 when each level is >= 1.2x slower
 * than the one before.
 *
 * --levels-only keeps only the working sets the level figures use: those
 * inside a cache level, and DRAM at its smallest size (the first from 4x
 * the last-level cache). The sizes between two levels (transitions, e.g.
 * 24-96 MiB behind a 32 MiB L3) and the larger DRAM sizes are left out:
 * they are most of the run time (a DRAM access is the slowest) and no
 * figure of the check reads them (the nightly mode; the whole curve is
 * the acceptance's).
 *
 * usage: cg_memlat [--max-bytes SIZE|auto] [--min-bytes SIZE] [--accesses N
 *        (minimum per measurement, default 2^20)] [--no-thp] [--seed N]
 *        [--levels-only] [harness options; --trials default 5 here]
 */
#ifndef CG_PURE_ONLY
#define _GNU_SOURCE 1      /* sched_getcpu */
#include "cg_harness.h"
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_random.h"

/* ---- pure part (no MPI): unit-tested through cg_node_cli --------------- */

/* Sattolo's algorithm: next[] becomes a uniformly random cyclic permutation
 * of 0..n-1 with a single cycle of length n (j is drawn from 0..i-1, never
 * i itself, which is what makes it one cycle). */
static void lat_sattolo(uint32_t *next, size_t n, uint64_t seed)
{
    uint64_t st = cg_rng_seed(seed, 0xC0FFEEULL);
    for (size_t i = 0; i < n; ++i)
        next[i] = (uint32_t)i;
    for (size_t i = n - 1; i >= 1 && n > 1; --i) {
        size_t j = cg_rng_next(&st) % i;    /* 0 <= j < i */
        uint32_t t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
}

/* Length of the cycle through 0 (n when next is one cycle). */
__attribute__((unused))
static size_t lat_cycle_length(const uint32_t *next, size_t n)
{
    size_t len = 0, i = 0;
    do {
        i = next[i];
        ++len;
    } while (i != 0 && len <= n);
    return len;
}

/* The working-set sizes: 2^k and 3*2^(k-1) from lo to hi; returns count */
static int lat_sizes(size_t lo, size_t hi, size_t *out, int max)
{
    int n = 0;
    for (size_t p = 1024; p <= hi && n < max; p *= 2) {
        if (p >= lo)
            out[n++] = p;
        if (p + p / 2 <= hi && p + p / 2 >= lo && n < max)
            out[n++] = p + p / 2;
    }
    return n;
}

/* Working sets of level l (1..nlev: cache level l, nlev+1: DRAM), from the
 * cache sizes by level (cache[1..4], 0 = none): from twice the nearest
 * cache below to half of this one; DRAM from 4x the last cache up. */
static void lat_level_range(const size_t cache[5], int nlev, int l,
                            size_t *from, size_t *to)
{
    if (l <= nlev) {
        size_t below = 0;
        for (int q = l - 1; q >= 1 && !below; --q)
            below = cache[q];
        *from = below ? 2 * below : 0;
        *to = cache[l] / 2;
    } else {
        *from = 4 * cache[nlev];
        *to = (size_t)-1;
    }
}

/* --levels-only: keeps (in place) the sizes inside a cache level and the
 * smallest DRAM size; returns the new count */
static int lat_level_sizes(const size_t cache[5], int nlev, size_t *sizes,
                           int n)
{
    int kept = 0, dram = 0;
    for (int i = 0; i < n; ++i) {
        int keep = 0;
        for (int l = 1; l <= nlev + 1 && !keep; ++l) {
            size_t from, to;
            if (l <= nlev && !cache[l])
                continue;
            lat_level_range(cache, nlev, l, &from, &to);
            if (sizes[i] >= from && sizes[i] <= to)
                keep = l <= nlev || !dram++;
        }
        if (keep)
            sizes[kept++] = sizes[i];
    }
    return kept;
}

#ifndef CG_PURE_ONLY

#include <sys/mman.h>
#include <unistd.h>
#ifdef CG_HAVE_NUMA
#include <numa.h>
#include <sched.h>
#endif

#define LINE 64

typedef struct {
    char *buf;
    size_t bytes, hops;
    void *start;
    void *end;          /* where the chase stopped (kept: no dead code) */
} chase_state;

static volatile void *sink;

/* Lays the cycle out over the lines of buf */
static void build_chain(chase_state *walk, uint64_t seed)
{
    size_t n = walk->bytes / LINE;
    uint32_t *next = malloc(sizeof(uint32_t) * n);
    if (!next)
        cg_die("cannot allocate the permutation of %zu lines", n);
    lat_sattolo(next, n, seed);
    for (size_t i = 0; i < n; ++i)
        *(void **)(walk->buf + i * LINE) = walk->buf + (size_t)next[i] * LINE;
    walk->start = walk->buf;
    free(next);
}

static void chase(void *vp)
{
    chase_state *walk = vp;
    void **p = walk->start;
    size_t h = walk->hops / 8;
    while (h--) {
        p = *p; p = *p; p = *p; p = *p;
        p = *p; p = *p; p = *p; p = *p;
    }
    walk->end = p;
    walk->start = p;
    sink = p;
}

static char *alloc_ws(size_t bytes, int thp)
{
    size_t align = bytes >= ((size_t)2 << 20) ? (size_t)2 << 20 : 4096;
    size_t len = (bytes + align - 1) / align * align;
    void *p = NULL;
    if (posix_memalign(&p, align, len))
        cg_die("cannot allocate a working set of %zu bytes", bytes);
#ifdef MADV_HUGEPAGE
    if (thp && align > 4096)
        madvise(p, len, MADV_HUGEPAGE);
#else
    (void)thp;
#endif
    return p;
}

static cg_measurement chase_measurement(chase_state *walk, const char *pattern,
                                        int active)
{
    cg_measurement m = cg_measurement_of(pattern, walk->bytes);
    m.active = active;
    m.msgs_per_op = (double)walk->hops;     /* t_us = per access */
    m.run = chase;
    m.ctx = walk;
    return m;
}

/* Data/unified cache sizes of cpu0 by level (index = level 1..4), 0 = none */
static void cache_levels(size_t size[5])
{
    memset(size, 0, 5 * sizeof size[0]);
    for (int idx = 0; idx < 10; ++idx) {
        char path[128], type[32] = "";
        int level = 0;
        long kb = 0;
        char unit = 'K';
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        if (fscanf(f, "%31s", type) != 1) type[0] = 0;
        fclose(f);
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%d", &level) != 1) level = 0;
            fclose(f);
        }
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%ld%c", &kb, &unit) < 1) kb = 0;
            fclose(f);
        }
        if (!strcmp(type, "Instruction") || level < 1 || level > 4)
            continue;
        size[level] = (size_t)kb * (unit == 'M' ? 1024 * 1024 : 1024);
    }
    if (!size[1]) {                   /* no sysfs: glibc or a guess */
        long l1 = 0, l2 = 0, l3 = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
        l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
        l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
        size[1] = l1 > 0 ? (size_t)l1 : 32 * 1024;
        size[2] = l2 > 0 ? (size_t)l2 : 0;
        size[3] = l3 > 0 ? (size_t)l3 : 0;
    }
}

/* A walk of `bytes`: one lap (every line once) up to CHASE_HOPS_MAX
 * accesses, at least min_hops, rounded up to the 8-fold unrolled loop */
#define CHASE_HOPS_MAX ((size_t)1 << 22)

static chase_state walk_of(char *buf, size_t bytes, size_t min_hops)
{
    chase_state walk = {0};
    walk.buf = buf;
    walk.bytes = bytes;
    walk.hops = bytes / LINE > min_hops ? bytes / LINE : min_hops;
    /* A full lap of a DRAM-sized set is slow (1.5 GiB: 25 M misses, 6 s a
     * trial) and no more exact than part of one: a measurement takes at
     * most 2^22 hops (a full lap up to 256 MiB) and the next one goes on
     * where it stopped (chase), so the trials still visit new lines */
    size_t most = CHASE_HOPS_MAX > min_hops ? CHASE_HOPS_MAX : min_hops;
    if (walk.hops > most)
        walk.hops = most;
    walk.hops = (walk.hops + 7) / 8 * 8;
    return walk;
}

static void run_numa(size_t bytes, size_t min_hops, uint64_t seed)
{
#ifdef CG_HAVE_NUMA
    if (numa_available() < 0 || numa_max_node() < 1) {
        if (cg.rank == 0)
            printf("CG_SKIP pattern=memlat_numa_remote reason=only one NUMA "
                   "node (%d): no remote memory to compare with\n",
                   numa_available() < 0 ? 0 : numa_max_node() + 1);
        return;
    }
    int cpu = sched_getcpu();
    int here = numa_node_of_cpu(cpu < 0 ? 0 : cpu), there = -1;
    MPI_Bcast(&here, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int nd = 0; nd <= numa_max_node() && there < 0; ++nd)
        if (nd != here && numa_bitmask_isbitset(numa_all_nodes_ptr, nd))
            there = nd;
    if (there < 0) {
        if (cg.rank == 0)
            printf("CG_SKIP pattern=memlat_numa_remote reason=no other NUMA "
                   "node with memory\n");
        return;
    }
    double ns[2] = {0, 0};
    const char *names[2] = {"memlat_numa_local", "memlat_numa_remote"};
    int nodes[2] = {here, there};
    for (int k = 0; k < 2; ++k) {
        chase_state walk = walk_of(NULL, bytes, min_hops);
        if (cg.rank == 0) {
            numa_run_on_node(here);
            walk.buf = numa_alloc_onnode(bytes, nodes[k]);
            if (!walk.buf)
                cg_die("numa_alloc_onnode(%zu, %d) failed", bytes, nodes[k]);
            build_chain(&walk, seed);
        }
        cg_measurement m = chase_measurement(&walk, names[k], cg.rank == 0);
        cg_stats st = cg_measure_quiet(&m);
        if (cg.rank == 0) {
            char extra[200];
            ns[k] = st.mean * 1e9;
            if (k == 0)
                snprintf(extra, sizeof extra, "ns=%.3f cpu_node=%d "
                         "mem_node=%d", ns[k], here, nodes[k]);
            else
                snprintf(extra, sizeof extra, "ns=%.3f cpu_node=%d "
                         "mem_node=%d penalty=%.4f", ns[k], here, nodes[k],
                         ns[1] / ns[0]);
            m.extra = extra;
            cg_report(&m, &st);
            numa_free(walk.buf, bytes);
        }
        ++cg.measurements;
    }
#else
    (void)bytes; (void)min_hops; (void)seed;
    if (cg.rank == 0)
        printf("CG_SKIP pattern=memlat_numa_remote reason=built without "
               "libnuma (make NUMA=0 or numa.h missing)\n");
#endif
}

static double median_of(double *v, int n)
{
    return n > 0 ? cg_median(v, n) : 0.0;
}

typedef struct {
    size_t lo, hi;          /* working sets of the curve (--min/max-bytes) */
    size_t min_hops;        /* accesses per measurement at least */
    int thp;                /* transparent huge pages for the buffer */
    int levels_only;        /* only the sizes the level figures use */
    uint64_t seed;
} memlat_options;

static memlat_options parse_options(int argc, char **argv)
{
    memlat_options opt = {.lo = 4096, .hi = 0 /* auto */,
                          .min_hops = 1 << 20, .thp = 1, .seed = 7};
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) {
            ++i;
            opt.hi = !strcmp(argv[i], "auto") ? 0 :
                cg_parse_size(argv[i], "--max-bytes", 1, SIZE_MAX);
        }
        else if (!strcmp(argv[i], "--min-bytes") && i + 1 < argc)
            opt.lo = cg_parse_size(argv[++i], "--min-bytes", 1, SIZE_MAX);
        else if (!strcmp(argv[i], "--accesses") && i + 1 < argc)
            opt.min_hops = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--no-thp"))
            opt.thp = 0;
        else if (!strcmp(argv[i], "--levels-only"))
            opt.levels_only = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            opt.seed = strtoull(argv[++i], NULL, 10);
        else
            cg_die("unknown argument '%s' (see the header of cg_memlat.c)",
                   argv[i]);
    }
    if (opt.lo < 2 * LINE || (opt.hi && opt.hi < opt.lo))
        cg_die("bad working-set range %zu..%zu", opt.lo, opt.hi);
    return opt;
}

/* The curve, 1 rank per node: lat[i] = ns per access at sizes[i] (rank 0) */
static void measure_curve(const memlat_options *opt, char *buf,
                          const size_t *sizes, int nsizes, double *lat)
{
    for (int i = 0; i < nsizes; ++i) {
        chase_state walk = walk_of(buf, sizes[i], opt->min_hops);
        build_chain(&walk, opt->seed + i);
        cg_measurement m = chase_measurement(&walk, "memlat",
                                             cg.local_rank == 0);
        cg_stats st = cg_measure_quiet(&m);
        if (cg.rank == 0) {
            char extra[96];
            lat[i] = st.mean * 1e9;
            snprintf(extra, sizeof extra, "ns=%.3f active_ppn=1 accesses=%zu",
                     lat[i], walk.hops);
            m.extra = extra;
            cg_report(&m, &st);
        }
        ++cg.measurements;
    }
}

/* Level l (1..nlev: cache level, nlev+1: DRAM): all ranks at once, then 1
 * rank per node, at the largest working set of the curve inside the level
 * (from twice the level below to half of this one; DRAM: 4x the last
 * cache). Returns the level's latency (median of the curve there), or 0
 * when no size of the curve falls in it. */
static double measure_level(const memlat_options *opt, char *buf,
                            const size_t cache[5], int nlev, int l,
                            const size_t *sizes, int nsizes,
                            const double *lat)
{
    static const char *lname[6] = {"", "L1", "L2", "L3", "L4", "DRAM"};
    size_t from, to;
    lat_level_range(cache, nlev, l, &from, &to);

    double in_level[128];
    int nin = 0;
    size_t rep = 0;
    for (int i = 0; i < nsizes; ++i)
        if (sizes[i] >= from && sizes[i] <= to) {
            in_level[nin++] = lat[i];
            rep = sizes[i];
        }
    int have = nin > 0;
    MPI_Bcast(&have, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&rep, sizeof rep, MPI_BYTE, 0, MPI_COMM_WORLD);
    const char *name = l <= nlev ? lname[l] : lname[5];
    if (!have) {
        if (cg.rank == 0)
            printf("CG_SKIP pattern=memlat_level level=%s reason=no "
                   "working set between %zu and %zu bytes (raise "
                   "--max-bytes)\n", name, from, to);
        return 0.0;
    }

    chase_state walk = walk_of(buf, rep, opt->min_hops);
    build_chain(&walk, opt->seed + 1000 + l);
    cg_measurement m = chase_measurement(&walk, "memlat_level", 1);
    cg_stats all_ranks = cg_measure_quiet(&m);
    m.active = cg.local_rank == 0;
    /* and 1 rank per node at the same size and chain, for the ratio;
     * ns= is the median of the curve over the level's sizes */
    cg_stats single = cg_measure_quiet(&m);
    double level_ns = 0.0;
    if (cg.rank == 0) {
        level_ns = median_of(in_level, nin);
        char extra[256];
        snprintf(extra, sizeof extra, "level=%s cache_bytes=%zu "
                 "from_bytes=%zu sizes=%d ns=%.3f ns_1=%.3f ns_k=%.3f "
                 "active_ppn=%d ratio=%.4f", name,
                 l <= nlev ? cache[l] : 0, from, nin, level_ns,
                 single.mean * 1e9, all_ranks.mean * 1e9, cg.ppn,
                 all_ranks.mean / single.mean);
        m.extra = extra;
        cg_report(&m, &single);
    }
    ++cg.measurements;
    return level_ns;
}

/* --max-bytes auto: 6x the last-level cache (DRAM starts at 4x), at least
 * 256 MiB; a VM may report its host's LLC (300 MiB was seen), so the
 * working set is capped at half the available memory over the node's
 * ranks, each of which allocates one */
static size_t auto_max_bytes(size_t llc)
{
    size_t hi = 6 * llc > ((size_t)256 << 20) ? 6 * llc : (size_t)256 << 20;
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psz > 0) {
        size_t cap = (size_t)pages * (size_t)psz / 2 /
                     (size_t)(cg.ppn > 0 ? cg.ppn : 1);
        if (hi > cap)
            hi = cap;
    }
    return hi;
}

int main(int argc, char **argv)
{
    cg_init_trials(&argc, &argv, "cg_memlat", 5);
    memlat_options opt = parse_options(argc, argv);

    size_t cache[5];
    cache_levels(cache);
    int nlev = 0;
    for (int l = 1; l <= 4; ++l)
        if (cache[l])
            nlev = l;
    if (!opt.hi)
        opt.hi = auto_max_bytes(cache[nlev]);
    if (opt.hi < opt.lo)
        cg_die("bad working-set range %zu..%zu", opt.lo, opt.hi);

    size_t sizes[128];
    int nsizes = lat_sizes(opt.lo, opt.hi, sizes, 128);
    double *lat = calloc(nsizes, sizeof(double));
    if (opt.levels_only)
        nsizes = lat_level_sizes(cache, nlev, sizes, nsizes);
    if (cg.rank == 0) {
        printf("CG_INFO program=cg_memlat sizes=%d min_bytes=%zu "
               "max_bytes=%zu L1=%zu L2=%zu L3=%zu L4=%zu thp=%d trials=%d "
               "levels_only=%d\n", nsizes, opt.lo, opt.hi, cache[1],
               cache[2], cache[3], cache[4], opt.thp, cg.opt.ntrials,
               opt.levels_only);
        fflush(stdout);
    }

    char *buf = alloc_ws(opt.hi, opt.thp);
    measure_curve(&opt, buf, sizes, nsizes, lat);

    /* levels: sizes of each level from sysfs; distinct when each level is
     * at least 1.2x slower than the one below */
    double prev = 0.0;
    int distinct = 1;
    for (int l = 1; l <= nlev + 1; ++l) {
        if (l <= nlev && !cache[l])
            continue;
        double level_ns = measure_level(&opt, buf, cache, nlev, l, sizes,
                                        nsizes, lat);
        if (cg.rank == 0 && level_ns > 0) {
            if (prev > 0 && level_ns < 1.2 * prev)
                distinct = 0;
            prev = level_ns;
        }
    }
    if (cg.rank == 0)
        printf("CG_INFO program=cg_memlat distinct=%d\n", distinct);
    free(buf);

    size_t numa_bytes = 4 * cache[nlev] > opt.hi ? opt.hi : 4 * cache[nlev];
    run_numa(numa_bytes, opt.min_hops, opt.seed);

    free(lat);
    return cg_finish();
}

#endif /* CG_PURE_ONLY */
