"""The fault cases of the three-level campaign: ``clustergate-lab cluster up
--topology fattree3`` (24 nodes, leaves ``leaf1..leaf6`` of 4 nodes each,
``leaf1``/``leaf2`` under ``spine1``, ``leaf3``/``leaf4`` under ``spine2``,
``leaf5``/``leaf6`` under ``spine3``, the spines under the core; two
fabrics).

name -> (faults as ``clustergate-lab cluster`` arguments, the culprits a
verdict must name: ``subject@fabric``), as
:data:`clustergate_lab.sensitivity.FAULT_CASES` for the 9-node tree. They
cover every level (a spine-core trunk, a leaf-spine uplink, a node link),
both fabrics, a node cabled under another spine and under the other leaf
of its own spine, and compound cases (two levels at once, a miscabled
node beside a slow node link).
"""


def _deg(kind, name, fabric, rate):
    return ['degrade', f'--{kind}', name, '--fabric', fabric,
            '--rate', rate]


def _mis(node, leaf, fabric):
    return ['miscable', '--node', node, '--leaf', leaf, '--fabric', fabric]


FATTREE3_CASES = {
    'trunk-spine1-fab0': ([_deg('uplink', 'spine1', 'fab0', '25%')],
                          ['uplink:spine1@fab0']),
    'trunk-spine3-fab1': ([_deg('uplink', 'spine3', 'fab1', '25%')],
                          ['uplink:spine3@fab1']),
    'uplink-leaf4-fab0': ([_deg('uplink', 'leaf4', 'fab0', '25%')],
                          ['uplink:leaf4@fab0']),
    'node-n10-50-fab0': ([_deg('node', 'n10', 'fab0', '50%')],
                         ['n10@fab0']),
    'node-n19-70-fab1': ([_deg('node', 'n19', 'fab1', '70%')],
                         ['n19@fab1']),
    'miscabled-n2-leaf5-fab0': ([_mis('n2', 'leaf5', 'fab0')],
                                ['n2@fab0']),
    'miscabled-n14-leaf3-fab1': ([_mis('n14', 'leaf3', 'fab1')],
                                 ['n14@fab1']),
    'trunk-spine2+n5-fab0': ([_deg('uplink', 'spine2', 'fab0', '25%'),
                              _deg('node', 'n5', 'fab0', '50%')],
                             ['n5@fab0', 'uplink:spine2@fab0']),
    'uplink-leaf1+trunk-spine3-fab0': (
        [_deg('uplink', 'leaf1', 'fab0', '25%'),
         _deg('uplink', 'spine3', 'fab0', '25%')],
        ['uplink:leaf1@fab0', 'uplink:spine3@fab0']),
    'miscabled-n22+n7-fab1': ([_mis('n22', 'leaf1', 'fab1'),
                               _deg('node', 'n7', 'fab1', '50%')],
                              ['n22@fab1', 'n7@fab1']),
    'node-n3-90-fab0': ([_deg('node', 'n3', 'fab0', '90%')], ['n3@fab0']),
}
