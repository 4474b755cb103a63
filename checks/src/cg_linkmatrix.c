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
 * an analysis of concurrent flows (clustergate.topology) knows which flows
 * ran together.
 *
 * usage: cg_linkmatrix [--bytes 4M] [--no-split] [--any-placement (allow several ranks
 *        per node: a rank matrix, for tests)] [harness options: --trials ...]
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
} lctx;

static void prep(void *v, int t)
{
    lctx *x = v;
    cg_fill(x->sbuf, x->bytes, cg.rank, t);
    memset(x->rbuf, 0, x->bytes);
}

static void op_round(void *v)
{
    lctx *x = v;
    MPI_Request req[2];
    double t0 = MPI_Wtime();
    req[0] = req[1] = MPI_REQUEST_NULL;
    if (x->do_recv)
        MPI_Irecv(x->rbuf, (int)x->bytes, MPI_BYTE, x->from, 7,
                  MPI_COMM_WORLD, &req[0]);
    if (x->do_send)
        MPI_Isend(x->sbuf, (int)x->bytes, MPI_BYTE, x->to, 7,
                  MPI_COMM_WORLD, &req[1]);
    for (int done = 0; done < x->do_recv + x->do_send; ++done) {
        int idx;
        MPI_Waitany(2, req, &idx, MPI_STATUS_IGNORE);
        if (idx == 0)
            x->recv_dt = MPI_Wtime() - t0;
    }
}

static void verify(void *v, int t)
{
    lctx *x = v;
    if (!x->do_recv)
        return;

    cg_check(x->rbuf, x->bytes, x->from, t, "linkmatrix");
    x->recv_times[t] = x->recv_dt;
}

static size_t parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 1)
        cg_die("bad message size '%s'", s);
    if (*end == 'K' || *end == 'k') v *= 1e3;
    else if (*end == 'M' || *end == 'm') v *= 1e6;
    else if (*end != '\0') cg_die("bad size suffix in '%s'", s);
    if (v > 2e9)
        cg_die("message size '%s' too large (max 2 GB)", s);
    return (size_t)v;
}

int main(int argc, char **argv)
{
    cg_init(&argc, &argv, "cg_linkmatrix");
    size_t bytes = 4000000;
    int any_placement = 0, split = 1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            bytes = parse_bytes(argv[++i]);
        else if (!strcmp(argv[i], "--no-split"))
            split = 0;
        else if (!strcmp(argv[i], "--any-placement"))
            any_placement = 1;     /* tests on one machine: rank matrix */
        else
            cg_die("unknown argument '%s' (see the header of "
                   "cg_linkmatrix.c)", argv[i]);
    }

    if (cg.size < 2)
        cg_die("needs at least 2 ranks (one per node), got %d", cg.size);
    if (cg.ppn != 1 && !any_placement)
        cg_die("needs one rank per node, got %d ranks on %d nodes",
               cg.size, cg.nodes);

    int n = cg.size, nt = cg.opt.ntrials;
    lctx x;
    memset(&x, 0, sizeof x);
    x.bytes = bytes;
    x.sbuf = malloc(bytes);
    x.rbuf = malloc(bytes);
    x.recv_times = calloc(nt, sizeof(double));
    double *all = cg.rank == 0 ? malloc(sizeof(double) * nt * n) : NULL;
    if (!x.sbuf || !x.rbuf || !x.recv_times || (cg.rank == 0 && !all))
        cg_die("out of memory for %zu-byte messages", bytes);

    double *unused = malloc(sizeof(double) * nt);
    /* Round k = n/2 (n even) pairs the nodes mutually: both directions
     * would share one connection, unlike every other round, so that round
     * is timed in two halves, one direction each (--no-split: together) */
    int halves_of_mutual = split ? 2 : 1;
    for (int k = 1; k < n; ++k) {
      int mutual = 2 * k == n;
      for (int half = 0; half < (mutual ? halves_of_mutual : 1); ++half) {
        x.to = (cg.rank + k) % n;
        x.from = (cg.rank - k + n) % n;
        x.do_send = x.do_recv = 1;
        if (mutual && split) {
            /* half 0: the lower rank of each pair sends; half 1: reverse */
            int lower = cg.rank < x.to;
            x.do_send = half == 0 ? lower : !lower;
            x.do_recv = !x.do_send;
        }

        cg_measurement m;
        memset(&m, 0, sizeof m);
        m.pattern = "linkmatrix";
        m.bytes = bytes;
        m.active = 1;
        m.reps = 1;
        m.prepare = prep;
        m.run = op_round;
        m.verify = verify;
        m.ctx = &x;
        cg_time_trials(&m, unused);
        MPI_Gather(x.recv_times, nt, MPI_DOUBLE, all, nt, MPI_DOUBLE, 0,
                   MPI_COMM_WORLD);

        for (int r = 0; r < n; ++r) {
            int from = (r - k + n) % n;
            if (mutual && split && (half == 0) != (from < r))
                continue;       /* r did not receive in this half */

            if (cg.rank == 0) {
                char extra[96];
                cg_stats st;
                /* trial 0 is the warm-up: dropped */
                cg_stats_compute(all + (size_t)r * nt + 1, nt - 1,
                                 CG_SPIKE_FACTOR, CG_MAX_FILTERED, &st);
                if (mutual && split)
                    snprintf(extra, sizeof extra, "round=%d half=%d "
                             "src_rank=%d dst_rank=%d", k, half, from, r);
                else
                    snprintf(extra, sizeof extra, "round=%d src_rank=%d "
                             "dst_rank=%d", k, from, r);
                cg_measurement p = m;
                p.peer = r;
                p.src = from;
                p.dst = r;
                p.bw_bytes = (double)bytes;
                p.extra = extra;
                cg_report(&p, &st);
            }

            ++cg.measurements;
        }
      }
    }

    free(unused);
    free(all);
    free(x.recv_times);
    free(x.sbuf);
    free(x.rbuf);
    return cg_finish();
}
