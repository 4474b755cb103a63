"""The generic base test of every family, one module each: parameters,
sanity and performance variables, no system names; the checks under
``checks/`` subclass them."""
