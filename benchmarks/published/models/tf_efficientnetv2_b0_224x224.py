"""timm ``tf_efficientnetv2_b0`` (random weights) fed 1 x 3 x 224 x 224: timm benchmark.py with --img-size 224
(benchmarks/published/nikolasent_timm_geforce.json); the ``timm:`` workload would count it at its default 192."""

from _timm_at import at_resolution

build_model, example_inputs = at_resolution("tf_efficientnetv2_b0", 224, 224)
