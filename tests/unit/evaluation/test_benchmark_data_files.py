"""Data files named by benchmark options: confined to the operator's data folder and the bundled
data in the service, with one answer for every miss; as before on the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.evaluation.engine.benchmark import (
    Benchmark,
    DataFileNotFound,
    confined_data_files,
    resolve_data_path,
)

ROW = {"prompt": "2+2?", "answer": "4"}


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """An operator data folder, a bundled folder, and files outside both."""
    data = tmp_path / "data"
    bundled = tmp_path / "bundled"
    outside = tmp_path / "outside"
    for folder in (data, bundled, outside, data / "team"):
        folder.mkdir()
    (data / "mine.jsonl").write_text(json.dumps(ROW) + "\n")
    (data / "team" / "nested.jsonl").write_text(json.dumps(ROW) + "\n")
    (bundled / "example.jsonl").write_text(json.dumps(ROW) + "\n")
    (outside / "secret.jsonl").write_text(json.dumps(ROW) + "\n")
    (data / "escape.jsonl").symlink_to(outside / "secret.jsonl")
    return {"data": data, "bundled": bundled, "outside": outside}


def test_confined_names_resolve_inside_the_folders(layout: dict[str, Path]) -> None:
    with confined_data_files(layout["data"]):
        found = resolve_data_path("path", "mine.jsonl", bundled=layout["bundled"])
        assert found == (layout["data"] / "mine.jsonl").resolve()
        assert resolve_data_path("path", "team/nested.jsonl", bundled=layout["bundled"])
        assert resolve_data_path("path", "example.jsonl", bundled=layout["bundled"])
        folder = resolve_data_path("dir", "team", bundled=layout["bundled"], kind="dir")
        assert folder == (layout["data"] / "team").resolve()


def test_every_miss_gets_the_same_answer(layout: dict[str, Path]) -> None:
    outside = layout["outside"] / "secret.jsonl"
    probes = [
        "missing.jsonl",
        str(outside),  # exists, absolute
        "../outside/secret.jsonl",  # exists, relative escape
        "escape.jsonl",  # exists, a symlink out of the folder
        "team",  # exists, a folder where a file is needed
        "~/secret.jsonl",
        "team/../../outside/secret.jsonl",
        "pyproject.toml",  # in the working directory of the tests
        "",
    ]
    answers = set()
    with confined_data_files(layout["data"]):
        for probe in probes:
            with pytest.raises(DataFileNotFound) as caught:
                resolve_data_path("path", probe, bundled=layout["bundled"])
            assert caught.value.option == "path"
            answers.add(str(caught.value).replace(repr(probe), "NAME"))
    assert answers == {"no data file NAME in this server's benchmark data folder"}


def test_without_a_data_folder_only_bundled_data_is_readable(layout: dict[str, Path]) -> None:
    with confined_data_files(None):
        assert resolve_data_path("path", "example.jsonl", bundled=layout["bundled"])
        with pytest.raises(DataFileNotFound):
            resolve_data_path("path", "mine.jsonl", bundled=layout["bundled"])


def test_the_cli_reads_any_path_the_operator_gives(layout: dict[str, Path]) -> None:
    outside = layout["outside"] / "secret.jsonl"
    assert resolve_data_path("path", str(outside), bundled=layout["bundled"]) == outside
    assert resolve_data_path("path", "example.jsonl", bundled=layout["bundled"]).is_file()


def test_the_jsonl_benchmark_is_confined_in_the_service(layout: dict[str, Path]) -> None:
    jsonl = Benchmark.load("jsonl")
    assert jsonl.path_options == {"path"}
    outside = str(layout["outside"] / "secret.jsonl")
    assert len(jsonl.load_tasks({"path": outside})) == 1  # the CLI: the operator's file
    with confined_data_files(layout["data"]):
        assert len(jsonl.load_tasks({"path": "mine.jsonl"})) == 1
        assert len(jsonl.load_tasks({})) == 10  # the bundled example
        for probe in (outside, "missing.jsonl", "README.md"):
            with pytest.raises(DataFileNotFound):
                jsonl.load_tasks({"path": probe})


def test_the_arcagi2_data_dir_is_confined_in_the_service(layout: dict[str, Path]) -> None:
    arc = Benchmark.load("arcagi2")
    assert arc.path_options == {"data_dir"}
    with confined_data_files(layout["data"]):
        assert arc.load_tasks({"data_dir": "data"})  # the bundled sample, by its folder name
        for probe in (str(layout["outside"]), "benchmarks", "../data"):
            with pytest.raises(DataFileNotFound):
                arc.load_tasks({"data_dir": probe})
