"""Generic base of the OSU Micro-Benchmarks checks (OMB 7.x, MPI).

One test = one OSU program x one sweep point. Each program is run with an
explicit size range (``-m 1:<max>``), so that the parser can tell a
complete table from one cut short (OSU prints no end marker).
"""

import re

import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (fixture, performance_function, run_after,
                                   run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.parsers import parse_osu
from clustergate.rfm.families.thirdparty import (OsuBinaries, ThirdPartyTest,
                                                 pair_or_more)


#: What an OSU program prints (on rank 0's stderr) before it exits without
#: measuring: "This test requires exactly two processes", "... at least
#: two processes"
_REFUSAL_RE = re.compile(r'^(This test requires .+?)\s*$', re.M)


def osu_refusal(text):
    """OSU's own reason for not running, as it printed it, or None."""
    found = _REFUSAL_RE.search(text)
    return found.group(1) if found else None


#: The title each program prints (``# OSU MPI <title> Test v7.4``): the
#: output is that program's
TITLES = {
    'osu_latency': 'Latency',
    'osu_bw': 'Bandwidth',
    'osu_bibw': 'Bi-Directional Bandwidth',
    'osu_mbw_mr': 'Multiple Bandwidth / Message Rate',
    'osu_barrier': 'Barrier Latency',
    'osu_bcast': 'Broadcast Latency',
    'osu_allreduce': 'Allreduce Latency',
    'osu_alltoall': 'All-to-All Personalized Exchange Latency',
}


class OsuTest(ThirdPartyTest):
    """Runs one OSU program.

    Performance variables, by kind:

    * ``latency`` (osu_latency): ``latency_8B`` (us) and ``latency_max``
      (us at the largest size);
    * ``bandwidth`` (osu_bw, osu_bibw): ``bandwidth`` (MB/s at the largest
      size; OSU's MB/s is 10^6 B/s);
    * ``mbw_mr`` (osu_mbw_mr): ``bandwidth`` (MB/s, at the largest size)
      and ``message_rate`` (messages/s, at the smallest size, 1 B);
    * ``barrier``: ``latency`` (us);
    * ``collective`` (osu_bcast, osu_allreduce, osu_alltoall):
      ``latency_8B`` and ``latency_max`` (us).
    """

    family = 'osu'
    binaries = fixture(OsuBinaries, scope='environment')
    time_limit = '15m'
    #: the program is a tag too
    tag_attribute = 'program'

    #: Program name (osu_latency, ...): subclasses
    program = variable(str, loggable=True)

    #: latency, bandwidth, mbw_mr, barrier or collective: subclasses
    kind = variable(str)

    #: Largest message size (bytes), passed as ``-m 1:<max>``; OSU's
    #: defaults: 4 MiB for point-to-point, 1 MiB for collectives
    max_size = variable(int, type(None), value=None)

    #: Extra options (e.g. ['-i', '1000'])
    osu_opts = variable(typ.List[str], value=[])

    @run_after('init')
    def set_point(self):
        """latency and bandwidth run between exactly 2 ranks, the other
        kinds on 2 or more."""
        self.sweep_requirements = pair_or_more(
            self.kind in ('latency', 'bandwidth'))
        if self.max_size is None and self.kind != 'barrier':
            self.max_size = (1 << 20 if self.kind == 'collective'
                             else 1 << 22)

        self.descr = f'OSU {self.program} on {self.point_words()}'

    def point_reason(self, partition, mpi_family):
        reason = super().point_reason(partition, mpi_family)
        ranks = self.sweep_point().ranks
        if reason is None and self.kind == 'mbw_mr' and ranks % 2:
            reason = f'{self.program} pairs ranks: {ranks} ranks is odd'

        return reason

    def binary_name(self):
        return self.program

    @run_before('run')
    def set_options(self):
        opts = []
        if self.max_size:
            opts += ['-m', f'1:{self.max_size}']

        self.executable_opts = opts + list(self.osu_opts)

    def parse(self, text):
        return parse_osu(text, max_size=self.max_size or None)

    def check_output(self, text):
        """OSU's own refusal first (it prints it on stderr and exits, and
        the table is empty or missing), quoted with the layout the job
        had; then the output itself."""
        refusal = osu_refusal(f'{text}\n{self.stderr_text()}')
        if refusal:
            raise SanityError(
                f'{self.program} refused to run: {refusal!r} (the job '
                f'had {self.num_tasks} rank(s) on {self.num_nodes} '
                f'node(s))')

        return super().check_output(text)

    def check(self, result):
        title = TITLES.get(self.program)
        if title and result.benchmark != title:
            raise SanityError(f'output is OSU {result.benchmark}, not '
                              f'{self.program} (OSU {title})')

        if result.validated is False:
            raise SanityError(f'OSU {result.benchmark}: data validation '
                              f'failed: {"; ".join(result.messages)}')

        if self.kind == 'mbw_mr' and self.num_tasks and \
                result.pairs not in (None, self.num_tasks // 2):
            raise SanityError(f'{self.program} ran {result.pairs} pairs, '
                              f'expected {self.num_tasks // 2}')

    # -- performance ------------------------------------------------------

    def value_at(self, size, key=None):
        res = self.parsed()
        if self.kind == 'barrier':
            return res.value

        if size is None:
            return res.rows[-1][key or res.metric]

        table = res.by_size(key)
        if size not in table:
            raise SanityError(f'OSU {res.benchmark} table has no row for '
                              f'{size} bytes')
        return table[size]

    @performance_function('us')
    def latency_at(self, size=None):
        return sn.defer(self.value_at(size))

    @performance_function('MB/s')
    def bandwidth_at(self, size=None):
        return sn.defer(self.value_at(size))

    @performance_function('msg/s')
    def message_rate(self):
        # a message rate means small messages: the smallest size of the
        # table (1 B), not the last row (4 MiB: a bandwidth in disguise)
        res = self.parsed()
        return sn.defer(res.rows[0]['messages_per_s'])

    @run_before('performance')
    def set_perf_variables(self):
        if self.kind == 'barrier':
            self.perf_variables = {'latency': self.latency_at()}
        elif self.kind in ('latency', 'collective'):
            self.perf_variables = {'latency_8B': self.latency_at(8),
                                   'latency_max': self.latency_at()}
        elif self.kind == 'mbw_mr':
            self.perf_variables = {'bandwidth': self.bandwidth_at(),
                                   'message_rate': self.message_rate()}
        else:
            self.perf_variables = {'bandwidth': self.bandwidth_at()}
