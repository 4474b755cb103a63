"""The subcommands of ``clustergate``, one module each.

Every module here is named after its subcommand, ``<name>_cmd.py``
(``baseline_cmd`` for ``clustergate baseline``), and exposes
``add_parser(subparsers)``, which adds the subcommand and stores the
handler as ``func``: it unpacks the parsed args, calls plain functions of
the library (``commands.baseline_cmd`` on ``clustergate.refs.baseline``,
``commands.npb_cmd`` on ``clustergate.parsers.npb_output``, ...; no
library module takes parsed args) and returns the exit status. The flags,
words and exit codes every subcommand shares are in
``clustergate.commands.sources`` (docs/cli.md). ``clustergate.cli`` adds them in
the order of ``COMMANDS``.
"""

import argparse
import importlib
import re

#: subcommand -> module with add_parser(subparsers), in the order of --help
COMMANDS = {name: f'clustergate.commands.{name}_cmd' for name in (
    'sweep', 'baseline', 'report', 'history', 'timing', 'cost',
    'score', 'npb', 'linkmatrix', 'site',
)}

_LITERAL = re.compile(r'``([^`]+)``')
_ROLE = re.compile(r':(?:\w+:)?\w+:`~?([^`]+)`')
_EMPHASIS = re.compile(r'(?<![\w*/])\*\*?(?=\S)([^*\n]+?)(?<=\S)\*\*?(?![\w*])')


def plain_text(text):
    """Help text without reStructuredText markup: the part of a docstring
    before a literal block (``::``), with ``literals``, :roles:`x` and
    *emphasis* shown as plain words."""
    if not text:
        return text

    text = text.split('::')[0].rstrip()
    text = _ROLE.sub(r'\1', text)
    text = _LITERAL.sub(r'\1', text)
    return _EMPHASIS.sub(r'\1', text)


def _plain_parser(parser):
    """plain_text() on a parser's description and help strings, and on
    those of its sub-parsers (``clustergate-lab cluster up`` ...)."""
    parser.description = plain_text(parser.description)
    for action in parser._actions:
        action.help = plain_text(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                choice.help = plain_text(choice.help)
            for sub in action.choices.values():
                _plain_parser(sub)


def add_all(subparsers, commands=None):
    """Adds every subcommand of ``commands`` (default COMMANDS), with plain
    help text."""
    for name, modname in (commands or COMMANDS).items():
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as err:
            if err.name and modname.startswith(err.name):
                # tool not part of this version of the package
                continue

            raise

        module.add_parser(subparsers)
        if name in subparsers.choices:
            _plain_parser(subparsers.choices[name])

    for choice in subparsers._choices_actions:
        choice.help = plain_text(choice.help)

