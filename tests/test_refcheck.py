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

from clustergate import cli, refcheck
from clustergate.commands import baseline as baseline_cmd
from conftest import ROOT, reframe_cmd

EMU = os.path.join(ROOT, 'config', 'references', 'emucluster.yaml')

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
]


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
                         ids=['check', 'partition', 'system',
                              'unconfigured system'])
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


@pytest.mark.parametrize('old,new,fname,key,problem', BAD_FILES[:3],
                         ids=['check', 'partition', 'system'])
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
      "nodes=1":
        "latency": {value: 1, lower: null, upper: null, unit: "us"}
  "Barrier":
    "local":
      "*":
        "latncy": {value: 1, lower: null, upper: null, unit: "us"}
'''


def test_unknown_axis_and_metric_fail_the_session_naming_the_key(tmp_path):
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'localhost.yaml').write_text(LOCAL_REFS)
    out = tmp_path / 'out'
    env = dict(os.environ, SLURM_CONF='', CG_REFERENCES_DIR=str(refs),
               CG_PERFLOG_DIR=str(out / 'perflogs'),
               CG_RESULTS_DB=str(out / 'results.db'),
               CG_DEBUG_LOG=str(out / 'reframe.log'))
    cmd = reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'),
        '-c', os.path.join(ROOT, 'checks', 'contention'),
        '-n', 'RightShift|Barrier',
        '-S', 'valid_prog_environs=openmpi',
        '--report-file', str(out / 'report.json'), '-r']
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                         env=env, cwd=str(tmp_path))
    assert res.returncode == 1, res.stdout[-3000:]
    with open(out / 'report.json') as fp:
        cases = json.load(fp)['runs'][0]['testcases']

    reasons = {tc['name'].split()[0]: tc['fail_reason'] for tc in cases
               if not tc['fixture']}
    path = str(refs / 'localhost.yaml')
    assert reasons['RightShift'].endswith(_message(
        path, 'references.RightShift.local.nodes=1', "RightShift has no "
        "axis 'nodes' (axes: environ, interconnect, msg_bytes, num_nodes, "
        "ppn)")), reasons
    assert reasons['Barrier'].endswith(_message(
        path, 'references.Barrier.local.*.latncy', "Barrier reports no "
        "metric 'latncy' (metrics: latency)")), reasons
