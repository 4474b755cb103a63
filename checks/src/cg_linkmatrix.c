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
 * (clustergate.links.retest_driver). One line per pair, round=<i> (1-based position
 * in the list) alone=1. In each trial the sender first sends an empty
 * message (tag 8), on which the receiver starts its clock: the pair is
 * timed from its sender's start, not from the barrier, which the ranks
 * leave at different times.
 *
 * Payload (every message is checked, none of it inside the timed part):
 * the body of this rank's messages (cg_payload_byte of its rank, trial 0)
 * is written once; before every trial the sender writes a stamp (8 bytes
 * naming sender, trial and block) at the start of every 4 KiB block and
 * the receiver poisons those places. After the receive every stamp and one
 * body word per block (a different word each trial) are checked, and in
 * trial 1 (the first timed one) the receive buffer is zeroed before and
 * every byte checked after: each pair's message is verified whole once,
 * and in every trial each block is proven delivered from the right sender
 * in that trial. Filling, zeroing and checking the whole 4 MB around every
 * trial took the cores that the other ranks of the node's round needed
 * (9 ranks on 2 cores: 1-2 s of a 19 s matrix). Messages below 16 KiB
 * are filled and checked whole in every trial. --corrupt-payload damages
 * the last byte of trial 1's messages and leaves the last block's stamp
 * of trial 2 unwritten (both must be reported).
 *
 * --schedule FILE: instead of the N-1 shift rounds, the rounds of FILE,
 * one per line: a label, then the round's concurrent flows as SRC:DST
 * (node names, or #R for rank R), e.g.
 *
 *   I1 n1:n2 n2:n3 n3:n1 n4:n5 n5:n6 n6:n4
 *   X1 n1:n4 n2:n5 n3:n6 n4:n1 n5:n2 n6:n3
 *
 * (clustergate.links.topology.rounds.schedule_text writes it from the
 * declared topology). In a round a rank sends at most once and receives
 * at most once; flows that name a node outside the job are left out
 * (counted on stderr), and every
 * node of the job must send and receive in some round. Lines carry
 * round=<label>. Blank lines and lines starting with '#' are skipped.
 *
 * --late-sender-us N (test switch): with --pairs, each sender starts N us
 * after the barrier; the receiver's figure must not count them.
 *
 * usage: cg_linkmatrix [--bytes 4M] [--no-split] [--pairs S-D,...]
 *        [--schedule FILE] [--any-placement (allow several ranks per node: a rank matrix,
 *        for tests)] [harness options: --trials ...]
 */
#include "cg_harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAMP_BLOCK 4096           /* one stamp per block */
#define STAMP_MIN_BYTES (4 * STAMP_BLOCK)   /* below: whole, every trial */
#define FULL_TRIAL 1                 /* checked whole (if it exists) */

typedef struct {
    size_t bytes;
    int to, from;             /* partners of this rank in the round */
    int do_send, do_recv;     /* half rounds: only one direction */
    int stamped;              /* payload by stamps (bytes >= STAMP_MIN) */
    int damaged;              /* --corrupt-payload: last byte flipped */
    int go;                   /* --pairs: timed from the sender's word */
    long late_us;             /* --late-sender-us (test switch) */
    unsigned char *sbuf, *rbuf;
    double recv_dt;           /* this trial: start -> receive complete */
    double *recv_times;       /* per trial */
} link_round;

/* The stamp of block b of a message from src in trial t: the three
 * packed into distinct bit fields, then mixed by a bijection (the
 * splitmix64 finalizer), so any difference changes the stamp. */
static uint64_t stamp_of(int src, int t, size_t b)
{
    uint64_t z = ((uint64_t)src << 42) ^ ((uint64_t)t << 21) ^ (uint64_t)b;
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t stamp_blocks(size_t n)
{
    return n / STAMP_BLOCK + (n % STAMP_BLOCK >= sizeof(uint64_t));
}

/* Writes the stamps of (src, t) into buf; poison: their complements
 * (what a receive buffer holds until the message lands) */
static void put_stamps(unsigned char *buf, size_t n, int src, int t,
                       int poison)
{
    size_t nb = stamp_blocks(n);
    for (size_t b = 0; b < nb; ++b) {
        uint64_t s = stamp_of(src, t, b);
        if (poison)
            s = ~s;
        memcpy(buf + b * STAMP_BLOCK, &s, sizeof s);
    }
}

static void payload_error(const link_round *this_round, size_t at,
                          unsigned want, unsigned got, int t)
{
    printf("CG_ERROR kind=payload pattern=linkmatrix rank=%d node=%s "
           "from=%d offset=%zu expected=%u got=%u trial=%d\n", cg.rank,
           cg.node_names[cg.rank], this_round->from, at, want, got, t);
    fflush(stdout);
    ++cg.errors;
}

/* 1 (reported) if the stamp of block b is not that of (from, t) */
static int bad_stamp(const link_round *this_round, size_t b, int t)
{
    uint64_t want = stamp_of(this_round->from, t, b), got;
    memcpy(&got, this_round->rbuf + b * STAMP_BLOCK, sizeof got);
    if (got == want)
        return 0;
    const unsigned char *w = (const unsigned char *)&want,
                        *g = (const unsigned char *)&got;
    size_t i = 0;
    while (w[i] == g[i])
        ++i;
    payload_error(this_round, b * STAMP_BLOCK + i, w[i], g[i], t);
    return 1;
}

/* The body by 256-byte rows: byte i = 256 k + j of the body of rank src
 * is (src * 131 + 7 i + k) mod 256 (cg_payload_byte, trial 0), and 7 i =
 * 7 j mod 256, so row k of src is row (src * 131 + k) mod 256 of rank 0:
 * 256 distinct rows (64 KiB), compared by memcmp (~10x faster than a
 * byte loop over 4 MB). */
static unsigned char body_rows[256][256];

static void make_body_rows(void)
{
    for (size_t i = 0; i < sizeof body_rows; ++i)
        body_rows[i >> 8][i & 255] = cg_payload_byte(0, 0, i);
}

/* 1 (reported) if a byte of the body in [from, to) is wrong */
static int bad_body(const link_round *this_round, size_t from, size_t to,
                    int t)
{
    const unsigned char *buf = this_round->rbuf;
    int src = this_round->from;
    for (size_t i = from; i < to;) {
        size_t j = i & 255, len = 256 - j < to - i ? 256 - j : to - i;
        const unsigned char *row = body_rows[(src * 131u + (i >> 8)) & 255];
        if (memcmp(buf + i, row + j, len))
            for (size_t at = i; at < i + len; ++at)
                if (buf[at] != cg_payload_byte(src, 0, at)) {
                    payload_error(this_round, at, cg_payload_byte(src, 0, at),
                                  buf[at], t);
                    return 1;
                }
        i += len;
    }
    return 0;
}

/* Every stamp, and one body word per block (which one moves with t); in
 * the full trial every byte */
static void check_stamped(const link_round *this_round, int t)
{
    size_t n = this_round->bytes, nb = stamp_blocks(n);
    int whole = t == FULL_TRIAL || cg.opt.ntrials <= FULL_TRIAL;
    for (size_t b = 0; b * STAMP_BLOCK < n; ++b) {
        size_t at = b * STAMP_BLOCK, end = at + STAMP_BLOCK;
        end = end < n ? end : n;
        size_t body = b < nb ? at + sizeof(uint64_t) : at;
        if ((b < nb && bad_stamp(this_round, b, t)))
            return;
        size_t words = (end - body) / sizeof(uint64_t);
        if (whole && bad_body(this_round, body, end, t))
            return;
        if (whole || words == 0)
            continue;
        size_t w = body + (b * 131 + (size_t)t * 977) % words * 8;
        if (bad_body(this_round, w, w + 8, t))
            return;
    }
}

/* --corrupt-payload: trial 1's last byte flipped (undone after), trial
 * 2's last stamp left as in trial 1 */
static void corrupt_stamped(link_round *this_round, int t)
{
    size_t n = this_round->bytes;
    if (this_round->damaged || t == 1)
        this_round->sbuf[n - 1] ^= 0x5a;
    this_round->damaged = t == 1;
    if (t == 2) {
        uint64_t s = stamp_of(cg.rank, 1, stamp_blocks(n) - 1);
        memcpy(this_round->sbuf + (stamp_blocks(n) - 1) * STAMP_BLOCK, &s,
               sizeof s);
    }
}

static void prep(void *v, int t)
{
    link_round *this_round = v;
    if (!this_round->stamped) {
        cg_fill(this_round->sbuf, this_round->bytes, cg.rank, t);
        memset(this_round->rbuf, 0, this_round->bytes);
        return;
    }
    put_stamps(this_round->sbuf, this_round->bytes, cg.rank, t, 0);
    if (cg.opt.corrupt)
        corrupt_stamped(this_round, t);
    if (!this_round->do_recv)
        return;
    if (t == FULL_TRIAL || cg.opt.ntrials <= FULL_TRIAL)
        memset(this_round->rbuf, 0, this_round->bytes);
    else
        put_stamps(this_round->rbuf, this_round->bytes, this_round->from, t,
                   1);
}

/* tag of the empty message that starts a pair timed alone */
#define READY_TAG 8

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
    /* A pair alone: the receiver's clock starts when the sender says it
     * starts, not when the barrier lets the receiver go: ranks leave a
     * barrier at different times. Timed from it, rank 0 of a 6-node
     * emulated job under srun received at 0.965-0.987x of the pairs
     * among the others (three series of 15-20 launches), on this word
     * at 1.006x. The sender sends on at once: a reply ("go") would add
     * its wake-up to every trial (launch to launch spread 0.057 against
     * 0.013 with the word alone). */
    if (this_round->late_us && this_round->do_send)
        usleep((useconds_t)this_round->late_us);
    if (this_round->go && this_round->do_send)
        MPI_Send(NULL, 0, MPI_BYTE, this_round->to, READY_TAG,
                 MPI_COMM_WORLD);
    if (this_round->go && this_round->do_recv) {
        MPI_Recv(NULL, 0, MPI_BYTE, this_round->from, READY_TAG,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t0 = MPI_Wtime();
    }
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

    if (this_round->stamped)
        check_stamped(this_round, t);
    else
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
    const char *schedule;     /* --schedule FILE, else NULL */
    long late_sender_us;      /* test switch, see parse_options */
} link_options;

/* --schedule: the rounds, their flows as rank pairs */
typedef struct {
    int nrounds;
    char (*label)[32];
    int *first;               /* round i: flows first[i]..first[i+1]-1 */
    int *src, *dst;
} link_schedule;

/* The rank of a schedule token (a node name or #R), -1: not in the job */
static int rank_of_token(const char *tok)
{
    if (tok[0] == '#') {
        char *end;
        long r = strtol(tok + 1, &end, 10);
        if (*end || end == tok + 1 || r < 0 || r >= cg.size)
            cg_die("--schedule: bad rank token '%s' (ranks 0..%d)", tok,
                   cg.size - 1);
        return (int)r;
    }
    for (int r = 0; r < cg.size; ++r)
        if (!strcmp(cg.node_names[r], tok))
            return r;
    return -1;
}

static void *grow(void *p, size_t n, size_t size)
{
    p = realloc(p, n * size);
    if (!p)
        cg_die("out of memory reading the schedule");
    return p;
}

/* long: one pass over the file (labels, flows, their ranks), then the
 * checks of each round and of the coverage, each with its error */
static link_schedule read_schedule(const char *path)
{
    link_schedule s = {0, NULL, NULL, NULL, NULL};
    FILE *fp = fopen(path, "r");
    if (!fp)
        cg_die("--schedule: cannot open %s", path);
    size_t cap = 0, nflows = 0, rcap = 0;
    long dropped = 0;
    char line[1 << 16], *save;
    int lineno = 0;
    s.first = grow(NULL, 1, sizeof(int));
    s.first[0] = 0;
    while (fgets(line, sizeof line, fp)) {
        ++lineno;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n')
            cg_die("--schedule: %s:%d: line longer than %zu bytes", path,
                   lineno, sizeof line - 2);
        char *tok = strtok_r(line, " \t\r\n", &save);
        if (!tok || tok[0] == '#')
            continue;
        if (strlen(tok) >= 32 || strchr(tok, ':'))
            cg_die("--schedule: %s:%d: bad round label '%s'", path, lineno,
                   tok);
        if ((size_t)s.nrounds + 1 >= rcap) {
            rcap = rcap ? 2 * rcap : 64;
            s.label = grow(s.label, rcap, sizeof *s.label);
            s.first = grow(s.first, rcap + 1, sizeof(int));
        }
        snprintf(s.label[s.nrounds], sizeof s.label[0], "%s", tok);
        while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
            char *colon = strchr(tok, ':');
            if (!colon || colon == tok || !colon[1])
                cg_die("--schedule: %s:%d: expected SRC:DST, got '%s'",
                       path, lineno, tok);
            *colon = '\0';
            int a = rank_of_token(tok), b = rank_of_token(colon + 1);
            if (a < 0 || b < 0) {
                ++dropped;
                continue;
            }
            if (a == b)
                cg_die("--schedule: %s:%d: flow %s:%s from a node to "
                       "itself", path, lineno, tok, colon + 1);
            if (nflows + 1 > cap) {
                cap = cap ? 2 * cap : 1024;
                s.src = grow(s.src, cap, sizeof(int));
                s.dst = grow(s.dst, cap, sizeof(int));
            }
            s.src[nflows] = a;
            s.dst[nflows++] = b;
        }
        if ((size_t)s.first[s.nrounds] < nflows)
            s.first[++s.nrounds] = (int)nflows;     /* empty: skipped */
    }
    fclose(fp);
    if (s.nrounds == 0)
        cg_die("--schedule: %s has no flow between nodes of this job",
               path);

    /* a rank sends and receives at most once per round, and every rank
     * sends and receives in some round */
    int *sends = calloc(cg.size, sizeof(int)),
        *recvs = calloc(cg.size, sizeof(int)),
        *seen = calloc(2 * (size_t)cg.size, sizeof(int));
    if (!sends || !recvs || !seen)
        cg_die("out of memory checking the schedule");
    for (int i = 0; i < s.nrounds; ++i) {
        for (int f = s.first[i]; f < s.first[i + 1]; ++f) {
            if (seen[2 * s.src[f]] == i + 1 || seen[2 * s.dst[f] + 1] == i + 1)
                cg_die("--schedule: round %s: node %s (rank %d) %s twice", s.label[i],
                       cg.node_names[seen[2 * s.src[f]] == i + 1 ?
                                     s.src[f] : s.dst[f]],
                       seen[2 * s.src[f]] == i + 1 ? s.src[f] : s.dst[f],
                       seen[2 * s.src[f]] == i + 1 ? "sends" : "receives");
            seen[2 * s.src[f]] = seen[2 * s.dst[f] + 1] = i + 1;
            ++sends[s.src[f]];
            ++recvs[s.dst[f]];
        }
    }
    for (int r = 0; r < cg.size; ++r)
        if (!sends[r] || !recvs[r])
            cg_die("--schedule: node %s (rank %d) never %s in %s",
                   cg.node_names[r], r, sends[r] ? "receives" : "sends",
                   path);
    free(sends);
    free(recvs);
    free(seen);
    if (dropped && cg.rank == 0)
        fprintf(stderr, "cg_linkmatrix: --schedule: %ld flows name nodes "
                "outside this job, left out\n", dropped);
    return s;
}

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
                        .npairs = 0, .pair_src = NULL, .pair_dst = NULL,
                        .schedule = NULL, .late_sender_us = 0};
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            opt.bytes = cg_parse_size(argv[++i], "--bytes", 1, 2000000000);
        else if (!strcmp(argv[i], "--no-split"))
            opt.split = 0;
        else if (!strcmp(argv[i], "--pairs") && i + 1 < argc)
            parse_pairs(&opt, argv[++i]);
        else if (!strcmp(argv[i], "--schedule") && i + 1 < argc)
            opt.schedule = argv[++i];
        else if (!strcmp(argv[i], "--any-placement"))
            opt.any_placement = 1;     /* tests on one machine */
        else if (!strcmp(argv[i], "--late-sender-us") && i + 1 < argc)
            /* test switch: the sender of a pair alone starts this late
             * after the barrier (its receiver must not count it) */
            opt.late_sender_us = (long)cg_parse_size(argv[++i],
                                                     "--late-sender-us", 0,
                                                     10000000);
        else
            cg_die("unknown argument '%s' (see the header of "
                   "cg_linkmatrix.c)", argv[i]);
    }

    if (opt.schedule && opt.npairs)
        cg_die("--schedule and --pairs exclude each other");
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
    this_round->go = 0;
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
    this_round->go = 1;
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

/* --schedule: round i, this rank's partners (idle if it has none), one
 * CG line per flow from its receiver's times */
static void time_scheduled(const cg_measurement *m, link_round *this_round,
                           double *all_times, double *unused,
                           const link_schedule *s, int i)
{
    int nt = cg.opt.ntrials;
    this_round->do_send = this_round->do_recv = 0;
    this_round->to = this_round->from = -1;
    this_round->go = 0;
    for (int f = s->first[i]; f < s->first[i + 1]; ++f) {
        if (s->src[f] == cg.rank) {
            this_round->to = s->dst[f];
            this_round->do_send = 1;
        }
        if (s->dst[f] == cg.rank) {
            this_round->from = s->src[f];
            this_round->do_recv = 1;
        }
    }
    cg_time_trials(m, unused);
    MPI_Gather(this_round->recv_times, nt, MPI_DOUBLE, all_times, nt,
               MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int f = s->first[i]; f < s->first[i + 1]; ++f) {
        if (cg.rank == 0) {
            char extra[128];
            snprintf(extra, sizeof extra, "round=%s src_rank=%d "
                     "dst_rank=%d", s->label[i], s->src[f], s->dst[f]);
            report_pair(m, all_times, s->src[f], s->dst[f], extra);
        }
        ++cg.measurements;
    }
}

int main(int argc, char **argv)
{
    cg_init(&argc, &argv, "cg_linkmatrix");
    link_options opt = parse_options(argc, argv);

    int n = cg.size, nt = cg.opt.ntrials;
    link_round this_round;
    memset(&this_round, 0, sizeof this_round);
    this_round.bytes = opt.bytes;
    this_round.late_us = opt.late_sender_us;
    this_round.sbuf = malloc(opt.bytes);
    this_round.rbuf = malloc(opt.bytes);
    this_round.recv_times = calloc(nt, sizeof(double));
    double *all_times = cg.rank == 0 ? malloc(sizeof(double) * nt * n) : NULL;
    double *unused = malloc(sizeof(double) * nt);
    if (!this_round.sbuf || !this_round.rbuf || !this_round.recv_times ||
        !unused || (cg.rank == 0 && !all_times))
        cg_die("out of memory for %zu-byte messages", opt.bytes);
    this_round.stamped = opt.bytes >= STAMP_MIN_BYTES;
    if (this_round.stamped) {       /* the body, once (see the header) */
        make_body_rows();
        for (size_t i = 0; i < opt.bytes; ++i)
            this_round.sbuf[i] = cg_payload_byte(cg.rank, 0, i);
    }

    cg_measurement m = {
        .pattern = "linkmatrix", .bytes = opt.bytes, .active = 1, .reps = 1,
        .prepare = prep, .run = op_round, .verify = verify,
        .ctx = &this_round,
    };

    link_schedule sched = {0, NULL, NULL, NULL, NULL};
    if (opt.schedule)
        sched = read_schedule(opt.schedule);
    for (int i = 0; i < sched.nrounds; ++i)
        time_scheduled(&m, &this_round, all_times, unused, &sched, i);

    for (int i = 0; i < opt.npairs; ++i)
        time_alone(&m, &this_round, all_times, unused, i, opt.pair_src[i],
                   opt.pair_dst[i]);

    /* Round k = n/2 (n even) pairs the nodes mutually: both directions
     * would share one connection, unlike every other round, so that round
     * is timed in two halves, one direction each (--no-split: together) */
    for (int k = 1; k < (opt.npairs || opt.schedule ? 1 : n); ++k) {
        int split_mutual = 2 * k == n && opt.split;
        for (int half = 0; half < (split_mutual ? 2 : 1); ++half) {
            set_partners(&this_round, k, half, split_mutual);
            cg_time_trials(&m, unused);
            MPI_Gather(this_round.recv_times, nt, MPI_DOUBLE, all_times, nt,
                       MPI_DOUBLE, 0, MPI_COMM_WORLD);
            report_round(&m, all_times, k, half, split_mutual);
        }
    }

    free(sched.label);
    free(sched.first);
    free(sched.src);
    free(sched.dst);
    free(opt.pair_src);
    free(opt.pair_dst);
    free(unused);
    free(all_times);
    free(this_round.recv_times);
    free(this_round.sbuf);
    free(this_round.rbuf);
    return cg_finish();
}
