"""Generic base test of the MPI contention patterns (cg_contention).

One test = one pattern x one message size x one sweep point. Subclasses
only name the pattern and what it needs (see checks/contention/).
"""

import statistics

import reframe.utility.sanity as sn
from reframe.core.builtins import (parameter, performance_function, run_after,
                                   run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.rfm import modes
from clustergate.rfm.cgprogram import CgProgramTest

#: Message sizes of the studies: 8 B, 10 KB, 1 MB (1 KB = 1000 B)
DEFAULT_SIZES = [8, 10000, 1000000]
CI_SIZES = {8, 1000000}
#: Patterns of the ci mode: one of each kind (point-to-point, all-pairs,
#: many-to-one, collective); the others run nightly
CI_PATTERNS = {'barrier', 'pingpong', 'shift', 'hotspot', 'concurrent',
               'allreduce'}


class ContentionTest(CgProgramTest):
    """Runs one pattern of cg_contention and reports its time and bandwidth.

    Performance variables: ``latency`` (us, mean of the kept trials, max
    over ranks), ``bandwidth`` (MB/s, 10^6 B/s) where the pattern moves data,
    and for patterns measured per peer (rank 0 with every rank j) one pair
    ``latency_r<j>``/``bandwidth_r<j>`` per peer plus the worst of them.
    """

    program = 'cg_contention'

    #: Pattern name as cg_contention knows it (set by subclasses)
    pattern = variable(str)

    #: Message size in bytes
    msg_bytes = parameter(DEFAULT_SIZES, loggable=True)

    #: Trials per measurement (the first is dropped)
    trials = variable(int, value=51, loggable=True)

    #: Patterns measured once per peer of rank 0
    per_peer = variable(bool, value=False)

    #: A peer node slower than this fraction of the median of the other
    #: nodes' peers is named as suspect (self-referencing, no reference
    #: needed); 0 disables
    peer_outlier_fraction = variable(float, value=0.7)

    #: Smallest message for the peer outlier verdict: below it the time is
    #: latency and jitter (on a busy node 0.3x swings are normal), not the
    #: bandwidth of the link
    peer_outlier_min_bytes = variable(int, value=1000000)

    #: Does the pattern move data (bandwidth is meaningful)?
    has_bandwidth = variable(bool, value=True)

    time_limit = '5m'

    @run_after('init')
    def set_tags(self):
        self.descr = (f'{self.pattern} {self.msg_bytes} B on '
                      f'{self.num_nodes} node(s) x {self.ppn} ppn over '
                      f'{self.interconnect}')
        ci = (self.pattern in CI_PATTERNS and
              (self.msg_bytes in CI_SIZES or self.pattern == 'barrier'))
        self.tags = modes.tags_for(ci, True, self.sweep_point()) | {
            'contention', self.pattern
        }

    @run_before('run')
    def set_command(self):
        self.executable = self.program_path()
        self.executable_opts = ['--patterns', self.pattern,
                                '--trials', str(self.trials)]
        if self.msg_bytes:
            self.executable_opts += ['--sizes', str(self.msg_bytes)]

    # -- output -----------------------------------------------------------

    def measured_lines(self, run):
        """The CG lines of this test's pattern and size."""
        name = self.reported_pattern()
        return [m for m in run.select(name)
                if name == 'barrier' or m['bytes'] == self.msg_bytes]

    def reported_pattern(self):
        return self.pattern

    def expected_pattern(self):
        return self.reported_pattern()

    def check_run(self, run):
        lines = self.measured_lines(run)
        if not lines:
            raise SanityError(f'no {self.reported_pattern()} measurement of '
                              f'{self.msg_bytes} B in the output')

        if self.per_peer:
            self.check_peer_outliers(lines)

    def check_peer_outliers(self, lines):
        """Name the peer node(s) whose bandwidth (or latency) is far off
        the other nodes': the "which node or link" of a nightly failure."""
        if (not self.peer_outlier_fraction or
                self.msg_bytes < self.peer_outlier_min_bytes):
            return

        by_node = {}
        src = lines[0]['src']
        for m in lines:
            if m['dst'] == src:
                continue

            # the mean of the trials, not the fastest one (unlike the link
            # matrix): see cgoutput.Measurement.best_bandwidth
            if self.has_bandwidth and m.get('bw_MBps'):
                by_node.setdefault(m['dst'], []).append(m['bw_MBps'])

        if len(by_node) < 3:
            return      # two nodes cannot outvote a third

        node_bw = {n: statistics.median(v) for n, v in by_node.items()}
        suspects = []
        for node, bw in sorted(node_bw.items()):
            others = [v for n, v in node_bw.items() if n != node]
            ref = statistics.median(others)
            if bw < self.peer_outlier_fraction * ref:
                suspects.append(f'{src}->{node} over {self.interconnect}: '
                                f'{bw:.4g} MB/s = {bw / ref:.2f}x the other '
                                f'nodes\' median {ref:.4g} MB/s')

        if suspects:
            raise SanityError(f'suspect link/node for {self.pattern} '
                              f'{self.msg_bytes} B: ' + '; '.join(suspects))

    # -- performance ------------------------------------------------------

    @performance_function('us')
    def latency_of(self, peer=None):
        return sn.defer(self._value('t_us', peer))

    @performance_function('MB/s')
    def bandwidth_of(self, peer=None):
        return sn.defer(self._value('bw_MBps', peer))

    def _value(self, key, peer):
        lines = self.measured_lines(self._run())
        if peer is not None:
            lines = [m for m in lines if m['peer'] == peer]

        values = [m[key] for m in lines if m.get(key) is not None]
        if not values:
            raise SanityError(f'no {key} value for {self.pattern} '
                              f'(peer {peer}) in the output')

        # the worst over peers: max time, min bandwidth
        return max(values) if key == 't_us' else min(values)

    @run_before('performance')
    def set_perf_variables(self):
        pv = {'latency': self.latency_of()}
        if self.has_bandwidth:
            pv['bandwidth'] = self.bandwidth_of()

        if self.per_peer and self.num_tasks:
            for j in range(1, self.num_tasks):
                pv[f'latency_r{j}'] = self.latency_of(j)
                if self.has_bandwidth:
                    pv[f'bandwidth_r{j}'] = self.bandwidth_of(j)

        self.perf_variables = pv
