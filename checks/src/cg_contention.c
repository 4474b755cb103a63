/* cg_contention: the MPI contention patterns of the classic cluster studies,
 * each a short function timed by the shared harness (cg_harness.h).
 *
 * usage: cg_contention [--patterns p1,p2|all] [--sizes 8,10K,1M] [harness
 *        options: --trials --reps --flush-bytes --corrupt-payload]
 */
#include "cg_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t bytes;
    int peer;               /* partner of this rank for the pattern, -1 */
    int a, b, c, d;         /* ranks of the concurrent-send layout */
    int pair;               /* concurrent: 1 = both senders, 0 = single */
    unsigned char *sbuf;    /* send buffer, N*bytes for many-peer patterns */
    unsigned char *rbuf;    /* receive buffer, N*bytes */
    MPI_Request *req;
    MPI_Status *st;         /* real array: some MPIs' headers warn on
                             * MPI_STATUSES_IGNORE for Waitall */
    double *dsend, *drecv;  /* allreduce */
} pctx;

/* ---- helpers ---------------------------------------------------------- */

static void send_to(pctx *x, int to, const unsigned char *buf)
{
    MPI_Send(buf, (int)x->bytes, MPI_BYTE, to, 0, MPI_COMM_WORLD);
}

static void recv_from(pctx *x, int from, unsigned char *buf)
{
    MPI_Recv(buf, (int)x->bytes, MPI_BYTE, from, 0, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
}

/* Send buffer block i holds what this rank sends in trial t (same data for
 * every destination, tagged by the sender). */
static void prep_send(void *v, int t)
{
    pctx *x = v;
    cg_fill(x->sbuf, x->bytes, cg.rank, t);
}

/* ---- patterns: one operation each -------------------------------------- */

static void op_barrier(void *v)
{
    (void)v;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* rank 0 <-> x->peer; the others idle (report per peer: "distance") */
static void op_pingpong(void *v)
{
    pctx *x = v;
    if (cg.rank == 0) {
        send_to(x, x->peer, x->sbuf);
        recv_from(x, x->peer, x->rbuf);
    } else {
        recv_from(x, 0, x->rbuf);
        send_to(x, 0, x->sbuf);
    }
}

/* rank 0 and x->peer send to each other at the same time */
static void op_bipingpong(void *v)
{
    pctx *x = v;
    int other = cg.rank == 0 ? x->peer : 0;
    MPI_Irecv(x->rbuf, (int)x->bytes, MPI_BYTE, other, 0, MPI_COMM_WORLD,
              &x->req[0]);
    MPI_Isend(x->sbuf, (int)x->bytes, MPI_BYTE, other, 0, MPI_COMM_WORLD,
              &x->req[1]);
    MPI_Waitall(2, x->req, x->st);
}

/* everybody sends right and receives from the left */
static void op_shift(void *v)
{
    pctx *x = v;
    int n = cg.size;
    MPI_Sendrecv(x->sbuf, (int)x->bytes, MPI_BYTE, (cg.rank + 1) % n, 0,
                 x->rbuf, (int)x->bytes, MPI_BYTE, (cg.rank - 1 + n) % n, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* rank 0 sends to every other rank in turn */
static void op_naive_bcast(void *v)
{
    pctx *x = v;
    if (cg.rank == 0)
        for (int r = 1; r < cg.size; ++r)
            send_to(x, r, x->sbuf);
    else
        recv_from(x, 0, x->rbuf);
}

static int pow2_ceil(int n)
{
    int p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* binary tree with point-to-point: 0->p/2, then 0->p/4 and p/2->3p/4, ... */
static void op_tree_bcast(void *v)
{
    pctx *x = v;
    int r = cg.rank;
    for (int step = pow2_ceil(cg.size) / 2; step >= 1; step /= 2) {
        if (r % (2 * step) == 0 && r + step < cg.size)
            send_to(x, r + step, r == 0 ? x->sbuf : x->rbuf);
        else if (r % (2 * step) == step)
            recv_from(x, r - step, x->rbuf);
    }
}

/* every rank sends its block to every other rank, point-to-point */
static void op_alltoall(void *v)
{
    pctx *x = v;
    int k = 0;
    for (int r = 0; r < cg.size; ++r) {
        if (r == cg.rank)
            continue;
        MPI_Irecv(x->rbuf + (size_t)r * x->bytes, (int)x->bytes, MPI_BYTE, r,
                  0, MPI_COMM_WORLD, &x->req[k++]);
    }

    for (int i = 1; i < cg.size; ++i) {
        int r = (cg.rank + i) % cg.size;   /* stagger to avoid a hotspot */
        MPI_Isend(x->sbuf, (int)x->bytes, MPI_BYTE, r, 0, MPI_COMM_WORLD,
                  &x->req[k++]);
    }

    MPI_Waitall(k, x->req, x->st);
}

/* all ranks send to rank 0 at once */
static void op_hotspot(void *v)
{
    pctx *x = v;
    if (cg.rank == 0) {
        for (int r = 1; r < cg.size; ++r)
            MPI_Irecv(x->rbuf + (size_t)r * x->bytes, (int)x->bytes, MPI_BYTE,
                      r, 0, MPI_COMM_WORLD, &x->req[r - 1]);
        MPI_Waitall(cg.size - 1, x->req, x->st);
    } else {
        send_to(x, 0, x->sbuf);
    }
}

/* rank i exchanges with rank N-1-i, all pairs at once */
static void op_complement(void *v)
{
    pctx *x = v;
    MPI_Sendrecv(x->sbuf, (int)x->bytes, MPI_BYTE, x->peer, 0,
                 x->rbuf, (int)x->bytes, MPI_BYTE, x->peer, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* a->c alone (pair=0), or a->c and b->d at once (pair=1) */
static void op_concurrent(void *v)
{
    pctx *x = v;
    if (cg.rank == x->a)
        send_to(x, x->c, x->sbuf);
    else if (cg.rank == x->c)
        recv_from(x, x->a, x->rbuf);
    else if (x->pair && cg.rank == x->b)
        send_to(x, x->d, x->sbuf);
    else if (x->pair && cg.rank == x->d)
        recv_from(x, x->b, x->rbuf);
}

static void op_allreduce(void *v)
{
    pctx *x = v;
    MPI_Allreduce(x->dsend, x->drecv, (int)(x->bytes / sizeof(double)),
                  MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* ---- verification ------------------------------------------------------ */

static const char *cur_pattern;

static void verify_from(pctx *x, int from, int t, const unsigned char *buf)
{
    cg_check(buf, x->bytes, from, t, cur_pattern);
}

static void v_pingpong(void *v, int t)
{
    pctx *x = v;
    verify_from(x, cg.rank == 0 ? x->peer : 0, t, x->rbuf);
}

static void v_left(void *v, int t)
{
    pctx *x = v;
    verify_from(x, (cg.rank - 1 + cg.size) % cg.size, t, x->rbuf);
}

static void v_from_root(void *v, int t)
{
    pctx *x = v;
    if (cg.rank != 0)
        verify_from(x, 0, t, x->rbuf);
}

static void v_all_blocks(void *v, int t)
{
    pctx *x = v;
    for (int r = 0; r < cg.size; ++r)
        if (r != cg.rank)
            verify_from(x, r, t, x->rbuf + (size_t)r * x->bytes);
}

static void v_hotspot(void *v, int t)
{
    if (cg.rank == 0)
        v_all_blocks(v, t);
}

static void v_peer(void *v, int t)
{
    pctx *x = v;
    verify_from(x, x->peer, t, x->rbuf);
}

static void v_concurrent(void *v, int t)
{
    pctx *x = v;
    if (cg.rank == x->c)
        verify_from(x, x->a, t, x->rbuf);
    else if (x->pair && cg.rank == x->d)
        verify_from(x, x->b, t, x->rbuf);
}

/* allreduce of "rank+1+i%7" over ranks has a closed form */
static void p_allreduce(void *v, int t)
{
    pctx *x = v;
    size_t n = x->bytes / sizeof(double);
    for (size_t i = 0; i < n; ++i)
        x->dsend[i] = cg.rank + 1 + (double)(i % 7) + t;

    if (cg.opt.corrupt && t == 1 && cg.rank == cg.size - 1 && n > 0)
        x->dsend[n - 1] += 1000.0;
}

static void v_allreduce(void *v, int t)
{
    pctx *x = v;
    size_t n = x->bytes / sizeof(double);
    double N = cg.size;
    for (size_t i = 0; i < n; ++i) {
        double want = N * (N + 1) / 2 + N * ((double)(i % 7) + t);
        if (x->drecv[i] != want) {
            printf("CG_ERROR kind=payload pattern=allreduce rank=%d node=%s "
                   "element=%zu expected=%g got=%g trial=%d\n", cg.rank,
                   cg.node_names[cg.rank], i, want, x->drecv[i], t);
            ++cg.errors;
            return;
        }
    }
}

/* ---- drivers ----------------------------------------------------------- */

static cg_measurement base(const char *pattern, pctx *x)
{
    cg_measurement m;
    memset(&m, 0, sizeof m);
    cur_pattern = pattern;
    m.pattern = pattern;
    m.bytes = x->bytes;
    m.active = 1;
    m.reps = cg.opt.reps ? cg.opt.reps : 1;
    m.peer = -1;
    m.src = 0;
    m.dst = -1;
    m.prepare = prep_send;
    m.ctx = x;
    return m;
}

static void run_barrier(pctx *x)
{
    size_t keep = x->bytes;
    x->bytes = 0;
    cg_measurement m = base("barrier", x);
    m.prepare = NULL;
    m.run = op_barrier;
    cg_measure(&m);
    x->bytes = keep;
}

/* rank 0 with every other rank j in turn: one line per j ("distance") */
static void run_per_peer(pctx *x, const char *name, void (*op)(void *),
                         double msgs_per_op, double bw_factor)
{
    for (int j = 1; j < cg.size; ++j) {
        x->peer = j;
        cg_measurement m = base(name, x);
        m.active = cg.rank == 0 || cg.rank == j;
        m.run = op;
        m.verify = v_pingpong;
        m.msgs_per_op = msgs_per_op;
        m.peer = j;
        m.dst = j;
        m.bw_bytes = bw_factor * x->bytes;
        cg_measure(&m);
    }
}

static void run_simple(pctx *x, const char *name, void (*op)(void *),
                       void (*verify)(void *, int), double bw_bytes)
{
    cg_measurement m = base(name, x);
    m.run = op;
    m.verify = verify;
    m.bw_bytes = bw_bytes;
    cg_measure(&m);
}

static void run_complement(pctx *x)
{
    x->peer = cg.size - 1 - cg.rank;
    cg_measurement m = base("complement", x);
    m.active = x->peer != cg.rank;     /* the middle rank of an odd N idles */
    m.run = op_complement;
    m.verify = v_peer;
    m.peer = cg.size - 1;
    m.dst = cg.size - 1;
    m.bw_bytes = x->bytes;
    cg_measure(&m);
}

/* Layout of the concurrent-send test: a and b on one node, c and d on
 * other nodes (two different ones when there are, or else any other). */
static int concurrent_layout(pctx *x)
{
    x->a = 0;
    x->b = x->c = x->d = -1;
    for (int r = 1; r < cg.size && x->b < 0; ++r)
        if (!strcmp(cg.node_names[r], cg.node_names[0]))
            x->b = r;

    for (int r = 1; r < cg.size; ++r) {
        if (r == x->b || !strcmp(cg.node_names[r], cg.node_names[0]))
            continue;
        if (x->c < 0)
            x->c = r;
        else if (x->d < 0 && strcmp(cg.node_names[r], cg.node_names[x->c]))
            x->d = r;
    }

    /* fewer nodes than the ideal layout: take any free ranks */
    for (int r = 1; r < cg.size; ++r) {
        if (r == x->b || r == x->c || r == x->d)
            continue;
        if (x->b < 0)
            x->b = r;
        else if (x->c < 0)
            x->c = r;
        else if (x->d < 0)
            x->d = r;
    }

    return x->b >= 0 && x->c >= 0 && x->d >= 0;
}

static void run_concurrent(pctx *x)
{
    if (!concurrent_layout(x)) {
        if (cg.rank == 0)
            printf("CG_SKIP pattern=concurrent bytes=%zu reason=needs at "
                   "least 4 ranks\n", x->bytes);
        return;
    }

    x->pair = 0;
    cg_measurement m = base("concurrent_single", x);
    m.active = cg.rank == x->a || cg.rank == x->c;
    m.run = op_concurrent;
    m.verify = v_concurrent;
    m.peer = x->c;
    m.dst = x->c;
    m.bw_bytes = x->bytes;
    cg_stats single = cg_measure(&m);

    x->pair = 1;
    char extra[256];
    m = base("concurrent_pair", x);
    m.active = cg.rank == x->a || cg.rank == x->b || cg.rank == x->c ||
               cg.rank == x->d;
    m.run = op_concurrent;
    m.verify = v_concurrent;
    m.peer = x->c;
    m.dst = x->c;
    m.bw_bytes = x->bytes;
    /* the ratio needs the pair's statistics: measure, then report */
    cg_stats pair = cg_measure_quiet(&m);
    if (cg.rank == 0) {
        snprintf(extra, sizeof extra, "ratio=%.4f second_src=%s "
                 "second_dst=%s", pair.mean / single.mean,
                 cg.node_names[x->b], cg.node_names[x->d]);
        m.extra = extra;
        cg_report(&m, &pair);
    }

    ++cg.measurements;
}

static void run_allreduce(pctx *x)
{
    size_t keep = x->bytes;
    x->bytes = x->bytes < sizeof(double) ? sizeof(double)
                                         : x->bytes / sizeof(double) * sizeof(double);
    cg_measurement m = base("allreduce", x);
    m.prepare = p_allreduce;
    m.run = op_allreduce;
    m.verify = v_allreduce;
    m.bw_bytes = x->bytes;
    cg_measure(&m);
    x->bytes = keep;
}

/* ---- main ------------------------------------------------------------- */

static const char *ALL[] = {
    "barrier", "pingpong", "bipingpong", "shift", "naive_bcast",
    "tree_bcast", "alltoall", "hotspot", "complement", "concurrent",
    "allreduce", NULL
};

static void run_pattern(const char *p, pctx *x)
{
    double n1 = (double)(cg.size - 1) * x->bytes;
    if (!strcmp(p, "barrier"))
        run_barrier(x);
    else if (!strcmp(p, "pingpong"))
        run_per_peer(x, "pingpong", op_pingpong, 2.0, 1.0);
    else if (!strcmp(p, "bipingpong"))
        run_per_peer(x, "bipingpong", op_bipingpong, 1.0, 2.0);
    else if (!strcmp(p, "shift"))
        run_simple(x, "shift", op_shift, v_left, x->bytes);
    else if (!strcmp(p, "naive_bcast"))
        run_simple(x, "naive_bcast", op_naive_bcast, v_from_root, n1);
    else if (!strcmp(p, "tree_bcast"))
        run_simple(x, "tree_bcast", op_tree_bcast, v_from_root, n1);
    else if (!strcmp(p, "alltoall"))
        run_simple(x, "alltoall", op_alltoall, v_all_blocks, n1);
    else if (!strcmp(p, "hotspot"))
        run_simple(x, "hotspot", op_hotspot, v_hotspot, n1);
    else if (!strcmp(p, "complement"))
        run_complement(x);
    else if (!strcmp(p, "concurrent"))
        run_concurrent(x);
    else if (!strcmp(p, "allreduce"))
        run_allreduce(x);
    else
        cg_die("unknown pattern '%s'", p);
}

static int is_known(const char *p)
{
    for (int i = 0; ALL[i]; ++i)
        if (!strcmp(ALL[i], p))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    cg_init(&argc, &argv, "cg_contention");
    const char *patterns = "all", *sizes = "8,10K,1M";
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--patterns") && i + 1 < argc)
            patterns = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            sizes = argv[++i];
        else
            cg_die("unknown argument '%s' (see the header of "
                   "cg_contention.c)", argv[i]);
    }

    if (cg.size < 2)
        cg_die("needs at least 2 ranks, got %d", cg.size);

    /* parse sizes */
    size_t sz[64];
    int nsz = 0;
    char *copy = strdup(sizes), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && nsz < 64;
         tok = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strtod(tok, &end);
        if (end == tok || v < 1)
            cg_die("bad message size '%s' (sizes are >= 1 byte)", tok);
        if (*end == 'K' || *end == 'k') v *= 1e3;
        else if (*end == 'M' || *end == 'm') v *= 1e6;
        else if (*end != '\0') cg_die("bad size suffix in '%s'", tok);
        sz[nsz++] = (size_t)v;
    }

    size_t maxb = 0;
    for (int i = 0; i < nsz; ++i)
        if (sz[i] > maxb)
            maxb = sz[i];

    pctx x;
    memset(&x, 0, sizeof x);
    x.sbuf = calloc(maxb + 8, 1);
    x.rbuf = calloc((size_t)cg.size * (maxb + 8), 1);
    x.req = malloc(sizeof(MPI_Request) * 2 * cg.size);
    x.st = malloc(sizeof(MPI_Status) * 2 * cg.size);
    x.dsend = malloc(maxb + 8);
    x.drecv = malloc(maxb + 8);
    if (!x.sbuf || !x.rbuf || !x.req || !x.st || !x.dsend || !x.drecv)
        cg_die("out of memory for %zu-byte messages on %d ranks", maxb,
               cg.size);

    /* pattern list */
    char *plist = strdup(patterns);
    const char *sel[64];
    int nsel = 0;
    if (!strcmp(patterns, "all")) {
        for (int i = 0; ALL[i]; ++i)
            sel[nsel++] = ALL[i];
    } else {
        for (char *tok = strtok_r(plist, ",", &save); tok && nsel < 64;
             tok = strtok_r(NULL, ",", &save)) {
            if (!is_known(tok))
                cg_die("unknown pattern '%s'", tok);
            sel[nsel++] = tok;
        }
    }

    for (int p = 0; p < nsel; ++p) {
        if (!strcmp(sel[p], "barrier")) {
            run_barrier(&x);    /* size-independent */
            continue;
        }

        for (int s = 0; s < nsz; ++s) {
            x.bytes = sz[s];
            run_pattern(sel[p], &x);
        }
    }

    return cg_finish();
}
