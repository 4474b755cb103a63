"""End to end: an acceptance session on ``localhost`` ends with its score
(clustergate.results.score, printed by the end-of-session hook of
clustergate.rfm.session), writes the score JSON and adds it to the run report;
a second session against the first one's JSON (the signed-off baseline)
gets a figure. One real HPL run per session (HPCC at N=768)."""

import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, reframe_cmd, reframe_failures

pytestmark = pytest.mark.e2e

ONE_POINT = 'HpccHpl%hpcc.num_nodes=1%hpcc.ppn=2%hpcc.interconnect=shm'


def session(out, name, baseline=None):
    env = dict(os.environ, SLURM_CONF='',
               CG_PERFLOG_DIR=str(out / 'perflogs'),
               CG_RESULTS_DB=str(out / 'results.db'),
               CG_DEBUG_LOG=str(out / f'{name}.log'),
               CG_SCORE_FILE=str(out / f'{name}-score.json'))
    env.pop('CG_SCORE_BASELINE', None)
    if baseline:
        env['CG_SCORE_BASELINE'] = str(baseline)
    report = out / f'{name}-report.json'
    res = subprocess.run(
        reframe_cmd() + ['-C', os.path.join(ROOT, 'config', 'settings.py'),
                         '--mode', 'acceptance', '-n', ONE_POINT,
                         '-S', 'HpccRun.max_problem_size=768',
                         '--prefix', str(out / name),
                         '--report-file', str(report), '-r'],
        capture_output=True, text=True, env=env, timeout=900)
    return res, report, out / f'{name}-score.json'


@pytest.fixture(scope='module')
def sessions(tmp_path_factory):
    out = tmp_path_factory.mktemp('score')
    first = session(out, 'first')
    second = session(out, 'second', baseline=first[2])
    return first, second


def test_acceptance_prints_and_writes_the_score(sessions):
    (res, report, score_json), _ = sessions
    assert res.returncode == 0, reframe_failures(res.stdout)
    assert 'ACCEPTANCE SCORE' in res.stdout
    # localhost has no references file: no figure, values archived
    assert 'localhost:local: no score' in res.stdout
    doc = json.loads(score_json.read_text())
    (part,) = doc['partitions']
    assert {m['metric'] for m in part['metrics']} == {'gflops', 'time'}
    assert all(m['value'] > 0 for m in part['metrics'])
    assert json.loads(report.read_text())['clustergate_score'] == doc


def test_signed_off_baseline_gives_a_figure(sessions):
    _, (res, _, score_json) = sessions
    assert res.returncode == 0, reframe_failures(res.stdout)
    m = re.search(r'localhost:local: ([0-9.]+) over 2 metric', res.stdout)
    assert m, res.stdout[-2000:]
    doc = json.loads(score_json.read_text())
    assert doc['partitions'][0]['score'] == pytest.approx(float(m.group(1)),
                                                          abs=5e-4)
    # the same point measured twice: same order of magnitude
    assert 0.2 < float(m.group(1)) < 5
