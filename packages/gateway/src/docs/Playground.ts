/**
 * `GET /playground` (DESIGN.md §13): one offline page — inline CSS and script, nothing fetched
 * from elsewhere. The token is kept in localStorage; the model list comes from `/v1/models`; the
 * form is generated from the model's request schema in `/openapi.json`, with its bounds checked
 * by field before sending and the server's 400 shown by field; a task's status and progress come
 * from its event stream (read with `fetch`, since `EventSource` cannot send a bearer token),
 * falling back to polling the retrieve route where the stream is not served.
 */
import { css } from "./Style.js"

/**
 * The page's script. Plain ES2020, no template literals (it lives in one), ASCII only: other
 * characters are written as `\u` escapes, which the browser reads in its strings (this text is
 * raw, so the escapes reach the page as written). The compiled gateway stays ASCII, which V8 keeps
 * at one byte per character (test/compiled.test.ts).
 */
const script = String.raw`
"use strict";
var $ = function (id) { return document.getElementById(id); };
var state = { models: [], doc: null, model: null, schema: null, fields: [], run: 0 };
var TOKEN_KEY = "genway.playground.token";

function el(tag, attrs, children) {
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) {
    if (attrs[k] === undefined || attrs[k] === null) continue;
    if (k === "text") e.textContent = attrs[k];
    else if (k === "html") e.innerHTML = attrs[k];
    else e.setAttribute(k, attrs[k]);
  }
  (children || []).forEach(function (c) { if (c) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
  return e;
}
function token() { return $("token").value.trim(); }
function authHeaders(extra) {
  var h = { authorization: "Bearer " + token() };
  for (var k in (extra || {})) h[k] = extra[k];
  return h;
}
function say(id, text, cls) { var n = $(id); n.textContent = text; n.className = cls || ""; }

// ------------------------------------------------------------------------------------------
// Token and models
// ------------------------------------------------------------------------------------------

function loadModels() {
  say("models-msg", "Loading models\u2026");
  return fetch("/v1/models", { headers: authHeaders() }).then(function (r) {
    return r.json().catch(function () { return {}; }).then(function (body) {
      if (!r.ok) {
        say("models-msg", r.status === 401 ? "The gateway refused this token (401). Paste a valid one." : "Could not list models: " + r.status + " " + errorText(body), "field-error");
        return;
      }
      state.models = body.data || [];
      var select = $("model");
      select.innerHTML = "";
      var groups = {};
      state.models.forEach(function (m) {
        if (!groups[m.owned_by]) { groups[m.owned_by] = el("optgroup", { label: m.owned_by }); select.appendChild(groups[m.owned_by]); }
        groups[m.owned_by].appendChild(el("option", { value: m.id, text: (m.endpoints || []).join("/") + " \u00b7 " + m.id + " \u2014 " + m.summary + (m.mode === "sandbox" ? " (sandbox)" : "") }));
      });
      select.disabled = false;
      say("models-msg", state.models.length + " models.");
      var wanted = decodeURIComponent(location.hash.slice(1));
      if (wanted && state.models.some(function (m) { return m.id === wanted; })) select.value = wanted;
      return chooseModel();
    });
  }).catch(function (e) { say("models-msg", "Could not reach the gateway: " + e.message, "field-error"); });
}

function loadDoc() {
  if (state.doc) return Promise.resolve(state.doc);
  return fetch("/openapi.json").then(function (r) { return r.json(); }).then(function (d) { state.doc = d; return d; });
}

function resolve(s) {
  for (var i = 0; i < 5 && s && s.$ref; i++) s = state.doc.components.schemas[s.$ref.split("/").pop()];
  return s || {};
}

function chooseModel() {
  var id = $("model").value;
  state.model = state.models.find(function (m) { return m.id === id; }) || null;
  if (!state.model) return;
  history.replaceState(null, "", "#" + encodeURIComponent(id));
  return loadDoc().then(function (doc) {
    var path = state.model.routes[0].path;
    var op = doc.paths[path] && doc.paths[path].post;
    state.schema = resolve(op && op.requestBody && op.requestBody.content["application/json"].schema);
    var docsLink = $("docs-link");
    docsLink.href = "/docs#m-" + id.replace(/[^A-Za-z0-9]+/g, "-");
    $("model-info").textContent = state.model.summary + " \u00b7 " + state.model.stage + " \u00b7 " + (state.model.mode === "sandbox" ? "sandbox (sample results, no vendor call)" : "live");
    buildForm();
  });
}

// ------------------------------------------------------------------------------------------
// The form, from the request schema
// ------------------------------------------------------------------------------------------

function variants(s) {
  s = resolve(s);
  if (!s.anyOf) return { of: [s], nullable: false };
  var of = s.anyOf.map(resolve);
  return { of: of.filter(function (m) { return m.type !== "null"; }), nullable: of.some(function (m) { return m.type === "null"; }) };
}

function widgetOf(name, prop) {
  var v = variants(prop);
  var s = v.of[0] || {};
  if (v.of.length === 1 && s.enum) return { kind: "enum", s: s };
  if (v.of.length === 1 && s.type === "boolean") return { kind: "bool", s: s };
  if (v.of.length === 1 && (s.type === "integer" || s.type === "number")) return { kind: "number", s: s };
  if (v.of.length === 1 && s.type === "string") return { kind: "string", s: s };
  if (name === "messages" && state.model.kind === "chat") return { kind: "messages", s: s };
  var types = v.of.map(function (m) { return m.type; });
  if (types.indexOf("string") >= 0 && types.indexOf("array") >= 0) return { kind: "string-or-json", s: v.of[types.indexOf("array")] };
  return { kind: "json", s: s };
}

function hintOf(w) {
  var s = w.s, h = [];
  if (s.minLength > 1) h.push("at least " + s.minLength + " characters");
  if (s.maxLength !== undefined) h.push("at most " + s.maxLength + " characters");
  if (s.minimum !== undefined && s.maximum !== undefined) h.push(s.minimum + " to " + s.maximum);
  else if (s.minimum !== undefined) h.push("at least " + s.minimum);
  if (s.minItems > 0) h.push("at least " + s.minItems + " items");
  if (s.maxItems !== undefined) h.push("at most " + s.maxItems + " items");
  return h.join(", ");
}

function looksLikeImage(name) { return /(^|_)(image|frame|mask|img)(_|$)|image_tail|frame_url/.test(name); }

function buildForm() {
  var box = $("fields");
  box.innerHTML = "";
  state.fields = [];
  var s = state.schema || {};
  var required = s.required || [];
  var example = (s.examples && s.examples[0]) || {};
  var props = s.properties || {};
  Object.keys(props).forEach(function (name) {
    var prop = props[name];
    var w = widgetOf(name, prop);
    var isReq = required.indexOf(name) >= 0;
    var id = "f-" + name;
    var wrap = el("div", { class: "field", "data-field": name });
    var label = el("label", { for: id }, [name + (isReq ? " (required)" : "")]);
    var bounds = hintOf(w);
    if (bounds && (prop.description || "").toLowerCase().indexOf(bounds.toLowerCase()) >= 0) bounds = "";
    var hint = [prop.description || "", bounds].filter(Boolean).join(" \u2014 ");
    if (hint) label.appendChild(el("span", { class: "hint", id: id + "-hint", text: hint }));
    wrap.appendChild(label);
    var input;
    var initial = example[name];
    if (w.kind === "enum" || w.kind === "bool") {
      input = el("select", { id: id, name: name });
      if (!isReq) input.appendChild(el("option", { value: "", text: prop.default !== undefined ? "(default: " + JSON.stringify(prop.default) + ")" : "(not set)" }));
      var values = w.kind === "bool" ? [true, false] : w.s.enum;
      values.forEach(function (v) { input.appendChild(el("option", { value: JSON.stringify(v), text: String(v) })); });
      if (initial !== undefined) input.value = JSON.stringify(initial);
    } else if (w.kind === "number") {
      input = el("input", { id: id, name: name, type: "number", inputmode: w.s.type === "integer" ? "numeric" : "decimal", step: w.s.type === "integer" ? "1" : "any" });
      if (initial !== undefined) input.value = String(initial);
    } else if (w.kind === "messages") {
      input = el("textarea", { id: id, name: name, rows: "3" });
      var first = example.messages && example.messages[0];
      var text = first && (typeof first.content === "string" ? first.content : (first.content.find(function (p) { return p.type === "text"; }) || {}).text);
      input.value = text || "";
      label.firstChild.textContent = "prompt (required) \u2014 sent as messages[0]";
    } else if (w.kind === "string" && (w.s.maxLength === undefined || w.s.maxLength > 120) && !w.s.format && !looksLikeImage(name)) {
      input = el("textarea", { id: id, name: name, rows: "3" });
      if (initial !== undefined) input.value = initial;
    } else if (w.kind === "string") {
      input = el("input", { id: id, name: name, type: "text", autocomplete: "off", spellcheck: "false" });
      if (initial !== undefined) input.value = initial;
    } else {
      input = el("textarea", { id: id, name: name, rows: "3", spellcheck: "false", placeholder: w.kind === "string-or-json" ? "text, or a JSON array" : "JSON" });
      if (initial !== undefined) input.value = typeof initial === "string" ? initial : JSON.stringify(initial);
    }
    if (hint) input.setAttribute("aria-describedby", id + "-hint");
    wrap.appendChild(input);
    wrap.appendChild(el("div", { class: "field-error", id: id + "-error", role: "alert" }));
    var file = null;
    // Where the model takes raw Base64 only, the file goes without its data-URL prefix.
    var raw = /raw base64/i.test(prop.description || "");
    if (looksLikeImage(name) && (w.kind === "string" || w.kind === "messages")) {
      var fid = id + "-file";
      file = el("input", { id: fid, type: "file", accept: "image/png,image/jpeg,image/webp" });
      var flabel = el("label", { for: fid, class: "hint" }, [w.kind === "messages" ? "Input image (optional), sent inline as a data URL" : "Or choose a file for " + name + " (sent inline as " + (raw ? "raw Base64)" : "a data URL)")]);
      wrap.appendChild(flabel);
      wrap.appendChild(file);
      if (w.kind === "string") file.addEventListener("change", function () {
        var f = file.files[0];
        if (!f) return;
        var reader = new FileReader();
        reader.onload = function () { input.value = raw ? String(reader.result).replace(/^data:[^,]*,/, "") : reader.result; };
        reader.readAsDataURL(f);
      });
    }
    box.appendChild(wrap);
    state.fields.push({ name: name, prop: prop, w: w, required: isReq, input: input, file: file });
  });
  $("outcome-row").hidden = !(state.model && state.model.mode === "sandbox" && state.model.kind === "task");
  $("submit").disabled = false;
}

// ------------------------------------------------------------------------------------------
// Checking bounds, by field
// ------------------------------------------------------------------------------------------

function check(value, s, name) {
  s = resolve(s);
  if (s.anyOf) {
    var v = variants(s);
    if (value === null && v.nullable) return null;
    var errs = v.of.map(function (m) { return check(value, m, name); });
    return errs.some(function (e) { return e === null; }) ? null : errs[0];
  }
  if (s.enum) return s.enum.indexOf(value) >= 0 ? null : "must be one of " + s.enum.map(function (x) { return JSON.stringify(x); }).join(", ");
  if (s.type === "string") {
    if (typeof value !== "string") return "must be a string";
    if (s.minLength !== undefined && value.length < s.minLength) return s.minLength === 1 ? "must not be empty" : "must be at least " + s.minLength + " characters";
    if (s.maxLength !== undefined && value.length > s.maxLength) return "must be at most " + s.maxLength + " characters (now " + value.length + ")";
    if (s.format === "uri" && !/^https?:\/\/[^\s]+$/i.test(value)) return "must be an absolute http(s) URL";
    return null;
  }
  if (s.type === "integer" || s.type === "number") {
    if (typeof value !== "number" || isNaN(value)) return "must be a number";
    if (s.type === "integer" && Math.floor(value) !== value) return "must be an integer";
    if (s.minimum !== undefined && s.maximum !== undefined && (value < s.minimum || value > s.maximum)) return "must be between " + s.minimum + " and " + s.maximum;
    if (s.minimum !== undefined && value < s.minimum) return "must be at least " + s.minimum;
    if (s.maximum !== undefined && value > s.maximum) return "must be at most " + s.maximum;
    return null;
  }
  if (s.type === "boolean") return typeof value === "boolean" ? null : "must be true or false";
  if (s.type === "array") {
    if (!Array.isArray(value)) return "must be an array";
    if (s.minItems !== undefined && value.length < s.minItems) return "must have at least " + s.minItems + " element" + (s.minItems === 1 ? "" : "s");
    if (s.maxItems !== undefined && value.length > s.maxItems) return "must have at most " + s.maxItems + " elements";
    for (var i = 0; i < value.length; i++) { var e = check(value[i], s.items || {}, name); if (e) return "[" + i + "] " + e; }
    return null;
  }
  if (s.type === "object" && (value === null || typeof value !== "object" || Array.isArray(value))) return "must be an object";
  return null;
}

function clearErrors() {
  state.fields.forEach(function (f) { f.input.removeAttribute("aria-invalid"); $("f-" + f.name + "-error").textContent = ""; });
  say("form-msg", "");
}

function showError(name, message) {
  var f = state.fields.find(function (x) { return x.name === name; });
  if (!f) return false;
  f.input.setAttribute("aria-invalid", "true");
  var box = $("f-" + name + "-error");
  box.textContent = box.textContent ? box.textContent + "; " + message : message;
  return true;
}

function readFile(f) {
  return new Promise(function (resolve) {
    if (!f || !f.files || !f.files[0]) return resolve(null);
    var reader = new FileReader();
    reader.onload = function () { resolve(reader.result); };
    reader.readAsDataURL(f.files[0]);
  });
}

/** The body, or null with the errors shown by field. */
function collect() {
  var body = {}, errors = [];
  var pending = [];
  state.fields.forEach(function (f) {
    var raw = f.input.value;
    var value;
    if (f.w.kind === "enum" || f.w.kind === "bool") {
      if (raw === "") { if (f.required) errors.push([f.name, "is required"]); return; }
      value = JSON.parse(raw);
    } else if (raw.trim() === "") {
      if (f.required) errors.push([f.name, "is required"]);
      return;
    } else if (f.w.kind === "number") {
      value = Number(raw);
    } else if (f.w.kind === "string") {
      value = raw;
    } else if (f.w.kind === "messages") {
      pending.push(readFile(f.file).then(function (image) {
        var content = [{ type: "text", text: raw }];
        if (image) content.push({ type: "image_url", image_url: { url: image } });
        body.messages = [{ role: "user", content: content }];
      }));
      return;
    } else if (f.w.kind === "string-or-json" && !/^\s*[\[{]/.test(raw)) {
      value = raw;
    } else {
      try { value = JSON.parse(raw); } catch (e) { errors.push([f.name, "must be valid JSON (" + e.message + ")"]); return; }
    }
    var problem = check(value, f.prop, f.name);
    if (problem) errors.push([f.name, problem]);
    else body[f.name] = value;
  });
  return Promise.all(pending).then(function () { return { body: body, errors: errors }; });
}

// ------------------------------------------------------------------------------------------
// Submitting and following
// ------------------------------------------------------------------------------------------

function errorText(body) {
  var e = body && body.error;
  if (!e) return "";
  return e.detail || e.message || e.title || JSON.stringify(e);
}

/** Puts a 400's problems next to their fields; returns whether any field was named. */
function showServerErrors(body) {
  var e = (body && body.error) || {};
  var text = e.detail || e.message || "";
  var named = false;
  text.split("; ").forEach(function (part) {
    var m = /^([A-Za-z_][\w]*)((?:\[\d+\]|\.[\w]+)*): (.*)$/.exec(part);
    if (m && showError(m[1], (m[2] ? m[2].replace(/^\./, "") + ": " : "") + m[3])) named = true;
  });
  if (!named && e.param && showError(String(e.param).split(/[.\[]/)[0], text)) named = true;
  return named;
}

function setStatus(text, cls) { var s = $("status"); s.textContent = text; s.className = "status " + (cls || ""); }

function setProgress(p) {
  var bar = $("progress");
  if (p && typeof p.percent === "number") { bar.hidden = false; bar.value = p.percent; bar.textContent = p.percent + "%"; }
  else if (!p) bar.hidden = true;
  $("eta").textContent = p && typeof p.eta_seconds === "number" ? "about " + Math.round(p.eta_seconds) + " s left" + (p.source === "estimate" ? " (estimate)" : "") : "";
}

function showMedia(envelope) {
  var out = $("media");
  out.innerHTML = "";
  (envelope.videos || []).forEach(function (url, i) {
    out.appendChild(el("video", { src: url, controls: "", playsinline: "", preload: "auto", "aria-label": "Generated video " + (i + 1) }));
    out.appendChild(el("p", {}, [el("a", { href: url, text: "Open video " + (i + 1) })]));
  });
  (envelope.images || []).forEach(function (url, i) {
    out.appendChild(el("img", { src: url, class: "result", alt: "Generated image " + (i + 1) }));
  });
}

function showTask(envelope, run) {
  if (run !== state.run) return true;
  var info = envelope.task_info || {};
  var line = info.status || "pending";
  setStatus(line, line);
  setProgress(info.status === "completed" || info.status === "failed" ? null : envelope.progress);
  $("raw").textContent = JSON.stringify(envelope, null, 2);
  if (info.status === "completed") { showMedia(envelope); return true; }
  if (info.status === "failed") {
    var e = info.error || {};
    setStatus("failed: " + e.code + " " + (e.title || "") + (e.detail ? " \u2014 " + e.detail : ""), "failed");
    return true;
  }
  return false;
}

/** Reads server-sent events from a fetch response, calling onEvent(name, data) per frame. */
function readSse(response, onEvent) {
  var reader = response.body.getReader();
  var decoder = new TextDecoder();
  var buffer = "";
  function frame(text) {
    var name = "message", data = [];
    text.split(/\r?\n/).forEach(function (line) {
      if (line.indexOf("event:") === 0) name = line.slice(6).trim();
      else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
    });
    if (data.length) return onEvent(name, data.join("\n"));
  }
  function pump() {
    return reader.read().then(function (r) {
      if (r.done) { if (buffer.trim()) frame(buffer); return; }
      buffer += decoder.decode(r.value, { stream: true });
      var parts = buffer.split(/\r?\n\r?\n/);
      buffer = parts.pop();
      for (var i = 0; i < parts.length; i++) if (frame(parts[i]) === false) { reader.cancel(); return; }
      return pump();
    });
  }
  return pump();
}

function poll(url, run) {
  var delay = 1000;
  function once() {
    if (run !== state.run) return;
    fetch(url, { headers: authHeaders() }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) { setStatus("retrieve answered " + r.status + ": " + errorText(body), "failed"); return; }
        if (!showTask(body, run)) { delay = Math.min(delay * 1.5, 5000); setTimeout(once, delay); }
      });
    }).catch(function (e) { setStatus("retrieve failed: " + e.message + "; retrying", ""); setTimeout(once, 3000); });
  }
  $("via").textContent = "following by polling " + url.replace(location.origin, "");
  once();
}

function follow(taskUrl, run) {
  var eventsUrl = taskUrl + "/events";
  return fetch(eventsUrl, { headers: authHeaders({ accept: "text/event-stream" }) }).then(function (r) {
    var type = r.headers.get("content-type") || "";
    if (!r.ok || type.indexOf("text/event-stream") !== 0) { poll(taskUrl, run); return; }
    $("via").textContent = "following the event stream " + eventsUrl.replace(location.origin, "");
    var ended = false;
    return readSse(r, function (name, data) {
      var env;
      try { env = JSON.parse(data); } catch (e) { return; }
      if (showTask(env, run)) { ended = true; return false; }
    }).then(function () { if (!ended && run === state.run) poll(taskUrl, run); });
  }).catch(function () { poll(taskUrl, run); });
}

function chatResult(body) {
  var out = $("media");
  (body.choices || []).forEach(function (choice) { appendParts(choice.message && choice.message.content, out); });
}

function appendParts(content, out) {
  if (typeof content === "string") { $("text").textContent += content; return; }
  (content || []).forEach(function (part) {
    if (part.type === "text") $("text").textContent += part.text;
    if (part.type === "image_url" && part.image_url) {
      var url = part.image_url.url;
      var src = url.indexOf("data:") === 0 ? url : "data:image/png;base64," + url;
      out.appendChild(el("img", { src: src, class: "result", alt: "Generated image" }));
    }
  });
}

/** A model response; a background one (queued, in_progress) is polled on its retrieve route. */
function showResponse(body, path, run) {
  if (run !== state.run) return;
  $("text").textContent = body.output_text || "";
  $("raw").textContent = JSON.stringify(body, null, 2);
  var status = body.status || "completed";
  setStatus(status, status === "completed" ? "completed" : status === "failed" ? "failed" : "");
  if ((status === "queued" || status === "in_progress") && body.id) {
    $("via").textContent = "background response: polling " + path + "/" + body.id;
    setTimeout(function () {
      fetch(path + "/" + encodeURIComponent(body.id), { headers: authHeaders() }).then(function (r) {
        return r.json().then(function (next) {
          if (!r.ok) { setStatus("retrieve answered " + r.status + ": " + errorText(next), "failed"); return; }
          showResponse(next, path, run);
        });
      }).catch(function (e) { setStatus("retrieve failed: " + e.message, "failed"); });
    }, 1000);
  }
}

function submit(ev) {
  ev.preventDefault();
  if (!state.model) return;
  clearErrors();
  if (!token()) { say("form-msg", "Paste your API token first.", "field-error"); $("token").focus(); return; }
  collect().then(function (c) {
    if (c.errors.length) {
      c.errors.forEach(function (e) { showError(e[0], e[1]); });
      say("form-msg", c.errors.length + " field" + (c.errors.length === 1 ? " needs" : "s need") + " fixing before sending.", "field-error");
      var first = state.fields.find(function (f) { return f.name === c.errors[0][0]; });
      if (first) first.input.focus();
      return;
    }
    var run = ++state.run;
    var m = state.model;
    var path = m.routes[0].path;
    var headers = authHeaders({ "content-type": "application/json" });
    var outcome = $("outcome").value;
    if (m.kind === "task" && m.mode === "sandbox" && outcome) headers["x-sandbox-outcome"] = outcome;
    $("result").hidden = false;
    $("media").innerHTML = ""; $("text").textContent = ""; $("raw").textContent = ""; $("via").textContent = "";
    setProgress(null);
    setStatus("sending\u2026");
    if (window.matchMedia("(max-width: 860px)").matches) $("result").scrollIntoView({ block: "start" });
    $("submit").disabled = true;
    fetch(path, { method: "POST", headers: headers, body: JSON.stringify(c.body) }).then(function (r) {
      var type = r.headers.get("content-type") || "";
      if (r.ok && type.indexOf("text/event-stream") === 0) {
        setStatus("streaming\u2026");
        return readSse(r, function (name, data) {
          if (data === "[DONE]") return;
          var ev; try { ev = JSON.parse(data); } catch (e) { return; }
          if (m.kind === "chat") (ev.choices || []).forEach(function (ch) { appendParts(ch.delta && ch.delta.content, $("media")); });
          else if (ev.type === "response.output_text.delta") $("text").textContent += ev.delta;
          else if (ev.response && ev.response.status) setStatus(ev.response.status, ev.response.status === "completed" ? "completed" : "");
          $("raw").textContent = data;
        }).then(function () { if ($("status").textContent === "streaming\u2026") setStatus("completed", "completed"); });
      }
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (!r.ok) {
          var named = r.status === 400 && showServerErrors(body);
          setStatus(r.status + " " + errorText(body), "failed");
          if (named) say("form-msg", "The gateway refused the request (400); see the fields marked below.", "field-error");
          $("raw").textContent = JSON.stringify(body, null, 2);
          return;
        }
        $("raw").textContent = JSON.stringify(body, null, 2);
        if (m.kind === "task") {
          var id = body.task_info && body.task_info.id;
          $("task-id").textContent = "task " + id;
          showTask({ task_info: { status: "pending" } }, run);
          return follow(location.origin + path + "/" + id, run);
        }
        if (m.kind === "chat") { chatResult(body); setStatus("completed", "completed"); return; }
        showResponse(body, path, run);
      });
    }).catch(function (e) { setStatus("request failed: " + e.message, "failed"); })
      .then(function () { $("submit").disabled = false; });
  });
}

function init() {
  var saved = localStorage.getItem(TOKEN_KEY);
  if (saved) $("token").value = saved;
  $("token-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    localStorage.setItem(TOKEN_KEY, token());
    say("token-msg", "Saved in this browser (localStorage).");
    loadModels();
  });
  $("forget").addEventListener("click", function () {
    localStorage.removeItem(TOKEN_KEY); $("token").value = ""; say("token-msg", "Forgotten.");
  });
  $("model").addEventListener("change", chooseModel);
  $("request").addEventListener("submit", submit);
  $("reset").addEventListener("click", function () { buildForm(); clearErrors(); });
  if (saved) loadModels();
}
init();
`

/** The whole page. */
export const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><link rel="icon" href="data:,">
<title>Genway playground</title><style>${css}
.layout{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:20px;align-items:start}
@media (max-width:860px){.layout{grid-template-columns:minmax(0,1fr)}}
label.hint{font-weight:400;color:var(--muted);font-size:13px;margin-top:6px}
#raw{max-height:320px}#text{white-space:pre-wrap;font-size:15px}
#result{position:sticky;top:8px}@media (max-width:860px){#result{position:static}}
#media video,#media img.result{width:100%;height:auto;margin-top:8px}
</style></head><body>
<header class="top"><a class="brand" href="/docs">Genway</a><nav aria-label="Site"><a href="/docs">API reference</a><a href="/playground" aria-current="page">Playground</a><a href="/openapi.json">openapi.json</a></nav></header>
<main>
<h1>Playground</h1>
<p class="muted">Try any model of this gateway. Requests go to this gateway only, with your token; sandboxed models answer with sample results.</p>
<form id="token-form" class="panel" autocomplete="off">
<label for="token">API token<span class="hint">Kept in this browser's localStorage, sent only to this gateway as <code>Authorization: Bearer</code>.</span></label>
<div class="row"><input id="token" name="token" type="password" style="flex:1;min-width:200px" aria-describedby="token-msg"><button type="submit" id="use-token">Use token</button><button type="button" class="secondary" id="forget">Forget</button></div>
<div id="token-msg" role="status"></div>
</form>
<div class="layout">
<form id="request" novalidate>
<label for="model">Model<span class="hint"><span id="model-info"></span> <a id="docs-link" href="/docs">reference</a></span></label>
<select id="model" disabled aria-describedby="models-msg"><option>Paste a token first</option></select>
<div id="models-msg" role="status" class="muted"></div>
<div id="fields"></div>
<div id="outcome-row" class="field" hidden>
<label for="outcome">Sandbox outcome<span class="hint">Sent as <code>x-sandbox-outcome</code> to try the failure path.</span></label>
<select id="outcome"><option value="">complete normally</option><option value="failed:400">fail with 400 (invalid request)</option><option value="failed:3001">fail with 3001 (execution error)</option></select>
</div>
<div id="form-msg" role="alert"></div>
<div class="row" style="margin-top:12px"><button type="submit" id="submit" disabled>Send</button><button type="button" class="secondary" id="reset">Reset to example</button></div>
</form>
<section id="result" class="panel" hidden aria-labelledby="result-title">
<h2 id="result-title" style="border:0;margin-top:0;padding:0">Result</h2>
<p><span id="status" class="status" role="status" aria-live="polite"></span> <span id="eta" class="muted"></span></p>
<progress id="progress" max="100" hidden aria-label="Progress"></progress>
<p class="muted"><span id="task-id"></span> <span id="via"></span></p>
<div id="media"></div>
<div id="text" aria-live="polite"></div>
<details><summary>Last JSON received</summary><pre id="raw"></pre></details>
</section>
</div>
</main>
<script>${script}</script>
</body></html>`
