"""Constraints: the set of values a parameter or a sample may take (``torch.distributions.constraints``).

A constraint's ``check(value)`` returns a boolean tensor, one entry per event (the trailing
``event_dim`` dimensions are reduced with ``all``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._creation import from_host, full
from .._dtype import bool as bool_
from .._ops.diagonal import diagonal
from .._ops.elementwise import eq, ge, gt, le, logical_and, logical_or, lt, remainder
from .._ops.joining import cat as _cat_tensors
from .._ops.joining import stack as _stack_tensors
from .._ops.joining import tril
from .._ops.reduction import all as _all
from .._ops.reduction import sum as _sum
from .._tensor import Tensor

__all__ = ["Constraint", "boolean", "real", "real_vector", "positive", "nonnegative",
           "greater_than", "greater_than_eq", "less_than", "interval", "half_open_interval",
           "unit_interval", "simplex", "integer_interval", "nonnegative_integer",
           "positive_integer", "dependent", "dependent_property", "is_dependent", "independent",
           "one_hot", "multinomial", "cat", "stack", "lower_cholesky", "lower_triangular",
           "positive_definite", "positive_semidefinite", "square", "symmetric",
           "corr_cholesky", "MixtureSameFamilyConstraint"]


def _reduce_event(ok: Tensor, event_dim: int) -> Tensor:
    for _ in range(event_dim):
        ok = _all(ok, -1)
    return ok


class Constraint:
    """A region over which a variable is valid."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """A byte tensor of ``sample_shape + batch_shape`` saying whether each event is valid."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """Placeholder for variables whose support depends on other variables."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return bool(self._is_discrete)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return int(self._event_dim)

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented
                 ) -> _Dependent:
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a dependent (placeholder) constraint."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property of a distribution whose value is a constraint depending on its parameters."""

    def __init__(self, fn: Any = None, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Any) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """Reinterprets ``reinterpreted_batch_ndims`` batch dimensions of a constraint as event ones."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        return _reduce_event(self.base_constraint.check(value), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"IndependentConstraint({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class MixtureSameFamilyConstraint(Constraint):
    """The support of a mixture: ``value`` checked against every component's support (the
    component dimension is the rightmost batch one) and required valid for all of them."""

    def __init__(self, base_constraint: Constraint) -> None:
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        if value.dim() < self.event_dim:
            raise ValueError(f"value has {value.dim()} dimensions but the constraint's event "
                             f"has {self.event_dim}")
        keep = value.dim() - self.event_dim
        return _all(result.reshape(tuple(result.shape[:keep]) + (-1,)), -1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return logical_or(eq(value, 0), eq(value, 1))


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        is_bool = _all(logical_or(eq(value, 0), eq(value, 1)), -1)
        return logical_and(is_bool, eq(_sum(value, -1), 1))


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return logical_and(logical_and(eq(remainder(value, 1), 0), ge(value, self.lower_bound)),
                           le(value, self.upper_bound))

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return logical_and(eq(remainder(value, 1), 0), ge(value, self.lower_bound))

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return eq(value, value)  # False only for NaN (PyTorch: inf is real)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return gt(value, self.lower_bound)

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return ge(value, self.lower_bound)

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return lt(value, self.upper_bound)

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return logical_and(ge(value, self.lower_bound), le(value, self.upper_bound))

    def __repr__(self) -> str:
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return logical_and(ge(value, self.lower_bound), lt(value, self.upper_bound))

    def __repr__(self) -> str:
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        nonneg = _all(ge(value, 0), -1)
        s = _sum(value, -1)
        return logical_and(nonneg, lt(abs(s - 1), 1e-6))


class _Multinomial(Constraint):
    """Non-negative counts summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, x: Tensor) -> Tensor:
        return logical_and(_all(ge(x, 0), -1), le(_sum(x, -1), self.upper_bound))

    def __repr__(self) -> str:
        return f"Multinomial(upper_bound={self.upper_bound})"


class _Cat(Constraint):
    """Pieces of ``dim``, of lengths ``lengths``, each checked by its own constraint."""

    def __init__(self, cseq: Any, dim: int = 0, lengths: Any = None) -> None:
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError("cat: one length is needed for each constraint")
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"cat: dim {self.dim} out of range for a value of "
                             f"{value.dim()} dimensions")
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return _cat_tensors(checks, self.dim)


class _Stack(Constraint):
    """Slices along ``dim``, each checked by its own constraint."""

    def __init__(self, cseq: Any, dim: int = 0) -> None:
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value: Tensor) -> Tensor:
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"stack: dim {self.dim} out of range for a value of "
                             f"{value.dim()} dimensions")
        if value.size(self.dim) != len(self.cseq):
            raise ValueError(f"stack: expected size {len(self.cseq)} at dim {self.dim}, got "
                             f"{value.size(self.dim)}")
        vs = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return _stack_tensors([c.check(v) for v, c in zip(vs, self.cseq)], self.dim)


def _all_matrix(ok: Tensor) -> Tensor:
    """``ok`` of shape ``(..., n, m)`` reduced to ``(...)``."""
    return _all(_all(ok, -1), -1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _all_matrix(eq(tril(value), value))


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        positive_diagonal = _all(gt(diagonal(value, 0, -2, -1), 0), -1)
        return logical_and(_all_matrix(eq(tril(value), value)), positive_diagonal)


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        ok = value.shape[-2] == value.shape[-1]
        return full(tuple(value.shape[:-2]), ok, dtype=bool_, device=value.device)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        square = super().check(value)
        if not bool(_all(square).item()):
            return square
        return _all_matrix(lt(abs(value - value.mT), 1e-6))


def _host_mask(ok: Any, value: Tensor) -> Tensor:
    """A boolean mask computed on the host, on ``value``'s device; a single matrix gives a 0-d
    mask (``np.ascontiguousarray`` would make it 1-d)."""
    return from_host(np.array(ok, dtype=bool), device=value.device)


class _PositiveDefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        sym = super().check(value)
        if not bool(_all(sym).item()):
            return sym
        # a validity check needs no gradient: the eigenvalues are found on the host
        mats = np.asarray(value.detach().numpy(force=True), dtype=np.float64)
        ok = np.linalg.eigvalsh(mats).min(-1) > 0 if mats.size else np.ones(mats.shape[:-2], bool)
        return _host_mask(ok, value)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        sym = super().check(value)
        if not bool(_all(sym).item()):
            return sym
        mats = np.asarray(value.detach().numpy(force=True), dtype=np.float64)
        ok = np.linalg.eigvalsh(mats).min(-1) >= 0 if mats.size else np.ones(mats.shape[:-2],
                                                                            bool)
        return _host_mask(ok, value)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: positive diagonal, unit-norm rows."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        eps = 1.1920928955078125e-07 if value.dtype.itemsize == 4 else 2.220446049250313e-16
        tol = eps * value.shape[-1] * 10
        row_norm = (value.detach() ** 2).sum(-1).sqrt()
        unit_row_norm = _all(le(abs(row_norm - 1.0), tol), -1)
        return logical_and(lower_cholesky.check(value), unit_row_norm)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = _IndependentConstraint(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
multinomial = _Multinomial
cat = _Cat
stack = _Stack
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
square = _Square()
symmetric = _Symmetric()
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()
corr_cholesky = _CorrCholesky()
