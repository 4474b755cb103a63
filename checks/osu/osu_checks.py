"""OSU Micro-Benchmarks (OMB 7.x): point-to-point (latency, bandwidth,
bidirectional bandwidth, multi-pair bandwidth/message rate) and collectives
(barrier, bcast, allreduce, alltoall), one small test per program over the
sweep. osu_latency, osu_bw and osu_bibw need exactly 2 ranks: other points
are skipped with that reason."""

import reframe as rfm

from clustergate.rfm.families.osu import OsuTest


@rfm.simple_test
class OsuLatency(OsuTest):
    """One-way latency of a ping-pong between 2 ranks."""

    program = 'osu_latency'
    kind = 'latency'


@rfm.simple_test
class OsuBw(OsuTest):
    """Unidirectional bandwidth, a window of messages in flight."""

    program = 'osu_bw'
    kind = 'bandwidth'


@rfm.simple_test
class OsuBibw(OsuTest):
    """Bidirectional bandwidth between 2 ranks."""

    program = 'osu_bibw'
    kind = 'bandwidth'


@rfm.simple_test
class OsuMbwMr(OsuTest):
    """Aggregate bandwidth and message rate of N/2 pairs at once."""

    program = 'osu_mbw_mr'
    kind = 'mbw_mr'


@rfm.simple_test
class OsuBarrier(OsuTest):
    """MPI_Barrier latency over all ranks."""

    program = 'osu_barrier'
    kind = 'barrier'


@rfm.simple_test
class OsuBcast(OsuTest):
    """MPI_Bcast latency over all ranks."""

    program = 'osu_bcast'
    kind = 'collective'


@rfm.simple_test
class OsuAllreduce(OsuTest):
    """MPI_Allreduce latency over all ranks."""

    program = 'osu_allreduce'
    kind = 'collective'


@rfm.simple_test
class OsuAlltoall(OsuTest):
    """MPI_Alltoall latency over all ranks."""

    program = 'osu_alltoall'
    kind = 'collective'
