"""clustergate timing: where a run's (a ReFrame session's) time went.

Per family, per check and per sweep point: cases, build, run (including
queue wait), other phases, total, share and median; and the one-rank cases
that repeat identical work on several interconnects. Reads a JSON run
report (reframe --report-file) or a run of the results database
(default: output/results.db, or $CG_RESULTS_DB): the latest, or the one
--session names; the first line names the session read.
"""

import sys

from clustergate.results import timing
from clustergate.commands import sources

EXAMPLES = (
    'clustergate timing                # latest run of the results DB',
    'clustergate timing --report run-report.json --top 20',
)


def run(args, out=None, err=None):
    report = sources.read_session(args.json, args.db, 'timing', err,
                                  args.session)
    if report is None:
        return 2

    out = out or sys.stdout
    print(f'read: {timing.describe_session(report)}', file=out)
    for line in timing.breakdown(report, top=args.top):
        print(line, file=out)

    return 0


def add_parser(subparsers):
    p = sources.add_session_command(
        subparsers, 'timing', "where a run's time went", __doc__, EXAMPLES,
        run)
    p.add_argument('--top', type=sources.positive_int, default=8,
                   help='rows of the slowest checks and points (default: 8)')
    return p
