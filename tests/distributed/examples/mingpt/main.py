"""minGPT-ddp's entry point (pytorch/examples, distributed/minGPT-ddp/mingpt/main.py), written
after the published one: torchrun environment, character dataset split by ``random_split``, GPT
and AdamW from the config, the Trainer.

Edits for CPU, each marked ``# CPU:``: gloo instead of the accelerator's backend, and no exit
when fewer than 2 GPUs are found. hydra is not installed here: the config is the published
``gpt2_train_cfg.yaml`` as a dict (use_amp off, as on CPU), and ``section.key=value`` arguments
override it as hydra's command line would (the test makes the model tiny and points
``data_config.path`` at a local text)."""
import sys

import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.utils.data import random_split

from char_dataset import CharDataset, DataConfig
from model import GPT, GPTConfig, OptimizerConfig, create_optimizer
from trainer import Trainer, TrainerConfig

CONFIG = {
    "data_config": {"path": "input.txt", "block_size": 128, "train_split": 0.9, "truncate": 0.05},
    "gpt_config": {"n_layer": 8, "n_head": 8, "n_embd": 512},
    "trainer_config": {"max_epochs": 10, "batch_size": 216, "data_loader_workers": 4,
                       "grad_norm_clip": 1.0, "snapshot_path": "gpt_snapshot.pt",
                       "save_every": 3, "use_amp": False,  # CPU: (published: use_amp: True)
                       "log_every": 100},
    "optimizer_config": {"weight_decay": 0.1, "learning_rate": 0.0003},
}


def verify_min_gpu_count(min_gpus: int = 2) -> bool:
    return torch.accelerator.is_available() and torch.accelerator.device_count() >= min_gpus


def ddp_setup():
    init_process_group(backend="gloo")  # CPU: (published: the accelerator's default backend, then torch.accelerator.set_device_index(rank))


def get_train_objs(gpt_cfg, opt_cfg, data_cfg):
    dataset = CharDataset(data_cfg)
    train_len = int(len(dataset) * data_cfg.train_split)
    train_set, test_set = random_split(dataset, [train_len, len(dataset) - train_len])
    gpt_cfg.vocab_size = dataset.vocab_size
    gpt_cfg.block_size = dataset.block_size
    model = GPT(gpt_cfg)
    optimizer = create_optimizer(model, opt_cfg)
    return model, optimizer, train_set, test_set


def main(cfg):
    ddp_setup()
    gpt_cfg = GPTConfig(**cfg["gpt_config"])
    opt_cfg = OptimizerConfig(**cfg["optimizer_config"])
    data_cfg = DataConfig(**cfg["data_config"])
    trainer_cfg = TrainerConfig(**cfg["trainer_config"])
    model, optimizer, train_data, test_data = get_train_objs(gpt_cfg, opt_cfg, data_cfg)
    trainer = Trainer(trainer_cfg, model, optimizer, train_data, test_data)
    trainer.train()
    destroy_process_group()


def _value(text):
    """A command-line value as hydra reads it: a bool, an int, a float, or a string."""
    if text in ("True", "False", "true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def overridden(cfg, args):
    for arg in args:
        key, value = arg.split("=", 1)
        section, name = key.split(".")
        cfg[section][name] = _value(value)
    return cfg


if __name__ == "__main__":
    _min_gpu_count = 2
    if False and not verify_min_gpu_count(min_gpus=_min_gpu_count):  # CPU: published: if not verify_min_gpu_count(min_gpus=_min_gpu_count):
        print(f"Unable to locate sufficient {_min_gpu_count} gpus to run this example. Exiting.")
        sys.exit()
    main(overridden(CONFIG, sys.argv[1:]))
