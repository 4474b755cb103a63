"""What ci, nightly and acceptance cost on a site: jobs, node-hours, wall.

The model (docs/reports/cost-model.md)::

    jobs(m)       = sum_p sum_f sum_{n in N(p,m)} |PPN(p,m)| |IC(p,m)| E(p) c(f)
    t(f, n)       = o + r(f) * (n / n0(f)) ** alpha(f)
    wall(m)       = sum over those jobs of t(f, n)        (one after the other)
    node_hours(m) = sum over those jobs of n * t(f, n) / 3600

with, for partition p and mode m: N the node counts, PPN the processes per
node, IC the interconnects, E the MPI environments; for family f: c the
cases per sweep point and environment (patterns x message sizes ...), r the
median run time of one case at n0 nodes, alpha how it grows with the node
count (0: flat, 1: linear as an all-to-all or an N-1-round link matrix);
o the fixed cost of one job (submit, schedule, launch, MPI start-up).

Concurrency: fabric checks never share a fabric, so a partition's jobs run
one after the other; ``parallel_partitions`` lets partitions with separate
fabrics run at once (wall = the longest partition instead of the sum).

Family figures can be taken from a measured session (``measured_families``:
a ReFrame JSON report, via :mod:`clustergate.results.timing`).
"""

import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

MODES = ('ci', 'nightly', 'acceptance')


@dataclass
class Family:
    """Cost figures of one family of checks."""

    name: str
    cases_per_point: float      # c: cases per sweep point and environment
    run_s: float                # r: median run time of one case at n0
    n0: int = 2                 # node count r was measured at
    alpha: float = 0.0          # growth with the node count
    min_nodes: int = 1          # points below this are not created
    max_nodes: Optional[int] = None   # e.g. node-level checks: 1
    #: network-bound: the node-link rate (MB/s) r was measured at, one
    #: rank per node (None: not bound by the network)
    link_mbs: Optional[float] = None
    #: the bytes through a node's link grow with its ranks (every rank
    #: sends its own share: all-to-all, hotspot, ping-pong pairs)
    per_rank: bool = False


@dataclass
class Partition:
    """One partition and its sweep per mode."""

    name: str
    nodes: int
    environments: int
    sweep: Dict[str, Dict[str, List]]   # mode -> nodes / ppn / interconnects
    families: List[str] = field(default_factory=list)
    #: GPUs of one node: a job holds its whole nodes (``--exclusive``),
    #: so every GPU of them for its whole time
    gpus_per_node: int = 0


@dataclass
class Site:
    overhead_s: float
    families: Dict[str, Family]
    partitions: List[Partition]
    parallel_partitions: bool = False


@dataclass
class Cost:
    jobs: int = 0
    wall_s: float = 0.0
    node_hours: float = 0.0
    #: node-hours x GPUs per node: what a GPU partition's gate costs
    gpu_hours: float = 0.0
    per_partition_wall: Dict[str, float] = field(default_factory=dict)


def job_time(site: Site, fam: Family, nodes: int) -> float:
    return site.overhead_s + fam.run_s * (nodes / fam.n0) ** fam.alpha


#: Defaults where nothing was measured (the nightly rotation's estimate of
#: a test case not yet in the results database): the per-job overhead and
#: the run time of one job per family. Measured on the emulated cluster
#: (docs/reports/cost-model.md, "Inputs measured here"): the overhead, contention,
#: hpcc and node; the other families were not measured there yet: rough
#: figures, replaced by the results database's after their first run.
#: A network-bound family names the node-link rate its figure was
#: measured at (``link_mbs``): on a slower link it takes longer
#: (:func:`link_scale`).
DEFAULT_OVERHEAD_S = 3.3
DEFAULT_RUN_S = 10.0
#: the emulated cluster's default node links: 1 Gbit/s
GBIT_MBS = 125.0
DEFAULT_FAMILIES = {
    f.name: f for f in (
        # PingPongDistance, 2 nodes x 1 rank at 1 Gbit/s (2026-11-22)
        Family('contention', 1, 5.8, n0=2, alpha=1.0, link_mbs=GBIT_MBS,
               per_rank=True),
        Family('hpcc', 1, 164.0, n0=1, alpha=0.5),
        Family('node', 1, 86.0, n0=1, alpha=0.0, max_nodes=1),
        Family('imb', 1, 20.0, n0=2, alpha=0.5, link_mbs=GBIT_MBS,
               per_rank=True),
        Family('osu', 1, 8.0, n0=2, alpha=0.5, link_mbs=GBIT_MBS,
               per_rank=True),
        Family('npb', 1, 15.0, n0=2, alpha=0.0),
        # one job of the 9-node emulated tree (250 Mbit/s links, 4 MB x 8
        # per pair, retest not triggered): 24-26 s (2026-11-23); N-1 rounds
        Family('linkmatrix', 1, 25.0, n0=9, alpha=1.0, link_mbs=31.25),
        Family('nic', 1, 10.0, n0=2, alpha=0.0, link_mbs=GBIT_MBS),
        # NetpipeSharedInterface, one node to two, on the 12-node emulated
        # site at 250 Mbit/s: about 110 s a case (2026-11-27); its streams
        # carry a fixed number of bytes each
        Family('netpipe', 1, 107.0, n0=3, alpha=0.0, link_mbs=31.25),
        Family('fidelity', 1, 10.0, n0=2, alpha=0.0, link_mbs=GBIT_MBS),
        Family('stream', 1, 5.0, n0=1, alpha=0.0),
        # one node: BabelStream 2^28 10 s, gpu-burn 30 s + ~20 s to stop,
        # on one H200 (2026-11-26); nccl-tests across nodes not measured
        Family('gpu', 1, 30.0, n0=1, alpha=0.0),
    )
}


#: Checks whose one job is not one case of their family: their own figures
#: where nothing was measured. ContentionSuite runs every contention
#: pattern at every size in one job: 4 nodes x 2 ranks on fab1 of the
#: 12-node emulated site (250 Mbit/s links, OpenMPI) ran 244 s where its
#: family's one-pattern figure planned 96 s (2026-12-02, night 38 of
#: docs/reports/emulated-cluster.md): 120 s of run at one rank per node,
#: growing with the node count as its per-peer patterns do. Its ci run
#: (small sizes) is the family's :data:`CI_RUN_S`, measured on it.
DEFAULT_CHECKS = {
    'ContentionSuite': Family('contention', 1, 120.0, n0=4, alpha=1.0,
                              link_mbs=31.25, per_rank=True),
}


def link_mbs(rate) -> Optional[float]:
    """The node-link rate of a partition in MB/s from its declared rate
    (``topology.node_rate``: ``'250mbit'``, ``'100gbit'``, ``'12.5GB'``;
    a bare number is MB/s); None when none is declared. ValueError naming
    a malformed rate."""
    if rate is None:
        return None

    from clustergate.links.topology.model import parse_rate

    mbs = parse_rate(rate)
    if mbs <= 0:
        raise ValueError(f'bad rate {rate!r}: not above 0')
    return mbs


def link_scale(fam: Family, link: Optional[float], ppn: int = 1) -> float:
    """How much longer a network-bound family's case runs on node links
    of ``link`` MB/s with ``ppn`` ranks per node than its figure (one rank
    per node at ``fam.link_mbs``): its bytes through a node's link over
    the rate (x ppn where every rank sends its share). Never below 1:
    latency, start-up and protocol costs do not shrink on a faster link,
    so a fast site is over-estimated, never under. 1 where the rate is
    not known (the figure as measured) or the family is not network
    bound."""
    if link is None or fam.link_mbs is None:
        return 1.0

    ranks = max(1, ppn) if fam.per_rank else 1
    return max(1.0, fam.link_mbs * ranks / link)


#: The run of one ci-mode job (its small scale: 4 trials, the level sizes
#: of the latency curve, HPCC at N <= 768) where one was measured: the
#: median of the case times of ``reframe --mode ci -r`` on ``localhost``
#: (2 cores, OpenMPI, 2026-11-26, load 2-4): node 20.2 s (15 cases: 3.2-
#: 41.9 s), contention 9.3 s (5), HPCC's run 4.8 s (read by its kernels'
#: cases), IMB ping-pong 1.4 s. The other families keep their nightly
#: figure, an upper bound for their ci.
CI_RUN_S = {'node': 20.2, 'contention': 9.3, 'hpcc': 4.8, 'imb': 1.4}


def default_case_seconds(family: str, nodes: int, mode: str = None,
                         ppn: int = 1, link: Optional[float] = None,
                         check: Optional[str] = None) -> float:
    """Estimated seconds of one test case of ``family`` on ``nodes``
    nodes from the defaults above (overhead + run; ``mode`` ci: its
    measured run where there is one, :data:`CI_RUN_S`); ``link``: the
    partition's node-link rate in MB/s where it is known, with ``ppn``
    ranks per node (:func:`link_scale`); ``check``: the check's name,
    whose own figure (:data:`DEFAULT_CHECKS`) replaces its family's
    outside ci."""
    fam = DEFAULT_FAMILIES.get(family) or Family(family, 1, DEFAULT_RUN_S)
    if mode != 'ci' and check in DEFAULT_CHECKS:
        fam = DEFAULT_CHECKS[check]
    run_s = fam.run_s
    if mode == 'ci' and family in CI_RUN_S:
        run_s = CI_RUN_S[family]
    return DEFAULT_OVERHEAD_S + (run_s * (nodes / fam.n0) ** fam.alpha *
                                 link_scale(fam, link, ppn))


def scaled_to_nodes(family: str, seconds: float, measured_nodes: int,
                    nodes: int) -> float:
    """``seconds`` measured for a case of ``family`` on ``measured_nodes``
    nodes, scaled to ``nodes`` by the family's growth with the node count
    (``alpha`` of :data:`DEFAULT_FAMILIES`; none for a family not listed):
    the estimate of a node count not measured yet. An HPCC run's N grows
    with the memory of its nodes, and HPL's work with N cubed: planned at
    the median of its 1-node runs (360 s), an 8-node x 2 run of the
    12-node emulated site was still in HPL after 29 min."""
    fam = DEFAULT_FAMILIES.get(family)
    if fam is None or measured_nodes <= 0 or nodes <= 0:
        return seconds
    return seconds * (nodes / measured_nodes) ** fam.alpha


def cost(site: Site, mode: str) -> Cost:
    """Jobs, wall time and node-hours of one mode (see module doc)."""
    if mode not in MODES:
        raise ValueError(f'unknown mode {mode!r} (one of {", ".join(MODES)})')

    out = Cost()
    for part in site.partitions:
        sweep = part.sweep.get(mode) or part.sweep['acceptance']
        wall = 0.0
        for fname in part.families:
            fam = site.families[fname]
            for n in sweep['nodes']:
                if n < fam.min_nodes or (fam.max_nodes and n > fam.max_nodes)\
                        or n > part.nodes:
                    continue

                jobs = (len(sweep['ppn']) * len(sweep['interconnects']) *
                        part.environments * fam.cases_per_point)
                t = job_time(site, fam, n)
                out.jobs += round(jobs)
                wall += jobs * t
                out.node_hours += jobs * n * t / 3600
                out.gpu_hours += jobs * n * part.gpus_per_node * t / 3600

        out.per_partition_wall[part.name] = wall

    walls = out.per_partition_wall.values()
    out.wall_s = (max(walls, default=0.0) if site.parallel_partitions
                  else sum(walls))
    return out


def measured_families(cases, defaults: Dict[str, Family]
                      ) -> Dict[str, Family]:
    """Family figures from the test cases of a measured session
    (:func:`clustergate.results.timing.case_times`): c = cases per (point,
    environment), r = median run time; n0 the median node count; alpha
    kept from ``defaults`` (one session cannot tell growth from noise)."""
    by = {}
    for c in cases:
        if c.family == 'build' or c.result in ('skip', 'fail_deps'):
            continue

        by.setdefault(c.family, []).append(c)

    out = dict(defaults)
    for name, cases in by.items():
        points = {(c.point, c.environ) for c in cases}
        base = defaults.get(name) or Family(name, 1, 0)
        out[name] = Family(
            name, len(cases) / max(1, len(points)),
            statistics.median(c.run for c in cases),
            int(statistics.median(c.nodes for c in cases)), base.alpha,
            base.min_nodes, base.max_nodes)

    return out


def load_site(data: Dict) -> Site:
    """A site from a parsed YAML/JSON description (docs/reports/cost-model.md);
    raises ValueError naming the key that is wrong."""
    def need(d, key, where):
        if key not in d:
            raise ValueError(f'{where}: missing key {key!r}')
        return d[key]

    fams = {}
    for name, f in need(data, 'families', 'site').items():
        fams[name] = Family(name, float(need(f, 'cases_per_point', name)),
                            float(need(f, 'run_s', name)),
                            int(f.get('n0', 2)), float(f.get('alpha', 0.0)),
                            int(f.get('min_nodes', 1)), f.get('max_nodes'))

    parts = []
    for p in need(data, 'partitions', 'site'):
        name = need(p, 'name', 'partition')
        sweep = need(p, 'sweep', name)
        if 'acceptance' not in sweep:
            raise ValueError(f'{name}: sweep needs an acceptance entry')
        for mode, axes in sweep.items():
            if mode not in MODES:
                raise ValueError(f'{name}: unknown mode {mode!r} in sweep')
            for axis in ('nodes', 'ppn', 'interconnects'):
                need(axes, axis, f'{name}.sweep.{mode}')
        families = p.get('families', list(fams))
        for f in families:
            if f not in fams:
                raise ValueError(f'{name}: unknown family {f!r}')
        parts.append(Partition(name, int(need(p, 'nodes', name)),
                               int(p.get('environments', 1)), sweep,
                               families, int(p.get('gpus_per_node', 0))))

    return Site(float(need(data, 'overhead_s', 'site')), fams, parts,
                bool(data.get('parallel_partitions', False)))


def table(site: Site, modes: Sequence[str] = MODES) -> List[str]:
    lines = [f'{"mode":<11} {"jobs":>8} {"node-hours":>11} {"wall":>10}'
             + ('  (partitions at once)' if site.parallel_partitions
                else '  (one job at a time)')]
    for m in modes:
        c = cost(site, m)
        lines.append(f'{m:<11} {c.jobs:>8} {c.node_hours:>11.1f} '
                     f'{c.wall_s / 3600:>9.2f}h')

    return lines
