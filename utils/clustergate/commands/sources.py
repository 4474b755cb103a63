"""Where the commands read their runs from: the arguments shared by the
subcommands that read perflogs, ReFrame's results database or JSON run
reports, their defaults, and reading one session with a one-line error.
"""

import os
import sys

from clustergate import PROJECT_ROOT
from clustergate.site import environment as cgenv


def default_perflogs():
    """The perflog directory: $CG_PERFLOG_DIR, else perflogs/."""
    return cgenv.get(cgenv.PERFLOG_DIR,
                          os.path.join(PROJECT_ROOT, 'perflogs'))


def default_db():
    """ReFrame's results database: $CG_RESULTS_DB, else output/results.db."""
    return cgenv.get(cgenv.RESULTS_DB,
                          os.path.join(PROJECT_ROOT, 'output', 'results.db'))


def add_subcommand(subparsers, name, help, doc, **kwargs):
    """Adds subcommand ``name``, described by the second paragraph of its
    module's docstring ``doc`` (the first names the command)."""
    return subparsers.add_parser(
        name, help=help, description=doc.strip().split('\n\n')[1], **kwargs
    )


def add_runs(group, perflogs_default='$CG_PERFLOG_DIR or perflogs/',
             db_help="ReFrame's SQLite results database"):
    """--perflogs, --db and --json: the runs of many sessions."""
    default = f' (default: {perflogs_default})' if perflogs_default else ''
    group.add_argument('--perflogs', nargs='+', metavar='PATH',
                       help='perflog files or directories' + default)
    group.add_argument('--db', metavar='FILE', help=db_help)
    group.add_argument('--json', nargs='+', metavar='FILE',
                       help='ReFrame JSON run reports (--report-file)')


def add_session(parser):
    """--json and --db: one session, a run report or the latest one of the
    results database."""
    parser.add_argument('--json', metavar='FILE', help='a JSON run report')
    parser.add_argument('--db', metavar='FILE',
                        help="ReFrame's results database (latest session)")


def read_session(args, command, err=None):
    """The session named by add_session()'s arguments, or None once the
    reason it cannot be read is printed as ``clustergate <command>: error:
    ...``."""
    from clustergate.results import timing

    try:
        return timing.session_report(args.json, args.db)
    except (OSError, ValueError) as e:
        print(f'clustergate {command}: error: {e}', file=err or sys.stderr)
        return None
