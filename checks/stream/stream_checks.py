"""STREAM (C, OpenMP): best Copy/Scale/Add/Triad rates of one node, with
the partition's cores as threads; one run per NUMA domain count the
partition asks for (extras ``stream_numa_counts``)."""

import reframe as rfm

from clustergate.rfm.families.stream import StreamTest


@rfm.simple_test
class Stream(StreamTest):
    """Memory bandwidth of one node."""
