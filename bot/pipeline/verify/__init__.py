"""Stage 3 and 4: verify a fix on the requested GPU queue before and after (`task`), the
embedded default's verification process (`worker`), and telling the PR (`announce`).
"""
