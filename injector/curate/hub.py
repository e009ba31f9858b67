"""`inject build --push-to-hub REPO [--private]`: a built split on the Hugging Face Hub, complete — the card as the
repository's README.md (its front matter names the Parquet files as the dataset's splits), the Parquet files, and
every export (JSONL, PRMBench's per-category files, ProcessBench, judge and ProJudgeBench forms) — in one commit.

The `save_to_disk` copy stays local: the Hub reads the Parquet files. `HF_ENDPOINT` and `HF_TOKEN` are honoured as
huggingface_hub honours them (a stand-in of the Hub's HTTP API on 127.0.0.1 is what the tests push to).
"""
from __future__ import annotations

import os
from pathlib import Path

from injector.util.errors import UserError

HUB_FILES = ("README.md", "parquet/*", "jsonl/*", "prmbench/*", "processbench/*", "judge/*", "projudge/*")
"""What a push uploads, relative to the split directory."""


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP client's own errors: huggingface_hub 1.x talks through httpx, 2.x through httpx2."""
    import importlib

    errors = []
    for name in ("httpx2", "httpx"):
        try:
            errors.append(importlib.import_module(name).HTTPError)
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


def push_split(split_dir: str | Path, repo: str, *, private: bool = False, toolkit_version: str = "") -> str:
    """Create (or reuse) the dataset repository `repo` and upload the split's files in one commit; its URL."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    split_dir = Path(split_dir)
    api = HfApi(endpoint=os.environ.get("HF_ENDPOINT") or None)
    unreachable: tuple[type[BaseException], ...] = (*_transport_errors(), OSError)
    again = (f"the split is written at {split_dir}; push it again with `hf upload {repo} {split_dir} "
             "--repo-type dataset`")
    try:
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True)
        commit = api.upload_folder(repo_id=repo, repo_type="dataset", folder_path=split_dir,
                                   allow_patterns=list(HUB_FILES),
                                   commit_message=f"Split built with prm-injector {toolkit_version}".strip())
    except OfflineModeIsEnabled:
        raise UserError(f"--push-to-hub {repo}: HF_HUB_OFFLINE is set, so nothing can reach the Hub; unset it; "
                        f"{again}") from None
    except HfHubHTTPError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"--push-to-hub {repo}: the Hub refused the push ({first}); check the repository name "
                        f"and your token (HF_TOKEN, or `hf auth login`); {again}") from None
    except unreachable as exc:  # no connection, a timeout, a broken pipe
        raise UserError(f"--push-to-hub {repo}: cannot reach the Hub ({exc}); {again}") from None
    return str(getattr(commit, "commit_url", commit))
