"""The MPI environment probe (clustergate.siteinit.mpiprobe): an environment whose
wrapper cannot compile, link or run a two-rank MPI program is left out with
the reason; the verdict is cached and a changed wrapper invalidates it.

The broken wrappers are real tools run wrongly: gcc without MPI's include
path, gcc with the include path but not the library, a launcher that starts
one singleton instead of two ranks.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from clustergate.siteinit import mpiprobe

from conftest import ROOT

OMPI_INCLUDE = '/usr/lib/x86_64-linux-gnu/openmpi/include'
OMPI_ROOT_OK = [['OMPI_ALLOW_RUN_AS_ROOT', '1'],
                ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1']]

needs_openmpi = pytest.mark.skipif(
    not (shutil.which('mpicc.openmpi') and shutil.which('mpirun.openmpi')),
    reason='needs Debian OpenMPI (libopenmpi-dev, openmpi-bin)')


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv('CG_MPI_PROBE_CACHE', str(tmp_path / 'probe.json'))
    monkeypatch.delenv('CG_MPI_PROBE', raising=False)


def script(path, body):
    path.write_text('#!/bin/sh\n' + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)


def environ(name, cc, mpirun='mpirun.openmpi', family='openmpi'):
    return {'name': name, 'cc': cc,
            'env_vars': [['CG_MPIRUN', mpirun], *OMPI_ROOT_OK],
            'extras': {'mpi_family': family}}


def test_wrapper_without_mpi_header_is_left_out(tmp_path, capsys):
    cc = script(tmp_path / 'cc-nompi', 'exec gcc "$@"\n')
    env = environ('broken', cc)
    with pytest.raises(mpiprobe.ProbeFailed) as err:
        mpiprobe.probe(env)

    assert str(err.value) == (f'{cc} cannot compile an MPI program: '
                              'mpi.h: No such file or directory')
    assert mpiprobe.working([env]) == []
    assert mpiprobe.left_out()['broken'] == str(err.value)
    assert (f'clustergate: broken left out: {err.value}\n'
            in capsys.readouterr().err)


@needs_openmpi
def test_wrapper_that_cannot_link_is_left_out(tmp_path):
    cc = script(tmp_path / 'cc-nolib', f'exec gcc -I{OMPI_INCLUDE} "$@"\n')
    reason = mpiprobe.verdict(environ('nolib', cc))
    assert reason.startswith(f'{cc} cannot link an MPI program: ')
    assert 'MPI_Init' in reason


@needs_openmpi
def test_launcher_that_starts_singletons_is_left_out(tmp_path):
    # runs the program once, as a singleton of 1 rank
    launcher = script(tmp_path / 'onerank',
                      'while [ "$1" != ./hello ]; do shift; done\n'
                      'exec ./hello\n')
    reason = mpiprobe.verdict(environ('single', 'mpicc.openmpi', launcher))
    assert reason.startswith(f'{launcher} cannot run a two-rank MPI program '
                             '(the ranks did not both report as 2 ranks)')


@needs_openmpi
def test_openmpi_works_and_is_offered():
    env = environ('openmpi', 'mpicc.openmpi')
    assert mpiprobe.verdict(env, cache=False) is None
    assert mpiprobe.working([env]) == [env]


@needs_openmpi
def test_cached_verdict_is_invalidated_by_a_changed_wrapper(tmp_path):
    wrapper = tmp_path / 'mpicc-site'
    script(wrapper, 'exec gcc "$@"\n')
    env = environ('site', str(wrapper))
    assert 'cannot compile' in mpiprobe.verdict(env)
    # cached: the same verdict without running the compiler
    os.utime(tmp_path / 'probe.json')
    assert 'cannot compile' in mpiprobe.verdict(env)

    # the site fixes its wrapper (a later install): probed again
    script(wrapper, 'exec mpicc.openmpi "$@"\n')
    stat = os.stat(wrapper)
    os.utime(wrapper, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert mpiprobe.verdict(env) is None


def test_missing_wrapper_is_left_out():
    reason = mpiprobe.verdict(environ('gone', 'mpicc.no-such-mpi'))
    assert reason == 'mpicc.no-such-mpi not found'


def test_sweep_prints_the_reason(tmp_path):
    # a configuration whose only MPI environment is broken
    cc = script(tmp_path / 'cc-nompi', 'exec gcc "$@"\n')
    conf = tmp_path / 'settings.py'
    conf.write_text(textwrap.dedent(f'''
        from clustergate.siteinit import mpiprobe
        envs = mpiprobe.working([{{
            'name': 'brokenmpi', 'cc': {cc!r},
            'env_vars': [['CG_MPIRUN', 'mpirun.openmpi']],
            'extras': {{'mpi_family': 'openmpi'}}}}])
        site_configuration = {{'systems': [{{
            'name': 'sys', 'hostnames': ['.*'], 'partitions': [{{
                'name': 'p', 'scheduler': 'local', 'launcher': 'local',
                'environs': [e['name'] for e in envs],
                'extras': {{'sweep': {{'nodes': [1], 'ppn': [2]}},
                            'interconnects': {{'shm': {{
                                'scope': 'node',
                                'env': {{'openmpi': {{}}}}}}}}}}}}]}}],
            'environments': envs}}
    '''))
    res = subprocess.run([sys.executable, '-m', 'clustergate.cli', 'sweep',
                          '-C', str(conf)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    expected = (f'brokenmpi left out: {cc} cannot compile an MPI program: '
                'mpi.h: No such file or directory')
    assert res.stdout.splitlines()[0] == expected
    assert 'environments: none' in res.stdout
    assert 'left out' not in res.stderr
