"""``/bot`` commands on fix PRs: one module per subcommand (its ``COMMAND`` spec: grammar,
handler, help), the shared grammar, the registry that discovers them, dispatch and audit."""
