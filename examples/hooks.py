"""Tensor hooks and module hooks, with PyTorch 2.x semantics."""
import portagrad as pg
from portagrad import nn

a = pg.tensor(2.0, requires_grad=True)
b = pg.tensor(3.0, requires_grad=True)
c = a * b
d = pg.tensor(4.0, requires_grad=True)
e = c * d


def c_hook(grad):
    print("c hook 1 sees", grad)       # 8
    return grad + 2                    # a returned tensor replaces the gradient


h = c.register_hook(c_hook)
c.register_hook(lambda grad: print("c hook 2 sees", grad))  # 10: hooks run in order
c.retain_grad()                        # stores the gradient after all of c's hooks
d.register_hook(lambda grad: grad + 100)
e.retain_grad()
e.register_hook(lambda grad: grad * 2)
e.backward()
print("e.grad", e.grad, "c.grad", c.grad)             # 2, 10
print("a.grad", a.grad, "b.grad", b.grad, "d.grad", d.grad)  # 30, 20, 112
assert (e.grad.item(), c.grad.item()) == (2.0, 10.0)
assert (a.grad.item(), b.grad.item(), d.grad.item()) == (30.0, 20.0, 112.0)
h.remove()

# module hooks: forward-pre(module, args), forward(module, args, output),
# full backward(module, grad_input, grad_output)
layer = nn.Linear(3, 2)
seen = []
layer.register_forward_pre_hook(lambda m, args: seen.append(("pre", tuple(args[0].shape))))
layer.register_forward_hook(lambda m, args, out: seen.append(("fwd", tuple(out.shape))))
layer.register_full_backward_hook(
    lambda m, gin, gout: seen.append(("bwd", tuple(gout[0].shape))))
layer(pg.randn(4, 3, requires_grad=True)).sum().backward()
print(seen)
assert [s[0] for s in seen] == ["pre", "fwd", "bwd"]
