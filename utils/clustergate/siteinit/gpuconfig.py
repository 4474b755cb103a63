"""The GPU part of what ``clustergate site init`` writes: a GPU
partition's ``devices`` and ``extras['gpus']`` (from Slurm's GRES and the
probes of one node, each value commented with its source), and the Spack
environment of the GPU benchmarks (``spack-env/<system>-gpu``: built for
the GPU's arch, apart from the CPU benchmarks because OSU is built twice,
with and without ``+cuda``).
"""

from typing import List, Optional

from clustergate.site import gpus
from clustergate.siteinit import spackenv

#: the Spack specs of the GPU benchmarks; {variant}: +cuda or +rocm,
#: {arch}: cuda_arch=90 or amdgpu_target=gfx942
GPU_SPECS = [
    '  - babelstream {variant} {arch}',
    '  - nvbandwidth {arch}',
    '  - nccl-tests +mpi {arch}',
    '  - gpu-burn {arch}',
    '  - osu-micro-benchmarks@7.5.1 {variant} {arch}',
]


def spack_env_name(system: str) -> str:
    return f'{system}-gpu'


def _arch_variant(arch: str):
    if arch.startswith('sm_'):
        return '+cuda', f'cuda_arch={arch[3:]}'
    if arch.startswith('gfx'):
        return '+rocm', f'amdgpu_target={arch}'
    return '+cuda', ''


def ppn_values(ppn: List[int], gpus_desc: Optional[dict]) -> List[int]:
    """The sweep's ppn with 1..G added (across nodes nccl-tests runs one
    rank per GPU)."""
    if not gpus_desc:
        return ppn
    return sorted(set(ppn) | set(range(1, gpus_desc['count'] + 1)))


#: the line a system module with GPU partitions needs for their sources
HERE_LINE = '_HERE = os.path.dirname(os.path.abspath(__file__))'


def partition_lines(part: dict, system: str, pad: str) -> List[str]:
    """``'devices': [...]`` of a partition (none without GPUs)."""
    g = part.get('gpus')
    if not g:
        return []
    src = (f"srun -p {part['slurm_name']} nvidia-smi -L"
           if g['probed'] else 'no nvidia-smi -L answer: from the GRES')
    dev = {'type': gpus.DEVICE_TYPE, 'model': g['model'],
           'num_devices': g['count']}
    if g['arch']:
        dev['arch'] = g['arch']
    lines = [f"{pad}    # GPUs: Slurm GRES {g['slurm_gres']}; model: {src}"]
    lines += [f'{pad}    # {n}' for n in g['notes']]
    if not g['arch']:
        lines.append(f"{pad}    # arch unknown for {g['model']!r}: add "
                     f"'arch' (e.g. 'sm_90')")
    lines.append(f"{pad}    'devices': [{dev!r}],")
    return lines


def extras_lines(part: dict, system: str, pad: str) -> List[str]:
    """``'gpus': {...}`` for the partition's extras (none without
    GPUs); their benchmarks: :func:`benchmark_lines`."""
    g = part.get('gpus')
    if not g:
        return []
    ext = {gpus.GPU_REQUEST: gpus.REQUEST_GRES, gpus.GPU_GRES: g['gres']}
    lines = [f"{pad}        # jobs ask for GPUs as the GRES names them "
             f"(--gres={g['gres']}:N)"]
    if g['numa_nodes'] is not None:
        lines.append(f"{pad}        # NUMA node and nearest NIC of each "
                     f"GPU: srun -p {part['slurm_name']} nvidia-smi topo -m")
        ext[gpus.GPU_NUMA_NODES] = g['numa_nodes']
        ext[gpus.GPU_NICS] = g['nics']
    else:
        lines.append(f'{pad}        # no nvidia-smi topo -m answer: NUMA '
                     f'nodes and NICs of the GPUs unknown')
    lines.append(f"{pad}        'gpus': {ext!r},")
    return lines


def benchmark_lines(part: dict, system: str, pad: str) -> List[str]:
    """The GPU benchmarks' sources, inside the partition's
    ``'benchmarks'`` mapping (none without GPUs)."""
    g = part.get('gpus')
    if not g:
        return []
    env = spack_env_name(system)
    lines = [f'{pad}# GPU benchmarks from spack-env/{env} '
             f'(built for {g["arch"] or "the GPU"})']
    for fam in ('babelstream', 'nvbandwidth', 'nccl', 'gpuburn', 'osu_gpu'):
        lines.append(f"{pad}{fam!r}: {{'source': 'spack', "
                     f"'spack_env': os.path.join(_HERE, '..', '..', "
                     f"'spack-env', {env!r})}},")
    return lines


def spack_env(desc) -> Optional[str]:
    """``spack-env/<system>-gpu/spack.yaml``, or None without GPUs."""
    archs = sorted({p['gpus']['arch'] for p in desc['partitions']
                    if p.get('gpus')})
    if not archs:
        return None
    specs = []
    for arch in archs:
        variant, av = _arch_variant(arch)
        specs += [s.format(variant=variant, arch=av).rstrip()
                  for s in GPU_SPECS]
    # the CPU environment's text (the site's MPIs as externals), the GPU
    # benchmarks as its specs
    text = spackenv.spack_env(desc).replace(
        '\n'.join(spackenv.SPACK_SPECS), '\n'.join(specs))
    head = (f'# clustergate GPU benchmarks for system {desc["name"]} '
            f'(clustergate site init), built for '
            f'{", ".join(a or "?" for a in archs)}')
    return head + '\n' + text.split('\n', 1)[1]
