"""The shape rules of the tree that a test command can enforce: ruff clean
(rules in pyproject.toml), and no Python function over MAX_LINES lines
unless it is in ALLOWED_LONG and a comment says why (``# long: <reason>``
right above its ``def`` or decorators, or as the first line of its
body)."""

import ast
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

MAX_LINES = 60
#: the folders of Python code that the rule covers
TOPS = ('utils', 'tests', 'checks', 'config', 'ci')
#: the functions allowed more than MAX_LINES lines (each with its
#: ``# long:`` reason); a function made shorter leaves the list
ALLOWED_LONG = {
    'utils/clustergate/commands/baseline_cmd.py': {'run'},
    'utils/clustergate/links/retest_rules.py': {'decide'},
    'utils/clustergate/links/topology/analysis.py': {'diagnose'},
    'utils/clustergate/links/topology/faultcandidates.py': {'candidates'},
    'utils/clustergate/links/topology/model.py': {'_build'},
    'utils/clustergate/links/topology/verdictchoice.py': {
        'pick_verdicts', 'verdict'},
    'utils/clustergate/parsers/imb_output.py': {'parse_imb'},
    'utils/clustergate/parsers/npb_output.py': {'parse_npb'},
    'utils/clustergate/parsers/osu_output.py': {'parse_osu'},
    'utils/clustergate/report/fabricsvg.py': {'draw'},
    'utils/clustergate/site/sweep.py': {'why_not'},
    'utils/clustergate_lab/cluster/lifecycle.py': {'teardown', 'status'},
    'utils/clustergate_lab/cluster/slurm.py': {'render_conf'},
    'utils/clustergate_lab/commands/cluster.py': {'add_parser'},
}


def _has_reason(lines, node):
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    around = lines[max(first - 4, 0):first - 1]
    around += lines[node.body[0].lineno - 1:node.body[0].lineno + 2]
    return any(x.strip().startswith('# long:') for x in around)


def long_functions(root, tops=TOPS):
    """(file relative to root, line, name, lines, has a ``# long:``
    reason) of every function of more than MAX_LINES lines below the
    folders ``tops`` of root."""
    found = []
    for top in tops:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(f for f in files if f.endswith('.py')):
                path = os.path.join(folder, name)
                with open(path) as fp:
                    text = fp.read()
                lines = text.splitlines()
                for node in ast.walk(ast.parse(text, path)):
                    if not isinstance(node, (ast.FunctionDef,
                                             ast.AsyncFunctionDef)):
                        continue

                    length = node.end_lineno - node.lineno + 1
                    if length > MAX_LINES:
                        found.append((os.path.relpath(path, root),
                                      node.lineno, node.name, length,
                                      _has_reason(lines, node)))
    return found


def unexplained(found, allowed):
    """The long functions of ``found`` that are not in ``allowed`` or
    carry no reason: 'file:line name (N lines): why'."""
    bad = []
    for path, line, name, length, reason in found:
        if name not in allowed.get(path, ()):
            why = 'not in ALLOWED_LONG'
        elif not reason:
            why = 'no "# long:" comment'
        else:
            continue
        bad.append(f'{path}:{line} {name} ({length} lines): {why}')
    return bad


def test_long_functions_are_allowed_and_say_why():
    bad = unexplained(long_functions(ROOT), ALLOWED_LONG)
    assert not bad, (f'functions over {MAX_LINES} lines (make them '
                     f'shorter): ' + '; '.join(bad))


def test_the_allowed_functions_are_still_long():
    long = {(path, name) for path, _, name, _, _ in long_functions(ROOT)}
    stale = [f'{path} {name}' for path, names in ALLOWED_LONG.items()
             for name in sorted(names) if (path, name) not in long]
    assert not stale, 'not long any more, remove from ALLOWED_LONG: ' + \
        '; '.join(stale)


def test_the_rule_finds_a_long_function(tmp_path):
    body = ''.join(f'    x{i} = {i}\n' for i in range(MAX_LINES))
    (tmp_path / 'pkg').mkdir()
    (tmp_path / 'pkg' / 'm.py').write_text(
        f'def f():\n{body}\n\n'
        f'# long: a table\ndef g():\n{body}\n\n'
        f'# long: a table\ndef h():\n{body}\n\n'
        f'def i():\n{body}\n\n'
        f'def short():\n{body[:-len(body.splitlines()[-1]) - 1]}')
    found = long_functions(str(tmp_path), tops=('pkg',))
    assert [(name, length, reason) for _, _, name, length, reason
            in found] == [('f', MAX_LINES + 1, False),
                          ('g', MAX_LINES + 1, True),
                          ('h', MAX_LINES + 1, True),
                          ('i', MAX_LINES + 1, False)]
    # allowed with a reason: g; allowed without one: i; not allowed: f, h
    bad = unexplained(found, {'pkg/m.py': {'g', 'i'}})
    assert [b.split(' (')[0].split(' ')[-1] for b in bad] == ['f', 'h', 'i']
    assert bad[1].endswith('not in ALLOWED_LONG')
    assert bad[2].endswith('no "# long:" comment')


def test_ruff_clean():
    ruff = shutil.which('ruff', path=os.path.dirname(sys.executable))
    if ruff is None:
        pytest.skip('ruff not installed (pip install -e .[test])')

    cp = subprocess.run([ruff, 'check', '--output-format', 'concise', '.'],
                        cwd=ROOT, capture_output=True, text=True)
    assert cp.returncode == 0, cp.stdout + cp.stderr
