"""The closed schema of the documents (docs/certificate-format.md, Appendix A): for every object
level, the keys it may hold, their JSON types, which of them are required and from which version
on. Standard library only; it imports nothing but :mod:`.numbers`.

Contract. :func:`closed` checks one object against its :class:`Schema` and then every object
inside it that the schema describes (its children: an object, each object of an array, or one
of several *forms* an object may take), in document order, and refuses with rule ``format``,
naming the key: a value that is not a JSON object, an unknown key, a key of a later version, a
missing required key, a key whose JSON type is not its table's (``integer``, ``string``,
``array``, ``object``; a JSON ``true``/``false`` is never one of them). The *content* of a key
(a number, a shape, a word of the vocabulary) is read afterwards by its rule (``number``,
``shape``, ``skip``, …): this pass is the first rule of a document, so every later rule reads
keys that exist with the JSON type it expects.

Correctness argument. Each table is the list of keys the reader interprets at that level
(docs/certificate-format.md states each in the same words, and
``tests/checker/test_closed_schema.py`` generates its cases from the document's tables and
compares them with these): a key outside the table is refused, so no key can be present that
the checker would ignore while another implementation reads it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .numbers import CertificateError, show

__all__ = ["JSON_TYPES", "Key", "Schema", "Forms", "Tagged", "closed", "schemas"]

#: the JSON type words of the tables and the Python types ``json.loads`` gives them
JSON_TYPES: dict[str, type] = {"integer": int, "string": str, "array": list, "object": dict,
                               "null": type(None)}
_ARTICLE = {"integer": "an integer", "string": "a string", "array": "an array",
            "object": "an object", "null": "null"}


class Key(NamedTuple):
    """A row of a table: the key, its JSON types (``"array or object"``), whether it is
    required, the first version that allows it, and what is inside it: ``child`` a
    :class:`Schema` or :class:`Forms` for an object, for each object of an array when ``each``,
    or None (numbers, words, lists of numbers: read by their rule)."""

    name: str
    types: str
    required: bool
    since: int = 1
    child: Any = None
    each: bool = False


class Schema:
    """One object level: its name (the name of its table in the document) and its keys."""

    __slots__ = ("level", "keys", "allowed", "required", "required_set", "later", "later_set",
                 "newest", "types", "children", "passed")

    def __init__(self, level: str, *keys: Key) -> None:
        self.level = level
        self.keys = keys
        self.allowed = frozenset(k.name for k in keys)
        self.required = tuple(k.name for k in keys if k.required)
        self.required_set = frozenset(self.required)
        self.later = {k.name: k.since for k in keys if k.since > 1}
        self.later_set = frozenset(self.later)
        self.newest = max(self.later.values(), default=1)
        #: per key, its Python types
        self.types = {k.name: frozenset(JSON_TYPES[t] for t in k.types.split(" or "))
                      for k in keys}
        #: the keys with objects inside: name, what is inside, whether an array of objects
        self.children = tuple((k.name, k.child, k.each) for k in keys if k.child is not None)
        #: the shapes (version, keys in order, JSON types of the values) that passed the checks
        #: of this level, each with the keys whose values hold objects to check: a bounded
        #: cache of a pure function of the shape (:func:`closed`)
        self.passed: dict[tuple[Any, ...], tuple[tuple[str, Any, bool], ...]] = {}

    def listing(self, version: int = 3) -> str:
        return ", ".join(f'"{k.name}"' for k in self.keys if k.since <= version)

    def __repr__(self) -> str:
        return f"Schema({self.level!r})"


class Forms:
    """The forms an object may take at one place (a weight: ``{"den", "num"}`` or ``{"random"}``;
    a mask: Bernoulli or columns), told apart by their keys: the form sharing the most keys with
    the object, when one does strictly more than every other."""

    __slots__ = ("what", "forms")

    def __init__(self, what: str, *forms: Schema) -> None:
        self.what, self.forms = what, forms

    def choose(self, obj: dict, where: str, layer: int | None) -> Schema:
        if len(self.forms) == 1:
            return self.forms[0]
        keys = obj.keys()
        shared = sorted(((len(keys & f.allowed), n) for n, f in enumerate(self.forms)),
                        reverse=True)
        if shared[0][0] > shared[1][0]:
            return self.forms[shared[0][1]]
        forms = " or ".join("{" + f.listing() + "}" for f in self.forms)
        raise CertificateError("format", f"{where}: {self.what} is {forms}, got keys "
                                         f"{show(sorted(map(str, keys)))}", layer=layer)


class Tagged:
    """The forms an object may take, told apart by the value of one key (a witness by its
    ``kind``): ``table`` maps each value to its schema."""

    __slots__ = ("what", "tag", "table")

    def __init__(self, what: str, tag: str, table: dict[str, Schema | Forms | Tagged]) -> None:
        self.what, self.tag, self.table = what, tag, table

    def choose(self, obj: dict, where: str, layer: int | None) -> Schema | Forms | Tagged:
        value = obj.get(self.tag)
        if type(value) is str and value in self.table:
            return self.table[value]
        raise CertificateError("format", f"{where}: {show(self.tag)} of {self.what} is one of "
                                         f"{show(list(self.table))}, got {show(value)}",
                               layer=layer)


def _wrong_type(value: object, types: str) -> str:
    return f"must be {' or '.join(_ARTICLE[t] for t in types.split(' or '))}, got {show(value)}"


def closed(obj: object, schema: Schema | Forms | Tagged, where: str, version: int = 3,
           layer: int | None = None) -> dict:
    """``obj`` as a JSON object of the level ``schema`` (or of the form of ``schema`` it takes),
    with every object inside it that the schema describes; rule ``format`` otherwise (module
    doc). An object's keys are checked first (unknown, later version, missing), then the JSON
    type of each value, then the objects inside it in the order of its table. Returns
    ``obj``."""
    if type(obj) is not dict:
        level = schema.level if isinstance(schema, Schema) else schema.what
        raise CertificateError("format", f"{where} must be a JSON object ({level}), got "
                                         f"{show(obj)}", layer=layer)
    while not isinstance(schema, Schema):
        schema = schema.choose(obj, where, layer)
    # the checks below depend on the version, the keys and the values' JSON types only: a
    # shape that passed them once passes again (the objects inside are checked every time)
    shape = (version, tuple(obj), tuple(map(type, obj.values())))
    inside = schema.passed.get(shape)
    if inside is None:
        _check_keys(obj, schema, where, version, layer)
        # the keys holding objects: an object where one may stand, an array of objects
        inside = tuple((name, child, each) for name, child, each in schema.children
                       if name in obj and (each or type(obj[name]) is dict))
        if len(schema.passed) < _SHAPES:
            schema.passed[shape] = inside
    for name, child, each in inside:
        value = obj[name]
        if each:
            for t, item in enumerate(value):
                closed(item, child, f"{where} {name}[{t}]", version, layer)
        else:
            closed(value, child, f"{where} {name}", version, layer)
    return obj


#: shapes remembered per level (a document of many layers has a few)
_SHAPES = 256


def _check_keys(obj: dict, schema: Schema, where: str, version: int, layer: int | None) -> None:
    """The checks of :func:`closed` on one object's own keys and the JSON types of its values."""
    keys = obj.keys()
    if not keys <= schema.allowed:
        extra = sorted(map(str, keys - schema.allowed))[0]
        raise CertificateError("format", f"{where}: unknown key {show(extra)} ({schema.level}: "
                                         f"{schema.listing(version)})", layer=layer)
    if version < schema.newest and not keys.isdisjoint(schema.later_set):
        for name, since in schema.later.items():
            if version < since and name in obj:
                raise CertificateError("format", f"{where}: key {show(name)} needs version "
                                                 f"{since} (this document is version {version})",
                                       layer=layer)
    if not keys >= schema.required_set:
        name = next(k for k in schema.required if k not in obj)
        raise CertificateError("format", f"{where} has no {show(name)} ({schema.level}: "
                                         f"{schema.listing(version)})", layer=layer)
    types = schema.types
    for name, value in obj.items():
        if type(value) not in types[name]:
            key = next(k for k in schema.keys if k.name == name)
            raise CertificateError("format", f"{where}: {show(name)} "
                                             f"{_wrong_type(value, key.types)}", layer=layer)


def schemas(*roots: Any) -> dict[str, Schema]:
    """Every level reachable from ``roots`` (schemas, forms, lists of them), by name: what the
    document's tables must list (``tests/checker/test_closed_schema.py``)."""
    out: dict[str, Schema] = {}
    todo: list[Any] = list(roots)
    while todo:
        item = todo.pop()
        if isinstance(item, Forms):
            todo.extend(item.forms)
        elif isinstance(item, Tagged):
            todo.extend(item.table.values())
        elif isinstance(item, Schema):
            if item.level not in out:
                out[item.level] = item
                todo.extend(child for _, child, _ in item.children)
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
    return out


# ---------------------------------------------------------------- the kind-free levels

#: ``{"den": D, "num": [...]}`` (docs/certificate-format.md §1.1)
COMPACT = Schema("compact numbers", Key("den", "integer or string", True),
                 Key("num", "array", True))
#: a vector or a matrix: a list of numbers (of rows), or the compact form
NUMBERS = Forms("an object of numbers", COMPACT)
#: the Bernoulli mask and the column mask of a draw record (§2)
BERNOULLI_MASK = Schema("Bernoulli mask", Key("p", "integer or string", True),
                        Key("key", "array", True))
COLUMN_MASK = Schema("column mask", Key("columns", "array", True))
MASK = Forms("a mask", BERNOULLI_MASK, COLUMN_MASK)
#: a draw record (§2)
DRAW_RECORD = Schema("draw record", Key("generator", "string", True),
                     Key("seed", "integer", True), Key("key", "array", True),
                     Key("distribution", "string", True), Key("shape", "array", True),
                     Key("mask", "object", False, child=MASK))
#: ``{"random": R}``: a weight given by reference (§1.2)
BY_REFERENCE = Schema("weight by reference", Key("random", "object", True, child=DRAW_RECORD))
#: ``"source": {"kind": "fixed", "why": text}`` (§1.3)
FIXED = Schema("fixed declaration", Key("kind", "string", True), Key("why", "string", True))
#: a ``source``: a draw record or a fixed declaration
SOURCE = Forms("a source", DRAW_RECORD, FIXED)
#: the compact 0/1 forms of a skip (§1.5)
IDENTITY_FORM = Schema("identity form", Key("identity", "integer", True))
SELECTION_FORM = Schema("selection form", Key("selection", "array", True),
                        Key("columns", "integer", True))
#: what an object may be where a layer's weight stands, a dense layer's skip weight, a 0/1 route
LAYER_WEIGHT = Forms("an object weight", COMPACT, BY_REFERENCE)
SKIP_WEIGHT = Forms("an object skip weight", COMPACT, BY_REFERENCE, IDENTITY_FORM,
                    SELECTION_FORM)
ROUTE_WEIGHT = Forms("a 0/1 skip weight", IDENTITY_FORM, SELECTION_FORM)

#: a target layer's skip and a checkpoint's residual (§10)
TARGET_SKIP = Schema("target skip", Key("from", "integer", True), Key("kind", "string", True),
                     Key("weight", "array or object", True, child=ROUTE_WEIGHT))
RESIDUAL = Schema("residual", Key("from", "integer", True), Key("kind", "string", True),
                  Key("weight", "array or object", True, child=ROUTE_WEIGHT))
#: the post-activation skips of a dense frozen layer (§0, §1) and of a conv layer (§10)
DENSE_SKIP = Schema("dense skip", Key("from", "integer", True), Key("kind", "string", True),
                    Key("weight", "array or object", True, child=SKIP_WEIGHT),
                    Key("source", "object", False, child=SOURCE))
CONV_SKIP = Schema("conv skip", Key("from", "integer", True), Key("kind", "string", True),
                   Key("weight", "array or object", True, child=ROUTE_WEIGHT))

#: the document frame of a certificate (§0); its ``target`` and ``network`` layers are read by
#: their kinds' tables (:mod:`.document`)
DOMAIN = Schema("domain", Key("lower", "array or object", True, child=NUMBERS),
                Key("upper", "array or object", True, child=NUMBERS))
TARGET = Schema("target", Key("layers", "array", True))
NETWORK = Schema("network", Key("layers", "array", True), Key("checkpoints", "array", True))
REDRAW = Schema("redraws entry", Key("key", "array", True), Key("kernel", "array", True))
#: the descriptive sections (§0): their keys are closed, their values are shown or not read
PROVENANCE = Schema(
    "provenance",
    Key("construction", "string", False), Key("seed", "integer", False),
    Key("distribution", "string", False), Key("rng", "string", False),
    Key("stream_keys", "string", False), Key("versions", "object", False),
    Key("seed_rule", "string", False), Key("frozen_weights", "string", False),
    Key("shift_mode", "string", False), Key("retry", "integer", False),
    Key("block", "integer", False), Key("routing", "string", False),
    Key("sparsity", "string", False), Key("mask_side", "string", False),
    Key("dense_runs", "array", False), Key("width", "string", False),
    Key("pairs", "string", False), Key("source", "object", False),
    Key("network", "string", False), Key("output_scale", "string", False),
    Key("tuned", "string", False), Key("batchnorm", "array", False),
    Key("best", "object", False))
WITNESSES = Schema("witnesses", Key("layers", "array", False))
CERTIFICATE = Schema("certificate", Key("format", "string", True),
                     Key("version", "integer", True),
                     Key("domain", "object", True, child=DOMAIN),
                     Key("target", "object", True, child=TARGET),
                     Key("network", "object", True, child=NETWORK),
                     Key("provenance", "object", False, child=PROVENANCE),
                     Key("witnesses", "object", False, child=WITNESSES),
                     Key("redraws", "array", False, 3, child=REDRAW, each=True),
                     Key("seed_rule", "string", False, 3))


# ---------------------------------------------------------------- impossibility documents (§9)

#: the frozen layers of an impossibility document: dense, no γ or β (§9.1); its target layers
#: are a certificate's (their kinds' tables, :mod:`.document`)
IMPOSSIBILITY_FROZEN_LAYER = Schema(
    "impossibility frozen layer", Key("kind", "string", False),
    Key("weight", "array or object", True, child=LAYER_WEIGHT),
    Key("source", "object", False, child=SOURCE), Key("activation", "string", True))
IMPOSSIBILITY_NETWORK = Schema("impossibility network",
                               Key("layers", "array", True, child=IMPOSSIBILITY_FROZEN_LAYER,
                                   each=True))


def _witness(level: str, *keys: Key) -> Schema:
    """A witness: its ``kind``, the point and the values of §9.1, and its own keys."""
    return Schema(level, Key("kind", "string", True),
                  Key("point", "array or object", True, child=NUMBERS),
                  Key("values", "array", True), *keys)


_OUTPUTS = Key("outputs", "array", True)
GRADIENTS = Schema("gradients", Key("plus", "array or object", True, child=NUMBERS),
                   Key("minus", "array or object", True, child=NUMBERS))
FREDHOLM_KEYS = (Key("scale", "string", True), _OUTPUTS,
                 Key("y", "array or object", True, child=NUMBERS))
_ALIGNED = (Key("kind", "string", True), Key("layer", "integer", True),
            Key("neuron", "integer", True), Key("columns", "array", True))
WITNESS = Tagged("a witness", "kind", {
    "rank": _witness("rank witness", _OUTPUTS, Key("prime", "integer", True),
                     Key("rows", "array", True), Key("determinant", "integer", True)),
    "fredholm": Tagged("a Fredholm witness", "scale", {
        "tuned": _witness("Fredholm witness (scale tuned)", *FREDHOLM_KEYS,
                          Key("output", "integer", True)),
        "fixed": _witness("Fredholm witness (scale fixed)", *FREDHOLM_KEYS)}),
    "kink": _witness("kink witness", Key("neuron", "integer", True),
                     Key("gradients", "object", True, child=GRADIENTS)),
    "aligned": Forms("an aligned witness",
                     Schema("aligned witness (minor)", *_ALIGNED,
                            Key("minor", "integer or string", True)),
                     Schema("aligned witness (value)", *_ALIGNED,
                            Key("value", "integer or string", True))),
})
IMPOSSIBILITY = Schema("impossibility document", Key("format", "string", True),
                       Key("version", "integer", True),
                       Key("domain", "object", True, child=DOMAIN),
                       Key("target", "object", True, child=TARGET),
                       Key("network", "object", True, child=IMPOSSIBILITY_NETWORK),
                       Key("witness", "object", True, child=WITNESS),
                       Key("provenance", "object", False, child=PROVENANCE))
