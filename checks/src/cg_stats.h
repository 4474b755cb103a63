/* Trial statistics of the clustergate timing harness.
 *
 * Pure C, no MPI: unit-tested on given trial vectors through cg_stats_cli.
 */
#ifndef CG_STATS_H
#define CG_STATS_H

#include <stddef.h>

/* Defaults of the classic cluster studies */
#define CG_SPIKE_FACTOR   1.8   /* a trial above 1.8x the median is a spike */
#define CG_MAX_FILTERED   0.10  /* ...but never filter more than 10% */

/* Stopping on the noise (--min-trials, --target-rse): the statistics are
 * checked after floor trials, then every CG_CHECK_EVERY trials (each check
 * is a reduction and a broadcast between trials, untimed but not free) */
#define CG_CHECK_EVERY    5

typedef struct {
    int n;              /* trials given (the first trial already dropped) */
    int kept;           /* trials left after the spike filter */
    double mean;        /* mean of the kept trials: the reported value */
    double median;      /* over all n trials */
    double min;         /* over all n trials */
    double max;         /* over all n trials (shows the spikes) */
    double filtered;    /* fraction of the n trials filtered as spikes */
    double rse;         /* relative standard error of the mean: standard
                         * deviation of the kept trials / sqrt(kept) /
                         * mean; infinite with fewer than 2 kept */
} cg_stats;

/* Spike filter and summary. Trials above factor*median are dropped, largest
 * first, but at most floor(max_frac*n) of them. Returns 0, or -1 if n < 1. */
int cg_stats_compute(const double *trials, int n, double factor,
                     double max_frac, cg_stats *out);

/* Are the first k trials enough? True at a check point (k = floor,
 * floor + CG_CHECK_EVERY, ...) whose statistics have rse <= target; never
 * when target <= 0 (stopping off: every trial runs). */
int cg_stats_enough(const double *trials, int k, int floor, double target);

/* Trials a measurement of n trials stops after (n if never enough). */
int cg_stats_stop(const double *trials, int n, int floor, double target);

/* Median of n values (copies, does not reorder the input). */
double cg_median(const double *v, int n);

#endif
