"""Sine-wave prediction with two ``LSTMCell`` layers trained by ``optim.LBFGS`` in float64 (in the
style of the PyTorch ``time_sequence_prediction`` example; the data is generated, not loaded)."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        n = input.size(0)
        h_t = torch.zeros(n, self.hidden, dtype=torch.double, device=input.device)
        c_t = torch.zeros(n, self.hidden, dtype=torch.double, device=input.device)
        h_t2 = torch.zeros(n, self.hidden, dtype=torch.double, device=input.device)
        c_t2 = torch.zeros(n, self.hidden, dtype=torch.double, device=input.device)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def generate_sine_wave(n=12, length=40, period=20):
    np.random.seed(2)
    x = np.empty((n, length), np.int64)
    x[:] = np.array(range(length)) + np.random.randint(-4 * period, 4 * period, n).reshape(n, 1)
    return np.sin(x / 1.0 / period).astype("float64")


def main():
    parser = argparse.ArgumentParser(description="sine-wave LSTM with LBFGS")
    parser.add_argument("--steps", type=int, default=4, help="steps to run")
    args = parser.parse_args()
    np.random.seed(0)
    torch.manual_seed(0)
    device = torch.get_default_device()
    data = generate_sine_wave()
    input = torch.from_numpy(data[3:, :-1]).to(device)
    target = torch.from_numpy(data[3:, 1:]).to(device)
    test_input = torch.from_numpy(data[:3, :-1]).to(device)
    test_target = torch.from_numpy(data[:3, 1:]).to(device)
    seq = Sequence().to(device)
    seq.double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=5)
    for i in range(args.steps):
        print("STEP: ", i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print("loss:", loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            future = 10
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print("test loss:", loss.item())
            y = pred.detach().cpu().numpy()
        assert y.shape == (3, test_input.size(1) + future)


if __name__ == "__main__":
    main()
