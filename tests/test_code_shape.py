"""The shape rules of the tree that a test command can enforce: ruff clean
(rules in pyproject.toml), and no Python function in utils/ over
MAX_LINES lines without a comment saying why (``# long: <reason>`` right
above its ``def`` or decorators, or as the first line of its body)."""

import ast
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

MAX_LINES = 60


def long_functions_without_reason(top):
    """(path:line, name, lines) of every function of more than MAX_LINES
    lines under top that carries no ``# long:`` comment."""
    found = []
    for folder, _, files in os.walk(top):
        for name in sorted(files):
            if not name.endswith('.py'):
                continue

            path = os.path.join(folder, name)
            with open(path) as fp:
                text = fp.read()
            lines = text.splitlines()
            for node in ast.walk(ast.parse(text)):
                if not isinstance(node, (ast.FunctionDef,
                                         ast.AsyncFunctionDef)):
                    continue

                length = node.end_lineno - node.lineno + 1
                if length <= MAX_LINES:
                    continue

                first = min([node.lineno] +
                            [d.lineno for d in node.decorator_list])
                around = lines[max(first - 4, 0):first - 1]
                around += lines[node.body[0].lineno - 1:
                                node.body[0].lineno + 2]
                if not any(x.strip().startswith('# long:') for x in around):
                    found.append((f'{os.path.relpath(path, ROOT)}:'
                                  f'{node.lineno}', node.name, length))
    return found


def test_long_functions_say_why():
    found = long_functions_without_reason(os.path.join(ROOT, 'utils'))
    assert not found, ('functions over %d lines without a "# long:" '
                       'comment: %s' % (MAX_LINES, found))


def test_the_rule_finds_a_long_function(tmp_path):
    body = ''.join(f'    x{i} = {i}\n' for i in range(MAX_LINES))
    (tmp_path / 'm.py').write_text(f'def f():\n{body}\n\n'
                                   f'# long: a table\ndef g():\n{body}')
    found = long_functions_without_reason(str(tmp_path))
    assert [(name, length) for _, name, length in found] == \
        [('f', MAX_LINES + 1)]


def test_ruff_clean():
    ruff = shutil.which('ruff', path=os.path.dirname(sys.executable))
    if ruff is None:
        pytest.skip('ruff not installed (pip install -e .[test])')

    cp = subprocess.run([ruff, 'check', '--output-format', 'concise', '.'],
                        cwd=ROOT, capture_output=True, text=True)
    assert cp.returncode == 0, cp.stdout + cp.stderr
