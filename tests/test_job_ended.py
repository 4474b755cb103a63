"""A job that Slurm ended (its time limit, scancel or a signal, a node
failure, the OOM killer) fails its case naming why, whatever it printed
before: ranks that hang after their last result held the nodes until the
limit, and a job cut off is not a pass. One check on every family's
sanity path (clustergate.rfm.point.base.PointTest.validate)."""

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from clustergate.results import launchlog
from conftest import fixture_text
from rfm_loader import family_checks, load_checks, pick

#: slurmstepd's line in the job's stderr, in Slurm's own format (job 18 on
#: n1 at its 10-minute limit: a job of the 8-node matrix whose ranks spun
#: after their last result); the stdout beside it is a complete output
TIME_LIMIT = ('slurmstepd: error: *** JOB 18 ON n1 CANCELLED AT '
              '2026-11-25T16:41:07 DUE TO TIME LIMIT ***\n')
SCANCEL = ('slurmstepd: error: *** STEP 18.0 ON n1 CANCELLED AT '
           '2026-11-25T16:41:07 ***\n')
MEM2 = fixture_text('cg-outputs', 'memory-np2.out')


@pytest.mark.parametrize('stderr, expected', [
    (TIME_LIMIT, 'Slurm cancelled job 18 on n1 due to time limit'),
    (SCANCEL, 'Slurm cancelled step 18.0 on n1 by scancel or a signal'),
    (fixture_text('cg-outputs', 'emu-node-failure.err'),
     'Slurm cancelled step 2.0 on n1 due to node failure'),
    ('slurmstepd: error: Detected 1 oom_kill event in StepId=7.0. Some of '
     'the step tasks have been OOM Killed.\n',
     'the OOM killer ended 1 process(es) of StepId=7.0 (out of memory)'),
    (fixture_text('job-failures', 'ompi-rank-segv.err'), None),
    ('', None),
])
def test_ended_by_scheduler(stderr, expected):
    assert launchlog.ended_by_scheduler(stderr) == expected


@pytest.fixture(scope='module')
def memory():
    return pick(load_checks('checks/node/node_checks.py'), 'MemoryStrided',
                kernel='read', ppn=2, scale='small')


def _fed(monkeypatch, check, stdout, stderr):
    monkeypatch.setattr(check, 'num_tasks', 2)
    monkeypatch.setattr(check, 'stdout_text', lambda: stdout, raising=False)
    monkeypatch.setattr(check, 'stderr_text', lambda: stderr, raising=False)
    return check


def test_complete_output_then_time_limit_fails_naming_it(monkeypatch,
                                                         memory):
    # the same complete output passes alone
    assert sn.evaluate(_fed(monkeypatch, memory, MEM2, '').validate())
    with pytest.raises(SanityError, match='the job did not end by itself: '
                       'Slurm cancelled job 18 on n1 due to time limit'):
        sn.evaluate(_fed(monkeypatch, memory, MEM2, TIME_LIMIT).validate())


def test_every_family_checks_how_the_job_ended(monkeypatch):
    # the third-party families too: one sanity path for all
    for family, name in (('imb', 'ImbPingPong'), ('osu', 'OsuLatency'),
                         ('contention', 'PingPongDistance')):
        check = _fed(monkeypatch, pick(family_checks(family), name), '',
                     TIME_LIMIT)
        with pytest.raises(SanityError, match='due to time limit'):
            sn.evaluate(check.validate())


def test_a_cancellation_without_reason_after_a_complete_output_fails(
        monkeypatch, memory):
    with pytest.raises(SanityError, match='step 18.0 on n1 by scancel or '
                       'a signal'):
        sn.evaluate(_fed(monkeypatch, memory, MEM2, SCANCEL).validate())


def test_a_crash_is_named_before_the_step_cancellation_it_caused(
        monkeypatch):
    # srun cancels the step (no reason) when a task crashed: the crash is
    # the message (a real emulated-cluster stderr)
    check = _fed(monkeypatch, pick(family_checks('contention'),
                                   'PingPongDistance'), '',
                 fixture_text('cg-outputs', 'emu-rank-segv.err'))
    with pytest.raises(SanityError, match=r'no CG_DONE completion line.*'
                       r'task 1 on n2: Segmentation fault'):
        sn.evaluate(check.validate())


def test_ranks_our_watchdog_stopped_are_not_a_cancellation(monkeypatch,
                                                           memory):
    hang = ('CG_ERROR kind=hang program=cg_memory rank=1: on n2, still '
            'running 20 s after its last result (hung in MPI_Finalize?): '
            'stopped\n')
    check = _fed(monkeypatch, memory, MEM2, hang + SCANCEL)
    assert sn.evaluate(check.validate()) is True
    assert 'rank 1 on n2' in check.cg_hang_note


def test_an_output_cut_short_by_a_cancellation_names_it(monkeypatch,
                                                        memory):
    # nothing else in the stderr: the cancellation is the cause (a night's
    # HPCC run cancelled in HPL said only that its summary was missing)
    half = MEM2[:len(MEM2) // 2]
    with pytest.raises(SanityError, match=r'\[job stderr: Slurm cancelled '
                       r'step 18\.0 on n1 by scancel or a signal\]'):
        sn.evaluate(_fed(monkeypatch, memory, half, SCANCEL).validate())
    # cut short with a clean stderr: no cause is made up
    with pytest.raises(SanityError) as err:
        sn.evaluate(_fed(monkeypatch, memory, half, '').validate())
    assert 'job stderr' not in str(err.value)
