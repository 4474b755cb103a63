"""Where a session's time went (clustergate.results.timing) on given reports."""

import json
import os

from clustergate.results import timing
from clustergate.commands import timing_cmd
from conftest import FIXTURES


def _tc(name, family, result='pass', compile_=0.0, run=0.0, total=0.0,
        fixture=False, **axes):
    params = ''.join(f' %{k}={v}' for k, v in axes.items())
    return {'name': name, 'display_name': name + params, 'system': 's',
            'partition': 'p', 'environ': 'openmpi', 'result': result,
            'fixture': fixture,
            'filename': f'/x/checks/{family}/{family}_checks.py'
                        if not fixture else '/x/utils/clustergate/rfm/b.py',
            'time_compile': compile_, 'time_run': run, 'time_total': total,
            # a case whose job ran has its completion time; a build fixture
            # has none, and ReFrame's run time of it spans its dependents
            'job_completion_time_unix': None if fixture or result == 'skip'
            else 1000.0, **axes}


def _report():
    cases = [
        _tc('CgProgramsBuild', '', compile_=30.0, run=400.0, total=431.0,
            fixture=True),
        _tc('Barrier', 'contention', run=10.0, total=12.0, num_nodes=2,
            ppn=1, interconnect='fab0'),
        _tc('Alltoall', 'contention', run=50.0, total=52.0, num_nodes=4,
            ppn=2, interconnect='fab0'),
        _tc('Stream', 'stream', result='skip', total=0.1, num_nodes=1,
            ppn=1, interconnect='shm'),
        # the same one-rank work on two interconnects
        _tc('MemoryBandwidth', 'node', run=20.0, total=21.0, num_nodes=1,
            ppn=1, interconnect='shm'),
        _tc('MemoryBandwidth', 'node', run=19.0, total=20.0, num_nodes=1,
            ppn=1, interconnect='tcp'),
    ]
    retried = dict(cases[1], time_run=30.0, time_total=33.0)
    return {'session_info': {'time_elapsed': 200.0},
            'runs': [{'testcases': cases}, {'testcases': [retried]}]}


def test_case_times_split_build_run_other_and_take_the_last_attempt():
    times = {c.name: c for c in timing.case_times(_report())}
    b = times['Barrier %num_nodes=2 %ppn=1 %interconnect=fab0']
    assert (b.family, b.build, b.run, b.other) == ('contention', 0.0, 30.0,
                                                   3.0)
    assert b.point == '2n x 1ppn fab0'
    build = times['CgProgramsBuild']
    assert (build.family, build.build, build.run, build.other) == \
        ('build', 30.0, 0.0, 0.0)
    assert times['Alltoall %num_nodes=4 %ppn=2 %interconnect=fab0'].ranks \
        == 8


def test_breakdown_ranks_families_and_names_repeated_work():
    lines = timing.breakdown(_report())
    text = '\n'.join(lines)
    assert lines[0].startswith('TIME BREAKDOWN: 5 case(s) ran in 3m20s '
                               'wall, 2m36s in test cases')
    fam = [ln.split()[0] for ln in lines[2:5]]
    assert fam == ['contention', 'node', 'build']
    assert 'contention' in lines[2] and '54%' in lines[2]
    assert 'stream' not in text          # skipped: no time spent
    assert ('repeated work: 1 one-rank case(s) repeat the same work on '
            'another interconnect (20s)') in text


def test_timing_command(tmp_path, capsys):
    path = tmp_path / 'r.json'
    path.write_text(json.dumps(_report()))
    parser = __import__('argparse').ArgumentParser()
    timing_cmd.add_parser(parser.add_subparsers())
    assert timing_cmd.run(parser.parse_args(['timing', '--json',
                                             str(path)])) == 0
    assert 'slowest sweep points' in capsys.readouterr().out
    assert timing_cmd.run(parser.parse_args(
        ['timing', '--db', str(tmp_path / 'none.db')])) == 2


def test_a_run_fixture_counts_its_own_job_not_its_dependents_lives():
    # a real report (trimmed to the fields read): localhost nightly HPCC,
    # N=3072, one core busy; each of the 4 HpccRun fixtures' jobs took
    # ~244 s, but ReFrame's time_run of the first spans the session (985 s)
    path = os.path.join(FIXTURES, 'reports', 'hpcc-nightly-localhost.timing.json')
    with open(path) as fp:
        report = json.load(fp)
    runs = [c for c in timing.case_times(report) if c.check == 'HpccRun']
    assert len(runs) == 4
    assert all(243 < c.run < 245 and c.total < 246 for c in runs)
    lines = timing.breakdown(report)
    total = sum(c.total for c in timing.case_times(report))
    # the cases' times add up to no more than the session's wall time
    assert total <= report['session_info']['time_elapsed']
    points = lines[lines.index(next(ln for ln in lines
                                    if 'slowest sweep points' in ln)) + 1:]
    assert all(' 4m' in ln for ln in points[:4])
