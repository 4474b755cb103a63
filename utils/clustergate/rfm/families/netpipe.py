"""Generic base test of the shared-interface study with third-party tools:
NetPIPE's ``NPtcp`` (Debian ``netpipe-tcp``) and ``iperf3``.

One job, one rank per node: rank 0 transmits two streams, to the first
rank of the second and of the third node (both to the second node when
there are two; on a single node, over loopback, to a second rank of the
same node). Each stream runs alone, then both at once. ``layout``:

* ``one_iface``: both streams leave through the device of the sweep
  point's interconnect; where that link is the bottleneck each keeps
  about half of its rate alone (ratio 0.5);
* ``two_ifaces``: stream 2 uses the device of the partition's other
  network interconnect; two independent links keep a ratio of about 1.0.

ratio = per-stream rate together / the same stream alone, averaged over
the two streams: what the study reports. The devices come from the
partition's interconnects (``netdev``, or the device their MPI variables
name). The wrapper ``checks/netpipe/np_study.sh`` plays every role; the
receivers publish their address in the stage directory once they listen,
so the stage directory must be visible from every node (as it is where
ReFrame stages on a shared file system).

Sanity judges the programs' own output (every phase and stream measured,
exit status 0, NetPIPE at the asked message size) and the transmitting
node's device counters (each stream's device carried the traffic). The
``two_ifaces`` ratio is bounded below (``two_ifaces_min_ratio``) unless
the reference file gives it a reference: a second interface that does not
give a second stream its own bandwidth is the finding of the study.
"""

import os
import shlex
import shutil

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (parameter, performance_function,
                                   run_after, run_before, variable)
from reframe.core.exceptions import SanityError

from clustergate import PROJECT_ROOT
from clustergate.parsers import ParseError
from clustergate.parsers.netpipe_output import PHASES, parse_netpipe, parse_study
from clustergate.rfm.point import modes
from clustergate.rfm.point.reference import add_bounds
from clustergate.rfm.point.base import PointTest
from clustergate.site import sweep
from clustergate.site.partition import partition_model

WRAPPER = os.path.join(PROJECT_ROOT, 'checks', 'netpipe', 'np_study.sh')

#: The Debian package of each tool, for the reason of a skip
PACKAGES = {'NPtcp': 'netpipe-tcp', 'iperf3': 'iperf3', 'ss': 'iproute2',
            'ip': 'iproute2'}

LOOPBACK = 'lo'


def devices(partition):
    """``{interconnect: device}`` of the partition's network
    interconnects whose device is known."""
    ics = partition_model(partition).interconnects
    return {name: ic.device() for name, ic in ics.items()
            if ic.network and ic.device()}


def receiver_ranks(num_nodes):
    """Ranks receiving stream 1 and 2 (one rank per node, block
    placement; one node: rank 1 receives both)."""
    return [1, 2] if num_nodes >= 3 else [1, 1]


def stream_devices(partition, interconnect, layout):
    """The device of stream 1 and of stream 2: the interconnect's, and
    for ``two_ifaces`` another network interconnect's."""
    devs = devices(partition)
    first = devs[interconnect]
    if layout == 'one_iface':
        return [first, first]

    return [first, next(d for d in devs.values() if d != first)]


def missing_program(tool):
    """The first program the study needs that is not on PATH, with its
    Debian package, or None."""
    for prog in (tool, 'ip', 'ss'):
        if shutil.which(prog) is None:
            return f'{prog} not found on PATH (Debian package ' \
                   f'{PACKAGES[prog]})'

    return None


def layout_reason(partition, interconnect, layout, num_nodes, ppn):
    """Why the study cannot run at this point, or None."""
    devs = devices(partition)
    if interconnect not in devs:
        return (f'interconnect {interconnect!r} names no network device '
                f'(set "netdev" in its configuration)')

    if num_nodes == 1 and (devs[interconnect] != LOOPBACK or ppn < 2):
        return ('one node: the streams never leave it (only the loopback '
                'device with 2 ranks)')

    if num_nodes > 1 and ppn != 1:
        return 'one rank per node: a transmitter and its receivers'

    if layout == 'two_ifaces' and len(set(devs.values())) < 2:
        return (f'partition {partition.fullname} has one network device: '
                f'no second interface')

    return None


class NetpipeStudyTest(PointTest, rfm.RunOnlyRegressionTest):
    """Two streams from one node with NPtcp or iperf3, over one interface
    or two; the per-stream ratio together / alone."""

    tool = parameter(['NPtcp', 'iperf3'], loggable=True)
    layout = parameter(['one_iface', 'two_ifaces'], loggable=True)

    #: NPtcp: one message size (bytes), its repeats, socket buffers;
    #: bidirectional (-2): two plain ping-pong pairs from one node can
    #: fall into each other's gaps and hide the contention
    msg_bytes = variable(int, value=4 * 2**20, loggable=True)
    repeats = variable(int, value=15, loggable=True)
    socket_buffer = variable(int, value=8 * 2**20, loggable=True)
    #: iperf3: seconds per stream (one direction)
    iperf_seconds = variable(int, value=3, loggable=True)
    #: stream k listens on port + k
    port = variable(int, value=5300)
    #: seconds a rank waits for its peer, and a program may run
    wait_s = variable(int, value=120)
    #: the lower bound of the two_ifaces ratio (no reference given)
    two_ifaces_min_ratio = variable(float, value=0.8, loggable=True)
    #: the devices of stream 1 and 2 (set at setup from the partition)
    stream_devs = variable(typ.List[str], value=[], loggable=True)

    valid_systems = ['+mpi']
    valid_prog_environs = ['+mpi']
    sweep_requirements = sweep.Requirements(min_ranks=2,
                                            mpi_families=('openmpi',))
    mode_selection = modes.ACCEPTANCE_ONLY
    #: the programs are not MPI: no MPI transport report to verify; the
    #: device counters show where the traffic went
    mpi_transport = False
    time_limit = '10m'
    maintainers = ['clustergate']

    def tag_names(self):
        return {'netpipe', 'nic'}

    def point_reason(self, partition, mpi_family):
        return super().point_reason(partition, mpi_family) or layout_reason(
            partition, self.interconnect, self.layout, self.num_nodes,
            self.ppn)

    @run_after('init')
    def set_descr(self):
        self.descr = (f'{self.tool}: two streams from one node '
                      f'({self.layout}) over {self.interconnect}')

    @run_after('setup')
    def need_programs(self):
        reason = missing_program(self.tool)
        if reason and not self.is_dry_run():
            self.skip(reason)

        self.stream_devs = stream_devices(self.current_partition,
                                          self.interconnect, self.layout)

    def netpipe_options(self):
        return ['-p', '0', '-l', str(self.msg_bytes), '-u',
                str(self.msg_bytes), '-n', str(self.repeats), '-2', '-b',
                str(self.socket_buffer), '-o', '/dev/null']

    @run_before('run')
    def set_command(self):
        self.executable = WRAPPER
        rdv = os.path.join(self.stagedir, 'np-rdv')
        self.prerun_cmds = [f'rm -rf {rdv}', f'mkdir -p {rdv}']
        # quoted: ReFrame writes "export NAME=value" verbatim
        q = shlex.quote
        self.env_vars.update({
            'NP_TOOL': self.tool, 'NP_DIR': q(rdv),
            'NP_IFACES': q(' '.join(self.stream_devs)),
            'NP_RX': q(' '.join(map(str, receiver_ranks(self.num_nodes)))),
            'NP_PORT': str(self.port), 'NP_WAIT': str(self.wait_s),
            'NP_NETPIPE_OPTS': q(' '.join(self.netpipe_options())),
            'NP_IPERF_OPTS': q(f'-t {self.iperf_seconds}'),
        })

    # -- sanity -------------------------------------------------------------

    def parse(self, text):
        return parse_study(text)

    def wrapper_error(self):
        """The first NP_ERROR line of the job's stderr, or ''."""
        for line in self.stderr_text().splitlines():
            if line.startswith('NP_ERROR'):
                return line.strip()
        return ''

    def parse_or_fail(self, text):
        error = self.wrapper_error()
        if error:
            raise SanityError(error)

        return super().parse_or_fail(text)

    def check(self, study):
        want = self.stream_devs
        for s in study.streams:
            if s.tool != self.tool or s.dev != want[s.stream - 1]:
                raise SanityError(f'stream {s.stream} ({s.phase}) ran '
                                  f'{s.tool} over {s.dev}, expected '
                                  f'{self.tool} over {want[s.stream - 1]}')
            self.check_stream(s)

        self.check_traffic(study)

    def check_stream(self, stream):
        try:
            stream.rate()
        except ParseError as err:
            raise SanityError(str(err)) from None

        if self.tool == 'NPtcp':
            got = parse_netpipe(stream.text)[-1].bytes
            if got != self.msg_bytes:
                raise SanityError(f'NPtcp stream {stream.stream} '
                                  f'({stream.phase}) measured {got} B, '
                                  f'asked {self.msg_bytes} B')

    def check_traffic(self, study):
        """Each phase's devices carried at least one message's worth:
        the streams went where the layout says."""
        for phase, numbers in PHASES.items():
            for dev in {self.stream_devs[n - 1] for n in numbers}:
                sent = study.tx_bytes.get((phase, dev))
                if sent is None or sent < self.msg_bytes:
                    raise SanityError(
                        f'{phase}: device {dev} of the transmitting node '
                        f'sent {sent} B, less than one message '
                        f'({self.msg_bytes} B): the stream did not leave '
                        f'through it')

    # -- performance ------------------------------------------------------

    def rates(self):
        """``{(phase, stream): MB/s}``."""
        study = self.parsed()
        return {(s.phase, s.stream): s.rate() for s in study.streams}

    def ratio_value(self, stream=None):
        r = self.rates()
        per = {n: r[('together', n)] / r[(f'alone{n}', n)] for n in (1, 2)}
        return per[stream] if stream else (per[1] + per[2]) / 2

    @performance_function('x')
    def ratio_of(self, stream=None):
        return sn.defer(self.ratio_value(stream))

    @performance_function('MB/s')
    def rate_of(self, phase='together', stream=1):
        return sn.defer(self.rates()[(phase, stream)])

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {
            'ratio': self.ratio_of(), 'ratio_s1': self.ratio_of(1),
            'ratio_s2': self.ratio_of(2),
            'alone_s1': self.rate_of('alone1', 1),
            'alone_s2': self.rate_of('alone2', 2),
            'together_s1': self.rate_of('together', 1),
            'together_s2': self.rate_of('together', 2),
        }
        if self.layout == 'two_ifaces':
            add_bounds(self, {'ratio': (
                1.0, self.two_ifaces_min_ratio - 1.0, None, 'x')})
