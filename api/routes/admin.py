"""Retrain, follow a job, list versions, activate one (rollback). Behind a bearer token.

POST /admin/train takes either a multipart upload (`items`, `interactions` files, optional
`judgments`, `probes`, `schema` files and `epochs`, `seed`, `force` fields) or a JSON body naming
files under the data folder (RECSYS_DATA_DIR); a path that leads outside it is refused. A JSON
body with `"source": "events"` trains from the store's events instead of an interactions file
(on the served version's catalogue unless it names `items`). Each file's header is checked
before the answer (`recsys.io.readers.check_header`, with the schema's `[rename]`): columns that
cannot be used are a 422 naming the columns found and what is missing, not a job that fails.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, cast

from fastapi import APIRouter, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.datastructures import FormData, UploadFile

from recsys.artifact import TempDir
from recsys.errors import ArtifactError, DataError
from recsys.io.ids import storable_problem
from recsys.io.readers import check_header
from recsys.io.schema import Schema
from recsys.io.text import ON_BAD_LINES
from recsys.promotion import same_catalogue
from store.records import read_decisions

from ..config import Settings
from ..deps import AdminDep, DatabaseDep, JobsDep, SettingsDep, VersionsDep
from ..errors import in_request_words
from ..jobs import JobStateError, QueueFullError, TrainSpec
from ..limits import field_error, in_utc
from ..schemas import ActivateOut, JobOut, TrainRequest, VersionsOut, error_responses
from ..served_versions import ServedVersions, held_out_ndcg

router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[AdminDep],
                   responses=error_responses(401, 403, 404, 500))

FILE_FIELDS = ("items", "interactions", "judgments", "probes", "schema")
_FILE_HELP = {
    "items": "the catalogue CSV (item_id, title, ...; export names such as product_id are mapped)",
    "interactions": "the search log CSV or .xlsx (query, item_id, label or event; search_term, clicks, ... "
                    "are mapped); without it the untrained start is written, judged on searches "
                    "drawn from the items' own words",
    "judgments": "optional CSV or .xlsx: query, item_id, grade, reported on after training",
    "probes": "optional CSV: query, word, facet, value (explanation ground truth)",
    "schema": "optional TOML schema file, as recsys train --schema takes: [rename], [columns], ...",
}
_TRAIN_BODY = {
    "requestBody": {"content": {
        "application/json": {"schema": TrainRequest.model_json_schema(by_alias=True)},
        "multipart/form-data": {"schema": {"type": "object", "required": ["items"],
                                           "properties": {
            **{f: {"type": "string", "format": "binary", "description": _FILE_HELP[f]}
               for f in FILE_FIELDS},
            "epochs": {"type": "integer"}, "seed": {"type": "integer"}, "force": {"type": "boolean"},
        }}},
    }, "required": True},
}


@router.post("/train", status_code=202, response_model=JobOut, openapi_extra=_TRAIN_BODY,
                    responses=error_responses(400, 413, 415, 422, 429))
async def start_training(request: Request, settings: SettingsDep, jobs: JobsDep) -> JSONResponse:
    """Start a retrain as a background job; poll GET /admin/jobs/{id} for progress and outcome.

    Multipart: `items` and `interactions` CSV files (`items` alone: a catalogue with no search
    log, the untrained start is written, as `recsys train --items` does), optional `judgments` and `probes` CSV files
    and a `schema` TOML file (the one `recsys train --schema` takes: `[rename]` for columns the
    automatic mapping of export names does not know, `[columns]`, `[missing]`, `[lexicon]`,
    `[facets]`), `epochs`, `seed`, `force`. JSON: the same files by their names under the data
    folder (`schema` for the schema file). Each file's header (with the schema's `[rename]`) is
    checked before the answer: columns that cannot be used are a 422 at once naming the file, the
    columns found and the `[rename]` lines to add. Interactions naming items the items file does
    not have are skipped and counted in the new version's manifest."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "multipart/form-data":
        async with request.form(max_files=len(FILE_FIELDS), max_fields=10) as form:
            spec = await _spec_from_upload(form, settings)
    elif ctype in ("application/json", ""):
        spec = await run_in_threadpool(_spec_from_data_dir, await _json_body(request), settings)
    else:
        raise HTTPException(
            415, detail="send JSON naming files under the data folder, or multipart/form-data")
    try:
        job = await run_in_threadpool(jobs.submit, spec)  # writes the job's row: off the loop
    except QueueFullError as exc:
        if spec.upload is not None:
            spec.upload.remove()
        raise HTTPException(429, detail=str(exc)) from None
    return JSONResponse(status_code=202, content=job.to_out(),
                        headers={"Location": f"/admin/jobs/{job.id}"})


@router.get("/jobs", response_model=list[JobOut])
def list_jobs(jobs: JobsDep) -> list[dict]:
    """Every job of every server process sharing the store, newest first."""
    return jobs.all_out()


@router.get("/jobs/{job_id}", response_model=JobOut)
def get_job(job_id: str, jobs: JobsDep) -> dict:
    job = None if storable_problem(job_id) else jobs.out(job_id)  # PostgreSQL's text holds no NUL
    if job is None:
        raise HTTPException(404, detail=f"no training job {job_id[:40]!r}")
    return job


@router.delete("/jobs/{job_id}", response_model=JobOut, responses=error_responses(409))
async def cancel_job(job_id: str, jobs: JobsDep) -> dict:
    """Cancel a queued job or stop a running one: its worker is killed, nothing it wrote is
    kept, the served model stays. 409 for a job that has finished."""
    try:
        job = None if storable_problem(job_id) else await run_in_threadpool(jobs.cancel, job_id)
    except JobStateError as exc:
        raise HTTPException(409, detail=str(exc)) from None
    if job is None:
        raise HTTPException(404, detail=f"no training job {job_id[:40]!r}")
    return job


@router.get("/versions", response_model=VersionsOut)
def versions(versions: VersionsDep, db: DatabaseDep) -> dict:
    """Every version folder; a broken one has `ok: false` and a `problem` naming its file. A
    version a retrain made has the `decision` on serving it, with the reason."""
    serving = versions.current.version if versions.current else None
    decisions = read_decisions(db)
    out = [{**v, "held_out_ndcg": held_out_ndcg(v), "serving": v["version"] == serving,
            "decision": decisions.get(v["version"])} for v in versions.versions()]
    return {"serving": serving, "versions": out}


@router.post("/versions/{version}/activate", response_model=ActivateOut,
             responses=error_responses(404, 409, 500))
def activate(version: str, versions: VersionsDep, force: bool = False) -> dict:
    """Serve `version` (a rollback, a kept retrain, a new catalogue). A version of the same
    catalogue with a lower held-out NDCG@10 than the served one needs `force=true` (the numbers
    of two catalogues do not compare). A broken version is refused (409, naming its file and
    the problem) and the served model stays."""
    try:
        versions.version_dir(version)
    except ArtifactError as exc:
        raise HTTPException(404, detail=exc.public) from None
    try:
        with versions.changing():  # compared with, and replacing, the newest change of any process
            versions.follow_pointer()
            _refuse_a_regression(versions, version, force)
            _, previous = versions.activate(version, reason=f"POST /admin/versions/{version}/activate"
                                         + (" (forced)" if force else ""))
    except ArtifactError as exc:
        raise HTTPException(409, detail=f"refused, still serving "
                                        f"{versions.current.version if versions.current else 'nothing'}: "
                                        f"{exc.public}") from None
    return {"serving": version, "previous": previous}


def _refuse_a_regression(versions: ServedVersions, version: str, force: bool) -> None:
    """409 for a version of the served catalogue with a lower held-out NDCG@10, unless forced."""
    manifest = versions.manifest_of(version)
    serving = versions.current
    if force or serving is None or not same_catalogue(manifest, serving.manifest):
        return
    new, old = held_out_ndcg(manifest), held_out_ndcg(serving.manifest)
    if new is not None and old is not None and new < old:
        raise HTTPException(409, detail=f"{version} has held-out ndcg@10 {new:.4f}, below "
                                        f"{old:.4f} of the served {serving.version}; add "
                                        f"?force=true to serve it")


# ---- request parsing ----------------------------------------------------------------------------


async def _json_body(request: Request) -> TrainRequest:
    try:
        return TrainRequest.model_validate_json(await request.body())
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_input=False)]
        ) from None


def _spec_from_data_dir(req: TrainRequest, s: Settings) -> TrainSpec:
    """The job's own copies of the named files, each checked on the descriptor it is read
    from: a symlink swapped in after the check cannot lead the job outside the data folder."""
    if req.source == "events" and req.interactions is not None:
        raise field_error(("interactions",), "a retrain from events reads no interactions file: "
                                             "leave it out, or use \"source\": \"csv\"")
    if req.source == "csv" and req.items is None:
        raise field_error(("items",), "field required (or \"source\": \"events\")")
    since = in_utc(req.since, ("since",))  # a 422 now, not an overflow in the job
    named = {"items": req.items, "interactions": req.interactions, "judgments": req.judgments,
             "probes": req.probes, "schema": req.schema_file}
    upload = _upload_dir(s)
    try:
        paths: dict[str, Path | None] = {"items": None, "interactions": None}
        public = {}
        for f, name in named.items():
            if name is not None:
                paths[f] = _copy_from_data_dir(s, name, f, upload.path / _name(f))
                public[str(paths[f])] = name
        _check_headers(paths, named)
        return TrainSpec(**paths, epochs=_epochs(req.epochs, s), seed=req.seed,
                         threads=s.train_threads, force=req.force, on_bad_lines=req.on_bad_lines, upload=upload,
                         public_names={**public, str(upload.path): "upload"},
                         memory_mb=s.train_memory_mb,
                         events_url=s.store_url if req.source == "events" else None,
                         since=since)
    except BaseException:
        upload.remove()
        raise


def _upload_dir(s: Settings) -> TempDir:
    s.artifacts_dir.mkdir(parents=True, exist_ok=True)
    return TempDir(s.artifacts_dir, ".upload-")


_OPEN_ERRORS = {errno.ENOENT: "no such file in the data folder", errno.ENOTDIR: "no such file in the data folder",
                errno.ENAMETOOLONG: "a path component is over 255 characters",
                errno.ELOOP: "too many symbolic links", errno.EACCES: "the file cannot be read"}


def _copy_from_data_dir(s: Settings, name: str, field: str, dest: Path) -> Path:
    """Open `name` under the data folder, check where the descriptor really leads (symlinks
    followed) and copy it to `dest` from that descriptor; 403 for anything outside the folder."""
    if not name or "\x00" in name:
        raise field_error((field,), "a file name relative to the data folder")
    base = s.data_dir.resolve()
    try:
        if not (base / name).resolve().is_relative_to(base):
            raise HTTPException(403, detail=f"{field}: the path leads outside the data folder")
        fd = os.open(base / name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise field_error((field,), _OPEN_ERRORS.get(exc.errno or 0, "not a usable path")) from None
    except (RuntimeError, ValueError):
        raise field_error((field,), "not a usable path") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise field_error((field,), "not a file")
    with os.fdopen(fd, "rb") as src:
        if not Path(_opened_path(fd, base / name)).is_relative_to(base):
            raise HTTPException(403, detail=f"{field}: the path leads outside the data folder")
        return _copy_limited(src, dest, field, s)


def _opened_path(fd: int, fallback: Path) -> str:
    """The path a descriptor was opened at, as the kernel resolved it."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: resolve again and make sure it is the same file
        real = os.path.realpath(fallback)
        same = os.path.samestat(os.fstat(fd), os.stat(real))
        return real if same else "/"


def _copy_limited(src: BinaryIO, dest: Path, field: str, s: Settings) -> Path:
    """Copy `src` to `dest`: at most RECSYS_MAX_UPLOAD_BYTES bytes and RECSYS_MAX_TRAIN_ROWS rows
    (lines after the header; a quoted line break counts too: the bound is safe)."""
    size = lines = 0
    with open(dest, "wb") as out:
        while chunk := src.read(1 << 20):
            size += len(chunk)
            lines += chunk.count(b"\n")
            if size > s.max_upload_bytes:
                raise HTTPException(413, detail=f"{field}: over {s.max_upload_bytes} bytes "
                                                f"(RECSYS_MAX_UPLOAD_BYTES)")
            if lines > s.max_train_rows + 1:
                raise field_error((field,), f"more than {s.max_train_rows} rows "
                                            f"(RECSYS_MAX_TRAIN_ROWS)")
            out.write(chunk)
    return dest


async def _spec_from_upload(form: FormData, s: Settings) -> TrainSpec:
    if "items" not in form:
        raise field_error(("items",), "field required: upload the CSV file")
    for f in form:
        if f not in (*FILE_FIELDS, "epochs", "seed", "force", "on_bad_lines"):
            raise field_error((f,), "unknown field")
    uploads: dict[str, UploadFile | str] = {f: form[f] for f in FILE_FIELDS if f in form}
    for f, up in uploads.items():
        if not isinstance(up, UploadFile):
            raise field_error((f,), "expected a file upload")
    epochs = _form_int(form, "epochs", None, 1, s.max_train_epochs)
    seed = _form_int(form, "seed", 0, 0, 2**32 - 1)
    force = str(form.get("force", "false")).strip().lower() in ("1", "true", "yes", "on")
    on_bad_lines = str(form.get("on_bad_lines", "error")).strip().lower()
    if on_bad_lines not in ON_BAD_LINES:
        raise field_error(("on_bad_lines",), f"one of {', '.join(ON_BAD_LINES)}, got {on_bad_lines[:40]!r}")
    upload = await run_in_threadpool(_upload_dir, s)
    try:
        paths: dict[str, Any] = {
            f: await run_in_threadpool(_save, cast(UploadFile, up), upload.path / _name(f), f, s)
            for f, up in uploads.items()}  # each checked above
        await run_in_threadpool(_check_headers, paths, {f: _name(f) for f in paths})
    except BaseException:
        upload.remove()
        raise
    public = {str(p): _name(f) for f, p in paths.items()}
    paths.setdefault("interactions", None)  # items alone: the untrained start
    return TrainSpec(**paths, epochs=_epochs(epochs, s), seed=seed, threads=s.train_threads,
                     force=force, on_bad_lines=on_bad_lines, upload=upload,
                     public_names={**public, str(upload.path): "upload"}, memory_mb=s.train_memory_mb)


def _check_headers(paths: dict[str, Path | None], public: dict[str, str | None]) -> None:
    """The CSV files' headers (and the schema) as training will read them: a 422 naming the file
    by its `public` name, the columns found and the [rename] lines that would fix it."""
    field, schema_path = "schema", paths.get("schema")
    try:
        rename = Schema.load(schema_path).rename if schema_path else None
        for field in ("items", "interactions", "judgments", "probes"):
            path = paths.get(field)
            if path is not None:
                check_header(path, field, rename)
    except DataError as exc:
        raise field_error((field,), in_request_words(str(exc).replace(exc.file, public.get(field) or field, 1))) \
            from None


def _name(field: str) -> str:
    return "schema.toml" if field == "schema" else f"{field}.csv"


def _save(upload: UploadFile, dest: Path, field: str, s: Settings) -> Path:
    upload.file.seek(0)
    return _copy_limited(upload.file, dest, field, s)


def _form_int(form: FormData, field: str, default: int | None, lo: int, hi: int) -> int | None:
    raw = form.get(field)
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise field_error((field,), "expected an integer") from None
    if not lo <= value <= hi:
        raise field_error((field,), f"expected {lo}..{hi}")
    return value


def _epochs(epochs: int | None, s: Settings) -> int | None:
    if epochs is not None and epochs > s.max_train_epochs:
        raise field_error(("epochs",), f"at most {s.max_train_epochs} epochs")
    return epochs or s.train_epochs
