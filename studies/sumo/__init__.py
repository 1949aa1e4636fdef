"""SUMO ground truth: physics prior against the battery device, turn coverage, live against replay, speed."""
