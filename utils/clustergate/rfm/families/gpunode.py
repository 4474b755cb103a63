"""Generic bases of the GPU checks of one node: GPU memory bandwidth
(BabelStream), host-device bandwidth (nvbandwidth; also from the GPU's
own NUMA node and from a far one) and a short stress (gpu-burn), each on
``gpus_per_node`` GPUs at once.

Every GPU of the job is named in the verdicts (index and UUID): busy with
another process, slow against its peers in the node, and through its own
per-GPU performance variables (``triad_gpu<i>``, ``h2d_gpu<i>``,
``gflops_gpu<i>``) against its own baseline.
"""

import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (fixture, parameter, performance_function,
                                   run_after, run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.parsers import (ParseError, parse_babelstream,
                                 parse_gpu_burn, parse_nvbandwidth)
from clustergate.rfm.families.gpu import (BabelStreamBinaries, GpuBurnBinaries,
                                          GpuNodeTest, NvbandwidthBinaries)
from clustergate.rfm.families.gpujudge import GpuId
from clustergate.site import gpunuma, gpus
from clustergate.site.partition import partition_model

BABEL_OUT = 'babelstream.out'


class BabelStreamTest(GpuNodeTest):
    """BabelStream on each GPU of the job, all at once (one process per
    GPU, each seeing its GPU only). Performance variables: ``triad_gpu<i>``
    and ``copy_gpu<i>`` (MB/s, 10^6 B/s, as BabelStream prints them) and
    ``triad_min`` (the slowest GPU)."""

    family = 'babelstream'
    binaries = fixture(BabelStreamBinaries, scope='environment')

    #: the program: ``cuda-stream`` (CUDA), ``hip-stream`` (HIP)...
    program = variable(str, value='cuda-stream', loggable=True)
    #: elements per array; 2^28 doubles: 3 x 2 GiB, far beyond any cache
    array_size = variable(int, value=1 << 28, loggable=True)

    def binary_name(self):
        return self.program

    @run_after('init')
    def set_descr(self):
        self.descr = (f'BabelStream ({self.program}) on '
                      f'{self.gpus_per_node} GPU(s) of a node at once')

    @run_before('run')
    def per_gpu(self):
        cmd = f'{self.executable} --arraysize {self.array_size}'
        self.prerun_cmds += gpus.per_gpu_command(cmd, self.gpus_per_node,
                                                 BABEL_OUT)
        # the job's stdout: every GPU's output, each under its file name
        self.executable = 'tail'
        self.executable_opts = ['-n', '+1'] + [
            f'{BABEL_OUT}.{i}' for i in range(self.gpus_per_node)]

    def parse(self, text):
        out = {}
        for i in range(self.gpus_per_node):
            got = self.job_text(f'{BABEL_OUT}.{i}')
            try:
                out[i] = parse_babelstream(got)
            except ParseError as err:
                gpu = self.job_gpus()[i]
                raise ParseError(f'{gpu.words()}: {err}') from None
        return out

    def check(self, result):
        self.check_peers({i: r.rate('Triad') for i, r in result.items()},
                         'BabelStream Triad', 'MB/s')

    @performance_function('MB/s')
    def rate(self, gpu=0, kernel='Triad'):
        return sn.defer(self.parsed()[gpu].rate(kernel))

    @performance_function('MB/s')
    def slowest(self, kernel='Triad'):
        return sn.defer(min(r.rate(kernel) for r in self.parsed().values()))

    @run_before('performance')
    def set_perf_variables(self):
        pv = {'triad_min': self.slowest('Triad')}
        for i in range(self.gpus_per_node):
            pv[f'triad_gpu{i}'] = self.rate(i, 'Triad')
            pv[f'copy_gpu{i}'] = self.rate(i, 'Copy')
        self.perf_variables = pv


#: nvbandwidth test cases: one GPU at a time, and every GPU at once
H2D, D2H = 'host_to_device_memcpy_ce', 'device_to_host_memcpy_ce'
H2D_ALL, D2H_ALL = 'host_to_all_memcpy_ce', 'all_to_host_memcpy_ce'


class NvbandwidthTest(GpuNodeTest):
    """nvbandwidth's copy-engine host-to-device and device-to-host copies
    of each GPU alone, and (2 GPUs or more) of every GPU at once: the
    shared host link. Performance variables (GB/s, 10^9 B/s):
    ``h2d_gpu<i>``, ``d2h_gpu<i>``, and ``h2d_all_gpu<i>``,
    ``d2h_all_gpu<i>`` with every GPU copying. A GPU at a fraction of its
    peers is named: a host link trained at a lower width or generation
    halves its bandwidth."""

    family = 'nvbandwidth'
    binaries = fixture(NvbandwidthBinaries, scope='environment')

    def binary_name(self):
        return 'nvbandwidth'

    def cases(self):
        both = [H2D, D2H]
        return both + ([H2D_ALL, D2H_ALL] if self.gpus_per_node > 1 else [])

    @run_after('init')
    def set_descr(self):
        self.descr = (f'nvbandwidth host<->device on {self.gpus_per_node} '
                      f'GPU(s) of a node, each alone and all at once')

    @run_before('run')
    def set_options(self):
        self.executable_opts = ['-j', '-t'] + self.cases()

    def parse(self, text):
        return parse_nvbandwidth(text)

    def per_gpu(self, result, case):
        try:
            return result.passed(case).per_gpu()
        except ParseError as err:
            raise SanityError(str(err)) from None

    def check(self, result):
        missing = [i for i in range(self.gpus_per_node)
                   if i not in self.per_gpu(result, H2D)]
        if missing:
            raise SanityError(f'nvbandwidth measured no host-to-device copy '
                              f'of GPU(s) {missing}: it saw '
                              f'{sorted(result.devices)}')
        for case, what in ((H2D, 'host-to-device'),
                           (D2H, 'device-to-host')):
            self.check_peers(self.per_gpu(result, case), what, 'GB/s',
                             'its host link is slow (a PCIe link trained '
                             'at a lower width or generation)')

    @performance_function('GB/s')
    def bandwidth(self, gpu=0, case=H2D):
        return sn.defer(self.per_gpu(self.parsed(), case)[gpu])

    @run_before('performance')
    def set_perf_variables(self):
        names = {H2D: 'h2d', D2H: 'd2h', H2D_ALL: 'h2d_all',
                 D2H_ALL: 'd2h_all'}
        self.perf_variables = {
            f'{names[c]}_gpu{i}': self.bandwidth(i, c)
            for c in self.cases() for i in range(self.gpus_per_node)}


def numa_domains(partition):
    """The partition's ``numa_domains_per_node``."""
    return partition_model(partition).numa_domains_per_node


#: the host side of the NUMA-bound copies (gpunuma.SIDES), a literal:
#: read by clustergate.refs.refcheck without importing this module
HOST_NUMA_SIDES = ('near', 'far')
NVB_OUT = 'nvbandwidth.out'


class NvbandwidthNumaTest(NvbandwidthTest):
    """nvbandwidth's host-to-device and device-to-host copies of each GPU
    alone, one GPU after the other, its host process and buffers bound
    with ``numactl --cpunodebind=N --membind=N`` to the GPU's own NUMA
    node (``host_numa=near``) or to another NUMA node of the node
    (``far``: the copies cross the link between the sockets). A point
    runs on every GPU of the node, where the partition declares each
    GPU's NUMA node (``extras.gpus.numa_nodes``) and the node has two NUMA
    nodes or more (:mod:`clustergate.site.gpunuma`). Performance
    variables (GB/s): ``h2d_<side>_gpu<i>``, ``d2h_<side>_gpu<i>``; a GPU
    at a fraction of its peers from the same side is named."""

    host_numa = parameter(HOST_NUMA_SIDES, loggable=True)
    #: the NUMA node each GPU's host process was bound to
    #: (``gpu0:1 gpu1:1 gpu2:0 gpu3:0``), logged
    numa_binding = variable(str, value='', loggable=True)

    def cases(self):
        return [H2D, D2H]

    def point_reason(self, partition, mpi_family):
        return super().point_reason(partition, mpi_family) or \
            gpunuma.side_reason(gpus.of_partition(partition),
                                self.host_numa, self.gpus_per_node,
                                partition.fullname,
                                numa_domains(partition))

    @run_after('init')
    def set_descr(self):
        self.descr = (f'nvbandwidth host<->device of each of the '
                      f'{self.gpus_per_node} GPU(s) of a node alone, the '
                      f'host bound to the {self.host_numa} NUMA node')

    def bound_nodes(self):
        """The NUMA node each GPU's host process is bound to."""
        spec = gpus.of_partition(self.current_partition)
        return gpunuma.bound_nodes(spec.numa_nodes, self.host_numa,
                                   numa_domains(self.current_partition))

    @run_before('run')
    def bind_each_gpu(self):
        nodes = self.bound_nodes()
        self.numa_binding = ' '.join(f'gpu{i}:{n}'
                                     for i, n in enumerate(nodes))
        cmd = ' '.join([self.executable] + list(self.executable_opts))
        self.prerun_cmds += gpunuma.bound_commands(cmd, nodes, NVB_OUT)
        # the job's stdout: every GPU's output, each under its file name
        self.executable = 'tail'
        self.executable_opts = ['-n', '+1'] + [
            f'{NVB_OUT}.{i}' for i in range(self.gpus_per_node)]

    def parse(self, text):
        reason = gpunuma.numactl_reason(self.job_text(gpunuma.NUMACTL_FILE))
        if reason:
            raise ParseError(reason)
        ids = self.job_gpus()
        nodes = dict(b.split(':') for b in self.numa_binding.split())
        out = {}
        for i in range(self.gpus_per_node):
            where = (f'{ids[i].words()} (host on NUMA node '
                     f'{nodes.get(f"gpu{i}", "?")})')
            if ids[i].index != i:
                # its binding is that of the node's GPU i
                raise ParseError(f'{where}: the job\'s GPU {i} is the '
                                 f'node\'s GPU {ids[i].index}, bound to the '
                                 f'NUMA node of GPU {i}')
            out[i] = self.parse_one(self.job_text(f'{NVB_OUT}.{i}'), i,
                                    where)
        return out

    def parse_one(self, text, i, where):
        """``{case: GB/s}`` of GPU i's own run (it saw that GPU only, as
        its device 0); a failed run's reason carries its exit status and
        the first line of its stderr (numactl's or nvbandwidth's)."""
        rc = self.job_text(f'{NVB_OUT}.{i}.rc').strip() or 'unknown'
        err = self.job_text(f'{NVB_OUT}.{i}.err').strip()
        status = f'exit status {rc}' + (
            f': {err.splitlines()[0].strip()}' if err else '')
        if not text.strip():
            raise ParseError(f'{where}: nvbandwidth printed nothing '
                             f'({status})')
        try:
            result = parse_nvbandwidth(text)
            got = {c: result.passed(c).per_gpu() for c in self.cases()}
        except ParseError as err:
            raise ParseError(f'{where}: {err} ({status})') from None
        for case, values in got.items():
            if 0 not in values:
                raise ParseError(f'{where}: nvbandwidth measured no {case} '
                                 f'copy of its GPU (it saw '
                                 f'{sorted(result.devices)})')
        return {c: v[0] for c, v in got.items()}

    def check(self, result):
        side = f'from the {self.host_numa} NUMA node'
        for case, what in ((H2D, 'host-to-device'),
                           (D2H, 'device-to-host')):
            self.check_peers({i: r[case] for i, r in result.items()},
                             f'{what} {side}', 'GB/s',
                             'its host link is slow (a PCIe link trained '
                             'at a lower width or generation)'
                             if self.host_numa == 'near' else
                             'its host link or its path from the other '
                             'socket is slow')

    @performance_function('GB/s')
    def bandwidth(self, gpu=0, case=H2D):
        return sn.defer(self.parsed()[gpu][case])

    @run_before('performance')
    def set_perf_variables(self):
        names = {H2D: 'h2d', D2H: 'd2h'}
        self.perf_variables = {
            f'{names[c]}_{self.host_numa}_gpu{i}': self.bandwidth(i, c)
            for c in self.cases() for i in range(self.gpus_per_node)}


class GpuBurnTest(GpuNodeTest):
    """gpu-burn on every GPU of the job for ``burn_s`` seconds. Sanity: the
    complete verdict (``Tested N GPUs``), no computation error, no FAULTY
    GPU, no GPU above ``temp_limit_c``. Performance variables:
    ``gflops_gpu<i>`` (the last reported throughput). The hottest GPU's
    temperature is logged (``max_temp_c``), not judged against a
    reference: it follows the room and the run before (59-62 C on one
    H200 in 30 s), a throttled GPU shows in its throughput."""

    family = 'gpuburn'
    binaries = fixture(GpuBurnBinaries, scope='environment')

    #: seconds of stress
    burn_s = variable(int, value=30, loggable=True)
    #: a GPU above this (C) fails the run: H100/H200 slow themselves
    #: down near 87 C
    temp_limit_c = variable(int, value=85)
    #: the highest temperature of the job's GPUs (C), logged
    max_temp_c = variable(int, value=0, loggable=True)
    #: extra options (``-d``: doubles, ``-tc``: tensor cores)
    burn_opts = variable(typ.List[str], value=[])

    def binary_name(self):
        return 'gpu_burn'

    @run_after('init')
    def set_descr(self):
        self.descr = (f'gpu-burn {self.burn_s} s on {self.gpus_per_node} '
                      f'GPU(s) of a node')
        # it stops its workers after the burn: measured ~20 s more
        self.time_limit = f'{self.burn_s + 120}s'

    @run_before('run')
    def from_its_folder(self):
        # gpu-burn loads compare.fatbin/compare.ptx from its working folder
        import os
        folder = os.path.dirname(self.executable) or '.'
        self.prerun_cmds += [f'cd {folder}']
        # back to the stage before the after-run GPU query writes its file
        self.postrun_cmds = ['cd - >/dev/null'] + list(self.postrun_cmds)
        self.executable_opts = list(self.burn_opts) + [str(self.burn_s)]

    def parse(self, text):
        return parse_gpu_burn(text)

    def check(self, result):
        gpus_ = self.job_gpus()
        bad = [g for g in result.faulty]
        if bad:
            raise SanityError('; '.join(
                f'{gpus_.get(g.index, GpuId(g.index, g.uuid)).words()}: '
                f'gpu-burn '
                f'{g.verdict or "errors"}: {g.errors} computation error(s)'
                for g in bad))
        temps = {i: g.max_temp_c for i, g in result.gpus.items()
                 if g.max_temp_c is not None}
        self.max_temp_c = max(temps.values(), default=0)
        hot = [i for i, t in temps.items() if t > self.temp_limit_c]
        if hot:
            raise SanityError('; '.join(
                f'{gpus_.get(i, GpuId(i)).words()}: {temps[i]} C under '
                f'gpu-burn, above {self.temp_limit_c} C' for i in hot))
        if len(result.gpus) < self.gpus_per_node:
            raise SanityError(f'gpu-burn burnt {len(result.gpus)} GPU(s), '
                              f'the job has {self.gpus_per_node}')
        self.check_peers({i: g.gflops for i, g in result.gpus.items()
                          if g.gflops is not None}, 'gpu-burn', 'Gflop/s')

    @performance_function('Gflop/s')
    def gflops(self, gpu=0):
        return sn.defer(self.parsed().gpus[gpu].gflops)

    @run_before('performance')
    def set_perf_variables(self):
        pv = {}
        for i in range(self.gpus_per_node):
            pv[f'gflops_gpu{i}'] = self.gflops(i)
        self.perf_variables = pv
