"""``recommend_training`` under power limits: a module trains in the power mode the constraints give it (the
fastest within --max-power, or the one --power-mode names), as ``ranking.candidates`` returns it."""

from __future__ import annotations

import warnings

import pytest

from tests.paths import FIXTURES
from tops_advisor.catalog import load_catalog
from tops_advisor.errors import InputError
from tops_advisor.recommend import Constraints
from tops_advisor.recommend.training import TrainTargets, recommend_training
from tops_advisor.train.predict import predict_training

AGX = "jetson-agx-orin-64gb"


@pytest.fixture(scope="module")
def step():
    from tops_advisor.counting.training import count_training
    from tops_advisor.train import TrainSetup

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return count_training(FIXTURES / "train" / "tiny_mlp.py", 64, TrainSetup())


def test_a_module_trains_in_its_fastest_mode_within_the_limit(step):
    catalog = load_catalog()
    agx = catalog.get(AGX)
    limit = agx.fastest_power_mode(15)                      # AGX Orin 64GB: 15W is its only mode within 15 W
    recs, _ = recommend_training(step, list(catalog), Constraints(max_power_w=15, hardware=(AGX,)), TrainTargets())
    (rec,) = recs
    assert rec.tdp_w == limit.power_w == 15
    at_mode = predict_training(step, agx.at_power_mode(limit.name), None, "graph")
    assert rec.step_s == pytest.approx(at_mode.step_s)
    assert rec.step_s > predict_training(step, agx, None, "graph").step_s   # slower than at MAXN


def test_power_mode_by_name_and_an_unknown_one(step):
    catalog = load_catalog()
    recs, rejected = recommend_training(step, list(catalog), Constraints(power_mode="30W", segment="edge"),
                                        TrainTargets())
    with_30w = {hw.id for hw in catalog if hw.segment == "edge" and any(m.name == "30W" for m in hw.power_modes)}
    assert with_30w and {r.hardware for r in recs} == with_30w and all(r.tdp_w == 30 for r in recs)
    without = [r for r in rejected if r.reason.startswith("no power mode 30W")]
    assert without and {r.hardware for r in without}.isdisjoint(with_30w)
    with pytest.raises(InputError, match="99W"):
        recommend_training(step, list(catalog), Constraints(power_mode="99W", hardware=(AGX,)), TrainTargets())
