"""clustergate cost: jobs, node-hours and wall time of each mode on a site.

Reads a site description (YAML: per-job overhead, families with their
cases per sweep point, run time and growth with the node count, and the
partitions with their sweep per mode; see docs/reports/cost-model.md) and prints
the cost of ci, nightly and acceptance. With --measured, the families'
figures come from a real session's JSON report instead (clustergate
timing's figures), keeping the growth exponents of the file.
"""

import sys

from clustergate.site import costmodel
from clustergate.results import timing
from clustergate.commands import sources


def run(args, out=None, err=None):
    import yaml

    out, err = out or sys.stdout, err or sys.stderr
    try:
        with open(args.site) as fp:
            site = costmodel.load_site(yaml.safe_load(fp) or {})
        if args.measured:
            cases = timing.case_times(timing.load_report(args.measured))
            site.families = costmodel.measured_families(cases, site.families)
            if args.overhead is None:
                print('clustergate cost: note: --measured replaces the '
                      'families; the per-job overhead stays the file\'s',
                      file=err)
        if args.overhead is not None:
            site.overhead_s = args.overhead
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as e:
        print(f'clustergate cost: error: {args.site}: {e}', file=err)
        return 2

    print(f'site {args.site}: {sum(p.nodes for p in site.partitions)} '
          f'nodes in {len(site.partitions)} partition(s), per-job overhead '
          f'{site.overhead_s:g} s', file=out)
    for line in costmodel.table(site):
        print(line, file=out)

    return 0


def add_parser(subparsers):
    p = sources.add_subcommand(
        subparsers, 'cost',
        'jobs, node-hours and wall time of each mode on a site', __doc__
    )
    p.add_argument('site', help='site description (YAML)')
    p.add_argument('--measured', metavar='REPORT',
                   help='family figures from this JSON run report')
    p.add_argument('--overhead', type=float, metavar='SECONDS',
                   help='per-job overhead (default: the file\'s)')
    p.set_defaults(func=run)
    return p
