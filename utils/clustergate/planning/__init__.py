"""Planning a session from the partition model: the cost of a mode,
its size, the nightly rotation, which jobs may run at once, and the
session that selects nothing."""
