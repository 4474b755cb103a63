"""Every performance variable of every check has a declared direction
(clustergate.refs.directions): the names of a dry run of every check, and the names made from what a run measured (peer ratios, node
links, cache levels) from real outputs."""

import glob
import os


from conftest import ROOT, fixture_text
from rfm_loader import load_checks, pick
from test_contention_checks import fed

from clustergate.refs import directions
from clustergate.refs import refcheck
from clustergate.rfm.families import linkmatrix as lmcheck

CHECK_FILES = sorted(os.path.relpath(p, ROOT) for p in
                     glob.glob(os.path.join(ROOT, 'checks', '*', '*.py')))


def _names(check, monkeypatch, dry_run=True):
    if dry_run:
        monkeypatch.setattr(check, '_rfm_dry_run', True, raising=False)
    if hasattr(check, 'set_perf_variables'):
        check.set_perf_variables()
    return set(check.perf_variables)


def test_every_dry_run_variable_is_declared(monkeypatch):
    # localhost: every check has points there (the emulated cluster's
    # sweep is 5x larger, the names are the same)
    undeclared, checks = set(), set()
    for path in CHECK_FILES:
        for c in load_checks(path, 'localhost'):
            checks.add(type(c).__name__)
            undeclared |= {f'{type(c).__name__}.{name}' for name in
                           _names(c, monkeypatch)
                           if directions.declared(type(c).__name__,
                                                  name) is None}
    assert refcheck.check_names() <= checks
    assert sorted(undeclared) == []


def _measured(monkeypatch, tmp_path):
    """(check, names) of runs whose variables depend on what they
    measured."""
    con = load_checks('checks/contention/contention_checks.py')
    out = [('PingPongDistance', fed(pick(con, 'PingPongDistance',
                                         msg_bytes=1000000), fixture_text(
        'cg-outputs', 'emu-pingpong-1MB-n4-fab0-250mbit.out'))),
        ('ContentionSuite', fed(pick(con, 'ContentionSuite'), fixture_text(
            'cg-outputs', 'emu-pingpong-1MB-n4-fab0-250mbit.out'))),
        ('ContentionSuite', fed(pick(con, 'ContentionSuite'), fixture_text(
            'cg-outputs', 'contention-np4-shm.out')))]
    node = load_checks('checks/node/node_checks.py')
    lat = pick(node, 'MemoryLatency', ppn=2, scale='small')
    lat.num_tasks, lat.stdout_text = 2, lambda: fixture_text(
        'cg-outputs', 'memlat-np2.out')
    out.append(('MemoryLatency', lat))
    lm = next(c for c in load_checks('checks/linkmatrix/linkmatrix_check.py')
              if type(c).__name__ == 'LinkMatrix')
    for name, value in (('num_nodes', 4), ('ppn', 1), ('num_tasks', 4),
                        ('interconnect', 'fab0'), ('_stagedir', str(tmp_path)),
                        ('heatmap_title', lambda: 'test'),
                        ('stdout_text', lambda: fixture_text(
                            'cg-outputs',
                            'emu-linkmatrix-4MB-n4-fab0-250mbit.out'))):
        monkeypatch.setattr(lm, name, value, raising=False)
    monkeypatch.setattr(lmcheck, '_JUDGED', {})
    out.append(('LinkMatrix', lm))
    return [(name, _names(c, monkeypatch, False)) for name, c in out]


def test_every_measured_variable_is_declared(monkeypatch, tmp_path):
    got = _measured(monkeypatch, tmp_path)
    names = {n for _, ns in got for n in ns}
    # the names made from the measurement are there
    assert {'peer_bandwidth_ratio', 'step_DRAM', 'faults', 'peer_min',
            'bw_n1_sent', 'peer_n1_both'} <= names
    assert [f'{c}.{n}' for c, ns in got for n in sorted(ns)
            if directions.declared(c, n) is None] == []


def test_the_cases_of_the_issue():
    # a quieter machine is better; a faster memory is better
    assert directions.of('OsNoise', 'slowdown_k') == 'lower'
    assert directions.of('OsNoise', 'slowdown_1') == 'lower'
    assert directions.of('MemoryRandom', 'bw') == 'higher'
    # nothing guessed from a name: an undeclared metric is judged both ways
    assert directions.declared('OsNoise', 'bandwidth') is None
    assert directions.of('SiteCheck', 'latency') == 'both'
