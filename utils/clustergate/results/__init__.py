"""Results of sessions: the perflog guard, the results database, the
verdict block at the end of a session, nightly history, scores and the
time breakdown of a session."""
