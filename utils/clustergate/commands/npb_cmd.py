"""clustergate npb: the k-ppn / 1-ppn Mop/s ratios of the NAS Parallel
Benchmarks in one run's ReFrame JSON report (docs/guide/benchmarks.md).
"""

import sys

from clustergate.commands import sources

HELP = 'NPB Mop/s ratios, k ranks per node against 1, from a run report'
EXAMPLES = ('clustergate npb run-report.json',)


def add_parser(subparsers):
    p = sources.add_subcommand(subparsers, 'npb', HELP, __doc__,
                               examples=EXAMPLES)
    p.add_argument('report', help='ReFrame JSON run report (--report-file)')
    p.set_defaults(func=run)
    return p


def run(args, out=None, err=None):
    out, err = out or sys.stdout, err or sys.stderr
    from clustergate.results import timing
    from clustergate.results.npbratios import cases_from_report, ppn_ratios

    try:
        rows = ppn_ratios(cases_from_report(timing.load_report(args.report)))
    except (OSError, ValueError) as e:
        print(f'clustergate npb: error: {e}', file=err)
        return 2

    print_ratios(rows, out)
    return 0


def print_ratios(rows, out):
    """The ratio table of ppn_ratios()' ``rows``."""
    if not rows:
        print('no pair of NPB runs at the same process count with 1 and k '
              'ppn in this report', file=out)
        return

    print(f'{"system":<22} {"kernel":<6} {"cls":<3} {"ic":<6} {"ranks":>5} '
          f'{"ppn":>3} {"Mop/s k ppn":>12} {"Mop/s 1 ppn":>12} {"ratio":>6}',
          file=out)
    for row in rows:
        print(f'{row["system"]:<22} {row["kernel"]:<6} {row["npb_class"]:<3} '
              f'{row["interconnect"]:<6} {row["ranks"]:>5} {row["ppn"]:>3} '
              f'{row["mops_k"]:>12.1f} {row["mops_1"]:>12.1f} '
              f'{row["ratio"]:>6.3f}', file=out)
