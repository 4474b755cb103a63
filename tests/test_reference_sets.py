"""One system, two hardware layouts: the emulated cluster as 4 flat nodes
at 1 Gbit/s and as a 9-node leaf/spine tree at 250 Mbit/s runs the same
points (Hotspot on 4 nodes at 1 MB, ...). Each layout is judged by its
own reference file (the partition's ``reference_set``), never by the
other's figures; a declared set without its file stops the load."""

import json
import os
import subprocess
import sys

import pytest

from clustergate.refs import refcheck
from clustergate.refs import references as R
from clustergate.site import environment as cgenv
from clustergate.site import extras
from conftest import ROOT
from emu_layout import environment

#: the emucluster system as loaded on a layout: the reference a Hotspot
#: run on 4 nodes is judged by, through the check's own setup hook
_PROBE = r'''
import json, runpy, sys
from clustergate.rfm.point import reference
from clustergate.site import extras
conf = runpy.run_path(sys.argv[1])['site_configuration']
part = conf['systems'][0]['partitions'][0]
extras.check_partition(part, 'emucluster')

class Part:
    name, fullname, environs = 'emu', 'emucluster:emu', []
    extras = part['extras']

class Sys:
    name = 'emucluster'

class Env:
    name = 'openmpi'

class Logger:
    def info(self, msg):
        pass

class Hotspot:
    current_system, current_partition, current_environ = Sys(), Part(), Env()
    display_name, reference, reference_status = 'Hotspot', {}, ''
    logger = Logger()
    num_nodes, ppn, interconnect, msg_bytes = 4, 1, 'fab1', 1000000

    def reference_axes(self):
        return {'num_nodes': 4, 'ppn': 1, 'interconnect': 'fab1',
                'msg_bytes': 1000000}

t = Hotspot()
status = reference.apply(t)
print(json.dumps([status, t.reference['emucluster:emu']['bandwidth'][0]]))
'''


def _judged_on(tmp_path, leaves):
    env = environment(tmp_path / 'state', nodes=9 if leaves else 4,
                      leaves=leaves)
    env.pop('CG_REFERENCES_DIR', None)
    proc = subprocess.run(
        [sys.executable, '-c', _PROBE,
         os.path.join(ROOT, 'config', 'systems', 'emucluster.py')],
        env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_the_tree_is_judged_by_its_own_references(tmp_path):
    status, value = _judged_on(tmp_path, leaves=3)
    assert status.startswith('config/references/emucluster.leafspine.yaml#'
                             'Hotspot.emu.'), status
    # a 250 Mbit/s node link carries at most ~31 MB/s: a reference of the
    # flat 1 Gbit/s cluster (123-132 MB/s) would fail every healthy night
    assert 10 < value < 31.25


def test_the_flat_cluster_keeps_its_references(tmp_path):
    status, value = _judged_on(tmp_path, leaves=None)
    assert status.startswith('config/references/emucluster.yaml#Hotspot.'
                             'emu.'), status
    assert value > 100


def test_the_two_files_validate_as_files_of_one_system():
    systems = {'emucluster': ['emu']}
    for name in ('emucluster.yaml', 'emucluster.leafspine.yaml'):
        refs = refcheck.validate_file(
            os.path.join(ROOT, 'config', 'references', name), systems)
        assert refs.system == 'emucluster' and len(refs) > 0


@pytest.mark.parametrize('value, problem', [
    ('nosuch', "'nosuch': no reference file "),
    ('../flat', 'must be a name of letters, digits, - and _'),
    (3, 'must be a name of letters, digits, - and _, got 3'),
])
def test_a_reference_set_must_name_a_file_of_the_system(tmp_path,
                                                        monkeypatch, value,
                                                        problem):
    monkeypatch.setenv('CG_REFERENCES_DIR', str(tmp_path))
    part = {'name': 'emu', 'extras': {'reference_set': value}}
    with pytest.raises(extras.ExtrasError) as err:
        extras.check_partition(part, 'emucluster')
    assert str(err.value).startswith(
        'partition emucluster:emu: extras.reference_set: ')
    assert problem in str(err.value)
    (tmp_path / 'emucluster.nosuch.yaml').write_text(
        'system: emucluster\nreferences: {}\n')
    if value == 'nosuch':
        extras.check_partition(part, 'emucluster')
        assert R.reference_file(cgenv.references_dir(), 'emucluster',
                                'nosuch') == str(
            tmp_path / 'emucluster.nosuch.yaml')
