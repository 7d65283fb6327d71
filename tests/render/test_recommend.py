"""recommend's tables (tops_advisor/render/recommend.py): one line per shared reason or advice."""

from __future__ import annotations

from types import SimpleNamespace

from tops_advisor.render.recommend import advice_lines, grouped, rejected_table


def _rec(hardware: str, advice: str):
    return SimpleNamespace(hardware=hardware, advice=(advice,))


def test_identical_reasons_are_one_row_naming_the_devices():
    res = SimpleNamespace(rejected=[SimpleNamespace(hardware=h, reason=why) for h, why in (
        ("a10", "segment datacenter, not edge"), ("b200", "segment datacenter, not edge"),
        ("rtx-4090", "segment workstation, not edge"), ("h200-sxm", "segment datacenter, not edge"))])
    table = rejected_table(res)
    assert [str(c) for c in table.columns[0]._cells] == ["segment datacenter, not edge",
                                                        "segment workstation, not edge"]
    assert [str(c) for c in table.columns[1]._cells] == ["a10, b200, h200-sxm", "rtx-4090"]


def test_advice_repeated_word_for_word_is_printed_once():
    res = SimpleNamespace(recommendations=[_rec("l4", "fuse"), _rec("t4", "fuse"), _rec("a10", "other")])
    assert advice_lines(res) == ["l4, t4: fuse", "a10: other"]
    assert grouped([("x", "a"), ("y", "b"), ("z", "a")]) == [(["x", "z"], "a"), (["y"], "b")]
