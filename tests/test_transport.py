"""A point labelled ``tcp`` must have run over TCP: the MPI's own report in
the job's output is checked against the interconnect's ``verify`` rules.

The outputs in tests/fixtures/transport/ are real runs of our
cg_contention (barrier and ping-pong, 2 ranks on this machine) and of
impi-rt's IMB-MPI1, with each MPI asked to say its transport; the
``*-labelled-tcp`` ones ran with the settings of another transport, as a
wrong configuration would (see the README there). The ``*-fab0`` and
``*-fab1`` ones ran on 2 nodes of the emulated cluster (emucluster), each
with its fabric's settings.
"""

import importlib.util
import os
import re
import sys

import pytest

from clustergate.parsers import cgoutput
from clustergate.site import sweep
from clustergate.site import transport
from clustergate.site.errors import ExtrasError
from clustergate.site.partition import partition_model as model
from clustergate.parsers import parse_imb

from conftest import FIXTURES, ROOT


def _system_module(name):
    path = os.path.join(ROOT, 'config', 'systems', name + '.py')
    spec = importlib.util.spec_from_file_location(f'cg_test_{name}', path)
    mod = importlib.util.module_from_spec(spec)
    saved = list(sys.path)
    try:
        # a system module puts config/systems on sys.path to import _mpi
        spec.loader.exec_module(mod)
    finally:
        sys.path[:] = saved
    return mod


MPI = _system_module('_mpi')
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
        "btl on fab0 (asked with OMPI_MCA_btl_base_verbose=20)"),
    # the emulated cluster: a point labelled fab0 whose run went over fab1
    'openmpi fab1 run labelled fab0': (
        ('openmpi', 'fab0', 'openmpi-fab1', 'fab0'),
        "interconnect 'fab0' not verified: the MPI did not report the tcp "
        "btl on fab0 (asked with OMPI_MCA_btl_base_verbose=20)"),
    'intelmpi fab1 run labelled fab0': (
        ('intelmpi', 'fab0', 'intelmpi-fab1', 'fab0'),
        "interconnect 'fab0' not verified: the MPI did not report rank 0 "
        "on NIC fab0 (asked with I_MPI_DEBUG=5)"),
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


@pytest.fixture(scope='module')
def emu_interconnects():
    """The interconnects of emucluster's partition, as configured."""
    emu = _system_module('emucluster')
    part = emu.site_configuration['systems'][0]['partitions'][0]
    return part['extras']['interconnects']


def test_emucluster_fabrics_declare_their_verification(emu_interconnects):
    for fabric in ('fab0', 'fab1'):
        verify = emu_interconnects[fabric].get('verify')
        assert verify == MPI.tcp_verification(fabric), fabric
        # the MPIs that measure the emulated fabrics (not MPICH, see
        # emucluster.py)
        assert {'openmpi', 'intelmpi'} <= set(verify), fabric


@pytest.mark.parametrize('family', ['openmpi', 'intelmpi'])
@pytest.mark.parametrize('fabric,other', [('fab0', 'fab1'),
                                          ('fab1', 'fab0')])
def test_emulated_fabric_runs_are_verified_by_the_declared_rules(
        emu_interconnects, family, fabric, other):
    # 2 nodes of emucluster, Intel MPI under srun --mpi=pmi2, OpenMPI's
    # mpirun inside the allocation, each with the fabric's settings
    extras = {'interconnects': emu_interconnects}
    rules = transport.rules(model(extras), fabric, family)
    assert rules is not None
    assert transport.mismatch(rules, output(f'{family}-{fabric}'),
                              fabric) is None
    # the other fabric's run does not pass for this one
    reason = transport.mismatch(rules, output(f'{family}-{other}'), fabric)
    assert reason and '\n' not in reason


def _net_dev(text, when):
    """{interface: (rx bytes, tx bytes)} of the ``/proc/net/dev`` that
    the capture printed under ``== /proc/net/dev of <node> <when>``."""
    block = text.split(f' {when}\n', 1)[1]
    found = {}
    for line in block.splitlines()[2:]:
        m = re.match(r'\s*(\w+):\s*(\d+)(?:\s+\d+){7}\s+(\d+)', line)
        if not m:
            break
        found[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return found


def test_the_nic_intel_mpi_names_is_the_one_that_carried_the_run():
    # the same job as intelmpi-fab0, with node n1's interface counters
    # printed before and after the srun step: rank 0's "Pin nic" (what
    # the rule reads) is the fabric whose counters moved
    text = open(os.path.join(FIXTURES, 'transport',
                             'intelmpi-fab0-counters.out')).read()
    nic = re.search(r'MPI startup\(\): 0\s+\d+\s+(\w+)\s*$', text,
                    re.M).group(1)
    before, after = _net_dev(text, 'before'), _net_dev(text, 'after')
    moved = {i: [a - b for a, b in zip(after[i], before[i])]
             for i in ('fab0', 'fab1')}
    assert nic == 'fab0'
    # 2 x 199 trials of barrier and ping-pong: hundreds of kB each way
    assert min(moved['fab0']) > 100_000, moved
    assert moved['fab1'] == [0, 0], moved


def test_localhost_tcp_settings_are_what_the_rules_expect():
    # the rule for Intel MPI looks for the echo of this setting
    assert MPI.intelmpi_tcp('lo')['I_MPI_COLL_INTRANODE'] == 'pt2pt'


@pytest.mark.parametrize('name', ['openmpi-tcp-lo', 'mpich-tcp-lo',
                                  'intelmpi-tcp-lo-after', 'openmpi-fab0',
                                  'intelmpi-fab0'])
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
    with pytest.raises(ExtrasError) as err:
        sweep.describe(model(extras, 'sys:part'))
    assert str(err.value).startswith(
        "partition 'sys:part': interconnect 'tcp': "
        "verify.openmpi.expect['x']: bad regex: ")


def test_verification_env_only_when_declared():
    extras = {'interconnects': {'tcp': {'verify': RULES},
                                'shm': {}}}
    ics = model(extras).interconnects
    assert ics['tcp'].report_env('intelmpi') == {'I_MPI_DEBUG': '5'}
    assert ics['shm'].report_env('intelmpi') == {}
    assert ics['tcp'].report_env(None) == {}
    assert transport.mismatch(transport.rules(model(extras), 'shm', 'openmpi'),
                              '', 'shm') is None


@pytest.mark.parametrize('fabric', ['fab0', 'fab1'])
def test_openmpi_over_ucx_across_nodes_is_verified(fabric):
    """OpenMPI's UCX PML between two emulated nodes: the run on one fabric
    passes that fabric's rules and fails the other's, naming it."""
    other = {'fab0': 'fab1', 'fab1': 'fab0'}[fabric]
    out = output(f'openmpi-ucx-{fabric}')
    assert transport.mismatch(MPI.ucx_tcp_verification(fabric), out,
                              fabric) is None
    why = transport.mismatch(MPI.ucx_tcp_verification(other), out, other)
    assert 'a UCX endpoint over another interface' in why, why
    assert f'tcp/{fabric}' in why
    shm = output('mpich-default-labelled-tcp')
    assert 'shared memory' in transport.mismatch(
        MPI.ucx_tcp_verification(fabric), shm, fabric)


def test_openmpi_declared_verbosity_verifies_a_real_run_and_no_more(
        built_programs):
    # a real 4-rank link matrix over loopback TCP with exactly the
    # declared settings: the rules find what they need in its output, and
    # the MPI prints none of the socket chatter of higher levels (binds,
    # "would block" during the measured rounds) that no rule reads
    import shutil
    import subprocess
    from conftest import mpirun_env
    exe = shutil.which('mpirun.openmpi')
    if exe is None:
        pytest.skip('OpenMPI not installed (apt-get install openmpi-bin)')
    env = {**mpirun_env(), **MPI.openmpi_tcp('lo'),
           **RULES['openmpi']['env']}
    cp = subprocess.run([exe, '-np', '4', '--oversubscribe', '--bind-to',
                         'none', os.path.join(built_programs,
                                              'cg_linkmatrix'),
                         '--any-placement', '--trials', '2', '--bytes',
                         '64K'], env=env, capture_output=True, text=True,
                        timeout=120)
    assert cp.returncode == 0, cp.stderr[-2000:]
    text = cp.stdout + cp.stderr
    assert transport.mismatch(RULES['openmpi'], text, 'lo') is None
    assert 'btl:tcp: Attempting to bind' not in text
    assert 'would block' not in text
