"""Every roofline default is a ``Default``: a value with where it comes from, keyed by name where it varies."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from tops_advisor.roofline.defaults import DEFAULTS, WIDTHS, Default, GemmTile, RooflineDefaults

FIELDS = [f.name for f in dataclasses.fields(RooflineDefaults)]


@pytest.mark.parametrize("name", FIELDS)
def test_every_field_is_a_default_with_a_source(name):
    value = getattr(DEFAULTS, name)
    assert isinstance(value, Default), f"RooflineDefaults.{name} is a bare {type(value).__name__}"
    assert isinstance(value.source, str) and value.source.strip(), f"RooflineDefaults.{name} has no source"


# a tuple of numbers that is a set (each entry means the same thing), not positions with a meaning each
NUMBER_SETS = {"attention_head_dim_tiers_fp32"}


@pytest.mark.parametrize("name", FIELDS)
def test_no_value_is_a_positional_tuple_of_numbers(name):
    """A number that varies by a key is a mapping keyed by name; tuples hold names, named tiles or rules."""
    value = getattr(DEFAULTS, name).value
    if isinstance(value, tuple) and name not in NUMBER_SETS:
        assert not any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value), name
    if name.startswith("gemm_tiles"):
        assert all(isinstance(v, GemmTile) for v in value)


def test_values_by_width_are_keyed_16_and_32_bit():
    for name in FIELDS:
        value = getattr(DEFAULTS, name).value
        tables = [value] if isinstance(value, dict) else []
        tables += [v for v in value.values() if isinstance(v, dict)] if isinstance(value, dict) else []
        for table in tables:
            if any(k in WIDTHS for k in table):
                assert set(table) == set(WIDTHS), name


def test_each_instance_owns_its_mappings():
    """A fresh RooflineDefaults does not share a mutable mapping with DEFAULTS."""
    fresh = RooflineDefaults()
    assert fresh == DEFAULTS
    assert fresh.kind_floor_s.value is not DEFAULTS.kind_floor_s.value
    assert fresh.kind_bandwidth_factor_by_width.value["copy"] is not DEFAULTS.kind_bandwidth_factor_by_width.value["copy"]


def test_a_replaced_default_keeps_the_others():
    d = replace(DEFAULTS, eager_op_s=Default(1e-6, "test"))
    assert d.eager_op_s.value == 1e-6 and d.eager_op_s.source == "test"
    assert d.kernel_gap_s is DEFAULTS.kernel_gap_s
