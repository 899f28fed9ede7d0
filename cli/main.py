"""The `recsys` command: the one place that wires the library, training and the service."""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import tempfile
import traceback
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from recsys.errors import InputError, RecsysError
from recsys.io.readers import UNKNOWN_ITEMS
from recsys.synthetic import DEFAULT_ITEMS, DEFAULT_QUERIES
from training.config import TrainConfig

EXIT_BAD_INPUT = 2


def main(argv: list[str] | None = None) -> int:
    """Every failure is one line on stderr and exit code 2 (130 when interrupted). Output whose
    reader leaves early (`recsys ... | head`) ends quietly, exit code 0."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code = args.run(args) or 0
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback when Python exits
        return code
    except RecsysError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("interrupted: nothing was written", file=sys.stderr)
        return 130
    except BrokenPipeError as exc:
        if not _stdout_closed():  # some other pipe: a bug like any other
            return _internal_error(exc)
        # the reader has what it wanted, and every command prints after its work is done
        _silence_stdout()
        return 0
    except MemoryError:
        return _fail("out of memory")
    except Exception as exc:  # noqa: BLE001 - a bug: one line, the traceback with RECSYS_LOG_LEVEL=debug
        return _internal_error(exc)


def _fail(message: str) -> int:
    print("error: " + " ".join(message.split("\n")), file=sys.stderr)
    return EXIT_BAD_INPUT


def _internal_error(exc: BaseException) -> int:
    if _debug():
        traceback.print_exception(exc)
    return _fail(f"internal error: {type(exc).__name__}: {exc} (RECSYS_LOG_LEVEL=debug shows "
                 f"the traceback)")


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (its write end then polls as an error)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no descriptor (io.UnsupportedOperation), no poll
        return False


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit fails no more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _debug() -> bool:
    try:
        return _settings().log_level.lower() == "debug"
    except Exception:  # noqa: BLE001 - settings that cannot be read are no reason for another error
        return False


def _settings():
    from api.config import get_settings

    return get_settings()


def _int_in(lo: int, hi: int | None = None):
    """An argparse type: an int in lo..hi, else an error naming the value and the range."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < lo or (hi is not None and value > hi):
            span = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: expected {span}")
        return value
    parse.__name__ = "int"
    return parse


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="recsys", description="Explainable facet-attention recommender")
    sub = p.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="write a synthetic catalogue with a known ground truth")
    g.add_argument("--out", required=True, type=Path)
    g.add_argument("--items", type=int, default=DEFAULT_ITEMS)
    g.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    g.add_argument("--seed", type=int, default=0)
    g.set_defaults(run=cmd_generate)

    t = sub.add_parser("train", help="train a new model version from CSV files or shopper events")
    _add_data_options(t, items_required=False)
    source = t.add_mutually_exclusive_group()
    source.add_argument("--interactions", type=Path,
                        help="the search log (query,item_id,label[,weight]), a CSV file or an Excel "
                             "workbook (.xlsx); without it or --events, "
                             "--items alone writes the untrained start, which ranks as keyword "
                             "search (BM25) does, reported on searches drawn from the items' own words")
    source.add_argument("--events", nargs="?", const="", metavar="URL",
                        help="train from the events of the store at URL (default: the service's, "
                             "RECSYS_DATABASE_URL or SQLite under RECSYS_DATA_DIR); without "
                             "--items, on the catalogue of the current version")
    t.add_argument("--since", type=_timestamp, help="with --events: only events at or after this "
                                                    "ISO 8601 time (UTC when it has no zone)")
    t.add_argument("--unknown-items", choices=UNKNOWN_ITEMS, default=UNKNOWN_ITEMS[0],
                   help="interactions naming an item the items file does not have (discontinued "
                        "items in a search log): skip them, counted and the first shown "
                        "(default), or stop with an error")
    t.add_argument("--judgments", type=Path, help="extra held-out judgments to report on")
    t.add_argument("--synonyms", type=Path, help=SYNONYMS_HELP + "; the new version and the served "
                                                 "one are evaluated with them, as `recsys serve "
                                                 "--synonyms` serves them (the model learns nothing of them)")
    t.add_argument("--probes", type=Path, help="query,word,facet,value: explanation ground truth")
    t.add_argument("--out", type=Path, help="artifacts folder (default: RECSYS_ARTIFACTS_DIR or ./artifacts)")
    t.add_argument("--epochs", type=_int_in(1), default=TrainConfig.epochs,
                   help="at most this many (default: %(default)s); training stops when held-aside "
                        "queries stop improving")
    t.add_argument("--seed", type=int, default=TrainConfig.seed)
    t.add_argument("--json", action="store_true", help="print the metrics as JSON")
    t.add_argument("--activate", action="store_true",
                   help="serve the new version even when it may not replace the current one on "
                        "its own (another catalogue, or worse on the same held-out queries)")
    t.add_argument("--nproc", type=_int_in(1), default=1,
                   help="training processes on this machine (torch.distributed; default: "
                        "%(default)s); each fits its share of every batch, the first writes")
    t.set_defaults(run=cmd_train, parser=t)

    e = sub.add_parser("evaluate", help="NDCG@10, Recall@10, MRR of a model and the baselines")
    e.add_argument("--model", type=Path)
    _add_data_options(e)
    e.add_argument("--judgments", required=True, type=Path)
    e.add_argument("--probes", type=Path)
    e.add_argument("--json", action="store_true")
    e.set_defaults(run=cmd_evaluate)

    r = sub.add_parser("recommend", help="rank the catalogue for a query")
    r.add_argument("query")
    _add_ranking_options(r)
    r.set_defaults(run=cmd_recommend)

    m = sub.add_parser("similar", help="items like an item, ranked by its own attributes")
    m.add_argument("item_id")
    m.add_argument("--same", action="append", default=None, metavar="KEY",
                   help="a filter key whose values the results share with the item, repeatable "
                        "(--same category: a chair's like-this are chairs); not given: the item's "
                        "kind (its articleType, product_type, type, category, ... column), "
                        "--same none: items of every kind")
    _add_ranking_options(m)
    m.set_defaults(run=cmd_similar)

    x = sub.add_parser("explain", help="why an item scores what it does for a query")
    x.add_argument("query")
    x.add_argument("item_id")
    x.add_argument("--model", type=Path)
    x.add_argument("--json", action="store_true")
    x.add_argument("--synonyms", type=Path, help=SYNONYMS_HELP)
    x.set_defaults(run=cmd_explain)

    s = sub.add_parser("serve", help="run the HTTP service")
    s.add_argument("--host")
    s.add_argument("--port", type=_int_in(1, 65535))
    s.add_argument("--model", type=Path)
    s.add_argument("--synonyms", type=Path, help=SYNONYMS_HELP + "; served beside the store's "
                                                 "(/admin/synonyms), read at start and when it "
                                                 "changes (default: RECSYS_SYNONYMS_FILE)")
    s.add_argument("--workers", type=_int_in(1),
                   help="server processes on the one port (default: RECSYS_WORKERS, else one per "
                        "core; 1: a single process)")
    s.set_defaults(run=cmd_serve)

    b = sub.add_parser("bench", help="latency of the model against the reference, bm25s and tantivy")
    b.add_argument("--items", type=int, default=100_000,
                   help="items of the generated (synthetic) catalogue; unused with --catalog")
    b.add_argument("--catalog", type=Path, metavar="ITEMS_CSV",
                   help="bench on this items CSV (the CSV contract) instead of a generated catalogue: "
                        "the untrained start, timed on known-item queries drawn from its titles")
    b.add_argument("--interactions", type=Path, metavar="CSV",
                   help="with --catalog: the model trains one epoch on these interactions and their "
                        "search terms are the timed queries")
    b.add_argument("--queries", type=int, default=200)
    b.add_argument("--sessions", type=int, help="training sessions to generate (default: from --items)")
    b.add_argument("--reference-seconds", type=float, default=30.0,
                   help="time budget of the (slow) reference attention; at least 3 queries")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--rounds", type=int,
                   help="runs of every engine over the queries, one engine after another in each; "
                        "ratios are the median over them, as the machine's speed drifts "
                        "(default: cli.bench.ROUNDS)")
    b.add_argument("--http", action="store_true",
                   help="then POST /recommend (k 10) with and without explanations against GET /health "
                        "over HTTP, `recsys serve --workers 1` then 2 on the default synthetic "
                        "catalogue (benchmarks/http_bench.py --ratios; wrk when installed): requests "
                        "per second, their ratio to /health's and the server's CPU a request")
    b.add_argument("--http-only", action="store_true", help="the HTTP figures alone")
    b.add_argument("--http-seconds", type=float, default=6.0, help="length of each HTTP phase")
    b.add_argument("--json", action="store_true")
    b.set_defaults(run=cmd_bench)
    return p


SYNONYMS_HELP = ("a synonyms.txt file of the shop's synonyms (docs/data.md): `navy => blue` one-way, "
                 "`sofa, couch, settee` two-way, one a line")


def _synonyms(path: Path | None) -> list:
    """The rules of a synonyms file (none without one); a bad line is an InputError naming it."""
    from recsys.synonyms import SynonymError, read_synonyms_file

    if path is None:
        return []
    try:
        return read_synonyms_file(path)
    except SynonymError as exc:
        raise InputError(str(exc)) from None


def _load(args):
    """The version of `--model` (the current one by default), with `--synonyms`."""
    from recsys.artifact import load_version
    from recsys.synonyms import SynonymBook

    rec = load_version(_model_path(args.model))
    rec.use_synonyms(SynonymBook(_synonyms(args.synonyms)))
    return rec


def _add_ranking_options(p: argparse.ArgumentParser) -> None:
    """What a command that prints a ranking takes: how many items, which version, JSON or a table."""
    p.add_argument("--k", type=_int_in(1), default=10)
    p.add_argument("--model", type=Path)
    p.add_argument("--json", action="store_true")
    p.add_argument("--synonyms", type=Path, help=SYNONYMS_HELP)


def _add_data_options(p: argparse.ArgumentParser, items_required: bool = True) -> None:
    p.add_argument("--items", required=items_required, type=Path,
                   help="the catalogue: a CSV file, an Excel workbook (.xlsx), an XML product feed (Google "
                        "Merchant RSS or Atom) or JSON records (an array or JSON Lines)"
                        + ("" if items_required else "; required with --interactions"))
    p.add_argument("--schema", type=Path,
                   help="TOML file: [rename] columns to the contract's names (common export names "
                        "such as product_id, search_term are mapped without it), [columns] to facets")
    p.add_argument("--encoding", help="encoding of the CSV files (default: UTF-8)")
    p.add_argument("--on-bad-lines", choices=("error", "skip"), default="error",
                   help="rows with the wrong number of fields, and items rows with no item_id, a bad "
                        "one, no title or a repeated item_id: stop (default) or skip and report")


# ---- commands ---------------------------------------------------------------------------------


def cmd_generate(args) -> int:
    from recsys.synthetic import generate

    summary = generate(args.out, n_items=args.items, n_queries=args.queries, seed=args.seed)
    print(json.dumps(summary, indent=2, default=str))
    return 0


def cmd_train(args) -> int:
    if args.nproc != 1:
        if args.events is not None:
            raise InputError("--nproc goes with --interactions: training from events runs in one process")
        from .launch import launch

        return launch(args.nproc, _options(args.parser, args, leave_out={"nproc"}))
    from cli.render import print_metrics, progress_bar
    from recsys.io.schema import Schema
    from training.distributed import current
    from training.evaluate_version import read_probes
    from training.train import TrainInputs, train_replica

    replicas = current()  # set when torchrun started this process (training/distributed.py)
    writes = replicas is None or replicas.writes
    if args.probes:  # a DataError now, not a KeyError after training
        read_probes(args.probes, Schema.load(args.schema).rename if args.schema else None)
    if args.since is not None and args.events is None:
        raise InputError("--since goes with --events")
    out = args.out or _settings().artifacts_dir
    cfg = TrainConfig(epochs=args.epochs, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="recsys-events-") as tmp:
        if args.events is not None:
            inputs = _event_inputs(args, Path(out), Path(tmp), cfg)
        elif args.items is None:
            raise InputError("recsys train needs --items ITEMS_CSV (the catalogue), with "
                             "--interactions CSV (its search log) when there is one, or --events")
        else:
            inputs = TrainInputs(args.items, args.interactions, args.schema, args.judgments,
                                 args.probes, args.encoding, args.on_bad_lines,
                                 baseline=_current_dir(Path(out)))
        inputs.unknown_items = args.unknown_items
        inputs.synonyms = tuple(_synonyms(args.synonyms))
        with progress_bar("training") as on_step:
            result = train_replica(inputs, out, cfg, on_step if writes else None, replicas,
                                   make_current=False)
    if result is None:  # another process of a distributed run writes the version and reports
        return 0
    from recsys.promotion import plain_summary

    decision = _activate_if_allowed(Path(out), inputs.baseline, result, args.activate)
    _print_data_notes(result.manifest.get("data", {}))
    for warning in (result.manifest.get("data", {}).get("synonyms") or {}).get("unusable", []):
        print(f"{args.synonyms}: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps({"version": result.version_dir.name, "path": str(result.version_dir),
                          "activated": decision.activate, "decision": decision.reason,
                          "summary": plain_summary(result.metrics), "metrics": result.metrics}))
    else:
        print(plain_summary(result.metrics))
        print(f"new version {result.version_dir.name} at {result.version_dir}")
        print(decision.reason)
        length_unit = result.manifest.get("training", {}).get("fit", {}).get("length_unit")
        if length_unit:
            from training.length_unit import describe

            print(describe(length_unit))
        print_metrics(result.metrics)
    return 0


def _current_dir(artifacts: Path) -> Path | None:
    """The folder of the artifacts' current version, if there is one."""
    from recsys.artifact import current_version

    name = current_version(artifacts) if artifacts.is_dir() else None
    return artifacts / name if name else None


def _activate_if_allowed(artifacts: Path, served: Path | None, result, force: bool):
    """The same rule as the service's retrains (`recsys.promotion.decide_after_training`): the
    new version becomes current on its own only when it was evaluated on the served one's data
    and is not worse there; a server watching the folder follows `current`, so a run on another
    catalogue must not replace what it serves without --activate, and when a server of this
    folder changed its catalogue while this trained, not even with it (that would undo changes
    it acknowledged)."""
    from recsys.artifact import read_manifest, set_current
    from recsys.promotion import decide_after_training

    name = result.version_dir.name
    served_manifest = read_manifest(served) if served is not None else None
    now = _current_dir(artifacts)  # moved meanwhile by a server's catalogue change, or another run
    now_manifest = (served_manifest if now == served else read_manifest(now)) if now is not None else None
    hint = f"train with --activate, or POST /admin/versions/{name}/activate to a server of this folder, serves it"
    decision = decide_after_training(name, result.manifest, served.name if served else None, served_manifest,
                                     now.name if now else None, now_manifest, force=force, hint=hint)
    if decision.activate:
        set_current(artifacts, name)
    return decision


def _options(parser: argparse.ArgumentParser, args, leave_out: set[str]) -> list[str]:
    """The command line that gives `parser` these parsed `args` (without `leave_out`)."""
    out: list[str] = []
    for action in parser._actions:  # argparse keeps no public list of a parser's options
        value = getattr(args, action.dest, None)
        if not action.option_strings or action.dest in leave_out or value in (None, False):
            continue
        if isinstance(action, argparse._StoreTrueAction):
            out.append(action.option_strings[-1])
        elif value != action.default:
            out.append(f"{action.option_strings[-1]}={value}")  # a value may start with "-"
    return out


def _event_inputs(args, artifacts: Path, tmp: Path, cfg: TrainConfig):
    """Training from events: on --items, or the current version's catalogue (replayed on the
    most recent queries)."""
    from training.events import inputs_from_events

    served = _current_dir(artifacts)
    url = args.events or _settings().store_url
    return inputs_from_events(url, args.since, tmp, cfg.held_out_fraction, items=args.items,
                              schema=args.schema, served=served, judgments=args.judgments,
                              probes=args.probes)


def _timestamp(text: str) -> datetime:
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time "
                                         f"(e.g. 2026-12-01T09:00:00Z)") from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _print_data_notes(data: dict) -> None:
    """What was read that the user should know of, on stderr (the manifest keeps it too): each
    file's columns read under another name (`products.csv: product_id -> item_id, ...`), the
    interactions skipped for an unknown item, the columns of links and of category paths, the
    spec list found in an `attributes` column, and with `--on-bad-lines skip` the lines left out."""
    from recsys.io.headers import HeaderMap

    for name in ("items", "interactions"):
        entry = data.get(name) or {}
        file = Path(entry.get("file") or name).name
        if entry.get("columns"):
            print(f"{file}: {HeaderMap(entry['columns'], frozenset()).describe()}", file=sys.stderr)
        for notice in entry.get("notices") or ():
            print(f"{file}: {notice}", file=sys.stderr)
    links = (data.get("items") or {}).get("links")
    if links:
        print(f"{', '.join(links)}: links, not read as attributes (a schema's [columns] can map them)",
              file=sys.stderr)
    kept = (data.get("items") or {}).get("bookkeeping")
    if kept:
        print(f"{', '.join(kept)}: the shop's own records (stock, cost, tax, shipping, SEO), not read as "
              f"attributes (a schema's [columns] can map them)", file=sys.stderr)
    paths = (data.get("items") or {}).get("paths")
    if paths:
        print(f"{', '.join(paths)}: category paths (A > B > C), each level a value of its own", file=sys.stderr)
    prose = (data.get("items") or {}).get("prose")
    if prose:
        print(f"{', '.join(prose)}: free text, read as the description's words (a schema's [columns] can "
              "map them as values)", file=sys.stderr)
    for key, words in ((data.get("items") or {}).get("number_words") or {}).items():
        cells = sum(words.values())
        shown = ", ".join(f"{w!r} ({n:,})" for w, n in list(words.items())[:3]) + (", ..." if len(words) > 3 else "")
        print(f"{key}: read as numbers (a range filter takes it); {cells:,} cell{'s' * (cells != 1)} "
              f"{'are not numbers and stay words' if cells != 1 else 'is not a number and stays a word'}, "
              f"which no range selects: {shown}", file=sys.stderr)
    spec = (data.get("items") or {}).get("spec_list")
    if spec:
        columns = [c for c in spec.get("columns") or () if c.strip().lower() != "attributes"]
        found = f"; read as spec lists: {', '.join(columns)}" if columns else ""
        print(f"attributes: {spec['items']:,} items, {spec['keys']:,} keys (key:value pairs, the key as "
              f"context{found})", file=sys.stderr)
        broken = spec.get("broken_json", 0)
        if broken:
            print(f"attributes: {broken:,} cell{'s' * (broken != 1)} not valid JSON (cut short or a quote "
                  f"missing): only {'its' if broken == 1 else 'their'} complete \"key\": value pairs are read",
                  file=sys.stderr)
    for name in ("items", "interactions"):
        entry = data.get(name) or {}
        lines = entry.get("skipped_lines") or []
        told = entry.get("unknown_items", 0) + entry.get("empty_queries", 0)
        if lines and len(lines) > told:  # not only those told of above
            shown = ", ".join(map(str, lines[:20])) + (", ..." if len(lines) > 20 else "")
            print(f"skipped {len(lines)} line{'s' * (len(lines) != 1)} of {entry.get('file', name)}: "
                  f"{shown}", file=sys.stderr)


def cmd_evaluate(args) -> int:
    from cli.render import print_metrics
    from training.evaluate_version import evaluate_version

    report = evaluate_version(_model_path(args.model), args.items, args.judgments, args.probes,
                              args.schema, args.encoding, args.on_bad_lines)
    if args.json:
        print(json.dumps(report))
    else:
        print_metrics({"judgments": report})
    return 0


def cmd_recommend(args) -> int:
    from cli.render import print_recommendation

    rec = _load(args)
    result = rec.recommend(args.query, k=args.k)
    if args.json:
        print(json.dumps(asdict(result)))
    else:
        print_recommendation(result)
    return 0


def cmd_similar(args) -> int:
    from cli.render import print_recommendation

    rec = _load(args)
    from recsys.similar import same_keys

    asked, result = rec.similar(args.item_id, k=args.k, same=same_keys(args.same))
    if args.json:
        print(json.dumps({**asdict(asked), "recommendation": asdict(result)}))
    else:
        drawn = "; ".join(f"{w} <- {', '.join(labels)}" for w, labels in asked.drawn_by.items())
        print(f"like {asked.item_id} ({rec.catalog.titles[rec.catalog.idx(asked.item_id)]}): {drawn}")
        if asked.kept_to:
            # as the page says it: "kept to kind in its title: microwave"
            print("kept to " + "; ".join(f"{key}: {', '.join(v)}" for key, v in asked.kept_to.items()))
        print_recommendation(result)
    return 0


def cmd_explain(args) -> int:
    from cli.render import print_explanation

    rec = _load(args)
    detail = rec.explain(args.query, args.item_id)
    if args.json:
        print(json.dumps(asdict(detail)))
    else:
        print_explanation(detail, rec.catalog.titles[rec.catalog.idx(args.item_id)])
    return 0


def cmd_serve(args) -> int:
    from .serve import serve

    settings = _settings()
    if args.synonyms is not None:
        settings = settings.model_copy(update={"synonyms_file": args.synonyms})
    _synonyms(settings.synonyms_file)  # a bad file stops here, before any worker starts
    return serve(settings, host=args.host, port=args.port, model=args.model, workers=args.workers)


def cmd_bench(args) -> int:
    from cli.bench import format_report, run_bench, run_http

    if args.interactions is not None and args.catalog is None:
        raise InputError("--interactions needs --catalog ITEMS_CSV (the items they name)")
    result: dict = {}
    if not args.http_only:
        result = run_bench(args.items, args.queries, args.seed, args.sessions, args.reference_seconds,
                           rounds=args.rounds, items_csv=args.catalog, interactions_csv=args.interactions)
    if args.http or args.http_only:
        result["http"] = run_http(rounds=args.rounds or 3, seconds=args.http_seconds)
    print(json.dumps(result) if args.json else format_report(result))
    return 0


def _model_path(model: Path | None) -> Path:
    return model if model is not None else _settings().artifacts_dir


if __name__ == "__main__":
    sys.exit(main())
