"""Ranks that hang after their last result are stopped and named within
seconds, not at the job's time limit: our harness arms a watchdog once
CG_DONE is out (``--hang-after-done`` makes the ranks other than 0 spin
there, as MPICH 4.0.2 over UCX's tcp did in MPI_Finalize). The case's
results are complete, so it passes, with a warning that names the hang;
a job Slurm ended is another matter (tests/test_job_ended.py)."""

import os
import subprocess
import time

import pytest
import reframe.utility.sanity as sn

from clustergate.parsers import cgoutput
from clustergate.results import launchlog
from conftest import fixture_text, mpirun_env
from rfm_loader import load_checks, pick

MPIRUN = ['mpirun.openmpi', '-np', '2', '--oversubscribe', '--bind-to',
          'none', '--mca', 'mpi_yield_when_idle', '1']


@pytest.fixture(scope='module')
def hung(built_programs):
    if not os.path.exists('/usr/bin/mpirun.openmpi'):
        pytest.skip('OpenMPI not installed (apt-get install openmpi-bin)')

    start = time.monotonic()
    res = subprocess.run(MPIRUN + [
        os.path.join(built_programs, 'cg_contention'), '--patterns',
        'barrier', '--trials', '3', '--flush-bytes', '1M',
        '--hang-after-done', '--finalize-timeout', '3'], capture_output=True, text=True,
        timeout=240, env=mpirun_env())
    return res, time.monotonic() - start


def test_a_rank_spinning_after_its_last_result_is_stopped_in_seconds(hung):
    res, took = hung
    # the whole job (start-up and measurements included) well inside a
    # minute, not at a time limit
    assert took < 60, took
    assert res.returncode != 0
    assert cgoutput.parse(res.stdout).done is not None, res.stdout[-500:]
    assert 'CG_ERROR kind=hang program=cg_contention rank=1: on ' in res.stderr
    assert 'still running 3 s after its last result' in res.stderr
    assert launchlog.hung_ranks(res.stderr).startswith(
        'cg_contention: ')


def test_the_case_passes_and_names_the_hang(hung, monkeypatch):
    res, _ = hung
    check = pick(load_checks('checks/node/node_checks.py'), 'MemoryStrided',
                 kernel='read', ppn=2, scale='small')
    for attr, value in (('num_tasks', 2),
                        ('stdout_text', lambda: fixture_text(
                            'cg-outputs', 'memory-np2.out')),
                        ('stderr_text', lambda: res.stderr)):
        monkeypatch.setattr(check, attr, value, raising=False)
    assert sn.evaluate(check.validate()) is True
    assert 'hung after the last result and were stopped after 3 s' in \
        check.cg_hang_note


def test_without_the_switch_no_rank_is_stopped(built_programs):
    if not os.path.exists('/usr/bin/mpirun.openmpi'):
        pytest.skip('OpenMPI not installed')

    res = subprocess.run(MPIRUN + [
        os.path.join(built_programs, 'cg_contention'), '--patterns',
        'barrier', '--trials', '3', '--flush-bytes', '1M',
        '--finalize-timeout', '3'], capture_output=True, text=True, timeout=240, env=mpirun_env())
    assert res.returncode == 0, res.stderr[-2000:]
    assert 'kind=hang' not in res.stderr
