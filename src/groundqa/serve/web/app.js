// groundqa web page: one form over POST /query, no build step, no dependencies.
//
// Everything that comes from the corpus or the answer (passage text, titles,
// snippets, the answer itself) is untrusted and goes into the page as text
// nodes only. This file never assigns innerHTML or outerHTML, never calls
// insertAdjacentHTML or document.write; links are only made for http(s) and
// file URIs.
"use strict";

(() => {
  const FACET_ORDER = ["jurisdiction", "state", "area", "category"];
  // Places are sent as the asker's scope: national rules still apply to a chosen council area.
  const PLACE_KEYS = ["area", "state"];
  const TOKEN_KEY = "groundqa.token";
  // Earlier turns sent with each question, so the server can read a follow-up against
  // them; it reads only the last six, so no more are kept.
  const MAX_TURNS = 6;
  const CHECK_NAMES = { gate: "the relevance gate", generator: "the answer generator" };

  const $ = (id) => document.getElementById(id);
  const form = $("ask-form");
  const question = $("question");
  const askButton = $("ask");
  const filtersBox = $("filters");
  const autoLocation = $("auto-location");
  const kInput = $("k");
  const tokenRow = $("token-row");
  const tokenInput = $("token");
  const errorBox = $("error");
  const result = $("result");
  const answerBox = $("answer");
  const refusalBox = $("refusal");
  const resultMeta = $("result-meta");
  const citationsSection = $("citations-section");
  const citationsBox = $("citations");
  const passagesSection = $("passages-section");
  const passagesHeading = $("passages-heading");
  const passagesBox = $("passages");
  const indexInfo = $("index-info");
  const footerInfo = $("footer-info");
  const conversationBox = $("conversation");
  const newConversation = $("new-conversation");
  const standaloneBox = $("standalone");

  let authRequired = false;
  let inFlight = null;
  let history = [];

  // ---- small DOM helpers (text only) -------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function safeHref(uri) {
    if (typeof uri !== "string" || !uri) return null;
    try {
      const url = new URL(uri, window.location.href);
      return ["http:", "https:", "file:"].includes(url.protocol) ? url.href : null;
    } catch {
      return null;
    }
  }

  function percent(x) {
    return `${Math.round(Number(x) * 100)}%`;
  }

  function ms(x) {
    const v = Number(x);
    return v >= 100 ? `${Math.round(v)} ms` : `${v.toFixed(1)} ms`;
  }

  // ---- errors ------------------------------------------------------------

  function showError(message) {
    errorBox.replaceChildren(el("strong", {}, "Error: "), message);
    errorBox.classList.add("is-visible");
  }

  function clearError() {
    errorBox.replaceChildren();
    errorBox.classList.remove("is-visible");
  }

  class ApiError extends Error {}

  async function readError(response) {
    let message = `${response.status} ${response.statusText}`.trim();
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) {
        message = `${body.error.message} (${body.error.code || response.status})`;
      } else if (body && typeof body.detail === "string") {
        message = body.detail;
      }
    } catch {
      // Not JSON: the status line is all there is.
    }
    if (response.status === 401 && authRequired) {
      message += " Check the access token.";
    }
    return new ApiError(message);
  }

  // ---- /health: index summary, facet selects, auth ---------------------

  function buildFilters(facets) {
    filtersBox.replaceChildren();
    const keys = [
      ...FACET_ORDER.filter((k) => k in facets),
      ...Object.keys(facets).filter((k) => !FACET_ORDER.includes(k)).sort(),
    ];
    for (const key of keys) {
      const values = Array.isArray(facets[key]) ? facets[key] : [];
      const id = `filter-${key}`;
      const select = el("select", { id, name: key, dataset: { facet: key } });
      select.append(el("option", { value: "" }, "any"));
      for (const value of values) select.append(el("option", { value: String(value) }, String(value)));
      if (values.length === 0) select.disabled = true;
      filtersBox.append(el("div", { class: "filter" }, el("label", { for: id }, key), select));
    }
  }

  function describeIndex(health) {
    const index = health.index || {};
    const counts = index.counts || {};
    const parts = [];
    if (counts.documents !== undefined) parts.push(`${counts.documents} documents`);
    if (counts.sections !== undefined) parts.push(`${counts.sections} sections`);
    if (counts.chunks !== undefined) parts.push(`${counts.chunks} passages`);
    indexInfo.textContent = parts.length ? `Index: ${parts.join(" · ")}` : "Index loaded";
    const foot = [];
    if (health.version) foot.push(`groundqa ${health.version}`);
    if (index.build_id) foot.push(`build ${index.build_id}`);
    if (index.created_at) foot.push(`built ${index.created_at}`);
    if (health.default_retriever) foot.push(`retriever ${health.default_retriever}`);
    if (health.embedder && health.embedder.model_id) foot.push(`embedder ${health.embedder.model_id}`);
    const gate = health.gate || {};
    if (gate.threshold !== undefined) {
      foot.push(
        `answers from ${percent(gate.threshold)} confidence` +
          (gate.calibrated ? " (calibrated gate)" : " (default gate, not calibrated)"),
      );
    }
    footerInfo.textContent = foot.join(" · ");
  }

  async function loadHealth() {
    let health;
    try {
      const response = await fetch("/health", { headers: { Accept: "application/json" } });
      if (!response.ok) throw await readError(response);
      health = await response.json();
    } catch (err) {
      indexInfo.textContent = "Index unavailable";
      showError(`could not reach the server: ${err.message}`);
      return;
    }
    describeIndex(health);
    buildFilters(health.facets || {});
    authRequired = Boolean(health.auth && health.auth.required);
    tokenRow.hidden = !authRequired;
    if (authRequired) tokenInput.value = sessionStorage.getItem(TOKEN_KEY) || "";
  }

  // ---- asking ------------------------------------------------------------

  function requestBody() {
    const filters = {};
    const scope = {};
    for (const select of filtersBox.querySelectorAll("select")) {
      if (!select.value) continue;
      const key = select.dataset.facet;
      (PLACE_KEYS.includes(key) ? scope : filters)[key] = select.value;
    }
    return {
      question: question.value.trim(),
      k: Number(kInput.value),
      filters,
      scope,
      auto_location: autoLocation.checked,
      history,
    };
  }

  function remember(body, data) {
    history = [
      ...history,
      { role: "user", content: body.question },
      { role: "assistant", content: String(data.answer || "") },
    ].slice(-MAX_TURNS);
    conversationBox.hidden = false;
  }

  function forget() {
    history = [];
    conversationBox.hidden = true;
    question.focus();
  }

  async function ask(event) {
    event.preventDefault();
    clearError();
    const body = requestBody();
    if (!body.question) {
      showError("type a question first.");
      question.focus();
      return;
    }
    if (!Number.isInteger(body.k) || body.k < 1 || body.k > 20) {
      showError("k must be a whole number from 1 to 20.");
      kInput.focus();
      return;
    }
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    if (authRequired) {
      const token = tokenInput.value.trim();
      sessionStorage.setItem(TOKEN_KEY, token);
      if (token) headers.Authorization = `Bearer ${token}`;
    }
    if (inFlight) inFlight.abort();
    const controller = new AbortController();
    inFlight = controller;
    askButton.disabled = true;
    askButton.textContent = "Asking…";
    result.setAttribute("aria-busy", "true");
    try {
      const response = await fetch("/query", {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!response.ok) throw await readError(response);
      const data = await response.json();
      render(data);
      remember(body, data);
    } catch (err) {
      if (err.name === "AbortError") return;
      result.hidden = true; // an earlier answer must not pass for this question's
      showError(err instanceof ApiError ? err.message : `the request failed: ${err.message}`);
    } finally {
      if (inFlight === controller) {
        inFlight = null;
        askButton.disabled = false;
        askButton.textContent = "Ask";
        result.removeAttribute("aria-busy");
      }
    }
  }

  // ---- highlighting ------------------------------------------------------

  // Collapse runs of whitespace to one space, remembering where each character
  // of the collapsed text sits in the original, so a match in the collapsed
  // text maps back to a range of the original string.
  function collapse(text) {
    let out = "";
    const at = [];
    let pendingSpace = false;
    for (let i = 0; i < text.length; i += 1) {
      const ch = text[i];
      if (/\s/.test(ch)) {
        pendingSpace = out.length > 0;
        continue;
      }
      if (pendingSpace) {
        out += " ";
        at.push(i - 1);
        pendingSpace = false;
      }
      out += ch;
      at.push(i);
    }
    return { text: out, at };
  }

  function findRange(haystack, needle) {
    const n = collapse(needle).text;
    if (!n) return null;
    const start = haystack.text.indexOf(n);
    if (start < 0) return null;
    return [haystack.at[start], haystack.at[start + n.length - 1] + 1];
  }

  // The ranges of `text` that the snippet quotes: the whole snippet when it is
  // one exact (whitespace-normalised) substring, otherwise each of its
  // sentences that is. An empty list means nothing could be located.
  function snippetRanges(text, snippet) {
    if (!text || !snippet) return [];
    const haystack = collapse(text);
    const whole = findRange(haystack, snippet);
    if (whole) return [whole];
    const ranges = [];
    for (const sentence of snippet.split(/(?<=[.!?;:])\s+/)) {
      if (sentence.trim().length < 12) continue;
      const range = findRange(haystack, sentence);
      if (range) ranges.push(range);
    }
    ranges.sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const r of ranges) {
      const last = merged[merged.length - 1];
      if (last && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
      else merged.push([r[0], r[1]]);
    }
    return merged;
  }

  function textWithMarks(text, ranges) {
    const body = el("p", { class: "passage-text" });
    let pos = 0;
    for (const [start, end] of ranges) {
      if (start > pos) body.append(document.createTextNode(text.slice(pos, start)));
      // One <mark> per line run, so a quote that spans paragraphs does not
      // paint the blank line between them.
      for (const piece of text.slice(start, end).split(/(\s*\n\s*)/)) {
        if (!piece) continue;
        body.append(/\n/.test(piece) ? document.createTextNode(piece) : el("mark", {}, piece));
      }
      pos = end;
    }
    if (pos < text.length) body.append(document.createTextNode(text.slice(pos)));
    return body;
  }

  // ---- rendering ---------------------------------------------------------

  function metaChips(metadata) {
    const chips = el("ul", { class: "chips", "aria-label": "document facets" });
    for (const key of FACET_ORDER) {
      const value = metadata && metadata[key];
      if (value === undefined || value === null || value === "") continue;
      chips.append(el("li", { class: "chip", dataset: { facet: key } }, `${key}: ${value}`));
    }
    return chips.childElementCount ? chips : null;
  }

  function sourceLine(item) {
    const line = el("dl", { class: "source" });
    const add = (term, value) => {
      if (value === null || value === undefined || value === "") return;
      line.append(el("div", {}, el("dt", {}, term), el("dd", {}, value)));
    };
    if (item.clause) add("clause", el("span", { class: "clause" }, item.clause));
    if (item.page !== null && item.page !== undefined) add("page", String(item.page));
    add("section id", el("code", { class: "section-id" }, item.section_id || ""));
    if (item.uri) {
      const href = safeHref(item.uri);
      add(
        "link",
        href
          ? el("a", { href, class: "deep-link", target: "_blank", rel: "noopener noreferrer" }, item.uri)
          : el("span", { class: "deep-link" }, item.uri),
      );
    }
    return line;
  }

  function citationCard(citation, passage) {
    const text = passage ? passage.text : "";
    const ranges = snippetRanges(text, citation.snippet);
    const card = el("article", {
      class: "passage citation",
      id: `cite-${citation.n}`,
      tabindex: "-1",
      "aria-labelledby": `cite-${citation.n}-title`,
      dataset: { chunkId: citation.chunk_id, n: String(citation.n) },
    });
    const header = el(
      "header",
      { class: "card-head" },
      el("span", { class: "badge", "aria-hidden": "true" }, String(citation.n)),
      el(
        "h3",
        { id: `cite-${citation.n}-title`, class: "breadcrumb" },
        el("span", { class: "visually-hidden" }, `Source ${citation.n}: `),
        citation.section || citation.title || citation.doc_id,
      ),
    );
    card.append(header, sourceLine(citation));
    if (passage) {
      const chips = metaChips(passage.metadata);
      if (chips) card.append(chips);
    }
    if (text && ranges.length) {
      card.append(textWithMarks(text, ranges));
    } else {
      // The quoted text could not be located (or the passage was not returned):
      // the whole card stands in for it.
      card.classList.add("whole-highlight");
      card.append(el("p", { class: "note" }, "The quoted text could not be located exactly; the whole passage is marked."));
      card.append(el("p", { class: "passage-text" }, text || citation.snippet || ""));
    }
    const back = el("button", { type: "button", class: "link-button back" }, `Back to the answer`);
    back.addEventListener("click", () => {
      const marker = answerBox.querySelector(`.citation-marker[data-n="${citation.n}"]`);
      (marker || question).focus();
    });
    card.append(back);
    return card;
  }

  function passageCard(passage) {
    const card = el("article", {
      class: "passage",
      dataset: { chunkId: passage.chunk_id },
    });
    card.append(
      el(
        "header",
        { class: "card-head" },
        el("span", { class: "rank" }, `#${passage.rank}`),
        el("h3", { class: "breadcrumb" }, passage.section || passage.title || passage.doc_id),
      ),
      el("p", { class: "score" }, `score ${Number(passage.score).toFixed(2)}`),
      sourceLine(passage),
    );
    const chips = metaChips(passage.metadata);
    if (chips) card.append(chips);
    card.append(el("p", { class: "passage-text" }, passage.text || ""));
    return card;
  }

  function goToCitation(n) {
    const card = document.getElementById(`cite-${n}`);
    if (!card) return;
    for (const other of citationsBox.querySelectorAll(".is-target")) other.classList.remove("is-target");
    card.classList.add("is-target");
    const smooth = !window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    card.scrollIntoView({ behavior: smooth ? "smooth" : "auto", block: "start" });
    card.focus({ preventScroll: true });
  }

  function answerParagraph(text, citations) {
    const known = new Map(citations.map((c) => [Number(c.n), c]));
    const para = el("p", { class: "answer-text" });
    const pattern = /\[(\d+)\]/g;
    let pos = 0;
    let match;
    while ((match = pattern.exec(text)) !== null) {
      const n = Number(match[1]);
      const citation = known.get(n);
      if (!citation) continue; // an unknown [n] stays as plain text
      if (match.index > pos) para.append(document.createTextNode(text.slice(pos, match.index)));
      const marker = el(
        "button",
        {
          type: "button",
          class: "citation-marker",
          dataset: { n: String(n) },
          "aria-label": `Source ${n}: ${citation.section || citation.title || citation.doc_id}`,
          title: citation.section || citation.title || "",
        },
        `[${n}]`,
      );
      marker.addEventListener("click", () => goToCitation(n));
      para.append(marker);
      pos = match.index + match[0].length;
    }
    if (pos < text.length) para.append(document.createTextNode(text.slice(pos)));
    return para;
  }

  function confidenceText(data) {
    const gate = data.gate;
    if (!gate || data.confidence === undefined || data.confidence === null) return null;
    const hasBand = typeof gate.band_floor === "number";
    const kind = gate.calibrated
      ? "calibrated"
      : hasBand
        ? "default gate, floor and band fitted to this index"
        : gate.self_fit
          ? "default gate, floor fitted to this index"
          : "default gate";
    const outcome = data.outcome ? `${data.outcome}: ` : "";
    let text = `${outcome}confidence ${percent(data.confidence)} (${kind}`;
    const banded = typeof gate.floor === "number" && typeof gate.threshold === "number" && gate.floor < gate.threshold;
    if (banded) text += `, confident from ${percent(gate.threshold)}, cautious from ${percent(gate.floor)}`;
    else if (gate.threshold !== undefined && gate.threshold !== null) text += `, answers from ${percent(gate.threshold)}`;
    if (hasBand) text += `, or from ${percent(gate.band_floor)} on the band`;
    if (typeof gate.band === "number") text += `; the band gives ${percent(gate.band)}`;
    return `${text})`;
  }

  function resultMetaItems(data) {
    const items = [];
    const confidence = confidenceText(data);
    if (confidence) items.push(el("span", { class: "confidence", dataset: { testid: "confidence" } }, confidence));
    const scope = data.scope || {};
    const scoped = Object.entries(scope).filter(([, values]) => values && values.length);
    if (scoped.length) {
      const text = scoped.map(([key, values]) => `${key} ${[].concat(values).join(" or ")}`).join("; ");
      items.push(el("span", { class: "scope" }, `scope: ${text}`));
    }
    if (data.audit) items.push(auditSummary(data.audit));
    else items.push(el("span", { class: "audit" }, "audit: not run"));
    const timings = data.timings_ms || {};
    if (Object.keys(timings).length) {
      const order = Object.keys(timings).filter((k) => k !== "total");
      const parts = order.map((k) => `${k} ${ms(timings[k])}`);
      if ("total" in timings) parts.push(`total ${ms(timings.total)}`);
      items.push(el("span", { class: "timings" }, `timings: ${parts.join(", ")}`));
    }
    if (data.cache && data.cache !== "off") items.push(el("span", { class: "cache" }, `cache ${data.cache}`));
    if (data.generator) items.push(el("span", { class: "generator" }, `generator ${data.generator}`));
    return items;
  }

  function auditSummary(audit) {
    const parts = [];
    if (audit.checkable_share !== undefined) parts.push(`checkable ${percent(audit.checkable_share)}`);
    const claims = Array.isArray(audit.claims) ? audit.claims : [];
    const counts = {};
    for (const claim of claims) {
      const verdict = claim && claim.verdict ? String(claim.verdict) : "UNKNOWN";
      counts[verdict] = (counts[verdict] || 0) + 1;
    }
    for (const [verdict, count] of Object.entries(counts)) parts.push(`${verdict} ${count}`);
    const text = parts.length ? parts.join(", ") : "done";
    return el("span", { class: "audit" }, `audit: ${text}`);
  }

  function render(data) {
    result.hidden = false;
    const citations = Array.isArray(data.citations) ? data.citations : [];
    const passages = Array.isArray(data.passages) ? data.passages : [];
    const byChunk = new Map(passages.map((p) => [p.chunk_id, p]));

    resultMeta.replaceChildren();
    for (const [i, item] of resultMetaItems(data).entries()) {
      if (i) resultMeta.append(document.createTextNode(" · "));
      resultMeta.append(item);
    }

    citationsBox.replaceChildren();
    passagesBox.replaceChildren();
    standaloneBox.textContent = data.standalone_question ? `Read as: ${data.standalone_question}` : "";
    standaloneBox.hidden = !data.standalone_question;

    if (data.refused) {
      answerBox.replaceChildren();
      answerBox.hidden = true;
      result.classList.add("is-refused");
      result.classList.remove("is-cautious");
      const by = CHECK_NAMES[data.refused_by] || (data.refused_by ? String(data.refused_by) : "a check");
      const reason = data.gate && data.refused_by === "gate" ? data.gate.reason : "";
      refusalBox.replaceChildren(
        el("p", { class: "refusal-title" }, "Not answered"),
        el("p", { class: "refusal-text" }, data.answer),
        el("p", { class: "refusal-by" }, `Refused by ${by}` + (reason ? `: ${reason}.` : ".")),
      );
      refusalBox.hidden = false;
      citationsSection.hidden = true;
      passagesHeading.textContent = `Closest passages (${passages.length}) — not used as sources`;
      for (const p of passages) passagesBox.append(passageCard(p));
      passagesSection.hidden = passages.length === 0;
      passagesSection.open = false;
      return;
    }

    result.classList.remove("is-refused");
    refusalBox.replaceChildren();
    refusalBox.hidden = true;
    answerBox.hidden = false;
    const cautious = data.outcome === "cautious";
    result.classList.toggle("is-cautious", cautious);
    answerBox.replaceChildren(el("h2", { class: "answer-heading" }, cautious ? "Closest passage" : "Answer"));
    if (cautious) {
      answerBox.append(
        el("p", { class: "caution", dataset: { testid: "caution" } }, "The closest passage, which may not answer this:"),
      );
    }
    answerBox.append(answerParagraph(data.answer || "", citations));
    const notes = Array.isArray(data.notes) ? data.notes : [];
    if (notes.length) {
      answerBox.append(
        el("ul", { class: "notes", dataset: { testid: "notes" } }, ...notes.map((n) => el("li", { class: "note" }, String(n)))),
      );
    }

    for (const c of citations) citationsBox.append(citationCard(c, byChunk.get(c.chunk_id)));
    citationsSection.hidden = citations.length === 0;

    const cited = new Set(citations.map((c) => c.chunk_id));
    const others = passages.filter((p) => !cited.has(p.chunk_id));
    passagesHeading.textContent = `Other retrieved passages (${others.length})`;
    for (const p of others) passagesBox.append(passageCard(p));
    passagesSection.hidden = others.length === 0;
    passagesSection.open = false;
  }

  // ---- wiring ------------------------------------------------------------

  form.addEventListener("submit", ask);
  newConversation.addEventListener("click", forget);
  tokenInput.addEventListener("change", () => sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim()));
  loadHealth();
})();
