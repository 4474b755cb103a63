"""clustergate npb: the k-ppn / 1-ppn Mop/s ratios of the NAS Parallel
Benchmarks in one session's ReFrame run report (docs/guide/benchmarks.md).
"""

import json

HELP = 'NPB Mop/s ratios, k ranks per node against 1, from a run report'


def add_parser(subparsers):
    configure(subparsers.add_parser('npb', help=HELP, description=HELP))


def configure(p):
    p.add_argument('report', help='ReFrame JSON run report (--report-file)')
    p.set_defaults(func=run)


def run(args):
    # imported here: the checks' base classes pull in ReFrame, which the
    # other subcommands do not need
    from clustergate.rfm.npb import cases_from_report, ppn_ratios

    with open(args.report) as fp:
        rows = ppn_ratios(cases_from_report(json.load(fp)))

    if not rows:
        print('no pair of NPB runs at the same process count with 1 and k '
              'ppn in this report')
        return 0

    print(f'{"system":<22} {"kernel":<6} {"cls":<3} {"ic":<6} {"ranks":>5} '
          f'{"ppn":>3} {"Mop/s k ppn":>12} {"Mop/s 1 ppn":>12} {"ratio":>6}')
    for row in rows:
        print(f'{row["system"]:<22} {row["kernel"]:<6} {row["npb_class"]:<3} '
              f'{row["interconnect"]:<6} {row["ranks"]:>5} {row["ppn"]:>3} '
              f'{row["mops_k"]:>12.1f} {row["mops_1"]:>12.1f} '
              f'{row["ratio"]:>6.3f}')

    return 0
