"""NetPIPE (NPtcp 3.7) and iperf3 parsers on real outputs made here
(tests/fixtures/benchmark-outputs/netpipe, see its README)."""

import json

import pytest

from clustergate.parsers import ParseError
from clustergate.parsers.netpipe_output import parse_iperf3, parse_netpipe
from conftest import fixture_text


def out(name):
    return fixture_text('benchmark-outputs', 'netpipe', name)


def test_range_of_sizes():
    pts = parse_netpipe(out('nptcp3.7-1B-64KiB.loopback.out'))
    assert pts[0].bytes == 1 and pts[-1].bytes == 65536
    assert len(pts) == 32
    assert pts[-1].times == 690 and pts[-1].mbps == 5785.39
    assert pts[-1].mb_per_s == pytest.approx(5785.39 / 8)


def test_one_size():
    (pt,) = parse_netpipe(out('nptcp3.7-4MiB-n20.loopback.out'))
    assert (pt.bytes, pt.times, pt.mbps, pt.usec) == (4194304, 20, 6384.20,
                                                       5012.38)


@pytest.mark.parametrize('name,tail', [
    ('nptcp3.7-no-receiver.out', 'Cannot Connect'),
    ('nptcp3.7-stream-reset.out', 'synchronization string'),
])
def test_no_point_says_how_it_ended(name, tail):
    with pytest.raises(ParseError, match=tail):
        parse_netpipe(out(name))


def test_iperf3_received_rate():
    text = out('iperf3.12-1s.loopback.json')
    bps = json.loads(text)['end']['sum_received']['bits_per_second']
    assert parse_iperf3(text) == pytest.approx(bps / 8e6)
    assert parse_iperf3(text) > 100


def test_iperf3_error_and_garbage():
    with pytest.raises(ParseError, match='unable to connect'):
        parse_iperf3(json.dumps({'start': {}, 'error':
                                 'unable to connect to server'}))
    with pytest.raises(ParseError, match='not JSON'):
        parse_iperf3('iperf3: error - unable to connect\n')
