"""End to end: IMB PingPong (the real IMB-MPI1 of PyPI's impi-rt) runs in
ci mode on localhost over shm and tcp, passes sanity and logs latency and
bandwidth in the perflog."""

import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, reframe_cmd, reframe_failures

pytestmark = pytest.mark.e2e


def _impi():
    sys.path.insert(0, os.path.join(ROOT, 'config', 'systems'))
    try:
        import _mpi
        return _mpi.impi_prefix()
    finally:
        sys.path.pop(0)


@pytest.fixture(scope='module')
def imb_run(tmp_path_factory):
    if _impi() is None:
        pytest.skip('Intel MPI not installed: pip install -e .[intelmpi]')

    tmp = tmp_path_factory.mktemp('imbe2e')
    env = dict(os.environ, CG_PERFLOG_DIR=str(tmp / 'perflogs'),
               CG_RESULTS_DB=str(tmp / 'results.db'))
    report = tmp / 'report.json'
    cmd = reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'),
        '--system', 'localhost', '-c', os.path.join(ROOT, 'checks', 'imb'),
        '-n', '^ImbPingPong', '--mode', 'ci', '-p', '^intelmpi$',
        '--prefix', str(tmp), '--report-file', str(report), '-r',
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=240, cwd=ROOT)
    with open(report) as fp:
        return proc, json.load(fp), tmp


def test_pingpong_passes_on_shm_and_tcp(imb_run):
    proc, report, _ = imb_run
    cases = [tc for run in report['runs'] for tc in run['testcases']
             if tc['name'].startswith('ImbPingPong')
             and tc['environ'] == 'intelmpi']
    passed = {tc['interconnect']: tc for tc in cases
              if tc['result'] == 'pass'}
    assert set(passed) == {'shm', 'tcp'}, reframe_failures(proc.stdout)
    for ic, tc in passed.items():
        perf = {k.rsplit(':', 1)[1]: v[0] for k, v in tc['perfvalues'].items()}
        assert perf['latency_0B'] > 0 and perf['latency_8B'] > 0, ic
        assert perf['bandwidth'] > 0, ic

    # shared memory beats TCP loopback by far, whatever the machine's load
    lat = {ic: {k.rsplit(':', 1)[1]: v[0] for k, v in
                tc['perfvalues'].items()}['latency_8B']
           for ic, tc in passed.items()}
    assert lat['shm'] < lat['tcp']


def test_full_table_kept_and_perflog_written(imb_run):
    _, report, tmp = imb_run
    tc = next(tc for run in report['runs'] for tc in run['testcases']
              if tc['name'].startswith('ImbPingPong')
              and tc['result'] == 'pass')
    with open(os.path.join(tc['outputdir'], 'rfm_job.out')) as fp:
        out = fp.read()
    assert '4194304' in out and '# All processes entering MPI_Finalize' in out
    logs = glob.glob(str(tmp / 'perflogs' / 'localhost' / 'local' /
                         'ImbPingPong.log'))
    assert logs
    with open(logs[0]) as fp:
        text = fp.read()
    assert 'latency_8B=' in text and 'bandwidth=' in text
