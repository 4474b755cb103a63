"""The extras keys are checked when ReFrame loads the configuration: each
mistake is one line naming the file and the key, without a traceback."""

import os
import re
import subprocess

import pytest

from clustergate.planning import concurrency
from clustergate.site import extras
from clustergate.planning import modesize
from conftest import ROOT, edited_config, reframe_cmd

CORES = os.cpu_count() or 1
PPN = "'ppn': modesize.ppn_axis(_cores),"
#: the last subset localhost declares: a subset added after it wins
SUBSETS = "'nightly': {'ppn': _mode_ppn('nightly')},"
EXPECTED = "'expected_families': _expected_families(),"
ENV_EXTRAS = "extras = {'mpi_family': 'intelmpi'}"

# (what is changed in config/systems/localhost.py, the message after
# "<file>: ")
BAD_INPUTS = [
    ('ppn above the cores',
     (PPN, "'ppn': modesize.ppn_axis(_cores) + [_cores + 1],"),
     f"partition localhost:local: extras.sweep.ppn: {CORES + 1} is above "
     f"the partition's {CORES} cores per node"),
    ('ci subset naming an unknown interconnect',
     (SUBSETS, SUBSETS + " 'ci': {'interconnects': ['ib0']},"),
     "partition localhost:local: extras.sweep.ci.interconnects: 'ib0' is "
     "not declared by the partition (interconnects: ['shm', 'tcp'])"),
    ('nightly subset naming an undeclared node count',
     (SUBSETS, SUBSETS + " 'nightly': {'nodes': [2]},"),
     "partition localhost:local: extras.sweep.nightly.nodes: 2 is not "
     "declared by the partition (nodes: [1])"),
    ('ci subset naming an undeclared ppn',
     (SUBSETS, SUBSETS + f" 'ci': {{'ppn': [{CORES + 1}]}},"),
     f"partition localhost:local: extras.sweep.ci.ppn: {CORES + 1} is not "
     f"declared by the partition (ppn: {modesize.ppn_axis(CORES)})"),
    ('misspelt key of a subset',
     (SUBSETS, SUBSETS + " 'ci': {'node': [1]},"),
     "partition localhost:local: extras.sweep.ci.node: unknown key "
     "(known: interconnects, nodes, ppn)"),
    ('unknown sweep key',
     (SUBSETS, SUBSETS + " 'acceptance': {'nodes': [1]},"),
     "partition localhost:local: extras.sweep.acceptance: unknown key "
     "(known: ci, nightly, nodes, ppn)"),
    ('unknown partition extras key',
     (EXPECTED, EXPECTED + " 'core_per_node': 2,"),
     "partition localhost:local: extras.core_per_node: unknown key "
     "(known: benchmarks, concurrency, cores_per_node, expected_families, "
     "gpus, hpcc, improvements, "
     "interconnects, link_retest_budget_s, max_job_min, memory_per_node_gib, "
     "numa_domains_per_node, "
     "reference_set, rotation, sentinels, stream_numa_counts, sweep, "
     "topology)"),
    ('a longest job of no minutes',
     (EXPECTED, EXPECTED + " 'max_job_min': 0,"),
     "partition localhost:local: extras.max_job_min: 0 is less than or "
     "equal to the minimum of 0"),
    ('nightly budget of no minutes',
     (EXPECTED, EXPECTED + " 'rotation': {'budget_min': 0},"),
     "partition localhost:local: extras.rotation.budget_min: must be a "
     "number of minutes above 0, got 0"),
    ('concurrency letting fabric jobs share a fabric',
     (EXPECTED, EXPECTED + " 'concurrency': {'policy': 'async'},"),
     "partition localhost:local: extras.concurrency.fabric_licenses: no "
     "license for 'tcp': with policy async its jobs could share the "
     "fabric"),
    ('misspelt rotation key',
     (EXPECTED, EXPECTED + " 'rotation': {'budget_min': 30, 'pin': True},"),
     "partition localhost:local: extras.rotation.pin: unknown key "
     "(known: budget_min, pin_subset)"),
    ('sentinel checks not a list',
     (EXPECTED, EXPECTED + " 'sentinels': {'checks': 'LinkMatrix'},"),
     "partition localhost:local: extras.sentinels.checks: must be a list "
     "of check names, got 'LinkMatrix'"),
    ('misspelt sentinels key',
     (EXPECTED, EXPECTED + " 'sentinels': {'canary': False},"),
     "partition localhost:local: extras.sentinels.canary: unknown key "
     "(known: canaries, checks, environ)"),
    ('unknown family expected',
     (EXPECTED, "'expected_families': ['npb', 'hpl'],"),
     "partition localhost:local: extras.expected_families: 'hpl' is not a "
     f"check family (known: {', '.join(extras.check_families())})"),
    ('improvement policy misspelt',
     (EXPECTED, EXPECTED + " 'improvements': 'warn',"),
     "partition localhost:local: extras.improvements: 'warn' is not one "
     "of report, fail"),
    ('unknown interconnect key',
     ("'scope': 'node',", "'scope': 'node', 'rate': 1,"),
     "partition localhost:local: extras.interconnects.shm.rate: unknown "
     "key (known: env, netdev, scope, verify)"),
    ('an interconnect device that is a list',
     ("'scope': 'node',", "'scope': 'node', 'netdev': 'eth0 eth1',"),
     "partition localhost:local: extras.interconnects.shm.netdev: must be a "
     "network device name (e.g. \"ib0\"), got 'eth0 eth1'"),
    ('a misspelt HPC Challenge key (the schema of the site model)',
     ("'hpcc': {'memory_fraction': 0.5, 'max_n': 3072}",
      "'hpcc': {'memory_fraction': 0.5, 'maxn': 3072}"),
     "partition localhost:local: extras.hpcc: Additional properties are "
     "not allowed ('maxn' was unexpected)"),
]


def _broken_config(tmp_path, old, new, fname='localhost.py'):
    return edited_config(tmp_path, fname, old, new)


def _load_error(settings):
    res = subprocess.run(reframe_cmd() + ['-C', str(settings),
                                          '--show-config=systems/0/name'],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, SLURM_CONF=''))
    out = re.sub(r'\x1b\[[0-9;]*m', '', res.stdout + res.stderr)
    return res.returncode, out


@pytest.mark.parametrize('what,edit,message', BAD_INPUTS,
                         ids=[b[0] for b in BAD_INPUTS])
def test_bad_extras_is_one_line_naming_file_and_key(tmp_path, what, edit,
                                                    message):
    settings, path = _broken_config(tmp_path, *edit)
    code, out = _load_error(settings)
    assert code == 1
    assert 'Traceback' not in out
    errors = [ln for ln in out.splitlines() if ln.startswith('ERROR')]
    assert errors == [f'ERROR: failed to load configuration: {path}: '
                      f'{message}'], out


def test_unknown_environment_key_is_named(tmp_path):
    # mpi_prefix was declared and read by nothing: it is gone, and a
    # configuration that still sets it is told so
    settings, path = _broken_config(
        tmp_path, "'extras': {'mpi_family': 'openmpi'}",
        "'extras': {'mpi_family': 'openmpi', 'mpi_prefix': '/usr'}",
        fname='_mpi.py')
    code, out = _load_error(settings)
    assert code == 1 and 'Traceback' not in out
    errors = [ln for ln in out.splitlines() if ln.startswith('ERROR')]
    # the helper module is loaded by every system: the first one names it
    assert len(errors) == 1
    assert errors[0].endswith(
        "environment openmpi: extras.mpi_prefix: unknown key (known: "
        "launcher, mpi_family, srun_options)"), errors


def test_wrong_mpi_family_is_named():
    with pytest.raises(extras.ExtrasError) as err:
        extras.check_environment({'name': 'x',
                                  'extras': {'mpi_family': 'mvapich'}})

    assert str(err.value) == ("environment x: extras.mpi_family: 'mvapich' "
                              "is not one of openmpi, mpich, intelmpi")


def test_shipped_configuration_is_valid():
    code, out = _load_error(os.path.join(ROOT, 'config', 'settings.py'))
    assert code == 0, out


def test_site_guide_lists_every_key():
    with open(os.path.join(ROOT, 'docs', 'guide', 'site-guide.md')) as fp:
        guide = fp.read()

    keys = (list(extras.PARTITION_KEYS) + list(extras.ENVIRONMENT_KEYS) +
            list(extras.SWEEP_KEYS) + list(extras.INTERCONNECT_KEYS) +
            list(extras.ROTATION_KEYS) + list(extras.SENTINEL_KEYS) +
            list(concurrency.KEYS))
    missing = [k for k in keys if f'`{k}`' not in guide]
    assert not missing, missing
