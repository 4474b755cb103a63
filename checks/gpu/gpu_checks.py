"""GPU nodes: memory bandwidth of each GPU (BabelStream), host-device
bandwidth (nvbandwidth; also bound to the GPU's own NUMA node and to a
far one), a short stress (gpu-burn), NCCL bus bandwidth
within a node and across nodes (nccl-tests) and GPU-aware MPI between
nodes (OSU with device buffers). Swept over the GPUs per node of the
partitions that declare GPUs (``devices``); no test case elsewhere."""

import reframe as rfm

from clustergate.rfm.families.gpunode import (BabelStreamTest, GpuBurnTest,
                                              NvbandwidthNumaTest, NvbandwidthTest)
from clustergate.rfm.families.nccl import NcclTest, OsuGpuTest


@rfm.simple_test
class GpuStream(BabelStreamTest):
    """Memory bandwidth of each GPU, all GPUs of the node at once."""


@rfm.simple_test
class GpuHostLink(NvbandwidthTest):
    """Host-device copy bandwidth of each GPU alone and all at once."""


@rfm.simple_test
class GpuHostLinkNuma(NvbandwidthNumaTest):
    """Host-device copy bandwidth of each GPU alone from its own NUMA
    node and from a far one."""


@rfm.simple_test
class GpuBurn(GpuBurnTest):
    """A short stress of every GPU: throughput, errors, temperature."""


@rfm.simple_test
class NcclAllReduce(NcclTest):
    """NCCL all-reduce bus bandwidth."""

    program = 'all_reduce_perf'


@rfm.simple_test
class NcclSendRecv(NcclTest):
    """NCCL send/receive bus bandwidth."""

    program = 'sendrecv_perf'


@rfm.simple_test
class NcclAllGather(NcclTest):
    """NCCL all-gather bus bandwidth."""

    program = 'all_gather_perf'


@rfm.simple_test
class OsuGpuBandwidth(OsuGpuTest):
    """GPU-to-GPU MPI bandwidth between two nodes."""

    program = 'osu_bw'
    kind = 'bandwidth'


@rfm.simple_test
class OsuGpuLatency(OsuGpuTest):
    """GPU-to-GPU MPI latency between two nodes."""

    program = 'osu_latency'
    kind = 'latency'
