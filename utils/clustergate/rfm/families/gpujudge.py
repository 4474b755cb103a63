"""Verdicts that name the GPU: which GPU of a job, by index and UUID, is
busy with another process, or slow against its peers in the node.

Pure Python (no ReFrame import): the GPU checks (:mod:`clustergate.rfm.families.gpu`)
call these from their sanity, the unit tests on recorded text.

What a GPU job records beside its output (``nvidia-smi`` in the job):

* ``cg-gpus.csv``: ``--query-gpu=index,uuid,name,pci.bus_id`` (every GPU
  the job can see);
* ``cg-gpu-map.txt``: ``<job GPU> <physical index>`` lines, the GPU each
  process of the job was given (``CUDA_VISIBLE_DEVICES``);
* ``cg-gpu-apps.before.csv`` / ``.after.csv``:
  ``--query-compute-apps=gpu_uuid,pid,process_name,used_memory`` before the
  benchmark started and after it ended. A process listed there is not the
  benchmark's: on a shared node it takes the GPU's memory bandwidth and
  compute, and every figure of that GPU is a measure of the sharing.
"""

import statistics
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional

#: A GPU below this fraction of the median of its peers in the node is
#: slow. Five repeats of BabelStream Triad on one H200 spread over 0.14 %
#: and host-to-device copies over well under 1 %: 10 % is far outside the
#: noise, and a host link at half its width (0.5x) or a GPU shared with a
#: second stress process (~0.5x) are far below it.
PEER_FRACTION = 0.9


@dataclass
class GpuId:
    """One GPU as ``nvidia-smi`` names it."""

    index: int
    uuid: str = ''
    name: str = ''
    bus_id: str = ''

    def words(self) -> str:
        extra = ', '.join(x for x in (self.uuid, self.name) if x)
        return f'GPU {self.index}' + (f' ({extra})' if extra else '')


def parse_gpu_query(text: str) -> Dict[int, GpuId]:
    """``nvidia-smi --query-gpu=index,uuid,name,pci.bus_id
    --format=csv,noheader``: ``{index: GpuId}``."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(',')]
        if cells and cells[0].isdigit():
            cells += [''] * (4 - len(cells))
            out[int(cells[0])] = GpuId(int(cells[0]), cells[1], cells[2],
                                       cells[3])
    return out


def parse_gpu_map(text: str) -> Dict[int, int]:
    """``cg-gpu-map.txt``: ``{job GPU: physical index}``."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            out[int(parts[0])] = int(parts[1])
    return out


@dataclass
class GpuApp:
    """A compute process ``nvidia-smi`` lists on a GPU."""

    gpu_uuid: str
    pid: int
    name: str
    memory: str = ''


def parse_compute_apps(text: str) -> List[GpuApp]:
    """``nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,
    used_memory --format=csv,noheader`` (empty when none runs)."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(',')]
        if len(cells) >= 3 and cells[1].isdigit():
            out.append(GpuApp(cells[0], int(cells[1]), cells[2],
                              cells[3] if len(cells) > 3 else ''))
    return out


def job_gpus(query: Mapping[int, GpuId], gpu_map: Mapping[int, int],
             count: int) -> Dict[int, GpuId]:
    """``{job GPU: GpuId}`` of the ``count`` GPUs of a job (job GPU i is
    physical GPU ``gpu_map[i]``, else i)."""
    out = {}
    for i in range(count):
        phys = gpu_map.get(i, i)
        out[i] = query.get(phys, GpuId(phys))
    return out


def busy_reason(gpus: Mapping[int, GpuId], before: List[GpuApp],
                after: List[GpuApp]) -> Optional[str]:
    """Why the job's figures are not its GPUs' own: another process
    on one of them before or after the benchmark (one line), or None."""
    by_uuid = {g.uuid: g for g in gpus.values() if g.uuid}
    found = []
    for when, apps in (('before', before), ('after', after)):
        for app in apps:
            gpu = by_uuid.get(app.gpu_uuid)
            if gpu is not None:
                mem = f', {app.memory}' if app.memory else ''
                found.append((gpu, f'pid {app.pid} {app.name}{mem} '
                                   f'{when} the run'))
    if not found:
        return None
    gpu = found[0][0]
    whats = '; '.join(w for g, w in found if g is gpu)
    more = len({g.index for g, _ in found}) - 1
    tail = f' (and {more} more GPU(s) of the job)' if more else ''
    return (f'{gpu.words()} is busy: another process runs on it '
            f'({whats}){tail}; its figures measure the sharing, not the GPU')


def slow_peers(values: Mapping[int, float], what: str, unit: str,
               gpus: Mapping[int, GpuId], cause: str = '',
               fraction: float = PEER_FRACTION) -> List[str]:
    """One line per GPU whose ``values[gpu]`` (higher is better) is below
    ``fraction`` of the median of the other GPUs of the job: the GPU
    (index, UUID), what was measured and against what. Fewer than 2
    GPUs: nothing to compare."""
    lines = []
    if len(values) < 2:
        return lines
    for i, v in sorted(values.items()):
        peers = [x for j, x in values.items() if j != i]
        med = statistics.median(peers)
        if med > 0 and v < fraction * med:
            gpu = gpus.get(i, GpuId(i))
            lines.append(
                f'{gpu.words()}: {what} {v:.4g} {unit}, {v / med:.2f}x the '
                f'median {med:.4g} {unit} of its {len(peers)} peer(s) in '
                f'the node (below {fraction:.2f}x)' +
                (f': {cause}' if cause else ''))
    return lines
