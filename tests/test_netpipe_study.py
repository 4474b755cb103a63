"""The shared-interface study as a ReFrame check (NetpipeSharedInterface):
its parser and sanity on real outputs of the check (NPtcp and iperf3,
tests/fixtures/benchmark-outputs/netpipe, see its README), the devices
taken from the interconnects, the generated job scripts (dry run), and
the wrapper itself run for real on loopback."""

import json
import os
import re
import shutil
import subprocess

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from clustergate.parsers import ParseError
from clustergate.parsers.netpipe_output import parse_study
from clustergate.site import partition as model
from conftest import ROOT, fixture_text, reframe_cmd
from rfm_loader import fed, load_checks, perf_values

WRAPPER = os.path.join(ROOT, 'checks', 'netpipe', 'np_study.sh')


def out(name):
    return fixture_text('benchmark-outputs', 'netpipe', name)


NPTCP_LO = out('study-nptcp-one_iface.loopback.out')
IPERF_LO = out('study-iperf3-one_iface.loopback.out')


@pytest.fixture(scope='module')
def checks():
    return load_checks('checks/netpipe/netpipe_checks.py')


def check_for(checks, tool, text, devs=('lo', 'lo'), stderr=''):
    c = next(c for c in checks if c.tool == tool)
    c.stream_devs = list(devs)
    c.stderr_text = lambda: stderr
    return fed(c, text)


# -- the parser -------------------------------------------------------------

def test_the_study_of_nptcp_is_read():
    study = parse_study(NPTCP_LO)
    rates = {(s.phase, s.stream): s.rate() for s in study.streams}
    # NetPIPE's Mbps / 8 of the four runs in the file
    assert rates == pytest.approx({('alone1', 1): 26151.74 / 8,
                                   ('alone2', 2): 23117.47 / 8,
                                   ('together', 1): 7223.05 / 8,
                                   ('together', 2): 4118.44 / 8})
    assert {d for _, d in study.tx_bytes} == {'lo'}
    assert set(study.tx_bytes) == {('alone1', 'lo'), ('alone2', 'lo'),
                                   ('together', 'lo')}


def test_the_study_of_iperf3_is_read():
    rates = {(s.phase, s.stream): s.rate()
             for s in parse_study(IPERF_LO).streams}
    # end.sum_received.bits_per_second / 8e6 of each JSON document
    assert rates == pytest.approx({('alone1', 1): 6727.650088 / 8,
                                   ('alone2', 2): 8361.040217 / 8,
                                   ('together', 1): 3950.029719 / 8,
                                   ('together', 2): 3775.955856 / 8})


@pytest.mark.parametrize('cut, message', [
    ('NP_DONE', 'no NP_DONE line'),
    ('NP_END phase=together stream=2', 'stream 2 of phase together has '
                                       'no NP_END'),
])
def test_a_study_cut_short_is_named(cut, message):
    text = NPTCP_LO[:NPTCP_LO.index(cut)]
    with pytest.raises(ParseError, match=message):
        parse_study(text)


def test_a_missing_phase_is_named():
    text = re.sub(r'NP_BEGIN phase=alone2.*?NP_END phase=alone2 stream=2\n',
                  '', NPTCP_LO, flags=re.S)
    with pytest.raises(ParseError, match='no output of stream 2 in phase '
                                         'alone2'):
        parse_study(text)


# -- sanity and performance of the check ------------------------------------

@pytest.mark.parametrize('tool, text', [('NPtcp', NPTCP_LO),
                                        ('iperf3', IPERF_LO)])
def test_real_outputs_pass_with_the_ratio(checks, tool, text):
    c = check_for(checks, tool, text)
    assert sn.evaluate(c.validate()) is True
    pv = perf_values(c)
    s1 = pv['together_s1'] / pv['alone_s1']
    s2 = pv['together_s2'] / pv['alone_s2']
    assert pv['ratio_s1'] == pytest.approx(s1)
    assert pv['ratio'] == pytest.approx((s1 + s2) / 2)


def test_nptcp_figures(checks):
    pv = perf_values(check_for(checks, 'NPtcp', NPTCP_LO))
    assert pv['alone_s1'] == pytest.approx(26151.74 / 8)
    assert pv['ratio'] == pytest.approx((7223.05 / 26151.74 +
                                         4118.44 / 23117.47) / 2)


def test_a_failed_program_is_named(checks):
    text = NPTCP_LO.replace('stream=2 tool=NPtcp dev=lo dst=127.0.0.1 rc=0',
                            'stream=2 tool=NPtcp dev=lo dst=127.0.0.1 '
                            'rc=124', 1)
    with pytest.raises(SanityError, match=r'NPtcp stream 2 \(alone2\) '
                                          r'exited 124'):
        sn.evaluate(check_for(checks, 'NPtcp', text).validate())


def test_the_wrong_device_is_named(checks):
    c = check_for(checks, 'NPtcp', NPTCP_LO, devs=('fab0', 'fab1'))
    with pytest.raises(SanityError, match='over lo, expected NPtcp over '
                                          'fab0'):
        sn.evaluate(c.validate())


def test_traffic_that_missed_the_device_fails(checks):
    text = re.sub(r'(NP_TX phase=together dev=lo bytes=)\d+', r'\g<1>5120',
                  NPTCP_LO)
    with pytest.raises(SanityError, match='together: device lo of the '
                                          'transmitting node sent 5120 B'):
        sn.evaluate(check_for(checks, 'NPtcp', text).validate())


def test_another_message_size_fails(checks):
    c = check_for(checks, 'NPtcp', NPTCP_LO)
    c.msg_bytes = 2**20
    try:
        with pytest.raises(SanityError, match='measured 4194304 B, asked '
                                              '1048576 B'):
            sn.evaluate(c.validate())
    finally:
        c.msg_bytes = 4 * 2**20


def test_the_wrappers_error_is_the_reason(checks):
    err = 'NP_ERROR n3 rank 2: device fab1 has no IPv4 address'
    c = check_for(checks, 'NPtcp', '', stderr=err + '\n')
    with pytest.raises(SanityError, match=err):
        sn.evaluate(c.validate())


# -- devices and points -----------------------------------------------------

def _ic(**more):
    return {'scope': 'network',
            'env': {'openmpi': {'OMPI_MCA_btl_tcp_if_include': 'eth1'}},
            **more}


@pytest.mark.parametrize('ic, device', [
    (_ic(), 'eth1'),
    (_ic(netdev='ib0'), 'ib0'),
    ({'scope': 'network', 'env': {'intelmpi': {'FI_TCP_IFACE': 'hsn0'}}},
     'hsn0'),
    ({'scope': 'network', 'env': {'openmpi': {'UCX_NET_DEVICES':
                                              'mlx5_0:1'}}}, None),
    ({'scope': 'network', 'env': {'openmpi': {
        'OMPI_MCA_btl_tcp_if_include': 'eth0,eth1'}}}, None),
])
def test_the_device_of_an_interconnect(ic, device):
    m = model.partition_model({'sweep': {'nodes': [2], 'ppn': [1]},
                               'interconnects': {'net': ic}}, 's:p')
    assert m.interconnects['net'].device() == device


class _Part:
    fullname = 's:p'

    def __init__(self, ics):
        self.extras = {'sweep': {'nodes': [1, 2, 4], 'ppn': [1, 2]},
                       'interconnects': ics}
        self.processor = {}


@pytest.mark.parametrize('ics, point, reason', [
    ({'a': _ic()}, ('a', 'one_iface', 2, 1), None),
    ({'a': _ic()}, ('a', 'two_ifaces', 2, 1), 'one network device'),
    ({'a': _ic(), 'b': _ic(netdev='eth2')}, ('a', 'two_ifaces', 4, 1), None),
    ({'a': _ic()}, ('a', 'one_iface', 2, 2), 'one rank per node'),
    ({'a': _ic()}, ('a', 'one_iface', 1, 2), 'never leave it'),
    ({'a': _ic(netdev='lo')}, ('a', 'one_iface', 1, 2), None),
    ({'a': {'scope': 'network', 'env': {'openmpi': {}}}},
     ('a', 'one_iface', 2, 1), 'names no network device'),
])
def test_which_points_can_run(ics, point, reason):
    from clustergate.rfm.families.netpipe import layout_reason
    got = layout_reason(_Part(ics), *point)
    assert (got is None) if reason is None else (reason in got), got


def test_the_second_interface_is_another_device():
    from clustergate.rfm.families.netpipe import stream_devices
    part = _Part({'a': _ic(), 'b': _ic(netdev='eth2'),
                  'shm': {'scope': 'node', 'env': {'openmpi': {}}}})
    assert stream_devices(part, 'a', 'one_iface') == ['eth1', 'eth1']
    assert stream_devices(part, 'a', 'two_ifaces') == ['eth1', 'eth2']
    assert stream_devices(part, 'b', 'two_ifaces') == ['eth2', 'eth1']


# -- the job scripts (dry run) ----------------------------------------------

@pytest.fixture(scope='module')
def dry_emucluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('drynetpipe')
    env = dict(os.environ, CG_PERFLOG_DIR=str(tmp / 'perflogs'),
               CG_RESULTS_DB=str(tmp / 'results.db'),
               CG_DEBUG_LOG=str(tmp / 'reframe.log'))
    report = tmp / 'report.json'
    proc = subprocess.run(reframe_cmd() + [
        '-C', os.path.join(ROOT, 'config', 'settings.py'),
        '--system', 'emucluster', '--mode', 'acceptance',
        '-c', os.path.join(ROOT, 'checks', 'netpipe'), '--dry-run',
        '--prefix', str(tmp), '--report-file', str(report)],
        env=env, capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(report) as fp:
        return [tc for run in json.load(fp)['runs']
                for tc in run['testcases']]


def _script(cases, **attrs):
    tc = next(tc for tc in cases
              if all(tc.get(k) == v for k, v in attrs.items()))
    with open(os.path.join(tc['stagedir'], 'rfm_job.sh')) as fp:
        return fp.read()


def test_every_point_of_the_emulated_cluster_is_written(dry_emucluster):
    assert all(tc['result'] != 'fail' for tc in dry_emucluster)
    points = {(tc['tool'], tc['layout'], tc['num_nodes'], tc['ppn'],
               tc['interconnect']) for tc in dry_emucluster}
    # one rank per node, on 2 nodes and more, over both fabrics
    assert ('NPtcp', 'two_ifaces', 2, 1, 'fab1') in points
    assert ('iperf3', 'one_iface', 2, 1, 'fab0') in points
    assert all(p[3] == 1 and p[2] >= 2 for p in points)


def test_the_job_script_of_two_interfaces(dry_emucluster):
    text = _script(dry_emucluster, tool='NPtcp', layout='two_ifaces',
                   interconnect='fab1', num_nodes=max(
                       tc['num_nodes'] for tc in dry_emucluster))
    assert "export NP_IFACES='fab1 fab0'" in text
    assert "export NP_RX='1 2'" in text
    assert 'export NP_TOOL=NPtcp' in text
    assert "-l 4194304 -u 4194304 -n 15 -2" in text
    assert re.search(r'--map-by ppr:1:node .*np_study\.sh', text), text


def test_two_nodes_receive_on_the_second(dry_emucluster):
    text = _script(dry_emucluster, tool='iperf3', layout='one_iface',
                   interconnect='fab0', num_nodes=2)
    assert "export NP_IFACES='fab0 fab0'" in text
    assert "export NP_RX='1 1'" in text
    assert "export NP_IPERF_OPTS='-t 3'" in text


# -- the wrapper, for real on loopback ---------------------------------------

def _wrapper_env(tmp_path, tool, **more):
    env = {k: v for k, v in os.environ.items() if k not in
           ('PMIX_RANK', 'OMPI_COMM_WORLD_RANK', 'PMI_RANK', 'SLURM_PROCID')}
    env.update(NP_DIR=str(tmp_path), NP_TOOL=tool, NP_IFACES='lo lo',
               NP_RX='1 1', NP_PORT='5460', NP_WAIT='30',
               NP_NETPIPE_OPTS='-p 0 -l 65536 -u 65536 -n 5 -o /dev/null',
               NP_IPERF_OPTS='-t 1')
    env.update(more)
    return env


@pytest.mark.skipif(not (shutil.which('NPtcp') and shutil.which('ss')),
                    reason='NPtcp or ss not installed')
def test_the_wrapper_measures_on_loopback(tmp_path):
    with open('/sys/class/net/lo/statistics/tx_bytes') as fp:
        before = int(fp.read())
    rx = subprocess.Popen([WRAPPER], env=_wrapper_env(
        tmp_path, 'NPtcp', OMPI_COMM_WORLD_RANK='1'))
    tx = subprocess.run([WRAPPER], env=_wrapper_env(
        tmp_path, 'NPtcp', OMPI_COMM_WORLD_RANK='0'), capture_output=True,
        text=True, timeout=120)
    assert rx.wait(timeout=60) == 0 and tx.returncode == 0, tx.stderr
    study = parse_study(tx.stdout)
    assert [(s.phase, s.stream) for s in study.streams] == [
        ('alone1', 1), ('alone2', 2), ('together', 1), ('together', 2)]
    assert all(s.rate() > 0 for s in study.streams)
    # deltas of the counter: at least the messages, at most what the
    # counter rose by over the test (the raw counter is more: it counts
    # from boot, which on a machine booted minutes ago is little)
    with open('/sys/class/net/lo/statistics/tx_bytes') as fp:
        rose = int(fp.read()) - before
    assert all(5 * 65536 <= b <= rose for b in study.tx_bytes.values())


def test_the_wrapper_without_a_receiver_says_so(tmp_path):
    proc = subprocess.run([WRAPPER], env=_wrapper_env(
        tmp_path, 'iperf3', OMPI_COMM_WORLD_RANK='0', NP_WAIT='1'),
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert 'no receiver published' in proc.stderr
    assert 'NP_DONE' not in proc.stdout
