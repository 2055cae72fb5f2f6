// validate.mjs - a live response against the OpenAPI description: is its
// status documented for its route and method, does it carry the headers the
// description requires, and does its body validate (ajv) against the schema
// of its media type.  Used by openapi_check.mjs on the responses it gets
// itself and on every response the C test suite recorded
// (ATTND_TEST_RECORD, tests/daemon.c).
//
//   node tests/openapi/validate.mjs OPENAPI.json NODE_MODULES RECORD_DIR
//
// validates a directory of records and prints a summary; exits 1 on any
// violation.
import { createRequire } from "module";
import fs from "fs";
import path from "path";

// A key as a JSON pointer's token.
const esc = (s) => s.replace(/~/g, "~0").replace(/\//g, "~1");

// The description's routes as regular expressions, most specific first.
function routeMatchers(doc) {
  return Object.keys(doc.paths)
    .map((p) => ({
      template: p,
      re: new RegExp("^" + p.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]+") + "$"),
    }))
    .sort((a, b) => b.template.length - a.template.length);
}

// The path a request target names: origin-form or absolute-form, query cut,
// percent-escapes decoded (as the daemon decodes them); null when it cannot be.
export function targetPath(target) {
  let t = target;
  const abs = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/]*/.exec(t);
  if (abs) t = t.slice(abs[0].length) || "/";
  t = t.split("?")[0];
  try {
    return decodeURIComponent(t);
  } catch {
    return null;
  }
}

// Whether a request target is under /v2, as the daemon tells it (errors
// there are {"error": "..."}): by its path, or, when that cannot be decoded,
// by what decodes before the fault (the daemon's framing_path does the same).
function underV2(target, p) {
  if (p === null) {
    const abs = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/]*/.exec(target);
    const t = (abs ? target.slice(abs[0].length) || "/" : target).split("?")[0];
    const bad = t.search(/%(?![0-9a-fA-F]{2})|%00/);
    p = (bad < 0 ? t : t.slice(0, bad)).replace(/%([0-9a-fA-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));
  } else if (p.includes("\0")) {
    p = p.slice(0, p.indexOf("\0")); // an escaped NUL: what came before it
  }
  return p === "/v2" || p.startsWith("/v2/");
}

// A response's raw text (status line, headers, blank line, body) as
// {status, headers (lower-case names), body (Buffer)}; a chunked body decoded
// unless it already is (raw false).
export function parseResponse(buf, raw = true) {
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) throw new Error("no end of headers");
  const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])[1]);
  const headers = {};
  for (const l of lines.slice(1)) {
    const c = l.indexOf(":");
    if (c > 0) headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
  }
  let body = buf.subarray(end + 4);
  if (raw && /chunked/i.test(headers["transfer-encoding"] || "")) {
    const parts = [];
    let i = 0;
    for (;;) {
      const eol = body.indexOf("\r\n", i);
      if (eol < 0) break;
      const n = parseInt(body.subarray(i, eol).toString("latin1"), 16);
      if (!(n > 0)) break;
      parts.push(body.subarray(eol + 2, eol + 2 + n));
      i = eol + 2 + n + 2;
    }
    body = Buffer.concat(parts);
  }
  return { status, headers, body };
}

export class Validator {
  constructor(doc, modulesDir) {
    const require = createRequire(path.join(path.resolve(modulesDir), "noop.js"));
    const Ajv = require("ajv");
    const addFormats = require("ajv-formats");
    this.doc = doc;
    this.ajv = new (Ajv.default || Ajv)({ strict: false, allErrors: false });
    (addFormats.default || addFormats)(this.ajv);
    this.ajv.addSchema(doc, "openapi.json");
    this.routes = routeMatchers(doc);
    this.compiled = new Map();
    this.seen = new Map(); // "METHOD template status" -> count
    this.requests = 0; // request bodies validated
  }

  schemaAt(pointer) {
    let v = this.compiled.get(pointer);
    if (!v) {
      v = this.ajv.compile({ $ref: "openapi.json#" + pointer });
      this.compiled.set(pointer, v);
    }
    return v;
  }

  // Problems with one response to (method, target): an array of strings.
  // request: the request's body (a Buffer), when known; one the daemon
  // took (2xx) and that is JSON must validate against the operation's
  // request schema, so the description is no stricter than the daemon.
  check(method, target, res, request) {
    const problems = [];
    const p = targetPath(target);
    const route = p === null ? null : this.routes.find((r) => r.re.test(p));
    const v2 = underV2(target, p);
    const m = method.toLowerCase();
    const item = route && this.doc.paths[route.template];
    let op = item && item[m];
    let where;
    let resp;
    if (!method) {
      // The request line was sent in pieces the record does not hold: an
      // error in either protocol's form, with a status some route documents.
      where = "(request line unknown)";
      const statuses = new Set(Object.values(this.doc.paths).flatMap((i) =>
        Object.values(i).flatMap((o) => Object.keys((o && o.responses) || {}))));
      if (!statuses.has(String(res.status)) || res.status < 400)
        problems.push(`status ${res.status} is no error a route documents`);
      const e = JSON.parse(res.body.toString("utf8") || "{}");
      const schema = { $ref: "#/components/schemas/" + (typeof e.error === "string" ? "V2Error" : "Error") };
      resp = { content: { "application/json": { schema } }, pointer: schema.$ref.slice(1) };
    } else if (!route) {
      // No route: a 404, a 414 (a path over 255 bytes: no route is that
      // long), or an answer decided before routing (framing); in either
      // form of error.
      where = "(no route)";
      if (![400, 404, 405, 413, 414, 501].includes(res.status))
        problems.push(`status ${res.status} for a target no route matches`);
      const schema = { $ref: "#/components/schemas/" + (v2 ? "V2Error" : "Error") };
      resp = { content: { "application/json": { schema } }, pointer: schema.$ref.slice(1) };
    } else if (!op) {
      // A method the route does not take: 405 as each operation documents
      // it, or an answer decided before the method (framing, a 414 for a
      // path over 255 bytes).
      where = `${route.template} ${method}`;
      op = Object.values(item).find((o) => o && o.responses && o.responses[String(res.status)]);
      if (!op || ![400, 405, 413, 414, 501].includes(res.status))
        problems.push(`${method} ${route.template}: status ${res.status} is not documented`);
      resp = op && op.responses[String(res.status)];
    } else {
      where = `${route.template} ${method}`;
      resp = op.responses[String(res.status)];
      if (!resp) problems.push(`${where}: status ${res.status} is not documented`);
    }
    const key = `${method} ${route ? route.template : "(no route)"} ${res.status}`;
    this.seen.set(key, (this.seen.get(key) || 0) + 1);
    if (!resp) return problems;
    if (request && request.length && res.status < 300 && op && op.requestBody) {
      const media = op.requestBody.content["application/json"];
      let value;
      try {
        value = JSON.parse(request.toString("utf8"));
      } catch {
        value = undefined; // binary tensors after the JSON: not one JSON document
      }
      if (media && value !== undefined) {
        const ptr = `/paths/${esc(route.template)}/${m}/requestBody/content/application~1json/schema`;
        const validate = this.schemaAt(ptr);
        if (!validate(value)) {
          const e = validate.errors[0];
          problems.push(`${where}: a request the daemon took does not match ${ptr}: ${e.instancePath} ${e.message}`);
        }
        this.requests++;
      }
    }
    if (resp.$ref) resp = this.resolve(resp.$ref);
    for (const [name, h] of Object.entries(resp.headers || {}))
      if (h.required && !(name.toLowerCase() in res.headers))
        problems.push(`${where} ${res.status}: header ${name} missing`);
    if (m === "head" || res.body.length === 0) {
      if (m !== "head" && resp.content && res.status !== 204)
        problems.push(`${where} ${res.status}: empty body where ${Object.keys(resp.content)} is documented`);
      return problems;
    }
    const ctype = (res.headers["content-type"] || "").split(";")[0].trim().toLowerCase();
    const media = resp.content && resp.content[ctype];
    if (!media) {
      problems.push(`${where} ${res.status}: Content-Type ${ctype || "(none)"} is not documented` +
        (resp.content ? ` (${Object.keys(resp.content)})` : " (no body)"));
      return problems;
    }
    if (ctype !== "application/json") return problems;
    let body = res.body;
    const ihcl = res.headers["inference-header-content-length"];
    if (ihcl !== undefined) body = body.subarray(0, Number(ihcl));
    let value;
    try {
      value = JSON.parse(body.toString("utf8"));
    } catch (e) {
      problems.push(`${where} ${res.status}: body is not JSON: ${e.message}`);
      return problems;
    }
    const ptr = this.pointerOf(route, m, op, res.status, ctype, resp);
    const validate = this.schemaAt(ptr);
    if (!validate(value)) {
      const e = validate.errors[0];
      problems.push(`${where} ${res.status}: body does not match ${ptr}: ${e.instancePath} ${e.message}`);
    }
    return problems;
  }

  resolve(ref) {
    return ref
      .slice(2)
      .split("/")
      .reduce((o, k) => o[k.replace(/~1/g, "/").replace(/~0/g, "~")], this.doc);
  }

  // The JSON pointer of a response's schema.
  pointerOf(route, m, op, status, ctype, resp) {
    const r = route && op && op.responses[String(status)];
    if (r && r.$ref) return r.$ref.slice(1) + `/content/${esc(ctype)}/schema`;
    if (r) {
      const opName = Object.keys(this.doc.paths[route.template]).find(
        (k) => this.doc.paths[route.template][k] === op);
      return `/paths/${esc(route.template)}/${opName}/responses/${status}/content/${esc(ctype)}/schema`;
    }
    return resp.pointer; // no route: the error schema itself
  }
}

// Reads DIR/*.http records (tests/daemon.c) and validates each.
export function validateRecords(validator, dir) {
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".http")) : [];
  const problems = [];
  let n = 0;
  for (const f of files.sort()) {
    const buf = fs.readFileSync(path.join(dir, f));
    const nl = buf.indexOf("\n");
    const req = JSON.parse(buf.subarray(0, nl).toString("utf8"));
    let res;
    try {
      res = parseResponse(buf.subarray(nl + 1), req.raw);
    } catch (e) {
      problems.push(`${f}: ${req.method} ${req.target}: unreadable response (${e.message})`);
      continue;
    }
    n++;
    const reqFile = path.join(dir, f.replace(/\.http$/, ".req"));
    const body = fs.existsSync(reqFile) ? fs.readFileSync(reqFile) : null;
    for (const p of validator.check(req.method, req.target, res, body))
      problems.push(`${f}: ${req.method} ${req.target}: ${p}`);
  }
  return { n, problems };
}

if (process.argv[1] && import.meta.url === "file://" + path.resolve(process.argv[1])) {
  const [docPath, modulesDir, dir] = process.argv.slice(2);
  const v = new Validator(JSON.parse(fs.readFileSync(docPath, "utf8")), modulesDir);
  const { n, problems } = validateRecords(v, dir);
  for (const p of problems.slice(0, 50)) console.log(p);
  console.log(`validate: ${n} responses, ${v.requests} requests, ${problems.length} problems`);
  process.exit(problems.length ? 1 : 0);
}
