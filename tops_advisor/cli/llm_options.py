"""The precision and kernel options an LLM run takes, shared by `tops-advisor llm` and `recommend --llm`."""

from __future__ import annotations

import click

KERNELS_HELP = ("Kernel layout: torch (plain PyTorch, HF-style, unfused), fused (a serving engine's fused kernels), "
                "or an engine profile: llama.cpp[:Q4_0|Q4_K_M|Q8_0|F16], gpt-fast (docs/roofline.md).")


def llm_precision_options(fn):
    """--weight-dtype, --act-dtype, --kv-dtype and --kernels (default torch), as `llm` takes them."""
    for option in reversed((
        click.option("--weight-dtype", default=None,
                     help="bf16, fp16, fp8, int8 or int4. [default: bf16, or fp16 on devices without bf16]"),
        click.option("--act-dtype", default=None,
                     help="What the matrix products compute in: bf16 (default; weight-only quantization), or "
                          "fp8/int8 with matching weights (W8A8)."),
        click.option("--kv-dtype", default=None, help="KV-cache storage: bf16, fp16, fp8, int8, int4. [default: bf16]"),
        click.option("--kernels", default="torch", show_default=True, help=KERNELS_HELP),
    )):
        fn = option(fn)
    return fn


def serving_options(fn):
    """``recommend --llm``'s serving plans: --serving, --requests-per-s, --max-batched-tokens."""
    for option in reversed((
        click.option("--serving", is_flag=True,
                     help="LLM: plan a continuous-batching server: per device kind, the most requests one replica "
                          "serves at once within --tokens-per-s (per request) and --ttft (one new prompt)."),
        click.option("--requests-per-s", type=float,
                     help="LLM serving: requests per second to serve; gives the replicas and the fleet's cost "
                          "(implies --serving)."),
        click.option("--max-batched-tokens", type=click.IntRange(min=2),
                     help="LLM serving: tokens per engine step, decodes and prompt chunks together "
                          "[default: vLLM's, 8192 on devices of 70 GiB or more other than A100s, else 2048]."),
    )):
        fn = option(fn)
    return fn
