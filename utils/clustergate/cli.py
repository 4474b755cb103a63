"""The ``clustergate`` command: one entry point, one subcommand per module
listed in clustergate.commands.COMMANDS (each exposes
``add_parser(subparsers)``; the handler is stored as ``func`` and gets the
parsed args).
"""

import argparse
import os
import sys

from clustergate.commands import COMMANDS, add_all


def build_parser(prog='clustergate', commands=COMMANDS,
                 description='Tools around the clustergate ReFrame checks.'):
    parser = argparse.ArgumentParser(prog=prog, description=description)
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


if __name__ == '__main__':
    sys.exit(main())
