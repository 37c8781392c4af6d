"""Reading a Parquet data file within bounds: its footer and page headers are checked before any value is
decoded (shape, row groups, pages, nesting), and each batch's decoded size is counted before it is used, so a
small file cannot expand without bound (`open_parquet`, `parquet_batches`; a refusal is a `ParquetBound`).
Used by package reads (`audit.packages.layout.PinnedRead`), verdict files' Parquet rows and importers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from audit.fileio import (
    MAX_LINE_BYTES,
    gzip_limit,
)


class ParquetBound(ValueError):
    """A Parquet file refused at a bound of reading (see open_parquet, parquet_batches); its message is the
    reason, one line."""


def open_parquet(data: Any) -> Any:
    """A pyarrow ParquetFile over the bytes `data` (any buffer), refused with ParquetBound from its footer and
    page headers before any value is decoded (parquet_shape_problem, parquet_pages_problem). Text columns
    are read as dictionaries: one value repeated through a dictionary costs a few bytes on disk and its
    full size for every row decoded, so parquet_batches counts each batch's decoded size first. A damaged
    file raises pyarrow's own errors (several types)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    view = memoryview(data)
    footer = pq.ParquetFile(pa.BufferReader(pa.py_buffer(view)), thrift_container_size_limit=PARQUET_MAX_LIST)
    refused = parquet_shape_problem(footer.metadata, len(view)) or parquet_pages_problem(footer.metadata, view)
    if refused:
        raise ParquetBound(refused)
    texts = [c.path for c in footer.schema if c.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")]
    return pq.ParquetFile(pa.BufferReader(pa.py_buffer(view)), thrift_container_size_limit=PARQUET_MAX_LIST,
                          read_dictionary=texts)


def parquet_batches(pf: Any, size: int, batch_size: int = 8192, columns: list[str] | None = None) -> Iterator[Any]:
    """The record batches of `pf` (from open_parquet over a `size`-byte file), each counted decoded before
    it is handed out (decoded_size): ParquetBound for a value over MAX_LINE_BYTES, or past gzip_limit(size)
    in all (bounded like a .gz file). Text columns come as dictionaries (to_pylist decodes them)."""
    n = decoded = 0
    limit = gzip_limit(size)
    for batch in pf.iter_batches(batch_size=batch_size, columns=columns):
        got, longest = decoded_size(batch)
        decoded += got
        if longest > MAX_LINE_BYTES:
            raise ParquetBound(f"rows {n + 1:,} to {n + batch.num_rows:,} hold a value of {longest:,} bytes, over "
                               f"the {MAX_LINE_BYTES:,}-byte limit for a row")
        if decoded > limit:
            raise ParquetBound(f"decodes to more than {limit:,} bytes by row {n + batch.num_rows:,}, the most a "
                               f"{size:,}-byte file may expand to")
        n += batch.num_rows
        yield batch


def decoded_size(batch: Any) -> tuple[int, int]:
    """(bytes the batch's values take decoded, the longest text value) without decoding any: text by
    its lengths (a dictionary's looked up through its indices), lists by their elements."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = longest = 0

    def visit(arr: Any) -> None:
        nonlocal total, longest
        t = arr.type
        if pa.types.is_dictionary(t):
            lengths = pc.binary_length(arr.dictionary) if _is_text(t.value_type) else None
            if lengths is not None:
                per_row = lengths.take(arr.indices)
                total += pc.sum(per_row).as_py() or 0
                longest = max(longest, pc.max(per_row).as_py() or 0)
            else:
                visit(arr.dictionary.take(arr.indices))
        elif _is_text(t):
            lengths = pc.binary_length(arr)
            total += pc.sum(lengths).as_py() or 0
            longest = max(longest, pc.max(lengths).as_py() or 0)
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            total += 8 * len(arr)
            visit(arr.flatten())
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(arr.field(i))
        else:
            total += arr.nbytes

    for col in batch.columns:
        visit(col)
    return total, longest


def _is_text(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or
                pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t))


PARQUET_MAX_LIST = 65_536
"""Longest list in a Parquet file's footer (row groups, columns, ...), refused while it is parsed."""

PARQUET_MAX_ROW_GROUPS = 10_000
PARQUET_MAX_COLUMNS = 512
PARQUET_MAX_DEPTH = 16
"""Deepest nesting of a Parquet column (its definition level); audit's rows nest 3 deep at most."""


def parquet_shape_problem(md: Any, size: int) -> str | None:
    """Why a Parquet file is refused before any of it is decoded, from its footer alone, or None: too many
    row groups or columns, nesting too deep, or decoding past gzip_limit of its size (bounded like a .gz
    file: a 14 KiB file holding one 400 MiB value is refused unread). The sizes are the footer's own: a
    footer understating them is not caught here."""
    if md.num_row_groups > PARQUET_MAX_ROW_GROUPS:
        return f"has {md.num_row_groups:,} row groups, more than the {PARQUET_MAX_ROW_GROUPS:,} read"
    if md.num_columns > PARQUET_MAX_COLUMNS:
        return f"has {md.num_columns:,} columns, more than the {PARQUET_MAX_COLUMNS:,} read"
    schema = md.schema
    for i in range(md.num_columns):
        col = schema.column(i)
        if col.max_definition_level > PARQUET_MAX_DEPTH or col.max_repetition_level > PARQUET_MAX_DEPTH:
            return f"column {col.path} is nested deeper than {PARQUET_MAX_DEPTH} levels"
    limit = gzip_limit(size)
    total = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        total += sum(max(0, rg.column(c).total_uncompressed_size) for c in range(rg.num_columns))
        if total > limit:
            return (f"decodes to more than {limit:,} bytes (its footer says), the most a {size:,}-byte file may "
                    "expand to")
    return None


PARQUET_MAX_PAGES = 1_000_000


def _column_chunks(md: Any) -> Iterator[tuple[int, int, Any, int]]:
    """(row group, column, its metadata, the offset of its first page: the dictionary page when it has one)."""
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            yield g, c, col, (col.dictionary_page_offset if col.has_dictionary_page and col.dictionary_page_offset
                              else col.data_page_offset)


def parquet_pages_problem(md: Any, data: memoryview) -> str | None:
    """parquet_shape_problem's size bound from the page headers, which the reader sizes its buffers
    by (a footer may understate them): why the file is refused, or None. Headers that cannot be read
    are left to the reader, which reports them."""
    limit = gzip_limit(len(data))
    total = pages = 0
    for _, _, col, pos in _column_chunks(md):
        end = min(len(data), pos + max(0, col.total_compressed_size))
        while 0 <= pos < end:
            header = _page_header(data, pos)
            if header is None:
                break
            pos, uncompressed, compressed = header
            pos += max(0, compressed)
            total += max(0, uncompressed)
            pages += 1
            if total > limit:
                return (f"decodes to more than {limit:,} bytes (its page headers say), the most a "
                        f"{len(data):,}-byte file may expand to")
            if pages > PARQUET_MAX_PAGES:
                return f"has more than {PARQUET_MAX_PAGES:,} pages"
    return None


def parquet_unaccounted(md: Any, data: memoryview) -> str | None:
    """Why some bytes of a Parquet file are neither a page its reader decodes nor its footer, or None: the file
    must be `PAR1`, its column chunks back to back (each exactly its pages: header, then compressed data), the
    footer and its length, `PAR1`. A gap, a page index, a bloom filter or bytes after a chunk's last page could
    carry text that no reader shows (audit.release's dataset folder is written without page index or bloom
    filters, so every byte is accounted for)."""
    n = len(data)
    if n < 12 or bytes(data[:4]) != b"PAR1" or bytes(data[-4:]) != b"PAR1":
        return "is not framed by PAR1 magic bytes"
    footer_start = n - 8 - int.from_bytes(bytes(data[-8:-4]), "little")
    pos = 4
    for g, c, col, start in _column_chunks(md):
        if start != pos:
            return f"has {start - pos:,} bytes before column chunk {g}/{c} that no page holds"
        end = start + col.total_compressed_size
        while pos < end:
            header = _page_header(data, pos)
            if header is None:
                return f"has bytes in column chunk {g}/{c} that are no page"
            pos = header[0] + max(0, header[2])
        if pos != end:
            return f"column chunk {g}/{c} ends inside a page"
    if pos != footer_start:
        return f"has {footer_start - pos:,} bytes between its last page and its footer (page index, bloom filter?)"
    return None


def _page_header(data: memoryview, pos: int) -> tuple[int, int, int] | None:
    """(end of the header, uncompressed_page_size, compressed_page_size) of the Thrift compact-encoded
    PageHeader at `pos` (parquet.thrift: fields 2 and 3, i32), or None when it cannot be read."""
    n = len(data)

    def varint(i: int) -> tuple[int, int]:
        shift = out = 0
        while True:
            if i >= n or shift > 63:
                raise ValueError
            b = data[i]
            i += 1
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out, i
            shift += 7

    def skip(i: int, kind: int, depth: int) -> int:
        if depth > 32:
            raise ValueError
        if kind in (1, 2):  # booleans inside a struct carry their value in the type
            return i
        if kind == 3:
            return i + 1
        if kind in (4, 5, 6):
            return varint(i)[1]
        if kind == 7:
            return i + 8
        if kind == 8:
            length, i = varint(i)
            return i + length
        if kind in (9, 10):
            if i >= n:
                raise ValueError
            b = data[i]
            size, elem, i = b >> 4, b & 0x0F, i + 1
            if size == 15:
                size, i = varint(i)
            for _ in range(size):
                i = i + 1 if elem in (1, 2) else skip(i, elem, depth + 1)
                if i > n:
                    raise ValueError
            return i
        if kind == 11:
            size, i = varint(i)
            if size:
                if i >= n:
                    raise ValueError
                kv, i = data[i], i + 1
                for _ in range(size):
                    i = skip(skip(i, kv >> 4, depth + 1), kv & 0x0F, depth + 1)
                    if i > n:
                        raise ValueError
            return i
        if kind == 12:
            return struct(i, depth + 1)[0]
        raise ValueError

    def struct(i: int, depth: int) -> tuple[int, dict[int, int]]:
        last, found = 0, dict[int, int]()
        while True:
            if i >= n:
                raise ValueError
            b = data[i]
            i += 1
            if b == 0:
                return i, found
            kind, delta = b & 0x0F, b >> 4
            if delta:
                fid = last + delta
            else:
                z, i = varint(i)
                fid = (z >> 1) ^ -(z & 1)
            last = fid
            if depth == 0 and fid in (2, 3) and kind == 5:
                z, i = varint(i)
                found[fid] = (z >> 1) ^ -(z & 1)
            else:
                i = skip(i, kind, depth)

    try:
        end, found = struct(pos, 0)
    except ValueError:
        return None
    if 2 not in found or 3 not in found:
        return None
    return end, found[2], found[3]
