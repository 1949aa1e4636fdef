"""The reproduced BO studies: kernelized bandits, BOKE, BOLT Table 3 (``docs/bo.md``, ``docs/tvbo.md``)."""
