// recallstore memory lens: the live feed. Plain JavaScript, no build step, no network
// beyond this page's own /events stream and /api/snippets. Event data and record
// content are untrusted: they are only ever inserted as text (textContent), never as
// HTML.
(function () {
  "use strict";

  var feed = document.getElementById("feed");
  var statusBadge = document.getElementById("feed-status");
  var emptyHint = document.getElementById("feed-empty");
  var recordUrl = feed ? feed.dataset.recordUrl : "/records/";
  var snippetsUrl = feed ? feed.dataset.snippetsUrl : null;
  var maxItems = feed ? parseInt(feed.dataset.maxItems, 10) || 200 : 200;
  var seenIds = new Set();

  // ---- small DOM helpers -------------------------------------------------------------
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function kv(label, value) {
    var span = el("span", "kv");
    span.appendChild(el("span", "k", label));
    if (value instanceof Node) span.appendChild(value);
    else span.appendChild(el("span", "v", value));
    return span;
  }

  // ---- what the records a row names say ------------------------------------------------
  // Events carry ids, kinds and counts, not content. Each record link starts as its id
  // and is filled in with the record's kind and opening words, read from the store
  // behind the token (/api/snippets, batched); a record no longer stored says so.
  var snippets = new Map();   // id -> {kind, status, snippet, hidden_characters} or null
  var waiting = new Map();    // id -> [links] still to fill
  var fetchTimer = null;

  function fillLink(link, info) {
    link.textContent = "";
    if (!info) {
      link.appendChild(el("span", "ref-gone", "no longer stored"));
      link.appendChild(el("span", "ref-id", link.dataset.recordId.slice(0, 10) + "\u2026"));
      link.dataset.status = "gone";
      return;
    }
    link.dataset.status = info.status;
    link.appendChild(el("span", "ref-kind", info.kind));
    link.appendChild(el("span", "ref-text", info.snippet));
    if (info.hidden_characters) {
      link.appendChild(el("span", "ref-hidden", "+" + plural(info.hidden_characters, "invisible character")));
    }
    if (info.status !== "valid") link.appendChild(el("span", "ref-status", info.status));
  }

  function fetchSnippets() {
    fetchTimer = null;
    var ids = Array.from(waiting.keys()).slice(0, 100);
    if (!ids.length || !snippetsUrl) return;
    var query = ids.map(function (id) { return "id=" + encodeURIComponent(id); }).join("&");
    fetch(snippetsUrl + "?" + query, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (body) {
        if (!body || typeof body.records !== "object") return;
        ids.forEach(function (id) {
          var info = Object.prototype.hasOwnProperty.call(body.records, id) ? body.records[id] : null;
          snippets.set(id, info);
          (waiting.get(id) || []).forEach(function (link) { fillLink(link, info); });
          waiting.delete(id);
        });
        if (waiting.size) scheduleSnippets();
      })
      .catch(function () { /* the ids stay shown; the next row retries */ });
  }

  function scheduleSnippets() {
    if (fetchTimer === null) fetchTimer = setTimeout(fetchSnippets, 30);
  }

  function want(id, link) {
    if (snippets.has(id)) {
      fillLink(link, snippets.get(id));
      return;
    }
    if (!waiting.has(id)) waiting.set(id, []);
    waiting.get(id).push(link);
    scheduleSnippets();
  }

  // A write changes what the records it names stand as (superseded, invalidated,
  // deleted): the write renderer has them read again, for the rows already showing them.
  function refreshRecords(ids) {
    if (!feed) return;
    (ids || []).forEach(function (id) {
      id = String(id);
      if (!snippets.has(id)) return;
      snippets.delete(id);
      feed.querySelectorAll("a.record-id").forEach(function (link) {
        if (link.dataset.recordId === id) want(id, link);
      });
    });
  }

  function recordLinks(ids) {
    var span = el("span", "ids");
    (ids || []).forEach(function (id) {
      var link = el("a", "record-id", id);
      link.href = recordUrl + encodeURIComponent(id);
      link.title = id;
      link.dataset.recordId = String(id);
      span.appendChild(link);
      want(String(id), link);
    });
    return span;
  }

  function scopeChips(scope) {
    var span = el("span", "scope");
    var keys = scope ? Object.keys(scope) : [];
    if (!keys.length) span.appendChild(el("span", "muted", "(any)"));
    keys.forEach(function (key) {
      span.appendChild(el("code", "chip", key + "=" + scope[key]));
      span.appendChild(document.createTextNode(" "));
    });
    return span;
  }

  function plural(count, word) {
    return count + " " + word + (count === 1 ? "" : "s");
  }

  function has(data, key) {
    return data && data[key] !== undefined && data[key] !== null;
  }

  function failure(details, data) {
    if (data.ok === false) details.push(kv("failed", data.error || "error"));
  }

  // ---- one renderer per event type in event_manifest.json -----------------------------
  // Each gets the whole message and returns {summary: text, details: [nodes]}. A test
  // checks that every manifest type has an entry here; anything else is rendered by
  // renderGeneric. This is the only place the feed names an event type: the types it
  // listens for and the data-kind the stylesheet colours by come from the page's
  // data-event-types (the manifest's list).
  var RENDERERS = {
    "agent.memory.write": function (event) {
      var data = event.data || {};
      var details = [];
      refreshRecords((data.record_ids || []).concat(data.superseded_ids || []));
      failure(details, data);
      details.push(kv("scope", scopeChips(event.scope)));
      if (has(data, "kinds") && data.kinds.length) details.push(kv("kinds", data.kinds.join(", ")));
      if (has(data, "record_ids") && data.record_ids.length) {
        var label = { write: "saved", supersede: "saved", invalidate: "invalidated", delete: "deleted" };
        details.push(kv(label[data.operation] || "record", recordLinks(data.record_ids)));
      }
      if (has(data, "superseded_ids") && data.superseded_ids.length) {
        details.push(kv("supersedes", recordLinks(data.superseded_ids)));
      }
      if (has(data, "reason")) details.push(kv("reason", data.reason));
      else if (has(data, "reason_chars")) details.push(kv("reason", plural(data.reason_chars, "char")));
      if (has(data, "contents")) details.push(kv("content", data.contents.join(" | ")));
      var operation = data.operation || "write";
      var verb = { write: "written", supersede: "written", invalidate: "invalidated", delete: "deleted" };
      var summary = operation + " · " + plural(data.count || 0, "record") + " " +
        (verb[operation] || "changed");
      return { summary: summary, details: details };
    },

    "agent.memory.search": function (event) {
      var data = event.data || {};
      var details = [];
      failure(details, data);
      details.push(kv("scope", scopeChips(event.scope)));
      if (has(data, "query")) details.push(kv("query", "\u201c" + data.query + "\u201d"));
      else if (data.query_chars) details.push(kv("query", plural(data.query_chars, "char")));
      if (has(data, "kinds")) details.push(kv("kinds", data.kinds.join(", ") || "none"));
      if (has(data, "tags")) details.push(kv("tags", data.tags.join(", ")));
      if (has(data, "limit")) details.push(kv("limit", data.limit));
      if (data.include_invalidated) details.push(kv("with", "invalidated"));
      if (data.include_expired) details.push(kv("with", "expired"));
      if (has(data, "result_ids") && data.result_ids.length) {
        details.push(kv("found", recordLinks(data.result_ids)));
      }
      if (has(data, "duration_ms")) details.push(kv("took", data.duration_ms.toFixed(1) + " ms"));
      var count = has(data, "result_count") ? data.result_count : 0;
      var summary = (data.mode || "search") + " · " + plural(count, "hit");
      // A save's own search for an equal memory reads as what it is, not as a search.
      if (data.purpose === "duplicate_check") summary = "duplicate check · " + summary;
      return { summary: summary, details: details };
    },

    "agent.memory.recall": function (event) {
      var data = event.data || {};
      var details = [];
      details.push(kv("scope", scopeChips(event.scope)));
      details.push(kv("profile", data.profile_count));
      details.push(kv("hits", data.hit_count));
      details.push(kv("omitted", data.omitted));
      details.push(kv("block", data.chars + " / " + data.budget_chars + " chars"));
      details.push(kv("bytes", data.bytes));
      if (has(data, "query")) details.push(kv("text", "\u201c" + data.query + "\u201d"));
      else if (data.query_chars) details.push(kv("text", plural(data.query_chars, "char")));
      if (has(data, "record_ids") && data.record_ids.length) {
        details.push(kv("recalled", recordLinks(data.record_ids)));
      }
      var count = (data.profile_count || 0) + (data.hit_count || 0);
      var summary = "recall · " + count + (count === 1 ? " entry" : " entries");
      summary += data.truncated ? " · truncated" : " · complete";
      return { summary: summary, details: details };
    },

    // Memory that learns (issue 39): one ledger row, and one prompt's learned lines.
    "agent.memory.learn": function (event) {
      var data = event.data || {};
      var details = [];
      refreshRecords(data.record_ids || []);
      failure(details, data);
      details.push(kv("scope", scopeChips(event.scope)));
      if (has(data, "record_ids") && data.record_ids.length) {
        details.push(kv("record", recordLinks(data.record_ids)));
      }
      if (has(data, "target")) details.push(kv("target", data.target));
      details.push(kv("supports", data.supports || 0));
      details.push(kv("conversations", data.conversation_count || 0));
      if (data.approved) details.push(kv("approved", "yes"));
      var summary = (data.action || "learn") + (has(data, "target") ? " · " + data.target : "") +
        " · " + plural(data.supports || 0, "support");
      return { summary: summary, details: details };
    },

    "agent.memory.learned": function (event) {
      var data = event.data || {};
      var details = [kv("scope", scopeChips(event.scope))];
      if (has(data, "record_ids") && data.record_ids.length) {
        details.push(kv("lines", recordLinks(data.record_ids)));
      }
      if (has(data, "kinds") && data.kinds.length) details.push(kv("kinds", data.kinds.join(", ")));
      details.push(kv("conversations", data.conversation_count || 0));
      details.push(kv("omitted", data.omitted || 0));
      details.push(kv("block", (data.chars || 0) + " / " + (data.budget_chars || 0) + " chars"));
      return { summary: "learned · " + plural(data.line_count || 0, "line"), details: details };
    },

    // SSE only: events this stream missed (slow reader, replay expired, server restart).
    "gap": function (event) {
      var details = [kv("reason", event.reason)];
      if (has(event, "after_id")) details.push(kv("after event", event.after_id));
      if (has(event, "first_available_id")) details.push(kv("resumes at", event.first_available_id));
      return { summary: plural(event.missed || 0, "event") + " missed", details: details };
    },
  };

  function renderGeneric(event) {
    var body = has(event, "data") ? event.data : event;
    var pre = el("pre", "generic", JSON.stringify(body, null, 1));
    var details = [];
    if (has(event, "scope")) details.push(kv("scope", scopeChips(event.scope)));
    return { summary: "event", details: details, extra: pre };
  }

  // Event types lens.js has no renderer for may declare their view in the catalogue
  // (EventType.lens): a summary with {field} placeholders and the data fields to list.
  // Values are inserted as text only (el and kv build text nodes).
  function declaredViews() {
    var views = {};
    try {
      views = JSON.parse((feed && feed.dataset.eventLens) || "{}");
    } catch (error) {
      views = {};
    }
    return views && typeof views === "object" && !Array.isArray(views) ? views : {};
  }

  var VIEWS = declaredViews();

  function declaredRenderer(view) {
    return function (event) {
      var data = event.data || {};
      var summary = String(view.summary || "event").replace(/\{(\w+)\}/g, function (_, field) {
        return has(data, field) ? String(data[field]) : "";
      });
      var details = [kv("scope", scopeChips(event.scope))];
      (view.details || []).forEach(function (field) {
        if (has(data, field)) details.push(kv(field, String(data[field])));
      });
      return { summary: summary, details: details };
    };
  }

  function rendererOf(type) {
    if (RENDERERS[type]) return RENDERERS[type];
    return has(VIEWS, type) ? declaredRenderer(VIEWS[type]) : null;
  }

  // The event types the server publishes, as the page lists them (event_manifest.json's
  // event_types); a renderer's types are always included.
  function manifestTypes() {
    var types = [];
    try {
      types = JSON.parse((feed && feed.dataset.eventTypes) || "[]");
    } catch (error) {
      types = [];
    }
    if (!Array.isArray(types)) types = [];
    Object.keys(RENDERERS).forEach(function (type) {
      if (types.indexOf(type) < 0) types.push(type);
    });
    return types;
  }

  var knownTypes = manifestTypes();

  // data-kind for the stylesheet: the last dotted part of a type the server publishes
  // and this page renders ("agent.memory.write" -> "write"), "other" for anything else.
  function kindOf(type) {
    var name = String(type || "");
    if (!rendererOf(name) || knownTypes.indexOf(name) < 0) return "other";
    return name.split(".").pop().replace(/[^a-z0-9_-]/gi, "-");
  }

  function formatTime(iso) {
    var moment = new Date(iso);
    if (isNaN(moment.getTime())) return String(iso || "");
    return moment.toLocaleTimeString([], { hour12: false }) +
      "." + String(moment.getMilliseconds()).padStart(3, "0");
  }

  // Builds the list item for one message: a memory event envelope {type, id, timestamp,
  // conversation_id, run_id, scope, data}, a gap notice, or anything else. Exposed on
  // window for tests and for hosts that embed the feed.
  function renderEvent(envelope) {
    var type = String(envelope.type || "message");
    var renderer = rendererOf(type);
    var parts;
    try {
      parts = renderer ? renderer(envelope) : renderGeneric(envelope);
    } catch (error) {
      parts = renderGeneric(envelope);
    }
    var item = el("li", "event fresh");
    item.dataset.type = type;
    item.dataset.kind = kindOf(type);
    if (envelope.id !== undefined && envelope.id !== null) item.dataset.eventId = String(envelope.id);

    var time = el("time", null, formatTime(envelope.timestamp));
    if (envelope.timestamp) {
      time.dateTime = envelope.timestamp;
      time.title = envelope.timestamp;
    }
    item.appendChild(time);
    var typeLabel = el("span", "type", type.replace(/^agent\.memory\./, ""));
    typeLabel.title = type;
    item.appendChild(typeLabel);
    item.appendChild(el("span", "summary", parts.summary));

    var details = el("div", "details");
    var who = [];
    if (envelope.conversation_id) who.push(kv("conversation", envelope.conversation_id));
    if (envelope.run_id) who.push(kv("run", envelope.run_id));
    who.concat(parts.details).forEach(function (node) { details.appendChild(node); });
    if (details.childNodes.length) item.appendChild(details);
    if (parts.extra) item.appendChild(parts.extra);
    return item;
  }

  // ---- the stream ----------------------------------------------------------------------
  function setStatus(state, text) {
    if (!statusBadge) return;
    statusBadge.dataset.state = state;
    statusBadge.textContent = text;
  }

  // The feed is ordered by when events happened (their timestamp: fixed-width ISO 8601,
  // so the strings sort in time order), ties by id, newest on top. Events arrive in
  // journal order, which is not that order: a process journals its searches and
  // recalls in batches after its writes, so a late-arriving older event is placed
  // where it belongs, not on top. Rows without a timestamp (gap notices) stay put.
  function isOlder(item, timestamp, id) {
    var other = item.dataset.timestamp;
    if (!other) return false;
    if (other !== timestamp) return other < timestamp;
    return Number(item.dataset.eventId || 0) < id;
  }

  function place(item, envelope) {
    var timestamp = typeof envelope.timestamp === "string" ? envelope.timestamp : "";
    if (!timestamp) {
      feed.insertBefore(item, feed.firstChild);
      return;
    }
    item.dataset.timestamp = timestamp;
    var id = Number(envelope.id || 0);
    var next = feed.firstElementChild;
    while (next && !isOlder(next, timestamp, id)) next = next.nextElementSibling;
    feed.insertBefore(item, next);
  }

  function show(envelope) {
    var key = envelope.id !== undefined ? String(envelope.id) : null;
    if (key !== null) {
      if (seenIds.has(key)) return;
      seenIds.add(key);
    }
    place(renderEvent(envelope), envelope);
    if (emptyHint) emptyHint.hidden = true;
    while (feed.children.length > maxItems) feed.removeChild(feed.lastChild);
    if (seenIds.size > maxItems * 4) seenIds = new Set();
  }

  function onMessage(message) {
    var envelope;
    try {
      envelope = JSON.parse(message.data);
    } catch (error) {
      envelope = { type: message.type, data: { text: message.data } };
    }
    if (!envelope || typeof envelope !== "object") envelope = { data: envelope };
    if (!envelope.type) envelope.type = message.type;
    if (envelope.id === undefined && message.lastEventId) envelope.id = message.lastEventId;
    show(envelope);
  }

  function connect() {
    var source = new EventSource(feed.dataset.eventsUrl);
    // Named SSE events only reach listeners registered for their name; unnamed ones
    // arrive as "message".
    knownTypes.forEach(function (type) { source.addEventListener(type, onMessage); });
    source.addEventListener("message", onMessage);
    source.addEventListener("open", function () { setStatus("connected", "live"); });
    source.addEventListener("error", function () {
      if (source.readyState === EventSource.CLOSED) {
        setStatus("disconnected", "disconnected — reload the page (a new token may be needed)");
      } else {
        setStatus("reconnecting", "reconnecting…");
      }
    });
    return source;
  }

  window.RecallstoreLens = { RENDERERS: RENDERERS, renderEvent: renderEvent, kindOf: kindOf };

  if (feed) {
    var clear = document.getElementById("feed-clear");
    if (clear) {
      clear.addEventListener("click", function () {
        feed.textContent = "";
        if (emptyHint) emptyHint.hidden = false;
      });
    }
    connect();
  }
})();
