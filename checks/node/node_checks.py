"""Node-level contention checks: memory access (strided, random, STREAM
operations), memory latency per cache level, OS noise. Each measures with
1 rank per node and with all ppn ranks at once in the same job and reports
the ratio (k ppn / 1 ppn) plus absolute values (docs/reports/node-tests.md)."""

import reframe as rfm
from reframe.core.builtins import parameter

from clustergate.rfm.families.node import MemoryLatencyTest, MemoryTest, NoiseTest


@rfm.simple_test
class MemoryStrided(MemoryTest):
    """Read ``s += a[j]`` / write ``a[j] = v`` and the STREAM operations,
    stride 1..17, the same n elements at every stride."""

    kernel = parameter(['read', 'write', 'copy', 'scale', 'add', 'triad'],
                       loggable=True)

    # ci: read, write and triad only. Nightly: and copy; scale moves what
    # copy moves (1 read + 1 write stream), add what triad moves (2 + 1):
    # on real nodes STREAM's pairs differ by a few %; here copy/scale and
    # triad/add of one run were 0.4-5x apart, the machine's noise, not
    # the kernels' (docs/reports/nightly-budget.md). Acceptance: all six.
    mode_selection = {**MemoryTest.mode_selection,
                      'ci': {'scale': {'small'},
                             'kernel': {'read', 'write', 'triad'}},
                      'nightly': {'scale': {'nightly'},
                                  'kernel': {'read', 'write', 'copy',
                                             'triad'}}}


@rfm.simple_test
class MemoryRandom(MemoryTest):
    """Read and write through a random permutation of the indices."""

    kernel = parameter(['rand_read', 'rand_write'], loggable=True)
    random_order = True


@rfm.simple_test
class MemoryLatency(MemoryLatencyTest):
    """Pointer chase over a random single-cycle permutation, 4 KiB up to
    max_bytes; ns per access per level."""


@rfm.simple_test
class OsNoise(NoiseTest):
    """Fixed work quantum on every core; slowdown, percentiles, worst
    quantum, bulk-synchronous slowdown."""
