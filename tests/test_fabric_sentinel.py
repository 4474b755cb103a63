"""The nightly's fabric check: the link matrix over every leaf of each
fabric, once, under one MPI environment, whatever the nightly subset's
node counts; the other environments run it in acceptance.

Listed (``--mode nightly -l``, no job) on the emulated layouts (4-node
flat, 9-node leaf/spine, 24-node three-level: tests/emu_layout.py) and on the system that
``clustergate site init`` writes from the recorded probes of the emulated
site, grown to 12 nodes in 4 leaves (its switch tree read from the
recorded topology as a file: no scontrol here)."""

import os
import re
import subprocess

import pytest

import test_site_init as si
from conftest import ROOT, edited_config, isolated_env, reframe_cmd
from emu_layout import environment

CHECKS = os.path.join(ROOT, 'checks', 'linkmatrix')
TOPOLOGY12 = ('SwitchName=leaf1 Nodes=n[1-3] LinkSpeed=250\n'
              'SwitchName=leaf2 Nodes=n[4-6] LinkSpeed=250\n'
              'SwitchName=leaf3 Nodes=n[7-9] LinkSpeed=250\n'
              'SwitchName=leaf4 Nodes=n[10-12] LinkSpeed=250\n'
              'SwitchName=spine Switches=leaf[1-4] LinkSpeed=375\n')


def matrices(stdout):
    """``{name: [environment, ...]}`` of the link matrices listed."""
    out, name = {}, None
    for ln in stdout.splitlines():
        if ln.startswith('- '):
            name = re.sub(r' /[0-9a-f]+$', '', ln[2:])
            out[name] = []
        elif ln.startswith('    ^CgProgramsBuild ') and name:
            out[name].append(ln.split('+')[1].split(' ')[0])
    return out


def _listing(env, settings, system, mode):
    proc = subprocess.run(
        reframe_cmd() + ['-C', settings, '--system', system, '--mode', mode,
                         '-l', '-c', CHECKS],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return matrices(proc.stdout)


def _night_env(tmp_path, **layout):
    """The environment of a listing of the emulated ``layout``'s night
    (a fixed date, the session's files under ``tmp_path``)."""
    return dict(environment(tmp_path / 'state', **layout),
                CG_ROTATION_DATE='2026-11-22',
                CG_RESULTS_DB=str(tmp_path / 'results.db'),
                CG_DEBUG_LOG=str(tmp_path / 'reframe.log'),
                CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
                CG_ROTATION_DETAILS=str(tmp_path / 'rotation.tsv'))


@pytest.mark.parametrize('nodes,leaves', [(9, 3), (4, None)])
def test_emucluster_nightly_one_matrix_per_fabric_one_mpi(tmp_path, nodes,
                                                          leaves):
    env = _night_env(tmp_path, nodes=nodes, leaves=leaves)
    settings = os.path.join(ROOT, 'config', 'settings.py')
    got = _listing(env, settings, 'emucluster', 'nightly')
    assert got == {
        f'LinkMatrix %num_nodes={nodes} %ppn=1 %interconnect={f} '
        f'%msg_bytes=4000000': ['openmpi'] for f in ('fab0', 'fab1')}, got
    # every environment in acceptance
    whole = _listing(env, settings, 'emucluster', 'acceptance')
    envs = whole[f'LinkMatrix %num_nodes={nodes} %ppn=1 %interconnect=fab0 '
                 f'%msg_bytes=4000000']
    assert len(envs) >= 2 and 'openmpi' in envs, envs


def test_emucluster_nightly_on_three_levels(tmp_path):
    """The 24-node three-level tree (``--topology fattree3``): one matrix
    of the whole partition per fabric, under one MPI."""
    env = _night_env(tmp_path, nodes=24, leaves=6, spines=3)
    settings = os.path.join(ROOT, 'config', 'settings.py')
    got = _listing(env, settings, 'emucluster', 'nightly')
    assert got == {
        f'LinkMatrix %num_nodes=24 %ppn=1 %interconnect={f} '
        f'%msg_bytes=4000000': ['openmpi'] for f in ('fab0', 'fab1')}, got


def _grown(name, text):
    """The emulated site's recorded probe, grown from 9 nodes in 3 leaves
    to 12 in 4 (n10-n12 as n9, on leaf4)."""
    if name == 'scontrol-node':
        blocks = re.split(r'(?m)^(?=NodeName=)', text)
        last = blocks[-1]
        return ''.join(blocks) + ''.join(
            re.sub(r'\bn9\b', f'n{i}', last) for i in (10, 11, 12))
    if name == 'scontrol-partition':
        return text.replace('Nodes=n[1-9]', 'Nodes=n[1-12]').replace(
            'TotalCPUs=18 TotalNodes=9', 'TotalCPUs=24 TotalNodes=12')
    if name == 'scontrol-topology':
        return TOPOLOGY12.replace(' Nodes', ' Level=0 Nodes')
    return text


def _runner(name, argv):
    got = si.recorded('emusite', name)
    if got is None:
        return 127, f'{argv[0]}: not found'
    return got[0], _grown(name, got[1])


def test_site_init_nightly_spans_every_leaf_once_under_one_mpi(tmp_path):
    root = si.project_copy(tmp_path)
    si.init(root, 'emusite', 'emusite', runner=_runner)
    path = root / 'config' / 'systems' / 'emusite.py'
    topo = tmp_path / 'topology.conf'
    topo.write_text(TOPOLOGY12)
    text = path.read_text()
    assert text.count("'topology': {'source': 'scontrol'}") == 2
    path.write_text(text.replace("'topology': {'source': 'scontrol'}",
                                 f"'topology': {{'file': '{topo}'}}"))
    env = dict(isolated_env(root / 'config' / 'references', root / 'out'),
               LMOD_CMD=si.LMOD_CMD)
    settings = str(root / 'config' / 'settings.py')
    details = tmp_path / 'rotation.tsv'
    env.update(CG_ROTATION_DATE='2026-11-22',
               CG_ROTATION_DETAILS=str(details))
    listed = _listing(env, settings, 'emusite', 'nightly')
    # the nightly is a rotation (the partitions share the night's budget):
    # its sentinels, run every night, are the whole 12-node partition's
    # matrix once per fabric (not per transport: the UCX paths of the
    # same interfaces rotate with the acceptance space), one MPI; not the
    # 2-node debug partition's matrix, which sees one leaf
    every = [ln.split('\t')[-1] for ln in details.read_text().splitlines()
             if ln.startswith('every\t')]
    got = {name: envs for name, envs in listed.items() if name in every}
    assert sorted(got) == [
        f'LinkMatrix %num_nodes=12 %ppn=1 %interconnect={f} '
        f'%msg_bytes=4000000' for f in ('fab0', 'fab1')], got
    assert all(len(envs) == 1 for envs in got.values()), got
    assert len({envs[0] for envs in got.values()}) == 1, got


@pytest.mark.parametrize('environ,want', [('intelmpi', 'intelmpi'),
                                          ('nosuch', 'openmpi')])
def test_the_partition_names_the_nightly_environment(tmp_path, environ,
                                                     want):
    # extras sentinels.environ: the nightly's matrix under that one; a
    # name that cannot run it there keeps the default (said in a warning)
    settings, _ = edited_config(
        tmp_path, 'emucluster.py', "'rotation': {'budget_min': 25},",
        "'rotation': {'budget_min': 25}, "
        f"'sentinels': {{'checks': ['LinkMatrix'], 'environ': '{environ}'}},")
    env = dict(environment(tmp_path / 'state', nodes=9, leaves=3),
               CG_ROTATION_DATE='2026-11-22',
               CG_RESULTS_DB=str(tmp_path / 'results.db'),
               CG_DEBUG_LOG=str(tmp_path / 'reframe.log'),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'),
               CG_ROTATION_DETAILS=str(tmp_path / 'rotation.tsv'))
    got = _listing(env, str(settings), 'emucluster', 'nightly')
    assert sorted(got) == [
        f'LinkMatrix %num_nodes=9 %ppn=1 %interconnect={f} '
        f'%msg_bytes=4000000' for f in ('fab0', 'fab1')], got
    assert all(envs == [want] for envs in got.values()), got
