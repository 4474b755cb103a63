"""Concurrency where it cannot disturb a measurement (issue 15, item 4):
the partition's extras 'concurrency' gives every job whole nodes and a
fabric check its fabric's Slurm license; policy 'async' gives the system
ReFrame's async modes (clustergate.planning.concurrency)."""

import os
import re
import subprocess

import pytest

import reframe.core.config as config

from clustergate.planning import concurrency as cc
from clustergate.site import extras
from clustergate.site.partition import config_partition_model, partition_model
from clustergate_lab.cluster import slurm
from clustergate_lab.cluster import state as st
from clustergate_lab.cluster.layout import Layout
from conftest import ROOT, edited_config, reframe_cmd

EXTRAS = {
    'interconnects': {'ib0': {'scope': 'network'}, 'hsn': {'scope':
                                                           'network'},
                      'shm': {'scope': 'node'}},
    'concurrency': {'policy': 'async',
                    'fabric_licenses': {'ib0': 'ib0', 'hsn': 'slingshot'}},
}


def test_fabric_jobs_ask_for_their_fabric_node_local_jobs_do_not():
    model = partition_model(EXTRAS)
    fab = cc.uses_fabric(model, 'hsn', 8)
    assert fab == 'hsn'
    assert cc.job_options(model, fab) == ['--exclusive',
                                           '--licenses=slingshot:1']
    # shared memory, or one rank: node-local, whole nodes only
    assert cc.uses_fabric(model, 'shm', 8) is None
    assert cc.uses_fabric(model, 'ib0', 1) is None
    assert cc.job_options(model, None) == ['--exclusive']
    # --exclusive already in the partition's access: not twice
    assert cc.job_options(model, 'ib0', ['--exclusive']) == [
        '--licenses=ib0:1']
    # no rule: no option (today's behaviour)
    bare = partition_model({'interconnects': EXTRAS['interconnects']})
    assert cc.job_options(bare, 'ib0') == []


def test_async_systems_get_async_modes():
    modes = [{'name': 'nightly', 'options': ['--exec-policy=serial',
                                             '--tag=nightly']}]
    systems = [config_partition_model({'name': 'big'}, {'extras': EXTRAS}),
               config_partition_model({'name': 'small'}, {'extras': {}})]
    assert cc.system_modes(modes, systems) == [
        {'name': 'nightly', 'target_systems': ['big'],
         'options': ['--exec-policy=async', '--tag=nightly']}]
    assert cc.system_modes(modes, systems[1:]) == []
    # a system's own options for a mode (mode_options) are kept
    own = [{'name': 'nightly', 'target_systems': ['big'],
            'options': ['--exec-policy=serial', '--tag=nightly', '-S', 'x=1']}]
    assert cc.system_modes(modes, systems, own)[0]['options'] == [
        '--exec-policy=async', '--tag=nightly', '-S', 'x=1']


@pytest.mark.parametrize('conc, message', [
    ({'policy': 'async', 'fabric_licenses': {'ib0': 'ib0'}},
     "concurrency.fabric_licenses: no license for 'hsn': with policy async "
     "its jobs could share the fabric"),
    ({'fabric_licenses': {'shm': 'x'}},
     'concurrency.fabric_licenses.shm: not a network interconnect of the '
     'partition (ib0, hsn)'),
    ({'policy': 'parallel'},
     "concurrency.policy: 'parallel' is not one of serial, async"),
    ({'max_jobs': 4},
     'concurrency.max_jobs: unknown key (known: fabric_licenses, policy)'),
])
def test_a_rule_that_would_let_jobs_share_a_fabric_is_refused(conc, message):
    part = {'name': 'p', 'extras': {**EXTRAS, 'concurrency': conc}}
    with pytest.raises(extras.ExtrasError) as err:
        extras.check_partition(part, 'site')

    assert str(err.value) == f'partition site:p: extras.{message}'


def test_emulated_slurm_conf_declares_a_license_per_fabric(tmp_path):
    conf = slurm.render_conf(Layout(4), st.Paths(str(tmp_path)), 2, 4800)
    assert 'Licenses=fab0:1,fab1:1\n' in conf


def _script(root, check_hash, env='openmpi'):
    path = os.path.join(root, 'stage', 'emucluster', 'emu', env,
                        check_hash, 'rfm_job.sh')
    with open(path) as fp:
        return [ln.split(None, 1)[1] for ln in fp.read().splitlines()
                if ln.startswith('#SBATCH')]


def test_generated_job_options_on_the_emulated_cluster(tmp_path):
    # a dry run (no cluster): the job scripts Slurm would get
    # SLURM_CONF unset, not empty: with an empty one srun --version (which
    # ReFrame's srun launcher asks at setup) retries for 60 s
    env = {k: v for k, v in os.environ.items() if k != 'SLURM_CONF'}
    env.update(CG_RESULTS_DB=str(tmp_path / 'results.db'),
               CG_DEBUG_LOG=str(tmp_path / 'reframe.log'),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'))
    proc = subprocess.run(
        reframe_cmd() + [
            '-C', os.path.join(ROOT, 'config', 'settings.py'),
            '--system', 'emucluster',
            '-c', os.path.join(ROOT, 'checks', 'contention'),
            '-c', os.path.join(ROOT, 'checks', 'stream'),
            '-n', '^Barrier%num_nodes=1%ppn=2%interconnect=shm%',
            '-n', '^Barrier%num_nodes=2%ppn=2%interconnect=fab1%',
            '-n', '^Stream',
            '--dry-run', '--prefix', str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    jobs = {}
    for d in os.listdir(tmp_path / 'stage' / 'emucluster' / 'emu' /
                        'openmpi'):
        if d.startswith(('Barrier_', 'Stream_')):
            opts = _script(tmp_path, d)
            name = next(o for o in opts if o.startswith('--job-name'))
            nodes = next((o for o in opts if o.startswith('--nodes')), '')
            jobs[(name, nodes)] = opts

    fabric = [o for (n, nodes), o in jobs.items() if '--nodes=2' == nodes]
    local = [o for (n, nodes), o in jobs.items() if 'Stream' in n]
    assert fabric and local, jobs
    for opts in fabric:
        assert opts.count('--licenses=fab1:1') == 1, opts
        assert opts.count('--exclusive') == 1, opts
    for opts in local:
        assert not [o for o in opts if o.startswith('--licenses')], opts
        assert opts.count('--exclusive') == 1, opts
    # one node over shared memory: node-local
    shm = [o for (n, nodes), o in jobs.items()
           if nodes == '--nodes=1' and 'Barrier' in n]
    assert shm and all(not [x for x in o if 'licenses' in x] for o in shm)
    assert all(o.count('--exclusive') == 1 for o in shm)


def test_an_async_rule_gives_the_system_async_modes(tmp_path):
    settings, _ = edited_config(tmp_path, 'emucluster.py',
                                "'policy': 'serial',", "'policy': 'async',")
    site = config.load_config(str(settings))
    site.select_subconfig('emucluster')
    assert '--exec-policy=async' in site.get('modes/@nightly/options')
    site.select_subconfig('localhost')
    assert '--exec-policy=serial' in site.get('modes/@nightly/options')
    # the shipped emulated cluster runs one job at a time
    site = config.load_config(os.path.join(ROOT, 'config', 'settings.py'))
    site.select_subconfig('emucluster')
    assert '--exec-policy=serial' in site.get('modes/@nightly/options')
    assert re.search(r"'policy': 'serial'",
                     open(os.path.join(ROOT, 'config', 'systems',
                                       'emucluster.py')).read())
