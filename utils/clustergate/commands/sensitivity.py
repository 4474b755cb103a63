"""clustergate sensitivity (see clustergate.sensitivity)."""

from clustergate.sensitivity import add_parser  # noqa: F401
