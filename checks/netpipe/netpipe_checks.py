"""Shared-interface study with NetPIPE (NPtcp) and iperf3: two streams
from one node over one interface or two, the per-stream ratio together /
alone. See docs/guide/benchmarks.md."""

import reframe as rfm

from clustergate.rfm.families.netpipe import NetpipeStudyTest


@rfm.simple_test
class NetpipeSharedInterface(NetpipeStudyTest):
    """NPtcp or iperf3 from one node to two: each stream alone, then both
    at once; ratio about 0.5 on one rate-limited interface, about 1.0 on
    two."""
