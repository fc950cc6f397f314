"""REINFORCE policy gradient (in the style of the PyTorch ``reinforcement_learning`` example) with
``torch.distributions.Categorical``, on a small corridor environment written here (no gym)."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


class Corridor:
    """Walk left/right along 4 cells; reward 1 for reaching the right end, -0.01 per step."""

    def __init__(self, length=4, max_steps=20, seed=0):
        self.length, self.max_steps = length, max_steps
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.pos, self.t = int(self.rng.integers(0, 2)), 0
        return self._obs()

    def _obs(self):
        obs = np.zeros(self.length, dtype=np.float32)
        obs[self.pos] = 1.0
        return obs

    def step(self, action):
        self.pos = max(0, self.pos + (1 if action == 1 else -1))
        self.t += 1
        done = self.pos == self.length - 1 or self.t >= self.max_steps
        reward = 1.0 if self.pos == self.length - 1 else -0.01
        return self._obs(), reward, done


class Policy(nn.Module):
    def __init__(self, n_obs=4):
        super().__init__()
        self.affine1 = nn.Linear(n_obs, 32)
        self.dropout = nn.Dropout(p=0.1)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.dropout(self.affine1(x)))
        return F.softmax(self.affine2(x), dim=1)


def main():
    parser = argparse.ArgumentParser(description="REINFORCE on a corridor")
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--seed", type=int, default=543)
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--log-interval", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    device = torch.get_default_device()
    env = Corridor(seed=args.seed)
    policy = Policy().to(device)
    optimizer = optim.Adam(policy.parameters(), lr=3e-2)
    eps = np.finfo(np.float32).eps.item()

    def select_action(state):
        state = torch.from_numpy(state).float().unsqueeze(0).to(device)
        probs = policy(state)
        m = Categorical(probs)
        action = m.sample()
        policy.saved_log_probs.append(m.log_prob(action))
        return action.item()

    running = None
    for i_episode in range(1, args.episodes + 1):
        state, ep_len = env.reset(), 0
        for _ in range(env.max_steps):
            state, reward, done = env.step(select_action(state))
            policy.rewards.append(reward)
            ep_len += 1
            if done:
                break
        R, returns = 0.0, []
        for r in policy.rewards[::-1]:
            R = r + args.gamma * R
            returns.insert(0, R)
        returns = torch.FloatTensor(returns).to(device)
        returns = (returns - returns.mean()) / (returns.std() + eps) if len(returns) > 1 else returns
        policy_loss = torch.cat([-lp * R for lp, R in zip(policy.saved_log_probs, returns)]).sum()
        optimizer.zero_grad()
        policy_loss.backward()
        optimizer.step()
        del policy.rewards[:]
        del policy.saved_log_probs[:]
        running = ep_len if running is None else 0.9 * running + 0.1 * ep_len
        if i_episode % args.log_interval == 0:
            # episode length is the loss of this task: shorter is better
            print(f"Episode {i_episode}\tLast length: {ep_len:5d}\tAverage length (loss): {running:.4f}")


if __name__ == "__main__":
    main()
