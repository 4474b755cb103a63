"""Times do not depend on the machine's time zone: a site in
TZ=Asia/Tokyo selects the same runs with ``--since``/``--last`` and sees
the same (UTC) times as CI in UTC, because every run's time is ReFrame's
``job_completion_time_unix``."""

import datetime as dt
import io
import json
import time

import pytest

from clustergate.results.samples import parse_perflog_line
from clustergate import cli
from clustergate.results import times
from clustergate.commands import baseline_cmd


@pytest.fixture
def tokyo(monkeypatch):
    monkeypatch.setenv('TZ', 'Asia/Tokyo')
    time.tzset()
    # the fixture must really move the local zone, or the tests prove nothing
    assert time.localtime(0).tm_hour == 9
    yield
    monkeypatch.undo()
    time.tzset()


def unix(hour):
    return dt.datetime(2026, 11, 20, hour, tzinfo=dt.timezone.utc).timestamp()


def run_report(i, hour, latency):
    """A ReFrame JSON run report with one passed test case."""
    return {
        'session_info': {'uuid': f'session-{i}'},
        'runs': [{'run_index': 0, 'testcases': [{
            'name': 'PingPong', 'display_name': 'PingPong %num_nodes=1 '
            '%ppn=2 %interconnect=shm', 'system': 'localhost',
            'partition': 'local', 'environ': 'openmpi', 'result': 'pass',
            'job_completion_time_unix': unix(hour),
            'perfvalues': {'localhost:local:latency': [
                latency, 0, None, None, 'us']},
        }]}],
    }


def baseline(tmp_path, *opts):
    paths = []
    for i, (hour, lat) in enumerate([(6, 3.1), (8, 3.2), (10, 3.0),
                                     (12, 3.3), (14, 3.1), (16, 3.2)]):
        p = tmp_path / f'r{i}.json'
        p.write_text(json.dumps(run_report(i, hour, lat)))
        paths.append(str(p))

    args = cli.build_parser().parse_args(
        ['baseline', '--json', *paths, '--dry-run',
         '-o', str(tmp_path / 'refs.yaml'), *opts])
    out, err = io.StringIO(), io.StringIO()
    assert baseline_cmd.run(args, out=out, err=err) == 0, err.getvalue()
    return out.getvalue().splitlines()[0]


def test_since_is_utc_and_times_print_in_utc_in_tokyo(tmp_path, tokyo):
    head = baseline(tmp_path, '--since', '2026-11-20T11:00')
    assert head.startswith('baseline of localhost: 1 metric(s) from 3 '
                           'run(s), 2026-11-20T12:00:00Z .. '
                           '2026-11-20T16:00:00Z;')


def test_since_with_a_zone_and_last(tmp_path, tokyo):
    # 20:00 in Tokyo is 11:00 UTC
    head = baseline(tmp_path, '--since', '2026-11-20T20:00+09:00')
    assert 'from 3 run(s), 2026-11-20T12:00:00Z ..' in head
    head = baseline(tmp_path, '--last', '4')
    assert 'from 4 run(s), 2026-11-20T10:00:00Z .. 2026-11-20T16:00:00Z' \
        in head


def test_perflog_time_is_job_completion_time_unix(tokyo):
    # a site whose perflog datefmt drops the zone ('%FT%T'): the first field
    # is Tokyo's wall clock, the loggable job_completion_time_unix is not
    t = unix(12)
    local = time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(t))
    assert local == '2026-11-20T21:00:00'
    header = ('job_completion_time|reframe version|name|environ|'
              'job_nodelist|jobid|result|job_completion_time_unix|'
              'latency_var=latency_value|ref=latency_ref|'
              'lower=latency_lower_thres|upper=latency_upper_thres|'
              'unit=latency_unit|').split('|')
    line = (f'{local}|reframe 4.10.4|PingPong %num_nodes=1 %ppn=2 '
            f'%interconnect=shm|openmpi|vm|17114|pass|{t}|'
            'latency=3.2|ref=0|lower=None|upper=None|unit=us|')
    (sample,) = parse_perflog_line(line, 'localhost', 'local', header)
    assert sample.time == t


def test_since_rejects_garbage_in_one_line():
    with pytest.raises(SystemExit) as err:
        times.since('last tuesday', 'baseline')
    assert str(err.value) == ("clustergate baseline: --since: not an ISO "
                              "date or time: 'last tuesday'")
