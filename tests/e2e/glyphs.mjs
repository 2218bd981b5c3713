// Whether an element's Chinese text is drawn with real glyphs: run in the page (the
// browser's or the window's). Two different Han characters of the text are drawn on a
// canvas in the element's own font stack; with no font that has them, both come out
// as the same box (or nothing), so different pictures mean real glyphs.
export function glyphCheck(selector) {
  const node = document.querySelector(selector);
  if (!node) return { ok: false, why: "no such element" };
  const han = [...new Set(node.textContent.match(/\p{Script=Han}/gu) || [])];
  if (han.length < 2) return { ok: false, why: "fewer than two Han characters", text: node.textContent.slice(0, 60) };
  const canvas = document.createElement("canvas");
  canvas.width = 48;
  canvas.height = 48;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  ctx.font = `32px ${getComputedStyle(node).fontFamily}`;
  const draw = (ch) => {
    ctx.clearRect(0, 0, 48, 48);
    ctx.fillStyle = "#000";
    ctx.fillText(ch, 6, 38);
    return Array.from(ctx.getImageData(0, 0, 48, 48).data).join(",");
  };
  const [a, b] = [draw(han[0]), draw(han[1])];
  const blank = draw(" ");
  return { ok: a !== b && a !== blank && b !== blank, chars: han.slice(0, 2).join(""), font: ctx.font };
}
