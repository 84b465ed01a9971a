"""Recovery: the reconciler re-sends what a crash or lost message left unfinished (`task`),
runs whose worker was lost (`lost_runs`), and the work dirs a crash left behind (`cleanup`).
"""
