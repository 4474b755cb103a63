"""The link matrix's job, without ReFrame: its files (:func:`artefact`)
and options (:func:`matrix_options`), the declared switch tree a
partition points at (:func:`declared_topology`,
:func:`partition_topology`), the job's time limit for the rounds it runs
(:func:`job_limit`), the retest's budget (:func:`retest_budget`), the
retest driver's command beside the matrix (:func:`retest_commands`), its
inputs (:func:`retest_inputs`) and its result, and the matrix and heat
map written after the run (:func:`write_artefacts`). The ReFrame test is
:class:`clustergate.rfm.families.linkmatrix.LinkMatrixTest`."""

import json
import os
import shlex
import subprocess
import sys

from clustergate.links import matrix as linkmatrix
from clustergate.links import retest_driver
from clustergate.links import topology

#: the job script writes the matrix's exit status here for the retest
#: driver started beside it (``--after``)
RC_FILE = 'cg_matrix_rc'

#: The job's limit (s) for the declared tree's rounds, where no
#: ``time_limit`` is set: a schedule of more rounds gets as much more
LIMIT_S = 600


def artefact(fabric, ext):
    """The job's file of ``ext`` on ``fabric``: the matrix
    (``linkmatrix_<fabric>.csv``, ``.png``, ``.schedule``) or the
    retest's result and log (``linkretest_<fabric>.json``, ``.log``)."""
    kind = 'linkretest' if ext in ('json', 'log') else 'linkmatrix'
    return f'{kind}_{fabric}.{ext}'


def matrix_options(msg_bytes, trials):
    """The program's options for ``msg_bytes`` per pair and ``trials``
    per round."""
    # no cache flush between trials: 4 MB over a network link does not
    # care, and the flushes of 2x the last-level cache took the node's
    # cores (healthy 9-node job: 30.2 s with them, 25.1 s without,
    # median of 3 in one allocation; docs/reports/fault-campaign.md#speed)
    return ['--bytes', str(msg_bytes), '--trials', str(trials),
            '--flush-bytes', '64']


def partition_topology(model, fabric):
    """The switch tree the partition ``model`` declares for ``fabric``
    (extras ``topology``), or None: the flat matrix is judged. Raises
    TopologyError where it cannot be read."""
    topo = model.topology
    if topo is None or not topo.describes(fabric):
        return None
    return declared_topology(topo.spec)


def retest_budget(variable, model):
    """The retest budget in seconds: ``variable`` (the test's), else the
    partition ``model``'s extras, else the default."""
    if variable is not None:
        return float(variable)
    got = model.link_retest_budget_s
    return float(got) if got is not None else retest_driver.BUDGET


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
    exit status (and retests only after a matrix whose output is whole:
    :func:`clustergate.links.retest_driver.not_after`), so the
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


def retest_inputs(fabric, fraction, ratio, alpha, naming, found, topo):
    """What the retest driver needs to judge the first round as the test
    does: the matrix's ``fraction``, the retest's ``ratio`` and ``alpha``,
    the naming bounds ``naming`` (retest_candidates.Bounds), the link
    baseline ``found`` (``(description, {metric: LinkStat})`` or None) and
    the declared tree ``topo`` (None: none)."""
    return {
        'fabric': fabric, 'fraction': fraction,
        'ratio': ratio, 'alpha': alpha,
        'bounds': {'ratio': naming.ratio, 'z': naming.z,
                   'peer_ratio': naming.peer_ratio,
                   'peer_z': naming.peer_z},
        'stats': {m: [st.median, st.mad, st.runs]
                  for m, st in (found[1] if found else {}).items()},
        'topology': retest_driver.topology_to_json(topo),
    }


def write_inputs(path, inputs):
    """The retest driver's inputs (JSON) at ``path``."""
    with open(path, 'w') as fp:
        json.dump(inputs, fp)


def read_result(path):
    """The retest driver's result at ``path`` (None: no stage directory),
    or None: it wrote none (it did not run, or its file is unreadable)."""
    if path is None:
        return None
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


def write_artefacts(matrix, csv, png, fraction, fabric, title):
    """The measured ``matrix`` written as ``csv`` and drawn as ``png``
    (``title()`` its title); None, or what to log where there is no heat
    map. A matrix without a pair writes nothing."""
    if not matrix.bw:
        return None
    linkmatrix.write_csv(matrix, csv)
    tail = draw_heatmap(csv, png, fraction, fabric, title())
    if tail is None:
        return None
    return (f'no heat map (matplotlib missing? pip install '
            f'clustergate[report]): {tail}')


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
