"""clustergate cost: jobs, node-hours and wall time of each mode on a site.

Reads a site description (YAML: per-job overhead, families with their
cases per sweep point, run time and growth with the node count, and the
partitions with their sweep per mode; see docs/reports/cost-model.md) and prints
the cost of ci, nightly and acceptance. With --measured, the families'
figures come from a real run's JSON report instead (clustergate
timing's figures), keeping the growth exponents of the file.
"""

import sys

from clustergate.site import costmodel
from clustergate.results import timing
from clustergate.commands import sources

EXAMPLES = (
    'clustergate cost docs/examples/cost-1000-nodes.yaml',
    'clustergate cost site.yaml --measured run-report.json --overhead 20',
)


def load(site_path, measured=None, overhead=None, err=sys.stderr):
    """The site description of ``site_path`` with the families of the run
    report ``measured`` and the per-job ``overhead`` when given; ValueError
    naming the file at fault."""
    import yaml

    try:
        with open(site_path) as fp:
            site = costmodel.load_site(yaml.safe_load(fp) or {})
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as e:
        raise ValueError(f'{site_path}: {e}') from None

    if measured:
        # load_report names the report when it is not JSON at all
        report = timing.load_report(measured)
        try:
            cases = timing.case_times(report)
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f'{measured}: not a JSON run report '
                             f'({type(e).__name__}: {e})') from None
        site.families = costmodel.measured_families(cases, site.families)
        if overhead is None:
            print('clustergate cost: note: --measured replaces the '
                  'families; the per-job overhead stays the file\'s',
                  file=err)
    if overhead is not None:
        site.overhead_s = overhead
    return site


def run(args, out=None, err=None):
    out, err = out or sys.stdout, err or sys.stderr
    try:
        site = load(args.site, args.measured, args.overhead, err)
    except (OSError, ValueError) as e:
        print(f'clustergate cost: error: {e}', file=err)
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
        'jobs, node-hours and wall time of each mode on a site', __doc__,
        examples=EXAMPLES
    )
    p.add_argument('site', help='site description (YAML)')
    p.add_argument('--measured', metavar='REPORT',
                   help='family figures from this JSON run report')
    p.add_argument('--overhead', type=float, metavar='SECONDS',
                   help='per-job overhead (default: the file\'s)')
    p.set_defaults(func=run)
    return p
