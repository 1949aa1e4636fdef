"""The environments: negative-energy cycles and regret references, the consistent environment, inclines."""
