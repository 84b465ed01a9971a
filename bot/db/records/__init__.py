"""Tables of the bot's own memory, one concept each, with the queries that read and write them:
the loop guard's budget (``bot_events``), the pre-merge checks (``contract_checks``), the
GitHub write outbox (``github_writes``), opt-outs (``opt_outs``), the fan-out notices
(``pr_notices``) and human suppressions (``suppressions``). ``bot.db.schema`` gathers every
table for Alembic.
"""
