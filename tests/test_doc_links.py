"""Every relative link of README.md and of the pages under docs/ resolves
to a file of the work tree, and every anchor (``page.md#section``) to a
heading of that page: a page moved or a section renamed without its links
fails here, naming the page, the line and the link."""

import os
import re

from conftest import ROOT

#: ``[text](target)`` and ``![alt](target)``; a target ends at ``)`` or a
#: space (a title after it is not part of the path)
LINK = re.compile(r'\]\(([^)\s]+)[^)]*\)')
#: an embedded image, ``![alt](target)``
IMAGE = re.compile(r'!\[[^\]]*\]\(([^)\s]+)')
FENCE = re.compile(r'^\s*(```|~~~)')


def pages(root=ROOT):
    """README.md and every Markdown page under docs/."""
    found = [os.path.join(root, 'README.md')]
    for folder, _, names in os.walk(os.path.join(root, 'docs')):
        found += [os.path.join(folder, n) for n in sorted(names)
                  if n.endswith('.md')]
    return found


def links(path, pattern=LINK):
    """(line number, target) of each link (or each match of ``pattern``)
    outside code blocks."""
    fenced = False
    for number, line in enumerate(open(path, encoding='utf-8'), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            for target in pattern.findall(re.sub(r'`[^`]*`', '', line)):
                yield number, target


def anchors(path):
    """GitHub's anchors of a page's headings (lower case, punctuation out,
    spaces to dashes)."""
    found, fenced = set(), False
    for line in open(path, encoding='utf-8'):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith('#'):
            title = line.lstrip('#').strip().lower()
            found.add(re.sub(r'[^\w\- ]', '', title).replace(' ', '-'))
    return found


def broken(path):
    """'page:line: target (why)' for each link of ``path`` that does not
    resolve."""
    out = []
    for number, target in links(path):
        if re.match(r'[a-z][a-z0-9+.-]*:', target):
            continue  # http:, https:, mailto:: not checked offline
        file, _, anchor = target.partition('#')
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) \
            if file else path
        where = f'{os.path.relpath(path, ROOT)}:{number}: {target}'
        if not os.path.exists(dest):
            out.append(f'{where} (no such file)')
        elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
            out.append(f'{where} (no heading #{anchor})')
    return out


def test_every_link_resolves():
    bad = [b for page in pages() for b in broken(page)]
    assert not bad, 'broken links:\n' + '\n'.join(bad)


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'docs' / 'a.md').write_text('# Title here\n')
    (tmp_path / 'README.md').write_text(
        '[ok](docs/a.md#title-here) [gone](docs/b.md)\n'
        '[anchor](docs/a.md#nope)\n```\n[in code](nowhere.md)\n```\n')
    found = [b for p in pages(str(tmp_path)) for b in broken(p)]
    assert len(found) == 2, found
    assert 'docs/b.md (no such file)' in found[0]
    assert 'docs/a.md#nope (no heading #nope)' in found[1]


def test_every_figure_is_embedded():
    figures = os.listdir(os.path.join(ROOT, 'docs', 'figures'))
    used = {os.path.basename(t) for p in pages()
            for _, t in links(p, IMAGE)}
    missing = sorted(set(figures) - used)
    assert not missing, f'figures no page shows: {missing}'
