/* Reads one trial vector per line from stdin (whitespace-separated numbers)
 * and prints the harness statistics of each, one line per vector:
 *   n=.. kept=.. mean=.. median=.. min=.. max=.. filtered=..
 * Used by the unit tests of the spike filter. */
#include "cg_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    static char line[1 << 16];
    double v[4096];
    while (fgets(line, sizeof line, stdin)) {
        int n = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\n", &save);
             tok && n < 4096; tok = strtok_r(NULL, " \t\n", &save)) {
            char *end;
            v[n] = strtod(tok, &end);
            if (*end != '\0') {
                fprintf(stderr, "not a number: %s\n", tok);
                return 2;
            }
            ++n;
        }

        cg_stats st;
        if (cg_stats_compute(v, n, CG_SPIKE_FACTOR, CG_MAX_FILTERED, &st)) {
            printf("error=empty\n");
            continue;
        }

        printf("n=%d kept=%d mean=%.9g median=%.9g min=%.9g max=%.9g "
               "filtered=%.9g\n", st.n, st.kept, st.mean, st.median, st.min,
               st.max, st.filtered);
    }

    return 0;
}
