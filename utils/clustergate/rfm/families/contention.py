"""Generic base test of the MPI contention patterns (cg_contention), one
pattern at a time.

One test = one pattern x one message size x one sweep point, one job each:
the detail of the acceptance mode (each pattern alone in its job, passing
or failing on its own) and of runs by name (``-n PingPongDistance``).
The ci and nightly modes run every pattern and size of a point in one
job instead (:mod:`clustergate.rfm.families.contention_suite`): the same
measurements for a tenth of the jobs. Subclasses only name the pattern
and what it needs (see checks/contention/).
"""

import statistics

import reframe.utility.sanity as sn
from reframe.core.builtins import (parameter, performance_function, run_after,
                                   run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.site import sweep
from clustergate.rfm.point import modes
from clustergate.rfm.point.reference import add_bounds
from clustergate.rfm.families.cgprogram import CgProgramTest

#: Message sizes of the studies: 8 B, 10 KB, 1 MB (1 KB = 1000 B)
DEFAULT_SIZES = [8, 10000, 1000000]


def peer_verdict(lines, fraction, interconnect):
    """``(worst ratio, suspects)`` of the peer nodes of rank 0 in the CG
    lines of one per-peer pattern and size: each peer node's bandwidth over
    the median of the other nodes' (the worst one), and a message per node
    below ``fraction``, naming it: the "which node or link" of a nightly
    failure. None without a verdict (no fraction, no lines, fewer than 3
    peer nodes)."""
    if not fraction or not lines:
        return None

    by_node = {}
    src = lines[0]['src']
    for m in lines:
        if m['dst'] == src:
            continue

        # the mean of the trials, not the fastest one (unlike the link
        # matrix): see cgoutput.Measurement.best_bandwidth
        if m.get('bw_MBps'):
            by_node.setdefault(m['dst'], []).append(m['bw_MBps'])

    if len(by_node) < 3:
        return None     # two nodes cannot outvote a third

    node_bw = {n: statistics.median(v) for n, v in by_node.items()}
    suspects, worst = [], None
    for node, bw in sorted(node_bw.items()):
        others = [v for n, v in node_bw.items() if n != node]
        ref = statistics.median(others)
        worst = bw / ref if worst is None else min(worst, bw / ref)
        if bw < fraction * ref:
            suspects.append(f'{src}->{node} over {interconnect}: '
                            f'{bw:.4g} MB/s = {bw / ref:.2f}x the other '
                            f'nodes\' median {ref:.4g} MB/s')

    return worst, suspects


def worst_value(lines, key, peer, what):
    """The worst ``key`` (``t_us``: the largest, else the smallest) of the
    measurement ``lines``, of peer ``peer`` only unless None; ``what``
    names the measurement in the error when there is none."""
    if peer is not None:
        lines = [m for m in lines if m['peer'] == peer]

    values = [m[key] for m in lines if m.get(key) is not None]
    if not values:
        raise SanityError(f'no {key} value for {what} (peer {peer}) in the '
                          f'output')

    # the worst over peers: max time, min bandwidth
    return max(values) if key == 't_us' else min(values)


def peer_fraction(test, name):
    """The bound of the peer ratio ``name``: the lower threshold of its
    entry in the site's reference file for the test's partition where there
    is one (a pattern whose healthy spread is wider on that system), else
    the test's ``peer_outlier_fraction`` (0 disables the verdict). The
    suspects named in the log and the performance judgement then use the
    same bound."""
    part = test.current_partition
    if not test.peer_outlier_fraction or part is None:
        return test.peer_outlier_fraction

    # the partition's own scope only (references.apply writes the file's
    # entries there): the global scope holds the defaults that
    # add_bounds writes, which must not be read back as the site's
    scopes = getattr(test.reference, 'data', test.reference) or {}
    entry = scopes.get(part.fullname, {}).get(name)
    if entry is None:
        return test.peer_outlier_fraction

    value, lower = entry[0], entry[1]
    return value * (1 + lower) if lower is not None else value


class ContentionTest(CgProgramTest):
    """Runs one pattern of cg_contention and reports its time and bandwidth.

    Performance variables: ``latency`` (us, mean of the kept trials, max
    over ranks), ``bandwidth`` (MB/s, 10^6 B/s) where the pattern moves data,
    and for patterns measured per peer (rank 0 with every rank j) one pair
    ``latency_r<j>``/``bandwidth_r<j>`` per peer plus the worst of them,
    and at bandwidth-bound sizes ``peer_bandwidth_ratio``: the slowest
    peer node's bandwidth over the median of the other nodes' (bounded by
    ``peer_outlier_fraction``; the suspects are named in the log).
    """

    program = 'cg_contention'

    #: Pattern name as cg_contention knows it (set by subclasses)
    pattern = variable(str)

    #: Every pattern moves data between 2 ranks or more (a pattern with
    #: more needs says so)
    sweep_requirements = sweep.Requirements(min_ranks=2)

    #: Message size in bytes
    msg_bytes = parameter(DEFAULT_SIZES, loggable=True)

    #: Trials per measurement (the first is dropped)
    trials = variable(int, value=51, loggable=True)

    #: Patterns measured once per peer of rank 0
    per_peer = variable(bool, value=False)

    #: A peer node slower than this fraction of the median of the other
    #: nodes' peers is named as suspect (self-referencing, no reference
    #: needed): the lower bound of ``peer_bandwidth_ratio``; 0 disables
    peer_outlier_fraction = variable(float, value=0.7)

    #: Smallest message for the peer outlier verdict: below it the time is
    #: latency and jitter (on a busy node 0.3x swings are normal), not the
    #: bandwidth of the link
    peer_outlier_min_bytes = variable(int, value=1000000)

    #: Does the pattern move data (bandwidth is meaningful)?
    has_bandwidth = variable(bool, value=True)

    time_limit = '5m'

    # ci and nightly run all patterns of a point in one job
    # (ContentionSuiteTest); one job per pattern and size is detail
    mode_selection = modes.ACCEPTANCE_ONLY

    def tag_names(self):
        return {'contention', self.pattern}

    @run_after('init')
    def set_descr(self):
        self.descr = (f'{self.pattern} {self.msg_bytes} B on '
                      f'{self.point_words()}')

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

    def peer_verdict(self, lines):
        """``(worst ratio, suspects)`` of the peer nodes (see
        :func:`peer_verdict`), or None where there is no verdict (not per
        peer, small messages, fewer than 3 peer nodes)."""
        if (not self.per_peer or not self.has_bandwidth or
                self.msg_bytes < self.peer_outlier_min_bytes):
            return None

        return peer_verdict(lines, peer_fraction(self, 'peer_bandwidth_ratio'),
                            self.interconnect)

    @performance_function('x')
    def peer_ratio(self):
        return sn.defer(self.peer_verdict(
            self.measured_lines(self._run()))[0])

    # -- performance ------------------------------------------------------

    @performance_function('us')
    def latency_of(self, peer=None):
        return sn.defer(self._value('t_us', peer))

    @performance_function('MB/s')
    def bandwidth_of(self, peer=None):
        return sn.defer(self._value('bw_MBps', peer))

    def _value(self, key, peer):
        return worst_value(self.measured_lines(self._run()), key, peer,
                           self.pattern)

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

        # a dry run has no output to judge the peers on
        verdict = None if self.is_dry_run() else self.peer_verdict(
            self.measured_lines(self._run()))
        if verdict is not None:
            # a measured ratio: judged in the performance stage against
            # peer_outlier_fraction (or the reference file), the suspects
            # named in the log
            pv['peer_bandwidth_ratio'] = self.peer_ratio()
            add_bounds(self, {'peer_bandwidth_ratio': (
                self.peer_outlier_fraction, 0, None, 'x')})
            if verdict[1]:
                self.logger.info(f'{self.display_name}: suspect link/node '
                                 f'for {self.pattern} {self.msg_bytes} B: '
                                 + '; '.join(verdict[1]))

        self.perf_variables = pv
