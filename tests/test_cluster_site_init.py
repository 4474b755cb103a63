"""``clustergate site init`` on the emulated site, and the generated
configuration used as it is written (docs/reports/emulated-cluster.md):

The emulated cluster up as 9 nodes under 3 leaf switches and a spine, with
two Slurm partitions (``emu``: all nodes, ``debug``: two) and Lmod
modulefiles for its MPIs. On it, as the unprivileged user jobs run as:

1. ``clustergate site init emusite`` (Slurm, Lmod and a node's ``ip`` and
   ``ucx_info`` answering) writes a system with both partitions, the
   module environments, both fabrics (also over UCX), the switch tree and
   the ``squeue`` backend (no accounting); nothing is edited after;
2. with it, ``--mode ci`` passes;
3. leaf2's uplink cut to 1/4: the link matrix on fab0 fails naming the
   uplink leaf2-spine and no other (as with the hand-written emucluster);

Needs root and the emulated cluster's packages; uses the cluster only if
none is up (a cluster that is up may be someone else's).
"""

import os
import pwd
import runpy
import shutil
import subprocess

import pytest

import cluster_session as cs
from conftest import BINDIR, ROOT, reframe_failures

pytestmark = pytest.mark.cluster

_reason = cs.why_not_available() or (
    'an emulated cluster is already up' if cs.is_up() else None) or (
    None if os.path.exists('/usr/share/lmod/lmod/init/bash')
    else 'Lmod not installed (bash ci/setup-debian.sh)')
if _reason:
    pytest.skip(_reason, allow_module_level=True)

NAME = 'emusite'
#: leaf2's uplink at 1/4 of its rate
CUT_LEAF2 = ('degrade', '--uplink', 'leaf2', '--rate', '25%')


def lmod_env():
    """The variables Lmod's initialisation sets with the cluster's modules
    (what a site's login shell has): MODULEPATH, LMOD_*, BASH_ENV (batch
    scripts get ``module``) and the exported ``module`` function."""
    out = subprocess.run(
        ['bash', '-c', f'. {cs.STATE_DIR}/lmod.sh && env -0'],
        capture_output=True, text=True, check=True).stdout
    env = dict(kv.split('=', 1) for kv in out.split('\0') if '=' in kv)
    return {k: v for k, v in env.items()
            if k.startswith(('LMOD', 'MODULE', 'BASH_FUNC_module',
                             'BASH_FUNC_ml')) or k in ('BASH_ENV',)}


@pytest.fixture(scope='module')
def session():
    with cs.Session(nodes=9, up_args=['--topology', 'leafspine']) as s:
        yield s

    assert cs.leftovers() == [], 'cluster down left things behind'


@pytest.fixture(scope='module')
def site(session):
    """A project copy where the run user wrote the site with site init."""
    root = os.path.join(session.workdir, 'proj')
    shutil.copytree(os.path.join(ROOT, 'config'),
                    os.path.join(root, 'config'))
    os.makedirs(os.path.join(root, 'spack-env'))
    # the checks of this checkout (ReFrame looks beside config/)
    os.symlink(os.path.join(ROOT, 'checks'), os.path.join(root, 'checks'))
    if session.user:
        pw = pwd.getpwnam(session.user)
        for d, _, files in os.walk(root):
            for p in [d] + [os.path.join(d, f) for f in files]:
                os.chown(p, pw.pw_uid, pw.pw_gid)

    env = {'SLURM_CONF': cs.SLURM_CONF, 'PATH': os.environ['PATH'],
           'HOME': session.workdir, **lmod_env()}
    cmd = ['env'] + [f'{k}={v}' for k, v in env.items()] + [
        os.path.join(BINDIR, 'clustergate'), 'site', 'init', NAME,
        '--root', root]
    if session.user:
        cmd = ['runuser', '-u', session.user, '--'] + cmd
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         cwd=session.workdir)
    assert res.returncode == 0, res.stdout + res.stderr
    return root, res.stdout + res.stderr


def run(session, site, *args, tag, partition=None):
    """One ReFrame run with the generated configuration; returns (rc, out)
    of its last session.

    The generated config starts OpenMPI 4.1.4 with its own mpirun, as
    emucluster's does: under ``srun --mpi=pmix`` it crashed in MPI_Init
    on this loaded VM in about 1 launch of 6 (a rank's segmentation fault
    within seconds); the reruns below stay for the MPIs that srun still
    starts. ReFrame retries a failed case once: its second retry
    skips a case whose build fixture passed in the first run (the
    dependency is not found: "could not resolve dependency"), so
    ``--max-retries=2`` is one retry. A run whose every failure is that
    crash runs again, up to ``cluster_session.SESSIONS`` sessions in all; a fault or a
    regression fails every session with its own reason."""
    rc, out = 1, ''
    for attempt in range(cs.SESSIONS):
        name = tag if attempt == 0 else f'{tag}-{attempt + 1}'
        rc, out = session.reframe(
            *args, tag=name, timeout=900,
            system=f'{NAME}:{partition}' if partition else NAME,
            config=os.path.join(site[0], 'config', 'settings.py'),
            env={**lmod_env(), 'CG_REFERENCES_DIR': os.path.join(
                site[0], 'config', 'references')})
        if rc == 0 or not cs.startup_crash_only(
                os.path.join(session.workdir, name, 'report.json')):
            break
    return rc, out


def test_1_site_init_reads_partitions_modules_fabrics_and_tree(site):
    root, out = site
    path = os.path.join(root, 'config', 'systems', f'{NAME}.py')
    conf = runpy.run_path(path)['site_configuration']
    system = conf['systems'][0]
    assert system['modules_system'] == 'lmod', out
    parts = {p['name']: p for p in system['partitions']}
    assert sorted(parts) == ['debug', 'emu'], out
    emu = parts['emu']
    assert emu['scheduler'] == 'squeue'
    assert emu['extras']['sweep']['nodes'][-1] == 9
    assert parts['debug']['extras']['sweep']['nodes'] == [1, 2]
    assert emu['extras']['topology'] == {'source': 'scontrol'}
    assert sorted(emu['extras']['interconnects']) == [
        'fab0', 'fab0_ucx', 'fab1', 'fab1_ucx', 'shm'], out
    envs = {e['name']: e for e in conf['environments']}
    assert envs['openmpi-4_1_4']['modules'] == ['openmpi/4.1.4'], envs
    assert envs['mpich-4_0_2']['modules'] == ['mpich/4.0.2'], envs
    # the modules, not the Debian wrappers on PATH
    assert 'openmpi' not in envs and 'mpich' not in envs
    assert os.path.exists(os.path.join(root, 'spack-env', NAME,
                                       'spack.yaml'))


def test_2_ci_mode_passes_with_the_generated_config(session, site):
    # the primary MPI on the partition of all nodes: all three MPIs on
    # both partitions are 96 cases, too long for CI's budget
    rc, out = run(session, site, '--mode', 'ci', '-S',
                  'valid_prog_environs=openmpi-4_1_4', '-r', tag='site-ci',
                  partition='emu')
    assert rc == 0, reframe_failures(out)
    assert 'LeafSpanLinkMatrix' in out and 'ContentionSuite' in out, \
        out[-3000:]


def test_3_cut_uplink_is_named_as_with_emucluster(session, site):
    cs.cluster(*CUT_LEAF2)
    try:
        rc, out = run(session, site, '-n', '^LinkMatrix.*interconnect=fab0%',
                      '-S', 'valid_prog_environs=openmpi-4_1_4', '-r',
                      tag='site-uplink', partition='emu')
    finally:
        cs.cluster('restore')

    assert rc != 0, 'leaf2 uplink at 1/4 went unnoticed'
    assert 'uplink leaf2-spine on fabric fab0' in out, reframe_failures(out)
    assert 'leaf1-spine' not in out and 'leaf3-spine' not in out

