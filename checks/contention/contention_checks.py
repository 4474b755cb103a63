"""The MPI contention patterns of the classic cluster studies: one small
test per pattern (the sweep: message size x nodes x ppn x interconnect;
acceptance mode and runs by name), and ContentionSuite, all patterns and
sizes of a point in one job (ci and nightly). The axes come from the base
classes and the partition's configuration."""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, performance_function, run_before

from clustergate.site import sweep
from clustergate.rfm.families.contention import ContentionTest
from clustergate.rfm.families.contention_suite import ContentionSuiteTest


@rfm.simple_test
class Barrier(ContentionTest):
    """MPI_Barrier over all ranks (no payload; size-independent)."""

    pattern = 'barrier'
    msg_bytes = parameter([0], loggable=True)
    has_bandwidth = False


@rfm.simple_test
class PingPongDistance(ContentionTest):
    """Ping-pong from rank 0 to every rank j in turn ("distance"); one-way
    time and bandwidth per peer, and the worst peer."""

    pattern = 'pingpong'
    per_peer = True


@rfm.simple_test
class BiPingPong(ContentionTest):
    """Rank 0 and rank j send to each other at the same time, per j."""

    pattern = 'bipingpong'
    per_peer = True


@rfm.simple_test
class RightShift(ContentionTest):
    """Every rank sends to its right neighbour and receives from its left
    (MPI_Sendrecv), all at once."""

    pattern = 'shift'


@rfm.simple_test
class NaiveBroadcast(ContentionTest):
    """Rank 0 sends the message to every other rank in turn."""

    pattern = 'naive_bcast'


@rfm.simple_test
class TreeBroadcast(ContentionTest):
    """Binary-tree broadcast written with point-to-point sends."""

    pattern = 'tree_bcast'


@rfm.simple_test
class AllToAll(ContentionTest):
    """Every rank sends a message to every other rank, point-to-point."""

    pattern = 'alltoall'


@rfm.simple_test
class Hotspot(ContentionTest):
    """All ranks send to rank 0 at once (many to one)."""

    pattern = 'hotspot'


@rfm.simple_test
class Complement(ContentionTest):
    """Rank i exchanges with rank N-1-i, all pairs at once."""

    pattern = 'complement'


@rfm.simple_test
class ConcurrentSends(ContentionTest):
    """Two ranks of one node send to ranks on two other nodes at once,
    versus one send alone; ``ratio`` = time(two at once)/time(one)."""

    pattern = 'concurrent'
    sweep_requirements = sweep.Requirements(min_ranks=4, min_ppn=2)

    def reported_pattern(self):
        return 'concurrent_pair'

    @performance_function('x')
    def ratio(self):
        return sn.defer(self._value('ratio', None))

    @run_before('performance')
    def add_ratio(self):
        self.perf_variables['concurrent_ratio'] = self.ratio()


@rfm.simple_test
class Allreduce(ContentionTest):
    """MPI_Allreduce (sum of doubles), result verified on every rank."""

    pattern = 'allreduce'


@rfm.simple_test
class ContentionSuite(ContentionSuiteTest):
    """Every pattern above at every message size in one job per sweep
    point (what ci and nightly run; the one-pattern checks above are the
    acceptance mode's detail)."""
