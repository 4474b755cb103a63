"""A run fixture's readers never measured are planned at their share of the
*whole* run, never at a reader's share taken for the run
(clustergate.planning.measured.run_costs,
clustergate.planning.estimates.whole_runs and nearest_run).

Measured on the 12-node emulated site (2 cores, OpenMPI 4.1.4, 250 Mbit/s
node links, a fresh results database, 2026-12-07): HPCC's six kernels
read one run together and each paid a sixth of it (the 1-node x 2 run
over fab0_ucx: 245.7 s, 41 s a reader). The next nights planned the same
run over fab1 at 41 s in all (the most one reader of its kind paid, then
split six ways) and a 4-node x 1 run at 14 s in all (one reader's 7-s
share of the fab1 plan, grown by the square root of 4). The 4-node run
took 453 s, started at minute 16 of a 16-minute night, and the night ran
18 min."""

import json
import os

import pytest

from clustergate.planning import estimates, measured
from conftest import FIXTURES
# the rotation as test_rotation_node_count plans it (its fixture plan)
from test_rotation_node_count import ENV, PART, _test, plan  # noqa: F401

KERNELS = ('Hpl', 'Stream', 'RandomAccess', 'Ptrans', 'Fft', 'Beff')
RUN_1X2_UCX_S = 245.7       # the whole run: its job and six readers
READER_S = 41.0             # what each of its readers' records says


def _readers(run):
    return [f'Hpcc{k} {run}' for k in KERNELS]


def _night_of_2026_12_25():
    """The results database after the first night: the 1 x 2 run over
    fab0_ucx, read by its six kernels together."""
    ucx = '%hpcc.num_nodes=1 %hpcc.ppn=2 %hpcc.interconnect=fab0_ucx'
    records = {(n, PART, ENV): (READER_S, 1.0, 'measured')
               for n in _readers(ucx)}
    totals = {(estimates.shared_run(_readers(ucx)[0]), PART, ENV):
              RUN_1X2_UCX_S}
    return records, totals


@pytest.mark.parametrize('run,nodes,ppn,whole', [
    # over another fabric: the whole run of its kind, not one share of it
    ('%hpcc.num_nodes=1 %hpcc.ppn=2 %hpcc.interconnect=fab1', 1, 2,
     RUN_1X2_UCX_S),
    # at a node count never run: the 1-node run (no run at 1 rank per
    # node was measured) grown as HPCC grows, the square root of 4
    # (measured that night: 453 s)
    ('%hpcc.num_nodes=4 %hpcc.ppn=1 %hpcc.interconnect=fab0_ucx', 4, 1,
     RUN_1X2_UCX_S * 2),
])
def test_the_readers_of_a_run_never_measured_cost_a_whole_run(
        plan, run, nodes, ppn, whole):  # noqa: F811 (the fixture)
    records, totals = _night_of_2026_12_25()
    names = _readers(run)
    tests = [_test(n, 'hpcc', nodes) for n in names]
    for t in tests:
        t.ppn = ppn
    pts = plan(records, tests, totals)
    assert sum(pts[n].cost[PART] for n in names) == pytest.approx(whole)
    assert {pts[n].source for n in names} == {'like'}


def test_the_same_ranks_per_node_is_nearer_than_another():
    alike = {(estimates.SHARED_RUN, 'hpcc.interconnect=fab0 '
              'hpcc.num_nodes=2 hpcc.ppn=1', PART, ENV): 300.0,
             (estimates.SHARED_RUN, 'hpcc.interconnect=fab0 '
              'hpcc.num_nodes=4 hpcc.ppn=2', PART, ENV): 900.0,
             # another MPI's run is no measure of this one
             (estimates.SHARED_RUN, 'hpcc.interconnect=fab0 '
              'hpcc.num_nodes=8 hpcc.ppn=2', PART, 'mpich'): 5000.0}
    run = 'hpcc.interconnect=fab1 hpcc.num_nodes=8 hpcc.ppn=1'
    assert estimates.nearest_run(alike, run, PART, ENV, 'hpcc') == \
        pytest.approx(300.0 * 2)
    run2 = 'hpcc.interconnect=fab1 hpcc.num_nodes=8 hpcc.ppn=2'
    assert estimates.nearest_run(alike, run2, PART, ENV, 'hpcc') == \
        pytest.approx(900.0 * 2 ** 0.5)
    assert estimates.nearest_run({}, run, PART, ENV, 'hpcc') is None
    assert estimates.run_shape(run) == ('hpcc', 8, '1')


def test_the_whole_run_is_its_job_and_its_readers_from_nightly_sessions():
    # trimmed real report of the emulated nightly of 2026-11-23: HPCC's
    # 1-node run (32.01 s) read by HpccHpl alone, its 4-node run (56.29 s)
    # by two readers
    with open(os.path.join(FIXTURES, 'rotation',
                           'night-2026-11-23.json')) as fp:
        report = json.load(fp)

    runs = measured.run_costs([report])
    part = 'emucluster:emu'
    one = estimates.shared_run('HpccHpl %hpcc.num_nodes=1 %hpcc.ppn=2 '
                               '%hpcc.interconnect=fab0')
    four = estimates.shared_run('HpccPtrans %hpcc.num_nodes=4 %hpcc.ppn=1 '
                                '%hpcc.interconnect=fab1')
    assert runs[one, part, 'openmpi'] == pytest.approx(32.01 + 0.386,
                                                       abs=0.01)
    # the run once, not once per reader
    case = measured.case_costs([report])
    readers = [v[0] for k, v in case.items()
               if estimates.shared_run(k[0]) == four and k[2] == 'openmpi']
    assert len(readers) == 2
    assert runs[four, part, 'openmpi'] == pytest.approx(sum(readers),
                                                        abs=0.01)
    # a ci session caps HPCC's N: its runs plan no night
    ci = json.loads(json.dumps(report))
    ci['session_info']['cmdline'] = 'reframe --mode ci -r'
    for run in ci['runs']:
        for tc in run['testcases']:
            tc['time_run'] = 1.0
            tc['time_total'] = 1.0
    assert measured.run_costs([report, ci]) == runs
    assert measured.run_costs([ci]) == {}
