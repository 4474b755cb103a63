"""ReFrame building blocks of clustergate: base tests, launchers, fixtures.

hpctestlib is not shipped in the ReFrame 4.10 wheel, so the generic base
classes of every benchmark family live here.
"""
