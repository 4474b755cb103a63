"""End to end: ``reframe --mode ci -r`` on the embedded ``localhost``
system; every selected test must pass (or be skipped with a reason) and
every passed test must have its performance values in the perflog."""

import glob
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, reframe_cmd, reframe_failures

pytestmark = pytest.mark.e2e


@pytest.fixture(scope='module')
def ci_run(tmp_path_factory):
    out = tmp_path_factory.mktemp('e2e')
    env = dict(os.environ,
               SLURM_CONF='',                  # force localhost
               CG_PERFLOG_DIR=str(out / 'perflogs'),
               CG_RESULTS_DB=str(out / 'results.db'),
               CG_DEBUG_LOG=str(out / 'reframe.log'))
    report = out / 'report.json'
    res = subprocess.run(
        reframe_cmd() + ['-C', os.path.join(ROOT, 'config', 'settings.py'),
                         '--mode', 'ci', '--prefix', str(out),
                         '--report-file', str(report), '-r'],
        capture_output=True, text=True, env=env, timeout=2400
    )
    with open(out / 'stdout.txt', 'w') as fp:
        fp.write(res.stdout + res.stderr)

    return res, json.loads(report.read_text()), out


def test_ci_mode_passes(ci_run):
    res, report, out = ci_run
    assert res.returncode == 0, reframe_failures(res.stdout)
    cases = [tc for run in report['runs'] for tc in run['testcases']]
    failed = [tc['display_name'] for tc in cases
              if tc['result'] not in ('pass', 'skip')]
    assert not failed
    passed = [tc for tc in cases if tc['result'] == 'pass'
              and 'CgProgramsBuild' not in tc['name']]
    assert len(passed) >= 20


def test_ci_selects_only_cases_it_runs(ci_run):
    # the ci runs each partition under one environment, for a benchmark
    # family one whose source serves it: no case is selected only to be
    # skipped (before: IMB under OpenMPI's Spack environment without
    # spack). ReFrame's JSON report drops skip reasons; its output prints
    # them
    res, _, _ = ci_run
    plain = re.sub(r'\x1b\[[0-9;]*m', '', res.stdout)
    skips = [ln for ln in plain.splitlines() if re.match(r'\[ +SKIP +\]', ln)]
    assert not skips, skips


def test_perflog_has_values_and_axes(ci_run):
    res, report, out = ci_run
    logs = glob.glob(str(out / 'perflogs' / '**' / '*.log'), recursive=True)
    assert logs, 'no perflog written'
    # the ci mode's contention check is the suite (one job per point, a
    # variable per pattern and size: shift_<bytes>_latency, ...), no longer
    # one RightShift test per message size
    lines = [ln for f in logs for ln in open(f)
             if '|ContentionSuite %num_nodes=' in ln]
    assert lines
    for ln in lines:
        for axis in ('num_nodes', 'ppn', 'interconnect'):
            assert f'%{axis}=' in ln, ln
        sizes = re.findall(r'\|shift_(\d+)_latency=[0-9.e+-]+\|', ln)
        assert sizes, ln
        for size in sizes:
            assert re.search(rf'\|shift_{size}_bandwidth=[0-9.e+-]+\|', ln), ln


def test_hpcc_hpl_and_beff_ran_for_real(ci_run):
    # HPL and b_eff are in the ci subset: one real hpcc run per point
    res, report, out = ci_run
    cases = [tc for run in report['runs'] for tc in run['testcases']]
    for name in ('HpccHpl', 'HpccBeff'):
        passed = [tc for tc in cases if tc['name'].startswith(name)
                  and tc['result'] == 'pass']
        assert passed, f'no {name} passed'

    logs = glob.glob(str(out / 'perflogs' / '**' / 'Hpcc*.log'),
                     recursive=True)
    lines = [ln for f in logs for ln in open(f)]
    gflops = [float(m) for ln in lines
              for m in re.findall(r'\|gflops=([0-9.e+-]+)\|', ln)]
    ring = [float(m) for ln in lines
            for m in re.findall(r'\|random_ring_bandwidth=([0-9.e+-]+)\|',
                                ln)]
    assert gflops and all(g > 0 for g in gflops)
    assert ring and all(b > 0 for b in ring)


def test_session_ends_with_where_the_time_went(ci_run):
    """The end of a real session breaks its time down per family: the
    build, our contention programs and HPCC ran in ci mode here."""
    res, report, _ = ci_run
    lines = res.stdout.splitlines()
    start = next(i for i, ln in enumerate(lines)
                 if ln.startswith('TIME BREAKDOWN: '))
    ran = sum(1 for run in report['runs'][-1:] for tc in run['testcases']
              if tc['result'] not in ('skip', 'fail_deps'))
    assert lines[start].startswith(f'TIME BREAKDOWN: {ran} case(s) ran in ')
    families = {ln.split()[0] for ln in lines[start + 2:start + 12]
                if ln.startswith('  ') and not ln.startswith('  slowest')}
    assert {'build', 'contention', 'hpcc'} <= families, lines[start:start + 12]
