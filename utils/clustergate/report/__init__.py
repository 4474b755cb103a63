"""The HTML report of sessions (:mod:`.page`) and the drawing of each
fabric's verdict (:mod:`.fabricsvg`)."""
