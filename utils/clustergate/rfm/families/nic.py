"""Generic base test of the shared-interface contention benchmark (cg_nic).

Two ranks on the first node send to two other nodes, alone and at once.
``layout``:

* ``one_iface``: every rank uses the interconnect of the sweep point, so
  both streams leave the first node through the same interface; expected
  ratio (bandwidth in the pair / alone) about 0.5 when the link is the
  bottleneck;
* ``two_ifaces``: local rank 0 of every node uses the sweep point's
  interconnect, local rank 1 the partition's other network interconnect
  (the second fabric), set per rank by checks/nic/cg_nic_ifaces.sh; the
  streams use two interfaces; expected ratio about 1.0.

The program reads the node's per-interface transmit counters, so the
sanity checks that the traffic really went where the layout says.
"""

import os
import shlex

import reframe.utility.sanity as sn
from reframe.core.builtins import (parameter, performance_function,
                                   run_after, run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate import PROJECT_ROOT
from clustergate.site import sweep
from clustergate.rfm.point import modes
from clustergate.rfm.families.cgprogram import CgProgramTest
from clustergate.site.partition import partition_model

WRAPPER = os.path.join(PROJECT_ROOT, 'checks', 'nic', 'cg_nic_ifaces.sh')


def network_interconnects(extras):
    """Names of the network-scope interconnects of a partition."""
    return list(partition_model(extras).network_interconnects())


def rank_iface_map(point, ifaces):
    """``CG_NIC_IFACE_MAP`` value of a sweep point: rank r (block
    placement) gets ``ifaces[local rank % len(ifaces)]``."""
    return ' '.join(f'{r}:{ifaces[(r % point.ppn) % len(ifaces)]}'
                    for r in range(point.ranks))


class NicContentionTest(CgProgramTest):
    """Shared-interface contention, one layout at one sweep point."""

    layout = parameter(['one_iface', 'two_ifaces'], loggable=True)

    #: Bytes per stream and trial (K, M = 10^3, 10^6)
    msg_bytes = variable(str, value='32M', loggable=True)
    trials = variable(int, value=7, loggable=True)

    #: Where the ratio of each layout is expected (sanity is not strict
    #: about it; the ratios are performance variables, the pytest asserts)
    expected_ratio = variable(dict, value={'one_iface': 0.5,
                                           'two_ifaces': 1.0})

    program = 'cg_nic'
    sweep_requirements = sweep.Requirements(min_nodes=3, min_ppn=2,
                                            mpi_families=('openmpi',))
    time_limit = '10m'
    mode_selection = modes.EVERY_MODE

    def tag_names(self):
        return {'nic', 'node'}

    def point_reason(self, partition, mpi_family):
        # a network to contend for; two of them for two_ifaces
        reason = super().point_reason(partition, mpi_family)
        ics = partition_model(partition).interconnects
        if reason is None and not ics[self.interconnect].network:
            reason = (f'interconnect {self.interconnect!r} is not a '
                      f'network: no interface to contend for')

        if (reason is None and self.layout == 'two_ifaces' and
                len(network_interconnects(partition)) < 2):
            reason = (f'partition {partition.fullname} has one network '
                      f'interconnect: no second interface')

        if (reason is None and self.layout == 'two_ifaces' and
                'UCX_NET_DEVICES' in ics[self.interconnect].env.get(
                    mpi_family, {})):
            # measured on the emulated site's two fabrics under OpenMPI's
            # UCX PML: every rank's endpoint to a rank pinned to the other
            # fabric failed in MPI_Init ("ucp_ep_create ... Destination is
            # unreachable"); the TCP BTL connects across them
            reason = (f'layout two_ifaces over {self.interconnect!r}: UCX '
                      f'pins a whole rank to its devices (UCX_NET_DEVICES), '
                      f'so ranks pinned to two fabrics cannot reach each '
                      f'other; this layout runs over the TCP interconnects')

        return reason

    @run_after('init')
    def set_descr(self):
        self.descr = (f'NIC contention ({self.layout}) from the first of '
                      f'{self.num_nodes} nodes x {self.ppn} ppn over '
                      f'{self.interconnect}')

    def second_iface(self):
        """The other network interconnect of the partition, or None."""
        others = [n for n in network_interconnects(
            self.current_partition) if n != self.interconnect]
        return others[0] if others else None

    @run_before('run')
    def set_command(self):
        self.executable = WRAPPER
        self.executable_opts = [self.program_path(), '--bytes',
                                self.msg_bytes, '--trials', str(self.trials)]
        if self.layout == 'two_ifaces':
            # quoted: ReFrame writes "export NAME=value" verbatim
            self.env_vars['CG_NIC_IFACE_MAP'] = shlex.quote(rank_iface_map(
                self.sweep_point(), [self.interconnect, self.second_iface()]))

        # idle ranks wait in barriers: let them yield the (shared) cores
        self.env_vars['OMPI_MCA_mpi_yield_when_idle'] = '1'

    def expected_pattern(self):
        return 'nic_pair'

    def check_run(self, run):
        pair = run.select('nic_pair')
        if sorted(m['stream'] for m in pair) != [1, 2]:
            raise SanityError('nic_pair needs one line per stream (1, 2)')

        if sorted(m['stream'] for m in run.select('nic_single')) != [1, 2]:
            raise SanityError('nic_single needs one line per stream (1, 2)')

        first = pair[0]
        if len({m['src'] for m in pair}) != 1:
            raise SanityError('the two streams do not leave the same node')

        if len({m['dst'] for m in pair}) != 2:
            raise SanityError('the two streams do not go to two nodes')

        shared = first.get('shared_iface')
        want = 'yes' if self.layout == 'one_iface' else 'no'
        if shared != want:
            raise SanityError(f'layout {self.layout}: the senders\' '
                              f'interface settings are {pair[0]["iface"]} '
                              f'and {pair[1]["iface"]} (shared={shared})')

        self.check_traffic(first)

    def check_traffic(self, pair_line):
        """The transmit counters must show the interfaces the layout uses:
        one interface for one_iface, both for two_ifaces."""
        used = sorted(k[len('tx_MB_'):] for k in pair_line.fields
                      if k.startswith('tx_MB_') and k != 'tx_MB_none')
        want = {pair_line['iface']} if self.layout == 'one_iface' else None
        if self.layout == 'one_iface' and set(used) != want:
            raise SanityError(f'one_iface: traffic left through {used}, '
                              f'expected only {sorted(want)}')

        if self.layout == 'two_ifaces' and len(used) < 2:
            raise SanityError(f'two_ifaces: traffic left through {used} '
                              f'only: the interface pinning did not work')

    # -- performance ------------------------------------------------------

    def _v(self, pattern, stream, key):
        lines = [m for m in self._run().select(pattern)
                 if stream is None or m['stream'] == stream]
        values = [m[key] for m in lines if m.get(key) is not None]
        if not values:
            raise SanityError(f'no {key} in {pattern} stream {stream}')

        return values[0]

    @performance_function('x')
    def ratio_of(self, stream=None, key='ratio'):
        return sn.defer(self._v('nic_pair', stream, key))

    @performance_function('MB/s')
    def bw_of(self, pattern='nic_pair', stream=1):
        return sn.defer(self._v(pattern, stream, 'bw_MBps'))

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {
            'pair_ratio': self.ratio_of(None, 'pair_ratio'),
            'ratio_s1': self.ratio_of(1),
            'ratio_s2': self.ratio_of(2),
            'bw_single_s1': self.bw_of('nic_single', 1),
            'bw_single_s2': self.bw_of('nic_single', 2),
            'bw_pair_s1': self.bw_of('nic_pair', 1),
            'bw_pair_s2': self.bw_of('nic_pair', 2),
        }
