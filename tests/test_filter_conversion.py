"""The conversion of read filters to the engine's form (``looseleaf.filters.to_native``), alone:
no file is read. The JSON of every supported form, the flipping of a literal on the left, the
errors naming what is not supported, and (with a reference evaluator of the JSON written with
pyarrow compute) the same rows as ``table.filter`` of the expression."""

from __future__ import annotations

import datetime
import json
import operator
import subprocess
import sys
from decimal import Decimal
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import looseleaf
from looseleaf.filters import to_native


def native(filter) -> tuple[dict, list[pa.Array]]:
    text, literals = to_native(filter)
    assert isinstance(text, str)
    assert all(isinstance(a, pa.Array) for a in literals)
    return json.loads(text), literals


def literal(array: pa.Array) -> tuple[pa.DataType, list]:
    return array.type, array.to_pylist()


# --- pyarrow expressions ---------------------------------------------------------------------

OPS = [
    (pc.equal, "eq", "eq"),
    (pc.not_equal, "not_eq", "not_eq"),
    (pc.less, "lt", "gt"),
    (pc.less_equal, "lt_eq", "gt_eq"),
    (pc.greater, "gt", "lt"),
    (pc.greater_equal, "gt_eq", "lt_eq"),
]


@pytest.mark.parametrize(("function", "op", "flipped"), OPS)
def test_comparison_either_side(function, op, flipped):
    tree, literals = native(function(pc.field("a"), 5))
    assert tree == {"compare": {"column": ["a"], "op": op, "literal": 0}}
    assert literal(literals[0]) == (pa.int64(), [5])
    # a literal on the left is flipped: 5 < a is a > 5
    tree, literals = native(function(pc.scalar(5), pc.field("a")))
    assert tree == {"compare": {"column": ["a"], "op": flipped, "literal": 0}}
    assert literal(literals[0]) == (pa.int64(), [5])


def test_python_operators():
    assert native(pc.field("a") < 3)[0]["compare"]["op"] == "lt"
    assert native(3 < pc.field("a"))[0]["compare"]["op"] == "gt"  # noqa: SIM300 (Python reflects it)
    assert native(pc.field("a") != 3)[0]["compare"]["op"] == "not_eq"
    assert native(pc.field("a") >= 3)[0]["compare"]["op"] == "gt_eq"


@pytest.mark.parametrize(
    ("value", "arrow_type"),
    [
        (24, pa.int64()),
        (-(2**63), pa.int64()),
        (1.5, pa.float64()),
        ("x", pa.string()),
        (b"\x00y", pa.binary()),
        (True, pa.bool_()),
        (datetime.date(1994, 1, 1), pa.date32()),
        (datetime.datetime(2020, 5, 17, 3, 4, 5, 6), pa.timestamp("us")),
        (Decimal("12.345"), pa.decimal128(5, 3)),
        (pa.scalar(7, pa.int8()), pa.int8()),
        (pa.scalar(1.5, pa.float32()), pa.float32()),
        (pa.scalar(3, pa.uint64()), pa.uint64()),
        (pa.scalar(datetime.datetime(2020, 1, 1), pa.timestamp("ms", "UTC")), pa.timestamp("ms", "UTC")),
    ],
)
def test_literal_types(value, arrow_type):
    tree, literals = native(pc.field("c") == value)
    assert tree == {"compare": {"column": ["c"], "op": "eq", "literal": 0}}
    assert len(literals) == 1
    assert literals[0].type == arrow_type
    assert len(literals[0]) == 1
    expected = value.as_py() if isinstance(value, pa.Scalar) else value
    assert literals[0][0].as_py() == expected


def test_null_literal_is_a_null_array():
    tree, literals = native(pc.field("c") == pc.scalar(None))
    assert tree == {"compare": {"column": ["c"], "op": "eq", "literal": 0}}
    assert literals[0].type == pa.null()
    assert len(literals[0]) == 1


def test_nested_field():
    tree, _ = native(pc.field("st", "a") > 1)
    assert tree == {"compare": {"column": ["st", "a"], "op": "gt", "literal": 0}}
    tree, _ = native(pc.field("a", "b", "c").is_null())
    assert tree == {"is_null": {"column": ["a", "b", "c"]}}
    # Duplicate metadata keys (one field_ref per name) are all read, in order.
    tree, _ = native((pc.field("x", "y") == 1) & (pc.field("y", "x") == 2) & (pc.field("x") == 3))
    assert [m["compare"]["column"] for m in tree["and"]] == [["x", "y"], ["y", "x"], ["x"]]


def test_and_or_flattened():
    a, b, c, d = (pc.field(n) == i for i, n in enumerate("abcd"))
    tree, literals = native(((a & b) & c) & d)
    assert [m["compare"]["column"] for m in tree["and"]] == [["a"], ["b"], ["c"], ["d"]]
    assert [x.to_pylist() for x in literals] == [[0], [1], [2], [3]]
    assert [m["compare"]["literal"] for m in tree["and"]] == [0, 1, 2, 3]
    tree, _ = native(a | (b | (c | d)))
    assert [m["compare"]["column"] for m in tree["or"]] == [["a"], ["b"], ["c"], ["d"]]
    # and under or (and the reverse) stay nested
    tree, _ = native((a & b) | (c & d))
    assert list(tree) == ["or"]
    assert [list(m) for m in tree["or"]] == [["and"], ["and"]]
    tree, _ = native((a | b) & ~(c | d))
    assert tree == {
        "and": [
            {"or": [cmp("a", "eq", 0), cmp("b", "eq", 1)]},
            {"not": {"or": [cmp("c", "eq", 2), cmp("d", "eq", 3)]}},
        ]
    }


def cmp(column: str, op: str, index: int) -> dict:
    return {"compare": {"column": [column], "op": op, "literal": index}}


def test_long_chains_do_not_recurse():
    """``reduce(operator.or_, ...)`` of thousands of predicates nests thousands deep."""
    predicates = [pc.field("a") == i for i in range(3000)]
    for op, key in ((operator.or_, "or"), (operator.and_, "and")):
        tree, literals = native(reduce(op, predicates))
        assert list(tree) == [key]
        assert tree[key] == [cmp("a", "eq", i) for i in range(3000)]
        assert [x[0].as_py() for x in literals] == list(range(3000))
    tree, _ = native(reduce(lambda a, b: pc.Expression._call("and", [a, b]), predicates))
    assert len(tree["and"]) == 3000
    tree, _ = native([[("a", "=", i)] for i in range(3000)])
    assert len(tree["or"]) == 3000
    deep = reduce(operator.or_, [*predicates, pc.utf8_upper(pc.field("s")) == "A"])
    with pytest.raises(looseleaf.InvalidArgumentError, match="function 'utf8_upper' is not supported"):
        to_native(deep)
    with pytest.raises(looseleaf.InvalidArgumentError, match=r"function 'xor' is not supported \(in xor\("):
        to_native(pc.xor(reduce(operator.or_, predicates), pc.field("b")))


def test_invert_is_null_is_valid():
    assert native(~pc.field("x").is_null())[0] == {"not": {"is_null": {"column": ["x"]}}}
    assert native(pc.field("x").is_valid())[0] == {"is_valid": {"column": ["x"]}}
    assert native(pc.is_null(pc.field("x")))[0] == {"is_null": {"column": ["x"]}}
    # a double negation is the predicate itself in Kleene logic
    assert native(~~pc.field("b"))[0] == {"column": ["b"]}
    assert native(~(pc.field("a") < 1))[0] == {"not": cmp("a", "lt", 0)}


def test_is_null_nan_is_null_refused():
    with pytest.raises(looseleaf.InvalidArgumentError, match=r"^filter: is_null with nan_is_null"):
        to_native(pc.field("x").is_null(nan_is_null=True))


def test_is_in():
    tree, literals = native(pc.field("s").isin(["a", "b"]))
    assert tree == {"is_in": {"column": ["s"], "values": 0, "nulls": "match"}}
    assert literal(literals[0]) == (pa.string(), ["a", "b"])
    tree, literals = native(
        pc.is_in(pc.field("x"), value_set=pa.array([1, None], pa.int8()), skip_nulls=True)
    )
    assert tree == {"is_in": {"column": ["x"], "values": 0, "nulls": "skip"}}
    assert literal(literals[0]) == (pa.int8(), [1, None])
    tree, literals = native(pc.field("x").isin([]))
    assert tree["is_in"]["nulls"] == "match"
    assert len(literals[0]) == 0
    tree, literals = native((pc.field("q") < 24) & pc.field("s").isin(["a", "b"]))
    assert tree == {"and": [cmp("q", "lt", 0), {"is_in": {"column": ["s"], "values": 1, "nulls": "match"}}]}
    assert [literal(x) for x in literals] == [(pa.int64(), [24]), (pa.string(), ["a", "b"])]


def test_is_in_options_of_older_pyarrow():
    """pyarrow before the null_matching_behavior option serialized ``skip_nulls``; it wins over
    ``null_matching_behavior`` when set, as in Arrow C++."""
    from looseleaf.filters import _POSITIVE, _Converter

    def options(**fields):
        fields["value_set"] = pa.scalar([1, 2], pa.list_(pa.int64()))
        return pa.scalar(fields)

    node = ("call", "is_in", [("field", ("x",))])
    for opts, nulls in [
        (options(skip_nulls=True), "skip"),
        (options(skip_nulls=False), "match"),
        (options(skip_nulls=True, null_matching_behavior=pa.scalar(0, pa.uint32())), "skip"),
        (
            options(skip_nulls=pa.scalar(None, pa.bool_()), null_matching_behavior=pa.scalar(2, pa.uint32())),
            "emit_null",
        ),
        (options(null_matching_behavior=pa.scalar(3, pa.uint32())), "inconclusive"),
    ]:
        literals: list[pa.Array] = []
        tree = _Converter(literals).predicate((*node, opts), _POSITIVE)
        assert tree == {"is_in": {"column": ["x"], "values": 0, "nulls": nulls}}
        assert literals[0].to_pylist() == [1, 2]


def test_boolean_column_and_literal():
    assert native(pc.field("b"))[0] == {"column": ["b"]}
    assert native(pc.field("st", "flag"))[0] == {"column": ["st", "flag"]}
    tree, literals = native(pc.scalar(True))
    assert tree == {"literal": 0}
    assert literal(literals[0]) == (pa.bool_(), [True])
    tree, literals = native(pc.field("b") & pc.scalar(pa.scalar(None, pa.bool_())))
    assert tree == {"and": [{"column": ["b"]}, {"literal": 0}]}
    assert literal(literals[0]) == (pa.bool_(), [None])


def test_null_propagating_and_or():
    """Arrow's ``and``/``or`` (not ``&``/``|``, which are ``and_kleene``/``or_kleene``) are null
    when any argument is. ``and`` keeps the rows ``and_kleene`` keeps, so outside a negation it
    is one; elsewhere (and for ``or``) the converter spells out the null propagation."""
    a, b = pc.field("a"), pc.field("b")
    plain_and = pc.Expression._call("and", [a, b])
    plain_or = pc.Expression._call("or", [a, b])
    assert native(plain_and)[0] == {"and": [{"column": ["a"]}, {"column": ["b"]}]}
    assert native(~plain_or)[0] == {"not": {"or": [{"column": ["a"]}, {"column": ["b"]}]}}
    valid_a = {"or": [{"column": ["a"]}, {"not": {"column": ["a"]}}]}
    valid_b = {"or": [{"column": ["b"]}, {"not": {"column": ["b"]}}]}
    assert native(plain_or)[0] == {"and": [valid_a, valid_b, {"or": [{"column": ["a"]}, {"column": ["b"]}]}]}


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        (pc.utf8_upper(pc.field("s")) == "A", "function 'utf8_upper' is not supported"),
        (pc.field("a").cast(pa.int8()) == 1, "function 'cast' is not supported"),
        (pc.field("a") + 1 > 2, "function 'add_checked' is not supported"),
        (pc.field("a").is_nan(), "function 'is_nan' is not supported"),
        (pc.xor(pc.field("a"), pc.field("b")), "function 'xor' is not supported"),
        (pc.and_not_kleene(pc.field("a"), pc.field("b")), "function 'and_not_kleene' is not supported"),
        (pc.field("a") == pc.field("b"), "equal must compare a column with a literal: equal(a, b)"),
        (pc.scalar(1) < pc.scalar(2), "less must compare a column with a literal"),
        (pc.scalar(3), "the literal 3 (int64) is not a predicate"),
        ((pc.field("a") > 1) & pc.scalar("x"), "the literal 'x' (string) is not a predicate"),
        (pc.is_null(pc.field("a") > 1), "is_null applies to a column, not to greater(a, 1 (int64))"),
        (pc.is_in(pc.field("a") + 1, value_set=pa.array([1])), "is_in applies to a column"),
        (pc.field(0) == 1, "cannot read the expression"),
    ],
)
def test_unsupported_expressions(expression, named):
    with pytest.raises(looseleaf.InvalidArgumentError) as info:
        to_native(expression)
    message = str(info.value)
    assert message.startswith("filter: ")
    assert named in message


@pytest.mark.parametrize("value", ["a > 1", 3, None, {"a": 1}, pc.field])
def test_not_a_filter(value):
    with pytest.raises(
        looseleaf.InvalidArgumentError, match=r"^filter: expected a pyarrow.compute.Expression"
    ):
        to_native(value)


def test_invalid_argument_is_a_value_error():
    with pytest.raises(ValueError, match="filter: "):
        to_native(pc.utf8_upper(pc.field("s")) == "A")


# --- pyarrow.parquet's list of tuples --------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "native_op"),
    [("=", "eq"), ("==", "eq"), ("!=", "not_eq"), ("<", "lt"), ("<=", "lt_eq"), (">", "gt"), (">=", "gt_eq")],
)
def test_dnf_comparisons(op, native_op):
    tree, literals = native([("a", op, 3)])
    assert tree == cmp("a", native_op, 0)
    assert literal(literals[0]) == (pa.int64(), [3])


def test_dnf_conjunction_and_disjunction():
    tree, literals = native([("a", ">", 1), ("b", "=", "x")])
    assert tree == {"and": [cmp("a", "gt", 0), cmp("b", "eq", 1)]}
    assert [literal(x) for x in literals] == [(pa.int64(), [1]), (pa.string(), ["x"])]
    tree, literals = native([[("a", ">", 1), ("b", "=", "x")], [("c", "<=", 2.5)]])
    assert tree == {"or": [{"and": [cmp("a", "gt", 0), cmp("b", "eq", 1)]}, cmp("c", "lt_eq", 2)]}
    assert literal(literals[2]) == (pa.float64(), [2.5])
    # lists work as predicates too, as pyarrow reads them
    tree, _ = native([["a", "<", 1]])
    assert tree == cmp("a", "lt", 0)
    tree, _ = native([[["a", "<", 1]], [["b", ">", 2]]])
    assert tree == {"or": [cmp("a", "lt", 0), cmp("b", "gt", 1)]}


@pytest.mark.parametrize(
    ("value", "arrow_type"),
    [
        (1, pa.int64()),
        (2.5, pa.float64()),
        ("s", pa.string()),
        (b"b", pa.binary()),
        (False, pa.bool_()),
        (datetime.date(2000, 2, 29), pa.date32()),
        (datetime.datetime(2000, 2, 29, 1, 2, 3), pa.timestamp("us")),
        (Decimal("-1.50"), pa.decimal128(3, 2)),
        (None, pa.null()),
        (pa.scalar(4, pa.int16()), pa.int16()),
    ],
)
def test_dnf_literal_types(value, arrow_type):
    _, literals = native([("c", "<", value)])
    assert literals[0].type == arrow_type
    assert len(literals[0]) == 1


def test_dnf_in_and_not_in():
    tree, literals = native([("a", "in", [1, 2, None])])
    assert tree == {"is_in": {"column": ["a"], "values": 0, "nulls": "match"}}
    assert literal(literals[0]) == (pa.int64(), [1, 2, None])
    # pyarrow: ~field.isin(values), whose nulls match: null rows are kept unless values hold a null
    tree, literals = native([("a", "not in", ("x", "y"))])
    assert tree == {"not": {"is_in": {"column": ["a"], "values": 0, "nulls": "match"}}}
    assert literal(literals[0]) == (pa.string(), ["x", "y"])
    _, literals = native([("a", "in", {3})])
    assert literal(literals[0]) == (pa.int64(), [3])
    _, literals = native([("a", "in", pa.array([1, 2], pa.int8()))])
    assert literal(literals[0]) == (pa.int8(), [1, 2])
    _, literals = native([("a", "in", pa.chunked_array([[1], [2]], pa.int16()))])
    assert literal(literals[0]) == (pa.int16(), [1, 2])
    _, literals = native([("a", "in", (v for v in [5, 6]))])
    assert literal(literals[0]) == (pa.int64(), [5, 6])


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ([], "an empty list of filters"),
        ([[]], "is not a non-empty list of (column, op, value) tuples"),
        ([("a", "=")], "('a', '=') is not a (column, op, value) tuple"),
        ([("a", "=", 1, 2)], "is not a (column, op, value) tuple"),
        ([("a", "~", 1)], "'~' is not an operator of filters"),
        ([("a", "like", "x%")], "'like' is not an operator of filters"),
        ([(1, "=", 1)], "the column of (1, '=', 1) is not a name"),
        ([(("st", "a"), "=", 1)], "is not a name"),
        ([("a", "in", "abc")], "the values of ('a', 'in', 'abc') are not a collection"),
        ([("a", "not in", 3)], "are not a collection"),
        ([("a", "=", object())], "has no Arrow type"),
        ([("a", "in", [1, "x"])], "has no Arrow type"),
        ([("a", "=", 2**64)], "has no Arrow type"),
        ([[("a", "=", 1)], "b"], "'b' is not a non-empty list"),
    ],
)
def test_dnf_errors(filters, named):
    with pytest.raises(looseleaf.InvalidArgumentError) as info:
        to_native(filters)
    assert str(info.value).startswith("filter: ")
    assert named in str(info.value)


# --- what the JSON means: a reference evaluator, against pyarrow ---------------------------

_COMPARE_FUNCTIONS = {
    "eq": pc.equal,
    "not_eq": pc.not_equal,
    "lt": pc.less,
    "lt_eq": pc.less_equal,
    "gt": pc.greater,
    "gt_eq": pc.greater_equal,
}


def _column(table: pa.Table, path: list[str]) -> pa.ChunkedArray:
    column = table.column(path[0])
    for name in path[1:]:
        column = pc.struct_field(column, name)
    return column


def evaluate(tree: dict, literals: list[pa.Array], table: pa.Table) -> pa.ChunkedArray:
    """The contract's meaning of a JSON predicate, in pyarrow compute (Kleene logic)."""
    (kind, body), *rest = tree.items()
    assert not rest
    if kind == "and":
        return reduce(pc.and_kleene, [evaluate(p, literals, table) for p in body])
    if kind == "or":
        return reduce(pc.or_kleene, [evaluate(p, literals, table) for p in body])
    if kind == "not":
        return pc.invert(evaluate(body, literals, table))
    if kind == "column":
        return _column(table, body)
    if kind == "literal":
        return pa.chunked_array([pa.array([literals[body][0].as_py()] * table.num_rows, pa.bool_())])
    if kind == "compare":
        value = literals[body["literal"]][0]
        return _COMPARE_FUNCTIONS[body["op"]](_column(table, body["column"]), value)
    if kind in ("is_null", "is_valid"):
        return getattr(pc, kind)(_column(table, body["column"]))
    if kind == "is_in":
        assert body["nulls"] in ("match", "skip")
        return pc.is_in(
            _column(table, body["column"]),
            value_set=literals[body["values"]],
            skip_nulls=body["nulls"] == "skip",
        )
    raise AssertionError(f"unknown node {kind}")


BOOLS = [True, False, None]


@st.composite
def small_tables(draw: st.DrawFn) -> pa.Table:
    n = draw(st.integers(0, 30))
    bools = st.lists(st.sampled_from(BOOLS), min_size=n, max_size=n)
    ints = st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=n, max_size=n)
    floats = st.lists(st.sampled_from([None, -1.0, -0.0, 0.0, 1.0, float("nan")]), min_size=n, max_size=n)
    strings = st.lists(st.sampled_from([None, "", "a", "b"]), min_size=n, max_size=n)
    struct_mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    st_x, st_f = draw(ints), draw(bools)
    struct = pa.StructArray.from_arrays(
        [pa.array(st_x, pa.int32()), pa.array(st_f, pa.bool_())],
        names=["x", "f"],
        mask=pa.array(struct_mask, pa.bool_()),
    )
    return pa.table(
        {
            "a": pa.array(draw(bools), pa.bool_()),
            "b": pa.array(draw(bools), pa.bool_()),
            "c": pa.array(draw(bools), pa.bool_()),
            "i": pa.array(draw(ints), pa.int64()),
            "f": pa.array(draw(floats), pa.float64()),
            "s": pa.array(draw(strings), pa.string()),
            "st": struct,
        }
    )


def _leaf_predicates() -> st.SearchStrategy[pc.Expression]:
    compare = st.sampled_from([pc.equal, pc.not_equal, pc.less, pc.less_equal, pc.greater, pc.greater_equal])
    column_and_value = st.one_of(
        st.tuples(st.just(("i",)), st.one_of(st.integers(-4, 4), st.none())),
        st.tuples(st.just(("f",)), st.sampled_from([-1.0, 0.0, -0.0, 0.5, float("nan")])),
        st.tuples(st.just(("s",)), st.sampled_from(["", "a", "ab", "b"])),
        st.tuples(st.just(("st", "x")), st.integers(-4, 4)),
    )

    def comparison(args):
        function, (path, value), literal_left = args
        field, scalar = pc.field(*path), pc.scalar(value)
        return function(scalar, field) if literal_left else function(field, scalar)

    def is_in(args):
        (path, values), skip_nulls = args
        return pc.is_in(pc.field(*path), value_set=pa.array(values), skip_nulls=skip_nulls)

    value_sets = st.one_of(
        st.tuples(st.just(("i",)), st.lists(st.one_of(st.none(), st.integers(-4, 4)), max_size=4)),
        # pyarrow cannot cast an all-null value set to string
        st.tuples(
            st.just(("s",)), st.lists(st.sampled_from(["a", "b", None]), max_size=2).map(lambda v: [*v, "c"])
        ),
        st.tuples(st.just(("f",)), st.lists(st.sampled_from([0.0, -0.0, float("nan"), None]), max_size=3)),
    )
    null_tests = st.tuples(
        st.sampled_from(["is_null", "is_valid"]),
        st.sampled_from([("i",), ("f",), ("s",), ("st", "x"), ("a",)]),
    ).map(lambda args: getattr(pc.field(*args[1]), args[0])())
    return st.one_of(
        st.tuples(compare, column_and_value, st.booleans()).map(comparison),
        st.tuples(value_sets, st.booleans()).map(is_in),
        null_tests,
        st.sampled_from(["a", "b", "c"]).map(pc.field),
        st.just(pc.field("st", "f")),
        st.sampled_from([True, False, None]).map(lambda v: pc.scalar(pa.scalar(v, pa.bool_()))),
    )


def _combine(children: st.SearchStrategy[pc.Expression]) -> st.SearchStrategy[pc.Expression]:
    def call(args):
        name, left, right = args
        if name == "&":
            return left & right
        if name == "|":
            return left | right
        return pc.Expression._call(name, [left, right])  # null-propagating and / or

    return st.one_of(
        st.tuples(st.sampled_from(["&", "|", "and", "or"]), children, children).map(call),
        children.map(lambda e: ~e),
    )


expressions = st.recursive(_leaf_predicates(), _combine, max_leaves=8)


def kept_rows(table: pa.Table, predicate) -> list[int]:
    """The positions of the rows a predicate (an expression or a mask) keeps (compared as
    positions: ``Table.equals`` never finds NaN equal to itself)."""
    rows = table.append_column("_row", pa.array(range(table.num_rows), pa.int64()))
    return rows.filter(predicate)["_row"].to_pylist()


@settings(max_examples=300)
@given(table=small_tables(), expression=expressions)
def test_json_means_what_the_expression_means(table, expression):
    """Evaluated as the contract reads it, the JSON keeps the rows pyarrow keeps."""
    tree, literals = native(expression)
    expected = kept_rows(table, expression)
    assert kept_rows(table, evaluate(tree, literals, table)) == expected, (expression, tree)


@st.composite
def dnf_filters(draw: st.DrawFn) -> list:
    def predicate():
        column, values = draw(
            st.sampled_from(
                [
                    ("i", st.one_of(st.none(), st.integers(-4, 4))),
                    ("f", st.sampled_from([-1.0, 0.0, 0.5, float("nan")])),
                    ("s", st.sampled_from(["", "a", "b"])),
                ]
            )
        )
        op = draw(st.sampled_from(["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"]))
        if op in ("in", "not in"):
            items = draw(st.lists(values.filter(lambda v: v is not None) | st.none(), max_size=3))
            if column == "s" and not any(v is not None for v in items):
                items.append("a")  # pyarrow cannot cast an all-null value set to string
            return (column, op, items)
        return (column, op, draw(values))

    conjunctions = [
        [predicate() for _ in range(draw(st.integers(1, 3)))] for _ in range(draw(st.integers(1, 3)))
    ]
    return conjunctions[0] if len(conjunctions) == 1 and draw(st.booleans()) else conjunctions


@settings(max_examples=150)
@given(table=small_tables(), filters=dnf_filters())
def test_dnf_means_what_pyarrow_parquet_means(table, filters):
    import pyarrow.parquet as pq

    tree, literals = native(filters)
    expected = kept_rows(table, pq.filters_to_expression(filters))
    assert kept_rows(table, evaluate(tree, literals, table)) == expected, (filters, tree)


def test_not_in_keeps_null_rows_as_pyarrow_does():
    """pyarrow's ``not in`` is ``~field.isin(values)``: a null row is not in values without a
    null, so it is kept (unlike ``!=``)."""
    import pyarrow.parquet as pq

    table = pa.table({"a": pa.array([1, None, 2], pa.int64())})
    for values, kept in (([1], [None, 2]), ([1, None], [2])):
        filters = [("a", "not in", values)]
        assert table.filter(pq.filters_to_expression(filters))["a"].to_pylist() == kept
        tree, literals = native(filters)
        assert table.filter(evaluate(tree, literals, table))["a"].to_pylist() == kept


# --- import cost -----------------------------------------------------------------------------


def test_a_list_of_tuples_imports_nothing():
    """A list-of-tuples filter needs neither pyarrow.compute (~20 ms to import) nor pandas, which
    the first ``pa.array`` of Python objects of a process imports when it is installed."""
    code = (
        "import sys, datetime, looseleaf\n"
        "from looseleaf.filters import to_native\n"
        "to_native([('a', '<', 1), ('b', 'in', ['x', None]), ('c', '>=', datetime.date(2020, 1, 1)),\n"
        "           ('d', '!=', 2.5), ('e', '=', True), ('f', 'not in', [b'x']), ('g', '=', None)])\n"
        "for module in ('pyarrow.compute', 'pyarrow.parquet', 'pandas'):\n"
        "    assert module not in sys.modules, module + ' imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


_PLAIN_VALUES = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.dates(),
    st.datetimes(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
)


@settings(max_examples=300)
@given(
    values=st.one_of(
        st.lists(_PLAIN_VALUES | st.none(), max_size=12),
        _PLAIN_VALUES.flatmap(lambda v: st.lists(st.sampled_from([v, None]), max_size=12)),
    )
)
def test_literal_arrays_are_what_pyarrow_infers(values):
    """The literals built without ``pa.array`` (for its first call's cost) are its arrays."""
    from looseleaf.filters import _to_array

    try:
        expected = pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        with pytest.raises(looseleaf.InvalidArgumentError, match="has no Arrow type"):
            _to_array(values, ("c", "in", values))
        return
    actual = _to_array(values, ("c", "in", values))
    assert actual.type == expected.type
    assert actual.validate(full=True) is None
    assert actual.equals(expected) or kept_nans(actual) == kept_nans(expected)  # NaN != NaN


def kept_nans(array: pa.Array) -> list:
    return ["nan" if isinstance(v, float) and v != v else v for v in array.to_pylist()]
