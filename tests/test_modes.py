"""One tag policy, impossible points never test cases, axes that follow
the system loaded (issue 11, items 1, 2 and 4).

For each family and each system (localhost, and emucluster without the
cluster up), the test cases each mode selects are exactly those the
family declares for the mode *and* the partition's subset of the mode
names; the expectation is computed here from the configuration, not by
the tag hook. No listed test case is one its partition cannot run.
"""

import functools
import glob
import os
import re
import subprocess

import pytest
from reframe.frontend import filters
from reframe.frontend.executors import generate_testcases

from clustergate.site.partition import SweepPoint
from clustergate.site import sweep
from clustergate.site.partition import partition_model
from conftest import ROOT, reframe_cmd
from rfm_loader import load_checks, system_runtime

SYSTEMS = ('localhost', 'emucluster')
MODES = ('ci', 'nightly', 'acceptance')
FAMILIES = sorted(os.path.relpath(p, ROOT) for p in
                  glob.glob(os.path.join(ROOT, 'checks', '*', '*.py')))


def mode_tag(site, mode):
    """The tag the mode selects, read from the configuration's modes."""
    opts = next(m['options'] for m in site.get('modes')
                if m['name'] == mode)
    return next(o.split('=', 1)[1] for o in opts if o.startswith('--tag='))


def point_of(check):
    try:
        return check.num_nodes, check.ppn, check.interconnect
    except AttributeError:
        return None


def in_partition_subset(point, extras, mode):
    """Does the partition's ``extras.sweep.<mode>`` name the point?"""
    sub = extras['sweep'].get(mode)
    if sub is None or point is None:
        return True

    nodes, ppn, ic = point
    return (nodes in sub.get('nodes', [nodes]) and
            ppn in sub.get('ppn', [ppn]) and
            ic in sub.get('interconnects', [ic]))


def declared(check, mode):
    """The family's declaration for the mode (its data, not the hook)."""
    rule = type(check).mode_selection.get(mode)
    return rule is not None and all(getattr(check, a) in v
                                    for a, v in rule.items())


def in_mode(check, extras, mode):
    """Is the check in the mode on the partition of ``extras``? A
    partition with a nightly budget (``rotation``) rotates its whole
    acceptance space through the nightly (clustergate.rfm.point.nightly)."""
    if declared(check, mode) and in_partition_subset(point_of(check),
                                                     extras, mode):
        return True

    return (mode == 'nightly' and 'rotation' in extras and
            in_mode(check, extras, 'acceptance'))


@functools.lru_cache(maxsize=None)
def cases_of(relpath, system):
    checks = [c for c in load_checks(relpath, system)
              if not c.is_fixture()]
    with system_runtime(system) as runtime:
        return runtime, generate_testcases(checks)


@pytest.fixture(scope='module', params=SYSTEMS)
def system(request):
    return request.param


@pytest.mark.parametrize('relpath', FAMILIES)
def test_modes_select_what_the_subsets_name(system, relpath):
    runtime, cases = cases_of(relpath, system)
    if not cases:
        pytest.skip(f'{relpath}: no test case on {system}')

    for mode in MODES:
        tag = mode_tag(runtime.site_config, mode)
        got = {(c.check.display_name, c.partition.fullname, c.environ.name)
               for c in filter(filters.have_tag(tag), cases)}
        want = {(c.check.display_name, c.partition.fullname, c.environ.name)
                for c in cases if in_mode(c.check, c.partition.extras, mode)}
        assert got == want, (mode, sorted(got ^ want)[:5])


def test_every_family_is_in_some_mode(system):
    # the comparison above must not pass on empty sets
    for relpath in FAMILIES:
        _, cases = cases_of(relpath, system)
        if 'linkmatrix' in relpath or 'nic' in relpath:
            continue        # need several nodes: none on localhost
        if 'gpu' in relpath:
            continue        # need GPUs: none on these systems

        assert [c for c in cases if 'acceptance' in c.check.tags], relpath


@pytest.mark.parametrize('relpath', FAMILIES)
def test_no_test_case_its_partition_cannot_run(system, relpath):
    # what the acceptance mode lists: no point skipped for a structural
    # reason (clustergate.site.sweep.why_not, with the check's requirements)
    _, cases = cases_of(relpath, system)
    for c in cases:
        point = point_of(c.check)
        if point is None or not hasattr(c.check, 'sweep_requirements'):
            continue

        reason = sweep.why_not(partition_model(c.partition),
                               SweepPoint(*point),
                               c.check.sweep_requirements,
                               c.environ.extras.get('mpi_family'))
        assert reason is None, (c.check.display_name, reason)


def test_emucluster_acceptance_has_no_node_local_point_across_nodes():
    _, cases = cases_of('checks/contention/contention_checks.py',
                        'emucluster')
    points = {point_of(c.check) for c in cases}
    assert (1, 2, 'shm') in points and (4, 2, 'fab1') in points
    assert not [p for p in points if p[2] == 'shm' and p[0] > 1]


def test_axes_follow_the_system_loaded():
    # emucluster first, then localhost, in one process: each gets its axes
    emu, local = ([c for c in load_checks('checks/osu/osu_checks.py', s)
                   if not c.is_fixture()] for s in SYSTEMS[::-1])
    cores = os.cpu_count()
    assert {c.num_nodes for c in emu} == {1, 2, 4}
    assert {c.interconnect for c in emu} == {'fab0', 'fab1', 'shm'}
    assert {c.num_nodes for c in local} == {1}
    assert {c.ppn for c in local} == set(range(1, cores + 1))
    assert {c.interconnect for c in local} == {'shm', 'tcp'}
    # a family whose sweep is a fixture's (HPCC's run), localhost first
    local, emu = ([c for c in load_checks('checks/hpcc/hpcc_checks.py', s)
                   if not c.is_fixture()] for s in SYSTEMS)
    assert {c.interconnect for c in local} == {'shm', 'tcp'}
    assert {c.interconnect for c in emu} == {'fab0', 'fab1', 'shm'}


def test_link_matrix_follows_the_ci_subset():
    # the link matrix declares every mode; the partition's ci subset
    # decides its points (not a literal tag set in the check)
    _, cases = cases_of('checks/linkmatrix/linkmatrix_check.py',
                        'emucluster')
    assert cases
    for c in cases:
        extras = c.partition.extras
        in_ci = in_partition_subset(point_of(c.check), extras, 'ci')
        assert ('ci' in c.check.tags) == in_ci
        assert c.check.num_nodes == max(extras['sweep']['nodes'])


def test_ci_listing_of_the_command_line():
    # the real `reframe --mode ci -l` on emucluster (no cluster needed)
    # lists what the comparison above expects
    want = set()
    for relpath in FAMILIES:
        runtime, cases = cases_of(relpath, 'emucluster')
        want |= {re.sub(r'\s+', ' ', c.check.display_name) for c in cases
                 if declared(c.check, 'ci') and in_partition_subset(
                     point_of(c.check), c.partition.extras, 'ci')}

    env = dict(os.environ, SLURM_CONF='')
    proc = subprocess.run(
        reframe_cmd() + ['-C', os.path.join(ROOT, 'config', 'settings.py'),
                         '--system', 'emucluster', '--mode', 'ci', '-l'],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = {re.sub(r' /[0-9a-f]+$', '', ln[2:]) for ln in
           proc.stdout.splitlines() if ln.startswith('- ')}
    assert want and got == want, sorted(got ^ want)[:5]


@pytest.mark.parametrize('relpath', FAMILIES)
def test_capable_partitions_are_chosen_before_the_mode_tags(relpath,
                                                           monkeypatch):
    # the tags judge the subsets of the partitions that can run the point:
    # the base's last init hook, after every family's, chooses them first
    from clustergate import adapter
    from clustergate.rfm.point import capable, modes
    calls = []
    monkeypatch.setattr(capable, 'keep_capable_points',
                        lambda t: calls.append('keep_capable_points'))
    monkeypatch.setattr(modes, 'set_mode_tags',
                        lambda t: calls.append('set_mode_tags'))
    for check in load_checks(relpath, 'localhost'):
        hooks = adapter.pipeline_hooks(type(check)).get('post___init__', [])
        if 'point_init_last' not in hooks:
            assert check.is_fixture(), check    # a build fixture
            continue

        assert hooks[-1] == 'point_init_last', (type(check).__name__, hooks)
        calls.clear()
        check.point_init_last()
        want = ['set_mode_tags']
        if check.narrow_to_capable:
            want.insert(0, 'keep_capable_points')
        assert calls == want, (type(check).__name__, calls)
