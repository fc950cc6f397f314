"""``CapturedStep``: run a step eagerly, record its launches, replay them."""
from __future__ import annotations

import gc
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from .. import _raw
from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..optim._lr_base import scheduler_states
from ._guards import StateGuard, watch
from ._recorder import Recorder, Recording, replay

__all__ = ["CapturedStep", "capture"]


def _flatten(out: Any, tensors: list[Tensor]) -> Any:
    """The structure of ``out`` with each tensor replaced by its position in ``tensors``."""
    if isinstance(out, Tensor):
        tensors.append(out)
        return ("T", len(tensors) - 1)
    if isinstance(out, (tuple, list)):
        return (type(out), [_flatten(o, tensors) for o in out])
    if isinstance(out, dict):
        return (dict, {k: _flatten(v, tensors) for k, v in out.items()})
    if out is None or isinstance(out, (bool, int, float, str)):
        return ("C", out)
    raise TypeError(f"capture: the step returned a {type(out).__name__}; a captured step may "
                    "return tensors, numbers, None and tuples, lists or dicts of them")


def _build(spec: Any, tensors: list[Tensor]) -> Any:
    kind, v = spec
    if kind == "T":
        return tensors[v]
    if kind == "C":
        return v
    if kind is dict:
        return {k: _build(s, tensors) for k, s in v.items()}
    return kind(_build(s, tensors) for s in v)


def _copy(t: Tensor) -> Tensor:
    """A new tensor with ``t``'s values, no history (the output handed to the caller)."""
    out = _raw.new_on(t._storage, t._v.shape, t._v.dtype)
    t._storage.backend.copy(t._v, out._v)
    return out


class CapturedStep:
    """A step function whose backend launches are recorded once and then replayed.

    Call it like ``fn`` with the same tensor arguments each time (new data, same shape, dtype and
    device). Call 1 runs ``fn`` eagerly (warm-up: optimizer state, caches). Calls 2 and 3 run it
    eagerly while recording every backend launch; if both recordings are the same step (same
    launches, same buffers, same scalars), later calls copy the new inputs into the recorded
    input buffers and replay the launches: no Python dispatch, no autograd graph, no allocation.

    A step that cannot be replayed correctly runs eagerly instead, and the reason is given once
    with a :class:`UserWarning` and kept in :attr:`last_fallback`: a host read inside the step, a
    different launch sequence or scalar from one step to the next (data-dependent control flow,
    a Python step count, an LR schedule), a tensor made in one step that outlives the next, an
    input changed in place, inputs of another shape, dtype or device (or strided), a change of
    grad mode, hooks added or removed, parameters or buffers replaced, a module's
    ``train()``/``eval()``, or an optimizer hyper-parameter changed. Changes of modules and
    optimizers make it record again; a failed recording makes it run eagerly from then on
    (:meth:`reset` starts over).

    Outputs of recorded and replayed calls are new tensors (copies, without autograd history),
    so they stay valid after the next call; warm-up and eager fallbacks return ``fn``'s own
    result. The recorded buffers (the step's temporaries, those with disjoint lifetimes sharing
    memory) stay allocated between calls; :meth:`reset` or dropping the object frees them.
    """

    def __init__(self, fn: Callable[..., Any], *, warmup: int = 1) -> None:
        if not callable(fn):
            raise TypeError(f"capture() expects a callable, got {type(fn).__name__}")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise ValueError(f"capture(): warmup must be an int >= 0, got {warmup!r}")
        self.fn = fn
        self.warmup = warmup
        self.reset()

    # ------------------------------------------------------------------- state
    def reset(self) -> None:
        """Forget the recording (freeing its buffers) and start over with warm-up calls."""
        self.calls = 0
        self.replays = 0
        self.fallbacks = 0
        self.last_fallback: str | None = None
        self.disabled: str | None = None
        self._warned: set[str] = set()
        self._drop()
        self._pending = self.warmup

    def _drop(self) -> None:
        self._rec: Recording | None = None
        self._guard: StateGuard | None = None
        self._inputs: list[Tensor] = []
        self._key: Any = None
        self._outputs: list[Tensor] = []
        self._spec: Any = None
        self._first: tuple[list[Any], list[Any], list[Any], Any, Any] | None = None

    @property
    def captured(self) -> bool:
        """Whether calls now replay a recording."""
        return self._rec is not None

    @property
    def stats(self) -> dict[str, Any]:
        """``captured``, ``calls``, ``replays``, ``fallbacks`` and ``last_fallback``."""
        return {"captured": self.captured, "calls": self.calls, "replays": self.replays,
                "fallbacks": self.fallbacks, "last_fallback": self.last_fallback}

    def __repr__(self) -> str:
        return (f"CapturedStep({getattr(self.fn, '__qualname__', self.fn)!r}, "
                f"captured={self.captured}, replays={self.replays}, fallbacks={self.fallbacks})")

    def _fallback(self, reason: str, disable: bool = False) -> None:
        self.fallbacks += 1
        self.last_fallback = reason
        if disable:
            self.disabled = reason
            self._drop()
        if reason not in self._warned:
            self._warned.add(reason)
            then = "; running it eagerly from now on" if disable else "; running it eagerly"
            warnings.warn(f"captured step {getattr(self.fn, '__qualname__', '')!r} not "
                          f"replayed: {reason}{then}", UserWarning, stacklevel=3)

    # ------------------------------------------------------------------- calls
    @staticmethod
    def _input_key(args: tuple, kwargs: dict) -> Any:
        key: list[tuple[Any, ...]] = []
        for a in (*args, *kwargs.values()):
            if isinstance(a, Tensor):
                key.append(("T", a._v.shape, a._v.dtype, a.device))
            elif a is None or isinstance(a, (bool, int, float, str)):
                key.append(("C", type(a), a))  # a number the step may turn into launch scalars
            else:
                key.append(("O", id(a)))  # any other object: the same one each call
        return (tuple(key), tuple(kwargs), is_grad_enabled())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.disabled is not None:
            return self.fn(*args, **kwargs)
        for a in (*args, *kwargs.values()):
            if isinstance(a, Tensor) and a.requires_grad:
                self._fallback("an input tensor requires grad", disable=True)
                return self.fn(*args, **kwargs)
        if self._pending:
            self._pending -= 1
            return self.fn(*args, **kwargs)
        for i, a in enumerate((*args, *kwargs.values())):
            if isinstance(a, Tensor) and not a._v.is_contiguous():
                # the recorded input buffers are contiguous; a strided input can take other
                # kernels eagerly (another summation order), so it is not replayed
                self._fallback(f"input {i} is not contiguous")
                return self.fn(*args, **kwargs)
        key = self._input_key(args, kwargs)
        if self._rec is not None:
            if key != self._key:
                self._fallback(self._key_change(key))
                return self.fn(*args, **kwargs)
            assert self._guard is not None
            why = self._guard.changed()
            if why is None:
                return self._replay(args, kwargs)
            self._fallback(why + " (recording again)")
            self._drop()
        return self._record(key, args, kwargs)

    def _key_change(self, key: Any) -> str:
        if key[2] != self._key[2]:
            return "grad mode changed (torch.no_grad / enable_grad around the call)"
        if key[1] != self._key[1]:
            return "the keyword arguments changed"
        for i, (a, b) in enumerate(zip(key[0], self._key[0])):
            if a != b:
                if a[0] == "T" and b[0] == "T":
                    for j, what in enumerate(("shape", "dtype", "device"), 1):
                        if a[j] != b[j]:
                            return f"the {what} of input {i} changed ({b[j]} -> {a[j]})"
                return f"argument {i} changed"
        return "the number of arguments changed"

    def _static_args(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The arguments with each tensor replaced by the recorded input buffer holding its data
        (made on the first recording call)."""
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        if not self._inputs:
            self._inputs = [_raw.new_on(t._storage, t._v.shape, t._v.dtype) for t in tensors]
        for src, dst in zip(tensors, self._inputs):
            dst._storage.backend.copy(src._v, dst._v)
        it = iter(self._inputs)
        new_args = tuple(next(it) if isinstance(a, Tensor) else a for a in args)
        new_kwargs = {k: next(it) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
        return new_args, new_kwargs

    def _record(self, key: Any, args: tuple, kwargs: dict) -> Any:
        if self._first is not None and key != self._key:
            self._first = None  # the inputs changed between the two recordings: start again
            self._inputs = []
        self._key = key
        sargs, skwargs = self._static_args(args, kwargs)
        versions = [t._vc[0] for t in self._inputs]
        # what the step's own Python changes (an LR scheduler stepped inside it, a hand-set lr,
        # train()/eval()) a replay would skip: compare the state before and after the call, for
        # the modules and optimizers the first recording saw, and every LR scheduler
        state = StateGuard(self._first[4], keep_grads=False) if self._first is not None else None
        schedules = scheduler_states()
        rec_ = Recorder()
        with watch() as seen, rec_:
            out = self.fn(*sargs, **skwargs)
        rec = rec_.recording
        if rec.violation is None:
            rec.violation = self._python_side_effect(state, schedules)
        if versions != [t._vc[0] for t in self._inputs]:
            # the step got copies: hand the change on to the caller's tensors, as eagerly
            rec.violation = rec.violation or "the step changes an input tensor in place"
            originals = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
            for src, mine, before in zip(originals, self._inputs, versions):
                if mine._vc[0] != before:
                    _raw.copy_(src, mine)
        tensors: list[Tensor] = []
        try:
            spec = _flatten(out, tensors)
        except TypeError as e:
            self._fallback(str(e), disable=True)
            return out
        result = _build(spec, [_copy(t) for t in tensors])
        if rec.violation is not None:
            self._fallback(rec.violation, disable=True)
            return result
        sig = rec.signature()
        if self._first is None:
            # the first recording: keep its signature (and the pre-existing buffers it names),
            # and weak references to its buffers, to compare with the next step
            self._first = (sig, rec.externals(), rec.refs, spec, seen)
            return result
        first_sig, _, refs, first_spec, _ = self._first
        self._first = None
        if sig != first_sig or spec[0] != first_spec[0]:
            self._fallback(self._diff(first_sig, sig), disable=True)
            return result
        del rec_, out
        gc.collect()
        # a buffer of the first recording still alive is a tensor kept across steps, unless an
        # allocation of this recording was handed that very buffer again (a caching allocator
        # such as the cpu backend's pool reuses a buffer only once nothing else holds it)
        reused = {id(b) for b in (r() for r in rec.refs if isinstance(r, weakref.ref))
                  if b is not None}
        if any(isinstance(r, weakref.ref) and (b := r()) is not None and id(b) not in reused
               for r in refs):
            self._fallback("a tensor made inside the step outlives the next step (kept in a "
                           "list, an attribute ...), which a replay would overwrite",
                           disable=True)
            return result
        # outputs without their autograd graph, which would keep the step's temporaries alive
        self._outputs = [t.detach() for t in tensors]
        del tensors
        rec.plan_memory()
        self._rec = rec
        self._guard = StateGuard(seen)
        self._spec = spec
        return result

    @staticmethod
    def _python_side_effect(before: StateGuard | None, schedules: dict[Any, str]) -> str | None:
        """Why the step cannot be replayed because its own Python changes state (``None``: it
        does not). A replay runs none of that Python, so the change would happen once, at
        recording, and never again: a schedule would stop, silently."""
        if any(repr(s.state_dict()) != v for s, v in schedules.items()):
            return ("an LR scheduler steps inside the step; a replay runs none of the step's "
                    "Python, so the schedule would stop: call scheduler.step() outside the "
                    "captured function")
        why = before.changed() if before is not None else None
        if why is not None:
            return (f"the step itself changes state a replay would not change ({why}: an LR "
                    "schedule or a hand-set hyper-parameter inside the step?); change it outside "
                    "the captured function")
        return None

    @staticmethod
    def _diff(a: list[Any], b: list[Any]) -> str:
        if len(a) != len(b):
            return (f"the step made {len(b) - 1} backend launches where the previous step made "
                    f"{len(a) - 1} (data-dependent control flow?)")
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                if i == len(a) - 1:
                    return "the step drew a different amount of random numbers than the last one"
                if x[0] != y[0]:
                    return (f"launch {i} is {y[0]!r} where the previous step launched {x[0]!r} "
                            "(data-dependent control flow?)")
                if any(e[0] == "f" for e in _leaves(y[1])):
                    return (f"launch {i} ({y[0]!r}) got other arguments than in the previous "
                            "step: a scalar that changes every step (a Python step count, as in "
                            "Adam without capturable=True; an LR schedule) or other buffers")
                return f"launch {i} ({y[0]!r}) got other arguments than in the previous step"
        return "the step's outputs changed"

    def _replay(self, args: tuple, kwargs: dict) -> Any:
        assert self._rec is not None and self._guard is not None
        inputs = self._inputs
        i = 0
        for a in (*args, *kwargs.values()):
            if isinstance(a, Tensor):
                dst = inputs[i]
                dst._storage.backend.copy(a._v, dst._v)
                i += 1
        replay(self._rec)
        self._guard.restore_grads()
        self.replays += 1
        return _build(self._spec, [_copy(t) for t in self._outputs])


def _leaves(x: Any) -> list[Any]:
    out = []
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) and not isinstance(
            x[1], tuple):
        return [x]
    if isinstance(x, tuple):
        for e in x:
            out += _leaves(e)
    return out


def capture(fn: Callable[..., Any] | None = None, *, warmup: int = 1) -> Any:
    """Capture a training step (``torch.cuda.graphs``' role): ``step = capture(train_step)``,
    then ``step(x, y)`` as ``train_step(x, y)``; usable as ``@capture``. See
    :class:`CapturedStep` for what is recorded, when it falls back, outputs and memory."""
    if fn is None:
        return lambda f: CapturedStep(f, warmup=warmup)
    return CapturedStep(fn, warmup=warmup)
