"""A split's rows written as they come, a batch at a time, into the two forms `datasets` reads: the directory
`DatasetDict.save_to_disk` makes (`dataset_dict.json`; per split `data-XXXXX-of-YYYYY.arrow` shards, `state.json`
and `dataset_info.json`; `datasets.load_from_disk` reads it) and one Parquet file per split. Nothing is read back,
so a build's memory does not grow with its splits (saving a `Dataset` memory-maps every row it writes)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_SHARD_BYTES = 500 * 10**6
"""A shard of the saved dataset holds about this many bytes of rows (datasets' `config.MAX_SHARD_SIZE`)."""


class SavedSplitWriter:
    """One split: its rows into `out/<name>/` (the saved dataset's shards) and `out/parquet/<name>.parquet`,
    `batch` rows a write. A context manager: leaving it unfinished closes both files (the build removes them)."""

    def __init__(self, out: Path, name: str, features: Any, batch: int) -> None:
        from datasets.arrow_writer import ParquetWriter

        self._dir, self._features, self._batch = out / name, features, batch
        self._dir.mkdir()
        (out / "parquet").mkdir(exist_ok=True)
        self._parquet = ParquetWriter(features=features, path=str(out / "parquet" / f"{name}.parquet"),
                                      writer_batch_size=batch)
        self._shards: list[Path] = []
        self._shard: Any = None

    def __enter__(self) -> SavedSplitWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        for writer in (self._shard, self._parquet):
            if writer is not None:
                writer.close()

    def _open_shard(self) -> Any:
        from datasets.arrow_writer import ArrowWriter

        parquet = self._parquet

        class _AlsoParquet(ArrowWriter):
            """A shard writer that hands each batch's table to the Parquet writer too: the two writers have the
            same features and batches, so the table the Parquet writer would build from the same rows is this
            one; built once, not twice."""

            def write_table(self, pa_table: Any, writer_batch_size: int | None = None) -> None:
                super().write_table(pa_table, writer_batch_size)
                parquet.write_table(pa_table, writer_batch_size)

        self._shards.append(self._dir / f".data-{len(self._shards):05d}.arrow")  # named once their count is known
        return _AlsoParquet(features=self._features, path=str(self._shards[-1]), writer_batch_size=self._batch)

    def write(self, record: dict[str, Any]) -> None:
        """One row; the writers hold at most `batch` of them before writing them out."""
        from datasets.features.features import encode_nested_example

        # `Features.encode_example` less its `cast_to_python_objects` walk, which converts numpy, torch or pandas
        # values: a build's records are plain JSON values (`SplitRow.record`), so the walk changes nothing.
        example = encode_nested_example(self._features, record)
        if self._shard is None:
            self._shard = self._open_shard()
        self._shard.write(example)  # and, batch by batch, to the Parquet file (`_open_shard`)
        if self._shard._num_bytes >= MAX_SHARD_BYTES:  # bytes written so far (datasets counts them)
            self._shard.finalize()
            self._shard = None

    def finish(self) -> None:
        """Write what the writers hold, name the shards `data-XXXXX-of-YYYYY.arrow` and write the split's
        `state.json` and `dataset_info.json` as `Dataset.save_to_disk` does."""
        from datasets import DatasetInfo
        from datasets.fingerprint import generate_random_fingerprint
        from datasets.utils.py_utils import asdict

        if self._shard is None and not self._shards:  # no row: one empty shard, as datasets saves one
            self._shard = self._open_shard()
        if self._shard is not None:
            self._shard.finalize()
            self._shard = None
        self._parquet.finalize()
        names = [f"data-{n:05d}-of-{len(self._shards):05d}.arrow" for n in range(len(self._shards))]
        for shard, name in zip(self._shards, names):
            shard.rename(self._dir / name)
        state = {"_data_files": [{"filename": name} for name in names], "_fingerprint": generate_random_fingerprint(),
                 "_format_columns": None, "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False,
                 "_split": None}
        (self._dir / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True), encoding="utf-8")
        info = asdict(DatasetInfo(features=self._features))
        (self._dir / "dataset_info.json").write_text(json.dumps({key: info[key] for key in sorted(info)}, indent=2),
                                                     encoding="utf-8")


def write_dataset_dict(out: Path, names: list[str]) -> None:
    """The saved `DatasetDict`'s index of its splits (`DatasetDict.save_to_disk`'s `dataset_dict.json`)."""
    (out / "dataset_dict.json").write_text(json.dumps({"splits": names}), encoding="utf-8")
