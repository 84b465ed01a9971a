"""Failures to findings: the records every intake format produces (`failures`), the failure
signatures (`signatures`, data in `signatures.toml`), one finding per root cause
(`root_causes`), and findings as JSON (`findings_json`).

Modules import each other directly (never through this package), so importing one module
never runs the others.
"""
