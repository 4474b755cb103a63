"""The site: what a partition declares in its ReFrame ``extras`` (sweep,
interconnects, topology, rotation, concurrency, benchmark sources), the
system and the checks a session runs on it, and what cannot run and why."""
