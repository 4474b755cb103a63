"""The errors of a site's configuration, each a one-line message naming
the partition (or environment) and the key: raised where the configuration
is parsed (:mod:`clustergate.site.extras`, :mod:`clustergate.site.partition`)
and by the functions that read the parsed model."""


class ExtrasError(ValueError):
    """A configuration's extras are wrong (its shape, its sweep, its
    interconnects, any knob): the one error type of a site's
    configuration; the message is one line naming the partition (or
    environment) and the key."""
