"""Every contention pattern and size of one sweep point in one job:
:class:`ContentionSuiteTest`.

cg_contention runs all its patterns in one launch. One job per pattern x
size (:class:`~clustergate.rfm.families.contention.ContentionTest`) paid a Slurm
job, an MPI start-up and a build lookup for each of 29 measurements of a
point: on the emulated cluster ~6 s of overhead for a barrier that takes
milliseconds. The suite reports the same measurements as one test's
performance variables, named ``<pattern>_<size>_<metric>``
(``pingpong_1000000_bandwidth_r3``, ``barrier_latency``), with the same
peer verdict per per-peer pattern and size.
"""

from dataclasses import dataclass

import reframe.utility.sanity as sn
from reframe.core.builtins import (performance_function, run_after,
                                   run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.site import sweep
from clustergate.rfm.point import modes
from clustergate.rfm.point.reference import add_bounds
from clustergate.rfm.families.cgprogram import CgProgramTest
from clustergate.rfm.families.contention import (DEFAULT_SIZES, peer_fraction,
                                                 peer_verdict, worst_value)


@dataclass(frozen=True)
class Pattern:
    """One pattern of cg_contention as the suite reports it."""

    name: str                   # as cg_contention's --patterns knows it
    reported: str = ''          # the CG lines' pattern ('' = name)
    per_peer: bool = False      # measured once per peer of rank 0
    has_bandwidth: bool = True  # moves data
    sized: bool = True          # runs once per message size
    min_ranks: int = 2
    min_ppn: int = 1

    @property
    def lines_pattern(self):
        return self.reported or self.name

    def runs_at(self, ranks, ppn):
        return ranks >= self.min_ranks and ppn >= self.min_ppn


#: cg_contention's patterns (docs/reports/contention.md), in its order
PATTERNS = (
    Pattern('barrier', has_bandwidth=False, sized=False),
    Pattern('pingpong', per_peer=True),
    Pattern('bipingpong', per_peer=True),
    Pattern('shift'),
    Pattern('naive_bcast'),
    Pattern('tree_bcast'),
    Pattern('alltoall'),
    Pattern('hotspot'),
    Pattern('complement'),
    # two sends at once vs one: needs two ranks on rank 0's node and two
    # other nodes' ranks (cg_contention skips it otherwise)
    Pattern('concurrent', reported='concurrent_pair', min_ranks=4,
            min_ppn=2),
    Pattern('allreduce'),
)


def metric_name(pattern, size, metric):
    """``pingpong_1000000_bandwidth``; ``barrier_latency`` (no size)."""
    if not pattern.sized:
        return f'{pattern.name}_{metric}'

    return f'{pattern.name}_{size}_{metric}'


class ContentionSuiteTest(CgProgramTest):
    """Runs every pattern of cg_contention at every message size in one
    job at one sweep point.

    Performance variables, per pattern and size: ``<p>_<size>_latency``
    (us, mean of the kept trials, max over ranks; the worst peer for
    per-peer patterns), ``<p>_<size>_bandwidth`` (MB/s) where the pattern
    moves data, per peer j of the per-peer patterns ``..._latency_r<j>``
    and ``..._bandwidth_r<j>``, ``concurrent_<size>_ratio``, and at
    bandwidth-bound sizes with 3 peer nodes or more
    ``<p>_<size>_peer_bandwidth_ratio``: the slowest peer node's bandwidth
    over the median of the other nodes' (bounded by
    ``peer_outlier_fraction``; the suspects are named in the log).
    """

    program = 'cg_contention'
    sweep_requirements = sweep.Requirements(min_ranks=2)
    time_limit = '10m'
    mode_selection = modes.EVERY_MODE

    #: Message sizes in bytes (one launch runs them all)
    sizes = variable(list, value=list(DEFAULT_SIZES))

    #: Trials per measurement (the first is dropped): the cap when the
    #: harness stops on the noise
    trials = variable(int, value=51, loggable=True)

    #: Stop a measurement once the relative standard error of its mean is
    #: at most this (0: every trial runs). 0.05 is tighter than the median
    #: 50-trial figure under load (RSE 0.059-0.073 measured here), so a
    #: stopped figure is as precise as the ones the references were made
    #: of; it saved ~30 % of the trials under load and stops at the floor
    #: on a quiet machine (docs/reports/nightly-budget.md). A site tightens it.
    target_rse = variable(float, value=0.05, loggable=True)

    #: Trials before the harness may stop (the warm-up not counted): the
    #: first 5 trials' figure moved 15-20 % (median) from the 50-trial one
    #: under load, the first 10 trials' 11-16 %
    min_trials = variable(int, value=10, loggable=True)

    #: See ContentionTest.peer_outlier_fraction
    peer_outlier_fraction = variable(float, value=0.7)

    #: See ContentionTest.peer_outlier_min_bytes
    peer_outlier_min_bytes = variable(int, value=1000000)

    def tag_names(self):
        return {'contention'}

    @run_after('init')
    def set_descr(self):
        self.descr = (f'all contention patterns x {len(self.sizes)} sizes '
                      f'on {self.point_words()}')

    def patterns(self):
        """The patterns this point can run."""
        ranks = self.sweep_point().ranks
        return [p for p in PATTERNS if p.runs_at(ranks, self.ppn)]

    @run_before('run')
    def set_command(self):
        self.executable = self.program_path()
        self.executable_opts = [
            '--patterns', ','.join(p.name for p in self.patterns()),
            '--sizes', ','.join(str(s) for s in self.sizes),
            '--trials', str(self.trials),
            '--target-rse', str(self.target_rse),
            '--min-trials', str(self.min_trials)]

    # -- output -----------------------------------------------------------

    def lines_of(self, run, pattern, size):
        lines = run.select(pattern.lines_pattern)
        if not pattern.sized:
            return lines

        return [m for m in lines if m['bytes'] == size]

    def points(self):
        """``(pattern, size)`` of every measurement this point reports."""
        return [(p, s) for p in self.patterns()
                for s in (self.sizes if p.sized else [0])]

    def check_run(self, run):
        missing = [metric_name(p, s, '').rstrip('_')
                   for p, s in self.points() if not self.lines_of(run, p, s)]
        if missing:
            raise SanityError(f'no measurement of {", ".join(missing)} in '
                              f'the output')

    def verdict(self, pattern, size):
        """The peer verdict of one per-peer pattern and size, or None."""
        if (not pattern.per_peer or size < self.peer_outlier_min_bytes):
            return None

        name = metric_name(pattern, size, 'peer_bandwidth_ratio')
        return peer_verdict(self.lines_of(self._run(), pattern, size),
                            peer_fraction(self, name), self.interconnect)

    # -- performance ------------------------------------------------------

    @performance_function('us')
    def latency_of(self, pattern=None, size=None, peer=None):
        return sn.defer(self._value(pattern, size, 't_us', peer))

    @performance_function('MB/s')
    def bandwidth_of(self, pattern=None, size=None, peer=None):
        return sn.defer(self._value(pattern, size, 'bw_MBps', peer))

    @performance_function('x')
    def ratio_of(self, pattern=None, size=None):
        return sn.defer(self._value(pattern, size, 'ratio', None))

    @performance_function('x')
    def peer_ratio(self, pattern=None, size=None):
        return sn.defer(self.verdict(pattern, size)[0])

    def _value(self, pattern, size, key, peer):
        return worst_value(self.lines_of(self._run(), pattern, size), key,
                           peer, f'{pattern.name} {size} B')

    @run_before('performance')
    def set_perf_variables(self):
        pv, suspects = {}, []
        for p, size in self.points():
            pv[metric_name(p, size, 'latency')] = self.latency_of(p, size)
            if p.has_bandwidth:
                pv[metric_name(p, size, 'bandwidth')] = \
                    self.bandwidth_of(p, size)

            if p.name == 'concurrent':
                pv[metric_name(p, size, 'ratio')] = self.ratio_of(p, size)

            if p.per_peer and self.num_tasks:
                for j in range(1, self.num_tasks):
                    pv[metric_name(p, size, f'latency_r{j}')] = \
                        self.latency_of(p, size, j)
                    pv[metric_name(p, size, f'bandwidth_r{j}')] = \
                        self.bandwidth_of(p, size, j)

            # a dry run has no output to judge the peers on
            verdict = None if self.is_dry_run() else self.verdict(p, size)
            if verdict is None:
                continue

            # a measured ratio: judged in the performance stage against
            # peer_outlier_fraction (or the reference file)
            name = metric_name(p, size, 'peer_bandwidth_ratio')
            pv[name] = self.peer_ratio(p, size)
            add_bounds(self, {name: (self.peer_outlier_fraction, 0,
                                            None, 'x')})
            if verdict[1]:
                suspects.append(f'suspect link/node for {p.name} {size} B: '
                                + '; '.join(verdict[1]))

        for line in suspects:
            self.logger.info(f'{self.display_name}: {line}')

        self.perf_variables = pv
