"""Generic base of the Intel MPI Benchmarks checks (IMB-MPI1 2021.x).

One test = one IMB benchmark x one sweep point. The whole IMB table is
kept in the test's stdout (copied to the output directory); the perf
variables are the figures the studies quote.
"""

import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (fixture, performance_function, run_after,
                                   run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate.parsers import parse_imb
from clustergate.rfm.families.thirdparty import (ImbBinaries, ThirdPartyTest,
                                                 pair_or_more)

#: Latencies reported by every sized benchmark (bytes)
SMALL_SIZES = (0, 8)


class ImbTest(ThirdPartyTest):
    """Runs ``IMB-MPI1 <benchmark>``.

    Performance variables, by kind of benchmark:

    * ``pt2pt`` (PingPong, PingPing): ``latency_0B``, ``latency_8B`` (us,
      ``t[usec]``) and ``bandwidth`` (MB/s = 10^6 B/s, at the largest size);
    * ``exchange`` (Sendrecv, Exchange): ``latency_0B``/``latency_8B`` from
      ``t_avg[usec]`` and ``bandwidth`` at the largest size;
    * ``collective`` (Allreduce, Alltoall): ``latency_8B`` and
      ``latency_max`` (``t_avg[usec]`` at 8 B and at the largest size;
      Allreduce starts at 4 B: one float);
    * ``barrier``: ``latency`` (``t_avg[usec]``).
    """

    family = 'imb'

    #: IMB benchmark name, as IMB-MPI1 spells it (subclasses)
    benchmark = variable(str, loggable=True)

    #: pt2pt, exchange, collective or barrier (subclasses)
    kind = variable(str)

    #: Extra IMB-MPI1 options (e.g. ['-msglog', '0:20'] for a quicker run)
    imb_opts = variable(typ.List[str], value=[])

    binaries = fixture(ImbBinaries, scope='environment')

    time_limit = '15m'

    #: the benchmark is a tag too
    tag_attribute = 'benchmark'

    @run_after('init')
    def set_point(self):
        """pt2pt benchmarks run between exactly 2 ranks, the others on 2
        or more."""
        self.sweep_requirements = pair_or_more(self.kind == 'pt2pt')
        self.descr = f'IMB {self.benchmark} on {self.point_words()}'

    def binary_name(self):
        return 'IMB-MPI1'

    @run_before('run')
    def set_options(self):
        opts = [self.benchmark]
        if self.kind in ('collective', 'barrier', 'exchange'):
            # only at the full count, not again at 2, 4, ... processes
            opts += ['-npmin', str(self.num_tasks)]

        self.executable_opts = opts + list(self.imb_opts)

    def parse(self, text):
        return parse_imb(text)

    def expected_processes(self):
        return 2 if self.kind == 'pt2pt' else (self.num_tasks or None)

    def block_of(self, result):
        try:
            return result.block(self.benchmark, self.expected_processes())
        except KeyError as err:
            raise SanityError(err.args[0]) from None

    def check(self, result):
        block = self.block_of(result)
        if self.kind != 'barrier' and 'bytes' not in block.columns:
            raise SanityError(f'IMB {self.benchmark} table has no #bytes '
                              f'column: {block.columns}')

        if block.timed_out_at is not None:
            # the largest size was never measured: no figure to judge
            last = block.rows[-1].get('bytes')
            raise SanityError(
                f'IMB {self.benchmark} ({block.processes} processes) gave up '
                f'at {block.timed_out_at} B: its time limit ran out '
                f'(measured up to {last} B, last t = '
                f'{block.rows[-1][self._time_key(block)]} us); the network '
                f'or the nodes are far too slow, or raise the limit with '
                f'imb_opts = ["-time", "<seconds>"]')

    # -- performance ------------------------------------------------------

    def _time_key(self, block):
        return 't_usec' if 't_usec' in block.columns else 't_avg_usec'

    def value_at(self, size, key=None):
        block = self.block_of(self.parsed())
        if size is None:
            row = block.rows[-1]
        else:
            rows = [r for r in block.rows if r.get('bytes') == size]
            if not rows:
                raise SanityError(f'IMB {self.benchmark} table has no row '
                                  f'for {size} bytes')
            row = rows[0]

        return row[key or self._time_key(block)]

    @performance_function('us')
    def latency_at(self, size=None):
        return sn.defer(self.value_at(size))

    @performance_function('MB/s')
    def bandwidth_at(self, size=None):
        return sn.defer(self.value_at(size, 'mbytes_per_sec'))

    @run_before('performance')
    def set_perf_variables(self):
        if self.kind == 'barrier':
            self.perf_variables = {'latency': self.latency_at(None)}
        elif self.kind == 'collective':
            self.perf_variables = {'latency_8B': self.latency_at(8),
                                   'latency_max': self.latency_at(None)}
        else:
            self.perf_variables = {
                'latency_0B': self.latency_at(0),
                'latency_8B': self.latency_at(8),
                'bandwidth': self.bandwidth_at(None),
            }
