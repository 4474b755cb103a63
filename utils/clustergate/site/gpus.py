"""The GPUs of a partition: what it declares, how a job asks for them, and
what a node's tools say about them.

A partition declares its GPUs the ReFrame way, in ``devices``, and its
launch settings and per-GPU affinity in ``extras['gpus']``::

    'devices': [{'type': 'gpu', 'arch': 'sm_90', 'model': 'NVIDIA H200',
                 'num_devices': 4}],
    'extras': {
        'gpus': {
            'request': 'gres',          # or 'gpus-per-node' (the default)
            'gres': 'gpu:h200',         # Slurm's GRES name (with 'gres')
            'numa_nodes': [0, 0, 1, 1], # NUMA node of GPU i
            'nics': ['mlx5_0', 'mlx5_0', 'mlx5_1', 'mlx5_1'],  # nearest NIC
        },
        ...
    }

A job of ``g`` GPUs per node asks Slurm for them (``--gpus-per-node=g``
or ``--gres=gpu:h200:g``); on a partition without Slurm (``local``) the
job's ``CUDA_VISIBLE_DEVICES`` names GPUs ``0..g-1``. A process that
drives one GPU of several gets its own ``CUDA_VISIBLE_DEVICES``
(:func:`per_gpu_command`). A partition without a ``gpu`` device runs no
GPU test case.

The probe parsers (:func:`gres_gpus`, :func:`nvidia_smi_list`,
:func:`nvidia_smi_topology`) read what Slurm and ``nvidia-smi`` print;
:func:`local_gpus` asks this machine once (cached) for the embedded
``localhost`` system. Pure Python, no ReFrame import.
"""

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

from clustergate.site import environment as cgenv
from clustergate.site.errors import ExtrasError

#: the partition's ``extras`` key
GPUS = 'gpus'
#: keys of ``extras['gpus']``
GPU_REQUEST = 'request'
GPU_GRES = 'gres'
GPU_NUMA_NODES = 'numa_nodes'
GPU_NICS = 'nics'
GPU_KEYS = (GPU_REQUEST, GPU_GRES, GPU_NUMA_NODES, GPU_NICS)
#: how a Slurm job asks for its GPUs
REQUEST_GPUS_PER_NODE = 'gpus-per-node'
REQUEST_GRES = 'gres'
REQUESTS = (REQUEST_GPUS_PER_NODE, REQUEST_GRES)
#: ReFrame's device type of a GPU, and the keys of a device entry
DEVICE_TYPE = 'gpu'
DEVICE_KEYS = ('type', 'arch', 'model', 'num_devices')

#: the compute architecture of the GPU models ``nvidia-smi`` and Slurm
#: name (the GRES type is lower case: ``gpu:h200:4``)
ARCHS = {
    'gh200': 'sm_90', 'h200': 'sm_90', 'h100': 'sm_90', 'h800': 'sm_90',
    'b200': 'sm_100', 'gb200': 'sm_100', 'a100': 'sm_80', 'a800': 'sm_80',
    'a40': 'sm_86', 'a30': 'sm_80', 'a10': 'sm_86', 'l40s': 'sm_89',
    'l40': 'sm_89', 'l4': 'sm_89', 'v100': 'sm_70',
    'mi300x': 'gfx942', 'mi300a': 'gfx942', 'mi250x': 'gfx90a',
    'mi250': 'gfx90a', 'mi210': 'gfx90a', 'mi100': 'gfx908',
}


@dataclass(frozen=True)
class GpuSpec:
    """The GPUs of one node of a partition."""

    count: int
    arch: str = ''
    model: str = ''
    request: str = REQUEST_GPUS_PER_NODE
    gres: str = 'gpu'
    numa_nodes: Tuple[Optional[int], ...] = ()
    nics: Tuple[Optional[str], ...] = ()

    def slurm_options(self, gpus: int) -> List[str]:
        """The job options that ask Slurm for ``gpus`` GPUs per node."""
        if self.request == REQUEST_GRES:
            return [f'--gres={self.gres}:{gpus}']
        return [f'--gpus-per-node={gpus}']

    def describe(self) -> str:
        what = f'{self.count} x {self.model or self.arch or "GPU"}'
        return what + (f' ({self.arch})' if self.model and self.arch
                       else '')


def arch_of(model: str) -> str:
    """The architecture of a GPU model name (``NVIDIA H200``, ``h200``,
    ``NVIDIA H100 80GB HBM3``), or ''."""
    words = re.split(r'[\s_-]+', model.lower())
    for word in words:
        if word in ARCHS:
            return ARCHS[word]
    return ''


def _devices(part) -> List[Mapping]:
    """The device entries of a partition: a configuration dictionary or a
    ReFrame partition object (its DeviceInfo objects)."""
    if isinstance(part, Mapping):
        return list(part.get('devices') or [])
    out = []
    for dev in getattr(part, 'devices', None) or []:
        info = getattr(dev, 'info', None) or {}
        out.append({'type': getattr(dev, 'device_type', info.get('type')),
                    **info})
    return out


def _extras(part) -> Mapping:
    extras = part.get('extras') if isinstance(part, Mapping) else \
        getattr(part, 'extras', None)
    return (extras or {}).get(GPUS) or {}


def of_partition(part) -> Optional[GpuSpec]:
    """The GPUs of a partition (a configuration dictionary or a ReFrame
    partition), or None when it declares none."""
    gpus = [d for d in _devices(part) if d.get('type') == DEVICE_TYPE]
    if not gpus:
        return None
    dev, extras = gpus[0], _extras(part)
    return GpuSpec(
        count=int(dev.get('num_devices', 1)), arch=dev.get('arch', ''),
        model=dev.get('model', ''),
        request=extras.get(GPU_REQUEST, REQUEST_GPUS_PER_NODE),
        gres=extras.get(GPU_GRES, 'gpu'),
        numa_nodes=tuple(extras.get(GPU_NUMA_NODES, ())),
        nics=tuple(extras.get(GPU_NICS, ())))


def check_partition(part: Mapping, system: str = '?'):
    """Validate the GPU declaration of one partition (its ``devices`` and
    ``extras['gpus']``); raises :class:`ExtrasError` naming the key."""
    where = f'partition {system}:{part.get("name", "?")}'
    devices = part.get('devices') or []
    gpus = [d for d in devices if isinstance(d, Mapping) and
            d.get('type') == DEVICE_TYPE]
    for i, dev in enumerate(gpus):
        bad = sorted(set(dev) - set(DEVICE_KEYS))
        if bad:
            raise ExtrasError(f'{where}: devices: gpu entry: {bad[0]}: '
                              f'unknown key (known: {", ".join(DEVICE_KEYS)})')
        n = dev.get('num_devices')
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ExtrasError(f'{where}: devices: gpu entry: num_devices '
                              f'must be the GPUs of one node (an integer '
                              f'>= 1), got {n!r}')
    if len(gpus) > 1:
        raise ExtrasError(f'{where}: devices: {len(gpus)} gpu entries; one '
                          f'GPU model per partition (split the nodes into '
                          f'partitions)')

    extras = (part.get('extras') or {}).get(GPUS)
    if extras is None:
        return
    if not gpus:
        raise ExtrasError(f'{where}: extras.{GPUS} without a gpu device '
                          f"(devices: [{{'type': 'gpu', 'num_devices': N}}])")
    if not isinstance(extras, Mapping):
        raise ExtrasError(f'{where}: extras.{GPUS}: must be a mapping')
    bad = sorted(set(extras) - set(GPU_KEYS))
    if bad:
        raise ExtrasError(f'{where}: extras.{GPUS}.{bad[0]}: unknown key '
                          f'(known: {", ".join(sorted(GPU_KEYS))})')
    req = extras.get(GPU_REQUEST, REQUEST_GPUS_PER_NODE)
    if req not in REQUESTS:
        raise ExtrasError(f'{where}: extras.{GPUS}.{GPU_REQUEST}: {req!r} '
                          f'is not one of {", ".join(REQUESTS)}')
    count = gpus[0]['num_devices']
    for key in (GPU_NUMA_NODES, GPU_NICS):
        vals = extras.get(key)
        if vals is not None and (not isinstance(vals, (list, tuple)) or
                                 len(vals) != count):
            raise ExtrasError(f'{where}: extras.{GPUS}.{key}: must list one '
                              f'value per GPU ({count}), got {vals!r}')


def visible_devices(gpus: int) -> str:
    """``CUDA_VISIBLE_DEVICES`` of a job on ``gpus`` GPUs of a node
    without Slurm: ``0,1,...``."""
    return ','.join(str(i) for i in range(gpus))


def per_gpu_command(command: str, gpus: int, out: str) -> List[str]:
    """Shell lines that run ``command`` once per GPU, all at once, each
    process seeing only the job's GPU i (the i-th of the job's
    ``CUDA_VISIBLE_DEVICES``, else i) and writing ``out.i``; then wait for
    all (each exit status is kept in ``out.i.rc``)."""
    lines = ['_cg_gpus=(${CUDA_VISIBLE_DEVICES//,/ })']
    for i in range(gpus):
        lines.append(f'( CUDA_VISIBLE_DEVICES=${{_cg_gpus[{i}]:-{i}}} '
                     f'{command} > {out}.{i} 2>&1; echo $? > {out}.{i}.rc ) &')
    lines.append('wait')
    return lines


# -- probes ----------------------------------------------------------------

_GRES_RE = re.compile(r'^gpu(?::([\w.-]+))?:(\d+)(?:\(|$)')


def gres_gpus(gres: List[str]) -> Optional[Tuple[str, int]]:
    """``(type, count)`` of the GPUs in a node's Slurm GRES list
    (``['gpu:h200:4']`` -> ``('h200', 4)``; an untyped ``gpu:4`` gives
    type ''); None without GPUs."""
    for g in gres:
        m = _GRES_RE.match(g.strip())
        if m:
            return m.group(1) or '', int(m.group(2))
    return None


_LIST_RE = re.compile(r'^GPU (\d+): (.+?) \(UUID: (\S+?)\)\s*$', re.M)


def nvidia_smi_list(text: str) -> List[Dict[str, object]]:
    """``nvidia-smi -L``: ``[{'index':, 'model':, 'uuid':}]``."""
    return [{'index': int(m.group(1)), 'model': m.group(2),
             'uuid': m.group(3)} for m in _LIST_RE.finditer(text)]


_ANSI_RE = re.compile(r'\x1b\[[0-9;]*m')
#: the connection kinds of ``topo -m``, nearest first
_NEARNESS = ('PIX', 'PXB', 'PHB', 'NODE', 'SYS')


def nvidia_smi_topology(text: str) -> Dict[int, Dict[str, object]]:
    """``nvidia-smi topo -m``: per GPU index its ``numa_node`` (None:
    N/A) and nearest ``nic`` (its device name from the NIC legend, or
    None when the node has no NIC or every NIC is across the CPUs:
    ``SYS``)."""
    lines = [_ANSI_RE.sub('', ln) for ln in text.splitlines()]
    header = next((ln for ln in lines if re.match(r'^\s+GPU0\b', ln)), None)
    if header is None:
        return {}
    cols = [c.strip() for c in header.strip().split('\t') if c.strip()]
    legend = dict(re.findall(r'^\s*(NIC\d+):\s*(\S+)', '\n'.join(lines),
                             re.M))
    out = {}
    for ln in lines:
        m = re.match(r'^GPU(\d+)\t', ln)
        if not m:
            continue
        cells = [c.strip() for c in ln.split('\t')[1:]]
        row = dict(zip(cols, cells))
        numa = row.get('NUMA Affinity', 'N/A')
        nics = [(c, row[c]) for c in cols if c.startswith('NIC') and
                row.get(c) in _NEARNESS[:-1]]
        nics.sort(key=lambda kv: _NEARNESS.index(kv[1]))
        out[int(m.group(1))] = {
            'numa_node': int(numa) if numa.isdigit() else None,
            'nic': legend.get(nics[0][0], nics[0][0]) if nics else None,
            'cpus': row.get('CPU Affinity', ''),
        }
    return out


def describe_node(gres: List[str], listing: str = '',
                  topology: str = '') -> Optional[Dict[str, object]]:
    """What ``site init`` writes of a GPU partition: its Slurm GRES and,
    where the probes of one node answered, the model, count and each
    GPU's NUMA node and nearest NIC; None without GPUs."""
    got = gres_gpus(gres)
    listed = nvidia_smi_list(listing)
    if got is None and not listed:
        return None
    kind, count = got if got else ('', len(listed))
    model = listed[0]['model'] if listed else kind.upper()
    notes = []
    if listed and got and len(listed) != count:
        notes.append(f'nvidia-smi -L lists {len(listed)} GPUs, the GRES '
                     f'{count}: the GRES is what a job gets')
    topo = nvidia_smi_topology(topology)
    return {
        'count': count, 'model': model,
        'arch': arch_of(model) or arch_of(kind),
        'gres': f'gpu:{kind}' if kind else 'gpu',
        'numa_nodes': [topo.get(i, {}).get('numa_node') for i in
                       range(count)] if topo else None,
        'nics': [topo.get(i, {}).get('nic') for i in range(count)]
        if topo else None,
        'notes': notes,
    }


# -- this machine (the embedded localhost) ---------------------------------

#: seconds ``nvidia-smi -L`` may take
PROBE_TIMEOUT = 20


def _cache_path():
    return cgenv.probe_cache(cgenv.GPU_PROBE_CACHE, 'gpu-probe')


def _stamp(which=shutil.which):
    smi = which('nvidia-smi')
    try:
        boot = open('/proc/sys/kernel/random/boot_id').read().strip()
    except OSError:
        boot = ''
    if smi is None:
        return None
    st = os.stat(smi)
    return [os.path.realpath(smi), st.st_mtime_ns, boot]


def local_gpus(which=shutil.which, run=subprocess.run,
               cache=True) -> List[Dict[str, object]]:
    """The GPUs of this machine as ``nvidia-smi -L`` lists them; [] without
    ``nvidia-smi`` or with ``CG_GPU_PROBE=0``. Asked once per boot and
    driver (cached beside the MPI probe's verdicts)."""
    if cgenv.get(cgenv.GPU_PROBE) == '0':
        return []
    stamp = _stamp(which)
    if stamp is None:
        return []
    path = _cache_path()
    if cache:
        try:
            with open(path) as fp:
                data = json.load(fp)
            if data.get('stamp') == stamp:
                return data['gpus']
        except (OSError, ValueError, KeyError, AttributeError):
            pass
    try:
        res = run([stamp[0], '-L'], capture_output=True, text=True,
                  timeout=PROBE_TIMEOUT)
        gpus = nvidia_smi_list(res.stdout) if res.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired):
        gpus = []
    if cache:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + '.tmp', 'w') as fp:
                json.dump({'stamp': stamp, 'gpus': gpus}, fp)
            os.replace(path + '.tmp', path)
        except OSError:
            pass
    return gpus


def local_devices(gpus: List[Mapping]) -> List[Dict[str, object]]:
    """ReFrame ``devices`` of this machine's GPUs (empty without)."""
    if not gpus:
        return []
    model = str(gpus[0]['model'])
    dev = {'type': DEVICE_TYPE, 'model': model, 'num_devices': len(gpus)}
    if arch_of(model):
        dev['arch'] = arch_of(model)
    return [dev]
