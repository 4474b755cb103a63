"""Sanity and performance functions of the contention checks on real output
of cg_contention, on truncated and garbage output, and on a run whose
payload was corrupted on purpose."""

import re

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from conftest import fixture_text
from rfm_loader import load_checks, perf_values, pick

GOOD = fixture_text('cg-outputs', 'contention-np4-shm.out')
CORRUPT = fixture_text('cg-outputs', 'contention-np2-corrupt.out')

PATTERNS = ['PingPongDistance', 'BiPingPong', 'RightShift', 'NaiveBroadcast',
            'TreeBroadcast', 'AllToAll', 'Hotspot', 'Complement', 'Allreduce']


@pytest.fixture(scope='module')
def checks():
    return load_checks('checks/contention/contention_checks.py')


def fed(check, text, num_tasks=None):
    """The check at the sweep point ``text`` ran at, reading it as its
    stdout (``num_tasks`` forces another rank count)."""
    m = re.search(r'ranks=(\d+) ppn=(\d+) nodes=(\d+)', text)
    ranks, ppn, nodes = map(int, m.groups()) if m else (2, 2, 1)
    check.num_nodes, check.ppn = nodes, ppn
    check.num_tasks = num_tasks or ranks
    check.stdout_text = lambda: text
    return check


def line_of(text, pattern, size, peer=None):
    for line in text.splitlines():
        if (line.startswith(f'CG pattern={pattern} bytes={size} ') and
                (peer is None or f' peer={peer} ' in line)):
            return dict(kv.split('=', 1) for kv in line.split()[1:])

    raise LookupError(pattern)


@pytest.mark.parametrize('name', PATTERNS)
@pytest.mark.parametrize('size', [8, 1000000])
def test_real_output_passes_and_values_match(checks, name, size):
    c = fed(pick(checks, name, msg_bytes=size), GOOD)
    assert sn.evaluate(c.validate()) is True
    pattern = c.reported_pattern()
    if c.per_peer:
        # the headline value is the worst peer
        lines = [line_of(GOOD, pattern, size, j) for j in (1, 2, 3)]
        assert sn.evaluate(c.latency_of()) == max(float(m['t_us'])
                                                  for m in lines)
        assert sn.evaluate(c.bandwidth_of(2)) == float(lines[1]['bw_MBps'])
    else:
        m = line_of(GOOD, pattern, size)
        assert sn.evaluate(c.latency_of()) == float(m['t_us'])
        assert sn.evaluate(c.bandwidth_of()) == float(m['bw_MBps'])


def test_barrier_has_no_bandwidth(checks):
    c = fed(pick(checks, 'Barrier'), GOOD)
    assert sn.evaluate(c.validate())
    assert sn.evaluate(c.latency_of()) == float(
        line_of(GOOD, 'barrier', 0)['t_us'])
    assert c.has_bandwidth is False


def test_concurrent_ratio_is_read(checks):
    c = fed(pick(checks, 'ConcurrentSends', msg_bytes=1000000), GOOD)
    assert sn.evaluate(c.validate())
    want = float(line_of(GOOD, 'concurrent_pair', 1000000)['ratio'])
    assert sn.evaluate(c.ratio()) == want


@pytest.mark.parametrize('cut', [0.3, 0.7, 0.99])
def test_truncated_output_is_a_sanity_failure(checks, cut):
    lines = GOOD.splitlines()
    text = '\n'.join(lines[:int(len(lines) * cut)])
    c = fed(pick(checks, 'RightShift', msg_bytes=8), text)
    with pytest.raises(SanityError, match='CG_DONE|no shift measurement'):
        sn.evaluate(c.validate())


def test_cut_mid_line_is_detected(checks):
    # completion line present but one measurement lost in the middle
    lines = GOOD.splitlines()
    text = '\n'.join(lines[:5] + lines[6:])
    c = fed(pick(checks, 'Hotspot', msg_bytes=8), text)
    with pytest.raises(SanityError, match='announces 46 measurements but 45'):
        sn.evaluate(c.validate())


@pytest.mark.parametrize('text', [
    '', 'Segmentation fault (core dumped)\n',
    '\x00\xff garbage \n CG_DONE',
    'CG pattern=shift bytes=8 ranks=four t_us=abc\nCG_DONE program=x\n',
])
def test_garbage_is_a_sanity_failure_not_an_exception(checks, text):
    c = fed(pick(checks, 'RightShift', msg_bytes=8), text)
    with pytest.raises(SanityError) as info:
        sn.evaluate(c.validate())

    assert str(info.value).strip()
    with pytest.raises(SanityError, match='no t_us value'):
        sn.evaluate(c.latency_of())


def test_corrupted_payload_fails_naming_the_error(checks):
    c = fed(pick(checks, 'PingPongDistance', msg_bytes=8), CORRUPT, 2)
    with pytest.raises(SanityError, match='kind=payload pattern=pingpong'):
        sn.evaluate(c.validate())


def test_wrong_rank_count_is_caught(checks):
    c = fed(pick(checks, 'RightShift', msg_bytes=8), GOOD, num_tasks=8)
    with pytest.raises(SanityError, match='ran with 4 ranks, expected 8'):
        sn.evaluate(c.validate())


# Real outputs of the emulated 4-node cluster (tests/fixtures/cg-outputs/
# README.md): n4's fab0 link throttled to 250 Mbit/s, healthy, and 8 B.
DEGRADED = fixture_text('cg-outputs', 'emu-pingpong-1MB-n4-fab0-250mbit.out')
HEALTHY = fixture_text('cg-outputs', 'emu-pingpong-1MB-fab0-healthy.out')
SMALL = fixture_text('cg-outputs', 'emu-pingpong-8B-fab0-healthy.out')


def test_slow_peer_node_is_a_performance_verdict_that_names_it(checks):
    # sanity judges the program (it ran and measured); the slow peer is a
    # number below its bound, and the log names it
    c = fed(pick(checks, 'PingPongDistance', msg_bytes=1000000), DEGRADED)
    assert sn.evaluate(c.validate()) is True
    assert perf_values(c)['peer_bandwidth_ratio'] == pytest.approx(29.09 / 81.77,
                                                            abs=0.005)
    assert c.reference['*:peer_bandwidth_ratio'] == (0.7, 0, None, 'x')
    worst, suspects = c.peer_verdict(c.measured_lines(c._run()))
    assert len(suspects) == 1
    msg = suspects[0]
    assert 'n1->n4' in msg and 'n1->n2' not in msg and 'n1->n3' not in msg
    assert '29.09 MB/s' in msg and '0.36x' in msg


def test_healthy_peers_pass(checks):
    c = fed(pick(checks, 'PingPongDistance', msg_bytes=1000000), HEALTHY)
    assert sn.evaluate(c.validate()) is True
    assert perf_values(c)['peer_bandwidth_ratio'] > 0.7
    assert c.peer_verdict(c.measured_lines(c._run()))[1] == []


def test_small_messages_are_not_judged_by_peer_bandwidth(checks):
    # 8 B is latency and jitter: n4 at 0.36x is noise, not a slow link
    c = fed(pick(checks, 'PingPongDistance', msg_bytes=8), SMALL)
    assert sn.evaluate(c.validate()) is True
    assert 'peer_bandwidth_ratio' not in perf_values(c)


def test_outlier_verdict_can_be_disabled(checks):
    c = fed(pick(checks, 'PingPongDistance', msg_bytes=1000000), DEGRADED)
    c.peer_outlier_fraction = 0.0
    try:
        assert sn.evaluate(c.validate()) is True
        assert 'peer_bandwidth_ratio' not in perf_values(c)
    finally:
        c.peer_outlier_fraction = 0.7
