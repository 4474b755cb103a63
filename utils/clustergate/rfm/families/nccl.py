"""Generic bases of the GPU checks across GPUs and nodes: NCCL bus
bandwidth (nccl-tests) and GPU-aware MPI point-to-point (OSU with device
buffers).

nccl-tests within one node: one process drives the node's
``gpus_per_node`` GPUs (``-g G``; nccl-tests built with or without MPI);
across nodes: one MPI rank per GPU (``-g 1``, nccl-tests built with
``MPI=1``), ``ppn`` = ``gpus_per_node``. Every other combination of the
axes is not a test case. A collective over one GPU in all measures no bus
bandwidth (0 by definition): not a test case either.
"""

import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, performance_function, run_after,
                                   run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.parsers import parse_nccl_tests
from clustergate import adapter
from clustergate.rfm.families.gpu import (GpuJob, NcclTestsBinaries, OsuGpuBinaries,
                                          gpu_counts, gpu_point_reason)
from clustergate.rfm.families.osu import OsuTest
from clustergate.rfm.families.thirdparty import ThirdPartyTest

#: collectives whose bus bandwidth needs at least two GPUs
_NEEDS_PEERS = ('all_reduce_perf', 'all_gather_perf', 'reduce_scatter_perf',
                'alltoall_perf', 'broadcast_perf', 'reduce_perf')


class NcclTest(GpuJob, ThirdPartyTest):
    """One nccl-tests program over ``num_nodes`` x ``gpus_per_node`` GPUs.
    Performance variables (GB/s, 10^9 B/s): ``busbw`` (out-of-place bus
    bandwidth at the largest size) and ``algbw``. nccl-tests' average over
    the sizes (``avg_busbw``) is logged, not judged: it mixes latency-bound
    small sizes with in-place shortcuts (73 TB/s "bus bandwidth" for a
    one-GPU sendrecv on an H200, 4 % apart between two runs)."""

    family = 'nccl'
    binaries = fixture(NcclTestsBinaries, scope='environment')
    tag_attribute = 'program'
    # NCCL's traffic is not MPI's: MPI only starts the ranks
    mpi_transport = False

    #: all_reduce_perf, sendrecv_perf, all_gather_perf...: subclasses
    program = variable(str, loggable=True)
    #: the size range (-b, -e) and step factor (-f)
    min_bytes = variable(str, value='1M')
    max_bytes = variable(str, value='1G')
    factor = variable(int, value=4)
    #: the nodes whose GPUs took part, as nccl-tests lists them: logged,
    #: so that a bus bandwidth below its reference names its nodes
    gpu_hosts = variable(str, value='', loggable=True)
    #: nccl-tests' '# Avg bus bandwidth' (GB/s): logged only
    avg_busbw = variable(float, value=0.0, loggable=True)

    @classmethod
    def system_parameters(cls, partitions):
        return {**super().system_parameters(partitions),
                'gpus_per_node': gpu_counts()}

    def tag_names(self):
        return super().tag_names() | {'gpu'}

    def point_reason(self, partition, mpi_family):
        reason = super().point_reason(partition, mpi_family) or \
            gpu_point_reason(self, partition)
        if reason:
            return reason
        if self.num_nodes == 1 and self.ppn != 1:
            return ('within a node one process drives every GPU (-g): '
                    f'ppn {self.ppn} is not 1')
        if self.num_nodes > 1 and self.ppn != self.gpus_per_node:
            return (f'across nodes one rank per GPU: ppn {self.ppn} is not '
                    f'{self.gpus_per_node} GPUs per node')
        if self.program in _NEEDS_PEERS and \
                self.num_nodes * self.gpus_per_node < 2:
            return (f'{self.program} over 1 GPU measures no bus bandwidth '
                    f'(0 by definition)')
        return None

    @run_after('init')
    def set_descr(self):
        self.descr = (f'nccl-tests {self.program} on {self.num_nodes} '
                      f'node(s) x {self.gpus_per_node} GPU(s)')

    def binary_name(self):
        return self.program

    @run_after('setup')
    def one_process_per_node(self):
        if self.num_nodes == 1:
            # one process, every GPU of the node: no MPI launcher
            self.job.launcher = adapter.launcher('local')

    @run_before('run')
    def set_options(self):
        per_rank = self.gpus_per_node if self.num_nodes == 1 else 1
        self.executable_opts = ['-b', self.min_bytes, '-e', self.max_bytes,
                                '-f', str(self.factor), '-g', str(per_rank)]

    def parse(self, text):
        return parse_nccl_tests(f'{text}\n{self.stderr_text()}')

    def check(self, result):
        self.gpu_hosts = ','.join(sorted({d.host for d in result.devices}))
        self.avg_busbw = result.avg_busbw
        gpus_seen = len(result.devices)
        want = self.num_nodes * self.gpus_per_node
        if gpus_seen and gpus_seen != want:
            raise SanityError(f'{self.program} used {gpus_seen} GPU(s), the '
                              f'job has {want}')
        if result.wrong_rows:
            sizes = ', '.join(str(r.size) for r in result.wrong_rows)
            raise SanityError(f'{self.program}: wrong results at {sizes} B')
        if result.out_of_bounds:
            raise SanityError(f'{self.program}: {result.out_of_bounds} '
                              f'out-of-bounds values')

    @performance_function('GB/s')
    def busbw(self):
        return sn.defer(self.parsed().largest.oop_busbw)

    @performance_function('GB/s')
    def algbw(self):
        return sn.defer(self.parsed().largest.oop_algbw)

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {'busbw': self.busbw(), 'algbw': self.algbw()}


class OsuGpuTest(GpuJob, OsuTest):
    """An OSU point-to-point program with both buffers on the GPUs
    (``-d cuda D D``), one rank and one GPU on each of two nodes."""

    family = 'osu_gpu'
    binaries = fixture(OsuGpuBinaries, scope='environment')
    #: the device kind OSU was built for: cuda (+cuda) or rocm (+rocm)
    device = variable(str, value='cuda', loggable=True)
    gpus_per_node = 1

    def tag_names(self):
        return super().tag_names() | {'gpu'}

    def point_reason(self, partition, mpi_family):
        reason = super().point_reason(partition, mpi_family) or \
            gpu_point_reason(self, partition)
        if reason is None and self.num_nodes < 2:
            reason = 'GPU-aware MPI is measured across nodes'
        return reason

    @run_before('run')
    def device_buffers(self):
        self.executable_opts = list(self.executable_opts) + [
            '-d', self.device, 'D', 'D']
