"""A Slurm job pending for a reason that never clears fails at once with
that reason: ReFrame's own ``squeue`` backend polling a fake ``squeue``
(and ``scancel``) on PATH, with the cancel reasons that ``clustergate site
init`` writes into a partition (and the emulated cluster declares)."""

import os
import runpy
import time

import pytest
from reframe.core.schedulers.slurm import SqueueJobScheduler

from clustergate.site import slurmreasons
from test_site_init import init, project_copy


class _Job:
    """What the backend's poll reads and writes of a ReFrame job."""

    def __init__(self, jobid):
        self.jobid = jobid
        self.submit_time = time.time() - 60
        self.is_array = False
        self._state = 'PENDING'
        self._is_cancelling = False
        self._exception = None
        self.max_pending_time = None

    @property
    def state(self):
        return self._state

    @property
    def is_cancelling(self):
        return self._is_cancelling


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """``squeue`` answering job 18 pending with ``$FAKE_REASON``;
    ``scancel`` recording its arguments."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    log = tmp_path / 'scancel.log'
    (bindir / 'squeue').write_text(
        '#!/bin/sh\necho "18|PENDING||$FAKE_REASON"\n')
    (bindir / 'scancel').write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    for f in ('squeue', 'scancel'):
        (bindir / f).chmod(0o755)
    monkeypatch.setenv('PATH', f'{bindir}:{os.environ["PATH"]}')
    return log


def _poll(reasons, reason, monkeypatch):
    monkeypatch.setenv('FAKE_REASON', reason)
    sched = SqueueJobScheduler.__new__(SqueueJobScheduler)
    sched._cancel_reasons = list(reasons)
    sched._squeue = 'squeue'
    sched._submit_timeout = 30
    sched._pending_job_reason_poll_freq = 10
    sched._update_state_count = 0
    job = _Job('18')
    sched.poll(job)
    return job


def _site_reasons(tmp_path):
    root = project_copy(tmp_path)
    init(root, 'emusite', 'site')
    mod = runpy.run_path(str(root / 'config' / 'systems' / 'site.py'))
    parts = mod['site_configuration']['systems'][0]['partitions']
    got = {tuple(p['sched_options']['slurm_job_cancel_reasons'])
           for p in parts}
    assert len(got) == 1
    return list(got.pop())


@pytest.mark.parametrize('reason', [
    'PartitionConfig', 'PartitionNodeLimit',
    'ReqNodeNotAvail, UnavailableNodes:n13'])
def test_a_job_that_can_never_start_is_cancelled_naming_why(
        tmp_path, fake_slurm, monkeypatch, reason):
    job = _poll(_site_reasons(tmp_path), reason, monkeypatch)
    assert fake_slurm.read_text().split() == ['18']
    assert job.is_cancelling
    assert f'blocked due to reason: {reason}' in str(job._exception)


def test_reframes_default_lets_partitionconfig_pend(fake_slurm, monkeypatch):
    # ReFrame's default list: the job of an 8-node case on a 2-node
    # partition pended for ever
    job = _poll(['ReqNodeNotAvail'], 'PartitionConfig', monkeypatch)
    assert not fake_slurm.exists() and job._exception is None


@pytest.mark.parametrize('reason', ['Resources', 'Priority', 'Dependency'])
def test_a_job_waiting_its_turn_is_left_alone(fake_slurm, monkeypatch,
                                              reason):
    job = _poll(slurmreasons.cancel_reasons(), reason, monkeypatch)
    assert not fake_slurm.exists() and job._exception is None
