"""GPU partitions: the probes ``site init`` reads (Slurm GRES,
``nvidia-smi -L``, ``nvidia-smi topo -m``), the partition it writes from
the recordings of a 4 x H200 node (tests/fixtures/site-init/gpu-h200,
each file's first line says how it was made), what ``-l`` lists on it
(every GPU family over GPUs per node, nodes and interconnect; nothing on
its CPU-only partition), dry runs of the nightly and acceptance modes,
the validation of a partition's GPU keys and the GPU probe of this
machine."""

import os
import re
import subprocess
import sys

import pytest

from clustergate.site import gpus
from clustergate.site.errors import ExtrasError
from conftest import fixture_text, isolated_env, reframe_cmd
from test_site_init import init, project_copy, recorded

GPU_FAMILIES = ('GpuStream', 'GpuHostLink', 'GpuHostLinkNuma', 'GpuBurn',
                'NcclAllReduce', 'NcclSendRecv', 'NcclAllGather',
                'OsuGpuBandwidth', 'OsuGpuLatency')


def node_facts_topology():
    """The real ``nvidia-smi topo -m`` of the 1 x H200 node."""
    text = fixture_text('benchmark-outputs', 'gpu', 'node-facts.txt')
    start = text.index('\tGPU0') if '\tGPU0' in text else \
        text.index('GPU0\tCPU') - 5
    return text[start - 5:text.index('NV#')]


# -- the probes ---------------------------------------------------------------

def test_real_one_gpu_topology():
    topo = gpus.nvidia_smi_topology(node_facts_topology())
    assert topo == {0: {'numa_node': 0, 'nic': None, 'cpus': '0-15'}}


def test_real_gpu_listing_line():
    # gpu_burn prints nvidia-smi -L first: the real node's line
    first = fixture_text('benchmark-outputs', 'gpu',
                         'gpuburn-30s.cut-by-timeout.out').splitlines()[0]
    assert gpus.nvidia_smi_list(first) == [{
        'index': 0, 'model': 'NVIDIA H200',
        'uuid': 'GPU-99a62ee6-3258-17cd-89b4-0c89c9f209b9'}]


@pytest.mark.parametrize('gres,expected', [
    (['gpu:h200:4'], ('h200', 4)), (['gpu:4(S:0-1)'], ('', 4)),
    (['craynetwork:4', 'gpu:a100:8'], ('a100', 8)), ([], None),
    (['craynetwork:4'], None)])
def test_gres(gres, expected):
    assert gpus.gres_gpus(gres) == expected


def test_four_gpu_node_from_its_probes():
    got = gpus.describe_node(['gpu:h200:4'],
                             recorded('gpu-h200', 'gpu-list-gpu')[1],
                             recorded('gpu-h200', 'gpu-topo-gpu')[1])
    assert got == {'count': 4, 'model': 'NVIDIA H200', 'arch': 'sm_90',
                   'gres': 'gpu:h200', 'numa_nodes': [0, 0, 1, 1],
                   'nics': ['mlx5_0', 'mlx5_0', 'mlx5_1', 'mlx5_1'],
                   'notes': []}


def test_gres_only_when_the_node_was_not_probed():
    got = gpus.describe_node(['gpu:a100:4'])
    assert (got['count'], got['model'], got['arch'], got['numa_nodes']) == (
        4, 'A100', 'sm_80', None)


# -- validation at load --------------------------------------------------------

def part(devices=None, extra=None):
    return {'name': 'gpu', 'devices': devices or [],
            'extras': {'gpus': extra} if extra is not None else {}}


@pytest.mark.parametrize('p,message', [
    (part([{'type': 'gpu', 'num_devices': 0}]),
     'devices: gpu entry: num_devices must be the GPUs of one node'),
    (part([{'type': 'gpu', 'num_devices': 4, 'modle': 'H200'}]),
     'devices: gpu entry: modle: unknown key'),
    (part(extra={'request': 'gres'}), 'extras.gpus without a gpu device'),
    (part([{'type': 'gpu', 'num_devices': 4}], {'request': 'gpus'}),
     "extras.gpus.request: 'gpus' is not one of gpus-per-node, gres"),
    (part([{'type': 'gpu', 'num_devices': 4}], {'numa_nodes': [0, 1]}),
     'extras.gpus.numa_nodes: must list one value per GPU (4)'),
    (part([{'type': 'gpu', 'num_devices': 4}], {'nic': ['mlx5_0'] * 4}),
     'extras.gpus.nic: unknown key'),
])
def test_bad_gpu_declarations_are_named(p, message):
    with pytest.raises(ExtrasError, match=re.escape(message)):
        gpus.check_partition(p, 'site')


def test_launch_settings():
    spec = gpus.of_partition(part([{'type': 'gpu', 'num_devices': 4,
                                    'model': 'NVIDIA H200'}],
                                  {'request': 'gres', 'gres': 'gpu:h200'}))
    assert spec.slurm_options(2) == ['--gres=gpu:h200:2']
    spec = gpus.of_partition(part([{'type': 'gpu', 'num_devices': 4}]))
    assert spec.slurm_options(3) == ['--gpus-per-node=3']
    assert gpus.visible_devices(3) == '0,1,2'
    assert gpus.of_partition(part()) is None


# -- this machine ---------------------------------------------------------------

class Ran:
    def __init__(self, text, rc=0):
        self.stdout, self.returncode, self.calls = text, rc, 0

    def __call__(self, argv, **kw):
        self.calls += 1
        assert argv[1:] == ['-L']
        return self


def test_local_probe_is_asked_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv('CG_GPU_PROBE_CACHE', str(tmp_path / 'gpu.json'))
    smi = tmp_path / 'nvidia-smi'
    smi.write_text('')
    which = {'nvidia-smi': str(smi)}.get
    listing = recorded('gpu-h200', 'gpu-list-gpu')[1]
    run = Ran(listing)
    first = gpus.local_gpus(which=which, run=run)
    assert [g['uuid'] for g in first][:1] == [
        'GPU-37131cbc-2be2-2bc3-fc77-14417bf3135e']
    assert gpus.local_gpus(which=which, run=run) == first
    assert run.calls == 1
    assert gpus.local_devices(first) == [{
        'type': 'gpu', 'model': 'NVIDIA H200', 'num_devices': 4,
        'arch': 'sm_90'}]


def test_no_nvidia_smi_no_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv('CG_GPU_PROBE_CACHE', str(tmp_path / 'gpu.json'))
    assert gpus.local_gpus(which=lambda name: None) == []
    assert gpus.local_devices([]) == []


# -- site init on a GPU partition ---------------------------------------------

@pytest.fixture(scope='module')
def gpusite(tmp_path_factory):
    root = project_copy(tmp_path_factory.mktemp('gpusite'))
    assert init(root, 'gpu-h200', 'gpusite') == 0
    return root


def rfm(root, *args):
    env = dict(isolated_env(root / 'config' / 'references', root / 'out'),
               CG_MPI_PROBE_QUIET='1')
    # no Slurm here: ReFrame's srun launcher asks `srun --version`, which
    # with an empty SLURM_CONF retries for a minute, without it fails at
    # once (and a dry run submits nothing)
    env.pop('SLURM_CONF')
    res = subprocess.run(reframe_cmd() + [
        '-C', str(root / 'config' / 'settings.py'), '-c',
        os.path.join(os.path.dirname(__file__), '..', 'checks', 'gpu'),
        *args], capture_output=True, text=True, env=env, timeout=1500,
        cwd=str(root))
    return res.returncode, res.stdout + res.stderr


def test_site_init_writes_the_gpu_partition(gpusite):
    import runpy
    mod = runpy.run_path(str(gpusite / 'config' / 'systems' / 'gpusite.py'))
    parts = {p['name']: p for p in
             mod['site_configuration']['systems'][0]['partitions']}
    assert parts['gpu']['devices'] == [{
        'type': 'gpu', 'model': 'NVIDIA H200', 'num_devices': 4,
        'arch': 'sm_90'}]
    assert parts['gpu']['extras']['gpus'] == {
        'request': 'gres', 'gres': 'gpu:h200', 'numa_nodes': [0, 0, 1, 1],
        'nics': ['mlx5_0', 'mlx5_0', 'mlx5_1', 'mlx5_1']}
    assert {1, 2, 3, 4} <= set(parts['gpu']['extras']['sweep']['ppn'])
    assert 'devices' not in parts['compute']
    assert 'gpus' not in parts['compute']['extras']
    spack = (gpusite / 'spack-env' / 'gpusite-gpu' / 'spack.yaml').read_text()
    assert '- babelstream +cuda cuda_arch=90' in spack
    assert '- osu-micro-benchmarks@7.5.1 +cuda cuda_arch=90' in spack


def test_list_sweeps_every_gpu_family_on_the_gpu_partition(gpusite):
    rc, text = rfm(gpusite, '--system', 'gpusite:gpu', '-l')
    assert rc == 0, text
    cases = re.findall(r'^- (\w+) (.*?) /\w+$', text, re.M)
    assert {name for name, _ in cases} == set(GPU_FAMILIES)
    params = {name: [] for name in GPU_FAMILIES}
    for name, p in cases:
        params[name].append(dict(re.findall(r'%(\w+)=(\S+)', p)))
    for name in ('GpuStream', 'GpuHostLink', 'GpuBurn', 'NcclSendRecv',
                 'NcclAllReduce'):
        assert {p['gpus_per_node'] for p in params[name]} >= {'2', '3', '4'}
    nodes = {(p['num_nodes'], p['ppn'], p['gpus_per_node'])
             for p in params['NcclAllReduce']}
    # within a node one process drives the GPUs; across, a rank per GPU;
    # one GPU in all measures no bus bandwidth: no such case
    assert ('1', '1', '4') in nodes and ('2', '4', '4') in nodes
    assert ('4', '2', '2') in nodes
    assert ('1', '1', '1') not in nodes and ('2', '2', '4') not in nodes
    assert all(p['interconnect'] == 'mlx5_0' for p in params['NcclSendRecv'])
    assert [p['num_nodes'] for p in params['OsuGpuBandwidth']] == ['2']
    # its GPUs on NUMA nodes 0, 0, 1, 1: each GPU from its own node and
    # from the other, on all 4 GPUs (the binding is by the node's index)
    assert sorted((p['host_numa'], p['gpus_per_node'])
                  for p in params['GpuHostLinkNuma']) == [('far', '4'),
                                                          ('near', '4')]


def test_a_cpu_only_partition_lists_no_gpu_case(gpusite):
    rc, text = rfm(gpusite, '--system', 'gpusite:compute', '-l')
    assert 'Found 0 check(s)' in text, text


@pytest.mark.parametrize('mode', ['nightly', 'acceptance'])
def test_dry_run_of_the_modes_on_the_gpu_partition(gpusite, mode):
    rc, text = rfm(gpusite, '--system', 'gpusite:gpu', '--mode', mode,
                   '--dry-run')
    assert rc == 0, text[-3000:]
    ran = re.search(r'Ran (\d+)/(\d+) test case\(s\)', text)
    assert ran and int(ran.group(1)) > 40, text[-2000:]
    assert '0 failure(s)' in text
    # the job scripts of the NUMA-bound host-link cases: GPUs 0, 1 on
    # NUMA node 0 and 2, 3 on node 1 (the recorded topology)
    assert numa_bindings(gpusite) == {
        'near': ['0', '0', '1', '1'], 'far': ['1', '1', '0', '0']}


def numa_bindings(root):
    """``{host_numa: [NUMA node of GPU i]}`` of the GpuHostLinkNuma job
    scripts a session left in its stage folder (each line checked whole:
    GPU i's own device, its node for CPUs and memory, its own files)."""
    import json
    out = {}
    for case in (root / 'stage').glob('gpusite/gpu/*/GpuHostLinkNuma_*'):
        name = json.loads((case / '.rfm_testcase.json').read_text())[
            '_rfm_display_name']
        side = re.search(r'%host_numa=(\w+)', name).group(1)
        script = (case / 'rfm_job.sh').read_text()
        runs = re.findall(
            r'^  CUDA_VISIBLE_DEVICES=\$\{_cg_gpus\[(\d)\]:-(\d)\} numactl '
            r'--cpunodebind=(\d+) --membind=(\d+) \S+/nvbandwidth -j -t '
            r'host_to_device_memcpy_ce device_to_host_memcpy_ce > '
            r'nvbandwidth\.out\.(\d) 2> nvbandwidth\.out\.(\d)\.err; '
            r'echo \$\? > nvbandwidth\.out\.(\d)\.rc$', script, re.M)
        assert all(len({r[0], r[1], r[4], r[5], r[6]}) == 1 and r[2] == r[3]
                   for r in runs), runs
        assert [r[0] for r in runs] == ['0', '1', '2', '3'], script
        assert out.setdefault(side, [r[2] for r in runs]) == \
            [r[2] for r in runs]
    return out


def test_prebuilt_gpu_binaries_are_found_where_their_builds_leave_them(
        tmp_path):
    # the layout of a GPU node's builds: build/ for the CMake and make
    # builds, the top folder for gpu-burn
    from clustergate.site import benchmarks
    for rel in ('babelstream/build/cuda-stream', 'gpu-burn/gpu_burn',
                'nccl-tests/build/sendrecv_perf'):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('')
        path.chmod(0o755)
    for fam, sub, name, rel in (
            ('babelstream', 'babelstream', 'cuda-stream', 'build'),
            ('gpuburn', 'gpu-burn', 'gpu_burn', ''),
            ('nccl', 'nccl-tests', 'sendrecv_perf', 'build')):
        src = benchmarks.resolve({}, fam, override_prefix=str(tmp_path / sub))
        assert benchmarks.why_binary_missing(src, name) is None
        want = os.path.join(str(tmp_path / sub), *([rel] if rel else []),
                            name)
        assert benchmarks.expected_binary(src, name) == want
    src = benchmarks.resolve({}, 'nccl', override_prefix=str(
        tmp_path / 'nccl-tests'))
    assert 'all_gather_perf not found under' in benchmarks.why_binary_missing(
        src, 'all_gather_perf')


LOCAL_GPU = '''
import os, sys
sys.path.insert(0, {tests!r})
from clustergate.site import gpus
from test_site_init import recorded
one = gpus.nvidia_smi_list(recorded('gpu-h200', 'gpu-list-gpu')[1])[:1]
# what nvidia-smi -L answers on a one-GPU node
gpus.local_gpus = lambda *a, **k: one
import rfm_loader
for c in rfm_loader.load_checks('checks/gpu/gpu_checks.py', 'localhost'):
    if c.valid_systems and 'nightly' in c.tags:
        print(c.display_name, c.valid_prog_environs)
'''


def test_localhost_with_one_gpu_runs_the_single_gpu_cases(tmp_path):
    env = dict(os.environ, CG_GPU_BENCHMARKS=str(tmp_path),
               CG_MPI_PROBE_QUIET='1')
    tests = os.path.dirname(os.path.abspath(__file__))
    res = subprocess.run([sys.executable, '-c',
                          LOCAL_GPU.format(tests=tests)],
                         capture_output=True, text=True, env=env,
                         timeout=600, cwd=tests)
    assert res.returncode == 0, res.stderr[-3000:]
    names = [line.split(' [')[0] for line in res.stdout.splitlines()]
    assert names == [
        'GpuStream %gpus_per_node=1', 'GpuHostLink %gpus_per_node=1',
        'GpuBurn %gpus_per_node=1',
        'NcclSendRecv %num_nodes=1 %ppn=1 %interconnect=shm '
        '%gpus_per_node=1']
    # one environment each: the GPU programs need no MPI here
    assert all(line.endswith("['openmpi']") or line.endswith("['mpich']")
               or line.endswith("['intelmpi']")
               for line in res.stdout.splitlines())
