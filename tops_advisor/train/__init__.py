"""Training: the setup of one optimizer step (precision, optimizer, checkpointing, LoRA), its counted workload
with the memory it holds, and its prediction on a device. Pure: no torch (the step is counted by
``tops_advisor.counting.training``)."""

from .setup import (
           OPTIMIZERS,
           TRAIN_PRECISIONS,
           LoraSpec,
           TrainSetup,
           parse_lora,
           parse_optimizer,
           parse_train_precision,
)
from .workload import MemoryParts, TrainingWorkload

__all__ = ["OPTIMIZERS", "TRAIN_PRECISIONS", "LoraSpec", "MemoryParts", "TrainSetup", "TrainingWorkload",
           "parse_lora", "parse_optimizer", "parse_train_precision"]
