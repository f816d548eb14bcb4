"""Exact numbers and linear algebra: rationals, FLINT matrices, p-adic solves, sampling, files.

The lowest layer: nothing here knows about networks. Every function states its ground types
(``fmpz_mat``/``fmpq_mat``, ``Fraction`` lists, NumPy integer arrays).
"""
