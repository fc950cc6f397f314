"""Lightning: a LightningModule trained by ``Trainer(max_epochs=1).fit`` (8 steps), its logged
losses and the trained weights."""
import json

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
losses = []


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        losses.append(loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


x = torch.randn(32, 4)
y = x.sum(1, keepdim=True)
model = Regressor()
trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False)
trainer.fit(model, DataLoader(TensorDataset(x, y), batch_size=4))
print("RESULT", json.dumps({"losses": losses, "bias": model.net[2].bias.tolist(),
                            "global_step": trainer.global_step}))
