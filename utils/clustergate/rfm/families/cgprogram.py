"""Base test of every program of ours in checks/src (cg_contention,
cg_memory, cg_memlat, cg_noise, cg_nic, cg_linkmatrix): the build fixture,
reading and verifying the shared output format (:meth:`parse`), and the
layout checks every run must pass (:meth:`check`). Families add their own
sanity in :meth:`check_run`.
"""

import reframe as rfm
from reframe.core.builtins import fixture, variable
from reframe.core.exceptions import SanityError

from clustergate.parsers import cgoutput
from clustergate.rfm.families.build import CgProgramsBuild
from clustergate.rfm.point.base import PointTest


class CgProgramTest(PointTest, rfm.RunOnlyRegressionTest):
    """Runs one of our C programs at one sweep point and checks its output:
    completion line, no error, as many measurements as announced, and the
    ranks, nodes and ranks per node that were asked for."""

    #: Program of checks/src (set by subclasses)
    program = variable(str)

    programs = fixture(CgProgramsBuild, scope='environment')

    valid_systems = ['+mpi']
    valid_prog_environs = ['+mpi']
    maintainers = ['clustergate']

    def program_path(self):
        return self.programs.path(self.program)

    def _run(self):
        return cgoutput.parse(self.stdout_text())

    def expected_pattern(self):
        """A pattern the output must contain (None: any)."""
        return None

    def parse(self, text):
        """The run of one output text, verified (completion line, no
        error, as many measurements as announced); SanityError with the
        cause."""
        try:
            run = cgoutput.parse(text)
            if text.strip() and not (run.measurements or run.errors or
                                     run.skips or run.done):
                raise SanityError(self.not_our_output(text))

            cgoutput.verify(run, program=self.program,
                            pattern=self.expected_pattern())
        except cgoutput.OutputError as err:
            raise SanityError(self.explained(f'{self.program}: {err}')) \
                from None

        return run

    def check(self, run):
        """A measurement, the layout asked for, the family's own sanity."""
        if not run.measurements:
            raise SanityError(self.explained(
                f'{self.program}: no measurement in the output'))

        self.check_layout(run.measurements[0])
        self.check_run(run)

    def not_our_output(self, text):
        """Message for a stdout with no CG line at all: another program's
        output (e.g. the wrong executable), not a run cut short."""
        lines = text.strip().splitlines()
        what = (f'its stdout is not {self.program} output: no CG line in '
                f'{len(lines)} line(s), first: {lines[0].strip()[:80]!r}')
        if self.job_exit_code() == 0:
            return f'{self.program} exited 0 but {what}'

        return self.explained(f'{self.program}: {what}')

    def check_layout(self, first):
        """The job ran with the ranks, nodes and ppn of the sweep point."""
        expected = self.num_tasks or 0
        if expected and first['ranks'] != expected:
            raise SanityError(f'{self.program} ran with {first["ranks"]} '
                              f'ranks, expected {expected}')

        if first['nodes'] != self.num_nodes:
            raise SanityError(f'ranks landed on {first["nodes"]} node(s), '
                              f'expected {self.num_nodes}: placement is '
                              f'wrong')

        if expected and first['ppn'] != self.ppn:
            raise SanityError(f'{first["ppn"]} ranks per node, expected '
                              f'{self.ppn}: placement is wrong')

    def check_run(self, run):
        """Family-specific sanity (subclasses); raise SanityError."""
