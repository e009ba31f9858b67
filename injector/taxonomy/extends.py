"""`extends:`: how a child taxonomy's YAML overrides and adds to its bundled parent's."""
from __future__ import annotations

from typing import Any


def merge(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """The child overrides the parent's keys; categories merge by id (rules key by key); leak phrases add up."""
    merged = {**parent, **{k: v for k, v in child.items() if k not in ("categories", "label_leak_phrases")}}
    merged["label_leak_phrases"] = [*parent.get("label_leak_phrases", []), *child.get("label_leak_phrases", [])]
    categories = {c["id"]: c for c in parent.get("categories", [])}
    for category in child.get("categories") or []:
        base = categories.get(category.get("id"), {})
        overrides = {**base, **category}
        if "rules" in base or "rules" in category:
            overrides["rules"] = {**(base.get("rules") or {}), **(category.get("rules") or {})}
        categories[category.get("id")] = overrides
    merged["categories"] = list(categories.values())
    return merged

