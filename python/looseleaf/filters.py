"""Filters of reads: a ``pyarrow.compute.Expression`` or ``pyarrow.parquet``'s list of tuples,
turned into the engine's form by :func:`to_native`.

The engine takes a filter as a JSON predicate plus a list of Arrow arrays, the literals the JSON
refers to by index::

    {"and": [P, ...]}  {"or": [P, ...]}  {"not": P}
    {"compare": {"column": [name, child, ...], "op": "eq"|"not_eq"|"lt"|"lt_eq"|"gt"|"gt_eq",
                 "literal": I}}
    {"is_in": {"column": [...], "values": I, "nulls": "match"|"skip"|"emit_null"|"inconclusive"}}
    {"is_null": {"column": [...]}}  {"is_valid": {"column": [...]}}
    {"column": [...]}  (a boolean column)  {"literal": I}  (a boolean or null literal)

``and``/``or``/``not`` follow Kleene logic, as ``&``, ``|`` and ``~`` of pyarrow expressions do.

A pyarrow expression has no public introspection; it is read through its pickle form, an Arrow
IPC file whose schema metadata lists the expression in prefix order (Arrow C++
``compute/expression.cc``, ``Serialize``): ``literal: <column>`` (row 0 of that column),
``field_ref: <name>``, ``nested_field_ref: <n>`` then ``n`` ``field_ref`` entries,
``call: <function>`` then its arguments, optionally ``options: <column>`` (a struct scalar of the
options' fields), then ``end: <function>``. Keys repeat, so the metadata is read as ordered pairs
through the Arrow C data interface (``Schema.metadata`` is a dict, which keeps one value per key).

Importing this module costs nothing beyond ``pyarrow``: ``pyarrow.compute`` is imported only
when a filter that is not a list is converted (and whoever built an expression has imported it),
and the literals of a list of tuples are built without ``pa.array``, whose first call in a
process imports pandas when it is installed.
"""

from __future__ import annotations

import ctypes
import datetime
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

import pyarrow as pa

from .exceptions import InvalidArgumentError

if TYPE_CHECKING:
    import pyarrow.compute as pc

    Filter: TypeAlias = pc.Expression | Sequence[Sequence[Any]]

__all__ = ["Pushdown", "pushdown", "to_native"]

#: Comparison functions of Arrow compute, by the engine's name of the operator.
_COMPARE = {
    "equal": "eq",
    "not_equal": "not_eq",
    "less": "lt",
    "less_equal": "lt_eq",
    "greater": "gt",
    "greater_equal": "gt_eq",
}
#: ``literal OP column`` as ``column FLIPPED[OP] literal``.
_FLIPPED = {"eq": "eq", "not_eq": "not_eq", "lt": "gt", "lt_eq": "gt_eq", "gt": "lt", "gt_eq": "lt_eq"}
#: The operators of ``pyarrow.parquet``'s filter tuples.
_DNF_COMPARE = {"=": "eq", "==": "eq", "!=": "not_eq", "<": "lt", "<=": "lt_eq", ">": "gt", ">=": "gt_eq"}
#: ``SetLookupOptions.null_matching_behavior`` (MATCH, SKIP, EMIT_NULL, INCONCLUSIVE).
_NULL_MATCHING = ("match", "skip", "emit_null", "inconclusive")

# A node of a parsed expression: ("field", (name, ...)), ("literal", 1-row array),
# or ("call", function name, [argument nodes], options struct scalar or None).
_Node = tuple[Any, ...]


def to_native(filter: Filter) -> tuple[str, list[pa.Array]]:
    """The engine's form of a read's ``filter``: a JSON predicate and the arrays of its literals.

    ``filter`` is a ``pyarrow.compute.Expression`` of comparisons of a column with a literal
    (``equal`` ... ``greater_equal``, either side), ``is_in``, ``is_null`` (without
    ``nan_is_null``), ``is_valid``, ``&``/``|``/``~`` (``and[_kleene]``, ``or[_kleene]``,
    ``invert``), boolean columns and boolean literals; or the list-of-tuples form of
    ``pyarrow.parquet.read_table(filters=...)``: ``(column, op, value)`` tuples (AND), or a list
    of lists of them (OR of ANDs), ``op`` one of ``=``, ``==``, ``!=``, ``<``, ``<=``, ``>``,
    ``>=``, ``in``, ``not in``; ``column`` a top-level name (a nested field needs an
    expression: ``pc.field("meta", "score")``). Anything else raises
    :class:`~looseleaf.InvalidArgumentError` naming what is not understood."""
    import json  # here: 1.5 ms of every process's first import otherwise

    literals: list[pa.Array] = []
    if isinstance(filter, list | tuple):
        node = _from_dnf(filter, literals)
    else:
        import pyarrow.compute as pc

        if not isinstance(filter, pc.Expression):
            raise InvalidArgumentError(
                "filter: expected a pyarrow.compute.Expression or a list of (column, op, value) "
                f"tuples, got {type(filter).__name__}"
            )
        node = _Converter(literals).predicate(_parse(filter), _POSITIVE)
    return json.dumps(node, separators=(",", ":")), literals


class Pushdown(NamedTuple):
    """What :func:`pushdown` makes of a filter."""

    #: The engine's form of the conjuncts it evaluates (``None``: none of them).
    native: tuple[str, list[pa.Array]] | None
    #: Whether that is the whole filter; if not, the filter must be applied to what is read.
    exact: bool
    #: The top-level columns the filter refers to, when it is not exact (to apply it afterwards).
    columns: frozenset[str]


def pushdown(filter: Filter) -> Pushdown:
    """The part of ``filter`` the engine can evaluate: all of it when :func:`to_native` takes
    it; otherwise, for an expression, those of its top-level conjuncts (``a & b & ...``) that it
    takes, and the filter must also be applied to the rows read (by pyarrow). For callers that
    may pass any expression and expect exact results (DuckDB, Polars: see
    :mod:`looseleaf.arrow_dataset`); a list of tuples is all or an error, as in
    :func:`to_native`."""
    try:
        native = to_native(filter)
    except InvalidArgumentError:
        if isinstance(filter, list | tuple):
            raise
    else:
        return Pushdown(native, True, frozenset())
    try:
        node = _parse(filter)
    except InvalidArgumentError:
        return Pushdown(None, False, frozenset())
    import json

    literals: list[pa.Array] = []
    converter = _Converter(literals)
    members: list[dict[str, Any]] = []
    for conjunct in _conjuncts(node):
        before = len(literals)
        try:
            members.append(converter.predicate(conjunct, _POSITIVE))
        except InvalidArgumentError:
            del literals[before:]
    native = (json.dumps({"and": members}, separators=(",", ":")), literals) if members else None
    return Pushdown(native, False, _top_level_fields(node))


def _conjuncts(node: _Node) -> list[_Node]:
    """The members of a chain of ``and``s (all of ``node`` if it is not one). ``and`` and
    ``and_kleene`` keep the same rows (those where every member is true)."""
    out: list[_Node] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if current[0] == "call" and current[1] in ("and", "and_kleene"):
            pending.extend(reversed(current[2]))
        else:
            out.append(current)
    return out


def _top_level_fields(node: _Node) -> frozenset[str]:
    """The top-level names of the fields ``node`` refers to."""
    names: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if current[0] == "field":
            names.add(current[1][0])
        elif current[0] == "call":
            pending.extend(current[2])
    return frozenset(names)


# --- pyarrow expressions --------------------------------------------------------------------


def _parse(expression: Any) -> _Node:
    """The tree of an expression, read from its serialized form."""
    import pyarrow.ipc

    try:
        _, (buffer,) = expression.__reduce__()
    except (pa.ArrowException, ValueError, TypeError) as e:
        # A field referenced by position (pc.field(0)) cannot be serialized.
        raise InvalidArgumentError(f"filter: cannot read the expression {expression}: {e}") from None
    reader = pyarrow.ipc.open_file(buffer)
    table = reader.read_all()
    pairs = _metadata_pairs(reader.schema)

    def column(value: str) -> pa.Array:
        chunks = table.column(int(value)).chunks
        return chunks[0].slice(0, 1) if len(chunks) == 1 else pa.concat_arrays(chunks).slice(0, 1)

    def malformed(why: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"filter: cannot read the expression {expression}: {why}")

    # Read without recursion: a chain of a thousand ORs (as reduce(operator.or_, ...) makes)
    # nests a thousand deep. An open call is [name, arguments, options, 0] until its "end"; a
    # nested_field_ref is ["", names, None, how many names are still to come].
    calls: list[list[Any]] = []
    for key, value in pairs:
        if calls and calls[-1][3] > 0:  # the field_ref entries of a nested_field_ref
            if key != "field_ref":
                raise malformed("a nested field reference without its names")
            calls[-1][1].append(value)
            calls[-1][3] -= 1
            if calls[-1][3] > 0:
                continue
            node: _Node = ("field", tuple(calls.pop()[1]))
        elif key == "literal":
            node = ("literal", column(value))
        elif key == "field_ref":
            node = ("field", (value,))
        elif key == "nested_field_ref":
            if not value.isdigit() or int(value) == 0:
                raise malformed(f"a nested field reference of {value!r} names")
            calls.append(["", [], None, int(value)])
            continue
        elif key == "call":
            calls.append([value, [], None, 0])
            continue
        elif key == "options" and calls:
            options = column(value)[0]
            calls[-1][2] = options if options.is_valid else None
            continue
        elif key == "end" and calls:
            name, arguments, options, _ = calls.pop()
            node = ("call", name, arguments, options)
        else:
            raise malformed(f"unexpected {key!r}")
        if not calls:
            return node
        calls[-1][1].append(node)
    raise malformed("it ends early")


class _ArrowSchema(ctypes.Structure):
    """``struct ArrowSchema`` of the Arrow C data interface."""

    _fields_ = (
        ("format", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64),
        ("n_children", ctypes.c_int64),
        ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p),
        ("release", ctypes.c_void_p),
        ("private_data", ctypes.c_void_p),
    )


_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


def _metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """A schema's metadata as ordered (key, value) pairs, duplicate keys kept: the C data
    interface encodes it as an int32 count, then each key and value as an int32 length and
    bytes (native byte order)."""
    capsule = schema.__arrow_c_schema__()  # released when collected, after the reading below
    address = _ArrowSchema.from_address(_capsule_pointer(capsule, b"arrow_schema")).metadata
    if not address:
        return []

    def int32(at: int) -> int:
        return ctypes.c_int32.from_address(at).value

    pairs = []
    at = address + 4
    for _ in range(int32(address)):
        key_length = int32(at)
        key = ctypes.string_at(at + 4, key_length).decode()
        at += 4 + key_length
        value_length = int32(at)
        value = ctypes.string_at(at + 4, value_length).decode()
        at += 4 + value_length
        pairs.append((key, value))
    return pairs


def _show(node: _Node, depth: int = 3) -> str:
    """A node as text, for errors (``...`` below ``depth`` levels of calls)."""
    if node[0] == "field":
        return ".".join(node[1])
    if node[0] == "literal":
        scalar = node[1][0]
        return f"{scalar.as_py()!r} ({scalar.type})"
    if depth == 0:
        return f"{node[1]}(...)"
    return f"{node[1]}({', '.join(_show(a, depth - 1) for a in node[2])})"


# The polarity of a sub-predicate: under an even number of negations (only the rows where it is
# true matter), an odd number (only those where it is false), or both (it must be exact).
_POSITIVE, _NEGATIVE, _BOTH = "positive", "negative", "both"
_OPPOSITE = {_POSITIVE: _NEGATIVE, _NEGATIVE: _POSITIVE, _BOTH: _BOTH}


def _not(predicate: dict[str, Any]) -> dict[str, Any]:
    """``{"not": predicate}``, without a double negation (an identity in Kleene logic)."""
    if list(predicate) == ["not"]:
        return predicate["not"]
    return {"not": predicate}


class _Converter:
    def __init__(self, literals: list[pa.Array]) -> None:
        self.literals = literals

    def literal(self, array: pa.Array) -> int:
        self.literals.append(array)
        return len(self.literals) - 1

    def predicate(self, node: _Node, polarity: str) -> dict[str, Any]:
        kind = node[0]
        if kind == "field":
            return {"column": list(node[1])}
        if kind == "literal":
            t = node[1].type
            if not (pa.types.is_boolean(t) or pa.types.is_null(t)):
                raise InvalidArgumentError(
                    f"filter: the literal {_show(node)} is not a predicate (a boolean is expected)"
                )
            return {"literal": self.literal(node[1])}
        _, name, arguments, options = node
        if name in _COMPARE:
            return self.compare(node)
        if name in ("and_kleene", "or_kleene"):
            return self.junction(name[:-7], arguments, polarity)
        if name == "and":
            # Null if any argument is null. Only its true rows matter at positive polarity,
            # and they are and_kleene's.
            if polarity == _POSITIVE:
                return self.junction("and", arguments, polarity)
            return _not(self.null_propagating_or([_not(p) for p in self.exact(arguments)]))
        if name == "or":
            # Null if any argument is null. Its false rows are or_kleene's.
            if polarity == _NEGATIVE:
                return self.junction("or", arguments, polarity)
            return self.null_propagating_or(self.exact(arguments))
        if name == "invert":
            (argument,) = self.arity(node, 1)
            return _not(self.predicate(argument, _OPPOSITE[polarity]))
        if name in ("is_null", "is_valid"):
            (argument,) = self.arity(node, 1)
            if name == "is_null" and options is not None and options["nan_is_null"].as_py():
                raise InvalidArgumentError(
                    f"filter: is_null with nan_is_null=True is not supported (in {_show(node)})"
                )
            return {name: {"column": self.column(argument, node)}}
        if name == "is_in":
            return self.is_in(node)
        raise InvalidArgumentError(f"filter: function {name!r} is not supported (in {_show(node)})")

    def arity(self, node: _Node, count: int) -> list[_Node]:
        if len(node[2]) != count:
            raise InvalidArgumentError(f"filter: {node[1]} takes {count} argument(s): {_show(node)}")
        return node[2]

    def column(self, argument: _Node, node: _Node) -> list[str]:
        if argument[0] != "field":
            raise InvalidArgumentError(
                f"filter: {node[1]} applies to a column, not to {_show(argument)} (in {_show(node)})"
            )
        return list(argument[1])

    def compare(self, node: _Node) -> dict[str, Any]:
        left, right = self.arity(node, 2)
        op = _COMPARE[node[1]]
        for argument in (left, right):
            if argument[0] == "call":
                raise InvalidArgumentError(
                    f"filter: function {argument[1]!r} is not supported (in {_show(node)}): a comparison "
                    "takes a column and a literal"
                )
        if left[0] == "literal" and right[0] == "field":
            left, right, op = right, left, _FLIPPED[op]
        if left[0] != "field" or right[0] != "literal":
            raise InvalidArgumentError(
                f"filter: {node[1]} must compare a column with a literal: {_show(node)} is not supported"
            )
        return {"compare": {"column": list(left[1]), "op": op, "literal": self.literal(right[1])}}

    def is_in(self, node: _Node) -> dict[str, Any]:
        (argument,) = self.arity(node, 1)
        column = self.column(argument, node)
        options = node[3]
        if options is None:
            raise InvalidArgumentError(f"filter: is_in without a value set: {_show(node)}")
        names = {field.name for field in options.type}
        skip_nulls = options["skip_nulls"] if "skip_nulls" in names else None
        if skip_nulls is not None and skip_nulls.is_valid:  # older pyarrow; wins as in Arrow C++
            nulls = "skip" if skip_nulls.as_py() else "match"
        elif "null_matching_behavior" in names:
            behavior = options["null_matching_behavior"].as_py()
            if behavior not in range(len(_NULL_MATCHING)):
                raise InvalidArgumentError(f"filter: is_in null_matching_behavior {behavior} is not known")
            nulls = _NULL_MATCHING[behavior]
        else:
            nulls = "match"
        values = options["value_set"].values
        if values is None:
            raise InvalidArgumentError(f"filter: is_in without a value set: {_show(node)}")
        return {"is_in": {"column": column, "values": self.literal(values), "nulls": nulls}}

    def junction(self, op: str, arguments: list[_Node], polarity: str) -> dict[str, Any]:
        """``{"and"|"or": [...]}`` of the arguments, nested ones of the same kind flattened
        (without recursion: ``reduce(operator.or_, ...)`` of many predicates nests deep)."""
        # Arrow's null-propagating and (or) is and_kleene (or_kleene) at this polarity.
        same = {f"{op}_kleene"} | ({op} if polarity == (_POSITIVE if op == "and" else _NEGATIVE) else set())
        members: list[dict[str, Any]] = []
        pending = list(reversed(arguments))
        while pending:
            argument = pending.pop()
            if argument[0] == "call" and argument[1] in same:
                pending.extend(reversed(argument[2]))
                continue
            member = self.predicate(argument, polarity)
            members.extend(member[op] if list(member) == [op] else [member])
        return {op: members}

    def exact(self, arguments: list[_Node]) -> list[dict[str, Any]]:
        return [self.predicate(a, _BOTH) for a in arguments]

    @staticmethod
    def null_propagating_or(members: list[dict[str, Any]]) -> dict[str, Any]:
        """Arrow's ``or`` (null if any member is null, else the members' or) in Kleene logic:
        each member's validity (``x or not x``: true, or null) and the Kleene or of them all."""
        valid = [{"or": [p, _not(p)]} for p in members]
        return {"and": [*valid, {"or": members}]}


# --- pyarrow.parquet's list of tuples ------------------------------------------------------


def _from_dnf(filters: Sequence[Any], literals: list[pa.Array]) -> dict[str, Any]:
    """``[(column, op, value), ...]`` (AND) or ``[[(column, op, value), ...], ...]`` (OR of
    ANDs), as ``pyarrow.parquet.filters_to_expression`` reads them."""
    if len(filters) == 0:
        raise InvalidArgumentError("filter: an empty list of filters")
    first = filters[0]
    if isinstance(first, list | tuple) and (
        (len(first) == 3 and isinstance(first[1], str))  # a (column, op, value) tuple
        or (len(first) > 0 and not isinstance(first[0], list | tuple))
    ):
        conjunctions: Sequence[Any] = [filters]
    else:
        conjunctions = filters
    disjunction = []
    for conjunction in conjunctions:
        if not isinstance(conjunction, list | tuple) or len(conjunction) == 0:
            raise InvalidArgumentError(
                f"filter: {conjunction!r} is not a non-empty list of (column, op, value) tuples"
            )
        members = [_dnf_predicate(p, literals) for p in conjunction]
        disjunction.append(members[0] if len(members) == 1 else {"and": members})
    return disjunction[0] if len(disjunction) == 1 else {"or": disjunction}


def _dnf_predicate(predicate: Any, literals: list[pa.Array]) -> dict[str, Any]:
    if not isinstance(predicate, list | tuple) or len(predicate) != 3:
        raise InvalidArgumentError(f"filter: {predicate!r} is not a (column, op, value) tuple")
    column, op, value = predicate
    if not isinstance(column, str):
        raise InvalidArgumentError(
            f"filter: the column of {predicate!r} is not a name (a nested field needs a "
            "pyarrow.compute expression: pc.field('a', 'b'))"
        )
    if op in _DNF_COMPARE:
        literals.append(_to_array([value], predicate))
        return {"compare": {"column": [column], "op": _DNF_COMPARE[op], "literal": len(literals) - 1}}
    if op in ("in", "not in"):
        if isinstance(value, pa.ChunkedArray):
            value = value.combine_chunks()
        if not isinstance(value, pa.Array):
            if isinstance(value, str | bytes | dict) or not hasattr(value, "__iter__"):
                raise InvalidArgumentError(f"filter: the values of {predicate!r} are not a collection")
            value = _to_array(list(value), predicate)
        literals.append(value)
        # The values' nulls match null rows, as Expression.isin's default options say; so
        # "not in" keeps the null rows unless the values hold a null (pyarrow: ~field.isin(values)).
        is_in = {"is_in": {"column": [column], "values": len(literals) - 1, "nulls": "match"}}
        return is_in if op == "in" else _not(is_in)
    raise InvalidArgumentError(f"filter: {op!r} is not an operator of filters (in {predicate!r})")


def _to_array(values: list[Any], predicate: Any) -> pa.Array:
    """``pa.array(values)``: the type pyarrow infers for them."""
    array = _plain_array(values)
    if array is not None:
        return array
    try:
        return pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise InvalidArgumentError(f"filter: the value of {predicate!r} has no Arrow type: {e}") from None


_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1)
_MICROSECOND = datetime.timedelta(microseconds=1)


def _plain_array(values: list[Any]) -> pa.Array | None:
    """``pa.array(values)`` built from buffers when the values are all of one plain Python type
    (``bool``, ``int`` within int64, ``float``, ``str``, ``bytes``, ``datetime.date``, naive
    ``datetime.datetime``) or ``None``; else ``None``. The first ``pa.array`` of Python objects
    in a process imports pandas when it is installed (a few hundred ms of a first read)."""
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) > 1:
        return None
    n = len(values)
    if not kinds:
        return pa.nulls(n)
    (kind,) = kinds
    nulls = sum(v is None for v in values)
    validity = _bitmap([v is not None for v in values]) if nulls else None
    if kind is bool:
        return pa.Array.from_buffers(pa.bool_(), n, [validity, _bitmap([bool(v) for v in values])], nulls)
    if kind is int:
        if not all(-(2**63) <= v < 2**63 for v in values if v is not None):
            return None  # pyarrow's choice (uint64, or an error)
        data = struct.pack(f"={n}q", *(0 if v is None else v for v in values))
        return pa.Array.from_buffers(pa.int64(), n, [validity, pa.py_buffer(data)], nulls)
    if kind is float:
        data = struct.pack(f"={n}d", *(0.0 if v is None else v for v in values))
        return pa.Array.from_buffers(pa.float64(), n, [validity, pa.py_buffer(data)], nulls)
    if kind is datetime.date:
        days = struct.pack(f"={n}i", *(0 if v is None else (v - _EPOCH_DATE).days for v in values))
        return pa.Array.from_buffers(pa.date32(), n, [validity, pa.py_buffer(days)], nulls)
    if kind is datetime.datetime:
        if any(v is not None and v.tzinfo is not None for v in values):
            return None  # pyarrow names the time zone
        micros = [0 if v is None else (v - _EPOCH) // _MICROSECOND for v in values]
        data = struct.pack(f"={n}q", *micros)
        return pa.Array.from_buffers(pa.timestamp("us"), n, [validity, pa.py_buffer(data)], nulls)
    if kind is str or kind is bytes:
        encoded = [b"" if v is None else v.encode() if kind is str else v for v in values]
        offsets = [0]
        for item in encoded:
            offsets.append(offsets[-1] + len(item))
        if offsets[-1] >= 2**31:
            return None
        data = pa.py_buffer(b"".join(encoded))
        buffers = [validity, pa.py_buffer(struct.pack(f"={n + 1}i", *offsets)), data]
        return pa.Array.from_buffers(pa.string() if kind is str else pa.binary(), n, buffers, nulls)
    return None


def _bitmap(bits: list[bool]) -> pa.Buffer:
    """An Arrow bitmap (least significant bit first)."""
    out = bytearray((len(bits) + 7) // 8)
    for i, bit in enumerate(bits):
        if bit:
            out[i >> 3] |= 1 << (i & 7)
    return pa.py_buffer(bytes(out))
