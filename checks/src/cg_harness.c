#include "cg_harness.h"

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

cg_context cg;

static unsigned char *flush_buf;
static size_t flush_len;

void cg_die(const char *fmt, ...)
{
    /* One write of the whole line: stderr is unbuffered, so a line made
     * of several fprintf calls reaches mpirun in pieces, and mpirun's own
     * abort banner can land between them (seen under load: the
     * CG_ERROR prefix on one line, the cause on the next). */
    char line[1024];
    int len = snprintf(line, sizeof line, "CG_ERROR kind=fatal program=%s "
                       "rank=%d: ", cg.program ? cg.program : "?", cg.rank);
    va_list ap;
    va_start(ap, fmt);
    if (len >= 0 && (size_t)len < sizeof line - 1)
        len += vsnprintf(line + len, sizeof line - 1 - len, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    fwrite(line, 1, len, stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

size_t cg_parse_size(const char *text, const char *option, size_t min,
                     size_t max)
{
    char *end;
    double value = strtod(text, &end);
    if (end == text || value < 0)
        cg_die("%s: bad size '%s' (a number with an optional K, M, G, Ki, "
               "Mi or Gi)", option, text);

    double unit = 1;
    switch (*end) {
    case 'k': case 'K': unit = 1e3; break;
    case 'm': case 'M': unit = 1e6; break;
    case 'g': case 'G': unit = 1e9; break;
    case '\0': break;
    default:
        cg_die("%s: bad size suffix in '%s' (K, M, G = 10^3, 10^6, 10^9; "
               "Ki, Mi, Gi = 2^10, 2^20, 2^30)", option, text);
    }

    if (*end && end[1] == 'i') {
        unit = unit == 1e3 ? 1024.0 : unit == 1e6 ? 1048576.0 : 1073741824.0;
        ++end;
    }

    if (*end && end[1] != '\0')
        cg_die("%s: bad size suffix in '%s' (K, M, G = 10^3, 10^6, 10^9; "
               "Ki, Mi, Gi = 2^10, 2^20, 2^30)", option, text);

    value *= unit;
    if (value < (double)min || value > (double)max)
        cg_die("%s: size '%s' = %.0f bytes is outside %zu .. %zu", option,
               text, value, min, max);
    return (size_t)value;
}

size_t cg_llc_bytes(void)
{
    /* sysfs is the authority: glibc's sysconf() derives the L3 size from
     * cpuid and can be far off in a VM (384 MiB for a 32 MiB L3 seen) */
    long best = 0;
    for (int idx = 0; idx < 8; ++idx) {
        char path[128];
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (!f)
            break;

        long kb = 0;
        char unit = 'K';
        if (fscanf(f, "%ld%c", &kb, &unit) >= 1) {
            long b = kb * (unit == 'M' ? 1024L * 1024 : 1024L);
            if (b > best)
                best = b;
        }

        fclose(f);
    }

#ifdef _SC_LEVEL3_CACHE_SIZE
    if (best <= 0)
        best = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (best <= 0)
        best = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return best > 0 ? (size_t)best : (size_t)32 << 20;
}

void cg_flush_cache(void)
{
    if (!flush_buf) {
        size_t twice_llc = 2 * cg_llc_bytes();
        flush_len = cg.opt.flush_bytes ? cg.opt.flush_bytes
                  : twice_llc < CG_FLUSH_DEFAULT_MAX ? twice_llc
                                                     : CG_FLUSH_DEFAULT_MAX;
        flush_buf = malloc(flush_len);
        if (!flush_buf)
            cg_die("cannot allocate %zu bytes for the cache flush", flush_len);
    }

    /* Write then read every cache line so no earlier data stays cached */
    static volatile unsigned long sink;
    unsigned long s = sink;
    for (size_t i = 0; i < flush_len; i += 64)
        flush_buf[i] = (unsigned char)i;

    for (size_t i = 0; i < flush_len; i += 64)
        s += flush_buf[i];

    sink = s;
}

/* the program's default for --trials (cg_init_trials) */
static int default_trials = 51;

static void usage_options(void)
{
    if (cg.rank == 0)
        fprintf(stderr,
                "harness options: --trials N (default %d, first dropped;\n"
                "  the cap with --target-rse)\n"
                "  --target-rse X (stop once the relative standard error of\n"
                "  the mean is at most X; default 0: every trial runs)\n"
                "  --min-trials N (trials before stopping; default 10)\n"
                "  --reps N (operations per trial; default by size)\n"
                "  --flush-bytes SIZE (default 2x last-level cache, at most\n"
                "  64 MiB)\n"
                "  --corrupt-payload (test switch: damage one message)\n"
                "  --finalize-timeout S (seconds a rank may take to end\n"
                "  after the last result; default %d, 0: no limit)\n"
                "  --hang-after-done (test switch: ranks > 0 spin after\n"
                "  the last result)\n",
                default_trials, CG_FINALIZE_TIMEOUT_S);
}

/* Consumes the harness options, leaves the program's own in argv */
static void consume_options(int *argc, char ***argv)
{
    int out = 1;
    for (int i = 1; i < *argc; ++i) {
        char *a = (*argv)[i];
        if (!strcmp(a, "--trials") && i + 1 < *argc)
            cg.opt.ntrials = atoi((*argv)[++i]);
        else if (!strcmp(a, "--min-trials") && i + 1 < *argc)
            cg.opt.min_trials = atoi((*argv)[++i]);
        else if (!strcmp(a, "--target-rse") && i + 1 < *argc)
            cg.opt.target_rse = atof((*argv)[++i]);
        else if (!strcmp(a, "--reps") && i + 1 < *argc)
            cg.opt.reps = atoi((*argv)[++i]);
        else if (!strcmp(a, "--flush-bytes") && i + 1 < *argc)
            cg.opt.flush_bytes = cg_parse_size((*argv)[++i], "--flush-bytes",
                                               0, SIZE_MAX);
        else if (!strcmp(a, "--corrupt-payload"))
            cg.opt.corrupt = 1;
        else if (!strcmp(a, "--finalize-timeout") && i + 1 < *argc)
            cg.opt.finalize_s = atoi((*argv)[++i]);
        else if (!strcmp(a, "--hang-after-done"))
            cg.opt.hang_after_done = 1;
        else if (!strcmp(a, "--help-harness")) {
            usage_options();
            MPI_Finalize();
            exit(0);
        }
        else
            (*argv)[out++] = a;
    }

    *argc = out;
    if (cg.opt.ntrials < 2)
        cg_die("--trials must be at least 2 (the first one is dropped)");
    if (cg.opt.min_trials < 2)
        cg_die("--min-trials must be at least 2 (a standard error needs 2)");
    if (cg.opt.target_rse < 0)
        cg_die("--target-rse must be 0 (off) or positive");
}

/* Node layout from the processor names: nodes, ppn, node_id, local_rank */
static void find_node_layout(void)
{
    char me[CG_NODE_NAME_LEN] = {0};
    int len;
    char full[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(full, &len);
    snprintf(me, sizeof me, "%.*s", CG_NODE_NAME_LEN - 1, full);
    cg.node_names = calloc(cg.size, CG_NODE_NAME_LEN);
    MPI_Allgather(me, CG_NODE_NAME_LEN, MPI_CHAR, cg.node_names,
                  CG_NODE_NAME_LEN, MPI_CHAR, MPI_COMM_WORLD);

    int *ids = malloc(sizeof(int) * cg.size);
    int *count = calloc(cg.size, sizeof(int));
    cg.nodes = 0;
    for (int r = 0; r < cg.size; ++r) {
        ids[r] = -1;
        for (int q = 0; q < r; ++q) {
            if (!strcmp(cg.node_names[q], cg.node_names[r])) {
                ids[r] = ids[q];
                break;
            }
        }

        if (ids[r] < 0)
            ids[r] = cg.nodes++;

        if (++count[ids[r]] > cg.ppn)
            cg.ppn = count[ids[r]];
    }

    cg.node_id = ids[cg.rank];
    for (int r = 0; r < cg.rank; ++r)
        if (ids[r] == cg.node_id)
            ++cg.local_rank;

    free(ids);
    free(count);
}

void cg_init(int *argc, char ***argv, const char *program)
{
    cg_init_trials(argc, argv, program, 51);
}

void cg_init_trials(int *argc, char ***argv, const char *program,
                    int ntrials)
{
    MPI_Init(argc, argv);
    memset(&cg, 0, sizeof cg);
    cg.program = program;
    MPI_Comm_rank(MPI_COMM_WORLD, &cg.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &cg.size);
    default_trials = ntrials;
    cg.opt.ntrials = ntrials;
    cg.opt.min_trials = 10;
    cg.opt.finalize_s = CG_FINALIZE_TIMEOUT_S;
    consume_options(argc, argv);
    find_node_layout();
}

cg_measurement cg_measurement_of(const char *pattern, size_t bytes)
{
    cg_measurement m;
    memset(&m, 0, sizeof m);
    m.pattern = pattern;
    m.bytes = bytes;
    m.active = 1;
    m.reps = 1;
    m.peer = -1;
    m.src = 0;
    m.dst = -1;
    return m;
}

/* The watchdog's line, made before it is armed: a signal handler may
 * only write(2) */
static char hung_line[256];
static int hung_len;

static void finalize_hung(int sig)
{
    (void)sig;
    if (hung_len > 0 && write(STDERR_FILENO, hung_line, hung_len) < 0)
        _exit(CG_EXIT_HUNG);
    _exit(CG_EXIT_HUNG);
}

/* Every result is out: a rank that does not end within finalize_s
 * seconds is stopped, naming the hang, instead of spinning until the
 * job's time limit. An alarm in each rank: it needs no other rank, no
 * launcher and no MPI call to fire. */
static void arm_finalize_watchdog(void)
{
    if (cg.opt.finalize_s <= 0)
        return;

    /* Rank 0 waits 2 s longer: when every rank ended at the same
     * instant, OpenMPI 4.1's mpirun left one child unreaped and hung
     * (here 1 run in 4 with 2 ranks); ranks > 0 ending first take the
     * launcher's ordinary abort path, which kills rank 0 (0 hangs in
     * 27 runs with 2 and 4 ranks) */
    int wait_s = cg.opt.finalize_s + (cg.rank == 0 ? 2 : 0);
    const char *host = cg.node_names ? cg.node_names[cg.rank] : "?";
    hung_len = snprintf(hung_line, sizeof hung_line,
                        "CG_ERROR kind=hang program=%s rank=%d: on %s, "
                        "still running %d s after its last result (hung in "
                        "MPI_Finalize?): stopped\n", cg.program, cg.rank,
                        host, wait_s);
    if (hung_len < 0 || (size_t)hung_len >= sizeof hung_line)
        hung_len = (int)sizeof hung_line - 1;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = finalize_hung;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm((unsigned)wait_s);
}

int cg_finish(void)
{
    long errors = 0;
    MPI_Reduce(&cg.errors, &errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (cg.rank == 0) {
        printf("CG_DONE program=%s measurements=%ld errors=%ld\n",
               cg.program, cg.measurements, errors);
        fflush(stdout);
    }

    MPI_Bcast(&errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    arm_finalize_watchdog();
    if (cg.opt.hang_after_done && cg.rank > 0)
        for (volatile unsigned long spin = 0;; ++spin)
            ;

    MPI_Finalize();
    alarm(0);
    return errors ? 3 : 0;
}

void cg_fill(unsigned char *buf, size_t n, int src, int trial)
{
    for (size_t i = 0; i < n; ++i)
        buf[i] = cg_payload_byte(src, trial, i);

    /* Test switch: damage the last byte of one message of trial 1 */
    if (cg.opt.corrupt && trial == 1 && n > 0)
        buf[n - 1] ^= 0x5a;
}

int cg_check(const unsigned char *buf, size_t n, int src, int trial,
             const char *pattern)
{
    for (size_t i = 0; i < n; ++i) {
        unsigned char want = cg_payload_byte(src, trial, i);
        if (buf[i] != want) {
            printf("CG_ERROR kind=payload pattern=%s rank=%d node=%s "
                   "from=%d offset=%zu expected=%u got=%u trial=%d\n",
                   pattern, cg.rank, cg.node_names[cg.rank], src, i,
                   want, buf[i], trial);
            fflush(stdout);
            ++cg.errors;
            return 1;
        }
    }

    return 0;
}

/* One trial on this rank: seconds per operation (0 if not active) */
static double time_trial(const cg_measurement *m, int t)
{
    int reps = m->reps > 0 ? m->reps : 1;
    double per = reps * (m->msgs_per_op > 0 ? m->msgs_per_op : 1.0);
    if (m->active && m->prepare)
        m->prepare(m->ctx, t);

    cg_flush_cache();
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (m->active)
        for (int r = 0; r < reps; ++r)
            m->run(m->ctx);

    double t1 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    if (m->active && m->verify)
        m->verify(m->ctx, t);

    return m->active ? (t1 - t0) / per : 0.0;
}

void cg_time_trials(const cg_measurement *m, double *times)
{
    for (int t = 0; t < cg.opt.ntrials; ++t)
        times[t] = time_trial(m, t);
}

/* Runs trials until rank 0 finds the statistics tight enough
 * (cg_stats_enough) or the cap; worst[] (rank 0) gets the max over the
 * ranks of each trial that ran. Returns the trials run, warm-up included. */
static int time_until_tight(const cg_measurement *m, double *local,
                            double *worst)
{
    int n = cg.opt.ntrials, reduced = 0, t = 0;
    while (t < n) {
        local[t] = time_trial(m, t);
        ++t;
        /* timed trials so far (the warm-up not counted); checked only at
         * check points: one reduction and one broadcast each */
        int k = t - 1;
        if (t < n && (k < cg.opt.min_trials ||
                      (k - cg.opt.min_trials) % CG_CHECK_EVERY))
            continue;

        MPI_Reduce(local + reduced, worst + reduced, t - reduced, MPI_DOUBLE,
                   MPI_MAX, 0, MPI_COMM_WORLD);
        reduced = t;
        if (t == n)
            break;

        int stop = cg.rank == 0 &&
            cg_stats_enough(worst + 1, k, cg.opt.min_trials,
                            cg.opt.target_rse);
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (stop)
            break;
    }

    return t;
}

static void node_of(int rank, char *out, size_t n)
{
    snprintf(out, n, "%s", rank >= 0 ? cg.node_names[rank] : "-");
}

void cg_report(const cg_measurement *m, const cg_stats *st)
{
    char src[CG_NODE_NAME_LEN], dst[CG_NODE_NAME_LEN], peer[16], bw[32];
    node_of(m->src, src, sizeof src);
    node_of(m->dst, dst, sizeof dst);
    if (m->peer >= 0)
        snprintf(peer, sizeof peer, "%d", m->peer);
    else
        strcpy(peer, "-");

    if (m->bw_bytes > 0)
        snprintf(bw, sizeof bw, "%.4f", m->bw_bytes / st->mean / 1e6);
    else
        strcpy(bw, "-");

    printf("CG pattern=%s bytes=%zu ranks=%d ppn=%d nodes=%d peer=%s src=%s "
           "dst=%s t_us=%.4f med_us=%.4f min_us=%.4f max_us=%.4f bw_MBps=%s "
           "trials=%d kept=%d filtered=%.4f%s%s\n",
           m->pattern, m->bytes, cg.size, cg.ppn, cg.nodes, peer, src, dst,
           st->mean * 1e6, st->median * 1e6, st->min * 1e6, st->max * 1e6,
           bw, st->n, st->kept, st->filtered, m->extra ? " " : "",
           m->extra ? m->extra : "");
    fflush(stdout);
}

cg_stats cg_measure_quiet(const cg_measurement *m)
{
    int n = cg.opt.ntrials;
    double *local = malloc(sizeof(double) * n);
    double *worst = malloc(sizeof(double) * n);
    if (cg.opt.target_rse > 0)
        n = time_until_tight(m, local, worst);
    else {
        cg_time_trials(m, local);
        MPI_Reduce(local, worst, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    }

    cg_stats st;
    memset(&st, 0, sizeof st);
    if (cg.rank == 0)   /* worst[0] is the warm-up trial: dropped */
        cg_stats_compute(worst + 1, n - 1, CG_SPIKE_FACTOR, CG_MAX_FILTERED,
                         &st);

    free(local);
    free(worst);
    return st;
}

cg_stats cg_measure(const cg_measurement *m)
{
    cg_stats st = cg_measure_quiet(m);
    if (cg.rank == 0)
        cg_report(m, &st);

    ++cg.measurements;
    return st;
}
