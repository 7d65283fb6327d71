"""A measured training step beside its prediction (pure: no torch).

``StepMeasurement`` is what ``train_step.measure_training_step`` measured (seconds and bytes; None where not
measured: memory on the CPU). ``TrainValidationReport`` puts it beside a ``train.predict.TrainingPrediction``
part by part (the step, forward with the loss, backward, optimizer step) and for the peak memory, with the
relative errors. Error = (predicted - measured) / measured, as for inference: +20% is a prediction 20% too slow.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_serializer

from ..kinds import Phase
from ..train.predict import TrainingPrediction
from .compare import relative_error

PARTS = (Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER)
STEP, PEAK_MEMORY = "step", "peak memory"     # the rows around the parts


class StepMeasurement(BaseModel):
    """One training step of one model at one batch, measured on this machine. Seconds and bytes."""

    model_config = ConfigDict(frozen=True)

    model: str
    batch: int
    setup: str                          # TrainSetup.describe(): precision, optimizer, checkpointing, LoRA
    device: str                         # cuda or cpu
    loss: str = ""                      # what the loss was (the counted rule, counting.training.loss)
    parameters: int = 0
    trainable_parameters: int = 0
    build_s: float | None = None
    first_step_s: float | None = None   # host clock, synchronised: the first step with all its set-up
    step_s: float | None = None         # median of the timed steps (the kit's timer: events around each step)
    step_spread_s: tuple[float, float] | None = None
    forward_s: float | None = None      # medians of the parts (marks between them inside each step)
    backward_s: float | None = None
    optimizer_s: float | None = None
    repeats: int = 0
    param_bytes: int = 0                # exact, from the tensors
    grad_bytes: int = 0
    optimizer_state_bytes: int = 0
    base_bytes: int | None = None        # allocated once the model and inputs are on the device
    after_steps_bytes: int | None = None  # allocated after the timed steps: weights, grads, state, inputs
    peak_bytes: int | None = None        # max allocated over every step, the first included
    steady_peak_bytes: int | None = None  # max allocated over the steps after the first (the state exists)
    peak_reserved_bytes: int | None = None
    loss_scale: tuple[float, float] | None = None   # GradScaler's scale before and after the timed steps
    error: str | None = None             # "out of memory": nothing else was measured

    def part_s(self, phase: Phase) -> float | None:
        return getattr(self, f"{phase}_s")

    @property
    def skipped_steps(self) -> bool:
        """Whether GradScaler lowered its scale while timing: some timed steps skipped the optimizer."""
        return self.loss_scale is not None and self.loss_scale[1] < self.loss_scale[0]


class PartRow(BaseModel):
    """One part of the step (or the whole step, or the peak memory): measured beside predicted."""

    model_config = ConfigDict(frozen=True)

    part: str
    measured: float | None    # seconds, or bytes for the peak memory
    predicted: float
    bound: str                # what binds the predicted part ("" for the memory)

    @computed_field
    @property
    def error(self) -> float | None:
        return relative_error(self.predicted, self.measured)


class TrainValidationReport(BaseModel):
    """What ``validate --train`` measured and predicted (seconds, bytes). ``render.json_units.to_json`` adds
    ``step_time_ms``, ``forward_ms``, ``backward_ms``, ``optimizer_ms`` (each ``{measured, predicted}``)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    model: str
    hardware: str
    hardware_name: str = Field(exclude=True)   # for the table's title
    device: str
    batch: int
    setup: str
    loss: str                                  # what the counted step backpropagates from (and the measured)
    calibration_source: str                    # "" when the prediction used datasheet defaults
    note: str                                  # the CPU's plumbing note, else ""
    measured: StepMeasurement
    prediction: TrainingPrediction
    environment: dict[str, str]

    @field_serializer("prediction")
    def _prediction(self, p: TrainingPrediction) -> dict:
        return p.model_dump()

    def _pair(self, measured: float | None, predicted: float) -> dict[str, float | None]:
        return {"measured": measured, "predicted": predicted}

    @property
    def step_time_s(self) -> dict[str, float | None]:
        return self._pair(self.measured.step_s, self.prediction.step_s)

    @property
    def forward_s(self) -> dict[str, float | None]:
        return self._pair(self.measured.forward_s, self.prediction.forward_s)

    @property
    def backward_s(self) -> dict[str, float | None]:
        return self._pair(self.measured.backward_s, self.prediction.backward_s)

    @property
    def optimizer_s(self) -> dict[str, float | None]:
        return self._pair(self.measured.optimizer_s, self.prediction.optimizer_s)

    @computed_field
    @property
    def peak_memory_bytes(self) -> dict[str, float | None]:
        """Measured: ``torch.cuda.max_memory_allocated`` over the steps after the first; predicted: the peak of
        the counted step's memory timeline (no runtime reserve: the allocator's count has none)."""
        return self._pair(self.measured.steady_peak_bytes, self.prediction.memory.peak_bytes)

    @property
    def rows(self) -> tuple[PartRow, ...]:
        """The step, its parts, then the peak memory."""
        p, m = self.prediction, self.measured
        out = [PartRow(part=STEP, measured=m.step_s, predicted=p.step_s, bound=p.bound)]
        out += [PartRow(part=str(ph), measured=m.part_s(ph), predicted=p.part(ph).time_s, bound=p.part(ph).bound)
                for ph in PARTS]
        out.append(PartRow(part=PEAK_MEMORY, measured=m.steady_peak_bytes, predicted=p.memory.peak_bytes,
                           bound=""))
        return tuple(out)

    @computed_field
    @property
    def errors(self) -> dict[str, float | None]:
        """(predicted - measured) / measured of the step, each part and the peak memory (None: not measured)."""
        keys = {STEP: "step_time", PEAK_MEMORY: "peak_memory"}
        return {keys.get(r.part, r.part): r.error for r in self.rows}
