"""The command-line convention of the subcommands that read results.

Every such subcommand takes the same input flags with the same defaults:

* ``--db FILE``: ReFrame's SQLite results database (default: the one the
  settings write, $CG_RESULTS_DB or output/results.db);
* ``--perflogs PATH...``: perflog files or directories (default:
  $CG_PERFLOG_DIR or perflogs/);
* ``--report FILE...`` (also ``--json``): ReFrame JSON run reports
  (``reframe --report-file``).

Given none of them, a command reads the results database when it exists,
else the perflogs. A *run* is one ReFrame session (one ``reframe``
invocation); a *job* is one test case's batch job. ``-o`` always names a
file. Exit status: see EXIT_CODES.
"""

import argparse
import os
import sys

from clustergate import PROJECT_ROOT
from clustergate.site import environment as cgenv

#: the epilog of every subcommand's --help
EXIT_CODES = """exit status:
  0  checked and fine (report: GREEN)
  1  a regression or failure found (report: RED)
  2  bad input or usage (one line on stderr names the cause)
  3  nothing to decide on (report: UNCHECKED; baseline, history: too
     few runs)"""

SINCE_HELP = ('only runs completed at or after this time: ISO 8601 '
              '(2026-11-20, 2026-11-20T18:00, UTC unless it names a zone) '
              "or ReFrame's forms (20261120T0000, now-1d, now-12h)")


def default_perflogs():
    """The perflog directory: $CG_PERFLOG_DIR, else perflogs/."""
    return cgenv.get(cgenv.PERFLOG_DIR,
                          os.path.join(PROJECT_ROOT, 'perflogs'))


def default_db():
    """ReFrame's results database: $CG_RESULTS_DB, else output/results.db."""
    return cgenv.get(cgenv.RESULTS_DB,
                          os.path.join(PROJECT_ROOT, 'output', 'results.db'))


def add_subcommand(subparsers, name, help, doc, examples=(), **kwargs):
    """Adds subcommand ``name``, described by its module's docstring
    ``doc`` (the part before a literal block ``::`` or ``Examples:``), with
    the examples and the exit codes as epilog."""
    description = doc.split('::')[0].split('Examples:')[0].strip()
    epilog = ''
    if examples:
        epilog = 'examples:\n' + ''.join(f'  {e}\n' for e in examples) + '\n'
    return subparsers.add_parser(
        name, help=help, description=description,
        epilog=epilog + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs
    )


def add_runs(group):
    """--db, --perflogs and --report: the runs of many sessions."""
    group.add_argument('--db', metavar='FILE',
                       help="ReFrame's SQLite results database (default: "
                            "$CG_RESULTS_DB or output/results.db)")
    group.add_argument('--perflogs', nargs='+', metavar='PATH',
                       help='perflog files or directories (default: '
                            '$CG_PERFLOG_DIR or perflogs/)')
    group.add_argument('--report', '--json', dest='json', nargs='+',
                       metavar='FILE',
                       help='ReFrame JSON run reports (--report-file)')
    group.add_argument('--since', metavar='TIME', type=point_in_time,
                       help=SINCE_HELP)


def runs_inputs(db, json_reports, perflogs):
    """(db, json reports, perflogs) to read: those given, else the results
    database when it exists, else the perflog directory; FileNotFoundError
    naming both defaults when none is given and neither exists."""
    if db or json_reports or perflogs:
        return db, list(json_reports or ()), list(perflogs or ())

    if os.path.exists(default_db()):
        return default_db(), [], []

    if not os.path.exists(default_perflogs()):
        # the errno of the last default tried would hide that neither exists
        raise FileNotFoundError(
            f'no runs to read: neither the results database {default_db()} '
            f'nor the perflog directory {default_perflogs()} exists (run a '
            'session first, or give --db, --perflogs or --report)')

    return None, [], [default_perflogs()]


def describe_inputs(db, json_reports, perflogs):
    """The inputs as one comma-separated string (provenance, messages)."""
    return ', '.join(([db] if db else []) + list(json_reports) +
                     list(perflogs))


def read_runs(db, json_reports, perflogs, command, err=None):
    """(samples, what was read) of the inputs runs_inputs() picks among
    ``db``, ``json_reports`` and ``perflogs``; (None, None) once the reason
    they cannot be read is printed as ``clustergate <command>: error:
    ...``."""
    from clustergate.results import samples

    try:
        inputs = runs_inputs(db, json_reports, perflogs)
        found = samples.load_samples(*inputs)
    except (OSError, ValueError) as e:
        print(f'clustergate {command}: error: {e}', file=err or sys.stderr)
        return None, None

    note_unreadable(found, command, err)
    return found, describe_inputs(*inputs)


def note_unreadable(found, command, err=None):
    """One line on stderr when perflog lines could not be read: they are
    skipped, and said so."""
    note = getattr(found, 'unreadable_note', lambda: None)()
    if note:
        print(f'clustergate {command}: warning: {note}',
              file=err or sys.stderr)


def add_output(parser, what):
    """-o/--output FILE: the file the subcommand writes."""
    parser.add_argument('-o', '--output', metavar='FILE', help=what)


def add_session_command(subparsers, name, help, doc, examples, func):
    """Adds subcommand ``name`` (add_subcommand()) on one run: --report
    FILE or the latest run of --db, for handler ``func``."""
    p = add_subcommand(subparsers, name, help, doc, examples=examples)
    add_session(p)
    p.set_defaults(func=func)
    return p


def add_session(parser):
    """--report and --db: one session, a run report or the latest one of the
    results database."""
    parser.add_argument('--report', '--json', dest='json', metavar='FILE',
                        help='a JSON run report (reframe --report-file)')
    parser.add_argument('--db', metavar='FILE',
                        help="ReFrame's results database, latest session "
                             "(default: $CG_RESULTS_DB or output/results.db)")
    add_session_choice(parser)


def add_session_choice(parser):
    """--session UUID: which session of the results database."""
    parser.add_argument('--session', metavar='UUID',
                        help='the session whose uuid starts with this '
                             '(default: the latest; the output names the '
                             'one read)')


def read_session(json_report, db, command, err=None, session=None):
    """The session of a run report or of the results database (the one
    ``session`` names, else the latest), or None once the reason it
    cannot be read is printed as ``clustergate <command>: error: ...``."""
    from clustergate.results import timing

    try:
        return timing.session_report(json_report, db or default_db(),
                                     session)
    except (OSError, ValueError) as e:
        print(f'clustergate {command}: error: {e}', file=err or sys.stderr)
        return None


def regex(text):
    """argparse type of --check: a valid regular expression."""
    import re

    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(
            f'not a regular expression: {text!r} ({e})') from None
    return text


def point_in_time(text):
    """argparse type of --since: a time clustergate.results.times reads
    (the text itself is kept)."""
    from clustergate.results import times

    try:
        times.point_in_time(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'not a time: {text!r} (ISO 8601 such as 2026-11-20 or '
            f'2026-11-20T18:00, or now-1d, now-12h, 20261120T0000)'
        ) from None
    return text


def positive_int(text):
    """argparse type of counts that must be at least 1 (--min-runs)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(
            f'needs a whole number of at least 1, got {text!r}')
    return n


def _names(names, limit=12):
    """``a, b, c`` (at most ``limit``, then how many more)."""
    names = sorted(names)
    more = len(names) - limit
    return ', '.join(names[:limit]) + (f' and {more} more' if more > 0
                                       else '') if names else 'none'


def unknown_name(found, system=None, check=None, where=''):
    """The reason ``--system`` or ``--check`` selects nothing of the
    samples ``found`` (read from ``where``), naming what they hold; None
    when each selects something. A typo must not read as "0 metrics,
    nothing wrong"."""
    from clustergate.results import samples

    where = where or 'the runs read'
    if system:
        name, _, part = system.partition(':')
        systems = {s.key.system for s in found}
        if name not in systems:
            return (f'--system {name}: no such system in {where} '
                    f'(systems: {_names(systems)})')

        parts = {s.key.partition for s in found if s.key.system == name}
        if part and part not in parts:
            return (f'--system {system}: system {name} has no partition '
                    f'{part} in {where} (partitions: '
                    f'{_names(f"{name}:{p}" for p in parts)})')

        found = [s for s in found if samples.on_system(s.key, system)]

    if check and not samples.select(found, check=check,
                                    include_perf_failures=True):
        return (f'--check {check}: matches no check'
                f'{" of " + system if system else ""} in {where} (checks: '
                f'{_names({s.key.check for s in found})})')

    return None


def narrowed(found, system, check, command, where='', err=None):
    """``found`` if ``--system`` and ``--check`` name something in it,
    else None once ``clustergate <command>: error: ...`` says what they
    could name (unknown_name())."""
    why = unknown_name(found, system, check, where)
    if why:
        print(f'clustergate {command}: error: {why}', file=err or sys.stderr)
        return None

    return found


def add_filters(group):
    """--system and --check: which metrics of the runs."""
    group.add_argument('--system', metavar='SYSTEM[:PARTITION]',
                       help='only this system (or partition)')
    group.add_argument('--check', metavar='REGEX', type=regex,
                       help='only checks whose name matches')
