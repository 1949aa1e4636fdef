"""Data-only files for Python object trees: one ``.npz`` of plain arrays plus a JSON tree, never a pickle.

Checkpoints (:mod:`evroute.experiments.checkpoint`) and compute-cache entries (:mod:`evroute.network.computecache`)
are trees of numbers, strings, arrays, dicts and lists, and (checkpoints) of the learner's own objects.  They are
saved as an ``.npz`` whose members are

* ``__header__`` and ``__tree__``: UTF-8 JSON as ``uint8`` arrays (strict JSON: non-finite floats are tagged nodes);
* ``a0``, ``a1``, ...: every numeric / boolean / string array of the tree (numpy arrays, numpy scalars, the parts
  of scipy sparse matrices, torch tensors as numpy arrays with their torch dtype recorded), read back with
  ``allow_pickle=False`` so no array can hold an object.

Objects are recorded as ``{"$": "obj", "cls": "module:qualname", "state": ...}`` with the state their class's
``__getstate__`` gives (as :mod:`pickle` records them, minus torch's hook tables, which only hold callables).  On
load a class or function name is looked up **only** in the table the caller passes (:func:`object_table` of a
freshly built object of the same kind: the classes and functions the caller's own code already made); a name outside
it refuses the file.  Nothing named by the file is imported or called besides ``cls.__new__`` and the class's own
``__setstate__``.  Shared references (an optimizer's parameters, a model held by a policy) are kept as references.

Files: :func:`evroute.network.datafile.tree_bytes` writes a tree and its arrays as one ``.npz``;
:func:`evroute.network.datafile.read_tree` reads it back with every member's header checked first.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["DataTreeError", "decode", "encode", "object_table"]

_TORCH_DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")


class DataTreeError(ValueError):
    """A data file is malformed or names something outside the allowed table (one line: the reason)."""


def _qualname(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _torch() -> Any:
    import sys

    return sys.modules.get("torch")  # only objects of an already imported torch can be in a tree


def _without_hooks(state: dict[str, Any]) -> dict[str, Any]:
    """A torch module's or optimizer's state with its hook tables emptied: they hold callables (bound methods,
    weak references), which no data file can hold; evroute registers none, and torch's own only serve
    ``load_state_dict``, which evroute never calls on a restored object."""
    return {k: type(v)() if "hook" in k and isinstance(v, dict) else v for k, v in state.items()}


# ----------------------------------------------------------------------------------------------------- encoding
class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps encoded objects alive so that ids are not reused

    def array(self, a: np.ndarray) -> int:
        if a.dtype.hasobject:
            raise DataTreeError("an object array cannot be saved as data")
        self.arrays.append(a if a.flags.c_contiguous else np.ascontiguousarray(a))  # (0-d arrays stay 0-d)
        return len(self.arrays) - 1

    def node(self, o: Any) -> Any:  # noqa: C901, PLR0911, PLR0912 - one branch per kind
        if o is None or isinstance(o, bool | str):
            return o
        if isinstance(o, int) and type(o) is int:
            return o
        if type(o) is float:
            return o if math.isfinite(o) else {"$": "f", "v": repr(o)}
        if id(o) in self.memo:
            return {"$": "ref", "id": self.memo[id(o)]}
        ref = len(self.memo)
        self.memo[id(o)] = ref
        self.keep.append(o)
        out = self._node(o)
        out["id"] = ref
        return out

    def _node(self, o: Any) -> dict[str, Any]:  # noqa: C901, PLR0911, PLR0912 - one branch per kind
        torch = _torch()
        if isinstance(o, np.ndarray):
            return {"$": "nd", "a": self.array(o)}
        if isinstance(o, np.generic):
            return {"$": "np", "a": self.array(np.asarray(o))}
        if isinstance(o, bytes):
            return {"$": "bytes", "hex": o.hex()}
        if isinstance(o, slice):
            return {"$": "slice", "v": [self.node(o.start), self.node(o.stop), self.node(o.step)]}
        if isinstance(o, list | tuple | set | frozenset) and type(o) in (list, tuple, set, frozenset):
            return {"$": type(o).__name__, "v": [self.node(v) for v in o]}
        if _is_namedtuple(o):
            return {"$": "ntuple", "cls": _qualname(type(o)), "v": [self.node(v) for v in o]}
        if isinstance(o, dict) and type(o) in (dict, collections.OrderedDict, collections.defaultdict):
            kind = (
                "odict"
                if type(o) is collections.OrderedDict
                else "ddict"
                if type(o) is collections.defaultdict
                else "dict"
            )
            if kind == "ddict" and o.default_factory not in (dict, list, int, float):  # type: ignore[attr-defined]
                raise DataTreeError("a defaultdict with another factory than dict/list/int/float cannot be saved")
            items = [[self.node(k), self.node(v)] for k, v in o.items()]
            out: dict[str, Any] = {"$": kind, "v": items}
            if kind == "ddict":
                out["factory"] = o.default_factory.__name__  # type: ignore[attr-defined]
            return out
        if isinstance(o, np.random.Generator):
            return {"$": "rng", "bitgen": type(o.bit_generator).__name__, "state": self.node(o.bit_generator.state)}
        import scipy.sparse as sp

        if sp.issparse(o):
            m = o.tocsr() if o.format not in ("csr", "csc") else o
            return {
                "$": "sparse",
                "fmt": m.format,
                "matrix": not isinstance(o, sp.sparray),
                "shape": list(m.shape),
                "data": self.array(m.data),
                "indices": self.array(m.indices),
                "indptr": self.array(m.indptr),
            }
        if torch is not None:
            if isinstance(o, torch.Tensor):
                if type(o) not in (torch.Tensor, torch.nn.Parameter) or o.device.type != "cpu":
                    raise DataTreeError(f"a {type(o).__name__} on {o.device} cannot be saved as data")
                dtype = str(o.dtype).removeprefix("torch.")
                data = o.detach()
                arr = data.to(torch.float32).numpy() if dtype == "bfloat16" else data.numpy()
                return {
                    "$": "tensor",
                    "a": self.array(arr),
                    "dtype": dtype,
                    "grad": bool(o.requires_grad),
                    "param": isinstance(o, torch.nn.Parameter),
                }
            if isinstance(o, torch.dtype):
                return {"$": "tdtype", "v": str(o).removeprefix("torch.")}
            if isinstance(o, torch.device):
                return {"$": "tdevice", "v": str(o)}
            if isinstance(o, torch.Size):
                return {"$": "tsize", "v": [int(x) for x in o]}
        if _is_function(o):
            return {"$": "fn", "name": _qualname(o)}
        if _not_data(o):
            raise DataTreeError(f"{type(o).__name__} {o!r:.60} cannot be saved as data")
        return self._object(o, torch)

    def _object(self, o: Any, torch: Any) -> dict[str, Any]:
        state = o.__getstate__()
        if torch is not None and isinstance(o, torch.nn.Module | torch.optim.Optimizer) and isinstance(state, dict):
            state = _without_hooks(state)
        if not isinstance(state, dict | tuple) and state is not None:
            raise DataTreeError(f"{_qualname(type(o))} has a state that cannot be saved as data")
        return {"$": "obj", "cls": _qualname(type(o)), "state": self.node(state)}


def _is_function(o: Any) -> bool:
    import types

    return isinstance(o, types.FunctionType | types.BuiltinFunctionType) and "<" not in o.__qualname__


def _is_namedtuple(o: Any) -> bool:
    return isinstance(o, tuple) and isinstance(getattr(type(o), "_fields", None), tuple)


def _not_data(o: Any) -> bool:
    """Callables and handles that are no data (bound methods, classes, modules, weak references, generators)."""
    import types
    import weakref

    return (
        isinstance(o, type | types.MethodType | types.ModuleType | types.GeneratorType | weakref.ref)
        or (callable(o) and not hasattr(type(o), "__getstate__"))
        or type(o).__module__ in ("builtins", "functools", "io", "_io", "threading", "_thread")
    )


def _special(o: Any) -> bool:
    """Values :class:`_Encoder` records by kind rather than as objects (arrays, tensors, generators, ...)."""
    import scipy.sparse as sp

    if isinstance(o, np.ndarray | np.generic | bytes | slice | np.random.Generator) or sp.issparse(o):
        return True
    torch = _torch()
    return torch is not None and isinstance(o, torch.Tensor | torch.dtype | torch.device | torch.Size)


def encode(obj: Any) -> tuple[Any, list[np.ndarray]]:
    """``(tree, arrays)`` of ``obj``: a JSON-able tree and the arrays it refers to by index."""
    enc = _Encoder()
    return enc.node(obj), enc.arrays


# ----------------------------------------------------------------------------------------------------- decoding
def object_table(*roots: Any, extra: Iterable[Any] = ()) -> dict[str, Any]:
    """``"module:qualname" -> class or function`` of every object found in ``roots`` (walked as :func:`encode`
    walks them), plus ``extra``: the only names :func:`decode` may resolve."""
    table: dict[str, Any] = {_qualname(x): x for x in extra}
    enc = _Encoder()
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        o = stack.pop()
        if id(o) in seen or o is None or isinstance(o, bool | int | float | str | bytes | np.ndarray | np.generic):
            continue
        seen.add(id(o))
        enc.keep.append(o)
        if isinstance(o, dict):
            stack += [*o.keys(), *o.values()]
        elif isinstance(o, list | tuple | set | frozenset):
            if _is_namedtuple(o):
                table[_qualname(type(o))] = type(o)
            stack += list(o)
        elif _is_function(o):
            table[_qualname(o)] = o
        elif not _special(o) and not _not_data(o):
            try:
                node = enc._object(o, _torch())
            except (DataTreeError, TypeError):
                continue
            table[node["cls"]] = type(o)
            state = o.__getstate__()
            stack.append(_without_hooks(state) if isinstance(state, dict) else state)
    return table


class _Decoder:
    def __init__(self, arrays: Mapping[str, np.ndarray], table: Mapping[str, Any]) -> None:
        self.arrays, self.table, self.memo = arrays, table, {}  # type: ignore[var-annotated]

    def array(self, i: Any) -> np.ndarray:
        try:
            return self.arrays[f"a{int(i)}"]
        except (KeyError, TypeError, ValueError):
            raise DataTreeError(f"array {i!r} is missing") from None

    def node(self, n: Any) -> Any:
        if n is None or isinstance(n, bool | int | float | str):
            return n
        if not isinstance(n, dict) or not isinstance(n.get("$"), str):
            raise DataTreeError(f"malformed node {str(n)[:60]!r}")
        kind = n["$"]
        if kind == "f":
            if n.get("v") not in ("nan", "inf", "-inf"):
                raise DataTreeError("malformed float node")
            return float(n["v"])
        if kind == "ref":
            if n.get("id") not in self.memo:
                raise DataTreeError(f"reference to unknown node {n.get('id')!r}")
            return self.memo[n["id"]]
        handler = _KINDS.get(kind)
        if handler is None:
            raise DataTreeError(f"unknown node kind {kind!r}")
        return handler(self, n)

    def keep(self, n: dict[str, Any], value: Any) -> Any:
        ident = n.get("id")
        if not isinstance(ident, int) or ident in self.memo:
            raise DataTreeError("a node without a fresh id")
        self.memo[ident] = value
        return value

    def items(self, n: dict[str, Any]) -> list[Any]:
        v = n.get("v")
        if not isinstance(v, list):
            raise DataTreeError(f"malformed {n['$']} node")
        return v


def _dec_nd(d: _Decoder, n: dict[str, Any]) -> Any:
    return d.keep(n, d.array(n.get("a")))


def _dec_np(d: _Decoder, n: dict[str, Any]) -> Any:
    a = d.array(n.get("a"))
    if a.ndim != 0:
        raise DataTreeError("a numpy scalar node holds an array")
    return d.keep(n, a[()])


def _dec_bytes(d: _Decoder, n: dict[str, Any]) -> Any:
    try:
        return d.keep(n, bytes.fromhex(n["hex"]))
    except (KeyError, TypeError, ValueError):
        raise DataTreeError("malformed bytes node") from None


def _dec_slice(d: _Decoder, n: dict[str, Any]) -> Any:
    v = [d.node(x) for x in d.items(n)]
    if len(v) != 3 or not all(x is None or isinstance(x, int) for x in v):
        raise DataTreeError("malformed slice node")
    return d.keep(n, slice(*v))


def _dec_seq(d: _Decoder, n: dict[str, Any]) -> Any:
    if n["$"] == "list":
        out: list[Any] = d.keep(n, [])
        out.extend(d.node(x) for x in d.items(n))
        return out
    vals = [d.node(x) for x in d.items(n)]
    try:
        return d.keep(n, {"tuple": tuple, "set": set, "frozenset": frozenset}[n["$"]](vals))
    except TypeError:
        raise DataTreeError("an unhashable set member") from None


def _dec_ntuple(d: _Decoder, n: dict[str, Any]) -> Any:
    cls = d.table.get(n.get("cls"))  # type: ignore[arg-type]
    if not (isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)):
        raise DataTreeError(f"named tuple {n.get('cls')!r} is not one this run uses")
    vals = [d.node(x) for x in d.items(n)]
    if len(vals) != len(cls._fields):  # type: ignore[attr-defined]
        raise DataTreeError(f"{n.get('cls')!r} takes {len(cls._fields)} fields, got {len(vals)}")  # type: ignore[attr-defined]
    return d.keep(n, cls(*vals))


def _dec_dict(d: _Decoder, n: dict[str, Any]) -> Any:
    if n["$"] == "ddict":
        factory = {"dict": dict, "list": list, "int": int, "float": float}.get(n.get("factory"))  # type: ignore[arg-type]
        if factory is None:
            raise DataTreeError("malformed defaultdict node")
        out: dict[Any, Any] = d.keep(n, collections.defaultdict(factory))
    else:
        out = d.keep(n, {} if n["$"] == "dict" else collections.OrderedDict())
    for kv in d.items(n):
        if not isinstance(kv, list) or len(kv) != 2:
            raise DataTreeError("malformed dict item")
        try:
            out[d.node(kv[0])] = d.node(kv[1])
        except TypeError:
            raise DataTreeError("an unhashable dict key") from None
    return out


def _dec_rng(d: _Decoder, n: dict[str, Any]) -> Any:
    bitgens = {"PCG64": np.random.PCG64, "PCG64DXSM": np.random.PCG64DXSM, "MT19937": np.random.MT19937,
               "Philox": np.random.Philox, "SFC64": np.random.SFC64}  # fmt: skip
    cls = bitgens.get(n.get("bitgen"))  # type: ignore[arg-type]
    if cls is None:
        raise DataTreeError(f"unknown bit generator {n.get('bitgen')!r}")
    bg = cls()
    g = d.keep(n, np.random.Generator(bg))
    try:
        bg.state = d.node(n.get("state"))
    except (TypeError, ValueError, KeyError) as exc:
        raise DataTreeError(f"malformed random generator state ({exc})") from None
    return g


def _dec_sparse(d: _Decoder, n: dict[str, Any]) -> Any:
    import scipy.sparse as sp

    fmt = n.get("fmt")
    if fmt not in ("csr", "csc"):
        raise DataTreeError(f"unknown sparse format {fmt!r}")
    cls = {("csr", True): sp.csr_matrix, ("csc", True): sp.csc_matrix, ("csr", False): sp.csr_array,
           ("csc", False): sp.csc_array}[(fmt, bool(n.get("matrix")))]  # fmt: skip
    try:
        m = cls((d.array(n.get("data")), d.array(n.get("indices")), d.array(n.get("indptr"))), shape=tuple(n["shape"]))
        m.check_format(full_check=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataTreeError(f"malformed sparse matrix ({exc})") from None
    return d.keep(n, m)


def _dec_tensor(d: _Decoder, n: dict[str, Any]) -> Any:
    torch = _torch()
    if torch is None or n.get("dtype") not in _TORCH_DTYPES:
        raise DataTreeError(f"unknown tensor dtype {n.get('dtype')!r}")
    t = torch.from_numpy(np.array(d.array(n.get("a")), copy=True)).to(getattr(torch, n["dtype"]))
    if n.get("param"):
        t = torch.nn.Parameter(t, requires_grad=bool(n.get("grad")))
    elif n.get("grad"):
        t.requires_grad_(True)
    return d.keep(n, t)


def _dec_torch_value(d: _Decoder, n: dict[str, Any]) -> Any:
    torch = _torch()
    if torch is None:
        raise DataTreeError("a torch value, and torch is not in use")
    v = n.get("v")
    if n["$"] == "tdtype" and v in _TORCH_DTYPES:
        return d.keep(n, getattr(torch, v))
    if n["$"] == "tdevice" and v == "cpu":
        return d.keep(n, torch.device("cpu"))
    if n["$"] == "tsize" and isinstance(v, list) and all(isinstance(x, int) and x >= 0 for x in v):
        return d.keep(n, torch.Size(v))
    raise DataTreeError(f"malformed {n['$']} node")


def _dec_fn(d: _Decoder, n: dict[str, Any]) -> Any:
    fn = d.table.get(n.get("name"))  # type: ignore[arg-type]
    if fn is None or not _is_function(fn):
        raise DataTreeError(f"function {n.get('name')!r} is not one this run uses")
    return d.keep(n, fn)


def _dec_obj(d: _Decoder, n: dict[str, Any]) -> Any:
    cls = d.table.get(n.get("cls"))  # type: ignore[arg-type]
    if not isinstance(cls, type):
        raise DataTreeError(f"class {n.get('cls')!r} is not one this run uses")
    try:
        obj = d.keep(n, cls.__new__(cls))  # type: ignore[call-overload]  # as pickle's copyreg.__newobj__
    except TypeError as exc:
        raise DataTreeError(f"class {n.get('cls')!r} cannot be rebuilt from data ({exc})") from None
    state = d.node(n.get("state"))
    try:
        if getattr(cls, "__setstate__", None) is not None:
            obj.__setstate__(state)
        elif isinstance(state, dict):
            obj.__dict__.update(state)
        elif isinstance(state, tuple) and len(state) == 2:
            if state[0]:
                obj.__dict__.update(state[0])
            for k, v in (state[1] or {}).items():
                object.__setattr__(obj, k, v)
        elif state is not None:
            raise DataTreeError(f"malformed state of {n.get('cls')!r}")
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        raise DataTreeError(f"state of {n.get('cls')!r} does not fit its class ({exc})") from None
    return obj


_KINDS: dict[str, Callable[[_Decoder, dict[str, Any]], Any]] = {
    "nd": _dec_nd,
    "np": _dec_np,
    "bytes": _dec_bytes,
    "slice": _dec_slice,
    "list": _dec_seq,
    "tuple": _dec_seq,
    "set": _dec_seq,
    "frozenset": _dec_seq,
    "ntuple": _dec_ntuple,
    "dict": _dec_dict,
    "odict": _dec_dict,
    "ddict": _dec_dict,
    "rng": _dec_rng,
    "sparse": _dec_sparse,
    "tensor": _dec_tensor,
    "tdtype": _dec_torch_value,
    "tdevice": _dec_torch_value,
    "tsize": _dec_torch_value,
    "fn": _dec_fn,
    "obj": _dec_obj,
}


def decode(tree: Any, arrays: Mapping[str, np.ndarray], table: Mapping[str, Any] | None = None) -> Any:
    """The object tree of :func:`encode`; classes and functions resolve only through ``table``
    (:func:`object_table`; default: none).  Raises :class:`DataTreeError`."""
    try:
        return _Decoder(arrays, table or {}).node(tree)
    except RecursionError:
        raise DataTreeError("the tree is nested too deeply") from None
