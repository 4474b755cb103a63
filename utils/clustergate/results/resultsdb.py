"""The sessions stored in ReFrame's results database, read through
ReFrame's own storage API (``reframe.frontend.reporting.storage``) rather
than SQL on its tables: the schema is ReFrame's to change, and the API also
takes its file lock, so a read never sees a session half written by a
running ``reframe``.

The API reads its options (the database file, the connection timeout)
from ReFrame's runtime (all of it through :mod:`clustergate.adapter`). Outside a ReFrame session (``clustergate
baseline --db``, ``report``, ``timing``) there is none: one is made from
ReFrame's built-in configuration. Inside one (tests that loaded checks)
the existing runtime is used, with the file set for the duration of the
call.
"""

import os
import sqlite3
from typing import Dict, List

from clustergate import adapter

#: as ReFrame's command line sets it (RFM_SQLITE_DB_FILE)
_DB_OPTION = 'storage/sqlite_db_file'


#: the tables ReFrame's results database holds (its storage schema)
_TABLES = ('sessions', 'testcases')


def _check_database(path):
    """ValueError naming ``path`` unless it is a results database ReFrame
    wrote: an empty file (0 bytes), a file of another kind or an SQLite
    database of another program would otherwise be taken as a new
    database (ReFrame creates its tables in it) or fail deep inside
    ReFrame's storage. Read-only: the file is never changed."""
    if not os.path.exists(path):
        raise FileNotFoundError(f'no results database {path}')

    with open(path, 'rb') as fp:
        head = fp.read(16)
    if not head:
        raise ValueError(f'{path}: empty file (0 bytes), not a results '
                         f'database: ReFrame writes one at the end of a '
                         f'run session (storage/sqlite_db_file)')
    if head != b'SQLite format 3\x00':
        raise ValueError(f'{path}: not an SQLite results database')

    try:
        with sqlite3.connect(f'file:{os.path.abspath(path)}?mode=ro',
                             uri=True) as conn:
            tables = {row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as err:
        raise ValueError(f'{path}: not an SQLite results database '
                         f'({err})') from None
    missing = [t for t in _TABLES if t not in tables]
    if missing:
        raise ValueError(
            f'{path}: an SQLite database but not ReFrame\'s results '
            f'database (no table {", ".join(missing)}; it has '
            f'{", ".join(sorted(tables)) or "no table"})')


def stored_reports(path: str) -> List[Dict]:
    """Every session stored in the results database ``path``, each as the
    JSON run report ReFrame stored for it (oldest first)."""
    _check_database(path)
    try:
        sessions = adapter.stored_sessions(path, _DB_OPTION)
    except sqlite3.Error as err:
        raise ValueError(f'{path}: cannot read the results database: '
                         f'{err}') from None
    return sorted(sessions, key=lambda s: s['session_info'].get(
        'time_start_unix', 0))
