"""The sessions stored in ReFrame's results database, read through
ReFrame's own storage API (``reframe.frontend.reporting.storage``) rather
than SQL on its tables: the schema is ReFrame's to change, and the API also
takes its file lock, so a read never sees a session half written by a
running ``reframe``.

The API reads its options (the database file, the connection timeout)
from ReFrame's runtime. Outside a ReFrame session (``clustergate
baseline --db``, ``report``, ``timing``) there is none: one is made from
ReFrame's built-in configuration. Inside one (tests that loaded checks)
the existing runtime is used, with the file set for the duration of the
call.
"""

import os
from typing import Dict, List

#: as ReFrame's command line sets it (RFM_SQLITE_DB_FILE)
_DB_OPTION = 'storage/sqlite_db_file'


def _runtime():
    import reframe.core.config as config
    import reframe.core.runtime as rt
    from reframe.core.exceptions import ReframeFatalError

    try:
        return rt.runtime()
    except ReframeFatalError:
        site = config.load_config()
        site.select_subconfig('generic')
        rt.init_runtime(site)
        return rt.runtime()


def stored_reports(path: str) -> List[Dict]:
    """Every session stored in the results database ``path``, each as the
    JSON run report ReFrame stored for it (oldest first)."""
    from reframe.frontend.reporting.storage import StorageBackend
    from reframe.frontend.reporting.utility import QuerySelectorTestcase

    if not os.path.exists(path):
        raise FileNotFoundError(f'no results database {path}')
    with open(path, 'rb') as fp:
        head = fp.read(16)
    if head and head != b'SQLite format 3\x00':    # empty: a new database
        raise ValueError(f'{path}: not an SQLite results database')

    site = _runtime().site_config
    site.add_sticky_option(_DB_OPTION, os.path.abspath(path))
    try:
        backend = StorageBackend.create('sqlite')
    finally:
        site.remove_sticky_option(_DB_OPTION)

    sessions = backend.fetch_sessions(QuerySelectorTestcase(
        sess_filter='True'))
    return sorted(sessions, key=lambda s: s['session_info'].get(
        'time_start_unix', 0))
