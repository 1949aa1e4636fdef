"""One validation layer: pydantic schemas derived from the classes and functions that take the parameters.

Every user-given value (CLI flag, JSON config, sweep grid, vehicle profile, model / policy / environment
parameter) is checked against a schema before anything is written.  Schemas are *derived*, not listed by hand:

* a dataclass contributes its fields (type hints, defaults);
* a class contributes the keyword parameters of ``__init__`` that have defaults, a function its keyword parameters
  with defaults (positional inputs such as the environment are supplied by evroute, not by the user).

Values are validated in pydantic's strict JSON mode (they come from JSON files or JSON-parsed ``NAME=VALUE``
flags): an ``int`` field takes ``3`` but not ``3.5``, ``"3"`` or ``true``; a ``float`` field takes ``3`` or ``3.5``
but not ``true``, ``NaN`` or ``inf``.  Ranges are then checked by the class itself (its ``__post_init__`` /
``__init__``), so each rule lives in one place.  Errors become one-line :class:`~evroute.errors.ParameterError`
messages naming the field (:func:`format_error`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError

from evroute.errors import ParameterError

#: strict, closed, finite: the configuration of every derived schema.
STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, arbitrary_types_allowed=False)


def format_error(exc: ValidationError, what: str, prefix: str = "") -> str:
    """One line naming each failing field: ``what 'PREFIXfield.sub': message (got VALUE)``."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = prefix + ".".join(str(x) for x in err["loc"]) if err["loc"] else ""
        msg = err["msg"].removeprefix("Value error, ")
        got = err.get("input")
        if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            msg = "unknown key"
        elif _non_finite(got) or err["type"] == "finite_number":
            msg = "must be a finite number (NaN and infinity are not allowed)"
        shown = "" if err["type"] == "missing" or isinstance(got, dict) else f" (got {_short(got)})"
        parts.append(f"{what} {loc!r}: {msg}{shown}" if loc else f"{what}: {msg}{shown}")
    return "; ".join(parts)


def _non_finite(value: Any) -> bool:
    """Whether ``value`` is the text of a non-finite number (``NaN``, ``inf``, ``-Infinity``: strings here, since
    ``NAME=VALUE`` flags and strict JSON keep them as text)."""
    return isinstance(value, str) and value.strip().lstrip("+-").lower() in ("nan", "inf", "infinity")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(tp: Any) -> Any:
    """``tp`` if pydantic can validate it from JSON, else :data:`typing.Any` (e.g. numpy arrays)."""
    try:
        TypeAdapter(tp)
    except (PydanticSchemaGenerationError, TypeError, NameError):
        return Any
    return tp


def _hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception:  # unresolvable forward references: those fields take any value  # noqa: BLE001
        return {}


def parameter_fields(source: Any, skip: Iterable[str] = ()) -> tuple[dict[str, tuple[Any, Any]], bool]:
    """``name -> (type, default)`` of the user-settable parameters of ``source``, and whether it takes ``**kwargs``.

    ``source``: a dataclass (its init fields), a class (keyword parameters of ``__init__`` with defaults) or a
    function (keyword parameters with defaults).
    """
    skip = set(skip)
    out: dict[str, tuple[Any, Any]] = {}
    if dataclasses.is_dataclass(source):
        hints = _hints(source)
        for f in dataclasses.fields(source):
            if not f.init or f.name in skip:
                continue
            default = (
                f.default
                if f.default is not dataclasses.MISSING
                else (f.default_factory() if f.default_factory is not dataclasses.MISSING else ...)
            )
            out[f.name] = (_json_type(hints.get(f.name, Any)), default)
        return out, False
    target = source.__init__ if inspect.isclass(source) else source
    hints = _hints(target)
    var_kw = False
    for p in inspect.signature(target).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var_kw = True
            continue
        if p.kind is p.VAR_POSITIONAL or p.name == "self" or p.name in skip or p.default is p.empty:
            continue
        out[p.name] = (_json_type(hints.get(p.name, Any)), p.default)
    return out, var_kw


@functools.lru_cache(maxsize=256)
def _adapter(key: tuple[str, ...], sources: tuple[Any, ...], skip: tuple[str, ...]) -> tuple[TypeAdapter, bool]:
    fields: dict[str, Any] = {}  # name -> (type, default); Any: create_model also takes dunder keywords
    open_ = False
    for src in sources:
        f, var_kw = parameter_fields(src, skip)
        fields.update(f)
        open_ = open_ or var_kw
    config = ConfigDict(**{**STRICT, "extra": "allow" if open_ else "forbid"})
    model = create_model("Params_" + "_".join(key).replace("-", "_"), __config__=config, **fields)
    return TypeAdapter(model), open_


def check_params(
    what: str, params: Mapping[str, Any], sources: Iterable[Any], *, skip: Iterable[str] = (), prefix: str = ""
) -> dict[str, Any]:
    """Validate ``params`` (types, unknown keys) against the parameters of ``sources``; returns them unchanged.

    ``what`` names them in errors, e.g. ``"model parameter"``; ``prefix`` is prepended to the field names.
    Sources taking ``**kwargs`` accept unknown keys
    (the class checks them itself when it is built).
    """
    if not isinstance(params, Mapping):
        raise ParameterError(f"{what}s must be a JSON object of NAME: VALUE, got {_short(params)}")
    srcs = tuple(sources)
    adapter, _ = _adapter(tuple(getattr(s, "__qualname__", str(s)) for s in srcs), srcs, tuple(sorted(skip)))
    try:
        adapter.validate_json(json.dumps(dict(params), allow_nan=True))
    except ValidationError as exc:
        raise ParameterError(format_error(exc, what, prefix)) from None
    except (TypeError, ValueError) as exc:  # not JSON-serialisable
        raise ParameterError(f"{what}s must be JSON values: {exc}") from None
    return dict(params)


def parameter_table(sources: Iterable[Any], *, skip: Iterable[str] = ()) -> list[tuple[str, str, str]]:
    """``(name, type, default)`` rows of the parameters of ``sources`` (for the generated schema document)."""
    rows = []
    for src in sources:
        fields, _ = parameter_fields(src, skip)
        for name, (tp, default) in fields.items():
            rows.append((name, type_name(tp), "required" if default is ... else json.dumps(default, default=str)))
    return rows


def type_name(tp: Any) -> str:
    """Readable name of a type hint: ``int``, ``float | None``, ``tuple[int, ...]``."""
    if tp is Any:
        return "any"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "").replace("NoneType", "None")


def call_checked(what: str, factory: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``factory(*args, **kwargs)``, turning the ``TypeError`` / ``ValueError`` of a bad parameter into one line."""
    try:
        return factory(*args, **kwargs)
    except ParameterError:
        raise
    except (TypeError, ValueError) as exc:
        raise ParameterError(
            f"invalid {what}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from None
