// links.mjs - checks that the relative links of Markdown docs reach a file
// of the repository and a heading of it (make docs-links); from the root:
//
//   node tests/docs/links.mjs README.md DEVELOPERS.md docs/*.md
//
// Links are inline ones, [text](target) and ![alt](target), and reference
// definitions, [label]: target, outside fenced code blocks, inline code spans
// and HTML comments.  http://, https:// and mailto: targets are not checked.
// A path is taken relative to the linking file (relative to the repository
// root when it starts with /); a ?query is ignored.  An anchor must be one
// of the target's heading slugs, made the way GitHub makes them (see slug),
// or an explicit <a id="..."> / <a name="...">.  Each broken link is printed
// as FILE:LINE: broken link TARGET (reason); exit 1 if there is any.  So
// is a source comment's pointer to a section that is not there (--code).  Then
// the prose's history and counts (HISTORY below), which fail it too.
import fs from "node:fs";
import path from "node:path";

const root = process.cwd();
const blank = (s) => s.replace(/[^\n]/g, " "); // keeps offsets and line numbers

// The file's text with fenced code blocks and HTML comments blanked out:
// what remains is prose and headings.
function unfenced(text) {
  let fence = null; // the opening fence (``` or ~~~, maybe longer) while inside one
  const lines = text.split("\n").map((line) => {
    const m = /^\s*(`{3,}|~{3,})(.*)$/.exec(line);
    if (fence === null) {
      if (m && !(m[1][0] === "`" && m[2].includes("`"))) fence = m[1];
      return fence === null ? line : "";
    }
    if (m && m[1][0] === fence[0] && m[1].length >= fence.length && m[2].trim() === "") fence = null;
    return "";
  });
  return lines.join("\n").replace(/<!--[\s\S]*?-->/g, blank);
}

// The same with code spans blanked out too: a run of n backticks up to the
// next run of exactly n, inside one paragraph (no blank line between).
const prose = (text) =>
  unfenced(text).replace(/(`+)(?!`)(?:(?!\n\s*\n)[\s\S])*?(?<!`)\1(?!`)/g, blank);

// GitHub's anchor for a heading's text: the text as rendered (code spans'
// backticks, links' URLs, HTML tags and emphasis markers dropped), lowercased,
// every character that is not a letter, mark, decimal digit, connector
// punctuation (_), hyphen or space removed (Ruby's /[^\p{Word}\- ]/, which
// html-pipeline's TableOfContentsFilter uses), then each space made a hyphen.
function slug(heading) {
  const text = heading
    .split(/(`+[^`]*`+)/) // odd pieces are code spans: keep their text as is
    .map((piece, i) => i % 2 ? piece.replace(/^`+|`+$/g, "") : piece
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // [text](url) -> text
      .replace(/<[^>]*>/g, "") // HTML tags
      .replace(/&#?\w+;/g, "") // entities (what they stand for is mostly punctuation)
      .replace(/\\_/g, "\uE000") // an escaped _ stays, see below
      .replace(/(^|[^\p{L}\p{N}])_+|_+(?![\p{L}\p{N}])/gu, "$1") // _emphasis_, not snake_case
      .replace(/\uE000/g, "_"))
    .join("");
  return text.toLowerCase()
    .replace(/[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

// The anchors of a Markdown file: its ATX headings' slugs, with -1, -2, ...
// on repeats as GitHub numbers them, and its explicit <a id|name="...">.
const anchorCache = new Map();
function anchors(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const text = unfenced(fs.readFileSync(file, "utf8"));
  const found = new Set(), seen = new Map();
  for (const line of text.split("\n")) {
    const m = /^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1] ?? "");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n ? `${base}-${n}` : base);
  }
  for (const m of text.matchAll(/<a\s[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']/gi)) found.add(m[1]);
  anchorCache.set(file, found);
  return found;
}

// Why a target of FILE is broken, or null when it is fine.
function problem(file, target) {
  const hash = target.indexOf("#");
  const [where, anchor] = hash < 0 ? [target, null] : [target.slice(0, hash), target.slice(hash + 1)];
  let rel;
  try {
    rel = decodeURIComponent(where.replace(/\?.*$/, ""));
  } catch {
    return "malformed percent-encoding";
  }
  const dest = rel === "" ? path.resolve(file)
    : rel.startsWith("/") ? path.join(root, rel) : path.resolve(path.dirname(file), rel);
  const inRepo = path.relative(root, dest);
  if (inRepo.startsWith("..") || path.isAbsolute(inRepo)) return "outside the repository";
  if (!fs.existsSync(dest)) return `no such file or directory: ${inRepo || "."}`;
  if (anchor === null || anchor === "" || !/\.md$/i.test(dest) || !fs.statSync(dest).isFile()) return null;
  let name = anchor;
  try { name = decodeURIComponent(anchor); } catch { /* keep it as written */ }
  return anchors(dest).has(name) ? null : `no heading or anchor #${name} in ${inRepo}`;
}

// FILE.md ... [--code SOURCE ...]: the docs, then the source files whose
// comments point into them.
const args = process.argv.slice(2);
const codeAt = args.indexOf("--code");
const files = codeAt < 0 ? args : args.slice(0, codeAt);
const codeFiles = codeAt < 0 ? [] : args.slice(codeAt + 1);
if (files.length === 0) {
  console.error("usage: node tests/docs/links.mjs FILE.md [FILE.md ...] [--code SOURCE ...]");
  process.exit(2);
}
let links = 0, broken = 0;
for (const file of files) {
  let text;
  try {
    text = prose(fs.readFileSync(file, "utf8"));
  } catch (e) {
    console.log(`${file}: cannot read (${e.code ?? e.message})`);
    broken++;
    continue;
  }
  // [text](target "title") and ![alt](<target>); the text may hold one level
  // of [brackets] and run over lines.  Then [label]: target definitions.
  const inline = /!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g;
  const defined = /^ {0,3}\[(?!\^)(?:[^\]\\\n]|\\.)+\]:[ \t]*\n?[ \t]*(<[^>\n]*>|\S+)/gm;
  const found = [...text.matchAll(inline), ...text.matchAll(defined)].sort((a, b) => a.index - b.index);
  for (const m of found) {
    links++;
    const target = m[1].replace(/^<(.*)>$/, "$1");
    if (/^(https?:\/\/|mailto:)/i.test(target)) continue;
    const why = target === "" ? "empty target" : problem(file, target);
    if (why === null) continue;
    // The line of the target itself (the link's text may have run over lines).
    const line = text.slice(0, m.index + m[0].lastIndexOf(m[1])).split("\n").length;
    console.log(`${file}:${line}: broken link ${target} (${why})`);
    broken++;
  }
}
// A source comment that names a section, docs/NAME.md, "Heading" (or
// docs/NAME.md ("Heading")), must name one the page has: the quoted text
// (as far as its line goes) begins one of the page's headings.
const headingsOf = new Map();
function headings(file) {
  if (!headingsOf.has(file)) {
    const text = fs.existsSync(file) ? unfenced(fs.readFileSync(file, "utf8")) : "";
    headingsOf.set(file, [...text.matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$/gm)]
      .map((m) => m[1].replace(/`/g, "").toLowerCase()));
  }
  return headingsOf.get(file);
}
let pointers = 0;
for (const file of codeFiles) {
  const text = fs.readFileSync(file, "utf8");
  for (const m of text.matchAll(/docs\/([a-z]+)\.md,?\s*\(?"([^"\n]+)/g)) {
    pointers++;
    const page = `docs/${m[1]}.md`, said = m[2].replace(/`/g, "").trim().toLowerCase();
    if (headings(page).some((h) => h.startsWith(said))) continue;
    const line = text.slice(0, m.index).split("\n").length;
    console.log(`${file}:${line}: points to ${page}, "${m[2].trim()}", which has no such heading`);
    broken++;
  }
}
console.log(`docs links: ${links} links in ${files.length} files, ${broken} broken` +
            (codeFiles.length ? ` (with ${pointers} pointers from ${codeFiles.length} source files)` : ""));

// History and counts stay out of the docs: git log carries what changed when,
// and a count of the code's own things (tests, settings, routes...) goes
// stale the day one is added, so the code prints it instead (make test's
// summary, attnd --help, /openapi.json).  Prose (code blocks and spans
// aside) may not name an issue, a session, a date of a run or a commit, nor
// state such a count.
const HISTORY = [
  [/\bissues? #?\d+/gi, "names an issue"],
  [/\bsessions?\b/gi, "names a session"],
  [/\b20\d\d-\d\d-\d\d\b/g, "dates a run"],
  [/\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/g, "names a commit"],
  [/\b\d[\d,]*\s+(?:unit |daemon |C |Check )?(?:tests|checks|test cases|suites|settings|flags|routes|fixtures|source files|lines of (?:C|code))\b/gi,
   "states a count the code can print"],
];
let stale = 0;
for (const file of files) {
  let text;
  try { text = prose(fs.readFileSync(file, "utf8")); } catch { continue; }
  for (const [re, why] of HISTORY)
    for (const m of text.matchAll(re)) {
      if (/^\d+e\d+$/.test(m[0])) continue; // a float's exponent, not a commit
      console.log(`${file}:${text.slice(0, m.index).split("\n").length}: '${m[0]}' ${why}`);
      stale++;
    }
}
console.log(`docs prose: ${stale} mentions of history or counts`);
process.exit(broken > 0 || stale > 0 ? 1 : 0);
