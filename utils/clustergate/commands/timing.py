"""clustergate timing: where a run's (a ReFrame session's) time went.

Per family, per check and per sweep point: cases, build, run (including
queue wait), other phases, total, share and median; and the one-rank cases
that repeat identical work on several interconnects. Reads a JSON run
report (reframe --report-file) or the latest run of the results
database (default: output/results.db, or $CG_RESULTS_DB).
"""

import sys

from clustergate.results import timing
from clustergate.commands import sources

EXAMPLES = (
    'clustergate timing                # latest run of the results DB',
    'clustergate timing --report run-report.json --top 20',
)


def run(args, out=None, err=None):
    report = sources.read_session(args.json, args.db, 'timing', err)
    if report is None:
        return 2

    for line in timing.breakdown(report, top=args.top):
        print(line, file=out or sys.stdout)

    return 0


def add_parser(subparsers):
    p = sources.add_session_command(
        subparsers, 'timing', "where a run's time went", __doc__, EXAMPLES,
        run)
    p.add_argument('--top', type=sources.positive_int, default=8,
                   help='rows of the slowest checks and points (default: 8)')
    return p
