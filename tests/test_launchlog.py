"""A job that died before its program reported anything is explained from
its stderr: real output of an MPI_Init crash on the emulated cluster, and
the lines Slurm, OpenMPI and hydra print for the other causes."""

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from clustergate.results import launchlog
from conftest import fixture_text
from rfm_loader import load_checks, pick

CRASH = fixture_text('cg-outputs', 'emu-nic-mpi-init-crash.err')
NODE_FAILURE = fixture_text('cg-outputs', 'emu-node-failure.err')
RANK_SEGV = fixture_text('cg-outputs', 'emu-rank-segv.err')


def test_real_mpi_init_crash_names_node_signal_and_connection():
    cause = launchlog.diagnose(CRASH)
    # the step's "CANCELLED" line has no reason (srun was killed): not one
    assert cause.split('; ')[0] == ('a rank on n3 died of Segmentation '
                                    'fault (signal 11)')
    assert 'task 4-5 on n3: Segmentation fault' in cause
    assert ('OpenMPI could not open a TCP connection from n1 to '
            '10.77.0.13:1050') in cause


def test_srun_startup_crash_of_openmpi_says_what_avoids_it():
    assert launchlog.diagnose(CRASH).endswith(
        f'({launchlog.SRUN_STARTUP_HINT})')
    # started by mpirun (no srun task summary), or a segfault with no
    # refused connection: no hint about srun
    no_srun = '\n'.join(line for line in CRASH.splitlines()
                        if not line.startswith('srun: error:'))
    assert launchlog.SRUN_STARTUP_HINT not in launchlog.diagnose(no_srun)
    assert launchlog.SRUN_STARTUP_HINT not in launchlog.diagnose(RANK_SEGV)


def test_real_node_failure_names_the_lost_node():
    # the task killed on n1 is a consequence, not a cause
    assert launchlog.diagnose(NODE_FAILURE) == (
        'Slurm cancelled STEP 2.0 (on n1) due to NODE FAILURE; '
        'Slurm lost node n2 (node failure)')


@pytest.mark.parametrize('name, expected', [
    ('mpirun-missing-exe.err', 'mpirun could not launch /nonexistent/cg_x'),
    ('emu-srun-missing-exe.err',
     'cannot execute /nonexistent/cg_x: No such file or directory; '
     'task 0 on n1: Exited with exit code 2'),
    ('hydra-rank-abort.err', 'a rank on vm ended with exit code 6 (hydra); '
                             'hydra: Aborted (signal 6)'),
])
def test_real_launch_failures(name, expected):
    assert launchlog.diagnose(fixture_text('cg-outputs', name)) == expected


def test_real_crashed_task_is_named_not_the_terminated_one():
    assert launchlog.diagnose(RANK_SEGV) == ('task 1 on n2: Segmentation '
                                             'fault')


@pytest.mark.parametrize('stderr, expected', [
    ('slurmstepd: error: *** STEP 7.0 ON n2 CANCELLED AT 2026-11-20T16:40:12 '
     'DUE TO TIME LIMIT ***\n',
     'Slurm cancelled STEP 7.0 (on n2) due to TIME LIMIT'),
    ('srun: error: Unable to allocate resources: Requested node '
     'configuration is not available\n',
     'no allocation: Requested node configuration is not available'),
])
def test_causes(stderr, expected):
    assert launchlog.diagnose(stderr) == expected


@pytest.mark.parametrize('stderr', [
    '', 'srun: error: n1: tasks 0-1: Killed\n',
    'srun: error: n1: task 0: Terminated\n',
    'WARNING: a harmless warning about the locale\n',
])
def test_nothing_recognised_is_none(stderr):
    # "Killed"/"Terminated" alone: what srun did after another task failed
    assert launchlog.diagnose(stderr) is None


def test_sanity_failure_carries_the_cause():
    checks = load_checks('checks/contention/contention_checks.py')
    check = pick(checks, 'PingPongDistance', msg_bytes=1000000)
    check.num_nodes, check.ppn, check.num_tasks = 4, 2, 8
    check.stdout_text = lambda: ''
    check.stderr_text = lambda: CRASH
    with pytest.raises(SanityError) as err:
        sn.evaluate(check.validate())

    msg = str(err.value)
    assert 'no CG_DONE completion line' in msg
    assert 'job stderr: a rank on n3 died of Segmentation fault' in msg
