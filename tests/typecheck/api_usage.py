"""Type-checked, never run: the Tensor API and ``pg.*`` as a type checker sees them.

``tests/test_typecheck.py`` runs mypy on this file; every name used here must resolve (no
``attr-defined`` errors), which holds only while methods are declared in class bodies.
"""
from __future__ import annotations

import portagrad as pg

x = pg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
y = pg.ones(2, 2)

z: pg.Tensor = x.add(y, alpha=2).mul(y).sum()
s = x.sum(dim=0, keepdim=True).mean()
m = pg.matmul(x, y) @ y
w = x + y - 1.0 * y / 2.0
n = -x.exp().log1p().abs() ** 2
v = x.view(4).reshape(2, 2).transpose(0, 1).T.mT
u = pg.where(x > 0, pg.add(x, y).clamp(min=0.0).relu(), y)
q = y.clone()
q.add_(x.detach()).mul_(2).zero_()
q += 1
q[0] = 3.0
b = x.float().double().long().bool()
k = pg.sum(x) + pg.cat([x, y]).max() + x.new_zeros(2).sum()
z.backward()
g = x.grad
