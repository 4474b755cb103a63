"""The clustergate command: every subcommand from the one command package,
help text without reStructuredText markup, and the python -m entries that
the docs and the LinkMatrix check use still working."""

import importlib
import os
import re
import subprocess
import sys

import pytest

from clustergate import cli, commands
from clustergate.parsers import cgoutput
from clustergate.links import matrix as lm
from conftest import ROOT, fixture_text

RST = re.compile(r'``|::|:\w+:`|(?<![\w*])\*\*?\w')


def _parsers():
    top = cli.build_parser()
    sub = next(a for a in top._actions
               if a.__class__.__name__ == '_SubParsersAction')
    yield 'clustergate', top
    for name, parser in sub.choices.items():
        yield f'clustergate {name}', parser
        for action in parser._actions:
            if action.__class__.__name__ == '_SubParsersAction':
                for sub_name, sub_parser in action.choices.items():
                    yield f'clustergate {name} {sub_name}', sub_parser


def test_every_command_is_listed():
    names = {n for n, _ in _parsers() if n.count(' ') == 1}
    assert names == {f'clustergate {n}' for n in commands.COMMANDS}


@pytest.mark.parametrize('name,parser', list(_parsers()),
                         ids=[n for n, _ in _parsers()])
def test_help_has_no_rst_markup(name, parser):
    text = parser.format_help()
    assert not RST.search(text), (name, RST.search(text).group(0), text)


@pytest.mark.parametrize('name', sorted(commands.COMMANDS))
def test_every_subcommand_helps_from_the_command_package(name):
    # one layout: the subcommand's module is clustergate/commands/<name>_cmd.py
    module = importlib.import_module(commands.COMMANDS[name])
    assert module.__file__ == os.path.join(ROOT, 'utils', 'clustergate',
                                           'commands', f'{name}_cmd.py')
    cp = subprocess.run([sys.executable, '-m', 'clustergate.cli', name,
                         '--help'], capture_output=True, text=True,
                        cwd=ROOT, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.startswith(f'usage: clustergate {name} '), cp.stdout


@pytest.mark.parametrize('doc,plain', [
    ('``clustergate x``: does y::\n\n    example', 'clustergate x: does y'),
    ('see :meth:`a.b.c` and :mod:`d`', 'see a.b.c and d'),
    ('a *suspect* node, **bold**', 'a suspect node, bold'),
    ('perflogs/*.log and 2 * 3', 'perflogs/*.log and 2 * 3')])
def test_plain_text(doc, plain):
    assert commands.plain_text(doc) == plain


@pytest.fixture
def throttled_csv(tmp_path):
    # real matrix: n4's fab0 link shaped to 1/4 on the emulated cluster
    run = cgoutput.parse(fixture_text(
        'cg-outputs', 'emu-linkmatrix-4MB-n4-fab0-250mbit.out'))
    path = tmp_path / 'm.csv'
    lm.write_csv(lm.from_measurements(run.measurements), path)
    return path


@pytest.mark.parametrize('entry', [['-m', 'clustergate.cli', 'linkmatrix']])
def test_linkmatrix_command_names_the_throttled_node(throttled_csv, entry):
    cp = subprocess.run([sys.executable, *entry, str(throttled_csv),
                         '--fabric', 'fab0'], capture_output=True, text=True,
                        cwd=ROOT, timeout=120)
    assert cp.returncode == 1, cp.stderr
    assert 'suspect node n4 on fabric fab0' in cp.stdout


def test_npb_command_reads_a_report(tmp_path):
    report = tmp_path / 'run.json'
    report.write_text('{"runs": [{"testcases": []}]}')
    for entry in (['-m', 'clustergate.cli', 'npb'],):
        cp = subprocess.run([sys.executable, *entry, str(report)],
                            capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
        assert cp.returncode == 0, cp.stderr
        assert cp.stdout.startswith('no pair of NPB runs')
