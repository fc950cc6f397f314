"""Graph convolutional network (in the style of the PyTorch ``gcn`` example): node
classification on a synthetic two-community graph whose normalised adjacency is a sparse COO
tensor multiplied with ``torch.spmm``."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=False):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(output_dim)) if use_bias else None

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        return output + self.bias if self.bias is not None else output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = F.relu(self.gc1(input_tensor, adj_mat))
        x = self.dropout(x)
        return F.log_softmax(self.gc2(x, adj_mat), dim=1)


def make_graph(n, generator):
    """Two communities: dense inside, sparse across; features are noisy community indicators."""
    labels = (torch.arange(n) >= n // 2).long()
    same = labels[:, None] == labels[None, :]
    p = torch.where(same, torch.tensor(0.3), torch.tensor(0.02))
    adj = (torch.rand(n, n, generator=generator) < p).float()
    adj = ((adj + adj.t() + torch.eye(n)) > 0).float()  # symmetric, with self loops
    deg = adj.sum(1)
    d_inv_sqrt = deg.pow(-0.5)
    norm = d_inv_sqrt[:, None] * adj * d_inv_sqrt[None, :]
    idx = norm.nonzero().t()
    sparse = torch.sparse_coo_tensor(idx, norm[idx[0], idx[1]], (n, n))
    features = F.one_hot(labels, 2).float() + 1.5 * torch.randn(n, 2, generator=generator)
    features = torch.cat([features, torch.randn(n, 6, generator=generator)], 1)
    return features, sparse, labels


def main():
    parser = argparse.ArgumentParser(description="GCN with a sparse COO adjacency")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--l2", type=float, default=5e-4)
    parser.add_argument("--hidden-dim", type=int, default=16)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    features, adj_mat, labels = make_graph(60, torch.Generator().manual_seed(args.seed))
    idx_train = torch.arange(0, 60, 3)
    idx_val = torch.arange(1, 60, 3)
    gcn = GCN(features.shape[1], args.hidden_dim, 2)
    optimizer = optim.Adam(gcn.parameters(), lr=args.lr, weight_decay=args.l2)
    for epoch in range(args.epochs):
        gcn.train()
        optimizer.zero_grad()
        y_pred = gcn(features, adj_mat)
        train_loss = F.nll_loss(y_pred[idx_train], labels[idx_train])
        train_loss.backward()
        optimizer.step()
        if epoch % 10 == 0 or epoch == args.epochs - 1:
            gcn.eval()
            with torch.no_grad():
                y_pred = gcn(features, adj_mat)
                val_acc = (y_pred[idx_val].argmax(1) == labels[idx_val]).float().mean().item()
            print(f"Epoch {epoch:03d} | training loss: {train_loss.item():.4f} | val acc {val_acc:.3f}")


if __name__ == "__main__":
    main()
