from fractions import Fraction

import pytest

from exactnorm.errors import InputError, LimitExceededError, NumberFormatError
from exactnorm.exact.rationals import (
    float_to_fraction,
    format_number,
    parse_number,
    strict_json_loads,
)


@pytest.mark.parametrize("text,value", [
    (3, Fraction(3)), ("-7", Fraction(-7)), ("6/4", Fraction(3, 2)), ("-1/3", Fraction(-1, 3)),
    ("0.125", Fraction(1, 8)), ("-2.50", Fraction(-5, 2)), (".5", Fraction(1, 2)),
    ("3.", Fraction(3)), ("0/5", Fraction(0)),
])
def test_parse_accepts(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("bad", [1.5, True, None, "1/0", "1e999", "abc", "", "1/-2", "- 1",
                                 "nan", "inf", [1], "0x10"])
def test_parse_rejects(bad):
    with pytest.raises(NumberFormatError):
        parse_number(bad)


def test_digit_limit_and_huge_numbers():
    big = "9" * 5000  # above CPython's default int/str limit
    expected = 10**5000 - 1
    assert parse_number(big) == expected
    assert parse_number(big + "/7", max_digits=6000) == Fraction(expected, 7)
    with pytest.raises(LimitExceededError):
        parse_number("1" * 101, max_digits=100)


def test_format_round_trip():
    for x in (Fraction(0), Fraction(-3, 7), Fraction(10**40 + 1), Fraction(5)):
        assert parse_number(format_number(x)) == x
    with pytest.raises(TypeError):
        format_number(0.5)


def test_strict_json():
    assert strict_json_loads('{"a": [1, "1/2"]}') == {"a": [1, "1/2"]}
    for bad in ('{"a": 1.5}', '{"a": NaN}', '{"a": Infinity}', '{"a": 1e3}'):
        with pytest.raises(NumberFormatError):
            strict_json_loads(bad)
    with pytest.raises(InputError):
        strict_json_loads('{"a": 1, "a": 2}')
    with pytest.raises(InputError):
        strict_json_loads("[" * 100000 + "]" * 100000)
    with pytest.raises(InputError):
        strict_json_loads("{not json")


def test_float_to_fraction_exact():
    assert float_to_fraction(0.1) == Fraction(0.1)
    assert float_to_fraction(0.1) != Fraction(1, 10)
    with pytest.raises(NumberFormatError):
        float_to_fraction(float("inf"))


@pytest.mark.parametrize("n", [0, 7, -7, 2**53 - 1, 2**53, -(2**53 - 1), -(2**53), 10**16,
                               -10**16, 10**17, 10**18, -10**19])
def test_one_int_or_string_threshold_for_every_number_type(n):
    """int, Fraction, fmpz and fmpq of the same integer are written identically, and the
    certificate's fast matrix path agrees with format_number entry by entry."""
    from flint import fmpq, fmpz, fmpz_mat

    from exactnorm.certificate.compact import plain_matrix
    from exactnorm.exact.rationals import JSON_INT_LIMIT, format_number

    written = {repr(format_number(x)) for x in (n, Fraction(n), fmpz(n), fmpq(n))}
    assert len(written) == 1
    assert isinstance(format_number(n), int) == (abs(n) < JSON_INT_LIMIT)
    assert plain_matrix(fmpz_mat([[n, 1]])) == [[format_number(n), 1]]
