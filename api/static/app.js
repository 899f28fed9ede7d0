// The web page of the explainable recommender. Two views: the shopper's (`/`: results with their
// attributes and a plain reason, no model figures) and the merchandiser's (`/?view=explain`:
// per-head contribution bars on a fixed scale, heatmaps, head-weight sliders, the model's metrics
// and a head-by-head comparison). Plain DOM, no build step, no CDN.
// Everything the API returns is written with textContent (never innerHTML): item data is text.
"use strict";

(() => {
  const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9"]; // Okabe-Ito
  const PAGE = 10;
  const FACET_VALUES = 8; // a facet's values shown before its "All N" button
  const DEBOUNCE_MS = 150;
  // The contribution bars' scale, the same for every result and query: a full bar is this much
  // score from the heads (a word's strong match is worth 1 to 3), never the best result's total.
  // A head draws its part only when one of its attributes matched a word (the API's `matches`):
  // the little weak attention adds elsewhere is in the numbers, so a result that matched nothing
  // shows an empty bar. A longer bar is cut at the end.
  const BAR_FULL = 10;
  const STRONG = 0.5; // a match the shopper's reason names: at least this share of the word's attention

  const state = {
    heads: ["quality", "color", "style", "other"], // replaced by GET /model's facets
    attributeCounts: null, // GET /model: facet -> the catalogue's distinct attributes (0: never matches)
    model: null, // GET /model's answer
    view: "shop", // "shop" (the shopper's) or "explain" (the merchandiser's), `?view=explain`
    weights: {},
    query: "",
    items: [], // ranked items shown, in order
    filters: {}, // facet key -> values picked from the facet counts (OR within a key, AND across)
    openFacets: new Set(), // facet keys whose every value is shown (the search's own; see renderFacets)
    openKeys: new Set(), // facet keys whose values are open (kept while the shopper refines)
    shown: null, // the last answer drawn (drawn again when GET /model brings other heads)
    total: 0,
    matching: null, // items that match the query and the filters (the first page's facet counts)
    selected: [], // item ids ticked for comparison (at most two, oldest dropped)
    openItem: null,
    recommendCtl: null,
    suggestCtl: null, // the completions asked for while the shopper types
    suggestTimer: null,
    similarCtl: null,
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
  // Heads that some attribute of the catalogue can match, in facet order: the others are hidden
  const liveHeads = () => state.heads.filter((h) => !state.attributeCounts || state.attributeCounts[h] !== 0);
  const deadHeads = () => state.heads.filter((h) => state.attributeCounts && state.attributeCounts[h] === 0);
  const explaining = () => state.view === "explain";

  // ---- human labels: the one place attribute keys and head names become words ----------------

  // "baseColour" / "base_colour" -> "base colour"; a key the answers lower-case ("basecolour") as
  // its column writes it (GET /model's key_names)
  const keyWords = (key) => ((state.model && state.model.key_names && state.model.key_names[key]) || key)
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/[_\s]+/g, " ").trim().toLowerCase();
  const capital = (text) => text.charAt(0).toUpperCase() + text.slice(1);
  /** An attribute label or a head name in words: "category:dress" -> "Category: dress",
   * "rating:4.4+" -> "Rating: 4.4+", "product_type:cordless_drill" -> "Product type: cordless drill",
   * a label without a key is its value, after its facet's name when given ("red", "Color: red"). */
  function label(text, facet) {
    const s = String(text);
    if (s.startsWith("(")) return s; // "(no match)"
    const [key, value] = keyValue(s);
    // the value as the shop's file writes it ("Núñez & Hijos"), where an answer said so
    const shown = writtenValues.get(s) ?? value.replace(/_/g, " ");
    if (key === null) return facet ? `${headName(facet)}: ${shown}` : shown;
    return `${capital(keyWords(key))}: ${shown}`;
  }
  /** "title:drill" -> ["title", "drill"]; a label without a key -> [null, the label]. */
  function keyValue(text) {
    const s = String(text);
    const i = s.indexOf(":");
    return i <= 0 ? [null, s] : [s.slice(0, i), s.slice(i + 1)];
  }
  function headName(head) { return capital(keyWords(head)); }
  // Labels seen in answers, so that the API's sentences can say them in words as well
  const knownLabels = new Set();
  function learnLabels(labels) { for (const l of labels) if (String(l).includes(":")) knownLabels.add(String(l)); }
  // label -> its value as the file writes it (an item's `value_names`)
  const writtenValues = new Map();
  /** An answer's item: its labels, and how its file writes their values. */
  function learnItem(item) {
    learnLabels(Object.values(item.attributes || {}).flat());
    for (const [l, written] of Object.entries(item.value_names || {})) writtenValues.set(l, written);
  }
  function inWords(text) {
    let out = String(text || "");
    for (const l of [...knownLabels].sort((a, b) => b.length - a.length)) out = out.split(l).join(label(l));
    // any other key:value the page has not seen (a label of an item not listed)
    return out.replace(/\b([A-Za-z][A-Za-z0-9_]*):(?=[^\s:])([^\s,;()'"“”]+)/g, (_, k, v) => label(`${k}:${v}`));
  }

  const fmt = (x, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : "–");
  // a value that rounds to zero reads +0.00, never −0.00 (as the API's reason lines write it)
  const signed = (x, digits = 3) => {
    const text = Math.abs(x).toFixed(digits);
    return (x >= 0 || Number(text) === 0 ? "+" : "−") + text;
  };

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
    return { q: (p.get("q") || "").trim(), weights, item: p.get("item"),
      view: p.get("view") === "explain" ? "explain" : "shop" };
  }

  function writeUrl(push) {
    const p = new URLSearchParams();
    if (state.view === "explain") p.set("view", "explain");
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
    for (const h of liveHeads()) {
      const id = `w-${h}`;
      const value = state.weights[h] ?? 1;
      const out = el("output", { id: `${id}-out`, for: id, text: value.toFixed(1) });
      const input = el("input", {
        id, type: "range", min: "0", max: "2", step: "0.1", value: String(value), "data-head": h,
        "aria-valuetext": `${value.toFixed(1)} times`,
        oninput: (e) => onSlider(h, parseFloat(e.target.value)),
      });
      sliders.append(el("div", { class: "slider" },
        el("label", { for: id }, el("span", { class: "swatch", style: `background:${colour(h)}`, "aria-hidden": "true" }), ` ${headName(h)}`,
          el("span", { class: "visually-hidden" }, " head weight")),
        input, out));
    }
    const legend = $("#legend");
    legend.replaceChildren(...liveHeads().map((h) => el("li", { "data-head": h },
      el("span", { class: "swatch", style: `background:${colour(h)}`, "aria-hidden": "true" }), headName(h))));
    const dead = deadHeads();
    const note = $("#hidden-heads");
    note.textContent = !dead.length ? "" : `${dead.length} ${dead.length > 1 ? "heads have" : "head has"} no attributes `
      + `in this catalogue: ${dead.map(headName).join(", ")}. ${dead.length > 1 ? "They" : "It"} can never match, `
      + "so the page leaves them out.";
    note.hidden = !dead.length;
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
    state.filters = {}; // a new search starts unrefined
    state.openFacets = new Set();
    state.openKeys = new Set();
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
        filters: state.filters, facet_counts: true,
      }, ctl.signal);
      if (ctl !== state.recommendCtl) return;
      showError(null);
      state.items = data.items;
      state.total = data.total;
      state.matching = data.facet_counts ? data.facet_counts.matching : null;
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
      // the whole list again, one ranking: its reason lines are written together (what every
      // result shares, each item's neighbour), where a page of its own would contradict the first
      const shown = state.items.length;
      const data = await api("/recommend", {
        query: state.query, k: Math.min(shown + PAGE, 100), offset: 0, explain: true, head_weights: headWeights(),
        filters: state.filters,
      });
      state.items = data.items;
      renderResults(data, { focusIndex: Math.min(shown, state.items.length - 1) });
    } catch (err) {
      showError(err);
    }
    list.dataset.state = "ready";
  }

  function renderResults(data, { focusIndex = null } = {}) {
    state.shown = data;
    const list = $("#results");
    for (const it of state.items) learnItem(it);
    list.replaceChildren(...state.items.map((it) => resultCard(it)));
    list.dataset.state = "ready";
    list.dataset.query = state.query;
    list.dataset.weights = weightsKey();
    list.dataset.filters = JSON.stringify(state.filters);
    list.removeAttribute("aria-busy");
    const shown = state.items.length;
    const took = data.took_ms !== undefined ? ` in ${Math.round(data.took_ms)} ms` : "";
    const noun = explaining() ? "items" : "products";
    // how many match, where the answer says (a shop lists products its words do not match after
    // those that do); else how many passed the filters
    const matching = Number.isInteger(state.matching) && state.matching < state.total && data.tokens && data.tokens.length
      ? `; ${state.matching.toLocaleString("en")} match its words` : "";
    setStatus(shown ? `${shown} of ${state.total.toLocaleString("en")} ${noun} for “${state.query}”${took}${matching}`
      : `No items for “${state.query}”`);
    renderNoMatch(data.unmatched_tokens || [], state.items, data.tokens);
    renderDidYouMean(data.did_you_mean || []);
    if (data.facet_counts) renderFacets(data.facet_counts);
    $("#more").hidden = shown >= state.total || shown >= 100;
    if (focusIndex !== null) {
      const btn = list.children[focusIndex]?.querySelector(".open");
      if (btn) btn.focus();
    }
  }

  // Say in words when query words match nothing: the ranking is then the items' prior alone
  function renderNoMatch(unmatched, items, tokens) {
    const note = $("#nomatch");
    const anyMatch = items.some((it) => it.explanation && it.explanation.matched);
    const words = unmatched.map((w) => `“${w}”`).join(", ");
    const dropped = Array.isArray(tokens) && tokens.length === 0 && state.query;
    let text = "";
    if (dropped) { // every word was a stop word: say so, not "no match"
      text = stopWordsLine();
      note.dataset.reason = "stop-words";
    } else if (!explaining()) {
      note.dataset.reason = "no-match";
      if (items.length && items.every((it) => it.explanation) && !anyMatch) {
        text = `No product matches your search${words ? ` (${words})` : ""}: these results do not match any of its words.`;
      } else if (words) {
        text = `No product matches ${words}, so the results are for your other words.`;
      }
    } else if (items.length && items.every((it) => it.explanation) && !anyMatch) {
      note.dataset.reason = "no-match";
      text = "No query word matched any item's attributes: each line says what ranks the item "
        + "(its prior, attention below a match, rules)" + (words ? `; no item matches ${words}.` : ".");
    } else if (words) {
      note.dataset.reason = "no-match";
      // below a match a word can still pull an item a little (the heads' weak attention)
      text = `No item matches ${words}: no item has ${unmatched.length > 1 ? "them" : "it"}, but what the model `
        + `learned of ${unmatched.length > 1 ? "them" : "it"} below a match can still move the ranking.`;
    }
    note.textContent = text;
    note.hidden = !text;
  }

  // "Did you mean": whole queries near one whose words match nothing, each a link that searches it
  function renderDidYouMean(offered) {
    const line = $("#did-you-mean");
    const links = offered.map((text) => el("a", {
      href: `?q=${encodeURIComponent(text)}`, class: "did-you-mean-link", text,
      onclick: (e) => { e.preventDefault(); search(text); },
    }));
    line.replaceChildren(...(links.length ? ["Did you mean ", ...links.flatMap((a, i) => (i ? [" or ", a] : [a])), "?"] : []));
    line.hidden = !links.length;
  }

  // Facet counts beside the results: each value a toggle that adds (or drops) its filter and
  // ranks again; a key's counts leave its own filter out, so its other values stay to be added.
  // Each key is a button in one row that opens its values below the row (eight keys of eight
  // values each put the results a screen down). An open key shows its FACET_VALUES most frequent
  // values and the ones picked; "All N" shows the rest (a word-rich catalogue's material lists 30)
  function renderFacets(counts) {
    const groups = counts.facets.filter((f) => f.values.length).map((f) => {
      const picked = state.filters[f.key] || [];
      const open = state.openFacets.has(f.key) || f.values.length <= FACET_VALUES + 1;
      const shown = f.values.filter((v, i) => open || i < FACET_VALUES || picked.includes(v.value));
      const buttons = shown.map((v) => el("li", {}, el("button", {
        type: "button", "data-key": f.key, "data-value": v.value, "aria-pressed": picked.includes(v.value) ? "true" : "false",
        onclick: () => toggleFilter(f.key, v.value),
      }, `${v.name ?? inWords(v.value)} (${v.count.toLocaleString("en")})`)));
      const all = f.values.length > shown.length ? [el("li", {}, el("button", {
        type: "button", class: "facet-all", "aria-label": `All ${f.values.length} values of ${keyWords(f.key)}`,
        onclick: () => { state.openFacets.add(f.key); renderFacets(counts); },
      }, `All ${f.values.length}…`))] : [];
      const group = el("details", { class: "facet-group", "data-key": f.key, open: state.openKeys.has(f.key) },
        el("summary", { text: capital(keyWords(f.key)) + (picked.length ? ` (${picked.length})` : "") }),
        el("ul", { class: "facet-values" }, ...buttons, ...all));
      group.addEventListener("toggle", () => {
        if (group.open) state.openKeys.add(f.key);
        else state.openKeys.delete(f.key);
      });
      return group;
    });
    $("#facet-groups").replaceChildren(...groups);
    $("#facets").hidden = !groups.length;
    $("#clear-filters").hidden = !Object.keys(state.filters).length;
  }

  function toggleFilter(key, value) {
    const picked = new Set(state.filters[key] || []);
    if (picked.has(value)) picked.delete(value);
    else picked.add(value);
    if (picked.size) state.filters[key] = [...picked];
    else delete state.filters[key];
    refresh();
  }

  function clearFilters() {
    state.filters = {};
    refresh();
  }

  const stopWordsLine = () => `“${state.query}” ${/\s/.test(state.query) ? "are all common words" : "is a common word"} `
    + "the search ignores: add a word that describes the product, such as its kind, colour or brand.";

  function contributions(item) {
    const by = {};
    for (const h of (item.explanation && item.explanation.heads) || []) by[h.head] = h.contribution;
    return by;
  }

  // The shopper's reason: which of their words matched what, in words; no score, no model terms
  function plainReason(item) {
    const e = item.explanation;
    if (!e) return "";
    if (!state.shown || (Array.isArray(state.shown.tokens) && !state.shown.tokens.length)) return "";
    const seen = new Set();
    const parts = [];
    const heads = e.heads.filter((h) => h.matches.length).sort((a, b) => b.contribution - a.contribution);
    for (const h of heads) {
      // strong matches only (most of the word's attention in the head), and only those that
      // make it a result (`counts`: the product says the word): a shopper's reason
      for (const m of [...h.matches].filter((x) => x.weight >= STRONG && x.counts !== false)
        .sort((a, b) => b.weight - a.weight)) {
        if (seen.has(m.query_token)) continue;
        seen.add(m.query_token);
        parts.push({ token: m.query_token, label: String(m.attribute), head: h.head });
      }
    }
    if (parts.length) return `Matches ${reasonParts(parts.slice(0, 3))}`;
    // a matched product whose words are matched weakly only (a near spelling, a word one of many
    // of its attributes share): name those, never "none of your words"
    if (e.matched) {
      const weak = heads.flatMap((h) => h.matches.filter((m) => m.counts !== false)
        .map((m) => ({ token: m.query_token, label: String(m.attribute), head: h.head, weight: m.weight })))
        .sort((a, b) => b.weight - a.weight)
        .filter((p, i, all) => all.findIndex((q) => q.token === p.token) === i);
      if (weak.length) return `Matches ${reasonParts(weak.slice(0, 3))}`;
    }
    // drawn by what shoppers chose, not by its words ("charger" on a black phone case)
    const chosen = heads.flatMap((h) => h.matches.filter((m) => m.evidence === "click association")
      .map((m) => ({ m, h }))).sort((a, b) => b.m.weight - a.m.weight)[0];
    return chosen
      ? `None of your search words is in this product; it has ${label(chosen.m.attribute, chosen.h.head)}, `
        + `like what shoppers chose for “${chosen.m.query_token}”.`
      : "None of your search words matched this product.";
  }

  // "“drill”, “cordless” in the title; “crimson” → Color: red": a word the title or the
  // description says as typed is named once with where, any other match with what it matched
  function reasonParts(parts) {
    // the words a field says in the order the shopper typed them
    const typed = (state.shown && Array.isArray(state.shown.tokens)) ? state.shown.tokens : [];
    const order = (w) => { const i = typed.indexOf(w); return i < 0 ? typed.length : i; };
    return withWhere(parts.map((p) => {
      const [key, value] = keyValue(p.label);
      return SAID_IN.includes(key) && value.replace(/_/g, " ").toLowerCase() === p.token.toLowerCase()
        ? { where: key, word: p.token } : `“${p.token}” → ${label(p.label, p.head)}`;
    }), "; ", order);
  }

  // Phrases and words said in a field, the words of each field gathered where its first one
  // stands: ["Color: red", {where: "title", word: "drill"}, ...] -> "Color: red, “drill”, ... in the title"
  const SAID_IN = ["title", "description"];
  function withWhere(pieces, separator, order = () => 0) {
    const fields = {};
    const out = [];
    for (const p of pieces) {
      if (typeof p === "string") {
        out.push(p);
        continue;
      }
      if (!fields[p.where]) out.push(fields[p.where] = { where: p.where, words: [] });
      fields[p.where].words.push(p.word);
    }
    return out.map((x) => (typeof x === "string" ? x
      : `${[...x.words].sort((a, b) => order(a) - order(b)).map((w) => `“${w}”`).join(", ")} in the ${x.where}`))
      .join(separator);
  }

  // The item's attributes in words, each after its facet when it has no key of its own (the
  // title's and the description's words are left out: the title says them); a number column's
  // range ("price:61-95", what filters read) is shown as the item's own number (`numbers`)
  const attributeLabels = (item) => Object.entries(item.attributes || {})
    .flatMap(([facet, labels]) => labels.filter((l) => !/^(title|description):/.test(l))
      .map((l) => label(ownNumber(item, l), facet)));
  function ownNumber(item, text) {
    const [key] = keyValue(text);
    const x = key !== null && item.numbers ? item.numbers[key] : undefined;
    return typeof x === "number" ? `${key}:${x.toLocaleString(undefined, { maximumFractionDigits: 2 })}` : text;
  }
  // "Color: red, black · Style: sporty": each key said once, its values after it, none twice
  function attributeLine(item, limit = 6) {
    const byKey = new Map();
    for (const shown of attributeLabels(item)) {
      const i = shown.indexOf(": ");
      const [key, value] = i > 0 ? [shown.slice(0, i), shown.slice(i + 2)] : ["", shown];
      if (!byKey.has(key)) byKey.set(key, new Set());
      byKey.get(key).add(value);
    }
    let room = limit;
    const parts = [];
    for (const [key, values] of byKey) {
      const kept = [...values].slice(0, room);
      if (!kept.length) break;
      room -= kept.length;
      parts.push(key ? `${key}: ${kept.join(", ")}` : kept.join(", "));
    }
    return parts.join(" · ");
  }

  function contributionBar(item) {
    const by = contributions(item);
    const matched = new Set(((item.explanation && item.explanation.heads) || [])
      .filter((h) => h.matches.length).map((h) => h.head));
    const heads = liveHeads();
    const described = heads.map((h) => `${headName(h)} ${fmt(by[h] ?? 0, 2)}`).join(", ");
    let room = 100; // a result above the scale is cut at the bar's end
    return el("div", { class: "bar", role: "img", "data-scale": String(BAR_FULL),
      "aria-label": `Contributions (a full bar is +${BAR_FULL}): ${described}` },
    heads.map((h) => {
      const width = matched.has(h) ? Math.min(room, 100 * Math.max(0, by[h] ?? 0) / BAR_FULL) : 0;
      room -= width;
      return el("span", {
        class: "seg", "data-head": h, "data-contribution": String(by[h] ?? 0),
        "data-matched": matched.has(h) ? "true" : "false", title: `${headName(h)} ${signed(by[h] ?? 0)}`,
        style: `width:${width.toFixed(3)}%;background:${colour(h)}`,
      });
    }));
  }

  // The merchandising rules that touched a result (pinned, boosted, buried), one line each way.
  // A pin whose item is shown elsewhere (another pin holds its place; fewer results) says where.
  function rulesLine(rules, rank) {
    if (!rules || !rules.length) return null;
    const pinned = (r) => `Pinned at ${r.position} (rule “${r.name}”)` +
      (rank && rank !== r.position ? `, shown at ${rank}` : "");
    return el("p", { class: "rules", "data-rules": rules.map((r) => r.name).join(",") },
      rules.map((r) => el("span", { class: `rule rule-${r.kind}`, "data-rule": r.name,
        "data-amount": r.amount === null ? "" : String(r.amount) },
      r.kind === "pin" ? pinned(r) : `${capital(r.kind)} “${r.name}” ${signed(r.amount, 2)}`)));
  }

  // What a shopper is told of the shop's rules: a pinned or boosted product is "Featured", as
  // shops mark what they promote; a bury, the rules' names and amounts are the shop's own
  // business (a shopper read "Bury “bad-seller” −0.50" under a seller's products)
  function featuredLine(rules) {
    if (!rules || !rules.some((r) => r.kind === "pin" || r.kind === "boost")) return null;
    return el("p", { class: "rules featured", "data-featured": "true" },
      el("span", { class: "rule rule-featured", title: "promoted by the shop" }, "Featured"));
  }

  // What a shopper is told of a synonym: which of their words found what ("qipao" also finds
  // dress), without the rule's name or the attribute's key
  function alsoFindsLine(synonyms) {
    if (!synonyms || !synonyms.length) return null;
    const seen = new Set();
    const lines = synonyms.map((s) => `“${s.query_token}” also finds ${keyValue(s.attribute)[1].replace(/_/g, " ")}`)
      .filter((t) => !seen.has(t) && seen.add(t));
    return el("p", { class: "synonyms also-finds" }, lines.map((t) => el("span", { class: "synonym" }, t)));
  }

  // The shop's synonyms through which a query word matched the result ("navy -> color:blue")
  function synonymsLine(synonyms) {
    if (!synonyms || !synonyms.length) return null;
    return el("p", { class: "synonyms", "data-synonyms": synonyms.map((s) => s.name).join(",") },
      synonyms.map((s) => el("span", { class: "synonym", "data-synonym": s.name,
        title: "a synonym rule of the shop (GET /admin/synonyms)" },
      `${s.query_token} → ${s.attribute} (synonym “${s.name}”)`)));
  }

  function resultCard(item) {
    const by = contributions(item);
    const explain = explaining();
    const numbers = explain ? el("p", { class: "numbers", "aria-hidden": "true" },
      liveHeads().map((h) => el("span", {},
        el("span", { class: "swatch", style: `background:${colour(h)}` }), `${headName(h)} ${fmt(by[h] ?? 0, 2)}`))) : null;
    const checked = state.selected.includes(item.item_id);
    const pickId = `pick-${item.rank}`;
    const attrs = attributeLine(item);
    const reason = explain ? (item.explanation ? inWords(item.explanation.summary) : "") : plainReason(item);
    const li = el("li", { class: "result" + (state.openItem === item.item_id ? " open" : ""), "data-item-id": item.item_id },
      el("div", { class: "result-head" },
        el("span", { class: "rank", "aria-hidden": "true" }, String(item.rank)),
        el("h3", { class: "title" },
          el("button", {
            type: "button", class: "open", "aria-controls": "detail",
            "aria-expanded": state.openItem === item.item_id ? "true" : "false",
            onclick: () => openItem(item.item_id),
          }, item.title || item.item_id)),
        explain ? el("span", { class: "score", title: "prior + head contributions" }, `score ${fmt(item.score, 2)}`) : null),
      explain ? contributionBar(item) : null, numbers,
      !explain && attrs ? el("p", { class: "attrs-line" }, attrs) : null,
      reason ? el("p", { class: "summary" }, reason) : null,
      explain ? rulesLine(item.explanation && item.explanation.rules, item.rank)
        : featuredLine(item.explanation && item.explanation.rules),
      explain ? synonymsLine(item.explanation && item.explanation.synonyms)
        : alsoFindsLine(item.explanation && item.explanation.synonyms),
      explain ? el("div", { class: "result-foot" },
        el("span", { class: "item-id" }, item.item_id),
        el("span", { class: "pick" },
          el("input", { type: "checkbox", id: pickId, checked, onchange: (e) => toggleSelect(item.item_id, e.target.checked) }),
          el("label", { for: pickId }, "Compare", el("span", { class: "visually-hidden" }, ` ${item.title}`)))) : null);
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
      if (!explaining()) { // the shopper's view: the item's attributes and why it is listed
        // the item's page: its description is the catalogue's (GET /items/{id}), not the ranking's
        const item = await api(`/items/${encodeURIComponent(itemId)}`, undefined, ctl.signal);
        if (ctl !== state.explainCtl) return;
        renderShopperDetail(state.items.find((it) => it.item_id === itemId) || item, item.description);
        loadSimilar(itemId);
        panel.dataset.state = "ready";
        panel.dataset.itemId = itemId;
        panel.dataset.weights = weightsKey();
        if (focus) panel.focus();
        return;
      }
      const data = await api("/explain", { query: state.query, item_id: itemId, head_weights: headWeights() }, ctl.signal);
      if (ctl !== state.explainCtl) return;
      showError(null);
      renderDetail(data);
      loadSimilar(itemId);
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

  // ---- as the shopper types, and items like the one open ----------------------------------------

  /** Completions of what is typed (GET /suggest), as the search box's list, a moment after the
   * last key: searches other shoppers made, then the catalogue's words, a typo forgiven. */
  function onTyping() {
    clearTimeout(state.suggestTimer);
    const typed = $("#q").value;
    if (!typed.trim()) return;
    state.suggestTimer = setTimeout(async () => {
      if (state.suggestCtl) state.suggestCtl.abort();
      const ctl = state.suggestCtl = new AbortController();
      try {
        const data = await api(`/suggest?q=${encodeURIComponent(typed)}&n=8`, undefined, ctl.signal);
        if (ctl !== state.suggestCtl) return;
        const list = $("#q-suggestions");
        list.replaceChildren(...data.suggestions.map((x) => el("option", { value: x.text })));
        list.dataset.for = typed;
      } catch (err) {
        if (err.name !== "AbortError") console.warn("suggestions:", err.message);
      }
    }, 120);
  }

  /** What an item shares with the open one, in words: the attributes its matches went to. */
  function sharedWords(item) {
    const shared = [];
    for (const h of (item.explanation && item.explanation.heads) || []) {
      for (const m of h.matches) {
        if (m.weight >= STRONG && !shared.some((x) => x.attribute === m.attribute)) shared.push({ ...m, head: h.head });
      }
    }
    // a title's or description's word is said as the word, with where ("“bifold” in the title")
    return withWhere(shared.slice(0, 3).map((m) => {
      const [key, value] = keyValue(m.attribute);
      return SAID_IN.includes(key) ? { where: key, word: value.replace(/_/g, " ") }
        : label(m.attribute, m.head);
    }), ", ");
  }

  /** "More like this" under the open item (GET /items/{id}/similar): each one with what it shares. */
  async function loadSimilar(itemId) {
    const section = $("#similar");
    section.dataset.state = "loading";
    if (state.similarCtl) state.similarCtl.abort();
    const ctl = state.similarCtl = new AbortController();
    try {
      const data = await api(`/items/${encodeURIComponent(itemId)}/similar?k=4`, undefined, ctl.signal);
      if (ctl !== state.similarCtl) return;
      for (const it of data.items) learnItem(it);
      $("#similar-list").replaceChildren(...data.items.map((it) => el("li", { "data-item-id": it.item_id },
        el("button", { type: "button", class: "link", onclick: () => openItem(it.item_id) }, it.title || it.item_id),
        el("span", { class: "help" }, sharedWords(it) ? ` shares ${sharedWords(it)}` : ""))));
      // what the results were kept to (the item's kind, GET /items/{id}/similar's `kept_to`)
      const kept = Object.entries(data.kept_to || {}).map(([key, values]) => `${key}: ${values.join(", ")}`);
      $("#similar-title").textContent = kept.length ? `More like this (${kept.join("; ")})` : "More like this";
      section.hidden = data.items.length === 0;
      section.dataset.itemId = itemId;
      section.dataset.state = "ready";
    } catch (err) {
      if (err.name === "AbortError") return;
      section.hidden = true;
      section.dataset.state = "error";
    }
  }

  function localSummary(data) {
    let best = null;
    for (const h of data.heads) if (!best || h.contribution > best.contribution) best = h;
    // a match as the API lists one (`matches`: at least MATCH_THRESHOLD of the word's attention)
    const top = best && (best.matches || []).slice().sort((a, b) => b.weight - a.weight)[0];
    if (!best || best.contribution < 0.05 || !top) {
      const heads = data.heads.reduce((sum, h) => sum + h.contribution, 0);
      return `No query word matched its attributes (prior ${signed(data.prior, 2)}, the heads ${signed(heads, 2)})`;
    }
    return `Scored mostly for ${headName(best.head)}: '${top.query_token}' matched ${label(top.attribute)}`;
  }

  function renderShopperDetail(item, description) {
    $("#detail-title").textContent = item.title || item.item_id;
    learnItem(item);
    const labels = attributeLabels(item);
    const reason = item.explanation ? plainReason(item) : "";
    $("#detail-body").replaceChildren(
      reason ? el("p", { class: "summary detail-summary" }, reason) : "",
      labels.length ? el("ul", { class: "attr-list" }, labels.map((l) => el("li", {}, l))) : "",
      description ? el("p", { class: "description" }, description) : "",
      el("p", { class: "item-id" }, `Item ${item.item_id}`));
  }

  function renderDetail(data) {
    const ranked = state.items.find((it) => it.item_id === data.item_id);
    $("#detail-title").textContent = data.title || (ranked && ranked.title) || data.item_id;
    for (const h of data.heads) learnLabels(h.attributes);
    const summary = inWords((ranked && ranked.explanation && ranked.explanation.summary) || localSummary(data));
    const headSum = data.heads.reduce((s, h) => s + h.contribution, 0);
    const rules = data.rules || [];
    const ruleSum = rules.reduce((s, r) => s + (r.amount ?? 0), 0);
    const body = [
      el("p", { class: "summary detail-summary" }, summary),
      el("p", { class: "equation" },
        `score ${fmt(data.score)} = prior ${fmt(data.prior)} + heads ${fmt(headSum)}` +
          (rules.length ? ` + rules ${fmt(ruleSum)}` : ""),
        el("span", { class: "item-id" }, ` · ${data.item_id}`)),
      rulesLine(rules),
    ].filter(Boolean);
    if (!data.tokens.length) { // a query of stop words alone: no word to draw a heatmap for
      body.push(el("p", { class: "match-notice", "data-reason": "stop-words" }, stopWordsLine()));
    } else {
      body.push(el("p", { class: "help" }, "Rows: the query's words. Columns: the item's attributes of the head's facet, and " +
        "“(no match)”. Each cell is the attention weight; each row adds up to 1. " +
        "The last row is the score change if that attribute were removed (erasure)."));
      const live = liveHeads();
      for (const h of data.heads) if (live.includes(h.head)) body.push(headSection(h, data.tokens));
    }
    $("#detail-body").replaceChildren(...body);
  }

  function headSection(h, tokens) {
    const c = colour(h.head);
    const caption = el("caption", { class: "visually-hidden" }, `${headName(h.head)}: attention of each query word over the item's ${headName(h.head)} attributes`);
    const headRow = el("tr", {}, el("th", { scope: "col", class: "corner" }, "word \\ attribute"),
      h.attributes.map((a, m) => el("th", { scope: "col", class: m === h.attributes.length - 1 ? "nomatch" : null,
        "data-attribute": a }, label(a))));
    const rows = h.attention.map((row, t) => el("tr", {},
      el("th", { scope: "row" }, tokens[t] ?? `#${t + 1}`),
      row.map((w, m) => el("td", {
        "data-weight": String(w), "data-token": tokens[t] ?? "", "data-attribute": h.attributes[m],
        style: `background:${tint(c, w)};color:${w > 0.55 ? "#fff" : "#111"}`,
        title: `${tokens[t]} → ${label(h.attributes[m])}: ${fmt(w, 4)}` +
          (h.evidence?.[t]?.[m] ? ` (${h.evidence[t][m]})` : ""),
        "data-evidence": h.evidence?.[t]?.[m] ?? "",
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
        ` ${headName(h.head)} `, el("span", { class: "contrib", "data-contribution": String(h.contribution) }, signed(h.contribution))),
      el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": `${headName(h.head)} heatmap` }, table), empty);
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
    const live = liveHeads();
    const heads = d.heads.filter((h) => live.includes(h.head));
    for (const h of heads) learnLabels([...h.only_a, ...h.only_b]);
    const maxAbs = Math.max(1e-9, ...heads.map((h) => Math.abs(h.difference)));
    const rows = heads.map((h) => el("tr", { "data-head": h.head },
      el("th", { scope: "row", class: "head-name" }, el("span", { class: "swatch", style: `background:${colour(h.head)}`, "aria-hidden": "true" }), ` ${headName(h.head)}`),
      el("td", { class: "num" }, fmt(h.contribution_a)),
      el("td", { class: "num" }, fmt(h.contribution_b)),
      el("td", { class: "num diff", "data-difference": String(h.difference) },
        el("span", { class: "diffbar", "aria-hidden": "true" },
          el("span", { class: h.difference >= 0 ? "up" : "down",
            style: `width:${(50 * Math.abs(h.difference) / maxAbs).toFixed(2)}%;background:${colour(h.head)}` })),
        signed(h.difference)),
      // one argument: a second (map's index) would be read as a facet to name
      el("td", { class: "attrs" }, h.only_a.map((l) => label(l)).join(", ") || "–"),
      el("td", { class: "attrs" }, h.only_b.map((l) => label(l)).join(", ") || "–")));
    const table = el("table", { class: "compare-table" },
      el("caption", {}, "Per head: contribution of A and of B, the difference A − B, and the attributes only one of them has"),
      el("thead", {}, el("tr", {},
        el("th", { scope: "col" }, "head"), el("th", { scope: "col" }, "A"), el("th", { scope: "col" }, "B"),
        el("th", { scope: "col" }, "A − B"), el("th", { scope: "col" }, "only A"), el("th", { scope: "col" }, "only B"))),
      el("tbody", {}, rows),
      el("tfoot", {}, el("tr", {}, el("th", { scope: "row" }, "prior"), el("td", {}, ""), el("td", {}, ""),
        el("td", { class: "num" }, signed(d.prior_difference)), el("td", {}, ""), el("td", {}, "")),
        rulesRow(d.rules_a, d.rules_b)));
    $("#compare-body").replaceChildren(
      el("p", {}, el("strong", {}, "A: "), ta, el("span", { class: "item-id" }, ` · ${d.item_a} · score ${fmt(d.score_a)}`)),
      el("p", {}, el("strong", {}, "B: "), tb, el("span", { class: "item-id" }, ` · ${d.item_b} · score ${fmt(d.score_b)}`)),
      el("p", { class: "summary", "data-text": d.summary }, inWords(d.summary)),
      el("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "comparison table" }, table));
  }

  // The rules' amounts on A and on B, a row of the compare table where a rule acts on either: the
  // summary names the rules as a part of the score, so the rows add up to the scores' gap.
  function rulesRow(rulesA, rulesB) {
    const amounts = (rules) => rules.reduce((sum, r) => sum + (r.amount || 0), 0);
    if (!rulesA.length && !rulesB.length) return null;
    const a = amounts(rulesA), b = amounts(rulesB);
    const notes = (rules) => rules.map((r) => r.note).join("; ") || "–";
    return el("tr", { class: "rules", "data-difference": String(a - b) }, el("th", { scope: "row" }, "rules"),
      el("td", { class: "num" }, fmt(a)), el("td", { class: "num" }, fmt(b)),
      el("td", { class: "num" }, signed(a - b)),
      el("td", { class: "attrs" }, notes(rulesA)), el("td", { class: "attrs" }, notes(rulesB)));
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
        " (no judgments: how near the top 10 ranks the items shoppers clicked, for searches the model never saw; 1 is every click first)";
    }
    return "";
  }

  async function loadModel() {
    try {
      const m = await api("/model");
      state.model = m;
      const counts = m.attributes && typeof m.attributes === "object" ? m.attributes : null;
      const facets = Array.isArray(m.facets) && m.facets.length ? m.facets : state.heads;
      if (facets.join() !== state.heads.join() || JSON.stringify(counts) !== JSON.stringify(state.attributeCounts)) {
        state.heads = facets;
        state.attributeCounts = counts;
        buildControls();
        // results that arrived first were drawn with the default heads: draw them again
        if (state.shown) renderResults(state.shown);
      } else if (state.shown && m.key_names && Object.keys(m.key_names).length) {
        renderResults(state.shown); // and with keys in lower case ("Articletype")
      }
      modelInfo();
    } catch (err) {
      $("#model-info").textContent = err instanceof ApiError ? err.message : "Model information unavailable";
    }
  }

  // The header: the catalogue's size for shoppers; the version and its metric for merchandisers
  function modelInfo() {
    const m = state.model;
    if (!m) return;
    $("#model-info").textContent = explaining()
      ? `Model ${m.version} · ${m.n_items} items` + judgedMetric(m.metrics || {})
      : `${m.n_items.toLocaleString("en")} products`;
  }

  // ---- the two views ----------------------------------------------------------------------------

  function applyView() {
    const explain = explaining();
    document.body.dataset.view = state.view;
    for (const btn of document.querySelectorAll("[data-set-view]")) {
      btn.setAttribute("aria-pressed", btn.dataset.setView === state.view ? "true" : "false");
    }
    modelInfo();
    if (!explain) {
      state.selected = [];
      updateCompareButton();
      if (!$("#compare").hidden) closePanel("compare");
    }
  }

  function setView(view) {
    if (view === state.view) return;
    state.view = view;
    applyView();
    writeUrl(true);
    if (state.shown) renderResults(state.shown);
    if (state.openItem && !$("#detail").hidden) openItem(state.openItem, { focus: false });
  }

  async function start() {
    const url = readUrl();
    state.weights = url.weights;
    state.view = url.view;
    applyView();
    buildControls();
    updateCompareButton();
    for (const btn of document.querySelectorAll("[data-set-view]")) {
      btn.addEventListener("click", () => setView(btn.dataset.setView));
    }
    $("#q").addEventListener("input", onTyping);
    $("#search").addEventListener("submit", (e) => {
      e.preventDefault();
      search($("#q").value, { push: true });
    });
    $("#reset-weights").addEventListener("click", resetWeights);
    $("#compare-button").addEventListener("click", compare);
    $("#more").addEventListener("click", more);
    $("#clear-filters").addEventListener("click", clearFilters);
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
      state.view = u.view;
      applyView();
      buildControls();
      state.openItem = u.item;
      search(u.q, { push: false, keepItem: Boolean(u.item) });
    });
    await loadModel(); // the heads to draw first: results come after it
    if (url.q) {
      state.openItem = url.item;
      search(url.q, { push: false, keepItem: Boolean(url.item) });
    } else {
      $("#q").focus();
    }
  }

  // the page's own words, for the browser test: the one label function the page uses
  window.recsysPage = Object.freeze({ label, headName, attributeLine });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
