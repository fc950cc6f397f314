"""``torch.nn.utils.parametrize``: make a module's parameter or buffer a computed value.

After ``register_parametrization(module, "weight", P)`` the tensor that was ``module.weight``
lives at ``module.parametrizations.weight.original`` (``original0``, ``original1``... when
``P.right_inverse`` splits it into several tensors), and ``module.weight`` is recomputed as
``P(original)`` on every read.

How it is wired here:

* each parametrized module gets a class of its own, ``Parametrized<Class>``, derived from its
  class on the first registration and dropped again when the last parametrization goes;
* on that class every parametrized name is a :class:`_ChainAttribute`, a data descriptor. A
  data descriptor of the class wins over ``Module.__getattr__`` on reads, and assigning a plain
  tensor goes through ``Module.__setattr__`` to ``object.__setattr__``, which hands it to the
  descriptor's ``__set__`` (and so to the chain's ``right_inverse``);
* the chain itself is a :class:`ParametrizationList` stored in the ``ModuleDict``
  ``module.parametrizations``, so its originals appear in ``state_dict`` and ``parameters``;
* :func:`cached` switches on a process-wide :class:`_ValueCache`.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from copy import deepcopy
from typing import Any

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_SERIALIZATION_MESSAGE = (
    "Serialization of parametrized modules is only supported through state_dict(). See:\n"
    "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
    "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

# the attribute of a generated class naming the class it was derived from
_BASE_CLASS_ATTR = "_pg_class_before_parametrization"


# ------------------------------------------------------------------------------------ caching
class _ValueCache:
    """Parametrized values computed inside :func:`cached` blocks, keyed by (module, name).

    ``depth`` counts the open blocks; values are kept while it is positive and forgotten when
    the outermost block closes."""

    def __init__(self) -> None:
        self.depth = 0
        self.values: dict[tuple[int, str], Tensor] = {}

    def enter(self) -> None:
        self.depth += 1

    def leave(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.values.clear()

    def compute(self, owner: Module, name: str, chain: ParametrizationList) -> Tensor:
        """``chain()``, reused from an earlier read of the same block when caching is on."""
        if self.depth == 0:
            return chain()
        key = (id(owner), name)
        found = self.values.get(key)
        if found is None:
            found = chain()
            self.values[key] = found
        return found


_VALUE_CACHE = _ValueCache()


@contextmanager
def cached() -> Iterator[None]:
    """Inside the block every parametrized tensor is computed at most once, on its first read,
    and that same tensor is returned by later reads; blocks may nest (the values are dropped
    when the outermost one exits)."""
    _VALUE_CACHE.enter()
    try:
        yield
    finally:
        _VALUE_CACHE.leave()


# ---------------------------------------------------------------------------- small helpers
def _attach(owner: Module, name: str, tensor: Tensor) -> None:
    """Register ``tensor`` on ``owner`` as a parameter when it is one, else as a buffer."""
    if isinstance(tensor, Parameter):
        owner.register_parameter(name, tensor)
    else:
        owner.register_buffer(name, tensor)


def _overwrite(target: Tensor, value: Tensor) -> None:
    """Make ``target`` hold ``value`` (shape included) while staying the same object."""
    target.set_(value)


def _inverse_or_same(parametrization: Module, value: Any) -> Any:
    """``parametrization.right_inverse(value)``; ``value`` unchanged when there is none or it
    raises ``NotImplementedError``."""
    inverse = getattr(parametrization, "right_inverse", None)
    if inverse is None:
        return value
    try:
        return inverse(value)
    except NotImplementedError:
        return value


def _first_problem(expected: Tensor, got: Tensor) -> str | None:
    """``"dtype"`` or ``"shape"`` when ``got`` differs from ``expected`` in it (dtype first)."""
    if got.dtype != expected.dtype:
        return "dtype"
    if got.shape != expected.shape:
        return "shape"
    return None


# ------------------------------------------------------------------------- the chain module
class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (applied first to last) together with the tensor(s)
    they start from: ``original``, or ``original0``, ``original1``... when the first
    parametrization's ``right_inverse`` returns a sequence.

    Built by :func:`register_parametrization`; ``original`` is run through the
    parametrizations' ``right_inverse`` (last first) to obtain the stored tensor(s)."""

    original: Tensor
    unsafe: bool
    is_tensor: bool
    ntensors: int

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False
                 ) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        before_shape, before_dtype = original.shape, original.dtype

        with no_grad():
            stored: Any = original
            for parametrization in reversed(list(self)):
                stored = _inverse_or_same(parametrization, stored)

        if isinstance(stored, Tensor):
            self._adopt_single(original, stored)
        elif isinstance(stored, Sequence):
            self._adopt_many(original, stored)
        else:
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(stored).__name__}")

        if not unsafe:
            self._check_forward_keeps(before_shape, before_dtype)

    def _adopt_single(self, original: Tensor, stored: Tensor) -> None:
        # the original object itself is kept (optimizers may already hold it), refilled
        for what in ("dtype", "device"):
            if getattr(original, what) != getattr(stored, what):
                raise ValueError(
                    f"When `right_inverse` outputs one tensor, it may not change the {what}.\n"
                    f"original.{what}: {getattr(original, what)}\n"
                    f"right_inverse(original).{what}: {getattr(stored, what)}")
        with no_grad():
            _overwrite(original, stored)
        self.is_tensor, self.ntensors = True, 1
        _attach(self, "original", original)

    def _adopt_many(self, original: Tensor, stored: Sequence[Any]) -> None:
        self.is_tensor, self.ntensors = False, len(stored)
        for index, piece in enumerate(stored):
            if not isinstance(piece, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                 "tensors (list, tuple...). Got element "
                                 f"{index} of the sequence with type {type(piece).__name__}.")
            # each piece inherits the original's kind (parameter or buffer) and requires_grad
            if isinstance(original, Parameter):
                piece = Parameter(piece, original.requires_grad)
            piece.requires_grad_(original.requires_grad)
            _attach(self, f"original{index}", piece)

    def _check_forward_keeps(self, shape: Any, dtype: Any) -> None:
        value = self()
        if not isinstance(value, Tensor):
            raise ValueError(f"A parametrization must return a tensor. Got "
                             f"{type(value).__name__}.")
        if value.dtype != dtype:
            raise ValueError(
                "Registering a parametrization may not change the dtype of the tensor, "
                "unless `unsafe` flag is enabled.\n"
                f"unparametrized dtype: {dtype}\n"
                f"parametrized dtype: {value.dtype}")
        if value.shape != shape:
            raise ValueError(
                "Registering a parametrization may not change the shape of the tensor, "
                "unless `unsafe` flag is enabled.\n"
                f"unparametrized shape: {shape}\n"
                f"parametrized shape: {value.shape}")

    def _originals(self) -> list[Tensor]:
        if self.is_tensor:
            return [self.original]
        return [getattr(self, f"original{i}") for i in range(self.ntensors)]

    def right_inverse(self, value: Tensor) -> None:
        """Refill the stored tensor(s) in place so that the chain's output becomes ``value``:
        every parametrization must have a ``right_inverse`` (applied last first)."""
        with no_grad():
            result: Any = value
            for parametrization in reversed(list(self)):
                inverse = getattr(parametrization, "right_inverse", None)
                if inverse is None:
                    raise RuntimeError(f"parametrization {type(parametrization).__name__} "
                                       "does not implement right_inverse.")
                result = inverse(result)
            if self.is_tensor:
                self._refill_single(result)
            else:
                self._refill_many(result)

    def _refill_single(self, result: Any) -> None:
        if not isinstance(result, Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got "
                             f"{type(result).__name__}")
        if result.dtype != self.original.dtype:
            raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                             f"{result.dtype} while `original` has dtype "
                             f"{self.original.dtype}")
        _overwrite(self.original, result)

    def _refill_many(self, result: Any) -> None:
        if not isinstance(result, Sequence):
            raise ValueError("'right_inverse' must return a sequence of tensors. "
                             f"Got {type(result).__name__}.")
        if len(result) != self.ntensors:
            raise ValueError("'right_inverse' must return a sequence of tensors of length "
                             f"{self.ntensors}. Got a sequence of length {len(result)}.")
        for index, (target, piece) in enumerate(zip(self._originals(), result)):
            if not isinstance(piece, Tensor):
                raise ValueError("'right_inverse' must return a sequence of tensors "
                                 "or reference-type opaques. Got element "
                                 f"{index} of type {type(piece).__name__}.")
            if target.dtype != piece.dtype:
                raise ValueError(f"Tensor {index} returned by `right_inverse` has dtype "
                                 f"{piece.dtype} while `original{index}` has dtype "
                                 f"{target.dtype}")
            _overwrite(target, piece)

    def forward(self) -> Tensor:
        """The parametrized tensor: the first parametrization takes the stored tensor(s), each
        following one the previous one's output."""
        steps = list(self)
        value = steps[0](*self._originals())
        for step in steps[1:]:
            value = step(value)
        return value


# ---------------------------------------------------------------- the per-module subclass
class _ChainAttribute:
    """Stands on a ``Parametrized<Class>`` for one parametrized tensor: reading runs the
    tensor's :class:`ParametrizationList` (through the :func:`cached` cache), assigning goes
    to its ``right_inverse``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, owner: Module | None, owner_type: type | None = None) -> Any:
        if owner is None:
            return self
        return _VALUE_CACHE.compute(owner, self.name, owner.parametrizations[self.name])

    def __set__(self, owner: Module, value: Tensor) -> None:
        owner.parametrizations[self.name].right_inverse(value)


def _refuse_pickling(self: Module) -> Any:
    raise RuntimeError(_SERIALIZATION_MESSAGE)


def _copy_parametrized(self: Module, memo: dict[int, Any]) -> Module:
    """``copy.deepcopy`` for generated classes: a new instance of the same generated class (so
    the copy keeps its own properties' class) with a deep copy of the instance dict."""
    done = memo.get(id(self))
    if done is not None:
        return done
    duplicate = type(self).__new__(type(self))
    memo[id(self)] = duplicate
    duplicate.__dict__.update(deepcopy(self.__dict__, memo))
    for klass in type(self).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(self, slot):
                object.__setattr__(duplicate, slot, deepcopy(getattr(self, slot), memo))
    return duplicate


def _give_own_class(module: Module) -> None:
    """Move ``module`` to a fresh subclass of its class, ``Parametrized<Class>``, to hold the
    descriptors of its parametrized tensors without touching other instances."""
    base = type(module)
    namespace: dict[str, Any] = {_BASE_CLASS_ATTR: base, "__getstate__": _refuse_pickling}
    if not hasattr(base, "__deepcopy__"):
        namespace["__deepcopy__"] = _copy_parametrized
    module.__class__ = type(f"Parametrized{base.__name__}", (base,), namespace)


def _restore_class(module: Module) -> None:
    module.__class__ = type_before_parametrizations(module)


# ----------------------------------------------------------------------- the public API
def _check_appended(module: Module, tensor_name: str, parametrization: Module) -> None:
    """The safety checks made when a parametrization is appended to an existing chain."""
    current = getattr(module, tensor_name)
    produced = parametrization(current)
    if not isinstance(produced, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got "
                         f"{type(produced).__name__}.")
    problem = _first_problem(current, produced)
    if problem is not None:
        raise ValueError(
            f"Registering a parametrization may not change the {problem} of the tensor, "
            "unless the `unsafe` flag is enabled.\n"
            f"module.{tensor_name}.{problem}: {getattr(current, problem)}\n"
            f"parametrization(module.{tensor_name}).{problem}: {getattr(produced, problem)}")
    inverse = getattr(parametrization, "right_inverse", None)
    if inverse is None:
        return
    try:
        back = inverse(produced)
    except NotImplementedError:
        return
    if not isinstance(back, Tensor):
        raise ValueError("parametrization.right_inverse must return a tensor. "
                         f"Got: {type(back).__name__}")
    problem = _first_problem(current, back)
    if problem is not None:
        raise ValueError(
            "The tensor returned by parametrization.right_inverse must have the "
            f"same {problem} as module.{tensor_name}, unless the `unsafe` flag is "
            f"enabled.\nmodule.{tensor_name}.{problem}: {getattr(current, problem)}\n"
            f"returned {problem}: {getattr(back, problem)}")


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Parametrize ``module.<tensor_name>`` by ``parametrization``.

    The name must be a parameter or a buffer of ``module``, or already parametrized, in which
    case ``parametrization`` is applied after the existing ones. Unless ``unsafe``, the
    parametrized tensor must keep its shape and dtype. Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe = chain.unsafe or unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    chain = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _give_own_class(module)
        module.parametrizations = ModuleDict()
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")
    setattr(type(module), tensor_name, _ChainAttribute(tensor_name))
    module.parametrizations[tensor_name] = chain
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization, or one on ``tensor_name`` when given."""
    chains = getattr(module, "parametrizations", None)
    if not isinstance(chains, ModuleDict):
        return False
    return len(chains) > 0 if tensor_name is None else tensor_name in chains


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True
                            ) -> Module:
    """Turn ``module.<tensor_name>`` back into a plain parameter (or buffer).

    It holds the current parametrized value when ``leave_parametrized`` (the default), else the
    stored original (only possible when the chain stores a single tensor). Returns
    ``module``, back to its own class once nothing on it is parametrized."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        restored: Tensor = chain.original
        if leave_parametrized:
            with no_grad():
                _overwrite(restored, getattr(module, tensor_name))
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        value = getattr(module, tensor_name)
        restored = Parameter(value) if value.requires_grad else value
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _attach(module, tensor_name, restored)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        _restore_class(module)
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before parametrizations were registered on it."""
    return type(module).__dict__.get(_BASE_CLASS_ATTR, type(module))


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Give ``to_module`` the parametrizations of ``from_module`` (those of every parametrized
    tensor, or of ``tensor_name`` only), sharing the same parametrization modules and stored
    tensors; a tensor ``to_module`` lacks is first created from ``from_module``'s value.
    Returns ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if source.is_tensor:
            target.original = source.original
        else:
            for index in range(source.ntensors):
                setattr(target, f"original{index}", getattr(source, f"original{index}"))
    return to_module
