"""Failure intake, signature classification, contract sweep and LibCST codemods."""
