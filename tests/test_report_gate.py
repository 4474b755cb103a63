"""``clustergate report`` as a CI gate: its exit status follows the
headline (0 GREEN, 1 RED, 3 UNCHECKED) and it names the session whose
failed tests it lists, the latest or the one ``--session`` names."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip('matplotlib')

T0 = 1795475011.0


def _case(result='pass', value=100.0, ref=100.0, phase=None):
    return {'name': 'PingPongDistance %num_nodes=1 %ppn=2',
            'display_name': 'PingPongDistance %num_nodes=1 %ppn=2',
            'system': 'localhost', 'partition': 'local',
            'environ': 'openmpi', 'result': result, 'fail_phase': phase,
            'fail_reason': 'sanity error: no CG_DONE in the output'
            if phase == 'sanity' else None,
            'job_completion_time_unix': T0,
            'perfvalues': {} if phase == 'sanity' else {
                # ReFrame's "no reference": (0, None, None)
                'localhost:local:latency': [value, ref, -0.1 if ref else None,
                                            0.1 if ref else None, 'us']}}


def _report(path, uuid, t, case):
    case = dict(case, job_completion_time_unix=t)
    path.write_text(json.dumps({
        'session_info': {'uuid': uuid, 'time_start': f'start-{uuid}',
                         'time_end': f'end-{uuid}', 'time_end_unix': t + 5,
                         'cmdline': 'reframe --mode nightly -r'},
        'runs': [{'run_index': 0, 'testcases': [case]}]}))
    return str(path)


def _report_cmd(tmp_path, *argv):
    cp = subprocess.run(
        [sys.executable, '-m', 'clustergate.cli', 'report', *argv,
         '--matrices', str(tmp_path), '-o', str(tmp_path / 'r' /
                                                'index.html')],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert 'Traceback' not in cp.stderr, cp.stderr
    return cp


@pytest.mark.parametrize('case,status,word', [
    (_case(), 0, 'GREEN'),
    (_case(value=150.0), 1, 'RED'),             # out of its reference
    (_case('fail', phase='sanity'), 1, 'RED'),  # a failed test case
    (_case(ref=0.0), 3, 'UNCHECKED'),           # nothing judged
])
def test_exit_status_follows_the_headline(tmp_path, case, status, word):
    cp = _report_cmd(tmp_path, '--json',
                     _report(tmp_path / 'a.json', 'aaaa1111', T0, case))
    assert cp.returncode == status, cp.stdout + cp.stderr
    assert cp.stdout.startswith(f'{word}: ')


def test_a_failed_fixture_counts_apart_from_the_tests_that_read_it(
        tmp_path):
    # a cancelled shared HPCC run (a fixture) and the test that reads it
    # (fail_deps): one failed fixture, one test not run, no failed test,
    # as the session's VERDICT says it; still RED
    hpcc = dict(_case('fail', phase='sanity'), fixture=True,
                name='HpccRun %num_nodes=8', display_name='HpccRun %num_nodes=8')
    reader = dict(_case('fail_deps'), perfvalues={})
    path = tmp_path / 'a.json'
    path.write_text(json.dumps({
        'session_info': {'uuid': 'aaaa1111', 'time_start': 's',
                         'time_end': 'e', 'time_end_unix': T0 + 5,
                         'cmdline': 'reframe --mode nightly -r'},
        'runs': [{'run_index': 0, 'testcases': [hpcc, reader]}]}))
    cp = _report_cmd(tmp_path, '--json', str(path))
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert cp.stdout.startswith(
        'RED: 0 failed test case(s), 1 fixture(s) (builds, shared runs) '
        'failed, 1 test case(s) that read them not run'), cp.stdout
    page = (tmp_path / 'r' / 'index.html').read_text()
    assert 'HpccRun %num_nodes=8 [fixture]' in page


def test_a_session_that_ran_nothing_is_unchecked_not_green(tmp_path):
    # last night judged a value within its reference; tonight every case
    # was skipped: the latest values are last night's, nothing was checked
    judged = _report(tmp_path / 'a.json', 'aaaa1111', T0, _case())
    skipped = _report(tmp_path / 'b.json', 'bbbb2222', T0 + 86400,
                      dict(_case('skip'), perfvalues={}))
    cp = _report_cmd(tmp_path, '--json', judged, skipped)
    assert cp.returncode == 3, cp.stdout + cp.stderr
    assert cp.stdout.startswith(
        'UNCHECKED: no test case of the session ran (each was skipped or '
        'none was selected): nothing was checked; 0 failed test case(s)')
    assert 'failed tests of session bbbb2222' in cp.stdout


def test_the_session_read_is_named_and_selectable(tmp_path):
    red = _report(tmp_path / 'old.json', 'old00001', T0,
                  _case('fail', phase='sanity'))
    green = _report(tmp_path / 'new.json', 'new00002', T0 + 86400, _case())
    cp = _report_cmd(tmp_path, '--json', red, green)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert 'failed tests of session new00002 (start-new00002 .. ' \
           'end-new00002, reframe --mode nightly -r)' in cp.stdout

    cp = _report_cmd(tmp_path, '--json', red, green, '--session', 'old')
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert cp.stdout.startswith('RED: 1 failed test case(s)')
    assert 'failed tests of session old00001' in cp.stdout


def test_timing_and_score_name_the_session_and_select_it(tmp_path):
    a = _report(tmp_path / 'a.json', 'aaaa1111', T0, _case())
    for cmd in ('timing', 'score'):
        cp = subprocess.run(
            [sys.executable, '-m', 'clustergate.cli', cmd, '--json', a,
             '--session', 'aaaa'] + (['-o', str(tmp_path / 's.json')]
                                     if cmd == 'score' else []),
            capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert cp.returncode == 0, cp.stderr
        assert cp.stdout.splitlines()[0] == (
            'read: session aaaa1111 (start-aaaa1111 .. end-aaaa1111, '
            'reframe --mode nightly -r)'), cmd


def test_the_ci_templates_gate_on_the_report():
    """The nightly jobs write the page where the artifacts are taken
    (-o names a file) and keep the report's status."""
    import yaml
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, 'ci', 'gitlab-ci.yml')) as fp:
        script = ' '.join(yaml.safe_load(fp)['nightly']['script'])
    assert '-o report/index.html' in script
    assert 'clustergate report' in script and '|| rrc=$?' in script
    with open(os.path.join(root, 'ci', 'github-actions.yml')) as fp:
        text = fp.read()
    assert '-o report/index.html' in text
