/* Test CLI of the pure (MPI-free) parts of cg_memory, cg_memlat and
 * cg_noise: the very code the programs run, included with CG_PURE_ONLY.
 *
 *   cg_node_cli sattolo N SEED   -> n= cycle= single= fixed_points=
 *   cg_node_cli perm N SEED      -> n= permutation= fixed_points=
 *   cg_node_cli stride N S       -> n= s= visits= each_once= monotone_passes=
 *   cg_node_cli sizes LO HI      -> the memlat working sets, one per line
 *   cg_node_cli levels LO HI L1 L2 L3 -> those --levels-only keeps with
 *        these cache sizes (bytes, 0 = no such level), one per line
 *   cg_node_cli noise            -> per stdin line of quantum times:
 *        n= min= mean= max= slowdown= p50= p90= p99= p999=
 * Plain C, no MPI: cc -O2 cg_node_cli.c -lm */
#define CG_PURE_ONLY 1
#include "cg_memory.c"
#include "cg_memlat.c"
#include "cg_noise.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: cg_node_cli sattolo|perm N SEED | stride N S | "
                    "sizes LO HI | levels LO HI L1 L2 L3 | "
                    "noise < samples\n");
    return 2;
}

/* sattolo|perm N SEED: is it a permutation, its fixed points, and for
 * Sattolo's algorithm the length of the cycle from 0 */
static int cmd_permutation(const char *kind, const char *n_arg,
                           const char *seed_arg)
{
    size_t n = strtoull(n_arg, NULL, 10);
    uint64_t seed = strtoull(seed_arg, NULL, 10);
    uint32_t *p = malloc(sizeof(uint32_t) * (n ? n : 1));
    unsigned char *seen = calloc(n ? n : 1, 1);
    int sattolo = !strcmp(kind, "sattolo");
    if (sattolo)
        lat_sattolo(p, n, seed);
    else
        mem_permutation(p, n, seed);
    int perm = 1;
    size_t fixed = 0;
    for (size_t i = 0; i < n; ++i) {
        if (p[i] >= n || seen[p[i]]) {
            perm = 0;
            break;
        }
        seen[p[i]] = 1;
        fixed += p[i] == i;
    }
    if (sattolo) {
        size_t len = perm && n ? lat_cycle_length(p, n) : 0;
        printf("n=%zu permutation=%d cycle=%zu single=%d "
               "fixed_points=%zu\n", n, perm, len, perm && len == n,
               fixed);
    } else {
        printf("n=%zu permutation=%d fixed_points=%zu first=%u\n", n,
               perm, fixed, n ? p[0] : 0);
    }
    return 0;
}

/* stride N S: the strided visit order visits each index once, in
 * passes whose successive indices differ by S */
static int cmd_stride(const char *n_arg, const char *s_arg)
{
    size_t n = strtoull(n_arg, NULL, 10), s = strtoull(s_arg, NULL, 10);
    if (s < 1)
        return usage();
    unsigned *c = calloc(n ? n : 1, sizeof(unsigned));
    size_t visits = mem_stride_visits(n, s, c);
    int once = 1;
    for (size_t i = 0; i < n; ++i)
        once &= c[i] == 1;
    /* the order: within each pass successive indices differ by s */
    size_t prev = (size_t)-1, jumps_ok = 1, passes = 0;
    CG_STRIDED(n, s, j, {
        if (j % s == j) ++passes;           /* first index of a pass */
        else if (j != prev + s) jumps_ok = 0;
        prev = j;
    });
    printf("n=%zu s=%zu visits=%zu each_once=%d passes=%zu "
           "stride_ok=%zu\n", n, s, visits, once, passes, jumps_ok);
    return 0;
}

/* noise: the summary of each stdin line of quantum times */
static int cmd_noise(void)
{
    static char line[1 << 20];
    static double v[1 << 16];
    while (fgets(line, sizeof line, stdin)) {
        size_t n = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\n", &save);
             tok && n < (1 << 16); tok = strtok_r(NULL, " \t\n", &save))
            v[n++] = strtod(tok, NULL);
        noise_summary s;
        if (noise_summarize(v, n, &s)) {
            printf("error=empty_or_nonpositive\n");
            continue;
        }
        printf("n=%zu min=%.9g mean=%.9g max=%.9g slowdown=%.9g "
               "p50=%.9g p90=%.9g p99=%.9g p999=%.9g\n", s.n, s.min,
               s.mean, s.max, s.slowdown, s.p50, s.p90, s.p99, s.p999);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();

    if ((!strcmp(argv[1], "sattolo") || !strcmp(argv[1], "perm")) &&
        argc == 4)
        return cmd_permutation(argv[1], argv[2], argv[3]);

    if (!strcmp(argv[1], "stride") && argc == 4)
        return cmd_stride(argv[2], argv[3]);

    if (!strcmp(argv[1], "sizes") && argc == 4) {
        size_t out[256];
        int k = lat_sizes(strtoull(argv[2], NULL, 10),
                          strtoull(argv[3], NULL, 10), out, 256);
        for (int i = 0; i < k; ++i)
            printf("%zu\n", out[i]);
        return 0;
    }

    if (!strcmp(argv[1], "levels") && argc == 7) {
        size_t out[256], cache[5] = {0};
        int nlev = 0;
        for (int l = 1; l <= 3; ++l)
            if ((cache[l] = strtoull(argv[3 + l], NULL, 10)))
                nlev = l;
        int k = lat_sizes(strtoull(argv[2], NULL, 10),
                          strtoull(argv[3], NULL, 10), out, 256);
        k = lat_level_sizes(cache, nlev, out, k);
        for (int i = 0; i < k; ++i)
            printf("%zu\n", out[i]);
        return 0;
    }

    if (!strcmp(argv[1], "noise") && argc == 2)
        return cmd_noise();

    return usage();
}
