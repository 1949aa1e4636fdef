"""Issue 38: learning judged outside its own assumptions (misspecified worlds, strong baselines, tails)."""
