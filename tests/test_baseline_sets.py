"""``clustergate baseline`` writes the reference file the partition reads:
``<system>.<set>.yaml`` for a partition that declares a
``reference_set``, ``<system>.yaml`` otherwise, one file a set when the
runs' partitions read different files. Writing the system's file for a
partition that reads its set's would leave the gate judging against the
old figures, silently."""

import io
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from clustergate import cli
from clustergate.commands import baseline_cmd
from clustergate.refs import refcheck
from conftest import ROOT
from emu_layout import environment

POINT = ('environ=openmpi,interconnect=fab1,msg_bytes=1000000,num_nodes=4,'
         'ppn=1')
REPO_REFS = os.path.join(ROOT, 'config', 'references')


def perflog(values, check='Hotspot'):
    """Perflog lines of ``check`` on 4 nodes at 1 MB (the format of
    config/common.py), one healthy run a value."""
    return ''.join(
        f'2026-11-2{i}T23:0{i}:00|reframe 4.10.4|{check} %num_nodes=4 '
        f'%ppn=1 %interconnect=fab1 %msg_bytes=1000000|openmpi|n[1-4]|'
        f'{100 + i}|pass|x|bandwidth={v}|ref=0|lower=None|upper=None|'
        f'unit=MB/s|\n' for i, v in enumerate(values, 1))


def write_runs(root, partitions):
    """``{partition: [value, ...]}`` as perflogs of system emucluster."""
    for part, values in partitions.items():
        logs = root / 'perflogs' / 'emucluster' / part
        logs.mkdir(parents=True)
        (logs / 'Hotspot.log').write_text(perflog(values))


def bandwidth(path, partition='emu'):
    refs = yaml.safe_load(open(path))['references']
    return refs['Hotspot'][partition][POINT]['bandwidth']['value']


def baseline_on_layout(tmp_path, leaves):
    """``clustergate baseline`` (no --output) on the emulated system as
    its configuration loads on a layout; the references directory a copy
    of the project's."""
    refs = tmp_path / 'refs'
    shutil.copytree(REPO_REFS, refs)
    write_runs(tmp_path, {'emu': [20.1, 20.3, 20.2]})
    env = environment(tmp_path / 'state', nodes=9 if leaves else 4,
                      leaves=leaves)
    env['CG_REFERENCES_DIR'] = str(refs)
    proc = subprocess.run(
        [sys.executable, '-m', 'clustergate.cli', 'baseline', '--perflogs',
         str(tmp_path / 'perflogs'), '--min-runs', '3'],
        env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return refs, proc.stdout


def unchanged(refs, name):
    with open(os.path.join(REPO_REFS, name)) as fp:
        return (refs / name).read_text() == fp.read()


def test_the_tree_learns_into_its_reference_set(tmp_path):
    refs, out = baseline_on_layout(tmp_path, leaves=3)
    assert bandwidth(refs / 'emucluster.leafspine.yaml') == 20.2
    # the flat cluster's file is not touched
    assert unchanged(refs, 'emucluster.yaml')
    assert 'emucluster.leafspine.yaml: partition(s) emu (reference set ' \
           'leafspine)' in out
    assert f'wrote {refs / "emucluster.leafspine.yaml"}' in out


def test_the_flat_cluster_learns_into_the_system_file(tmp_path):
    refs, out = baseline_on_layout(tmp_path, leaves=None)
    assert bandwidth(refs / 'emucluster.yaml') == 20.2
    assert unchanged(refs, 'emucluster.leafspine.yaml')
    assert f'wrote {refs / "emucluster.yaml"}' in out


@pytest.fixture
def two_sets(tmp_path, monkeypatch):
    """System emucluster with partition emu on reference set leafspine
    and partition debug on none, as the configuration says, three runs
    of each; the references directory (returned) a copy of the
    project's."""
    refs = tmp_path / 'refs'
    shutil.copytree(REPO_REFS, refs)
    monkeypatch.setattr(refcheck, 'configured_systems', lambda: [
        {'name': 'emucluster', 'partitions': [
            {'name': 'emu', 'extras': {'reference_set': 'leafspine'}},
            {'name': 'debug', 'extras': {}}]}])
    monkeypatch.setenv('CG_REFERENCES_DIR', str(refs))
    write_runs(tmp_path, {'emu': [20.1, 20.3, 20.2],
                          'debug': [120.0, 124.0, 122.0]})
    return refs


def run(tmp_path, *extra):
    args = cli.build_parser().parse_args(
        ['baseline', '--perflogs', str(tmp_path / 'perflogs'),
         '--min-runs', '3', *extra])
    out, err = io.StringIO(), io.StringIO()
    rc = baseline_cmd.run(args, out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def test_partitions_of_two_sets_get_one_file_each(tmp_path, two_sets):
    refs = two_sets
    rc, out, err = run(tmp_path)
    assert rc == 0, err
    assert bandwidth(refs / 'emucluster.leafspine.yaml') == 20.2
    assert bandwidth(refs / 'emucluster.yaml', 'debug') == 122.0
    # each file holds its own partitions only
    with open(refs / 'emucluster.leafspine.yaml') as fp:
        assert 'debug' not in yaml.safe_load(fp)['references']['Hotspot']
    assert bandwidth(refs / 'emucluster.yaml') == bandwidth(
        os.path.join(REPO_REFS, 'emucluster.yaml'))
    assert 'partition(s) debug (no reference set)' in out


def test_an_explicit_output_takes_every_partition(tmp_path, two_sets):
    refs = two_sets
    rc, _, err = run(tmp_path, '-o', str(tmp_path / 'one.yaml'))
    assert rc == 0, err
    assert bandwidth(tmp_path / 'one.yaml') == 20.2
    assert bandwidth(tmp_path / 'one.yaml', 'debug') == 122.0
    assert unchanged(refs, 'emucluster.yaml')
    assert unchanged(refs, 'emucluster.leafspine.yaml')


@pytest.mark.parametrize('systems, problem', [
    (lambda: [{'name': 'other', 'partitions': []}],
     "system 'emucluster' is not configured here (systems: other)"),
    (lambda: [{'name': 'emucluster', 'partitions': [{'name': 'emu'}]}],
     "system 'emucluster' has no partition 'debug' (partitions: emu)"),
])
def test_a_partition_the_configuration_does_not_know_is_refused(
        tmp_path, monkeypatch, systems, problem):
    monkeypatch.setattr(refcheck, 'configured_systems', systems)
    monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path / 'refs'))
    write_runs(tmp_path, {'emu': [20.1, 20.3, 20.2],
                          'debug': [120.0, 124.0, 122.0]})
    rc, out, err = run(tmp_path)
    assert rc == 2 and 'wrote' not in out
    assert err.count('\n') == 1 and problem in err
    assert err.rstrip().endswith('name the file with --output')
    assert not (tmp_path / 'refs').exists()
