"""A custom loss written with tensor ops; gradients flow into the model."""
import portagrad as pg
from portagrad import nn


def my_loss(output, target):
    return pg.mean((output - target) ** 2)


pg.manual_seed(0)
model = nn.Linear(2, 2)
x = pg.randn(1, 2)
target = pg.randn(1, 2)
loss = my_loss(model(x), target)
loss.backward()
print("loss", loss.item())
print("weight grad", model.weight.grad)

# the same as nn.MSELoss
model.zero_grad()
nn.MSELoss()(model(x), target).backward()
print("MSELoss weight grad", model.weight.grad)
