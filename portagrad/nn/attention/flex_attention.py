"""``torch.nn.attention.flex_attention``: attention with a user ``score_mod`` and a ``BlockMask``.

PyTorch compiles ``score_mod``/``mask_mod`` into a fused kernel that skips masked blocks; its eager
path evaluates them over every (batch, head, query, key) position with ``vmap``. Here they are
evaluated once on broadcast index tensors (``b`` of shape ``(B, 1, 1, 1)``, ``h`` ``(1, H, 1, 1)``,
``q_idx`` ``(1, 1, Q, 1)``, ``kv_idx`` ``(1, 1, 1, KV)``), which gives the same values for the
element-wise functions these are written as, and the attention is the composed one of
:func:`~portagrad.nn.functional.scaled_dot_product_attention`, differentiable through ``score_mod``.
A :class:`BlockMask` holds the dense boolean mask (no block sparsity: every block is computed).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ... import _creation, _dtype
from ..._ops import elementwise, indexing, reduction
from ..._ops.special import isneginf
from ..._ops.matmul import matmul
from ..._tensor import Tensor

__all__ = ["AuxRequest", "AuxOutput", "BlockMask", "create_block_mask", "create_mask",
           "flex_attention", "and_masks", "or_masks", "noop_mask", "_score_mod_signature",
           "_mask_mod_signature",
           "_DEFAULT_SPARSE_BLOCK_SIZE"]

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]
_DEFAULT_SPARSE_BLOCK_SIZE = 128


@dataclass(frozen=True)
class AuxRequest:
    """Which extra outputs :func:`flex_attention` returns: each row's log-sum-exp of the scores
    (``lse``) and each row's largest score (``max_scores``)."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra outputs asked for by an :class:`AuxRequest` (``None`` where not asked)."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """The mask that keeps every position."""
    return batch.new_ones(size=(), dtype=_bool(), device=batch.device)


def _bool() -> Any:
    return _dtype.bool


def and_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """The mask keeping a position where every ``mask_mods`` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_ones((), dtype=_bool())
        for m in mask_mods:
            result = result & m(b, h, q_idx, kv_idx)
        return result
    return and_mask


def or_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """The mask keeping a position where some of ``mask_mods`` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = b.new_zeros((), dtype=_bool())
        for m in mask_mods:
            result = result | m(b, h, q_idx, kv_idx)
        return result
    return or_mask


def _indices(B: int, H: int, Q: int, KV: int, device: Any) -> tuple[Tensor, ...]:
    def ar(n: int, dim: int) -> Tensor:
        shape = [1, 1, 1, 1]
        shape[dim] = n
        return _creation.arange(n, device=device).reshape(shape)
    return ar(B, 0), ar(H, 1), ar(Q, 2), ar(KV, 3)


def create_mask(mod_fn: Callable[..., Tensor], B: int | None, H: int | None, Q_LEN: int,
                KV_LEN: int, device: Any = None) -> Tensor:
    """The dense ``(B, H, Q_LEN, KV_LEN)`` mask of a ``mask_mod`` (bool) or the scores of a
    ``score_mod`` applied to zeros; ``None`` for ``B``/``H`` means 1."""
    B, H = B or 1, H or 1
    b, h, q, kv = _indices(B, H, Q_LEN, KV_LEN, device)
    nargs = _arity(mod_fn)
    if nargs == 4:
        out = mod_fn(b, h, q, kv)
        return _expand(out, (B, H, Q_LEN, KV_LEN)).to(_bool())
    score = _creation.zeros((B, H, Q_LEN, KV_LEN), device=device)
    return _expand(mod_fn(score, b, h, q, kv), (B, H, Q_LEN, KV_LEN))


def _arity(fn: Callable[..., Any]) -> int:
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 4
    return sum(1 for p in params if p.default is p.empty
               and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _expand(t: Any, shape: tuple[int, ...]) -> Tensor:
    if not isinstance(t, Tensor):
        raise RuntimeError(f"flex_attention: a mask_mod/score_mod must return a tensor, got "
                           f"{type(t).__name__}")
    return t.expand(shape).contiguous()


class BlockMask:
    """The mask of :func:`flex_attention`: which (query, key) positions attend, per batch and
    head. ``mask_mod`` is kept (as in PyTorch); :meth:`to_dense` is the boolean mask."""

    def __init__(self, mask: Tensor, mask_mod: _mask_mod_signature | None,
                 BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE) -> None:
        self._mask = mask
        self.mask_mod = mask_mod if mask_mod is not None else noop_mask
        bs = BLOCK_SIZE if isinstance(BLOCK_SIZE, tuple) else (BLOCK_SIZE, BLOCK_SIZE)
        self.BLOCK_SIZE = bs
        self.seq_lengths = (int(mask.shape[-2]), int(mask.shape[-1]))

    @classmethod
    def from_dense(cls, mask: Tensor, mask_mod: _mask_mod_signature | None = None,
                   BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE) -> BlockMask:
        """A mask from a dense boolean ``(B, H, Q, KV)`` tensor."""
        if mask.dim() != 4:
            raise ValueError(f"BlockMask.from_dense: expected a 4-D (B, H, Q, KV) mask, got "
                             f"{mask.dim()} dimensions")
        return cls(mask.to(_bool()), mask_mod, BLOCK_SIZE)

    @property
    def shape(self) -> tuple[int, ...]:
        """``(B, H, Q_LEN, KV_LEN)``."""
        return tuple(int(s) for s in self._mask.shape)

    @property
    def device(self) -> Any:
        return self._mask.device

    def to_dense(self) -> Tensor:
        """The boolean mask, ``(B, H, Q_LEN, KV_LEN)``."""
        return self._mask

    def to(self, device: Any) -> BlockMask:
        """The mask on ``device``."""
        return BlockMask(self._mask.to(device), self.mask_mod, self.BLOCK_SIZE)

    def sparsity(self) -> float:
        """The percentage of masked-out positions (PyTorch counts blocks; here positions)."""
        total = self._mask.numel()
        kept = int(self._mask.sum().item())
        return 100.0 * (total - kept) / total if total else 0.0

    def __getitem__(self, index: Any) -> BlockMask:
        m = self._mask[index]
        while m.dim() < 4:
            m = m.unsqueeze(0)
        return BlockMask(m, self.mask_mod, self.BLOCK_SIZE)

    def __repr__(self) -> str:
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, mask_mod=" \
               f"{getattr(self.mask_mod, '__name__', self.mask_mod)})"


def create_block_mask(mask_mod: _mask_mod_signature, B: int | None, H: int | None, Q_LEN: int,
                      KV_LEN: int, device: Any = "cuda",
                      BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile: bool = False) -> BlockMask:
    """The :class:`BlockMask` of ``mask_mod(b, h, q_idx, kv_idx) -> bool`` over
    ``B x H x Q_LEN x KV_LEN`` (``None`` for ``B``/``H``: broadcast over them)."""
    return BlockMask(create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device), mask_mod, BLOCK_SIZE)


def flex_attention(query: Tensor, key: Tensor, value: Tensor,
                   score_mod: _score_mod_signature | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None,
                   enable_gqa: bool = False, return_lse: bool = False,
                   kernel_options: dict[str, Any] | None = None, *,
                   return_aux: Any = None) -> Any:
    """Attention of ``query`` ``(B, Hq, L, E)`` over ``key``/``value`` ``(B, Hkv, S, E/Ev)``:
    ``softmax(score_mod(q @ k^T * scale) masked by block_mask) @ v``; with ``return_lse`` also
    the log-sum-exp of each row's scores. A fully masked row gives zeros (and an lse of -inf)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor) or t.dim() != 4:
            raise ValueError(f"flex_attention: {name} must be a 4-D tensor (B, H, L, E), got "
                             f"{getattr(t, 'shape', type(t).__name__)}")
    B, Hq, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"Expect query and key/value to have the same number of heads but "
                             f"got Hq={Hq} and Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
        if Hq % Hkv:
            raise ValueError(f"Expect number of query heads to be a multiple of kv heads for "
                             f"GQA but got Hq={Hq} and Hkv={Hkv}.")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = matmul(query, key.transpose(-2, -1)) * scale
    if score_mod is not None:
        b, h, q, kv = _indices(B, Hq, L, S, query.device)
        scores = score_mod(scores, b, h, q, kv)
    if block_mask is not None:
        mask = block_mask.to_dense()
        if tuple(mask.shape[-2:]) != (L, S):
            raise ValueError(f"flex_attention: block_mask of shape {block_mask.shape} does not "
                             f"match query length {L} and key length {S}")
        scores = indexing.masked_fill(scores, elementwise.logical_not(mask.to(scores.device)),
                                      float("-inf"))
    lse = reduction.logsumexp(scores, -1)
    # a fully masked row: PyTorch's kernel gives zeros, not NaN
    safe = indexing.where(isneginf(lse).unsqueeze(-1),
                          _creation.zeros((), device=scores.device, dtype=scores.dtype),
                          scores - lse.unsqueeze(-1))
    probs = elementwise.exp(safe) * elementwise.logical_not(
        isneginf(scores)).to(scores.dtype)
    out = matmul(probs.to(value.dtype), value)
    if return_aux is not None:
        if return_lse:
            raise ValueError("flex_attention: give return_lse or return_aux, not both")
        if not isinstance(return_aux, AuxRequest):
            raise TypeError(f"flex_attention: return_aux must be an AuxRequest, got "
                            f"{type(return_aux).__name__}")
        return out, AuxOutput(lse if return_aux.lse else None,
                              reduction.amax(scores, -1) if return_aux.max_scores else None)
    if return_lse:
        return out, lse
    return out


