"""The reference paper's figures (Figs. 2-9) and the routing studies built on their protocol."""
