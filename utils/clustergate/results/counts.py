"""How many test cases a session had, counted one way by every block that
ends it (the time breakdown, the verdict) and said the way ReFrame says
it.

ReFrame's last line, ``Ran 52/127 test case(s) from 110 check(s)``,
counts the cases that completed (passed, failed, or an expected failure)
out of all the session's cases, and *fixtures* (our programs' builds, a
shared run such as HPCC's) among them, each its own case and check. The
blocks count tests and fixtures apart and name ReFrame's figure, so the
numbers add up: tests that ran + tests not run = tests; + fixtures =
ReFrame's total. A case is counted by its last attempt (a retry replaces
the first).
"""

from dataclasses import dataclass

#: results of a case that ran to its end (ReFrame's "completed")
COMPLETED = ('pass', 'fail', 'xfail', 'xpass')


@dataclass(frozen=True)
class SessionCounts:
    """Test cases and fixtures of a session: all, and those that ran."""

    tests: int
    tests_ran: int
    fixtures: int
    fixtures_ran: int

    @property
    def ran(self) -> int:
        return self.tests_ran + self.fixtures_ran

    @property
    def total(self) -> int:
        return self.tests + self.fixtures

    @property
    def tests_not_run(self) -> int:
        return self.tests - self.tests_ran

    def reframe(self) -> str:
        """``ReFrame's "Ran 52/127"``."""
        return f'ReFrame\'s "Ran {self.ran}/{self.total}"'

    def split(self) -> str:
        """``44 test(s) + 8 fixture(s)``: the cases that ran."""
        return (f'{self.tests_ran} test(s) + {self.fixtures_ran} '
                f'fixture(s)')

    def line(self) -> str:
        """``cases: 44 of 115 tests ran, 71 not run; 8 of 12 fixtures
        (builds, shared runs) ran: ReFrame's "Ran 52/127"``."""
        return (f'cases: {self.tests_ran} of {self.tests} test(s) ran, '
                f'{self.tests_not_run} not run; {self.fixtures_ran} of '
                f'{self.fixtures} fixture(s) (builds, shared runs) ran: '
                f'{self.reframe()}')


def final_cases(report):
    """Each test case's last attempt (a retry replaces the first)."""
    cases = {}
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            key = (tc.get('hashcode') or tc.get('unique_name') or
                   tc.get('display_name') or tc.get('name'),
                   tc.get('system'), tc.get('partition'), tc.get('environ'))
            cases[key] = tc

    return list(cases.values())


def ran(tc) -> bool:
    """Whether a case ran to its end (not skipped, aborted or left out
    for a failed dependency)."""
    return tc.get('result') in COMPLETED


def session_counts(report) -> SessionCounts:
    cases = final_cases(report)
    tests = [tc for tc in cases if not tc.get('fixture')]
    fixtures = [tc for tc in cases if tc.get('fixture')]
    return SessionCounts(len(tests), sum(map(ran, tests)), len(fixtures),
                         sum(map(ran, fixtures)))
