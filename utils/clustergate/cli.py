"""The ``clustergate`` command: one entry point, one subcommand per tool.

Each tool lives in its own module and exposes ``add_parser(subparsers)``;
the subcommand's handler is stored as ``func`` and gets the parsed args.
"""

import argparse
import importlib
import sys

#: subcommand -> module providing add_parser(); a missing module is reported,
#: not hidden, so a broken install names what is broken.
TOOLS = {
    'sweep': 'clustergate.tools.sweep_cmd',
    'cluster': 'clustergate.cluster.cli',
    'baseline': 'clustergate.baseline_cmd',
    'report': 'clustergate.report',
    'history': 'clustergate.history_cmd',
    'timing': 'clustergate.timing_cmd',
    'cost': 'clustergate.cost_cmd',
    'score': 'clustergate.score_cmd',
}


def build_parser():
    parser = argparse.ArgumentParser(
        prog='clustergate',
        description='Tools around the clustergate ReFrame checks.'
    )
    sub = parser.add_subparsers(dest='tool', metavar='TOOL')
    sub.required = True
    for name, modname in TOOLS.items():
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as err:
            if err.name and modname.startswith(err.name):
                # Tool not part of this version of the package
                continue

            raise

        mod.add_parser(sub)

    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
