"""Warnings in the verdict: a borderline node link the link matrix's
retest left within its noise (``undecided node link n5 on fabric fab0
(...): not named``) does not fail the run; the check keeps it in its
loggable ``link_warnings`` (so the run report, the results database and
the perflog hold it) and ``clustergate report`` and the session's
VERDICT block list it as a warning, the verdict and exit status
unchanged (clustergate.results.casewarnings)."""

import copy
import json
import os
import subprocess

from conftest import ROOT
from test_linkmatrix_check import (check, on_tree, perf,  # noqa: F401
                                   retest_file)

from clustergate.results import casewarnings
from clustergate.results import verdict as session_verdict

BIN = os.path.dirname(__import__('sys').executable)
TREE_HEALTHY = os.path.join(ROOT, 'tests', 'fixtures', 'reports',
                            'linkmatrix-tree-healthy', 'report.json')
UNDECIDED = ('retest inconclusive after the time budget: sent 0.97x its '
             'partners alone, 5 of 12 retests at or below 0.95x, within '
             'the noise of the naming ratio')


def judged_warnings(check, tmp_path):  # noqa: F811
    """The link matrix judged on a recorded 9-node tree output whose
    first round finds n5 borderline, its retest leaving n5 undecided
    within its noise: the warnings the check keeps."""
    c = on_tree(check, 'emu-linkmatrix-tree9-n2-on-leaf3.out')
    retest_file(tmp_path, n5=('unresolved', UNDECIDED))
    final, _, _ = c.judge()
    return c, final


def test_the_check_keeps_its_warnings_in_a_loggable_variable(
        check, tmp_path):  # noqa: F811
    c, final = judged_warnings(check, tmp_path)
    (warn,) = c.link_warnings
    # the retest's note without its 'WARNING: ', the first round's figure
    # of n5 in brackets
    assert warn.startswith('undecided node link n5 on fabric fab0 (')
    assert warn.endswith(f'): {UNDECIDED}')
    # a warning, not a verdict line
    assert not any('n5' in ln for ln in final)
    # ReFrame writes every loggable variable to the run report and the
    # perflog's check_#ALL
    assert 'link_warnings' in {n for n, _ in type(c).loggable_attrs()}


def _report_with(tmp_path, warnings, name):
    """The recorded run report of a healthy tree session (LinkMatrix
    passed), its LinkMatrix case carrying ``warnings`` as ReFrame writes
    a loggable variable."""
    with open(TREE_HEALTHY) as fp:
        rep = json.load(fp)
    rep = copy.deepcopy(rep)
    for tc in rep['runs'][0]['testcases']:
        if tc['name'].startswith('LinkMatrix'):
            tc['link_warnings'] = list(warnings)
    path = tmp_path / f'{name}.json'
    path.write_text(json.dumps(rep))
    return str(path), rep


def _report(tmp_path, path, name):
    out = tmp_path / name
    proc = subprocess.run(
        [os.path.join(BIN, 'clustergate'), 'report', '--json', path,
         '--matrices', str(tmp_path / 'none'), '-o',
         str(out / 'index.html'), '--junit', str(out / 'junit.xml')],
        capture_output=True, text=True, timeout=300)
    return proc, out


def test_report_lists_the_warnings_and_keeps_its_verdict(check, tmp_path):  # noqa: F811,E501
    c, _ = judged_warnings(check, tmp_path)
    warned, _ = _report_with(tmp_path, c.link_warnings, 'warned')
    plain, _ = _report_with(tmp_path, [], 'plain')
    got, out = _report(tmp_path, warned, 'w')
    base, _ = _report(tmp_path, plain, 'p')
    # the same verdict and exit status with the warning as without it
    assert got.returncode == base.returncode, got.stdout + got.stderr
    assert got.stdout.splitlines()[0] == base.stdout.splitlines()[0]
    lines = got.stdout.splitlines()
    assert lines[1] == ('warnings (1, not failures: the verdict stands):')
    assert lines[2].startswith('  LinkMatrix %num_nodes=9 ')
    assert lines[2].endswith(f'@emucluster:emu+openmpi: '
                             f'{c.link_warnings[0]}')
    assert 'warnings (' not in base.stdout
    page = (out / 'index.html').read_text()
    assert 'Warnings (not failures' in page and 'undecided node link n5' \
        in page
    junit = (out / 'junit.xml').read_text()
    assert 'clustergate.warning' in junit and 'failures="0"' in junit


def test_the_session_verdict_block_lists_them(check, tmp_path):  # noqa: F811,E501
    c, _ = judged_warnings(check, tmp_path)
    _, rep = _report_with(tmp_path, c.link_warnings, 'warned')
    block = session_verdict.block(rep, 0)
    assert block[1].startswith('PASSED')
    i = block.index('warnings (1, not failures):')
    assert 'undecided node link n5 on fabric fab0' in block[i + 1]


def test_a_perflog_value_is_read_as_its_list():
    # the perflog's check_#ALL writes the list as Python writes it
    tc = {'name': 'LinkMatrix %num_nodes=4', 'system': 's',
          'partition': 'p', 'environ': 'e',
          'link_warnings': "['undecided node link n4 on fabric fab0 "
                           "(sent 0.94x its peers (-2.8 MADs)): not named']"}
    (w,) = casewarnings.warnings_of({'runs': [{'testcases': [tc]}]})
    assert w.text.startswith('undecided node link n4') and w.where == \
        's:p+e'
    tc['link_warnings'] = '[]'
    assert casewarnings.warnings_of({'runs': [{'testcases': [tc]}]}) == []
