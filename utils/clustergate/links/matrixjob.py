"""The link matrix's job, without ReFrame: the declared switch tree a
partition points at (:func:`declared_topology`), the job's time limit for
the rounds it runs (:func:`job_limit`), the retest driver's command beside
the matrix (:func:`retest_commands`), its inputs and its result, and the
heat map drawn after the run (:func:`draw_heatmap`). The ReFrame test is
:class:`clustergate.rfm.families.linkmatrix.LinkMatrixTest`."""

import json
import os
import shlex
import subprocess
import sys

from clustergate.links import topology

#: the job script writes the matrix's exit status here for the retest
#: driver started beside it (``--after``)
RC_FILE = 'cg_matrix_rc'

#: The job's limit (s) for the declared tree's rounds, where no
#: ``time_limit`` is set: a schedule of more rounds gets as much more
LIMIT_S = 600


def job_limit(rounds, num_nodes, topo):
    """The job's time limit in seconds for ``rounds`` (None: every pair)
    of ``num_nodes`` nodes on the declared tree ``topo`` (None: none):
    LIMIT_S for the declared tree's rounds, times the rounds the job runs
    over the tree's. Every pair's N-1 rounds are more than a tree's: on
    the emulated 24-node three-level tree 24 against 14, and with a
    spine-core trunk at 25 % every pair's job ran 13m52s where its 10
    minutes had cut it after 12 rounds (docs/reports/fault-campaign.md).
    Without a declared tree every pair is the only schedule: LIMIT_S."""
    ran = (len(rounds) if rounds is not None
           else topology.all_pairs_rounds(num_nodes))
    tree = ran
    if topo is not None:
        tree = min(len(topology.schedule(topo, topo.nodes)),
                   topology.all_pairs_rounds(len(topo.nodes)))
    return round(LIMIT_S * max(1.0, ran / max(tree, 1)))


def retest_commands(launch, stdout, inputs, budget, result, log):
    """``(prerun, postrun)`` lines of the job script that start the retest
    driver (``python -m clustergate.links.retest_driver``) beside the
    matrix, with the job's own ``launch`` line: it waits for the matrix's
    exit status (and retests only after a matrix that succeeded), so the
    interpreter's start is not added to the job
    (docs/reports/fault-campaign.md#speed)."""
    driver = ' '.join([
        shlex.quote(sys.executable), '-m', 'clustergate.links.retest_driver',
        '--output', shlex.quote(str(stdout)),
        '--inputs', inputs,
        '--launch', shlex.quote(launch),
        '--budget', str(budget),
        '--result', result,
        '--log', log])
    prerun = [f'rm -f {RC_FILE}', f'{driver} --after {RC_FILE} & cg_retest=$!']
    postrun = ['cg_rc=$?',
               f'echo $cg_rc > {RC_FILE}.new && mv {RC_FILE}.new {RC_FILE}',
               'wait $cg_retest', 'exit $cg_rc']
    return prerun, postrun


def write_inputs(path, inputs):
    """The retest driver's inputs (JSON) at ``path``."""
    with open(path, 'w') as fp:
        json.dump(inputs, fp)


def read_result(path):
    """The retest driver's result at ``path``, or None: it wrote none (it
    did not run, or its file is unreadable)."""
    try:
        with open(path) as fp:
            return json.load(fp)
    except (OSError, ValueError):
        return None


def cleared_nodes(result):
    """The nodes the retest's ``result`` measured healthy alone."""
    return {d['node'] for d in (result or {}).get('decisions', [])
            if d.get('status') == 'healthy'}


def draw_heatmap(csv, png, fraction, fabric, title):
    """``png`` from the matrix's ``csv``, in a separate Python: matplotlib
    is slow to import, and optional. None when drawn, else the last line
    of what went wrong."""
    cmd = [sys.executable, '-m', 'clustergate.cli', 'linkmatrix', csv, png,
           '--fraction', str(fraction), '--fabric', fabric,
           '--title', title]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=120)
        failed = not os.path.exists(png)
    except (OSError, subprocess.SubprocessError) as err:
        proc, failed = err, True
    if not failed:
        return None
    tail = getattr(proc, 'stderr', str(proc)) or ''
    return tail.strip().splitlines()[-1:]


def declared_topology(spec, run=subprocess.run):
    """The switch tree a partition's ``topology`` extra points at (see
    :mod:`clustergate.rfm.families.linkmatrix`). Raises
    :class:`clustergate.links.topology.TopologyError` with a one-line
    cause."""
    if not isinstance(spec, dict):
        raise topology.TopologyError(
            f"extras 'topology' must be a dict such as {{'source': "
            f"'scontrol'}} or {{'file': PATH}}, not {spec!r}")

    rates = {k: spec[k] for k in ('node_rate', 'uplink_rate', 'dragonfly')
             if k in spec}
    if 'file' in spec:
        path = spec['file']
        try:
            with open(path) as fp:
                text = fp.read()
        except OSError as err:
            raise topology.TopologyError(
                f"extras 'topology' file {path}: {err.strerror}") from None

        return topology.parse_topology_conf(text, source=path, **rates)

    if spec.get('source') != 'scontrol':
        raise topology.TopologyError(
            f"extras 'topology' needs 'file' or 'source': 'scontrol', has "
            f"{sorted(spec)}")

    cmd = ['scontrol', 'show', 'topology']
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        raise topology.TopologyError(f'{" ".join(cmd)}: {err}') from None

    if proc.returncode != 0 or 'SwitchName=' not in proc.stdout:
        why = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or \
            ['no switch (is TopologyPlugin=topology/tree set?)']
        raise topology.TopologyError(f'{" ".join(cmd)}: {why[0]}')

    return topology.parse_scontrol_topology(proc.stdout, **rates)
