"""A verdict decided inside its job is final for the ReFrame session: with
``--max-retries 1`` a failing case that recorded its decided verdict
(:class:`clustergate.rfm.families.linkmatrix.DecidedVerdict`, the link matrix's
retest) is not run again; the retry fails at once with the same verdict
and the session is red. Measured in a real ReFrame session on this
machine: the job (3 s) runs once, against twice with ``-S
retry_decided=true``."""

import os
import subprocess
import time

from conftest import ROOT, reframe_cmd

CHECK = '''
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (performance_function, run_before,
                                   sanity_function)

from clustergate.rfm.families.linkmatrix import DecidedVerdict


@rfm.simple_test
class DecidedFault(rfm.RunOnlyRegressionTest, DecidedVerdict):
    valid_systems = ['*']
    valid_prog_environs = ['openmpi']
    executable = 'sh'
    executable_opts = ['-c', '"sleep 3; date >> {jobs}; echo faults"']
    reference = {{'*': {{'faults': (0, None, 0, 'verdicts')}}}}

    @sanity_function
    def ran(self):
        return sn.assert_found('faults', self.stdout)

    @performance_function('verdicts')
    def faults(self):
        return 1

    @run_before('performance')
    def decide(self):
        self.decided(['suspect node n5 on fabric fab0: slow, decided'])
'''


def session(tmp_path, name, *extra):
    jobs = tmp_path / f'jobs.{name}'
    check = tmp_path / f'{name}_check.py'
    check.write_text(CHECK.format(jobs=jobs))
    env = {k: v for k, v in os.environ.items() if k != 'SLURM_CONF'}
    env.update(CG_RESULTS_DB=str(tmp_path / 'results.db'),
               CG_DEBUG_LOG=str(tmp_path / 'reframe.log'),
               CG_PERFLOG_DIR=str(tmp_path / 'perflogs'))
    t0 = time.monotonic()
    proc = subprocess.run(
        reframe_cmd() + ['-C', os.path.join(ROOT, 'config', 'settings.py'),
                         '--system', 'localhost', '-c', str(check),
                         '--max-retries', '1', *extra, '--prefix',
                         str(tmp_path / f'rfm.{name}'), '-r'],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    runs = len(jobs.read_text().splitlines()) if jobs.exists() else 0
    return proc, runs, time.monotonic() - t0


def test_a_decided_verdict_is_not_run_again_by_the_retry(tmp_path):
    proc, runs, _ = session(tmp_path, 'decided')
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert runs == 1, proc.stdout[-3000:]
    assert 'Retrying 1 failed check(s) (retry 1/1)' in proc.stdout
    assert ('Reason: performance error: faults=1 verdicts: suspect node n5 '
            'on fabric fab0: slow, decided (decided by the link retest in '
            'an earlier run of this session') in proc.stdout
    # the same session measuring again: the job runs twice (counted by the
    # job itself; wall times are not compared: under load a session's
    # start-up varies by more than the job's 3 s)
    proc, again, _ = session(tmp_path, 'again', '-S', 'retry_decided=true')
    assert proc.returncode != 0 and again == 2, proc.stdout[-3000:]
