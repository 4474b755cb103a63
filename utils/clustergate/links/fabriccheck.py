"""Which link matrix is a partition's fabric check, without ReFrame: the
whole-partition matrix in the nightly (:func:`nightly_tags`), and in the
ci mode on a declared switch tree the matrix on its span, 2 nodes of every
leaf (:func:`partition_span`, :func:`span_reason`). The ReFrame tests are
:class:`clustergate.rfm.families.linkmatrix.LinkMatrixTest` and
:class:`~clustergate.rfm.families.linkmatrix.LeafSpanLinkMatrixTest`."""

from clustergate.links import topology
from clustergate.links.matrixjob import declared_topology
from clustergate.links.topology import span
from clustergate.site import sweep
from clustergate.site.partition import Subset, partition_model

#: (partition name, its topology extra) -> its span's nodes, or the
#: TopologyError that stopped the tree being read; filled when a span
#: class is created
SPANS = {}


def nightly_fabric(model, interconnect):
    """Whether the nightly subset of a partition's sweep keeps
    ``interconnect`` (a partition without a subset keeps every one)."""
    if not model.declares_sweep:
        return False
    sub = model.sweep.subset('nightly')
    return sub is None or sub.interconnects is None or \
        interconnect in sub.interconnects


def nightly_tags(tags, mode_selection, interconnect, num_nodes, parts):
    """The tags of the whole-partition matrix of ``num_nodes`` nodes over
    ``interconnect`` on the partitions ``parts`` (``[(partition, its
    model)]``): the nightly's fabric check whatever the nightly subset's
    node counts (the subset's fabrics still apply), but acceptance only
    where, on a declared tree, it has fewer nodes than the tree's span (2
    of every leaf: it sees a switch at most)."""
    if 'acceptance' in tags and 'nightly' in mode_selection \
            and any(nightly_fabric(m, interconnect) for _, m in parts):
        tags = set(tags) | {'nightly'}
    spans = [partition_span(p.name, m) for p, m in parts]
    if spans and all(isinstance(n, list) and num_nodes < len(n)
                     for n in spans):
        tags = set(tags) - {'nightly'}
    return tags


def partition_span(name, part_extras):
    """The nodes of the ci span of the partition ``name`` whose extras are
    ``part_extras`` (:func:`clustergate.links.topology.span.span_nodes` of its
    declared tree), None when it declares none; a tree that cannot be read
    gives its TopologyError (the test case then fails saying so). Read
    once per process."""
    model = partition_model(part_extras, name)
    if model.topology is None or not model.declares_sweep:
        return None

    key = (name, repr(model.topology))
    if key not in SPANS:
        try:
            SPANS[key] = span.span_nodes(declared_topology(
                model.topology.spec))
        except topology.TopologyError as err:
            SPANS[key] = err

    return SPANS[key]


def span_size(part_extras, nodes):
    """Node count of a span (a tree that could not be read: the whole
    partition, so that the case exists and fails naming the cause)."""
    if isinstance(nodes, list):
        return len(nodes)

    return max(partition_model(part_extras).sweep.nodes)


def spans_of(num_nodes):
    """The spans read so far that have ``num_nodes`` nodes."""
    return [n for n in SPANS.values()
            if isinstance(n, list) and len(n) == num_nodes]


def span_reason(partition, nodes, num_nodes, ppn, interconnect,
                requirements, mpi_family):
    """Why the span matrix of ``num_nodes`` nodes over ``interconnect``
    does not run on ``partition`` whose span is ``nodes`` (None: it
    declares no tree), or None: it runs."""
    if nodes is None:
        return (f'partition {partition.fullname!r} declares no switch '
                f'tree: its fabric check is the whole-partition matrix')

    model = partition_model(partition)
    size = span_size(model, nodes)
    if num_nodes != size:
        return (f'the span of partition {partition.fullname!r} is '
                f'{size} nodes')

    # the declared tree is the fabric's (scontrol show topology names
    # every node), not the partition's: a 2-node partition under a
    # 4-leaf tree cannot hold its 8-node span, and such a job would
    # pend for ever
    whole = max(model.sweep.nodes)
    if size > whole:
        return (f'the span of the declared tree is {size} nodes, '
                f'partition {partition.fullname!r} has {whole}')

    ci = model.sweep.subset('ci') or Subset()
    if ci.interconnects is not None and \
            interconnect not in ci.interconnects:
        return (f'interconnect {interconnect!r} is not in the ci '
                f'subset of partition {partition.fullname!r}')

    if not model.topology.describes(interconnect):
        return f'the declared tree does not describe {interconnect}'

    return sweep.why_not(model, sweep.SweepPoint(
        whole, ppn, interconnect), requirements, mpi_family=mpi_family)
