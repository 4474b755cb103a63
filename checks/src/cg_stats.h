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

typedef struct {
    int n;              /* trials given (the first trial already dropped) */
    int kept;           /* trials left after the spike filter */
    double mean;        /* mean of the kept trials: the reported value */
    double median;      /* over all n trials */
    double min;         /* over all n trials */
    double max;         /* over all n trials (shows the spikes) */
    double filtered;    /* fraction of the n trials filtered as spikes */
} cg_stats;

/* Spike filter and summary. Trials above factor*median are dropped, largest
 * first, but at most floor(max_frac*n) of them. Returns 0, or -1 if n < 1. */
int cg_stats_compute(const double *trials, int n, double factor,
                     double max_frac, cg_stats *out);

/* Median of n values (copies, does not reorder the input). */
double cg_median(const double *v, int n);

#endif
