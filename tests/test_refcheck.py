"""A reference file names only what exists: a check, partition, axis or
metric that does not exist, or another system, is one line naming the
file and the key (at load, in ``clustergate baseline --validate``, and in
the session for axes and metrics)."""

import io
import json
import os
import re
import subprocess

import pytest

from clustergate import cli
from clustergate.refs import refcheck
from clustergate.commands import baseline_cmd
from conftest import ROOT, reframe_cmd, run_with_refs

EMU = os.path.join(ROOT, 'config', 'references', 'emucluster.yaml')

NOISE = ('  "OsNoise":\n    "emu":\n      "{key}":\n        "{metric}": '
         '{{value: 0.1, lower: null, upper: 0.5, unit: "x"}}\n')


def _noise(key, metric, problem, named=''):
    """An OsNoise reference at point ``key`` for ``metric`` added to
    emucluster.yaml: the bad case it makes, the key named ``key`` then
    ``named``."""
    return ('references:\n', 'references:\n' + NOISE.format(key=key,
                                                             metric=metric),
            'emucluster.yaml', f'references.OsNoise.emu.{key}{named}',
            problem)


# (change to config/references/emucluster.yaml, file name, key, problem)
BAD_FILES = [
    ('"Hotspot":', '"HotSpot":', 'emucluster.yaml', 'references.HotSpot',
     "no check 'HotSpot' (a class decorated with @simple_test under "
     "checks/)"),
    ('  "Hotspot":\n    "emu":', '  "Hotspot":\n    "emu0":',
     'emucluster.yaml', 'references.Hotspot.emu0',
     "system 'emucluster' has no partition 'emu0' (partitions: emu)"),
    ('system: "emucluster"', 'system: "localhost"', 'emucluster.yaml',
     'system', "file is for system 'localhost', expected 'emucluster'"),
    (None, None, 'mycluster.yaml', None,
     "no system 'mycluster' is configured (systems: emucluster, "
     "localhost)"),
    # a typo in a point key's value: the point would run unchecked
    _noise('scale=smal', 'p99_us',
           "axis 'scale' has no value 'smal' (values: full, nightly, small)"),
    ('environ=intelmpi,interconnect=fab0,msg_bytes=1000000,num_nodes=4',
     'environ=intelmpi,interconnect=fab0,msg_bytes=100000,num_nodes=4',
     'emucluster.yaml', 'references.Allreduce.emu.environ=intelmpi,'
     'interconnect=fab0,msg_bytes=100000,num_nodes=4,ppn=1',
     "axis 'msg_bytes' has no value '100000' (values: 0, 10000, 1000000, "
     "4000000, 8)"),
    # an axis no check has
    _noise('scal=small', 'p99_us',
           "no check has an axis 'scal' (axes: environ, gpus_per_node, "
           "host_numa, interconnect, kernel, layout, msg_bytes, npb_class, "
           "num_nodes, numa_domains, ppn, scale, tool)"),
    # a metric the check does not report: refused before any job ran
    _noise('scale=small', 'p99us',
           "OsNoise reports no metric 'p99us' (metrics: slowdown_1, "
           "slowdown_k, bsp_slowdown, ratio, p99_us, p99_9_us, worst_us, "
           "quantum_min_us)", named='.p99us'),
]
BAD_IDS = ['check', 'partition', 'system', 'unconfigured system',
           'axis value', 'size value', 'axis name', 'metric']


def _refs_dir(tmp_path, old, new, fname):
    refs = tmp_path / 'refs'
    refs.mkdir()
    with open(EMU) as fp:
        text = fp.read()

    if old is not None:
        assert old in text
        text = text.replace(old, new, 1)

    (refs / fname).write_text(text)
    return refs, str(refs / fname)


def _message(path, key, problem):
    where = f'{path}: key {key!r}' if key else path
    return f'malformed reference file {where}: {problem}'


@pytest.mark.parametrize('old,new,fname,key,problem', BAD_FILES,
                         ids=BAD_IDS)
def test_bad_reference_file_stops_the_load(tmp_path, old, new, fname, key,
                                           problem):
    refs, path = _refs_dir(tmp_path, old, new, fname)
    res = subprocess.run(
        reframe_cmd() + ['-C', os.path.join(ROOT, 'config', 'settings.py'),
                         '--show-config=systems/0/name'],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, SLURM_CONF='', CG_REFERENCES_DIR=str(refs)))
    out = re.sub(r'\x1b\[[0-9;]*m', '', res.stdout + res.stderr)
    assert res.returncode == 1 and 'Traceback' not in out
    errors = [ln for ln in out.splitlines() if ln.startswith('ERROR')]
    assert errors == ['ERROR: failed to load configuration: ' +
                      _message(path, key, problem)], out


@pytest.mark.parametrize('old,new,fname,key,problem',
                         BAD_FILES[:3] + BAD_FILES[4:],
                         ids=BAD_IDS[:3] + BAD_IDS[4:])
def test_baseline_validate_names_the_same(tmp_path, old, new, fname, key,
                                          problem):
    _, path = _refs_dir(tmp_path, old, new, fname)
    args = cli.build_parser().parse_args(['baseline', '--validate', path])
    out, err = io.StringIO(), io.StringIO()
    assert baseline_cmd.run(args, out=out, err=err) == 1
    assert err.getvalue().splitlines() == [
        'error: ' + _message(path, key, problem)]


def test_baseline_validate_accepts_the_shipped_file():
    args = cli.build_parser().parse_args(['baseline', '--validate', EMU])
    out, err = io.StringIO(), io.StringIO()
    assert baseline_cmd.run(args, out=out, err=err) == 0, err.getvalue()


def test_check_names_are_the_simple_tests():
    names = refcheck.check_names()
    assert {'PingPongDistance', 'LinkMatrix', 'NpbCG', 'Stream'} <= names
    # base classes are not checks
    assert 'ThirdPartyTest' not in names and 'CgProgramTest' not in names


LOCAL_REFS = '''\
system: "localhost"
references:
  "RightShift":
    "local":
      "kernel=read":
        "latency": {value: 1, lower: null, upper: null, unit: "us"}
  "Barrier":
    "local":
      "num_nodes=64":
        "latency": {value: 1, lower: null, upper: null, unit: "us"}
'''


def test_unknown_axis_and_metric_fail_the_session_naming_the_key(tmp_path):
    res, path, out = run_with_refs(
        tmp_path, LOCAL_REFS, '-c', os.path.join(ROOT, 'checks', 'contention'),
        '-n', 'RightShift|Barrier')
    assert res.returncode == 1, res.stdout[-3000:]
    with open(out / 'report.json') as fp:
        cases = json.load(fp)['runs'][0]['testcases']

    reasons = {tc['name'].split()[0]: tc['fail_reason'] for tc in cases
               if not tc['fixture']}
    path = str(path)
    # an axis of other checks, a value this system's sweep has not: the
    # point would never match; refused in setup, before the job
    assert reasons['RightShift'].endswith(_message(
        path, 'references.RightShift.local.kernel=read', "RightShift has "
        "no axis 'kernel' (axes: environ, interconnect, msg_bytes, "
        "num_nodes, ppn)")), reasons
    assert reasons['Barrier'].endswith(_message(
        path, 'references.Barrier.local.num_nodes=64', "Barrier has no "
        "point with num_nodes=64 on local (num_nodes: 1)")), reasons


def test_gpu_references_written_by_baseline_load():
    # written by `clustergate baseline` from the GPU checks on a real H200
    # node: its keys carry the gpus_per_node axis and per-GPU metrics
    path = os.path.join(ROOT, 'tests', 'fixtures', 'references',
                        'localhost-h200-gpu.yaml')
    from clustergate.refs import references
    refs = references.load(path, system='localhost')
    refcheck.check_keys(refs)
    keys = {k for parts in refs.entries.values() for points in
            parts.values() for _, k, _ in points}
    assert 'environ=openmpi,gpus_per_node=1' in keys
