"""The cost model (clustergate.planning.costmodel) on given sites."""

import pytest

from clustergate.planning import costmodel as cm
from clustergate.results import timing


def _site(**kw):
    data = {
        'overhead_s': 10,
        'families': {
            'contention': {'cases_per_point': 4, 'run_s': 20, 'n0': 2,
                           'alpha': 1.0},
            'node': {'cases_per_point': 2, 'run_s': 30, 'max_nodes': 1},
        },
        'partitions': [{
            'name': 'cpu', 'nodes': 8, 'environments': 2,
            'sweep': {
                'ci': {'nodes': [2], 'ppn': [1], 'interconnects': ['ib']},
                'acceptance': {'nodes': [1, 2, 4, 16], 'ppn': [1, 4],
                               'interconnects': ['ib', 'eth']},
            }}],
    }
    data.update(kw)
    return cm.load_site(data)


def test_jobs_wall_and_node_hours_follow_the_formula():
    site = _site()
    ci = cm.cost(site, 'ci')
    # contention at n=2: 1 ppn x 1 ic x 2 envs x 4 cases = 8 jobs of
    # 10 + 20 s; node checks need n=1, not in the ci sweep
    assert ci.jobs == 8
    assert ci.wall_s == pytest.approx(8 * 30)
    assert ci.node_hours == pytest.approx(8 * 2 * 30 / 3600)
    # nightly has no entry: the acceptance sweep
    acc = cm.cost(site, 'acceptance')
    nightly = cm.cost(site, 'nightly')
    assert (nightly.jobs, nightly.wall_s) == (acc.jobs, acc.wall_s)
    # acceptance: n=16 > 8 nodes is not a point; per (n) 2 ppn x 2 ic x 2
    # envs = 8 x cases
    jobs = {1: 8 * 4 + 8 * 2, 2: 8 * 4, 4: 8 * 4}
    assert acc.jobs == sum(jobs.values())
    wall = (8 * 4 * (10 + 20 * 0.5) + 8 * 2 * (10 + 30) +
            8 * 4 * (10 + 20) + 8 * 4 * (10 + 20 * 2))
    assert acc.wall_s == pytest.approx(wall)


def test_partitions_at_once_take_the_longest():
    two = [{'name': n, 'nodes': 4, 'sweep': {'acceptance': {
        'nodes': [2], 'ppn': [1], 'interconnects': ['ib']}}}
        for n in ('a', 'b')]
    serial = cm.cost(_site(partitions=two), 'acceptance')
    both = cm.cost(_site(partitions=two, parallel_partitions=True),
                   'acceptance')
    assert serial.wall_s == pytest.approx(2 * both.wall_s)
    assert serial.node_hours == pytest.approx(both.node_hours)


@pytest.mark.parametrize('bad, message', [
    ({'overhead_s': None, 'families': {}}, None),
    ({'partitions': [{'name': 'x', 'nodes': 1, 'sweep': {
        'ci': {'nodes': [1], 'ppn': [1], 'interconnects': ['a']}}}]},
     'x: sweep needs an acceptance entry'),
    ({'partitions': [{'name': 'x', 'nodes': 1, 'families': ['npb'],
                      'sweep': {'acceptance': {'nodes': [1], 'ppn': [1],
                                               'interconnects': ['a']}}}]},
     "x: unknown family 'npb'"),
    ({'partitions': [{'name': 'x', 'nodes': 1, 'sweep': {'acceptance': {
        'nodes': [1], 'ppn': [1]}}}]},
     "x.sweep.acceptance: missing key 'interconnects'"),
])
def test_bad_site_names_the_key(bad, message):
    if message is None:
        with pytest.raises((ValueError, TypeError)):
            _site(**bad)
        return

    with pytest.raises(ValueError, match=message):
        _site(**bad)


def test_measured_families_from_a_session():
    def tc(name, point, run, nodes):
        return timing.CaseTime('contention', name, f'{name} {point}', point,
                               'openmpi', 'pass', 0.0, run, 1.0, nodes,
                               nodes, 'fab0')
    cases = [tc('A', 'p1', 10.0, 2), tc('B', 'p1', 30.0, 2),
             tc('A', 'p2', 20.0, 4), tc('B', 'p2', 40.0, 4)]
    fams = cm.measured_families(cases, _site().families)
    c = fams['contention']
    assert (c.cases_per_point, c.run_s, c.n0, c.alpha) == (2.0, 25.0, 3, 1.0)
    assert fams['node'].run_s == 30      # not measured: kept


def test_the_documented_1000_node_site_matches_a_hand_calculation():
    # docs/examples/cost-1000-nodes.yaml, the table of docs/reports/cost-model.md
    import os
    import yaml
    from conftest import ROOT

    path = os.path.join(ROOT, 'docs', 'examples', 'cost-1000-nodes.yaml')
    with open(path) as fp:
        site = cm.load_site(yaml.safe_load(fp))

    # ci, per partition: 2 nodes x 1 ppn x 1 interconnect x 2 environments
    #   contention: 2 cases -> 4 jobs of 3.3 + 5.8 * (2/2)^1   =   9.1 s
    #   hpcc:       1 case  -> 2 jobs of 3.3 + 164 * (2/1)^0.5 = 235.229 s
    #   node:       max 1 node: no job at 2 nodes
    hpcc2 = 3.3 + 164 * 2 ** 0.5
    ci = cm.cost(site, 'ci')
    assert ci.jobs == 3 * (4 + 2)
    assert ci.wall_s == pytest.approx(3 * (4 * 9.1 + 2 * hpcc2))
    assert ci.node_hours == pytest.approx(
        3 * (4 * 2 * 9.1 + 2 * 2 * hpcc2) / 3600)
    assert ci.wall_s / 3600 == pytest.approx(0.4224, abs=1e-4)
    # nightly on bigmem: nodes 2, 16 x ppn 1, 32 x 2 environments
    #   contention: 8 jobs at 2 nodes (9.1 s), 8 at 16 (3.3 + 5.8 * 8)
    #   hpcc: 4 jobs at 2 nodes, 4 at 16 (3.3 + 164 * 4)
    nightly = cm.cost(site, 'nightly')
    assert nightly.per_partition_wall['bigmem'] == pytest.approx(
        8 * 9.1 + 8 * 49.7 + 4 * hpcc2 + 4 * 659.3)
    # acceptance on bigmem adds the 1-node node-level jobs: 3 ppn x 2
    # environments x 3 cases of 3.3 + 86 s
    #   cpu: 11 node counts x 3 ppn x 2 envs = 66 points: contention 132,
    #   hpcc 66, node (1 node only) 6 x 3 = 18 -> 216; gpu: 9 x 2 x 2 = 36:
    #   72 + 36 + 12 = 120; bigmem: 8 x 3 x 2 = 48: 96 + 48 + 18 = 162
    acc = cm.cost(site, 'acceptance')
    assert acc.jobs == 216 + 120 + 162
    assert acc.per_partition_wall['bigmem'] > 3 * 2 * 3 * (3.3 + 86)


def test_a_gpu_partition_counts_gpu_hours():
    site = _site()
    site.partitions[0].gpus_per_node = 4
    ci = cm.cost(site, 'ci')
    # 8 jobs of 30 s on 2 nodes of 4 GPUs each, held whole
    assert ci.gpu_hours == pytest.approx(8 * 2 * 4 * 30 / 3600)
    assert ci.gpu_hours == pytest.approx(4 * ci.node_hours)
    gpu = _site(partitions=[{**_site_partition(), 'gpus_per_node': 8}])
    assert cm.cost(gpu, 'ci').gpu_hours == pytest.approx(8 * ci.node_hours)
    assert cm.cost(_site(), 'ci').gpu_hours == 0


def _site_partition():
    return {'name': 'gpu', 'nodes': 8, 'environments': 2,
            'sweep': {'ci': {'nodes': [2], 'ppn': [1],
                             'interconnects': ['ib']},
                      'acceptance': {'nodes': [1, 2], 'ppn': [1],
                                     'interconnects': ['ib']}}}
