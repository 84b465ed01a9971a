"""``/bot`` commands on fix PRs: the grammar, one handler per subcommand, dispatch and audit."""
