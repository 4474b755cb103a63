/* The clustergate timing harness, shared by every program of ours.
 *
 * One measurement = ntrials trials. Per trial: prepare (untimed), cache
 * flush (untimed), barrier, time the operation on every rank, barrier,
 * verify (untimed). The first trial is dropped (warm-up). Per trial the
 * maximum over the ranks is taken (the slowest rank decides how long a
 * parallel step takes), then the spike filter of cg_stats.h is applied.
 *
 * With --target-rse X (and --min-trials F), a measurement stops on its
 * noise: after F trials (the warm-up not counted), then every
 * CG_CHECK_EVERY, rank 0 computes the statistics of the trials so far and
 * stops once their relative standard error is at most X; --trials stays
 * the cap. The decision is broadcast between trials (untimed), so every
 * rank runs the same trials. trials= in the CG line says how many ran.
 * Without --target-rse every trial runs (the default).
 *
 * Output: one line per measurement on rank 0,
 *   CG pattern=<p> bytes=<b> ranks=<N> ppn=<k> nodes=<n> peer=<j|-> src=<node>
 *      dst=<node|-> t_us=<mean> med_us=.. min_us=.. max_us=.. bw_MBps=<|->
 *      trials=<n> kept=<n> filtered=<fraction> [extra key=value ...]
 * Times are per message (one way) where msgs_per_op says so.
 * errors as  CG_ERROR kind=<k> ...  and, at the end,
 *   CG_DONE program=<name> measurements=<n> errors=<n>
 * MB is 10^6 bytes, as in the studies; times are per operation.
 *
 * Sizes on the command line (every program, every option: --sizes,
 * --bytes, --array-bytes, --max-bytes, --flush-bytes ...) are read by
 * cg_parse_size() alone: K, M, G are decimal (10^3, 10^6, 10^9 bytes, as
 * MB in MB/s and the studies), Ki, Mi, Gi binary (2^10, 2^20, 2^30).
 * The CG lines always give sizes as plain byte counts.
 */
#ifndef CG_HARNESS_H
#define CG_HARNESS_H

#include <mpi.h>
#include <stddef.h>

#include "cg_stats.h"

#define CG_NODE_NAME_LEN 64

typedef struct {
    int ntrials;          /* trials incl. the dropped first one (--trials);
                           * the cap when stopping on the noise */
    int min_trials;       /* --min-trials: floor before stopping (default
                           * 10; only with target_rse) */
    double target_rse;    /* --target-rse: stop once the relative standard
                           * error is at most this; 0 = run every trial */
    int reps;             /* operations per trial (default 1, as the
                           * studies: one operation between barriers) */
    size_t flush_bytes;   /* cache flush buffer; 0 = 2x last-level cache */
    int corrupt;          /* --corrupt-payload: test switch, see cg_fill */
    int finalize_s;       /* --finalize-timeout: seconds a rank may take
                           * to finish after the last result (default
                           * CG_FINALIZE_TIMEOUT_S; 0: no watchdog) */
    int hang_after_done;  /* --hang-after-done: test switch, the ranks
                           * other than 0 spin after CG_DONE */
    int quiet;
} cg_options;

/* What every program knows about the job once cg_init() returned */
typedef struct {
    int rank, size;
    int nodes;            /* distinct node names */
    int ppn;              /* most ranks on any one node */
    int node_id;          /* index of this rank's node, 0..nodes-1 */
    int local_rank;       /* index of this rank among its node's ranks */
    char (*node_names)[CG_NODE_NAME_LEN];   /* per rank */
    cg_options opt;
    long measurements;
    long errors;          /* local count of payload/verification errors */
    const char *program;
} cg_context;

extern cg_context cg;

/* One measurement. Callbacks get ctx and the trial index (0-based). */
typedef struct {
    const char *pattern;
    size_t bytes;             /* message size (0: none) */
    int active;               /* does this rank take part? */
    int reps;                 /* operations per trial (>=1) */
    double msgs_per_op;       /* reported time = op time / this (0: 1);
                               * 2 for a ping-pong round trip -> one-way */
    int peer;                 /* rank reported as peer, -1 for none */
    int src;                  /* rank whose node is reported as src */
    int dst;                  /* rank whose node is reported as dst, -1 */
    double bw_bytes;          /* bytes per operation for bandwidth; 0: none */
    void (*prepare)(void *ctx, int trial);
    void (*run)(void *ctx);   /* one operation */
    void (*verify)(void *ctx, int trial);
    void *ctx;
    const char *extra;        /* extra "key=value ..." fields, or NULL */
} cg_measurement;

/* MPI_Init, options (removes the ones it knows from argv), node layout */
void cg_init(int *argc, char ***argv, const char *program);
/* cg_init with another default for --trials than 51 */
void cg_init_trials(int *argc, char ***argv, const char *program,
                    int ntrials);
/* Seconds a rank may take to finish (MPI_Finalize) once CG_DONE is out:
 * then its watchdog names the hang on stderr and ends the rank with
 * CG_EXIT_HUNG, its results complete. A job whose ranks spin in the MPI
 * library after their last result (seen: MPICH 4.0.2 over UCX's tcp)
 * otherwise held its nodes to the job's time limit. */
#define CG_FINALIZE_TIMEOUT_S 20

/* The default cache flush before each trial: twice the last-level cache,
 * at most this. A VM reports its host's whole L3 (300 MiB seen on a
 * 2-core guest) and a stacked-cache CPU has over 1 GiB: twice that,
 * written and read by every rank before every trial, made the 4-node
 * contention suite on such a guest run 10 min instead of 2 (memory-bound
 * flushes, not the network). The messages it must evict are at most a few
 * MiB; --flush-bytes still sets any size. */
#define CG_FLUSH_DEFAULT_MAX ((size_t)64 << 20)
#define CG_EXIT_HUNG 4

/* Prints CG_DONE, finalizes MPI and returns the exit status (3 on errors);
 * arms the finalize watchdog (CG_FINALIZE_TIMEOUT_S) */
int cg_finish(void);

/* A measurement of pattern: bytes per message, every rank active, one
 * operation per trial, no peer, source rank 0, no destination; the
 * caller sets the callbacks and what differs. */
cg_measurement cg_measurement_of(const char *pattern, size_t bytes);

/* Times every trial on this rank: times[t] = seconds per operation. */
void cg_time_trials(const cg_measurement *m, double *times);

/* Collective: runs the measurement, max over ranks per trial, statistics
 * (valid on rank 0); prints nothing and counts no measurement. Stops on
 * the noise with --target-rse (see above). */
cg_stats cg_measure_quiet(const cg_measurement *m);

/* cg_measure_quiet, then rank 0 prints the CG line and the measurement is
 * counted. */
cg_stats cg_measure(const cg_measurement *m);

/* Prints the CG line for given statistics (rank 0 only) */
void cg_report(const cg_measurement *m, const cg_stats *st);

/* Payload: byte i of a message from rank src in trial t. */
static inline unsigned char cg_payload_byte(int src, int trial, size_t i)
{
    /* inline: filled and checked byte by byte around every trial, a call
     * per byte made the 4 MB fill and check of the link matrix ~3x slower
     * (they are untimed, but take the node's cores from the other ranks) */
    return (unsigned char)(src * 131u + trial * 17u + i * 7u + (i >> 8));
}

/* Fills buf as sender src; applies the --corrupt-payload test switch. */
void cg_fill(unsigned char *buf, size_t n, int src, int trial);
/* Checks buf as received from src; prints CG_ERROR and counts a mismatch. */
int cg_check(const unsigned char *buf, size_t n, int src, int trial,
             const char *pattern);

/* Touches a buffer larger than the last-level cache */
void cg_flush_cache(void);
size_t cg_llc_bytes(void);

/* A size argument: number [K|M|G|Ki|Mi|Gi] (K = 10^3, Ki = 2^10, ...).
 * Dies with one line naming the option unless min <= size <= max. */
size_t cg_parse_size(const char *text, const char *option, size_t min,
                     size_t max);

/* Fatal usage or setup error: message on rank 0 / stderr and abort */
void cg_die(const char *fmt, ...);

#endif
