"""The cluster tests' harness and a state left behind: a recorded cluster
whose daemons all died (the machine's processes were killed under a
running test) is stale, not "up"; it is taken down before the cluster
tests decide whether to reuse a cluster or skip, so they bring up their
own instead of failing against dead daemons."""

import json
import subprocess
import sys

import pytest

import cluster_session as cs
from clustergate_lab.cluster import procs
from clustergate_lab.cluster.state import STATE_VERSION


def _record(pid):
    return {'pid': pid, 'start': procs.start_time(pid), 'cmd': ['x']}


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(cs, 'STATE_DIR', str(tmp_path))
    monkeypatch.setattr(cs, 'why_not_available', lambda: None)
    calls = []

    def fake_cluster(*args, **kw):
        calls.append(args)
        (tmp_path / 'state.json').unlink()
        return subprocess.CompletedProcess(args, 0, '', '')

    monkeypatch.setattr(cs, 'cluster', fake_cluster)
    return tmp_path, calls


def _write_state(path, recs):
    path.write_text(json.dumps({'version': STATE_VERSION, 'nodes': 4,
                                'phase': 'up', 'procs': recs}))


def test_a_state_whose_daemons_all_died_is_stale_and_taken_down(state_dir):
    root, calls = state_dir
    dead = subprocess.Popen([sys.executable, '-c', 'pass'])
    rec = _record(dead.pid)
    dead.wait()
    _write_state(root / 'state.json', {'munged': rec, 'slurmctld': rec})

    assert not cs.is_up()
    assert cs.clear_stale() == 'stale emulated cluster taken down'
    assert calls == [('down',)]


def test_a_cluster_with_a_running_daemon_is_up_and_left_alone(state_dir):
    root, calls = state_dir
    live = subprocess.Popen([sys.executable, '-c',
                             'import time; time.sleep(30)'])
    try:
        _write_state(root / 'state.json', {'munged': _record(live.pid)})
        assert cs.is_up()
        assert cs.clear_stale() is None
        assert calls == []
    finally:
        live.kill()
        live.wait()


def test_no_state_is_not_up_and_nothing_is_done(state_dir):
    _, calls = state_dir
    assert not cs.is_up()
    assert cs.clear_stale() is None
    assert calls == []
