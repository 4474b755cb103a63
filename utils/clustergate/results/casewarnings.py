"""Warnings a session's test cases kept for the verdict: said, not failed.

A check that finds something worth a look but not a failure keeps it in
a loggable variable, so that ReFrame's run report (and the results
database, and the perflog) holds it beside the case's result. Today one
check does: the link matrix's ``link_warnings`` (a borderline node link
its retest left within its noise: ``undecided node link n4 on fabric
fab0 (sent 0.94x its peers (-2.8 MADs)): not named ...``). The report's
verdict lists them as warnings; they do not change its word or its exit
status.
"""

import ast
from dataclasses import dataclass
from typing import Dict, List

#: the loggable variables that hold a case's warnings
WARNING_VARIABLES = ('link_warnings',)


@dataclass
class CaseWarning:
    """One warning of one test case of the session."""

    name: str
    where: str          # system:partition+environ
    text: str


def _texts(value) -> List[str]:
    """The warnings of one variable's value: a list in the run report;
    its text (``['a', 'b']``) where it went through a perflog."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value) if value.strip() else []
        except (ValueError, SyntaxError):
            value = [value]
    if not isinstance(value, (list, tuple)):
        return []
    return [str(v) for v in value if str(v).strip()]


def warnings_of(report: Dict) -> List[CaseWarning]:
    """The warnings of the run report ``report``, each case by its last
    attempt (a retry's warnings replace the first run's)."""
    last = {}
    for run in report.get('runs', []):
        for tc in run.get('testcases', []):
            last[(tc.get('name'), tc.get('system'), tc.get('partition'),
                  tc.get('environ'))] = tc

    out = []
    for tc in last.values():
        where = (f'{tc.get("system")}:{tc.get("partition")}'
                 f'+{tc.get("environ")}')
        for var in WARNING_VARIABLES:
            for text in _texts(tc.get(var)):
                out.append(CaseWarning(
                    tc.get('display_name') or tc.get('name', '?'), where,
                    text))
    return out
