"""A point labelled ``tcp`` must have run over TCP: the MPI's own report in
the job's output is checked against the interconnect's ``verify`` rules.

The outputs in tests/fixtures/transport/ are real runs of our
cg_contention (barrier and ping-pong, 2 ranks on this machine) and of
impi-rt's IMB-MPI1, with each MPI asked to say its transport; the
``*-labelled-tcp`` ones ran with the settings of another transport, as a
wrong configuration would (see the README there).
"""

import importlib.util
import os

import pytest

from clustergate import cgoutput, sweep, transport
from clustergate.parsers import parse_imb

from conftest import FIXTURES, ROOT


def _mpi_module():
    path = os.path.join(ROOT, 'config', 'systems', '_mpi.py')
    spec = importlib.util.spec_from_file_location('cg_test_mpi', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MPI = _mpi_module()
RULES = MPI.tcp_verification('lo')


def output(name):
    text = ''
    for ext in ('.out', '.err'):
        with open(os.path.join(FIXTURES, 'transport', name + ext)) as fp:
            text += fp.read()
    return text


@pytest.mark.parametrize('family,name', [
    ('openmpi', 'openmpi-tcp-lo'),
    ('mpich', 'mpich-tcp-lo'),
    ('intelmpi', 'intelmpi-tcp-lo-after'),
    ('intelmpi', 'intelmpi-tcp-lo-imb'),
])
def test_runs_over_tcp_are_verified(family, name):
    assert transport.mismatch(RULES[family], output(name), 'tcp') is None


# (rules: MPI family and interface, output, label): the reason, in full
# or (``...`` last) its start; always one line
_NOT_VERIFIED = {
    'openmpi over shared memory': (
        ('openmpi', 'lo', 'openmpi-vader-labelled-tcp', 'tcp'),
        "interconnect 'tcp' not verified: a peer reached by a btl other "
        "than tcp: 'mca: bml: Using vader btl for send to [[..."),
    'mpich over shared memory': (
        ('mpich', 'lo', 'mpich-default-labelled-tcp', 'tcp'),
        "interconnect 'tcp' not verified: a UCX endpoint over shared "
        "memory: 'ep_cfg[0]: tag(self/memory0 cma/memory)..."),
    # the old settings: provider tcp, but collectives within the node in
    # shared memory (IMB Barrier at shared-memory speed)
    'intelmpi collectives in shared memory': (
        ('intelmpi', 'lo', 'intelmpi-tcp-lo-before', 'tcp'),
        "interconnect 'tcp' not verified: the MPI did not report "
        "intra-node collectives over the fabric (asked with "
        "I_MPI_DEBUG=5)"),
    'intelmpi shared-memory fabric': (
        ('intelmpi', 'lo', 'intelmpi-shm-labelled-tcp', 'tcp'),
        "interconnect 'tcp' not verified: the MPI did not report libfabric "
        "provider tcp (asked with I_MPI_DEBUG=5)"),
    'wrong interface': (
        ('openmpi', 'fab0', 'openmpi-tcp-lo', 'fab0'),
        "interconnect 'fab0' not verified: the MPI did not report the tcp "
        "btl on fab0 (asked with OMPI_MCA_btl_base_verbose=30)"),
}


@pytest.mark.parametrize('case', _NOT_VERIFIED)
def test_a_run_over_another_transport_is_named(case):
    (family, iface, name, label), expected = _NOT_VERIFIED[case]
    reason = transport.mismatch(MPI.tcp_verification(iface)[family],
                                output(name), label)
    assert '\n' not in reason
    if expected.endswith('...'):
        assert reason.startswith(expected[:-3])
    else:
        assert reason == expected


def test_localhost_tcp_settings_are_what_the_rules_expect():
    # the rule for Intel MPI looks for the echo of this setting
    assert MPI.intelmpi_tcp('lo')['I_MPI_COLL_INTRANODE'] == 'pt2pt'


@pytest.mark.parametrize('name', ['openmpi-tcp-lo', 'mpich-tcp-lo',
                                  'intelmpi-tcp-lo-after'])
def test_debug_output_does_not_disturb_our_parser(name):
    run = cgoutput.parse(output(name))
    cgoutput.verify(run, 'cg_contention')
    assert {m.pattern for m in run.measurements} == {'barrier', 'pingpong'}


def test_debug_output_does_not_disturb_imb_parser():
    res = parse_imb(output('intelmpi-tcp-lo-imb'))
    assert [b.name for b in res.blocks] == ['PingPong', 'Barrier']


def test_malformed_verify_block_is_one_line_naming_the_interconnect():
    extras = {'sweep': {'nodes': [1], 'ppn': [2]},
              'interconnects': {'tcp': {
                  'scope': 'network', 'env': {'openmpi': {}},
                  'verify': {'openmpi': {'expect': {'x': '(unclosed'}}}}}}
    with pytest.raises(sweep.SweepConfigError) as err:
        sweep.describe(extras, 'sys:part')
    assert str(err.value).startswith(
        "partition 'sys:part': interconnect 'tcp': "
        "verify.openmpi.expect['x']: bad regex: ")


def test_verification_env_only_when_declared():
    extras = {'interconnects': {'tcp': {'verify': RULES},
                                'shm': {}}}
    assert transport.env(extras, 'tcp', 'intelmpi') == {'I_MPI_DEBUG': '5'}
    assert transport.env(extras, 'shm', 'intelmpi') == {}
    assert transport.mismatch(transport.rules(extras, 'shm', 'openmpi'),
                              '', 'shm') is None
