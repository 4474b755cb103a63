"""Generic base of the STREAM checks (McCalpin's stream_c.exe, OpenMP).

One test = one node, one NUMA domain count. Threads: the partition's
``cores_per_node`` (extras), scaled to the NUMA domains used. A partition
asks for runs on fewer domains than the whole node with::

    'extras': {'cores_per_node': 64, 'numa_domains_per_node': 4,
               'stream_numa_counts': [1, 4]}

(runs on domain 0 only and on all four, bound with ``numactl``). Without
``stream_numa_counts`` STREAM runs once, on the whole node, unbound.
"""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, parameter, performance_function,
                                   run_after, run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.parsers import parse_stream
from clustergate import adapter
from clustergate.rfm.point.base import PointTest
from clustergate.rfm.families.thirdparty import (ANY_MPI, StreamBinaries,
                                                 restrict_environs, set_binary)
from clustergate.site.partition import partition_model

KERNELS = ('Copy', 'Scale', 'Add', 'Triad')


def numa_counts(partitions):
    """NUMA domain counts STREAM runs on, over the ``(name, extras)``
    partitions (0: the whole node, unbound)."""
    counts = set()
    for name, extras in partitions:
        model = partition_model(extras, name)
        if model.declares_sweep:
            counts.update(model.stream_numa_counts)

    return sorted(counts) or [0]


def stream_threads(extras, numa_domains):
    """OpenMP threads of a run on ``numa_domains`` domains (0: whole node);
    None when the partition does not declare ``cores_per_node``."""
    model = partition_model(extras)
    cores = model.cores_per_node
    if not cores:
        return None

    per_node = model.numa_domains_per_node
    if not numa_domains:
        return cores

    return max(1, cores * numa_domains // per_node)


class StreamTest(PointTest, rfm.RunOnlyRegressionTest):
    """Runs ``stream_c.exe`` with OMP_NUM_THREADS threads on one node.

    Performance variables: ``copy``, ``scale``, ``add``, ``triad``: best
    rates in MB/s (10^6 B/s), as STREAM prints them.
    """

    family = 'stream'

    # one node, no interconnect: no sweep axes, every partition that has
    # the binaries runs it; no reference file entry
    sweep_axes = False
    narrow_to_capable = False
    load_references = False

    #: NUMA domains the run is bound to; 0 = whole node, unbound
    numa_domains = parameter([0], loggable=True)

    #: Threads used (set at setup from the partition), logged
    threads = variable(int, value=0, loggable=True)

    binaries = fixture(StreamBinaries, scope='environment')

    valid_systems = ['+mpi']
    valid_prog_environs = list(ANY_MPI)
    maintainers = ['clustergate']
    num_tasks = 1
    time_limit = '10m'

    @classmethod
    def system_parameters(cls, partitions):
        return {**super().system_parameters(partitions),
                'numa_domains': numa_counts(partitions)}

    def tag_names(self):
        return {'thirdparty', 'stream'}

    @run_after('init')
    def set_descr(self):
        restrict_environs(self)     # to those with a STREAM source
        where = (f'{self.numa_domains} NUMA domain(s)' if self.numa_domains
                 else 'the whole node')
        self.descr = f'STREAM on {where}'

    @run_after('setup')
    def set_threads(self):
        counts = list(partition_model(self.current_partition)
                      .stream_numa_counts)
        self.skip_if(self.numa_domains not in counts,
                     f'partition {self.current_partition.fullname} runs '
                     f'STREAM on NUMA domain counts {counts}, not '
                     f'{self.numa_domains}')
        threads = stream_threads(partition_model(self.current_partition),
                                 self.numa_domains)
        self.skip_if(threads is None,
                     f'partition {self.current_partition.fullname} does '
                     f'not declare cores_per_node (extras)')
        self.threads = threads
        self.num_cpus_per_task = threads
        self.env_vars.update({
            'OMP_NUM_THREADS': str(threads),
            'OMP_PLACES': 'cores',
            'OMP_PROC_BIND': 'spread',
        })
        # one process, OpenMP only: no MPI launcher (mpirun would bind the
        # single rank, and all its threads, to one core)
        self.job.launcher = adapter.launcher('local')

    def binary_name(self):
        return 'stream_c.exe'

    @run_before('run')
    def bind_to_domains(self):
        set_binary(self)            # the executable, then its binding
        if self.numa_domains:
            nodes = f'0-{self.numa_domains - 1}'
            self.executable_opts = [f'--cpunodebind={nodes}',
                                    f'--membind={nodes}', self.executable]
            self.executable = 'numactl'

    def parse(self, text):
        return parse_stream(text)

    def explained(self, message):
        # STREAM's three arrays are static in stream.c, but stream.f built
        # with OpenMP keeps them on the stack: with the usual 8 MiB limit
        # it dies of a segfault before printing anything
        text = super().explained(message)
        try:
            empty = not self.stdout_text().strip()
        except SanityError:
            empty = True

        if empty and 'Segmentation fault' in text:
            text += (' (a segfault before any output: STREAM\'s arrays do '
                     'not fit the stack, as in stream.f built with OpenMP; '
                     'raise the limit: ulimit -s unlimited)')

        return text

    def check(self, res):
        if not res.validates:
            raise SanityError('STREAM: no "Solution Validates": ' +
                              '; '.join(res.validation_errors))

        missing = [k for k in KERNELS if k not in res.kernels]
        if missing:
            raise SanityError(f'STREAM output has no {", ".join(missing)} '
                              f'row')

        if self.threads and res.threads not in (None, self.threads):
            raise SanityError(f'STREAM counted {res.threads} threads, '
                              f'expected {self.threads}')

        if self.threads > 1 and res.threads is None:
            # a stream_c.exe built without OpenMP (Spack's default)
            # ignores OMP_NUM_THREADS and prints no thread count
            raise SanityError(f'STREAM prints no thread count (built '
                              f'without OpenMP): it ran 1 thread, expected '
                              f'{self.threads}')

    @performance_function('MB/s')
    def rate(self, kernel='Triad'):
        return sn.defer(self.parsed().rate(kernel))

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {k.lower(): self.rate(k) for k in KERNELS}
