"""`[tool.dd]` configuration: defaults, discovery, and errors that name the key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.config import load_config
from generator.models import DDError


def write(root: Path, table: str) -> None:
    (root / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = "0"\n\n[tool.dd]\n{table}\n')


def test_defaults_and_document_discovery(tmp_path: Path) -> None:
    write(tmp_path, "")
    (tmp_path / "design" / "sub").mkdir(parents=True)
    (tmp_path / "design" / "a.md").write_text("---\ntitle: a\n---\n")
    (tmp_path / "design" / "sub" / "b.md").write_text("---\n")
    (tmp_path / "design" / "notes.md").write_text("# not a design document\n")
    (tmp_path / "design" / "diagram.png").write_bytes(b"\x89PNG")
    (tmp_path / "design" / "template.md").write_text("---\n")  # excluded by default
    (tmp_path / "design" / ".a.md.swp").write_text("editor state")  # hidden: not a document
    (tmp_path / "design" / ".drafts").mkdir()
    (tmp_path / "design" / ".drafts" / "c.md").write_text("---\n")
    config = load_config(tmp_path / "design" / "sub")  # found from a subdirectory
    assert config.root == tmp_path.resolve()
    # every file under `docs` is a document to load (those that are not valid ones are errors)
    assert [config.rel(p) for p in config.documents()] == [
        "design/a.md",
        "design/diagram.png",
        "design/notes.md",
        "design/sub/b.md",
    ]


def test_exclude_takes_globs_and_directories(tmp_path: Path) -> None:
    write(tmp_path, 'exclude = ["design/*.png", "design/drafts"]')
    (tmp_path / "design" / "drafts").mkdir(parents=True)
    (tmp_path / "design" / "a.md").write_text("---\n")
    (tmp_path / "design" / "x.png").write_bytes(b"")
    (tmp_path / "design" / "drafts" / "b.md").write_text("---\n")
    config = load_config(tmp_path)
    assert [config.rel(p) for p in config.documents()] == ["design/a.md"]


def test_errors_name_the_key_path(tmp_path: Path) -> None:
    write(tmp_path, 'docs = "design"\nunknown_key = 1')
    with pytest.raises(DDError) as info:
        load_config(tmp_path)
    rendered = str(info.value)
    assert "[tool.dd].docs:" in rendered and "[tool.dd].unknown_key:" in rendered
    assert "pyproject.toml" in rendered


def test_invalid_toml_is_reported(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.dd\n")
    with pytest.raises(DDError, match="invalid TOML"):
        load_config(tmp_path)
