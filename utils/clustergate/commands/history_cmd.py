"""clustergate history: change points of every metric across nights.

Reads ReFrame's results database, JSON run reports or perflogs (by default
the results database, else the perflogs), and prints for each metric the
shifts and drifts found (see clustergate.results.history): which way it
moved, by how much against its noise, and since which run (ReFrame
session) and date. Exit status 1 if a regression is out of its reference
(band FAIL), 3 if no metric has the 4 runs a search needs, else 0.
"""

import sys

from clustergate.results import history
from clustergate.results import samples
from clustergate.results import times
from clustergate.commands import sources

EXAMPLES = (
    'clustergate history',
    'clustergate history --check LinkMatrix --since now-14d',
    'clustergate history --perflogs perflogs/ --all',
)


def run(args, out=None, err=None):
    out, err = out or sys.stdout, err or sys.stderr
    found, where = sources.read_runs(args.db, args.json, args.perflogs,
                                     'history', err)
    if found is None or sources.narrowed(found, args.system, args.check,
                                         'history', where, err) is None:
        return 2

    return report(found, out, system=args.system, check=args.check,
                  since=times.since(args.since, 'history'), alpha=args.alpha,
                  min_shift=args.min_shift, improvements=args.all)


def report(found, out, system=None, check=None, since=None,
           alpha=history.ALPHA, min_shift=history.MIN_SHIFT,
           improvements=False):
    """Prints the change points of ``found``; 1 if one is a regression out
    of its reference, 3 if no metric has enough runs to be searched
    (``history.MIN_RUNS``), else 0."""
    chosen = samples.select(found, system=system, check=check, since=since,
                            include_perf_failures=True)
    findings = history.analyse(chosen, alpha=alpha, min_shift=min_shift)
    if not improvements:
        findings = [f for f in findings if f.band != 'improvement']

    groups = samples.group(chosen)
    short = sum(1 for ss in groups.values() if len(ss) < history.MIN_RUNS)
    head = (f'history: {len(groups)} metric(s), '
            f'{len({s.run for s in chosen})} run(s)')
    if short == len(groups):
        most = max((len(ss) for ss in groups.values()), default=0)
        print(f'{head}: too few runs to search: a change point needs '
              f'{history.MIN_RUNS} runs of a metric, the most any metric '
              f'has is {most}', file=out)
        return 3

    searched = (f'{len(groups) - short} of them searched, {short} with '
                f'fewer than {history.MIN_RUNS} runs (too few to search)'
                if short else 'all searched')
    print(f'{head}, {searched}; {len(findings)} change(s)', file=out)
    for f in findings:
        print(f.message(), file=out)

    return 1 if any(f.band == 'fail' for f in findings) else 0


def add_parser(subparsers):
    p = sources.add_subcommand(
        subparsers, 'history', 'change points of every metric across runs',
        __doc__, examples=EXAMPLES)
    sources.add_runs(p)
    sources.add_filters(p)
    p.add_argument('--alpha', type=float, default=history.ALPHA,
                   help=f'significance level (default: {history.ALPHA})')
    p.add_argument('--min-shift', type=float, default=history.MIN_SHIFT,
                   help='smallest relative shift reported (default: '
                        f'{history.MIN_SHIFT})')
    p.add_argument('--all', action='store_true',
                   help='also list improvements')
    p.set_defaults(func=run)
    return p
