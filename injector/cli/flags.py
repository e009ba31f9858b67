"""The one table from setting names (as the library's messages name them, in backticks) to `inject`'s flags."""
from __future__ import annotations

import re

FLAGS = {
    "model": "--model", "api_base": "--api-base", "api_bases": "--api-base", "deployments": "--deployments",
    "batch": "--batch", "client": "--client", "price_in": "--price-in", "price_out": "--price-out",
    "temperature": "--temperature", "max_tokens": "--max-tokens", "timeout": "--timeout", "rpm": "--rpm",
    "tpm": "--tpm", "cache_path": "--cache", "use_cache": "--no-cache", "use_schema": "--no-schema",
    "concurrency": "--concurrency", "workers": "--workers", "executor": "--executor", "out": "--out",
    "wait=false": "--no-wait", "ray_workers": "--ray-workers", "max_cost": "--max-cost",
    "max_cost_per_invocation": "--max-cost-per-invocation", "log_prompts": "--log-prompts",
    # inject build
    "by": "--by", "test_size": "--test-size", "overwrite": "--overwrite", "include_unreviewed": "--include-unreviewed",
    "taxonomy": "--taxonomy", "require": "--require", "dedup": "--dedup", "dedup_threshold": "--dedup-threshold",
    "decontaminate": "--decontaminate", "hard_for": "--hard-for", "hard_check": "--hard-check",
    "hard_min_wrong": "--hard-min-wrong", "private": "--private", "push_to_hub": "--push-to-hub",
    "consensus": "--consensus",
    # inject eval (the judge's model is `judge`; `split` is the path, `split_name` the --split option)
    "scores": "--scores", "judge": "--judge", "prm_server": "--prm-server", "prm_model": "--prm-model",
    "threshold": "--threshold", "sweep": "--sweep", "label_rule": "--label-rule", "protocol": "--protocol",
    "split_name": "--split", "seed": "--seed",
    # inject verify
    "rollout_model": "--rollout-model", "votes": "--votes", "rollouts": "--rollouts",
}
_SETTING = re.compile(r"`([a-z_]+)(?:=([^`]*))?`")


def flag_message(message: str) -> str:
    """`message` with each `` `setting` `` / `` `setting=value` `` it names written as the flag (`--client openai`);
    names with no flag stay as they are."""
    def flag(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        if f"{name}={value}" in FLAGS:
            return FLAGS[f"{name}={value}"]
        if name not in FLAGS:
            return match.group(0)
        return FLAGS[name] if value is None else f"{FLAGS[name]} {value}"

    return _SETTING.sub(flag, message)
