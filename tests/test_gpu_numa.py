"""Host-device copies of each GPU from its own NUMA node and from a far
one (``GpuHostLinkNuma``, ``host_numa`` near/far): which points exist,
the NUMA node each GPU's run is bound to, the numactl lines of the job
script of a 4 x H200 partition (NUMA nodes [0, 0, 1, 1], from the
recorded ``nvidia-smi topo -m`` in tests/fixtures/site-init/gpu-h200),
and the real nvbandwidth outputs of one H200 judged per GPU and side."""

import json
import os
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from clustergate.site import gpunuma, gpus
from conftest import cut_before, fixture_text
from rfm_loader import checks_fixture, perf_values, pick, sanity_failure
from test_site_init import recorded

gpu = checks_fixture('checks/gpu/gpu_checks.py')

#: the recorded 4 x H200 node: its GPUs (``nvidia-smi -L``) and topology
LISTED = gpus.nvidia_smi_list(recorded('gpu-h200', 'gpu-list-gpu')[1])
NODE = gpus.describe_node(['gpu:h200:4'],
                          recorded('gpu-h200', 'gpu-list-gpu')[1],
                          recorded('gpu-h200', 'gpu-topo-gpu')[1])
#: ``nvidia-smi --query-gpu=index,uuid,name,pci.bus_id`` of that node
QUERY_4 = ''.join(f'{g["index"]}, {g["uuid"]}, {g["model"]}, '
                  f'00000000:0{g["index"]}:00.0\n' for g in LISTED)
NVB = '/opt/nvbandwidth/nvbandwidth'
CASES = 'host_to_device_memcpy_ce device_to_host_memcpy_ce'


def partition(numa_nodes, count=None, name='gpu', numa_domains=None):
    """A ReFrame partition (the attributes the GPU code reads)."""
    count = count or len(numa_nodes) or 1
    dev = SimpleNamespace(device_type='gpu', info={
        'type': 'gpu', 'model': 'NVIDIA H200', 'num_devices': count})
    extras = {'gpus': {'numa_nodes': list(numa_nodes)}} if numa_nodes \
        else {}
    if numa_domains:
        extras['numa_domains_per_node'] = numa_domains
    return SimpleNamespace(fullname=f'site:{name}', name=name,
                           devices=[dev], extras=extras)


def out(name):
    return fixture_text('benchmark-outputs', 'gpu', name)


def test_the_recorded_node_declares_two_numa_nodes():
    assert NODE['numa_nodes'] == [0, 0, 1, 1]
    assert len(LISTED) == 4


# -- the points ---------------------------------------------------------------

ONE_NODE = 'has one NUMA node (0): the host is always on its GPUs\' own'


@pytest.mark.parametrize('numa,domains,gpus_,side,why', [
    ([0, 0, 1, 1], None, 4, 'near', None),
    ([0, 0, 1, 1], None, 4, 'far', None),
    # a job of 2 GPUs of 4: Slurm renumbers them, the binding is by index
    ([0, 0, 1, 1], None, 2, 'near', 'it runs on every GPU of a node of '
                                    'partition site:gpu (4), not 2'),
    # one NUMA node: near is where the OS puts it (GpuHostLink), no far
    ([0, 0, 0, 0], None, 4, 'near', ONE_NODE),
    ([0, 0, 0, 0], None, 4, 'far', ONE_NODE),
    ([0], None, 1, 'near', ONE_NODE),
    ([0], 1, 1, 'far', ONE_NODE),
    # two sockets, every GPU on the first: the second is far
    ([0, 0, 0, 0], 2, 4, 'near', None),
    ([0, 0, 0, 0], 2, 4, 'far', None),
    ([], None, 1, 'near', 'declares no NUMA node of each of its GPUs'),
    ([], 2, 1, 'far', 'declares no NUMA node of each of its GPUs'),
    ([0, None, 1, 1], None, 4, 'far',
     'declares no NUMA node of each of its GPUs'),
])
def test_which_points_exist(gpu, numa, domains, gpus_, side, why):
    c = pick(gpu, 'GpuHostLinkNuma', host_numa=side)
    c.gpus_per_node = gpus_
    got = c.point_reason(partition(numa, numa_domains=domains), None)
    if why is None:
        assert got is None
    else:
        assert got is not None and why in got, got


def test_far_is_never_the_gpus_own_node():
    for numa in ([0, 0, 1, 1], [1, 1, 0, 0], [0, 1, 2, 3], [0, 0, 0, 3],
                 [2, 2, 3, 3]):
        near = gpunuma.bound_nodes(numa, 'near')
        far = gpunuma.bound_nodes(numa, 'far')
        assert near == numa
        assert all(f != n for f, n in zip(far, numa)), (numa, far)
        assert set(far) <= set(numa) | {0}
    assert gpunuma.bound_nodes([0, 0, 1, 1], 'far') == [1, 1, 0, 0]
    assert gpunuma.bound_nodes([0, 1, 2, 3], 'far') == [1, 2, 3, 0]
    assert gpunuma.bound_nodes([0, 0, 0, 0], 'far', 2) == [1, 1, 1, 1]
    assert gpunuma.bound_nodes([1, 1], 'far', 2) == [0, 0]
    with pytest.raises(ValueError):
        gpunuma.bound_nodes([0, 0], 'far')


# -- the job script -----------------------------------------------------------

def bound_check(gpu, side):
    """The check's job lines on the recorded 4 x H200 partition."""
    c = pick(gpu, 'GpuHostLinkNuma', host_numa=side)
    c.gpus_per_node = 4
    c._current_partition = partition(NODE['numa_nodes'])
    c.executable, c.prerun_cmds = NVB, []
    c.set_options()
    c.bind_each_gpu()
    return c


@pytest.mark.parametrize('side,nodes', [('near', [0, 0, 1, 1]),
                                        ('far', [1, 1, 0, 0])])
def test_job_script_binds_each_gpu(gpu, side, nodes):
    c = bound_check(gpu, side)
    runs = [ln.strip() for ln in c.prerun_cmds if 'numactl --' in ln]
    assert runs == [
        f'CUDA_VISIBLE_DEVICES=${{_cg_gpus[{i}]:-{i}}} numactl '
        f'--cpunodebind={n} --membind={n} {NVB} -j -t {CASES} > '
        f'nvbandwidth.out.{i} 2> nvbandwidth.out.{i}.err; '
        f'echo $? > nvbandwidth.out.{i}.rc' for i, n in enumerate(nodes)]
    assert c.numa_binding == ' '.join(f'gpu{i}:{n}'
                                      for i, n in enumerate(nodes))
    assert (c.executable, c.executable_opts) == (
        'tail', ['-n', '+1'] + [f'nvbandwidth.out.{i}' for i in range(4)])


RECORDER = '''#!/bin/sh
# records how it was called; the test reads the lines
echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES $*"
'''


def run_lines(lines, tmp_path, path, env=None):
    script = tmp_path / 'job.sh'
    script.write_text('\n'.join(lines) + '\n')
    subprocess.run(['/bin/bash', str(script)], cwd=tmp_path, check=True,
                   env=dict(env or {}, PATH=path), timeout=60)


def with_hostname(bindir):
    """``hostname`` in ``bindir`` (the job line names the node with it);
    what it prints here ('' without it)."""
    path = shutil.which('hostname')
    if path is None:
        return ''
    os.symlink(path, bindir / 'hostname')
    return subprocess.run([path], capture_output=True,
                          text=True).stdout.strip()


def test_job_lines_run_each_gpu_on_its_node(gpu, tmp_path):
    # the lines as bash runs them, numactl replaced by a recorder of its
    # arguments: GPU i sees the job's i-th GPU, bound to the far node
    c = bound_check(gpu, 'far')
    lines = [ln for ln in c.prerun_cmds]
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'numactl').write_text(RECORDER)
    (bindir / 'numactl').chmod(0o755)
    with_hostname(bindir)
    run_lines(lines, tmp_path, str(bindir),
              {'CUDA_VISIBLE_DEVICES': '4,5,6,7'})
    for i, (phys, node) in enumerate(zip('4567', (1, 1, 0, 0))):
        got = (tmp_path / f'nvbandwidth.out.{i}').read_text()
        assert got == (f'CUDA_VISIBLE_DEVICES={phys} --cpunodebind={node} '
                       f'--membind={node} {NVB} -j -t {CASES}\n')
        assert (tmp_path / f'nvbandwidth.out.{i}.rc').read_text() == '0\n'
    assert gpunuma.numactl_reason(
        (tmp_path / gpunuma.NUMACTL_FILE).read_text()) is None


def test_no_numactl_on_the_node_fails_with_the_cause(gpu, tmp_path):
    c = bound_check(gpu, 'near')
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    host = with_hostname(bindir)
    run_lines(c.prerun_cmds, tmp_path, str(bindir))
    assert not (tmp_path / 'nvbandwidth.out.0').exists()
    files = {p.name: p.read_text() for p in tmp_path.iterdir()
             if p.is_file()}
    judged = job(c, 'near', {})
    judged.job_text = lambda name: files.get(name, '')
    msg = sanity_failure(judged)
    assert msg.startswith(f'numactl: not found on {host}: host_numa binds '
                          f'each GPU\'s host process to a NUMA node')


# -- judging the outputs ------------------------------------------------------

def job(c, side, outputs, numa=(0, 0, 1, 1), **files):
    """``c`` reading a 4-GPU job's files: each GPU's nvbandwidth output."""
    c.gpus_per_node = len(numa)
    c.host_numa = side
    c.numa_binding = ' '.join(
        f'gpu{i}:{n}' for i, n in
        enumerate(gpunuma.bound_nodes(list(numa), side)))
    got = {'cg-gpus.csv': QUERY_4, gpunuma.NUMACTL_FILE: '/usr/bin/numactl\n',
           **{f'nvbandwidth.out.{i}': t for i, t in outputs.items()},
           **files}
    c.stdout_text = lambda: ''
    c.job_text = lambda name: got.get(name, '')
    return c


def real_json(h2d='55.3197', d2h='55.3016'):
    """The real one-GPU JSON (what each GPU's run prints: it sees one
    GPU), with the given figures."""
    doc = json.loads(out('nvbandwidth-h2d-d2h.json'))
    cases = doc['nvbandwidth']['testcases']
    cases[0]['bandwidth_matrix'] = [[h2d]]
    cases[1]['bandwidth_matrix'] = [[d2h]]
    return json.dumps(doc)


@pytest.mark.parametrize('side', ['near', 'far'])
def test_figures_per_gpu_and_side(gpu, side):
    c = job(pick(gpu, 'GpuHostLinkNuma', host_numa=side), side, {
        0: out('nvbandwidth-h2d-d2h.json'), 1: out('nvbandwidth-h2d-d2h.out'),
        2: real_json('55.1000', '55.2000'), 3: out('nvbandwidth-h2d-d2h.json')})
    assert c.check_output(c.output_text())
    assert perf_values(c) == {
        f'h2d_{side}_gpu0': 55.3197, f'h2d_{side}_gpu1': 55.39,
        f'h2d_{side}_gpu2': 55.1, f'h2d_{side}_gpu3': 55.3197,
        f'd2h_{side}_gpu0': 55.3016, f'd2h_{side}_gpu1': 55.32,
        f'd2h_{side}_gpu2': 55.2, f'd2h_{side}_gpu3': 55.3016}


def test_slow_far_side_names_the_gpu(gpu):
    c = job(pick(gpu, 'GpuHostLinkNuma', host_numa='far'), 'far', {
        0: real_json(), 1: real_json(), 2: real_json(d2h='27.6500'),
        3: real_json()})
    uuid = LISTED[2]['uuid']
    assert sanity_failure(c) == (
        f'GPU 2 ({uuid}, NVIDIA H200): device-to-host from the far NUMA '
        f'node 27.65 GB/s, 0.50x the median 55.3 GB/s of its 3 peer(s) in '
        f'the node (below 0.90x): its host link or its path from the other '
        f'socket is slow')


def test_a_run_that_printed_nothing_is_named(gpu):
    c = job(pick(gpu, 'GpuHostLinkNuma', host_numa='far'), 'far', {
        0: real_json(), 1: '', 2: real_json(), 3: real_json()},
        **{'nvbandwidth.out.1.rc': '1\n',
           'nvbandwidth.out.1.err': 'libnuma: Warning: node argument 1 is '
                                    'out of range\n\nusage: numactl ...\n'})
    assert sanity_failure(c) == (
        f'GPU 1 ({LISTED[1]["uuid"]}, NVIDIA H200) (host on NUMA node 1): '
        f'nvbandwidth printed nothing (exit status 1: libnuma: Warning: '
        f'node argument 1 is out of range)')


def test_numactl_refusing_the_node_is_named(gpu):
    # what numactl 2.0 prints for a node the machine has not: "<1> is
    # invalid" on stdout, its usage on stderr (recorded on a 1-node host)
    c = job(pick(gpu, 'GpuHostLinkNuma', host_numa='near'), 'near', {
        0: real_json(), 1: real_json(), 2: '<1> is invalid\n',
        3: real_json()}, **{'nvbandwidth.out.2.rc': '1\n',
                            'nvbandwidth.out.2.err':
                            'libnuma: Warning: node argument 1 is out of '
                            'range\n'})
    msg = sanity_failure(c)
    assert msg.startswith(f'GPU 2 ({LISTED[2]["uuid"]}, NVIDIA H200) (host '
                          f'on NUMA node 1): not an nvbandwidth output')
    assert msg.endswith('(exit status 1: libnuma: Warning: node argument 1 '
                        'is out of range)')


def test_a_run_cut_short_is_named(gpu):
    c = job(pick(gpu, 'GpuHostLinkNuma', host_numa='near'), 'near', {
        0: real_json(), 1: real_json(), 2: real_json(),
        3: cut_before(out('nvbandwidth-h2d-d2h.out'),
                      'SUM device_to_host_memcpy_ce')})
    assert "GPU 3 (" in sanity_failure(c)
    assert "device_to_host_memcpy_ce has no 'SUM device_to_host_memcpy_ce'" \
        in sanity_failure(c)


def test_a_job_on_other_gpus_than_the_binding_is_refused(gpu):
    # the job's GPU 0 is the node's GPU 2: its binding is GPU 0's
    c = job(pick(gpu, 'GpuHostLinkNuma', host_numa='near'), 'near',
            {i: real_json() for i in range(4)},
            **{'cg-gpu-map.txt': '0 2\n1 3\n2 0\n3 1\n'})
    assert "the job's GPU 0 is the node's GPU 2" in sanity_failure(c)


def test_a_reference_key_knows_the_sides():
    # the axis' values as the reference files' keys are checked against
    from clustergate.refs import directions, refcheck
    from clustergate.rfm.families.gpunode import HOST_NUMA_SIDES
    assert HOST_NUMA_SIDES == gpunuma.SIDES
    assert refcheck.parameter_values()['host_numa'] == {'near', 'far'}
    for side in gpunuma.SIDES:
        for way in ('h2d', 'd2h'):
            assert directions.declared('GpuHostLinkNuma',
                                       f'{way}_{side}_gpu7') == 'higher'
    assert directions.declared('GpuHostLinkNuma', 'h2d_gpu0') is None
