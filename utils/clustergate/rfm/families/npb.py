"""Generic base of the NAS Parallel Benchmarks checks (MPI, NPB 3.4.x).

One test = one kernel x one class x one sweep point. CG, EP, MG, FT, LU
and IS run on power-of-two process counts, BT and SP on square counts
(NPB 3.4.1 aborts them otherwise; ``NPB_NPROCS_STRICT=off`` would make
them run on fewer *active* processes, which is not what was asked:
non-square points are skipped instead). Class C is acceptance only and is
skipped where the partition's ``memory_per_node_gib`` is too small (see
:data:`clustergate.site.benchmarks.NPB_C_MEMORY_GB`).

The (k ppn)/(1 ppn) ratio at a fixed process count is a report step over
one session's results (``clustergate npb <run-report.json>``,
:mod:`clustergate.results.npbratios`), not a ReFrame dependency: see
docs/guide/benchmarks.md.
"""


import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, parameter, performance_function,
                                   run_after, variable)
from reframe.core.exceptions import SanityError

from clustergate.site import benchmarks
from clustergate.site import sweep
from clustergate.parsers import parse_npb
from clustergate.rfm.families.thirdparty import NpbBinaries, ThirdPartyTest
from clustergate.site.partition import partition_model

#: NPB's own rule on each kernel's process count: BT and SP on a square
#: number, EP on any (found in a trial with NPB built by
#: Spack), the others on a power of two
RANKS_SHAPE = {'bt': 'square', 'sp': 'square', 'ep': None}


class NpbTest(ThirdPartyTest):
    """Runs ``<kernel>.<CLASS>.x`` and reports Mop/s and time.

    Performance variables: ``mops_total`` (Mop/s), ``mops_per_process``
    (Mop/s, total over *active* processes), ``time`` (s, NPB's own timer).
    """

    family = 'npb'

    #: Kernel, lower case (bt, cg, ep, ft, is, lu, mg, sp): subclasses
    kernel = variable(str, loggable=True)

    #: Problem class
    npb_class = parameter(list(benchmarks.NPB_CLASSES), loggable=True)

    binaries = fixture(NpbBinaries, scope='environment')

    time_limit = '30m'

    # Class C runs for minutes and needs GBs: acceptance only
    mode_selection = {'nightly': {'npb_class': {'A', 'B'}},
                      'acceptance': {}}

    def tag_names(self):
        return {'thirdparty', 'npb', self.kernel, f'npb_{self.npb_class}'}

    @run_after('init')
    def set_sweep_requirements(self):
        """The points this kernel can run: its RANKS_SHAPE."""
        self.sweep_requirements = sweep.Requirements(
            ranks_shape=RANKS_SHAPE.get(self.kernel, 'pow2'))

    @run_after('init')
    def set_descr(self):
        self.descr = (f'NPB {self.kernel.upper()} class {self.npb_class} on '
                      f'{self.point_words()}')

    @run_after('setup')
    def skip_if_memory_too_small(self):
        reason = benchmarks.npb_memory_reason(
            self.kernel, self.npb_class, self.num_nodes, self.ppn,
            partition_model(self.current_partition).memory_per_node_gib
        )
        self.skip_if(reason is not None, reason)

    def binary_name(self):
        return f'{self.kernel}.{self.npb_class}.x'

    def parse(self, text):
        return parse_npb(text)

    def check(self, res):
        if not res.verified:
            raise SanityError(f'NPB {res.benchmark} class {res.npb_class}: '
                              f'Verification = {res.verification}, not '
                              f'SUCCESSFUL')

        if res.benchmark != self.kernel.upper():
            raise SanityError(f'output is NPB {res.benchmark}, expected '
                              f'{self.kernel.upper()}')

        if res.npb_class != self.npb_class:
            raise SanityError(f'NPB {res.benchmark} ran class '
                              f'{res.npb_class}, expected {self.npb_class}')

        expected = self.num_tasks or 0
        if expected and res.total_processes != expected:
            raise SanityError(f'NPB {res.benchmark} ran with '
                              f'{res.total_processes} processes, expected '
                              f'{expected}')

        if expected and res.active_processes != expected:
            raise SanityError(
                f'NPB {res.benchmark}: only {res.active_processes} of '
                f'{res.total_processes} processes were active (BT and SP '
                f'need a square count), expected {expected}'
            )

    # -- performance ------------------------------------------------------

    @performance_function('Mop/s')
    def mops_total(self):
        return sn.defer(self.parsed().mops_total)

    @performance_function('Mop/s')
    def mops_per_process(self):
        res = self.parsed()
        return sn.defer(res.mops_total / max(res.active_processes, 1))

    @performance_function('s')
    def time(self):
        return sn.defer(self.parsed().time_s)
