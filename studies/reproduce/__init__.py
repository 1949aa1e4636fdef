"""Every committed results row: the command that produced it, re-run at HEAD and compared (issue 38, item 4)."""
