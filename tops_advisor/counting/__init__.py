"""Count a PyTorch model's operations and bytes per operator (imports torch).

``count(spec, batch, dtype)`` for a model file or a library model (``timm:``, ``torchvision:``, ``hf:``), ``count_module(module, inputs, dtype)`` for a module in hand;
both return a :class:`tops_advisor.workload.Workload` with no device numbers in it: the operators counted, then
lowered to the kernels eager PyTorch launches on a CUDA GPU (``lowering.lower_pytorch_cuda``).
"""

from .counter import COUNT_DTYPES, UnsupportedOpWarning, count, count_module
from .handles import HANDLES, ZERO_COST, Cost, OpCall, TensorInfo, register
from .host.reads import MASKS_ALL_ONES
from .library_models import LibraryModel
from .lowering import INDUCTOR_CUDA, LOWERINGS, PYTORCH_CUDA, lower_pytorch_cuda, lowering_for
from .model_file import ModelFile, load_model_file
from .sources import ModelSource, load_model

__all__ = ["COUNT_DTYPES", "HANDLES", "INDUCTOR_CUDA", "LOWERINGS", "MASKS_ALL_ONES", "PYTORCH_CUDA", "ZERO_COST", "Cost",
           "LibraryModel", "ModelFile", "ModelSource", "OpCall", "TensorInfo", "UnsupportedOpWarning", "count",
           "count_module", "load_model", "load_model_file", "lower_pytorch_cuda", "lowering_for", "register"]
