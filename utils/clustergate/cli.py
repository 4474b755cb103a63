"""The ``clustergate`` command: one entry point, one subcommand per module
listed in clustergate.commands.COMMANDS (each exposes
``add_parser(subparsers)``; the handler is stored as ``func`` and gets the
parsed args).
"""

import argparse
import os
import sys

from clustergate.commands import add_all


def build_parser():
    parser = argparse.ArgumentParser(
        prog='clustergate',
        description='Tools around the clustergate ReFrame checks.'
    )
    sub = parser.add_subparsers(dest='tool', metavar='TOOL')
    sub.required = True
    add_all(sub)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
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
