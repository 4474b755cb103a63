#!/bin/bash
# Side-by-side speed of the healthy link matrix job and LLNL's mpiGraph
# (docs/reports/fault-campaign.md#speed): ONE allocation on the same nodes runs our
# LinkMatrix check's job script (the matrix and its retest step, exactly as
# ReFrame generated it) and mpiGraph with the same bytes per pair (4 MB x 8,
# `mpiGraph 4000000 8 1`) and the same Open MPI transport settings, one
# after the other (the order alternates per repeat), and prints the ratio.
#
# usage (as root, the emulated cluster up, nothing else running on it):
#   ci/bench-mpigraph.sh MPIGRAPH_BINARY [FABRIC [REPEATS [STAGE_DIR]]]
# MPIGRAPH_BINARY: mpiGraph built from its public source (never part of
# this project); FABRIC: fab0 (default) or fab1; REPEATS per allocation
# (default 1); STAGE_DIR: a kept LinkMatrix stage directory to reuse
# (default: one ReFrame session of the check makes it, with
# --keep-stage-files). The job runs as the cluster's job user (cgrunner).
set -euo pipefail

MPIGRAPH=${1:?usage: $0 MPIGRAPH_BINARY [FABRIC [REPEATS [STAGE_DIR]]]}
FABRIC=${2:-fab0}
REPEATS=${3:-1}
STAGE=${4:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
USER_=cgrunner
[ -x "$MPIGRAPH" ] || { echo "bench-mpigraph: error: $MPIGRAPH is not an executable" >&2; exit 2; }
eval "$("$ROOT/.venv/bin/clustergate-lab" cluster env)"
W=$(mktemp -d /tmp/bench-mpigraph.XXXXXX)
chmod 755 "$W"; chown "$USER_" "$W"
as_user() { runuser -u "$USER_" -- env HOME="/home/$USER_" SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@"; }

if [ -z "$STAGE" ]; then
    # the check's own job script and build, from one real session
    as_user env CG_PERFLOG_DIR="$W/perflogs" CG_RESULTS_DB="$W/results.db" \
        CG_DEBUG_LOG="$W/reframe.log" "$ROOT/.venv/bin/reframe" \
        -C "$ROOT/config/settings.py" -c "$ROOT/checks/linkmatrix" \
        --system emucluster --prefix "$W/rfm" --keep-stage-files \
        -n "^LinkMatrix.*$FABRIC" -S valid_prog_environs=openmpi -r \
        > "$W/reframe.out" 2>&1 || true
    STAGE=$(dirname "$(find "$W/rfm/stage" -path '*LinkMatrix_*/rfm_job.sh' | head -1)")
fi
[ -f "$STAGE/rfm_job.sh" ] || { echo "bench-mpigraph: error: no LinkMatrix job script (rfm_job.sh) in '$STAGE' (see $W/reframe.out)" >&2; exit 1; }
cp -r "$STAGE" "$W/ours"; chown -R "$USER_" "$W/ours"
NODES=$(sed -n 's/^#SBATCH --nodes=//p' "$W/ours/rfm_job.sh")
# The allocation's limit: our job's limit (H:M:S) for each of the two
# programs of a repeat, thrice over: mpiGraph measures every pair, so on a
# tree whose topology rounds are fewer than N-1 it takes longer than ours
# (2.2x on the 24-node three-level tree), and a repeat cut by the limit
# is lost.
OUR_MIN=$(sed -n 's/^#SBATCH --time=//p' "$W/ours/rfm_job.sh" |
          awk -F: '{m = NF == 3 ? $1 * 60 + $2 + ($3 > 0) : $1; print m ? m : 10}')
LIMIT_MIN=$((REPEATS * 2 * 3 * ${OUR_MIN:-10}))

# The bench job: our job script (its #SBATCH lines are comments to bash)
# and mpiGraph under the transport settings of that script, minus the
# verbose output our script asks for to prove the fabric.
{
    echo '#!/bin/bash'
    grep '^#SBATCH --\(partition\|exclusive\|licenses\)' "$W/ours/rfm_job.sh"
    echo "#SBATCH --time=$LIMIT_MIN"
    echo "#SBATCH --nodes=$NODES --ntasks-per-node=1 --output=$W/bench.out"
    echo "cd $W/ours"
    echo 'now() { date +%s.%N; }'
    echo "for i in \$(seq $REPEATS); do"
    echo '  for what in $( [ $((i % 2)) = 1 ] && echo "ours mpigraph" || echo "mpigraph ours"); do'
    echo '    t0=$(now)'
    # ours: a fresh copy per repeat (its outputs kept); the trace's time
    # stamps split the job into the matrix and the retest step
    echo '    if [ $what = ours ]; then rm -rf ../ours.$i; cp -r . ../ours.$i; cd ../ours.$i'
    echo '      PS4='"'"'+ $EPOCHREALTIME '"'"' bash -x rfm_job.sh > rfm_job.out 2> rfm_job.err; rc=$?; cd ../ours'
    echo "    else ( grep '^export ' rfm_job.sh | grep -v btl_base_verbose > ../mpigraph.env; . ../mpigraph.env;"
    echo "           mpirun.openmpi -np $NODES --map-by ppr:1:node --bind-to none $MPIGRAPH 4000000 8 1 > ../mpigraph.out 2>&1 ); rc=\$?; fi"
    echo '    echo "run $i $what $(echo "$(now) - $t0" | bc) s rc=$rc"'
    echo '  done'
    echo 'done'
} > "$W/bench.sh"
chown "$USER_" "$W/bench.sh"
(cd "$W" && as_user sbatch --wait --job-name=bench-mpigraph "$W/bench.sh" > /dev/null)
cat "$W/bench.out"
for d in "$W"/ours.*; do
    # the matrix (mpirun line) and the retest step, from the trace
    awk '/^\+ [0-9.]+ [^ ]*mpirun[^ ]* -np/ && !m {m=$2} /^\+ [0-9.]+ cg_rc=/ {r=$2}
         /^\+ [0-9.]+ exit/ {e=$2}
         END {if (m && r && e) printf "%s: matrix %.1f s, retest step %.1f s\n", FILENAME, r-m, e-r}' "$d/rfm_job.err"
done
awk 'function med(a, k,   i, j, t) {
         for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) {t = a[i]; a[i] = a[j]; a[j] = t}
         return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2}
     /^run / {if ($3 == "ours") o[++no] = $4; else g[++ng] = $4; if ($6 != "rc=0") bad = 1}
     END {if (bad || !no || !ng) {print "bench-mpigraph: a run failed (see '"$W"')"; exit 1}
          mo = med(o, no); mg = med(g, ng)
          printf "ours %.1f s, mpiGraph %.1f s (median of %d), ratio ours/mpiGraph %.2f\n", mo, mg, no, mo / mg}' "$W/bench.out"
echo "files: $W"
