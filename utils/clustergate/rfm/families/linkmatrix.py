"""Generic base test of the link matrix (cg_linkmatrix, mpiGraph-like): the
node-to-node bandwidth matrix of all nodes of a partition, per interconnect
(see checks/src/cg_linkmatrix.c and :mod:`clustergate.links.matrix`).

Self-referencing: the matrix is judged in the performance stage, against
the node links' peers of the same run (sanity only checks that the program
ran and printed a complete matrix). The verdict -- ``suspect node n4 on
fabric fab0: ...``, ``suspect link n1<->n3 on fabric fab0: 0.26x median``,
or on a switch tree the cut uplink or the miscabled node -- is the
performance variable ``faults`` (how many verdicts; bound: 0), whose unit
carries the verdict lines, so that they are in the failure message and in
the perflog. ``peer_min`` (the slowest node link against its peers, bound:
``fraction``) and one figure per node link and direction
(:mod:`clustergate.links.stats`: ``bw_<node>_sent``/``_recv`` in MB/s,
``peer_<node>_sent``/``_recv``/``_both`` in x) are kept every night, so
the results database holds each link's history (``clustergate history``)
and a baseline per link can be learnt (``clustergate baseline --links``).
Each node link is judged against that baseline where there is one (a link
that lost 10 %: :mod:`clustergate.links.judge`), and named in ``faults``
as ``slow node link n5 on fabric fab0: both ways 0.90x its baseline
(-10.2 MADs: ...), 0.89x its peers (...)``. The named and
the borderline node links are measured again in the same job, alone and
in halving groups, until each decision is clear or ``retest_budget`` runs
out (:mod:`clustergate.links.retest_rules`); the verdict line says how sure. Each
pair counts at its fastest trial, which load elsewhere does not slow down and a
slow link cannot beat. The median and the slowest pair are performance
variables too, so a file reference also catches a fabric that is
uniformly slow.

**Rounds.** Where the partition declares a topology the matrix runs the
rounds of the topology (:func:`clustergate.links.topology.rounds.schedule`:
intra-leaf shifts, every leaf shift, the contrast rounds, about 45 rounds
at 1,024 nodes in 32 leaves instead of 1,023), written as
``linkmatrix_<fabric>.schedule`` and run by ``cg_linkmatrix --schedule``;
``link_schedule = 'all-pairs'`` (the acceptance mode sets it) runs the
N-1 shift rounds of every pair instead, as on a partition that declares
no topology and on a tree so small that every pair takes no more rounds
(9 nodes in 3 leaves). The retest runs on the same job's placement either way.

After the run (before sanity, so that a failing matrix is kept too) the
matrix is written as ``linkmatrix_<fabric>.csv`` and drawn as
``linkmatrix_<fabric>.png`` in the stage directory; both are kept in the
output directory.

To refine the verdict, override :meth:`LinkMatrixTest.verdict_lines`: it
gets the analysed matrix and returns the lines that fail the test.

**On a switch tree** the matrix is judged against the declared topology
instead (:mod:`clustergate.links.topology`): when the partition's extras have a
``topology`` entry, each flow of each concurrent round is compared with
its max-min fair share on the declared tree, and the verdicts name a slow
uplink, a miscabled node (and the leaf it behaves as on) or a slow node
link. The flat verdict would call the oversubscribed cross-switch flows
slow. The entry says where the site keeps its topology (config, not
code)::

    'topology': {'source': 'scontrol'}     # `scontrol show topology`
    'topology': {'file': '/etc/slurm/topology.conf'}

with optional ``node_rate``/``uplink_rate`` (e.g. ``'100gbit'``) overriding
the ``LinkSpeed`` of the file, and ``interconnects`` (the fabrics the tree
describes; default: all).

**In the ci mode on a switch tree** the whole-partition matrix gives way
to :class:`LeafSpanLinkMatrixTest`: the matrix on 2 nodes of every leaf
of the declared tree (:mod:`clustergate.links.topology.span`), so that every
leaf and every uplink carries pairs, judged against the tree with only
those nodes. Its name does not start with ``LinkMatrix``: a selection
``-n '^LinkMatrix'`` (campaigns, drills) keeps the whole matrix only.
"""

import contextlib
import os
import statistics
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (parameter, performance_function, run_after,
                                   run_before, variable)
from reframe.core.exceptions import (ConfigError, PerformanceError,
                                     SanityError)

from clustergate.parsers import cgoutput
from clustergate.links import fabriccheck
from clustergate.links import judge as linkjudge
from clustergate.links import matrix as linkmatrix
from clustergate.links import matrixjob
from clustergate.links import matrixschedule
from clustergate.links import matrixverdict
from clustergate.links import retest_candidates
from clustergate.links import retest_rules
from clustergate.links import retest_verdict
from clustergate.links import stats as linkstats
from clustergate.links import topology
from clustergate.links.topology import span
from clustergate.refs import references
from clustergate.rfm.point.reference import test_axes
from clustergate.site import environment as cgenv
from clustergate.site import sweep
from clustergate.site.partition import partition_model
from clustergate import adapter
from clustergate.rfm.point import joboptions, modes
from clustergate.rfm.point.reference import add_bounds
from clustergate.rfm.families.cgprogram import CgProgramTest

#: the retest driver's inputs, in the stage directory
INPUTS = 'linkretest_inputs.json'

#: judge()'s result per test instance (id) and output text
_JUDGED = {}
#: the failing verdicts the retest decided, per test case of the session
_DECIDED = {}


def _run_of_session():
    """Which run of the ReFrame session this is (0: the first; retries
    and reruns count on). ReFrame 4.10 tells a test nothing else about
    retries; its runtime context's ``current_run`` is the one place."""
    from clustergate import adapter
    return adapter.current_run()


class DecidedVerdict(rfm.RegressionTestPlugin):
    """A test whose failing verdict, once decided inside its own job (the
    link matrix's retest), is final for the ReFrame session: a later run of
    the same case (a retry by ``--max-retries``, or a ``--reruns``
    repetition) fails at once with that verdict instead of running the
    job again, so a fault's time to verdict does not double. The test
    calls :meth:`decided` with the verdict lines; ``-S
    retry_decided=true`` measures again."""

    #: Measure again in a later run of the session (a retry, a rerun) when
    #: an earlier run's verdict was decided (default: that verdict stands,
    #: the later run fails at once with it)
    retry_decided = variable(bool, value=False, loggable=True)

    def case_key(self):
        """This test case in the session: check, partition, environment."""
        part, env = self.current_partition, self.current_environ
        return (self.unique_name, part.fullname if part else None,
                env.name if env else None)

    def decided(self, lines):
        """Record this run's failing verdict as decided."""
        _DECIDED[self.case_key()] = list(lines)

    @run_after('setup')
    def keep_decided_verdict(self):
        """In a later run of the session, the decided verdict of an earlier
        run fails the case before its job is submitted."""
        if self.retry_decided or _run_of_session() == 0:
            return
        lines = _DECIDED.get(self.case_key())
        if lines:
            raise PerformanceError(
                f'faults={len(lines)} verdicts: {"; ".join(lines)} '
                f'({retest_verdict.DECIDED}; not measured again: -S '
                f'retry_decided=true to measure again)')


class LinkRetestJob(rfm.RegressionTestPlugin):
    """The link matrix's job retests its suspect and borderline node links
    after the matrix (:mod:`clustergate.links.retest_driver`, started by
    :func:`clustergate.links.matrixjob.retest_commands`), within the
    test's ``retest_budget``."""

    def budget(self):
        """The retest budget in seconds: the variable, else the
        partition's extras, else the default."""
        return matrixjob.retest_budget(
            self.retest_budget, partition_model(self.current_partition))

    def start_retest(self):
        """After the matrix, the same job retests the suspect and
        borderline node links, with the job's own launch line."""
        if self.budget() <= 0:
            return
        # the launch line, filled the way run() will fill the job
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        launch = (f'{self.job.launcher.run_command(self.job)} '
                  f'{self.program_path()} --bytes {self.msg_bytes}')
        matrixjob.write_inputs(os.path.join(self.stagedir, INPUTS),
                               self.retest_inputs())
        prerun, self.postrun_cmds = matrixjob.retest_commands(
            launch, self.job.stdout, INPUTS, self.budget(),
            self.artefact('json'), self.artefact('log'))
        self.prerun_cmds += prerun

    def retest_inputs(self):
        """The retest driver's inputs; the performance stage names a
        baseline or a tree that cannot be read."""
        found = _or_none(self.link_baseline, ConfigError)
        topo = _or_none(self.declared, SanityError)
        return matrixjob.retest_inputs(
            self.interconnect, self.fraction, self.retest_ratio,
            self.retest_alpha, self.naming(), found, topo)

    def retest_result(self):
        """The retest driver's result, or None: it wrote none."""
        return matrixjob.read_result(self.stagedir and os.path.join(
            self.stagedir, self.artefact('json')))


class MatrixArtefacts(rfm.RegressionTestPlugin):
    """The link matrix's files: ``linkmatrix_<fabric>.csv`` and its heat
    map ``.png``, written after the run (before sanity, so that a failing
    matrix is kept too), the schedule it ran, the retest's result and
    log."""

    def artefact(self, ext):
        """The job's file of ``ext`` (:func:`~clustergate.links.matrixjob.
        artefact`)."""
        return matrixjob.artefact(self.interconnect, ext)

    @run_after('run')
    def write_artefacts(self):
        # Before sanity, so that the matrix of a failing run is kept (in
        # the stage directory, which ReFrame keeps on failure). An output
        # that cannot be read gives no artefact; sanity says why.
        try:
            run = self._run()
            cgoutput.verify(run, program=self.program,
                            pattern=self.expected_pattern())
            matrix = self.matrix(run)
        except (cgoutput.OutputError, SanityError) as err:
            self.logger.info(f'no link matrix artefacts: {err}')
            return
        note = matrixjob.write_artefacts(
            matrix, *(os.path.join(self.stagedir, self.artefact(e))
                      for e in ('csv', 'png')),
            self.fraction, self.interconnect, self.heatmap_title)
        if note:
            self.logger.info(note)

    def heatmap_title(self):
        return (f'{self.current_system.name}:{self.current_partition.name} '
                f'{self.interconnect} link matrix (MB/s)')


class MatrixPerformance(rfm.RegressionTestPlugin):
    """The link matrix's performance variables
    (:func:`clustergate.links.matrixverdict.perf_variables`): the median
    and the slowest pair, the node links' figures of the judged run,
    ``peer_min``, ``link_mads`` and ``faults``."""

    @performance_function('MB/s')
    def bw_median(self):
        return sn.defer(statistics.median(self.matrix().bw.values()))

    @performance_function('MB/s')
    def bw_min(self):
        return sn.defer(min(self.matrix().bw.values()))

    @performance_function('MB/s')
    def node_bw(self, link=None):
        # link: (node, 'sent' or 'recv')
        return sn.defer(self.judge()[1][link].bw)

    @performance_function('x')
    def node_peer(self, link=None):
        return sn.defer(self.judge()[1][link].peer)

    @performance_function('x')
    def peer_min(self):
        return sn.defer(linkstats.worst(self.judge()[1]).peer)

    @performance_function('MADs')
    def link_mads(self):
        return sn.defer(matrixverdict.worst_mads(self.judge()[2]))

    def faults(self, lines):
        """The verdict lines as a performance variable: how many; its unit
        carries them (the failure message and the perflog name them)."""
        unit = 'verdicts: ' + '; '.join(lines) if lines else 'verdicts'
        return sn.make_performance_function(sn.defer(len(lines)), unit)

    @run_before('performance')
    def set_perf_variables(self):
        # judged here, not inside a performance function: ReFrame skips a
        # variable whose evaluation raises (a warning), a hook's error
        # fails the test (:func:`clustergate.links.matrixverdict.
        # perf_variables`)
        pv, limits = matrixverdict.perf_variables(self)
        if limits:
            add_bounds(self, limits)
        self.perf_variables = pv



class LinkMatrixTest(LinkRetestJob, MatrixArtefacts, MatrixPerformance,
                     CgProgramTest, DecidedVerdict):
    """N x N bandwidth matrix of all nodes, one rank per node, in N-1 shift
    rounds; names slow nodes and links.

    Performance variables: ``bw_median`` and ``bw_min`` (MB/s, pairs at
    their fastest trial), ``faults`` (verdicts, bound 0), ``peer_min`` (x,
    bound ``fraction``) and per node link ``bw_<node>_sent``/``_recv``,
    ``peer_<node>_sent``/``_recv``/``_both``, ``link_mads`` (see the module
    doc and :mod:`clustergate.links.linkbaselines`).
    """

    #: Message size of every pair (large: bandwidth, not latency)
    msg_bytes = parameter([4000000], loggable=True)

    #: Trials per round (the first is dropped)
    trials = variable(int, value=8, loggable=True)

    #: A pair below this fraction of the matrix median is slow
    fraction = variable(float, value=linkmatrix.DEFAULT_FRACTION,
                        loggable=True)

    #: A node link is named when at most ``link_ratio`` of its baseline and
    #: ``link_z`` MADs below it (:mod:`clustergate.links.judge`), or,
    #: without a baseline, at most ``peer_ratio`` of its peers and
    #: ``peer_z`` MADs of the run below their median
    link_ratio = variable(float, value=linkjudge.RATIO, loggable=True)
    link_z = variable(float, value=linkjudge.Z, loggable=True)
    peer_ratio = variable(float, value=linkjudge.PEER_RATIO,
                          loggable=True)
    peer_z = variable(float, value=linkjudge.PEER_Z, loggable=True)

    #: Seconds of adaptive retest of suspect and borderline node links in
    #: the same job (:mod:`clustergate.links.retest_driver`; 0: none). None: the
    #: partition's extras ``link_retest_budget_s``, else 120 s
    retest_budget = variable(float, type(None), value=None, loggable=True)
    #: A retest decision needs p below this (one-sided t-test)
    retest_alpha = variable(float, value=retest_rules.ALPHA, loggable=True)
    #: A retested node link is slow below this fraction of its partners
    retest_ratio = variable(float, value=retest_rules.RATIO, loggable=True)

    #: 'topology': the rounds of the declared topology where there is one
    #: (else every pair); 'all-pairs': the N-1 shift rounds of every pair
    link_schedule = variable(str, value='topology', loggable=True)

    #: The retest's warnings of the judged run (a borderline node link it
    #: left within its noise: undecided, not named, the run not failed),
    #: without their ``WARNING:``; loggable, so that the run report and
    #: the perflog keep them and ``clustergate report`` lists them
    link_warnings = variable(typ.List[str], value=[], loggable=True)

    #: Per-node performance variables (5 per node) up to this many nodes;
    #: above it only the summary ones (a perflog line stays readable)
    max_node_variables = variable(int, value=64)

    program = 'cg_linkmatrix'
    #: The matrix is of the whole partition: all its nodes, one rank each
    sweep_requirements = sweep.Requirements(min_nodes=2, max_ppn=1,
                                            all_nodes=True)
    #: None: matrixjob.LIMIT_S scaled by the rounds the job runs (job_limit); a
    #: limit set (-S LinkMatrix.time_limit=2h) is kept as it is
    time_limit = None
    mode_selection = modes.EVERY_MODE

    def tag_names(self):
        return {'linkmatrix'}

    @run_after('init')
    def describe_matrix(self):
        self.descr = (f'link matrix of {self.num_nodes} nodes over '
                      f'{self.interconnect}, {self.msg_bytes} B')
        # the retest's inputs hold the declared tree: the report draws it
        self.keep_files = [self.artefact(e) for e in ('csv', 'png', 'json',
                                                      'log')] + [INPUTS]

    # the base's last init hook, then this: it needs the capable
    # partitions and environments and the mode tags
    @run_after('init', always_last=True)
    def point_init_last(self):
        super().point_init_last()
        fabric_sentinel(self)

    @run_before('run')
    def set_command(self):
        self.executable = self.program_path()
        self.executable_opts = matrixjob.matrix_options(self.msg_bytes,
                                                        self.trials)
        rounds = self.schedule_rounds()
        if self.time_limit is None:
            self.time_limit = matrixjob.job_limit(rounds, self.num_nodes,
                                                  self.declared())
            joboptions.cap_time_limit(self)
        if rounds is not None:
            self.executable_opts += matrixschedule.write_schedule(
                self.stagedir, self.artefact('schedule'), rounds)

    @run_before('run')
    def set_retest(self):
        self.start_retest()

    def schedule_rounds(self):
        """The declared tree's rounds the job runs, or None: every pair's."""
        with _sanity(matrixschedule.ScheduleError):
            return matrixschedule.schedule_rounds(self.link_schedule,
                                                  self.declared)

    def matrix(self, run=None):
        """The measured matrix (of ``run``, or of the job's output)."""
        run = run if run is not None else self._run()
        return linkmatrix.from_measurements(run.measurements)

    def analysis(self, matrix):
        """The matrix analysed: slow pairs, suspect nodes and links."""
        return linkmatrix.analyse(matrix, self.fraction, self.interconnect)

    def declared(self):
        """The switch tree this partition declares for this interconnect
        (extras ``topology``), or None: the flat matrix is judged."""
        with _sanity(topology.TopologyError, 'declared topology: '):
            return matrixjob.partition_topology(
                partition_model(self.current_partition), self.interconnect)

    def verdict_lines(self, analysis):
        """The lines that fail the test (none: healthy): those of the
        switch-tree analysis where the partition declares a topology,
        otherwise those of the flat matrix."""
        topo = self.declared()
        if topo is None:
            return analysis.messages()
        lines, notes = matrixverdict.tree_verdict(topo, self._run(),
                                                  self.interconnect)
        for note in notes:
            self.logger.info(note)
        return lines

    def expected_pattern(self):
        return 'linkmatrix'

    def check_run(self, run):
        # sanity: the program printed the whole matrix; how good the links
        # are is judged in the performance stage (see judge)
        with _sanity(matrixschedule.ScheduleError):
            rounds = matrixschedule.read_schedule(self.executable_opts,
                                                  self.stagedir)
        why = matrixschedule.incomplete(run, self.num_nodes, rounds,
                                        self.artefact('schedule'))
        if why:
            raise SanityError(why)

    def naming(self):
        return retest_candidates.Bounds(self.link_ratio, self.link_z,
                                        self.peer_ratio, self.peer_z)

    def judge(self):
        """``(verdict lines, node figures, node links' verdict)`` of the
        job's output (:func:`clustergate.links.matrixverdict.judge`),
        computed once: the performance functions read them."""
        text = self.stdout_text()
        done = _JUDGED.get(id(self))
        if done is None or done[0] != text:
            # kept outside the test: ReFrame writes the test's attributes
            # as JSON when it finishes (the figures' keys are tuples)
            done = _JUDGED[id(self)] = (text, matrixverdict.judge(self, text))
        return done[1]

    def link_point(self):
        """``(system, partition, axes)`` of this test case, or None."""
        if not self.current_system or not self.current_partition:
            return None
        return (self.current_system.name, self.current_partition.name,
                test_axes(self))

    def link_baseline(self):
        """This point's link baseline, or None; a malformed file fails
        the test, naming file and key."""
        try:
            return matrixverdict.link_baseline(
                cgenv.references_dir(), self.link_point(), type(self).__name__)
        except references.ReferenceFileError as err:
            raise ConfigError(str(err)) from None


def fabric_partitions(test):
    """``[(ReFrame partition, its model)]`` that ``test`` runs on."""
    system = adapter.current_system()
    names = getattr(test, 'capable_partitions', None)
    return [(p, partition_model(p)) for p in system.partitions
            if names is None or p.fullname in names]


def fabric_sentinel(test):
    """The nightly's fabric check: the matrix of the whole partition,
    whatever the nightly subset's node counts (the subset's fabrics still
    apply; a fabric check of 2 of 12 nodes sees no switch:
    :func:`clustergate.links.fabriccheck.nightly_tags`), and in a nightly
    session under one environment per fabric (the partition's
    ``sentinels.environ``, else the first of its environments that can
    run it): one MPI is enough to judge the fabric; every environment
    runs it in acceptance."""
    if adapter.current_system() is None or test.is_fixture():
        return
    parts = fabric_partitions(test)
    test.tags = fabriccheck.nightly_tags(test.tags, test.mode_selection,
                                         test.interconnect, test.num_nodes,
                                         parts)
    if modes.session_mode(sys.argv) == 'nightly':
        envs = modes.sentinel_environs(parts, test.valid_prog_environs)
        if envs:
            test.valid_prog_environs = envs


@contextlib.contextmanager
def _sanity(error, prefix=''):
    """``error`` (a schedule or a declared tree that cannot be used) fails
    sanity, naming the cause."""
    try:
        yield
    except error as err:
        raise SanityError(f'{prefix}{err}') from None


def _or_none(fn, error):
    """``fn()``, or None where it raises ``error``."""
    try:
        return fn()
    except error:
        return None


class LeafSpanLinkMatrixTest(LinkMatrixTest):
    """The link matrix of the ci mode on a switch tree: on a node set
    chosen from the declared tree that covers every leaf and every uplink
    (:mod:`clustergate.links.topology.span`: 2 nodes of each leaf), judged
    against that tree. Only where the partition declares a ``topology``:
    elsewhere the whole-partition matrix is the fabric check."""

    mode_selection = {'ci': {}}
    sweep_requirements = sweep.Requirements(min_nodes=2, max_ppn=1)

    @classmethod
    def system_parameters(cls, partitions):
        # the node count is the span's, read from each partition's tree
        # (no tree: one whole-partition value, which point_reason turns
        # away, instead of no value, which ReFrame warns about)
        params = super().system_parameters(partitions)
        sizes = {fabriccheck.span_size(ext, nodes) for name, ext in partitions
                 if (nodes := fabriccheck.partition_span(name, ext))
                 is not None}
        return {**params,
                'num_nodes': sorted(sizes) or params['num_nodes'][-1:]}

    def mode_point(self):
        # not narrowed by the ci subset's node counts: its nodes are the
        # tree's (point_reason keeps the subset's interconnects)
        return None

    def span_of(self, partition):
        return fabriccheck.partition_span(
            partition.name, partition_model(partition, partition.name))

    def point_reason(self, partition, mpi_family):
        return fabriccheck.span_reason(
            partition, self.span_of(partition), self.num_nodes, self.ppn,
            self.interconnect, self.sweep_requirements, mpi_family)

    @run_after('init')
    def describe_span(self):
        spans = fabriccheck.spans_of(self.num_nodes)
        where = f' ({",".join(spans[0])})' if spans else ''
        self.descr = (f'link matrix of {self.num_nodes} nodes{where}: every '
                      f'leaf and uplink of the declared tree, over '
                      f'{self.interconnect}, {self.msg_bytes} B')

    def span(self):
        """The span's nodes on this partition; SanityError (the test
        fails saying why) if the tree cannot be read or changed size."""
        nodes = self.span_of(self.current_partition)
        if not isinstance(nodes, list):
            raise SanityError(f'declared topology: {nodes}')

        if len(nodes) != self.num_nodes:
            raise SanityError(f'the declared tree now spans {len(nodes)} '
                              f'nodes, this case {self.num_nodes}')

        return nodes

    @run_before('run')
    def place_on_span(self):
        self.job.options += [f'--nodelist={",".join(self.span())}']

    def declared(self):
        """The declared tree with only the span's nodes."""
        topo = super().declared()
        return None if topo is None else span.restricted(topo, self.span())
