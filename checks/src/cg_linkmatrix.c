/* cg_linkmatrix: node-to-node bandwidth matrix in N-1 shift rounds, in the
 * spirit of LLNL's mpiGraph, timed by the shared harness (cg_harness.h).
 *
 * One rank per node. In round k (1..N-1) every rank r sends a large message
 * to rank (r+k) mod N and receives one from rank (r-k) mod N at the same
 * time, so every link carries one message per direction and the whole N x N
 * matrix takes N-1 rounds. The receiver times its own receive (from the
 * common start after the barrier to the completion of the receive): that
 * time belongs to the pair src=(r-k) -> dst=r alone, whatever the other
 * pairs of the round do. Per pair, the harness statistics (first trial
 * dropped, spike filter) over the trials give one line
 *
 *   CG pattern=linkmatrix bytes=<b> ranks=N ppn=1 nodes=N peer=<dst rank>
 *      src=<node> dst=<node> t_us=.. ... bw_MBps=<MB/s> ... round=<k>
 *      src_rank=<i> dst_rank=<j>
 *
 * With N even, round N/2 pairs the nodes mutually (both directions of a
 * pair on the same connection at once, unlike the other rounds): that round
 * is timed in two halves, one direction each (--no-split: at once); its
 * lines carry half=0 (the lower rank of each pair sends) or half=1, so that
 * an analysis of concurrent flows (clustergate.links.topology) knows which flows
 * ran together.
 *
 * --pairs S0-D0,S1-D1,...: instead of the matrix, the listed pairs (rank
 * numbers), one after the other, each ALONE (no other rank sends or
 * receives while it is timed): the retest of suspect node links
 * (clustergate.links.retest). One line per pair, round=<i> (1-based position
 * in the list) alone=1.
 *
 * usage: cg_linkmatrix [--bytes 4M] [--no-split] [--pairs S-D,...]
 *        [--any-placement (allow several ranks per node: a rank matrix,
 *        for tests)] [harness options: --trials ...]
 */
#include "cg_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t bytes;
    int to, from;             /* partners of this rank in the round */
    int do_send, do_recv;     /* half rounds: only one direction */
    unsigned char *sbuf, *rbuf;
    double recv_dt;           /* this trial: start -> receive complete */
    double *recv_times;       /* per trial */
} link_round;

static void prep(void *v, int t)
{
    link_round *this_round = v;
    cg_fill(this_round->sbuf, this_round->bytes, cg.rank, t);
    memset(this_round->rbuf, 0, this_round->bytes);
}

static void op_round(void *v)
{
    link_round *this_round = v;
    MPI_Request req[2];
    double t0 = MPI_Wtime();
    req[0] = req[1] = MPI_REQUEST_NULL;
    if (this_round->do_recv)
        MPI_Irecv(this_round->rbuf, (int)this_round->bytes, MPI_BYTE,
                  this_round->from, 7,
                  MPI_COMM_WORLD, &req[0]);
    if (this_round->do_send)
        MPI_Isend(this_round->sbuf, (int)this_round->bytes, MPI_BYTE,
                  this_round->to, 7,
                  MPI_COMM_WORLD, &req[1]);
    int pending = this_round->do_recv + this_round->do_send;
    for (int done = 0; done < pending; ++done) {
        int idx;
        MPI_Waitany(2, req, &idx, MPI_STATUS_IGNORE);
        if (idx == 0)
            this_round->recv_dt = MPI_Wtime() - t0;
    }
}

static void verify(void *v, int t)
{
    link_round *this_round = v;
    if (!this_round->do_recv)
        return;

    cg_check(this_round->rbuf, this_round->bytes, this_round->from, t,
             "linkmatrix");
    this_round->recv_times[t] = this_round->recv_dt;
}

typedef struct {
    size_t bytes;
    int any_placement;        /* several ranks per node: a rank matrix */
    int split;                /* time the mutual round in two halves */
    int npairs;               /* --pairs: pairs timed alone, else 0 */
    int *pair_src, *pair_dst;
} link_options;

/* "S-D,S-D,..." into opt->pair_src/pair_dst (ranks checked later) */
static void parse_pairs(link_options *opt, const char *spec)
{
    int n = 1;
    for (const char *c = spec; *c; ++c)
        n += *c == ',';
    opt->pair_src = malloc(sizeof(int) * n);
    opt->pair_dst = malloc(sizeof(int) * n);
    if (!opt->pair_src || !opt->pair_dst)
        cg_die("out of memory for %d pairs", n);

    const char *p = spec;
    for (int i = 0; i < n; ++i) {
        int s, d, used = 0;
        if (sscanf(p, "%d-%d%n", &s, &d, &used) != 2 ||
            (p[used] != ',' && p[used] != '\0'))
            cg_die("--pairs: expected SRC-DST[,SRC-DST...] (rank numbers), "
                   "got '%s'", spec);
        opt->pair_src[i] = s;
        opt->pair_dst[i] = d;
        p += used + (p[used] == ',');
    }
    opt->npairs = n;
}

static link_options parse_options(int argc, char **argv)
{
    link_options opt = {.bytes = 4000000, .any_placement = 0, .split = 1,
                        .npairs = 0, .pair_src = NULL, .pair_dst = NULL};
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            opt.bytes = cg_parse_size(argv[++i], "--bytes", 1, 2000000000);
        else if (!strcmp(argv[i], "--no-split"))
            opt.split = 0;
        else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            parse_pairs(&opt, argv[++i]);
        else if (!strcmp(argv[i], "--any-placement"))
            opt.any_placement = 1;     /* tests on one machine */
        else
            cg_die("unknown argument '%s' (see the header of "
                   "cg_linkmatrix.c)", argv[i]);
    }

    if (cg.size < 2)
        cg_die("needs at least 2 ranks (one per node), got %d", cg.size);
    if (cg.ppn != 1 && !opt.any_placement)
        cg_die("needs one rank per node, got %d ranks on %d nodes",
               cg.size, cg.nodes);
    for (int i = 0; i < opt.npairs; ++i)
        if (opt.pair_src[i] < 0 || opt.pair_src[i] >= cg.size ||
            opt.pair_dst[i] < 0 || opt.pair_dst[i] >= cg.size ||
            opt.pair_src[i] == opt.pair_dst[i])
            cg_die("--pairs: pair %d-%d is not two distinct ranks of 0..%d",
                   opt.pair_src[i], opt.pair_dst[i], cg.size - 1);
    return opt;
}

/* Partners of this rank in round k; in a split mutual round, half 0 lets
 * the lower rank of each pair send, half 1 the other one. */
static void set_partners(link_round *this_round, int k, int half,
                         int split_mutual)
{
    int n = cg.size;
    this_round->to = (cg.rank + k) % n;
    this_round->from = (cg.rank - k + n) % n;
    this_round->do_send = this_round->do_recv = 1;
    if (split_mutual) {
        int lower = cg.rank < this_round->to;
        this_round->do_send = half == 0 ? lower : !lower;
        this_round->do_recv = !this_round->do_send;
    }
}

/* Rank 0: the CG line of pair src -> dst from dst's receive times in
 * all_times (trial 0, the warm-up, dropped); extra: the line's tail */
static void report_pair(const cg_measurement *m, const double *all_times,
                        int src, int dst, const char *extra)
{
    int nt = cg.opt.ntrials;
    cg_stats stats;
    cg_stats_compute(all_times + (size_t)dst * nt + 1, nt - 1,
                     CG_SPIKE_FACTOR, CG_MAX_FILTERED, &stats);
    cg_measurement pair = *m;
    pair.peer = dst;
    pair.src = src;
    pair.dst = dst;
    pair.bw_bytes = (double)m->bytes;
    pair.extra = extra;
    cg_report(&pair, &stats);
}

/* Rank 0: one CG line per pair that received in this (half) round, from
 * the receive times of every rank (all_times[rank * ntrials + trial]). */
static void report_round(const cg_measurement *m, const double *all_times,
                         int k, int half, int split_mutual)
{
    int n = cg.size;
    for (int r = 0; r < n; ++r) {
        int from = (r - k + n) % n;
        if (split_mutual && (half == 0) != (from < r))
            continue;       /* r did not receive in this half */

        if (cg.rank == 0) {
            char extra[96];
            if (split_mutual)
                snprintf(extra, sizeof extra, "round=%d half=%d "
                         "src_rank=%d dst_rank=%d", k, half, from, r);
            else
                snprintf(extra, sizeof extra, "round=%d src_rank=%d "
                         "dst_rank=%d", k, from, r);
            report_pair(m, all_times, from, r, extra);
        }

        ++cg.measurements;
    }
}

/* --pairs: pair i (src -> dst) timed alone, the others idle; rank 0
 * reports it from dst's receive times (all_times as in report_round) */
static void time_alone(const cg_measurement *m, link_round *this_round,
                       double *all_times, double *unused, int i, int src,
                       int dst)
{
    int nt = cg.opt.ntrials;
    this_round->to = dst;
    this_round->from = src;
    this_round->do_send = cg.rank == src;
    this_round->do_recv = cg.rank == dst;
    cg_time_trials(m, unused);
    MPI_Gather(this_round->recv_times, nt, MPI_DOUBLE, all_times, nt,
               MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (cg.rank == 0) {
        char extra[96];
        snprintf(extra, sizeof extra, "round=%d alone=1 src_rank=%d "
                 "dst_rank=%d", i + 1, src, dst);
        report_pair(m, all_times, src, dst, extra);
    }
    ++cg.measurements;
}

int main(int argc, char **argv)
{
    cg_init(&argc, &argv, "cg_linkmatrix");
    link_options opt = parse_options(argc, argv);

    int n = cg.size, nt = cg.opt.ntrials;
    link_round this_round;
    memset(&this_round, 0, sizeof this_round);
    this_round.bytes = opt.bytes;
    this_round.sbuf = malloc(opt.bytes);
    this_round.rbuf = malloc(opt.bytes);
    this_round.recv_times = calloc(nt, sizeof(double));
    double *all_times = cg.rank == 0 ? malloc(sizeof(double) * nt * n) : NULL;
    double *unused = malloc(sizeof(double) * nt);
    if (!this_round.sbuf || !this_round.rbuf || !this_round.recv_times ||
        !unused || (cg.rank == 0 && !all_times))
        cg_die("out of memory for %zu-byte messages", opt.bytes);

    cg_measurement m = {
        .pattern = "linkmatrix", .bytes = opt.bytes, .active = 1, .reps = 1,
        .prepare = prep, .run = op_round, .verify = verify,
        .ctx = &this_round,
    };

    for (int i = 0; i < opt.npairs; ++i)
        time_alone(&m, &this_round, all_times, unused, i, opt.pair_src[i],
                   opt.pair_dst[i]);

    /* Round k = n/2 (n even) pairs the nodes mutually: both directions
     * would share one connection, unlike every other round, so that round
     * is timed in two halves, one direction each (--no-split: together) */
    for (int k = 1; k < (opt.npairs ? 1 : n); ++k) {
        int split_mutual = 2 * k == n && opt.split;
        for (int half = 0; half < (split_mutual ? 2 : 1); ++half) {
            set_partners(&this_round, k, half, split_mutual);
            cg_time_trials(&m, unused);
            MPI_Gather(this_round.recv_times, nt, MPI_DOUBLE, all_times, nt,
                       MPI_DOUBLE, 0, MPI_COMM_WORLD);
            report_round(&m, all_times, k, half, split_mutual);
        }
    }

    free(opt.pair_src);
    free(opt.pair_dst);
    free(unused);
    free(all_times);
    free(this_round.recv_times);
    free(this_round.sbuf);
    free(this_round.rbuf);
    return cg_finish();
}
