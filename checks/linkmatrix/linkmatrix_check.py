"""Link-fault localisation: the node-to-node bandwidth matrix of all nodes of
a partition, per interconnect (mpiGraph-like, see checks/src/cg_linkmatrix.c
and :mod:`clustergate.linkmatrix`).

Self-referencing: the check fails in sanity when a pair is below
``fraction`` x the matrix median, naming the suspect node/NIC or link, e.g.
``suspect node n4 on fabric fab0: ...`` or ``suspect link n1<->n3 on fabric
fab0: 0.26x median``. Each pair counts at its fastest trial, which load
elsewhere does not slow down and a slow link cannot beat. The matrix is
kept as ``linkmatrix_<fabric>.csv`` and drawn as ``linkmatrix_<fabric>.png``
in the test's output directory. The median and the slowest pair are
performance variables, so a file reference also catches a fabric that is
uniformly slow.
"""

import os
import statistics
import subprocess
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (parameter, performance_function, run_after,
                                   run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate import linkmatrix, sweep
from clustergate.rfm.axes import _current_partitions
from clustergate.rfm.cgprogram import CgProgramTest


def _largest_node_count():
    counts = [max(e['sweep']['nodes']) for _, e in _current_partitions()
              if 'sweep' in e and e['sweep'].get('nodes')]
    return max(counts) if counts else None


@rfm.simple_test
class LinkMatrix(CgProgramTest):
    """N x N bandwidth matrix of all nodes, one rank per node, in N-1 shift
    rounds; names slow nodes and links."""

    #: Message size of every pair (large: bandwidth, not latency)
    msg_bytes = parameter([4000000], loggable=True)

    #: Trials per round (the first is dropped)
    trials = variable(int, value=8, loggable=True)

    #: OpenMPI: yield the CPU while waiting, so that the busy polling of
    #: the ranks does not starve the network stack where nodes share cores
    #: (emulated nodes; irrelevant to a 4 MB transfer on real ones)
    yield_when_idle = variable(bool, value=True)

    #: A pair below this fraction of the matrix median is slow
    fraction = variable(float, value=linkmatrix.DEFAULT_FRACTION,
                        loggable=True)

    program = 'cg_linkmatrix'
    sweep_requirements = sweep.Requirements(min_nodes=2, max_ppn=1)
    time_limit = '10m'

    @run_after('init')
    def only_all_nodes(self):
        # The matrix is of the whole partition: one point per interconnect
        largest = _largest_node_count()
        self.skip_if(largest is not None and self.num_nodes != largest,
                     f'the link matrix runs on all {largest} nodes')
        self.skip_if(self.ppn != 1, 'the link matrix runs one rank per node')
        self.descr = (f'link matrix of {self.num_nodes} nodes over '
                      f'{self.interconnect}, {self.msg_bytes} B')
        self.tags = {'ci', 'nightly', 'acceptance', 'linkmatrix'}
        self.keep_files = [self.csv_name(), self.png_name()]

    def csv_name(self):
        return f'linkmatrix_{self.interconnect}.csv'

    def png_name(self):
        return f'linkmatrix_{self.interconnect}.png'

    @run_before('run')
    def set_command(self):
        if self.yield_when_idle:
            self.env_vars.setdefault('OMPI_MCA_mpi_yield_when_idle', '1')

        self.executable = self.program_path()
        self.executable_opts = ['--bytes', str(self.msg_bytes),
                                '--trials', str(self.trials)]

    def matrix(self):
        return linkmatrix.from_measurements(self._run().measurements)

    def expected_pattern(self):
        return 'linkmatrix'

    def check_run(self, run):
        n = self.num_nodes
        if len(run.measurements) != n * (n - 1):
            raise SanityError(f'{len(run.measurements)} pairs measured, '
                              f'expected {n * (n - 1)} ({n} nodes)')

        mat = linkmatrix.from_measurements(run.measurements)
        an = linkmatrix.analyse(mat, self.fraction, self.interconnect)
        linkmatrix.write_csv(mat, os.path.join(self.stagedir,
                                               self.csv_name()))
        self.draw_heatmap()
        self.logger.info(an.summary())
        if not an.healthy:
            raise SanityError('; '.join(an.messages()))

    def draw_heatmap(self):
        # In a separate Python: matplotlib is slow to import, and optional
        cmd = [sys.executable, '-m', 'clustergate.linkmatrix',
               os.path.join(self.stagedir, self.csv_name()),
               os.path.join(self.stagedir, self.png_name()),
               '--fraction', str(self.fraction),
               '--fabric', self.interconnect,
               '--title', f'{self.current_system.name}:'
                          f'{self.current_partition.name} '
                          f'{self.interconnect} link matrix (MB/s)']
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=120)
            failed = not os.path.exists(cmd[4])
        except (OSError, subprocess.SubprocessError) as err:
            proc, failed = err, True

        if failed:
            tail = getattr(proc, 'stderr', str(proc)) or ''
            self.logger.info(f'no heat map (matplotlib missing? pip '
                             f'install clustergate[report]): '
                             f'{tail.strip().splitlines()[-1:]}')

    @performance_function('MB/s')
    def bw_median(self):
        return sn.defer(statistics.median(self.matrix().bw.values()))

    @performance_function('MB/s')
    def bw_min(self):
        return sn.defer(min(self.matrix().bw.values()))

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {'bw_median': self.bw_median(),
                               'bw_min': self.bw_min()}
