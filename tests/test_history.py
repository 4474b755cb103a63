"""Change points across nights (clustergate.results.history) on given histories."""

import random

import pytest

from clustergate.results.samples import Key, Sample
from clustergate.results import history
from clustergate.commands import history_cmd

DAY = 86400.0
T0 = 1_790_000_000.0


def _series(values, metric='bw_min', unit='MB/s', ref=None, lower=None,
            upper=None, check='LinkMatrix'):
    key = Key('emucluster', 'emu', check, 'environ=openmpi', metric)
    return key, [Sample(key, v, unit, T0 + i * DAY, f'sess{i}:0',
                                 'pass', ref, lower, upper)
                 for i, v in enumerate(values)]


def _noisy(n, level, sigma, seed):
    rng = random.Random(seed)
    return [level * (1 + rng.gauss(0, sigma)) for _ in range(n)]


def test_a_10_percent_loss_from_night_k_is_found_at_night_k():
    values = _noisy(12, 100.0, 0.02, 1) + _noisy(8, 90.0, 0.02, 2)
    key, samples = _series(values)
    found = history.shifts(key, samples)
    assert len(found) == 1
    f = found[0]
    assert f.index == 12 and f.run == 'sess12:0'
    assert f.change == pytest.approx(-0.10, abs=0.02)
    assert f.band == 'warn'          # no reference: a warning
    assert 'since session sess12' in f.message()


def test_healthy_noise_gives_no_change_point():
    # 30 healthy series of 20 nights with 3 % noise: no false alarm
    for seed in range(30):
        key, samples = _series(_noisy(20, 100.0, 0.03, seed))
        assert history.shifts(key, samples) == [], seed
        assert history.drift(key, samples) is None, seed


def test_direction_decides_regression_or_improvement():
    up = [10.0] * 6 + [12.0] * 6
    pp = 'PingPongDistance'
    key, samples = _series(up, metric='latency', unit='us', check=pp)
    assert [f.band for f in history.shifts(key, samples)] == ['warn']
    key, samples = _series(up, metric='bandwidth', unit='MB/s', check=pp)
    assert [f.band for f in history.shifts(key, samples)] == \
        ['improvement']
    key, samples = _series(up[::-1], metric='latency', unit='us', check=pp)
    assert [f.band for f in history.shifts(key, samples)] == \
        ['improvement']
    # declared, not read from the name or unit ('x'): less OS noise is
    # better
    key, samples = _series(up[::-1], metric='slowdown_k', unit='x',
                           check='OsNoise')
    assert [f.band for f in history.shifts(key, samples)] == \
        ['improvement']


def test_regression_out_of_reference_is_fail():
    values = [100.0] * 6 + [70.0] * 4
    key, samples = _series(values, ref=100.0, lower=-0.2, upper=None)
    (f,) = history.shifts(key, samples)
    assert f.band == 'fail' and f.index == 6


def test_slide_of_3_percent_a_night_is_a_drift():
    values = [100.0 * (1 - 0.03 * i) for i in range(10)]
    values = [v * (1 + 0.002 * ((-1) ** i)) for i, v in enumerate(values)]
    key, samples = _series(values)
    d = history.drift(key, samples)
    assert d is not None and d.kind == 'drift'
    assert d.change == pytest.approx(-0.03, abs=0.005)
    assert d.band == 'warn'


def test_small_step_inside_the_noise_is_not_reported():
    values = _noisy(10, 100.0, 0.05, 7) + _noisy(10, 98.0, 0.05, 8)
    key, samples = _series(values)
    assert history.shifts(key, samples) == []


def test_robust_noise_ignores_one_step():
    values = [100.0, 101.0, 99.0, 100.0, 101.0, 50.0, 51.0, 49.0, 50.0]
    # the step 101 -> 50 is one difference of eight
    assert history.robust_noise(values) < 0.03


def test_history_command_reads_json_reports(tmp_path, capsys):
    import json
    runs = []
    for i, bw in enumerate([100, 101, 99, 100, 100, 80, 81, 79, 80]):
        runs.append({'session_info': {'uuid': f's{i}'}, 'runs': [{
            'run_index': 0, 'testcases': [{
                'name': 'LinkMatrix', 'display_name': 'LinkMatrix',
                'system': 'emucluster', 'partition': 'emu',
                'environ': 'openmpi', 'result': 'pass',
                'job_completion_time_unix': T0 + i * DAY,
                'perfvalues': {'emucluster:emu:bw_min':
                               [bw, 100, -0.1, None, 'MB/s']},
            }]}]})
    paths = []
    for i, r in enumerate(runs):
        p = tmp_path / f'r{i}.json'
        p.write_text(json.dumps(r))
        paths.append(str(p))

    parser = __import__('argparse').ArgumentParser()
    sub = parser.add_subparsers()
    history_cmd.add_parser(sub)
    args = parser.parse_args(['history', '--json', *paths])
    status = history_cmd.run(args)
    out = capsys.readouterr().out
    assert status == 1              # 80 MB/s is out of its reference
    assert 'FAIL: LinkMatrix emucluster:emu [environ=openmpi] bw_min: ' \
           'shift -20.0%' in out
    assert 'since session s5, 2026-09-26 14:13 UTC' in out


def test_a_count_that_is_mostly_zero_is_skipped_not_a_crash():
    # the link matrix's `faults` (verdicts per run) is 0 on healthy nights
    key, samples = _series([0.0] * 6 + [1.0, 0.0, 0.0], metric='faults',
                           unit='verdicts')
    assert history.shifts(key, samples) == []
    assert history.analyse(samples) == []


def test_a_perflog_run_is_named_whole():
    key, samples = _series([100.0] * 6 + [90.0] * 6)
    samples = [Sample(s.key, s.value, s.unit, s.time,
                               f'{i}@2026-11-23T00:14:35+00:00', 'pass')
               for i, s in enumerate(samples)]
    f, = history.shifts(key, samples)
    assert 'since session 6@2026-11-23T00:14:35+00:00,' in f.message()


def _report_files(tmp_path, values, system='emucluster'):
    import json
    paths = []
    for i, bw in enumerate(values):
        p = tmp_path / f'r{i}.json'
        p.write_text(json.dumps({'session_info': {'uuid': f's{i}'}, 'runs': [{
            'run_index': 0, 'testcases': [{
                'name': 'LinkMatrix', 'display_name': 'LinkMatrix',
                'system': system, 'partition': 'emu',
                'environ': 'openmpi', 'result': 'pass',
                'job_completion_time_unix': T0 + i * DAY,
                'perfvalues': {f'{system}:emu:bw_min':
                               [bw, 100, -0.1, None, 'MB/s']},
            }]}]}))
        paths.append(str(p))
    return paths


def _history(argv):
    parser = __import__('argparse').ArgumentParser()
    history_cmd.add_parser(parser.add_subparsers())
    return history_cmd.run(parser.parse_args(['history', *argv]))


def test_two_runs_are_too_few_to_search_not_zero_changes(tmp_path, capsys):
    status = _history(['--json', *_report_files(tmp_path, [100, 50])])
    out = capsys.readouterr().out
    assert status == 3
    assert 'too few runs to search' in out
    assert 'needs 4 runs of a metric, the most any metric has is 2' in out
    assert '0 change(s)' not in out


def test_metrics_with_too_few_runs_are_counted_apart(tmp_path, capsys):
    (tmp_path / 'a').mkdir()
    paths = _report_files(tmp_path / 'a', [100] * 5)
    paths += _report_files(tmp_path, [100, 100], system='other')
    assert _history(['--json', *paths]) == 0
    out = capsys.readouterr().out
    assert ('history: 2 metric(s), 5 run(s), 1 of them searched, 1 with '
            'fewer than 4 runs (too few to search); 0 change(s)') in out


@pytest.mark.parametrize('flag,value,names', [
    ('--system', 'nosuch', 'no such system in'),
    ('--system', 'emucluster:nosuch', 'system emucluster has no partition '
                                      'nosuch'),
    ('--check', 'NoSuchCheck', 'matches no check'),
])
def test_a_name_that_selects_nothing_is_bad_input(tmp_path, capsys, flag,
                                                  value, names):
    paths = _report_files(tmp_path, [100] * 5)
    assert _history(['--json', *paths, flag, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and names in err[0], err
    # what it could have named
    assert ('emucluster' if flag == '--system' else 'LinkMatrix') in err[0]


def test_unreadable_perflog_lines_are_counted_not_skipped_silently(tmp_path):
    """Garbage, a line cut short and a value that is not a number are
    skipped and said so, with the file and line numbers; the good lines
    are read as before."""
    import os
    import shutil
    import subprocess
    import sys
    from clustergate.results.samples import read_perflogs

    src = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'fixtures', 'nights-n5-90', 'perflogs')
    logs = tmp_path / 'perflogs'
    shutil.copytree(src, logs)
    good = len(read_perflogs([str(logs)]))
    log = logs / 'emucluster' / 'emu' / 'LinkMatrix.log'
    lines = log.read_text().splitlines(keepends=True)
    n = len(lines)
    last = lines[-1]
    with open(log, 'a') as fp:
        fp.write('garbage written by something else\n')          # n + 1
        fp.write(last[:len(last) // 2] + '\n')                    # n + 2
        fp.write(last.replace('bw_min=', 'bw_min=12x4', 1))      # n + 3
    found = read_perflogs([str(logs)])
    assert len(found) == good
    assert found.unreadable == {str(log): [n + 1, n + 2, n + 3]}

    cp = subprocess.run([sys.executable, '-m', 'clustergate.cli', 'history',
                         '--perflogs', str(logs)], capture_output=True,
                        text=True, timeout=300)
    assert 'Traceback' not in cp.stderr
    assert (f'clustergate history: warning: 3 unreadable perflog line(s) '
            f'skipped (not the perflog format of config/common.py): {log} '
            f'line(s) {n + 1}, {n + 2}, {n + 3}') in cp.stderr
