"""A point at a node count its check never ran at is planned from the
nearest node count that did run, grown by its family's law
(clustergate.rfm.point.nightly.nearest_like,
clustergate.planning.costmodel.scaled_to_nodes).

Measured on the 12-node emulated site (2 cores, OpenMPI 4.1.4, 250 Mbit/s
node links, 2026-12-02): the results database held HpccStream at 1 node
only (360 s); a night planned HpccStream 8 nodes x 2 at that median of
every node count, 360 s, and its HPCC run was still in HPL (N = 23168)
when it was stopped by hand after 29 min. Grown as HPCC grows on a site
whose compute grows with its nodes (the square root), it is planned at
17 min: alone above the 16-min budget, in no night. This 2-core
emulation shares its cores between all nodes, so it runs longer still."""

import types

import pytest

from clustergate.planning import costmodel
from clustergate.rfm.point import nightly as rfmrot

PART, ENV = 'site:emu', 'ompi'
HPCC_1_NODE_S = 360.0


class _Part:
    """A ReFrame partition as far as the rotation reads it."""

    name, fullname, extras = 'emu', PART, {}


def _test(name, fam, nodes):
    return types.SimpleNamespace(display_name=name, cg_family=fam,
                                 num_nodes=nodes, ppn=2,
                                 valid_systems=['*'],
                                 valid_prog_environs=[ENV])


@pytest.fixture
def plan(monkeypatch):
    """``plan(records, tests, totals)``: the rotation's points of ``tests``
    on one budgeted partition, with ``records`` (and the whole runs
    ``totals``) as the results database."""
    part = _Part()
    monkeypatch.setattr(rfmrot, 'family', lambda t: t.cg_family)
    monkeypatch.setattr(
        rfmrot.adapter, 'valid_combinations',
        lambda systems, environs: {part: [
            types.SimpleNamespace(name=e) for e in environs]})

    def run(records, tests, totals=None):
        # totals: the whole runs the database measured (run_costs)
        monkeypatch.setattr(rfmrot, 'measured', lambda db: records)
        monkeypatch.setattr(rfmrot, 'measured_runs',
                            lambda db: totals or {})
        return {p.name: p for p in rfmrot.points(tests, {PART: 960}, None)}

    return run


def _measured(name, sec):
    return {(name, PART, ENV): (sec, 1.0, 'measured')}


def test_an_unmeasured_node_count_grows_from_the_nearest_measured(plan):
    records = _measured('HpccStream %hpcc.num_nodes=1 %hpcc.ppn=1 '
                        '%hpcc.interconnect=fab0', HPCC_1_NODE_S)
    eight = 'HpccStream %hpcc.num_nodes=8 %hpcc.ppn=2 %hpcc.interconnect=fab1'
    pts = plan(records, [_test(eight, 'hpcc', 8)])
    est = pts[eight].cost[PART]
    assert pts[eight].source == 'like'
    # HPCC grows as the square root of its nodes: 360 s x sqrt(8)
    assert est == pytest.approx(HPCC_1_NODE_S * 8 ** 0.5)
    assert est > 960  # the night's budget: alone, in no night


def test_the_nearest_count_by_ratio_and_the_larger_of_two_as_near():
    counts = {1: 100.0, 4: 400.0, 16: 1600.0}
    # 8 is as near to 4 as to 16 by ratio: the larger
    assert rfmrot.nearest_like(counts, 8, 'hpcc') == pytest.approx(
        1600.0 * (8 / 16) ** 0.5)
    assert rfmrot.nearest_like(counts, 2, 'hpcc') == pytest.approx(
        400.0 * (2 / 4) ** 0.5)
    # a family that does not grow with its nodes keeps its figure; a
    # family the cost model does not know is not scaled either
    assert rfmrot.nearest_like(counts, 3, 'npb') == 400.0
    assert rfmrot.nearest_like(counts, 3, 'nosuchfamily') == 400.0
    assert rfmrot.nearest_like({}, 3, 'hpcc') is None
    assert rfmrot.nearest_like(None, 3, 'hpcc') is None


def test_a_measured_count_and_a_skipped_check_are_kept(plan):
    bi4 = 'BiPingPong %num_nodes=4 %ppn=2 %interconnect=fab0 %msg_bytes=8'
    bi8 = 'BiPingPong %num_nodes=8 %ppn=2 %interconnect=fab0 %msg_bytes=8'
    bi8b = 'BiPingPong %num_nodes=8 %ppn=1 %interconnect=fab1 %msg_bytes=8'
    npb2 = 'NpbLU %num_nodes=2 %ppn=1 %npb_class=A'
    npb8 = 'NpbLU %num_nodes=8 %ppn=1 %npb_class=A'
    records = {**_measured(bi4, 20.0), **_measured(bi8, 90.0),
               (npb2, PART, ENV): (0.0, None, 'skipped')}
    pts = plan(records, [_test(bi8b, 'contention', 8),
                         _test(npb8, 'npb', 8)])
    # its own node count measured: that kind's median, not 4's grown
    assert pts[bi8b].cost[PART] == 90.0
    # a check skipped at every node count it ran at costs nothing
    assert pts[npb8].cost[PART] == 0.0
    assert costmodel.scaled_to_nodes('contention', 20.0, 4, 8) == 40.0


def test_a_run_never_measured_is_planned_at_its_kind_over_another_fabric(
        plan):
    # a fresh results database on the 12-node emulated site (2026-12-02):
    # the 1-node x 2 HPCC run over fab0_ucx measured 278 s; the same run
    # over fab1_ucx, never measured, had been planned at the default 167 s
    at = 'HpccStream %hpcc.num_nodes=1 %hpcc.ppn=2 %hpcc.interconnect={}'
    records = {
        **_measured('HpccRandomAccess %hpcc.num_nodes=1 %hpcc.ppn=2 '
                    '%hpcc.interconnect=fab0_ucx', 278.0),
        # the same check and node count at 1 rank: a smaller run
        **_measured(at.format('fab1').replace('ppn=2', 'ppn=1'), 214.0),
    }
    pts = plan(records, [_test(at.format('fab1_ucx'), 'hpcc', 1)])
    assert pts[at.format('fab1_ucx')].cost[PART] == pytest.approx(278.0)
    assert pts[at.format('fab1_ucx')].source == 'like'


def test_the_readers_of_one_run_cost_it_once_between_them(plan):
    # HpccHpl measured alone paid the whole 1-node run (214 s on the
    # 12-node emulated site); its never-measured siblings are estimated
    # at what it paid: summed, the run of the night's HPCC canary was
    # planned at 5 x 214 s, and the sentinels took 24.5 min of 16
    run = '%hpcc.num_nodes=1 %hpcc.ppn=1 %hpcc.interconnect=fab1'
    names = [f'Hpcc{k} {run}' for k in ('Hpl', 'Fft', 'Stream')]
    tests = [_test(n, 'hpcc', 1) for n in names]
    pts = plan(_measured(names[0], 214.0), tests)
    assert sum(pts[n].cost[PART] for n in names) == pytest.approx(214.0)
    assert {pts[n].group for n in names} == {
        'hpcc.interconnect=fab1 hpcc.num_nodes=1 hpcc.ppn=1'}
    # measured together, each paid its share: together they paid the run
    together = {k: v for n in names for k, v in _measured(n, 80.0).items()}
    pts = plan(together, tests)
    assert [pts[n].cost[PART] for n in names] == pytest.approx([80.0] * 3)
    assert pts[names[1]].per_case == {(PART, ENV): pytest.approx(80.0)}
