"""The link-matrix check (clustergate.rfm.linkmatrix) on real outputs of the
emulated cluster: the verdict comes from sanity, the CSV and heat map from
a hook after the run (so a failing matrix is kept too), and the check sets
no environment of its own."""

import os

import pytest
import reframe.utility.sanity as sn
from reframe.core.exceptions import SanityError

from clustergate import linkmatrix as lm
from conftest import fixture_text
from rfm_loader import load_checks

THROTTLED = fixture_text('cg-outputs', 'emu-linkmatrix-4MB-n4-fab0-250mbit.out')
BUSY = fixture_text('cg-outputs', 'emu-linkmatrix-4MB-fab0-busy.out')


@pytest.fixture
def check(tmp_path, monkeypatch):
    checks = load_checks('checks/linkmatrix/linkmatrix_check.py')
    c = next(c for c in checks if type(c).__name__ == 'LinkMatrix')
    # the fixtures ran on 4 nodes, one rank each, over fab0
    for name, value in (('num_nodes', 4), ('ppn', 1), ('num_tasks', 4),
                        ('interconnect', 'fab0'), ('_stagedir', str(tmp_path)),
                        ('heatmap_title', lambda: 'test')):
        monkeypatch.setattr(c, name, value, raising=False)

    c.monkeypatch = monkeypatch
    return c


def feed(check, text):
    check.monkeypatch.setattr(check, 'stdout_text', lambda: text,
                              raising=False)
    return check


def test_throttled_node_fails_sanity_naming_it(check, tmp_path):
    c = feed(check, THROTTLED)
    with pytest.raises(SanityError, match='suspect node n4 on fabric fab0'):
        sn.evaluate(c.validate())

    # sanity judges, it writes nothing
    assert os.listdir(tmp_path) == []


def test_artefacts_are_written_after_the_run(check, tmp_path):
    c = feed(check, THROTTLED)
    hooks = type(c)._rfm_pipeline_hooks
    assert 'write_artefacts' in [h.__name__ for h in
                                 hooks['post_run_wait']]
    c.write_artefacts()
    mat = lm.read_csv(tmp_path / 'linkmatrix_fab0.csv')
    want = lm.from_measurements(c._run().measurements)
    assert mat.nodes == want.nodes == ['n1', 'n2', 'n3', 'n4']
    assert mat.bw == pytest.approx(want.bw, abs=1e-4)
    c.describe_matrix()     # the init hook, at this point
    assert c.keep_files == ['linkmatrix_fab0.csv', 'linkmatrix_fab0.png']
    assert set(os.listdir(tmp_path)) <= set(c.keep_files)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return

    assert (tmp_path / 'linkmatrix_fab0.png').read_bytes()[:4] == \
        b'\x89PNG'


def test_unreadable_output_gives_no_artefact(check, tmp_path):
    c = feed(check, THROTTLED[:200])
    c.write_artefacts()
    assert os.listdir(tmp_path) == []
    with pytest.raises(SanityError):
        sn.evaluate(c.validate())


def test_busy_healthy_matrix_passes_with_perf_values(check):
    c = feed(check, BUSY)
    assert sn.evaluate(c.validate()) is True
    bw = lm.from_measurements(c._run().measurements).bw.values()
    assert sn.evaluate(c.bw_min()) == min(bw)
    assert 115 < sn.evaluate(c.bw_median()) < 126


def test_verdict_lines_decide_the_verdict(check):
    # the extension point: a subclass may judge the analysed matrix itself
    c = feed(check, BUSY)
    c.monkeypatch.setattr(c, 'verdict_lines',
                          lambda analysis: [f'{len(analysis.ratios)} pairs '
                                            f'judged'],
                          raising=False)
    with pytest.raises(SanityError, match='^12 pairs judged$'):
        sn.evaluate(c.validate())


def test_no_emulation_variable_set_by_the_check(check):
    c = check
    c.monkeypatch.setattr(c, 'program_path', lambda: '/x/cg_linkmatrix',
                          raising=False)
    c.set_command()
    assert c.executable == '/x/cg_linkmatrix'
    assert 'OMPI_MCA_mpi_yield_when_idle' not in c.env_vars
