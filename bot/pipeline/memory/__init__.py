"""What the bot remembers and respects before it acts: human suppressions
(`suppression_gate`), the loop guard's budget (`loop_guard`), the opt-out label
(`opt_out_label`) and a repository's opt-outs and autonomy (`policy_gate`).
"""
