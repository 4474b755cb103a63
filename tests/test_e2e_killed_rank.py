"""End to end: one rank of a running OpenMPI job is killed (SIGKILL, as the
OOM killer does) in a real ReFrame session on ``localhost``. The failure
names the rank and the signal, the session finishes, the other test's
perflog is written and the results database is intact."""

import glob
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time

import pytest

from conftest import ROOT, reframe_cmd, reframe_failures

pytestmark = pytest.mark.e2e

#: Long enough to be killed in the middle (each trial flushes the caches)
TRIALS = 3000
VICTIM = f'--trials {TRIALS}'


def _ranks():
    """PIDs of the running cg_contention ranks of the victim test."""
    pids = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as fp:
                cmd = fp.read().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        if 'cg_contention' in cmd.split(' ')[0] and VICTIM in cmd:
            pids.append(int(pid))

    return sorted(pids)


def _kill_one_rank(done, killed, deadline=900):
    """Wait (bounded) until both ranks run, then SIGKILL the second."""
    end = time.monotonic() + deadline
    while not done.is_set() and time.monotonic() < end:
        pids = _ranks()
        if len(pids) >= 2:
            time.sleep(1)   # in the middle of the measurement
            try:
                os.kill(pids[-1], signal.SIGKILL)
                killed.append(pids[-1])
            except ProcessLookupError:
                continue
            return

        time.sleep(0.2)


@pytest.fixture(scope='module')
def session(tmp_path_factory):
    out = tmp_path_factory.mktemp('killed')
    env = dict(os.environ, SLURM_CONF='',                  # force localhost
               CG_PERFLOG_DIR=str(out / 'perflogs'),
               CG_RESULTS_DB=str(out / 'results.db'),
               CG_DEBUG_LOG=str(out / 'reframe.log'))
    report = out / 'report.json'
    cmd = reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'),
        # the 8 B points over shm of both (two -n would have to match
        # both; -x 'msg_bytes=10000' also drops 1000000)
        '-n', '^(RightShift|PingPongDistance)', '-x', '%interconnect=tcp',
        '-x', '%msg_bytes=10000',
        '-S', 'valid_prog_environs=openmpi',
        '-S', f'PingPongDistance.trials={TRIALS}',
        '--exec-policy=serial', '--prefix', str(out),
        '--report-file', str(report), '-r']
    done, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_one_rank, args=(done, killed))
    killer.start()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env,
                             timeout=1800)
    finally:
        done.set()
        killer.join()

    (out / 'stdout.txt').write_text(res.stdout + res.stderr)
    return res, json.loads(report.read_text()), out, killed


def test_the_killed_rank_and_signal_are_named(session):
    res, report, _, killed = session
    assert killed, 'no rank was found to kill:\n' + res.stdout[-3000:]
    assert res.returncode != 0, 'a killed rank went unnoticed'
    cases = {tc['name'].split()[0]: tc for run in report['runs']
             for tc in run['testcases']}
    victim = cases['PingPongDistance']
    assert victim['result'] == 'fail'
    assert victim['fail_phase'] == 'sanity'
    assert ('[job stderr: rank 1 on ' in victim['fail_reason'] and
            'was killed by signal 9 (Killed)]' in victim['fail_reason']), \
        victim['fail_reason']


def test_the_session_finished_and_the_other_test_passed(session):
    res, report, _, _ = session
    cases = {tc['name'].split()[0]: tc for run in report['runs']
             for tc in run['testcases']}
    assert cases['RightShift']['result'] == 'pass', \
        reframe_failures(res.stdout)
    assert 'Ran 3/3 test case(s)' in res.stdout   # with the programs' build


def test_perflog_and_results_db_are_intact(session):
    _, _, out, _ = session
    logs = glob.glob(str(out / 'perflogs' / '**' / '*.log'), recursive=True)
    lines = [ln for f in logs for ln in open(f) if 'RightShift' in ln]
    assert lines and all('latency=' in ln for ln in lines), logs

    db = sqlite3.connect(str(out / 'results.db'))
    try:
        assert db.execute('PRAGMA integrity_check').fetchone()[0] == 'ok'
        tables = {r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        assert 'sessions' in tables
        assert db.execute('SELECT count(*) FROM sessions').fetchone()[0] == 1
    finally:
        db.close()
