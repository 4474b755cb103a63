/* cg_nic: contention for a node's network interface.
 *
 * Node A = the node of rank 0. Sender s1 = rank 0, sender s2 = the next
 * rank on node A (needs >= 2 ranks on A). Receiver r1 = the first rank of
 * another node B, r2 = the rank of a third node C with the same local rank
 * as s2 (else C's first rank); needs >= 3 nodes.
 * Measurements (one stream = `bytes` sent, then a 1-byte ack; the sender
 * times it, so the time covers delivery):
 *   nic_single  stream=1  s1 -> r1 alone
 *   nic_single  stream=2  s2 -> r2 alone
 *   nic_pair    stream=1 and stream=2: both at once, started by one barrier
 * The pair lines carry ratio = bandwidth in the pair / bandwidth alone of
 * that stream, and pair_ratio = time alone (mean of both streams) / time
 * until BOTH pair streams are done (robust against unfair sharing: the
 * link has to carry both messages). Expected on rate-limited links: 0.5
 * when both streams leave A through one interface, 1.0 through two.
 *
 * Which interface a stream uses is decided outside: MPI's own settings per
 * rank (OpenMPI's btl_tcp_if_include, or UCX_NET_DEVICES under its UCX
 * PML, set per rank by a wrapper, see checks/nic/cg_nic_ifaces.sh). To show what actually happened, the
 * senders read the transmit counters of node A's interfaces
 * (/proc/net/dev of their network namespace) around each measurement and
 * the lines carry tx_MB_<if>= for every interface that sent > 1% of the
 * payload, and iface1=/iface2= the senders' interface setting.
 *
 * usage: cg_nic [--bytes SIZE (default 8M; K, M = 10^3, 10^6)]
 *        [harness options; --trials default 7 here]
 */
#include "cg_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t bytes;
    int s1, s2, r1, r2;
    int both;               /* pair measurement: both streams at once */
    int only;               /* single measurement: stream 1 or 2 */
    unsigned char *buf, ack;
} stream_pair;

#define MAXIF 16

typedef struct {
    int n;
    char name[MAXIF][32];
    unsigned long long tx[MAXIF];
} txcount;

/* Transmit byte counters of this process's network namespace (what the
 * node sent per interface); /proc/net/dev follows the namespace, whereas
 * /sys/class/net shows the namespace that mounted /sys. */
static void read_tx(txcount *c)
{
    c->n = 0;
    FILE *f = fopen("/proc/net/dev", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f) && c->n < MAXIF) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;                   /* the two header lines */
        *colon = 0;
        char *name = line;
        while (*name == ' ')
            ++name;
        unsigned long long v[9];
        if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu",
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
                   &v[8]) != 9 || !strcmp(name, "lo"))
            continue;
        snprintf(c->name[c->n], sizeof c->name[0], "%.31s", name);
        c->tx[c->n++] = v[8];           /* 9th number: transmitted bytes */
    }
    fclose(f);
}

/* "tx_MB_fab0=12.3 ..." of the interfaces that moved > 1% of `payload` */
static void tx_delta(const txcount *a, const txcount *b, double payload,
                     char *out, size_t len)
{
    out[0] = 0;
    for (int i = 0; i < b->n; ++i)
        for (int j = 0; j < a->n; ++j)
            if (!strcmp(a->name[j], b->name[i])) {
                double mb = (double)(b->tx[i] - a->tx[j]);
                if (mb > 0.01 * payload) {
                    size_t used = strlen(out);
                    snprintf(out + used, len - used, "%stx_MB_%s=%.1f",
                             used ? " " : "", b->name[i], mb / 1e6);
                }
            }
    if (!out[0])
        snprintf(out, len, "tx_MB_none=0");
}

static int stream_of(const stream_pair *streams, int rank, int *peer,
                     int *sender)
{
    int st = 0;
    if (rank == streams->s1 || rank == streams->r1) st = 1;
    if (rank == streams->s2 || rank == streams->r2) st = 2;
    if (!st || (!streams->both && st != streams->only))
        return 0;
    *sender = rank == streams->s1 || rank == streams->s2;
    if (st == 1)
        *peer = *sender ? streams->r1 : streams->s1;
    else
        *peer = *sender ? streams->r2 : streams->s2;
    return st;
}

static void prep(void *v, int t)
{
    stream_pair *streams = v;
    int peer, sender;
    if (stream_of(streams, cg.rank, &peer, &sender) && sender)
        cg_fill(streams->buf, streams->bytes, cg.rank, t);
}

static void op_stream(void *v)
{
    stream_pair *streams = v;
    int peer, sender;
    if (!stream_of(streams, cg.rank, &peer, &sender))
        return;
    if (sender) {
        MPI_Send(streams->buf, (int)streams->bytes, MPI_BYTE, peer, 0,
                 MPI_COMM_WORLD);
        MPI_Recv(&streams->ack, 1, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(streams->buf, (int)streams->bytes, MPI_BYTE, peer, 0,
                 MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        MPI_Send(&streams->ack, 1, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
}

static void verify(void *v, int t)
{
    stream_pair *streams = v;
    int peer, sender;
    if (stream_of(streams, cg.rank, &peer, &sender) && !sender)
        cg_check(streams->buf, streams->bytes, peer, t,
                 streams->both ? "nic_pair"
                                                    : "nic_single");
}

/* Times on every rank; returns on rank 0 the trial times of rank `who` */
static void times_of(const cg_measurement *m, const int *who, int nwho,
                     double **out)
{
    int n = cg.opt.ntrials;
    double *local = malloc(sizeof(double) * n);
    double *all = cg.rank == 0 ? malloc(sizeof(double) * n * cg.size) : 0;
    cg_time_trials(m, local);
    MPI_Gather(local, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (cg.rank == 0)
        for (int k = 0; k < nwho; ++k) {
            out[k] = malloc(sizeof(double) * n);
            memcpy(out[k], all + (size_t)who[k] * n, sizeof(double) * n);
        }
    free(local);
    free(all);
}

static const char *iface_of_rank(int rank)
{
    /* every rank sends its setting to rank 0 once (see main) */
    static char (*names)[32];
    if (!names) {
        char mine[32];
        /* under the UCX PML the TCP BTL's setting is not read: UCX's is */
        const char *pml = getenv("OMPI_MCA_pml");
        const char *e = pml && strcmp(pml, "ucx") == 0
            ? getenv("UCX_NET_DEVICES") : NULL;
        if (!e) e = getenv("OMPI_MCA_btl_tcp_if_include");
        if (!e) e = getenv("FI_TCP_IFACE");
        snprintf(mine, sizeof mine, "%s", e && *e ? e : "-");
        names = calloc(cg.size, 32);
        MPI_Gather(mine, 32, MPI_CHAR, names, 32, MPI_CHAR, 0,
                   MPI_COMM_WORLD);
    }
    return rank >= 0 && cg.rank == 0 ? names[rank] : "-";
}

static void report_stream(const char *pattern, int stream,
                          const stream_pair *streams,
                          const cg_stats *st, const char *more)
{
    cg_measurement m = cg_measurement_of(pattern, streams->bytes);
    m.peer = stream == 1 ? streams->r1 : streams->r2;
    m.src = stream == 1 ? streams->s1 : streams->s2;
    m.dst = m.peer;
    m.bw_bytes = (double)streams->bytes;
    char extra[512];
    snprintf(extra, sizeof extra, "stream=%d sender=%d iface=%s %s", stream,
             m.src, iface_of_rank(m.src), more);
    m.extra = extra;
    cg_report(&m, st);
}

static int layout(stream_pair *streams)
{
    streams->s1 = 0;
    streams->s2 = streams->r1 = streams->r2 = -1;
    for (int r = 1; r < cg.size; ++r) {
        int same = !strcmp(cg.node_names[r], cg.node_names[0]);
        if (same && streams->s2 < 0)
            streams->s2 = r;
        else if (!same && streams->r1 < 0)
            streams->r1 = r;
    }
    /* r2: on a third node, preferably with the local rank of s2, so that
     * a per-local-rank interface setting puts s2 and r2 on one fabric */
    int want = 0;
    for (int r = 0; r < streams->s2; ++r)
        want += !strcmp(cg.node_names[r], cg.node_names[0]);
    int third = -1;
    for (int r = 1; r < cg.size && streams->r1 >= 0 && third < 0; ++r)
        if (strcmp(cg.node_names[r], cg.node_names[0]) &&
            strcmp(cg.node_names[r], cg.node_names[streams->r1]))
            third = r;
    streams->r2 = third;
    for (int r = third, lr = 0; third >= 0 && r < cg.size; ++r)
        if (!strcmp(cg.node_names[r], cg.node_names[third])) {
            if (lr++ == want) {
                streams->r2 = r;
                break;
            }
        }
    return streams->s2 >= 0 && streams->r1 >= 0 && streams->r2 >= 0;
}

static cg_stats stats_of(double *t)
{
    cg_stats st;
    cg_stats_compute(t + 1, cg.opt.ntrials - 1, CG_SPIKE_FACTOR,
                     CG_MAX_FILTERED, &st);
    return st;
}

/* Rank 0: the two streams alone (nic_single) and at once (nic_pair, with
 * the slowdown of each and of the pair), from the trial times of stream 1
 * alone (alone1), stream 2 alone (alone2) and both (pair) */
static void report_all(const stream_pair *streams, double *const alone1[2],
                       double *const alone2[2], double *const pair[2],
                       char tx[3][256])
{
    cg_stats a1 = stats_of(alone1[0]), a2 = stats_of(alone2[1]);
    cg_stats p1 = stats_of(pair[0]), p2 = stats_of(pair[1]);
    /* per trial: the pair is done when both streams are */
    int n = cg.opt.ntrials;
    double *both = malloc(sizeof(double) * n);
    for (int t = 0; t < n; ++t)
        both[t] = pair[0][t] > pair[1][t] ? pair[0][t] : pair[1][t];
    cg_stats pb = stats_of(both);
    double alone = 0.5 * (a1.mean + a2.mean);
    report_stream("nic_single", 1, streams, &a1, tx[0]);
    report_stream("nic_single", 2, streams, &a2, tx[1]);
    char more[400];
    const char *if1 = iface_of_rank(streams->s1),
        *if2 = iface_of_rank(streams->s2);
    const char *shared = strcmp(if1, if2) ? "no" : "yes";
    snprintf(more, sizeof more, "ratio=%.4f pair_ratio=%.4f "
             "shared_iface=%s %s", a1.mean / p1.mean, alone / pb.mean,
             shared, tx[2]);
    report_stream("nic_pair", 1, streams, &p1, more);
    snprintf(more, sizeof more, "ratio=%.4f pair_ratio=%.4f "
             "shared_iface=%s %s", a2.mean / p2.mean, alone / pb.mean,
             shared, tx[2]);
    report_stream("nic_pair", 2, streams, &p2, more);
    free(both);
}

int main(int argc, char **argv)
{
    cg_init_trials(&argc, &argv, "cg_nic", 7);

    stream_pair streams;
    memset(&streams, 0, sizeof streams);
    streams.bytes = 8000000;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc)
            streams.bytes = cg_parse_size(argv[++i], "--bytes", 1,
                                          2000000000);
        else
            cg_die("unknown argument '%s' (see the header of cg_nic.c)",
                   argv[i]);
    }

    iface_of_rank(-1);              /* collective: gather the settings */
    if (!layout(&streams)) {
        if (cg.rank == 0)
            printf("CG_SKIP pattern=nic_pair reason=needs 2 ranks on the "
                   "first node and ranks on 2 other nodes (ranks=%d ppn=%d "
                   "nodes=%d)\n", cg.size, cg.ppn, cg.nodes);
        return cg_finish();
    }
    streams.buf = malloc(streams.bytes);
    if (!streams.buf)
        cg_die("cannot allocate %zu bytes", streams.bytes);

    cg_measurement m = {
        .pattern = "nic", .bytes = streams.bytes, .reps = 1, .peer = -1,
        .dst = -1, .prepare = prep, .run = op_stream, .verify = verify,
        .ctx = &streams, .active = 1,
    };

    /* stream 1 alone, stream 2 alone, both at once; the interface
     * counters of sender 1 (rank 0) around each */
    int senders[2] = {streams.s1, streams.s2};
    double *alone1[2] = {0}, *alone2[2] = {0}, *pair[2] = {0};
    txcount before, after;
    char tx[3][256];
    double payload = (double)streams.bytes * cg.opt.ntrials;
    for (int k = 0; k < 3; ++k) {
        streams.both = k == 2;
        streams.only = k == 0 ? 1 : 2;
        if (cg.rank == streams.s1)
            read_tx(&before);
        times_of(&m, senders, 2, k == 0 ? alone1 : k == 1 ? alone2 : pair);
        if (cg.rank == streams.s1) {
            read_tx(&after);
            tx_delta(&before, &after, payload, tx[k], sizeof tx[k]);
        }
        if (streams.s1 != 0)
            cg_die("rank 0 must be sender 1");
    }

    if (cg.rank == 0)
        report_all(&streams, alone1, alone2, pair, tx);
    cg.measurements += 4;
    free(streams.buf);
    return cg_finish();
}
