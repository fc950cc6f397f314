"""stable-baselines3: PPO on CartPole (its README's example): the policy's outputs on fixed
observations, then ``learn`` for two rollouts."""
import json

import numpy as np
import torch
from stable_baselines3 import PPO

model = PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=1, seed=0, verbose=0)
obs = torch.as_tensor(np.linspace(-0.2, 0.2, 8, dtype=np.float32).reshape(2, 4),
                      device=model.device)
with torch.no_grad():
    dist = model.policy.get_distribution(obs)
    values = model.policy.predict_values(obs)
before = {"probs": dist.distribution.probs.tolist(), "values": values.flatten().tolist()}
model.learn(128)
action, _ = model.predict(np.zeros(4, dtype=np.float32), deterministic=True)
print("RESULT", json.dumps({"before": before, "timesteps": model.num_timesteps,
                            "action": int(action)}))
