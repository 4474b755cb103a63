/* cg_noise: operating-system noise by a fixed work quantum (FWQ).
 *
 * A quantum is a fixed number of iterations of a dependent integer loop
 * (calibrated once on rank 0 to --quantum-us, default 50 us, then the same
 * count on every rank). Every active rank repeats quanta for --seconds
 * (default 2) of wall time and records the time of each. Without noise all
 * quanta take the minimum; the OS (interrupts, daemons, other jobs) makes
 * some longer. Per rank:
 *   slowdown = mean / min - 1      (fraction of the machine lost to noise)
 *   p50, p90, p99, p99.9 (nearest rank: the ceil(p/100 n)-th smallest)
 *   worst quantum = max
 * Phases in one job: 1 active rank per node, then all k ranks (ratio =
 * mean quantum time with k active / with 1 active: 1.0 unless the cores
 * share something, e.g. SMT siblings or a power budget), then
 * (--no-bsp to skip) the bulk-synchronous variant: every rank does one
 * quantum then MPI_Barrier, repeatedly; the step time is set by the
 * slowest rank of each step, so noise anywhere slows everyone:
 *   bsp_slowdown = mean step / (min quantum + min barrier) - 1.
 *
 * Output: CG pattern=noise ... (worst rank by slowdown: t_us = mean quantum,
 * med_us = p50, min_us, max_us = worst quantum, src = its node) extra
 * active_ppn= slowdown= p50_us= p90_us= p99_us= p99_9_us= worst_us=
 * worst_rank= mean_slowdown= [ratio=]; CG pattern=noise_bsp ... bsp_slowdown=
 *
 * usage: cg_noise [--seconds S] [--quantum-us U] [--no-bsp]
 */
#ifndef CG_PURE_ONLY
#include "cg_harness.h"
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pure part (no MPI): unit-tested through cg_node_cli --------------- */

typedef struct {
    size_t n;
    double min, mean, max;
    double slowdown;                 /* mean / min - 1 */
    double p50, p90, p99, p999;
} noise_summary;

static int noise_cmp(const void *a, const void *b)
{
    double left = *(const double *)a, right = *(const double *)b;
    return (left > right) - (left < right);
}

/* Nearest-rank percentile of sorted[0..n-1], p in (0, 100] */
static double noise_percentile(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    double r = ceil(p / 100.0 * (double)n - 1e-9);
    size_t k = r < 1 ? 1 : (size_t)r;
    if (k > n)
        k = n;
    return sorted[k - 1];
}

/* Summary of n quantum times; returns -1 if n == 0 or min <= 0 */
static int noise_summarize(const double *q, size_t n, noise_summary *o)
{
    memset(o, 0, sizeof *o);
    if (n == 0)
        return -1;
    double *s = malloc(sizeof(double) * n);
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        s[i] = q[i];
        sum += q[i];
    }
    qsort(s, n, sizeof(double), noise_cmp);
    o->n = n;
    o->min = s[0];
    o->max = s[n - 1];
    o->mean = sum / (double)n;
    o->p50 = noise_percentile(s, n, 50);
    o->p90 = noise_percentile(s, n, 90);
    o->p99 = noise_percentile(s, n, 99);
    o->p999 = noise_percentile(s, n, 99.9);
    free(s);
    if (o->min <= 0)
        return -1;
    o->slowdown = o->mean / o->min - 1.0;
    return 0;
}

#ifndef CG_PURE_ONLY

#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile uint64_t sink;

/* The fixed work: a dependent multiply-add chain (no memory traffic) */
static uint64_t work(uint64_t iters, uint64_t chain)
{
    for (uint64_t i = 0; i < iters; ++i)
        chain = chain * 6364136223846793005ULL + 1442695040888963407ULL;
    return chain;
}

static double quantum_time(uint64_t iters)
{
    double t0 = now();
    sink = work(iters, sink);
    return now() - t0;
}

/* Iterations for a quantum of target seconds (min of repeated tries) */
static uint64_t calibrate(double target)
{
    uint64_t iters = 1000;
    for (int round = 0; round < 6; ++round) {
        double best = 1e9;
        for (int i = 0; i < 50; ++i) {
            double t = quantum_time(iters);
            if (t < best)
                best = t;
        }
        uint64_t next = (uint64_t)(iters * target / (best > 0 ? best : 1e-9));
        if (next < 1)
            next = 1;
        iters = next;
    }
    return iters;
}

/* Runs quanta for `seconds` when active; returns the count in q (seconds) */
static size_t fwq(int active, uint64_t iters, double seconds, double *q,
                  size_t cap)
{
    size_t n = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (active) {
        double start = now(), t = start;
        while (t - start < seconds && n < cap) {
            double t0 = t;
            sink = work(iters, sink);
            t = now();
            q[n++] = t - t0;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return n;
}

#define NS 9   /* doubles per rank summary: active n min mean max sl p.. */

/* Gathers the per-rank summaries, reports the worst rank; returns the mean
 * over active ranks of their mean quantum (rank 0) */
static double report_phase(const char *pattern, int active, const double *q,
                           size_t n, const char *extra_more)
{
    noise_summary s;
    double mine[NS] = {0};
    if (active && noise_summarize(q, n, &s) == 0) {
        double v[NS] = {1, (double)s.n, s.min, s.mean, s.max, s.slowdown,
                        s.p50, s.p90, s.p99};
        memcpy(mine, v, sizeof v);
    }
    double p999 = active && n ? s.p999 : 0.0;
    double *all = cg.rank == 0 ? malloc(sizeof(double) * NS * cg.size) : 0;
    double *all999 = cg.rank == 0 ? malloc(sizeof(double) * cg.size) : 0;
    MPI_Gather(mine, NS, MPI_DOUBLE, all, NS, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(&p999, 1, MPI_DOUBLE, all999, 1, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    double mean_of_means = 0.0;
    if (cg.rank == 0) {
        int worst = -1, nact = 0;
        double sum_sl = 0.0;
        for (int r = 0; r < cg.size; ++r) {
            double *v = all + (size_t)r * NS;
            if (v[0] == 0)
                continue;
            ++nact;
            sum_sl += v[5];
            mean_of_means += v[3];
            if (worst < 0 || v[5] > all[(size_t)worst * NS + 5])
                worst = r;
        }
        if (worst < 0)
            cg_die("no rank measured any quantum in phase %s", pattern);
        mean_of_means /= nact;
        double *w = all + (size_t)worst * NS;
        cg_stats st = {(int)w[1], (int)w[1], w[3], w[6], w[2], w[4], 0.0};
        cg_measurement m = cg_measurement_of(pattern, 0);
        m.src = worst;
        char extra[512];
        snprintf(extra, sizeof extra, "slowdown=%.6f p50_us=%.4f "
                 "p90_us=%.4f p99_us=%.4f p99_9_us=%.4f worst_us=%.4f "
                 "worst_rank=%d mean_slowdown=%.6f active_ranks=%d%s%s",
                 w[5], w[6] * 1e6, w[7] * 1e6, w[8] * 1e6,
                 all999[worst] * 1e6, w[4] * 1e6, worst, sum_sl / nact, nact,
                 extra_more ? " " : "", extra_more ? extra_more : "");
        m.extra = extra;
        cg_report(&m, &st);
        free(all);
        free(all999);
    }
    ++cg.measurements;
    return mean_of_means;
}

static void bsp(uint64_t iters, double seconds, double qmin_local)
{
    /* barrier alone: its minimum cost */
    double bmin = 1e9;
    for (int i = 0; i < 2000; ++i) {
        double t0 = now();
        MPI_Barrier(MPI_COMM_WORLD);
        double t = now() - t0;
        if (t < bmin)
            bmin = t;
    }
    double qmin = qmin_local;
    MPI_Allreduce(MPI_IN_PLACE, &qmin, 1, MPI_DOUBLE, MPI_MIN,
                  MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &bmin, 1, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);

    /* rank 0 decides when to stop: the step count must agree */
    size_t cap = (size_t)(seconds / (qmin + bmin)) + 256, n = 0;
    double *step = malloc(sizeof(double) * cap);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = now(), t = start;
    int go = 1;
    while (go) {
        double t0 = t;
        sink = work(iters, sink);
        MPI_Barrier(MPI_COMM_WORLD);
        t = now();
        step[n++] = t - t0;
        if ((n & 63) == 0) {     /* all ranks are at the same step n */
            go = n + 64 <= cap && t - start < seconds;
            MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
    }

    noise_summary s;
    if (cg.rank == 0 && noise_summarize(step, n, &s) == 0) {
        double ideal = qmin + bmin;
        cg_stats st = {(int)s.n, (int)s.n, s.mean, s.p50, s.min, s.max, 0.0};
        cg_measurement m = cg_measurement_of("noise_bsp", 0);
        char extra[320];
        snprintf(extra, sizeof extra, "bsp_slowdown=%.6f ideal_us=%.4f "
                 "quantum_min_us=%.4f barrier_min_us=%.4f p99_us=%.4f "
                 "p99_9_us=%.4f worst_us=%.4f steps=%zu active_ppn=%d",
                 s.mean / ideal - 1.0, ideal * 1e6, qmin * 1e6, bmin * 1e6,
                 s.p99 * 1e6, s.p999 * 1e6, s.max * 1e6, n, cg.ppn);
        m.extra = extra;
        cg_report(&m, &st);
    }
    ++cg.measurements;
    free(step);
}

int main(int argc, char **argv)
{
    cg_init(&argc, &argv, "cg_noise");
    double seconds = 2.0, quantum_us = 50.0;
    int do_bsp = 1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--quantum-us") && i + 1 < argc)
            quantum_us = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-bsp"))
            do_bsp = 0;
        else
            cg_die("unknown argument '%s' (see the header of cg_noise.c)",
                   argv[i]);
    }
    if (seconds <= 0 || quantum_us <= 0)
        cg_die("--seconds and --quantum-us must be positive");

    uint64_t iters = 0;
    if (cg.rank == 0)
        iters = calibrate(quantum_us * 1e-6);
    MPI_Bcast(&iters, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

    size_t cap = (size_t)(seconds / (quantum_us * 1e-6) * 4) + 1024;
    double *q = malloc(sizeof(double) * cap);
    if (!q)
        cg_die("cannot allocate %zu samples", cap);
    int lr = cg.local_rank;
    if (cg.rank == 0) {
        printf("CG_INFO program=cg_noise iterations=%llu quantum_us=%.1f "
               "seconds=%.2f ranks=%d ppn=%d\n", (unsigned long long)iters,
               quantum_us, seconds, cg.size, cg.ppn);
        fflush(stdout);
    }

    char more[96];
    size_t n = fwq(lr == 0, iters, seconds, q, cap);
    snprintf(more, sizeof more, "active_ppn=1 quantum_iters=%llu",
             (unsigned long long)iters);
    double mean1 = report_phase("noise", lr == 0, q, n, more);

    n = fwq(1, iters, seconds, q, cap);
    double qmin = 1e9;
    for (size_t i = 0; i < n; ++i)
        if (q[i] < qmin)
            qmin = q[i];
    /* ratio needs mean1 (rank 0 only): computed inside via a second pass */
    double meank_guess = 0.0;
    {
        noise_summary s;
        double mine = noise_summarize(q, n, &s) == 0 ? s.mean : 0.0;
        MPI_Reduce(&mine, &meank_guess, 1, MPI_DOUBLE, MPI_SUM, 0,
                   MPI_COMM_WORLD);
        meank_guess /= cg.size;
    }
    snprintf(more, sizeof more, "active_ppn=%d quantum_iters=%llu "
             "ratio=%.4f", cg.ppn, (unsigned long long)iters,
             cg.rank == 0 && mean1 > 0 ? meank_guess / mean1 : 0.0);
    report_phase("noise", 1, q, n, more);

    if (do_bsp)
        bsp(iters, seconds, qmin);

    free(q);
    return cg_finish();
}

#endif /* CG_PURE_ONLY */
