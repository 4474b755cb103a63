"""NAS Parallel Benchmarks (MPI): one small test per kernel; classes A/B/C
and the sweep (nodes x ppn x interconnect) come from the base class and the
partition's configuration, the binaries from the partition's ``benchmarks``
source (see docs/guide/benchmarks.md)."""

import reframe as rfm

from clustergate.rfm.families.npb import NpbTest


@rfm.simple_test
class NpbCG(NpbTest):
    """Conjugate gradient: irregular memory access and communication."""

    kernel = 'cg'


@rfm.simple_test
class NpbEP(NpbTest):
    """Embarrassingly parallel: compute only, the baseline of the others.
    Any process count (found in a trial run of NPB built by
    Spack: EP is not limited to powers of two)."""

    kernel = 'ep'


@rfm.simple_test
class NpbMG(NpbTest):
    """Multigrid: long- and short-distance communication, memory bound."""

    kernel = 'mg'


@rfm.simple_test
class NpbFT(NpbTest):
    """3-D FFT: all-to-all communication."""

    kernel = 'ft'


@rfm.simple_test
class NpbIS(NpbTest):
    """Integer sort: random memory access, all-to-all-v."""

    kernel = 'is'


@rfm.simple_test
class NpbLU(NpbTest):
    """Lower-upper Gauss-Seidel: many small messages (latency bound)."""

    kernel = 'lu'


@rfm.simple_test
class NpbBT(NpbTest):
    """Block tri-diagonal solver: square process counts only."""

    kernel = 'bt'


@rfm.simple_test
class NpbSP(NpbTest):
    """Scalar penta-diagonal solver: square process counts only."""

    kernel = 'sp'
