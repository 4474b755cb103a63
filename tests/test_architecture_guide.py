"""docs/guide/architecture.md stays true: every module it names exists,
every name it quotes is defined somewhere in the code, and no module of
the package imports a room the guide lists above its own. And the
package keeps the shape the guide promises: no module over FILE_LIMIT
lines, no class over CLASS_LIMIT, no two modules with one basename,
nothing under site/ importing ReFrame."""

import ast
import os
import re

import pytest

from conftest import ROOT

GUIDE = os.path.join(ROOT, 'docs', 'guide', 'architecture.md')
PACKAGE = os.path.join(ROOT, 'utils', 'clustergate')
FILE_LIMIT = 600
CLASS_LIMIT = 200

_QUOTED = re.compile(r'`([^`\n]+)`')
_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')


def _guide():
    with open(GUIDE) as fp:
        return fp.read()


def _modules():
    for folder, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith('.py'):
                yield os.path.join(folder, name)


def _source_words():
    words = set()
    for top in ('utils', 'checks', 'config', 'tests'):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(('.py', '.c')):
                    with open(os.path.join(folder, name)) as fp:
                        words.update(re.findall(r'\w+', fp.read()))
    return words


def _resolves(token):
    """A quoted file or folder path of the guide exists: from the
    package, the repository, utils/ or config/, or (a bare file name)
    as a module of the package or a file of the repository."""
    token = token.rstrip('/')
    for base in (PACKAGE, ROOT, os.path.join(ROOT, 'utils'),
                 os.path.join(ROOT, 'config')):
        if os.path.exists(os.path.join(base, token)):
            return True
    if '/' not in token:
        for top in (PACKAGE, os.path.join(ROOT, 'checks'),
                    os.path.join(ROOT, 'tests')):
            for _, _, files in os.walk(top):
                if token in files:
                    return True
    return False


def test_every_module_and_folder_the_guide_names_exists():
    paths = [t for t in _QUOTED.findall(_guide())
             if re.fullmatch(r'[\w./<>-]+', t) and
             (t.endswith(('.py', '.c', '.yaml', '/')) or '/' in t) and
             '<' not in t]
    assert len(paths) > 40, paths
    missing = [t for t in paths if not _resolves(t)]
    assert missing == []


def test_every_name_the_guide_quotes_is_in_the_code():
    words = _source_words()
    names = [t.split('.')[-1] for t in _QUOTED.findall(_guide())
             if _NAME.match(t.split('.')[-1]) and not t.endswith('.py')]
    assert len(names) > 30, names
    unknown = sorted({n for n in names if n not in words})
    assert unknown == []


def _room_ranks():
    """{room (a folder under the package, or a module file): rank}, from
    the guide's table of rooms, top (0) to bottom."""
    ranks = {}
    table = _guide().split('## The rooms', 1)[1].split('\n## ', 1)[0]
    rank = 0
    for line in table.splitlines():
        if not line.startswith('| `'):
            continue
        cell = line.split('|')[1]
        for room in _QUOTED.findall(cell):
            ranks[room.rstrip('/')] = rank
        rank += 1
    return ranks


def _room_of(path, ranks):
    rel = os.path.relpath(path, PACKAGE)
    parts = rel[:-3].split(os.sep)
    for n in range(len(parts), 0, -1):
        key = '/'.join(parts[:n])
        if key in ranks or f'{key}.py' in ranks:
            return key if key in ranks else f'{key}.py'
    return None


def _imported_paths(path):
    with open(path) as fp:
        tree = ast.parse(fp.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and \
                (node.module or '').startswith('clustergate.'):
            for alias in node.names:
                yield f'{node.module}.{alias.name}'.split('.')[1:]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith('clustergate.'):
                    yield alias.name.split('.')[1:]


def _target(parts):
    """The package file an import names (a module, or a package's
    __init__), trying the longest dotted prefix first."""
    for n in range(len(parts), 0, -1):
        base = os.path.join(PACKAGE, *parts[:n])
        if os.path.isfile(base + '.py'):
            return base + '.py'
        if os.path.isfile(os.path.join(base, '__init__.py')):
            return os.path.join(base, '__init__.py')
    return None


def test_no_module_imports_a_room_above_its_own():
    ranks = _room_ranks()
    assert {'rfm/families', 'rfm/point', 'site', 'links',
            'adapter.py'} <= set(ranks), ranks
    up = []
    for path in _modules():
        own = _room_of(path, ranks)
        if own is None:
            continue
        for parts in _imported_paths(path):
            target = _target(parts)
            room = target and _room_of(target, ranks)
            if room and room != own and ranks[room] < ranks[own]:
                up.append(f'{os.path.relpath(path, PACKAGE)} -> '
                          f'{".".join(parts)} ({room} is above {own})')
    assert up == []


def test_module_and_class_sizes():
    big, classes = [], []
    for path in _modules():
        with open(path) as fp:
            text = fp.read()
        rel = os.path.relpath(path, ROOT)
        if len(text.splitlines()) > FILE_LIMIT:
            big.append(f'{rel}: {len(text.splitlines())} lines')
        for node in ast.walk(ast.parse(text, path)):
            if isinstance(node, ast.ClassDef):
                size = node.end_lineno - node.lineno + 1
                if size > CLASS_LIMIT:
                    classes.append(f'{rel}: {node.name} {size} lines')
    assert big == [] and classes == []


def test_no_two_modules_share_a_basename():
    seen = {}
    for path in _modules():
        name = os.path.basename(path)
        if name != '__init__.py':
            seen.setdefault(name, []).append(os.path.relpath(path, ROOT))
    assert {n: p for n, p in seen.items() if len(p) > 1} == {}


@pytest.mark.parametrize('folder', ['site', 'links', 'results', 'refs',
                                    'parsers', 'planning', 'siteinit'])
def test_rooms_below_the_tests_do_not_import_reframe(folder):
    # the partition model, the fabric's logic and the results are plain
    # Python; ReFrame's runtime is reached through the adapter only
    found = []
    for path in _modules():
        if os.path.relpath(path, PACKAGE).split(os.sep)[0] != folder:
            continue
        with open(path) as fp:
            for node in ast.walk(ast.parse(fp.read(), path)):
                names = ([a.name for a in node.names]
                         if isinstance(node, ast.Import) else
                         [node.module or ''] if isinstance(
                             node, ast.ImportFrom) else [])
                if any(n == 'reframe' or n.startswith('reframe.')
                       for n in names):
                    found.append(os.path.relpath(path, ROOT))
    assert found == []
