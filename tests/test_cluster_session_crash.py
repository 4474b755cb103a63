"""Which failed ReFrame runs the site-init tests run again: only those
whose every failure is OpenMPI's start-up crash (a rank's segmentation
fault before the program completed), from a real report: the 9-node
link matrix under ``srun --mpi=pmix`` whose two tries both crashed within
seconds (docs/reports/emulated-cluster.md)."""

import copy
import json
import os

import cluster_session as cs

CRASH = os.path.join(os.path.dirname(__file__), 'fixtures',
                     'reframe-reports', 'openmpi-startup-crash.json')


def _write(tmp_path, report):
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(report))
    return str(path)


def _crash():
    with open(CRASH) as fp:
        return json.load(fp)


def test_a_run_that_only_crashed_at_start_up_runs_again():
    assert cs.startup_crash_only(CRASH)


def test_a_named_fault_beside_the_crash_is_not_run_again(tmp_path):
    report = _crash()
    case = copy.deepcopy(report['runs'][-1]['testcases'][0])
    case['fail_reason'] = ('performance error: faults=1 verdicts: uplink '
                           'leaf2-spine on fabric fab0: 0.25x')
    case['result'] = 'fail'
    report['runs'][-1]['testcases'].append(case)
    assert not cs.startup_crash_only(_write(tmp_path, report))


def test_a_rank_killed_is_not_run_again(tmp_path):
    # a rank killed (a node that died, a time limit) is the check's
    # verdict, not OpenMPI's start-up
    report = _crash()
    for c in report['runs'][-1]['testcases']:
        if c['result'] == 'fail':
            c['fail_reason'] = c['fail_reason'].replace(
                'Segmentation fault', 'Killed')
    assert not cs.startup_crash_only(_write(tmp_path, report))


def test_no_failure_no_report_or_garbage_is_not_run_again(tmp_path):
    report = _crash()
    for c in report['runs'][-1]['testcases']:
        c['result'], c['fail_reason'] = 'pass', None
    assert not cs.startup_crash_only(_write(tmp_path, report))
    assert not cs.startup_crash_only(str(tmp_path / 'missing.json'))
    (tmp_path / 'bad.json').write_text('{"runs": [')
    assert not cs.startup_crash_only(str(tmp_path / 'bad.json'))
