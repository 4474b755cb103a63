"""The site model: a partition's extras parsed and validated once into
frozen objects, and the only code that reads them."""

import ast
import dataclasses
import os
from types import SimpleNamespace

import pytest

from clustergate.links.matrixjob import declared_topology
from clustergate.site import partition as model
from clustergate.site.extras import ExtrasError
from conftest import ROOT

ICS = {'shm': {'scope': 'node', 'env': {'openmpi': {'A': '1'}}},
       'fab0': {'scope': 'network', 'env': {'openmpi': {'B': '2'}}}}


def _extras(**more):
    return {'sweep': {'nodes': [4, 1, 2], 'ppn': [1, 2],
                      'ci': {'nodes': [2], 'interconnects': ['fab0']}},
            'interconnects': dict(ICS), **more}


def test_a_partition_is_parsed_once_into_frozen_objects():
    m = model.partition_model(_extras(rotation={'budget_min': 30}), 's:p')
    assert model.partition_model(_extras(rotation={'budget_min': 30}),
                                 's:p') is m
    assert m.sweep.nodes == (1, 2, 4) and m.sweep.ppn == (1, 2)
    assert m.sweep.subset('ci') == model.Subset(nodes=(2,),
                                                interconnects=('fab0',))
    assert m.sweep.subset('nightly') is None
    assert m.rotation.budget_s == 1800
    assert m.network_interconnects() == ('fab0',)
    assert m.sentinels == model.Sentinels()       # the defaults
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.improvements = 'fail'
    with pytest.raises(TypeError):
        m.interconnects['ib0'] = None


def test_the_site_order_of_the_interconnects_is_kept():
    fwd = model.partition_model(_extras(), 's:p')
    rev = model.partition_model(
        {**_extras(), 'interconnects': dict(reversed(ICS.items()))}, 's:p')
    assert list(fwd.interconnects) == ['shm', 'fab0']
    assert list(rev.interconnects) == ['fab0', 'shm']


@pytest.mark.parametrize('extras, message', [
    ({'rotation': {'budget_min': 0}},
     'partition s:p: extras.rotation.budget_min: must be a number of '
     'minutes above 0, got 0'),
    ({'hpcc': {'nbb': 192}},
     "partition s:p: extras.hpcc: Additional properties are not allowed "
     "('nbb' was unexpected)"),
    ({'cores_per_node': 'two'},
     "partition s:p: extras.cores_per_node: 'two' is not of type "
     "'integer'"),
    ({'stream_numa_counts': [1, -1]},
     'partition s:p: extras.stream_numa_counts.1: -1 is less than the '
     'minimum of 0'),
])
def test_a_wrong_value_is_one_line_naming_the_partition_and_key(extras,
                                                                 message):
    with pytest.raises(ExtrasError) as err:
        model.partition_model(extras, 's:p')
    assert str(err.value) == message


def test_the_sweep_is_checked_when_asked_for():
    login = model.partition_model({}, 's:login')     # no sweep: parses
    assert not login.declares_sweep
    with pytest.raises(ExtrasError, match="partition 's:login': "
                       "extras.sweep is missing"):
        login.sweep
    bad = model.partition_model(
        {'sweep': {'nodes': [1], 'ppn': [1]},
         'interconnects': {'x': {'scope': 'bus', 'env': {}}}}, 's:p')
    with pytest.raises(ExtrasError, match="interconnect 'x' has "
                       "scope 'bus'"):
        bad.sweep


def test_the_keys_reframe_adds_are_not_the_sites():
    part = SimpleNamespace(fullname='s:p', extras={
        **_extras(), 'scheduler': 'slurm', 'launcher': 'srun'})
    assert model.partition_model(part).sweep.nodes == (1, 2, 4)
    # written in the configuration, the same key is refused
    with pytest.raises(ExtrasError, match=r'partition s:p: extras\.'
                       r'launcher: unknown key'):
        model.config_partition_model(
            {'name': 's'}, {'name': 'p', 'extras': {'launcher': 'srun'}})


def test_the_declared_topology_reaches_the_link_matrix(tmp_path):
    conf = tmp_path / 'topology.conf'
    conf.write_text('SwitchName=leaf0 Nodes=n[1-2]\n')
    m = model.partition_model(_extras(topology={
        'file': str(conf), 'interconnects': ['fab0']}), 's:p')
    assert m.topology.describes('fab0') and not m.topology.describes('shm')
    tree = declared_topology(m.topology.spec)
    assert sorted(tree.nodes) == ['n1', 'n2']


def test_an_environment_model():
    env = SimpleNamespace(name='ompi', extras={'mpi_family': 'openmpi',
                                               'srun_options': ['--mpi=x']})
    got = model.environment_model(env)
    assert (got.mpi_family, got.srun_options) == ('openmpi', ('--mpi=x',))
    with pytest.raises(ExtrasError, match='environment bad: extras.'
                       'mpi_family'):
        model.environment_model(SimpleNamespace(
            name='bad', extras={'mpi_family': 'lam'}))


#: the modules that may read a partition's or an environment's extras
PARSERS = {os.path.join('clustergate', 'site', 'model.py'),
           os.path.join('clustergate', 'site', 'extras.py')}


def _extras_reads():
    root = os.path.join(ROOT, 'utils')
    for dirpath, _, files in os.walk(root):
        for fname in files:
            path = os.path.join(dirpath, fname)
            rel = os.path.relpath(path, root)
            if not fname.endswith('.py') or rel in PARSERS:
                continue
            with open(path) as fp:
                tree = ast.parse(fp.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr == 'extras':
                    yield f'{rel}:{node.lineno}'


def test_only_the_model_reads_extras():
    assert list(_extras_reads()) == []
