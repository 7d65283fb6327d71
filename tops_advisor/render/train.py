"""A predicted training step as tables: the step and its parts, throughput and MFU, and the memory at its peak
by part; and its ``--json`` form."""

from __future__ import annotations

from dataclasses import asdict

from ..formatting import fmt_bytes, fmt_memory, fmt_ops, fmt_tops, format_seconds
from ..train.parallel import ParallelPlan
from ..train.predict import TrainingPrediction
from ..train.workload import NOT_MODELLED, TrainingWorkload
from .tables import FittedTable

_MEMORY_PARTS = ("weights", "gradients", "optimizer_state", "activations", "temporaries", "inputs", "rounding")


def step_table(p: TrainingPrediction, hw_name: str, tw: TrainingWorkload) -> FittedTable:
    t = FittedTable(title=f"{p.workload} training step on {hw_name} ({p.setup}, batch {p.batch}, {p.mode})",
                    title_justify="left")
    for col in ("part", "time", "device work", "host", "operations", "bound"):
        t.add_column(col, justify="left" if col in ("part", "bound") else "right")
    for part in p.parts:
        t.add_row(part.phase, format_seconds(part.time_s), format_seconds(part.device_s),
                  format_seconds(part.host_s), fmt_ops(part.flops), part.bound)
    t.add_row("step", format_seconds(p.step_s), "", "", fmt_ops(p.model_flops) + " (model)", p.bound, style="bold")
    return t


def throughput_lines(p: TrainingPrediction, tw: TrainingWorkload) -> list[str]:
    rate = f"{p.samples_per_s:,.1f} samples/s"
    if p.tokens:
        rate += f", {p.tokens_per_s:,.0f} tokens/s"
    return [f"throughput: {rate}; {fmt_tops(p.attainable_ops_per_s)} TOPS of model work, MFU {p.mfu:.1%} of the "
            f"{p.precision} dense peak ({fmt_tops(p.peak_ops_per_s)} TOPS)",
            f"trains {tw.trainable_params:,} parameters" + (f" ({tw.frozen_params:,} frozen)" if tw.frozen_params
                                                             else "") + f"; loss: {tw.loss}"]


def memory_table(p: TrainingPrediction) -> FittedTable:
    m = p.memory
    fits = "fits" if p.fits_memory else "DOES NOT FIT"
    t = FittedTable(title=f"memory at the peak ({m.peak_phase}): {fmt_memory(p.peak_memory_bytes)} + runtime reserve = "
                          f"{fmt_memory(p.memory_required_bytes)} of {fmt_bytes(p.memory_capacity_bytes)}, {fits}",
                    title_justify="left")
    t.add_column("part")
    t.add_column("bytes", justify="right")
    for name in _MEMORY_PARTS:
        value = getattr(m, name)
        if value:
            t.add_row(name.replace("_", " "), fmt_memory(value))
    t.add_row("cuBLAS workspaces", fmt_memory(p.workspace_bytes))
    return t


def plan_lines(plan: ParallelPlan) -> list[str]:
    return [f"{plan.strategy} on {plan.devices} GPUs (global batch {plan.global_batch:,}): step "
            f"{format_seconds(plan.step_s)}, {plan.samples_per_s:,.1f} samples/s, {plan.scaling_efficiency:.0%} "
            f"scaling efficiency; communication {format_seconds(plan.comm_s)}, "
            f"{format_seconds(plan.exposed_comm_s)} of it exposed; {fmt_memory(plan.memory_per_device_bytes)} per GPU",
            *(f"  {a}" for a in plan.assumptions)]


def render_training(p: TrainingPrediction, hw_name: str, tw: TrainingWorkload, out,
                    plan: ParallelPlan | None = None) -> None:
    out.print(step_table(p, hw_name, tw))
    for line in throughput_lines(p, tw) + (plan_lines(plan) if plan else []):
        out.print(line)
    out.print(memory_table(p))
    out.print("not modelled: " + "; ".join(NOT_MODELLED), style="dim")
    for note in tw.workload.notes:
        out.print(f"note: {note}", style="dim")


def plan_json(plan: ParallelPlan) -> dict:
    d = asdict(plan)
    for key in ("step_s", "compute_step_s", "comm_s", "exposed_comm_s"):
        d[key.removesuffix("_s") + "_ms"] = d.pop(key) * 1e3
    d.update(global_batch=plan.global_batch, samples_per_s=plan.samples_per_s,
             scaling_efficiency=plan.scaling_efficiency, fits_memory=plan.fits_memory)
    return d


def training_json(p: TrainingPrediction, tw: TrainingWorkload, plan: ParallelPlan | None = None) -> dict:
    """The prediction's dump with times in ms (``step_time_ms``, ``forward_ms``, ...), bytes as bytes."""
    d = p.model_dump()
    for key in ("step_time_s", "forward_s", "backward_s", "optimizer_s"):
        d[key.removesuffix("_s") + "_ms"] = d.pop(key) * 1e3
    for part in d["parts"]:
        for key in ("time_s", "device_s", "host_s"):
            part[key.removesuffix("_s") + "_ms"] = part.pop(key) * 1e3
    d["attainable_tops"] = d.pop("attainable_ops_per_s") / 1e12
    d["peak_tops"] = d.pop("peak_ops_per_s") / 1e12
    d.update(trainable_params=tw.trainable_params, frozen_params=tw.frozen_params, loss=tw.loss,
             unsupported_ops=dict(tw.workload.unsupported_ops), notes=[n.text for n in tw.workload.notes],
             plan=plan_json(plan) if plan else None)
    return d


_RANKED = {"efficiency": "samples/s per watt", "throughput": "samples/s", "latency": "step time"}


def recommend_training_table(recs, step: TrainingWorkload, targets, rank_by: str = "efficiency") -> FittedTable:
    t = FittedTable(title=f"training {step.name} (batch {step.batch} per GPU, {step.setup.describe()}), best "
                          f"{_RANKED.get(rank_by, rank_by)} first", title_justify="left")
    for col in ("device", "GPUs", "step", "samples/s", "MFU", "memory/GPU", "to train", "$/h", "$/run", "bound"):
        t.add_column(col, justify="left" if col in ("device", "bound") else "right")
    for r in recs:
        t.add_row(r.hardware, f"{r.devices}" + (f" {r.strategy}" if r.devices > 1 else ""), format_seconds(r.step_s),
                  f"{r.samples_per_s:,.0f}", f"{r.mfu:.0%}", fmt_memory(r.memory_per_device_bytes),
                  format_seconds(r.time_to_train_s) if r.time_to_train_s else "",
                  f"{r.cost['usd_per_hour']:,.2f}" if r.cost else "", f"{r.usd_per_run:,.0f}" if r.usd_per_run else "",
                  r.bound)
    return t


def render_training_recommendations(recs, rejected, step: TrainingWorkload, targets, out,
                                    rank_by: str = "efficiency") -> None:
    out.print(recommend_training_table(recs, step, targets, rank_by))
    if rejected:
        out.print("ruled out: " + "; ".join(f"{r.hardware} ({r.reason})" for r in rejected), style="dim")


def recommend_training_json(recs, rejected, step: TrainingWorkload, targets) -> dict:
    return {
        "model": step.name, "batch_per_device": step.batch, "setup": step.setup.describe(), "targets": asdict(targets),
        "recommendations": [{
            "hardware": r.hardware, "devices": r.devices, "strategy": r.strategy, "step_time_ms": r.step_s * 1e3,
            "samples_per_s": r.samples_per_s, "mfu": r.mfu, "bound": r.bound,
            "memory_per_device_bytes": r.memory_per_device_bytes,
            "time_to_train_s": r.time_to_train_s, "samples_per_s_per_watt": r.samples_per_s_per_watt,
            **(r.cost or {"usd_per_hour": None, "usd_per_million": None, "no_price_reason": r.no_price}),
            "usd_per_run": r.usd_per_run, "plan": plan_json(r.plan) if r.plan else None} for r in recs],
        "rejected": [{"hardware": r.hardware, "reason": r.reason} for r in rejected],
    }
