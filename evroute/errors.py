"""Exception types of evroute.

Every error that a user can cause with bad input (a missing or malformed file, an unknown
network or edge id, an unreachable goal, an invalid parameter, NaN in data) is raised as an
:class:`EvrouteError` subclass with a one-line message naming the problem.  The CLI prints
that line and exits non-zero; it never shows a traceback for these.
"""

from __future__ import annotations


class EvrouteError(Exception):
    """Base class of all user-facing evroute errors (one-line message)."""


class DataError(EvrouteError):
    """A file is missing, unreadable or malformed, or data contains NaN/inf."""


class UnknownNetworkError(EvrouteError):
    """A network name is neither a known name nor an existing path."""


class UnknownEdgeError(EvrouteError):
    """An edge id is not part of the network (or its largest strongly connected component)."""


class UnreachableError(EvrouteError):
    """No route exists from the start edge to the goal edge."""


class NegativeCycleError(EvrouteError):
    """A negative-energy cycle is reachable, so no finite minimum-energy route exists."""


class ParameterError(EvrouteError, ValueError):
    """A parameter is outside its valid range."""


def check_positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    """Return ``value`` as float, raising :class:`ParameterError` unless it is (non-)positive and finite."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be a number, got {value!r}") from exc
    if v != v or v in (float("inf"), float("-inf")):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    if v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"{name} must be {bound}, got {value!r}")
    return v


def check_range(
    name: str, value: float, low: float | None = None, high: float | None = None, *, low_open: bool = False
) -> float:
    """Return ``value`` as float, raising :class:`ParameterError` unless it is finite and in ``[low, high]``
    (``(low, high]`` with ``low_open``); ``None`` leaves that side unbounded."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name} must be a number, got {value!r}") from exc
    if v != v or v in (float("inf"), float("-inf")):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    too_low = low is not None and (v <= low if low_open else v < low)
    if too_low or (high is not None and v > high):
        if low is not None and high is not None:
            bound = f"in {'(' if low_open else '['}{low:g}, {high:g}]"
        elif low is not None:
            bound = f"{'>' if low_open else '>='} {low:g}"
        else:
            bound = f"<= {high:g}"
        raise ParameterError(f"{name} must be {bound}, got {value!r}")
    return v


class DataWarning(UserWarning):
    """Input was repaired or partly dropped (implausible rows of a trip log, a charging stop split off): the result
    is still computed, and the warning says what was left out, per file."""


def warning_line(message: Warning | str) -> str:
    """The one line a warning is shown as on the command line: ``evroute: warning: <message on one line>``."""
    return f"evroute: warning: {' '.join(str(message).split())}"


def install_warning_format() -> object:
    """Format every Python warning (``warnings.warn``: evroute's, numpy's, a library's) as :func:`warning_line` -- no
    category, source file or source line -- except deprecation notices, which are for developers and keep the
    previous format (Python hides them by default outside ``__main__``).  Replaces ``warnings.formatwarning``, which
    the standard ``warnings.showwarning`` writes to stderr with (a program or test that records warnings, e.g.
    ``pytest.warns``, still receives them).  Returns the previous formatter (the CLI entry point restores it, so a
    program that calls :func:`evroute.cli.main` keeps its own)."""
    import warnings

    previous = warnings.formatwarning

    def fmt(
        message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
    ) -> str:
        if issubclass(category, DeprecationWarning | PendingDeprecationWarning):
            return previous(message, category, filename, lineno, line)
        return warning_line(message) + "\n"

    warnings.formatwarning = fmt
    return previous
