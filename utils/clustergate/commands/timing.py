"""clustergate timing: where a ReFrame session's time went.

Per family, per check and per sweep point: cases, build, run (including
queue wait), other phases, total, share and median; and the one-rank cases
that repeat identical work on several interconnects. Reads a JSON run
report (reframe --report-file) or the latest session of the results
database (default: output/results.db, or $CG_RESULTS_DB).
"""

import sys

from clustergate import timing


def run(args, out=None, err=None):
    out, err = out or sys.stdout, err or sys.stderr
    try:
        report = timing.session_report(args.json, args.db)
    except (OSError, ValueError) as e:
        print(f'clustergate timing: error: {e}', file=err)
        return 2

    for line in timing.breakdown(report, top=args.top):
        print(line, file=out)

    return 0


def add_parser(subparsers):
    p = subparsers.add_parser(
        'timing', help="where a session's time went",
        description=__doc__.strip().split('\n\n')[1]
    )
    p.add_argument('--json', metavar='FILE', help='a JSON run report')
    p.add_argument('--db', metavar='FILE',
                   help="ReFrame's results database (latest session)")
    p.add_argument('--top', type=int, default=8,
                   help='rows of the slowest checks and points (default: 8)')
    p.set_defaults(func=run)
    return p
