"""Switch-tree analysis of the link matrix: the declared topology
(Slurm's topology.conf or ``scontrol show topology``), max-min fair-share
predictions of concurrent rounds, and verdicts that name a slow uplink, a
miscabled node or a slow node link. Pure Python, no cluster needed;
The lab package clustergate_lab.simulate runs it on simulated 1024-node
fat trees."""

from .analysis import DEFAULT_MIN_EFFECT, Analysis, diagnose
from .fairshare import RoundModel, fair_share, predict
from .flowfit import DEFAULT_SIGMA, Fault
from .hostlist import HostlistError, compress, expand
from .model import (Topology, TopologyError, parse_rate,
                    parse_scontrol_topology, parse_topology_conf)
from .rounds import (Round, all_pairs_rounds, leaf_rounds, parse_schedule_text,
                     rounds_from_measurements, schedule, schedule_text,
                     shift_rounds, valid_rounds)
from .verdictchoice import Verdict

__all__ = [
    'Analysis', 'DEFAULT_MIN_EFFECT', 'all_pairs_rounds', 'DEFAULT_SIGMA', 'Fault',
    'HostlistError', 'Round', 'RoundModel', 'Topology', 'TopologyError',
    'Verdict', 'compress', 'diagnose', 'expand', 'fair_share',
    'leaf_rounds', 'parse_rate', 'parse_scontrol_topology',
    'parse_schedule_text', 'parse_topology_conf', 'predict',
    'rounds_from_measurements', 'schedule', 'schedule_text', 'shift_rounds', 'valid_rounds',
]
