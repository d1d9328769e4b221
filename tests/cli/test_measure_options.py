"""The argparse types of `measure_options`: what they accept and the one-line reason they refuse."""

from __future__ import annotations

import argparse

import pytest

from bot.cli.measure_options import positive_float


@pytest.mark.parametrize("text,value", [("30", 30.0), ("0.5", 0.5), ("1e-3", 0.001)])
def test_positive_float_accepts_a_positive_finite_number(text, value):
    assert positive_float(text) == value


@pytest.mark.parametrize("text,message", [
    ("0", "expected a positive number, got 0"),
    ("-3", "expected a positive number, got -3"),
    ("nan", "expected a finite number, got nan"),
    ("inf", "expected a finite number, got inf"),
    ("-inf", "expected a finite number, got -inf"),
    ("Infinity", "expected a finite number, got Infinity"),
])
def test_positive_float_refuses_what_is_not_a_positive_finite_number(text, message):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        positive_float(text)
    assert str(refused.value) == message
