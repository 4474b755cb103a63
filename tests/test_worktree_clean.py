"""The test suite writes nothing into the work tree: no perflog line, no
results database, no stage or output directory, no report (conftest points
the sessions it starts at a temporary directory). Runs after every other
test (conftest.pytest_collection_modifyitems)."""

import pytest

from conftest import WORKTREE_BEFORE, worktree_status


def test_suite_wrote_nothing_into_the_work_tree():
    if WORKTREE_BEFORE is None:
        pytest.skip('not a git checkout: git status cannot tell')

    new = sorted(worktree_status() - WORKTREE_BEFORE)
    assert new == [], f'the suite wrote into the work tree: {new}'
