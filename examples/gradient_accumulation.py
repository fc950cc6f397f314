"""Gradient accumulation: dividing each micro-batch loss by the number of steps gives the gradient
of the big batch."""
import numpy as np

import portagrad as pg
from portagrad import nn, optim
from portagrad.utils.data import DataLoader, TensorDataset

pg.manual_seed(0)
inputs, labels = pg.randn(32, 4), pg.randint(0, 3, (32,))
training_set = DataLoader(TensorDataset(inputs, labels), batch_size=8)
accumulation_steps = 4
loss_function = nn.CrossEntropyLoss()

model = nn.Linear(4, 3)
big = nn.Linear(4, 3)
big.load_state_dict(model.state_dict())

optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
model.zero_grad()
for i, (x, y) in enumerate(training_set):
    loss = loss_function(model(x), y) / accumulation_steps
    loss.backward()
    if (i + 1) % accumulation_steps == 0:
        accumulated = model.weight.grad.detach().clone()
        optimizer.step()
        model.zero_grad()

loss_function(big(inputs), labels).backward()
print("accumulated grad == big-batch grad:",
      np.allclose(accumulated.numpy(), big.weight.grad.numpy(), atol=1e-6))
assert np.allclose(accumulated.numpy(), big.weight.grad.numpy(), atol=1e-6)
