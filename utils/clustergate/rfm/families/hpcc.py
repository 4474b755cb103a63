"""Generic base of the HPC Challenge checks (Debian's ``hpcc`` 1.5.0).

One HPCC run measures every kernel (HPL, DGEMM, STREAM, PTRANS,
RandomAccess, FFT, b_eff): running it once per metric would multiply the
cost by six. So the run is a fixture, :class:`HpccRun`, one per sweep
point, partition and environment; each kernel's check
(:class:`HpccKernelTest`, thin subclasses in ``checks/hpcc/``) depends on
it, reads its ``hpccoutf.txt`` and reports that kernel's figures with its
own sanity (HPL's residual, RandomAccess's error fraction, ...). The
checks fork over the run's sweep points (``action='fork'``), and carry the
point as loggable variables, so their perflog lines and references look
like any other family's.

``hpccinf.txt`` is written by :mod:`clustergate.parsers.hpccinf` from the
partition's ``memory_per_node_gib`` and the rank count, with the
partition's optional ``extras['hpcc']``::

    'hpcc': {'memory_fraction': 0.5, 'nb': 128, 'max_n': 20000}

and :attr:`HpccRun.max_problem_size` (``ci`` mode caps N with ``-S``).
"""

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (fixture, run_after, run_before,
                                   variable)
from reframe.core.exceptions import SanityError

from clustergate.parsers import hpccinf
from clustergate.site import sweep
from clustergate.parsers import parse_hpcc
from clustergate.parsers.hpcc_output import hpl_error
from clustergate.rfm.point import modes
from clustergate.rfm.point.base import PointTest
from clustergate.rfm.families.thirdparty import (ANY_MPI, BenchmarkBinaries,
                                                 ThirdPartyTest, environs_for)
from clustergate.site.partition import partition_model

#: HPCC writes its results here, in the working directory
OUTPUT_FILE = 'hpccoutf.txt'
INPUT_FILE = 'hpccinf.txt'


def _given(value, default):
    """``value`` unless the partition left it out (None)."""
    return default if value is None else value


class HpccBinaries(BenchmarkBinaries):
    family = 'hpcc'


class HpccRun(ThirdPartyTest):
    """One ``hpcc`` run at one sweep point: every kernel, once.

    Sanity: the output file is complete (HPCC reached its last line). The
    kernels' own verdicts belong to the checks that report them.
    """

    family = 'hpcc'

    #: Upper bound on HPL's N, whatever the memory (0: none); the ci mode
    #: sets it (config/common.py) so that a run takes seconds
    max_problem_size = variable(int, value=0, loggable=True)

    #: HPL's N, NB and grid of this run (set at run time, logged)
    problem_size = variable(int, value=0, loggable=True)

    binaries = fixture(HpccBinaries, scope='environment')
    keep_files = [INPUT_FILE, OUTPUT_FILE]
    time_limit = '60m'

    def binary_name(self):
        return 'hpcc'

    # the run has no performance variables: its kernels' checks look up
    # their references
    load_references = False

    def hpcc_input(self):
        """The input of this point (clustergate.parsers.hpccinf.for_job)."""
        part = self.current_partition
        model = partition_model(part)
        opts = model.hpcc
        max_n = [n for n in (opts.max_n, self.max_problem_size) if n]
        return hpccinf.for_job(
            model.memory_per_node_gib, self.num_nodes,
            self.num_tasks,
            fraction=_given(opts.memory_fraction,
                            hpccinf.DEFAULT_MEMORY_FRACTION),
            nb=_given(opts.nb, hpccinf.DEFAULT_NB),
            max_n=min(max_n) if max_n else None,
            partition=part.fullname,
            cores_per_node=model.cores_per_node)

    @run_before('run')
    def write_input(self):
        try:
            inp = self.hpcc_input()
        except hpccinf.HpccInputError as err:
            self.skip(str(err))

        self.problem_size = inp.n
        self.descr = (f'HPCC (N={inp.n}, NB={inp.nb}, {inp.p}x{inp.q}) on '
                      f'{self.point_words()}')
        with open(os.path.join(self.stagedir, INPUT_FILE), 'w') as fp:
            fp.write(inp.render())

        # idle ranks wait in barriers: let them yield shared cores
        self.env_vars.setdefault('OMPI_MCA_mpi_yield_when_idle', '1')

    def output_text(self):
        path = os.path.join(self.stagedir, OUTPUT_FILE)
        try:
            with open(path, errors='replace') as fp:
                return fp.read()
        except OSError:
            raise SanityError(self.explained(
                f'HPCC wrote no {OUTPUT_FILE}')) from None

    def input_text(self):
        """The hpccinf.txt this run gave HPCC."""
        path = os.path.join(self.stagedir, INPUT_FILE)
        try:
            with open(path, errors='replace') as fp:
                return fp.read()
        except OSError as err:
            raise SanityError(f'cannot read {path}: {err.strerror}') \
                from None

    def parse(self, text):
        return parse_hpcc(text)

    def check(self, result):
        """HPL ran the N, NB and grid of the input on the job's ranks:
        HPCC falls back to its own problem when HPL refuses the input."""
        if self.num_tasks and result.processes != self.num_tasks:
            raise SanityError(f'HPCC ran on {result.processes} ranks, '
                              f'expected {self.num_tasks}')

        try:
            asked = hpccinf.read(self.input_text())
            ran = result.hpl_problem()
        except (hpccinf.HpccInputError, KeyError) as err:
            raise SanityError(err.args[0]) from None

        why = hpccinf.mismatch(asked, ran, result.processes,
                               hpl_error(self.stderr_text()))
        if why:
            raise SanityError(why)


def mpi_star_single(name, summary, unit):
    """The ``metrics`` of a kernel HPCC runs distributed (MPI), on every
    process at once (Star) and on one alone (Single): ``mpi_<name>``,
    ``star_<name>``, ``single_<name>`` from the summary keys
    ``MPI<summary>``, ``Star<summary>``, ``Single<summary>``."""
    return {f'{low}_{name}': (f'{cap}{summary}', unit, 1.0)
            for low, cap in (('mpi', 'MPI'), ('star', 'Star'),
                             ('single', 'Single'))}


#: ``mode_selection`` of the kernels also in ci: only at 2+ ranks
CI_AND_NIGHTLY = {'ci': {'several_ranks': {True}}, **modes.NIGHTLY}


class HpccKernelTest(PointTest, rfm.RunOnlyRegressionTest):
    """The figures of one HPCC kernel, read from the :class:`HpccRun` of
    the same sweep point (the run is shared by every kernel's check).

    Subclasses set :attr:`kernel`, :meth:`check_kernel` (sanity beyond
    "the run completed") and :attr:`metrics`: ``{perf variable: (summary
    key, unit, scale)}``.
    """

    hpcc = fixture(HpccRun, scope='environment', action='fork')

    #: Kernel name (HPL, STREAM, ...), logged
    kernel = variable(str, loggable=True)

    #: perf variable -> (HPCC summary key, unit, factor applied)
    metrics = variable(dict)

    #: nightly and acceptance; a kernel also in ci declares
    #: ``mode_selection = CI_AND_NIGHTLY`` (the partition's ci subset still
    #: narrows it to its points)
    mode_selection = modes.NIGHTLY

    #: Minimum ranks for this kernel to mean anything (b_eff: 2)
    min_ranks = variable(int, value=1)

    #: The sweep point of the run (copied from the fixture: loggable like
    #: the parameters of other families, used by the references)
    num_nodes = variable(int, loggable=True)
    ppn = variable(int, loggable=True)
    interconnect = variable(str, loggable=True)
    reference_status = variable(str, value='', loggable=True)

    # the point is the run's (its fixture's parameters), taken at init;
    # the run's job is placed, this one reads a file
    sweep_axes = False

    valid_systems = ['+mpi']
    valid_prog_environs = list(ANY_MPI)
    # reads a file of the run's stage directory: no allocation needed
    local = True
    executable = 'cat'
    maintainers = ['clustergate']

    @classmethod
    def system_fixtures(cls):
        # the run's sweep axes follow the system loaded, as the checks' do
        return {'hpcc': (HpccRun, {'scope': 'environment',
                                   'action': 'fork'})}

    def tag_names(self):
        return {'thirdparty', 'hpcc', self.kernel}

    @property
    def several_ranks(self):
        """2+ ranks: a 1-rank run repeats the same work on every
        interconnect (and b_eff needs a pair), so ci runs only these."""
        return self.sweep_point().ranks >= 2

    def reference_axes(self):
        """The axes a reference key may name (clustergate.refs.references)."""
        return {'num_nodes': self.num_nodes, 'ppn': self.ppn,
                'interconnect': self.interconnect}

    @run_after('init')
    def take_point(self):
        info = type(self).get_variant_info(self.variant_num, recurse=True)
        params = info['fixtures']['hpcc']['params']
        self.num_nodes = params['num_nodes']
        self.ppn = params['ppn']
        self.interconnect = params['interconnect']
        # what the point must offer: this kernel's ranks
        self.sweep_requirements = sweep.Requirements(
            min_ranks=self.min_ranks)
        envs = environs_for('hpcc')
        # as thirdparty.restrict_environs: keep a -S valid_prog_environs
        if envs and list(self.valid_prog_environs) == ANY_MPI:
            self.valid_prog_environs = envs

        self.descr = f'HPCC {self.kernel} on {self.point_words()}'

    def job_fabric(self):
        # reads the run's output file: no rank talks over the fabric
        return None

    @run_before('run')
    def read_run(self):
        self.executable_opts = [os.path.join(self.hpcc.stagedir, OUTPUT_FILE)]

    def explained(self, message):
        # this job is a `cat` of the run's file: its stderr and exit code
        # say nothing about the run
        return message

    def parse(self, text):
        return parse_hpcc(text)

    def check(self, result):
        """Every metric's key is in the output; the kernel's own sanity."""
        for key, *_ in self.metrics.values():
            try:
                result.value(key)
            except KeyError as err:
                raise SanityError(err.args[0]) from None

        self.check_kernel(result)

    def check_kernel(self, result):
        pass

    def metric_value(self, name, result=None):
        key, _, scale = self.metrics[name]
        return (result or self.parsed()).value(key) * scale

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {
            name: sn.make_performance_function(_metric(self, name), unit)
            for name, (_, unit, _) in self.metrics.items()
        }


@sn.deferrable
def _metric(test, name):
    """One metric, read when ReFrame evaluates the performance."""
    return test.metric_value(name)
