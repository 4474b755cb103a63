"""HPC Challenge (Debian's hpcc 1.5.0): one hpcc run per sweep point
(the HpccRun fixture), read by one check per kernel. See docs/guide/benchmarks.md.

HPL and b_eff are in the ci subset: they run for real on localhost and on
the emulated cluster (at a small N, capped by the ci mode)."""

import reframe as rfm

from clustergate.rfm.families.hpcc import (CI_AND_NIGHTLY, HpccKernelTest,
                                           mpi_star_single)
from reframe.core.exceptions import SanityError

#: RandomAccess results are valid when at most 1% of the table is wrong
#: (HPCC's own rule: the benchmark allows races between updates)
MAX_GUPS_ERRORS = 0.01
#: FFT's forward+inverse error, relative; HPCC's FFTs are ~1e-15
MAX_FFT_ERROR = 1e-10


@rfm.simple_test
class HpccHpl(HpccKernelTest):
    """HPL: dense LU solve of the N x N system, Gflop/s; valid only if its
    scaled residual passes HPL's own check."""

    kernel = 'HPL'
    mode_selection = CI_AND_NIGHTLY
    metrics = {'gflops': ('HPL_Tflops', 'Gflop/s', 1000.0),
               'time': ('HPL_time', 's', 1.0)}

    def check_kernel(self, result):
        why = result.hpl_verdict()
        if why:
            raise SanityError(why)


@rfm.simple_test
class HpccStream(HpccKernelTest):
    """STREAM triad: one process alone (single) and every process at once
    (star, per process), GB/s."""

    kernel = 'STREAM'
    metrics = {'single_triad': ('SingleSTREAM_Triad', 'GB/s', 1.0),
               'star_triad': ('StarSTREAM_Triad', 'GB/s', 1.0)}


@rfm.simple_test
class HpccRandomAccess(HpccKernelTest):
    """RandomAccess: random read-modify-write updates of a distributed
    table (MPI), per process (star) and alone (single), GUP/s."""

    kernel = 'RandomAccess'
    metrics = mpi_star_single('gups', 'RandomAccess_GUPs', 'GUP/s')

    def check_kernel(self, result):
        frac = result.value('MPIRandomAccess_ErrorsFraction')
        if frac > MAX_GUPS_ERRORS:
            raise SanityError(f'MPIRandomAccess: {frac:.2%} of the table '
                              f'is wrong (HPCC allows '
                              f'{MAX_GUPS_ERRORS:.0%})')


@rfm.simple_test
class HpccPtrans(HpccKernelTest):
    """PTRANS: parallel matrix transpose A = A^T + B, GB/s (the network's
    bisection under all-pairs traffic)."""

    kernel = 'PTRANS'
    metrics = {'bandwidth': ('PTRANS_GBs', 'GB/s', 1.0)}

    def check_kernel(self, result):
        if result.value('PTRANS_residual') != 0:
            raise SanityError(f'PTRANS residual is '
                              f'{result.value("PTRANS_residual")}, not 0')


@rfm.simple_test
class HpccFft(HpccKernelTest):
    """FFT: 1-D complex FFT, distributed (MPI), per process (star) and
    alone (single), Gflop/s."""

    kernel = 'FFT'
    metrics = mpi_star_single('gflops', 'FFT_Gflops', 'Gflop/s')

    def check_kernel(self, result):
        err = result.value('MPIFFT_maxErr')
        if not 0 <= err <= MAX_FFT_ERROR:
            raise SanityError(f'MPIFFT error {err:g} exceeds '
                              f'{MAX_FFT_ERROR:g}')


@rfm.simple_test
class HpccBeff(HpccKernelTest):
    """b_eff: ping-pong latency (worst pair) and bandwidth (worst pair),
    natural and random ring latency and bandwidth (per process)."""

    kernel = 'b_eff'
    mode_selection = CI_AND_NIGHTLY
    min_ranks = 2
    metrics = {
        'pingpong_latency': ('MaxPingPongLatency_usec', 'us', 1.0),
        'pingpong_bandwidth': ('MinPingPongBandwidth_GBytes', 'GB/s', 1.0),
        'natural_ring_latency': ('NaturallyOrderedRingLatency_usec', 'us',
                                 1.0),
        'natural_ring_bandwidth': ('NaturallyOrderedRingBandwidth_GBytes',
                                   'GB/s', 1.0),
        'random_ring_latency': ('RandomlyOrderedRingLatency_usec', 'us',
                                1.0),
        'random_ring_bandwidth': ('RandomlyOrderedRingBandwidth_GBytes',
                                  'GB/s', 1.0),
    }

    def check_kernel(self, result):
        # with one process b_eff has no pair and writes -1 everywhere
        bad = [k for k, (key, *_) in self.metrics.items()
               if result.value(key) <= 0]
        if bad:
            raise SanityError(f'b_eff measured nothing for {", ".join(bad)} '
                              f'({result.processes} process(es))')
