"""clustergate history: change points of every metric across nights.

Reads ReFrame's results database (default: output/results.db, or
$CG_RESULTS_DB), JSON run reports or perflogs, and prints for each metric
the shifts and drifts found (see clustergate.results.history): which way it moved,
by how much against its noise, and since which session and date. Exit
status 1 if a regression is out of its reference (band FAIL), else 0.

Examples:
  clustergate history
  clustergate history --check LinkMatrix --since 2026-11-01
  clustergate history --perflogs perflogs/ --all
"""

import sys

from clustergate.refs import baseline
from clustergate.results import history
from clustergate.results import times
from clustergate.commands import sources


def run(args, out=None, err=None):
    out, err = out or sys.stdout, err or sys.stderr
    db = args.db or (None if (args.json or args.perflogs)
                     else sources.default_db())
    try:
        samples = baseline.load_samples(db, args.json, args.perflogs)
    except (OSError, ValueError) as e:
        print(f'clustergate history: error: {e}', file=err)
        return 2

    chosen = baseline.select(samples, system=args.system, check=args.check,
                             since=times.since(args.since, 'history'),
                             include_perf_failures=True)
    findings = history.analyse(chosen, alpha=args.alpha,
                               min_shift=args.min_shift)
    if not args.all:
        findings = [f for f in findings if f.band != 'improvement']

    metrics = len(baseline.group(chosen))
    print(f'history: {metrics} metric(s), {len({s.run for s in chosen})} '
          f'run(s); {len(findings)} change(s)', file=out)
    for f in findings:
        print(f.message(), file=out)

    return 1 if any(f.band == 'fail' for f in findings) else 0


def add_parser(subparsers):
    p = subparsers.add_parser(
        'history', help='change points of every metric across runs',
        description=__doc__.split('Examples:')[0].strip(),
        epilog='Examples:' + __doc__.split('Examples:')[1],
        formatter_class=__import__('argparse').RawDescriptionHelpFormatter
    )
    sources.add_runs(p, perflogs_default=None,
                     db_help="ReFrame's SQLite results database (default: "
                             "$CG_RESULTS_DB or output/results.db)")
    p.add_argument('--system', help='only this system')
    p.add_argument('--check', metavar='REGEX',
                   help='only checks whose name matches')
    p.add_argument('--since', metavar='ISO',
                   help='only runs completed at or after this time (UTC '
                        'unless the time names its zone)')
    p.add_argument('--alpha', type=float, default=history.ALPHA,
                   help=f'significance level (default: {history.ALPHA})')
    p.add_argument('--min-shift', type=float, default=history.MIN_SHIFT,
                   help='smallest relative shift reported (default: '
                        f'{history.MIN_SHIFT})')
    p.add_argument('--all', action='store_true',
                   help='also list improvements')
    p.set_defaults(func=run)
    return p
