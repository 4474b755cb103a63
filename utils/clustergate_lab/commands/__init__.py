"""The subcommands of ``clustergate-lab``, one module each (the same
``add_parser(subparsers)`` convention as :mod:`clustergate.commands`)."""
