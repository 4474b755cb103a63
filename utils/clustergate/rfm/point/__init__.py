"""The machinery of one point of the sweep: its axes, which partitions
can run it, its modes, its job placement and options, its reference,
the night's budget and the job's output (docs/guide/architecture.md)."""
