"""skorch: a NeuralNetClassifier (its module ending in softmax, as skorch's default NLLLoss
expects) fitted on numpy data, then tuned by scikit-learn's GridSearchCV."""
import json

import numpy as np
import torch
from sklearn.model_selection import GridSearchCV
from skorch import NeuralNetClassifier

torch.manual_seed(0)
X = np.random.default_rng(0).standard_normal((60, 5)).astype(np.float32)
y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)


class MLP(torch.nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(5, hidden), torch.nn.ReLU(),
                                          torch.nn.Linear(hidden, 2), torch.nn.Softmax(dim=-1))

    def forward(self, x):
        return self.layers(x)


net = NeuralNetClassifier(MLP, max_epochs=5, lr=0.1, verbose=0, train_split=None)
net.fit(X, y)
search = GridSearchCV(net, {"module__hidden": [4, 8]}, cv=2, scoring="accuracy").fit(X, y)
print("RESULT", json.dumps({"train_loss": list(net.history[:, "train_loss"]),
                            "accuracy": float((net.predict(X) == y).mean()),
                            "best_params": search.best_params_,
                            "best_score": float(search.best_score_)}))
