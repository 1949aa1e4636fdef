"""Names of the executors a sweep can run on (kept import-light for the CLI's ``--help``)."""

#: ``serial`` (this process), ``process`` (a local spawn process pool) or ``ray`` (optional extra ``ray``).
EXECUTORS = ("serial", "process", "ray")
