"""Forges: where fix branches go and pull requests are opened, one package per forge (``local``,
``github``) behind the ``Forge`` protocol in ``base``; ``select`` picks a fix's forge."""
