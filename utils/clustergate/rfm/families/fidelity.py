"""Fidelity of our own ping-pong against IMB PingPong.

Our cg_contention (built by the CgProgramsBuild fixture with ``mpigcc``,
i.e. against the very Intel MPI that ships IMB-MPI1) and IMB PingPong run
in one job: same environment, transport variables and placement. The check
fails (in the performance stage: ``latency_ratio``, ``bandwidth_ratio``
bounded at 1 +- ``tolerance`` unless the reference file says otherwise)
when our 8 B latency or 1 MB (10^6 B) bandwidth is more than
``tolerance`` away from IMB's.

Like for like: by default our harness times *one* round trip per trial,
between barriers, after flushing the caches, and keeps the mean of 50
trials: a cold, single-shot figure, which is what the contention patterns
need. IMB loops many repetitions back to back on a warm buffer (1000 at
8 B, ~40 at 1 MB) and divides. So this check runs ours with ``--reps``
equal to IMB's repetition count at each size (one back-to-back loop per
trial, divided by the count, as IMB does) and ``--flush-bytes 64`` (no
cache flush to speak of: IMB does not flush by default). IMB is run on
exactly the same two sizes (``-msglen``), 8 and 1000000 bytes, the
studies' "1 MB" (1 KB = 1000 B), rather than IMB's 1 MiB row.

On a shared machine a trial now and then loses the CPU for milliseconds:
our figure is the *median* of the trials (``med_us``; bandwidth = bytes /
median time). The runs are interleaved in ``rounds`` (3: ours 8 B, ours
1 MB, IMB), so both sides sample the same periods of the machine's load,
and the verdict is on the median over rounds of the *paired* ratio (ours
/ IMB of the same round): a 2-core VM drifts between regimes (8 B over
loopback TCP: 4.5 us in one round, 5.9 us in the next, on both sides),
and comparing medians taken independently could pair one side's fast
round with the other's slow one (seen: -22.7% from rounds that agreed
within 0.5%, 10% and 25%). The reported figures are the medians over
rounds. On a quiet machine mean and median agree.
"""

import os
import statistics

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, performance_function, run_after,
                                   run_before, sanity_function, variable)
from reframe.core.exceptions import SanityError

from clustergate.site import benchmarks
from clustergate.parsers import cgoutput
from clustergate.site import sweep
from clustergate.parsers import ParseError, parse_imb
from clustergate.rfm.point import joboutput, modes
from clustergate.rfm.point.reference import add_bounds
from clustergate.rfm.families.build import CgProgramsBuild
from clustergate.rfm.point.base import PointTest
from clustergate.rfm.families.thirdparty import ImbBinaries

LAT_BYTES = 8
BW_BYTES = 1000000


def compare(ours, imb, tolerance, ratios=None):
    """Relative differences and the list of violations.

    ``ours``/``imb``: dicts with ``latency_8B`` (us) and ``bandwidth_1MB``
    (MB/s). Returns ``(diffs, problems)``; ``diffs[k] = ours/imb - 1``, or
    ``ratios[k] - 1`` when the paired ratios are given.
    """
    diffs, problems = {}, []
    for key, unit in (('latency_8B', 'us'), ('bandwidth_1MB', 'MB/s')):
        if not imb[key]:
            problems.append(f'IMB {key} is 0: cannot compare')
            continue

        paired = ratios is not None and key in ratios
        diffs[key] = (ratios[key] if paired else ours[key] / imb[key]) - 1
        if abs(diffs[key]) > tolerance:
            how = ', median of the rounds\' ratios' if paired else ''
            problems.append(f'{key}: ours {ours[key]:.3f} {unit} vs IMB '
                            f'{imb[key]:.3f} {unit} ({diffs[key]:+.1%}{how}, '
                            f'limit +-{tolerance:.0%})')

    return diffs, problems


def inconclusive(imb_rounds, ratios, tolerance):
    """Why the comparison cannot be judged, or None.

    ``imb_rounds``: per key (``latency_8B``, ``bandwidth_1MB``) IMB's
    figure of each round; ``ratios``: ours/IMB per key. A ratio outside
    1 +- ``tolerance`` is a verdict only if the reference instrument
    itself held still: when IMB's own rounds differ by more than the
    tolerance (max/min - 1), the machine moved more than the check can
    resolve, and the gap between the two instruments is that noise (seen
    on the emulated cluster at load 10-12: IMB 8 B 37-104 us between
    back-to-back rounds, ours 28-181 us, ratio 0.36x). IMB, not ours, is
    the judge of the noise: a harness of ours that scatters while IMB
    holds still is a fault of ours, and still fails."""
    noisy = []
    for key, ratio in ratios.items():
        if abs(ratio - 1) <= tolerance:
            continue

        values = imb_rounds.get(key) or []
        spread = (max(values) / min(values) - 1
                  if len(values) > 1 and min(values) > 0 else 0.0)
        if spread <= tolerance:
            return None

        noisy.append(f'{key} ours/IMB {ratio:.2f}x while IMB\'s own '
                     f'{len(values)} rounds spread {spread:.0%}')

    if not noisy:
        return None

    return ('inconclusive: ' + '; '.join(noisy) + f', more than the '
            f'+-{tolerance:.0%} this comparison resolves (the machine was '
            f'too busy to compare the two instruments)')


def _imb_rounds(texts):
    """([8 B latency us], [1 MB bandwidth MB/s]) of IMB's PingPong, one
    per round; SanityError naming the round of an incomplete output."""
    lat, bw = [], []
    for n, text in enumerate(texts, 1):
        try:
            block = parse_imb(text).block('PingPong', 2)
        except ParseError as err:
            raise SanityError(f'IMB (run {n}): {err}') from None
        except KeyError as err:
            raise SanityError(f'IMB (run {n}): {err.args[0]}') from None

        rows = {r['bytes']: r for r in block.rows}
        for size in (LAT_BYTES, BW_BYTES):
            if size not in rows:
                raise SanityError(f'IMB PingPong (run {n}) has no '
                                  f'{size} B row')

        lat.append(rows[LAT_BYTES]['t_usec'])
        bw.append(rows[BW_BYTES]['mbytes_per_sec'])

    return lat, bw


def _our_rounds(texts, size, key):
    """Our ping-pong at ``size`` per round: the median one-way time (us)
    for latency_8B, MB/s (bytes / us) for bandwidth_1MB."""
    values = []
    for n, text in enumerate(texts, 1):
        try:
            run = cgoutput.parse(text)
            cgoutput.verify(run, program='cg_contention', pattern='pingpong')
        except cgoutput.OutputError as err:
            raise SanityError(f'our ping-pong ({size} B, run {n}): '
                              f'{err}') from None

        lines = [m for m in run.select('pingpong') if m['bytes'] == size]
        if not lines or not lines[0].get('med_us'):
            raise SanityError(f'our ping-pong (run {n}) has no med_us at '
                              f'{size} B')

        med = lines[0]['med_us']
        values.append(med if key == 'latency_8B' else size / med)

    return values


class PingPongFidelity(PointTest, rfm.RunOnlyRegressionTest):
    """Our ping-pong vs IMB PingPong, 2 ranks, same MPI and transport.

    Performance variables: ``ours_latency_8B``, ``imb_latency_8B`` (us),
    ``ours_bandwidth_1MB``, ``imb_bandwidth_1MB`` (MB/s) and the ratios
    ``latency_ratio``/``bandwidth_ratio`` (ours/IMB).
    """

    #: Largest accepted relative difference
    tolerance = variable(float, value=0.15, loggable=True)

    #: Trials of our harness per size (the first is dropped)
    trials = variable(int, value=21, loggable=True)

    #: Our repetitions per trial at 8 B and at 1 MB: IMB's counts
    reps_8B = variable(int, value=1000, loggable=True)
    reps_1MB = variable(int, value=40, loggable=True)

    #: Rounds of (ours 8 B, ours 1 MB, IMB); the median round counts
    rounds = variable(int, value=3, loggable=True)

    programs = fixture(CgProgramsBuild, scope='environment')
    binaries = fixture(ImbBinaries, scope='environment')

    valid_systems = ['+mpi']
    valid_prog_environs = ['+intelmpi']
    sweep_requirements = sweep.Requirements(
        min_ranks=2, max_ranks=2, mpi_families=('intelmpi',))
    time_limit = '10m'
    maintainers = ['clustergate']

    # Acceptance only: it validates the instrument (our harness against
    # IMB) once per system and MPI, it does not watch the system. On a
    # 2-core VM IMB alone varies by 2x between back-to-back runs (1 MB over
    # shm: 590..2961 MB/s; 8 B over shm 0.14 then 0.37 us on a quiet
    # machine), so a nightly 15% verdict there is noise.
    mode_selection = modes.ACCEPTANCE_ONLY

    def tag_names(self):
        return {'fidelity', 'imb'}

    @run_after('init')
    def set_descr(self):
        self.descr = f'ping-pong fidelity vs IMB on {self.point_words()}'

    @run_before('run')
    def set_commands(self):
        src = self.binaries.bench_source
        reason = benchmarks.why_binary_missing(src, 'IMB-MPI1')
        if reason and not self.is_dry_run():
            self.skip(reason)

        # the launcher line is needed for the extra commands: fill the job
        # the way run() will
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        launch = self.job.launcher.run_command(self.job)
        ours = self.programs.path('cg_contention')
        common = (f'--patterns pingpong --trials {self.trials} '
                  f'--flush-bytes 64')
        imb = benchmarks.expected_binary(src, 'IMB-MPI1')
        # rounds interleaved (ours 8 B, ours 1 MB, IMB), so that both sides
        # see the same share of whatever else runs on the machine; the
        # last IMB run is the job's stdout
        self.prerun_cmds = [
            f'printf "{LAT_BYTES}\\n{BW_BYTES}\\n" > imb_msglen.txt']
        for i in range(1, self.rounds + 1):
            self.prerun_cmds += [
                f'{launch} {ours} {common} --sizes {LAT_BYTES} '
                f'--reps {self.reps_8B} > ours_8B_{i}.out',
                f'{launch} {ours} {common} --sizes {BW_BYTES} '
                f'--reps {self.reps_1MB} > ours_1MB_{i}.out',
            ]
            if i < self.rounds:
                self.prerun_cmds.append(f'{launch} {imb} PingPong -msglen '
                                        f'imb_msglen.txt > imb_{i}.out')

        self.executable = benchmarks.expected_binary(src, 'IMB-MPI1')
        self.executable_opts = ['PingPong', '-msglen', 'imb_msglen.txt']
        self.keep_files = [f'{what}_{i}.out'
                           for i in range(1, self.rounds + 1)
                           for what in ('ours_8B', 'ours_1MB', 'imb')
                           if what != 'imb' or i < self.rounds]

    # -- output -----------------------------------------------------------

    def _read(self, name):
        path = os.path.join(self.stagedir, name)
        try:
            with open(path) as fp:
                return fp.read()
        except OSError as err:
            raise SanityError(f'cannot read {name}: {err.strerror}') from None

    def figures(self, imb_texts, ours_8B_texts, ours_1MB_texts):
        """``(ours, imb, ratios)`` from the outputs (each argument: one
        text or a list, one per round): ``ours``/``imb`` the medians over
        rounds, ``ratios`` the median of the per-round ours/IMB ratios
        (of the medians when the round counts differ); SanityError with
        the cause if one output is incomplete."""
        def as_list(t):
            return [t] if isinstance(t, str) else list(t)

        lat, bw = _imb_rounds(as_list(imb_texts))
        imb_rounds = {'latency_8B': lat, 'bandwidth_1MB': bw}
        self.imb_rounds = imb_rounds
        imb = {k: statistics.median(v) for k, v in imb_rounds.items()}

        ours, ratios = {}, {}
        for texts, size, key in (
                (as_list(ours_8B_texts), LAT_BYTES, 'latency_8B'),
                (as_list(ours_1MB_texts), BW_BYTES, 'bandwidth_1MB')):
            values = _our_rounds(texts, size, key)
            ours[key] = statistics.median(values)
            if len(values) == len(imb_rounds[key]):
                ratios[key] = statistics.median(
                    o / i for o, i in zip(values, imb_rounds[key]))
            else:
                ratios[key] = ours[key] / imb[key]

        return ours, imb, ratios

    def _figures(self):
        n = self.rounds
        imb = [self._read(f'imb_{i}.out') for i in range(1, n)] + [
            self._read(str(self.stdout))]
        return self.figures(
            imb, [self._read(f'ours_8B_{i}.out') for i in range(1, n + 1)],
            [self._read(f'ours_1MB_{i}.out') for i in range(1, n + 1)])

    def check_figures(self, ours, imb, ratios=None):
        """Log where our ping-pong disagrees with IMB; the verdict is the
        performance stage's (``latency_ratio``/``bandwidth_ratio`` within
        1 +- ``tolerance``), not sanity: a measured ratio is a number."""
        _, problems = compare(ours, imb, self.tolerance, ratios)
        if problems:
            self.logger.info(f'{self.display_name}: our ping-pong disagrees '
                             f'with IMB over {self.interconnect}: '
                             + '; '.join(problems))

        return True

    @sanity_function
    def validate(self):
        # sanity: every output is complete and has the figures
        return sn.defer(self.check_not_ended() and
                        self.check_figures(*self._figures()) and
                        joboutput.check_not_cancelled(self))

    def ratio_bounds(self):
        """The documented bound of the ratios: 1 +- ``tolerance``."""
        tol = self.tolerance
        return {'latency_ratio': (1.0, -tol, tol, 'x'),
                'bandwidth_ratio': (1.0, -tol, tol, 'x')}

    @run_before('performance')
    def bound_the_ratios(self):
        add_bounds(self, self.ratio_bounds())

    @run_before('performance')
    def skip_when_inconclusive(self):
        """A gap no larger than IMB's own round-to-round noise is not a
        verdict on our harness: skipped with the figures as the reason
        (see :func:`inconclusive`)."""
        if self.is_dry_run():
            return

        _, _, ratios = self._figures()
        why = inconclusive(self.imb_rounds, ratios, self.tolerance)
        if why:
            self.skip(why)

    # -- performance ------------------------------------------------------

    @performance_function('us')
    def latency(self, which='ours'):
        ours, imb, _ = self._figures()
        return sn.defer((ours if which == 'ours' else imb)['latency_8B'])

    @performance_function('MB/s')
    def bandwidth(self, which='ours'):
        ours, imb, _ = self._figures()
        return sn.defer((ours if which == 'ours' else imb)['bandwidth_1MB'])

    @performance_function('x')
    def ratio(self, key='latency_8B'):
        return sn.defer(self._figures()[2][key])

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {
            'ours_latency_8B': self.latency('ours'),
            'imb_latency_8B': self.latency('imb'),
            'ours_bandwidth_1MB': self.bandwidth('ours'),
            'imb_bandwidth_1MB': self.bandwidth('imb'),
            'latency_ratio': self.ratio('latency_8B'),
            'bandwidth_ratio': self.ratio('bandwidth_1MB'),
        }
