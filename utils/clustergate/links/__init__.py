"""The fabric: the link matrix (all-pairs bandwidth per fabric), its
switch-tree analysis (:mod:`.topology`), the residual fit, the adaptive
retest of suspect links inside the job, and per-link baselines."""
