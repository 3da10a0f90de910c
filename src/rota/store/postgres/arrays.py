"""The hot path's batch columns as binary arrays built whole, and JSON read without a
detour: what the hot-path pool's connections adapt differently from psycopg's defaults.

A batch (a completion, a renewal) sends each parameter as an array (session.as_arrays).
psycopg's generic list dumper finds each list's element type, then calls a dumper per
element: for a no-op run's completion some 3 µs of worker CPU. A column of plain ints
is packed here in one struct call, a column of texts in one pass; both go as the types
the statements cast them to (bigint[], text[]); a column of NULLs only goes as text,
which the statement's cast makes its own type. Any other column goes psycopg's way.

JSON read from the database (a claimed run's payload) is UTF-8 (the client encoding
psycopg asks for): decoded as such, not through json.loads' detection of the encoding.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from itertools import chain, repeat
from typing import Any

import psycopg
from psycopg import pq
from psycopg.adapt import AdaptersMap, Dumper
from psycopg.types.json import set_json_loads

INT8_OID, INT8_ARRAY_OID = 20, 1016
TEXT_OID, TEXT_ARRAY_OID = 25, 1009
# The binary array format (PostgreSQL's array_send): dimensions, a has-nulls flag, the
# element type, then per dimension its length and lower bound; then each element as
# its length (-1: NULL) and its bytes.
_HEADER = struct.Struct(">iiiii")
_LENGTH = struct.Struct(">i")
_NULL = _LENGTH.pack(-1)
_decode_json = json.JSONDecoder().decode


class Int8s(list[int]):
    """A batch column of ints, sent as bigint[]."""


class Texts(list[str | None]):
    """A batch column of texts (or NULLs), sent as text[]."""


class _Int8sDumper(Dumper):
    format = pq.Format.BINARY

    def __init__(self, cls: type, context: Any = None) -> None:
        super().__init__(cls, context)
        # Set here, not on the class: a class oid would also make this the dumper of
        # every bigint[] dumped by type (COPY's columns), not only of Int8s.
        self.oid = INT8_ARRAY_OID

    def dump(self, obj: Sequence[int]) -> bytes:
        count = len(obj)
        elements = struct.pack(f">{'iq' * count}", *chain.from_iterable(zip(repeat(8), obj)))
        return _HEADER.pack(1, 0, INT8_OID, count, 1) + elements


class _TextsDumper(Dumper):
    format = pq.Format.BINARY

    def __init__(self, cls: type, context: Any = None) -> None:
        super().__init__(cls, context)
        self.oid = TEXT_ARRAY_OID  # on the instance, as for _Int8sDumper

    def dump(self, obj: Sequence[str | None]) -> bytes:
        parts = [b""]
        pack = _LENGTH.pack
        for value in obj:
            if value is None:
                parts.append(_NULL)
            else:
                data = value.encode()
                parts.append(pack(len(data)))
                parts.append(data)
        parts[0] = _HEADER.pack(1, int(None in obj), TEXT_OID, len(obj), 1)
        return b"".join(parts)


def as_array(column: list[Any]) -> Any:
    """``column`` as one of the arrays built here when its values allow, else as is."""
    types = set(map(type, column))
    if types == {int}:
        return Int8s(column)
    # A column of NULLs only (a batch of successes: no error, no retry delay) goes as
    # text: the statement's cast makes it the column's type, and psycopg's own array
    # dumper would walk it value by value.
    if types and types <= {str, type(None)}:
        return Texts(column)
    return column


def _loads(data: str | bytes) -> Any:
    text = data if isinstance(data, str) else data.decode("utf-8", "surrogatepass")
    return _decode_json(text)


def hot_path_adapters() -> AdaptersMap:
    """psycopg's adapters, with the arrays above and the JSON reader."""
    adapters = AdaptersMap(psycopg.adapters)
    adapters.register_dumper(Int8s, _Int8sDumper)
    adapters.register_dumper(Texts, _TextsDumper)
    set_json_loads(_loads, adapters)
    return adapters
