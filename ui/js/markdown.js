// Model output as Markdown (CommonMark, with GFM tables and strikethrough), built as
// elements and text nodes. markdown-it (vendored) only parses: its tokens are turned
// into DOM nodes here, from an allow-list of elements. No HTML string is ever made or
// parsed, so nothing in an answer can become markup or code: raw HTML stays text (the
// parser runs with `html: false`), links do not navigate (their address shows on
// hover), images do not load (their description shows), attributes are never copied.
import markdownit from "../vendor/markdown-it/markdown-it.min.mjs";
import { el } from "./dom.js";

const md = markdownit({ html: false, linkify: false, typographer: false, breaks: false });
md.enable(["table", "strikethrough"]);

/** Block and inline tokens that open an element, and the element. Headings are shown
 *  smaller than a page's own (an answer sits inside a chat). */
const TAGS = {
  paragraph_open: "p",
  bullet_list_open: "ul",
  ordered_list_open: "ol",
  list_item_open: "li",
  blockquote_open: "blockquote",
  table_open: "table",
  thead_open: "thead",
  tbody_open: "tbody",
  tr_open: "tr",
  th_open: "th",
  td_open: "td",
  em_open: "em",
  strong_open: "strong",
  s_open: "s",
};
const HEADINGS = { h1: "h3", h2: "h4", h3: "h5", h4: "h6", h5: "h6", h6: "h6" };

/** Render `src` into a fragment. `text(s)` turns a run of plain text into nodes (the
 *  caller's hook, e.g. for citation markers; text nodes by default). */
export function renderMarkdown(src, text = (s) => document.createTextNode(s)) {
  const frag = document.createDocumentFragment();
  const stack = [frag];
  const top = () => stack[stack.length - 1];
  for (const t of md.parse(src, {})) {
    if (t.type === "inline") {
      inline(t.children || [], top(), text);
    } else if (t.hidden && (t.type === "paragraph_open" || t.type === "paragraph_close")) {
      // A tight list's paragraphs: their text goes straight into the item.
    } else if (t.nesting === 1) {
      const tag = t.type === "heading_open" ? HEADINGS[t.tag] : TAGS[t.type];
      const node = el(tag || "div", blockAttrs(t));
      top().append(node);
      stack.push(node);
    } else if (t.nesting === -1) {
      if (stack.length > 1) stack.pop();
    } else if (t.type === "fence" || t.type === "code_block") {
      top().append(codeBlock(t.content, t.info));
    } else if (t.type === "hr") {
      top().append(el("hr"));
    }
  }
  return frag;
}

/** The few attributes kept: a list's start number, a table cell's alignment (as a
 *  class, never a style). */
function blockAttrs(t) {
  const attrs = {};
  if (t.type === "ordered_list_open") {
    const start = Number(t.attrGet("start"));
    if (Number.isInteger(start) && start > 1) attrs.start = start;
  }
  if (t.type === "th_open" || t.type === "td_open") {
    const m = /text-align:(left|right|center)/.exec(t.attrGet("style") || "");
    if (m) attrs.class = `align-${m[1]}`;
  }
  return attrs;
}

function inline(tokens, parent, text) {
  const stack = [parent];
  const top = () => stack[stack.length - 1];
  for (const t of tokens) {
    switch (t.type) {
      case "text": top().append(text(t.content)); break;
      case "softbreak": top().append(document.createTextNode("\n")); break;
      case "hardbreak": top().append(el("br")); break;
      case "code_inline": top().append(el("code", {}, t.content)); break;
      case "link_open": {
        // Shown as a link, never followed: an answer's links are the model's words.
        const node = el("span", { class: "md-link", title: t.attrGet("href") || "" });
        top().append(node);
        stack.push(node);
        break;
      }
      case "image": {
        const alt = (t.children || []).map((c) => c.content).join("") || t.content;
        top().append(el("span", { class: "md-image", title: t.attrGet("src") || "" }, `[image${alt ? `: ${alt}` : ""}]`));
        break;
      }
      default:
        if (t.nesting === 1) {
          const node = el(TAGS[t.type] || "span");
          top().append(node);
          stack.push(node);
        } else if (t.nesting === -1) {
          if (stack.length > 1) stack.pop();
        } else if (t.content) {
          top().append(text(t.content));
        }
    }
  }
}

/** A fenced or indented code block, with a button that copies its text. */
function codeBlock(code, info) {
  const lang = (info || "").trim().split(/\s+/)[0];
  const body = code.replace(/\n$/, "");
  const button = el("button", { type: "button", class: "copy", title: "Copy the code" }, "Copy");
  button.addEventListener("click", async (e) => {
    e.stopPropagation();
    button.textContent = (await copyText(body)) ? "Copied" : "Copy failed";
  });
  return el("div", { class: "md-code" },
    el("div", { class: "md-code-head" }, el("span", { class: "md-lang" }, lang), button),
    el("pre", {}, el("code", {}, body)));
}

/** Put `s` on the clipboard; whether it worked. */
export async function copyText(s) {
  try {
    await navigator.clipboard.writeText(s);
    return true;
  } catch (_) {
    // Without the async clipboard (an older WebView): a selected text area.
    const area = el("textarea", { class: "offscreen", readonly: true });
    area.value = s;
    document.body.append(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
    area.remove();
    return ok;
  }
}

/** Replace `box`'s children with `fresh`'s, keeping each leading child that is equal
 *  to its replacement: while an answer streams, only the block being written changes,
 *  so finished paragraphs, tables and code do not flicker or jump. */
export function morph(box, fresh) {
  const next = [...fresh.childNodes];
  const old = [...box.childNodes];
  let i = 0;
  while (i < next.length && i < old.length && old[i].isEqualNode(next[i])) i++;
  for (const n of old.slice(i)) n.remove();
  box.append(...next.slice(i));
}

/** An answer as plain text (what it reads as, without the Markdown marks). */
export function plainText(src) {
  const box = document.createElement("div");
  box.append(renderMarkdown(src));
  const lines = [];
  const walk = (n) => {
    for (const c of n.childNodes) {
      if (c.nodeType === Node.TEXT_NODE) lines.push(c.textContent);
      else if (c.matches?.(".md-code-head")) continue;
      else {
        const block = /^(P|LI|H[1-6]|TR|PRE|BLOCKQUOTE|DIV|HR)$/.test(c.tagName);
        if (c.tagName === "LI") lines.push(c.parentElement?.tagName === "OL" ? `${[...c.parentElement.children].indexOf(c) + 1}. ` : "• ");
        walk(c);
        if (c.tagName === "TD" || c.tagName === "TH") lines.push("\t");
        if (block) lines.push("\n");
      }
    }
  };
  walk(box);
  return lines.join("").replace(/\t\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
}
