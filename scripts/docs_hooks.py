"""MkDocs hooks (mkdocs.yml `hooks:`): the pages written from the code at build time.

- `reference/http.md`: the HTTP API, from the FastAPI app's OpenAPI schema;
- `reference/cli.md`: the command line, from the `recsys` console script's argparse parser;
- the settings table of `operations.md` (its `<!-- settings-table -->` line), from `Settings`;
- `changelog.md` and `contributing.md`: the repository's CHANGELOG.md and CONTRIBUTING.md.

Nothing is written into docs/: the pages exist only in the built site, so they cannot drift from
the code. A setting without a description (in `Settings` or in SETTING_NOTES below), or a note for
a setting that no longer exists, fails the build.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_MARKER = "<!-- settings-table -->"

# What the settings that carry no `description` in api/config.py mean (a setting's own
# description, where it has one, is used instead; the build fails on a setting with neither)
SETTING_NOTES = {
    "host": "listen address of `recsys serve`",
    "port": "listen port of `recsys serve`",
    "max_query_chars": "characters of a query (then 422)",
    "max_k": "`k` of one request (then 422)",
    "max_offset": "`offset` of one request (then 422)",
    "max_list_items": "`candidates`, `exclude`, the values of one filter key (then 422)",
    "max_filter_keys": "keys of `filters` (then 422)",
    "max_body_bytes": "bytes of a request body (then 413)",
    "max_upload_bytes": "bytes of a training upload, and of a data-folder file a job copies (then 413)",
    "log_level": "log level of the JSON logs (one line per request, with its request id)",
    "default_items": "items of the synthetic catalogue `recsys serve` generates when there is no model",
    "default_queries": "queries of that synthetic catalogue's search log",
    "max_train_epochs": "epochs an admin retrain may ask for",
    "max_queued_jobs": "training jobs waiting at once (then 429)",
}


def on_files(files: Files, config: Any) -> Files:
    pages = {
        "reference/http.md": http_reference(),
        "reference/cli.md": cli_reference(),
        "changelog.md": _repo_page("CHANGELOG.md"),
        "contributing.md": _repo_page("CONTRIBUTING.md"),
    }
    for path, text in pages.items():
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if SETTINGS_MARKER in markdown:
        markdown = markdown.replace(SETTINGS_MARKER, settings_table())
    return markdown


def _repo_page(name: str) -> str:
    """A file of the repository root as a page; its links to docs/ made relative to the site."""
    text = (ROOT / name).read_text(encoding="utf-8")
    return re.sub(r"\]\(docs/", "](", text)


def _escape(text: str) -> str:
    """Angle brackets outside code spans as entities: `<data_dir>` in a description is text, not a tag."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))


def _cell(text: Any) -> str:
    return _escape(" ".join(str(text).split())).replace("|", "\\|")


# --- settings -------------------------------------------------------------------------------

def settings_table() -> str:
    from api.config import Settings

    fields = Settings.model_fields
    stale = set(SETTING_NOTES) - set(fields)
    if stale:
        raise ValueError(f"scripts/docs_hooks.py: SETTING_NOTES names settings Settings lacks: {sorted(stale)}")
    rows = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for name, field in fields.items():
        meaning = field.description or SETTING_NOTES.get(name)
        if not meaning:
            raise ValueError(f"api/config.py: setting {name!r} has no description (Field(description=...)) "
                             "and scripts/docs_hooks.py's SETTING_NOTES has none either")
        bounds = [f"{sym} {getattr(m, attr)}" for m in field.metadata
                  for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
                  if getattr(m, attr, None) is not None]
        default = "unset" if field.default is None else f"`{field.default}`"
        kind = _type_name(field.annotation) + (f" ({', '.join(bounds)})" if bounds else "")
        rows.append(f"| `RECSYS_{name.upper()}` | {kind} | {default} | {_cell(meaning)} |")
    return "\n".join(rows)


def _type_name(annotation: Any) -> str:
    text = annotation.__name__ if isinstance(annotation, type) else str(annotation)
    return {"Path": "path"}.get(text, text).replace(" | None", "")


# --- HTTP API -------------------------------------------------------------------------------

def openapi_schema() -> dict[str, Any]:
    """The service's OpenAPI document, as /openapi.json serves it with the default settings."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("RECSYS_")}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            from api.config import Settings
            from api.main import create_app

            settings = Settings(artifacts_dir=Path(tmp) / "artifacts", data_dir=Path(tmp) / "data")
            return json.loads(json.dumps(create_app(settings).openapi()))
    finally:
        os.environ.update(saved)


def http_reference(schema: dict[str, Any] | None = None) -> str:
    schema = schema or openapi_schema()
    out = [
        "# HTTP API reference",
        "",
        "Written at build time from the service's OpenAPI schema (the one `/openapi.json`, "
        "`/docs` and `/redoc` serve), with the default settings' limits. The guide to using it is "
        "[HTTP API](../http-api.md).",
        "",
    ]
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((path, method, op))
    for tag, ops in by_tag.items():
        out += [f"## {tag}", ""]
        for path, method, op in ops:
            out += _operation(path, method, op, schema["components"]["schemas"])
    out += ["## Schemas", ""]
    for name, body in schema["components"]["schemas"].items():
        out += [f"### {name} {{#{_anchor(name)}}}", ""]
        if body.get("description"):
            out += [_paragraph(body["description"]), ""]
        out += _fields_table(body) or [f"Type: {_type(body)}", ""]
    return "\n".join(out) + "\n"


def _anchor(name: str) -> str:
    return "schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _paragraph(text: str) -> str:
    return _escape(text.strip())


def _operation(path: str, method: str, op: dict[str, Any], components: dict[str, Any]) -> list[str]:
    out = [f"### {method.upper()} {path}", ""]
    if op.get("description") or op.get("summary"):
        out += [_paragraph(op.get("description") or op["summary"]), ""]
    params = op.get("parameters") or []
    if params:
        out += ["| parameter | in | type | required | meaning |", "|---|---|---|---|---|"]
        for p in params:
            meaning = p.get("description") or p.get("schema", {}).get("description", "")
            out.append(f"| `{p['name']}` | {p['in']} | {_type(p.get('schema', {}))} | "
                       f"{'yes' if p.get('required') else 'no'} | {_cell(meaning)} |")
        out.append("")
    body = op.get("requestBody")
    if body:
        for ctype, content in body.get("content", {}).items():
            sch = content.get("schema", {})
            out += [f"**Request body** (`{ctype}`{', required' if body.get('required') else ''}): "
                    f"{_type(sch)}", ""]
            out += _fields_table(components.get(sch["$ref"].rsplit("/", 1)[-1], {}) if "$ref" in sch else sch)
    out += ["| status | meaning | body |", "|---|---|---|"]
    for status, resp in op.get("responses", {}).items():
        sch = next(iter(resp.get("content", {}).values()), {}).get("schema")
        out.append(f"| {status} | {_cell(resp.get('description', ''))} | {_type(sch) if sch else ''} |")
    out.append("")
    return out


def _fields_table(schema: dict[str, Any]) -> list[str]:
    props = schema.get("properties")
    if not props:
        return []
    required = set(schema.get("required", []))
    out = ["| field | type | required | default | meaning |", "|---|---|---|---|---|"]
    for name, prop in props.items():
        default = f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
        meaning = prop.get("description", "")
        if prop.get("examples"):
            meaning += f" (e.g. `{json.dumps(prop['examples'][0])}`)"
        out.append(f"| `{name}` | {_type(prop)} | {'yes' if name in required else 'no'} | "
                   f"{_cell(default)} | {_cell(meaning)} |")
    out.append("")
    return out


_BOUNDS = (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"),
           ("minLength", "min length"), ("maxLength", "max length"), ("minItems", "min items"),
           ("maxItems", "max items"), ("maxProperties", "max keys"), ("pattern", "pattern"))


def _type(schema: dict[str, Any] | None) -> str:
    if not schema:
        return "any"
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "anyOf" in schema or "oneOf" in schema:
        parts = [s for s in schema.get("anyOf", schema.get("oneOf", [])) if s.get("type") != "null"]
        nullable = len(parts) < len(schema.get("anyOf", schema.get("oneOf", [])))
        text = " or ".join(_type(s) for s in parts) + (" or null" if nullable else "")
    elif "enum" in schema:
        text = "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    elif schema.get("type") == "array":
        text = f"array of {_type(schema.get('items'))}"
    elif schema.get("type") == "object" or "additionalProperties" in schema:
        extra = schema.get("additionalProperties")
        pattern = schema.get("patternProperties")
        if isinstance(extra, dict):
            text = f"object of {_type(extra)}"
        elif pattern:
            text = f"object of {_type(next(iter(pattern.values())))}"
        else:
            text = "object"
    else:
        text = schema.get("type", "any") + (f" ({schema['format']})" if "format" in schema else "")
    bounds = [f"{sym} {schema[key]}" for key, sym in _BOUNDS if key in schema]
    if bounds:
        text += f" ({', '.join(f'`{b}`' if 'pattern' in b else b for b in bounds)})"
    return text


# --- command line ---------------------------------------------------------------------------

def recsys_parser() -> argparse.ArgumentParser:
    """The parser behind the `recsys` console script that pyproject.toml declares."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module = importlib.import_module(scripts["recsys"].split(":", 1)[0])
    for name in ("build_parser", "make_parser", "parser", "_parser"):
        build = getattr(module, name, None)
        if callable(build):
            parser = build()
            if isinstance(parser, argparse.ArgumentParser):
                return parser
    raise LookupError(f"{module.__name__}: no function returning the argparse parser")


def cli_reference(parser: argparse.ArgumentParser | None = None) -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps its usage lines at the terminal's width
    parser = parser or recsys_parser()
    out = [
        "# Command line reference",
        "",
        f"Written at build time from the `{parser.prog}` command's argparse parser; the guide is "
        "[Command line](../cli.md). Every command prints this with `--help`.",
        "",
    ]
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in subs._choices_actions}
    for name, sub in subs.choices.items():
        out += [f"## {parser.prog} {name}", ""]
        if helps.get(name):
            out += [helps[name][0].upper() + helps[name][1:] + ".", ""]
        out += ["```", sub.format_usage().strip(), "```", ""]
        out += _arguments_table(sub)
    return "\n".join(out) + "\n"


def _arguments_table(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    one_of = {id(a): group for group in parser._mutually_exclusive_groups if group.required
              for a in group._group_actions}
    out = ["| argument | required | default | meaning |", "|---|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar or (action.choices and "{" + ",".join(action.choices) + "}") \
                    or action.dest.upper()
                name += f" {metavar}"
        else:
            name = action.metavar or action.dest
        default = action.default
        hidden = default is None or default is False or default == argparse.SUPPRESS
        shown = "" if hidden or not action.option_strings else f"`{default}`"
        required = "yes" if action.required or not action.option_strings else "no"
        if id(action) in one_of:
            required = "one of " + ", ".join(a.option_strings[0] for a in one_of[id(action)]._group_actions)
        meaning = formatter._expand_help(action) if action.help else ""
        if action.choices and not meaning:
            meaning = "one of " + ", ".join(f"`{c}`" for c in action.choices)
        out.append(f"| `{_cell(name)}` | {required} | {_cell(shown)} | {_cell(meaning)} |")
    out.append("")
    return out
