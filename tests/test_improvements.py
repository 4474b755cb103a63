"""A value far better than its reference passes and is reported (the
default ``improvements: report``): a real session on this machine with
references set so that the measured MemoryRandom bandwidth is hundreds of
% above its reference and OsNoise's slowdown 99 % below (a quieter
machine); the perflog keeps the reference's band and the report lists
both as better than reference, not as regressions."""

import json
import os

import pytest

from clustergate.results.samples import read_perflogs
from clustergate.report import page as report
from conftest import ROOT, run_with_refs

REFS = '''\
system: "localhost"
references:
  "MemoryRandom":
    "local":
      "kernel=rand_read,ppn=2":
        "bw": {value: 1.0, lower: -0.5, upper: 1.5, unit: "MB/s"}
  "OsNoise":
    "local":
      "ppn=2":
        "slowdown_k": {value: 1000.0, lower: -0.5, upper: 0.5, unit: "x"}
'''


@pytest.fixture(scope='module')
def session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('improve')
    res, _, out = run_with_refs(
        tmp, REFS, '-c', os.path.join(ROOT, 'checks', 'node'),
        '--mode', 'ci', '-n', 'MemoryRandom.*ppn=2.*rand_read',
        '-n', 'OsNoise.*ppn=2', '--prefix', str(tmp / 'out' / 'rfm'))
    with open(out / 'report.json') as fp:
        cases = [tc for tc in json.load(fp)['runs'][0]['testcases']
                 if not tc['fixture']]
    return res, cases, out


def test_far_better_than_reference_passes(session):
    res, cases, _ = session
    assert res.returncode == 0, res.stdout[-3000:]
    assert sorted((tc['name'].split()[0], tc['result']) for tc in cases) == \
        [('MemoryRandom', 'pass'), ('OsNoise', 'pass')]
    # named in the log, with the bound it crossed
    said = [ln for ln in res.stdout.splitlines()
            if 'better than reference (reported, not failed' in ln]
    assert any(' bw = ' in ln and '(bound +150 %)' in ln for ln in said)
    assert any(' slowdown_k = ' in ln and '(bound -50 %)' in ln
               for ln in said)


def test_report_lists_them_as_better_not_regression(session):
    _, _, out = session
    samples = read_perflogs([str(out / 'perflogs')])
    got = {s.key.metric: s for s in samples
           if s.key.metric in ('bw', 'slowdown_k')}
    # the perflog keeps the reference file's band
    assert (got['bw'].ref, got['bw'].lower, got['bw'].upper) == \
        (1.0, -0.5, 1.5)
    ver = report.verdict(samples)
    kinds = {d.key.metric: d.kind for d in ver.deviations}
    assert kinds == {'bw': 'better than reference',
                     'slowdown_k': 'better than reference'}
    assert ver.word == 'GREEN'
