"""A fresh site's first nightly rotation on slow node links: the cost
model's defaults follow the partition's declared link rate
(``topology.node_rate``) and the ranks per node, so the night is planned
at what the links take (clustergate.planning.costmodel.link_scale,
clustergate.rfm.point.nightly.default_seconds)."""

import types

import pytest

from clustergate.rfm.point import nightly as rfmrot
from clustergate.planning import costmodel
from clustergate.planning import rotation

# Measured on a 12-node emulated site with 250 Mbit/s node links, first
# night, no results database (2026-11-27): the old defaults planned
# AllToAll 8 nodes x 2 ppn at 1 MB at 80 s for its 3 MPIs, it took
# 110-144 s under EACH; NetpipeSharedInterface was planned at 27 s and
# took about 110 s a case.
ALLTOALL_MEASURED_S = (110.0, 144.0)
NETPIPE_MEASURED_S = 110.0


class _Part:
    """A ReFrame partition as far as the rotation reads it."""

    def __init__(self, rate=None, name='emu'):
        topo = {'source': 'scontrol'}
        if rate is not None:
            topo['node_rate'] = rate
        self.name, self.fullname = name, f'site:{name}'
        self.extras = {'cores_per_node': 2, 'topology': topo}


def _test(name, fam, nodes, ppn):
    return types.SimpleNamespace(display_name=name, cg_family=fam,
                                 num_nodes=nodes, ppn=ppn,
                                 valid_systems=['*'],
                                 valid_prog_environs=['*'])


@pytest.fixture
def site(monkeypatch):
    """AllToAll 8x2 under 3 MPIs and NetpipeSharedInterface under 2 on
    one budgeted partition; ``site(rate)`` plans their points."""
    monkeypatch.setattr(rfmrot, 'family', lambda t: t.cg_family)
    tests = [_test('AllToAll %num_nodes=8 %ppn=2 %size=1000000',
                   'contention', 8, 2),
             _test('NetpipeSharedInterface %num_nodes=3 %tool=NPtcp',
                   'netpipe', 3, 1)]
    envs = {tests[0].display_name: ['ompi', 'mpich', 'impi'],
            tests[1].display_name: ['ompi', 'mpich']}

    def plan(rate):
        part = _Part(rate)
        monkeypatch.setattr(
            rfmrot.adapter, 'valid_combinations',
            lambda systems, environs: {part: [
                types.SimpleNamespace(name=e) for e in environs]})
        for t in tests:
            t.valid_prog_environs = envs[t.display_name]
        pts = rfmrot.points(tests, {part.fullname: 8 * 60}, None)
        return {p.name.split()[0]: p for p in pts}, part

    return plan


def test_estimates_on_250_mbit_links_are_at_least_the_measured(site):
    pts, part = site('250mbit')
    alltoall, netpipe = pts['AllToAll'], pts['NetpipeSharedInterface']
    assert alltoall.source == netpipe.source == 'default'
    # per case (one MPI): at least the slowest measured
    assert alltoall.cost[part.fullname] / 3 >= max(ALLTOALL_MEASURED_S)
    assert netpipe.cost[part.fullname] / 2 >= NETPIPE_MEASURED_S
    # the night's plan: these two alone are over an 8-minute budget, and
    # the plan says so instead of promising they fit
    plan = rotation.plan(list(pts.values()), {part.fullname: 8 * 60})
    assert 'AllToAll %num_nodes=8 %ppn=2 %size=1000000' in plan.oversized


def test_the_rate_scales_the_network_part_only(site):
    slow, part = site('250mbit')
    fast, _ = site('100gbit')
    unknown, _ = site(None)
    a = {k: v.cost[part.fullname] / 3 for k, v in
         (('slow', slow), ('fast', fast), ('unknown', unknown))
         for v in [v['AllToAll']]}
    one = costmodel.DEFAULT_FAMILIES['contention']
    gbit = costmodel.DEFAULT_OVERHEAD_S + one.run_s * 8 / one.n0
    # unknown rate: the figure as measured (1 Gbit/s, one rank a node)
    assert a['unknown'] == pytest.approx(gbit)
    # a faster link never shrinks the estimate below the measured figure
    assert a['fast'] == pytest.approx(gbit)
    # 250 Mbit/s is 4x slower, 2 ranks a node send twice the bytes
    assert a['slow'] == pytest.approx(costmodel.DEFAULT_OVERHEAD_S +
                                      one.run_s * 8 / one.n0 * 4 * 2)


def test_a_malformed_rate_names_the_partition_and_key(site):
    with pytest.raises(rotation.RotationError,
                       match=r'site:emu: extras\.topology\.node_rate: '
                             r'bad rate'):
        site('fast')


def test_node_local_families_do_not_follow_the_link():
    slow = costmodel.default_case_seconds('node', 1, ppn=2, link=31.25)
    assert slow == costmodel.default_case_seconds('node', 1)


def test_without_a_declared_rate_the_night_says_so(site):
    for rate, said in ((None, 1), ('250mbit', 0)):
        pts, part = site(rate)
        part.extras['rotation'] = {'budget_min': 8}
        tests = [types.SimpleNamespace(display_name=n, cg_family=f)
                 for n, f in (('AllToAll %num_nodes=8 %ppn=2 %size=1000000',
                               'contention'),
                              ('NetpipeSharedInterface %num_nodes=3 '
                               '%tool=NPtcp', 'netpipe'))]
        lines = rfmrot.rate_notes(list(pts.values()), tests, [part])
        assert len(lines) == said, lines
        if said:
            assert lines[0].startswith('  2 network-bound point(s) of '
                                       'site:emu estimated from the '
                                       'defaults')
            assert 'extras.topology.node_rate' in lines[0]


# ContentionSuite (every pattern, every size, one job) 4 nodes x 2 ranks on
# fab1 of the 12-node emulated site at 250 Mbit/s, OpenMPI, never measured
# before (2026-12-02): planned at its family's one-pattern figure, 96 s; ran
# 244 s, and its night ended 81 s past the budget.
SUITE_MEASURED_S = 244.0


def test_the_suite_is_planned_at_its_own_figure_not_one_pattern(
        monkeypatch):
    monkeypatch.setattr(rfmrot, 'family', lambda t: t.cg_family)
    suite = _test('ContentionSuite %num_nodes=4 %ppn=2 %interconnect=fab1',
                  'contention', 4, 2)
    single = _test('PingPongDistance %num_nodes=4 %ppn=2 '
                   '%interconnect=fab1 %msg_bytes=8', 'contention', 4, 2)
    part = _Part('250mbit')
    monkeypatch.setattr(
        rfmrot.adapter, 'valid_combinations',
        lambda systems, environs: {part: [types.SimpleNamespace(name='o')]})
    pts = {p.name.split()[0]: p.cost[part.fullname] for p in
           rfmrot.points([suite, single], {part.fullname: 16 * 60}, None)}
    assert pts['ContentionSuite'] >= SUITE_MEASURED_S * 0.95
    # a one-pattern check keeps its family's figure
    assert pts['PingPongDistance'] == pytest.approx(
        costmodel.default_case_seconds('contention', 4, ppn=2, link=31.25))
    assert pts['PingPongDistance'] < SUITE_MEASURED_S / 2
    # the listing's size (clustergate cost, -l) agrees with the plan, and
    # ci keeps the suite's measured ci run
    listing = ['- ContentionSuite %num_nodes=4 %ppn=2 %interconnect=fab1 '
               '/0123abcd @site:emu+o']
    from clustergate.planning import modesize
    nightly = modesize.listed_sizes(listing, 'nightly')['site:emu']
    ci = modesize.listed_sizes(listing, 'ci')['site:emu']
    assert nightly.minutes * 60 > ci.minutes * 60 * 5
    assert ci.minutes * 60 == pytest.approx(
        costmodel.default_case_seconds('contention', 4, 'ci'))
