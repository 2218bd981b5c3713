// Unit tests of the UI's pure text functions (no browser): citation markers in a
// streamed answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { citationParts } from "../../ui/js/dom.js";

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
