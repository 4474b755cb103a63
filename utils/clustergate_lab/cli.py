"""The ``clustergate-lab`` command: the emulated cluster and the campaigns
run on it. Subcommands follow the convention of :mod:`clustergate.cli`."""

import sys

from clustergate import cli as product_cli

#: subcommand -> module with add_parser(subparsers), in the order of --help
COMMANDS = {name: f'clustergate_lab.commands.{name}'
            for name in ('cluster', 'sensitivity')}


def build_parser():
    return product_cli.build_parser(
        prog='clustergate-lab', commands=COMMANDS,
        description='The emulated cluster and the campaigns measured on it '
                    '(clustergate\'s lab, not part of what a site runs).')


def main(argv=None):
    return product_cli.run(build_parser(), argv)


if __name__ == '__main__':
    sys.exit(main())
