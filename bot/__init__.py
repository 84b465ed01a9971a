"""repairbot service: intake, tasks, forges, runner, dashboard and the command-line interface."""
