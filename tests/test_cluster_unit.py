"""Unit tests of the emulated cluster's pure parts (no root needed):
layout, rate parsing, tc commands and parsing, slurm.conf, /etc/hosts
block, state file, and the CLI wiring."""

import argparse
import os

import pytest

from clustergate_lab.cluster import lifecycle, netns, procs, shaping, slurm
from clustergate_lab.cluster import state as st
from clustergate_lab.cluster import tree as tr
from clustergate_lab.cluster.layout import Layout, node_index
from clustergate_lab.commands import cluster as cli


# layout -------------------------------------------------------------------

def test_layout_names_and_addresses():
    lay = Layout(4)
    assert lay.node_names == ['n1', 'n2', 'n3', 'n4']
    assert lay.nodelist == 'n[1-4]'
    assert Layout(1).nodelist == 'n1'
    assert lay.node_addr('n3', 'fab0') == '10.77.0.13'
    assert lay.node_addr('n3', 'fab1') == '10.77.1.13'
    assert lay.host_addr('fab1') == '10.77.1.1'
    assert lay.bridge('fab0') == 'cgfab0'
    assert lay.host_veth('n2', 'fab1') == 'cgn2f1'
    assert len(lay.links()) == 8


def test_layout_rejects_bad_sizes_and_names():
    with pytest.raises(ValueError):
        Layout(0)
    with pytest.raises(ValueError):
        Layout(65)
    with pytest.raises(ValueError):
        Layout(2).node_addr('n1', 'fab9')
    with pytest.raises(ValueError):
        node_index('head')


def test_interface_names_fit_kernel_limit():
    lay = Layout(64)
    assert all(len(lay.host_veth(n, f)) <= 15 for n, f in lay.links())


# rates ----------------------------------------------------------------------

@pytest.mark.parametrize('text,bits', [
    ('1gbit', 10**9), ('1Gbit', 10**9), ('250mbit', 250 * 10**6),
    ('100kbit', 10**5), ('2000000', 2 * 10**6), ('1.5gbit', 15 * 10**8),
    ('125mbps', 10**9), ('10kbps', 80000), (' 250Mbit ', 250 * 10**6),
])
def test_parse_rate(text, bits):
    assert shaping.parse_rate(text) == bits


@pytest.mark.parametrize('text', ['', 'fast', '10 parsecs', '1gb', '10bit',
                                  '-5mbit'])
def test_parse_rate_rejects(text):
    with pytest.raises(ValueError):
        shaping.parse_rate(text)


def test_format_rate_round_trips():
    for bits in (10**9, 250 * 10**6, 64000, 1234567):
        assert shaping.parse_rate(shaping.format_rate(bits)) == bits

    assert shaping.format_rate(10**9) == '1gbit'
    assert shaping.format_rate(250 * 10**6) == '250mbit'


# tc -------------------------------------------------------------------------

def test_tbf_command():
    cmd = shaping.tbf_command('cgn1f0', 10**9)
    assert cmd == ('qdisc replace dev cgn1f0 root tbf rate 1000000000bit '
                   'burst 125000 latency 20ms')
    # small rates still get a bucket that holds a GSO packet
    assert 'burst 98304 ' in shaping.tbf_command('fab0', 10**6)


def test_tc_batches_cover_both_ends_of_every_link():
    lay = Layout(2)
    rates = {link: 10**9 for link in lay.links()}
    rates[('n2', 'fab0')] = 250 * 10**6
    host = shaping.host_batch(lay, rates)
    assert len(host) == 4
    assert any('dev cgn2f0 ' in c and 'rate 250000000bit' in c for c in host)
    inside = shaping.node_batch('n2', ['fab0', 'fab1'], rates)
    assert inside[0].startswith('qdisc replace dev fab0 root tbf rate '
                                '250000000bit')
    assert 'rate 1000000000bit' in inside[1]


def test_parse_tc_show():
    out = ('qdisc tbf 8001: root refcnt 2 rate 1Gbit burst 125000b '
           'lat 20ms \n')
    assert shaping.parse_tc_show(out) == 10**9
    out = 'qdisc tbf 8003: root refcnt 2 rate 250Mbit burst 98304b lat 20ms'
    assert shaping.parse_tc_show(out) == 250 * 10**6
    assert shaping.parse_tc_show('qdisc noqueue 0: root refcnt 2') is None
    assert shaping.parse_tc_show('') is None


def test_netem_options_refused_with_reason():
    shaping.reject_netem(None, None)
    with pytest.raises(ValueError, match='netem'):
        shaping.reject_netem(delay='5ms')
    with pytest.raises(ValueError, match='--loss'):
        shaping.reject_netem(loss='1%')


# ip batches and hosts -------------------------------------------------------

def test_ip_batches():
    lay = Layout(2)
    host = netns.host_batch(lay)
    assert 'netns add n2' in host
    assert 'link add cgn1f1 type veth peer name fab1 netns n1' in host
    assert 'link set cgn1f1 master cgfab1 up' in host
    assert 'addr add 10.77.0.1/24 dev cgfab0' in host
    # namespaces exist before veths are created in them
    assert host.index('netns add n1') < host.index(
        'link add cgn1f0 type veth peer name fab0 netns n1')
    inside = netns.node_batch(lay, 'n2')
    assert inside[0] == 'link set lo up'
    assert 'addr add 10.77.1.12/24 dev fab1' in inside
    # only the two private subnets: no routes, no other addresses
    addrs = [line.split()[2] for line in host + inside
             if line.startswith('addr add')]
    assert all(a.startswith(('10.77.0.', '10.77.1.')) for a in addrs)
    assert not any('route' in line for line in host + inside)


HOSTS = '127.0.0.1 localhost\n::1 localhost\n'


def test_hosts_block_add_and_remove():
    lay = Layout(2)
    text = netns.with_hosts_block(HOSTS, lay)
    assert text.startswith(HOSTS)
    assert '10.77.0.11\tn1 n1-fab0\n' in text
    assert '10.77.1.12\tn2-fab1\n' in text
    assert '10.77.0.1\thead head-fab0\n' in text
    assert netns.strip_hosts_block(text) == HOSTS
    # replacing, not duplicating
    again = netns.with_hosts_block(text, Layout(3))
    assert again.count(netns.HOSTS_BEGIN) == 1
    assert 'n3-fab1' in again
    assert netns.strip_hosts_block(HOSTS) == HOSTS


def test_hosts_block_file(tmp_path):
    f = tmp_path / 'hosts'
    f.write_text('127.0.0.1 localhost')    # no trailing newline
    netns.install_hosts(Layout(1), str(f))
    assert '127.0.0.1 localhost\n# BEGIN' in f.read_text()
    netns.remove_hosts(str(f))
    assert f.read_text() == '127.0.0.1 localhost\n'


# slurm.conf -----------------------------------------------------------------

def _conf(tmp_path, nodes=4):
    return slurm.render_conf(Layout(nodes), st.Paths(str(tmp_path)), 2, 4800)


def test_slurm_conf_essentials(tmp_path):
    conf = _conf(tmp_path)
    lines = conf.splitlines()
    for want in ['ClusterName=cgemu', 'SlurmctldHost=head(10.77.0.1)',
                 'ProctrackType=proctrack/linuxproc', 'TaskPlugin=task/none',
                 'JobAcctGatherType=jobacct_gather/none',
                 'AccountingStorageType=accounting_storage/none',
                 'SelectType=select/cons_tres', 'MpiDefault=pmix',
                 f'AuthInfo=socket={tmp_path}/munge-socket/munge.socket']:
        assert want in lines

    assert f'TmpFS={tmp_path}/nodes/%n/tmp' in lines
    assert f'SlurmdSpoolDir={tmp_path}/nodes/%n/spool' in lines
    assert f'SlurmdPidFile={tmp_path}/nodes/%n/slurmd.pid' in lines
    assert ('PartitionName=emu Nodes=n[1-4] Default=YES MaxTime=INFINITE '
            'State=UP OverSubscribe=NO') in lines
    # a site's small partition for short jobs
    assert 'PartitionName=debug Nodes=n1,n2 MaxTime=30 State=UP ' \
        'OverSubscribe=NO' in lines


def test_slurm_conf_nodes(tmp_path):
    nodes = slurm.parse_conf_nodes(_conf(tmp_path, 3))
    assert sorted(nodes) == ['n1', 'n2', 'n3']
    assert nodes['n2'] == {'CPUs': '2', 'RealMemory': '4800',
                           'State': 'UNKNOWN', 'NodeHostname': 'n2',
                           'NodeAddr': '10.77.0.12'}


def test_is_emulated_conf(tmp_path):
    f = tmp_path / 'slurm.conf'
    f.write_text(_conf(tmp_path))
    assert slurm.is_emulated_conf(str(f))
    f.write_text('ClusterName=production\n')
    assert not slurm.is_emulated_conf(str(f))
    assert not slurm.is_emulated_conf(str(tmp_path / 'missing'))


def test_node_memory_share():
    assert slurm.node_memory_mib(24105, 4) == 4800
    assert slurm.node_memory_mib(1000, 64) == 256


def test_daemon_commands_use_nsenter_not_ip_netns_exec(tmp_path):
    paths = st.Paths(str(tmp_path))
    cmd = slurm.slurmd_cmd(paths, 'n3')
    assert cmd[:4] == ['nsenter', '--net=/run/netns/n3', 'unshare', '--uts']
    assert 'hostname n3 && exec slurmd -D' in cmd[-1]
    # the node's own sysfs (UCX lists its network devices there), with the
    # host's cgroup hierarchy kept for slurmd
    assert '--mount' in cmd
    assert 'mount -t sysfs sysfs /sys' in cmd[-1]
    assert cmd[-1].index('--rbind /sys/fs/cgroup') < cmd[-1].index(
        'mount -t sysfs') < cmd[-1].index('--move')
    assert 'ip' not in cmd
    assert 'hostname head && exec slurmctld' in slurm.slurmctld_cmd(paths)[-1]
    assert f'--socket={paths.munge_socket}' in slurm.munged_cmd(paths)


# state ----------------------------------------------------------------------

def test_state_round_trip(tmp_path):
    paths = st.Paths(str(tmp_path / 'emu'))
    assert st.load(paths) is None
    state = st.new_state(2, 10**9)
    st.mark_created(state, 'netns:n1', paths)
    st.mark_created(state, 'netns:n1', paths)
    assert st.load(paths)['created'] == ['netns:n1']
    state['rates'][st.rate_key('n2', 'fab0')] = 250 * 10**6
    st.save(state, paths)
    rates = st.link_rates(st.load(paths), Layout(2))
    assert rates[('n2', 'fab0')] == 250 * 10**6
    assert rates[('n1', 'fab1')] == 10**9
    assert not os.path.exists(paths.state_file + '.tmp')
    st.remove(paths)
    assert st.load(paths) is None


def test_state_rejects_garbage(tmp_path):
    paths = st.Paths(str(tmp_path))
    (tmp_path / 'state.json').write_text('{"version": 99}')
    with pytest.raises(RuntimeError, match='unknown format'):
        st.load(paths)
    (tmp_path / 'state.json').write_text('not json')
    with pytest.raises(RuntimeError, match='unreadable'):
        st.load(paths)


def test_state_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv('CG_EMU_STATE_DIR', str(tmp_path))
    assert st.Paths().slurm_conf == str(tmp_path / 'slurm.conf')
    assert st.Paths().daemon_log('slurmd@n2') == str(
        tmp_path / 'nodes' / 'n2' / 'slurmd.log')


def test_process_records(tmp_path):
    rec = procs.spawn(['sleep', '30'], str(tmp_path / 'log'))
    assert procs.alive(rec)
    # a recycled PID (other start time) is not ours
    assert not procs.alive({**rec, 'start': rec['start'] + 1})
    assert procs.stop_all([rec], timeout=5) == []
    assert not procs.alive(rec)


# CLI ------------------------------------------------------------------------

def _parse(argv):
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers(dest='tool'))
    return parser.parse_args(argv)


def test_cli_parsing():
    args = _parse(['cluster', 'up'])
    # defaults are filled in by _up: flat 4 x 1gbit, leafspine 8 x 250mbit
    assert (args.nodes, args.rate, args.topology, args.func) == \
        (None, None, None, cli._up)
    assert (cli.FLAT_NODES, cli.FLAT_RATE) == (4, '1gbit')
    args = _parse(['cluster', 'degrade', '--node', 'n2', '--rate', '250mbit'])
    assert args.fabric == 'fab0'
    for action in ('down', 'status', 'restore', 'env'):
        assert callable(_parse(['cluster', action]).func)

    with pytest.raises(SystemExit):
        _parse(['cluster', 'up', '--nodes', '0'])
    with pytest.raises(SystemExit):
        _parse(['cluster', 'degrade', '--node', 'n1', '--fabric', 'ib0',
                '--rate', '1gbit'])


def test_cli_refuses_delay_before_touching_anything(capsys):
    args = _parse(['cluster', 'degrade', '--node', 'n1', '--rate', '1gbit',
                   '--delay', '5ms'])
    assert args.func(args) == 1
    assert 'netem' in capsys.readouterr().err


def test_missing_packages_named():
    missing = lifecycle.missing_packages(
        which=lambda c: None if c in ('slurmd', 'munged') else '/bin/' + c)
    assert missing == {'slurmd': 'slurmd', 'munged': 'munge'}


def test_clustergate_cli_knows_cluster():
    from clustergate_lab.cli import build_parser
    args = build_parser().parse_args(['cluster', 'env'])
    assert args.func is cli._env


def test_slurm_conf_topology_from_slurmd_c(tmp_path):
    hw = slurm.parse_slurmd_c(
        'NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 '
        'ThreadsPerCore=1 RealMemory=24105\nUpTime=0-00:14:48\n')
    assert hw['RealMemory'] == '24105'
    topo = {k: hw[k] for k in slurm.TOPOLOGY_KEYS}
    conf = slurm.render_conf(Layout(2), st.Paths(str(tmp_path)), 2, 4800,
                             topo)
    assert ('NodeName=DEFAULT CPUs=2 Boards=1 SocketsPerBoard=1 '
            'CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4800 '
            'State=UNKNOWN') in conf.splitlines()
    assert slurm.parse_slurmd_c('garbage') == {}


# leaf/spine tree ---------------------------------------------------------------

def test_leafspine_split_and_devices():
    tree = tr.leafspine(Layout(8).node_names, 2)
    assert tree.leaves == (('leaf1', ('n1', 'n2', 'n3', 'n4')),
                           ('leaf2', ('n5', 'n6', 'n7', 'n8')))
    assert tree.leaf_of('n6') == 'leaf2'
    assert tree.leaf_bridge('leaf2', 'fab1') == 'cgl2f1'
    assert tree.uplink_leaf_end('leaf1', 'fab0') == 'cgu1f0'
    assert tree.uplink_spine_end('leaf1', 'fab0') == 'cgs1f0'
    assert tree.leaf_of_bridge('cgl2f0') == 'leaf2'
    assert tree.leaf_of_bridge('cgfab0') == 'spine'
    assert tree.leaf_of_bridge('cgl3f0') is None
    assert tree.leaf_of_bridge(None) is None
    # uneven: the first leaves take the extra nodes
    odd = tr.leafspine(Layout(7).node_names, 3)
    assert [len(n) for _, n in odd.leaves] == [3, 2, 2]
    with pytest.raises(ValueError, match='leaves'):
        tr.leafspine(Layout(4).node_names, 1)
    with pytest.raises(ValueError, match='no leaf'):
        tree.leaf_bridge('leaf9', 'fab0')
    # every device name fits the kernel's 15 characters
    big = tr.leafspine(Layout(64).node_names, 16)
    assert all(len(d) <= 15 for leaf in big.leaf_names for f in ('fab0',)
               for d in (big.leaf_bridge(leaf, f),
                         big.uplink_spine_end(leaf, f)))


def test_topology_conf_as_meant():
    tree = tr.leafspine(Layout(8).node_names, 2)
    lines = [ln for ln in tree.topology_conf().splitlines()
             if not ln.startswith('#')]
    assert lines == ['SwitchName=leaf1 Nodes=n[1-4]',
                     'SwitchName=leaf2 Nodes=n[5-8]',
                     'SwitchName=spine Switches=leaf[1-2]']
    speeds = [ln for ln in tree.topology_conf(250, 500).splitlines()
              if not ln.startswith('#')]
    assert speeds[0] == 'SwitchName=leaf1 Nodes=n[1-4] LinkSpeed=250'
    assert speeds[2] == 'SwitchName=spine Switches=leaf[1-2] LinkSpeed=500'
    # what the analysis reads back: node links 250, uplinks 500
    from clustergate.links.topology import parse_topology_conf
    topo = parse_topology_conf(tree.topology_conf(250, 500))
    assert topo.leaf_of['n6'] == 'leaf2'
    assert topo.capacity(('switch', 'leaf1', 'up')) == 500
    assert topo.capacity(('node', 'n1', 'down')) == 250
    assert tr.hostlist(['n1', 'n2', 'n4']) == 'n[1-2,4]'
    assert tr.hostlist(['n3']) == 'n3'
    assert tr.hostlist(['a', 'b1']) == 'a,b1'
    assert tr.Tree.from_json(tree.to_json()) == tree


@pytest.mark.parametrize('text,nominal,bits', [
    ('25%', 500 * 10**6, 125 * 10**6), ('50%', 250 * 10**6, 125 * 10**6),
    ('0.25x', 10**9, 250 * 10**6), ('100%', 10**9, 10**9),
    ('125mbit', 10**9, 125 * 10**6),
])
def test_rate_or_share(text, nominal, bits):
    assert tr.resolve_rate(text, nominal) == bits


@pytest.mark.parametrize('text', ['0%', '150%', 'half%', '-5%', '2x'])
def test_rate_share_rejected(text):
    with pytest.raises(ValueError):
        tr.resolve_rate(text, 10**9)


def test_plan_tree_rates():
    lay = Layout(8)
    assert lifecycle.plan_tree(lay, None, 2, 10**9) == (None, None)
    tree, up = lifecycle.plan_tree(lay, 'leafspine', 2, 250 * 10**6)
    # 4 nodes x 250 Mbit/s over 2:1 oversubscription
    assert up == 500 * 10**6
    _, up = lifecycle.plan_tree(lay, 'leafspine', 2, 250 * 10**6, 4.0)
    assert up == 250 * 10**6
    _, up = lifecycle.plan_tree(lay, 'leafspine', 2, 250 * 10**6,
                                uplink_rate='25%')
    assert up == 250 * 10**6
    _, up = lifecycle.plan_tree(lay, 'leafspine', 4, 250 * 10**6,
                                uplink_rate='300mbit')
    assert up == 300 * 10**6
    with pytest.raises(ValueError, match='not both'):
        lifecycle.plan_tree(lay, 'leafspine', 2, 1, 2.0, '1gbit')
    with pytest.raises(ValueError, match='need --topology'):
        lifecycle.plan_tree(lay, 'flat', 2, 1, 2.0)
    with pytest.raises(ValueError, match='unknown topology'):
        lifecycle.plan_tree(lay, 'torus', 2, 1)


def test_tree_ip_batch():
    lay = Layout(4)
    tree = tr.leafspine(lay.node_names, 2)
    host = netns.host_batch(lay, tree)
    # the spine keeps the fabric's bridge and the head's address
    assert 'addr add 10.77.0.1/24 dev cgfab0' in host
    assert 'link add cgu2f1 type veth peer name cgs2f1' in host
    assert 'link set cgu2f1 master cgl2f1 up' in host
    assert 'link set cgs2f1 master cgfab1 up' in host
    assert 'link set cgn3f0 master cgl2f0 up' in host
    assert 'link set cgn1f0 master cgl1f0 up' in host
    # bridges exist before anything is enslaved to them
    assert host.index('link add cgl2f0 type bridge stp_state 0 '
                      'forward_delay 0') < host.index(
        'link set cgn3f0 master cgl2f0 up')
    assert not any('master cgfab0' in ln and 'cgn' in ln for ln in host)
    assert netns.tree_devices(tree)[:2] == ['bridge:cgl1f0', 'link:cgu1f0']
    assert netns.tree_devices(None) == []
    tc = netns.uplink_batch(tree, {('leaf1', 'fab0'): 125 * 10**6})
    assert [c.split()[3] for c in tc] == ['cgu1f0', 'cgs1f0']
    assert all('rate 125000000bit' in c for c in tc)


def test_slurm_conf_tree(tmp_path):
    conf = slurm.render_conf(Layout(8), st.Paths(str(tmp_path)), 2, 4800,
                             tree=True)
    assert 'TopologyPlugin=topology/tree' in conf.splitlines()
    assert 'TopologyPlugin' not in _conf(tmp_path)
    assert st.Paths(str(tmp_path)).topology_conf == str(
        tmp_path / 'topology.conf')


def test_state_of_a_tree(tmp_path):
    tree = tr.leafspine(Layout(8).node_names, 2)
    paths = st.Paths(str(tmp_path))
    state = st.new_state(8, 250 * 10**6, tree, 500 * 10**6)
    state['rates'][tr.uplink_key('leaf1', 'fab0')] = 125 * 10**6
    st.save(state, paths)
    back = st.load(paths)
    assert st.tree_of(back) == tree
    ups = st.uplink_rates(back, tree)
    assert ups[('leaf1', 'fab0')] == 125 * 10**6
    assert ups[('leaf2', 'fab1')] == 500 * 10**6
    assert st.tree_of(st.new_state(4, 10**9)) is None


def test_cabling_lines_mark_a_miscabled_node():
    tree = tr.leafspine(Layout(8).node_names, 2)
    over = {'n3': 'leaf2'}
    real = {'fab0': tr.real_cabling(tree, over)}
    lines = tr.cabling_lines(tree, real, {('leaf1', 'fab0'): 125 * 10**6,
                                          ('leaf2', 'fab0'): 500 * 10**6},
                             500 * 10**6)
    assert 'leaf1  uplink 125mbit * nodes: n1 n2 n4' in lines[1]
    assert 'n3!(topology.conf: leaf1) n5 n6 n7 n8' in lines[2]
    real['fab0']['n8'] = None
    assert 'not on any leaf: n8' in tr.cabling_lines(
        tree, real, {}, 1)[-1]


def test_cli_tree_options():
    args = _parse(['cluster', 'up', '--topology', 'leafspine',
                   '--uplink-rate', '50%'])
    # --leaves unset: 3 for leafspine, 6 for fattree3, chosen by `up`
    # (tests/test_cluster_fattree3.py: test_cli_fattree3_defaults)
    assert (args.topology, args.leaves, args.uplink_rate) == \
        ('leafspine', None, '50%')
    args = _parse(['cluster', 'degrade', '--uplink', 'leaf1', '--rate',
                   '25%'])
    assert (args.uplink, args.node, args.fabric) == ('leaf1', None, 'fab0')
    args = _parse(['cluster', 'miscable', '--node', 'n3', '--leaf', 'leaf2'])
    assert args.func is cli._miscable
    with pytest.raises(SystemExit):    # a node or an uplink, not both
        _parse(['cluster', 'degrade', '--uplink', 'leaf1', '--node', 'n1',
                '--rate', '1gbit'])
    with pytest.raises(SystemExit):
        _parse(['cluster', 'up', '--topology', 'torus'])


# modules ----------------------------------------------------------------------

def test_lmod_modulefiles_put_each_mpi_first_on_path(tmp_path):
    from clustergate_lab.cluster import lmod
    names = lmod.write(str(tmp_path), [('openmpi', '4.1.4'),
                                       ('mpich', '4.0.2')],
                       ('/opt/impi', '2021.18.1'))
    assert names == ['intel-oneapi-mpi/2021.18.1', 'mpich/4.0.2',
                     'openmpi/4.1.4']
    mods = tmp_path / 'modulefiles'
    ompi = (mods / 'openmpi' / '4.1.4.lua').read_text()
    bindir = tmp_path / 'mpi' / 'openmpi-4.1.4' / 'bin'
    assert f'prepend_path("PATH", "{bindir}")' in ompi
    assert 'family("mpi")' in ompi
    assert os.readlink(bindir / 'mpicc') == '/usr/bin/mpicc.openmpi'
    assert os.readlink(tmp_path / 'mpi' / 'mpich-4.0.2' / 'bin' /
                       'mpirun') == '/usr/bin/mpirun.mpich'
    impi = (mods / 'intel-oneapi-mpi' / '2021.18.1.lua').read_text()
    assert 'setenv("I_MPI_ROOT", "/opt/impi")' in impi
    assert 'setenv("I_MPI_PMI_LIBRARY", ' in impi
    assert f'export MODULEPATH={mods}' in (tmp_path / 'lmod.sh').read_text()
