/* Reads one trial vector per line from stdin (whitespace-separated numbers)
 * and prints the harness statistics of each, one line per vector:
 *   n=.. kept=.. mean=.. median=.. min=.. max=.. filtered=.. rse=..
 * With --stop FLOOR TARGET, also stop=<trials the harness would run>
 * (stopping on the noise, cg_stats_stop). Used by the unit tests of the
 * spike filter and of the stopping rule. */
#include "cg_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int floor = 0;
    double target = 0;
    if (argc == 4 && !strcmp(argv[1], "--stop")) {
        floor = atoi(argv[2]);
        target = atof(argv[3]);
    }
    else if (argc != 1) {
        fprintf(stderr, "usage: cg_stats_cli [--stop FLOOR TARGET]\n");
        return 2;
    }

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
               "filtered=%.9g rse=%.9g", st.n, st.kept, st.mean, st.median,
               st.min, st.max, st.filtered, st.rse);
        if (target > 0)
            printf(" stop=%d", cg_stats_stop(v, n, floor, target));
        printf("\n");
    }

    return 0;
}
