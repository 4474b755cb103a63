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
from clustergate.links import linkbaselines as linkbaseline
from clustergate.links import judge as linkjudge
from clustergate.links import matrix as linkmatrix
from clustergate.links import matrixjob
from clustergate.links.matrixjob import declared_topology
from clustergate.links import retest_candidates
from clustergate.links import retest_driver
from clustergate.links import retest_rules
from clustergate.links import retest_verdict
from clustergate.links import stats as linkstats
from clustergate.refs import references
from clustergate.rfm.point.reference import test_axes
from clustergate.site import environment as cgenv
from clustergate.site import sweep
from clustergate.site.partition import Subset, partition_model
from clustergate.links import topology
from clustergate.links.topology import span
from clustergate import adapter
from clustergate.rfm.point import bounds, modes
from clustergate.rfm.families.cgprogram import CgProgramTest


#: values of LinkMatrixTest.link_schedule
SCHEDULES = ('topology', 'all-pairs')

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


class LinkMatrixTest(CgProgramTest, DecidedVerdict):
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
        self.keep_files = [self.csv_name(), self.png_name(),
                           self.retest_name('json'), self.retest_name('log'),
                           'linkretest_inputs.json']

    # the base's last init hook, then this: it needs the capable
    # partitions and environments and the mode tags
    @run_after('init', always_last=True)
    def point_init_last(self):
        super().point_init_last()
        self.fabric_sentinel()

    def fabric_sentinel(self):
        """The nightly's fabric check: the matrix of the whole partition,
        whatever the nightly subset's node counts (the subset's fabrics
        still apply; a fabric check of 2 of 12 nodes sees no switch), and
        in a nightly session under one environment per fabric (the
        partition's ``sentinels.environ``, else the first of its
        environments that can run it): one MPI is enough to judge the
        fabric; every environment runs it in acceptance."""
        if adapter.current_system() is None or self.is_fixture():
            return
        parts = fabric_partitions(self)
        if 'acceptance' in self.tags and 'nightly' in self.mode_selection \
                and any(_nightly_fabric(m, self.interconnect)
                        for _, m in parts):
            self.tags = set(self.tags) | {'nightly'}
        # on a declared tree, a matrix of fewer nodes than its span (2 of
        # every leaf) sees a switch at most: acceptance only
        spans = [partition_span(p.name, m) for p, m in parts]
        if spans and all(isinstance(n, list) and self.num_nodes < len(n)
                         for n in spans):
            self.tags = set(self.tags) - {'nightly'}
        if modes.session_mode(sys.argv) == 'nightly':
            envs = modes.sentinel_environs(parts, self.valid_prog_environs)
            if envs:
                self.valid_prog_environs = envs

    def csv_name(self):
        return f'linkmatrix_{self.interconnect}.csv'

    def retest_name(self, ext):
        return f'linkretest_{self.interconnect}.{ext}'

    def png_name(self):
        return f'linkmatrix_{self.interconnect}.png'

    @run_before('run')
    def set_command(self):
        self.executable = self.program_path()
        # no cache flush between trials: 4 MB over a network link does not
        # care, and the flushes of 2x the last-level cache took the node's
        # cores (healthy 9-node job: 30.2 s with them, 25.1 s without,
        # median of 3 in one allocation; docs/reports/fault-campaign.md#speed)
        self.executable_opts = ['--bytes', str(self.msg_bytes),
                                '--trials', str(self.trials),
                                '--flush-bytes', '64']
        rounds = self.schedule_rounds()
        if self.time_limit is None:
            self.time_limit = self.job_limit(rounds)
        if rounds is not None:
            with open(os.path.join(self.stagedir, self.schedule_name()),
                      'w') as fp:
                fp.write(topology.schedule_text(rounds))
            self.executable_opts += ['--schedule', self.schedule_name()]

    def schedule_name(self):
        return f'linkmatrix_{self.interconnect}.schedule'

    def scheduled(self):
        """The rounds of the schedule file the job ran (``--schedule``),
        or None: it ran the shift rounds of every pair."""
        opts = list(self.executable_opts)
        if '--schedule' not in opts:
            return None
        path = os.path.join(self.stagedir, opts[opts.index('--schedule') + 1])
        try:
            with open(path) as fp:
                return topology.parse_schedule_text(fp.read())
        except (OSError, ValueError) as err:
            raise SanityError(f'link schedule {path}: {err}') from None

    def schedule_rounds(self):
        """The rounds of the declared topology this matrix runs, or None:
        the N-1 shift rounds of every pair (no topology declared, or
        ``link_schedule`` 'all-pairs'). SanityError naming the cause for
        an unknown ``link_schedule`` or a tree that cannot be read."""
        if self.link_schedule not in SCHEDULES:
            raise SanityError(f'link_schedule {self.link_schedule!r}: not '
                              f'one of {", ".join(SCHEDULES)}')
        topo = self.declared()
        if topo is None or self.link_schedule == 'all-pairs':
            return None
        rounds = topology.schedule(topo, topo.nodes)
        # a small tree (9 nodes in 3 leaves): every pair takes no longer
        if len(rounds) >= topology.all_pairs_rounds(len(topo.nodes)):
            return None
        return rounds

    def job_limit(self, rounds):
        """The job's time limit in seconds for ``rounds`` (None: every
        pair): :func:`clustergate.links.matrixjob.job_limit`."""
        return matrixjob.job_limit(rounds, self.num_nodes, self.declared())

    def budget(self):
        """The retest budget in seconds: the variable, else the
        partition's extras, else the default."""
        if self.retest_budget is not None:
            return float(self.retest_budget)
        part = self.current_partition
        got = partition_model(part).link_retest_budget_s
        return float(got) if got is not None else retest_driver.BUDGET

    @run_before('run')
    def set_retest(self):
        """After the matrix, the same job retests the suspect and
        borderline node links (python -m clustergate.links.retest_driver, with the
        job's own launch line): only when the matrix succeeded."""
        if self.budget() <= 0:
            return

        # the launch line, filled the way run() will fill the job
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        launch = (f'{self.job.launcher.run_command(self.job)} '
                  f'{self.program_path()} --bytes {self.msg_bytes}')
        matrixjob.write_inputs(os.path.join(
            self.stagedir, 'linkretest_inputs.json'), self.retest_inputs())
        prerun, self.postrun_cmds = matrixjob.retest_commands(
            launch, self.job.stdout, 'linkretest_inputs.json', self.budget(),
            self.retest_name('json'), self.retest_name('log'))
        self.prerun_cmds += prerun

    def retest_inputs(self):
        """What the retest driver needs to judge the first round as
        judge() does: bounds, the link baseline, the declared tree."""
        try:
            found = self.link_baseline()
        except ConfigError:
            found = None        # the performance stage names the error
        try:
            topo = self.declared()
        except SanityError:
            topo = None         # the performance stage names the error
        return {
            'fabric': self.interconnect, 'fraction': self.fraction,
            'ratio': self.retest_ratio, 'alpha': self.retest_alpha,
            'bounds': {'ratio': self.link_ratio, 'z': self.link_z,
                       'peer_ratio': self.peer_ratio, 'peer_z': self.peer_z},
            'stats': {m: [st.median, st.mad, st.runs]
                      for m, st in (found[1] if found else {}).items()},
            'topology': retest_driver.topology_to_json(topo),
        }

    def retest_result(self):
        """The retest driver's result (linkretest_<fabric>.json), or
        None: it wrote none (it did not run, or its file is unreadable)."""
        if self.stagedir is None:
            return None
        return matrixjob.read_result(os.path.join(self.stagedir,
                                                  self.retest_name('json')))

    # -- output -----------------------------------------------------------

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
        part = self.current_partition
        topo = partition_model(part).topology
        if topo is None or not topo.describes(self.interconnect):
            return None

        try:
            return declared_topology(topo.spec)
        except topology.TopologyError as err:
            raise SanityError(f'declared topology: {err}') from None

    def verdict_lines(self, analysis):
        """The lines that fail the test (none: healthy): those of the
        switch-tree analysis where the partition declares a topology,
        otherwise those of the flat matrix."""
        topo = self.declared()
        if topo is None:
            return analysis.messages()

        tree = topology.diagnose(
            topo, topology.rounds_from_measurements(self._run().measurements),
            self.interconnect)
        for note in tree.notes:
            self.logger.info(f'topology analysis: {note}')

        self.logger.info(tree.summary())
        return tree.messages()

    def node_figures(self, matrix, run, exclude=()):
        """Per node link and direction (:mod:`clustergate.links.stats`): on
        the declared tree, or against the flat matrix; the flows of the
        nodes ``exclude`` count only in their own figures."""
        return linkstats.figures(matrix, run, self.declared(), exclude)

    def expected_pattern(self):
        return 'linkmatrix'

    def check_run(self, run):
        # sanity: the program printed the whole matrix; how good the links
        # are is judged in the performance stage (see judge)
        n = self.num_nodes
        rounds = self.scheduled()
        if rounds is None:
            expected, what = n * (n - 1), f'{n} nodes'
        else:
            # the flows of the schedule between the job's nodes (those of
            # other nodes are left out by the program)
            names = {str(m[k]) for m in run.measurements
                     for k in ('src', 'dst')}
            expected = sum(a in names and b in names
                           for r in rounds for a, b in r.flows)
            what = f'{len(names)} nodes, {self.schedule_name()}'
        if len(run.measurements) != expected:
            raise SanityError(f'{len(run.measurements)} pairs measured, '
                              f'expected {expected} ({what})')

        missing = [m for m in run.measurements if m.best_bandwidth() is None]
        if missing:
            raise SanityError(f'{len(missing)} pair(s) without a bandwidth, '
                              f'e.g. {missing[0]["src"]}->'
                              f'{missing[0]["dst"]}')

    def judge(self):
        """``(verdict lines, node figures)`` of the job's output, computed
        once (the performance functions read them)."""
        text = self.stdout_text()
        done = _JUDGED.get(id(self))
        if done is not None and done[0] == text:
            return done[1]

        run = cgoutput.parse(text)
        matrix = self.matrix(run)
        analysis = self.analysis(matrix)
        self.logger.info(analysis.summary())
        lines = self.verdict_lines(analysis)
        # each node link against its own baseline and its peers; a node
        # the fabric's verdict named already is not named twice
        found = self.link_baseline()
        naming = retest_candidates.Bounds(self.link_ratio, self.link_z,
                                          self.peer_ratio, self.peer_z)
        figures, links, _ = retest_driver.node_links(
            matrix, run, self.declared(), lines, found[1] if found else None,
            self.interconnect, naming,
            basis=found[0] if found else self.link_baseline_where())
        # the retests of the same job decide every named node link, gross
        # or not, and the borderline ones
        first = lines + links.lines
        cands = retest_candidates.retest_candidates(lines, links, naming) \
            if self.budget() > 0 else None
        retested = self.retest_result()
        final, notes = retest_verdict.apply(
            first, retested, self.interconnect, cands,
            tree=self.declared() is not None)
        warned = []
        for note in notes:
            # a borderline link the retest left within its noise: not a
            # verdict line, but said where the session's output shows it
            # and kept for the report (link_warnings)
            if note.startswith(retest_verdict.WARNING):
                self.logger.warning(f'link retest: {note}')
                warned.append(note[len(retest_verdict.WARNING):])
            else:
                self.logger.info(f'link retest: {note}')
        self.link_warnings = warned

        self.logger.info(f'node links on fabric {self.interconnect}: '
                         f'{links.basis}')
        if final and retest_verdict.decided_all(retested, cands):
            self.decided(final)
        result = (final, figures, links)
        # kept outside the test: ReFrame writes the test's attributes as
        # JSON when it finishes (the figures' keys are tuples)
        _JUDGED[id(self)] = (text, result)
        return result

    def link_point(self):
        """``(system, partition, axes)`` of this test case, or None."""
        if not self.current_system or not self.current_partition:
            return None

        return (self.current_system.name, self.current_partition.name,
                test_axes(self))

    def link_baseline_where(self):
        point = self.link_point()
        if point is None:
            return ''
        path = references._rel(linkbaseline.link_file(
            cgenv.references_dir(), point[0]))
        return f'for this point in {path}'

    def link_baseline(self):
        """``(description, {metric: LinkStat})`` of this point in the
        system's link-baseline file, or None. A malformed file fails the
        test, naming file and key."""
        point = self.link_point()
        if point is None:
            return None

        system, part, axes = point
        try:
            bl = linkbaseline.load_cached(linkbaseline.link_file(
                cgenv.references_dir(), system), system)
        except references.ReferenceFileError as err:
            raise ConfigError(str(err)) from None

        found = bl.lookup(type(self).__name__, part, axes) if bl else None
        if found is None:
            return None

        return f'{bl.describe()}#{found[0]}', found[1]

    # -- artefacts, written after the run ---------------------------------

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

        if not matrix.bw:
            return

        linkmatrix.write_csv(matrix, os.path.join(self.stagedir,
                                                  self.csv_name()))
        self.draw_heatmap()

    def heatmap_title(self):
        return (f'{self.current_system.name}:{self.current_partition.name} '
                f'{self.interconnect} link matrix (MB/s)')

    def draw_heatmap(self):
        """``linkmatrix_<fabric>.png`` from the CSV, in a separate Python:
        matplotlib is slow to import, and optional."""
        png = os.path.join(self.stagedir, self.png_name())
        tail = matrixjob.draw_heatmap(
            os.path.join(self.stagedir, self.csv_name()), png, self.fraction,
            self.interconnect, self.heatmap_title())
        if tail is not None:
            self.logger.info(f'no heat map (matplotlib missing? pip '
                             f'install clustergate[report]): {tail}')

    # -- performance ------------------------------------------------------

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
        """How far the worst node link is below its baseline (or, without
        one, its peers of the run), in MADs (0: not below)."""
        worst = self.judge()[2].worst()
        z = worst.z if worst.z is not None else worst.peer_z
        return sn.defer(max(0.0, -z))

    def faults(self, lines):
        """The verdict as a performance variable: how many verdict lines;
        its unit carries them, so that the failure message ("failed to
        meet reference(s): faults=1 verdicts: suspect node n4 ...") and
        the perflog name the node, uplink or link."""
        unit = 'verdicts: ' + '; '.join(lines) if lines else 'verdicts'
        return sn.make_performance_function(sn.defer(len(lines)), unit)

    @run_before('performance')
    def set_perf_variables(self):
        pv = {'bw_median': self.bw_median(), 'bw_min': self.bw_min()}
        if self.is_dry_run():
            # no output to judge: the per-node variables are the nodes'
            self.perf_variables = pv
            return

        # judged here, not inside a performance function: ReFrame skips a
        # variable whose evaluation raises (a warning), a hook's error
        # fails the test
        lines, figures, _ = self.judge()
        nodes = {n for n, _ in figures}
        if len(nodes) <= self.max_node_variables:
            for node, direction in sorted(figures):
                bw, peer = linkstats.metric_names(node, direction)
                if direction != 'both':
                    pv[bw] = self.node_bw((node, direction))
                pv[peer] = self.node_peer((node, direction))
        else:
            self.logger.info(f'{len(nodes)} nodes: more than '
                             f'max_node_variables={self.max_node_variables}'
                             f', per-node figures only in the CSV')

        if figures:
            pv['peer_min'] = self.peer_min()
            pv['link_mads'] = self.link_mads()
        pv['faults'] = self.faults(lines)
        limits = {'faults': (0, None, 0)}
        own = (self.fraction, 0, None, 'x')
        if not self.cleared_below_fraction(figures):
            limits['peer_min'] = own
        elif tuple(self.reference.get('*:peer_min', ())) == own:
            del self.reference['*:peer_min']    # ours, from an earlier run
        bounds.add_bounds(self, limits)
        self.perf_variables = pv

    def cleared_below_fraction(self, figures):
        """Whether every node link below ``fraction`` of its peers in the
        first round was measured healthy alone by the retest: then
        ``peer_min`` (kept for the history) does not fail the test: what
        the retest clears is not a fault."""
        low = {f.node for f in figures.values() if f.peer < self.fraction}
        result = self.retest_result() if low and self.budget() > 0 else None
        healthy = matrixjob.cleared_nodes(result)
        if low and low <= healthy:
            self.logger.info(f'peer_min not bounded: {", ".join(sorted(low))}'
                             f' below {self.fraction:g}x of its peers in the '
                             f'first round, cleared by the retest')
            return True
        return False


def fabric_partitions(test):
    """``[(ReFrame partition, its model)]`` that ``test`` runs on."""
    system = adapter.current_system()
    names = getattr(test, 'capable_partitions', None)
    return [(p, partition_model(p)) for p in system.partitions
            if names is None or p.fullname in names]


def _nightly_fabric(model, interconnect):
    """Whether the nightly subset of a partition's sweep keeps
    ``interconnect`` (a partition without a subset keeps every one)."""
    if not model.declares_sweep:
        return False
    sub = model.sweep.subset('nightly')
    return sub is None or sub.interconnects is None or \
        interconnect in sub.interconnects


#: (partition name, its topology extra) -> its span's nodes, or the
#: TopologyError that stopped the tree being read; filled when a span
#: class is created
_SPANS = {}


def partition_span(name, part_extras):
    """The nodes of the ci span of the partition ``name`` whose extras are
    ``part_extras`` (:func:`clustergate.links.topology.span.span_nodes` of its
    declared tree), None when it declares none; a tree that cannot be read
    gives its TopologyError (the test case then fails saying so). Read
    once per process."""
    model = partition_model(part_extras, name)
    if model.topology is None or not model.declares_sweep:
        return None

    key = (name, repr(model.topology))
    if key not in _SPANS:
        try:
            _SPANS[key] = span.span_nodes(declared_topology(
                model.topology.spec))
        except topology.TopologyError as err:
            _SPANS[key] = err

    return _SPANS[key]


def _span_size(part_extras, nodes):
    """Node count of a span (a tree that could not be read: the whole
    partition, so that the case exists and fails naming the cause)."""
    if isinstance(nodes, list):
        return len(nodes)

    return max(partition_model(part_extras).sweep.nodes)


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
        sizes = {_span_size(ext, nodes) for name, ext in partitions
                 if (nodes := partition_span(name, ext)) is not None}
        return {**params,
                'num_nodes': sorted(sizes) or params['num_nodes'][-1:]}

    def mode_point(self):
        # not narrowed by the ci subset's node counts: its nodes are the
        # tree's (point_reason keeps the subset's interconnects)
        return None

    def span_of(self, partition):
        return partition_span(partition.name,
                              partition_model(partition, partition.name))

    def point_reason(self, partition, mpi_family):
        nodes = self.span_of(partition)
        if nodes is None:
            return (f'partition {partition.fullname!r} declares no switch '
                    f'tree: its fabric check is the whole-partition matrix')

        model = partition_model(partition)
        size = _span_size(model, nodes)
        if self.num_nodes != size:
            return (f'the span of partition {partition.fullname!r} is '
                    f'{size} nodes')

        # the declared tree is the fabric's (scontrol show topology names
        # every node), not the partition's: a 2-node partition under a
        # 4-leaf tree cannot hold its 8-node span, and such a job would
        # pend for ever
        whole = max(model.sweep.nodes)
        if size > whole:
            return (f'the span of the declared tree is {size} nodes, '
                    f'partition {partition.fullname!r} has {whole}')

        ci = model.sweep.subset('ci') or Subset()
        if ci.interconnects is not None and \
                self.interconnect not in ci.interconnects:
            return (f'interconnect {self.interconnect!r} is not in the ci '
                    f'subset of partition {partition.fullname!r}')

        if not model.topology.describes(self.interconnect):
            return f'the declared tree does not describe {self.interconnect}'

        return sweep.why_not(model, sweep.SweepPoint(
            whole, self.ppn, self.interconnect), self.sweep_requirements,
            mpi_family=mpi_family)

    @run_after('init')
    def describe_span(self):
        spans = [n for n in _SPANS.values()
                 if isinstance(n, list) and len(n) == self.num_nodes]
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
