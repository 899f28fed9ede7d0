// The web page of the explainable recommender: search, per-head contribution bars, heatmaps,
// head-weight sliders and a head-by-head comparison. Plain DOM, no build step, no CDN.
// Everything the API returns is written with textContent (never innerHTML): item data is text.
"use strict";

(() => {
  const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9"]; // Okabe-Ito
  const PAGE = 10;
  const DEBOUNCE_MS = 150;

  const state = {
    heads: ["quality", "color", "style", "other"], // replaced by GET /model's facets
    weights: {},
    query: "",
    items: [], // ranked items shown, in order
    shown: null, // the last answer drawn (drawn again when GET /model brings other heads)
    total: 0,
    selected: [], // item ids ticked for comparison (at most two, oldest dropped)
    openItem: null,
    recommendCtl: null,
    explainCtl: null,
  };

  const $ = (sel) => document.querySelector(sel);
  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k === "style") node.setAttribute("style", v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k in node && typeof v !== "string") node[k] = v;
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c !== null && c !== undefined) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  };

  const colour = (head) => {
    const i = state.heads.indexOf(head);
    return PALETTE[(i < 0 ? state.heads.length : i) % PALETTE.length];
  };
  const fmt = (x, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : "–");
  const signed = (x, digits = 3) => (x >= 0 ? "+" : "−") + Math.abs(x).toFixed(digits);

  // ---- the API --------------------------------------------------------------------------------

  class ApiError extends Error {}

  async function api(path, body, signal) {
    const init = body === undefined ? { signal } : {
      method: "POST", signal, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    };
    const res = await fetch(path, init);
    let data = null;
    try { data = await res.json(); } catch (_) { /* not JSON */ }
    if (!res.ok) throw new ApiError(errorText(res, data));
    return data;
  }

  function errorText(res, data) {
    const d = data && data.detail;
    if (typeof d === "string") return d;
    if (Array.isArray(d)) return d.map((e) => (e && (e.msg || e.message)) || JSON.stringify(e)).join("; ");
    if (d && typeof d === "object") return d.message || JSON.stringify(d);
    if (res.status === 503) return "The model is still loading; try again in a moment.";
    return `The server answered ${res.status} ${res.statusText}`;
  }

  function headWeights() {
    const out = {};
    for (const h of state.heads) {
      const w = state.weights[h];
      if (w !== undefined && w !== 1) out[h] = w;
    }
    return out;
  }
  const weightsKey = () => JSON.stringify(headWeights());

  // ---- URL (shareable views) ------------------------------------------------------------------

  function readUrl() {
    const p = new URLSearchParams(location.search);
    const weights = {};
    for (const part of (p.get("w") || "").split(",")) {
      const [h, v] = part.split(":");
      const x = parseFloat(v);
      if (h && Number.isFinite(x)) weights[h] = Math.min(2, Math.max(0, x));
    }
    return { q: (p.get("q") || "").trim(), weights, item: p.get("item") };
  }

  function writeUrl(push) {
    const p = new URLSearchParams();
    if (state.query) p.set("q", state.query);
    const w = Object.entries(headWeights()).map(([h, v]) => `${h}:${v}`).join(",");
    if (w) p.set("w", w);
    if (state.openItem) p.set("item", state.openItem);
    const qs = p.toString();
    const url = location.pathname + (qs ? `?${qs}` : "");
    if (url === location.pathname + location.search) return;
    if (push) history.pushState(null, "", url);
    else history.replaceState(null, "", url);
  }

  // ---- status ---------------------------------------------------------------------------------

  function setStatus(text) { $("#status").textContent = text; }
  function showError(err) {
    const box = $("#error");
    if (!err) { box.hidden = true; box.textContent = ""; return; }
    if (err.name === "AbortError") return;
    box.textContent = err instanceof ApiError ? err.message : `Could not reach the service (${err.message})`;
    box.hidden = false;
  }

  // ---- sliders and legend ---------------------------------------------------------------------

  function buildControls() {
    const sliders = $("#sliders");
    sliders.replaceChildren();
    for (const h of state.heads) {
      const id = `w-${h}`;
      const value = state.weights[h] ?? 1;
      const out = el("output", { id: `${id}-out`, for: id, text: value.toFixed(1) });
      const input = el("input", {
        id, type: "range", min: "0", max: "2", step: "0.1", value: String(value), "data-head": h,
        "aria-valuetext": `${value.toFixed(1)} times`,
        oninput: (e) => onSlider(h, parseFloat(e.target.value)),
      });
      sliders.append(el("div", { class: "slider" },
        el("label", { for: id }, el("span", { class: "swatch", style: `background:${colour(h)}`, "aria-hidden": "true" }), ` ${h}`,
          el("span", { class: "visually-hidden" }, " head weight")),
        input, out));
    }
    const legend = $("#legend");
    legend.replaceChildren(...state.heads.map((h) => el("li", {},
      el("span", { class: "swatch", style: `background:${colour(h)}`, "aria-hidden": "true" }), h)));
  }

  let sliderTimer = null;
  function onSlider(head, value) {
    state.weights[head] = value;
    const out = document.getElementById(`w-${head}-out`);
    if (out) out.textContent = value.toFixed(1);
    document.getElementById(`w-${head}`).setAttribute("aria-valuetext", `${value.toFixed(1)} times`);
    clearTimeout(sliderTimer);
    sliderTimer = setTimeout(() => {
      writeUrl(false);
      if (state.query) refresh();
    }, DEBOUNCE_MS);
  }

  function resetWeights() {
    state.weights = {};
    buildControls();
    writeUrl(false);
    if (state.query) refresh();
  }

  // ---- search and results ---------------------------------------------------------------------

  async function search(query, { push = true, keepItem = false } = {}) {
    state.query = query.trim();
    $("#q").value = state.query;
    state.selected = [];
    if (!keepItem) { state.openItem = null; closePanel("detail"); }
    closePanel("compare");
    updateCompareButton();
    writeUrl(push);
    document.title = state.query ? `${state.query} – Explainable recommender` : "Explainable recommender";
    if (!state.query) {
      $("#results").replaceChildren();
      setStatus("");
      return;
    }
    await refresh();
    if (keepItem && state.openItem) openItem(state.openItem, { focus: false });
  }

  /** (Re-)rank the current query with the current head weights, first page and any loaded more. */
  async function refresh() {
    const list = $("#results");
    const k = Math.max(PAGE, state.items.length && list.dataset.query === state.query ? state.items.length : PAGE);
    if (state.recommendCtl) state.recommendCtl.abort();
    const ctl = state.recommendCtl = new AbortController();
    list.dataset.state = "loading";
    list.setAttribute("aria-busy", "true");
    setStatus(`Searching for “${state.query}”…`);
    try {
      const data = await api("/recommend", {
        query: state.query, k: Math.min(k, 100), offset: 0, explain: true, head_weights: headWeights(),
      }, ctl.signal);
      if (ctl !== state.recommendCtl) return;
      showError(null);
      state.items = data.items;
      state.total = data.total;
      renderResults(data);
      if (state.openItem && !$("#detail").hidden) openItem(state.openItem, { focus: false });
    } catch (err) {
      if (err.name === "AbortError") return;
      list.dataset.state = "error";
      list.removeAttribute("aria-busy");
      setStatus("");
      showError(err);
    }
  }

  async function more() {
    const list = $("#results");
    try {
      const data = await api("/recommend", {
        query: state.query, k: PAGE, offset: state.items.length, explain: true, head_weights: headWeights(),
      });
      state.items = state.items.concat(data.items);
      renderResults({ ...data, items: state.items }, { focusIndex: state.items.length - data.items.length });
    } catch (err) {
      showError(err);
    }
    list.dataset.state = "ready";
  }

  function renderResults(data, { focusIndex = null } = {}) {
    state.shown = data;
    const list = $("#results");
    const maxTotal = Math.max(1e-9, ...state.items.map((it) => totalContribution(it)));
    list.replaceChildren(...state.items.map((it) => resultCard(it, maxTotal)));
    list.dataset.state = "ready";
    list.dataset.query = state.query;
    list.dataset.weights = weightsKey();
    list.removeAttribute("aria-busy");
    const shown = state.items.length;
    const took = data.took_ms !== undefined ? ` in ${Math.round(data.took_ms)} ms` : "";
    setStatus(shown ? `${shown} of ${state.total} items for “${state.query}”${took}`
      : `No items for “${state.query}”`);
    renderNoMatch(data.unmatched_tokens || [], state.items);
    $("#more").hidden = shown >= state.total || shown >= 100;
    if (focusIndex !== null) {
      const btn = list.children[focusIndex]?.querySelector(".open");
      if (btn) btn.focus();
    }
  }

  // Say in words when query words match nothing: the ranking is then the items' prior alone
  function renderNoMatch(unmatched, items) {
    const note = $("#nomatch");
    const anyMatch = items.some((it) => it.explanation && it.explanation.matched);
    const words = unmatched.map((w) => `“${w}”`).join(", ");
    let text = "";
    if (items.length && items.every((it) => it.explanation) && !anyMatch) {
      text = "No query word matched any item's attributes: these items are ranked by their prior alone"
        + (words ? ` (no item matches ${words}).` : ".");
    } else if (words) {
      text = `No item matches ${words}: ${unmatched.length > 1 ? "these words add" : "this word adds"} nothing to the ranking.`;
    }
    note.textContent = text;
    note.hidden = !text;
  }

  function contributions(item) {
    const by = {};
    for (const h of (item.explanation && item.explanation.heads) || []) by[h.head] = h.contribution;
    return by;
  }
  const totalContribution = (item) =>
    Object.values(contributions(item)).reduce((s, c) => s + Math.max(0, c), 0);

  function resultCard(item, maxTotal) {
    const by = contributions(item);
    const described = state.heads.map((h) => `${h} ${fmt(by[h] ?? 0, 2)}`).join(", ");
    const bar = el("div", { class: "bar", role: "img", "aria-label": `Contributions: ${described}` },
      state.heads.map((h) => {
        const c = Math.max(0, by[h] ?? 0);
        return el("span", {
          class: "seg", "data-head": h, "data-contribution": String(by[h] ?? 0), title: `${h} ${signed(by[h] ?? 0)}`,
          style: `width:${(100 * c / maxTotal).toFixed(3)}%;background:${colour(h)}`,
        });
      }));
    const numbers = el("p", { class: "numbers", "aria-hidden": "true" },
      state.heads.map((h) => el("span", {},
        el("span", { class: "swatch", style: `background:${colour(h)}` }), `${h} ${fmt(by[h] ?? 0, 2)}`)));
    const checked = state.selected.includes(item.item_id);
    const pickId = `pick-${item.rank}`;
    const li = el("li", { class: "result" + (state.openItem === item.item_id ? " open" : ""), "data-item-id": item.item_id },
      el("div", { class: "result-head" },
        el("span", { class: "rank", "aria-hidden": "true" }, String(item.rank)),
        el("h3", { class: "title" },
          el("button", {
            type: "button", class: "open", "aria-controls": "detail",
            "aria-expanded": state.openItem === item.item_id ? "true" : "false",
            onclick: () => openItem(item.item_id),
          }, item.title || item.item_id)),
        el("span", { class: "score", title: "prior + head contributions" }, `score ${fmt(item.score, 2)}`)),
      bar, numbers,
      item.explanation ? el("p", { class: "summary" }, item.explanation.summary) : null,
      el("div", { class: "result-foot" },
        el("span", { class: "item-id" }, item.item_id),
        el("span", { class: "pick" },
          el("input", { type: "checkbox", id: pickId, checked, onchange: (e) => toggleSelect(item.item_id, e.target.checked) }),
          el("label", { for: pickId }, "Compare", el("span", { class: "visually-hidden" }, ` ${item.title}`)))));
    return li;
  }

  // ---- one item: heatmaps ---------------------------------------------------------------------

  async function openItem(itemId, { focus = true } = {}) {
    state.openItem = itemId;
    writeUrl(false);
    for (const li of document.querySelectorAll("#results .result")) {
      const on = li.dataset.itemId === itemId;
      li.classList.toggle("open", on);
      li.querySelector(".open")?.setAttribute("aria-expanded", on ? "true" : "false");
    }
    const panel = $("#detail");
    panel.hidden = false;
    panel.dataset.state = "loading";
    if (state.explainCtl) state.explainCtl.abort();
    const ctl = state.explainCtl = new AbortController();
    try {
      const data = await api("/explain", { query: state.query, item_id: itemId, head_weights: headWeights() }, ctl.signal);
      if (ctl !== state.explainCtl) return;
      showError(null);
      renderDetail(data);
      panel.dataset.state = "ready";
      panel.dataset.itemId = itemId;
      panel.dataset.weights = weightsKey();
      if (focus) panel.focus();
    } catch (err) {
      if (err.name === "AbortError") return;
      panel.dataset.state = "error";
      $("#detail-body").replaceChildren(el("p", { class: "error" }, err.message));
    }
  }

  function localSummary(data) {
    let best = null;
    for (const h of data.heads) if (!best || h.contribution > best.contribution) best = h;
    if (!best || best.contribution < 0.05) return `Scored on its prior (${signed(data.prior, 2)}): no query word matched its attributes`;
    let top = null;
    best.attention.forEach((row, t) => row.slice(0, -1).forEach((w, m) => {
      if (!top || w > top.w) top = { w, t, m };
    }));
    if (!top) return `Scored mostly for ${best.head}`;
    return `Scored mostly for ${best.head}: '${data.tokens[top.t]}' matched ${best.attributes[top.m]}`;
  }

  function renderDetail(data) {
    const ranked = state.items.find((it) => it.item_id === data.item_id);
    $("#detail-title").textContent = data.title || (ranked && ranked.title) || data.item_id;
    const summary = (ranked && ranked.explanation && ranked.explanation.summary) || localSummary(data);
    const headSum = data.heads.reduce((s, h) => s + h.contribution, 0);
    const body = [
      el("p", { class: "summary detail-summary" }, summary),
      el("p", { class: "equation" },
        `score ${fmt(data.score)} = prior ${fmt(data.prior)} + heads ${fmt(headSum)}`,
        el("span", { class: "item-id" }, ` · ${data.item_id}`)),
      el("p", { class: "help" }, "Rows: the query's words. Columns: the item's attributes of the head's facet, and " +
        "“(no match)”. Each cell is the attention weight; each row adds up to 1. " +
        "The last row is the score change if that attribute were removed (erasure)."),
    ];
    for (const h of data.heads) body.push(headSection(h, data.tokens));
    $("#detail-body").replaceChildren(...body);
  }

  function headSection(h, tokens) {
    const c = colour(h.head);
    const caption = el("caption", { class: "visually-hidden" }, `${h.head}: attention of each query word over the item's ${h.head} attributes`);
    const headRow = el("tr", {}, el("th", { scope: "col", class: "corner" }, "word \\ attribute"),
      h.attributes.map((a, m) => el("th", { scope: "col", class: m === h.attributes.length - 1 ? "nomatch" : null }, a)));
    const rows = h.attention.map((row, t) => el("tr", {},
      el("th", { scope: "row" }, tokens[t] ?? `#${t + 1}`),
      row.map((w, m) => el("td", {
        "data-weight": String(w), "data-token": tokens[t] ?? "", "data-attribute": h.attributes[m],
        style: `background:${tint(c, w)};color:${w > 0.55 ? "#fff" : "#111"}`,
        title: `${tokens[t]} → ${h.attributes[m]}: ${fmt(w, 4)}`,
      }, fmt(w, 2)))));
    const erasure = new Map(h.erasure.map((e) => [e.attribute, e.score_change]));
    const foot = el("tr", { class: "erasure" }, el("th", { scope: "row" }, "if removed"),
      h.attributes.map((a, m) => (m === h.attributes.length - 1
        ? el("td", { class: "nomatch" }, "")
        : el("td", { "data-erasure": String(erasure.get(a) ?? 0), "data-attribute": a,
          class: (erasure.get(a) ?? 0) < 0 ? "neg" : "pos" }, signed(erasure.get(a) ?? 0, 2)))));
    const table = el("table", { class: "heatmap", "data-head": h.head },
      caption, el("thead", {}, headRow), el("tbody", {}, rows), el("tfoot", {}, foot));
    const empty = h.attention.length === 0 ? el("p", { class: "help" }, "No query words.") : null;
    return el("section", { class: "head-detail", "data-head": h.head },
      el("h3", {}, el("span", { class: "swatch", style: `background:${c}`, "aria-hidden": "true" }),
        ` ${h.head} `, el("span", { class: "contrib", "data-contribution": String(h.contribution) }, signed(h.contribution))),
      el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": `${h.head} heatmap` }, table), empty);
  }

  function tint(hex, w) {
    const n = parseInt(hex.slice(1), 16);
    const a = Math.max(0, Math.min(1, w));
    const mix = (ch) => Math.round(255 + (ch - 255) * a);
    return `rgb(${mix(n >> 16)},${mix((n >> 8) & 255)},${mix(n & 255)})`;
  }

  // ---- comparison -----------------------------------------------------------------------------

  function toggleSelect(itemId, on) {
    state.selected = state.selected.filter((x) => x !== itemId);
    if (on) state.selected.push(itemId);
    while (state.selected.length > 2) {
      const dropped = state.selected.shift();
      const box = document.querySelector(`#results .result[data-item-id="${CSS.escape(dropped)}"] input[type=checkbox]`);
      if (box) box.checked = false;
    }
    updateCompareButton();
  }

  function updateCompareButton() {
    const btn = $("#compare-button");
    btn.disabled = state.selected.length !== 2;
    btn.textContent = state.selected.length === 2 ? "Compare the two selected" : `Compare selected (${state.selected.length}/2)`;
  }

  const titleOf = (id) => (state.items.find((it) => it.item_id === id) || {}).title || id;

  async function compare() {
    if (state.selected.length !== 2) return;
    const [a, b] = state.selected;
    const panel = $("#compare");
    panel.hidden = false;
    panel.dataset.state = "loading";
    try {
      const data = await api("/compare", { query: state.query, item_a: a, item_b: b, head_weights: headWeights() });
      renderCompare(data);
      panel.dataset.state = "ready";
      panel.focus();
    } catch (err) {
      panel.dataset.state = "error";
      $("#compare-body").replaceChildren(el("p", { class: "error" }, err.message));
    }
  }

  function renderCompare(d) {
    const ta = titleOf(d.item_a), tb = titleOf(d.item_b);
    const maxAbs = Math.max(1e-9, ...d.heads.map((h) => Math.abs(h.difference)));
    const rows = d.heads.map((h) => el("tr", { "data-head": h.head },
      el("th", { scope: "row" }, el("span", { class: "swatch", style: `background:${colour(h.head)}`, "aria-hidden": "true" }), ` ${h.head}`),
      el("td", { class: "num" }, fmt(h.contribution_a)),
      el("td", { class: "num" }, fmt(h.contribution_b)),
      el("td", { class: "num diff", "data-difference": String(h.difference) },
        el("span", { class: "diffbar", "aria-hidden": "true" },
          el("span", { class: h.difference >= 0 ? "up" : "down",
            style: `width:${(50 * Math.abs(h.difference) / maxAbs).toFixed(2)}%;background:${colour(h.head)}` })),
        signed(h.difference)),
      el("td", { class: "attrs" }, h.only_a.join(", ") || "–"),
      el("td", { class: "attrs" }, h.only_b.join(", ") || "–")));
    const table = el("table", { class: "compare-table" },
      el("caption", {}, "Per head: contribution of A and of B, the difference A − B, and the attributes only one of them has"),
      el("thead", {}, el("tr", {},
        el("th", { scope: "col" }, "head"), el("th", { scope: "col" }, "A"), el("th", { scope: "col" }, "B"),
        el("th", { scope: "col" }, "A − B"), el("th", { scope: "col" }, "only A"), el("th", { scope: "col" }, "only B"))),
      el("tbody", {}, rows),
      el("tfoot", {}, el("tr", {}, el("th", { scope: "row" }, "prior"), el("td", {}, ""), el("td", {}, ""),
        el("td", { class: "num" }, signed(d.prior_difference)), el("td", {}, ""), el("td", {}, ""))));
    $("#compare-body").replaceChildren(
      el("p", {}, el("strong", {}, "A: "), ta, el("span", { class: "item-id" }, ` · ${d.item_a} · score ${fmt(d.score_a)}`)),
      el("p", {}, el("strong", {}, "B: "), tb, el("span", { class: "item-id" }, ` · ${d.item_b} · score ${fmt(d.score_b)}`)),
      el("p", { class: "summary" }, d.summary),
      el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "comparison table" }, table));
  }

  // ---- panels, keyboard, start ----------------------------------------------------------------

  function closePanel(name) {
    const panel = document.getElementById(name);
    if (panel.hidden) return;
    panel.hidden = true;
    if (name === "detail") {
      const id = state.openItem;
      state.openItem = null;
      writeUrl(false);
      for (const li of document.querySelectorAll("#results .result.open")) {
        li.classList.remove("open");
        li.querySelector(".open")?.setAttribute("aria-expanded", "false");
      }
      const btn = id && document.querySelector(`#results .result[data-item-id="${CSS.escape(id)}"] .open`);
      if (btn) btn.focus();
    } else {
      $("#compare-button").focus();
    }
  }

  // The figure the model is judged by: NDCG@10 against graded judgments when training had them;
  // otherwise the held-out click split, which says so (clicks are a noisier, lower bar)
  function judgedMetric(metrics) {
    const ndcg = (part) => metrics[part] && metrics[part].model && metrics[part].model["ndcg@10"];
    const bm25 = (part) => metrics[part] && metrics[part].bm25 && metrics[part].bm25["ndcg@10"];
    const versus = (part) => (Number.isFinite(bm25(part)) ? ` (BM25 ${bm25(part).toFixed(3)})` : "");
    if (Number.isFinite(ndcg("judgments"))) {
      return ` · NDCG@10 on graded judgments ${ndcg("judgments").toFixed(3)}${versus("judgments")}`;
    }
    if (Number.isFinite(ndcg("held_out"))) {
      return ` · NDCG@10 on held-out clicks ${ndcg("held_out").toFixed(3)}${versus("held_out")}` +
        " (no judgments: how often the items shoppers clicked for search terms the model never saw rank in its top 10)";
    }
    return "";
  }

  async function loadModel() {
    try {
      const m = await api("/model");
      if (Array.isArray(m.facets) && m.facets.length && m.facets.join() !== state.heads.join()) {
        state.heads = m.facets;
        buildControls();
        // results that arrived first were drawn with the default heads: draw them again
        if (state.shown) renderResults(state.shown);
      }
      $("#model-info").textContent = `Model ${m.version} · ${m.n_items} items` + judgedMetric(m.metrics || {});
    } catch (err) {
      $("#model-info").textContent = err instanceof ApiError ? err.message : "Model information unavailable";
    }
  }

  function start() {
    const url = readUrl();
    state.weights = url.weights;
    buildControls();
    updateCompareButton();
    $("#search").addEventListener("submit", (e) => {
      e.preventDefault();
      search($("#q").value, { push: true });
    });
    $("#reset-weights").addEventListener("click", resetWeights);
    $("#compare-button").addEventListener("click", compare);
    $("#more").addEventListener("click", more);
    for (const btn of document.querySelectorAll("[data-close]")) {
      btn.addEventListener("click", () => closePanel(btn.dataset.close));
    }
    document.addEventListener("keydown", (e) => {
      if (e.key !== "Escape") return;
      if (!$("#compare").hidden) closePanel("compare");
      else if (!$("#detail").hidden) closePanel("detail");
    });
    window.addEventListener("popstate", () => {
      const u = readUrl();
      state.weights = u.weights;
      buildControls();
      state.openItem = u.item;
      search(u.q, { push: false, keepItem: Boolean(u.item) });
    });
    loadModel();
    if (url.q) {
      state.openItem = url.item;
      search(url.q, { push: false, keepItem: Boolean(url.item) });
    } else {
      $("#q").focus();
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
