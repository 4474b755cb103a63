"""Intel MPI Benchmarks (IMB-MPI1): PingPong first, then PingPing,
Sendrecv, Exchange, Barrier, Allreduce and Alltoall; one small test per
benchmark over the sweep. The binary comes from the partition's ``imb``
source (on localhost: IMB from PyPI's impi-rt in the intelmpi environment,
so PingPong runs for real in ci mode)."""

import reframe as rfm

from clustergate.rfm.point import modes
from clustergate.rfm.families.imb import ImbTest


@rfm.simple_test
class ImbPingPong(ImbTest):
    """Ranks 0 and 1 bounce one message: latency and bandwidth."""

    benchmark = 'PingPong'
    kind = 'pt2pt'
    mode_selection = modes.EVERY_MODE


@rfm.simple_test
class ImbPingPing(ImbTest):
    """Ranks 0 and 1 send to each other at the same time."""

    benchmark = 'PingPing'
    kind = 'pt2pt'


@rfm.simple_test
class ImbSendrecv(ImbTest):
    """Periodic chain: every rank sends right and receives from the left."""

    benchmark = 'Sendrecv'
    kind = 'exchange'


@rfm.simple_test
class ImbExchange(ImbTest):
    """Every rank exchanges with both neighbours of the chain."""

    benchmark = 'Exchange'
    kind = 'exchange'


@rfm.simple_test
class ImbBarrier(ImbTest):
    """MPI_Barrier over all ranks."""

    benchmark = 'Barrier'
    kind = 'barrier'


@rfm.simple_test
class ImbAllreduce(ImbTest):
    """MPI_Allreduce (float sum) over all ranks."""

    benchmark = 'Allreduce'
    kind = 'collective'


@rfm.simple_test
class ImbAlltoall(ImbTest):
    """MPI_Alltoall over all ranks."""

    benchmark = 'Alltoall'
    kind = 'collective'
