"""Which NUMA node the host side of a GPU's copies is bound to: the GPU's
own (``near``) or another one of the node (``far``), from the NUMA node
of each GPU the partition declares (``extras['gpus']['numa_nodes']``,
:mod:`clustergate.site.gpus`; ``site init`` writes it from
``nvidia-smi topo -m``).

A host buffer on the far NUMA node crosses the link between the sockets
on its way to the GPU: what a process placed by the OS on the wrong
socket gets. ``near`` is the GPU's own link alone.

A point is possible only where every GPU of the job has a declared NUMA
node and the node has two NUMA nodes or more: those its GPUs declare and
the partition's ``numa_domains_per_node`` (with one, the process is on
its GPU's node wherever the OS puts it: ``GpuHostLink`` measures that).
The job runs on every GPU of the node, so that the job's GPU ``i`` is
the node's GPU ``i`` whose NUMA node is declared (Slurm renumbers the
GPUs of a job that has a subset of them). Pure Python, no ReFrame
import.
"""

from typing import List, Optional, Sequence

#: the sides: the GPU's own NUMA node, another NUMA node of the node
NEAR, FAR = 'near', 'far'
SIDES = (NEAR, FAR)

#: the file the job writes numactl's path to (or why it has none)
NUMACTL_FILE = 'cg-numactl.txt'
_NO_NUMACTL = 'numactl: not found on'


def node_numa_nodes(numa_nodes: Sequence[Optional[int]],
                    numa_domains: int = 1) -> List[int]:
    """The NUMA nodes of a node, sorted: those its GPUs declare and
    ``0 .. numa_domains - 1`` (the partition's ``numa_domains_per_node``:
    a node of two sockets whose GPUs all sit on the first has a far node
    all the same)."""
    return sorted({n for n in numa_nodes if n is not None} |
                  set(range(numa_domains)))


def side_reason(spec, side: str, gpus: int, where: str,
                numa_domains: int = 1) -> Optional[str]:
    """Why ``gpus`` GPUs per node of a partition's ``spec``
    (:class:`clustergate.site.gpus.GpuSpec`) cannot be measured from
    ``side``, or None. ``where``: the partition's name for the line;
    ``numa_domains``: its ``numa_domains_per_node``."""
    if side not in SIDES:
        return f'host_numa={side!r}: not one of {", ".join(SIDES)}'
    if gpus != spec.count:
        return (f'host_numa binds the job\'s GPU i to the NUMA node of the '
                f'node\'s GPU i: it runs on every GPU of a node of '
                f'partition {where} ({spec.count}), not {gpus}')
    nodes = list(spec.numa_nodes)
    if len(nodes) != spec.count or any(n is None for n in nodes):
        return (f'partition {where} declares no NUMA node of each of its '
                f'GPUs (extras.gpus.numa_nodes: {nodes or "none"})')
    if len(node_numa_nodes(nodes, numa_domains)) < 2:
        # near is where the OS places the process anyway: GpuHostLink
        return (f'a node of partition {where} has one NUMA node ({nodes[0]}'
                f'): the host is always on its GPUs\' own node')
    return None


def bound_nodes(numa_nodes: Sequence[int], side: str,
                numa_domains: int = 1) -> List[int]:
    """The NUMA node each GPU's host process is bound to: its own
    (``near``), or (``far``) the next NUMA node of the node
    (:func:`node_numa_nodes`, in order, the last one's is the first), on
    a node of two sockets the other socket's."""
    if side == NEAR:
        return list(numa_nodes)
    nodes = node_numa_nodes(numa_nodes, numa_domains)
    if len(nodes) < 2:
        raise ValueError(f'no far NUMA node: the node has {nodes}')
    return [nodes[(nodes.index(n) + 1) % len(nodes)] for n in numa_nodes]


def bound_commands(command: str, nodes: Sequence[int],
                   out: str) -> List[str]:
    """Shell lines that run ``command`` once per GPU, one after the
    other (each GPU alone on its host link), GPU i seeing only the job's
    GPU i (the i-th of the job's ``CUDA_VISIBLE_DEVICES``, else i), its
    process and memory bound to ``nodes[i]`` with numactl; stdout in
    ``out.i``, stderr in ``out.i.err``, the exit status in ``out.i.rc``.
    Without numactl nothing runs and :data:`NUMACTL_FILE` says so."""
    lines = ['_cg_gpus=(${CUDA_VISIBLE_DEVICES//,/ })',
             f'{{ command -v numactl || echo "{_NO_NUMACTL} $(hostname)"; }}'
             f' > {NUMACTL_FILE}',
             'if command -v numactl >/dev/null; then']
    for i, node in enumerate(nodes):
        lines.append(f'  CUDA_VISIBLE_DEVICES=${{_cg_gpus[{i}]:-{i}}} '
                     f'numactl --cpunodebind={node} --membind={node} '
                     f'{command} > {out}.{i} 2> {out}.{i}.err; '
                     f'echo $? > {out}.{i}.rc')
    lines.append('fi')
    return lines


def numactl_reason(text: str) -> Optional[str]:
    """Why the job could not bind to a NUMA node (the text of
    :data:`NUMACTL_FILE`), or None."""
    first = text.strip().splitlines()[0] if text.strip() else ''
    if not first:
        return (f'the job wrote no {NUMACTL_FILE}: it did not reach the '
                f'NUMA-bound runs')
    if first.startswith(_NO_NUMACTL):
        return (f'{first}: host_numa binds each GPU\'s host process to a '
                f'NUMA node with numactl --cpunodebind --membind; '
                f'install numactl on the node')
    return None
