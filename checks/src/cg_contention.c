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
    MPI_Status *statuses;         /* real array: some MPIs' headers warn on
                             * MPI_STATUSES_IGNORE for Waitall */
    double *dsend, *drecv;  /* allreduce */
} pattern_state;

/* ---- helpers ---------------------------------------------------------- */

static void send_to(pattern_state *state, int to, const unsigned char *buf)
{
    MPI_Send(buf, (int)state->bytes, MPI_BYTE, to, 0, MPI_COMM_WORLD);
}

static void recv_from(pattern_state *state, int from, unsigned char *buf)
{
    MPI_Recv(buf, (int)state->bytes, MPI_BYTE, from, 0, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
}

/* Send buffer block i holds what this rank sends in trial t (same data for
 * every destination, tagged by the sender). */
static void prep_send(void *v, int t)
{
    pattern_state *state = v;
    cg_fill(state->sbuf, state->bytes, cg.rank, t);
}

/* ---- patterns: one operation each -------------------------------------- */

static void op_barrier(void *v)
{
    (void)v;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* rank 0 <-> state->peer; the others idle (report per peer: "distance") */
static void op_pingpong(void *v)
{
    pattern_state *state = v;
    if (cg.rank == 0) {
        send_to(state, state->peer, state->sbuf);
        recv_from(state, state->peer, state->rbuf);
    } else {
        recv_from(state, 0, state->rbuf);
        send_to(state, 0, state->sbuf);
    }
}

/* rank 0 and state->peer send to each other at the same time */
static void op_bipingpong(void *v)
{
    pattern_state *state = v;
    int other = cg.rank == 0 ? state->peer : 0;
    MPI_Irecv(state->rbuf, (int)state->bytes, MPI_BYTE, other, 0,
              MPI_COMM_WORLD,
              &state->req[0]);
    MPI_Isend(state->sbuf, (int)state->bytes, MPI_BYTE, other, 0,
              MPI_COMM_WORLD,
              &state->req[1]);
    MPI_Waitall(2, state->req, state->statuses);
}

/* everybody sends right and receives from the left */
static void op_shift(void *v)
{
    pattern_state *state = v;
    int n = cg.size;
    MPI_Sendrecv(state->sbuf, (int)state->bytes, MPI_BYTE, (cg.rank + 1) % n,
                 0,
                 state->rbuf, (int)state->bytes, MPI_BYTE,
                     (cg.rank - 1 + n) % n, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* rank 0 sends to every other rank in turn */
static void op_naive_bcast(void *v)
{
    pattern_state *state = v;
    if (cg.rank == 0)
        for (int r = 1; r < cg.size; ++r)
            send_to(state, r, state->sbuf);
    else
        recv_from(state, 0, state->rbuf);
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
    pattern_state *state = v;
    int r = cg.rank;
    for (int step = pow2_ceil(cg.size) / 2; step >= 1; step /= 2) {
        if (r % (2 * step) == 0 && r + step < cg.size)
            send_to(state, r + step, r == 0 ? state->sbuf : state->rbuf);
        else if (r % (2 * step) == step)
            recv_from(state, r - step, state->rbuf);
    }
}

/* every rank sends its block to every other rank, point-to-point */
static void op_alltoall(void *v)
{
    pattern_state *state = v;
    int k = 0;
    for (int r = 0; r < cg.size; ++r) {
        if (r == cg.rank)
            continue;
        MPI_Irecv(state->rbuf + (size_t)r * state->bytes, (int)state->bytes,
                  MPI_BYTE, r,
                  0, MPI_COMM_WORLD, &state->req[k++]);
    }

    for (int i = 1; i < cg.size; ++i) {
        int r = (cg.rank + i) % cg.size;   /* stagger to avoid a hotspot */
        MPI_Isend(state->sbuf, (int)state->bytes, MPI_BYTE, r, 0,
                  MPI_COMM_WORLD,
                  &state->req[k++]);
    }

    MPI_Waitall(k, state->req, state->statuses);
}

/* all ranks send to rank 0 at once */
static void op_hotspot(void *v)
{
    pattern_state *state = v;
    if (cg.rank == 0) {
        for (int r = 1; r < cg.size; ++r)
            MPI_Irecv(state->rbuf + (size_t)r * state->bytes,
                      (int)state->bytes, MPI_BYTE,
                      r, 0, MPI_COMM_WORLD, &state->req[r - 1]);
        MPI_Waitall(cg.size - 1, state->req, state->statuses);
    } else {
        send_to(state, 0, state->sbuf);
    }
}

/* rank i exchanges with rank N-1-i, all pairs at once */
static void op_complement(void *v)
{
    pattern_state *state = v;
    MPI_Sendrecv(state->sbuf, (int)state->bytes, MPI_BYTE, state->peer, 0,
                 state->rbuf, (int)state->bytes, MPI_BYTE, state->peer, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* a->c alone (pair=0), or a->c and b->d at once (pair=1) */
static void op_concurrent(void *v)
{
    pattern_state *state = v;
    if (cg.rank == state->a)
        send_to(state, state->c, state->sbuf);
    else if (cg.rank == state->c)
        recv_from(state, state->a, state->rbuf);
    else if (state->pair && cg.rank == state->b)
        send_to(state, state->d, state->sbuf);
    else if (state->pair && cg.rank == state->d)
        recv_from(state, state->b, state->rbuf);
}

static void op_allreduce(void *v)
{
    pattern_state *state = v;
    MPI_Allreduce(state->dsend, state->drecv,
                  (int)(state->bytes / sizeof(double)),
                  MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

/* ---- verification ------------------------------------------------------ */

static const char *cur_pattern;

static void verify_from(pattern_state *state, int from, int t,
                        const unsigned char *buf)
{
    cg_check(buf, state->bytes, from, t, cur_pattern);
}

static void v_pingpong(void *v, int t)
{
    pattern_state *state = v;
    verify_from(state, cg.rank == 0 ? state->peer : 0, t, state->rbuf);
}

static void v_left(void *v, int t)
{
    pattern_state *state = v;
    verify_from(state, (cg.rank - 1 + cg.size) % cg.size, t, state->rbuf);
}

static void v_from_root(void *v, int t)
{
    pattern_state *state = v;
    if (cg.rank != 0)
        verify_from(state, 0, t, state->rbuf);
}

static void v_all_blocks(void *v, int t)
{
    pattern_state *state = v;
    for (int r = 0; r < cg.size; ++r)
        if (r != cg.rank)
            verify_from(state, r, t, state->rbuf + (size_t)r * state->bytes);
}

static void v_hotspot(void *v, int t)
{
    if (cg.rank == 0)
        v_all_blocks(v, t);
}

static void v_peer(void *v, int t)
{
    pattern_state *state = v;
    verify_from(state, state->peer, t, state->rbuf);
}

static void v_concurrent(void *v, int t)
{
    pattern_state *state = v;
    if (cg.rank == state->c)
        verify_from(state, state->a, t, state->rbuf);
    else if (state->pair && cg.rank == state->d)
        verify_from(state, state->b, t, state->rbuf);
}

/* allreduce of "rank+1+i%7" over ranks has a closed form */
static void p_allreduce(void *v, int t)
{
    pattern_state *state = v;
    size_t n = state->bytes / sizeof(double);
    for (size_t i = 0; i < n; ++i)
        state->dsend[i] = cg.rank + 1 + (double)(i % 7) + t;

    if (cg.opt.corrupt && t == 1 && cg.rank == cg.size - 1 && n > 0)
        state->dsend[n - 1] += 1000.0;
}

static void v_allreduce(void *v, int t)
{
    pattern_state *state = v;
    size_t n = state->bytes / sizeof(double);
    double N = cg.size;
    for (size_t i = 0; i < n; ++i) {
        double want = N * (N + 1) / 2 + N * ((double)(i % 7) + t);
        if (state->drecv[i] != want) {
            printf("CG_ERROR kind=payload pattern=allreduce rank=%d node=%s "
                   "element=%zu expected=%g got=%g trial=%d\n", cg.rank,
                   cg.node_names[cg.rank], i, want, state->drecv[i], t);
            ++cg.errors;
            return;
        }
    }
}

/* ---- drivers ----------------------------------------------------------- */

static cg_measurement base(const char *pattern, pattern_state *state)
{
    cur_pattern = pattern;
    cg_measurement m = cg_measurement_of(pattern, state->bytes);
    m.reps = cg.opt.reps ? cg.opt.reps : 1;
    m.prepare = prep_send;
    m.ctx = state;
    return m;
}

static void run_barrier(pattern_state *state)
{
    size_t keep = state->bytes;
    state->bytes = 0;
    cg_measurement m = base("barrier", state);
    m.prepare = NULL;
    m.run = op_barrier;
    cg_measure(&m);
    state->bytes = keep;
}

/* rank 0 with every other rank j in turn: one line per j ("distance") */
static void run_per_peer(pattern_state *state, const char *name,
                         void (*op)(void *),
                         double msgs_per_op, double bw_factor)
{
    for (int j = 1; j < cg.size; ++j) {
        state->peer = j;
        cg_measurement m = base(name, state);
        m.active = cg.rank == 0 || cg.rank == j;
        m.run = op;
        m.verify = v_pingpong;
        m.msgs_per_op = msgs_per_op;
        m.peer = j;
        m.dst = j;
        m.bw_bytes = bw_factor * state->bytes;
        cg_measure(&m);
    }
}

static void run_simple(pattern_state *state, const char *name,
                       void (*op)(void *),
                       void (*verify)(void *, int), double bw_bytes)
{
    cg_measurement m = base(name, state);
    m.run = op;
    m.verify = verify;
    m.bw_bytes = bw_bytes;
    cg_measure(&m);
}

static void run_complement(pattern_state *state)
{
    state->peer = cg.size - 1 - cg.rank;
    cg_measurement m = base("complement", state);
    /* the middle rank of an odd N idles */
    m.active = state->peer != cg.rank;
    m.run = op_complement;
    m.verify = v_peer;
    m.peer = cg.size - 1;
    m.dst = cg.size - 1;
    m.bw_bytes = state->bytes;
    cg_measure(&m);
}

/* Layout of the concurrent-send test: a and b on one node, c and d on
 * other nodes (two different ones when there are, or else any other). */
static int concurrent_layout(pattern_state *state)
{
    state->a = 0;
    state->b = state->c = state->d = -1;
    for (int r = 1; r < cg.size && state->b < 0; ++r)
        if (!strcmp(cg.node_names[r], cg.node_names[0]))
            state->b = r;

    for (int r = 1; r < cg.size; ++r) {
        if (r == state->b || !strcmp(cg.node_names[r], cg.node_names[0]))
            continue;
        if (state->c < 0)
            state->c = r;
        else if (state->d < 0 && strcmp(cg.node_names[r],
                                        cg.node_names[state->c]))
            state->d = r;
    }

    /* fewer nodes than the ideal layout: take any free ranks */
    for (int r = 1; r < cg.size; ++r) {
        if (r == state->b || r == state->c || r == state->d)
            continue;
        if (state->b < 0)
            state->b = r;
        else if (state->c < 0)
            state->c = r;
        else if (state->d < 0)
            state->d = r;
    }

    return state->b >= 0 && state->c >= 0 && state->d >= 0;
}

/* a -> c measured, alone (pair 0) or beside b -> d (pair 1) */
static cg_measurement concurrent(const char *name, pattern_state *state,
                                 int pair)
{
    state->pair = pair;
    cg_measurement m = base(name, state);
    m.active = cg.rank == state->a || cg.rank == state->c ||
        (pair && (cg.rank == state->b || cg.rank == state->d));
    m.run = op_concurrent;
    m.verify = v_concurrent;
    m.peer = state->c;
    m.dst = state->c;
    m.bw_bytes = state->bytes;
    return m;
}

static void run_concurrent(pattern_state *state)
{
    if (!concurrent_layout(state)) {
        if (cg.rank == 0)
            printf("CG_SKIP pattern=concurrent bytes=%zu reason=needs at "
                   "least 4 ranks\n", state->bytes);
        return;
    }

    cg_measurement m = concurrent("concurrent_single", state, 0);
    cg_stats single = cg_measure(&m);

    char extra[256];
    m = concurrent("concurrent_pair", state, 1);
    /* the ratio needs the pair's statistics: measure, then report */
    cg_stats pair = cg_measure_quiet(&m);
    if (cg.rank == 0) {
        snprintf(extra, sizeof extra, "ratio=%.4f second_src=%s "
                 "second_dst=%s", pair.mean / single.mean,
                 cg.node_names[state->b], cg.node_names[state->d]);
        m.extra = extra;
        cg_report(&m, &pair);
    }

    ++cg.measurements;
}

static void run_allreduce(pattern_state *state)
{
    size_t keep = state->bytes;
    size_t doubles = state->bytes < sizeof(double)
                     ? 1 : state->bytes / sizeof(double);
    state->bytes = doubles * sizeof(double);
    cg_measurement m = base("allreduce", state);
    m.prepare = p_allreduce;
    m.run = op_allreduce;
    m.verify = v_allreduce;
    m.bw_bytes = state->bytes;
    cg_measure(&m);
    state->bytes = keep;
}

/* ---- main ------------------------------------------------------------- */

static const char *ALL[] = {
    "barrier", "pingpong", "bipingpong", "shift", "naive_bcast",
    "tree_bcast", "alltoall", "hotspot", "complement", "concurrent",
    "allreduce", NULL
};

static void run_pattern(const char *p, pattern_state *state)
{
    double n1 = (double)(cg.size - 1) * state->bytes;
    if (!strcmp(p, "barrier"))
        run_barrier(state);
    else if (!strcmp(p, "pingpong"))
        run_per_peer(state, "pingpong", op_pingpong, 2.0, 1.0);
    else if (!strcmp(p, "bipingpong"))
        run_per_peer(state, "bipingpong", op_bipingpong, 1.0, 2.0);
    else if (!strcmp(p, "shift"))
        run_simple(state, "shift", op_shift, v_left, state->bytes);
    else if (!strcmp(p, "naive_bcast"))
        run_simple(state, "naive_bcast", op_naive_bcast, v_from_root, n1);
    else if (!strcmp(p, "tree_bcast"))
        run_simple(state, "tree_bcast", op_tree_bcast, v_from_root, n1);
    else if (!strcmp(p, "alltoall"))
        run_simple(state, "alltoall", op_alltoall, v_all_blocks, n1);
    else if (!strcmp(p, "hotspot"))
        run_simple(state, "hotspot", op_hotspot, v_hotspot, n1);
    else if (!strcmp(p, "complement"))
        run_complement(state);
    else if (!strcmp(p, "concurrent"))
        run_concurrent(state);
    else if (!strcmp(p, "allreduce"))
        run_allreduce(state);
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

/* "8,10K,1M" -> sizes[]; returns how many (at most max) */
static int parse_sizes(const char *list, size_t *sizes, int max)
{
    int count = 0;
    char *copy = strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && count < max;
         tok = strtok_r(NULL, ",", &save))
        sizes[count++] = cg_parse_size(tok, "--sizes", 1, 2000000000);
    free(copy);
    return count;
}

/* "all" or "p1,p2" -> selected[] (pointers into a copy kept for the run);
 * returns how many */
static int select_patterns(const char *list, const char **selected, int max)
{
    int count = 0;
    if (!strcmp(list, "all")) {
        for (int i = 0; ALL[i] && count < max; ++i)
            selected[count++] = ALL[i];
        return count;
    }

    char *copy = strdup(list), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && count < max;
         tok = strtok_r(NULL, ",", &save)) {
        if (!is_known(tok))
            cg_die("unknown pattern '%s'", tok);
        selected[count++] = tok;
    }
    return count;
}

/* Buffers for messages up to max_bytes to and from every rank */
static void allocate_buffers(pattern_state *state, size_t max_bytes)
{
    memset(state, 0, sizeof *state);
    state->sbuf = calloc(max_bytes + 8, 1);
    state->rbuf = calloc((size_t)cg.size * (max_bytes + 8), 1);
    state->req = malloc(sizeof(MPI_Request) * 2 * cg.size);
    state->statuses = malloc(sizeof(MPI_Status) * 2 * cg.size);
    state->dsend = malloc(max_bytes + 8);
    state->drecv = malloc(max_bytes + 8);
    if (!state->sbuf || !state->rbuf || !state->req || !state->statuses ||
        !state->dsend || !state->drecv)
        cg_die("out of memory for %zu-byte messages on %d ranks", max_bytes,
               cg.size);
}

int main(int argc, char **argv)
{
    cg_init(&argc, &argv, "cg_contention");
    const char *pattern_list = "all", *size_list = "8,10K,1M";
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--patterns") && i + 1 < argc)
            pattern_list = argv[++i];
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            size_list = argv[++i];
        else
            cg_die("unknown argument '%s' (see the header of "
                   "cg_contention.c)", argv[i]);
    }

    size_t sizes[64];
    int nsizes = parse_sizes(size_list, sizes, 64);
    const char *patterns[64];
    int npatterns = select_patterns(pattern_list, patterns, 64);
    if (cg.size < 2)
        cg_die("needs at least 2 ranks, got %d", cg.size);

    size_t max_bytes = 0;
    for (int i = 0; i < nsizes; ++i)
        if (sizes[i] > max_bytes)
            max_bytes = sizes[i];

    pattern_state state;
    allocate_buffers(&state, max_bytes);
    for (int p = 0; p < npatterns; ++p) {
        if (!strcmp(patterns[p], "barrier")) {
            run_barrier(&state);    /* size-independent */
            continue;
        }

        for (int s = 0; s < nsizes; ++s) {
            state.bytes = sizes[s];
            run_pattern(patterns[p], &state);
        }
    }

    return cg_finish();
}
