"""benchmarks.worker_allocator: its row compares the medians of the two allocators' processes, and it has no row
where tcmalloc is missing."""

from benchmarks import worker_allocator


def test_the_row_is_the_median_step_with_tcmalloc_against_glibc(monkeypatch):
    monkeypatch.setattr(worker_allocator, "tcmalloc_library", lambda: "libtcmalloc_minimal.so.4")
    times = {"libtcmalloc_minimal.so.4": [3.0, 2.0, 9.0], None: [4.0, 4.0, 1.0]}
    asked = []

    def fake_child(preload, steps):
        asked.append((preload, steps))
        return times[preload]

    monkeypatch.setattr(worker_allocator, "child_seconds", fake_child)
    [row] = worker_allocator.comparisons(steps=3, turns=2)
    assert asked == [("libtcmalloc_minimal.so.4", 3), (None, 3)] * 2  # the two processes take turns
    assert (row.ours, row.peer) == (3000.0, 4000.0)
    assert row.ratio == 4000 / 3000


def test_no_row_without_tcmalloc(monkeypatch, capsys):
    monkeypatch.setattr(worker_allocator, "tcmalloc_library", lambda: None)
    assert worker_allocator.comparisons() == []
    assert "make tcmalloc" in capsys.readouterr().err
