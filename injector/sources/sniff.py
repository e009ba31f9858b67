"""What a file that is not JSONL is, told by its first bytes: a Git LFS pointer (what a plain `git clone` of PRM800K
gives), CSV or TSV, Parquet, gzip without its .gz, a zip, a web page. Only a first line that is not a JSON object
is looked at, so a JSONL file is never second-guessed."""
from __future__ import annotations

import json

LFS_POINTER = b"version https://git-lfs.github.com/spec/"
_MAGIC = (
    (b"PAR1", "a Parquet file, not JSONL: load it with `datasets` and save it as JSONL "
              "(Dataset.from_parquet(PATH).to_json(OUT))"),
    (b"\x1f\x8b", "gzip data, though the name does not end in .gz: name it FILE.jsonl.gz"),
    (b"PK\x03\x04", "a zip archive, not JSONL: unpack it and pass the .jsonl inside"),
    (b"SQLite format 3", "an SQLite database, not JSONL"),
)


def not_jsonl(first_line: bytes) -> str | None:
    """What the file starting with `first_line` is, as the start of a message, when it is recognisably not JSONL;
    None when it may be JSONL (a line starting with `{`) or is not recognised."""
    if first_line.startswith(LFS_POINTER):
        return ("this is a Git LFS pointer, not the data: run `git lfs pull` in the PRM800K clone (or the "
                "repository it came from), then pass the same path")
    for magic, what in _MAGIC:
        if first_line.startswith(magic):
            return f"this is {what}"
    text = first_line.decode("utf-8-sig", errors="replace").strip()
    if not text or text.startswith("{"):
        return None
    if text.startswith("<"):
        return "this looks like HTML or XML (a web page saved instead of the file?), not JSONL: download the raw file"
    for separator, name in (("\t", "TSV"), (",", "CSV")):
        if separator in text and not _is_json(text):
            columns = [column.strip().strip('"') for column in text.split(separator)][:6]
            return (f"this looks like {name} (first line: {', '.join(columns)}), not JSONL: convert it to one JSON "
                    f"object per line, e.g. pandas.read_csv(PATH{', sep=chr(9)' if name == 'TSV' else ''})"
                    ".to_json(OUT, orient='records', lines=True)")
    return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
