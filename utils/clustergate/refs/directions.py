"""Which way is better, declared for every metric of every check.

A metric's direction decides what a deviation from its reference means:
``lower`` (times, latencies, slowdowns, fault counts: a smaller value is
better), ``higher`` (bandwidths, rates, throughput: a larger value is
better) or ``both`` (a ratio that should stay where it is, such as our
ping-pong against IMB's: either way is a fault). It is declared here, per
check (class name) and metric name, and never guessed from a name or a
unit: ``OsNoise``'s ``slowdown_k`` is a slowdown, lower is better, and a
quieter machine is an improvement, not a regression.

Metric names are ``fnmatch`` patterns where a check makes them from what
it measured (``bw_s<stride>``, ``peer_<node>_sent``, ...). This module
imports nothing from ReFrame or ``checks/``: the configuration loads it
to refuse a reference to a metric a check does not report
(:mod:`clustergate.refs.refcheck`), and ``baseline``, ``history``, ``report``
and ``score`` read the directions from it. ``tests/test_directions.py``
asserts that every performance variable of every check is declared.
"""

import fnmatch
from typing import Dict, Optional, Sequence, Tuple

HIGHER, LOWER, BOTH = 'higher', 'lower', 'both'

Table = Tuple[Tuple[str, str], ...]

# -- the tables of the families ----------------------------------------------

#: OSU and IMB: latency at a size or the largest, bandwidth, message rate
_MPI_BENCH: Table = (('latency', LOWER), ('latency_*B', LOWER),
                     ('latency_max', LOWER), ('bandwidth', HIGHER),
                     ('message_rate', HIGHER))

#: our contention programs, one pattern per check (rfm/families/contention.py)
_CONTENTION: Table = (('latency', LOWER), ('latency_r*', LOWER),
                      ('bandwidth', HIGHER), ('bandwidth_r*', HIGHER),
                      # the slowest peer over the median peer
                      ('peer_bandwidth_ratio', HIGHER),
                      # time of the concurrent pairs over one pair alone
                      ('concurrent_ratio', LOWER), ('ratio', LOWER))

#: every pattern in one job: <pattern>_<size>_<metric> (contention_suite.py)
_SUITE: Table = (('*_latency', LOWER), ('*_latency_r*', LOWER),
                 ('*_bandwidth', HIGHER), ('*_bandwidth_r*', HIGHER),
                 ('*_peer_bandwidth_ratio', HIGHER),
                 ('concurrent_*_ratio', LOWER))

_NPB: Table = (('mops_total', HIGHER), ('mops_per_process', HIGHER),
               ('time', LOWER))

#: memory access: ratio = time with all ranks / time with one
_MEMORY: Table = (('ratio', LOWER), ('ratio_s*', LOWER),
                  ('ratio_max', LOWER), ('bw', HIGHER), ('bw1', HIGHER),
                  ('bw_s*', HIGHER), ('bw1_s*', HIGHER))

#: ns per access; ratio = all ranks / one; step = this level over the one
#: below it (distinct levels: well above 1)
_MEMLAT: Table = (('lat_*', LOWER), ('ratio_*', LOWER), ('step_*', HIGHER))

#: slowdowns, quantum times and the ratio of mean quanta: all times
_NOISE: Table = (('slowdown_1', LOWER), ('slowdown_k', LOWER),
                 ('bsp_slowdown', LOWER), ('ratio', LOWER),
                 ('p99_us', LOWER), ('p99_9_us', LOWER),
                 ('worst_us', LOWER), ('quantum_min_us', LOWER))

#: ratios: bandwidth (or time alone over time) in the pair over alone
_NIC: Table = (('pair_ratio', HIGHER), ('ratio_s*', HIGHER),
               ('bw_single_s*', HIGHER), ('bw_pair_s*', HIGHER))

#: the same study with NetPIPE and iperf3 (per-stream rate together /
#: alone; MB/s of each stream alone and together)
_NETPIPE: Table = (('ratio', HIGHER), ('ratio_s*', HIGHER),
                   ('alone_s*', HIGHER), ('together_s*', HIGHER))

#: per node link (bw_<node>_<dir>, peer_<node>_<dir>: against its peers),
#: the worst of them, how far below its baseline (MADs), verdicts
_LINKMATRIX: Table = (('bw_median', HIGHER), ('bw_min', HIGHER),
                      ('bw_*_sent', HIGHER), ('bw_*_recv', HIGHER),
                      ('peer_*_sent', HIGHER), ('peer_*_recv', HIGHER),
                      ('peer_*_both', HIGHER), ('peer_min', HIGHER),
                      ('link_mads', LOWER), ('faults', LOWER))

#: ours against IMB: each figure its way, their ratio should stay at 1
_FIDELITY: Table = (('ours_latency_8B', LOWER), ('imb_latency_8B', LOWER),
                    ('ours_bandwidth_1MB', HIGHER),
                    ('imb_bandwidth_1MB', HIGHER),
                    ('latency_ratio', BOTH), ('bandwidth_ratio', BOTH))

_STREAM: Table = (('copy', HIGHER), ('scale', HIGHER), ('add', HIGHER),
                  ('triad', HIGHER))

#: GPU memory bandwidth of each GPU (gpu<i>) and of the slowest
_GPU_STREAM: Table = (('triad_gpu*', HIGHER), ('copy_gpu*', HIGHER),
                      ('triad_min', HIGHER))

#: host-device copies of each GPU alone and with every GPU copying
_GPU_LINK: Table = (('h2d_gpu*', HIGHER), ('d2h_gpu*', HIGHER),
                    ('h2d_all_gpu*', HIGHER), ('d2h_all_gpu*', HIGHER))

#: host-device copies of each GPU alone, the host bound to the GPU's own
#: NUMA node (near) or to another (far)
_GPU_LINK_NUMA: Table = (('h2d_near_gpu*', HIGHER), ('d2h_near_gpu*', HIGHER),
                         ('h2d_far_gpu*', HIGHER), ('d2h_far_gpu*', HIGHER))

#: gpu-burn: throughput of each GPU
_GPU_BURN: Table = (('gflops_gpu*', HIGHER),)

#: nccl-tests: bus and algorithm bandwidth
_NCCL: Table = (('busbw', HIGHER), ('algbw', HIGHER))


def _each(names: Sequence[str], table: Table) -> Dict[str, Table]:
    return {name: table for name in names}


#: check (class name) -> ((metric pattern, direction), ...)
DECLARED: Dict[str, Table] = {
    **_each(('OsuLatency', 'OsuBw', 'OsuBibw', 'OsuMbwMr', 'OsuBarrier',
             'OsuBcast', 'OsuAllreduce', 'OsuAlltoall', 'ImbPingPong',
             'ImbPingPing', 'ImbSendrecv', 'ImbExchange', 'ImbBarrier',
             'ImbAllreduce', 'ImbAlltoall'), _MPI_BENCH),
    **_each(('Barrier', 'PingPongDistance', 'BiPingPong', 'RightShift',
             'NaiveBroadcast', 'TreeBroadcast', 'AllToAll', 'Hotspot',
             'Complement', 'ConcurrentSends', 'Allreduce'), _CONTENTION),
    'ContentionSuite': _SUITE,
    **_each(('NpbCG', 'NpbEP', 'NpbMG', 'NpbFT', 'NpbIS', 'NpbLU', 'NpbBT',
             'NpbSP'), _NPB),
    **_each(('MemoryStrided', 'MemoryRandom'), _MEMORY),
    'MemoryLatency': _MEMLAT,
    'OsNoise': _NOISE,
    'NicSharedInterface': _NIC,
    'NetpipeSharedInterface': _NETPIPE,
    **_each(('LinkMatrix', 'LeafSpanLinkMatrix'), _LINKMATRIX),
    'PingPongVsImb': _FIDELITY,
    'Stream': _STREAM,
    'GpuStream': _GPU_STREAM,
    'GpuHostLink': _GPU_LINK,
    'GpuHostLinkNuma': _GPU_LINK_NUMA,
    'GpuBurn': _GPU_BURN,
    **_each(('NcclAllReduce', 'NcclSendRecv', 'NcclAllGather'), _NCCL),
    **_each(('OsuGpuBandwidth', 'OsuGpuLatency'), _MPI_BENCH),
    'HpccHpl': (('gflops', HIGHER), ('time', LOWER)),
    'HpccStream': (('single_triad', HIGHER), ('star_triad', HIGHER)),
    'HpccRandomAccess': (('single_gups', HIGHER), ('star_gups', HIGHER),
                         ('mpi_gups', HIGHER)),
    'HpccPtrans': (('bandwidth', HIGHER),),
    'HpccFft': (('single_gflops', HIGHER), ('star_gflops', HIGHER),
                ('mpi_gflops', HIGHER)),
    'HpccBeff': (('pingpong_latency', LOWER), ('pingpong_bandwidth', HIGHER),
                 ('natural_ring_latency', LOWER),
                 ('natural_ring_bandwidth', HIGHER),
                 ('random_ring_latency', LOWER),
                 ('random_ring_bandwidth', HIGHER)),
}


def declared(check: str, metric: str) -> Optional[str]:
    """The declared direction of ``metric`` of ``check``, or ``None`` if
    the check does not declare it (or is not a check of ours)."""
    for pattern, direction in DECLARED.get(check, ()):
        if fnmatch.fnmatchcase(metric, pattern):
            return direction

    return None


def of(check: str, metric: str) -> str:
    """The direction of a metric; ``both`` (a deviation either way counts)
    for one nobody declared: it is never guessed from the name."""
    return declared(check, metric) or BOTH


def names(check: str) -> str:
    """The declared metric names of ``check``, for a message."""
    return ', '.join(p for p, _ in DECLARED.get(check, ()))


def better_side(direction: str) -> Optional[str]:
    """Which threshold of a reference (``lower`` or ``upper``) bounds the
    better side of a metric of ``direction``; ``None`` for ``both``."""
    return {HIGHER: 'upper', LOWER: 'lower'}.get(direction)
