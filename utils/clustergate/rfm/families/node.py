"""Generic base tests of the node-level programs: cg_memory (memory access
under contention), cg_memlat (latency per cache level) and cg_noise (OS
noise). See docs/reports/node-tests.md.

Every program measures, in one job, with 1 active rank per node and with
all ``ppn`` ranks active; the ``ratio`` performance variables (k ppn /
1 ppn) need no reference to be meaningful (1.0 = the k-th process costs
nothing). Absolute values are reported too, for references.

Each test has a ``scale``, one per mode
(:attr:`NodeProgramTest.mode_selection`): ``small`` for ci, ``nightly``
and ``full`` (acceptance: the whole space). The nightly scale keeps the
points that tell a regression and fit a night (docs/reports/nightly-budget.md):
one job per node at its full ppn (that job measures 1 active rank and
all ranks: the single-rank figures and the ratio), the strides and memory
levels that bracket the access regimes; the acceptance keeps every stride,
size and ppn. Sanity and figures are the same at every scale.
"""

import dataclasses

import reframe.utility.sanity as sn
from reframe.core.builtins import (parameter, performance_function,
                                   run_after, run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.rfm.families.cgprogram import CgProgramTest
from clustergate.site.partition import partition_model

#: Every stride of the classic experiment
ALL_STRIDES = list(range(1, 18))
#: Strides of the small (ci) and nightly runs: sequential (1), half and
#: quarter of each cache line used (2, 4), one line per access (8) and an
#: odd stride over two lines (17). The strides 3, 5-7 and 9-16 repeat
#: those regimes: neighbours differed by a median 15 % in bandwidth while
#: one figure varied 2.3-13x (median 5-6x) between 5 healthy full runs on
#: the busy 2-core localhost (docs/reports/nightly-budget.md), and they took 80 %
#: of the kernels' time (the larger the stride, the slower the sweep)
CI_STRIDES = [1, 2, 4, 8, 17]
#: Memory levels cg_memlat may report, nearest first
LEVELS = ('L1', 'L2', 'L3', 'L4', 'DRAM')


def node_interconnects(partitions):
    """Interconnects of scope 'node' of the ``(name, extras)`` partitions
    (the memory tests do not use the network: one point per nodes x ppn is
    enough); the first interconnect if there is none."""
    names, first = [], None
    for pname, extras in partitions:
        ics = partition_model(extras, pname).interconnects
        for name, ic in ics.items():
            first = first or name
            if ic.scope == 'node' and name not in names:
                names.append(name)

    return names or [first or 'shm']


class NodeProgramTest(CgProgramTest):
    """Runs one of our node-level programs at one sweep point."""

    #: small: ci; nightly: the nightly's points; full: acceptance
    scale = parameter(['small', 'nightly', 'full'], loggable=True)

    # The kernels do not depend on the MPI: run them once, with the
    # environment the site marks as its primary one
    valid_prog_environs = ['+mpi +primary']
    time_limit = '20m'

    mode_selection = {'ci': {'scale': {'small'}},
                      'nightly': {'scale': {'nightly'}},
                      'acceptance': {'scale': {'full'}}}

    @classmethod
    def system_parameters(cls, partitions):
        # node-level: only node-scope interconnects (shared memory)
        return {**super().system_parameters(partitions),
                'interconnect': node_interconnects(partitions)}

    def tag_names(self):
        return {'node', self.program}

    # before capable.keep_capable_points (PointTest, always_last), which
    # judges the point with these requirements
    @run_after('init')
    def nightly_at_full_node(self):
        """The nightly runs each node program once per node, at the
        partition's largest ppn: the same job measures with 1 active rank
        and with all, so a run at fewer ppn repeats its single-rank
        figures (on localhost the 1-ppn jobs were 27 % of the node checks'
        time); the acceptance keeps every ppn (the shape of the ratio)."""
        if self.scale == 'nightly':
            self.sweep_requirements = dataclasses.replace(
                self.sweep_requirements, full_node=True)

    @run_after('init')
    def set_descr(self):
        self.descr = (f'{self.program} ({self.scale}) on {self.num_nodes} '
                      f'node(s) x {self.ppn} ppn')

    def program_options(self):
        """Options of the program (subclasses)."""
        return []

    @run_before('run')
    def set_command(self):
        self.executable = self.program_path()
        self.executable_opts = self.program_options()

    def check_run(self, run):
        self.check_program(run)

    def check_program(self, run):
        """Program-specific sanity (subclasses)."""

    @staticmethod
    def value(lines, key, what):
        values = [m[key] for m in lines if m.get(key) is not None]
        if not values:
            raise SanityError(f'no {key} for {what} in the output')

        return values[0]


class MemoryTest(NodeProgramTest):
    """cg_memory: one kernel over the strides (or random order).

    Performance variables per stride ``s``: ``ratio_s<s>`` (time with all
    ppn ranks active / with 1 active), ``bw_s<s>`` (MB/s of the elements
    touched with all ranks active, per rank) and ``bw1_s<s>`` (1 active),
    plus ``ratio_max`` (worst stride). Random kernels have ``ratio``,
    ``bw``, ``bw1``.
    """

    program = 'cg_memory'
    # kernel: a parameter of the subclasses (read, write, ..., rand_read)
    random_order = variable(bool, value=False)

    #: Array per rank; None = program default (2x LLC, >= 64 MiB). Sizes
    #: as every C program reads them: K/M/G = 10^3/10^6/10^9, Ki/Mi/Gi = 2^10..
    array_bytes = variable(str, type(None), value=None)

    def strides(self):
        if self.random_order:
            return []

        return ALL_STRIDES if self.scale == 'full' else CI_STRIDES

    def program_options(self):
        opts = ['--kernels', self.kernel]
        if self.strides():
            opts += ['--strides', ','.join(map(str, self.strides()))]

        opts += ['--trials', '4' if self.scale == 'small' else '6']
        if self.array_bytes:
            opts += ['--array-bytes', self.array_bytes]

        return opts

    def lines(self, run, stride, active):
        return [m for m in run.select(self.kernel)
                if m.fields.get('stride') == stride and
                m.get('active_ppn') == active]

    def check_program(self, run):
        for s in (self.strides() or [None]):
            where = (f'{self.kernel}' if s is None
                     else f'{self.kernel} stride {s}')
            if not self.lines(run, s, 1):
                raise SanityError(f'no 1-active-rank measurement of {where}')

            k = self.lines(run, s, self.ppn)
            if self.ppn > 1 and not k:
                raise SanityError(f'no {self.ppn}-active-ranks measurement '
                                  f'of {where}')

            lines = k or self.lines(run, s, 1)
            if self.ppn > 1 and lines[-1].get('ratio') is None:
                raise SanityError(f'no ratio for {where}')

    def _pick(self, stride, key, active_all):
        run = self._run()
        active = self.ppn if active_all else 1
        lines = self.lines(run, stride, active)
        if active_all and len(lines) > 1:
            lines = lines[-1:]       # at ppn=1 both lines have active_ppn=1

        if not active_all:
            lines = lines[:1]

        return self.value(lines, key, f'{self.kernel} stride {stride}')

    @performance_function('x')
    def ratio_of(self, stride=None):
        return sn.defer(self._pick(stride, 'ratio', True))

    @performance_function('MB/s')
    def bw_of(self, stride=None, active_all=True):
        return sn.defer(self._pick(stride, 'bw_MBps', active_all))

    @performance_function('x')
    def ratio_max(self):
        return sn.defer(max(self._pick(s, 'ratio', True)
                            for s in self.strides()))

    @run_before('performance')
    def set_perf_variables(self):
        pv = {}
        if self.random_order:
            pv = {'ratio': self.ratio_of(None), 'bw': self.bw_of(None),
                  'bw1': self.bw_of(None, False)}
        else:
            for s in self.strides():
                pv[f'ratio_s{s}'] = self.ratio_of(s)
                pv[f'bw_s{s}'] = self.bw_of(s)
                pv[f'bw1_s{s}'] = self.bw_of(s, False)

            pv['ratio_max'] = self.ratio_max()

        self.perf_variables = pv


class MemoryLatencyTest(NodeProgramTest):
    """cg_memlat: ns per access for each level (L1, L2, L3..., DRAM) with
    1 rank per node (``lat_<level>``), all ranks at once at the level's
    largest size (``lat_<level>_k``) and their ``ratio_<level>``.

    ``step_<level>``: the level's latency over the latency of the level
    below it (L2 over L1, L3 over L2, DRAM over L3, or over L2 where there
    is no L3). Distinct levels give steps well above 1; a step at or below
    1 (DRAM measured faster than L3) is noise on a busy machine or a
    shared cache, judged against a reference like any other number (see
    docs/reports/node-tests.md for the bound to use), never a sanity failure.

    Sanity: the curve was measured and has the expected levels."""

    program = 'cg_memlat'

    #: Largest working set of the curve: 'auto' (6x the last-level cache,
    #: at least 256 MiB: DRAM starts at 4x the LLC) or a size, binary
    #: 'Mi' so that the power-of-two working sets reach it
    max_bytes = variable(str, value='auto')

    #: Levels expected (checked against the output)
    expected_levels = variable(list, value=['L1', 'L2', 'DRAM'])

    def program_options(self):
        opts = ['--max-bytes', self.max_bytes]
        if self.scale == 'small':
            opts += ['--trials', '4', '--accesses', str(1 << 19)]

        # ci and nightly: only the working sets the level figures read
        # (inside a level, DRAM at its smallest size): the transitions
        # between levels and the larger DRAM sizes were 3/4 of the run
        # (cg_memlat.c); behind a 300 MiB LLC, 2 ranks, the whole curve
        # took 43 s and these sizes 24 s
        if self.scale in ('small', 'nightly'):
            opts += ['--levels-only']

        return opts

    def levels(self, run):
        return {m['level']: m for m in run.select('memlat_level')}

    def check_program(self, run):
        if not run.select('memlat'):
            raise SanityError('no latency curve (memlat lines) in the output')

        levels = self.levels(run)
        missing = [lv for lv in self.expected_levels if lv not in levels]
        if missing:
            raise SanityError(f'cache level(s) {", ".join(missing)} not '
                              f'measured (raise max_bytes for DRAM?)')

    def _level(self, level, key):
        lines = [m for m in self._run().select('memlat_level')
                 if m['level'] == level]
        return self.value(lines, key, f'level {level}')

    @performance_function('ns')
    def level_ns(self, level='L1', key='ns'):
        return sn.defer(self._level(level, key))

    @performance_function('x')
    def level_ratio(self, level='L1'):
        return sn.defer(self._level(level, 'ratio'))

    @performance_function('x')
    def level_step(self, level='L2', below='L1'):
        return sn.defer(self._level(level, 'ns') / self._level(below, 'ns'))

    @run_before('performance')
    def set_perf_variables(self):
        pv = {}
        for lv in ('L1', 'L2', 'L3', 'DRAM'):
            pv[f'lat_{lv}'] = self.level_ns(lv)
            pv[f'lat_{lv}_k'] = self.level_ns(lv, 'ns_k')
            pv[f'ratio_{lv}'] = self.level_ratio(lv)

        # the steps exist for the levels measured (none in a dry run)
        measured = {} if self.is_dry_run() else self.levels(self._run())
        order = [lv for lv in LEVELS if lv in measured]
        for below, level in zip(order, order[1:]):
            pv[f'step_{level}'] = self.level_step(level, below)

        self.perf_variables = pv


class NoiseTest(NodeProgramTest):
    """cg_noise: slowdown (mean/min - 1) of a fixed work quantum with 1 and
    with all ranks per node active, the quantum percentiles and the worst
    quantum, the ratio of mean quanta (k / 1) and the bulk-synchronous
    slowdown. Noise on a shared machine is what it is: no bound unless a
    reference is configured."""

    program = 'cg_noise'
    seconds = variable(float, value=2.0)
    quantum_us = variable(float, value=50.0)

    def program_options(self):
        secs = 1.0 if self.scale == 'small' else self.seconds
        return ['--seconds', str(secs), '--quantum-us', str(self.quantum_us)]

    def phase(self, run, active):
        lines = [m for m in run.select('noise')
                 if m.get('active_ppn') == active]
        return lines[-1:] if active == self.ppn else lines[:1]

    def check_program(self, run):
        if not self.phase(run, 1):
            raise SanityError('no noise measurement with 1 active rank')

        if not self.phase(run, self.ppn):
            raise SanityError(f'no noise measurement with {self.ppn} active '
                              f'ranks')

        if not run.select('noise_bsp'):
            raise SanityError('no bulk-synchronous (noise_bsp) measurement')

        for m in run.select('noise'):
            if m.get('slowdown') is None or m['slowdown'] < 0:
                raise SanityError(f'bad slowdown {m.get("slowdown")!r}: the '
                                  f'mean quantum cannot beat the minimum')

    def _v(self, active, key, pattern='noise'):
        run = self._run()
        lines = (self.phase(run, active) if pattern == 'noise'
                 else run.select(pattern))
        return self.value(lines, key, f'{pattern} with {active} active')

    @performance_function('x')
    def noise_value(self, active=1, key='slowdown', pattern='noise'):
        return sn.defer(self._v(active, key, pattern))

    @performance_function('us')
    def noise_us(self, active=1, key='p99_us'):
        return sn.defer(self._v(active, key))

    @run_before('performance')
    def set_perf_variables(self):
        k = self.ppn
        self.perf_variables = {
            'slowdown_1': self.noise_value(1, 'slowdown'),
            'slowdown_k': self.noise_value(k, 'slowdown'),
            'ratio': self.noise_value(k, 'ratio'),
            'p99_us': self.noise_us(k, 'p99_us'),
            'p99_9_us': self.noise_us(k, 'p99_9_us'),
            'worst_us': self.noise_us(k, 'worst_us'),
            'quantum_min_us': self.noise_us(k, 'min_us'),
            'bsp_slowdown': self.noise_value(k, 'bsp_slowdown', 'noise_bsp'),
        }
