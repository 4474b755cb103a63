"""``clustergate report``: PNG figures and one static HTML page from the
perflogs and/or ReFrame's results database.

The page says the verdict first: every failed test (build, sanity, run,
performance; from the results database or JSON reports), every metric out
of its reference with its deviation and whether that is a regression or a
result *better* than the reference (suspicious, not a failure), and every
change point across runs (:mod:`clustergate.results.history`) with its date; an
empty section says why it is empty. Then the figures (matplotlib, the
``report`` extra):

* latency and bandwidth vs message size, per check, of the latest session
  only, one line per MPI, interconnect and scale (log axes);
* the (k ppn)/(1 ppn) ratio of the classic studies: the time with k
  processes per node over the time with one, same nodes and size;
* the link-matrix heat map of the latest matrix per system and fabric
  (``linkmatrix_<fabric>.csv`` in ReFrame's output directory);
* a trend per metric that has a reference or a change point, over time,
  with its band and its change points marked.

It prints the headline (GREEN, RED or UNCHECKED, with how many metrics
were judged against a reference and how many had none) and the session
whose failed tests it lists (the latest, or ``--session``), and, with
``--junit FILE``, writes the same verdict as JUnit XML for CI. Exit
status: 0 GREEN, 1 RED, 3 UNCHECKED (nothing was judged), 2 bad input.
Warnings the session's cases kept (a borderline node link the link
matrix's retest left within its noise) are listed after the headline
and on the page: they do not change the verdict or the exit status.

The page also lists the latest value of every metric with its status:
within reference, out of reference, or "no reference" (never counted as
checked). See docs/guide/report.md.
"""

import os
import re
import sys

from clustergate import PROJECT_ROOT
from clustergate.results import casewarnings
from clustergate.report import page as report
from clustergate.report import plotting
from clustergate.results import times
from clustergate.results import timing
from clustergate.results.samples import on_system
from clustergate.commands import sources

EXAMPLES = (
    'clustergate report          # the results DB (or perflogs/) -> '
    'report/index.html',
    'clustergate report --db output/results.db -o emu/index.html '
    '--system emucluster',
    'clustergate report --since now-7d --junit verdict.xml',
)


def _page_path(output):
    """(directory, file name) of the page ``-o`` names; None, with one
    line on stderr, for a directory: ``-o`` names a file in every
    subcommand."""
    if not (os.path.isdir(output) or output.endswith(os.sep)):
        return os.path.split(os.path.abspath(output))
    page = os.path.join(output, 'index.html')
    print(f'clustergate report: error: -o {output} is a directory; -o names '
          f'the page (e.g. -o {page}); its figures go beside it',
          file=sys.stderr)
    return None


#: exit status of each headline (docs/cli.md): a CI step that gates on
#: the report fails on RED; UNCHECKED (nothing judged) is not "checked and
#: fine": 3, "too few runs to decide", as baseline and history say it
EXIT_STATUS = {'GREEN': 0, 'RED': 1, 'UNCHECKED': 3}


def run(args):
    where = _page_path(args.output)
    if where is None:
        return 2
    try:
        db, reports, perflogs = sources.runs_inputs(args.db, args.json,
                                                    args.perflogs)
        source = sources.describe_inputs(db, reports, perflogs)
        samples = report.load_samples(perflogs, db, reports)
        judged = report.judged_session(db, reports, args.session)
        outcomes = None if judged is None else \
            report.outcomes_of(judged)
        warned = [] if judged is None else casewarnings.warnings_of(judged)
        verdicts = report.matrix_verdicts(db, reports)
    except (OSError, ValueError) as err:
        print(f'clustergate report: error: {err}', file=sys.stderr)
        return 2

    sources.note_unreadable(samples, 'report')
    if sources.narrowed(samples, args.system, args.check, 'report',
                        source) is None:
        return 2

    samples = select(samples, args, judged)
    dirs = args.matrices if args.matrices is not None else \
        [os.path.join(PROJECT_ROOT, 'output')]
    try:
        plotting.pyplot()
    except ImportError as err:
        print(f'clustergate report: needs matplotlib (pip install '
              f'clustergate[report]): {err}', file=sys.stderr)
        return 2

    ver = report.verdict(samples, outcomes, warned,
                         None if judged is None else report.cases_ran(judged))
    page = report.render(samples, where[0], dirs, args.max_trends,
                         outcomes=outcomes, verdicts=verdicts, ver=ver,
                         name=where[1])
    print(ver.headline())
    for line in report.warning_lines(ver):
        print(line)
    print(f'read: {source}; failed tests of '
          + (timing.describe_session(judged) if judged is not None
             else 'no session (perflogs hold only measurements)'))
    print(f'wrote {page}')
    if args.junit:
        with open(args.junit, 'w') as fp:
            fp.write(report.junit(ver))
        print(f'wrote {args.junit}')
    return EXIT_STATUS[ver.word]


def select(samples, args, judged=None):
    """The samples ``--system``, ``--check`` and ``--since`` choose, up to
    the end of the session ``--session`` names (its trends stop there)."""
    if args.system:
        samples = [s for s in samples if on_system(s.key, args.system)]

    if args.check:
        rx = re.compile(args.check)
        samples = [s for s in samples if rx.search(s.key.check)]

    if args.since:
        t = times.since(args.since, 'report')
        samples = [s for s in samples if s.time >= t]

    end = (judged or {}).get('session_info', {}).get('time_end_unix')
    if args.session and end:
        samples = [s for s in samples if s.time <= end]

    return samples


def add_parser(subparsers):
    p = sources.add_subcommand(
        subparsers, 'report', 'PNG figures and a static HTML page', __doc__,
        examples=EXAMPLES)
    sources.add_runs(p)
    sources.add_filters(p)
    sources.add_session_choice(p)
    p.add_argument('--matrices', nargs='*', metavar='DIR',
                   help='directories searched for linkmatrix_*.csv '
                        '(default: output/)')
    p.add_argument('--junit', metavar='FILE',
                   help='also write the verdict as JUnit XML (for CI)')
    p.add_argument('--max-trends', type=int, default=40,
                   help='at most this many trend figures (default: 40)')
    p.add_argument('-o', '--output', metavar='FILE',
                   default=os.path.join(PROJECT_ROOT, 'report', 'index.html'),
                   help='the HTML page; its PNG figures are written in '
                        'the same directory (default: report/index.html)')
    p.set_defaults(func=run)
    return p
