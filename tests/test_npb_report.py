"""``clustergate npb <report.json>`` (docs/guide/benchmarks.md) runs
outside ReFrame, where no runtime is configured: importing the checks' base
classes must not need one (ReframeFatalError is a BaseException, which an
``except Exception`` let through)."""

import json
import subprocess
import sys

from clustergate.parsers import parse_npb

from conftest import ROOT, fixture_text


def test_npb_ratio_report_runs_without_a_reframe_runtime(tmp_path):
    # one passed NPB case in ReFrame's report layout, with the Mop/s of a
    # real CG class A run on 2 processes: no 1-ppn partner, so no ratio
    res = parse_npb(fixture_text('benchmark-outputs', 'npb',
                                 'npb3.4-cg.A.2.out'))
    case = {'name': 'NpbCG', 'result': 'pass', 'system': 'localhost',
            'partition': 'local', 'environ': 'openmpi', 'kernel': 'cg',
            'npb_class': 'A', 'num_nodes': 1, 'ppn': 2,
            'interconnect': 'shm',
            'perfvalues': {'localhost:local:mops_total': [
                res.mops_total, 0, None, None, 'Mop/s', 'pass']}}
    report = tmp_path / 'run.json'
    report.write_text(json.dumps({'runs': [{'testcases': [case]}]}))
    out = subprocess.run([sys.executable, '-m', 'clustergate.cli', 'npb',
                          str(report)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout == ('no pair of NPB runs at the same process count '
                          'with 1 and k ppn in this report\n')
