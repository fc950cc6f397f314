"""torchmetrics: class metrics with update/compute, a functional metric, and a MetricCollection."""
import json

import torch
import torchmetrics

preds = torch.tensor([0, 1, 2, 2, 1, 0, 2])
target = torch.tensor([0, 2, 2, 2, 1, 1, 2])
accuracy = torchmetrics.Accuracy(task="multiclass", num_classes=3)
accuracy.update(preds[:4], target[:4])
accuracy.update(preds[4:], target[4:])
f1 = torchmetrics.F1Score(task="multiclass", num_classes=3, average="macro")
collection = torchmetrics.MetricCollection({
    "precision": torchmetrics.Precision(task="multiclass", num_classes=3, average="macro"),
    "recall": torchmetrics.Recall(task="multiclass", num_classes=3, average="macro")})
scores = collection(preds, target)
mse = torchmetrics.functional.mean_squared_error(torch.tensor([1.0, 2.0, 4.0]),
                                                 torch.tensor([1.5, 2.5, 3.0]))
print("RESULT", json.dumps({"accuracy": accuracy.compute().item(), "f1": f1(preds, target).item(),
                            "precision": scores["precision"].item(),
                            "recall": scores["recall"].item(), "mse": mse.item()}))
