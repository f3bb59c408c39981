"""`gauntlet eval upload` against a local S3-compatible server (moto's, on 127.0.0.1)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.commands import upload
from app.evaluation.commands.folder import RunFolderStore, run_folder_for
from app.evaluation.commands.upload import UploadError, UploadTarget
from app.evaluation.engine.benchmark import Benchmark
from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.runner import RunConfig, run_benchmark
from app.evaluation.engine.types import ModelSpec


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # an unreachable endpoint fails at once
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", upload.ENDPOINT_ENV, upload.BUCKET_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def s3(endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


@pytest.fixture
def bucket(s3: Any) -> str:
    name = f"runs-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder made by the engine, plus a leftover of an interrupted atomic write."""
    root = tmp_path_factory.mktemp("runs")
    benchmark = Benchmark.load("arcagi2")
    config = RunConfig(
        "arcagi2", "seq@k", 2, "cell_match", ModelSpec("offline/solver-sim", temperature=1.0),
        max_tasks=3,
    )  # fmt: skip
    folder = run_folder_for(root, benchmark, config)
    asyncio.run(run_benchmark(benchmark, config, RunFolderStore(folder), LLMClient()))
    (folder / "task-1" / ".summary.json.123.abcd.tmp").write_text("{half")
    return folder


def local_files(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file() and not path.name.startswith(".")
    }


def remote_files(s3: Any, bucket: str) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {
        item["Key"]: s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read() for item in listed
    }


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gauntlet eval")
    commands = parser.add_subparsers(dest="eval_command", required=True)
    upload.add_parser(commands)
    return parser.parse_args(["upload", *argv])


def test_upload_copies_the_run_folder_without_config_json_and_verifies_it(
    run_folder: Path, endpoint: str, s3: Any, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(
        str(run_folder), "--bucket", bucket, "--prefix", "team/a", "--endpoint-url", endpoint
    )
    assert args.handler(args) == 0
    output = capsys.readouterr().out
    levels = "/".join(run_folder.parts[-5:])
    assert levels == "arcagi2-sample/seqk/offline__solver-sim/deterministic/cell_match"
    expected = {
        f"team/a/{levels}/{name}": content
        for name, content in local_files(run_folder).items()
        if name != "config.json"
    }
    assert remote_files(s3, bucket) == expected
    assert "config.json" in local_files(run_folder)
    assert f"uploaded {len(expected)} files" in output and f"verified {len(expected)}" in output


def test_a_second_upload_skips_identical_objects_and_sends_changes_only(
    run_folder: Path, endpoint: str, bucket: str, tmp_path: Path
) -> None:
    target = UploadTarget(bucket=bucket, endpoint_url=endpoint)
    first = upload.upload(run_folder, target)
    assert first.uploaded and not first.skipped
    again = upload.upload(run_folder, target)
    assert again.uploaded == [] and len(again.skipped) == len(first.uploaded)
    assert again.verified == len(first.uploaded)

    copy = tmp_path / "/".join(run_folder.parts[-5:])
    copy.mkdir(parents=True)
    for name, content in local_files(run_folder).items():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes(content)
    (copy / "summary.json").write_text('{"changed": true}\n')
    changed = upload.upload(copy, target, verify="download")
    assert [key.rsplit("/", 1)[-1] for key in changed.uploaded] == ["summary.json"]


class CorruptingClient:
    """A boto3 client whose uploads of one key arrive damaged, as a faulty network would do."""

    def __init__(self, client: Any, damaged_suffix: str) -> None:
        self.client = client
        self.damaged_suffix = damaged_suffix

    def put_object(self, **arguments: Any) -> Any:
        if arguments["Key"].endswith(self.damaged_suffix):
            data = arguments["Body"].read()
            arguments = {key: value for key, value in arguments.items() if key != "ContentMD5"}
            arguments["Body"] = data[:-2] + b"X\n"
        return self.client.put_object(**arguments)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def test_a_corrupted_upload_is_detected_and_a_rerun_repairs_it(
    run_folder: Path, endpoint: str, s3: Any, bucket: str
) -> None:
    target = UploadTarget(bucket=bucket, prefix="p", endpoint_url=endpoint)
    with pytest.raises(UploadError, match=r"verification failed: 1 object\(s\).*task-2/summary"):
        upload.upload(run_folder, target, client=CorruptingClient(s3, "task-2/summary.json"))
    repaired = upload.upload(run_folder, target)
    assert [key.split("/", 6)[-1] for key in repaired.uploaded] == ["task-2/summary.json"]


def test_an_object_changed_on_the_server_is_found_by_both_verify_modes(
    run_folder: Path, endpoint: str, s3: Any, bucket: str
) -> None:
    target = UploadTarget(bucket=bucket, endpoint_url=endpoint)
    report = upload.upload(run_folder, target)
    key = next(key for key in report.uploaded if key.endswith("task-1/attempt-1.json"))
    original = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    # Same size, other bytes: only a checksum can tell.
    s3.put_object(Bucket=bucket, Key=key, Body=original[:-2] + b"?\n")
    for mode in ("etag", "download"):
        listed = upload.list_objects(s3, target, key)
        local = next(item for item in upload.run_folder_files(run_folder, "") if item.key == key)
        assert not upload.matches(s3, target, local, listed[key], mode)  # type: ignore[arg-type]
    assert upload.upload(run_folder, target).uploaded == [key]


def test_errors_are_clear(
    run_folder: Path, endpoint: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = parse(str(run_folder), "--bucket", "no-such-bucket-here", "--endpoint-url", endpoint)
    assert args.handler(args) == 1
    assert "bucket 'no-such-bucket-here' does not exist" in capsys.readouterr().err

    args = parse(
        str(run_folder), "--bucket", "b", "--endpoint-url", f"http://127.0.0.1:{free_port()}"
    )
    assert args.handler(args) == 1
    assert "cannot reach the S3 endpoint" in capsys.readouterr().err

    args = parse(str(run_folder))
    assert args.handler(args) == 2
    assert "no bucket given" in capsys.readouterr().err

    args = parse(str(tmp_path), "--bucket", "b", "--endpoint-url", endpoint)
    assert args.handler(args) == 1
    assert "no run folders" in capsys.readouterr().err


def test_the_endpoint_comes_from_the_environment_too(
    run_folder: Path, endpoint: str, s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(upload.ENDPOINT_ENV, endpoint)
    args = parse(str(run_folder.parents[4]), "--bucket", bucket)
    assert args.handler(args) == 0
    assert remote_files(s3, bucket)


def test_the_s3_sync_hook_takes_the_variant_setting(
    run_folder: Path, endpoint: str, s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = upload.sync_run_folder(
        run_folder, {"bucket": bucket, "prefix": "synced", "endpoint_url": endpoint}
    )
    assert report.uploaded and all(key.startswith("synced/") for key in report.uploaded)

    monkeypatch.setenv(upload.ENDPOINT_ENV, endpoint)
    by_url = upload.sync_run_folder(run_folder, f"s3://{bucket}/other/prefix")
    assert all(key.startswith("other/prefix/arcagi2-sample/") for key in by_url.uploaded)

    monkeypatch.setenv(upload.BUCKET_ENV, bucket)
    assert upload.sync_run_folder(run_folder, True).uploaded
    assert upload.sync_run_folder(run_folder, False).uploaded == []
    with pytest.raises(UploadError, match="unknown keys"):
        upload.sync_run_folder(run_folder, {"bucket": bucket, "acl": "public-read"})
    monkeypatch.delenv(upload.BUCKET_ENV)
    with pytest.raises(UploadError, match="no bucket given"):
        upload.sync_run_folder(run_folder, True)


# Reading an S3 copy (no config.json) back


def test_metrics_and_inspect_read_an_s3_copy_of_a_run_without_config_json(
    run_folder: Path, endpoint: str, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.evaluation.commands.cli import main as eval_main

    upload.upload(run_folder, UploadTarget(bucket=bucket, prefix="team", endpoint_url=endpoint))
    assert eval_main(["metrics", str(run_folder), "--json"]) == 0
    [local] = json.loads(capsys.readouterr().out)["runs"]

    url = f"s3://{bucket}/team"
    assert eval_main(["metrics", url, "--endpoint-url", endpoint, "--json"]) == 0
    [remote] = json.loads(capsys.readouterr().out)["runs"]
    levels = "/".join(run_folder.parts[-5:])
    assert remote["folder"] == f"{url}/{levels}"
    assert remote["settings_source"] == "inferred"
    assert "k from summary.json" in remote["inferred"]
    for key in ("curves", "harness_view", "usage", "cost_usd"):
        assert remote[key] == local[key], key

    copy = f"{url}/{levels}"
    assert eval_main(["inspect", copy, "--endpoint-url", endpoint, "--task-index", "1"]) == 0
    assert capsys.readouterr().out.startswith("task 1 (")
    # A local copy (`aws s3 sync`) reads the same.
    assert upload.download_prefix(copy, run_folder.parent / "synced", endpoint_url=endpoint) > 0
    assert not (run_folder.parent / "synced" / "config.json").exists()
    assert eval_main(["metrics", str(run_folder.parent / "synced"), "--json"]) == 0
    [synced] = json.loads(capsys.readouterr().out)["runs"]
    assert synced["curves"] == local["curves"]


def test_an_object_key_naming_a_path_outside_the_copy_is_refused(
    s3: Any, endpoint: str, bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.evaluation.commands.cli import main as eval_main

    s3.put_object(Bucket=bucket, Key="run/task-1/../../../escape.json", Body=b"{}")
    with pytest.raises(UploadError, match="outside the copy"):
        upload.download_prefix(f"s3://{bucket}/run", tmp_path / "copy", endpoint_url=endpoint)
    assert not (tmp_path / "escape.json").exists()
    assert eval_main(["metrics", f"s3://{bucket}/run", "--endpoint-url", endpoint]) == 2
    assert "outside the copy" in capsys.readouterr().err
    assert eval_main(["metrics", f"s3://{bucket}/nothing", "--endpoint-url", endpoint]) == 2
    assert "no objects under" in capsys.readouterr().err
