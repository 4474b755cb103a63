"""clustergate-lab sensitivity: the link-fault sensitivity campaign and the
nightly sequence on the emulated cluster (the work is done by
:mod:`clustergate_lab.sensitivity`; docs/reports/sensitivity.md)."""

import argparse
import os
import sys

from clustergate.commands.sources import EXIT_CODES
from clustergate_lab import sensitivity as sens
from clustergate_lab.sensitivity import LEVELS

# -- command ------------------------------------------------------------------

def _plan(args):
    if args.plan == 'faults':
        known = sens.CASE_SETS[args.cases][0]
        cases = {c: known[c] for c in args.case or ()} or known
        return sens.fault_plan(args.runs, args.healthy, cases=cases,
                               healthy_per_round=args.healthy_per_round,
                               schedule=args.schedule,
                               time_limit=args.time_limit)
    if args.plan == 'nights':
        return sens.nights(args.nights, args.from_night, args.level, args.node,
                      args.fabric)
    return sens.interleaved(sens.campaign(args.nodes, args.levels, args.runs,
                                args.healthy, args.fabric))


def _time_limit(text):
    """--time-limit: a ReFrame time limit, checked here (not by a job)."""
    try:
        sens.limit_seconds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _unknown_case(args):
    """The first --case that is no fault case (or that is given without
    --plan faults), as the one-line error; None when all are known."""
    known = sens.CASE_SETS[args.cases][0]
    for case in args.case or ():
        if args.plan != 'faults':
            return f'--case {case}: only with --plan faults'
        if case not in known:
            return (f'--case {case}: no such fault case of --cases '
                    f'{args.cases} (cases: {", ".join(known)})')
    return None


def cmd_run(args):
    bad = _unknown_case(args)
    if bad:
        print(f'clustergate-lab sensitivity run: error: {bad}',
              file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print('clustergate-lab sensitivity run: error: needs root (it degrades '
              'links of the emulated cluster)', file=sys.stderr)
        return 2
    if not args.bring_up and not sens.is_up():
        print('clustergate-lab sensitivity run: error: no emulated cluster is '
              'up (drop --no-up)', file=sys.stderr)
        return 2
    up_args = sens.CASE_SETS[args.cases][1] if args.plan == 'faults' else ()
    left = sens.run_plan(_plan(args), args.workdir, args.max_minutes,
                         bring_up=args.bring_up, up_args=up_args,
                         references=args.references)
    print(f'{left} run(s) left')
    return 0


def load_runs(workdir):
    """The runs recorded in ``workdir``/runs.json; ValueError naming the
    file when there is none or it is not a record of the campaign."""
    path = os.path.join(workdir, 'runs.json')
    if not os.path.isfile(path):
        raise ValueError(f'{path}: no such file (not a campaign work dir)')
    try:
        return sens.load(workdir)
    except (ValueError, TypeError, AttributeError) as e:
        raise ValueError(f'{path}: not a record of campaign runs '
                         f'({type(e).__name__}: {e})') from None


def cmd_table(args):
    try:
        runs = load_runs(args.workdir)
    except (OSError, ValueError) as e:
        print(f'clustergate-lab sensitivity table: error: {e}',
              file=sys.stderr)
        return 2
    table(runs, args.workdir, args.figure)
    return 0


def table(runs, workdir, figure=None):
    """Prints the campaign's table of ``runs`` (and draws ``figure``)."""
    errors = sum(r.kind == 'error' for r in runs)
    rows, hrow = sens.table([r for r in runs if r.kind != 'error'])
    if any(r.kind == 'fault' for r in runs):
        runs = [sens.rescore(r, workdir) for r in runs]
        print(sens.fault_markdown(sens.fault_table(runs), hrow, errors))
        return
    print(sens.markdown(rows, hrow, errors))
    if figure:
        sens.figure(rows, hrow, figure)
        print(f'figure: {figure}')


def add_parser(subparsers):
    doc = sens.__doc__.split('Examples:')
    p = subparsers.add_parser(
        'sensitivity', help='how small a link fault the link matrix names '
        '(emulated cluster)', description=doc[0].strip(),
        epilog='Examples:' + doc[1] + '\n' + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest='action', metavar='ACTION')
    sub.required = True
    r = sub.add_parser('run', help='run (the rest of) a plan')
    r.add_argument('--workdir', required=True,
                   help='runs.json, results.db, perflogs and stage '
                        'directories (must be reachable by cgrunner)')
    r.add_argument('--plan', choices=['campaign', 'nights', 'faults'],
                   default='campaign')
    r.add_argument('--levels', type=lambda s: [int(x) for x in s.split(',')],
                   default=list(LEVELS), help='%% of the link rate')
    r.add_argument('--runs', type=int, default=5,
                   help='runs per level (faults: per fault case)')
    r.add_argument('--healthy', type=int, default=20)
    r.add_argument('--case', action='append', metavar='NAME',
                   help='faults: only this fault case (repeatable; the '
                        'healthy runs stay in the plan); a work dir keeps '
                        'what the other cases ran')
    r.add_argument('--cases', choices=sorted(sens.CASE_SETS),
                   default='tree9',
                   help='faults: the case set (tree9: the 9-node tree; '
                        'fattree3: the 24-node three-level tree, brought '
                        'up as such)')
    r.add_argument('--schedule', choices=['topology', 'all-pairs'],
                   default='topology',
                   help="the check's rounds: those of the declared "
                        'topology, or every pair')
    r.add_argument('--time-limit', type=_time_limit, metavar='LIMIT',
                   help="faults: the check's job limit (such as 30m; "
                        "default: its own, 10m for the tree's rounds and "
                        'more for every pair); a run cut by it is not '
                        'tried again')
    r.add_argument('--healthy-per-round', type=int, default=0,
                   help='faults: healthy runs in each round of the cases')
    r.add_argument('--nodes', type=int, default=9)
    r.add_argument('--fabric', default='fab0')
    r.add_argument('--nights', type=int, default=12)
    r.add_argument('--from-night', type=int, default=7)
    r.add_argument('--level', type=int, default=90)
    r.add_argument('--node', default='n5')
    r.add_argument('--max-minutes', type=float, default=25,
                   help='start no run after this many minutes (one hold of '
                        'the cluster lock)')
    r.add_argument('--references', metavar='DIR',
                   help='CG_REFERENCES_DIR of the sessions (e.g. a learnt '
                        'links/<system>.yaml below it)')
    r.add_argument('--no-up', dest='bring_up', action='store_false',
                   help='use the cluster that is up')
    r.set_defaults(func=cmd_run)
    t = sub.add_parser('table', help='table (and figure) of a work dir')
    t.add_argument('--workdir', required=True)
    t.add_argument('--figure', help='PNG path')
    t.set_defaults(func=cmd_table)
    return p
