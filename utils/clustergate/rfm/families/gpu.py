"""What every GPU check shares: the GPUs-per-node axis from the
partitions' ``devices``, the request for the GPUs (Slurm or
``CUDA_VISIBLE_DEVICES``), the GPUs' identities recorded in the job, and
the busy-GPU verdict.

A partition without a ``gpu`` device (:mod:`clustergate.site.gpus`) runs
no GPU test case: its points are not capable, and a system without any
GPU partition has an empty ``gpus_per_node`` axis, so the GPU checks have
no test case at all there.
"""

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable
from reframe.core.exceptions import SanityError

from clustergate import adapter
from clustergate.rfm.families import gpujudge
from clustergate.rfm.point.base import PointTest
from clustergate.rfm.families.thirdparty import (ANY_MPI, BenchmarkBinaries,
                                                 environs_for)
from clustergate.site import gpus

#: files the job writes beside its output (see clustergate.rfm.families.gpujudge)
GPU_QUERY = 'cg-gpus.csv'
GPU_MAP = 'cg-gpu-map.txt'
APPS_BEFORE = 'cg-gpu-apps.before.csv'
APPS_AFTER = 'cg-gpu-apps.after.csv'
_SMI = 'nvidia-smi'
_APPS = ('--query-compute-apps=gpu_uuid,pid,process_name,used_memory '
         '--format=csv,noheader')


def gpu_partitions():
    """``[(ReFrame partition, GpuSpec)]`` of the current system's
    partitions that declare GPUs."""
    system = adapter.current_system()
    out = []
    for part in (system.partitions if system else []):
        spec = gpus.of_partition(part)
        if spec is not None:
            out.append((part, spec))
    return out


def gpu_counts():
    """The GPUs-per-node axis: 1 .. the most GPUs a node of the system
    has. Without a GPU partition: [1], a point no partition can run (so
    the GPU checks have no test case there; an empty axis would make
    ReFrame warn about every GPU check in every session)."""
    top = max((spec.count for _, spec in gpu_partitions()), default=1)
    return list(range(1, top + 1))


def gpu_point_reason(test, partition):
    """Why ``partition`` cannot give ``test`` its GPUs, or None."""
    spec = gpus.of_partition(partition)
    if spec is None:
        return (f'partition {partition.fullname} declares no GPUs '
                f"(devices: [{{'type': 'gpu', ...}}])")
    if test.gpus_per_node > spec.count:
        return (f'{test.gpus_per_node} GPUs per node: partition '
                f'{partition.fullname} has {spec.count} '
                f'({spec.describe()})')
    return None


class GpuBinaries(BenchmarkBinaries):
    """The binaries of one GPU family (Spack ``+cuda``/``+rocm`` with the
    GPU arch, or a prebuilt prefix: ``-S <Family>Binaries.use_prefix``)."""


class BabelStreamBinaries(GpuBinaries):
    family = 'babelstream'


class NvbandwidthBinaries(GpuBinaries):
    family = 'nvbandwidth'


class NcclTestsBinaries(GpuBinaries):
    family = 'nccl'


class GpuBurnBinaries(GpuBinaries):
    family = 'gpuburn'


class OsuGpuBinaries(GpuBinaries):
    family = 'osu_gpu'


def one_environ(test):
    """A GPU program needs one environment, not one run per MPI: the
    environments its source is limited to, else each GPU partition's
    first one."""
    if list(test.valid_prog_environs) != ANY_MPI:
        return
    envs = environs_for(test.family)
    if not envs:
        envs = []
        for part, _ in gpu_partitions():
            names = [e.name for e in part.environs]
            if names and names[0] not in envs:
                envs.append(names[0])
    if envs:
        test.valid_prog_environs = envs


class GpuJob(rfm.RegressionTestPlugin):
    """Requests the job's GPUs and records which GPUs it had and what else
    ran on them (the files of :mod:`clustergate.rfm.families.gpujudge`); a test
    mixing it in has a ``gpus_per_node`` attribute."""

    #: the GPUs are asked for by this mixin (False: the family's own way)
    request_gpus = True

    @run_after('setup')
    def request_job_gpus(self):
        spec = gpus.of_partition(self.current_partition)
        if spec is None:
            return
        g = self.gpus_per_node
        # CUDA numbers the GPUs fastest first, nvidia-smi by PCI bus:
        # the same order for both, so that GPU i of a verdict is the GPU
        # nvidia-smi calls i
        self.env_vars.setdefault('CUDA_DEVICE_ORDER', 'PCI_BUS_ID')
        if type(self.job.scheduler).registered_name == 'local':
            self.env_vars.setdefault('CUDA_VISIBLE_DEVICES',
                                     gpus.visible_devices(g))
        else:
            self.job.options += spec.slurm_options(g)

        # which GPUs the job has, and who else uses them (nvidia-smi
        # ignores CUDA_VISIBLE_DEVICES: it lists every GPU it may see)
        # 'if', not '&&': without nvidia-smi (AMD) the job's status stays
        # the benchmark's
        have = f'if command -v {_SMI} >/dev/null; then'
        self.prerun_cmds = [
            f'{have} {_SMI} --query-gpu=index,uuid,name,pci.bus_id '
            f'--format=csv,noheader > {GPU_QUERY}; fi',
            '_cg_gpus=(${CUDA_VISIBLE_DEVICES//,/ })',
            f'for i in $(seq 0 {g - 1}); do echo "$i ${{_cg_gpus[$i]:-$i}}";'
            f' done > {GPU_MAP}',
            f'{have} {_SMI} {_APPS} > {APPS_BEFORE}; fi',
        ] + list(self.prerun_cmds)
        self.postrun_cmds = list(self.postrun_cmds) + [
            f'{have} {_SMI} {_APPS} > {APPS_AFTER}; fi']

    def job_gpus(self):
        """``{job GPU: GpuId}`` (index and UUID where nvidia-smi said)."""
        return gpujudge.job_gpus(
            gpujudge.parse_gpu_query(self.job_text(GPU_QUERY)),
            gpujudge.parse_gpu_map(self.job_text(GPU_MAP)),
            self.gpus_per_node)

    def job_text(self, name):
        return self._cg_job_file(name)

    def _cg_job_file(self, name):
        from clustergate.rfm.point import joboutput
        return joboutput.job_file(self, name, missing_ok=True)

    def check_output(self, text):
        """A busy GPU first: the other process also makes the benchmark
        fail or fall short (its memory, its compute), and the cause is
        the other process."""
        self.check_not_busy()
        return super().check_output(text)

    def check_not_busy(self):
        """SanityError naming the GPU another process used."""
        reason = gpujudge.busy_reason(
            self.job_gpus(),
            gpujudge.parse_compute_apps(self.job_text(APPS_BEFORE)),
            gpujudge.parse_compute_apps(self.job_text(APPS_AFTER)))
        if reason:
            raise SanityError(reason)

    def check_peers(self, values, what, unit, cause=''):
        """SanityError naming each GPU slow against its peers."""
        lines = gpujudge.slow_peers(values, what, unit, self.job_gpus(),
                                    cause)
        if lines:
            raise SanityError('; '.join(lines))


class GpuNodeTest(GpuJob, PointTest, rfm.RunOnlyRegressionTest):
    """A GPU benchmark on one node, on ``gpus_per_node`` of its GPUs at
    once (the axis, loggable); a point whose partition has fewer GPUs, or
    none, is not a test case. Nightly and acceptance."""

    #: the benchmark family (babelstream, nvbandwidth, gpuburn)
    family = variable(str)

    # one node, no MPI: no nodes/ppn/interconnect axes, the GPU axis
    sweep_axes = False
    mpi_transport = False

    valid_systems = ['*']
    valid_prog_environs = list(ANY_MPI)
    maintainers = ['clustergate']
    num_tasks = 1
    time_limit = '10m'

    @classmethod
    def system_parameters(cls, partitions):
        return {**super().system_parameters(partitions),
                'gpus_per_node': gpu_counts()}

    def point_reason(self, partition, mpi_family):
        return gpu_point_reason(self, partition)

    def tag_names(self):
        return {'gpu', self.family}

    @run_after('init')
    def choose_gpu_environ(self):
        one_environ(self)

    @run_after('setup')
    def run_locally(self):
        # one process per node, started by the job script itself
        self.job.launcher = adapter.launcher('local')

    @run_before('run')
    def set_gpu_binary(self):
        from clustergate.rfm.families.thirdparty import set_binary
        set_binary(self)
