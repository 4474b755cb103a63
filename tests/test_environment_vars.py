"""The CG_ environment variables: declared in clustergate.site.environment
and read only there."""

import os
import re

import pytest

from clustergate.site import environment as cgenv
from conftest import ROOT

#: a read of a CG_ variable straight from the process environment
DIRECT = re.compile(r'''(os\.environ(\.get\(|\[)|getenv\()\s*['"]CG_''')
OWNER = os.path.join(ROOT, 'utils', 'clustergate', 'site', 'environment.py')


def _direct_reads():
    for top in ('utils', 'config', 'checks'):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for fname in files:
                path = os.path.join(dirpath, fname)
                if not fname.endswith('.py') or path == OWNER:
                    continue
                with open(path) as fp:
                    for no, line in enumerate(fp, 1):
                        if DIRECT.search(line):
                            yield f'{os.path.relpath(path, ROOT)}:{no}'


def test_no_module_reads_a_cg_variable_directly():
    assert list(_direct_reads()) == []


def test_the_scan_sees_a_direct_read():
    assert DIRECT.search("x = os.environ.get('CG_RESULTS_DB', d)")
    assert DIRECT.search('x = os.environ["CG_SCORE_FILE"]')
    assert not DIRECT.search("cgenv.get(cgenv.RESULTS_DB, d)")


def test_each_variable_is_declared_with_its_meaning(monkeypatch):
    names = [v for k, v in vars(cgenv).items()
             if k.isupper() and isinstance(v, str) and v.startswith('CG_')]
    assert sorted(names) == sorted(cgenv.VARIABLES)
    assert all(cgenv.VARIABLES[n] for n in names)
    monkeypatch.setenv(cgenv.RESULTS_DB, '')
    assert cgenv.get(cgenv.RESULTS_DB, 'default') == ''   # set, even empty
    monkeypatch.delenv(cgenv.RESULTS_DB)
    assert cgenv.get(cgenv.RESULTS_DB, 'default') == 'default'
    with pytest.raises(KeyError, match='CG_RESULT_DB: not a declared'):
        cgenv.get('CG_RESULT_DB')


def test_overridden_restores_the_variable(monkeypatch):
    monkeypatch.delenv(cgenv.MPI_PROBE_QUIET, raising=False)
    with cgenv.overridden(cgenv.MPI_PROBE_QUIET, '1'):
        assert cgenv.get(cgenv.MPI_PROBE_QUIET) == '1'
    assert cgenv.get(cgenv.MPI_PROBE_QUIET) is None
    monkeypatch.setenv(cgenv.MPI_PROBE_QUIET, 'yes')
    with cgenv.overridden(cgenv.MPI_PROBE_QUIET, '1'):
        pass
    assert cgenv.get(cgenv.MPI_PROBE_QUIET) == 'yes'
