"""kcv Python package: currently the gated linear recurrence ops kcv.glr (issue 4 item 4)."""
