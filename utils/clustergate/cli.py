"""The ``clustergate`` command: one entry point, one subcommand per module
listed in clustergate.commands.COMMANDS (each exposes
``add_parser(subparsers)``; the handler is stored as ``func``, unpacks the
parsed args and calls plain functions). The convention every subcommand
follows (input flags, exit status) is described in
clustergate.commands.sources and docs/cli.md.
"""

import argparse
import os
import sys

from clustergate.commands import COMMANDS, add_all
from clustergate.commands.sources import EXIT_CODES


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr
    (``clustergate baseline: error: ...``) and exit status 2."""

    def error(self, message):
        self.exit(2, f'{self.prog}: error: {message} (see {self.prog} '
                     f'--help)\n')


def version():
    """The installed version of clustergate (the package's metadata)."""
    from importlib import metadata

    try:
        return metadata.version('clustergate')
    except metadata.PackageNotFoundError:   # run from a source tree
        return 'unknown (not installed)'


def build_parser(prog='clustergate', commands=COMMANDS,
                 description='Tools around the clustergate ReFrame checks.'):
    parser = Parser(prog=prog, description=description, epilog=EXIT_CODES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--version', action='version',
                        version=f'{prog} {version()}')
    sub = parser.add_subparsers(dest='tool', metavar='TOOL')
    sub.required = True
    add_all(sub, commands)
    return parser


def main(argv=None):
    return run(build_parser(), argv)


def run(parser, argv=None):
    """Parses ``argv`` and runs the chosen subcommand's handler."""
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # output piped into `head` and the like: stop quietly (and keep
        # Python from reporting the pipe again when it flushes at exit)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as err:
        # a file the command was told to read or write and cannot (a
        # directory that does not exist, a checkout the user cannot write):
        # bad input, one line naming the file, not a traceback
        where = f': {err.filename}' if err.filename else ''
        print(f'{parser.prog} {args.tool}: {err.strerror or err}{where}',
              file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
