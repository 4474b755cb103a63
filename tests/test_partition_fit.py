"""No test case a partition cannot run: the system ``clustergate site
init`` writes for the emulated site (a 9-node tree of 3 leaves, whose
``scontrol show topology`` names every node, and a 2-node ``debug``
partition under it) lists no case of more nodes than its partition has,
in any mode (the ci's leaf-span link matrix took its 6 nodes from the
tree and was a case of ``debug``: its jobs pended for ever)."""

import os
import re
import subprocess

import pytest

from conftest import ROOT, isolated_env, reframe_cmd
from test_site_init import LMOD_CMD, SITES, init, project_copy

#: the families listed: the link matrix, whose node counts come from the
#: declared tree, and the contention tests, whose come from the sweep as
#: every other family's (clustergate.site.sweep.why_not); all the checks
#: took 10 minutes to list on 2 busy cores
CHECKS = ['-c', os.path.join(ROOT, 'checks', 'linkmatrix'), '-c',
          os.path.join(ROOT, 'checks', 'contention')]
#: partition -> its node count (tests/fixtures/site-init/emusite)
NODES = {'emu': 9, 'debug': 2}
_CASE = re.compile(r'^- (\w+) .*?%(?:\w+\.)?num_nodes=(\d+) .*'
                   r'@site:(\w+)\+\S+$')


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    root = project_copy(tmp_path_factory.mktemp('fit'))
    init(root, 'emusite', 'site')
    # scontrol answers with the recorded tree (the checks read it when
    # they load; without a controller each call waits for its timeout)
    bindir = root / 'bin'
    bindir.mkdir()
    (bindir / 'scontrol').write_text(
        f'#!/bin/sh\ntail -n +2 {SITES}/emusite/scontrol-topology.txt\n')
    (bindir / 'scontrol').chmod(0o755)
    return root


@pytest.mark.parametrize('mode', ['ci', 'nightly'])
def test_no_case_has_more_nodes_than_its_partition(site, mode):
    env = dict(isolated_env(site / 'config' / 'references', site / 'out'),
               LMOD_CMD=LMOD_CMD,
               PATH=f'{site / "bin"}:{os.environ["PATH"]}')
    res = subprocess.run(reframe_cmd() + [
        '-C', str(site / 'config' / 'settings.py'), '--system', 'site',
        '--mode', mode, '-lC', *CHECKS],
        capture_output=True, text=True, env=env, timeout=600, cwd=site)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    cases = [m.groups() for m in map(_CASE.match, res.stdout.splitlines())
             if m]
    assert {p for _, _, p in cases} == set(NODES)
    too_big = [c for c in cases if int(c[1]) > NODES[c[2]]]
    assert not too_big
    if mode == 'ci':
        # the span still runs where it fits: 2 nodes of each leaf
        assert {(c, n, p) for c, n, p in cases
                if c == 'LeafSpanLinkMatrix'} == {
            ('LeafSpanLinkMatrix', '6', 'emu')}
