"""The three sweep axes every check shares: node count, processes per node
and interconnect.

A partition describes what it can run in its ReFrame ``extras``::

    'extras': {
        'sweep': {'nodes': [1, 2, 4], 'ppn': [1, 2]},
        'interconnects': {
            'shm': {'scope': 'node', 'env': {'openmpi': {...}, 'intelmpi': {...}}},
            'fab0': {'scope': 'network', 'env': {'openmpi': {...}}},
        },
        'cores_per_node': 2,
        'memory_per_node_gib': 24,
    }

Checks never name systems; they ask this module which points of the sweep
(:class:`~clustergate.site.partition.SweepPoint`) a partition can run, and
why not when it cannot: the one place that decides it
(:func:`why_not`). Every function here reads
the parsed partition (:class:`~clustergate.site.partition.PartitionModel`,
from :func:`~clustergate.site.partition.partition_model`): the model validates
the sweep once, these functions only decide.
"""

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

#: Interconnect scopes: 'node' works only inside one node (shared memory),
#: 'network' crosses nodes (and is also used between ranks of one node).
from clustergate.site.partition import SCOPES, PartitionModel, SweepPoint  # noqa: F401


@dataclass(frozen=True)
class Requirements:
    """What a check needs from a sweep point (all optional)."""

    min_ranks: int = 1
    max_ranks: Optional[int] = None
    min_nodes: int = 1
    max_nodes: Optional[int] = None
    min_ppn: int = 1
    max_ppn: Optional[int] = None
    #: 'pow2' or 'square' process counts (NPB kernels)
    ranks_shape: Optional[str] = None
    #: names of MPI families the check can drive (None: any)
    mpi_families: Optional[Tuple[str, ...]] = None
    #: only the partition's largest node count (a test of the whole
    #: partition, e.g. the link matrix)
    all_nodes: bool = False
    #: only the partition's largest ppn (a test of the whole node: the
    #: node programs' job at full ppn measures one active rank too)
    full_node: bool = False


def describe(model: PartitionModel) -> Dict:
    """The partition's sweep, normalised: sorted ``nodes`` and ``ppn``,
    and ``interconnects`` (name -> settings); raises ExtrasError
    naming what is wrong or missing."""
    return {'nodes': list(model.sweep.nodes), 'ppn': list(model.sweep.ppn),
            'interconnects': model.interconnect_settings()}


def _is_pow2(n):
    return n > 0 and (n & (n - 1)) == 0


def _is_square(n):
    r = int(round(n ** 0.5))
    return r * r == n


def single_rank_interconnect(interconnects: Mapping,
                             mpi_family: Optional[str] = None) -> str:
    """The one interconnect a single-rank point (1 node x 1 ppn) runs over.

    One rank sends no message, so its job does the same work over every
    interconnect (a nightly NPB run on localhost spent 709 of 2081 s on
    such duplicates). It runs once, over the partition's first declared
    interconnect that has settings for ``mpi_family``: the site's order,
    not a node-local one, because a site's mode subsets name its fabrics
    (emucluster's ci and nightly keep fab0 and fab1, not shm) and a
    node-local choice would drop the point from them; on localhost the
    first is shm, which every MPI family has.
    """
    for name, ic in interconnects.items():
        if mpi_family is None or mpi_family in ic['env']:
            return name

    return next(iter(interconnects))


# long: one early return per rule, in the order the reasons are worth
# reading; split, each rule would need the same six arguments
def why_not(model: PartitionModel, point: SweepPoint,
            req: Requirements = Requirements(),
            mpi_family: Optional[str] = None) -> Optional[str]:
    """Return why ``point`` cannot run on this partition, or ``None``."""
    partition = model.name
    if not model.declares_sweep:
        return f'partition {partition!r} declares no sweep'

    desc = describe(model)
    if point.nodes not in desc['nodes']:
        return (f'{point.nodes} node(s) not offered by partition '
                f'{partition!r} (nodes: {desc["nodes"]})')

    if point.ppn not in desc['ppn']:
        return (f'ppn={point.ppn} not offered by partition {partition!r} '
                f'(ppn: {desc["ppn"]})')

    ic = desc['interconnects'].get(point.interconnect)
    if ic is None:
        return (f'interconnect {point.interconnect!r} not available on '
                f'partition {partition!r} '
                f'(available: {sorted(desc["interconnects"])})')

    if ic['scope'] == 'node' and point.nodes > 1:
        return (f'interconnect {point.interconnect!r} is node-local and '
                f'cannot join {point.nodes} nodes')

    if mpi_family is not None and mpi_family not in ic['env']:
        return (f'interconnect {point.interconnect!r} has no settings for '
                f'MPI family {mpi_family!r}')

    if req.mpi_families and mpi_family not in req.mpi_families:
        return (f'MPI family {mpi_family!r} not supported by this check '
                f'(needs one of {list(req.mpi_families)})')

    if point.ranks < req.min_ranks:
        return f'needs at least {req.min_ranks} ranks, point has {point.ranks}'

    if req.max_ranks is not None and point.ranks > req.max_ranks:
        return f'needs at most {req.max_ranks} ranks, point has {point.ranks}'

    if point.nodes < req.min_nodes:
        return f'needs at least {req.min_nodes} nodes, point has {point.nodes}'

    if req.max_nodes is not None and point.nodes > req.max_nodes:
        return f'needs at most {req.max_nodes} nodes, point has {point.nodes}'

    if point.ppn < req.min_ppn:
        return f'needs at least {req.min_ppn} ppn, point has {point.ppn}'

    if req.max_ppn is not None and point.ppn > req.max_ppn:
        return f'needs at most {req.max_ppn} ppn, point has {point.ppn}'

    if req.all_nodes and point.nodes != max(desc['nodes']):
        return (f'runs on all {max(desc["nodes"])} nodes of partition '
                f'{partition!r}, point has {point.nodes}')

    if req.full_node and point.ppn != max(desc['ppn']):
        return (f'runs on the full node ({max(desc["ppn"])} ppn) of '
                f'partition {partition!r}, point has {point.ppn}')

    if req.ranks_shape == 'pow2' and not _is_pow2(point.ranks):
        return f'{point.ranks} ranks is not a power of two'

    if req.ranks_shape == 'square' and not _is_square(point.ranks):
        return f'{point.ranks} ranks is not a square number'

    # last: a check's own needs are the better reason
    if point.ranks == 1:
        single = single_rank_interconnect(desc['interconnects'], mpi_family)
        if point.interconnect != single:
            return (f'a single rank sends nothing: its point runs over '
                    f'{single!r} only (identical work on every '
                    f'interconnect)')

    return None


def points(model: PartitionModel, req: Requirements = Requirements(),
           mpi_family: Optional[str] = None
           ) -> List[Tuple[SweepPoint, Optional[str]]]:
    """Every point of the partition's own axes with its skip reason."""
    desc = describe(model)
    out = []
    for ic in desc['interconnects']:
        for n in desc['nodes']:
            for p in desc['ppn']:
                pt = SweepPoint(n, p, ic)
                out.append((pt, why_not(model, pt, req, mpi_family)))

    return out


def format_points(rows: Sequence[Tuple[SweepPoint, Optional[str]]]) -> str:
    """A human table of sweep points, used by ``clustergate sweep``."""
    lines = [f'{"nodes":>5} {"ppn":>4} {"interconnect":<14} verdict']
    for pt, reason in rows:
        lines.append(f'{pt.nodes:>5} {pt.ppn:>4} {pt.interconnect:<14} '
                     f'{"run" if reason is None else "skip: " + reason}')

    return '\n'.join(lines)
