"""Per-unit work done once per run: the taxonomy's hash and prompts' static parts while it is `fixed`, and the
progress bar redrawn at a fixed rate, never per unit; with the same results as before."""
from __future__ import annotations

import io

from injector import Taxonomy, Trajectory, render_messages
from injector.runner.loop import RunProgress
from injector.runner.progress import BAR_INTERVAL_SECONDS, ProgressDisplay

TRAJECTORY = Trajectory(id="t", question="What is $2 + 3$?", steps=["$2 + 3 = 5$.", "# Answer\n\n5"], answer="5")


def test_a_fixed_taxonomy_hashes_once_and_renders_the_same(monkeypatch):
    taxonomy = Taxonomy.load()
    category = taxonomy.category("counterfactual")
    expected_hash = taxonomy.file_hash()
    expected = [render_messages(taxonomy, category, TRAJECTORY, output_mode=mode) for mode in ("edits", "full")]
    dumps = []
    original = Taxonomy.model_dump_json
    monkeypatch.setattr(Taxonomy, "model_dump_json", lambda self, **kw: dumps.append(1) or original(self, **kw))
    with taxonomy.fixed():
        assert [taxonomy.file_hash() for _ in range(5)] == [expected_hash] * 5
        assert len(dumps) == 1
        for _ in range(3):
            assert [render_messages(taxonomy, category, TRAJECTORY, output_mode=mode)
                    for mode in ("edits", "full")] == expected
    # Outside a run, a change made in Python shows at once.
    category.definition = category.definition + " Changed."
    assert taxonomy.file_hash() != expected_hash
    assert render_messages(taxonomy, category, TRAJECTORY, output_mode="edits") != expected[0]


class FakeBar:
    """Records what the display draws (rich's Progress stands behind it in a terminal)."""

    def __init__(self) -> None:
        self.drawn: list[int] = []

    def update(self, task, **values) -> None:
        self.drawn.append(values["completed"])

    def __exit__(self, *exc) -> None:
        return None


def test_the_bar_is_redrawn_at_a_fixed_rate_and_ends_on_the_last_count(monkeypatch):
    now = [100.0]
    monkeypatch.setattr("injector.runner.progress.time.monotonic", lambda: now[0])
    display = ProgressDisplay(stream=io.StringIO(), interactive=True)
    display._bar = bar = FakeBar()  # what __enter__ makes in a terminal
    progress = RunProgress(planned=1000)
    for unit in range(1000):  # 1,000 units in 1 s of (fake) time
        progress.done = unit + 1
        display.update(progress)
        now[0] += 0.001
    display.__exit__(None, None, None)
    assert 2 <= len(bar.drawn) <= 1 / BAR_INTERVAL_SECONDS + 2  # not 1,000 redraws
    assert bar.drawn[-1] == 1000
