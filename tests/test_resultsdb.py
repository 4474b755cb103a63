"""Sessions are read back from ReFrame's results database through
ReFrame's storage API (no SQL of ours on its tables)."""

import os
import re

import pytest

from clustergate.results.samples import results_db_reports
from test_notrun import _session


def test_stored_session_read_back_through_the_storage_api(tmp_path):
    settings = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), 'config', 'settings.py')
    res, out = _session(tmp_path, settings, '-n', 'NpbCG')
    uuid = re.search(r'Current session stored with UUID: (\S+)', res.stdout)
    assert uuid, res.stdout[-2000:]

    reports = results_db_reports(str(out / 'results.db'))
    assert [r['session_info']['uuid'] for r in reports] == [uuid[1]]
    cases = reports[0]['runs'][0]['testcases']
    assert {tc['name'].split()[0] for tc in cases} == {'NpbCG',
                                                       'NpbBinaries'}


def test_missing_database_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match='no results database'):
        results_db_reports(str(tmp_path / 'none.db'))
