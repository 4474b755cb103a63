"""CI of the Spack path: ``reframe --dry-run`` over the NPB/OSU/STREAM
sweep, with no ``spack`` on PATH (the dry run must not need it), on
localhost (mpirun) and on the emulated cluster (srun; selected with
--system, no cluster needed). Asserts the generated build and job scripts.
"""

import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, reframe_cmd

SPACK_ENV = os.path.join(ROOT, 'spack-env')


#: system -> the perflog directory of its dry run
_PERFLOGS = {}


def _dry_run(tmp, system, names):
    env = dict(os.environ)
    # a PATH without spack: the scripts must still be written
    env['PATH'] = '/usr/bin:/bin'
    # perflogs, results and session log of this session in its own
    # directory, not the work tree's (nor the suite's shared one)
    _PERFLOGS[system] = tmp / 'perflogs'
    env['CG_PERFLOG_DIR'] = str(_PERFLOGS[system])
    env['CG_RESULTS_DB'] = str(tmp / 'output' / 'results.db')
    env['CG_DEBUG_LOG'] = str(tmp / 'output' / 'reframe.log')
    report = tmp / 'report.json'
    cmd = reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'),
        '--system', system,
        '-c', os.path.join(ROOT, 'checks', 'npb'),
        '-c', os.path.join(ROOT, 'checks', 'osu'),
        '-c', os.path.join(ROOT, 'checks', 'stream'),
        *sum((['-n', n] for n in names), []),
        '--dry-run', '--prefix', str(tmp), '--report-file', str(report),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(report) as fp:
        return proc.stdout, json.load(fp)


def _cases(report):
    return [tc for run in report['runs'] for tc in run['testcases']]


def _case(report, name_start, **attrs):
    for tc in _cases(report):
        if tc['name'].startswith(name_start) and all(
                tc.get(k) == v for k, v in attrs.items()):
            return tc

    raise LookupError(f'{name_start} {attrs}')


def _script(tc, name='rfm_job.sh'):
    with open(os.path.join(tc['stagedir'], name)) as fp:
        return fp.read()


@pytest.fixture(scope='module')
def localhost(tmp_path_factory):
    # the whole NPB/OSU/STREAM sweep of this machine
    return _dry_run(tmp_path_factory.mktemp('drylocal'), 'localhost',
                    ['^Npb', '^Osu', '^Stream'])


@pytest.fixture(scope='module')
def emucluster(tmp_path_factory):
    return _dry_run(tmp_path_factory.mktemp('dryemu'), 'emucluster',
                    ['^NpbCG', '^NpbBT', '^OsuLatency', '^OsuAllreduce',
                     '^Stream'])


def test_localhost_sweep_generated(localhost):
    out, report = localhost
    cases = _cases(report)
    assert not [tc for tc in cases if tc['result'] == 'fail']
    names = {tc['name'].split()[0] for tc in cases}
    for kernel in ('BT', 'CG', 'EP', 'FT', 'IS', 'LU', 'MG', 'SP'):
        assert f'Npb{kernel}' in names
    assert {'OsuLatency', 'OsuBw', 'OsuBibw', 'OsuMbwMr', 'OsuBarrier',
            'OsuBcast', 'OsuAllreduce', 'OsuAlltoall', 'Stream'} <= names


def test_dry_run_writes_no_perflog_line(localhost):
    # ReFrame logs a dry run's cases as passed with None values: those
    # lines would read as runs in a site's perflog archive
    _, report = localhost
    assert _cases(report)
    assert [str(p) for p in _PERFLOGS['localhost'].rglob('*')
            if p.is_file()] == []


def test_spack_build_script(localhost):
    _, report = localhost
    tc = _case(report, 'NpbBinaries')
    build = _script(tc, 'rfm_build.sh')
    env = os.path.join(SPACK_ENV, 'localhost')
    assert f'spack -e {env} install' in build
    # no environment is created or modified in the stage: the persistent
    # one is installed in place
    assert 'spack env create' not in build
    assert 'config add' not in build


def test_npb_job_script_localhost(localhost):
    _, report = localhost
    tc = _case(report, 'NpbCG', num_nodes=1, ppn=2, interconnect='shm',
               npb_class='A')
    job = _script(tc)
    view = os.path.join(SPACK_ENV, 'localhost', '.spack-env', 'view')
    assert re.search(r'^\$\{CG_MPIRUN:-mpirun\} -np 2 --map-by ppr:2:node '
                     rf'--bind-to none {re.escape(view)}/bin/cg\.A\.x$',
                     job, re.M), job
    assert 'export OMPI_MCA_btl=self,vader' in job
    tc = _case(report, 'NpbCG', num_nodes=1, ppn=2, interconnect='tcp',
               npb_class='B')
    job = _script(tc)
    assert 'export OMPI_MCA_btl=self,tcp' in job
    assert f'{view}/bin/cg.B.x' in job


def test_npb_square_and_pow2_skips(localhost):
    _, report = localhost
    # 2 ranks: not square for BT/SP (not a test case at all), a power of
    # two for the others
    with pytest.raises(LookupError):
        _case(report, 'NpbBT', num_nodes=1, ppn=2, npb_class='A')
    assert _case(report, 'NpbBT', num_nodes=1, ppn=1,
                 npb_class='A')['result'] == 'pass'
    assert _case(report, 'NpbLU', num_nodes=1, ppn=2,
                 npb_class='A')['result'] == 'pass'


def test_osu_job_scripts_localhost(localhost):
    _, report = localhost
    job = _script(_case(report, 'OsuLatency', ppn=2, interconnect='tcp'))
    assert re.search(r'-np 2 .*libexec/osu-micro-benchmarks/mpi/pt2pt/'
                     r'osu_latency -m 1:4194304$', job, re.M), job
    job = _script(_case(report, 'OsuAllreduce', ppn=2, interconnect='shm'))
    assert 'mpi/collective/osu_allreduce -m 1:1048576' in job
    # osu_latency needs exactly 2 ranks: ppn=1 is not a test case
    with pytest.raises(LookupError):
        _case(report, 'OsuLatency', ppn=1)


def test_stream_job_script_localhost(localhost):
    _, report = localhost
    job = _script(_case(report, 'Stream %'))
    cores = os.cpu_count()
    assert f'export OMP_NUM_THREADS={cores}' in job
    # OpenMP only: no MPI launcher in front of it
    assert re.search(r'^\S*/view/bin/stream_c\.exe$', job, re.M), job


def test_emucluster_job_scripts(emucluster):
    _, report = emucluster
    build = _script(_case(report, 'NpbBinaries'), 'rfm_build.sh')
    assert f'spack -e {os.path.join(SPACK_ENV, "emucluster")} install' \
        in build
    tc = _case(report, 'NpbCG', num_nodes=2, ppn=2, interconnect='fab0',
               npb_class='A')
    job = _script(tc)
    assert '#SBATCH --ntasks=4' in job
    assert '#SBATCH --ntasks-per-node=2' in job
    assert '#SBATCH --nodes=2' in job
    assert 'export OMPI_MCA_btl_tcp_if_include=fab0' in job
    # OpenMPI's own mpirun inside the allocation (docs/reports/emulated-cluster.md:
    # srun --mpi=pmix crashed 18 jobs of 100 in MPI_Init under load)
    assert re.search(r'^\$\{CG_MPIRUN:-mpirun\} -np 4 --map-by ppr:2:node '
                     r'--bind-to none \S+/spack-env/emucluster/\.spack-env/'
                     r'view/bin/cg\.A\.x$', job, re.M), job
    assert 'export CG_MPIRUN=mpirun.openmpi' in job
    job = _script(_case(report, 'NpbBT', num_nodes=4, ppn=1,
                        interconnect='fab1', npb_class='A'))
    assert '#SBATCH --ntasks=4' in job and 'bt.A.x' in job
    job = _script(_case(report, 'OsuLatency', num_nodes=2, ppn=1,
                        interconnect='fab1'))
    assert '#SBATCH --ntasks=2' in job and '--nodes=2' in job
    assert 'pt2pt/osu_latency' in job
    job = _script(_case(report, 'Stream %'))
    assert '#SBATCH --ntasks=1' in job and 'OMP_NUM_THREADS=' in job
