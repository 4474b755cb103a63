#include "cg_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double left = *(const double *)a, right = *(const double *)b;
    return (left > right) - (left < right);
}

static double median_sorted(const double *s, int n)
{
    return (n % 2) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

double cg_median(const double *v, int n)
{
    if (n < 1)
        return NAN;

    double *s = malloc(sizeof(double) * n);
    memcpy(s, v, sizeof(double) * n);
    qsort(s, n, sizeof(double), cmp_double);
    double m = median_sorted(s, n);
    free(s);
    return m;
}

int cg_stats_compute(const double *trials, int n, double factor,
                     double max_frac, cg_stats *out)
{
    if (n < 1)
        return -1;

    double *s = malloc(sizeof(double) * n);
    memcpy(s, trials, sizeof(double) * n);
    qsort(s, n, sizeof(double), cmp_double);

    double median = median_sorted(s, n);
    int spikes = 0;
    for (int i = n - 1; i >= 0 && s[i] > factor * median; --i)
        ++spikes;

    /* The cap keeps a noisy run from filtering itself into a good number */
    int cap = (int)floor(max_frac * n + 1e-9);
    int drop = spikes < cap ? spikes : cap;
    int kept = n - drop;

    double sum = 0.0;
    for (int i = 0; i < kept; ++i)
        sum += s[i];

    double mean = sum / kept, ss = 0.0;
    for (int i = 0; i < kept; ++i)
        ss += (s[i] - mean) * (s[i] - mean);

    out->n = n;
    out->kept = kept;
    out->mean = mean;
    out->median = median;
    out->min = s[0];
    out->max = s[n - 1];
    out->filtered = (double)drop / n;
    out->rse = kept > 1 && mean > 0
        ? sqrt(ss / (kept - 1)) / sqrt((double)kept) / mean : INFINITY;
    free(s);
    return 0;
}

int cg_stats_enough(const double *trials, int k, int floor, double target)
{
    if (target <= 0 || k < floor || k < 2 || (k - floor) % CG_CHECK_EVERY)
        return 0;

    cg_stats st;
    cg_stats_compute(trials, k, CG_SPIKE_FACTOR, CG_MAX_FILTERED, &st);
    return st.rse <= target;
}

int cg_stats_stop(const double *trials, int n, int floor, double target)
{
    for (int k = 1; k < n; ++k)
        if (cg_stats_enough(trials, k, floor, target))
            return k;

    return n;
}
