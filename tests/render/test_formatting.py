"""Numbers in human units (tops_advisor/formatting.py): no exponent, decimal prefixes chosen after
rounding."""

from __future__ import annotations

import pytest

from tops_advisor.formatting import fmt_bytes, fmt_dollars, fmt_memory, fmt_ops, format_seconds


@pytest.mark.parametrize("seconds, text", [
    (0.99951, "1 s"),           # rounds to 1.00 s: not '1e+03 ms'
    (1.06, "1.06 s"),
    (9300.0, "2.58 h"),         # 9300 / 3600 = 2.583 h: not '9.3e+03 s'
    (150.0, "2.5 min"),
    (13.15e-6, "13.1 us"),      # 13.15e-6 * 1e6 (binary 13.149999...) rounds down, as before
    (0.0123, "12.3 ms"),
])
def test_format_seconds_never_prints_an_exponent(seconds, text):
    assert format_seconds(seconds) == text


def test_large_counts_use_decimal_prefixes():
    assert fmt_ops(8.2176e17) == "822 P"        # 821,763,123.20 G operations before
    assert fmt_bytes(5.2e15) == "5.2 PB"
    assert fmt_ops(999_960) == "1 M"            # the prefix is chosen after rounding
    assert fmt_memory(41e9) == "41.0 GB" and fmt_memory(6.2e14) == "620 TB"


@pytest.mark.parametrize("usd,text", [
    (4.5, "$4.50"), (1234.5, "$1,234.50"), (24_875.0, "$24,875"), (0.03031, "$0.0303"), (0.996, "$1.00"),
    (0.9949, "$0.995"), (None, "-"),
])
def test_dollars(usd, text):
    assert fmt_dollars(usd) == text
