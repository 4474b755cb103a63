"""clustergate cost: jobs, node-hours and wall time of each mode on a site.

Reads a site description (YAML: per-job overhead, families with their
cases per sweep point, run time and growth with the node count, and the
partitions with their sweep per mode; see docs/reports/cost-model.md) and prints
the cost of ci, nightly and acceptance. With --measured, the families'
figures come from a real run's JSON report instead (clustergate
timing's figures), keeping the growth exponents of the file.

With --system, the size of the ci and nightly modes of a configured
system before a run: for each partition and for the whole system, the
test cases ReFrame lists (``-lC``) and their minutes by the cost model,
against the mode's budget (the nightly's: the partition's rotation
budget where it declares one): the figures of the size line a ``-l``
listing prints (clustergate.planning.modesize).
"""

import json
import os
import re
import subprocess
import sys

from clustergate import PROJECT_ROOT
from clustergate.planning import costmodel, modesize
from clustergate.results import timing
from clustergate.commands import sources

EXAMPLES = (
    'clustergate cost docs/examples/cost-1000-nodes.yaml',
    'clustergate cost site.yaml --measured run-report.json --overhead 20',
    'clustergate cost --system localhost',
)

#: the modes whose size --system shows
SIZED_MODES = ('ci', 'nightly')
#: seconds one ReFrame listing may take
LIST_TIMEOUT = 600
#: ReFrame colours its errors on a terminal; a one-line message is plain
_ANSI = re.compile(r'\x1b\[[0-9;]*m')


def _reframe():
    exe = os.path.join(os.path.dirname(sys.executable), 'reframe')
    return [exe] if os.path.exists(exe) else [sys.executable, '-m',
                                              'reframe']


def _reframe_out(args, run):
    """stdout of ``reframe args``; ValueError with ReFrame's last line
    when it fails."""
    run = run or subprocess.run
    try:
        res = run(_reframe() + args, capture_output=True, text=True,
                  timeout=LIST_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise ValueError(f'reframe {" ".join(args)}: no answer in '
                         f'{LIST_TIMEOUT} s') from None
    if res.returncode != 0:
        text = _ANSI.sub('', res.stdout + res.stderr).strip().splitlines()
        raise ValueError(f'reframe {" ".join(args)} exited '
                         f'{res.returncode}: '
                         f'{text[-1] if text else "no output"}')
    return res.stdout


def rotation_budgets(system, config, run=None):
    """partition (``system:name``) -> its rotation's minutes, where it
    declares one (ReFrame's ``--show-config``)."""
    text = _reframe_out(['-C', config, '--system', system,
                         '--show-config=systems/0/partitions'], run)
    try:
        parts = json.loads(text[text.index('['):text.rindex(']') + 1])
    except ValueError:
        raise ValueError(f'reframe --show-config: no partitions of '
                         f'{system} in its output') from None
    out = {}
    for p in parts:
        rot = (p.get('extras') or {}).get('rotation') or {}
        if rot.get('budget_min'):
            out[f'{system}:{p["name"]}'] = float(rot['budget_min'])
    return out


def mode_size_lines(system, config, run=None):
    """The lines of --system: per mode, each partition's size against its
    budget, then the whole system's (the ``-l`` line's figures)."""
    rotations = rotation_budgets(system, config, run)
    lines = [f'system {system} ({config}): the size of each mode by the '
             f'cost model\'s defaults, before a run']
    for mode in SIZED_MODES:
        listing = _reframe_out(['-C', config, '--system', system,
                                '--mode', mode, '-lC'], run).splitlines()
        sizes = modesize.listed_sizes(listing, mode)
        for part in sorted(sizes):
            limit = modesize.budget(mode, rotations.get(part))
            lines.append(f'{mode:<8} {part}: ' + modesize.size_text(
                sizes[part], 'test case(s)', mode, limit))
        total = modesize.sum_sizes(sizes.values())
        lines.append(f'{mode:<8} all partitions: ' + modesize.size_text(
            total, 'test case(s)', mode, modesize.BUDGETS[mode]))
    return lines


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
    if args.system:
        try:
            lines = mode_size_lines(args.system, args.config)
        except (OSError, ValueError) as e:
            print(f'clustergate cost: error: {e}', file=err)
            return 2
        print('\n'.join(lines), file=out)
        return 0

    if not args.site:
        print('clustergate cost: error: give a site description (YAML) '
              'or --system NAME', file=err)
        return 2

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
    p.add_argument('site', nargs='?', help='site description (YAML)')
    p.add_argument('--system', metavar='NAME',
                   help='the size of the ci and nightly modes of this '
                        'configured system (per partition, by ReFrame\'s '
                        'listing and the cost model)')
    p.add_argument('--config', metavar='SETTINGS',
                   default=os.path.join(PROJECT_ROOT, 'config',
                                        'settings.py'),
                   help='ReFrame settings of --system (default: the '
                        'project\'s config/settings.py)')
    p.add_argument('--measured', metavar='REPORT',
                   help='family figures from this JSON run report')
    p.add_argument('--overhead', type=float, metavar='SECONDS',
                   help='per-job overhead (default: the file\'s)')
    p.set_defaults(func=run)
    return p
