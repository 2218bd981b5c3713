// Unit tests of the UI's pure text functions (no browser): citation markers in a
// streamed answer; finding a chunk's text on a PDF page's text layer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { citationParts, queryTerms } from "../../ui/js/dom.js";
import { routeText } from "../../ui/js/route.js";
import { statsLine } from "../../ui/js/stats.js";
import { normalize, pageText, locate, findAll, itemRanges, passageText, tableCells, quoteTable } from "../../ui/js/locate.js";

test("a route line says how the pages were read before the back matter it passed over", () => {
  const whole = { route: "whole", label: "Read all 5 pages of short.pdf but the index", passed_over: "the index" };
  assert.equal(routeText({ ...whole, how: "whole" }), "Read all 5 pages of short.pdf in one prompt, but the index");
  assert.equal(routeText({ ...whole, how: "map_reduce", label: "Read all 40 pages of a.pdf but the index and references", passed_over: "the index and references" }),
    "Read all 40 pages of a.pdf part by part, then summarized, but the index and references");
  assert.equal(routeText({ route: "whole", label: "Read all 4 pages of wasysym.pdf", how: "cached" }),
    "Read all 4 pages of wasysym.pdf from its kept summary");
  // A file name with the same words, and no back matter passed over: left as it is.
  assert.equal(routeText({ route: "whole", label: "Read all 3 pages of a but the index.pdf", how: "whole" }),
    "Read all 3 pages of a but the index.pdf in one prompt");
  assert.equal(routeText({ route: "search", label: "Searched: top 4 passages", how: "" }), "Searched: top 4 passages");
});

test("the stats line says when the token limit cut the answer off", () => {
  const s = { model: "qwen.gguf", llm_calls: 1, output_tokens: 256, tokens_per_s: 60, secs: 3.25 };
  assert.equal(statsLine(s), "qwen · 1 LLM call · 256 tokens · 60.0 tokens/s · 3.3 s");
  assert.equal(statsLine({ ...s, cut_off_after: 256 }),
    "qwen · 1 LLM call · 256 tokens · 60.0 tokens/s · 3.3 s · cut off at 256 tokens: raise Max tokens in Settings for more");
});

test("a table chunk is found on the page by its rows, without the Markdown or its header", () => {
  const md = "| Option | Default | Meaning |\n| --- | --- | --- |\n| bookmarks | true | 是否生成书签 |\n| a\\|b | x | y |";
  assert.equal(passageText(md), "bookmarks true 是否生成书签\na|b x y");
  assert.equal(passageText("Plain text | with a pipe."), "Plain text | with a pipe.");
  // The rows as PDF.js lays them out, below the header: the row is found, not the header.
  const page = pageText(["Option", "Default", "Meaning", "pdftitle=", "空", "标题", "bookmarks=⟨true|false⟩", "true", "是否生成书签"]);
  const hit = locate(normalize(passageText("| Option | Default | Meaning |\n| --- | --- | --- |\n| bookmarks=⟨true\\|false⟩ | true | 是否生成书签 |")).text, page.text);
  assert.ok(hit && hit.found === 1);
  assert.equal(page.text.slice(hit.start, hit.end), normalize("bookmarks=⟨true|false⟩ true 是否生成书签").text);
});

test("a table chunk under its caption: the caption apart, the rows alone marked", () => {
  const md = "Table 8.4: Counter formats\n\n| Command | Style |\n| --- | --- |\n| \\alph | letters |";
  assert.deepEqual(tableCells(md), { caption: "Table 8.4: Counter formats", header: ["Command", "Style"], rows: [["\\alph", "letters"]] });
  assert.equal(passageText(md), "\\alph letters");
  assert.equal(tableCells("| a | b |\n| --- | --- |\n| c | d |").caption, "");
  // Prose that merely starts with a line is not a table.
  assert.equal(tableCells("A line.\n\nMore prose | with a pipe."), null);
});

test("a quote of a table's rows is a table, read on into the table's next chunk without its head again", () => {
  const head = "2.3 Options — Table 1: Options\n\n| Option | Type |\n| --- | --- |";
  const quote = `${head}\n| inkcolor | name |\n| blotter | boolean |\n${head}\n| nibstyle | choice |`;
  assert.deepEqual(quoteTable(quote), { caption: "2.3 Options — Table 1: Options", header: ["Option", "Type"],
    rows: [["inkcolor", "name"], ["blotter", "boolean"], ["nibstyle", "choice"]] });
  // Reading on into prose: shown as text.
  assert.equal(quoteTable(`${head}\n| inkcolor | name |\nLoad it with the usual command.`), null);
  assert.equal(quoteTable("Plain words. And more."), null);
});

test("citation markers become citations, whole once streamed", () => {
  const known = new Set([1, 2]);
  assert.deepEqual(citationParts("Water is wet [2], in the evening [1].", known),
    ["Water is wet ", { n: 2 }, ", in the evening ", { n: 1 }, "."]);
  // Unknown numbers and other brackets stay text.
  assert.deepEqual(citationParts("see [7] and [x] and [12", known), ["see [7] and [x] and [12"]);
  // A marker split across tokens: text while partial, one citation once whole.
  const tokens = ["It is red ", "[", "2", "]", " today"];
  let text = "";
  const seen = [];
  for (const t of tokens) {
    text += t;
    seen.push(citationParts(text, known).filter((p) => typeof p !== "string").length);
  }
  assert.deepEqual(seen, [0, 0, 0, 1, 1]);
  assert.deepEqual(citationParts(text, known), ["It is red ", { n: 2 }, " today"]);
  // Adjacent markers.
  assert.deepEqual(citationParts("[1][2]", known), [{ n: 1 }, { n: 2 }]);
});

test("a chunk is found on the page whatever the spacing, hyphenation and ligatures", () => {
  // PDF.js's text items for a page, and the same passage as Quire's extractor split it.
  const items = ["Chapter 2 ", "Options", "The nointe-", "grals option keeps the inte-", "gral signs of LaTeX", "and amsmath ", "untouched; ﬁnally, ", "other text follows."];
  const page = pageText(items);
  const chunk = "The nointegrals option keeps the integral signs of LaTeX and amsmath untouched; finally,";
  const hit = locate(normalize(chunk).text, page.text);
  assert.ok(hit, "not found");
  const ranges = itemRanges(page, hit.start, hit.end, items);
  const marked = ranges.map((r) => items[r.item].slice(r.from, r.to)).join("|");
  assert.equal(marked, "The nointe|grals option keeps the inte|gral signs of LaTeX|and amsmath|untouched; ﬁnally");
  assert.equal(ranges[0].item, 2);
});

test("a chunk that differs in places is still found, at the right place", () => {
  const filler = "Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor. ";
  const passage = "Load wasysym with the nointegrals option; it neither alters existing integral symbols nor adds new ones, so amsmath keeps its own.";
  const items = [filler.repeat(4), passage.replace("existing", "exist- ing").replace("symbols", "sym bols"), filler.repeat(3)];
  const page = pageText(items);
  // The extractor lost a word and read a glyph differently.
  const chunk = passage.replace("so ", "").replace("keeps", "kceps");
  const hit = locate(normalize(chunk).text, page.text);
  assert.ok(hit && hit.found > 0.5, JSON.stringify(hit));
  const text = itemRanges(page, hit.start, hit.end, items).map((r) => items[r.item].slice(r.from, r.to)).join("");
  assert.ok(text.startsWith("Load wasysym"), text);
  assert.ok(text.endsWith("its own"), text);
  // Text that is not on the page is not found.
  assert.equal(locate(normalize("An entirely different paragraph about sailing boats and harbours.").text, page.text), null);
});

test("a chunk running onto the next page is found in part on each", () => {
  const first = "Beginning of the page. The quokkaberry grows on small islands where";
  const second = "the winters are mild and the soil is sandy. Next section.";
  const chunk = "The quokkaberry grows on small islands where the winters are mild and the soil is sandy.";
  const p1 = pageText([first]);
  const p2 = pageText([second]);
  const h1 = locate(normalize(chunk).text, p1.text);
  const h2 = locate(normalize(chunk).text, p2.text);
  assert.ok(h1 && h2);
  assert.equal(itemRanges(p1, h1.start, h1.end, [first]).map((r) => first.slice(r.from, r.to)).join(""), "The quokkaberry grows on small islands where");
  assert.equal(itemRanges(p2, h2.start, h2.end, [second]).map((r) => second.slice(r.from, r.to)).join(""), "the winters are mild and the soil is sandy");
});

test("Chinese text is found, and search finds every place", () => {
  const items = ["第一章 简介", "LaTeX 是一个排版系统，", "适合排版科技文档。排版系统很好。"];
  const page = pageText(items);
  const hit = locate(normalize("LaTeX是一个排版系统，适合排版科技文档。").text, page.text);
  assert.ok(hit);
  assert.equal(itemRanges(page, hit.start, hit.end, items).map((r) => items[r.item].slice(r.from, r.to)).join("|"), "LaTeX 是一个排版系统|适合排版科技文档");
  assert.deepEqual(findAll(normalize("排版系统").text, page.text).length, 2);
});

test("every UI module parses", () => {
  const dir = fileURLToPath(new URL("../../ui/js/", import.meta.url));
  const tmp = mkdtempSync(join(tmpdir(), "quire-ui-"));
  try {
    for (const f of readdirSync(dir).filter((n) => n.endsWith(".js"))) {
      const copy = join(tmp, f.replace(/\.js$/, ".mjs"));
      copyFileSync(join(dir, f), copy);
      const r = spawnSync(process.execPath, ["--check", copy], { encoding: "utf8" });
      assert.equal(r.status, 0, `${f}: ${r.stderr}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("a Chinese question's terms are marked without spaces to split on", () => {
  const terms = queryTerms("有一大段内容暂时不想让 LaTeX 编译");
  for (const t of ["一大", "大段", "段内", "编译", "latex"]) assert.ok(terms.includes(t), `${t} not in ${terms.join(",")}`);
  assert.ok(!terms.some((t) => /\s/.test(t)));
  assert.deepEqual(queryTerms("tlmgr 的 dry-run 选项").filter((t) => /\p{Script=Han}/u.test(t)), ["选项"]);
});
