"""The base of every clustergate test: one point of the sweep,
:class:`PointTest`.

What a test at a point needs is done by plain functions of the modules
next door, called by the few hooks below in this written order (each
family's own hooks run after the base's at the same stage, ReFrame's
rule for a base class's hooks; ``always_last`` ones after them all)::

    init            modes.guard_dry_run          no perflog line from a dry run
    init (last)     capable.keep_capable_points  valid_systems narrowed to the
                                                 partitions that can run the
                                                 point, after the family's init
                                                 hooks (which set its
                                                 requirements and environments)
                    modes.set_mode_tags          ci/nightly/acceptance tags, on
                                                 the capable partitions' subsets
    setup           placement.apply_sweep_point  ranks, interconnect env,
                                                 launcher flags (may skip: first)
                    reference.apply              the point's reference
                    joboptions.apply             job options of the partition's
                                                 concurrency rule; the job
                                                 limit at most its max_job_min
    run (pre)       nightbudget.budget_spent         a rotating point does not
                                                 start once its night's budget
                                                 is spent (skips)
    sanity (pre)    placement.verify_transport   the job ran over its
                                                 interconnect, before sanity
    sanity          validate                     check(parse(output_text()))
    performance     refmetrics.reference_names_reported_metrics
      (pre, last)                                the reference names only
                                                 reported metrics, once the
                                                 family's hooks set
                                                 perf_variables
    performance     refmetrics.report_improvements
      (post)                                     the reference's better-side
                                                 bounds back in the perflog

A family says which of these steps are its own with three class
attributes (:attr:`PointTest.sweep_axes`, :attr:`~PointTest.narrow_to_capable`,
:attr:`~PointTest.load_references`), and reads and judges its output
through one protocol: :meth:`~PointTest.parse` (output text -> result,
raising :class:`clustergate.parsers.ParseError`) and
:meth:`~PointTest.check` (result -> None, raising ReFrame's
SanityError); the sanity function is ``check(parse(output_text()))``.
Every use of ReFrame's internals is in :mod:`clustergate.adapter`.
"""

import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (parameter, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from clustergate.parsers import ParseError
from clustergate import adapter
from clustergate.rfm import session
from clustergate.rfm.point import (capable, joboptions, joboutput, modes,
                                   nightbudget, placement, reference,
                                   refmetrics)
from clustergate.site import sweep
from clustergate.site.partition import (SweepPoint, axes_union,
                                        environment_model, partition_model)

# a reframe command that loads clustergate's checks runs a session: its
# end says what did not run and gives the verdict (clustergate.rfm.session;
# loading the configuration alone arms nothing)
session.arm()

#: The axes of a class created without a system (a plain import, no
#: ReFrame runtime, or no partition declaring a sweep)
NO_SYSTEM_AXES = ([1], [1], ['shm'])


def current_partitions():
    """``(name, extras)`` of each partition of the system ReFrame is
    loading checks for; empty without a runtime.

    ReFrame parameters are fixed when a class is created, so the axes
    are computed again for every class created (every time ReFrame's
    loader loads a check file): a base class imported once would
    otherwise keep the axes of the first system loaded in the process
    (loading ``localhost`` after ``emucluster`` gave fab0/fab1 and 4
    nodes)."""
    system = adapter.current_system()
    return [(p.name, partition_model(p, p.name))
            for p in system.partitions] if system else []


class PointTest(rfm.RegressionTestPlugin):
    """One point of the sweep (nodes, ppn, interconnect): its axes as
    parameters that follow the system loaded, the partitions and
    environments that can run it (no test case otherwise), its mode
    tags, its job placement, its reference, the options of the
    partition's concurrency rule and the parse/check protocol of its
    output. The hooks and their order: see the module."""

    #: The point's axes are parameters (``num_nodes``, ``ppn``,
    #: ``interconnect``) with the values of the system loaded, and the
    #: job is placed from them. False: the family has no such axes
    #: (STREAM) or takes them from elsewhere (an HPCC kernel, from its run)
    sweep_axes = True

    #: ``valid_systems`` narrowed at init to the partitions able to run it
    narrow_to_capable = True

    #: ``reference`` from ``config/references/<system>.yaml`` at setup
    load_references = True

    #: The job's MPI reports its transport, checked against the
    #: interconnect before sanity. False: the programs are not MPI (their
    #: family checks where the traffic went otherwise)
    mpi_transport = True

    #: ``{mode: {attribute: allowed values}}`` (see :mod:`clustergate.rfm.point.modes`)
    mode_selection = modes.NIGHTLY

    #: What this check needs from a point of the sweep
    sweep_requirements = variable(sweep.Requirements,
                                  value=sweep.Requirements())

    #: Why the point did not start tonight ('' : it started or is not in
    #: a nightly rotation): its partition's night budget was spent
    night_not_started = variable(str, value='', loggable=True)

    # -- the hooks: the order of the calls is the order of the steps ------

    @run_after('init')
    def point_init(self):
        modes.guard_dry_run(self)

    # always_last: after the families' own init hooks, which set the
    # requirements and may narrow the environments (to those a benchmark
    # source is built for); the tags judge the capable partitions' subsets
    @run_after('init', always_last=True)
    def point_init_last(self):
        if self.narrow_to_capable:
            capable.keep_capable_points(self)
            modes.one_environ_in_ci(self, sys.argv)
        modes.set_mode_tags(self)

    @run_after('setup')
    def point_setup(self):
        if self.sweep_axes:
            placement.apply_sweep_point(self)   # may skip: first
        if self.load_references:
            reference.apply(self)
        joboptions.apply(self)

    @run_before('run')
    def point_before_run(self):
        nightbudget.guard(self)

    @run_before('sanity')
    def point_before_sanity(self):
        if self.sweep_axes and self.mpi_transport:
            placement.verify_transport(self)

    # always_last: after the families' hooks that set perf_variables
    @run_before('performance', always_last=True)
    def point_before_performance(self):
        refmetrics.reference_names_reported_metrics(self)

    @run_after('performance')
    def point_after_performance(self):
        refmetrics.report_improvements(self)

    # -- the system's parameters ------------------------------------------

    @classmethod
    def system_parameters(cls, partitions):
        """``{parameter name: values}`` for the given ``(name, extras)``
        partitions: declared again, with fresh values, in every subclass
        created (a check file loaded for another system gets that
        system's values). A class that declares one in its own body keeps
        its own; families extend this (call ``super()``)."""
        if not cls.sweep_axes:
            return {}
        nodes, ppn, ics = system_axes(partitions)
        return {'num_nodes': nodes, 'ppn': ppn, 'interconnect': ics}

    @classmethod
    def system_fixtures(cls):
        """``{fixture name: (test class, fixture() keywords)}`` of fixtures
        whose own parameters follow the system (families): a class of a
        library module is created once per process, so each subclass
        gets a fresh subclass of it."""
        return {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _declare_system_space(cls)

    # -- the point --------------------------------------------------------

    def sweep_point(self):
        """The point, or None for a family without one (STREAM)."""
        if getattr(self, 'num_nodes', None) is None:
            return None
        return SweepPoint(self.num_nodes, self.ppn, self.interconnect)

    def point_words(self):
        """'N node(s) x P ppn over IC', for descriptions."""
        return (f'{self.num_nodes} node(s) x {self.ppn} ppn over '
                f'{self.interconnect}')

    def mode_point(self):
        """The point the partitions' mode subsets judge (a family whose
        point is not narrowed by them returns None)."""
        return modes.mode_point(self)

    def mpi_family(self):
        env = getattr(self, 'current_environ', None)
        return environment_model(env).mpi_family if env else None

    def point_reason(self, partition, mpi_family):
        """Why this point cannot run on ``partition`` (a ReFrame partition)
        with ``mpi_family``, or None. Families with more structural needs
        extend it (call ``super()``)."""
        return capable.point_reason(self, partition, mpi_family)

    def job_fabric(self):
        """The network interconnect this job's ranks use, or None."""
        return joboptions.job_fabric(self)

    def tag_names(self):
        """The family's own tags (families)."""
        return set()

    # -- the job's output: parse, check -----------------------------------

    def stdout_text(self):
        return joboutput.job_file(self, self.stdout, missing_ok=False)

    def stderr_text(self):
        return joboutput.job_file(self, self.stderr, missing_ok=True)

    def job_exit_code(self):
        return joboutput.job_exit_code(self)

    def explained(self, message):
        """``message`` with the cause the job's stderr names
        (:func:`clustergate.rfm.point.joboutput.explained`)."""
        return joboutput.explained(self, message)

    def output_text(self):
        """The text :meth:`parse` reads (the job's stdout; a family whose
        program writes a file reads that)."""
        return self.stdout_text()

    def parse(self, text):
        """The result of one output text (families); raise ParseError."""
        raise NotImplementedError

    def check(self, result):
        """Sanity of a parsed result (families); raise SanityError."""

    def parsed(self):
        """The parsed output; a SanityError with the parser's message on
        truncated or foreign output."""
        return self.parse_or_fail(self.output_text())

    def parse_or_fail(self, text):
        try:
            return self.parse(text)
        except ParseError as err:
            raise SanityError(self.explained(str(err))) from None

    def check_output(self, text):
        """Sanity of one output text; raises SanityError with the cause
        (unit tests call it on fixture files, without ReFrame's deferral)."""
        self.check(self.parse_or_fail(text))
        return True

    def check_not_ended(self):
        """SanityError when the scheduler ended the job (time limit,
        signal), whatever it printed before
        (:func:`clustergate.rfm.point.joboutput.check_not_ended`)."""
        return joboutput.check_not_ended(self)

    @sanity_function
    def validate(self):
        return sn.defer(self.check_not_ended() and
                        self.check_output(self.output_text()) and
                        joboutput.check_not_cancelled(self) and
                        joboutput.note_hang(self))


def system_axes(partitions):
    """``(nodes, ppn, interconnects)`` over the given ``(name, extras)``
    partitions (:func:`clustergate.site.partition.axes_union`), or
    :data:`NO_SYSTEM_AXES` where none declares a sweep."""
    nodes, ppn, ics = axes_union(partition_model(extras, name)
                                 for name, extras in partitions)
    return (nodes, ppn, ics) if nodes else NO_SYSTEM_AXES


def _declare_system_space(cls):
    """The class body has run, the parameter space is not built yet
    (ReFrame does that next): the system's parameters and fixtures, and
    ``reference_status`` where references are loaded, join the class's
    own body."""
    for name, values in cls.system_parameters(
            current_partitions()).items():
        adapter.declare_parameter(cls, name, parameter(values,
                                                        loggable=True))

    for name, (base, kwargs) in cls.system_fixtures().items():
        adapter.declare_fixture(cls, name, adapter.fresh_fixture(base,
                                                                 kwargs))

    if cls.load_references and not adapter.inherits_variable(
            cls, 'reference_status'):
        # where this point's reference came from, or 'no reference'
        adapter.declare_variable(cls, 'reference_status',
                                 variable(str, value='', loggable=True))
