"""Can our contention numbers be trusted? Our ping-pong against IMB
PingPong, built against and run with the same Intel MPI (impi-rt/
impi-devel), same transport and placement; fails beyond 15%."""

import reframe as rfm

from clustergate.rfm.families.fidelity import PingPongFidelity


@rfm.simple_test
class PingPongVsImb(PingPongFidelity):
    """8 B latency and 1 MB bandwidth, ours vs IMB."""
