"""The input box, one type: ``exactnorm.model.box.Box``.

Every form the API accepted before (``"0:1"``, ``(0.0, 1.0)``, fractions, strings, arrays, a box
file, a data set) converts into the same exact ``Box``; what cannot be converted exactly or is not
a box is refused with a one-line error naming the parameter; and every reader and verb takes a
``Box`` and gives the network it gives for the old forms.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from flint import fmpq

from exactnorm import api
from exactnorm.errors import InputError, NumberFormatError, ShapeError
from exactnorm.model.box import Box
from exactnorm.model.interop import target_from_sklearn, target_from_state_dict


def test_every_accepted_form_is_the_same_exact_box():
    cube = Box.parse("0:1")
    assert cube.cube and cube.dimension is None
    for form in ("0:1", (0, 1), (0.0, 1.0), (Fraction(0), Fraction(1)), ("0", "1"),
                 (np.float32(0), np.int64(1)), (fmpq(0), fmpq(1)), cube):
        assert Box.of(form) == cube, form
    per_feature = Box.of(([0, "1/3"], np.array([1.0, 0.5])))
    assert per_feature.lower == (Fraction(0), Fraction(1, 3))
    assert per_feature.upper == (Fraction(1), Fraction(1, 2))
    # the readers' old (lower, upper) arguments: numbers (a cube) or sequences
    assert Box.of(0, 1) == cube and Box.of([0, "1/3"], [1, 0.5]) == per_feature
    # a float is the dyadic rational it denotes; a string is read as written
    assert Box.of((0.1, 1)).lower[0] == Fraction(0.1) != Fraction(1, 10)
    assert Box.of(("0.1", "1e-3:")[0:1] + ("1",)).lower[0] == Fraction(1, 10)
    assert Box.parse("0:1e-3").upper == (Fraction(1, 1000),)


def test_bad_boxes_are_refused_with_the_parameter():
    for bad, error, words in [
        ((1, 0), InputError, "inverted box: 1 > 0"),
        (([0, 2], [1, 1]), InputError, "lower[1] = 2 > upper[1] = 1"),
        ((float("nan"), 1), InputError, "not a finite number"),
        ((0, float("inf")), InputError, "not a finite number"),
        (([0, 0], [1]), ShapeError, "lower has 2 coordinates, upper 1"),
        (([], []), ShapeError, "no coordinates"),
        ((True, 1), InputError, "box must be"),
        ((np.longdouble(0), 1), NumberFormatError, "float64"),
        ("0-1", InputError, "LO:HI"),
        (object(), InputError, "box must be"),
        ((0, 1, 2), InputError, "box must be"),
    ]:
        with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")) as info:
            Box.of(bad)
        assert info.value.parameter == "box", bad
    with pytest.raises(InputError, match="give one of box, box_file, box_from_data"):
        Box.given(box="0:1", box_from_data=np.zeros((1, 2)))


def test_dimensions_are_checked_where_the_box_meets_a_network():
    cube, pair = Box.of("0:1"), Box.of(([0, 0], [1, 2]))
    assert cube.bounds(3) == ((fmpq(0),) * 3, (fmpq(1),) * 3)
    assert pair.fit(2) is pair
    with pytest.raises(ShapeError, match="the box has 2 coordinates but the network input has 3"):
        pair.bounds(3)


def test_boxes_from_data_and_files(tmp_path):
    X = np.array([[0.25, -1.0], [0.5, 3.0], [0.125, 0.0]])
    box = Box.from_data(X)
    assert box.lower == (Fraction(1, 8), Fraction(-1))
    assert box.upper == (Fraction(1, 2), Fraction(3))
    np.save(tmp_path / "x.npy", X)
    assert Box.given(box_from_data=tmp_path / "x.npy") == box
    np.save(tmp_path / "b.npy", np.array([[0.125, -1.0], [0.5, 3.0]]))
    (tmp_path / "b.json").write_text(json.dumps({"lower": ["1/8", -1], "upper": ["1/2", 3]}))
    np.savez(tmp_path / "b.npz", lower=np.array([0.125, -1.0]), upper=np.array([0.5, 3.0]))
    for name in ("b.npy", "b.json", "b.npz"):
        assert Box.given(box_file=tmp_path / name) == box, name
    with pytest.raises(InputError, match="NaN"):
        Box.from_data(np.array([[0.0, np.nan]]))
    with pytest.raises(InputError, match=r"shape \(n, d\)"):
        Box.from_data(np.zeros((0, 2)))


def _mlp():
    rng = np.random.default_rng(3)
    return {"0.weight": rng.normal(size=(3, 2)), "0.bias": rng.normal(size=3),
            "2.weight": rng.normal(size=(1, 3)), "2.bias": rng.normal(size=1)}


def test_every_reader_and_verb_takes_a_box(tmp_path):
    """A ``Box`` gives the network the old forms gave: the state-dict, ONNX and scikit-learn
    readers, the one loader of targets (``.npz``, a JSON file without domain, ONNX), certify."""
    sklearn = pytest.importorskip("sklearn.neural_network")
    pytest.importorskip("onnx")
    from exactnorm.certificate import save_target, target_document
    from exactnorm.model.interop import target_from_onnx
    from exactnorm.outputs.export import onnx_model

    box = Box.of(([0, -1], [1, "1/2"]))
    sd = _mlp()
    g = target_from_state_dict(sd, box, activations="relu,identity")
    assert g == target_from_state_dict(sd, [0, -1], [1, "1/2"], activations="relu,identity")
    assert (g.lower, g.upper) == box.bounds(2)
    np.savez(tmp_path / "sd.npz", **sd)
    assert api.load_target(tmp_path / "sd.npz", box=box, activations="relu,identity") == g
    doc = target_document(g)
    del doc["domain"]
    (tmp_path / "t.json").write_text(json.dumps(doc))
    assert api.load_target(tmp_path / "t.json", box=box) == g
    save_target(g, tmp_path / "own.json")
    assert api.load_target(tmp_path / "own.json") == g
    cert = api.certificate_document(api.certify(g, seed=0))
    model = onnx_model(cert, dtype="float64", interface="plain")
    (tmp_path / "f.onnx").write_bytes(model.SerializeToString())
    assert target_from_onnx(tmp_path / "f.onnx", box).lower == g.lower
    m = sklearn.MLPRegressor(hidden_layer_sizes=(3,), max_iter=5, random_state=0)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(np.random.default_rng(0).normal(size=(20, 2)), np.zeros(20))
    assert target_from_sklearn(m, box) == target_from_sklearn(m, [0, -1], [1, "1/2"])
    assert api.target_of(m, box=box) == target_from_sklearn(m, box)
    assert api.certify(m, box=box, seed=0).target == target_from_sklearn(m, box)
