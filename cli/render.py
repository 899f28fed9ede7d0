"""Terminal rendering with rich: progress, metric tables, rankings, per-head bars and heatmaps."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from recsys.recommender import ItemDetail, Recommendation


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """stdout's reader left (`recsys recommend ... | head`): rich would exit with status 1
        here; the command line ends quietly instead (cli.main.main)."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of stdout has gone")


console = _Console()
err_console = Console(stderr=True)
HEAD_COLORS = {"quality": "magenta", "color": "red", "style": "cyan", "other": "green"}
# heads a schema adds (`[facets] add`) take these, in head order
EXTRA_COLORS = ("yellow", "blue", "bright_magenta", "bright_cyan", "bright_green")
METRIC_ORDER = ("ndcg@10", "recall@10", "mrr", "queries")


@contextlib.contextmanager
def progress_bar(label: str) -> Iterator:
    """Yields `on_step(step, total, loss)`; the bar appears at the first step, so errors found
    while reading the data are not preceded by an empty bar."""
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                        TextColumn("{task.completed}/{task.total}"), TextColumn("loss {task.fields[loss]:.3f}"),
                        TimeElapsedColumn(), TimeRemainingColumn(), console=err_console)
    task = None

    def on_step(step: int, total: int, loss: float) -> None:
        nonlocal task
        if task is None:
            progress.start()
            task = progress.add_task(label, total=total, loss=loss)
        progress.update(task, completed=step, total=total, loss=loss)

    try:
        yield on_step
    finally:
        if task is not None:
            progress.stop()


def print_metrics(metrics: dict) -> None:
    for section, systems in metrics.items():
        if section == "faithfulness":
            from training.faithfulness import format_report

            console.print("faithfulness\n" + format_report(systems))
            continue
        if section == "explanation_accuracy":
            kinds = ", ".join(f"{kind} {part['accuracy']:.3f} of {part['cases']}"
                              for kind, part in systems.get("kinds", {}).items())
            console.print(f"explanation accuracy: {systems['accuracy']:.3f} over {systems['cases']} cases"
                          + (f" ({kinds})" if kinds else ""))
            continue
        if not isinstance(systems, dict) or "model" not in systems:
            continue
        if systems["model"].get("queries") == 0:  # nothing held out: the summary line says so
            continue
        table = Table(title=f"{section.replace('_', ' ')}", title_justify="left")
        table.add_column("system")
        for m in METRIC_ORDER:
            table.add_column(m, justify="right")
        for name, values in systems.items():
            if not isinstance(values, dict) or "mrr" not in values:
                continue
            table.add_row(name, *[_fmt(values.get(m)) for m in METRIC_ORDER])
        console.print(table)
        if "explanation_accuracy" in systems:
            print_metrics({"explanation_accuracy": systems["explanation_accuracy"]})


def _fmt(x) -> str:
    return "" if x is None else (str(x) if isinstance(x, int) else f"{x:.4f}")


def head_color(head: str, heads: list[str]) -> str:
    """The default heads' own colours; an added head the next free one, by its place."""
    if head in HEAD_COLORS:
        return HEAD_COLORS[head]
    added = [h for h in heads if h not in HEAD_COLORS]
    return EXTRA_COLORS[added.index(head) % len(EXTRA_COLORS)] if head in added else "white"


def contribution_bar(heads, width: int = 30) -> Text:
    total = sum(max(h.contribution, 0.0) for h in heads) or 1.0
    bar = Text()
    for h in heads:
        n = round(width * max(h.contribution, 0.0) / total)
        bar.append("█" * n, style=head_color(h.head, [x.head for x in heads]))
    return bar


def print_recommendation(result: Recommendation) -> None:
    console.print(f"[bold]{result.query}[/]  tokens: {' '.join(result.tokens)}  "
                  f"model {result.model_version}")
    if result.unmatched_tokens:
        console.print(f"no item matches: {', '.join(result.unmatched_tokens)}"
                      + ("  (ranked by prior)" if not any(i.explanation and i.explanation.matched
                                                          for i in result.items) else ""))
    table = Table(show_lines=False)
    for col in ("#", "item", "score", "heads", "why"):
        table.add_column(col)
    for item in result.items:
        exp = item.explanation
        table.add_row(str(item.rank), f"{item.item_id}\n{item.title}", f"{item.score:.3f}",
                      contribution_bar(exp.heads) if exp else "", exp.summary if exp else "")
    console.print(table)
    legend = Text("heads: ")
    heads = [h.head for h in result.items[0].explanation.heads] if result.items and result.items[0].explanation \
        else list(HEAD_COLORS)
    for head in heads:
        legend.append(f"■ {head} ", style=head_color(head, heads))
    console.print(legend)


def print_explanation(detail: ItemDetail, title: str) -> None:
    console.print(f"[bold]{detail.item_id}[/] {title}")
    parts = " + ".join(f"{h.head} {h.contribution:.3f}" for h in detail.heads)
    console.print(f"score {detail.score:.4f} = prior {detail.prior:.4f} + {parts}")
    for h in detail.heads:
        table = Table(title=f"{h.head} head: contribution {h.contribution:+.4f}", title_justify="left",
                      title_style=head_color(h.head, [x.head for x in detail.heads]))
        table.add_column("query word")
        shown = _columns_that_fit(h.attention, len(h.attributes) - 1, console.width)
        hidden = len(h.attributes) - 1 - len(shown)
        for m in shown:
            table.add_column(h.attributes[m], justify="center", overflow="fold")
        if hidden:
            table.add_column(f"{hidden} others", justify="center")
        table.add_column(h.attributes[-1], justify="center")  # no match
        for tok, row in zip(detail.tokens, h.attention):
            rest = [_cell(sum(row[m] for m in range(len(row) - 1) if m not in shown))] if hidden else []
            table.add_row(tok, *[_cell(row[m]) for m in shown], *rest, _cell(row[-1]))
        console.print(table)
        for match in h.matches:  # what lets each word match: "navy -> blue (learned from 41 searches)"
            t, a = detail.tokens.index(match.query_token), h.attributes.index(match.attribute)
            kind = h.evidence[t][a] if h.evidence else ""
            console.print(f"  {match.query_token} -> {match.attribute}" + (f" ({kind})" if kind else ""))
        erasure = sorted(h.erasure, key=lambda e: -abs(e.score_change))
        changes = ", ".join(f"{e.attribute} {e.score_change:+.3f}" for e in erasure[:ERASURES_SHOWN])
        if len(erasure) > ERASURES_SHOWN:
            changes += f" (and {len(erasure) - ERASURES_SHOWN} smaller)"
        if changes:
            console.print(f"  removing an attribute changes the score by: {changes}")


# the heatmap's columns: the query-word column, each attribute's, the no-match slot's
WORD_COLUMN, ATTRIBUTE_COLUMN = 14, 12
ERASURES_SHOWN = 8


def _columns_that_fit(attention: list[list[float]], n_attributes: int, width: int) -> list[int]:
    """The attributes whose columns fit in `width` (the most attended first, kept in the item's
    order): a long description has a hundred, and drawn all at once at 80 columns each was a
    sliver without a number. The rest are summed into one column."""
    room = max(1, (width - WORD_COLUMN) // ATTRIBUTE_COLUMN - 1)  # the no-match column too
    if n_attributes <= room:
        return list(range(n_attributes))
    room = max(1, room - 1)  # and the others' column
    peak = [max((row[m] for row in attention), default=0.0) for m in range(n_attributes)]
    return sorted(sorted(range(n_attributes), key=lambda m: -peak[m])[:room])


def _cell(weight: float) -> Text:
    shade = round(255 - 200 * weight)
    return Text(f"{weight:.2f}", style=f"black on rgb(255,{shade},{shade})" if weight >= 0.05 else "dim")
