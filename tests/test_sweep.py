"""The sweep logic: a partition description yields exactly the expected
points and skip reasons."""

import pytest

from clustergate.site import sweep
from clustergate.site.partition import axes_union, interconnect_env
from clustergate.site.partition import partition_model as model
from clustergate.site.errors import ExtrasError
from clustergate.site.partition import SweepPoint
from clustergate.site.sweep import Requirements


def cluster_extras():
    return {
        'sweep': {'nodes': [1, 2, 4], 'ppn': [1, 2]},
        'interconnects': {
            'shm': {'scope': 'node', 'env': {'openmpi': {'OMPI_MCA_btl':
                                                         'self,vader'}}},
            'fab0': {'scope': 'network',
                     'env': {'openmpi': {'OMPI_MCA_btl': 'self,tcp',
                                         'OMPI_MCA_btl_tcp_if_include':
                                         'fab0'}}},
        },
    }


def test_points_and_reasons_exact():
    rows = sweep.points(model(cluster_extras(), 'emu:emu'),
                        Requirements(min_ranks=2))
    verdicts = {(p.nodes, p.ppn, p.interconnect): r for p, r in rows}
    assert len(rows) == 12
    runnable = sorted(k for k, r in verdicts.items() if r is None)
    assert runnable == sorted([
        (1, 2, 'shm'), (1, 2, 'fab0'), (2, 1, 'fab0'), (2, 2, 'fab0'),
        (4, 1, 'fab0'), (4, 2, 'fab0')])
    assert verdicts[(1, 1, 'shm')] == 'needs at least 2 ranks, point has 1'
    assert verdicts[(2, 1, 'shm')] == ("interconnect 'shm' is node-local "
                                       "and cannot join 2 nodes")
    assert verdicts[(1, 1, 'fab0')] == 'needs at least 2 ranks, point has 1'


def test_rank_shapes():
    ex = cluster_extras()
    sq = Requirements(ranks_shape='square')
    p2 = Requirements(ranks_shape='pow2')
    assert sweep.why_not(model(ex), SweepPoint(2, 2, 'fab0'), sq) is None
    assert sweep.why_not(model(ex), SweepPoint(2, 1, 'fab0'), sq) == \
        '2 ranks is not a square number'
    assert sweep.why_not(model(ex), SweepPoint(4, 2, 'fab0'), p2) is None
    ex['sweep']['ppn'] = [3]
    assert sweep.why_not(model(ex), SweepPoint(2, 3, 'fab0'), p2) == \
        '6 ranks is not a power of two'


def test_full_node_is_the_largest_ppn_only():
    # the node programs' nightly instances: one job at the full node
    ex = cluster_extras()
    full = Requirements(full_node=True)
    assert sweep.why_not(model(ex), SweepPoint(1, 2, 'shm'), full) is None
    assert sweep.why_not(model(ex), SweepPoint(1, 1, 'shm'), full) == (
        "runs on the full node (2 ppn) of partition '?', point has 1")
    assert sweep.why_not(model(ex), SweepPoint(1, 1, 'shm')) is None


def test_points_outside_partition_and_family():
    ex = cluster_extras()
    assert 'not offered' in sweep.why_not(model(ex), SweepPoint(8, 1, 'fab0'))
    assert 'ppn=4 not offered' in sweep.why_not(model(ex), SweepPoint(1, 4, 'fab0'))
    assert "interconnect 'ib0' not available" in sweep.why_not(
        model(ex), SweepPoint(2, 1, 'ib0'))
    assert "no settings for MPI family 'mpich'" in sweep.why_not(
        model(ex), SweepPoint(2, 1, 'fab0'), mpi_family='mpich')
    assert 'at least 3 nodes' in sweep.why_not(
        model(ex), SweepPoint(2, 2, 'fab0'), Requirements(min_nodes=3))


def test_single_rank_point_runs_over_one_interconnect():
    # one rank sends nothing: 1 node x 1 ppn runs once, over the first
    # declared interconnect that has the MPI family's settings
    ex = cluster_extras()
    rows = sweep.points(model(ex, 'emu:emu'))
    single = {p.interconnect: r for p, r in rows if p.ranks == 1}
    assert single['shm'] is None
    assert single['fab0'] == ("a single rank sends nothing: its point runs "
                              "over 'shm' only (identical work on every "
                              "interconnect)")
    # every other point still runs on both (2 ranks on one node too)
    assert sweep.why_not(model(ex), SweepPoint(1, 2, 'fab0')) is None
    # the site's order decides, not the scope
    ex['interconnects'] = dict(reversed(list(ex['interconnects'].items())))
    assert sweep.why_not(model(ex), SweepPoint(1, 1, 'fab0')) is None
    assert 'runs over \'fab0\' only' in sweep.why_not(
        model(ex), SweepPoint(1, 1, 'shm'))
    # a family the first one has no settings for: the next one that has
    ex['interconnects']['shm']['env']['mpich'] = {}
    assert sweep.why_not(model(ex), SweepPoint(1, 1, 'shm'),
                         mpi_family='mpich') is None
    assert sweep.single_rank_interconnect(ex['interconnects'],
                                          'openmpi') == 'fab0'


def test_axes_union_over_partitions():
    login = ('login', {})
    emu = ('emu', cluster_extras())
    local = ('local', {'sweep': {'nodes': [1], 'ppn': [1, 2, 3]},
                       'interconnects': {'tcp': {'scope': 'network',
                                                 'env': {'openmpi': {}}}}})
    # an empty env map is a config error, so give one variable
    local[1]['interconnects']['tcp']['env']['openmpi'] = {'X': '1'}
    nodes, ppn, ics = axes_union(
        model(extras, name) for name, extras in [login, emu, local])
    assert nodes == [1, 2, 4]
    assert ppn == [1, 2, 3]
    assert ics == ['shm', 'fab0', 'tcp']


def test_interconnect_env():
    env = interconnect_env(model(cluster_extras()), 'fab0', 'openmpi')
    assert env['OMPI_MCA_btl_tcp_if_include'] == 'fab0'
    with pytest.raises(ExtrasError, match="unknown interconnect 'ib0'"):
        interconnect_env(model(cluster_extras()), 'ib0', 'openmpi')
    with pytest.raises(ExtrasError, match="MPI family 'intelmpi'"):
        interconnect_env(model(cluster_extras()), 'fab0', 'intelmpi')


@pytest.mark.parametrize('mutate, message', [
    (lambda e: e.pop('sweep'), 'extras.sweep is missing'),
    (lambda e: e['sweep'].update(nodes=[]), 'extras.sweep.nodes must be'),
    (lambda e: e['sweep'].update(ppn=[0, 1]), 'extras.sweep.ppn must be'),
    (lambda e: e['sweep'].update(ppn='2'), 'extras.sweep.ppn must be'),
    (lambda e: e.update(interconnects={}), 'at least one interconnect'),
    (lambda e: e['interconnects']['fab0'].update(scope='fabric'),
     "has scope 'fabric'"),
    (lambda e: e['interconnects']['fab0'].pop('env'), 'needs "env"'),
    (lambda e: e['interconnects']['fab0']['env'].update(openmpi={'A': 1}),
     'str->str'),
])
def test_broken_descriptions_name_the_problem(mutate, message):
    ex = cluster_extras()
    mutate(ex)
    with pytest.raises(ExtrasError, match=message):
        sweep.describe(model(ex, 'emu'))


def test_mode_subsets_name_the_points():
    from clustergate.rfm.point import modes
    ex = cluster_extras()
    ex['sweep']['ci'] = {'nodes': [4], 'ppn': [1]}
    ex['sweep']['nightly'] = {'nodes': [2, 4]}
    parts = [ex]
    assert modes.in_subset(SweepPoint(4, 1, 'fab0'), parts, 'ci')
    assert not modes.in_subset(SweepPoint(4, 2, 'fab0'), parts, 'ci')
    assert not modes.in_subset(SweepPoint(2, 1, 'fab0'), parts, 'ci')
    assert modes.in_subset(SweepPoint(2, 1, 'fab0'), parts, 'nightly')
    assert not modes.in_subset(SweepPoint(1, 2, 'shm'), parts, 'nightly')
    # no subset declared: every point
    assert modes.in_subset(SweepPoint(1, 2, 'shm'), parts, 'acceptance')
    assert modes.in_subset(SweepPoint(1, 2, 'shm'), [cluster_extras()], 'ci')
    # a partition without a sweep takes no point
    assert not modes.in_subset(SweepPoint(1, 1, 'shm'), [{}], 'ci')
