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

    out->n = n;
    out->kept = kept;
    out->mean = sum / kept;
    out->median = median;
    out->min = s[0];
    out->max = s[n - 1];
    out->filtered = (double)drop / n;
    free(s);
    return 0;
}
