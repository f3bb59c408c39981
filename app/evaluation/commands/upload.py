"""`gauntlet eval upload PATH`: copy run folders to S3-compatible storage, then verify the copy.

    gauntlet eval upload PATH --bucket BUCKET [--prefix PREFIX] [--endpoint-url URL]
                              [--region REGION] [--jobs N] [--verify etag|download]

PATH is a run folder or a folder holding run folders (e.g. `runs/`). Each run folder's files
go to `<prefix>/<slice>/<passk|seqk>/<actor>/<verifier>/<feedback>/<file>` (the folder's last
five levels, the run-folder layout of docs/engine.md), except the folder's `config.json` (the run
record stays local) and hidden files (a run's atomic writes in progress).

- Endpoint: `--endpoint-url`, else the environment variable `GAUNTLET_S3_ENDPOINT_URL`, else
  AWS itself. Credentials and region come from boto3's usual chain (`AWS_ACCESS_KEY_ID`,
  `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_PROFILE`, `AWS_DEFAULT_REGION`, ...).
- Idempotent: an object whose size and content already match the local file is skipped, so a
  rerun uploads only what changed (and repairs what does not match).
- Verified: after the upload the run's objects are listed and every local file is compared,
  size and ETag (the MD5 of a single-part upload, which is how every file is sent); where the
  ETag is not a plain MD5 (server-side KMS encryption, say) or with `--verify download`, the
  object is downloaded and its sha256 compared. Any mismatch is an error naming the keys.

For the runner's variant key `s3_sync`, `sync_run_folder(folder, setting)` uploads one run
folder after the run; see its docstring for the forms `setting` takes.

boto3 is imported only when an upload runs, and the run-folder module only when folders are
read, so registering the command (on every `gauntlet` start) costs nothing.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

ENDPOINT_ENV = "GAUNTLET_S3_ENDPOINT_URL"
BUCKET_ENV = "GAUNTLET_S3_BUCKET"
PREFIX_ENV = "GAUNTLET_S3_PREFIX"
RUN_FOLDER_LEVELS = 5  # slice / metric / actor / verifier / feedback
SINGLE_PART_LIMIT = 5 * 1024**3  # S3's limit for one PUT
DEFAULT_JOBS = 8
EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
_HASH_CHUNK = 1024 * 1024

VerifyMode = Literal["etag", "download"]


class UploadError(Exception):
    """An upload that failed or did not verify; the message says what to fix."""


@dataclass(frozen=True)
class UploadTarget:
    bucket: str
    prefix: str = ""
    endpoint_url: str | None = None
    region: str | None = None

    def describe(self, key: str = "") -> str:
        where = f"s3://{self.bucket}/{key}"
        return f"{where} at {self.endpoint_url}" if self.endpoint_url else where


@dataclass(frozen=True)
class LocalFile:
    path: Path
    key: str
    size: int
    md5: str
    sha256: str


@dataclass
class UploadReport:
    folders: list[Path] = field(default_factory=list)
    uploaded: list[str] = field(default_factory=list)  # keys
    skipped: list[str] = field(default_factory=list)  # keys already identical
    verified: int = 0
    bytes_uploaded: int = 0

    def summary(self, target: UploadTarget) -> str:
        return (
            f"uploaded {len(self.uploaded)} files ({self.bytes_uploaded} bytes), skipped "
            f"{len(self.skipped)} unchanged, verified {self.verified} objects of "
            f"{len(self.folders)} run folder(s) in {target.describe(target.prefix)}"
        )


# Local files


def _digests(path: Path) -> tuple[int, str, str]:
    md5 = hashlib.md5(usedforsecurity=False)
    sha256 = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            size += len(chunk)
            md5.update(chunk)
            sha256.update(chunk)
    return size, md5.hexdigest(), sha256.hexdigest()


def folder_key_prefix(folder: Path, prefix: str) -> str:
    """The key prefix of a run folder's files: `prefix` and the folder's last five levels."""
    levels = folder.resolve().parts[-RUN_FOLDER_LEVELS:]
    parts = [part for part in prefix.strip("/").split("/") if part] + list(levels)
    return "/".join(parts) + "/"


def run_folder_files(folder: Path, prefix: str) -> Iterator[LocalFile]:
    """The files of a run folder to upload, with their keys (sorted, for stable output)."""
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import CONFIG_FILE

    key_prefix = folder_key_prefix(folder, prefix)
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if relative == Path(CONFIG_FILE):
            continue  # the run record stays local
        if any(part.startswith(".") for part in relative.parts):
            continue  # an atomic write in progress, or a dotfile that is not part of the run
        if not path.is_file() or path.is_symlink():
            continue
        size, md5, sha256 = _digests(path)
        if size > SINGLE_PART_LIMIT:
            raise UploadError(f"{path} is larger than one S3 PUT allows (5 GiB)")
        yield LocalFile(
            path=path, key=key_prefix + relative.as_posix(), size=size, md5=md5, sha256=sha256
        )


# S3


def make_client(target: UploadTarget) -> Any:
    # boto3 (~0.3 s) loads only when something is uploaded or downloaded.
    import boto3

    return boto3.client("s3", endpoint_url=target.endpoint_url, region_name=target.region)


def _explain(error: Exception, target: UploadTarget, action: str) -> UploadError:
    """An S3 failure as a message a user can act on."""
    # botocore loads with boto3, only when something is uploaded or downloaded.
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        ParamValidationError,
    )

    if isinstance(error, NoCredentialsError):
        return UploadError(
            "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(or AWS_PROFILE)"
        )
    if isinstance(error, EndpointConnectionError):
        return UploadError(f"cannot reach the S3 endpoint while {action}: {error}")
    if isinstance(error, ParamValidationError):
        return UploadError(f"invalid S3 request while {action}: {error}")
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = str(details.get("Code", "unknown"))
        message = str(details.get("Message", ""))
        if code == "NoSuchBucket":
            return UploadError(f"bucket {target.bucket!r} does not exist ({target.describe()})")
        if code in {"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"}:
            return UploadError(
                f"access denied while {action} {target.describe()} ({code}): check the "
                "credentials and the bucket's permissions"
            )
        return UploadError(f"S3 error while {action} {target.describe()}: {code} {message}")
    if isinstance(error, BotoCoreError):
        return UploadError(f"S3 client error while {action}: {error}")
    return UploadError(f"unexpected error while {action}: {error!r}")


def _guarded(target: UploadTarget, action: str, call: Callable[[], Any]) -> Any:
    # botocore loads with boto3, only when something is uploaded or downloaded.
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return call()
    except (BotoCoreError, ClientError) as error:
        raise _explain(error, target, action) from error


@dataclass(frozen=True)
class RemoteObject:
    size: int
    etag: str  # without quotes


def list_objects(client: Any, target: UploadTarget, key_prefix: str) -> dict[str, RemoteObject]:
    def run() -> dict[str, RemoteObject]:
        found: dict[str, RemoteObject] = {}
        paginator = client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=target.bucket, Prefix=key_prefix):
            for item in page.get("Contents", []):
                found[str(item["Key"])] = RemoteObject(
                    size=int(item["Size"]), etag=str(item.get("ETag", "")).strip('"')
                )
        return found

    result: dict[str, RemoteObject] = _guarded(target, "listing", run)
    return result


S3_SCHEME = "s3://"


def parse_s3_url(url: str) -> tuple[str, str]:
    """(bucket, key prefix) of `s3://bucket/prefix`."""
    if not url.startswith(S3_SCHEME):
        raise UploadError(f"not an s3:// URL: {url!r}")
    bucket, _, prefix = url[len(S3_SCHEME) :].partition("/")
    if not bucket:
        raise UploadError(f"no bucket in {url!r}")
    return bucket, prefix.strip("/")


def download_prefix(
    url: str, destination: Path, *, endpoint_url: str | None = None, region: str | None = None
) -> int:
    """Copies every object under `s3://bucket/prefix` into `destination`, each at its key's
    path below the prefix (so a run folder's copy is read like the folder); the number of
    objects. A key that would land outside `destination` is refused: the bucket is not
    trusted to name paths on this machine."""
    bucket, prefix = parse_s3_url(url)
    target = UploadTarget(
        bucket=bucket,
        prefix=prefix,
        endpoint_url=endpoint_url or os.environ.get(ENDPOINT_ENV) or None,
        region=region,
    )
    client = make_client(target)
    key_prefix = f"{prefix}/" if prefix else ""
    objects = list_objects(client, target, key_prefix)
    root = destination.resolve()
    count = 0
    for key in sorted(objects):
        relative = key[len(key_prefix) :]
        parts = [part for part in relative.split("/") if part]
        if not parts or key.endswith("/"):
            continue  # a "folder" marker object
        if any(part in {".", ".."} for part in parts) or "\\" in relative:
            raise UploadError(f"refusing the object key {key!r}: it names a path outside the copy")
        path = root.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        _guarded(
            target, "downloading", functools.partial(client.download_file, bucket, key, str(path))
        )
        count += 1
    return count


def _is_plain_md5(etag: str) -> bool:
    return len(etag) == 32 and all(character in "0123456789abcdef" for character in etag.lower())


def _remote_sha256(client: Any, target: UploadTarget, key: str) -> str:
    def run() -> str:
        body = client.get_object(Bucket=target.bucket, Key=key)["Body"]
        digest = hashlib.sha256()
        try:
            while chunk := body.read(_HASH_CHUNK):
                digest.update(chunk)
        finally:
            body.close()
        return digest.hexdigest()

    result: str = _guarded(target, "downloading", run)
    return result


def matches(
    client: Any,
    target: UploadTarget,
    local: LocalFile,
    remote: RemoteObject | None,
    verify: VerifyMode,
) -> bool:
    """Whether the stored object holds exactly the local file's bytes."""
    if remote is None or remote.size != local.size:
        return False
    if verify == "etag" and _is_plain_md5(remote.etag):
        return remote.etag.lower() == local.md5
    # A multipart or KMS-encrypted ETag is no MD5 of the content: compare the bytes themselves.
    return _remote_sha256(client, target, local.key) == local.sha256


def _put(client: Any, target: UploadTarget, local: LocalFile) -> None:
    content_md5 = base64.b64encode(bytes.fromhex(local.md5)).decode("ascii")

    def run() -> None:
        with local.path.open("rb") as body:
            client.put_object(
                Bucket=target.bucket,
                Key=local.key,
                Body=body,
                # Servers that check it reject a body damaged on the way.
                ContentMD5=content_md5,
                ContentType="application/json" if local.path.suffix == ".json" else "text/plain",
                Metadata={"sha256": local.sha256},
            )

    _guarded(target, f"uploading {local.key} to", run)


def upload_run_folder(
    folder: Path,
    target: UploadTarget,
    *,
    client: Any,
    report: UploadReport,
    jobs: int = DEFAULT_JOBS,
    verify: VerifyMode = "etag",
) -> None:
    """Uploads one run folder's changed files, then verifies every file of it."""
    files = list(run_folder_files(folder, target.prefix))
    key_prefix = folder_key_prefix(folder, target.prefix)
    before = list_objects(client, target, key_prefix)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        same = list(
            pool.map(
                lambda local: matches(client, target, local, before.get(local.key), verify),
                files,
            )
        )
        changed = [local for local, unchanged in zip(files, same, strict=True) if not unchanged]
        list(pool.map(lambda local: _put(client, target, local), changed))
        report.uploaded.extend(local.key for local in changed)
        report.skipped.extend(
            local.key for local, unchanged in zip(files, same, strict=True) if unchanged
        )
        report.bytes_uploaded += sum(local.size for local in changed)

        after = list_objects(client, target, key_prefix)
        verified = list(
            pool.map(
                lambda local: matches(client, target, local, after.get(local.key), verify),
                files,
            )
        )
    bad = [local for local, good in zip(files, verified, strict=True) if not good]
    if bad:
        shown = ", ".join(local.key for local in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise UploadError(
            f"verification failed: {len(bad)} object(s) in {target.describe()} differ from "
            f"the local files (size or checksum): {shown}{more}. Rerun the upload to repair them."
        )
    report.verified += len(files)
    report.folders.append(folder)


def upload(
    path: Path,
    target: UploadTarget,
    *,
    client: Any | None = None,
    jobs: int = DEFAULT_JOBS,
    verify: VerifyMode = "etag",
) -> UploadReport:
    """Uploads and verifies the run folder `path`, or every run folder below it.

    Raises `UploadError` with a message naming the problem. `client` (a boto3 S3 client)
    defaults to one made for `target`.
    """
    if not target.bucket:
        raise UploadError(f"no bucket given: pass --bucket or set {BUCKET_ENV}")
    if not path.exists():
        raise UploadError(f"no such folder: {path}")
    # Run folders load when a command reads one, not with every `gauntlet` command's parser.
    from app.evaluation.commands.folder import CONFIG_FILE, RunFolderError, find_run_folders

    try:
        folders = find_run_folders(path, require_config=True)
    except RunFolderError as error:
        raise UploadError(str(error)) from None
    if not folders:
        raise UploadError(f"no run folders under {path} (a run folder holds {CONFIG_FILE})")
    s3 = client if client is not None else make_client(target)
    report = UploadReport()
    for folder in folders:
        upload_run_folder(folder, target, client=s3, report=report, jobs=jobs, verify=verify)
    return report


# The runner's `s3_sync` hook


def target_from_setting(setting: bool | str | Mapping[str, Any]) -> UploadTarget:
    """The upload target a variant's `s3_sync` value names.

    - `true`: bucket, prefix and endpoint from `GAUNTLET_S3_BUCKET`, `GAUNTLET_S3_PREFIX` and
      `GAUNTLET_S3_ENDPOINT_URL`;
    - a string: `s3://bucket/prefix`, or `bucket` or `bucket/prefix` (endpoint from the
      environment);
    - a mapping with `bucket` (required), `prefix`, `endpoint_url`, `region`.
    """
    endpoint = os.environ.get(ENDPOINT_ENV) or None
    if setting is True:
        return UploadTarget(
            bucket=os.environ.get(BUCKET_ENV, ""),
            prefix=os.environ.get(PREFIX_ENV, ""),
            endpoint_url=endpoint,
        )
    if isinstance(setting, str):
        bucket, _, prefix = setting.removeprefix("s3://").strip("/").partition("/")
        return UploadTarget(bucket=bucket, prefix=prefix, endpoint_url=endpoint)
    if isinstance(setting, Mapping):
        allowed = {"bucket", "prefix", "endpoint_url", "region"}
        unknown = sorted(set(setting) - allowed)
        if unknown:
            raise UploadError(f"s3_sync: unknown keys {unknown}; allowed: {sorted(allowed)}")
        values = {key: setting.get(key) for key in allowed}
        if not all(value is None or isinstance(value, str) for value in values.values()):
            raise UploadError("s3_sync: bucket, prefix, endpoint_url and region are strings")
        return UploadTarget(
            bucket=values["bucket"] or "",
            prefix=values["prefix"] or "",
            endpoint_url=values["endpoint_url"] or endpoint,
            region=values["region"],
        )
    raise UploadError(f"s3_sync must be true, a bucket URL or a mapping, got {setting!r}")


def sync_run_folder(folder: Path, setting: bool | str | Mapping[str, Any]) -> UploadReport:
    """Uploads and verifies one run folder after its run (the variant key `s3_sync`).

    `setting` is the variant's `s3_sync` value (`target_from_setting`); a false value uploads
    nothing. Raises `UploadError` (with a message for the user) when the upload or its
    verification fails; the run's results stay on disk either way.
    """
    if setting is False or setting is None:
        return UploadReport()
    return upload(folder, target_from_setting(setting))


# The command


def add_parser(subparsers: Any) -> None:
    """Adds `upload` to the `gauntlet eval` subcommands."""
    parser = subparsers.add_parser(
        "upload",
        help="upload run folders to S3-compatible storage (config.json excluded), verified",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", help="a run folder, or a folder holding run folders")
    parser.add_argument(
        "--bucket", default=os.environ.get(BUCKET_ENV), help=f"the bucket (env {BUCKET_ENV})"
    )
    parser.add_argument(
        "--prefix",
        default=os.environ.get(PREFIX_ENV, ""),
        help=f"a key prefix before the run folder's levels (env {PREFIX_ENV})",
    )
    parser.add_argument(
        "--endpoint-url",
        default=None,
        help=f"an S3-compatible endpoint, e.g. http://127.0.0.1:9000 (env {ENDPOINT_ENV})",
    )
    parser.add_argument("--region", default=None, help="the region (default: boto3's)")
    parser.add_argument(
        "--jobs", type=int, default=DEFAULT_JOBS, help="files transferred at once (8)"
    )
    parser.add_argument(
        "--verify",
        choices=("etag", "download"),
        default="etag",
        help="etag: compare sizes and MD5 ETags (downloading where an ETag is no MD5); "
        "download: download every object and compare sha256",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Runs `upload`; prints what was done, or one error line. Exit 0, 1 (failed) or 2."""
    path = Path(args.path)
    if not args.bucket:
        print(f"error: no bucket given: pass --bucket or set {BUCKET_ENV}", file=sys.stderr)
        return EXIT_USAGE
    if not path.exists():
        print(f"error: no such folder: {path}", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    target = UploadTarget(
        bucket=args.bucket,
        prefix=args.prefix or "",
        endpoint_url=args.endpoint_url or os.environ.get(ENDPOINT_ENV) or None,
        region=args.region,
    )
    try:
        report = upload(path, target, jobs=args.jobs, verify=args.verify)
    except UploadError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    print(report.summary(target))
    return EXIT_OK
