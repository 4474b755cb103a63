"""References: the per-system files under config/references/, their
validation at load, the direction of every metric, and the baselines
written from perflogs."""
