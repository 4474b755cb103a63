"""The acceptance score (clustergate.results.score, clustergate score) on a real
ReFrame run report: `reframe --mode ci -c checks/hpcc` on localhost
(tests/fixtures/reports/hpcc-ci-localhost.report.json, 2026-11-22: 4 HPL
and 2 b_eff cases, 20 metrics)."""

import copy
import json
import math
import os

import pytest

from clustergate.results import score
from clustergate.commands import score_cmd
from conftest import FIXTURES

REPORT = os.path.join(FIXTURES, 'reports', 'hpcc-ci-localhost.report.json')


@pytest.fixture
def report():
    with open(REPORT) as fp:
        return json.load(fp)


def signed_off(report):
    """The score JSON of the report itself: what a site archives."""
    return score.to_json(score.compute(report), report)


def test_without_references_there_is_no_score(report):
    (ps,) = score.compute(report)
    assert ps.name == 'localhost:local'
    assert ps.score is None and len(ps.unscored) == 20
    assert 'no score' in '\n'.join(score.summary_lines([ps]))


def test_a_session_against_itself_scores_one(report):
    (ps,) = score.compute(report, signed_off(report))
    assert ps.score == pytest.approx(1.0)
    assert len(ps.ratios) == 20 and not ps.pulled_down()


def _scale(doc, metric, factor):
    for part in doc['partitions']:
        for m in part['metrics']:
            if m['metric'] == metric:
                m['value'] *= factor


def test_direction_aware_and_names_what_pulled_it_down(report):
    base = signed_off(report)
    # the reference was twice as fast: HPL's Gflop/s (higher is better)
    # and b_eff's ping-pong latency (lower is better) both count 0.5
    _scale(base, 'gflops', 2.0)
    _scale(base, 'pingpong_latency', 0.5)
    (ps,) = score.compute(report, base)
    low = [(r.metric, r.ratio) for r in ps.ratios if r.ratio < 1]
    assert {m for m, _ in low} == {'gflops', 'pingpong_latency'}
    assert all(r == pytest.approx(0.5) for _, r in low)
    n_low = len(low)     # 4 HPL points + 2 b_eff points
    assert n_low == 6
    assert ps.score == pytest.approx(math.exp(n_low * math.log(0.5) / 20))
    worst = ps.pulled_down()
    assert len(worst) == score.WORST
    assert {r.metric for r in worst} <= {'gflops', 'pingpong_latency'}
    lines = '\n'.join(score.summary_lines([ps]))
    assert 'pulled down by HpccHpl' in lines or \
        'pulled down by HpccBeff' in lines


def test_a_faster_session_scores_above_one(report):
    base = signed_off(report)
    _scale(base, 'random_ring_bandwidth', 0.5)   # we are twice as fast
    (ps,) = score.compute(report, base)
    assert ps.score > 1 and not ps.pulled_down()


def test_reframe_reference_wins_over_the_baseline(report):
    rep = copy.deepcopy(report)
    for run in rep['runs']:
        for tc in run['testcases']:
            for key, tup in (tc.get('perfvalues') or {}).items():
                if key.endswith(':gflops'):
                    tup[1] = tup[0] * 4      # config/references said 4x
    (ps,) = score.compute(rep, signed_off(report))
    hpl = [r for r in ps.ratios if r.metric == 'gflops']
    assert hpl and all(r.source == 'reference' and
                       r.ratio == pytest.approx(0.25) for r in hpl)


def test_command_prints_and_writes_json(tmp_path, report, capsys):
    base = tmp_path / 'signed-off.json'
    base.write_text(json.dumps(signed_off(report)))
    copy_ = tmp_path / 'report.json'
    copy_.write_text(json.dumps(report))
    out = tmp_path / 'score.json'
    args = score_cmd.add_parser(
        __import__('argparse').ArgumentParser().add_subparsers()
    ).parse_args(['--json', str(copy_), '--baseline', str(base), '-o',
                  str(out), '--annotate'])
    assert score_cmd.run(args) == 0
    printed = capsys.readouterr().out
    assert 'localhost:local: 1.000 over 20 metric(s)' in printed
    doc = json.loads(out.read_text())
    assert doc['partitions'][0]['score'] == pytest.approx(1.0)
    assert len(doc['partitions'][0]['metrics']) == 20
    assert json.loads(copy_.read_text())['clustergate_score'] == doc


def test_an_unwritable_score_file_is_one_line_and_the_session_goes_on(
        tmp_path, report, capsys):
    # the job user may not write into the project checkout (the default
    # place): the score is still printed and kept in the run report, and
    # nothing raises into the end of the session (whose verdict follows)
    copy_ = tmp_path / 'report.json'
    copy_.write_text(json.dumps(report))
    blocked = tmp_path / 'a-file'
    blocked.write_text('')
    path = str(blocked / 'score.json')
    assert score.session_end(report, str(copy_), score_file=path,
                             baseline=None) is None
    printed = capsys.readouterr().out
    assert f'score JSON NOT written: {path}: ' in printed
    assert 'set CG_SCORE_FILE' in printed
    assert 'localhost:local: no score' in printed
    assert 'clustergate_score' in json.loads(copy_.read_text())
