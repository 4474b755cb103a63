"""Small command line tools of the ``clustergate`` command."""
